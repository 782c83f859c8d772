"""kernel.compile(): the artifact's stages and reports, and PYASC_DUMP_DIR."""
from __future__ import annotations

import os

import numpy as np
import pytest

import pyasc
from pyasc import ir

from conftest import assert_close


def f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def make_kernel(**options):
    @pyasc.kernel(chip="tiny", **options)
    def fused(x, w, b):
        """relu(x * w + b) with a duplicate and a dead value for the optimiser."""
        dead = pyasc.exp(x)  # noqa: F841
        return pyasc.relu(x * w + b) + pyasc.relu(x * w + b)

    return fused


ARGS = (f32(4, 8), f32(8, seed=1), f32(8, seed=2))


def test_stages_in_order():
    c = make_kernel().compile(*ARGS)
    names = list(c.stages)
    assert names[:3] == ["source", "graph", "inferred"]
    codegen = ["tiling", *(f"program.k{i}" for i in range(len(c.kernels))), "launch", "host"]
    assert names[-len(codegen):] == codegen
    assert names[-len(codegen) - 2:-len(codegen)] == ["fusion_log", "memory_plan"]
    ge_names = names[3:-len(codegen) - 2]
    assert ge_names and all(n.startswith("ge.") for n in ge_names)
    assert [int(n.split(".")[1]) for n in ge_names] == list(range(1, len(ge_names) + 1))
    assert all(isinstance(t, str) and t for t in c.stages.values())
    assert c.stages["fusion_log"].splitlines() == c.fusion_log
    assert c.stages["memory_plan"] == c.memory_plan.table()


def test_each_graph_stage_has_an_op_histogram():
    c = make_kernel().compile(*ARGS)
    graph_stages = ["graph"] + [n for n in c.stages if n.startswith("ge.")]
    assert list(c.stage_ops) == graph_stages
    assert c.stage_ops["graph"] == {"add": 3, "mul": 2, "relu": 2, "exp": 1}  # two relu(x * w + b) summed
    final = c.stage_ops[graph_stages[-1]]
    assert "exp" not in final and sum(final.values()) == c.nodes_out


def test_source_stage_is_the_normalised_function():
    text = make_kernel().compile(*ARGS).stages["source"]
    assert "def fused(x, w, b):" in text and "relu" in text


def test_graph_and_inferred_stages_print_the_frontend_graph():
    from pyasc.frontend import ArgSpec, build_graph

    k = make_kernel()
    c = k.compile(*ARGS)
    specs = [ArgSpec(n, ir.TensorType(a.shape, a.dtype.name)) for n, a in zip("xwb", ARGS)]
    fresh = build_graph(k.py_func, specs).graph
    assert c.stages["graph"] == ir.format_graph(fresh)
    assert c.stages["inferred"] == ir.format_graph(fresh, show_loc=True)
    assert "exp" in c.stages["graph"]  # dead code is still there before optimisation
    assert "test_runtime_artifact.py" in c.stages["inferred"]  # source locations


def test_optimiser_stages_show_the_graph_changing():
    c = make_kernel(opt_level=3).compile(*ARGS)
    assert len(c.stages) > 3, "the optimiser changed nothing on a graph with a CSE and a DCE opportunity"
    assert c.nodes_out < c.nodes_in
    assert "exp" not in ir.format_graph(c.graph)


def test_disabled_passes_do_not_run():
    on = make_kernel().compile(*ARGS)
    off = make_kernel(disable_passes=("cse", "dce")).compile(*ARGS)
    assert any(name.endswith((".cse", ".dce", ".simplify")) for name in on.stages)
    assert not any(name.endswith((".cse", ".dce")) for name in off.stages)
    assert off.nodes_out > on.nodes_out
    assert_close(make_kernel(disable_passes=("cse", "dce"))(*ARGS), make_kernel()(*ARGS))


def test_artifact_fields():
    c = make_kernel().compile(*ARGS)
    assert isinstance(c.graph, ir.Graph)
    ir.verify(c.graph)
    assert isinstance(c.plans, list) and isinstance(c.kernels, list) and len(c.kernels) == 1
    assert isinstance(c.fusion_log, list)
    assert 'define i64 @"pyasc_run"' in c.host_ir and c.stages["host"] == c.host_ir
    assert c.kernels[0].program.listing() == c.stages["program.k0"]
    assert c.signature == "x: f32[4,8], w: f32[8], b: f32[8]"
    assert set(c.timings) >= {"frontend", "optimize", "total"}


def test_str_is_a_readable_summary():
    c = make_kernel().compile(*ARGS)
    text = str(c)
    assert text.startswith("CompiledKernel fused(x: f32[4,8], w: f32[8], b: f32[8])")
    for words in ("options: opt_level=3", "chip='tiny'", "op nodes after the frontend", "stages: source, graph",
                  "kernels planned", "device kernel k0", "final graph:"):
        assert words in text
    assert c.key_hash in repr(c)


def test_run_matches_the_kernel():
    k = make_kernel()
    c = k.compile(*ARGS)
    assert_close(c.run(*ARGS), k(*ARGS))
    assert_close(c.run(*ARGS), k.py_func(*ARGS))


# ---- PYASC_DUMP_DIR ---------------------------------------------------------------------


def test_dump_dir_gets_every_stage(tmp_path, monkeypatch):
    monkeypatch.setenv("PYASC_DUMP_DIR", str(tmp_path))
    k = make_kernel()
    k(*ARGS)
    c = k.compile(*ARGS)
    folder = tmp_path / f"fused-{c.key_hash}"
    files = sorted(os.listdir(folder))
    stage_names = list(c.stages)
    assert files[0] == "00_source.py"
    assert "01_graph.txt" in files and "01_graph.dot" in files and "02_inferred.txt" in files
    for i, name in enumerate(stage_names):
        ext = {"source": ".py", "host": ".ll"}.get(name, ".txt")
        text = (folder / f"{i:02d}_{name}{ext}").read_text()
        assert text.rstrip("\n") == c.stages[name].rstrip("\n")
        if name.startswith("ge."):
            assert (folder / f"{i:02d}_{name}.dot").read_text().lstrip().startswith("digraph")
    assert (folder / "01_graph.dot").read_text().lstrip().startswith("digraph")
    assert "signature: x: f32[4,8], w: f32[8], b: f32[8]" in (folder / "specialization.txt").read_text()
    at = stage_names.index
    assert (folder / f"{at('fusion_log'):02d}_fusion_log.txt").read_text().splitlines() == c.fusion_log
    assert (folder / f"{at('memory_plan'):02d}_memory_plan.txt").read_text().rstrip("\n") == c.memory_plan.table()
    assert (folder / f"{at('host'):02d}_host.ll").read_text().rstrip("\n") == c.host_ir.rstrip("\n")
    assert (folder / f"{at('program.k0'):02d}_program.k0.txt").read_text().rstrip("\n") == c.stages["program.k0"]
    # every pass is accounted for, unchanged ones noted (not re-dumped), with no wall times to spoil diffs
    pass_log = (folder / "pass_log.txt").read_text().splitlines()
    assert pass_log == c.pass_log.splitlines()
    assert any(line.endswith("unchanged (no stage)") for line in pass_log)
    changed = [line.split("-> stage ")[1].split()[0] for line in pass_log if "-> stage " in line]
    assert [f"ge.{i:02d}.{s}" for i, s in enumerate(changed, 1)] == [n for n in stage_names if n.startswith("ge.")]
    assert " ms]" not in "\n".join(pass_log)
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".")]  # no staging leftovers


def test_dump_is_rewritten_on_a_cache_hit_when_missing(tmp_path, monkeypatch):
    import shutil

    k = make_kernel()
    k(*ARGS)  # compiled before the dump dir was set
    monkeypatch.setenv("PYASC_DUMP_DIR", str(tmp_path))
    k(*ARGS)
    assert k.cache_info().hits == 1
    folder = tmp_path / f"fused-{k.compile(*ARGS).key_hash}"
    assert (folder / "00_source.py").exists()
    shutil.rmtree(folder)
    k(*ARGS)
    assert (folder / "00_source.py").exists()


def test_each_specialisation_gets_its_own_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("PYASC_DUMP_DIR", str(tmp_path))
    k = make_kernel()
    k(*ARGS)
    k(f32(2, 8), ARGS[1], ARGS[2])
    assert sorted(os.listdir(tmp_path)) == sorted(f"fused-{k.compile(*a).key_hash}"
                                                  for a in (ARGS, (f32(2, 8), *ARGS[1:])))


def test_no_dump_without_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("PYASC_DUMP_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    make_kernel()(*ARGS)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("opt_level", [0, 1, 2, 3])
def test_every_opt_level_gives_the_same_answer(opt_level):
    k = make_kernel(opt_level=opt_level)
    assert_close(k(*ARGS), k.py_func(*ARGS))


def test_an_unusable_dump_dir_warns_naming_the_variable_and_the_result_is_returned(tmp_path, monkeypatch):
    from pyasc.runtime.kernel import DumpWarning

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("PYASC_DUMP_DIR", str(blocker))
    k = make_kernel()
    with pytest.warns(DumpWarning, match=r"PYASC_DUMP_DIR='.*not-a-folder' cannot be written .*fused ran"):
        out = k(*ARGS)
    assert_close(out, k.py_func(*ARGS))


def test_a_disk_hit_writes_the_same_dump_as_the_compile(tmp_path, monkeypatch, disk_cache):
    monkeypatch.setenv("PYASC_DUMP_DIR", str(tmp_path / "miss"))
    make_kernel()(*ARGS)
    monkeypatch.setenv("PYASC_DUMP_DIR", str(tmp_path / "hit"))
    k = make_kernel()
    k(*ARGS)
    assert k.cache_info().disk_hits == 1
    (folder,) = os.listdir(tmp_path / "miss")
    assert os.listdir(tmp_path / "hit") == [folder]
    for name in os.listdir(tmp_path / "miss" / folder):
        assert (tmp_path / "hit" / folder / name).read_text() == (tmp_path / "miss" / folder / name).read_text()
