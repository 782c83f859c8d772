"""Fuzz regression (InternalCompilerError: internal compiler error in optimiser pass 'fusion' while compiling ker).

shapes=[(1, 5), (1, 1)] dtype=float16 opt_level=1 buffer_num=1 chip=tiny
"""
import numpy as np
import scipy.special

import pyasc


def kern(a0, a1):
    t0 = np.argsort(a0, axis=0, kind='stable')
    t1 = np.linalg.norm(a0, axis=-1)
    return t0, t1

SHAPES = [(1, 5), (1, 1)]
DTYPE = 'float16'
OPTIONS = dict(opt_level=1, buffer_num=1, chip='tiny', dynamic=True)
