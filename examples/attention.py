"""Attention found by the compiler: plain picoGPT-style numpy, and torch, become one attention op.

The kernel below is written the way picoGPT writes multi-head attention: np.split of the qkv projection,
np.split into heads, a causal mask from np.tri, the max-subtracted exp / sum softmax, np.hstack of the heads
(in float16, the dtype the fused kernel multiplies in on the cube; picoGPT's `(1 - np.tri(T)) * -1e10` would
overflow float16, so the mask is `np.where(np.tri(T), 0, -inf)`: the same triangle). GE's `attention` pass finds softmax(q @ k^T / sqrt(d) + mask) @ v in each head, recognises the
triangle as causal=True, and merges the heads (slices of one tensor) into one batched attention reading q, k
and v as views of the projection. The fusion log says what it found; `disable_passes=["attention"]` turns
it off to compare. From torch (when installed), `torch.compile(model, backend="pyasc")` maps
F.scaled_dot_product_attention to the same op, and the pass finds attention written out by hand.

    PYTHONPATH=. python examples/attention.py
"""
import numpy as np

import pyasc


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def attention(q, k, v, mask):
    return softmax(q @ k.T / np.sqrt(q.shape[-1]) + mask) @ v


def mha(x, w_qkv, w_proj, n_head: int):
    """picoGPT's multi-head causal self-attention, unchanged numpy."""
    qkv = np.split(x @ w_qkv, 3, axis=-1)
    heads = [np.split(t, n_head, axis=-1) for t in qkv]
    causal = np.where(np.tri(x.shape[0], dtype=bool), 0, -np.inf).astype(x.dtype)
    out = np.hstack([attention(q, k, v, causal) for q, k, v in zip(*heads)])
    return out @ w_proj


def run(small: bool = False) -> None:
    rng = np.random.default_rng(0)
    t, d, n_head = (16, 32, 2) if small else (256, 256, 4)
    x = rng.standard_normal((t, d)).astype(np.float16)
    w_qkv = (rng.standard_normal((d, 3 * d)) / np.sqrt(d)).astype(np.float16)
    w_proj = (rng.standard_normal((d, d)) / np.sqrt(d)).astype(np.float16)
    want = mha(*(a.astype(np.float64) for a in (x, w_qkv, w_proj)), n_head)
    for label, options in (("attention found", {}), ("attention pass off", {"disable_passes": ["attention"]})):
        kernel = pyasc.kernel(mha, **options)
        art = kernel.compile(x, w_qkv, w_proj, n_head)
        out, prof = kernel.profile(x, w_qkv, w_proj, n_head)
        err = np.abs(out.astype(np.float64) - want).max()
        assert err < 2e-2 * max(1.0, np.abs(want).max()), err   # float16 against numpy in float64
        kernels = [k.template for k in art.kernels]
        print(f"{label}: {prof.launches} launch(es) ({kernels.count('attention')} fused attention), "
              f"{prof.time_s * 1e6:.2f} us simulated, GM {prof.gm_read_bytes + prof.gm_write_bytes:,} B, "
              f"max error {err:.1e} against float64 numpy")
        for line in art.stages["fusion_log"].splitlines():
            if line.startswith(("attention", "decomposed")):
                print("   ", line)
    run_torch(small)


def run_torch(small: bool) -> None:
    try:
        import torch
        import pyasc.torch as pt
    except ImportError:
        print("torch is not installed: the torch.compile part is skipped")
        return
    import math

    class Attention(torch.nn.Module):
        def forward(self, q, k, v):
            s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])        # written out by hand
            t = q.shape[-2]
            s = s.masked_fill(torch.triu(torch.ones(t, t, dtype=torch.bool), 1), float("-inf"))
            mine = torch.softmax(s, dim=-1) @ v
            return mine + torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

    shape = (1, 2, 16, 32) if small else (2, 4, 128, 64)
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(*shape, generator=g).half() for _ in range(3))   # float16: what the fused kernel takes
    compiled = torch.compile(Attention(), backend="pyasc", options={"chip": "tiny"} if small else {})
    with torch.no_grad(), pt.profile() as rec:
        out = compiled(q, k, v)
    want = Attention()(*(t.double() for t in (q, k, v)))
    torch.testing.assert_close(out.double(), want, rtol=2e-2, atol=2e-2)   # float16 against float64
    print(f"torch.compile: {rec.launches} launch(es), {rec.time_s * 1e6:.2f} us simulated")
    for art in rec.artifacts:
        for line in art.stages["fusion_log"].splitlines():
            if line.startswith(("attention", "decomposed")):
                print("   ", line)


if __name__ == "__main__":
    run()
