"""The FX frontend: an FX (aten) graph -> a pyasc `ir.Graph`, node by node through the op registry.

Each placeholder becomes a Data input typed from torch's `meta["val"]`; each call is lowered by its
entry in the aten table (aten_table.py), which adds registry ops with `cx.op(...)`; the output node
gives the graph's outputs. No Python source is generated and nothing is written: the graph goes
straight to the optimiser (runtime.GraphKernel), like a graph from pyasc's own frontend.

Types follow torch, not numpy: an entry computes in the dtype torch gives the node's result (Python
numbers become constants of that dtype), and after every node the value is cast to torch's dtype if
pyasc's inference differs (a shape that differs is `Unsupported`: the node stays in PyTorch). torch's int64
(token ids, labels, indices) is computed as int32 (convert.NARROWED; the backend checks and narrows the
graph's int64 inputs, widens its int64 outputs). Nodes carry the user's source line from FX's
`stack_trace`, so a pyasc error points at the model's code.
A pyasc op registered with `pyasc.torch.custom_op` is inlined: its kernel's graph (or, for its
derived backward op, the backward graph) is spliced in, so it fuses with its neighbours.
"""
from __future__ import annotations

import linecache
import operator
import re
from typing import Any, Callable

import numpy as np
import torch
from torch._subclasses.fake_tensor import unset_fake_temporarily

from ..errors import CompileError, InferError, SourceLoc
from ..ir.graph import Graph, Value
from ..tensor_type import TensorType
from .convert import NARROWED, graph_dtype, narrow_fits
from .custom_op import inlinable
from .peephole import BatchedLinear, batched_linears
from .splice import splice


class Unsupported(Exception):
    """A node the table cannot lower as it is (the node runs in eager PyTorch)."""


_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>\S+)\n(?P<code>[^\n]*)')


def source_loc(node: torch.fx.Node) -> SourceLoc | None:
    """The user's line that made this node (the innermost frame of FX's stack trace)."""
    frames = list(_FRAME.finditer(node.meta.get("stack_trace") or ""))
    if not frames:
        return None
    m = frames[-1]
    filename, lineno = m.group("file"), int(m.group("line"))
    line = linecache.getline(filename, lineno)  # the trace strips the line's indentation: read it
    return SourceLoc(filename, lineno, len(line) - len(line.lstrip()))


def where(node: torch.fx.Node) -> str:
    """Where a node comes from, as a graph-break report says it: the stack trace's last frame."""
    trace = node.meta.get("stack_trace") or ""
    lines = [ln.strip() for ln in trace.strip().splitlines() if ln.strip().startswith("File ")]
    return lines[-1] if lines else f"aten graph node {node.name}"


def vals(node: torch.fx.Node) -> list[Any]:
    val = node.meta.get("val")
    return list(val) if isinstance(val, (tuple, list)) else [val]


def tensor_type(t: torch.Tensor) -> TensorType:
    """The graph type of a torch tensor (an int64 one: int32, convert.NARROWED)."""
    dtype = graph_dtype(t.dtype)
    if dtype is None:
        raise Unsupported(f"dtype {t.dtype}")
    return TensorType(tuple(int(d) for d in t.shape), dtype)


#: a node computed from constants only (arange, full, the masks torch's decompositions build from them) is
#: evaluated by torch at compile time and becomes a Const (int64 values as int32 when they fit), up to this
#: many elements; random ops (torch's nondeterministic_seeded tag) never are
CONSTANT_LIMIT = 1 << 16


def constant_value(node: Any) -> np.ndarray | None:
    """The value of a node that depends on no graph input (evaluated by torch, memoised on the node), as an
    array of a dtype the chip has (int64 narrowed to int32 when the values fit), or None."""
    if not isinstance(node, torch.fx.Node) or node.op != "call_function":
        return None
    if torch.Tag.nondeterministic_seeded in getattr(node.target, "tags", ()):
        return None  # random values: drawn anew at every call, never a constant
    if "pyasc_constant" in node.meta:
        return node.meta["pyasc_constant"]
    value = None
    with unset_fake_temporarily():  # real values, even while torch.compile traces with fake tensors
        try:
            args = torch.fx.node.map_arg((node.args, node.kwargs), _constant_arg)
            with torch.no_grad():
                out = node.target(*args[0], **args[1])
            if isinstance(out, torch.Tensor) and out.numel() <= CONSTANT_LIMIT:
                narrow = NARROWED.get(out.dtype)
                if narrow is not None:
                    if not narrow_fits(out):
                        raise _NotConstant
                    out = out.to(narrow)
                if graph_dtype(out.dtype) is not None:
                    value = out.detach().cpu().numpy()
        except _NotConstant:
            value = None
        except Exception:  # noqa: BLE001 - whatever torch refuses to evaluate is simply not folded
            value = None
    node.meta["pyasc_constant"] = value
    return value


class _NotConstant(Exception):
    pass


def _constant_arg(n: torch.fx.Node) -> Any:
    v = constant_value(n)
    if v is None:
        raise _NotConstant
    return torch.from_numpy(v)


class Lowering:
    """What a table entry works with: the graph being built, the FX node, its arguments' values."""

    def __init__(self, graph: Graph, env: dict[torch.fx.Node, Any], node: torch.fx.Node):
        self.graph = graph
        self.env = env
        self.node = node
        self.loc = source_loc(node)

    # ---- arguments ------------------------------------------------------------------------
    def arg(self, i: int, name: str | None = None, default: Any = None) -> Any:
        """The node's argument `i` (or keyword `name`), as FX has it."""
        if len(self.node.args) > i:
            return self.node.args[i]
        return self.node.kwargs.get(name, default) if name is not None else default

    def value(self, a: Any, dtype: str | None = None) -> Value:
        """An FX argument as a graph value, cast to `dtype` if given (a number becomes a constant of `dtype`,
        or of torch's default dtype for its kind)."""
        if isinstance(a, torch.fx.Node):
            v = self.env[a]
            if isinstance(v, list):
                raise Unsupported(f"{a.name} has several results; only getitem can use it")
            return self.cast(v, dtype) if dtype is not None else v
        if isinstance(a, bool) or isinstance(a, (int, float)):
            if dtype is None:
                dtype = "bool" if isinstance(a, bool) else "int32" if isinstance(a, int) else "float32"
            return self.graph.const(a, dtype, self.loc)
        raise Unsupported(f"argument {a!r}")

    def values(self, *args: Any, dtype: str | None = None) -> list[Value]:
        return [self.value(a, dtype) for a in args]

    def cast(self, v: Value, dtype: str) -> Value:
        return v if v.type.dtype == dtype else self.op("cast", v, dtype=dtype)

    # ---- torch's view of the node ---------------------------------------------------------------
    @property
    def out_dtype(self) -> str:
        t = vals(self.node)[0]
        dt = graph_dtype(t.dtype)
        if dt is None:
            raise Unsupported(f"dtype {t.dtype}")
        return dt

    def promoted(self, *args: Any) -> str:
        """The dtype torch computes a binary op of these arguments in (torch.result_type)."""
        operands = [a.meta["val"] if isinstance(a, torch.fx.Node) else a for a in args]
        dt = graph_dtype(torch.result_type(*operands))
        if dt is None:
            raise Unsupported(f"operands promote to {torch.result_type(*operands)}")
        return dt

    def shape(self, a: Any = None) -> tuple[int, ...]:
        node = self.node if a is None else a
        return tuple(int(d) for d in vals(node)[0].shape)

    def rank(self, a: Any = None) -> int:
        return len(self.shape(a))

    def axis(self, d: int, of: Any = None) -> int:
        rank = self.rank(of)
        return d + rank if d < 0 else d

    # ---- building -------------------------------------------------------------------------------
    def op(self, name: str, *inputs: Value, **attrs: Any) -> Value:
        return self.graph.add(name, list(inputs), attrs, self.loc).out()


Entry = Callable[[Lowering], Any]


class FxGraphBuilder:
    """Builds the pyasc graph of one FX GraphModule (see the module docstring)."""

    def __init__(self, gm: torch.fx.GraphModule | None, name: str, table: dict[Any, Entry]):
        """`gm` None: a builder for lowering single nodes (node_support), with no module to walk."""
        self.gm = gm
        self.table = table
        self.graph = Graph(name)
        self.env: dict[torch.fx.Node, Any] = {}
        self.linears: dict[torch.fx.Node, BatchedLinear] = batched_linears(gm) if gm is not None else {}
        self.folded = {b.matmul for b in self.linears.values()}
        self.flats = {b.flat for b in self.linears.values() if all(u in self.folded for u in b.flat.users)}

    def build(self) -> Graph:
        for node in self.gm.graph.nodes:
            if node in self.folded or node in self.flats:
                continue  # lowered at the view after the matmul, reading the unflattened input (peephole.py)
            if node.op == "placeholder":
                self.env[node] = self.graph.add_input(tensor_type(node.meta["val"]), node.name, source_loc(node))
            elif node.op == "output":
                outs = node.args[0]
                items = list(outs) if isinstance(outs, (tuple, list)) else [outs]
                self.graph.set_outputs([self.env[o] for o in items])
            elif node.op == "call_function":
                self.env[node] = self.lower(node)
            else:
                raise Unsupported(f"node {node.op} {node.target}")
        return self.graph

    def lower(self, node: torch.fx.Node) -> Any:
        if node.target is operator.getitem:
            src = self.env[node.args[0]]
            if not isinstance(src, list):
                raise Unsupported(f"getitem of {node.args[0].name}, which has one result")
            return src[node.args[1]]
        cx = Lowering(self.graph, self.env, node)
        const = constant_value(node)
        if const is not None:
            return self.graph.const(const, None, cx.loc)
        try:
            if node in self.linears:
                out = self._batched_linear(cx, self.linears[node])
            elif inlinable(node.target) is not None:
                out = _inline(cx, inlinable(node.target), node)
            else:
                entry = self.table.get(node.target)
                if entry is None:
                    raise Unsupported("not in pyasc's aten table")
                out = entry(cx)
        except InferError as e:
            raise CompileError(str(e), cx.loc) from None
        results = out if isinstance(out, list) else [out]
        want = [v for v in vals(node)]
        if len(results) != len(want):
            raise Unsupported(f"{len(results)} result(s) for torch's {len(want)}")
        aligned = [self._align(cx, v, t, i) for i, (v, t) in enumerate(zip(results, want))]
        return aligned if isinstance(out, list) else aligned[0]

    def _align(self, cx: Lowering, v: Value | None, t: Any, i: int) -> Value | None:
        """Cast to torch's dtype; a shape pyasc infers differently is Unsupported (the node stays in torch).
        None: a result the entry did not compute because nothing uses it."""
        if v is None or not isinstance(t, torch.Tensor):
            return v
        want = tensor_type(t)
        if tuple(v.type.shape) != tuple(want.shape):
            raise Unsupported(f"result {i}: pyasc infers shape {tuple(v.type.shape)}, torch {tuple(want.shape)}")
        return cx.cast(v, want.dtype)

    def _batched_linear(self, cx: Lowering, b: BatchedLinear) -> Value:
        """addmm/mm on the unflattened 3-D input: pyasc's matmul takes the batch dims itself."""
        mm = b.matmul
        x = self.env[b.source]
        mcx = Lowering(self.graph, self.env, mm)
        if mm.target == torch.ops.aten.addmm.default:
            prod = mcx.op("matmul", x, mcx.value(mm.args[2]))
            return mcx.op("add", _scaled(mcx, prod, mm.kwargs.get("alpha", 1)),
                          _scaled(mcx, mcx.value(mm.args[0]), mm.kwargs.get("beta", 1)))
        return mcx.op("matmul", x, mcx.value(mm.args[1]))


def _scaled(cx: Lowering, v: Value, factor: Any) -> Value:
    return v if factor == 1 else cx.op("mul", v, cx.value(factor, v.type.dtype))


def _inline(cx: Lowering, op: Any, node: torch.fx.Node) -> Any:
    """Splice the graph a registered pyasc op gives for these arguments (its kernel, or its backward)."""
    args = list(node.args) + list(node.kwargs.values())
    specs = [vals(a)[0] if isinstance(a, torch.fx.Node) else a for a in args]
    try:
        sub = op.inline_graph(specs)
    except ValueError as e:
        raise Unsupported(str(e)) from None
    inputs = [cx.value(a) for a in args if isinstance(a, torch.fx.Node)]
    try:
        outs = splice(cx.graph, sub, inputs, cx.loc)
    except ValueError as e:
        raise Unsupported(str(e)) from None
    return outs if len(outs) > 1 or len(vals(node)) > 1 else outs[0]


def node_support(node: torch.fx.Node, table: dict[Any, Entry]) -> str | None:
    """Why `node` cannot be lowered (None: it can): checked by lowering it alone into a scratch graph."""
    if node.op != "call_function":
        return "not an op call"
    if node.target is operator.getitem:
        src = node.args[0]
        return node_support(src, table) if isinstance(src, torch.fx.Node) else "getitem of a non-node"
    if str(node.target).startswith("auto_functionalized"):
        return "it mutates its arguments; pyasc kernels are functional"
    if constant_value(node) is not None:
        return None  # evaluated at compile time
    if inlinable(node.target) is None and node.target not in table:
        return "not in pyasc's aten table"
    results = vals(node)
    if len(results) > 1:  # only the results something reads must be NPU dtypes (max pooling's int64 indices)
        read = {u.args[1] for u in node.users if u.target is operator.getitem}
        results = [v for i, v in enumerate(results) if i in read]
    tensors = [v for v in results if isinstance(v, torch.Tensor)]
    tensors += [a.meta.get("val") for a in node.all_input_nodes
                if isinstance(a.meta.get("val"), torch.Tensor) and constant_value(a) is None]
    for t in tensors:
        if graph_dtype(t.dtype) is None:
            return f"dtype {t.dtype} (the NPU has float16, float32, int8, int16, int32, uint8, bool)"
        if any(not isinstance(d, int) for d in t.shape):
            return "a symbolic shape (pyasc's FX frontend compiles static shapes)"
        if t.device.type not in ("cpu", "meta"):
            return f"a tensor on {t.device}"
    if not tensors:
        return "no tensor results"
    scratch = FxGraphBuilder(None, "support", table)
    for a in node.all_input_nodes:
        const = constant_value(a)
        if const is not None:
            scratch.env[a] = scratch.graph.const(const)
        elif a.target is operator.getitem or isinstance(a.meta.get("val"), torch.Tensor):
            scratch.env[a] = scratch.graph.add_input(tensor_type(a.meta["val"]))
    try:
        scratch.lower(node)
    except Unsupported as e:
        return str(e) if str(e).startswith("result ") else f"arguments the table cannot express ({e})"
    except CompileError as e:  # pyasc's inference rejects it (the report gives the model's line itself)
        return f"arguments the table cannot express ({e.reason})"
    except (KeyError, TypeError, IndexError, ValueError) as e:
        return f"arguments the table cannot express ({e})"
    return None


def op_name(node: torch.fx.Node) -> str:
    """The op a node calls, as a user would name it (an in-place op under functionalization: the op itself)."""
    if str(node.target).startswith("auto_functionalized") and node.args:
        return str(node.args[0])
    return str(node.target)
