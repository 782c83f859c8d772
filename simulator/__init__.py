"""The NPU emulator: chip presets, memories, ISA, pipes and flags, functional + timing model,
trace export and sanitizer. Imports nothing from pyasc.

    import simulator
    from simulator import Program, UB, GM

    chip = simulator.chips.get("tiny")
    dev = simulator.Device(chip)
    res = dev.launch(program, block_dim=4, args={...}, tiling={...}, sanitize=True)
    print(res.summary()); res.save_trace("trace.json")

See simulator/README.md for the instruction set.
"""
from . import bfloat16, chips, isa
from .chips import ChipConfig, DmaPath
from .device import Device
from .errors import (
    ConfigError, DeadlockError, DoubleSetError, FlagLeftSetError, FlagOverflowError, LaunchError, MemoryRuleError,
    ProgramError,
    RaceError, SanitizerError, SimulatorError, SyncError, UninitializedReadError,
)
from .isa import BT, GM, L0A, L0B, L0C, L1, UB, Mem, Reg, VRepeat
from .memory import GmBuffer
from .mixed import MixedKernel
from .program import Program
from .result import CallProfile, LaunchResult

__all__ = [
    "chips", "isa", "ChipConfig", "DmaPath", "Device", "Program", "MixedKernel", "LaunchResult", "CallProfile", "GmBuffer",
    "Mem", "Reg", "VRepeat", "GM", "UB", "L1", "L0A", "L0B", "L0C", "BT",
    "SimulatorError", "ConfigError", "ProgramError", "LaunchError", "MemoryRuleError", "SanitizerError",
    "RaceError", "UninitializedReadError", "SyncError", "DeadlockError", "FlagLeftSetError", "DoubleSetError",
    "FlagOverflowError",
]
