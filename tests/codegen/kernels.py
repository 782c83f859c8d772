"""Kernels the codegen tests compile (a real file: the frontend reads kernel source from files)."""
import pyasc


def affine_relu(x, w, b):
    return pyasc.relu(x * w + b)


def chain(x, y):
    return pyasc.tanh(pyasc.exp(-(x * y)) * 0.5) - y


def mixed_broadcast(a, b, c):
    return a * b + c


def casts(x):
    return (x * 2).astype("float32") + 1.0


def compare_select(x, y):
    return pyasc.where(x > y, x - y, y * 0.5)


def softmax(x):
    return pyasc.softmax(x)


def log_softmax(x):
    return pyasc.log_softmax(x, axis=-1)


def layer_norm(x, w, b):
    return pyasc.layer_norm(x, w, b)


def rms_norm(x, w):
    return pyasc.rms_norm(x, w)


def row_sum(x):
    return pyasc.sum(x, axis=-1)


def row_stats(x):
    return pyasc.max(x, axis=-1, keepdims=True), pyasc.mean(x * x, axis=-1)


def col_sum(x):
    return pyasc.sum(x * 2.0, axis=0)


def col_mean_middle(x):
    return pyasc.mean(x, axis=1, keepdims=True)


def col_max(x):
    return pyasc.max(pyasc.abs(x), axis=0)


def split_axes(x):
    return pyasc.sum(x, axis=(0, 2))


def total(x):
    return pyasc.sum(x)


def normalize_total(x):
    return x / pyasc.sum(pyasc.abs(x))


def softmax_axis0(x):
    return pyasc.softmax(x, axis=0)


def tensor_if(x, t):
    if pyasc.sum(x) > t:
        y = x * 2.0
    else:
        y = -x
    return y + 1.0


def passthrough_if(x, t):
    if pyasc.max(x) > t:
        y = x
    else:
        y = x + 1.0
    return y


def int_ops(x, y):
    return (x // 3) % 5 + (y & 7) - (x ^ y)


def bool_ops(x, y):
    return (x | y) & ~(x ^ y)
