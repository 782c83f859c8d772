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

#: wrong or internal on main since 5d4edf1 (uncapped fusion; opt_level >= 1, right at opt_level 0 and before it
#: commit): `rope_llama` alone fails on main (a MemoryRuleError reading past GM buffer 'in2'). Strict: fixed on
#: main, these pass and the marker must go.
MAIN_REGRESSIONS = {"llama_rwkv.rope_llama", "llama_rwkv.llama_attention_prefill", "llama_rwkv.llama_attention_decode",
                    "llama_rwkv.llama_block", "llama_rwkv.llama_model_prefill"}

CASES = all_cases()
STRIDE = 1 if os.environ.get("PYASC_FULL_CORPUS") == "1" else 3


def test_the_corpus_is_the_size_the_issue_measures():
    assert len(CASES) >= 160
    assert len({c.style for c in CASES}) == 7


def _param(c):
    name = f"{c.style}.{c.name}"
    marks = [pytest.mark.xfail(strict=True, reason="main regression since 5d4edf1")] if name in MAIN_REGRESSIONS else []
    return pytest.param(c, id=name, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES[::STRIDE]])
def test_corpus_case(case):
    name = f"{case.style}.{case.name}"
    outcome = run_case(case, chip="tiny")
    if name in REFUSED:
        assert outcome.status == "compile_error", outcome.detail
        return
    assert outcome.status == "ok", f"{outcome.status}: {outcome.detail}"
