"""Regression: an elementwise expression over more distinct inputs than the chip has event ids (8) compiles.

Fusion merged `a + b + ... + k` (10 inputs) into one kernel whose loads needed 10 MTE2->V flags, and every
tiling was then rejected ("no legal tiling ... needs more than 8 event ids"). codegen's capacity function
now refuses such a candidate, so fusion splits it.
"""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from conftest import assert_close


def ten(a, b, c, d, e, f, g, h, i, j):
    return a + b * c - d + e * f + g - h * i + j


@pytest.mark.parametrize("chip", ["tiny", "910b"])
@pytest.mark.parametrize("shape", [(3, 5), (64, 100)])
def test_ten_inputs_compile_and_match(shape, chip, rng):
    xs = [rng.uniform(-1, 1, shape).astype(np.float32) for _ in range(10)]
    k = pyasc.kernel(ten, chip=chip)
    assert_close(k(*xs), k.py_func(*xs))
    assert len(k.compile(*xs).kernels) >= 2  # split: no kernel loads all ten
