"""The numpy reference interpreter: runs any graph with each op's eager function.

It is the semantic ground truth for graphs: the optimiser's tests interpret
a graph before and after a pass and compare, and `backend="reference"` runs
a kernel's final graph with it.

Every result is cast to the dtype its node was inferred with, because numpy
sometimes widens where the graph does not (int32 / int32 is float64 in
numpy; the node, like the chip, says float32).
"""
from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np

from .. import dtypes, ops
from .graph import Graph, Node, Value, is_annotation
from ..tensor_type import Sym, TensorType

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class InterpreterError(RuntimeError):
    """The graph itself is inconsistent at run time (an op's result disagrees with its inferred type)."""


class DataError(ValueError):
    """An op's eager function rejected the data it was given (numpy's `int ** -1`), at the node's source line."""

    def __init__(self, node: Node, error: Exception):
        where = f"{node.loc}: " if node.loc is not None else ""
        super().__init__(f"{where}{node.op}: {error} (numpy raises {type(error).__name__} for these values)")
        self.node = node
        self.error = error


def interpret(graph: Graph, inputs: Sequence[Any]) -> list[np.ndarray]:
    """Run `graph` on `inputs` (one array per Data node, by index); returns new arrays, one per output.

    Raises ValueError when the inputs do not match the graph's Data types
    (count, dtype, rank, static dims, and the same size for every use of a
    symbolic dim).
    """
    arrays, bindings = _bind(graph, inputs)
    return [np.array(a, copy=True) for a in _run(graph, arrays, bindings)]


def bind_inputs(graph: Graph, inputs: Sequence[Any], what: str = "input") -> list[np.ndarray]:
    """Check `inputs` against the graph's Data types; returns them as arrays."""
    return _bind(graph, inputs, what)[0]


def _bind(graph: Graph, inputs: Sequence[Any], what: str = "input") -> tuple[list[np.ndarray], dict[str, int]]:
    """bind_inputs, also returning the size each symbolic dim name has in these inputs."""
    data = graph.inputs
    if len(inputs) != len(data):
        raise ValueError(f"graph {graph.name!r} takes {len(data)} {what}(s), got {len(inputs)}")
    arrays = [np.asarray(x) for x in inputs]
    bindings: dict[str, int] = {}
    where: dict[str, str] = {}
    deferred: list[tuple[Sym, int, str]] = []
    for node, arr in zip(data, arrays):
        t: TensorType = node.outputs[0]
        label = f"{what} {node.attrs['index']}" + (f" ({node.name})" if node.name else "")
        if arr.dtype != dtypes.to_numpy(t.dtype):
            raise ValueError(f"{label} must have dtype {t.dtype} ({t}), got {arr.dtype}")
        if arr.ndim != t.ndim:
            raise ValueError(f"{label} must have rank {t.ndim} ({t}), got shape {arr.shape}")
        for axis, (dim, size) in enumerate(zip(t.shape, arr.shape)):
            here = f"{label} dim {axis}"
            if isinstance(dim, Sym):
                if _NAME.fullmatch(dim.expr):
                    if dim.expr in bindings and bindings[dim.expr] != size:
                        raise ValueError(
                            f"symbolic dim {dim.expr} is {bindings[dim.expr]} in {where[dim.expr]} "
                            f"but {size} in {here} (shape {arr.shape})")
                    bindings.setdefault(dim.expr, size)
                    where.setdefault(dim.expr, here)
                else:
                    deferred.append((dim, size, here))  # an expression: check once its names are bound
            elif dim != size:
                raise ValueError(f"{label} must have shape {tuple(t.shape)} ({t}), got {arr.shape}")
    for dim, size, here in deferred:
        try:
            expected = dim.evaluate(bindings)
        except NameError:
            continue  # a name no input binds on its own: nothing to check it against
        if expected != size:
            raise ValueError(f"{here} must be {dim} = {expected}, got {size}")
    return arrays, bindings


def _resolve(value: Any, bindings: dict[str, int], node: Node) -> Any:
    """An attribute with its symbolic dims replaced by their sizes in this run (`broadcast_to(x, (N, 4))`)."""
    if isinstance(value, Sym):
        try:
            return value.evaluate(bindings)
        except NameError:
            raise InterpreterError(
                f"op {node.op}: attribute dim {value} uses a symbolic name no input binds") from None
    if isinstance(value, tuple):
        return tuple(_resolve(v, bindings, node) for v in value)
    if isinstance(value, list):
        return [_resolve(v, bindings, node) for v in value]
    return value


def _run(graph: Graph, inputs: list[np.ndarray], bindings: dict[str, int]) -> list[np.ndarray]:
    env: dict[Value, np.ndarray] = {}
    for node in graph.nodes:
        try:
            args = [env[v] for v in node.inputs]
        except KeyError:
            raise InterpreterError(
                f"graph {graph.name!r}: a {node.op} node reads a value that is not computed before it "
                "(run the verifier)") from None
        if node.op == "Data":
            results: Any = [inputs[node.attrs["index"]]]
        elif node.op == "Const":
            results = [node.attrs["value"]]
        elif node.op == "If":
            results = _run_if(node, args, bindings)
        elif node.op == "Loop":
            results = _run_loop(node, args, bindings)
        else:
            attrs = {k: _resolve(v, bindings, node) for k, v in node.attrs.items()
                     if not isinstance(v, Graph) and not is_annotation(k)}
            try:
                results = ops.get(node.op).eager(*args, **attrs)
            except (ValueError, ZeroDivisionError, FloatingPointError) as e:  # the values, not the graph
                raise DataError(node, e) from None
            if len(node.outputs) == 1 or not isinstance(results, (tuple, list)):
                results = [results]
        if len(results) != len(node.outputs):
            raise InterpreterError(f"op {node.op} returned {len(results)} results, its node has {len(node.outputs)}")
        for i, (value, t) in enumerate(zip(results, node.outputs)):
            env[Value(node, i)] = _as_type(value, t, node, bindings)
    missing = [v for v in graph.outputs if v not in env]
    if missing:
        raise InterpreterError(f"graph {graph.name!r}: an output is not computed by the graph (run the verifier)")
    return [env[v] for v in graph.outputs]


def _run_if(node: Node, args: list[np.ndarray], bindings: dict[str, int]) -> list[np.ndarray]:
    cond = args[0]
    if cond.size != 1:
        raise ValueError(f"an If condition must have one element, got shape {cond.shape}")
    branch: Graph = node.attrs["then_branch"] if bool(cond.reshape(())) else node.attrs["else_branch"]
    arrays, inner = _bind(branch, args[1:], what="branch input")
    return _run(branch, arrays, {**bindings, **inner})  # a branch may use dims only the kernel's inputs bind


def _run_loop(node: Node, args: list[np.ndarray], bindings: dict[str, int]) -> list[np.ndarray]:
    """Run a Loop's body: `first` iterations (kind "for") or while the condition holds (kind "while")."""
    body: Graph = node.attrs["body"]
    k, kind = node.attrs["carried"], node.attrs["kind"]
    first, carried, invariant = args[0], list(args[1:1 + k]), list(args[1 + k:])
    if first.size != 1:
        raise ValueError(f"a Loop's {'trip count' if kind == 'for' else 'condition'} must have one element, "
                         f"got shape {first.shape}")
    trip = int(first.reshape(())) if kind == "for" else None
    go = bool(first.reshape(())) if kind == "while" else trip > 0
    done = 0
    while go:
        arrays, inner = _bind(body, carried + invariant, what="loop body input")
        outs = _run(body, arrays, {**bindings, **inner})
        carried = outs[:k]
        done += 1
        go = done < trip if kind == "for" else bool(outs[-1].reshape(()))
    return carried


def _as_type(value: Any, t: TensorType, node: Node, bindings: dict[str, int]) -> np.ndarray:
    arr = np.asarray(value)
    want = dtypes.to_numpy(t.dtype)
    if arr.dtype != want:
        arr = arr.astype(want)
    if arr.ndim != t.ndim or any(_dim_differs(d, s, bindings) for d, s in zip(t.shape, arr.shape)):
        raise InterpreterError(f"op {node.op} produced shape {arr.shape} but its node's type is {t}")
    return arr


def _dim_differs(dim: Any, size: int, bindings: dict[str, int]) -> bool:
    if isinstance(dim, int):
        return dim != size
    try:
        return dim.evaluate(bindings) != size
    except NameError:
        return False  # a name no input binds: nothing to compare with
