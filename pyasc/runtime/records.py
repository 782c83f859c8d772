"""JSON for the optimiser's plan records (KernelPlan, MemoryPlan, ...) that point into the final graph.

A record is any dataclass registered here; it is written field by field,
and a field holding a graph object is written as a reference into the final
graph, whose `graph.walk()` order numbers its graphs (0 = the root, then
every If branch, depth first):

    {"$graph": g}           a Graph          {"$node": [g, i]}        graph g's node i
    {"$value": [g, i, k]}   output k of it    {"$record": "Name", "fields": {...}}
    {"$enum": "NAME"}       an enum member, restored through the field's type annotation
    {"$tuple": [...]}       {"$frozenset": [...]} (sorted)    {"$dict": [[key, value], ...]}
    {"$sym": "expr"}        a symbolic dim (as in the graph's own JSON)
    {"$expr": [...]}        an integer expression (pyasc.symbolic's JSON)
    {"$program": {...}}     a tile program (simulator.Program's own JSON form)
    {"$mixed": {...}}       a mixed launch's pair of programs (simulator.MixedKernel's own JSON form)
    {"$array": [dtype, shape, base64]}   a numpy array (a constant tensor): its bytes, never pickled
    {"$detached": [name, shape, dtype, format]}   a value of no graph of the final graph (a scratch value
                            codegen made between the launches of one plan: a cast operand, a cube result
                            its epilogue reads back); read back as the input of a graph of its own

Reading never imports or calls anything named in the document: a record
name must be in `RECORD_TYPES`, an enum is whatever the field is annotated
with. A new record type (a tiling, a launch plan) is `register_record(cls)`.
"""
from __future__ import annotations

import base64
import dataclasses
import enum
import functools
import json
import typing
from typing import Any

import numpy as np

from simulator import MixedKernel, Program

from .. import symbolic
from ..codegen import cost, device, host, launch, tiling
from ..codegen.templates import TEMPLATES
from ..ge import BufferAssignment, FusionDecision, KernelPlan, KernelStructure, MemoryPlan, Rejection
from ..ir import Graph, Node, Sym, TensorType, Value

RECORD_TYPES: dict[str, type] = {}


def register_record(cls: type) -> type:
    """Make a dataclass writable in artifacts (also usable as a class decorator)."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls.__qualname__} is not a dataclass")
    RECORD_TYPES[cls.__name__] = cls
    return cls


for _cls in (KernelPlan, KernelStructure, MemoryPlan, BufferAssignment, FusionDecision, Rejection,
             # code generation: device kernels, their tiling reports (each template's tiling record), the launch
             # plan, the host tables
             device.DeviceModule, device.DeviceKernel, tiling.TilingReport, tiling.Option, cost.Estimate,
             *{t.tiling_type for t in TEMPLATES.values()}, launch.LaunchPlan, launch.Launch,
             launch.IfStep, launch.LoopStep, launch.DeviceLoopStep, launch.Loc, launch.OutputSource, host.HostSource, host.LaunchSite, host.CondSite):
    register_record(_cls)


class RecordError(ValueError):
    """A record that cannot be written, or a document that is not one."""


class GraphIndex:
    """Numbers the graphs and nodes of a final graph for references (both directions)."""

    def __init__(self, root: Graph):
        self.graphs = list(root.walk())
        self._graph_no = {id(g): i for i, g in enumerate(self.graphs)}
        self._node_no = {id(n): (gi, ni) for gi, g in enumerate(self.graphs) for ni, n in enumerate(g.nodes)}

    def graph_ref(self, g: Graph) -> int:
        try:
            return self._graph_no[id(g)]
        except KeyError:
            raise RecordError(f"a record points at graph {g.name!r}, which is not part of the final graph") from None

    def has_node(self, n: Node) -> bool:
        return id(n) in self._node_no

    def node_ref(self, n: Node) -> list[int]:
        try:
            return list(self._node_no[id(n)])
        except KeyError:
            raise RecordError(f"a record points at a {n.op} node that is not in the final graph") from None

    def node(self, ref: list[int]) -> Node:
        gi, ni = ref
        return self.graphs[gi].nodes[ni]


def encode(value: Any, index: GraphIndex) -> Any:
    if isinstance(value, enum.Enum):  # before the plain types: a str or int enum is one of them too
        return {"$enum": value.name}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Sym):
        return {"$sym": value.expr}
    if isinstance(value, symbolic.Expr):
        return {"$expr": symbolic.to_json(value)}
    if isinstance(value, Program):
        return {"$program": value.to_dict()}
    if isinstance(value, MixedKernel):
        return {"$mixed": value.to_dict()}
    if isinstance(value, np.ndarray):
        return {"$array": [value.dtype.str, list(value.shape),
                           base64.b64encode(np.ascontiguousarray(value).tobytes()).decode("ascii")]}
    if isinstance(value, Graph):
        return {"$graph": index.graph_ref(value)}
    if isinstance(value, Node):
        return {"$node": index.node_ref(value)}
    if isinstance(value, Value):
        if not index.has_node(value.node):
            t = value.type
            return {"$detached": [value.node.name, [{"$sym": d.expr} if isinstance(d, Sym) else d for d in t.shape],
                                  t.dtype, t.format]}
        return {"$value": [*index.node_ref(value.node), value.index]}
    if isinstance(value, list):
        return [encode(v, index) for v in value]
    if isinstance(value, tuple):
        return {"$tuple": [encode(v, index) for v in value]}
    if isinstance(value, frozenset):  # sorted: the same set is the same bytes in every process
        return {"$frozenset": sorted((encode(v, index) for v in value), key=_sort_key)}
    if isinstance(value, dict):
        return {"$dict": [[encode(k, index), encode(v, index)] for k, v in value.items()]}
    if dataclasses.is_dataclass(value) and type(value).__name__ in RECORD_TYPES:
        fields = {f.name: encode(getattr(value, f.name), index) for f in dataclasses.fields(value)
                  if f.init and f.metadata.get("persist", True)}
        return {"$record": type(value).__name__, "fields": fields}
    raise RecordError(f"cannot write a {type(value).__qualname__} into an artifact (register_record it, or "
                      "give it a plain-data form)")


def _sort_key(doc: Any) -> str:
    return json.dumps(doc, sort_keys=True)


def decode(doc: Any, index: GraphIndex, hint: Any = None) -> Any:
    """Rebuild a value; `hint` is the type annotation of the field it goes into (for enums)."""
    if doc is None or isinstance(doc, (bool, int, float, str)):
        return doc
    if isinstance(doc, list):
        return [decode(v, index, _item_hint(hint)) for v in doc]
    if not isinstance(doc, dict) or not doc:
        raise RecordError(f"malformed record value {doc!r}")
    if "$record" in doc:
        return _decode_record(doc, index)
    (tag, body), = doc.items()
    if tag == "$enum":
        return _enum_of(hint, body)
    if tag == "$sym":
        return Sym(str(body))
    if tag == "$expr":
        return symbolic.from_json(body)
    if tag == "$program":
        return Program.from_dict(body)
    if tag == "$mixed":
        return MixedKernel.from_dict(body)
    if tag == "$array":
        dtype, shape, data = body
        arr = np.frombuffer(base64.b64decode(data), dtype=np.dtype(dtype)).reshape(shape).copy()
        arr.flags.writeable = False
        return arr
    if tag == "$graph":
        return index.graphs[body]
    if tag == "$node":
        return index.node(body)
    if tag == "$value":
        return Value(index.node(body[:2]), body[2])
    if tag == "$detached":
        name, shape, dtype, fmt = body
        dims = tuple(Sym(d["$sym"]) if isinstance(d, dict) else int(d) for d in shape)
        return Graph(f"detached_{name}").add_input(TensorType(dims, dtype, fmt), name=name)
    if tag == "$tuple":
        return tuple(decode(v, index, _item_hint(hint)) for v in body)
    if tag == "$frozenset":
        return frozenset(decode(v, index, _item_hint(hint)) for v in body)
    if tag == "$dict":
        return {decode(k, index): decode(v, index, _item_hint(hint, 1)) for k, v in body}
    raise RecordError(f"unknown record tag {tag!r}")


def _decode_record(doc: dict, index: GraphIndex) -> Any:
    cls = RECORD_TYPES.get(doc["$record"])
    if cls is None:
        raise RecordError(f"unknown record type {doc['$record']!r}")
    fields = {name: decode(v, index, _hint(cls, name, v)) for name, v in doc["fields"].items()}
    return cls(**fields)


def _hint(cls: type, name: str, doc: Any) -> Any:
    """A field's annotation, looked up only for a field holding an enum (evaluating annotations is slow)."""
    return _type_hints(cls).get(name) if _mentions_enum(doc) else None


def _mentions_enum(doc: Any) -> bool:
    if isinstance(doc, list):
        return any(_mentions_enum(d) for d in doc)
    if isinstance(doc, dict):
        return "$enum" in doc or any(_mentions_enum(d) for d in doc.values())
    return False


@functools.lru_cache(maxsize=None)
def _type_hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _item_hint(hint: Any, position: int = 0) -> Any:
    args = typing.get_args(hint)
    return args[position] if len(args) > position else None


def _enum_of(hint: Any, name: str) -> enum.Enum:
    for candidate in (hint, *typing.get_args(hint)):
        if isinstance(candidate, type) and issubclass(candidate, enum.Enum):
            return candidate[name]
    raise RecordError(f"enum member {name!r} in a field not annotated with an enum type ({hint!r})")
