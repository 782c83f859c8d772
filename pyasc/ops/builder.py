"""One body, three interpretations: how composite ops stay consistent.

A composite op (softmax, layer_norm, gelu, ...) is written once as a *body*:
a function of a builder `b` and the op's operands that calls `b.op(name,
*inputs, **attrs)` for primitive ops. Running the body with

- `EagerBuilder` computes the op on numpy arrays (the op's eager semantics),
- `GraphBuilder` adds primitive nodes to a Graph (the op's decomposition),
- `TypeBuilder` infers through the registry (the op's output types),

so the eager result, the decomposed graph and the inferred type cannot
disagree: the eager function *is* the decomposition evaluated op by op.
"""
from __future__ import annotations

import abc
from typing import Any, Callable, Sequence

import numpy as np

from .. import dtypes
from ..errors import SourceLoc
from ..tensor_type import TensorType
from . import registry
from .common import float_math_dtype

#: float dtype composites compute in, per float dtype they are given (float16 is
#: computed in float32 and rounded once at the end, as vendor kernels do)
_COMPUTE = {"float16": "float32"}


class Builder(abc.ABC):
    """The operations a composite body may use. Subclasses say what a value is."""

    @abc.abstractmethod
    def op(self, name: str, *inputs: Any, **attrs: Any) -> Any:
        """Apply primitive op `name`."""

    @abc.abstractmethod
    def const(self, value: float | int | bool, dtype: str) -> Any:
        """A 0-d constant of `dtype`."""

    @abc.abstractmethod
    def dtype(self, x: Any) -> str:
        """Canonical (eager: numpy) dtype name of a value."""

    @abc.abstractmethod
    def array(self, value: np.ndarray) -> Any:
        """A constant tensor holding `value` (a mask, an index table), in its own (narrowed) dtype."""

    @abc.abstractmethod
    def shape(self, x: Any) -> tuple[Any, ...]:
        """The shape of a value (static ints and symbolic dims)."""

    @abc.abstractmethod
    def result_type(self, *dts: str) -> str:
        """Promotion of tensor dtypes (the graph narrows; numpy does not)."""

    @abc.abstractmethod
    def float_dtype(self, dt: str) -> str:
        """Float dtype float math on `dt` yields (floats unchanged)."""

    # -- shared conveniences ---------------------------------------------------------
    def cast(self, x: Any, dtype: str) -> Any:
        return x if self.dtype(x) == dtype else self.op("cast", x, dtype=dtype)

    def compute_dtype(self, x: Any) -> str:
        f = self.float_dtype(self.dtype(x))
        return _COMPUTE.get(f, f)

    def to_compute(self, x: Any) -> Any:
        """`x` cast to the dtype composites compute in (float32 for float16 and small ints)."""
        return self.cast(x, self.compute_dtype(x))

    def scalar(self, value: float, like: Any) -> Any:
        return self.const(value, self.dtype(like))


class EagerBuilder(Builder):
    """Values are numpy arrays; ops run their eager functions."""

    def op(self, name: str, *inputs: Any, **attrs: Any) -> Any:
        return registry.get(name).eager(*inputs, **attrs)

    def const(self, value: float | int | bool, dtype: str) -> Any:
        return np.asarray(value, dtype=dtype)

    def dtype(self, x: Any) -> str:
        return np.asarray(x).dtype.name

    def array(self, value: np.ndarray) -> Any:
        return np.asarray(value)

    def shape(self, x: Any) -> tuple[Any, ...]:
        return tuple(np.shape(x))

    def result_type(self, *dts: str) -> str:
        return np.result_type(*dts).name

    def float_dtype(self, dt: str) -> str:
        return float_math_dtype(dt).name


class GraphBuilder(Builder):
    """Values are graph Values; ops become nodes of `graph` at `loc`."""

    def __init__(self, graph: Any, loc: SourceLoc | None = None):
        self.graph = graph
        self.loc = loc

    def op(self, name: str, *inputs: Any, **attrs: Any) -> Any:
        return self.graph.add(name, list(inputs), attrs, self.loc).out()

    def const(self, value: float | int | bool, dtype: str) -> Any:
        return self.graph.const(value, dtype, self.loc)

    def dtype(self, x: Any) -> str:
        return x.type.dtype

    def array(self, value: np.ndarray) -> Any:
        return self.graph.const(value, dtypes.narrow(np.asarray(value).dtype), self.loc)

    def shape(self, x: Any) -> tuple[Any, ...]:
        return tuple(x.type.shape)

    def result_type(self, *dts: str) -> str:
        return dtypes.promote(*dts)

    def float_dtype(self, dt: str) -> str:
        return dtypes.narrow(float_math_dtype(dt))


class TypeBuilder(GraphBuilder):
    """Values are TensorTypes; ops run inference only (how composites infer their types)."""

    def __init__(self) -> None:
        super().__init__(None)

    def op(self, name: str, *inputs: Any, **attrs: Any) -> Any:
        return registry.infer(name, list(inputs), attrs)[0]

    def const(self, value: float | int | bool, dtype: str) -> Any:
        return TensorType((), dtype)

    def dtype(self, x: Any) -> str:
        return x.dtype

    def array(self, value: np.ndarray) -> Any:
        return TensorType(np.shape(value), dtypes.narrow(np.asarray(value).dtype))

    def shape(self, x: Any) -> tuple[Any, ...]:
        return tuple(x.shape)


Body = Callable[..., Sequence[Any]]


def eager_of(body: Body, optional: Sequence[str] = ()) -> Callable[..., Any]:
    """The eager function of a composite: the body on numpy arrays.

    Optional tensor inputs arrive positionally only when given (attr has_<name>).
    """

    def eager(*arrays: Any, **attrs: Any) -> Any:
        args = _place_optional(list(arrays), attrs, optional)
        with np.errstate(over="ignore", under="ignore"):
            outs = body(EagerBuilder(), *args, **_body_attrs(attrs, optional))
        return outs[0] if len(outs) == 1 else tuple(outs)

    return eager


def decompose_of(body: Body, optional: Sequence[str] = ()) -> Callable[..., list[Any]]:
    """decompose(graph, inputs, attrs, loc) -> output Values, built from the body."""

    def decompose(graph: Any, inputs: Sequence[Any], attrs: dict[str, Any], loc: SourceLoc | None = None) -> list[Any]:
        args = _place_optional(list(inputs), attrs, optional)
        return list(body(GraphBuilder(graph, loc), *args, **_body_attrs(attrs, optional)))

    return decompose


def types_of(body: Body, ts: Sequence[TensorType], attrs: dict[str, Any], optional: Sequence[str] = ()) -> list[TensorType]:
    args = _place_optional(list(ts), attrs, optional)
    return list(body(TypeBuilder(), *args, **_body_attrs(attrs, optional)))


def _place_optional(values: list[Any], attrs: dict[str, Any], optional: Sequence[str]) -> list[Any]:
    """Positional operands with None where an optional tensor was not given."""
    if not optional:
        return values
    out = [values.pop(0)]
    for name in optional:
        out.append(values.pop(0) if attrs.get(f"has_{name}", False) and values else None)
    return out


def _body_attrs(attrs: dict[str, Any], optional: Sequence[str]) -> dict[str, Any]:
    return {k: v for k, v in attrs.items() if not (k.startswith("has_") and k[4:] in optional)}
