"""The simplify group, iterated to a fixpoint: constant folding, algebraic simplification, CSE, DCE.

Each pass works on one graph (the pass manager runs it on every subgraph).

- `constant_folding`: a pure node whose inputs are all Const (or that has no
  inputs, like `full`) and whose outputs have at most `fold_max_elements`
  (knob, default 4096) elements becomes a Const holding the op's eager
  result cast to the node's inferred dtype, exactly what the reference
  interpreter would compute. An If whose condition is constant is replaced
  by the nodes of the branch it would take; a small constant operand of an If
  is copied into the branches that read it (DCE then drops the operand).
- `algebraic_simplify`: x*1, 1*x, x+0, 0+x, x-0, x/1, x**1 -> x;
  x**2 -> x*x; --x, ~~x -> x; cast to the same dtype -> x; a lossless cast
  round trip (f16 -> f32 -> f16) -> x; transpose∘transpose -> x (inverse
  perms) or one transpose (composed perm); identity transposes, reshapes and
  broadcasts -> x; reshape∘reshape -> one reshape; the tanh GELU 0.5*x*(1+tanh(z)) ->
  x/(1+exp(-2z)) (ge/activation_forms.py: no composite tanh on the vector unit). Integer/bool x*0 -> zeros;
  float x*0 never (NaN*0 and inf*0 are NaN, and -0.0 keeps its sign).
  A constant operand counts by value: any Const whose elements are all equal,
  `full`, or a broadcast/reshape of one. Every rewrite checks that the
  replacement has exactly the replaced value's type (shape, dtype, format), so
  a broadcasting or promoting `x + 0` is left alone. (`x + 0.0 -> x` differs
  from IEEE only in the sign of a zero result: -0.0 + 0.0 is +0.0. GE does
  the same; every comparison in this project treats the two zeros as equal.)
- `cse`: pure nodes with the same op, the same ordered inputs (any order for
  ops the registry marks commutative) and the same attributes (by
  `pyasc.ir.attr_key`; annotations ignored) are merged into the first one in
  topological order. Never across subgraphs; never If nodes.
- `dce`: removes pure nodes that no graph output depends on. Data nodes stay
  (they are the signature). An If none of whose outputs is used is dead; an If
  with some unused outputs loses them (from both branches), and an If operand
  that neither branch reads is dropped, so its producer can die too.
"""
from __future__ import annotations

import warnings
from typing import Any, Hashable

import numpy as np

from .. import dtypes, ops
from .activation_forms import gelu_tanh_as_sigmoid
from ..ir import Graph, Node, Value, attr_key, is_annotation
from .edit import ancestors, build_node, const_node, is_pure, is_structural, make_const, same_type, uniform_scalar
from .passes import Pass, PassContext, PassGroup
from .rewrite import Replacement, RewriteRule, Rewriter, RulePass

DEFAULT_FOLD_MAX_ELEMENTS = 4096


def op_attrs(node: Node) -> dict[str, Any]:
    """The attributes that parametrise the op (no subgraphs, no annotations such as fusion_group)."""
    return {k: v for k, v in node.attrs.items() if not isinstance(v, Graph) and not is_annotation(k)}


# ---- constant folding --------------------------------------------------------------------


class ConstantFolding(RulePass):
    name = "constant_folding"
    opt_level = 1

    def rules(self, ctx: PassContext) -> list[RewriteRule]:
        cap = int(ctx.knob("fold_max_elements", DEFAULT_FOLD_MAX_ELEMENTS))
        return [
            RewriteRule("inline_taken_branch", "If", lambda node, rw: _inline_taken_branch(node)),
            RewriteRule("constants_into_branches", "If", lambda node, rw: _constants_into_branches(node, cap)),
            RewriteRule("fold", None, lambda node, rw: _fold(node, cap)),
        ]


def _fold(node: Node, cap: int) -> Replacement | None:
    """A foldable node as Consts holding its results."""
    if not _foldable(node, cap):
        return None
    arrays = _fold_values(node)
    if arrays is None:
        return None
    consts = [const_node(a, t.dtype, loc=node.loc, name=node.name) for a, t in zip(arrays, node.outputs)]
    return Replacement([c.out() for c in consts], consts)


def _foldable(node: Node, cap: int) -> bool:
    if is_structural(node) or not is_pure(node):
        return False
    if not all(v.node.op == "Const" for v in node.inputs):
        return False
    # a Const is always ND, so a node producing another format (transdata) keeps its node
    return all(t.is_static and t.numel <= cap and t.format == "ND" for t in node.outputs)


def _fold_values(node: Node) -> list[np.ndarray] | None:
    """The node's results on its constant inputs, as its inferred dtypes; None if it cannot run now."""
    args = [v.node.attrs["value"] for v in node.inputs]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = ops.get(node.op).eager(*args, **op_attrs(node))
        except Exception:  # an op that cannot run on these constants is simply left for run time
            return None
        results = list(result) if len(node.outputs) > 1 and isinstance(result, (tuple, list)) else [result]
        if len(results) != len(node.outputs):
            return None
        arrays = [np.asarray(value).astype(dtypes.to_numpy(t.dtype)) for value, t in zip(results, node.outputs)]
    if any(a.shape != tuple(t.shape) for a, t in zip(arrays, node.outputs)):
        return None
    return arrays


def _inline_taken_branch(node: Node) -> Replacement | None:
    """For an If with a constant condition: the taken branch's nodes (rewired to the If's operands) and results."""
    cond = node.inputs[0]
    if cond.node.op != "Const" or cond.node.attrs["value"].size != 1:
        return None
    branch: Graph = node.attrs["then_branch" if bool(cond.node.attrs["value"].reshape(())) else "else_branch"]
    if any(not same_type(v.type, t) for v, t in zip(branch.outputs, node.outputs)):
        return None  # a branch result in another format would need a conversion; leave it to layout
    mapping: dict[Value, Value] = {}
    moved: list[Node] = []
    for bn in branch.nodes:
        if bn.op == "Data":
            mapping[bn.out()] = node.inputs[bn.attrs["index"] + 1]
        else:
            bn.inputs = [mapping.get(v, v) for v in bn.inputs]
            moved.append(bn)  # the branch's nodes now belong to the parent graph
    return Replacement([mapping.get(v, v) for v in branch.outputs], moved)


def _constants_into_branches(node: Node, cap: int) -> bool:
    """A small Const operand of an If becomes a Const inside each branch that reads it.

    Folding can then continue inside the branch, and DCE drops the operand.
    """
    changed = False
    for i, v in enumerate(node.inputs[1:]):
        if v.node.op != "Const" or v.node.attrs["value"].size > cap:
            continue
        for key in ops.get(node.op).subgraph_attrs:
            branch: Graph = node.attrs[key]
            data = next((n for n in branch.nodes if n.op == "Data" and n.attrs["index"] == i), None)
            if data is None or not _has_uses(branch, data.out()):
                continue
            const = make_const(branch, v.node.attrs["value"], v.type.dtype, before=branch.nodes[0], loc=v.node.loc)
            branch.replace_all_uses(data.out(), const.out())
            changed = True
    return changed


def _has_uses(graph: Graph, value: Value) -> bool:
    return value in graph.outputs or any(value in n.inputs for n in graph.nodes)


# ---- algebraic simplification --------------------------------------------------------------


class AlgebraicSimplify(RulePass):
    name = "algebraic_simplify"
    opt_level = 1

    def rules(self, ctx: PassContext) -> tuple[RewriteRule, ...]:
        return ALGEBRAIC_RULES


def rewrite_node(node: Node) -> Value | Node | None:
    """What `node` simplifies to by the algebraic rules: an existing value, a new node not in the graph, or None.

    The result always has exactly the node's output type.
    """
    rule = next((r for r in ALGEBRAIC_RULES if r.matches(node)), None)
    candidate = rule.fn(node, None) if rule is not None else None
    if candidate is None:
        return None
    want = node.outputs[0]
    if isinstance(candidate, Value):
        return candidate if same_type(candidate.type, want) else None
    if len(candidate.outputs) != 1 or not same_type(candidate.outputs[0], want):
        return None
    return candidate


def _is(x: Any, target: float) -> bool:
    return x is not None and not isinstance(x, complex) and x == target


def _mul(node: Node, rw: Rewriter | None = None) -> Value | Node | None:
    a, b = node.inputs
    sa, sb = uniform_scalar(a), uniform_scalar(b)
    if _is(sb, 1):
        return a
    if _is(sa, 1):
        return b
    out = node.outputs[0]
    if (_is(sa, 0) or _is(sb, 0)) and not dtypes.is_float(out.dtype) and out.is_static:
        # integers and bools only: a float x*0 is NaN for x = inf/NaN and -0.0 for negative x
        return build_node("full", (), {"shape": tuple(out.shape), "fill_value": 0, "dtype": out.dtype},
                          loc=node.loc)
    return None


def _add(node: Node, rw: Rewriter | None = None) -> Value | None:
    a, b = node.inputs
    if _is(uniform_scalar(b), 0):
        return a
    if _is(uniform_scalar(a), 0):
        return b
    return None


def _sub(node: Node, rw: Rewriter | None = None) -> Value | None:
    return node.inputs[0] if _is(uniform_scalar(node.inputs[1]), 0) else None


def _div(node: Node, rw: Rewriter | None = None) -> Value | None:
    return node.inputs[0] if _is(uniform_scalar(node.inputs[1]), 1) else None


def _pow(node: Node, rw: Rewriter | None = None) -> Value | Node | None:
    a, b = node.inputs
    e = uniform_scalar(b)
    if _is(e, 1):
        return a
    if _is(e, 2):
        return build_node("mul", (a, a), {}, loc=node.loc, name=node.name)
    return None


def _involution(node: Node, rw: Rewriter | None = None) -> Value | None:
    """neg(neg(x)) -> x, invert(invert(x)) -> x."""
    inner = node.inputs[0].node
    return inner.inputs[0] if inner.op == node.op and len(inner.inputs) == 1 else None


def _cast(node: Node, rw: Rewriter | None = None) -> Value | None:
    x = node.inputs[0]
    if node.attrs.get("dtype") is None:
        return None
    target = dtypes.normalize(node.attrs["dtype"])
    if x.type.dtype == target:
        return x
    inner = x.node
    if inner.op == "cast":
        origin = inner.inputs[0]
        # a round trip through a wider type is exact: f16 -> f32 -> f16, int8 -> int32 -> int8, ...
        if origin.type.dtype == target and np.can_cast(dtypes.to_numpy(target), dtypes.to_numpy(x.type.dtype), "safe"):
            return origin
    return None


def perm_of(node: Node) -> tuple[int, ...]:
    """A transpose node's permutation, normalised (None -> reversed axes)."""
    ndim = node.inputs[0].type.ndim
    axes = node.attrs.get("axes")
    if axes is None:
        return tuple(reversed(range(ndim)))
    return tuple(int(a) % ndim if ndim else 0 for a in axes)


def compose_perms(first: tuple[int, ...], second: tuple[int, ...]) -> tuple[int, ...]:
    """The one permutation equal to transpose(transpose(x, first), second)."""
    return tuple(first[i] for i in second)


def is_identity_perm(perm: tuple[int, ...]) -> bool:
    return perm == tuple(range(len(perm)))


def _transpose(node: Node, rw: Rewriter | None = None) -> Value | Node | None:
    perm = perm_of(node)
    if is_identity_perm(perm):
        return node.inputs[0]
    inner = node.inputs[0].node
    if inner.op != "transpose":
        return None
    composed = compose_perms(perm_of(inner), perm)
    x = inner.inputs[0]
    if is_identity_perm(composed):
        return x
    return build_node("transpose", (x,), {**op_attrs(node), "axes": composed}, loc=node.loc, name=node.name)


def _reshape(node: Node, rw: Rewriter | None = None) -> Value | Node | None:
    x = node.inputs[0]
    if tuple(x.type.shape) == tuple(node.outputs[0].shape):
        return x
    inner = x.node
    if inner.op == "reshape":
        return build_node("reshape", (inner.inputs[0],), op_attrs(node), loc=node.loc, name=node.name)
    return None


def _same_shape(node: Node, rw: Rewriter | None = None) -> Value | None:
    """broadcast_to / expand... that does not change the shape is the identity."""
    x = node.inputs[0]
    return x if tuple(x.type.shape) == tuple(node.outputs[0].shape) else None


ALGEBRAIC_RULES = (
    RewriteRule("mul_identity", "mul", _mul),
    RewriteRule("add_zero", "add", _add),
    RewriteRule("sub_zero", "sub", _sub),
    RewriteRule("div_one", "div", _div),
    RewriteRule("pow_small", "pow", _pow),
    RewriteRule("double_negation", "neg", _involution),
    RewriteRule("double_invert", "invert", _involution),
    RewriteRule("cast_noop", "cast", _cast),
    RewriteRule("transpose_pair", "transpose", _transpose),
    RewriteRule("reshape_pair", "reshape", _reshape),
    RewriteRule("broadcast_noop", "broadcast_to", _same_shape),
    RewriteRule("gelu_tanh_as_sigmoid", "mul", gelu_tanh_as_sigmoid),   # (ge/activation_forms.py)
)


# ---- common-subexpression elimination ------------------------------------------------------


class CSE(RulePass):
    name = "cse"
    opt_level = 1

    def rules(self, ctx: PassContext) -> list[RewriteRule]:
        return [RewriteRule("cse", None, _first_occurrence)]


def _first_occurrence(node: Node, rw: Rewriter) -> Replacement | None:
    """The first node computing the same value (in topological order), when it is not `node` itself."""
    key = cse_key(node)
    if key is None:
        return None
    kept = rw.memo.setdefault("cse", {}).setdefault(key, node)
    return None if kept is node else Replacement(kept.values)


def cse_key(node: Node) -> Hashable | None:
    """Op + ordered inputs + attributes, for pure non-structural nodes; None when not eligible."""
    if node.op == "Data" or node.subgraphs or not is_pure(node):  # an input is a value of its own
        return None
    try:
        attrs = attr_key(op_attrs(node))
    except TypeError:
        return None  # an attribute without a canonical key: never merge what we cannot compare
    inputs = tuple((id(v.node), v.index) for v in node.inputs)
    if getattr(ops.get(node.op), "commutative", False):
        inputs = tuple(sorted(inputs))  # a + b and b + a are the same value
    return (node.op, inputs, attrs)


# ---- dead-code elimination -------------------------------------------------------------------


class DCE(Pass):
    name = "dce"
    opt_level = 1

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        changed = False
        for node in list(graph.nodes):
            if node.op == "If":
                changed |= _prune_if_outputs(graph, node)
        changed |= remove_dead(graph)
        for node in list(graph.nodes):
            if node.op == "If":
                changed |= _prune_if_operands(node)
        changed |= remove_dead(graph)
        return changed


def removable(node: Node) -> bool:
    """A node that may be deleted when nothing uses it: pure, not an input, and (If) pure inside."""
    if node.op == "Data" or not is_pure(node):
        return False
    return all(removable(n) or n.op == "Data" for sub in node.subgraphs.values() for n in sub.nodes)


def remove_dead(graph: Graph) -> bool:
    roots = [v.node for v in graph.outputs] + [n for n in graph.nodes if not removable(n)]
    live = ancestors(roots)
    dead = [n for n in graph.nodes if n not in live]
    graph.remove(dead)
    return bool(dead)


def _prune_if_outputs(graph: Graph, node: Node) -> bool:
    used: set[int] = {v.index for n in graph.nodes for v in n.inputs if v.node is node}
    used |= {v.index for v in graph.outputs if v.node is node}
    if not used or len(used) == len(node.outputs):
        return False  # all unused: the whole If is dead (remove_dead); all used: nothing to prune
    kept = sorted(used)
    new_index = {old: new for new, old in enumerate(kept)}
    for key in ops.get(node.op).subgraph_attrs:
        branch: Graph = node.attrs[key]
        branch.outputs = [branch.outputs[i] for i in kept]
    node.outputs = ops.infer("If", [v.type for v in node.inputs], node.attrs)

    def moved(v: Value) -> Value:
        return Value(node, new_index[v.index]) if v.node is node else v

    for n in graph.nodes:
        n.inputs = [moved(v) for v in n.inputs]
    graph.outputs = [moved(v) for v in graph.outputs]
    return True


def _prune_if_operands(node: Node) -> bool:
    """Drop If operands (inputs after the condition) that neither branch reads."""
    branches: list[Graph] = [node.attrs[key] for key in ops.get(node.op).subgraph_attrs]
    pruned = False
    for b in branches:
        pruned |= remove_dead(b)  # a change too: the pass must report it (stage dump, verifier)
    unused: list[int] = []
    for index in range(len(node.inputs) - 1):
        if all(_data_unused(b, index) for b in branches):
            unused.append(index)
    if not unused:
        return pruned
    drop = set(unused)
    node.inputs = [node.inputs[0]] + [v for i, v in enumerate(node.inputs[1:]) if i not in drop]
    for b in branches:
        b.remove([n for n in b.nodes if n.op == "Data" and n.attrs["index"] in drop])
        for n in b.nodes:
            if n.op == "Data":
                old = n.attrs["index"]
                n.attrs["index"] = old - sum(1 for d in unused if d < old)
    return True


def _data_unused(branch: Graph, index: int) -> bool:
    data = [n for n in branch.nodes if n.op == "Data" and n.attrs.get("index") == index]
    return not data or not _has_uses(branch, data[0].out())


# ---- the group --------------------------------------------------------------------------------


def simplify_passes() -> list[Pass]:
    return [ConstantFolding(), AlgebraicSimplify(), CSE(), DCE()]


def simplify_group(max_steps: int | None = None) -> PassGroup:
    """fold -> algebraic -> CSE -> DCE, repeated until nothing changes (at most the step cap)."""
    return PassGroup("simplify", simplify_passes(), fixpoint=True, max_steps=max_steps)
