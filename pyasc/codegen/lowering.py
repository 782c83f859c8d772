"""Lowering tables: registry op name -> how the vector unit computes it (data, like tinygrad's code_for_op).

Each entry says which instruction family computes the op, the simulator
function name, and which dtype the instruction runs in:
- "out": the op's output dtype (operands are cast to it first: numpy's
  promotion already decided it, e.g. int / int -> float32);
- "in": the operands' promoted dtype (comparisons compute in the operand
  dtype and produce bool).
`BOOL_FN` replaces a function on bool data, where numpy's arithmetic is logic
(True + True is True). Ops that only re-describe a tile (broadcast_to and
expand_dims inside a vector kernel, where every operand is already expanded
to the tile) are "identity"; expand_dims also moves its operand's axes away from numpy's trailing
alignment (`inserts_axes`, what `alignment.py` follows back to the inputs). Reductions have their own table.

An op that reaches a vector kernel without an entry is a located
CompileError naming the op and the kernel (`no_lowering`), never a KeyError.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import CompileError


@dataclass(frozen=True)
class VectorLowering:
    kind: str                  # "binary" | "unary" | "compare" | "select" | "cast" | "full" | "identity"
    fn: str = ""               # the simulator function (vbinary/vunary/vcompare fn)
    compute: str = "out"       # "out" or "in" (see the module docstring)
    float_only: bool = False   # integer operands are cast to the output float dtype (numpy promotes them)
    inserts_axes: bool = False  # places its operand's axes by an attribute, not numpy's trailing alignment


def _b(fn: str, **kw: object) -> VectorLowering:
    return VectorLowering("binary", fn, **kw)  # type: ignore[arg-type]


def _u(fn: str, **kw: object) -> VectorLowering:
    return VectorLowering("unary", fn, **kw)  # type: ignore[arg-type]


VECTOR: dict[str, VectorLowering] = {
    "add": _b("add"), "sub": _b("sub"), "mul": _b("mul"), "div": _b("div", float_only=True),
    "floordiv": _b("floordiv"), "mod": _b("mod"), "pow": _b("pow"),
    "maximum": _b("max"), "minimum": _b("min"),
    "bitwise_and": _b("and"), "bitwise_or": _b("or"), "bitwise_xor": _b("xor"),
    "lt": VectorLowering("compare", "lt", "in"), "le": VectorLowering("compare", "le", "in"),
    "gt": VectorLowering("compare", "gt", "in"), "ge": VectorLowering("compare", "ge", "in"),
    "eq": VectorLowering("compare", "eq", "in"), "ne": VectorLowering("compare", "ne", "in"),
    "neg": _u("neg"), "invert": _u("not"), "abs": _u("abs"), "relu": _u("relu"), "sign": _u("sign"),
    "floor": _u("floor"), "ceil": _u("ceil"),
    "exp": _u("exp", float_only=True), "log": _u("log", float_only=True), "sqrt": _u("sqrt", float_only=True),
    "rsqrt": _u("rsqrt", float_only=True), "reciprocal": _u("reciprocal", float_only=True),
    "sin": _u("sin", float_only=True), "cos": _u("cos", float_only=True), "tanh": _u("tanh", float_only=True),
    "sigmoid": _u("sigmoid", float_only=True),
    "where": VectorLowering("select"),
    "cast": VectorLowering("cast"),
    "full": VectorLowering("full"),
    "broadcast_to": VectorLowering("identity"),
    "expand_dims": VectorLowering("identity", inserts_axes=True),
}

#: numpy's bool arithmetic is logic; bool data is one byte holding 0 or 1
BOOL_FN = {"add": "or", "mul": "and", "max": "or", "min": "and"}

#: integer inputs of these unary functions keep their value (numpy returns them unchanged)
INT_IDENTITY = frozenset({"floor", "ceil"})

#: reductions: registry op -> (vreduce fn, whether the result is divided by the element count)
REDUCE: dict[str, tuple[str, bool]] = {"sum": ("sum", False), "max": ("max", False), "min": ("min", False),
                                       "mean": ("sum", True)}


def vector_lowering(op: str) -> VectorLowering | None:
    return VECTOR.get(op)


def no_lowering(op: str, kernel: str, loc: object = None, why: str = "") -> CompileError:
    """The error for an op that has no NPU lowering (located at the op's source line when known)."""
    reason = f"no NPU lowering for `{op}` in kernel {kernel}" + (f": {why}" if why else "")
    return CompileError(reason, loc) if loc is not None else CompileError(reason)
