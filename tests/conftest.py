"""Shared test helpers: dtype-aware golden comparison; the disk cache is off unless a test turns it on."""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import settings

# property tests explore the same examples on every run: CI must not pass or fail by chance
# (explore more locally with e.g. `--hypothesis-seed=N` and a larger max_examples)
settings.register_profile("deterministic", derandomize=True, database=None)
settings.load_profile("deterministic")

# tests never read or fill the user's compile cache; the disk-cache tests point PYASC_CACHE_DIR at a
# temporary folder and set PYASC_CACHE=1 themselves (the `disk_cache` fixture)
os.environ["PYASC_CACHE"] = "0"

# (rtol, atol) per result dtype: fp16 has an 11-bit significand, so a few ulps of relative error
TOLERANCE = {
    "float16": (2e-3, 1e-3),
    "float32": (1e-5, 1e-6),
}


def assert_close(actual, expected, *, rtol=None, atol=None, check_dtype=True):
    """Golden comparison: exact for integer/bool results, dtype-aware tolerance for floats."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"shape {actual.shape} != expected {expected.shape}"
    if check_dtype:
        assert actual.dtype == expected.dtype, f"dtype {actual.dtype} != expected {expected.dtype}"
    if actual.dtype.kind == "f":
        r, a = TOLERANCE.get(actual.dtype.name, (1e-5, 1e-6))
        np.testing.assert_allclose(
            actual.astype(np.float64), expected.astype(np.float64),
            rtol=r if rtol is None else rtol, atol=a if atol is None else atol, equal_nan=True,
        )
    else:
        np.testing.assert_array_equal(actual, expected)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def disk_cache(tmp_path, monkeypatch):
    """The disk cache on, in a fresh folder (returned)."""
    root = tmp_path / "pyasc-cache"
    monkeypatch.setenv("PYASC_CACHE", "1")
    monkeypatch.setenv("PYASC_CACHE_DIR", str(root))
    return root
