"""Example kernels shared by `pyasc demo`, the tests and the benchmarks.

Each `Example` is a plain Python function (decorate it with
`pyasc.kernel(...)` to compile; call it directly for the numpy reference)
and a `make_inputs(rng)` returning its arguments. Keep the functions plain:
benchmarks wrap them in a fresh Kernel each time so nothing is cached.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import pyasc


@dataclass(frozen=True)
class Example:
    name: str
    fn: Callable[..., Any]
    make_inputs: Callable[[np.random.Generator], tuple[Any, ...]]
    what: str


def _f32(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


# ---- the kernels ------------------------------------------------------------------------


def fused_elementwise(x, y):
    """Ten elementwise ops in one chain: the optimiser fuses them into one device kernel."""
    a = x * y
    b = a + 1.0
    c = pyasc.relu(b)
    d = c - y
    e = pyasc.exp(-d)
    f = e * 0.5
    g = pyasc.maximum(f, x)
    h = pyasc.tanh(g)
    return h / 2.0


def softmax(x):
    """Numerically stable softmax over the last axis, written with numpy-style primitives."""
    shifted = x - pyasc.max(x, axis=-1, keepdims=True)
    e = pyasc.exp(shifted)
    return e / pyasc.sum(e, axis=-1, keepdims=True)


def layer_norm(x, weight, bias):
    return pyasc.layer_norm(x, weight, bias, eps=1e-5)


def rms_norm(x, weight):
    return pyasc.rms_norm(x, weight, eps=1e-6)


def gelu(x):
    return pyasc.gelu(x)


def matmul_bias_relu(a, b, bias):
    """The pattern GE fuses into one cube kernel with bias and ReLU applied on the way out."""
    return pyasc.relu(a @ b + bias)


def tensor_if(x, threshold):
    """A branch on a tensor value becomes an If node, decided at run time."""
    if pyasc.sum(x) > threshold:
        y = x * 2.0
    else:
        y = -x
    return y


def cse_and_dead_code(x, y):
    """The same subexpression twice (CSE merges it) and a value that is never used (DCE drops it)."""
    a = pyasc.exp(x) * y
    b = pyasc.exp(x) * y
    unused = pyasc.tanh(x) + 3.0  # noqa: F841 - dead on purpose
    return a + b


def unrolled_loop(x, steps):
    """`for` over a compile-time range is unrolled; `steps` is part of the specialisation key."""
    acc = x
    for i in range(steps):
        acc = acc * 0.5 + i
    return acc


def float16_affine(x, w, b):
    return x * w + b


def int32_arith(a, b):
    return (a * 3 + b) // 2 % 7 - pyasc.minimum(a, b)


def uint8_normalize(img):
    """uint8 pixels to float32 in [0, 1]."""
    return pyasc.cast(img, pyasc.float32) / 255.0


def bool_mask(x):
    return pyasc.where(x > 0.0, x, 0.0)


def sum_and_diff(x, y):
    """A kernel returning a tuple of tensors."""
    return x + y, x - y


def mean_keepdims(x):
    return x - pyasc.mean(x, axis=1, keepdims=True)


EXAMPLES: tuple[Example, ...] = (
    Example("fused_elementwise", fused_elementwise,
            lambda rng: (_f32(rng, 64, 128), _f32(rng, 64, 128)), "10-op elementwise chain"),
    Example("softmax", softmax, lambda rng: (_f32(rng, 32, 64, scale=3.0),), "max/exp/sum/div over the last axis"),
    Example("layer_norm", layer_norm,
            lambda rng: (_f32(rng, 16, 64), _f32(rng, 64), _f32(rng, 64)), "composite op with weight and bias"),
    Example("rms_norm", rms_norm, lambda rng: (_f32(rng, 16, 64), _f32(rng, 64)), "composite op"),
    Example("gelu", gelu, lambda rng: (_f32(rng, 32, 32),), "composite activation"),
    Example("matmul_bias_relu", matmul_bias_relu,
            lambda rng: (_f32(rng, 32, 48), _f32(rng, 48, 16), _f32(rng, 16)), "matmul + bias + relu"),
    Example("tensor_if", tensor_if, lambda rng: (_f32(rng, 8, 8), 0.0), "If node on a tensor condition"),
    Example("cse_and_dead_code", cse_and_dead_code,
            lambda rng: (_f32(rng, 16, 16), _f32(rng, 16, 16)), "common subexpression and dead code"),
    Example("unrolled_loop", unrolled_loop, lambda rng: (_f32(rng, 8, 16), 4), "compile-time loop, unrolled"),
    Example("float16_affine", float16_affine,
            lambda rng: (_f32(rng, 16, 32).astype(np.float16), _f32(rng, 32).astype(np.float16),
                         _f32(rng, 32).astype(np.float16)), "float16 arithmetic"),
    Example("int32_arith", int32_arith,
            lambda rng: (rng.integers(-50, 50, (8, 16)).astype(np.int32),
                         rng.integers(-50, 50, (8, 16)).astype(np.int32)), "int32 floordiv/mod/minimum"),
    Example("uint8_normalize", uint8_normalize,
            lambda rng: (rng.integers(0, 256, (8, 24)).astype(np.uint8),), "uint8 -> float32 cast"),
    Example("bool_mask", bool_mask, lambda rng: (_f32(rng, 8, 16),), "comparison to bool and where"),
    Example("sum_and_diff", sum_and_diff,
            lambda rng: (_f32(rng, 4, 8), _f32(rng, 4, 8)), "returns a tuple"),
    Example("mean_keepdims", mean_keepdims, lambda rng: (_f32(rng, 6, 10),), "mean with keepdims, broadcast back"),
)

BY_NAME: dict[str, Example] = {e.name: e for e in EXAMPLES}
