"""Autotuning (`kernel.tune`, `pyasc tune`) on a local process pool: the cost model's top candidates are measured
on the emulator, the fastest wins, and every later compile (also in a fresh process) uses it. The Ray executor
is tested in test_tuning_ray.py; the choice hook in code generation (`choose(..., decision)`) here too."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import pyasc
from pyasc import cli
from pyasc.codegen.tiling import TilingDecision, choose
from pyasc.runtime import tunestore
from pyasc.testing import assert_close

REPO = Path(__file__).resolve().parents[1]

# small shapes on "tiny" where the emulator disagrees with the cost model's ranking (found by measuring):
# matmul 64x64x64: the cost model's 3rd candidate is the fastest; softmax 100x64: its 2nd
KERNELS = '''\
import pyasc


@pyasc.kernel(chip="tiny")
def pair(x, a, b):
    return pyasc.softmax(x, axis=-1), a @ b


@pyasc.kernel(chip="tiny", dynamic=True)
def dyn(x):
    return pyasc.softmax(x, axis=-1)


@pyasc.kernel(chip="tiny")
def mm(a, b):
    return a @ b


@pyasc.kernel(chip="tiny")
def sm(x):
    return pyasc.softmax(x, axis=-1)


@pyasc.kernel(chip="tiny")
def mm_gelu(a, b, bias):
    return pyasc.gelu(a @ b + bias)
'''

FRESH = '''\
import json, sys
sys.path.insert(0, {repo!r})
from pyasc.cli import targets
k = targets.load_kernel({target!r}, quiet=True)
args = targets.parse_args({specs!r})
art = k.compile(*args)
_, prof = k.profile(*args)
t = art.kernels[0].tiling
print(json.dumps({{"source": t.source, "params": t.params.describe(), "cycles": prof.cycles}}))
'''


@pytest.fixture
def kernels(tmp_path):
    path = tmp_path / "tune_kernels.py"
    path.write_text(KERNELS)
    return path


def load(kernels, name):
    return cli.targets.load_kernel(f"{kernels}::{name}", quiet=True)


def fresh_process(target, specs, cache_root):
    """Compile and profile in a new interpreter (the cache folder shared): the tiling it chose and its cycles."""
    script = FRESH.format(repo=str(REPO), target=target, specs=list(specs))
    env = {**os.environ, "PYASC_CACHE": "1", "PYASC_CACHE_DIR": str(cache_root)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_tune_on_a_process_pool_keeps_the_fastest_and_a_fresh_process_uses_it(kernels, disk_cache, capsys):
    mm = load(kernels, "mm")
    a, b = cli.targets.parse_args(["f16[64,64]", "f16[64,64]"])
    cost_model = mm.compile(a, b).kernels[0].tiling
    result = mm.tune(a, b, top_k=4, workers=2)
    err = capsys.readouterr().err
    assert "4 emulator runs on 2 local process(es)" in err and "[4/4] mm_k0" in err   # progress
    assert "predicted" in err and "simulated" in err and "<- winner" in err          # the table
    rows = result.candidates
    assert [c.rank for c in rows] == [0, 1, 2, 3] and all(c.status == "ok" for c in rows)
    assert rows[0].tiling == cost_model.params.describe()
    assert [c.predicted for c in rows] == sorted(c.predicted for c in rows)          # the cost model's order
    winner = min(rows, key=lambda c: c.simulated)
    assert winner.winner and winner.rank > 0 and sum(c.winner for c in rows) == 1
    assert result.decisions == (winner.decision,) and winner.decision.label == "mm_k0"
    assert result.baseline_cycles == rows[0].call_cycles > result.tuned_cycles == winner.call_cycles
    for c in rows:  # the cost model's relative error, as printed
        assert c.error == pytest.approx((c.predicted - c.simulated) / c.simulated)
    # this process: the next compile follows the winner, and runs as fast as it measured
    art = mm.compile(a, b)
    assert art.kernels[0].tiling.source == "tuned" and winner.decision.matches(art.kernels[0].tiling.params)
    out, prof = mm.profile(a, b)
    assert prof.cycles == result.tuned_cycles
    assert_close(out, mm.py_func(a, b))
    # the record in the cache folder, keyed by kernel, shapes and chip
    record = json.loads(Path(result.stored).read_text())
    assert record["decisions"] == [winner.decision.to_json()] and len(record["table"]) == 4
    assert Path(result.stored).parent == disk_cache / "tuning"
    # a fresh process sharing the cache compiles the winner
    seen = fresh_process(f"{kernels}::mm", ["f16[64,64]", "f16[64,64]"], disk_cache)
    assert seen["source"] == "tuned" and seen["params"] == winner.tiling and seen["cycles"] == result.tuned_cycles
    # other shapes are untouched
    c, = cli.targets.parse_args(["f16[32,64]"])
    assert mm.compile(c, b).kernels[0].tiling.source == "cost model"


def test_pyasc_tune_prints_predicted_vs_simulated_and_stores_the_winner(kernels, disk_cache):
    result = CliRunner().invoke(cli.cli, ["tune", f"{kernels}::sm", "--arg", "f32[100,64]", "--top-k", "3",
                                          "--jobs", "1"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.splitlines()[0].split() == ["kernel", "rank", "candidate", "predicted", "simulated", "error", "status"]
    rows = [ln for ln in out.splitlines() if ln.startswith("sm_k0")]
    assert len(rows) == 3 and sum("<- winner" in r for r in rows) == 1
    assert "with the cost model's choices" in out and "tuned (" in out and "3 runs on 1 local process(es)" in out
    assert f"stored in {disk_cache / 'tuning'}" in out
    assert "tuning sm: 3 emulator runs" in result.stderr                  # the progress bar
    assert "runs its top-level code" in result.stderr
    winner = next(r for r in rows if "<- winner" in r)
    seen = fresh_process(f"{kernels}::sm", ["f32[100,64]"], disk_cache)
    assert seen["source"] == "tuned" and seen["params"] in winner
    result = CliRunner().invoke(cli.cli, ["tune", f"{kernels}::sm", "--arg", "f32[100,64]", "--top-k", "2",
                                          "--jobs", "1", "--json"], catch_exceptions=False)
    doc = json.loads(result.stdout)
    assert [c["rank"] for c in doc["candidates"]] == [0, 1] and doc["executor"] == "1 local process(es)"
    assert {"predicted_cycles", "simulated_cycles", "error", "winner"} <= set(doc["candidates"][0])
    # `cache clear` keeps the winners (they cost emulator time), `--tuning` deletes them too
    CliRunner().invoke(cli.cli, ["cache", "clear"], catch_exceptions=False)
    assert Path(doc["stored"]).exists()
    result = CliRunner().invoke(cli.cli, ["cache", "clear", "--tuning"], catch_exceptions=False)
    assert "removed 1 tuning records" in result.stdout and not Path(doc["stored"]).exists()


def test_tune_with_the_disk_cache_off_lasts_for_the_process_and_writes_nothing(kernels, tmp_path, monkeypatch):
    root = tmp_path / "cache-root"
    monkeypatch.setenv("PYASC_CACHE", "0")
    monkeypatch.setenv("PYASC_CACHE_DIR", str(root))
    sm = load(kernels, "sm")
    x, = cli.targets.parse_args(["f32[100,64]"])
    result = sm.tune(x, top_k=2, workers=1, verbose=False)
    assert result.stored is None and "last for this process only" in result.table()
    assert sm.compile(x).kernels[0].tiling.source == "tuned"
    assert not root.exists()


def test_winners_of_two_kernels_are_run_together_once_more(kernels, monkeypatch):
    monkeypatch.setenv("PYASC_CACHE", "0")
    pair = load(kernels, "pair")
    x, a, b = cli.targets.parse_args(["f32[100,64]", "f16[64,64]", "f16[64,64]"])
    result = pair.tune(x, a, b, top_k=3, workers=1, verbose=False)
    winners = {c.label: c.rank for c in result.candidates if c.winner}
    assert winners == {"pair_k0": 1, "pair_k1": 2}                    # each kernel's own winner
    assert result.jobs == 1 + 2 + 2 + 1                               # baseline, runners-up, the combination
    out, prof = pair.profile(x, a, b)
    assert prof.cycles == result.tuned_cycles < result.baseline_cycles
    assert [k.tiling.source for k in pair.compile(x, a, b).kernels] == ["tuned", "tuned"]
    for got, want in zip(out, pair.py_func(x, a, b)):
        assert_close(got, want)


def test_a_runner_up_code_generation_refuses_is_not_measured_and_the_next_one_is(kernels, monkeypatch):
    """Runners-up are scored before their flags are planned: one whose flags do not fit is not legal (measuring
    it would measure the cost model's choice again, which code generation falls back to)."""
    monkeypatch.setenv("PYASC_CACHE", "0")
    sm = load(kernels, "sm")
    x, = cli.targets.parse_args(["f32[16,1000]"])
    result = sm.tune(x, top_k=4, workers=1, verbose=False)
    refused = [c for c in result.candidates if c.status.startswith("not legal")]
    measured = [c for c in result.candidates if c.status == "ok"]
    assert refused and all("flags do not fit" in c.status and c.simulated is None and c.job == -1 for c in refused)
    assert len(measured) == 4 and result.jobs == 4 and max(c.rank for c in measured) > 3
    assert "not legal" in result.table() and "next candidate down the list was measured instead" in result.table()
    # every measured candidate ran its own tiling: their call cycles are not all the cost model's
    assert len({c.call_cycles for c in measured}) == len(measured)


def test_a_call_with_nothing_to_choose_says_so(kernels, monkeypatch):
    monkeypatch.setenv("PYASC_CACHE", "0")
    dyn = load(kernels, "dyn")   # under dynamic=True this softmax has one legal tiling on "tiny"
    x, = cli.targets.parse_args(["f32[100,64]"])
    result = dyn.tune(x, workers=1, verbose=False)
    assert result.candidates == [] and result.decisions == () and result.stored is None
    assert "nothing to tune: every device kernel of this call has one legal tiling" in result.table()


def test_tune_refuses_what_it_cannot_do(kernels, monkeypatch):
    sm = load(kernels, "sm")
    x, = cli.targets.parse_args(["f32[100,64]"])
    with pytest.raises(ValueError, match="top_k must be a positive int, got 0"):
        sm.tune(x, top_k=0)
    with pytest.raises(ValueError, match="executor must be 'process' or 'ray', got 'gpu'"):
        sm.tune(x, executor="gpu", verbose=False)
    with pytest.raises(ValueError, match="workers must be a positive int"):
        sm.tune(x, workers=0, verbose=False)
    ref = pyasc.kernel(sm.py_func, chip="tiny", backend="reference")
    with pytest.raises(ValueError, match=r"measures candidates on the emulator; this kernel has backend='reference'"):
        ref.tune(x)
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    with pytest.raises(ImportError, match=r"needs Ray: pip install -e '\.\[ray\]'"):
        sm.tune(x, executor="ray", verbose=False)
    status = CliRunner().invoke(cli.cli, ["tune", f"{kernels}::sm", "--arg", "f32[100,64]", "--ray", "auto"])
    assert status.exit_code == 1 and "needs Ray" in status.output


# ---- the codegen hook: a plain decision record that `choose` honours -------------------------------------------


def _exp_plus_one(x):
    return pyasc.exp(x) + 1.0


def test_a_decision_is_plain_data_read_back_strictly():
    from pyasc.codegen.generate import CodegenOptions
    from pyasc.codegen.templates.vector_kernel import VectorTiling

    tiling = VectorTiling("rows", 8, 0, 2, 4)
    decision = TilingDecision.of("f_k0", tiling)
    assert decision == TilingDecision("f_k0", "VectorTiling", (("mode", "rows"), ("rows", 8), ("width", 0),
                                                               ("buffer_num", 2), ("cores", 4)))
    assert TilingDecision.from_json(json.loads(json.dumps(decision.to_json()))) == decision
    assert decision.matches(tiling) and not decision.matches(VectorTiling("rows", 8, 0, 1, 4))
    assert CodegenOptions(decisions=(decision,)).decision("f_k0") is decision
    assert CodegenOptions(decisions=(decision,)).decision("f_k1") is None
    for bad in ({"label": "k", "record": "X", "fields": [["a", 1.5]]},
                {"label": "k", "record": "X", "fields": [["a", {"os": 1}]]},
                {"label": "k", "record": "X", "fields": [["a", True]]},
                {"label": 3, "record": "X", "fields": []}, {"record": "X"}, "k_k0"):
        with pytest.raises(ValueError, match="not a tiling decision"):
            TilingDecision.from_json(bad)


def test_a_nested_tiling_record_is_flattened_to_plain_data():
    from pyasc.codegen.templates.matmul_tiling import MatmulTiling
    from pyasc.codegen.templates.mixed import MixedTiling

    tiling = MixedTiling(MatmulTiling(32, 32, 96, 1, 2, 2, 1), buffer_num=2, cores=2)
    decision = TilingDecision.of("f_k0", tiling)
    assert ("cube.tm", 32) in decision.fields and ("prologue", "None") in decision.fields
    assert TilingDecision.from_json(json.loads(json.dumps(decision.to_json()))) == decision
    assert decision.matches(tiling) and not decision.matches(MixedTiling(MatmulTiling(32, 32, 96, 1, 2, 2, 1), 1, 2))


def test_a_mixed_launch_is_tuned_and_its_winner_used(kernels, tmp_path, monkeypatch):
    monkeypatch.setenv("PYASC_CACHE", "0")
    k = load(kernels, "mm_gelu")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 96)).astype(np.float16), rng.standard_normal((96, 128)).astype(np.float16)
    bias = rng.standard_normal(128).astype(np.float16)
    result = k.tune(a, b, bias, top_k=2, workers=1, verbose=False)
    assert "MixedTiling" in {d.record for d in result.decisions}
    assert k.compile(a, b, bias).kernels[0].tiling.source == "tuned"
    assert_close(k(a, b, bias), k.py_func(a, b, bias))


def test_code_generation_follows_a_stored_decision_when_it_is_legal_else_says_why_not(disk_cache):
    """The hook end to end: a tuning record's decision reaches `tiling.pick` through the codegen options."""
    from pyasc.codegen.templates.vector_kernel import VectorTiling

    k = pyasc.kernel(_exp_plus_one, chip="tiny")
    x = np.random.default_rng(0).random((64, 300)).astype(np.float32)
    plain = k.compile(x).kernels[0].tiling
    assert plain.source == "cost model" and len(plain.others) >= 2
    label = k.compile(x).kernels[0].name
    key = tunestore.tuning_key(k.key_components(x))

    def compiled_with(*decisions):
        tunestore.save(disk_cache, tunestore.TuningRecord(key, "f", "", "tiny", decisions))
        k.cache_clear()
        return k.compile(x).kernels[0].tiling

    last = plain.others[-1].params                                        # the cost model's last choice
    tuned = compiled_with(TilingDecision.of(label, last))
    assert tuned.source == "tuned" and tuned.params == last and tuned.note == ""
    assert plain.params in [o.params for o in tuned.others]               # the runners-up keep the cost order
    assert tuned.text().startswith("chosen (tuned on the emulator): ")
    assert_close(k(x), k.py_func(x))
    stale = compiled_with(TilingDecision.of(label, VectorTiling("chunks", 1, 10**6, 2, 4)))   # not a candidate
    assert stale.source == "cost model" and stale.params == plain.params
    assert "the tuned tiling VectorTiling(mode='chunks', rows=1, width=1000000" in stale.text()
    assert "is not a candidate here; the cost model chose" in stale.text()
    other = compiled_with(TilingDecision.of(label + "_other", last))       # another kernel's decision
    assert other.source == "cost model" and other.params == plain.params and other.note == ""


def test_a_corrupt_tuning_record_is_ignored_with_a_warning(kernels, disk_cache):
    sm = load(kernels, "sm")
    x, = cli.targets.parse_args(["f32[100,64]"])
    key = tunestore.tuning_key(sm.key_components(x))
    path = tunestore.path_of(disk_cache, key)
    path.parent.mkdir(parents=True)
    path.write_text('{"format": "pyasc.tuning", "version": 1, "key": "%s", "kernel": "sm", "signature": "", '
                    '"chip": "tiny", "decisions": [{"label": "sm_k0", "record": "VectorTiling", '
                    '"fields": [["rows", "import os"], ["cores", null]]}]}' % key)
    from pyasc.runtime.diskcache import CacheWarning

    with pytest.warns(CacheWarning, match="ignoring the tuning record"):
        art = sm.compile(x)
    assert art.kernels[0].tiling.source == "cost model"


def test_tune_at_a_scripts_top_level_needs_no_main_guard(tmp_path):
    """A "spawn" worker re-imports the main script (running its top-level code, and with it `tune`, again);
    the workers run pyasc's own jobs only, so the script is kept from them."""
    script = tmp_path / "script.py"
    script.write_text(f"import sys\nsys.path.insert(0, {str(REPO)!r})\n" + KERNELS +
                      "import numpy as np\nprint('top-level code runs')\n"
                      "r = mm.tune(np.ones((64, 64), np.float16), np.ones((64, 64), np.float16), top_k=2, workers=1,"
                      " verbose=False)\nprint('tuned', len(r.candidates))\n")
    env = {**os.environ, "PYASC_CACHE": "0"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["top-level code runs", "tuned 2"]
