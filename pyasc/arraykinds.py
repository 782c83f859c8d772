"""ndarray subclasses whose operators mean something other than numpy arrays' (a leaf module, numpy only).

A kernel computes with plain-array semantics, so such a value, passed as an
argument or captured from a global, would silently give a different answer
than the same code run on it in numpy. The runtime rejects the argument with
a TypeError and the frontend rejects the captured value with a located
CompileError, both with `problem(value)` as the reason.
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np


def problem(value: Any) -> str | None:
    """Why pyasc does not take `value`, or None for an array it can take."""
    if isinstance(value, np.matrix):
        return ("a numpy.matrix, whose operators mean something else (`*` is a matrix product, `**` a matrix "
                "power, and every result stays 2-D); pass np.asarray(...) and use `@` for a matrix product")
    ma = sys.modules.get("numpy.ma")  # no masked array can exist before numpy.ma is imported
    if ma is not None and isinstance(value, ma.MaskedArray):
        return ("a masked array (numpy.ma.MaskedArray): a kernel would compute on the masked-out values and drop "
                "the mask; pass `.filled(value)`, or the data and the mask as two arrays and use pyasc.where")
    return None
