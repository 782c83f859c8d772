"""Numerically stable softmax over the last axis from numpy-style primitives (max, exp, sum, divide):
the optimiser turns the five ops into one row-reduction kernel.

    PYTHONPATH=. python examples/softmax.py
"""
import numpy as np

import pyasc


@pyasc.kernel
def softmax(x):
    e = pyasc.exp(x - pyasc.max(x, axis=-1, keepdims=True))
    return e / pyasc.sum(e, axis=-1, keepdims=True)


def run(small: bool = False) -> None:
    x = np.random.default_rng(0).standard_normal((16, 64) if small else (512, 1024)).astype(np.float32) * 3
    y, prof = softmax.profile(x)
    np.testing.assert_allclose(y, softmax.py_func(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y.sum(-1), 1.0, rtol=1e-5)
    print(f"softmax {x.shape}: {len(softmax.compile(x).kernels)} device kernel(s), {prof.time_s * 1e6:.2f} us")


if __name__ == "__main__":
    run()
