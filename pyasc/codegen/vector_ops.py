"""The per-tile computation of a vector kernel, as ops over virtual buffers.

A vector kernel works on tiles of its domain: every value is either a FULL
tile (rows x row length of the domain) or a ROW tile (one value per row:
the result of a reduction over the row, kept or dropped dims alike). This
module turns the kernel graph's nodes into a list of `VOp`s over `VBuf`s
(virtual buffers), applying the lowering table: operands are cast to the
dtype each instruction computes in, lower-space operands are expanded to
the op's space, Python-scalar constants become immediate operands. Sizes are
symbolic here: a `Geometry` supplies the element counts when the template
turns VOps into tile ops, so the same VOps serve every tile size.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from .. import dtypes, ops
from ..ir import Node, Value, is_annotation
from ..symbolic import IntLike
from .alignment import Placements
from .domain import UnsupportedDomain
from .kernel_graph import KernelGraph
from .strided import Layout, is_input_view, output_view_nodes, output_views, view_read
from .lowering import BOOL_FN, INT_IDENTITY, REDUCE, VectorLowering, no_lowering, vector_lowering


class Space(enum.IntEnum):
    SCALAR = 0  # one value for the whole kernel (a 1-element input)
    ROW = 1     # one value per row of the tile
    FULL = 2    # the whole tile


@dataclass(eq=False)
class VBuf:
    id: int
    space: Space
    dtype: str
    what: str = ""          # readable origin: "x", "exp %3", "cast", ...

    def __repr__(self) -> str:
        return f"v{self.id}:{self.space.name}:{self.dtype}"


class VKind(enum.Enum):
    """What a vector op does (each becomes one vector instruction per tile, `placement.translate_vop`)."""

    BINARY = "binary"
    SCALAR = "scalar"
    UNARY = "unary"
    COMPARE = "compare"
    SELECT = "select"
    CAST = "cast"
    DUP = "dup"
    COPY = "copy"
    REDUCE = "reduce"
    EXPAND = "expand"                 # ROW -> FULL
    FINALIZE_MEAN = "finalize_mean"   # a mean's division by the row length


@dataclass
class VOp:
    kind: VKind
    dst: VBuf
    srcs: tuple[Any, ...]           # VBufs or immediate scalars
    fn: str = ""
    dtype: str = ""                 # the instruction's dtype (cast: the source dtype)
    reverse: bool = False           # vscalar: fn(scalar, src)
    note: str = ""

    @property
    def reads(self) -> list[VBuf]:
        return [s for s in self.srcs if isinstance(s, VBuf)]


@dataclass
class Geometry:
    """Element counts of one tile (expressions over the tiling fields and loop variables)."""

    full: IntLike           # elements of a FULL value
    row: IntLike            # elements of a ROW value (rows in the tile)
    rows: IntLike           # rows, for vreduce / vbroadcast
    cols: IntLike           # valid elements of one row in this tile (the rest is padding)
    stride: IntLike         # elements between row starts in a FULL buffer

    def count(self, space: Space) -> IntLike:
        return self.full if space == Space.FULL else self.row


@dataclass
class InputUse:
    """A kernel input read into a virtual buffer in a given space."""

    index: int              # local Data index
    value: Value            # the local Data value
    space: Space
    buf: VBuf
    shape: tuple = ()       # the shape its layout is read as (a view of it: the view's placement; else its own)
    view: Layout | None = None  # a view's strides into it (`strided.view_read`); None: its bytes in order


@dataclass
class VectorPlan:
    ops: list[VOp]
    inputs: list[InputUse]
    outputs: list[tuple[int, VBuf]]          # (local output index, buffer holding it)
    buffers: list[VBuf]
    reductions: list[VOp] = field(default_factory=list)


#: a value's space; for an input, given the shape it is read with (its placement for that reader)
SpaceFn = Callable[..., Space]


class _Builder:
    def __init__(self, kg: KernelGraph, space_of: SpaceFn, kernel: str, placed: Placements | None):
        self.kg = kg
        self.space_of = space_of
        self.kernel = kernel
        self.placed = placed
        self.reader: Node | None = None              # the node whose operands are being read
        self.ops: list[VOp] = []
        self.bufs: list[VBuf] = []
        self.env: dict[Value, Any] = {}              # value -> VBuf or immediate scalar
        self.inputs: dict[tuple, InputUse] = {}  # (input, space, shape, view) -> its load
        self.cache: dict[tuple, VBuf] = {}           # (buf id, space, dtype) -> converted buffer
        self.data_index = {n.out(): n.attrs["index"] for n in kg.graph.nodes if n.op == "Data"}
        self.reductions: list[VOp] = []
        # views the result is written through (strided.output_views): the value's buffer is the output's
        self.written_through = output_view_nodes(kg, output_views(kg))

    def new(self, space: Space, dtype: str, what: str) -> VBuf:
        b = VBuf(len(self.bufs), space, dtype, what)
        self.bufs.append(b)
        return b

    def emit(self, op: VOp) -> VBuf:
        self.ops.append(op)
        return op.dst

    # ---- operands ------------------------------------------------------------------------
    def operand(self, v: Value, space: Space, dtype: str) -> Any:
        """`v` in `space` as `dtype`: an immediate scalar, or a buffer (loaded, expanded, cast as needed)."""
        if v.node.op == "Const":
            return _scalar(v.node.attrs["value"], dtype)
        if v.node.op == "Data":
            shape = self.read_shape(v)
            src = self.load(v, min(space, self.space_of(v, shape)), shape)
        elif v not in self.env and is_input_view(v):
            # a view of an input (expand_dims; a slice, transpose, ... fusion put here): read through its strides
            read = view_read(v, self.read_shape(v))
            if isinstance(read, str):
                raise UnsupportedDomain(f"{_label(v.node)}: {read}")
            src = self.load(read.root, min(space, self.space_of(v, read.shape)), read.shape, read.layout)
        else:
            src = self.env[v]
            if not isinstance(src, VBuf):  # an identity of a constant (a size-1 argsort, ...) is its immediate
                return _scalar(src, dtype)
        return self.convert(src, space, dtype)

    def read_shape(self, v: Value) -> tuple:
        """The shape an input (or a view of one) is read with: its placement for the current reader (an
        output is stored in its own shape)."""
        if self.placed is None:
            return tuple(v.type.shape)
        if self.reader is None:
            return tuple(self.placed.shape(v))
        return tuple(self.placed.operand_shape(self.reader, v))

    def load(self, v: Value, space: Space, shape: tuple, view: Layout | None = None) -> VBuf:
        key = (v, space, shape, view)
        if key not in self.inputs:
            buf = self.new(space, v.type.dtype, v.node.name or f"in{self.data_index[v]}")
            self.inputs[key] = InputUse(self.data_index[v], v, space, buf, shape, view)
        return self.inputs[key].buf

    def convert(self, src: VBuf, space: Space, dtype: str) -> VBuf:
        key = (src.id, space, dtype)
        if (src.space, src.dtype) == (space, dtype):
            return src
        if key in self.cache:
            return self.cache[key]
        cur = src
        # cast in the smaller space (fewer elements), then expand
        if cur.dtype != dtype:
            cur = self.emit(VOp(VKind.CAST, self.new(cur.space, dtype, f"{src.what} as {dtype}"), (cur,),
                                dtype=cur.dtype, note=f"cast {cur.dtype}->{dtype}"))
        if cur.space < space:
            cur = self.emit(VOp(VKind.EXPAND, self.new(space, cur.dtype, f"{src.what} expanded"), (cur,),
                                dtype=cur.dtype, note=f"broadcast {cur.space.name} -> {space.name}"))
        self.cache[key] = cur
        return cur

    # ---- nodes ------------------------------------------------------------------------------
    def node(self, n: Node) -> None:
        if is_input_view(n.out()):
            return  # read through when used (see operand)
        if n in self.written_through:
            self.env[n.out()] = self.env[n.inputs[0]]  # stored through its strides (placement.stores)
            return
        self.reader = n
        if n.op in REDUCE:
            self.reduce(n)
            return
        low = vector_lowering(n.op)
        if low is None:
            raise no_lowering(n.op, self.kernel, n.loc, "the vector unit has no instruction for it")
        out = n.outputs[0]
        space = self.space_of(n.out())
        handler = getattr(self, f"_{low.kind}")
        self.env[n.out()] = handler(n, low, space, out.dtype)

    def _compute_dtype(self, n: Node, low: VectorLowering, out_dtype: str) -> str:
        if low.compute == "in":
            return dtypes.promote(*[v.type.dtype for v in n.inputs])
        return out_dtype

    def _binary(self, n: Node, low: VectorLowering, space: Space, out_dtype: str) -> VBuf:
        dt = self._compute_dtype(n, low, out_dtype)
        fn = BOOL_FN.get(low.fn, low.fn) if dt == "bool" else low.fn
        a, b = (self.operand(v, space, dt) for v in n.inputs)
        label = _label(n)
        dst = self.new(space, dt, label)
        if isinstance(a, VBuf) and isinstance(b, VBuf):
            return self.emit(VOp(VKind.BINARY, dst, (a, b), fn, dt, note=label))
        if isinstance(a, VBuf):
            return self.emit(VOp(VKind.SCALAR, dst, (a, b), fn, dt, note=label))
        if isinstance(b, VBuf):
            return self.emit(VOp(VKind.SCALAR, dst, (b, a), fn, dt, reverse=True, note=label))
        return self.emit(VOp(VKind.DUP, dst, (_eval_binary(n, a, b, dt),), dtype=dt, note=label))

    def _compare(self, n: Node, low: VectorLowering, space: Space, out_dtype: str) -> VBuf:
        dt = self._compute_dtype(n, low, out_dtype)
        a, b = (self.operand(v, space, dt) for v in n.inputs)
        label = _label(n)
        dst = self.new(space, "bool", label)
        fn = low.fn
        if not isinstance(a, VBuf):
            if not isinstance(b, VBuf):
                return self.emit(VOp(VKind.DUP, dst, (_eval_binary(n, a, b, dt),), dtype="bool", note=label))
            a, b, fn = b, a, _SWAPPED[fn]
        return self.emit(VOp(VKind.COMPARE, dst, (a, b), fn, dt, note=label))

    def _unary(self, n: Node, low: VectorLowering, space: Space, out_dtype: str) -> VBuf:
        x = n.inputs[0]
        if low.fn in INT_IDENTITY and x.type.dtype not in ("float16", "float32"):
            return self.operand(x, space, out_dtype)
        dt = out_dtype
        fn = "not" if low.fn == "not" else low.fn
        src = self.operand(x, space, dt)
        label = _label(n)
        return self.emit(VOp(VKind.UNARY, self.new(space, dt, label), (src,), fn, dt, note=label))

    def _select(self, n: Node, low: VectorLowering, space: Space, out_dtype: str) -> VBuf:
        cond, x, y = n.inputs
        mask = self.operand(cond, space, "bool")
        a, b = self.operand(x, space, out_dtype), self.operand(y, space, out_dtype)
        label = _label(n)
        dst = self.new(space, out_dtype, label)
        if not isinstance(mask, VBuf):
            pick = a if bool(mask) else b
            if isinstance(pick, VBuf):
                return self.emit(VOp(VKind.COPY, dst, (pick,), dtype=out_dtype, note=label))
            return self.emit(VOp(VKind.DUP, dst, (pick,), dtype=out_dtype, note=label))
        return self.emit(VOp(VKind.SELECT, dst, (mask, a, b), dtype=out_dtype, note=label))

    def _cast(self, n: Node, low: VectorLowering, space: Space, out_dtype: str) -> Any:
        x = n.inputs[0]
        src = self.operand(x, space, x.type.dtype)
        if not isinstance(src, VBuf):
            return self.emit(VOp(VKind.DUP, self.new(space, out_dtype, _label(n)), (_scalar(np.asarray(src), out_dtype),),
                                 dtype=out_dtype, note=_label(n)))
        return self.convert(src, space, out_dtype)

    def _full(self, n: Node, low: VectorLowering, space: Space, out_dtype: str) -> VBuf:
        value = _scalar(np.asarray(n.attrs["fill_value"]), out_dtype)
        return self.emit(VOp(VKind.DUP, self.new(space, out_dtype, _label(n)), (value,), dtype=out_dtype,
                             note=_label(n)))

    def _identity(self, n: Node, low: VectorLowering, space: Space, out_dtype: str) -> Any:
        return self.operand(n.inputs[0], space, out_dtype)

    def reduce(self, n: Node) -> None:
        fn, is_mean = REDUCE[n.op]
        out_dtype = n.outputs[0].dtype
        src = self.operand(n.inputs[0], Space.FULL, out_dtype)
        label = _label(n)
        if not isinstance(src, VBuf):
            raise no_lowering(n.op, self.kernel, n.loc, "a reduction of a constant reached codegen")
        op = VOp(VKind.REDUCE, self.new(Space.ROW, out_dtype, label), (src,), fn, out_dtype, note=label)
        res = self.emit(op)
        self.reductions.append(op)
        if is_mean:
            res = self.emit(VOp(VKind.FINALIZE_MEAN, self.new(Space.ROW, out_dtype, label + " / n"), (res,),
                                "div", out_dtype, note="mean: divide by the row length"))
        self.env[n.out()] = res


_SWAPPED = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le", "eq": "eq", "ne": "ne"}


def _label(n: Node) -> str:
    return f"{n.op}" + (f" {n.name}" if n.name else "")


def _scalar(value: Any, dtype: str) -> Any:
    """A Python number of `dtype`'s kind holding `value` (immediate operands are numbers)."""
    arr = np.asarray(value).reshape(()).astype(dtypes.to_numpy(dtype))
    if dtype in ("float16", "float32"):
        return float(arr)
    return int(arr)


def _eval_binary(n: Node, a: Any, b: Any, dtype: str) -> Any:
    """An op of two constants (the optimiser folds these at opt_level >= 1), evaluated eagerly."""
    res = ops.get(n.op).eager(np.asarray(a, dtypes.to_numpy(dtype)), np.asarray(b, dtypes.to_numpy(dtype)),
                              **{k: v for k, v in n.attrs.items() if not is_annotation(k)})
    return _scalar(res, n.outputs[0].dtype)


def build_vector_plan(kg: KernelGraph, nodes: Sequence[Node], space_of: SpaceFn, kernel: str,
                      env: dict[Value, Any] | None = None, placed: Placements | None = None) -> VectorPlan:
    """VOps computing `nodes` (a topologically ordered subset of the kernel graph's nodes).

    `env` gives values computed elsewhere (e.g. reductions of an earlier pass) as buffers; `placed`: where
    the kernel's values sit in its domain (`alignment.placements`; None: every value at its own shape).
    """
    b = _Builder(kg, space_of, kernel, placed)
    if env:
        b.env.update(env)
    for n in nodes:
        b.node(n)
    b.reader = None
    outputs = []
    for i, v in enumerate(kg.graph.outputs):
        if v.node.op == "Const":  # a kernel that only writes a constant (an If branch returning one)
            value = _scalar(v.node.attrs["value"], v.type.dtype)
            out = b.emit(VOp(VKind.DUP, b.new(space_of(v), v.type.dtype, "constant"), (value,), dtype=v.type.dtype))
        elif v.node.op == "Data":
            out = b.operand(v, space_of(v), v.type.dtype)
        elif v in b.env or is_input_view(v):
            out = b.operand(v, space_of(v), v.type.dtype) if v not in b.env else b.env[v]
        else:
            continue
        if not isinstance(out, VBuf):  # an op that reduced to an immediate (broadcast_to of a constant)
            out = b.emit(VOp(VKind.DUP, b.new(space_of(v), v.type.dtype, "constant"), (_scalar(out, v.type.dtype),),
                             dtype=v.type.dtype))
        outputs.append((i, out))
    return VectorPlan(b.ops, list(b.inputs.values()), outputs, b.bufs, b.reductions)
