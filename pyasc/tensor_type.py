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
from . import symbolic as sy

FORMATS = ("ND", "FRACTAL_NZ", "NC1HWC0")


class Sym:
    """A symbolic dimension (dynamic=True): a `pyasc.symbolic` expression over named sizes.

    `Sym("x_d0")` is the size itself; arithmetic with ints and other Syms (+ - * // %, and
    `ceildiv`/`min_`/`max_` below) builds a simplified expression with the same algebra the tiler
    and the host code use, and folds back to an int when it can (`Sym("n") - Sym("n")` is 0).
    It is only evaluated at launch, when the names are bound to the real sizes.
    """

    __slots__ = ("e",)

    def __init__(self, e: "str | sy.Expr") -> None:
        if isinstance(e, str):
            e = sy.sym(e) if e.isidentifier() else sy.parse(e)
        if not isinstance(e, sy.Expr):
            raise TypeError(f"a symbolic dim is an expression over names, got {e!r} (use the int itself)")
        object.__setattr__(self, "e", e)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Sym is immutable")

    @property
    def expr(self) -> str:
        """The expression's text ("x_d0", "x_d1 - 5", "min(x_d0, 8)")."""
        return str(self.e)

    @property
    def is_name(self) -> bool:
        """Whether this dim is one input size itself (not an expression over sizes)."""
        return self.e.op == "sym"

    @property
    def free_symbols(self) -> frozenset[str]:
        return sy.free_symbols(self.e)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sym) and other.e == self.e

    def __hash__(self) -> int:
        return hash(("Sym", self.e))

    def __reduce__(self) -> tuple:
        return (Sym, (self.expr,))

    def __str__(self) -> str:
        return self.expr

    def __repr__(self) -> str:
        return f"Sym({self.expr!r})"

    def __add__(self, o: "Dim") -> "Dim":
        return wrap(sy.add(self.e, unwrap(o)))

    __radd__ = __add__

    def __sub__(self, o: "Dim") -> "Dim":
        return wrap(sy.add(self.e, sy.mul(-1, unwrap(o))))

    def __rsub__(self, o: "Dim") -> "Dim":
        return wrap(sy.add(unwrap(o), sy.mul(-1, self.e)))

    def __mul__(self, o: "Dim") -> "Dim":
        return wrap(sy.mul(self.e, unwrap(o)))

    __rmul__ = __mul__

    def __neg__(self) -> "Dim":
        return wrap(sy.mul(-1, self.e))

    def __floordiv__(self, o: "Dim") -> "Dim":
        return wrap(sy.floordiv(self.e, unwrap(o)))

    def __rfloordiv__(self, o: "Dim") -> "Dim":
        return wrap(sy.floordiv(unwrap(o), self.e))

    def __mod__(self, o: "Dim") -> "Dim":
        return wrap(sy.mod(self.e, unwrap(o)))

    def __rmod__(self, o: "Dim") -> "Dim":
        return wrap(sy.mod(unwrap(o), self.e))

    def evaluate(self, bindings: "dict[str, int]") -> int:
        """The value of this dim once every name in it is bound to an int (UnboundSymbolError otherwise)."""
        try:
            return sy.evaluate(self.e, bindings)
        except sy.UnboundSymbolError as e:
            raise NameError(str(e)) from None  # callers treat "a name no input binds" as NameError


def unwrap(d: object) -> "sy.IntLike":
    """A dim (int or Sym) as a `pyasc.symbolic` value."""
    if isinstance(d, Sym):
        return d.e
    if isinstance(d, sy.Expr):
        return d
    return sy._check(d, "dim")


def wrap(v: "sy.IntLike") -> "Dim":
    """A `pyasc.symbolic` value as a dim: an int stays an int, an expression becomes a Sym."""
    return Sym(v) if isinstance(v, sy.Expr) else int(v)


def ceildiv(a: "Dim", b: "Dim") -> "Dim":
    return wrap(sy.ceildiv(unwrap(a), unwrap(b)))


def min_(*dims: "Dim") -> "Dim":
    return wrap(sy.min_(*(unwrap(d) for d in dims)))


def max_(*dims: "Dim") -> "Dim":
    return wrap(sy.max_(*(unwrap(d) for d in dims)))


Dim = Union[int, Sym]


def _dim(d: object) -> Dim:
    if isinstance(d, Sym):
        return d
    if isinstance(d, sy.Expr):
        return Sym(d)
    return int(d)  # type: ignore[call-overload] - numpy ints and plain ints


def is_static_dim(d: Dim) -> bool:
    return isinstance(d, int)


@dataclass(frozen=True)
class TensorType:
    shape: tuple[Dim, ...]
    dtype: str
    format: str = "ND"

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(_dim(d) for d in self.shape))
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
