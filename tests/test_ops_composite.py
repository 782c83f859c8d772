"""Composite ops decompose into primitive ops that compute exactly what the composite computes.

Each test builds a graph holding the composite, decomposes it into a fresh
graph, and evaluates both with a tiny local evaluator (each node through its
op's eager function), so it does not depend on the IR interpreter.
"""
from __future__ import annotations

import numpy as np
import pytest

from conftest import assert_close
from pyasc import ops
from pyasc.errors import SourceLoc
from pyasc.ir.graph import Graph
from pyasc.ir.types import Sym, TensorType

COMPOSITES = ["softmax", "log_softmax", "layer_norm", "rms_norm", "gelu", "silu", "erf", "batch_norm"]


def evaluate(graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run `graph` node by node with the registry's eager functions (no If support needed here)."""
    env = {}
    for node in graph.nodes:
        if node.op == "Data":
            results = [inputs[node.attrs["index"]]]
        elif node.op == "Const":
            results = [node.attrs["value"]]
        else:
            out = ops.get(node.op).eager(*(env[v] for v in node.inputs), **node.attrs)
            results = [out]
        for value, result in zip(node.values, results):
            result = np.asarray(result)
            assert result.shape == value.type.shape, f"{node.op}: shape {result.shape} vs inferred {value.type}"
            env[value] = result
    return [env[v] for v in graph.outputs]


def composite_and_decomposed(op: str, types: list[TensorType], attrs: dict):
    loc = SourceLoc("kernel.py", 3, 4, 3, 20)
    g = Graph("composite")
    ins = [g.add_input(t) for t in types]
    node = g.add(op, ins, attrs, loc)
    g.set_outputs(node.values)

    d = Graph("decomposed")
    d_ins = [d.add_input(t) for t in types]
    outs = ops.get(op).decompose(d, d_ins, attrs, loc)
    d.set_outputs(outs)
    return g, d, node


CASES = [
    ("softmax", [(3, 5)], {"axis": -1}),
    ("softmax", [(2, 3, 4)], {"axis": (0, 2)}),
    ("log_softmax", [(3, 5)], {"axis": 0}),
    ("layer_norm", [(2, 3, 8)], {"eps": 1e-5, "has_weight": False, "has_bias": False}),
    ("layer_norm", [(2, 3, 8), (8,), (8,)], {"eps": 1e-5, "has_weight": True, "has_bias": True}),
    ("layer_norm", [(4, 8), (1, 8)], {"eps": 1e-3, "has_weight": False, "has_bias": True}),
    ("rms_norm", [(4, 8)], {"eps": 1e-6, "has_weight": False}),
    ("rms_norm", [(4, 8), (8,)], {"eps": 1e-6, "has_weight": True}),
    ("gelu", [(3, 4)], {}),
    ("silu", [(3, 4)], {}),
    ("erf", [(3, 4)], {}),
    ("batch_norm", [(2, 3, 4, 4), (3,), (3,), (3,), (3,)], {"eps": 1e-5, "has_weight": True, "has_bias": True}),
    ("batch_norm", [(2, 3), (3,), (3,)], {"eps": 1e-3, "has_weight": False, "has_bias": False}),
]


@pytest.mark.parametrize("op, shapes, attrs", CASES, ids=lambda c: str(c))
@pytest.mark.parametrize("dtype", ["float32", "float16", "int8"])
def test_decomposition_matches_composite(op, shapes, attrs, dtype, rng):
    types = [TensorType(s, dtype if i == 0 else "float32") for i, s in enumerate(shapes)]
    g, d, node = composite_and_decomposed(op, types, attrs)
    inputs = []
    for t in types:
        if t.dtype == "int8":
            inputs.append(rng.integers(-5, 6, t.shape).astype(np.int8))
        else:
            inputs.append(rng.uniform(-3, 3, t.shape).astype(t.dtype))
    (want,) = evaluate(g, inputs)
    (got,) = evaluate(d, inputs)
    # the decomposition is the same primitive ops on the same dtypes as the eager function
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert d.output_types == g.output_types == node.outputs
    assert want.dtype.name == node.outputs[0].dtype
    for n in d.nodes:
        assert not ops.get(n.op).composite, f"{op} decomposes into composite {n.op}"
        if n.op != "Data":
            assert n.loc == node.loc  # primitive nodes keep the composite's source location


def test_softmax_decomposition_subtracts_the_max():
    g, d, _ = composite_and_decomposed("softmax", [TensorType((2, 4), "float32")], {"axis": -1})
    ops_in_order = [n.op for n in d.nodes if n.op not in ("Data", "Const")]
    assert ops_in_order == ["max", "sub", "exp", "sum", "div"]
    big = np.array([[1000.0, 999.0, 0.0, -1000.0]] * 2, np.float32)
    with np.errstate(over="raise", invalid="raise"):
        (y,) = evaluate(d, [big])
    assert np.isfinite(y).all()
    assert_close(y.sum(-1), np.ones(2, np.float32))


def test_float16_is_computed_in_float32():
    _, d, _ = composite_and_decomposed("layer_norm", [TensorType((4, 8), "float16")],
                                       {"eps": 1e-5, "has_weight": False, "has_bias": False})
    casts = [n for n in d.nodes if n.op == "cast"]
    assert [c.attrs["dtype"] for c in casts] == ["float32", "float16"]
    assert all(n.outputs[0].dtype == "float32" for n in d.nodes if n.op in ("mean", "rsqrt"))


def test_float32_needs_no_casts():
    for op, shapes, attrs in CASES:
        _, d, _ = composite_and_decomposed(op, [TensorType(s, "float32") for s in shapes], attrs)
        assert not [n for n in d.nodes if n.op == "cast"], op


def test_decomposition_with_symbolic_dims():
    t = TensorType((Sym("B"), Sym("N")), "float16")
    for op, attrs in (("softmax", {"axis": -1}), ("rms_norm", {"eps": 1e-6, "has_weight": False}),
                      ("gelu", {})):
        g, d, node = composite_and_decomposed(op, [t], attrs)
        assert d.output_types == node.outputs == [t]


#: the composites of the numpy3 modules (flips.py, closeness.py, nanreduce.py, ...)
NUMPY3 = {"flip", "fliplr", "flipud", "isclose", "allclose", "heaviside", "select", "nansum", "nanmean", "nanmax",
          "nanmin", "nanvar", "nanstd", "ptp", "ufunc_accumulate", "ufunc_outer", "ufunc_reduceat", "tensordot", "inner", "kron", "cross",
          "matrix_power", "median", "quantile", "percentile", "searchsorted", "interp", "convolve",
          "correlate", "trapezoid", "meshgrid"}
NUMPY4 = {"angle", "cbrt", "choose", "column_stack", "compress", "conj", "copysign", "corrcoef", "cov",
          "cumulative_prod", "cumulative_sum", "deg2rad", "delete", "diagonal", "digitize", "divmod", "dstack",
          "ediff1d", "float_power", "fmod", "frexp", "gradient", "histogram", "hypot", "imag", "insert", "isin",
          "ldexp", "left_shift", "lexsort", "modf", "nancumprod", "nancumsum", "polyval", "rad2deg", "real", "resize",
          "right_shift", "rot90", "sinc", "unravel_index", "unwrap", "vdot", "bincount"}

NUMPY6 = {"tan", "arctan2", "arcsinh", "arccosh", "arctanh", "logaddexp2", "fabs", "positive", "signbit", "isposinf",
          "isneginf", "gcd", "lcm", "nanargmax", "nanargmin", "nanprod", "nanmedian", "nanquantile", "nanpercentile",
          "array_equal", "array_equiv", "vander", "broadcast_arrays", "rollaxis", "vecdot", "matvec", "vecmat", "packbits",
          "unpackbits"}


def test_every_composite_has_a_case():
    assert {c[0] for c in CASES} == set(COMPOSITES)
    # the numpy ops of issue 11 are composites too, but their eager function is numpy's own (not the body):
    # test_ops_numpy_math.py compares their decompositions with numpy
    numpy_eager = {"log1p", "expm1", "sinh", "cosh", "arctan", "arcsin", "arccos", "log2", "exp2", "logaddexp",
                   "square", "clip", "copy", "var", "std", "full_like", "dot", "swapaxes", "moveaxis", "repeat", "tile",
                   "pad", "concat", "split", "argmax", "argmin", "take", "cumsum",
                   "arange", "linspace", "eye", "tri", "tril", "triu", "outer"}
    # issue 22's: compared with numpy on both presets by test_golden_ops (numpy_op_makers.makers_issue22);
    # einsum and scatter_rows (no public api) by test_numpy_calls / test_advanced_indexing
    numpy_eager |= {"all", "any", "append", "argsort", "average", "count_nonzero", "cumprod", "diag", "diagflat",
                    "einsum", "expit", "fmax", "fmin", "isfinite", "isinf", "isnan", "log10", "logical_and",
                    "logical_not", "logical_or", "logical_xor", "logit", "logsumexp", "nan_to_num", "norm", "prod",
                    "rint", "round", "scatter_rows", "sort", "special_erf", "special_log_softmax", "special_softmax",
                    "take_along_axis", "trace", "trunc", "xlog1py", "xlogy"}
    # issue 19's attention: test_attention_op.py compares its eager form and its decomposition with float64
    numpy_eager |= {"attention"}
    # roll and diff (shifts.py): compared with numpy by test_golden_ops (numpy_op_makers.makers_issue22)
    numpy_eager |= {"roll", "diff"}
    # numpy3's (flips, closeness, nanreduce, ...): test_golden_ops (numpy_op_makers.makers_numpy3); select, meshgrid,
    # ufunc_accumulate and ufunc_outer (no public api: numpy's spellings are sugar) by test_ops_numpy3.py
    numpy_eager |= NUMPY3
    # partition / argpartition: numpy's order beside kth is its introselect's, so test_ops_numpy3.py checks the
    # partition property (and the kth values) against numpy rather than the arrays
    numpy_eager |= {"partition", "argpartition"}
    # sliding_window_view and numpy's in-place writers: test_numpy_writers.py
    numpy_eager |= {"sliding_window_view"}
    # linspace_between (np.linspace with tensor ends): test_numpy_calls.py
    numpy_eager |= {"linspace_between"}
    # numpy4's (floatmath, rearrange, covariance, series, binning, lexsort, vdot): internal ops behind numpy
    # signatures, compared with numpy in grouped kernels by test_ops_numpy4.py
    numpy_eager |= NUMPY4
    # np.linalg.solve, inv, det, slogdet, cholesky (linsolve.py): likewise, by test_ops_linsolve.py
    numpy_eager |= {"solve", "inv", "det", "slogdet", "cholesky"}
    # numpy6's (trig, signs, ...): internal ops behind numpy signatures, compared with numpy by test_ops_numpy6.py
    numpy_eager |= NUMPY6
    assert {n for n in ops.names() if ops.get(n).composite} == set(COMPOSITES) | numpy_eager
