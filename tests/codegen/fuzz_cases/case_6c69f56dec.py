"""Fuzz regression (refused (CompileError): no NPU lowering for `max`).

shapes=[(16,), (16,), (16,)] dtype=float32 opt_level=3 buffer_num=1 chip=tiny
"""
import pyasc


def kern(a0, a1, a2):
    t1 = pyasc.log_softmax(a2, axis=-1)
    t3 = pyasc.softmax(t1)
    return t3, t1

SHAPES = [(16,), (16,), (16,)]
DTYPE = 'float32'
OPTIONS = dict(opt_level=3, buffer_num=1, chip='tiny', dynamic=True)
