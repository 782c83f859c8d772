"""Run corpus cases through pyasc and numpy and compare: results, arguments and objects after the call.

A case is a factory `make(rng) -> Call(fn, args, watch)`: called twice with the same seed, once for numpy
and once for pyasc, so each side gets fresh objects; `watch` are the objects whose state after the call
must agree too (layers that keep their input, caches, running statistics).
"""
from __future__ import annotations

import copy
import dataclasses
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import pyasc
from pyasc.errors import CompileError
from pyasc.testing import assert_close


@dataclass
class Call:
    fn: Callable[..., Any]
    args: tuple = ()
    watch: tuple = ()           # objects (or containers) whose state must match after the call
    options: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    name: str
    style: str
    make: Callable[[np.random.Generator], Call]


@dataclass
class Outcome:
    case: Case
    status: str       # "ok", "mismatch", "compile_error", "internal_error", "numpy_error"
    detail: str = ""


def _state(obj: Any) -> Any:
    """The comparable state of a watched object: arrays and numbers in its attributes (or the container)."""
    if isinstance(obj, (np.ndarray, np.generic, int, float, bool)) or obj is None:
        return obj
    if isinstance(obj, dict):
        return {k: _state(v) for k, v in obj.items() if not callable(v)}
    if isinstance(obj, (list, tuple)):
        return [_state(v) for v in obj]
    if hasattr(obj, "__dict__"):
        return {k: _state(v) for k, v in sorted(vars(obj).items()) if not callable(v) and not k.startswith("_")}
    return None


def _compare(got: Any, want: Any, where: str) -> None:
    if isinstance(want, dict):
        if not isinstance(got, dict) or list(got) != list(want):
            raise AssertionError(f"{where}: keys {list(got) if isinstance(got, dict) else type(got)} != {list(want)}")
        for k in want:
            _compare(got[k], want[k], f"{where}[{k!r}]")
        return
    if isinstance(want, (list, tuple)):
        if not isinstance(got, (list, tuple)) or len(got) != len(want):
            raise AssertionError(f"{where}: {type(got).__name__} of {len(got) if hasattr(got, '__len__') else '?'} "
                                 f"!= {type(want).__name__} of {len(want)}")
        for i, (g, w) in enumerate(zip(got, want)):
            _compare(g, w, f"{where}[{i}]")
        return
    if want is None or isinstance(want, str):
        if got != want:
            raise AssertionError(f"{where}: {got!r} != {want!r}")
        return
    w = np.asarray(want)
    g = np.asarray(got)
    if w.dtype.kind == "f" and w.dtype.itemsize == 8:
        w = w.astype(np.float32)  # numpy's float64 from Python scalars: pyasc narrows to float32 (documented)
    try:
        assert_close(g, w, check_dtype=False, rtol=2e-3, atol=2e-4)
    except AssertionError as e:
        raise AssertionError(f"{where}: {e}") from None


def run_case(case: Case, seed: int = 0, chip: str = "tiny") -> Outcome:
    ref = case.make(np.random.default_rng(seed))
    try:
        want = ref.fn(*ref.args)
    except Exception as e:  # the corpus function itself fails in numpy: a broken case, not pyasc's
        return Outcome(case, "numpy_error", f"{type(e).__name__}: {e}")
    mine = case.make(np.random.default_rng(seed))
    try:
        kernel = pyasc.kernel(mine.fn, chip=chip, **mine.options)
        got = kernel(*mine.args)
    except CompileError as e:
        return Outcome(case, "compile_error", f"{e.reason} [line {e.loc.lineno if e.loc else '?'}]")
    except Exception as e:
        return Outcome(case, "internal_error", f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=-3)}")
    try:
        _compare(got, want, "result")
        _compare(_state(list(mine.args)), _state(list(ref.args)), "arguments")
        _compare(_state(list(mine.watch)), _state(list(ref.watch)), "objects")
    except AssertionError as e:
        return Outcome(case, "mismatch", str(e))
    return Outcome(case, "ok")


def all_cases() -> list[Case]:
    from . import cs231n, keras_numpy, llama_rwkv, mlfromscratch, nnfs, sklearn_mlp, textbook  # the corpus modules

    out: list[Case] = []
    for module in (keras_numpy, sklearn_mlp, cs231n, llama_rwkv, nnfs, mlfromscratch, textbook):
        out.extend(module.CASES)
    return out


def case(style: str, cases: list):
    """Decorator for a case factory: `@case("keras", CASES)` on `def relu(rng): return Call(...)`."""
    def deco(make: Callable[[np.random.Generator], Call]) -> Callable:
        cases.append(Case(make.__name__, style, make))
        return make
    return deco


def f32(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def deep(x: Any) -> Any:
    return copy.deepcopy(x)


__all__ = ["Call", "Case", "Outcome", "all_cases", "case", "deep", "f32", "run_case", "dataclasses"]
