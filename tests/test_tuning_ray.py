"""Autotuning and cache warming on a real local Ray instance (the optional extra `.[ray]`; .ci/run installs it):
`kernel.tune(executor="ray")`, `pyasc tune --ray` and `pyasc cache warm --ray`. One instance for the module."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from pyasc import cli
from pyasc.runtime.diskcache import DiskCache

ray = pytest.importorskip("ray", reason="the Ray tests need the extra: pip install -e '.[ray]'")

from test_tuning import KERNELS, fresh_process  # noqa: E402  (the same kernels and fresh-process probe)


@pytest.fixture(scope="module")
def local_ray():
    assert not ray.is_initialized()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture
def kernels(tmp_path):
    path = tmp_path / "tune_kernels.py"
    path.write_text(KERNELS + '\nPYASC_WARM = {"sm": [["f32[16,32]"], ["f16[8,64]"]], "mm": [["f16[32,32]", '
                              '"f16[32,32]"]]}\n')
    return path


def test_kernel_tune_on_ray_keeps_the_fastest_and_a_fresh_process_uses_it(local_ray, kernels, disk_cache):
    mm = cli.targets.load_kernel(f"{kernels}::mm", quiet=True)
    a, b = cli.targets.parse_args(["f16[64,64]", "f16[64,64]"])
    seen = []
    result = mm.tune(a, b, top_k=4, executor="ray", verbose=False, progress=lambda c, done, total: seen.append(done))
    assert result.executor == "a Ray cluster (local) with 2 CPU(s)" and result.jobs == 4
    assert sorted(seen) == [1, 2, 3, 4]
    winner = next(c for c in result.candidates if c.winner)
    assert winner.simulated == min(c.simulated for c in result.candidates) and winner.rank > 0
    assert result.tuned_cycles < result.baseline_cycles
    assert ray.is_initialized()  # an instance the caller started is left running
    probe = fresh_process(f"{kernels}::mm", ["f16[64,64]", "f16[64,64]"], disk_cache)
    assert probe["source"] == "tuned" and probe["params"] == winner.tiling and probe["cycles"] == result.tuned_cycles


def test_pyasc_tune_with_ray(local_ray, kernels, disk_cache):
    result = CliRunner().invoke(cli.cli, ["tune", f"{kernels}::sm", "--arg", "f32[100,64]", "--top-k", "2",
                                          "--ray", "auto", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["executor"].startswith("a Ray cluster") and len(doc["candidates"]) == 2
    assert all(c["status"] == "ok" and c["simulated_cycles"] > 0 for c in doc["candidates"])
    assert doc["stored"] and json.loads(open(doc["stored"]).read())["decisions"] == doc["decisions"]


def test_cache_warm_with_ray(local_ray, kernels, disk_cache):
    result = CliRunner().invoke(cli.cli, ["cache", "warm", str(kernels), "--ray", "auto"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "compiling 3 signatures on a Ray cluster" in result.stderr
    assert "3 compiled, 0 cached, 0 failed" in result.stdout
    assert sorted(e.signature for e in DiskCache(disk_cache).list()) == \
        ["a: f16[32,32], b: f16[32,32]", "x: f16[8,64]", "x: f32[16,32]"]   # the workers wrote the shared cache
