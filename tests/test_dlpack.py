"""DLPack: any array with __dlpack__ is a kernel input without a copy where possible; a call with a torch
tensor argument returns torch tensors."""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from pyasc.runtime.specialize import to_array


class Exporter:
    """A foreign array that offers DLPack only (no __array__), like many array libraries."""

    def __init__(self, array):
        self._a = array

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


@pyasc.kernel(chip="tiny")
def affine_pair(x, y):
    return x * 2.0 + y, x - y


def test_a_dlpack_only_object_is_read_without_a_copy():
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    arr = to_array("k", "x", Exporter(base))
    assert np.shares_memory(arr, base) and not arr.flags.writeable


def test_a_dlpack_only_object_runs_and_comes_back_as_numpy():
    x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    a, b = affine_pair(Exporter(x), Exporter(x[0]))
    assert type(a) is np.ndarray  # the exporter's module has no from_dlpack: numpy results
    np.testing.assert_allclose(a, x * 2 + x[0], rtol=1e-6)
    np.testing.assert_allclose(b, x - x[0], rtol=1e-6)


def test_torch_tensors_in_torch_tensors_out():
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(4, 6, generator=g), torch.randn(6, generator=g)
    assert to_array("k", "x", x).__array_interface__["data"][0] == x.data_ptr()  # the tensor's own memory
    a, b = affine_pair(x, y)
    assert isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == torch.float32
    torch.testing.assert_close(a, x * 2 + y)
    torch.testing.assert_close(b, x - y)
    out, prof = affine_pair.profile(x, y)
    assert isinstance(out[0], torch.Tensor) and prof.time_s > 0
    assert type(affine_pair(x.numpy(), y.numpy())[0]) is np.ndarray


def test_torch_non_contiguous_and_half_tensors():
    torch = pytest.importorskip("torch")
    x = torch.randn(6, 4).T  # a transposed view: converted with a copy, same values
    y = torch.randn(6)
    torch.testing.assert_close(affine_pair(x, y)[0], x * 2 + y)
    h = torch.randn(4, 6).half()
    out = affine_pair(h, h)[1]
    assert out.dtype == torch.float16 and not out.any()


def test_a_tensor_that_requires_grad_is_refused_with_the_fix():
    torch = pytest.importorskip("torch")
    x = torch.randn(2, 6, requires_grad=True)
    with pytest.raises(TypeError) as e:
        affine_pair(x, torch.randn(6))
    assert str(e.value) == ("affine_pair() argument 'x': could not convert Tensor to a numpy array (RuntimeError: "
                            "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.)")
