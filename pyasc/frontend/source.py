"""Getting a function's source and parsing it with the user's real positions.

`inspect.getsourcelines` gives the function's lines (decorators included)
and the file line they start on. They are dedented before `ast.parse`
(methods and nested functions are indented), then every node's position is
moved back to where it really is in the file: lines shifted by the start
line, columns shifted by the removed indentation and converted from the
UTF-8 byte offsets `ast` reports to character offsets, which is what a
caret under the source line needs.
"""
from __future__ import annotations

import ast
import copy
import functools
import inspect
import linecache
import textwrap
import types
from dataclasses import dataclass, field
from typing import Any

from ..errors import CompileError, SourceLoc
from .freshness import source_mismatch


@dataclass
class ParsedFunction:
    """A function's AST with real file positions, plus what is needed to quote it."""

    fn: types.FunctionType
    tree: ast.FunctionDef  # decorators removed; positions are real file lines / character columns
    source: str  # dedented source text as found (decorators included)
    filename: str
    firstlineno: int  # file line of the first line of `source`
    lines: dict[int, str] = field(default_factory=dict)  # file line number -> original text (no newline)

    def loc(self, node: ast.AST) -> SourceLoc:
        return SourceLoc(
            self.filename,
            node.lineno,
            node.col_offset,
            getattr(node, "end_lineno", None),
            getattr(node, "end_col_offset", None),
        )

    def line(self, lineno: int) -> str | None:
        return self.lines.get(lineno)

    def text(self, node: ast.AST) -> str:
        """The user's own spelling of an expression (ast.unparse when it spans lines)."""
        lineno, end = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        if lineno is not None and lineno == end and lineno in self.lines:
            return self.lines[lineno][node.col_offset:node.end_col_offset]
        try:
            return ast.unparse(node)
        except RecursionError:  # an expression thousands deep: its first line says which one
            return (self.lines.get(lineno, "")[getattr(node, "col_offset", 0):] + " ...").strip()

    def error(self, reason: str, node: ast.AST | None) -> CompileError:
        if node is None or not hasattr(node, "lineno"):
            return CompileError(reason, SourceLoc(self.filename, self.firstlineno, 0), self.line(self.firstlineno))
        return CompileError(reason, self.loc(node), self.line(node.lineno))


def _describe(obj: Any) -> str:
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or type(obj).__name__
    kind = type(obj).__name__
    return f"{kind} {name}" if name != kind else kind


def _function_of(fn: Any) -> types.FunctionType:
    """The plain Python function behind `fn` (a kernel object exposes it as `py_func`)."""
    inner = getattr(fn, "py_func", None)
    if isinstance(inner, (types.FunctionType, types.MethodType)):  # a method kernel's is a bound method
        fn = inner
    if isinstance(fn, types.MethodType):
        fn = fn.__func__
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"pyasc needs a Python function defined with `def`, got {_describe(fn)}")
    return fn


def _lambda_columns(fn: types.FunctionType, line: str, lineno: int) -> tuple[int, int]:
    """Columns of this lambda's `lambda` keyword on its line: the last one before its body's first position, so
    the second of two lambdas on a line is found, not the first."""
    body = [c for ln, end_ln, c, e in fn.__code__.co_positions()
            if ln == lineno and end_ln == lineno and c is not None and e is not None and e > c]
    col = line.rfind("lambda", 0, min(body, default=len(line)))
    if col < 0:
        col = max(line.find("lambda"), 0)
    return col, col + len("lambda")


def _lambda_error(fn: types.FunctionType) -> CompileError:
    filename = fn.__code__.co_filename
    lineno = fn.__code__.co_firstlineno
    line = linecache.getline(filename, lineno).rstrip("\n") or None
    col, end = _lambda_columns(fn, line or "", lineno)
    loc = SourceLoc(filename, lineno, col, lineno, end if line else None)
    return CompileError("a lambda cannot be compiled by pyasc; define the function with `def`", loc, line)


def get_source(fn: Any) -> tuple[str, str, int]:
    """(dedented source, filename, file line of its first line) of a function.

    The source includes the decorators, as `inspect` finds them. Raises
    TypeError for things that are not Python functions (builtins, classes,
    callables) and CompileError for lambdas and for functions whose source
    cannot be found (defined in a REPL, `exec`, or a deleted file).
    """
    fn = _function_of(fn)
    lines, start = _source_lines(fn)
    return textwrap.dedent("".join(lines)), fn.__code__.co_filename, start


def _source_lines(fn: types.FunctionType) -> tuple[list[str], int]:
    if fn.__name__ == "<lambda>":
        raise _lambda_error(fn)
    try:
        # inspect.getsourcelines without its unwrap(): a function made by a decorator with functools.wraps has
        # the `__wrapped__` of the function it wraps, whose source is not what runs
        found, index = inspect.findsource(fn)
        lines, start = inspect.getblock(found[index:]), index + 1
    except (OSError, TypeError) as e:
        code = fn.__code__
        loc = SourceLoc(code.co_filename, code.co_firstlineno, 0)
        raise CompileError(
            f"cannot find the source of `{fn.__qualname__}` (defined in {code.co_filename}): {e}; "
            "pyasc compiles functions defined in a file or a notebook cell",
            loc,
            "",
        ) from None
    return lines, max(start, 1)


def _indent_width(lines: list[str]) -> str:
    """The common leading whitespace textwrap.dedent removes."""
    margin: str | None = None
    for line in lines:
        stripped = line.lstrip()
        if not stripped:
            continue
        indent = line[: len(line) - len(stripped)]
        if margin is None or len(indent) < len(margin):
            margin = indent
    return margin or ""


def _move_to_file_positions(tree: ast.AST, dedented: list[str], first: int, margin: int) -> None:
    """Shift positions from the dedented text to real file lines and character columns."""
    encoded = [line.encode("utf-8") for line in dedented]

    def char_col(lineno: int, byte_col: int) -> int:
        raw = encoded[lineno - 1] if 0 < lineno <= len(encoded) else b""
        return len(raw[:byte_col].decode("utf-8", errors="ignore")) + margin

    for node in ast.walk(tree):
        if not hasattr(node, "lineno") or getattr(node, "lineno", None) is None:
            continue
        node.col_offset = char_col(node.lineno, node.col_offset)
        if getattr(node, "end_lineno", None) is not None and node.end_col_offset is not None:
            node.end_col_offset = char_col(node.end_lineno, node.end_col_offset)
            node.end_lineno += first - 1
        node.lineno += first - 1


def _parse_lambda(fn: types.FunctionType) -> ParsedFunction:
    """A lambda (defined anywhere: a kernel is often `pyasc.kernel(lambda x: ...)`, or calls one defined at module
    level) as a FunctionDef `def <lambda>(args): return body`, found in its file by the line it starts on and the
    column of its `lambda` keyword, with real file positions."""
    code = fn.__code__
    filename, lineno = code.co_filename, code.co_firstlineno
    lines = linecache.getlines(filename)
    if not lines or lineno > len(lines):
        raise CompileError(f"cannot find the source of the lambda defined in {filename}; pyasc compiles functions "
                           "defined in a file or a notebook cell", SourceLoc(filename, lineno, 0), "")
    text = "".join(lines)
    try:
        module = _parsed_file(filename, text)
    except SyntaxError:
        raise _lambda_error(fn) from None
    line = lines[lineno - 1].rstrip("\r\n")
    col, _ = _lambda_columns(fn, line, lineno)
    byte_col = len(line[:col].encode("utf-8"))
    found = [n for n in ast.walk(module) if isinstance(n, ast.Lambda) and n.lineno == lineno]
    exact = [n for n in found if n.col_offset == byte_col]
    if len(exact) != 1 and len(found) != 1:
        raise _lambda_error(fn)
    lam = copy.deepcopy(exact[0] if len(exact) == 1 else found[0])
    ret = ast.copy_location(ast.Return(value=lam.body), lam.body)
    tree = ast.copy_location(ast.FunctionDef(name="<lambda>", args=lam.args, body=[ret], decorator_list=[],
                                             returns=None), lam)
    if "type_params" in ast.FunctionDef._fields:  # Python 3.12+
        tree.type_params = []
    tree.end_lineno, tree.end_col_offset = lam.end_lineno, lam.end_col_offset
    dedented = text.splitlines()
    end = lam.end_lineno or lineno
    stale = source_mismatch(fn, lines[lineno - 1:end], lineno, lam)  # (file positions, before they become columns)
    _move_to_file_positions(tree, dedented, 1, 0)
    if stale is not None:
        raise CompileError(f"{filename} changed after the lambda at line {lineno} was defined: the function Python runs "
                           f"no longer matches the source in the file ({stale}), so pyasc will not compile either; "
                           "re-import the module or restart Python", SourceLoc(filename, lineno, col), line)
    end = tree.end_lineno or lineno
    source = "".join(lines[lineno - 1:end])
    spanned = {n: lines[n - 1].rstrip("\r\n") for n in range(lineno, end + 1)}
    return ParsedFunction(fn, tree, source, filename, lineno, spanned)


@functools.lru_cache(maxsize=32)
def _parsed_file(filename: str, text: str) -> ast.Module:
    return ast.parse(text, filename=filename)


def parse_function(fn: Any) -> ParsedFunction:
    """Parse `fn` into a FunctionDef whose positions are the user's real file positions."""
    fn = _function_of(fn)
    if fn.__name__ == "<lambda>":
        return _parse_lambda(fn)
    original, first = _source_lines(fn)
    try:
        return _parse(fn, original, first)
    except RecursionError:  # ast's own walkers recurse: an expression thousands of operators deep
        raise CompileError(
            f"`{fn.__qualname__}` is nested too deeply to compile (an expression or statement nests past Python's "
            "recursion limit); split it into several statements", SourceLoc(fn.__code__.co_filename, first,
                                                                            len(_indent_width(original))),
            original[0].rstrip("\r\n") if original else None) from None


def _parse(fn: types.FunctionType, original: list[str], first: int) -> ParsedFunction:
    source, filename = textwrap.dedent("".join(original)), fn.__code__.co_filename
    margin = len(_indent_width(original))
    dedented = source.splitlines()
    try:
        module = ast.parse(source, filename=filename)
    except SyntaxError as e:  # source that inspect found but is not a whole statement (rare)
        loc = SourceLoc(filename, (e.lineno or 1) + first - 1, max((e.offset or 1) - 1, 0) + margin)
        raise CompileError(f"cannot parse the source of `{fn.__qualname__}`: {e.msg}", loc) from None
    defs = [n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if not defs:
        raise CompileError(
            f"the source of `{fn.__qualname__}` is not a function definition",
            SourceLoc(filename, first, margin),
        )
    tree = defs[0]
    _move_to_file_positions(tree, dedented, first, margin)
    tree.decorator_list = []  # decorators run in Python, not in the kernel
    stale = source_mismatch(fn, original, first, tree)
    if stale is not None:
        raise CompileError(
            f"{filename} changed after `{fn.__qualname__}` was imported: the function Python runs no longer "
            f"matches the source in the file ({stale}), so pyasc will not compile either; re-import the module "
            "or restart Python", SourceLoc(filename, first, margin), original[0].rstrip("\r\n") if original else None)
    lines = {first + i: line.rstrip("\r\n") for i, line in enumerate(original)}
    return ParsedFunction(fn, tree, source, filename, first, lines)
