"""torch.compile(backend="pyasc"): the FX frontend op by op against eager PyTorch, an MLP and a
transformer block, graph breaks (reported once), profiles. Training is in test_compile_training.py."""
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
    "clamp_hardtanh_leaky": lambda x, y: x.clamp(-0.5, 0.7) + F.hardtanh(y) + F.leaky_relu(x, 0.2) + x.clamp(min=0),
    # these reach pyasc as core-aten decompositions (var_mean, silu, rms_norm, softplus, ... -> primitive ops)
    "var_std": lambda x, y: torch.var(x, dim=-1, keepdim=True) + torch.std(y, dim=0),
    "hardswish_softplus_mish": lambda x, y: F.hardswish(x) + F.softplus(y) + F.mish(x),
    "rms_norm": lambda x, y: F.rms_norm(x, (24,), y[0], eps=1e-6),
    "logsumexp": lambda x, y: torch.logsumexp(x, dim=-1),
    "masked_fill": lambda x, y: x.masked_fill(y > 0.5, -1.0),
    "layer_norm_plain": lambda x, y: F.layer_norm(x, (24,)),
    "linear_no_bias": lambda x, y: F.linear(x, y[:3]),
    "logical_any": lambda x, y: torch.where(torch.logical_or((x > 0).logical_and(y < 0).any(-1, keepdim=True),
                                                             torch.logical_not(x > 1)), x, y),
    "bitwise_bool": lambda x, y: torch.where(((x > 0) & (y > 0)) | ~(x > y) ^ (y < -1), x, y),
    "floor_div_remainder": lambda x, y: torch.div(x, 0.3, rounding_mode="floor") + torch.remainder(y, 0.7) + 2 ** x,
    # decomposed into matmuls, a masked ("safe") softmax, logical ops and full_like
    "sdpa": lambda x, y: F.scaled_dot_product_attention(x.reshape(1, 2, 4, 12), y.reshape(1, 2, 4, 12),
                                                        x.reshape(1, 2, 4, 12) * 0.5),
}


INT_OPS = {
    "int_floor_div_remainder": lambda a, b: a // b + a % b - torch.remainder(a, 5) + (a & b) - (a | 3) + (~a ^ b),
}


@pytest.mark.parametrize("name", list(INT_OPS))
def test_an_int32_aten_op_lowers_and_matches_eager(name):
    a = torch.randint(-50, 50, (4, 24), dtype=torch.int32, generator=G)
    b = torch.randint(1, 9, (4, 24), dtype=torch.int32, generator=G)
    got, want, graphs = run(INT_OPS[name], a, b)
    assert torch.equal(got, want)
    assert graphs and all(not g.breaks for g in graphs) and graphs[0].subgraphs


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
    ops = [n.op for n in graphs[0].subgraphs[0].graph.nodes]
    assert ops.count("matmul") == 2 and "relu" in ops  # the FX graph, built through the op registry
    assert "torch.ops.aten.relu" in graphs[0].subgraphs[0].source  # the FX code: the dump's source stage
    relu = next(n for n in graphs[0].subgraphs[0].graph.nodes if n.op == "relu")
    assert relu.loc.filename == __file__ and "F.relu(self.fc1(x))" in relu.loc.source_line()  # the model's line


def test_the_fx_frontend_writes_nothing_to_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("PYASC_CACHE_DIR", str(tmp_path / "cache"))  # PYASC_CACHE=0 in the suite: no disk cache
    model, x = MLP(), torch.randn(4, 32)
    got, want, graphs = run(model, x)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert not (tmp_path / "cache").exists()


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
    assert "torch.ops.aten.native_layer_norm.default(" in art.stages["source"]  # the FX code it came from
    assert "layer_norm(" in art.stages["graph"] and "softmax(" in art.stages["graph"]
    assert "launch(es)" in rec.summary() and name in rec.summary()


def test_an_unsupported_op_is_a_graph_break_reported_once():
    def f(x):
        return torch.cummax(torch.exp(x), dim=-1).values * 2.0

    compiled = compile_pyasc(f)
    with pytest.warns(pt.PyascGraphBreak) as caught:
        with torch.no_grad():
            got = compiled(X)
    torch.testing.assert_close(got, f(X), rtol=1e-5, atol=1e-5)
    messages = [str(w.message) for w in caught if w.category is pt.PyascGraphBreak]
    assert len(messages) == 1
    assert messages[0].startswith("pyasc: aten.cummax.default (not in pyasc's aten table) runs in eager PyTorch "
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

    with pytest.warns(pt.PyascGraphBreak) as caught:
        got = compile_pyasc(f)(X.double())
    torch.testing.assert_close(got, f(X.double()))
    reason = "(dtype torch.float64 (the NPU has float16, float32, int8, int16, int32, uint8, bool))"
    assert [str(w.message).split(" runs in")[0] for w in caught] == [
        f"pyasc: aten.mul.Tensor {reason}", f"pyasc: aten.add.Tensor {reason}"]


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


def test_a_result_dtype_pyasc_promotes_differently_is_cast_back_to_torchs():
    def f(x, s):
        return x * s + 1  # torch: float16 * a 0-d float32 tensor stays float16; numpy rules give float32

    x, s = torch.randn(4, 8).half(), torch.tensor(2.5)
    got, want, graphs = run(f, x, s)
    assert got.dtype == torch.float16
    torch.testing.assert_close(got, want, rtol=2e-3, atol=2e-3)
    casts = [n for n in graphs[0].subgraphs[0].graph.nodes if n.op == "cast"]
    assert [c.attrs["dtype"] for c in casts] == ["float16"]  # s to x's dtype, as torch computes


def test_a_node_pyascs_inference_rejects_runs_eagerly_with_pyascs_reason():
    def g(x):
        return torch.sign(x > 0) | (x < -1)  # torch.sign of a bool tensor: pyasc's sign takes numbers only

    with pytest.warns(pt.PyascGraphBreak) as caught:
        got = compile_pyasc(g)(X)
    assert torch.equal(got, g(X))
    (message,) = [str(w.message) for w in caught]
    assert message.startswith("pyasc: aten.sign.default (arguments the table cannot express (")
    assert "sign: does not accept dtype bool" in message
    where = message.split(" runs in eager PyTorch (graph break) at ")[1]
    assert where.startswith("File ") and "test_compile_backend.py" in where and "in g" in where


def test_an_int8_product_wraps_like_torch():
    def g(x):
        return x.to(torch.int8) * 300  # torch: int8 arithmetic (300 wraps like the product does)

    x = torch.randint(-3, 3, (4, 8)).float()
    got, want, graphs = run(g, x)
    assert got.dtype == torch.int8 and torch.equal(got, want)


def test_a_registered_pyasc_op_is_inlined_into_the_kernel_around_it():
    import torch_kernels as K  # the kernels registered as torch ops (tests/pytorch/torch_kernels.py)

    pt.custom_op("pyasc_inline::bias_gelu", K.bias_gelu)
    pt.custom_op("pyasc_inline::sum_diff", K.split_sum_diff)

    def f(x, b):
        s, d = torch.ops.pyasc_inline.sum_diff(x, x)
        return torch.ops.pyasc_inline.bias_gelu(torch.exp(x) + s, b, 0.5) * 2 + d

    x, b = torch.randn(4, 16), torch.randn(16)
    got, want, graphs = run(f, x, b)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    (sub,) = graphs[0].subgraphs  # one pyasc kernel: the two ops' graphs spliced in, and the aten ops between them
    assert "pyasc_inline" not in graphs[0].module.code  # no torch call of the ops is left
    ops = [n.op for n in sub.graph.nodes]
    assert "gelu" in ops and "exp" in ops and ops.count("add") >= 3 and "sub" in ops


def test_a_mutating_pyasc_op_stays_a_torch_call():
    import torch_kernels as K  # the kernels registered as torch ops (tests/pytorch/torch_kernels.py)

    pt.custom_op("pyasc_inline::scale_", K.scale_in_place, mutates_args=("x",))

    def f(x):
        y = x * 1.0
        torch.ops.pyasc_inline.scale_(y, 3.0)
        return y + 1.0

    x = torch.randn(4, 8)
    with pytest.warns(pt.PyascGraphBreak) as caught:
        got = compile_pyasc(f)(x)
    torch.testing.assert_close(got, x * 3 + 1)
    (message,) = [str(w.message) for w in caught]
    assert message.startswith("pyasc: pyasc_inline.scale_.default (it mutates its arguments; pyasc kernels are "
                              "functional) runs in eager PyTorch (graph break) at File ")


def test_a_table_op_with_arguments_pyasc_cannot_express_is_a_reported_break():
    def f(x):
        return torch.div(x * 2.0, 0.3, rounding_mode="trunc") + 1.0

    with pytest.warns(pt.PyascGraphBreak) as caught:
        got = compile_pyasc(f)(X)
    torch.testing.assert_close(got, f(X))
    (message,) = [str(w.message) for w in caught]
    assert message.startswith("pyasc: aten.div.Tensor_mode (arguments the table cannot express "
                              "(rounding_mode='trunc')) runs in eager PyTorch (graph break) at File ")


def test_a_linear_on_a_3d_input_reads_it_unflattened():
    lin = nn.Linear(32, 48)
    x = torch.randn(2, 8, 32)
    got, want, graphs = run(lambda t: F.gelu(lin(F.layer_norm(t, (32,)))), x)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    (sub,) = graphs[0].subgraphs
    assert "reshape" not in [n.op for n in sub.graph.nodes]  # the matmul takes the 3-D input itself
    art = sub.kernel.compile()
    assert all(k.template != "datamove" for k in art.kernels)  # no copy kernel for the views aten added
