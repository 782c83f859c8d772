"""Errors raised at the kernel boundary (user-facing errors live in pyasc.errors)."""
from __future__ import annotations

from types import TracebackType

from ..errors import InternalCompilerError, debug_enabled  # noqa: F401  (re-exported)


def failing_pass(tb: TracebackType | None) -> str | None:
    """Name of the innermost optimiser pass on a traceback's stack (a frame whose `self` is a ge Pass)."""
    from ..ge import Pass

    name = None
    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        if isinstance(owner, Pass):
            name = getattr(owner, "name", type(owner).__name__)
        tb = tb.tb_next
    return name


class ArgumentError(Exception):
    """Marker base of the call-time argument errors below (re-raised without internal frames)."""


class ArgumentTypeError(ArgumentError, TypeError):
    """A kernel argument of a kind or dtype pyasc cannot take."""


class ArgumentValueError(ArgumentError, ValueError):
    """A kernel argument whose shape does not fit the compiled specialisation."""
