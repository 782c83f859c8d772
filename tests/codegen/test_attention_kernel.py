"""The fused attention template: softmax(q k^T * scale + mask) v as one cube+vector launch (sanitizer on).

Golden against float64 attention written out in numpy (`reference` of test_attention_op) on odd sizes, causal
or not, with masks, Tq != Tk, every tiling shape the template offers, both chip presets; and what happens when
it cannot take the op (the decomposition, said in the fusion log).
"""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from pyasc.codegen.templates import attention as template
from pyasc.codegen.templates import attention_steps as steps
from conftest import assert_close
from test_attention_op import reference

TOL = dict(rtol=2e-3, atol=2e-3, check_dtype=False)   # a float16 result against float64


def attend(q, k, v):
    return pyasc.attention(q, k, v)


def attend_causal(q, k, v):
    return pyasc.attention(q, k, v, causal=True)


def attend_masked(q, k, v, mask):
    return pyasc.attention(q, k, v, mask=mask)


def attend_scaled(q, k, v):
    return pyasc.attention(q, k, v, scale=0.3, causal=True)


def _qkv(rng, b, tq, tk, d, dv=None):
    shapes = [(b, tq, d), (b, tk, d), (b, tk, dv or d)]
    return [(rng.standard_normal(s) * 0.8).astype(np.float16) for s in shapes]


def _run(fn, args, chip="tiny", **ref_kw):
    kern = pyasc.kernel(fn, chip=chip, sanitize=True)
    kernels = kern.compile(*args).kernels
    out, prof = kern.profile(*args)
    assert out.dtype == np.float16 and out.shape == args[0].shape[:-1] + (args[2].shape[-1],)
    assert_close(out, reference(*args[:3], **ref_kw), **TOL)
    return kernels, prof


@pytest.mark.parametrize("b,tq,tk,d", [(1, 1, 1, 16), (2, 7, 7, 32), (3, 40, 40, 16), (1, 100, 100, 16),
                                       (2, 5, 37, 32), (1, 33, 9, 16)])
@pytest.mark.parametrize("causal", [False, True])
def test_one_launch_golden(rng, b, tq, tk, d, causal):
    args = _qkv(rng, b, tq, tk, d)
    if causal and tq > tk:
        # rows i < tq - tk see no key: numpy's NaN there (the op's contract), the rest compared
        kern = pyasc.kernel(attend_causal, chip="tiny", sanitize=True)
        out = kern(*args)
        ref = reference(*args, causal=True)
        assert np.isnan(out[:, :tq - tk]).all() and np.isnan(ref[:, :tq - tk]).all()
        assert_close(out[:, tq - tk:], ref[:, tq - tk:], **TOL)
        return
    kernels, prof = _run(attend_causal if causal else attend, args, causal=causal)
    assert [k.template for k in kernels] == ["attention"] and prof.launches == 1


@pytest.mark.parametrize("bq,bk,lead", [(16, 16, 1), (16, 16, 2), (32, 16, 2), (16, 32, 1), (32, 32, 2)])
@pytest.mark.parametrize("causal", [False, True])
def test_every_block_shape_and_lead(rng, monkeypatch, bq, bk, lead, causal):
    """Key blocks walked with the cube 1 or 2 blocks ahead, fewer blocks than the lead (T = 20) and many."""
    monkeypatch.setattr(template, "SIZES", (bq, bk))
    monkeypatch.setattr(template, "LEADS", (lead,))
    for t in (20, 75):
        args = _qkv(rng, 2, t, t, 16)
        kernels, _ = _run(attend_causal if causal else attend, args, causal=causal)
        assert kernels[0].template == "attention"
        assert f"{bq} queries x {bk} keys per block, S {lead} block(s) ahead" in kernels[0].tiling.text()


def test_one_pipeline_over_a_groups_items(rng, monkeypatch):
    """Not causal: a group's items run as one pipeline, the last blocks' P V of an item folded (and the item
    stored) after the next items' first blocks are softmaxed. Several items per group; one key block per item
    (the fold two items behind the softmax), and two with a mask. (Lead 1 across items: the block shapes'
    test.)"""
    monkeypatch.setattr(template, "SIZES", (16,))
    monkeypatch.setattr(template, "LEADS", (2,))
    args = _qkv(rng, 5, 16, 16, 16)
    kernels, _ = _run(attend, args)
    assert any(n.startswith("one pipeline over each group's items") for n in kernels[0].notes)
    args = _qkv(rng, 3, 27, 27, 16)
    mask = (rng.standard_normal((27, 27)) * 0.5).astype(np.float32)
    mask[2, :] = -np.inf
    mask[2, 26] = 0.0
    _run(attend_masked, args + [mask], mask=mask)


@pytest.mark.parametrize("lead", [1, 2])
def test_causal_items_in_one_pipeline(rng, monkeypatch, lead):
    """Causal: a group's items, which walk from one to several key blocks, run as one pipeline (P tiles in two
    banks by the item's parity, one S and one P V tile). Five heads of one block each: the step two back is two
    items back; Tk > Tq (bottom-right aligned): items of three and four blocks."""
    monkeypatch.setattr(template, "SIZES", (16,))
    monkeypatch.setattr(template, "LEADS", (lead,))
    for b, tq, tk in ((5, 16, 16), (2, 30, 50)):
        kernels, _ = _run(attend_causal, _qkv(rng, b, tq, tk, 16), causal=True)
        assert any(n.startswith("one pipeline over each group's items") for n in kernels[0].notes)
        # 16 x 16 tiles: S and P V float32, P float16 (half the bytes), per group
        ws = {name: loc.nbytes for name, loc in kernels[0].scratch.items()}
        assert ws["chs"] == ws["cho"] and ws["chp"] == 2 * ws["chs"]


@pytest.mark.parametrize("mask_dtype", [np.float32, np.float16])
def test_additive_mask_with_whole_masked_key_blocks(rng, monkeypatch, mask_dtype):
    """A left-padding mask hides the first keys of some rows, more than a key block: those rows start with
    every key masked (their running max must not turn into NaN); one row sees a single key."""
    monkeypatch.setattr(template, "SIZES", (16,))
    args = _qkv(rng, 2, 24, 50, 16)
    mask = (rng.standard_normal((24, 50)) * 0.5).astype(mask_dtype)
    mask[:8, :20] = -np.inf
    mask[9, :] = -np.inf
    mask[9, 33] = 0.0
    kernels, _ = _run(attend_masked, args + [mask], mask=mask)
    assert kernels[0].template == "attention"


def test_a_row_that_sees_no_key_is_nan_as_in_numpy(rng):
    args = _qkv(rng, 1, 10, 12, 16)
    mask = np.zeros((10, 12), np.float32)
    mask[3] = -np.inf
    out = pyasc.kernel(attend_masked, chip="tiny", sanitize=True)(*args, mask)
    ref = reference(*args, mask=mask)
    assert np.isnan(out[0, 3]).all() and np.isnan(ref[0, 3]).all()
    keep = np.arange(10) != 3
    assert_close(out[0, keep], ref[0, keep], **TOL)


def test_explicit_scale_and_a_value_width_unlike_the_key_width(rng):
    args = _qkv(rng, 2, 30, 30, 16, dv=48)
    kernels, _ = _run(attend_scaled, args, scale=0.3, causal=True)
    assert kernels[0].template == "attention"


@pytest.mark.parametrize("b,t,d,causal", [(2, 100, 64, True), (1, 130, 128, False)])
def test_910b(rng, b, t, d, causal):
    kernels, prof = _run(attend_causal if causal else attend, _qkv(rng, b, t, t, d), chip="910b", causal=causal)
    assert [k.template for k in kernels] == ["attention"] and prof.launches == 1


@pytest.mark.parametrize("b,tq,tk,d,causal", [(2, 37, 37, 32, True), (1, 9, 50, 16, False), (2, 70, 70, 64, True)])
def test_float32(rng, b, tq, tk, d, causal):
    args = [x.astype(np.float32) for x in _qkv(rng, b, tq, tk, d)]
    kern = pyasc.kernel(attend_causal if causal else attend, chip="tiny", sanitize=True)
    out, prof = kern.profile(*args)
    assert out.dtype == np.float32 and prof.launches == 1
    assert [k.template for k in kern.compile(*args).kernels] == ["attention"]
    assert_close(out, reference(*args, causal=causal), rtol=1e-5, atol=1e-5, check_dtype=False)


def test_an_attention_the_template_cannot_take_is_lowered_through_its_decomposition_and_says_why(rng):
    q, k, v = (x.astype(np.float32) for x in _qkv(rng, 1, 9, 9, 24))     # float32 rows of 24: not whole fractals
    kern = pyasc.kernel(attend, chip="tiny", sanitize=True)
    art = kern.compile(q, k, v)
    assert "attention" not in [dk.template for dk in art.kernels]
    assert any("decomposed: attention" in line and "multiples of 16" in line
               for line in art.stages["fusion_log"].splitlines())
    assert_close(kern(q, k, v), reference(q, k, v), rtol=1e-4, atol=1e-5, check_dtype=False)


def attend_numpy(q, k, v):
    s = q @ k.transpose(0, 2, 1) * np.float16(0.125)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ v


def test_numpy_attention_becomes_the_fused_launch_and_beats_the_unfused_one(rng):
    args = _qkv(rng, 2, 64, 64, 64)
    fused_kernel = pyasc.kernel(attend_numpy, chip="tiny", sanitize=True)
    out, fused = fused_kernel.profile(*args)
    assert [k.template for k in fused_kernel.compile(*args).kernels] == ["attention"]
    assert_close(out, reference(*args, scale=0.125), rtol=1e-2, atol=1e-2, check_dtype=False)
    split = pyasc.kernel(attend_numpy, chip="tiny", disable_passes=["attention"]).profile(*args)[1]
    assert fused.launches == 1 and split.launches > 1 and fused.cycles < split.cycles


def test_work_items_snake_over_the_groups_each_taken_once():
    """Every item once; a group's causal work (its query blocks' sizes, qb + 1) within one block of the others',
    the busiest group's within a block of the average (items numbered longest first: 8 heads x 8 blocks on 22
    groups load the busiest with 14 blocks, against 17 when numbered head by head)."""
    from pyasc import symbolic as sy      # only this test evaluates the item expressions
    for items, groups, nqb in [(48, 24, 4), (7, 3, 7), (5, 8, 5), (30, 4, 3), (1, 1, 1), (25, 6, 5), (64, 22, 8)]:
        taken, work = [], []
        for g in range(groups):
            env = {"W": items, "G": groups, "NQB": nqb, "B": items // nqb, "Tq": 16 * nqb, "core": g, "group": g}
            count = sy.evaluate(steps.count(template.CORE), env)
            lets = {}
            mine = 0
            for w in range(count):
                for let in steps.item_lets(template.AttentionTiling(16, 16, 1, groups), template.CORE):
                    lets[let.var] = sy.evaluate(let.value, {**env, **lets, "w": w})
                taken.append(lets["t"])
                mine += lets["qb"] + 1
            work.append(mine)
        assert sorted(taken) == list(range(items)), (items, groups)
        if items % (2 * groups) == 0:
            assert max(work) - min(work) <= nqb, work
        assert max(work) <= max(-(-sum(work) // groups) + 1, nqb), (items, groups, work)


def test_the_cost_model_charges_the_round_trip_through_the_vector_cores():
    """S goes to the vector cores and P comes back: with one block in flight the sides take turns, so a block
    costs both sides' work on it, more than the two-stage pipeline's slower side (measured: 0.8-1.0x)."""
    lead = 1
    from pyasc.codegen import schedules           # only these tests score schedules by hand
    from pyasc.codegen.cost import estimate, launch_cycles
    from pyasc.codegen.templates.row_operands import RowOperand
    from pyasc.target import get_chip
    chip = get_chip("910b")
    rows = (RowOperand("in0", (4,), (256 * 64,), 64),) * 3 + (RowOperand("out0", (4,), (256 * 64,), 64),)
    a = template.AttentionOp("x", 4, 256, 256, 64, 64, "float16", "float16", 0.125, True, rows)
    s = template.schedule(a, template.AttentionTiling(64, 64, 2, 24, lead), chip)
    assert s.round_trip == lead
    sides = [estimate(side, {}, chip) for side in s.sides]
    own = [e.cycles - launch_cycles(chip, e.blocks) for e in sides]
    assert schedules.score(s, {}, chip).core_cycles >= sum(own) / lead - 1e-6


def test_per_row_values_are_read_in_place_by_repeat_addressing():
    """x - m', O *= alpha and O / l read each row's value from one UB block with a source block stride of 0 (no
    row-wide broadcast copy) where the rows are whole repeats; the results stay those of the formula."""
    rng = np.random.default_rng(7)
    args = _qkv(rng, 1, 24, 40, 64)
    kern = pyasc.kernel(attend, chip="tiny", sanitize=True)
    aiv = kern.compile(*args).kernels[0].program.aiv.listing()
    strided = [ln for ln in aiv.splitlines() if "vmul" in ln and "srcs=((1, 8), (0, 1))" in ln]
    assert strided, aiv                       # O (64 float32 columns: one repeat a row) scaled in place
    assert_close(kern(*args), reference(*args), **TOL)
