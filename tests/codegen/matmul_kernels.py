"""Matmul kernels the codegen tests compile (a real file: the frontend reads kernel source from files)."""
import numpy as np

import pyasc


def mm(a, b):
    return pyasc.matmul(a, b)


def mm_at(a, b):
    return pyasc.matmul(a, b, transpose_a=True)


def mm_bt(a, b):
    return pyasc.matmul(a, b, transpose_b=True)


def mm_abt(a, b):
    return pyasc.matmul(a, b, transpose_a=True, transpose_b=True)


def mm_dot_t(a, b):
    """A transpose the optimiser folds into the matmul's transpose_b flag."""
    return pyasc.matmul(a, b.T)


def bias_relu(a, b, bias):
    return pyasc.relu(pyasc.matmul(a, b) + bias)


def bias_relu_f16(a, b, bias):
    return pyasc.relu(pyasc.matmul(a, b) + bias).astype(np.float16)


def bias_relu_f32(a, b, bias):
    return pyasc.relu(pyasc.matmul(a, b) + bias).astype(np.float32)


def mm_gelu(a, b):
    return pyasc.gelu(pyasc.matmul(a, b))


def mm_residual(a, b, r):
    return pyasc.matmul(a, b) + r


def mm_scaled_twice(a, b):
    y = pyasc.matmul(a, b)
    return y, pyasc.relu(y) * 0.5
