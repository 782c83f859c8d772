"""The chip config as the compiler sees it: one typed record (`Chip`) and the presets by name."""
from __future__ import annotations

from simulator import chips as _chips
from simulator.chips import ChipConfig, DmaPath  # noqa: F401  (DmaPath: the type of a Chip's path fields)
from simulator.errors import ConfigError

#: one chip: core counts, memories, alignments, cube block, vector repeat rules and the cost of everything
Chip = ChipConfig
#: the error a bad chip name or field raises
ChipError = ConfigError
#: the preset used when a kernel names no chip (PYASC_CHIP may choose another at the runtime)
DEFAULT_CHIP = "910b"


def get_chip(chip: "str | Chip | None" = None) -> Chip:
    """None -> the default preset, a preset name -> its config, anything else as given (a Chip, or a record
    with a chip's fields for a test; whoever reads a field it lacks says which)."""
    if chip is None or isinstance(chip, str):
        return _chips.get(chip or DEFAULT_CHIP)
    return chip


def preset_names() -> tuple[str, ...]:
    return _chips.names()
