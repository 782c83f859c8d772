"""The AST walker: compiles one function body into the graph being built.

Statements run at compile time in Python order: a compile-time `if` runs
one branch, a `for` over a compile-time range runs its body once per
iteration (unrolling), a helper call runs the helper's body with its own
scope. Every expression evaluates either to a tensor (an `ir.Value`, whose
node was just added to the graph with its inferred type and source
location) or to a compile-time Python value. See values.py for the split.
"""
from __future__ import annotations

import ast
import contextlib
import importlib
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from .. import dtypes, ops
from ..errors import CompileError, InferError, SourceLoc
from ..markers import constexpr
from ..ops.dimvalue import op_launch_checks
from ..ir.graph import Value
from ..tensor_type import Sym
from . import aliasing, bitops, branches, calls, checks, comptime, conditions, dimpred, effects, guards, indexing, \
    masked, objects, pytree, writes
from .context import BuildState, GraphContext
from .scope import BUILTIN, CLOSURE, GLOBAL, Scope, UnassignedFreeVariable, Undefined, walrus_targets
from .source import ParsedFunction
from .unrolling import Unrolled, UnrolledLoops
from .tensors import (
    BINARY_OPS,
    COMPARE_OPS,
    UNARY_OPS,
    check_symbolic_compare,
    fold,
    mark_weak,
    tensor_binary,
)
from .values import (
    Masked,
    TensorMethod,
    contains_tensor,
    is_const_array,
    describe,
    is_tensor,
    normalize_attr,
)

#: statements and expressions pyasc rejects, with what to do instead
UNSUPPORTED: dict[type, str] = {
    ast.Try: "`try` is not supported in a kernel",
    ast.With: "`with` is not supported in a kernel",
    ast.AsyncWith: "`async with` is not supported in a kernel",
    ast.AsyncFor: "`async for` is not supported in a kernel",
    ast.Global: "`global` is not supported in a kernel: globals are read-only compile-time constants",
    ast.Nonlocal: "`nonlocal` is not supported in a kernel: closure variables are read-only compile-time constants",
    ast.Delete: "`del` is not supported in a kernel",
    ast.ClassDef: "class definitions are not supported in a kernel",
    ast.Yield: "`yield` is not supported in a kernel",
    ast.YieldFrom: "`yield from` is not supported in a kernel",
    ast.Await: "`await` is not supported in a kernel",
    ast.SetComp: "set comprehensions are not supported in a kernel",
}
if hasattr(ast, "TryStar"):
    UNSUPPORTED[ast.TryStar] = "`try ... except*` is not supported in a kernel"
if hasattr(ast, "Match"):
    UNSUPPORTED[ast.Match] = "`match` is not supported in a kernel; use `if`/`elif`"

_TENSOR_ATTRS = "shape, dtype, ndim, size, T"


_UNBOUND = object()  # a name a comprehension found unbound


@dataclass(frozen=True)
class Span:
    """A source range that is not a whole AST node (a compound statement's header)."""

    lineno: int
    col_offset: int
    end_lineno: int
    end_col_offset: int


def header(s: ast.stmt) -> ast.AST | Span:
    """The first line of a compound statement, up to its colon: where its errors point."""
    end: ast.AST | None = None
    if isinstance(s, (ast.While, ast.If)):
        end = s.test
    elif isinstance(s, (ast.For, ast.AsyncFor)):
        end = s.iter
    elif isinstance(s, (ast.With, ast.AsyncWith)):
        last = s.items[-1]
        end = last.optional_vars or last.context_expr
    elif hasattr(ast, "Match") and isinstance(s, ast.Match):
        end = s.subject
    if end is not None and end.end_lineno == s.lineno:
        return Span(s.lineno, s.col_offset, s.lineno, end.end_col_offset)
    keyword = {ast.Try: "try", ast.FunctionDef: "def", ast.AsyncFunctionDef: "async def", ast.ClassDef: "class",
               getattr(ast, "TryStar", ast.Try): "try"}
    for kind, word in keyword.items():
        if isinstance(s, kind):
            name = getattr(s, "name", "")
            return Span(s.lineno, s.col_offset, s.lineno, s.col_offset + len(word) + (len(name) + 1 if name else 0))
    if getattr(s, "end_lineno", None) == s.lineno:
        return s
    return Span(s.lineno, s.col_offset, s.lineno, s.col_offset + 1)


def _with_defaults(op_name: str, attrs: dict[str, Any]) -> dict[str, Any]:
    """Fill attributes the caller left out with the defaults of the op's public signature."""
    op = ops.get(op_name)
    if op.api is None:
        return attrs
    out = dict(attrs)
    for p in inspect.signature(op.api).parameters.values():
        if p.name in op.tensor_params or p.name in out or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.default is not inspect.Parameter.empty:
            out[p.name] = normalize_attr(p.default)
    return out


class FunctionBuilder(UnrolledLoops):
    """Compiles the body of one function (the kernel, or an inlined helper) into `ctx`."""

    def __init__(self, state: BuildState, parsed: ParsedFunction, scope: Scope, ctx: GraphContext):
        self.state = state
        self.parsed = parsed
        self.scope = scope
        self.ctx = ctx
        self.returned = False
        self.return_value: Any = None
        self.return_node: ast.AST | None = None
        self._frames: list[list[Any]] = []  # [statements, index being run] of the blocks being run
        self._loops: list[ast.AST] = []  # loops being unrolled (their bodies run again)
        # (frames, loops) below these depths belong outside the If branch being built (see rest_tails)
        self._floor: tuple[int, int] = (0, 0)
        self._unrolled: list[Unrolled] = []  # the loops of `_loops` being unrolled here, with their items
        self._pending: list[Any] = []  # parts of an early return's rest still to run after the one running
        self.parent: FunctionBuilder | None = None  # the builder of the function this one is inlined into

    # ---- diagnostics ---------------------------------------------------------------
    def error(self, reason: str, at: ast.AST | None) -> CompileError:
        return self.parsed.error(reason, at)

    def text(self, at: ast.AST) -> str:
        return self.parsed.text(at)

    def loc(self, at: ast.AST) -> SourceLoc:
        return self.parsed.loc(at)

    # ---- emission ----------------------------------------------------------------------
    def emit(self, op: str, inputs: Sequence[Value], attrs: dict[str, Any], at: ast.AST,
             name: str | None = None) -> list[Value]:
        """Add a node to the current graph; an inference error becomes a CompileError at `at`."""
        given = list(inputs)  # as the kernel names them (outer values, not an If branch's imports of them)
        inputs = [self.ctx.use(v) for v in inputs]
        if not ops.exists(op):
            raise self.error(f"the op {op!r} that `{self.text(at)}` needs is not registered", at)
        attrs = _with_defaults(op, attrs)
        if op == "pow":
            checks.negative_int_power(self, inputs, at)
        try:
            node = self.ctx.graph.add(op, inputs, attrs, self.loc(at), name)
        except InferError as e:
            raise self.error(f"{e} in `{self.text(at)}`", at) from None
        except (TypeError, ValueError) as e:  # an attribute the op's inference cannot use
            raise self.error(f"{op}: {e} in `{self.text(at)}`", at) from None
        aliasing.note_node(self, op, given, node.attrs, node.values, self.text(at))
        for pred, message in op_launch_checks(op, [v.type for v in inputs], node.attrs):
            dimpred.launch_check(self, pred, message, at)  # what only the launch sizes can confirm
        return node.values

    def const(self, value: Any, dtype: str, at: ast.AST) -> Value:
        try:
            return self.ctx.graph.const(value, dtype, self.loc(at))
        except (OverflowError, ValueError, TypeError) as e:
            raise self.error(f"cannot make a {dtype} constant of {value!r}: {e}", at) from None

    # ---- nested builds -------------------------------------------------------------------
    def inline_builder(self, parsed: ParsedFunction, scope: Scope) -> "FunctionBuilder":
        """A builder for a helper's body, emitting into the same graph, inlined into this one."""
        helper = FunctionBuilder(self.state, parsed, scope, self.ctx)
        helper.parent = self
        return helper

    @contextlib.contextmanager
    def branch(self, ctx: GraphContext, scope: dict[str, Any]) -> Iterator[None]:
        """Build one If branch: nodes go to `ctx`, the scope starts as `scope`, a `return` ends the branch only.

        Afterwards the graph, the return state and the scope are what they were before.
        """
        saved_ctx, saved_return = self.ctx, (self.returned, self.return_value, self.return_node)
        saved_floor, saved_pending = self._floor, self._pending
        saved_slots = effects.snapshot(self)  # what the kernel changed outside itself, before the branch
        self.ctx = ctx
        self.returned, self.return_value, self.return_node = False, None, None
        self._floor, self._pending = (len(self._frames), len(self._loops)), []
        self.scope.restore(scope)
        try:
            yield
        finally:
            self.ctx = saved_ctx
            self.returned, self.return_value, self.return_node = saved_return
            self._floor, self._pending = saved_floor, saved_pending
            self.scope.restore(scope)
            effects.restore(self, saved_slots)

    def rest_tails(self) -> list[Any] | None:
        """What runs after the statement being run, up to the end of the function (or of the If branch being
        built), innermost first: the tail of each enclosing block, and for a loop being unrolled its remaining
        iterations and its `else`. None inside a loop that is not unrolled (a Loop node's body)."""
        frames_floor, loops_floor = self._floor
        unrolled = [u for u in self._unrolled if u.loop_depth > loops_floor]
        if len(self._loops) - loops_floor != len(unrolled):
            return None
        by_body = {u.body_frame: u for u in unrolled}
        rest: list[Any] = []
        for depth in reversed(range(frames_floor, len(self._frames))):
            stmts, index = self._frames[depth]
            rest.append(stmts[index + 1:])
            u = by_body.get(depth)
            if u is not None:  # the body of an unrolled loop: then its next iterations, then its `else`
                rest.append((u.loop, list(u.items[u.next:])))
                if u.with_else:
                    rest.append(u.loop.orelse)
        return rest + list(self._pending)

    def run_rest(self, rest: Sequence[Any]) -> None:
        """Run `rest_tails()` here (inside the branch of an early return's If), as their own function rest."""
        saved, saved_pending = self._floor, self._pending
        self._floor = (len(self._frames), len(self._loops))
        try:
            for i, part in enumerate(rest):
                self._pending = list(rest[i + 1:])  # (an early return in this part continues with these)
                if isinstance(part, tuple):  # (loop, its remaining items): unrolled again in this branch
                    self._rerun(*part)
                else:
                    self.exec_block(part)
                if self.returned:
                    return
        finally:
            self._floor, self._pending = saved, saved_pending

    # ---- statements --------------------------------------------------------------------
    def run_body(self) -> None:
        self.exec_block(self.parsed.tree.body)

    def exec_block(self, stmts: Sequence[ast.stmt]) -> None:
        frame = [stmts, 0]
        self._frames.append(frame)
        try:
            for i, stmt in enumerate(stmts):
                frame[1] = i
                self.exec_stmt(stmt)
                if self.returned:
                    break
        finally:
            self._frames.pop()

    def live_after(self) -> set[str]:
        """Names the code after the statement being run may read (syntactically)."""
        rest: list[ast.AST] = []
        for stmts, index in self._frames:
            rest.extend(stmts[index + 1:])
        rest.extend(self._loops)
        return branches.names_read(rest)

    def exec_stmt(self, s: ast.stmt) -> None:
        self.state.current = (self.parsed, s)
        handler = getattr(self, "_s_" + type(s).__name__, None)
        if handler is None:
            raise self.error(UNSUPPORTED.get(type(s), f"`{type(s).__name__}` statements are not supported in a "
                                                      "kernel"), header(s))
        handler(s)

    def _s_Pass(self, s: ast.Pass) -> None:
        pass

    def _s_Expr(self, s: ast.Expr) -> None:
        if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
            return  # a docstring or a comment-like string
        self.eval(s.value)

    def _s_Assign(self, s: ast.Assign) -> None:
        value = self.eval(s.value)
        for target in s.targets:
            self.assign(target, value)

    def _s_AnnAssign(self, s: ast.AnnAssign) -> None:
        if s.value is None:
            return  # a bare annotation declares nothing at run time
        value = self.eval(s.value)
        if self._is_constexpr(s.annotation) and contains_tensor(value):
            raise self.error(
                f"`{self.text(s.target)}` is annotated pyasc.constexpr, but its value is {describe(value)}; "
                "a constexpr must be known at compile time",
                s.value,
            )
        self.assign(s.target, value)

    def _is_constexpr(self, annotation: ast.expr) -> bool:
        if not isinstance(annotation, (ast.Name, ast.Attribute)):
            return False
        try:
            return self.eval(annotation) is constexpr
        except CompileError:
            return False

    def _s_AugAssign(self, s: ast.AugAssign) -> None:
        writes.aug_assign(self, s)  # numpy's in-place meaning, views included (writes.py, aliasing.py)

    def _s_Return(self, s: ast.Return) -> None:
        self.return_value = self.eval(s.value) if s.value is not None else None
        self.returned = True
        self.return_node = s

    def _s_If(self, s: ast.If) -> None:
        cond = conditions.test_value(self, s.test)
        # a shape predicate becomes a one-element condition the host evaluates: an early return under it takes
        # the rest of the function like one under a tensor condition (branches.tensor_if_statement)
        cond = dimpred.condition(self, cond, s.test)
        if is_tensor(cond):
            branches.tensor_if_statement(self, s, cond)
            return
        self.exec_block(s.body if self.truth(cond, s.test) else s.orelse)

    def _s_Import(self, s: ast.Import) -> None:
        for alias in s.names:  # a module is a compile-time value, like one imported at module level
            module = self._import(alias.name, s)
            if alias.asname is None:
                self.bind_name(alias.name.split(".")[0], self._import(alias.name.split(".")[0], s))
            else:
                self.bind_name(alias.asname, module)

    def _s_ImportFrom(self, s: ast.ImportFrom) -> None:
        if s.level or s.module is None:
            raise self.error("a relative `import` inside a kernel: import at module level", s)
        module = self._import(s.module, s)
        for alias in s.names:
            if alias.name == "*":
                raise self.error("`from ... import *` inside a kernel: import the names you use", s)
            try:
                value = getattr(module, alias.name)
            except AttributeError:
                value = self._import(f"{s.module}.{alias.name}", s)
            self.bind_name(alias.asname or alias.name, value)

    def _import(self, name: str, s: ast.stmt) -> Any:
        try:
            return importlib.import_module(name)
        except ImportError as e:
            raise self.error(f"ImportError: {e} (the kernel's `import` runs when it compiles)", s) from None

    def _s_Assert(self, s: ast.Assert) -> None:
        cond = self.eval(s.test)
        if contains_tensor(cond):
            raise self.error(
                f"`assert {self.text(s.test)}` tests a tensor, whose value is only known at run time; "
                "assert on compile-time values (shapes, dtypes, constants) only",
                s.test,
            )
        if isinstance(cond, Sym):  # a shape predicate: checked at launch, with this line in the message
            text = f"assertion failed: {self.eval(s.msg)}" if s.msg is not None else \
                f"assertion failed: `{self.text(s.test)}`"
            dimpred.launch_check(self, cond, text, s.test)
            return
        if not self.truth(cond, s.test):
            if s.msg is not None:
                raise self.error(f"assertion failed: {self.eval(s.msg)}", s.test)
            raise self.error(f"assertion failed: `{self.text(s.test)}`", s.test)

    def _s_Raise(self, s: ast.Raise) -> None:
        if s.exc is None:
            raise self.error("a bare `raise` is not supported in a kernel", s)
        exc = s.exc
        if isinstance(exc, ast.Call):
            cls = self.eval(exc.func)
            args = [self.eval(a) for a in exc.args]
        else:
            cls, args = self.eval(exc), []
        if isinstance(cls, BaseException):
            cls, args = type(cls), list(cls.args)
        if not (isinstance(cls, type) and issubclass(cls, BaseException)):
            raise self.error(f"`raise` needs an exception, got {describe(cls)}", exc)
        message = ", ".join(str(a) for a in args)
        raise self.error(f"{cls.__name__}: {message}" if message else cls.__name__, s)

    def _s_FunctionDef(self, s: ast.FunctionDef) -> None:
        self.bind_name(s.name, comptime.make_def(self, s))  # inlined where it is called (comptime.py)

    def _s_AsyncFunctionDef(self, s: ast.AsyncFunctionDef) -> None:
        raise self.error(f"a nested `async def` (`{s.name}`) is not supported in a kernel", header(s))

    # ---- assignment -------------------------------------------------------------------
    def bind_name(self, name: str, value: Any) -> None:
        ssa = self.scope.bind(name, value)
        if is_tensor(value) and value.node.graph is self.ctx.graph and value.node.name is None:
            value.node.name = ssa  # the variable names the node in dumps

    def _check_target(self, target: ast.AST) -> None:
        if isinstance(target, ast.Attribute):
            raise self.error(f"assigning to the attribute `{self.text(target)}` is not supported in a kernel",
                             target)
        raise self.error(f"cannot assign to `{self.text(target)}`", target)

    def assign(self, target: ast.AST, value: Any) -> None:
        if isinstance(target, ast.Name):
            self.bind_name(target.id, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            self._unpack(target, value)
        elif isinstance(target, ast.Subscript):
            writes.assign_subscript(self, target, value)
        elif isinstance(target, ast.Attribute):
            writes.assign_attribute(self, target, value)
        else:
            self._check_target(target)

    def _unpack(self, target: ast.Tuple | ast.List, value: Any) -> None:
        n = len(target.elts)
        starred = [i for i, e in enumerate(target.elts) if isinstance(e, ast.Starred)]
        if is_tensor(value):
            dim = value.type.shape[0] if value.type.ndim else None
            if not isinstance(dim, int) or (not starred and dim != n):
                raise self.error(
                    f"cannot unpack a tensor {value.type} into {n} names; unpacking splits the first axis, "
                    "which must be static and match",
                    target,
                )
            items = [self._item(value, i, target) for i in range(dim)]
        else:
            items = self.iterate(value, target)
        if starred:
            k = starred[0]
            after = n - k - 1
            if len(items) < n - 1:
                raise self.error(f"not enough values to unpack (expected at least {n - 1}, got {len(items)})",
                                 target)
            groups = items[:k] + [list(items[k:len(items) - after])] + items[len(items) - after:]
            for elt, item in zip(target.elts, groups):
                self.assign(elt.value if isinstance(elt, ast.Starred) else elt, item)
            return
        if len(items) != n:
            what = "too many" if len(items) > n else "not enough"
            raise self.error(f"{what} values to unpack (expected {n}, got {len(items)})", target)
        for elt, item in zip(target.elts, items):
            self.assign(elt, item)

    # ---- compile-time helpers -----------------------------------------------------------
    def truth(self, v: Any, at: ast.AST) -> bool:
        if is_tensor(v):
            raise self.error(
                f"the truth value of the tensor `{self.text(at)}` ({v.type}) is only known at run time",
                at,
            )
        if isinstance(v, Sym):
            raise self.error(f"`{self.text(at)}` is the symbolic dim {v}, only known at launch", at)
        try:
            return bool(v)
        except Exception as e:
            raise self.error(f"{type(e).__name__}: {e} in `{self.text(at)}`", at) from None

    def iterate(self, v: Any, at: ast.AST) -> list[Any]:
        """The items of a compile-time iterable (a loop is unrolled over them)."""
        if is_tensor(v):  # numpy iterates over the first axis: its rows, views of the tensor
            n = v.type.shape[0] if v.type.ndim else None
            if v.type.ndim == 0:
                raise self.error(f"iteration over a 0-d tensor `{self.text(at)}` ({v.type}): numpy raises "
                                 "TypeError: iteration over a 0-d array", at)
            if not isinstance(n, int):
                raise self.error(
                    f"iterating over the tensor `{self.text(at)}` ({v.type}) needs its first axis's size at compile "
                    "time (it is unrolled), and it is only known at launch; loop with "
                    "`for i in range(x.shape[0])` instead", at)
            return [self._item(v, i, at) for i in range(n)]
        if isinstance(v, Sym):
            raise self.error(f"cannot iterate over the symbolic dim {v}", at)
        try:
            items = list(v)
        except TypeError:
            raise self.error(f"`{self.text(at)}` is not iterable ({describe(v)})", at) from None
        return guards.read_items(self, v, items, at)

    def load_name(self, name: str, at: ast.AST) -> Any:
        try:
            where, value = self.scope.lookup(name)
        except UnboundLocalError:
            raise self.error(f"local variable `{name}` is used before it is assigned", at) from None
        except UnassignedFreeVariable:
            enclosing = self.scope.fn.__qualname__.rsplit(".<locals>", 1)[0]
            raise self.error(
                f"`{name}` is a variable of the enclosing function `{enclosing}`, which has not assigned it "
                "yet (the kernel was compiled before that assignment ran)", at) from None
        except NameError:
            raise self.error(f"name `{name}` is not defined", at) from None
        if isinstance(value, Undefined):
            raise self.error(f"`{name}` may be undefined here: {value.why}", at)
        if where in (CLOSURE, GLOBAL):
            return guards.read_name(self, name, where, value, at)
        if where == BUILTIN:
            return guards.read_builtin(self, name, value)
        return value

    # ---- expressions ------------------------------------------------------------------------
    def eval(self, node: ast.AST) -> Any:
        self.state.current = (self.parsed, node)
        handler = getattr(self, "_e_" + type(node).__name__, None)
        if handler is None:
            raise self.error(UNSUPPORTED.get(type(node), f"`{type(node).__name__}` expressions are not "
                                                         "supported in a kernel"), node)
        return handler(node)

    def _e_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def _e_Name(self, node: ast.Name) -> Any:
        return self.load_name(node.id, node)

    def _e_Attribute(self, node: ast.Attribute) -> Any:
        base = self.eval(node.value)
        if isinstance(base, Masked):
            if node.attr in calls.TENSOR_METHODS:
                return TensorMethod(base, node.attr)
            if node.attr == "T":
                return base
            raise masked.unsupported(self, base, node, f"`.{node.attr}`")
        if is_tensor(base):
            return self.tensor_attribute(base, node.attr, node)
        attr = objects.mangle(self, node.attr)  # `self.__w` in a class body is `self._Class__w`
        if effects.lookup(self, base, guards.Attr(attr)) is effects.MISSING:
            getter = objects.property_getter(self, base, attr)
            if getter is not None:  # a property: its getter inlined, like a method call
                return calls.inline(self, getter, [base], {}, node, self.text(node))
        return objects.read_attribute(self, base, attr, node)

    def tensor_attribute(self, x: Value, attr: str, node: ast.AST) -> Any:
        t = x.type
        if attr == "shape":
            return tuple(t.shape)
        if attr == "dtype":
            return dtypes.to_numpy(t.dtype)
        if attr == "ndim":
            return t.ndim
        if attr == "size":
            size: Any = 1
            for d in t.shape:
                size = size * d
            return size
        if attr == "T":
            return x if t.ndim < 2 else calls.op_call(self, None, "transpose", [x], {}, node, ".T")
        if attr in calls.TENSOR_METHODS or attr in calls.COMPILE_TIME_METHODS:
            return TensorMethod(x, attr)
        raise self.error(
            f"tensors have no attribute `{attr}` in a kernel; they have {_TENSOR_ATTRS} and the methods "
            f"{', '.join(sorted([*calls.TENSOR_METHODS, *calls.COMPILE_TIME_METHODS]))}",
            node,
        )

    def binary(self, op: ast.operator, left: Any, right: Any, at: ast.AST,
               operands: tuple[ast.AST, ast.AST]) -> Any:
        name, spelling, fn = BINARY_OPS[type(op)]
        if isinstance(left, Masked) or isinstance(right, Masked):  # a boolean-mask selection stays one
            return masked.elementwise(self, [left, right], at, lambda d: self.binary(op, d[0], d[1], at, operands))
        if is_tensor(left) or is_tensor(right):
            if spelling in ("<<", ">>"):
                return bitops.shift(self, left, right, at, operands, spelling == "<<")
            if name == "matmul" and bitops.is_bool_pair(left, right):
                return bitops.bool_matmul(self, left, right, at)
            if not name:
                raise self.error(f"the operator {spelling} is not supported on tensors in `{self.text(at)}`", at)
            if name == "pow" and type(right) is int and right == 2 and is_tensor(left) \
                    and left.type.dtype == "bool" and left not in self.state.weak:
                # numpy's `a ** 2` is np.square(a), whose bool loop gives int8 (np.power would give int64)
                left = self.emit("cast", [left], {"dtype": "int8"}, at)[0]
            return tensor_binary(self, name, left, right, at, operands)
        return fold(self, fn, (left, right), at)

    def _e_BinOp(self, node: ast.BinOp) -> Any:
        spine = []  # `a + b + c + ...` nests to the left: walked in a loop, so 1000s of terms need no recursion
        while isinstance(node, ast.BinOp):
            spine.append(node)
            node = node.left
        value = self.eval(node)
        for op in reversed(spine):
            right = self.eval(op.right)
            self.state.current = (self.parsed, op)
            value = self.binary(op.op, value, right, op, (op.left, op.right))
        return value

    def _e_UnaryOp(self, node: ast.UnaryOp) -> Any:
        v = self.eval(node.operand)
        if isinstance(v, Masked) and not isinstance(node.op, ast.Not):
            return masked.elementwise(self, [v], node, lambda d: self._unary(node, d[0]))
        return self._unary(node, v)

    def _unary(self, node: ast.UnaryOp, v: Any) -> Any:
        if isinstance(node.op, ast.Not):
            if is_tensor(v):
                raise self.error(
                    f"`not` on a tensor needs its truth value at compile time in `{self.text(node)}`; "
                    "use `~x` for an elementwise logical not",
                    node,
                )
            if isinstance(v, Sym):
                return dimpred.negate(v)  # `not` of a shape predicate is one too
            return not self.truth(v, node.operand)
        name, spelling, fn = UNARY_OPS[type(node.op)]
        if is_tensor(v):
            if name is None:  # `+x` is a copy in numpy (np.positive): a new array, not another name for x
                out = self.emit("cast", [v], {"dtype": v.type.dtype}, node)[0]
                return mark_weak(self, out) if v in self.state.weak else out
            out = self.emit(name, [v], {}, node)[0]
            return mark_weak(self, out) if v in self.state.weak else out  # -y of a Python scalar is one
        return fold(self, fn, (v,), node)

    def _e_BoolOp(self, node: ast.BoolOp) -> Any:
        is_and = isinstance(node.op, ast.And)
        result: Any = None
        for expr in node.values:
            v = self.eval(expr)
            if is_tensor(v):
                word, sym = ("and", "&") if is_and else ("or", "|")
                raise self.error(
                    f"`{word}` on a tensor needs its truth value at compile time in `{self.text(node)}`; "
                    f"use `{sym}` for elementwise logic (with parentheses: `(a > 0) {sym} (b > 0)`)",
                    node,
                )
            if isinstance(v, Sym):  # a shape predicate: the rest combine with it symbolically
                rest = [v] + [self.eval(e) for e in node.values[node.values.index(expr) + 1:]]
                if all(dimpred.is_predicate_operand(x) for x in rest):
                    return dimpred.logical(is_and, rest if result is None else [result] + rest)
            if self.truth(v, expr) != is_and:
                return v
            result = v
        return result

    def _e_Compare(self, node: ast.Compare) -> Any:
        left = self.eval(node.left)
        left_at: ast.AST = node.left
        result: Any = True
        for op, comp in zip(node.ops, node.comparators):
            right = self.eval(comp)
            if type(op) in COMPARE_OPS:
                name, spelling, fn = COMPARE_OPS[type(op)]
                if isinstance(left, Masked) or isinstance(right, Masked):
                    if len(node.ops) > 1:
                        raise self.error(f"a chained comparison on tensors is ambiguous in `{self.text(node)}`", node)
                    return masked.elementwise(self, [left, right], node,
                                              lambda d: tensor_binary(self, name, d[0], d[1], node, (left_at, comp)))
                if is_tensor(left) or is_tensor(right):
                    if len(node.ops) > 1:
                        raise self.error(
                            f"a chained comparison on tensors is ambiguous in `{self.text(node)}`; "
                            "write `(a < b) & (b < c)`",
                            node,
                        )
                    return tensor_binary(self, name, left, right, node, (left_at, comp))
                pred = dimpred.compare(spelling, left, right)  # a symbolic dim: a predicate for the launch
                if pred is not None:
                    result = pred if result is True else dimpred.logical(True, [result, pred])
                    if result is False:
                        return result
                    left, left_at = right, comp
                    continue
                check_symbolic_compare(self, spelling, left, right, node)
                result = fold(self, fn, (left, right), node)
                if isinstance(result, np.ndarray):  # compile-time arrays compared: an array of bools, folded
                    if len(node.ops) > 1:
                        raise self.error(f"a chained comparison of arrays is ambiguous in `{self.text(node)}` "
                                         "(numpy raises here); write `(a < b) & (b < c)`", node)
                    return result
            elif isinstance(op, (ast.Is, ast.IsNot)):
                same = left is right or (is_tensor(left) and is_tensor(right) and left == right)
                result = same if isinstance(op, ast.Is) else not same
            else:  # in / not in
                if is_tensor(right):
                    raise self.error(f"`in` on a tensor is not supported in `{self.text(node)}`", node)
                found = fold(self, lambda a, c: a in c, (left, right), node)
                result = found if isinstance(op, ast.In) else not found
            if is_tensor(result) or isinstance(result, Sym) or not self.truth(result, node):
                return result
            left, left_at = right, comp
        return result

    def _e_IfExp(self, node: ast.IfExp) -> Any:
        cond = dimpred.condition(self, conditions.test_value(self, node.test), node.test)
        if is_tensor(cond):
            return branches.tensor_ternary(self, node, cond)
        return self.eval(node.body if self.truth(cond, node.test) else node.orelse)

    def _e_Call(self, node: ast.Call) -> Any:
        return calls.evaluate_call(self, node)

    def _e_Subscript(self, node: ast.Subscript) -> Any:
        base = self.eval(node.value)
        index = self.eval(node.slice)
        if is_tensor(base):
            return self._item(base, index, node)
        if contains_tensor(index):
            if is_const_array(base):  # `TABLE[ids]`, `np.arange(n)[mask]` on a compile-time array: as a constant
                try:
                    table = self.const(base, dtypes.narrow(base.dtype), node)
                except dtypes.DTypeError as e:
                    raise self.error(f"{e} (indexed by a tensor in `{self.text(node)}`)", node) from None
                return self._item(table, index, node)
            raise self.error(f"indexing {describe(base)} with a tensor is not supported in `{self.text(node)}`",
                             node)
        return objects.read_item(self, base, index, node)

    def _item(self, x: Value, index: Any, at: ast.AST) -> Any:
        """`x[index]` read: a view of x, or a numpy scalar when every axis takes an int (no `...`)."""
        out = indexing.subscript(self, x, index, at)
        items = index if isinstance(index, tuple) else (index,)
        if is_tensor(out) and out is not x and out.type.ndim == 0 and not any(i is Ellipsis for i in items):
            aliasing.mark_scalar(self, out)
        return out

    def _e_Lambda(self, node: ast.Lambda) -> Any:
        return comptime.make_lambda(self, node)  # called later: inlined where it is called

    def _e_Slice(self, node: ast.Slice) -> slice:
        parts = [self.eval(p) if p is not None else None for p in (node.lower, node.upper, node.step)]
        return slice(*parts)

    def _elements(self, elts: Sequence[ast.expr]) -> list[Any]:
        out: list[Any] = []
        for e in elts:
            if isinstance(e, ast.Starred):
                out.extend(self.iterate(self.eval(e.value), e.value))
            else:
                out.append(self.eval(e))
        return out

    def _e_Tuple(self, node: ast.Tuple) -> tuple:
        return tuple(self._elements(node.elts))

    def _e_List(self, node: ast.List) -> list:
        return self._elements(node.elts)

    def _e_Set(self, node: ast.Set) -> set:
        items = self._elements(node.elts)
        if contains_tensor(items):
            raise self.error(f"`{self.text(node)}` puts a tensor in a set, whose members Python compares by value "
                             "at once; a kernel's tensors have values only at run time: use a list or tuple", node)
        try:
            return set(items)
        except TypeError as e:
            raise self.error(f"TypeError: {e} in `{self.text(node)}`", node) from None

    def _e_Dict(self, node: ast.Dict) -> dict:
        return pytree.dict_display(self, node)

    def _e_DictComp(self, node: ast.DictComp) -> dict:
        return pytree.dict_comprehension(self, node)

    def _e_Starred(self, node: ast.Starred) -> Any:
        raise self.error(f"`{self.text(node)}` (a starred expression) is not allowed here", node)

    def _e_NamedExpr(self, node: ast.NamedExpr) -> Any:
        value = self.eval(node.value)
        self.bind_name(node.target.id, value)
        return value

    def _e_JoinedStr(self, node: ast.JoinedStr) -> str:
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
                continue
            assert isinstance(v, ast.FormattedValue)
            value = self.eval(v.value)
            if contains_tensor(value):
                raise self.error(
                    f"an f-string cannot show the tensor `{self.text(v.value)}`: its value is only known at "
                    "run time (its .shape and .dtype are known)",
                    v.value,
                )
            conv: Callable[[Any], Any] = {-1: lambda x: x, 115: str, 114: repr, 97: ascii}[v.conversion]
            spec = self.eval(v.format_spec) if v.format_spec is not None else ""
            parts.append(fold(self, lambda a, s: format(conv(a), s), (value, spec), v))
        return "".join(parts)

    def _comprehension(self, node: ast.ListComp | ast.GeneratorExp) -> list[Any]:
        results: list[Any] = []
        saved, saved_names = self.scope.snapshot(), set(self.scope.local_names)

        def loop(k: int) -> None:
            if k == len(node.generators):
                results.append(self.eval(node.elt))
                return
            gen = node.generators[k]
            if gen.is_async:
                raise self.error("async comprehensions are not supported in a kernel", gen.iter)
            items = self.iterate(self.eval(gen.iter), gen.iter)
            self.count_unroll(len(items), gen.iter)
            for item in items:
                self.assign(gen.target, item)
                if all(self.truth(self.eval(c), c) for c in gen.ifs):
                    loop(k + 1)

        try:
            loop(0)
        finally:
            # a walrus in a comprehension binds in the enclosing function (PEP 572): its last value outlives
            # the comprehension's own names
            walrus = {name: self.scope.locals[name] for name in walrus_targets(node)
                      if name in self.scope.locals and self.scope.locals[name] is not saved.get(name, _UNBOUND)}
            self.scope.restore(saved)
            self.scope.local_names = saved_names
            for name, value in walrus.items():
                self.bind_name(name, value)
        return results

    def _e_ListComp(self, node: ast.ListComp) -> list:
        return self._comprehension(node)

    def _e_GeneratorExp(self, node: ast.GeneratorExp) -> tuple:
        return tuple(self._comprehension(node))
