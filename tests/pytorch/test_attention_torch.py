"""Attention from PyTorch: scaled_dot_product_attention becomes the registry's attention op in the FX frontend,
and attention written by hand in a torch model is found by GE's attention pass (through torch's bmm views)."""
from __future__ import annotations

import copy
import math

import pytest

torch = pytest.importorskip("torch")

from pyasc import ge  # noqa: E402
from pyasc.ge.decisions import DecisionKind  # noqa: E402
from test_compile_backend import run  # noqa: E402  (compile, no graph break allowed, against eager)

F = torch.nn.functional
G = torch.Generator().manual_seed(0)


def lowered(fn, *args):
    """(compiled result, eager result, the one pyasc graph the FX frontend built) with no graph break."""
    got, want, graphs = run(fn, *args)
    (graph,) = graphs
    (sub,) = graph.subgraphs
    return got, want, sub.graph


def ops_of(graph):
    return [n.op for n in graph.nodes]


def qkv(tq=6, tk=6, d=8):
    return (torch.randn(2, 2, tq, d, generator=G), torch.randn(2, 2, tk, d, generator=G),
            torch.randn(2, 2, tk, d, generator=G))


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_sdpa_is_one_attention_op(causal):
    got, want, graph = lowered(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal), *qkv())
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    (att,) = [n for n in graph.nodes if n.op == "attention"]
    assert att.attrs["causal"] is causal and not att.attrs["has_mask"]
    assert att.attrs["scale"] == pytest.approx(1 / math.sqrt(8))


def test_sdpa_masks_and_scale():
    q, k, v = qkv(tq=4, tk=7)
    keep = torch.rand(2, 1, 4, 7, generator=G) < 0.7
    keep[..., 0] = True
    bias = torch.randn(4, 7, generator=G)
    cases = [
        (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=keep), "where"),
        (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=0.5), None),
        # torch's is_causal with L != S is the top-left triangle: a mask, not the op's bottom-right causal
        (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), "Const"),
    ]
    for fn, mask_op in cases:
        got, want, graph = lowered(fn, q, k, v)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
        (att,) = [n for n in graph.nodes if n.op == "attention"]
        assert att.attrs["has_mask"] and not att.attrs["causal"]
        if mask_op is not None:
            assert att.inputs[3].node.op == mask_op


class ManualAttention(torch.nn.Module):
    """Attention written out: q @ k^T / sqrt(d), masked_fill of the upper triangle, softmax, @ v."""

    def forward(self, q, k, v):
        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        t = q.shape[-2]
        s = s.masked_fill(torch.triu(torch.ones(t, t, dtype=torch.bool), 1), float("-inf"))
        return torch.softmax(s, dim=-1) @ v


def test_manual_attention_in_a_model_is_found_by_the_attention_pass():
    got, want, graph = lowered(ManualAttention(), *qkv())
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    ops = ops_of(graph)
    assert ops.count("matmul") == 2 and "softmax" in ops and "attention" not in ops  # torch's bmm form
    optimised = copy.deepcopy(graph)
    result = ge.optimize(optimised, opt_level=2)  # the optimiser's own capacity estimate: no codegen here
    (found,) = [d for d in result.fusion_decisions if d.kind is DecisionKind.PATTERN]
    assert found.rule == "attention" and found.consumer == "attention(scale=0.353553, causal)"
    assert "batch reshape" in found.detail
    assert [n.op for n in optimised.nodes if n.op not in ("Data", "Const")] == ["attention"]
