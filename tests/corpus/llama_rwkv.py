"""numpy Llama / Qwen / RWKV style: class-per-module models holding weights, RoPE with split/stack, a KV cache
on the attention object written at `start_pos`, RWKV's state array updated in place token by token."""
from __future__ import annotations

import math

import numpy as np
from numpy import exp

from .harness import Call, case, f32

CASES: list = []
LM = "llama_rwkv"


def softmax(x):
    exp_x = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return exp_x / np.sum(exp_x, axis=-1, keepdims=True)


def silu(x):
    return x * (1 / (1 + np.exp(-x)))


def compute_cos_sin_cache(head_dim, max_seq_len, base=10000):
    inv_freq = 1.0 / (base ** (np.arange(0, head_dim, 2)[: (head_dim // 2)] / head_dim))
    t = np.arange(max_seq_len)
    freqs = np.outer(t, inv_freq)
    return np.cos(freqs).astype(np.float32), np.sin(freqs).astype(np.float32)


def apply_rotary_emb(xq, xk, freqs_cos, freqs_sin):
    # ["B, L or 1, QHN, HD"] -> ["B, L or 1, QHN,   HD//2, 2"]
    xqri = xq.reshape(xq.shape[:-1] + (-1, 2))
    xkri = xk.reshape(xk.shape[:-1] + (-1, 2))

    # Reshape `xq` and `xk` to match the complex representation.
    xq_r, xq_i = np.split(xqri, 2, axis=-1)
    xq_r = xq_r.squeeze(-1)
    xq_i = xq_i.squeeze(-1)

    xk_r, xk_i = np.split(xkri, 2, axis=-1)
    xk_r = xk_r.squeeze(-1)
    xk_i = xk_i.squeeze(-1)

    # Reshape `freqs_cos` and `freqs_sin` for broadcasting.
    freqs_cos = np.expand_dims(freqs_cos, axis=(0, 2))
    freqs_sin = np.expand_dims(freqs_sin, axis=(0, 2))

    # Apply rotation using real numbers.
    xq_out_r = xq_r * freqs_cos - xq_i * freqs_sin
    xq_out_i = xq_r * freqs_sin + xq_i * freqs_cos
    xk_out_r = xk_r * freqs_cos - xk_i * freqs_sin
    xk_out_i = xk_r * freqs_sin + xk_i * freqs_cos

    # Flatten last two dimensions.
    xq_out = np.stack([xq_out_r, xq_out_i], axis=-1)
    xk_out = np.stack([xk_out_r, xk_out_i], axis=-1)
    xq_out = xq_out.reshape(xq_out.shape[:-2] + (-1,))
    xk_out = xk_out.reshape(xk_out.shape[:-2] + (-1,))

    return xq_out, xk_out


def repeat_kv(x, n_rep):
    if n_rep == 1:
        return x
    z = np.repeat(x, n_rep, axis=2)
    return z


class FeedForward:
    def __init__(self, up_weight, gate_weight, down_weight):
        self.up_weight = up_weight.T
        self.gate_weight = gate_weight.T
        self.down_weight = down_weight.T

    def __call__(self, x):
        # FD = 2 * 4 * D / 3
        swish = silu(x @ self.gate_weight)
        x_V = x @ self.up_weight
        x = swish * x_V
        x = x @ self.down_weight
        return x


class RMSNorm:
    def __init__(self, weight, eps):
        self.weight = weight
        self.eps = eps

    def __call__(self, x):
        z = (x ** 2).mean(-1, keepdims=True) + self.eps
        z = x / np.sqrt(z)
        return z * self.weight


class Attention:
    def __init__(self, rng, dim, n_heads, n_kv_heads, max_batch, max_seq):
        self.n_kv_heads = n_kv_heads
        self.n_local_heads = n_heads
        self.n_local_kv_heads = n_kv_heads
        self.n_rep = self.n_local_heads // self.n_local_kv_heads
        self.head_dim = dim // n_heads
        self.q_weight = f32(rng, dim, dim, scale=0.2)
        self.k_weight = f32(rng, dim, n_kv_heads * self.head_dim, scale=0.2)
        self.v_weight = f32(rng, dim, n_kv_heads * self.head_dim, scale=0.2)
        self.o_weight = f32(rng, dim, dim, scale=0.2)
        self.cache_k = np.zeros((max_batch, max_seq, n_kv_heads, self.head_dim), np.float32)
        self.cache_v = np.zeros((max_batch, max_seq, n_kv_heads, self.head_dim), np.float32)

    def __call__(self, x, start_pos, mask, freqs_cos, freqs_sin):
        B, L, _ = x.shape

        # QKV
        xq = x @ self.q_weight
        xk = x @ self.k_weight
        xv = x @ self.v_weight

        xq = xq.reshape(B, L, self.n_local_heads, self.head_dim)
        xk = xk.reshape(B, L, self.n_local_kv_heads, self.head_dim)
        xv = xv.reshape(B, L, self.n_local_kv_heads, self.head_dim)

        # RoPE #2
        xq, xk = apply_rotary_emb(xq, xk, freqs_cos, freqs_sin)

        # KV Cache
        self.cache_k[:B, start_pos: start_pos + L] = xk
        self.cache_v[:B, start_pos: start_pos + L] = xv
        ks = self.cache_k[:B, : start_pos + L]
        vs = self.cache_v[:B, : start_pos + L]

        # GQA
        xk = repeat_kv(ks, self.n_rep)
        xv = repeat_kv(vs, self.n_rep)

        # ["B, L, HN, HD"] -> ["B, HN, L, HD"]
        xq = xq.transpose(0, 2, 1, 3)
        xk = xk.transpose(0, 2, 1, 3)
        xv = xv.transpose(0, 2, 1, 3)

        # Scaled Dot-Product Attention
        attention = xq @ xk.transpose(0, 1, 3, 2) / math.sqrt(self.head_dim)
        # `mask` is used only once at the beginning.
        if mask is not None:
            attention = attention + mask[None, None, :, :]
        attention = softmax(attention)
        output = attention @ xv

        # ["B, HN, L, HD"] -> ["B, L, D"]
        output = output.transpose(0, 2, 1, 3).reshape(B, L, -1)
        output = output @ self.o_weight

        return output


class TransformerBlock:
    def __init__(self, rng, dim, n_heads, n_kv_heads, max_seq):
        self.attention = Attention(rng, dim, n_heads, n_kv_heads, 1, max_seq)
        hidden = 2 * dim
        self.feed_forward = FeedForward(f32(rng, hidden, dim, scale=0.2), f32(rng, hidden, dim, scale=0.2),
                                        f32(rng, dim, hidden, scale=0.2))
        self.input_layernorm = RMSNorm(np.ones(dim, np.float32), eps=1e-5)
        self.post_attention_layernorm = RMSNorm(np.ones(dim, np.float32), eps=1e-5)

    def __call__(self, x, start_pos, mask, freqs_cos, freqs_sin):
        # RMSNorm
        norm_x = self.input_layernorm(x)
        # Masked Multi-Head Attention
        h1 = self.attention(norm_x, start_pos, mask, freqs_cos, freqs_sin)
        z = x + h1

        # RMSNorm
        norm_z = self.post_attention_layernorm(z)
        # Feed Forward + SwiGLU
        h2 = self.feed_forward(norm_z)
        out = z + h2

        return out


class Llama:
    def __init__(self, rng, vocab=16, dim=8, n_layers=2, n_heads=2, n_kv_heads=1, max_seq=8):
        self.tok_embedding = f32(rng, vocab, dim)
        self.freqs_cos, self.freqs_sin = compute_cos_sin_cache(dim // n_heads, max_seq)
        self.layers = [TransformerBlock(rng, dim, n_heads, n_kv_heads, max_seq) for _ in range(n_layers)]
        self.norm = RMSNorm(np.ones(dim, np.float32), eps=1e-5)
        self.lm_head_weight = f32(rng, vocab, dim, scale=0.2).T

    def __call__(self, input_ids, start_pos):
        _, L = input_ids.shape
        h = self.tok_embedding[input_ids]
        # ["M, HD//2"] -> ["L, HD//2"]
        freqs_cos = self.freqs_cos[start_pos: start_pos + L]
        freqs_sin = self.freqs_sin[start_pos: start_pos + L]

        # `mask` is generated only once at the beginning.
        mask = None
        if L > 1:
            mask = np.full((L, L), float("-inf"))
            mask = np.triu(mask, k=1)
            mask = np.concatenate([np.zeros((L, start_pos)), mask], axis=1)

        # Transformer Layers
        for i, layer in enumerate(self.layers):
            h = layer(h, start_pos, mask, freqs_cos, freqs_sin)

        # RMSNorm
        h = self.norm(h)
        # Only forward the output from the last position.
        # ["B, 1, VS"] = ["B, 1(L), D"] @ ["D, VS"]
        logit = h[:, [-1], :] @ self.lm_head_weight
        return logit


def rms_norm_qwen(x, weight, eps=1e-6):
    variance = np.mean(np.power(x.astype(np.float32), 2), axis=-1, keepdims=True)
    x = x * (1.0 / np.sqrt(variance + eps))
    return weight * x


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return np.concatenate((-x2, x1), axis=-1)


def apply_rope_qwen(q, k, cos, sin):
    cos = cos[:, None, :]
    sin = sin[:, None, :]
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


def sample_greedy(logits, temperature=0.0):
    if temperature == 0.0:
        return np.argmax(logits, axis=-1)
    probs = softmax(logits / temperature)
    return np.argmax(probs, axis=-1)


def top_p_filter(logits, top_p=0.9):
    sorted_indices = np.argsort(logits)[::-1]
    sorted_logits = logits[sorted_indices]
    cumulative_probs = np.cumsum(softmax(sorted_logits))
    cutoff = cumulative_probs > top_p
    cutoff[1:] = cutoff[:-1].copy()
    cutoff[0] = False
    sorted_logits[cutoff] = -np.inf
    out = np.empty_like(logits)
    out[sorted_indices] = sorted_logits
    return out


# ---- RWKV ------------------------------------------------------------------------------------------------

N_LAYER = 2
N_EMBD = 8


def layer_norm(x, w, b):
    return (x - np.mean(x)) / np.std(x) * w + b


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def time_mixing(x, last_x, last_num, last_den, decay, bonus, mix_k, mix_v, mix_r, Wk, Wv, Wr, Wout):
    k = Wk @ (x * mix_k + last_x * (1 - mix_k))
    v = Wv @ (x * mix_v + last_x * (1 - mix_v))
    r = Wr @ (x * mix_r + last_x * (1 - mix_r))

    wkv = (last_num + exp(bonus + k) * v) / (last_den + exp(bonus + k))
    rwkv = sigmoid(r) * wkv

    num = exp(-exp(decay)) * last_num + exp(k) * v
    den = exp(-exp(decay)) * last_den + exp(k)

    return Wout @ rwkv, (x, num, den)


def channel_mixing(x, last_x, mix_k, mix_r, Wk, Wr, Wv):
    k = Wk @ (x * mix_k + last_x * (1 - mix_k))
    r = Wr @ (x * mix_r + last_x * (1 - mix_r))
    vk = Wv @ np.maximum(k, 0) ** 2
    return sigmoid(r) * vk, x


def make_rwkv_model(rng):
    model = {"emb.weight": f32(rng, 16, N_EMBD), "blocks.0.ln0.weight": np.ones(N_EMBD, np.float32),
             "blocks.0.ln0.bias": np.zeros(N_EMBD, np.float32)}
    for i in range(N_LAYER):
        p = f"blocks.{i}."
        for ln in ("ln1", "ln2"):
            model[p + ln + ".weight"] = np.ones(N_EMBD, np.float32)
            model[p + ln + ".bias"] = np.zeros(N_EMBD, np.float32)
        model[p + "att.time_decay"] = f32(rng, N_EMBD, scale=0.1)
        model[p + "att.time_first"] = f32(rng, N_EMBD, scale=0.1)
        for m in ("mix_k", "mix_v", "mix_r"):
            model[p + "att.time_" + m] = rng.random(N_EMBD).astype(np.float32)
        for w in ("key", "value", "receptance", "output"):
            model[p + "att." + w + ".weight"] = f32(rng, N_EMBD, N_EMBD, scale=0.3)
        model[p + "ffn.time_mix_k"] = rng.random(N_EMBD).astype(np.float32)
        model[p + "ffn.time_mix_r"] = rng.random(N_EMBD).astype(np.float32)
        model[p + "ffn.key.weight"] = f32(rng, 2 * N_EMBD, N_EMBD, scale=0.3)
        model[p + "ffn.receptance.weight"] = f32(rng, N_EMBD, N_EMBD, scale=0.3)
        model[p + "ffn.value.weight"] = f32(rng, N_EMBD, 2 * N_EMBD, scale=0.3)
    model["ln_out.weight"] = np.ones(N_EMBD, np.float32)
    model["ln_out.bias"] = np.zeros(N_EMBD, np.float32)
    model["head.weight"] = f32(rng, 16, N_EMBD, scale=0.3)
    return model


def RWKV(model, token, state):
    params = lambda prefix: [model[key] for key in model.keys() if key.startswith(prefix)]  # noqa: E731

    x = params("emb")[0][token]
    x = layer_norm(x, *params("blocks.0.ln0"))

    for i in range(N_LAYER):
        x_ = layer_norm(x, *params(f"blocks.{i}.ln1"))
        dx, state[i][:3] = time_mixing(x_, *state[i][:3], *params(f"blocks.{i}.att"))
        x = x + dx

        x_ = layer_norm(x, *params(f"blocks.{i}.ln2"))
        dx, state[i][3] = channel_mixing(x_, state[i][3], *params(f"blocks.{i}.ffn"))
        x = x + dx

    x = layer_norm(x, *params("ln_out"))
    x = params("head")[0] @ x

    e_x = exp(x - np.max(x))
    probs = e_x / e_x.sum()

    return probs, state


# ---- cases ---------------------------------------------------------------------------------------------


@case(LM, CASES)
def llama_softmax(rng):
    return Call(softmax, (f32(rng, 2, 4, 8),))


@case(LM, CASES)
def llama_silu(rng):
    return Call(silu, (f32(rng, 4, 8),))


@case(LM, CASES)
def rope_llama(rng):
    cos, sin = compute_cos_sin_cache(8, 4)
    return Call(apply_rotary_emb, (f32(rng, 1, 4, 2, 8), f32(rng, 1, 4, 1, 8), cos, sin))


@case(LM, CASES)
def rope_cache_table(rng):
    def kernel(x):
        cos, sin = compute_cos_sin_cache(x.shape[-1], x.shape[0])
        return x * np.concatenate([cos, cos], axis=-1) + x * np.concatenate([sin, sin], axis=-1)
    return Call(kernel, (f32(rng, 4, 8),))


@case(LM, CASES)
def gqa_repeat(rng):
    def kernel(x):
        return repeat_kv(x, 2)
    return Call(kernel, (f32(rng, 1, 3, 2, 4),))


@case(LM, CASES)
def llama_ffn(rng):
    ff = FeedForward(f32(rng, 16, 8), f32(rng, 16, 8), f32(rng, 8, 16))
    return Call(ff, (f32(rng, 1, 3, 8),))


@case(LM, CASES)
def llama_rmsnorm(rng):
    norm = RMSNorm(f32(rng, 8), 1e-5)
    return Call(norm, (f32(rng, 1, 3, 8),))


@case(LM, CASES)
def llama_attention_prefill(rng):
    att = Attention(rng, 8, 2, 1, 1, 8)
    cos, sin = compute_cos_sin_cache(4, 8)
    L = 3
    mask = np.triu(np.full((L, L), -1e9, np.float32), k=1)

    def kernel(x, cos, sin):
        return att(x, 0, mask, cos, sin)
    return Call(kernel, (f32(rng, 1, L, 8), cos[:L], sin[:L]), (att,))


@case(LM, CASES)
def llama_attention_decode(rng):
    att = Attention(rng, 8, 2, 1, 1, 8)
    att.cache_k[:, :2] = f32(rng, 1, 2, 1, 4)
    att.cache_v[:, :2] = f32(rng, 1, 2, 1, 4)
    cos, sin = compute_cos_sin_cache(4, 8)

    def kernel(x, cos, sin):
        return att(x, 2, None, cos, sin)
    return Call(kernel, (f32(rng, 1, 1, 8), cos[2:3], sin[2:3]), (att,))


@case(LM, CASES)
def llama_block(rng):
    block = TransformerBlock(rng, 8, 2, 1, 8)
    cos, sin = compute_cos_sin_cache(4, 8)

    def kernel(x, cos, sin):
        return block(x, 0, None, cos, sin)
    return Call(kernel, (f32(rng, 1, 1, 8), cos[:1], sin[:1]), (block.attention,))


@case(LM, CASES)
def llama_model_prefill(rng):
    model = Llama(rng)

    def kernel(ids):
        return model(ids, 0)
    return Call(kernel, (rng.integers(0, 16, size=(1, 3)).astype(np.int32),),
                tuple(layer.attention for layer in model.layers))


@case(LM, CASES)
def qwen_rmsnorm(rng):
    return Call(rms_norm_qwen, (f32(rng, 3, 8), f32(rng, 8)))


@case(LM, CASES)
def qwen_rope(rng):
    cos, sin = (np.cos(f32(rng, 3, 8)), np.sin(f32(rng, 3, 8)))
    return Call(apply_rope_qwen, (f32(rng, 3, 2, 8), f32(rng, 3, 1, 8), cos, sin))


@case(LM, CASES)
def greedy_sample(rng):
    return Call(sample_greedy, (f32(rng, 2, 16),))


@case(LM, CASES)
def greedy_sample_temperature(rng):
    def kernel(logits):
        return sample_greedy(logits, 0.7)
    return Call(kernel, (f32(rng, 2, 16),))


@case(LM, CASES)
def top_p(rng):
    return Call(top_p_filter, (f32(rng, 16),))


@case(LM, CASES)
def rwkv_layer_norm(rng):
    return Call(layer_norm, (f32(rng, 8), f32(rng, 8), f32(rng, 8)))


@case(LM, CASES)
def rwkv_time_mixing(rng):
    v = [f32(rng, 8) for _ in range(9)] + [f32(rng, 8, 8, scale=0.3) for _ in range(4)]
    return Call(time_mixing, tuple(v))


@case(LM, CASES)
def rwkv_channel_mixing(rng):
    v = [f32(rng, 8) for _ in range(4)] + [f32(rng, 16, 8, scale=0.3), f32(rng, 8, 8, scale=0.3),
                                           f32(rng, 8, 16, scale=0.3)]
    return Call(channel_mixing, (v[0], v[1], v[2], v[3], v[4], v[5], v[6]))


@case(LM, CASES)
def rwkv_model_step(rng):
    model = make_rwkv_model(rng)

    def kernel(token, state):
        return RWKV(model, token, state)
    return Call(kernel, (3, np.zeros((N_LAYER, 4, N_EMBD), dtype=np.float32)))


@case(LM, CASES)
def rwkv_model_state_list(rng):
    model = make_rwkv_model(rng)

    def kernel(token, state):
        probs, state = RWKV(model, token, state)
        return probs
    state = [np.zeros((4, N_EMBD), np.float32) + 0.1 for _ in range(N_LAYER)]
    return Call(kernel, (5, state))
