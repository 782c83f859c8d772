"""The lowering table of the FX frontend: each supported aten op -> the pyasc expression it becomes.

An entry is a function `(e, node) -> str` where `e(arg)` renders one FX argument (a node as its
variable, numbers and lists as literals) and `node` is the FX node (its `meta["val"]` gives shapes).
An op with several results maps to a function returning one expression per result
(`operator.getitem` picks one). Ops missing here run in eager PyTorch (a reported graph break).
"""
from __future__ import annotations

import math
from typing import Any, Callable

import torch

from .aten_conv import TABLE as CONV_TABLE, Unsupported as ConvUnsupported

aten = torch.ops.aten

Emit = Callable[[Callable[[Any], str], torch.fx.Node], Any]


def _rank(node: Any) -> int:
    return node.meta["val"].dim()


def _dim(node: torch.fx.Node, d: int, of: Any = None) -> int:
    rank = _rank(of if of is not None else node)
    return d + rank if d < 0 else d


def _arg(node: torch.fx.Node, i: int, name: str, default: Any) -> Any:
    if len(node.args) > i:
        return node.args[i]
    return node.kwargs.get(name, default)


def _binary(sym: str) -> Emit:
    return lambda e, n: f"({e(n.args[0])} {sym} {e(n.args[1])})"


def _unary(fn: str) -> Emit:
    return lambda e, n: f"pyasc.{fn}({e(n.args[0])})"


def _add(e, n):
    alpha = n.kwargs.get("alpha", 1)
    rhs = e(n.args[1]) if alpha == 1 else f"({e(n.args[1])} * {alpha!r})"
    return f"({e(n.args[0])} + {rhs})"


def _sub(e, n):
    alpha = n.kwargs.get("alpha", 1)
    rhs = e(n.args[1]) if alpha == 1 else f"({e(n.args[1])} * {alpha!r})"
    return f"({e(n.args[0])} - {rhs})"


def _rsub(e, n):
    alpha = n.kwargs.get("alpha", 1)
    lhs = e(n.args[0]) if alpha == 1 else f"({e(n.args[0])} * {alpha!r})"
    return f"({e(n.args[1])} - {lhs})"


def _gelu(e, n):
    x = e(n.args[0])
    if n.kwargs.get("approximate", "none") == "tanh":
        return f"pyasc.gelu({x})"
    return f"(({x} * 0.5) * (pyasc.erf({x} * {1 / math.sqrt(2)!r}) + 1.0))"  # exact GELU, as torch's default


def _addmm(e, n):
    beta, alpha = n.kwargs.get("beta", 1), n.kwargs.get("alpha", 1)
    prod = f"({e(n.args[1])} @ {e(n.args[2])})"
    prod = prod if alpha == 1 else f"({prod} * {alpha!r})"
    bias = e(n.args[0]) if beta == 1 else f"({e(n.args[0])} * {beta!r})"
    return f"({prod} + {bias})"


def _transpose(e, n):
    x = n.args[0]
    rank = _rank(x)
    a, b = _dim(n, n.args[1], x), _dim(n, n.args[2], x)
    axes = list(range(rank))
    axes[a], axes[b] = axes[b], axes[a]
    return f"pyasc.transpose({e(x)}, {tuple(axes)!r})"


def _permute(e, n):
    rank = _rank(n.args[0])
    return f"pyasc.transpose({e(n.args[0])}, {tuple(d % rank for d in n.args[1])!r})"


def _shape_of(n) -> tuple[int, ...]:
    return tuple(int(d) for d in n.meta["val"].shape)


def _view(e, n):
    if _shape_of(n) == _shape_of(n.args[0]):
        return e(n.args[0])  # aten's bmm lowering views tensors to the shape they have: nothing to do
    return f"pyasc.reshape({e(n.args[0])}, {_shape_of(n)!r})"


def _expand(e, n):
    if _shape_of(n) == _shape_of(n.args[0]):
        return e(n.args[0])
    return f"pyasc.broadcast_to({e(n.args[0])}, {_shape_of(n)!r})"


def _reduce(fn: str) -> Emit:
    def emit(e, n):
        x = n.args[0]
        dims = _arg(n, 1, "dim", None)
        keep = bool(_arg(n, 2, "keepdim", False))
        if dims is None or dims == []:
            axis = "None"
        else:
            dims = [dims] if isinstance(dims, int) else list(dims)
            axis = repr(tuple(_dim(n, d, x) for d in dims))
        return f"pyasc.{fn}({e(x)}, axis={axis}, keepdims={keep!r})"
    return emit


def _softmax(fn: str) -> Emit:
    return lambda e, n: f"pyasc.{fn}({e(n.args[0])}, axis={_dim(n, n.args[1], n.args[0])})"


def _layer_norm(e, n):
    x, shape = n.args[0], n.args[1]
    w = _arg(n, 2, "weight", None)
    b = _arg(n, 3, "bias", None)
    eps = _arg(n, 4, "eps", 1e-5)
    if len(shape) != 1:
        raise Unsupported("layer norm over more than the last axis")
    xs = e(x)
    mean = f"pyasc.mean({xs}, axis=-1, keepdims=True)"
    var = f"pyasc.mean(({xs} - {mean}) * ({xs} - {mean}), axis=-1, keepdims=True)"
    return [f"pyasc.layer_norm({xs}, {e(w)}, {e(b)}, eps={eps!r})", mean, f"pyasc.rsqrt({var} + {eps!r})"]


def _split(e, n):
    x = n.args[0]
    size, dim = n.args[1], _dim(n, _arg(n, 2, "dim", 0), x)
    total = _shape_of(x)[dim]
    sizes = [size] * (total // size) + ([total % size] if total % size else []) if isinstance(size, int) else size
    out, start = [], 0
    for s in sizes:
        out.append(f"{e(x)}[{':, ' * dim}{start}:{start + s}]")
        start += s
    return out


def _slice(e, n):
    x = n.args[0]
    dim = _dim(n, _arg(n, 1, "dim", 0), x)
    start, end, step = _arg(n, 2, "start", None), _arg(n, 3, "end", None), _arg(n, 4, "step", 1)
    size = _shape_of(x)[dim]
    start = 0 if start is None else max(min(start + size if start < 0 else start, size), 0)
    end = size if end is None else max(min(end + size if end < 0 else end, size), 0)
    return f"{e(x)}[{':, ' * dim}{start}:{end}:{step}]"


def _select(e, n):
    x = n.args[0]
    dim = _dim(n, n.args[1], x)
    return f"{e(x)}[{':, ' * dim}{n.args[2]}]"


def _unsqueeze(e, n):
    return f"pyasc.expand_dims({e(n.args[0])}, {_dim(n, n.args[1])})"


def _squeeze(e, n):
    if len(n.args) < 2:
        return f"pyasc.squeeze({e(n.args[0])})"
    dims = n.args[1] if isinstance(n.args[1], (list, tuple)) else [n.args[1]]
    shape = _shape_of(n.args[0])
    dims = tuple(d % len(shape) for d in dims if shape[d % len(shape)] == 1)
    return f"pyasc.squeeze({e(n.args[0])}, {dims!r})" if dims else e(n.args[0])


def _to_copy(e, n):
    dtype = n.kwargs.get("dtype")
    if dtype is None:
        return e(n.args[0])
    return f"pyasc.cast({e(n.args[0])}, pyasc.{_PYASC_DTYPE[dtype]})"


def _identity(e, n):
    return e(n.args[0])


def _where(e, n):
    return f"pyasc.where({e(n.args[0])}, {e(n.args[1])}, {e(n.args[2])})"


def _pow(e, n):
    return f"({e(n.args[0])} ** {e(n.args[1])})"


def _clamp(lo_name: str, hi_name: str, lo_i: int, hi_i: int, lo_default: Any = None, hi_default: Any = None) -> Emit:
    def emit(e, n):
        out = e(n.args[0])
        lo, hi = _arg(n, lo_i, lo_name, lo_default), _arg(n, hi_i, hi_name, hi_default)
        if lo is not None:
            out = f"pyasc.maximum({out}, {e(lo)})"
        if hi is not None:
            out = f"pyasc.minimum({out}, {e(hi)})"
        return out
    return emit


def _var(e, n):
    x = n.args[0]
    dims = _arg(n, 1, "dim", None)
    dims = list(range(_rank(x))) if dims is None else ([dims] if isinstance(dims, int) else list(dims))
    axes = tuple(_dim(n, d, x) for d in dims)
    correction = n.kwargs.get("correction", 1)
    correction = 1 if correction is None else correction
    keep = bool(n.kwargs.get("keepdim", False))
    count = 1
    for a in axes:
        count *= _shape_of(x)[a]
    xs = e(x)
    centred = f"({xs} - pyasc.mean({xs}, axis={axes!r}, keepdims=True))"
    return f"(pyasc.sum({centred} * {centred}, axis={axes!r}, keepdims={keep!r}) / {float(count - correction)!r})"


def _leaky_relu(e, n):
    x, slope = e(n.args[0]), _arg(n, 1, "negative_slope", 0.01)
    return f"pyasc.where({x} > 0, {x}, {x} * {slope!r})"


def _full(e, n):
    dtype = _PYASC_DTYPE[n.meta["val"].dtype]
    return f"pyasc.full({_shape_of(n)!r}, {e(n.args[1])}, pyasc.{dtype})"


def _full_like(e, n):
    dtype = _PYASC_DTYPE[n.meta["val"].dtype]
    return f"pyasc.full({_shape_of(n)!r}, {e(n.args[1])}, pyasc.{dtype})"


def _any(e, n):
    """any over bool (or numbers: non-zero): the max of the values as float32, compared with 0."""
    x = n.args[0]
    dims = _arg(n, 1, "dim", None)
    keep = bool(_arg(n, 2, "keepdim", False))
    axis = "None" if dims is None else repr(tuple(_dim(n, d, x) for d in ([dims] if isinstance(dims, int) else dims)))
    return f"(pyasc.max(pyasc.cast({e(x)} != 0, pyasc.float32), axis={axis}, keepdims={keep!r}) > 0.0)"


def _div_mode(e, n):
    mode = n.kwargs.get("rounding_mode")
    if mode == "floor":
        return f"({e(n.args[0])} // {e(n.args[1])})"
    if mode is None:
        return f"({e(n.args[0])} / {e(n.args[1])})"
    raise Unsupported(f"rounding_mode={mode!r}")  # "trunc": no truncating division on the chip


def _scalar_tensor(e, n):
    return f"pyasc.full((), {e(n.args[0])}, pyasc.{_PYASC_DTYPE[n.meta['val'].dtype]})"


Unsupported = ConvUnsupported  # a supported op with arguments the table cannot express (runs in eager PyTorch)


_PYASC_DTYPE = {torch.float16: "float16", torch.float32: "float32", torch.int8: "int8", torch.int16: "int16",
                torch.int32: "int32", torch.uint8: "uint8", torch.bool: "bool_"}

TABLE: dict[Any, Emit] = {
    aten.add.Tensor: _add, aten.add.Scalar: _add, aten.sub.Tensor: _sub, aten.sub.Scalar: _sub,
    aten.rsub.Scalar: _rsub,
    aten.mul.Tensor: _binary("*"), aten.mul.Scalar: _binary("*"),
    aten.div.Tensor: _binary("/"), aten.div.Scalar: _binary("/"),
    aten.pow.Tensor_Scalar: _pow, aten.pow.Tensor_Tensor: _pow,
    aten.neg.default: lambda e, n: f"(-{e(n.args[0])})",
    aten.exp.default: _unary("exp"), aten.log.default: _unary("log"), aten.sqrt.default: _unary("sqrt"),
    aten.rsqrt.default: _unary("rsqrt"), aten.reciprocal.default: _unary("reciprocal"),
    aten.sin.default: _unary("sin"), aten.cos.default: _unary("cos"), aten.tanh.default: _unary("tanh"),
    aten.sigmoid.default: _unary("sigmoid"), aten.relu.default: _unary("relu"), aten.abs.default: _unary("abs"),
    aten.erf.default: _unary("erf"), aten.floor.default: _unary("floor"), aten.ceil.default: _unary("ceil"),
    aten.sign.default: _unary("sign"), aten.silu.default: _unary("silu"), aten.gelu.default: _gelu,
    aten.maximum.default: lambda e, n: f"pyasc.maximum({e(n.args[0])}, {e(n.args[1])})",
    aten.minimum.default: lambda e, n: f"pyasc.minimum({e(n.args[0])}, {e(n.args[1])})",
    aten.where.self: _where,
    aten.clamp.default: _clamp("min", "max", 1, 2),
    aten.clamp_min.default: lambda e, n: f"pyasc.maximum({e(n.args[0])}, {e(n.args[1])})",
    aten.clamp_max.default: lambda e, n: f"pyasc.minimum({e(n.args[0])}, {e(n.args[1])})",
    aten.hardtanh.default: _clamp("min_val", "max_val", 1, 2, -1.0, 1.0),
    aten.leaky_relu.default: _leaky_relu, aten.var.correction: _var,
    # no log1p/expm1 on the chip: the plain forms (less accurate than torch's for |x| far below 1e-4)
    aten.log1p.default: lambda e, n: f"pyasc.log({e(n.args[0])} + 1.0)",
    aten.expm1.default: lambda e, n: f"(pyasc.exp({e(n.args[0])}) - 1.0)",
    aten.full.default: _full, aten.full_like.default: _full_like, aten.scalar_tensor.default: _scalar_tensor,
    aten.logical_not.default: lambda e, n: f"({e(n.args[0])} == 0)",
    aten.logical_and.default: lambda e, n: f"(({e(n.args[0])} != 0) & ({e(n.args[1])} != 0))",
    aten.logical_or.default: lambda e, n: f"(({e(n.args[0])} != 0) | ({e(n.args[1])} != 0))",
    aten.any.dim: _any, aten.any.dims: _any, aten.any.default: _any,
    aten.bitwise_and.Tensor: _binary("&"), aten.bitwise_or.Tensor: _binary("|"),
    aten.bitwise_xor.Tensor: _binary("^"), aten.bitwise_and.Scalar: _binary("&"),
    aten.bitwise_or.Scalar: _binary("|"), aten.bitwise_xor.Scalar: _binary("^"), aten.bitwise_not.default: lambda e, n: f"(~{e(n.args[0])})",
    aten.div.Tensor_mode: _div_mode, aten.div.Scalar_mode: _div_mode,
    aten.floor_divide.default: _binary("//"), aten.remainder.Tensor: _binary("%"), aten.remainder.Scalar: _binary("%"),
    aten.pow.Scalar: _pow,
    aten.lt.Tensor: _binary("<"), aten.lt.Scalar: _binary("<"), aten.le.Tensor: _binary("<="),
    aten.le.Scalar: _binary("<="), aten.gt.Tensor: _binary(">"), aten.gt.Scalar: _binary(">"),
    aten.ge.Tensor: _binary(">="), aten.ge.Scalar: _binary(">="), aten.eq.Tensor: _binary("=="),
    aten.eq.Scalar: _binary("=="), aten.ne.Tensor: _binary("!="), aten.ne.Scalar: _binary("!="),
    aten.mm.default: _binary("@"), aten.bmm.default: _binary("@"), aten.matmul.default: _binary("@"),
    aten.addmm.default: _addmm,
    aten.t.default: lambda e, n: f"pyasc.transpose({e(n.args[0])})",
    aten.transpose.int: _transpose, aten.permute.default: _permute,
    aten.view.default: _view, aten._unsafe_view.default: _view, aten.reshape.default: _view,
    aten.expand.default: _expand, aten.unsqueeze.default: _unsqueeze,
    aten.squeeze.dim: _squeeze, aten.squeeze.dims: _squeeze, aten.squeeze.default: _squeeze,
    aten.clone.default: _identity, aten.alias.default: _identity, aten.detach.default: _identity,
    aten._to_copy.default: _to_copy,
    aten.sum.dim_IntList: _reduce("sum"), aten.sum.default: _reduce("sum"), aten.mean.dim: _reduce("mean"),
    aten.mean.default: _reduce("mean"), aten.amax.default: _reduce("max"), aten.amin.default: _reduce("min"),
    aten._softmax.default: _softmax("softmax"), aten._log_softmax.default: _softmax("log_softmax"),
    aten.native_layer_norm.default: _layer_norm,
    aten.split.Tensor: _split, aten.split_with_sizes.default: _split,
    aten.slice.Tensor: _slice, aten.select.int: _select,
    **CONV_TABLE,
}
