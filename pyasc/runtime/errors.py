"""Errors raised at the kernel boundary (user-facing errors live in pyasc.errors)."""
from __future__ import annotations

from ..errors import InternalCompilerError, debug_enabled  # noqa: F401  (re-exported)


class ArgumentError(Exception):
    """Marker base of the call-time argument errors below (re-raised without internal frames)."""


class ArgumentTypeError(ArgumentError, TypeError):
    """A kernel argument of a kind or dtype pyasc cannot take."""


class ArgumentValueError(ArgumentError, ValueError):
    """A kernel argument whose shape does not fit the compiled specialisation."""
