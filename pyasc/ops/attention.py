"""Scaled dot-product attention as one op (`pyasc.attention`): its meaning, checks and decomposition.

The op's docstring (below, on `attention`) states the semantics and the online-softmax recurrence a fused
kernel computes it with. The eager function, the decomposition (matmul, softmax, matmul: what GE lowers when
codegen cannot take the op whole) and the type all come from one body (builder.py), so they agree.
Category OPAQUE: never fused with its neighbours; codegen lowers it whole or GE decomposes it.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from .. import dtypes
from ..errors import InferError, SourceLoc
from ..tensor_type import Sym, TensorType
from .builder import Builder, EagerBuilder, GraphBuilder, TypeBuilder
from .common import FLOATS, broadcast_shapes, broadcasts_to, fmt_shape, named
from .registry import Category, OpDef, register

_OPTIONAL = ("mask",)


def _operands(values: Sequence[Any], attrs: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """(q, k, v, mask or None) and the body's attributes, from a node's inputs and attributes."""
    mask = values[3] if attrs.get("has_mask", False) and len(values) > 3 else None
    return [*values[:3], mask], {k: a for k, a in attrs.items() if k != "has_mask"}


def causal_keep(tq: int, tk: int) -> np.ndarray:
    """Bool (tq, tk): True where query row i sees key j (j <= i + tk - tq), the bottom-right aligned triangle."""
    return np.tri(tq, tk, tk - tq, dtype=bool)


def default_scale(d: Any) -> float:
    """1 / sqrt(D), the scale when none is given (D must be known at compile time)."""
    if isinstance(d, Sym):
        raise InferError(f"the default scale 1/sqrt(D) needs a head dim D known at compile time, got D={d}; "
                         "pass scale=")
    return 1.0 / math.sqrt(int(d)) if int(d) > 0 else 1.0


def _attention(b: Builder, q: Any, k: Any, v: Any, mask: Any = None, *, scale: Any = None,
               causal: bool = False) -> list[Any]:
    qs, ks = b.shape(q), b.shape(k)
    factor = default_scale(qs[-1]) if scale is None else float(scale)
    qc, kc, vc = (b.cast(x, "float32") for x in (q, k, v))
    s = b.op("mul", b.op("matmul", qc, kc, transpose_b=True), b.const(factor, "float32"))
    if mask is not None:
        s = b.op("add", s, b.cast(mask, "float32"))
    if causal:
        s = b.op("where", b.array(causal_keep(int(qs[-2]), int(ks[-2]))), s, b.const(-math.inf, "float32"))
    p = b.op("softmax", s, axis=-1)
    return [b.cast(b.op("matmul", p, vc), b.dtype(q))]


def attention(q, k, v, mask=None, scale=None, causal=False):  # noqa: ANN001, ANN201 - the public signature
    """Scaled dot-product attention.

    Meaning:

        S = (q @ k^T) * scale [+ mask] [causal: S[i, j] = -inf where j > i + (Tk - Tq)]
        P = softmax(S) over the keys (the last axis)
        O = P @ v                                   -> shape (..., Tq, Dv), dtype of q

    - q: (..., Tq, D), k: (..., Tk, D), v: (..., Tk, Dv): the leading dims (batch, heads) broadcast like matmul's
      batch dims. float16 / float32 (integer or bool operands are an error). Everything is computed in float32
      (what the cube accumulates in) and the result is rounded to q's dtype once.
    - scale: a Python float, default 1 / sqrt(D).
    - mask: an additive float mask broadcastable to the scores (..., Tq, Tk); -inf (or a large negative number
      such as -1e10) means "masked". A boolean mask is not additive: write `where(keep, 0.0, -inf)`.
    - causal: query row i sees key j only when j <= i + (Tk - Tq): the diagonal is aligned bottom-right, as in
      torch's scaled_dot_product_attention with is_causal for Tq == Tk (and as a decode step of Tq = 1 sees the
      whole cache).
    - A row in which every key is masked (a -inf mask row, or causal rows i < Tq - Tk when Tq > Tk) gives NaN,
      as numpy's softmax of a row of -inf does (exp(-inf - -inf) is NaN).

    How a fused kernel computes it (the online softmax, FlashAttention's recurrence). The keys are taken in
    blocks B_1, ..., B_n; per query row the kernel keeps a running max m, a running sum l and a partial output
    O (a row of Dv), starting at m = -inf, l = 0, O = 0. For each block B (with scores s_j = S[i, j], j in B):

        m_new = max(m, max_j s_j)
        c     = exp(m - m_new)                     (rescales what was accumulated against the old max)
        l     = c * l + sum_j exp(s_j - m_new)
        O     = c * O + sum_j exp(s_j - m_new) * v_j
        m     = m_new

    and at the end O / l is the output row. Why it equals the formula: by induction, after the blocks B_1..B_t
    we have m = max over the keys seen, l = sum_j exp(s_j - m) and O = sum_j exp(s_j - m) v_j over those keys,
    because multiplying by exp(m_old - m_new) turns every term exp(s_j - m_old) into exp(s_j - m_new). After
    the last block, O / l = sum_j exp(s_j - M) v_j / sum_j exp(s_j - M) with M the row max, which is softmax(S)
    @ v computed with the max subtracted, exactly the stable softmax above. The two differ only by rounding
    (the order of the sums and the extra multiplications by c <= 1, all in float32). Masked keys (-inf) add
    exp(-inf) = 0 to l and O. While every key seen so far is masked, m stays -inf and l, O stay 0: a kernel
    takes c = 0 there instead of forming exp(-inf - -inf); the first visible key then starts the sums, and a
    row with no visible key ends as O / l = 0 / 0 = NaN, as the formula gives. Causal blocks wholly above the
    diagonal contribute nothing and can be skipped.

    The keys may also be cut into runs walked apart (a decode step's one query row spread over the cores): run
    c ends with its own (m_c, l_c, O_c), and with M = max_c m_c the result is sum_c exp(m_c - M) O_c / sum_c
    exp(m_c - M) l_c, the same rescaling taken once more over the runs. A run with no visible key has weight 0
    (a kernel starts m at the lowest finite number, not -inf, so no exp(-inf + inf) appears).
    """
    return _eager(q, k, v, *(() if mask is None else (mask,)), scale=scale, causal=causal,
                  has_mask=mask is not None)


def _eager(*arrays: Any, **attrs: Any) -> Any:
    """The body on numpy arrays, after the same checks inference makes (clear errors, not numpy's)."""
    _INFER([TensorType(np.shape(a), dtypes.narrow(np.asarray(a).dtype)) for a in arrays], attrs)
    args, body_attrs = _operands(arrays, attrs)
    with np.errstate(over="ignore", under="ignore"):
        return _attention(EagerBuilder(), *args, **body_attrs)[0]


def _decompose(graph: Any, inputs: Sequence[Any], attrs: dict[str, Any], loc: SourceLoc | None = None) -> list[Any]:
    args, body_attrs = _operands(inputs, attrs)
    return _attention(GraphBuilder(graph, loc), *args, **body_attrs)


def _check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    has_mask = bool(attrs.get("has_mask", False))
    if len(ts) != 3 + has_mask:
        raise InferError(f"takes {3 + has_mask} input(s) (q, k, v{', mask' if has_mask else ''}), got {len(ts)}")
    q, k, v = ts[:3]
    for name, t in zip("qkv", (q, k, v)):
        if t.ndim < 2:
            raise InferError(f"{name} must have at least 2 dimensions (..., T, D), got shape {fmt_shape(t.shape)}")
        if t.dtype not in FLOATS:
            raise InferError(f"{name} must be float16 or float32, got {t.dtype} (cast integer inputs first)")
    if q.shape[-1] != k.shape[-1] and not any(isinstance(d, Sym) for d in (q.shape[-1], k.shape[-1])):
        raise InferError(f"q {fmt_shape(q.shape)} and k {fmt_shape(k.shape)} have different head dims D "
                         f"({q.shape[-1]} != {k.shape[-1]})")
    if k.shape[-2] != v.shape[-2] and not any(isinstance(d, Sym) for d in (k.shape[-2], v.shape[-2])):
        raise InferError(f"k {fmt_shape(k.shape)} and v {fmt_shape(v.shape)} have different numbers of keys Tk "
                         f"({k.shape[-2]} != {v.shape[-2]})")
    try:
        batch = broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except InferError:
        raise InferError(f"cannot broadcast the batch dims of q {fmt_shape(q.shape)}, k {fmt_shape(k.shape)} and "
                         f"v {fmt_shape(v.shape)}") from None
    scores = batch + (q.shape[-2], k.shape[-2])
    if has_mask:
        m = ts[3]
        if m.dtype not in FLOATS:
            raise InferError(f"mask must be an additive float mask (0 to keep, -inf to mask), got {m.dtype}; "
                             "for a boolean mask pass where(keep, 0.0, -inf)")
        if not broadcasts_to(m.shape, scores):
            raise InferError(f"mask of shape {fmt_shape(m.shape)} does not broadcast to the scores "
                             f"{fmt_shape(scores)} (..., Tq, Tk)")
    scale = attrs.get("scale")
    if scale is not None and (isinstance(scale, (bool, np.bool_)) or not isinstance(scale, (int, float, np.floating,
                                                                                            np.integer))):
        raise InferError(f"scale must be a Python float (or None for 1/sqrt(D)), got {scale!r}")
    causal = attrs.get("causal", False)
    if not isinstance(causal, (bool, np.bool_)):
        raise InferError(f"causal must be True or False, got {causal!r}")
    if causal and any(isinstance(d, Sym) for d in (q.shape[-2], k.shape[-2])):
        raise InferError(f"causal=True needs Tq and Tk known at compile time, got q {fmt_shape(q.shape)} and k "
                         f"{fmt_shape(k.shape)}")


def _infer(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    _check(ts, attrs)
    args, body_attrs = _operands(ts, attrs)
    return tuple(_attention(TypeBuilder(), *args, **body_attrs))


_INFER = named("attention", _infer)


def _cube_macs(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> int:
    """q k^T and p v over the keys each query sees: all of them, or for a causal attention the unmasked part
    (row i sees min(Tk, max(0, i + Tk - Tq + 1)) keys), the work a kernel that skips masked blocks must do."""
    q, v = ts[0], ts[2]
    if any(isinstance(d, Sym) for t in ts[:3] for d in t.shape):
        return 0      # sizes known only at launch: no compile-time count
    batch = int(np.prod([int(d) for d in q.shape[:-2]]))
    tq, tk = int(q.shape[-2]), int(ts[1].shape[-2])
    seen = tq * tk
    if attrs.get("causal", False):
        seen = sum(min(tk, max(0, i + tk - tq + 1)) for i in range(tq))
    return batch * seen * (int(q.shape[-1]) + int(v.shape[-1]))


register(OpDef("attention", Category.OPAQUE, _INFER, _eager, api=attention,
               tensor_params=("q", "k", "v", "mask"), optional_tensors=_OPTIONAL, expensive=True,
               decompose=_decompose, cube_macs=_cube_macs, doc=attention.__doc__ or ""))
