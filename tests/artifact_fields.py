"""Every reported field of a CompiledKernel as plain JSON data, to compare a compiled artifact with one
the disk cache restored (in this process or in a fresh one, which prints it).

Written independently of the cache's own record codec (runtime/records.py), so a field that codec loses
or restores with the wrong type shows up as a difference: graph objects become their position in the
final graph (`graph.walk()` order, node index), enums their class and member, records their class and
every field. A value of a type this module does not know raises TypeError: a new CompiledKernel field
must be described here before the round-trip tests pass.
"""
from __future__ import annotations

import dataclasses
import enum
import json
import types
from typing import Any

from simulator import Program

from pyasc import ir, symbolic
from pyasc.codegen.host import HostProgram
from pyasc.runtime import CompiledKernel
from pyasc.runtime.guardset import GuardSet
from pyasc.runtime.keys import KeyComponents

NOT_COMPARED = {"origin"}  # "compiled" or "disk" by design
DERIVED = ("fusion_log", "host_ir")  # properties a user reads like fields


class _Places:
    def __init__(self, root: ir.Graph):
        graphs = list(root.walk())
        self.graph = {id(g): i for i, g in enumerate(graphs)}
        self.node = {id(n): [gi, ni] for gi, g in enumerate(graphs) for ni, n in enumerate(g.nodes)}


def _plain(value: Any, places: _Places) -> Any:
    if isinstance(value, enum.Enum):
        return {"enum": f"{type(value).__qualname__}.{value.name}"}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, ir.Sym):
        return {"sym": value.expr}
    if isinstance(value, symbolic.Expr):
        return {"expr": str(value)}
    if isinstance(value, Program):
        return {"program": value.to_dict()}
    if isinstance(value, HostProgram):  # its IR and tables; the object code must be the same bytes
        return {"host": _plain(value.source, places), "object": value.object_code.hex()}
    if hasattr(value, "__array__") and hasattr(value, "dtype"):
        return {"array": [str(value.dtype), list(value.shape), value.tobytes().hex()]}
    if isinstance(value, ir.Graph):
        return {"graph": places.graph[id(value)]}  # its text: the artifact's "graph_json" and "str"
    if isinstance(value, ir.Node):
        return {"node": places.node[id(value)], "op": value.op}
    if isinstance(value, ir.Value):
        return {"value": [*places.node[id(value.node)], value.index]}
    if isinstance(value, GuardSet):
        return {"guards": value.to_json() if value.persistable else value.describe(), "text": value.describe()}
    if isinstance(value, KeyComponents):
        return value.to_json()
    if isinstance(value, (types.FunctionType, type)):  # py_func; a parameter's default `inspect.Parameter.empty`
        return {"object": f"{value.__module__}.{value.__qualname__}"}
    if isinstance(value, (list, tuple)):
        return {type(value).__name__: [_plain(v, places) for v in value]}
    if isinstance(value, (set, frozenset)):
        return {"set": sorted((_plain(v, places) for v in value), key=lambda d: json.dumps(d, sort_keys=True))}
    if isinstance(value, dict):
        return {"dict": [[_plain(k, places), _plain(v, places)] for k, v in value.items()]}
    if dataclasses.is_dataclass(value):
        return {"record": type(value).__qualname__,
                "fields": {f.name: _plain(getattr(value, f.name), places) for f in dataclasses.fields(value)
                           if not f.name.startswith("_") and f.metadata.get("persist", True)}}
    raise TypeError(f"artifact_fields does not know how to describe a {type(value).__qualname__}")


def reported_fields(ck: CompiledKernel) -> dict[str, Any]:
    """Field name -> plain data, for every public field of the artifact and the derived ones."""
    places = _Places(ck.graph)
    out = {f.name: _plain(getattr(ck, f.name), places)
           for f in dataclasses.fields(ck) if not f.name.startswith("_") and f.name not in NOT_COMPARED}
    out.update({name: _plain(getattr(ck, name), places) for name in DERIVED})
    out["graph_json"] = ir.to_json(ck.graph)
    out["str"] = str(ck)
    return out


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """The field names whose plain data differ (an empty list: equal in every reported field)."""
    return sorted(name for name in a.keys() | b.keys() if a.get(name) != b.get(name))
