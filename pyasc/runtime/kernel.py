"""`@pyasc.kernel` and the `Kernel` object: specialise, compile (cached), run.

The Kernel is the boundary between the user and the compiler:
- a user mistake in the kernel source (`CompileError`) is re-raised from
  here with the compiler's internal frames cut off (PYASC_DEBUG=1 keeps them);
- any other exception inside the compiler is a pyasc bug and becomes an
  `InternalCompilerError` naming the stage or pass, chained to the original.
"""
from __future__ import annotations

import contextlib
import functools
import os
import threading
import types
import warnings
import weakref
from collections import namedtuple
from typing import Any, Callable

import numpy as np

from ..errors import CompileError
from . import cachestats, keys, persist, tunestore
from .artifact import CompiledKernel
from .profile import Profile
from .diskcache import DiskCache
from .errors import ArgumentError, debug_enabled
from .options import KernelOptions, make_options
from .interop import convert_results
from .limits import MemoryLimit
from .specialize import ArgBinder, ArgKey, BoundCall, specialize


CacheInfo = namedtuple("CacheInfo", ["hits", "disk_hits", "misses", "currsize"])


class DumpWarning(UserWarning):
    """PYASC_DUMP_DIR could not be written (the call's result is returned all the same)."""


def _environ_reader(name: str) -> Callable[[], str | None]:
    """A reader of one environment variable for every call: `os.environ.get` of an unset variable raises and
    catches a KeyError inside (about 1 us, on each of a warm call's reads), so where the platform's
    `os.environ` keeps its encoded mapping, the variable is looked up there by its encoded name."""
    data, encode, decode = (getattr(os.environ, a, None) for a in ("_data", "encodekey", "decodevalue"))
    if not isinstance(data, dict) or encode is None or decode is None:
        return lambda: os.environ.get(name)
    key = encode(name)

    def read() -> str | None:
        value = data.get(key)
        return None if value is None else decode(value)
    return read


_ALWAYS_COMPILE = _environ_reader("PYASC_ALWAYS_COMPILE")
_DUMP_DIR = _environ_reader("PYASC_DUMP_DIR")


def _env_flag(read: Callable[[], str | None]) -> bool:
    value = read()
    return value is not None and value.strip().lower() in ("1", "true", "yes", "on")


class Kernel:
    """A compiled-on-demand kernel wrapping a Python function (see `pyasc.kernel`).

    Dispatch: a call binds its arguments, builds the key (one record per
    parameter) and looks it up in memory; a hit re-checks the guards (the
    values the kernel read at compile time, pyasc.guards) and runs. A miss
    takes the key's lock, so concurrent first calls compile once, then tries
    the disk cache (whose own lock does the same across processes) and
    compiles only if that misses too. Counters are updated under a lock, so
    `cache_info()` is exact with threads.
    """

    def __init__(self, fn: Callable[..., Any], options: KernelOptions):
        if isinstance(fn, Kernel):  # re-decorating: wrap the original function with the new options
            fn = fn.py_func
        fn = _kernel_callable(fn)
        functools.update_wrapper(self, fn)
        self.py_func = fn
        self.options = options
        self._binder = ArgBinder(fn)
        self._limit = MemoryLimit(options.chip_config.gm_bytes, options.chip_name)
        self._cache: dict[tuple[ArgKey, ...], CompiledKernel] = {}
        self._lock = threading.Lock()  # the cache dict, the counters and the per-key locks
        self._key_locks: dict[tuple[ArgKey, ...], threading.Lock] = {}
        self._hits = 0
        self._disk_hits = 0
        self._misses = 0
        self._bound: dict[int, Kernel] = {}  # id(instance) -> this method kernel bound to it (__get__)
        self._stats_root: Any = None  # the disk cache of the last lookup: where `pyasc cache stats` counts hits
        self._tuned: dict[tuple[ArgKey, ...], tuple[Any, ...]] = {}  # key -> tiling decisions `tune` found here

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        """`@pyasc.kernel` on a method: `obj.method` is a kernel of the bound method (as a function's
        `__get__` gives a bound method), one per instance, so its compiles are kept with it."""
        if obj is None or isinstance(self.py_func, types.MethodType):
            return self
        with self._lock:
            bound = self._bound.get(id(obj))
            if bound is not None and bound.py_func.__self__ is obj:
                return bound
            bound = Kernel(types.MethodType(self.py_func, obj), self.options)
            self._bound[id(obj)] = bound
        try:  # forget it with the instance (an object without weak references keeps it for the kernel's life)
            weakref.finalize(obj, self._bound.pop, id(obj), None)
        except TypeError:
            pass
        return bound

    # ---- public API --------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Compile for these argument types (once per specialisation) and run; returns numpy array(s)."""
        __tracebackhide__ = True  # noqa: F841 - pytest/IPython: the boundary frame is not the user's concern
        try:
            binder = self._binder  # (`_specialize`, inlined: this is every warm call's path)
            values = binder.bind(args, kwargs)
            call = specialize(self.__name__, binder.params, values, self.options.dynamic, self._limit)
            compiled, hidden = self._lookup(call)
            if compiled.effects is None:
                result = compiled.launch(call.arrays + hidden if hidden else call.arrays)
            else:  # the kernel changes the caller's arrays or objects, as numpy would
                result = compiled.launch(call.arrays + hidden, call.objects, self._arguments(call))
            return result if call.foreign is None else convert_results(result, call.foreign)
        except (CompileError, ArgumentError) as e:
            if debug_enabled():
                raise
            raise e.with_traceback(None) from None  # a user mistake: no compiler frames

    def profile(self, *args: Any, **kwargs: Any) -> tuple[Any, Profile]:
        """Run on the emulator and return (outputs, profile): simulated cycles, time, GM bytes, pipes, trace."""
        __tracebackhide__ = True  # noqa: F841
        try:
            call = self._specialize(args, kwargs)
            compiled, hidden = self._lookup(call)
            result, prof = compiled.profile_launch(call.arrays + hidden if hidden else call.arrays, call.objects,
                                                   self._arguments(call))
            return (result if call.foreign is None else convert_results(result, call.foreign)), prof
        except (CompileError, ArgumentError) as e:
            if debug_enabled():
                raise
            raise e.with_traceback(None) from None

    def compile(self, *args: Any, **kwargs: Any) -> CompiledKernel:
        """The compiled artifact for these arguments, without running it (uses and fills the cache)."""
        __tracebackhide__ = True  # noqa: F841
        try:
            return self._lookup(self._specialize(args, kwargs))[0]
        except (CompileError, ArgumentError) as e:
            if debug_enabled():
                raise
            raise e.with_traceback(None) from None

    def cache_info(self) -> CacheInfo:
        """Counts like functools.lru_cache: hits (in memory), disk_hits, misses (real compiles), currsize."""
        with self._lock:
            return CacheInfo(self._hits, self._disk_hits, self._misses, len(self._cache))

    def tune(self, *args: Any, top_k: int = 8, executor: str = "process", workers: int | None = None,
             address: str | None = None, verbose: bool = True, progress: Any = None, **kwargs: Any) -> Any:
        """Autotune the tiling of every device kernel of this call: the cost model's `top_k` candidates per
        kernel run on the emulator in parallel (`executor`: "process", a local pool of `workers` processes,
        or "ray", a Ray cluster at `address`), and the fastest is stored in the disk cache for every later
        compile of these shapes on this chip (also in other processes and on other machines sharing the
        cache). Prints progress and predicted vs simulated cycles to stderr unless `verbose=False`;
        `progress(candidate, done, total)` is called as each run finishes. Returns a `TuneResult`
        (`.table()`, `.to_json()`, `.decisions`). See runtime/tuner.py."""
        __tracebackhide__ = True  # noqa: F841
        from . import tuner  # the tuner (and its executors) load only when tuning

        try:
            call = self._specialize(args, kwargs)
            return tuner.tune(self._tune_target(call), top_k=top_k, executor=executor, workers=workers,
                              address=address, verbose=verbose, progress=progress)
        except (CompileError, ArgumentError) as e:
            if debug_enabled():
                raise
            raise e.with_traceback(None) from None

    def cache_clear(self) -> None:
        """Forget the in-memory specialisations and zero the counters (the disk cache is kept)."""
        with self._lock:
            self._cache.clear()
            self._key_locks.clear()
            self._hits = self._disk_hits = self._misses = 0

    def key_components(self, *args: Any, **kwargs: Any) -> keys.KeyComponents:
        """What the disk key of these arguments is made of, before the kernel reads anything (explain)."""
        store = DiskCache.from_env()
        return self._components(self._specialize(args, kwargs).key, store)[0]

    def _components(self, key: tuple[ArgKey, ...], store: DiskCache | None) -> tuple[keys.KeyComponents, tuple]:
        """The key components of a call and the tiling decisions its compile follows: the ones `tune` found in
        this process, else the ones stored in the cache folder for this kernel, shapes and chip."""
        comps = keys.components(self.py_func, self._binder.params, key, self.options,
                                store.root if store else None)
        decisions = self._tuned.get(key)
        if decisions is None and store is not None:
            record = tunestore.load(store.root, tunestore.tuning_key(comps))
            decisions = record.decisions if record is not None else ()
        return (comps.with_tuning(decisions) if decisions else comps), decisions or ()

    def _tune_target(self, call: BoundCall) -> Any:
        """The tuner's view of this kernel and one call: compile it with given tiling decisions (never through
        the cache), the hidden inputs, and how to make this process follow the winners."""
        from . import pipeline, tuner  # loaded only when tuning

        store = DiskCache.from_env()
        params = self._binder.params
        plain = keys.components(self.py_func, params, call.key, self.options, store.root if store else None)

        def compile_with(decisions: tuple[Any, ...], runners_up: int = 0) -> CompiledKernel:
            comps = plain.with_tuning(decisions) if decisions else plain
            return pipeline.compile_call(self.py_func, self.__name__, params, self.options, call, comps,
                                         comps.digest(), decisions, runners_up)

        def remember(decisions: tuple[Any, ...]) -> None:
            with self._lock:  # the next call compiles (or loads) the tuned specialisation
                self._tuned[call.key] = decisions
                self._cache.pop(call.key, None)

        return tuner.TuneTarget(self.__name__, self.options, call, plain, compile_with,
                                lambda compiled: compiled.guards.hidden_now(self.py_func), remember)

    def __repr__(self) -> str:
        return f"<pyasc.kernel {self.__qualname__} ({self.options.describe()})>"

    def _arguments(self, call: BoundCall) -> Callable[[str], Any]:
        """The call's argument for a parameter name (a pytree argument whose containers the kernel sets)."""
        by_name = {p.name: v for p, v in zip(self._binder.params, call.values)}
        return by_name.__getitem__

    def written_parameters(self, *args: Any, **kwargs: Any) -> tuple[str, ...]:
        """Names of the parameters a call with these arguments writes in place (compiles if needed): a tensor
        parameter, or a pytree parameter with a written leaf or a set item, as numpy would change them."""
        compiled = self.compile(*args, **kwargs)
        effects = compiled.effects
        if effects is None:
            return ()
        labels = [effects.label(w.input) for w in effects.writes]
        labels += [s.target.param for s in effects.stores if s.target.kind == "arg"]
        out = []
        for p in self._binder.params:
            if any(label == p.name or label.startswith(p.name + "[") or label.startswith(p.name + ".")
                   for label in labels) and p.name not in out:
                out.append(p.name)
        return tuple(out)

    def specialize(self, args: tuple, kwargs: dict) -> BoundCall:
        """Bind and convert one call's arguments: its key and tensor arrays (ArgumentError when it cannot)."""
        return self._specialize(args, kwargs)

    def _specialize(self, args: tuple, kwargs: dict) -> BoundCall:
        values = self._binder.bind(args, kwargs)
        return specialize(self.__name__, self._binder.params, values, self.options.dynamic, self._limit)

    # ---- cache -----------------------------------------------------------------
    def _lookup(self, call: BoundCall) -> tuple[CompiledKernel, list[np.ndarray]]:
        """The artifact for a call and its hidden inputs (the lifted arrays as they are now)."""
        always = _env_flag(_ALWAYS_COMPILE)
        if not always:
            found = self._memory_hit(call.key)
            if found is not None:
                return found
        with self._key_lock(call.key):
            if not always:
                found = self._memory_hit(call.key)  # another thread compiled it while this one waited
                if found is not None:
                    return found
            compiled = self._load_or_compile(call, always)
            hidden = compiled.guards.check(self.py_func)
            if hidden is None:  # a value read is a new object on every read, or changed meanwhile: this call
                hidden = compiled.guards.hidden_now(self.py_func)  # runs what it compiled, the next one checks
            with self._lock:
                self._cache[call.key] = compiled
        self._dump(compiled)
        return compiled, hidden

    def _memory_hit(self, key: tuple) -> tuple[CompiledKernel, list[np.ndarray]] | None:
        compiled = self._cache.get(key)
        if compiled is None:
            return None
        hidden = compiled.guards.check(self.py_func)
        if hidden is None:
            return None  # a value the kernel read at compile time has changed: never run a stale graph
        with self._lock:
            self._hits += 1
            if self._stats_root is not None:
                cachestats.count(self._stats_root, self.__qualname__, "hits")
        if _DUMP_DIR() is not None:
            self._dump(compiled)
        return compiled, hidden

    def _key_lock(self, key: tuple) -> threading.Lock:
        with self._lock:
            lock = self._key_locks.get(key)
            if lock is None:
                lock = self._key_locks[key] = threading.Lock()
            return lock

    def _load_or_compile(self, call: BoundCall, always: bool) -> CompiledKernel:
        store = DiskCache.from_env()
        params = self._binder.params
        comps, decisions = self._components(call.key, store)
        digest = comps.digest()
        self._stats_root = store.root if store is not None else None

        def load() -> CompiledKernel | None:
            if store is None or always:
                return None
            found = persist.load(store, self.py_func, self.__name__, params, self.options, call, comps, digest)
            if found is not None:
                with self._lock:
                    self._disk_hits += 1
                cachestats.count(store.root, self.__qualname__, "disk_hits")
                cachestats.flush(store.root)
            return found

        compiled = load()
        if compiled is not None:
            return compiled
        with store.lock(digest) if store is not None else contextlib.nullcontext():
            compiled = load()  # another process may have compiled it while this one waited for the lock
            if compiled is not None:
                return compiled
            from . import pipeline  # the compile pipeline (and with it the frontend) loads on the first miss

            compiled = pipeline.compile_call(self.py_func, self.__name__, params, self.options, call, comps, digest,
                                             decisions)
            with self._lock:
                self._misses += 1
            if store is not None:
                persist.save(store, compiled, digest)
                cachestats.count(store.root, self.__qualname__, "misses")
                cachestats.flush(store.root)
        return compiled

    def _dump(self, compiled: CompiledKernel) -> None:
        dump_stages(compiled, self.__qualname__)


def dump_stages(compiled: CompiledKernel, label: str) -> None:
    """PYASC_DUMP_DIR set: write the artifact's stages there (also on hits: re-creates a folder the user
    deleted); a folder that cannot be written is a DumpWarning, never a failed call."""
    dump_dir = os.environ.get("PYASC_DUMP_DIR")
    if not dump_dir:
        return
    from .dump import write_dump  # only with PYASC_DUMP_DIR set

    try:
        write_dump(dump_dir, compiled)
    except OSError as e:
        warnings.warn(f"PYASC_DUMP_DIR={dump_dir!r} cannot be written ({e}); {label} ran, but its stages were not "
                      "dumped", DumpWarning, stacklevel=5)


def _kernel_callable(fn: Any) -> Any:
    """The function a Kernel compiles: a `def` function, or a bound method (`pyasc.kernel(obj.method)`), or
    for a callable object `obj.__call__` (`pyasc.kernel(obj)`). A method's `self` is a compile-time value
    the kernel reads through `__self__`, guarded like a global."""
    if isinstance(fn, types.FunctionType):
        return fn
    if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType):
        return fn
    call = getattr(type(fn), "__call__", None)
    if not isinstance(fn, type) and isinstance(call, types.FunctionType):
        return types.MethodType(call, fn)
    kind = type(fn).__name__
    raise TypeError(f"pyasc.kernel needs a Python function defined with `def`, a bound method or an object whose "
                    f"class defines __call__ with `def`, got {kind} {fn!r}")


def kernel(fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
    """Decorator: `@pyasc.kernel` or `@pyasc.kernel(**options)`.

    Options: opt_level (0-3, default 3), chip (preset name or simulator chip
    config; default $PYASC_CHIP or "910b"), buffer_num (1 or 2, default 2),
    cores (None or a positive int), dynamic (bool: specialise on rank instead
    of shape), disable_passes (iterable of pass names), sanitize (bool;
    default $PYASC_SANITIZE), backend ("emulator", the default, or "reference": the
    numpy interpreter of the optimised graph, for debugging), sync ("flags" or
    "barrier": a pipe barrier after every tile op, for bisecting sync bugs),
    unroll_budget (positive int, default 4096), checks (bool, default True: where numpy raises on data, e.g.
    an index out of range, the kernel records it and the call raises numpy's error after the launch; False
    builds no checks). A bad option raises TypeError/ValueError right here.
    The environment defaults are read when the decorator runs; PYASC_DUMP_DIR,
    PYASC_ALWAYS_COMPILE and PYASC_DEBUG are read at each call.
    """
    opts = make_options(**options)
    if fn is None:
        return functools.partial(Kernel, options=opts)
    return Kernel(fn, opts)
