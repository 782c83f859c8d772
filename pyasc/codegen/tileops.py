"""Constructors of schedule tile ops: one per simulator builder method, each knowing its pipe and
which on-chip operands it reads and writes (the facts the sync analysis needs).

Sizes are elements, offsets bytes, exactly as in the simulator's builder API.
"""
from __future__ import annotations

from typing import Any, Optional, Union

from simulator import isa

from ..symbolic import IntLike
from .schedule import GmRef, Ref, TileOp

Src = Union[Ref, float, int, IntLike]


def _space_pipe(src_space: str, dst_space: str) -> str:
    return isa.COPY_PATHS[(src_space, dst_space)][0]


def load(dst: Ref, src: GmRef, dtype: str, burst: IntLike, nburst: IntLike = 1, *, space: str = "UB",
         src_stride: Optional[IntLike] = None, dst_stride: Optional[IntLike] = None, pad: bool = True,
         pad_value: float = 0.0, note: str = "") -> TileOp:
    """GM -> `space` (UB or L1): `nburst` bursts of `burst` elements."""
    return TileOp(_space_pipe("GM", space), "copy",
                  dict(dst=dst, src=src, dtype=dtype, burst=burst, nburst=nburst, src_stride=src_stride,
                       dst_stride=dst_stride, pad=pad, pad_value=pad_value),
                  writes=(dst,), note=note)


def store(dst: GmRef, src: Ref, dtype: str, burst: IntLike, nburst: IntLike = 1, *,
          src_stride: Optional[IntLike] = None, dst_stride: Optional[IntLike] = None, pad: bool = True,
          note: str = "") -> TileOp:
    """UB -> GM: `nburst` bursts of `burst` elements."""
    return TileOp(_space_pipe("UB", "GM"), "copy",
                  dict(dst=dst, src=src, dtype=dtype, burst=burst, nburst=nburst, src_stride=src_stride,
                       dst_stride=dst_stride, pad=pad),
                  reads=(src,), note=note)


def _refs(*vals: Any) -> tuple[Ref, ...]:
    return tuple(v for v in vals if isinstance(v, Ref))


def vbinary(fn: str, dst: Ref, a: Ref, b: Ref, count: IntLike, dtype: str, note: str = "") -> TileOp:
    return TileOp("V", "vbinary", dict(fn=fn, dst=dst, a=a, b=b, count=count, dtype=dtype),
                  reads=_refs(a, b), writes=(dst,), note=note)


def vscalar(fn: str, dst: Ref, src: Ref, scalar: Any, count: IntLike, dtype: str, reverse: bool = False,
            note: str = "") -> TileOp:
    return TileOp("V", "vscalar", dict(fn=fn, dst=dst, src=src, scalar=scalar, count=count, dtype=dtype,
                                       reverse=reverse),
                  reads=(src,), writes=(dst,), note=note)


def vunary(fn: str, dst: Ref, src: Ref, count: IntLike, dtype: str, note: str = "") -> TileOp:
    return TileOp("V", "vunary", dict(fn=fn, dst=dst, src=src, count=count, dtype=dtype),
                  reads=(src,), writes=(dst,), note=note)


def vcompare(fn: str, dst: Ref, a: Ref, b: Src, count: IntLike, dtype: str, note: str = "") -> TileOp:
    return TileOp("V", "vcompare", dict(fn=fn, dst=dst, a=a, b=b, count=count, dtype=dtype),
                  reads=_refs(a, b), writes=(dst,), note=note)


def vselect(dst: Ref, mask: Ref, a: Src, b: Src, count: IntLike, dtype: str, note: str = "") -> TileOp:
    return TileOp("V", "vselect", dict(dst=dst, mask=mask, a=a, b=b, count=count, dtype=dtype),
                  reads=_refs(mask, a, b), writes=(dst,), note=note)


def vcast(dst: Ref, src: Ref, count: IntLike, src_dtype: str, dst_dtype: str, round: str = "trunc",
          note: str = "") -> TileOp:
    return TileOp("V", "vcast", dict(dst=dst, src=src, count=count, src_dtype=src_dtype, dst_dtype=dst_dtype,
                                     round=round),
                  reads=(src,), writes=(dst,), note=note)


def vdup(dst: Ref, value: Any, count: IntLike, dtype: str, note: str = "") -> TileOp:
    return TileOp("V", "vdup", dict(dst=dst, value=value, count=count, dtype=dtype), writes=(dst,), note=note)


def vcopy(dst: Ref, src: Ref, count: IntLike, dtype: str, note: str = "") -> TileOp:
    return TileOp("V", "vcopy", dict(dst=dst, src=src, count=count, dtype=dtype), reads=(src,), writes=(dst,),
                  note=note)


def vreduce(fn: str, dst: Ref, src: Ref, rows: IntLike, cols: IntLike, dtype: str,
            src_row_stride: Optional[IntLike] = None, note: str = "") -> TileOp:
    return TileOp("V", "vreduce", dict(fn=fn, dst=dst, src=src, rows=rows, cols=cols, dtype=dtype,
                                       src_row_stride=src_row_stride),
                  reads=(src,), writes=(dst,), note=note)


def vbroadcast(dst: Ref, src: Ref, rows: IntLike, cols: IntLike, dtype: str, axis: int = 1,
               dst_row_stride: Optional[IntLike] = None, note: str = "") -> TileOp:
    return TileOp("V", "vbroadcast", dict(dst=dst, src=src, rows=rows, cols=cols, dtype=dtype, axis=axis,
                                          dst_row_stride=dst_row_stride),
                  reads=(src,), writes=(dst,), note=note)


def vtranspose(dst: Ref, src: Ref, rows: IntLike, cols: IntLike, dtype: str,
               src_row_stride: Optional[IntLike] = None, dst_row_stride: Optional[IntLike] = None,
               note: str = "") -> TileOp:
    return TileOp("V", "vtranspose", dict(dst=dst, src=src, rows=rows, cols=cols, dtype=dtype,
                                          src_row_stride=src_row_stride, dst_row_stride=dst_row_stride),
                  reads=(src,), writes=(dst,), note=note)


# ---- cube core ----------------------------------------------------------------------------


def copy_nd2nz(dst: Ref, src: GmRef, dtype: str, rows: IntLike, cols: IntLike,
               src_row_stride: Optional[IntLike] = None, note: str = "") -> TileOp:
    return TileOp("MTE2", "copy_nd2nz", dict(dst=dst, src=src, dtype=dtype, rows=rows, cols=cols,
                                             src_row_stride=src_row_stride),
                  writes=(dst,), note=note)


def load_l0(dst: Ref, src: Ref, dtype: str, rows: IntLike, cols: IntLike, transpose: bool = False,
            note: str = "") -> TileOp:
    return TileOp("MTE1", "load_l0", dict(dst=dst, src=src, dtype=dtype, rows=rows, cols=cols, transpose=transpose),
                  reads=(src,), writes=(dst,), note=note)


def load_l0_2d(dst: Ref, src: Ref, dtype: str, start: IntLike, repeat: IntLike, src_stride: IntLike = 1,
               dst_gap: IntLike = 0, transpose: bool = False, note: str = "") -> TileOp:
    """LoadData2D: `repeat` fractals from L1 fractal `start` of `src` on, `src_stride` apart, into L0."""
    return TileOp("MTE1", "load_l0_2d", dict(dst=dst, src=src, dtype=dtype, start=start, repeat=repeat,
                                             src_stride=src_stride, dst_gap=dst_gap, transpose=transpose),
                  reads=(src,), writes=(dst,), note=note)


def load_bias(dst: Ref, src: Ref, count: IntLike, note: str = "") -> TileOp:
    return TileOp("MTE1", "load_bias", dict(dst=dst, src=src, count=count), reads=(src,), writes=(dst,), note=note)


def mmad(dst: Ref, a: Ref, b: Ref, m: IntLike, k: IntLike, n: IntLike, dtype: str, accumulate: IntLike = 0,
         bias: Optional[Ref] = None, note: str = "") -> TileOp:
    reads = _refs(a, b, bias)
    # accumulating reads the old L0C contents; a bias or a fresh start does not
    if accumulate != 0:
        reads = reads + (dst,)
    return TileOp("M", "mmad", dict(dst=dst, a=a, b=b, m=m, k=k, n=n, dtype=dtype, accumulate=accumulate,
                                    bias=bias),
                  reads=reads, writes=(dst,), note=note)


def fixpipe(dst: GmRef, src: Ref, m: IntLike, n: IntLike, dst_dtype: str, src_dtype: str = "float32",
            relu: bool = False, dst_row_stride: Optional[IntLike] = None, note: str = "") -> TileOp:
    return TileOp("FIX", "fixpipe", dict(dst=dst, src=src, m=m, n=n, dst_dtype=dst_dtype, src_dtype=src_dtype,
                                         relu=relu, dst_row_stride=dst_row_stride),
                  reads=(src,), note=note)
