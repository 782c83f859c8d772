"""`conv_edge_fold` (opt 2, after transdata_elimination): the NC1HWC0 conversions at the edges of a conv region
move into the convs' own launches.

After `blocked_layout` and `transdata_elimination` a conv region reads its ND input through one transdata
(ND -> NC1HWC0) and gives its ND result through another (NC1HWC0 -> ND): two launches of their own that only
move data. The conv's launch can do both on its vector cores (codegen's conv_launch: the input converted
into a workspace before the all-core barrier the weights already need, the result converted after a second
barrier), so:

- `store_result_nd`: transdata(conv(...) NC1HWC0 -> ND), the conversion the conv's only reader, becomes the
  conv with `out_format="ND"`. A residual the conv adds is then read in ND too: the conv must read it through
  an ND -> NC1HWC0 transdata, whose source it reads instead (the launch adds it on the vector cores, after
  the conversion; no conversion of its own).
- `load_map_nd`: conv(transdata(x ND -> NC1HWC0)) reads x with `out_format="NC1HWC0"` (its result stays in
  the region), when every reader of the conversion is a conv reading it as its feature map (so the
  conversion disappears, instead of running twice: once alone and once in the conv's launch).

Each fold is a decision in the fusion log (`PATTERN`, rule "conv_edge_fold"). `disable_passes=
["conv_edge_fold"]` keeps the conversions as launches of their own, and so does disabling `mixed_kernels`
(the fold saves launches only in a mixed launch). A conv launch that cannot take them after all (no tiling
of its vector side fits) runs them as launches of their own next to the conv's (codegen's `conv_jobs`).
"""
from __future__ import annotations

from typing import Callable

from ..ir import Node, Value
from ..ops.conv import BLOCKED, conv_operands, operand_names
from .conv import CONV_OPS, conv_attrs
from .decisions import DecisionKind, FusionDecision
from .edit import build_node, same_type
from .mixed import MixedKernelsPass
from .passes import PassContext
from .rewrite import Replacement, RewriteRule, Rewriter, RulePass

RULE = "conv_edge_fold"


class ConvEdgeFold(RulePass):
    name = RULE
    opt_level = 2

    def rules(self, ctx: PassContext) -> list[RewriteRule]:
        if not ctx.enabled(MixedKernelsPass())[0]:
            return []  # the conversions would run as launches of their own next to the conv's: nothing saved
        log = ctx.state.pattern_decisions.append  # (fusion rewrites its own list; these come first)

        def decided(rule: str, at: str, detail: str) -> None:
            log(FusionDecision(DecisionKind.PATTERN, RULE, at, "its launch's vector cores", f"{rule} ({detail})"))

        return [RewriteRule("store_result_nd", "transdata", lambda n, rw: store_result_nd(n, rw, decided)),
                RewriteRule("load_map_nd", lambda op: op.name in CONV_OPS, lambda n, rw: load_map_nd(n, rw, decided))]


def _conversion(v: Value, src: str, dst: str) -> Node | None:
    """The transdata node making `v` from `src` to `dst`, if `v` is one."""
    n = v.node
    if n.op == "transdata" and n.attrs.get("src_format") == src and n.attrs.get("dst_format") == dst:
        return n
    return None


def _live(node: Node, rw: Rewriter) -> bool:
    outs = set(rw.graph.outputs)
    return any(v in outs or rw.uses.readers(v) for v in node.values)


def store_result_nd(t: Node, rw: Rewriter, decided: Callable[[str, str, str], None]) -> Replacement | None:
    """transdata(conv NC1HWC0 -> ND) as the conv giving ND (see the module docstring)."""
    if _conversion(t.out(), BLOCKED, "ND") is None:
        return None
    src = t.inputs[0]
    conv = src.node
    if conv.op not in CONV_OPS or rw.uses.sole_reader(src) is not t or conv.attrs.get("out_format") == "ND":
        return None
    inputs = list(conv.inputs)
    arg = conv_operands(inputs, conv.attrs)
    if "residual" in arg:
        into = _conversion(arg["residual"], "ND", BLOCKED)
        if into is None:
            return None  # a residual made in NC1HWC0 would need a conversion of its own: nothing saved
        inputs[operand_names(conv.attrs).index("residual")] = into.inputs[0]
    fused = build_node("fused_conv2d", inputs, conv_attrs(conv, out_format="ND"), loc=t.loc,
                       name=t.name or conv.name)
    if fused is None or not same_type(fused.outputs[0], t.outputs[0]):
        return None
    decided("store_result_nd", f"{conv.op}'s result",
            f"the {BLOCKED} -> ND conversion, no launch of its own" +
            ("; the residual is added there, in ND" if "residual" in arg else ""))
    return Replacement([fused.out()], [fused], removed=[conv, t])


def load_map_nd(conv: Node, rw: Rewriter, decided: Callable[[str, str, str], None]) -> Replacement | None:
    """conv(transdata(x ND -> NC1HWC0)) as the conv reading x (see the module docstring)."""
    into = _conversion(conv.inputs[0], "ND", BLOCKED)
    if into is None:
        return None
    for reader in rw.uses.readers(into.out()):
        if not _live(reader, rw):
            continue  # replaced earlier in this sweep (dce removes it)
        reads = [i for i, v in enumerate(reader.inputs) if v == into.out()]
        if reader.op not in CONV_OPS or reads != [0]:
            return None  # the conversion stays for another reader: folding it would only do it twice
    fmt = conv.attrs.get("out_format") or BLOCKED
    fused = build_node("fused_conv2d", [into.inputs[0], *conv.inputs[1:]], conv_attrs(conv, out_format=fmt),
                       loc=conv.loc, name=conv.name)
    if fused is None or not same_type(fused.outputs[0], conv.outputs[0]):
        return None
    decided("load_map_nd", f"{conv.op}'s feature map", f"the ND -> {BLOCKED} conversion, no launch of its own")
    return Replacement([fused.out()], [fused])
