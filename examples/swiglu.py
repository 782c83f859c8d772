"""SwiGLU feed-forward gate: silu(x @ w_gate) * (x @ w_up): two matmuls on the cube, then the gate on
the vector cores (the profile lists the launches).

    PYTHONPATH=. python examples/swiglu.py
"""
import numpy as np

import pyasc


@pyasc.kernel
def swiglu(x, w_gate, w_up):
    return pyasc.silu(x @ w_gate) * (x @ w_up)


def run(small: bool = False) -> None:
    rng = np.random.default_rng(0)
    m, k, n = (16, 32, 48) if small else (256, 1024, 2048)
    x = rng.standard_normal((m, k)).astype(np.float32)
    wg = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    wu = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    y, prof = swiglu.profile(x, wg, wu)
    np.testing.assert_allclose(y, swiglu.py_func(x, wg, wu), rtol=1e-4, atol=1e-4)
    print(f"swiglu {m}x{k} -> {n}: {prof.launches} launch(es), {prof.time_s * 1e6:.2f} us")


if __name__ == "__main__":
    run()
