"""Whether a function's source file still holds the code Python is running.

`inspect` reads a function's source from its file as it is now; if the file
was edited after the module was imported (even keeping the line count), a
compile would silently build other code than Python runs. The parsed source
is compiled again, the way Python compiled it (inside its class for name
mangling, inside a function binding its free variables, with its
`from __future__` flags, and through pytest's assertion rewriting for test
modules) and the two code objects are compared instruction by instruction.
"""
from __future__ import annotations

import __future__
import ast
import copy
import dis
import functools
import importlib.machinery
import linecache
import operator
import os
import re
import types
from typing import Any, Callable

#: compiler flags of `from __future__` imports (they show in a code object's co_flags)
_FUTURE_FLAGS = functools.reduce(operator.or_, (getattr(__future__, n).compiler_flag
                                                for n in __future__.all_feature_names), 0)


def matches_running_code(fn: types.FunctionType, tree: ast.stmt, filename: str) -> bool:
    """Whether the function's source compiles to the code Python is running (so the file was not edited
    since import). Compiled as it was defined: inside its class (name mangling) and inside a function
    that binds its free variables (closure loads)."""
    node: ast.stmt = tree
    qualparts = fn.__qualname__.split(".")
    if len(qualparts) > 1 and qualparts[-2] != "<locals>":
        node = _make(ast.ClassDef, name=qualparts[-2], bases=[], keywords=[], body=[node], decorator_list=[])
    code = fn.__code__
    freevars = [v for v in code.co_freevars if v != "__class__" or not isinstance(node, ast.ClassDef)]
    if freevars:
        binds = [ast.Assign(targets=[ast.Name(id=v, ctx=ast.Store())], value=ast.Constant(value=None))
                 for v in freevars]
        no_args = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                                defaults=[])
        node = _make(ast.FunctionDef, name="__pyasc_outer__", args=no_args, body=[*binds, node], decorator_list=[],
                     returns=None)
    module = ast.fix_missing_locations(ast.Module(body=[node], type_ignores=[]))
    transform = _import_transform(fn, filename)
    if transform is None:
        return True  # loaded by an import hook that rewrites code in ways pyasc cannot repeat: cannot tell
    try:
        transform(module)
        compiled = compile(module, filename, "exec", flags=code.co_flags & _FUTURE_FLAGS, dont_inherit=True)
    except (SyntaxError, ValueError, TypeError):
        return True  # source Python itself cannot compile standalone: nothing to compare against
    found = _find_code(compiled, code.co_name)
    return found is None or _normalised(found) == _normalised(code)


def _make(cls: type, **fields: Any) -> Any:
    """An AST node, with the list fields newer Pythons added (type_params) empty."""
    for name in getattr(cls, "_fields", ()):
        if name == "type_params":
            fields.setdefault(name, [])
    return cls(**fields)


_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)


def _normalised(code: types.CodeType) -> tuple:
    """What a code object does, comparable between two compiles of the same text: instructions by name
    and argument, jump targets as instruction indices, and a method call's attribute load spelled one
    way (3.11 loads a method of an imported module with LOAD_ATTR, of anything else with LOAD_METHOD,
    and a function compiled alone does not know which names its module imported)."""
    instructions = [i for i in dis.get_instructions(code) if i.opname not in ("CACHE", "EXTENDED_ARG")]
    index = {ins.offset: n for n, ins in enumerate(instructions)}
    body = []
    for ins in instructions:
        op = "LOAD_ATTR" if ins.opname == "LOAD_METHOD" else ins.opname
        if ins.opcode in _JUMPS:
            arg: Any = index.get(ins.argval, ins.argval)
        elif isinstance(ins.argval, types.CodeType):
            arg = _normalised(ins.argval)
        else:
            arg = _const(ins.argval)
        body.append((op, arg))
    consts = tuple(_normalised(c) if isinstance(c, types.CodeType) else _const(c) for c in code.co_consts)
    return (tuple(body), consts, code.co_varnames, code.co_freevars, code.co_argcount, code.co_kwonlyargcount)


_INDENT = re.compile(r"\n[ \t]*")


def _const(c: Any) -> str:
    """A constant as text; a multi-line string without the indentation of its continuation lines, which the
    dedented source of a method (a docstring inside a class) loses."""
    return repr(_INDENT.sub("\n", c)) if isinstance(c, str) else repr(c)


def _import_transform(fn: types.FunctionType, filename: str) -> Callable[[ast.Module], None] | None:
    """What the function's module loader did to the source before compiling it: nothing (the standard
    loaders), pytest's assertion rewriting (test modules), or something unknown (None)."""
    if not os.path.isfile(filename):
        return None  # a notebook cell or generated code: no file that could have been edited
    loader = fn.__globals__.get("__loader__")
    if loader is None or isinstance(loader, importlib.machinery.SourceFileLoader):
        return lambda module: None
    if type(loader).__module__ == "_pytest.assertion.rewrite":
        from _pytest.assertion.rewrite import rewrite_asserts  # only for functions of pytest-rewritten modules

        source = "".join(linecache.getlines(filename)).encode("utf-8")

        def rewrite(module: ast.Module) -> None:
            module.body = copy.deepcopy(module.body)  # the rewrite edits in place; the kernel's tree stays
            rewrite_asserts(module, source, filename, getattr(loader, "config", None))

        return rewrite
    return None


def _find_code(code: types.CodeType, name: str) -> types.CodeType | None:
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            if c.co_name == name:
                return c
            inner = _find_code(c, name)
            if inner is not None:
                return inner
    return None
