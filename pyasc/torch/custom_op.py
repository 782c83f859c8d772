"""`pyasc.torch.custom_op`: register a pyasc kernel as a torch operator (torch.library).

The CPU implementation hands the tensors' memory to the kernel as numpy views (no copy for
contiguous tensors) and wraps the results as tensors sharing the kernel's output buffers. The
fake (meta) implementation asks pyasc's frontend for the result shapes and dtypes, so meta
tensors, FakeTensor tracing and `torch.compile` work without running anything.

Autograd, as `torch.library.custom_op` does it: the forward always runs; what backward= says
decides what a backward call does:
- by default, pyasc derives the backward (backward.py): a second op `<ns>::<name>_backward`,
  whose kernel is pyasc.autodiff's backward of the kernel's graph, is what autograd calls;
- a function: registered as it is (with setup_context=), as with torch.library;
- None: no backward; calling backward through the op raises a RuntimeError saying so.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

import torch

from ..frontend import ArgSpec, build_graph
from ..runtime import Kernel, kernel as make_kernel
from ..runtime.specialize import ArgBinder
from ..tensor_type import Sym, TensorType
from .backward import register_derived_backward
from .convert import SUPPORTED_TEXT, from_numpy, pyasc_dtype, to_numpy, torch_dtype
from .schema import SchemaParam, classify, count_results, schema_text


#: qualname -> the registered op, so the torch.compile backend can inline a pyasc op's kernel into the
#: kernel it generates around it (fusing it with its neighbours) instead of calling the op eagerly
_REGISTERED: dict[str, "PyascOp"] = {}
_REGISTERED_LOCK = threading.Lock()


def registered(target: Any) -> "PyascOp | None":
    """The pyasc op an FX node's target (an OpOverload) calls, if it is one registered here."""
    schema = getattr(target, "_schema", None)
    if schema is None:
        return None
    with _REGISTERED_LOCK:
        return _REGISTERED.get(schema.name)


class PyascOp:
    """A registered kernel: call it like the torch op (`torch.ops.<ns>.<name>`), which it forwards to."""

    def __init__(self, qualname: str, kernel: Kernel, params: list[SchemaParam], results: int, schema: str,
                 definition: Any, has_backward: bool):
        self.qualname = qualname
        self.kernel = kernel
        self.params = params
        self.results = results
        self.schema = schema
        self.definition = definition  # torch.library's CustomOpDef
        self.has_backward = has_backward
        self.backward_op: Any = None  # the derived backward's op (backward.py), when pyasc derives it
        self._types: dict[tuple, list[TensorType]] = {}
        self._graphs: dict[tuple, Any] = {}  # argument types -> the frontend graph (for inlining)
        self._lock = threading.Lock()
        ns, name = qualname.split("::")
        self.op = getattr(getattr(torch.ops, ns), name).default

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.op(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<pyasc torch op {self.qualname}{self.schema}>"

    # ---- the checks every path makes -------------------------------------------------
    def _check_tensor(self, p: SchemaParam, t: Any) -> str:
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{self.qualname}: argument {p.name!r} must be a torch.Tensor, got {type(t).__name__}")
        name = pyasc_dtype(t.dtype)
        if name is None:
            raise TypeError(f"{self.qualname}: argument {p.name!r} has dtype {t.dtype}, which the NPU does not "
                            f"have; supported dtypes: {SUPPORTED_TEXT} (cast with .to(...))")
        return name

    def _specs(self, args: Sequence[Any], symbols: dict[str, Any]) -> tuple[tuple, list[ArgSpec]]:
        """The frontend's argument specs; a symbolic size (torch.compile with dynamic shapes) becomes a pyasc
        Sym named after torch's symbol, so equal sizes stay equal, bound to the SymInt in `symbols`."""
        key, specs = [], []
        for p, v in zip(self.params, args):
            if p.is_tensor:
                dt = self._check_tensor(p, v)
                shape = tuple(_dim(d, symbols) for d in v.shape)
                key.append((dt, tuple(str(d) for d in shape)))
                specs.append(ArgSpec(p.name, TensorType(shape, dt)))
            else:
                key.append(("const", type(v).__name__, v))
                specs.append(ArgSpec(p.name, None, v))
        return tuple(key), specs

    def result_types(self, args: Sequence[Any], symbols: dict[str, Any] | None = None) -> list[TensorType]:
        """The kernel's result types for these arguments (pyasc's frontend: shape and dtype inference)."""
        key, specs = self._specs(args, {} if symbols is None else symbols)
        with self._lock:
            hit = self._types.get(key)
        if hit is None:
            fe = build_graph(self.kernel.py_func, specs, unroll_budget=self.kernel.options.unroll_budget)
            hit = [v.type for v in fe.results]  # (the outputs after them carry writes and checks)
            with self._lock:
                self._types[key] = hit
        return hit

    # ---- the implementations torch calls ----------------------------------------------
    def frontend_graph(self, args: Sequence[Any]) -> Any:
        """The kernel's frontend graph for these arguments (tensors, fake tensors or values), for inlining
        into an FX graph (kept per argument types; callers copy it, never edit it); ValueError when it reads
        captured arrays (lifted inputs the FX graph lacks)."""
        key, specs = self._specs(args, {})
        with self._lock:
            graph = self._graphs.get(key)
        if graph is None:
            # (device checks stay in the op's own launches: an inlined graph has no status word to report)
            fe = build_graph(self.kernel.py_func, specs, unroll_budget=self.kernel.options.unroll_budget,
                             checks=False)
            if len(fe.graph.outputs) != len(fe.results):
                raise ValueError(f"{self.qualname} writes its arguments or objects in place, which an inlined "
                                 "graph cannot do")
            if fe.hidden:
                raise ValueError(f"{self.qualname} reads captured arrays ({len(fe.hidden)}), which an inlined "
                                 "graph cannot take")
            graph = fe.graph
            with self._lock:
                self._graphs[key] = graph
        return graph

    def inline_graph(self, args: Sequence[Any]) -> Any:
        return self.frontend_graph(args)

    def fake(self, *args: Any) -> Any:
        symbols: dict[str, Any] = {}
        types = self.result_types(args, symbols)
        if any(p.mutated for p in self.params):
            return None
        device = next((a.device for p, a in zip(self.params, args) if p.is_tensor), torch.device("cpu"))
        outs = [torch.empty(tuple(_torch_dim(d, symbols) for d in t.shape), dtype=torch_dtype(t.dtype), device=device)
                for t in types]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def impl(self, *args: Any) -> Any:
        values = []
        for p, v in zip(self.params, args):
            if not p.is_tensor:
                values.append(v)
                continue
            self._check_tensor(p, v)
            if v.device.type != "cpu":
                raise ValueError(f"{self.qualname}: argument {p.name!r} is on device {str(v.device)!r}; pyasc "
                                 "runs kernels on its emulator from host memory, so pass CPU tensors (.cpu())")
            values.append(to_numpy(v))
        written = self.kernel.written_parameters(*values)  # in place, through the tensors' memory, as numpy does
        undeclared = [p.name for p in self.params if p.name in written and not p.mutated]
        if undeclared:
            raise TypeError(f"{self.qualname}: the kernel writes argument {undeclared[0]!r} in place; declare it in "
                            "mutates_args= so torch knows the op changes it")
        result = self.kernel(*values)
        outs = list(result) if isinstance(result, tuple) else [result]
        mutated = [(p, v) for p, v in zip(self.params, args) if p.mutated and p.name not in written]
        if any(p.mutated for p in self.params):
            if mutated and len(outs) != len(mutated):
                raise TypeError(f"{self.qualname}: the kernel returned {len(outs)} tensor(s) for "
                                f"{len(mutated)} mutated argument(s) {', '.join(p.name for p, _ in mutated)}")
            for (p, target), out in zip(mutated, outs):
                target.copy_(from_numpy(out).reshape(target.shape))
            return None
        tensors = [from_numpy(o) for o in outs]
        return tensors[0] if len(tensors) == 1 else tuple(tensors)


#: `backward=` default: pyasc derives the backward from the kernel (pass None for no backward)
DERIVED: Any = type("Derived", (), {"__repr__": lambda self: "pyasc.torch.DERIVED"})()


def custom_op(qualname: str, kernel: Any, *, mutates_args: Sequence[str] = (), backward: Any = DERIVED,
              setup_context: Callable | None = None, results: int | None = None) -> PyascOp:
    """Register `kernel` (a `pyasc.kernel`, or a plain function compiled with default options) as the
    torch operator `qualname` ("namespace::name"); returns a callable for `torch.ops.<ns>.<name>`.

    `mutates_args`: tensor parameters the op writes; the kernel writes them in place (`x += 1`, `x[0] = v`,
    which reach the tensor's memory as numpy's writes reach an array), or returns their new values, one per
    name not written in place, which are copied into them; the op returns nothing (and has no backward). A
    kernel that writes a parameter not named here is an error at the call. `backward`: by
    default the backward pyasc derives from the kernel (registered as the op `<ns>::<name>_backward`);
    a function (with `setup_context`) as in `torch.library.register_autograd`; or None for no backward
    (the forward runs; a backward call raises). `results`: how many tensors the kernel returns, when
    its `return` statements do not say.
    """
    if not isinstance(qualname, str) or qualname.count("::") != 1 or not all(qualname.split("::")):
        raise ValueError(f"pyasc.torch.custom_op: the name must be 'namespace::name', got {qualname!r}")
    if isinstance(mutates_args, str):
        mutates_args = (mutates_args,)
    k = kernel if isinstance(kernel, Kernel) else make_kernel(kernel)
    params = classify(k.py_func, ArgBinder(k.py_func).params, tuple(mutates_args), qualname)
    n = results if results is not None else count_results(k.py_func, qualname)
    schema = schema_text(params, 0 if mutates_args else n)
    user_backward = backward is not DERIVED and backward is not None
    if setup_context is not None and not user_backward:
        raise ValueError(f"pyasc.torch.custom_op({qualname!r}): setup_context= needs a backward=")
    if user_backward and mutates_args:
        raise ValueError(f"pyasc.torch.custom_op({qualname!r}): an op that mutates its arguments cannot have a "
                         "backward (torch.library needs a functional op); drop mutates_args and return the result")
    holder: dict[str, PyascOp] = {}

    def impl(*args: Any) -> Any:
        return holder["op"].impl(*args)

    def fake(*args: Any) -> Any:
        return holder["op"].fake(*args)

    definition = torch.library.custom_op(qualname, impl, mutates_args=tuple(mutates_args), schema=schema)
    definition.register_fake(fake)
    op = PyascOp(qualname, k, params, n, schema, definition, backward is not None and not mutates_args)
    holder["op"] = op
    if user_backward:
        definition.register_autograd(backward, setup_context=setup_context)
    elif mutates_args:
        pass  # torch itself refuses autograd for an op that mutates (a functional op is needed)
    elif backward is None:
        definition.register_autograd(op_backward_missing(qualname), setup_context=_keep_nothing)
    else:
        op.backward_op = register_derived_backward(op)
    with _REGISTERED_LOCK:
        _REGISTERED[qualname] = op
        if op.backward_op is not None:
            _REGISTERED[op.backward_op.qualname] = op.backward_op
    return op


def _keep_nothing(ctx: Any, inputs: tuple, output: Any) -> None:
    """setup_context of an op without a backward: nothing to keep."""


def op_backward_missing(qualname: str) -> Callable:
    def backward(ctx: Any, *grads: Any) -> Any:
        raise RuntimeError(f"{qualname} was registered with backward=None, so it has no backward: gradients cannot "
                           "flow through it. Register it without backward= for the backward pyasc derives from the "
                           "kernel, or pass your own backward= (and setup_context=)")

    return backward


def inlinable(target: Any) -> Any:
    """The registered pyasc op (or derived backward op) an FX node's target calls, for the FX frontend to
    splice in, or None. An op that mutates its arguments is never inlined (it is functionalized)."""
    op = registered(target)
    if op is None or any(p.mutated for p in op.params):
        return None
    return op


def _dim(d: Any, symbols: dict[str, Any]) -> Any:
    """An int, or for an unbacked-by-value torch.SymInt a pyasc Sym (its torch symbol as the name)."""
    if isinstance(d, torch.SymInt):
        expr = d.node.expr
        if getattr(expr, "is_Symbol", False):
            name = f"sym_{expr}"
            symbols[name] = d
            return Sym(name)
        return int(d)  # an expression of symbols: specialised (torch guards on its value)
    return int(d)


def _torch_dim(d: Any, symbols: dict[str, Any]) -> Any:
    """A result dim for torch: an int, or the Sym's expression evaluated over the SymInts it names."""
    if isinstance(d, Sym):
        return eval(d.expr, {"__builtins__": {}}, dict(symbols))  # the expr is built only by Sym arithmetic
    return d
