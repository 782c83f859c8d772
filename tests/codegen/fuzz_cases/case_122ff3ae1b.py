"""Fuzz regression (refused (CompileError): no NPU lowering for `gt`).

shapes=[(16, 8), (16, 8), (16, 8)] dtype=float32 opt_level=3 buffer_num=1 chip=910b
"""
import pyasc


def kern(a0, a1, a2):
    t0 = pyasc.where(a1 > 0.0, a1, a2)
    t1 = pyasc.log_softmax(t0, axis=-1)
    return t1, t0

SHAPES = [(16, 8), (16, 8), (16, 8)]
DTYPE = 'float32'
OPTIONS = dict(opt_level=3, buffer_num=1, chip='910b', dynamic=True)
