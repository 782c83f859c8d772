"""torch.compile(backend="pyasc"): the FX frontend op by op against eager PyTorch, an MLP and a
transformer block, graph breaks (reported once), gradients through the eager backward, profiles."""
from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

import pyasc.torch as pt  # noqa: E402

nn, F = torch.nn, torch.nn.functional
OPTIONS = {"chip": "tiny"}


def compile_pyasc(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="pyasc", options=OPTIONS)


def run(fn, *args):
    """(compiled result, eager result, the lowered graphs) with no graph break allowed."""
    compiled = compile_pyasc(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pt.PyascGraphBreak)
        with torch.no_grad():
            got = compiled(*args)
    with torch.no_grad():
        want = fn(*args)
    return got, want, pt.last_graphs()


G = torch.Generator().manual_seed(0)
X = torch.randn(4, 24, generator=G)
Y = torch.randn(4, 24, generator=G)
P = torch.rand(4, 24, generator=G) + 0.5

OPS = {
    "add_alpha": lambda x, y: torch.add(x, y, alpha=2.0),
    "sub_mul_div": lambda x, y: (x - y) * x / (y.abs() + 1.0),
    "rsub": lambda x, y: 1.0 - x,
    "neg_exp": lambda x, y: torch.exp(-x),
    "log_sqrt_rsqrt": lambda x, y: torch.log(x.abs() + 1) + torch.sqrt(x.abs()) + torch.rsqrt(x.abs() + 1),
    "trig": lambda x, y: torch.sin(x) + torch.cos(y) + torch.tanh(x),
    "activations": lambda x, y: torch.sigmoid(x) + F.relu(y) + F.silu(x),
    "gelu_exact": lambda x, y: F.gelu(x),
    "gelu_tanh": lambda x, y: F.gelu(x, approximate="tanh"),
    "pow_maximum": lambda x, y: torch.maximum(x, y) ** 2 + torch.minimum(x, y),
    "where_compare": lambda x, y: torch.where(x > y, x, y * 0.5),
    "sum_mean_amax": lambda x, y: x.sum(-1, keepdim=True) + y.mean(0) + x.amax(-1, keepdim=True),
    "softmax": lambda x, y: torch.softmax(x, dim=-1),
    "log_softmax": lambda x, y: torch.log_softmax(y, dim=1),
    "layer_norm": lambda x, y: F.layer_norm(x, (24,), y[0], y[1]),
    "matmul_t": lambda x, y: x @ y.T,
    "linear": lambda x, y: F.linear(x, y[:3], y[0, :3]),
    "permute_reshape": lambda x, y: x.reshape(4, 4, 6).permute(2, 0, 1).reshape(6, 16) * 2,
    "unsqueeze_expand": lambda x, y: x.unsqueeze(0).expand(3, 4, 24).sum(0),
    "slice_select": lambda x, y: x[:, 2:10] * y[1, 2:10] + x[:, -1:],
    "chunk": lambda x, y: sum(x.chunk(3, dim=-1)),
    "cast": lambda x, y: (x * 4).to(torch.int32).to(torch.float32),
}


@pytest.mark.parametrize("name", list(OPS))
def test_an_aten_op_lowers_and_matches_eager(name):
    got, want, graphs = run(OPS[name], X, Y)
    torch.testing.assert_close(got, want, rtol=2e-5, atol=2e-5)
    assert graphs and all(not g.breaks for g in graphs)
    assert sum(len(g.subgraphs) for g in graphs) >= 1


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc1, self.fc2 = nn.Linear(32, 64), nn.Linear(64, 16)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class Block(nn.Module):
    """A pre-norm transformer block: LayerNorm, one-head softmax attention, LayerNorm, GELU MLP."""

    def __init__(self, d=32):
        super().__init__()
        torch.manual_seed(0)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        att = torch.softmax(q @ k.transpose(-2, -1) * (x.shape[-1] ** -0.5), dim=-1)
        x = x + self.proj(att @ v)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def test_mlp_matches_eager_and_runs_as_one_fused_kernel():
    model, x = MLP(), torch.randn(8, 32)
    got, want, graphs = run(model, x)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert len(graphs) == 1 and len(graphs[0].subgraphs) == 1
    assert "@" in graphs[0].subgraphs[0].source and "pyasc.relu" in graphs[0].subgraphs[0].source


def test_transformer_block_matches_eager_and_the_profile_shows_its_kernels():
    model, x = Block(), torch.randn(2, 8, 32)
    compiled = compile_pyasc(model)
    with torch.no_grad(), pt.profile() as rec:
        got = compiled(x)
        want = model(x)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert len(rec.calls) == 1  # the whole block lowers to one pyasc graph
    name, prof = rec.calls[0]
    assert prof.launches >= 4 and prof.time_s > 0 and rec.time_s == prof.time_s
    (art,) = rec.artifacts
    assert len(art.kernels) >= 4 and any(k.core_type == "aic" for k in art.kernels)  # matmuls on the cube
    assert art.stages["source"].startswith("def fx_") and "pyasc.layer_norm(" in art.stages["source"]
    assert "launch(es)" in rec.summary() and name in rec.summary()


def test_an_unsupported_op_is_a_graph_break_reported_once():
    def f(x):
        return torch.cumsum(torch.exp(x), dim=-1) * 2.0

    compiled = compile_pyasc(f)
    with pytest.warns(pt.PyascGraphBreak) as caught:
        with torch.no_grad():
            got = compiled(X)
    torch.testing.assert_close(got, f(X), rtol=1e-5, atol=1e-5)
    messages = [str(w.message) for w in caught if w.category is pt.PyascGraphBreak]
    assert len(messages) == 1
    assert messages[0].startswith("pyasc: aten.cumsum.default (not in pyasc's aten table) runs in eager PyTorch "
                                  "(graph break) at File ")
    assert "test_compile_backend.py" in messages[0] and "in f" in messages[0]
    assert [len(g.subgraphs) for g in pt.last_graphs()] == [2]  # exp before, the multiply after
    with warnings.catch_warnings():
        warnings.simplefilter("error", pt.PyascGraphBreak)  # the same op and place: not reported again
        torch._dynamo.reset()
        with torch.no_grad():
            torch.compile(f, backend="pyasc", options=OPTIONS)(X)


def test_a_float64_graph_falls_back_with_the_dtype_named():
    def f(x):
        return x * 3.0 + 1.0

    with pytest.warns(pt.PyascGraphBreak, match=r"aten.mul.Tensor \(dtype torch.float64 \(the NPU has float16"):
        got = compile_pyasc(f)(X.double())
    torch.testing.assert_close(got, f(X.double()))


def test_training_forward_on_pyasc_backward_in_eager_gives_eager_gradients():
    model, ref = MLP(), MLP()
    x = torch.randn(8, 32)
    compile_pyasc(model)(x).square().sum().backward()
    ref(x).square().sum().backward()
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-4, msg=name)


def test_options_reach_the_pyasc_kernels():
    got, want, graphs = run(lambda x, y: torch.exp(x) + y, X, Y)
    assert graphs[0].subgraphs[0].kernel.options.chip_name == "tiny"


def test_a_size_change_recompiles_per_shape_instead_of_breaking_the_graph():
    def f(x, w):
        return torch.relu(x @ w + 1.0).sum(-1)

    compiled, w = compile_pyasc(f), torch.randn(16, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pt.PyascGraphBreak)  # dynamo's symbolic sizes must not become breaks
        for n in (2, 3, 5, 3):
            x = torch.randn(n, 16)
            with torch.no_grad():
                torch.testing.assert_close(compiled(x, w), f(x, w), rtol=1e-5, atol=1e-5)
            graphs = pt.last_graphs()
            assert [len(g.subgraphs) for g in graphs] == [1] and not graphs[0].breaks


def test_dumps_and_the_disk_cache_work_for_compiled_models(tmp_path, monkeypatch, disk_cache):
    monkeypatch.setenv("PYASC_DUMP_DIR", str(tmp_path / "dumps"))
    model, x = MLP(), torch.randn(4, 32)
    with torch.no_grad():
        compile_pyasc(model)(x)
        first = pt.last_graphs()[0].subgraphs[0].kernel.cache_info()
        compile_pyasc(model)(x)  # a fresh torch.compile: a new pyasc kernel object, same generated source
        second = pt.last_graphs()[0].subgraphs[0].kernel.cache_info()
    assert (first.misses, first.disk_hits) == (1, 0)
    assert (second.misses, second.disk_hits) == (0, 1)
    dumped = [p.name for p in (tmp_path / "dumps").rglob("*") if p.is_file()]
    assert any("source" in n for n in dumped) and any(n.endswith(".dot") for n in dumped)
