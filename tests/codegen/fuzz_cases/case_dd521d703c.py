"""Fuzz regression (InternalCompilerError: internal compiler error in optimiser pass 'fusion' while compiling ker).

shapes=[(33, 64)] dtype=float16 opt_level=2 buffer_num=2 chip=tiny
"""
import pyasc


def kern(a0):
    t1 = (a0.astype('float16') * 2.0).astype('float16')
    t2 = pyasc.sigmoid(t1)
    t3 = (t1 - t2)
    t4 = pyasc.relu(t3)
    t5 = pyasc.relu(t2)
    return t4, t5

SHAPES = [(33, 64)]
DTYPE = 'float16'
OPTIONS = dict(opt_level=2, buffer_num=2, chip='tiny')
