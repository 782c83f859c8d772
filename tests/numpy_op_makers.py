"""Golden-test argument makers for the numpy ops of issue 11 (merged into test_golden_ops.MAKERS).

Each maker returns (tensors in the op's tensor_params order, attrs by api parameter name); `values` is
test_golden_ops.values (random values of a dtype in a domain), passed in to avoid a circular import.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from pyasc import dtypes


def makers(values: Callable[..., np.ndarray]) -> dict[str, list[Any]]:
    def un(kind: str = "any", shape: tuple[int, ...] = (3, 4), **attrs: Any):
        return lambda rng, d: ([values(rng, d, shape, kind)], dict(attrs))

    def tiny(rng, d):  # small magnitudes, where log1p/expm1/sinh must not cancel (ints: positive values)
        x = values(rng, d, (4, 8), "any" if dtypes.is_float(d) else "positive")
        return [x * np.asarray(1e-3, x.dtype) if dtypes.is_float(d) else x], {}

    def unit(shape: tuple[int, ...]):
        def make(rng, d):
            if dtypes.is_float(d):
                return [rng.uniform(-1, 1, shape).astype(dtypes.to_numpy(d))], {}
            lo = 0 if d in ("uint8", "bool") else -1
            return [rng.integers(lo, 2, shape).astype(dtypes.to_numpy(d))], {}
        return make

    def clip_scalars(rng, d):
        return [values(rng, d, (3, 4)), 0, 4], {}

    def clip_tensor_min(rng, d):
        return [values(rng, d, (3, 4)), values(rng, d, (4,)), None], {}

    def clip_tensor_max(rng, d):
        return [values(rng, d, (2, 3, 5)), None, values(rng, d, (3, 1))], {}

    def fill(rng, d):
        return [values(rng, d, (3, 4))], {"fill_value": True if d == "bool" else 3, "dtype": None}

    def fill_as(rng, d):
        return [values(rng, d, (2, 3, 5))], {"fill_value": 2.5, "dtype": "float32"}

    stats = [un(axis=None), un(shape=(3, 17), axis=-1, keepdims=True),
             un(shape=(2, 3, 4), axis=(0, 2), ddof=1), un(shape=(5, 3), axis=0, ddof=1, keepdims=False)]
    shapes = [un(), un(shape=(2, 3, 33))]
    return {
        "log1p": [un("positive"), tiny, un("positive", (2, 3, 33))],
        "expm1": shapes + [tiny],
        "sinh": shapes + [tiny],
        "cosh": shapes,
        "arctan": shapes + [tiny],
        "arcsin": [unit((3, 4)), unit((2, 3, 33))],
        "arccos": [unit((3, 4)), unit((2, 3, 33))],
        "log2": [un("positive"), un("positive", (2, 3, 33))],
        "exp2": shapes,
        "logaddexp": [lambda rng, d: ([values(rng, d, (3, 4)), values(rng, d, (4,))], {}),
                      lambda rng, d: ([values(rng, d, (2, 1, 5)), values(rng, d, (3, 1))], {})],
        "square": shapes,
        "copy": shapes,
        "clip": [clip_scalars, clip_tensor_min, clip_tensor_max],
        "var": stats,
        "std": stats,
        "full_like": [fill, fill_as],
        "swapaxes": [un(axis1=0, axis2=1), un(shape=(2, 3, 4), axis1=-1, axis2=0)],
        "moveaxis": [un(shape=(2, 3, 4), source=0, destination=-1), un(shape=(2, 3, 4), source=(0, 2), destination=(2, 0))],
        "repeat": [un(repeats=2, axis=1), un(repeats=3, axis=None), un(shape=(2, 3, 4), repeats=(2, 2, 2), axis=1),
                   un(shape=(3, 4), repeats=(1, 0, 3), axis=0), un(shape=(2, 5), repeats=(2, 2, 1, 3, 3), axis=-1)],
        "tile": [un(reps=2), un(reps=(2, 1, 3)), un(shape=(2, 3, 4), reps=(3, 1))],
        "pad": [un(pad_width=1), un(shape=(2, 3, 4), pad_width=((0, 0), (2, 5), (1, 0)), constant_values=1),
                un(shape=(2, 9), pad_width=(3, 20))],
        "argmax": [un(axis=None), un(axis=1), un(shape=(2, 3, 4), axis=0, keepdims=True), un(shape=(7,), axis=-1)],
        "argmin": [un(axis=None), un(axis=1), un(shape=(2, 3, 4), axis=None, keepdims=True)],
        "cumsum": [un(axis=None), un(axis=1), un(shape=(2, 3, 4), axis=0), un(shape=(2, 3, 4), axis=1, dtype="float32")],
        "take": [lambda rng, d: ([values(rng, d, (5, 4)), np.array([4, 0, -1, 2], np.int32)], {"axis": 0}),
                 lambda rng, d: ([values(rng, d, (3, 5)), np.array([[1, 1], [4, -5]], np.int8)], {"axis": 1}),
                 lambda rng, d: ([values(rng, d, (2, 3, 4)), np.array([23, 0, 7], np.int32)], {"axis": None})],
        "arange": [lambda rng, d: ([], {"start": 2, "stop": 11, "step": 3, "dtype": d}),
                   lambda rng, d: ([], {"start": 6, "stop": None, "step": None, "dtype": None})],
        "linspace": [lambda rng, d: ([], {"start": -1.0, "stop": 2.0, "num": 7, "endpoint": d != "int8", "dtype": d})],
        "eye": [lambda rng, d: ([], {"N": 3, "M": 5, "k": 1, "dtype": d})],
        "tri": [lambda rng, d: ([], {"N": 4, "M": None, "k": 0, "dtype": d}),
                lambda rng, d: ([], {"N": 3, "M": 6, "k": -1, "dtype": d})],
        "tril": [un(shape=(4, 5), k=0), un(shape=(2, 3, 4), k=-1), un(k=2)],
        "triu": [un(shape=(4, 5), k=0), un(shape=(2, 3, 4), k=1), un(k=-2)],
        "outer": [lambda rng, d: ([values(rng, d, (3,)), values(rng, d, (2, 2))], {})],
        "dot": [lambda rng, d: ([values(rng, d, (3, 4)), values(rng, d, (4, 5))], {}),
                lambda rng, d: ([values(rng, d, (4,)), values(rng, d, (4,))], {}),
                lambda rng, d: ([values(rng, d, (2, 3, 4)), values(rng, d, (4,))], {}),
                lambda rng, d: ([values(rng, d, (3, 4)), values(rng, d, (2, 4, 5))], {})],
    }


#: the numpy ops of issue 22 run on these dtypes (each in both presets): one float, one int and bool cover
#: their dtype rules; float16 where an op computes in float32 and rounds once
DTYPES_ISSUE22 = {
    **{n: ("float32", "float16", "int32") for n in ("log10", "xlogy", "xlog1py", "logit", "logsumexp", "expit",
                                                    "special_erf", "special_softmax", "special_log_softmax", "norm",
                                                    "average", "rint")},
    **{n: ("float32", "int32", "bool") for n in ("isnan", "isinf", "isfinite", "logical_and", "logical_or",
                                                 "logical_xor", "logical_not", "any", "all", "count_nonzero",
                                                 "sort", "argsort", "diag", "diagflat", "append")},
    **{n: ("float32", "int32") for n in ("round", "trunc", "fmax", "fmin", "nan_to_num", "cumprod", "prod",
                                         "trace", "take_along_axis", "roll")},
    "diff": ("float16", "int32", "bool"),
    **{n: ("float32", "int32") for n in ("partition", "argpartition")},
    "sliding_window_view": ("float16", "int32"),
    # numpy3's: float32 (NaN, infinities), and int32 where products take another path (np.dot's exact int32 sum,
    # matmul's cast back to the operand dtype); the suite's time is tight, so one dtype elsewhere
    **{n: ("float32", "int32") for n in ("tensordot", "matrix_power")},
    **{n: ("float32",) for n in ("flip", "fliplr", "flipud", "isclose", "allclose", "heaviside", "nansum", "nanmean",
                                 "nanmax", "nanmin", "nanvar", "nanstd", "ptp", "inner", "kron", "cross", "median",
                                 "quantile", "percentile", "searchsorted", "interp", "convolve", "correlate",
                                 "trapezoid")},
}


def makers_numpy3(values: Callable[..., np.ndarray]) -> dict[str, list[Any]]:
    """The numpy functions of the numpy3 modules (flips, closeness, nanreduce, ...)."""
    def un(kind: str = "any", shape: tuple[int, ...] = (3, 4), **attrs: Any):
        return lambda rng, d: ([values(rng, d, shape, kind)], dict(attrs))

    def with_nan(shape: tuple[int, ...], **attrs: Any):  # a whole NaN row (an all-NaN slice), a NaN and an inf
        def make(rng, d):
            x = values(rng, d, shape)
            if dtypes.is_float(d):
                x[0] = np.nan
                x[1, 1], x[-1, 0] = np.nan, np.inf
            return [x], dict(attrs)
        return make

    def near(rng, d, **attrs: Any):  # equal, within and beyond the tolerances, infinities and NaN
        a = values(rng, d, (4, 5))
        if not dtypes.is_float(d):
            return [a, a + rng.integers(0, 2, (4, 5)).astype(a.dtype)], attrs
        b = a * np.array([1.0, 1.0 + 1e-7, 1.0 + 1e-3, 1.0 - 1e-6, 1.5], np.float32)
        a[0, :3], b[0, :3] = [np.inf, np.nan, -np.inf], [np.inf, np.nan, np.inf]
        return [a, b.astype(a.dtype)], attrs

    def step(rng, d):
        x = values(rng, d, (3, 4), "small")
        x.reshape(-1)[:3] = 0
        if dtypes.is_float(d):
            x.reshape(-1)[3] = np.nan
        return [x, values(rng, d, (4,))], {}

    return {
        "flip": [un(shape=(2, 3, 4), axis=(0, 2))], "fliplr": [un()], "flipud": [un(shape=(5,))],
        "isclose": [near, lambda rng, d: near(rng, d, rtol=0.0, atol=1e-3, equal_nan=True)],
        "allclose": [near, lambda rng, d: ([values(rng, d, (3, 4))] * 2, {})], "heaviside": [step],
        "nansum": [with_nan((3, 4), axis=1)], "nanmean": [with_nan((3, 4), axis=1, keepdims=True)],
        "nanmax": [with_nan((3, 4), axis=1)], "nanmin": [with_nan((4, 3), axis=None)],
        "nanvar": [with_nan((3, 4), axis=1, ddof=1)], "nanstd": [with_nan((3, 4), axis=0)],
        "ptp": [un(shape=(3, 5), axis=1)],
        "tensordot": [lambda rng, d: ([values(rng, d, (2, 3, 4)), values(rng, d, (4, 3, 5))],
                                      {"axes": ([1, 2], [1, 0])})],
        "inner": [lambda rng, d: ([values(rng, d, (3, 4)), values(rng, d, (2, 4))], {})],
        "kron": [lambda rng, d: ([values(rng, d, (2, 3)), values(rng, d, (3,))], {})],
        "cross": [lambda rng, d: ([values(rng, d, (4, 3)), values(rng, d, (3,))], {})],
        "matrix_power": [un("small", shape=(2, 3, 3), n=5)],
        "median": [with_nan((3, 2, 4), axis=(0, 2), keepdims=True)],
        "quantile": [un(shape=(3, 5), q=(0.0, 0.3, 1.0), axis=0)], "percentile": [with_nan((4, 3), q=75)],
        "searchsorted": [lambda rng, d: ([np.sort(values(rng, d, (6,))), values(rng, d, (2, 3))], {"side": "right"})],
        "interp": [lambda rng, d: ([values(rng, d, (6,)), np.sort(values(rng, d, (3,))), values(rng, d, (3,))],
                                   {"right": 9.0})],
        "convolve": [lambda rng, d: ([values(rng, d, (6,)), values(rng, d, (3,))], {"mode": "same"})],
        "correlate": [lambda rng, d: ([values(rng, d, (3,)), values(rng, d, (5,))], {"mode": "full"})],
        "trapezoid": [lambda rng, d: ([values(rng, d, (3, 5)), None], {"dx": 0.5}),
                      lambda rng, d: ([values(rng, d, (4, 3)), np.sort(values(rng, d, (4,)))], {"axis": 0})],
    }


def makers_issue22(values: Callable[..., np.ndarray]) -> dict[str, list[Any]]:
    def un(kind: str = "any", shape: tuple[int, ...] = (3, 4), **attrs: Any):
        return lambda rng, d: ([values(rng, d, shape, kind)], dict(attrs))

    def special(rng, d):  # NaN, infinities and signed zeros where the dtype has them
        x = values(rng, d, (3, 6))
        if dtypes.is_float(d):
            x.reshape(-1)[:5] = [np.nan, np.inf, -np.inf, -0.0, 0.0]
        return [x], {}

    def two(kind: str = "any"):
        return lambda rng, d: ([values(rng, d, (3, 4), kind), values(rng, d, (4,), kind)], {})

    def prob(rng, d):
        if dtypes.is_float(d):
            return [rng.uniform(0.05, 0.95, (3, 4)).astype(dtypes.to_numpy(d))], {}
        return [values(rng, d, (3, 4), "positive")], {}

    def xlogy_args(rng, d):
        x = values(rng, d, (3, 4))
        x.reshape(-1)[:3] = 0
        return [x, values(rng, d, (4,), "positive")], {}

    def halves(rng, d):  # exact halves: round half to even
        if dtypes.is_float(d):
            return [(rng.integers(-8, 8, (3, 4)) / 2 + rng.uniform(-0.3, 0.3, (3, 4)) * (rng.random((3, 4)) < 0.5))
                    .astype(dtypes.to_numpy(d))], {"decimals": 0}
        return [values(rng, d, (3, 4))], {"decimals": -1}

    def sortable(shape: tuple[int, ...], **attrs: Any):
        def make(rng, d):
            x = values(rng, d, shape, "small")  # ties among small ints and bools: the order must be stable
            if dtypes.is_float(d):
                x.reshape(-1)[:2] = [np.nan, -np.inf]
            return [x], dict(attrs)
        return make

    def along(rng, d):
        x = values(rng, d, (3, 5))
        return [x, rng.integers(-5, 5, (3, 2)).astype(np.int32)], {"axis": 1}

    def along_none(rng, d):
        return [values(rng, d, (2, 3)), np.array([5, 0, -1], np.int32)], {"axis": None}

    return {
        "log10": [un("positive")], "isnan": [special], "isinf": [special], "isfinite": [special],
        "logical_and": [two()], "logical_or": [two()], "logical_xor": [two()], "logical_not": [un()],
        "round": [halves, un(shape=(2, 5), decimals=1)], "rint": [halves], "trunc": [special],
        "fmax": [lambda rng, d: (special(rng, d)[0] + [values(rng, d, (6,))], {})],
        "fmin": [lambda rng, d: (special(rng, d)[0] + [values(rng, d, (6,))], {})],
        "nan_to_num": [special, lambda rng, d: (special(rng, d)[0], {"nan": 1.5, "posinf": 9.0, "neginf": -9.0})],
        "xlogy": [xlogy_args], "xlog1py": [xlogy_args], "logit": [prob], "expit": [un()], "special_erf": [un()],
        "logsumexp": [un(axis=None), un(shape=(2, 3, 4), axis=(0, 2), keepdims=True)],
        "special_softmax": [un(axis=None), un(axis=1)], "special_log_softmax": [un(axis=0)],
        "cumprod": [un("small", axis=1), un("small", shape=(2, 3, 4), axis=None)],
        "prod": [un("small", axis=None), un("small", shape=(2, 3, 5), axis=(0, 2), keepdims=True)],
        "average": [un(axis=1), lambda rng, d: ([values(rng, d, (3, 4)), values(rng, d, (4,), "positive")],
                                                {"axis": 1})],
        "any": [un(axis=None), un(axis=1, keepdims=True)], "all": [un(axis=0)],
        "count_nonzero": [un(axis=None), un(shape=(2, 3, 4), axis=(0, 1))],
        "norm": [un(), un(ord=1, axis=1), un(ord=np.inf), un(shape=(5,), ord=3), un(ord=-1, axis=(1, 0))],
        "trace": [un(shape=(4, 5)), un(shape=(2, 3, 4), offset=1, axis1=1, axis2=2)],
        "diag": [un(shape=(4,), k=1), un(shape=(4,), k=-2), un(shape=(3, 5), k=1), un(shape=(4, 3), k=-1)],
        "diagflat": [un(shape=(2, 2)), un(shape=(3,), k=-1)],
        "sort": [sortable((3, 7)), sortable((4, 3), axis=0), sortable((2, 5), axis=None)],
        "argsort": [sortable((3, 7)), sortable((4, 3), axis=0)],
        # partition / argpartition: the stable sort (eager and compiled alike); numpy's own order is checked
        # against the partition property in test_ops_numpy3.py
        "partition": [sortable((3, 7), kth=2), sortable((4, 3), kth=(0, -1), axis=0)],
        "argpartition": [sortable((3, 7), kth=-1)],
        "sliding_window_view": [un(shape=(3, 6), window_shape=3, axis=1), un(shape=(4, 5), window_shape=(2, 2))],
        "take_along_axis": [along, along_none],
        "append": [lambda rng, d: ([values(rng, d, (2, 3)), values(rng, d, (4,))], {"axis": None}),
                   lambda rng, d: ([values(rng, d, (2, 3)), values(rng, d, (1, 3))], {"axis": 0})],
        **makers_numpy3(values),
        "roll": [un(shape=(3, 5), shift=-7, axis=None), un(shape=(2, 3, 4), shift=(1, 5, -1), axis=(0, 2, 0))],
        "diff": [un(shape=(3, 5), n=2), un(shape=(4, 3), axis=0),
                 lambda rng, d: ([values(rng, d, (2, 4)), values(rng, d, ()), values(rng, d, (2, 2))], {"n": 3})],
    }
