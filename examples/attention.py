"""One attention head: softmax(q @ k.T * scale) @ v. Two matmuls on the cube around a row softmax.

    PYTHONPATH=. python examples/attention.py
"""
import numpy as np

import pyasc


@pyasc.kernel
def attention(q, k, v):
    scale = 1.0 / q.shape[-1] ** 0.5  # compile-time: a shape is a constant of the specialisation
    return pyasc.softmax(q @ k.T * scale, axis=-1) @ v


def run(small: bool = False) -> None:
    rng = np.random.default_rng(0)
    t, d = (16, 32) if small else (512, 64)
    q, k, v = (rng.standard_normal((t, d)).astype(np.float32) for _ in range(3))
    out, prof = attention.profile(q, k, v)
    np.testing.assert_allclose(out, attention.py_func(q, k, v), rtol=1e-4, atol=1e-4)
    print(f"attention ({t} tokens, head dim {d}): {prof.launches} launch(es), {prof.time_s * 1e6:.2f} us")
    print(prof.summary())


if __name__ == "__main__":
    run()
