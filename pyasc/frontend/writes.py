"""In-place operators and item assignment with numpy's meaning.

`a += b`, `y[1:3, 0] = v`, `y[i] = v`, `y[..., :k] += v` and `x[mask] = v`
change an array in numpy; in a kernel they are functional updates: the
written region becomes a `slice_update` of the array (a boolean mask a
`where`), and `aliasing.write` carries the new value to the base and to
every name viewing it. A numpy scalar (`pyasc.sum(x)`, `x[0]` of a 1-d
array) is immutable: `s += 1` rebinds `s` only. Compile-time numpy arrays
made in the kernel are changed in numpy itself when the right side is known
(so their numpy views see it); arrays read from globals, closures or objects
are never changed.
"""
from __future__ import annotations

import ast
import operator
from typing import Any

import numpy as np

from .. import dtypes
from ..ir.graph import Value
from . import aliasing, comptime, effects, fancy, gather, guards, indexing, masked, objects, storing
from .storing import coerce
from .tensors import BINARY_OPS, fold
from .values import Masked, contains_tensor, describe, is_const_array, is_number, is_tensor

#: in-place Python operators for compile-time numpy arrays
_IN_PLACE = {
    ast.Add: operator.iadd, ast.Sub: operator.isub, ast.Mult: operator.imul, ast.Div: operator.itruediv,
    ast.FloorDiv: operator.ifloordiv, ast.Mod: operator.imod, ast.Pow: operator.ipow,
    ast.MatMult: operator.imatmul, ast.BitAnd: operator.iand, ast.BitOr: operator.ior,
    ast.BitXor: operator.ixor, ast.LShift: operator.ilshift, ast.RShift: operator.irshift,
}


def aug_assign(b: Any, s: ast.AugAssign) -> None:
    target = s.target
    if isinstance(target, ast.Subscript):
        assign_subscript(b, target, b.eval(s.value), s)
        return
    if isinstance(target, ast.Attribute):
        assign_attribute(b, target, b.eval(s.value), s)
        return
    if not isinstance(target, ast.Name):
        b._check_target(target)
    current = b.load_name(target.id, target)
    rhs = b.eval(s.value)
    if is_const_array(current):
        _array_in_place(b, s, target.id, current, rhs)
        return
    result = b.binary(s.op, current, rhs, s, (target, s.value))
    if is_tensor(current) and is_tensor(result) and current not in b.state.weak \
            and not aliasing.is_scalar(b, current):
        # (a weak tensor stands for a Python scalar and a numpy scalar is immutable: `+=` rebinds them
        # like `y = y + ...`)
        result = in_place_result(b, s, target.id, current.type.shape, current.type.dtype, result)
        result = aliasing.write(b, current, result, s, f"`{b.text(s)}`")
    b.bind_name(target.id, result)


def in_place_result(b: Any, s: ast.AST, name: str, shape: Any, dtype: str, result: Value) -> Value:
    """numpy's in-place operators keep the target's shape and dtype; so do we."""
    new = result.type
    if tuple(new.shape) != tuple(shape):
        raise b.error(
            f"`{b.text(s)}` would change the shape of `{name}` from {tuple(shape)} to "
            f"{tuple(new.shape)}; an in-place operator cannot (write `{name} = {name} ... ` instead)",
            s,
        )
    if new.dtype != dtype:
        if not np.can_cast(dtypes.to_numpy(new.dtype), dtypes.to_numpy(dtype), "same_kind"):
            raise b.error(
                f"`{b.text(s)}` computes {new.dtype}, which numpy cannot store back into `{name}` "
                f"of dtype {dtype} in place; write `{name} = {name} ...` to get a {new.dtype} result",
                s,
            )
        result = b.emit("cast", [result], {"dtype": dtype}, s)[0]
    return result


# ---- compile-time arrays -------------------------------------------------------------------------


def _array_in_place(b: Any, s: ast.AugAssign, name: str, arr: np.ndarray, rhs: Any) -> None:
    if storing.external(b, arr):
        guards.relift(b, arr)  # a captured array: compiled again with it a hidden input, written after the call
        raise b.error(
            f"`{b.text(s)}` would change in place the compile-time array `{name}`, which the kernel read "
            f"from outside it (a global, closure or attribute); a kernel cannot change it: write "
            f"`{name} = {name} {BINARY_OPS[type(s.op)][1]} ...` for a new array", s)
    if not contains_tensor(rhs):
        fold(b, _IN_PLACE[type(s.op)], (arr, rhs), s)  # numpy's own in-place: its views see it too
        b.bind_name(name, arr)
        return
    result = b.binary(s.op, arr, rhs, s, (s.target, s.value))
    result = in_place_result(b, s, name, arr.shape, dtypes.narrow(arr.dtype), result)
    storing.replace_array(b, arr, result, s)
    b.bind_name(name, result)


# ---- item assignment -------------------------------------------------------------------------------


def assign_subscript(b: Any, target: ast.Subscript, value: Any, aug: ast.AugAssign | None = None) -> None:
    """`target = value` (aug None) or `target op= value` for a subscript target."""
    at: ast.AST = aug if aug is not None else target
    what = f"`{b.text(at)}`"
    container = b.eval(target.value)
    index = b.eval(target.slice)
    if is_const_array(container) and not contains_tensor(index):
        if not contains_tensor(value) and not storing.external(b, container):
            if aug is None:
                fold(b, operator.setitem, (container, index, value), at)
            else:
                def update(a: np.ndarray, i: Any, v: Any) -> None:
                    a[i] = _IN_PLACE[type(aug.op)](a[i], v)
                fold(b, update, (container, index, value), at)
            return
        container = storing.tensor_of_array(b, container, at)
    if not is_tensor(container):
        if contains_tensor(index):
            raise b.error(f"{what} indexes {describe(container)} with a tensor; a container's keys are compile-time "
                          "values", target.slice)
        _store(b, container, guards.Item(index), value, aug, target, at, what)
        return
    if aliasing.is_scalar(b, container):
        raise b.error(f"{what} assigns into `{b.text(target.value)}`, a numpy scalar ({container.type}); numpy "
                      "raises \"TypeError: 'numpy scalar' object does not support item assignment\" here", at)
    if is_tensor(index) and dtypes.is_bool(index.type.dtype):
        _mask_write(b, target, container, index, value, aug, at, what)
        return
    index = gather.as_basic(b, container, index, at)
    if fancy.is_advanced(index):  # integer arrays: a scatter (x[i] += v is numpy's buffered x[i] = x[i] + v)
        combine = None
        if aug is not None:
            def combine(current: Value) -> Value:
                result = b.binary(aug.op, current, value, at, (target, aug.value))
                return in_place_result(b, at, b.text(target), current.type.shape, current.type.dtype, result)
        fancy.write(b, container, index, value, at, indexing.basic, coerce, combine)
        return
    region = indexing.basic(b, container, index, target)
    if aug is not None:
        result = b.binary(aug.op, region, value, at, (target, aug.value))
        new = in_place_result(b, at, b.text(target), region.type.shape, region.type.dtype, result)
    else:
        new = coerce(b, value, region.type.shape, region.type.dtype, at, target)
    aliasing.write(b, region, new, at, what)


def assign_attribute(b: Any, target: ast.Attribute, value: Any, aug: ast.AugAssign | None = None) -> None:
    """`obj.attr = value` (aug None) or `obj.attr op= value`."""
    at: ast.AST = aug if aug is not None else target
    obj = b.eval(target.value)
    if is_tensor(obj):
        raise b.error(f"`{b.text(at)}` sets the attribute `{target.attr}` of a tensor, which a kernel does not do; "
                      "make a new tensor instead (e.g. `x = x.reshape(...)`)", target)
    _store(b, obj, guards.Attr(objects.mangle(b, target.attr)), value, aug, target, at, f"`{b.text(at)}`")


def _store(b: Any, obj: Any, step: Any, value: Any, aug: ast.AugAssign | None, target: ast.AST, at: ast.AST,
           what: str) -> None:
    """`obj.attr` / `obj[key]` (`step`) set to `value`, or updated by `aug`, as Python and numpy do it: an
    augmented assignment on an array item updates that array in place (every holder sees it); anything else
    puts the new value there (set on the real object after the call when it is outside the kernel)."""
    if aug is not None:
        if isinstance(step, guards.Attr):
            current = objects.read_attribute(b, obj, step.name, target)
        else:
            current = objects.read_item(b, obj, step.key, target)
        if is_tensor(current) and current not in b.state.weak and not aliasing.is_scalar(b, current):
            result = b.binary(aug.op, current, value, at, (target, aug.value))
            result = in_place_result(b, at, b.text(target), current.type.shape, current.type.dtype, result)
            aliasing.write(b, current, result, at, what)  # the array itself changes: `obj` keeps holding it
            return
        if is_const_array(current):
            if storing.external(b, current):
                guards.relift(b, current)  # a captured array: compiled again with it a hidden input
            if not contains_tensor(value):
                fold(b, _IN_PLACE[type(aug.op)], (current, value), at)  # numpy's own in-place on the kernel's array
                return
        value = b.binary(aug.op, current, value, at, (target, aug.value))
    guards.relift_stored(b, obj, step)  # state the kernel reads and stores: a hidden input, not a constant
    if effects.store(b, obj, step, value, at, what):
        return
    if effects.set_made(b, obj, step, value, at, what):
        return
    if isinstance(obj, (list, dict)):  # a container the kernel built: Python's own, changed now
        comptime.check_list_mutation(b, obj, what, target)
        key = step.key if isinstance(step, guards.Item) else step.name
        fold(b, operator.setitem, (obj, key, value), at)
        return
    kind = "the attribute" if isinstance(step, guards.Attr) else "an item"
    raise b.error(f"{what} sets {kind} of {describe(obj)}, which the kernel did not build and cannot reach from "
                  "outside (an argument, `self`, a global): build a new value instead", at)


def _mask_write(b: Any, target: ast.Subscript, x: Value, mask: Value, value: Any, aug: ast.AugAssign | None,
                at: ast.AST, what: str) -> None:
    """`x[mask] = v` with one value v, or a selection by the same mask (`z[m] = np.exp(-x[m])`):
    `where(mask, v, x)` (numpy assigns v to every selected element). A mask of x's leading axes selects
    whole rows."""
    sel = masked.select(b, x, mask, target)
    if isinstance(value, Masked) or (aug is None and not isinstance(value, Masked)):
        if isinstance(value, Masked):
            if aug is not None:
                value = masked.elementwise(b, [sel, value], at,
                                           lambda d: b.binary(aug.op, d[0], d[1], at, (target, aug.value)))
            aliasing.write(b, x, masked.write(b, x, sel, value, at, coerce), at, what)
            return
    if tuple(mask.type.shape) != tuple(x.type.shape):
        mask = masked.full_mask(b, sel, at)
    single = is_number(value) or (is_tensor(value) and value.type.numel == 1) or \
        (is_const_array(value) and value.size == 1)
    if not single:
        shown = value.type if is_tensor(value) else describe(value)
        raise b.error(f"{what} assigns {shown} to the elements a boolean mask selects; their number is only known "
                      "at run time, so pyasc needs a single value there (use pyasc.where(mask, values, x) for "
                      "elementwise values)", at)
    if is_tensor(value) and value.type.ndim:
        value = b.emit("reshape", [value], {"shape": ()}, at)[0]
    if is_const_array(value):
        value = value.reshape(())[()]
    if aug is not None:
        result = b.binary(aug.op, x, value, at, (target, aug.value))
        new_all = in_place_result(b, at, b.text(target.value), x.type.shape, x.type.dtype, result)
    else:
        new_all = coerce(b, value, (), x.type.dtype, at, target)
    new = b.emit("where", [mask, new_all, x], {}, at)[0]
    aliasing.write(b, x, new, at, what)


__all__ = ["assign_attribute", "assign_subscript", "aug_assign", "coerce", "in_place_result"]
