"""Launch-time shape check for `dynamic=True` kernels.

A dynamic kernel's graph was typed with symbolic dims (`x_d0`, ...). At a
launch the real sizes are known; re-running shape inference over the graph
with them catches shapes that the symbolic graph silently assumed to agree
(two different names broadcast against each other, a reshape that does not
divide) before anything runs, with the op's own reason and the source line.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from .. import ops
from ..errors import InferError
from ..ops.dimvalue import failed_checks
from ..ir import Graph, Node, Sym, TensorType, Value, is_annotation


class ShapeMismatch(ValueError):
    """The launch shapes do not fit the dynamic specialisation."""


def bindings_for(graph: Graph, arrays: Sequence[np.ndarray]) -> dict[str, int]:
    """name -> size for every plain symbolic dim of the graph's inputs."""
    out: dict[str, int] = {}
    for node, arr in zip(graph.inputs, arrays):
        for dim, size in zip(node.outputs[0].shape, arr.shape):
            if isinstance(dim, Sym) and dim.expr.isidentifier():
                out.setdefault(dim.expr, int(size))
    return out


def check_launch_shapes(graph: Graph, arrays: Sequence[np.ndarray]) -> None:
    """Raise ShapeMismatch (a ValueError) if inference rejects, or disagrees with, the concrete shapes."""
    bindings = bindings_for(graph, arrays)
    failed = failed_checks(graph.inputs, bindings)
    if failed:
        raise ShapeMismatch("; ".join(failed))
    in_types = [TensorType(arr.shape, node.outputs[0].dtype) for node, arr in zip(graph.inputs, arrays)]
    _concrete(graph, in_types, bindings)


def _bind(value: Any, bindings: Mapping[str, int]) -> Any:
    if isinstance(value, Sym):
        return value.evaluate(bindings)
    if isinstance(value, tuple):
        return tuple(_bind(v, bindings) for v in value)
    if isinstance(value, list):
        return [_bind(v, bindings) for v in value]
    return value


def _where(node: Node) -> str:
    return f" (at {node.loc}: {node.loc.source_line().strip()})" if node.loc is not None else f" (in op {node.op})"


def _concrete(graph: Graph, in_types: Sequence[TensorType], bindings: Mapping[str, int]) -> list[TensorType]:
    env: dict[Value, TensorType] = {}
    for node in graph.nodes:
        if node.op == "Data":
            outs = [in_types[node.attrs["index"]]]
        elif node.op == "If":
            operands = [env[v] for v in node.inputs[1:]]
            then = _concrete(node.attrs["then_branch"], operands, bindings)
            other = _concrete(node.attrs["else_branch"], operands, bindings)
            if [(t.shape, t.dtype) for t in then] != [(t.shape, t.dtype) for t in other]:
                raise ShapeMismatch("the two branches of a tensor `if` produce different shapes for these inputs: "
                                    f"then ({', '.join(map(str, then))}) vs else ({', '.join(map(str, other))})"
                                    + _where(node))
            outs = then
        elif node.op == "Loop":  # one iteration's shapes are every iteration's (the body keeps its types)
            k = node.attrs["carried"]
            operands = [env[v] for v in node.inputs[1:]]
            after = _concrete(node.attrs["body"], operands, bindings)
            for j, (a, b) in enumerate(zip(operands[:k], after[:k])):
                if (a.shape, a.dtype) != (b.shape, b.dtype):
                    raise ShapeMismatch(f"loop-carried value {j} is {a} before an iteration but {b} after it for "
                                        f"these inputs{_where(node)}")
            outs = operands[:k]
        else:
            try:
                attrs = {k: v if isinstance(v, Graph) else _bind(v, bindings)
                         for k, v in node.attrs.items() if not is_annotation(k)}
                outs = list(ops.infer(node.op, [env[v] for v in node.inputs], attrs))
            except InferError as e:
                raise ShapeMismatch(f"{e}{_where(node)}") from None
        for got, typed in zip(outs, node.outputs):
            for axis, (size, dim) in enumerate(zip(got.shape, typed.shape)):
                try:
                    expected = dim.evaluate(bindings) if isinstance(dim, Sym) else dim
                except NameError:
                    continue  # a name no input binds: nothing to hold it to
                if expected != size:
                    raise ShapeMismatch(
                        f"{node.op} gives shape {tuple(got.shape)} for these inputs, but the kernel was compiled "
                        f"assuming {typed} (dim {axis} = {dim} = {expected}){_where(node)}")
        for i, t in enumerate(outs):
            env[Value(node, i)] = t
    return [env[v] for v in graph.outputs]
