"""Values of a kernel that are views of a GM tensor: where each element of a view lies in the tensor it views.

A kernel whose template reads and writes GM by strides (the attention template) can take the data-movement
ops between its operands and its GM tensors into itself (fusion proposes them, registry fact
`OpDef.strided_view`): picoGPT's heads are `slice -> reshape -> transpose` of the qkv projection, torch's
`x.view(B, T, H, D).transpose(1, 2)`, and the joined result `transpose -> reshape` back. Each such chain is a
`Layout` of a row-major tensor: element (i0, i1, ...) of the view is element offset + sum(i_k * strides[k]) of
the tensor. `VIEW_RULES` says how each view op moves a layout (a table, as the lowerings are); a chain the
rules cannot express (a reshape merging axes a slice made non-adjacent, a negative step) is None, and the
template refuses the kernel, which fusion then leaves as separate data moves.

Elementwise and row kernels read inputs through views too (fusion's phase 4, ge/fusion/views.py): a view of a
kernel input there (`is_input_view`) is read by the vector template in the placement its reader needs
(`view_read`), through the layout, by strided copies of whole contiguous rows (codegen/domain.py).

The result side is the mirror image: a chain of reshapes and transposes below a value a vector kernel
computes (fusion's phase 5, ge/fusion/views.py: picoGPT's `transpose -> reshape` joining heads written by the
kernel that computed them) is no computation; the kernel stores the value's tile through the chain's strides
into the output (`output_views`, by `result_layout`).

Only static shapes are laid out: a symbolic stride would make every address a runtime product, and a view of
a dynamic tensor is rare in the code this serves.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Callable

from .. import ops
from ..ir import Node, Value
from ..ops.shape import permutation
from .domain import UnsupportedDomain
from .kernel_graph import KernelGraph

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Layout:
    """A view's shape and, per axis, the element stride in the viewed tensor; `offset`: its first element."""

    shape: Shape
    strides: tuple[int, ...]
    offset: int = 0

    @staticmethod
    def row_major(shape: Shape) -> "Layout":
        strides, step = [], 1
        for d in reversed(shape):
            strides.append(step)
            step *= d
        return Layout(tuple(shape), tuple(reversed(strides)))


def _static(shape) -> Shape | None:
    return tuple(shape) if all(isinstance(d, int) for d in shape) else None


def reshaped(lay: Layout, shape: Shape) -> Layout | None:
    """`lay` read in `shape` (same size) without moving data, or None: each run of axes merged or split must
    be contiguous within itself (numpy's rule for a reshape that returns a view)."""
    if any(d == 0 for d in lay.shape):
        return None
    old = [(n, s) for n, s in zip(lay.shape, lay.strides) if n != 1]
    new = list(shape)
    strides = [0] * len(new)
    oi = ni = 0
    while ni < len(new) and oi < len(old):
        oj, nj = oi + 1, ni + 1
        osize, nsize = old[oi][0], new[ni]
        while osize != nsize:
            if nsize < osize:
                if nj == len(new):
                    return None
                nsize *= new[nj]
                nj += 1
            else:
                if oj == len(old):
                    return None
                osize *= old[oj][0]
                oj += 1
        if any(old[k][1] != old[k + 1][0] * old[k + 1][1] for k in range(oi, oj - 1)):
            return None        # the old axes of this run are not one block of memory
        strides[nj - 1] = old[oj - 1][1]
        for k in range(nj - 1, ni, -1):
            strides[k - 1] = strides[k] * new[k]
        oi, ni = oj, nj
    if oi != len(old) or any(d != 1 for d in new[ni:]):
        return None
    return Layout(tuple(shape), tuple(strides), lay.offset)


def _transpose(lay: Layout, n: Node) -> Layout | None:
    perm = permutation(n.attrs.get("axes"), len(lay.shape))
    return Layout(tuple(lay.shape[a] for a in perm), tuple(lay.strides[a] for a in perm), lay.offset)


def _slice(lay: Layout, n: Node) -> Layout | None:
    offset, strides = lay.offset, []
    for stride, start, step in zip(lay.strides, n.attrs["starts"], n.attrs["steps"]):
        start, step = _integer(0 if start is None else start), _integer(step)
        if start is None or step is None or step < 1:
            return None        # a reversed axis or a symbolic bound
        offset += start * stride
        strides.append(stride * step)
    shape = _static(n.out().type.shape)
    return None if shape is None else Layout(shape, tuple(strides), offset)


def _integer(v) -> int | None:
    """`v` as an int (numpy's integers too), or None for a symbolic bound."""
    try:
        return operator.index(v)
    except TypeError:
        return None


def _broadcast(lay: Layout, n: Node) -> Layout | None:
    shape = _static(n.out().type.shape)
    if shape is None:
        return None
    lead = len(shape) - len(lay.shape)
    strides = [0] * lead + [0 if d == 1 and o != 1 else s for d, s, o in zip(lay.shape, lay.strides, shape[lead:])]
    return Layout(shape, tuple(strides), lay.offset)


def _reshape(lay: Layout, n: Node) -> Layout | None:
    shape = _static(n.out().type.shape)
    return None if shape is None else reshaped(lay, shape)


#: view op -> how it moves the layout of its operand (None: not expressible by strides)
VIEW_RULES: dict[str, Callable[[Layout, Node], Layout | None]] = {
    "transpose": _transpose, "slice": _slice, "broadcast_to": _broadcast,
    "reshape": _reshape, "expand_dims": _reshape, "squeeze": _reshape,
}


def is_view(n: Node) -> bool:
    return ops.exists(n.op) and ops.get(n.op).strided_view


def operand_layout(v: Value) -> tuple[Value, Layout] | str:
    """The kernel input `v` is a view of, and where `v`'s elements lie in it; or why it is not one."""
    chain: list[Node] = []
    while v.node.op != "Data":
        if not is_view(v.node):
            return f"{v.node.op} computes its result (not a view)"
        chain.append(v.node)
        v = v.node.inputs[0]
    shape = _static(v.type.shape)
    if shape is None:
        return "a view of a tensor of dynamic shape"
    lay: Layout | None = Layout.row_major(shape)
    for n in reversed(chain):
        lay = VIEW_RULES[n.op](lay, n)
        if lay is None:
            return f"{n.op} makes a view that strides cannot express"
    return v, lay


def result_layout(kg: KernelGraph, v: Value) -> tuple[int, Layout] | str:
    """The kernel output (its index) that `v` reaches through views only (each read by the next alone), and
    where `v`'s elements lie in it: the layout to write `v` by; or why there is none."""
    chain: list[Node] = []
    outputs = kg.graph.outputs
    while v not in outputs:
        users = [n for n in kg.nodes if v in n.inputs]
        if len(users) != 1 or not is_view(users[0]) or users[0].op in ("slice", "broadcast_to"):
            return "its result is read by more than a chain of reshapes and transposes"
        chain.append(users[0])
        v = users[0].out()
    shape = _static(v.type.shape)
    if shape is None:
        return "a result of dynamic shape"
    lay: Layout | None = Layout.row_major(shape)
    for n in reversed(chain):      # undo each view: its operand as a view of its result
        src = _static(n.inputs[0].type.shape)
        if n.op == "transpose":
            perm = permutation(n.attrs.get("axes"), len(src))
            inverse = sorted(range(len(perm)), key=lambda i: perm[i])
            lay = Layout(tuple(lay.shape[a] for a in inverse), tuple(lay.strides[a] for a in inverse), lay.offset)
        else:
            lay = reshaped(lay, src)
        if lay is None:
            return f"{n.op} makes a result that strides cannot express"
    return outputs.index(v), lay


# ---- views of kernel inputs read by a vector kernel ------------------------------------------------


def is_input_view(v: Value) -> bool:
    """Whether `v` is a view of a kernel input that a vector kernel reads from GM through its layout instead of
    computing: an expand_dims of an input (size-1 axes inserted: the input's own bytes), or a chain of views
    from an input with at least one data move in it (a slice, transpose, reshape or squeeze: fusion put the
    chain into the kernel, `ge/fusion/views.py`). A chain of broadcasts alone stays computed, as before."""
    n = v.node
    if not is_view(n):
        return False
    if n.op == "expand_dims" and n.inputs[0].node.op == "Data":
        return True
    moves = False
    while is_view(n):
        moves = moves or ops.get(n.op).category == ops.Category.INJECTIVE
        n = n.inputs[0].node
    return moves and n.op == "Data"


@dataclass(frozen=True)
class ViewRead:
    """How a vector kernel reads an input view: the input (a Data value of the kernel graph), the shape the
    read is aligned with the domain by (the view's placement, with its broadcast axes as size 1), and the
    layout of that shape in the input (None: the input's own bytes in order, read as that shape)."""

    root: Value
    shape: Shape
    layout: Layout | None


def view_read(v: Value, shape: Shape) -> ViewRead | str:
    """The read of input view `v` in placement `shape` (`v`'s shape with size-1 axes inserted), or why the
    view cannot be read by strides."""
    found = operand_layout(v)
    if isinstance(found, str):
        return found
    root, lay = found
    placed = reshaped(lay, tuple(shape)) if tuple(shape) != lay.shape else lay
    if placed is None:
        return f"a view of shape {lay.shape} read as {tuple(shape)}"
    # an axis of stride 0 repeats one element: the read broadcasts it, as numpy broadcasts a size-1 axis
    read = tuple(1 if s == 0 else d for d, s in zip(placed.shape, placed.strides))
    plain = Layout.row_major(read)
    in_order = placed.offset == 0 and all(s == p for d, s, p in zip(read, placed.strides, plain.strides) if d != 1)
    return ViewRead(root, read, None if in_order else Layout(read, placed.strides, placed.offset))


# ---- views a vector kernel writes its result through ----------------------------------------------


def _computed(v: Value) -> bool:
    return v.node.op not in ("Data", "Const") and not is_view(v.node)


def output_views(kg: KernelGraph) -> dict[Value, tuple[int, Layout]]:
    """Computed values of the kernel that reach an output only through a chain of reshapes and transposes
    (fusion's phase 5 put the chain into the kernel): value -> (the output's index, where the value's elements
    lie in it). UnsupportedDomain for a move of a computed value that is not such a chain (the capacity
    function's refusal)."""
    found: dict[Value, tuple[int, Layout]] = {}
    for n in kg.nodes:
        if not is_view(n) or ops.get(n.op).category != ops.Category.INJECTIVE or not _computed(n.inputs[0]):
            continue
        head = n.inputs[0]
        if head in kg.graph.outputs:
            continue
        placed = result_layout(kg, head)
        if isinstance(placed, str):
            # a move of a computed value the kernel cannot write through: the template refuses the kernel
            raise UnsupportedDomain(f"{n.op} of a value the kernel computes: {placed}")
        found[head] = placed
    return found


def output_view_nodes(kg: KernelGraph, heads: dict[Value, tuple[int, Layout]]) -> set[Node]:
    """The view nodes of the chains `output_views` found: written through, never computed."""
    nodes: set[Node] = set()
    outputs = kg.graph.outputs
    for v in heads:
        while v not in outputs:
            n = next(u for u in kg.nodes if v in u.inputs)
            nodes.add(n)
            v = n.out()
    return nodes
