"""Mixed launches: a matmul and the vector work on its result in one cube+vector launch (sanitizer on).

The cube hands each output block to its group's vector cores through an L2-resident workspace tile; the
cross-core flags come from the analysis in `codegen/cross_sync.py`. Golden against `py_func` on odd sizes
(not multiples of 16, one row, batches), both chip presets.
"""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from conftest import assert_close

CHIPS = ["tiny", "910b"]


def mm_gelu_bias(x, w, b):
    return pyasc.gelu(x @ w + b)


def mm_residual(x, w, r):
    return pyasc.relu(x @ w) + r * 0.5


def mm_scale_cast(x, w):
    return (pyasc.matmul(x, w) * 0.125).astype(np.float16)


def mm_per_row(x, w, s):
    return pyasc.silu(x @ w) * s            # s: one value per row, shape (M, 1)


def batched(x, w, b):
    return pyasc.tanh(x @ w) + b


def product_and_epilogue(x, w):
    y = x @ w
    return y, pyasc.sigmoid(y)


def _run(fn, *args, chip="tiny", **options):
    k = pyasc.kernel(fn, chip=chip, sanitize=True, **options)
    out, prof = k.profile(*args)
    ref = k.py_func(*(a.astype(np.float32) if a.dtype == np.float16 else a for a in args))
    outs = out if isinstance(out, tuple) else (out,)
    refs = ref if isinstance(ref, tuple) else (ref,)
    for o, r in zip(outs, refs):
        assert_close(o, np.asarray(r).astype(o.dtype), rtol=2e-2, atol=2e-2)
    return k, prof


def _vals(rng, shape, dtype="float16"):
    return (rng.standard_normal(shape) * 0.5).astype(dtype)


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("m,k,n", [(1, 16, 16), (7, 31, 33), (40, 48, 72), (33, 20, 130)])
def test_matmul_bias_gelu_is_one_launch(rng, chip, m, k, n):
    args = (_vals(rng, (m, k)), _vals(rng, (k, n)), _vals(rng, (n,)))
    kern, prof = _run(mm_gelu_bias, *args, chip=chip)
    assert prof.launches == 1
    (dk,) = kern.compile(*args).kernels
    assert dk.template == "mixed" and dk.core_type == "mix"
    assert "cross-core" in dk.sync_summary and "one mixed launch" in dk.notes[0]


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("fn,shapes", [
    (mm_residual, [(9, 24), (24, 40), (9, 40)]),
    (mm_scale_cast, [(17, 32), (32, 20)]),
    (mm_per_row, [(12, 16), (16, 33), (12, 1)]),
    (batched, [(3, 5, 24), (24, 18), (18,)]),
    (product_and_epilogue, [(10, 16), (16, 24)]),
])
def test_epilogues_golden(rng, chip, fn, shapes):
    args = tuple(_vals(rng, s, "float32") for s in shapes)
    kern, prof = _run(fn, *args, chip=chip)
    assert [dk.template for dk in kern.compile(*args).kernels] == ["mixed"] and prof.launches == 1


def test_disabling_the_pass_gives_separate_launches(rng):
    """Both golden (`_run`); they may round differently: separately, an fp16 bias is cast and added in the cube's
    float32 accumulator; in one launch the vector cores add it to the fp16 product as numpy does."""
    args = (_vals(rng, (20, 32)), _vals(rng, (32, 24)), _vals(rng, (24,)))
    one, p1 = _run(mm_gelu_bias, *args)
    two, p2 = _run(mm_gelu_bias, *args, disable_passes=["mixed_kernels"])
    assert p1.launches == 1 and p2.launches > 1
    log = one.compile(*args).stages["fusion_log"]
    assert "mixed: fused_matmul" in log and "one cube+vector launch" in log
    assert "mixed:" not in two.compile(*args).stages["fusion_log"]


def test_the_mixed_launch_is_faster_than_two_launches(rng):
    """Simulated: no second launch (and the vector cores read the product from L2 while the cube works on)."""
    args = (_vals(rng, (128, 128)), _vals(rng, (128, 256)), _vals(rng, (256,)))
    _, one = _run(mm_gelu_bias, *args, chip="910b")
    _, two = _run(mm_gelu_bias, *args, chip="910b", disable_passes=["mixed_kernels"])
    assert one.launches == 1 and one.cycles < 0.8 * two.cycles


def test_an_epilogue_the_mixed_template_cannot_follow_falls_back_and_says_why(rng):
    def mv(a, b, bias):
        return pyasc.relu(pyasc.matmul(a, b) + bias)    # a matrix-vector product: N = 1

    args = (_vals(rng, (33, 31), "float32"), _vals(rng, (31,), "float32"), _vals(rng, (33,), "float32"))
    kern, _ = _run(mv, *args)
    kernels = kern.compile(*args).kernels
    assert [dk.template for dk in kernels] == ["matmul", "vector"]
    assert kernels[0].notes[0].startswith("not a mixed launch:")


def test_cross_sync_looks_into_a_when_every_core_of_the_group_takes_alike():
    """A When on a block index (a producer running ahead of its consumer) is looked into: its channel access is
    the site, its flags run only when it does. A When that depends on the vector core's index in its group
    (through a Let) is one site whole: its flags run on every path, so an idle vector core stays in step."""
    from pyasc import symbolic as sy
    from pyasc.codegen import tileops as T
    from pyasc.codegen.cross_sync import _sites
    from pyasc.codegen.schedule import SUB, Buffer, Channel, GmRef, Let, Loop, Ref, TileSchedule, When

    j = sy.sym("j")
    write = T.fixpipe(GmRef("ch", 0), Ref("c"), 16, 16, "float32")
    ahead = When(sy.lt(j, sy.sym("n")), [write])
    cube = TileSchedule("cube", "aic", [], {}, 1, [Buffer("c", "L0C", "float32", 1024, 1)],
                        [Loop("j", 0, sy.add(sy.sym("n"), 1), 1, [ahead])])
    assert [stmt for stmt, _ in _sites(cube, Channel("ch", "aic", 1024, 2), write=True)] == [write]

    read = T.load(Ref("u"), GmRef("ch", 0), "float32", 256)
    mine = When(sy.lt(0, sy.sym("rows")), [read])
    vec = TileSchedule("vec", "aiv", [], {}, 2, [Buffer("u", "UB", "float32", 1024, 1)],
                       [Loop("j", 0, sy.sym("n"), 1, [Let("rows", sy.add(sy.sym("m"), sy.mul(-1, sy.sym(SUB)))), mine])])
    assert [stmt for stmt, _ in _sites(vec, Channel("ch", "aic", 1024, 2), write=False)] == [mine]
