"""An analytic cost model of a tile schedule, read from the chip config: the tiler's score.

Each tile op is charged on its pipe what the chip config says (vector start-up
plus repeats times the cost class, DMA start-up plus bytes over the path's
bandwidth, cube start-up plus fractal blocks). GM transfers of a multi-core
launch share the aggregate GM bandwidth, so a core's DMA runs at
min(path bandwidth, aggregate / active cores), and a transfer whose GM
address is not on a 512-byte boundary gets the chip's unaligned factor.

Every GM byte passes the L2, whose bandwidth the cores share too; a template
that re-reads data (matmul panels) says which fraction of its reads miss in
L2 (`TileSchedule.l2_miss`), and only those share HBM's bandwidth with the
stores (the L2 writes through).

A loop whose buffers rotate (ping-pong) overlaps its pipes: it costs its
busiest pipe per iteration plus one iteration's remainder (fill and drain),
at least its inner loops' steady state, and at least the time one iteration
holds a slot of a rotating buffer over the slot count (with at most `slots`
iterations in flight, an L1 chunk read step by step by an inner loop bounds
the period; so does a scalar unit that cannot issue the next chunk's move
while an issue queue is full); its steady state charges a shallower last
iteration (a K edge chunk: fewer GM bytes and cube blocks) at that
iteration's own busiest pipe. A loop without rotation serialises its pipes
(each tile waits for the previous one's flags), unless its inner loops
rotate: then iterations overlap except for the work a single-slot buffer
passes between pipes (one L0C: FixPipe, then the next block's mmads). The
outermost loop's middle iterations are charged as the mean of its first two
(a block on or off the 512-byte boundary). The kernel's time is the span of
its busiest core (core 0 takes the largest share of the work).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from .. import symbolic as sy
from ..memo import memoised
from ..target import Chip, DmaPath, data_path, itemsize, repeats, vector_passes
from .schedule import BLOCKS, CORE, GROUP, SUB, GmRef, Let, Loop, Ref, Stmt, TileOp, TileSchedule, When


@dataclass
class Cost:
    busy: dict[str, float] = field(default_factory=dict)   # pipe -> cycles
    span: float = 0.0                                      # critical path in cycles
    gm_bytes: float = 0.0
    gm_write_bytes: float = 0.0
    steady: float = 0.0    # the loops' steady-state time (iterations x period), without fill and drain
    parts: list = field(default_factory=list)   # a block's (span, statement, Cost) triples (not summed by add)
    # a loop's first and last iteration as such triples: where in it a buffer is first and last touched
    head: list = field(default_factory=list)
    tail: list = field(default_factory=list)
    # single-slot buffer -> (cycles of the ops touching it, their pipes): work that one buffer serialises
    chain: dict[str, tuple[float, frozenset]] = field(default_factory=dict)
    resident: tuple = (0.0, 0.0, 0.0)   # GM bytes of L2-resident parameters: read, written, reaching HBM

    def add(self, other: "Cost", times: float = 1.0) -> None:
        for p, c in other.busy.items():
            self.busy[p] = self.busy.get(p, 0.0) + c * times
        for b, (c, pipes) in other.chain.items():
            mine, seen = self.chain.get(b, (0.0, frozenset()))
            self.chain[b] = (mine + c * times, seen | pipes)
        self.gm_bytes += other.gm_bytes * times
        self.gm_write_bytes += other.gm_write_bytes * times
        self.steady += other.steady * times
        if other.resident[0] or other.resident[1]:
            self.resident = tuple(x + y * times for x, y in zip(self.resident, other.resident))


@dataclass
class Estimate:
    cycles: float
    core_cycles: float
    gm_bytes: float          # all cores
    blocks: int
    busy: dict[str, float]   # core 0, per pipe
    tail: float = 0.0        # core 0's cycles from the last op `estimate`'s `tail_from` picks to its end

    def describe(self) -> str:
        pipes = ", ".join(f"{p} {c:.0f}" for p, c in sorted(self.busy.items()))
        return f"{self.cycles:.0f} cycles on {self.blocks} cores (core 0 busy: {pipes})"


def _vector_cycles(op: TileOp, env: Mapping[str, int], chip: Chip, memo: dict | None = None) -> float:
    """Start-up plus repeats per pass of what the hardware runs (the simulator's cost table: an instruction
    the 910B lacks is charged its decomposition), over the units of work the instruction's shape says.
    `memo`: a walker's store of each op's fixed part (by id) and of the cycles per (fixed part, units): an
    elementwise body repeats a few kinds of op over one tile, walked for several iterations."""
    fixed = memo.get(id(op)) if memo is not None else None
    if fixed is None:
        a = op.args
        # the width is the widest element named by a dtype field (not a mask's or an index list's fixed type)
        sizes = tuple(itemsize(a[m.elem]) for m in op.spec.mems if m.elem in a)
        shape = op.spec.shape
        operands = (a["rows"], a["cols"]) if shape in ("rows", "transpose") else (a["count"],)
        fixed = ((op.instr, a.get("fn"), a.get("dtype"), sizes), shape, operands)
        if memo is not None:
            memo[id(op)] = fixed
    what, shape, operands = fixed
    if shape == "rows":
        units = ((_ev(operands[0], env), _ev(operands[1], env)),)
    elif shape == "transpose":
        units = ((1, _ev(operands[0], env) * _ev(operands[1], env)),)
    else:
        units = ((1, _ev(operands[0], env)),)
    if memo is not None:
        cycles = memo.get((what, units))
        if cycles is not None:
            return cycles
    costs = (chip.vector_simple_cycles, chip.vector_binary_cycles, chip.vector_complex_cycles,
             chip.vector_composite_cycles, chip.vector_repeat_bytes, chip.max_repeats, chip.vector_startup_cycles)
    cycles = _vector_work(*what, units, costs)
    if memo is not None:
        memo[what, units] = cycles
    return cycles


@memoised(4096)
def _vector_work(instr: str, fn: Any, dtype: Any, sizes: tuple[int, ...], units: tuple[tuple[int, int], ...],
                 costs: tuple[int, ...]) -> float:
    """`_vector_cycles` once the operands are evaluated: a pure function of ints and names (the same ops
    over the same tile recur in every candidate and every kernel)."""
    simple, binary, complex_, composite, rb, max_repeats, startup = costs
    per = {"simple": simple, "binary": binary, "complex": complex_, "composite": composite}
    total = 0.0
    for p in vector_passes(instr, fn, dtype):
        width = p.width or max(sizes)
        for rows, n in units:
            reps = rows * repeats(n * width, rb)
            instrs = -(-reps // max_repeats)
            total += instrs * startup + reps * per[p.cls]
    return total


def _ev(v: Any, env: Mapping[str, int]) -> int:
    return v if v.__class__ is int else sy.evaluate(v, env)


def _space(v: Any, spaces: Mapping[str, str]) -> str | None:
    if isinstance(v, GmRef):
        return "GM"
    if isinstance(v, Ref):
        return spaces[v.buffer]
    return None


def _evaluated(op: TileOp, env: Mapping[str, int], spaces: Mapping[str, str],
               memo: dict | None = None) -> dict[str, Any]:
    """The operands as a spec's formulas read them: integers evaluated, memory operands as their spaces.
    `memo`: a walker's store of each op's plan (by id): its fixed operands (spaces, other values) and the
    expressions to evaluate (a walk meets an op once per iteration it walks)."""
    plan = memo.get(id(op)) if memo is not None else None
    if plan is None:
        fixed: dict[str, Any] = {}
        exprs: list[tuple[str, Any]] = []
        for k, v in op.args.items():
            if isinstance(v, (Ref, GmRef)):
                fixed[k] = _space(v, spaces)
            elif isinstance(v, sy.Expr):
                exprs.append((k, v))
            else:
                fixed[k] = v
        plan = (fixed, exprs, list(op.args))
        if memo is not None:
            memo[id(op)] = plan
    fixed, exprs, order = plan
    if not exprs:
        return dict(fixed)
    values = dict(fixed)
    for k, v in exprs:
        values[k] = sy.evaluate(v, env)
    return {k: values[k] for k in order}   # (the operands' own order)


def _move_cycles(op: TileOp, env: Mapping[str, int], chip: Chip, blocks: int,
                 spaces: Mapping[str, str], miss: float = 1.0, resident: Mapping[str, float] | None = None,
                 memo: dict | None = None) -> tuple[float, float, float, float | None]:
    """(cycles, GM bytes, GM bytes written, the fraction reaching HBM when the GM parameter is L2-resident else
    None) of a data move on its pipe: its bytes over the chip's cost of its path; `miss` is the fraction of GM
    reads that miss in L2, `resident` the HBM fraction of the L2-resident parameters' bytes (read or written).
    `memo`: as `_evaluated`'s."""
    sp = op.spec
    a = _evaluated(op, env, spaces, memo)
    src, dst = (a[n] for n in sp.move)
    path = getattr(chip, data_path(src, dst).cost)
    nbytes = sp.nbytes(a, chip)
    if "GM" not in (src, dst):
        return path.cycles(nbytes), 0.0, 0.0, None
    rows, row_bytes = sp.gm_rows(a) if sp.gm_rows is not None else (1, 0)
    gm = op.args[sp.move[0] if src == "GM" else sp.move[1]]
    held = resident.get(gm.param) if resident else None
    frac = held if held is not None else (miss if src == "GM" else 1.0)
    cycles = _gm_move(path, nbytes, gm, env, chip, blocks, rows, row_bytes, frac)
    return cycles, nbytes, (nbytes if dst == "GM" else 0.0), held


def _gm_move(path: DmaPath, nbytes: float, gm: GmRef, env: Mapping[str, int], chip: Chip, blocks: int,
             rows: int = 1, row_bytes: int = 0, miss: float = 1.0) -> float:
    """Cycles of a GM transfer of `rows` rows `row_bytes` apart: full bandwidth only when every row starts
    on the chip's peak-bandwidth boundary (the simulator's rule). Every byte passes the L2, whose bandwidth
    the cores share; the `miss` fraction (all of a store: the L2 writes through) also shares HBM's."""
    bw = gm_bandwidth(path, chip, blocks, miss)
    try:
        aligned = _ev(gm.offset, env) % chip.gm_peak_align == 0
    except sy.UnboundSymbolError:
        aligned = False
    aligned = aligned and (rows <= 1 or row_bytes % chip.gm_peak_align == 0)
    if not aligned:
        bw *= chip.gm_unaligned_factor
    return path.startup + nbytes / bw


def gm_bandwidth(path: DmaPath, chip: Chip, blocks: int, miss: float = 1.0) -> float:
    """Bytes per cycle one of `blocks` cores gets on a GM path with every row on the peak-bandwidth boundary:
    the path's own rate, its share of the L2's, and (for the `miss` fraction that reaches HBM) of HBM's."""
    share = max(1, blocks)
    bw = min(path.bytes_per_cycle, chip.l2_bytes_per_cycle / share)
    if miss > 0:
        bw = min(bw, chip.gm_bytes_per_cycle / (share * miss))
    return bw


def cube_cycles(dtype: str, m: int, k: int, n: int, chip: Chip) -> float:
    """One mmad of m x k by k x n `dtype` operands: start-up plus its fractal blocks."""
    c0 = chip.fractal_c0(itemsize(dtype))
    r0 = chip.cube_block
    blocks = -(-m // r0) * -(-k // c0) * -(-n // r0)
    per = {"float16": chip.cube_fp16_block_cycles, "int8": chip.cube_int8_block_cycles,
           "float32": chip.cube_fp32_block_cycles}[dtype]
    return chip.cube_startup_cycles + blocks * per


def _cube_cycles(op: TileOp, env: Mapping[str, int], chip: Chip) -> float:
    a = op.args
    return cube_cycles(a["dtype"], *(_ev(a[x], env) for x in ("m", "k", "n")), chip)


class _Walker:
    def __init__(self, schedule: TileSchedule, chip: Chip, blocks: int, miss: float = 1.0,
                 resident: Mapping[str, float] | None = None):
        self.chip = chip
        self.blocks = blocks
        self.miss = miss
        self.resident = resident or {}
        self.spaces = {b.name: b.space for b in schedule.buffers}
        self.single = {b.name for b in schedule.buffers if b.slots == 1}
        self.slots = {b.name: b.slots for b in schedule.buffers}
        self.depth = 0
        self._vector: dict = {}                    # `_vector_cycles`'s memo for this walk
        self._moves: dict = {}                     # `_evaluated`'s memo for this walk
        self._singles: dict[int, set[str]] = {}    # op (by id) -> the single-slot buffers it touches
        self._rotating: dict[int, bool] = {}       # loop (by id) -> `_rotates`
        self._bufs: dict[int, set[str]] = {}       # statement (by id) -> `_buffers_of`

    def block(self, stmts: Sequence[Stmt], env: dict[str, int], pipelined: bool) -> Cost:
        total = Cost()
        spans = 0.0
        env = dict(env)
        for s in stmts:
            if isinstance(s, Let):
                env[s.var] = _ev(s.value, env)
                continue
            c = self.stmt(s, env)
            total.add(c)
            total.parts.append((c.span, s, c))
            spans += c.span
        total.span = max(total.busy.values(), default=0.0) if pipelined else spans
        return total

    def stmt(self, s: Stmt, env: dict[str, int]) -> Cost:
        if isinstance(s, TileOp):
            c = Cost()
            unit = s.spec.unit
            if unit == "vector":
                cyc = _vector_cycles(s, env, self.chip, self._vector)
            elif unit == "cube":
                cyc = _cube_cycles(s, env, self.chip)
            elif unit == "move":
                cyc, c.gm_bytes, c.gm_write_bytes, held = _move_cycles(s, env, self.chip, self.blocks, self.spaces,
                                                                       self.miss, self.resident, self._moves)
                if held is not None:
                    c.resident = (c.gm_bytes - c.gm_write_bytes, c.gm_write_bytes, c.gm_bytes * held)
            else:  # the only other tile op a schedule holds is the all-core barrier (flags come from sync)
                cyc = self.chip.sync_all_cycles
            c.busy[s.pipe] = cyc
            c.span = cyc
            singles = self._singles.get(id(s))
            if singles is None:   # (the walk meets an op once per iteration it walks)
                singles = self._singles[id(s)] = {r.buffer for r in (*s.reads, *s.writes)} & self.single
            for name in singles:
                c.chain[name] = (cyc, frozenset((s.pipe,)))
            return c
        if isinstance(s, When):
            if _ev(s.cond, env) == 0:
                return Cost()
            c = self.block(s.body, env, False)
            c.head = c.tail = c.parts
            return c
        return self.loop(s, env)

    def _hold(self, lp: Loop, parts: list, env: dict[str, int]) -> float:
        """A bound on a rotating loop's period from how long an iteration holds a slot: from the op that
        first touches a rotating buffer to the one that last does (an inner loop that reads an L1 chunk
        step by step holds it until its last read, not through the mmad after it), over the slots; at most
        `slots` iterations are in flight on that buffer."""
        bufs = self._bufs
        spans = [(c, _buffers_of(s, bufs)) for c, s, _ in parts]
        # the scalar unit issues in program order into bounded queues: when the inner loops queue more
        # than a queue's depth on one pipe, the next iteration's first moves are issued only once that pipe
        # has started all but `depth` of them, that much later
        queued = self._queued(lp.body, dict(env))
        inner = sum(c for c, s, _ in parts if isinstance(s, Loop))
        most = max(queued.values(), default=0)
        late = inner * max(0, most - self.chip.pipe_queue_depth) / most if most else 0.0
        bound = 0.0
        for name, slots in self.slots.items():
            if slots < 2:
                continue
            idx = [i for i, (_, bufs) in enumerate(spans) if name in bufs]
            if idx:
                held = sum(c for c, _ in spans[idx[0]:idx[-1] + 1])
                held -= _lead(parts[idx[0]], name, bufs) + _trail(parts[idx[-1]], name, bufs)
                bound = max(bound, (held + late) / slots)
        return bound

    def _same_slot_wait(self, lp: Loop, parts: list, env: dict[str, int]) -> dict[str, float]:
        """The idle time per iteration of the pipes that fill an inner loop's buffers when those rotate with
        that loop alone and its last step uses the slot its first step does (an odd count of L1 chunks over
        two slots): the next iteration's first fill of the slot cannot start ahead, so from the last step's
        last fill the filling pipe waits until that step has last touched the slot."""
        out: dict[str, float] = {}
        for _, s, c in parts:
            if not isinstance(s, Loop) or not _rotates(s) or not c.tail:
                continue
            try:
                start, stop, step = (_ev(x, env) for x in (s.start, s.stop, s.step))
            except sy.UnboundSymbolError:   # bounds from the body's lets: not a loop at the body's top level
                continue
            trips = max(0, -(-(stop - start) // step))
            fills = {(r, op.pipe) for op in _direct_ops(s.body) for r in op.writes if not isinstance(r.slot, int)}
            tail = c.tail
            filled = {r.buffer for r, _ in fills}
            last_fill = max((i for i, p in enumerate(tail) if _writes_of(p[1]) & filled), default=None)
            for r, pipe in fills:
                names = sy.free_symbols(r.slot)
                if trips < 1 or last_fill is None or self.slots.get(r.buffer, 1) < 2 or lp.var in names or \
                        not names <= {s.var, *env}:
                    continue
                if _ev(r.slot, {**env, s.var: start}) != _ev(r.slot, {**env, s.var: start + (trips - 1) * step}):
                    continue
                touches = [i for i, p in enumerate(tail) if r.buffer in _buffers_of(p[1], self._bufs)]
                if touches[-1] <= last_fill:
                    continue
                held = sum(p[0] for p in tail[last_fill + 1:touches[-1] + 1]) - \
                    _trail(tail[touches[-1]], r.buffer, self._bufs)
                out[pipe] = max(out.get(pipe, 0.0), held)
        return out

    def _queued(self, stmts: Sequence[Stmt], env: dict[str, int]) -> dict[str, int]:
        """Instructions the inner loops of a block queue per pipe: each op, and a wait and a set per
        iteration of a loop whose body hands data between pipes (the flags around its ops)."""
        out: dict[str, int] = {}
        for s in stmts:
            if isinstance(s, Let):
                env[s.var] = _ev(s.value, env)
            elif isinstance(s, Loop):
                start, stop, step = (_ev(x, env) for x in (s.start, s.stop, s.step))
                n = max(0, -(-(stop - start) // step))
                body = self._queued(s.body, {**env, s.var: start}) if n else {}
                direct = {x.pipe for x in s.body if isinstance(x, TileOp)}
                if len(direct) > 1:  # pipes handing data to each other in the body: a wait and a set each
                    body = {p: c + (2 if p in direct else 0) for p, c in body.items()}
                for p, c in body.items():
                    out[p] = out.get(p, 0) + c * n
            elif isinstance(s, TileOp):
                out[s.pipe] = out.get(s.pipe, 0) + 1
        return out

    def loop(self, lp: Loop, env: dict[str, int]) -> Cost:
        start, stop, step = (_ev(x, env) for x in (lp.start, lp.stop, lp.step))
        n = max(0, -(-(stop - start) // step))
        out = Cost()
        if n == 0:
            return out
        pipelined = self._rotating.get(id(lp))
        if pipelined is None:   # (the walk meets an inner loop once per iteration of the loops around it)
            pipelined = self._rotating[id(lp)] = _rotates(lp)
        self.depth += 1
        first = self.block(lp.body, {**env, lp.var: start}, False)
        last = self.block(lp.body, {**env, lp.var: start + (n - 1) * step}, False) if n > 1 else first
        parts = first.parts
        out.head, out.tail = first.parts, last.parts
        if n > 2 and self.depth == 1:
            # the outermost loop's iterations between are charged as the mean of the first two: what
            # alternates between neighbours (a block on or off the 512-byte GM boundary) is seen at its average
            second = self.block(lp.body, {**env, lp.var: start + step}, False)
            first = _mean(first, second)
        elif n > 2 and any(isinstance(s, When) for s in lp.body):
            # steps that run conditional work (a software pipeline's fill and drain steps, e.g. attention's
            # first S blocks and last P V blocks) are not the steady state: the steps between are charged as the
            # middle one
            first = self.block(lp.body, {**env, lp.var: start + (n // 2) * step}, False)
        self.depth -= 1
        out.add(first, n - 1)
        out.add(last)
        busiest = max(first.busy.values(), default=0.0)
        # an inner loop that ends on the slot it starts on: the pipe filling it idles until the slot is free
        waits = self._same_slot_wait(lp, parts, {**env, lp.var: start}) if n > 1 else {}
        filling = max([first.busy.get(p, 0.0) + w for p, w in waits.items()], default=0.0)
        if pipelined:
            # an iteration takes at least its busiest pipe, and its inner loops' steady state
            bottleneck = max(busiest, first.steady, filling)
            if any(isinstance(s, Loop) for s in lp.body):
                bottleneck = max(bottleneck, self._hold(lp, parts, {**env, lp.var: start}))
            out.span = (n - 1) * bottleneck + last.span
            # a last iteration that moves fewer GM bytes (an edge chunk, shallower than the others) at its own
            # busiest pipe, never above the others' period
            edge = n > 1 and last.gm_bytes < first.gm_bytes and last.busy.get("M", 0.0) < first.busy.get("M", 0.0)
            ending = max(max(last.busy.values(), default=0.0), last.steady) if edge else bottleneck
            out.steady = (n - 1) * bottleneck + min(bottleneck, ending)
        elif _inner_pipeline(lp):
            # the inner loops' buffers rotate across this loop's iterations too (their flags are set
            # around it), so iterations overlap except where a single-slot buffer passes between pipes
            # (one L0C: the next block's mmads wait for this block's FixPipe)
            serial = max([0.0] + [c - busiest for c, pipes in first.chain.values() if len(pipes) > 1])
            period = max(max(busiest, first.steady) + serial, filling)
            out.span = min((n - 1) * first.span, (n - 1) * period) + last.span
            out.steady = min(n * first.span, n * period)
        else:
            out.span = (n - 1) * first.span + last.span
            out.steady = out.span
        return out


def _lead(part: tuple, name: str, memo: dict | None = None) -> float:
    """Cycles of a (span, statement, Cost) part before it first touches buffer `name` (an inner loop's or a
    When's statements ahead of that, in its first iteration). `memo`: as `_buffers_of`'s."""
    _, s, c = part
    if isinstance(s, TileOp):
        return 0.0
    out = 0.0
    for p in c.head:
        if name in _buffers_of(p[1], memo):
            return out + _lead(p, name, memo)
        out += p[0]
    return out


def _trail(part: tuple, name: str, memo: dict | None = None) -> float:
    """Cycles of a part after it last touches buffer `name` (in its last iteration). `memo`: as `_buffers_of`'s."""
    _, s, c = part
    if isinstance(s, TileOp):
        return 0.0
    out = 0.0
    for p in reversed(c.tail):
        if name in _buffers_of(p[1], memo):
            return out + _trail(p, name, memo)
        out += p[0]
    return out


def _writes_of(s: Stmt) -> set[str]:
    if isinstance(s, TileOp):
        return {r.buffer for r in s.writes}
    if isinstance(s, (Loop, When)):
        return set().union(*(_writes_of(x) for x in s.body)) if s.body else set()
    return set()


def _buffers_of(s: Stmt, memo: dict | None = None) -> set[str]:
    """The buffers a statement touches (never change the set returned). `memo`: a walk's store of them by
    statement id (the walk meets a statement once per iteration it walks and asks again in `_hold`)."""
    if memo is not None:
        hit = memo.get(id(s))
        if hit is not None:
            return hit
    if isinstance(s, TileOp):
        out = {r.buffer for r in (*s.reads, *s.writes)}
    elif isinstance(s, (Loop, When)):
        out = set().union(*(_buffers_of(x, memo) for x in s.body)) if s.body else set()
    else:
        out = set()
    if memo is not None:
        memo[id(s)] = out
    return out


def _mean(a: Cost, b: Cost) -> Cost:
    out = Cost()
    out.add(a, 0.5)
    out.add(b, 0.5)
    out.span = (a.span + b.span) / 2
    return out


def _inner_pipeline(lp: Loop) -> bool:
    """Whether a loop directly inside this one's body rotates its buffers."""
    return any(isinstance(s, Loop) and _rotates(s) for s in lp.body)


def _rotates(lp: Loop) -> bool:
    """Whether the loop's buffers rotate with its variable (ping-pong): then its pipes overlap. An op under a
    When of the body counts (a guarded tile is still one of the loop's tiles); an inner loop's do not."""
    return any(lp.var in sy.free_symbols(r.slot) for op in _direct_ops(lp.body) for r in (*op.reads, *op.writes)
               if not isinstance(r.slot, int))


def _direct_ops(body: Sequence[Stmt]) -> list[TileOp]:
    out: list[TileOp] = []
    for s in body:
        if isinstance(s, TileOp):
            out.append(s)
        elif isinstance(s, When):
            out += _direct_ops(s.body)
    return out


def estimate(schedule: TileSchedule, dims: Mapping[str, int], chip: Chip,
             tail_from: Callable[[TileOp], bool] | None = None) -> Estimate:
    """The schedule's simulated time for the given dims (symbol -> int). `tail_from`: the estimate's `tail` is
    core 0's span from the last op it picks to the end (`_span_from`)."""
    c, blocks, miss = _walk(schedule, dims, chip)
    if blocks <= 0:
        return Estimate(0.0, 0.0, 0.0, 0, {})
    gm_total = c.gm_bytes * blocks
    res_read, res_write, res_hbm = c.resident
    if schedule.l2_miss is None:
        hbm_total = gm_total
        if res_read or res_write:
            hbm_total = (c.gm_bytes - res_read - res_write + res_hbm) * blocks
    elif res_read or res_write:
        reads, writes = c.gm_bytes - c.gm_write_bytes - res_read, c.gm_write_bytes - res_write
        hbm_total = (reads * miss + writes + res_hbm) * blocks
    else:
        hbm_total = (c.gm_bytes - c.gm_write_bytes) * blocks * miss + c.gm_write_bytes * blocks
    cycles = max(c.span, gm_span(gm_total, hbm_total, chip)) + launch_cycles(chip, blocks)
    tail = _span_from(c.parts, tail_from) if tail_from is not None else 0.0
    return Estimate(cycles, c.span, gm_total, blocks, c.busy, tail)


def _walk(schedule: TileSchedule, dims: Mapping[str, int], chip: Chip) -> tuple[Cost, int, float]:
    """The walk of core 0, the block count and the fraction of the reads that miss in L2."""
    fields = {name: sy.evaluate(expr, dims) for name, expr in schedule.fields.items()}
    blocks = sy.evaluate(schedule.blocks, {**dims, **fields})
    if blocks <= 0:
        return Cost(), blocks, 1.0
    env = {**fields, CORE: 0, BLOCKS: blocks, GROUP: 0, SUB: 0}
    # reads that hit in L2 cost no HBM bandwidth: the template's miss fraction, and its L2-resident parameters'
    miss = schedule.l2_miss(fields, blocks) if schedule.l2_miss is not None else 1.0
    resident = schedule.l2_resident(fields, blocks) if schedule.l2_resident is not None else None
    return _Walker(schedule, chip, blocks, miss, resident).block(schedule.body, env, False), blocks, miss


def _span_from(parts: list, first: Callable[[TileOp], bool]) -> float:
    """The cycles from the last op `first` picks to the end, as the walk charged them: in the last statement
    that holds such an op, the span from it (an inner loop's last iteration, a When's body), then every
    statement after it; 0.0 when none is picked. (A mixed launch's drain: the vector side's work after the
    cube's last hand-over.)"""
    for i in range(len(parts) - 1, -1, -1):
        span, s, c = parts[i]
        if not any(first(op) for op in _ops_of(s)):
            continue
        inner = span if isinstance(s, TileOp) else _span_from(c.tail or c.parts, first)
        return inner + sum(p[0] for p in parts[i + 1:])
    return 0.0


def _ops_of(s: Stmt) -> list[TileOp]:
    if isinstance(s, TileOp):
        return [s]
    if isinstance(s, (Loop, When)):
        return [op for x in s.body for op in _ops_of(x)]
    return []


def gm_span(gm_total: float, hbm_total: float, chip: Chip) -> float:
    """The least time a launch moving `gm_total` bytes through the L2, `hbm_total` of them to or from HBM,
    takes on the chip's aggregate bandwidths."""
    return max(hbm_total / chip.gm_bytes_per_cycle, gm_total / chip.l2_bytes_per_cycle)


def launch_cycles(chip: Chip, cores: int) -> float:
    """A launch's start-up on `cores` cores, before the first instruction."""
    return chip.launch_startup_cycles + chip.launch_core_cycles * cores
