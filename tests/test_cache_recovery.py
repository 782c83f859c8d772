"""Every unreadable cache entry is discarded with one warning and compiled again; `cache verify --fix` never crashes.

The damaged entries are signed again with the cache's own secret where the damage must reach past
authentication (an authentic entry of another build, or one that a bug wrote wrong).
"""
from __future__ import annotations

import base64
import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import pyasc
from pyasc import cli
from pyasc.runtime.diskcache import CacheWarning, DiskCache
from test_cache_security import resign


def shifted(x):
    return x - 2.0


X = np.arange(8, dtype=np.float32)


def fresh():
    return pyasc.kernel(shifted, chip="tiny")


def only_entry(root: Path) -> Path:
    (entry,) = DiskCache(root).iter_entries()
    return entry


def edit_manifest(**fields):
    def damage(entry: Path) -> None:
        manifest = json.loads((entry / "manifest.json").read_text())
        for name, value in fields.items():
            if name == "section_meta":
                manifest["sections"]["graph.json"] = value
            elif name == "section_size":
                manifest["sections"]["graph.json"]["size"] = value
            else:
                manifest[name] = value
        (entry / "manifest.json").write_text(json.dumps(manifest))
        resign(entry, sections=False)
    return damage


def section_is_a_folder(entry: Path) -> None:
    (entry / "plans.json").unlink()
    (entry / "plans.json").mkdir()


def corrupt_object_code(entry: Path) -> None:
    host = json.loads((entry / "host.json").read_text())
    code = bytearray(base64.b64decode(host["object"]))
    code[:64] = bytes(64)  # no ELF header: the linker refuses it
    host["object"] = base64.b64encode(bytes(code)).decode("ascii")
    (entry / "host.json").write_text(json.dumps(host))
    resign(entry)


def malformed_section(entry: Path) -> None:
    (entry / "call.json").write_text('{"signature": 5}')
    resign(entry)


def manifest_is_a_folder(entry: Path) -> None:
    (entry / "manifest.json").unlink()
    (entry / "manifest.json").mkdir()


def manifest_is_a_list(entry: Path) -> None:
    (entry / "manifest.json").write_text("[1, 2]")


#: name -> (damage, whether the entry is unusable: the fields `cache list` alone shows are not needed to run)
DAMAGE = {
    "guards 5": (edit_manifest(guards=5), True),
    "guards null": (edit_manifest(guards=None), True),
    "section entry 5": (edit_manifest(section_meta=5), True),
    "section size null": (edit_manifest(section_size=None), True),
    "sections null": (edit_manifest(sections=None), True),
    "key 5": (edit_manifest(key=5), True),
    "signature null": (edit_manifest(signature=None), True),
    "created null": (edit_manifest(created=None, last_used="yesterday"), False),
    "section is a folder": (section_is_a_folder, True),
    "manifest is a folder": (manifest_is_a_folder, True),
    "manifest is a list": (manifest_is_a_list, True),
    "object code corrupt, MACs good": (corrupt_object_code, True),
    "section malformed, MACs good": (malformed_section, True),
}


def invoke(*args):
    result = CliRunner().invoke(cli.cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


@pytest.mark.parametrize("damage, unusable", DAMAGE.values(), ids=DAMAGE.keys())
def test_a_damaged_entry_is_discarded_once_and_recompiled(disk_cache, damage, unusable):
    fresh()(X)
    damage(only_entry(disk_cache))
    k = fresh()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        got = k(X)
        again = k(X)
    cache_warnings = [w for w in record if issubclass(w.category, CacheWarning)]
    if unusable:
        assert len(cache_warnings) == 1 and "compiling again" in str(cache_warnings[0].message)
        assert k.cache_info().misses == 1
    else:
        assert cache_warnings == [] and k.cache_info().disk_hits == 1
    np.testing.assert_array_equal(got, X - 2.0)
    np.testing.assert_array_equal(again, X - 2.0)
    assert invoke("cache", "verify")[0] == 0  # the entry written again is sound


def test_verify_fix_list_and_prune_survive_every_kind_of_damage(disk_cache):
    fresh()(X)
    good = only_entry(disk_cache)
    key = json.loads((good / "manifest.json").read_text())["key"]
    for i, (damage, _) in enumerate(DAMAGE.values()):
        copy = good.parent / f"{i:024d}"
        shutil.copytree(good, copy)
        resign(copy, key=f"{i:024d}{key[24:]}")  # a sound entry of another key, in its place
        assert DiskCache(disk_cache).verify(copy) is None
        damage(copy)
    status, out = invoke("cache", "list")
    assert status == 0 and "entries" in out
    status, out = invoke("cache", "verify")
    unusable = sum(u for _, u in DAMAGE.values())
    assert status == 1 and out.count("bad: ") == unusable and "another entry's place" not in out
    status, out = invoke("cache", "verify", "--fix")
    assert status == 0 and out.count("(removed)") == unusable
    assert f"{len(DAMAGE) + 1 - unusable} of {len(DAMAGE) + 1} entries are sound" in out
    assert good in DiskCache(disk_cache).iter_entries()
    assert invoke("cache", "verify")[0] == 0
    DiskCache(disk_cache).prune(0)
    assert list(DiskCache(disk_cache).iter_entries()) == []


def test_verify_reports_damage_past_authentication(disk_cache):
    fresh()(X)
    corrupt_object_code(only_entry(disk_cache))
    status, out = invoke("cache", "verify")
    assert status == 1 and "cannot be decoded" in out


@pytest.mark.parametrize("text", ['{"format": "pyasc.cache-stats", "version": 1, "kernels": {"shifted": 5}}',
                                  '{"format": "pyasc.cache-stats", "version": 1, "kernels": {"s": {"hits": "x"}}}',
                                  "[1, 2", "null"])
def test_a_corrupt_stats_file_never_fails_a_call(disk_cache, text):
    fresh()(X)
    (disk_cache / "stats.json").write_text(text)
    k = pyasc.kernel(shifted, chip="tiny", opt_level=1)  # another key: a miss, which writes the stats
    np.testing.assert_array_equal(k(X), X - 2.0)
    status, out = invoke("cache", "stats")
    assert status == 0
