"""The command line: `pyasc demo`, `pyasc ops`, `pyasc --version` (and `python -m pyasc`)."""
from __future__ import annotations

import io
import subprocess
import sys
from contextlib import redirect_stdout

import pytest

import pyasc
from pyasc import cli, demo, ops
from pyasc.examples import EXAMPLES


def run_cli(argv):
    buf = io.StringIO()
    with redirect_stdout(buf):
        status = cli.main(argv)
    return status, buf.getvalue()


def test_demo_runs_every_example_and_exits_0():
    status, out = run_cli(["demo", "--chip", "tiny"])
    assert status == 0, out
    for ex in EXAMPLES:
        assert ex.name in out
    header = out.splitlines()[1]
    for column in ("kernel", "inputs", "nodes in->out", "device kernels", "max abs err", "ok", "compile ms"):
        assert column in header
    assert "FAIL" not in out
    assert f"{len(EXAMPLES)}/{len(EXAMPLES)} kernels match" in out


def test_demo_opt_level_0():
    status, out = run_cli(["demo", "--chip", "tiny", "--opt-level", "0"])
    assert status == 0, out
    assert "opt_level=0" in out


def test_demo_exits_1_on_a_mismatch(monkeypatch):
    monkeypatch.setattr(demo, "compare", lambda actual, expected: (False, 1.0, "values differ"))
    status, out = run_cli(["demo", "--chip", "tiny"])
    assert status == 1
    assert "FAIL" in out and "FAILED:" in out


def test_demo_rejects_an_unknown_chip():
    with pytest.raises(SystemExit) as info:
        run_cli(["demo", "--chip", "nosuch"])
    assert info.value.code == 2


def test_demo_rejects_a_bad_opt_level(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["demo", "--opt-level", "7"])
    assert info.value.code == 2
    assert "--opt-level" in capsys.readouterr().err


def test_ops_lists_every_op_with_its_category():
    status, out = run_cli(["ops"])
    assert status == 0
    lines = out.splitlines()
    for name in ops.names():
        row = next((ln for ln in lines if ln.split()[:1] == [name]), None)
        assert row is not None, name
        assert ops.get(name).category.name in row


def test_version_in_a_subprocess():
    result = subprocess.run([sys.executable, "-m", "pyasc", "--version"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0
    assert result.stdout.strip() == f"pyasc {pyasc.__version__}"


def test_no_command_prints_help():
    status, out = run_cli([])
    assert status == 0 and "demo" in out and "ops" in out
