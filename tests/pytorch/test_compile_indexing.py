"""torch.compile(backend="pyasc"): indexing (embedding, gather, index_select, advanced indexing, scatters) and
torch's int64 index tensors, computed as int32 on the chip (checked at the boundary, widened back on output)."""
from __future__ import annotations

import copy
import warnings

import pytest

torch = pytest.importorskip("torch")

import pyasc.torch as pt  # noqa: E402

nn, F = torch.nn, torch.nn.functional
OPTIONS = {"chip": "tiny"}


def compiled(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="pyasc", options=OPTIONS)


def no_break(fn, *args):
    """fn compiled and called with no graph break allowed."""
    c = compiled(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pt.PyascGraphBreak)
        return c(*args)


def graph_ops() -> set[str]:
    return {n.op for g in pt.last_graphs() for s in g.subgraphs for n in s.graph.nodes}


class EmbedLinear(nn.Module):
    def __init__(self, vocab=10, d=8, classes=5, padding_idx=None):
        super().__init__()
        torch.manual_seed(0)
        self.emb, self.fc = nn.Embedding(vocab, d, padding_idx=padding_idx), nn.Linear(d, classes)

    def forward(self, ids):
        return self.fc(self.emb(ids))


IDS = torch.tensor([[1, 7, 3], [9, 0, 3]])  # int64, torch's default


def test_an_embedding_and_linear_compile_without_a_graph_break():
    model = EmbedLinear()
    with torch.no_grad():
        got = no_break(model, IDS)
        want = model(IDS)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert "take" in graph_ops() and all(not g.breaks for g in pt.last_graphs())


def test_cross_entropy_with_int64_targets_trains_like_eager():
    model = EmbedLinear(padding_idx=0)
    eager = copy.deepcopy(model)
    targets = torch.tensor([0, 4, -100, 2, 1, 3])  # -100: CrossEntropyLoss's ignore_index

    def loss_of(m):
        return lambda ids, t: F.cross_entropy(m(ids).reshape(-1, 5), t)

    loss = no_break(loss_of(model), IDS, targets)
    loss.backward()
    ref = loss_of(eager)(IDS, targets)
    ref.backward()
    torch.testing.assert_close(loss, ref, rtol=1e-5, atol=1e-6)
    for (name, p), q in zip(model.named_parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-6, msg=name)
    assert not model.emb.weight.grad[0].any()  # the padding row gets no gradient
    phases = [(s.phase, {n.op for n in s.graph.nodes}) for g in pt.last_graphs() for s in g.subgraphs]
    assert any(ph == "forward" and "take_along_axis" in ops for ph, ops in phases)  # gather of the targets
    assert any(ph == "backward" and "scatter_rows" in ops for ph, ops in phases)  # embedding_dense_backward


X = torch.randn(4, 6, generator=torch.Generator().manual_seed(0))
#: name -> (function of X and its index tensors, the index tensors), all in one compiled function (one pyasc
#: graph); cross entropy's test covers gather along the last dim and scatter of a value (its backward)
INDEXING = {
    "gather_narrower": (lambda x, i: torch.gather(x, 0, i), (torch.tensor([[3, 0, 1], [1, 1, 2]]),)),
    "index_select": (lambda x, i: torch.index_select(x, 1, i), (torch.tensor([5, 0, 2, 2]),)),
    "index_after_slice": (lambda x, i: x[:, i], (torch.tensor([[4, -2], [0, 1]]),)),
    "index_leading_pair": (lambda x, i, j: x[i, j], (torch.tensor([0, 3, -1]), torch.tensor([[5], [0]]))),
    "index_put_accumulate": (lambda x, i, v: x.index_put((i,), v, accumulate=True),
                             (torch.tensor([1, 1, 3]), torch.ones(3, 6))),
    "scatter_src": (lambda x, i, s: x.scatter(1, i, s), (torch.tensor([[0, 5], [1, 2], [2, 3], [4, 0]]), -X[:, :2])),
    "scatter_add": (lambda x, i, s: x.scatter_add(0, i, s), (torch.tensor([[0, 1, 2, 3, 0, 1]]), X[:1])),
}


def test_indexing_ops_match_eager():
    def every(x, *flat):
        out, k = [], 0
        for fn, args in INDEXING.values():
            out.append(fn(x, *flat[k:k + len(args)]))
            k += len(args)
        return tuple(out)

    flat = [a for _, args in INDEXING.values() for a in args]
    with torch.no_grad():
        got = no_break(every, X, *flat)
    for name, g, w in zip(INDEXING, got, every(X, *flat)):
        torch.testing.assert_close(g, w, rtol=1e-6, atol=1e-6, msg=name)
    assert {"take", "take_along_axis", "scatter_rows"} <= graph_ops()


def test_int64_results_come_back_as_int64():
    logits = torch.randn(3, 5, generator=torch.Generator().manual_seed(1))
    labels = torch.tensor([1, -100, 4])  # where on the labels: an int64 input, intermediate and output
    best, kept = no_break(lambda x, t: (x.argmax(-1), torch.where(t != -100, t, 0)), logits, labels)
    assert best.dtype == torch.int64 and torch.equal(best, logits.argmax(-1))
    assert kept.dtype == torch.int64 and torch.equal(kept, torch.tensor([1, 0, 4]))


def test_an_index_outside_int32_runs_that_call_in_eager_torch_and_says_why():
    def f(x, i):
        return (x * 2)[i % 4] + i.to(torch.float32)[:, None]

    c = compiled(f)
    small = torch.tensor([2, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error", pt.PyascGraphBreak)
        torch.testing.assert_close(c(X, small), f(X, small))
    big = torch.tensor([2**33 + 1, 1])  # int32 would wrap 2**33 + 1 to 1
    with pytest.warns(pt.PyascGraphBreak) as caught:
        got = c(X, big)
    assert torch.equal(got, f(X, big))  # exact: torch computed it in int64
    (message,) = [str(w.message) for w in caught if w.category is pt.PyascGraphBreak]
    assert message.startswith("pyasc: a call of pyasc kernel fx_")
    assert ("its torch.int64 input arg1_1 holds values in [1, 8589934593], outside torch.int32, the chip's "
            "widest integer) runs in eager PyTorch (graph break) at File ") in message


def test_indexing_pyasc_does_not_lower_is_a_graph_break_that_says_why():
    def f(x3, i, j, k):
        return x3[i, :, j], X[k + 1]

    args = (torch.randn(3, 4, 5), torch.tensor([0, 1]), torch.tensor([2, 3]), torch.tensor([0, 2]))
    with pytest.warns(pt.PyascGraphBreak) as caught:
        got = compiled(f)(*args)
    for g, w in zip(got, f(*args)):
        torch.testing.assert_close(g, w)
    reasons = [str(w.message).split(" runs in eager PyTorch")[0] for w in caught]
    assert ("pyasc: aten.index.Tensor (arguments the table cannot express (index tensors apart (torch moves the "
            "indexed dims first; pyasc lowers adjacent ones)))") in reasons
    assert ("pyasc: aten.add.Tensor (arguments the table cannot express (int64 arithmetic (computed in int32 on "
            "the chip, its values could wrap)))") in reasons
