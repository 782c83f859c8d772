"""The compiled artifact of one kernel specialisation (what `kernel.compile(...)` returns)."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from simulator import SimulatorError

from .. import ops
from ..codegen.device import DeviceKernel, DeviceModule
from ..effects import Effects
from ..codegen.host import HostProgram, build_host_source
from ..ge import FusionDecision, KernelPlan, MemoryPlan
from ..ir import Graph, InterpreterError, format_graph, interpret
from ..ir.interpreter import DataError
from ..pytree import LEAF_DEF, TreeDef, unflatten
from . import writeback
from .emulator import EmulatorRunner
from .errors import ArgumentTypeError, ArgumentValueError, InternalCompilerError
from .guardset import GuardSet
from .options import KernelOptions
from .profile import Profile
from .shapes import ShapeMismatch, check_launch_shapes
from .specialize import ArgKey, Param, TensorKey, tensor_dims, tensor_leaves, to_array


def count_ops(graph: Graph) -> int:
    """Compute nodes in a graph and its subgraphs (inputs and constants are not counted)."""
    return sum(1 for n in graph.all_nodes() if not ops.get(n.op).leaf)


def op_histogram(graph: Graph) -> dict[str, int]:
    """Op name -> count of compute nodes in a graph and its subgraphs (most frequent first)."""
    counts: dict[str, int] = {}
    for n in graph.all_nodes():
        if not ops.get(n.op).leaf:
            counts[n.op] = counts.get(n.op, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


class StaleArtifactError(RuntimeError):
    """`CompiledKernel.run` on an artifact whose compile-time values have changed since it was built."""


_RUNNER_LOCK = threading.Lock()


@dataclass(eq=False)
class CompiledKernel:
    """One specialisation of a kernel, compiled.

    - `stages`: ordered stage name -> readable text: "source" (the kernel as
      the frontend normalised it), "graph" (the graph right after the
      frontend), "inferred" (the same graph with types and source
      locations), one "ge.NN.<pass>" entry per optimiser pass that changed
      the graph, then "fusion_log" and "memory_plan", then the code generator's
      "tiling", one "program.k<i>" per tile program, "launch" and "host" (the
      LLVM IR); dumps and `pyasc diff` follow it. `dots`: stage -> Graphviz DOT, for
      the graph stages; `stage_ops`: stage -> op histogram, likewise.
    - `graph`: the final graph; `plans`: the kernels the optimiser planned
      (one `KernelPlan` per fusion group); `memory_plan`, `fusion_decisions`:
      the optimiser's decisions (`fusion_log`: them as text).
    - `kernels`: the launched device kernels (emulator backend; a plan may
      launch several), each with its template, tiling choice, program, core
      type and block count; `device`: code generation's whole result with the
      launch plan; `host`: the loaded host module (`host_ir`: its LLVM IR).
    - `guards`: what the kernel read at compile time (pyasc.guards), and the
      lifted arrays it takes as hidden inputs after the user's tensors.
    - `key`: one record per parameter; `full_key`: the content-based disk
      key (runtime/keys.py), `key_hash` its first 12 hex digits.
    - `origin`: "compiled" in this process, or "disk" (loaded from the cache).
    - `run(*arrays)`: run on tensor arguments (in parameter order) that
      match this specialisation.
    """

    name: str
    signature: str
    key: tuple[ArgKey, ...]
    key_hash: str
    options: KernelOptions
    params: tuple[Param, ...]
    graph: Graph
    stages: dict[str, str]
    dots: dict[str, str]
    plans: list[KernelPlan]
    memory_plan: MemoryPlan | None
    fusion_decisions: list[FusionDecision]
    pass_log: str             # one line per optimiser pass: changed (its stage), unchanged or skipped
    returns_tuple: bool
    guards: GuardSet = field(default_factory=GuardSet)
    py_func: Any = None       # the function the guards' access paths start from
    full_key: str = ""
    components: Any = None    # keys.KeyComponents
    stage_ops: dict[str, dict[str, int]] = field(default_factory=dict)
    origin: str = "compiled"
    pass_times: dict[str, float] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)   # seconds: frontend, optimize, total
    nodes_in: int = 0
    nodes_out: int = 0
    device: DeviceModule | None = None
    host: HostProgram | None = None
    out_tree: TreeDef | None = None  # the result's structure (None: a tensor, or a tuple if returns_tuple)
    effects: Effects | None = None   # what a call changes outside the kernel (pyasc.effects); None: nothing
    out_consts: tuple = ()           # (leaf index, value): the result's None and string leaves
    _shapes_ok: set = field(default_factory=set, repr=False)
    _runner: EmulatorRunner | None = field(default=None, repr=False)

    @property
    def fusion_log(self) -> list[str]:
        """The fusion decisions as text, one line each (what the dump's fusion_log.txt holds)."""
        return [d.render() for d in self.fusion_decisions]

    @property
    def kernels(self) -> list[DeviceKernel]:
        """The launched device kernels (empty on the reference backend, which launches nothing)."""
        return list(self.device.kernels) if self.device is not None else []

    @property
    def host_ir(self) -> str:
        """LLVM IR of the host module ("" on the reference backend, which has no host code)."""
        return self.host.source.ir if self.host is not None else ""

    @property
    def tensor_params(self) -> list[tuple[Param, TensorKey]]:
        """The tensors `run` takes, in order: tensor parameters and the tensor leaves of pytree parameters
        (each as a Param named the way the user spells it, e.g. `params['w']`)."""
        return [(Param(label, False), k) for label, _, k in tensor_leaves(self.params, self.key)]

    # ---- execution ---------------------------------------------------------------
    def run(self, *arrays: Any) -> Any:
        """Run on the tensor arguments (compile-time arguments are already baked in)."""
        expected = self.tensor_params
        if len(arrays) != len(expected):
            names = ", ".join(p.name for p, _ in expected)
            raise ArgumentTypeError(f"{self.name}.run() takes {len(expected)} tensor argument(s) ({names}), "
                            f"got {len(arrays)}")
        converted = []
        for (p, k), value in zip(expected, arrays):
            arr = to_array(self.name, p.name, value)
            dims = tensor_dims(arr.shape, self.options.dynamic)
            if arr.dtype.name != k.dtype or dims != k.dims:
                raise ArgumentValueError(
                    f"{self.name}.run() argument {p.name!r} is {arr.dtype}{list(arr.shape)}, but this artifact was "
                    f"compiled for {self.signature}; call the kernel itself to compile a new specialisation")
            converted.append(arr)
        hidden = self.guards.check(self.py_func)
        if hidden is None:
            raise StaleArtifactError(
                f"{self.name}.run(): {self.guards.failing(self.py_func) or 'a value read at compile time changed'} "
                "since this artifact was compiled; call the kernel itself to compile it again")
        if self.effects is not None and any(s.target.kind == "arg" for s in self.effects.stores):
            raise ArgumentValueError(f"{self.name}.run() takes tensors only, but this kernel sets items of its pytree "
                                     "arguments; call the kernel itself")
        return self.launch(converted + hidden, list(arrays))

    def launch(self, arrays: list[np.ndarray], objects: list[Any] | None = None,
               arguments: Callable[[str], Any] | None = None) -> Any:
        """Run on arrays already converted and matched to the key, the hidden inputs after the user's
        tensors (the Kernel's fast path). `objects`: the caller's own objects behind the user's tensors, and
        `arguments(name)`: the call's argument of that parameter (where writes and stores go)."""
        if self.effects is None:
            return self._pack(self._execute(arrays, None))
        return self._pack(self._with_effects(arrays, objects, arguments, None))

    def profile_launch(self, arrays: list[np.ndarray], objects: list[Any] | None = None,
                       arguments: Callable[[str], Any] | None = None) -> tuple[Any, Profile]:
        """Run on the emulator recording every launch; returns (outputs, profile)."""
        if self.device is None:
            raise ArgumentValueError(f"{self.name}: kernel.profile() needs the emulator backend; this kernel was "
                                     f"compiled with backend={self.options.backend!r} (the option, or PYASC_BACKEND)")
        chip = self.options.chip_config
        prof = Profile(chip.clock_hz, chip.gm_bytes_per_second,
                       l2_peak_bytes_per_s=chip.l2_bytes_per_cycle * chip.clock_hz)
        if self.effects is None:
            return self._pack(self._execute(arrays, prof)), prof
        return self._pack(self._with_effects(arrays, objects, arguments, prof)), prof

    def _with_effects(self, arrays: list[np.ndarray], objects: list[Any] | None,
                      arguments: Callable[[str], Any] | None, prof: Profile | None) -> list[np.ndarray]:
        """Launch, then write the caller's arrays and set the caller's objects the kernel changed."""
        effects = self.effects
        assert effects is not None
        users = len(arrays) - len(self.guards.hidden)
        if objects is None:
            objects = list(arrays[:users])
        writeback.check_inputs(self.name, effects, objects, arrays)
        outputs = self._execute(arrays, prof)

        def no_arguments(name: str) -> Any:
            raise LookupError(f"argument {name!r} is not available here")

        return writeback.apply(self.name, effects, outputs, objects, self.guards.hidden, self.py_func,
                               arguments or no_arguments)

    def _pack(self, outputs: list[np.ndarray]) -> Any:
        if self.out_consts:  # None and string leaves sit between the outputs
            consts = dict(self.out_consts)
            it = iter(outputs)
            n = self.out_tree.num_leaves if self.out_tree is not None else len(outputs) + len(consts)
            outputs = [consts[i] if i in consts else next(it) for i in range(n)]
        if self.out_tree is not None and self.out_tree != LEAF_DEF:
            return unflatten(self.out_tree, outputs)
        return tuple(outputs) if self.returns_tuple else outputs[0]

    def _execute(self, arrays: list[np.ndarray], prof: Profile | None) -> list[np.ndarray]:
        if self.options.dynamic:
            shapes = tuple(a.shape for a in arrays)
            if shapes not in self._shapes_ok:
                self._check_dynamic(arrays, shapes)
        if self.device is None or self.host is None:
            try:
                return interpret(self.graph, arrays)
            except DataError as e:  # numpy refuses these values (e.g. a negative integer exponent)
                raise ArgumentValueError(f"{self.name}(): {e}") from None
            except InterpreterError as e:  # the graph disagrees with itself at run time: a compiler bug
                raise InternalCompilerError("the reference backend", self.name, e) from e
        runner = self._runner or self._make_runner()
        try:
            return runner.run(arrays, prof)
        except SimulatorError as e:  # generated code broke a hardware rule: a compiler bug, never the user's
            raise InternalCompilerError("the emulator backend", self.name, e) from e

    def _make_runner(self) -> EmulatorRunner:
        with _RUNNER_LOCK:  # threads racing on the first call share one device
            if self._runner is None:
                self._runner = EmulatorRunner(self.device, self.host, self.options.chip_config,
                                              self.options.sanitize, self.graph)
            return self._runner

    def _check_dynamic(self, arrays: list[np.ndarray], shapes: tuple) -> None:
        try:
            check_launch_shapes(self.graph, arrays)
        except ShapeMismatch as e:
            given = ", ".join(f"{p.name}: {tuple(a.shape)}" for (p, _), a in zip(self.tensor_params, arrays))
            raise ArgumentValueError(f"{self.name}() was compiled with dynamic=True for {self.signature}, and these "
                             f"shapes do not fit it ({given}): {e}") from None
        if len(self._shapes_ok) >= 1024:  # bounded memo: a long-running loop over many shapes stays small
            self._shapes_ok.clear()
        self._shapes_ok.add(shapes)

    # ---- reports ----------------------------------------------------------------
    def __str__(self) -> str:
        lines = [f"CompiledKernel {self.name}({self.signature})",
                 f"  options: {self.options.describe()}",
                 f"  graph: {self.nodes_in} op nodes after the frontend, {self.nodes_out} after optimisation",
                 f"  kernels planned: {len(self.plans)}"]
        for i, k in enumerate(self.plans):
            lines.append(f"    #{i} {k.category.name} anchor={k.anchor}" + (f": {' '.join(k.ops)}" if k.ops else ""))
        for dk in self.kernels:
            lines.append(f"  device kernel k{dk.index} {dk.name}: {dk.core_type.upper()} x {dk.blocks}, "
                         f"{len(dk.program)} instructions; {dk.tiling.params.describe()}")
        plan = self.memory_plan
        if plan is not None and getattr(plan, "peak_bytes", None) is not None:
            lines.append(f"  workspace: {plan.peak_bytes} bytes (naive {plan.naive_bytes})")
        if self.guards.hidden:
            lines.append(f"  hidden inputs (lifted captured arrays): {len(self.guards.hidden)}")
        lines.append(f"  stages: {', '.join(self.stages)}")
        if self.timings:
            lines.append("  compile: " + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in self.timings.items()))
        lines.append(f"  host_ir: {len(self.host_ir.splitlines())} lines" if self.host_ir else
                     "  host_ir: (none: reference backend)")
        lines.append("final graph:")
        lines.extend("  " + line for line in format_graph(self.graph).splitlines())
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<CompiledKernel {self.name}({self.signature}) {self.key_hash}>"


def build_host(device: DeviceModule, name: str) -> HostProgram:
    """The host module for a device module, compiled to object code and loaded."""
    outputs = [loc.nbytes if loc is not None else None for loc in device.launch.outputs]
    return HostProgram.load(build_host_source(device.launch, device.kernels, outputs, name))


def device_stages(device: DeviceModule, host: HostProgram) -> dict[str, str]:
    """The code-generation stages of an artifact: tiling (with schedules, sync and what each kernel's codegen
    stages did), each tile program, the launch plan and the host LLVM IR."""
    out = {"tiling": device.tiling_text()}
    for k in device.kernels:
        out[f"program.k{k.index}"] = k.program.listing()
    out["launch"] = device.launch.text([k.name for k in device.kernels])
    out["host"] = host.source.ir
    return out


def matched_dots(stage_names: Sequence[str], dots: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Pair the optimiser's DOT list with its stage names (by order, then by pass name)."""
    out: dict[str, str] = {}
    pending = list(dots)
    for stage in stage_names:
        pass_name = stage.split(".", 2)[-1]
        for i, (name, dot) in enumerate(pending):
            if name == pass_name:
                out[stage] = dot
                del pending[i]
                break
    return out
