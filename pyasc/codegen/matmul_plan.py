"""How a MATMUL kernel plan runs: vector casts before it, one cube kernel, a vector epilogue after it.

A plan is one matmul / fused_matmul (its anchor) and an elementwise epilogue of its output shape. What
the cube does and what the vector cores must do is decided here, as plain data (`MatmulRoute`):

- operands: the cube takes float16, float32 and int8. Operands of another dtype, or of two dtypes
  (numpy promotes: f16 @ f32 computes in f32), are cast to the promoted dtype by a vector pre-launch
  into workspace scratch. A promoted integer dtype other than int8 never gets here: GE's
  `vector_integer_matmul` rewrites it into an exact vector product (an error if that pass was disabled).
  A transposed left operand of a 32- or 8-bit type is transposed by a vector pre-launch (the cube's
  load_l0 transposes 16-bit fractals only; see templates/matmul.py for the right operand);
- the fused epilogue (bias, ReLU, cast): the bias goes through the bias table when the accumulator is
  float32 and the bias runs along the output's last axis (a 1-D right operand makes that axis M, so
  its bias is per row); a non-float32 bias is cast to float32 first. ReLU and the cast follow on FixPipe
  while every earlier step did (FixPipe casts float32 -> float32/float16, int32 -> int32/float32/float16);
- everything else (the steps the cube could not take, GELU, a residual add, a scale, ...) is the
  epilogue: one vector kernel whose first input is the cube's result, read back from GM;
- a plan holding the kernel that computes A (`KernelPlan.prologue`, from GE's `matmul_prologue`) has that
  kernel as its prologue: a vector kernel whose one output is A, run by the mixed launch's vector cores
  before the cube (templates/mixed_prologue.py), or as a vector pre-launch writing A to workspace scratch.

The cube writes the plan's value straight into its location when it computed all of it; otherwise
it writes a stand-in value (a `Data` node of a small side graph) that the generator places in
workspace scratch, like the cast outputs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import dtypes
from ..ge.capacity import ancestors_within
from ..ge.plan import KernelPlan
from ..ir import Graph, Node, TensorType, Value
from ..ops.matmul import accumulate_dtype
from .domain import UnsupportedDomain, dims, prod
from .kernel_graph import KernelGraph, build_kernel_graph
from .templates.matmul import CUBE_DTYPES, FIXPIPE_CASTS, CubeMatmul, batch_dims
from .templates.transpose2d import Transpose2D

MATMUL_OPS = ("matmul", "fused_matmul")


@dataclass(frozen=True)
class PreTranspose:
    """A vector pre-launch swapping the last two axes of `src` into `dst` (a value in workspace scratch)."""

    src: Value
    dst: Value
    op: Transpose2D


@dataclass
class MatmulRoute:
    casts: list[KernelGraph]          # vector pre-launches; each output value lives in workspace scratch
    transposes: list[PreTranspose]    # after the casts: operands the cube cannot transpose on the way in
    operands: list[Value]             # what the cube reads as in0 (A), in1 (B)[, in2 (bias, float32)]
    cube: CubeMatmul
    result: Value                     # what the cube writes as out0
    epilogue: KernelGraph | None      # the vector launch after the cube (its input 0 is `result`)
    prologue: KernelGraph | None = None   # the plan's A producer (ge.prologue): its one output is A
    scratch: list[Value] = field(default_factory=list)   # values that need a workspace location
    notes: list[str] = field(default_factory=list)


def route(label: str, plan: KernelPlan, mixed: bool = False, prologue_inside: bool | None = None) -> MatmulRoute:
    """`mixed`: the epilogue runs in the same launch (templates/mixed.py), so a bias of another dtype than
    float32 joins the epilogue (the vector cores cast it) instead of a cast pre-launch. `prologue_inside`
    (default: `mixed`): the plan's A producer runs in that launch too (A needs no workspace location of its
    own)."""
    inside = mixed if prologue_inside is None else prologue_inside
    node = plan.anchor_node
    if node.op not in MATMUL_OPS:
        raise UnsupportedDomain(f"the matmul plan's anchor is {node.op}, not a matmul")
    a, b = node.inputs[0], node.inputs[1]
    for name, v in (("A", a), ("B", b)):
        if v.type.format != "ND":
            raise UnsupportedDomain(f"operand {name} is stored {v.type.format}; the cube kernel reads ND operands")
    ta = bool(node.attrs.get("transpose_a", False)) and a.type.ndim >= 2
    tb = bool(node.attrs.get("transpose_b", False)) and b.type.ndim >= 2
    cube_dtype = dtypes.promote(a.type.dtype, b.type.dtype)
    if cube_dtype not in CUBE_DTYPES:
        raise UnsupportedDomain(f"a {a.type.dtype} @ {b.type.dtype} product computes in {cube_dtype}; the cube "
                                f"multiplies {', '.join(CUBE_DTYPES)} only (cast the operands)")
    notes: list[str] = []
    casts: list[KernelGraph] = []
    transposes: list[PreTranspose] = []
    scratch: list[Value] = []

    def as_dtype(v: Value, dtype: str, what: str) -> Value:
        if v.type.dtype == dtype:
            return v
        kg = cast_graph(f"{label}_cast_{what}", v, dtype)
        casts.append(kg)
        scratch.append(kg.outputs[0])
        notes.append(f"{what} {v.type.dtype} -> {dtype} by a vector pre-launch")
        return kg.outputs[0]

    before = set(ancestors_within(node, plan.nodes)) if plan.prologue is not None else set()
    prologue = None
    if before:
        pro = [n for n in plan.nodes if n in before]
        prologue = build_kernel_graph(f"{label}_prologue", pro, list(dict.fromkeys(
            v for n in pro for v in n.inputs if v.node not in before)), [a])
        if not inside:
            scratch.append(a)   # a launch of its own writes A to the workspace (mixed: the launch's own scratch)
            notes.append("A's producer (the plan's prologue) by a vector pre-launch")
    operands = [as_dtype(a, cube_dtype, "A"), as_dtype(b, cube_dtype, "B")]
    if ta and cube_dtype != "float16":
        # load_l0 transposes 16-bit fractals only, and a 16-bit view of wider or narrower data cannot
        # keep its pairs together in L0A: the vector cores transpose A first
        src = operands[0]
        shape = tuple(src.type.shape[:-2]) + (src.type.shape[-1], src.type.shape[-2])
        dst = Graph(f"{label}_transpose_a").add_input(TensorType(shape, cube_dtype), name="a_t")
        sd = dims(src.type.shape)
        transposes.append(PreTranspose(src, dst, Transpose2D(f"{label}_transpose_a", prod(sd[:-2]), sd[-2], sd[-1],
                                                              cube_dtype)))
        scratch.append(dst)
        notes.append(f"A ({cube_dtype}) transposed by a vector pre-launch")
        operands[0] = dst
    out = node.out()
    mm_dtype = accumulate_dtype(cube_dtype)
    acc = "float32" if mm_dtype != "int32" else "int32"
    has_bias = node.op == "fused_matmul" and bool(node.attrs.get("has_bias"))
    activation = node.attrs.get("activation") if node.op == "fused_matmul" else None
    out_dtype = node.attrs.get("out_dtype") if node.op == "fused_matmul" else None
    # the fused steps in order; the cube takes a prefix of them
    on_cube_bias = has_bias and acc == "float32" and b.type.ndim >= 2 and \
        not (mixed and node.inputs[2].type.dtype != "float32")
    steps_left: list[str] = []
    if has_bias and not on_cube_bias:
        steps_left.append("bias")
    relu = activation == "relu" and not steps_left
    if activation == "relu" and not relu:
        steps_left.append("relu")
    written = mm_dtype
    if out_dtype is not None:
        if not steps_left and out_dtype in FIXPIPE_CASTS[acc]:
            written = out_dtype
        else:
            steps_left.append("cast")
    if written not in FIXPIPE_CASTS[acc]:
        raise UnsupportedDomain(f"FixPipe cannot write a {acc} accumulator as {written}")
    if on_cube_bias:
        operands.append(as_dtype(node.inputs[2], "float32", "bias"))
    cube = CubeMatmul(label, *_mnk(a, b, ta, tb), dtype=cube_dtype, out_dtype=written,
                      transpose_a=ta and not transposes,
                      transpose_b=tb, bias=on_cube_bias, relu=relu)
    rest = [n for n in plan.nodes if n is not node and n not in before]
    if not steps_left:
        result = out
        side: list[Node] = []
        aliases: dict[Value, Value] = {}
    else:
        g = Graph(f"{label}_cube")
        result = g.add_input(TensorType(out.type.shape, written), name="cube")
        side, last = _remaining_steps(g, result, node, steps_left, out_dtype)
        aliases = {out: last}
        notes.append(f"{', '.join(steps_left)} after the cube, in the epilogue")
    epilogue = None
    if side or rest:
        inside = {v for n in plan.nodes + side for v in n.values} | {result}
        extra = [v for n in side + rest for v in n.inputs if v not in inside]
        inputs = list(dict.fromkeys([result] + extra))
        outputs = [v for v in plan.outputs if v != result]
        epilogue = build_kernel_graph(f"{label}_epilogue", side + rest, inputs, outputs, aliases)
        if result not in plan.outputs:
            scratch.append(result)
    elif result != out or plan.outputs != [out]:
        raise UnsupportedDomain("the matmul plan's outputs are not the matmul's result")
    return MatmulRoute(casts, transposes, operands, cube, result, epilogue, prologue, scratch, notes)


def cast_graph(name: str, v: Value, dtype: str) -> KernelGraph:
    """A one-node kernel graph: `v` cast to `dtype` (its output is a value of its own, not of the program)."""
    g = Graph(name)
    x = g.add_input(v.type, name=v.node.name)
    y = g.add("cast", [x], {"dtype": dtype}).out()
    g.set_outputs([y])
    return KernelGraph(g, [v], [y])


def _remaining_steps(g: Graph, result: Value, node: Node, steps: list[str],
                     out_dtype: str | None) -> tuple[list[Node], Value]:
    """The fused steps the cube did not take, as nodes of the side graph `g` applied to `result`."""
    nodes: list[Node] = []
    cur = result
    for step in steps:
        if step == "bias":
            n = g.add("add", [cur, node.inputs[2]], loc=node.loc)
        elif step == "relu":
            n = g.add("relu", [cur], loc=node.loc)
        else:
            n = g.add("cast", [cur], {"dtype": out_dtype}, loc=node.loc)
        nodes.append(n)
        cur = n.out()
    return nodes, cur


def _mnk(a: Value, b: Value, ta: bool, tb: bool) -> tuple[Any, Any, Any, tuple]:
    """M, N, K and the collapsed batch dims of a @ b (numpy's 1-D promotion, transposes applied)."""
    sa, sb = dims(a.type.shape), dims(b.type.shape)
    if len(sa) == 1:
        m, k, a_batch = 1, sa[0], ()
    else:
        m, k = (sa[-1], sa[-2]) if ta else (sa[-2], sa[-1])
        a_batch = sa[:-2]
    if len(sb) == 1:
        n, b_batch = 1, ()
    else:
        n = sb[-2] if tb else sb[-1]
        b_batch = sb[:-2]
    nb = max(len(a_batch), len(b_batch))
    out_batch = tuple(_broadcast(x, y) for x, y in zip((1,) * (nb - len(a_batch)) + tuple(a_batch),
                                                        (1,) * (nb - len(b_batch)) + tuple(b_batch)))
    return m, n, k, batch_dims(out_batch, a_batch, b_batch, prod([m, k]), prod([k, n]))


def _broadcast(x: Any, y: Any) -> Any:
    return y if x == 1 else x
