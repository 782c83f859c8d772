"""Tile ops of a vector kernel for one tile geometry: loads of its inputs, its vector ops, stores of its outputs.

Used by the single-pass template (a tile is rows of the domain, or a chunk of one row) and the multi-pass
template (a tile is a chunk of one row, revisited once per pass).
"""
from __future__ import annotations

from typing import Callable, Sequence

from ...target import itemsize

from ... import symbolic as sy
from ...symbolic import IntLike
from .. import tileops as T
from ..domain import dims, input_layout
from ..schedule import GmRef, Ref, Stmt
from ..vector_ops import Geometry, InputUse, Space, VBuf, VKind, VOp
from .vector_kernel import VectorKernel, VectorTiling, in_param, out_param, padded_row, stride_field

F = sy.sym


def decompose(index: IntLike, n: int) -> list[IntLike]:
    """Outer multi-index (row-major over fields O0..O{n-1}) of a flat outer index."""
    out: list[IntLike] = []
    rest = index
    for j in reversed(range(n)):
        size = F(f"O{j}")
        out.append(sy.mod(rest, size) if j else rest)
        rest = sy.floordiv(rest, size)
    return out[::-1]


class Placement:
    """Turns the kernel's VOps and inputs/outputs into tile ops for one geometry."""

    def __init__(self, vk: VectorKernel, tiling: VectorTiling, geom: Geometry, slot: IntLike, r0: IntLike,
                 c0: IntLike, o_index: list[IntLike], rows_mode: bool, in_name: Callable[[int], str] = in_param):
        self.vk, self.tiling, self.geom, self.slot = vk, tiling, geom, slot
        self.r0, self.c0, self.o_index, self.rows_mode = r0, c0, o_index, rows_mode
        self.in_name = in_name   # the GM parameter of kernel input i (a mixed launch numbers its inputs after the cube's)

    def ref(self, buf: VBuf, tile_slot: bool = True) -> Ref:
        p = self.vk.alloc.of[buf.id]
        return Ref(p.name, self.slot if (p.rotating and tile_slot) else 0)

    def _gm_in(self, use: InputUse, col: IntLike, row: IntLike, per_tile: bool) -> GmRef:
        lay = self.vk.layouts[use.buf.id]
        off: IntLike = lay.offset     # a view of the input starts there (0 for the input itself)
        if per_tile:
            for j, idx in enumerate(self.o_index):
                if lay.o_strides[j] != 0:
                    off = sy.add(off, sy.mul(idx, F(stride_field(use.buf.id, str(j)))))
            off = sy.add(off, sy.mul(row, self._r_stride(use)), col)
        return GmRef(self.in_name(use.index), sy.mul(off, itemsize(use.buf.dtype)))

    # -- before the loop: resident inputs and pad initialisation -----------------------------
    def prologue(self) -> list[Stmt]:
        """Loads of the resident inputs first, then their expansions: one flag orders all of them."""
        vk, loads, out = self.vk, [], []
        for use in vk.resident:
            lay = vk.layouts[use.buf.id]
            dt = use.buf.dtype
            dst = self.ref(use.buf, tile_slot=False)
            if lay.cls == "scalar":
                loads.append(T.load(dst, self._gm_in(use, 0, 0, False), dt, 1, note=f"{use.buf.what} (scalar)"))
            elif lay.cls == "rowvec" and self.rows_mode:
                stage = Ref(f"rv{use.buf.id}")
                loads.append(T.load(stage, self._gm_in(use, 0, 0, False), dt, F("C"), note=f"{use.buf.what} (row)"))
                out.append(T.vdup(dst, 0, sy.mul(F("tr"), F("Cp")), dt, note="zero the row padding"))
                out.append(T.vbroadcast(dst, stage, F("tr"), F("C"), dt, axis=0, dst_row_stride=F("Cp"),
                                        note=f"{use.buf.what} over the rows"))
        for op in vk.prologue:
            out.extend(self.vop(op, resident=True))
        if self.rows_mode and self._needs_pad_init():
            for use in vk.per_tile:
                if use.space == Space.FULL:
                    p = vk.alloc.of[use.buf.id]
                    for s in range(self.tiling.buffer_num if p.rotating else 1):
                        out.append(T.vdup(Ref(p.name, s), 0, sy.mul(F("tr"), F("Cp")), use.buf.dtype,
                                          note="zero the row padding"))
        return loads + out

    def _needs_pad_init(self) -> bool:
        """Rows padded past their length leave bytes the vector ops read: loads pad only to 32 bytes and
        a row broadcast writes only the row, so every full-tile input slot is zeroed once."""
        c = self.vk.domain.C
        return not isinstance(c, int) or padded_row(self.vk) != c

    # -- per tile -------------------------------------------------------------------------------------
    def loads(self) -> list[Stmt]:
        g, out = self.geom, []
        for use in self.vk.per_tile:
            lay = self.vk.layouts[use.buf.id]
            dt = use.buf.dtype
            dst = self.ref(use.buf)
            if use.space == Space.ROW or lay.cls == "col":
                out.append(T.load(dst, self._gm_in(use, 0, self.r0, True), dt, g.rows, note=f"{use.buf.what} per row"))
            elif lay.cls == "scalar":
                out.append(T.load(dst, self._gm_in(use, 0, 0, True), dt, 1, note=use.buf.what))
            elif lay.cls == "rowvec":
                if self.rows_mode:
                    stage = Ref(f"rv{use.buf.id}", self.slot)
                    out.append(T.load(stage, self._gm_in(use, 0, 0, True), dt, F("C"), note=f"{use.buf.what} (row)"))
                    out.append(T.vbroadcast(dst, stage, g.rows, F("C"), dt, axis=0, dst_row_stride=F("Cp"),
                                            note=f"{use.buf.what} over the rows"))
                else:
                    out.append(T.load(dst, self._gm_in(use, self.c0, 0, True), dt, g.cols, note=use.buf.what))
            else:
                out.append(self._load_full(use, dst, dt))
        return out

    def _load_full(self, use: InputUse, dst: Ref, dt: str) -> Stmt:
        g = self.geom
        src = self._gm_in(use, self.c0, self.r0, True)
        if not self.rows_mode:
            return T.load(dst, src, dt, g.cols, note=use.buf.what)
        if self._contiguous_rows() and self.vk.layouts[use.buf.id].r_stride == self.vk.domain.C:
            return T.load(dst, src, dt, sy.mul(g.rows, F("C")), note=use.buf.what)
        return T.load(dst, src, dt, F("C"), g.rows, src_stride=self._r_stride(use), dst_stride=F("Cp"),
                      note=use.buf.what)

    def _r_stride(self, use: InputUse) -> IntLike:
        """Elements between the input's rows (a tiling field unless it is 0 or 1)."""
        s = self.vk.layouts[use.buf.id].r_stride
        return s if s in (0, 1) else F(stride_field(use.buf.id, "r"))

    def _contiguous_rows(self) -> bool:
        c = self.vk.domain.C
        return isinstance(c, int) and padded_row(self.vk) == c

    def compute(self, ops: Sequence[VOp]) -> list[Stmt]:
        out: list[Stmt] = []
        for op in ops:
            out.extend(self.vop(op))
        return out

    def stores(self) -> list[Stmt]:
        g, out = self.geom, []
        for (i, buf), space in zip(self.vk.plan.outputs, self.vk.out_spaces):
            v = self.vk.kg.graph.outputs[i]
            dt = v.type.dtype
            src = self.ref(buf)
            size = itemsize(dt)
            o_off: IntLike = 0
            if space == Space.ROW:
                # per-row outputs are laid out over the rows of the domain: outer-major, then R
                for j, idx in enumerate(self.o_index):
                    o_off = sy.add(sy.mul(o_off, F(f"O{j}")), idx)
                off = sy.add(sy.mul(o_off, F("R")), self.r0)
                out.append(T.store(GmRef(out_param(i), sy.mul(off, size)), src, dt, g.rows, note=f"out{i} per row"))
                continue
            if self.vk.domain.reordered or i in self.vk.out_views:
                out.append(self._store_by_strides(i, v, src, dt))
                continue
            for j, idx in enumerate(self.o_index):
                o_off = sy.add(sy.mul(o_off, F(f"O{j}")), idx)
            off = sy.add(sy.mul(sy.add(sy.mul(o_off, F("R")), self.r0), F("C")), self.c0)
            dst = GmRef(out_param(i), sy.mul(off, size))
            if not self.rows_mode:
                out.append(T.store(dst, src, dt, g.cols, note=f"out{i}"))
            elif self._contiguous_rows():
                out.append(T.store(dst, src, dt, sy.mul(g.rows, F("C")), note=f"out{i}"))
            else:
                out.append(T.store(dst, src, dt, F("C"), g.rows, src_stride=F("Cp"), dst_stride=F("C"),
                                   note=f"out{i}"))
        return out

    def _store_by_strides(self, i: int, v, src: Ref, dt: str) -> Stmt:
        """Output `i` of a domain whose rows are not its last outer dim (`domain.longest_rows`), or written through
        views (`strided.output_views`): the tile's rows go to the output by its strides over the collapsed dims
        (static, as the domain's and the views' are)."""
        if i in self.vk.out_views:
            shape, view = self.vk.out_views[i]
            lay = input_layout(self.vk.domain, shape, view=(view.strides, view.offset))
        else:
            lay = input_layout(self.vk.domain, dims(v.type.shape))
        off: IntLike = sy.add(lay.offset, sy.mul(self.r0, lay.r_stride), self.c0)
        for idx, s in zip(self.o_index, lay.o_strides):
            off = sy.add(off, sy.mul(idx, s))
        dst = GmRef(out_param(i), sy.mul(off, itemsize(dt)))
        if not self.rows_mode:
            return T.store(dst, src, dt, self.geom.cols, note=f"out{i}")
        return T.store(dst, src, dt, F("C"), self.geom.rows, src_stride=F("Cp"), dst_stride=lay.r_stride,
                       note=f"out{i} (by its strides)")

    # -- one vector op ----------------------------------------------------------------------------
    def resident_geometry(self) -> Geometry:
        """Resident values are made once for the largest tile (rows mode) or chunk."""
        if self.rows_mode:
            return Geometry(full=sy.mul(F("tr"), F("Cp")), row=F("tr"), rows=F("tr"), cols=F("C"), stride=F("Cp"))
        rows = 1 if self.vk.mode == "multipass" else F("tr")
        return Geometry(full=F("tw"), row=rows, rows=rows, cols=F("tw"), stride=F("tw"))

    def vop(self, op: VOp, resident: bool = False) -> list[Stmt]:
        g = self.resident_geometry() if resident else self.geom
        return translate_vop(op, g, (lambda b: self.ref(b, tile_slot=False)) if resident else self.ref)


def translate_vop(op: VOp, g: Geometry, ref: Callable[[VBuf], Ref]) -> list[Stmt]:
    """The tile ops of one vector op for a tile geometry (`ref` places its buffers)."""
    n = g.count(op.dst.space) if op.dst.space != Space.SCALAR else 1
    dst = ref(op.dst)
    s = [ref(x) if isinstance(x, VBuf) else x for x in op.srcs]
    return _TRANSLATE[op.kind](op, dst, s, n, g)


def _expand(op: VOp, dst: Ref, s: list, n: IntLike, g: Geometry) -> list[Stmt]:
    if op.srcs[0].space == Space.SCALAR:
        return [T.vbroadcast(dst, s[0], 1, n, op.dtype, axis=1, note=op.note)]
    return [T.vbroadcast(dst, s[0], g.rows, g.stride, op.dtype, axis=1, dst_row_stride=g.stride, note=op.note)]


#: vector op kind -> its tile ops (destination, placed sources, element count, tile geometry)
_TRANSLATE: dict[VKind, Callable[[VOp, Ref, list, IntLike, Geometry], list[Stmt]]] = {
    VKind.BINARY: lambda op, dst, s, n, g: [T.vbinary(op.fn, dst, s[0], s[1], n, op.dtype, note=op.note)],
    VKind.SCALAR: lambda op, dst, s, n, g: [T.vscalar(op.fn, dst, s[0], s[1], n, op.dtype, reverse=op.reverse,
                                                      note=op.note)],
    VKind.UNARY: lambda op, dst, s, n, g: [T.vunary(op.fn, dst, s[0], n, op.dtype, note=op.note)],
    VKind.COMPARE: lambda op, dst, s, n, g: [T.vcompare(op.fn, dst, s[0], s[1], n, op.dtype, note=op.note)],
    VKind.SELECT: lambda op, dst, s, n, g: [T.vselect(dst, s[0], s[1], s[2], n, op.dtype, note=op.note)],
    VKind.CAST: lambda op, dst, s, n, g: [T.vcast(dst, s[0], n, op.dtype, op.dst.dtype, note=op.note)],
    VKind.DUP: lambda op, dst, s, n, g: [T.vdup(dst, s[0], n, op.dst.dtype, note=op.note)],
    VKind.COPY: lambda op, dst, s, n, g: [T.vcopy(dst, s[0], n, op.dtype, note=op.note)],
    VKind.REDUCE: lambda op, dst, s, n, g: [T.vreduce(op.fn, dst, s[0], g.rows, g.cols, op.dtype,
                                                      src_row_stride=g.stride, note=op.note)],
    VKind.FINALIZE_MEAN: lambda op, dst, s, n, g: [T.vscalar("div", dst, s[0], F("C"), n, op.dtype, note=op.note)],
    VKind.EXPAND: _expand,
}
