"""Kernels the torch tests register (in a file: pyasc compiles functions from their source)."""
from __future__ import annotations

import pyasc


def bias_gelu(x, b, scale: float = 1.0):
    return pyasc.gelu(x + b) * scale


def layer_norm(x, w, b, eps: float = 1e-5):
    return pyasc.layer_norm(x, w, b, eps=eps)


def split_sum_diff(x, y):
    return x + y, x - y


def row_sums(x, keep: bool = False):
    return pyasc.sum(x, axis=-1, keepdims=keep)


def repeat_add(x, times: int = 2):
    acc = x
    for _ in range(times):
        acc = acc + x
    return acc


def scale_in_place(x, s: float):
    return x * s


def scale_truly_in_place(x, s: float):
    x *= s
    return x


def add_in_place_undeclared(x, y):
    x += y
    return y * 1


def square(x):
    return x * x


def two_paths(x):
    if x.ndim == 2:
        return x, x
    return x


def bad_default(x, mode="fast"):
    return x


def no_return(x):
    x * 2.0


def mse_rows(x, w):
    d = x @ w - 1.0
    return pyasc.mean(d * d, axis=-1), pyasc.max(d, axis=-1)


def gather_scale(x, idx):
    return x * idx.astype(pyasc.float32)


def mse_rows_eager(x, w):
    """mse_rows in eager torch (the reference its derived backward is compared with)."""
    d = x @ w - 1.0
    return (d * d).mean(-1), d.amax(-1)
