"""Where each value of a vector kernel sits in the kernel's domain: the shape it is aligned with the domain by.

A vector kernel computes every value as a tile of its domain and reads an
input into a tile by aligning the input's shape with the domain's trailing
axes, as numpy broadcasts. That is right for a value whose readers broadcast
it as numpy does. An op that inserts size-1 axes into a value computed in the
kernel (`expand_dims(y, -1)` before a `where` against a `(..., 2)` mask, as
`np.stack(..., axis=-1)` builds; `expand_dims(hit, 2)` of a one-hot selection)
moves the value's axes away from that trailing alignment, and with them the
axes of every operand it was computed from.

`placements(kg)` walks the kernel backwards from its outputs and gives each
computed value its *placement*: its shape with size-1 axes inserted so that
aligning it with the domain's trailing axes puts every axis where the kernel
uses it. An input (or an expand_dims view of one) is then read with the
placement its reader needs (`Placements.operand_shape`); one input may be read
in several placements (each is its own load).

Values computed from a reduction keep their own shape, and so does a
reduction's operand: the row templates place those by their spaces (a
per-row value is one value per row, a dropped axis put back by expand_dims
is still one), as before. One of lower rank than the rows (`rank`) is in the
rows' coordinates: its axes are the domain's leading ones, so an input or a
value computed before the reduction that it reads (`np.sum(x, -1) * (b + 1)`:
b + 1 is one value per row, not a row of a square x; `np.sum(x, -1) * c` of a
(4, 4, 4) x and a (4, 1) c: c varies along the domain's first axis, not its
second) is placed there too. A value its
readers need in two placements (`y[:, None] - y[None, :]` of a computed y) is
refused: the templates compute a value once (fusion's rule
"broadcast_two_ways" keeps such kernels apart).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import ops
from ..ir import Node, Value
from ..symbolic import IntLike
from .domain import UnsupportedDomain, dims
from .kernel_graph import KernelGraph
from .lowering import vector_lowering
from .strided import is_input_view, output_view_nodes, output_views

Shape = tuple[IntLike, ...]


def inserts_axes(n: Node) -> bool:
    """Whether `n` places its operand's axes by an attribute (expand_dims), not by numpy's trailing alignment."""
    low = vector_lowering(n.op)
    return low is not None and low.inserts_axes


def _is_reduction(n: Node) -> bool:
    return ops.exists(n.op) and ops.get(n.op).is_reduction


def _non_unit(d: IntLike) -> bool:
    return d != 1  # a symbolic dim counts as a real axis


def align(operand: Shape, out: Shape, placed: Shape) -> Shape:
    """The placement of an operand of shape `operand` that numpy broadcasts to `out`, when `out` sits at
    `placed` (`out` with size-1 axes inserted): each real axis of the operand goes where its axis of `out` went."""
    where = [i for i, d in enumerate(placed) if _non_unit(d)]   # the real axes of `out`, in order, in `placed`
    real = [j for j, d in enumerate(out) if _non_unit(d)]
    at = dict(zip(real, where))
    result: list[IntLike] = [1] * len(placed)
    off = len(out) - len(operand)
    for k, d in enumerate(operand):
        if _non_unit(d):
            result[at[k + off]] = d
    return tuple(result)


def _trimmed(shape: Shape) -> Shape:
    """`shape` without its leading size-1 axes (they do not move anything under trailing alignment)."""
    i = 0
    while i < len(shape) and not _non_unit(shape[i]):
        i += 1
    return tuple(shape[i:])


@dataclass
class Placements:
    """The placements of one kernel's values that sit elsewhere than their own shape says (see the module
    docstring); every other value, and every read of one, is at its own shape."""

    of: dict[Value, Shape]   # computed value -> its placement (only values that moved)
    frozen: set[Value]       # values computed from a reduction: placed by the row templates' spaces
    rank: int | None = None  # the rows' rank (a row reduction): a frozen value of lower rank is per row
    trivial: bool = False    # nothing moves: every read is at its own shape (the common case, answered fast)
    _own: dict[Value, Shape] = field(default_factory=dict)  # own shapes as dims, asked once per kernel each

    def shape(self, v: Value) -> Shape:
        """The placement of a value (an input's or a value computed from a reduction: its own shape)."""
        return self.of.get(v, dims(v.type.shape))

    def operand_shape(self, reader: Node, v: Value) -> Shape:
        """The shape operand `v` of `reader` is read with: its own where that places it right (one load of an
        input serves every such reader), else its placement."""
        own = self._own.get(v)
        if own is None:
            own = self._own[v] = dims(v.type.shape)
        if self.trivial:
            return own
        placed = self._placed(reader, v, own)
        return own if _trimmed(placed) == _trimmed(own) else placed

    def _placed(self, reader: Node, v: Value, own: Shape) -> Shape:
        if _is_reduction(reader) or v in self.frozen:
            return own
        out = reader.out()
        if out in self.frozen:
            shape = dims(out.type.shape)
            if self.rank is not None and len(shape) < self.rank:
                return align(own, shape, shape + (1,) * (self.rank - len(shape)))
            return own
        if inserts_axes(reader):
            return self.shape(out)
        return align(own, dims(out.type.shape), self.shape(out))

    def moved(self) -> bool:
        """Whether any value sits elsewhere than its own shape's trailing alignment says."""
        return bool(self.of)


def downstream_of_reductions(kg: KernelGraph) -> set[Value]:
    """Values a reduction of the kernel computes, and every value computed from one (their shapes are the
    reduced shape: one value per row), as opposed to values the reduction reads."""
    out: set[Value] = set()
    for n in kg.graph.nodes:  # topological order
        if _is_reduction(n) or any(v in out for v in n.inputs):
            out.update(n.values)
    return out


def _computed(v: Value) -> bool:
    return v.node.op not in ("Data", "Const") and not is_input_view(v)


def _read_through(n: Node) -> bool:
    """A view of an input the kernel reads through by strides (not expand_dims: it is placed as before)."""
    return n.op != "expand_dims" and is_input_view(n.out())


def _anything_moves(kg: KernelGraph, frozen: set[Value], rank: int | None) -> bool:
    """Whether some op moves a value it reads: inserts axes into one the kernel computes, or (a row reduction)
    reads an input or a value computed before the reduction one value per row."""
    for n in kg.nodes:
        if n.out() in frozen:
            if rank is not None and len(n.outputs[0].shape) < rank and any(
                    v.node.op != "Const" and v not in frozen for v in n.inputs):
                return True
        elif inserts_axes(n) and _computed(n.inputs[0]):
            return True
    return False


def placements(kg: KernelGraph, rank: int | None = None) -> Placements:
    """Each computed value's placement, from its readers (outputs are stored in their own shape); a value two
    readers need in different placements is an UnsupportedDomain. `rank`: the rank of a row reduction's rows
    (values computed from the reduction with fewer axes are one value per row)."""
    frozen = downstream_of_reductions(kg)
    result = Placements({}, frozen, rank)
    if not _anything_moves(kg, frozen, rank):
        result.trivial = True
        return result
    readers: dict[Value, list[Node]] = {}
    for n in kg.nodes:
        for v in n.inputs:
            readers.setdefault(v, []).append(n)
    heads = output_views(kg)
    written = output_view_nodes(kg, heads)   # the value is stored through them in its own shape
    outputs = set(kg.graph.outputs) | set(heads)
    for n in reversed(kg.nodes):
        if _read_through(n) or n in written:
            continue  # its readers read the input through it in their placement (`strided.view_read`)
        for v in n.values:
            own = dims(v.type.shape)
            if v in frozen:
                continue
            wanted = {own} if v in outputs else set()
            wanted.update(result.operand_shape(r, v) for r in readers.get(v, []) if r not in written)
            distinct: dict[Shape, Shape] = {}
            for w in sorted(wanted, key=len, reverse=True):
                distinct.setdefault(_trimmed(w), w)
            if len(distinct) > 1:
                shown = " and ".join(sorted(str(tuple(w)) for w in distinct.values()))
                what = f"{n.op} {n.name}" if n.name else n.op
                raise UnsupportedDomain(f"{what} of shape {tuple(own)} is read in two placements ({shown}): a "
                                        "vector kernel computes a value once")
            placed = next(iter(distinct.values()), own)
            if _trimmed(placed) != _trimmed(own):
                if len(n.outputs) > 1:  # its operands are placed by one output (`Placements._placed`)
                    raise UnsupportedDomain(f"{n.op} has {len(n.outputs)} outputs: a vector kernel places each "
                                            "of them at its own shape")
                result.of[v] = placed
    return result
