"""A torch operator schema from a kernel's Python signature.

Tensor parameters become `Tensor`; compile-time parameters (annotated `int`/`float`/`bool`,
`pyasc.constexpr`, or with a number as default) become `int`/`float`/`bool` (`Scalar` when only
`pyasc.constexpr` says so). The number of results is read from the kernel's `return` statements
(a tuple literal of n items: n tensors), because a schema is fixed before any call.
"""
from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass
from typing import Any, Sequence

from ..frontend.source import parse_function
from ..runtime.specialize import Param

_SCALAR_TYPES = {int: "int", float: "float", bool: "bool", "int": "int", "float": "float", "bool": "bool"}


@dataclass(frozen=True)
class SchemaParam:
    name: str
    kind: str              # "Tensor", "int", "float", "bool" or "Scalar"
    default: Any = inspect.Parameter.empty
    mutated: bool = False

    @property
    def is_tensor(self) -> bool:
        return self.kind == "Tensor"

    def text(self, alias: str) -> str:
        kind = f"Tensor({alias}!)" if self.mutated else self.kind
        if self.default is inspect.Parameter.empty:
            return f"{kind} {self.name}"
        return f"{kind} {self.name}={_default_text(self.default)}"


def _default_text(value: Any) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    return repr(value)


def classify(fn: Any, params: Sequence[Param], mutates_args: Sequence[str], qualname: str) -> list[SchemaParam]:
    annotations = {p.name: p.annotation for p in inspect.signature(fn).parameters.values()}
    out = []
    names = {p.name for p in params}
    for m in mutates_args:
        if m not in names:
            raise ValueError(f"pyasc.torch.custom_op({qualname!r}): mutates_args names {m!r}, which is not a "
                             f"parameter of {fn.__qualname__}({', '.join(p.name for p in params)})")
    for p in params:
        ann = annotations.get(p.name, inspect.Parameter.empty)
        kind = _SCALAR_TYPES.get(ann)
        if kind is None and p.default is not inspect.Parameter.empty and isinstance(p.default, (bool, int, float)):
            kind = _SCALAR_TYPES[type(p.default)]
        if kind is None and p.constexpr:
            kind = "Scalar"
        if kind is None:
            if p.default is not inspect.Parameter.empty:
                raise TypeError(f"pyasc.torch.custom_op({qualname!r}): parameter {p.name!r} has default "
                                f"{p.default!r}; a torch op takes tensors and int/float/bool values")
            kind = "Tensor"
        if p.name in mutates_args and kind != "Tensor":
            raise ValueError(f"pyasc.torch.custom_op({qualname!r}): mutates_args names {p.name!r}, which is a "
                             f"compile-time {kind}, not a tensor")
        out.append(SchemaParam(p.name, kind, p.default, p.name in mutates_args))
    return out


def count_results(fn: Any, qualname: str) -> int:
    """How many tensors the kernel returns: every `return` must agree (a tuple literal of n, or one value)."""
    tree = parse_function(fn).tree
    counts = set()
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue  # a nested helper's returns are not the kernel's
        if isinstance(node, ast.Return):
            counts.add(len(node.value.elts) if isinstance(node.value, (ast.Tuple, ast.List)) else 1)
        stack.extend(ast.iter_child_nodes(node))
    if len(counts) != 1:
        what = "has no return statement" if not counts else f"returns {sorted(counts)} results on different paths"
        raise TypeError(f"pyasc.torch.custom_op({qualname!r}): kernel {fn.__qualname__} {what}; pass "
                        "results=N (the number of tensors it returns)")
    return counts.pop()


def schema_text(params: Sequence[SchemaParam], results: int) -> str:
    args = ", ".join(p.text(chr(ord("a") + i)) for i, p in enumerate(params))
    if results == 0:
        ret = "()"
    elif results == 1:
        ret = "Tensor"
    else:
        ret = "(" + ", ".join(["Tensor"] * results) + ")"
    return f"({args}) -> {ret}"
