"""Fuzz regression (InternalCompilerError: internal compiler error in optimiser pass 'fusion' while compiling ker).

shapes=[(1,), (1,)] dtype=float32 opt_level=1 buffer_num=1 chip=tiny
"""
import pyasc


def kern(a0, a1):
    t0 = a1[1:]
    t1 = pyasc.rms_norm(t0)
    t3 = (t1 * 3)
    return t3, t1

SHAPES = [(1,), (1,)]
DTYPE = 'float32'
OPTIONS = dict(opt_level=1, buffer_num=1, chip='tiny')
