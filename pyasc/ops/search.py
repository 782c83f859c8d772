"""argmax / argmin (int32 indices, numpy's first-index tie rule) and take (a gather along an axis).

argmax(a, axis=None, keepdims=False): m = max(a) along the axis; the answer is the smallest index
where a == m (or a is NaN: numpy returns the first NaN), found as min(where(hit, iota, n)) with
iota a constant (1, .., n, .., 1). argmin likewise with min. axis=None: of the flattened tensor.
numpy returns int64; pyasc narrows to int32 (like every 64-bit result). The reduced axis must have
a static size (the iota is a constant).

take(a, indices, axis=None) / `a[ids]` / `a[:, ids]`: the result is a.shape[:axis] + indices.shape +
a.shape[axis+1:]. Negative indices count from the end, as in numpy; an index out of range (numpy
raises IndexError at run time, which a kernel cannot) selects zeros. The gather is a one-hot
product: onehot[i, j] = (indices[i] == j) over the n rows of the axis,
- float tables: a matmul onehot @ table on the cube (exact: one product by 1, the rest by 0), made
  exact for inf and NaN entries too (0 * inf is NaN) by gathering the finite part and a small code
  for +inf / -inf / NaN in the same matmul and restoring them; a -0.0 entry comes back as +0.0;
- integer and bool tables: where(onehot, table, 0) summed over the rows (exact; vector unit).
The work is (number of indices) x n x (row size): fine for embedding lookups of a few positions,
not a substitute for a DMA gather over a large table. Indices that are a compile-time constant (up to
STATIC_TAKE_MAX of them, in range) are gathered as one slice per index instead, joined (joining.join).
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from .. import dtypes
from ..errors import InferError
from ..tensor_type import Sym, TensorType
from .builder import Builder
from .common import FLOATS, INTS, attr_bool, fmt_shape, normalize_axis
from .numpy_composite import numpy_composite
from .joining import join, slice_axis
from .reduce import reduce_axes
from .registry import Category


#: indices known at compile time, at most this many, are gathered as slices (each a row copy) instead
STATIC_TAKE_MAX = 16


def _iota(b: Builder, ndim: int, axis: int, n: int) -> Any:
    return b.array(np.arange(n, dtype=np.int32).reshape((1,) * axis + (n,) + (1,) * (ndim - axis - 1)))


def _arg(reduce: str):
    def body(b: Builder, a: Any, *, axis: Any = None, keepdims: bool = False) -> list[Any]:
        shape = b.shape(a)
        x = a if axis is not None and shape else b.op("reshape", a, shape=(-1,))
        ax = 0 if axis is None or not shape else normalize_axis(axis, len(shape))[0]
        xs = b.shape(x)
        n = xs[ax]
        m = b.op(reduce, x, axis=ax, keepdims=True)
        hit = b.op("eq", x, m)
        if b.dtype(x) in FLOATS:
            hit = b.op("bitwise_or", hit, b.op("ne", x, x))  # numpy: the first NaN wins
        idx = b.op("where", hit, _iota(b, len(xs), ax, n), b.const(n, "int32"))
        r = b.op("min", idx, axis=ax, keepdims=keepdims and axis is not None)
        if keepdims and axis is None:
            r = b.op("reshape", r, shape=(1,) * len(shape))
        return [r]

    return body


def _check_arg(name: str):
    def check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
        (a,) = ts
        attr_bool(attrs, "keepdims", False, name)
        axis = attrs.get("axis")
        if axis is not None and not isinstance(axis, (int, np.integer)):
            raise InferError(f"axis must be None or an int, got {axis!r}")
        axes = normalize_axis(axis, a.ndim)
        dims = [a.shape[i] for i in axes] if a.ndim else []
        if any(isinstance(d, Sym) for d in dims):
            raise InferError(f"the reduced axis of shape {fmt_shape(a.shape)} has a size only known at launch; "
                             f"{name} needs a static size")
        if a.ndim and math.prod(dims) == 0:
            raise InferError(f"attempt to get {name} of an empty sequence")

    return check


def argmax(a, axis=None, *, keepdims=False):  # noqa: ANN001, ANN201 - the public signature
    """Index of the largest element along `axis` (None: of the flattened tensor); the first one on ties."""
    return np.argmax(a, axis=axis, keepdims=keepdims)


def argmin(a, axis=None, *, keepdims=False):  # noqa: ANN001, ANN201
    """Index of the smallest element along `axis` (None: of the flattened tensor); the first one on ties."""
    return np.argmin(a, axis=axis, keepdims=keepdims)


def _arg_eager(fn: Any):
    def eager(a: Any, *, axis: Any = None, keepdims: bool = False) -> Any:
        return fn(a, axis=axis, keepdims=keepdims)

    return eager


for _api, _red in ((argmax, "max"), (argmin, "min")):
    numpy_composite(_api.__name__, _arg(_red), _api, _arg_eager(getattr(np, _api.__name__)), category=Category.REDUCE,
                    tensor_params=("a",), numpy_names=(_api.__name__,), check=_check_arg(_api.__name__),
                    reduce_axes=reduce_axes)


# ---- take ------------------------------------------------------------------------------------------


def _prod(dims: Sequence[Any]) -> Any:
    return math.prod(dims) if all(isinstance(d, int) for d in dims) else -1


def _take(b: Builder, a: Any, indices: Any, *, axis: Any = None) -> list[Any]:
    shape = b.shape(a)
    x = a if axis is not None else b.op("reshape", a, shape=(-1,))
    xs = b.shape(x)
    ax = 0 if axis is None else normalize_axis(axis, len(shape))[0]
    n = xs[ax]
    ishape = b.shape(indices)
    ids = b.op("reshape", b.cast(indices, "int32"), shape=(_prod(ishape) if ishape else 1, 1))
    ids = b.op("where", b.op("lt", ids, b.const(0, "int32")), b.op("add", ids, b.const(n, "int32")), ids)
    rest = tuple(xs[:ax]) + tuple(xs[ax + 1:])
    known = _constant_indices(indices)
    if known is not None and 0 < known.size <= STATIC_TAKE_MAX and isinstance(n, int) and \
            ((-n <= known) & (known < n)).all():
        # indices known at compile time: one slice per index, joined (no one-hot product over the table)
        rows = [slice_axis(b, x, ax, int(i) % n, int(i) % n + 1) for i in known.reshape(-1)]
        picked = join(b, rows, ax)
        return [b.op("reshape", picked, shape=tuple(xs[:ax]) + tuple(ishape) + tuple(xs[ax + 1:]))]
    table = b.op("transpose", x, axes=(ax,) + tuple(i for i in range(len(xs)) if i != ax)) if ax else x
    table = b.op("reshape", table, shape=(n, _prod(rest) if rest else 1))
    hit = b.op("eq", ids, _iota(b, 2, 1, n))                                  # (I, n)
    dt = b.dtype(a)
    if dt in FLOATS:
        g = _float_gather(b, hit, table, dt)
    else:
        acc = "int32" if dt in INTS else "bool"
        sel = b.op("where", b.op("expand_dims", hit, axis=2), b.op("expand_dims", b.cast(table, acc), axis=0),
                   b.const(0, acc))
        g = b.cast(b.op("sum", sel, axis=1), dt)                               # (I, R)
    out = b.op("reshape", g, shape=tuple(ishape) + rest)
    k = len(ishape)
    if ax and k:  # the index dims go where the axis was
        perm = tuple(range(k, k + ax)) + tuple(range(k)) + tuple(range(k + ax, k + len(rest)))
        out = b.op("transpose", out, axes=perm)
    return [out]


def _constant_indices(indices: Any) -> np.ndarray | None:
    """The indices' values when they are a graph constant (a Const node's value; types and arrays: None)."""
    node = getattr(indices, "node", None)  # a graph Value (GraphBuilder); TypeBuilder passes TensorTypes
    if node is not None and node.op == "Const":
        return np.asarray(node.attrs["value"])
    return None


def _float_gather(b: Builder, hit: Any, table: Any, dt: str) -> Any:
    """onehot @ table, exact for +-inf and NaN entries: the finite part and a code (1 +inf, 2 -inf, 3 NaN)."""
    inf = b.const(math.inf, dt)
    zero = b.const(0.0, dt)
    finite = b.op("where", b.op("lt", b.op("abs", table), inf), table, zero)
    code = b.op("where", b.op("eq", table, inf), b.const(1.0, dt),
                b.op("where", b.op("eq", table, b.const(-math.inf, dt)), b.const(2.0, dt),
                     b.op("where", b.op("ne", table, table), b.const(3.0, dt), zero)))
    onehot = b.cast(hit, dt)
    g = b.op("matmul", onehot, finite)                                          # (I, R)
    c = b.op("matmul", onehot, code)
    nan = b.const(math.nan, dt)
    fix = b.op("where", b.op("eq", c, b.const(1.0, dt)), inf,
               b.op("where", b.op("eq", c, b.const(2.0, dt)), b.const(-math.inf, dt), nan))
    return b.op("where", b.op("eq", c, zero), g, fix)


def _check_take(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    a, idx = ts
    if not dtypes.is_int(idx.dtype):
        raise InferError(f"indices must be integers, got dtype {idx.dtype}")
    axis = attrs.get("axis")
    if axis is not None and not isinstance(axis, (int, np.integer)):
        raise InferError(f"axis must be None or an int, got {axis!r}")
    if axis is None:
        if any(isinstance(d, Sym) for d in a.shape):
            raise InferError(f"a of shape {fmt_shape(a.shape)} has sizes only known at launch; take needs static sizes")
        return
    if a.ndim == 0:
        raise InferError("cannot take from a 0-d tensor along an axis")
    ax = normalize_axis(axis, a.ndim)[0]
    if isinstance(a.shape[ax], Sym):
        raise InferError(f"axis {ax} of shape {fmt_shape(a.shape)} has a size only known at launch; take needs a "
                         "static size there")
    if any(isinstance(d, Sym) for d in a.shape) and dtypes.is_float(a.dtype):
        raise InferError(f"a float table of shape {fmt_shape(a.shape)} needs static sizes")


def take(a, indices, axis=None):  # noqa: ANN001, ANN201 - the public signature
    """Elements of `a` at `indices` along `axis` (None: of the flattened tensor): a gather."""
    return np.take(a, indices, axis=axis)


def _take_eager(a: Any, indices: Any, *, axis: Any = None) -> Any:
    return np.take(a, indices, axis=axis)


numpy_composite("take", _take, take, _take_eager, category=Category.INJECTIVE, tensor_params=("a", "indices"),
                numpy_names=("take",), check=_check_take, unpromoted=("indices",))
