"""Every example kernel (pyasc/examples.py, also the demo's) matches its numpy reference."""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from pyasc import dtypes
from pyasc.examples import EXAMPLES

from conftest import assert_close


def check(actual, expected):
    expected = np.asarray(expected)
    narrowed = dtypes.narrow(expected.dtype)
    assert np.asarray(actual).dtype.name == narrowed
    assert_close(actual, expected.astype(narrowed))


@pytest.mark.parametrize("chip", ["tiny", "910b"])
@pytest.mark.parametrize("opt_level", [0, 3])
@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_matches_numpy(example, opt_level, chip):
    args = example.make_inputs(np.random.default_rng(0))
    k = pyasc.kernel(example.fn, chip=chip, opt_level=opt_level)
    actual = k(*args)
    expected = example.fn(*args)
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            check(a, e)
    else:
        assert isinstance(actual, np.ndarray)
        check(actual, expected)


def test_tensor_if_takes_both_branches():
    ex = next(e for e in EXAMPLES if e.name == "tensor_if")
    k = pyasc.kernel(ex.fn, chip="tiny")
    x = np.ones((2, 2), np.float32)
    assert_close(k(x, 0.0), x * 2)
    assert_close(k(-x, 0.0), x)
    assert k.cache_info().misses == 1  # one compile serves both branches
    assert any(n.op == "If" for n in k.compile(x, 0.0).graph.nodes)


def test_the_optimiser_removes_the_duplicate_and_the_dead_value():
    ex = next(e for e in EXAMPLES if e.name == "cse_and_dead_code")
    args = ex.make_inputs(np.random.default_rng(0))
    c = pyasc.kernel(ex.fn, chip="tiny").compile(*args)
    ops_out = [n.op for n in c.graph.all_nodes()]
    assert "tanh" not in ops_out and ops_out.count("exp") <= 1
    assert c.nodes_out < c.nodes_in


def test_examples_have_unique_names_and_cover_the_brief():
    names = [e.name for e in EXAMPLES]
    assert len(names) == len(set(names))
    for required in ("fused_elementwise", "softmax", "layer_norm", "rms_norm", "gelu", "matmul_bias_relu",
                     "tensor_if", "cse_and_dead_code"):
        assert required in names


def test_fused_elementwise_has_ten_ops():
    ex = next(e for e in EXAMPLES if e.name == "fused_elementwise")
    c = pyasc.kernel(ex.fn, chip="tiny", opt_level=0).compile(*ex.make_inputs(np.random.default_rng(0)))
    assert c.nodes_in == 10
