"""The disk cache in one process: entries, sections, checksums, recovery, variants, pruning, the key."""
from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

import pyasc
from artifact_fields import differences, reported_fields
from pyasc.examples import BY_NAME
from pyasc.ge import DecisionKind, KernelKind
from pyasc.ops import Category
from pyasc.runtime.diskcache import CacheWarning, DiskCache, parse_size
from pyasc.runtime.dump import stage_files

SCALE = 2.0
WEIGHTS = np.ones((16, 32), np.float32)  # lifted


def body(x, w, b):
    y = pyasc.relu(x * w + b) * SCALE
    return pyasc.softmax(y, axis=-1), x @ WEIGHTS.T


ARGS = (np.linspace(-1, 1, 32, dtype=np.float32).reshape(1, 32), np.full(32, 0.5, np.float32),
        np.full(32, 0.25, np.float32))


# x @ WEIGHTS.T sums 32 products to exactly 0: the absolute error bound of an fp32 sum in another order
SUM_BOUND = 32 * 1.0 * 3.0 * np.finfo(np.float32).eps


def fresh(**options):
    """A new Kernel object for the same function: an empty memory cache, the same disk key."""
    return pyasc.kernel(body, chip="tiny", **options)


def entries(root: Path) -> list[Path]:
    return list(DiskCache(root).iter_entries())


def flip_a_bit(data: bytes) -> bytes:
    return data[:20] + bytes([data[20] ^ 1]) + data[21:]


def resign(path: Path, edit) -> None:
    """Edit an entry's manifest and sign it again with the cache's own secret (what only its owner can do)."""
    from pyasc.runtime.entryfiles import _MANIFEST_PURPOSE, canonical

    manifest = json.loads((path / "manifest.json").read_text())
    del manifest["mac"]
    edit(manifest)
    manifest["mac"] = DiskCache(path.parent.parent.parent).secret.mac(_MANIFEST_PURPOSE, canonical(manifest))
    (path / "manifest.json").write_text(json.dumps(manifest))


def only_entry(root: Path) -> Path:
    found = entries(root)
    assert len(found) == 1, found
    return found[0]


def test_a_second_kernel_object_loads_the_artifact_from_disk(disk_cache):
    first = fresh()
    a = first.compile(*ARGS)
    assert first.cache_info() == (0, 0, 1, 1) and a.origin == "compiled"
    second = fresh()
    b = second.compile(*ARGS)
    assert second.cache_info() == (0, 1, 0, 1) and b.origin == "disk"
    assert differences(reported_fields(a), reported_fields(b)) == []
    assert b.full_key == a.full_key and b.stages == a.stages and b.fusion_decisions == a.fusion_decisions
    assert [k.graph is b.graph or k.graph in list(b.graph.walk()) for k in b.plans] == [True] * len(b.plans)
    assert stage_files(b) == stage_files(a)
    for got, want in zip(second(*ARGS), first(*ARGS)):
        np.testing.assert_array_equal(got, want)


def rich(x, w):
    """Kernels of every kind the records describe: a row reduction holding a reduced value without its axis
    (KernelStructure.dropped), a producer no consumer kernel takes (a BOUNDARY decision with rejections),
    a column reduction and a matmul."""
    s = pyasc.sum(x, axis=-1)
    centred = x - pyasc.expand_dims(s, -1)
    a = pyasc.exp(x)
    e = pyasc.exp(w)
    return centred, a + a.T, pyasc.sum(e, axis=0), e @ w.T


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_the_typed_plan_records_come_back_from_disk_pointing_into_the_restored_graph(disk_cache, dynamic):
    args = (np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8), np.full((8, 16), 0.5, np.float32))
    a = pyasc.kernel(rich, chip="tiny", dynamic=dynamic).compile(*args)
    b = pyasc.kernel(rich, chip="tiny", dynamic=dynamic).compile(*args)
    assert (a.origin, b.origin) == ("compiled", "disk")
    assert differences(reported_fields(a), reported_fields(b)) == []
    assert {k.kind for k in b.plans} >= {KernelKind.ROW_REDUCE, KernelKind.COLUMN_REDUCE, KernelKind.MATMUL}
    nodes = {id(n) for g in b.graph.walk() for n in g.nodes}
    for k in b.plans:
        assert type(k.category) is Category and type(k.kind) is KernelKind
        assert id(k.anchor_node) in nodes and k.anchor_node in k.nodes
        assert all(id(n) in nodes for n in k.structure.dropped) and isinstance(k.structure.dropped, frozenset)
    assert any(k.structure.dropped for k in b.plans)
    rows = [d for k in b.plans for d in k.structure.rows]
    assert rows and all(isinstance(d, pyasc.ir.Sym) for d in rows) == dynamic
    boundary = [d for d in b.fusion_decisions if d.kind is DecisionKind.BOUNDARY]
    assert boundary and boundary[0].rejected and type(boundary[0].rejected) is tuple
    assert b.fusion_decisions == a.fusion_decisions and b.fusion_log == a.fusion_log


def test_an_if_kernels_branch_plans_and_memory_plans_come_back_from_disk(disk_cache):
    ex = BY_NAME["tensor_if"]
    args = ex.make_inputs(np.random.default_rng(0))
    a = pyasc.kernel(ex.fn, chip="tiny").compile(*args)
    b = pyasc.kernel(ex.fn, chip="tiny").compile(*args)
    assert b.origin == "disk" and differences(reported_fields(a), reported_fields(b)) == []
    assert b.memory_plan.branch_plans and [k.kind for k in b.plans].count(KernelKind.CONTROL) == 1
    assert {k.graph.name for k in b.plans} == {g.name for g in b.graph.walk()}
    np.testing.assert_array_equal(pyasc.kernel(ex.fn, chip="tiny")(*args), ex.fn(*args))


def test_an_entry_is_a_manifest_with_macs_and_json_sections(disk_cache):
    c = fresh().compile(*ARGS)
    path = only_entry(disk_cache)
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["format"] == "pyasc.cache-entry" and manifest["version"] == 2
    assert manifest["key"] == c.full_key and manifest["kernel"] == "body" and manifest["chip"] == "tiny"
    assert manifest["signature"] == c.signature and manifest["stages"] == list(c.stages)
    comps = manifest["components"]
    assert comps["kernel"] == "body" and comps["pyasc_version"] == pyasc.__version__ and len(comps["compiler"]) == 64
    assert dict(map(tuple, comps["chip"]))["ub_bytes"] == 16 * 1024
    assert {"llvmlite", "llvm", "host_cpu", "numpy", "python", "env", "options", "args"} <= set(comps)
    assert set(manifest["sections"]) == {"graph.json", "stages.json", "plans.json", "call.json", "device.json",
                                         "host.json"}
    assert manifest["created"] <= manifest["last_used"] and manifest["size"] > 0
    for name, meta in manifest["sections"].items():
        data = (path / name).read_bytes()
        assert len(data) == meta["size"] and len(meta["mac"]) == 64
        json.loads(data)  # every section is plain JSON: the only code is the host object, inside host.json
    assert len(manifest["mac"]) == 64
    assert [g[0] for g in manifest["guards"]["guards"]] == [[["global", "pyasc"]], [["global", "SCALE"]],
                                                           [["global", "WEIGHTS"]], [["attr", "__code__"]]]
    assert manifest["guards"]["hidden"] == [[[["global", "WEIGHTS"]], "float32"]]


@pytest.mark.parametrize("damage, reason", [
    (lambda p: (p / "graph.json").write_bytes((p / "graph.json").read_bytes()[:-7]), "truncated"),
    (lambda p: (p / "plans.json").write_bytes(flip_a_bit((p / "plans.json").read_bytes())), "fails authentication"),
    (lambda p: (p / "manifest.json").write_text("{\"format\": \"pyasc.cache"), "corrupt or truncated manifest"),
    (lambda p: resign(p, lambda m: m.update(version=999)), "another pyasc"),
    (lambda p: (p / "stages.json").unlink(), "missing"),
], ids=["truncated section", "corrupt section", "corrupt manifest", "foreign version", "missing section"])
def test_a_bad_entry_is_discarded_with_a_warning_and_rebuilt(disk_cache, damage, reason):
    expected = fresh()(*ARGS)
    damage(only_entry(disk_cache))
    k = fresh()
    with pytest.warns(CacheWarning, match=reason) as record:
        got = k(*ARGS)
    assert len(record) == 1 and "\n" not in str(record[0].message) and "compiling again" in str(record[0].message)
    assert k.cache_info().misses == 1 and k.cache_info().disk_hits == 0
    np.testing.assert_array_equal(got[0], expected[0])
    store = DiskCache(disk_cache)
    assert store.verify(only_entry(disk_cache)) is None  # rebuilt whole
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fresh().compile(*ARGS).origin == "disk"


def test_a_changed_global_is_a_second_variant_and_changing_it_back_hits_the_first(disk_cache, monkeypatch):
    import sys

    module = sys.modules[__name__]
    first = fresh().compile(*ARGS)
    monkeypatch.setattr(module, "SCALE", 3.0)
    k = fresh()
    out = k(*ARGS)
    assert k.cache_info().misses == 1
    np.testing.assert_allclose(out[0], body(*ARGS)[0], rtol=1e-6)
    found = entries(disk_cache)
    assert len(found) == 2 and found[0].parent == found[1].parent  # one folder of components, two variants
    monkeypatch.setattr(module, "SCALE", 2.0)
    back = fresh().compile(*ARGS)
    assert back.origin == "disk" and back.full_key == first.full_key


def test_a_lifted_array_loaded_from_disk_reads_the_current_contents(disk_cache):
    fresh()(*ARGS)
    WEIGHTS[:] = 3.0
    try:
        k = fresh()
        got = k(*ARGS)[1]
        assert k.cache_info().disk_hits == 1
        np.testing.assert_allclose(got, ARGS[0] @ WEIGHTS.T, rtol=1e-6, atol=SUM_BOUND)
    finally:
        WEIGHTS[:] = 1.0


def test_options_and_chips_are_other_entries(disk_cache):
    keys = {fresh().compile(*ARGS).full_key, fresh(opt_level=1).compile(*ARGS).full_key,
            pyasc.kernel(body, chip="910b").compile(*ARGS).full_key}
    assert len(keys) == 3 and len(entries(disk_cache)) == 3


def test_cache_off_and_always_compile(disk_cache, monkeypatch):
    monkeypatch.setenv("PYASC_CACHE", "0")
    fresh()(*ARGS)
    assert not disk_cache.exists()
    monkeypatch.setenv("PYASC_CACHE", "1")
    fresh()(*ARGS)
    monkeypatch.setenv("PYASC_ALWAYS_COMPILE", "1")
    k = fresh()
    k(*ARGS)
    k(*ARGS)
    assert k.cache_info().misses == 2 and k.cache_info().disk_hits == 0
    assert len(entries(disk_cache)) == 1


def test_an_unwritable_cache_folder_warns_and_the_call_succeeds(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("PYASC_CACHE", "1")
    monkeypatch.setenv("PYASC_CACHE_DIR", str(blocker / "cache"))
    with pytest.warns(CacheWarning, match="cannot"):
        out = fresh()(*ARGS)
    np.testing.assert_allclose(out[1], ARGS[0] @ WEIGHTS.T, rtol=1e-6, atol=SUM_BOUND)


def test_pruning_removes_the_least_recently_used_entries(disk_cache):
    for level in (0, 1, 2):
        fresh(opt_level=level).compile(*ARGS)
    store = DiskCache(disk_cache)
    infos = sorted(store.list(), key=lambda i: i.manifest["components"]["options"][0][1])
    for age, info in zip((300, 100, 200), infos):  # opt_level 0 used longest ago, then 2, then 1
        stamp = info.created - age
        (info.path / "hits").write_bytes(b"")
        os.utime(info.path / "hits", (stamp, stamp))
        os.utime(info.path / "manifest.json", (stamp, stamp))
    sizes = [i.size for i in infos]
    removed = store.prune(sum(sizes) - 1)
    assert removed == [infos[0].path]
    removed = store.prune(sizes[1])
    assert removed == [infos[2].path] and [i.path for i in store.list()] == [infos[1].path]
    assert store.total_size() == sizes[1]


def test_hits_are_counted_in_the_entry(disk_cache):
    fresh().compile(*ARGS)
    for _ in range(3):
        fresh().compile(*ARGS)
    (info,) = DiskCache(disk_cache).list()
    assert info.hits == 3 and info.kernel == "body" and info.chip == "tiny"
    assert info.signature == "x: f32[1,32], w: f32[32], b: f32[32]"


def test_a_publish_size_cap_from_the_environment(disk_cache, monkeypatch):
    monkeypatch.setenv("PYASC_CACHE_MAX_SIZE", "1")  # one byte: each publish prunes everything before it
    fresh(opt_level=0).compile(*ARGS)
    fresh(opt_level=1).compile(*ARGS)
    assert len(entries(disk_cache)) <= 1
    monkeypatch.setenv("PYASC_CACHE_MAX_SIZE", "lots")
    with pytest.raises(ValueError, match="PYASC_CACHE_MAX_SIZE"):
        fresh(opt_level=2).compile(*ARGS)


def test_a_publish_under_the_limit_does_not_scan_the_cache(disk_cache, monkeypatch):
    # a scan authenticates every manifest: paid on every compile, it took seconds once a cache held thousands
    import pyasc.runtime.diskcache as diskcache

    scans = []
    real = DiskCache.prune
    monkeypatch.setattr(DiskCache, "prune", lambda self, max_size: scans.append(max_size) or real(self, max_size))
    fresh(opt_level=0).compile(*ARGS)
    assert len(scans) == 1  # no usage file yet: the first publish scans, and writes it
    usage = disk_cache / "usage"
    total = DiskCache(disk_cache).total_size()
    assert usage.read_text() == f"scanned {total}\n"
    fresh(opt_level=1).compile(*ARGS)
    fresh(opt_level=2).compile(*ARGS)
    assert len(scans) == 1 and len(entries(disk_cache)) == 3
    lines = usage.read_text().split()
    assert lines[:2] == ["scanned", str(total)] and len(lines) == 4
    assert sum(map(int, lines[1:])) == DiskCache(disk_cache).total_size()  # the estimate is the true size

    # the estimate passing the limit brings the scan, which prunes
    monkeypatch.setenv("PYASC_CACHE_MAX_SIZE", str(DiskCache(disk_cache).total_size() + 10))
    fresh(opt_level=3).compile(*ARGS)
    assert len(scans) == 2 and len(entries(disk_cache)) == 3
    assert DiskCache(disk_cache).total_size() <= int(os.environ["PYASC_CACHE_MAX_SIZE"])
    assert usage.read_text() == f"scanned {DiskCache(disk_cache).total_size()}\n"

    # a lost or garbled usage file, or many publishes since the last scan, bring a scan too
    monkeypatch.setenv("PYASC_CACHE_MAX_SIZE", "1G")
    usage.write_text("12 oops\n")
    fresh(opt_level=0, buffer_num=1).compile(*ARGS)
    assert len(scans) == 3 and usage.read_text().startswith("scanned ")
    monkeypatch.setattr(diskcache, "_RESCAN_EVERY", 1)
    fresh(opt_level=1, buffer_num=1).compile(*ARGS)
    assert len(scans) == 3
    fresh(opt_level=2, buffer_num=1).compile(*ARGS)
    assert len(scans) == 4


def test_parse_size():
    assert parse_size("123") == 123 and parse_size("2K") == 2048 and parse_size("1.5GiB") == 3 << 29
    assert parse_size(" 500 mb ") == 500 << 20
    with pytest.raises(ValueError, match="not a size"):
        parse_size("big")


def test_the_key_components_name_what_the_artifact_depends_on(disk_cache):
    k = fresh()
    comps = k.key_components(*ARGS)
    assert comps == fresh().key_components(*ARGS) and comps.digest() == fresh().key_components(*ARGS).digest()
    assert comps.args == (("x", ("tensor", "float32", (1, 32))), ("w", ("tensor", "float32", (32,))),
                          ("b", ("tensor", "float32", (32,))))
    assert dict(comps.options)["chip"] == "tiny" and dict(comps.chip)["name"] == "tiny"
    dyn = fresh(dynamic=True).key_components(*ARGS)
    assert dyn.args[0] == ("x", ("tensor", "float32", (1, None))) and dyn.digest() != comps.digest()
    assert pyasc.kernel(body, chip="910b").key_components(*ARGS).digest() != comps.digest()


def test_codegen_environment_variables_are_key_components(disk_cache, monkeypatch):
    from pyasc.runtime import keys

    monkeypatch.setattr(keys, "CODEGEN_ENV", ("PYASC_TEST_KNOB",))
    monkeypatch.setenv("PYASC_TEST_KNOB", "a")
    a = fresh().key_components(*ARGS)
    monkeypatch.setenv("PYASC_TEST_KNOB", "b")
    b = fresh().key_components(*ARGS)
    assert a.env == (("PYASC_TEST_KNOB", "a"),) and b.env == (("PYASC_TEST_KNOB", "b"),)
    assert a.digest() != b.digest()


def test_a_kernel_reading_an_unnamed_helper_stays_in_memory(disk_cache):
    helpers = {}

    def make():
        def inner(x):
            return x + 1.0
        return inner

    helpers["f"] = make()

    @pyasc.kernel
    def k(x):
        return helpers["f"](x)

    assert k(np.zeros(2, np.float32))[0] == 1.0
    assert len(entries(disk_cache)) == 1  # the helper has a path (helpers['f']): persisted


def mixed_matmul(a, b, bias):
    """Code generation's side values: f16 @ f32 casts A into workspace scratch first, and the epilogue the
    cube cannot take (an add of a float16 bias after the cast) reads the cube's partial result; a transposed
    float32 left operand is transposed into scratch by a vector launch."""
    return (pyasc.relu(a @ b + 1.0).astype(np.float16) + bias, pyasc.relu(a @ b.astype(np.float16) + bias),
            pyasc.transpose(b) @ b)


@pytest.mark.parametrize("chip", ["tiny", "910b"])
def test_kernels_with_codegen_side_values_are_stored_and_loaded(disk_cache, chip):
    rng = np.random.default_rng(0)
    args = ((rng.integers(-4, 4, (32, 48)) / 4).astype(np.float16), (rng.integers(-4, 4, (48, 16)) / 4).astype(np.float32),
            np.full(16, 0.5, np.float16))
    first = pyasc.kernel(mixed_matmul, chip=chip)
    want = first(*args)
    assert first.cache_info().misses == 1
    second = pyasc.kernel(mixed_matmul, chip=chip)
    got = second(*args)
    assert second.cache_info().disk_hits == 1
    assert [dk.inputs[0].type for dk in second.compile(*args).kernels] == \
        [dk.inputs[0].type for dk in first.compile(*args).kernels]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_an_artifact_that_cannot_be_written_warns_and_the_call_succeeds(disk_cache, monkeypatch):
    from pyasc.runtime import persist, records

    def broken(compiled):
        raise records.RecordError("a record points at a cast node that is not in the final graph")

    monkeypatch.setattr(persist, "encode_artifact", broken)
    k = fresh()
    with pytest.warns(CacheWarning, match=r"not stored in the disk cache \(a record points at a cast node"):
        got = k(*ARGS)
    for g, w in zip(got, k.py_func(*ARGS)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=SUM_BOUND)
    assert not any(disk_cache.rglob("manifest.json"))


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_every_demo_kernel_comes_back_from_disk_and_computes_the_same(disk_cache, name):
    ex = BY_NAME[name]
    args = ex.make_inputs(np.random.default_rng(0))
    want = pyasc.kernel(ex.fn, chip="tiny")(*args)
    second = pyasc.kernel(ex.fn, chip="tiny")
    got = second(*args)
    assert second.compile(*args).origin == "disk"
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        np.testing.assert_array_equal(g, w)
