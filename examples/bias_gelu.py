"""Fused bias + GELU: two ops, one device kernel (the optimiser fuses the add into the activation).

    PYTHONPATH=. python examples/bias_gelu.py
"""
import numpy as np

import pyasc


@pyasc.kernel
def bias_gelu(x, b):
    return pyasc.gelu(x + b)


def run(small: bool = False) -> None:
    rng = np.random.default_rng(0)
    rows, cols = (8, 64) if small else (256, 1024)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    b = rng.standard_normal(cols).astype(np.float32)
    y, prof = bias_gelu.profile(x, b)
    np.testing.assert_allclose(y, bias_gelu.py_func(x, b), rtol=1e-5, atol=1e-5)
    print(f"bias_gelu {x.shape}: {prof.launches} launch, {prof.time_s * 1e6:.2f} us simulated")


if __name__ == "__main__":
    run()
