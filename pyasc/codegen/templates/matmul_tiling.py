"""Matmul tilings: what a base block costs on chip, which blocks the tiler scores, and how much of A and B
the L2 serves.

A tiling (`MatmulTiling`) is tm x tn output blocks, K walked in L0 steps of tk, `steps` of them per L1
chunk (the L1 chunk is steps * tk deep: one GM -> L1 move feeds several L0 loads, so the DMA start-up is
paid once per chunk and the move is wide enough for the cube to hide it), `buffers` slots of the L1 and
L0A/L0B chunk buffers, `l0c_slots` of the accumulator, `cores` available. Nothing here is a default: the
candidates below are every legal combination worth scoring, and the cost model picks.

How one L0 step is cut out of an L1 chunk depends on the operand's layout in L1 (NZ: column panels of c0):
- "whole": the chunk is one L0 step (steps == 1), or the K slice is whole column panels of the chunk
  (A stored M x K, B stored N x K): one load_l0 from an offset.
- "fractals": the K slice is rows of every column panel (B stored K x N, A stored K x M): LoadData2D, one
  instruction per 16-row fractal row of the slice, transposing each 16-bit fractal on the way. float16 only.
- "pieces": B stored K x N in float32 or int8 (no 16-bit fractal transpose gives their L0B image): the
  chunk is moved as `steps` NZ images of tk rows each, one copy_nd2nz per step.
"""
from __future__ import annotations

from collections import OrderedDict
from functools import lru_cache
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ...target import Chip, data_path, itemsize

from ... import symbolic as sy
from ...memo import memoised
from ..cost import cube_cycles
from ..template import Tiling, buffer_nums, fits_memories

#: base block sizes the tiler tries (multiples of the 16-row fractal)
BASE_SIZES = (16, 32, 64, 128, 256)
#: output blocks up to which the L2 reuse of a candidate is walked block by block
WALK_LIMIT = 20000
#: L1 chunks a resident A panel may take: a slot each, and an event id each for the flags between MTE2 and MTE1
#: (8 per pipe pair, shared with B's chunks)
MAX_RESIDENT_CHUNKS = 4
#: blocks a core's run must hold for a resident A panel to be offered: all cores load their first panel at once
#: (HBM-bound, a burst the estimates do not see), which two blocks do not earn back (910b, 768^3: 256x64 blocks
#: two per core scored 10,661 resident and ran 11,964 cycles; 128x256 ones, not resident, scored and ran 10,931)
MIN_RESIDENT_RUN = 3


@dataclass(frozen=True)
class MatmulTiling(Tiling):
    tm: int
    tn: int
    tk: int
    buffer_num: int     # slots of the L1 and L0A/L0B chunk buffers (1 or 2)
    l0c_slots: int      # slots of the L0C block buffer (1 or 2)
    cores: int          # cores available (the launch uses min(cores, blocks))
    steps: int = 1      # L0 K steps per L1 chunk
    a_resident: bool = False   # A's whole row panel (tm x K) stays in L1 across the core's blocks in that panel

    @property
    def kl1(self) -> int:
        """K depth of one L1 chunk."""
        return self.tk * self.steps

    def describe(self) -> str:
        chunk = f", L1 chunk {self.kl1} deep ({self.steps} steps)" if self.steps > 1 else ""
        panel = ", A panel resident in L1" if self.a_resident else ""
        return (f"base {self.tm}x{self.tn}x{self.tk}{chunk}{panel}, L1/L0 slots={self.buffer_num}, "
                f"L0C slots={self.l0c_slots}, cores<={self.cores}")


def _ceil(x: int, a: int) -> int:
    return -(-x // a) * a


def a_mode(mk: Any, t: MatmulTiling) -> str:
    """How an L0 step of A is taken out of its L1 chunk (see the module docstring)."""
    if t.steps == 1 or not mk.transpose_a:
        return "whole"
    if mk.dtype != "float16":
        raise AssertionError("a transposed A reaches the cube as float16 only (matmul_plan transposes the rest)")
    return "fractals"


def b_mode(mk: Any, t: MatmulTiling) -> str:
    if t.steps == 1 or mk.transpose_b:
        return "whole"
    return "fractals" if mk.dtype == "float16" else "pieces"


# ---- on-chip footprint (static: tile sizes are ints) -------------------------------------------------


def l1_a_bytes(mk: Any, t: MatmulTiling) -> int:
    """One slot of A's L1 buffer: a chunk (a resident panel has a slot per chunk)."""
    return l1_a_chunk_bytes(mk, t)


def a_slots(mk: Any, t: MatmulTiling) -> int:
    """Slots of A's L1 buffer: `buffer_num`, or one per chunk of a resident panel (chunk kk stays in slot kk, so
    the sync analysis sees a chunk's load wait for the reads of that chunk alone, not of the whole panel)."""
    return -(-mk.K // t.kl1) if t.a_resident else t.buffer_num


def l1_a_chunk_bytes(mk: Any, t: MatmulTiling) -> int:
    size, k = itemsize(mk.dtype), t.kl1
    if mk.transpose_a:  # the NZ image of the stored (k x tm) chunk
        return _ceil(k, mk.r0) * _ceil(t.tm, mk.c0) * size
    return _ceil(t.tm, mk.r0) * _ceil(k, mk.c0) * size


def l1_b_piece_bytes(mk: Any, t: MatmulTiling) -> int:
    """One L0 step of B stored K x N as its own NZ image (tk rows; columns padded to c0 by copy_nd2nz and
    to the r0 of an L0B fractal)."""
    return _ceil(t.tk, mk.k_quantum) * _ceil(t.tn, mk.k_quantum) * itemsize(mk.dtype)


def l1_b_bytes(mk: Any, t: MatmulTiling) -> int:
    size, k = itemsize(mk.dtype), t.kl1
    if mk.transpose_b:  # the NZ image of the stored (tn x k) chunk
        return _ceil(t.tn, mk.r0) * _ceil(k, mk.c0) * size
    if b_mode(mk, t) == "pieces":
        return t.steps * l1_b_piece_bytes(mk, t)
    return _ceil(k, mk.k_quantum) * _ceil(t.tn, mk.k_quantum) * size


def l0a_bytes(mk: Any, t: MatmulTiling) -> int:
    return _ceil(t.tm, mk.r0) * _ceil(t.tk, mk.c0) * itemsize(mk.dtype)


def l0b_bytes(mk: Any, t: MatmulTiling) -> int:
    return _ceil(t.tk, mk.k_quantum) * _ceil(t.tn, mk.r0) * itemsize(mk.dtype)


def footprint(mk: Any, t: MatmulTiling) -> list[tuple[str, str, str, int, int, str]]:
    """(name, space, dtype, bytes per slot, slots, role) of every on-chip buffer."""
    out = [
        ("l1a", "L1", mk.dtype, _ceil(l1_a_bytes(mk, t), mk.l1_align), a_slots(mk, t),
         "A row panel (NZ), a chunk per slot" if t.a_resident else "A chunk (NZ)"),
        ("l1b", "L1", mk.dtype, _ceil(l1_b_bytes(mk, t), mk.l1_align), t.buffer_num, "B chunk (NZ)"),
        ("l0a", "L0A", mk.dtype, l0a_bytes(mk, t), t.buffer_num, "A step (ZZ)"),
        ("l0b", "L0B", mk.dtype, l0b_bytes(mk, t), t.buffer_num, "B step (ZN)"),
        ("l0c", "L0C", mk.acc_dtype, t.tm * t.tn * 4, t.l0c_slots, "accumulator"),
    ]
    if mk.bias:
        out += [("l1bias", "L1", "float32", _ceil(t.tn * 4, mk.l1_align), 1, "bias chunk"),
                ("bt", "BT", "float32", _ceil(t.tn * 4, mk.bias_align), 1, "bias table")]
    return out


def fits(mk: Any, t: MatmulTiling, chip: Chip) -> bool:
    return fits_memories(footprint(mk, t), chip)


# ---- candidates ---------------------------------------------------------------------------------------


def tilings(mk: Any, chip: Chip, buffer_num: int, cores: int, dims: Mapping[str, int]) -> list[MatmulTiling]:
    """Base sizes worth scoring: for every (tm, tn) up to the padded output, the largest tk that fits (and
    half of it), each with L1 chunks of one L0 step, of the most steps that fit and of half that, single and
    double buffered
    (buffer_num is the cap). `dims` binds symbolic dims to the sizes the tiler scores (the real ones are
    read at launch)."""
    cores = max(1, min(cores, chip.aic_cores))
    M, N, K = (sy.evaluate(x, dims) for x in (mk.M, mk.N, mk.K))
    return list(_tilings(mk, chip, buffer_num, cores, M, N, K))


@memoised(64)
def _tilings(mk: Any, chip: Chip, buffer_num: int, cores: int, M: int, N: int, K: int) -> tuple[MatmulTiling, ...]:
    """`tilings` for the scored extents: a pure function of frozen records and ints, asked for twice per
    matmul (the router's check that the mixed launch tiles, then the tiler)."""
    k_cap = _ceil(max(K, 1), mk.k_quantum)
    out = _candidates(mk, chip, buffer_num, cores, _base_sizes(M, cores), _base_sizes(N, cores), k_cap)
    # a small chip may fit none of the few large blocks a large (or nominal) extent asks for
    out = out or _candidates(mk, chip, buffer_num, cores, _base_sizes(M, 0), _base_sizes(N, 0), k_cap)
    return tuple(out + _resident(mk, chip, out, M, N))


def _resident(mk: Any, chip: Chip, found: list[MatmulTiling], M: int, N: int) -> list[MatmulTiling]:
    """The double-buffered candidates again with A's row panel resident in L1, where that can save reads: K
    static (the panel's size), A stored M x K, at most MAX_RESIDENT_CHUNKS chunks deep, a core's run of blocks
    (consecutive in a row panel) MIN_RESIDENT_RUN long or more, and steps the cube paces. A block then reads only
    B from GM, but the first of each panel."""
    if not isinstance(mk.K, int) or mk.transpose_a:
        return []
    out = []
    for t in found:
        nmb, nnb = -(-M // t.tm), -(-N // t.tn)
        per = -(-(nmb * nnb) // t.cores)
        if t.buffer_num < 2 or nnb < 2 or per < MIN_RESIDENT_RUN or -(-mk.K // t.kl1) > MAX_RESIDENT_CHUNKS or \
                not _cube_outlasts_l0_moves(mk, t, chip):
            continue
        r = MatmulTiling(t.tm, t.tn, t.tk, t.buffer_num, t.l0c_slots, t.cores, t.steps, a_resident=True)
        if fits(mk, r, chip):
            out.append(r)
    return out


def same_score(mk: Any, t: MatmulTiling, dims: Mapping[str, int]) -> MatmulTiling | None:
    """The tiling with one L0C slot, where its estimate is this one's: two slots, and core 0 takes one block at
    most. The block loop then runs once (its rotation, its hold time and the single accumulator's chain never
    enter a period), and inside the K loop L0C's hold is never the longest (every L0 step's L0A slot is held
    from its load through the mmad, L0C's by the mmad alone). None where that is not known."""
    if t.l0c_slots < 2:
        return None
    M, N, batch = (sy.evaluate(x, dims) for x in (mk.M, mk.N, mk.batch_count))
    total = batch * -(-M // t.tm) * -(-N // t.tn)
    if -(-total // t.cores) > 1:
        return None
    return MatmulTiling(t.tm, t.tn, t.tk, t.buffer_num, 1, t.cores, t.steps, t.a_resident)


def _cube_outlasts_l0_moves(mk: Any, t: MatmulTiling, chip: Chip) -> bool:
    """Whether a whole L0 step's mmad takes longer than its L1 -> L0A / L0B moves. Where it does not (narrow
    blocks: A's step costs MTE1 the same whatever the width) MTE1 paces the steps, a resident panel saves only
    MTE2 time that was not the limit, and the estimates of such blocks run short of the emulator (910b, 768^3:
    128x64 blocks scored 10,337 resident and ran 11,811 cycles; 128x256 blocks scored and ran 10,931)."""
    size, r0 = itemsize(mk.dtype), chip.cube_block
    to_a, to_b = (getattr(chip, data_path("L1", dst).cost) for dst in ("L0A", "L0B"))
    moves = to_a.cycles(t.tm * t.tk * size)
    if b_mode(mk, t) == "fractals":   # LoadData2D per 16-row fractal row (matmul._step_l0)
        moves += -(-t.tk // r0) * to_b.cycles(-(-t.tn // r0) * r0 * chip.fractal_row_bytes)
    else:
        moves += to_b.cycles(t.tk * t.tn * size)
    return cube_cycles(mk.dtype, t.tm, t.tk, t.tn, chip) > moves


def _candidates(mk: Any, chip: Chip, buffer_num: int, cores: int, ms: list[int], ns: list[int],
                k_cap: int) -> list[MatmulTiling]:
    q = mk.k_quantum
    depths = _tk_sizes(q, k_cap)
    search = _Search(mk, chip, cores, k_cap, ms, ns)
    out: list[MatmulTiling] = []
    for bn in buffer_nums(buffer_num, most=2):
        for l0c in buffer_nums(buffer_num, most=2):
            for tm in ms:
                for tn in ns:
                    tk = search.largest_tk(tm, tn, bn, l0c, depths)
                    if tk == 0:
                        continue
                    for s in _steps_around(search.most_steps(tm, tn, tk, bn, l0c)):
                        out.append(MatmulTiling(tm, tn, tk, bn, l0c, cores, s))
                    half = max(q, tk // 2 // q * q)
                    if half != tk:   # a shallower L0 step: fewer bytes per MTE1 move, more mmads
                        deepest = search.most_steps(tm, tn, half, bn, l0c)
                        out += [MatmulTiling(tm, tn, half, bn, l0c, cores, s) for s in sorted({1, deepest})]
    return out


def _tk_sizes(q: int, cap: int) -> list[int]:
    """The L0 step depths tried, shallowest first: q doubled while it stays within cap, then cap itself."""
    out = []
    tk = q
    while tk <= cap:
        out.append(tk)
        tk = tk * 2 if tk * 2 <= cap else (cap if tk < cap else cap + 1)
    return out


def _steps_around(most: int) -> list[int]:
    """The L1 chunk depths (in L0 steps) scored: one step, the deepest that fits and half of it."""
    return sorted({1, most, max(1, most // 2)})


class _Search:
    """The deepest L0 step and L1 chunk that fit, for the candidates of one `_candidates` call.

    A footprint only grows with the block (tm, tn), the step depth, the chunk's steps and the slots, so whether a
    tiling fits holds up to some depth and at none past it, and the answer for a tiling is at most the answer for
    any tiling smaller in one of these (its neighbours, asked for first in `_candidates`' order): each search
    starts at that limit and walks down (one check, mostly), instead of up from the shallowest.
    """

    def __init__(self, mk: Any, chip: Chip, cores: int, k_cap: int, ms: list[int], ns: list[int]):
        self.mk, self.chip, self.cores, self.k_cap = mk, chip, cores, k_cap
        self._before = {**_predecessors(ms, "tm"), **_predecessors(ns, "tn")}
        self._tk: dict[tuple, int] = {}       # (bn, l0c, tm, tn) -> the deepest step that fits
        self._steps: dict[tuple, int] = {}    # (bn, l0c, tm, tn, tk) -> the most steps per chunk that fit

    def _limit(self, known: dict, bn: int, l0c: int, tm: int, tn: int, *rest: int) -> int | None:
        """The least answer known for a neighbour one size smaller in one coordinate (None: none known)."""
        near = [(1, l0c, tm, tn), (bn, 1, tm, tn), (bn, l0c, self._before.get(("tm", tm)), tn),
                (bn, l0c, tm, self._before.get(("tn", tn)))]
        found = [known[k + rest] for k in near if k + rest in known and k != (bn, l0c, tm, tn)]
        return min(found) if found else None

    def _fits(self, tm: int, tn: int, tk: int, bn: int, l0c: int, steps: int = 1) -> bool:
        return fits(self.mk, MatmulTiling(tm, tn, tk, bn, l0c, self.cores, steps), self.chip)

    def largest_tk(self, tm: int, tn: int, bn: int, l0c: int, depths: list[int]) -> int:
        """The deepest of `depths` whose one-step tiling fits (0: none)."""
        key = (bn, l0c, tm, tn)
        if key not in self._tk:
            self._tk[key] = _largest(depths, lambda tk: self._fits(tm, tn, tk, bn, l0c),
                                     self._limit(self._tk, bn, l0c, tm, tn))
        return self._tk[key]

    def most_steps(self, tm: int, tn: int, tk: int, bn: int, l0c: int) -> int:
        """The most L0 steps (a power of two) an L1 chunk of this tiling holds within K (1 at least)."""
        key = (bn, l0c, tm, tn, tk)
        if key not in self._steps:
            counts = []
            n = 2
            while n * tk <= _ceil(self.k_cap, tk):
                counts.append(n)
                n *= 2
            most = _largest(counts, lambda s: self._fits(tm, tn, tk, bn, l0c, s),
                            self._limit(self._steps, bn, l0c, tm, tn, tk))
            self._steps[key] = max(1, most)
        return self._steps[key]


def _predecessors(sizes: list[int], axis: str) -> dict[tuple[str, int], int]:
    """(axis, size) -> the next smaller size of the ascending list."""
    return {(axis, b): a for a, b in zip(sizes, sizes[1:])}


def _largest(options: list[int], holds: Callable[[int], bool], limit: int | None) -> int:
    """The largest of the ascending `options` at which `holds` (true up to some option, false after it), 0 at
    none; `limit`, when given, is known to be at least that answer (a search from there downwards)."""
    if limit is None:
        best = 0
        for o in options:
            if not holds(o):
                break
            best = o
        return best
    for o in reversed(options):
        if o <= limit and holds(o):
            return o
    return 0


def _base_sizes(extent: int, cores: int) -> list[int]:
    """Block sizes along one output dim: every base size below the padded extent that does not cut it into
    more than 4 blocks per core (smaller ones only add start-up costs; cores=0: no such limit), and the one
    covering it."""
    padded = _ceil(max(extent, 1), BASE_SIZES[0])
    out = [s for s in BASE_SIZES if s < padded and (not cores or -(-extent // s) <= 4 * cores)]
    return sorted(set(out + [min(padded, BASE_SIZES[-1])]))


# ---- L2 reuse -----------------------------------------------------------------------------------------


def l2_miss(mk: Any, t: MatmulTiling, fields: Mapping[str, int], blocks: int, chip: Chip) -> float:
    """The fraction of the kernel's reads of A and B that come from HBM (`hbm_reads` over all reads)."""
    K, total = fields["K"], fields["T"]
    reads = total * K * (t.tm + t.tn) * itemsize(mk.dtype)
    return min(1.0, hbm_reads(mk, t, fields, blocks, chip) / reads) if reads > 0 else 1.0


def hbm_reads(mk: Any, t: MatmulTiling, fields: Mapping[str, int], blocks: int, chip: Chip) -> float:
    """Bytes of A and B the kernel reads from HBM; every other read of them hits in the L2.

    The cores walk their runs of output blocks in step (block s of every core at about the same time).
    A block reads one row panel of A (tm x K) and one column panel of B (K x tn); the panels of one step are
    an access batch of an LRU cache of the chip's L2 capacity, at panel granularity, that the result
    blocks (written through, allocated in L2) also pass through. A panel is read from HBM when it is not in
    the cache. The walk is exact up to the interleaving of chunks inside a step."""
    a_batched = any(d.a_stride != 0 for d in mk.batch)
    b_batched = any(d.b_stride != 0 for d in mk.batch)
    return _walk(fields["M"], fields["N"], fields["K"], fields["T"], t.tm, t.tn, blocks, itemsize(mk.dtype),
                 itemsize(mk.out_dtype), a_batched, b_batched, chip.l2_bytes)


@lru_cache(maxsize=256)
def _walk(M: int, N: int, K: int, total: int, tm: int, tn: int, blocks: int, size: int, osize: int,
          a_batched: bool, b_batched: bool, capacity: int) -> float:
    if blocks <= 0 or total <= 0:
        return 0.0
    if total > WALK_LIMIT:
        return float(total * K * (tm + tn) * size)   # too many blocks to walk at compile time: no reuse assumed
    nmb, nnb = -(-M // tm), -(-N // tn)
    per = -(-total // blocks)
    a_panel, b_panel, c_block = tm * K * size, K * tn * size, tm * tn * osize
    cache: OrderedDict[Any, int] = OrderedDict()
    held = 0
    missed = 0.0
    for s in range(per):
        for c in range(blocks):
            b = c * per + s
            if b >= total:
                continue
            nb, r = b % nnb, b // nnb
            mb, bi = r % nmb, r // nmb
            for key, nbytes in ((("a", mb, bi if a_batched else 0), a_panel),
                                (("b", nb, bi if b_batched else 0), b_panel),
                                (("c", b), c_block)):
                if key in cache:
                    cache.move_to_end(key)
                    continue
                if key[0] != "c":
                    missed += nbytes
                cache[key] = nbytes
                held += nbytes
                while held > capacity and cache:
                    _, gone = cache.popitem(last=False)
                    held -= gone
    return missed
