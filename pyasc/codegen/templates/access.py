"""Data-movement ops as strided accesses: out[i] = src[offset + sum_k i_k * strides[k]] (in elements).

Every ND data-movement op of the registry reads its input through one
affine map: a transpose permutes the input's row-major strides, a slice
scales them by its steps (a negative step reverses an axis) and moves the
offset to its starts, a broadcast gives the new and the size-1 axes stride
0, and a reshape, squeeze or expand_dims reads the input in order. The
table `ACCESS` (keyed by registry op name, like the vector lowering table)
builds that map from a node; `collapse` then drops size-1 dims and merges
neighbours that move together (XLA's and TVM's dim collapsing), so a
(2, 3, 4) tensor read in order is one dim of 24 and the template sees the
fewest, largest dims.

An access that collapses to at most one dim of stride 1 reads a contiguous
range of the input: the output is that range (`contiguous_range`), an alias
the launch plan can map without a launch.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ... import symbolic as sy
from ...ir import Node, TensorType
from ...ops.shape import permutation
from ...symbolic import IntLike
from ..domain import dim, dims


@dataclass(frozen=True)
class StridedAccess:
    """out (row-major, `shape`) [i] = src[offset + sum(i[k] * strides[k])], all in elements."""

    shape: tuple[IntLike, ...]
    strides: tuple[IntLike, ...]
    offset: IntLike = 0

    @property
    def numel(self) -> IntLike:
        return sy.mul(1, *self.shape)

    def out_strides(self) -> tuple[IntLike, ...]:
        """Elements between neighbours of each dim in the (row-major) output."""
        return row_major(self.shape)

    def describe(self) -> str:
        dims_ = ", ".join(str(d) for d in self.shape)
        strides = ", ".join(str(s) for s in self.strides)
        return f"out ({dims_}) <- src[{self.offset} + i . ({strides})]"


def row_major(shape: Sequence[IntLike]) -> tuple[IntLike, ...]:
    out: list[IntLike] = []
    acc: IntLike = 1
    for d in reversed(shape):
        out.append(acc)
        acc = sy.mul(acc, d)
    return tuple(reversed(out))


def collapse(a: StridedAccess) -> StridedAccess:
    """Drop size-1 dims; merge dim k into k+1 where strides[k] == strides[k+1] * shape[k+1]."""
    shape: list[IntLike] = []
    strides: list[IntLike] = []
    for d, s in zip(a.shape, a.strides):
        if d == 1:
            continue
        if shape and strides[-1] == sy.mul(s, d):
            shape[-1] = sy.mul(shape[-1], d)
            strides[-1] = s
            continue
        shape.append(d)
        strides.append(s)
    return StridedAccess(tuple(shape), tuple(strides), a.offset)


def contiguous_range(a: StridedAccess) -> bool:
    """Whether the (collapsed) access reads one contiguous run of the input, in order."""
    c = collapse(a)
    return len(c.shape) == 0 or (len(c.shape) == 1 and c.strides[0] == 1)


# ---- per op: the access of its (only) input ------------------------------------------------


def _transpose(src: TensorType, attrs: Mapping[str, Any], out: TensorType) -> StridedAccess:
    perm = permutation(attrs.get("axes"), src.ndim)
    st = row_major(dims(src.shape))
    return StridedAccess(dims(out.shape), tuple(st[p] for p in perm))


def _slice(src: TensorType, attrs: Mapping[str, Any], out: TensorType) -> StridedAccess:
    st = row_major(dims(src.shape))
    offset: IntLike = 0
    strides = []
    for k, (start, step, n) in enumerate(zip(attrs["starts"], attrs["steps"], dims(out.shape))):
        if start is None:  # a full slice of a symbolic axis (a static None is normalised by inference)
            start = 0
        if n != 0:
            offset = sy.add(offset, sy.mul(dim(start), st[k]))  # a symbolic start (x[..., -5:]) is a dim expression
        strides.append(sy.mul(int(step), st[k]))
    return StridedAccess(dims(out.shape), tuple(strides), offset)


def _broadcast(src: TensorType, attrs: Mapping[str, Any], out: TensorType) -> StridedAccess:
    in_shape, out_shape = dims(src.shape), dims(out.shape)
    st = row_major(in_shape)
    lead = len(out_shape) - len(in_shape)
    strides: list[IntLike] = []
    for k, d in enumerate(out_shape):
        j = k - lead
        strides.append(0 if j < 0 or (in_shape[j] == 1 and d != 1) else st[j])
    return StridedAccess(out_shape, tuple(strides))


def _in_order(src: TensorType, attrs: Mapping[str, Any], out: TensorType) -> StridedAccess:
    shape = dims(out.shape)
    return StridedAccess(shape, row_major(shape))


#: registry op -> its input's access (the ND data-movement ops; transdata has its own template)
ACCESS: dict[str, Callable[[TensorType, Mapping[str, Any], TensorType], StridedAccess]] = {
    "transpose": _transpose,
    "slice": _slice,
    "broadcast_to": _broadcast,
    "expand_dims": _in_order,
    "squeeze": _in_order,
    "reshape": _in_order,
}


def access_of(node: Node) -> StridedAccess:
    """The strided access of a data-movement node (an op of `ACCESS`) of one ND input."""
    return ACCESS[node.op](node.inputs[0].type, node.attrs, node.outputs[0])
