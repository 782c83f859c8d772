"""Convolution passes: batch-norm folding, grouped convs, the conv epilogue, and the NC1HWC0 conv region.

- `conv_batchnorm_fold` (opt 2, before composites are decomposed): batch_norm(conv(x, w, b), mean, var,
  gamma, beta) whose conv has no other reader becomes one fused_conv2d carrying the norm (`has_bn`): the
  conversion of w into the cube's layout rescales it, s = gamma / sqrt(var + eps), and computes the bias
  (b - mean) * s + beta for the bias table (float32), in the same launch; no op over w or the parameters
  of its own. A norm without gamma / beta gets constant ones / zeros. The result is cast to the batch norm's
  dtype on the way out (`out_dtype`).
- `conv_group_split` (opt 0, a legalisation): a conv with groups > 1 becomes one conv per group on a channel
  slice of x and of w, joined along the channels (correct, one launch chain per group).
- `conv_epilogue_fusion` (opt 2): conv -> add of a residual -> relu -> float cast become one `fused_conv2d`
  (has_residual, activation, out_dtype): the cube adds the residual into L0C (an identity product: the
  graph gets the 16 x 16 identity as a constant operand), FixPipe applies the ReLU and the cast on the way
  out. ReLU commutes with a float cast, so a ReLU after the cast fuses too; a cast fuses only where the
  conv's result is float32 (FixPipe rounds the float32 accumulator once, a float16 conv would have rounded
  it to float16 before the cast); a residual only of the result's type (the add promotes nothing).
- `blocked_layout` (opt 0, before layout_assign): the cube reads feature maps and writes results in
  NC1HWC0. A conv or pool reading an ND map is rewritten to read its NC1HWC0 conversion and give an NC1HWC0
  result, converted back to ND for its readers; an elementwise op reading such a conversion computes in
  NC1HWC0 instead (its other full-size operands read their existing NC1HWC0 conversion) when it maps the
  zero channel padding to zero (the padding stays zero for the next conv), and its result is converted
  back. `transdata_elimination` then removes every back-to-back pair, so conversions remain only at the
  edges of the conv region.
- `conv_edge_fold` (opt 2, after transdata_elimination): the conversions at the edges of the conv region
  move into the convs' launches (ge/conv_edges.py).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import dtypes, ops
from ..ir import Node, Value
from ..ops.conv import BLOCKED, conv_geometry, conv_operands, operand_names
from .edit import build_node, const_node, same_type, would_create_cycle
from .passes import PassContext
from .rewrite import Replacement, RewriteRule, Rewriter, RulePass
from .simplify import op_attrs

CONV_OPS = ("conv2d", "fused_conv2d")
POOL_OPS = ("max_pool2d", "avg_pool2d")
#: ops whose operand 0 is a feature map the cube or the pool kernels read in NC1HWC0
BLOCKED_MAP_OPS = CONV_OPS + POOL_OPS
#: conv2d's attributes that describe the convolution itself (fused_conv2d adds the epilogue)
GEOMETRY_ATTRS = ("stride", "padding", "dilation", "groups")


def conv_attrs(node: Node, **changes: Any) -> dict[str, Any]:
    """fused_conv2d's attributes for `node` (conv2d or fused_conv2d) with `changes` applied."""
    a = op_attrs(node)
    out = {k: a[k] for k in GEOMETRY_ATTRS if k in a}
    out.update(has_bias=bool(a.get("has_bias", False)), activation=a.get("activation"), out_dtype=a.get("out_dtype"))
    for flag, extra in (("has_bn", "bn_eps"), ("has_residual", None)):  # present only when set (shorter dumps)
        if a.get(flag):
            out[flag] = True
            if extra is not None:
                out[extra] = a[extra]
    if a.get("out_format"):
        out["out_format"] = a["out_format"]
    out.update(changes)
    return out


class _Nodes:
    """Builds the nodes of a replacement in order (each typed; None from `build_node` is a failed match)."""

    def __init__(self, loc: Any) -> None:
        self.loc = loc
        self.nodes: list[Node] = []

    def op(self, name: str, *inputs: Value, **attrs: Any) -> Value:
        node = build_node(name, list(inputs), attrs, loc=self.loc)
        if node is None:
            raise _NoMatch(f"{name} rejects {[str(v.type) for v in inputs]}")
        self.nodes.append(node)
        return node.out()

    def const(self, value: Any, dtype: str) -> Value:
        node = const_node(value, dtype, loc=self.loc)
        self.nodes.append(node)
        return node.out()

    def cast(self, v: Value, dtype: str) -> Value:
        return v if v.type.dtype == dtype else self.op("cast", v, dtype=dtype)


class _NoMatch(Exception):
    pass


# ---- batch-norm folding -----------------------------------------------------------------------


class ConvBatchNormFold(RulePass):
    name = "conv_batchnorm_fold"
    opt_level = 2

    def rules(self, ctx: PassContext) -> list[RewriteRule]:
        return [RewriteRule("fold_batchnorm", "batch_norm", fold_batchnorm)]


def fold_batchnorm(bn: Node, rw: Rewriter) -> Replacement | None:
    """batch_norm(conv(...)) as one conv carrying the norm (see the module docstring)."""
    src = bn.inputs[0]
    conv = src.node
    if conv.op not in CONV_OPS or rw.uses.sole_reader(src) is not bn:
        return None
    if conv.attrs.get("activation") is not None or conv.attrs.get("has_bn") or conv.attrs.get("has_residual"):
        return None  # not after a ReLU or a residual add, nor a second one (the first is folded already)
    a = op_attrs(bn)
    params = iter(bn.inputs[3:])
    mean, var = bn.inputs[1], bn.inputs[2]
    b = _Nodes(bn.loc)
    try:
        gamma = next(params) if a.get("has_weight") else b.const(np.ones(mean.type.shape), mean.type.dtype)
        beta = next(params) if a.get("has_bias") else b.const(np.zeros(mean.type.shape), mean.type.dtype)
        fused = b.op("fused_conv2d", *conv.inputs, mean, var, gamma, beta,
                     **conv_attrs(conv, has_bn=True, bn_eps=float(a.get("eps", 1e-5)),
                                   out_dtype=bn.outputs[0].dtype))
    except _NoMatch:
        return None
    if not same_type(fused.type, bn.outputs[0]):
        return None
    return Replacement([fused], b.nodes)


# ---- grouped convolutions -----------------------------------------------------------------------


class ConvGroupSplit(RulePass):
    name = "conv_group_split"
    opt_level = 0

    def rules(self, ctx: PassContext) -> list[RewriteRule]:
        return [RewriteRule("split_groups", lambda op: op.name in CONV_OPS, split_groups)]


def _channel_slice(b: _Nodes, v: Value, lo: int, hi: int, axis: int) -> Value:
    shape = v.type.shape
    starts = tuple(lo if i == axis else 0 for i in range(len(shape)))
    stops = tuple(hi if i == axis else d for i, d in enumerate(shape))
    return b.op("slice", v, starts=starts, stops=stops, steps=(1,) * len(shape))


def split_groups(conv: Node, rw: Rewriter) -> Replacement | None:
    groups = int(conv.attrs.get("groups", 1))
    if groups == 1:
        return None
    attrs = op_attrs(conv)
    arg = conv_operands(conv.inputs, attrs)
    x, w = arg["x"], arg["w"]
    g = conv_geometry(x.type, w.type, attrs, conv.op)
    cg, og = g.c // groups, g.o // groups
    b = _Nodes(conv.loc)
    try:
        parts = []
        for gi in range(groups):
            part = {"x": _channel_slice(b, x, gi * cg, (gi + 1) * cg, 1)}
            for name, v in arg.items():
                if name == "residual":   # the group's output channels
                    part[name] = _channel_slice(b, v, gi * og, (gi + 1) * og, 1)
                elif name not in ("x", "eye"):   # w, the bias and the norm's parameters: one per output channel
                    part[name] = _channel_slice(b, v, gi * og, (gi + 1) * og, 0)
            inputs = [part.get(name, arg.get(name)) for name in operand_names(attrs)]
            parts.append(b.op("fused_conv2d", *inputs, **conv_attrs(conv, groups=1)))
        joined = b.op("concat", *parts, axis=1)
    except _NoMatch:
        return None
    return Replacement([joined], b.nodes)


# ---- the FixPipe epilogue ---------------------------------------------------------------------


class ConvEpilogueFusion(RulePass):
    name = "conv_epilogue_fusion"
    opt_level = 2

    def rules(self, ctx: PassContext) -> list[RewriteRule]:
        return [RewriteRule("fuse_conv_epilogue", lambda op: op.name in CONV_OPS, fuse_conv_epilogue)]


def fuse_conv_epilogue(conv: Node, rw: Rewriter) -> Replacement | None:
    """The residual add / ReLU / float cast chain after `conv` folded into one fused_conv2d (a chain rule)."""
    attrs = conv_attrs(conv)
    chain = [conv]
    cur = conv.out()
    inputs = list(conv.inputs)
    added: list[Node] = []
    while True:
        user = rw.uses.sole_reader(cur)
        if user is None:
            break
        # the residual is added before the ReLU and the cast: after a cast it adds in the accumulator's
        # precision instead of the result's (one rounding instead of two, as the folded batch norm's cast)
        residual = _residual_of(user, cur) if not (attrs.get("has_residual") or attrs["activation"]) else None
        if residual is not None:
            eye = const_node(np.eye(16), dtypes.promote(conv.inputs[0].type.dtype, conv.inputs[1].type.dtype),
                             loc=user.loc)
            added.append(eye)
            inputs[2:2] = [residual, eye.out()]
            attrs["has_residual"] = True
        elif user.op == "relu" and attrs["activation"] is None:
            attrs["activation"] = "relu"
        elif user.op == "cast" and attrs["out_dtype"] is None and _float_cast(user) and cur.type.dtype == "float32":
            # FixPipe casts the float32 accumulator: the same one rounding only when the conv's result is
            # float32 (a float16 conv rounds to float16 first)
            attrs["out_dtype"] = dtypes.normalize(user.attrs["dtype"])
        else:
            break
        chain.append(user)
        cur = user.out()
    if len(chain) == 1:
        return None
    last = chain[-1]
    if attrs.get("has_residual") and would_create_cycle(inputs, chain):
        return None
    fused = build_node("fused_conv2d", inputs, attrs, loc=last.loc, name=last.name or conv.name)
    if fused is None or not same_type(fused.outputs[0], last.outputs[0]):
        return None
    return Replacement([fused.out()], [*added, fused], at=last, removed=chain)


def _residual_of(add: Node, cur: Value) -> Value | None:
    """The other operand of `add` when it adds a residual of the conv result's type to it."""
    if add.op != "add" or len(add.inputs) != 2 or add.inputs[0] == add.inputs[1]:
        return None
    other = add.inputs[1] if add.inputs[0] == cur else add.inputs[0]
    if not same_type(other.type, cur.type) or not same_type(add.outputs[0], cur.type):
        return None
    return other


def _float_cast(node: Node) -> bool:
    target = node.attrs.get("dtype")
    return target is not None and dtypes.is_float(dtypes.normalize(target))


# ---- the NC1HWC0 region -------------------------------------------------------------------------


class BlockedLayout(RulePass):
    name = "blocked_layout"
    opt_level = 0

    def rules(self, ctx: PassContext) -> list[RewriteRule]:
        return [RewriteRule("blocked_feature_map", lambda op: op.name in BLOCKED_MAP_OPS, blocked_feature_map),
                RewriteRule("sink_blocked_conversion", _elementwise, sink_blocked_conversion)]


def _to(b: _Nodes, v: Value, fmt: str) -> Value:
    return b.op("transdata", v, src_format=v.type.format, dst_format=fmt)


def blocked_feature_map(node: Node, rw: Rewriter) -> Replacement | None:
    """A conv / pool reading an ND feature map reads its NC1HWC0 conversion (a residual too); its result is
    converted back."""
    x = node.inputs[0]
    if x.type.format != "ND" or x.type.ndim != 4 or node.attrs.get("out_format"):
        return None  # (a conv with an out_format converts its edges itself: conv_edge_fold made it)
    b = _Nodes(node.loc)
    try:
        inputs = [_to(b, x, BLOCKED), *node.inputs[1:]]
        if node.attrs.get("has_residual"):
            inputs[2] = _to(b, inputs[2], BLOCKED)
        blocked = b.op(node.op, *inputs, **op_attrs(node))
        back = _to(b, blocked, "ND")
    except _NoMatch:
        return None
    return Replacement([back], b.nodes)


def _elementwise(op: ops.OpDef) -> bool:
    return op.category in (ops.Category.ELEMWISE, ops.Category.BROADCAST) and op.pure and not op.structural


def _from_blocked(v: Value) -> Value | None:
    """The NC1HWC0 value `v` is the ND conversion of, if it is one."""
    n = v.node
    if n.op == "transdata" and n.inputs[0].type.format == BLOCKED and v.type.format == "ND":
        return n.inputs[0]
    return None


def _existing_conversion(v: Value, rw: Rewriter, before: Node) -> Value | None:
    """An NC1HWC0 conversion of `v` that the graph already has, defined before `before`."""
    order = {id(n): i for i, n in enumerate(rw.graph.nodes)}
    at = order.get(id(before))
    for reader in rw.uses.readers(v):
        if (reader.op == "transdata" and reader.attrs.get("dst_format") == BLOCKED and at is not None
                and order.get(id(reader), at) < at):
            return reader.out()
    return None


def keeps_zero_padding(node: Node, inputs: Sequence[Value]) -> bool:
    """Whether `node` maps zero channel padding to zero: its eager function on zeros for every full-size
    operand (single-element constants keep their values) gives zeros."""
    arrays = []
    for v in inputs:
        scalar = v.node.attrs.get("value") if v.node.op == "Const" else None
        if v.type.numel == 1 and scalar is not None:
            arrays.append(np.asarray(scalar).reshape(()))
        elif v.type.numel == 1:
            return False  # a runtime scalar: its value is unknown
        else:
            arrays.append(np.zeros((1,) * v.type.ndim, dtypes.to_numpy(v.type.dtype)))
    try:
        with np.errstate(all="ignore"):
            out = ops.get(node.op).eager(*arrays, **op_attrs(node))
    except Exception:  # an op that cannot run on these stand-ins is not moved
        return False
    outs = out if isinstance(out, tuple) else (out,)
    return all(np.all(np.asarray(o) == 0) for o in outs)


def sink_blocked_conversion(node: Node, rw: Rewriter) -> Replacement | None:
    """elementwise(NC1HWC0 -> ND conversions, ...) as the elementwise op in NC1HWC0, converted back once."""
    if len(node.outputs) != 1 or node.outputs[0].ndim != 4:
        return None
    shape = node.outputs[0].shape
    sources = [_from_blocked(v) for v in node.inputs]
    if not any(s is not None for s in sources):
        return None
    inputs: list[Value] = []
    for v, s in zip(node.inputs, sources):
        if s is not None and v.type.shape == shape:
            inputs.append(s)
        elif v.type.numel == 1:
            inputs.append(v)
        elif v.type.shape == shape and v.type.format == "ND":
            conv = _existing_conversion(v, rw, node)
            if conv is None:
                return None  # converting it would cost what sinking saves
            inputs.append(conv)
        else:
            return None  # a broadcast operand: its layout differs
    if not keeps_zero_padding(node, node.inputs):
        return None
    b = _Nodes(node.loc)
    try:
        blocked = b.op(node.op, *inputs, **op_attrs(node))
        back = _to(b, blocked, "ND")
    except _NoMatch:
        return None
    return Replacement([back], b.nodes)
