"""Rotary position embedding (RoPE): rotate pairs of channels by a position-dependent angle, with static
slices for the two halves and the cos/sin tables passed in.

    PYTHONPATH=. python examples/rotary_embedding.py
"""
import numpy as np

import pyasc


@pyasc.kernel
def rope(x, cos, sin):
    half = x.shape[-1] // 2  # a compile-time value: shapes are part of the specialisation
    x1 = x[:, :half]
    x2 = x[:, half:]
    return _rotate(x1, x2, cos, sin)


def _rotate(x1, x2, cos, sin):
    # helpers are inlined into the kernel; the result keeps the two halves side by side as two outputs
    return x1 * cos - x2 * sin, x2 * cos + x1 * sin


def tables(tokens: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    inv = 1.0 / (10000 ** (np.arange(0, dim, 2) / dim))
    ang = np.outer(np.arange(tokens), inv)
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


def run(small: bool = False) -> None:
    tokens, dim = (16, 32) if small else (2048, 128)
    x = np.random.default_rng(0).standard_normal((tokens, dim)).astype(np.float32)
    cos, sin = tables(tokens, dim)
    lo, hi = rope(x, cos, sin)
    ref_lo, ref_hi = rope.py_func(x, cos, sin)
    np.testing.assert_allclose(lo, ref_lo, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(hi, ref_hi, rtol=1e-5, atol=1e-5)
    # rotation keeps the norm of every channel pair
    np.testing.assert_allclose(lo ** 2 + hi ** 2, x[:, :dim // 2] ** 2 + x[:, dim // 2:] ** 2, rtol=1e-4, atol=1e-5)
    print(f"rope ({tokens} tokens, dim {dim}): ok")


if __name__ == "__main__":
    run()
