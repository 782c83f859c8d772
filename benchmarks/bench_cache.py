"""The disk cache for the example kernels: cold compile vs a fresh process's disk hit, and entry sizes.

    python benchmarks/bench_cache.py [--repeat 3] [--chip 910b] [--kernels a,b] [--out benchmarks/results/cache.json]

Per example kernel (pyasc/examples.py), medians over --repeat runs:
- cold (in process): `k.compile(*args)` on a fresh Kernel with the disk cache off, after a warm-up compile
  of another kernel (imports and first-use costs excluded): what compiling costs;
- cold (fresh process): the first `k.compile(*args)` in a new `python` process whose cache folder holds the
  remembered compiler digest and host facts but no entry: what a user's first call costs (it also loads the
  frontend, which a disk hit never does);
- disk hit (fresh process): the same first call in a new process with the entry on disk;
- the ratios of both cold times to the disk hit, and the entry's size on disk.
Process start-up and `import pyasc` are outside every timing (measured from just before the call).
The environment's PYTHONDONTWRITEBYTECODE is kept as it is (reported): without .pyc files every
module a call imports is compiled from source, which both cold and hit pay.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import pyasc
from _report import RESULTS, write_json
from pyasc.examples import BY_NAME, EXAMPLES
from pyasc.runtime.diskcache import DiskCache

REPO = Path(__file__).resolve().parents[1]

FIRST_CALL = """
import sys, time
import numpy as np
import pyasc
from pyasc.examples import BY_NAME
ex = BY_NAME[sys.argv[1]]
args = ex.make_inputs(np.random.default_rng(0))
k = pyasc.kernel(ex.fn, chip=sys.argv[2])
t0 = time.perf_counter()
c = k.compile(*args)
print((time.perf_counter() - t0) * 1e3, c.origin, c.full_key)
"""


def first_call(name: str, chip: str, cache: Path) -> tuple[float, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYASC_")}
    env.update(PYTHONPATH=str(REPO), PYASC_CACHE="1", PYASC_CACHE_DIR=str(cache))
    out = subprocess.run([sys.executable, "-c", FIRST_CALL, name, chip], env=env, capture_output=True, text=True,
                         check=True, cwd=REPO).stdout.split()
    return float(out[0]), out[1], out[2]


def in_process_cold(name: str, chip: str, repeat: int) -> float:
    ex = BY_NAME[name]
    args = ex.make_inputs(np.random.default_rng(0))
    times = []
    for _ in range(repeat):
        k = pyasc.kernel(ex.fn, chip=chip)
        t0 = time.perf_counter()
        k.compile(*args)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def measure(name: str, chip: str, repeat: int, root: Path) -> dict:
    cache = root / name
    first_call(name, chip, cache)  # fills the entry and the memo files
    store = DiskCache(cache)
    (entry,) = store.list()
    hits = [first_call(name, chip, cache) for _ in range(repeat)]
    assert all(origin == "disk" for _, origin, _ in hits), hits
    colds = []
    for _ in range(repeat):
        shutil.rmtree(cache / "entries")
        ms, origin, _ = first_call(name, chip, cache)
        assert origin == "compiled"
        colds.append(ms)
    cold = in_process_cold(name, chip, max(repeat, 5))
    hit, fresh_cold = statistics.median(ms for ms, _, _ in hits), statistics.median(colds)
    return {"kernel": name, "cold_in_process_ms": cold, "cold_fresh_process_ms": fresh_cold, "disk_hit_ms": hit,
            "ratio_fresh_cold_to_hit": fresh_cold / hit, "ratio_in_process_cold_to_hit": cold / hit,
            "entry_bytes": entry.size, "entry_files": sorted(entry.manifest["sections"])}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--chip", default="910b")
    parser.add_argument("--kernels", default=",".join(e.name for e in EXAMPLES))
    parser.add_argument("--out", default=str(RESULTS / "cache.json"))
    args = parser.parse_args(argv)
    os.environ["PYASC_CACHE"] = "0"  # the in-process cold compiles never touch a cache
    os.environ.pop("PYASC_DUMP_DIR", None)
    in_process_cold(EXAMPLES[0].name, args.chip, 1)  # warm-up: imports and first-use caches
    root = Path(tempfile.mkdtemp(prefix="pyasc-bench-cache-"))
    try:
        rows = [measure(name, args.chip, args.repeat, root) for name in args.kernels.split(",")]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"disk cache, medians of {args.repeat} fresh processes (cold in process: of {max(args.repeat, 5)}), "
          f"chip={args.chip}, PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}")
    print(f"{'kernel':<20} {'cold ms':>8} {'cold fresh ms':>14} {'disk hit ms':>12} {'fresh/hit':>10} "
          f"{'cold/hit':>9} {'entry KiB':>10}")
    for r in rows:
        print(f"{r['kernel']:<20} {r['cold_in_process_ms']:>8.2f} {r['cold_fresh_process_ms']:>14.2f} "
              f"{r['disk_hit_ms']:>12.2f} {r['ratio_fresh_cold_to_hit']:>9.1f}x {r['ratio_in_process_cold_to_hit']:>8.2f}x "
              f"{r['entry_bytes'] / 1024:>10.1f}")
    med = {k: statistics.median(r[k] for r in rows) for k in ("cold_in_process_ms", "cold_fresh_process_ms",
                                                             "disk_hit_ms", "entry_bytes")}
    print(f"{'median':<20} {med['cold_in_process_ms']:>8.2f} {med['cold_fresh_process_ms']:>14.2f} "
          f"{med['disk_hit_ms']:>12.2f} {med['cold_fresh_process_ms'] / med['disk_hit_ms']:>9.1f}x "
          f"{med['cold_in_process_ms'] / med['disk_hit_ms']:>8.2f}x {med['entry_bytes'] / 1024:>10.1f}")
    write_json(args.out, "disk_cache", {"pyasc_version": pyasc.__version__, "chip": args.chip, "repeat": args.repeat,
                                        "pythondontwritebytecode": os.environ.get("PYTHONDONTWRITEBYTECODE", ""),
                                        "medians": med}, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
