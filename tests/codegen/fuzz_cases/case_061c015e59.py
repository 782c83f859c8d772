"""Fuzz regression (InternalCompilerError: internal compiler error in the emulator backend while compiling kernel).

shapes=[(100, 100)] dtype=float16 opt_level=2 buffer_num=2 chip=910b
"""
import pyasc


def kern(a0):
    t0 = (a0 @ a0.T)
    t1 = t0.reshape(-1)
    t2 = pyasc.layer_norm(t1)
    t3 = t2
    for _ in range(min(t2.shape[0], 4)):
        t3 = t3 * 0.5 + 1.0
    t4 = pyasc.sum(t2, axis=None, keepdims=False)
    return t4, t1

SHAPES = [(100, 100)]
DTYPE = 'float16'
OPTIONS = dict(opt_level=2, buffer_num=2, chip='910b', dynamic=True)
