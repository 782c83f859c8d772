"""Tensor types: shape (static ints or symbolic dims), dtype and storage format.

`shape` is always the *logical* (user) shape; a non-ND `format` says how
the tensor is laid out in memory, and `storage_shape` derives the physical
shape from the two, so there is one fact, not two to keep in sync.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Union

from . import dtypes

FORMATS = ("ND", "FRACTAL_NZ", "NC1HWC0")


@dataclass(frozen=True)
class Sym:
    """A symbolic dimension (dynamic=True): a name, or an expression over names.

    Arithmetic with ints and other Syms builds expression text; it is only
    evaluated at launch, when the names are bound to the real sizes.
    """

    expr: str

    def __str__(self) -> str:
        return self.expr

    def __repr__(self) -> str:
        return f"Sym({self.expr!r})"

    def _bin(self, other: "Dim", op: str, swap: bool = False) -> "Dim":
        a, b = (other, self) if swap else (self, other)
        if op == "*":
            if a == 1:
                return b
            if b == 1:
                return a
        if op in ("+", "-") and b == 0:
            return a
        if op == "//" and b == 1:
            return a
        return Sym(f"({a}{op}{b})")

    def __add__(self, o: "Dim") -> "Dim":
        return self._bin(o, "+")

    def __radd__(self, o: "Dim") -> "Dim":
        return self._bin(o, "+", True)

    def __sub__(self, o: "Dim") -> "Dim":
        return self._bin(o, "-")

    def __rsub__(self, o: "Dim") -> "Dim":
        return self._bin(o, "-", True)

    def __mul__(self, o: "Dim") -> "Dim":
        return self._bin(o, "*")

    def __rmul__(self, o: "Dim") -> "Dim":
        return self._bin(o, "*", True)

    def __floordiv__(self, o: "Dim") -> "Dim":
        return self._bin(o, "//")

    def __rfloordiv__(self, o: "Dim") -> "Dim":
        return self._bin(o, "//", True)

    def evaluate(self, bindings: dict[str, int]) -> int:
        """The value of this dim once every name in it is bound to an int."""
        return int(eval(self.expr, {"__builtins__": {}}, dict(bindings)))  # expr is built only by _bin


Dim = Union[int, Sym]


def is_static_dim(d: Dim) -> bool:
    return isinstance(d, int)


@dataclass(frozen=True)
class TensorType:
    shape: tuple[Dim, ...]
    dtype: str
    format: str = "ND"

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(d) if not isinstance(d, Sym) else d for d in self.shape))
        object.__setattr__(self, "dtype", dtypes.normalize(self.dtype))
        if self.format not in FORMATS:
            raise ValueError(f"unknown format {self.format!r}; known formats are {', '.join(FORMATS)}")

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)

    @property
    def numel(self) -> int | None:
        """Element count, or None when a dim is symbolic."""
        return math.prod(self.shape) if self.is_static else None

    @property
    def itemsize(self) -> int:
        return dtypes.itemsize(self.dtype)

    @property
    def nbytes(self) -> int | None:
        n = self.numel
        return None if n is None else n * self.itemsize

    @property
    def storage_shape(self) -> tuple[Dim, ...]:
        """Physical shape for the storage format (ND: the logical shape)."""
        if self.format == "ND" or not self.is_static:
            return self.shape
        if self.format == "FRACTAL_NZ":
            # (..., M, N) -> (..., N1, M1, M0, N0) with 16x16 fractals (32 columns for 1-byte types)
            *batch, m, n = self.shape if self.ndim >= 2 else (1, *self.shape)
            n0 = 32 if self.itemsize == 1 else 16
            return (*batch, -(-n // n0), -(-m // 16), 16, n0)
        # NC1HWC0 from logical NCHW
        n_, c, h, w = self.shape
        c0 = 32 if self.itemsize == 1 else 16
        return (n_, -(-c // c0), h, w, c0)

    @property
    def storage_nbytes(self) -> int | None:
        if not self.is_static:
            return None
        return math.prod(self.storage_shape) * self.itemsize

    def with_format(self, fmt: str) -> "TensorType":
        return replace(self, format=fmt)

    def with_shape(self, shape: tuple[Dim, ...]) -> "TensorType":
        return replace(self, shape=tuple(shape))

    def with_dtype(self, dtype: str) -> "TensorType":
        return replace(self, dtype=dtype)

    def __str__(self) -> str:
        dims = ",".join(str(d) for d in self.shape)
        fmt = "" if self.format == "ND" else "{" + self.format + "}"
        return f"{dtypes.short(self.dtype)}[{dims}]{fmt}"
