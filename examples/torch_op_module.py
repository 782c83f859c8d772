"""A pyasc kernel registered as a torch operator (`torch.ops.gallery.bias_gelu`) inside an nn.Module,
compared with the same module written in eager PyTorch. Needs the torch extra: `pip install -e '.[torch]'`
in the pyasc checkout.

    PYTHONPATH=. python examples/torch_op_module.py
"""
import torch

import pyasc
import pyasc.torch


@pyasc.kernel
def bias_gelu(x, b):
    return pyasc.gelu(x + b)


bias_gelu_op = pyasc.torch.custom_op("gallery::bias_gelu", bias_gelu)


class FeedForward(torch.nn.Module):
    def __init__(self, d: int, use_pyasc: bool):
        super().__init__()
        torch.manual_seed(0)
        self.up = torch.nn.Linear(d, 4 * d)
        self.use_pyasc = use_pyasc

    def forward(self, x):
        h = x @ self.up.weight.T
        if self.use_pyasc:
            return torch.ops.gallery.bias_gelu(h, self.up.bias)
        return torch.nn.functional.gelu(h + self.up.bias, approximate="tanh")  # pyasc.gelu is the tanh form


def run(small: bool = False) -> None:
    d = 16 if small else 256
    x = torch.randn(8, d)
    with torch.no_grad():  # the op has no backward registered: inference only
        ours, eager = FeedForward(d, True)(x), FeedForward(d, False)(x)
    torch.testing.assert_close(ours, eager, rtol=1e-5, atol=1e-5)
    print(f"{bias_gelu_op.qualname}{bias_gelu_op.schema}: module output matches eager PyTorch")


if __name__ == "__main__":
    run()
