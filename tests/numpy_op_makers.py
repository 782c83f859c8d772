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
        "repeat": [un(repeats=2, axis=1), un(repeats=3, axis=None), un(shape=(2, 3, 4), repeats=(2, 2, 2), axis=1)],
        "tile": [un(reps=2), un(reps=(2, 1, 3)), un(shape=(2, 3, 4), reps=(3, 1))],
        "pad": [un(pad_width=1), un(shape=(2, 3, 4), pad_width=((0, 0), (2, 5), (1, 0)), constant_values=1),
                un(shape=(2, 9), pad_width=(3, 20))],
        "dot": [lambda rng, d: ([values(rng, d, (3, 4)), values(rng, d, (4, 5))], {}),
                lambda rng, d: ([values(rng, d, (4,)), values(rng, d, (4,))], {}),
                lambda rng, d: ([values(rng, d, (2, 3, 4)), values(rng, d, (4,))], {}),
                lambda rng, d: ([values(rng, d, (3, 4)), values(rng, d, (2, 4, 5))], {})],
    }
