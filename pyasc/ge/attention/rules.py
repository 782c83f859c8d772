"""The `attention` pass: two rewrite rules that put one attention op where the graph spells attention out.

- rule "attention", on every product (matmul, einsum): when `match_attention` finds softmax(scale * q @ k^T + masks) @ v
  there, the matmul (or the cast after it) is replaced by `attention(q, k, v[, mask], scale, causal)`. k or
  v given transposed are read through a transpose view; a constant mask that is the causal triangle
  becomes causal=True, any other mask (constant or not, additive or a where) one additive mask operand
  (the sum of them; a where-mask `where(keep, 0, fill)`). q is cast up front when the pattern's result is
  wider than q, the result cast when it is narrower.
- rule "attention_heads", on every concatenate: when `match_heads` finds H attention ops on the heads of
  one tensor joined by it, they become one batched attention on views of that tensor, its result put back
  into the join's layout by a transpose and a reshape (heads.py).

The attention op is kept only where codegen can lower it whole: the pass asks the capacity function
(`ge.pattern.whole_op_refusal`, what `decompose_composites` asks too) and "attention" must be in the knob
`dedicated_lowerings`; otherwise the graph is left as it is. Every match and every near miss is a decision in
the fusion log (`DecisionKind.PATTERN` / `NEAR_MISS`, rule "attention" or "attention_heads"): found at which
node, in which spelling, or which piece stopped it. The nodes a match replaced are removed with it.
"""
from __future__ import annotations

from typing import Any

from ... import dtypes
from ...ir import Graph, Node, Value, node_names
from ...target import Chip
from ..capacity import CapacityFn
from ..decisions import DecisionKind, FusionDecision
from ..edit import ancestors, build_node, const_node, same_type
from ..fusion.fusion_pass import capacity_of
from ..passes import Pass, PassContext
from ..pattern import DEFAULT_DEDICATED_LOWERINGS, whole_op_refusal
from ..rewrite import Replacement, RewriteRule, Rewriter, apply_rules
from ..simplify import removable
from .constants import constant_array
from .heads import HeadsFound, HeadView, match_heads
from .masks import additive_is_causal, where_is_causal
from .match import Found, Miss, match_attention, widened_from
from .spellings import PRODUCT_OPS, Mask, label

RULE_SINGLE = "attention"
RULE_HEADS = "attention_heads"


class _NotBuilt(Exception):
    """A replacement node the registry rejects (the reason goes to the fusion log as a near miss)."""


class _Builder:
    """New nodes of one replacement, typed as they are made, at the matched node's source location."""

    def __init__(self, loc: Any):
        self.loc = loc
        self.nodes: list[Node] = []

    def op(self, op: str, inputs: list[Value], **attrs: Any) -> Value:
        node = build_node(op, inputs, attrs, loc=self.loc)
        if node is None:
            raise _NotBuilt(f"{op} of {', '.join(str(tuple(v.type.shape)) for v in inputs)} with {attrs} is rejected")
        self.nodes.append(node)
        return node.out()

    def const(self, value: float, dtype: str) -> Value:
        node = const_node(value, dtype, loc=self.loc)
        self.nodes.append(node)
        return node.out()


class AttentionPass(Pass):
    name = "attention"
    opt_level = 2
    max_sweeps = 8

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        names = node_names(graph)
        log = _Log(names)
        capacity, chip = capacity_of(ctx)
        keep = RULE_SINGLE in frozenset(ctx.knob("dedicated_lowerings", DEFAULT_DEDICATED_LOWERINGS))
        gate = _Gate(capacity, chip, keep)
        stats = apply_rules(graph, self.rules(log, gate), max_sweeps=self.max_sweeps)
        ctx.stats.update(stats)
        ctx.state.pattern_decisions.extend(log.decisions(graph))
        if stats.changed:
            _remove_replaced(graph, log.replaced)
        return stats.changed

    def rules(self, log: "_Log", gate: "_Gate") -> list[RewriteRule]:
        return [
            RewriteRule(RULE_SINGLE, lambda op: op.name in PRODUCT_OPS, lambda node, rw: _single(node, rw, log, gate)),
            RewriteRule(RULE_HEADS, "concat", lambda node, rw: _heads(node, rw, log, gate)),
        ]


class _Gate:
    """Whether an attention op may stay whole: the knob and the capacity function (why not, or "")."""

    def __init__(self, capacity: CapacityFn, chip: Chip, enabled: bool):
        self.capacity, self.chip, self.enabled = capacity, chip, enabled

    def refusal(self, graph: Graph, att: Node) -> str:
        if not self.enabled:
            return "attention is not in the knob dedicated_lowerings"
        why = whole_op_refusal(graph, att, self.capacity, self.chip)
        return f"codegen cannot lower it whole ({why})" if why else ""


class _Log:
    """The pass's decisions: matches in order, near misses by anchor (the last sweep's word wins)."""

    def __init__(self, names: dict[Node, str]):
        self.names = names
        self.found: list[FusionDecision] = []
        self.misses: dict[Node, FusionDecision] = {}
        self.replaced: set[Node] = set()

    def label(self, node: Node) -> str:
        return label(node.out(), self.names)

    def miss(self, rule: str, at: Node, reason: str) -> None:
        self.misses[at] = FusionDecision(DecisionKind.NEAR_MISS, rule, self.label(at), detail=reason)

    def hit(self, rule: str, at: Node, consumer: str, detail: str, replaced: list[Node]) -> None:
        self.misses.pop(at, None)
        self.found.append(FusionDecision(DecisionKind.PATTERN, rule, self.label(at), consumer, detail))
        self.replaced.update(replaced)

    def decisions(self, graph: Graph) -> list[FusionDecision]:
        present = set(graph.nodes)
        return self.found + [d for n, d in self.misses.items() if n in present]


def _live(rw: Rewriter) -> set[Node]:
    """The nodes the graph's results need (what DCE keeps), once per sweep: a dead reader is no reader."""
    if "live" not in rw.memo:
        graph = rw.graph
        rw.memo["live"] = ancestors([v.node for v in graph.outputs] + [n for n in graph.nodes if not removable(n)])
    return rw.memo["live"]


# ---- rule "attention" ---------------------------------------------------------------------------


def _single(mm: Node, rw: Rewriter, log: _Log, gate: _Gate) -> Replacement | None:
    found = match_attention(mm, rw.uses, log.names, _live(rw))
    made = _made(RULE_SINGLE, mm, found, _build_single, "the pattern", rw, log, gate)
    if made is None:
        return None
    b, att, out, (causal, mask_text) = made
    what = f"scale={found.scale:g}" + (", causal" if causal else "") + (f", mask {mask_text}" if mask_text else "")
    qkv = ", ".join(f"{r}={label(x, log.names)}" for r, x in zip("qkv", att.inputs))
    log.hit(RULE_SINGLE, mm, f"attention({what})",
            f"softmax(q @ k^T * scale + masks) @ v ({'; '.join(found.spellings)}; {qkv})", found.interior)
    if found.last is mm:
        return Replacement([out], b.nodes)
    return Replacement([out], b.nodes, at=found.last, removed=[mm, found.last])


def _made(rule: str, at: Node, found: Any, build: Any, what: str, rw: Rewriter, log: _Log,
          gate: _Gate) -> tuple[_Builder, Node, Value, Any] | None:
    """The steps both rules share: a near miss is logged; a match is built (`build(found, builder)` returns the
    attention node, the value replacing the match and what else it wants to say), its type checked against what it
    replaces (`found.replaces`), and the gate asked. None when nothing is to be rewritten."""
    if found is None:
        return None
    if isinstance(found, Miss):
        log.miss(rule, at, found.reason)
        return None
    b = _Builder(at.loc)
    try:
        att, out, extra = build(found, b)
    except _NotBuilt as e:
        log.miss(rule, at, f"found {what}, but {e}")
        return None
    if not same_type(out.type, found.replaces):
        log.miss(rule, at, f"found {what}, but the attention op gives {out.type} where it computes {found.replaces} "
                           "(a mask that broadcasts the scores to more batch dims?)")
        return None
    refusal = gate.refusal(rw.graph, att)
    if refusal:
        log.miss(rule, at, f"found {what}, but {refusal}; left as it is")
        return None
    return b, att, out, extra


def _build_single(f: Found, b: _Builder) -> tuple[Node, Value, tuple[bool, str]]:
    """(the attention node, the value replacing the pattern's result, (causal, how the mask was made))."""
    k = _swapped(f.k, b) if f.k_transposed else f.k
    v = _swapped(f.v, b) if f.v_transposed else f.v
    out_dtype = f.out_dtype
    q = widened_from(f.q)
    if q.type.dtype != out_dtype:
        if f.q.type.dtype == out_dtype:
            q = f.q
        elif dtypes.itemsize(out_dtype) > dtypes.itemsize(q.type.dtype):
            q = b.op("cast", [q], dtype=out_dtype)
    tq, tk = q.type.shape[-2], k.type.shape[-2]
    mask, causal, text = _mask_operand(f.masks, tq, tk, b)
    att = b.op("attention", [q, k, v] + ([mask] if mask is not None else []), scale=float(f.scale), causal=causal,
               has_mask=mask is not None)
    out = att if att.type.dtype == out_dtype else b.op("cast", [att], dtype=out_dtype)
    if tuple(out.type.shape) != tuple(f.replaces.shape):  # the product had its batch dims flattened (bmm)
        out = b.op("reshape", [out], shape=tuple(f.replaces.shape))
    return att.node, out, (causal, text)


def _swapped(x: Value, b: _Builder) -> Value:
    nd = x.type.ndim
    return b.op("transpose", [x], axes=tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _mask_operand(masks: list[Mask], tq: Any, tk: Any, b: _Builder) -> tuple[Value | None, bool, str]:
    """The masks as (one additive mask operand or None, causal, words for the log)."""
    static = isinstance(tq, int) and isinstance(tk, int)
    causal = False
    terms: list[Value] = []
    words: list[str] = []
    for m in masks:
        if m.value is not None:
            arr = constant_array(m.value)
            if arr is not None:
                scaled = arr.astype("float64") * m.factor
                if static and not causal and additive_is_causal(scaled, tq, tk):
                    causal = True
                    words.append("an added constant triangle -> causal")
                    continue
                if not scaled.any():
                    continue
            terms.append(m.value if m.factor == 1.0 else
                         b.op("mul", [m.value, b.const(m.factor, m.value.type.dtype)]))
            words.append("added")
            continue
        arr = constant_array(m.condition)
        if arr is not None and static and not causal and where_is_causal(arr if m.keep else ~arr, tq, tk, m.fill):
            causal = True
            words.append("a where on a constant triangle -> causal")
            continue
        zero, fill = b.const(0.0, "float32"), b.const(m.fill, "float32")
        terms.append(b.op("where", [m.condition, zero, fill] if m.keep else [m.condition, fill, zero]))
        words.append(f"where -> where(keep, 0, {m.fill:g})")
    mask = terms[0] if terms else None
    for t in terms[1:]:
        mask = b.op("add", [mask, t])
    return mask, causal, ", ".join(w for w in words if "causal" not in w)


# ---- rule "attention_heads" ---------------------------------------------------------------------


def _heads(join: Node, rw: Rewriter, log: _Log, gate: _Gate) -> Replacement | None:
    found = match_heads(join, rw.uses, log.names, _live(rw))
    what = f"{len(found.heads)} heads" if isinstance(found, HeadsFound) else ""
    made = _made(RULE_HEADS, join, found, _build_heads, what, rw, log, gate)
    if made is None:
        return None
    b, att, out, _ = made
    bases = ", ".join(f"{r}: {_view_text(found.views[r][0], log.names)}" for r in "qkv")
    log.hit(RULE_HEADS, join, f"attention{tuple(att.outputs[0].shape)}",
            f"{len(found.heads)} heads of attention joined by {join.attrs.get('kind', 'concatenate')} "
            f"({bases})", list(found.heads) + [join])
    return Replacement([out], b.nodes)


def _view_text(view: HeadView, names: dict[Node, str]) -> str:
    base = label(view.base, names)
    if view.shared:
        return f"{base} shared by every head"
    if view.squeezed:
        return f"{base} indexed on axis {view.axis}"
    return f"column slices of {base} from {view.start}, {view.width} wide"


def _build_heads(h: HeadsFound, b: _Builder) -> tuple[Node, Value, None]:
    n_heads = len(h.heads)
    q, k, v = (_merged(h.views[r], n_heads, b) for r in "qkv")
    first = h.heads[0]
    mask = h.mask
    if mask is not None and mask.type.ndim >= 3:
        mask = b.op("expand_dims", [mask], axis=mask.type.ndim - 2)  # a head axis the mask broadcasts over
    att = b.op("attention", [q, k, v] + ([mask] if mask is not None else []), scale=first.attrs.get("scale"),
               causal=bool(first.attrs.get("causal", False)), has_mask=mask is not None)
    out = att
    rank = att.type.ndim
    perm = [a for a in range(rank) if a != rank - 3]
    perm.insert(h.axis, rank - 3)  # the head axis goes where the join puts the heads
    if perm != list(range(rank)):
        out = b.op("transpose", [out], axes=tuple(perm))
    if not h.stacked:
        shape = tuple(out.type.shape)
        out = b.op("reshape", [out], shape=shape[:h.axis] + (shape[h.axis] * shape[h.axis + 1],) + shape[h.axis + 2:])
    return att.node, out, None


def _merged(views: list[HeadView], n_heads: int, b: _Builder) -> Value:
    """The heads' operand as one tensor with the heads as the batch axis just before the rows (axis -3)."""
    first = views[0]
    base = first.base
    nd = base.type.ndim
    if first.shared:
        return b.op("expand_dims", [base], axis=nd - 2)
    span = n_heads * first.width
    x = base
    if first.start != 0 or span != base.type.shape[first.axis]:
        starts = tuple(first.start if a == first.axis else 0 for a in range(nd))
        stops = tuple(first.start + span if a == first.axis else None for a in range(nd))
        x = b.op("slice", [x], starts=starts, stops=stops, steps=(1,) * nd)
    if first.squeezed:
        if first.axis == nd - 3:
            return x
        perm = [a for a in range(nd) if a != first.axis]
        perm.insert(nd - 3, first.axis)
        return b.op("transpose", [x], axes=tuple(perm))
    shape = tuple(x.type.shape)
    x = b.op("reshape", [x], shape=shape[:-1] + (n_heads, first.width))
    r = nd + 1
    return b.op("transpose", [x], axes=tuple(range(r - 3)) + (r - 2, r - 3, r - 1))


# ---- cleaning up --------------------------------------------------------------------------------


def _remove_replaced(graph: Graph, replaced: set[Node]) -> None:
    """Drop what the matches left unread: the replaced nodes and the nodes above them (k^T, a scale constant)
    that nothing else reads. Nodes elsewhere in the graph are DCE's business."""
    region = ancestors(replaced)
    roots = [v.node for v in graph.outputs] + [n for n in graph.nodes if n not in region or not removable(n)]
    live = ancestors(roots)
    graph.remove([n for n in graph.nodes if n in region and n not in live])
