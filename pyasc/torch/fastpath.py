"""torch's inference fast paths for transformers, decomposed into the plain ops pyasc lowers.

In eval mode without grad, `nn.TransformerEncoderLayer` and `nn.MultiheadAttention` call fused aten ops
(`_transformer_encoder_layer_fwd`, `_native_multi_head_attention`) that torch has no decomposition for:
dynamo captures them whole, and a backend without them breaks the graph around every layer. These
decompositions restate them with linear, layer_norm and scaled_dot_product_attention (which pyasc keeps
whole as its attention op), so a compiled encoder runs as pyasc kernels.

The semantics follow the fused kernels, not the Python modules they replace: a mask is one of three
layouts (`mask_type` 0: (L, L) for every batch and head, 1: (B, L) key padding, 2: (B, H, L, L) or
(B, 1, L, L)); any nonzero or True entry masks its key out (the modules canonicalise their masks to 0 /
-inf before calling, which this reading keeps exact); a row with every key masked is NaN, as in torch.
"""
from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

aten = torch.ops.aten


def _heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    b, n, e = x.shape
    return x.reshape(b, n, heads, e // heads).transpose(1, 2)


def _additive_mask(mask: torch.Tensor | None, mask_type: int | None, b: int, n: int) -> torch.Tensor | None:
    """The mask as sdpa's additive float mask broadcast against (B, H, L, L); True/nonzero masks out."""
    if mask is None:
        return None
    if mask_type == 1:
        mask = mask.reshape(b, 1, 1, n)
    masked = mask if mask.dtype == torch.bool else mask != 0
    return torch.zeros(masked.shape, dtype=torch.float32, device=mask.device).masked_fill(masked, float("-inf"))


def _projections(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, embed_dim: int,
                 qkv_weight: torch.Tensor, qkv_bias: torch.Tensor) -> tuple[torch.Tensor, ...]:
    w = qkv_weight.split(embed_dim, dim=0)
    bias = qkv_bias.split(embed_dim, dim=0)
    return tuple(F.linear(x, wi, bi) for x, wi, bi in zip((query, key, value), w, bias))


def native_multi_head_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, embed_dim: int,
                                num_head: int, qkv_weight: torch.Tensor, qkv_bias: torch.Tensor,
                                proj_weight: torch.Tensor, proj_bias: torch.Tensor,
                                mask: torch.Tensor | None = None, need_weights: bool = True,
                                average_attn_weights: bool = True,
                                mask_type: int | None = None) -> tuple[torch.Tensor, Any]:
    """aten._native_multi_head_attention: (B, L, E) inputs, the output and, if asked, the weights."""
    b, n, _ = query.shape
    q, k, v = (_heads(t, num_head) for t in _projections(query, key, value, embed_dim, qkv_weight, qkv_bias))
    additive = _additive_mask(mask, mask_type, b, n)
    if need_weights:
        # the weights are an output: the scores are formed explicitly (sdpa does not return them)
        scores = q @ k.transpose(-2, -1) * (q.shape[-1] ** -0.5)
        weights = torch.softmax(scores if additive is None else scores + additive.to(scores.dtype), dim=-1)
        out = weights @ v
    else:
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=None if additive is None else additive.to(q.dtype))
        weights = None
    out = F.linear(out.transpose(1, 2).reshape(b, n, embed_dim), proj_weight, proj_bias)
    if weights is None:
        return out, torch.empty(0, dtype=out.dtype, device=out.device)
    return out, weights.mean(dim=1) if average_attn_weights else weights


def transformer_encoder_layer_fwd(src: torch.Tensor, embed_dim: int, num_heads: int, qkv_weight: torch.Tensor,
                                  qkv_bias: torch.Tensor, proj_weight: torch.Tensor, proj_bias: torch.Tensor,
                                  use_gelu: bool, norm_first: bool, eps: float, norm_weight_1: torch.Tensor,
                                  norm_bias_1: torch.Tensor, norm_weight_2: torch.Tensor,
                                  norm_bias_2: torch.Tensor, ffn_weight_1: torch.Tensor, ffn_bias_1: torch.Tensor,
                                  ffn_weight_2: torch.Tensor, ffn_bias_2: torch.Tensor,
                                  mask: torch.Tensor | None = None, mask_type: int | None = None) -> torch.Tensor:
    """aten._transformer_encoder_layer_fwd: self-attention then a two-layer feed-forward network, each with a
    residual and a layer norm (before the block when norm_first, else after the residual)."""
    def norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (embed_dim,), w, b, eps)

    x = norm(src, norm_weight_1, norm_bias_1) if norm_first else src
    x = src + native_multi_head_attention(x, x, x, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight,
                                          proj_bias, mask, False, True, mask_type)[0]
    if not norm_first:
        x = norm(x, norm_weight_1, norm_bias_1)
    y = norm(x, norm_weight_2, norm_bias_2) if norm_first else x
    hidden = F.linear(y, ffn_weight_1, ffn_bias_1)
    hidden = F.gelu(hidden) if use_gelu else F.relu(hidden)
    x = x + F.linear(hidden, ffn_weight_2, ffn_bias_2)
    return x if norm_first else norm(x, norm_weight_2, norm_bias_2)


#: the fast-path ops and their decompositions, added to the table the backend hands AOTAutograd
DECOMPOSITIONS = {
    aten._native_multi_head_attention.default: native_multi_head_attention,
    aten._transformer_encoder_layer_fwd.default: transformer_encoder_layer_fwd,
}
