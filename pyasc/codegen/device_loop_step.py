"""A Loop node as one launch (`launch.DeviceLoopStep`), when its body fits one vector kernel.

`decide` is the analysis: a plain `LoopDecision` saying whether the loop runs on the device, and why (or
why not); `device_loop_step` applies it, lowering the body's kernel with the device-loop template
(`templates/device_loop.py`). A loop runs on the device when
- it is a `for` loop (a `while` loop's condition is computed by the body and read back by the host after
  every iteration, so it stays host-driven, `loop_step`);
- its body is one kernel plan the router sends to the vector template as one launch (pointwise, or row
  reductions with whole rows in a tile), besides the increment of the loop index when the body reads it;
- every carried value is read by that kernel and its next value is one of the kernel's outputs, and the
  template can keep it tile by tile: each output tile depends only on the same tile of the carried values.
Anything else (several kernels, a matmul, a reduction across tiles, a carried value read at another
position or broadcast) stays host-driven, with the reason shown in the launch plan.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import CompileError
from ..ir import Graph, Node, Value
from .domain import dim
from .launch import DeviceLoopStep, Launch, LoopKind, Locator, loop_locations
from .route import route
from .template import Job
from .templates.device_loop import LoopCarry
from .templates.vector_kernel import in_param, out_param


@dataclass
class LoopDecision:
    """Whether a Loop runs inside one kernel; `why` is shown in the launch plan either way."""

    device: bool
    why: str
    job: Job | None = None               # the body's vector job (device loops)
    carried: tuple[int, ...] = ()        # the carried value of each kernel output, in kernel output order
    counter: tuple[int, int, int] | None = None   # (carried index, start, step) of the loop index


def _host(why: str) -> LoopDecision:
    return LoopDecision(False, why)


def _counter(node: Node, body: Graph, j: int) -> tuple[int, int] | None:
    """(start, step) when carried value j is the loop index: an integer starting at a constant that the body
    only increments by a constant."""
    out, init = body.outputs[j], node.inputs[j + 1]
    if out.node.op != "add" or init.node.op != "Const" or init.type.numel != 1 or \
            not np.issubdtype(np.dtype(init.type.dtype), np.integer):
        return None
    a, b = out.node.inputs
    if a.node.op != "Data" or a.node.attrs["index"] != j or b.node.op != "Const" or b.type.numel != 1:
        return None
    return int(np.asarray(init.node.attrs["value"]).reshape(-1)[0]), int(np.asarray(b.node.attrs["value"]).reshape(-1)[0])


def _read_after(gen: Any, v: Value) -> bool:
    """Whether a value (a Loop's result) is read by a kernel or returned by a graph."""
    graphs = {id(g): g for g in [gen.graph, *(p.graph for p in gen.plans)]}
    return any(v in p.inputs for p in gen.plans) or any(v in g.outputs for g in graphs.values())


def decide(gen: Any, plan: Any) -> LoopDecision:
    """Whether the Loop of control plan `plan` runs on the device (see the module docstring)."""
    node: Node = plan.nodes[0]
    body: Graph = node.attrs["body"]
    k = node.attrs["carried"]
    if LoopKind(node.attrs["kind"]) is LoopKind.WHILE:
        return _host("a while loop's condition is read back after every iteration")
    own = [p for p in gen.plans if p.graph is body]
    if any(p.is_control for p in own):
        return _host("its body holds an If or another runtime loop")
    counter = None
    for j in range(k):
        c = _counter(node, body, j)
        if c is not None:
            inc = [p for p in own if p.outputs == [body.outputs[j]] and p.nodes == [body.outputs[j].node]]
            if inc and not _read_after(gen, node.values[j]):
                counter = (j, *c)
                own = [p for p in own if p is not inc[0]]
                break
    if len(own) != 1:
        return _host(f"its body is {len(own)} kernels")
    jobs = route(f"{gen.name}_k{plan.group}", own[0], gen.chip, gen.options.buffer_num)
    if len(jobs) != 1 or jobs[0].template != "vector":
        return _host(f"its body's kernel is {len(jobs)} launch(es) of the {', '.join(j.template for j in jobs)} "
                     "template(s), not one vector kernel")
    job = jobs[0]
    carried: list[int | None] = [None] * len(job.outputs)
    data = {n.attrs["index"]: n.out() for n in body.inputs}
    for j in range(k):
        if counter is not None and j == counter[0]:
            continue
        y = body.outputs[j]
        if y not in job.outputs or sum(1 for o in body.outputs[:k] if o == y) > 1:
            return _host(f"carried value {j} is not computed by the body's kernel (unchanged, constant or carried "
                         "twice)")
        if data.get(j) not in job.inputs:
            return _host(f"carried value {j} is not read by the body")
        carried[job.outputs.index(y)] = j
    if any(c is None for c in carried):
        return _host("the body's kernel writes a value the loop does not carry")
    what = "row-wise" if job.options.get("rows") is not None else "elementwise"
    return LoopDecision(True, f"the body is one {what} vector kernel", job, tuple(carried), counter)  # type: ignore[arg-type]


def device_loop_step(gen: Any, plan: Any, loc: Locator, memory_plan: Any, decision: LoopDecision) -> DeviceLoopStep:
    """The one launch of a device loop; raises CompileError (its reason) when the template cannot tile it."""
    node: Node = plan.nodes[0]
    body: Graph = node.attrs["body"]
    k = node.attrs["carried"]
    job = decision.job
    assert job is not None
    data_index = {n.out(): n.attrs["index"] for n in body.inputs}
    kernel_input = {data_index[v]: i for i, v in enumerate(job.inputs) if v in data_index}
    pairs = tuple((kernel_input[j], o) for o, j in enumerate(decision.carried))
    counter = None
    if decision.counter is not None:
        c, start, step = decision.counter
        if c in kernel_input:  # the body's kernel reads the index
            counter = (kernel_input[c], start, step)
    notes = [f"device loop: {decision.why}"]
    dl_job = Job("device_loop", f"{job.label}_loop", job.subject, job.inputs, [node.values[j] for j in decision.carried],
                 job.plan, {**job.options, "carry": LoopCarry(pairs, counter), "notes": notes}, job.op, job.loc)
    dk = gen.kernel(dl_job)
    sub_plan = memory_plan.branch_plans.get(f"k{plan.group}.body") if memory_plan is not None else None
    sub_loc = loop_locations(body, node.inputs, node.values, k, loc, sub_plan, gen.layout, gen.consts, [], {})
    args = {}
    for i, v in enumerate(dk.inputs):
        # a body input reads what the loop was given (a carried value: its initial value), a constant its buffer
        args[in_param(i)] = loc[node.inputs[data_index[v] + 1]] if v in data_index else sub_loc[v]
    for i, v in enumerate(dk.outputs):
        args[out_param(i)] = loc[v]
    args.update(dk.scratch)
    first = node.inputs[0]
    first_expr = first_loc = None
    if first.node.op == "DimValue":
        first_expr = dim(first.node.attrs["value"])
        gen.host_exprs.append(first_expr)
    else:
        first_loc = loc[first]
    return DeviceLoopStep(first_loc, first.type.dtype, first_expr, Launch(dk.index, args), decision.why)


def _reason(e: CompileError) -> str:
    """A compile error's reason on one line (without the location and source it is printed with)."""
    text = getattr(e, "reason", None) or str(e).split(": error: ", 1)[-1]
    text = " ".join(text.split())
    return text if len(text) <= 200 else text[:197] + "..."


def try_device_loop(gen: Any, plan: Any, loc: Locator, memory_plan: Any) -> tuple[DeviceLoopStep | None, str]:
    """The device loop of a Loop plan, or None and why it stays on the host."""
    decision = decide(gen, plan)
    if not decision.device:
        return None, decision.why
    try:
        return device_loop_step(gen, plan, loc, memory_plan, decision), decision.why
    except CompileError as e:
        return None, f"the device-loop template cannot tile it: {_reason(e)}"

