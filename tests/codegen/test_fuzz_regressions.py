"""Kernels the differential fuzzer (benchmarks/fuzz.py) once broke, shrunk: each must now match numpy."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import pyasc
from conftest import assert_close

CASES = sorted((Path(__file__).parent / "fuzz_cases").glob("case_*.py"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_fuzz_regression(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(mod.DTYPE) for s in mod.SHAPES]
    k = pyasc.kernel(mod.kern, sanitize=True, **mod.OPTIONS)
    out, ref = k(*args), k.py_func(*args)
    for a, e in zip(out if isinstance(out, tuple) else (out,), ref if isinstance(ref, tuple) else (ref,)):
        e = np.asarray(e)
        tol = {"rtol": 2e-2, "atol": 2e-2} if a.dtype == np.float16 else {}
        assert_close(a, e.astype(a.dtype), **tol)
