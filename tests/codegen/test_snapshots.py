"""Snapshot tests of generated tile programs (FileCheck spirit): an unintended codegen change shows as a diff.

A snapshot is the kernel's tiling choice, schedule and program listing. After an intended change, rerun with
PYASC_UPDATE_SNAPSHOTS=1 and review the diff of tests/codegen/snapshots/ like any other code.
"""
from __future__ import annotations

import difflib
import os
from pathlib import Path

import numpy as np
import pytest

import pyasc

import kernels as K

SNAPSHOTS = Path(__file__).parent / "snapshots"

CASES = {
    "affine_relu_tiny": (K.affine_relu, (np.zeros((64, 100), np.float32), np.zeros(100, np.float32),
                                         np.zeros(100, np.float32))),
    "softmax_tiny": (K.softmax, (np.zeros((33, 50), np.float32),)),
    "col_sum_tiny": (K.col_sum, (np.zeros((100, 33), np.float32),)),
    "total_tiny": (K.total, (np.zeros(5000, np.float32),)),
}


def render(name: str) -> str:
    fn, args = CASES[name]
    art = pyasc.kernel(fn, chip="tiny").compile(*args)
    parts = [f"# {name}"]
    for k in art.kernels:
        parts += [k.tiling.text(), k.schedule_text, k.sync_summary, k.program.listing()]
    return "\n".join(parts) + "\n"


@pytest.mark.parametrize("name", sorted(CASES))
def test_program_listing_is_unchanged(name):
    path = SNAPSHOTS / f"{name}.txt"
    text = render(name)
    if os.environ.get("PYASC_UPDATE_SNAPSHOTS") == "1" or not path.exists():
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(text)
        if os.environ.get("PYASC_UPDATE_SNAPSHOTS") != "1":
            pytest.fail(f"no snapshot {path.name} existed; wrote it: review and commit it")
    want = path.read_text()
    if text != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), text.splitlines(True), "snapshot", "now", n=2))
        pytest.fail(f"the generated code of {name} changed (PYASC_UPDATE_SNAPSHOTS=1 to accept):\n{diff[:6000]}")
