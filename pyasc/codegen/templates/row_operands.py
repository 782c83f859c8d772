"""Operands a template moves by rows: a batch of (rows, row length) matrices in a GM tensor, possibly a view.

The attention template reads q, k, v and writes its result one row at a time (a DMA with a row stride), so
an operand need not be a tensor of its own: it can be a view of one (`strided.Layout`), such as a head's
columns of the qkv projection, or the result's place in the joined heads. `RowOperand` records where row r
of batch index b starts; `operand_of` / `result_of` find it for an input or the result of a kernel graph,
a plain tensor when the value is one (its shape may then be symbolic).
"""
from __future__ import annotations

from dataclasses import dataclass

from ... import symbolic as sy
from ...ir import Value
from ...symbolic import IntLike
from ..domain import dims, prod
from ..kernel_graph import KernelGraph
from ..strided import Layout, operand_layout, result_layout
from ..template import Unsupported


@dataclass(frozen=True)
class RowOperand:
    """Row r of batch index b (the batch dims flattened, row-major) starts at element
    offset + r * row + sum_k(b_k * batch_strides[k]) of GM parameter `param`, b_k its index on batch dim k."""

    param: str
    batch: tuple[IntLike, ...]
    batch_strides: tuple[IntLike, ...]
    row: IntLike
    offset: int = 0

    def start(self, b: IntLike, r: IntLike) -> IntLike:
        """The element where row r of batch index b starts."""
        terms: list[IntLike] = [self.offset, sy.mul(r, self.row)]
        rest = b
        for k in range(len(self.batch) - 1, -1, -1):
            idx = rest if k == 0 else sy.mod(rest, self.batch[k])
            terms.append(sy.mul(idx, self.batch_strides[k]))
            rest = sy.floordiv(rest, self.batch[k])
        return sy.add(*terms)


def _plain(param: str, shape) -> RowOperand:
    s = dims(shape)
    return RowOperand(param, (prod(s[:-2]),), (sy.mul(s[-2], s[-1]),), s[-1])


def _from_layout(param: str, lay: Layout, what: str) -> RowOperand:
    if lay.shape[-1] != 1 and lay.strides[-1] != 1:
        raise Unsupported(f"{what} is a view whose rows are not contiguous (stride {lay.strides[-1]})")
    # batch dims of one index (or merged ones) need no division: keep those that move the address
    batch, strides = [], []
    for d, s in zip(lay.shape[:-2], lay.strides[:-2]):
        if d == 1:
            continue
        if batch and strides[-1] == s * d:       # contiguous with the previous dim: one dim of both
            batch[-1], strides[-1] = batch[-1] * d, s
        else:
            batch.append(d)
            strides.append(s)
    return RowOperand(param, tuple(batch) or (1,), tuple(strides) or (0,), lay.strides[-2], lay.offset)


def operand_of(v: Value, what: str) -> RowOperand:
    """Where the rows of kernel-graph value `v` (an input, or a view of one) lie; Unsupported when nowhere."""
    if v.node.op == "Data":
        return _plain(f"in{v.node.attrs['index']}", v.type.shape)
    found = operand_layout(v)
    if isinstance(found, str):
        raise Unsupported(f"{what}: {found}")
    data, lay = found
    return _from_layout(f"in{data.node.attrs['index']}", lay, what)


def result_of(kg: KernelGraph, v: Value) -> RowOperand:
    """Where to write the rows of `v`: the kernel's one output, or `v`'s place in it through the views after `v`."""
    outputs = kg.graph.outputs
    if len(outputs) != 1:
        raise Unsupported("the kernel would write more than its result")
    if v == outputs[0]:
        return _plain("out0", v.type.shape)
    found = result_layout(kg, v)
    if isinstance(found, str):
        raise Unsupported(f"the result: {found}")
    return _from_layout("out0", found[1], "the result")
