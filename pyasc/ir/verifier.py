"""Graph verifier: the invariants every pass must preserve.

`verify(graph)` checks, for the graph and recursively for every subgraph:
- every op is registered;
- every input is produced by a node of the same graph, and names an existing output;
- no cycle, and nodes are in topological order (each value defined before its use);
- Data indices are unique and exactly 0..n-1;
- graph outputs are values defined in the graph;
- every node's output types are what the op registry infers again now;
- If: the branches take the If's operands 1.. (same count and types) and
  return what the If outputs; Loop: its body takes the Loop's operands 1..;
- every symbolic dim is an expression over sizes the root graph's inputs bind.

The first violation raises `VerificationError`, whose message names the
graph (by its printed path), the node (printed canonically) and the rule.
"""
from __future__ import annotations

from functools import cached_property
from typing import Sequence

from .. import ops
from ..errors import InferError
from .graph import Graph, Node, Value, is_annotation
from .printer import format_node, node_names, subgraph_paths
from ..tensor_type import Sym, TensorType


class VerificationError(Exception):
    """A graph breaks an IR invariant. Attributes: `graph`, `node` (or None), `rule`."""

    def __init__(self, graph_path: str, rule: str, detail: str, node_text: str | None = None):
        self.graph = graph_path
        self.rule = rule
        self.node = node_text
        where = f"graph {graph_path!r}" + (f", node `{node_text}`" if node_text else "")
        super().__init__(f"verification failed in {where}: {rule}: {detail}")


def verify(graph: Graph) -> None:
    """Raise VerificationError at the first broken invariant; return None for a valid graph."""
    _Checker(graph, graph.name).run()
    _check_dim_symbols(graph)


def _check_dim_symbols(graph: Graph) -> None:
    """Every symbolic dim of the graph (and its subgraphs) is an expression over sizes its inputs bind:
    the launch evaluates it from the input shapes, so a name no input carries could never be known."""
    bound: set[str] = set()
    for n in graph.inputs:
        for d in n.outputs[0].shape:
            if isinstance(d, Sym) and d.is_name:
                bound.add(d.expr)
    for g in graph.walk():
        checker = None
        for n in g.nodes:
            for t in n.outputs:
                for d in t.shape:
                    if isinstance(d, Sym) and not d.free_symbols <= bound:
                        checker = checker or _Checker(g, g.name)
                        missing = ", ".join(sorted(d.free_symbols - bound))
                        raise checker.fail("unbound symbolic dim",
                                           f"dim {d} of {t} uses {missing}, which no input of graph "
                                           f"{graph.name!r} binds", n)


class _Checker:
    def __init__(self, graph: Graph, path: str):
        self.graph = graph
        self.path = path
        self.members = set(graph.nodes)

    # the printed names are needed only to word a failure (and a subgraph's path): made on first use
    @cached_property
    def names(self) -> dict[Node, str]:
        return node_names(self.graph)

    @cached_property
    def refs(self) -> dict[int, str]:
        return subgraph_paths(self.graph, self.path, self.names)

    def fail(self, rule: str, detail: str, node: Node | None = None) -> VerificationError:
        text = format_node(node, self.names, self.refs) if node is not None else None
        return VerificationError(self.path, rule, detail, text)

    def run(self) -> None:
        self.check_membership()
        self.check_acyclic()
        self.check_order()
        self.check_data_indices()
        self.check_outputs()
        for n in self.graph.nodes:
            if not ops.exists(n.op):
                raise self.fail("unknown op", f"op {n.op!r} is not in the op registry", n)
            # subgraphs first: a broken branch is the root cause of a mismatch the owner sees
            for key in sorted(n.subgraphs):
                sub = n.attrs[key]
                _Checker(sub, self.refs[id(sub)]).run()
            if n.op == "If":
                self.check_if(n)  # before re-inference: more precise than If's own inference error
            elif n.op == "Loop":
                self.check_loop(n)
            self.check_types(n)

    # -- structure ---------------------------------------------------------------
    def check_membership(self) -> None:
        seen: set[Node] = set()
        for n in self.graph.nodes:
            if n in seen:
                raise self.fail("duplicate node", "the same node object appears twice in the node list", n)
            seen.add(n)
        for n in self.graph.nodes:
            for i, v in enumerate(n.inputs):
                self.check_value(v, f"input {i}", n)

    def check_value(self, v: Value, what: str, node: Node | None) -> None:
        if v.node not in self.members:
            owner = getattr(v.node.graph, "name", None)
            raise self.fail(
                "input from outside the graph",
                f"{what} is produced by a {v.node.op} node of "
                + (f"graph {owner!r}" if owner else "no graph")
                + ", not of this graph (a subgraph reads outer values only through its Data inputs)",
                node,
            )
        if not 0 <= v.index < len(v.node.outputs):
            raise self.fail("no such output", f"{what} reads output {v.index} of a node with "
                            f"{len(v.node.outputs)} output(s)", node)

    def check_acyclic(self) -> None:
        state: dict[Node, int] = {}  # 1 = on the DFS stack, 2 = done
        for root in self.graph.nodes:
            if root in state:
                continue
            stack: list[tuple[Node, int]] = [(root, 0)]
            state[root] = 1
            while stack:
                node, i = stack.pop()
                if i < len(node.inputs):
                    stack.append((node, i + 1))
                    producer = node.inputs[i].node
                    if state.get(producer) == 1:
                        raise self.cycle_error([n for n, _ in stack[[s[0] for s in stack].index(producer):]])
                    if producer not in state:
                        state[producer] = 1
                        stack.append((producer, 0))
                else:
                    state[node] = 2

    def cycle_error(self, consumers_first: list[Node]) -> VerificationError:
        # the DFS stack lists each node before its producer; print in data-flow order,
        # starting at the node that comes first in the graph so the message is stable
        flow = list(reversed(consumers_first))
        position = {n: i for i, n in enumerate(self.graph.nodes)}
        start = min(range(len(flow)), key=lambda i: position[flow[i]])
        flow = flow[start:] + flow[:start]
        path = " -> ".join(f"%{self.names[n]}" for n in flow + flow[:1])
        return self.fail("cycle", f"the graph has a cycle: {path}", flow[0])

    def check_order(self) -> None:
        defined: set[Node] = set()
        for n in self.graph.nodes:
            for i, v in enumerate(n.inputs):
                if v.node not in defined:
                    raise self.fail("use before definition",
                                    f"input {i} (%{self.names[v.node]}) is defined after its use; "
                                    "nodes must be in topological order (call graph.sort())", n)
            defined.add(n)

    def check_data_indices(self) -> None:
        by_index: dict[object, Node] = {}
        for n in self.graph.nodes:
            if n.op != "Data":
                continue
            index = n.attrs.get("index")
            if not isinstance(index, int) or isinstance(index, bool):
                raise self.fail("bad Data index", f"Data index must be an int, got {index!r}", n)
            if index in by_index:
                raise self.fail("duplicate Data index", f"two Data nodes have index {index}", n)
            by_index[index] = n
        expected = set(range(len(by_index)))
        if set(by_index) != expected:
            missing = sorted(expected - set(by_index))
            raise self.fail("Data indices not 0..n-1",
                            f"{len(by_index)} Data nodes have indices {sorted(by_index)}; missing {missing}")

    def check_outputs(self) -> None:
        for i, v in enumerate(self.graph.outputs):
            if v.node not in self.members:
                raise self.fail("dangling output",
                                f"graph output {i} is a {v.node.op} node that is not defined in this graph")
            self.check_value(v, f"graph output {i}", None)

    # -- types -----------------------------------------------------------------------
    def check_types(self, n: Node) -> None:
        in_types = [v.type for v in n.inputs]
        if n.op == "Data" and not isinstance(n.attrs.get("type"), TensorType):
            raise self.fail("bad Data type", f"attr 'type' must be a TensorType, got {n.attrs.get('type')!r}", n)
        try:
            # annotations (fusion_group, _private) are not op attributes, as in the interpreter
            again = list(ops.infer(n.op, in_types, {k: v for k, v in n.attrs.items() if not is_annotation(k)}))
        except InferError as e:
            raise self.fail("type re-inference failed", f"the op rejects its current inputs: {e}", n) from None
        except (KeyError, TypeError, AttributeError, IndexError, ValueError) as e:
            raise self.fail("type re-inference failed",
                            f"inference raised {type(e).__name__}: {e} (missing or malformed attributes?)", n) from None
        if again != n.outputs:
            raise self.fail("types do not re-infer",
                            f"the node says {_types(n.outputs)} but re-inference gives {_types(again)}", n)

    def check_if(self, n: Node) -> None:
        for key in ("then_branch", "else_branch"):
            branch = n.attrs.get(key)
            if not isinstance(branch, Graph):
                raise self.fail("If branch missing", f"attr {key!r} must be a Graph, got {type(branch).__name__}", n)
            operands = [v.type for v in n.inputs[1:]]
            params = branch.input_types
            if len(params) != len(operands):
                raise self.fail("If branch signature mismatch",
                                f"{key} has {len(params)} Data inputs but the If passes {len(operands)} operands "
                                "(its inputs after the condition)", n)
            for i, (p, o) in enumerate(zip(params, operands)):
                if p != o:
                    raise self.fail("If branch signature mismatch",
                                    f"{key} Data {i} is {p} but the If passes {o} (If input {i + 1})", n)
            results = branch.output_types
            if len(results) != len(n.outputs) or any(
                (r.shape, r.dtype) != (t.shape, t.dtype) for r, t in zip(results, n.outputs)
            ):
                raise self.fail("If branch results mismatch",
                                f"{key} returns {_types(results)} but the If outputs {_types(n.outputs)}", n)


    def check_loop(self, n: Node) -> None:
        body = n.attrs.get("body")
        if not isinstance(body, Graph):
            raise self.fail("Loop body missing", f"attr 'body' must be a Graph, got {type(body).__name__}", n)
        operands = [v.type for v in n.inputs[1:]]
        params = body.input_types
        if len(params) != len(operands):
            raise self.fail("Loop body signature mismatch",
                            f"the body has {len(params)} Data inputs but the Loop passes {len(operands)} operands "
                            "(its inputs after the trip count or condition)", n)
        for i, (p, o) in enumerate(zip(params, operands)):
            if p.dtype != o.dtype or p.ndim != o.ndim:
                raise self.fail("Loop body signature mismatch",
                                f"body Data {i} is {p} but the Loop passes {o} (Loop input {i + 1})", n)


def _types(types: Sequence[TensorType]) -> str:
    return "(" + ", ".join(str(t) for t in types) + ")"
