"""Each instruction described once, as data: its pipe, its memory operands, what charges it, its shape.

An instruction class declares one `SPEC` (an `InstrSpec`); everything else
derives from it and from the class's dataclass fields:
- the simulator: the static checks of memory operands (which spaces each may
  be in), the pipe an instruction runs on (a data move's from its path in
  `DATA_PATHS`), the chip config's cost field of a move's path, the builder
  methods of `Program` (normalised from the field types, `build.make`);
- the compiler (through `pyasc.target`): which on-chip operands a tile op
  reads and writes (the sync analysis), the cost model's charge (vector
  repeats of the work's `shape`, a move's bytes over its path, cube blocks),
  and how the emitter splits a vector instruction at the repeat limit.

Adding an instruction is its class with a SPEC, plus its handler.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, NamedTuple, Optional

from ..errors import ProgramError


class DataPath(NamedTuple):
    """A data-move path between two spaces: the pipe that runs it and its cost field in the chip config."""

    pipe: str
    cost: str


#: every data-move path of the chip: (source space, destination space) -> pipe and cost field
DATA_PATHS: dict[tuple[str, str], DataPath] = {
    ("GM", "UB"): DataPath("MTE2", "gm_to_ub"),
    ("UB", "GM"): DataPath("MTE3", "ub_to_gm"),
    ("GM", "L1"): DataPath("MTE2", "gm_to_l1"),
    ("L1", "L0A"): DataPath("MTE1", "l1_to_l0a"),
    ("L1", "L0B"): DataPath("MTE1", "l1_to_l0b"),
    ("L1", "BT"): DataPath("MTE1", "l1_to_bt"),
    ("L0C", "GM"): DataPath("FIX", "l0c_to_gm"),
}

READ, WRITE = "r", "w"


@dataclass(frozen=True)
class MemOperand:
    """A memory operand of an instruction: read or written, the spaces it may be in, its element type.

    `elem` names the field holding its element dtype, or is a dtype itself ("bool" for masks);
    `read_when` names an integer operand that, when nonzero, makes a written operand read too
    (mmad's accumulate reads the old L0C contents); `rows`: of a "rows" instruction, the operand laid out
    as rows x cols, rows `<name>_row_stride` elements apart (the other holds one value per row)."""

    name: str
    access: str
    spaces: tuple[str, ...]
    elem: str = "dtype"
    read_when: str = ""
    rows: bool = False


def R(name: str, *spaces: str, elem: str = "dtype", rows: bool = False) -> MemOperand:
    return MemOperand(name, READ, spaces or ("UB",), elem, rows=rows)


def W(name: str, *spaces: str, elem: str = "dtype", read_when: str = "", rows: bool = False) -> MemOperand:
    return MemOperand(name, WRITE, spaces or ("UB",), elem, read_when, rows)


#: what charges an instruction's time (the timing model's and the cost model's case)
UNITS = ("scalar", "control", "sync", "vector", "move", "cube")
#: how a vector instruction's work is laid out: elementwise over `count`, `rows` x `cols` rows, a
#: `rows` x `cols` transpose, or a gather (the emitter splits the first three at the repeat limit)
SHAPES = ("", "elementwise", "rows", "transpose", "gather")


@dataclass(frozen=True)
class InstrSpec:
    """The facts of one instruction (see the module docstring)."""

    pipe: str = "S"                              # "" for a data move: its path decides
    op: str = ""                                 # the instruction's name (set from its class)
    unit: str = "scalar"
    mems: tuple[MemOperand, ...] = ()
    shape: str = ""
    move: tuple[str, str] = ()                   # a data move's (source, destination) operands
    # bytes a data move carries, from its evaluated operands (name -> int or dtype) and the chip config
    nbytes: Optional[Callable[[Mapping[str, Any], Any], int]] = None
    # a GM transfer's (rows, bytes between row starts), from its evaluated operands: full bandwidth needs
    # every row on the chip's peak boundary; None: one row
    gm_rows: Optional[Callable[[Mapping[str, Any]], tuple[int, int]]] = None

    def __post_init__(self) -> None:
        assert self.unit in UNITS and self.shape in SHAPES, (self.unit, self.shape)

    def mem(self, name: str) -> MemOperand:
        for m in self.mems:
            if m.name == name:
                return m
        raise KeyError(name)

    def is_pipe_work(self) -> bool:
        """Work queued on a pipe other than the scalar unit's control: vector, moves, cube."""
        return self.unit in ("vector", "move", "cube")


def vector(shape: str, *mems: MemOperand) -> InstrSpec:
    return InstrSpec("V", mems=mems, unit="vector", shape=shape)


def move(src: str, dst: str, nbytes: Callable[[Mapping[str, Any], Any], int], *mems: MemOperand,
         gm_rows: Optional[Callable[[Mapping[str, Any]], tuple[int, int]]] = None) -> InstrSpec:
    return InstrSpec("", unit="move", mems=mems, move=(src, dst), nbytes=nbytes, gm_rows=gm_rows)


def path_of(src_space: str, dst_space: str) -> DataPath:
    try:
        return DATA_PATHS[(src_space, dst_space)]
    except KeyError:
        known = ", ".join(f"{a}->{b}" for a, b in DATA_PATHS)
        raise ProgramError(f"no data path {src_space}->{dst_space}; paths are {known}") from None
