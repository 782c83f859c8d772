"""The disk cache across fresh processes: hits, the same key, every kind of change a miss, recovery from
damaged entries, dumps from stored artifacts, and six processes compiling the same kernel at once."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from artifact_fields import differences

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"

MODULE = '''\
import numpy as np
import pyasc

SCALE = 2.0
TABLE = {"w": 1.0}


class Cfg:
    shift = 0.5


CFG = Cfg()


def helper(x, k=1.0):
    return x * k


@pyasc.kernel(chip="tiny", opt_level=3)
def kern(x):
    return pyasc.exp(helper(x) * SCALE + TABLE["w"] + CFG.shift) / 16.0
'''

RUNNER = '''\
import json, sys, warnings
sys.path[:0] = sys.argv[1:3]  # the project, and tests/ for the artifact_fields helper
import numpy as np
import kmod
from artifact_fields import reported_fields
warnings.simplefilter("always")
x = np.linspace(-1.0, 1.0, 8, dtype=np.float32)
y = kmod.kern(x)
info = list(kmod.kern.cache_info())
c = kmod.kern.compile(x)
print(json.dumps({"y": y.tolist(), "ref": kmod.kern.py_func(x).tolist(), "info": info, "key": c.full_key,
                  "origin": c.origin, "fields": reported_fields(c)}))
'''


@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "kmod.py").write_text(MODULE)
    (folder / "run.py").write_text(RUNNER)
    return folder


def env_for(cache: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYASC_")}
    env.update(PYTHONPATH=str(REPO), PYASC_CACHE="1", PYASC_CACHE_DIR=str(cache), **extra)
    return env


def run(project: Path, cache: Path, **extra: str) -> tuple[dict, str]:
    proc = subprocess.run([sys.executable, str(project / "run.py"), str(project), str(TESTS)], env=env_for(cache, **extra),
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def edit(project: Path, old: str, new: str) -> None:
    path = project / "kmod.py"
    text = path.read_text()
    assert old in text and text.count("\n") == text.replace(old, new).count("\n")  # same lines, as in the issue
    path.write_text(text.replace(old, new))


def entries(cache: Path) -> list[Path]:
    return [v for g in (cache / "entries").iterdir() for v in g.iterdir()]


def test_fresh_processes_hit_the_disk_and_every_change_is_a_correct_miss(project, tmp_path):
    cache = tmp_path / "cache"
    first, _ = run(project, cache, PYASC_DUMP_DIR=str(tmp_path / "dump_miss"))
    assert first["info"] == [0, 0, 1, 1] and first["origin"] == "compiled"
    second, _ = run(project, cache, PYASC_DUMP_DIR=str(tmp_path / "dump_hit"))
    assert second["info"] == [0, 1, 0, 1] and second["origin"] == "disk"
    assert second["key"] == first["key"] and second["y"] == first["y"]  # two fresh processes, one key
    assert differences(first["fields"], second["fields"]) == []  # the disk hit is the compiled artifact
    miss_dump, hit_dump = (tmp_path / d for d in ("dump_miss", "dump_hit"))
    (folder,) = os.listdir(miss_dump)
    assert os.listdir(hit_dump) == [folder] and folder == f"kern-{first['key'][:12]}"
    for name in os.listdir(miss_dump / folder):
        assert (hit_dump / folder / name).read_text() == (miss_dump / folder / name).read_text(), name

    keys = {first["key"]}
    for old, new in [("SCALE = 2.0", "SCALE = 3.0"),                       # a module-level constant, same line
                     ('TABLE = {"w": 1.0}', 'TABLE = {"w": 2.0}'),         # a dict entry
                     ("    shift = 0.5", "    shift = 0.7"),               # an attribute
                     ("    return x * k", "    return x - k"),             # a helper's body
                     ("def helper(x, k=1.0):", "def helper(x, k=0.5):"),   # a helper's defaults
                     ("opt_level=3", "opt_level=1"),                       # an option
                     ('chip="tiny"', 'chip="910b"')]:                      # the chip
        edit(project, old, new)
        out, _ = run(project, cache)
        assert out["info"] == [0, 0, 1, 1], (old, new)
        np.testing.assert_allclose(out["y"], out["ref"], rtol=1e-6, err_msg=new)
        keys.add(out["key"])
    assert len(keys) == 8 and len(entries(cache)) == 8
    (project / "kmod.py").write_text(MODULE)
    back, _ = run(project, cache)
    assert back["origin"] == "disk" and back["key"] == first["key"]

    entry = next(p for p in entries(cache) if p.name == first["key"][:24])
    graph = entry / "graph.json"
    graph.write_bytes(graph.read_bytes()[:-10])
    healed, stderr = run(project, cache)
    assert healed["info"] == [0, 0, 1, 1] and healed["y"] == first["y"]
    assert "CacheWarning" in stderr and "graph.json is truncated" in stderr and "compiling again" in stderr
    again, stderr = run(project, cache)
    assert again["origin"] == "disk" and "CacheWarning" not in stderr


def test_six_processes_compiling_at_once_agree_and_leave_one_entry(project, tmp_path):
    cache = tmp_path / "cache"
    procs = [subprocess.Popen([sys.executable, str(project / "run.py"), str(project), str(TESTS)], env=env_for(cache),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
             for _ in range(6)]
    outs = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=120)
        assert p.returncode == 0, stderr
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    assert len({o["key"] for o in outs}) == 1 and all(o["y"] == outs[0]["y"] for o in outs)
    assert sum(o["info"][2] for o in outs) == 1  # one compile; the others waited for it and read it
    assert sum(o["info"][1] for o in outs) == 5
    assert len(entries(cache)) == 1
    assert not list((cache / "tmp").iterdir())
