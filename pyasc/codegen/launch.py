"""The launch plan: kernel order, where every graph value lives in GM, and If branches.

Device buffers: `in<i>` (the caller's tensor inputs), `out<j>` (the results),
`c<k>` (constant tensors, uploaded once), and `ws`, the workspace holding
every intermediate between kernels at the offset the optimiser's memory plan
gave it (intermediates with symbolic sizes, and a kernel's own scratch, are
laid out after the planned region with offsets computed at launch).

A `Launch` binds each GM parameter of a device kernel to a `Loc` (buffer,
byte offset); the offset reaches the kernel as the tiling field
`b_<param>`. An `IfStep` reads a one-element condition and runs one of two
step lists. Every size and offset is an integer expression over the dims,
so the host code evaluates the same formulas the compiler used.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence, Union

import numpy as np

from .. import ops
from .. import symbolic as sy
from ..ir import Graph, Value
from ..symbolic import IntLike
from .domain import dims, prod

WORKSPACE = "ws"


@dataclass(frozen=True)
class Loc:
    buffer: str
    offset: IntLike = 0
    nbytes: IntLike = 0

    def __str__(self) -> str:
        return f"{self.buffer}+{self.offset}" if self.offset != 0 else self.buffer


@dataclass
class Launch:
    kernel: int                      # index into DeviceModule.kernels
    args: dict[str, Loc]             # GM parameter -> where it points


@dataclass
class IfStep:
    cond: Loc | None                 # a one-element value in GM read back at launch, or
    cond_dtype: str
    then_steps: list["Step"]
    else_steps: list["Step"]
    predicate: IntLike | None = None  # a host predicate over the dims (a shape test under dynamic=True)


class LoopKind(enum.Enum):
    FOR = "for"        # `first` is the trip count
    WHILE = "while"    # `first` is the first condition, `cond` each next one


class SourceKind(enum.Enum):
    BUFFER = "buffer"  # a kernel wrote it (`value`: its Loc)
    INPUT = "input"    # the host returns an input (`value`: its index)
    CONST = "const"    # a constant (`value`: the array)


@dataclass
class OutputSource:
    """Where a graph output comes from."""

    kind: SourceKind
    value: Any


@dataclass
class LoopStep:
    """A runtime loop: the host runs `body_steps` `trip` times (kind "for") or while `cond` holds ("while").

    `first` is the trip count or the first condition: a host expression (`first_expr`, a shape or static
    count) or a one-element value in GM read back at launch (`first`). `init_steps` copy the initial
    carried values into the loop's buffers; the body ends with copies of the new carried values into
    them, and, for a while loop, `cond` is the condition it computed for the next iteration.
    """

    kind: LoopKind
    first: Loc | None
    first_dtype: str
    first_expr: IntLike | None
    init_steps: list["Step"]
    body_steps: list["Step"]
    cond: Loc | None = None
    cond_dtype: str = "bool"
    why: str = ""                    # why the loop is not run on the device (shown in the launch plan)


#: the symbol a device loop's kernel reads its trip count through (a tiling field over it): not a dim, the host
#: binds it to the trip count it computed or read back just before the launch
TRIP = "loop.trip"


@dataclass
class DeviceLoopStep:
    """A runtime `for` loop run inside one kernel (`launch`): each core loads its tiles of the carried values
    once, runs the body the trip count's times on chip and stores the final values once. `first`/`first_expr`
    is the trip count as in a `LoopStep`; the host passes it (at least 0) to the kernel as the symbol `TRIP`
    its tiling fields read. `why` says why the loop could run on the device (shown in the launch plan)."""

    first: Loc | None
    first_dtype: str
    first_expr: IntLike | None
    launch: Launch
    why: str = ""


Step = Union[Launch, IfStep, LoopStep, DeviceLoopStep]


def base_field(param: str) -> str:
    """The tiling field carrying a GM parameter's byte offset inside its buffer."""
    return f"b_{param}"


@dataclass
class LaunchPlan:
    steps: list[Step]
    inputs: list[Loc]                        # per tensor input of the graph (Data index order)
    outputs: list[Loc | None]                # per graph output; None: the host returns an input or constant
    output_sources: list[OutputSource]       # per output
    consts: dict[str, np.ndarray]            # constant buffers
    workspace_bytes: IntLike
    dim_symbols: list[str]                   # the dims the plan's expressions use, in host-argument order

    def text(self, kernel_names: Sequence[str]) -> str:
        lines = [f"workspace: {self.workspace_bytes} B; dims: {', '.join(self.dim_symbols) or '(static)'}"]
        lines += [f"input {i}: {loc} ({loc.nbytes} B)" for i, loc in enumerate(self.inputs)]
        lines += [f"const {name}: {arr.dtype}{list(arr.shape)}" for name, arr in self.consts.items()]
        lines += _step_lines(self.steps, kernel_names, "")
        for j, src in enumerate(self.output_sources):
            what = src.value
            desc = {SourceKind.BUFFER: lambda: str(what), SourceKind.INPUT: lambda: f"input {what}",
                    SourceKind.CONST: lambda: f"constant {what.dtype}{list(what.shape)}"}[src.kind]()
            lines.append(f"output {j}: {desc}")
        return "\n".join(lines)


def _step_lines(steps: Sequence[Step], names: Sequence[str], indent: str) -> list[str]:
    out = []
    for s in steps:
        if isinstance(s, Launch):
            args = ", ".join(f"{p}={loc}" for p, loc in s.args.items())
            out.append(f"{indent}launch k{s.kernel} {names[s.kernel]}({args})")
        elif isinstance(s, DeviceLoopStep):
            first = f"host: {s.first_expr}" if s.first_expr is not None else f"{s.first} ({s.first_dtype})"
            out.append(f"{indent}repeat {first} times on the device:  # {s.why}")
            out += _step_lines([s.launch], names, indent + "  ")
        elif isinstance(s, LoopStep):
            out += _step_lines(s.init_steps, names, indent)
            first = f"host: {s.first_expr}" if s.first_expr is not None else f"{s.first} ({s.first_dtype})"
            if s.kind is LoopKind.FOR:
                out.append(f"{indent}repeat {first} times:" + (f"  # on the host: {s.why}" if s.why else ""))
            else:
                out.append(f"{indent}while {first} != 0, then {s.cond} ({s.cond_dtype}) != 0:"
                           + (f"  # on the host: {s.why}" if s.why else ""))
            out += _step_lines(s.body_steps, names, indent + "  ")
        else:
            test = f"{s.cond} ({s.cond_dtype}) != 0" if s.predicate is None else f"host: {s.predicate}"
            out.append(f"{indent}if {test}:")
            out += _step_lines(s.then_steps, names, indent + "  ")
            out.append(f"{indent}else:")
            out += _step_lines(s.else_steps, names, indent + "  ")
    return out


def value_nbytes(v: Value) -> IntLike:
    """GM bytes of a value: its storage (a blocked format holds padded fractals), else numel x itemsize."""
    stored = v.type.storage_nbytes if v.type.format != "ND" else None
    return stored if stored is not None else sy.mul(prod(dims(v.type.shape)), v.type.itemsize)


def align512(n: IntLike) -> IntLike:
    return sy.align_up(n, 512)


@dataclass(frozen=True)
class _Occupant:
    """A planned workspace range and the steps it is live: a buffer, or the region of an If's branches."""

    offset: int
    size: int
    first: int
    last: int

    def overlaps(self, other: "_Occupant") -> bool:
        return self.offset < other.offset + other.size and other.offset < self.offset + self.size


class Locator:
    """Where values of one graph scope live (the root graph, or an If branch inside its parent's scope).

    Aliasing (`alias`): a value whose bytes are a contiguous run of another value's (a reshape) can live
    inside it, with no launch, when nothing overwrites those bytes while it is read. Values outside the
    workspace (inputs, constants, results) and workspace values laid out at launch are never overwritten;
    a planned workspace buffer is safe when no other planned buffer sharing its bytes becomes live before
    the alias's last reader, and then counts as live until that reader (so aliases of aliases are
    checked against the extended lifetime). `fixed` values must stay where the plan put them (graph and
    branch outputs): they get a copy kernel instead — unless their source can be forwarded into their
    place (`forward`), when it is a kernel's output of the same bytes.
    """

    def __init__(self, locs: dict[Value, Loc], parent: "Locator | None" = None, plan: Any = None,
                 fixed: Iterable[Value] = (), results: Iterable[Value] = ()):
        self.locs = locs
        self.parent = parent
        self.fixed = frozenset(fixed)
        self.results = frozenset(results)        # values in a caller's result buffer (never overwritten)
        self._planned: dict[Value, _Occupant] = {}
        self._occupants: list[_Occupant] = []
        if plan is not None:
            for a in plan.assignments:
                occ = _Occupant(a.offset, a.size or a.nbytes, a.first, a.last)
                self._occupants.append(occ)
                if locs.get(a.value) == Loc(WORKSPACE, a.offset, a.nbytes):
                    self._planned[a.value] = occ
            for sub in plan.branch_plans.values():
                if sub.if_step is not None and sub.peak_bytes:
                    self._occupants.append(_Occupant(sub.base, sub.peak_bytes, sub.if_step, sub.if_step))
        self._until: dict[_Occupant, int] = {}   # planned buffer -> last step an alias of it is read

    def __getitem__(self, v: Value) -> Loc:
        return self.locs[v]

    def get(self, v: Value) -> Loc | None:
        return self.locs.get(v)

    def alias(self, value: Value, source: Value, byte_offset: IntLike, step: int, last_read: int) -> bool:
        """Let `value` (written at `step`, read until step `last_read`) live `byte_offset` bytes into
        `source`; returns False (and changes nothing) when that is not safe."""
        base = self.locs.get(source)
        if base is None:
            return False
        target = Loc(base.buffer, sy.add(base.offset, byte_offset), value_nbytes(value))
        if self.locs.get(value) == target:
            return True  # its source was forwarded into its place
        if value in self.fixed:
            return False
        occ = self._planned.get(source)
        if occ is not None:
            until = self._until.get(occ, occ.last)
            if any(o is not occ and o.overlaps(occ) and until < o.first <= last_read for o in self._occupants):
                return False
            self._until[occ] = max(until, last_read)
            self._planned[value] = occ
        self.locs[value] = target
        return True

    def forward(self, value: Value, into: Value) -> bool:
        """Let `value` be written straight into the result buffer of `into`, a same-bytes alias of it
        (`return y.reshape(...)`): then neither needs a launch of its own. Only a kernel's output that is
        not itself pinned elsewhere moves; it is pinned there from now on."""
        dst = self.locs.get(into)
        if into not in self.results or value in self.fixed or dst is None:
            return False
        if value_nbytes(value) != value_nbytes(into):
            return False
        self.locs[value] = dst
        self._planned.pop(value, None)
        self.fixed = self.fixed | {value}
        self.results = self.results | {value}
        return True


class WorkspaceLayout:
    """Offsets in the workspace: planned ones from the memory plan, then a growing tail for the rest."""

    def __init__(self, planned_peak: int):
        self.end: IntLike = planned_peak

    def take(self, nbytes: IntLike) -> IntLike:
        off = self.end
        self.end = sy.add(self.end, align512(nbytes))
        return off


def root_locations(graph: Graph, memory_plan: Any, layout: WorkspaceLayout, consts: dict[str, np.ndarray],
                   produced: Sequence[Value]) -> tuple[Locator, list[Loc], list[OutputSource]]:
    locs: dict[Value, Loc] = {}
    inputs = []
    for n in graph.inputs:
        loc = Loc(f"in{n.attrs['index']}", 0, value_nbytes(n.out()))
        locs[n.out()] = loc
        inputs.append(loc)
    sources: list[OutputSource] = []
    results: list[Value] = []
    for j, v in enumerate(graph.outputs):
        if v.node.op == "Data":
            sources.append(OutputSource(SourceKind.INPUT, v.node.attrs["index"]))
        elif v.node.op == "Const":
            sources.append(OutputSource(SourceKind.CONST, v.node.attrs["value"]))
        elif v in locs:
            sources.append(OutputSource(SourceKind.BUFFER, locs[v]))     # the same value returned twice
        else:
            locs[v] = Loc(f"out{j}", 0, value_nbytes(v))
            sources.append(OutputSource(SourceKind.BUFFER, locs[v]))
            results.append(v)
    _place_intermediates(graph, memory_plan, locs, layout, consts, produced)
    return Locator(locs, None, memory_plan, graph.outputs, results), inputs, sources


def branch_locations(branch: Graph, if_inputs: Sequence[Value], if_outputs: Sequence[Value], parent: Locator,
                     plan: Any, layout: WorkspaceLayout, consts: dict[str, np.ndarray],
                     produced: Sequence[Value]) -> tuple[Locator, list[int]]:
    """Locations inside an If branch; also the branch outputs that need a copy into the If's output
    (a branch that returns one of its inputs or a constant)."""
    locs: dict[Value, Loc] = {}
    for n in branch.inputs:
        locs[n.out()] = parent[if_inputs[n.attrs["index"] + 1]]
    copies: list[int] = []
    for j, v in enumerate(branch.outputs):
        target = parent[if_outputs[j]]
        if v.node.op in ("Data", "Const") or v in locs:
            copies.append(j)
        else:
            locs[v] = target
    _place_intermediates(branch, plan, locs, layout, consts, produced)
    return Locator(locs, parent, plan, branch.outputs), copies


def loop_locations(body: Graph, loop_inputs: Sequence[Value], loop_outputs: Sequence[Value], carried: int,
                   parent: Locator, plan: Any, layout: WorkspaceLayout, consts: dict[str, np.ndarray],
                   produced: Sequence[Value], direct: dict[Value, Loc]) -> Locator:
    """Locations inside a Loop body: carried Data inputs live in the loop's output buffers (updated by a copy
    at the end of every iteration), the others where the parent keeps them; the body's own outputs get
    buffers of their own, so no kernel of an iteration overwrites a carried value another still reads --
    except `direct` ones, written in place because nothing reads the old value after their kernel."""
    locs: dict[Value, Loc] = dict(direct)
    for n in body.inputs:
        i = n.attrs["index"]
        locs[n.out()] = parent[loop_outputs[i]] if i < carried else parent[loop_inputs[i + 1]]
    _place_intermediates(body, plan, locs, layout, consts, produced)
    return Locator(locs, parent, plan, fixed=direct)


def _place_intermediates(graph: Graph, plan: Any, locs: dict[Value, Loc], layout: WorkspaceLayout,
                         consts: dict[str, np.ndarray], produced: Sequence[Value]) -> None:
    """Planned intermediates at their memory-plan offsets; constant tensors in their own buffers; every
    other value a kernel of this graph writes (symbolic sizes, values nobody reads) in the workspace tail."""
    if plan is not None:
        for a in plan.assignments:
            if a.value not in locs:
                locs[a.value] = Loc(WORKSPACE, a.offset, a.nbytes)
    # a constant a kernel reads is an immediate when it has one element, unless an If passes it to its
    # branches (their kernels read it as an input, from GM), or a cube kernel reads it (a matmul's bias of one
    # column, `x @ w + b` with w (K, 1): its epilogue loads the bias from GM)
    if_inputs = {v for n in graph.nodes if n.subgraphs for v in n.inputs}
    cube_inputs = {v for n in graph.nodes if ops.get(n.op).cube_operands for v in n.inputs}
    for n in graph.nodes:
        if n.op == "Const" and (n.outputs[0].numel != 1 or n.out() in if_inputs or n.out() in cube_inputs):
            name = f"c{len(consts)}"
            consts[name] = np.ascontiguousarray(n.attrs["value"])
            locs[n.out()] = Loc(name, 0, int(n.attrs["value"].nbytes))
    for v in produced:
        if v not in locs:
            locs[v] = Loc(WORKSPACE, layout.take(value_nbytes(v)), value_nbytes(v))


def dim_symbols(exprs: Iterable[IntLike]) -> list[str]:
    out: set[str] = set()
    for e in exprs:
        out |= sy.free_symbols(e)
    out.discard(TRIP)  # bound by the host code itself, at a device loop's launch
    return sorted(out)


def evaluate_fields(fields: Mapping[str, IntLike], args: Mapping[str, Loc], dims_env: Mapping[str, int]) -> dict[str, int]:
    """Python evaluation of a launch's tiling data: the reference the host code is checked against."""
    out = {name: sy.evaluate(e, dims_env) for name, e in fields.items()}
    for p, loc in args.items():
        out[base_field(p)] = sy.evaluate(loc.offset, dims_env)
    return out


def reference_launches(plan: LaunchPlan, kernels: Sequence[Any], env: Mapping[str, int],
                       cond: Any = lambda loc, dtype: True) -> list[tuple[int, int, dict[str, int]]]:
    """The launches the host code makes, computed in Python: (kernel, blocks, tiling data) in order.

    The reference the LLVM host module is tested against; `cond(loc, dtype)` answers If conditions.
    """
    out: list[tuple[int, int, dict[str, int]]] = []

    def launch(s: Launch, env: Mapping[str, int]) -> None:
        k = kernels[s.kernel]
        blocks = sy.evaluate(k.blocks, env)
        if blocks > 0:
            out.append((s.kernel, blocks, evaluate_fields(k.fields, s.args, env)))

    def walk(steps: Sequence[Step]) -> None:
        for s in steps:
            if isinstance(s, Launch):
                launch(s, env)
            elif isinstance(s, DeviceLoopStep):
                trip = sy.evaluate(s.first_expr, env) if s.first_expr is not None else int(cond(s.first, s.first_dtype))
                launch(s.launch, {**env, TRIP: max(trip, 0)})
            elif isinstance(s, LoopStep):
                walk(s.init_steps)
                if s.kind is LoopKind.FOR:
                    trip = sy.evaluate(s.first_expr, env) if s.first_expr is not None else \
                        int(cond(s.first, s.first_dtype))
                    for _ in range(max(trip, 0)):
                        walk(s.body_steps)
                else:
                    go = sy.evaluate(s.first_expr, env) != 0 if s.first_expr is not None else \
                        bool(cond(s.first, s.first_dtype))
                    while go:
                        walk(s.body_steps)
                        go = bool(cond(s.cond, s.cond_dtype))
            else:
                taken = cond(s.cond, s.cond_dtype) if s.predicate is None else sy.evaluate(s.predicate, env) != 0
                walk(s.then_steps if taken else s.else_steps)

    walk(plan.steps)
    return out
