"""Layout: storage formats, format conversions (transdata) and transpose elimination.

What the graph shows (our decision, see DESIGN §3 "Formats"):

- Every tensor in GM is ND unless something says otherwise: graph inputs
  arrive ND from numpy, graph outputs leave ND, and every elementwise,
  broadcast, reduce and layout op reads and writes ND.
- The cube works on FRACTAL_NZ fractals, but the ND -> NZ conversion is done
  by the data move into L1 (MTE2 with the ND->NZ option) and NZ -> ND by
  FixPipe on the way out of L0C. Neither costs a separate pass over GM, so a
  matmul / fused_matmul operand stays ND in the graph, and no transdata node is
  inserted for it. A matmul operand that is already FRACTAL_NZ in GM (a graph
  input declared NZ, or the result of a transdata) is accepted as is: it is
  copied into L1 without conversion. `ctx.state.cube_routes` records, per
  matmul operand, its GM format and how it reaches the cube.
- A `transdata` node appears only where a producer's format is one the
  consumer does not accept (e.g. an NZ graph input read by an add, or an NZ
  value returned by the graph). A graph where formats do not matter (all ND)
  therefore shows zero conversions.
- NC1HWC0 is accepted where it is produced (a graph input declared with it);
  no op in the registry asks for it, so nothing converts into it.

Passes:
- `layout_assign` (opt_level 0, a legalisation): inserts the conversions above,
  one per (value, target format), right after the producer, shared by all readers.
- `transdata_elimination`: a transdata whose source and target agree
  disappears; a back-to-back pair whose first input already has the second's
  output type (ND->NZ->ND) disappears; any other pair becomes one conversion;
  a conversion its reader does not need (an NZ->ND feeding a matmul, which
  accepts NZ) is bypassed; identical sibling conversions of one value are
  merged; back-to-back transposes cancel or compose.
- `transpose_sinking`: transpose -> unary elementwise ops (or binary ones with a
  0-d operand) -> transpose is rewritten as the elementwise ops on the
  untransposed tensor followed by one transpose with the composed permutation
  (none when the two cancel), which removes at least one transpose. Only
  self-contained chains (each intermediate has that one reader) are moved.
"""
from __future__ import annotations

from .. import ops
from ..ir import Graph, Node, UseIndex, Value
from .decisions import CubeOperandRoute
from .edit import build_node, is_structural, make_node, same_type
from .passes import Pass, PassContext
from .pattern import cube_operands
from .rewrite import Replacement, RewriteRule, Rewriter, RulePass
from .simplify import compose_perms, is_identity_perm, op_attrs, perm_of, rewrite_node

CUBE_FORMAT = "FRACTAL_NZ"


def accepted_formats(node: Node, index: int) -> frozenset[str]:
    """Storage formats `node` can read on input `index` without a conversion node (the registry's fact)."""
    return ops.get(node.op).accepted_formats(index)


# ---- layout_assign -----------------------------------------------------------------------------


class LayoutAssign(Pass):
    name = "layout_assign"
    opt_level = 0

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        converted: dict[tuple[Value, str], Value] = {}
        changed = False
        for node in list(graph.nodes):
            cube = {c.index: c.name for c in cube_operands(node)}
            for i, v in enumerate(node.inputs):
                want = accepted_formats(node, i)
                if i in cube:
                    ctx.state.cube_routes.append(CubeOperandRoute(graph.name, node.op, cube[i], v.type, CUBE_FORMAT))
                if v.type.format not in want:
                    node.inputs[i] = _converted(graph, v, _target(want), converted)
                    changed = True
        for i, v in enumerate(graph.outputs):
            if v.type.format != "ND":  # results leave as numpy arrays; If results are ND by definition
                graph.outputs[i] = _converted(graph, v, "ND", converted)
                changed = True
        return changed


def _target(want: frozenset[str]) -> str:
    return "ND" if "ND" in want else sorted(want)[0]


def _converted(graph: Graph, v: Value, dst: str, cache: dict[tuple[Value, str], Value]) -> Value:
    key = (v, dst)
    if key not in cache:
        at = graph.nodes.index(v.node) + 1  # right after the producer: before every reader
        after = graph.nodes[at] if at < len(graph.nodes) else None
        node = make_node(graph, "transdata", (v,), {"src_format": v.type.format, "dst_format": dst}, before=after)
        cache[key] = node.out()
    return cache[key]


# ---- transdata_elimination -------------------------------------------------------------------


class TransdataElimination(RulePass):
    name = "transdata_elimination"
    opt_level = 1

    def rules(self, ctx: PassContext) -> tuple[RewriteRule, ...]:
        return TRANSDATA_RULES


def _rewrite_transdata(node: Node, rw: Rewriter) -> Value | Node | None:
    """What a transdata simplifies to: its input (identity / inverse pair), one merged conversion, or None."""
    x = node.inputs[0]
    want = node.outputs[0]
    if same_type(x.type, want):
        return x  # src == dst: nothing to convert
    inner = x.node
    if inner.op != "transdata":
        return None
    origin = inner.inputs[0]
    if same_type(origin.type, want):
        return origin  # T2(T1(x)) with T2 undoing T1
    merged = build_node("transdata", (origin,), {"src_format": origin.type.format,
                                                 "dst_format": want.format}, loc=node.loc)
    if merged is None or not same_type(merged.outputs[0], want):
        return None
    return merged


def _bypass_unneeded(node: Node, rw: Rewriter) -> bool:
    """Read the unconverted value where the reader accepts its format as it is."""
    changed = False
    control = ops.get(node.op).is_control  # its branch's Data types must stay what they are
    for i, v in enumerate(node.inputs):
        if v.node.op != "transdata" or control:
            continue
        source = v.node.inputs[0]
        if source.type.format not in accepted_formats(node, i):
            continue
        inputs = list(node.inputs)
        inputs[i] = source
        trial = build_node(node.op, inputs, op_attrs(node))
        if trial is not None and trial.outputs == node.outputs:
            node.inputs = inputs
            changed = True
    return changed


def _merge_sibling(node: Node, rw: Rewriter) -> Replacement | None:
    """An identical conversion of the same value seen earlier (same source, same formats) replaces this one."""
    x = node.inputs[0]
    key = (id(x.node), x.index, node.attrs.get("src_format"), node.attrs.get("dst_format"))
    kept = rw.memo.setdefault("transdata_siblings", {}).setdefault(key, node)
    return None if kept is node else Replacement([kept.out()])


TRANSDATA_RULES = (
    RewriteRule("transdata_pair", "transdata", _rewrite_transdata),
    RewriteRule("transpose_pair", "transpose", lambda node, rw: rewrite_node(node)),
    RewriteRule("merge_sibling_transdata", "transdata", _merge_sibling),
    RewriteRule("bypass_conversion", None, _bypass_unneeded),
)


# ---- transpose_sinking --------------------------------------------------------------------------


class TransposeSinking(RulePass):
    name = "transpose_sinking"
    opt_level = 3

    def rules(self, ctx: PassContext) -> list[RewriteRule]:
        return [RewriteRule("sink_transpose", "transpose", lambda node, rw: sink_transpose(node, rw.uses))]


def _sinkable(node: Node, through: Value) -> bool:
    """An op that commutes with any transpose of `through`: elementwise, shape-preserving, 1 tensor operand."""
    if not ops.exists(node.op) or is_structural(node) or not ops.get(node.op).pure:
        return False
    if len(node.outputs) != 1 or tuple(node.outputs[0].shape) != tuple(through.type.shape):
        return False
    category = ops.get(node.op).category
    if category == ops.Category.ELEMWISE and len(node.inputs) == 1:
        return True
    if category == ops.Category.BROADCAST and len(node.inputs) == 2:
        other = node.inputs[1] if node.inputs[0] == through else node.inputs[0]
        return other != through and other.type.ndim == 0  # a scalar operand broadcasts the same either way
    return False


def sink_transpose(first: Node, uses: UseIndex) -> Replacement | None:
    """`first` sunk down its chain to the next transpose, which the result replaces (a chain rule)."""
    chain: list[Node] = []
    cur = first.out()
    second = None
    while True:
        user = uses.sole_reader(cur)
        if user is None:
            return None
        if user.op == "transpose":
            second = user
            break
        if not _sinkable(user, cur):
            return None
        chain.append(user)
        cur = user.out()
    if not chain:
        return None  # transpose∘transpose alone is the algebraic rule's job
    value = first.inputs[0]
    built: list[Node] = []
    prev = first.out()
    for node in chain:
        inputs = [value if v == prev else v for v in node.inputs]
        moved = build_node(node.op, inputs, op_attrs(node), loc=node.loc, name=node.name)
        if moved is None or tuple(moved.outputs[0].shape) != tuple(value.type.shape):
            return None
        built.append(moved)
        prev, value = node.out(), moved.out()
    perm = compose_perms(perm_of(first), perm_of(second))
    last: Node | None = None
    if not is_identity_perm(perm):
        last = build_node("transpose", (value,), {**op_attrs(second), "axes": perm}, loc=second.loc,
                          name=second.name)
        if last is None:
            return None
        built.append(last)
        value = last.out()
    if not same_type(value.type, second.outputs[0]):
        return None
    return Replacement([value], built, at=second, removed=[first, *chain])


def layout_passes() -> list[Pass]:
    return [LayoutAssign(), TransdataElimination(), TransposeSinking()]
