"""The disk cache trusts nothing it did not write: planted code, imports and data are never used.

Each attack is first shown to work on a reader that checks only the manifest's checksums (what the cache did
before it authenticated entries), so the attack is real; then the cache itself is shown to refuse it: one
warning, a correct result from a fresh compile, `pyasc cache verify` naming the entry.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import pyasc
from pyasc import cli
from pyasc.runtime.cachesecret import KEY_FILE
from pyasc.runtime.diskcache import CacheWarning, DiskCache
from pyasc.runtime.entryfiles import _MANIFEST_PURPOSE, canonical, section_mac


def scaled(x):
    return x * 3.0 + 1.0


X = np.linspace(-1, 1, 8, dtype=np.float32)
WANT = X * 3.0 + 1.0


def fresh():
    return pyasc.kernel(scaled, chip="tiny")


def only_entry(root: Path) -> Path:
    (entry,) = DiskCache(root).iter_entries()
    return entry


def plant(entry: Path, filename: str, data: bytes) -> None:
    """Replace a section as someone who can write the folder but not the secret would: the manifest's size
    and sha256 recomputed, its MACs left as they were."""
    (entry / filename).write_bytes(data)
    manifest = json.loads((entry / "manifest.json").read_text())
    manifest["sections"][filename].update(size=len(data), sha256=hashlib.sha256(data).hexdigest())
    (entry / "manifest.json").write_text(json.dumps(manifest))


def resign(entry: Path, sections: bool = True, **fields) -> None:
    """Sign the manifest (with `fields` changed) and, unless told not to, every section again, with the cache's
    own secret: what only its owner can do."""
    secret = DiskCache(entry.parent.parent.parent).secret
    manifest = json.loads((entry / "manifest.json").read_text())
    manifest.pop("mac", None)
    manifest.update(fields)
    for name, meta in (manifest["sections"] or {}).items() if sections else ():
        if isinstance(meta, dict) and isinstance(manifest["key"], str) and (entry / name).is_file():
            data = (entry / name).read_bytes()
            meta.update(size=len(data), sha256=hashlib.sha256(data).hexdigest(),
                        mac=section_mac(secret, manifest["key"], name, data))
    manifest["mac"] = secret.mac(_MANIFEST_PURPOSE, canonical(manifest))
    (entry / "manifest.json").write_text(json.dumps(manifest))


def checksums_only(monkeypatch):
    """The reader the cache had before: manifest and sections trusted when their sha256 values match."""
    def read_manifest(self, path):
        return json.loads((path / "manifest.json").read_text())

    def read_files(self, path, manifest):
        files = {n: (path / n).read_bytes() for n in manifest["sections"]}
        assert all(hashlib.sha256(d).hexdigest() == manifest["sections"][n]["sha256"] for n, d in files.items())
        return files

    monkeypatch.setattr(DiskCache, "read_manifest", read_manifest)
    monkeypatch.setattr(DiskCache, "read_files", read_files)


def verify_output() -> tuple[int, str]:
    result = CliRunner().invoke(cli.cli, ["cache", "verify"], catch_exceptions=False)
    return result.exit_code, result.output


def refused_then_recompiled(disk_cache: Path, reason: str = "fails authentication") -> None:
    """The planted entry: reported by verify, discarded with one warning, the kernel compiled again and right."""
    status, out = verify_output()
    assert status == 1 and f"bad: {only_entry(disk_cache)}" in out and reason in out
    k = fresh()
    with pytest.warns(CacheWarning, match=reason) as record:
        got = k(X)
    assert len(record) == 1 and "compiling again" in str(record[0].message)
    assert k.cache_info().misses == 1 and k.cache_info().disk_hits == 0
    np.testing.assert_allclose(got, WANT, rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = fresh()
        np.testing.assert_allclose(again(X), WANT, rtol=1e-6)
        assert again.cache_info().disk_hits == 1  # the rebuilt entry is sound
    assert verify_output()[0] == 0


# ---- native code --------------------------------------------------------------------------------------


def evil_object(marker: Path) -> bytes:
    """Host object code exporting the two entry points pyasc calls, each running `touch marker` first."""
    import llvmlite.binding as llvm
    import llvmlite.ir as lir

    from pyasc.codegen.host import _target_machine

    m = lir.Module("planted")
    m.triple = llvm.get_process_triple()
    i8p, i64p = lir.IntType(8).as_pointer(), lir.IntType(64).as_pointer()
    system = lir.Function(m, lir.FunctionType(lir.IntType(32), [i8p]), "system")
    cmd = f"touch '{marker}'\0".encode()
    text = lir.GlobalVariable(m, lir.ArrayType(lir.IntType(8), len(cmd)), "cmd")
    text.initializer = lir.Constant(lir.ArrayType(lir.IntType(8), len(cmd)), bytearray(cmd))
    for name, ret, args in (("pyasc_sizes", lir.VoidType(), [i64p, i64p]),
                            ("pyasc_run", lir.IntType(64), [i64p, i8p, i8p])):
        b = lir.IRBuilder(lir.Function(m, lir.FunctionType(ret, args), name).append_basic_block())
        b.call(system, [b.bitcast(text, i8p)])
        b.ret_void() if isinstance(ret, lir.VoidType) else b.ret(lir.Constant(ret, 0))
    return _target_machine().emit_object(llvm.parse_assembly(str(m)))


def plant_object(entry: Path, marker: Path) -> None:
    host = json.loads((entry / "host.json").read_bytes())
    host["object"] = base64.b64encode(evil_object(marker)).decode("ascii")
    plant(entry, "host.json", json.dumps(host).encode())


def test_planted_native_code_never_runs(disk_cache, tmp_path, monkeypatch):
    fresh()(X)
    marker = tmp_path / "payload-ran"
    plant_object(only_entry(disk_cache), marker)
    with monkeypatch.context() as m:  # the attack is real: a checksum-only reader runs the payload
        checksums_only(m)
        with pytest.raises(Exception):
            fresh()(X)
    assert marker.exists()
    marker.unlink()
    plant_object(only_entry(disk_cache), marker)
    refused_then_recompiled(disk_cache)
    assert not marker.exists()


def test_an_entry_planted_before_the_first_compile_is_never_loaded(disk_cache, tmp_path):
    """Entry paths are predictable: plant one where the victim's compile will look, from another cache."""
    fresh()(X)
    entry = only_entry(disk_cache)
    marker = tmp_path / "payload-ran"
    plant_object(entry, marker)
    planted = tmp_path / "planted"
    entry.rename(planted)  # the victim has nothing cached ...
    entry.mkdir()
    for f in planted.iterdir():  # ... and the attacker's entry waits where its key puts it
        (entry / f.name).write_bytes(f.read_bytes())
    refused_then_recompiled(disk_cache)
    assert not marker.exists()


# ---- imports --------------------------------------------------------------------------------------


PLANTED_MODULE = "pyasc_planted_module"


@pytest.fixture
def plantable_module(tmp_path, monkeypatch):
    """An importable module whose import leaves a marker file."""
    folder = tmp_path / "site"
    folder.mkdir()
    marker = tmp_path / "imported"
    (folder / f"{PLANTED_MODULE}.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nimport collections\nThing = collections.namedtuple('Thing', 'a')\n")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, PLANTED_MODULE, raising=False)
    return marker


def plant_result_class(entry: Path, reference) -> None:
    call = json.loads((entry / "call.json").read_bytes())
    call["out_tree"] = {"kind": "namedtuple", "keys": ["a"], "cls": reference, "children": ["leaf"]}
    plant(entry, "call.json", json.dumps(call).encode())


@pytest.mark.parametrize("reference", [f"{PLANTED_MODULE}:Thing", {"argument": f"{PLANTED_MODULE}:Thing"},
                                       {"guard": [["global", "os"], ["attr", "system"]]}],
                         ids=["module:qualname", "argument class", "guard path"])
def test_a_class_named_in_an_entry_is_never_imported(disk_cache, plantable_module, reference):
    import importlib.util

    assert importlib.util.find_spec(PLANTED_MODULE) is not None  # the module is there to be imported
    fresh()(X)
    plant_result_class(only_entry(disk_cache), reference)
    refused_then_recompiled(disk_cache)
    assert PLANTED_MODULE not in sys.modules and not plantable_module.exists()
    # even signed with the owner's own secret, a class is looked up only in the live kernel, never imported
    plant_result_class(only_entry(disk_cache), reference)
    resign(only_entry(disk_cache))
    k = fresh()
    with pytest.warns(CacheWarning, match="unreadable entry") as record:
        np.testing.assert_allclose(k(X), WANT, rtol=1e-6)
    assert len(record) == 1 and k.cache_info().misses == 1
    assert PLANTED_MODULE not in sys.modules and not plantable_module.exists()


# ---- data --------------------------------------------------------------------------------------


def plant_constant(entry: Path) -> None:
    for name in ("device.json", "graph.json"):
        text = (entry / name).read_text()
        text = text.replace('"scalar":3.0', '"scalar":5.0').replace("AABAQA==", "AACgQA==")  # 3.0 -> 5.0 (f32)
        plant(entry, name, text.encode())


def test_a_planted_constant_never_reaches_a_result(disk_cache, monkeypatch):
    fresh()(X)
    plant_constant(only_entry(disk_cache))
    with monkeypatch.context() as m:  # the attack is real: a checksum-only reader returns x * 5 + 1
        checksums_only(m)
        np.testing.assert_allclose(fresh()(X), X * 5.0 + 1.0, rtol=1e-6)
    refused_then_recompiled(disk_cache)


def test_an_entry_without_macs_is_refused(disk_cache):
    fresh()(X)
    entry = only_entry(disk_cache)
    manifest = json.loads((entry / "manifest.json").read_text())
    del manifest["mac"]
    (entry / "manifest.json").write_text(json.dumps(manifest))
    refused_then_recompiled(disk_cache, "no MAC")


def test_an_authentic_entry_moved_to_another_key_is_refused(disk_cache):
    fresh()(X)
    entry = only_entry(disk_cache)
    entry.rename(entry.parent / ("0" * 24))  # a copy of a real entry where another key would look
    status, out = verify_output()
    assert status == 1 and "another entry's place" in out


# ---- the secret --------------------------------------------------------------------------------------


def key_file() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "pyasc" / KEY_FILE


@pytest.fixture
def own_secret(tmp_path, monkeypatch):
    """A config folder (and so a per-user secret) of this test alone, as a new user or a new process has."""
    from pyasc.runtime import cachesecret

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setattr(cachesecret, "_memo", {})


def test_the_per_user_secret_is_made_on_first_use_private(disk_cache, own_secret):
    assert not key_file().exists()
    fresh()(X)
    st = key_file().stat()
    assert stat.S_IMODE(st.st_mode) == 0o600 and stat.S_IMODE(key_file().parent.stat().st_mode) == 0o700
    assert len(bytes.fromhex(key_file().read_text().strip())) == 32


def test_another_users_entries_fail_and_a_team_key_shares_them(disk_cache, own_secret, tmp_path, monkeypatch):
    fresh()(X)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "other-user"))  # another secret, the same folder
    k = fresh()
    with pytest.warns(CacheWarning, match="fails authentication"):
        k(X)
    assert k.cache_info().misses == 1
    monkeypatch.setenv("PYASC_CACHE_KEY", "team secret of at least 16 characters")
    with pytest.warns(CacheWarning, match="fails authentication"):
        fresh()(X)  # the user's own entry is not the team's; written again under the team key ...
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "third-user"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        k = fresh()
        np.testing.assert_allclose(k(X), WANT, rtol=1e-6)
    assert k.cache_info().disk_hits == 1  # ... and read by a teammate
    entry = only_entry(disk_cache)
    assert stat.S_IMODE(entry.stat().st_mode) == 0o770  # the team's group shares it
    assert stat.S_IMODE((entry / "graph.json").stat().st_mode) == 0o660


def test_a_short_team_key_is_a_clear_error(disk_cache, monkeypatch):
    monkeypatch.setenv("PYASC_CACHE_KEY", "hunter2")
    with pytest.raises(ValueError, match="PYASC_CACHE_KEY must be at least 16 characters"):
        fresh()(X)


def test_a_secret_others_can_read_disables_the_cache_with_one_warning(disk_cache, own_secret):
    fresh()(X)
    key_file().chmod(0o644)
    from pyasc.runtime import cachesecret

    cachesecret._memo.clear()  # a new process
    k = fresh()
    with pytest.warns(CacheWarning, match="can be read or written by other users") as record:
        np.testing.assert_allclose(k(X), WANT, rtol=1e-6)
        np.testing.assert_allclose(fresh()(X), WANT, rtol=1e-6)
    assert len(record) == 1 and k.cache_info().misses == 1


def test_folders_and_files_are_private_whatever_the_umask(disk_cache):
    old = os.umask(0o002)
    try:
        fresh()(X)
    finally:
        os.umask(old)
    for path in [disk_cache, *disk_cache.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))


def test_planted_key_memos_are_ignored(disk_cache):
    """The compiler digest memo lists each source file's sha256: a planted one could make keys name entries
    built by another compiler."""
    from pyasc.runtime import keys

    keys._memo.clear()  # a new process: the digest is computed and its memo written
    first = fresh().compile(X)
    memo = disk_cache / "compiler-files.json"
    doc = json.loads(memo.read_text())
    doc["memo"]["files"] = {rel: [size, mtime, "0" * 64] for rel, (size, mtime, _) in doc["memo"]["files"].items()}
    memo.write_text(json.dumps(doc))
    keys._memo.clear()  # a new process
    assert keys.compiler_digest(disk_cache) == first.components.compiler


def test_a_planted_link_is_not_followed(disk_cache, tmp_path):
    fresh()(X)
    entry = only_entry(disk_cache)
    outside = tmp_path / "outside.json"
    outside.write_bytes((entry / "graph.json").read_bytes())
    (entry / "graph.json").unlink()
    (entry / "graph.json").symlink_to(outside)
    refused_then_recompiled(disk_cache, "symbolic link")


# ---- the other files in the cache folder ------------------------------------------------------------


def test_a_planted_tuning_record_is_not_used(disk_cache):
    """A well-formed record choosing another (legal) tiling, written without the secret: ignored, warned."""
    import pyasc.runtime.tunestore as tunestore
    from pyasc.codegen.tiling import TilingDecision

    k = fresh()
    plain = k.compile(X).kernels[0]
    other = plain.tiling.others[-1].params if plain.tiling.others else plain.tiling.params
    key = tunestore.tuning_key(k.key_components(X))
    doc = tunestore.TuningRecord(key, "scaled", "", "tiny", (TilingDecision.of(plain.name, other),)).to_json()
    path = tunestore.path_of(disk_cache, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    k2 = fresh()
    with pytest.warns(CacheWarning, match="ignoring the tuning record .*not authenticated"):
        tiling = k2.compile(X).kernels[0].tiling
    assert tiling.source == "cost model"
    tunestore.save(disk_cache, tunestore.TuningRecord(key, "scaled", "", "tiny",
                                                      (TilingDecision.of(plain.name, other),)))
    k3 = fresh()
    assert k3.compile(X).kernels[0].tiling.source == "tuned"  # the owner's own record is used
