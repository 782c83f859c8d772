"""The narrow view of the AST walker that the expression helpers use (calls, branches, operators, indexing).

`FunctionBuilder` (builder.py) implements it; the helper modules see only
this protocol, so they do not import the builder that imports them. A helper
that needs a builder of its own (inlining a call) asks for one with
`inline_builder`, and an If branch is built inside `with b.branch(ctx,
scope)` instead of saving and restoring the builder's state by hand.
"""
from __future__ import annotations

import ast
from typing import Any, ContextManager, Protocol, Sequence

from ..errors import CompileError, SourceLoc
from ..ir.graph import Value
from .context import BuildState, GraphContext
from .scope import Scope
from .source import ParsedFunction


class KernelBuilder(Protocol):
    state: BuildState
    parsed: ParsedFunction
    scope: Scope
    ctx: GraphContext                 # the graph nodes go to (the kernel's, or an If branch)
    returned: bool                    # a `return` ran in the block being built
    return_value: Any
    return_node: ast.AST | None

    # -- diagnostics ---------------------------------------------------------
    def error(self, reason: str, at: ast.AST | None) -> CompileError: ...

    def text(self, at: ast.AST) -> str: ...

    def loc(self, at: ast.AST) -> SourceLoc: ...

    # -- emission --------------------------------------------------------------
    def emit(self, op: str, inputs: Sequence[Value], attrs: dict[str, Any], at: ast.AST,
             name: str | None = None) -> list[Value]: ...

    def const(self, value: Any, dtype: str, at: ast.AST) -> Value: ...

    # -- evaluation ------------------------------------------------------------
    def eval(self, node: ast.AST) -> Any: ...

    def exec_block(self, stmts: Sequence[ast.stmt]) -> None: ...

    def iterate(self, v: Any, at: ast.AST) -> list[Any]: ...

    def count_unroll(self, n: int, loop: ast.AST) -> None:
        """Count n more unrolled iterations of `loop` against the kernel's unroll budget."""
        ...

    def truth(self, v: Any, at: ast.AST) -> bool: ...

    def tensor_attribute(self, x: Value, attr: str, at: ast.AST) -> Any: ...

    def binary(self, op: ast.operator, left: Any, right: Any, at: ast.AST,
               operands: tuple[ast.AST, ast.AST]) -> Any: ...

    def bind_name(self, name: str, value: Any) -> None: ...

    def live_after(self) -> set[str]: ...

    def rest_tails(self) -> list[Any] | None: ...

    def run_rest(self, rest: Sequence[Any]) -> None: ...

    # -- nested builds ------------------------------------------------------------
    def inline_builder(self, parsed: ParsedFunction, scope: Scope) -> "KernelBuilder":
        """A builder for a helper's body, emitting into the same graph, inlined into this one."""
        ...

    def run_body(self) -> None: ...

    def branch(self, ctx: GraphContext, scope: dict[str, Any]) -> ContextManager[None]:
        """Build one If branch: nodes go to `ctx`, the scope starts as `scope`, a `return` ends the branch only."""
        ...
