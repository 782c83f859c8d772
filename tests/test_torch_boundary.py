"""Core pyasc never imports torch: only pyasc.torch does, and only when a user imports it."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_no_module_outside_pyasc_torch_imports_torch():
    offenders = []
    for path in sorted((ROOT / "pyasc").rglob("*.py")) + sorted((ROOT / "simulator").rglob("*.py")):
        if (ROOT / "pyasc" / "torch") in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            if any(n == "torch" or n.startswith("torch.") for n in names):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders


def test_compiling_and_running_a_kernel_does_not_load_torch():
    code = ("import sys, numpy as np, pyasc, pyasc.cli, pyasc.demo\n"
            "from pyasc.examples import EXAMPLES\n"
            "k = pyasc.kernel(EXAMPLES[0].fn, chip='tiny')\n"
            "k(*EXAMPLES[0].make_inputs(np.random.default_rng(0)))\n"
            "assert 'torch' not in sys.modules, 'core pyasc imported torch'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
