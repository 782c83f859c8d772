"""The command line: every command exits 0 and prints what it promises; bad arguments exit 2 with a usage
line; failures exit 1 (through `cli.main`, the console script and `python -m pyasc`)."""
from __future__ import annotations

import json
import os
import subprocess
import time
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from pyasc import cli, demo, ops
from pyasc.examples import EXAMPLES
from pyasc.runtime.diskcache import DiskCache

REPO = Path(__file__).resolve().parents[1]

KERNELS = '''\
import numpy as np
import pyasc

SCALE = 2.0
PYASC_WARM = {"softmax": [["f32[8,16]"], ["f16[4,32]"]], "broken": [["f32[4]"]]}


@pyasc.kernel(chip="tiny")
def softmax(x):
    shifted = x - pyasc.max(x, axis=-1, keepdims=True)
    e = pyasc.exp(shifted)
    return e / pyasc.sum(e, axis=-1, keepdims=True) * SCALE


def mlp(x, w, b):
    return pyasc.relu(x @ w.T.T + b)


def broken(x):
    return x @ x @ x
'''


def invoke(*args, **env):
    """(exit status, what a terminal shows: stdout and stderr)."""
    result = CliRunner().invoke(cli.cli, list(args), env=env or None, catch_exceptions=False)
    return result.exit_code, result.output


def invoke_split(*args, **env):
    """(exit status, stdout, stderr)."""
    result = CliRunner().invoke(cli.cli, list(args), env=env or None, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def kernels(tmp_path):
    path = tmp_path / "kernels.py"
    path.write_text(KERNELS)
    return path


def mlp_args():
    return ["--arg", "f32[8,16]", "--arg", "f32[16,32]", "--arg", "f32[32]"]


# ---- demo, ops, chips, help ----------------------------------------------------------------


def test_demo_runs_every_example_and_exits_0():
    status, out = invoke("demo", "--chip", "tiny")
    assert status == 0, out
    for ex in EXAMPLES:
        assert ex.name in out
    header = out.splitlines()[1]
    for column in ("kernel", "inputs", "nodes in->out", "kernels", "sim us", "% roofline", "max abs err", "ok"):
        assert column in header
    assert "FAIL" not in out
    assert f"{len(EXAMPLES)}/{len(EXAMPLES)} kernels match" in out


def test_demo_opt_level_0_and_a_mismatch_exits_1(monkeypatch):
    status, out = invoke("demo", "--chip", "tiny", "--opt-level", "0")
    assert status == 0 and "opt_level=0" in out
    monkeypatch.setattr(demo, "compare", lambda actual, expected: (False, 1.0, "values differ"))
    monkeypatch.setattr(demo, "EXAMPLES", demo.EXAMPLES[:2])  # (every example ran above: two show the exit path)
    status, out = invoke("demo", "--chip", "tiny")
    assert status == 1 and "FAIL" in out and "FAILED:" in out


@pytest.mark.parametrize("argv, words", [
    (["demo", "--chip", "nosuch"], ["--chip", "nosuch"]),
    (["demo", "--opt-level", "7"], ["--opt-level", "7"]),
    (["nosuch"], ["No such command 'nosuch'"]),
    (["compile", "kernels.py"], ["does not name a function"]),
    (["cache", "prune"], ["--max-size"]),
])
def test_bad_arguments_exit_2_with_a_usage_line(argv, words, capsys):
    status = cli.main(argv)
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith("Usage: pyasc") and all(w in err for w in words), err


def test_every_command_has_help():
    def walk(group, prefix):
        for name, command in group.commands.items():
            yield prefix + [name]
            if isinstance(command, click.Group):
                yield from walk(command, prefix + [name])

    paths = list(walk(cli.cli, []))
    assert {"demo", "ops", "chips", "compile", "diff", "cache", "tune"} <= {p[0] for p in paths}
    assert {p[1] for p in paths if len(p) == 2} == {"list", "show", "explain", "clear", "prune", "verify", "warm",
                                                     "stats", "dir"}
    for path in paths:
        status, out = invoke(*path, "--help")
        assert status == 0 and out.startswith(f"Usage: pyasc {' '.join(path)}"), path


def test_ops_lists_every_op_with_its_category():
    status, out = invoke("ops")
    assert status == 0
    lines = out.splitlines()
    for name in ops.names():
        row = next((ln for ln in lines if ln.split()[:1] == [name]), None)
        assert row is not None, name
        assert ops.get(name).category.name in row


def test_chips_lists_the_presets_and_their_figures():
    status, out = invoke("chips")
    assert status == 0
    rows = {ln.split()[0]: ln.split() for ln in out.splitlines()[1:3]}
    assert rows["910b"][:8] == ["910b", "24", "48", "1.8", "64", "1600", "192", "512"]
    assert rows["tiny"][:3] == ["tiny", "2", "4"] and rows["tiny"][6] == "16"


def test_python_dash_m_and_version():
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    ok = subprocess.run([sys.executable, "-m", "pyasc", "--version"], capture_output=True, text=True, env=env,
                        cwd=REPO)
    assert ok.returncode == 0 and ok.stdout.strip() == "pyasc 0.1.0"
    bad = subprocess.run([sys.executable, "-m", "pyasc", "cache", "nosuch"], capture_output=True, text=True,
                         env=env, cwd=REPO)
    assert bad.returncode == 2 and bad.stderr.startswith("Usage: pyasc cache")


# ---- compile and diff -------------------------------------------------------------------


def test_compile_prints_the_stage_summary_with_op_histograms(kernels, tmp_path):
    status, out, err = invoke_split("compile", f"{kernels}::mlp", *mlp_args(), "--chip", "tiny", "--dump",
                                    str(tmp_path / "d"))
    assert status == 0, out + err
    assert out.startswith("mlp(x: f32[8,16], w: f32[16,32], b: f32[32])")
    lines = out.splitlines()
    graph = next(ln for ln in lines if ln.strip().startswith("01 graph"))
    assert "5 ops" in graph and "transpose 2" in graph
    assert any("transpose 0 (-1)" in ln for ln in lines)                 # the transposes that vanished
    assert any("fused_matmul 1 (+1)" in ln and "relu 0 (-1)" in ln for ln in lines)  # the epilogue fusion
    assert "device kernels:" in out and "1 planned: 1 MATMUL" in out and "memory plan:" in out
    folder = Path(out.strip().splitlines()[-1].split("dumped to ")[1])
    assert (folder / "00_source.py").exists() and folder.parent == tmp_path / "d"


def test_compile_failures(kernels):
    status, out = invoke("compile", f"{kernels}::broken", "--arg", "f32[4]")
    assert status == 1 and "operands must have at least one dimension" in out and "kernels.py:20" in out
    status, out = invoke("compile", f"{kernels}::nosuch")
    assert status == 2 and "has no 'nosuch'" in out
    status, out = invoke("compile", f"{kernels}::mlp", "--arg", "q32[4]")
    assert status == 2 and "unknown dtype 'q32'" in out
    status, out = invoke("compile", f"{kernels}::mlp", "--arg", "f32[4]")
    assert status == 2 and "missing" in out


def test_diff_compares_two_dumps_stage_by_stage(kernels, tmp_path):
    for level in ("0", "3"):
        status, _ = invoke("compile", f"{kernels}::mlp", *mlp_args(), "--opt-level", level,
                           "--dump", str(tmp_path / f"o{level}"))
        assert status == 0
    status, out = invoke("diff", str(tmp_path / "o0"), str(tmp_path / "o3"))
    assert status == 0, out
    assert "same:      source" in out and "only in B: ge.03.matmul_epilogue_fusion" in out
    assert "only in A: ge.01.fusion" in out and "differs:   memory_plan" in out
    assert any(ln.startswith("    +") for ln in out.splitlines())       # the line diff itself
    status, out = invoke("diff", str(tmp_path / "o3"), str(tmp_path / "o3"), "--stat")
    # 8 stages up to the memory plan, then tiling, one tile program, the launch plan and the host IR
    assert status == 0 and out.strip().endswith("0 of 12 stages differ")
    assert "same:      program.k0" in out and "same:      host" in out
    status, out = invoke("diff", str(tmp_path), str(tmp_path / "o3"))
    assert status == 2 and "is not a dump folder" in out and "holds 2 kernel folders" in out


# ---- cache ---------------------------------------------------------------------------------


def test_cache_list_show_clear(kernels, disk_cache):
    status, out = invoke("cache", "list")
    assert status == 0 and "0 entries" in out
    invoke("compile", f"{kernels}::softmax", "--arg", "f32[8,16]")
    invoke("compile", f"{kernels}::softmax", "--arg", "f32[8,16]")  # a disk hit
    status, out = invoke("cache", "list")
    assert status == 0
    header, row = out.splitlines()[:2]
    assert header.split() == ["key", "kernel", "signature", "chip", "size", "age", "hits"]
    assert row.split()[1] == "softmax" and " x: f32[8,16] " in row and " tiny " in row and row.split()[-1] == "1"
    key = row.split()[0]
    status, out = invoke("cache", "list", "--json")
    listed = json.loads(out)                      # one JSON document
    assert status == 0 and len(listed) == 1 and listed[0]["key"].startswith(key)
    assert listed[0]["kernel"] == "softmax" and listed[0]["signature"] == "x: f32[8,16]" and listed[0]["hits"] == 1
    status, out = invoke("cache", "show", key[:6])
    assert status == 0 and "signature: x: f32[8,16]" in out and "guards (what the kernel read):" in out
    assert "SCALE (value)" in out and "graph.json" in out and "00 source" in out
    status, out = invoke("cache", "show", "ffffffff")
    assert status == 1 and "no entry with a key starting 'ffffffff'" in out
    status, out = invoke("cache", "clear")
    assert status == 0 and out.startswith("removed 1 entries")
    assert DiskCache(disk_cache).list() == []


def test_cache_explain_hit_and_both_kinds_of_miss(kernels, disk_cache):
    invoke("compile", f"{kernels}::softmax", "--arg", "f32[8,16]")
    status, out = invoke("cache", "explain", f"{kernels}::softmax", "--arg", "f32[8,16]")
    assert status == 0 and "kernel_code" in out and "HIT: entry" in out
    status, out = invoke("cache", "explain", f"{kernels}::softmax", "--arg", "f32[8,17]")
    assert "MISS: no entry has these components" in out and "differs in 1:" in out
    assert '  args: [["x", ["tensor", "float32", [8, 16]]]]' in out
    kernels.write_text(KERNELS.replace("SCALE = 2.0", "SCALE = 3.0"))
    status, out = invoke("cache", "explain", f"{kernels}::softmax", "--arg", "f32[8,16]")
    assert "SCALE differs: the entry saw [\"float\", \"2.0\"], now [\"float\", \"3.0\"]" in out
    assert "MISS: none of the 1 entries with these components" in out


def test_cache_prune_and_verify(kernels, disk_cache):
    for spec in ("f32[8,16]", "f32[4,16]"):
        invoke("compile", f"{kernels}::softmax", "--arg", spec)
    store = DiskCache(disk_cache)
    first = next(store.iter_entries())
    (first / "graph.json").write_text("{}")
    status, out = invoke("cache", "verify")
    assert status == 1 and "graph.json is truncated" in out and "1 of 2 entries are sound" in out
    status, out = invoke("cache", "verify", "--fix")
    assert status == 0 and "(removed)" in out and len(store.list()) == 1
    status, out = invoke("cache", "prune", "--max-size", "0")
    assert status == 0 and out.startswith("removed 1 entries; 0 B left")
    status, out = invoke("cache", "prune", "--max-size", "huge")
    assert status == 2 and "not a size" in out


def test_cache_warm_compiles_the_listed_signatures_in_processes(kernels, disk_cache):
    status, out = invoke("cache", "warm", str(kernels), "--jobs", "2")
    assert status == 1, out  # `broken` does not compile
    lines = [ln for ln in out.splitlines() if ln.startswith(("compiled ", "cached ", "failed "))]
    assert lines[0].startswith("compiled  softmax(f32[8,16])") and lines[1].startswith("compiled  softmax(f16[4,32])")
    assert lines[2].startswith("failed    broken(f32[4])") and "CompileError" in lines[2]
    assert "compiling 3 signatures on 2 local process(es)" in out  # the progress bar's label
    assert "2 compiled, 0 cached, 1 failed" in out and "1 of 3 signatures failed" in out
    assert len(DiskCache(disk_cache).list()) == 2
    status, out = invoke("cache", "explain", f"{kernels}::softmax", "--arg", "f16[4,32]")
    assert "HIT: entry" in out  # this process computes the key the workers stored


def test_cache_warm_needs_a_list(tmp_path, disk_cache):
    path = tmp_path / "plain.py"
    path.write_text("x = 1\n")
    status, out = invoke("cache", "warm", str(path))
    assert status == 2 and "has no PYASC_WARM dict" in out


def test_cache_commands_with_the_cache_off(monkeypatch):
    monkeypatch.setenv("PYASC_CACHE", "0")
    status, out = invoke("cache", "list")
    assert status == 1 and "the disk cache is off (PYASC_CACHE=0)" in out


def test_cache_stats_counts_hits_disk_hits_and_misses_per_kernel(kernels, disk_cache):
    status, out = invoke("cache", "stats")
    assert status == 0 and "counted since never counted" in out
    invoke("compile", f"{kernels}::softmax", "--arg", "f32[8,16]")   # a miss (compiles and stores)
    invoke("compile", f"{kernels}::softmax", "--arg", "f32[8,16]")   # a new process would find it: a disk hit
    invoke("compile", f"{kernels}::mlp", *mlp_args())                 # another kernel: a miss
    mlp = cli.targets.load_kernel(f"{kernels}::mlp", quiet=True)
    x, w, b = cli.targets.parse_args(["f32[8,16]", "f32[16,32]", "f32[32]"])
    mlp(x, w, b)
    mlp(x, w, b)                                                      # an in-memory hit
    assert mlp.cache_info()[:3] == (1, 1, 0)
    status, out, err = invoke_split("cache", "stats", "--json")
    assert status == 0, err
    doc = json.loads(out)
    rows = {k["kernel"]: k for k in doc["kernels"]}
    assert {k: rows["softmax"][k] for k in ("hits", "disk_hits", "misses", "entries")} == \
        {"hits": 0, "disk_hits": 1, "misses": 1, "entries": 1}
    assert {k: rows["mlp"][k] for k in ("hits", "disk_hits", "misses", "entries")} == \
        {"hits": 1, "disk_hits": 1, "misses": 1, "entries": 1}
    assert rows["softmax"]["hit_rate"] == 0.5 and rows["mlp"]["hit_rate"] == pytest.approx(2 / 3)
    total = doc["total"]
    assert (total["hits"], total["disk_hits"], total["misses"], total["entries"]) == (1, 2, 2, 2)
    assert total["size"] == sum(e.size for e in DiskCache(disk_cache).list()) > 0
    assert doc["cache_dir"] == str(disk_cache)
    status, out = invoke("cache", "stats")
    lines = out.splitlines()
    assert lines[0].split() == ["kernel", "hits", "disk", "hits", "misses", "hit", "rate", "entries", "size"]
    assert lines[1].split()[:6] == ["mlp", "1", "1", "1", "66.7%", "1"]
    assert lines[2].split()[:6] == ["softmax", "0", "1", "1", "50.0%", "1"]
    assert lines[4].split()[:6] == ["(total)", "1", "2", "2", "60.0%", "2"]
    status, out = invoke("cache", "stats", "--zero")
    assert status == 0 and "statistics zeroed" in out
    doc = json.loads(invoke_split("cache", "stats", "--json")[1])
    assert doc["total"]["misses"] == 0 and doc["total"]["entries"] == 2   # counts gone, entries kept


def test_cache_stats_add_up_across_processes(kernels, disk_cache):
    script = f"import sys; sys.path.insert(0, {str(REPO)!r}); from pyasc.cli import targets\n" \
             f"k = targets.load_kernel({str(kernels) + '::softmax'!r}, quiet=True)\n" \
             "x, = targets.parse_args(['f32[8,16]'])\nk(x); k(x); k(x)\n"
    env = {**os.environ, "PYASC_CACHE": "1", "PYASC_CACHE_DIR": str(disk_cache)}
    for _ in range(2):  # a miss and two memory hits, then a disk hit and two memory hits (written at exit)
        subprocess.run([sys.executable, "-c", script], check=True, env=env, cwd=REPO)
    doc = json.loads(invoke_split("cache", "stats", "--json")[1])
    assert {k: doc["total"][k] for k in ("hits", "disk_hits", "misses")} == {"hits": 4, "disk_hits": 1, "misses": 1}


def test_cache_dir_prints_the_folder(disk_cache, monkeypatch):
    status, out = invoke("cache", "dir")
    assert status == 0 and out.strip() == str(disk_cache)
    monkeypatch.setenv("PYASC_CACHE", "0")
    status, out = invoke("cache", "dir")
    assert status == 1 and "the disk cache is off (PYASC_CACHE=0)" in out


def test_cache_explain_of_a_kernel_without_entries_says_so(kernels, disk_cache):
    status, out = invoke("cache", "explain", f"{kernels}::softmax", "--arg", "f32[8,16]")
    assert status == 0 and out.rstrip().endswith("MISS: the cache holds no entries")
    invoke("compile", f"{kernels}::mlp", *mlp_args())
    status, out = invoke("cache", "explain", f"{kernels}::softmax", "--arg", "f32[8,16]")
    assert "MISS: the cache holds no entry of kernel softmax (only 1 of other kernels)" in out
    assert "nearest" not in out and "mlp" not in out.split("MISS")[1]


def test_compile_explain_and_tune_take_arguments_alike(kernels, disk_cache):
    """`--arg` per parameter, and --chip/--opt-level, on every command that compiles a FILE.py::func."""
    for command in (["compile"], ["cache", "explain"], ["tune"]):
        status, out = invoke(*command, "--help")
        assert "--arg ARGSPEC" in out and "--chip PRESET" in out and "--opt-level" in out, command
    status, out = invoke("cache", "explain", f"{kernels}::softmax", "f32[8,16]")
    assert status == 2 and "unexpected extra argument" in out.lower()
    status, out = invoke("cache", "explain", f"{kernels}::softmax", "--arg", "f32[8,16]", "--chip", "910b")
    assert status == 0 and '["chip", "910b"]' in out


def test_commands_that_import_a_file_say_they_run_its_top_level_code(kernels, disk_cache):
    notice = "pyasc: importing kernels.py to find its kernels runs its top-level code"
    for argv in (["compile", f"{kernels}::softmax", "--arg", "f32[8,16]"],
                 ["cache", "explain", f"{kernels}::softmax", "--arg", "f32[8,16]"]):
        status, out, err = invoke_split(*argv)
        assert status == 0 and notice in err and notice not in out, argv
    kernels.write_text(KERNELS.replace('"broken": [["f32[4]"]]', ""))
    status, out, err = invoke_split("cache", "warm", str(kernels), "--jobs", "1")
    assert status == 0 and err.count(notice) == 1, err      # once, by the command; the workers stay quiet


def test_clear_and_prune_remove_stale_locks_and_generated_files(kernels, disk_cache):
    import filelock

    for spec in ("f32[8,16]", "f32[4,16]", "f32[2,16]"):
        invoke("compile", f"{kernels}::softmax", "--arg", spec)
    locks = disk_cache / "locks"
    assert len(list(locks.glob("*.lock"))) == 3
    generated = disk_cache / "fx_kernels"
    generated.mkdir()
    (generated / "fx_graph_0123.py").write_text("x = 1\n")
    old = time.time() - 7200
    os.utime(generated / "fx_graph_0123.py", (old, old))
    store = DiskCache(disk_cache)
    # prune: entries go, then their locks once they are older than a minute and nobody holds them
    removed = {p.parent.name for p in store.prune(0)}
    for lock in locks.glob("*.lock"):
        os.utime(lock, (old, old))
    held = filelock.FileLock(str(locks / f"{sorted(removed)[0]}.lock"))
    with held:
        store.prune(0)
        assert [p.name for p in locks.glob("*.lock")] == [f"{sorted(removed)[0]}.lock"]  # a held lock stays
    assert not (generated / "fx_graph_0123.py").exists()
    store.prune(0)
    assert list(locks.glob("*.lock")) == []
    # clear: every lock nobody holds and every generated file, whatever their age
    invoke("compile", f"{kernels}::softmax", "--arg", "f32[8,16]")
    generated.mkdir(exist_ok=True)
    (generated / "fresh.py").write_text("x = 1\n")
    assert len(list(locks.glob("*.lock"))) == 1
    status, out = invoke("cache", "clear")
    assert status == 0 and out.startswith("removed 1 entries")
    assert list(locks.glob("*.lock")) == [] and not generated.exists()


def test_no_file_is_written_to_the_cache_folder_with_the_cache_off(kernels, tmp_path, monkeypatch):
    root = tmp_path / "cache-root"
    monkeypatch.setenv("PYASC_CACHE", "0")
    monkeypatch.setenv("PYASC_CACHE_DIR", str(root))
    status, out = invoke("compile", f"{kernels}::softmax", "--arg", "f32[8,16]")
    assert status == 0, out
    k = cli.targets.load_kernel(f"{kernels}::softmax", quiet=True)
    x, = cli.targets.parse_args(["f32[8,16]"])
    k(x)
    k(x)
    k.profile(x)
    from pyasc.runtime import cachestats

    cachestats.flush()
    assert not root.exists()
