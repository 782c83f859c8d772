"""Lossless JSON form of a graph (no pickle): `to_json` / `from_json`.

Layout::

    {"format": "pyasc.graph", "version": 1, "graph": G}
    G = {"name": str, "nodes": [N...], "outputs": [[node_pos, out_index]...]}
    N = {"op": str, "inputs": [[node_pos, out_index]...], "attrs": {name: A},
         "outputs": [T...], "loc": {...} | null, "name": str | null}

Inputs refer to producers by their position in the same graph's node list.
Output types are stored rather than re-inferred, so a graph comes back
exactly as it was written (the verifier is what checks they still agree).

Attribute values use plain JSON where that is unambiguous (null, bools,
ints, strings, lists) and a one-key tagged object otherwise: `$float`
(Python repr, so nan/inf/-0.0 survive), `$tuple`, `$dict`, `$sym`, `$type`,
`$array` (dtype, shape, little-endian bytes in base64), `$scalar` (a numpy
scalar, same encoding), `$dtype`, `$graph`.
"""
from __future__ import annotations

import base64
import json
from typing import Any

import numpy as np

from ..errors import SourceLoc
from .graph import Graph, Node, Value
from ..tensor_type import Sym, TensorType

FORMAT = "pyasc.graph"
VERSION = 1


class SerializationError(ValueError):
    """A graph that cannot be written, or JSON that is not a serialised graph."""


# ---- writing ---------------------------------------------------------------------


def to_json(graph: Graph, *, indent: int | None = None) -> str:
    return json.dumps({"format": FORMAT, "version": VERSION, "graph": _encode_graph(graph)},
                      indent=indent, allow_nan=False)  # key order kept: attrs come back in their order


def _encode_graph(graph: Graph) -> dict[str, Any]:
    position = {n: i for i, n in enumerate(graph.nodes)}

    def ref(v: Value, where: str) -> list[int]:
        if v.node not in position:
            raise SerializationError(
                f"cannot serialise graph {graph.name!r}: {where} reads a {v.node.op} node that is not in the graph"
            )
        return [position[v.node], v.index]

    nodes = []
    for i, n in enumerate(graph.nodes):
        nodes.append({
            "op": n.op,
            "inputs": [ref(v, f"node {i} ({n.op})") for v in n.inputs],
            "attrs": {k: _encode_attr(v) for k, v in n.attrs.items()},
            "outputs": [_encode_type(t) for t in n.outputs],
            "loc": _encode_loc(n.loc),
            "name": n.name,
        })
    return {"name": graph.name, "nodes": nodes, "outputs": [ref(v, "the graph output") for v in graph.outputs]}


def _encode_dim(d: Any) -> Any:
    return {"$sym": d.expr} if isinstance(d, Sym) else d


def _encode_type(t: TensorType) -> dict[str, Any]:
    return {"shape": [_encode_dim(d) for d in t.shape], "dtype": t.dtype, "format": t.format}


def _encode_loc(loc: SourceLoc | None) -> dict[str, Any] | None:
    if loc is None:
        return None
    return {"filename": loc.filename, "lineno": loc.lineno, "col_offset": loc.col_offset,
            "end_lineno": loc.end_lineno, "end_col_offset": loc.end_col_offset}


def _encode_array(arr: np.ndarray) -> dict[str, Any]:
    arr = np.asarray(arr)
    if arr.dtype.kind not in "biuf":
        raise SerializationError(f"cannot serialise an array of dtype {arr.dtype}")
    little = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<"))
    return {"dtype": arr.dtype.name, "shape": list(arr.shape), "data": base64.b64encode(little.tobytes()).decode("ascii")}


def _encode_attr(value: Any) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return {"$float": repr(value)}
    if isinstance(value, list):
        return [_encode_attr(v) for v in value]
    if isinstance(value, tuple):
        return {"$tuple": [_encode_attr(v) for v in value]}
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise SerializationError(f"cannot serialise a dict attribute with non-string keys: {value!r}")
        return {"$dict": {k: _encode_attr(v) for k, v in value.items()}}
    if isinstance(value, Sym):
        return {"$sym": value.expr}
    if isinstance(value, TensorType):
        return {"$type": _encode_type(value)}
    if isinstance(value, np.ndarray):
        return {"$array": _encode_array(value)}
    if isinstance(value, np.generic):
        return {"$scalar": _encode_array(np.asarray(value))}
    if isinstance(value, np.dtype):
        return {"$dtype": value.name}
    if isinstance(value, Graph):
        return {"$graph": _encode_graph(value)}
    raise SerializationError(f"cannot serialise attribute value {value!r} of type {type(value).__name__}")


# ---- reading ---------------------------------------------------------------------


def from_json(text: str) -> Graph:
    """Rebuild a graph written by `to_json`; raises SerializationError on anything else."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise SerializationError(f"not valid JSON: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise SerializationError(f"not a serialised pyasc graph (expected \"format\": {FORMAT!r})")
    if doc.get("version") != VERSION:
        raise SerializationError(f"unsupported graph format version {doc.get('version')!r}; this pyasc reads {VERSION}")
    try:
        return _decode_graph(doc["graph"])
    except (KeyError, IndexError, TypeError, ValueError) as e:
        if isinstance(e, SerializationError):
            raise
        raise SerializationError(f"malformed serialised graph: {type(e).__name__}: {e}") from None


def _decode_graph(doc: dict[str, Any]) -> Graph:
    graph = Graph(doc["name"])
    nodes: list[Node] = []

    def value(ref: list[int]) -> Value:
        pos, index = ref
        if not 0 <= pos < len(nodes):
            raise SerializationError(f"graph {graph.name!r}: reference to node {pos}, which is not defined before its use")
        return Value(nodes[pos], index)

    for nd in doc["nodes"]:
        loc = SourceLoc(**nd["loc"]) if nd.get("loc") is not None else None
        node = Node(
            nd["op"],
            [value(r) for r in nd["inputs"]],
            {k: _decode_attr(v) for k, v in nd["attrs"].items()},
            [_decode_type(t) for t in nd["outputs"]],
            loc,
            nd.get("name"),
        )
        nodes.append(graph.append(node))
    graph.set_outputs(value(r) for r in doc["outputs"])
    return graph


def _decode_dim(d: Any) -> Any:
    return Sym(d["$sym"]) if isinstance(d, dict) else int(d)


def _decode_type(doc: dict[str, Any]) -> TensorType:
    return TensorType(tuple(_decode_dim(d) for d in doc["shape"]), doc["dtype"], doc["format"])


def _decode_array(doc: dict[str, Any]) -> np.ndarray:
    dtype = np.dtype(doc["dtype"])
    raw = base64.b64decode(doc["data"], validate=True)
    arr = np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(doc["shape"])
    arr.flags.writeable = False  # Const values are read-only, as Graph.const makes them
    return arr


def _decode_attr(doc: Any) -> Any:
    if doc is None or isinstance(doc, (bool, int, str)):
        return doc
    if isinstance(doc, list):
        return [_decode_attr(v) for v in doc]
    if not isinstance(doc, dict) or len(doc) != 1:
        raise SerializationError(f"malformed attribute value {doc!r}")
    (tag, body), = doc.items()
    if tag == "$float":
        return float(body)
    if tag == "$tuple":
        return tuple(_decode_attr(v) for v in body)
    if tag == "$dict":
        return {k: _decode_attr(v) for k, v in body.items()}
    if tag == "$sym":
        return Sym(body)
    if tag == "$type":
        return _decode_type(body)
    if tag == "$array":
        return _decode_array(body)
    if tag == "$scalar":
        return _decode_array(body)[()]
    if tag == "$dtype":
        return np.dtype(body)
    if tag == "$graph":
        return _decode_graph(body)
    raise SerializationError(f"unknown attribute tag {tag!r}")
