"""How a conv kernel plan runs: the weights put in the cube's layout, then one cube kernel.

A plan is one conv2d / fused_conv2d node (GE's `blocked_layout` gives it an NC1HWC0 feature map and an
NC1HWC0 result). What runs, as plain data (`ConvRoute`):
- the weights (OIHW, any float dtype) become the weight matrix the cube reads (FRACTAL_Z), in the cube's dtype
  (`conv_weights`, a vector pre-launch into workspace scratch); the same launch folds a batch norm into
  them and writes the conv's float32 bias (a folded norm's, or the bias cast to float32) to scratch;
- the cube kernel (`conv`): Load3D img2col, mmad, a residual added into L0C (an identity product),
  FixPipe with ReLU and the cast, straight into the result's NC1HWC0 buffer.
The router runs both in one mixed launch (`conv_launch`: the vector cores convert, an all-core barrier, the
cube cores convolve) when GE's `mixed_kernels` marked the plan, else as two launches.
A conv GE's `conv_edge_fold` gave an ND feature map or an ND result converts them on the vector cores too
(`conv_edges`: x into an NC1HWC0 workspace before the cube, the cube's NC1HWC0 result into the ND output
after it, with the residual added and the ReLU applied on the way): in the same launch, or as launches of
their own around the conv's when it runs apart.
The cube multiplies in numpy's promotion of x and w; a feature map of another dtype than that is not
lowered (the error says so).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import dtypes
from ..ge.plan import KernelPlan
from ..ir import Graph, Node, TensorType, Value, is_annotation
from ..ops.conv import BLOCKED, BN_PARAMS, conv_geometry, conv_operands
from ..target import Chip, accumulator_dtype
from .domain import UnsupportedDomain
from .templates.conv import CONV_DTYPES, CONV_OUT_DTYPES, CubeConv
from .templates.conv_edges import ConvEdge
from .templates.conv_launch import BIAS, MAP, RESULT, WEIGHTS, ConvLaunch
from .templates.conv_weights import ConvWeights
from .templates.formats import nc1hwc0_conversion

CONV_OPS = ("conv2d", "fused_conv2d")


@dataclass
class ConvRoute:
    weights: ConvWeights
    weight_inputs: list[Value]        # w, then the batch norm's parameters and the bias it reads
    weight_outputs: list[Value]       # the weight matrix[, the float32 bias] (workspace scratch)
    operands: list[Value]             # what the cube reads: x, the prepared weights[, the float32 bias]...
    cube: CubeConv
    result: Value                     # the conv's result as the graph has it
    scratch: list[Value] = field(default_factory=list)
    x: Value | None = None            # an ND feature map `edge_in` converts into `map` (NC1HWC0) for the cube
    edge_in: ConvEdge | None = None
    map: Value | None = None
    edge_out: ConvEdge | None = None  # the cube's NC1HWC0 `cube_result` [+ the ND residual] -> result (ND)
    edge_out_inputs: list[Value] = field(default_factory=list)   # cube_result[, the residual]

    @property
    def cube_result(self) -> Value:
        return self.edge_out_inputs[0] if self.edge_out is not None else self.result

    @property
    def launch_inputs(self) -> list[Value]:
        """The inputs of one launch doing everything (`conv_launch`): every job's inputs, less the workspace
        ones."""
        made = set(self.scratch)
        ins = ([self.x] if self.x is not None else []) + self.weight_inputs + self.operands + self.edge_out_inputs
        return list(dict.fromkeys(v for v in ins if v not in made))


def launch(label: str, r: ConvRoute) -> ConvLaunch:
    """The subject of one launch doing the conversions and the conv: which launch input (or workspace tensor)
    each part reads."""
    where: dict[Value, int | str] = {v: i for i, v in enumerate(r.launch_inputs)}
    where.update(zip(r.weight_outputs, (WEIGHTS, BIAS)))
    if r.map is not None:
        where[r.map] = MAP
    if r.edge_out is not None:
        where[r.cube_result] = RESULT
    return ConvLaunch(label, r.weights, r.cube, tuple(where[v] for v in r.weight_inputs),
                      tuple(where[v] for v in r.operands), r.edge_in,
                      where[r.x] if r.x is not None else None, r.edge_out,
                      tuple(where[v] for v in r.edge_out_inputs))


def _attrs(node: Node) -> dict:
    return {k: v for k, v in node.attrs.items() if not is_annotation(k)}


def route(label: str, plan: KernelPlan, chip: Chip) -> ConvRoute:
    node = plan.anchor_node
    if node.op not in CONV_OPS or len(plan.nodes) != 1:
        raise UnsupportedDomain(f"a conv kernel is one conv node, got {', '.join(n.op for n in plan.nodes)}")
    attrs = _attrs(node)
    x, w = node.inputs[0], node.inputs[1]
    if x.type.format not in (BLOCKED, "ND"):
        raise UnsupportedDomain(f"the cube reads the feature map in {BLOCKED} (or ND, converted on the way in), "
                                f"not {x.type.format}")
    if x.type.format == "ND" and not attrs.get("out_format"):
        raise UnsupportedDomain(f"the cube reads the feature map in {BLOCKED}, but x is {x.type.format} (GE's "
                                f"blocked_layout pass converts it; was it disabled?)")
    g = conv_geometry(x.type, w.type, attrs, node.op)
    if g.groups != 1:
        raise UnsupportedDomain(f"a conv with groups={g.groups} is split per group by GE's conv_group_split "
                                f"pass; was it disabled?")
    cube_dtype = dtypes.promote(x.type.dtype, w.type.dtype)
    if cube_dtype not in CONV_DTYPES:
        raise UnsupportedDomain(f"the cube convolves {', '.join(CONV_DTYPES)}, not {cube_dtype}")
    if x.type.dtype != cube_dtype:
        raise UnsupportedDomain(f"x is {x.type.dtype} but the product computes in {cube_dtype} (w is "
                                f"{w.type.dtype}): cast x or w so that both have one dtype")
    out = node.out()
    if out.type.dtype not in CONV_OUT_DTYPES:
        raise UnsupportedDomain(f"FixPipe writes a conv result as {', '.join(CONV_OUT_DTYPES)}, not "
                                f"{out.type.dtype}")
    arg = conv_operands(node.inputs, attrs)
    bias = arg.get("bias")
    norm = [arg[p] for p in BN_PARAMS if p in arg]
    residual = arg.get("residual")
    if residual is not None and residual.type.format != out.type.format:
        raise UnsupportedDomain(f"the residual is {residual.type.format}, the result {out.type.format}")
    if residual is not None and residual.type.dtype != cube_dtype:
        raise UnsupportedDomain(f"the cube adds a residual of its own dtype ({cube_dtype}), not "
                                f"{residual.type.dtype}")
    cw = ConvWeights(f"{label}_weights", g.o, g.c, g.kh, g.kw, w.type.dtype, cube_dtype,
                     bias.type.dtype if bias is not None else None, tuple(v.type.dtype for v in norm),
                     float(attrs.get("bn_eps", 1e-5)))
    side = Graph(f"{label}_weights")
    prepared = side.add_input(TensorType((cw.rows, cw.k), cube_dtype), name="weights")  # FRACTAL_Z: K/c0 panels
    outputs = [prepared]
    inputs = [w]
    bias32 = bias
    if cw.emits_bias:
        inputs += norm + ([bias] if bias is not None else [])
        bias32 = side.add_input(TensorType((g.o,), "float32"), name="bias")
        outputs.append(bias32)
    scratch = list(outputs)
    edge_in = fmap = None
    if x.type.format == "ND":   # converted on the vector cores on the way in
        fmap = side.add_input(TensorType(x.type.shape, x.type.dtype, BLOCKED), name="map")
        edge_in = ConvEdge(nc1hwc0_conversion(f"{label}_in", x.type, False, chip), x.type.dtype)
        scratch.append(fmap)
    operands = [fmap if fmap is not None else x, prepared] + ([bias32] if bias32 is not None else [])
    relu = attrs.get("activation") == "relu"
    edge_out = None
    edge_out_inputs: list[Value] = []
    cube_out = out.type.dtype
    if out.type.format == "ND":  # converted on the vector cores on the way out, the residual added there
        tail = residual is not None
        cube_out = accumulator_dtype(cube_dtype) if tail else out.type.dtype
        made = side.add_input(TensorType(out.type.shape, cube_out, BLOCKED), name="result")
        edge_out = ConvEdge(nc1hwc0_conversion(f"{label}_out", out.type, True, chip), cube_out, tail, relu and tail)
        edge_out_inputs = [made] + ([residual] if tail else [])
        scratch.append(made)
        relu = relu and not tail
        residual = None
    elif residual is not None:
        operands += [residual, arg["eye"]]
    cube = CubeConv(label, g, cube_dtype, cube_out, bias32 is not None, relu, residual is not None)
    return ConvRoute(cw, inputs, outputs, operands, cube, out, scratch, x if fmap is not None else None, edge_in,
                     fmap, edge_out, edge_out_inputs)
