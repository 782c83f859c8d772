"""The symbol table of one function being compiled.

Locals are rebound on every assignment: a name maps to the value of its
latest assignment, so each assignment is a fresh SSA value, and the scope
hands out a versioned name (`y`, `y_1`, `y_2`, ...: identifiers, as the printer wants) for the node that
produced it. Names that are not assigned in the function resolve, as in
Python, to the closure, then the module globals, then the builtins; the
closure and global values read are recorded (the compile cache hashes them).
"""
from __future__ import annotations

import ast
import builtins
import types
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Undefined:
    """A local that has no value on some path to here (why: for the error message)."""

    name: str
    why: str


#: where a name was found
LOCAL, CLOSURE, GLOBAL, BUILTIN = "local", "closure", "global", "builtin"


def assigned_names(fn_tree: ast.FunctionDef) -> set[str]:
    """Names Python treats as locals of the function: parameters and assignment targets."""
    args = fn_tree.args
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    if args.vararg:
        names.add(args.vararg.arg)
    if args.kwarg:
        names.add(args.kwarg.arg)

    stack: list[ast.AST] = list(fn_tree.body)  # a stack, not recursion: an expression may nest 1000s deep
    while stack:
        node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(child.name)
                continue  # a nested body has its own scope
            if isinstance(child, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                names.update(walrus_targets(child))  # the comprehension's own names are its own, these are not
                continue
            if isinstance(child, ast.Lambda):
                continue
            if isinstance(child, ast.Name) and isinstance(child.ctx, (ast.Store, ast.Del)):
                names.add(child.id)
            stack.append(child)
    return names


def walrus_targets(comprehension: ast.AST) -> set[str]:
    """Names a comprehension binds with `:=`, which Python binds in the enclosing function (not inside a lambda)."""
    out = set()
    stack = [comprehension]
    while stack:
        node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.NamedExpr) and isinstance(child.target, ast.Name):
                out.add(child.target.id)
            if not isinstance(child, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                stack.append(child)
    return out


class UnassignedFreeVariable(NameError):
    """A closure variable the enclosing function has not assigned yet."""


class Scope:
    def __init__(self, fn: types.FunctionType, local_names: set[str]):
        self.fn = fn
        self.local_names = set(local_names)
        self.locals: dict[str, Any] = {}
        self._versions: dict[str, int] = {}
        code = fn.__code__
        cells = fn.__closure__ or ()
        self.closure: dict[str, Any] = {}
        self.empty_cells: set[str] = set()
        for name, cell in zip(code.co_freevars, cells):
            try:
                self.closure[name] = cell.cell_contents
            except ValueError:  # an empty cell: the enclosing function has not assigned it yet
                self.empty_cells.add(name)
        self.globals = fn.__globals__

    def bind(self, name: str, value: Any) -> str:
        """Bind a local to a new value; returns the SSA name of this binding."""
        self.local_names.add(name)
        self.locals[name] = value
        version = self._versions.get(name, -1) + 1
        self._versions[name] = version
        return name if version == 0 else f"{name}_{version}"

    def lookup(self, name: str) -> tuple[str, Any]:
        """(where, value) for a name; raises NameError if it is not defined anywhere.

        A local that is not bound yet raises UnboundLocalError; a closure variable the
        enclosing function has not assigned yet raises UnassignedFreeVariable.
        """
        if name in self.local_names:
            if name in self.locals:
                return LOCAL, self.locals[name]
            raise UnboundLocalError(name)
        if name in self.closure:
            return CLOSURE, self.closure[name]
        if name in self.empty_cells:  # Python raises NameError here too, not a lookup of the global
            raise UnassignedFreeVariable(name)
        if name in self.globals:
            return GLOBAL, self.globals[name]
        if hasattr(builtins, name):
            return BUILTIN, getattr(builtins, name)
        raise NameError(name)

    def snapshot(self) -> dict[str, Any]:
        return dict(self.locals)

    def restore(self, saved: dict[str, Any]) -> None:
        self.locals = dict(saved)
