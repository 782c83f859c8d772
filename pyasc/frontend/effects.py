"""Writes that reach the caller, the frontend's side (pyasc.effects has the records the runtime applies).

Beside the scope, the build keeps *slots*: values the kernel changes outside
itself, rebound like variables by every in-place write (aliasing.write),
merged by an `if` on a tensor and carried by a runtime loop like variables.

- A *cell* per array outside the kernel that a write may reach: each tensor
  argument and tensor leaf of a pytree argument (not numpy scalars, which
  numpy never changes), and each captured array lifted to a hidden input.
  Its slot holds the array's current value; at the end a cell whose value
  is no longer its Data input is written back to the caller's array.
- A *store* per `obj.attr = v` / `obj[key] = v` on an object outside the
  kernel: a container of a pytree argument (the kernel's copy of the
  container changes too, so later reads in the kernel see it) or an object
  reached through an access path (`self`, a global dict). Reads of a stored
  attribute or item later in the kernel see the stored value (`lookup`); the
  real object is set after the call.
"""
from __future__ import annotations

import ast
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .. import dtypes, pytree
from ..effects import ARG, CONST, INPUT, OUT, PATH, SCALAR, TEXT, Effects, Print, Store, Target, WriteBack
from ..guards import Attr, Item
from ..ir.graph import Value
from .protocol import KernelBuilder
from .pytree import map_tensors
from .values import describe, is_const_array, is_number, is_tensor

MISSING = object()


@dataclass(frozen=True)
class CellKey:
    """The array behind graph input `index`."""

    index: int


@dataclass(frozen=True)
class StoreKey:
    """`target.step = ...` (an attribute or an item of an object outside the kernel)."""

    target: Target
    step: Any  # guards.Attr | guards.Item

    def text(self) -> str:
        where = self.target.text()
        return f"{where}.{self.step.name}" if isinstance(self.step, Attr) else f"{where}[{self.step.key!r}]"


@dataclass(frozen=True)
class StatusKey:
    """The status word: one bit per data check that failed (checks.py)."""

    def text(self) -> str:
        return "the status word of the kernel's checks"


STATUS = StatusKey()


@dataclass
class EffectTable:
    slots: dict[Any, Any] = field(default_factory=dict)       # CellKey | StoreKey -> the current value
    initial: dict[CellKey, Value] = field(default_factory=dict)  # a cell -> its Data input
    order: list[StoreKey] = field(default_factory=list)        # stores, first store first
    containers: dict[int, tuple[Any, Target]] = field(default_factory=dict)  # the kernel's pytree containers
    made: dict[int, Any] = field(default_factory=dict)         # objects the kernel built (their attributes are its)
    prints: list[tuple[list, str, str]] = field(default_factory=list)  # print(...) calls: values, sep, end
    checks: list[tuple[str, str, str]] = field(default_factory=list)  # (exception, message, where) per status bit


def table(b: KernelBuilder) -> EffectTable:
    if b.state.effects is None:
        b.state.effects = EffectTable()
    return b.state.effects


def current(t: EffectTable, key: Any) -> Any:
    """A slot's value (a cell not written in this branch: its Data input)."""
    if key in t.slots:
        return t.slots[key]
    return t.initial.get(key, MISSING)


def value_of(b: KernelBuilder, data: Value) -> Value:
    """The current value of the array behind graph input `data` (itself until the kernel writes it)."""
    t = b.state.effects
    if t is None:
        return data
    now = current(t, CellKey(data.node.attrs["index"]))
    return data if now is MISSING else now


# ---- recording ------------------------------------------------------------------------------------


def add_cell(b: KernelBuilder, data: Value) -> None:
    """Graph input `data` is an array outside the kernel that writes reach."""
    table(b).initial[CellKey(data.node.attrs["index"])] = data


def register_argument(b: KernelBuilder, param: str, value: Any) -> None:
    """The kernel's copy of pytree argument `param`: each container in it stands for the caller's."""
    t = table(b)

    def walk(v: Any, path: tuple) -> None:
        if is_tensor(v) or not pytree.is_container(v):
            return
        t.containers[id(v)] = (v, Target(ARG, path, param))
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, path + (k,))
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                walk(x, path + ((type(v)._fields[i],) if pytree.is_namedtuple(v) else (i,)))
        else:
            for f in dataclasses.fields(v):
                walk(getattr(v, f.name), path + (f.name,))

    walk(value, ())


def note_made(b: KernelBuilder, obj: Any) -> None:
    """`obj` (a dataclass instance, a dict) was built by the kernel: changing it changes nothing outside."""
    table(b).made[id(obj)] = obj


def target_of(b: KernelBuilder, obj: Any) -> Target | None:
    t = table(b)
    entry = t.containers.get(id(obj))
    if entry is not None and entry[0] is obj:
        return entry[1]
    entry = b.state.paths.get(id(obj))  # (guards.py maps each object reached by an access path)
    if entry is not None and entry[0] is obj and entry[1]:
        return Target(PATH, entry[1])
    return None


def follow(b: KernelBuilder, old: Any, new: Any) -> None:
    """`new` replaces `old` (a write rebuilt the container holding the written tensor): it stands for the same
    container of the caller."""
    t = table(b)
    if not t.containers or old is new:
        return
    entry = t.containers.get(id(old))
    if entry is not None and entry[0] is old:
        t.containers[id(new)] = (new, entry[1])
    if isinstance(old, dict) and isinstance(new, dict):
        for k in old:
            if k in new:
                follow(b, old[k], new[k])
    elif isinstance(old, (list, tuple)) and isinstance(new, (list, tuple)):
        for x, y in zip(old, new):
            follow(b, x, y)
    elif pytree.is_dataclass_instance(old) and type(new) is type(old):
        for f in dataclasses.fields(old):
            follow(b, getattr(old, f.name), getattr(new, f.name))


def rebind(b: KernelBuilder, rebound: Any) -> None:
    """An in-place write: every slot holding the written array (or a container of it) holds the new value."""
    t = table(b)
    for key, value in list(t.slots.items()):
        new = map_tensors(value, rebound)
        if new is not value:
            t.slots[key] = new
    for key, data in t.initial.items():
        if key not in t.slots and isinstance(key, CellKey):
            new = rebound(data)
            if new is not data:
                t.slots[key] = new


def lookup(b: KernelBuilder, obj: Any, step: Attr | Item) -> Any:
    """What the kernel stored into `obj.attr` / `obj[key]` of an object outside it, or MISSING."""
    t = table(b)
    if not t.order:
        return MISSING
    target = target_of(b, obj)
    if target is None or target.kind != PATH:
        return MISSING
    try:
        return t.slots.get(StoreKey(target, step), MISSING)
    except TypeError:  # an unhashable key
        return MISSING


def _check_storable(b: KernelBuilder, value: Any, what: str, at: ast.AST) -> None:
    leaves, _ = pytree.flatten(value, is_tensor)
    for leaf in leaves:
        if is_tensor(leaf) or is_const_array(leaf) or is_number(leaf) or leaf is None or isinstance(leaf, str):
            continue
        raise b.error(f"{what} stores {describe(leaf)} on an object outside the kernel; a kernel stores tensors, "
                      "numbers, strings and None there (and containers of them), which it sets after the call", at)


def store(b: KernelBuilder, obj: Any, step: Attr | Item, value: Any, at: ast.AST, what: str) -> bool:
    """`obj.attr = value` / `obj[key] = value` when `obj` stands for an object outside the kernel (recorded, set
    after the call); False when it does not (the caller decides what that means)."""
    target = target_of(b, obj)
    if target is None:
        return False
    try:
        leaves, _ = pytree.flatten(value, is_tensor)
    except pytree.BadKey as e:
        raise b.error(f"{what} stores a dict with the key {e.key!r}; stored dicts need str or int keys", at) from None
    _check_storable(b, value, what, at)
    if target.kind == ARG and b.ctx.parent is not None:
        raise b.error(f"{what} changes an argument's container inside an `if` on a tensor (or a runtime loop), "
                      "where both branches are built from the same containers; assign the values to variables in "
                      "the branches and store them after the `if`", at)
    key = StoreKey(target, step)
    t = table(b)
    try:
        t.slots[key] = value
    except TypeError:
        raise b.error(f"{what}: the key is unhashable", at) from None
    if key not in t.order:
        t.order.append(key)
    if target.kind == ARG:  # the kernel's copy of the container: later reads in the kernel see it
        _set_now(b, obj, step, value, at, what)
    return True


def _set_now(b: KernelBuilder, obj: Any, step: Attr | Item, value: Any, at: ast.AST, what: str) -> None:
    try:
        if isinstance(step, Attr):
            setattr(obj, step.name, value)
        else:
            obj[step.key] = value
    except Exception as e:  # Python's own refusal (a NamedTuple field, a tuple item, a frozen dataclass)
        raise b.error(f"{what}: {type(e).__name__}: {e}", at) from None


def set_made(b: KernelBuilder, obj: Any, step: Attr | Item, value: Any, at: ast.AST, what: str) -> bool:
    """`obj.attr = value` on an object the kernel built itself (plain Python), or False."""
    entry = table(b).made.get(id(obj))
    if entry is not obj:
        return False
    if b.ctx.parent is not None:
        raise b.error(f"{what} changes an object inside an `if` on a tensor (or a runtime loop), where both "
                      "branches are built from the same objects; assign a variable instead", at)
    _set_now(b, obj, step, value, at, what)
    return True


def add_check(b: KernelBuilder, ok_all: Value, exception: str, message: str, loc: Any, text: str, at: ast.AST) -> None:
    """status |= (1 - ok_all) << k for a new check k (ok_all: a 0-d int32, 1 when the data is fine)."""
    t = table(b)
    if STATUS not in t.initial:  # the status word starts at 0, in the kernel's own graph (every branch reads it)
        t.initial[STATUS] = b.state.graph.const(0, "int32", loc)
    k = len(t.checks)
    if k >= 31:
        k = 30  # (more checks share the last bit, with the last one's message: numpy's error is still raised)
    else:
        t.checks.append((exception, message, f"{loc}: in `{text}`"))
    failed = b.emit("sub", [b.const(1, "int32", at), ok_all], {}, at)[0]
    flag = b.emit("mul", [failed, b.const(1 << k, "int32", at)], {}, at)[0] if k else failed
    t.slots[STATUS] = b.emit("bitwise_or", [current(t, STATUS), flag], {}, at)[0]


def add_print(b: KernelBuilder, values: list, sep: str, end: str, at: ast.AST, what: str) -> None:
    """`print(*values)`: done after the launch, with the values as they are here."""
    if b.ctx.parent is not None:
        raise b.error(f"{what} inside an `if` on a tensor or a runtime loop is not supported: which prints run is "
                      "only known at launch; print after the `if` (or the loop)", at)
    for v in values:
        if not is_tensor(v) and _has_tensor(v):
            raise b.error(f"{what} prints {describe(v)}, a container holding tensors; print the tensors one by one",
                          at)
    table(b).prints.append((list(values), sep, end))


def _has_tensor(v: Any) -> bool:
    if is_tensor(v):
        return True
    if isinstance(v, (list, tuple)):
        return any(_has_tensor(x) for x in v)
    if isinstance(v, dict):
        return any(_has_tensor(x) for x in v.values())
    return False


# ---- branches and loops ------------------------------------------------------------------------------


def snapshot(b: KernelBuilder) -> dict[Any, Any]:
    return dict(table(b).slots)


def restore(b: KernelBuilder, saved: dict[Any, Any]) -> None:
    table(b).slots = dict(saved)


def changed(b: KernelBuilder, then: dict, other: dict, before: dict, at: ast.AST) -> list[tuple[Any, Any, Any]]:
    """(slot, then value, else value) of every slot the two branches of an `if` leave different; a slot
    both leave alike is set to that value."""
    t = table(b)
    out = []
    keys = list(dict.fromkeys([*then, *other]))
    for key in keys:
        base = before.get(key, t.initial.get(key, MISSING))
        tv, ev = then.get(key, base), other.get(key, base)
        if tv is ev or (is_tensor(tv) and is_tensor(ev) and tv == ev):
            if tv is not MISSING:
                t.slots[key] = tv
            continue
        if tv is MISSING or ev is MISSING:
            one = "then" if ev is MISSING else "else"
            raise b.error(f"`{key.text()}` is set only in the {one} branch of an `if` on a tensor, and the kernel "
                          "never read it before; set it before the `if` or in both branches", at)
        out.append((key, tv, ev))
    return out


def changed_any(b: KernelBuilder, then: dict, other: dict, before: dict) -> bool:
    """Whether the branches of an `if` changed any slot (without setting anything)."""
    t = table(b)
    for key in {*then, *other}:
        base = before.get(key, t.initial.get(key, MISSING))
        if then.get(key, base) is not base or other.get(key, base) is not base:
            return True
    return False


def describe_slot(key: Any, inputs: list[str]) -> str:
    if isinstance(key, CellKey):
        name = inputs[key.index] if key.index < len(inputs) else f"input {key.index}"
        return f"the array `{name}` written in place"
    return f"`{key.text()}`"


def set_slots(b: KernelBuilder, values: dict[Any, Any]) -> None:
    table(b).slots.update(values)


# ---- the end of the build --------------------------------------------------------------------------


def finish(b: KernelBuilder, results: list[Value], labels: list[str], at: ast.AST,
           is_scalar: Callable[[Value], bool]) -> tuple[list[Value], Effects | None]:
    """The graph outputs (the result's, then the ones effects need) and the effects record (None: none);
    `is_scalar(v)`: numpy holds `v` as a numpy scalar (a stored value keeps that form)."""
    t = b.state.effects
    if t is None:
        return results, None
    outputs = list(results)
    index_of: dict[Value, int] = {}
    for k, v in enumerate(results):
        index_of.setdefault(v, k)

    def out_index(v: Value) -> int:
        if v not in index_of:
            index_of[v] = len(outputs)
            outputs.append(v)
        return index_of[v]

    holds: dict[Value, int] = {}  # the value each outside array holds at the end -> its input index
    writes = []
    for key in sorted((k for k in t.initial if isinstance(k, CellKey)), key=lambda k: k.index):
        now = current(t, key)
        holds.setdefault(now, key.index)
        if now != t.initial[key]:
            writes.append(WriteBack(key.index, out_index(now)))
    result_inputs = tuple((k, holds[v]) for k, v in enumerate(results) if v in holds)
    stores = []
    for key in t.order:
        value = t.slots[key]
        leaves, tree = pytree.flatten(value, is_tensor)
        specs = []
        for leaf in leaves:
            if is_const_array(leaf):
                leaf = b.const(leaf, dtypes.narrow(leaf.dtype), at)
            if is_tensor(leaf):
                kind = SCALAR if is_scalar(leaf) else OUT
                specs.append((INPUT, holds[leaf]) if leaf in holds else (kind, out_index(leaf)))
            else:
                specs.append((CONST, leaf.item() if isinstance(leaf, np.generic) else leaf))
        stores.append(Store(key.target, key.step, tree, tuple(specs)))
    prints = []
    for values, sep, end in t.prints:
        items = []
        for v in values:
            if is_tensor(v):
                items.append((SCALAR if is_scalar(v) else OUT, out_index(v)))
            else:
                items.append((TEXT, str(v)))
        prints.append(Print(tuple(items), sep, end))
    status = -1
    if STATUS in t.initial and current(t, STATUS) is not t.initial[STATUS]:
        status = out_index(current(t, STATUS))
    effects = Effects(len(results), tuple(writes), tuple(stores), result_inputs, tuple(labels), tuple(prints),
                      tuple(t.checks) if status >= 0 else (), status)
    return outputs, (None if effects.empty else effects)
