"""Kernel options: validation, environment defaults and the options part of the cache key.

Every option is checked when the decorator runs, so a typo fails at import
time with a message naming the option, the value given and what is allowed,
instead of at the first call deep inside the compiler.
"""
from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field, fields
from typing import Any

from ..ge import pass_names

#: "emulator": generated tile programs on the emulated NPU; "reference": the numpy interpreter of the graph
BACKENDS = ("emulator", "reference")
SYNC_MODES = ("flags", "barrier")
DEFAULT_CHIP = "910b"
DEFAULT_UNROLL_BUDGET = 4096


@dataclass(frozen=True)
class KernelOptions:
    """Validated options of one `@pyasc.kernel` (see `make_options`)."""

    opt_level: int = 3
    chip: Any = DEFAULT_CHIP            # a preset name or a simulator chip config object
    buffer_num: int = 2
    cores: int | None = None
    dynamic: bool = False
    disable_passes: tuple[str, ...] = ()
    sanitize: bool = False
    backend: str = "emulator"
    unroll_budget: int = DEFAULT_UNROLL_BUDGET
    sync: str = "flags"                 # "barrier": pipe_barrier(ALL) after every tile op (a debug mode)
    checks: bool = True                 # raise numpy's errors on data (an index out of range) after the launch
    # derived, not user-settable: the chip config handed to the optimiser
    chip_config: Any = field(default=None, compare=False, repr=False)

    @property
    def chip_name(self) -> str:
        return self.chip if isinstance(self.chip, str) else str(getattr(self.chip, "name", type(self.chip).__name__))

    def key(self) -> tuple:
        """A hashable, process-independent description (part of the specialisation key)."""
        chip = self.chip if isinstance(self.chip, str) else ("config", repr(self.chip))
        return (
            ("opt_level", self.opt_level), ("chip", chip), ("buffer_num", self.buffer_num),
            ("cores", self.cores), ("dynamic", self.dynamic), ("disable_passes", self.disable_passes),
            ("sanitize", self.sanitize), ("backend", self.backend), ("unroll_budget", self.unroll_budget),
            ("sync", self.sync), ("checks", self.checks),
        )

    def describe(self) -> str:
        return ", ".join(f"{k}={v!r}" if k != "chip" else f"chip={self.chip_name!r}" for k, v in self.key())


OPTION_NAMES: tuple[str, ...] = tuple(f.name for f in fields(KernelOptions) if f.name != "chip_config")


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _bad(option: str, value: Any, allowed: str, exc: type[Exception] = ValueError) -> Exception:
    return exc(f"pyasc.kernel option {option}={value!r} is not valid; {option} must be {allowed}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_int(option: str, value: Any, allowed: str, ok) -> int:
    if not _is_int(value):
        raise _bad(option, value, allowed, TypeError)
    if not ok(value):
        raise _bad(option, value, allowed)
    return int(value)


def _check_bool(option: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise _bad(option, value, "True or False", TypeError)
    return value


def _check_passes(value: Any) -> tuple[str, ...]:
    if isinstance(value, (str, bytes)):
        # a bare string would be iterated character by character: almost certainly a mistake
        raise _bad("disable_passes", value, f"an iterable of pass names, e.g. ({value!r},)", TypeError)
    try:
        names = tuple(value)
    except TypeError:
        raise _bad("disable_passes", value, "an iterable of pass names (str)", TypeError) from None
    for name in names:
        if not isinstance(name, str) or not name:
            raise _bad("disable_passes", value, "an iterable of non-empty pass names (str)", TypeError)
    return tuple(sorted(set(names)))


def _check_pass_names(names: tuple[str, ...]) -> None:
    """Unknown pass names fail here, at decoration, rather than inside the optimiser at the first call."""
    known = pass_names()
    for name in names:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"pyasc.kernel option disable_passes names an unknown pass {name!r}{hint}; "
                             f"the passes are {', '.join(known)}")


def resolve_chip(chip: Any) -> Any:
    """The simulator chip config for a preset name or a config object (ValueError/TypeError otherwise)."""
    from simulator import chips  # the runtime is the layer that ties pyasc to the hardware model

    presets = tuple(chips.names())
    if isinstance(chip, str):
        if chip not in presets:
            close = difflib.get_close_matches(chip, presets, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise _bad("chip", chip, "a preset name (" + ", ".join(map(repr, presets)) + ") or a simulator chip config"
                       + hint)
        return chips.get(chip)
    config_type = type(chips.get(presets[0]))
    if not isinstance(chip, config_type):
        raise _bad("chip", chip, "a preset name (" + ", ".join(map(repr, presets)) + ") or a "
                   f"{config_type.__module__}.{config_type.__qualname__} object", TypeError)
    return chip


def make_options(**given: Any) -> KernelOptions:
    """Validate user options, filling defaults (some from the environment: PYASC_CHIP, PYASC_SANITIZE,
    PYASC_BACKEND)."""
    unknown = [k for k in given if k not in OPTION_NAMES]
    if unknown:
        name = unknown[0]
        close = difflib.get_close_matches(name, OPTION_NAMES, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise TypeError(f"pyasc.kernel got an unknown option {name!r} (value {given[name]!r}); "
                        f"the options are {', '.join(OPTION_NAMES)}{hint}")

    opt_level = _check_int("opt_level", given.get("opt_level", 3), "an int from 0 to 3", lambda v: 0 <= v <= 3)
    buffer_num = _check_int("buffer_num", given.get("buffer_num", 2), "1 or 2", lambda v: v in (1, 2))
    cores = given.get("cores")
    if cores is not None:
        cores = _check_int("cores", cores, "None or a positive int", lambda v: v > 0)
    dynamic = _check_bool("dynamic", given.get("dynamic", False))
    sanitize = _check_bool("sanitize", given.get("sanitize", _env_flag("PYASC_SANITIZE")))
    checks = _check_bool("checks", given.get("checks", True))
    disable = _check_passes(given.get("disable_passes", ()))
    _check_pass_names(disable)
    budget = _check_int("unroll_budget", given.get("unroll_budget", DEFAULT_UNROLL_BUDGET), "a positive int",
                        lambda v: v > 0)
    backend = given.get("backend")
    if "backend" not in given:  # PYASC_BACKEND=reference: every kernel on the numpy interpreter (TRITON_INTERPRET)
        env_backend = os.environ.get("PYASC_BACKEND", "").strip()
        if env_backend and env_backend not in BACKENDS:
            raise ValueError(f"environment variable PYASC_BACKEND={env_backend!r} is not valid; it must be "
                             + " or ".join(map(repr, BACKENDS)))
        backend = env_backend or "emulator"
    if not isinstance(backend, str):
        raise _bad("backend", backend, " or ".join(map(repr, BACKENDS)), TypeError)
    if backend not in BACKENDS:
        raise _bad("backend", backend, " or ".join(map(repr, BACKENDS)))
    sync = given.get("sync", "flags")
    if not isinstance(sync, str):
        raise _bad("sync", sync, " or ".join(map(repr, SYNC_MODES)), TypeError)
    if sync not in SYNC_MODES:
        raise _bad("sync", sync, " or ".join(map(repr, SYNC_MODES)))
    chip = given.get("chip")
    from_env = chip is None and bool(os.environ.get("PYASC_CHIP"))
    if chip is None:
        chip = os.environ.get("PYASC_CHIP") or DEFAULT_CHIP
    try:
        config = resolve_chip(chip)
    except ValueError as e:
        if from_env:  # the user did not write chip=...: point at where the value came from
            raise ValueError(f"environment variable PYASC_CHIP={chip!r} is not valid: {e}") from None
        raise
    return KernelOptions(opt_level=opt_level, chip=chip, buffer_num=buffer_num, cores=cores, dynamic=dynamic,
                         disable_passes=disable, sanitize=sanitize, backend=backend, unroll_budget=budget,
                         sync=sync, checks=checks, chip_config=config)
