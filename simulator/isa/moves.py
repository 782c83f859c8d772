"""Data-move and cube instructions: copies, ND->NZ, L1->L0, bias table, mmad, FixPipe."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional

from .base import (
    COPY_PATHS, CUBE_DTYPES, Instr, Mem, Operand, _check_dtype, _check_mem, _check_mems, _check_ops, _fmt,
    _optional, _req,
)


def _check_cube_dtype(instr: Instr) -> None:
    _check_dtype(instr, "dtype")
    _req(instr, instr.dtype in CUBE_DTYPES, f"cube dtype must be one of {', '.join(CUBE_DTYPES)}")


# --------------------------------------------------------------------------- data moves


@dataclass(frozen=True)
class Copy(Instr):
    """Blocked data move: `nburst` bursts of `burst` elements; strides (elements) between burst starts.

    Paths: GM->UB (MTE2), UB->GM (MTE3), GM->L1 (MTE2). Without `pad`, the
    burst must be a whole number of 32-byte blocks (hardware would silently
    round it down). With `pad`, any length is allowed: when loading, each
    burst's destination is padded up to 32 bytes with `pad_value`; when
    storing, only `burst` elements are written to GM.
    """

    dst: Mem
    src: Mem
    dtype: str
    burst: Operand
    nburst: Operand = 1
    src_stride: Optional[Operand] = None
    dst_stride: Optional[Operand] = None
    pad: bool = False
    pad_value: float = 0.0
    OP: ClassVar[str] = "copy"

    @property
    def pipe(self) -> str:
        return COPY_PATHS.get((self.src.space, self.dst.space), ("MTE2", ""))[0]

    @property
    def path(self) -> str:
        return COPY_PATHS[(self.src.space, self.dst.space)][1]

    def check(self, core_type: str) -> None:
        _req(self, isinstance(self.src, Mem) and isinstance(self.dst, Mem), "src and dst must be Mem operands")
        key = (self.src.space, self.dst.space)
        _req(self, key in COPY_PATHS,
             f"no data path {key[0]}->{key[1]}; paths are "
             + ", ".join(f"{a}->{b}" for a, b in COPY_PATHS))
        super().check(core_type)
        _check_dtype(self, "dtype")
        _check_ops(self, "burst", "nburst", "src_stride", "dst_stride")
        _req(self, isinstance(self.pad, bool), f"pad must be a bool, got {self.pad!r}")
        _req(self, isinstance(self.pad_value, (int, float)) and not isinstance(self.pad_value, bool),
             f"pad_value must be a number, got {self.pad_value!r}")

    def text(self) -> str:
        s = f"copy {self.dst} <- {self.src} {self.dtype} burst={self.burst}"
        if self.nburst != 1:
            s += f" nburst={self.nburst}"
        s += _optional(self, "src_stride", "dst_stride")
        if self.pad:
            s += f" pad={_fmt(float(self.pad_value))}"
        return s


@dataclass(frozen=True)
class CopyNd2Nz(Instr):
    """GM (row-major rows x cols, row stride in elements) -> L1 in FRACTAL_NZ, zero-padded to whole fractals.

    The L1 image is (ceil(cols/c0), ceil(rows/16)*16, c0) elements with
    c0 = 32 bytes / itemsize, contiguous from the destination address.
    """

    dst: Mem
    src: Mem
    dtype: str
    rows: Operand
    cols: Operand
    src_row_stride: Optional[Operand] = None
    OP: ClassVar[str] = "copy_nd2nz"
    PIPE: ClassVar[str] = "MTE2"

    def check(self, core_type: str) -> None:
        super().check(core_type)
        _check_mems(self, dst="L1", src="GM")
        _check_cube_dtype(self)
        _check_ops(self, "rows", "cols", "src_row_stride")

    def text(self) -> str:
        s = f"copy_nd2nz {self.dst} <- {self.src} {self.dtype} rows={self.rows} cols={self.cols}"
        return s + _optional(self, "src_row_stride")


@dataclass(frozen=True)
class LoadL0(Instr):
    """MTE1: an NZ matrix (rows x cols, fractal-padded) in L1 -> L0A (as A, ZZ) or L0B (as B, ZN).

    With `transpose`, the matrix loaded is the transpose of the L1 matrix (fp16 only).
    """

    dst: Mem
    src: Mem
    dtype: str
    rows: Operand
    cols: Operand
    transpose: bool = False
    OP: ClassVar[str] = "load_l0"
    PIPE: ClassVar[str] = "MTE1"

    def check(self, core_type: str) -> None:
        super().check(core_type)
        _check_mems(self, dst=("L0A", "L0B"), src="L1")
        _check_cube_dtype(self)
        _check_ops(self, "rows", "cols")
        _req(self, isinstance(self.transpose, bool), "transpose must be a bool")
        _req(self, not self.transpose or self.dtype == "float16",
             f"transpose on load is supported for float16 fractals only, got {self.dtype}")

    def text(self) -> str:
        t = " transpose" if self.transpose else ""
        return f"load_l0 {self.dst} <- {self.src} {self.dtype} rows={self.rows} cols={self.cols}{t}"


@dataclass(frozen=True)
class LoadBias(Instr):
    """MTE1: `count` float32 values L1 -> bias table."""

    dst: Mem
    src: Mem
    count: Operand
    dtype: str = "float32"
    OP: ClassVar[str] = "load_bias"
    PIPE: ClassVar[str] = "MTE1"

    def check(self, core_type: str) -> None:
        super().check(core_type)
        _check_mems(self, dst="BT", src="L1")
        _req(self, self.dtype == "float32", f"bias dtype must be float32, got {self.dtype!r}")
        _check_ops(self, "count")

    def text(self) -> str:
        return f"load_bias {self.dst} <- {self.src} count={self.count}"


@dataclass(frozen=True)
class Mmad(Instr):
    """Cube: L0C (m x n, NZ, fp32/int32) = [L0C if accumulate] + A(m x k, L0A) @ B(k x n, L0B) [+ bias].

    `bias` (a BT operand, n float32 values broadcast over rows) applies when
    not accumulating. Cost: fractal blocks of the padded sizes.
    """

    dst: Mem
    a: Mem
    b: Mem
    m: Operand
    k: Operand
    n: Operand
    dtype: str
    accumulate: Operand = 0
    bias: Optional[Mem] = None
    OP: ClassVar[str] = "mmad"
    PIPE: ClassVar[str] = "M"

    def check(self, core_type: str) -> None:
        super().check(core_type)
        _check_mems(self, dst="L0C", a="L0A", b="L0B")
        if self.bias is not None:
            _check_mem(self, "bias", "BT")
        _check_cube_dtype(self)
        _check_ops(self, "m", "k", "n", "accumulate")

    def text(self) -> str:
        s = f"mmad {self.dst} <- {self.a} @ {self.b} {self.dtype} m={self.m} k={self.k} n={self.n}"
        if self.accumulate != 0:
            s += f" accumulate={self.accumulate}"
        return s + _optional(self, "bias")


@dataclass(frozen=True)
class FixPipe(Instr):
    """FIX: L0C (m x n NZ) -> GM row-major, optional ReLU, cast to dst_dtype; rows dst_row_stride apart."""

    dst: Mem
    src: Mem
    m: Operand
    n: Operand
    dst_dtype: str
    src_dtype: str = "float32"
    relu: bool = False
    dst_row_stride: Optional[Operand] = None
    OP: ClassVar[str] = "fixpipe"
    PIPE: ClassVar[str] = "FIX"

    def check(self, core_type: str) -> None:
        super().check(core_type)
        _check_mems(self, dst="GM", src="L0C")
        _check_dtype(self, "dst_dtype")
        _req(self, self.src_dtype in ("float32", "int32"), f"src_dtype must be float32 or int32, got {self.src_dtype!r}")
        allowed = ("float32", "float16") if self.src_dtype == "float32" else ("int32", "float32", "float16")
        _req(self, self.dst_dtype in allowed,
             f"cannot convert {self.src_dtype} to {self.dst_dtype} on the way out; allowed: {', '.join(allowed)}")
        _check_ops(self, "m", "n", "dst_row_stride")
        _req(self, isinstance(self.relu, bool), "relu must be a bool")

    def text(self) -> str:
        s = f"fixpipe {self.dst} <- {self.src} {self.src_dtype}->{self.dst_dtype} m={self.m} n={self.n}"
        if self.relu:
            s += " relu"
        return s + _optional(self, "dst_row_stride")
