"""Golden tests: every op with a public api, every dtype it accepts, through @pyasc.kernel vs py_func.

Parametrised from the registry, so a new op is covered as soon as it is
registered. Each op gets a kernel `def kernel_<op>(<its api parameters>):
return pyasc.<op>(...)`, generated into a real file (the frontend reads
source from files); tensors are arrays, the other parameters compile-time
values. `MAKERS` gives the arguments per op (variants: a list of makers);
ops without an entry get one array per tensor parameter and the api's
defaults. A dtype is "accepted" when the op's own inference takes it.
"""
from __future__ import annotations

import importlib.util
import inspect
from typing import Any, Callable

import numpy as np
import pytest

import pyasc
from pyasc import dtypes, ops
from pyasc.errors import InferError
from pyasc.ir import TensorType

from conftest import assert_close
import numpy_op_makers

# a maker returns (tensors in the op's tensor_params order, attrs by api parameter name)
Maker = Callable[[np.random.Generator, str], tuple[list[Any], dict[str, Any]]]


def values(rng: np.random.Generator, dtype: str, shape: tuple[int, ...], kind: str = "any") -> np.ndarray:
    """Random test values of a dtype; `kind` restricts the domain: any, positive, nonzero, small."""
    np_dtype = dtypes.to_numpy(dtype)
    if dtype == "bool":
        arr = rng.random(shape) < 0.5
        return np.ones(shape, bool) if kind in ("nonzero", "positive") else arr
    if dtypes.is_float(dtype):
        if kind == "positive":
            arr = rng.uniform(0.5, 3.0, shape)
        elif kind == "small":
            arr = rng.uniform(-2.0, 2.0, shape)
        else:
            arr = rng.uniform(-3.0, 3.0, shape)
            if kind == "nonzero":
                arr = np.where(np.abs(arr) < 0.25, 0.5, arr)
        return arr.astype(np_dtype)
    lo = 0 if dtype == "uint8" or kind == "positive" else -5
    hi = 4 if kind == "small" else 9
    arr = rng.integers(lo + (1 if kind == "positive" else 0), hi, shape).astype(np_dtype)
    if kind == "nonzero":
        arr = np.where(arr == 0, np.ones((), np_dtype), arr)
    return arr


def binary(kind2: str = "any", kind1: str = "any") -> Maker:
    return lambda rng, d: ([values(rng, d, (3, 4), kind1), values(rng, d, (4,), kind2)], {})


def unary(kind: str = "any", shape: tuple[int, ...] = (3, 4), **attrs: Any) -> Maker:
    return lambda rng, d: ([values(rng, d, shape, kind)], dict(attrs))


def _pow(rng, d):
    if dtypes.is_float(d):
        return [values(rng, d, (3, 4), "positive"), values(rng, d, (4,), "small")], {}
    return [values(rng, d, (3, 4), "small"), rng.integers(0, 3, (4,)).astype(dtypes.to_numpy(d))], {}


def _norm(with_bias: bool, weighted: bool) -> Maker:
    def make(rng, d):
        x = values(rng, d, (3, 8))
        w = values(rng, d, (8,)) if weighted else None
        return ([x, w, values(rng, d, (8,)) if weighted else None] if with_bias else [x, w]), {}

    return make


REDUCE = [unary(axis=None, keepdims=False), unary(axis=1, keepdims=True),
          unary(shape=(2, 3, 4), axis=(0, 2), keepdims=False)]

MAKERS: dict[str, list[Maker]] = {
    "div": [binary("nonzero")],
    "floordiv": [binary("nonzero")],
    "mod": [binary("nonzero")],
    "pow": [_pow],
    "log": [unary("positive")],
    "sqrt": [unary("positive")],
    "rsqrt": [unary("positive")],
    "reciprocal": [unary("nonzero")],
    "where": [lambda rng, d: ([rng.random((3, 4)) < 0.5, values(rng, d, (3, 4)), values(rng, d, (4,))], {})],
    "cast": [lambda rng, d: ([values(rng, d, (3, 4))], {"dtype": np.int32 if dtypes.is_float(d) else np.float32}),
             lambda rng, d: ([values(rng, d, (3, 4), "positive")], {"dtype": d})],
    "sum": REDUCE, "max": REDUCE, "min": REDUCE, "mean": REDUCE,
    "softmax": [unary(shape=(3, 5), axis=-1), unary(shape=(3, 5), axis=0)],
    "log_softmax": [unary(shape=(3, 5), axis=-1)],
    "layer_norm": [_norm(True, True), _norm(True, False)],
    "rms_norm": [_norm(False, True), _norm(False, False)],
    "matmul": [lambda rng, d: ([values(rng, d, (3, 4), "small"), values(rng, d, (4, 5), "small")], {}),
               lambda rng, d: ([values(rng, d, (2, 3, 4), "small"), values(rng, d, (4, 2), "small")], {}),
               lambda rng, d: ([values(rng, d, (4, 3), "small"), values(rng, d, (5, 4), "small")],
                               {"transpose_a": True, "transpose_b": True})],
    "transpose": [unary(axes=None), unary(shape=(2, 3, 4), axes=(1, 2, 0))],
    "reshape": [lambda rng, d: ([values(rng, d, (3, 4))], {"shape": (2, -1)}),
                lambda rng, d: ([values(rng, d, (3, 4))], {"shape": (12,)})],
    "broadcast_to": [lambda rng, d: ([values(rng, d, (4,))], {"shape": (3, 4)}),
                     lambda rng, d: ([values(rng, d, (3, 1))], {"shape": (2, 3, 4)})],
    "expand_dims": [unary(axis=0), unary(axis=-1)],
    "squeeze": [unary(shape=(3, 1, 4), axis=1), unary(shape=(1, 3, 1), axis=None)],
    "full": [lambda rng, d: ([], {"shape": (2, 3), "fill_value": True if d == "bool" else 3, "dtype": d})],
    "attention": [lambda rng, d: ([values(rng, d, (2, 5, 8), "small") for _ in range(3)] + [None], {"causal": True}),
                  lambda rng, d: ([values(rng, d, (7, 16), "small"), values(rng, d, (9, 16), "small"),
                                   values(rng, d, (9, 4), "small"), values(rng, d, (7, 9), "small")],
                                  {"scale": 0.5})],
}
MAKERS.update(numpy_op_makers.makers(values))  # the numpy ops of issue 11
MAKERS.update(numpy_op_makers.makers_issue22(values))  # and of issue 22 (on the dtypes DTYPES_ISSUE22 names)


def _conv(bias: bool, **attrs: Any) -> Maker:
    def make(rng, d):
        x, w = values(rng, d, (1, 3, 5, 5), "small"), values(rng, d, (4, 3, 3, 3), "small")
        return [x, w, values(rng, d, (4,)) if bias else None], dict(attrs)
    return make


def _batch_norm(rng, d):
    x = values(rng, d, (2, 3, 4, 4))
    return [x, values(rng, d, (3,), "small"), values(rng, d, (3,), "positive"), values(rng, d, (3,)),
            values(rng, d, (3,))], {"eps": 1e-3}


POOLS = [unary(shape=(1, 3, 5, 5), kernel_size=2), unary(shape=(1, 3, 5, 5), kernel_size=3, stride=2, padding=1)]
MAKERS.update({  # convolutions, pooling, batch norm (issue 18)
    "conv2d": [_conv(True, padding=1), _conv(False, stride=2)],
    "max_pool2d": POOLS, "avg_pool2d": POOLS, "batch_norm": [_batch_norm],
})


def default_maker(op: ops.OpDef) -> Maker:
    shapes = [(3, 4), (4,), (3, 1)]
    return lambda rng, d: ([values(rng, d, shapes[i % 3]) for i in range(len(op.tensor_params))], {})


def makers_for(op: ops.OpDef) -> list[Maker]:
    return MAKERS.get(op.name, [default_maker(op)])


def full_args(op: ops.OpDef, made: tuple[list[Any], dict[str, Any]]) -> dict[str, Any]:
    """Every api parameter with a value: the maker's, else the api default."""
    tensors, attrs = made
    given = dict(zip(op.tensor_params, tensors), **attrs)
    out = {}
    for p in inspect.signature(op.api).parameters.values():
        if p.name in given:
            out[p.name] = given[p.name]
        elif p.default is not inspect.Parameter.empty:
            out[p.name] = p.default
        else:
            raise AssertionError(f"op {op.name}: add an argument maker for required parameter {p.name!r} to MAKERS")
    return out


def accepts(op: ops.OpDef, args: dict[str, Any]) -> bool:
    """Does the op's own inference take these arguments (its dtype rules)?"""
    api_params = list(inspect.signature(op.api).parameters.values())
    pos = [args[p.name] for p in api_params if p.kind != inspect.Parameter.KEYWORD_ONLY]
    kw = {p.name: args[p.name] for p in api_params if p.kind == inspect.Parameter.KEYWORD_ONLY}
    tensors, attrs = op.bind(pos, kw)
    types = [TensorType(np.asarray(t).shape, np.asarray(t).dtype.name) for t in tensors if t is not None]
    try:
        op.infer(types, attrs)
    except (InferError, dtypes.DTypeError):
        return False
    return True


def _cases() -> list[Any]:
    cases = []
    for name in ops.names():
        op = ops.get(name)
        if op.api is None:
            continue
        for vi, maker in enumerate(makers_for(op)):
            for d in numpy_op_makers.DTYPES_ISSUE22.get(name, dtypes.NAMES):
                args = full_args(op, maker(np.random.default_rng(0), d))
                try:
                    ok = accepts(op, args)
                except TypeError:  # a maker that does not fit the api: surfaced by the test itself
                    ok = True
                if ok:
                    cases.append(pytest.param(name, vi, d, id=f"{name}-v{vi}-{d}"))
    return cases


CASES = _cases()


@pytest.fixture(scope="module")
def kernel_module(tmp_path_factory):
    """A real module with one `kernel_<op>` function per public op (the frontend needs source on disk)."""
    lines = ["import pyasc", ""]
    for name in ops.names():
        op = ops.get(name)
        if op.api is None:
            continue
        params = list(inspect.signature(op.api).parameters.values())
        call = ", ".join(p.name if p.kind != inspect.Parameter.KEYWORD_ONLY else f"{p.name}={p.name}" for p in params)
        lines += [f"def kernel_{name}({', '.join(p.name for p in params)}):",
                  f"    return pyasc.{op.public_name}({call})", ""]
    path = tmp_path_factory.mktemp("golden") / "golden_kernels.py"
    path.write_text("\n".join(lines))
    spec = importlib.util.spec_from_file_location("golden_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_public_op_is_covered():
    covered = {c.values[0] for c in CASES}
    public = {n for n in ops.names() if ops.get(n).api is not None}
    assert public - covered == set(), "ops with an api but no accepted dtype in any variant"


@pytest.mark.parametrize("chip", ["tiny", "910b"])
@pytest.mark.parametrize("name,variant,dtype", CASES)
def test_op_golden(kernel_module, name, variant, dtype, chip):
    op = ops.get(name)
    args = full_args(op, makers_for(op)[variant](np.random.default_rng(1), dtype))
    fn = getattr(kernel_module, f"kernel_{name}")
    k = pyasc.kernel(fn, chip=chip)
    ordered = [args[p] for p in inspect.signature(fn).parameters]
    snapshot = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in ordered]
    expected = k.py_func(*ordered)
    actual = k(*ordered)
    assert isinstance(actual, np.ndarray)
    expected = np.asarray(expected)
    narrowed = dtypes.narrow(expected.dtype)
    # pyasc narrows 64-bit results to 32-bit (pyasc.dtypes); everything else must match numpy exactly
    assert actual.dtype.name == narrowed, f"{name}: dtype {actual.dtype}, reference {expected.dtype}"
    assert_close(actual, expected.astype(actual.dtype) if narrowed != expected.dtype.name else expected)
    for before, after in zip(snapshot, ordered):
        if isinstance(before, np.ndarray):
            np.testing.assert_array_equal(before, after)  # inputs never modified


# ---- public sugar over registry ops (zeros, ones, astype) and numpy spellings -----------------


@pyasc.kernel(chip="tiny")
def zeros_ones_like(x, dtype):
    return pyasc.zeros(x.shape, dtype) + x, pyasc.ones((2, 3), dtype=dtype)


@pyasc.kernel(chip="tiny")
def astype_kernel(x, dtype):
    return pyasc.astype(x, dtype)


@pytest.mark.parametrize("dtype", ["float16", "float32", "int8", "int16", "int32", "uint8"])
def test_zeros_and_ones(dtype):
    x = values(np.random.default_rng(0), dtype, (2, 3))
    out = zeros_ones_like(x, dtypes.to_numpy(dtype).type)
    ref = zeros_ones_like.py_func(x, dtypes.to_numpy(dtype).type)
    for a, e in zip(out, ref):
        assert_close(a, e)


@pytest.mark.parametrize("src", ["float32", "int32", "uint8", "bool"])
@pytest.mark.parametrize("dst", ["float16", "float32", "int32", "bool"])
def test_astype(src, dst):
    x = values(np.random.default_rng(0), src, (3, 4), "positive")
    assert_close(astype_kernel(x, dst), astype_kernel.py_func(x, dst))
