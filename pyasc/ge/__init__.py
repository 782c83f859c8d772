"""GE-style graph optimiser: `optimize(graph, ...)` runs the pass pipeline.

Layers: passes.py (pass manager), instruments.py (timing, verify, stage
capture, pass failures), rewrite.py (the rule driver), edit.py (graph-editing
helpers), state.py / decisions.py / plan.py (the typed records passes hand
on), simplify.py (fold, algebra, CSE, DCE), pattern.py (matmul epilogue
fusion, transpose flags, composite decomposition), layout.py (formats,
transdata, transposes), fusion/ (device kernels), capacity.py (what fits on
the chip), memory.py (GM workspace plan), pipeline.py (the pass list and
`optimize`).
"""
from __future__ import annotations

from .instruments import (  # noqa: F401
    PassError,
    PassFailure,
    PassInstrument,
    PassVerificationError,
    StageCapture,
    StageHook,
    TimingInstrument,
    VerifyInstrument,
)
from .passes import FunctionPass, Pass, PassContext, PassGroup, PassManager, PassRecord  # noqa: F401
from .capacity import CapacityFn, CapacityVerdict, FusionCandidate, default_capacity  # noqa: F401
from .decisions import CubeOperandRoute, DecisionKind, FusionDecision, Rejection  # noqa: F401
from .plan import BufferAssignment, KernelKind, KernelPlan, KernelStructure, MemoryPlan  # noqa: F401
from .state import OptimizerState  # noqa: F401
from .pipeline import DEFAULT_KNOBS, OptimizeResult, build_pipeline, optimize, pass_names  # noqa: F401
