"""`torch.compile(model, backend="pyasc")`: captured graphs through pyasc's optimiser, codegen and emulator.

Dynamo captures the model; AOTAutograd turns it into an aten graph (forward; a backward, when
one is needed, runs in eager PyTorch). The aten graph is split into the largest pieces whose ops
pyasc lowers (torch.fx's capability partitioner); each piece becomes one pyasc kernel (FX frontend),
the rest runs in eager PyTorch: a graph break, reported once per op and place as a
`PyascGraphBreak` warning. `options=` (via `torch.compile(..., options={...})`) are pyasc.kernel options.
"""
from __future__ import annotations

import contextlib
import contextvars
import hashlib
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterator

import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupport

from ..runtime import kernel as make_kernel
from ..runtime.profile import Profile
from .aten_ops import aten
from .convert import from_numpy, to_numpy
from .fx_frontend import kernel_source, load_kernel_function, node_support

#: ops that only rename memory: a piece made of nothing else stays in PyTorch (a kernel would only copy)
_FREE = {aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.t.default, aten.transpose.int,
         aten.permute.default, aten.expand.default, aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims,
         aten.squeeze.default, aten.clone.default, aten.alias.default, aten.detach.default}


class PyascGraphBreak(UserWarning):
    """An op of a torch.compile'd model that pyasc does not lower: it runs in eager PyTorch."""


@dataclass(frozen=True)
class GraphBreak:
    op: str
    where: str
    why: str

    def __str__(self) -> str:
        return f"pyasc: {self.op} ({self.why}) runs in eager PyTorch (graph break) at {self.where}"


class _Reports:
    """Graph breaks already reported in this process (each op and place once)."""

    def __init__(self) -> None:
        self.seen: set[tuple[str, str]] = set()
        self.lock = threading.Lock()

    def report(self, brk: GraphBreak) -> None:
        with self.lock:
            if (brk.op, brk.where) in self.seen:
                return
            self.seen.add((brk.op, brk.where))
        warnings.warn(str(brk), PyascGraphBreak, stacklevel=2)


_REPORTS = _Reports()
_PROFILE: contextvars.ContextVar["ProfileRecord | None"] = contextvars.ContextVar("pyasc_fx_profile", default=None)


@dataclass
class ProfileRecord:
    """What `pyasc.torch.profile()` collects: one (kernel name, Profile) per pyasc kernel call, and the
    compiled artifact of each call (`artifacts`: its stages, graph and device kernels)."""

    calls: list[tuple[str, Profile]] = field(default_factory=list)
    artifacts: list[Any] = field(default_factory=list)

    @property
    def launches(self) -> int:
        return sum(p.launches for _, p in self.calls)

    @property
    def time_s(self) -> float:
        return sum(p.time_s for _, p in self.calls)

    @property
    def gm_bytes(self) -> int:
        return sum(p.gm_bytes for _, p in self.calls)

    def summary(self) -> str:
        lines = [f"{len(self.calls)} pyasc kernel call(s), {self.launches} launch(es), "
                 f"{self.time_s * 1e6:,.2f} us simulated, GM {self.gm_bytes:,} B"]
        for name, p in self.calls:
            lines.append(f"--- {name}\n{p.summary()}")
        return "\n".join(lines)


@contextlib.contextmanager
def profile() -> Iterator[ProfileRecord]:
    """Within the block, every pyasc kernel a compiled model runs is profiled on the emulator."""
    record = ProfileRecord()
    token = _PROFILE.set(record)
    try:
        yield record
    finally:
        _PROFILE.reset(token)


class PyascSubgraph(torch.nn.Module):
    """One lowered piece of an aten graph: CPU tensors in, the pyasc kernel on the emulator, tensors out."""

    def __init__(self, source: str, name: str, results: int, tuple_out: bool, options: dict[str, Any]):
        super().__init__()
        self.source = source
        self.kernel = make_kernel(load_kernel_function(source, name), **options)
        self.results = results
        self.tuple_out = tuple_out

    def forward(self, *tensors: torch.Tensor) -> Any:
        arrays = [to_numpy(t) for t in tensors]
        record = _PROFILE.get()
        if record is None:
            out = self.kernel(*arrays)
        else:
            out, prof = self.kernel.profile(*arrays)
            record.calls.append((self.kernel.__name__, prof))
            record.artifacts.append(self.kernel.compile(*arrays))  # a cache hit: the artifact just run
        outs = [from_numpy(o) for o in (out if isinstance(out, tuple) else (out,))]
        return tuple(outs) if self.tuple_out else outs[0]


class _Support(OperatorSupport):
    def is_node_supported(self, submodules: Any, node: torch.fx.Node) -> bool:
        return node_support(node) is None


def _where(node: torch.fx.Node) -> str:
    trace = node.meta.get("stack_trace") or ""
    lines = [ln.strip() for ln in trace.strip().splitlines() if ln.strip().startswith("File ")]
    return lines[-1] if lines else f"aten graph node {node.name}"


@dataclass
class LoweredGraph:
    """The aten graph after lowering: which pieces run as pyasc kernels, and the graph breaks."""

    module: torch.fx.GraphModule
    subgraphs: list[PyascSubgraph]
    breaks: list[GraphBreak]


def lower(gm: torch.fx.GraphModule, options: dict[str, Any]) -> LoweredGraph:
    """Replace every lowerable piece of an aten graph by a PyascSubgraph; report the rest."""
    breaks = []
    for node in gm.graph.nodes:
        if node.op == "call_function":
            why = node_support(node)
            if why is not None:
                brk = GraphBreak(str(node.target), _where(node), why)
                breaks.append(brk)
                _REPORTS.report(brk)
    partitioner = CapabilityBasedPartitioner(gm, _Support(), allows_single_node_partition=True)
    partitions = [p for p in partitioner.propose_partitions()
                  if any(n.target not in _FREE and n.target.__name__ != "getitem" for n in p.nodes)]
    fused = partitioner.fuse_partitions(partitions)
    subgraphs = []
    for node in list(fused.graph.nodes):
        if node.op != "call_module" or not node.target.startswith("fused_"):
            continue
        sub = getattr(fused, node.target)
        # named by content, so the same piece gets the same kernel (and disk-cache key) in every compile
        draft, _ = kernel_source(sub, "fx_kernel")
        name = f"fx_{hashlib.sha256(draft.encode()).hexdigest()[:10]}"
        source, results = kernel_source(sub, name)
        out_node = next(n for n in sub.graph.nodes if n.op == "output")
        tuple_out = isinstance(out_node.args[0], (tuple, list))
        lowered = PyascSubgraph(source, name, results, tuple_out, options)
        setattr(fused, node.target, lowered)
        subgraphs.append(lowered)
    fused.recompile()
    return LoweredGraph(fused, subgraphs, breaks)


def _eager_backward(gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
    from functorch.compile import make_boxed_func  # torch's own helper for AOTAutograd's boxed calls

    return make_boxed_func(gm.forward)


def pyasc_backend(gm: torch.fx.GraphModule, example_inputs: list[Any], options: dict[str, Any] | None = None,
                  **kwargs: Any) -> Any:
    """The dynamo backend registered as "pyasc" (kernel options from `options=` or keywords)."""
    opts = {**(options or {}), **kwargs}
    if any(_symbolic(v) for v in example_inputs):
        return _PerShape(gm, opts)
    return _compile_static(gm, example_inputs, opts)


def _symbolic(value: Any) -> bool:
    if isinstance(value, torch.SymInt):
        return True
    return isinstance(value, torch.Tensor) and any(not isinstance(d, int) for d in value.shape)


class _PerShape:
    """A graph dynamo captured with symbolic sizes (after a size changed): pyasc specialises on exact
    sizes, so each new combination of sizes is traced and lowered once, on the real arguments."""

    def __init__(self, gm: torch.fx.GraphModule, options: dict[str, Any]):
        self.gm = gm
        self.options = options
        self.compiled: dict[tuple, Any] = {}
        self.lock = threading.Lock()

    def __call__(self, *args: Any) -> Any:
        key = tuple((tuple(a.shape), a.dtype, a.requires_grad) if isinstance(a, torch.Tensor) else (type(a), a)
                    for a in args)
        with self.lock:
            fn = self.compiled.get(key)
        if fn is None:
            fn = _compile_static(self.gm, list(args), self.options)
            with self.lock:
                self.compiled[key] = fn
        return fn(*args)


def _compile_static(gm: torch.fx.GraphModule, example_inputs: list[Any], opts: dict[str, Any]) -> Any:
    from functorch.compile import make_boxed_func  # AOTAutograd calls compiled graphs with one list argument
    from torch._dynamo.backends.common import aot_autograd  # dynamo's internals load with the first compile

    graphs: list[LoweredGraph] = []

    def forward_compiler(fw: torch.fx.GraphModule, inputs: Any) -> Any:
        lowered = lower(fw, opts)
        graphs.append(lowered)
        _LAST.graphs = graphs
        return make_boxed_func(lowered.module.forward)

    return aot_autograd(fw_compiler=forward_compiler, bw_compiler=_eager_backward)(gm, example_inputs)


class _Last(threading.local):
    graphs: list[LoweredGraph] = []


_LAST = _Last()


def last_graphs() -> list[LoweredGraph]:
    """The graphs the most recent torch.compile compilation (in this thread) lowered."""
    return list(_LAST.graphs)


def register() -> None:
    """Make `backend="pyasc"` known to torch.compile (also declared as a torch_dynamo_backends entry point)."""
    from torch._dynamo import list_backends, register_backend  # dynamo loads only when pyasc.torch is used

    if "pyasc" not in list_backends(exclude_tags=()):
        register_backend(pyasc_backend, name="pyasc")
