"""One BLAS thread while the emulator multiplies tiles.

A cube tile product is small (a few hundred rows), and a multi-threaded BLAS
spends longer starting and synchronising its threads than multiplying; on a
machine whose cores are all busy its threads wait on each other for hundreds of
milliseconds per product. Launches with a cube part therefore limit BLAS to one
thread while they run, and restore it after (the caller's setting is theirs).
Without `threadpoolctl` installed this does nothing.
"""
from __future__ import annotations

import contextlib
from typing import Any, ContextManager

_controller: Any = None


def single_threaded() -> ContextManager[Any]:
    """A context in which numpy's BLAS runs on one thread."""
    global _controller
    if _controller is None:
        try:
            from threadpoolctl import ThreadpoolController  # optional; looked up once, on the first cube launch
        except ImportError:
            _controller = False
        else:
            _controller = ThreadpoolController()
    if _controller is False:
        return contextlib.nullcontext()
    return _controller.limit(limits=1, user_api="blas")
