"""`@pyasc.kernel` and the `Kernel` object: specialise, compile (cached), run.

The Kernel is the boundary between the user and the compiler:
- a user mistake in the kernel source (`CompileError`) is re-raised from
  here with the compiler's internal frames cut off (PYASC_DEBUG=1 keeps them);
- any other exception inside the compiler is a pyasc bug and becomes an
  `InternalCompilerError` naming the stage or pass, chained to the original.
"""
from __future__ import annotations

import functools
import os
import time
import types
from collections import namedtuple
from typing import Any, Callable

from .. import ge, ir
from ..errors import CompileError
from ..codegen.capacity import codegen_capacity
from ..codegen.generate import CodegenOptions, generate
from .artifact import CompiledKernel, build_host, count_ops, device_stages, key_hash, matched_dots
from .dump import write_dump
from .errors import ArgumentError, InternalCompilerError, debug_enabled
from .options import KernelOptions, make_options
from .profile import Profile
from .specialize import ArgBinder, BoundCall, describe_key, specialize, tensor_type


CacheInfo = namedtuple("CacheInfo", ["hits", "disk_hits", "misses", "currsize"])


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


class Kernel:
    """A compiled-on-demand kernel wrapping a Python function (see `pyasc.kernel`)."""

    def __init__(self, fn: Callable[..., Any], options: KernelOptions):
        if isinstance(fn, Kernel):  # re-decorating: wrap the original function with the new options
            fn = fn.py_func
        if not isinstance(fn, types.FunctionType):
            kind = type(fn).__name__
            raise TypeError(f"pyasc.kernel needs a Python function defined with `def`, got {kind} {fn!r}")
        functools.update_wrapper(self, fn)
        self.py_func = fn
        self.options = options
        self._binder = ArgBinder(fn)
        self._options_key = options.key()
        self._id = f"{fn.__module__}.{fn.__qualname__}"
        self._cache: dict[tuple, CompiledKernel] = {}
        self._hits = 0
        self._misses = 0

    # ---- public API --------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Compile for these argument types (once per specialisation) and run; returns numpy array(s)."""
        __tracebackhide__ = True  # noqa: F841 - pytest/IPython: the boundary frame is not the user's concern
        try:
            call = self._specialize(args, kwargs)
            return self._lookup(call).launch(call.arrays)
        except (CompileError, ArgumentError) as e:
            if debug_enabled():
                raise
            raise e.with_traceback(None) from None  # a user mistake: no compiler frames

    def profile(self, *args: Any, **kwargs: Any) -> tuple[Any, Profile]:
        """Run on the emulator and return (outputs, profile): simulated cycles, time, GM bytes, pipes, trace."""
        __tracebackhide__ = True  # noqa: F841
        try:
            call = self._specialize(args, kwargs)
            compiled = self._lookup(call)
            return compiled.profile_launch(call.arrays)
        except (CompileError, ArgumentError) as e:
            if debug_enabled():
                raise
            raise e.with_traceback(None) from None

    def compile(self, *args: Any, **kwargs: Any) -> CompiledKernel:
        """The compiled artifact for these arguments, without running it (uses and fills the cache)."""
        __tracebackhide__ = True  # noqa: F841
        try:
            return self._lookup(self._specialize(args, kwargs))
        except (CompileError, ArgumentError) as e:
            if debug_enabled():
                raise
            raise e.with_traceback(None) from None

    def cache_info(self) -> CacheInfo:
        """Counts like functools.lru_cache: hits (in memory), disk_hits, misses (real compiles), currsize."""
        return CacheInfo(self._hits, 0, self._misses, len(self._cache))

    def cache_clear(self) -> None:
        self._cache.clear()
        self._hits = 0
        self._misses = 0

    def __repr__(self) -> str:
        return f"<pyasc.kernel {self.__qualname__} ({self.options.describe()})>"

    def _specialize(self, args: tuple, kwargs: dict) -> BoundCall:
        values = self._binder.bind(args, kwargs)
        return specialize(self.__name__, self._binder.params, values, self.options.dynamic)

    # ---- cache -----------------------------------------------------------------
    def _lookup(self, call: BoundCall) -> CompiledKernel:
        key = (call.key, self._options_key)
        compiled = None if _env_flag("PYASC_ALWAYS_COMPILE") else self._cache.get(key)
        if compiled is not None and not compiled.guards_hold():
            compiled = None  # a global/closure value the kernel read has changed: never run a stale graph
        if compiled is None:
            compiled = self._compile(call, key)
            self._misses += 1
            self._cache[key] = compiled
        else:
            self._hits += 1
        dump_dir = os.environ.get("PYASC_DUMP_DIR")
        if dump_dir:
            write_dump(dump_dir, compiled)  # also on hits: re-creates a folder the user deleted
        return compiled

    # ---- the pipeline ----------------------------------------------------------
    def _compile(self, call: BoundCall, key: tuple) -> CompiledKernel:
        from ..frontend import ArgSpec, build_graph  # loaded at the first compile: `import pyasc` stays light

        params = self._binder.params
        specs = [
            ArgSpec(p.name, tensor_type(p.name, k[1], k[2]), None) if k[0] == "T" else ArgSpec(p.name, None, v)
            for p, k, v in zip(params, call.key, call.values)
        ]
        t0 = time.perf_counter()
        with _stage(self.__name__, "the frontend"):
            fe = build_graph(self.py_func, specs, unroll_budget=self.options.unroll_budget)
        t1 = time.perf_counter()
        graph = fe.graph
        with _stage(self.__name__, "the frontend's graph (verifier, printer)"):
            ir.verify(graph)
            stages = {
                "source": fe.source,
                "graph": ir.format_graph(graph),
                "inferred": ir.format_graph(graph, show_loc=True),
            }
            dots = {"graph": ir.to_dot(graph)}
        nodes_in = count_ops(graph)
        t2 = time.perf_counter()
        with _stage(self.__name__, "the optimiser"):
            # on the emulator, fusion asks the code generator what fits, so every group it forms tiles
            capacity = (codegen_capacity(self.options.chip_config, self.options.buffer_num)
                        if self.options.backend == "emulator" else None)
            result = ge.optimize(graph, opt_level=self.options.opt_level,
                                 disabled_passes=self.options.disable_passes, chip=self.options.chip_config,
                                 capacity=capacity)
        t3 = time.perf_counter()
        ge_stages = [f"ge.{i:02d}.{name}" for i, (name, _) in enumerate(result.stages, 1)]
        stages.update(zip(ge_stages, (text for _, text in result.stages)))
        dots.update(matched_dots(ge_stages, result.dots))
        device = host = None
        if self.options.backend == "emulator":
            with _stage(self.__name__, "code generation"):
                device = generate(result.graph, result.kernels, result.memory_plan, self.options.chip_config,
                                  CodegenOptions(self.options.buffer_num, self.options.cores, self.options.sync),
                                  self.__name__)
            t4 = time.perf_counter()
            with _stage(self.__name__, "host code generation"):
                host = build_host(device, self.__name__)
            stages.update(device_stages(device, host))
        t5 = time.perf_counter()
        return CompiledKernel(
            name=self.__name__, signature=describe_key(params, call.key), key=key,
            key_hash=key_hash(self._id, key), options=self.options, params=params, graph=result.graph,
            stages=stages, dots=dots, plans=list(result.kernels), memory_plan=result.memory_plan,
            fusion_decisions=list(result.fusion_decisions), pass_log=result.pass_report(times=False),
            returns_tuple=fe.returns_tuple, guards=fe.guards, pass_times=dict(result.pass_times),
            timings={"frontend": t1 - t0, "print": t2 - t1, "optimize": t3 - t2,
                     **({"codegen": t4 - t3, "host": t5 - t4} if device is not None else {}), "total": t5 - t0},
            nodes_in=nodes_in, nodes_out=count_ops(result.graph), device=device, host=host,
        )


class _stage:
    """Context manager: an unexpected exception inside becomes an InternalCompilerError naming the stage."""

    def __init__(self, kernel: str, stage: str):
        self.kernel = kernel
        self.stage = stage

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc is None or isinstance(exc, (CompileError, InternalCompilerError)) or not isinstance(exc, Exception):
            return False
        original = exc.error if isinstance(exc, ge.PassFailure) else exc
        if debug_enabled():
            if original is exc:
                return False  # PYASC_DEBUG=1: the original exception, unwrapped
            raise original  # the pass's own exception, with its traceback
        where = f"optimiser pass {exc.pass_name!r}" if isinstance(exc, ge.PassError) else self.stage
        raise InternalCompilerError(where, self.kernel, original) from original


def kernel(fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
    """Decorator: `@pyasc.kernel` or `@pyasc.kernel(**options)`.

    Options: opt_level (0-3, default 3), chip (preset name or simulator chip
    config; default $PYASC_CHIP or "910b"), buffer_num (1 or 2, default 2),
    cores (None or a positive int), dynamic (bool: specialise on rank instead
    of shape), disable_passes (iterable of pass names), sanitize (bool;
    default $PYASC_SANITIZE), backend ("emulator", the default, or "reference": the
    numpy interpreter of the optimised graph, for debugging), sync ("flags" or
    "barrier": a pipe barrier after every tile op, for bisecting sync bugs),
    unroll_budget (positive int, default 4096). A bad option raises TypeError/ValueError right here.
    The environment defaults are read when the decorator runs; PYASC_DUMP_DIR,
    PYASC_ALWAYS_COMPILE and PYASC_DEBUG are read at each call.
    """
    opts = make_options(**options)
    if fn is None:
        return functools.partial(Kernel, options=opts)
    return Kernel(fn, opts)
