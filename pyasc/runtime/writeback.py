"""After a launch: what the kernel changed outside itself reaches the caller (pyasc.effects has the records).

- a written argument (or pytree leaf, or lifted captured array) gets the new contents copied into the
  caller's own array (numpy changed it in place; a DLPack argument is written through the memory it
  shares with its library's tensor);
- a stored attribute or item is set on the caller's object (a pytree argument's container, or the object
  at an access path from the kernel function);
- a result that is an argument itself is returned as the caller's array, as numpy returns the same object.

Before the launch, `check_inputs` refuses what numpy would refuse or pyasc cannot follow: writing a
read-only array, and writing an array that shares memory with another argument without being the very
same array (numpy's order of effects through partial overlaps is not modelled).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..effects import ARG, INPUT, OUT, SCALAR, TEXT, Effects, Store
from ..guards import PATH_ERRORS, Attr, resolve
from ..pytree import unflatten
from .errors import ArgumentValueError
from .interop import is_foreign


def check_inputs(name: str, effects: Effects, objects: Sequence[Any], arrays: Sequence[np.ndarray]) -> None:
    """Raise ArgumentValueError for a written argument numpy could not write, or one pyasc cannot follow."""
    users = len(objects)
    for w in effects.writes:
        if w.input >= users:
            continue
        obj = objects[w.input]
        label = effects.label(w.input)
        if isinstance(obj, np.ndarray) and not obj.flags.writeable:
            raise ArgumentValueError(f"{name}() writes argument {label!r} in place, but that array is read-only "
                                     "(numpy raises ValueError: output array is read-only here)")
        mine = obj if isinstance(obj, np.ndarray) else arrays[w.input]
        for j in range(users):
            other = objects[j]
            if j == w.input or other is obj or isinstance(other, np.generic):
                continue
            theirs = other if isinstance(other, np.ndarray) else arrays[j]
            if np.may_share_memory(mine, theirs):
                raise ArgumentValueError(
                    f"{name}() writes argument {label!r} in place, and argument {effects.label(j)!r} shares memory "
                    "with it without being the same array; pyasc follows numpy's order of effects when one array is "
                    "passed twice, not for overlapping views: pass a copy of one of them")


def apply(name: str, effects: Effects, outputs: list[np.ndarray], objects: Sequence[Any],
          hidden: Sequence[tuple], fn: Any, arguments: Callable[[str], Any]) -> list[np.ndarray]:
    """Apply the effects after a launch; returns the kernel's results (the first `effects.results` outputs,
    a result that is an argument replaced by the caller's array)."""

    if effects.status >= 0:
        raise_failed_check(effects, outputs[effects.status])

    def caller_object(index: int) -> Any:
        if index < len(objects):
            return objects[index]
        return resolve(fn, hidden[index - len(objects)])

    for w in effects.writes:
        target = caller_object(w.input)
        _copy_into(name, effects.label(w.input), target, outputs[w.output])
    results = list(outputs[:effects.results])
    for k, i in effects.result_inputs:
        obj = caller_object(i)
        if isinstance(obj, np.ndarray) or is_foreign(obj):
            results[k] = obj
    for s in effects.stores:
        _store(name, s, outputs, caller_object, fn, arguments)
    for p in effects.prints:
        print(*(text if kind == TEXT else outputs[text][()] if kind == SCALAR else outputs[text]
                for kind, text in p.items), sep=p.sep, end=p.end)
    return results


#: the exceptions a data check may raise (numpy's), by name
_EXCEPTIONS = {"IndexError": IndexError, "ValueError": ValueError, "ZeroDivisionError": ZeroDivisionError,
               "LinAlgError": np.linalg.LinAlgError}


def raise_failed_check(effects: Effects, status: np.ndarray) -> None:
    """Raise numpy's error for the first check whose bit the kernel set (the writes it made are not applied)."""
    word = int(np.asarray(status).reshape(()))
    if not word:
        return
    k = (word & -word).bit_length() - 1
    k = min(k, len(effects.checks) - 1)
    exception, message, where = effects.checks[k]
    raise _EXCEPTIONS.get(exception, ValueError)(f"{where}: {message}")


def _copy_into(name: str, label: str, target: Any, value: np.ndarray) -> None:
    if isinstance(target, np.ndarray):
        np.copyto(target, value.reshape(target.shape), casting="unsafe")
        return
    try:
        shared = np.from_dlpack(target)  # the memory the library's tensor and the kernel's input share
    except (BufferError, TypeError, RuntimeError, AttributeError) as e:
        raise ArgumentValueError(f"{name}() wrote argument {label!r} in place, but its memory cannot be written "
                                 f"through DLPack ({type(e).__name__}: {e}); pass a numpy array") from None
    if not shared.flags.writeable:
        raise ArgumentValueError(f"{name}() wrote argument {label!r} in place, but DLPack gives a read-only view "
                                 "of its memory; pass a numpy array, or a tensor that can be written")
    np.copyto(shared, value.reshape(shared.shape), casting="unsafe")


def _store(name: str, s: Store, outputs: list[np.ndarray], caller_object: Callable[[int], Any], fn: Any,
           arguments: Callable[[str], Any]) -> None:
    leaves = []
    for kind, v in s.leaves:
        if kind == OUT:
            leaves.append(outputs[v])
        elif kind == SCALAR:  # numpy stored a numpy scalar there (`self.loss = np.sum(x)`)
            leaves.append(outputs[v][()])
        elif kind == INPUT:
            leaves.append(caller_object(v))
        else:
            leaves.append(v)
    value = unflatten(s.tree, leaves)
    try:
        if s.target.kind == ARG:
            obj = arguments(s.target.param)
            for key in s.target.path:
                obj = getattr(obj, key) if isinstance(key, str) and not isinstance(obj, dict) else obj[key]
        else:
            obj = resolve(fn, s.target.path)
        if isinstance(s.step, Attr):
            setattr(obj, s.step.name, value)
        else:
            obj[s.step.key] = value
    except (*PATH_ERRORS, NotImplementedError) as e:
        raise ArgumentValueError(f"{name}(): the kernel sets {s.text()}, which cannot be set after the call "
                                 f"({type(e).__name__}: {e})") from None
