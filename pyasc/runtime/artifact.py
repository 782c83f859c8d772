"""The compiled artifact of one kernel specialisation (what `kernel.compile(...)` returns)."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from simulator import SimulatorError

from .. import ops
from ..codegen.generate import DeviceKernel, DeviceModule
from ..codegen.host import HostProgram, build_host_source
from ..ge import FusionDecision, KernelPlan, MemoryPlan
from ..ir import Graph, InterpreterError, format_graph, interpret
from .emulator import EmulatorRunner
from .errors import ArgumentTypeError, ArgumentValueError, InternalCompilerError
from .options import KernelOptions
from .profile import Profile
from .shapes import ShapeMismatch, check_launch_shapes
from .specialize import Param, tensor_dims, to_array


def count_ops(graph: Graph) -> int:
    """Compute nodes in a graph and its subgraphs (inputs and constants are not counted)."""
    return sum(1 for n in graph.all_nodes() if not ops.get(n.op).leaf)


def key_hash(kernel_id: str, key: tuple) -> str:
    """Short, process-independent hash of a specialisation (names the dump folder)."""
    return hashlib.sha256(repr((kernel_id, key)).encode()).hexdigest()[:12]


@dataclass(eq=False)
class CompiledKernel:
    """One specialisation of a kernel, compiled.

    - `stages`: ordered stage name -> readable text: "source" (the kernel as
      the frontend normalised it), "graph" (the graph right after the
      frontend), "inferred" (the same graph with types and source
      locations), then one "ge.NN.<pass>" entry per optimiser pass that
      changed the graph.
    - `graph`: the final graph; `plans`: the device kernels the optimiser
      planned (one `KernelPlan` per fusion group); `memory_plan`,
      `fusion_decisions`: the optimiser's decisions (`fusion_log`: them as text);
    - `kernels`: the launched device kernels (emulator backend), each with its
      template, tiling choice, schedule, sync plan, program, core type and block
      count; `device`: the whole code-generation result with its launch plan;
      `host_ir`: the LLVM IR of the host module that drives the launches.
    - `run(*arrays)`: run on tensor arguments (in parameter order) that
      match this specialisation.
    """

    name: str
    signature: str
    key: tuple
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
    guards: tuple = ()          # frontend Guards on the globals/closure values the kernel read
    pass_times: dict[str, float] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)   # seconds: frontend, optimize, total
    nodes_in: int = 0
    nodes_out: int = 0
    device: DeviceModule | None = None      # code generation's result (emulator backend)
    host: HostProgram | None = None         # the loaded host module that drives the launches
    _shapes_ok: set = field(default_factory=set, repr=False)
    _runner: EmulatorRunner | None = field(default=None, repr=False)

    @property
    def fusion_log(self) -> list[str]:
        """The fusion decisions as text, one line each (what the dump's fusion_log.txt holds)."""
        return [d.render() for d in self.fusion_decisions]

    def guards_hold(self) -> bool:
        """Whether every global/closure value read at compile time is still what it was."""
        return all(g.holds() for g in self.guards)

    @property
    def kernels(self) -> list[DeviceKernel]:
        """The launched device kernels (empty on the reference backend, which launches nothing)."""
        return list(self.device.kernels) if self.device is not None else []

    @property
    def host_ir(self) -> str:
        """LLVM IR of the host module ("" on the reference backend, which has no host code)."""
        return self.host.source.ir if self.host is not None else ""

    @property
    def tensor_params(self) -> list[tuple[Param, tuple]]:
        return [(p, k) for p, k in zip(self.params, self.key[0]) if k[0] == "T"]

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
            if arr.dtype.name != k[1] or dims != k[2]:
                raise ArgumentValueError(
                    f"{self.name}.run() argument {p.name!r} is {arr.dtype}{list(arr.shape)}, but this artifact was "
                    f"compiled for {self.signature}; call the kernel itself to compile a new specialisation")
            converted.append(arr)
        return self.launch(converted)

    def launch(self, arrays: list[np.ndarray]) -> Any:
        """Run on arrays already converted and matched to the key (the Kernel's fast path)."""
        return self._pack(self._execute(arrays, None))

    def profile_launch(self, arrays: list[np.ndarray]) -> tuple[Any, Profile]:
        """Run on the emulator recording every launch; returns (outputs, profile)."""
        if self.device is None:
            raise ArgumentValueError(f"{self.name}: kernel.profile() needs the emulator backend; this kernel was "
                                     f"compiled with backend={self.options.backend!r}")
        chip = self.options.chip_config
        prof = Profile(chip.clock_hz, chip.gm_bytes_per_second)
        outputs = self._execute(arrays, prof)
        return self._pack(outputs), prof

    def _pack(self, outputs: list[np.ndarray]) -> Any:
        return tuple(outputs) if self.returns_tuple else outputs[0]

    def _execute(self, arrays: list[np.ndarray], prof: Profile | None) -> list[np.ndarray]:
        if self.options.dynamic:
            shapes = tuple(a.shape for a in arrays)
            if shapes not in self._shapes_ok:
                self._check_dynamic(arrays, shapes)
        if self.device is None or self.host is None:
            try:
                return interpret(self.graph, arrays)
            except InterpreterError as e:  # the graph disagrees with itself at run time: a compiler bug
                raise InternalCompilerError("the reference backend", self.name, e) from e
        if self._runner is None:
            self._runner = EmulatorRunner(self.device, self.host, self.options.chip_config, self.options.sanitize,
                                          self.graph)
        try:
            return self._runner.run(arrays, prof)
        except SimulatorError as e:  # generated code broke a hardware rule: a compiler bug, never the user's
            raise InternalCompilerError("the emulator backend", self.name, e) from e

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
    """The code-generation stages of an artifact: tiling (with schedules and sync), each tile program,
    the launch plan and the host LLVM IR."""
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
