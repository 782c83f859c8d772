"""User-facing errors.

`CompileError` carries the user's real file, line and column and renders
like a C compiler diagnostic: `path:line:col: error: reason`, the source line,
and a caret run under the offending expression.

`InferError` is raised by op shape/dtype inference, which knows nothing
about source; the frontend catches it and re-raises a located CompileError.
"""
from __future__ import annotations

import linecache
import os
from dataclasses import dataclass


def debug_enabled() -> bool:
    """PYASC_DEBUG=1 (or true/yes/on): compiler bugs show their internal stack, unwrapped.

    Read at each use, and parsed here only, so every layer agrees on what switches it on.
    """
    return os.environ.get("PYASC_DEBUG", "").strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class SourceLoc:
    """Where an expression is in the user's source (lines 1-based, columns 0-based)."""

    filename: str
    lineno: int
    col_offset: int
    end_lineno: int | None = None
    end_col_offset: int | None = None

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno}:{self.col_offset + 1}"

    def source_line(self) -> str:
        return linecache.getline(self.filename, self.lineno).rstrip("\n")


class InferError(ValueError):
    """Shape/dtype inference rejected an op; the message names shapes and dtypes."""


@dataclass(frozen=True)
class Note:
    """Context printed under a diagnostic, e.g. the call a helper was inlined from."""

    text: str
    loc: SourceLoc
    source_line: str | None = None


class CompileError(Exception):
    """Something in the kernel source that pyasc cannot compile.

    Attributes: `reason`, `filename`, `lineno`, `col_offset`, `end_col_offset`,
    `source_line` (all None when the location is unknown), and `notes`: the
    calls the failing code was inlined from, innermost first (each rendered as
    `path:line:col: note: ...` with its own source line and caret).
    """

    def __init__(self, reason: str, loc: SourceLoc | None = None, source_line: str | None = None,
                 notes: tuple[Note, ...] = ()):
        self.reason = reason
        self.loc = loc
        self.filename = loc.filename if loc else None
        self.lineno = loc.lineno if loc else None
        self.col_offset = loc.col_offset if loc else None
        self.end_col_offset = loc.end_col_offset if loc else None
        if source_line is None and loc is not None:
            source_line = loc.source_line()
        self.source_line = source_line
        self.notes = tuple(notes)
        super().__init__(self._render())

    def with_note(self, note: Note) -> "CompileError":
        """The same error with `note` added after the existing ones (an outer call site)."""
        return CompileError(self.reason, self.loc, self.source_line, self.notes + (note,))

    def _render(self) -> str:
        if self.loc is None:
            text = f"error: {self.reason}"
        else:
            text = f"{self.loc}: error: {self.reason}" + _quote(self.loc, self.source_line)
        for note in self.notes:
            line = note.source_line if note.source_line is not None else note.loc.source_line()
            text += f"\n{note.loc}: note: {note.text}" + _quote(note.loc, line)
        return text

    def __reduce__(self):
        return (CompileError, (self.reason, self.loc, self.source_line, self.notes))


def _quote(loc: SourceLoc, line: str | None) -> str:
    """The source line and a caret run under `loc` (empty without a line)."""
    if not line:
        return ""
    start = loc.col_offset or 0
    if loc.end_lineno not in (None, loc.lineno) or loc.end_col_offset is None:
        end = len(line)
    else:
        end = loc.end_col_offset
    width = max(1, end - start)
    # keep the line's tabs in the caret's indent so the caret lines up however tabs are shown
    pad = "".join(c if c == "\t" else " " for c in line[:start])
    return f"\n    {line}\n    {pad}{'^' * width}"


class InternalCompilerError(RuntimeError):
    """The compiler itself failed on a kernel (a pyasc bug, not a user mistake).

    Chained (`__cause__`) to the original exception; `stage` names the
    compiler stage or optimiser pass that failed and `loc`, when known, the
    kernel line being compiled. With PYASC_DEBUG=1 the original exception is
    raised unwrapped instead.
    """

    def __init__(self, stage: str, kernel: str, original: BaseException, loc: SourceLoc | None = None):
        self.stage = stage
        self.kernel = kernel
        self.original = original
        self.loc = loc
        where = ""
        if loc is not None:
            where = f"\n  while compiling {loc}: {loc.source_line().strip()}"
        super().__init__(
            f"internal compiler error in {stage} while compiling kernel {kernel!r}: "
            f"{type(original).__name__}: {original}{where}\n"
            "This is a bug in pyasc, not in your kernel; please report it with the kernel source. "
            "Set PYASC_DEBUG=1 to get the original exception and its internal stack unwrapped."
        )

    def __reduce__(self):
        return (InternalCompilerError, (self.stage, self.kernel, self.original, self.loc))
