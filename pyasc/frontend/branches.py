"""`if` and `a if c else b` on a tensor condition: an `If` node with two subgraphs.

Each branch is compiled into its own Graph. A branch reads outer tensors
through Data inputs (see context.GraphContext); its outputs are the
variables either branch assigns that the code after the `if` may read
(syntactic liveness), or the values both branches return. A variable
assigned on one path only, and not defined before, becomes `Undefined`:
reading it later is the error, not the `if` itself.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from .. import dtypes
from ..ir.graph import Graph, Value
from . import aliasing, effects
from .context import GraphContext
from .protocol import KernelBuilder
from .scope import Undefined
from .tensors import mark_weak, strong_dtypes, weak_dtype, weak_values
from .values import contains_tensor, describe, is_const_array, is_number, is_tensor


_MISSING = object()


@dataclass
class Branch:
    label: str  # "then" / "else"
    ctx: GraphContext
    locals: dict[str, Any]
    returned: bool
    value: Any  # the returned value, or the expression's value for a ternary
    return_node: ast.AST | None
    slots: dict = field(default_factory=dict)  # what the branch changed outside the kernel (effects.py)


@dataclass(frozen=True)
class LoopExit:
    """What a branch "returns" when it reaches a `break` or `continue` of the unrolled loop around its `if`: the
    `if` then continues that branch after the loop (break) or with the loop's next iteration (continue)."""

    loop: ast.stmt
    stmt: ast.stmt


def names_read(nodes: Sequence[ast.AST]) -> set[str]:
    """Names an AST reads (augmented assignment targets are read too)."""
    found: set[str] = set()
    for root in nodes:
        for n in ast.walk(root):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                found.add(n.id)
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
                found.add(n.target.id)
    return found


def check_condition(b: KernelBuilder, cond: Value, at: ast.AST, construct: str) -> None:
    t = cond.type
    if t.numel != 1:
        shape = "a symbolic shape " + str(tuple(str(d) for d in t.shape)) if t.numel is None else f"shape {tuple(t.shape)}"
        raise b.error(
            f"the condition of {construct} must be a single value, but `{b.text(at)}` is a tensor of "
            f"{shape} ({t}); to choose elementwise use pyasc.where(cond, a, b)",
            at,
        )


def _build_branch(b: KernelBuilder, label: str, operands: list[Value], before: dict[str, Any],
                  run: Callable[[], Any], name: str) -> Branch:
    ctx = GraphContext(Graph(f"{name}_{label}"), parent=b.ctx, operands=operands)
    with b.branch(ctx, before):
        value = run()
        return Branch(label, ctx, b.scope.snapshot(), b.returned, b.return_value if b.returned else value,
                      b.return_node, effects.snapshot(b))


def _same(a: Any, c: Any) -> bool:
    """Whether two bindings are the same value (a tensor, or an equal compile-time value)."""
    if a is c:
        return True
    if is_tensor(a) or is_tensor(c):
        return is_tensor(a) and is_tensor(c) and a == c
    if type(a) is not type(c):
        return False
    if isinstance(a, (tuple, list)) and contains_tensor(a):
        return len(a) == len(c) and all(_same(x, y) for x, y in zip(a, c))
    try:
        return bool(a == c)
    except Exception:
        return False


def _pair_to_values(b: KernelBuilder, what: str, tv: Any, ev: Any, then: Branch, other: Branch,
                    at: ast.AST) -> tuple[Value, Value, tuple | None]:
    """One If output: the then value and else value as tensors of one type in their branch graphs,
    and, when both are Python scalars (or weak tensors standing for them), the numbers the output
    may be (the If output is then weak, see tensors.weak_values); else None.

    A compile-time numpy array (a global `K`) is a constant tensor of its own (strong) dtype there."""
    tv, ev = (_array_const(b, v, at, what) for v in (tv, ev))
    for v, br in ((tv, then), (ev, other)):
        if not (is_tensor(v) or is_number(v)):
            raise b.error(
                f"{what} is {describe(v)} in the {br.label} branch of an `if` on a tensor condition; "
                "both branches must give it a tensor or a number, because which one runs is only "
                "known at run time",
                at,
            )
    weak_t, weak_e = weak_values(b, tv), weak_values(b, ev)
    weak = weak_t + weak_e if weak_t is not None and weak_e is not None else None
    strong = strong_dtypes(b, (tv, ev))
    result: list[Value] = []
    for v, br, partner in ((tv, then, ev), (ev, other, tv)):
        if is_tensor(v) and v not in b.state.weak:
            result.append(br.ctx.use(v))
            continue
        own = weak_values(b, v)  # None for a numpy scalar, which is strong
        try:
            if weak is not None:  # both Python scalars: the default dtype of their kind, as numpy would give
                dtype, shape = dtypes.promote(*weak), ()
            elif is_tensor(partner) and partner not in b.state.weak:  # a scalar next to a tensor: its type
                shape = partner.type.shape
                dtype = weak_dtype(own, [partner.type.dtype], "") if own else dtypes.promote(partner.type.dtype, v)
            else:  # a scalar next to a numpy scalar
                shape = ()
                dtype = weak_dtype(own, strong, "") if own else dtypes.narrow(v.dtype)
        except OverflowError as e:
            raise b.error(f"{what}: {e}", at) from None
        if not all(isinstance(d, int) for d in shape):
            shape = ()  # a symbolic shape: leave the mismatch to the type check below
        if is_tensor(v):  # a weak tensor: cast (and broadcast) as a Python scalar would be here
            inner = br.ctx.use(v)
            if inner.type.dtype != dtype:
                inner = br.ctx.graph.add("cast", (inner,), {"dtype": dtype}, b.loc(at)).out()
            if tuple(shape) != tuple(inner.type.shape):
                inner = br.ctx.graph.add("broadcast_to", (inner,), {"shape": tuple(shape)}, b.loc(at)).out()
            result.append(inner)
            continue
        array = np.full(shape, v, dtype=dtypes.to_numpy(dtype))
        node = br.ctx.graph.add("Const", (), {"value": _readonly(array)}, b.loc(at))
        result.append(node.out())
    t, e = result[0].type, result[1].type
    if (t.shape, t.dtype) != (e.shape, e.dtype):
        raise b.error(
            f"{what} is {t} in the then branch but {e} in the else branch of an `if` on a tensor "
            "condition; both branches must give it the same shape and dtype",
            at,
        )
    return result[0], result[1], weak


def _array_const(b: KernelBuilder, v: Any, at: ast.AST, what: str) -> Any:
    if not is_const_array(v):
        return v
    try:
        return b.const(v, dtypes.narrow(v.dtype), at)
    except dtypes.DTypeError as e:
        raise b.error(f"{what}: {e}", at) from None


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a, order="C")  # a copy; not ascontiguousarray, which makes a 0-d array 1-d
    a.flags.writeable = False
    return a


def _flatten(v: Any) -> tuple[bool, list[Any]]:
    if isinstance(v, (tuple, list)):
        return True, list(v)
    return False, [v]


@dataclass
class SlotOutputs:
    """What the If passes out for the slots (arrays and objects outside the kernel, effects.py) the branches
    change: a slot holding in both branches what another output holds (the array a merged variable names)
    reuses that output, so they stay one array after the `if`; the others get outputs of their own."""

    keys: list = field(default_factory=list)      # slots with outputs of their own, in order
    pairs: list = field(default_factory=list)     # their (then, else, weak) values
    reuse: dict = field(default_factory=dict)     # slot -> index of the output it shares


def _slot_pairs(b: KernelBuilder, then: Branch, other: Branch, before: dict, at: ast.AST,
                existing: Sequence[tuple[Any, Any]] = ()) -> SlotOutputs:
    """The slots the branches change differently; `existing`: the (then, else) values of the If's other outputs."""
    out = SlotOutputs()
    index = {(tv, ev): i for i, (tv, ev) in enumerate(existing) if is_tensor(tv) and is_tensor(ev)}
    inputs = [n.name or "" for n in b.state.graph.inputs]
    for key, tv, ev in effects.changed(b, then.slots, other.slots, before, at):
        if is_tensor(tv) and is_tensor(ev) and (tv, ev) in index:
            out.reuse[key] = index[(tv, ev)]
            continue
        if is_tensor(tv) and is_tensor(ev):
            index[(tv, ev)] = len(existing) + len(out.keys)
        out.keys.append(key)
        out.pairs.append(_pair_to_values(b, effects.describe_slot(key, inputs), tv, ev, then, other, at))
    return out


def _make_if(b: KernelBuilder, cond: Value, operands: list[Value], then: Branch, other: Branch,
             pairs: list[tuple[Value, Value, tuple | None]], at: ast.AST, name: str,
             slots: SlotOutputs | None = None) -> list[Value]:
    """The If node; the outputs for `slots` go after `pairs`' and set those slots."""
    slots = slots or SlotOutputs()
    keys = slots.keys
    n_own = len(pairs)
    pairs = list(pairs) + list(slots.pairs)
    then.ctx.graph.set_outputs([p[0] for p in pairs])
    other.ctx.graph.set_outputs([p[1] for p in pairs])
    then.ctx.complete_inputs()
    other.ctx.complete_inputs()
    attrs = {"then_branch": then.ctx.graph, "else_branch": other.ctx.graph}
    outs = b.emit("If", [cond, *operands], attrs, at, name=name)
    for out, (_, _, weak) in zip(outs, pairs):
        if weak is not None:
            mark_weak(b, out, weak)
    effects.set_slots(b, {key: outs[i] for key, i in slots.reuse.items()})
    if keys:
        effects.set_slots(b, dict(zip(keys, outs[n_own:])))
        outs = outs[:n_own]
    return outs


def _build_both(b: KernelBuilder, operands: list[Value], before: dict, then_body: Callable[[], Any],
                else_body: Callable[[], Any]) -> tuple[Branch, Branch, str]:
    """Build the then- and else-subgraphs of one If, sharing its operand list; returns them and the If's name."""
    b.state.if_count += 1
    name = f"if{b.state.if_count}"
    return (_build_branch(b, "then", operands, before, then_body, name),
            _build_branch(b, "else", operands, before, else_body, name), name)


def tensor_if_statement(b: KernelBuilder, stmt: ast.If, cond: Value) -> None:
    check_condition(b, cond, stmt.test, "an `if`")
    live = b.live_after()
    before = b.scope.snapshot()
    before_slots = effects.snapshot(b)
    operands: list[Value] = []
    then, other, name = _build_both(b, operands, before, lambda: b.exec_block(stmt.body),
                              lambda: b.exec_block(stmt.orelse))

    if any(br.returned and isinstance(br.value, LoopExit) for br in (then, other)):
        then, other = _with_loop_exit(b, stmt, operands, before, name, then, other)
    tails: list | None = []
    if then.returned != other.returned:
        # an early return: the branch that does not return continues with the rest of the function
        tails = b.rest_tails()
        if tails is not None and any(tails):
            then, other = _with_rest(b, stmt, operands, before, name, then, other, tails)
    if then.returned or other.returned:
        if not (then.returned and other.returned):
            one = then if then.returned else other
            raise b.error(
                f"`return` in only the {one.label} branch of an `if` on a tensor condition"
                + (" inside a loop the host runs (a Loop node: the rest of the function cannot become the "
                   "other branch there)" if tails is None
                   else " with no `return` after it in the function (or in the enclosing `if` branch)")
                + "; the condition is only known at run time, so assign the result to a variable in both "
                "branches and return it after the `if`",
                one.return_node or stmt,
            )
        tuple_t, t_items = _flatten(then.value)
        tuple_e, e_items = _flatten(other.value)
        if tuple_t != tuple_e or len(t_items) != len(e_items):
            raise b.error(
                "the two branches of an `if` on a tensor condition return different numbers of values "
                f"({len(t_items) if tuple_t else 'one'} vs {len(e_items) if tuple_e else 'one'})",
                stmt.test,
            )
        pairs = [
            _pair_to_values(b, f"returned value {i}" if tuple_t else "the returned value", tv, ev, then, other,
                            stmt.test)
            for i, (tv, ev) in enumerate(zip(t_items, e_items))
        ]
        outs = _make_if(b, cond, operands, then, other, pairs, stmt.test, name,
                        _slot_pairs(b, then, other, before_slots, stmt.test, list(zip(t_items, e_items))))
        b.returned, b.return_node = True, stmt
        b.return_value = tuple(outs) if tuple_t else outs[0]
        return

    names: list[str] = []
    for d in (then.locals, other.locals):
        for n in d:
            if n not in names and not _same(d[n], before.get(n, _MISSING)):
                names.append(n)
    merged: list[tuple[str, tuple[Value, Value, tuple | None]]] = []
    originals: list[tuple[Any, Any]] = []  # each merged name's then and else value, as the branches bound them
    # names holding the same array in both branches (`c = a` before the `if`) stay one array after it
    first: dict[tuple[int, int], str] = {}
    same_as: list[tuple[str, str]] = []
    for n in names:
        tv, ev = then.locals.get(n, _MISSING), other.locals.get(n, _MISSING)
        if tv is _MISSING or ev is _MISSING or isinstance(tv, Undefined) or isinstance(ev, Undefined):
            where = "then" if ev is _MISSING or isinstance(ev, Undefined) else "else"
            b.scope.bind(n, Undefined(
                n,
                f"`{n}` is assigned only in the {where} branch of the `if` at line {stmt.lineno}, "
                "whose condition is a tensor known only at run time; assign it before the `if` or in "
                "both branches",
            ))
        elif n not in live:
            b.scope.bind(n, Undefined(n, f"`{n}` is not available after the tensor `if` at line {stmt.lineno}"))
        elif _same(tv, ev):
            b.scope.bind(n, tv)
        elif is_tensor(tv) and is_tensor(ev) and (id(tv), id(ev)) in first:
            same_as.append((n, first[(id(tv), id(ev))]))
        else:
            if is_tensor(tv) and is_tensor(ev):
                first[(id(tv), id(ev))] = n
            merged.append((n, _pair_to_values(b, f"variable `{n}`", tv, ev, then, other, stmt.test)))
            originals.append((tv, ev))
    if not merged and not effects.changed_any(b, then.slots, other.slots, before_slots):
        return  # neither branch computes anything used later
    for bt, be in aliasing.bases_to_merge(b, originals):  # (the base of a view used later, passed out too)
        merged.append(("", _pair_to_values(b, "the array a view used after the `if` belongs to", bt, be, then,
                                            other, stmt.test)))
        originals.append((bt, be))
    slots = _slot_pairs(b, then, other, before_slots, stmt.test, originals)
    outs = _make_if(b, cond, operands, then, other, [pair for _, pair in merged], stmt.test, name, slots)
    for (n, _), v in zip(merged, outs):
        if n:
            b.bind_name(n, v)
    for n, m in same_as:
        b.scope.bind(n, b.scope.locals[m])
    aliasing.merge_branches(b, [(n, tv, ev, out) for (n, _), (tv, ev), out in zip(merged, originals, outs)],
                            stmt.test)


def _with_rest(b: KernelBuilder, stmt: ast.If, operands: list[Value], before: dict, name: str, then: Branch,
               other: Branch, tails: list) -> tuple[Branch, Branch]:
    """Rebuild the branch of `stmt` that does not return with the rest of the function after it."""
    label, body = ("else", stmt.orelse) if then.returned else ("then", stmt.body)

    def run() -> None:
        b.exec_block(body)
        if not b.returned:
            b.run_rest(tails)

    rebuilt = _build_branch(b, label, operands, before, run, name)
    return (then, rebuilt) if then.returned else (rebuilt, other)


def _with_loop_exit(b: KernelBuilder, stmt: ast.If, operands: list[Value], before: dict, name: str, then: Branch,
                    other: Branch) -> tuple[Branch, Branch]:
    """Both branches of `stmt` rebuilt to run to the end of the function, when one of them leaves the unrolled
    loop around the `if` (`break`: it continues after the loop; `continue`: with the loop's next iteration) and
    the other carries on with the rest of the iteration: the `if` becomes an early return of both."""
    exit_ = next(br.value for br in (then, other) if br.returned and isinstance(br.value, LoopExit))
    word = "break" if isinstance(exit_.stmt, ast.Break) else "continue"
    tails = b.rest_tails()
    at = next((i for i, part in enumerate(tails or []) if isinstance(part, tuple) and part[0] is exit_.loop), None)
    if at is None:
        raise b.error(f"`{word}` under a tensor condition inside another `if` on a tensor condition: pyasc turns "
                      f"one level into the rest of the loop; test both conditions in one `if` (`if a and b: "
                      f"{word}`)", exit_.stmt)
    after = at + 1 + (at + 1 < len(tails) and tails[at + 1] is exit_.loop.orelse)  # type: ignore[arg-type]
    b.state.loop_exits += 1

    def rebuilt(br: Branch, body: list[ast.stmt]) -> Branch:
        if br.returned and not isinstance(br.value, LoopExit):
            return br  # a real `return`: nothing after it runs

        def run() -> None:
            b.exec_block(body)
            if b.returned and isinstance(b.return_value, LoopExit):
                left = b.return_value
                b.returned, b.return_value, b.return_node = False, None, None
                b.run_rest(tails[after:] if isinstance(left.stmt, ast.Break) else tails[at:])
            elif not b.returned:
                b.run_rest(tails)
        return _build_branch(b, br.label, operands, before, run, name)

    then, other = rebuilt(then, stmt.body), rebuilt(other, stmt.orelse)
    if not (then.returned and other.returned):
        raise b.error(f"`{word}` under a tensor condition makes the rest of the function two branches of an If, "
                      "so the function must end with a `return` after the loop (it returns nothing here)",
                      exit_.stmt)
    return then, other


def tensor_ternary(b: KernelBuilder, node: ast.IfExp, cond: Value) -> Any:
    check_condition(b, cond, node.test, "a conditional expression")
    before = b.scope.snapshot()
    before_slots = effects.snapshot(b)
    operands: list[Value] = []
    then, other, name = _build_both(b, operands, before, lambda: b.eval(node.body), lambda: b.eval(node.orelse))
    tuple_t, t_items = _flatten(then.value)
    tuple_e, e_items = _flatten(other.value)
    if tuple_t != tuple_e or len(t_items) != len(e_items):
        raise b.error("the two sides of a conditional expression on a tensor give different numbers of values",
                      node)
    pairs = [_pair_to_values(b, "the value", tv, ev, then, other, node) for tv, ev in zip(t_items, e_items)]
    outs = _make_if(b, cond, operands, then, other, pairs, node, name,
                    _slot_pairs(b, then, other, before_slots, node, list(zip(t_items, e_items))))
    aliasing.merge_branches(b, [("", tv, ev, out) for tv, ev, out in zip(t_items, e_items, outs)], node)
    return tuple(outs) if tuple_t else outs[0]

