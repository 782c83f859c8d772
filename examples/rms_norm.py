"""RMS norm (as in LLaMA): x / sqrt(mean(x^2) + eps) * w, in float16 with float32 accumulation.

    PYTHONPATH=. python examples/rms_norm.py
"""
import numpy as np

import pyasc


@pyasc.kernel
def rms_norm(x, w):
    x32 = pyasc.cast(x, pyasc.float32)
    scale = pyasc.rsqrt(pyasc.mean(x32 * x32, axis=-1, keepdims=True) + 1e-6)
    return pyasc.cast(x32 * scale, pyasc.float16) * w


def run(small: bool = False) -> None:
    rng = np.random.default_rng(0)
    rows, cols = (16, 64) if small else (512, 4096)
    x = rng.standard_normal((rows, cols)).astype(np.float16)
    w = rng.standard_normal(cols).astype(np.float16)
    y = rms_norm(x, w)
    assert y.dtype == np.float16
    np.testing.assert_allclose(y.astype(np.float32), rms_norm.py_func(x, w).astype(np.float32), rtol=2e-3, atol=2e-3)
    print(f"rms_norm {x.shape} float16: ok")


if __name__ == "__main__":
    run()
