"""Loop: a runtime loop as a control node (`for` over a launch-time trip count, `while` on a tensor).

    %r = Loop(%first, %c0, ..., %ck-1, %inv...) {kind, carried=k, body=@...}

- `kind="for"`: `first` is the trip count, a one-element integer (a DimValue
  when the host knows it from the dims or statically, else a tensor the host
  reads back); the body runs that many times (none when it is <= 0).
- `kind="while"`: `first` is the condition before the first iteration; the
  body's last output is the condition for the next one.

The body's Data inputs follow the node's inputs after `first` (as an If
branch's do): indices 0..k-1 are the loop-carried values (the previous
iteration's results; the initial values on the first), the rest are values
the body only reads. Its first k outputs are the next carried values, with
exactly their types. The node's outputs are the carried values after the
last iteration. The body is compiled once; the host code runs it, or, for a `for` loop whose body is one
vector kernel, that kernel runs every iteration on chip in one launch (`codegen/device_loop_step.py`).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..errors import InferError
from ..tensor_type import TensorType
from .registry import ANY_FORMAT, Category, OpDef, register

KINDS = ("for", "while")
INTEGER_DTYPES = ("int8", "int16", "int32", "uint8")


def types_agree(a: TensorType, b: TensorType) -> bool:
    """Whether a carried value keeps its type across an iteration: the same dtype and rank, each dim the
    same, or two symbolic dims (dynamic=True: names the body pairs up, like A_d0 and v_d0 in `A @ v`, are
    assumed equal, and the launch checks them with the real sizes)."""
    return a.dtype == b.dtype and a.ndim == b.ndim and all(
        x == y or (not isinstance(x, int) and not isinstance(y, int)) for x, y in zip(a.shape, b.shape))


def _infer_loop(in_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    kind, k, body = attrs.get("kind"), attrs.get("carried"), attrs.get("body")
    if kind not in KINDS:
        raise InferError(f"Loop: kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= len(in_types) - 1:
        raise InferError(f"Loop: carried must be an int in 0..{max(len(in_types) - 1, 0)}, got {k!r}")
    if not in_types:
        raise InferError("Loop: needs a trip count or condition input")
    first = in_types[0]
    if first.numel not in (None, 1):
        raise InferError(f"Loop: the {'trip count' if kind == 'for' else 'condition'} must have one element, "
                         f"got shape {tuple(first.shape)}")
    if kind == "for" and first.dtype not in INTEGER_DTYPES:
        raise InferError(f"Loop: the trip count must be an integer, got {first}")
    carried = list(in_types[1:1 + k])
    outs = list(body.output_types)
    want = k + (1 if kind == "while" else 0)
    if len(outs) != want:
        raise InferError(f"Loop: the body gives {len(outs)} outputs, a {kind} loop with {k} carried values needs "
                         f"{want}")
    for j, (a, b) in enumerate(zip(carried, outs)):
        if not types_agree(a, b):
            raise InferError(f"Loop: carried value {j} is {a} before an iteration but {b} after it")
    if kind == "while" and outs[-1].numel not in (None, 1):
        raise InferError(f"Loop: the body's condition must have one element, got {outs[-1]}")
    return tuple(t.with_format("ND") for t in carried)


def _no_eager(*_: Any, **__: Any) -> Any:
    raise TypeError("Loop is a control node; the interpreter runs its body")


# a Loop hands each operand to its body's Data as it is, like an If
register(OpDef("Loop", Category.OPAQUE, _infer_loop, _no_eager, doc="run body while a trip count or condition says so",
               structural=True, subgraph_attrs=("body",), other_formats=ANY_FORMAT))
