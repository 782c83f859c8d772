"""The decode form of attention: keys split over the cores and a combine launch (codegen/decode.py), sanitizer on.

Golden against float64 attention (`reference` of test_attention_op) for decode-shaped calls (one query row, or
a few, against many keys) in the split form, causal and masked, with runs whose keys are all masked or all
past the diagonal; and that the form launched is the one the cost model scores lowest.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import pyasc
from pyasc.codegen import decode
from conftest import assert_close
from test_attention_kernel import TOL, attend, attend_causal, attend_masked
from test_attention_op import reference


def _qkv(rng, b, h, tq, tk, d):
    shapes = [(b, h, tq, d), (b, h, tk, d), (b, h, tk, d)]
    return [(rng.standard_normal(s) * 0.8).astype(np.float16) for s in shapes]


@pytest.fixture
def split(monkeypatch):
    """The split form in `runs` runs whatever the cost model says (the form's correctness, not its choice)."""
    def force(runs: int) -> None:
        monkeypatch.setattr(decode, "run_counts", lambda kg, groups: [runs])
        monkeypatch.setattr(decode, "cheapest", lambda forms: forms[-1])
    return force


def _run_split(fn, args):
    """The result of `fn` on the tiny chip, after checking it launches the split form."""
    kern = pyasc.kernel(fn, chip="tiny", sanitize=True)
    assert [k.template for k in kern.compile(*args).kernels] == ["attention", "attention_combine"]
    out = kern(*args)
    assert out.dtype == np.float16
    return out


@pytest.mark.parametrize("b,h,tk,d,runs,causal", [(1, 2, 200, 64, 2, False), (2, 1, 77, 40, 3, True)])
def test_split_keys_golden(rng, split, b, h, tk, d, runs, causal):
    """A decode step (one query row per head; causal: it sees the whole cache) in 2 or 3 runs of its keys; the
    combine loads every run's O at once (D = 64) or run by run (D = 40: rows padded in UB)."""
    split(runs)
    args = _qkv(rng, b, h, 1, tk, d)
    out = _run_split(attend_causal if causal else attend, args)
    assert_close(out, reference(*args, causal=causal), **TOL)


def test_causal_runs_past_the_diagonal_are_empty(rng, split):
    """Query block 0 (16 rows) of a causal 24 x 24 attention sees its first 16 keys only: its second run (keys
    from 16 or 32 on, whatever the key block) walks no key block (m, l, O stay lowest, 0, 0) and weighs
    nothing in the combine."""
    split(2)
    args = _qkv(rng, 1, 1, 24, 24, 16)
    assert_close(_run_split(attend_causal, args), reference(*args, causal=True), **TOL)


def test_a_run_whose_keys_are_all_masked_and_a_row_that_sees_none(rng, split):
    """The first 150 of 200 keys masked: the first of two runs (at most 128 keys, whatever the key block) sees
    none, so its m is the lowest float32 and its weight exp(m - M) is 0, not NaN. A row masked whole is NaN
    as in numpy (0 / 0 after the combine)."""
    split(2)
    args = _qkv(rng, 1, 1, 3, 200, 64)
    mask = (rng.standard_normal((3, 200)) * 0.5).astype(np.float32)
    mask[:, :150] = -np.inf
    mask[1] = -np.inf
    out = _run_split(attend_masked, args + [mask])
    ref = reference(*args, mask=mask)
    assert np.isnan(out[0, 0, 1]).all() and np.isnan(ref[0, 0, 1]).all()
    keep = np.arange(3) != 1
    assert not np.isnan(out[0, 0, keep]).any()
    assert_close(out[0, 0, keep], ref[0, 0, keep], **TOL)


_FORM = re.compile(r"(one launch|keys split in (\d+) runs \+ a combine launch): (\d+) cycles")


@pytest.mark.parametrize("b,h,tk,split_expected", [(1, 1, 1000, True), (1, 2, 200, False)])
def test_the_launched_form_is_the_cost_models_cheapest(rng, b, h, tk, split_expected):
    """One query row per head: with fewer heads than groups the split wins on the cost model; with every
    group busy it does not. The note lists every form's score; the launches are the cheapest one's, and its
    score is the chosen tilings' scores added."""
    args = _qkv(rng, b, h, 1, tk, 64)
    kern = pyasc.kernel(attend, chip="tiny", sanitize=True)
    kernels = kern.compile(*args).kernels
    note = next(n for n in kernels[0].notes if n.startswith("attention form chosen by the cost model"))
    forms = {m[1]: (int(m[2] or 1), int(m[3])) for m in _FORM.finditer(note)}
    chosen = _FORM.search(note)[1]
    assert len(forms) >= 2 and forms[chosen][1] == min(c for _, c in forms.values())
    assert (chosen != "one launch") == split_expected
    runs = forms[chosen][0]
    want = ["attention", "attention_combine"] if runs > 1 else ["attention"]
    assert [k.template for k in kernels] == want
    scores = [float(re.search(r"chosen: .*: (\d+) cycles", k.tiling.text())[1]) for k in kernels]
    assert abs(sum(scores) - forms[chosen][1]) <= len(kernels)
    out, prof = kern.profile(*args)
    assert prof.launches == len(want)
    assert_close(out, reference(*args), **TOL)
