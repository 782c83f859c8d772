"""Random graphs through the whole backend: fusion asks codegen what fits, and every group it forms tiles.

The graphs are the optimiser's random-graph recipes (tests/ge/test_pipeline_random.py): elementwise
chains, reductions, matmuls, transposes, casts, Ifs. Each is optimised at every opt_level with the
code generator's capacity function, compiled for both presets, run on the emulator with the sanitizer
on, and compared with the reference interpreter of the unoptimised graph.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from hypothesis import given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "ge"))  # the shared recipe builder

from ge_equiv import assert_same_results, random_inputs  # noqa: E402
from test_pipeline_random import build, recipes  # noqa: E402

from simulator import chips  # noqa: E402

from pyasc import ge  # noqa: E402
from pyasc.codegen.capacity import codegen_capacity  # noqa: E402
from pyasc.codegen.generate import CodegenOptions, generate  # noqa: E402
from pyasc.ir import interpret  # noqa: E402
from pyasc.runtime.artifact import build_host  # noqa: E402
from pyasc.runtime.emulator import EmulatorRunner  # noqa: E402


def run_on_emulator(graph, chip_name: str, opt_level: int, arrays):
    chip = chips.get(chip_name)
    result = ge.optimize(graph, opt_level=opt_level, chip=chip, capacity=codegen_capacity(chip))
    module = generate(result.graph, result.kernels, result.memory_plan, chip, CodegenOptions(), "random")
    host = build_host(module, "random")
    return EmulatorRunner(module, host, chip, True, result.graph).run(arrays)


@settings(max_examples=25, deadline=None, derandomize=True, database=None)
@given(recipe=recipes, seed=st.integers(0, 2**16), chip=st.sampled_from(["tiny", "910b"]))
def test_random_graphs_run_on_the_emulator_at_every_opt_level(recipe, seed, chip):
    rng = np.random.default_rng(seed)
    arrays = random_inputs(build(recipe), rng)
    expected = interpret(build(recipe), arrays)
    for level in (0, 1, 2, 3):
        assert_same_results(expected, run_on_emulator(build(recipe), chip, level, arrays))
