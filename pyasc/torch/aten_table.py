"""The lowering table of the FX frontend: each supported aten op -> the registry ops it becomes.

An entry is a function of a `Lowering` (fx_graph.py) returning the node's value (or a list, one per
result, for an op with several: `operator.getitem` picks one). It reads arguments with `cx.arg`,
turns them into graph values with `cx.value` (numbers become constants of the dtype given) and adds
registry ops with `cx.op`. Arithmetic computes in the dtype torch gives the result (`cx.out_dtype`),
comparisons in the dtype torch promotes their operands to (`cx.promoted`). An entry raises
`Unsupported` for arguments it cannot express; ops missing here run in eager PyTorch (a reported
graph break). Attention (scaled_dot_product_attention), convolutions, indexing, statistics and norms, and
sorting have their own modules (attention.py, aten_conv.py, aten_index.py, aten_norms.py, aten_sorting.py).
int64 values are computed as int32 (convert.NARROWED): arithmetic that could carry them out of int32's
range is refused (GROWING).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from .aten_conv import TABLE as CONV
from .aten_index import TABLE as INDEXING
from .aten_norms import TABLE as NORMS, reduced_axes
from .aten_sorting import TABLE as SORTING
from .attention import ATTENTION
from .fx_graph import Entry, Lowering, Unsupported

aten = torch.ops.aten


# ---- elementwise --------------------------------------------------------------------------------


def _int64_in_range(entry: Entry) -> Entry:
    """Arithmetic that can grow values: an int64 result (computed as int32, convert.NARROWED) is refused unless
    it counts bools (the sum of a mask), so an int64 value is never wrapped inside a graph."""
    def guarded(cx: Lowering) -> Any:
        if cx.node.meta["val"].dtype == torch.int64 and any(
                a.meta["val"].dtype != torch.bool for a in cx.node.all_input_nodes):
            raise Unsupported("int64 arithmetic (computed in int32 on the chip, its values could wrap)")
        return entry(cx)
    return guarded


def _arith(op: str) -> Entry:
    """A binary op computed in the result's dtype (torch's promotion, Python numbers included)."""
    return lambda cx: cx.op(op, *cx.values(cx.arg(0), cx.arg(1), dtype=cx.out_dtype))


def _compare(op: str) -> Entry:
    return lambda cx: cx.op(op, *cx.values(cx.arg(0), cx.arg(1), dtype=cx.promoted(cx.arg(0), cx.arg(1))))


def _alpha(cx: Lowering, a: Any, alpha: Any) -> Any:
    v = cx.value(a, cx.out_dtype)
    return v if alpha == 1 else cx.op("mul", v, cx.value(alpha, cx.out_dtype))


def _add(cx: Lowering) -> Any:
    return cx.op("add", cx.value(cx.arg(0), cx.out_dtype), _alpha(cx, cx.arg(1), cx.node.kwargs.get("alpha", 1)))


def _sub(cx: Lowering) -> Any:
    return cx.op("sub", cx.value(cx.arg(0), cx.out_dtype), _alpha(cx, cx.arg(1), cx.node.kwargs.get("alpha", 1)))


def _rsub(cx: Lowering) -> Any:
    return cx.op("sub", cx.value(cx.arg(1), cx.out_dtype), _alpha(cx, cx.arg(0), cx.node.kwargs.get("alpha", 1)))


def _unary(op: str) -> Entry:
    """A unary op on its operand in the result's dtype (torch's int -> float32 promotion for float math)."""
    return lambda cx: cx.op(op, cx.value(cx.arg(0), cx.out_dtype))


def _gelu(cx: Lowering) -> Any:
    x = cx.value(cx.arg(0), cx.out_dtype)
    if cx.node.kwargs.get("approximate", "none") == "tanh":
        return cx.op("gelu", x)
    # exact GELU (torch's default): x/2 (1 + erf(x / sqrt 2))
    half = cx.op("mul", x, cx.value(0.5, x.type.dtype))
    e = cx.op("erf", cx.op("mul", x, cx.value(1 / math.sqrt(2), x.type.dtype)))
    return cx.op("mul", half, cx.op("add", e, cx.value(1.0, x.type.dtype)))


def _where(cx: Lowering) -> Any:
    return cx.op("where", cx.value(cx.arg(0)), *cx.values(cx.arg(1), cx.arg(2), dtype=cx.out_dtype))


def _clamp(lo_name: str, hi_name: str, lo_default: Any = None, hi_default: Any = None) -> Entry:
    def entry(cx: Lowering) -> Any:
        out = cx.value(cx.arg(0), cx.out_dtype)
        lo, hi = cx.arg(1, lo_name, lo_default), cx.arg(2, hi_name, hi_default)
        if lo is not None:
            out = cx.op("maximum", out, cx.value(lo, cx.out_dtype))
        if hi is not None:
            out = cx.op("minimum", out, cx.value(hi, cx.out_dtype))
        return out
    return entry


def _bound(op: str) -> Entry:
    return lambda cx: cx.op(op, *cx.values(cx.arg(0), cx.arg(1), dtype=cx.out_dtype))


def _leaky_relu(cx: Lowering) -> Any:
    x = cx.value(cx.arg(0), cx.out_dtype)
    slope = cx.arg(1, "negative_slope", 0.01)
    return cx.op("where", cx.op("gt", x, cx.value(0.0, x.type.dtype)), x, cx.op("mul", x, cx.value(slope, x.type.dtype)))


def _elu(cx: Lowering) -> Any:
    """elu(x, alpha=1, scale=1, input_scale=1): scale * x above 0, else scale * alpha * expm1(x * input_scale)."""
    x = cx.value(cx.arg(0), cx.out_dtype)
    dt = x.type.dtype
    alpha, scale, input_scale = (float(cx.arg(i, name, 1.0)) for i, name in
                                 ((1, "alpha"), (2, "scale"), (3, "input_scale")))
    below = cx.op("expm1", x if input_scale == 1 else cx.op("mul", x, cx.value(input_scale, dt)))
    if alpha * scale != 1:
        below = cx.op("mul", below, cx.value(alpha * scale, dt))
    above = x if scale == 1 else cx.op("mul", x, cx.value(scale, dt))
    return cx.op("where", cx.op("gt", x, cx.value(0.0, dt)), above, below)


def _pow(cx: Lowering) -> Any:
    return cx.op("pow", *cx.values(cx.arg(0), cx.arg(1), dtype=cx.out_dtype))


def _div_mode(cx: Lowering) -> Any:
    mode = cx.node.kwargs.get("rounding_mode")
    if mode == "floor":
        return cx.op("floordiv", *cx.values(cx.arg(0), cx.arg(1), dtype=cx.out_dtype))
    if mode is None:
        return cx.op("div", *cx.values(cx.arg(0), cx.arg(1), dtype=cx.out_dtype))
    raise Unsupported(f"rounding_mode={mode!r}")  # "trunc": no truncating division on the chip


def _not(cx: Lowering) -> Any:
    x = cx.value(cx.arg(0))
    return cx.op("eq", x, cx.value(0, x.type.dtype) if x.type.dtype != "bool" else cx.value(False))


def _truth(cx: Lowering, a: Any) -> Any:
    v = cx.value(a)
    return v if v.type.dtype == "bool" else cx.op("ne", v, cx.value(0, v.type.dtype))


def _logical(op: str) -> Entry:
    return lambda cx: cx.op(op, _truth(cx, cx.arg(0)), _truth(cx, cx.arg(1)))


def _bitwise_not(cx: Lowering) -> Any:
    return cx.op("invert", cx.value(cx.arg(0)))


# ---- matmul ------------------------------------------------------------------------------------------


def _matmul(cx: Lowering) -> Any:
    return cx.op("matmul", *cx.values(cx.arg(0), cx.arg(1), dtype=cx.out_dtype))


def _addmm(cx: Lowering) -> Any:
    beta, alpha = cx.node.kwargs.get("beta", 1), cx.node.kwargs.get("alpha", 1)
    dt = cx.out_dtype
    prod = cx.op("matmul", *cx.values(cx.arg(1), cx.arg(2), dtype=dt))
    if alpha != 1:
        prod = cx.op("mul", prod, cx.value(alpha, dt))
    bias = cx.value(cx.arg(0), dt)
    if beta != 1:
        bias = cx.op("mul", bias, cx.value(beta, dt))
    return cx.op("add", prod, bias)


# ---- layout --------------------------------------------------------------------------------------------


def _transpose(cx: Lowering) -> Any:
    x = cx.arg(0)
    axes = list(range(cx.rank(x)))
    a, b = cx.axis(cx.arg(1), x), cx.axis(cx.arg(2), x)
    axes[a], axes[b] = axes[b], axes[a]
    return cx.op("transpose", cx.value(x), axes=tuple(axes))


def _permute(cx: Lowering) -> Any:
    rank = cx.rank(cx.arg(0))
    return cx.op("transpose", cx.value(cx.arg(0)), axes=tuple(d % rank for d in cx.arg(1)))


def _t(cx: Lowering) -> Any:
    return cx.op("transpose", cx.value(cx.arg(0)))


def _view(cx: Lowering) -> Any:
    x = cx.value(cx.arg(0))
    return x if tuple(x.type.shape) == cx.shape() else cx.op("reshape", x, shape=cx.shape())


def _expand(cx: Lowering) -> Any:
    x = cx.value(cx.arg(0))
    return x if tuple(x.type.shape) == cx.shape() else cx.op("broadcast_to", x, shape=cx.shape())


def _unsqueeze(cx: Lowering) -> Any:
    return cx.op("expand_dims", cx.value(cx.arg(0)), axis=cx.axis(cx.arg(1)))


def _squeeze(cx: Lowering) -> Any:
    x = cx.value(cx.arg(0))
    return x if tuple(x.type.shape) == cx.shape() else cx.op("reshape", x, shape=cx.shape())


def _flip(cx: Lowering) -> Any:
    x = cx.arg(0)
    return cx.op("flip", cx.value(x), axis=tuple(cx.axis(d, x) for d in cx.arg(1)))


def _repeat(cx: Lowering) -> Any:
    """torch's repeat (the whole tensor tiled; numpy's tile, not its repeat)."""
    return cx.op("tile", cx.value(cx.arg(0)), reps=tuple(int(r) for r in cx.arg(1)))


def _identity(cx: Lowering) -> Any:
    return cx.value(cx.arg(0))


def _to_copy(cx: Lowering) -> Any:
    return cx.value(cx.arg(0), cx.out_dtype)


def _slice_of(cx: Lowering, x: Any, dim: int, start: int, stop: int, step: int = 1) -> Any:
    shape = cx.shape(x)
    starts = tuple(start if i == dim else 0 for i in range(len(shape)))
    stops = tuple(stop if i == dim else d for i, d in enumerate(shape))
    steps = tuple(step if i == dim else 1 for i in range(len(shape)))
    return cx.op("slice", cx.value(x), starts=starts, stops=stops, steps=steps)


def _slice(cx: Lowering) -> Any:
    x = cx.arg(0)
    dim = cx.axis(cx.arg(1, "dim", 0), x)
    start, end, step = cx.arg(2, "start", None), cx.arg(3, "end", None), cx.arg(4, "step", 1)
    size = cx.shape(x)[dim]
    start, end, step = slice(start, end, step).indices(size)
    if (start, end, step) == (0, size, 1):
        return cx.value(x)
    return _slice_of(cx, x, dim, start, end, step)


def _select(cx: Lowering) -> Any:
    x = cx.arg(0)
    dim = cx.axis(cx.arg(1), x)
    index = cx.arg(2) % cx.shape(x)[dim]
    part = _slice_of(cx, x, dim, index, index + 1)
    return cx.op("reshape", part, shape=cx.shape())


def _split(cx: Lowering) -> Any:
    x = cx.arg(0)
    size, dim = cx.arg(1), cx.axis(cx.arg(2, "dim", 0), x)
    total = cx.shape(x)[dim]
    sizes = ([size] * (total // size) + ([total % size] if total % size else [])) if isinstance(size, int) else size
    out, start = [], 0
    for s in sizes:
        out.append(_slice_of(cx, x, dim, start, start + s))
        start += s
    return out


def _cat(cx: Lowering) -> Any:
    pieces = [cx.value(a, cx.out_dtype) for a in cx.arg(0) if not (isinstance(a, torch.fx.Node) and 0 in cx.shape(a))]
    dim = cx.axis(cx.arg(1, "dim", 0))
    return cx.op("concat", *pieces, axis=dim, kind="concatenate") if len(pieces) > 1 else pieces[0]


# ---- reductions and rows --------------------------------------------------------------------------------


def _reduce(op: str) -> Entry:
    def entry(cx: Lowering) -> Any:
        x = cx.arg(0)
        v = cx.value(x, cx.out_dtype) if op in ("sum", "mean") else cx.value(x)
        return cx.op(op, v, axis=reduced_axes(cx, x, cx.arg(1, "dim")), keepdims=bool(cx.arg(2, "keepdim", False)))
    return entry


def _along(op: str) -> Entry:
    """cumsum / cumprod(x, dim, dtype=None), prod.dim_int(x, dim, keepdim=False, dtype=None): the registry op
    on the input in the result's dtype."""
    def entry(cx: Lowering) -> Any:
        x = cx.arg(0)
        keep = {} if op != "prod" else {"keepdims": bool(cx.arg(2, "keepdim", False))}
        return cx.op(op, cx.value(x, cx.out_dtype), axis=cx.axis(cx.arg(1), x), **keep)
    return entry


def _prod_all(cx: Lowering) -> Any:
    return cx.op("prod", cx.value(cx.arg(0), cx.out_dtype), axis=None)


def _softmax(op: str) -> Entry:
    return lambda cx: cx.op(op, cx.value(cx.arg(0), cx.out_dtype), axis=cx.axis(cx.arg(1), cx.arg(0)))


def _any(cx: Lowering) -> Any:
    """any over bool (or numbers: non-zero): the max of the truth values as float32, compared with 0."""
    x = cx.arg(0)
    truth = cx.cast(_truth(cx, x), "float32")
    m = cx.op("max", truth, axis=reduced_axes(cx, x, cx.arg(1, "dim")), keepdims=bool(cx.arg(2, "keepdim", False)))
    return cx.op("gt", m, cx.value(0.0, "float32"))


# ---- creation --------------------------------------------------------------------------------------------


def _full(cx: Lowering) -> Any:
    value = cx.arg(1)
    if isinstance(value, torch.fx.Node):
        raise Unsupported("a fill value computed by the graph")
    return cx.op("full", shape=cx.shape(), fill_value=value, dtype=cx.out_dtype)


def _scalar_tensor(cx: Lowering) -> Any:
    return cx.op("full", shape=(), fill_value=cx.arg(0), dtype=cx.out_dtype)


def _arange(cx: Lowering) -> Any:
    """A compile-time constant (torch's own values, in its dtype)."""
    args = [a for a in cx.node.args]
    if any(isinstance(a, torch.fx.Node) for a in args):
        raise Unsupported("bounds computed by the graph")
    dt = cx.out_dtype
    values = np.arange(*args).astype(np.dtype("bool" if dt == "bool" else dt))
    return cx.graph.const(values, dt, cx.loc)


TABLE: dict[Any, Entry] = {
    aten.add.Tensor: _add, aten.add.Scalar: _add, aten.sub.Tensor: _sub, aten.sub.Scalar: _sub,
    aten.rsub.Scalar: _rsub, aten.rsub.Tensor: _rsub,
    aten.mul.Tensor: _arith("mul"), aten.mul.Scalar: _arith("mul"),
    aten.div.Tensor: _arith("div"), aten.div.Scalar: _arith("div"),
    aten.pow.Tensor_Scalar: _pow, aten.pow.Tensor_Tensor: _pow, aten.pow.Scalar: _pow,
    aten.neg.default: _unary("neg"),
    aten.exp.default: _unary("exp"), aten.log.default: _unary("log"), aten.sqrt.default: _unary("sqrt"),
    aten.rsqrt.default: _unary("rsqrt"), aten.reciprocal.default: _unary("reciprocal"),
    aten.sin.default: _unary("sin"), aten.cos.default: _unary("cos"), aten.tanh.default: _unary("tanh"),
    aten.sigmoid.default: _unary("sigmoid"), aten.relu.default: _unary("relu"), aten.abs.default: _unary("abs"),
    aten.erf.default: _unary("erf"), aten.floor.default: _unary("floor"), aten.ceil.default: _unary("ceil"),
    aten.sign.default: _unary("sign"), aten.silu.default: _unary("silu"), aten.gelu.default: _gelu,
    aten.log1p.default: _unary("log1p"), aten.expm1.default: _unary("expm1"),
    aten.maximum.default: _bound("maximum"), aten.minimum.default: _bound("minimum"),
    aten.where.self: _where,
    aten.clamp.default: _clamp("min", "max"),
    aten.clamp_min.default: _bound("maximum"), aten.clamp_max.default: _bound("minimum"),
    aten.hardtanh.default: _clamp("min_val", "max_val", -1.0, 1.0),
    aten.leaky_relu.default: _leaky_relu, aten.elu.default: _elu,
    aten.clamp.Tensor: _clamp("min", "max"),
    aten.full.default: _full, aten.full_like.default: _full, aten.scalar_tensor.default: _scalar_tensor,
    aten.arange.start_step: _arange, aten.arange.start: _arange, aten.arange.default: _arange,
    aten.logical_not.default: _not, aten.logical_and.default: _logical("bitwise_and"),
    aten.logical_or.default: _logical("bitwise_or"),
    aten.any.dim: _any, aten.any.dims: _any, aten.any.default: _any,
    aten.bitwise_and.Tensor: _arith("bitwise_and"), aten.bitwise_or.Tensor: _arith("bitwise_or"),
    aten.bitwise_xor.Tensor: _arith("bitwise_xor"), aten.bitwise_and.Scalar: _arith("bitwise_and"),
    aten.bitwise_or.Scalar: _arith("bitwise_or"), aten.bitwise_xor.Scalar: _arith("bitwise_xor"),
    aten.bitwise_not.default: _bitwise_not,
    aten.div.Tensor_mode: _div_mode, aten.div.Scalar_mode: _div_mode,
    aten.floor_divide.default: _arith("floordiv"), aten.remainder.Tensor: _arith("mod"),
    aten.remainder.Scalar: _arith("mod"),
    aten.lt.Tensor: _compare("lt"), aten.lt.Scalar: _compare("lt"), aten.le.Tensor: _compare("le"),
    aten.le.Scalar: _compare("le"), aten.gt.Tensor: _compare("gt"), aten.gt.Scalar: _compare("gt"),
    aten.ge.Tensor: _compare("ge"), aten.ge.Scalar: _compare("ge"), aten.eq.Tensor: _compare("eq"),
    aten.eq.Scalar: _compare("eq"), aten.ne.Tensor: _compare("ne"), aten.ne.Scalar: _compare("ne"),
    aten.mm.default: _matmul, aten.bmm.default: _matmul, aten.matmul.default: _matmul,
    aten.addmm.default: _addmm,
    aten.t.default: _t, aten.transpose.int: _transpose, aten.permute.default: _permute,
    aten.view.default: _view, aten._unsafe_view.default: _view, aten.reshape.default: _view,
    aten.expand.default: _expand, aten.unsqueeze.default: _unsqueeze,
    aten.squeeze.dim: _squeeze, aten.squeeze.dims: _squeeze, aten.squeeze.default: _squeeze,
    aten.clone.default: _identity, aten.alias.default: _identity, aten.detach.default: _identity,
    aten.lift_fresh_copy.default: _identity, aten.flip.default: _flip, aten.repeat.default: _repeat,
    aten._to_copy.default: _to_copy,
    aten.sum.dim_IntList: _reduce("sum"), aten.sum.default: _reduce("sum"), aten.mean.dim: _reduce("mean"),
    aten.mean.default: _reduce("mean"), aten.amax.default: _reduce("max"), aten.amin.default: _reduce("min"),
    aten.cumsum.default: _along("cumsum"), aten.cumprod.default: _along("cumprod"),
    aten.prod.dim_int: _along("prod"), aten.prod.default: _prod_all,
    aten._softmax.default: _softmax("softmax"), aten._log_softmax.default: _softmax("log_softmax"),
    aten.split.Tensor: _split, aten.split_with_sizes.default: _split,
    aten.slice.Tensor: _slice, aten.select.int: _select, aten.cat.default: _cat,
    **ATTENTION, **CONV, **INDEXING, **NORMS, **SORTING,
}

#: arithmetic whose int64 result could leave int32's range: lowered only when it counts bools (_int64_in_range)
GROWING = (aten.add.Tensor, aten.add.Scalar, aten.sub.Tensor, aten.sub.Scalar, aten.rsub.Scalar, aten.rsub.Tensor,
           aten.mul.Tensor, aten.mul.Scalar, aten.pow.Tensor_Scalar, aten.pow.Tensor_Tensor, aten.pow.Scalar,
           aten.sum.dim_IntList, aten.sum.default, aten.cumsum.default, aten.cumprod.default, aten.prod.dim_int,
           aten.prod.default)
TABLE.update({op: _int64_in_range(TABLE[op]) for op in GROWING})

#: ops that only rename memory: a piece made of nothing else stays in PyTorch (a kernel would only copy)
FREE = {aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.t.default, aten.transpose.int,
        aten.permute.default, aten.expand.default, aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims,
        aten.squeeze.default, aten.clone.default, aten.alias.default, aten.detach.default,
        aten.lift_fresh_copy.default}
