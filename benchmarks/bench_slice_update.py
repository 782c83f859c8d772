"""Slice writes (`slice_update`) on the emulator, against a full-tensor elementwise kernel of the same bytes.

    python benchmarks/bench_slice_update.py [--chip 910b] [--out benchmarks/results/slice_update.json]

Each case writes a region of a tensor in place (numpy's meaning; a functional
`slice_update` in the graph, lowered by templates/update.py). Reported per case:
simulated cycles and microseconds, GM bytes read and written, launches, and the
ratio to `relu` over the same tensor (one read, one write of every byte) measured in
the same run — the floor a slice write that copies the tensor can reach.
"""
from __future__ import annotations

import argparse

import numpy as np

import pyasc
from _report import RESULTS, write_json


def kv_cache(cache, new):
    cache[:, 100:116] = new
    return cache


def row_fill(y, v):
    for i in range(4):
        y[i * 2] = v[i]
    return y


def strided_columns(y, v):
    y[:, ::4] = v
    return y


def full_relu(x, other):
    return pyasc.relu(x)


CASES = [
    ("kv cache [:, 100:116] of 8x1024x64 f16", kv_cache, (8, 1024, 64), (8, 16, 64), "float16"),
    ("4 rows of 64x4096 f32, one write each", row_fill, (64, 4096), (4, 4096), "float32"),
    ("every 4th column of 512x512 f32", strided_columns, (512, 512), (512, 128), "float32"),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chip", default="910b")
    ap.add_argument("--out", default=str(RESULTS / "slice_update.json"))
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    print(f"{'case':44} {'cycles':>9} {'us':>8} {'GM read':>10} {'GM write':>10} {'launches':>8} {'vs relu':>8}")
    for label, fn, shape, vshape, dtype in CASES:
        x = rng.random(shape).astype(dtype)
        v = rng.random(vshape).astype(dtype)
        out, prof = pyasc.kernel(fn, chip=args.chip).profile(x.copy(), v)
        np.testing.assert_array_equal(out, fn(x.copy(), v))
        _, ref = pyasc.kernel(full_relu, chip=args.chip).profile(x, v)
        ratio = prof.cycles / ref.cycles if ref.cycles else float("nan")
        print(f"{label:44} {prof.cycles:>9} {prof.time_s * 1e6:>8.2f} {prof.gm_read_bytes:>10} "
              f"{prof.gm_write_bytes:>10} {prof.launches:>8} {ratio:>8.2f}")
        rows.append({"case": label, "cycles": prof.cycles, "time_us": prof.time_s * 1e6,
                     "gm_read_bytes": prof.gm_read_bytes, "gm_write_bytes": prof.gm_write_bytes,
                     "launches": prof.launches, "relu_cycles": ref.cycles, "ratio_to_relu": ratio})
    write_json(args.out, "slice_update", {"chip": args.chip}, rows)


if __name__ == "__main__":
    main()
