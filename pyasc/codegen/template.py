"""The template protocol: what every template declares, and the parts they all share.

A template lowers one kind of device kernel (a pointwise or row kernel, a column reduction, the cube's
matmul, a data move, a format conversion, a transpose, a slice write). It is a `Template` record of four
functions, registered by name in `templates.TEMPLATES`:

    analyze(job)                   -> the analyses it can lower the job's subject with (one per mode), or
                                      raises `Unsupported` saying why not
    tilings(analysis, job)         -> its tiling records worth scoring (each fits the chip)
    schedule(analysis, tiling, chip) -> the TileSchedule of one candidate
    symbols(analysis)              -> the dims a tiling's score depends on

`route.route` decides which template lowers each kernel plan (a `Job` each, possibly several launches for
one plan), and `lower.lower` is the one driver: analyse, list tilings, choose (`tiling.choose`), plan the
flags and emit. Every tiling record derives from `Tiling`, which holds the slot logic all of them share:
`buffer_num` ping-pong slots for buffers that rotate with the tile index, one for the others.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from .. import symbolic as sy
from ..ir import Value
from ..symbolic import IntLike
from ..target import Chip
from .schedule import TileSchedule


class Unsupported(Exception):
    """A template cannot lower this subject (the message says why; the driver reports it at the user's line)."""


class Tiling:
    """Base of every template's tiling record (a frozen dataclass declaring `buffer_num` and `cores` among its
    fields): the slot rules written once."""

    buffer_num: int      # slots of the buffers that rotate with the tile index (1: serial tiles)
    cores: int           # the most cores the launch may use

    def slots(self, rotating: bool = True) -> int:
        """Slots of a buffer: `buffer_num` when it rotates with the tiles, else one."""
        return self.buffer_num if rotating else 1

    def slot(self, index: "str | IntLike") -> IntLike:
        """The slot a rotating buffer uses at tile `index` (a loop variable's name or an expression)."""
        if self.buffer_num <= 1:
            return 0
        return sy.mod(sy.sym(index) if isinstance(index, str) else index, self.buffer_num)

    def describe(self) -> str:
        return str(self)


def buffer_nums(cap: int, most: int | None = None) -> list[int]:
    """The slot counts worth trying under the kernel's `buffer_num` cap (single-buffered is always one)."""
    top = cap if most is None else min(most, cap)
    return sorted({1, max(1, top)})


def ub_slot(nbytes: int, chip: Chip) -> int:
    """Bytes of a UB buffer slot holding `nbytes`: whole UB blocks, at least one."""
    return -(-max(1, nbytes) // chip.ub_align) * chip.ub_align


def align_up(n: int, a: int) -> int:
    return -(-n // a) * a


def fits_memories(footprint: Sequence[tuple], chip: Chip) -> bool:
    """Whether on-chip buffers fit their memories: rows (name, space, dtype, bytes per slot, slots, role), each
    space's slots summed and aligned."""
    used: dict[str, int] = {}
    for _, space, _, nbytes, slots, _ in footprint:
        used[space] = used.get(space, 0) + align_up(nbytes * slots, chip.space_align(space))
    return all(n <= chip.space_bytes(space) for space, n in used.items())


@dataclass
class Job:
    """One device kernel to lower: which template, the subject it lowers (a KernelGraph, a CubeMatmul, ...),
    the graph values bound to its GM inputs and outputs, and where a failure is reported (the op and the
    user's line)."""

    template: str
    label: str
    subject: Any
    inputs: Sequence[Value]
    outputs: Sequence[Value]
    plan: Any = None                     # the optimiser's KernelPlan (None for a copy the launch plan added)
    options: dict[str, Any] = field(default_factory=dict)   # template-specific (rows of a row kernel, ...)
    op: str = "copy"                     # the op a failure names
    loc: Any = None                      # and its source location
    checked: "Checked | None" = None     # the router's check of the job (`lower` reuses what it made)


@dataclass
class Checked:
    """What a router made checking that a job's template tiles it: the template's analyses, and each one's
    tilings for this chip, `buffer_num` cap and core count. The driver (`lower`) takes them instead of making
    them again when it asks for the same."""

    chip: Chip
    buffer_num: int
    cores: int
    analyses: list[Any]
    tilings: list[list[Tiling]]

    def tilings_of(self, analysis: Any, chip: Chip, buffer_num: int, cores: int) -> list[Tiling] | None:
        """The tilings made for `analysis` (one of `analyses`) with these arguments, or None."""
        if chip is not self.chip or buffer_num != self.buffer_num or cores != self.cores:
            return None
        return next((t for a, t in zip(self.analyses, self.tilings) if a is analysis), None)


@dataclass(frozen=True)
class Template:
    """One template (see the module docstring). `ops` are the registry ops it lowers whole when a kernel
    is one of them (`handles` says whether it takes that kernel); `admits` rejects an analysis the chip
    cannot run whatever the tiling (a reason, or ""); `need` is the on-chip bytes of a tiling (fusion's
    capacity asks for the smallest); `bound(analysis, tiling, chip, dims)` is a lower bound on the score
    of the tiling's schedule for those dims, never above it (the tiler then skips the candidates it rules
    out, `tiling.Ranking`); `floor` (with a bound) a cheaper lower bound never above it, computed for every
    candidate so that `bound` is computed only where the floor does not rule the candidate out, or a tuple of
    such floors, coarsest first, each never above the next (`template_floors`); `same(analysis, tiling, chip,
    dims)` another candidate whose score the tiling's is known to equal, or None (the tiler then scores only one
    of them)."""

    name: str
    core_type: str
    tiling_type: type
    analyze: Callable[[Job, Chip], list[Any]]
    tilings: Callable[[Any, Chip, int, int], list[Tiling]]
    schedule: Callable[[Any, Tiling, Chip], TileSchedule]
    symbols: Callable[[Any], set[str]]
    need: Callable[[Any, Tiling, Chip], int] | None = None
    bound: Callable[[Any, Tiling, Chip, Mapping[str, int]], float] | None = None
    # cheaper, never above bound (or several, coarsest first)
    floor: Callable[[Any, Tiling, Chip, Mapping[str, int]], float] | tuple[Callable, ...] | None = None
    same: Callable[[Any, Tiling, Chip, Mapping[str, int]], Tiling | None] | None = None
    admits: Callable[[Any, Chip], str] | None = None
    ops: frozenset[str] = frozenset()
    handles: Callable[[Any], bool] | None = None


def template_floors(t: Template) -> tuple[Callable[[Any, Tiling, Chip, Mapping[str, int]], float], ...]:
    """A template's floors under its bound, coarsest first (none, one, or the tuple it gives)."""
    if t.floor is None:
        return ()
    return t.floor if isinstance(t.floor, tuple) else (t.floor,)


def free_symbols(exprs: Sequence[Any]) -> set[str]:
    out: set[str] = set()
    for e in exprs:
        out |= sy.free_symbols(e)
    return out
