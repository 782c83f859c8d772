"""The guards of one compiled kernel, checked on every warm call, and their JSON form for the disk cache.

`GuardSet.check(fn)` walks every access path once (paths share prefixes:
`fn.__globals__` is read once for all the globals) and returns the current
lifted arrays, ready to pass as the kernel's hidden inputs, or None when a
value the kernel read is no longer what it was (the caller recompiles).

On disk a guard is its path (JSON steps) and the fingerprint of the value
it saw. `GuardSet.revive(doc, fn)` rebuilds the checks of a stored entry
from the values the paths reach in *this* process, after checking that
their fingerprints are the stored ones (otherwise the entry does not apply).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from .. import dtypes
from ..guards import (PATH_ERRORS, Attr, Builtin, Free, Global, Guard, Has, Item, NotPersistable, Pinned,
                      Unguardable, builtin_lookup, check_for, is_persistable, path_text, resolve, step_from_json,
                      step_to_json)


def _converter(dtype: str) -> Callable[[Any], np.ndarray]:
    """Current value of a lifted array -> the read-only, contiguous array of the Data input's dtype."""
    target = dtypes.to_numpy(dtype)

    def convert(arr: Any) -> np.ndarray:
        if arr.dtype != target or not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr, dtype=target)
        view = arr.view()
        view.flags.writeable = False
        return view

    return convert


@dataclass(eq=False)
class GuardSet:
    """Guards (in first-read order) and the lifted paths with the dtypes of their Data inputs."""

    guards: tuple[Guard, ...] = ()
    hidden: tuple[tuple, ...] = ()
    hidden_dtypes: tuple[str, ...] = ()
    _check: Callable[[Any], list[np.ndarray] | None] = field(default=None, repr=False)  # type: ignore[assignment]
    _convert: list = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self._check = _compile_checker(self.guards, self.hidden, [_converter(d) for d in self.hidden_dtypes])
        self._convert = [_converter(d) for d in self.hidden_dtypes]

    def check(self, fn: Any) -> list[np.ndarray] | None:
        """The lifted arrays as they are now, or None if some value the kernel read has changed."""
        return self._check(fn)

    def hidden_now(self, fn: Any) -> list[np.ndarray]:
        """The lifted arrays as they are now, without checking the guards."""
        try:
            return [convert(resolve(fn, p)) for convert, p in zip(self._convert, self.hidden)]
        except PATH_ERRORS as e:
            raise RuntimeError(f"a captured array the kernel reads is gone ({type(e).__name__}: {e})") from None

    def failing(self, fn: Any) -> str | None:
        """The first guard that fails now, as readable text (for explanations), or None."""
        for g in self.guards:
            try:
                value = resolve(fn, g.path)
            except PATH_ERRORS as e:
                return f"{path_text(g.path)} is gone ({type(e).__name__}: {e})"
            if not g.check.holds(value):
                return f"{path_text(g.path)} changed ({g.check.kind} guard)"
        return None

    # ---- persistence ---------------------------------------------------------------------
    @property
    def persistable(self) -> bool:
        try:
            self.to_json()
        except NotPersistable:
            return False
        return True

    def to_json(self) -> dict:
        """{"guards": [[steps, fingerprint]...], "hidden": [[steps, dtype]...]}; NotPersistable if it has none."""
        guards = []
        for g in self.guards:
            if not is_persistable(g.check.fingerprint):
                raise NotPersistable(f"{path_text(g.path)} has no stable fingerprint")
            guards.append([[step_to_json(s) for s in g.path], g.check.fingerprint])
        hidden = [[[step_to_json(s) for s in p], d] for p, d in zip(self.hidden, self.hidden_dtypes)]
        return {"guards": guards, "hidden": hidden}

    def digest(self) -> str:
        """sha256 of the paths and fingerprints: what the kernel read, as part of the disk key."""
        return hashlib.sha256(_canonical(self.to_json()).encode()).hexdigest()

    @classmethod
    def revive(cls, doc: dict, fn: Any) -> "GuardSet | None":
        """The stored guards with checks made from this process's values, or None when a value's
        fingerprint differs from the stored one (the entry is for other values). Raises ValueError /
        KeyError / TypeError on a malformed document."""
        revived = _revive(doc, fn)
        return revived if isinstance(revived, GuardSet) else None

    @staticmethod
    def mismatch(doc: dict, fn: Any) -> str | None:
        """Why stored guards do not hold in this process (the first one that differs), or None."""
        revived = _revive(doc, fn)
        return None if isinstance(revived, GuardSet) else revived

    def describe(self) -> list[str]:
        return [str(g) for g in self.guards]


def _compile_checker(guards: Sequence[Guard], hidden: Sequence[tuple], converters: Sequence[Callable]) -> Callable:
    """One straight-line Python function that walks every path once (paths share their prefixes) and
    returns the converted lifted arrays, or None at the first check that fails.

    The generated text names only its own variables: every step key, check and converter is passed in
    as a constant (`k3`, `h3`, `c0`), never spelled into the source, so no name read from a cache
    manifest can become code.
    """
    consts: dict[str, Any] = {"PATH_ERRORS": PATH_ERRORS, "builtin_lookup": builtin_lookup}
    lines = ["def check(v0):", "    try:", "        pass"]
    slots: dict[tuple, int] = {(): 0}
    holds = {g.path: g.check.holds for g in guards}
    for path in [*(g.path for g in guards), *hidden]:
        for depth in range(1, len(path) + 1):
            prefix = path[:depth]
            if prefix in slots:
                continue
            n = slots[prefix] = len(slots)
            parent, step = f"v{slots[prefix[:-1]]}", prefix[-1]
            expr, key = _STEPS[type(step)]
            consts[f"k{n}"] = key(step)
            lines.append(f"        v{n} = {expr.format(p=parent, k=f'k{n}')}")
            if prefix in holds:
                consts[f"h{n}"] = holds[prefix]
                lines.append(f"        if not h{n}(v{n}): return None")
    lines.append("    except PATH_ERRORS:")
    lines.append("        return None")
    for i, converter in enumerate(converters):
        consts[f"c{i}"] = converter
    lines.append("    return [" + ", ".join(f"c{i}(v{slots[p]})" for i, p in enumerate(hidden)) + "]")
    exec("\n".join(lines), consts)  # noqa: S102 - text built above from slot numbers only
    return consts["check"]


#: step type -> how it reads its value from the parent's (`p`) with its constant (`k`), and that constant
_STEPS: dict[type, tuple[str, Callable[[Any], Any]]] = {
    Global: ("{p}.__globals__[{k}]", lambda s: s.name),
    Builtin: ("builtin_lookup({p}, {k})", lambda s: s.name),
    Free: ("{p}.__closure__[{k}].cell_contents", lambda s: s.index),
    Attr: ("getattr({p}, {k})", lambda s: s.name),
    Item: ("{p}[{k}]", lambda s: s.key),
    Has: ("hasattr({p}, {k})", lambda s: s.name),
    Pinned: ("{k}", lambda s: s.obj),
}


def _revive(doc: dict, fn: Any) -> "GuardSet | str":
    guards = []
    for steps, fingerprint in doc["guards"]:
        path = tuple(step_from_json(s) for s in steps)
        try:
            value = resolve(fn, path)
        except PATH_ERRORS as e:
            return f"{path_text(path)} is gone ({type(e).__name__}: {e})"
        try:
            check = check_for(value, lifted=fingerprint[0] == "array_meta", always_lift=fingerprint[0] == "array_meta")
        except Unguardable as e:
            return f"{path_text(path)} is now {e}"
        if _canonical(check.fingerprint) != _canonical(fingerprint):
            return f"{path_text(path)} differs: the entry saw {_short(fingerprint)}, now {_short(check.fingerprint)}"
        guards.append(Guard(path, check))
    hidden = tuple(tuple(step_from_json(s) for s in steps) for steps, _ in doc["hidden"])
    return GuardSet(tuple(guards), hidden, tuple(str(d) for _, d in doc["hidden"]))


def _short(fingerprint: Any, limit: int = 80) -> str:
    text = json.dumps(fingerprint)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _canonical(doc: Any) -> str:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))


def from_frontend(guards: Sequence[Guard], hidden: Sequence[tuple], graph_inputs: Sequence[Any],
                  n_user_tensors: int) -> GuardSet:
    """The GuardSet of a fresh compile: lifted paths paired with the dtypes of their Data inputs."""
    data = list(graph_inputs)[n_user_tensors:]
    return GuardSet(tuple(guards), tuple(hidden), tuple(node.outputs[0].dtype for node in data))
