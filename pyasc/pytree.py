"""Pytrees: dicts, lists, tuples, NamedTuples and dataclasses of leaves, flattened and rebuilt.

A kernel argument that is such a container is *flattened*: its tensor leaves
become tensor parameters of the graph (in leaf order), its other leaves are
compile-time values, and its structure (`TreeDef`) is part of the
specialisation key. A kernel result may be a pytree too: the graph returns
the leaves, the artifact rebuilds the structure.

This module knows only Python containers; what a leaf is (a tensor, a number)
is the caller's business (`flatten(value, is_leaf)`). The runtime and the
frontend both use it, so it sits beside them at the package root.

Leaf order is the container's own order: dict insertion order (not sorted as
in JAX: a kernel iterating `params.items()` sees the caller's order, so two
dicts with the same keys in another order are two structures), list and
tuple order, NamedTuple and dataclass field order.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable, Iterator, NamedTuple


class NotPersistable(Exception):
    """A structure that cannot be written: a class the writer cannot point to, a dict key of another type."""


#: container kinds, in the order `flatten` tests them
DICT, LIST, TUPLE, NAMEDTUPLE, DATACLASS, LEAF = "dict", "list", "tuple", "namedtuple", "dataclass", "leaf"


class TreeDef(NamedTuple):
    """The structure of a pytree: a kind, its keys (dict keys, field names; () for lists and tuples),
    the class of a NamedTuple or dataclass (None otherwise) and one child TreeDef per item.

    A NamedTuple, so it is hashable and compares by value (the class by identity) and can sit in a key.
    """

    kind: str
    keys: tuple = ()
    cls: Any = None
    children: tuple = ()

    @property
    def num_leaves(self) -> int:
        return 1 if self.kind == LEAF else sum(c.num_leaves for c in self.children)

    def paths(self) -> list[tuple]:
        """One access path per leaf, in leaf order: a tuple of keys (dict key, index or field name)."""
        if self.kind == LEAF:
            return [()]
        out = []
        for key, child in zip(self.item_keys(), self.children):
            out.extend((key, *p) for p in child.paths())
        return out

    def item_keys(self) -> tuple:
        return self.keys if self.kind in (DICT, NAMEDTUPLE, DATACLASS) else tuple(range(len(self.children)))

    def to_json(self, class_ref: Callable[[type], Any]) -> Any:
        """A process-independent form; a class is written as `class_ref(cls)` (plain JSON saying where the
        reader finds it), which raises NotPersistable for a class it cannot point to."""
        if self.kind == LEAF:
            return LEAF
        doc: dict[str, Any] = {"kind": self.kind, "children": [c.to_json(class_ref) for c in self.children]}
        if self.kind in (DICT, NAMEDTUPLE, DATACLASS):
            doc["keys"] = [_json_key(k) for k in self.keys]
        if self.cls is not None:
            doc["cls"] = class_ref(self.cls)
        return doc

    def key_text(self) -> Any:
        """Like to_json, but never raises: the key's JSON form for the disk key components."""
        if self.kind == LEAF:
            return LEAF
        return [self.kind, [_json_key(k) for k in self.keys], class_name(self.cls) if self.cls is not None else None,
                [c.key_text() for c in self.children]]

    @staticmethod
    def from_json(doc: Any, resolve_class: Callable[[Any], type]) -> "TreeDef":
        """The structure `to_json` wrote; `resolve_class(ref)` turns a class reference back into the class
        (nothing here imports or looks up a class by name). ValueError for a malformed document."""
        if doc == LEAF:
            return LEAF_DEF
        if not isinstance(doc, dict) or doc.get("kind") not in (DICT, LIST, TUPLE, NAMEDTUPLE, DATACLASS):
            raise ValueError(f"not a stored pytree structure: {doc!r:.80}")
        kind = doc["kind"]
        children = tuple(TreeDef.from_json(c, resolve_class) for c in doc["children"])
        keys = tuple(_from_json_key(k) for k in doc.get("keys", ()))
        cls = None
        if kind in (NAMEDTUPLE, DATACLASS):
            cls = resolve_class(doc["cls"])
            wanted = is_namedtuple_class if kind == NAMEDTUPLE else dataclasses.is_dataclass
            if not isinstance(cls, type) or not wanted(cls):
                raise ValueError(f"the stored result structure needs a {kind} class, and found {cls!r:.80}")
        return TreeDef(kind, keys, cls, children)

    def describe(self, leaves: Iterable[str] | None = None) -> str:
        """`{w: L, b: L}` style text, with `leaves` (texts in leaf order) in place of each L."""
        it: Iterator[str] = iter(leaves) if leaves is not None else iter(())

        def text(t: TreeDef) -> str:
            if t.kind == LEAF:
                return next(it, "*")
            items = [text(c) for c in t.children]
            if t.kind == DICT:
                return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(t.keys, items)) + "}"
            if t.kind == LIST:
                return "[" + ", ".join(items) + "]"
            if t.kind == TUPLE:
                return "(" + ", ".join(items) + (",)" if len(items) == 1 else ")")
            return f"{t.cls.__name__}(" + ", ".join(f"{k}={v}" for k, v in zip(t.keys, items)) + ")"

        return text(self)


LEAF_DEF = TreeDef(LEAF)


def class_name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _json_key(k: Any) -> Any:
    if isinstance(k, str):
        return k
    if isinstance(k, bool) or not isinstance(k, int):
        raise NotPersistable(f"the dict key {k!r} is not a str or int")
    return {"int": k}


def _from_json_key(k: Any) -> Any:
    return k["int"] if isinstance(k, dict) else k


def is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def is_namedtuple_class(cls: type) -> bool:
    return issubclass(cls, tuple) and hasattr(cls, "_fields") and hasattr(cls, "_make")


def is_dataclass_instance(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def is_container(value: Any) -> bool:
    """A value `flatten` takes apart (a dict, list, tuple, NamedTuple or dataclass instance)."""
    return isinstance(value, (dict, list, tuple)) or is_dataclass_instance(value)


class BadKey(Exception):
    """A dict key pyasc cannot key on (not a str or int)."""

    def __init__(self, path: tuple, key: Any):
        super().__init__(path, key)
        self.path = path
        self.key = key


def flatten(value: Any, is_leaf: Callable[[Any], bool] = lambda v: False) -> tuple[list[Any], TreeDef]:
    """(leaves in order, structure). `is_leaf(v)` True stops the descent at `v` (e.g. a tensor);
    anything that is not a container is a leaf. Raises BadKey for a dict key that is not a str or int."""
    leaves: list[Any] = []

    def walk(v: Any, path: tuple) -> TreeDef:
        t = type(v)
        if t is not dict and t is not list and t is not tuple and (is_leaf(v) or not is_container(v)):
            leaves.append(v)  # (plain containers first: every call of a pytree kernel flattens its arguments)
            return LEAF_DEF
        if isinstance(v, dict):
            for k in v:
                if isinstance(k, bool) or not isinstance(k, (str, int)):
                    raise BadKey(path, k)
            keys = tuple(v)
            return TreeDef(DICT, keys, None, tuple(walk(v[k], path + (k,)) for k in keys))
        if isinstance(v, list):
            return TreeDef(LIST, (), None, tuple(walk(x, path + (i,)) for i, x in enumerate(v)))
        if is_namedtuple(v):
            fields = tuple(type(v)._fields)
            return TreeDef(NAMEDTUPLE, fields, type(v), tuple(walk(x, path + (f,)) for f, x in zip(fields, v)))
        if isinstance(v, tuple):
            return TreeDef(TUPLE, (), None, tuple(walk(x, path + (i,)) for i, x in enumerate(v)))
        fields = tuple(f.name for f in dataclasses.fields(v))
        return TreeDef(DATACLASS, fields, type(v), tuple(walk(getattr(v, f), path + (f,)) for f in fields))

    tree = walk(value, ())
    return leaves, tree


def unflatten(tree: TreeDef, leaves: Iterable[Any]) -> Any:
    """The structure `tree` with `leaves` (in leaf order) at its leaves.

    A dataclass is rebuilt without running its `__init__`/`__post_init__` (they were run when the
    caller built it, on the caller's values; here the leaves are tensors of the kernel graph)."""
    it = iter(leaves)

    def build(t: TreeDef) -> Any:
        if t.kind == LEAF:
            return next(it)
        items = [build(c) for c in t.children]
        if t.kind == DICT:
            return dict(zip(t.keys, items))
        if t.kind == LIST:
            return items
        if t.kind == TUPLE:
            return tuple(items)
        if t.kind == NAMEDTUPLE:
            return t.cls._make(items)
        obj = object.__new__(t.cls)
        for k, v in zip(t.keys, items):
            object.__setattr__(obj, k, v)  # frozen dataclasses too
        return obj

    return build(tree)


def path_text_for(name: str, tree: TreeDef, path: tuple) -> str:
    """`params['w'][0].scale`: how the user spells the leaf at `path` of parameter `name` (fields as `.f`)."""
    out, t = name, tree
    for k in path:
        out += f".{k}" if t.kind in (NAMEDTUPLE, DATACLASS) else f"[{k!r}]"
        t = t.children[t.item_keys().index(k)]
    return out
