"""Training a small transformer with torch.compile(backend="pyasc"): forward and backward both run as
pyasc kernels on the emulated NPU, and the loss curve matches eager PyTorch's step for step.
Needs the torch extra: `pip install -e '.[torch]'` from the checkout (or `pip install torch==2.13.0`).

The task is synthetic: predict the running mean of a random token sequence (a causal task, so the
model needs its causal attention). Two copies of the model start from the same weights; one trains
eagerly, the other through pyasc; both print their loss at every step.

    PYTHONPATH=. python examples/torch_train.py
"""
import copy

import torch

import pyasc.torch  # registers the "pyasc" backend

nn, F = torch.nn, torch.nn.functional


class TinyTransformer(nn.Module):
    """Input projection, one pre-norm block (causal multi-head attention, GELU MLP), output head."""

    def __init__(self, d_in: int, d: int, heads: int):
        super().__init__()
        torch.manual_seed(0)
        self.heads = heads
        self.embed, self.head = nn.Linear(d_in, d), nn.Linear(d, d_in)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        h = self.embed(x)
        B, T, C = h.shape
        q, k, v = self.qkv(self.ln1(h)).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        h = h + self.proj(att.transpose(1, 2).reshape(B, T, C))
        h = h + self.fc2(F.gelu(self.fc1(self.ln2(h))))
        return self.head(h)


def batch(step: int, size: int, tokens: int, d_in: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(step)
    x = torch.randn(size, tokens, d_in, generator=g)
    target = x.cumsum(1) / torch.arange(1, tokens + 1).view(1, tokens, 1)  # the running mean so far
    return x, target


def run(small: bool = False) -> None:
    d_in, d, heads, tokens, size, steps = (4, 8, 2, 4, 2, 3) if small else (16, 64, 4, 32, 8, 20)
    chip = "tiny" if small else "910b"
    model = TinyTransformer(d_in, d, heads)
    eager = copy.deepcopy(model)
    compiled = torch.compile(model, backend="pyasc", options={"chip": chip})
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    eager_opt = torch.optim.Adam(eager.parameters(), lr=1e-2)
    print(f"step  pyasc loss   eager loss   (d={d}, {heads} heads, {tokens} tokens, batch {size}, chip {chip})")
    for step in range(steps):
        x, target = batch(step, size, tokens, d_in)
        with pyasc.torch.profile() as prof:
            loss = F.mse_loss(compiled(x), target)
            opt.zero_grad()
            loss.backward()
        opt.step()
        ref = F.mse_loss(eager(x), target)
        eager_opt.zero_grad()
        ref.backward()
        eager_opt.step()
        print(f"{step:4d}  {loss.item():.6f}     {ref.item():.6f}")
        assert abs(loss.item() - ref.item()) <= 2e-3 * abs(ref.item()), (loss.item(), ref.item())
    fwd, bwd = prof.phase("forward"), prof.phase("backward")
    print(f"last step on the emulator: forward {fwd.launches} launches, {fwd.time_s * 1e6:.1f} us; "
          f"backward {bwd.launches} launches, {bwd.time_s * 1e6:.1f} us (simulated)")


if __name__ == "__main__":
    run()
