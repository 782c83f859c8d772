"""Pattern fusion and composite decomposition.

- `decompose_composites` (opt_level 0, a legalisation): every composite op
  (one whose OpDef has a decomposition) that codegen has no dedicated
  lowering for is replaced by its decomposition into primitive ops. The set
  of ops with a dedicated lowering is the knob "dedicated_lowerings"
  (default {"softmax", "layer_norm", "rms_norm", "attention"}); those are kept
  whole. A softmax / log_softmax over an axis that is not the last one is always
  decomposed: the dedicated lowerings are row kernels (a reduction over the
  last axis). An opaque composite (attention: its own kernel, never fused) is
  kept whole only when the capacity function accepts a kernel of it alone
  (codegen's says whether a template lowers it and a tiling fits); otherwise
  it is decomposed and the fusion log says why (a DECOMPOSED decision).
- `split_reductions` (opt_level 0, a legalisation): a reduction over axes that
  are not one contiguous block (`sum(x, axis=(0, 2))`) becomes a chain of
  reductions, one per block, the last block first (so the earlier blocks'
  axis numbers stay valid): each is a row or a column reduction codegen
  tiles. mean of means over equal-size groups is the mean. First, a
  reduction over an axis of static size 0 (or a matmul contracting 0
  elements) becomes a `full` of its constant result: it reads nothing.
- `matmul_transpose_fold`: `matmul(transpose(a), b)` where the transpose swaps
  the last two axes becomes `matmul(a, b, transpose_a=True)` (likewise for b,
  and for fused_matmul; an existing flag is toggled). The transpose itself stays
  for its other users, if any; DCE removes it otherwise.
- `matmul_epilogue_fusion`: matmul [+ bias] [-> relu] [-> cast] becomes one
  `fused_matmul(a, b[, bias])` with has_bias / activation / out_dtype: what the
  cube's bias table and FixPipe (ReLU, cast on the way out of L0C) do for free.
  The bias is a 1-D tensor of N elements or a broadcastable row (1, …, 1, N),
  added on either side, and the add must not change the shape or dtype.
  The cast targets a float dtype (FixPipe's conversions).

Pattern rules (GE's fusion_pattern_pass): a pattern is self-contained (every
intermediate value is used only by the next node of the pattern and is not a
graph output; a longer chain stops where that fails, so `relu` with a second
reader stays outside), input counts are exact, the replacement must infer to
exactly the type of the value it replaces, and a rewrite that would create a
cycle is rejected.
"""
from __future__ import annotations

import warnings
from typing import Any, Sequence

import numpy as np

from .. import dtypes, ops
from ..ir import Graph, Node, UseIndex, Value, node_names
from ..target import Chip
from .capacity import CapacityFn, lone_candidate
from .decisions import DecisionKind, FusionDecision
from .edit import build_node, same_type, uniform_scalar, would_create_cycle
from .fusion.fusion_pass import capacity_of
from .passes import Pass, PassContext
from .rewrite import Replacement, RewriteRule, Rewriter, RulePass
from .simplify import op_attrs, perm_of

DEFAULT_DEDICATED_LOWERINGS = frozenset({"softmax", "layer_norm", "rms_norm", "attention"})


# ---- composite decomposition ----------------------------------------------------------------


class DecomposeComposites(RulePass):
    """A decomposition may use other composites: the driver expands those in its next sweep."""

    name = "decompose_composites"
    opt_level = 0

    def rules(self, ctx: PassContext) -> list[RewriteRule]:
        keep = frozenset(ctx.knob("dedicated_lowerings", DEFAULT_DEDICATED_LOWERINGS))
        capacity, chip = capacity_of(ctx)

        def decompose(node: Node, rw: Rewriter) -> Replacement | None:
            if node.op in keep and _trailing_axis(node):
                refusal = whole_op_refusal(rw.graph, node, capacity, chip)
                if refusal is None:
                    return None
                label = f"{node.op} %{rw.memo.setdefault('names', node_names(rw.graph)).get(node, '?')}"
                ctx.state.pattern_decisions.append(FusionDecision(
                    DecisionKind.DECOMPOSED, "capacity", label,
                    detail=f"not lowered whole ({refusal}); its decomposition is lowered instead"))
            added, outs = decompose_node(rw.graph, node)
            return Replacement(outs, added)

        return [RewriteRule("decompose", lambda op: op.composite, decompose)]


def whole_op_refusal(graph: Graph, node: Node, capacity: CapacityFn, chip: Chip) -> str | None:
    """Why a kernel of opaque op `node` alone does not fit (the capacity function's reason), or None when it does
    or the op is not opaque (a row composite is fused first and asked as part of its kernel)."""
    if ops.get(node.op).category != ops.Category.OPAQUE:
        return None
    verdict = capacity(lone_candidate(graph, node, chip))
    return None if verdict.fits else (verdict.reason or "refused")


def _trailing_axis(node: Node) -> bool:
    """Whether a row composite reduces the last axis (layer_norm and rms_norm always do)."""
    if "axis" not in node.attrs:
        return True
    ndim = node.inputs[0].type.ndim
    return ndim == 0 or ops.get(node.op).reduced_axes(op_attrs(node), ndim) == (ndim - 1,)


class SplitReductions(RulePass):
    name = "split_reductions"
    opt_level = 0

    def rules(self, ctx: PassContext) -> list[RewriteRule]:
        def split(node: Node, rw: Rewriter) -> Replacement | None:
            x = node.inputs[0]
            ndim = x.type.ndim
            axes = ops.get(node.op).reduced_axes(op_attrs(node), ndim)
            blocks = _blocks(axes)
            if len(blocks) < 2:
                return None
            keep = bool(node.attrs.get("keepdims", False))
            value, added = x, []
            for block in reversed(blocks):
                n = build_node(node.op, [value], {"axis": tuple(block), "keepdims": keep}, loc=node.loc)
                if n is None:
                    return None
                added.append(n)
                value = n.out()
            return Replacement([value], added)

        return [RewriteRule("result_of_nothing", lambda op: (op.is_reduction and not op.row_composite)
                            or op.name == "matmul", lambda node, rw: _result_of_nothing(node)),
                RewriteRule("split_reduction", lambda op: op.is_reduction and not op.row_composite, split)]


def _result_of_nothing(node: Node) -> Replacement | None:
    """A reduction over an axis of static size 0, or a matmul contracting 0 elements, reads nothing: every
    element of its result is the same constant (the reduction's identity: 0 for sum, NaN for mean; 0 for a
    matmul), a `full` of the result's shape. (Left to the kernel it fused with, the empty operand was taken
    for the whole kernel's input: its other inputs were ignored.)"""
    x, out = node.inputs[0], node.outputs[0]
    if node.op == "matmul":
        empty = x.type.ndim >= 1 and x.type.shape[-1] == 0
    else:
        axes = ops.get(node.op).reduced_axes(op_attrs(node), x.type.ndim)
        empty = any(x.type.shape[a] == 0 for a in axes)
    if not empty or any(d == 0 for d in out.shape):  # (an empty result launches nothing anyway)
        return None
    samples = [np.zeros(tuple(d if isinstance(d, int) else 1 for d in v.type.shape), dtypes.to_numpy(v.type.dtype))
               for v in node.inputs]  # any size of a symbolic dim gives the same constant
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy's "mean of empty slice"
        value = np.asarray(ops.get(node.op).eager(*samples, **op_attrs(node))).reshape(-1)
    if value.size == 0:
        return None
    fill = build_node("full", [], {"shape": tuple(out.shape), "fill_value": value[0].item(), "dtype": out.dtype},
                      loc=node.loc, name=node.name)
    return Replacement([fill.out()], [fill]) if fill is not None and same_type(fill.out().type, out) else None


def _blocks(axes: Sequence[int]) -> list[list[int]]:
    """Sorted axes as runs of consecutive axes: (0, 2, 3) -> [[0], [2, 3]]."""
    out: list[list[int]] = []
    for a in sorted(axes):
        if out and out[-1][-1] == a - 1:
            out[-1].append(a)
        else:
            out.append([a])
    return out


def cube_operands(node: Node) -> tuple[ops.CubeOperand, ...]:
    """The operands of `node` the cube reads (empty unless it is a matmul-family op)."""
    return ops.get(node.op).cube_operands if ops.exists(node.op) else ()


def decompose_node(graph: Graph, node: Node) -> tuple[list[Node], list[Value]]:
    """The primitive nodes of `node`'s decomposition (taken back out of `graph`) and the values replacing its outputs.

    The op's `decompose` appends its nodes to the graph; they are removed
    again so the caller can place them where `node` was.
    """
    start = len(graph.nodes)
    result = ops.get(node.op).decompose(graph, list(node.inputs), op_attrs(node), node.loc)
    added = graph.nodes[start:]
    del graph.nodes[start:]
    outs = [result] if isinstance(result, Value) else list(result)
    if len(outs) != len(node.outputs):
        raise RuntimeError(f"the decomposition of {node.op} returned {len(outs)} values for {len(node.outputs)} outputs")
    for v, t in zip(outs, node.outputs):
        if not same_type(v.type, t):
            raise RuntimeError(f"the decomposition of {node.op} returns {v.type} where the op infers {t}")
    return added, outs


# ---- transposes folded into matmul flags ----------------------------------------------------


def _is_cube_op(op: ops.OpDef) -> bool:
    return bool(op.cube_operands)


class MatmulTransposeFold(RulePass):
    name = "matmul_transpose_fold"
    opt_level = 2

    def rules(self, ctx: PassContext) -> list[RewriteRule]:
        return [RewriteRule("transpose_into_flag", _is_cube_op, _fold_transposes)]


def _fold_transposes(node: Node, rw: Rewriter) -> bool:
    """Fold every transpose feeding a cube operand into its flag (in place)."""
    changed = False
    for operand in cube_operands(node):
        while _fold_transpose(node, operand.index, operand.transpose_attr):  # nested swaps toggle it
            changed = True
    return changed


def swaps_last_two(node: Node) -> bool:
    """A transpose whose permutation is (0, 1, ..., n-1, n-2) on a rank >= 2 tensor."""
    if node.op != "transpose" or node.inputs[0].type.ndim < 2:
        return False
    n = node.inputs[0].type.ndim
    return perm_of(node) == tuple(range(n - 2)) + (n - 1, n - 2)


def _fold_transpose(node: Node, operand: int, flag: str) -> bool:
    v = node.inputs[operand]
    if not swaps_last_two(v.node):
        return False
    inputs = list(node.inputs)
    inputs[operand] = v.node.inputs[0]
    flipped = not bool(node.attrs.get(flag, False))
    trial = build_node(node.op, inputs, {**op_attrs(node), flag: flipped})
    if trial is None or trial.outputs != node.outputs:
        return False
    node.inputs = inputs
    node.attrs[flag] = flipped
    return True


# ---- matmul epilogue fusion --------------------------------------------------------------------

_STEPS = ("bias", "activation", "cast")


class MatmulEpilogueFusion(RulePass):
    name = "matmul_epilogue_fusion"
    opt_level = 2

    def rules(self, ctx: PassContext) -> list[RewriteRule]:
        return [RewriteRule("fuse_epilogue", _is_cube_op, lambda node, rw: fuse_epilogue(node, rw.uses))]


def _state(node: Node) -> dict[str, Any]:
    """The epilogue already carried by a matmul-family node."""
    if node.op == "matmul":
        return {"has_bias": False, "activation": None, "out_dtype": None, "bias": None}
    bias = node.inputs[2] if node.attrs.get("has_bias") else None
    return {"has_bias": bool(node.attrs.get("has_bias")), "activation": node.attrs.get("activation"),
            "out_dtype": node.attrs.get("out_dtype"), "bias": bias}


def _done_step(state: dict[str, Any]) -> int:
    """Index in _STEPS after the last epilogue step the node already has (steps only go forward)."""
    if state["out_dtype"] is not None:
        return 3
    if state["activation"] is not None:
        return 2
    if state["has_bias"]:
        return 1
    return 0


def is_bias_for(bias: Value, out: Value) -> bool:
    """A 1-D tensor of N elements or a row (1, ..., 1, N) that broadcasts along the matmul rows."""
    b, o = bias.type, out.type
    if b.ndim < 1 or b.ndim > o.ndim or o.ndim < 1:
        return False
    return b.shape[-1] == o.shape[-1] and all(d == 1 for d in b.shape[:-1])


def fuse_epilogue(mm: Node, uses: UseIndex) -> Replacement | None:
    """The epilogue chain after `mm` folded into one fused_matmul, replacing the chain's last node (a chain rule)."""
    state = _state(mm)
    step = _done_step(state)
    chain: list[Node] = [mm]
    cur = mm.out()
    pending = list(_STEPS[step:])
    while pending:
        user = uses.sole_reader(cur)
        if user is None:
            break
        kind = pending.pop(0)
        taken = _match_step(kind, user, cur, state)
        if taken is None:
            continue  # an optional step that is absent: try the next kind on the same user
        chain.append(user)
        cur = user.out()
        if kind == "cast" and _casts_to_accumulator(mm, state["out_dtype"]):
            # a float32 result is the cube's float32 accumulator as it is: a bias and ReLU after the cast are
            # still FixPipe's (the cast does not round), so the steps not taken yet may follow
            pending = [k for k, done in (("bias", state["has_bias"]), ("activation", state["activation"])) if not done]
    if len(chain) == 1:
        return None
    a, b = mm.inputs[0], mm.inputs[1]
    inputs = [a, b] + ([state["bias"]] if state["has_bias"] else [])
    if would_create_cycle(inputs, chain):
        return None
    attrs = {
        "transpose_a": bool(mm.attrs.get("transpose_a", False)),
        "transpose_b": bool(mm.attrs.get("transpose_b", False)),
        "has_bias": state["has_bias"],
        "activation": state["activation"],
        "out_dtype": state["out_dtype"],
    }
    last = chain[-1]
    fused = build_node("fused_matmul", inputs, attrs, loc=last.loc, name=last.name or mm.name)
    if fused is None or not same_type(fused.outputs[0], last.outputs[0]):
        return None
    # every input is defined before the last node of the chain, which is where it goes
    return Replacement([fused.out()], [fused], at=last, removed=chain)


def _match_step(kind: str, user: Node, cur: Value, state: dict[str, Any]) -> Node | None:
    """If `user` is the epilogue step `kind` applied to `cur`, record it in `state` and return it."""
    if kind == "bias":
        if user.op != "add" or len(user.inputs) != 2 or user.inputs[0] == user.inputs[1]:
            return None
        other = user.inputs[1] if user.inputs[0] == cur else user.inputs[0]
        if not is_bias_for(other, cur) or not same_type(user.outputs[0], cur.type):
            return None
        state["has_bias"], state["bias"] = True, other
        return user
    if kind == "activation":
        zero = user.op == "maximum" and len(user.inputs) == 2 and user.inputs[0] == cur and \
            uniform_scalar(user.inputs[1]) == 0 and same_type(user.outputs[0], cur.type)
        if user.op != "relu" and not zero:
            return None
        state["activation"] = "relu"
        return user
    if kind == "cast":
        target = user.attrs.get("dtype")
        if user.op != "cast" or target is None or not dtypes.is_float(dtypes.normalize(target)):
            return None
        state["out_dtype"] = dtypes.normalize(target)
        return user
    raise ValueError(f"unknown epilogue step {kind!r}")


def _casts_to_accumulator(mm: Node, out_dtype: str | None) -> bool:
    """A float product cast to float32: what the cube accumulates in (FixPipe writes it without rounding)."""
    operands = dtypes.promote(mm.inputs[0].type.dtype, mm.inputs[1].type.dtype)
    return out_dtype == "float32" and dtypes.is_float(operands)


def pattern_passes() -> Sequence[Pass]:
    return [MatmulTransposeFold(), MatmulEpilogueFusion()]
