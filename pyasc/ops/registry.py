"""The op registry: every op is defined once, here and in the modules beside it.

An `OpDef` gives an op's
- public signature (`api`): a plain Python function whose parameters say
  which arguments are tensors (`tensor_params`) and which are compile-time
  attributes; calling it on numpy arrays runs the op eagerly, so every
  kernel body is also valid numpy code;
- eager semantics (`eager(*arrays, **attrs)`): what numpy would return. It is
  called exactly like a graph node is run: the node's input arrays
  positionally and the node's attributes as keywords (missing attributes take
  the same defaults as in `api`). Results may be 64-bit where numpy widens
  (int32 / int32 -> float64); inference says the narrowed dtype, and
  `dtypes.narrow(eager(...).dtype) == infer(...).dtype` holds for every op;
- shape/dtype inference (`infer(in_types, attrs) -> tuple[TensorType, ...]`),
  raising `InferError("<op>: <reason naming shapes and dtypes>")`;
- fusion category, purity, whether recomputing it is expensive (XLA's
  IsExpensive idea: transcendental, division-based, reductions, matmuls,
  composites; an op that is not expensive is cheap to recompute), whether its
  two operands commute;
- the facts passes and codegen need about it (every pass reads them here and
  keeps no op-name lists of its own): whether it is `structural` (graph
  structure, not computation: Data, Const, If), a `leaf` (holds a value and
  runs nothing: Data, Const), which attributes hold its subgraphs
  (`subgraph_attrs`: a control op), the axes a reduction reduces
  (`reduced_axes(attrs, ndim)`), whether it is a `row_composite` (softmax,
  log_softmax, layer_norm, rms_norm: a reduction over rows whose output has
  its input's shape), which operands the cube reads (`cube_operands`), and
  the storage formats it reads per operand (`accepted_formats(index)`);
- for composite ops, `decompose(graph, inputs, attrs, loc) -> list[Value]`,
  adding primitive nodes to `graph`;
- `numpy_names`: `np.<name>` functions that mean this op, so numpy code compiles.

Calling conventions the frontend relies on
------------------------------------------
- Every public function (``pyasc.add``, ``pyasc.zeros``, ...) carries
  ``fn.__pyasc_op__``: the registry name of the op it builds.
- A public function that is *sugar* over another op's signature (``zeros``
  and ``ones`` over ``full``, ``astype`` over ``cast``) also carries
  ``fn.__pyasc_bind__(args, kwargs) -> (tensors, attrs)`` that maps its own
  arguments onto the op's. For every other public function the binder is
  ``get(fn.__pyasc_op__).bind``. `bind_call(fn, args, kwargs)` does this
  lookup, so the frontend needs a single call for any public function.
- `numpy_function("zeros")` is the public function an ``np.<name>`` call means
  (bind it with `bind_call` like any other); `numpy_twin` gives the op name.
- `bind` returns tensors in `tensor_params` order. A tensor parameter listed
  in `optional_tensors` may be None: it is then left out of the tensors, and
  the attribute ``has_<param>`` says whether it was given (layer_norm's
  weight/bias, rms_norm's weight). Attributes come out canonical: lists are
  tuples, numpy integers are ints, and the dtype attributes (``dtype``,
  ``out_dtype``) are canonical dtype names ("float16", ...).
- Tensor arguments may be Python scalars in eager mode (``where(c, x, 0.0)``);
  in a graph they become Const nodes. numpy 2 treats such scalars as *weak*,
  so the frontend gives the Const the dtype ``dtypes.promote(<tensor dtypes>,
  scalar)``; the op then infers exactly numpy's result.

Layers refer to ops by name only (the frontend, the passes, codegen's
lowering tables).
"""
from __future__ import annotations

import enum
import functools
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .. import dtypes
from ..errors import InferError
from ..tensor_type import FORMATS, Sym, TensorType


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
BindFn = Callable[[Sequence[Any], Mapping[str, Any]], "tuple[list[Any], dict[str, Any]]"]

#: attributes holding a dtype; `bind` turns whatever names a dtype into its canonical name
DTYPE_ATTRS = frozenset({"dtype", "out_dtype"})

#: storage formats an operand may have: plain row-major only (what almost every op reads), or any
ND_ONLY = frozenset({"ND"})
ANY_FORMAT = frozenset(FORMATS)

#: blocked formats an elementwise op computes in as they are: every operand in that format (the same shape)
#: or a single element; the result keeps the format (the channel padding is computed like any element)
ELEMENTWISE_FORMATS = frozenset({"NC1HWC0"})
_ELEMENTWISE = frozenset({Category.ELEMWISE, Category.BROADCAST})

# reduced_axes(attrs, input rank) -> the axes a reduction reduces, sorted and non-negative
ReduceAxesFn = Callable[[Mapping[str, Any], int], "tuple[int, ...]"]


@dataclass(frozen=True)
class CubeOperand:
    """An operand the cube unit reads (from GM through L1 into L0A/L0B), not the vector unit."""

    index: int             # position among the node's inputs
    name: str              # "a" / "b", as layout decisions name it
    transpose_attr: str    # the boolean attribute that transposes it on the way in ("transpose_a")


@dataclass(frozen=True)
class DataError:
    """numpy raises on some data for an op (np.nanargmax on an all-NaN slice): the frontend records `failing`
    as a data check (frontend/checks.py), so the call raises `exception(message)` after the launch."""

    exception: str         # numpy's exception class name ("ValueError")
    message: str           # numpy's message
    #: a composite body (builder, *inputs, **attrs) -> a bool tensor, True where numpy raises (None: never)
    failing: Callable[..., Any]


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
    #: tensor parameters that may be None (then dropped; attr "has_<param>" records it)
    optional_tensors: tuple[str, ...] = ()
    #: binary ops whose two operands can be swapped (add, mul, maximum, eq, ...)
    commutative: bool = False
    #: tensor parameters that take no part in dtype promotion (where's condition is only tested for
    #: truth), so a Python scalar passed there keeps its own type instead of its neighbours'
    unpromoted: tuple[str, ...] = ()
    #: graph structure rather than computation (Data, Const, If): never folded, sunk or decomposed
    structural: bool = False
    #: holds a value and computes nothing (Data, Const): no kernel step, not counted as an op
    leaf: bool = False
    #: attributes holding subgraphs, in the order their kernels are scheduled (If: then, else)
    subgraph_attrs: tuple[str, ...] = ()
    #: for a reduction (category REDUCE): the axes it reduces given its attributes and input rank
    reduce_axes: ReduceAxesFn | None = None
    #: a reduction over trailing axes whose output has its input's shape (softmax, layer_norm, ...)
    row_composite: bool = False
    #: operands the cube reads (matmul family); empty for every vector op
    cube_operands: tuple[CubeOperand, ...] = ()
    #: storage formats accepted on input i (i < len), and on every other input
    operand_formats: tuple[frozenset[str], ...] = ()
    other_formats: frozenset[str] = ND_ONLY
    #: its public functions return a sequence of tensors (split): a call gives a tuple, even of one piece
    returns_sequence: bool = False
    #: multiply-adds the cube does for it given its input types and attributes (a roofline's compute bound);
    #: None: the matmul rule (output elements x the contraction) for MATMUL ops, no cube work for the rest
    cube_macs: Callable[[Sequence[TensorType], Mapping[str, Any]], int] | None = None
    #: vector work a cube op's own launch does before the cube starts (a conv: converting its weights to the
    #: cube's format); GE's mixed_kernels marks such kernels and says this in the fusion log
    mixed_prologue: str = ""
    #: its result is its operand's elements at other strides, none computed (transpose, reshape, squeeze,
    #: expand_dims, slice): an op whose kernel reads and writes GM by strides may take it into its kernel
    #: (fusion proposes, the capacity function says whether the op's template can)
    strided_view: bool = False
    #: numpy raises on some values of its operands (DataError), recorded as a data check by the frontend
    data_error: DataError | None = None

    @property
    def vjp(self) -> "VjpRule | None":
        """The op's reverse-mode derivative rule (see `register_vjp`), or None: a composite without one is
        differentiated through its decomposition, any other op has no derivative pyasc knows."""
        return _VJP.get(self.name)

    @property
    def public_name(self) -> str:
        """The name users call it by (`pyasc.<public_name>`): the api function's name."""
        return self.api.__name__ if self.api is not None else self.name

    @property
    def composite(self) -> bool:
        return self.decompose is not None

    @property
    def is_control(self) -> bool:
        """Runs subgraphs (If): one step on the host, its branches are the device work."""
        return bool(self.subgraph_attrs)

    @property
    def is_reduction(self) -> bool:
        return self.reduce_axes is not None

    def reduced_axes(self, attrs: Mapping[str, Any], ndim: int) -> tuple[int, ...]:
        """The axes this reduction reduces on an input of rank `ndim` (sorted; none for a 0-d input)."""
        if self.reduce_axes is None:
            raise TypeError(f"op {self.name} is not a reduction")
        return self.reduce_axes(attrs, ndim) if ndim else ()

    def accepted_formats(self, index: int) -> frozenset[str]:
        """Storage formats the op reads on input `index` without a conversion node (an elementwise op also
        reads the `ELEMENTWISE_FORMATS` when all its operands share one: `infer` checks that)."""
        if index < len(self.operand_formats):
            return self.operand_formats[index]
        if self.category in _ELEMENTWISE:
            return self.other_formats | ELEMENTWISE_FORMATS
        return self.other_formats

    @functools.cached_property
    def signature(self) -> inspect.Signature:
        if self.api is None:
            raise TypeError(f"op {self.name} has no public signature")
        return inspect.signature(self.api)

    @property
    def attr_defaults(self) -> dict[str, Any]:
        """Defaults of the attribute parameters of the public signature."""
        if self.api is None:
            return {}
        return {
            p.name: p.default
            for p in self.signature.parameters.values()
            if p.name not in self.tensor_params and p.default is not inspect.Parameter.empty
        }

    def bind(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """Split a call of the public signature into tensor operands and attributes.

        Raises TypeError (wrong arguments) like Python itself would, naming the op.
        """
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.name}(): {e}") from None
        bound.apply_defaults()
        tensors: list[Any] = []
        attrs: dict[str, Any] = {}
        for pname, value in bound.arguments.items():
            if pname in self.tensor_params:
                continue
            attrs[pname] = canonical_attr(pname, value)
        for pname in self.tensor_params:
            value = bound.arguments[pname]
            if pname in self.optional_tensors:
                attrs[f"has_{pname}"] = value is not None
                if value is None:
                    continue
            elif value is None:
                raise TypeError(f"{self.name}(): argument {pname!r} must be a tensor or a scalar, got None")
            tensors.append(value)
        return tensors, attrs


def canonical_attr(name: str, value: Any) -> Any:
    """An attribute value in canonical form: tuples not lists, ints not numpy ints, dtype names."""
    if name in DTYPE_ATTRS and value is not None:
        try:
            return "bool" if value is bool else np.dtype(value).name
        except TypeError:
            return value  # not a dtype at all: inference reports it with the op's name
    return _canonical_value(value)


def _canonical_value(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_canonical_value(v) for v in value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


# The registry proper: filled once, at import of the op modules, never mutated afterwards.
_REGISTRY: dict[str, OpDef] = {}
_NUMPY_TWINS: dict[str, str] = {}
_PUBLIC: dict[str, Callable[..., Any]] = {}  # public name -> public function (ops and sugar)
_NUMPY_FUNCTIONS: dict[str, Callable[..., Any]] = {}  # np name -> public function


def register(op: OpDef) -> OpDef:
    if op.name in _REGISTRY:
        raise ValueError(f"op {op.name!r} registered twice")
    missing = [p for p in op.tensor_params + op.optional_tensors
               if op.api is not None and p not in inspect.signature(op.api).parameters]
    if missing:
        raise ValueError(f"op {op.name!r}: tensor params {missing} are not parameters of its api")
    if (op.category == Category.REDUCE) != (op.reduce_axes is not None):
        raise ValueError(f"op {op.name!r}: a REDUCE op needs reduce_axes, and only a REDUCE op has them")
    _REGISTRY[op.name] = op
    if op.api is not None:
        # the public name is the api function's (comparisons are `pyasc.less`, not `pyasc.lt`:
        # `pyasc.ge` is the optimiser package)
        if op.public_name in _PUBLIC:
            raise ValueError(f"public name {op.public_name!r} of op {op.name!r} is taken")
        _PUBLIC[op.public_name] = _make_public(op)
    for np_name in op.numpy_names:
        _add_numpy_name(np_name, op.name, _PUBLIC[op.public_name])
    return op


def register_sugar(
    name: str, op_name: str, api: Callable[..., Any], binder: BindFn, numpy_names: Sequence[str] = ()
) -> Callable[..., Any]:
    """Register public function `name` that builds op `op_name` through `binder`.

    `api` gives the signature and doc; `binder(args, kwargs) -> (tensors, attrs)`
    maps a call of `api` onto the op's tensors and attributes.
    """
    if name in _PUBLIC:
        raise ValueError(f"public function {name!r} registered twice")
    op = get(op_name)

    @functools.wraps(api)
    def fn(*args: Any, **kwargs: Any) -> Any:
        tensors, attrs = binder(args, kwargs)
        return op.eager(*tensors, **attrs)

    fn.__pyasc_op__ = op_name  # type: ignore[attr-defined]
    fn.__pyasc_bind__ = binder  # type: ignore[attr-defined]
    _PUBLIC[name] = fn
    for np_name in numpy_names:
        _add_numpy_name(np_name, op_name, fn)
    return fn


def _add_numpy_name(np_name: str, op_name: str, fn: Callable[..., Any]) -> None:
    if np_name in _NUMPY_TWINS:
        raise ValueError(f"np.{np_name} already means op {_NUMPY_TWINS[np_name]!r}")
    _NUMPY_TWINS[np_name] = op_name
    _NUMPY_FUNCTIONS[np_name] = fn


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


def numpy_function(np_name: str) -> Callable[..., Any] | None:
    """The public function that `np.<np_name>` means (bind it with `bind_call`), or None."""
    return _NUMPY_FUNCTIONS.get(np_name)


def numpy_names() -> list[str]:
    """Every `np.<name>` the registry has a twin for."""
    return sorted(_NUMPY_TWINS)


def infer(name: str, in_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> list[TensorType]:
    """The op's output types for these operand types and attributes (InferError when it rejects them).

    Inference is a pure function of its arguments, and the compiler asks the same question many times (a node
    is inferred when built, again by the verifier after every pass that changed its graph, a composite's types
    trace its whole decomposition): when every operand type and attribute value is a plain immutable value
    (see `_frozen`), the answer is remembered. Anything else (an array, a subgraph, a dict) is inferred afresh."""
    try:
        key = (name, _frozen(tuple(in_types)), _frozen_attrs(attrs))
    except _NotFrozen:
        return _infer(name, in_types, attrs)
    op = get(name)
    entry = _INFERRED.get(key)
    if entry is not None and entry[0] is op:  # the same definition (a test may swap an op's record)
        return list(entry[1])
    found = _infer(name, in_types, attrs)
    if _frozen_attrs(attrs) == key[2]:  # an op that wrote into its attrs would skip that on a hit: never kept
        if len(_INFERRED) >= _INFERRED_MAX:
            _INFERRED.clear()
        _INFERRED[key] = (op, tuple(found))
    return found


def _infer(name: str, in_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> list[TensorType]:
    op = get(name)
    out = list(op.infer(in_types, attrs))
    if op.category in _ELEMENTWISE and any(t.format in ELEMENTWISE_FORMATS for t in in_types):
        return elementwise_format(name, in_types, out)
    return out


_INFERRED: dict[tuple, tuple[OpDef, tuple[TensorType, ...]]] = {}  # (op, operands, attrs) -> (its record, outputs)
_INFERRED_MAX = 50_000


class _NotFrozen(Exception):
    """A value `_frozen` does not key (mutable, or of a type whose equality is not exact)."""


_SCALARS = (int, str, bool, type(None))


def _frozen(v: Any) -> Any:
    """A key equal for two values exactly when inference cannot tell them apart: the type is part of it at every
    level (1, 1.0 and True differ; a tuple is not a list), a float keys by its bits (0.0 is not -0.0)."""
    t = type(v)
    if t in _SCALARS:
        return (t, v)
    if t is float:
        return (t, v.hex())
    if t is tuple or t is list:
        return (t, tuple(_frozen(x) for x in v))
    if t is TensorType or t is Sym:  # frozen records of ints, strings and symbolic expressions
        return (t, v)
    raise _NotFrozen


def _frozen_attrs(attrs: Mapping[str, Any]) -> tuple:
    if type(attrs) is not dict:
        raise _NotFrozen
    return tuple((k, _frozen(v)) for k, v in attrs.items())


def elementwise_format(name: str, in_types: Sequence[TensorType], out: list[TensorType]) -> list[TensorType]:
    """An elementwise op's results in the blocked format its operands share (see `ELEMENTWISE_FORMATS`), or
    InferError when they do not share one."""
    blocked = sorted({t.format for t in in_types if t.format != "ND"})
    fmt = blocked[0]
    if len(blocked) > 1 or fmt not in ELEMENTWISE_FORMATS:
        raise InferError(f"{name}: operands stored {' and '.join(blocked)}; an elementwise op computes in "
                         f"{', '.join(sorted(ELEMENTWISE_FORMATS))} only, with every operand in it")
    for t in in_types:
        if t.format == fmt and t.shape == out[0].shape or t.format == "ND" and t.numel == 1:
            continue
        raise InferError(f"{name}: an operand {t} does not fit the {fmt} result {out[0].with_format(fmt)}: "
                         f"every operand must be {fmt} of the result's shape or a single element")
    result = [t.with_format(fmt) for t in out]
    blocks = {t.storage_shape[-1] for t in (*in_types, *result) if t.format == fmt and t.is_static}
    if len(blocks) > 1:  # e.g. a float16 -> int8 cast: 16-channel blocks in, 32-channel blocks out
        raise InferError(f"{name}: its {fmt} operands and results have different channel blocks "
                         f"({', '.join(map(str, sorted(blocks)))}); it cannot compute element by element in {fmt}")
    return result


def public(op: OpDef) -> Callable[..., Any]:
    """The user-facing function for an op: runs it eagerly on numpy arrays (one object per op)."""
    if op.api is None:
        raise TypeError(f"op {op.name} has no public signature")
    return _PUBLIC[op.public_name]


def public_functions() -> dict[str, Callable[..., Any]]:
    """Every public function by its public name: one per op with a signature, plus sugar (zeros, astype)."""
    return dict(sorted(_PUBLIC.items()))


def bind_call(fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[str, list[Any], dict[str, Any]]:
    """Bind a call of public function `fn`: returns (op name, tensor operands, attributes).

    Raises TypeError when `fn` is not a pyasc public function or the arguments do not fit it.
    """
    op_name = getattr(fn, "__pyasc_op__", None)
    if op_name is None:
        raise TypeError(f"{getattr(fn, '__name__', fn)!r} is not a pyasc op")
    binder = getattr(fn, "__pyasc_bind__", None) or get(op_name).bind
    tensors, attrs = binder(args, kwargs)
    return op_name, tensors, attrs


def _make_public(op: OpDef) -> Callable[..., Any]:
    assert op.api is not None

    @functools.wraps(op.api)
    def fn(*args: Any, **kwargs: Any) -> Any:
        tensors, attrs = op.bind(args, kwargs)
        return op.eager(*tensors, **attrs)

    fn.__pyasc_op__ = op.name  # type: ignore[attr-defined]  # the frontend resolves calls by this tag
    fn.__doc__ = op.doc or op.api.__doc__
    return fn


# ---- structural ops: graph inputs, constants, If ---------------------------


def _infer_data(in_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    if in_types:
        raise InferError(f"Data: takes no inputs, got {len(in_types)}")
    t = attrs.get("type")
    if not isinstance(t, TensorType):
        raise InferError(f"Data: attribute 'type' must be a TensorType, got {t!r}")
    return (t,)


def _infer_const(in_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    if in_types:
        raise InferError(f"Const: takes no inputs, got {len(in_types)}")
    value = attrs.get("value")
    if not isinstance(value, np.ndarray):
        raise InferError(f"Const: attribute 'value' must be a numpy array, got {type(value).__name__}")
    return (TensorType(value.shape, dtypes.narrow(value.dtype)),)


def _infer_if(in_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    if not in_types:
        raise InferError("If: needs a condition input")
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


def _const_eager(*, value: Any) -> Any:
    return value


register(OpDef("Data", Category.OPAQUE, _infer_data, _no_eager, doc="graph input", structural=True, leaf=True))
register(OpDef("Const", Category.OPAQUE, _infer_const, _const_eager, doc="constant", structural=True, leaf=True))
# an If hands each operand to its branch's Data as it is, in whatever format it has
register(OpDef("If", Category.OPAQUE, _infer_if, _no_eager, doc="run then_branch or else_branch", structural=True,
               subgraph_attrs=("then_branch", "else_branch"), other_formats=ANY_FORMAT))


# ---- derivatives: one VJP rule per op ----------------------------------------------------------
#
# A VJP rule is `rule(ctx) -> cotangents`, one entry per node input (None: no cotangent, i.e. zero or not
# differentiable); `ctx` (ops/vjp_common.py: VjpContext) holds a Builder, the node's inputs and outputs,
# the cotangent of each output (None: zero) and its attributes. Written against a Builder, the same rule
# adds backward nodes to a graph (autodiff) or computes on numpy arrays (the float64 tests). The rules are
# registered by the ops/vjp_*.py modules, keyed by the registry's op name, next to the op definitions.

VjpRule = Callable[[Any], Sequence[Any]]
_VJP: dict[str, VjpRule] = {}


def register_vjp(name: str, rule: VjpRule) -> VjpRule:
    """Give op `name` its VJP rule (once; the op must be registered)."""
    get(name)  # an unknown op is a KeyError naming it
    if name in _VJP:
        raise ValueError(f"op {name!r} has a VJP rule already")
    _VJP[name] = rule
    return rule


def vjp_ops() -> list[str]:
    """Ops with a VJP rule of their own."""
    return sorted(_VJP)
