"""A Loop node as a host-driven launch sequence (`launch.LoopStep`), when it cannot run inside one kernel.

A `for` loop whose body is one vector kernel runs on the device instead (`device_loop_step`: one launch);
every other loop is driven by the host as below, and the launch plan says why.

The carried values live in the Loop's output buffers for the whole loop:
the step first copies the initial values there, then each iteration runs
the body's kernels (compiled once) and copies the body's new carried values
back into those buffers. The body's outputs have buffers of their own, so a
kernel of an iteration never overwrites a carried value another kernel of
the same iteration still reads. The trip count (or first condition) is a
host expression when the dims or the source fix it, else read back from GM
through the condition callback, like an If's; a while loop's later
conditions are the body's last output, read back the same way.
"""
from __future__ import annotations

from typing import Any

from ..ge.plan import KernelKind
from ..ir import Graph, Node, Value
from .domain import dim
from .kernel_graph import KernelGraph, is_scalar_const
from .device_loop_step import try_device_loop
from .launch import DeviceLoopStep, Launch, LoopKind, LoopStep, loop_locations
from .route import kernel_job
from .templates import vector_kernel


def _copy(gen: Any, src: Value, src_loc: Any, dst: Value, dst_loc: Any, label: str) -> Launch:
    if src.type.numel == 1:
        # a one-element value is a scalar operand to the vector templates, which cannot store one as is:
        # copy it through a same-dtype cast (what `+x` compiles to), a full one-element tile
        g = Graph(label)
        x = g.const(src.node.attrs["value"], src.type.dtype) if is_scalar_const(src) else g.add_input(src.type)
        g.set_outputs([g.add("cast", [x], {"dtype": src.type.dtype}).out()])
        kg = KernelGraph(g, [] if is_scalar_const(src) else [src], [dst])
        dk = gen.kernel(kernel_job("vector", label, kg, None))
    else:
        dk = gen.copy_kernel(src, dst, label)
    args = {vector_kernel.out_param(0): dst_loc[dst]}
    if dk.inputs:  # a scalar constant is written without reading anything
        args[vector_kernel.in_param(0)] = src_loc[src]
    return Launch(dk.index, args)


def _direct_outputs(gen: Any, body: Graph, k: int) -> set[int]:
    """Carried values whose new value the body's kernel can write straight into the loop's buffer: the
    kernel that computes it does not read the old value, and no kernel after it in the body does (so the
    old value is dead when it is overwritten, and no copy is needed at the end of the iteration)."""
    own = [p for p in gen.plans if p.graph is body]
    data = {n.attrs["index"]: n.out() for n in body.inputs}
    seen: set[Value] = set()
    direct: set[int] = set()
    for j in range(k):
        out = body.outputs[j]
        if out in seen or out.node.op in ("Data", "Const"):
            continue
        seen.add(out)
        writer = next((i for i, p in enumerate(own) if out in p.outputs and not p.is_control), None)
        old = data.get(j)
        if writer is None or old is None:
            continue
        if any(old in p.inputs for p in own[writer + 1:]):
            continue
        if old in own[writer].inputs and not _pointwise_in_place(own[writer], old, out):
            continue
        if sum(1 for o in body.outputs[:k] if o == out) > 1:
            continue  # one value carried twice: it needs its own buffer
        direct.add(j)
    return direct


def _pointwise_in_place(plan: Any, old: Value, out: Value) -> bool:
    """An elementwise kernel may overwrite an input of exactly its output's shape and dtype: every tile is
    read before the same tile is written, and no element reads another position."""
    return plan.kind is KernelKind.ELEMENTWISE and old.type.shape == out.type.shape and \
        old.type.dtype == out.type.dtype and len(plan.outputs) == 1


def loop_step(gen: Any, plan: Any, loc: Any, memory_plan: Any) -> LoopStep | DeviceLoopStep:
    """The Loop of control plan `plan`: one launch when its body fits one kernel (`device_loop_step`), else
    host-driven (the module docstring); either way the launch plan says why."""
    device, why = try_device_loop(gen, plan, loc, memory_plan)
    if device is not None:
        return device
    node: Node = plan.nodes[0]
    body: Graph = node.attrs["body"]
    k, kind = node.attrs["carried"], LoopKind(node.attrs["kind"])
    sub_plan = memory_plan.branch_plans.get(f"k{plan.group}.body") if memory_plan is not None else None
    direct = _direct_outputs(gen, body, k)
    sub_loc = loop_locations(body, node.inputs, node.values, k, loc, sub_plan, gen.layout, gen.consts,
                             gen._produced(body), {body.outputs[j]: loc[node.values[j]] for j in direct})
    label = f"{gen.name}_k{plan.group}"
    init = [_copy(gen, node.inputs[j + 1], loc, node.values[j], loc, f"{label}_init{j}") for j in range(k)]
    steps = gen.scope(body, sub_loc, sub_plan)
    carried_data = {n.attrs["index"]: n.out() for n in body.inputs if n.attrs["index"] < k}
    for j in range(k):
        out = body.outputs[j]
        if out == carried_data.get(j) or j in direct:
            continue  # carried unchanged, or written in place by its kernel: already in its buffer
        steps.append(_copy(gen, out, sub_loc, node.values[j], loc, f"{label}_next{j}"))
    first = node.inputs[0]
    first_expr = None
    first_loc = None
    if first.node.op == "DimValue":
        first_expr = dim(first.node.attrs["value"])
        gen.host_exprs.append(first_expr)
    else:
        first_loc = loc[first]
    cond = cond_loc = None
    if kind is LoopKind.WHILE:
        cond = body.outputs[-1]
        cond_loc = sub_loc.get(cond)
        if cond_loc is None:
            raise gen.unsupported_loop(node, "its condition is a constant of the body, so it never changes")
    return LoopStep(kind, first_loc, first.type.dtype, first_expr, init, steps, cond_loc,
                    cond.type.dtype if cond is not None else "bool", why)
