"""`pyasc.torch.custom_op`: register a pyasc kernel as a torch operator (torch.library).

The CPU implementation hands the tensors' memory to the kernel as numpy views (no copy for
contiguous tensors) and wraps the results as tensors sharing the kernel's output buffers. The
fake (meta) implementation asks pyasc's frontend for the result shapes and dtypes, so meta
tensors, FakeTensor tracing and `torch.compile` work without running anything.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

import torch

from ..frontend import ArgSpec, build_graph
from ..runtime import Kernel, kernel as make_kernel
from ..tensor_type import TensorType
from .convert import SUPPORTED_TEXT, from_numpy, pyasc_dtype, to_numpy, torch_dtype
from .schema import SchemaParam, classify, count_results, schema_text


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
        self._types: dict[tuple, list[TensorType]] = {}
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

    def _specs(self, args: Sequence[Any]) -> tuple[tuple, list[ArgSpec]]:
        key, specs = [], []
        for p, v in zip(self.params, args):
            if p.is_tensor:
                dt = self._check_tensor(p, v)
                shape = tuple(int(d) for d in v.shape)  # a symbolic size is specialised: pyasc keys on sizes
                key.append((dt, shape))
                specs.append(ArgSpec(p.name, TensorType(shape, dt)))
            else:
                key.append(("const", type(v).__name__, v))
                specs.append(ArgSpec(p.name, None, v))
        return tuple(key), specs

    def result_types(self, args: Sequence[Any]) -> list[TensorType]:
        """The kernel's result types for these arguments (pyasc's frontend: shape and dtype inference)."""
        key, specs = self._specs(args)
        with self._lock:
            hit = self._types.get(key)
        if hit is None:
            fe = build_graph(self.kernel.py_func, specs, unroll_budget=self.kernel.options.unroll_budget)
            hit = [v.type for v in fe.graph.outputs]
            with self._lock:
                self._types[key] = hit
        return hit

    # ---- the implementations torch calls ----------------------------------------------
    def no_backward(self, ctx: Any, inputs: tuple, output: Any) -> None:
        """setup_context when the user gave no backward: torch calls it only when grad mode is on and an
        input requires grad, which is exactly when the missing formula matters; say so then, at the call."""
        grads = [p.name for p, v in zip(self.params, inputs) if isinstance(v, torch.Tensor) and v.requires_grad]
        raise RuntimeError(f"{self.qualname}: argument {grads[0]!r} requires grad, but this op has no backward; "
                           "pass backward= (and setup_context=) to pyasc.torch.custom_op, or call it under "
                           "torch.no_grad() or on a .detach()ed tensor")

    def fake(self, *args: Any) -> Any:
        types = self.result_types(args)
        if any(p.mutated for p in self.params):
            return None
        device = next((a.device for p, a in zip(self.params, args) if p.is_tensor), torch.device("cpu"))
        outs = [torch.empty(tuple(t.shape), dtype=torch_dtype(t.dtype), device=device) for t in types]
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
        result = self.kernel(*values)
        outs = list(result) if isinstance(result, tuple) else [result]
        mutated = [(p, v) for p, v in zip(self.params, args) if p.mutated]
        if mutated:
            if len(outs) != len(mutated):
                raise TypeError(f"{self.qualname}: the kernel returned {len(outs)} tensor(s) for "
                                f"{len(mutated)} mutated argument(s) {', '.join(p.name for p, _ in mutated)}")
            for (p, target), out in zip(mutated, outs):
                target.copy_(from_numpy(out).reshape(target.shape))
            return None
        tensors = [from_numpy(o) for o in outs]
        return tensors[0] if len(tensors) == 1 else tuple(tensors)


def custom_op(qualname: str, kernel: Any, *, mutates_args: Sequence[str] = (), backward: Callable | None = None,
              setup_context: Callable | None = None, results: int | None = None) -> PyascOp:
    """Register `kernel` (a `pyasc.kernel`, or a plain function compiled with default options) as the
    torch operator `qualname` ("namespace::name"); returns a callable for `torch.ops.<ns>.<name>`.

    `mutates_args`: tensor parameters the op writes; the kernel then returns their new values, one per
    name, which are copied into them, and the op returns nothing. `backward`/`setup_context`: as in
    `torch.library.register_autograd`; without them an input that requires grad is an error.
    `results`: how many tensors the kernel returns, when its `return` statements do not say.
    """
    if not isinstance(qualname, str) or qualname.count("::") != 1 or not all(qualname.split("::")):
        raise ValueError(f"pyasc.torch.custom_op: the name must be 'namespace::name', got {qualname!r}")
    if isinstance(mutates_args, str):
        mutates_args = (mutates_args,)
    k = kernel if isinstance(kernel, Kernel) else make_kernel(kernel)
    params = classify(k.py_func, k._binder.params, tuple(mutates_args), qualname)
    n = results if results is not None else count_results(k.py_func, qualname)
    schema = schema_text(params, 0 if mutates_args else n)
    if setup_context is not None and backward is None:
        raise ValueError(f"pyasc.torch.custom_op({qualname!r}): setup_context= needs a backward=")
    if backward is not None and mutates_args:
        raise ValueError(f"pyasc.torch.custom_op({qualname!r}): an op that mutates its arguments cannot have a "
                         "backward (torch.library needs a functional op); drop mutates_args and return the result")
    holder: dict[str, PyascOp] = {}

    def impl(*args: Any) -> Any:
        return holder["op"].impl(*args)

    def fake(*args: Any) -> Any:
        return holder["op"].fake(*args)

    definition = torch.library.custom_op(qualname, impl, mutates_args=tuple(mutates_args), schema=schema)
    definition.register_fake(fake)
    if backward is not None:
        definition.register_autograd(backward, setup_context=setup_context)
    elif not mutates_args:  # torch itself refuses autograd for an op that mutates (a functional op is needed)
        definition.register_autograd(_unreachable_backward, setup_context=lambda ctx, inputs, output:
                                     holder["op"].no_backward(ctx, inputs, output))
    op = PyascOp(qualname, k, params, n, schema, definition, backward is not None)
    holder["op"] = op
    return op


def _unreachable_backward(ctx: Any, *grads: Any) -> Any:
    raise AssertionError("no_backward raised in the forward: torch never records this backward")
