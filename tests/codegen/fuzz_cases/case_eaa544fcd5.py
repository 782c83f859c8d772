"""Fuzz regression (wrong result).

shapes=[(2,)] dtype=float32 opt_level=2 buffer_num=2 chip=tiny
"""
import pyasc


def kern(a0):
    t0 = pyasc.minimum(a0, a0)
    t1 = (t0 * t0)
    t2 = pyasc.log_softmax(t1, axis=-1)
    return t1, t2

SHAPES = [(2,)]
DTYPE = 'float32'
OPTIONS = dict(opt_level=2, buffer_num=2, chip='tiny')
