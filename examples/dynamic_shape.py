"""dynamic=True: compiled once for the rank and dtype; the tiling is computed at launch from the real
sizes, so new row counts do not recompile (see cache_info()).

    PYTHONPATH=. python examples/dynamic_shape.py
"""
import numpy as np

import pyasc


@pyasc.kernel(dynamic=True)
def scale_shift(x, w, b):
    return pyasc.tanh(x * w + b)


def run(small: bool = False) -> None:
    rng = np.random.default_rng(0)
    cols = 32 if small else 1024
    w, b = rng.standard_normal(cols).astype(np.float32), rng.standard_normal(cols).astype(np.float32)
    for rows in ((3, 17, 40) if small else (7, 300, 4096)):
        x = rng.standard_normal((rows, cols)).astype(np.float32)
        np.testing.assert_allclose(scale_shift(x, w, b), scale_shift.py_func(x, w, b), rtol=1e-5, atol=1e-5)
    info = scale_shift.cache_info()
    assert info.misses == 1, info
    print(f"dynamic shapes: 3 row counts, {info.misses} compile, {info.hits} cache hits")


if __name__ == "__main__":
    run()
