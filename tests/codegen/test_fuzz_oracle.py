"""The fuzzer's oracle: a mismatch is only "rounding" when numpy's own float32 result is as far off."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

_spec = importlib.util.spec_from_file_location("fuzz", Path(__file__).resolve().parents[2] / "benchmarks" / "fuzz.py")
fuzz = importlib.util.module_from_spec(_spec)
sys.modules["fuzz"] = fuzz   # its dataclasses look their module up there
_spec.loader.exec_module(fuzz)


def test_cancellation_that_numpy_shares_is_rounding():
    exact = np.array([1.0, 0.0])
    numpy_f32 = np.array([1.0, 6e-4], np.float32)     # numpy's float32 result is 6e-4 off
    ours = np.array([1.0, -5e-4], np.float32)
    assert fuzz.judge((ours,), (numpy_f32,), (exact,)) == "rounding"


def test_an_error_numpy_does_not_make_is_a_wrong_result():
    exact = np.array([1.0, 2.0])
    numpy_f32 = np.array([1.0, 2.0], np.float32)
    ours = np.array([1.0, 2.5], np.float32)
    assert fuzz.judge((ours,), (numpy_f32,), (exact,)) == "wrong result"


def test_nan_where_numpy_is_finite_is_a_wrong_result():
    exact = np.array([1.0, 2.0])
    assert fuzz.judge((np.array([1.0, np.nan], np.float32),), (exact.astype(np.float32),), (exact,)) == "wrong result"


def test_integer_results_or_no_float64_twin_are_never_rounding():
    assert fuzz.judge((np.array([1, 3]),), (np.array([1, 2]),), (np.array([1.0, 2.0]),)) == "wrong result"
    assert fuzz.judge((np.array([1.0]),), (np.array([2.0]),), None) == "wrong result"


def test_overflow_at_the_float16_boundary_is_rounding():
    exact = np.array([1.0, 65400.0, 1e6])             # 1e6 overflows float16: inf is the exact answer there
    numpy_f16 = np.array([1.0, 65344.0, np.inf], np.float16)
    ours = np.array([1.0, np.inf, np.inf], np.float16)
    assert fuzz.judge((ours,), (numpy_f16,), (exact,)) == "rounding"
    assert fuzz.judge((np.array([1.0, 65344.0, 60000.0], np.float16),), (numpy_f16,), (exact,)) == "wrong result"
