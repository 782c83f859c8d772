"""Small graph-editing helpers shared by the rewrite rules and passes.

They keep the two invariants every pass must leave behind: nodes stay in a
topological order (new nodes are inserted right before the node they
replace, whose inputs are all earlier) and every node is typed (new nodes
are inferred through the op registry, like `Graph.add`). The rewrite driver
itself is ge/rewrite.py.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from .. import dtypes, ops
from ..errors import InferError, SourceLoc
from ..ir import Graph, Node, TensorType, Value
from ..ir.uses import ancestors  # noqa: F401  (re-exported: the passes import it from here)


def make_node(
    graph: Graph,
    op: str,
    inputs: Sequence[Value],
    attrs: Mapping[str, Any] | None = None,
    *,
    before: Node | None = None,
    loc: SourceLoc | None = None,
    name: str | None = None,
) -> Node:
    """A new typed node inserted before `before` (or appended); raises InferError if the op rejects it."""
    attrs = dict(attrs or {})
    outputs = ops.infer(op, [v.type for v in inputs], attrs)
    node = Node(op, inputs, attrs, outputs, loc, name)
    insert_before(graph, node, before)
    return node


def build_node(op: str, inputs: Sequence[Value], attrs: Mapping[str, Any] | None = None,
               *, loc: SourceLoc | None = None, name: str | None = None) -> Node | None:
    """A typed node that is not in any graph yet, or None when the op's inference rejects it.

    Rewrites build the replacement first, compare its type with the value it
    replaces, and only then insert it (`insert_before`).
    """
    attrs = dict(attrs or {})
    try:
        outputs = ops.infer(op, [v.type for v in inputs], attrs)
    except (InferError, KeyError):  # KeyError: an op this registry does not have
        return None
    return Node(op, inputs, attrs, outputs, loc, name)


def const_node(value: Any, dtype: str, *, loc: SourceLoc | None = None, name: str | None = None) -> Node:
    """A Const node (not in any graph yet) holding `value` cast to `dtype` (a read-only copy)."""
    arr = np.array(value, dtype=dtypes.to_numpy(dtype), order="C", copy=True)
    arr.flags.writeable = False
    return Node("Const", (), {"value": arr}, ops.infer("Const", [], {"value": arr}), loc, name)


def make_const(graph: Graph, value: Any, dtype: str, *, before: Node | None = None,
               loc: SourceLoc | None = None, name: str | None = None) -> Node:
    """`const_node` inserted before `before` (or appended)."""
    node = const_node(value, dtype, loc=loc, name=name)
    insert_before(graph, node, before)
    return node


def insert_before(graph: Graph, node: Node, before: Node | None) -> None:
    node.graph = graph
    if before is None:
        graph.nodes.append(node)
    else:
        graph.nodes.insert(graph.nodes.index(before), node)


def uniform_scalar(value: Value) -> float | int | bool | None:
    """The single value every element of a constant tensor holds, else None.

    Recognises Const nodes (any shape, all elements equal), `full`, and an op
    that only moves or repeats the elements of one such constant (a reshape,
    broadcast, transpose, slice, ...), so a broadcast constant `ones((4, 8))`
    counts as the scalar 1.
    """
    node = value.node
    if node.op == "Const":
        arr = node.attrs["value"]
        if arr.size == 0:
            return None
        first = arr.reshape(-1)[0]
        if arr.dtype.kind == "f" and np.isnan(first):
            return None
        if not np.all(arr == first):
            return None
        return first.item()
    if node.op == "full":
        fill = node.attrs.get("fill_value")
        if isinstance(fill, (bool, int, float, np.generic)):
            # the value as the node's dtype holds it (full(…, 0.1, float16) is not 0.1)
            return np.asarray(fill).astype(dtypes.to_numpy(node.outputs[0].dtype)).item()
        return None
    if len(node.inputs) == 1 and moves_elements(node):
        return uniform_scalar(node.inputs[0])
    return None


def moves_elements(node: Node) -> bool:
    """Every output element is a copy of an input element: a data-movement or single-operand broadcast op."""
    if not ops.exists(node.op):
        return False
    category = ops.get(node.op).category
    return category == ops.Category.INJECTIVE or (category == ops.Category.BROADCAST and len(node.inputs) == 1)


def same_type(a: TensorType, b: TensorType) -> bool:
    """Same shape, dtype and format: a value of type `a` may stand in for one of type `b`."""
    return a.shape == b.shape and a.dtype == b.dtype and a.format == b.format


def is_pure(node: Node) -> bool:
    return ops.exists(node.op) and ops.get(node.op).pure


def is_structural(node: Node) -> bool:
    """Graph structure, not computation (Data, Const, If): the registry's `structural` fact."""
    return ops.exists(node.op) and ops.get(node.op).structural


def would_create_cycle(external_inputs: Iterable[Value], interior: Iterable[Node]) -> bool:
    """True if merging `interior` into one node reading `external_inputs` creates a cycle.

    That happens exactly when some external input depends on an interior node
    (the merged node would then read, through the outside, its own result).
    """
    inner = set(interior)
    producers = [v.node for v in external_inputs if v.node not in inner]
    return bool(ancestors(producers) & inner)
