"""Data-movement kernels on the emulator: transposes, slices, broadcasts, reshapes (aliases) and transdata.

Every kernel runs with the sanitizer on "tiny" (16 KiB UB: small tensors already need many tiles,
tails and several cores) and "910b", and is compared bit for bit with numpy (`py_func`): data
movement never rounds.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import pyasc
from pyasc import ge
from pyasc.codegen.generate import CodegenOptions, generate
from pyasc.codegen.launch import WORKSPACE, Loc, Locator
from pyasc.codegen.templates.access import StridedAccess, collapse, contiguous_range
from pyasc.errors import CompileError
from pyasc.ge.plan import BufferAssignment, MemoryPlan
from pyasc.ir import Graph, TensorType, interpret
from pyasc.runtime.artifact import build_host
from pyasc.runtime.emulator import EmulatorRunner
from simulator import chips

CHIPS = ["tiny", "910b"]
DTYPES = ["float32", "float16", "int8", "int32", "bool"]


def values(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    return (rng.standard_normal(shape) * 20).astype(dtype)


def run(kernel, x, *attrs):
    """Run on the emulator (sanitized) and compare exactly with numpy; returns the profile."""
    out, prof = kernel.profile(x, *attrs)
    ref = np.asarray(kernel.py_func(x, *attrs))
    assert out.shape == ref.shape and out.dtype == ref.dtype
    np.testing.assert_array_equal(out, ref)
    return prof


def transpose(x, axes):
    return pyasc.transpose(x, axes)


def broadcast(x, shape):
    return pyasc.broadcast_to(x, shape)


def reshape_exp(x, shape):
    return pyasc.exp(pyasc.reshape(x, shape))


def reshape_out(x, shape):
    return pyasc.reshape(x, shape)


def scaled_reshape_out(x, shape):
    return pyasc.reshape(x * 2, shape)


# ---- the access maps -----------------------------------------------------------------------------


def test_collapse_merges_dims_that_move_together():
    # (2, 3, 4) read in order is one run of 24; a transpose of the last two keeps three dims
    assert collapse(StridedAccess((2, 3, 4), (12, 4, 1))) == StridedAccess((24,), (1,))
    assert collapse(StridedAccess((2, 4, 3), (12, 1, 4))).shape == (2, 4, 3)
    # size-1 dims vanish; broadcast dims (stride 0) merge with each other
    assert collapse(StridedAccess((5, 1, 6, 7), (0, 99, 0, 1))) == StridedAccess((30, 7), (0, 1))
    assert contiguous_range(StridedAccess((1, 8), (8, 1), 16))
    assert not contiguous_range(StridedAccess((3, 8), (16, 1)))


# ---- transposes ---------------------------------------------------------------------------------


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 7), (7, 1), (31, 33), (33, 1023), (130, 70)])
def test_transpose_2d(chip, dtype, shape):
    run(pyasc.kernel(transpose, chip=chip, sanitize=True), values(shape, dtype), None)


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("shape", [(2, 3, 4), (7, 31, 5), (2, 3, 4, 5)])
def test_transpose_every_permutation(chip, shape):
    k = pyasc.kernel(transpose, chip=chip, sanitize=True)
    x = values(shape, "float16")
    for perm in itertools.permutations(range(len(shape))):
        run(k, x, perm)


def test_transpose_larger_than_ub_tiles_both_axes_over_the_cores():
    x = values((130, 257), "float32")          # 134 KB: eight times the tiny chip's UB
    k = pyasc.kernel(transpose, chip="tiny", sanitize=True)
    prof = run(k, x, None)
    dk = k.compile(x, None).kernels[0]
    assert dk.template == "datamove" and "-> transpose" in dk.schedule.notes[0]
    assert any(op.instr == "vtranspose" for op in dk.schedule.ops())
    assert prof.per_launch[0].blocks == 4       # every AIV core of the tiny chip
    assert prof.gm_read_bytes == x.nbytes and prof.gm_write_bytes == x.nbytes


def test_transpose_tiling_is_chosen_by_the_cost_model_and_cores_cap_it():
    x = values((512, 512), "float32")
    k = pyasc.kernel(transpose, chip="910b")
    tiling = k.compile(x, None).kernels[0].tiling
    assert tiling.others and tiling.score.cycles <= min(c.score.cycles for c in tiling.others)
    capped = pyasc.kernel(transpose, chip="910b", cores=3, sanitize=True)
    assert run(capped, x, None).per_launch[0].blocks <= 3


# ---- slices ---------------------------------------------------------------------------------------


def rows_reversed(x):
    return x[::-1]


def every_second_column(x):
    return x[:, ::2]


def columns_reversed(x):
    return x[:, ::-1]


def strided_both(x):
    return x[1:6:2, 3:30:5]


def reversed_both(x):
    return x[::-2, ::-3]


def one_column(x):
    return x[:, 5]


def inner_columns(x):
    return x[:, 1:32]


def reversed_rows_stepped_columns(x):
    return x[6:0:-1, ::7]


SLICES_2D = [rows_reversed, every_second_column, columns_reversed, strided_both, reversed_both, one_column,
             inner_columns, reversed_rows_stepped_columns]


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "bool"])
@pytest.mark.parametrize("fn", SLICES_2D, ids=lambda f: f.__name__)
def test_slices_2d(chip, dtype, fn):
    run(pyasc.kernel(fn, chip=chip, sanitize=True), values((7, 33), dtype))


def flip(x):
    return x[::-1]


def every_third(x):
    return x[5:1000:7]


def mixed_4d(x):
    return x[:, ::-1, 1:6:2, ::-3]


def index_and_steps_4d(x):
    return x[::2, :, 3, ::2]


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("fn,shape,dtype", [(flip, (1023,), "float32"), (every_third, (1023,), "int16"),
                                            (flip, (5000,), "int32"), (every_second_column, (3, 4097), "float16"),
                                            (mixed_4d, (3, 5, 7, 9), "float16"),
                                            (index_and_steps_4d, (3, 5, 7, 9), "int8")],
                         ids=lambda v: getattr(v, "__name__", str(v)))
def test_slices_long_and_4d(chip, fn, shape, dtype):
    run(pyasc.kernel(fn, chip=chip, sanitize=True), values(shape, dtype))


def test_a_step_on_the_last_axis_gathers_only_the_bytes_it_needs():
    x = values((16, 2000), "float32")
    k = pyasc.kernel(every_second_column, chip="tiny", sanitize=True)
    prof = run(k, x)
    assert "-> gather" in k.compile(x).kernels[0].schedule.notes[0]
    assert prof.gm_read_bytes == x.nbytes // 2 and prof.gm_write_bytes == x.nbytes // 2


@pytest.mark.parametrize("chip", CHIPS)
def test_a_reversed_last_axis_costs_one_vcopy_per_column_of_each_tile(chip):
    x = values((64, 100), "float16")
    k = pyasc.kernel(columns_reversed, chip=chip, sanitize=True)
    prof = run(k, x)
    t = k.compile(x).kernels[0].tiling.params
    # loaded in source order, turned in UB so the columns are rows, reversed by one vcopy per column, turned back
    row_tiles = -(-64 // t.rows)
    assert t.rows > 1 and prof.per_launch[0].result.instr_counts.get("vcopy", 0) == row_tiles * 100


@pytest.mark.parametrize("n", [1021, 1023, 5000])
def test_a_reversed_vector_is_folded_into_rows_when_its_length_has_a_divisor(n):
    x = values((n,), "int32")
    k = pyasc.kernel(flip, chip="tiny", sanitize=True)
    prof = run(k, x)
    vcopies = prof.per_launch[0].result.instr_counts.get("vcopy", 0)
    if n == 1021:   # a prime: one vcopy per element
        assert vcopies == n
    else:           # 1023 = 33 x 31, 5000 = 100 x 50: about one vcopy per row and per column of each tile
        assert vcopies < n // 4


def empty_rows(x):
    return x[3:3]


def test_zero_size_results_launch_nothing():
    k = pyasc.kernel(empty_rows, chip="tiny", sanitize=True)
    prof = run(k, values((7, 5), "float32"))
    assert prof.launches == 0
    prof = run(pyasc.kernel(transpose, chip="tiny", sanitize=True), np.zeros((0, 5), np.float32), None)
    assert prof.launches == 0


# ---- broadcasts -------------------------------------------------------------------------------------


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("dtype", ["float32", "int8", "bool"])
@pytest.mark.parametrize("src,dst", [((4,), (3, 4)), ((3, 1), (2, 3, 4)), ((1,), (1023,)), ((7, 1), (7, 33)),
                                     ((1, 33), (31, 33)), ((3, 1, 5), (3, 4, 5)), ((2, 1, 1), (2, 7, 31)),
                                     ((), (5, 6)), ((31, 1), (31, 4097))],
                         ids=str)
def test_broadcast_to(chip, dtype, src, dst):
    run(pyasc.kernel(broadcast, chip=chip, sanitize=True), values(src, dtype), dst)


def test_broadcast_of_leading_axes_loads_once_and_stores_many_times():
    x = values((1000,), "float32")
    k = pyasc.kernel(broadcast, chip="910b", sanitize=True)
    prof = run(k, x, (4096, 1000))
    launch = prof.per_launch[0]
    assert launch.blocks > 1 and prof.gm_read_bytes == x.nbytes * launch.blocks   # once per core
    assert prof.gm_write_bytes == 4096 * x.nbytes


# ---- reshape, squeeze, expand_dims: aliases -----------------------------------------------------------


def test_a_contiguous_reshape_is_an_alias_with_no_launch():
    x = values((6, 8), "float32")
    k = pyasc.kernel(reshape_exp, chip="tiny", sanitize=True)
    out, prof = k.profile(x, (4, 12))
    np.testing.assert_allclose(out, k.py_func(x, (4, 12)), rtol=1e-5)
    assert prof.launches == 1 and [d.template for d in k.compile(x, (4, 12)).kernels] == ["vector"]


def test_a_reshaped_result_is_written_by_its_producer_in_place():
    x = values((6, 8), "int32")
    prof = run(pyasc.kernel(scaled_reshape_out, chip="tiny", sanitize=True), x, (3, 16))
    assert prof.launches == 1          # the multiply writes the result buffer; the reshape launches nothing


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,target", [((1,), (1, 1)), ((33, 31), (31, 33)), ((33, 1023), (-1,))], ids=str)
def test_reshaping_an_input_into_a_result_copies_it(chip, dtype, shape, target):
    x = values(shape, dtype)
    k = pyasc.kernel(reshape_out, chip=chip, sanitize=True)
    prof = run(k, x, target)
    assert prof.launches == 1 and k.compile(x, target).kernels[0].template == "datamove"
    assert prof.gm_read_bytes == x.nbytes and prof.gm_write_bytes == x.nbytes


def squeeze_expand(x):
    return pyasc.exp(pyasc.expand_dims(pyasc.squeeze(x, 1), 0))


def test_squeeze_and_expand_dims_are_aliases():
    x = values((3, 1, 40), "float32")
    k = pyasc.kernel(squeeze_expand, chip="tiny", sanitize=True)
    out, prof = k.profile(x)
    np.testing.assert_allclose(out, k.py_func(x), rtol=1e-5)
    assert prof.launches == 1


def reshape_while_its_bytes_are_reused(x):
    u = pyasc.exp(x)
    r = pyasc.reshape(u, (-1,))
    w = pyasc.sin(x)
    v = pyasc.reshape(w, (-1,))
    return v + r


def test_an_alias_whose_bytes_are_reused_before_its_last_read_is_a_copy():
    x = values((4, 8), "float32")
    k = pyasc.kernel(reshape_while_its_bytes_are_reused, chip="tiny", opt_level=0, sanitize=True)
    c = k.compile(x)
    exp_slot = next(a for a in c.memory_plan.assignments if a.label.startswith("exp"))
    sin_slot = next(a for a in c.memory_plan.assignments if a.label.startswith("sin"))
    assert exp_slot.offset == sin_slot.offset  # the planner reuses exp's bytes for sin
    out, prof = k.profile(x)
    np.testing.assert_allclose(out, k.py_func(x), rtol=1e-5)
    # exp, a copy of its reshape (sin overwrites exp's bytes while the reshape is read), sin, add;
    # sin's reshape is an alias
    assert [d.template for d in c.kernels] == ["vector", "datamove", "vector", "vector"]
    assert prof.launches == 4


def test_locator_alias_checks_reuse_of_the_source_bytes_against_the_last_read():
    g = Graph("g")
    x = g.add_input(TensorType((4, 8), "float32"), "x")
    u = g.add("exp", [x], {}).out()
    r = g.add("reshape", [u], {"shape": (32,)}).out()
    w = g.add("sin", [x], {}).out()
    plan = MemoryPlan([BufferAssignment(u, 128, 0, 0, 1, 512), BufferAssignment(w, 128, 0, 2, 3, 512)])
    locs = {u: Loc(WORKSPACE, 0, 128), w: Loc(WORKSPACE, 0, 128)}
    assert not Locator(dict(locs), plan=plan).alias(r, u, 0, step=1, last_read=3)   # w overwrites at step 2
    safe = Locator(dict(locs), plan=plan)
    assert safe.alias(r, u, 0, step=1, last_read=1) and safe[r] == Loc(WORKSPACE, 0, 128)
    assert not Locator(dict(locs), plan=plan, fixed=[r]).alias(r, u, 0, step=1, last_read=1)


# ---- dynamic shapes ----------------------------------------------------------------------------------


def test_dynamic_transposes_and_slices_run_new_shapes_without_recompiling():
    k = pyasc.kernel(transpose, chip="tiny", dynamic=True, sanitize=True)
    for shape in [(3, 5, 7), (17, 2, 40), (2, 9, 2)]:
        run(k, values(shape, "float32"), (2, 0, 1))
    s = pyasc.kernel(one_column, chip="tiny", dynamic=True, sanitize=True)
    for shape in [(4, 7), (33, 9)]:
        run(s, values(shape, "int16"))
    assert k.cache_info().misses == 1 and s.cache_info().misses == 1


# ---- transdata (format conversions, from hand-built graphs) -------------------------------------------


def nz_storage(x: np.ndarray, n0: int) -> np.ndarray:
    """numpy's FRACTAL_NZ image of (..., M, N): (..., N1, M1, 16, N0), zeros in the padding."""
    x2 = x if x.ndim >= 2 else x[None]
    *batch, m, n = x2.shape
    m1, n1 = -(-m // 16), -(-n // n0)
    padded = np.zeros((*batch, m1 * 16, n1 * n0), x.dtype)
    padded[..., :m, :n] = x2
    nb = len(batch)
    blocks = padded.reshape(*batch, m1, 16, n1, n0)
    return blocks.transpose(*range(nb), nb + 2, nb, nb + 1, nb + 3)


def nc1hwc0_storage(x: np.ndarray, c0: int) -> np.ndarray:
    n, c, h, w = x.shape
    c1 = -(-c // c0)
    padded = np.zeros((n, c1 * c0, h, w), x.dtype)
    padded[:, :c] = x
    return padded.reshape(n, c1, c0, h, w).transpose(0, 1, 3, 4, 2)


def run_roundtrip(shape, dtype, fmt, chip):
    """x -> transdata(ND -> fmt) -> transdata(fmt -> ND) -> neg, on the emulator; returns (storage, x)."""
    g = Graph("td")
    x = g.add_input(TensorType(shape, dtype), "x")
    blocked = g.add("transdata", [x], {"src_format": "ND", "dst_format": fmt}).out()
    nd = g.add("transdata", [blocked], {"src_format": fmt, "dst_format": "ND"}).out()
    g.set_outputs([g.add("neg", [nd], {}).out()])
    cfg = chips.get(chip)
    # both conversions kept (blocked_layout would compute the neg in NC1HWC0 between them)
    res = ge.optimize(g, opt_level=3, disabled_passes=["transdata_elimination", "blocked_layout"], chip=cfg)
    dev = generate(res.graph, res.kernels, res.memory_plan, cfg, CodegenOptions(), "td")
    assert [k.template for k in dev.kernels] == ["transdata", "transdata", "vector"]
    runner = EmulatorRunner(dev, build_host(dev, "td"), cfg, True, res.graph)
    xv = values(shape, dtype)
    out = runner.run([xv])
    np.testing.assert_array_equal(out[0], interpret(res.graph, [xv])[0])
    loc = dev.launch.steps[0].args["out0"]
    storage_type = res.kernels[0].outputs[0].type
    stored = runner.device.read(loc.buffer, dtype, storage_type.storage_shape, offset=loc.offset)
    return stored, xv


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("dtype", ["float16", "float32", "int8"])
@pytest.mark.parametrize("shape", [(16, 16), (17, 33), (40,), (2, 3, 31, 20), (300, 70)], ids=str)
def test_transdata_nd_to_fractal_nz_and_back(chip, dtype, shape):
    stored, x = run_roundtrip(shape, dtype, "FRACTAL_NZ", chip)
    np.testing.assert_array_equal(stored, nz_storage(x, 32 if x.itemsize == 1 else 16))


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("dtype", ["float16", "float32", "int8"])
@pytest.mark.parametrize("shape", [(1, 16, 2, 2), (2, 3, 5, 7), (1, 40, 9, 9), (1, 3, 64, 64)], ids=str)
def test_transdata_nd_to_nc1hwc0_and_back(chip, dtype, shape):
    stored, x = run_roundtrip(shape, dtype, "NC1HWC0", chip)
    np.testing.assert_array_equal(stored, nc1hwc0_storage(x, 32 if x.itemsize == 1 else 16))


def test_transdata_between_two_blocked_formats_is_a_clear_error():
    g = Graph("td")
    x = g.add_input(TensorType((1, 16, 4, 4), "float16"), "x")
    nz = g.add("transdata", [x], {"src_format": "ND", "dst_format": "FRACTAL_NZ"}).out()
    nc = g.add("transdata", [nz], {"src_format": "FRACTAL_NZ", "dst_format": "NC1HWC0"}).out()
    g.set_outputs([g.add("transdata", [nc], {"src_format": "NC1HWC0", "dst_format": "ND"}).out()])
    cfg = chips.get("tiny")
    res = ge.optimize(g, opt_level=3, disabled_passes=["transdata_elimination"], chip=cfg)
    with pytest.raises(CompileError, match=r"no NPU lowering for `transdata` in kernel td_k1: FRACTAL_NZ -> "
                                           r"NC1HWC0 converts between two blocked formats; convert through ND"):
        generate(res.graph, res.kernels, res.memory_plan, cfg, CodegenOptions(), "td")
