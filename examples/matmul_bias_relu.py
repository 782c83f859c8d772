"""matmul + bias + ReLU: the pattern the optimiser fuses into one cube kernel, bias and ReLU applied on
the way out of L0C (the FixPipe); compare with opt_level=0, which launches one kernel per op.

    PYTHONPATH=. python examples/matmul_bias_relu.py
"""
import numpy as np

import pyasc


def linear_relu(a, b, bias):
    return pyasc.relu(a @ b + bias)


fused = pyasc.kernel(linear_relu)
unfused = pyasc.kernel(linear_relu, opt_level=0)


def run(small: bool = False) -> None:
    rng = np.random.default_rng(0)
    m, k, n = (32, 48, 16) if small else (512, 1024, 512)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    y, prof = fused.profile(a, b, bias)
    y0, prof0 = unfused.profile(a, b, bias)
    np.testing.assert_allclose(y, linear_relu(a, b, bias), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(y0, y, rtol=1e-4, atol=1e-4)
    assert prof.launches < prof0.launches
    print(f"matmul+bias+relu: fused {prof.launches} launch {prof.time_s * 1e6:.2f} us, GM {prof.gm_bytes} B; "
          f"unfused {prof0.launches} launches {prof0.time_s * 1e6:.2f} us, GM {prof0.gm_bytes} B")


if __name__ == "__main__":
    run()
