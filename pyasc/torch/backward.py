"""The backward pyasc derives for a `pyasc.torch.custom_op` (its default `backward=`).

For an op `ns::name(params) -> results`, a second op is registered:

    ns::name_backward(params..., result0.., grad0..) -> one tensor per tensor parameter

whose kernel is pyasc.autodiff's backward of the forward kernel's graph (`autodiff.vjp_graphs` with the
INPUTS_AND_OUTPUTS policy: torch's autograd keeps the op's inputs and outputs, so the backward reads
those and recomputes whatever else it needs, fused into its own kernels). The autograd formula
registered on the forward op (`register_autograd`) saves the inputs and outputs and calls this op, so
the backward is an ordinary torch op: torch.compile traces it (its fake implementation gives the
shapes) and the FX frontend inlines its graph like the forward's. Integer parameters get no gradient
(None in autograd; zeros from the op, whose schema needs a tensor).
"""
from __future__ import annotations

import threading
from typing import Any, Sequence

import torch

from .. import autodiff
from ..ir.graph import Graph
from ..runtime.graph_kernel import GraphKernel
from ..runtime.tracing import Tracer
from .convert import from_numpy, to_numpy
from .schema import SchemaParam, schema_text
from .splice import splice

_FLOATS = ("float16", "float32")


class DerivedBackward:
    """The registered backward op of one forward op (see the module docstring)."""

    def __init__(self, forward: Any):
        self.forward = forward
        self.qualname = f"{forward.qualname}_backward"
        taken = {p.name for p in forward.params}
        extra = []
        for kind, n in (("result", forward.results), ("grad", forward.results)):
            for i in range(n):
                name = f"{kind}{i}"
                while name in taken:
                    name += "_"
                taken.add(name)
                extra.append(SchemaParam(name, "Tensor"))
        self.params = [SchemaParam(p.name, p.kind) for p in forward.params] + extra
        self.tensor_params = [p for p in forward.params if p.is_tensor]
        self.schema = schema_text(self.params, len(self.tensor_params))
        self.tracer = Tracer(forward.kernel)
        self._graphs: dict[tuple, Graph] = {}  # argument types -> the backward graph (for inlining)
        self._lock = threading.Lock()
        self.definition = torch.library.custom_op(self.qualname, self._impl, mutates_args=(), schema=self.schema)
        self.definition.register_fake(self._fake)
        ns, name = self.qualname.split("::")
        self.op = getattr(getattr(torch.ops, ns), name).default

    def __repr__(self) -> str:
        return f"<pyasc derived backward {self.qualname}{self.schema}>"

    # ---- autograd of the forward op ---------------------------------------------------------------
    def setup_context(self, ctx: Any, inputs: tuple, output: Any) -> None:
        outs = output if isinstance(output, tuple) else (output,)
        tensors = [v for p, v in zip(self.forward.params, inputs) if p.is_tensor]
        ctx.save_for_backward(*tensors, *outs)
        ctx.pyasc_values = [None if p.is_tensor else v for p, v in zip(self.forward.params, inputs)]

    def autograd_backward(self, ctx: Any, *grads: Any) -> tuple:
        saved = ctx.saved_tensors
        n = len(self.tensor_params)
        tensors, outs = iter(saved[:n]), saved[n:]
        args = [next(tensors) if p.is_tensor else v for p, v in zip(self.forward.params, ctx.pyasc_values)]
        grads = tuple(g if g is not None else torch.zeros_like(o) for g, o in zip(grads, outs))
        res = self.op(*args, *outs, *grads)
        res = iter(res if isinstance(res, (tuple, list)) else (res,))
        out = []
        for p, v in zip(self.forward.params, args):
            r = next(res) if p.is_tensor else None
            out.append(r if p.is_tensor and v.dtype.is_floating_point else None)
        return tuple(out)

    # ---- the backward op's implementations ----------------------------------------------------------
    def _split(self, args: Sequence[Any]) -> tuple[list, list, list]:
        k, r = len(self.forward.params), self.forward.results
        return list(args[:k]), list(args[k:k + r]), list(args[k + r:k + 2 * r])

    def _fake(self, *args: Any) -> Any:
        params, _, _ = self._split(args)
        outs = [torch.empty_like(v) for p, v in zip(self.forward.params, params) if p.is_tensor]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _impl(self, *args: Any) -> Any:
        params, results, grads = self._split(args)
        values = [to_numpy(v) if p.is_tensor else v for p, v in zip(self.forward.params, params)]
        call, trace, hidden = self.tracer.trace(tuple(values), {})
        gk = trace.derive("torch_backward", lambda: GraphKernel(
            backward_graph(trace.graph, len(call.arrays), self.qualname.replace("::", "_")),
            self.forward.kernel.options, source=f"# {self.qualname}: derived by pyasc.autodiff from\n{trace.source}"))
        outs = gk(*call.arrays, *(to_numpy(t) for t in results), *(to_numpy(t) for t in grads), *hidden)
        tensors = [from_numpy(o) for o in outs]
        return tensors[0] if len(tensors) == 1 else tuple(tensors)

    def inline_graph(self, args: Sequence[Any]) -> Graph:
        """The backward op's graph for these arguments (fake tensors or values), for the FX frontend (kept
        per argument types, like the forward's)."""
        params, _, _ = self._split(args)
        key, _ = self.forward._specs(params, {})
        with self._lock:
            graph = self._graphs.get(key)
        if graph is None:
            forward = self.forward.frontend_graph(params)
            graph = backward_graph(forward, len(forward.inputs), self.qualname.replace("::", "_"))
            with self._lock:
                self._graphs[key] = graph
        return graph


def backward_graph(forward: Graph, n_user: int, name: str) -> Graph:
    """The backward op's graph: inputs are the forward's tensor parameters, its results, a cotangent per
    result, then the forward's lifted inputs (if any); outputs one per tensor parameter."""
    inputs = forward.inputs
    wrt = [i for i in range(n_user) if inputs[i].outputs[0].dtype in _FLOATS]
    vg = autodiff.vjp_graphs(forward, wrt, policy=autodiff.INPUTS_AND_OUTPUTS, name=name)
    g = Graph(name)
    params = [g.add_input(d.outputs[0], d.name) for d in inputs[:n_user]]
    results = [g.add_input(t, f"result{i}") for i, t in enumerate(forward.output_types)]
    grads = [g.add_input(t, f"grad{i}") for i, t in enumerate(forward.output_types)]
    hidden = [g.add_input(d.outputs[0], d.name) for d in inputs[n_user:]]
    sources = {"input": params + hidden, "output": results}
    residuals = [sources[r.kind][r.index] for r in vg.residuals]
    got = dict(zip(vg.wrt, splice(g, vg.backward, residuals + [grads[i] for i in vg.cotangent_outputs])))
    outs = []
    for i, p in enumerate(params):
        t = p.type
        outs.append(got[i] if i in got else
                    g.add("full", [], {"shape": tuple(t.shape), "fill_value": 0, "dtype": t.dtype}).out())
    g.set_outputs(outs)
    return g


def register_derived_backward(op: Any) -> DerivedBackward:
    """Register `op`'s derived backward op and its autograd formula; returns the backward op."""
    bw = DerivedBackward(op)
    op.definition.register_autograd(bw.autograd_backward, setup_context=bw.setup_context)
    return bw

