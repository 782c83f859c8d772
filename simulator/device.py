"""The emulated NPU: GM plus cores; host I/O and kernel launches."""
from __future__ import annotations

import contextlib
from contextlib import contextmanager
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, Iterator, Optional, Union

import numpy as np

from . import bfloat16, blas, chips, isa, launcher, result, sanitizer
from .chips import ChipConfig
from .decode import decode
from .errors import LaunchError, MemoryRuleError
from .l2 import L2Cache
from .lockstep import Launch
from .memory import GlobalMemory, GmBuffer, OnChipMemory
from .crossflags import CrossFlags, Layout
from .mixed import JSON_FORMAT as MIXED_FORMAT
from .mixed import MixedKernel
from .program import Program
from .replay import Recording, Replay, ReplayCache
from .tripcount import LoopMarks

BufferRef = Union[str, GmBuffer]


class Device:
    """One chip: `alloc`/`write`/`read` GM buffers from the host and `launch` tile programs.

        dev = Device("tiny")
        dev.upload("x", x); dev.alloc("y", x.nbytes)
        res = dev.launch(program, block_dim=4, args={"x": "x", "y": "y"}, tiling={"n": x.size})
        y = dev.read("y", np.float32, x.shape)

    The L2 keeps its contents across the launches of one kernel call: `begin_call()` starts a
    call (with an empty L2) that lasts until `end_call()`; `with dev.call(): ...` does both. A
    launch outside a call is a call of its own.
    """

    def __init__(self, chip: Union[str, ChipConfig] = "910b"):
        self.chip = chips.get(chip)
        self.gm = GlobalMemory(self.chip)
        self._onchip = {t: OnChipMemory(self.chip, t, isa.CORE_SPACES[t]) for t in isa.CORE_TYPES}
        self.l2 = L2Cache(self.chip)
        self.in_call = False
        self._replays = ReplayCache()
        self._l2_stale = False  # an untimed launch of this call skipped the L2 (timing=False)
        self.generation = 0  # bumped by every alloc and free: a prepared launch binds its buffers again

    # ------------------------------------------------------------------ kernel calls and the L2

    def begin_call(self) -> None:
        """Start a kernel call: the L2 is flushed, then keeps its contents across this call's launches."""
        self.l2.flush()
        self.in_call = True
        self._l2_stale = False

    def end_call(self) -> None:
        """End the kernel call; the next launch (or begin_call) starts with an empty L2."""
        self.in_call = False
        self._l2_stale = False

    @contextmanager
    def call(self) -> Iterator["Device"]:
        """`with dev.call(): dev.launch(...); dev.launch(...)`: launches that share the L2."""
        self.begin_call()
        try:
            yield self
        finally:
            self.end_call()

    def __repr__(self) -> str:
        return f"Device({self.chip.name!r})"

    # ------------------------------------------------------------------ host side

    def alloc(self, name: str, nbytes: Optional[int] = None, *, shape: Any = None, dtype: Any = None) -> GmBuffer:
        """Allocate a named GM buffer of `nbytes` (or of `shape` x `dtype`); 512-byte aligned, zero filled."""
        if nbytes is None:
            if shape is None or dtype is None:
                raise MemoryRuleError(f"alloc({name!r}): give nbytes, or shape and dtype", space="GM",
                                      rule="buffer size")
            nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(isa.DTYPES[isa.normalize_dtype(dtype)]).itemsize
        self.generation += 1
        return self.gm.alloc(name, nbytes)

    def free(self, name: BufferRef) -> None:
        buf = self._buf(name)
        self.l2.forget(buf)
        self._replays.forget(buf)
        self.gm.free(buf.name)
        self.generation += 1

    def buffer(self, name: BufferRef) -> GmBuffer:
        return self._buf(name)

    def _buf(self, ref: BufferRef) -> GmBuffer:
        if isinstance(ref, GmBuffer):
            if ref.name not in self.gm or self.gm.get(ref.name) is not ref:
                raise MemoryRuleError(f"GM buffer {ref.name!r} does not belong to this device (freed?)", space="GM",
                                      rule="unknown buffer")
            return ref
        return self.gm.get(ref)

    def write(self, ref: BufferRef, array: Any, offset: int = 0) -> None:
        """Copy the bytes of `array` (C order) into a GM buffer at byte `offset`."""
        buf = self._buf(ref)
        data = np.ascontiguousarray(np.asarray(array)).reshape(-1).view(np.uint8)
        if offset < 0 or offset + data.size > buf.nbytes:
            raise MemoryRuleError(
                f"host write of {data.size} bytes at offset {offset} does not fit GM buffer {buf.name!r} "
                f"({buf.nbytes} bytes)", space="GM", start=offset, end=offset + data.size,
                rule="GM accesses stay inside their buffer")
        if not buf.data.flags.writeable:  # attached to a read-only array: the buffer gets its own bytes again
            buf.data = buf.data.copy()
        buf.data[offset:offset + data.size] = data
        if offset == 0 and data.size == buf.nbytes:
            buf.mark_all_written()
        else:
            buf.mark_written(np.array([offset]), np.array([offset + data.size]))
        if self.in_call:  # outside a call the next launch (or begin_call) flushes the L2 anyway
            self.l2.invalidate(buf, offset, offset + data.size)

    def attach(self, ref: BufferRef, array: Any, written: bool = True) -> GmBuffer:
        """Make a GM buffer's bytes `array`'s own memory, with no copy: kernels read it in place and a store
        lands in `array` (so a read-only array must only be read). `array` must be C-contiguous and exactly
        the buffer's size. `written=False` treats the bytes as never written (for the sanitizer), e.g. a fresh
        output whose earlier contents were handed out with `read(..., copy=False)`."""
        buf = self._buf(ref)
        arr = np.asarray(array)
        if not arr.flags.c_contiguous or arr.nbytes != buf.nbytes:
            raise MemoryRuleError(
                f"attach to GM buffer {buf.name!r} ({buf.nbytes} bytes) needs a C-contiguous array of exactly that "
                f"many bytes, got {arr.nbytes} bytes{'' if arr.flags.c_contiguous else ', not contiguous'}",
                space="GM", rule="attached arrays match their buffer")
        buf.data = arr.reshape(-1).view(np.uint8)
        if written:
            buf.mark_all_written()
        else:
            buf.mark_unwritten()
        if self.in_call:
            self.l2.invalidate(buf, 0, buf.nbytes)
        return buf

    def upload(self, name: str, array: Any) -> GmBuffer:
        """alloc + write: a new GM buffer holding `array`."""
        arr = np.ascontiguousarray(np.asarray(array))
        buf = self.alloc(name, max(arr.nbytes, 1))
        self.write(buf, arr)
        return buf

    def detach(self, ref: BufferRef) -> GmBuffer:
        """Undo `attach`: the buffer gets its own zeroed bytes again, never written."""
        buf = self._buf(ref)
        buf.data = np.zeros(buf.nbytes, dtype=np.uint8)  # calloc: pages are only touched when written
        buf.mark_unwritten()
        if self.in_call:
            self.l2.invalidate(buf, 0, buf.nbytes)
        return buf

    def read(self, ref: BufferRef, dtype: Any, shape: Any = None, offset: int = 0, copy: bool = True) -> np.ndarray:
        """A copy of GM buffer contents as `dtype` (the whole buffer from `offset`, or `shape`); bfloat16
        contents come back as their float32 values. `copy=False` returns a view of the buffer's bytes instead
        (it changes with the buffer: give the buffer new bytes with `attach` before the next launch writes it)."""
        buf = self._buf(ref)
        name = isa.normalize_dtype(dtype)
        dt = np.dtype(np.bool_) if name == "bool" else isa.DTYPES[name]
        if shape is None:
            count = (buf.nbytes - offset) // dt.itemsize
            shape = (count,)
        shape = tuple(int(s) for s in np.atleast_1d(shape)) if not isinstance(shape, tuple) else shape
        nbytes = math.prod(shape) * dt.itemsize
        if offset < 0 or offset + nbytes > buf.nbytes:
            raise MemoryRuleError(
                f"host read of {nbytes} bytes at offset {offset} does not fit GM buffer {buf.name!r} "
                f"({buf.nbytes} bytes)", space="GM", start=offset, end=offset + nbytes,
                rule="GM accesses stay inside their buffer")
        data = buf.data[offset:offset + nbytes].view(dt).reshape(shape)
        if name == "bfloat16":
            return bfloat16.to_float32(data)
        return data.copy() if copy else data

    # ------------------------------------------------------------------ launch

    def launch(self, program: Union[Program, MixedKernel, str, dict], block_dim: int, args: Any = None,
               tiling: Any = None, sanitize: bool = False, lockstep: bool = True,
               schedule_seed: Optional[int] = None, timing: bool = True) -> Optional[result.LaunchResult]:
        """Run `program` on `block_dim` cores of its type, or a MixedKernel on `block_dim` groups.

        args: {param: buffer name or GmBuffer}, or a sequence in `program.params` order.
        tiling: {field: int}, or a sequence in `program.tiling_fields` order.
        sanitize: track every access for races and reads of never-written memory.
        lockstep=False runs every core on its own (slow; cross-checks the lockstep executor).
        schedule_seed: run every core on its own with its pipes in a random legal order drawn from this seed
        (fuzz.py): a race-free program gives the same result for every seed.
        timing=False: only the outputs are wanted; returns None. A repeat of a recorded launch then runs its
        memory actions and nothing else (its timing, a function of program, cores, tiling and buffers, was
        computed when it was recorded); inside a kernel call its L2 accesses are skipped too, so a later
        timed launch of the same call is refused.
        """
        return self.prepare(program, block_dim, args, tiling)(sanitize, lockstep, schedule_seed, timing)

    def prepare(self, program: Union[Program, MixedKernel, str, dict], block_dim: int, args: Any = None,
                tiling: Any = None) -> "PreparedLaunch":
        """A launch with its arguments checked and bound once: call it (with `launch`'s remaining options) to
        run it as often as wanted. It binds the buffers allocated now; after an alloc or free, or an edit of
        the program, a call binds again."""
        kernel = _as_kernel(program)
        parts, layout = self._parts(kernel, block_dim)
        bound = self._bind_args(kernel, args)
        tiles = _bind_tiling(kernel, tiling)
        return PreparedLaunch(self, kernel, int(block_dim), args, tiling, parts, layout, bound, tiles)

    def _run(self, pl: "PreparedLaunch", sanitize: bool, lockstep: bool, schedule_seed: Optional[int],
             timing: bool) -> Optional[result.LaunchResult]:
        kernel, parts, layout, block_dim, bound, tiles = pl.kernel, pl.parts, pl.layout, pl.block_dim, pl.bound, pl.tiles
        if not self.in_call:
            self.l2.flush()
        elif timing and self._l2_stale:
            raise LaunchError(f"launch of {kernel.name!r} asks for timing, but an earlier launch of this kernel "
                              "call ran with timing=False and skipped the L2: time every launch of a call or none")
        elif not timing:
            self._l2_stale = True
        if schedule_seed is not None and sanitize:
            raise LaunchError("a randomly ordered run (schedule_seed) cannot be sanitized; run them separately")
        replayable = not sanitize and lockstep and schedule_seed is None and pl.replayable
        if replayable:
            rep = pl.replay
            if rep is None:
                rep = self._replays.get(pl.replay_key)
                if rep is None and not timing and pl.trip_key is not None:  # recorded at another trip count?
                    rep = self._replays.at_trip(pl.trip_key, pl.tiles[pl.trip_loop.field])
                    if rep is not None:
                        self._replays.put(pl.replay_key, rep)
                pl.replay = rep
            if rep is not None and timing and not rep.timed:
                rep = None  # a replay made at another trip count has no timing of its own: run the full model
            if rep is not None:
                if pl.cube:
                    with blas.single_threaded():
                        rep.run(bound)
                else:
                    rep.run(bound)
                if not timing:
                    return None
                if not self.in_call:  # an empty L2 at the start: the very same schedule, made once
                    if rep.result is None:
                        rep.result = launcher.schedule(self.chip, parts, rep.groups, rep.ctx, self.l2, block_dim,
                                                       kernel.name)
                    return rep.result.copy()
                return launcher.schedule(self.chip, parts, rep.groups, rep.ctx, self.l2, block_dim, kernel.name)
        mems, spaces = {}, {}
        for p in parts:
            mem = self._onchip[p.dec.core_type]
            mems[p.dec.core_type] = {s: mem.array(s) for s in mem.spaces}
            spaces[p.dec.core_type] = (mem.spaces, p.count, p.gbase)
        san = sanitizer.make(self.chip, spaces, bool(sanitize))
        ctx = Launch(dict(bound), tiles, mems, {p.dec.core_type: p.count for p in parts}, block_dim, san)
        ctx.xflags = CrossFlags(layout, self.chip.cross_flag_limit)
        if replayable:
            ctx.record = Recording(LoopMarks(pl.trip_loop.loop) if pl.trip_key is not None else None)
        # a recording runs its vector actions as bound steps, which leave float errors to their caller: ignored
        # (IEEE results, no warnings), as in every replay of it
        with blas.single_threaded() if pl.cube else contextlib.nullcontext(), \
                np.errstate(all="ignore") if replayable else contextlib.nullcontext():
            # an untimed launch that is recorded is scheduled when a replay of it asks for timing (the schedule
            # is a function of the recorded groups): a first call that wants only the outputs does not pay for it
            res, groups = launcher.run(self.chip, parts, ctx, self.l2, block_dim, kernel.name, lockstep,
                                       schedule_seed, timed=timing or not replayable)
        if replayable:
            ctx.record, actions = None, ctx.record
            # the result a replay outside a kernel call gives: this one's when it started with an empty L2
            start_empty = res is not None and not self.in_call
            pl.replay = Replay(actions, groups, ctx, res.copy() if start_empty else None, marks=actions.marks)
            self._replays.put(pl.replay_key, pl.replay)
            if pl.trip_key is not None and actions.marks.usable:
                self._replays.put_trip(pl.trip_key, pl.replay)
        return res if timing else None

    def stored_params(self, program: Union[Program, MixedKernel]) -> frozenset[str]:
        """The parameters of `program` it may store to (a buffer bound only to the others is only read)."""
        progs = (program.aic, program.aiv) if isinstance(program, MixedKernel) else (program,)
        return frozenset().union(*(decode(p, self.chip).gm_stores for p in progs))

    def _parts(self, kernel: Any, block_dim: Any) -> tuple[list[launcher.Part], Layout]:
        """The decoded parts of a launch and where its cores are; checks block_dim."""
        chip = self.chip
        if isinstance(kernel, MixedKernel):
            limit = min(chip.aic_cores, chip.aiv_cores // chip.group_aivs)
            what = (f"groups of one AIC and {chip.group_aivs} AIVs (chip {chip.name} has {chip.aic_cores} AIC and "
                    f"{chip.aiv_cores} AIV cores)")
        else:
            limit = chip.cores_of(kernel.core_type)
            what = f"the {kernel.core_type.upper()} cores of chip {chip.name}"
        if isinstance(block_dim, bool) or not isinstance(block_dim, (int, np.integer)) or not 1 <= block_dim <= limit:
            raise LaunchError(f"block_dim must be an integer in 1..{limit} ({what}), got {block_dim!r}")
        n = int(block_dim)
        if isinstance(kernel, MixedKernel):
            aivs = n * chip.group_aivs
            parts = [launcher.Part(decode(kernel.aic, chip), n, 0), launcher.Part(decode(kernel.aiv, chip), aivs, n)]
            return parts, Layout({"aic": n, "aiv": aivs}, n, chip.group_aivs)
        return [launcher.Part(decode(kernel, chip), n, 0)], Layout({kernel.core_type: n}, None, chip.group_aivs)

    def _bind_args(self, prog: Any, args: Any) -> dict[str, GmBuffer]:
        if args is None:
            args = {}
        if isinstance(args, Mapping):
            extra = sorted(set(args) - set(prog.params))
            if extra:
                raise LaunchError(f"program {prog.name!r} has no parameter(s) {', '.join(extra)}; "
                                  f"its parameters are: {', '.join(prog.params) or 'none'}")
            missing = [p for p in prog.params if p not in args]
            if missing:
                raise LaunchError(f"launch of {prog.name!r} lacks argument(s) {', '.join(missing)} "
                                  f"(parameters: {', '.join(prog.params)})")
            items = [(p, args[p]) for p in prog.params]
        elif isinstance(args, Sequence) and not isinstance(args, str):
            if len(args) != len(prog.params):
                raise LaunchError(f"program {prog.name!r} takes {len(prog.params)} argument(s) "
                                  f"({', '.join(prog.params)}), got {len(args)}")
            items = list(zip(prog.params, args))
        else:
            raise LaunchError(f"args must be a mapping or a sequence of GM buffers, got {type(args).__name__}")
        out = {}
        for p, ref in items:
            if not isinstance(ref, (str, GmBuffer)):
                raise LaunchError(f"argument {p!r} must be a GM buffer or its name, got {type(ref).__name__}")
            try:
                out[p] = self._buf(ref)
            except MemoryRuleError as e:
                raise LaunchError(f"argument {p!r}: {e}") from None
        return out


def _as_kernel(program: Any) -> Union[Program, MixedKernel]:
    if isinstance(program, (Program, MixedKernel)):
        return program
    if isinstance(program, str):
        try:
            data = json.loads(program)
        except json.JSONDecodeError:
            return Program.from_json(program)  # says what does not parse
        program = data
    if isinstance(program, dict):
        if program.get("format") == MIXED_FORMAT:
            return MixedKernel.from_dict(program)
        return Program.from_dict(program)
    raise LaunchError(f"program must be a Program, a MixedKernel or its JSON, got {type(program).__name__}")


def _bind_tiling(prog: Any, tiling: Any) -> dict[str, int]:
    fields = prog.tiling_fields
    if tiling is None:
        tiling = {}
    if isinstance(tiling, Mapping):
        extra = sorted(set(tiling) - set(fields))
        if extra:
            raise LaunchError(f"program {prog.name!r} declares no tiling field(s) {', '.join(extra)}; "
                              f"its fields are: {', '.join(fields) or 'none'}")
        missing = [f for f in fields if f not in tiling]
        if missing:
            raise LaunchError(f"tiling data for {prog.name!r} lacks field(s) {', '.join(missing)}")
        items = [(f, tiling[f]) for f in fields]
    elif isinstance(tiling, Sequence) and not isinstance(tiling, str):
        if len(tiling) != len(fields):
            raise LaunchError(f"program {prog.name!r} has {len(fields)} tiling field(s) ({', '.join(fields)}), "
                              f"got {len(tiling)} value(s)")
        items = list(zip(fields, tiling))
    else:
        raise LaunchError(f"tiling must be a mapping or a sequence of integers, got {type(tiling).__name__}")
    out = {}
    for f, v in items:
        if v.__class__ is int:
            out[f] = v
            continue
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise LaunchError(f"tiling field {f!r} must be an integer, got {type(v).__name__} {v!r}")
        out[f] = int(v)
    return out


class PreparedLaunch:
    """A launch whose program is decoded and whose arguments and tiling are checked and bound (`Device.prepare`).

    `pl(sanitize=False, lockstep=True, schedule_seed=None, timing=True)` runs it like `Device.launch`.
    """

    def __init__(self, device: Device, kernel: Any, block_dim: int, args: Any, tiling: Any,
                 parts: list, layout: Layout, bound: dict[str, GmBuffer], tiles: dict[str, int]):
        self.device, self.kernel, self.block_dim = device, kernel, block_dim
        self._given = (args, tiling)
        self.parts, self.layout, self.bound, self.tiles = parts, layout, bound, tiles
        decs = tuple(p.dec for p in parts)
        self.replayable = not any(d.data_dependent for d in decs)
        self.cube = any(d.core_type == "aic" for d in decs)  # tile products: BLAS on one thread (blas.py)
        self.replay_key = ReplayCache.key(decs, block_dim, tiles, bound)
        # a loop whose trip count is a tiling field (tripcount.py): replays at other trip counts come from a
        # recording at one, found by the key without that field
        self.trip_loop = decs[0].trip_loop if len(decs) == 1 and self.replayable else None
        self.trip_key = None if self.trip_loop is None else ReplayCache.key(
            decs, block_dim, {f: v for f, v in tiles.items() if f != self.trip_loop.field}, bound)
        self.replay: Optional[Replay] = None  # its recorded launch, once found (no cache lookup per run)
        self._stamp = self._now()

    def _now(self) -> tuple:
        k = self.kernel
        revs = (k.aic.revision(), k.aiv.revision()) if isinstance(k, MixedKernel) else k.revision()
        return self.device.generation, revs

    def __call__(self, sanitize: bool = False, lockstep: bool = True, schedule_seed: Optional[int] = None,
                 timing: bool = True) -> Optional[result.LaunchResult]:
        if self._stamp != self._now():  # buffers or the program changed since it was bound: bind again
            fresh = self.device.prepare(self.kernel, self.block_dim, *self._given)
            self.__dict__.update(fresh.__dict__)
        return self.device._run(self, sanitize, lockstep, schedule_seed, timing)
