"""The L2 between the cores and HBM: LRU contents, hit bandwidth, kernel calls, invalidation."""
import numpy as np
import pytest

from simulator import UB, Device, Program, chips
from simulator.examples import vector_add
from simulator.l2 import GmTouch, L2Cache


def _cache(lines):
    chip = chips.get("tiny").replace(l2_bytes=lines * 512, l2_line_bytes=512)
    dev = Device(chip)
    dev.alloc("a", 64 * 512)
    return L2Cache(chip), {"a": dev.buffer("a")}


def _read(l2, args, first_line, nlines):
    return l2.access([GmTouch("a", first_line * 512, 1, nlines * 512, nlines * 512, False)], args)


def test_lru_hits_exactly_when_fewer_distinct_lines_than_the_capacity_came_between():
    l2, args = _cache(4)
    assert _read(l2, args, 0, 2) == 0.0          # lines 0, 1: cold
    assert _read(l2, args, 2, 2) == 0.0          # lines 2, 3: cold; the cache is full
    assert _read(l2, args, 0, 1) == 1.0          # line 0: 3 distinct lines since, < 4
    assert _read(l2, args, 4, 1) == 0.0          # line 4 evicts the least recently used (line 1)
    assert _read(l2, args, 1, 1) == 0.0
    assert _read(l2, args, 0, 1) == 1.0          # 0 was used recently: still there
    assert (l2.hit_lines, l2.miss_lines) == (2, 6)


def test_a_store_pays_its_lines_write_back_once_while_they_stay_in_l2():
    """The L2 writes back: a store dirties its lines and is charged their one write-back to HBM; storing into
    a line that is resident and dirty again (a workspace tile) costs no more HBM; an evicted line is written
    back, and the next store into it pays again."""
    l2, args = _cache(4)
    w = GmTouch("a", 0, 1, 1024, 1024, True)
    assert l2.access([w], args) == 0.0            # lines 0, 1 dirtied: their write-back is paid now
    assert l2.access([w], args) == 1.0            # still resident and dirty
    assert _read(l2, args, 0, 2) == 1.0           # ... and read from L2
    assert l2.access([w], args) == 1.0            # a read does not clean them
    assert _read(l2, args, 8, 4) == 0.0           # four other lines evict them (written back)
    assert l2.access([w], args) == 0.0            # a new write-back to pay
    r = GmTouch("a", 10240, 1, 512, 512, False)
    assert l2.access([r], args) == 0.0 and l2.access([GmTouch("a", 10240, 1, 512, 512, True)], args) == 0.0
    # a clean resident line (fetched by a read) is dirtied by the store: its write-back is still to pay


def test_cores_of_one_batch_reading_the_same_line_fetch_it_once():
    l2, args = _cache(8)
    shared = GmTouch("a", np.zeros(4, dtype=np.int64), 1, 512, 512, False)  # 4 cores, the same line
    assert l2.access([shared], args) == pytest.approx(3 / 4)


def test_flush_and_invalidate():
    l2, args = _cache(8)
    _read(l2, args, 0, 4)
    l2.invalidate(args["a"], 512, 1024)           # the host rewrote line 1
    assert _read(l2, args, 0, 4) == pytest.approx(3 / 4)
    l2.flush()
    assert _read(l2, args, 0, 4) == 0.0


def _add_on(dev, x_name, y_name, z_name, n, block_dim):
    t = vector_add.tiling(n, dev.chip, block_dim)
    return dev.launch(vector_add.build(), block_dim, [x_name, y_name, z_name], t)


def test_a_small_intermediate_between_two_kernels_of_one_call_is_read_from_l2(rng):
    chip = chips.get("910b")
    n = 48 * 8192
    x = rng.standard_normal(n).astype(np.float32)
    dev = Device(chip)
    dev.upload("x", x)
    dev.upload("y", x)
    for name in ("t", "z"):
        dev.alloc(name, x.nbytes)
    cold_first = _add_on(dev, "x", "y", "t", n, 48)
    cold_second = _add_on(dev, "t", "y", "z", n, 48)   # a launch of its own: the L2 starts empty
    assert cold_first.l2_hit_bytes == 0 and cold_second.l2_hit_bytes == 0
    with dev.call():
        _add_on(dev, "x", "y", "t", n, 48)
        warm = _add_on(dev, "t", "y", "z", n, 48)      # reads what the first kernel just wrote
    assert np.array_equal(dev.read("z", np.float32), (x + x) + x)
    assert warm.l2_hit_bytes == warm.gm_read_bytes     # every byte of t and y was still in L2
    assert warm.cycles < 0.9 * cold_second.cycles
    # hits do not use HBM: what the warm kernel takes from HBM is only its stores
    hbm_floor = warm.gm_write_bytes / chip.gm_bytes_per_cycle
    assert warm.kernel_cycles >= hbm_floor


def test_a_streaming_kernel_stays_hbm_bound(rng):
    chip = chips.get("910b")
    n = 48 * 4 * 8192
    res = _add_on(_dev_with(chip, rng, n), "x", "y", "z", n, 48)
    assert res.l2_hit_bytes == 0
    assert res.kernel_cycles >= res.gm_bytes / chip.gm_bytes_per_cycle
    assert 0.85 < res.gm_bytes / res.kernel_cycles / chip.gm_bytes_per_cycle <= 1.0


def _dev_with(chip, rng, n):
    dev = Device(chip)
    x = rng.standard_normal(n).astype(np.float32)
    dev.upload("x", x)
    dev.upload("y", x)
    dev.alloc("z", x.nbytes)
    return dev


def _reread(nbytes, chip):
    """One core reads `nbytes` of x twice in tiles of 8 KiB; returns the launch result."""
    dev = Device(chip)
    dev.upload("x", np.zeros(nbytes // 4, np.float32))
    p = Program("reread", "aiv", params=["x"])
    with p.loop(2):
        with p.loop(nbytes // 8192) as i:
            p.copy(UB(0), p.gm("x", p.mul(i, 8192)), "float32", burst=2048)
            p.set_flag("MTE2", "V", 0)
            p.wait_flag("MTE2", "V", 0)
    return dev.launch(p, 1, ["x"])


def test_data_that_fits_the_l2_is_hit_on_the_second_pass_and_data_that_does_not_is_not():
    chip = chips.get("tiny")
    fits = _reread(chip.l2_bytes // 2, chip)
    assert fits.l2_hit_bytes == fits.gm_read_bytes // 2       # the whole second pass hits
    thrash = _reread(chip.l2_bytes * 2, chip)
    assert thrash.l2_hit_bytes == 0                           # LRU: every line is evicted before its reuse


def test_a_host_write_in_a_call_invalidates_what_it_overwrites(rng):
    chip = chips.get("910b")
    n = 48 * 8192
    dev = _dev_with(chip, rng, n)
    with dev.call():
        _add_on(dev, "x", "y", "z", n, 48)
        dev.write("x", np.ones(n, np.float32))
        again = _add_on(dev, "x", "y", "z", n, 48)
    assert again.l2_hit_bytes == n * 4                         # y still hits, the rewritten x misses
    assert np.array_equal(dev.read("z", np.float32), 1 + dev.read("y", np.float32))


def test_begin_call_starts_with_an_empty_l2(rng):
    chip = chips.get("910b")
    n = 48 * 8192
    dev = _dev_with(chip, rng, n)
    dev.begin_call()
    _add_on(dev, "x", "y", "z", n, 48)
    second = _add_on(dev, "x", "y", "z", n, 48)
    dev.begin_call()
    third = _add_on(dev, "x", "y", "z", n, 48)
    dev.end_call()
    assert second.l2_hit_bytes == second.gm_read_bytes and third.l2_hit_bytes == 0


class _G:
    def __init__(self, m):
        self.m = m


def test_hits_share_the_l2_and_misses_share_hbm_fairly():
    from simulator.bandwidth import Transfer, fair_rates
    # HBM 100 B/cycle, L2 400 B/cycle; per-core caps of 150
    miss = Transfer(_G(1), 2, 0, 1000, 150.0, 1.0)
    hit = Transfer(_G(1), 2, 1, 1000, 150.0, 0.0)
    fair_rates([miss, hit], 100.0, 400.0)
    assert miss.rate == pytest.approx(100.0) and hit.rate == pytest.approx(150.0)  # HBM limits only the miss
    four = Transfer(_G(4), 2, 2, 1000, 150.0, 0.0)  # four cores hitting in L2
    fair_rates([hit, four], 100.0, 400.0)
    assert hit.rate == pytest.approx(80.0) and four.rate == pytest.approx(80.0)  # 5 cores share the L2's 400
    half = Transfer(_G(2), 2, 3, 1000, 150.0, 0.5)
    fair_rates([half], 100.0, 400.0)
    assert half.rate == pytest.approx(100.0)  # 2 cores x 100 B/cycle, half from HBM = its 100


def _store_loop(chip, ntiles, rewrite):
    """Every core stores an 8 KiB UB tile `ntiles` times: into one slot of its own (a workspace tile it
    rewrites) or into `ntiles` distinct places."""
    cores = chip.aiv_cores
    dev = Device(chip)
    dev.alloc("z", cores * (1 if rewrite else ntiles) * 8192)
    p = Program("stores", "aiv", params=["z"])
    core = p.core_idx()
    with p.loop(ntiles) as i:
        slot = core if rewrite else p.add(p.mul(core, ntiles), i)
        p.copy(p.gm("z", p.mul(slot, 8192)), UB(0), "float32", burst=2048)
        p.set_flag("MTE3", "V", 0)
        p.wait_flag("MTE3", "V", 0)
    return dev.launch(p, cores, ["z"])


def test_rewriting_a_resident_dirty_tile_costs_l2_bandwidth_not_hbm():
    """A store into a line the L2 holds dirty pays no second write-back: a workspace tile a kernel rewrites
    many times while it stays in L2 is bound by the L2's bandwidth, distinct stores by HBM's."""
    chip = chips.get("910b")
    rewrite, stream = _store_loop(chip, 32, True), _store_loop(chip, 32, False)
    assert rewrite.gm_write_bytes == stream.gm_write_bytes
    assert stream.kernel_cycles >= stream.gm_write_bytes / chip.gm_bytes_per_cycle
    assert rewrite.kernel_cycles < 0.7 * stream.kernel_cycles


def test_hbm_bytes_leave_out_stores_into_lines_l2_holds_dirty():
    chip = chips.get("910b")
    rewrite, stream = _store_loop(chip, 32, True), _store_loop(chip, 32, False)
    assert stream.l2_write_hit_bytes == 0 and stream.hbm_bytes == stream.gm_bytes
    first = chip.aiv_cores * 8192                           # each core's first store dirties its tile
    assert rewrite.l2_write_hit_bytes == rewrite.gm_write_bytes - first
    assert rewrite.hbm_bytes == first
