"""np.linalg.solve, inv, det, slogdet and cholesky: Gauss-Jordan elimination with partial pivoting (and a
Cholesky factorisation), unrolled over the columns of a static square matrix (stacks of them batch over the
leading axes).

Step k picks, among the rows not yet used as a pivot, the one with the largest |a[r, k]| (the first on ties,
as LAPACK's getrf) and subtracts multiples of it from every other row (above and below), so that column k is
zero but for the pivot. Rows are never swapped: after n steps row p_k holds its pivot alone in column k, and
x[k] = rhs[p_k] / pivot_k. Only row additions were applied, so det(a) = sign(k -> p_k) * prod(pivots), the
permutation's sign from its inversions; slogdet gives sign * prod(sign(pivots)) and sum(log |pivots|).

The work is O(n^3) elementwise (n steps over the n x (n + m) system); the n steps are unrolled, about nine
small launches each (the pivot search, the pivot row and the update reduce along different axes), so n is
capped at MAX_N and a large system compiles for tens of seconds. Results are float32 (numpy: float64 for integer and float64 input); float16 is refused as numpy's linalg
refuses it. A singular matrix gives det 0 (slogdet (0, -inf)) as numpy's; solve and inv divide by its zero
pivot (inf/nan) where numpy raises LinAlgError, since a kernel's results cannot depend on raising.
solve(a, b): b of shape (M,) is one vector (numpy 2's rule), else (..., M, K); leading axes broadcast.
cholesky(a, upper=False): column k of L is a's column k (rows k and below, after the earlier columns'
rank-one updates) over the square root of its diagonal element (a is taken to be symmetric: its lower
triangle is read); upper=True gives L's transpose. A matrix that is not positive definite raises LinAlgError after the launch (a non-finite L).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..tensor_type import TensorType
from .builder import Builder
from .common import broadcast_shapes, fmt_shape, require_static
from .numpy_composite import numpy_sugar_op
from .registry import Category

#: the largest matrix the elimination unrolls for (n steps of a dozen ops each)
MAX_N = 64
_WORK = "float32"


def _row(b: Builder, hit: Any, m: Any) -> Any:
    """The row of m (..., n, c) that the one-hot `hit` (..., n) marks, as (..., 1, c)."""
    picked = b.op("where", b.op("expand_dims", hit, axis=-1), m, b.const(0.0, _WORK))
    return b.op("sum", picked, axis=-2, keepdims=True)


def _column(b: Builder, m: Any, k: int) -> Any:
    """m[..., :, k] as a (..., n) tensor."""
    shape = b.shape(m)
    lead = len(shape) - 2
    sliced = b.op("slice", m, starts=(0,) * (lead + 1) + (k,), stops=(None,) * (lead + 1) + (k + 1,),
                  steps=(1,) * (lead + 2))
    return b.op("reshape", sliced, shape=tuple(shape[:-1]))


def _eliminate(b: Builder, aug: Any, n: int) -> tuple[Any, list[Any], list[Any], list[Any]]:
    """Eliminate the first n columns of aug = [a | rhs] (..., n, n + m): (aug after it, one-hot pivot rows
    (..., n), pivot values (..., 1), pivot row indices (..., 1))."""
    width = b.shape(aug)[-1]
    iota = b.array(np.arange(n, dtype=np.int32))
    zero = b.const(0.0, _WORK)
    used = None
    hits, pivots, rows = [], [], []
    for k in range(n):
        col = _column(b, aug, k)
        score = b.op("abs", col)
        if used is not None:
            score = b.op("where", used, b.const(-1.0, _WORK), score)
        p = b.cast(b.op("argmax", score, axis=-1, keepdims=True), "int32")
        hit = b.op("eq", iota, p)
        piv = b.op("sum", b.op("where", hit, col, zero), axis=-1, keepdims=True)
        singular = b.op("eq", piv, zero)
        factor = b.op("div", col, b.op("where", singular, b.const(1.0, _WORK), piv))
        factor = b.op("expand_dims", b.op("where", b.op("logical_or", hit, singular), zero, factor), axis=-1)
        if k + 1 < n or width > n:  # a determinant needs only the last pivot, not the update after it
            aug = b.op("sub", aug, b.op("mul", factor, _row(b, hit, aug)))
        used = hit if used is None else b.op("logical_or", used, hit)
        hits.append(hit)
        pivots.append(piv)
        rows.append(p)
    return aug, hits, pivots, rows


def _solved(b: Builder, a: Any, rhs: Any) -> Any:
    """x with a @ x = rhs (rhs (..., n, m), leading axes already those of a)."""
    n = b.shape(a)[-1]
    aug, hits, pivots, _ = _eliminate(b, b.op("concat", a, rhs, axis=-1), n)
    rank = len(b.shape(aug))
    done = b.op("slice", aug, starts=(0,) * (rank - 1) + (n,), stops=(None,) * rank, steps=(1,) * rank)
    xs = [b.op("div", _row(b, hit, done), b.op("expand_dims", piv, axis=-1)) for hit, piv in zip(hits, pivots)]
    return xs[0] if len(xs) == 1 else b.op("concat", *xs, axis=-2)


def _solve(b: Builder, a: Any, rhs: Any) -> list[Any]:
    a = b.cast(a, _WORK)
    rhs = b.cast(rhs, _WORK)
    sa, sb = b.shape(a), b.shape(rhs)
    vector = len(sb) == 1
    if vector:
        rhs = b.op("reshape", rhs, shape=(sb[0], 1))
        sb = b.shape(rhs)
    lead = tuple(broadcast_shapes(tuple(sa[:-2]), tuple(sb[:-2])))
    if tuple(sa[:-2]) != lead:
        a = b.op("broadcast_to", a, shape=lead + tuple(sa[-2:]))
    if tuple(sb[:-2]) != lead:
        rhs = b.op("broadcast_to", rhs, shape=lead + tuple(sb[-2:]))
    x = _solved(b, a, rhs)
    return [b.op("reshape", x, shape=lead + (sa[-1],)) if vector else x]


def _inv(b: Builder, a: Any) -> list[Any]:
    a = b.cast(a, _WORK)
    shape = b.shape(a)
    eye = b.op("broadcast_to", b.array(np.eye(shape[-1], dtype=np.float32)), shape=tuple(shape))
    return [_solved(b, a, eye)]


def _permutation_sign(b: Builder, rows: list[Any]) -> Any:
    """+1 or -1 (float, shape (...,)): the sign of k -> rows[k] (each (..., 1)), from the parity of its
    inversions."""
    n = len(rows)
    lead = tuple(b.shape(rows[0])[:-1])
    if n == 1:
        return b.op("full", shape=lead, fill_value=1.0, dtype=_WORK) if lead else b.const(1.0, _WORK)
    p = b.op("reshape", b.op("concat", *rows, axis=-1), shape=lead + (n,))                      # (..., n)
    later_smaller = b.op("gt", b.op("expand_dims", p, axis=-1), b.op("expand_dims", p, axis=-2))   # p_i > p_j
    pairs = b.op("logical_and", later_smaller, b.array(np.triu(np.ones((n, n), dtype=bool), 1)))  # i < j
    inversions = b.op("sum", b.cast(pairs, "int32"), axis=(-2, -1))
    odd = b.cast(b.op("mod", inversions, b.const(2, "int32")), _WORK)
    return b.op("sub", b.const(1.0, _WORK), b.op("mul", odd, b.const(2.0, _WORK)))


def _pivots(b: Builder, a: Any) -> tuple[Any, Any]:
    """(the permutation's sign (...,), the pivots (..., n))."""
    a = b.cast(a, _WORK)
    lead, n = tuple(b.shape(a)[:-2]), b.shape(a)[-1]
    _, _, pivots, rows = _eliminate(b, a, n)
    piv = b.op("reshape", pivots[0] if n == 1 else b.op("concat", *pivots, axis=-1), shape=lead + (n,))
    return _permutation_sign(b, rows), piv


def _det(b: Builder, a: Any) -> list[Any]:
    sign, piv = _pivots(b, a)
    return [b.op("mul", sign, b.op("prod", piv, axis=-1))]


def _slogdet(b: Builder, a: Any) -> list[Any]:
    sign, piv = _pivots(b, a)
    sign = b.op("mul", sign, b.op("prod", b.op("sign", piv), axis=-1))
    return [sign, b.op("sum", b.op("log", b.op("abs", piv)), axis=-1)]


def _cholesky(b: Builder, a: Any, *, upper: bool = False) -> list[Any]:
    a = b.cast(a, _WORK)
    shape = tuple(b.shape(a))
    n = shape[-1]
    zero = b.const(0.0, _WORK)
    low = None
    for k in range(n):
        at_k = np.zeros((n, n), dtype=bool)
        at_k[:, k] = True
        col = b.op("sum", b.op("where", b.array(at_k), a, zero), axis=-1, keepdims=True)             # (..., n, 1)
        diag = b.op("sum", b.op("where", b.array(np.arange(n).reshape(n, 1) == k), col, zero), axis=-2,
                    keepdims=True)                                                                    # (..., 1, 1)
        lk = b.op("where", b.array(np.arange(n).reshape(n, 1) >= k), b.op("div", col, b.op("sqrt", diag)), zero)
        low = b.op("mul", lk, b.array(at_k[0:1].astype(np.float32))) if low is None else \
            b.op("where", b.array(at_k), lk, low)
        if k + 1 < n:
            a = b.op("sub", a, b.op("mul", lk, b.op("reshape", lk, shape=shape[:-2] + (1, n))))
    if low is None:
        low = a
    return [b.op("transpose", low, axes=tuple(range(len(shape) - 2)) + (len(shape) - 1, len(shape) - 2))
            if upper else low]


def _check_square(name: str):
    def check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
        a = ts[0]
        require_static(name, *ts)
        if a.dtype == "float16":
            raise InferError(f"{name}: array type float16 is unsupported in linalg (numpy refuses it too); "
                             "cast to float32 first")
        if a.ndim < 2:
            raise InferError(f"{name}: {a.ndim}-dimensional array given. Array must be at least two-dimensional")
        if a.shape[-1] != a.shape[-2]:
            raise InferError(f"{name}: Last 2 dimensions of the array must be square, got {fmt_shape(a.shape)}")
        if a.shape[-1] > MAX_N:
            raise InferError(f"{name}: a {a.shape[-1]}x{a.shape[-1]} matrix is larger than the {MAX_N}x{MAX_N} pyasc "
                             "eliminates in a kernel (its steps are unrolled); solve larger systems outside it")
        if len(ts) > 1:
            rhs = ts[1]
            if rhs.dtype == "float16":
                raise InferError(f"{name}: array type float16 is unsupported in linalg (numpy refuses it too); "
                                 "cast to float32 first")
            m = rhs.shape[0] if rhs.ndim == 1 else (rhs.shape[-2] if rhs.ndim >= 2 else None)
            if m != a.shape[-1]:
                raise InferError(f"{name}: b of shape {fmt_shape(rhs.shape)} does not match a of shape "
                                 f"{fmt_shape(a.shape)} (b is (M,) or (..., M, K) with M = {a.shape[-1]})")
            if rhs.ndim >= 2:
                try:
                    broadcast_shapes(tuple(a.shape[:-2]), tuple(rhs.shape[:-2]))
                except InferError as e:
                    raise InferError(f"{name}: the leading axes of a {fmt_shape(a.shape)} and b "
                                     f"{fmt_shape(rhs.shape)} do not broadcast") from e
    return check


def solve(a, b):  # noqa: ANN001, ANN201 - numpy's signature
    """x with a @ x = b (np.linalg.solve)."""
    return np.linalg.solve(a, b)


def inv(a):  # noqa: ANN001, ANN201
    """The inverse matrix (np.linalg.inv)."""
    return np.linalg.inv(a)


def det(a):  # noqa: ANN001, ANN201
    """The determinant (np.linalg.det)."""
    return np.linalg.det(a)


def slogdet(a):  # noqa: ANN001, ANN201
    """(sign, log |det|) of the determinant (np.linalg.slogdet)."""
    return tuple(np.linalg.slogdet(a))


def cholesky(a, /, *, upper=False):  # noqa: ANN001, ANN201
    """The Cholesky factor L (a = L @ L.T) of a symmetric positive definite matrix (np.linalg.cholesky)."""
    return np.linalg.cholesky(a, upper=upper)


numpy_sugar_op("solve", _solve, solve, np.linalg.solve, category=Category.OPAQUE, tensor_params=("a", "b"),
               numpy_names=("linalg.solve",), check=_check_square("solve"))
numpy_sugar_op("inv", _inv, inv, np.linalg.inv, category=Category.OPAQUE, tensor_params=("a",),
               numpy_names=("linalg.inv",), check=_check_square("inv"))
numpy_sugar_op("det", _det, det, np.linalg.det, category=Category.OPAQUE, tensor_params=("a",),
               numpy_names=("linalg.det",), check=_check_square("det"))
numpy_sugar_op("slogdet", _slogdet, slogdet, lambda a: tuple(np.linalg.slogdet(a)), category=Category.OPAQUE,
               tensor_params=("a",), numpy_names=("linalg.slogdet",), check=_check_square("slogdet"),
               returns_sequence=True)
numpy_sugar_op("cholesky", _cholesky, cholesky, lambda a, upper=False: np.linalg.cholesky(a, upper=upper),
               category=Category.OPAQUE, tensor_params=("a",), numpy_names=("linalg.cholesky",),
               check=_check_square("cholesky"))
