"""The frontend: a Python kernel function -> a typed, source-located ir.Graph.

`build_graph(fn, specs)` parses the function's source (with the user's real
line numbers), walks its AST with a symbol table, and adds one node per
tensor operation, inferring its type as it goes. Compile-time values
(ints, floats, tuples, shapes, dtypes) are evaluated in Python; loops over
compile-time ranges are unrolled; helpers are inlined; `if` on a tensor
becomes an `If` node. Anything outside the supported subset is a located
`CompileError`.

The frontend knows Python syntax only: no optimisation, no hardware.
"""
from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import astor

from ..errors import CompileError, InternalCompilerError, debug_enabled
from ..effects import Effects
from ..guards import Guard
from ..ir.graph import Graph, Value
from ..tensor_type import TensorType
from ..pytree import LEAF, LEAF_DEF, TUPLE, TreeDef
from . import aliasing, effects, guards, objects, pytree
from .builder import FunctionBuilder
from .context import BuildState, GraphContext
from .scope import Scope, assigned_names
from .source import get_source, parse_function

__all__ = ["ArgSpec", "FrontendResult", "build_graph", "get_source"]


@dataclass(frozen=True)
class ArgSpec:
    """One kernel parameter: a tensor of `type`, or (type None) the compile-time `value`, or (type None,
    value a `pytree.TreeArg`) a pytree of tensors and compile-time values."""

    name: str
    type: TensorType | None
    value: Any = None
    scalar: bool = False  # a numpy scalar argument (immutable: an in-place operator rebinds it)


@dataclass
class FrontendResult:
    graph: Graph  # Data nodes in tensor-parameter order, outputs set, not yet optimised
    source: str  # the kernel's source regenerated from the normalised AST (decorators removed) by astor
    returns_tuple: bool  # the result is a flat tuple (out_tree says the whole structure)
    captured: dict[str, Any]  # names read ("helper_qualname.name" for a helper's) and access paths -> value
    helpers: list[str]  # "module.qualname" of inlined helper functions and kernels, first call first
    guards: tuple[Guard, ...]  # one per access path read; re-checked by the runtime on every call (pyasc.guards)
    hidden: tuple[tuple, ...]  # access paths of lifted arrays: graph Data inputs after the user's tensors
    filename: str
    firstlineno: int  # file line where the function's source (its first decorator, if any) starts
    out_tree: TreeDef = LEAF_DEF  # the result's structure: the first graph outputs are its leaves, in leaf order
    effects: Effects | None = None  # what the kernel changes outside itself (pyasc.effects); None: nothing
    out_consts: tuple = ()  # (leaf index, value) of the result's None and string leaves (no graph output)

    @property
    def results(self) -> list[Value]:
        """The graph outputs that are the kernel's result (the ones after them carry its effects)."""
        n = self.effects.results if self.effects is not None else len(self.graph.outputs)
        return list(self.graph.outputs[:n])


def build_graph(fn: Any, specs: Sequence[ArgSpec], *, unroll_budget: int = 4096,
                same_inputs: Sequence[tuple[int, int]] = (), checks: bool = True) -> FrontendResult:
    """Compile `fn` (a function, or a kernel object with `py_func`) for the given argument specs.

    `same_inputs`: (i, j) pairs of tensor inputs (in input order) where input i is the very array of input
    j < i (`k(a, a)`): the kernel sees one array under both names, as numpy does. `checks`: record numpy's
    errors on data in a status word the runtime reads after the launch (frontend/checks.py).

    Raises CompileError for anything in the kernel pyasc cannot compile (at the
    user's file/line/column), TypeError for specs that do not fit the function.
    """
    if not isinstance(unroll_budget, int) or isinstance(unroll_budget, bool) or unroll_budget < 0:
        raise ValueError(f"unroll_budget must be a non-negative int, got {unroll_budget!r}")
    parsed = parse_function(fn)
    if isinstance(parsed.tree, ast.AsyncFunctionDef):
        raise parsed.error("an `async def` function cannot be a kernel", parsed.tree)
    force: frozenset = frozenset()
    while True:  # again when the kernel writes a captured array it folded: with that array lifted
        try:
            return _build(fn, parsed, specs, unroll_budget, same_inputs, force, checks)
        except guards.Relift as r:
            force = force | {r.path}


def _build(fn: Any, parsed: Any, specs: Sequence[ArgSpec], unroll_budget: int, same_inputs: Sequence[tuple[int, int]],
           force: frozenset, checks: bool) -> FrontendResult:
    graph = Graph(parsed.fn.__name__)
    state = BuildState(unroll_budget, graph, force_lift=force, checks_enabled=checks)
    state.root = objects.root_of(fn)
    guards.begin(state, parsed.fn)
    scope = Scope(parsed.fn, assigned_names(parsed.tree))
    builder = FunctionBuilder(state, parsed, scope, GraphContext(graph))
    labels = _bind_parameters(builder, graph, specs, dict(same_inputs))
    state.inlining.append(parsed.fn.__code__)
    _guarded(state, builder.run_body)
    results, out_tree, out_consts = _guarded(state, lambda: _kernel_outputs(builder, graph))
    labels += [guards.hidden_label(path) for path in state.hidden]
    at = builder.return_node or parsed.tree
    outputs, written = _guarded(state, lambda: effects.finish(builder, results, labels, at,
                                                              lambda v: aliasing.is_scalar(builder, v)))
    graph.set_outputs(outputs)
    guards.finish(state, parsed.fn)
    returns_tuple = out_tree.kind == TUPLE and all(c.kind == LEAF for c in out_tree.children)
    return FrontendResult(
        graph=graph,
        source=_source_text(parsed),
        returns_tuple=returns_tuple,
        out_tree=out_tree,
        out_consts=out_consts,
        captured=state.captured,
        helpers=state.helpers,
        guards=tuple(state.guards.values()),
        hidden=guards.hidden_inputs(state),
        filename=parsed.filename,
        firstlineno=parsed.firstlineno,
        effects=written,
    )


def _source_text(parsed: Any) -> str:
    """The kernel regenerated from its normalised AST; a very deep expression (a 350-term `x + x + ...`)
    is past astor's recursion, and then the source as written (decorators removed by ast.unparse, or kept)."""
    for regenerate in (astor.to_source, ast.unparse):
        try:
            return regenerate(parsed.tree)
        except RecursionError:
            continue
    return parsed.source


def _guarded(state: BuildState, work: Callable[[], Any]) -> Any:
    """Run `work`; a compiler bug surfaces as an InternalCompilerError naming the kernel line being
    compiled (a user mistake is a CompileError), unless PYASC_DEBUG=1."""
    try:
        return work()
    except (CompileError, guards.Relift):
        raise
    except RecursionError:
        parsed, node = state.current
        raise parsed.error("the kernel is nested too deeply to compile (expressions or helper calls)", node) from None
    except Exception as e:
        if debug_enabled():
            raise
        if state.current is None:
            raise
        parsed, node = state.current
        loc = parsed.error("", node).loc
        raise InternalCompilerError("the frontend", parsed.fn.__qualname__, e, loc) from e


def _bind_parameters(b: FunctionBuilder, graph: Graph, specs: Sequence[ArgSpec], same: dict[int, int]) -> list[str]:
    """Bind every parameter; returns how the user spells each tensor input (in input order)."""
    tree, fn = b.parsed.tree, b.parsed.fn
    args = tree.args
    for star, stars in ((args.vararg, "*"), (args.kwarg, "**")):
        if star is not None:
            raise b.error(f"a kernel cannot take `{stars}{star.arg}`; list its parameters one by one", star)
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    if objects.bound_self(b.state.root) is not None and params:  # a method kernel: `self` is not an argument
        b.scope.bind(params[0].arg, guards.read_self(b, b.state.root.__self__, params[0]))
        params = params[1:]
    names = [p.arg for p in params]
    labels: list[str] = []
    by_name: dict[str, ArgSpec] = {}
    for spec in specs:
        if not isinstance(spec, ArgSpec):
            raise TypeError(f"specs must be ArgSpec objects, got {type(spec).__name__}")
        if spec.name in by_name:
            raise TypeError(f"two ArgSpecs for parameter `{spec.name}`")
        if spec.name not in names:
            raise TypeError(
                f"ArgSpec for `{spec.name}`, which is not a parameter of {fn.__qualname__}"
                f"({', '.join(names)})"
            )
        if spec.type is not None and not isinstance(spec.type, TensorType):
            raise TypeError(f"ArgSpec `{spec.name}`: type must be a TensorType or None, got {spec.type!r}")
        by_name[spec.name] = spec
    signature = inspect.signature(fn)  # the function's own, `self` included
    for p in params:
        spec = by_name.get(p.arg)
        if spec is None:
            default = signature.parameters[p.arg].default
            if default is inspect.Parameter.empty:
                raise TypeError(f"no ArgSpec for parameter `{p.arg}` of {fn.__qualname__}, which has no default")
            b.scope.bind(p.arg, guards.read_default(b, fn, p.arg, p))  # guarded on its path, like a helper's
        elif spec.type is not None:
            data = graph.add_input(spec.type, name=p.arg, loc=b.loc(p))
            labels.append(p.arg)
            if spec.scalar:
                aliasing.mark_scalar(b, data)
            else:
                effects.add_cell(b, data)
            b.scope.bind(p.arg, _same_array(graph, data, same))
        elif isinstance(spec.value, pytree.TreeArg):
            value = pytree.bind_tree(b, graph, spec.value, p)
            for data in graph.inputs[len(labels):]:
                effects.add_cell(b, data.out())
            labels.extend(pytree.leaf_labels(p.arg, spec.value))
            value = pytree.map_tensors(value, lambda v: _same_array(graph, v, same))
            effects.register_argument(b, p.arg, value)
            b.scope.bind(p.arg, value)
        else:
            b.scope.bind(p.arg, spec.value)
    return labels


def _same_array(graph: Graph, data: Value, same: dict[int, int]) -> Value:
    """The Data input holding the array `data` stands for: an earlier one when the call passed the same array
    twice (`k(a, a)`), so a write through one name is seen through the other, as in numpy."""
    first = same.get(data.node.attrs["index"])
    return graph.inputs[first].out() if first is not None else data


def _kernel_outputs(b: FunctionBuilder, graph: Graph) -> tuple[list[Value], TreeDef, tuple]:
    name = b.parsed.fn.__qualname__
    if not b.returned or b.return_value is None:  # numpy code that only writes (`layer.forward(x)`): None
        return [], LEAF_DEF, ((0, None),)
    at = b.return_node.value if isinstance(b.return_node, ast.Return) and b.return_node.value else b.return_node
    return pytree.kernel_outputs(b, b.return_value, at, name)
