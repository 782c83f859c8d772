"""`pyasc demo` runs every example on the emulator and reports real figures: simulated time, roofline,
GM traffic against the unfused graph, and the error against numpy."""
from __future__ import annotations

import io

import numpy as np
import pytest

import pyasc
from pyasc import demo
from pyasc.examples import BY_NAME, EXAMPLES
from pyasc.runtime.roofline import roofline
from pyasc.testing import TOLERANCE


def _table_rows(text: str) -> dict[str, dict[str, str]]:
    """The demo's table as {kernel: {column: cell}} (columns are separated by two or more spaces)."""
    lines = text.splitlines()
    header_i = next(i for i, ln in enumerate(lines) if ln.startswith("kernel "))
    starts = [0] + [i for i in range(1, len(lines[header_i + 1])) if lines[header_i + 1][i - 1] == " "
                    and lines[header_i + 1][i] == "-"]
    cut = lambda ln: [ln[a:b].strip() for a, b in zip(starts, starts[1:] + [None])]  # noqa: E731
    header = cut(lines[header_i])
    rows = {}
    for ln in lines[header_i + 2:header_i + 2 + len(EXAMPLES)]:
        cells = cut(ln)
        rows[cells[0]] = dict(zip(header, cells))
    return rows


@pytest.fixture(scope="module")
def report() -> str:
    out = io.StringIO()
    status = demo.main(chip="tiny", out=out)
    assert status == 0, out.getvalue()
    return out.getvalue()


def test_report_runs_on_the_emulator_and_every_kernel_matches(report):
    assert "backend=emulator" in report and "chip=tiny" in report
    assert f"{len(EXAMPLES)}/{len(EXAMPLES)} kernels match their numpy reference" in report
    assert "FAIL" not in report


def test_report_cells_are_measured_numbers(report):
    rows = _table_rows(report)
    assert set(rows) == {e.name for e in EXAMPLES}
    for name, row in rows.items():
        sim_us = float(row["sim us"])
        assert sim_us > 0.5, (name, row)              # at least a launch's start-up on the emulator
        pct = float(row["% roofline"])
        assert 0.0 <= pct <= 100.0, (name, row)
        assert int(row["GM bytes"]) > 0 and int(row["unfused GM bytes"]) > 0, (name, row)
        err = float(row["max abs err"])
        dtype = "float16" if name == "float16_affine" else "float32"
        rtol, atol = TOLERANCE[dtype]
        assert 0.0 <= err <= atol + rtol * 10, (name, row)
        assert int(row["kernels"]) >= 1


def test_fusion_moves_fewer_gm_bytes_than_the_unfused_graph(report):
    rows = _table_rows(report)
    row = rows["fused_elementwise"]
    # ten elementwise ops: unfused, every intermediate goes to GM and back; fused, only x, y and the result
    assert int(row["GM bytes"]) * 4 < int(row["unfused GM bytes"])
    assert row["kernels"] == "1"


def test_a_row_is_the_emulator_profile_of_the_call():
    ex = BY_NAME["softmax"]
    row = demo.run_example(ex, chip="tiny", opt_level=3)
    args = ex.make_inputs(np.random.default_rng(0))
    out, prof = pyasc.kernel(ex.fn, chip="tiny").profile(*args)
    assert row.sim_us == pytest.approx(prof.time_s * 1e6)
    assert row.gm_bytes == prof.gm_bytes
    np.testing.assert_allclose(out, ex.fn(*args), rtol=1e-5, atol=1e-6)


def test_roofline_of_a_matmul_counts_cube_work():
    ex = BY_NAME["matmul_bias_relu"]
    a, b, bias = ex.make_inputs(np.random.default_rng(0))
    art = pyasc.kernel(ex.fn, chip="tiny").compile(a, b, bias)
    chip = art.options.chip_config
    r = roofline(art.graph, chip, [a, b, bias], [np.zeros((32, 16), np.float32)])
    # fp32: 16 x 8 x 16 MACs per block, cube_fp32_block_cycles a block, on every cube core
    per_cycle = 16 * 8 * 16 / chip.cube_fp32_block_cycles * chip.aic_cores
    assert r.compute_s == pytest.approx(32 * 16 * 48 / per_cycle / chip.clock_hz)
    assert r.ideal_gm_bytes == a.nbytes + b.nbytes + bias.nbytes + 32 * 16 * 4
    assert r.time_s == max(r.memory_s, r.compute_s)
