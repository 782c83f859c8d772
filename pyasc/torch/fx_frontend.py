"""The FX frontend: one FX (aten) graph, all of whose ops are in the lowering table -> a pyasc kernel.

The graph becomes the body of a kernel function, one statement per node (aten op -> pyasc
expression from `aten_ops.TABLE`), written to a file named by its content and compiled by
`pyasc.kernel` like any other kernel: the same frontend checks, optimiser, codegen, emulator,
dumps (the "source" stage is this generated kernel), disk cache and profile.
"""
from __future__ import annotations

import hashlib
import linecache
import operator
import types
from pathlib import Path
from typing import Any

import torch

from ..runtime.diskcache import default_root
from ..runtime.privatefiles import make_folders, replace_file
from .aten_ops import TABLE, Unsupported
from .convert import pyasc_dtype
from .custom_op import registered
from .peephole import batched_linears


def _vals(node: torch.fx.Node) -> list[Any]:
    val = node.meta.get("val")
    return list(val) if isinstance(val, (tuple, list)) else [val]


def node_support(node: torch.fx.Node) -> str | None:
    """Why `node` cannot be lowered (None: it can)."""
    if node.op != "call_function":
        return "not an op call"
    if node.target is operator.getitem:
        src = node.args[0]
        return node_support(src) if isinstance(src, torch.fx.Node) else "getitem of a non-node"
    if str(node.target).startswith("auto_functionalized"):
        return "it mutates its arguments; pyasc kernels are functional"
    op = registered(node.target)
    if op is None and node.target not in TABLE:
        return "not in pyasc's aten table"
    tensors = [v for v in _vals(node) if isinstance(v, torch.Tensor)]
    tensors += [a.meta.get("val") for a in node.all_input_nodes if isinstance(a.meta.get("val"), torch.Tensor)]
    for t in tensors:
        if pyasc_dtype(t.dtype) is None:
            return f"dtype {t.dtype} (the NPU has float16, float32, int8, int16, int32, uint8, bool)"
        if any(not isinstance(d, int) for d in t.shape):
            return "a symbolic shape (pyasc's FX frontend compiles static shapes)"
        if t.device.type not in ("cpu", "meta"):
            return f"a tensor on {t.device}"
    if not tensors:
        return "no tensor results"
    try:
        if op is None:
            TABLE[node.target](_render_dummy, node)
    except (Unsupported, KeyError, TypeError, IndexError) as e:
        return f"arguments the table cannot express ({e})"
    return None


def op_name(node: torch.fx.Node) -> str:
    """The op a node calls, as a user would name it (an in-place op under functionalization: the op itself)."""
    if str(node.target).startswith("auto_functionalized") and node.args:
        return str(node.args[0])
    return str(node.target)


def _render_dummy(arg: Any) -> str:
    return "x"


class _Renderer:
    def __init__(self, names: dict[torch.fx.Node, Any]):
        self.names = names

    def __call__(self, arg: Any) -> str:
        if isinstance(arg, torch.fx.Node):
            name = self.names[arg]
            if isinstance(name, list):
                raise Unsupported(f"{arg.name} has several results; only getitem can use it")
            return name
        if isinstance(arg, (list, tuple)):
            return repr(tuple(self(a) if isinstance(a, torch.fx.Node) else a for a in arg))
        if isinstance(arg, float) and (arg != arg or arg in (float("inf"), float("-inf"))):
            return f"float({str(arg)!r})"
        if arg is None or isinstance(arg, (bool, int, float)):
            return repr(arg)
        raise Unsupported(f"argument {arg!r}")


def kernel_source(gm: torch.fx.GraphModule, name: str, casts: dict[int, str] | None = None
                  ) -> tuple[str, dict[str, Any]]:
    """The kernel function's source for a graph of lowerable nodes, and the globals it needs (the kernel
    functions of pyasc ops it calls, inlined by pyasc's frontend). `casts`: result index -> pyasc dtype
    name, for results whose dtype pyasc infers differently."""
    casts = casts or {}
    helpers: dict[str, Any] = {}
    names: dict[torch.fx.Node, Any] = {}
    params, body = [], []
    render = _Renderer(names)
    linears = batched_linears(gm)
    folded = {b.matmul for b in linears.values()}
    flats = {b.flat for b in linears.values() if all(u in folded for u in b.flat.users)}
    for node in gm.graph.nodes:
        if node in folded or node in flats:
            continue  # emitted at the view after the matmul, reading the unflattened input (peephole.py)
        if node in linears:
            b = linears[node]
            expr = TABLE[b.matmul.target](lambda a: render(b.source) if a is b.flat else render(a), b.matmul)
            var = f"v{len(body)}"
            body.append(f"    {var} = {expr}  # {b.matmul.target} on the unflattened input")
            names[node] = var
        elif node.op == "placeholder":
            names[node] = f"a{len(params)}"
            params.append(names[node])
        elif node.op == "call_function" and node.target is operator.getitem:
            expr = names[node.args[0]][node.args[1]]
            var = f"v{len(body)}"
            body.append(f"    {var} = {expr}  # result {node.args[1]} of {node.args[0].target}")
            names[node] = var
        elif node.op == "call_function" and registered(node.target) is not None:
            op = registered(node.target)
            helper = f"k_{op.qualname.replace('::', '_')}"
            helpers[helper] = op.kernel.py_func
            args = [render(a) for a in node.args] + [f"{k}={render(v)}" for k, v in node.kwargs.items()]
            var = f"v{len(body)}"
            body.append(f"    {var} = {helper}({', '.join(args)})  # {op.qualname}")
            names[node] = [f"{var}[{i}]" for i in range(op.results)] if op.results > 1 else var
        elif node.op == "call_function":
            expr = TABLE[node.target](render, node)
            if isinstance(expr, list):  # several results: each getitem uses one expression
                names[node] = expr
                continue
            if expr in params or expr in names.values():  # a view that changes nothing: the same value
                names[node] = expr
                continue
            var = f"v{len(body)}"
            body.append(f"    {var} = {expr}  # {node.target}")
            names[node] = var
        elif node.op == "output":
            outs = node.args[0]
            items = list(outs) if isinstance(outs, (tuple, list)) else [outs]
            rendered = [render(o) if i not in casts else f"pyasc.cast({render(o)}, pyasc.{casts[i]})"
                        for i, o in enumerate(items)]
            ret = ", ".join(rendered) + ("," if isinstance(outs, (tuple, list)) and len(items) == 1 else "")
            body.append(f"    return {ret}")
        else:
            raise Unsupported(f"node {node.op} {node.target}")
    uses = "".join(f"# {h}: {fn.__module__}.{fn.__qualname__} (a pyasc op's kernel)\n" for h, fn in helpers.items())
    header = f'"""Generated by pyasc.torch from an FX graph ({len(gm.graph.nodes)} nodes)."""\nimport pyasc\n'
    text = header + (f"\n{uses}" if uses else "") + f"\n\ndef {name}({', '.join(params)}):\n" + "\n".join(body) + "\n"
    return text, helpers


def kernel_dir() -> Path:
    return default_root() / "fx_kernels"


def load_kernel_function(source: str, name: str, helpers: dict[str, Any] | None = None) -> Any:
    """Run the source as a module (`helpers` its globals) named by its content, so the disk cache keys stay
    stable between processes. The file is written (privately) for people to read; Python and pyasc use the
    source in hand, never what the file holds now (the cache folder may be shared)."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    folder = kernel_dir()
    path = folder / f"{name}_{digest}.py"
    try:
        make_folders(folder)
        if not path.is_file() or path.read_text() != source:
            replace_file(path, source.encode())
    except OSError:
        pass  # only the copy for reading is missing
    module = types.ModuleType(f"pyasc_fx_{name}_{digest}")
    module.__file__ = str(path)
    module.__dict__.update(helpers or {})
    linecache.cache[str(path)] = (len(source), None, source.splitlines(True), str(path))  # never re-read
    exec(compile(source, str(path), "exec"), module.__dict__)  # noqa: S102 - source generated just above
    return getattr(module, name)


class TypeMismatch(Exception):
    """pyasc infers a result shape that differs from torch's (the piece stays in eager PyTorch)."""


def result_casts(gm: torch.fx.GraphModule, fn: Any) -> dict[int, str]:
    """Compare the result types pyasc's frontend infers for the generated kernel `fn` with the ones torch
    recorded (`meta["val"]`): a dtype that differs gets a cast, a shape that differs is a TypeMismatch.
    Raises pyasc.CompileError for a kernel pyasc rejects."""
    from ..frontend import ArgSpec, build_graph  # the frontend infers types without compiling the kernel
    from ..tensor_type import TensorType  # (and its types) only when a piece is lowered

    specs = []
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            val = node.meta["val"]
            specs.append(ArgSpec(f"a{len(specs)}", TensorType(tuple(int(d) for d in val.shape),
                                                                pyasc_dtype(val.dtype))))
    got = [v.type for v in build_graph(fn, specs).graph.outputs]
    out = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    want = [o.meta["val"] for o in (out if isinstance(out, (tuple, list)) else [out])]
    casts = {}
    for i, (g, w) in enumerate(zip(got, want)):
        if tuple(g.shape) != tuple(int(d) for d in w.shape):
            raise TypeMismatch(f"result {i}: pyasc infers shape {tuple(g.shape)}, torch {tuple(w.shape)}")
        if g.dtype != pyasc_dtype(w.dtype):
            casts[i] = "bool_" if pyasc_dtype(w.dtype) == "bool" else pyasc_dtype(w.dtype)
    return casts
