"""Partitioning: the groups of one graph's compute nodes, merges, the cycle check, duplication, the schedule.

Groups (kernels) are kept in a topological order of the kernel DAG across
merges: `order[slot]` is a group id or None (a slot freed by a merge),
`slot[gid]` its index. A merge of groups that creates no cycle keeps the
order valid by moving, within the window the merged groups span, the groups
reachable from them after the merged group and the others before it; the
cycle check therefore only looks at groups inside that window.

Duplication makes a private copy of a cheap producer for each consumer
kernel but the first, *then* merges the producer into the first. The order
matters: the merge reorders the window by the edges that exist at that
moment, so the edges to the other consumer kernels must already have moved
to the copies. (Merging first let those about-to-vanish edges place a
consumer kernel after the merged one although it also feeds it: the order
stopped being topological, a later cycle check looked in the wrong window,
and fusion built a cycle between kernels.)
"""
from __future__ import annotations

import heapq

from ...ir import Node, Value
from ...ops import Category
from ..decisions import Rejection
from .analysis import GraphFacts


class Partition:
    """Which group each compute node is in, the groups' members and their topological order."""

    def __init__(self, facts: GraphFacts):
        self.facts = facts
        self.group: dict[Node, int] = {}
        self.members: dict[int, set[Node]] = {}
        for i, n in enumerate(facts.compute):
            self.group[n] = i
            self.members[i] = {n}
        self.order: list[int | None] = list(range(len(facts.compute)))
        self.slot: dict[int, int] = {i: i for i in range(len(facts.compute))}
        # members with a user in another group: where paths leave a group (merges and cycle checks walk these,
        # not every member, so growing a long kernel one op at a time stays linear)
        self.exits: dict[int, set[Node]] = {i: ({n} if facts.users(n) else set())
                                            for i, n in enumerate(facts.compute)}
        self._patterns: dict[int, Category] = {}

    def groups_of(self, nodes: set[Node]) -> set[int]:
        return {self.group[n] for n in nodes}

    def union(self, gids: set[int]) -> set[Node]:
        return set().union(*(self.members[g] for g in gids))

    def pattern(self, gid: int) -> Category:
        """The group's fusion pattern: the highest of its members' (kept per group across merges)."""
        found = self._patterns.get(gid)
        if found is None:
            found = self._patterns[gid] = max(self.facts.pattern[n] for n in self.members[gid])
        return found

    def first(self, gid: int) -> Node:
        """The group's first op in graph order (how decisions name a kernel)."""
        return min(self.members[gid], key=self.facts.pos.__getitem__)

    def size(self, gid: int) -> int:
        return len(self.members[gid])

    def merge(self, gids: set[int]) -> int:
        """Merge groups (the caller has checked that no cycle results) and keep `order` topological."""
        users = self.facts.users
        keep = max(gids, key=lambda g: (len(self.members[g]), -g))  # the largest keeps its id: relabel the rest
        lo = min(self.slot[g] for g in gids)
        hi = max(self.slot[g] for g in gids)
        after: set[int] = set()
        stack = [u for g in gids for m in self.exits[g] for u in users(m)]
        while stack:
            g = self.group[stack.pop()]
            if g in gids or g in after or self.slot[g] > hi:
                continue
            after.add(g)
            stack.extend(u for m in self.exits[g] for u in users(m))
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
        known = [self._patterns.pop(g, None) for g in gids]
        if all(k is not None for k in known):
            self._patterns[keep] = max(known)
        exits = set().union(*(self.exits.pop(g) for g in gids))
        self.exits[keep] = {m for m in exits if any(self.group[u] != keep for u in users(m))}
        return keep

    def cycle(self, group: set[Node] | None, dup: Node | None = None, gids: set[int] | None = None
              ) -> Rejection | None:
        """Would running `group` (a union of whole groups) as one kernel create a cycle between kernels?

        It would if a path leaves the group and comes back. The path is one of
        kernels, not just of ops: it may enter another kernel at one op and
        leave it from another (kernel B = {p, q} with p reading the group and
        q feeding it), so reaching a kernel continues from all its ops. Only
        kernels placed between the group's first and last kernel in the
        topological order can lie on such a path. `dup`: a member that will be
        a private copy, so its uses outside the group do not count. The groups
        may be given instead of their union (`gids`).
        """
        users, label = self.facts.users, self.facts.label
        if gids is None:
            gids = {self.group[n] for n in group}
        hi = max(self.slot[g] for g in gids)
        stack: list[tuple[Node, Node, Node]] = []  # (node reached, member it left from, first outside node)
        for g0 in gids:
            for n in self.exits[g0]:
                if n is dup:
                    continue  # its uses outside the group go to private copies
                stack.extend((u, n, u) for u in users(n) if self.group[u] not in gids)
        seen: set[int] = set()
        while stack:
            x, origin, exit_ = stack.pop()
            g = self.group[x]
            if g in gids:
                return Rejection("cycle", f"fusing would create a cycle: {label(origin)} -> {label(exit_)} -> ... -> "
                                 f"{label(x)} leaves the kernel and comes back")
            if g in seen or self.slot[g] > hi:
                continue
            seen.add(g)
            stack.extend((u, origin, exit_) for m in self.exits[g] for u in users(m) if self.group[u] != g)
        return None

    def duplicate(self, n: Node, consumers: list[int], keep: bool = False) -> None:
        """Give each consumer kernel but the first its own copy of `n`, then merge `n` into the first; `keep`:
        every consumer kernel gets a copy and `n` stays where it is (for its other readers)."""
        facts = self.facts
        base = facts.label(n)
        for j, c in enumerate(consumers if keep else consumers[1:], start=1):
            attrs = {k: v for k, v in n.attrs.items() if k != "fusion_group"}
            copy = Node(n.op, list(n.inputs), attrs, list(n.outputs), n.loc, f"{n.name}_dup{j}" if n.name else None)
            facts.graph.append(copy)
            facts.uses.added(copy)  # later cycle checks in this phase must see the copy's in-edges
            for u in [u for u in facts.users(n) if u in self.members[c]]:
                for i, v in enumerate(u.inputs):
                    if v.node is n:
                        facts.uses.replace_input(u, i, Value(copy, v.index))
            facts.add_copy(copy, n, f"{base}.dup{j}")  # "relu %0.dup1"
            self.group[copy] = c
            self.members[c].add(copy)  # its users are all in c: not an exit
            self._patterns.pop(c, None)
            for v in copy.inputs:  # but what it reads now has a user in c
                g = self.group.get(v.node)
                if g is not None and g != c:
                    self.exits[g].add(v.node)
        if not keep:
            self.merge({self.group[n], consumers[0]})

    def schedule(self) -> list[list[Node]]:
        """Groups in a topological order of the kernel DAG (ties: earliest first op), each in node order."""
        pos = self.facts.pos
        first = {g: min(pos[n] for n in ms) for g, ms in self.members.items()}
        succ: dict[int, set[int]] = {g: set() for g in self.members}
        indeg = {g: 0 for g in self.members}
        for n in self.facts.compute:
            for u in self.facts.users(n):
                a, b = self.group[n], self.group[u]
                if a != b and b not in succ[a]:
                    succ[a].add(b)
                    indeg[b] += 1
        ready = [(first[g], g) for g, d in indeg.items() if d == 0]
        heapq.heapify(ready)
        out: list[list[Node]] = []
        while ready:
            _, g = heapq.heappop(ready)
            out.append(sorted(self.members[g], key=pos.__getitem__))
            for s in succ[g]:
                indeg[s] -= 1
                if indeg[s] == 0:
                    heapq.heappush(ready, (first[s], s))
        if len(out) != len(self.members):  # merges are checked for cycles, so this is a fusion bug
            raise AssertionError(f"fusion produced a cycle between kernels in graph {self.facts.graph.name!r}")
        return out
