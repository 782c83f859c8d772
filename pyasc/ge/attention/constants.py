"""Values the attention rules need to know at compile time: a scale, a mask computed from constants.

The attention pass runs before constant folding, and folding stops at `fold_max_elements` anyway, while a
causal mask of a long sequence (`(1 - np.tri(T)) * -1e10`, `np.triu(np.ones((T, T)), 1)`) is far larger.
`constant_array` evaluates a value whose every ancestor is a constant or a pure op without inputs (`full`),
op by op with the registry's eager functions (what the reference interpreter and folding compute), within a
budget of nodes and elements; anything else (a graph input, an impure op, a symbolic shape) is not constant.
"""
from __future__ import annotations

import warnings

import numpy as np

from ... import dtypes, ops
from ...ir import Node, Value
from ..simplify import op_attrs

#: the most nodes and elements `constant_array` evaluates (a 2048 x 2048 mask is 4M elements)
MAX_NODES = 64
MAX_ELEMENTS = 1 << 23


def constant_array(value: Value, *, max_nodes: int = MAX_NODES, max_elements: int = MAX_ELEMENTS) -> np.ndarray | None:
    """The array `value` always holds (in its graph dtype), or None when it is not a compile-time constant."""
    order = _constant_ancestry(value.node, max_nodes, max_elements)
    if order is None:
        return None
    results: dict[Node, list[np.ndarray]] = {}
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in order:
            if n.op == "Const":
                results[n] = [n.attrs["value"]]
                continue
            try:
                out = ops.get(n.op).eager(*(results[v.node][v.index] for v in n.inputs), **op_attrs(n))
            except Exception:  # an op that cannot run on these constants: not a compile-time value after all
                return None
            outs = list(out) if len(n.outputs) > 1 else [out]
            results[n] = [np.asarray(o).astype(dtypes.to_numpy(t.dtype)) for o, t in zip(outs, n.outputs)]
    return results[value.node][value.index]


def constant_scalar(value: Value) -> float | None:
    """The one number every element of a constant `value` holds (a scale), or None."""
    arr = constant_array(value, max_elements=1 << 16)
    if arr is None or arr.size == 0 or arr.dtype == np.bool_:
        return None
    flat = arr.reshape(-1)
    first = flat[0]
    if not np.all(flat == first):
        return None
    return float(first)


def _constant_ancestry(node: Node, max_nodes: int, max_elements: int) -> list[Node] | None:
    """`node` and its ancestors in a topological order, when they are all constant (else None)."""
    order: list[Node] = []
    seen: set[Node] = set()
    stack: list[tuple[Node, bool]] = [(node, False)]
    while stack:
        n, done = stack.pop()
        if done:
            order.append(n)
            continue
        if n in seen:
            continue
        seen.add(n)
        if len(seen) > max_nodes or not _constant_op(n, max_elements):
            return None
        stack.append((n, True))
        stack.extend((v.node, False) for v in n.inputs)
    return order


def _constant_op(n: Node, max_elements: int) -> bool:
    if not ops.exists(n.op):
        return False
    op = ops.get(n.op)
    if n.op != "Const" and (op.structural or not op.pure):
        return False
    return all(t.is_static and t.numel <= max_elements for t in n.outputs)
