"""What a vector kernel computes, independent of tile sizes: its domain, each value's space (full tile /
per row / scalar), the per-tile vector ops (`vector_ops`) and their physical buffers (`ub_alloc`), and the
UB each tiling needs. Shared by the single-pass template (`vector`) and the multi-pass one (`multipass`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ...target import Chip, itemsize

from ... import symbolic as sy
from ...ir import Node, Value
from ...symbolic import IntLike
from ..alignment import Placements, placements
from ..domain import (Domain, InputLayout, UnsupportedDomain, dims, input_layout, make_domain, pointwise_domain,
                      same_dim, view_cuts)
from ..kernel_graph import KernelGraph
from ..schedule import Buffer
from ..strided import Layout, output_view_nodes, output_views, view_read
from ..template import Tiling, ub_slot
from ..ub_alloc import Assignment, assign
from ..vector_ops import build_vector_plan, InputUse, is_input_view, Space, VectorPlan, VKind, VOp

F = sy.sym   # tiling fields and loop variables are symbols of the kernel body


@dataclass
class VectorKernel:
    """What the vector template learned about one kernel (see the module docstring)."""

    name: str
    kg: KernelGraph
    domain: Domain
    plan: VectorPlan
    layouts: dict[int, InputLayout]          # input vbuf id -> its layout
    resident: list[InputUse]
    per_tile: list[InputUse]
    prologue: list[VOp]                      # expansions of resident inputs (before the tile loop)
    body: list[VOp]                          # the per-tile ops
    alloc: Assignment
    out_spaces: list[Space]
    min_itemsize: int
    reduces: bool
    mode: str
    block: int                               # bytes of a UB block (the chip's ub_align): rows start on one
    # a device loop's repetition (`device_loop.Repeat`): what each tile runs between its loads and its stores
    # instead of the body once
    repeat: Any = None
    # outputs written through views (strided.output_views): output index -> (the computed value's shape, where
    # its elements lie in the output)
    out_views: dict[int, tuple[tuple, Layout]] = field(default_factory=dict)

    @property
    def buffer_counts(self) -> dict[tuple, int]:
        counts: dict[tuple, int] = {}
        for p in self.alloc.buffers:
            counts[(p.space, p.itemsize, p.rotating)] = counts.get((p.space, p.itemsize, p.rotating), 0) + 1
        return counts


@dataclass(frozen=True)
class VectorTiling(Tiling):
    mode: str              # "rows" | "chunks"
    rows: int              # rows per tile (rows mode), else 1
    width: int             # elements per chunk (chunks mode), else 0
    buffer_num: int
    cores: int             # cores available (the launch uses min(cores, tiles))

    def describe(self) -> str:
        what = f"{self.rows} rows" if self.mode == "rows" else f"chunks of {self.width}"
        return f"{what} per tile, buffer_num={self.buffer_num}, cores<={self.cores}"


# ---- analysis --------------------------------------------------------------------------------


def _reads(kg: KernelGraph, placed: Placements) -> list[tuple[tuple[IntLike, ...], Layout | None]]:
    """Every (shape, view layout) an input of the kernel is read with: its placements for its readers (an input
    view: through `strided.view_read`), its own shape where it is an output too. One-element reads are left out."""
    seen: dict[tuple, None] = {}

    def add(v: Value, shape: tuple) -> None:
        if v.type.numel == 1:
            return
        if v.node.op == "Data":
            seen.setdefault((tuple(shape), None), None)
            return
        read = view_read(v, tuple(shape))
        if isinstance(read, str):
            raise UnsupportedDomain(f"{v.node.op}: {read}")
        seen.setdefault((tuple(dims(read.shape)), read.layout), None)

    for n in kg.nodes:
        if is_input_view(n.out()):
            continue  # read through by its own readers
        for v in n.inputs:
            if v.node.op == "Data" or is_input_view(v):
                add(v, placed.operand_shape(n, v))
    for v in kg.graph.outputs:
        if v.node.op == "Data" or is_input_view(v):
            add(v, dims(v.type.shape))
    return list(seen)


def read_shapes(kg: KernelGraph, placed: Placements) -> list[tuple[IntLike, ...]]:
    """Every shape an input of the kernel is read with (its placements for its readers, its own shape where
    it is an output too): the broadcast patterns the domain collapses by. One-element inputs are left out."""
    return list(dict.fromkeys(shape for shape, _ in _reads(kg, placed)))


def _cuts(reads: list[tuple[tuple[IntLike, ...], Layout | None]], shape: Sequence[IntLike]) -> frozenset[int]:
    """Domain dims that views read apart from the dim before them (they stay separate dims of the domain)."""
    cuts: set[int] = set()
    for operand, view in reads:
        if view is not None and _broadcastable(operand, shape):
            cuts |= view_cuts(shape, operand, view.strides)
    return frozenset(cuts)


def analyze(name: str, kg: KernelGraph, reduce_rows: Sequence[Any] | None, k: int, mode: str,
            block: int, rows_of_last_axis: bool = False) -> VectorKernel:
    """`reduce_rows`: the row reduction's input shape (None for a pointwise kernel); k: axes it reduces;
    mode: "rows" or "chunks" (a row broadcast over all rows is resident only in rows mode); `block`: bytes of
    a UB block; `rows_of_last_axis`: a pointwise kernel whose row is the last axis (a matmul's epilogue walks
    the product's blocks), not the longest run the inputs allow."""
    return analyze_modes(name, kg, reduce_rows, k, (mode,), block, rows_of_last_axis)[0]


def analyze_modes(name: str, kg: KernelGraph, reduce_rows: Sequence[Any] | None, k: int, modes: Sequence[str],
                  block: int, rows_of_last_axis: bool = False) -> list[VectorKernel]:
    """`analyze` in each of `modes`, sharing what does not depend on the mode (the domain, the vector ops and
    the inputs' layouts: only which inputs are resident, and so the ops before the tile loop and the buffers,
    does). Raises UnsupportedDomain when the kernel cannot be analysed (in any mode: the reasons are the
    mode-independent part's)."""
    placed = placements(kg, None if reduce_rows is None else len(reduce_rows))
    reads = _reads(kg, placed)
    in_shapes = list(dict.fromkeys(shape for shape, _ in reads))
    heads = output_views(kg)
    written = {i: (dims(v.type.shape), lay) for v, (i, lay) in heads.items()}
    if written and (reduce_rows is not None or rows_of_last_axis):
        raise UnsupportedDomain("only a pointwise kernel writes its result through views")
    if reduce_rows is None:
        shape = _domain_shape(kg, output_view_nodes(kg, heads))
        operands = [s for s in in_shapes if _broadcastable(s, shape)]
        cuts = _cuts(reads + [(own, lay) for own, lay in written.values()], shape)
        domain = make_domain(shape, len(shape) - 1, operands, cuts) if rows_of_last_axis and shape else \
            pointwise_domain(shape, operands, cuts)
        reduces = False
    else:
        shape = dims(reduce_rows)
        full_inputs = [s for s in in_shapes if _broadcastable(s, shape)]
        domain = make_domain(shape, len(shape) - k, full_inputs, _cuts(reads, shape))
        reduces = True

    reduced = placed.frozen
    known: dict[tuple[Value, tuple[IntLike, ...] | None], Space] = {}

    def space_of(v: Value, read_as: Sequence[IntLike] | None = None) -> Space:
        # asked once per read of a value (a long chain reads the same input at every op): the answer only
        # depends on this analysis's domain and placements, fixed while it runs
        key = (v, None if read_as is None else tuple(read_as))
        space = known.get(key)
        if space is None:
            space = known[key] = _space_of(v, read_as)
        return space

    def _space_of(v: Value, read_as: Sequence[IntLike] | None) -> Space:
        t = v.type
        if v.node.op in ("Data", "Const") and t.numel == 1 and t.is_static:
            return Space.SCALAR
        if v.node.op == "Data" or is_input_view(v):
            shp = dims(t.shape) if read_as is None else tuple(read_as)
            if not _broadcastable(shp, domain.shape):
                return Space.ROW
            cls = input_layout(domain, shp).cls
            return {"full": Space.FULL, "rowvec": Space.FULL, "col": Space.ROW, "scalar": Space.SCALAR}[cls]
        if not reduces:
            return Space.FULL
        shp = placed.shape(v)
        k_row = len(domain.shape) - domain.lead
        if v not in reduced and len(shp) < len(domain.shape):
            # before the reduction a value broadcasts against the domain as numpy aligns it, by its trailing
            # dims (of its placement): a (C,) value is a row over every row, not one value per row
            shp = (1,) * (len(domain.shape) - len(shp)) + tuple(shp)
        row_part = shp[len(shp) - k_row:] if len(shp) >= len(domain.shape) else ()
        full_row = tuple(domain.shape[domain.lead:])
        full = len(row_part) == len(full_row) and all(same_dim(a, b) for a, b in zip(row_part, full_row))
        return Space.FULL if full and any(d != 1 for d in row_part) else Space.ROW

    plan = build_vector_plan(kg, kg.nodes, space_of, name, placed=placed)
    layouts: dict[int, InputLayout] = {}
    for use in plan.inputs:
        shp = dims(use.shape)
        view = None if use.view is None else (use.view.strides, use.view.offset)
        lay = input_layout(domain, shp, per_row=use.space == Space.ROW, view=view)
        if use.space == Space.ROW and lay.cls not in ("col", "scalar"):
            raise UnsupportedDomain(f"input of shape {tuple(shp)} is read per row but is not one value per row")
        if lay.cls == "col" and lay.r_stride != 1:
            raise UnsupportedDomain(f"input of shape {tuple(shp)}: its per-row values are not contiguous")
        layouts[use.buf.id] = lay
    out_spaces = []
    for i, buf in plan.outputs:
        v = kg.graph.outputs[i]
        out_shape = written[i][0] if i in written else dims(v.type.shape)
        if i in written:   # stored through the view's strides: its rows must be contiguous runs of the output
            try:
                input_layout(domain, out_shape, view=(written[i][1].strides, written[i][1].offset))
            except UnsupportedDomain as e:
                raise UnsupportedDomain(f"its result written through views to output {i}: {e}") from None
        if buf.space == Space.SCALAR or (buf.space == Space.FULL and not (
                len(out_shape) == len(domain.shape) and all(map(same_dim, out_shape, domain.shape)))):
            raise UnsupportedDomain(f"output {i} of shape {v.type.shape} is not a full tile of the domain "
                                    f"{domain.shape} nor one value per row")
        if buf.space == Space.ROW and not _same_dims(_unit_free(out_shape), _unit_free(domain.rows_shape)):
            # stored one value per row of every outer index: a value broadcast over some of them is smaller
            raise UnsupportedDomain(f"output {i} of shape {v.type.shape} holds one value per row of only some of "
                                    f"the domain's rows {domain.rows_shape}")
        out_spaces.append(buf.space)
    min_size = min([itemsize(b.dtype) for b in plan.buffers] or [4])
    out = []
    for mode in modes:
        resident = [u for u in plan.inputs if _is_resident(u, layouts[u.buf.id], mode)]
        per_tile = [u for u in plan.inputs if not _is_resident(u, layouts[u.buf.id], mode)]
        # ops that only expand resident inputs run once, before the tile loop
        res_ids = {u.buf.id for u in resident}
        prologue, body = [], []
        for op in plan.ops:
            if op.kind in (VKind.EXPAND, VKind.CAST) and all(s.id in res_ids for s in op.reads):
                prologue.append(op)
                res_ids.add(op.dst.id)
            else:
                body.append(op)
        out_bufs = [b for _, b in plan.outputs]
        alloc = assign(body, [u.buf for u in per_tile], [u.buf for u in resident], out_bufs, prologue)
        out.append(VectorKernel(name, kg, domain, plan, layouts, resident, per_tile, prologue, body, alloc,
                                list(out_spaces), min_size, reduces, mode, block, out_views=written))
    return out


def _unit_free(shape: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(d for d in shape if not (isinstance(d, int) and d == 1))


def _same_dims(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return len(a) == len(b) and all(map(same_dim, a, b))


def _domain_shape(kg: KernelGraph, written_through: set[Node] = frozenset()) -> tuple[IntLike, ...]:
    """The shape the kernel's values are computed in: its largest output or computed value (views it reads
    through or writes its result through are neither)."""
    shapes = [dims(v.type.shape) for v in kg.graph.outputs if v.node not in written_through]
    shapes += [dims(n.outputs[0].shape) for n in kg.nodes if not is_input_view(n.out()) and n not in written_through]
    best: tuple[IntLike, ...] = ()
    for s in shapes:
        if len(s) > len(best) or (len(s) == len(best) and _numel_known(s) > _numel_known(best)):
            best = s
    return best


def _numel_known(s: Sequence[IntLike]) -> int:
    n = 1
    for d in s:
        n *= d if isinstance(d, int) else 1 << 20
    return n


def _broadcastable(s: Sequence[IntLike], shape: Sequence[IntLike]) -> bool:
    if len(s) > len(shape):
        return False
    return all(a == 1 or same_dim(a, b) for a, b in zip(reversed(s), reversed(shape)))


def _is_resident(use: InputUse, lay: InputLayout, mode: str) -> bool:
    if lay.outer_dependent:
        return False
    return lay.cls == "scalar" or (lay.cls == "rowvec" and mode == "rows" and use.space == Space.FULL)


# ---- tile geometry ------------------------------------------------------------------------------


def row_align(vk: VectorKernel) -> int:
    """Elements per UB block of the narrowest dtype: rows of every buffer start on a block."""
    return vk.block // vk.min_itemsize


def padded_row(vk: VectorKernel) -> IntLike:
    return sy.align_up(vk.domain.C, row_align(vk))


def ub_bytes(vk: VectorKernel, tiling: VectorTiling, chip: Chip) -> int:
    """UB the kernel's buffers take with this tiling (static shapes; symbolic rows count as their bound)."""
    return sum(b.nbytes for b in buffers_for(vk, tiling, chip))


def _slot_bytes(space: Space, itemsize: int, full_elems: int, row_elems: int, chip: Chip) -> int:
    n = {Space.FULL: full_elems, Space.ROW: row_elems, Space.SCALAR: 1}[space]
    return ub_slot(max(1, n) * itemsize, chip)


def _full_elems(vk: VectorKernel, tiling: VectorTiling) -> int:
    if tiling.mode == "chunks":
        return tiling.width
    cp = padded_row(vk)
    if not isinstance(cp, int):
        raise UnsupportedDomain("a symbolic row length needs the chunks mode")
    return tiling.rows * cp


def buffers_for(vk: VectorKernel, tiling: VectorTiling, chip: Chip) -> list[Buffer]:
    full = _full_elems(vk, tiling)
    row = tiling.rows
    out = []
    for p in vk.alloc.buffers:
        out.append(Buffer(p.name, "UB", _dtype_of_size(p.itemsize), _slot_bytes(p.space, p.itemsize, full, row, chip),
                          tiling.slots(p.rotating), p.kind))
    for use in vk.resident + vk.per_tile:
        lay = vk.layouts[use.buf.id]
        if lay.cls == "rowvec" and tiling.mode == "rows":
            size = itemsize(use.buf.dtype)
            c = vk.domain.C if isinstance(vk.domain.C, int) else full
            out.append(Buffer(f"rv{use.buf.id}", "UB", use.buf.dtype, _slot_bytes(Space.FULL, size, c, 1, chip),
                              tiling.slots(use not in vk.resident), "rowvec staging"))
    return out


def _dtype_of_size(size: int) -> str:
    return {1: "uint8", 2: "float16", 4: "float32"}[size]



def in_param(i: int) -> str:
    return f"in{i}"


def out_param(i: int) -> str:
    return f"out{i}"


def stride_field(buf_id: int, axis: str) -> str:
    """The tiling field holding an input's element stride along a collapsed dim ("r" or an outer index)."""
    return f"s{buf_id}_{axis}"


def stride_fields(vk: VectorKernel) -> dict[str, IntLike]:
    """Element strides of the inputs over the outer dims and between rows, as tiling fields (over dims)."""
    out: dict[str, IntLike] = {}
    for use in vk.resident + vk.per_tile:
        lay = vk.layouts[use.buf.id]
        for j, s in enumerate(lay.o_strides):
            if s != 0:
                out[stride_field(use.buf.id, str(j))] = s
        if lay.r_stride not in (0, 1):
            out[stride_field(use.buf.id, "r")] = lay.r_stride
    return out
