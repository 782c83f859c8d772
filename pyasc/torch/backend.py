"""`torch.compile(model, backend="pyasc")`: captured graphs through pyasc's optimiser, codegen and emulator.

Dynamo captures the model; AOTAutograd turns it into aten graphs: the forward and, when a model
trains, the backward. Both go through the same lowering: each graph is split into the largest
pieces whose ops pyasc lowers (torch.fx's capability partitioner); each piece becomes one pyasc
graph (the FX frontend, fx_graph.py) compiled as one `GraphKernel`; the rest runs in eager PyTorch:
a graph break, reported once per op and place as a `PyascGraphBreak` warning. Attention is kept
whole by the decompositions and lowered to its plain pattern (attention.py). `options=` (via
`torch.compile(..., options={...})`) are pyasc.kernel options.
"""
from __future__ import annotations

import contextlib
import contextvars
import hashlib
import operator
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterator

import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupport

from .. import ir
from ..errors import CompileError
from ..runtime import make_options
from ..runtime.graph_kernel import GraphKernel
from ..runtime.profile import Profile
from .aten_table import FREE, TABLE
from .aten_index import KEPT as KEPT_INDEXING
from .attention import KEPT
from .convert import NARROWED, from_numpy, narrow_fits, to_numpy
from .fastpath import DECOMPOSITIONS as FASTPATH
from .fx_graph import FxGraphBuilder, Unsupported, node_support, op_name, vals, where


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
    """What `pyasc.torch.profile()` collects: one (kernel name, Profile) per pyasc kernel call, the phase of
    each call ("forward", "backward" or "inference": which AOTAutograd graph the kernel is a piece of) and
    the compiled artifact of each call (`artifacts`: its stages, graph and device kernels)."""

    calls: list[tuple[str, Profile]] = field(default_factory=list)
    artifacts: list[Any] = field(default_factory=list)
    phases: list[str] = field(default_factory=list)

    @property
    def launches(self) -> int:
        return sum(p.launches for _, p in self.calls)

    @property
    def time_s(self) -> float:
        return sum(p.time_s for _, p in self.calls)

    @property
    def gm_bytes(self) -> int:
        return sum(p.gm_bytes for _, p in self.calls)

    def phase(self, name: str) -> "ProfileRecord":
        """The calls of one phase ("forward", "backward", "inference") as a record of their own."""
        keep = [i for i, p in enumerate(self.phases) if p == name]
        return ProfileRecord([self.calls[i] for i in keep], [self.artifacts[i] for i in keep], [name] * len(keep))

    def summary(self) -> str:
        lines = [f"{len(self.calls)} pyasc kernel call(s), {self.launches} launch(es), "
                 f"{self.time_s * 1e6:,.2f} us simulated, GM {self.gm_bytes:,} B"]
        for (name, p), phase in zip(self.calls, self.phases):
            lines.append(f"--- {name} ({phase})\n{p.summary()}")
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
    """One lowered piece of an aten graph: CPU tensors in, the pyasc graph's kernel on the emulator, tensors
    out. `graph`: the pyasc graph the FX frontend built (before optimisation); `source`: the piece's FX code
    (the "source" stage of its dumps); `phase`: "forward", "backward" or "inference"; `eager`: the piece as
    torch ops; `out_dtypes`: torch's dtype of each result.

    Tensors of a dtype the chip lacks (int64: convert.NARROWED) go in narrowed and come out widened back to
    torch's dtype. A call whose int64 input holds a value outside int32 runs `eager` instead (exact, in
    PyTorch), with a `PyascGraphBreak` warning that says so: values are never wrapped."""

    def __init__(self, graph: ir.Graph, source: str, eager: torch.fx.GraphModule, out_dtypes: list[torch.dtype],
                 tuple_out: bool, options: dict[str, Any], phase: str):
        super().__init__()
        self.graph = graph
        self.source = source
        self.eager = eager
        self.kernel = GraphKernel(graph, make_options(**options), name=graph.name, source=source)
        self.out_dtypes = out_dtypes
        self.results = len(out_dtypes)
        self.tuple_out = tuple_out
        self.phase = phase
        self.inputs = [n.name for n in eager.graph.nodes if n.op == "placeholder"]
        self.where = where(next(n for n in eager.graph.nodes if n.op == "call_function"))

    def forward(self, *tensors: torch.Tensor) -> Any:
        for t, name in zip(tensors, self.inputs):
            if t.dtype in NARROWED and not narrow_fits(t):
                _REPORTS.report(GraphBreak(
                    f"a call of pyasc kernel {self.graph.name}", self.where,
                    f"its {t.dtype} input {name} holds values in [{int(t.min())}, {int(t.max())}], outside "
                    f"{NARROWED[t.dtype]}, the chip's widest integer"))
                return self.eager(*tensors)
        arrays = [to_numpy(t.to(NARROWED[t.dtype]) if t.dtype in NARROWED else t) for t in tensors]
        record = _PROFILE.get()
        if record is None:
            out = self.kernel(*arrays)
        else:
            out, prof = self.kernel.profile(*arrays)
            record.calls.append((self.kernel.__name__, prof))
            record.phases.append(self.phase)
            record.artifacts.append(self.kernel.compile())  # a cache hit: the artifact just run
        outs = [_widened(from_numpy(o), dt) for o, dt in zip(out, self.out_dtypes)]
        return tuple(outs) if self.tuple_out else outs[0]


def _widened(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A result computed in a NARROWED dtype, back in torch's (int32 -> int64)."""
    return t.to(dtype) if t.dtype != dtype and NARROWED.get(dtype) == t.dtype else t


class _Support(OperatorSupport):
    def is_node_supported(self, submodules: Any, node: torch.fx.Node) -> bool:
        return node_support(node, TABLE) is None


@dataclass
class LoweredGraph:
    """The aten graph after lowering: which pieces run as pyasc kernels, and the graph breaks."""

    module: torch.fx.GraphModule
    subgraphs: list[PyascSubgraph]
    breaks: list[GraphBreak]


def lower(gm: torch.fx.GraphModule, options: dict[str, Any], phase: str = "inference") -> LoweredGraph:
    """Replace every lowerable piece of an aten graph by a PyascSubgraph; report the rest."""
    breaks = []
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is not operator.getitem:  # getitem: its source says
            why = node_support(node, TABLE)
            if why is not None:
                brk = GraphBreak(op_name(node), where(node), why)
                breaks.append(brk)
                _REPORTS.report(brk)
    partitioner = CapabilityBasedPartitioner(gm, _Support(), allows_single_node_partition=True)
    partitions = [p for p in partitioner.propose_partitions()
                  if any(n.target not in FREE and n.target.__name__ != "getitem" for n in p.nodes)]
    fused = partitioner.fuse_partitions(partitions)
    subgraphs = []
    for node in list(fused.graph.nodes):
        if node.op != "call_module" or not node.target.startswith("fused_"):
            continue
        sub = getattr(fused, node.target)
        try:
            lowered = _lower_piece(sub, options, phase)
        except (CompileError, Unsupported) as e:  # the piece runs as it is, in eager PyTorch: say why
            first = next(n for n in sub.graph.nodes if n.op == "call_function")
            ops = sum(1 for n in sub.graph.nodes if n.op == "call_function")
            brk = GraphBreak(f"a piece of {ops} aten ops", where(first), str(e).splitlines()[0])
            breaks.append(brk)
            _REPORTS.report(brk)
            continue
        setattr(fused, node.target, lowered)
        subgraphs.append(lowered)
    fused.recompile()
    return LoweredGraph(fused, subgraphs, breaks)


def _lower_piece(sub: torch.fx.GraphModule, options: dict[str, Any], phase: str) -> PyascSubgraph:
    graph = FxGraphBuilder(sub, "fx_kernel", TABLE).build()
    # named by content, so the same piece gets the same kernel name (and disk-cache key) in every compile
    graph.name = f"fx_{hashlib.sha256(ir.to_json(graph).encode()).hexdigest()[:10]}"
    out_node = next(n for n in sub.graph.nodes if n.op == "output")
    tuple_out = isinstance(out_node.args[0], (tuple, list))
    outs = list(out_node.args[0]) if tuple_out else [out_node.args[0]]
    return PyascSubgraph(graph, sub.code, sub, [vals(o)[0].dtype for o in outs], tuple_out, options, phase)


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
    from torch._decomp import core_aten_decompositions  # dynamo's internals and torch's decomposition
    from torch._dynamo.backends.common import aot_autograd  # table load with the first compile

    graphs: list[LoweredGraph] = []

    def compiler(phase: str) -> Any:
        def compile_graph(g: torch.fx.GraphModule, inputs: Any) -> Any:
            lowered = lower(g, opts, phase)
            graphs.append(lowered)
            _LAST.graphs = graphs
            return make_boxed_func(lowered.module.forward)

        return compile_graph

    decompositions = {op: fn for op, fn in core_aten_decompositions().items() if op not in KEPT + KEPT_INDEXING}
    decompositions.update(FASTPATH)
    training = torch.is_grad_enabled() and any(isinstance(v, torch.Tensor) and v.requires_grad
                                               for v in example_inputs)
    return aot_autograd(fw_compiler=compiler("forward" if training else "inference"),
                        bw_compiler=compiler("backward"), decompositions=decompositions)(gm, example_inputs)


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
