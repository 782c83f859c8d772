"""Runtime loops: `for` over a launch-time trip count and `while` on a tensor become a `Loop` node.

A `for i in range(n)` whose `n` is a symbolic dim (dynamic=True) or a 0-d
integer tensor, one over `pyasc.runtime_range(...)`, one whose static trip
count would exceed the unroll budget, and a `while cond:` on a one-element
tensor are not unrolled: the body is built once, as a subgraph, and the host
code runs it at launch (ops/loop.py has the node's layout). So is a static
`range` of at least `LOOP_THRESHOLD` iterations when running its body once
means what unrolling it would (`_foldable`: the index is not read, the body
only assigns names, carried names are tensors) and the body keeps the shapes
and dtypes it carries; otherwise it is unrolled as before.

Loop-carried values are the variables the body assigns that exist before the
loop (tensors or numbers); each keeps its type across iterations, or the
loop is a CompileError at the assignment that changes it, naming the
variable. A number before the loop (`acc = 0.0`) takes the type the body
gives it. The loop index, when the body reads it, is one more carried value
(an int32 the body increments). Variables first assigned inside the body are
not available after it. `break`, `continue`, `return` and `else:` are not
supported in a runtime loop body.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Sequence

from .. import dtypes
from ..errors import CompileError
from .. import symbolic as sy
from ..ir.graph import Graph, Value
from ..ops.loop import types_agree
from ..dim_bounds import dim_max
from ..tensor_type import Sym, unwrap, wrap
from .branches import names_read
from . import conditions, dimpred, effects
from .context import GraphContext
from .protocol import KernelBuilder
from .scope import Undefined
from .values import describe, is_number, is_tensor

INDEX_DTYPE = "int32"


@dataclass(frozen=True)
class RangeSpec:
    """range(start, stop, step) that may be a runtime loop: bounds are ints, symbolic dims or 0-d int tensors.

    mode: "auto" (runtime because a bound is only known at launch), "runtime" (pyasc.runtime_range),
    "static" (pyasc.static_range: unrolled whatever the budget).
    """

    start: Any
    stop: Any
    step: int
    mode: str

    def static_range(self) -> range | None:
        if all(isinstance(v, int) and not isinstance(v, bool) for v in (self.start, self.stop)):
            return range(self.start, self.stop, self.step)
        return None


def make_range(b: KernelBuilder, args: Sequence[Any], kwargs: dict, at: ast.AST, name: str, mode: str) -> Any:
    """The value of `range(...)`, `pyasc.static_range(...)` or `pyasc.runtime_range(...)` in a kernel."""
    if kwargs:
        raise b.error(f"{name}() takes no keyword arguments", at)
    if not 1 <= len(args) <= 3:
        raise b.error(f"{name}() takes 1 to 3 arguments, got {len(args)}", at)
    for a in args:
        ok = isinstance(a, Sym) or (isinstance(a, int) and not isinstance(a, bool)) or (
            is_tensor(a) and a.type.numel == 1 and dtypes.is_int(a.type.dtype))
        if not ok:
            raise b.error(f"{name}() bounds must be ints, symbolic dims or one-element integer tensors, got "
                          f"{describe(a)} in `{b.text(at)}`", at)
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3 else 1)
    if not (isinstance(step, int) and not isinstance(step, bool)):
        raise b.error(f"{name}() step must be a compile-time int, got {describe(step)} in `{b.text(at)}`", at)
    if step == 0:
        raise b.error(f"{name}() arg 3 must not be zero", at)
    spec = RangeSpec(start, stop, step, mode)
    if mode == "static" and spec.static_range() is None:
        raise b.error(f"{name}() unrolls at compile time, so its bounds must be compile-time ints; got "
                      f"`{b.text(at)}` (use range() or pyasc.runtime_range() for a runtime loop)", at)
    if mode == "auto" and spec.static_range() is not None:
        return spec.static_range()
    if any(is_tensor(v) for v in (start, step)) or (is_tensor(stop) and step != 1):
        raise b.error(f"a tensor bound is supported as the stop of a range with step 1, in `{b.text(at)}`", at)
    return spec


#: a static `range` of at least this many iterations whose body keeps its shapes is a runtime loop (its body
#: traced once) instead of being unrolled; `pyasc.static_range` unrolls whatever the count
LOOP_THRESHOLD = 256


def wants_runtime_loop(b: KernelBuilder, it: Any, loop: ast.For) -> tuple[bool | str, str | None]:
    """(a Loop? True, False, or "try": a Loop if the body keeps the shapes it carries, else unrolled; the note
    to record) for the value a `for` iterates over."""
    if isinstance(it, RangeSpec):
        return it.mode != "static", None
    if isinstance(it, range) and len(it) > 0:
        left = b.state.unroll_budget - b.state.unrolled
        if len(it) > left:
            return True, (f"a static loop of {len(it)} iterations exceeds the unroll budget "
                          f"({b.state.unroll_budget} in total, {left} left): compiled as a runtime loop")
        if len(it) >= LOOP_THRESHOLD and _foldable(b, loop):
            return "try", (f"a static loop of {len(it)} iterations (at least {LOOP_THRESHOLD}) whose body keeps the "
                           "shapes of what it carries: compiled as a runtime loop, its body traced once "
                           "(pyasc.static_range unrolls it)")
    return False, None


_SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.If, ast.For, ast.Pass)


def _foldable(b: KernelBuilder, loop: ast.For) -> bool:
    """Whether running the body once as a Loop means what unrolling it means: the index is not read (inside or
    after), the body only assigns names (no compile-time side effects: no calls as statements, no writes through
    attributes or items, no break, continue, return or else), and every name it assigns is a tensor before the
    loop (carried) or is not read after it."""
    if loop.orelse or not isinstance(loop.target, ast.Name):
        return False
    after = b.live_after()
    if loop.target.id in names_read(loop.body) or loop.target.id in after:
        return False
    for stmt in loop.body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.stmt) and not isinstance(n, _SIMPLE):
                if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)):
                    return False
            if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                if not all(_names_only(t) for t in targets):
                    return False
    before = b.scope.snapshot()
    for name in _assigned(loop.body):
        v = before.get(name)
        if v is None or isinstance(v, Undefined):
            if name in after:
                return False
        elif not is_tensor(v):
            return False
    return True


def _names_only(target: ast.expr) -> bool:
    """An assignment target made of plain names (unpacking included), not an attribute or item."""
    return all(isinstance(t, (ast.Name, ast.Tuple, ast.List, ast.Starred)) for t in ast.walk(target)
               if isinstance(t, ast.expr))


def try_runtime_for(b: KernelBuilder, s: ast.For, it: range, note: str) -> bool:
    """`runtime_for` for a foldable static loop; False (and nothing changed but dead nodes) when its body does not
    keep the shapes or dtypes it carries, or cannot run as a Loop body: then it is unrolled."""
    before = b.scope.snapshot()
    try:
        runtime_for(b, s, it, note)
        return True
    except CompileError:
        b.scope.restore(before)
        return False


class LoopContext(GraphContext):
    """A loop body's graph: Data 0..k-1 are the carried values (created up front), later ones are outer
    values the body reads (imported on use, never matched against the carried slots)."""

    def __init__(self, graph: Graph, parent: GraphContext, inits: list[Value]):
        super().__init__(graph, parent, list(inits))
        self.k = len(inits)
        self.carried = [self._data(j, v) for j, v in enumerate(inits)]

    def use(self, v: Value) -> Value:
        if v.node.graph is self.graph:
            return v
        if v in self._imported:
            return self._imported[v]
        assert self.parent is not None
        outer = self.parent.use(v)
        index = next((i for i in range(self.k, len(self.operands)) if self.operands[i] == outer), None)
        if index is None:
            index = len(self.operands)
            self.operands.append(outer)
        inner = self._data(index, outer)
        self._imported[v] = inner
        return inner


_NAME, _SLOT = "name", "slot"


def _groups(entries: list[tuple], inits: dict[tuple, Any], apart: set[tuple]) -> list[list[tuple]]:
    """The carried values: entries holding the same tensor before the loop share one (unless `apart`)."""
    groups: list[list[tuple]] = []
    leader_of: dict[Value, list[tuple]] = {}
    for e in entries:
        v = inits[e]
        if is_tensor(v) and e not in apart and v in leader_of:
            leader_of[v].append(e)
            continue
        g = [e]
        groups.append(g)
        if is_tensor(v) and e not in apart:
            leader_of[v] = g
    return groups


def _differs(a: Any, c: Any) -> bool:
    return a is not c and not (is_tensor(a) and is_tensor(c) and a == c)


def _changed_in_place(b: KernelBuilder, before: dict, start: dict, after: dict, names: list[str],
                      counter: Any, loop: ast.stmt, assigned: list[str]) -> list[str]:
    """Variables from before the loop that the body changed without assigning them (an in-place write into
    the array they hold, `z[1:3] += y`): they are carried too."""
    out = []
    for n, v in after.items():
        if n in names or n not in before or isinstance(before[n], Undefined) or (counter and n == counter[0]):
            continue
        if not _differs(v, start.get(n)):
            continue
        if not (is_tensor(before[n]) or is_number(before[n])):
            if n in assigned:
                raise b.error(f"the runtime loop's body assigns `{n}`, which is {describe(before[n])} before it; a "
                              "runtime loop carries tensors and numbers only", _assignment_of(n, loop.body, loop))
            raise b.error(f"the runtime loop's body writes in place into an array held by `{n}` ({describe(before[n])})"
                          "; a runtime loop carries tensors and numbers only: bind the array to a variable before the "
                          "loop and write through that", loop)
        out.append(n)
    return out


def _check_body(b: KernelBuilder, body: Sequence[ast.stmt], orelse: Sequence[ast.stmt], what: str) -> None:
    if orelse:
        raise b.error(f"`else:` on {what} is not supported", orelse[0])
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, (ast.Break, ast.Continue, ast.Return)):
                word = type(n).__name__.lower()
                raise b.error(f"`{word}` inside {what} is not supported: the body runs whole, once per iteration "
                              "(make the condition or trip count say when to stop)", n)


def _assigned(stmts: Sequence[ast.stmt]) -> list[str]:
    out: list[str] = []
    for stmt in stmts:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id not in out:
                out.append(n.id)
    return out


def _assignment_of(name: str, stmts: Sequence[ast.stmt], fallback: ast.AST) -> ast.AST:
    """The last statement of the body that assigns `name` (where a type change is reported)."""
    found: ast.AST = fallback
    for stmt in stmts:
        for n in ast.walk(stmt):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(
                n, (ast.AugAssign, ast.AnnAssign)) else []
            if any(isinstance(t, ast.Name) and t.id == name for tt in targets for t in ast.walk(tt)):
                found = n
    return found


def _as_tensor(b: KernelBuilder, v: Any, like: Value | None, at: ast.AST) -> Value:
    """A carried value as a tensor of this graph: numbers become constants (of `like`'s type when given)."""
    if is_tensor(v):
        return b.ctx.use(v)
    dtype = like.type.dtype if like is not None else dtypes.promote(v)
    c = b.const(v, dtype, at)
    if like is not None and like.type.shape != ():
        c = b.emit("broadcast_to", [c], {"shape": tuple(like.type.shape)}, at)[0]
    return c


def _dim_value(b: KernelBuilder, v: Any, at: ast.AST) -> Value:
    if is_tensor(v):
        return v
    return b.emit("DimValue", [], {"value": v, "dtype": INDEX_DTYPE}, at)[0]


def _trip(b: KernelBuilder, spec: RangeSpec, at: ast.AST) -> Value:
    """The trip count as a one-element int: a DimValue (host-known) or a tensor (read back at launch)."""
    if is_tensor(spec.stop):
        n = spec.stop
        if not (isinstance(spec.start, int) and spec.start == 0):
            start = b.const(spec.start, n.type.dtype, at) if not is_tensor(spec.start) else spec.start
            n = b.emit("sub", [n, start], {}, at)[0]
        return n
    start, stop, step = unwrap(spec.start), unwrap(spec.stop), spec.step
    span = sy.add(stop, sy.mul(-1, start)) if step > 0 else sy.add(start, sy.mul(-1, stop))
    trip = dim_max(wrap(sy.ceildiv(span, abs(step))), 0)  # range(n) of a symbolic n >= 2 is just n
    return _dim_value(b, trip, at)


def runtime_for(b: KernelBuilder, s: ast.For, it: Any, note: str | None) -> None:
    """`for target in <it>:` as a Loop node (it: a RangeSpec, or a static range past the unroll budget)."""
    spec = it if isinstance(it, RangeSpec) else RangeSpec(it.start, it.stop, it.step, "runtime")
    _check_body(b, s.body, s.orelse, "a runtime loop")
    if not isinstance(s.target, ast.Name):
        raise b.error("a runtime loop's target must be a plain name", s.target)
    index = s.target.id
    reads_index = index in names_read(s.body)
    first = _trip(b, spec, s.iter)
    counter = None
    if reads_index:
        start = spec.start
        if isinstance(start, Sym):
            raise b.error(f"the index `{index}` of a runtime loop that starts at the symbolic dim {start} is not "
                          "supported; start at a compile-time int", s.iter)
        counter = (index, b.const(start, INDEX_DTYPE, s.iter), spec.step)
    _build(b, s, s.body, "for", first, counter, None, note)


def runtime_while(b: KernelBuilder, s: ast.While, cond: Any) -> None:
    """`while <tensor>:` as a Loop node; `cond` is the test before the loop, evaluated again after each
    iteration."""
    cond = dimpred.condition(b, cond, s.test)
    if cond.type.numel != 1:
        raise b.error(f"the condition of a `while` loop must be a single value, but `{b.text(s.test)}` is "
                      f"{cond.type}", s.test)
    _check_body(b, s.body, s.orelse, "a `while` loop")
    _build(b, s, s.body, "while", cond, None, s.test, None)


def _build(b: KernelBuilder, loop: ast.stmt, body: Sequence[ast.stmt], kind: str, first: Value,
           counter: tuple[str, Value, int] | None, cond_expr: ast.expr | None, note: str | None) -> None:
    before = b.scope.snapshot()
    assigned = _assigned(body)
    names = [n for n in assigned if n in before and not isinstance(before[n], Undefined)
             and (is_tensor(before[n]) or is_number(before[n]))]
    if counter is not None and counter[0] in names:
        names.remove(counter[0])
    header_at = loop.iter if isinstance(loop, ast.For) else loop.test  # type: ignore[attr-defined]
    table = effects.table(b)
    # what the loop carries: variables (NAME, name) and slots (SLOT, key) -- arrays and objects outside the kernel
    # the body changes (effects.py); those holding one array before the loop share one carried value (a write
    # through one name is seen through the others), unless the body parts them (`apart`)
    entries: list[tuple[str, Any]] = [(_NAME, n) for n in names]
    typed: dict[tuple, Value | None] = {}  # a number's type once the body has shown it
    apart: set[tuple] = set()
    for attempt in range(64):  # again when the body shows a number's type, changes a value not carried, or parts two
        inits = {e: before[e[1]] if e[0] == _NAME else effects.current(table, e[1]) for e in entries}
        groups = _groups(entries, inits, apart)
        init_values = [_as_tensor(b, inits[g[0]], typed.get(g[0]), header_at) for g in groups]
        if counter is not None:
            init_values.append(counter[1])
        b.state.if_count += 1
        ctx = LoopContext(Graph(f"loop{b.state.if_count}_body"), b.ctx, init_values)
        scope = dict(before)
        carried_slots = {}
        for g, data in zip(groups, ctx.carried):
            for kind_, key in g:
                if kind_ == _NAME:
                    scope[key] = data
                else:
                    carried_slots[key] = data
        if counter is not None:
            scope[counter[0]] = ctx.carried[-1]
        b._loops.append(loop)  # names the loop reads stay live inside its body (builder.live_after)
        try:
            with b.branch(ctx, scope):
                effects.set_slots(b, carried_slots)
                start_slots = effects.snapshot(b)
                b.exec_block(body)
                after = b.scope.snapshot()
                now = effects.snapshot(b)
                more = [(_NAME, n) for n in _changed_in_place(b, before, scope, after, names, counter, loop, assigned)]
                more += [(_SLOT, k) for k, v in now.items()
                         if k not in carried_slots and _differs(v, start_slots.get(k, table.initial.get(k)))]
                if more:  # an in-place write to a value the body does not assign: carry it too
                    entries.extend(more)
                    names.extend(key for kind_, key in more if kind_ == _NAME)
                    continue

                def value_after(e: tuple) -> Any:
                    return after[e[1]] if e[0] == _NAME else now.get(e[1], carried_slots[e[1]])

                parted = [e for g in groups for e in g[1:] if _differs(value_after(e), value_after(g[0]))]
                if parted:
                    apart.update(parted)
                    continue
                outs: list[Value] = []
                retry = False
                for g, data in zip(groups, ctx.carried):
                    e = g[0]
                    v = value_after(e)
                    what = f"loop-carried variable `{e[1]}`" if e[0] == _NAME else effects.describe_slot(e[1], [])
                    where = _assignment_of(e[1], body, loop) if e[0] == _NAME else header_at
                    if isinstance(v, Undefined):
                        raise b.error(f"{what} is not assigned on every path of the loop body", where)
                    if not (is_tensor(v) or is_number(v)):
                        raise b.error(f"{what} becomes {describe(v)} in the loop body; a runtime loop carries "
                                      "tensors and numbers only", where)
                    t = _as_tensor(b, v, data, header_at) if not is_tensor(v) else ctx.use(v)
                    if not types_agree(data.type, t.type):
                        if is_number(inits[e]) and typed.get(e) is None:
                            typed[e] = t  # a number before the loop: carry it with the body's type
                            retry = True
                            continue
                        raise b.error(
                            f"{what} is {data.type} before an iteration but {t.type} after it; a runtime loop's "
                            "body must keep the shape and dtype of every variable it carries", where)
                    outs.append(t)
                if retry:
                    continue
                if counter is not None:
                    step = b.const(counter[2], INDEX_DTYPE, header_at)
                    outs.append(b.emit("add", [ctx.carried[-1], step], {}, header_at)[0])
                if cond_expr is not None:
                    c = conditions.test_value(b, cond_expr)
                    if not is_tensor(c) or c.type.numel != 1:
                        raise b.error(f"the `while` condition `{b.text(cond_expr)}` must stay a one-element tensor "
                                      f"in the loop body, got {describe(c)}", cond_expr)
                    outs.append(ctx.use(c))
        finally:
            b._loops.pop()
        break
    ctx.graph.set_outputs(outs)
    ctx.complete_inputs()
    attrs: dict[str, Any] = {"body": ctx.graph, "kind": kind, "carried": len(init_values)}
    if note is not None:
        attrs["_note"] = f"{b.loc(loop)}: {note}"
    results = b.emit("Loop", [first, *ctx.operands], attrs, header_at, name=f"loop{b.state.if_count}")
    b.scope.restore(before)
    for g, v in zip(groups, results):
        for kind_, key in g:
            if kind_ == _NAME:
                b.bind_name(key, v)
            else:
                effects.set_slots(b, {key: v})
    line = loop.lineno
    for n in assigned:
        if n not in names and (counter is None or n != counter[0]):
            b.scope.bind(n, Undefined(n, f"`{n}` is assigned only inside the runtime loop at line {line}; "
                                         "assign it before the loop to carry it out"))
    if counter is not None:
        b.scope.bind(counter[0], Undefined(counter[0], f"the index `{counter[0]}` of the runtime loop at line "
                                                       f"{line} is not available after it"))
