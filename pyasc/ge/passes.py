"""Pass manager: passes, pass context, fixpoint groups, verify-after-change, stage hooks.

(Seed interface; the GE helper completes it.)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..ir import Graph


@dataclass
class PassContext:
    opt_level: int = 3
    disabled_passes: frozenset[str] = frozenset()
    required_passes: frozenset[str] = frozenset()
    chip: Any = None               # an object with the chip's capacities (ub_bytes, l1_bytes, ...)
    knobs: dict[str, Any] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)   # analyses passes leave for later passes
    on_stage: Callable[[str, Graph], None] | None = None    # called after each pass that changed the graph


class Pass:
    name: str = "pass"
    opt_level: int = 1             # runs when ctx.opt_level >= opt_level (unless disabled/required)
    root_only: bool = False        # True: runs once on the root graph instead of on every subgraph

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        """Transform `graph` in place; return whether anything changed."""
        raise NotImplementedError
