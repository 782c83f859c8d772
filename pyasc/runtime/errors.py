"""Errors raised at the kernel boundary (user-facing errors live in pyasc.errors)."""
from __future__ import annotations

from types import TracebackType

from ..errors import debug_enabled  # noqa: F401  (re-exported: the runtime's switch is the same)


class InternalCompilerError(RuntimeError):
    """The compiler itself failed on a kernel (a pyasc bug, not a user mistake).

    Chained (`__cause__`) to the original exception; `stage` names the
    compiler stage or optimiser pass that failed. With PYASC_DEBUG=1 the
    original exception is raised unwrapped instead.
    """

    def __init__(self, stage: str, kernel: str, original: BaseException):
        self.stage = stage
        self.kernel = kernel
        self.original = original
        super().__init__(
            f"internal compiler error in {stage} while compiling kernel {kernel!r}: "
            f"{type(original).__name__}: {original}\n"
            "This is a bug in pyasc, not in your kernel; please report it with the kernel source. "
            "Set PYASC_DEBUG=1 to get the original exception and its internal stack unwrapped."
        )




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
