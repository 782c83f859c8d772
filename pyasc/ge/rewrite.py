"""The one rewrite driver: rules as data, applied by `apply_rules(graph, rules)` to a fixpoint.

In the spirit of tinygrad's `PatternMatcher` / `graph_rewrite`: a pass is a
list of `RewriteRule(name, op, fn)`; the driver sweeps the graph, offers each
node to the rules that match its op (in list order), applies the first
result, and sweeps again until a sweep changes nothing (at most `max_sweeps`).
It counts how often each rule fired (the pass statistics in the pass log).

A rule `fn(node, rewriter)` returns
- None (or False): no match, the next rule is tried;
- True: it changed `node` in place (inputs or attributes), the node stays;
- a Value: the node's single output is replaced by an existing value;
- a Node not in any graph: it is inserted where the node was, and its outputs
  replace the node's;
- a `Replacement`: new nodes to insert and the values that replace the outputs
  of the matched node, or (`at`) of a later node: a chain rule matched at the
  head of a chain (matmul -> add -> relu) replaces the chain's last node and
  removes the chain (`removed`), whose interior nodes have no reader outside it.
A replacement whose values do not have exactly the types they replace (shape,
dtype, format) is not applied.

One sweep is linear: it rebuilds the node list in order, redirecting each
node's inputs to the replacements made so far as it reaches the node, so
nodes stay in a topological order (new nodes go where the node they replace
was; every input of a replacement is defined before it) and no use list is
edited value by value. `Rewriter.uses` is the graph's use index as the sweep
found it: a rule may follow readers downstream of the node it matched (those
are untouched yet), not upstream.
"""
from __future__ import annotations

import abc
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Sequence, Union

from .. import ops
from ..ir import Graph, Node, UseIndex, Value
from .edit import same_type
from .passes import Pass, PassContext

DEFAULT_MAX_SWEEPS = 8

#: which nodes a rule looks at: an op name, a predicate on the op's registry entry, or None (every node)
OpMatch = Union[str, Callable[[ops.OpDef], bool], None]


@dataclass(frozen=True)
class Replacement:
    """What a rule rewrites: `values` replace the outputs of `at` (default: the matched node)."""

    values: Sequence[Value]
    nodes: Sequence[Node] = ()          # new nodes (not in a graph yet), inserted in order where `at` was
    at: Node | None = None              # a later node whose outputs are replaced (a chain rule)
    removed: Sequence[Node] = ()        # nodes dropped with it (the chain, the matched node included)


RuleResult = Union[None, bool, Value, Node, Replacement]


@dataclass(frozen=True)
class RewriteRule:
    name: str                                   # what the pass statistics call it
    op: OpMatch
    fn: Callable[[Node, "Rewriter"], RuleResult]

    def matches(self, node: Node) -> bool:
        if self.op is None:
            return True
        if isinstance(self.op, str):
            return node.op == self.op
        return ops.exists(node.op) and bool(self.op(ops.get(node.op)))


class Rewriter:
    """What a rule may consult during one sweep: the graph, its use index, a memo for stateful rules."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.memo: dict[str, Any] = {}   # per sweep: CSE's table of first occurrences and the like
        self._uses: UseIndex | None = None

    @property
    def uses(self) -> UseIndex:
        if self._uses is None:
            self._uses = self.graph.users()
        return self._uses


class RewriteStats(Counter):
    """Rule name -> times it fired, over every sweep (and every graph the pass ran on)."""

    @property
    def changed(self) -> bool:
        return sum(self.values()) > 0


def apply_rules(graph: Graph, rules: Sequence[RewriteRule], *, max_sweeps: int = DEFAULT_MAX_SWEEPS) -> RewriteStats:
    """Rewrite `graph` in place with `rules` until a sweep changes nothing (at most `max_sweeps` sweeps)."""
    if max_sweeps < 1:
        raise ValueError(f"apply_rules needs max_sweeps >= 1, got {max_sweeps}")
    stats = RewriteStats()
    for _ in range(max_sweeps):
        if not _Sweep(graph, rules, stats).run():
            break
    return stats


class _Sweep:
    def __init__(self, graph: Graph, rules: Sequence[RewriteRule], stats: RewriteStats):
        self.graph = graph
        self.rules = rules
        self.stats = stats
        self.rewriter = Rewriter(graph)
        self.nodes: list[Node] = []
        self.remap: dict[Value, Value] = {}
        self.removed: set[Node] = set()
        self.deferred: dict[Node, Sequence[Node]] = {}   # chain end -> the nodes that go in its place
        self.changed = False

    def run(self) -> bool:
        for node in list(self.graph.nodes):
            self._redirect(node)
            if node in self.removed:
                for new in self.deferred.pop(node, ()):
                    self._emit(new)
                continue
            if not self._rewrite(node):
                self.nodes.append(node)
        self.graph.nodes = self.nodes
        if self.remap:
            self.graph.outputs = [self.remap.get(v, v) for v in self.graph.outputs]
        return self.changed

    def _redirect(self, node: Node) -> None:
        if self.remap:
            node.inputs = [self.remap.get(v, v) for v in node.inputs]

    def _emit(self, node: Node) -> None:
        self._redirect(node)
        node.graph = self.graph
        self.nodes.append(node)

    def _rewrite(self, node: Node) -> bool:
        """Offer `node` to the rules; True when it left the node list (replaced)."""
        for rule in self.rules:
            if not rule.matches(node):
                continue
            result = rule.fn(node, self.rewriter)
            if result is None or result is False:
                continue
            if result is True:
                self._fired(rule)
                return False
            repl = _replacement(node, result)
            target = repl.at or node
            if not _fits(repl.values, target):
                continue
            self._fired(rule)
            for i, v in enumerate(repl.values):
                self.remap[target.out(i)] = v
            if target is node:
                for new in repl.nodes:
                    self._emit(new)
                return True
            self.removed.update(repl.removed)
            self.removed.add(target)
            self.deferred[target] = repl.nodes
            return node in self.removed
        return False

    def _fired(self, rule: RewriteRule) -> None:
        self.stats[rule.name] += 1
        self.changed = True


def _replacement(node: Node, result: Value | Node | Replacement) -> Replacement:
    if isinstance(result, Replacement):
        return result
    if isinstance(result, Value):
        return Replacement([result])
    return Replacement(result.values, [result])


def _fits(values: Sequence[Value], target: Node) -> bool:
    """The replacement has exactly the replaced outputs' types, and is not the node itself."""
    if len(values) != len(target.outputs) or any(v.node is target for v in values):
        return False
    return all(same_type(v.type, t) for v, t in zip(values, target.outputs))


class RulePass(Pass, abc.ABC):
    """A pass that is a list of rewrite rules: `rules(ctx)` builds them (knobs bound), the driver applies them.

    The fire counts go to the pass statistics (`ctx.stats`), so the pass log shows them.
    """

    max_sweeps: int = DEFAULT_MAX_SWEEPS

    @abc.abstractmethod
    def rules(self, ctx: PassContext) -> Sequence[RewriteRule]:
        """The pass's rules, in the order they are offered each node."""

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        stats = apply_rules(graph, self.rules(ctx), max_sweeps=self.max_sweeps)
        ctx.stats.update(stats)
        return stats.changed
