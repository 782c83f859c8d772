"""torch.compile(backend="pyasc") training: AOTAutograd's forward and backward graphs both compiled by pyasc.

Tolerances: every gradient of every step within 2e-3 of eager PyTorch relative to the gradient's largest
element (the issue's target), over 5 SGD steps on the tiny chip; the compiled and eager models start
from the same weights and take their own steps, so differences would compound if they were real.
"""
from __future__ import annotations

import copy
import warnings

import pytest

torch = pytest.importorskip("torch")

import pyasc.torch as pt  # noqa: E402

nn, F = torch.nn, torch.nn.functional
OPTIONS = {"chip": "tiny"}
REL = 2e-3


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class Block(nn.Module):
    """A pre-norm transformer block with multi-head scaled_dot_product_attention."""

    def __init__(self, d=16, heads=2, causal=True):
        super().__init__()
        torch.manual_seed(0)
        self.heads, self.causal = heads, causal
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def relative(got, want):
    return float((got - want).abs().max() / want.abs().max().clamp_min(1e-12))


def train_both(model, make_batch, steps=5, lr=0.05):
    """Train a compiled copy and an eager copy side by side; return the worst relative gradient error, the
    losses, the lowered graphs and the profile of the last step's forward and backward. No graph break is
    allowed."""
    torch._dynamo.reset()
    eager = copy.deepcopy(model)
    compiled = torch.compile(model, backend="pyasc", options=OPTIONS)
    opt, ref_opt = torch.optim.SGD(model.parameters(), lr=lr), torch.optim.SGD(eager.parameters(), lr=lr)
    worst, losses = 0.0, []
    with warnings.catch_warnings():
        warnings.simplefilter("error", pt.PyascGraphBreak)
        for step in range(steps):
            x, target = make_batch(step)
            with pt.profile() as rec:
                loss = F.mse_loss(compiled(x), target)
                opt.zero_grad()
                loss.backward()
            ref = F.mse_loss(eager(x), target)
            ref_opt.zero_grad()
            ref.backward()
            for (name, p), q in zip(model.named_parameters(), eager.parameters()):
                err = relative(p.grad, q.grad)
                assert err <= REL, f"step {step}, {name}: gradient off by {err:.2e} relative"
                worst = max(worst, err)
            losses.append((loss.item(), ref.item()))
            opt.step(), ref_opt.step()
    return worst, losses, pt.last_graphs(), rec


def batches(shape, out):
    g = torch.Generator().manual_seed(1)
    data = [(torch.randn(*shape, generator=g), torch.randn(*out, generator=g)) for _ in range(5)]
    return lambda step: data[step]


def test_an_mlp_trains_with_forward_and_backward_on_pyasc():
    worst, losses, graphs, _ = train_both(MLP(), batches((8, 16), (8, 8)))
    assert [g.subgraphs[0].phase for g in graphs] == ["forward", "backward"]
    assert all(len(g.subgraphs) == 1 and not g.breaks for g in graphs)  # each graph one pyasc kernel
    backward_ops = {n.op for n in graphs[1].subgraphs[0].graph.nodes}
    assert {"matmul", "sum", "where"} <= backward_ops  # the weight gradients, the bias sums, relu's mask
    for got, want in losses:
        assert abs(got - want) <= REL * abs(want)


def test_a_transformer_block_with_causal_sdpa_trains_on_pyasc():
    worst, losses, graphs, rec = train_both(Block(), batches((2, 8, 16), (2, 8, 16)))
    assert [g.subgraphs[0].phase for g in graphs] == ["forward", "backward"]
    assert all(len(g.subgraphs) == 1 and not g.breaks for g in graphs)
    forward_ops = [n.op for n in graphs[0].subgraphs[0].graph.nodes]
    # attention as the registry's attention op (causal), the log-sum-exp the backward is handed beside it
    assert forward_ops.count("attention") == 1 and "log" in forward_ops
    for got, want in losses:
        assert abs(got - want) <= REL * abs(want)
    # the profile of a training step: the backward's kernels beside the forward's
    forward, backward = rec.phase("forward"), rec.phase("backward")
    assert len(forward.calls) == 1 and len(backward.calls) == 1
    assert forward.launches > 0 and backward.launches > 0 and backward.time_s > 0
    assert rec.launches == forward.launches + backward.launches and "(backward)" in rec.summary()


@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
def test_sdpa_gradients_are_pyascs_derived_backward(causal):
    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(1, 2, 6, 8, generator=g, requires_grad=True) for _ in range(3))
    torch._dynamo.reset()
    compiled = torch.compile(f, backend="pyasc", options=OPTIONS)
    ct = torch.randn(1, 2, 6, 8, generator=g)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pt.PyascGraphBreak)
        out = compiled(q, k, v)
        grads = torch.autograd.grad(out, (q, k, v), ct)
    want = f(q, k, v)
    want_grads = torch.autograd.grad(want, (q, k, v), ct)
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
    for got, ref in zip(grads, want_grads):
        torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-5)
    backward = pt.last_graphs()[1].subgraphs[0]
    assert backward.phase == "backward"
    assert "_scaled_dot_product_flash_attention_for_cpu_backward" in backward.source
