"""Fuzz regression (InternalCompilerError: internal compiler error in optimiser pass 'tile' while compiling kerne).

shapes=[(7,)] dtype=float16 opt_level=3 buffer_num=2 chip=tiny
"""
import numpy as np

import pyasc


def kern(a0):
    t1 = np.sort(a0, axis=-1)
    t2 = pyasc.tanh(a0)
    t3 = pyasc.maximum(t1, t2)
    t5 = a0 * 1.0
    t6 = -t5
    return t3, t6

SHAPES = [(7,)]
DTYPE = 'float16'
OPTIONS = dict(opt_level=3, buffer_num=2, chip='tiny')
