"""What a kernel call changes outside itself, as numpy would: the records the frontend makes and the runtime applies.

numpy code changes the caller's arrays in place (`x += 1`, `cache[:, p] = new`,
`state[i][3] = ...`) and the caller's objects (`self.cache = k`,
`bn_param["running_mean"] = m`). A kernel graph is functional, so the
frontend turns each of these into extra graph outputs and one record here:

    WriteBack(input, output)   graph input `input` (a tensor argument, a leaf of a pytree argument or a
                               lifted captured array) now holds graph output `output`: the runtime copies
                               it into the caller's array after the launch
    Store(target, step, ...)   `obj.attr = value` / `obj[key] = value` on an object outside the kernel:
                               the runtime sets it on the real object after the launch; the value is a
                               pytree whose leaves are graph outputs, the caller's own arguments (`self.x
                               = x` stores the very array passed in) or compile-time constants
    result_inputs (k, i)       result k *is* argument i (`x += 1; return x`): the call returns the
                               caller's array, as numpy returns the same object

A `Target` says where an object is: inside a pytree argument (`kind` "arg",
the parameter's name and the keys from it) or on an access path from the
kernel function (`kind` "path", pyasc.guards steps: `self`, a global, ...).
This module is a leaf (pytree and guards only), so the frontend and the
runtime share it without importing each other.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

from .guards import Attr, Item, NotPersistable, path_text, step_from_json, step_to_json
from .pytree import LEAF_DEF, TreeDef

ARG, PATH = "arg", "path"


@dataclass(frozen=True)
class Target:
    """An object outside the kernel: inside pytree argument `param` at `path` (keys), or at the access path
    `path` (guards steps) from the kernel function."""

    kind: str
    path: tuple = ()
    param: str = ""

    def text(self) -> str:
        if self.kind == ARG:
            out = self.param
            for k in self.path:
                out += f"[{k!r}]"
            return out
        return path_text(self.path)

    def to_json(self) -> list:
        if self.kind == ARG:
            return [ARG, self.param, [_key_json(k) for k in self.path]]
        return [PATH, [step_to_json(s) for s in self.path]]

    @staticmethod
    def from_json(doc: list) -> "Target":
        if doc[0] == ARG:
            return Target(ARG, tuple(_key_from(k) for k in doc[2]), str(doc[1]))
        if doc[0] == PATH:
            return Target(PATH, tuple(step_from_json(s) for s in doc[1]))
        raise ValueError(f"unknown effect target {doc!r}")


Step = Union[Attr, Item]

#: leaf kinds of a stored value: a graph output (SCALAR: one numpy holds as a numpy scalar), an input, a constant;
#: a printed compile-time value is its TEXT
OUT, SCALAR, INPUT, CONST, TEXT = "out", "scalar", "input", "const", "text"


@dataclass(frozen=True)
class WriteBack:
    input: int
    output: int


@dataclass(frozen=True)
class Store:
    target: Target
    step: Step
    tree: TreeDef = LEAF_DEF
    leaves: tuple = ()  # per leaf of `tree`: (OUT or SCALAR, output index) | (INPUT, input index) | (CONST, value)

    def text(self) -> str:
        where = self.target.text()
        return f"{where}.{self.step.name}" if isinstance(self.step, Attr) else f"{where}[{self.step.key!r}]"


@dataclass(frozen=True)
class Print:
    """`print(...)` in the kernel, done after the launch: each item a graph output (OUT, SCALAR) or the text of
    a compile-time value (TEXT)."""

    items: tuple
    sep: str = " "
    end: str = "\n"


@dataclass(frozen=True)
class Effects:
    """Everything one compiled specialisation changes outside itself; `results` graph outputs are the
    kernel's result, the ones after them carry written arrays and stored values."""

    results: int
    writes: tuple[WriteBack, ...] = ()
    stores: tuple[Store, ...] = ()
    result_inputs: tuple[tuple[int, int], ...] = ()
    input_labels: tuple[str, ...] = field(default=(), compare=False)  # how the user spells each written input
    prints: tuple[Print, ...] = ()
    checks: tuple[tuple[str, str, str], ...] = ()  # per status bit: (numpy's exception, message, where)
    status: int = -1  # the graph output holding the status word (-1: no checks)

    @property
    def empty(self) -> bool:
        return not (self.writes or self.stores or self.result_inputs or self.prints or self.status >= 0)

    def describe(self) -> list[str]:
        lines = [f"writes {self.label(w.input)} (output {w.output})" for w in self.writes]
        lines += [f"stores {s.text()}" for s in self.stores]
        return lines

    def label(self, index: int) -> str:
        return self.input_labels[index] if index < len(self.input_labels) else f"input {index}"

    def to_json(self) -> dict:
        return {"results": self.results,
                "writes": [[w.input, w.output] for w in self.writes],
                "stores": [[s.target.to_json(), step_to_json(s.step), s.tree.to_json(),
                            [_leaf_json(leaf) for leaf in s.leaves]] for s in self.stores],
                "result_inputs": [list(p) for p in self.result_inputs],
                "input_labels": list(self.input_labels),
                "prints": [[[list(i) for i in p.items], p.sep, p.end] for p in self.prints],
                "checks": [list(c) for c in self.checks], "status": self.status}

    @staticmethod
    def from_json(doc: dict) -> "Effects":
        stores = []
        for target, step, tree, leaves in doc["stores"]:
            parsed = step_from_json(step)
            if not isinstance(parsed, (Attr, Item)):
                raise ValueError(f"a store step must be an attribute or an item, got {step!r}")
            stores.append(Store(Target.from_json(target), parsed, TreeDef.from_json(tree),
                                tuple(_leaf_from(leaf) for leaf in leaves)))
        prints = tuple(Print(tuple((str(k), int(v) if k != TEXT else str(v)) for k, v in items), str(sep), str(end))
                       for items, sep, end in doc.get("prints", ()))
        return Effects(int(doc["results"]), tuple(WriteBack(int(i), int(o)) for i, o in doc["writes"]),
                       tuple(stores), tuple((int(k), int(i)) for k, i in doc["result_inputs"]),
                       tuple(str(s) for s in doc.get("input_labels", ())), prints,
                       tuple((str(e), str(m), str(w)) for e, m, w in doc.get("checks", ())), int(doc.get("status", -1)))


def _key_json(k: Any) -> Any:
    if isinstance(k, bool) or not isinstance(k, (str, int)):
        raise NotPersistable(f"the key {k!r} of a pytree argument")
    return k if isinstance(k, str) else {"int": k}


def _key_from(doc: Any) -> Any:
    return doc["int"] if isinstance(doc, dict) else str(doc)


def _leaf_json(leaf: tuple) -> list:
    kind, value = leaf
    if kind != CONST:
        return [kind, int(value)]
    if value is None or isinstance(value, (bool, str)) or type(value) in (int, float):
        return [CONST, value]
    raise NotPersistable(f"a stored compile-time value of type {type(value).__name__}")


def _leaf_from(doc: list) -> tuple:
    kind, value = doc
    if kind not in (OUT, SCALAR, INPUT, CONST):
        raise ValueError(f"unknown stored leaf kind {kind!r}")
    return (kind, value if kind == CONST else int(value))
