"""Fuzz regression (InternalCompilerError: internal compiler error in the emulator backend while compiling kernel).

shapes=[(7, 7, 33), (1,), (1, 7, 33)] dtype=float32 opt_level=2 buffer_num=1 chip=910b
"""
import pyasc


def kern(a0, a1, a2):
    t1 = pyasc.mean(a2, axis=0, keepdims=False)
    t4 = pyasc.floor(a2)
    return t1, t4

SHAPES = [(7, 7, 33), (1,), (1, 7, 33)]
DTYPE = 'float32'
OPTIONS = dict(opt_level=2, buffer_num=1, chip='910b')
