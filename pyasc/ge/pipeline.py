"""The optimiser's pass list and `optimize`, its entry point.

Order (GE's, as in reference/graph-optimizer-references.md §3):

    attention                                     opt 2  (ge.attention) softmax(q @ k^T) @ v -> one attention op,
                                                         heads on slices of one tensor -> one batched attention
    conv_batchnorm_fold                           opt 2  (ge.conv) batch_norm(conv) -> conv, rescaled weights
    conv_group_split                              opt 0  (ge.conv) a grouped conv -> one conv per group
    decompose_composites                          opt 0  composites without a dedicated lowering
    vector_integer_matmul                         opt 0  (ge.integer_matmul) integer products the cube cannot take
    split_reductions                              opt 0  a reduction over separated axes -> one per block
    simplify (fixpoint group)                            fold -> algebra -> CSE -> DCE
        constant_folding, algebraic_simplify,     opt 1
        cse, dce                                  opt 1
    pattern_fusion (group)
        matmul_transpose_fold                     opt 2  a.T @ b -> transpose flags
        matmul_epilogue_fusion                    opt 2  matmul + bias + relu + cast -> fused_matmul
        conv_epilogue_fusion                      opt 2  (ge.conv) conv + relu + cast -> fused_conv2d
    layout (group)
        blocked_layout                            opt 0  (ge.conv) convs, pools and their elementwise
                                                         neighbours in NC1HWC0
        layout_assign                             opt 0  transdata where formats disagree
        transdata_elimination                     opt 1  inverse pairs, siblings, transposes
        conv_edge_fold                            opt 2  (ge.conv_edges) the region's edge conversions
                                                         into the convs' launches
        transpose_sinking                         opt 3
    reshape_sinking                               opt 2  (ge.reshape_sinking) elementwise readers of a reshaped
                                                         computed value compute in its shape (a concatenate's
                                                         merge reshape no longer splits the kernel)
    simplify (again: clean up after pattern fusion and layout)
    fusion                                        opt 0  (ge.fusion) kernels, one op each at opt 0
    horizontal_fusion                             opt 2  (ge.horizontal) independent kernels in one
                                                         multi-output launch (the q/k/v products of one
                                                         A; RoPE on q and on k)
    matmul_prologue                               opt 2  (ge.prologue) a matmul kernel takes in the kernel
                                                         computing its A operand (layer norm, cast, scale)
    mixed_kernels                                 opt 2  (ge.mixed) a matmul and its epilogue share a launch
    memory_planning                               opt 0  (ge.memory) GM workspace plan

Opt levels: 0 runs only what codegen needs (legalisations, one kernel per op,
the memory plan); 1 adds simplification and elementwise fusion; 2 adds
attention and matmul pattern fusion; 3 (default) adds transpose sinking.
The attention pass runs first, on the graph as the frontend built it: the
composites it reads (softmax, split, concatenate) are still whole there.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ..target import Chip
from ..ir import Graph, format_graph, to_dot
from ..ir import verify as verify_graph
from .attention import AttentionPass
from .capacity import DEFAULT_CHIP, CapacityFn, resolve_chip  # noqa: F401  (resolve_chip: part of this face)
from .decisions import CubeOperandRoute, FusionDecision
from .fusion import FusionPass, schedule_for
from .horizontal import HorizontalFusionPass
from .integer_matmul import VectorIntegerMatmul
from .conv import BlockedLayout, ConvBatchNormFold, ConvEpilogueFusion, ConvGroupSplit
from .conv_edges import ConvEdgeFold
from .layout import layout_passes
from .memory import MemoryPlanningPass
from .mixed import MixedKernelsPass
from .prologue import MatmulProloguePass
from .reshape_sinking import ReshapeSinking
from .instruments import PassVerificationError, StageCapture
from .passes import Pass, PassContext, PassGroup, PassManager, PassRecord, walk_passes
from .pattern import DEFAULT_DEDICATED_LOWERINGS, DecomposeComposites, SplitReductions, pattern_passes
from .plan import KernelPlan, MemoryPlan
from .simplify import DEFAULT_FOLD_MAX_ELEMENTS, simplify_group

OPT_LEVELS = (0, 1, 2, 3)

DEFAULT_KNOBS: dict[str, Any] = {
    "fold_max_elements": DEFAULT_FOLD_MAX_ELEMENTS,   # constant folding: largest output folded
    "dedicated_lowerings": DEFAULT_DEDICATED_LOWERINGS,  # composites codegen lowers whole
    "max_fixpoint_steps": 8,                          # rounds of a fixpoint group before it stops
}


@dataclass
class OptimizeResult:
    graph: Graph                                              # the optimised graph (same object, mutated)
    stages: list[tuple[str, str]] = field(default_factory=list)   # (pass name, canonical text) per changed pass
    dots: list[tuple[str, str]] = field(default_factory=list)     # (pass name, DOT) per changed pass
    kernels: list[KernelPlan] = field(default_factory=list)       # planned device kernels, in schedule order
    memory_plan: MemoryPlan | None = None
    fusion_decisions: list[FusionDecision] = field(default_factory=list)  # every fusion decision, "why not" too
    pass_times: dict[str, float] = field(default_factory=dict)    # seconds per pass (for reports)
    pass_log: list[PassRecord] = field(default_factory=list)      # every pass considered: ran/changed/skipped
    cube_routes: list[CubeOperandRoute] = field(default_factory=list)  # how each matmul operand reaches the cube
    nodes_before: int = 0                                         # node count (all graphs) before / after
    nodes_after: int = 0
    seconds: float = 0.0                                          # total optimiser wall time

    @property
    def fusion_log(self) -> list[str]:
        """The fusion decisions as text, one line each (what dumps write)."""
        return [d.render() for d in self.fusion_decisions]

    @property
    def layout_log(self) -> list[str]:
        return [r.render() for r in self.cube_routes]

    def pass_report(self, times: bool = True) -> str:
        """Every pass considered, in order, one line each: its stage when it changed the graph, "unchanged"
        (noted, not re-dumped) or why it was skipped, then what it counted (`stats: cse=3`: rule name =
        times it fired). The per-pass dumps show only the stages.
        `times=False` leaves out the wall times, so two reports diff cleanly."""
        lines = []
        for r in self.pass_log:
            if r.note:
                what = r.note
            elif r.skipped is not None:
                what = f"skipped ({r.skipped})"
            elif r.changed:
                what = f"changed -> stage {r.stage}"
            else:
                what = "unchanged (no stage)"
            if times and not r.note and r.skipped is None:
                what += f"  [{r.seconds * 1e3:.2f} ms]"
            if r.stats:
                what += "  stats: " + ", ".join(f"{k}={v}" for k, v in r.stats.items())
            lines.append(f"{r.name}: {what}")
        return "\n".join(lines)


def _backend_passes() -> list[Pass]:
    """Kernel formation, multi-output and mixed launches and memory planning (ge.fusion, ge.horizontal, ge.prologue,
    ge.mixed, ge.memory), run last."""
    return [FusionPass(), HorizontalFusionPass(), MatmulProloguePass(), MixedKernelsPass(), MemoryPlanningPass()]


def build_pipeline() -> list[Pass]:
    """A fresh pass list (passes hold no state between compiles, but fresh objects cost nothing)."""
    return [
        AttentionPass(),
        ConvBatchNormFold(),
        ConvGroupSplit(),
        DecomposeComposites(),
        VectorIntegerMatmul(),
        SplitReductions(),
        simplify_group(),
        PassGroup("pattern_fusion", [*pattern_passes(), ConvEpilogueFusion()]),
        PassGroup("layout", [BlockedLayout(), *layout_passes(), ConvEdgeFold()]),
        ReshapeSinking(),
        simplify_group(),
        *_backend_passes(),
    ]


def pass_names() -> list[str]:
    """Every pass and group name `disabled_passes` / `required_passes` accept, in pipeline order."""
    global _PASS_NAMES
    if _PASS_NAMES is None:  # the pipeline's shape is fixed by the code above: build it once to read its names
        names: list[str] = []
        for p in walk_passes(build_pipeline()):
            if p.name not in names:
                names.append(p.name)
        _PASS_NAMES = tuple(names)
    return list(_PASS_NAMES)


_PASS_NAMES: tuple[str, ...] | None = None


def optimize(
    graph: Graph,
    *,
    opt_level: int = 3,
    disabled_passes: Iterable[str] = (),
    required_passes: Iterable[str] = (),
    chip: Chip | None = None,
    knobs: dict[str, Any] | None = None,
    on_stage: Callable[[str, Graph], None] | None = None,
    verify: bool = True,
    dots: bool = True,
    capacity: CapacityFn | None = None,
) -> OptimizeResult:
    """Run the pass pipeline on `graph` (in place) and return what it did.

    `on_stage(name, graph)` is called after each pass that changed the graph
    (after the result's own text/DOT snapshot). `dots=False` skips the DOT
    snapshots. `capacity` decides what fits on the chip (ge/capacity.py;
    default: the built-in estimate from the chip config). Raises ValueError for an opt_level outside 0..3 or an unknown
    pass name, PassVerificationError when the input graph, or the graph
    after some pass, breaks an IR invariant, and PassFailure (naming the pass)
    when a pass itself fails.
    """
    if not isinstance(opt_level, int) or isinstance(opt_level, bool) or opt_level not in OPT_LEVELS:
        raise ValueError(f"opt_level must be one of 0, 1, 2, 3, got {opt_level!r}")
    disabled = _checked_names(disabled_passes, "disabled_passes")
    required = _checked_names(required_passes, "required_passes")
    both = disabled & required
    if both:
        raise ValueError(f"passes both disabled and required: {', '.join(sorted(both))}")
    start = time.perf_counter()
    result = OptimizeResult(graph, nodes_before=_count_nodes(graph))
    capture = StageCapture(format_graph, to_dot if dots else None)
    ctx = PassContext(
        opt_level=opt_level,
        disabled_passes=disabled,
        required_passes=required,
        chip=resolve_chip(chip),
        knobs={**DEFAULT_KNOBS, **(knobs or {})},
        on_stage=on_stage,
        verify=verify,
        instruments=[capture],
        capacity=capacity,
    )
    if verify:
        _verify_input(graph)
    PassManager(build_pipeline()).run(graph, ctx)
    result.stages, result.dots = capture.stages, capture.dots
    state = ctx.state
    schedule_for(graph, ctx)  # fusion and memory planning both disabled: still one kernel per op
    result.kernels = list(state.kernels or [])
    result.memory_plan = state.memory_plan
    result.fusion_decisions = list(state.pattern_decisions) + list(state.fusion_decisions)
    result.cube_routes = list(state.cube_routes)
    result.pass_times = dict(ctx.pass_times)
    result.pass_log = list(ctx.log)
    result.nodes_after = _count_nodes(graph)
    result.seconds = time.perf_counter() - start
    return result


def _checked_names(names: Iterable[str], what: str) -> frozenset[str]:
    if isinstance(names, str):
        names = (names,)  # a single name given bare
    given = frozenset(names)
    if not given:  # nothing to check (the usual call): skip listing the passes
        return given
    known = pass_names()
    unknown = sorted(n for n in given if n not in known)
    if unknown:
        raise ValueError(f"unknown pass name(s) in {what}: {', '.join(map(repr, unknown))}; "
                         f"known passes are {', '.join(known)}")
    return given


def _verify_input(graph: Graph) -> None:
    try:
        verify_graph(graph)
    except Exception as e:
        raise PassVerificationError("(input graph, before any pass)", [], e) from e


def _count_nodes(graph: Graph) -> int:
    return sum(len(g.nodes) for g in graph.walk())
