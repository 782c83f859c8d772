"""Tensors whose values the compiler knows: those computed from constants only (`np.zeros(n).astype(int)`
and arithmetic on it, the index bookkeeping numpy code does beside its data). `.tolist()` of one is a
Python list at compile time, as numpy gives; of a tensor computed from the inputs it is a located error,
since its values exist only when the kernel runs."""
from __future__ import annotations

import ast
from typing import Any

import numpy as np

from .. import dtypes, ops
from ..ir.graph import Graph, Node, Value
from .protocol import KernelBuilder

#: the most elements computed at compile time for one value (beyond it, the value is not "known")
MAX_ELEMENTS = 1 << 16


def known_value(v: Value) -> np.ndarray | None:
    """v's value when every node it depends on is a constant or a pure op on constants; else None."""
    order: list[Node] = []
    seen: set[int] = set()
    stack: list[tuple[Node, bool]] = [(v.node, False)]
    while stack:  # postorder over the producers, without recursion
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.op != "Const" and (not ops.exists(node.op) or node.op in ("Data", "If", "Loop", "DimValue")
                                   or not ops.get(node.op).pure
                                   or any(isinstance(a, Graph) for a in node.attrs.values())):
            return None
        for t in node.outputs:
            if not all(isinstance(d, int) for d in t.shape) or int(np.prod(t.shape)) > MAX_ELEMENTS:
                return None
        stack.append((node, True))
        stack.extend((i.node, False) for i in node.inputs)
    env: dict[Value, np.ndarray] = {}
    for node in order:
        if node.op == "Const":
            results: Any = [node.attrs["value"]]
        else:
            try:
                results = ops.get(node.op).eager(*[env[i] for i in node.inputs], **node.attrs)
            except Exception:  # (numpy refusing the data: then it is for the run to report)
                return None
            if len(node.outputs) == 1 or not isinstance(results, (tuple, list)):
                results = [results]
        for k, (r, t) in enumerate(zip(results, node.outputs)):
            env[Value(node, k)] = np.asarray(r).astype(dtypes.to_numpy(t.dtype), copy=False).reshape(t.shape)
    return env[v]


def tolist(b: KernelBuilder, x: Value, args: list, kwargs: dict, at: ast.AST) -> Any:
    if args or kwargs:
        raise b.error(".tolist() takes no arguments", at)
    value = known_value(x)
    if value is None:
        raise b.error(f"`{b.text(at)}` needs the values of a tensor ({x.type}) computed from the kernel's inputs, "
                      "which exist only when it runs; index it, or compute the list from compile-time values "
                      "(shapes, constants)", at)
    return value.tolist()
