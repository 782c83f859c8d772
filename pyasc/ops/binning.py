"""Binning and membership: np.digitize, np.histogram (compile-time bins and range), np.isin, np.choose.

digitize(x, bins, right=False): the bin index of each x, counted as the number of bins at or below it
  (right=True: below it), or above it for decreasing bins (chosen at run time by bins[0] > bins[-1]); NaN in x
  is past every increasing bin, as numpy's. int32 results (numpy: intp).
histogram(a, bins=10, range=None, density=None, weights=None): bins a compile-time int with a compile-time range
  (or a compile-time sequence of edges). The edges are numpy's own for a's dtype (np.histogram_bin_edges at
  compile time); each count compares the flattened a against every edge. Returns (counts, edges) as numpy's;
  counts are int32 (numpy: int64), weighted or density results float. Without range numpy takes the data's min
  and max: the edges would be known only at run time, refused with that reason.
bincount(x, weights=None, minlength=0): with minlength = n > 0 the counts (or summed weights) of the values
  0..n-1, each value compared against every bin (n-element rows: for a few thousand bins at most). numpy's
  result is max(x) + 1 long, which depends on the data: the kernel promises n, and the op's data_error records a
  run-time ValueError (at the call's line) where a value is n or more, or negative as numpy's own. Without
  minlength the length is only known at run time: refused with that reason. int32 counts (numpy: int64),
  float32 weighted sums (numpy: float64).
isin(element, test_elements, assume_unique=False, invert=False, *, kind=None): any equality with the (static
  size) test elements, a tensor or a list; NaN is in nothing.
choose(a, choices, out=None, mode="raise"): per element the choice a names, as a chain of `where`s; mode "clip"
  and "wrap" as numpy's; with "raise" an out-of-range index picks nothing (0) instead of raising.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from .. import dtypes
from ..errors import InferError
from ..tensor_type import TensorType
from .builder import Builder
from .common import FLOATS, fmt_shape, require_static, require_static_axis
from .numpy_composite import numpy_sugar_op
from .registry import Category, DataError


def _count(b: Builder, test: str, x: Any, bins: Any) -> Any:
    """How many bins satisfy `bins <test> x`, per element of x."""
    hit = b.op(test, bins, b.op("expand_dims", x, axis=-1))
    return b.op("sum", b.cast(hit, "int32"), axis=-1)


def _digitize(b: Builder, x: Any, bins: Any, *, right: bool = False) -> list[Any]:
    dt = b.result_type(b.dtype(x), b.dtype(bins))
    x, bins = b.cast(x, dt), b.cast(bins, dt)
    n = b.shape(bins)[0]
    if n == 0:
        return [b.op("full_like", x, fill_value=0, dtype="int32")]
    up = _count(b, "lt" if right else "le", x, bins)
    down = _count(b, "ge" if right else "gt", x, bins)
    if dt in FLOATS:
        up = b.op("where", b.op("isnan", x), b.const(n, "int32"), up)
    first, last = (b.op("reshape", b.op("slice", bins, starts=(i,), stops=(i + 1,), steps=(1,)), shape=())
                   for i in (0, n - 1))
    return [b.op("where", b.op("gt", first, last), down, up)]


def _check_digitize(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    bins = ts[1]
    if bins.ndim != 1:
        raise InferError(f"bins must be one-dimensional, got shape {fmt_shape(bins.shape)}")
    require_static_axis("digitize", bins.shape, 0)


def digitize(x, bins, right=False):  # noqa: ANN001, ANN201 - numpy's signature
    """The indices of the bins each value of x belongs to."""
    return np.digitize(x, bins, right)


# ---- histogram -------------------------------------------------------------------------------------


def _edges(a_dtype: str, bins: Any, range_: Any) -> np.ndarray:
    """numpy's bin edges for data of a_dtype (its dtype rules: float16/float32 data keep their dtype)."""
    return np.histogram_bin_edges(np.zeros(0, dtypes.to_numpy(a_dtype)), bins, range_)


def _threshold(e: np.ndarray, up: bool) -> np.ndarray:
    """Edges as float32 values t with (x >= e) == (x >= t) for every float32 x (up), or (x <= e) == (x <= t)."""
    t = e.astype(np.float32)
    wrong = (t.astype(np.float64) < e) if up else (t.astype(np.float64) > e)
    return np.where(wrong, np.nextafter(t, np.float32(np.inf if up else -np.inf)), t).astype(np.float32)


def _histogram(b: Builder, a: Any, weights: Any = None, *, bins: Any = 10, range: Any = None,  # noqa: A002
               density: Any = None) -> list[Any]:
    edges = _edges(b.dtype(a), bins, range)
    x = b.op("expand_dims", b.cast(b.op("reshape", a, shape=(-1,)), "float32"), axis=-1)
    lo = b.array(_threshold(edges[:-1], True))
    hi = _threshold(edges[1:], True)
    last = _threshold(edges[-1:], False)
    closing = np.zeros((1, len(hi)), bool)
    closing[0, -1] = True  # the last bin holds its right edge too
    below = b.op("where", b.array(closing), b.op("le", x, b.array(last)), b.op("lt", x, b.array(hi)))
    inside = b.op("bitwise_and", b.op("ge", x, lo), below)
    if weights is None:
        counts = b.op("sum", b.cast(inside, "int32"), axis=0)
    else:
        w = b.op("expand_dims", b.op("reshape", weights, shape=(-1,)), axis=-1)
        zero = b.const(False if b.dtype(w) == "bool" else 0, b.dtype(w))
        counts = b.op("sum", b.op("where", inside, w, zero), axis=0)
    if density:
        n = b.cast(counts, "float32")
        widths = b.array(np.diff(edges).astype(np.float32))
        counts = b.op("div", b.op("div", n, widths), b.op("sum", n))
    return [counts, b.array(edges.astype(dtypes.to_numpy(dtypes.narrow(edges.dtype))))]


def _check_histogram(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    a = ts[0]
    bins, range_ = attrs.get("bins", 10), attrs.get("range")
    require_static("histogram", a)
    if isinstance(bins, str):
        raise InferError(f"bins={bins!r} chooses the bins from the data, known only at run time; give an int "
                         "and range=(lo, hi), or the edges")
    if isinstance(bins, (int, np.integer)) and range_ is None:
        raise InferError("needs a compile-time range=(lo, hi) with an int bins: without one numpy takes the data's "
                         "min and max, so the edges would depend on the data; pass range=(lo, hi) or the edges")
    try:
        _edges(a.dtype, bins, range_)
    except (ValueError, TypeError) as e:
        raise InferError(str(e)) from None
    if a.dtype == "bool" or a.dtype.startswith("complex"):
        raise InferError(f"a of dtype {a.dtype} cannot be binned")


def histogram(a, bins=10, range=None, density=None, weights=None):  # noqa: A002, ANN001, ANN201
    """(counts per bin, bin edges) of a's values."""
    return np.histogram(a, bins, range, density, weights)


def _eager_histogram(a: Any, *rest: Any, has_weights: bool = False, **attrs: Any) -> Any:
    return np.histogram(a, weights=rest[0] if has_weights else None, **attrs)


# ---- isin, choose ---------------------------------------------------------------------------------------


def _isin(b: Builder, element: Any, test_elements: Any, *, assume_unique: bool = False, invert: bool = False,
          kind: Any = None) -> list[Any]:
    dt = b.result_type(b.dtype(element), b.dtype(test_elements))
    test = b.op("reshape", b.cast(test_elements, dt), shape=(-1,))
    found = b.op("any", b.op("eq", b.op("expand_dims", b.cast(element, dt), axis=-1), test), axis=-1)
    return [b.op("logical_not", found) if invert else found]


def _check_isin(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    require_static("isin", ts[1])


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):  # noqa: ANN001, ANN201
    """Whether each element is among test_elements."""
    return np.isin(element, test_elements, assume_unique=assume_unique, invert=invert, kind=kind)


def _choose(b: Builder, a: Any, *choices: Any, n_choices: int = 0, out: Any = None, mode: str = "raise") -> list[Any]:
    dt = b.result_type(*(b.dtype(c) for c in choices))
    idx = b.cast(a, "int32")
    n = len(choices)
    if mode == "clip":
        idx = b.op("minimum", b.op("maximum", idx, b.const(0, "int32")), b.const(n - 1, "int32"))
    elif mode == "wrap":
        idx = b.op("mod", idx, b.const(n, "int32"))
    result = b.const(False if dt == "bool" else 0, dt)
    for i in range(n - 1, -1, -1):
        result = b.op("where", b.op("eq", idx, b.const(i, "int32")), b.cast(choices[i], dt), result)
    return [result]


def _check_choose(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    if ts[0].dtype in FLOATS:
        raise InferError(f"the index array a must be integers, got {ts[0].dtype} (numpy: Cannot cast array data "
                         "from dtype('float') to dtype('int64') according to the rule 'safe')")
    if attrs.get("mode", "raise") not in ("raise", "clip", "wrap"):
        raise InferError(f"clipmode must be one of 'clip', 'raise', or 'wrap', got {attrs.get('mode')!r}")
    if attrs.get("out") is not None:
        raise InferError("out= is not supported in a kernel: use the result")


def choose(a, choices, out=None, mode="raise"):  # noqa: ANN001, ANN201
    """Per element, the entry of the choice array a's value names."""
    return np.choose(a, choices, out=out, mode=mode)


numpy_sugar_op("digitize", _digitize, digitize, lambda x, bins, **k: np.digitize(x, bins, **k),
               tensor_params=("x", "bins"), numpy_names=("digitize",), check=_check_digitize,
               category=Category.OPAQUE)
numpy_sugar_op("histogram", _histogram, histogram, _eager_histogram, category=Category.OPAQUE,
               tensor_params=("a", "weights"), optional=("weights",), numpy_names=("histogram",),
               check=_check_histogram, returns_sequence=True)
def _bincount(b: Builder, x: Any, weights: Any = None, *, minlength: int = 0) -> list[Any]:
    hit = b.op("eq", b.op("expand_dims", b.cast(x, "int32"), axis=-1),
               b.array(np.arange(minlength, dtype=np.int32)))                          # (n, minlength)
    if weights is None:
        return [b.op("sum", b.cast(hit, "int32"), axis=0)]
    w = b.cast(weights, b.float_dtype(b.dtype(weights)) if b.dtype(weights) != "float16" else "float32")
    return [b.op("sum", b.op("where", hit, b.op("expand_dims", w, axis=-1), b.const(0, b.dtype(w))), axis=0)]


def _past_the_bins(b: Builder, x: Any, *_: Any, minlength: int = 0, **__: Any) -> Any:
    """True for a value the kernel's minlength bins cannot count: negative (numpy's ValueError) or minlength or
    more (numpy would lengthen its result)."""
    xi = b.cast(x, "int32")
    return b.op("bitwise_or", b.op("lt", xi, b.const(0, "int32")), b.op("ge", xi, b.const(minlength, "int32")))


_PAST_THE_BINS = DataError("ValueError", "np.bincount: a value is negative or at least minlength (numpy would make "
                           "its result longer than minlength; a kernel's result has minlength bins)", _past_the_bins)


def _check_bincount(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    x = ts[0]
    if x.ndim != 1:
        raise InferError(f"object too deep for desired array: x must be 1-d, got shape {fmt_shape(x.shape)}")
    if not dtypes.is_int(x.dtype) and x.dtype != "bool":
        raise InferError(f"Cannot cast array data from dtype('{x.dtype}') to dtype('int64') according to the rule "
                         "'safe'")
    if len(ts) > 1 and tuple(ts[1].shape) != tuple(x.shape):
        raise InferError("The weights and list don't have the same length.")
    n = attrs.get("minlength", 0)
    if n is None or isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise InferError(f"minlength must be an int, got {n!r}")
    if n < 0:
        raise InferError("'minlength' must not be negative")
    if n == 0:
        raise InferError("the result is max(x) + 1 long, known only at run time; a kernel's shapes are fixed when "
                         "it compiles: give minlength=n (the number of bins; a value n or more is a ValueError "
                         "at run time)")
    require_static("bincount", x)


def bincount(x, weights=None, minlength=0):  # noqa: ANN001, ANN201 - numpy's signature
    """The number of occurrences (or summed weights) of each value 0..minlength-1 in x."""
    return np.bincount(x, weights, minlength)


numpy_sugar_op("bincount", _bincount, bincount,
               lambda x, weights=None, minlength=0: np.bincount(x, weights, minlength)[:minlength],
               category=Category.OPAQUE, tensor_params=("x", "weights"), optional=("weights",),
               numpy_names=("bincount",), check=_check_bincount, unpromoted=("x", "weights"),
               data_error=_PAST_THE_BINS)
numpy_sugar_op("isin", _isin, isin, lambda e, t, **k: np.isin(e, t, **k), tensor_params=("element", "test_elements"),
               numpy_names=("isin",), check=_check_isin, category=Category.OPAQUE, unpromoted=("test_elements",))
numpy_sugar_op("choose", _choose, choose, lambda a, *cs, n_choices=0, **k: np.choose(a, list(cs), **k),
               tensor_params=("a",), variadic="choices", numpy_names=("choose",), check=_check_choose,
               unpromoted=("a",))
