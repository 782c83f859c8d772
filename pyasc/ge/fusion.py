"""Elementwise/buffer fusion: group the graph's ops into device kernels.

The algorithm is TVM's FuseOps (a post-dominator tree over the dataflow
graph; each op tries to join the group of its immediate post-dominator
together with every op on the paths between them), with the rules an NPU
vector/cube split needs and every rejection logged with a reason.

Op kinds come from the registry categories, ELEMWISE < BROADCAST <
INJECTIVE < REDUCE < MATMUL < OPAQUE. A broadcasting op whose operands all
have its output shape counts as ELEMWISE. Scalar constants are free (not a
buffer, not an edge); other constants are ordinary kernel inputs. The
composites softmax / log_softmax / layer_norm / rms_norm count as row
reductions whose output has the input's shape. Graph outputs are side
writes: a value the caller gets back may sit inside a group (it becomes
one of the kernel's outputs), so it does not stop fusion.

What may share a kernel (`_GraphFuser.check`, the single source of every
"why not fused"):
- elementwise and broadcast ops, any number (up to the size knob);
- reductions with their elementwise/broadcast prologue; reductions over the
  trailing axes ("rows") also with elementwise/broadcast epilogues and with
  further reductions over the same rows (softmax, layer norm = one kernel);
  a reduction over leading axes takes no epilogue; ops after a reduction
  without keepdims stay in the reduced shape (numpy would broadcast a
  dropped axis against the wrong dimension);
- one matmul with an elementwise epilogue of its output shape (what FixPipe
  and the vector unit apply on the way out); never a prologue, never a
  matmul together with a reduction;
- never an INJECTIVE (transpose, reshape, slice, transdata) or OPAQUE op:
  GE buffer fusion fuses elementwise/broadcast ops only, so data-movement
  ops are kernels of their own; an If is one opaque step and each branch
  graph is fused on its own.
Guards: group size (knob `fusion_max_ops`, default 64), at most
`fusion_max_users` (6) users of one value inside a group, the working set
with double buffering fits the chip's UB (one 32-byte block per buffer for
elementwise groups, one full row per row-spanning buffer for row groups,
one 16x16 fractal per epilogue buffer for matmul groups, plus one fp32
row of scratch per softmax/norm composite; x2; a symbolic row length skips
the check and leaves `KernelPlan.working_set` None), and no group
may create a cycle between kernels (reachability check on every merge).

Phases: (0) matmul groups take their epilogue; (1) every other op tries its
post-dominator; (2) a producer whose consumers ended up in several kernels
is duplicated into each of them when cheap (not `OpDef.expensive`,
elementwise/broadcast, effectively unary, not a graph output; knob
`fusion_duplicate`), otherwise its output goes to GM: it is fused into the
first consumer kernel that can take it, as an extra output the others read
(knob `fusion_multi_output`), or stays a kernel of its own.

Results: every compute node gets attr "fusion_group" (ids unique over the
root graph and all branches, numbered in schedule order);
`ctx.state.kernels` is the flat schedule described in ge/plan.py (each
graph's kernels in a topological order of the kernel DAG, an If's branch
kernels right after the If, then-branch first); `ctx.state.fusion_decisions`
records every decision (ge/decisions.py): FUSED, NOT_FUSED (with the rule
that refused), DUPLICATED, NOT_DUPLICATED, BOUNDARY and OWN_KERNEL for
data-movement ops and Ifs. Ops are named "exp %2" (op and canonical dump
name in the graph before fusion; "%1.then_branch/%0" inside a branch).

Rule names: merges "post_dominator", "extra_output", "duplicate"; refusals
"max_ops", "data_movement_member", "two_matmuls", "matmul_with_reduction",
"matmul_prologue", "matmul_epilogue_shape", "column_reduction_shared",
"column_reduction_epilogue", "different_rows", "dropped_axes",
"not_row_shaped", "max_users", "cycle", "capacity"; duplication refusals
"duplicate_off", "shared_kernel", "graph_output", "expensive",
"not_elementwise", "full_operands" (or the consumer kernel's refusal);
boundaries "no_consumer_fits", "multi_output_off"; own kernels
"data_movement", "control"; notes "opt_level_0", "no_chip", "unfused". At opt_level 0 every compute node is its own kernel. The
pass is root_only (it fuses the branches itself) and may run again: it
recomputes all groups (duplicates made by a previous run simply stay).
"""
from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from .. import ops
from ..ir import Graph, Node, Sym, Value, node_names
from ..ops.common import broadcasts_to
from ..ops.registry import Category
from .decisions import DecisionKind, FusionDecision, Rejection
from .passes import Pass, PassContext
from .plan import KernelKind, KernelPlan, KernelStructure
from .state import OptimizerState

DEFAULT_UB_BYTES = 192 * 1024
BLOCK_BYTES = 32           # UB alignment: the minimum tile of one buffer
FRACTAL_ELEMS = 16 * 16    # minimum matmul output tile
UNFUSED_NOTE = "fusion did not run (disabled): one kernel per op, nodes carry no fusion_group"
_KINDS = {"elementwise": KernelKind.ELEMENTWISE, "row": KernelKind.ROW_REDUCE, "column": KernelKind.COLUMN_REDUCE,
          "matmul": KernelKind.MATMUL, "opaque": KernelKind.DATA_MOVEMENT}
DEFAULT_KNOBS = {"fusion_max_ops": 64, "fusion_max_users": 6, "fusion_duplicate": True, "fusion_multi_output": True}


@dataclass(frozen=True)
class _Reduction:
    """A reduction's iteration space: `rows` = its input shape, reducing the last `k` axes.

    `k is None`: it reduces leading (non-trailing) axes, a column reduction.
    """

    rows: tuple[Any, ...]
    k: int | None
    keepdims: bool           # output keeps the reduced axes as 1 (composites: output = input shape)
    composite: bool


@dataclass
class _Structure:
    """What `check` learned about a candidate group (used for the UB estimate and the plan)."""

    kind: str = "elementwise"                # "elementwise" | "row" | "column" | "matmul" | "opaque"
    rows: tuple[Any, ...] = ()
    k: int = 0
    dropped: frozenset = frozenset()         # nodes holding per-row values without the reduced axes
    matmul: Node | None = None


def _is_scalar_const(v: Value) -> bool:
    return v.node.op == "Const" and v.type.numel == 1


def _align(n: int, a: int) -> int:
    return -(-n // a) * a


class _GraphFuser:
    """Fusion state for one graph (root or branch): node kinds, users, post-dominators, groups."""

    def __init__(self, graph: Graph, ub_bytes: int, knobs: dict[str, Any], log: Callable[[str], None],
                 prefix: str = ""):
        self.graph = graph
        self.ub_bytes = ub_bytes
        self.max_ops = int(knobs["fusion_max_ops"])
        self.max_users = int(knobs["fusion_max_users"])
        self.duplicate = bool(knobs["fusion_duplicate"])
        self.multi_output = bool(knobs["fusion_multi_output"])
        self.log = log
        # "exp %2": the op and its canonical dump name, fixed at the start so the log names the ops
        # as the dump of the graph before fusion shows them
        self.labels: dict[Node, str] = {n: f"{n.op} {prefix}%{name}" for n, name in node_names(graph).items()}
        self.group: dict[Node, int] = {}
        self.members: dict[int, set[Node]] = {}
        self._refresh()
        for i, n in enumerate(self.compute):
            self.group[n] = i
            self.members[i] = {n}
        # A topological order of the kernel DAG (groups as nodes), kept valid across merges:
        # `order[slot]` is a group id or None (a slot freed by a merge), `slot[gid]` its index.
        # The cycle check only has to look at groups between the merged ones in this order.
        self.order: list[int | None] = list(range(len(self.compute)))
        self.slot: dict[int, int] = {i: i for i in range(len(self.compute))}

    # -- graph facts ------------------------------------------------------
    def _refresh(self) -> None:
        g = self.graph
        self.pos = {n: i for i, n in enumerate(g.nodes)}
        self.compute = [n for n in g.nodes if not ops.get(n.op).leaf]
        self.computed = set(self.compute)
        self.uses = g.users()
        self.graph_outputs = set(g.outputs)
        self.pattern = {n: self._pattern(n) for n in self.compute}
        self.reduction = {n: self._reduction(n) for n in self.compute if self.pattern[n] == Category.REDUCE}

    def users(self, n: Node) -> list[Node]:
        return self.uses.users(n)

    def _pattern(self, n: Node) -> Category:
        cat = ops.get(n.op).category
        if cat == Category.BROADCAST and all(
            v.type.shape == t.shape for v in n.inputs if not _is_scalar_const(v) for t in n.outputs
        ):
            return Category.ELEMWISE  # a broadcast edge between equal shapes is elementwise
        return cat

    def _reduction(self, n: Node) -> _Reduction:
        rows = tuple(n.inputs[0].type.shape)
        ndim = len(rows)
        facts = ops.get(n.op)
        axes = facts.reduced_axes(n.attrs, ndim)
        composite = facts.row_composite
        keep = composite or bool(n.attrs.get("keepdims"))  # a row composite's output has its input's shape
        trailing = axes == tuple(range(ndim - len(axes), ndim))
        return _Reduction(rows, len(axes) if trailing else None, keep, composite)

    def expensive(self, n: Node) -> bool:
        return ops.get(n.op).expensive

    def label(self, n: Node) -> str:
        return self.labels.get(n) or f"{n.op} %?"

    def _ordered_labels(self, nodes: Iterator[Node] | list[Node] | set[Node]) -> list[str]:
        return [self.label(n) for n in sorted(nodes, key=self.pos.__getitem__)]

    def _labels(self, nodes: Iterator[Node] | list[Node] | set[Node]) -> str:
        return ", ".join(self._ordered_labels(nodes))

    # -- post-dominator tree ----------------------------------------------
    def post_dominators(self) -> dict[Node, Node | None]:
        """Immediate post-dominator of each compute node among compute nodes (graph outputs are side writes)."""
        pdom: dict[Node, Node | None] = {}
        depth: dict[Node, int] = {}

        def lca(a: Node | None, b: Node | None) -> Node | None:
            while a is not b:
                if a is None or b is None:
                    return None
                if depth[a] < depth[b]:
                    b = pdom[b]
                elif depth[b] < depth[a]:
                    a = pdom[a]
                else:
                    a, b = pdom[a], pdom[b]
            return a

        for n in reversed(self.compute):
            us = self.users(n)
            parent: Node | None = us[0] if us else None
            for u in us[1:]:
                parent = lca(parent, u)
            pdom[n] = parent
            depth[n] = depth[parent] + 1 if parent is not None else 1
        return pdom

    def between(self, src: Node, dst: Node) -> set[Node]:
        """Nodes on some path src -> dst, both ends excluded."""
        limit = self.pos[dst]
        fwd: set[Node] = set()
        stack = [src]
        while stack:
            for u in self.users(stack.pop()):
                if u not in fwd and self.pos[u] <= limit:
                    fwd.add(u)
                    stack.append(u)
        bwd: set[Node] = set()
        stack = [dst]
        floor = self.pos[src]
        while stack:
            for v in stack.pop().inputs:
                p = v.node
                if p in self.computed and p not in bwd and self.pos[p] >= floor:
                    bwd.add(p)
                    stack.append(p)
        return (fwd & bwd) - {src, dst}

    # -- legality ---------------------------------------------------------
    def check(self, group: set[Node], dup: Node | None = None) -> tuple[Rejection | None, _Structure, int | None]:
        """(why not, structure, working set in bytes before double buffering) for a candidate group.

        `dup`: a member that will be a private copy, so its uses outside the
        group do not count (duplication into one consumer kernel).
        """
        order = sorted(group, key=self.pos.__getitem__)
        st = _Structure()
        if len(order) > self.max_ops:
            return (Rejection("max_ops", f"the kernel would have {len(order)} ops, more than fusion_max_ops={self.max_ops}"),
                    st, None)
        if len(order) == 1 and self.pattern[order[0]] in (Category.INJECTIVE, Category.OPAQUE):
            st.kind = "opaque"
            return None, st, self._working_set(order, st)
        for n in order:
            p = self.pattern[n]
            if p in (Category.INJECTIVE, Category.OPAQUE):
                return (Rejection("data_movement_member", f"{self.label(n)} is {p.name}: only elementwise/broadcast "
                                  "ops, reductions and matmul epilogues share a kernel"), st, None)
        mms = [n for n in order if self.pattern[n] == Category.MATMUL]
        reds = [n for n in order if self.pattern[n] == Category.REDUCE]
        if len(mms) > 1:
            return Rejection("two_matmuls", f"two matmul anchors {self._labels(mms)} in one kernel"), st, None
        if mms and reds:
            return (Rejection("matmul_with_reduction", f"matmul {self.label(mms[0])} and reduction "
                              f"{self.label(reds[0])} are both complex anchors and never share a kernel"), st, None)
        if mms:
            reason = self._check_matmul(mms[0], order, st)
        elif reds:
            reason = self._check_reductions(reds, order, st)
        else:
            reason = None
        if reason:
            return reason, st, None
        for n in order:
            inside = sum(1 for u in self.users(n) if u in group)
            if inside > self.max_users:
                return (Rejection("max_users", f"{self.label(n)} would feed {inside} ops inside one kernel, more than "
                                  f"fusion_max_users={self.max_users}"), st, None)
        cycle = self._cycle(group, dup)
        if cycle:
            return cycle, st, None
        ws = self._working_set(order, st)
        if ws is not None and 2 * ws > self.ub_bytes:
            return (Rejection("capacity", f"working set 2 x {ws} B = {2 * ws} B (double-buffered) does not fit "
                              f"the {self.ub_bytes} B UB"), st, ws)
        return None, st, ws

    def _descendants(self, n: Node, group: set[Node]) -> set[Node]:
        seen: set[Node] = set()
        stack = [n]
        while stack:
            for u in self.users(stack.pop()):
                if u in group and u not in seen:
                    seen.add(u)
                    stack.append(u)
        return seen

    def _check_matmul(self, mm: Node, order: list[Node], st: _Structure) -> Rejection | None:
        st.kind, st.matmul = "matmul", mm
        after = self._descendants(mm, set(order))
        out_shape = mm.outputs[0].shape
        for n in order:
            if n is mm:
                continue
            if n not in after:
                return Rejection("matmul_prologue", f"{self.label(n)} would be a prologue of matmul {self.label(mm)}: "
                                 "the cube reads its operands from GM through L1, only an epilogue fuses")
            if n.outputs[0].shape != out_shape:
                return Rejection("matmul_epilogue_shape", f"{self.label(n)} has shape {n.outputs[0].shape}, not the "
                                 f"matmul output shape {out_shape}: not an elementwise epilogue")
        return None

    def _check_reductions(self, reds: list[Node], order: list[Node], st: _Structure) -> Rejection | None:
        info = [self.reduction[r] for r in reds]
        group = set(order)
        columns = [r for r, i in zip(reds, info) if i.k is None]
        if columns:
            c = columns[0]
            if len(reds) > 1:
                other = next(r for r in reds if r is not c)
                return Rejection("column_reduction_shared", f"{self.label(c)} reduces leading axes and cannot share "
                                 f"a kernel with another reduction ({self.label(other)})")
            after = self._descendants(c, group)
            if after:
                return Rejection("column_reduction_epilogue", f"{self.label(c)} reduces leading axes (not the rows): "
                                 f"a column reduction takes no epilogue ({self._labels(after)})")
            st.kind, st.rows = "column", info[0].rows
            return None
        head = info[0]
        for r, i in zip(reds, info):
            if (i.rows, i.k) != (head.rows, head.k):
                return Rejection("different_rows", f"{self.label(reds[0])} reduces the last {head.k} axes of "
                                 f"{head.rows} but {self.label(r)} the last {i.k} of {i.rows}: not the same rows")
        st.kind, st.rows, st.k = "row", info[0].rows, info[0].k
        reduced = st.rows[: len(st.rows) - st.k]
        dropped: set[Node] = set()
        for n in order:
            shape = n.outputs[0].shape
            if n in self.reduction:
                r = self.reduction[n]
                if not r.keepdims and st.k < len(st.rows):
                    dropped.add(n)
                continue
            fed = [v.node for v in n.inputs if v.node in dropped]
            keep_shape = tuple(st.rows[: len(st.rows) - st.k]) + (1,) * st.k
            if fed and n.op == "expand_dims" and shape == keep_shape:
                continue  # puts the reduced axes back: a keepdims value again
            if fed:
                if shape != reduced:
                    return Rejection("dropped_axes", f"{self.label(n)} broadcasts {self.label(fed[0])} (reduced "
                                     f"without keepdims, shape {reduced}) against shape {shape}: numpy aligns trailing "
                                     "axes, not the reduced rows")
                dropped.add(n)
            elif not broadcasts_to(shape, st.rows, symbols_agree=False):
                return Rejection("not_row_shaped", f"{self.label(n)} has shape {shape}, which does not follow the "
                                 f"rows of {st.rows}")
        st.dropped = frozenset(dropped)
        return None

    def _cycle(self, group: set[Node], dup: Node | None) -> Rejection | None:
        """Would running `group` (a union of whole groups) as one kernel create a cycle between kernels?

        It would if a path leaves the group and comes back. The path is one of
        kernels, not just of ops: it may enter another kernel at one op and
        leave it from another (kernel B = {p, q} with p reading the group and
        q feeding it), so reaching a kernel continues from all its ops. Only
        kernels placed between the group's first and last kernel in the
        topological order `self.order` can lie on such a path.
        """
        gids = {self.group[n] for n in group}
        hi = max(self.slot[g] for g in gids)
        stack: list[tuple[Node, Node, Node]] = []  # (node reached, member it left from, first outside node)
        for n in group:
            if n is dup:
                continue  # its uses outside the group go to private copies
            stack.extend((u, n, u) for u in self.users(n) if u not in group)
        seen: set[int] = set()
        while stack:
            x, origin, exit_ = stack.pop()
            g = self.group[x]
            if g in gids:
                return Rejection("cycle", f"fusing would create a cycle: {self.label(origin)} -> {self.label(exit_)} "
                                 f"-> ... -> {self.label(x)} leaves the kernel and comes back")
            if g in seen or self.slot[g] > hi:
                continue
            seen.add(g)
            stack.extend((u, origin, exit_) for m in self.members[g] for u in self.users(m) if self.group[u] != g)
        return None

    def _working_set(self, order: list[Node], st: _Structure) -> int | None:
        """UB bytes of the group's minimum tiles, single-buffered (None: row length is symbolic)."""
        if st.kind == "opaque" and ops.get(order[0].op).is_control:
            return 0
        members = set(order)
        buffers: dict[Value, None] = {}
        for n in order:
            for v in n.inputs:
                if v.node not in members and not _is_scalar_const(v):
                    buffers[v] = None
            for v in n.values:
                buffers[v] = None
        if st.kind == "matmul":
            for v in st.matmul.inputs:  # operands go to L1/L0A/L0B, the bias to the bias table
                buffers.pop(v, None)
            return sum(FRACTAL_ELEMS * v.type.itemsize for v in buffers)
        if st.kind != "row":
            return BLOCK_BYTES * len(buffers)
        total = 0
        for v in buffers:
            tail = tuple(v.type.shape)[max(0, len(v.type.shape) - st.k):] if st.k else ()
            if v.node in st.dropped or all(d == 1 for d in tail):
                total += BLOCK_BYTES
            elif any(isinstance(d, Sym) for d in tail):
                return None
            else:
                total += _align(math.prod(tail) * v.type.itemsize, BLOCK_BYTES)
        row = st.rows[len(st.rows) - st.k:]
        if any(isinstance(d, Sym) for d in row):
            return None
        for n in order:
            if ops.get(n.op).row_composite:  # one fp32 row of scratch for the composite's internal steps
                total += _align(math.prod(row) * 4, BLOCK_BYTES)
        return total

    # -- grouping ---------------------------------------------------------
    def groups_of(self, nodes: set[Node]) -> set[int]:
        return {self.group[n] for n in nodes}

    def union(self, gids: set[int]) -> set[Node]:
        return set().union(*(self.members[g] for g in gids))

    def merge(self, gids: set[int]) -> int:
        """Merge groups (the caller has checked that no cycle results) and keep `self.order` topological.

        Within the window of the order spanned by the merged groups, the groups
        reachable from them move after the merged group and the others before
        it, each keeping their relative order (valid because no group is both
        reachable from the merged ones and feeding them).
        """
        keep = min(gids)
        lo = min(self.slot[g] for g in gids)
        hi = max(self.slot[g] for g in gids)
        after: set[int] = set()
        stack = [u for g in gids for m in self.members[g] for u in self.users(m)]
        while stack:
            g = self.group[stack.pop()]
            if g in gids or g in after or self.slot[g] > hi:
                continue
            after.add(g)
            stack.extend(u for m in self.members[g] for u in self.users(m))
        window = [g for g in self.order[lo:hi + 1] if g is not None]
        arranged = [g for g in window if g not in gids and g not in after] + [keep] + [
            g for g in window if g in after]
        self.order[lo:hi + 1] = arranged + [None] * (hi + 1 - lo - len(arranged))
        for i, g in enumerate(arranged, start=lo):
            self.slot[g] = i
        for g in gids - {keep}:
            del self.slot[g]
            for n in self.members.pop(g):
                self.group[n] = keep
                self.members[keep].add(n)
        return keep

    def group_pattern(self, gid: int) -> Category:
        return max(self.pattern[n] for n in self.members[gid])

    def fuse(self) -> None:
        pdom = self.post_dominators()
        for phase in (0, 1):
            for n in self.compute:
                gid = self.group[n]
                kind = self.group_pattern(gid)
                if kind in (Category.INJECTIVE, Category.OPAQUE):
                    continue
                if (phase == 0) != (kind == Category.MATMUL):
                    continue  # matmul groups take their epilogue first, as in TVM's phase 0
                target = pdom[n]
                if target is None or self.group[target] == gid:
                    continue
                path = self.between(n, target)
                gids = self.groups_of({n, target} | path)
                rejection, _, _ = self.check(self.union(gids))
                via = tuple(self._ordered_labels(path))
                if rejection:
                    self.log(FusionDecision(DecisionKind.NOT_FUSED, rejection.rule, self.label(n), self.label(target),
                                            rejection.reason, via))
                else:
                    self.merge(gids)
                    self.log(FusionDecision(DecisionKind.FUSED, "post_dominator", self.label(n), self.label(target),
                                            via=via))
        self._multi_consumer()
        for n in self.compute:
            p = self.pattern[n]
            if p in (Category.INJECTIVE, Category.OPAQUE):
                control = ops.get(n.op).is_control
                what = "control flow; each branch is fused on its own" if control else (
                    "data movement/opaque ops are not fused (GE buffer fusion fuses elementwise/broadcast ops)")
                self.log(FusionDecision(DecisionKind.OWN_KERNEL, "control" if control else "data_movement",
                                        self.label(n), detail=f"{p.name}: {what}"))

    def _consumer_groups(self, n: Node) -> list[int]:
        own = self.group[n]
        seen: list[int] = []
        for u in sorted(self.users(n), key=self.pos.__getitem__):
            g = self.group[u]
            if g != own and g not in seen:
                seen.append(g)
        return seen

    def _multi_consumer(self) -> None:
        """Phase 2: producers whose consumers sit in several kernels."""
        changed = False
        for n in list(self.compute):
            gid = self.group[n]
            if self.group_pattern(gid) in (Category.INJECTIVE, Category.OPAQUE):
                continue
            consumers = self._consumer_groups(n)
            if len(consumers) < 2:
                continue
            refusal = self._why_not_duplicate(n, consumers)
            if refusal is None:
                self._duplicate(n, consumers)
                changed = True
                continue
            self.log(FusionDecision(DecisionKind.NOT_DUPLICATED, refusal.rule, self.label(n), refusal.consumer,
                                    refusal.reason, consumers=len(consumers)))
            rejected: list[Rejection] = []
            if self.multi_output:
                for c in consumers:
                    first = self.label(min(self.members[c], key=self.pos.__getitem__))
                    rejection, _, _ = self.check(self.members[gid] | self.members[c])
                    if rejection is None:
                        self.merge({gid, c})
                        self.log(FusionDecision(DecisionKind.FUSED, "extra_output", self.label(n), first,
                                                consumers=len(consumers)))
                        break
                    rejected.append(Rejection(rejection.rule, rejection.reason, first))
                else:
                    self.log(FusionDecision(DecisionKind.BOUNDARY, "no_consumer_fits", self.label(n),
                                            consumers=len(consumers), rejected=tuple(rejected)))
            else:
                self.log(FusionDecision(DecisionKind.BOUNDARY, "multi_output_off", self.label(n),
                                        detail="fusion_multi_output is off", consumers=len(consumers)))
        if changed:
            self.graph.sort()
            self._refresh()

    def _why_not_duplicate(self, n: Node, consumers: list[int]) -> Rejection | None:
        if not self.duplicate:
            return Rejection("duplicate_off", "fusion_duplicate is off")
        if len(self.members[self.group[n]]) > 1:
            return Rejection("shared_kernel", f"its kernel also holds {self._labels(self.members[self.group[n]] - {n})}")
        if any(v in self.graph_outputs for v in n.values):
            return Rejection("graph_output", "its value is a graph output, written to GM anyway")
        if self.expensive(n):
            return Rejection("expensive", f"{n.op} is expensive to recompute")
        if self.pattern[n] > Category.BROADCAST:
            return Rejection("not_elementwise",
                             f"{n.op} is {self.pattern[n].name}, only elementwise/broadcast ops are recomputed")
        out = n.outputs[0]
        full = [v for v in n.inputs if not _is_scalar_const(v) and v.type.shape == out.shape]
        if len(full) > 1:
            return Rejection("full_operands", f"it reads {len(full)} operands of its full size: recomputing it in "
                             "every consumer reads more than it saves")
        for c in consumers:
            rejection, _, _ = self.check(self.members[c] | {n}, dup=n)
            if rejection:
                first = self.label(min(self.members[c], key=self.pos.__getitem__))
                return Rejection(rejection.rule, f"the kernel of {first} cannot take it: {rejection.reason}", first)
        return None

    def _duplicate(self, n: Node, consumers: list[int]) -> None:
        base = self.label(n)
        self.merge({self.group[n], consumers[0]})
        for j, c in enumerate(consumers[1:], start=1):
            attrs = {k: v for k, v in n.attrs.items() if k != "fusion_group"}
            copy = Node(n.op, list(n.inputs), attrs, list(n.outputs), n.loc, f"{n.name}_dup{j}" if n.name else None)
            self.graph.append(copy)
            self.uses.added(copy)  # later cycle checks in this phase must see the copy's in-edges
            for u in [u for u in self.users(n) if u in self.members[c]]:
                for i, v in enumerate(u.inputs):
                    if v.node is n:
                        self.uses.replace_input(u, i, Value(copy, v.index))
            self.labels[copy] = f"{base}.dup{j}"  # "relu %0.dup1"
            self.group[copy] = c
            self.members[c].add(copy)
            self.computed.add(copy)
            self.pattern[copy] = self.pattern[n]
            self.pos[copy] = len(self.pos)
        self.log(FusionDecision(DecisionKind.DUPLICATED, "duplicate", base, consumers=len(consumers),
                                detail=f"cheap: {n.op} is not expensive and reads at most one full-size operand"))

    # -- results ------------------------------------------------------------
    def schedule(self) -> list[list[Node]]:
        """Groups in a topological order of the kernel DAG (ties: earliest first op)."""
        first = {g: min(self.pos[n] for n in ms) for g, ms in self.members.items()}
        succ: dict[int, set[int]] = {g: set() for g in self.members}
        indeg = {g: 0 for g in self.members}
        for n in self.compute:
            for u in self.users(n):
                a, b = self.group[n], self.group[u]
                if a != b and b not in succ[a]:
                    succ[a].add(b)
                    indeg[b] += 1
        ready = [(first[g], g) for g, d in indeg.items() if d == 0]
        heapq.heapify(ready)
        out: list[list[Node]] = []
        while ready:
            _, g = heapq.heappop(ready)
            out.append(sorted(self.members[g], key=self.pos.__getitem__))
            for s in succ[g]:
                indeg[s] -= 1
                if indeg[s] == 0:
                    heapq.heappush(ready, (first[s], s))
        if len(out) != len(self.members):  # check() rejects cycles, so this is a fusion bug
            raise AssertionError(f"fusion produced a cycle between kernels in graph {self.graph.name!r}")
        return out

    def plan(self, gid: int, nodes: list[Node]) -> KernelPlan:
        members = set(nodes)
        inputs: dict[Value, None] = {}
        outputs: list[Value] = []
        for n in nodes:
            for v in n.inputs:
                if v.node not in members:
                    inputs[v] = None
            for v in n.values:
                if v in self.graph_outputs or any(u not in members for u in self.uses.readers(v)):
                    outputs.append(v)
        _, st, ws = self.check(members)
        category = max(self.pattern[n] for n in nodes)
        anchor = next((n for n in nodes if self.pattern[n] == Category.MATMUL), None) or next(
            (n for n in nodes if self.pattern[n] == Category.REDUCE), nodes[0])
        return KernelPlan(gid, self.graph, nodes, list(inputs), outputs, category, self._public(st, anchor),
                          None if ws is None else 2 * ws)

    def _public(self, st: _Structure, anchor: Node) -> KernelStructure:
        kind = _KINDS[st.kind]
        if st.kind == "opaque" and ops.get(anchor.op).is_control:
            kind = KernelKind.CONTROL
        axes: tuple[int, ...] = ()
        if kind is KernelKind.ROW_REDUCE:
            axes = tuple(range(len(st.rows) - st.k, len(st.rows)))
        elif kind is KernelKind.COLUMN_REDUCE:
            axes = ops.get(anchor.op).reduced_axes(anchor.attrs, len(st.rows))
        return KernelStructure(kind, anchor, tuple(st.rows), st.k, axes, frozenset(st.dropped))


def _settings(ctx: PassContext) -> tuple[int, dict[str, Any]]:
    """(UB bytes, fusion knobs) from the context; raises ValueError for unusable values."""
    ub = DEFAULT_UB_BYTES
    if ctx.chip is not None:
        ub = getattr(ctx.chip, "ub_bytes", None)
        if not isinstance(ub, int) or isinstance(ub, bool) or ub <= 0:
            raise ValueError(f"fusion needs the chip's UB capacity: ctx.chip.ub_bytes must be a positive int, "
                             f"got {ub!r} from {type(ctx.chip).__name__}")
    knobs = {k: ctx.knobs.get(k, d) for k, d in DEFAULT_KNOBS.items()}
    for k in ("fusion_max_ops", "fusion_max_users"):
        if not isinstance(knobs[k], int) or isinstance(knobs[k], bool) or knobs[k] < 1:
            raise ValueError(f"knob {k} must be an int >= 1, got {knobs[k]!r}")
    return ub, knobs


def _branch_order(n: Node) -> list[str]:
    """Subgraph attrs of `n` in the order their kernels are scheduled (the registry's `subgraph_attrs`)."""
    return [a for a in ops.get(n.op).subgraph_attrs if a in n.subgraphs]


def _run(graph: Graph, ub: int, knobs: dict[str, Any], fuse: bool,
         log: list[FusionDecision]) -> list[KernelPlan]:
    for g in graph.walk():
        for n in g.nodes:
            n.attrs.pop("fusion_group", None)
    counter = itertools.count()
    kernels: list[KernelPlan] = []

    def visit(g: Graph, prefix: str) -> None:
        fuser = _GraphFuser(g, ub, knobs, log.append, prefix)
        if fuse:
            fuser.fuse()
        for nodes in fuser.schedule():
            gid = next(counter)
            for n in nodes:
                n.attrs["fusion_group"] = gid
            kernels.append(fuser.plan(gid, nodes))
            for n in nodes:
                for attr in _branch_order(n):
                    visit(n.subgraphs[attr], f"{prefix}%{node_names(g)[n]}.{attr}/")  # "exp %3.then_branch/%1"

    visit(graph, "")
    return kernels


def singleton_kernels(graph: Graph) -> list[KernelPlan]:
    """One kernel per compute node (the opt_level 0 schedule) without touching the graph's attrs."""
    kernels: list[KernelPlan] = []
    counter = itertools.count()

    def visit(g: Graph) -> None:
        fuser = _GraphFuser(g, DEFAULT_UB_BYTES, DEFAULT_KNOBS, lambda _: None)
        for nodes in fuser.schedule():
            kernels.append(fuser.plan(next(counter), nodes))
            for n in nodes:
                for attr in _branch_order(n):
                    visit(n.subgraphs[attr])

    visit(graph)
    return kernels


def schedule_for(graph: Graph, state: OptimizerState) -> tuple[list[KernelPlan], bool]:
    """The kernel schedule for `graph`: fusion's, or (True) one kernel per op when fusion has none for it.

    The one place the one-kernel-per-op fallback is made: when fusion did not
    run at all, the fallback becomes the state's schedule, with a note.
    """
    kernels = state.kernels
    has_compute = any(not ops.get(n.op).leaf for n in graph.nodes)
    if kernels is not None and (not has_compute or any(k.graph is graph for k in kernels)):
        return kernels, False
    fallback = singleton_kernels(graph)
    if state.kernels is None:
        state.kernels = fallback
        state.fusion_decisions.append(FusionDecision(DecisionKind.NOTE, "unfused", detail=UNFUSED_NOTE))
    return fallback, True


class FusionPass(Pass):
    """Annotates "fusion_group" on every compute node; stores the schedule and decisions in `ctx.state`.

    Runs once on the root graph and fuses every branch graph itself, so that
    group ids are unique across the whole graph and the schedule is one list.
    """

    name = "fusion"
    opt_level = 0
    root_only = True

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        ub, knobs = _settings(ctx)
        log: list[FusionDecision] = []
        fuse = ctx.opt_level >= 1
        if not fuse:
            log.append(FusionDecision(DecisionKind.NOTE, "opt_level_0", detail="opt_level 0: fusion off, one kernel per op"))
        if ctx.chip is None:
            log.append(FusionDecision(DecisionKind.NOTE, "no_chip",
                                      detail=f"no chip given: assuming a {ub} B UB (the 910b figure)"))
        ctx.state.kernels = _run(graph, ub, knobs, fuse, log)
        ctx.state.fusion_decisions = log
        return True
