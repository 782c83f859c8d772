"""Compile-time Python in a kernel: lambdas, map/filter/sorted, math.* and numpy functions.

A `lambda` evaluates to a `KernelLambda`: calling it (from the kernel, from
`map`, or from Python itself as `sorted`'s key) evaluates its body in the
scope it was written in, with the parameters bound, so a lambda mapped over
a list of tensors is inlined once per element. `math.*` functions and
numpy functions that are not pyasc ops run at compile time on compile-time
values; given a tensor, a numpy function that is not a pyasc op is reported
at the user's call with the pyasc names closest to it — its own (Python)
source is never inlined.
"""
from __future__ import annotations

import ast
import dataclasses
import inspect
import types
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import ops
from ..errors import CompileError
from . import aliasing, near
from .scope import Scope, assigned_names
from .values import contains_tensor, is_tensor


@dataclass(eq=False)
class KernelLambda:
    """A lambda written in a kernel: its AST, the builder whose scope it reads, its signature."""

    node: ast.Lambda
    builder: Any
    signature: inspect.Signature

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # called by Python itself (a `sorted` key, ...) while the kernel is compiled
        return call_lambda(self.builder, self, list(args), kwargs, self.node)


@dataclass(eq=False)
class KernelDef:
    """A `def` written inside a kernel: its AST, the builder whose scope it closes over, its signature.
    Calling it inlines its body, reading the enclosing function's variables as they are at the call (as a
    Python closure reads its cells)."""

    node: ast.FunctionDef
    builder: Any
    signature: inspect.Signature

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # called by Python itself (a `sorted` key, `map`) while the kernel is compiled
        return call_def(self.builder, self, list(args), kwargs, self.node)


class NestedScope(Scope):
    """The scope of a nested def: its own locals, then the enclosing function's (live) scope."""

    def __init__(self, enclosing: Scope, local_names: set[str]):
        self.fn = enclosing.fn
        self.local_names = set(local_names)
        self.locals: dict[str, Any] = {}
        self._versions: dict[str, int] = {}
        self.closure, self.empty_cells, self.globals = enclosing.closure, enclosing.empty_cells, enclosing.globals
        self.enclosing = enclosing

    def lookup(self, name: str) -> tuple[str, Any]:
        if name in self.local_names:
            return super().lookup(name)
        return self.enclosing.lookup(name)


def make_def(b: Any, node: ast.FunctionDef) -> KernelDef:
    if node.decorator_list:
        raise b.error(f"a decorated nested function (`{node.name}`) is not supported in a kernel; define it without "
                      "decorators, or at module level", node.decorator_list[0])
    return KernelDef(node, b, _signature(b, node.args))


def call_def(caller: Any, kd: KernelDef, args: list[Any], kwargs: dict[str, Any], at: ast.AST) -> Any:
    """Inline the nested function's body with its parameters bound, in a scope that reads the enclosing one."""
    try:
        bound = kd.signature.bind(*args, **kwargs)
    except TypeError as e:
        raise caller.error(f"{kd.node.name}(): {e}", at) from None
    bound.apply_defaults()
    if kd.node in caller.state.lambdas_running:
        raise caller.error(f"recursive call to the nested function `{kd.node.name}`: it is inlined at compile time, "
                           "so it cannot call itself", at)
    parsed = dataclasses.replace(kd.builder.parsed, tree=kd.node)
    scope = NestedScope(kd.builder.scope, assigned_names(kd.node))
    for name, value in bound.arguments.items():
        scope.bind(name, value)
    helper = caller.inline_builder(parsed, scope)
    caller.state.lambdas_running.append(kd.node)
    try:
        helper.run_body()
    finally:
        caller.state.lambdas_running.pop()
    return helper.return_value


def _signature(b: Any, a: ast.arguments) -> inspect.Signature:
    """A signature from an AST's arguments, the defaults evaluated now (where the def or lambda is)."""
    params: list[inspect.Parameter] = []
    positional = [*a.posonlyargs, *a.args]
    defaults = [b.eval(d) for d in a.defaults]
    first_default = len(positional) - len(defaults)
    for i, arg in enumerate(positional):
        kind = inspect.Parameter.POSITIONAL_ONLY if i < len(a.posonlyargs) else inspect.Parameter.POSITIONAL_OR_KEYWORD
        default = defaults[i - first_default] if i >= first_default else inspect.Parameter.empty
        params.append(inspect.Parameter(arg.arg, kind, default=default))
    if a.vararg:
        params.append(inspect.Parameter(a.vararg.arg, inspect.Parameter.VAR_POSITIONAL))
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        default = b.eval(d) if d is not None else inspect.Parameter.empty
        params.append(inspect.Parameter(arg.arg, inspect.Parameter.KEYWORD_ONLY, default=default))
    if a.kwarg:
        params.append(inspect.Parameter(a.kwarg.arg, inspect.Parameter.VAR_KEYWORD))
    return inspect.Signature(params)


def make_lambda(b: Any, node: ast.Lambda) -> KernelLambda:
    return KernelLambda(node, b, _signature(b, node.args))


def call_lambda(caller: Any, lam: KernelLambda, args: list[Any], kwargs: dict[str, Any], at: ast.AST) -> Any:
    """Evaluate the lambda's body with its parameters bound (inlined where it is called)."""
    lb = lam.builder
    try:
        bound = lam.signature.bind(*args, **kwargs)
    except TypeError as e:
        raise caller.error(f"<lambda>(): {e}", at) from None
    bound.apply_defaults()
    if lam.node in caller.state.lambdas_running:
        raise lb.error("a lambda that calls itself cannot be inlined at compile time", lam.node)
    saved, saved_names, saved_ctx = lb.scope.snapshot(), set(lb.scope.local_names), lb.ctx
    lb.ctx = caller.ctx  # nodes go where the call is (an If branch, say)
    caller.state.lambdas_running.append(lam.node)
    try:
        for name, value in bound.arguments.items():
            lb.scope.bind(name, value)
        return lb.eval(lam.node.body)
    finally:
        caller.state.lambdas_running.pop()
        lb.scope.restore(saved)
        lb.scope.local_names = saved_names
        lb.ctx = saved_ctx


# ---- lists -------------------------------------------------------------------------------------------


def check_list_mutation(b: Any, lst: list, what: str, at: ast.AST) -> None:
    """A kernel may change a list it made (`outs.append(t)`, `outs[i] = t`): Python's own list is changed, so
    every name holding it sees it, as in Python. Not a list read from outside the kernel (a global, an
    attribute, a default argument: changing it would outlive the compile), and not inside an `if` on a
    tensor (both branches are built, from the same lists)."""
    entry = b.state.paths.get(id(lst))
    outside = entry is not None and entry[0] is lst
    builder = b
    while builder is not None and not outside:
        fn = builder.scope.fn
        outside = any(d is lst for d in (fn.__defaults__ or ())) or \
            any(d is lst for d in (fn.__kwdefaults__ or {}).values())
        builder = builder.parent
    if outside:
        raise b.error(f"{what} would change in place a list the kernel read from outside it (a global, "
                      "attribute or default argument); build a new list instead, e.g. `items = items + [value]`",
                      at)
    if b.ctx.parent is not None:
        raise b.error(f"{what} would change a list inside an `if` on a tensor, where both branches are built "
                      "from the same lists; build a new list in each branch instead (`items = items + [value]`)",
                      at)


# ---- math and numpy --------------------------------------------------------------------------------


def is_math_function(fn: Any) -> bool:
    return isinstance(fn, types.BuiltinFunctionType) and getattr(fn, "__module__", None) == "math"


def is_numpy_function(fn: Any) -> bool:
    """A function of numpy (np.linalg.svd, np.cumsum, a ufunc); not a dtype or a method of an array."""
    if isinstance(fn, np.ufunc):
        return True
    if isinstance(fn, type):
        return False
    module = getattr(fn, "__module__", None) or ""
    return (module == "numpy" or module.startswith("numpy.")) and callable(fn) and \
        not isinstance(getattr(fn, "__self__", None), np.ndarray)


def numpy_call(b: Any, fn: Any, args: list[Any], kwargs: dict[str, Any], at: ast.AST, name: str) -> Any:
    """A numpy function that is not a pyasc op: at compile time on compile-time values, else an error."""
    if contains_tensor(args) or contains_tensor(list(kwargs.values())):
        module = getattr(fn, "__module__", "") or ""
        qualified = getattr(fn, "__name__", name)
        if module.startswith("numpy.linalg"):
            qualified = "linalg." + qualified
        elif module.startswith("scipy.special") or (isinstance(fn, np.ufunc) and "scipy" in name):
            qualified = "scipy.special." + qualified
        why = near.data_dependent(qualified)
        if why is not None:
            raise b.error(f"`{name}` has no pyasc lowering: {why}", at)
        found = near.near_names(qualified)
        hint = ", ".join(near.spell(n) for n in found) if found else \
            "nothing close (pyasc.ops.numpy_names() lists the numpy functions a kernel compiles)"
        raise b.error(f"`{name}` has no pyasc lowering; supported near it: {hint}", at)
    module = getattr(fn, "__module__", "") or ""
    if module.startswith("numpy.random"):
        raise b.error(f"`{name}` makes random numbers, which a compiled kernel would freeze into constants; "
                      "draw them outside the kernel and pass them as an argument", at)
    return run_now(b, fn, args, kwargs, at, name)


def math_call(b: Any, fn: Any, args: list[Any], kwargs: dict[str, Any], at: ast.AST, name: str) -> Any:
    if contains_tensor(args) or contains_tensor(list(kwargs.values())):
        twin = fn.__name__ if ops.numpy_twin(fn.__name__) else None
        use = f"np.{twin}(x) or pyasc.{ops.numpy_twin(twin)}(x)" if twin else "a pyasc op"
        raise b.error(f"`{name}` works on Python numbers at compile time, not on a tensor; use {use} for "
                      "an elementwise tensor result", at)
    return run_now(b, fn, args, kwargs, at, name)


def run_now(b: Any, fn: Any, args: list[Any], kwargs: dict[str, Any], at: ast.AST, name: str) -> Any:
    try:
        out = fn(*args, **kwargs)
    except CompileError:
        raise
    except Exception as e:
        raise b.error(f"{name}(): {type(e).__name__}: {e}", at) from None
    if isinstance(out, np.ndarray) and out.ndim == 0:
        return out[()]
    return out


def isinstance_of(b: Any, value: Any, classes: Any, at: ast.AST) -> bool:
    """isinstance() as numpy would answer it: a tensor is an ndarray (a numpy scalar for immutable 0-d
    values), asked of a sample of its dtype."""
    if is_tensor(value):
        dtype = np.dtype(value.type.dtype if value.type.dtype != "bool" else np.bool_)
        value = dtype.type(0) if aliasing.is_scalar(b, value) else np.empty(0, dtype)
    try:
        return isinstance(value, classes)
    except TypeError as e:
        raise b.error(f"isinstance(): {e}", at) from None
