"""A lower bound, in closed form, on the cost model's score of a cube matmul tiling, without building its schedule.

The tiler scores a matmul's candidates best-first by this bound and stops once every bound left is above the
cheapest score found (`tiling.Ranking`), so the bound must never exceed `cost.estimate` of the schedule
`matmul.schedule` builds for the tiling (tests check it on every candidate of many shapes, both chip presets,
and that the pruned search picks what the exhaustive one picks).

It follows the cost walker's rules (`cost.py`) over what the schedule does, with plain ints:
- core 0's blocks (it takes the largest share): the mean of its first two when it takes more than two, and its
  last; in each block the first and the last K chunk; in each chunk the first and the last L0 step;
- each op charged on its pipe what the chip says: a move its path's start-up plus bytes over bandwidth, an
  mmad its fractal blocks; with a resident A panel, A's chunks in core 0's first block and where a panel
  starts only;
- a rotating loop (its buffers ping-pong) costs per iteration at least its busiest pipe and its inner loops'
  steady state, plus its last iteration's serial span; a loop whose inner loop rotates (one L0C slot) at
  least the least of its iteration's span and of its busiest pipe, inner steady state and L0C chain (the
  mmads and FixPipes the single accumulator serialises); any other loop the sum of its iterations' spans;
- each block's FixPipes as its `Sink`s say: one per column chunk, at the unaligned rate where the GM rows are
  certainly off the 512-byte boundary (more than one row, a row length that is not a multiple of it);
- the launch: its start-up, and at least the time its GM bytes take through the L2 and its stores through HBM.

What it leaves out can only make the estimate larger: GM reads at the aligned rate and with no share of HBM's
bandwidth (the estimate may charge the unaligned factor and the L2 misses), the hold-time and issue-queue
terms of a rotating loop's period, a single bias buffer's chain, the fill copies of short float32/int8
fractals, and the extra start-ups of an int8 K tail loaded panel by panel (charged as one copy).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ... import symbolic as sy
from ...memo import memoised
from ...target import Chip, data_path, itemsize
from ..cost import cube_cycles, gm_bandwidth, gm_span, launch_cycles
from .matmul_tiling import MatmulTiling, a_mode, b_mode


@dataclass(frozen=True)
class Sink:
    """How each block leaves L0C: FixPipes of `chunk` columns each (0: the whole block in one) into GM rows
    `row_bytes` apart (0: not known, charged at the aligned rate)."""

    chunk: int = 0
    row_bytes: int = 0


#: a block written out whole, its rows at the aligned rate
WHOLE = Sink()


def output_sink(mk: Any, dims: Mapping[str, int]) -> Sink:
    """The cube template's own FixPipe (`matmul.to_output`): the whole block into the output's rows, N apart."""
    return Sink(0, sy.evaluate(mk.N, dims) * itemsize(mk.out_dtype))


class _Cost:
    """What the walker's `cost.Cost` holds, for the part the bound follows (a class with slots: the bounds of a
    matmul's candidates make thousands)."""

    __slots__ = ("busy", "span", "steady", "gm", "gm_write", "acc")

    def __init__(self, busy: dict[str, float] | None = None, span: float = 0.0, steady: float = 0.0,
                 gm: float = 0.0, gm_write: float = 0.0, acc: float = 0.0):
        self.busy: dict[str, float] = {} if busy is None else busy
        self.span = span
        self.steady = steady
        self.gm = gm              # GM bytes moved
        self.gm_write = gm_write
        self.acc = acc            # cycles of the ops on the L0C block buffer (mmads and FixPipes)

    def add(self, o: "_Cost", times: float = 1.0) -> None:
        busy = self.busy
        if times == 1.0:   # (most calls: x * 1.0 is x, the same sums without the products)
            for p, c in o.busy.items():
                busy[p] = busy.get(p, 0.0) + c
            self.steady += o.steady
            self.gm += o.gm
            self.gm_write += o.gm_write
            self.acc += o.acc
            return
        for p, c in o.busy.items():
            busy[p] = busy.get(p, 0.0) + c * times
        self.steady += o.steady * times
        self.gm += o.gm * times
        self.gm_write += o.gm_write * times
        self.acc += o.acc * times

    @property
    def busiest(self) -> float:
        return max(self.busy.values(), default=0.0)


def _op(pipe: str, cycles: float, gm: float = 0.0, gm_write: float = 0.0, acc: bool = False) -> _Cost:
    return _Cost({pipe: cycles}, cycles, 0.0, gm, gm_write, cycles if acc else 0.0)


def _serial(*parts: _Cost) -> _Cost:
    """Statements one after another (a block that is not a rotating loop's body)."""
    out = _Cost()
    for p in parts:
        out.add(p)
        out.span += p.span
    return out


def _times(c: _Cost, n: int) -> _Cost:
    """n copies of the same statement in a row (a loop that does not rotate, all iterations alike)."""
    out = _Cost()
    out.add(c, n)
    out.span = c.span * n
    return out


def _loop(first: _Cost, last: _Cost, n: int, rotates: bool) -> _Cost:
    """A loop of n iterations, charged as the walker does (its hold-time term left out)."""
    out = _Cost()
    if n <= 0:
        return out
    out.add(first, n - 1)
    out.add(last)
    if rotates:
        period = max(first.busiest, first.steady)
        out.span = (n - 1) * period + last.span
        # (the walker charges a shallower last chunk at its own pace; never more than this)
        out.steady = (n - 1) * period + min(period, max(last.busiest, last.steady))
    else:
        out.span = (n - 1) * first.span + last.span
        out.steady = out.span
    return out


def _mean(a: _Cost, b: _Cost) -> _Cost:
    out = _Cost()
    out.add(a, 0.5)
    out.add(b, 0.5)
    out.span = (a.span + b.span) / 2
    return out


#: the moves of the cube's schedule: their pipes and cost fields
_PATHS = {k: data_path(*k) for k in (("GM", "L1"), ("L1", "L0A"), ("L1", "L0B"), ("L1", "BT"), ("L0C", "GM"))}


def b_by_panels(t: MatmulTiling) -> bool:
    """B's L0 step (stored K x N, loaded as fractals) in one LoadData2D per column panel instead of one per
    fractal row: fewer, longer loads when the block is narrower than the step is deep (a 64-wide block of a
    128-deep step: 4 loads instead of 8, each start-up paid once per panel; MTE1's issue queue holds a chunk's
    steps with room to spare, so the next chunk's loads are issued on time)."""
    return t.tn < t.tk


class _Model:
    """The cube schedule of one tiling, costed block by block."""

    def __init__(self, mk: Any, t: MatmulTiling, chip: Chip, shape: tuple[int, int, int, int],
                 sinks: tuple[Sink, ...], steps: dict | None = None, store_miss: float = 1.0,
                 bodies: dict | None = None):
        self.mk, self.t, self.chip, self.sinks = mk, t, chip, sinks
        # costed L0 steps, by their shape and how A and B are loaded: a caller's store shared by the tilings
        # of one product (a step does not depend on the rest of the tiling)
        self._steps: dict = {} if steps is None else steps
        # costed blocks without their FixPipes, by the tiling's `_key` and the block's shape: a caller's store
        # shared by the models of one tiling with other sinks or another share of their stores reaching HBM
        self._bodies: dict = {} if bodies is None else bodies
        self._modes = (a_mode(mk, t), b_mode(mk, t), b_by_panels(t))
        self.M, self.N, self.K, batch = shape
        self.nmb, self.nnb = -(-self.M // t.tm), -(-self.N // t.tn)
        self.total = batch * self.nmb * self.nnb
        self.blocks = -(-self.total // max(1, -(-self.total // t.cores))) if self.total > 0 else 0
        self.size = itemsize(mk.dtype)
        self._paths = _PATHS
        gm_l1 = getattr(chip, self._paths["GM", "L1"].cost)
        # reads: no HBM share (miss 0) and the aligned rate; stores: the HBM share the estimate charges them
        self.read_bw = gm_bandwidth(gm_l1, chip, self.blocks, 0.0)
        self.store_bw = gm_bandwidth(getattr(chip, self._paths["L0C", "GM"].cost), chip, self.blocks, store_miss)
        self._chunks: dict[tuple[int, int, int], _Cost] = {}
        self._blocks: dict[tuple[int, int, bool], _Cost] = {}   # (rows, columns, reads A) -> such a block

    # ---- ops ---------------------------------------------------------------------------------------
    def gm_read(self, nbytes: float, copies: int = 1) -> _Cost:
        p = self._paths["GM", "L1"]
        return _op(p.pipe, copies * getattr(self.chip, p.cost).startup + nbytes / self.read_bw, gm=nbytes)

    def on_chip(self, src: str, dst: str, nbytes: float) -> _Cost:
        p = self._paths[src, dst]
        return _op(p.pipe, getattr(self.chip, p.cost).cycles(nbytes))

    def fixpipe(self, mm: int, nn: int, unaligned: bool = False) -> _Cost:
        p = self._paths["L0C", "GM"]
        nbytes = mm * nn * itemsize(self.mk.out_dtype)
        bw = self.store_bw * self.chip.gm_unaligned_factor if unaligned else self.store_bw
        return _op(p.pipe, getattr(self.chip, p.cost).startup + nbytes / bw, nbytes, nbytes, acc=True)

    def sink(self, s: Sink, mm: int, nn: int) -> list[_Cost]:
        """A block's FixPipes into one sink: a chunk at a time, as far as the block reaches (`mixed._to_channel`).
        Rows off the peak boundary cost the unaligned rate only where that is certain: the walker's rule
        (`cost._gm_move`) then fails whatever the block's offset."""
        unaligned = mm > 1 and s.row_bytes % self.chip.gm_peak_align != 0
        if not s.chunk:
            return [self.fixpipe(mm, nn, unaligned)]
        return [self.fixpipe(mm, min(s.chunk, nn - c), unaligned) for c in range(0, nn, s.chunk)]

    def fractal_rows(self, dst: str, kc: int, panels: int, by_panels: bool = False) -> _Cost:
        """LoadData2D per 16-row fractal row of a kc-deep step, `panels` fractals each (`by_panels`: one per
        column panel instead, a fractal per fractal row each)."""
        r0 = self.chip.cube_block
        rows = -(-kc // r0)
        if by_panels:
            rows, panels = panels, rows
        one = self.on_chip("L1", dst, panels * r0 * self.chip.fractal_row_bytes)
        return _times(one, rows)

    # ---- one L0 step, one L1 chunk, one block -----------------------------------------------------------
    def step(self, mm: int, nn: int, kc: int) -> _Cost:
        key = (self._modes, mm, nn, kc)
        hit = self._steps.get(key)
        if hit is None:   # (read only once made)
            hit = self._steps[key] = self._step(mm, nn, kc)
        return hit

    def _step(self, mm: int, nn: int, kc: int) -> _Cost:
        mk, r0 = self.mk, self.chip.cube_block
        a, b, by_panels = self._modes
        if a == "fractals":
            l0a = self.fractal_rows("L0A", kc, -(-mm // r0))
        else:
            l0a = self.on_chip("L1", "L0A", mm * kc * self.size)
        if b == "fractals":
            l0b = self.fractal_rows("L0B", kc, -(-nn // r0), by_panels)
        else:
            l0b = self.on_chip("L1", "L0B", self._l0b_bytes(nn, kc))
        mmad = _op("M", cube_cycles(mk.dtype, mm, kc, nn, self.chip), acc=True)
        return _serial(l0a, l0b, mmad)

    def _l0b_bytes(self, nn: int, kc: int) -> int:
        """Bytes of the load_l0 of one B step (matmul._load_b_l0's operands)."""
        mk = self.mk
        if mk.transpose_b:
            if mk.dtype == "float16":
                return nn * kc * 2
            return nn * _align(kc, mk.c0) * self.size      # the same bytes as 16-bit pairs
        if mk.dtype == "float32":
            return kc * _align(nn, mk.r0) * self.size
        if mk.dtype == "int8":
            return _align(kc, mk.k_quantum) * nn * self.size
        return kc * nn * self.size

    def chunk(self, mm: int, nn: int, kl: int, with_a: bool = True) -> _Cost:
        key = (mm, nn, kl, with_a)
        if key not in self._chunks:
            self._chunks[key] = self._chunk(mm, nn, kl, with_a)
        return self._chunks[key]

    def _chunk(self, mm: int, nn: int, kl: int, with_a: bool = True) -> _Cost:
        mk, t = self.mk, self.t
        pieces = -(-kl // t.tk) if b_mode(mk, t) == "pieces" else 1
        load_b = self.gm_read(kl * nn * self.size, pieces)
        load_a = self.gm_read(mm * kl * self.size) if with_a else _Cost()
        if t.steps == 1:
            return _serial(load_b, load_a, self.step(mm, nn, kl))
        n = -(-kl // t.tk)
        steps = _loop(self.step(mm, nn, min(t.tk, kl)), self.step(mm, nn, kl - (n - 1) * t.tk), n,
                      rotates=t.buffer_num > 1)
        return _serial(load_b, load_a, steps)

    def block(self, index: int) -> _Cost:
        """Output block `index` of the kernel (core 0's i-th block is block i)."""
        t = self.t
        nb, mb = index % self.nnb, (index // self.nnb) % self.nmb
        mm, nn = min(t.tm, self.M - mb * t.tm), min(t.tn, self.N - nb * t.tn)
        # a resident A panel is read in core 0's first block and where a row panel starts only
        with_a = not t.a_resident or index == 0 or nb == 0
        hit = self._blocks.get((mm, nn, with_a))
        if hit is None:   # (the blocks core 0 is charged for are mostly whole ones: costed once, never changed)
            hit = self._blocks[mm, nn, with_a] = self._block(mm, nn, with_a)
        return hit

    def _block(self, mm: int, nn: int, with_a: bool) -> _Cost:
        # (a serial block's sums run left to right: its body's, then its FixPipes', as in one `_serial`)
        key = (_key(self.t), mm, nn, with_a)
        body = self._bodies.get(key)
        if body is None:   # (read only once made)
            body = self._bodies[key] = self._body(mm, nn, with_a)
        return _serial(body, *(c for s in self.sinks for c in self.sink(s, mm, nn)))

    def _body(self, mm: int, nn: int, with_a: bool) -> _Cost:
        """A block up to its FixPipes: the bias, then the K loop."""
        t = self.t
        kl1 = t.kl1
        nk = -(-self.K // kl1)
        first = self.chunk(mm, nn, min(kl1, self.K), with_a)
        last = self.chunk(mm, nn, self.K - (nk - 1) * kl1, with_a) if nk > 0 else first
        parts = []
        if self.mk.bias:
            parts += [self.gm_read(nn * 4), self.on_chip("L1", "BT", nn * 4)]
        parts.append(_loop(first, last, nk, rotates=t.buffer_num > 1))
        return _serial(*parts)

    def terms(self) -> "_Terms":
        """What `core_cycles` combines: core 0's blocks, costed (they do not depend on the L0C slots)."""
        n = -(-self.total // self.blocks) if self.blocks else 0
        if n <= 0:
            return _Terms(n, self.blocks)
        first = self.block(0)
        if n > 2:
            first = _mean(first, self.block(1))
        last = self.block(n - 1) if n > 1 else first
        total = _Cost()
        total.add(first, n - 1)
        total.add(last)
        return _Terms(n, self.blocks, self.t.buffer_num, first.busiest, first.steady, first.span, first.acc,
                      last.span, total.gm * self.blocks, total.gm_write * self.blocks)


@dataclass(frozen=True)
class _Terms:
    """Core 0's costed blocks of one tiling, as `core_cycles` combines them."""

    n: int                   # core 0's blocks
    blocks: int              # cores the launch uses
    buffer_num: int = 1
    first_busiest: float = 0.0
    first_steady: float = 0.0
    first_span: float = 0.0
    first_acc: float = 0.0
    last_span: float = 0.0
    gm: float = 0.0          # GM bytes of all cores
    gm_write: float = 0.0

    def core_cycles(self, l0c_slots: int, chip: Chip) -> float:
        """A lower bound on the estimate without the launch's start-up: core 0's span or the GM time."""
        n = self.n
        if n <= 0:
            return 0.0
        if l0c_slots > 1:          # the block loop rotates its accumulator
            span = (n - 1) * max(self.first_busiest, self.first_steady) + self.last_span
        elif self.buffer_num > 1:  # its K loop rotates: blocks overlap but for the single accumulator's chain
            span = (n - 1) * min(self.first_span, max(self.first_busiest, self.first_steady, self.first_acc)) + \
                self.last_span
        else:
            span = (n - 1) * self.first_span + self.last_span
        return max(span, gm_span(self.gm, self.gm_write, chip))


@memoised(4096)
def _terms(mk: Any, key: tuple, chip: Chip, shape: tuple[int, int, int, int], sinks: tuple[Sink, ...],
           store_miss: float = 1.0) -> _Terms:
    """`_Model(...).terms()` for a tiling's `_key`: a pure function of frozen records and ints (the cube
    template's bounds, which have no per-analysis store to keep them in)."""
    tm, tn, tk, steps, buffer_num, cores, resident = key
    return _Model(mk, MatmulTiling(tm, tn, tk, buffer_num, 1, cores, steps, resident), chip, shape, sinks,
                  store_miss=store_miss).terms()


def _one_slot(t: MatmulTiling) -> MatmulTiling:
    """The tiling with one L0C slot (what its costed blocks are computed for)."""
    return MatmulTiling(t.tm, t.tn, t.tk, t.buffer_num, 1, t.cores, t.steps, t.a_resident)


def _key(t: MatmulTiling) -> tuple[int, ...]:
    """What the costed blocks of a tiling depend on: all of it but its L0C slots (candidates that differ only
    there share them)."""
    return (t.tm, t.tn, t.tk, t.steps, t.buffer_num, t.cores, t.a_resident)


def _align(n: int, a: int) -> int:
    return -(-n // a) * a


def cube_bound(mk: Any, t: MatmulTiling, chip: Chip, dims: Mapping[str, int], sinks: tuple[Sink, ...] = (WHOLE,),
               memo: dict | None = None, store_miss: float = 1.0) -> tuple[float, int]:
    """(a lower bound on the cube launch's estimate without its start-up, its cores) for FixPipes of each block
    into its `sinks` (the output, a mixed launch's workspace tile, or both), at most `store_miss` of their bytes
    reaching HBM (a workspace the L2 holds). `memo`: the caller's store of costed blocks for this `mk`, chip and
    dims (cheaper to look up than the module's memo, which hashes `mk`)."""
    if memo is None:
        terms = _terms(mk, _key(t), chip, extents(mk, dims), sinks, store_miss)
    else:
        key = ("cube terms", _key(t), sinks, store_miss)
        terms = memo.get(key)
        if terms is None:
            steps, bodies = memo.setdefault("cube steps", {}), memo.setdefault("cube bodies", {})
            terms = memo[key] = _Model(mk, _one_slot(t), chip, extents(mk, dims, memo), sinks, steps, store_miss,
                                       bodies).terms()
    return terms.core_cycles(t.l0c_slots, chip) * (1 - BOUND_MARGIN), terms.blocks


#: what a bound gives up, relative, so that its sums in another order than the walker's never land above the
#: estimate (where it follows the walk exactly: whole FixPipes at the rate the walker charges)
BOUND_MARGIN = 1e-10
#: what a floor gives up, relative, so that its sums in another order never land above the bound's
FLOOR_MARGIN = 1e-9


def cube_floor(mk: Any, t: MatmulTiling, chip: Chip, dims: Mapping[str, int], sinks: tuple[Sink, ...] = (WHOLE,),
               memo: dict | None = None, store_miss: float = 1.0) -> tuple[float, int]:
    """(a lower bound on `cube_bound`'s first value, the launch's cores) that only looks at the block shape, the
    cores, the slots and whether A's panel is resident, so the tilings of one block shape share it (the tiler
    computes `cube_bound` only for the candidates this cannot rule out: `tiling.Ranking`'s floors).

    `cube_bound`'s span over core 0's blocks is never below one pipe's busy time over them (each op's span is its
    cycles, and a loop's period at least its busiest pipe), nor below the busiest pipe's time over all blocks but
    the last plus the last one's span (a serial block: its bias moves, its K loop, at least as long as that loop's
    busiest pipe, then its FixPipes; single-buffered, the K loop is serial: at least its loads and its mmads one
    after the other). Per block, at least: on MTE2 the bias and one chunk's two loads (one start-up each) of all
    of the block's A (none where a resident panel is reused) and B bytes at the read rate; on M one mmad start-up
    and the product's fractal blocks; on FIX its FixPipes. The larger of the two, less FLOOR_MARGIN."""
    key = ("cube floor", t.tm, t.tn, t.cores, t.buffer_num, sinks, store_miss, t.a_resident)
    hit = memo.get(key) if memo is not None else None
    if hit is None:
        hit = _floor(_Model(mk, _one_slot(t), chip, extents(mk, dims, memo), sinks, store_miss=store_miss))
        if memo is not None:
            memo[key] = hit
    return hit


def _floor(model: _Model) -> tuple[float, int]:
    n = -(-model.total // model.blocks) if model.blocks else 0
    if n <= 0:
        return 0.0, model.blocks
    t = model.t

    def pipes(index: int) -> tuple[dict[str, float], float]:
        """Block `index`'s busy time per pipe, and a lower bound on its span."""
        nb, mb = index % model.nnb, (index // model.nnb) % model.nmb
        mm, nn = min(t.tm, model.M - mb * t.tm), min(t.tn, model.N - nb * t.tn)
        reads_a = not t.a_resident or index == 0 or nb == 0
        loads = [model.gm_read(model.K * nn * model.size),
                 model.gm_read(mm * model.K * model.size) if reads_a else _Cost()]
        mmad = _op("M", cube_cycles(model.mk.dtype, mm, model.K, nn, model.chip))
        fixes = [c for s in model.sinks for c in model.sink(s, mm, nn)]
        bias = [model.gm_read(nn * 4), model.on_chip("L1", "BT", nn * 4)] if model.mk.bias else []
        out: dict[str, float] = {}
        for c in (*loads, mmad, *fixes, *bias):
            for p, cycles in c.busy.items():
                out[p] = out.get(p, 0.0) + cycles
        loading = sum(c.span for c in loads)   # (both loads on the GM -> L1 pipe)
        k_loop = max(loading, mmad.span) if t.buffer_num > 1 else loading + mmad.span
        return out, sum(c.span for c in bias) + k_loop + sum(c.span for c in fixes)

    first, _ = pipes(0)
    if n > 2:
        second, _ = pipes(1)
        first = {p: (c + second[p]) / 2 for p, c in first.items()}
    last, last_span = pipes(n - 1) if n > 1 else pipes(0)
    busiest = max((n - 1) * c + last[p] for p, c in first.items())
    serial = (n - 1) * max(first.values()) + last_span
    return max(busiest, serial) * (1 - FLOOR_MARGIN), model.blocks


def extents(mk: Any, dims: Mapping[str, int], memo: dict | None = None) -> tuple[int, int, int, int]:
    """(M, N, K, batch count) for the scored dims (kept in `memo`, the caller's store for this `mk` and dims)."""
    hit = memo.get("extents") if memo is not None else None
    if hit is None:
        hit = (sy.evaluate(mk.M, dims), sy.evaluate(mk.N, dims), sy.evaluate(mk.K, dims),
               sy.evaluate(mk.batch_count, dims))
        if memo is not None:
            memo["extents"] = hit
    return hit


def bound(mk: Any, t: MatmulTiling, chip: Chip, dims: Mapping[str, int]) -> float:
    """A lower bound on `cost.estimate(matmul.schedule(mk, t, chip), dims, chip)`."""
    core, blocks = cube_bound(mk, t, chip, dims, (output_sink(mk, dims),))
    return core + launch_cycles(chip, blocks) if blocks else 0.0


def floor(mk: Any, t: MatmulTiling, chip: Chip, dims: Mapping[str, int]) -> float:
    """A cheaper lower bound, never above `bound` (`cube_floor`)."""
    core, blocks = cube_floor(mk, t, chip, dims, (output_sink(mk, dims),))
    return core + launch_cycles(chip, blocks) if blocks else 0.0
