"""Shared pieces of the handlers: operand getters, rule checks, pipe records, memory views."""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from .. import stream
from ..errors import MemoryRuleError, ProgramError
from ..isa import PIPE_ID, Reg
from ..l2 import GmTouch
from ..lockstep import Group, ProgramInfo, Split
from ..stream import StreamRecord
from ..sync import issue


U8 = np.dtype(np.uint8)


# --------------------------------------------------------------------------- operand access


def get_value(op: Any) -> Callable[[Group], Any]:
    """Per-core value getter: an int, or an int64 array with one value per core of the group."""
    if isinstance(op, Reg):
        name = op.name
        return lambda g: g.regs[name]
    c = op
    return lambda g: c


def get_uniform(op: Any) -> Callable[[Group], int]:
    """Getter for a value every core of the group must agree on (else the group splits)."""
    if isinstance(op, Reg):
        name = op.name

        def get(g: Group) -> int:
            v = g.regs[name]
            if v.__class__ is int:
                return v
            return g.uniform(name, v)
        return get
    c = op
    return lambda g: c


def get_optional(op: Any) -> Optional[Callable[[Group], int]]:
    return None if op is None else get_uniform(op)


def get_scalar(v: Any) -> Callable[[Group], Any]:
    """Scalar operand of a vector instruction: a uniform register value or an immediate."""
    if isinstance(v, Reg):
        return get_uniform(v)
    return lambda g: v


def ceil_to(x: int, a: int) -> int:
    return -(-x // a) * a


# --------------------------------------------------------------------------- rule checks


class Checker:
    """Raises MemoryRuleError / ProgramError naming core, pipe, instruction and byte range."""

    def __init__(self, rt: ProgramInfo, idx: int):
        self.rt = rt
        self.idx = idx
        self.text = rt.texts[idx]
        self.pipe = rt.pipes[idx]
        self.chip = rt.chip

    def fail(self, g: Group, msg: str, rule: str, space: Optional[str] = None, start: Optional[int] = None,
             end: Optional[int] = None, core: Optional[int] = None) -> None:
        core = int(g.cores[0]) if core is None else core
        rng = ""
        if space is not None and start is not None:
            rng = f" [{space} bytes {start:#x}..{end:#x})"
        raise MemoryRuleError(
            f"core {core}: instruction #{self.idx} `{self.text}` on pipe {self.pipe}: {msg}{rng} (rule: {rule})",
            core=core, pipe=self.pipe, instruction=self.idx, text=self.text, space=space, start=start, end=end,
            rule=rule,
        )

    def bad(self, g: Group, msg: str) -> None:
        raise ProgramError(f"core {int(g.cores[0])}: instruction #{self.idx} `{self.text}`: {msg}")

    def positive(self, g: Group, **values: int) -> None:
        for name, v in values.items():
            if v < 1:
                self.bad(g, f"{name} must be at least 1, got {v}")

    def onchip(self, g: Group, space: str, a: int, extent: int, what: str) -> None:
        align = self.chip.space_align(space)
        size = self.chip.space_bytes(space)
        if a % align:
            self.fail(g, f"{what} address {a:#x} is not {align}-byte aligned", f"{space} addresses are "
                      f"{align}-byte aligned", space, a, a + extent)
        if a < 0 or a + extent > size:
            self.fail(g, f"{what} needs {extent} bytes at {a:#x}, beyond the {size}-byte {space} of chip "
                      f"{self.chip.name}", f"{space} capacity {size} bytes", space, a, a + extent)

    def row_stride(self, g: Group, name: str, stride: int, row: int) -> None:
        """A row stride (elements) holds at least a row of `row` elements."""
        if stride < row:
            self.bad(g, f"{name} {stride} is shorter than a row of {row} elements")

    def stride(self, g: Group, space: str, stride_b: int, what: str) -> None:
        blk = self.chip.dma_block_bytes
        if stride_b % blk:
            self.fail(g, f"{what} row stride of {stride_b} bytes is not a whole number of {blk}-byte blocks",
                      f"{space} rows start on {blk}-byte blocks")

    def gm(self, g: Group, buf: Any, off: Any, extent: int, elem: int, what: str) -> None:
        if off.__class__ is int:
            lo = hi = off
        else:
            lo, hi = int(off.min()), int(off.max())
        if lo < 0 or hi + extent > buf.nbytes:
            j = 0
            if off.__class__ is not int:
                badm = (off < 0) | (off + extent > buf.nbytes)
                j = int(np.argmax(badm))
            o = off if off.__class__ is int else int(off[j])
            self.fail(g, f"{what} bytes [{o:#x}, {o + extent:#x}) are outside GM buffer {buf.name!r} "
                      f"({buf.nbytes} bytes)", "GM accesses stay inside their buffer", "GM", o, o + extent,
                      core=int(g.cores[j]))
        if (lo % elem) or (off.__class__ is not int and (off % elem).any()):
            j = 0 if off.__class__ is int else int(np.argmax(off % elem != 0))
            o = off if off.__class__ is int else int(off[j])
            self.fail(g, f"{what} GM offset {o:#x} is not a multiple of the element size {elem}",
                      "GM addresses are element aligned", "GM", o, o + extent, core=int(g.cores[j]))

    def no_partial_overlap(self, g: Group, dst: tuple[int, int], src: tuple[int, int], space: str = "UB") -> None:
        # identical means the same bytes: an in-place cast that widens or narrows would have the
        # unit overwrite source elements of later repeats before it reads them
        (da, dn), (sa, sn) = dst, src
        if (da, dn) != (sa, sn) and da < sa + sn and sa < da + dn:
            self.fail(g, f"destination [{da:#x}, {da + dn:#x}) partially overlaps source [{sa:#x}, {sa + sn:#x})",
                      "vector operands are identical or disjoint", space, da, da + dn)

    def repeats(self, g: Group, reps: int) -> None:
        if reps > self.chip.max_repeats:
            self.fail(g, f"covers {reps} repeats of {self.chip.vector_repeat_bytes} bytes, more than the "
                      f"{self.chip.max_repeats} one vector instruction can do; split it",
                      f"at most {self.chip.max_repeats} repeats per vector instruction")


class PipeSetup:
    """What every pipe instruction's handler shares: its pipe, rule checker, timing record and sanitizer reports.

    `path_name` names the chip's data path (a field of the chip config, also the key of
    the bytes moved) when the instruction moves data over one.
    """

    def __init__(self, rt: ProgramInfo, idx: int, pipe: str, path_name: Optional[str] = None):
        self.rt, self.idx, self.chip = rt, idx, rt.chip
        self.P = PIPE_ID[pipe]
        self.chk = Checker(rt, idx)
        self.path_name = path_name
        self.path = getattr(rt.chip, path_name) if path_name is not None else None

    def op(self, g: Group, cycles: int, vals: Any, exe: Callable, nbytes: int = 0) -> None:
        """Records `cycles` of work on the pipe (and `nbytes` moved on the data path), then issues `exe(g, vals)`."""
        g.stream.append(StreamRecord(stream.OP, self.P, cycles, 0, 0, g.scyc, self.idx))
        g.scyc = 0
        if self.path_name is not None:
            g.bytes[self.path_name] = g.bytes.get(self.path_name, 0) + nbytes
        if g.ctx.record is None:
            issue(g, self.P, exe, vals)
        else:
            issue(g, self.P, _recorded, (exe, vals))

    def dma(self, g: Group, buf: Any, arg: str, off: Any, nrows: int, stride_b: int, width_b: int, write: bool,
            vals: Any, exe: Callable, extra_startup: float = 0) -> None:
        """Records a GM transfer of `nrows` rows of `width_b` bytes, `stride_b` apart, at byte `off` of `buf`
        (kernel argument `arg`)
        (full bandwidth only when every row starts on the peak boundary; each row costs the whole GM
        pieces it touches), then issues `exe(g, vals)`."""
        path, chip = self.path, self.chip
        addr = buf.addr + off
        cap = path.bytes_per_cycle if gm_aligned(g, addr, nrows, stride_b, chip.gm_peak_align) else \
            path.bytes_per_cycle * chip.gm_unaligned_factor
        bus = bus_bytes(addr, nrows, stride_b, width_b, chip.gm_piece_bytes)
        g.stream.append(StreamRecord(stream.DMA, self.P, path.startup + extra_startup, bus, cap, g.scyc, self.idx))
        g.touches[len(g.stream) - 1] = GmTouch(arg, off, nrows, stride_b, width_b, write)
        g.scyc = 0
        g.bytes[self.path_name] = g.bytes.get(self.path_name, 0) + nrows * width_b
        if g.ctx.record is None:
            issue(g, self.P, exe, vals)
        else:
            issue(g, self.P, _recorded, (exe, vals))

    def sanitize(self, g: Group, *accesses: tuple) -> None:
        """Reports accesses, in order, to the sanitizer if it is on: (space name or GM buffer, pattern, write)
        or, for an atomic GM store, (buffer, pattern, True, atomic kind)."""
        san = g.san
        if san is None:
            return
        for where, p, write, *atomic in accesses:
            if where.__class__ is str:
                san.onchip(g, self.P, self.idx, where, p, write)
            else:
                san.gm(g, self.P, self.idx, where, p, write, atomic[0] if atomic else None)


def _recorded(g: Group, v: tuple) -> None:
    """Run a memory action and note it for replays (see replay.py: `Recording.run`)."""
    exe, vals = v
    g.ctx.record.run(exe, g, vals)


def flat(a: int, n: int) -> tuple:
    """Access pattern of `n` contiguous bytes at `a`: (start, rows, row stride, row bytes)."""
    return (a, 1, n, n)


def bus_bytes(addr: Any, nrows: int, stride_b: int, width_b: int, piece: int) -> int:
    """Bytes the bus carries for rows of `width_b` bytes, `stride_b` apart, from GM address `addr` (an int, or
    one per core): every row costs the whole `piece`-byte pieces it touches. Must be uniform over the group."""
    if addr.__class__ is not int:
        phase = addr % piece
        if not (phase == phase[0]).all():
            raise Split(phase)
        addr = int(addr[0])
    if nrows == 1 or stride_b % piece == 0:
        return nrows * ((addr % piece + width_b + piece - 1) // piece) * piece
    starts = addr % piece + np.arange(nrows, dtype=np.int64) * stride_b
    return int(((starts + width_b + piece - 1) // piece - starts // piece).sum()) * piece


def gm_aligned(g: Group, addr: Any, nrows: int, stride_b: int, peak: int) -> bool:
    """Whether every row of a GM transfer starts on the peak-bandwidth boundary.

    `addr` is the absolute GM address of the first row (an int, or one per core); the other
    rows start `stride_b` bytes apart. The answer must be uniform over the group, else it splits.
    """
    if nrows > 1 and stride_b % peak:
        return False
    if addr.__class__ is int:
        return addr % peak == 0
    al = (addr % peak) == 0
    if al.all():
        return True
    if not al.any():
        return False
    raise Split(al.astype(np.int64))


# --------------------------------------------------------------------------- views


def index_map(transform: Callable[[np.ndarray], np.ndarray], n: int) -> np.ndarray:
    """A layout transform (reshapes, transposes, slices) of a (1, n) operand as the source index of each
    element of its result, found by running it on indices."""
    return np.asarray(transform(np.arange(n, dtype=np.int64)[None, :])).reshape(-1)


def strided_form(idx: np.ndarray) -> Optional[tuple[int, tuple[int, ...], tuple[int, ...]]]:
    """(offset, shape, strides), in elements, of a strided array whose C-order walk visits the indices `idx`,
    or None when no such array exists (found axis by axis from the innermost, then checked)."""
    n = idx.size
    if n == 0:
        return None
    shape: list[int] = []
    strides: list[int] = []
    block = 1
    while block < n:
        starts = idx[::block]
        d = int(starts[1] - starts[0])
        bad = np.flatnonzero(np.diff(starts) != d)
        run = starts.size if bad.size == 0 else int(bad[0]) + 1
        if run < 2 or starts.size % run:
            return None
        shape.append(run)
        strides.append(d)
        block *= run
    shape.reverse()
    strides.reverse()
    walk = np.full((), int(idx[0]), np.int64)
    for size, stride in zip(shape, strides):
        walk = walk[..., None] + np.arange(size, dtype=np.int64) * stride
    if not np.array_equal(walk.reshape(-1), idx):
        return None
    return int(idx[0]), tuple(shape), tuple(strides)


def strided_source(src: np.ndarray, idx: np.ndarray) -> Optional[np.ndarray]:
    """A view of `src` (cores, n) whose element [c, p...] (C order over p) is src[c, idx[p]]: a layout change
    as one strided copy, with no index arrays at run time; None when the layout is not strided."""
    form = strided_form(idx)
    if form is None or int(idx.min()) < 0 or int(idx.max()) >= src.shape[1]:
        return None
    offset, shape, strides = form
    item = src.itemsize
    return np.lib.stride_tricks.as_strided(src[:, offset:], (src.shape[0],) + shape,
                                           (src.strides[0],) + tuple(st * item for st in strides))


def gm_view_spec(g: Group, off: Any, nrows: int, stride_b: int, width_b: int) -> Optional[tuple]:
    """(shape, offset, strides) of `gm_view` for the group, to make the view later from whatever bytes the buffer
    has then; None when per-core offsets are not affine."""
    m = g.m
    if off.__class__ is int:
        return (m, nrows, width_b), off, (0, stride_b, 1)
    d = int(off[1] - off[0])
    if m == 2 or (np.diff(off) == d).all():
        return (m, nrows, width_b), int(off[0]), (d, stride_b, 1)
    return None


def gm_view(g: Group, data: np.ndarray, off: Any, nrows: int, stride_b: int, width_b: int) -> Optional[np.ndarray]:
    """(cores, nrows, width_b) byte view of GM for the group, or None when per-core offsets are not affine."""
    m = g.m
    if off.__class__ is int:
        return np.ndarray((m, nrows, width_b), U8, buffer=data, offset=off, strides=(0, stride_b, 1))
    d = int(off[1] - off[0])
    if m == 2 or (np.diff(off) == d).all():
        return np.ndarray((m, nrows, width_b), U8, buffer=data, offset=int(off[0]), strides=(d, stride_b, 1))
    return None


def chip_view(g: Group, arr: np.ndarray, a: int, nrows: int, stride_b: int, width_b: int) -> Optional[np.ndarray]:
    """(cores, nrows, width_b) byte view of the group's on-chip memory, or None for an irregular core set."""
    sel = g.sel
    if sel.__class__ is slice:
        size = arr.shape[1]
        return np.ndarray((g.m, nrows, width_b), U8, buffer=arr, offset=sel.start * size + a,
                          strides=(sel.step * size, stride_b, 1))
    return None


def core_views(g: Group, j: int, gm_data: Optional[np.ndarray], off: Any, arr: Optional[np.ndarray], a: int,
                nrows: int, gstride: int, cstride: int, gwidth: int, cwidth: int):
    """Single-core views (1, nrows, width) for the per-core fallback."""
    gv = cv = None
    if gm_data is not None:
        o = off if off.__class__ is int else int(off[j])
        gv = np.ndarray((1, nrows, gwidth), U8, buffer=gm_data, offset=o, strides=(0, gstride, 1))
    if arr is not None:
        c = int(g.cores[j])
        cv = np.ndarray((1, nrows, cwidth), U8, buffer=arr, offset=c * arr.shape[1] + a,
                        strides=(0, cstride, 1))
    return gv, cv


def region(g: Group, arr: np.ndarray, a: int, nbytes: int, dt: np.dtype) -> np.ndarray:
    """(cores, n) typed view (or copy, for an irregular core set) of a contiguous on-chip region."""
    return arr[g.sel, a:a + nbytes].view(dt)


def out_view(g: Group, arr: np.ndarray, a: int, nbytes: int, dt: np.dtype) -> Optional[np.ndarray]:
    if g.sel.__class__ is slice:
        return arr[g.sel, a:a + nbytes].view(dt)
    return None


def store(g: Group, arr: np.ndarray, a: int, res: np.ndarray, out: Optional[np.ndarray]) -> None:
    if out is None:
        flat = np.ascontiguousarray(res).reshape(g.m, -1).view(U8)
        arr[g.sel, a:a + flat.shape[1]] = flat


def rows_read(g: Group, arr: np.ndarray, a: int, nrows: int, stride_b: int, width_b: int) -> np.ndarray:
    v = chip_view(g, arr, a, nrows, stride_b, width_b)
    if v is not None:
        return v
    return np.concatenate([core_views(g, j, None, 0, arr, a, nrows, 0, stride_b, 0, width_b)[1]
                           for j in range(g.m)])


def rows_write(g: Group, arr: np.ndarray, a: int, nrows: int, stride_b: int, data: np.ndarray) -> None:
    width_b = data.shape[-1]
    v = chip_view(g, arr, a, nrows, stride_b, width_b)
    if v is not None:
        v[...] = data
        return
    for j in range(g.m):
        core_views(g, j, None, 0, arr, a, nrows, 0, stride_b, 0, width_b)[1][...] = data[j:j + 1]


def gm_read(g: Group, buf: Any, off: Any, nrows: int, stride_b: int, width_b: int) -> np.ndarray:
    v = gm_view(g, buf.data, off, nrows, stride_b, width_b)
    if v is not None:
        return v
    return np.concatenate([core_views(g, j, buf.data, off, None, 0, nrows, stride_b, 0, width_b, 0)[0]
                           for j in range(g.m)])


def disjoint(off: Any, extent: int) -> bool:
    """Whether per-core GM offsets `off` (an array) leave the cores' `extent`-byte spans apart."""
    if off.__class__ is int:
        return False
    o = np.sort(off)
    return bool((np.diff(o) >= extent).all())


def gm_write(g: Group, buf: Any, off: Any, nrows: int, stride_b: int, data: np.ndarray,
             combine: Optional[Callable] = None) -> None:
    """Store (cores, nrows, width) bytes; `combine(old, new) -> bytes` for an atomic store."""
    width_b = data.shape[-1]
    v = gm_view(g, buf.data, off, nrows, stride_b, width_b)
    if v is not None and (g.m == 1 or disjoint(off, (nrows - 1) * stride_b + width_b)):
        v[...] = data if combine is None else combine(v, data)
        return
    for j in range(g.m):  # cores whose bytes meet write one after another
        view = core_views(g, j, buf.data, off, None, 0, nrows, stride_b, 0, width_b, 0)[0]
        view[...] = data[j:j + 1] if combine is None else combine(view, data[j:j + 1])
