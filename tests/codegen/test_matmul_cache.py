"""Matmuls whose plan has values of its own between launches (an operand cast by a vector pre-launch, an
operand transposed first, a cube result read back by the epilogue) are stored in and read from the disk
cache like any kernel: those values are written as detached values (`runtime.records`)."""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from conftest import assert_close

import matmul_kernels as K


def _ones(shape, dtype):
    return (np.arange(np.prod(shape)).reshape(shape) % 5 - 2).astype(dtype)


CASES = [
    ("bias cast to float32 first", K.bias_relu, (_ones((32, 40), "float16"), _ones((40, 24), "float16"),
                                                 _ones((24,), "float16"))),
    ("operands of two dtypes", K.mm, (_ones((32, 40), "float16"), _ones((40, 24), "float32"))),
    ("float32 A transposed first", K.mm_at, (_ones((40, 32), "float32"), _ones((40, 24), "float32"))),
    ("int8 bias after the cube", K.bias_relu, (_ones((32, 40), "int8"), _ones((40, 24), "int8"),
                                               _ones((24,), "int32"))),
]


@pytest.mark.parametrize("what,fn,args", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("separate", [True, False], ids=["separate launches", "one mixed launch"])
def test_matmul_routes_round_trip_through_the_disk_cache(disk_cache, what, fn, args, separate):
    """Separate launches hand values over through workspace scratch; a mixed launch holds two programs."""
    options = {"disable_passes": ["mixed_kernels"]} if separate else {}
    first = pyasc.kernel(fn, chip="tiny", **options)
    assert_close(first(*args), np.asarray(first.py_func(*args)))
    assert first.cache_info().misses == 1
    again = pyasc.kernel(fn, chip="tiny", **options)          # a fresh kernel object: only the disk cache has it
    assert_close(again(*args), np.asarray(again.py_func(*args)))
    assert again.cache_info().disk_hits == 1 and again.cache_info().misses == 0
    launches = [dk.template for dk in again.compile(*args).kernels]
    if separate:
        assert "matmul" in launches and len(launches) > 1
    else:
        assert launches[-1] in ("mixed", "matmul")
