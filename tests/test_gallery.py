"""Every examples/ file is a runnable script with a docstring; each runs here at its small size."""
from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NEEDS_TORCH = {"torch_op_module", "torch_compile_model", "torch_train"}
EXPECTED = {"bias_gelu", "softmax", "layer_norm", "rms_norm", "rotary_embedding", "swiglu", "matmul_bias_relu",
            "attention", "dynamic_shape", "tensor_if", "torch_op_module", "torch_compile_model", "torch_train"}


def test_the_gallery_has_every_example():
    assert {p.stem for p in EXAMPLES.glob("*.py")} == EXPECTED


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs_at_small_size(name, capsys):
    if name in NEEDS_TORCH:
        pytest.importorskip("torch")
    module = runpy.run_path(str(EXAMPLES / f"{name}.py"), run_name=f"gallery_{name}")
    doc = module["__doc__"]
    assert doc and f"python examples/{name}.py" in doc
    module["run"](small=True)
    assert capsys.readouterr().out.strip()  # it reports what it checked
