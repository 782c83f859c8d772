"""Vector-unit instructions (UB only, pipe V)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Optional, Union

from .base import (
    VBINARY_COST, VCOMPARE_FNS, VREDUCE_FNS, VUNARY_COST, CAST_ROUNDING, FLOAT_DTYPES, INT_DTYPES,
    FLOAT_ONLY, BITWISE_ONLY, Instr, Mem, Operand, ScalarValue, _check_dtype, _check_mem, _check_ops,
    _check_scalar, _fmt, _optional, _req,
)


# --------------------------------------------------------------------------- vector


class VectorInstr(Instr):
    """Vector instructions act on UB only and run on pipe V.

    A subclass declares the kinds of its operands and check() applies their rules, in this
    order: UB operands (dst, UB_SRCS, EITHER when a Mem) are in UB; DTYPE_FIELDS name dtypes;
    OPS are integer operands; UB_SRCS are Mem operands; SCALARS (and EITHER when not a Mem) are
    scalars; `fn` is a key of FNS (a `FN_KIND`) valid for the dtype; then _check_own().
    """

    PIPE: ClassVar[str] = "V"
    UB_SRCS: ClassVar[tuple[str, ...]] = ("src",)
    EITHER: ClassVar[tuple[str, ...]] = ()  # a UB operand or a scalar
    SCALARS: ClassVar[tuple[str, ...]] = ()
    DTYPE_FIELDS: ClassVar[tuple[str, ...]] = ("dtype",)
    OPS: ClassVar[tuple[str, ...]] = ("count",)
    FNS: ClassVar[Any] = None
    FN_KIND: ClassVar[str] = "function"

    def check(self, core_type: str) -> None:
        super().check(core_type)
        for m in ("dst",) + self.UB_SRCS + self.EITHER:
            v = getattr(self, m)
            if isinstance(v, Mem):
                _req(self, v.space == "UB", f"{m} must be in UB, got {v.space}")
        for d in self.DTYPE_FIELDS:
            _check_dtype(self, d)
        _check_ops(self, *self.OPS)
        for m in self.UB_SRCS:
            _check_mem(self, m, "UB")
        for n in self.SCALARS + self.EITHER:
            v = getattr(self, n)
            if n in self.SCALARS or not isinstance(v, Mem):
                _check_scalar(v, f"{self.OP}: {n}")
        if self.FNS is not None:
            self._check_fn()
        self._check_own()

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
    count: Operand
    dtype: str
    OP: ClassVar[str] = "vbinary"
    UB_SRCS: ClassVar[tuple[str, ...]] = ("a", "b")
    FNS: ClassVar[Any] = VBINARY_COST

    def text(self) -> str:
        return f"v{self.fn} {self.dst} <- {self.a}, {self.b} {self.dtype} count={self.count}"


@dataclass(frozen=True)
class VScalar(VectorInstr):
    """dst = fn(src, scalar) (or fn(scalar, src) with reverse)."""

    fn: str
    dst: Mem
    src: Mem
    scalar: ScalarValue
    count: Operand
    dtype: str
    reverse: bool = False
    OP: ClassVar[str] = "vscalar"
    SCALARS: ClassVar[tuple[str, ...]] = ("scalar",)
    FNS: ClassVar[Any] = VBINARY_COST

    def _check_own(self) -> None:
        _req(self, isinstance(self.reverse, bool), "reverse must be a bool")

    def text(self) -> str:
        args = f"{_fmt(self.scalar)}, {self.src}" if self.reverse else f"{self.src}, {_fmt(self.scalar)}"
        return f"v{self.fn}s {self.dst} <- {args} {self.dtype} count={self.count}"


@dataclass(frozen=True)
class VUnary(VectorInstr):
    fn: str
    dst: Mem
    src: Mem
    count: Operand
    dtype: str
    OP: ClassVar[str] = "vunary"
    FNS: ClassVar[Any] = VUNARY_COST

    def text(self) -> str:
        return f"v{self.fn} {self.dst} <- {self.src} {self.dtype} count={self.count}"


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
    UB_SRCS: ClassVar[tuple[str, ...]] = ("a",)
    EITHER: ClassVar[tuple[str, ...]] = ("b",)
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
    UB_SRCS: ClassVar[tuple[str, ...]] = ("mask",)
    EITHER: ClassVar[tuple[str, ...]] = ("a", "b")

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
    count: Operand
    dtype: str
    OP: ClassVar[str] = "vdup"
    UB_SRCS: ClassVar[tuple[str, ...]] = ()
    SCALARS: ClassVar[tuple[str, ...]] = ("value",)

    def text(self) -> str:
        return f"vdup {self.dst} <- {_fmt(self.value)} {self.dtype} count={self.count}"


@dataclass(frozen=True)
class VCopy(VectorInstr):
    dst: Mem
    src: Mem
    count: Operand
    dtype: str
    OP: ClassVar[str] = "vcopy"

    def text(self) -> str:
        return f"vcopy {self.dst} <- {self.src} {self.dtype} count={self.count}"


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
    OPS: ClassVar[tuple[str, ...]] = ("rows", "cols", "src_row_stride", "dst_row_stride")

    def text(self) -> str:
        s = f"vtranspose {self.dst} <- {self.src} {self.dtype} rows={self.rows} cols={self.cols}"
        return s + _optional(self, "src_row_stride", "dst_row_stride")
