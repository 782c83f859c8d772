"""Convolution, pooling and inference batch norm, with torch.nn.functional's NCHW / OIHW contract.

  conv2d(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1)
      x (N, C, H, W), w (O, C/groups, kh, kw), bias (O,) -> (N, O, Ho, Wo). stride, dilation: an int or a
      pair; padding: an int, a pair, "valid" or "same" (stride 1 only; an odd total pads one more at the
      bottom / right, like torch). Floats only (float16, float32; numpy promotion of the operands).
      Numerics: float16 is computed in float32 and rounded once at the end (the cube accumulates in float32).
  max_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False)
  avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True)
      torch's rules: stride defaults to kernel_size, padding at most half the kernel, padded cells are -inf
      (max) or count towards the divisor (avg, count_include_pad); with ceil_mode the last window may hang
      over the bottom / right edge but must start inside the input or its left / top padding.
  batch_norm(x, mean, var, weight=None, bias=None, eps=1e-5)
      inference batch norm over axis 1 (running statistics): (x - mean) / sqrt(var + eps) * weight + bias.
      A composite; GE folds it into a preceding conv (ge/conv.py).
  fused_conv2d (internal, made by GE): conv2d + ReLU + cast, what FixPipe applies on the way out of L0C, and
      an optional folded inference batch norm (`has_bn`, `bn_eps`; inputs mean, var, gamma, beta): with
      s = gamma / sqrt(var + eps) (float32) the weights are w * s[o] rounded to w's dtype and the bias
      (bias - mean) * s + beta (float32), exactly what the weight conversion before the cube computes;
      and an optional residual added before the ReLU (`has_residual`: a tensor of the result's shape, and
      the 16 x 16 identity in the cube's dtype the cube adds it with: L0C += residual @ I).
      Inputs x, w[, residual, eye][, bias][, mean, var, gamma, beta] (`conv_operands` names them);
      attributes: conv2d's, has_bias, has_bn, bn_eps, has_residual, activation (None | "relu"), out_dtype, and
      out_format (ND | NC1HWC0; default: x's): the result's storage format when it differs from x's (GE's
      `conv_edge_fold`: the launch converts an ND map on its way in, or its result on its way out); a residual
      is stored like the result.

`ConvGeometry` / `PoolGeometry` are the one place the output size, the four paddings and the windows are
computed from the attributes; inference, the eager functions, GE and codegen all read them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from .. import dtypes
from ..errors import InferError
from ..tensor_type import TensorType, is_static_dim
from .builder import Builder, EagerBuilder, GraphBuilder, TypeBuilder
from .common import FLOATS, attr_bool, attr_dtype, fmt_shape, named
from .registry import Category, OpDef, register

#: activations FixPipe applies on the way out of L0C
CONV_ACTIVATIONS = (None, "relu")
#: the storage format the cube reads and writes feature maps in
BLOCKED = "NC1HWC0"
#: fused_conv2d's folded batch norm: its per-channel inputs, after x, w and the bias
BN_PARAMS = ("mean", "var", "gamma", "beta")


# ---- attribute normalisation ------------------------------------------------------------------


def _pair(value: Any, op: str, what: str, low: int) -> tuple[int, int]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        value = (int(value), int(value))
    if (not isinstance(value, (tuple, list)) or len(value) != 2
            or any(isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) for v in value)):
        raise InferError(f"{op}: {what} must be an int or a pair of ints, got {value!r}")
    a, b = int(value[0]), int(value[1])
    if a < low or b < low:
        raise InferError(f"{op}: {what} must be >= {low}, got {(a, b)}")
    return a, b


def _static_hw(x: TensorType, op: str) -> tuple[int, int, int, int]:
    if x.ndim != 4:
        raise InferError(f"{op}: expects a 4-D NCHW input (N, C, H, W), got shape {fmt_shape(x.shape)}")
    if not all(is_static_dim(d) for d in x.shape):
        raise InferError(f"{op}: needs static dims, got shape {fmt_shape(x.shape)} (compile with dynamic=False)")
    n, c, h, w = (int(d) for d in x.shape)
    return n, c, h, w


@dataclass(frozen=True)
class ConvGeometry:
    """A conv2d's sizes: the input (N, C, H, W), the kernel (O, C/groups, kh, kw), stride, dilation, the four
    paddings (top, bottom, left, right) and the output (Ho, Wo)."""

    n: int
    c: int
    h: int
    w: int
    o: int
    kh: int
    kw: int
    stride: tuple[int, int]
    dilation: tuple[int, int]
    pad: tuple[int, int, int, int]
    groups: int

    @property
    def ho(self) -> int:
        pt, pb = self.pad[0], self.pad[1]
        return (self.h + pt + pb - self.dilation[0] * (self.kh - 1) - 1) // self.stride[0] + 1

    @property
    def wo(self) -> int:
        pl, pr = self.pad[2], self.pad[3]
        return (self.w + pl + pr - self.dilation[1] * (self.kw - 1) - 1) // self.stride[1] + 1

    @property
    def out_shape(self) -> tuple[int, int, int, int]:
        return (self.n, self.o, self.ho, self.wo)

    @property
    def macs(self) -> int:
        """Multiply-adds of the convolution (what the cube must do at the least)."""
        return self.n * self.o * self.ho * self.wo * (self.c // self.groups) * self.kh * self.kw


def conv_geometry(x: TensorType, w: TensorType, attrs: Mapping[str, Any], op: str = "conv2d") -> ConvGeometry:
    """The geometry of conv2d(x, w) under `attrs`, or InferError saying what does not fit (torch's checks)."""
    n, c, h, wd = _static_hw(x, op)
    if w.ndim != 4:
        raise InferError(f"{op}: expects a 4-D OIHW weight (O, C/groups, kh, kw), got shape {fmt_shape(w.shape)}")
    if not all(is_static_dim(d) for d in w.shape):
        raise InferError(f"{op}: needs a static weight shape, got {fmt_shape(w.shape)}")
    o, cg, kh, kw = (int(d) for d in w.shape)
    groups = attrs.get("groups", 1)
    if isinstance(groups, (bool, np.bool_)) or not isinstance(groups, (int, np.integer)) or groups < 1:
        raise InferError(f"{op}: groups must be a positive int, got {groups!r}")
    groups = int(groups)
    if o % groups:
        raise InferError(f"{op}: groups={groups} must divide the {o} output channels of weight {fmt_shape(w.shape)}")
    if cg * groups != c:
        raise InferError(f"{op}: weight {fmt_shape(w.shape)} with groups={groups} expects {cg * groups} input "
                         f"channels, but x {fmt_shape(x.shape)} has {c}")
    if min(o, kh, kw) < 1:
        raise InferError(f"{op}: weight {fmt_shape(w.shape)} has an empty dimension")
    stride = _pair(attrs.get("stride", 1), op, "stride", 1)
    dilation = _pair(attrs.get("dilation", 1), op, "dilation", 1)
    padding = attrs.get("padding", 0)
    if isinstance(padding, str):
        if padding == "valid":
            pad = (0, 0, 0, 0)
        elif padding == "same":
            if stride != (1, 1):
                raise InferError(f"{op}: padding='same' needs stride 1, got stride {stride}")
            th, tw = dilation[0] * (kh - 1), dilation[1] * (kw - 1)
            pad = (th // 2, th - th // 2, tw // 2, tw - tw // 2)
        else:
            raise InferError(f"{op}: padding must be an int, a pair, 'valid' or 'same', got {padding!r}")
    else:
        ph, pw = _pair(padding, op, "padding", 0)
        pad = (ph, ph, pw, pw)
    g = ConvGeometry(n, c, h, wd, o, kh, kw, stride, dilation, pad, groups)
    eh, ew = dilation[0] * (kh - 1) + 1, dilation[1] * (kw - 1) + 1
    if g.ho < 1 or g.wo < 1:
        raise InferError(f"{op}: the {eh}x{ew} kernel window (kernel {kh}x{kw}, dilation {dilation}) is larger "
                         f"than the padded {h + pad[0] + pad[1]}x{wd + pad[2] + pad[3]} input of x {fmt_shape(x.shape)}")
    return g


@dataclass(frozen=True)
class PoolGeometry:
    """A pool's sizes: input (N, C, H, W), window, stride, padding (symmetric, torch's) and output (Ho, Wo)."""

    n: int
    c: int
    h: int
    w: int
    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int]
    ceil_mode: bool

    def _out(self, size: int, k: int, s: int, p: int) -> int:
        span = size + 2 * p - k
        out = (-(-span // s) if self.ceil_mode else span // s) + 1
        if self.ceil_mode and (out - 1) * s >= size + p:
            out -= 1  # the last window would start in the bottom / right padding
        return out

    @property
    def ho(self) -> int:
        return self._out(self.h, self.kernel[0], self.stride[0], self.padding[0])

    @property
    def wo(self) -> int:
        return self._out(self.w, self.kernel[1], self.stride[1], self.padding[1])

    @property
    def out_shape(self) -> tuple[int, int, int, int]:
        return (self.n, self.c, self.ho, self.wo)

    def window(self, axis: int, i: int) -> tuple[int, int]:
        """[start, end) of output index i's window along H (axis 0) or W (axis 1), in padded coordinates
        clipped to the padded input (torch's avg divisor with count_include_pad counts exactly these)."""
        size = (self.h, self.w)[axis]
        start = i * self.stride[axis] - self.padding[axis]
        return start, min(start + self.kernel[axis], size + self.padding[axis])


def pool_geometry(x: TensorType, attrs: Mapping[str, Any], op: str) -> PoolGeometry:
    n, c, h, w = _static_hw(x, op)
    kernel = _pair(attrs.get("kernel_size"), op, "kernel_size", 1)
    stride_attr = attrs.get("stride")
    stride = kernel if stride_attr is None or stride_attr == () else _pair(stride_attr, op, "stride", 1)
    padding = _pair(attrs.get("padding", 0), op, "padding", 0)
    ceil_mode = attr_bool(attrs, "ceil_mode", False, op)
    if padding[0] > kernel[0] // 2 or padding[1] > kernel[1] // 2:
        raise InferError(f"{op}: padding {padding} must be at most half the kernel {kernel}")
    g = PoolGeometry(n, c, h, w, kernel, stride, padding, ceil_mode)
    if g.ho < 1 or g.wo < 1:
        raise InferError(f"{op}: the {kernel[0]}x{kernel[1]} window is larger than the padded "
                         f"{h + 2 * padding[0]}x{w + 2 * padding[1]} input of x {fmt_shape(x.shape)}")
    return g


# ---- conv2d -----------------------------------------------------------------------------------


def _conv_dtype(ts: Sequence[TensorType], op: str) -> str:
    for t, what in zip(ts, ("x", "w", "bias")):
        if t.dtype not in FLOATS:
            raise InferError(f"{op}: {what} has dtype {t.dtype}; convolution takes float16 or float32 tensors")
    return dtypes.promote(*(t.dtype for t in ts))


def operand_names(attrs: Mapping[str, Any]) -> list[str]:
    """The names of a conv's inputs, in order, given its attributes (see the module docstring)."""
    return (["x", "w"] + (["residual", "eye"] if attrs.get("has_residual") else [])
            + (["bias"] if attrs.get("has_bias") else []) + (list(BN_PARAMS) if attrs.get("has_bn") else []))


def conv_operands(values: Sequence[Any], attrs: Mapping[str, Any]) -> dict[str, Any]:
    """A conv's inputs (values or types) by name; the names it does not have are absent."""
    return dict(zip(operand_names(attrs), values))


def _infer_conv(ts: Sequence[TensorType], attrs: Mapping[str, Any], op: str) -> tuple[TensorType, ...]:
    for flag in ("has_bias", "has_bn", "has_residual"):
        attr_bool(attrs, flag, False, op)
    names = operand_names(attrs)
    if len(ts) != len(names):
        raise InferError(f"{op}: takes {', '.join(names)}, got {len(ts)} tensors")
    arg = dict(zip(names, ts))
    x, w = arg["x"], arg["w"]
    g = conv_geometry(x, w, attrs, op)
    for name in ("bias", *BN_PARAMS):
        t = arg.get(name)
        if t is not None and tuple(t.shape) != (g.o,):
            raise InferError(f"{op}: {name} must be 1-D with {g.o} elements (one per output channel of weight "
                             f"{fmt_shape(w.shape)}), got shape {fmt_shape(t.shape)}")
        if t is not None and name in BN_PARAMS and t.dtype not in FLOATS:
            raise InferError(f"{op}: {name} has dtype {t.dtype}; batch norm parameters are floats")
    # the batch norm's parameters rescale w and the bias in float32: no part in the promotion
    dtype = _conv_dtype([arg[n] for n in ("x", "w", "bias", "residual") if n in arg], op)
    # the result is stored like the feature map it is computed from (GE puts the conv region in NC1HWC0),
    # unless out_format says otherwise
    fmt = attrs.get("out_format") or (BLOCKED if x.format == BLOCKED else "ND")
    if fmt not in ("ND", BLOCKED):
        raise InferError(f"{op}: out_format must be 'ND' or {BLOCKED!r}, got {fmt!r}")
    if "residual" in arg:
        r, eye = arg["residual"], arg["eye"]
        if tuple(r.shape) != g.out_shape or r.format != fmt:
            raise InferError(f"{op}: the residual {r} does not match the result "
                             f"{TensorType(g.out_shape, dtype, fmt)}")
        if tuple(eye.shape) != (16, 16) or eye.dtype != dtypes.promote(x.dtype, w.dtype):
            raise InferError(f"{op}: eye must be the 16 x 16 identity in the cube's dtype, got {eye}")
    out = attrs.get("out_dtype")
    if out is not None:
        dtype = attr_dtype(out, op, "out_dtype")
    activation = attrs.get("activation")
    if activation not in CONV_ACTIVATIONS:
        raise InferError(f"{op}: unknown activation {activation!r}; known: "
                         f"{', '.join(map(repr, CONV_ACTIVATIONS))}")
    return (TensorType(g.out_shape, dtype, fmt),)


def im2col(x: np.ndarray, g: ConvGeometry, fill: float = 0.0) -> np.ndarray:
    """(N, C, Ho, Wo, kh, kw) windows of x (padded with `fill`): element [n, c, oh, ow, i, j] is
    x[n, c, oh*sh - pt + i*dh, ow*sw - pl + j*dw]."""
    pt, pb, pl, pr = g.pad
    xp = np.full((g.n, x.shape[1], g.h + pt + pb, g.w + pl + pr), fill, dtype=x.dtype)
    xp[:, :, pt:pt + g.h, pl:pl + g.w] = x
    (sh, sw), (dh, dw) = g.stride, g.dilation
    rows = [[xp[:, :, i * dh:i * dh + sh * (g.ho - 1) + 1:sh, j * dw:j * dw + sw * (g.wo - 1) + 1:sw]
             for j in range(g.kw)] for i in range(g.kh)]
    return np.stack([np.stack(r, axis=-1) for r in rows], axis=-2)


def fold_batch_norm(w: np.ndarray, bias: np.ndarray | None, mean: Any, var: Any, gamma: Any, beta: Any,
                    eps: float) -> tuple[np.ndarray, np.ndarray]:
    """(w * s[o] in w's dtype, (bias - mean) * s + beta) with s = gamma / sqrt(var + eps), all float32 (wider
    inputs: their own precision)."""
    work = np.result_type(np.float32, *(np.asarray(p).dtype for p in (mean, var, gamma, beta)))
    mean, var, gamma, beta = (np.asarray(p).astype(work) for p in (mean, var, gamma, beta))
    s = (work.type(1) / np.sqrt(var + work.type(eps))) * gamma
    shift = (bias.astype(work) - mean) if bias is not None else -mean
    wide = np.result_type(work, w.dtype)
    return (w.astype(wide) * s.astype(wide)[:, None, None, None]).astype(w.dtype), shift * s + beta


def _conv_eager(x: Any, w: Any, *more: Any, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
                groups: int = 1, has_bias: bool = False, has_bn: bool = False, bn_eps: float = 1e-5,
                has_residual: bool = False, activation: str | None = None, out_dtype: str | None = None,
                out_format: str | None = None) -> np.ndarray:
    x, w = np.asarray(x), np.asarray(w)
    rest = [np.asarray(v) for v in more]
    ts = [TensorType(v.shape, dtypes.narrow(v.dtype)) for v in (x, w, *rest)]
    attrs = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups, "has_bias": has_bias,
             "has_bn": has_bn, "has_residual": has_residual, "activation": activation, "out_dtype": out_dtype}
    try:
        _infer_conv(ts, attrs, "conv2d")
    except InferError as e:
        raise ValueError(str(e)) from None
    g = conv_geometry(ts[0], ts[1], attrs)
    arg = conv_operands([x, w, *rest], attrs)
    bias, residual = arg.get("bias"), arg.get("residual")
    # numpy's dtype (float64 inputs, as `pyasc.testing.check` gives, stay float64); the graph narrows it
    result = (np.dtype(out_dtype) if out_dtype is not None
              else np.result_type(*(a for a in (x, w, bias, residual) if a is not None)))
    if has_bn:  # the weights and the bias the cube uses
        w, bias = fold_batch_norm(w, bias, *(arg[p] for p in BN_PARAMS), bn_eps)
        has_bias = True
    work = np.float64 if result == np.float64 else np.float32
    cols = im2col(x.astype(work), g)                       # (N, C, Ho, Wo, kh, kw)
    cg, og = g.c // g.groups, g.o // g.groups
    outs = []
    for gi in range(g.groups):
        part = cols[:, gi * cg:(gi + 1) * cg]             # (N, Cg, Ho, Wo, kh, kw)
        a = part.transpose(0, 2, 3, 1, 4, 5).reshape(g.n, g.ho * g.wo, cg * g.kh * g.kw)
        b = w[gi * og:(gi + 1) * og].astype(work).reshape(og, cg * g.kh * g.kw)
        outs.append(np.matmul(a, b.T))                    # (N, Ho*Wo, Og)
    y = np.concatenate(outs, axis=-1).transpose(0, 2, 1).reshape(g.n, g.o, g.ho, g.wo)
    if has_bias:
        y = y + bias.astype(work)[None, :, None, None]
    if residual is not None:
        y = y + residual.astype(work)
    if activation == "relu":
        y = np.maximum(y, 0)
    return y.astype(result)


def conv2d(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: ANN001, ANN201 - public signature
    """2-D convolution of an NCHW x with an OIHW weight (torch.nn.functional.conv2d); float16 accumulates in
    float32 and is rounded once."""
    return _conv_eager(x, w, *([] if bias is None else [bias]), stride=stride, padding=padding, dilation=dilation,
                       groups=groups, has_bias=bias is not None)


def _conv_macs(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> int:
    return conv_geometry(ts[0], ts[1], attrs).macs


_WEIGHTS = "its weight conversion"

register(OpDef("conv2d", Category.OPAQUE, named("conv2d", lambda ts, a: _infer_conv(ts, a, "conv2d")), _conv_eager,
               api=conv2d, tensor_params=("x", "w", "bias"), optional_tensors=("bias",), expensive=True,
               doc=conv2d.__doc__ or "", operand_formats=(frozenset({"ND", BLOCKED}), frozenset({"ND"})),
               cube_macs=_conv_macs, mixed_prologue=_WEIGHTS))
register(OpDef("fused_conv2d", Category.OPAQUE,
               named("fused_conv2d", lambda ts, a: _infer_conv(ts, a, "fused_conv2d")), _conv_eager,
               expensive=True, cube_macs=_conv_macs, mixed_prologue=_WEIGHTS,
               # x, w, and the residual (a 1-D bias in that place is ND anyway)
               operand_formats=(frozenset({"ND", BLOCKED}), frozenset({"ND"}), frozenset({"ND", BLOCKED})),
               doc="activation(conv2d(x, w[, bias]) [batch norm folded] [+ residual]) -> out_dtype; inputs x, "
                   "w[, residual, eye][, bias][, mean, var, gamma, beta]; attrs: conv2d's, has_bias, has_bn, bn_eps, "
                   "has_residual, activation (None|'relu'), out_dtype, out_format. Internal: made by GE."))


# ---- pooling ----------------------------------------------------------------------------------


def _infer_pool(ts: Sequence[TensorType], attrs: Mapping[str, Any], op: str) -> tuple[TensorType, ...]:
    if len(ts) != 1:
        raise InferError(f"{op}: takes one tensor x, got {len(ts)}")
    x = ts[0]
    g = pool_geometry(x, attrs, op)
    if x.dtype not in FLOATS:
        raise InferError(f"{op}: x has dtype {x.dtype}; it takes {', '.join(FLOATS)}")
    if op == "avg_pool2d":
        attr_bool(attrs, "count_include_pad", True, op)
    return (TensorType(g.out_shape, x.dtype, x.format if x.format == BLOCKED else "ND"),)


def _pool_windows(x: np.ndarray, g: PoolGeometry, fill: Any) -> np.ndarray:
    """(N, C, Ho, Wo, kh, kw) windows of x padded with `fill` (on the bottom / right as far as ceil_mode
    needs)."""
    (kh, kw), (sh, sw), (ph, pw) = g.kernel, g.stride, g.padding
    hp = max(g.h + 2 * ph, (g.ho - 1) * sh + kh)
    wp = max(g.w + 2 * pw, (g.wo - 1) * sw + kw)
    xp = np.full((g.n, g.c, hp, wp), fill, dtype=x.dtype)
    xp[:, :, ph:ph + g.h, pw:pw + g.w] = x
    rows = [[xp[:, :, i:i + sh * (g.ho - 1) + 1:sh, j:j + sw * (g.wo - 1) + 1:sw] for j in range(kw)]
            for i in range(kh)]
    return np.stack([np.stack(r, axis=-1) for r in rows], axis=-2)


def _pool_attrs(kernel_size: Any, stride: Any, padding: Any, ceil_mode: Any, **more: Any) -> dict[str, Any]:
    return {"kernel_size": kernel_size, "stride": stride, "padding": padding, "ceil_mode": ceil_mode, **more}


def _checked_pool(x: np.ndarray, attrs: Mapping[str, Any], op: str) -> PoolGeometry:
    t = TensorType(x.shape, dtypes.narrow(x.dtype))
    try:
        _infer_pool([t], attrs, op)
    except InferError as e:
        raise ValueError(str(e)) from None
    return pool_geometry(t, attrs, op)


def _max_pool_eager(x: Any, *, kernel_size: Any, stride: Any = None, padding: Any = 0,
                    ceil_mode: bool = False) -> np.ndarray:
    x = np.asarray(x)
    g = _checked_pool(x, _pool_attrs(kernel_size, stride, padding, ceil_mode), "max_pool2d")
    return _pool_windows(x, g, -np.inf).max(axis=(-2, -1))


def pool_divisors(g: PoolGeometry, count_include_pad: bool) -> tuple[np.ndarray, np.ndarray]:
    """avg_pool2d's divisor of output (oh, ow) is rows[oh] * cols[ow]: the window's extent inside the padded
    input (count_include_pad) or inside the input itself."""
    out = []
    for axis, size, n in ((0, g.h, g.ho), (1, g.w, g.wo)):
        ext = []
        for i in range(n):
            start, end = g.window(axis, i)
            if not count_include_pad:
                start, end = max(start, 0), min(end, size)
            ext.append(end - start)
        out.append(np.asarray(ext, dtype=np.int64))
    return out[0], out[1]


def _avg_pool_eager(x: Any, *, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                    count_include_pad: bool = True) -> np.ndarray:
    x = np.asarray(x)
    g = _checked_pool(x, _pool_attrs(kernel_size, stride, padding, ceil_mode, count_include_pad=count_include_pad),
                      "avg_pool2d")
    work = np.float32 if x.dtype == np.float16 else x.dtype
    sums = _pool_windows(x.astype(work), g, 0).sum(axis=(-2, -1), dtype=work)
    rows, cols = pool_divisors(g, count_include_pad)
    return (sums / (rows[:, None] * cols[None, :]).astype(work)).astype(x.dtype)


def max_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False):  # noqa: ANN001, ANN201
    """Max over kernel_size windows of an NCHW x (torch.nn.functional.max_pool2d; padding is -inf)."""
    return _max_pool_eager(x, kernel_size=kernel_size, stride=stride, padding=padding, ceil_mode=ceil_mode)


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):  # noqa: ANN001, ANN201
    """Mean over kernel_size windows of an NCHW x (torch.nn.functional.avg_pool2d; float16 sums in float32)."""
    return _avg_pool_eager(x, kernel_size=kernel_size, stride=stride, padding=padding, ceil_mode=ceil_mode,
                           count_include_pad=count_include_pad)


_POOL_FORMATS = (frozenset({"ND", BLOCKED}),)
register(OpDef("max_pool2d", Category.OPAQUE, named("max_pool2d", lambda ts, a: _infer_pool(ts, a, "max_pool2d")),
               _max_pool_eager, api=max_pool2d, tensor_params=("x",), doc=max_pool2d.__doc__ or "",
               operand_formats=_POOL_FORMATS))
register(OpDef("avg_pool2d", Category.OPAQUE, named("avg_pool2d", lambda ts, a: _infer_pool(ts, a, "avg_pool2d")),
               _avg_pool_eager, api=avg_pool2d, tensor_params=("x",), expensive=True, doc=avg_pool2d.__doc__ or "",
               operand_formats=_POOL_FORMATS))


# ---- batch_norm (inference) -------------------------------------------------------------------


def _batch_norm(b: Builder, x: Any, mean: Any, var: Any, weight: Any = None, bias: Any = None, *,
                eps: float = 1e-5) -> list[Any]:
    """One body: eager semantics, decomposition and inferred type (see builder.py)."""
    shape = b.shape(x)
    per_channel = (shape[1],) + (1,) * (len(shape) - 2)

    def channel(v: Any) -> Any:
        return b.op("reshape", b.to_compute(v), shape=per_channel)

    xc = b.to_compute(x)
    m, v = channel(mean), channel(var)
    y = b.op("mul", b.op("sub", xc, m), b.op("rsqrt", b.op("add", v, b.scalar(eps, v))))
    if weight is not None:
        y = b.op("mul", y, channel(weight))
    if bias is not None:
        y = b.op("add", y, channel(bias))
    out = b.result_type(b.float_dtype(b.dtype(x)), *(b.dtype(p) for p in (mean, var, weight, bias) if p is not None))
    return [b.cast(y, out)]


_BN_OPTIONAL = ("weight", "bias")


def _bn_args(values: Sequence[Any], attrs: Mapping[str, Any]) -> list[Any]:
    """x, mean, var, then weight / bias or None where not given (attrs has_weight / has_bias)."""
    rest = list(values[3:])
    out = list(values[:3])
    for name in _BN_OPTIONAL:
        out.append(rest.pop(0) if attrs.get(f"has_{name}", False) and rest else None)
    return out


def _bn_eps(attrs: Mapping[str, Any]) -> float:
    return attrs.get("eps", 1e-5)


def _bn_eager(*arrays: Any, **attrs: Any) -> Any:
    values = [np.asarray(a) for a in arrays]
    try:
        named("batch_norm", _infer_bn)([TensorType(v.shape, dtypes.narrow(v.dtype)) for v in values], attrs)
    except InferError as e:
        raise ValueError(str(e)) from None
    with np.errstate(over="ignore", under="ignore"):
        return _batch_norm(EagerBuilder(), *_bn_args(values, attrs), eps=_bn_eps(attrs))[0]


def _bn_decompose(graph: Any, inputs: Sequence[Any], attrs: dict[str, Any], loc: Any = None) -> list[Any]:
    return _batch_norm(GraphBuilder(graph, loc), *_bn_args(inputs, attrs), eps=_bn_eps(attrs))


def _infer_bn(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    given = [p for p in _BN_OPTIONAL if attrs.get(f"has_{p}", False)]
    if len(ts) != 3 + len(given):
        raise InferError(f"takes {3 + len(given)} tensors (x, mean, var{''.join(', ' + p for p in given)}), "
                         f"got {len(ts)}")
    x = ts[0]
    if x.ndim < 2:
        raise InferError(f"x must be (N, C, ...) with channels on axis 1, got shape {fmt_shape(x.shape)}")
    for name, t in zip(("mean", "var", *given), ts[1:]):
        if tuple(t.shape) != (x.shape[1],):
            raise InferError(f"{name} must be 1-D with one value per channel ({x.shape[1]}), got shape "
                             f"{fmt_shape(t.shape)}")
        if t.dtype not in FLOATS:
            raise InferError(f"{name} has dtype {t.dtype}; batch_norm takes float tensors")
    eps = attrs.get("eps", 1e-5)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps >= 0:
        raise InferError(f"eps must be a non-negative number, got {eps!r}")
    return tuple(_batch_norm(TypeBuilder(), *_bn_args(list(ts), attrs), eps=eps))


def batch_norm(x, mean, var, weight=None, bias=None, eps=1e-5):  # noqa: ANN001, ANN201
    """Inference batch norm over axis 1: (x - mean) / sqrt(var + eps) * weight + bias (float16 computed in
    float32, rounded once)."""
    tensors = [x, mean, var] + [p for p in (weight, bias) if p is not None]
    return _bn_eager(*tensors, has_weight=weight is not None, has_bias=bias is not None, eps=eps)


register(OpDef("batch_norm", Category.BROADCAST, named("batch_norm", _infer_bn), _bn_eager, api=batch_norm,
               tensor_params=("x", "mean", "var", "weight", "bias"), optional_tensors=_BN_OPTIONAL, expensive=True,
               decompose=_bn_decompose, doc=batch_norm.__doc__ or ""))
