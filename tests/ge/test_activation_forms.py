"""The tanh GELU rewritten as x / (1 + exp(-2z)) (ge/activation_forms.py, one of algebraic_simplify's rules)."""
from __future__ import annotations

import numpy as np
import pytest
from ge_equiv import check_equivalent, count, run_passes

import pyasc
from pyasc.ge.pattern import DecomposeComposites
from pyasc.ge.simplify import DCE, AlgebraicSimplify
from pyasc.ir import Graph, TensorType
from pyasc.testing import assert_close


def _c(g: Graph, value: float, dtype: str):
    return g.add("Const", [], {"value": np.array(value, dtype=dtype)}).out()


def tanh_gelu(dtype: str = "float32", half: float = 0.5, tanh_is_output: bool = False, swap: bool = False) -> Graph:
    """half * x * (1 + tanh(0.7978845608 * (x + 0.044715 * x**3))), picoGPT's spelling."""
    g = Graph("main")
    x = g.add_input(TensorType((4, 16), dtype), "x")
    cube = g.add("pow", [x, _c(g, 3.0, dtype)], {}).out()
    inner = g.add("add", [x, g.add("mul", [_c(g, 0.044715, dtype), cube], {}).out()], {}).out()
    th = g.add("tanh", [g.add("mul", [_c(g, 0.7978845608, dtype), inner], {}).out()], {}).out()
    one_plus = g.add("add", [_c(g, 1.0, dtype), th], {}).out()
    hx = g.add("mul", [_c(g, half, dtype), x], {}).out()
    y = g.add("mul", [one_plus, hx] if swap else [hx, one_plus], {}).out()
    g.set_outputs([y, th] if tanh_is_output else [y])
    return g


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("swap", [False, True])
def test_tanh_gelu_becomes_exp_and_div(dtype, swap):
    g, changed = check_equivalent(lambda: tanh_gelu(dtype, swap=swap), [AlgebraicSimplify(), DCE()])
    assert changed and count(g, "tanh") == 0 and count(g, "exp") == 1 and count(g, "div") == 1
    # -2 folded into sqrt(2/pi): one scale of the polynomial, no separate multiply by -2
    exp_arg = next(n for n in g.nodes if n.op == "exp").inputs[0].node
    scales = [v.node.attrs["value"] for v in exp_arg.inputs if v.node.op == "Const"]
    assert exp_arg.op == "mul" and len(scales) == 1
    assert float(scales[0]) == float(np.array(-2 * np.array(0.7978845608, dtype), dtype))


def test_the_decomposed_gelu_composite_is_rewritten_too():
    def build():
        g = Graph("main")
        x = g.add_input(TensorType((4, 16), "float32"), "x")
        g.set_outputs([g.add("gelu", [x], {}).out()])
        return g

    g, _ = check_equivalent(build, [DecomposeComposites(), AlgebraicSimplify(), DCE()])
    assert count(g, "tanh") == 0 and count(g, "exp") == 1


@pytest.mark.parametrize("variant", [{"half": 0.25}, {"tanh_is_output": True}])
def test_other_scales_and_shared_intermediates_stay(variant):
    g = tanh_gelu(**variant)
    run_passes(g, [AlgebraicSimplify(), DCE()])
    assert count(g, "tanh") == 1 and count(g, "exp") == 0


def _mm_gelu(a, b, bias):
    x = a @ b + bias
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def test_matmul_with_the_tanh_gelu_matches_numpy_and_runs_no_tanh():
    """One mixed launch on the tiny chip (odd sizes: edge blocks), float16, against numpy's literal form."""
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(s).astype(np.float16) * 0.3 for s in ((37, 48), (48, 40)))
    bias = rng.standard_normal(40).astype(np.float16)
    k = pyasc.kernel(_mm_gelu, chip="tiny")
    assert_close(k(a, b, bias), _mm_gelu(a, b, bias).astype(np.float16))   # (numpy computes in float64 here)
    programs = "\n".join(v for name, v in k.compile(a, b, bias).stages.items() if name.startswith("program"))
    assert "vtanh" not in programs and "vexp" in programs
    assert [kd.template for kd in k.compile(a, b, bias).kernels] == ["mixed"]
