"""Golden-test helpers: `assert_close`, `check(kernel, *inputs)` and (in .plugin) a pytest `golden` fixture.

    from pyasc.testing import assert_close, check
    check(my_kernel, x, w)                 # the kernel against its own py_func evaluated in float64
    assert_close(my_kernel(x), expected)   # dtype-aware tolerances, a message that says where and how much

The pytest plugin (entry point `pyasc`, module pyasc.testing.plugin) adds the
`golden` fixture and `--update-golden`.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes, pytree

#: (rtol, atol) per result dtype: float16 has an 11-bit significand, float32 a 24-bit one; other dtypes
#: (integers, bool) compare exactly
TOLERANCE: dict[str, tuple[float, float]] = {
    "float16": (2e-3, 1e-3),
    "float32": (1e-5, 1e-6),
    "float64": (1e-12, 1e-14),
}
#: mismatching elements listed in a failure message (the worst one always is)
SHOWN_MISMATCHES = 5


def tolerance(*dtype_names: str) -> tuple[float, float]:
    """The loosest (rtol, atol) among the dtypes compared ((0, 0): exact)."""
    found = [TOLERANCE[n] for n in dtype_names if n in TOLERANCE]
    if not found:
        return 0.0, 0.0
    return max(r for r, _ in found), max(a for _, a in found)


def assert_close(actual: Any, expected: Any, *, rtol: float | None = None, atol: float | None = None,
                 check_dtype: bool = True, equal_nan: bool = True) -> None:
    """Assert that `actual` matches `expected` (arrays, scalars, or tuples/lists of them, item by item).

    Floats compare as |actual - expected| <= atol + rtol * |expected|, with defaults from TOLERANCE for
    the lower-precision dtype of the two; integers and bools compare exactly. `check_dtype` requires the
    same dtype. A failure says how many elements differ, the worst index, both values and the absolute
    and relative error.
    """
    if isinstance(expected, (tuple, list)) or isinstance(actual, (tuple, list)):
        if not (isinstance(actual, (tuple, list)) and isinstance(expected, (tuple, list))):
            raise AssertionError(f"structure differs: actual is a {type(actual).__name__}, expected a "
                                 f"{type(expected).__name__}")
        if len(actual) != len(expected):
            raise AssertionError(f"actual has {len(actual)} results, expected {len(expected)}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            try:
                assert_close(a, e, rtol=rtol, atol=atol, check_dtype=check_dtype, equal_nan=equal_nan)
            except AssertionError as err:
                raise AssertionError(f"result {i}: {err}") from None
        return
    a, e = np.asarray(actual), np.asarray(expected)
    if a.shape != e.shape:
        raise AssertionError(f"shape {a.shape} != expected {e.shape}")
    if check_dtype and a.dtype != e.dtype:
        raise AssertionError(f"dtype {a.dtype} != expected {e.dtype}")
    floats = a.dtype.kind in "fc" or e.dtype.kind in "fc"
    r, t = tolerance(a.dtype.name, e.dtype.name) if floats else (0.0, 0.0)
    r, t = (r if rtol is None else rtol), (t if atol is None else atol)
    if a.size == 0:
        return
    a64, e64 = a.astype(np.float64) if floats else a, e.astype(np.float64) if floats else e
    if floats:
        with np.errstate(invalid="ignore"):
            diff = np.abs(a64 - e64)
            bad = ~(diff <= t + r * np.abs(e64))
        both_nan = np.isnan(a64) & np.isnan(e64)
        same_inf = np.isinf(a64) & (a64 == e64)
        bad &= ~same_inf & ~(both_nan if equal_nan else np.zeros_like(both_nan))
    else:
        bad = a != e
    count = int(np.count_nonzero(bad))
    if count == 0:
        return
    raise AssertionError(_mismatch_message(a, e, bad, count, r, t))


def _mismatch_message(a: np.ndarray, e: np.ndarray, bad: np.ndarray, count: int, rtol: float, atol: float) -> str:
    a64, e64 = a.astype(np.float64), e.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        err = np.where(bad, np.abs(a64 - e64), -1.0)
        err = np.where(np.isnan(err), np.inf, err)  # a NaN where a number was expected is the worst
        rel = np.abs(a64 - e64) / np.abs(e64)
    worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(err)), a.shape)) if a.ndim else ()
    where = [tuple(int(i) for i in idx) for idx in zip(*np.nonzero(bad))] if a.ndim else [()]

    def at(idx: tuple) -> str:
        return (f"{list(idx)}: actual {a[idx].item()!r}, expected {e[idx].item()!r}, "
                f"abs err {abs(a64[idx] - e64[idx]):.3g}, "
                f"rel err {rel[idx]:.3g}")

    tol = f"rtol={rtol:g}, atol={atol:g}" if rtol or atol else "exact"
    lines = [f"{count} of {a.size} elements differ ({tol}; {a.dtype} vs expected {e.dtype})",
             f"worst at index {at(worst)}"]
    others = [idx for idx in where if idx != worst][:SHOWN_MISMATCHES - 1]
    lines += [f"  also at {at(idx)}" for idx in others]
    return "\n".join(lines)


def _widened(value: Any) -> Any:
    """A float input as float64 (the reference's precision), inside pytrees too; other values as they are."""
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return value.astype(np.float64)
    if pytree.is_container(value):
        leaves, tree = pytree.flatten(value, _is_array)
        return pytree.unflatten(tree, [_widened(v) for v in leaves])
    return value


def _is_array(value: Any) -> bool:
    return isinstance(value, (np.ndarray, np.generic))


def _dtype_ok(got: str, numpy_dtype: np.dtype) -> bool:
    """The kernel's result dtype is what numpy gives, narrowed to pyasc's dtypes; where numpy gives float64,
    a float16 result is also right (a compile-time float64 scalar is weak: README, dtype rules)."""
    want = dtypes.narrow(numpy_dtype)
    return got == want or (numpy_dtype == np.float64 and got == "float16")


def check(kernel: Any, *inputs: Any, rtol: float | None = None, atol: float | None = None,
          **kwargs: Any) -> Any:
    """Run `kernel` and compare it with its `py_func` (the same body, eager numpy) evaluated in float64.

    The result dtypes must be what numpy gives for the inputs as they are (narrowed to pyasc's dtypes,
    README: dtype rules); the values must match the float64 evaluation within the tolerance of the
    kernel's result dtype. Pytree inputs and results are compared leaf by leaf, with the same structure.
    Returns the kernel's result.
    """
    actual = kernel(*inputs, **kwargs)
    same_precision = kernel.py_func(*inputs, **kwargs)
    reference = kernel.py_func(*(_widened(v) for v in inputs), **{k: _widened(v) for k, v in kwargs.items()})
    results, tree = pytree.flatten(actual, _is_array)
    natives, native_tree = pytree.flatten(same_precision, _is_array)
    if tree != native_tree:
        raise AssertionError(f"{kernel.__name__} returns {tree.describe()}, but its py_func returns "
                             f"{native_tree.describe()}")
    for i, (got, native) in enumerate(zip(results, natives)):
        if not _dtype_ok(np.asarray(got).dtype.name, np.asarray(native).dtype):
            raise AssertionError(f"result {i} of {kernel.__name__}: dtype {np.asarray(got).dtype}, but numpy gives "
                                 f"{dtypes.narrow(np.asarray(native).dtype)} for these inputs")
    assert_close(results, pytree.flatten(reference, _is_array)[0], rtol=rtol, atol=atol, check_dtype=False)
    return actual
