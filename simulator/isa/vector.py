"""Vector-unit instructions (UB only, pipe V)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Optional, Union

from .spec import READ, InstrSpec, R, W, vector
from .base import (
    VBINARY_COST, VCOMPARE_FNS, VREDUCE_FNS, VUNARY_COST, CAST_ROUNDING, FLOAT_DTYPES, INT_DTYPES,
    FLOAT_ONLY, BITWISE_ONLY, Instr, Mem, Operand, ScalarValue, _check_dtype, _check_operand,
    _check_ops, _check_scalar, _fmt, _optional, _req,
)


# --------------------------------------------------------------------------- vector


@dataclass(frozen=True)
class VRepeat:
    """Hardware-style addressing of an elementwise vector instruction (instead of `count`): `repeats`
    repeats of 8 blocks of 32 bytes. Block b of repeat r of an operand is at its address +
    (r * repeat stride + b * block stride) * 32 bytes; `dst` and each of `srcs` (one per UB source) is a
    (block stride, repeat stride) pair, default (1, 8): contiguous; at most the chip's max_vector_stride. A source stride of 0 re-reads the same
    block (a broadcast without a scratch copy). `mask`: bit e set computes element e of every repeat
    (partial repeats); the others keep their destination values. Default: every element."""

    repeats: Operand
    dst: tuple = (1, 8)
    srcs: tuple = ()
    mask: Optional[int] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "dst", tuple(self.dst))
        object.__setattr__(self, "srcs", tuple(tuple(x) for x in self.srcs))

    def check(self, instr: "VectorInstr", n_srcs: int) -> None:
        _check_operand(self.repeats, f"{instr.OP}: rep.repeats")
        strides = [self.dst] + list(self.srcs)
        _req(instr, len(self.srcs) in (0, n_srcs),
             f"rep.srcs needs one (block stride, repeat stride) per UB source ({n_srcs}), got {len(self.srcs)}")
        for pair in strides:
            _req(instr, len(pair) == 2 and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in pair),
                 f"strides are (block stride, repeat stride) pairs of non-negative integers, got {pair!r}")
        _req(instr, self.dst[0] >= 1, "a destination block stride of 0 is undefined on the hardware")
        if self.mask is not None:
            _req(instr, isinstance(self.mask, int) and not isinstance(self.mask, bool) and self.mask > 0,
                 f"mask must be a non-zero bit mask of the elements of a repeat, got {self.mask!r}")

    def src_strides(self, n_srcs: int) -> tuple:
        return self.srcs if self.srcs else ((1, 8),) * n_srcs

    def text(self) -> str:
        s = f" rep={self.repeats} dst={self.dst}"
        if self.srcs:
            s += f" srcs={self.srcs}"
        if self.mask is not None:
            s += f" mask={self.mask:#x}"
        return s


def _count_text(instr: Instr) -> str:
    rep = getattr(instr, "rep", None)
    return rep.text() if rep is not None else f" count={instr.count}"


class VectorInstr(Instr):
    """Vector instructions act on UB only and run on pipe V.

    A subclass declares its SPEC (memory operands, all in UB; a source whose field type admits a
    scalar may be one) and the kinds of its other operands, and check() applies their rules, in
    this order: the spec's memory operands; DTYPE_FIELDS name dtypes; OPS are integer operands;
    SCALARS (and spec operands given as scalars) are scalars; `fn` is a key of FNS (a `FN_KIND`)
    valid for the dtype; then _check_own().
    """

    SCALARS: ClassVar[tuple[str, ...]] = ()
    DTYPE_FIELDS: ClassVar[tuple[str, ...]] = ("dtype",)
    OPS: ClassVar[tuple[str, ...]] = ("count",)
    FNS: ClassVar[Any] = None
    FN_KIND: ClassVar[str] = "function"

    def check(self, core_type: str) -> None:
        super().check(core_type)
        for d in self.DTYPE_FIELDS:
            _check_dtype(self, d)
        _check_ops(self, *self.OPS)
        for n in self.SCALARS + tuple(m.name for m in self.SPEC.mems):
            v = getattr(self, n)
            if n in self.SCALARS or not isinstance(v, Mem):
                _check_scalar(v, f"{self.OP}: {n}")
        if self.FNS is not None:
            self._check_fn()
        rep = getattr(self, "rep", None)
        if rep is not None:
            _req(self, isinstance(rep, VRepeat), f"rep must be a VRepeat, got {rep!r}")
            _req(self, self.count is None, "give count or rep, not both")
            rep.check(self, sum(m.access == READ and isinstance(getattr(self, m.name), Mem) for m in self.SPEC.mems))
        elif "count" in self.OPS:
            _req(self, getattr(self, "count", None) is not None, "count is missing (or give rep=VRepeat(...))")
        self._check_own()

    def regs_read(self) -> list:
        out = super().regs_read()
        rep = getattr(self, "rep", None)
        if rep is not None and not isinstance(rep.repeats, int):
            out.append(rep.repeats)
        return out

    def _check_fn(self) -> None:
        fn, dtype, table = getattr(self, "fn"), getattr(self, "dtype"), self.FNS
        _req(self, fn in table, f"unknown {self.FN_KIND} {fn!r}; known: {', '.join(table)}")
        if fn in FLOAT_ONLY:
            _req(self, dtype in FLOAT_DTYPES, f"{fn} needs a float dtype, got {dtype}")
        if fn in BITWISE_ONLY:
            _req(self, dtype in INT_DTYPES, f"{fn} needs an integer or bool dtype, got {dtype}")

    def _check_own(self) -> None:
        """Rules of this instruction alone (none by default)."""


@dataclass(frozen=True)
class VBinary(VectorInstr):
    fn: str
    dst: Mem
    a: Mem
    b: Mem
    count: Optional[Operand]  # None when `rep` gives the repeats
    dtype: str
    rep: Optional[VRepeat] = None
    OP: ClassVar[str] = "vbinary"
    SPEC: ClassVar[InstrSpec] = vector("elementwise", W("dst"), R("a"), R("b"))
    FNS: ClassVar[Any] = VBINARY_COST

    def text(self) -> str:
        return f"v{self.fn} {self.dst} <- {self.a}, {self.b} {self.dtype}" + _count_text(self)


@dataclass(frozen=True)
class VScalar(VectorInstr):
    """dst = fn(src, scalar) (or fn(scalar, src) with reverse)."""

    fn: str
    dst: Mem
    src: Mem
    scalar: ScalarValue
    count: Optional[Operand]  # None when `rep` gives the repeats
    dtype: str
    reverse: bool = False
    rep: Optional[VRepeat] = None
    OP: ClassVar[str] = "vscalar"
    SPEC: ClassVar[InstrSpec] = vector("elementwise", W("dst"), R("src"))
    SCALARS: ClassVar[tuple[str, ...]] = ("scalar",)
    FNS: ClassVar[Any] = VBINARY_COST

    def _check_own(self) -> None:
        _req(self, isinstance(self.reverse, bool), "reverse must be a bool")

    def text(self) -> str:
        args = f"{_fmt(self.scalar)}, {self.src}" if self.reverse else f"{self.src}, {_fmt(self.scalar)}"
        return f"v{self.fn}s {self.dst} <- {args} {self.dtype}" + _count_text(self)


@dataclass(frozen=True)
class VUnary(VectorInstr):
    fn: str
    dst: Mem
    src: Mem
    count: Optional[Operand]  # None when `rep` gives the repeats
    dtype: str
    rep: Optional[VRepeat] = None
    OP: ClassVar[str] = "vunary"
    SPEC: ClassVar[InstrSpec] = vector("elementwise", W("dst"), R("src"))
    FNS: ClassVar[Any] = VUNARY_COST

    def text(self) -> str:
        return f"v{self.fn} {self.dst} <- {self.src} {self.dtype}" + _count_text(self)


@dataclass(frozen=True)
class VCompare(VectorInstr):
    """dst (bool bytes) = fn(a, b); b is a UB operand or a scalar."""

    fn: str
    dst: Mem
    a: Mem
    b: Union[Mem, ScalarValue]
    count: Operand
    dtype: str
    OP: ClassVar[str] = "vcompare"
    SPEC: ClassVar[InstrSpec] = vector("elementwise", W("dst", elem="bool"), R("a"), R("b"))
    FNS: ClassVar[Any] = VCOMPARE_FNS
    FN_KIND: ClassVar[str] = "comparison"

    def text(self) -> str:
        return f"vcmp_{self.fn} {self.dst} <- {self.a}, {_fmt(self.b)} {self.dtype} count={self.count}"


@dataclass(frozen=True)
class VSelect(VectorInstr):
    """dst = mask ? a : b (mask: bool bytes in UB; a, b: UB operands or scalars)."""

    dst: Mem
    mask: Mem
    a: Union[Mem, ScalarValue]
    b: Union[Mem, ScalarValue]
    count: Operand
    dtype: str
    OP: ClassVar[str] = "vselect"
    SPEC: ClassVar[InstrSpec] = vector("elementwise", W("dst"), R("mask", elem="bool"), R("a"), R("b"))

    def text(self) -> str:
        return f"vselect {self.dst} <- {self.mask} ? {_fmt(self.a)} : {_fmt(self.b)} {self.dtype} count={self.count}"


@dataclass(frozen=True)
class VCast(VectorInstr):
    """dst = src converted; float->int uses `round` (trunc matches numpy's astype)."""

    dst: Mem
    src: Mem
    count: Operand
    src_dtype: str
    dst_dtype: str
    round: str = "trunc"
    OP: ClassVar[str] = "vcast"
    SPEC: ClassVar[InstrSpec] = vector("elementwise", W("dst", elem="dst_dtype"), R("src", elem="src_dtype"))
    DTYPE_FIELDS: ClassVar[tuple[str, ...]] = ("src_dtype", "dst_dtype")

    def _check_own(self) -> None:
        _req(self, self.round in CAST_ROUNDING, f"round must be one of {', '.join(CAST_ROUNDING)}, got {self.round!r}")

    def text(self) -> str:
        r = f" round={self.round}" if self.round != "trunc" else ""
        return f"vcast {self.dst} <- {self.src} {self.src_dtype}->{self.dst_dtype} count={self.count}{r}"


@dataclass(frozen=True)
class VDup(VectorInstr):
    """dst[0:count] = value."""

    dst: Mem
    value: ScalarValue
    count: Optional[Operand]  # None when `rep` gives the repeats
    dtype: str
    rep: Optional[VRepeat] = None
    OP: ClassVar[str] = "vdup"
    SPEC: ClassVar[InstrSpec] = vector("elementwise", W("dst"))
    SCALARS: ClassVar[tuple[str, ...]] = ("value",)

    def text(self) -> str:
        return f"vdup {self.dst} <- {_fmt(self.value)} {self.dtype}" + _count_text(self)


@dataclass(frozen=True)
class VCopy(VectorInstr):
    dst: Mem
    src: Mem
    count: Optional[Operand]  # None when `rep` gives the repeats
    dtype: str
    rep: Optional[VRepeat] = None
    OP: ClassVar[str] = "vcopy"
    SPEC: ClassVar[InstrSpec] = vector("elementwise", W("dst"), R("src"))

    def text(self) -> str:
        return f"vcopy {self.dst} <- {self.src} {self.dtype}" + _count_text(self)


@dataclass(frozen=True)
class VReduce(VectorInstr):
    """dst[r] = fn(src[r, 0:cols]) for r < rows; source rows are src_row_stride elements apart."""

    fn: str
    dst: Mem
    src: Mem
    rows: Operand
    cols: Operand
    dtype: str
    src_row_stride: Optional[Operand] = None
    OP: ClassVar[str] = "vreduce"
    SPEC: ClassVar[InstrSpec] = vector("rows", W("dst"), R("src", rows=True))
    OPS: ClassVar[tuple[str, ...]] = ("rows", "cols", "src_row_stride")
    FNS: ClassVar[Any] = VREDUCE_FNS
    FN_KIND: ClassVar[str] = "reduction"

    def text(self) -> str:
        s = f"vreduce_{self.fn} {self.dst} <- {self.src} {self.dtype} rows={self.rows} cols={self.cols}"
        return s + _optional(self, "src_row_stride")


@dataclass(frozen=True)
class VBroadcast(VectorInstr):
    """axis=1: dst[r, c] = src[r] (one value per row); axis=0: dst[r, c] = src[c]. Rows dst_row_stride apart."""

    dst: Mem
    src: Mem
    rows: Operand
    cols: Operand
    dtype: str
    axis: int = 1
    dst_row_stride: Optional[Operand] = None
    OP: ClassVar[str] = "vbroadcast"
    SPEC: ClassVar[InstrSpec] = vector("rows", W("dst", rows=True), R("src"))
    OPS: ClassVar[tuple[str, ...]] = ("rows", "cols", "dst_row_stride")

    def _check_own(self) -> None:
        _req(self, self.axis in (0, 1), f"axis must be 0 or 1, got {self.axis!r}")

    def text(self) -> str:
        s = f"vbroadcast {self.dst} <- {self.src} {self.dtype} rows={self.rows} cols={self.cols} axis={self.axis}"
        return s + _optional(self, "dst_row_stride")


@dataclass(frozen=True)
class VTranspose(VectorInstr):
    """dst[c, r] = src[r, c] for r < rows, c < cols; source rows src_row_stride apart (default cols),
    destination rows (one per source column) dst_row_stride apart (default rows)."""

    dst: Mem
    src: Mem
    rows: Operand
    cols: Operand
    dtype: str
    src_row_stride: Optional[Operand] = None
    dst_row_stride: Optional[Operand] = None
    OP: ClassVar[str] = "vtranspose"
    SPEC: ClassVar[InstrSpec] = vector("transpose", W("dst"), R("src"))
    OPS: ClassVar[tuple[str, ...]] = ("rows", "cols", "src_row_stride", "dst_row_stride")

    def text(self) -> str:
        s = f"vtranspose {self.dst} <- {self.src} {self.dtype} rows={self.rows} cols={self.cols}"
        return s + _optional(self, "src_row_stride", "dst_row_stride")


@dataclass(frozen=True)
class VGather(VectorInstr):
    """dst[i] = the `dtype` element at UB address src + offsets[i] for i < count; `offsets` are int32 byte
    offsets in UB (element aligned), so a core gathers by indices it computed or loaded."""

    dst: Mem
    src: Mem
    offsets: Mem
    count: Operand
    dtype: str
    OP: ClassVar[str] = "vgather"
    SPEC: ClassVar[InstrSpec] = vector("gather", W("dst"), R("src"), R("offsets", elem="int32"))

    def text(self) -> str:
        return f"vgather {self.dst} <- {self.src}[{self.offsets}] {self.dtype} count={self.count}"


#: bytes of one (value, index) pair of the sort instructions, whatever the value's dtype (Ascend's layout)
SORT_PAIR_BYTES = 8
#: elements one vsort32 group sorts
SORT_GROUP = 32


@dataclass(frozen=True)
class VSort32(VectorInstr):
    """Sorts `count` elements of `src` (count a multiple of 32) in groups of 32, each group in descending order,
    every element paired with its int32 index from `idx`: `dst` holds 8-byte (value, index) pairs, the value in
    a pair's first itemsize bytes and the index in its last 4 (the chip's Sort32 layout). Within a group, equal
    values keep their index order and NaN sorts as the largest value."""

    dst: Mem
    src: Mem
    idx: Mem
    count: Operand
    dtype: str
    OP: ClassVar[str] = "vsort32"
    SPEC: ClassVar[InstrSpec] = vector("gather", W("dst", elem="int32"), R("src"), R("idx", elem="int32"))

    def _check_own(self) -> None:
        _req(self, self.dtype in ("float16", "float32"), f"sorts float16 or float32 values, got {self.dtype}")

    def text(self) -> str:
        return f"vsort32 {self.dst} <- {self.src}, {self.idx} {self.dtype} count={self.count}"


@dataclass(frozen=True)
class VMrgSort4(VectorInstr):
    """Merges up to four lists of (value, index) pairs, each sorted in descending order (vsort32's layout),
    stored one after another in `src` with `len0`..`len3` pairs (a zero length: no list), into one list in
    `dst` (the chip's MrgSort4). Equal values keep list order (list 0's first)."""

    dst: Mem
    src: Mem
    len0: Operand
    len1: Operand
    len2: Operand
    len3: Operand
    dtype: str
    OP: ClassVar[str] = "vmrgsort4"
    SPEC: ClassVar[InstrSpec] = vector("gather", W("dst", elem="int32"), R("src", elem="int32"))
    OPS: ClassVar[tuple[str, ...]] = ("len0", "len1", "len2", "len3")

    def _check_own(self) -> None:
        _req(self, self.dtype in ("float16", "float32"), f"merges float16 or float32 values, got {self.dtype}")

    def text(self) -> str:
        return (f"vmrgsort4 {self.dst} <- {self.src} {self.dtype} lengths=({self.len0}, {self.len1}, {self.len2}, "
                f"{self.len3})")
