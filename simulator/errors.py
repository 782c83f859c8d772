"""Every error the emulator raises derives from `SimulatorError`.

Bad input (a config, a program, launch arguments) raises a subclass that is
also a `ValueError`, so callers that only know Python's built-ins still catch
it. Run-time findings (memory rules, synchronisation, sanitizer) carry the
facts a report needs as attributes, and a message that names them.
"""
from __future__ import annotations

from typing import Any


class SimulatorError(Exception):
    """Base class of every error raised by the emulator."""


class ConfigError(SimulatorError, ValueError):
    """An invalid chip configuration, an unknown preset or a bad override."""


class ProgramError(SimulatorError, ValueError):
    """A malformed tile program or an instruction with invalid operands."""


class LaunchError(SimulatorError, ValueError):
    """Bad launch arguments (block_dim, kernel arguments, tiling data)."""


class MemoryRuleError(SimulatorError):
    """A capacity, alignment or bounds rule broken by an access or an allocation.

    Attributes (None when not applicable): core, pipe, instruction (index),
    text (the instruction's listing), space, start, end (byte range), rule.
    """

    def __init__(self, message: str, **facts: Any):
        self.core = facts.get("core")
        self.pipe = facts.get("pipe")
        self.instruction = facts.get("instruction")
        self.text = facts.get("text")
        self.space = facts.get("space")
        self.start = facts.get("start")
        self.end = facts.get("end")
        self.rule = facts.get("rule")
        super().__init__(message)


class SanitizerError(SimulatorError):
    """A synchronisation bug: a race, a read of never-written memory, or a flag protocol error.

    Attributes: core, and `accesses`: a tuple of dicts, one per instruction
    involved (pipe, instruction index, text, space, start, end).
    """

    def __init__(self, message: str, core: int | None = None, accesses: tuple = ()):
        self.core = core
        self.accesses = tuple(accesses)
        super().__init__(message)


class RaceError(SanitizerError):
    """Two accesses from different pipes (or cores) to overlapping bytes that no flag chain orders."""


class UninitializedReadError(SanitizerError):
    """A read of on-chip (or GM) bytes that nothing wrote before."""


class SyncError(SanitizerError):
    """A flag protocol error; these checks are cheap and always on."""


class DeadlockError(SyncError):
    """A wait that can never be satisfied (including all-core barriers some cores never reach)."""


class FlagLeftSetError(SyncError):
    """A flag still set when the kernel ends: a later kernel would hang on real hardware."""


class DoubleSetError(SyncError):
    """A flag set a second time before its wait consumed the first set (the event is lost)."""


class FlagOverflowError(SyncError):
    """A cross-core flag set more times ahead of its waits than the hardware counter holds."""
