"""torch's inference fast paths (nn.TransformerEncoderLayer and nn.MultiheadAttention in eval mode without
grad call fused aten ops): their decompositions match the fused kernels, and a compiled layer runs as pyasc
kernels with no graph break."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from pyasc.torch.fastpath import native_multi_head_attention, transformer_encoder_layer_fwd  # noqa: E402
from test_compile_backend import run  # noqa: E402  (compile, no graph break allowed, against eager)

G = torch.Generator().manual_seed(0)
B, L, E, H = 2, 5, 16, 4


def _masks():
    pad = torch.rand(B, L, generator=G) > 0.6
    pad[:, 0] = False  # every row keeps a key: a fully masked row is NaN in both
    square = torch.rand(L, L, generator=G) > 0.7
    square[:, 0] = False
    merged = torch.rand(B, H, L, L, generator=G) > 0.7
    merged[..., 0] = False
    canonical = torch.zeros(B, L).masked_fill(pad, float("-inf"))  # what the modules pass: 0 / -inf floats
    return [(None, None), (pad, 1), (square, 0), (merged, 2), (canonical, 1)]


@pytest.mark.parametrize("need_weights,average", [(False, True), (True, True), (True, False)])
def test_multi_head_attention_decomposition_matches_the_fused_kernel(need_weights, average):
    mha = torch.nn.MultiheadAttention(E, H, batch_first=True).eval()
    x = torch.randn(B, L, E, generator=G)
    params = (E, H, mha.in_proj_weight, mha.in_proj_bias, mha.out_proj.weight, mha.out_proj.bias)
    with torch.no_grad():
        for mask, mask_type in _masks():
            want = torch._native_multi_head_attention(x, x, x, *params, mask, need_weights, average, mask_type)
            got = native_multi_head_attention(x, x, x, *params, mask, need_weights, average, mask_type)
            torch.testing.assert_close(got[0], want[0], rtol=1e-5, atol=1e-5)
            if need_weights:
                torch.testing.assert_close(got[1], want[1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer_decomposition_matches_the_fused_kernel(norm_first, activation):
    layer = torch.nn.TransformerEncoderLayer(E, H, dim_feedforward=24, batch_first=True, norm_first=norm_first,
                                             activation=activation).eval()
    a = layer.self_attn
    x = torch.randn(B, L, E, generator=G)
    with torch.no_grad():
        for mask, mask_type in _masks():
            args = (x, E, H, a.in_proj_weight, a.in_proj_bias, a.out_proj.weight, a.out_proj.bias,
                    activation == "gelu", norm_first, layer.norm1.eps, layer.norm1.weight, layer.norm1.bias,
                    layer.norm2.weight, layer.norm2.bias, layer.linear1.weight, layer.linear1.bias,
                    layer.linear2.weight, layer.linear2.bias, mask, mask_type)
            torch.testing.assert_close(transformer_encoder_layer_fwd(*args),
                                       torch._transformer_encoder_layer_fwd(*args), rtol=1e-5, atol=1e-5)


def _ops(graphs):
    return {n.op for g in graphs for sub in g.subgraphs for n in sub.graph.nodes}


def test_an_encoder_layer_in_eval_mode_compiles_without_a_graph_break():
    layer = torch.nn.TransformerEncoderLayer(E, H, dim_feedforward=24, batch_first=True).eval()
    x = torch.randn(B, L, E, generator=G)
    pad = torch.tensor([[False] * L, [False] * 3 + [True] * 2])  # the second sequence is 3 long
    got, want, graphs = run(lambda t: layer(t, src_key_padding_mask=pad), x)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert len(graphs) == 1 and {"attention", "layer_norm", "matmul", "relu"} <= _ops(graphs)


def test_multi_head_attention_in_eval_mode_compiles_without_a_graph_break():
    mha = torch.nn.MultiheadAttention(E, H, batch_first=True).eval()
    x = torch.randn(B, L, E, generator=G)
    got, want, graphs = run(lambda t: mha(t, t, t, need_weights=False)[0], x)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert "attention" in _ops(graphs)
