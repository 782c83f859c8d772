"""`GraphKernel`: a kernel compiled from a graph another frontend built (autodiff, the FX frontend).

A `pyasc.kernel` starts from Python source; a GraphKernel starts from an `ir.Graph` whose inputs
are its tensors, in Data-index order. From there it is the same compiler: the verifier, the
optimiser, code generation, the host module, the emulator, profiles and dumps (`PYASC_DUMP_DIR`),
and the same caches: one artifact in memory, and on disk under a key whose code part is the digest
of the graph's JSON form (so the same graph built again, in this process or another, is a hit).
Results come back as a tuple of numpy arrays, one per graph output.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import threading
from typing import Any, Callable

import numpy as np

from .. import ir
from ..errors import CompileError
from ..ir.graph import Graph
from ..tensor_type import Sym
from . import persist
from .artifact import CompiledKernel
from .diskcache import DiskCache
from .errors import ArgumentError, ArgumentTypeError, ArgumentValueError, debug_enabled
from .guardset import GuardSet
from .kernel import CacheInfo, dump_stages
from .keys import full_key, graph_components
from .options import KernelOptions
from .profile import Profile
from .specialize import BoundCall, Param, TensorKey, describe_key, to_array


def user_errors(*extra: type) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: a user mistake (CompileError, a bad argument, or one of `extra`) is raised without the
    compiler's frames (PYASC_DEBUG=1 keeps them), as `pyasc.kernel` calls do."""
    caught = (CompileError, ArgumentError, *extra)

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True  # noqa: F841
            try:
                return fn(*args, **kwargs)
            except caught as e:
                if debug_enabled():
                    raise
                raise e.with_traceback(None) from None

        return wrapped

    return deco


class GraphKernel:
    """Compile and run one prebuilt graph (see the module docstring). `source` is the text of the
    "source" stage (for an FX graph, its code); by default the graph's canonical text."""

    def __init__(self, graph: Graph, options: KernelOptions, *, name: str | None = None, source: str | None = None):
        self.graph = graph  # kept as built: each compile optimises a copy
        self.options = options
        self.__name__ = name or graph.name
        self.source = source if source is not None else ir.format_graph(graph)
        self.types = list(graph.input_types)
        names: list[str] = []
        for i, node in enumerate(graph.inputs):
            label = node.name or f"in{i}"
            while label in names:
                label += "_"
            names.append(label)
        self.params = tuple(Param(n, False) for n in names)
        self.key = tuple(TensorKey(t.dtype, tuple(None if isinstance(d, Sym) else d for d in t.shape))
                         for t in self.types)
        self._digest: str | None = None
        self._compiled: CompiledKernel | None = None
        self._lock = threading.Lock()
        self._hits = self._disk_hits = self._misses = 0

    def __repr__(self) -> str:
        return f"<pyasc.GraphKernel {self.__name__}({describe_key(self.params, self.key)})>"

    @property
    def digest(self) -> str:
        """sha256 of the graph's JSON form: the graph's part of the disk key."""
        if self._digest is None:
            self._digest = hashlib.sha256(ir.to_json(self.graph).encode()).hexdigest()
        return self._digest

    # ---- public API ----------------------------------------------------------------------
    @user_errors()
    def __call__(self, *arrays: Any) -> tuple[np.ndarray, ...]:
        """Run on the graph's inputs (numpy arrays or array-likes); returns one array per output."""
        return self.compile().launch(self._arrays(arrays))

    @user_errors()
    def profile(self, *arrays: Any) -> tuple[tuple[np.ndarray, ...], Profile]:
        """Run on the emulator and return (outputs, profile), as `Kernel.profile` does."""
        return self.compile().profile_launch(self._arrays(arrays))

    def compile(self) -> CompiledKernel:
        """The compiled artifact (memory, then the disk cache, then a compile)."""
        compiled = self._compiled
        if compiled is not None:
            with self._lock:
                self._hits += 1
            if "PYASC_DUMP_DIR" in os.environ:
                self._dump(compiled)
            return compiled
        with self._lock:
            if self._compiled is None:
                self._compiled = self._load_or_compile()
            compiled = self._compiled
        self._dump(compiled)
        return compiled

    def cache_info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(self._hits, self._disk_hits, self._misses, int(self._compiled is not None))

    # ---- internals ------------------------------------------------------------------------
    def _arrays(self, values: tuple) -> list[np.ndarray]:
        if len(values) != len(self.types):
            raise ArgumentTypeError(f"{self.__name__}() takes {len(self.types)} tensor argument(s) "
                                    f"({', '.join(p.name for p in self.params)}), got {len(values)}")
        out = []
        for p, t, v in zip(self.params, self.types, values):
            arr = to_array(self.__name__, p.name, v)
            static = all(isinstance(d, int) for d in t.shape)
            if arr.dtype.name != t.dtype or arr.ndim != t.ndim or (static and tuple(arr.shape) != tuple(t.shape)):
                raise ArgumentValueError(f"{self.__name__}() argument {p.name!r} is {arr.dtype}{list(arr.shape)}, "
                                         f"but the graph takes {t}")
            out.append(arr)
        return out

    def _load_or_compile(self) -> CompiledKernel:
        store = DiskCache.from_env()
        comps = graph_components(self.__name__, self.digest, self.params, self.key, self.options,
                                 store.root if store else None)
        digest = comps.digest()
        call = BoundCall(self.key, [], ())
        always = os.environ.get("PYASC_ALWAYS_COMPILE", "").strip().lower() in ("1", "true", "yes", "on")

        def load() -> CompiledKernel | None:
            if store is None or always:
                return None
            found = persist.load(store, None, self.__name__, self.params, self.options, call, comps, digest)
            if found is not None:
                self._disk_hits += 1
            return found

        compiled = load()
        if compiled is not None:
            return compiled
        with store.lock(digest) if store is not None else contextlib.nullcontext():
            compiled = load()
            if compiled is not None:
                return compiled
            from . import pipeline  # the compile pipeline loads on the first miss

            graph = ir.from_json(ir.to_json(self.graph))  # the optimiser edits in place: keep ours as built
            back = pipeline.compile_graph(graph, self.__name__, self.options, source=self.source)
            guards = GuardSet()
            key = full_key(digest, pipeline.guards_digest(guards))
            compiled = CompiledKernel(
                name=self.__name__, signature=describe_key(self.params, self.key), key=self.key, key_hash=key[:12],
                options=self.options, params=self.params, returns_tuple=True, guards=guards, py_func=None,
                full_key=key, components=comps, **back.fields())
            self._misses += 1
            if store is not None:
                persist.save(store, compiled, digest)
        return compiled

    def _dump(self, compiled: CompiledKernel) -> None:
        dump_stages(compiled, self.__name__)
