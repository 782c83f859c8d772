"""Cube data moves and FixPipe: LoadData2D fractal slices, Load3D img2col, quantisation, NZ output, atomics."""
import numpy as np
import pytest

from sim_testlib import cube_run
from simulator import L0A, L0B, L0C, L1, Device, Program, ProgramError, chips, layouts

R0 = chips.get("tiny").cube_block


def _f16(rng, *shape):
    return rng.standard_normal(shape).astype(np.float16)


def _ref(a, b):
    return a.astype(np.float32) @ b.astype(np.float32)


def _plain_out(m, n, dtype="float32", **kw):
    return lambda p: p.fixpipe(p.gm("out"), L0C(0), m, n, dtype, **kw)


def test_load_l0_2d_builds_the_same_l0_images_as_a_matrix_load(rng):
    m, k, n = 32, 48, 64
    a, b = _f16(rng, m, k), _f16(rng, k, n)

    def by_fractals(p):
        for i in range(m // R0):  # A: one row of fractals a load, fractal (i, j) sits at j * m/16 + i in L1
            p.load_l0_2d(L0A(i * (k // 16) * 512), L1(0), "float16", start=i, repeat=k // 16, src_stride=m // R0)
        for kb in range(k // 16):  # B: column-major fractals in L0B, so each is transposed on the way
            p.load_l0_2d(L0B(kb * (n // R0) * 512), L1(32768), "float16", start=kb, repeat=n // R0,
                         src_stride=k // 16, transpose=True)

    whole, r1 = cube_run(a, b, _plain_out(m, n), (m, n), np.float32)
    sliced, r2 = cube_run(a, b, _plain_out(m, n), (m, n), np.float32, load=by_fractals)
    assert np.array_equal(whole, sliced)
    np.testing.assert_allclose(whole, _ref(a, b), rtol=1e-5, atol=1e-4)
    # the same bytes over the same paths: the same MTE1 cost but for the extra start-ups
    chip = chips.get("tiny")
    extra = (m // R0 + k // 16 - 2) * chip.l1_to_l0a.startup
    assert r2.pipe_busy["MTE1"] == pytest.approx(r1.pipe_busy["MTE1"] + extra, abs=2)


def test_load_l0_2d_slices_one_k_step_out_of_an_l1_tile(rng):
    # L1 holds A (32 x 64); L0A gets K columns [16, 48) only: 2 of the 4 fractal columns
    m, k, n = 32, 64, 16
    a, b = _f16(rng, m, k), _f16(rng, 32, n)
    dev = Device("tiny")
    dev.upload("a", a)
    dev.upload("b", b)
    dev.alloc("out", m * n * 4)
    p = Program("kslice", "aic", params=["a", "b", "out"])
    p.copy_nd2nz(L1(0), p.gm("a"), "float16", m, k)
    p.copy_nd2nz(L1(32768), p.gm("b"), "float16", 32, n)
    p.set_flag("MTE2", "MTE1", 0)
    p.wait_flag("MTE2", "MTE1", 0)
    for i in range(m // R0):
        p.load_l0_2d(L0A(i * 2 * 512), L1(0), "float16", start=(m // R0) * 1 + i, repeat=2, src_stride=m // R0)
    p.load_l0(L0B(0), L1(32768), "float16", 32, n)
    p.set_flag("MTE1", "M", 0)
    p.wait_flag("MTE1", "M", 0)
    p.mmad(L0C(0), L0A(0), L0B(0), m, 32, n, "float16")
    p.set_flag("M", "FIX", 0)
    p.wait_flag("M", "FIX", 0)
    p.fixpipe(p.gm("out"), L0C(0), m, n, "float32")
    dev.launch(p, 1, ["a", "b", "out"], sanitize=True)
    np.testing.assert_allclose(dev.read("out", np.float32, (m, n)), _ref(a[:, 16:48], b), rtol=1e-5, atol=1e-4)


def _conv_ref(x, w, stride, pad, dilation):
    """x (C, H, W), w (O, C, kh, kw) -> (O, Ho, Wo) in float32."""
    c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x.astype(np.float32), ((0, 0), (pad[0], pad[1]), (pad[2], pad[3])))
    ho = (h + pad[0] + pad[1] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    wo = (wd + pad[2] + pad[3] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((o, ho, wo), np.float32)
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, i * dilation[0]:i * dilation[0] + stride[0] * (ho - 1) + 1:stride[0],
                       j * dilation[1]:j * dilation[1] + stride[1] * (wo - 1) + 1:stride[1]]
            out += np.einsum("oc,chw->ohw", w[:, :, i, j].astype(np.float32), patch)
    return out


@pytest.mark.parametrize("stride, pad, dilation", [((1, 1), (1, 1, 1, 1), (1, 1)), ((2, 1), (0, 1, 2, 0), (1, 2))])
def test_load3d_img2col_feeds_a_convolution_straight_from_l1(rng, stride, pad, dilation):
    c1, c0, h, w, o, kh, kw = 2, 16, 6, 5, 16, 3, 2
    x = rng.standard_normal((c1 * c0, h, w)).astype(np.float16)
    wt = rng.standard_normal((o, c1 * c0, kh, kw)).astype(np.float16)
    fmap = np.ascontiguousarray(x.reshape(c1, c0, h, w).transpose(0, 2, 3, 1))   # NC1HWC0 of one image
    # B (K x O) with K in (c1, kh, kw, c0) order, the order img2col produces
    bmat = wt.reshape(o, c1, c0, kh, kw).transpose(1, 3, 4, 2, 0).reshape(c1 * kh * kw * c0, o)
    ref = _conv_ref(x, wt, stride, pad, dilation)
    ho, wo = ref.shape[1:]
    mm, kk = ho * wo, c1 * kh * kw * c0
    dev = Device("910b")  # the im2col matrix (48 x 192 fp16) needs more L0A than the tiny chip has
    dev.upload("fmap", fmap)
    dev.upload("b", np.ascontiguousarray(bmat))
    dev.alloc("out", mm * o * 4)
    p = Program("conv", "aic", params=["fmap", "b", "out"])
    p.copy(L1(0), p.gm("fmap"), "float16", burst=fmap.size)
    p.copy_nd2nz(L1(32768), p.gm("b"), "float16", kk, o)
    p.set_flag("MTE2", "MTE1", 0)
    p.wait_flag("MTE2", "MTE1", 0)
    p.load3d(L0A(0), L1(0), "float16", c1, h, w, kh, kw, stride, pad, dilation)
    p.load_l0(L0B(0), L1(32768), "float16", kk, o)
    p.set_flag("MTE1", "M", 0)
    p.wait_flag("MTE1", "M", 0)
    p.mmad(L0C(0), L0A(0), L0B(0), mm, kk, o, "float16")
    p.set_flag("M", "FIX", 0)
    p.wait_flag("M", "FIX", 0)
    p.fixpipe(p.gm("out"), L0C(0), mm, o, "float32")
    res = dev.launch(p, 1, ["fmap", "b", "out"], sanitize=True)
    got = dev.read("out", np.float32, (mm, o)).T.reshape(o, ho, wo)
    np.testing.assert_allclose(got, ref, rtol=2e-3, atol=2e-3)
    chip = chips.get("910b")
    l0a_bytes = layouts.ceil_to(mm, R0) * kk * 2
    assert res.bytes_by_path["l1_to_l0a"] == l0a_bytes
    assert res.pipe_busy["MTE1"] >= chip.l1_to_l0a.cycles(l0a_bytes)


def test_load3d_rows_and_columns_of_the_im2col_matrix_and_into_l0b(rng):
    # the transposed im2col matrix as B: out (O x M) = W (O x K) @ im2col^T (K x M), K columns 16..48 only
    c1, c0, h, w, kh, kw, o = 2, 16, 4, 4, 2, 2, 16
    fmap = rng.standard_normal((c1, h, w, c0)).astype(np.float16)
    wmat = rng.standard_normal((o, 32)).astype(np.float16)
    cols = np.stack([fmap[:, i:i + 3, j:j + 3] for i in range(2) for j in range(2)], 1)  # c1, kh*kw, 3, 3, c0
    im2col = cols.reshape(c1, kh, kw, 3, 3, c0).transpose(3, 4, 0, 1, 2, 5).reshape(9, c1 * kh * kw * c0)
    dev = Device("tiny")
    dev.upload("fmap", fmap)
    dev.upload("w", wmat)
    dev.alloc("out", o * 16 * 4)
    p = Program("conv_t", "aic", params=["fmap", "w", "out"])
    p.copy(L1(0), p.gm("fmap"), "float16", burst=fmap.size)
    p.copy_nd2nz(L1(16384), p.gm("w"), "float16", o, 32)
    p.set_flag("MTE2", "MTE1", 0)
    p.wait_flag("MTE2", "MTE1", 0)
    p.load_l0(L0A(0), L1(16384), "float16", o, 32)
    p.load3d(L0B(0), L1(0), "float16", c1, h, w, kh, kw, m_start=0, m_len=9, k_start=16, k_len=32)
    p.set_flag("MTE1", "M", 0)
    p.wait_flag("MTE1", "M", 0)
    p.mmad(L0C(0), L0A(0), L0B(0), o, 32, 9, "float16")
    p.set_flag("M", "FIX", 0)
    p.wait_flag("M", "FIX", 0)
    p.fixpipe(p.gm("out"), L0C(0), o, 9, "float32")
    dev.launch(p, 1, ["fmap", "w", "out"], sanitize=True)
    want = wmat.astype(np.float32) @ im2col[:, 16:48].astype(np.float32).T
    np.testing.assert_allclose(dev.read("out", np.float32, (o, 9)), want, rtol=2e-3, atol=2e-3)
    with pytest.raises(ProgramError, match=r"k_start and k_len must be whole c0 = 16 columns, got 8 and 32"):
        bad = p.with_instructions([i if i.OP != "load3d" else type(i)(**{**i.__dict__, "k_start": 8})
                                   for i in p.instructions])
        dev.launch(bad, 1, ["fmap", "w", "out"])


def test_fixpipe_dequantises_int32_with_a_scalar_or_per_channel_scales(rng):
    a = rng.integers(-20, 20, (16, 32)).astype(np.int8)
    b = rng.integers(-20, 20, (32, 32)).astype(np.int8)
    acc = a.astype(np.int64) @ b.astype(np.int64)
    out, _ = cube_run(a, b, _plain_out(16, 32, "float16", src_dtype="int32", scale=0.125), (16, 32), np.float16,
                      dtype="int8")
    assert np.array_equal(out, (acc * 0.125).astype(np.float16))
    scales = np.linspace(0.01, 0.5, 32).astype(np.float32)

    def per_channel(p):
        p.copy(L1(65536 - 256), p.gm("s"), "float32", burst=32)
        p.set_flag("MTE2", "FIX", 1)
        p.wait_flag("MTE2", "FIX", 1)
        p.fixpipe(p.gm("out"), L0C(0), 16, 32, "float32", src_dtype="int32", scale_l1=L1(65536 - 256), relu=True)

    out, res = cube_run(a, b, per_channel, (16, 32), np.float32, dtype="int8", extra={"s": scales})
    np.testing.assert_allclose(out, np.maximum(acc * scales, 0).astype(np.float32), rtol=1e-6)


def test_fixpipe_requantises_to_int8_with_saturation(rng):
    a = rng.integers(-60, 60, (16, 64)).astype(np.int8)
    b = rng.integers(-60, 60, (64, 32)).astype(np.int8)
    acc = a.astype(np.int64) @ b.astype(np.int64)
    out, _ = cube_run(a, b, _plain_out(16, 32, "int8", src_dtype="int32", scale=1 / 64), (16, 32), np.int8,
                      dtype="int8")
    assert np.array_equal(out, np.clip(np.rint(acc / 64), -128, 127).astype(np.int8))
    assert (out == 127).any() and (out == -128).any()  # the range was exceeded: saturated, not wrapped
    with pytest.raises(ProgramError, match=r"quantising to int8 needs a scale"):
        Program("q", "aic").fixpipe(Program("q", "aic").gm("o"), L0C(0), 16, 16, "int8", src_dtype="int32")


def test_fixpipe_writes_nz_fractals_to_gm(rng):
    a, b = _f16(rng, 20, 32), _f16(rng, 32, 40)
    ref = _ref(a, b)
    # NZ with panels of 32 rows: the 20 x 48 (padded) tile in a 32-row-high NZ matrix
    out, _ = cube_run(a, b, _plain_out(20, 40, nz=True, dst_row_stride=32), (3, 32, 16), np.float32)
    nd = out[:, :20].transpose(1, 0, 2).reshape(20, 48)[:, :40]
    np.testing.assert_allclose(nd, ref, rtol=1e-5, atol=1e-4)
    assert np.array_equal(out[:, 20:], np.zeros((3, 12, 16)))  # rows past m are left alone


def test_fixpipe_atomic_add_accumulates_split_k_partials(rng):
    # two AICs each multiply one half of K and add their partial into the same output
    m, k, n = 16, 64, 32
    a, b = _f16(rng, m, k), _f16(rng, k, n)
    dev = Device("tiny")
    dev.upload("a", a)
    dev.upload("b", b)
    dev.upload("out", np.zeros((m, n), np.float32))
    p = Program("split_k", "aic", params=["a", "b", "out"])
    core = p.core_idx()
    p.copy_nd2nz(L1(0), p.gm("a", p.mul(core, 64)), "float16", m, 32, src_row_stride=k)
    p.copy_nd2nz(L1(4096), p.gm("b", p.mul(core, 32 * n * 2)), "float16", 32, n)
    p.set_flag("MTE2", "MTE1", 0)
    p.wait_flag("MTE2", "MTE1", 0)
    p.load_l0(L0A(0), L1(0), "float16", m, 32)
    p.load_l0(L0B(0), L1(4096), "float16", 32, n)
    p.set_flag("MTE1", "M", 0)
    p.wait_flag("MTE1", "M", 0)
    p.mmad(L0C(0), L0A(0), L0B(0), m, 32, n, "float16")
    p.set_flag("M", "FIX", 0)
    p.wait_flag("M", "FIX", 0)
    p.fixpipe(p.gm("out"), L0C(0), m, n, "float32", atomic="add")
    for sanitize in (True, False):
        dev.write("out", np.zeros((m, n), np.float32))
        dev.launch(p, 2, ["a", "b", "out"], sanitize=sanitize)  # two atomic adds to the same bytes: no race
        np.testing.assert_allclose(dev.read("out", np.float32, (m, n)), _ref(a, b), rtol=1e-4, atol=1e-3)
