"""Tile ops: one chip instruction each, built from its spec (`pyasc.target`).

`tile(op, **operands)` derives everything the later stages need from the instruction's spec: the pipe (a data
move's from the path between its operands' spaces) and which on-chip operands it reads and writes (the sync
analysis's facts). The named constructors below are the templates' typed shorthand for it, nothing more.

Sizes are elements, offsets bytes, exactly as in the simulator's instructions.
"""
from __future__ import annotations

from typing import Any, Optional, Union

from .. import symbolic as sy
from ..memo import memoised
from ..symbolic import IntLike
from ..target import DATA_PATHS, InstrSpec, spec
from .schedule import GmRef, Ref, TileOp

Src = Union[Ref, float, int, IntLike]


def tile(op: str, note: str = "", **args: Any) -> TileOp:
    """Instruction `op` with `args` as a tile op: its pipe and its on-chip reads and writes come from the spec."""
    sp = spec(op)
    reads: list[Ref] = []
    writes: list[Ref] = []
    also_read: list[Ref] = []
    for m in sp.mems:
        v = args.get(m.name)
        if not isinstance(v, Ref):
            continue
        if m.access == "r":
            reads.append(v)
            continue
        writes.append(v)
        # a written operand that is also read (accumulating into the old contents) counts as both
        if m.read_when and args.get(m.read_when, 0) != 0:
            also_read.append(v)
    return TileOp(sp, dict(args), _pipe(sp, args), tuple(reads + also_read), tuple(writes), note)


def _pipe(sp: InstrSpec, args: dict[str, Any]) -> str:
    """A fixed pipe, or a data move's: the path between the spaces its operands can be in (a GmRef is GM, a
    Ref one of the operand's on-chip spaces); every path they allow runs on the same pipe."""
    if not sp.move:
        return sp.pipe
    pipes = _move_pipes(sp.op, tuple(isinstance(args.get(name), GmRef) for name in sp.move))
    if len(pipes) != 1:
        raise ValueError(f"{sp.op}: operands {args.get(sp.move[0])} -> {args.get(sp.move[1])} do not name one data "
                         f"path (pipes {sorted(pipes)})")
    return next(iter(pipes))


@memoised(256)  # every tile op a template builds asks: a fact of the spec and of which ends are GM
def _move_pipes(op: str, gm: tuple[bool, ...]) -> frozenset[str]:
    """The pipes of the paths a move `op` may take, given which of its two ends are GM."""
    sp = spec(op)
    ends = [("GM",) if is_gm else tuple(s for s in sp.mem(name).spaces if s != "GM")
            for name, is_gm in zip(sp.move, gm)]
    return frozenset(DATA_PATHS[(a, b)].pipe for a in ends[0] for b in ends[1] if (a, b) in DATA_PATHS)


def load(dst: Ref, src: GmRef, dtype: str, burst: IntLike, nburst: IntLike = 1, *,
         src_stride: Optional[IntLike] = None, dst_stride: Optional[IntLike] = None, pad: bool = True,
         pad_value: float = 0.0, note: str = "") -> TileOp:
    """GM -> UB or L1: `nburst` bursts of `burst` elements."""
    return tile("copy", note, dst=dst, src=src, dtype=dtype, burst=burst, nburst=nburst, src_stride=src_stride,
                dst_stride=dst_stride, pad=pad, pad_value=pad_value)


def store(dst: GmRef, src: Ref, dtype: str, burst: IntLike, nburst: IntLike = 1, *,
          src_stride: Optional[IntLike] = None, dst_stride: Optional[IntLike] = None, pad: bool = True,
          note: str = "") -> TileOp:
    """UB -> GM: `nburst` bursts of `burst` elements."""
    return tile("copy", note, dst=dst, src=src, dtype=dtype, burst=burst, nburst=nburst, src_stride=src_stride,
                dst_stride=dst_stride, pad=pad)


def vbinary(fn: str, dst: Ref, a: Ref, b: Ref, count: IntLike, dtype: str, note: str = "") -> TileOp:
    return tile("vbinary", note, fn=fn, dst=dst, a=a, b=b, count=count, dtype=dtype)


def vrepeated(fn: str, dst: Ref, a: Ref, b: Ref, repeats: IntLike, strides: tuple, dtype: str,
              mask: Optional[int] = None, elems_per_repeat: int = 0, note: str = "") -> TileOp:
    """vbinary in the hardware's repeat addressing: `repeats` repeats of 8 UB blocks per operand, at the
    (block stride, repeat stride) pairs `strides` (dst, a, b; a block stride of 0 re-reads one block: a per-row
    value broadcast over the row with no scratch copy); `mask` the elements of a repeat computed (all: None).
    `elems_per_repeat` sizes the work for the cost model (count = repeats x elements of a repeat)."""
    return tile("vbinary", note, fn=fn, dst=dst, a=a, b=b, count=sy.mul(repeats, elems_per_repeat), dtype=dtype,
                rep_count=repeats, rep_strides=tuple(strides), rep_mask=mask)


def vscalar(fn: str, dst: Ref, src: Ref, scalar: Any, count: IntLike, dtype: str, reverse: bool = False,
            note: str = "") -> TileOp:
    return tile("vscalar", note, fn=fn, dst=dst, src=src, scalar=scalar, count=count, dtype=dtype, reverse=reverse)


def vunary(fn: str, dst: Ref, src: Ref, count: IntLike, dtype: str, note: str = "") -> TileOp:
    return tile("vunary", note, fn=fn, dst=dst, src=src, count=count, dtype=dtype)


def vcompare(fn: str, dst: Ref, a: Ref, b: Src, count: IntLike, dtype: str, note: str = "") -> TileOp:
    return tile("vcompare", note, fn=fn, dst=dst, a=a, b=b, count=count, dtype=dtype)


def vselect(dst: Ref, mask: Ref, a: Src, b: Src, count: IntLike, dtype: str, note: str = "") -> TileOp:
    return tile("vselect", note, dst=dst, mask=mask, a=a, b=b, count=count, dtype=dtype)


def vcast(dst: Ref, src: Ref, count: IntLike, src_dtype: str, dst_dtype: str, round: str = "trunc",
          note: str = "") -> TileOp:
    return tile("vcast", note, dst=dst, src=src, count=count, src_dtype=src_dtype, dst_dtype=dst_dtype, round=round)


def vdup(dst: Ref, value: Any, count: IntLike, dtype: str, note: str = "") -> TileOp:
    return tile("vdup", note, dst=dst, value=value, count=count, dtype=dtype)


def vcopy(dst: Ref, src: Ref, count: IntLike, dtype: str, note: str = "") -> TileOp:
    return tile("vcopy", note, dst=dst, src=src, count=count, dtype=dtype)


def vreduce(fn: str, dst: Ref, src: Ref, rows: IntLike, cols: IntLike, dtype: str,
            src_row_stride: Optional[IntLike] = None, note: str = "") -> TileOp:
    return tile("vreduce", note, fn=fn, dst=dst, src=src, rows=rows, cols=cols, dtype=dtype,
                src_row_stride=src_row_stride)


def vbroadcast(dst: Ref, src: Ref, rows: IntLike, cols: IntLike, dtype: str, axis: int = 1,
               dst_row_stride: Optional[IntLike] = None, note: str = "") -> TileOp:
    return tile("vbroadcast", note, dst=dst, src=src, rows=rows, cols=cols, dtype=dtype, axis=axis,
                dst_row_stride=dst_row_stride)


def vtranspose(dst: Ref, src: Ref, rows: IntLike, cols: IntLike, dtype: str,
               src_row_stride: Optional[IntLike] = None, dst_row_stride: Optional[IntLike] = None,
               note: str = "") -> TileOp:
    return tile("vtranspose", note, dst=dst, src=src, rows=rows, cols=cols, dtype=dtype,
                src_row_stride=src_row_stride, dst_row_stride=dst_row_stride)


def sync_all(note: str = "") -> TileOp:
    """Every core of the launch waits here for the others (partial results in GM)."""
    return tile("sync_all", note)


# ---- cube core ----------------------------------------------------------------------------


def copy_nd2nz(dst: Ref, src: GmRef, dtype: str, rows: IntLike, cols: IntLike,
               src_row_stride: Optional[IntLike] = None, note: str = "") -> TileOp:
    return tile("copy_nd2nz", note, dst=dst, src=src, dtype=dtype, rows=rows, cols=cols,
                src_row_stride=src_row_stride)


def load_l0(dst: Ref, src: Ref, dtype: str, rows: IntLike, cols: IntLike, transpose: bool = False,
            note: str = "") -> TileOp:
    return tile("load_l0", note, dst=dst, src=src, dtype=dtype, rows=rows, cols=cols, transpose=transpose)


def load_l0_2d(dst: Ref, src: Ref, dtype: str, start: IntLike, repeat: IntLike, src_stride: IntLike = 1,
               dst_gap: IntLike = 0, transpose: bool = False, note: str = "") -> TileOp:
    """LoadData2D: `repeat` fractals from L1 fractal `start` of `src` on, `src_stride` apart, into L0."""
    return tile("load_l0_2d", note, dst=dst, src=src, dtype=dtype, start=start, repeat=repeat,
                src_stride=src_stride, dst_gap=dst_gap, transpose=transpose)


def load3d(dst: Ref, src: Ref, dtype: str, c1: IntLike, h: IntLike, w: IntLike, kh: int, kw: int,
           stride: tuple = (1, 1), pad: tuple = (0, 0, 0, 0), dilation: tuple = (1, 1), *, m_start: IntLike = 0,
           m_len: Optional[IntLike] = None, k_start: IntLike = 0, k_len: Optional[IntLike] = None,
           note: str = "") -> TileOp:
    """Load3D (img2col): rows m_start.. and columns k_start.. of the im2col matrix of the (c1, h, w, c0) map in
    L1 into L0A (or its transpose into L0B); pad is (top, bottom, left, right)."""
    return tile("load3d", note, dst=dst, src=src, dtype=dtype, c1=c1, h=h, w=w, kh=kh, kw=kw, stride=tuple(stride),
                pad=tuple(pad), dilation=tuple(dilation), m_start=m_start, m_len=m_len, k_start=k_start, k_len=k_len)


def load_bias(dst: Ref, src: Ref, count: IntLike, note: str = "") -> TileOp:
    return tile("load_bias", note, dst=dst, src=src, count=count)


def mmad(dst: Ref, a: Ref, b: Ref, m: IntLike, k: IntLike, n: IntLike, dtype: str, accumulate: IntLike = 0,
         bias: Optional[Ref] = None, note: str = "") -> TileOp:
    return tile("mmad", note, dst=dst, a=a, b=b, m=m, k=k, n=n, dtype=dtype, accumulate=accumulate, bias=bias)


def fixpipe(dst: GmRef, src: Ref, m: IntLike, n: IntLike, dst_dtype: str, src_dtype: str = "float32",
            relu: bool = False, dst_row_stride: Optional[IntLike] = None, nz: bool = False,
            scale: Optional[float] = None, note: str = "") -> TileOp:
    """L0C -> GM: row-major (rows dst_row_stride apart), or `nz`: 16-column panels of dst_row_stride rows; on the
    way, times `scale`."""
    return tile("fixpipe", note, dst=dst, src=src, m=m, n=n, dst_dtype=dst_dtype, src_dtype=src_dtype, relu=relu,
                dst_row_stride=dst_row_stride, nz=nz, scale=scale)
