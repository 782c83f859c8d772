"""One compile: frontend -> verifier/printer -> optimiser -> a CompiledKernel.

Any exception that is not the user's CompileError becomes an
InternalCompilerError naming the stage (or the optimiser pass) it came from.
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import Any, Sequence

from .. import ge, ir, pytree
from ..errors import CompileError
from ..guards import NotPersistable
from ..codegen.capacity import codegen_capacity
from ..codegen.generate import CodegenOptions, generate
from . import limits
from .artifact import CompiledKernel, build_host, count_ops, device_stages, matched_dots, op_histogram
from .errors import InternalCompilerError, debug_enabled
from .guardset import GuardSet, from_frontend
from .keys import KeyComponents, full_key
from .options import KernelOptions
from .specialize import UNKEYED_DEFAULT, BoundCall, Param, TensorKey, describe_key, is_tensor_value, same_inputs, \
    tensor_type
from .treeargs import TreeKey, leaf_name


def guards_digest(guards: GuardSet) -> str:
    """The guards' part of the key; a memory-only guard set gets a digest no disk entry can have."""
    try:
        return guards.digest()
    except NotPersistable:
        text = "\n".join(guards.describe()) + f"\n{id(guards)}"
        return "memory-only:" + hashlib.sha256(text.encode()).hexdigest()


def compile_call(fn: Any, name: str, params: Sequence[Param], options: KernelOptions, call: BoundCall,
                 components: KeyComponents, components_digest: str, decisions: Sequence[Any] = (),
                 runners_up: int = 0) -> CompiledKernel:
    """Compile one call; `decisions` (codegen.tiling.TilingDecision) override the cost model's tiling choice
    for the device kernels they name (autotuning winners; `components` must record them). Each kernel's
    tiling report lists at least `runners_up` candidates after its choice (the tuner measures them)."""
    t0 = time.perf_counter()
    fe = trace_call(fn, name, params, options, call)
    t1 = time.perf_counter()
    with _stage(name, "the frontend's graph (verifier, printer)"):
        guards = from_frontend(fe.guards, fe.hidden, fe.graph.inputs, len(call.arrays))
    back = compile_graph(fe.graph, name, options, source=fe.source, decisions=decisions, runners_up=runners_up)
    key = full_key(components_digest, guards_digest(guards))
    return CompiledKernel(
        name=name, signature=describe_key(params, call.key), key=call.key, key_hash=key[:12], options=options,
        params=tuple(params), returns_tuple=fe.returns_tuple, guards=guards, py_func=fn, out_tree=fe.out_tree,
        effects=fe.effects, out_consts=fe.out_consts,
        full_key=key, components=components, **back.fields(t1 - t0),
    )


def trace_call(fn: Any, name: str, params: Sequence[Param], options: KernelOptions, call: BoundCall) -> Any:
    """The frontend's result (graph, guards, result structure) for one specialised call."""
    from ..frontend import ArgSpec, build_graph  # the frontend is loaded on the first compile, never on a hit

    taken = {p.name for p in params}  # leaf names (and their symbolic dims) must not collide with a parameter's
    specs = [_spec(ArgSpec, p, k, v, taken) for p, k, v in zip(params, call.key, call.values)
             if k != UNKEYED_DEFAULT]
    with _stage(name, "the frontend"):
        return build_graph(fn, specs, unroll_budget=options.unroll_budget, same_inputs=same_inputs(params, call.key),
                           checks=options.checks)


@dataclass
class BackEnd:
    """What compiling a graph gives (everything of a CompiledKernel that does not depend on where the
    graph came from): `fields(frontend_seconds)` are CompiledKernel fields."""

    graph: Any
    stages: dict[str, str]
    dots: dict[str, str]
    stage_ops: dict[str, dict[str, int]]
    result: Any
    device: Any
    host: Any
    nodes_in: int
    timings: dict[str, float]

    def fields(self, frontend_s: float = 0.0) -> dict[str, Any]:
        r = self.result
        timings = {"frontend": frontend_s, **self.timings}
        timings["total"] = sum(v for k, v in timings.items() if "." not in k)  # codegen.<stage>: within codegen
        return dict(graph=r.graph, stages=self.stages, dots=self.dots, plans=list(r.kernels),
                    memory_plan=r.memory_plan, fusion_decisions=list(r.fusion_decisions),
                    pass_log=r.pass_report(times=False), stage_ops=self.stage_ops, pass_times=dict(r.pass_times),
                    timings=timings, nodes_in=self.nodes_in, nodes_out=count_ops(r.graph), device=self.device,
                    host=self.host)


def compile_graph(graph: Any, name: str, options: KernelOptions, *, source: str,
                  decisions: Sequence[Any] = (), runners_up: int = 0) -> BackEnd:
    """A graph (from the frontend, autodiff or the FX frontend) through the verifier, the optimiser,
    code generation and the host module. `source` is the "source" stage's text; `decisions` and
    `runners_up` as in `compile_call`. The graph is optimised in place."""
    t1 = time.perf_counter()
    limits.check_graph(graph, limits.MemoryLimit(options.chip_config.gm_bytes, options.chip_name))
    with _stage(name, "the frontend's graph (verifier, printer)"):
        ir.verify(graph)
        stages = {"source": source, "graph": ir.format_graph(graph), "inferred": ir.format_graph(graph, show_loc=True)}
        notes = [n.attrs["_note"] for n in graph.all_nodes() if "_note" in n.attrs]  # e.g. a loop kept at run time
        if notes:
            stages["notes"] = "\n".join(notes)
        dots = {"graph": ir.to_dot(graph)}
        stage_ops = {"graph": op_histogram(graph)}
    nodes_in = count_ops(graph)
    t2 = time.perf_counter()
    histograms: list[dict[str, int]] = []
    emulator = options.backend == "emulator"
    with _stage(name, "the optimiser"):
        # on the emulator, fusion asks the code generator what fits, so every group it forms tiles
        capacity = codegen_capacity(options.chip_config, options.buffer_num) if emulator else None
        result = ge.optimize(graph, opt_level=options.opt_level, disabled_passes=options.disable_passes,
                             chip=options.chip_config, on_stage=lambda _, g: histograms.append(op_histogram(g)),
                             capacity=capacity)
    t3 = time.perf_counter()
    ge_stages = [f"ge.{i:02d}.{pass_name}" for i, (pass_name, _) in enumerate(result.stages, 1)]
    stages.update(zip(ge_stages, (text for _, text in result.stages)))
    stage_ops.update(zip(ge_stages, histograms))
    dots.update(matched_dots(ge_stages, result.dots))
    if result.fusion_decisions:
        stages["fusion_log"] = "\n".join(result.fusion_log)
    if result.memory_plan is not None:
        stages["memory_plan"] = result.memory_plan.table()
    device = host = None
    t4 = t3
    if emulator:
        with _stage(name, "code generation"):
            device = generate(result.graph, result.kernels, result.memory_plan, options.chip_config,
                              CodegenOptions(options.buffer_num, options.cores, options.sync, tuple(decisions),
                                             runners_up),
                              name)
        t4 = time.perf_counter()
        with _stage(name, "host code generation"):
            host = build_host(device, name)
        stages.update(device_stages(device, host))
    t5 = time.perf_counter()
    timings = {"print": t2 - t1, "optimize": t3 - t2,
               **({"codegen": t4 - t3, **{f"codegen.{k}": v for k, v in device.stage_times.items()},
                   "host": t5 - t4} if emulator else {})}
    return BackEnd(graph, stages, dots, stage_ops, result, device, host, nodes_in, timings)


def _spec(arg_spec: Any, p: Param, k: Any, v: Any, taken: set[str]) -> Any:
    """The frontend's ArgSpec of one parameter; a pytree's is a TreeArg of leaf types and values."""
    if isinstance(k, TensorKey):
        return arg_spec(p.name, tensor_type(p.name, k), None, k.scalar)
    if not isinstance(k, TreeKey):
        return arg_spec(p.name, None, v)
    from ..frontend.pytree import TreeArg  # with the frontend, loaded on the first compile

    values, _ = pytree.flatten(v, is_tensor_value)
    names = []
    for path in k.tree.paths():
        name = leaf_name(p.name, k.tree, path)
        while name in taken:
            name += "_"
        taken.add(name)
        names.append(name)
    leaves = tuple(tensor_type(n, leaf) if isinstance(leaf, TensorKey) else value
                   for n, leaf, value in zip(names, k.leaves, values))
    return arg_spec(p.name, None, TreeArg(k.tree, leaves, tuple(names)))


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
