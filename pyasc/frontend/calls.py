"""Calls in a kernel: pyasc ops, their numpy twins, tensor methods, builtins, helpers.

What a call may name (anything else is a CompileError naming the callee):
- a pyasc op's public function (tagged `__pyasc_op__`), or the numpy
  function the registry names as its twin (`np.exp`, `np.sum`, ...);
- a dtype (`np.float32(x)` casts a tensor, makes a numpy scalar of a number);
- a few builtins on compile-time values (`len range min max abs int float
  bool tuple list dict zip enumerate reversed isinstance round sum`), `abs`/`len`
  on tensors and `sum` of a list of tensors;
- a NamedTuple class or a dataclass (builds a pytree node), an object whose
  class defines `__call__` (inlined with the object as `self`), read-only
  dict methods (objects.py);
- a Python function with source, or another kernel: inlined with its own scope;
- a method of a tensor (`x.sum(axis=1)`, `x.astype(d)`, ...) or a read-only
  method of a compile-time value (`shape.index(4)`, `"{}".format(n)`).
"""
from __future__ import annotations

import ast
import functools
import inspect
import math
import sys
import types
from typing import Any, Callable, Sequence

import numpy as np

from .. import dtypes, ops
from ..errors import CompileError, Note
from .. import markers, tensor_type
from ..tensor_type import Sym
from . import aliasing, bitops, checks, comptime, dtype_rules, effects, guards, known, loops, masked, \
    npcallables, npfuncs, npkwargs, npwrites, objects, piecewise, pybuiltins, pystdlib, pytree, source
from .protocol import KernelBuilder
from .scope import Scope, assigned_names
from .tensors import as_operand, mark_weak, strong_dtypes
from .values import (
    TensorMethod,
    canonical_dtype,
    contains_tensor,
    describe,
    is_const_array,
    is_dtype_like,
    is_number,
    is_tensor,
    normalize_attr,
)


#: tensor methods -> the op they call, with the tensor as its first operand
TENSOR_METHODS = {
    "astype": "cast",
    "reshape": "reshape",
    "transpose": "transpose",
    "sum": "sum",
    "max": "max",
    "min": "min",
    "mean": "mean",
    "squeeze": "squeeze",
    "flatten": "reshape",
    "ravel": "reshape",
    # numpy methods that are registry ops with the tensor as their first operand
    "var": "var", "std": "std", "clip": "clip", "copy": "copy", "swapaxes": "swapaxes", "repeat": "repeat",
    "dot": "dot", "argmax": "argmax", "argmin": "argmin", "take": "take", "cumsum": "cumsum",
    "prod": "prod", "cumprod": "cumprod", "argsort": "argsort", "round": "round", "trace": "trace",
    "any": "any", "all": "all",
    "item": "reshape",  # of a size-1 tensor: a 0-d tensor, weak in promotion as numpy's Python number
}

#: tensor methods whose answer is a Python value, known at compile time for tensors computed from constants
COMPILE_TIME_METHODS = ("tolist",)

#: numpy functions evaluated at compile time (on compile-time arguments only)
NUMPY_COMPILE_TIME = ("finfo", "iinfo", "dtype", "prod", "result_type", "promote_types", "can_cast",
                      # constructors of constant arrays (pyasc/ops/constructors.py)
                      "arange", "linspace", "eye", "identity", "tri")

#: immutable types whose methods are safe to call at compile time
_IMMUTABLE = (tuple, str, int, float, bool, bytes, np.dtype, np.generic, range)

#: methods of a compile-time numpy array (a global or closure constant) that return a new value
#: instead of changing the array, so they can run at compile time (`W.astype(np.float16)`, `W.sum()`)
ARRAY_METHODS = frozenset(TENSOR_METHODS) | {
    "copy", "item", "tolist", "prod", "any", "all", "clip", "round", "cumsum", "cumprod", "argmax", "argmin",
    "swapaxes", "dot", "std", "var", "take", "repeat", "nonzero", "conj", "view",
}


def bind_op(fn: Any, op_name: str, args: Sequence[Any], kwargs: dict[str, Any]) -> tuple[str, list[Any], dict[str, Any]]:
    """Split a call of an op's public function `fn` (None: the op's own signature) into
    (op name, tensor operands, attributes). Raises TypeError when the arguments do not fit."""
    bind_call = getattr(ops, "bind_call", None)
    if fn is not None and bind_call is not None:
        return bind_call(fn, args, kwargs)
    binder = (getattr(fn, "__pyasc_bind__", None) if fn is not None else None) or ops.get(op_name).bind
    tensors, attrs = binder(args, kwargs)
    return op_name, tensors, attrs


def evaluate_call(b: KernelBuilder, node: ast.Call) -> Any:
    callee = b.eval(node.func)
    args: list[Any] = []
    for a in node.args:
        if isinstance(a, ast.Starred):
            args.extend(b.iterate(b.eval(a.value), a))
        else:
            args.append(b.eval(a))
    kwargs: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            mapping = b.eval(kw.value)
            if not isinstance(mapping, dict):
                raise b.error(f"`**` needs a compile-time dict, got {describe(mapping)}", kw.value)
            kwargs.update(guards.read_values(b, mapping, kw.value))
        else:
            kwargs[kw.arg] = b.eval(kw.value)
    return call_value(b, callee, args, kwargs, node)


def _callee_text(b: KernelBuilder, at: ast.AST) -> str:
    func = at.func if isinstance(at, ast.Call) else at
    return b.text(func)


def call_value(b: KernelBuilder, callee: Any, args: list[Any], kwargs: dict[str, Any], at: ast.Call) -> Any:
    name = _callee_text(b, at)
    if isinstance(callee, TensorMethod):
        return tensor_method(b, callee, args, kwargs, at)
    if isinstance(callee, functools.partial):  # its function with the stored arguments first, as Python calls it
        return call_value(b, callee.func, [*callee.args, *args], {**callee.keywords, **kwargs}, at)
    if isinstance(callee, comptime.KernelLambda):
        return comptime.call_lambda(b, callee, args, kwargs, at)
    if isinstance(callee, comptime.KernelDef):
        return comptime.call_def(b, callee, args, kwargs, at)
    op_name = getattr(callee, "__pyasc_op__", None)
    if isinstance(op_name, str):
        return op_call(b, callee, op_name, args, kwargs, at, name)
    twin = numpy_twin_of(callee, at.func if isinstance(at, ast.Call) else None)
    if twin is not None:
        return op_call(b, twin[1], twin[0], args, kwargs, at, name, numpy_fn=callee)
    if callee is np.piecewise and args and is_tensor(args[0]):  # its functions are compiled calls (piecewise.py)
        return piecewise.piecewise_call(b, args, kwargs, at, name, op_call, call_value)
    if callee is np.apply_along_axis and len(args) > 2 and is_tensor(args[2]):  # unrolled calls (npcallables.py)
        return npcallables.apply_along_axis(b, args, kwargs, at, name, op_call, call_value)
    if isinstance(callee, np.vectorize) and contains_tensor([args, list(kwargs.values())]):
        return npcallables.vectorize_call(b, callee, args, kwargs, at, name, op_call, call_value)
    if callee is np.vectorize:  # the wrapper itself holds the function: made at compile time, called above
        return compile_time_call_allowing_tensors(b, callee, args, kwargs, at, name)
    # (np.add.at among them: a ufunc method with a handler of its own; npwrites: the in-place writers)
    special = npfuncs.handler_for(callee) or npwrites.handler_for(callee)
    if special is not None:
        out = special(b, callee, args, kwargs, at, name, op_call)
        if out is not npfuncs.NUMPY:
            return out
    method = ufunc_method(callee)
    if method is not None:
        lowered = [n for n in ops.numpy_names() if n.startswith(method.split(".")[0] + ".")]
        raise b.error(f"`np.{method}` has no pyasc lowering; lowered methods of np.{method.split('.')[0]}: "
                      f"{', '.join('np.' + n for n in lowered) or 'none'}", at)
    if is_dtype_like(callee) and callee not in (int, float, bool):
        return dtype_call(b, callee, args, kwargs, at, name)
    if _numpy_compile_time(callee):
        return compile_time_call(b, callee, args, kwargs, at, name)
    if comptime.is_numpy_function(callee):  # never inlined from numpy's own source
        return comptime.numpy_call(b, callee, args, kwargs, at, name)
    if comptime.is_math_function(callee):
        twin = ops.numpy_twin(callee.__name__)
        if twin is not None and not kwargs and args and all(
                not is_tensor(a) or a.type.numel == 1 for a in args) and contains_tensor(args):
            # `math.sqrt(total)` of a one-element tensor: numpy code gets a number there; a 0-d tensor here
            return op_call(b, None, twin, [a if not is_tensor(a) or a.type.ndim == 0 else
                                           b.emit("reshape", [a], {"shape": ()}, at)[0] for a in args], {}, at, name)
        return comptime.math_call(b, callee, args, kwargs, at, name)
    handler = BUILTINS.get(callee) if _hashable(callee) else None
    if handler is not None:
        return handler(b, args, kwargs, at, name)
    if _numpy_compile_time(callee):  # before inlining: np.tri, np.linspace, ... are Python functions
        return compile_time_call(b, callee, args, kwargs, at, name)
    inner = getattr(callee, "py_func", None)
    if isinstance(inner, types.FunctionType):
        guards.derive(b.state, callee, "py_func", inner)
        return inline(b, inner, args, kwargs, at, name)
    if isinstance(inner, types.MethodType) and isinstance(inner.__func__, types.FunctionType):  # a method kernel
        guards.derive(b.state, callee, "py_func", inner)
        guards.derive(b.state, inner, "__func__", inner.__func__)
        guards.derive(b.state, inner, "__self__", inner.__self__)
        return inline(b, inner.__func__, [inner.__self__, *args], kwargs, at, name)
    if isinstance(callee, types.FunctionType):
        return inline(b, callee, args, kwargs, at, name)
    if isinstance(callee, (types.BuiltinMethodType, types.MethodWrapperType)) and isinstance(
        getattr(callee, "__self__", None), _IMMUTABLE
    ):
        return compile_time_call(b, callee, args, kwargs, at, name)
    if isinstance(callee, types.BuiltinMethodType) and isinstance(getattr(callee, "__self__", None), np.ndarray):
        if callee.__name__ in ARRAY_METHODS:
            return compile_time_call(b, callee, args, kwargs, at, name)
        raise b.error(
            f"{name}() would change a constant numpy array in place, which a kernel does not do "
            "(constants are read-only; compute a new value instead)", at)
    if objects.is_dict_method(callee):
        return objects.dict_method(b, callee, args, kwargs, at, name)
    if isinstance(callee, types.BuiltinMethodType) and isinstance(getattr(callee, "__self__", None), list):
        if callee.__name__ in ("index", "count", "copy"):
            return compile_time_call_allowing_tensors(b, callee, args, kwargs, at, name)
        comptime.check_list_mutation(b, callee.__self__, f"{name}()", at)
        return compile_time_call_allowing_tensors(b, callee, args, kwargs, at, name)
    if isinstance(callee, types.MethodType) and isinstance(callee.__func__, types.FunctionType):
        guards.derive(b.state, callee, "__func__", callee.__func__)
        return inline(b, callee.__func__, [callee.__self__, *args], kwargs, at, name)
    if pytree.is_record_class(callee):
        obj = pytree.construct(b, callee, args, kwargs, at, name)
        effects.note_made(b, obj)  # the kernel's own object: setting its attributes changes nothing outside
        return obj
    bound = objects.kernel_call_of(callee)
    if bound is not None:  # `obj(x)` whose class's __call__ is a kernel method: that kernel, bound to obj
        guards.derive(b.state, callee, "__call__", bound)
        return call_value(b, bound, args, kwargs, at)
    call = objects.call_method_of(callee)
    if call is not None:  # `layer(x)`: the object's own __call__, with the object as `self`
        guards.derive(b.state, callee, "__call__", call)
        return inline(b, call, [callee, *args], kwargs, at, name)
    if isinstance(callee, type) and issubclass(callee, BaseException):
        raise b.error(f"{name}(...) is only supported in a `raise` statement", at)
    raise b.error(
        f"{name} is not a pyasc op, a supported builtin or a Python function with source "
        f"({describe(callee)})",
        at,
    )


def _hashable(v: Any) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


def numpy_twin_of(callee: Any, func: ast.AST | None) -> tuple[str, Any] | None:
    """(op name, pyasc public function or None) a numpy function means (`np.exp` -> "exp"), or None."""
    method = ufunc_method(callee)
    if method is not None:  # np.add.reduce, np.minimum.outer: registered as "add.reduce", "minimum.outer"
        twin = ops.numpy_twin(method)
        return None if twin is None else (twin, ops.numpy_function(method))
    candidates = []
    if isinstance(func, ast.Attribute):
        candidates.append(func.attr)
    fname = getattr(callee, "__name__", None)
    if isinstance(fname, str):
        candidates.append(fname)
    for cand in candidates:
        for prefix, module in _twin_modules():
            if vars(module).get(cand) is callee:  # (not getattr: numpy's module __getattr__ warns on `np.str`)
                twin = ops.numpy_twin(prefix + cand)
                if twin is not None:
                    return twin, ops.numpy_function(prefix + cand)
    return None


def ufunc_method(callee: Any) -> str | None:
    """"<ufunc>.<method>" for a bound method of a numpy ufunc (`np.add.reduce`), else None."""
    owner = getattr(callee, "__self__", None)
    if isinstance(owner, np.ufunc) and getattr(np, owner.__name__, None) is owner:
        return f"{owner.__name__}.{getattr(callee, '__name__', '')}"
    return None


def _twin_modules() -> list[tuple[str, Any]]:
    """(registry name prefix, module) where a numpy-ecosystem function is looked up: numpy itself, np.linalg,
    np.lib.stride_tricks, and scipy.special when the user's code imported it."""
    out: list[tuple[str, Any]] = [("", np), ("linalg.", np.linalg), ("lib.stride_tricks.", np.lib.stride_tricks)]
    special = sys.modules.get("scipy.special")
    if special is not None:
        out.append(("scipy.special.", special))
    return out


def _numpy_compile_time(callee: Any) -> bool:
    return any(getattr(np, n, None) is callee for n in NUMPY_COMPILE_TIME)


def compile_time_call(b: KernelBuilder, fn: Any, args: list[Any], kwargs: dict[str, Any], at: ast.AST,
                      name: str) -> Any:
    if contains_tensor(args) or contains_tensor(kwargs):
        raise b.error(f"{name}() runs at compile time and cannot take a tensor argument", at)
    dim = next((v for v in [*args, *kwargs.values()] if isinstance(v, Sym)), None)
    if dim is not None:
        raise b.error(f"{name}() runs at compile time and needs sizes known then, but {dim} is a symbolic dim "
                      "(dynamic=True), only known at launch; compile without dynamic=True, or build the values "
                      "from a tensor of that size", at)
    try:
        return fn(*args, **kwargs)
    except CompileError:
        raise  # a kernel lambda called by Python (a sorted key) failed: its own located error
    except Exception as e:
        raise b.error(f"{name}(): {type(e).__name__}: {e}", at) from None


# ---- ops --------------------------------------------------------------------------


def _scalar_result(v: Any) -> Any:
    if isinstance(v, np.ndarray) and v.ndim == 0:
        return v[()]
    return v


def op_call(b: KernelBuilder, fn: Any, op_name: str, args: Sequence[Any], kwargs: dict[str, Any],
            at: ast.AST, display: str, numpy_fn: Any = None) -> Any:
    """A call of an op's public function (or its numpy twin): bind, fold or emit; numpy's `out=`, `dtype=`
    and `initial=` keywords around it (npkwargs.py)."""
    if not ops.exists(op_name):
        raise b.error(f"{display} maps to the op {op_name!r}, which is not registered", at)
    args, kwargs = dtype_rules.python_dtypes(list(args), dict(kwargs))  # astype(int) is int32 (dtype_rules.py)
    args, kwargs, extras = npkwargs.take(b, fn, op_name, list(args), kwargs, at, display)
    if numpy_fn is not None and ops.get(op_name).tensor_params and not contains_tensor(args) \
            and not contains_tensor(list(kwargs.values())) and extras.out is None \
            and any(isinstance(a, (tuple, list)) for a in args):
        try:  # no operand at all is a tensor or an array (`np.sum((1, 2, 3))`): numpy answers now
            return _scalar_result(numpy_fn(*args, **kwargs))
        except Exception as e:
            raise b.error(f"{display}(): {type(e).__name__}: {e}", at) from None
    if masked.any_masked(args):
        result = _masked_call(b, fn, op_name, args, kwargs, at, display)
    else:
        result = _op_call(b, fn, op_name, args, kwargs, at, display, numpy_fn)
    return npkwargs.finish(b, extras, result, op_name, at, display, op_call)


def _masked_call(b: KernelBuilder, fn: Any, op_name: str, args: list[Any], kwargs: dict[str, Any], at: ast.AST,
                 display: str) -> Any:
    """An op on a boolean-mask selection (masked.py): elementwise ops keep it a selection, a whole reduction
    reduces the selected elements; anything else needs its data-dependent length."""
    first = next(a for a in args if isinstance(a, masked.Masked))
    op = ops.get(op_name)
    if masked.is_elementwise(op_name):
        return masked.elementwise(b, list(args), at, lambda data: _op_call(b, fn, op_name, data, kwargs, at, display,
                                                                           None))
    if op.is_reduction and len(args) == 1:
        try:
            _, _, attrs = bind_op(fn, op_name, [first.data], dict(kwargs))
        except TypeError as e:
            raise b.error(f"{display}(): {e}", at) from None
        return masked.reduce(b, op_name, first, attrs, at, op_call)
    raise masked.unsupported(b, first, at, f"{display}()")


def _op_call(b: KernelBuilder, fn: Any, op_name: str, args: list[Any], kwargs: dict[str, Any],
             at: ast.AST, display: str, numpy_fn: Any) -> Any:
    try:
        op_name, tensors, attrs = bind_op(fn, op_name, list(args), dict(kwargs))
    except TypeError as e:
        raise b.error(f"{display}(): {e}", at) from None
    if "axis" in attrs and (fn or ops.get(op_name).api) is not None:  # a list axis: numpy's TypeError
        checks.list_axis(b, display, attrs, checks.raw_argument(fn or ops.get(op_name).api, args, kwargs, "axis"), at)
    for key, value in attrs.items():
        if contains_tensor(value):
            raise b.error(
                f"argument `{key}` of {display} must be a compile-time value, got {describe(value)}", at
            )
    try:
        attrs = {k: normalize_attr(v) for k, v in attrs.items()}
    except dtypes.DTypeError as e:
        raise b.error(f"{display}(): {e}", at) from None
    present = [t for t in tensors if t is not None]
    if present and not any(is_tensor(t) for t in present) and all(
        is_number(t) or is_const_array(t) for t in present
    ):
        # every operand is known now: numpy computes it at compile time, as the eager code would
        try:
            if numpy_fn is not None:
                return _scalar_result(numpy_fn(*args, **kwargs))
            arrays = [np.asarray(t) if t is not None else None for t in tensors]
            return _scalar_result(ops.get(op_name).eager(*[a for a in arrays if a is not None], **attrs))
        except Exception as e:
            raise b.error(f"{display}(): {type(e).__name__}: {e}", at) from None
    if op_name == "matmul" and len(tensors) == 2 and bitops.is_bool_pair(*tensors) and not attrs.get("transpose_a") \
            and not attrs.get("transpose_b"):
        return bitops.bool_matmul(b, tensors[0], tensors[1], at)
    op = ops.get(op_name)
    params = op.tensor_params
    given = [(params[i] if i < len(params) else None, t) for i, t in enumerate(tensors) if t is not None]
    promoted = [t for p, t in given if p not in op.unpromoted]
    strong = strong_dtypes(b, promoted)
    partners = strong or [t.type.dtype for t in promoted if is_tensor(t)]
    inputs = []
    for i, (param, t) in enumerate(given):
        label = f"argument `{param}` of {display}" if param is not None else f"argument {i} of {display}"
        if param in op.unpromoted:  # its own type: a Python scalar becomes a Const of its default dtype
            inputs.append(as_operand(b, t, [], op_name, at, label))
        else:
            inputs.append(as_operand(b, t, partners, op_name, at, label, bool(strong)))
    if op_name == "take" and len(inputs) == 2 and inputs[1].node.op != "Const":
        checks.take_in_range(b, inputs[0], inputs[1], attrs.get("axis"), at)  # numpy's IndexError, at run time
    outs = b.emit(op_name, inputs, attrs, at)
    if op_name in checks.LINALG_ERRORS:
        checks.linalg_error(b, op_name, inputs[0], outs[0], at)  # numpy's LinAlgError, at run time
    if op.data_error is not None:
        checks.op_data_error(b, op, inputs, attrs, at)  # numpy's error on data (registry fact), at run time
    return outs[0] if len(outs) == 1 and not op.returns_sequence else tuple(outs)


def tensor_method(b: KernelBuilder, m: TensorMethod, args: list[Any], kwargs: dict[str, Any],
                  at: ast.AST) -> Any:
    x, name = m.tensor, m.name
    if name in COMPILE_TIME_METHODS and is_tensor(x):
        return known.tolist(b, x, args, kwargs, at)
    if isinstance(x, masked.Masked):  # `x[mask].sum()`: the op on the selection (masked.py)
        if name not in ("sum", "max", "min", "mean", "astype", "prod", "any", "all", "clip", "copy"):
            raise masked.unsupported(b, x, at, f"`.{name}()`")
        return op_call(b, None, TENSOR_METHODS[name], [x, *args], kwargs, at, f".{name}")
    op_name = TENSOR_METHODS[name]
    display = f".{name}"
    if name in ("flatten", "ravel"):
        if len(args) > 1 or set(kwargs) - {"order"} or (args and kwargs):
            raise b.error(f".{name}() takes only the order in a kernel", at)
        x = npfuncs.in_order(b, x, args[0] if args else kwargs.get("order", "C"), at, display, op_call)
        args, kwargs = [(-1,)], {}
    elif name == "item":
        if args or kwargs:
            raise b.error(".item() takes no arguments in a kernel (an index would pick one element: x[i] does)", at)
        if x.type.numel != 1:
            raise b.error(f".item() of a tensor of shape {x.type.shape}: can only convert an array of size 1 to a "
                          "Python scalar (numpy's ValueError); a size-1 tensor's item stays a 0-d tensor", at)
        args = [()]
    elif name == "reshape":
        if kwargs:
            raise b.error(f".reshape() takes the new shape only, got keyword {', '.join(kwargs)}", at)
        if not args:  # numpy: TypeError, not a reshape to ()
            raise b.error(".reshape() needs the new shape: TypeError: reshape() takes exactly 1 argument (0 given)",
                          at)
        if len(args) == 1 and isinstance(args[0], (tuple, list)):
            args = [tuple(args[0])]
        else:
            args = [tuple(args)]
    elif name == "astype":
        kwargs = dict(kwargs)
        copy = kwargs.pop("copy", True)
        for layout in ("order", "casting", "subok"):
            kwargs.pop(layout, None)
        args, kwargs = dtype_rules.python_dtypes(list(args), kwargs)
        target = args[0] if args else kwargs.get("dtype")
        try:
            same = target is not None and canonical_dtype(target) == x.type.dtype
        except (dtypes.DTypeError, TypeError):
            same = False
        if copy is False and same:
            return x  # numpy returns the very array when no copy is needed
    elif name == "transpose":
        if kwargs:
            raise b.error(f".transpose() takes axes only, got keyword {', '.join(kwargs)}", at)
        if not args or (len(args) == 1 and args[0] is None):
            args = [None]
        elif len(args) == 1 and isinstance(args[0], (tuple, list)):
            args = [tuple(args[0])]
        else:
            args = [tuple(args)]
    out = op_call(b, None, op_name, [x, *args], kwargs, at, display)
    if name == "item":
        return mark_weak(b, out)  # numpy gives a Python number: weak next to arrays
    if name == "flatten" and is_tensor(out):
        aliasing.forget_view(b, out)  # numpy's flatten always copies (ravel and reshape may share)
    return out


def dtype_call(b: KernelBuilder, dtype: Any, args: list[Any], kwargs: dict[str, Any], at: ast.AST,
               name: str) -> Any:
    """`np.float32(v)`: a cast of a tensor, or a numpy scalar / dtype at compile time."""
    if len(args) == 1 and not kwargs and is_tensor(args[0]):
        try:
            target = canonical_dtype(dtype)
        except dtypes.DTypeError as e:
            raise b.error(f"{name}(): {e}", at) from None
        return op_call(b, None, "cast", [args[0], target], {}, at, name)
    return compile_time_call(b, dtype, args, kwargs, at, name)


# ---- builtins -----------------------------------------------------------------------


def _no_tensors(b: KernelBuilder, args: Sequence[Any], at: ast.AST, name: str, hint: str) -> None:
    if contains_tensor(list(args)):
        raise b.error(f"{name}() runs at compile time and cannot take a tensor; {hint}", at)


def _len(b, args, kwargs, at, name):
    if len(args) == 1 and isinstance(args[0], masked.Masked):
        raise masked.unsupported(b, args[0], at, "len()")
    if len(args) == 1 and not kwargs and is_tensor(args[0]):
        x = args[0]
        if x.type.ndim == 0:
            raise b.error(f"len() of a 0-d tensor ({x.type}) in `{b.text(at)}`", at)
        return x.type.shape[0]
    # a tuple or list may hold tensors: its length is still known now
    return compile_time_call_allowing_tensors(b, len, args, kwargs, at, name)


def _range(mode):
    def handler(b, args, kwargs, at, name):
        return loops.make_range(b, args, kwargs, at, name, mode)  # a range, or a RangeSpec for a runtime Loop

    return handler


def _minmax(which):
    def handler(b, args, kwargs, at, name):
        values = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args
        if contains_tensor(list(values)) and not kwargs and len(values) > 1 and all(
                not is_tensor(v) or v.type.numel == 1 for v in values) and all(
                is_tensor(v) or is_number(v) for v in values):
            # one-element tensors (numpy scalars in numpy code): Python's own rule, the first of the smallest
            # (largest) wins, so a NaN first stays and a NaN later is passed over
            best = values[0]
            for v in values[1:]:
                better = op_call(b, None, "lt" if which is min else "gt", [v, best], {}, at, name)
                best = op_call(b, None, "where", [better, v, best], {}, at, name)
            return best
        if contains_tensor(list(values)):
            raise b.error(
                f"{name}() on tensors is not supported: it would compare whole arrays in Python; "
                f"use pyasc.{'maximum' if which is max else 'minimum'}(a, b) elementwise "
                f"or x.{which.__name__}() to reduce",
                at,
            )
        if any(isinstance(v, Sym) for v in values):
            if kwargs or not values or not all(isinstance(v, (int, Sym)) and not isinstance(v, bool) for v in values):
                raise b.error(f"{name}() of a symbolic dim takes dims and ints only, got {describe(values)}", at)
            return (tensor_type.min_ if which is min else tensor_type.max_)(*values)  # a symbolic dim expression
        return compile_time_call(b, which, args, kwargs, at, name)

    return handler


def _abs(b, args, kwargs, at, name):
    if len(args) == 1 and not kwargs and is_tensor(args[0]):
        return op_call(b, None, "abs", [args[0]], {}, at, name)
    return compile_time_call(b, abs, args, kwargs, at, name)


def _scalar_conversion(kind):
    def handler(b, args, kwargs, at, name):
        if len(args) == 1 and not kwargs and is_tensor(args[0]) and args[0].type.numel == 1:
            # `int(x == y)`, `float(loss)` of a one-element tensor: the number it holds, a 0-d tensor of the kind's
            # dtype (numpy code gets a Python number; pyasc keeps it on the chip)
            x = args[0] if args[0].type.ndim == 0 else b.emit("reshape", [args[0]], {"shape": ()}, at)[0]
            dtype = {int: "int32", float: "float32", bool: "bool"}[kind]
            if kind is bool:
                out = b.emit("ne", [x, b.const(0, x.type.dtype, at)], {}, at)[0] if x.type.dtype != "bool" else x
            else:
                out = b.emit("cast", [x], {"dtype": dtype}, at)[0]
            aliasing.mark_scalar(b, out)
            return out
        if contains_tensor(list(args)):
            raise b.error(
                f"{name}() of a tensor would need its value at compile time; "
                f"use x.astype(pyasc.{ {int: 'int32', float: 'float32', bool: 'bool_'}[kind] }) "
                "for an elementwise cast",
                at,
            )
        return compile_time_call(b, kind, args, kwargs, at, name)

    return handler


def _iterating(fn):
    def handler(b, args, kwargs, at, name):
        # a tensor is its rows (numpy iterates over the first axis), a sequence read from outside the kernel its
        # items read through their access paths (so `for layer in self.layers` keeps each layer's path)
        args = [b.iterate(a, at) if is_tensor(a) or isinstance(a, (list, tuple)) else a for a in args]
        return compile_time_call_allowing_tensors(b, fn, args, kwargs, at, name)

    return handler


def compile_time_call_allowing_tensors(b, fn, args, kwargs, at, name):
    """For container builtins: tensors may be elements of the containers, they are just moved around."""
    try:
        return fn(*args, **kwargs)
    except CompileError:
        raise
    except Exception as e:
        raise b.error(f"{name}(): {type(e).__name__}: {e}", at) from None


def _sum(b, args, kwargs, at, name):
    """Python's sum, also over a list of tensors: `start + a + b + ...`, each `+` as the operator would be."""
    if not args or len(args) > 2 or set(kwargs) - {"start"} or (len(args) == 2 and kwargs):
        return compile_time_call(b, sum, args, kwargs, at, name)  # Python's own message for a bad call
    if is_tensor(args[0]):
        raise b.error(f"{name}() would iterate over the tensor ({args[0].type}); use x.sum() or "
                      "pyasc.sum(x, axis=...) to reduce it", at)
    total = args[1] if len(args) == 2 else kwargs.get("start", 0)
    for item in b.iterate(args[0], at):
        total = b.binary(ast.Add(), total, item, at, (at, at))
    return total


def _map(b, args, kwargs, at, name):
    """map(f, *iterables): f called per element now (a lambda or helper over tensors is inlined per element)."""
    if kwargs or len(args) < 2:
        return compile_time_call(b, map, args, kwargs, at, name)  # Python's own message for a bad call
    fn, iterables = args[0], [b.iterate(a, at) for a in args[1:]]
    return tuple(call_value(b, fn, list(items), {}, at) for items in zip(*iterables))


def _filter(b, args, kwargs, at, name):
    if kwargs or len(args) != 2:
        return compile_time_call(b, filter, args, kwargs, at, name)
    fn, items = args[0], b.iterate(args[1], at)
    keep = []
    for item in items:
        verdict = item if fn is None else call_value(b, fn, [item], {}, at)
        if contains_tensor(verdict):
            raise b.error(f"{name}(): the condition for {describe(item)} is a tensor, known only at run time; "
                          "filter on compile-time values", at)
        if b.truth(verdict, at):
            keep.append(item)
    return tuple(keep)


def _isinstance(b, args, kwargs, at, name):
    if len(args) != 2 or kwargs:
        return compile_time_call(b, isinstance, args, kwargs, at, name)
    return comptime.isinstance_of(b, args[0], args[1], at)


def _compile_time_only(fn):
    def handler(b, args, kwargs, at, name):
        _no_tensors(b, args, at, name, "it only works on compile-time values")
        return compile_time_call(b, fn, args, kwargs, at, name)

    return handler


BUILTINS: dict[Any, Callable[..., Any]] = {
    len: _len,
    range: _range("auto"),
    markers.static_range: _range("static"),
    markers.runtime_range: _range("runtime"),
    min: _minmax(min),
    max: _minmax(max),
    abs: _abs,
    int: _scalar_conversion(int),
    float: _scalar_conversion(float),
    bool: _scalar_conversion(bool),
    tuple: _iterating(tuple),
    list: _iterating(list),
    dict: _iterating(dict),  # `dict(w=x, b=y)`, `dict(zip(names, tensors))`: a pytree to return or pass on
    zip: _iterating(lambda *a: tuple(zip(*a))),
    enumerate: _iterating(lambda *a, **k: tuple(enumerate(*a, **k))),
    reversed: _iterating(lambda a: tuple(reversed(a))),
    isinstance: _isinstance,
    map: _map,
    filter: _filter,
    sorted: _iterating(lambda *a, **k: sorted(*a, **k)),
    round: _compile_time_only(round),
    str: _compile_time_only(str),
    repr: _compile_time_only(repr),
    set: _compile_time_only(set),
    frozenset: _compile_time_only(frozenset),
    divmod: _compile_time_only(divmod),
    callable: _compile_time_only(callable),
    sum: _sum,
    math.prod: _compile_time_only(math.prod),
    # a slice object to index with later; a one-element tensor bound is a launch-time bound there (indexing.py)
    slice: lambda b, args, kwargs, at, name: compile_time_call_allowing_tensors(b, slice, args, kwargs, at, name),
    # a partial holds its function and arguments (tensors too); calling it is call_value's
    functools.partial: lambda b, args, kwargs, at, name: compile_time_call_allowing_tensors(
        b, functools.partial, args, kwargs, at, name),
    **pybuiltins.HANDLERS,
    getattr: functools.partial(pybuiltins.getattr_, inline=lambda *a: inline(*a)),
    **pystdlib.handlers(lambda *a: call_value(*a)),
}


# ---- helpers and other kernels ---------------------------------------------------------


def qualified_name(fn: types.FunctionType) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


def inline(b: KernelBuilder, fn: types.FunctionType, args: list[Any], kwargs: dict[str, Any], at: ast.AST,
           name: str) -> Any:
    """Compile a call to a Python function by compiling its body in place, with its own scope."""
    if fn.__code__ in b.state.inlining:
        raise b.error(
            f"recursive call to `{fn.__qualname__}`: helpers are inlined at compile time, "
            "so they cannot call themselves",
            at,
        )
    try:
        parsed = source.parse_function(fn)
    except CompileError as e:
        raise b.error(f"cannot inline {name}: {e.reason}", at) from None
    if isinstance(parsed.tree, ast.AsyncFunctionDef):
        raise b.error(f"cannot inline {name}: async functions are not supported", at)
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as e:
        raise b.error(f"{name}(): {e}", at) from None
    given = set(bound.arguments)
    bound.apply_defaults()
    guards.read_function(b, fn, at)
    for param in bound.signature.parameters.values():
        if param.name not in given and param.default is not inspect.Parameter.empty:  # a default: its own path
            bound.arguments[param.name] = guards.read_default(b, fn, param.name, at)
    qualname = qualified_name(fn)
    if qualname not in b.state.helpers:
        b.state.helpers.append(qualname)
    scope = Scope(fn, assigned_names(parsed.tree))
    for param, value in bound.arguments.items():
        scope.bind(param, value)
    helper = b.inline_builder(parsed, scope)
    b.state.inlining.append(fn.__code__)
    try:
        helper.run_body()
    except CompileError as e:  # located in the helper: say which call of the kernel led there
        at_call = b.loc(at)
        raise e.with_note(Note(f"in `{fn.__qualname__}`, called here", at_call, b.parsed.line(at_call.lineno))) \
            from None
    finally:
        b.state.inlining.pop()
    return helper.return_value
