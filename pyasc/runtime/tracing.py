"""A kernel function's frontend graph per specialisation, for transformations that start from it.

`pyasc.grad`, `pyasc.vjp` and the torch custom ops' derived backward build new graphs from the
graph the frontend makes of a function. A `Tracer` keeps that graph per specialisation key, with the
guards of the values it read at trace time: a call whose guards still hold reuses the trace (and
whatever was built from it, in `Trace.derived`); one whose guards fail traces again, as a
`pyasc.kernel` recompiles. What is built from a trace is compiled by `GraphKernel`, whose disk cache
is keyed by the built graph's contents.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from ..ir.graph import Graph
from ..pytree import TreeDef
from .guardset import GuardSet, from_frontend
from .kernel import Kernel
from .specialize import BoundCall, ConstKey, Param, TensorKey
from .treeargs import TreeKey


@dataclass
class Trace:
    """One specialisation's frontend graph (never optimised: transformations copy it)."""

    graph: Graph
    source: str
    guards: GuardSet
    out_tree: TreeDef
    returns_tuple: bool
    params: tuple[Param, ...]
    key: tuple
    derived: dict[Any, Any] = field(default_factory=dict)   # transformation key -> what it built
    lock: threading.Lock = field(default_factory=threading.Lock)

    def input_groups(self) -> list[list[int]]:
        """For each parameter, the Data indices of its tensors (one for a tensor, its tensor leaves for a
        pytree, none for a compile-time value)."""
        groups, i = [], 0
        for k in self.key:
            n = 1 if isinstance(k, TensorKey) else \
                sum(isinstance(leaf, TensorKey) for leaf in k.leaves) if isinstance(k, TreeKey) else 0
            groups.append(list(range(i, i + n)))
            i += n
        return groups

    def derive(self, key: Any, build: Callable[[], Any]) -> Any:
        """What `build()` makes from this trace, built once per `key`."""
        with self.lock:
            found = self.derived.get(key)
            if found is None:
                found = self.derived[key] = build()
            return found


class Tracer:
    """The traces of one kernel's function (see the module docstring)."""

    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self._traces: dict[tuple, Trace] = {}
        self._lock = threading.Lock()

    def trace(self, args: tuple, kwargs: dict) -> tuple[BoundCall, Trace, list[np.ndarray]]:
        """(the specialised call, its trace, the lifted arrays the graph takes after the call's tensors)."""
        k = self.kernel
        call = k.specialize(args, kwargs)
        with self._lock:
            found = self._traces.get(call.key)
        if found is not None:
            hidden = found.guards.check(k.py_func)
            if hidden is not None:
                return call, found, hidden
        from . import pipeline  # the frontend and the compiler load on the first trace

        # a trace is differentiated and run as a graph: its device checks stay in the kernel's own launches
        fe = pipeline.trace_call(k.py_func, k.__name__, k._binder.params, replace(k.options, checks=False), call)
        if len(fe.graph.outputs) != len(fe.results):  # a trace is the function's results (as jax.grad's):
            fe.graph.set_outputs(fe.results)          # its writes to arguments are not part of it
        guards = from_frontend(fe.guards, fe.hidden, fe.graph.inputs, len(call.arrays))
        trace = Trace(fe.graph, fe.source, guards, fe.out_tree, fe.returns_tuple, k._binder.params, call.key)
        with self._lock:
            self._traces[call.key] = trace
        hidden = guards.check(k.py_func)
        if hidden is None:
            hidden = guards.hidden_now(k.py_func)
        return call, trace, hidden


def describe_param(trace: Trace, index: int) -> str:
    """How an argument looks to the specialisation: `x: f32[4, 8]`, `n=3` or a pytree."""
    p, k = trace.params[index], trace.key[index]
    if isinstance(k, ConstKey):
        return f"compile-time argument {p.name!r}"
    if isinstance(k, TensorKey):
        return f"argument {p.name!r} ({k.dtype})"
    return f"pytree argument {p.name!r}"
