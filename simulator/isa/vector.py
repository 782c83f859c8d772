"""Vector-unit instructions (UB only, pipe V)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Optional, Union

from .base import (
    VBINARY_COST, VCOMPARE_FNS, VREDUCE_FNS, VUNARY_COST, CAST_ROUNDING, FLOAT_DTYPES, INT_DTYPES,
    FLOAT_ONLY, BITWISE_ONLY, Instr, Mem, Operand, ScalarValue, _check_dtype, _check_mem, _check_ops,
    _check_scalar, _fmt, _req,
)



# --------------------------------------------------------------------------- vector


class VectorInstr(Instr):
    """Vector instructions act on UB only and run on pipe V."""

    @property
    def pipe(self) -> str:
        return "V"

    def _vcheck(self, core_type: str, mems: tuple[str, ...], dtypes: tuple[str, ...], ops: tuple[str, ...]) -> None:
        super().check(core_type)
        for m in mems:
            v = getattr(self, m)
            if isinstance(v, Mem):
                _req(self, v.space == "UB", f"{m} must be in UB, got {v.space}")
        for d in dtypes:
            _check_dtype(self, d)
        _check_ops(self, *ops)

    def _check_fn(self, table: Any, dtype: str) -> None:
        fn = getattr(self, "fn")
        _req(self, fn in table, f"unknown function {fn!r}; known: {', '.join(table)}")
        if fn in FLOAT_ONLY:
            _req(self, dtype in FLOAT_DTYPES, f"{fn} needs a float dtype, got {dtype}")
        if fn in BITWISE_ONLY:
            _req(self, dtype in INT_DTYPES, f"{fn} needs an integer or bool dtype, got {dtype}")


@dataclass(frozen=True)
class VBinary(VectorInstr):
    fn: str
    dst: Mem
    a: Mem
    b: Mem
    count: Operand
    dtype: str
    OP: ClassVar[str] = "vbinary"

    def check(self, core_type: str) -> None:
        self._vcheck(core_type, ("dst", "a", "b"), ("dtype",), ("count",))
        _check_mem(self, "a", "UB")
        _check_mem(self, "b", "UB")
        self._check_fn(VBINARY_COST, self.dtype)

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

    def check(self, core_type: str) -> None:
        self._vcheck(core_type, ("dst", "src"), ("dtype",), ("count",))
        _check_mem(self, "src", "UB")
        _check_scalar(self.scalar, "vscalar: scalar")
        self._check_fn(VBINARY_COST, self.dtype)
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

    def check(self, core_type: str) -> None:
        self._vcheck(core_type, ("dst", "src"), ("dtype",), ("count",))
        _check_mem(self, "src", "UB")
        self._check_fn(VUNARY_COST, self.dtype)

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

    def check(self, core_type: str) -> None:
        self._vcheck(core_type, ("dst", "a", "b"), ("dtype",), ("count",))
        _check_mem(self, "a", "UB")
        if not isinstance(self.b, Mem):
            _check_scalar(self.b, "vcompare: b")
        _req(self, self.fn in VCOMPARE_FNS, f"unknown comparison {self.fn!r}; known: {', '.join(VCOMPARE_FNS)}")

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

    def check(self, core_type: str) -> None:
        self._vcheck(core_type, ("dst", "mask", "a", "b"), ("dtype",), ("count",))
        _check_mem(self, "mask", "UB")
        for n in ("a", "b"):
            if not isinstance(getattr(self, n), Mem):
                _check_scalar(getattr(self, n), f"vselect: {n}")

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

    def check(self, core_type: str) -> None:
        self._vcheck(core_type, ("dst", "src"), ("src_dtype", "dst_dtype"), ("count",))
        _check_mem(self, "src", "UB")
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

    def check(self, core_type: str) -> None:
        self._vcheck(core_type, ("dst",), ("dtype",), ("count",))
        _check_scalar(self.value, "vdup: value")

    def text(self) -> str:
        return f"vdup {self.dst} <- {_fmt(self.value)} {self.dtype} count={self.count}"


@dataclass(frozen=True)
class VCopy(VectorInstr):
    dst: Mem
    src: Mem
    count: Operand
    dtype: str
    OP: ClassVar[str] = "vcopy"

    def check(self, core_type: str) -> None:
        self._vcheck(core_type, ("dst", "src"), ("dtype",), ("count",))
        _check_mem(self, "src", "UB")

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

    def check(self, core_type: str) -> None:
        self._vcheck(core_type, ("dst", "src"), ("dtype",), ("rows", "cols", "src_row_stride"))
        _check_mem(self, "src", "UB")
        _req(self, self.fn in VREDUCE_FNS, f"unknown reduction {self.fn!r}; known: {', '.join(VREDUCE_FNS)}")

    def text(self) -> str:
        s = f"vreduce_{self.fn} {self.dst} <- {self.src} {self.dtype} rows={self.rows} cols={self.cols}"
        if self.src_row_stride is not None:
            s += f" src_row_stride={self.src_row_stride}"
        return s


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

    def check(self, core_type: str) -> None:
        self._vcheck(core_type, ("dst", "src"), ("dtype",), ("rows", "cols", "dst_row_stride"))
        _check_mem(self, "src", "UB")
        _req(self, self.axis in (0, 1), f"axis must be 0 or 1, got {self.axis!r}")

    def text(self) -> str:
        s = f"vbroadcast {self.dst} <- {self.src} {self.dtype} rows={self.rows} cols={self.cols} axis={self.axis}"
        if self.dst_row_stride is not None:
            s += f" dst_row_stride={self.dst_row_stride}"
        return s


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

    def check(self, core_type: str) -> None:
        self._vcheck(core_type, ("dst", "src"), ("dtype",), ("rows", "cols", "src_row_stride", "dst_row_stride"))
        _check_mem(self, "src", "UB")

    def text(self) -> str:
        s = f"vtranspose {self.dst} <- {self.src} {self.dtype} rows={self.rows} cols={self.cols}"
        if self.src_row_stride is not None:
            s += f" src_row_stride={self.src_row_stride}"
        if self.dst_row_stride is not None:
            s += f" dst_row_stride={self.dst_row_stride}"
        return s
