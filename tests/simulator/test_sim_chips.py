"""Chip presets, derived configs and their validation."""
import dataclasses

import pytest

from simulator import ChipConfig, ConfigError, DmaPath, SimulatorError, chips


def test_presets_have_the_design_figures():
    c = chips.get("910b")
    assert (c.aic_cores, c.aiv_cores, c.clock_hz) == (24, 48, 1.8e9)
    assert c.gm_bytes == 64 * 2**30
    assert c.gm_bytes_per_cycle * c.clock_hz == pytest.approx(1.6e12)
    assert (c.l1_bytes, c.l0a_bytes, c.l0b_bytes, c.l0c_bytes) == (512 * 1024, 64 * 1024, 64 * 1024, 128 * 1024)
    assert (c.ub_bytes, c.bias_table_bytes) == (192 * 1024, 1024)
    assert (c.ub_align, c.l1_align, c.l0ab_align, c.l0c_align) == (32, 32, 512, 64)
    assert (c.vector_repeat_bytes, c.max_repeats, c.event_ids) == (256, 255, 8)
    assert c.gm_to_ub == DmaPath(210, 113.0) and c.ub_to_gm == DmaPath(140, 66.0)
    assert c.gm_to_l1 == DmaPath(170, 168.0) and c.l0c_to_gm == DmaPath(75, 126.0)


def test_tiny_shrinks_the_machine_and_keeps_the_rules():
    t, b = chips.get("tiny"), chips.get("910b")
    assert (t.aic_cores, t.aiv_cores) == (2, 4)
    assert (t.ub_bytes, t.l1_bytes, t.l0a_bytes, t.l0b_bytes, t.l0c_bytes) == (16384, 65536, 8192, 8192, 16384)
    changed = {f.name for f in dataclasses.fields(ChipConfig) if getattr(t, f.name) != getattr(b, f.name)}
    assert changed == {"name", "aic_cores", "aiv_cores", "ub_bytes", "l1_bytes", "l0a_bytes", "l0b_bytes", "l2_bytes",
                       "l0c_bytes"}


def test_names_and_lookup():
    assert chips.names() == ("910b", "tiny")
    assert chips.get("910B").name == "910b"
    cfg = chips.get("tiny")
    assert chips.get(cfg) is cfg


def test_unknown_preset_is_a_clear_error():
    with pytest.raises(ConfigError, match=r"unknown chip preset 'h100'; known presets: 910b, tiny"):
        chips.get("h100")
    with pytest.raises(ConfigError, match="preset name or a ChipConfig"):
        chips.get(3)


def test_config_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        chips.get("tiny").ub_bytes = 1


def test_replace_derives_a_validated_config():
    c = chips.get("910b").replace(name="half", aiv_cores=24, gm_bytes_per_cycle=444.0)
    assert (c.name, c.aiv_cores, c.gm_bytes_per_cycle, c.ub_bytes) == ("half", 24, 444.0, 192 * 1024)


@pytest.mark.parametrize("overrides, message", [
    ({"ub_bytez": 1}, r"unknown chip config field\(s\) 'ub_bytez'"),
    ({"ub_bytes": 0}, "ub_bytes must be a positive integer, got 0"),
    ({"ub_bytes": 1000}, "ub_bytes=1000 is not a multiple of ub_align=32"),
    ({"ub_align": 24}, "ub_align must be a positive power of two, got 24"),
    ({"clock_hz": -1.0}, "clock_hz must be a positive number"),
    ({"event_ids": True}, "event_ids must be a positive integer"),
    ({"gm_unaligned_factor": 1.5}, r"gm_unaligned_factor must be a number in \(0, 1\]"),
    ({"aic_cores": 0, "aiv_cores": 0}, "needs at least one core"),
    ({"gm_to_ub": DmaPath(-1, 10.0)}, "gm_to_ub.startup must be a non-negative integer"),
    ({"ub_to_gm": (1, 2)}, r"ub_to_gm must be a DmaPath"),
    ({"name": ""}, "chip name must be a non-empty string"),
    ({"max_nburst": 0}, "max_nburst must be a positive integer, got 0"),
])
def test_invalid_replace_is_rejected(overrides, message):
    with pytest.raises(ConfigError, match=message) as info:
        chips.get("910b").replace(**overrides)
    assert isinstance(info.value, SimulatorError) and isinstance(info.value, ValueError)
