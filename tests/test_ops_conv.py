"""conv2d, max_pool2d, avg_pool2d and batch_norm: eager semantics against torch, inference, and the errors
bad shapes and arguments get (eagerly: ValueError / TypeError; in a kernel: a CompileError at the call)."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import pyasc
from pyasc import CompileError
from pyasc.ir import TensorType
from pyasc.ops import infer
from pyasc.testing import assert_close

torch = pytest.importorskip("torch")
F = torch.nn.functional

CONVS = [  # (x shape, w shape, stride, padding, dilation, groups)
    ((1, 3, 7, 9), (5, 3, 3, 3), 1, 1, 1, 1),
    ((2, 4, 8, 7), (6, 2, 3, 2), 2, (1, 0), (2, 1), 2),
    ((1, 4, 5, 5), (4, 1, 3, 3), 1, "same", 1, 4),
    ((1, 3, 6, 6), (2, 3, 1, 1), 2, 0, 1, 1),
    ((1, 2, 4, 4), (3, 2, 2, 2), 1, "valid", 1, 1),
    ((1, 2, 3, 3), (2, 2, 1, 1), 1, 2, 1, 1),  # padding wider than the kernel: a border of bias
]


@pytest.mark.parametrize("xs, ws, stride, padding, dilation, groups", CONVS)
def test_conv2d_matches_torch(xs, ws, stride, padding, dilation, groups, rng):
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32)
    got = pyasc.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
    want = F.conv2d(*map(torch.from_numpy, (x, w, b)), stride=stride, padding=padding, dilation=dilation,
                    groups=groups).numpy()
    assert got.dtype == np.float32
    assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_float16_conv_accumulates_in_float32_and_rounds_once(rng):
    x = rng.standard_normal((1, 32, 5, 5)).astype(np.float16)
    w = rng.standard_normal((8, 32, 3, 3)).astype(np.float16)
    got = pyasc.conv2d(x, w, padding=1)
    exact = F.conv2d(torch.from_numpy(x).double(), torch.from_numpy(w).double(), padding=1).numpy()
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, exact.astype(np.float32).astype(np.float16))


def test_mixed_dtypes_promote_like_numpy(rng):
    x = rng.standard_normal((1, 2, 4, 4)).astype(np.float16)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    assert pyasc.conv2d(x, w).dtype == np.float32
    assert infer("conv2d", [TensorType((1, 2, 4, 4), "float16"), TensorType((3, 2, 3, 3), "float32")],
                 {"has_bias": False})[0] == TensorType((1, 3, 2, 2), "float32")


POOLS = [dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=2),
         dict(kernel_size=(3, 2), stride=(1, 2), padding=(1, 0), ceil_mode=True),
         dict(kernel_size=3, stride=2, ceil_mode=True)]


@pytest.mark.parametrize("args", POOLS)
def test_pools_match_torch(args, rng):
    x = torch.from_numpy(rng.standard_normal((2, 3, 7, 8)).astype(np.float32))
    assert_close(pyasc.max_pool2d(x.numpy(), **args), F.max_pool2d(x, **args).numpy())
    for cip in (True, False):
        assert_close(pyasc.avg_pool2d(x.numpy(), **args, count_include_pad=cip),
                     F.avg_pool2d(x, **args, count_include_pad=cip).numpy())


def test_batch_norm_matches_torch_in_inference(rng):
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    mean, var, w, b = (rng.random(3).astype(np.float32) + 0.5 for _ in range(4))
    want = F.batch_norm(*map(torch.from_numpy, (x, mean, var, w, b)), training=False, eps=1e-3).numpy()
    assert_close(pyasc.batch_norm(x, mean, var, w, b, eps=1e-3), want)
    plain = F.batch_norm(*map(torch.from_numpy, (x, mean, var)), training=False).numpy()
    assert_close(pyasc.batch_norm(x, mean, var), plain)


# ---- errors ----------------------------------------------------------------------------------------

BAD = [  # (call, the words the message must contain)
    (lambda x, w: pyasc.conv2d(x[0], w), "expects a 4-D NCHW input (N, C, H, W), got shape (3, 6, 6)"),
    (lambda x, w: pyasc.conv2d(x, w[:, :2]), "expects 2 input channels, but x (1, 3, 6, 6) has 3"),
    (lambda x, w: pyasc.conv2d(x, w, groups=2), "with groups=2 expects 6 input channels"),
    (lambda x, w: pyasc.conv2d(x, w[:3], groups=3), "with groups=3 expects 9 input channels"),
    (lambda x, w: pyasc.conv2d(x, np.zeros((5, 3, 8, 3), np.float32)), "larger than the padded 6x6 input"),
    (lambda x, w: pyasc.conv2d(x, w, stride=0), "stride must be >= 1, got (0, 0)"),
    (lambda x, w: pyasc.conv2d(x, w, padding=-1), "padding must be >= 0"),
    (lambda x, w: pyasc.conv2d(x, w, stride=(1, 2, 3)), "stride must be an int or a pair of ints"),
    (lambda x, w: pyasc.conv2d(x, w, stride=2, padding="same"), "padding='same' needs stride 1"),
    (lambda x, w: pyasc.conv2d(x, w, padding="full"), "padding must be an int, a pair, 'valid' or 'same'"),
    (lambda x, w: pyasc.conv2d(x, w, np.zeros(5, np.float32)), "bias must be 1-D with 4 elements (one per output channel of weight (4, 3, 3, 3)), got shape (5,)"),
    (lambda x, w: pyasc.conv2d(x.astype(np.int32), w), "x has dtype int32; convolution takes float16 or float32"),
    (lambda x, w: pyasc.max_pool2d(x, 2, padding=2), "padding (2, 2) must be at most half the kernel (2, 2)"),
    (lambda x, w: pyasc.avg_pool2d(x, 7), "the 7x7 window is larger than the padded 6x6 input"),
    (lambda x, w: pyasc.avg_pool2d(x.astype(np.int32), 2), "avg_pool2d: x has dtype int32; it takes float16"),
    (lambda x, w: pyasc.max_pool2d(x.astype(np.int8), 2), "max_pool2d: x has dtype int8; it takes float16"),
    (lambda x, w: pyasc.batch_norm(x, np.zeros(2, np.float32), np.ones(3, np.float32)),
     "mean must be 1-D with one value per channel (3)"),
]


@pytest.mark.parametrize("call, words", BAD)
def test_bad_arguments_are_clear_errors(call, words):
    x = np.zeros((1, 3, 6, 6), np.float32)
    w = np.zeros((4, 3, 3, 3), np.float32)
    with pytest.raises((ValueError, TypeError)) as info:
        call(x, w)
    assert words in str(info.value)


def bad_groups_kernel(x, w):
    return pyasc.relu(pyasc.conv2d(x, w, groups=2))  # <- error


def test_a_bad_conv_in_a_kernel_is_a_compile_error_at_the_call():
    k = pyasc.kernel(chip="tiny")(bad_groups_kernel)
    with pytest.raises(CompileError) as info:
        k(np.zeros((1, 3, 6, 6), np.float16), np.zeros((4, 3, 3, 3), np.float16))
    err = info.value
    assert "weight (4, 3, 3, 3) with groups=2 expects 6 input channels, but x (1, 3, 6, 6) has 3" in err.reason
    lines, first = inspect.getsourcelines(bad_groups_kernel)
    assert err.lineno == first + next(i for i, s in enumerate(lines) if "<- error" in s)
    assert err.filename == __file__


def conv_loss(x, w):
    return pyasc.sum(pyasc.conv2d(x, w, padding=1))  # <- error


def test_differentiating_a_conv_is_a_located_error_until_it_has_a_backward():
    grad = pyasc.grad(pyasc.kernel(conv_loss, chip="tiny"))
    with pytest.raises(CompileError) as info:
        grad(np.ones((1, 2, 4, 4), np.float32), np.ones((3, 2, 3, 3), np.float32))
    assert "no VJP rule for op 'conv2d'" in info.value.reason
    lines, first = inspect.getsourcelines(conv_loss)
    assert info.value.lineno == first + next(i for i, s in enumerate(lines) if "<- error" in s)
