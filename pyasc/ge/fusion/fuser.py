"""The fusion algorithm over one graph: TVM's FuseOps phases, every decision recorded.

Phase 0: matmul groups take their epilogue; phase 1: every other op tries to
join the group of its immediate post-dominator together with every op on the
paths between them; phase 2: a producer whose consumers ended up in several
kernels is duplicated into each of them when cheap (not `OpDef.expensive`,
elementwise/broadcast, effectively unary, not a graph output; knob
`fusion_duplicate`), otherwise its output goes to GM: it is fused into the
first consumer kernel that can take it, as an extra output the others read
(knob `fusion_multi_output`), or stays a kernel of its own. Phases 3 to 5 take
data moves that only re-stride into kernels whose templates address through
them (views.py): an opaque op's operand and result views, the views an
elementwise or row kernel reads, the views an elementwise kernel writes its
result through.

A candidate kernel is legal (legality.py), creates no cycle between kernels
(partition.py) and fits the chip (the capacity function), checked in that
order; the first refusal is the decision's rule.

Capacity is checked lazily for elementwise kernels, so that a long chain costs
a few capacity checks instead of one per op (each of which analyses the whole
candidate): a merge of elementwise groups whose union is at most twice the
size at which one of them last passed a capacity check is accepted without
asking, and every group grown that way is checked once after phases 0 and 1.
If one then does not fit, phases 0 and 1 run again asking at every merge (the
decisions of the first run are dropped), so the kernels are the same as if
every merge had been checked whenever the capacity function grows with the
kernel, and every kernel fits in any case. The capacity function is then never
asked about the groups in between: a kernel it accepts must tile right even
when a smaller candidate on the way would have been refused (codegen places a
computed value by how the kernel uses it, `codegen/alignment.py`).
"""
from __future__ import annotations

from typing import Any, Callable

from ...target import Chip
from ... import ops
from ...ir import Graph, Node
from ...ops import Category
from ..capacity import CapacityFn, CapacityVerdict, FusionCandidate, is_scalar_const
from ..decisions import DecisionKind, FusionDecision, Rejection
from ..plan import KernelKind, KernelPlan, KernelStructure
from .analysis import GraphFacts
from .legality import Limits, classify, read_views, write_views
from .partition import Partition
from .views import read_view, view_chains, write_chain

_ALONE = (Category.INJECTIVE, Category.OPAQUE)


class GraphFuser:
    """Fusion of one graph (root or branch) into kernels."""

    def __init__(self, graph: Graph, knobs: dict[str, Any], capacity: CapacityFn, chip: Chip,
                 log: Callable[[FusionDecision], None], prefix: str = ""):
        self.graph = graph
        cap = knobs["fusion_max_ops"]
        self.limits = Limits(None if cap is None else int(cap), int(knobs["fusion_max_users"]))
        self.duplicate = bool(knobs["fusion_duplicate"])
        self.multi_output = bool(knobs["fusion_multi_output"])
        self.capacity = capacity
        self.chip = chip
        self.log = log
        self.facts = GraphFacts(graph, prefix)
        self.partition = Partition(self.facts)
        self.lazy = True                 # elementwise merges may skip the capacity check (see the docstring)
        self.checked: dict[int, int] = {}  # group id -> its size when it last passed a capacity check
        self.asked = False               # whether the last `check` asked the capacity function
        self.pure: dict[int, bool] = {}  # group id -> all its ops elementwise or broadcast
        self.verdicts: dict[tuple, CapacityVerdict] = {}  # candidate key -> the capacity function's verdict

    # -- one candidate ----------------------------------------------------------
    def check(self, group: set[Node], dup: Node | None = None, gids: set[int] | None = None
              ) -> tuple[Rejection | None, KernelStructure | None]:
        """(why not, structure) for a candidate kernel; `dup`: a member that will be a private copy; `gids`: the
        groups it unites (a union of elementwise groups may be accepted without the capacity check)."""
        self.asked = False
        order = self.facts.ordered(group)
        found = classify(self.facts, order, self.limits)
        if isinstance(found, Rejection):
            return found, None
        if found.kind in (KernelKind.DATA_MOVEMENT, KernelKind.CONTROL, KernelKind.OPAQUE) and len(order) == 1:
            return None, found  # one op alone: always a kernel
        cycle = self.partition.cycle(group, dup)
        if cycle:
            return cycle, found
        if self.lazy and gids is not None and found.kind is KernelKind.ELEMENTWISE:
            base = max(self.checked.get(g, 0) for g in gids)
            if base and len(order) <= 2 * base:
                return None, found  # checked once phase 1 is over (_verify)
        self.asked = True
        verdict = self.verdict(self.candidate(order, found, dup))
        if not verdict.fits:
            return Rejection("capacity", verdict.reason), found
        return None, found

    def _quick(self, gids: set[int]) -> bool:
        """Whether a merge of elementwise groups passes every check without looking at the whole candidate: a
        union at most twice the size at which one of them passed a capacity check (capacity is verified once
        phase 1 is over), under the size cap, no value read by more than `max_users` ops inside, no cycle. False
        sends the merge through `check`, which decides it (and words a refusal) as always."""
        if not self.lazy:
            return False
        part, facts = self.partition, self.facts
        base = max(self.checked.get(g, 0) for g in gids)
        size = sum(part.size(g) for g in gids)
        if not base or size > 2 * base or (self.limits.max_ops is not None and size > self.limits.max_ops):
            return False
        if not all(self.pure.get(g, False) for g in gids):
            return False
        largest = max(gids, key=part.size)
        group = part.group
        for g in gids - {largest}:  # only edges into or out of the smaller groups can gain readers inside
            for m in part.members[g]:
                for p in [m] + [v.node for v in m.inputs if v.node in group]:
                    if sum(1 for u in facts.users(p) if group[u] in gids) > self.limits.max_users:
                        return False
        return part.cycle(None, gids=gids) is None

    def _merged(self, gids: set[int]) -> int:
        """Merge groups that passed `check`, keeping what is known about their capacity."""
        base = max(self.checked.pop(g, 0) for g in gids)
        pure = all(self.pure.pop(g, False) for g in gids)
        keep = self.partition.merge(gids)
        self.checked[keep] = len(self.partition.members[keep]) if self.asked else base
        self.pure[keep] = pure
        return keep

    def _verify(self) -> bool:
        """Ask the capacity function about every group grown without asking; whether all of them fit."""
        for gid, members in self.partition.members.items():
            if len(members) <= self.checked.get(gid, 0) or len(members) == 1:
                continue
            order = self.facts.ordered(members)
            found = classify(self.facts, order, self.limits)
            if isinstance(found, Rejection) or not self.verdict(self.candidate(order, found)).fits:
                return False
            self.checked[gid] = len(members)
        return True

    def verdict(self, c: FusionCandidate) -> CapacityVerdict:
        """The capacity function's verdict on `c`, asked once per distinct candidate (the same group comes back:
        a kernel's plan asks about the group its last merge checked, a later phase retries a merge). The key is
        everything the verdict reads that can differ within one fuser: the nodes with their operands (phases 2
        and 4 rewire readers to private copies), the boundary and the structure; graph, chip and the capacity
        function are the fuser's own."""
        key = (tuple(c.nodes), tuple(tuple(n.inputs) for n in c.nodes), tuple(c.inputs), tuple(c.outputs),
               c.structure, c.prologue)
        found = self.verdicts.get(key)
        if found is None:
            found = self.verdicts[key] = self.capacity(c)
        return found

    def candidate(self, order: list[Node], structure: KernelStructure, dup: Node | None = None) -> FusionCandidate:
        """`dup`: a member whose readers outside get copies of it: its result is not written."""
        inputs, outputs = self.facts.boundary(order)
        if dup is not None and not any(v in self.facts.graph_outputs for v in dup.values):
            outputs = [v for v in outputs if v.node is not dup]
        return FusionCandidate(self.graph, order, structure, inputs, outputs, self.chip)

    # -- the phases ----------------------------------------------------------------
    def fuse(self) -> None:
        log, kept = self.log, []
        self.log = kept.append  # phases 0 and 1 may run twice: keep the decisions of the run that stands
        try:
            self._post_dominator_phases()
            if not self._verify():
                kept.clear()
                self.partition = Partition(self.facts)
                self.checked.clear()
                self.lazy = False
                self._post_dominator_phases()
        finally:
            self.log = log
        for d in kept:
            log(d)
        facts = self.facts
        self._multi_consumer()
        self._take_views()
        self._read_views()
        self._write_views()
        for n in facts.compute:
            p = facts.pattern[n]
            if p in _ALONE and self.partition.size(self.partition.group[n]) == 1:
                control = ops.get(n.op).is_control
                what = "control flow; each branch is fused on its own" if control else (
                    "data movement/opaque ops are not fused (GE buffer fusion fuses elementwise/broadcast ops)")
                self.log(FusionDecision(DecisionKind.OWN_KERNEL, "control" if control else "data_movement",
                                        facts.label(n), detail=f"{p.name}: {what}"))

    def _post_dominator_phases(self) -> None:
        facts, part = self.facts, self.partition
        self.pure = {part.group[n]: facts.pattern[n] <= Category.BROADCAST for n in facts.compute}
        pdom = facts.post_dominators()
        for phase in (0, 1):
            for n in facts.compute:
                gid = part.group[n]
                kind = part.pattern(gid)
                if kind in _ALONE:
                    continue
                if (phase == 0) != (kind == Category.MATMUL):
                    continue  # matmul groups take their epilogue first, as in TVM's phase 0
                target = pdom[n]
                if target is None or part.group[target] == gid:
                    continue
                path = facts.between(n, target)
                gids = part.groups_of({n, target} | path)
                if self._quick(gids):
                    self.asked = False
                    rejection = None
                else:
                    rejection, _ = self.check(part.union(gids), gids=gids)
                via = tuple(facts.labels_of(path))
                if rejection:
                    self.log(FusionDecision(DecisionKind.NOT_FUSED, rejection.rule, facts.label(n),
                                            facts.label(target), rejection.reason, via))
                else:
                    self._merged(gids)
                    self.log(FusionDecision(DecisionKind.FUSED, "post_dominator", facts.label(n), facts.label(target),
                                            via=via))

    def _consumer_groups(self, n: Node) -> list[int]:
        part = self.partition
        own = part.group[n]
        seen: list[int] = []
        for u in self.facts.ordered(self.facts.users(n)):
            g = part.group[u]
            if g != own and g not in seen:
                seen.append(g)
        return seen

    def _multi_consumer(self) -> None:
        """Phase 2: producers whose consumers sit in several kernels."""
        facts, part = self.facts, self.partition
        changed = False
        for n in list(facts.compute):
            gid = part.group[n]
            if part.pattern(gid) in _ALONE:
                continue
            consumers = self._consumer_groups(n)
            if len(consumers) < 2:
                continue
            refusal = self._why_not_duplicate(n, consumers)
            if refusal is None:
                part.duplicate(n, consumers)
                self.log(FusionDecision(DecisionKind.DUPLICATED, "duplicate", facts.label(n), consumers=len(consumers),
                                        detail=f"cheap: {n.op} is not expensive and reads at most one full-size operand"))
                changed = True
                continue
            self.log(FusionDecision(DecisionKind.NOT_DUPLICATED, refusal.rule, facts.label(n), refusal.consumer,
                                    refusal.reason, consumers=len(consumers)))
            if not self.multi_output:
                self.log(FusionDecision(DecisionKind.BOUNDARY, "multi_output_off", facts.label(n),
                                        detail="fusion_multi_output is off", consumers=len(consumers)))
                continue
            rejected: list[Rejection] = []
            for c in consumers:
                first = facts.label(part.first(c))
                rejection, _ = self.check(part.members[gid] | part.members[c])
                if rejection is None:
                    self._merged({gid, c})
                    self.log(FusionDecision(DecisionKind.FUSED, "extra_output", facts.label(n), first,
                                            consumers=len(consumers)))
                    break
                rejected.append(Rejection(rejection.rule, rejection.reason, first))
            else:
                self.log(FusionDecision(DecisionKind.BOUNDARY, "no_consumer_fits", facts.label(n),
                                        consumers=len(consumers), rejected=tuple(rejected)))
        if changed:
            self.graph.sort()
            facts.refresh()

    def _take_views(self) -> None:
        """Phase 3: an opaque op takes the views of its operands and result (views.py), when the capacity
        function says its template reads through them; else the chain without its farthest views."""
        facts, part = self.facts, self.partition
        for op in [n for n in facts.compute if facts.pattern[n] == Category.OPAQUE]:
            for chain in view_chains(facts, part, op):
                for length in range(len(chain), 0, -1):
                    taken = chain[:length]
                    gids = {part.group[op]} | part.groups_of(set(taken))
                    rejection, _ = self.check(part.union(gids), gids=gids)
                    labels = tuple(facts.labels_of(taken))
                    if rejection is None:
                        self._merged(gids)
                        self.log(FusionDecision(DecisionKind.FUSED, "view", labels[0], facts.label(op), via=labels))
                        break
                    if length == len(chain):
                        self.log(FusionDecision(DecisionKind.NOT_FUSED, "view", labels[0], facts.label(op),
                                                f"{rejection.rule}: {rejection.reason}", labels))

    def _read_views(self) -> None:
        """Phase 4: each lone view goes, as a private copy, into every elementwise or row kernel reading it that
        can read its input through it (views.py); it stays a kernel of its own for the other readers."""
        facts, part = self.facts, self.partition
        changed = False
        for n in reversed(list(facts.compute)):  # readers first: a chain of views joins one view at a time
            if not read_view(facts, part, n):
                continue
            taken: list[int] = []
            refused: list[tuple[int, Rejection]] = []
            for c in self._consumer_groups(n):
                found = classify(facts, facts.ordered(part.members[c]), self.limits)
                if isinstance(found, Rejection) or found.kind not in (KernelKind.ELEMENTWISE, KernelKind.ROW_REDUCE):
                    refused.append((c, Rejection("view_member", "not an elementwise or row kernel")))
                    continue
                rejection, _ = self.check(part.members[c] | {n}, dup=n)
                if rejection is None:
                    taken.append(c)
                else:
                    refused.append((c, rejection))
            label = facts.label(n)
            for c in taken:
                self.log(FusionDecision(DecisionKind.FUSED, "view", label, self._reader_label(c), via=(label,)))
            for c, r in refused:
                if r.rule != "view_member" or taken:
                    self.log(FusionDecision(DecisionKind.NOT_FUSED, "view", label, self._reader_label(c),
                                            f"{r.rule}: {r.reason}", (label,)))
            if taken:
                part.duplicate(n, taken, keep=bool(refused))
                changed = True
        if changed:
            self.graph.sort()
            facts.refresh()

    def _write_views(self) -> None:
        """Phase 5: an elementwise kernel takes the lone views below a value it computes and writes its result
        through them (views.py `write_chain`), when the capacity function says its template can; else the chain
        without its farthest views."""
        facts, part = self.facts, self.partition
        for n in list(facts.compute):
            gid = part.group[n]
            if facts.pattern[n] > Category.INJECTIVE or part.size(gid) == 1:
                continue   # n: computed, or the last view a kernel already writes through (phase 1 may add one)
            chain = write_chain(facts, part, n)
            if not chain:
                continue
            found = classify(facts, facts.ordered(part.members[gid]), self.limits)
            if isinstance(found, Rejection) or found.kind is not KernelKind.ELEMENTWISE:
                continue
            for length in range(len(chain), 0, -1):
                taken = chain[:length]
                gids = {gid} | part.groups_of(set(taken))
                rejection, _ = self.check(part.union(gids))
                labels = tuple(facts.labels_of(taken))
                if rejection is None:
                    self._merged(gids)
                    self.log(FusionDecision(DecisionKind.FUSED, "view", labels[0], self._reader_label(gid), via=labels))
                    break
                if length == len(chain):
                    self.log(FusionDecision(DecisionKind.NOT_FUSED, "view", labels[0], self._reader_label(gid),
                                            f"{rejection.rule}: {rejection.reason}", labels))

    def _reader_label(self, gid: int) -> str:
        """A kernel named by its first op that is not a view (the views it reads through come first)."""
        members = self.partition.members[gid]
        ops_ = [m for m in members if not ops.get(m.op).strided_view] or list(members)
        return self.facts.label(min(ops_, key=self.facts.pos.__getitem__))

    def _why_not_duplicate(self, n: Node, consumers: list[int]) -> Rejection | None:
        facts, part = self.facts, self.partition
        if not self.duplicate:
            return Rejection("duplicate_off", "fusion_duplicate is off")
        own = part.members[part.group[n]]
        if len(own) > 1:
            return Rejection("shared_kernel", f"its kernel also holds {facts.joined_labels(own - {n})}")
        if any(v in facts.graph_outputs for v in n.values):
            return Rejection("graph_output", "its value is a graph output, written to GM anyway")
        if facts.expensive(n):
            return Rejection("expensive", f"{n.op} is expensive to recompute")
        if facts.pattern[n] > Category.BROADCAST:
            return Rejection("not_elementwise",
                             f"{n.op} is {facts.pattern[n].name}, only elementwise/broadcast ops are recomputed")
        out = n.outputs[0]
        full = [v for v in n.inputs if not is_scalar_const(v) and v.type.shape == out.shape]
        if len(full) > 1:
            return Rejection("full_operands", f"it reads {len(full)} operands of its full size: recomputing it in "
                             "every consumer reads more than it saves")
        for c in consumers:
            rejection, _ = self.check(part.members[c] | {n}, dup=n)
            if rejection:
                first = facts.label(part.first(c))
                return Rejection(rejection.rule, f"the kernel of {first} cannot take it: {rejection.reason}", first)
        return None

    # -- results ---------------------------------------------------------------------
    def schedule(self) -> list[list[Node]]:
        return self.partition.schedule()

    def plan(self, gid: int, nodes: list[Node]) -> KernelPlan:
        """The plan of one scheduled kernel (`nodes` in topological order)."""
        structure = classify(self.facts, nodes, self.limits)
        if isinstance(structure, Rejection):  # every kept group passed these rules when it was formed
            raise AssertionError(f"fusion kept a kernel its own rule {structure.rule!r} refuses: {structure.reason}")
        candidate = self.candidate(nodes, structure)
        # read or written through by strides: they do not make it a data move
        views = set(read_views(self.facts, nodes)) | set(write_views(self.facts, nodes))
        category = max(self.facts.pattern[n] for n in ([n for n in nodes if n not in views] or nodes))
        working_set = self.verdict(candidate).working_set
        return KernelPlan(gid, self.graph, nodes, list(candidate.inputs), list(candidate.outputs), category,
                          structure, working_set)
