"""conv2d, pooling and a ResNet basic block on the emulator (sanitizer on), on both chip presets, against the
kernels' own py_func (numpy) or, where GE folds a batch norm (a different rounding by design), against their
py_func evaluated in float64 (`pyasc.testing.check`). Odd sizes: channels not multiples of 16, odd H / W,
batch 1 and 2, stride 2, padding, dilation, 1x1 and 3x3 kernels."""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from pyasc.testing import assert_close, check

CHIPS = ("tiny", "910b")


def data(rng, shape, dtype, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


CONVS = {  # name: (x shape, w shape, stride, padding, dilation)
    "3x3_pad1_c20": ((1, 20, 9, 7), (33, 20, 3, 3), 1, 1, 1),
    "3x3_stride2_batch2": ((2, 5, 9, 8), (7, 5, 3, 3), 2, 1, 1),
    "1x1_c17": ((1, 17, 5, 11), (8, 17, 1, 1), 1, 0, 1),
    "3x2_dilated_asymmetric": ((1, 5, 10, 9), (6, 5, 3, 2), (2, 1), (2, 0), (2, 1)),
    "1x1_padding_wider_than_kernel": ((1, 4, 3, 3), (4, 4, 1, 1), 1, 2, 1),
}


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("name", sorted(CONVS))
def test_conv2d_float16(name, chip, rng):
    xs, ws, stride, padding, dilation = CONVS[name]
    x, w, b = data(rng, xs, np.float16), data(rng, ws, np.float16, 0.3), data(rng, ws[:1], np.float16)

    @pyasc.kernel(chip=chip)
    def conv_relu(x, w, b):
        return pyasc.relu(pyasc.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation))

    assert_close(conv_relu(x, w, b), conv_relu.py_func(x, w, b))


@pytest.mark.parametrize("chip", CHIPS)
def test_conv2d_float32_through_8_channel_fractals(chip, rng):
    x, w = data(rng, (1, 20, 7, 6), np.float32), data(rng, (9, 20, 3, 3), np.float32, 0.3)

    @pyasc.kernel(chip=chip)
    def conv(x, w):
        return pyasc.conv2d(x, w, stride=(1, 2), padding=1)

    assert_close(conv(x, w), conv.py_func(x, w))


@pytest.mark.parametrize("mixed", [True, False])
def test_a_conv_is_one_launch_with_its_weight_conversion_or_two(mixed, rng):
    x, w = data(rng, (1, 20, 9, 9), np.float16), data(rng, (20, 20, 3, 3), np.float16, 0.2)
    options = {} if mixed else {"disable_passes": ["mixed_kernels"]}

    @pyasc.kernel(chip="tiny", **options)
    def conv(x, w):
        return pyasc.conv2d(x, w, padding=1)

    assert_close(conv(x, w), conv.py_func(x, w))
    art = conv.compile(x, w)
    kinds = [(k.template, k.core_type) for k in art.kernels]
    if mixed:  # the vector cores convert the weights (and the map), the cube cores wait at an all-core barrier,
        # and the vector cores convert the result after a second one (GE's conv_edge_fold)
        assert kinds == [("conv_launch", "mix")]
    else:
        assert kinds == [("transdata", "aiv"), ("conv_weights", "aiv"), ("conv", "aic"), ("transdata", "aiv")]
    text = [k for k in art.kernels if "conv" in k.template][-1].schedule.text()
    assert "load3d" in text and "fixpipe" in text and "nz=True" in text
    assert ("sync_all" in text) == mixed


def test_a_grouped_conv_matches_numpy(rng):
    x, w, b = data(rng, (1, 4, 6, 5), np.float16), data(rng, (4, 2, 3, 3), np.float16, 0.3), data(rng, (4,), np.float16)

    @pyasc.kernel(chip="tiny")
    def grouped(x, w, b):
        return pyasc.conv2d(x, w, b, padding=1, groups=2)

    assert_close(grouped(x, w, b), grouped.py_func(x, w, b))


POOLS = {"3x3_s2_p1": dict(kernel_size=3, stride=2, padding=1),
         "3x2_ceil": dict(kernel_size=(3, 2), stride=(1, 2), padding=(1, 0), ceil_mode=True)}


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("name", sorted(POOLS))
def test_pools_on_nc1hwc0_maps(name, chip, rng):
    args = POOLS[name]
    x = data(rng, (2, 20, 7, 9), np.float16)

    @pyasc.kernel(chip=chip)
    def pools(x):
        return (pyasc.max_pool2d(x, **args), pyasc.avg_pool2d(x, **args),
                pyasc.avg_pool2d(x, **args, count_include_pad=False))

    assert_close(pools(x), pools.py_func(x))


def test_float32_avg_pool_and_conv_pool_conv(rng):
    # small integers: every product, sum and 2x2 average is exact in float32, whatever the summation order
    x = rng.integers(-3, 4, (1, 12, 9, 9)).astype(np.float32)
    w = rng.integers(-2, 3, (12, 12, 3, 3)).astype(np.float32)

    @pyasc.kernel(chip="tiny")
    def net(x, w):
        y = pyasc.avg_pool2d(pyasc.relu(pyasc.conv2d(x, w, padding=1)), 2, ceil_mode=True)
        return pyasc.conv2d(y, w, padding=1)

    assert_close(net(x, w), net.py_func(x, w))
    kinds = [k.template for k in net.compile(x, w).kernels]
    # the region's edge conversions run in the convs' launches (GE's conv_edge_fold), the pool between stays
    assert kinds == ["conv_launch", "pool", "conv_launch"]


def batch_norm_params(rng, c):
    return [data(rng, (c,), np.float16, 0.1), (rng.random(c) + 0.5).astype(np.float16),
            (rng.random(c) + 0.5).astype(np.float16), data(rng, (c,), np.float16, 0.1)]


@pytest.mark.parametrize("chip", CHIPS)
def test_resnet_basic_block(chip, rng):
    c = 20
    x = data(rng, (1, c, 9, 9), np.float16)
    w1, w2 = (data(rng, (c, c, 3, 3), np.float16, 1 / np.sqrt(9 * c)) for _ in range(2))

    @pyasc.kernel(chip=chip)
    def block(x, w1, m1, v1, g1, b1, w2, m2, v2, g2, b2):
        y = pyasc.relu(pyasc.batch_norm(pyasc.conv2d(x, w1, padding=1), m1, v1, g1, b1))
        y = pyasc.batch_norm(pyasc.conv2d(y, w2, padding=1), m2, v2, g2, b2)
        return pyasc.relu(y + x)

    args = (x, w1, *batch_norm_params(rng, c), w2, *batch_norm_params(rng, c))
    check(block, *args)
    # x converted into NC1HWC0 on the vector cores of the first conv's launch, each norm folded into its conv's
    # weight conversion (on the vector cores of the conv's own launch), the residual add and the last ReLU on
    # the vector cores of the second conv's launch, where its result is converted back to ND
    kernels = block.compile(*args).kernels
    assert [k.template for k in kernels] == ["conv_launch", "conv_launch"]
    # the folded norm's bias on a vector core of its own, beside the weight cores (which read only var, gamma)
    assert all(any("the float32 bias on one of its own" in n for n in k.notes) for k in kernels)


def test_a_block_of_two_images_with_odd_sizes_in_two_launches(rng):
    c, o = 5, 17   # channels not multiples of 16, odd H and W, a strided first conv, batch 2
    x, b1 = data(rng, (2, c, 9, 7), np.float16), data(rng, (o,), np.float16, 0.1)
    w1, w2 = data(rng, (o, c, 3, 3), np.float16, 0.3), data(rng, (o, o, 3, 3), np.float16, 0.2)
    r = data(rng, (2, o, 5, 4), np.float16)

    @pyasc.kernel(chip="tiny")
    def block(x, w1, b1, w2, r):
        y = pyasc.relu(pyasc.conv2d(x, w1, b1, stride=2, padding=1))
        return pyasc.relu(pyasc.conv2d(y, w2, padding=1) + r)

    assert_close(block(x, w1, b1, w2, r), block.py_func(x, w1, b1, w2, r))
    # x converted on the way into the first conv's launch, the residual added on the way out of the second's
    assert [k.template for k in block.compile(x, w1, b1, w2, r).kernels] == ["conv_launch", "conv_launch"]


def test_edge_conversions_run_as_launches_of_their_own_when_the_conv_launch_cannot_take_them(rng, monkeypatch):
    from pyasc.codegen.templates import conv_launch
    monkeypatch.setattr(conv_launch, "_vector_side", lambda *a: None)   # as if nothing fitted the UB
    x, w = data(rng, (1, 20, 7, 5), np.float16), data(rng, (18, 20, 3, 3), np.float16, 0.2)
    b, r = data(rng, (18,), np.float16), data(rng, (1, 18, 7, 5), np.float16)

    @pyasc.kernel(chip="tiny")
    def residual_apart(x, w, b, r):
        return pyasc.relu(pyasc.conv2d(x, w, b, padding=1) + r)

    assert_close(residual_apart(x, w, b, r), residual_apart.py_func(x, w, b, r))
    art = residual_apart.compile(x, w, b, r)
    assert [k.template for k in art.kernels] == ["conv_edge", "conv_weights", "conv", "conv_edge"]
    conv_kernel = [k for k in art.kernels if k.template == "conv"][0]
    assert any("no tiling of the vector side fits" in n for n in conv_kernel.notes)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("fuse", [True, False])
def test_a_residual_add_on_the_cube_or_as_an_nc1hwc0_vector_kernel(dtype, fuse, rng):
    x, w = data(rng, (1, 5, 7, 7), dtype), data(rng, (33, 5, 3, 3), dtype, 0.3)
    b, r = data(rng, (33,), dtype), data(rng, (1, 33, 7, 7), dtype)
    options = {} if fuse else {"disable_passes": ["conv_epilogue_fusion"]}

    @pyasc.kernel(chip="tiny", **options)
    def residual(x, w, b, r):
        return pyasc.relu(pyasc.conv2d(x, w, b, padding=1) + r)

    assert_close(residual(x, w, b, r), residual.py_func(x, w, b, r))
    kinds = [k.template for k in residual.compile(x, w, b, r).kernels]
    # fused, r is added in ND on the vector cores of the conv's launch, after its result is converted back;
    # unfused, converting r would cost what computing the add in NC1HWC0 saves, so the conv's launch converts
    # its result back and the add runs on ND values (the input's conversion is in the conv's launch either way)
    assert kinds == (["conv_launch"] if fuse else ["conv_launch", "vector"])


@pytest.mark.parametrize("chunk", [1, 2])
def test_resident_weights_arrive_chunk_by_chunk_over_several_blocks_per_core(chunk, rng, monkeypatch):
    # 72 channels are five channel blocks: chunks of 1 or 2 (the last one short), each with its own slot of
    # the resident weights; 81 positions in blocks of 16 give each cube core of "tiny" several blocks, the
    # bias table alternating between them
    from pyasc.codegen.templates import conv
    chosen = conv.tilings
    monkeypatch.setattr(conv, "tilings", lambda *a, **k: [t for t in chosen(*a, **k)
                                                          if t.resident and t.chunk == chunk and t.tm == 16])
    x, w, b = data(rng, (1, 72, 9, 9), np.float16), data(rng, (20, 72, 3, 3), np.float16, 0.2), \
        data(rng, (20,), np.float16)

    @pyasc.kernel(chip="tiny")
    def conv_relu(x, w, b):
        return pyasc.relu(pyasc.conv2d(x, w, b, padding=1))

    assert_close(conv_relu(x, w, b), conv_relu.py_func(x, w, b))
    tiling = [k for k in conv_relu.compile(x, w, b).kernels if k.template == "conv_launch"][0].tiling.params.conv
    assert (tiling.resident, tiling.chunk, tiling.tm) == (True, chunk, 16)
