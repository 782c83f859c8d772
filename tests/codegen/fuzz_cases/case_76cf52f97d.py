"""Fuzz regression (InternalCompilerError: internal compiler error in the emulator backend while compiling kernel).

shapes=[(100, 7, 7)] dtype=float32 opt_level=3 buffer_num=1 chip=910b
"""
import pyasc


def kern(a0):
    t0 = pyasc.min(a0, axis=(0, -1), keepdims=False)
    t1 = pyasc.max(a0, axis=-1, keepdims=False)
    t3 = pyasc.minimum(t0, t1)
    t4 = pyasc.abs(t3)
    return t4, t3

SHAPES = [(100, 7, 7)]
DTYPE = 'float32'
OPTIONS = dict(opt_level=3, buffer_num=1, chip='910b')
