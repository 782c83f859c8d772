"""Decoding a program once per chip: each instruction becomes a handler closure, reused on every launch.

A handler is `h(group) -> next pc | None | control code`; what it needs from a
launch (GM buffers, tiling data, on-chip arrays, the sanitizer) it reads from
the group, so one decoded program serves every launch. The decoded form is
cached on the program and dropped when the program changes.
"""
from __future__ import annotations

from typing import Any, Callable

from . import isa
from .chips import ChipConfig
from .handlers import compile_instruction
from .program import Program, Structure
from .tripcount import trip_loop

DATA_READS: tuple[type, ...] = (isa.ScalarLoad,)  # instructions that load a register from on-chip memory


class Decoded:
    """A program decoded for one chip: handlers, listing texts, pipes and counting names."""

    def __init__(self, program: Program, chip: ChipConfig, structure: Structure):
        self.program = program
        self.name = program.name
        self.core_type = program.core_type
        self.chip = chip
        self.structure = structure
        instrs = program.instructions
        self.texts: list[str] = [i.text() for i in instrs]
        self.pipes: list[str] = [i.pipe for i in instrs]
        self.mnemonics: list[str] = [mnemonic(i) for i in instrs]
        self.code: list[Callable[[Any], Any]] = [compile_instruction(self, k, i) for k, i in enumerate(instrs)]
        # a register loaded from on-chip data makes control flow and addresses depend on the data,
        # so such a program is never replayed (replay.py)
        self.data_dependent = any(isinstance(i, DATA_READS) for i in instrs)
        # the kernel arguments it may store to (the others it only reads: their buffers may be read-only)
        # the loop whose trip count is a tiling field, when a recording at one count gives the replay at another
        self.trip_loop = trip_loop(program, structure)
        self.gm_stores = frozenset(d.arg for d in (getattr(i, "dst", None) for i in instrs)
                                   if isinstance(d, isa.Mem) and d.space == "GM")


def decode(program: Program, chip: ChipConfig) -> Decoded:
    """The decoded form of `program` for `chip` (cached on the program until it changes)."""
    key = program.revision()
    cache = program._decoded
    hit = cache.get(id(chip))
    if hit is not None and hit[0] == key and hit[1].chip is chip:
        return hit[1]
    dec = Decoded(program, chip, program.validate())
    cache[id(chip)] = (key, dec)
    return dec


def mnemonic(instr: isa.Instr) -> str:
    """Name used in instruction counts: the op, refined by function or path."""
    fn = getattr(instr, "fn", None)
    if fn is not None:
        return f"{instr.OP}.{fn}"
    if isinstance(instr, isa.Copy):
        return f"copy.{instr.path}"
    if isinstance(instr, isa.LoadL0):
        return f"load_l0.{instr.dst.space.lower()}"
    return instr.OP
