"""The tile schedule: what one device kernel does, between a KernelPlan and a simulator Program.

A `TileSchedule` is plain data a template builds and later stages read:
- the core type, the GM parameters and the tiling fields (each an integer
  expression over the graph's dims, `pyasc.symbolic`), and the block count;
- the on-chip buffers: space, dtype, bytes per slot and slots (2 = ping-pong);
- a body of statements: `Loop`s, `When` (a guarded block) and `TileOp`s. A
  tile op is one chip instruction (its `pyasc.target` spec) and its operands;
  on-chip operands are `Ref(buffer, slot, offset)`, GM operands `GmRef(param,
  offset)`, sizes and offsets are integer expressions over the tiling fields,
  the core index `core`, the block count `blocks` and the loop variables.

Synchronisation is not part of a schedule: `sync.plan_sync` derives it from
the pipes and the buffers each op reads and writes, and `emit` applies it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence, Union

from .. import symbolic as sy
from ..symbolic import IntLike
from ..target import InstrSpec

#: symbols every kernel may use besides its tiling fields and loop variables
CORE = "core"          # this core's index, 0 .. blocks-1
BLOCKS = "blocks"      # the number of cores the kernel was launched on
GROUP = "group"        # in a mixed launch: the group (one AIC and its AIVs) this core belongs to
SUB = "sub"            # in a mixed launch: an AIV's index inside its group (0 on the AIC)


@dataclass(frozen=True)
class Buffer:
    name: str
    space: str            # "UB", "L1", "L0A", "L0B", "L0C", "BT"
    dtype: str
    slot_bytes: int       # bytes of one slot, a multiple of the space's alignment
    slots: int = 1        # 2: ping-pong, the slot chosen per access (Ref.slot)
    role: str = ""        # a readable note: "in x", "out y", "scratch", "acc"

    @property
    def nbytes(self) -> int:
        return self.slot_bytes * self.slots


@dataclass(frozen=True)
class Ref:
    """An on-chip operand: byte `offset` inside slot `slot` of `buffer`."""

    buffer: str
    slot: IntLike = 0
    offset: IntLike = 0

    def at(self, offset: IntLike) -> "Ref":
        return Ref(self.buffer, self.slot, sy.add(self.offset, offset))

    def __str__(self) -> str:
        s = f"{self.buffer}[{self.slot}]" if self.slot != 0 else self.buffer
        return s if self.offset == 0 else f"{s}+{self.offset}"


@dataclass(frozen=True)
class GmRef:
    """A GM operand: byte `offset` inside kernel parameter `param`."""

    param: str
    offset: IntLike = 0

    def at(self, offset: IntLike) -> "GmRef":
        return GmRef(self.param, sy.add(self.offset, offset))

    def __str__(self) -> str:
        return f"{self.param}+{self.offset}" if self.offset != 0 else self.param


Operand = Union[Ref, GmRef]


@dataclass
class TileOp:
    """One chip instruction in a schedule: its spec, its operands, and what derives from them (`tileops.tile`
    builds it): the pipe it runs on and the on-chip operands it reads and writes, which the sync analysis uses."""

    spec: InstrSpec
    args: dict[str, Any]
    pipe: str
    reads: tuple[Ref, ...] = ()
    writes: tuple[Ref, ...] = ()
    note: str = ""        # which graph node it comes from, for the listing

    @property
    def instr(self) -> str:
        """The instruction's name."""
        return self.spec.op

    def __str__(self) -> str:
        parts = []
        for k, v in self.args.items():
            if v is None or v is False:
                continue
            parts.append(f"{k}={v}")
        text = f"{self.pipe:<4} {self.instr}({', '.join(parts)})"
        return f"{text}  # {self.note}" if self.note else text


@dataclass
class Loop:
    var: str
    start: IntLike
    stop: IntLike
    step: IntLike = 1
    body: list["Stmt"] = field(default_factory=list)
    note: str = ""

    def trip_count(self) -> IntLike:
        return sy.max_(0, sy.ceildiv(sy.add(self.stop, sy.mul(-1, self.start)), self.step))


@dataclass
class Let:
    """Name a value for the statements after it in the same block (and blocks inside them)."""

    var: str
    value: IntLike

    def __str__(self) -> str:
        return f"S    {self.var} = {self.value}"


@dataclass
class When:
    """A block that runs when `cond` != 0 (e.g. the first K step of a matmul)."""

    cond: IntLike
    body: list["Stmt"] = field(default_factory=list)


Stmt = Union[TileOp, Loop, When, Let]


@dataclass(frozen=True)
class GmParam:
    """A kernel GM parameter: what it is bound to is the launch plan's business."""

    name: str
    dtype: str
    role: str             # "in", "out" (or "inout" for accumulators)


@dataclass
class TileSchedule:
    name: str
    core_type: str                       # "aiv" or "aic"
    params: list[GmParam]
    fields: dict[str, IntLike]           # tiling field -> expression over dims
    blocks: IntLike                      # cores to launch (over dims); 0: nothing to do
    buffers: list[Buffer]
    body: list[Stmt]
    notes: list[str] = field(default_factory=list)
    scratch: dict[str, IntLike] = field(default_factory=dict)   # GM scratch parameter -> bytes (over dims)
    # the template's estimate of the fraction of its GM reads that miss in L2 (come from HBM), given the
    # evaluated tiling fields and the block count; None: every read is an HBM read (a streaming kernel)
    l2_miss: Callable[[Mapping[str, int], int], float] | None = field(default=None, repr=False, compare=False)
    # GM parameters whose lines the L2 holds (a launch's workspace, an operand every core reads whole): the
    # fraction of each one's bytes that reach HBM (reads that miss; writes that dirty a line not dirty yet),
    # given the evaluated fields and the block count. Their moves follow it instead of `l2_miss` (reads) or
    # all reaching HBM (writes)
    l2_resident: Callable[[Mapping[str, int], int], Mapping[str, float]] | None = \
        field(default=None, repr=False, compare=False)

    def buffer(self, name: str) -> Buffer:
        for b in self.buffers:
            if b.name == name:
                return b
        raise KeyError(f"schedule {self.name!r} has no buffer {name!r}")

    def ops(self) -> Iterator[TileOp]:
        yield from iter_ops(self.body)

    def text(self) -> str:
        """The schedule as a readable stage: fields, buffers, then the loop nest."""
        lines = [f"schedule {self.name} ({self.core_type}), blocks = {self.blocks}"]
        lines.append("  params: " + ", ".join(f"{p.name}:{p.dtype}({p.role})" for p in self.params))
        for name, expr in self.fields.items():
            lines.append(f"  field {name} = {expr}")
        for b in self.buffers:
            lines.append(f"  buffer {b.name}: {b.space} {b.dtype} {b.slot_bytes} B x {b.slots}"
                         + (f"  ({b.role})" if b.role else ""))
        lines.extend(_body_lines(self.body, "  "))
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)


def addresses(params: set[str] | frozenset[str]) -> Callable[[TileOp], bool]:
    """Picks the tile ops with a GM operand in one of `params` (a mixed launch's channels: where its hand-overs
    and its drain start)."""
    return lambda op: any(isinstance(x, GmRef) and x.param in params for x in op.args.values())


def iter_ops(body: Sequence[Stmt]) -> Iterator[TileOp]:
    for s in body:
        if isinstance(s, TileOp):
            yield s
        elif isinstance(s, (Loop, When)):
            yield from iter_ops(s.body)


def _body_lines(body: Sequence[Stmt], indent: str) -> list[str]:
    lines: list[str] = []
    for s in body:
        if isinstance(s, Loop):
            lines.append(f"{indent}for {s.var} in range({s.start}, {s.stop}"
                         + (f", {s.step}" if s.step != 1 else "") + "):" + (f"  # {s.note}" if s.note else ""))
            lines.extend(_body_lines(s.body, indent + "  "))
        elif isinstance(s, When):
            lines.append(f"{indent}if {s.cond}:")
            lines.extend(_body_lines(s.body, indent + "  "))
        else:
            lines.append(f"{indent}{s}")
    return lines


@dataclass(frozen=True)
class Channel:
    """A GM workspace through which one side of a mixed launch hands tiles to the other: per group, `slots`
    rotating tiles of `slot_bytes` (over dims). The producer's k-th write and the consumer's k-th read are the
    same tile (both sides address the slots); `cross_sync` plans the cross-core flags that order them."""

    param: str              # the GM scratch parameter both sides address
    producer: str           # "aic" or "aiv"
    slot_bytes: IntLike
    slots: int


@dataclass
class MixedSchedule:
    """A mixed launch: a cube-core schedule and a vector-core schedule run together in groups of one AIC and
    its AIVs, exchanging tiles through `channels`. `blocks` counts groups; `steps` the tiles one group's sides
    hand each other in turn (how deep its two-stage pipeline runs, for the cost estimate), `round_trip` whether
    they come back; `fields` and
    `scratch` are both sides' (one tiling record, one workspace)."""

    name: str
    aic: TileSchedule
    aiv: TileSchedule
    channels: list[Channel]
    blocks: IntLike
    notes: list[str] = field(default_factory=list)
    core_type: str = "mix"
    steps: IntLike = 1
    #: 0: tiles flow one way (cube to vector). n > 0: each tile goes round (the cube's result through the vector
    #: cores and back to the cube), n tiles in flight: every step waits for the one n steps before it
    round_trip: int = 0
    #: vector work the AIVs finish before the cube starts (a prologue computing the cube's A operand, behind an
    #: all-core barrier): already in `aiv`'s body, here as a schedule of its own for the cost estimate
    prologue: "TileSchedule | None" = None
    #: the tiles of `steps` one cube block hands over back to back (its column chunks)
    chunks: int = 1

    @property
    def sides(self) -> tuple[TileSchedule, TileSchedule]:
        return (self.aic, self.aiv)

    @property
    def fields(self) -> dict[str, IntLike]:
        return {**self.aic.fields, **self.aiv.fields}

    @property
    def scratch(self) -> dict[str, IntLike]:
        return {**self.aic.scratch, **self.aiv.scratch}

    def text(self) -> str:
        lines = [f"mixed schedule {self.name}, groups = {self.blocks}"]
        lines += [f"  channel {c.param}: {c.producer} -> {'aiv' if c.producer == 'aic' else 'aic'}, {c.slots} x "
                  f"{c.slot_bytes} B per group" for c in self.channels]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines + [self.aic.text(), self.aiv.text()])


AnySchedule = Union[TileSchedule, MixedSchedule]
