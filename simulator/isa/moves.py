"""Data-move and cube instructions: copies, ND->NZ, L1->L0, bias table, mmad, FixPipe."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, Optional

from .spec import InstrSpec, R, W, move
from .base import (
    COPY_PATHS, CUBE_DTYPES, Instr, Mem, Operand, ScalarValue, _check_dtype, _check_ops, _check_scalar, _fmt,
    _optional, _req, itemsize,
)


def _copy_gm_rows(a: Mapping[str, Any]) -> tuple[int, int]:
    """A copy's GM side: nburst rows, the GM-side stride apart (default: back to back)."""
    stride = a["src_stride"] if a["src"] == "GM" else a["dst_stride"]
    return a["nburst"], (stride if stride is not None else a["burst"]) * itemsize(a["dtype"])


def _fixpipe_gm_rows(a: Mapping[str, Any]) -> tuple[int, int]:
    """A FixPipe's GM side, as the timing model moves it: m rows dst_row_stride (default n) elements apart, or
    in NZ one burst per 16-column panel, the panels dst_row_stride (default m) rows of 16 apart."""
    size, stride = itemsize(a["dst_dtype"]), a["dst_row_stride"]
    if a["nz"]:
        return -(-a["n"] // 16), (stride if stride is not None else a["m"]) * 16 * size
    return a["m"], (stride if stride is not None else a["n"]) * size


def _rows_cols_bytes(a: Mapping[str, Any], chip: Any) -> int:
    return a["rows"] * a["cols"] * itemsize(a["dtype"])


def _load3d_bytes(a: Mapping[str, Any], chip: Any) -> int:
    """The L0 image written: m_len rows (whole fractals) of k_len columns (defaults: the whole matrix is not
    known without the feature map's output size, so the cost model charges only explicit lengths)."""
    c0 = chip.fractal_c0(itemsize(a["dtype"]))
    rows = -(-(a["m_len"] or chip.cube_block) // chip.cube_block) * chip.cube_block
    return rows * (a["k_len"] or c0) * itemsize(a["dtype"])


def _check_cube_dtype(instr: Instr) -> None:
    _check_dtype(instr, "dtype")
    _req(instr, instr.dtype in CUBE_DTYPES, f"cube dtype must be one of {', '.join(CUBE_DTYPES)}")


# --------------------------------------------------------------------------- data moves


ATOMIC_OPS = {"add": ("float32", "float16", "bfloat16", "int32"), "max": ("float32", "float16", "int32"),
              "min": ("float32", "float16", "int32")}  # GM atomic store kind -> dtypes it works on


def _check_atomic(instr: Instr, dtype: str) -> None:
    a = instr.atomic
    if a is None:
        return
    _req(instr, a in ATOMIC_OPS, f"atomic must be one of {', '.join(ATOMIC_OPS)} or None, got {a!r}")
    _req(instr, dtype in ATOMIC_OPS[a], f"atomic {a} works on {', '.join(ATOMIC_OPS[a])}, not {dtype}")




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
    atomic: Optional[str] = None
    OP: ClassVar[str] = "copy"
    SPEC: ClassVar[InstrSpec] = move(
        "src", "dst", lambda a, chip: a["burst"] * a["nburst"] * itemsize(a["dtype"]),
        W("dst", "UB", "GM", "L1"), R("src", "GM", "UB"), gm_rows=_copy_gm_rows)

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
        _req(self, self.atomic is None or self.dst.space == "GM", "atomic applies to stores into GM only")
        _check_atomic(self, self.dtype)

    def text(self) -> str:
        s = f"copy {self.dst} <- {self.src} {self.dtype} burst={self.burst}"
        if self.nburst != 1:
            s += f" nburst={self.nburst}"
        s += _optional(self, "src_stride", "dst_stride")
        if self.pad:
            s += f" pad={_fmt(float(self.pad_value))}"
        if self.atomic:
            s += f" atomic={self.atomic}"
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
    SPEC: ClassVar[InstrSpec] = move("src", "dst", _rows_cols_bytes, W("dst", "L1"), R("src", "GM"))

    def check(self, core_type: str) -> None:
        super().check(core_type)
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
    SPEC: ClassVar[InstrSpec] = move("src", "dst", _rows_cols_bytes, W("dst", "L0A", "L0B"), R("src", "L1"))

    def check(self, core_type: str) -> None:
        super().check(core_type)
        _check_cube_dtype(self)
        _check_ops(self, "rows", "cols")
        _req(self, isinstance(self.transpose, bool), "transpose must be a bool")
        _req(self, not self.transpose or self.dtype in ("float16", "bfloat16"),
             f"transpose on load is supported for 16-bit fractals only, got {self.dtype}")

    def text(self) -> str:
        t = " transpose" if self.transpose else ""
        return f"load_l0 {self.dst} <- {self.src} {self.dtype} rows={self.rows} cols={self.cols}{t}"


@dataclass(frozen=True)
class LoadL0Fractals(Instr):
    """MTE1 (the hardware's LoadData2D): `repeat` fractals of cube_block rows x fractal_row_bytes (512 B) from
    L1, the first at fractal index `start`, each next `src_stride` fractals on; written to L0A / L0B one after
    another with `dst_gap` fractals between. `transpose` turns each fractal (16-bit types). L0A takes fractals
    as they are (row-major, ZZ); an L0B fractal must be column-major (ZN): load a row-major L1 fractal with
    transpose=True."""

    dst: Mem
    src: Mem
    dtype: str
    start: Operand
    repeat: Operand
    src_stride: Operand = 1
    dst_gap: Operand = 0
    transpose: bool = False
    OP: ClassVar[str] = "load_l0_2d"
    SPEC: ClassVar[InstrSpec] = move(
        "src", "dst", lambda a, chip: a["repeat"] * chip.cube_block * chip.fractal_row_bytes,
        W("dst", "L0A", "L0B"), R("src", "L1"))

    def check(self, core_type: str) -> None:
        super().check(core_type)
        _check_cube_dtype(self)
        _check_ops(self, "start", "repeat", "src_stride", "dst_gap")
        _req(self, isinstance(self.transpose, bool), "transpose must be a bool")
        _req(self, not self.transpose or self.dtype in ("float16", "bfloat16"),
             f"transpose on load is supported for 16-bit fractals only, got {self.dtype}")

    def text(self) -> str:
        t = " transpose" if self.transpose else ""
        return (f"load_l0_2d {self.dst} <- {self.src} {self.dtype} start={self.start} repeat={self.repeat} "
                f"src_stride={self.src_stride} dst_gap={self.dst_gap}{t}")


@dataclass(frozen=True)
class Load3D(Instr):
    """MTE1 (the hardware's LoadData3D, img2col): from a channel-blocked feature map in L1 (c1 x h x w x c0,
    c0 = fractal row bytes / itemsize) the im2col matrix A[m, k] of a kh x kw convolution (m: output position
    oh * Wo + ow; k: (c1, kh, kw, c0) in that order), rows m_start.. and columns k_start.. of it, into L0A as
    A (ZZ) or into L0B as A^T (ZN). Rows are padded to whole fractals with zeros; k_len must be whole c0."""

    dst: Mem
    src: Mem
    dtype: str
    c1: Operand
    h: Operand
    w: Operand
    kh: int
    kw: int
    stride: tuple = (1, 1)
    pad: tuple = (0, 0, 0, 0)       # top, bottom, left, right
    dilation: tuple = (1, 1)
    m_start: Operand = 0
    m_len: Optional[Operand] = None
    k_start: Operand = 0
    k_len: Optional[Operand] = None
    OP: ClassVar[str] = "load3d"
    SPEC: ClassVar[InstrSpec] = move("src", "dst", _load3d_bytes, W("dst", "L0A", "L0B"), R("src", "L1"))

    def __post_init__(self) -> None:
        for name in ("stride", "pad", "dilation"):  # JSON gives lists
            object.__setattr__(self, name, tuple(getattr(self, name)))

    def check(self, core_type: str) -> None:
        super().check(core_type)
        _check_cube_dtype(self)
        _check_ops(self, "c1", "h", "w", "m_start", "m_len", "k_start", "k_len")
        for name, n, low in (("stride", 2, 1), ("pad", 4, 0), ("dilation", 2, 1)):
            v = getattr(self, name)
            _req(self, len(v) == n and all(isinstance(x, int) and not isinstance(x, bool) and x >= low for x in v),
                 f"{name} must be {n} integers >= {low}, got {v!r}")
        for name in ("kh", "kw"):
            v = getattr(self, name)
            _req(self, isinstance(v, int) and not isinstance(v, bool) and v >= 1,
                 f"{name} must be a positive integer, got {v!r}")

    def text(self) -> str:
        s = (f"load3d {self.dst} <- {self.src} {self.dtype} c1={self.c1} h={self.h} w={self.w} k={self.kh}x{self.kw}"
             f" stride={self.stride} pad={self.pad} dilation={self.dilation} m_start={self.m_start}"
             f" k_start={self.k_start}")
        return s + _optional(self, "m_len", "k_len")


@dataclass(frozen=True)
class LoadBias(Instr):
    """MTE1: `count` float32 values L1 -> bias table."""

    dst: Mem
    src: Mem
    count: Operand
    dtype: str = "float32"
    OP: ClassVar[str] = "load_bias"
    SPEC: ClassVar[InstrSpec] = move("src", "dst", lambda a, chip: a["count"] * 4, W("dst", "BT"), R("src", "L1"))

    def check(self, core_type: str) -> None:
        super().check(core_type)
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
    SPEC: ClassVar[InstrSpec] = InstrSpec("M", unit="cube", mems=(
        W("dst", "L0C", read_when="accumulate"), R("a", "L0A"), R("b", "L0B"), R("bias", "BT", elem="float32")))

    def check(self, core_type: str) -> None:
        super().check(core_type)
        _check_cube_dtype(self)
        _check_ops(self, "m", "k", "n", "accumulate")

    def text(self) -> str:
        s = f"mmad {self.dst} <- {self.a} @ {self.b} {self.dtype} m={self.m} k={self.k} n={self.n}"
        if self.accumulate != 0:
            s += f" accumulate={self.accumulate}"
        return s + _optional(self, "bias")


# FixPipe conversions: L0C dtype -> GM dtypes (int8 needs a quantisation scale)
FIXPIPE_CONVERSIONS = {
    "float32": ("float32", "float16", "bfloat16", "int8"),
    "int32": ("int32", "float32", "float16", "int8"),
}


@dataclass(frozen=True)
class FixPipe(Instr):
    """FIX: L0C (m x n NZ) -> GM, row-major (rows dst_row_stride apart) or NZ (`nz`: 16-column panels of
    dst_row_stride rows, default m), on the way: times `scale` (a number) or the per-channel float32 scales
    at `scale_l1` (n values in L1), ReLU, and the cast to dst_dtype (int8 saturates); `atomic` adds (or maxes)
    into GM instead of storing."""

    dst: Mem
    src: Mem
    m: Operand
    n: Operand
    dst_dtype: str
    src_dtype: str = "float32"
    relu: bool = False
    dst_row_stride: Optional[Operand] = None
    scale: Optional[ScalarValue] = None
    scale_l1: Optional[Mem] = None
    nz: bool = False
    atomic: Optional[str] = None
    OP: ClassVar[str] = "fixpipe"
    SPEC: ClassVar[InstrSpec] = move(
        "src", "dst", lambda a, chip: a["m"] * a["n"] * itemsize(a["dst_dtype"]),
        W("dst", "GM", elem="dst_dtype"), R("src", "L0C", elem="src_dtype"), R("scale_l1", "L1", elem="float32"),
        gm_rows=_fixpipe_gm_rows)

    def check(self, core_type: str) -> None:
        super().check(core_type)
        _check_dtype(self, "dst_dtype")
        _req(self, self.src_dtype in FIXPIPE_CONVERSIONS,
             f"src_dtype must be float32 or int32, got {self.src_dtype!r}")
        allowed = FIXPIPE_CONVERSIONS[self.src_dtype]
        _req(self, self.dst_dtype in allowed,
             f"cannot convert {self.src_dtype} to {self.dst_dtype} on the way out; allowed: {', '.join(allowed)}")
        _req(self, self.scale is None or self.scale_l1 is None, "give scale or scale_l1, not both")
        if self.scale is not None:
            _check_scalar(self.scale, f"{self.OP}: scale")
        _req(self, self.dst_dtype != "int8" or self.scale is not None or self.scale_l1 is not None,
             "quantising to int8 needs a scale (scale=... or scale_l1=...)")
        _req(self, not (self.src_dtype == "int32" and self.dst_dtype == "int32"
                        and (self.scale is not None or self.scale_l1 is not None)),
             "an int32 -> int32 copy takes no scale")
        _check_ops(self, "m", "n", "dst_row_stride")
        _req(self, isinstance(self.relu, bool), "relu must be a bool")
        _req(self, isinstance(self.nz, bool), "nz must be a bool")
        _check_atomic(self, self.dst_dtype)

    def text(self) -> str:
        s = f"fixpipe {self.dst} <- {self.src} {self.src_dtype}->{self.dst_dtype} m={self.m} n={self.n}"
        if self.relu:
            s += " relu"
        if self.scale is not None:
            s += f" scale={_fmt(self.scale)}"
        s += _optional(self, "scale_l1", "dst_row_stride")
        if self.nz:
            s += " nz"
        if self.atomic:
            s += f" atomic={self.atomic}"
        return s
