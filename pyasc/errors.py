"""User-facing errors.

`CompileError` carries the user's real file, line and column and renders
like a C compiler diagnostic: `path:line:col: error: reason`, the source line,
and a caret run under the offending expression.

`InferError` is raised by op shape/dtype inference, which knows nothing
about source; the frontend catches it and re-raises a located CompileError.
"""
from __future__ import annotations

import linecache
from dataclasses import dataclass


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


class CompileError(Exception):
    """Something in the kernel source that pyasc cannot compile.

    Attributes: `reason`, `filename`, `lineno`, `col_offset`, `end_col_offset`,
    `source_line` (all None when the location is unknown).
    """

    def __init__(self, reason: str, loc: SourceLoc | None = None, source_line: str | None = None):
        self.reason = reason
        self.loc = loc
        self.filename = loc.filename if loc else None
        self.lineno = loc.lineno if loc else None
        self.col_offset = loc.col_offset if loc else None
        self.end_col_offset = loc.end_col_offset if loc else None
        if source_line is None and loc is not None:
            source_line = loc.source_line()
        self.source_line = source_line
        super().__init__(self._render())

    def _render(self) -> str:
        if self.loc is None:
            return f"error: {self.reason}"
        text = f"{self.loc}: error: {self.reason}"
        if self.source_line:
            line = self.source_line
            start = self.col_offset or 0
            if self.loc.end_lineno not in (None, self.loc.lineno) or self.end_col_offset is None:
                end = len(line)
            else:
                end = self.end_col_offset
            width = max(1, end - start)
            text += f"\n    {line}\n    {' ' * start}{'^' * width}"
        return text

    def __reduce__(self):
        return (CompileError, (self.reason, self.loc, self.source_line))
