"""torch.compile(backend="pyasc") on a small conv net: aten convolution, max / avg pooling and inference batch
norm become pyasc's conv2d / pools / batch_norm (GE folds the norms into the convs), with no graph break."""
from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

import pyasc.torch as pt  # noqa: E402

nn = torch.nn


class ConvNet(nn.Module):
    def __init__(self, c: int = 8):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(3, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.c2, self.b2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.c3 = nn.Conv2d(c, c, 1, stride=2)
        self.pool, self.avg = nn.MaxPool2d(3, 2, 1), nn.AvgPool2d(2, ceil_mode=True)

    def forward(self, x):
        y = self.pool(torch.relu(self.b1(self.c1(x))))
        y = torch.relu(self.b2(self.c2(y)) + y)
        return self.avg(self.c3(y))


def test_a_conv_net_compiles_whole_and_matches_eager():
    torch.manual_seed(0)
    model = ConvNet().eval()
    for bn in (model.b1, model.b2):
        bn.running_mean.uniform_(-0.2, 0.2)
        bn.running_var.uniform_(0.5, 1.5)
        bn.weight.data.uniform_(0.5, 1.5)
        bn.bias.data.uniform_(-0.2, 0.2)
    x = torch.randn(1, 3, 11, 9)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="pyasc", options={"chip": "tiny"})
    with warnings.catch_warnings(), torch.no_grad(), pt.profile() as rec:
        warnings.simplefilter("error", pt.PyascGraphBreak)
        got = compiled(x)
        want = model(x)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    (art,) = rec.artifacts
    ops = [n.op for n in art.graph.nodes]
    assert "batch_norm" not in ops and ops.count("fused_conv2d") + ops.count("conv2d") == 3
    templates = [k.template for k in art.kernels]
    assert templates.count("conv_launch") == 3 and templates.count("pool") == 2
