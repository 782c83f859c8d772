"""Layer norm written out by hand (mean, variance, rsqrt) and checked against the built-in pyasc.layer_norm.

    PYTHONPATH=. python examples/layer_norm.py
"""
import numpy as np

import pyasc


@pyasc.kernel
def layer_norm(x, w, b):
    mean = pyasc.mean(x, axis=-1, keepdims=True)
    d = x - mean
    var = pyasc.mean(d * d, axis=-1, keepdims=True)
    return d * pyasc.rsqrt(var + 1e-5) * w + b


@pyasc.kernel
def builtin(x, w, b):
    return pyasc.layer_norm(x, w, b, eps=1e-5)


def run(small: bool = False) -> None:
    rng = np.random.default_rng(0)
    rows, cols = (16, 64) if small else (512, 1024)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    w, b = rng.standard_normal(cols).astype(np.float32), rng.standard_normal(cols).astype(np.float32)
    y = layer_norm(x, w, b)
    np.testing.assert_allclose(y, layer_norm.py_func(x, w, b), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(y, builtin(x, w, b), rtol=1e-4, atol=1e-4)
    print(f"layer_norm {x.shape}: matches numpy and pyasc.layer_norm")


if __name__ == "__main__":
    run()
