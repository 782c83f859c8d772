"""The op registry: every op is defined once, here and in the modules beside it.

An `OpDef` gives an op's
- public signature (`api`): a plain Python function whose parameters say
  which arguments are tensors (`tensor_params`) and which are compile-time
  attributes; calling it on numpy arrays runs the op eagerly, so every
  kernel body is also valid numpy code;
- eager semantics (`eager(*arrays, **attrs)`): what numpy would return;
- shape/dtype inference (`infer(in_types, attrs) -> tuple[TensorType, ...]`),
  raising `InferError` with a reason that names shapes and dtypes;
- fusion category, purity, whether recomputing it is expensive;
- for composite ops, a decomposition into primitive ops;
- `numpy_names`: `np.<name>` functions that mean this op, so numpy code compiles.

Layers refer to ops by name only (the frontend, the passes, codegen's
lowering tables).
"""
from __future__ import annotations

import enum
import functools
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..ir.types import TensorType


class Category(enum.IntEnum):
    """Fusion categories, ordered as in TVM's OpPatternKind."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    REDUCE = 3
    MATMUL = 4  # "out-elementwise fusable": matmul and friends
    OPAQUE = 8


InferFn = Callable[[Sequence[TensorType], Mapping[str, Any]], Sequence[TensorType]]
# decompose(graph, inputs, attrs, loc) -> outputs, adding primitive nodes to `graph`
DecomposeFn = Callable[..., Sequence[Any]]


@dataclass(frozen=True)
class OpDef:
    name: str
    category: Category
    infer: InferFn
    eager: Callable[..., Any]
    api: Callable[..., Any] | None = None
    tensor_params: tuple[str, ...] = ()
    pure: bool = True
    expensive: bool = False
    decompose: DecomposeFn | None = None
    numpy_names: tuple[str, ...] = ()
    doc: str = ""

    @property
    def composite(self) -> bool:
        return self.decompose is not None

    def bind(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """Split a call of the public signature into tensor operands and attributes.

        Raises TypeError (wrong arguments) like Python itself would.
        """
        if self.api is None:
            raise TypeError(f"op {self.name} has no public signature")
        bound = inspect.signature(self.api).bind(*args, **kwargs)
        bound.apply_defaults()
        tensors = [bound.arguments[p] for p in self.tensor_params]
        attrs = {k: v for k, v in bound.arguments.items() if k not in self.tensor_params}
        return tensors, attrs


_REGISTRY: dict[str, OpDef] = {}
_NUMPY_TWINS: dict[str, str] = {}


def register(op: OpDef) -> OpDef:
    if op.name in _REGISTRY:
        raise ValueError(f"op {op.name!r} registered twice")
    _REGISTRY[op.name] = op
    for np_name in op.numpy_names:
        _NUMPY_TWINS[np_name] = op.name
    return op


def get(name: str) -> OpDef:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown op {name!r}") from None


def exists(name: str) -> bool:
    return name in _REGISTRY


def names() -> list[str]:
    return sorted(_REGISTRY)


def numpy_twin(np_name: str) -> str | None:
    """Registry name of the op that `np.<np_name>` means, or None."""
    return _NUMPY_TWINS.get(np_name)


def infer(name: str, in_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> list[TensorType]:
    return list(get(name).infer(in_types, attrs))


def public(op: OpDef) -> Callable[..., Any]:
    """The user-facing function for an op: runs it eagerly on numpy arrays."""
    assert op.api is not None

    @functools.wraps(op.api)
    def fn(*args: Any, **kwargs: Any) -> Any:
        tensors, attrs = op.bind(args, kwargs)
        return op.eager(*tensors, **attrs)

    fn.__pyasc_op__ = op.name  # the frontend resolves calls by this tag
    fn.__doc__ = op.doc or op.api.__doc__
    return fn


# ---- structural ops: graph inputs, constants, If ---------------------------


def _infer_data(in_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    return (attrs["type"],)


def _infer_const(in_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    from .. import dtypes

    value = attrs["value"]
    return (TensorType(value.shape, dtypes.narrow(value.dtype)),)


def _infer_if(in_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    cond = in_types[0]
    if cond.numel not in (None, 1):
        raise InferError(f"an If condition must have one element, got shape {tuple(cond.shape)}")
    then_g, else_g = attrs["then_branch"], attrs["else_branch"]
    t_out, e_out = then_g.output_types, else_g.output_types
    if len(t_out) != len(e_out) or any(
        (a.shape, a.dtype) != (b.shape, b.dtype) for a, b in zip(t_out, e_out)
    ):
        raise InferError(
            "the two branches of an If produce different types: "
            f"then ({', '.join(map(str, t_out))}) vs else ({', '.join(map(str, e_out))})"
        )
    return tuple(t.with_format("ND") for t in t_out)


def _no_eager(*_: Any, **__: Any) -> Any:
    raise TypeError("structural op has no eager form; the interpreter handles it")


register(OpDef("Data", Category.OPAQUE, _infer_data, _no_eager, doc="graph input"))
register(OpDef("Const", Category.OPAQUE, _infer_const, lambda *, value: value, doc="constant"))
register(OpDef("If", Category.OPAQUE, _infer_if, _no_eager, doc="run then_branch or else_branch"))
