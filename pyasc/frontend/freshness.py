"""Whether a function's source file still holds the code Python is running.

`inspect` reads a function's source from its file as it is now; if the file
was edited after the module was imported (even keeping the line count), a
compile would silently build other code than Python runs.

What identifies the source of running code is what the code object itself
records about it: the file lines and columns of every instruction
(`co_positions`), and at those positions the names it loads and stores, the
constants it loads and the operators it applies. Each is compared with the
text at that place in the file's lines as `inspect` returns them:

- every instruction lies within the function's line range;
- a name an instruction uses (a variable, global, attribute, import) is an
  identifier in the text at its position;
- a constant it loads is what the text at its position evaluates to, when
  that text is a plain literal expression (`2.0`, `-1`, `(1, 2)`, `"a" "b"`);
- an arithmetic or comparison operator it applies is in the text.

Nothing is compiled again, so how the compiler chose instructions (a
method call's opcodes, a docstring's indentation, jumps over EXTENDED_ARG)
cannot make a difference. An edit that changes what the function does
changes a name, a constant, an operator or a position, and is caught; an
edit elsewhere in the file that moves no line of the function is not one.
Text the compiler did not write from the source as is (f-strings, whose
positions are approximate, `%`-formatting compiled like them, and asserts,
which pytest rewrites) is skipped.

Without column positions (Python 3.10) the comparison is by line: a name
must be on its instruction's line, a number constant must be what one of
the literal expressions starting on that line evaluates to, and an operator one
of the operators of the expressions starting there (when that line has any).
"""
from __future__ import annotations

import ast
import dis
import importlib.machinery
import os
import re
import types
import unicodedata
from typing import Any, Iterator, Sequence

#: opcodes whose argument is a name the source spells at the instruction's position
_NAME_OPS = frozenset({
    "LOAD_FAST", "STORE_FAST", "DELETE_FAST", "LOAD_DEREF", "STORE_DEREF", "DELETE_DEREF", "LOAD_CLASSDEREF",
    "LOAD_GLOBAL", "STORE_GLOBAL", "DELETE_GLOBAL", "LOAD_NAME", "STORE_NAME", "DELETE_NAME",
    "LOAD_ATTR", "STORE_ATTR", "DELETE_ATTR", "LOAD_METHOD", "IMPORT_NAME", "IMPORT_FROM",
    "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "LOAD_FROM_DICT_OR_GLOBALS", "LOAD_FROM_DICT_OR_DEREF",
    "LOAD_FAST_LOAD_FAST", "STORE_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST", "LOAD_SUPER_ATTR",
})
#: names the compiler uses without the source spelling them there
_IMPLICIT_NAMES = frozenset({"__name__", "__module__", "__qualname__", "__class__", "__classcell__", "__doc__",
                             "__annotations__", "__static_attributes__", "__firstlineno__"})
_OPERATOR_OPS = frozenset({"BINARY_OP", "COMPARE_OP"})
_ZERO_ARG_SUPER = re.compile(r"super\(\s*\)")
_SIMPLE_CONSTANTS = (int, float, complex, str, bytes)  # (bool is an int)
_MAX_POWER = 256


def source_mismatch(fn: types.FunctionType, lines: list[str], first: int, tree: ast.AST) -> str | None:
    """Why the running code of `fn` is not the source `lines` (the file's lines from line `first`, as
    `inspect` found them; `tree` their parse), or None when every position agrees. None too when the
    function's module was loaded by an import hook that rewrites code in ways pyasc cannot see."""
    code = fn.__code__
    if not _plain_source_file(fn, code.co_filename):
        return None
    text = _Text(lines, first)
    skipped = _rewritten_lines(tree)
    by_line = _expressions_by_line(tree)
    handler_names = {n.name for n in ast.walk(tree) if isinstance(n, ast.ExceptHandler) and n.name}
    for inner in _code_objects(code):
        for ins, pos in _positioned(inner):
            line, end_line, col, end_col = pos
            if line is None:
                continue
            if not text.has_line(line) or (end_line is not None and not text.has_line(end_line)):
                return (f"`{inner.co_name}` runs code at line {line if text.has_line(line) else end_line}, outside the "
                        f"lines {first}-{text.last} the file now has for it")
            if any(a <= line <= b for a, b in skipped):
                continue
            if ins.argval in handler_names and ins.opname.startswith(("STORE_", "DELETE_")):
                continue  # `except E as e` ends with `e = None; del e` at the handler's last statement
            why = _disagreement(ins, text, line, end_line, col, end_col)
            if why is None and col is None:
                why = _line_disagreement(ins, by_line.get(line, ()))
            if why is not None:
                return f"line {line}: {why}"
    return None


class _Text:
    """The function's lines, sliced by the UTF-8 byte columns code positions use."""

    def __init__(self, lines: list[str], first: int):
        self.raw = [line.rstrip("\r\n").encode("utf-8") for line in lines]
        self.first = first
        self.last = first + len(lines) - 1

    def has_line(self, line: int) -> bool:
        return self.first <= line <= self.last

    def segment(self, line: int, end_line: int | None, col: int | None, end_col: int | None) -> str:
        if col is None or end_col is None or end_line is None:
            return self.raw[line - self.first].decode("utf-8", errors="replace")
        if end_line == line:
            piece = self.raw[line - self.first][col:end_col]
        else:
            rows = [self.raw[line - self.first][col:]] + self.raw[line - self.first + 1:end_line - self.first]
            piece = b"\n".join(rows + [self.raw[end_line - self.first][:end_col]])
        return piece.decode("utf-8", errors="replace")


def _plain_source_file(fn: types.FunctionType, filename: str) -> bool:
    """Code compiled from the file as it was written: a standard loader, or pytest's assertion rewriter
    (asserts are skipped). A notebook cell or generated code has no file that could have been edited."""
    if not os.path.isfile(filename):
        return False
    loader = fn.__globals__.get("__loader__")
    return (loader is None or isinstance(loader, importlib.machinery.SourceFileLoader)
            or type(loader).__module__ == "_pytest.assertion.rewrite")


def _rewritten_lines(tree: ast.AST) -> list[tuple[int, int]]:
    """Line ranges whose code does not follow the text: f-strings (approximate positions before 3.12),
    `"..." % (...)` (compiled like an f-string, its pieces placed at the arguments) and asserts (rewritten
    by pytest)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.JoinedStr, ast.Assert)) or (
                isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant)
                and isinstance(node.left.value, str)):
            out.append((node.lineno, node.end_lineno or node.lineno))
    return out


def _code_objects(code: types.CodeType) -> Iterator[types.CodeType]:
    """The function's code and every code object nested in it (comprehensions, lambdas, inner functions)."""
    stack = [code]
    while stack:
        c = stack.pop()
        yield c
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))


def _positioned(code: types.CodeType) -> Iterator[tuple[dis.Instruction, tuple]]:
    """(instruction, (line, end line, column, end column)) for each instruction; columns None before 3.11."""
    positions = getattr(code, "co_positions", None)
    if positions is not None:
        units = list(positions())  # one per 2-byte code unit, the caches and EXTENDED_ARG prefixes included
        for ins in dis.get_instructions(code):
            if ins.opname not in ("CACHE", "EXTENDED_ARG"):
                yield ins, units[ins.offset // 2]
        return
    line = None
    for ins in dis.get_instructions(code):
        line = ins.starts_line or line
        yield ins, (line, line, None, None)


def _disagreement(ins: dis.Instruction, text: _Text, line: int, end_line: int | None, col: int | None,
                  end_col: int | None) -> str | None:
    if ins.opname in _NAME_OPS:
        # a superinstruction (3.13's LOAD_FAST_LOAD_FAST) sits at its first name: the second is elsewhere
        names = ins.argval[:1] if isinstance(ins.argval, tuple) else (ins.argval,)
        segment = None
        for name in names:
            if not isinstance(name, str) or name in _IMPLICIT_NAMES or \
                    not all(part.isidentifier() for part in name.split(".")):
                continue  # a name of the compiler's own (`.0`, pytest's `@py_assert1`, an implicit dunder)
            segment = segment if segment is not None else _normalised(text.segment(line, end_line, col, end_col))
            if _ZERO_ARG_SUPER.fullmatch(segment.strip()):
                continue  # 3.12+: `super()` loads the method's first argument at its own position
            if not any(_spells(segment, part) for part in _spellings(name)):
                return f"the running code uses `{name}` where the file has `{_short(segment)}`"
        return None
    if col is None or end_col is None:
        return None  # constants and operators need the columns
    if ins.opname == "LOAD_CONST" and _simple(ins.argval):
        segment = text.segment(line, end_line, col, end_col)
        found = _literal(segment)
        if found is not _UNKNOWN and not _same_constant(found, ins.argval):
            return f"the running code has the constant {ins.argval!r} where the file has `{_short(segment)}`"
        return None
    if ins.opname in _OPERATOR_OPS and isinstance(ins.argrepr, str):
        symbol = ins.argrepr.strip()
        if re.fullmatch(r"[-+*/%@&|^<>=!]+", symbol) and symbol not in text.segment(line, end_line, col, end_col):
            return f"the running code applies `{symbol}` where the file has " \
                   f"`{_short(text.segment(line, end_line, col, end_col))}`"
    return None


def _expressions_by_line(tree: ast.AST) -> dict[int, list[ast.AST]]:
    out: dict[int, list[ast.AST]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.expr, ast.AugAssign)):
            out.setdefault(node.lineno, []).append(node)
    return out


#: Python 3.10's operator opcodes -> the AST operator they compile
_OPCODE_OPERATORS = {
    "ADD": ast.Add, "SUBTRACT": ast.Sub, "MULTIPLY": ast.Mult, "TRUE_DIVIDE": ast.Div, "FLOOR_DIVIDE": ast.FloorDiv,
    "MODULO": ast.Mod, "POWER": ast.Pow, "MATRIX_MULTIPLY": ast.MatMult, "LSHIFT": ast.LShift,
    "RSHIFT": ast.RShift, "AND": ast.BitAnd, "OR": ast.BitOr, "XOR": ast.BitXor,
}


def _line_disagreement(ins: dis.Instruction, nodes: Sequence[ast.AST]) -> str | None:
    """The by-line comparison without columns (see the module docstring)."""
    if ins.opname == "LOAD_CONST" and isinstance(ins.argval, (int, float, complex)) and not isinstance(ins.argval, bool):
        # (numbers only: a function's qualified name is a string constant the source does not spell)
        found = [v for v in (_fold(n) for n in nodes) if v is not _UNKNOWN]
        if found and not any(_same_constant(v, ins.argval) for v in found):
            return f"the running code has the constant {ins.argval!r}, which no literal on that line is"
        return None
    kind = ins.opname.split("_", 1)
    if kind[0] in ("BINARY", "INPLACE") and kind[1] in _OPCODE_OPERATORS:
        ops_here = [type(n.op) for n in nodes if isinstance(n, (ast.BinOp, ast.AugAssign))]
        if ops_here and _OPCODE_OPERATORS[kind[1]] not in ops_here:
            return f"the running code applies {kind[1].lower()}, which no operator on that line is"
    return None


def _normalised(segment: str) -> str:
    return unicodedata.normalize("NFKC", segment)  # identifiers are NFKC-normalised by the parser


def _spellings(name: str) -> list[str]:
    """How the source may spell a name: itself, each part of a dotted import, or a private name before
    mangling (`_Cls__x` is written `__x`)."""
    out = name.split(".")
    m = re.fullmatch(r"_[A-Za-z0-9_]*?(__\w+)", name)
    if m:
        out.append(m.group(1))
    return out


def _spells(segment: str, name: str) -> bool:
    return re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", segment) is not None


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _simple(value: Any) -> bool:
    if isinstance(value, (tuple, frozenset)):
        return all(_simple(v) for v in value)
    return isinstance(value, _SIMPLE_CONSTANTS)


_UNKNOWN = object()


def _literal(segment: str) -> Any:
    """What a plain literal expression evaluates to (the folding Python does: signs, arithmetic on numbers,
    joined strings, tuples and lists and sets of literals), else _UNKNOWN."""
    try:
        node = ast.parse(segment.strip(), mode="eval").body
    except (SyntaxError, ValueError):
        return _UNKNOWN
    return _fold(node)


def _fold(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, _SIMPLE_CONSTANTS) else _UNKNOWN
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = [_fold(e) for e in node.elts]
        if any(i is _UNKNOWN for i in items):
            return _UNKNOWN
        return frozenset(items) if isinstance(node, ast.Set) else tuple(items)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Invert)):
        v = _fold(node.operand)
        if not isinstance(v, (int, float, complex)) or (isinstance(node.op, ast.Invert) and not isinstance(v, int)):
            return _UNKNOWN
        return -v if isinstance(node.op, ast.USub) else (+v if isinstance(node.op, ast.UAdd) else ~v)
    if isinstance(node, ast.BinOp):
        return _fold_binop(node)
    return _UNKNOWN


_ARITHMETIC = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
               ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
               ast.Pow: lambda a, b: a ** b, ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b,
               ast.BitAnd: lambda a, b: a & b, ast.BitOr: lambda a, b: a | b, ast.BitXor: lambda a, b: a ^ b}


def _fold_binop(node: ast.BinOp) -> Any:
    a, b = _fold(node.left), _fold(node.right)
    op = _ARITHMETIC.get(type(node.op))
    if op is None or a is _UNKNOWN or b is _UNKNOWN:
        return _UNKNOWN
    numbers = (int, float, complex)
    if isinstance(a, numbers) and isinstance(b, numbers):
        if isinstance(node.op, (ast.Pow, ast.LShift)) and (abs(b) > _MAX_POWER or abs(a) > 2 ** 64):
            return _UNKNOWN  # a huge power: never evaluated here (Python does not fold it either)
        try:
            return op(a, b)
        except (ArithmeticError, ValueError, TypeError):
            return _UNKNOWN
    if isinstance(node.op, ast.Add) and type(a) is type(b) and isinstance(a, (str, bytes, tuple)):
        return a + b
    return _UNKNOWN


def _same_constant(found: Any, const: Any) -> bool:
    """Equal and of the same type (a list or set literal is a tuple or frozenset constant; 2 is not 2.0, and
    -0.0 is not 0.0). Another kind of container (a dict's keys) cannot be compared: the same."""
    if isinstance(const, (tuple, frozenset)):
        if not isinstance(found, (tuple, frozenset)):
            return True
        if isinstance(const, frozenset):
            return isinstance(found, frozenset) and found == const
        return len(found) == len(const) and all(_same_constant(f, c) for f, c in zip(found, const))
    if type(found) is not type(const):
        return isinstance(found, (tuple, frozenset))
    if isinstance(const, (float, complex)):
        return repr(found) == repr(const)
    return found == const
