"""The numpy corpus (tests/corpus): what compiles unchanged must match numpy, results, arguments and objects
after the call; what does not compile must say so with a located CompileError, never a wrong number or an
internal error. `benchmarks/corpus_report.py` prints the whole table; the suite runs every third case
(PYASC_FULL_CORPUS=1: all of them).
"""
from __future__ import annotations

import os

import pytest

from corpus.harness import all_cases, run_case

#: cases that cannot compile, where a located CompileError is right: np.unique (its length is data) and an
#: explicit 64-bit dtype (README: float64/int64 spelled by the user are errors, never silently narrowed)
REFUSED = {"mlfromscratch.entropy", "keras.add_scalar", "keras.where_scalar", "keras.mean_int", "keras.var_axis"}

CASES = all_cases()
STRIDE = 1 if os.environ.get("PYASC_FULL_CORPUS") == "1" else 3


def test_the_corpus_is_the_size_the_issue_measures():
    assert len(CASES) >= 160
    assert len({c.style for c in CASES}) == 7


def _param(c):
    return pytest.param(c, id=f"{c.style}.{c.name}")


@pytest.mark.parametrize("case", [_param(c) for c in CASES[::STRIDE]])
def test_corpus_case(case):
    name = f"{case.style}.{case.name}"
    outcome = run_case(case, chip="tiny")
    if name in REFUSED:
        assert outcome.status == "compile_error", outcome.detail
        return
    assert outcome.status == "ok", f"{outcome.status}: {outcome.detail}"
