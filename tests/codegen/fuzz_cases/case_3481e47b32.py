"""Fuzz regression (refused (CompileError): no NPU lowering for `max`).

shapes=[(1, 100), (1, 100)] dtype=float32 opt_level=2 buffer_num=2 chip=910b
"""
import pyasc


def kern(a0, a1):
    t0 = pyasc.log_softmax(a1, axis=-1)
    t1 = pyasc.log_softmax(t0, axis=-1)
    return t1, t0

SHAPES = [(1, 100), (1, 100)]
DTYPE = 'float32'
OPTIONS = dict(opt_level=2, buffer_num=2, chip='910b', dynamic=True)
