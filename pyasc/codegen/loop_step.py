"""A Loop node as a host-driven launch sequence (`launch.LoopStep`).

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

from ..ir import Graph, Node, Value
from .domain import dim
from .kernel_graph import KernelGraph, is_scalar_const
from .launch import Launch, LoopStep, loop_locations
from .templates import vector_kernel


def _copy(gen: Any, src: Value, src_loc: Any, dst: Value, dst_loc: Any, label: str) -> Launch:
    if src.type.numel == 1:
        # a one-element value is a scalar operand to the vector templates, which cannot store one as is:
        # copy it through a same-dtype cast (what `+x` compiles to), a full one-element tile
        g = Graph(label)
        x = g.const(src.node.attrs["value"], src.type.dtype) if is_scalar_const(src) else g.add_input(src.type)
        g.set_outputs([g.add("cast", [x], {"dtype": src.type.dtype}).out()])
        kg = KernelGraph(g, [] if is_scalar_const(src) else [src], [dst])
        dk = gen.vector_kernel(label, kg, None, outputs=[dst])
    else:
        dk = gen.copy_kernel(src, dst, label)
    args = {vector_kernel.out_param(0): dst_loc[dst]}
    if dk.inputs:  # a scalar constant is written without reading anything
        args[vector_kernel.in_param(0)] = src_loc[src]
    return Launch(dk.index, args)


def loop_step(gen: Any, plan: Any, loc: Any, memory_plan: Any) -> LoopStep:
    node: Node = plan.nodes[0]
    body: Graph = node.attrs["body"]
    k, kind = node.attrs["carried"], node.attrs["kind"]
    sub_plan = memory_plan.branch_plans.get(f"k{plan.group}.body") if memory_plan is not None else None
    sub_loc = loop_locations(body, node.inputs, node.values, k, loc, sub_plan, gen.layout, gen.consts,
                             gen._produced(body))
    label = f"{gen.name}_k{plan.group}"
    init = [_copy(gen, node.inputs[j + 1], loc, node.values[j], loc, f"{label}_init{j}") for j in range(k)]
    steps = gen.scope(body, sub_loc, sub_plan)
    carried_data = {n.attrs["index"]: n.out() for n in body.inputs if n.attrs["index"] < k}
    for j in range(k):
        out = body.outputs[j]
        if out == carried_data.get(j):
            continue  # carried unchanged: already in its buffer
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
    if kind == "while":
        cond = body.outputs[-1]
        cond_loc = sub_loc.get(cond)
        if cond_loc is None:
            raise gen.unsupported_loop(node, "its condition is a constant of the body, so it never changes")
    return LoopStep(kind, first_loc, first.type.dtype, first_expr, init, steps, cond_loc,
                    cond.type.dtype if cond is not None else "bool")
