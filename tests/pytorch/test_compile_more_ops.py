"""torch.compile(backend="pyasc") on more aten ops with no graph break: 1-D convolution, group / instance norm,
adaptive average pooling, sorting (sort, topk), scans and products, norms and distances, elu, tensor clamps,
flips, embedding bags. Several ops share one compiled function (each compile costs the suite ~1 s). The
1-D convolution and group norm run on the emulator; the others check the aten lowering on the numpy
reference backend (the registry ops they become have their own emulator tests; codegen would cost
seconds here)."""
from __future__ import annotations

import math
import warnings

import pytest

torch = pytest.importorskip("torch")

import pyasc.torch as pt  # noqa: E402
from pyasc.torch.aten_table import TABLE  # noqa: E402
from pyasc.torch.fx_graph import node_support  # noqa: E402

nn, F = torch.nn, torch.nn.functional
OPTIONS = {"chip": "tiny", "backend": "reference"}
EMULATED = {"chip": "tiny"}
G = torch.Generator().manual_seed(3)


def no_break(fn, *args, options=OPTIONS):
    """(compiled result, eager result): fn compiled and called with no graph break allowed."""
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="pyasc", options=options)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("error", pt.PyascGraphBreak)
        got = compiled(*args)
        want = fn(*args)
    assert pt.last_graphs() and all(not g.breaks for g in pt.last_graphs())
    return got, want


def ops_ran() -> set[str]:
    return {n.op for g in pt.last_graphs() for s in g.subgraphs for n in s.graph.nodes}


def test_instance_norm_and_uneven_adaptive_pooling_match_eager():
    torch.manual_seed(0)
    inorm = nn.InstanceNorm2d(8, affine=True)
    inorm.weight.data.uniform_(0.5, 1.5)
    inorm.bias.data.uniform_(-0.5, 0.5)
    x = torch.randn(2, 8, 7, 5, generator=G)
    got, want = no_break(lambda t: (inorm(t), F.adaptive_avg_pool2d(t, (3, 2)), F.adaptive_avg_pool2d(t, (7, 1))), x)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
    assert "avg_pool2d" in ops_ran()  # (7, 1): even bins, one pooling window


def test_conv1d_and_group_norm_run_on_the_emulator_and_match_eager():
    torch.manual_seed(0)
    conv, gn = nn.Conv1d(8, 4, 3, stride=2, padding=2, dilation=2, groups=2), nn.GroupNorm(2, 4)
    gn.weight.data.uniform_(0.5, 1.5)
    gn.bias.data.uniform_(-0.5, 0.5)
    got, want = no_break(lambda t: gn(conv(t)), torch.randn(2, 8, 15, generator=G), options=EMULATED)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert {"conv2d", "layer_norm"} <= ops_ran()


def test_sorts_scans_norms_and_elementwise_ops_match_eager():
    x = torch.randn(6, 10, generator=G)  # distinct values: every sort's indices are determined
    ties = torch.randint(0, 4, (6, 10), generator=G).float()

    def f(t, r):
        return (torch.sort(t, dim=0, descending=True), torch.sort(t)[0], torch.topk(t, 3, largest=False),
                torch.sort(r, stable=True, descending=True), torch.cumsum(t, -1) + torch.cumprod(t, 0) + t.flip(0, 1)
                + torch.ops.aten.elu(t, 1.5, 2.0, 0.5) + torch.selu(t) + t.clamp(t[0], t[1]),
                t.prod(-1, keepdim=True), t[:2, :3].prod(), torch.var_mean(t, dim=-1, correction=0),
                torch.linalg.vector_norm(t, dim=(0, 1), keepdim=True), torch.linalg.vector_norm(t, 1, dim=0),
                torch.linalg.vector_norm(t, math.inf, dim=-1), torch.linalg.vector_norm(t, 3),
                torch.cdist(t, t[:4] * 0.5 + 1.0), torch.cdist(t, t, p=1))

    got, want = no_break(f, x, ties)
    flat = [(g, w) for gs, ws in zip(got, want) for g, w in (zip(gs, ws) if isinstance(gs, tuple) else [(gs, ws)])]
    for g, w in flat:
        if w.dtype == torch.int64:
            assert torch.equal(g, w)  # indices, ties in index order as torch's stable sort
        else:
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
    assert {"sort", "argsort", "cumsum", "cumprod", "prod", "flip", "norm"} <= ops_ran()


def test_embedding_bags_sum_mean_max_match_eager():
    weight = torch.randn(10, 4, generator=G)
    ids = torch.tensor([1, 2, 3, 4, 2, 9, 0, 7])
    offsets = torch.tensor([0, 3, 3, 5])  # bag 1 is empty
    scale = torch.rand(8, generator=G)

    def f(w, i, o, s):
        return (F.embedding_bag(i, w, o, mode="sum", per_sample_weights=s),
                F.embedding_bag(i, w, torch.cat([o, torch.tensor([8])]), mode="max", include_last_offset=True),
                F.embedding_bag(i.reshape(2, 4), w, mode="mean", padding_idx=2))  # offsets made by torch

    got, want = no_break(f, weight, ids, offsets, scale)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-6, atol=1e-6)


def test_an_embedding_bag_whose_bag_sizes_are_read_stays_in_pytorch_and_says_why():
    from torch.fx.experimental.proxy_tensor import make_fx  # only this test traces by hand

    def f(w, i, o):
        out, _, sizes, _ = torch.ops.aten._embedding_bag(w, i, o, False, 1)
        return out, sizes

    gm = make_fx(f)(torch.randn(10, 4), torch.tensor([1, 2, 3]), torch.tensor([0, 2]))
    (bag,) = [n for n in gm.graph.nodes if n.target is torch.ops.aten._embedding_bag.default]
    assert node_support(bag, TABLE) == ("arguments the table cannot express (embedding_bag whose offset2bag, bag "
                                        "sizes or max indices are used (training))")
