"""torch.compile(model, backend="pyasc"): a transformer block captured by dynamo, lowered from aten ops to
pyasc kernels and run on the emulator; the profile lists the fused kernels. Needs the torch extra:
`pip install -e '.[torch]'` in the pyasc checkout.

    PYTHONPATH=. python examples/torch_compile_model.py
"""
import torch

import pyasc.torch  # registers the "pyasc" backend


class Block(torch.nn.Module):
    def __init__(self, d: int):
        super().__init__()
        torch.manual_seed(0)
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc1, self.fc2 = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x):
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        att = torch.softmax(q @ k.transpose(-2, -1) * (x.shape[-1] ** -0.5), dim=-1)
        x = x + self.proj(att @ v)
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


def run(small: bool = False) -> None:
    d, tokens = (32, 8) if small else (128, 64)
    model, x = Block(d), torch.randn(2, tokens, d)
    compiled = torch.compile(model, backend="pyasc", options={"chip": "tiny" if small else "910b"})
    with torch.no_grad():
        with pyasc.torch.profile() as prof:
            out = compiled(x)
        ref = model(x)
    err = (out - ref).abs().max().item()
    assert err < 1e-4, err
    print(f"transformer block: {prof.launches} device launches, {prof.time_s * 1e6:.2f} us simulated, "
          f"max abs err vs eager {err:.2e}")
    print(prof.summary())


if __name__ == "__main__":
    run()
