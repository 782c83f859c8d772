"""Canonical text form of a graph, and canonical keys for attribute values.

The text is meant to be diffed and hashed: names are derived from node
order (never from node ids), attributes are sorted, and long constants are
abbreviated but keep a content digest, so two graphs with the same structure
print the same text and two graphs that differ print different text.

Example::

    graph main {
      %x = Data {index=0} : f32[4,8]
      %0 = Const {value=f32[] 2.0} : f32[]
      %1 = mul(%x, %0) : f32[4,8]
      return (%1)
    }

Conventions:
- a Data node is named by its user name hint (`%x`) or `%arg<index>`;
  every other node is numbered in node order (`%0`, `%1`, ...);
- output `k` of a node with several outputs is `%n#k`;
- a Graph-valued attribute prints as a reference `@<path>` and the subgraph
  itself is printed after its parent under that path;
- with `show_loc=True` each line gets a trailing comment with the node's
  name hint and source location.
"""
from __future__ import annotations

import hashlib
import math
import os
from typing import Any, Hashable, Mapping

import numpy as np

from .. import dtypes
from .graph import Graph, Node, Value
from ..tensor_type import Sym, TensorType

# Constants with more elements than this print as first 3 ... last 3
_CONST_FULL_LIMIT = 6
_CONST_EDGE = 3


# ---- names -----------------------------------------------------------------


def node_names(graph: Graph) -> dict[Node, str]:
    """Canonical name (without '%') of every node of `graph` (not of its subgraphs)."""
    names: dict[Node, str] = {}
    taken: set[str] = set()
    data = [(i, n) for i, n in enumerate(graph.nodes) if n.op == "Data"]
    # Data nodes in index order so a name depends on the signature, not on where the node sits
    data.sort(key=lambda item: (_index_sort_key(item[1].attrs.get("index")), item[0]))
    for _, n in data:
        hint = n.name
        index = n.attrs.get("index")
        candidates = []
        if _usable_hint(hint):
            candidates.append(hint)
        candidates.append(f"arg{index}")
        name = next((c for c in candidates if c not in taken), None)
        suffix = 1
        while name is None or name in taken:  # only for corrupt graphs (duplicate indices)
            name = f"arg{index}_{suffix}"
            suffix += 1
        names[n] = name
        taken.add(name)
    counter = 0
    for n in graph.nodes:
        if n.op != "Data" and n not in names:
            names[n] = str(counter)
            counter += 1
    return names


def _index_sort_key(index: Any) -> tuple[int, Any]:
    return (0, index) if isinstance(index, int) else (1, repr(index))


def _usable_hint(hint: str | None) -> bool:
    # "argN" is reserved for hint-less inputs so an unnamed input never collides with a named one
    return bool(hint) and hint.isidentifier() and not (hint.startswith("arg") and hint[3:].isdigit())


def value_ref(value: Value, names: Mapping[Node, str]) -> str:
    """`%name` or `%name#k` for output k of a multi-output node; `%?op` for a node outside the graph."""
    node = value.node
    base = names.get(node)
    if base is None:
        return f"%?{node.op}"
    if len(node.outputs) > 1 or value.index != 0:
        return f"%{base}#{value.index}"
    return f"%{base}"


def type_text(t: Any) -> str:
    """`str(t)` of a tensor type, remembered (every dump prints the same few types on every node and edge; a
    TensorType is frozen and equal types print the same)."""
    if type(t) is not TensorType:
        return str(t)
    text = _TYPE_TEXT.get(t)
    if text is None:
        if len(_TYPE_TEXT) >= 20_000:
            _TYPE_TEXT.clear()
        text = _TYPE_TEXT[t] = str(t)
    return text


_TYPE_TEXT: dict[TensorType, str] = {}


# ---- attribute values ------------------------------------------------------


def format_scalar(x: Any) -> str:
    """Shortest text that identifies a numpy/Python scalar in its own dtype (0.1 for float32 0.1)."""
    if isinstance(x, np.bool_) or isinstance(x, bool):
        return "True" if x else "False"
    if isinstance(x, np.generic):
        return str(x)
    if isinstance(x, float):
        return repr(x)
    return str(x)


def format_array(value: np.ndarray) -> str:
    """`dtype[shape] values`, abbreviated to first/last 3 values with a content digest when long."""
    arr = np.asarray(value)
    try:
        narrow = dtypes.narrow(arr.dtype)
        type_text = str(TensorType(arr.shape, narrow))
        if narrow != arr.dtype.name:
            type_text += f"<{arr.dtype.name}>"  # an un-narrowed array: show what it really holds
    except dtypes.DTypeError:
        type_text = f"{arr.dtype.name}[{','.join(map(str, arr.shape))}]"
    flat = arr.reshape(-1)
    if arr.ndim == 0:
        return f"{type_text} {format_scalar(flat[0])}"
    if flat.size <= _CONST_FULL_LIMIT:
        return f"{type_text} [{', '.join(format_scalar(x) for x in flat)}]"
    head = ", ".join(format_scalar(x) for x in flat[:_CONST_EDGE])
    tail = ", ".join(format_scalar(x) for x in flat[-_CONST_EDGE:])
    # the digest keeps the dump (and anything hashing it) sensitive to the elided values
    digest = hashlib.blake2b(np.ascontiguousarray(arr).tobytes(), digest_size=4).hexdigest()
    return f"{type_text} [{head}, ..., {tail}] #{digest}"


def format_attr(value: Any, graph_refs: Mapping[int, str] | None = None) -> str:
    """Text of one attribute value; Graphs print as their `@path` reference."""
    if isinstance(value, Graph):
        ref = (graph_refs or {}).get(id(value))
        return f"@{ref}" if ref is not None else f"@{value.name}"
    if value is None:
        return "None"
    if isinstance(value, (bool, np.bool_)):
        return "True" if value else "False"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, np.ndarray):
        return format_array(value)
    if isinstance(value, np.generic):
        return f"{value.dtype.name}({format_scalar(value)})"
    if isinstance(value, (TensorType, Sym)):
        return str(value)
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, tuple):
        inner = ", ".join(format_attr(v, graph_refs) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(format_attr(v, graph_refs) for v in value) + "]"
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: str(kv[0]))
        return "{" + ", ".join(f"{k}: {format_attr(v, graph_refs)}" for k, v in items) + "}"
    return repr(value)


def attr_key(value: Any) -> Hashable:
    """A canonical hashable key for an attribute value.

    Equal keys mean interchangeable values: `True` and `1` differ, `0.0` and
    `-0.0` differ, every NaN is the same, arrays compare by dtype, shape and
    bytes, and Graphs by identity. CSE and the compile cache key build on this.
    """
    if value is None:
        return ("none",)
    if isinstance(value, (bool, np.bool_)):
        return ("bool", bool(value))
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else value.hex())
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, tuple):
        return ("tuple", tuple(attr_key(v) for v in value))
    if isinstance(value, list):
        return ("list", tuple(attr_key(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((str(k), attr_key(v)) for k, v in value.items())))
    if isinstance(value, Sym):
        return ("sym", value.expr)
    if isinstance(value, TensorType):
        return ("type", tuple(attr_key(d) for d in value.shape), value.dtype, value.format)
    if isinstance(value, np.ndarray):
        arr = np.asarray(value, order="C")  # not ascontiguousarray, which makes a 0-d array 1-d
        if arr.dtype.kind == "f":
            arr = np.where(np.isnan(arr), np.array(np.nan, arr.dtype), arr)  # one bit pattern per NaN
        return ("array", arr.dtype.str, arr.shape, arr.tobytes())
    if isinstance(value, np.generic):
        return ("scalar",) + attr_key(np.asarray(value))[1:]
    if isinstance(value, np.dtype):
        return ("dtype", value.name)
    if isinstance(value, Graph):
        return ("graph", value)  # identity: Graph keeps object hashing; holding it keeps the id valid
    if isinstance(value, type) and dtypes.is_supported(value):
        return ("dtype", dtypes.normalize(value))
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"attribute value {value!r} of type {type(value).__name__} has no canonical key") from None
    return ("other", type(value).__qualname__, value)


# ---- nodes and graphs --------------------------------------------------------


def format_node(node: Node, names: Mapping[Node, str], graph_refs: Mapping[int, str] | None = None,
                *, show_loc: bool = False) -> str:
    """One node as `%n = op(inputs) {attrs} : types` (without indentation)."""
    lhs = f"%{names[node]}" if node in names else f"%?{node.op}"
    args = ", ".join(value_ref(v, names) for v in node.inputs)
    attrs = dict(node.attrs)
    if node.op == "Data" and len(node.outputs) == 1 and attrs.get("type") == node.outputs[0]:
        del attrs["type"]  # the output type says it already
    text = f"{lhs} = {node.op}"
    if node.inputs:
        text += f"({args})"
    if attrs:
        text += " {" + ", ".join(f"{k}={format_attr(attrs[k], graph_refs)}" for k in sorted(attrs)) + "}"
    types = [type_text(t) for t in node.outputs]
    text += " : " + (types[0] if len(types) == 1 else "(" + ", ".join(types) + ")")
    if show_loc:
        notes = []
        if node.name and node.op != "Data":
            notes.append(node.name)
        if node.loc is not None:
            notes.append(f"{os.path.basename(node.loc.filename)}:{node.loc.lineno}:{node.loc.col_offset + 1}")
        if notes:
            text += "  # " + " ".join(notes)
    return text


def format_graph(graph: Graph, *, show_loc: bool = False) -> str:
    """Canonical text of `graph` followed by its subgraphs (depth first, parent first)."""
    blocks: list[str] = []
    _format_into(graph, graph.name, blocks, show_loc)
    return "\n\n".join(blocks) + "\n"


def subgraph_paths(graph: Graph, path: str | None = None,
                   names: Mapping[Node, str] | None = None) -> dict[int, str]:
    """id(subgraph) -> its printed path (`main/%3.then_branch`) for every direct subgraph.
    `names`: the graph's `node_names`, when the caller has them already."""
    path = graph.name if path is None else path
    refs: dict[int, str] = {}
    for n in graph.nodes:
        subgraphs = n.subgraphs
        if not subgraphs:
            continue
        if names is None:  # named only when some node holds a subgraph (most graphs have none)
            names = node_names(graph)
        for key in sorted(subgraphs):
            refs.setdefault(id(n.attrs[key]), f"{path}/%{names[n]}.{key}")
    return refs


def _format_into(graph: Graph, path: str, blocks: list[str], show_loc: bool) -> None:
    names = node_names(graph)
    refs = subgraph_paths(graph, path, names)
    lines = [f"graph {path} {{"]
    for n in graph.nodes:
        lines.append("  " + format_node(n, names, refs, show_loc=show_loc))
    lines.append("  return (" + ", ".join(value_ref(v, names) for v in graph.outputs) + ")")
    lines.append("}")
    blocks.append("\n".join(lines))
    done: set[int] = set()
    for n in graph.nodes:
        for key in sorted(n.subgraphs):
            sub = n.attrs[key]
            if id(sub) not in done:  # a subgraph shared by two attributes prints once
                done.add(id(sub))
                _format_into(sub, refs[id(sub)], blocks, show_loc)


def _graph_text(graph: Graph) -> str:
    return format_graph(graph)


Graph.__str__ = _graph_text  # type: ignore[method-assign]  # str(graph) is its canonical text (see graph.py)
