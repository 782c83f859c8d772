"""numpy's aliasing in a kernel: views, in-place writes through them, immutable numpy scalars.

A kernel's tensors are values (SSA), but numpy code relies on arrays being
shared: `v = x[1:]; v += 1` changes `x`, `g = s; g += 1` does not change a
numpy scalar `s`. The frontend keeps, beside the graph, which tensor values
are *views* of which base and how they were derived (a chain of view ops:
slices, `.T`/transpose, reshape, expand_dims, squeeze, broadcast_to), and
which are *numpy scalars* (0-d results of computations, numpy scalar
arguments), which numpy never changes in place.

A write (an in-place operator, a slice assignment) into a view becomes a
functional update of its base: the view chain is inverted step by step (a
slice becomes `slice_update`, a transpose its inverse, a reshape/squeeze/
expand_dims a reshape back), and then every name bound to the base or to a
view of it is rebound to the new base or to the view recomputed from it, as
numpy would show them. A write into a read-only view (`broadcast_to`) is
numpy's error. Where the frontend cannot tell what numpy shares (a reshape
of a strided view with symbolic dims, views merged by an `if` on a tensor
that no longer have one base), a write is a located CompileError, never a
silent difference.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..ir.graph import Value
from ..ops.shape import slice_index, permutation
from ..tensor_type import TensorType
from . import effects
from .protocol import KernelBuilder
from .pytree import map_tensors
from .values import is_tensor

#: ops whose result numpy returns as a view of their (first) input
VIEW_OPS = frozenset({"slice", "squeeze", "expand_dims", "transpose", "reshape", "broadcast_to"})

#: ops whose 0-d result numpy returns as an array (mutable), not as a numpy scalar
_ARRAY_MAKERS = frozenset({"full", "Data", "If", "Const"})


@dataclass(frozen=True)
class Step:
    """One view op: `op(source, **attrs)`."""

    op: str
    attrs: tuple[tuple[str, Any], ...]
    source: Value

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.attrs)


@dataclass(frozen=True)
class View:
    """A tensor value that numpy would hold as a view of `base` (a value that is not a view itself)."""

    base: Value
    steps: tuple[Step, ...]
    readonly: str | None = None  # how the read-only view was made, for numpy's error


@dataclass
class AliasTable:
    views: dict[Value, View] = field(default_factory=dict)
    scalars: set[Value] = field(default_factory=set)          # numpy scalars: never changed in place
    opaque: dict[Value, str] = field(default_factory=dict)    # values whose sharing is unknown -> why
    opaque_bases: dict[Value, set] = field(default_factory=dict)  # an opaque value -> the bases it may view
    quiet: int = 0                                            # > 0 while the write machinery emits


def table(b: KernelBuilder) -> AliasTable:
    """The build's table (BuildState holds it; made on first use so context.py need not import this)."""
    if b.state.aliasing is None:
        b.state.aliasing = AliasTable()
    return b.state.aliasing


# ---- recording ---------------------------------------------------------------------------------------


def note_node(b: KernelBuilder, op: str, inputs: list[Value], attrs: dict[str, Any], outs: list[Value],
              text: str) -> None:
    """Record what numpy would make of a node the frontend just emitted."""
    t = table(b)
    if t.quiet or not outs:
        return
    out = outs[0]
    if op in VIEW_OPS and inputs:
        src = inputs[0]
        if src in t.opaque:
            t.opaque[out] = t.opaque[src]
            t.opaque_bases[out] = t.opaque_bases.get(src, set())
            return
        parent = t.views.get(src)
        base = parent.base if parent else src
        steps = (parent.steps if parent else ()) + (Step(op, tuple(sorted(attrs.items())), src),)
        readonly = parent.readonly if parent else None
        if op == "broadcast_to" and readonly is None:
            readonly = f"`{text}` (np.broadcast_to returns a read-only view)"
        if op == "reshape" and parent is not None:
            shares = _reshape_shares(base.type, steps)
            if shares is None:
                t.opaque[out] = (f"`{text}` reshapes a strided view with symbolic dims, so whether numpy "
                                 "returns a view or a copy is only known at launch")
                t.opaque_bases[out] = {base}
                return
            if not shares:
                _fresh(t, out)  # numpy copies here: a new array
                return
        t.views[out] = View(base, steps, readonly)
        return
    if len(outs) == 1 and out.type.ndim == 0 and op not in _ARRAY_MAKERS:
        if op != "cast" or not inputs or inputs[0].type.ndim != 0 or inputs[0] in t.scalars:
            t.scalars.add(out)  # a numpy computation with a 0-d result gives a numpy scalar


def _fresh(t: AliasTable, v: Value) -> None:
    t.views.pop(v, None)
    t.opaque.pop(v, None)


def forget_view(b: KernelBuilder, v: Value) -> None:
    """`v` is a new array (numpy copies: `.flatten()`), whatever op made it."""
    _fresh(table(b), v)


def mark_scalar(b: KernelBuilder, v: Value) -> None:
    """`v` is a numpy scalar (`x[i]` of a 1-d array, a numpy scalar argument)."""
    t = table(b)
    _fresh(t, v)
    t.scalars.add(v)


def is_scalar(b: KernelBuilder, v: Value) -> bool:
    return v in table(b).scalars


def _shadow_apply(a: np.ndarray, step: Step) -> np.ndarray:
    """A view op applied to a numpy array (numpy's own view rules decide what is shared)."""
    kw = step.kwargs
    if step.op == "slice":
        return a[slice_index(kw["starts"], kw["stops"], kw["steps"])]
    if step.op == "transpose":
        return np.transpose(a, permutation(kw.get("axes"), a.ndim))
    if step.op == "reshape":
        return np.reshape(a, kw["shape"])
    if step.op == "squeeze":
        return np.squeeze(a, kw.get("axis"))
    if step.op == "expand_dims":
        return np.expand_dims(a, kw["axis"])
    return np.broadcast_to(a, kw["shape"])


def _reshape_shares(base: TensorType, steps: tuple[Step, ...]) -> bool | None:
    """Whether numpy's reshape (the last step) returns a view of the base: simulated on a small array of
    the base's shape; None when a dim is symbolic and a step before it is not a plain re-description."""
    if not base.is_static:
        if all(s.op in ("reshape", "squeeze", "expand_dims") for s in steps):
            return True
        return None
    shadow = np.zeros(tuple(int(d) for d in base.shape), np.int8)
    cur = shadow
    for s in steps:
        cur = _shadow_apply(cur, s)
    return bool(np.shares_memory(cur, shadow)) or cur.size == 0


# ---- writing ---------------------------------------------------------------------------------------------


def write(b: KernelBuilder, target: Value, new: Value, at: ast.AST, what: str) -> Value:
    """numpy's in-place write of `new` (target's type) into the array `target`: the base of `target` is
    updated, and every name bound to it or to a view of it is rebound. Returns the value `target`'s names
    hold afterwards."""
    t = table(b)
    if target in t.opaque:
        raise b.error(f"{what} writes into an array whose sharing pyasc cannot follow: {t.opaque[target]}; "
                      "write into the base array instead, or make a new array first (`v = v + 0`)", at)
    view = t.views.get(target)
    if target.type.numel == 0 and (view is None or not view.readonly):
        return new  # an empty region: numpy changes nothing (and codegen treats empty inputs as constants)
    if view is not None and view.readonly:
        raise b.error(f"{what} writes into a read-only view: it comes from {view.readonly}; numpy raises "
                      "\"ValueError: output array is read-only\" here", at)
    if view is None:
        base, new_base, chain = target, new, ()
        _fresh(t, new)
    else:
        base = view.base
        new_base, chain = _invert(b, view, new, at)
        t.views[new] = View(new_base, chain)
    memo: dict[Value, Value] = {base: new_base, target: new}

    def rebound(v: Value) -> Value:
        if v in memo:
            return memo[v]
        if v in t.opaque and base in t.opaque_bases.get(v, ()):
            raise b.error(f"{what} changes an array that another variable may view: {t.opaque[v]}; pyasc cannot "
                          "follow that view, so make it a new array first (`v = v + 0`)", at)
        other = t.views.get(v)
        if other is None or other.base is not base:
            return v
        if v in t.opaque:
            return v
        memo[v] = replay(b, other.steps, new_base, at)
        return memo[v]

    rebind_everywhere(b, rebound, at)
    return new


def _invert(b: KernelBuilder, view: View, new: Value, at: ast.AST) -> tuple[Value, tuple[Step, ...]]:
    """The new base when the view of `view.steps` becomes `new`; and the steps from the new base to `new`
    (each step's source is the updated value at that level)."""
    t = table(b)
    cur = new
    rev: list[Step] = []
    t.quiet += 1
    try:
        for step in reversed(view.steps):
            src = step.source
            kw = step.kwargs
            if step.op == "slice":
                up = b.emit("slice_update", [src, cur], kw, at)[0]
            elif step.op == "transpose":
                perm = permutation(kw.get("axes"), src.type.ndim)
                inverse = tuple(int(i) for i in np.argsort(perm))
                up = b.emit("transpose", [cur], {"axes": inverse}, at)[0]
            elif step.op in ("reshape", "squeeze", "expand_dims"):
                up = b.emit("reshape", [cur], {"shape": tuple(src.type.shape)}, at)[0]
            else:  # pragma: no cover - read-only views are rejected before
                raise AssertionError(step.op)
            rev.append(Step(step.op, step.attrs, up))
            cur = up
    finally:
        t.quiet -= 1
    return cur, tuple(reversed(rev))


def replay(b: KernelBuilder, steps: tuple[Step, ...], base: Value, at: ast.AST) -> Value:
    """The view `steps` describe, taken again of `base` (recorded as a view of it by `note_node`)."""
    cur = base
    for step in steps:
        cur = b.emit(step.op, [cur], step.kwargs, at)[0]
    return cur


def rebind_everywhere(b: KernelBuilder, rebound: Callable[[Value], Value], at: ast.AST) -> None:
    """Rebind every name of this function and of the functions it is inlined into (inside tuples, lists,
    dicts, NamedTuples and dataclasses too) whose tensor `rebound` changes."""
    builder: Any = b
    hint = ""
    if isinstance(at, ast.AugAssign) and isinstance(at.target, ast.Name):
        hint = f" (`{at.target.id} = {at.target.id} ...`)"
    while builder is not None:
        for name, value in list(builder.scope.locals.items()):
            replaced = map_tensors(value, rebound)
            if replaced is value:
                continue
            if builder.ctx is not b.ctx:
                # a caller's variable, updated inside an `if` on a tensor in the helper: only the helper's
                # own variables become outputs of that `if`
                raise b.error(
                    f"this in-place update inside an `if` on a tensor would also change `{name}` of the "
                    f"calling function `{builder.parsed.fn.__qualname__}` (numpy updates that same array "
                    f"in place), which pyasc does not support; assign a new value instead{hint} and return it",
                    at,
                )
            effects.follow(b, value, replaced)  # a pytree argument's container rebuilt: still the caller's
            builder.scope.bind(name, replaced)
        builder = getattr(builder, "parent", None)
    effects.rebind(b, rebound)  # the arrays and stored values outside the kernel


# ---- after an `if` on a tensor ------------------------------------------------------------------------


def bases_to_merge(b: KernelBuilder, pairs: list[tuple[Any, Any]]) -> list[tuple[Value, Value]]:
    """(then base, else base) of the If outputs that are the same view in both branches whose bases are not
    outputs already (`v = x[1:]` used after the `if`, `x` not): the If passes those bases out too, so the
    views stay views of one array."""
    t = table(b)
    have = {(id(tv), id(ev)) for tv, ev in pairs}
    out: list[tuple[Value, Value]] = []
    for tv, ev in pairs:
        if not (is_tensor(tv) and is_tensor(ev)):
            continue
        vt, ve = t.views.get(tv), t.views.get(ev)
        if vt is None or ve is None or vt.readonly or ve.readonly or vt.base is ve.base:
            continue
        if [(s.op, s.attrs) for s in vt.steps] != [(s.op, s.attrs) for s in ve.steps]:
            continue
        key = (id(vt.base), id(ve.base))
        if key not in have:
            have.add(key)
            out.append((vt.base, ve.base))
    return out


def merge_branches(b: KernelBuilder, merged: list[tuple[str, Value, Value, Value]], at: ast.AST) -> None:
    """Views across an If: `merged` holds (name, then value, else value, If output). An output that is in
    both branches the same view of another output's branch values is recorded as that view of it; any
    other output that was a view in a branch, and the outputs it may share with, become opaque (a write
    through them is an error), since numpy's sharing then depends on the branch taken."""
    t = table(b)
    by_pair = {(tv, ev): out for _, tv, ev, out in merged if is_tensor(tv) and is_tensor(ev)}
    unresolved = False
    for name, tv, ev, out in merged:
        vt = t.views.get(tv) if is_tensor(tv) else None
        ve = t.views.get(ev) if is_tensor(ev) else None
        if is_tensor(tv) and is_tensor(ev) and tv in t.scalars and ev in t.scalars:
            t.scalars.add(out)
        if vt is None and ve is None:
            continue
        if vt is not None and ve is not None and vt.readonly is None and ve.readonly is None and \
                [(s.op, s.attrs) for s in vt.steps] == [(s.op, s.attrs) for s in ve.steps]:
            base = by_pair.get((vt.base, ve.base))
            if base is None and vt.base is ve.base:  # both views of one outer array, which the `if` kept
                base = vt.base
            if base is not None:
                t.quiet += 1
                try:
                    chain = _chain_of(b, vt.steps, base, at)
                finally:
                    t.quiet -= 1
                t.views[out] = View(base, chain)
                continue
        unresolved = True
    if unresolved:
        why = (f"it comes out of the `if` on a tensor at line {getattr(at, 'lineno', '?')}, whose branches "
               "make it a view of different arrays")
        bases = set()
        for _, tv, ev, _ in merged:
            for v in (tv, ev):
                if is_tensor(v):
                    bases.add(t.views[v].base if v in t.views else v)
        for _, _, _, out in merged:
            if out not in t.views:
                t.opaque[out] = why
                t.opaque_bases[out] = bases


def _chain_of(b: KernelBuilder, steps: tuple[Step, ...], base: Value, at: ast.AST) -> tuple[Step, ...]:
    """Steps from `base` with their sources recomputed (the intermediate values a later write needs)."""
    out = []
    cur = base
    for step in steps:
        out.append(Step(step.op, step.attrs, cur))
        cur = b.emit(step.op, [cur], step.kwargs, at)[0]
    return tuple(out)
