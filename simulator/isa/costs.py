"""What a vector instruction costs: its cost class, and the passes of the decomposition when the 910B lacks it.

A vector instruction runs `vector_startup_cycles + repeats * class cycles`
(the cycles per repeat of each class are in the chip config). Instructions
the 910B's vector unit does not have are run functionally as the emulator's
own (exact) operation, but charged what the hardware's decomposition into
instructions it has would cost: one start-up and one set of repeats per pass,
each pass over elements of `width` bytes (0: the instruction's own widest
operand). The table is data; simulator/README.md lists it.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from .base import VBINARY_COST, VUNARY_COST

INT16_32 = frozenset({"int16", "int32"})
INT8 = frozenset({"int8", "uint8"})
FLOATS = frozenset({"float16", "float32", "bfloat16"})
ARITH = ("add", "sub", "mul", "max", "min")


class Pass(NamedTuple):
    """One hardware instruction of a decomposition: its cost class and the element width it works on."""

    cls: str
    width: int = 0


class Decomposition(NamedTuple):
    """Instructions (op, one of fns, one of dtypes) the 910B runs as `passes`, and why."""

    op: str
    fns: tuple[str, ...]
    dtypes: frozenset
    passes: tuple[Pass, ...]
    why: str


_TO_F32 = Pass("simple", 4)
_DIV_INT = (_TO_F32, _TO_F32, Pass("complex", 4), _TO_F32)
_DIV_FLOAT = (Pass("complex"), Pass("simple"), Pass("simple"))
_VIA_F16 = Pass("simple", 2)

DECOMPOSITIONS: tuple[Decomposition, ...] = (
    Decomposition("vbinary", ("floordiv",), INT16_32, _DIV_INT,
                  "no integer division: both operands cast to float32, divided, cast back rounding down"),
    Decomposition("vbinary", ("mod",), INT16_32, _DIV_INT + (Pass("binary", 4), Pass("binary", 4)),
                  "no integer division: a - (a // b) * b through float32"),
    Decomposition("vscalar", ("floordiv",), INT16_32, _DIV_INT[1:],
                  "no integer division: the vector cast to float32, divided, cast back rounding down"),
    Decomposition("vscalar", ("mod",), INT16_32, _DIV_INT[1:] + (Pass("binary", 4), Pass("binary", 4)),
                  "no integer division: a - (a // b) * b through float32"),
    Decomposition("vbinary", ("floordiv",), FLOATS - {"bfloat16"}, _DIV_FLOAT,
                  "no floor division: divide, cast to an integer rounding down, cast back"),
    Decomposition("vbinary", ("mod",), FLOATS - {"bfloat16"}, _DIV_FLOAT + (Pass("binary"), Pass("binary")),
                  "no remainder: a - floor(a / b) * b"),
    Decomposition("vscalar", ("floordiv",), FLOATS - {"bfloat16"}, _DIV_FLOAT,
                  "no floor division: divide, cast to an integer rounding down, cast back"),
    Decomposition("vscalar", ("mod",), FLOATS - {"bfloat16"}, _DIV_FLOAT + (Pass("binary"), Pass("binary")),
                  "no remainder: a - floor(a / b) * b"),
    Decomposition("vbinary", ARITH, INT8, (_VIA_F16, _VIA_F16, Pass("binary", 2), _VIA_F16),
                  "no 8-bit arithmetic: both operands cast to float16, computed, cast back"),
    Decomposition("vscalar", ARITH, INT8, (_VIA_F16, Pass("simple", 2), _VIA_F16),
                  "no 8-bit arithmetic: cast to float16, computed, cast back"),
    Decomposition("vcompare", ("lt", "le", "gt", "ge", "eq", "ne"), INT8, (_VIA_F16, _VIA_F16, Pass("binary", 2)),
                  "no 8-bit compare: both operands cast to float16 first"),
    Decomposition("vbinary", ("xor",), frozenset({"int8", "uint8", "int16", "int32", "bool"}),
                  (Pass("binary"), Pass("binary"), Pass("simple"), Pass("binary")),
                  "no xor: (a | b) & ~(a & b)"),
    Decomposition("vunary", ("sign",), FLOATS - {"bfloat16"} | INT16_32, (Pass("binary"), Pass("binary"),
                                                                         Pass("binary")),
                  "no sign: two compares and a select"),
)

def _bf16_via_float32() -> tuple[Decomposition, ...]:
    """bfloat16 has no arithmetic of its own on the 910B vector unit: through float32 (cast in, compute, cast out)."""
    bf = frozenset({"bfloat16"})
    out = []
    for op, fns, ins in (("vbinary", VBINARY_COST, 2), ("vscalar", VBINARY_COST, 1), ("vunary", VUNARY_COST, 1)):
        for fn, cls in fns.items():
            out.append(Decomposition(op, (fn,), bf, (_TO_F32,) * ins + (Pass(cls, 4), _TO_F32),
                                     "no bfloat16 arithmetic: cast to float32, compute, cast back"))
    out.append(Decomposition("vcompare", ("lt", "le", "gt", "ge", "eq", "ne"), bf, (_TO_F32, _TO_F32, Pass("binary", 4)),
                             "no bfloat16 compare: both operands cast to float32 first"))
    out.append(Decomposition("vreduce", ("sum", "max", "min"), bf, (_TO_F32, Pass("binary", 4)),
                             "no bfloat16 reduction: cast to float32 first"))
    return tuple(out)


DECOMPOSITIONS = DECOMPOSITIONS + _bf16_via_float32()

_BY_KEY: dict[tuple[str, str, str], tuple[Pass, ...]] = {
    (d.op, fn, dt): d.passes for d in DECOMPOSITIONS for fn in d.fns for dt in d.dtypes
}

def cost_class(instr: Any) -> str:
    """Cost class of a vector instruction as the hardware runs it natively."""
    op = instr.OP
    if op in ("vdup", "vcopy", "vcast", "vscalar", "vbroadcast"):
        return "simple"
    if op == "vgather":
        return "complex"  # one UB access per element: charged like a division
    if op in ("vsort32", "vmrgsort4"):
        return "composite"  # a sorting network / a 4-way merge over the repeat: the slowest vector class
    if op == "vbinary":
        return VBINARY_COST[instr.fn]
    if op == "vunary":
        cls = VUNARY_COST[instr.fn]
        if instr.fn in ("exp", "log") and instr.dtype == "float16":
            return "complex"  # fp16 exp/log take 4 cycles a repeat, fp32 only 2 (measured)
        return cls
    return "binary"  # compare, select, reduce, transpose


def passes(instr: Any) -> tuple[Pass, ...]:
    """The hardware instructions one emulator instruction costs (a single native pass for most)."""
    fn = getattr(instr, "fn", None)
    if fn is not None:
        hit = _BY_KEY.get((instr.OP, fn, getattr(instr, "dtype", "")))
        if hit is not None:
            return hit
    return (Pass(cost_class(instr)),)


def transpose_passes(itemsize: int, native_itemsize: int) -> tuple[Pass, ...]:
    """A transpose as the hardware runs it (on dims padded to whole blocks): native for elements of
    `native_itemsize` (16-bit on the 910B); elements twice as wide split into their halves, each half
    transposed, and interleaved again; elements half as wide cast up and back around one transpose."""
    if itemsize == native_itemsize:
        return (Pass("binary"),)
    if itemsize > native_itemsize:
        return (Pass("simple", itemsize), Pass("binary", native_itemsize), Pass("binary", native_itemsize),
                Pass("simple", itemsize))
    return (Pass("simple", native_itemsize), Pass("binary", native_itemsize), Pass("simple", native_itemsize))
