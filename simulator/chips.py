"""Chip configurations: every capacity, rule and cost the emulator uses.

A `ChipConfig` is a frozen, validated record. The presets are built by
functions (no module-level mutable state); `get(name)` returns one and
`config.replace(**overrides)` derives a validated variant.

The "910b" figures are the public ones collected in
/work/shared/reference/npu-hardware-facts.md (section 7). "tiny" keeps every
rule and cost of "910b" and shrinks the machine so that small test tensors
already need many tiles, tails and several cores.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

from .errors import ConfigError

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB


@dataclass(frozen=True)
class DmaPath:
    """Cost of one data-move path: a fixed start-up, then `bytes_per_cycle` per core."""

    startup: int
    bytes_per_cycle: float

    def cycles(self, nbytes: int) -> float:
        return self.startup + nbytes / self.bytes_per_cycle


#: the config field holding each on-chip space's capacity and alignment (read on every buffer check: a lookup, not
#: a table built per call)
_SPACE_BYTES = {"UB": "ub_bytes", "L1": "l1_bytes", "L0A": "l0a_bytes", "L0B": "l0b_bytes", "L0C": "l0c_bytes",
                "BT": "bias_table_bytes"}
_SPACE_ALIGN = {"UB": "ub_align", "L1": "l1_align", "L0A": "l0ab_align", "L0B": "l0ab_align", "L0C": "l0c_align",
                "BT": "bias_table_align"}


@dataclass(frozen=True)
class ChipConfig:
    """One chip: core counts, memories, alignment rules and the cost of every instruction.

    Sizes are bytes, costs are cycles of `clock_hz`. Memories per core: an AIC
    (cube core) owns L1, L0A, L0B, L0C and the bias table; an AIV (vector
    core) owns UB. GM is shared; its aggregate bandwidth `gm_bytes_per_cycle`
    is split between the cores moving data at the same time.
    """

    name: str
    aic_cores: int
    aiv_cores: int
    clock_hz: float
    gm_bytes: int
    gm_bytes_per_cycle: float
    l1_bytes: int
    l0a_bytes: int
    l0b_bytes: int
    l0c_bytes: int
    ub_bytes: int
    bias_table_bytes: int
    ub_align: int = 32
    l1_align: int = 32
    l0ab_align: int = 512
    l0c_align: int = 64
    bias_table_align: int = 64
    # GM allocations start on this boundary; transfers whose GM address is not
    # on `gm_peak_align` get `gm_unaligned_factor` of their path bandwidth
    gm_alloc_align: int = 512
    gm_peak_align: int = 512
    gm_unaligned_factor: float = 0.7
    # the bus moves each burst in whole pieces of gm_piece_bytes (the smallest GM transfer piece), so
    # many narrow bursts cost more than one wide one
    gm_piece_bytes: int = 128
    # L2 between the cores and HBM: capacity, LRU line size and the aggregate bandwidth of hits
    l2_bytes: int = 192 * MIB
    l2_line_bytes: int = 512
    l2_bytes_per_cycle: float = 5 * 1.6e12 / 1.8e9
    # data moves on the UB/L1 side are in 32-byte blocks (DataCopy rule); one move has at most
    # `max_nburst` bursts of at most `max_burst_blocks` blocks, or `max_pad_burst_bytes` with padding
    dma_block_bytes: int = 32
    max_nburst: int = 4095
    max_burst_blocks: int = 65535
    max_pad_burst_bytes: int = 2097151
    # cube fractals: cube_block rows (and L0C columns) of fractal_row_bytes each (16 x 32 B = 512 B)
    cube_block: int = 16
    fractal_row_bytes: int = 32
    vector_repeat_bytes: int = 256
    max_repeats: int = 255
    max_vector_stride: int = 255       # block and repeat strides of repeat addressing, in 32-byte blocks
    # the vector transpose the hardware has: transpose_block x transpose_block blocks of 16-bit elements
    transpose_block: int = 16
    transpose_itemsize: int = 2
    event_ids: int = 8
    # scalar unit: cost of one scalar instruction and of issuing one pipe instruction; each pipe's
    # issue queue holds pipe_queue_depth instructions not yet started (the scalar unit stalls when full)
    scalar_cycles: int = 1
    issue_cycles: int = 1
    scalar_ub_cycles: int = 10  # the scalar unit reading or writing one UB element
    pipe_queue_depth: int = 32
    sync_all_cycles: int = 100
    # a launch costs launch_startup_cycles + launch_core_cycles per core before the first instruction
    launch_startup_cycles: int = 1800
    launch_core_cycles: int = 10
    # mixed launches: groups of one AIC and group_aivs AIVs; cross-core flags 0..cross_flag_ids-1 count
    # up to cross_flag_limit pending sets and take cross_flag_cycles to reach the waiting core
    group_aivs: int = 2
    cross_flag_ids: int = 11
    cross_flag_limit: int = 15
    cross_flag_cycles: int = 100
    # vector unit: start-up, then cycles per 256-byte repeat by cost class
    vector_startup_cycles: int = 3
    vector_simple_cycles: int = 1      # copy, dup, cast, tensor-scalar ops, broadcast
    vector_binary_cycles: int = 2      # tensor-tensor add/mul/max, select, compare, fp32 exp/log, reductions
    vector_complex_cycles: int = 4     # div, sqrt, fp16 exp/log
    vector_composite_cycles: int = 12  # functions the unit evaluates as a short sequence (tanh, erf, ...)
    # cube unit: cycles per fractal block (fp16 16x16x16, int8 16x32x16, fp32 16x8x16)
    cube_startup_cycles: int = 3
    cube_fp16_block_cycles: int = 1
    cube_int8_block_cycles: int = 1
    cube_fp32_block_cycles: int = 2
    # data-move paths (start-up cycles, bytes per cycle per core)
    gm_to_ub: DmaPath = DmaPath(210, 113.0)
    gm_to_l1: DmaPath = DmaPath(170, 168.0)
    ub_to_gm: DmaPath = DmaPath(140, 66.0)
    l1_to_l0a: DmaPath = DmaPath(8, 256.0)
    l1_to_l0b: DmaPath = DmaPath(8, 128.0)
    l1_to_bt: DmaPath = DmaPath(8, 128.0)
    l0c_to_gm: DmaPath = DmaPath(75, 126.0)

    def __post_init__(self) -> None:
        _validate(self)

    def replace(self, **overrides: Any) -> "ChipConfig":
        """A new, validated config with `overrides` applied (unknown names are an error)."""
        known = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ConfigError(
                f"unknown chip config field(s) {', '.join(map(repr, unknown))}; "
                f"valid fields are: {', '.join(sorted(known))}"
            )
        return dataclasses.replace(self, **overrides)

    def fractal_c0(self, itemsize: int) -> int:
        """Columns of one fractal row for elements of `itemsize` bytes (16 for fp16, 8 for fp32, 32 for int8)."""
        return self.fractal_row_bytes // itemsize

    def cores_of(self, core_type: str) -> int:
        """Number of cores of one type ("aiv" or "aic")."""
        return self.aiv_cores if core_type == "aiv" else self.aic_cores

    def space_bytes(self, space: str) -> int:
        return getattr(self, _SPACE_BYTES[space])

    def space_align(self, space: str) -> int:
        return getattr(self, _SPACE_ALIGN[space])

    @property
    def gm_bytes_per_second(self) -> float:
        return self.gm_bytes_per_cycle * self.clock_hz


_POSITIVE_INTS = (
    "l1_bytes", "l0a_bytes", "l0b_bytes", "l0c_bytes", "ub_bytes", "bias_table_bytes", "gm_bytes",
    "vector_repeat_bytes", "max_repeats", "event_ids", "dma_block_bytes", "max_vector_stride", "transpose_block",
    "transpose_itemsize",
    "max_nburst", "max_burst_blocks", "max_pad_burst_bytes", "cube_block", "l2_bytes", "pipe_queue_depth",
    "group_aivs", "cross_flag_ids", "cross_flag_limit",
)
_POWERS_OF_TWO = (
    "ub_align", "l1_align", "l0ab_align", "l0c_align", "bias_table_align",
    "gm_alloc_align", "gm_peak_align", "dma_block_bytes", "fractal_row_bytes", "gm_piece_bytes", "l2_line_bytes",
)
_NON_NEGATIVE_INTS = (
    "aic_cores", "aiv_cores", "scalar_cycles", "issue_cycles", "scalar_ub_cycles", "sync_all_cycles",
    "vector_startup_cycles", "cube_startup_cycles", "launch_startup_cycles", "launch_core_cycles",
    "cross_flag_cycles",
)
_POSITIVE_CYCLE_INTS = (
    "vector_simple_cycles", "vector_binary_cycles", "vector_complex_cycles", "vector_composite_cycles",
    "cube_fp16_block_cycles", "cube_int8_block_cycles", "cube_fp32_block_cycles",
)
_CAPACITY_ALIGN = (
    ("ub_bytes", "ub_align"), ("l1_bytes", "l1_align"), ("l0a_bytes", "l0ab_align"),
    ("l0b_bytes", "l0ab_align"), ("l0c_bytes", "l0c_align"), ("bias_table_bytes", "bias_table_align"),
)
_PATHS = ("gm_to_ub", "gm_to_l1", "ub_to_gm", "l1_to_l0a", "l1_to_l0b", "l1_to_bt", "l0c_to_gm")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _validate(c: ChipConfig) -> None:
    def bad(field: str, expected: str) -> ConfigError:
        return ConfigError(f"chip {c.name!r}: field {field} must be {expected}, got {getattr(c, field)!r}")

    if not isinstance(c.name, str) or not c.name:
        raise ConfigError(f"chip name must be a non-empty string, got {c.name!r}")
    for f in _POSITIVE_INTS + _POSITIVE_CYCLE_INTS:
        v = getattr(c, f)
        if not _is_int(v) or v <= 0:
            raise bad(f, "a positive integer")
    for f in _NON_NEGATIVE_INTS:
        v = getattr(c, f)
        if not _is_int(v) or v < 0:
            raise bad(f, "a non-negative integer")
    for f in _POWERS_OF_TWO:
        v = getattr(c, f)
        if not _is_int(v) or v <= 0 or v & (v - 1):
            raise bad(f, "a positive power of two")
    for f in ("clock_hz", "gm_bytes_per_cycle", "l2_bytes_per_cycle"):
        v = getattr(c, f)
        if not _is_number(v) or v <= 0:
            raise bad(f, "a positive number")
    if not _is_number(c.gm_unaligned_factor) or not 0 < c.gm_unaligned_factor <= 1:
        raise bad("gm_unaligned_factor", "a number in (0, 1]")
    if c.aic_cores + c.aiv_cores == 0:
        raise ConfigError(f"chip {c.name!r}: needs at least one core (aic_cores + aiv_cores > 0)")
    for size, align in _CAPACITY_ALIGN:
        if getattr(c, size) % getattr(c, align):
            raise ConfigError(
                f"chip {c.name!r}: {size}={getattr(c, size)} is not a multiple of {align}={getattr(c, align)}"
            )
    if c.l2_bytes % c.l2_line_bytes:
        raise bad("l2_bytes", f"a multiple of l2_line_bytes ({c.l2_line_bytes})")
    if c.vector_repeat_bytes % c.dma_block_bytes:
        raise bad("vector_repeat_bytes", f"a multiple of dma_block_bytes ({c.dma_block_bytes})")
    for p in _PATHS:
        path = getattr(c, p)
        if not isinstance(path, DmaPath):
            raise bad(p, "a DmaPath(startup, bytes_per_cycle)")
        if not _is_int(path.startup) or path.startup < 0:
            raise ConfigError(f"chip {c.name!r}: {p}.startup must be a non-negative integer, got {path.startup!r}")
        if not _is_number(path.bytes_per_cycle) or path.bytes_per_cycle <= 0:
            raise ConfigError(
                f"chip {c.name!r}: {p}.bytes_per_cycle must be a positive number, got {path.bytes_per_cycle!r}"
            )


def _chip_910b() -> ChipConfig:
    # Ascend 910B-class: 24 AIC + 48 AIV at 1.8 GHz, 64 GiB HBM at ~1.6 TB/s
    return ChipConfig(
        name="910b",
        aic_cores=24,
        aiv_cores=48,
        clock_hz=1.8e9,
        gm_bytes=64 * GIB,
        gm_bytes_per_cycle=1.6e12 / 1.8e9,  # 1.6 TB/s at 1.8 GHz, ~889 B/cycle
        l1_bytes=512 * KIB,
        l0a_bytes=64 * KIB,
        l0b_bytes=64 * KIB,
        l0c_bytes=128 * KIB,
        ub_bytes=192 * KIB,
        bias_table_bytes=1 * KIB,
        l2_bytes=192 * MIB,
        l2_bytes_per_cycle=5 * 1.6e12 / 1.8e9,  # L2 hits at about 5x HBM (~7 TB/s)
    )


def _chip_tiny() -> ChipConfig:
    # every rule and cost of 910b, a much smaller machine
    return _chip_910b().replace(
        name="tiny",
        aic_cores=2,
        aiv_cores=4,
        ub_bytes=16 * KIB,
        l1_bytes=64 * KIB,
        l0a_bytes=8 * KIB,
        l0b_bytes=8 * KIB,
        l0c_bytes=16 * KIB,
        l2_bytes=512 * KIB,
    )


_PRESETS: dict[str, Callable[[], ChipConfig]] = {"910b": _chip_910b, "tiny": _chip_tiny}


def names() -> tuple[str, ...]:
    """Names of the chip presets."""
    return tuple(_PRESETS)


def get(name: "str | ChipConfig") -> ChipConfig:
    """The preset called `name` (case-insensitive); a ChipConfig is returned unchanged."""
    if isinstance(name, ChipConfig):
        return name
    if not isinstance(name, str):
        raise ConfigError(f"chip must be a preset name or a ChipConfig, got {type(name).__name__} {name!r}")
    key = name.strip().lower()
    if key not in _PRESETS:
        raise ConfigError(f"unknown chip preset {name!r}; known presets: {', '.join(names())}")
    return _PRESETS[key]()
