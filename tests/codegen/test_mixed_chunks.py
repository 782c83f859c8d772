"""Mixed launches handing the cube's blocks over in column chunks (templates/mixed.py, sanitizer on).

The candidates are narrowed to one chunk count so the chunked hand-over is what runs: golden against `py_func`
on odd sizes (one row, a last block with fewer chunks, batch 1), with epilogue inputs of every kind a chunk
offsets (a bias row, a full residual tile, one value per row).
"""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from conftest import assert_close
from pyasc.codegen.templates import mixed_chunks
from pyasc.target import get_chip


def chunk_gelu_bias(x, w, b):
    return pyasc.gelu(x @ w + b)


def chunk_residual(x, w, r):
    return pyasc.relu(x @ w) + r * 0.5


def chunk_per_row(x, w, s):
    return pyasc.silu(x @ w) * s


def chunk_batched(x, w, b):
    return pyasc.tanh(x @ w) + b


@pytest.fixture
def only_chunks(monkeypatch):
    def narrow(n: int) -> None:
        monkeypatch.setenv("PYASC_CACHE", "0")   # a cached kernel would not be compiled with the narrowed set
        monkeypatch.setattr(mixed_chunks, "CHUNKS", (n,))
        monkeypatch.setattr(mixed_chunks, "MIN_CHUNK_FRACTALS", 1)
        monkeypatch.setattr(mixed_chunks, "MIN_CHUNK_SHARE_ROWS", 1)
    return narrow


def _vals(rng, shape, dtype="float16"):
    return (rng.standard_normal(shape) * 0.5).astype(dtype)


@pytest.mark.parametrize("chunks,fn,shapes", [
    (2, chunk_gelu_bias, [(1, 24), (24, 150), (150,)]),          # one row; N's last block has fewer chunks
    (2, chunk_gelu_bias, [(70, 24), (24, 150), (150,)]),         # ... and more blocks per group after it
    (4, chunk_residual, [(37, 20), (20, 130), (37, 130)]),
    (2, chunk_per_row, [(45, 17), (17, 70), (45, 1)]),
    (2, chunk_batched, [(1, 19, 33), (33, 100), (100,)]),        # batch 1
])
def test_chunked_hand_over_golden(rng, only_chunks, chunks, fn, shapes):
    only_chunks(chunks)
    args = [_vals(rng, s) for s in shapes]
    k = pyasc.kernel(fn, chip="tiny", sanitize=True)
    out = k(*args)
    dk = k.compile(*args).kernels
    assert [d.template for d in dk] == ["mixed"]
    assert dk[0].tiling.params.chunks == chunks
    assert any(f"in {chunks} column chunks" in n for n in dk[0].notes)
    ref = k.py_func(*(a.astype(np.float32) for a in args))
    assert_close(out, np.asarray(ref).astype(out.dtype), rtol=2e-2, atol=2e-2)


def test_chunk_counts_keep_whole_fractals_and_the_flag_limit():
    chip = get_chip("910b")
    assert mixed_chunks.chunk_counts(128, 64, chip) == [1, 2]     # 4 chunks of 32 columns: narrower than allowed
    assert mixed_chunks.chunk_counts(256, 64, chip) == [1, 2, 4]
    assert mixed_chunks.chunk_counts(256, 32, chip) == [1]        # shares of 32 rows: too short to chunk
    assert mixed_chunks.chunk_counts(48, 64, chip) == [1]         # 48 = 3 fractals: no even split into whole ones


def f32_bias_relu(a, b, bias):
    return np.maximum((a @ b).astype(np.float32) + bias, 0)


@pytest.mark.parametrize("m,k,n", [(1, 16, 20), (7, 31, 33)])
def test_a_float32_bias_and_relu_after_the_cast_need_no_vector_epilogue(rng, m, k, n):
    args = [_vals(rng, (m, k)), _vals(rng, (k, n)), _vals(rng, (n,), "float32")]
    kern = pyasc.kernel(f32_bias_relu, chip="tiny", sanitize=True)
    out = kern(*args)
    assert [d.template for d in kern.compile(*args).kernels] == ["matmul"]   # bias table and FixPipe's ReLU
    ref = kern.py_func(*args)
    assert out.dtype == np.float32
    assert_close(out, ref, rtol=2e-3, atol=2e-3)
