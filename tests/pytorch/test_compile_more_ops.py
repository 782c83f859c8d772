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


def test_norms_pools_sorts_scans_distances_and_bags_match_eager():
    torch.manual_seed(0)
    inorm = nn.InstanceNorm2d(8, affine=True)
    inorm.weight.data.uniform_(0.5, 1.5)
    inorm.bias.data.uniform_(-0.5, 0.5)
    x4 = torch.randn(2, 8, 7, 5, generator=G)
    x = torch.randn(6, 10, generator=G)  # distinct values: every sort's indices are determined
    ties = torch.randint(0, 4, (6, 10), generator=G).float()
    weight, scale = torch.randn(10, 4, generator=G), torch.rand(8, generator=G)
    ids, offsets = torch.tensor([1, 2, 3, 4, 2, 9, 0, 7]), torch.tensor([0, 3, 3, 5])  # bag 1 is empty

    def f(t4, t, r, w, i, o, s):
        return {
            "instance_norm": inorm(t4), "adaptive_uneven": F.adaptive_avg_pool2d(t4, (3, 2)),
            "adaptive_even": F.adaptive_avg_pool2d(t4, (7, 1)),
            "sort_ties_desc_dim0": torch.sort(r, dim=0, stable=True, descending=True),
            "topk_smallest": torch.topk(t, 3, largest=False), "topk_values": torch.topk(t, 2).values,
            "scans_elementwise": torch.cumsum(t, -1) + torch.cumprod(t, 0) + t.flip(0, 1)
            + torch.ops.aten.elu(t, 1.5, 2.0, 0.5) + torch.selu(t) + t.clamp(t[0], t[1]),
            "prod": t.prod(-1, keepdim=True), "prod_all": t[:2, :3].prod(),
            "var_mean": torch.var_mean(t, -1, correction=0),
            "norm_dims": torch.linalg.vector_norm(t, dim=(0, 1), keepdim=True),
            "norm_1": torch.linalg.vector_norm(t, 1, dim=0), "norm_inf": torch.linalg.vector_norm(t, math.inf, dim=-1),
            "norm_3": torch.linalg.vector_norm(t, 3), "cdist_2": torch.cdist(t, t[:4] * 0.5 + 1.0),
            "cdist_1": torch.cdist(t, t, p=1),
            "bag_sum_weighted": F.embedding_bag(i, w, o, mode="sum", per_sample_weights=s),
            "bag_max_last_offset": F.embedding_bag(i, w, torch.cat([o, torch.tensor([8])]), mode="max",
                                                   include_last_offset=True),
            "bag_mean_2d_padding": F.embedding_bag(i.reshape(2, 4), w, mode="mean", padding_idx=2),
        }

    got, want = no_break(f, x4, x, ties, weight, ids, offsets, scale)
    for name, w in want.items():
        for g, e in zip(*((got[name], w) if isinstance(w, tuple) else ((got[name],), (w,)))):
            if e.dtype == torch.int64:
                assert torch.equal(g, e), name  # indices, ties in index order as torch's stable sort
            else:
                torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5, msg=lambda m, n=name: f"{n}: {m}")
    assert {"sort", "argsort", "cumsum", "cumprod", "prod", "flip", "norm", "avg_pool2d"} <= ops_ran()


def test_the_gradient_of_uneven_adaptive_pooling_is_lowered_and_matches_eager():
    x = torch.randn(1, 2, 7, 5, generator=G)
    w = torch.randn(1, 2, 3, 2, generator=G)
    torch._dynamo.reset()
    compiled = torch.compile(lambda t: F.adaptive_avg_pool2d(t, (3, 2)) * w, backend="pyasc", options=OPTIONS)
    got, want = x.clone().requires_grad_(), x.clone().requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("error", pt.PyascGraphBreak)
        compiled(got).sum().backward()
    (F.adaptive_avg_pool2d(want, (3, 2)) * w).sum().backward()
    torch.testing.assert_close(got.grad, want.grad, rtol=1e-6, atol=1e-6)
    assert [s.phase for g in pt.last_graphs() for s in g.subgraphs] == ["forward", "backward"]


def test_conv1d_and_group_norm_run_on_the_emulator_and_match_eager():
    torch.manual_seed(0)
    conv, gn = nn.Conv1d(8, 4, 3, stride=2, padding=2, dilation=2, groups=2), nn.GroupNorm(2, 4)
    gn.weight.data.uniform_(0.5, 1.5)
    gn.bias.data.uniform_(-0.5, 0.5)
    got, want = no_break(lambda t: gn(conv(t)), torch.randn(2, 8, 15, generator=G), options=EMULATED)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert {"conv2d", "layer_norm"} <= ops_ran()


def test_an_embedding_bag_whose_bag_sizes_are_read_stays_in_pytorch_and_says_why():
    from torch.fx.experimental.proxy_tensor import make_fx  # only this test traces by hand

    def f(w, i, o):
        out, _, sizes, _ = torch.ops.aten._embedding_bag(w, i, o, False, 1)
        return out, sizes

    gm = make_fx(f)(torch.randn(10, 4), torch.tensor([1, 2, 3]), torch.tensor([0, 2]))
    (bag,) = [n for n in gm.graph.nodes if n.target is torch.ops.aten._embedding_bag.default]
    assert node_support(bag, TABLE) == ("arguments the table cannot express (embedding_bag whose offset2bag, bag "
                                        "sizes or max indices are used (training))")
