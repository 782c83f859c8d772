"""`pyasc.grad`, `pyasc.value_and_grad` and `pyasc.vjp`: reverse mode, with JAX's conventions.

    df = pyasc.grad(f)                    # f: a @pyasc.kernel or a plain numpy-style function
    dx = df(x, w)                         # the gradient of f's scalar output with respect to x
    dx, dw = pyasc.grad(f, argnums=(0, 1))(x, w)
    value, dx = pyasc.value_and_grad(f)(x, w)
    (value, aux), dx = pyasc.value_and_grad(f, has_aux=True)(x, w)   # f returns (scalar, aux)
    out, f_vjp = pyasc.vjp(f, x, w)       # out = f(x, w); f_vjp(ct) = (ct^T df/dx, ct^T df/dw)

The frontend's graph of f (per specialisation, tracing.py) is differentiated by `pyasc.autodiff`
(one VJP rule per op in the registry) and the result compiled like any kernel (`GraphKernel`:
optimised, fused, tiled, run on the emulator; cached in memory and on disk). `grad` and
`value_and_grad` compile forward and backward as one graph, so the optimiser fuses across them and
nothing is stored between them. `vjp` compiles two: the forward, which also returns the residuals
the backward needs (autodiff's residual choice: cheap ops are recomputed, expensive ones kept), and
the backward, run by each call of the returned function.

Arguments are differentiated by position (`argnums`); a pytree argument's gradient has its structure
(compile-time leaves come back as None). Only float tensors have gradients: asking for an integer or
compile-time argument is a TypeError, as is a non-scalar output for `grad`. Results are numpy arrays.
An op without a derivative is a located `pyasc.CompileError` naming the op.
"""
from __future__ import annotations

import collections
import functools
import threading
from typing import Any, Sequence

import numpy as np

from .. import autodiff, pytree
from ..pytree import LEAF, TUPLE, TreeDef
from .graph_kernel import GraphKernel, user_errors
from .kernel import Kernel, kernel as make_kernel
from .specialize import ConstKey, TensorKey, is_tensor_value
from .tracing import Trace, Tracer, describe_param
from .treeargs import TreeKey

_FLOATS = ("float16", "float32")


def _as_kernel(fun: Any) -> Kernel:
    if isinstance(fun, (Grad, VjpFunction)):
        raise TypeError("pyasc.grad of a gradient (higher-order derivatives) is not supported: differentiate the "
                        "original function once")
    if not callable(fun):
        raise TypeError(f"pyasc.grad/vjp needs a function, got {type(fun).__name__}")
    return fun if isinstance(fun, Kernel) else make_kernel(fun)


def _normalize_argnums(argnums: Any) -> tuple[tuple[int, ...], bool]:
    """(the positions, whether a single int was given)."""
    if isinstance(argnums, (int, np.integer)) and not isinstance(argnums, bool):
        return (int(argnums),), True
    if isinstance(argnums, (tuple, list)) and argnums and all(
            isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in argnums):
        return tuple(int(a) for a in argnums), False
    raise TypeError(f"argnums must be an int or a non-empty tuple of ints, got {argnums!r}")


_user_errors = user_errors(autodiff.GradError)


def _wrt(trace: Trace, positions: Sequence[int], what: str) -> list[int]:
    """The Data indices of the tensors of the arguments at `positions` (TypeError for what has no gradient)."""
    groups = trace.input_groups()
    wrt: list[int] = []
    for pos in positions:
        if not -len(trace.params) <= pos < len(trace.params):
            raise TypeError(f"{what}: argnums {pos} is out of range for {trace.graph.name}() with "
                            f"{len(trace.params)} parameter(s)")
        pos %= len(trace.params)
        key = trace.key[pos]
        if isinstance(key, ConstKey):
            raise TypeError(f"{what}: argnums {pos} names the {describe_param(trace, pos)}; only float tensor "
                            "arguments have gradients")
        for i in groups[pos]:
            dtype = trace.graph.inputs[i].outputs[0].dtype
            if dtype not in _FLOATS:
                raise TypeError(f"{what}: argnums {pos}: {describe_param(trace, pos)} holds a {dtype} tensor; only "
                                f"float tensors ({', '.join(_FLOATS)}) have gradients")
        wrt.extend(i for i in groups[pos] if i not in wrt)  # argnums=(0, 0): one gradient, given twice
    return wrt


def _gradient_of(trace: Trace, pos: int, grads: dict[int, np.ndarray]) -> Any:
    """Argument `pos`'s gradient: an array, or its pytree with the gradients at the tensor leaves."""
    key = trace.key[pos]
    idx = iter(trace.input_groups()[pos])
    if isinstance(key, TensorKey):
        return grads[next(idx)]
    assert isinstance(key, TreeKey)
    leaves = [grads[next(idx)] if isinstance(leaf, TensorKey) else None for leaf in key.leaves]
    return pytree.unflatten(key.tree, leaves)


def _header(trace: Trace, what: str) -> str:
    return f"# {what} of {trace.graph.name}, derived by pyasc.autodiff from:\n{trace.source}"


class Grad:
    """The function `pyasc.grad` / `pyasc.value_and_grad` return: call it like the original function."""

    def __init__(self, fun: Any, argnums: Any, has_aux: bool, with_value: bool):
        self.kernel = _as_kernel(fun)
        self.positions, self.single = _normalize_argnums(argnums)
        self.has_aux = bool(has_aux)
        self.with_value = with_value
        self.tracer = _tracer_of(fun, self.kernel)
        self.what = "pyasc.value_and_grad" if with_value else "pyasc.grad"
        functools.update_wrapper(self, self.kernel.py_func)

    def __repr__(self) -> str:
        return f"<{self.what} of {self.kernel.__qualname__}, argnums={self.positions if not self.single else self.positions[0]}>"

    def graph_kernel(self, *args: Any, **kwargs: Any) -> GraphKernel:
        """The compiled-on-demand gradient kernel for these arguments (`.compile()`, `.profile()`)."""
        return self._prepare(args, kwargs)[0]

    def _prepare(self, args: tuple, kwargs: dict) -> tuple[GraphKernel, list[np.ndarray], Trace, list[int]]:
        call, trace, hidden = self.tracer.trace(args, kwargs)
        wrt = _wrt(trace, self.positions, self.what)
        n_aux = self._aux_outputs(trace)
        keep = ([0] if self.with_value else []) + list(range(1, 1 + n_aux))

        def build() -> GraphKernel:
            graph = autodiff.grad_graph(trace.graph, wrt, output=0, keep=keep)
            return GraphKernel(graph, self.kernel.options, name=graph.name, source=_header(trace, "the gradient"))

        gk = trace.derive(("grad", tuple(wrt), tuple(keep)), build)
        return gk, call.arrays + hidden, trace, wrt

    def _aux_outputs(self, trace: Trace) -> int:
        tree = trace.out_tree
        if not self.has_aux:
            if tree.kind != LEAF:
                raise TypeError(f"{self.what}: {trace.graph.name} returns {tree.num_leaves} values; the gradient "
                                "needs a function returning one scalar (pass has_aux=True to return (value, aux))")
            return 0
        if tree.kind != TUPLE or len(tree.children) != 2 or tree.children[0].kind != LEAF:
            raise TypeError(f"{self.what}(has_aux=True): {trace.graph.name} must return a pair (scalar, aux)")
        return tree.children[1].num_leaves

    @_user_errors
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        gk, arrays, trace, wrt = self._prepare(args, kwargs)
        outs = list(gk(*arrays))
        value = outs.pop(0) if self.with_value else None
        n_aux = self._aux_outputs(trace)
        aux = pytree.unflatten(trace.out_tree.children[1], outs[:n_aux]) if self.has_aux else None
        flat = iter(outs[n_aux:])
        grads = {i: next(flat) for i in wrt}
        per_arg = [_gradient_of(trace, p % len(trace.params), grads) for p in self.positions]
        g = per_arg[0] if self.single else tuple(per_arg)
        if self.with_value:
            return ((value, aux), g) if self.has_aux else (value, g)
        return (g, aux) if self.has_aux else g


def grad(fun: Any, argnums: Any = 0, has_aux: bool = False) -> Grad:
    """The gradient of `fun` (which returns one float with one element) with respect to argument(s)
    `argnums`; JAX's `jax.grad`. See the module docstring."""
    return Grad(fun, argnums, has_aux, with_value=False)


def value_and_grad(fun: Any, argnums: Any = 0, has_aux: bool = False) -> Grad:
    """`fun`'s value and its gradient, from one compiled kernel; JAX's `jax.value_and_grad`."""
    return Grad(fun, argnums, has_aux, with_value=True)


class VjpFunction:
    """The backward `pyasc.vjp` returns: `f_vjp(cotangent)` -> one cotangent per primal argument."""

    def __init__(self, pair: "_VjpPair", trace: Trace, out_tree: TreeDef, arrays: list[np.ndarray],
                 outputs: list[np.ndarray], saved: list[np.ndarray]):
        self.pair = pair
        self.trace = trace
        self.out_tree = out_tree
        self.arrays = arrays
        self.outputs = outputs
        self.saved = saved

    def __repr__(self) -> str:
        return f"<pyasc.vjp backward of {self.trace.graph.name}: {len(self.saved)} saved value(s)>"

    @_user_errors
    def __call__(self, cotangent: Any) -> tuple[Any, ...]:
        trace, graphs = self.trace, self.pair.graphs
        leaves, tree = pytree.flatten(cotangent, is_tensor_value)
        if tree != self.out_tree:
            raise TypeError(f"pyasc.vjp: the cotangent must have the structure of the function's output "
                            f"({self.out_tree.describe()}), got {tree.describe()}")
        cts = []
        for i in graphs.cotangent_outputs:
            want = self.outputs[i]
            ct = np.asarray(leaves[i])
            if ct.shape != want.shape:
                raise ValueError(f"pyasc.vjp: cotangent {i} has shape {ct.shape}, the output has shape {want.shape}")
            cts.append(np.asarray(ct, dtype=want.dtype))
        sources = {"input": self.arrays, "output": self.outputs, "saved": self.saved}
        residuals = [sources[r.kind][r.index] for r in graphs.residuals]
        grads = dict(zip(graphs.wrt, self.pair.backward(*residuals, *cts)))
        out = []
        for pos, key in enumerate(trace.key):
            group = trace.input_groups()[pos]
            if isinstance(key, ConstKey) or not all(i in grads for i in group):
                out.append(None)  # a compile-time value, or an integer tensor (or a pytree holding one)
            else:
                out.append(_gradient_of(trace, pos, grads))
        return tuple(out)


class _VjpPair:
    def __init__(self, graphs: autodiff.VjpGraphs, trace: Trace, options: Any):
        self.graphs = graphs
        self.forward = GraphKernel(graphs.forward, options, name=graphs.forward.name,
                                   source=_header(trace, "the forward (with residuals)"))
        self.backward = GraphKernel(graphs.backward, options, name=graphs.backward.name,
                                    source=_header(trace, "the backward (vjp)"))


@_user_errors
def vjp(fun: Any, *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """(fun(*primals), f_vjp) where f_vjp(ct) gives, for each primal, ct's pullback through fun; JAX's
    `jax.vjp`. With has_aux=True, fun returns (out, aux), only `out` is differentiated, and vjp returns
    (out, f_vjp, aux). Integer and compile-time primals get None."""
    k = _as_kernel(fun)
    call, trace, hidden = _tracer_of(fun, k).trace(primals, {})
    tree = trace.out_tree
    if has_aux and (tree.kind != TUPLE or len(tree.children) != 2):
        raise TypeError(f"pyasc.vjp(has_aux=True): {trace.graph.name} must return a pair (out, aux)")
    out_tree = tree.children[0] if has_aux else tree
    differentiated = list(range(out_tree.num_leaves))
    wrt = [i for group in trace.input_groups() for i in group
           if trace.graph.inputs[i].outputs[0].dtype in _FLOATS]
    pair = trace.derive(("vjp", tuple(wrt), has_aux), lambda: _VjpPair(
        autodiff.vjp_graphs(trace.graph, wrt, outputs=differentiated), trace, k.options))
    arrays = call.arrays + hidden
    outs = list(pair.forward(*arrays))
    n = pair.graphs.primal_outputs
    outputs, saved = outs[:n], outs[n:]
    f_vjp = VjpFunction(pair, trace, out_tree, arrays, outputs, saved)
    if not has_aux:
        return pytree.unflatten(tree, outputs), f_vjp
    primal = pytree.unflatten(out_tree, outputs[:len(differentiated)])
    return primal, f_vjp, pytree.unflatten(tree.children[1], outputs[len(differentiated):])


#: the tracers of the functions most recently differentiated (id -> (function, tracer), least recently
#: used first), so repeated pyasc.vjp calls of one function reuse its traces and compiled kernels; bounded,
#: because a tracer holds its function (a weak-keyed table would keep every key alive through its value)
_TRACERS: "collections.OrderedDict[int, tuple[Any, Tracer]]" = collections.OrderedDict()
_TRACERS_MAX = 64
_TRACERS_LOCK = threading.Lock()


def _tracer_of(fun: Any, k: Kernel) -> Tracer:
    with _TRACERS_LOCK:
        found = _TRACERS.get(id(fun))
        if found is not None and found[0] is fun:
            _TRACERS.move_to_end(id(fun))
            return found[1]
        tracer = Tracer(k)
        _TRACERS[id(fun)] = (fun, tracer)
        while len(_TRACERS) > _TRACERS_MAX:
            _TRACERS.popitem(last=False)
        return tracer
