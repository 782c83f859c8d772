"""`if` on a tensor value becomes an If node: both branches are compiled, the host picks one at run time
from the condition the device computed.

    PYTHONPATH=. python examples/tensor_if.py
"""
import numpy as np

import pyasc


@pyasc.kernel
def clip_or_scale(x, limit):
    if pyasc.max(x) > limit:
        y = pyasc.minimum(x, limit)
    else:
        y = x * 2.0
    return y


def run(small: bool = False) -> None:
    x = np.random.default_rng(0).standard_normal((8, 16) if small else (512, 512)).astype(np.float32)
    for limit in (0.5, 100.0):  # one takes the then-branch, the other the else-branch
        np.testing.assert_allclose(clip_or_scale(x, limit), clip_or_scale.py_func(x, limit), rtol=1e-6)
    art = clip_or_scale.compile(x, 0.5)
    assert "If" in str(art.graph)
    print("tensor if: both branches match numpy")


if __name__ == "__main__":
    run()
