"""Helpers for the GE pass tests: random inputs, running passes, before/after equivalence.

(Not a test module: imported by tests/ge/test_*.py, which pytest puts on sys.path.)
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from pyasc import dtypes
from pyasc.ge import PassContext, PassManager
from pyasc.ir import Graph, TensorType, interpret, verify

TOL = {"float16": (2e-2, 2e-2), "float32": (1e-4, 1e-5)}


def random_inputs(graph: Graph, rng: np.random.Generator) -> list[np.ndarray]:
    arrays = []
    for t in graph.input_types:
        arrays.append(random_array(t, rng))
    return arrays


def random_array(t: TensorType, rng: np.random.Generator) -> np.ndarray:
    shape = tuple(int(d) for d in t.shape)
    np_dtype = dtypes.to_numpy(t.dtype)
    if t.dtype == "bool":
        return rng.random(shape) < 0.5
    if dtypes.is_float(t.dtype):
        return rng.standard_normal(shape).astype(np_dtype)
    lo = 0 if t.dtype == "uint8" else -5
    return rng.integers(lo, 6, size=shape).astype(np_dtype)


def run_passes(graph: Graph, passes: Sequence, *, opt_level: int = 3, **ctx_fields) -> tuple[bool, PassContext]:
    ctx = PassContext(opt_level=opt_level, **ctx_fields)
    changed = PassManager(list(passes)).run(graph, ctx)
    verify(graph)
    return changed, ctx


def assert_same_results(before: Sequence[np.ndarray], after: Sequence[np.ndarray]) -> None:
    assert len(before) == len(after)
    for b, a in zip(before, after):
        assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
        if a.dtype.kind == "f":
            rtol, atol = TOL[a.dtype.name]
            np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol,
                                       equal_nan=True)
        else:
            np.testing.assert_array_equal(a, b)


def check_equivalent(build: Callable[[], Graph], passes: Sequence, *, seed: int = 0, trials: int = 3,
                     **ctx_fields) -> tuple[Graph, bool]:
    """Build, interpret on random inputs, run `passes`, interpret again: same results. Returns (graph, changed)."""
    graph = build()
    rng = np.random.default_rng(seed)
    inputs = [random_inputs(graph, rng) for _ in range(trials)]
    before = [interpret(graph, xs) for xs in inputs]
    changed, _ = run_passes(graph, passes, **ctx_fields)
    for xs, b in zip(inputs, before):
        assert_same_results(b, interpret(graph, xs))
    return graph, changed


def ops_of(graph: Graph) -> list[str]:
    """Op names of the non-Data nodes, in order (the structure a test compares)."""
    return [n.op for n in graph.nodes if n.op != "Data"]


def count(graph: Graph, op: str) -> int:
    return sum(1 for g in graph.walk() for n in g.nodes if n.op == op)
