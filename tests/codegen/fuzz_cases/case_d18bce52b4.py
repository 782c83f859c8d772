"""Fuzz regression (refused (CompileError): no NPU lowering for `mul`).

shapes=[(33, 16)] dtype=float32 opt_level=3 buffer_num=1 chip=tiny
"""
import pyasc


def kern(a0):
    t0 = pyasc.abs(a0)
    t1 = t0[:-2] * 2.0
    t2 = pyasc.softmax(t1)
    t5 = pyasc.log_softmax(t2, axis=-1)
    t7 = (t5 - 1.0) if t5.shape[-1] < 16 and t5.shape[0] != 3 else pyasc.exp(t5)
    return t0, t7

SHAPES = [(33, 16)]
DTYPE = 'float32'
OPTIONS = dict(opt_level=3, buffer_num=1, chip='tiny', dynamic=True)
