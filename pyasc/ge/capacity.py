"""What fits on the chip: the capacity function fusion asks before it forms a kernel.

Fusion never estimates on-chip memory itself. It is handed a capacity
function through the pass context (`PassContext.capacity`; `ge.optimize(...,
capacity=fn)`), so that fusion and code generation can never disagree about
what fits: codegen supplies its real one, from its tiling model. Without one,
`default_capacity(chip)` is used: the estimate below, with every hardware
number taken from the chip config.

    capacity(candidate: FusionCandidate) -> CapacityVerdict

`FusionCandidate` fields (one candidate kernel):
- `graph`: the graph its nodes live in (root or an If branch);
- `nodes`: its nodes, in topological order;
- `structure`: what the legality rules found (`ge.plan.KernelStructure`): kind
  (ELEMENTWISE, ROW_REDUCE, COLUMN_REDUCE, MATMUL, DATA_MOVEMENT, CONTROL),
  anchor node, and for reductions rows (the reduction's input shape), k (how
  many trailing axes are reduced), the reduced axes and `dropped` (nodes
  holding per-row values without the reduced axes);
- `inputs`: values it reads from outside (graph inputs, constants, other kernels);
- `outputs`: values used outside it, or graph outputs;
- `chip`: the chip config (capacities and alignments);
- `prologue`: for a MATMUL candidate holding the kernel that computes its A operand (ge/prologue.py), that
  kernel's structure (its nodes: the candidate's nodes the matmul depends on); None otherwise.

`CapacityVerdict` fields: `fits` (may these nodes be one kernel), `working_set`
(on-chip bytes it needs, double-buffered; None when it cannot be estimated,
e.g. a symbolic row length) and `reason` (why not, in words, when it does not
fit). A candidate that is one data-movement op or one If is always a kernel;
its verdict only gives the plan its working set.

The default estimate (single-buffered, then doubled): one UB block
(`chip.ub_align` bytes, the smallest tile of a buffer) per buffer of an
elementwise, column or data-movement kernel; for a row kernel a full row per
buffer that spans the reduced axes (one block for per-row values), plus one
fp32 row of scratch per row composite; for a matmul kernel one cube_block x cube_block output
fractal per epilogue buffer (its operands sit in L1/L0A/L0B, the bias in the
bias table). Scalar constants are immediates, not buffers. An If step needs
nothing on chip. An elementwise or row kernel reading an input through views (a slice, a transpose, ...:
fusion's phase 4) is refused: whether a template can read through them is codegen's to say.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

from .. import ops
from ..ops import Category
from ..ir import Graph, Node, Sym, Value
from ..target import DEFAULT_CHIP, Chip, get_chip  # noqa: F401  (DEFAULT_CHIP: part of this face)
from .plan import KernelKind, KernelStructure



@dataclass(frozen=True)
class FusionCandidate:
    graph: Graph
    nodes: Sequence[Node]
    structure: KernelStructure
    inputs: Sequence[Value]
    outputs: Sequence[Value]
    chip: Chip
    prologue: KernelStructure | None = None   # MATMUL: the structure of its A operand's producer (ge.prologue)


@dataclass(frozen=True)
class CapacityVerdict:
    fits: bool
    working_set: int | None
    reason: str = ""


CapacityFn = Callable[[FusionCandidate], CapacityVerdict]


def resolve_chip(chip: "str | Chip | None") -> Chip:
    """None -> the default preset, a preset name -> its config, a Chip as given (pyasc.target.get_chip)."""
    return get_chip(chip)


def lone_candidate(graph: Graph, node: Node, chip: Chip) -> FusionCandidate:
    """A kernel of `node` alone (an opaque op such as attention): what GE asks before it keeps the op whole."""
    return FusionCandidate(graph, (node,), KernelStructure(KernelKind.OPAQUE, node), tuple(node.inputs),
                           tuple(node.values), chip)


def is_scalar_const(v: Value) -> bool:
    """A one-element constant: an immediate operand, not a buffer and not an edge between kernels."""
    return v.node.op == "Const" and v.type.numel == 1


def default_capacity(chip: Chip) -> CapacityFn:
    """The built-in UB estimate for `chip` (see the module docstring); ValueError for an unusable chip."""
    ub = _positive_int(chip, "ub_bytes")
    block = _positive_int(chip, "ub_align")
    fractal = _positive_int(chip, "cube_block") ** 2

    def capacity(candidate: FusionCandidate) -> CapacityVerdict:
        moves = [n.op for n in candidate.nodes if ops.get(n.op).category == Category.INJECTIVE]
        if moves and candidate.structure.kind in (KernelKind.ELEMENTWISE, KernelKind.ROW_REDUCE):
            # views read through by strides (fusion's phase 4): only codegen's templates know whether they can
            return CapacityVerdict(False, None, f"the built-in estimate does not read inputs through views "
                                                f"({', '.join(moves)}); codegen's capacity function does")
        ws = working_set(candidate, block, fractal)
        if ws is None:
            return CapacityVerdict(True, None)
        if 2 * ws > ub:
            return CapacityVerdict(False, 2 * ws,
                                   f"working set 2 x {ws} B = {2 * ws} B (double-buffered) does not fit the {ub} B UB")
        return CapacityVerdict(True, 2 * ws)

    return capacity


def _positive_int(chip: Chip, field: str) -> int:
    value = getattr(chip, field, None)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"the default capacity model needs the chip's UB size and alignment: chip.{field} must be "
                         f"a positive int, got {value!r} from {type(chip).__name__}")
    return value


def working_set(candidate: FusionCandidate, block: int, fractal: int) -> int | None:
    """On-chip bytes of the candidate's minimum tiles, single-buffered (None: a symbolic row length); `block` is
    the UB's smallest tile in bytes, `fractal` the elements of the cube's smallest output tile."""
    st = candidate.structure
    if st.kind is KernelKind.CONTROL:
        return 0
    if st.kind is KernelKind.MATMUL and candidate.prologue is not None:
        # the A operand's producer runs first on the vector cores (a kernel of its own there): the larger of the two
        split = prologue_split(candidate)
        parts = [working_set(c, block, fractal) for c in split]
        return None if None in parts else max(p for p in parts if p is not None)
    buffers: dict[Value, None] = {}
    for v in candidate.inputs:
        if not is_scalar_const(v):
            buffers[v] = None
    for n in candidate.nodes:
        for v in n.values:
            buffers[v] = None
    if st.kind is KernelKind.MATMUL:
        for v in st.anchor.inputs:  # operands go to L1/L0A/L0B, the bias to the bias table
            buffers.pop(v, None)
        return sum(fractal * v.type.itemsize for v in buffers)
    if st.kind is not KernelKind.ROW_REDUCE:
        return block * len(buffers)
    total = 0
    for v in buffers:
        tail = tuple(v.type.shape)[max(0, len(v.type.shape) - st.k):] if st.k else ()
        if v.node in st.dropped or all(d == 1 for d in tail):
            total += block
        elif any(isinstance(d, Sym) for d in tail):
            return None
        else:
            total += _align(math.prod(tail) * v.type.itemsize, block)
    row = st.rows[len(st.rows) - st.k:]
    if any(isinstance(d, Sym) for d in row):
        return None
    for n in candidate.nodes:
        if ops.get(n.op).row_composite:  # one fp32 row of scratch for the composite's internal steps
            total += _align(math.prod(row) * 4, block)
    return total


def prologue_split(candidate: FusionCandidate) -> tuple[FusionCandidate, FusionCandidate]:
    """A MATMUL candidate with a prologue as (the matmul and its epilogue, the prologue alone): the prologue's
    nodes are the ones the matmul depends on; its one output is the matmul's A operand."""
    assert candidate.prologue is not None
    anchor = candidate.structure.anchor
    before = set(ancestors_within(anchor, candidate.nodes))
    pro = [n for n in candidate.nodes if n in before]
    rest = [n for n in candidate.nodes if n not in before]
    a = anchor.inputs[0]
    pro_in = list(dict.fromkeys(v for n in pro for v in n.inputs if v.node not in before))
    rest_in = list(dict.fromkeys([v for v in candidate.inputs if any(v in n.inputs for n in rest)] + [a]))
    return (FusionCandidate(candidate.graph, rest, candidate.structure, rest_in, candidate.outputs, candidate.chip),
            FusionCandidate(candidate.graph, pro, candidate.prologue, pro_in, [a], candidate.chip))


def ancestors_within(node: Node, nodes: Sequence[Node]) -> list[Node]:
    """The members of `nodes` that `node` depends on (its prologue inside a kernel), in the order given."""
    members = set(nodes)
    seen: set[Node] = set()
    stack = [v.node for v in node.inputs]
    while stack:
        n = stack.pop()
        if n in members and n not in seen:
            seen.add(n)
            stack.extend(v.node for v in n.inputs)
    return [n for n in nodes if n in seen]


def _align(n: int, a: int) -> int:
    return -(-n // a) * a
