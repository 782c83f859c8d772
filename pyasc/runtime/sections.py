"""A compiled artifact as named sections (files), for the disk cache: one table of section codecs.

Each `Section` turns some fields of a `CompiledKernel` into one file (a JSON
document or raw bytes) and back. Sections are written in table order and
read in table order, so a section can use what an earlier one restored
(the plan records point into the graph). Nothing here is pickled, and
nothing read is executed, imported or looked up by name: graphs come back
through `pyasc.ir.from_json`, plan records through `records.decode` (a fixed
registry of types), texts as text, and the class of a NamedTuple/dataclass
result from the live kernel (a path its guards checked, or a class of the
call's own pytree arguments). The only code an entry holds is the host
object code, loaded only from an entry the disk cache authenticated.

Adding a section (code generation will add the tile programs, the tiling
records, the launch plan and the host module) is one call:

    register_section(json_section("tile_programs.json",
        write=lambda ck: [p.to_json() for p in ck.tile_programs] or None,
        read=lambda doc, fields: {"tile_programs": [Program.from_json(d) for d in doc]}))
    register_section(bytes_section("host.o", "host_object"))

`write` returns None when the artifact has nothing for that section (the
file is then absent, and `read` is not called: the field keeps its default).
The fields a section restores must be fields of CompiledKernel.
"""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from .. import ir, pytree
from ..effects import Effects
from ..guards import PATH_ERRORS, resolve, step_to_json
from ..pytree import TreeDef, class_name
from ..codegen.host import HostProgram
from . import records
from .treeargs import TreeKey


@dataclass(frozen=True)
class Section:
    """One file of a stored artifact: `encode(compiled) -> bytes | None`, `decode(data, fields) -> fields`."""

    filename: str
    encode: Callable[[Any], bytes | None]
    decode: Callable[[bytes, dict[str, Any]], dict[str, Any]]


SECTIONS: list[Section] = []


def register_section(section: Section) -> Section:
    if any(s.filename == section.filename for s in SECTIONS):
        raise ValueError(f"a section is already stored as {section.filename!r}")
    if section.filename == "manifest.json" or "/" in section.filename:
        raise ValueError(f"{section.filename!r} cannot name a section file")
    SECTIONS.append(section)
    return section


def _dumps(doc: Any) -> bytes:
    return json.dumps(doc, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")


def json_section(filename: str, write: Callable[[Any], Any], read: Callable[[Any, dict], dict]) -> Section:
    """A section holding one JSON document (`write` returns plain data or None)."""
    def encode(compiled: Any) -> bytes | None:
        doc = write(compiled)
        return None if doc is None else _dumps(doc)

    return Section(filename, encode, lambda data, fields: read(json.loads(data.decode("utf-8")), fields))


def bytes_section(filename: str, field: str) -> Section:
    """A section holding one bytes field as it is (object code); absent when the field is empty."""
    return Section(filename, lambda compiled: getattr(compiled, field) or None,
                   lambda data, fields: {field: bytes(data)})


def encode_artifact(compiled: Any) -> dict[str, bytes]:
    """File name -> contents for every section the artifact has."""
    out = {}
    for section in SECTIONS:
        data = section.encode(compiled)
        if data is not None:
            out[section.filename] = data
    return out


def check_artifact(files: dict[str, bytes]) -> None:
    """Decode every section without a live kernel (for `pyasc cache verify`): raises what decoding raises.
    Loads the host object code too (linking it runs none of it)."""
    decode_artifact(files, {"py_func": None})


def decode_artifact(files: dict[str, bytes], fields: dict[str, Any]) -> dict[str, Any]:
    """CompiledKernel fields from the section files (`fields` has what the caller knows already).
    Raises ValueError (and its subclasses), KeyError or TypeError on a malformed section."""
    for section in SECTIONS:
        data = files.get(section.filename)
        if data is not None:
            fields.update(section.decode(data, fields))
    return fields


# ---- the sections that exist today -------------------------------------------------------------


def _graph_read(data: bytes, fields: dict) -> dict:
    return {"graph": ir.from_json(data.decode("utf-8"))}


register_section(Section("graph.json", lambda ck: ir.to_json(ck.graph).encode("utf-8"), _graph_read))

register_section(json_section(
    "stages.json",
    write=lambda ck: {"stages": ck.stages, "dots": ck.dots, "stage_ops": ck.stage_ops},
    read=lambda doc, fields: {"stages": dict(doc["stages"]), "dots": dict(doc["dots"]),
                              "stage_ops": {k: dict(v) for k, v in doc["stage_ops"].items()}}))


def _plans_write(ck: Any) -> dict:
    index = records.GraphIndex(ck.graph)
    return {"plans": records.encode(list(ck.plans), index), "memory_plan": records.encode(ck.memory_plan, index),
            "fusion_decisions": records.encode(list(ck.fusion_decisions), index), "pass_log": ck.pass_log}


def _plans_read(doc: dict, fields: dict) -> dict:
    index = records.GraphIndex(fields["graph"])
    return {"plans": records.decode(doc["plans"], index), "memory_plan": records.decode(doc["memory_plan"], index),
            "fusion_decisions": records.decode(doc["fusion_decisions"], index), "pass_log": str(doc["pass_log"])}


register_section(json_section("plans.json", _plans_write, _plans_read))

def _call_write(ck: Any) -> dict:
    return {"signature": ck.signature, "returns_tuple": ck.returns_tuple, "nodes_in": ck.nodes_in,
            "nodes_out": ck.nodes_out, "timings": ck.timings, "pass_times": ck.pass_times,
            "out_tree": ck.out_tree.to_json(_class_ref(ck)) if ck.out_tree is not None else None,
            "out_consts": [[i, v] for i, v in ck.out_consts]}


def _call_read(doc: dict, fields: dict) -> dict:
    if fields.get("py_func") is None:  # only checking: the structure, with any well-formed class reference
        out_tree = _check_tree(doc["out_tree"]) if doc.get("out_tree") else None
    else:
        out_tree = TreeDef.from_json(doc["out_tree"], _class_resolver(fields)) if doc.get("out_tree") else None
    return {"signature": str(doc["signature"]), "returns_tuple": bool(doc["returns_tuple"]), "out_tree": out_tree,
            "out_consts": tuple((int(i), v) for i, v in doc.get("out_consts", ())
                                if v is None or type(v) in (str, bool, int, float)),
            "nodes_in": int(doc["nodes_in"]), "nodes_out": int(doc["nodes_out"]),
            "timings": {k: float(v) for k, v in doc["timings"].items()},
            "pass_times": {k: float(v) for k, v in doc["pass_times"].items()}}


register_section(json_section("call.json", _call_write, _call_read))


# ---- result classes: where the reader finds them in the live kernel, never by importing a name ---------------


def _argument_classes(key: Any) -> Iterator[type]:
    """The NamedTuple/dataclass classes of a call's pytree arguments."""
    def walk(tree: TreeDef) -> Iterator[type]:
        if tree.cls is not None:
            yield tree.cls
        for child in tree.children:
            yield from walk(child)

    for k in key:
        if isinstance(k, TreeKey):
            yield from walk(k.tree)


def _class_ref(ck: Any) -> Callable[[type], Any]:
    """A result class as a guard's access path from the kernel (the class was read by a name the kernel
    reads, so the reader's revived guards check it and reach it), or as a class of a pytree argument."""
    def ref(cls: type) -> Any:
        for g in ck.guards.guards:
            if g.check.kind != "identity":
                continue
            try:
                value = resolve(ck.py_func, g.path)
            except PATH_ERRORS:
                continue
            if value is cls:
                return {"guard": [step_to_json(s) for s in g.path]}
        if any(c is cls for c in _argument_classes(ck.key)):
            return {"argument": class_name(cls)}
        raise pytree.NotPersistable(f"the result class {class_name(cls)} is not reached through a name the kernel "
                                    "reads nor an argument")
    return ref


def _check_tree(doc: Any) -> None:
    """A stored result structure is well formed (its kinds and class references), without resolving classes."""
    if doc == pytree.LEAF:
        return
    if not isinstance(doc, dict) or doc.get("kind") not in (pytree.DICT, pytree.LIST, pytree.TUPLE,
                                                             pytree.NAMEDTUPLE, pytree.DATACLASS):
        raise ValueError(f"not a stored pytree structure: {doc!r:.80}")
    if doc["kind"] in (pytree.NAMEDTUPLE, pytree.DATACLASS):
        ref = doc.get("cls")
        if not (isinstance(ref, dict) and (isinstance(ref.get("guard"), list) or isinstance(ref.get("argument"), str))):
            raise ValueError(f"malformed result class reference {ref!r:.80}")
    for child in doc["children"]:
        _check_tree(child)


def _class_resolver(fields: dict) -> Callable[[Any], type]:
    guards, fn, key = fields["guards"], fields["py_func"], fields["key"]

    def resolve_class(ref: Any) -> type:
        if isinstance(ref, dict) and isinstance(ref.get("guard"), list):
            for g in guards.guards:  # only a path the entry's guards checked in this process
                if g.check.kind == "identity" and [step_to_json(s) for s in g.path] == ref["guard"]:
                    return resolve(fn, g.path)
            raise ValueError("a result class's path is not one of the entry's guards")
        if isinstance(ref, dict) and isinstance(ref.get("argument"), str):
            for cls in _argument_classes(key):
                if class_name(cls) == ref["argument"]:
                    return cls
            raise ValueError(f"no argument of this call has the result class {ref['argument']}")
        raise ValueError(f"malformed result class reference {ref!r:.80}")
    return resolve_class


# what a call changes outside the kernel (writes to the caller's arrays, stores on its objects): absent if nothing
register_section(json_section("effects.json", write=lambda ck: ck.effects.to_json() if ck.effects is not None else None,
                              read=lambda doc, fields: {"effects": Effects.from_json(doc)}))


# ---- code generation: the device kernels and launch plan, the host module and its object code ----------


def _device_write(ck: Any) -> Any:
    return None if ck.device is None else records.encode(ck.device, records.GraphIndex(ck.graph))


register_section(json_section("device.json", _device_write,
                              lambda doc, fields: {"device": records.decode(doc, records.GraphIndex(fields["graph"]))}))


def _host_write(ck: Any) -> Any:
    if ck.host is None:
        return None
    return {"source": records.encode(ck.host.source, records.GraphIndex(ck.graph)),
            "object": base64.b64encode(ck.host.object_code).decode("ascii")}


def _host_read(doc: dict, fields: dict) -> dict:
    source = records.decode(doc["source"], records.GraphIndex(fields["graph"]))
    return {"host": HostProgram.load(source, base64.b64decode(doc["object"]))}  # no re-JIT of the IR


register_section(json_section("host.json", _host_write, _host_read))
