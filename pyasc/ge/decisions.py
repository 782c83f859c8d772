"""Decisions the optimiser records, as data: why ops did or did not share a kernel, how cube operands travel.

Passes record these; tests assert on their fields (kind, rule, producer,
consumer); text is made from them only for dumps and reports (`render()`),
one line per decision, in the words the fusion log has always used.

Ops are named by labels like "exp %2": the op and its canonical dump name in
the graph before fusion ("%1.then_branch/%0" inside a branch); pattern
decisions (PATTERN, NEAR_MISS, DECOMPOSED) name them as the graph stood when
the pattern pass looked at it.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from ..ir import TensorType


class DecisionKind(enum.Enum):
    FUSED = "fused"                    # merged into one kernel (rule: post_dominator | extra_output | view |
                                       # prologue | horizontal)
    NOT_FUSED = "not fused"            # a merge a legality rule refused (rule: that rule)
    DUPLICATED = "duplicated"          # a cheap producer recomputed in each consumer kernel
    NOT_DUPLICATED = "not duplicated"  # why not (rule: the refusal, or the consumer kernel's legality rule)
    BOUNDARY = "boundary"              # a producer that writes its output to GM for several kernels
    OWN_KERNEL = "own kernel"          # an op that never shares a kernel (data movement, control flow)
    NOTE = "note"                      # how fusion ran (opt_level 0, no chip, fusion disabled)
    MIXED = "mixed"                    # a cube kernel and the vector work on its result in one launch
    PATTERN = "pattern"                # a graph pattern found and replaced by one op (rule: the pattern's name)
    NEAR_MISS = "near miss"            # a pattern almost found (rule: its name; detail: the piece that stopped it)
    DECOMPOSED = "decomposed"          # an op codegen cannot lower whole, lowered through its decomposition


@dataclass(frozen=True)
class Rejection:
    """A legality rule refusing a candidate kernel: which rule, and the reason in words."""

    rule: str
    reason: str
    consumer: str = ""   # the consumer kernel (its first op's label), when one of several was asked


@dataclass(frozen=True)
class FusionDecision:
    kind: DecisionKind
    rule: str                         # the rule that decided (ge/fusion/__init__.py lists the names)
    producer: str = ""                # label of the op the decision is about ("exp %2")
    consumer: str = ""                # label of the op or kernel it was fused into / refused by
    detail: str = ""                  # the reason (refusals) or the note's text, in words
    via: tuple[str, ...] = ()         # labels of the ops on the paths producer -> consumer
    consumers: int = 0                # how many consumer kernels (multi-consumer decisions)
    rejected: tuple[Rejection, ...] = ()  # BOUNDARY: what each consumer kernel said

    def render(self) -> str:
        """The decision as one line of the fusion log."""
        k = self.kind
        via = f" via {', '.join(self.via)}" if self.via else ""
        if k is DecisionKind.NOTE:
            return self.detail
        if k is DecisionKind.MIXED:
            return f"mixed: {self.producer} and its epilogue {self.consumer} in one cube+vector launch ({self.detail})"
        if k is DecisionKind.PATTERN:
            return f"{self.rule}: found {self.detail} at {self.producer} -> {self.consumer}"
        if k is DecisionKind.NEAR_MISS:
            return f"{self.rule}: not matched at {self.producer}: {self.detail}"
        if k is DecisionKind.DECOMPOSED:
            return f"decomposed: {self.producer}: {self.detail}"
        if k is DecisionKind.FUSED and self.rule == "extra_output":
            return (f"fused: {self.producer} into the kernel of {self.consumer} as an extra output; "
                    f"{self.consumers - 1} other consumer kernel(s) read it from GM")
        if self.rule == "prologue":   # ge/prologue.py
            if k is DecisionKind.FUSED:
                return f"fused: {self.producer} into the kernel of {self.consumer} as the prologue of its A operand " \
                       f"({self.detail})"
            return f"not fused: {self.producer} as the prologue of {self.consumer}: {self.detail}"
        if self.rule == "horizontal":   # ge/horizontal.py
            if k is DecisionKind.FUSED:
                return f"fused: {self.producer} into the launch of {self.consumer} ({self.detail})"
            into = f" with {self.consumer}" if self.consumer else ""
            return f"not fused: {self.producer} into a multi-output launch{into}: {self.detail}"
        if self.rule == "view":      # fusion's view phase (ge/fusion/views.py)
            verdict = "fused" if k is DecisionKind.FUSED else "not fused"
            why = f": {self.detail}" if k is DecisionKind.NOT_FUSED else " (its template reads or writes through them)"
            return f"{verdict}: views {', '.join(self.via)} into the kernel of {self.consumer}{why}"
        if k is DecisionKind.FUSED:
            return f"fused: {self.producer} -> post-dominator {self.consumer}{via}"
        if k is DecisionKind.NOT_FUSED:
            return f"not fused: {self.producer} -> post-dominator {self.consumer}{via}: {self.detail}"
        if k is DecisionKind.DUPLICATED:
            return f"duplicated: {self.producer} into {self.consumers} consumer kernels ({self.detail})"
        if k is DecisionKind.NOT_DUPLICATED:
            return f"not duplicated: {self.producer} into its {self.consumers} consumer kernels: {self.detail}"
        if k is DecisionKind.BOUNDARY:
            head = f"boundary: {self.producer} writes its output to GM for {self.consumers} kernels"
            if self.rejected:
                return head + "; " + "; ".join(f"kernel of {r.consumer}: {r.reason}" for r in self.rejected)
            return f"{head} ({self.detail})"
        return f"own kernel: {self.producer} is {self.detail}"


@dataclass(frozen=True)
class CubeOperandRoute:
    """How one cube operand reaches L1: its GM format, and whether the GM->L1 move converts it to NZ."""

    graph: str
    op: str
    operand: str          # "a" / "b"
    type: TensorType      # in GM
    target: str           # the format the cube reads it in (FRACTAL_NZ)

    @property
    def converted(self) -> bool:
        """An ND operand is converted on the way in; one already in another format is copied as it is."""
        return self.type.format == "ND"

    def render(self) -> str:
        how = "converted ND->NZ by the GM->L1 move" if self.converted else "copied as is"
        return f"{self.graph}: {self.op} operand {self.operand} {self.type} in GM -> {self.target} in L1 ({how})"
