"""The attention pass on the graphs numpy code builds: each spelling before (the ops the frontend made) and after
(the exact graph the pass leaves), the fusion log's line for every match and near miss, the result unchanged
(the reference backend runs the optimised graph), and the switches: disable_passes, opt_level, the knob, the
capacity function's refusal (then the graph is left as it was, or decomposed when written as pyasc.attention)."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import pyasc
from pyasc import dtypes, ge
from pyasc.ge.capacity import CapacityVerdict
from pyasc.ge.decisions import DecisionKind
from pyasc.ir import Graph, TensorType, format_graph
from conftest import assert_close

try:
    import scipy.special as scipy_special
except ImportError:  # optional: only the scipy spelling needs it
    scipy_special = None

rng = np.random.default_rng(0)
T, D = 8, 16


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def compiled(fn, *args, **options):
    """(the frontend's op counts, the graph after the attention pass or None, the pass's fusion-log lines)."""
    kernel = pyasc.kernel(fn, chip="tiny", backend="reference", **options)
    art = kernel.compile(*args)
    after = next((text for name, text in art.stages.items() if name.endswith(".attention")), None)
    lines = [d.render() for d in art.fusion_decisions if d.rule in ("attention", "attention_heads")]
    got, want = kernel(*args), fn(*args)
    got, want = (got[0], want[0]) if isinstance(got, tuple) else (got, want)
    assert got.dtype.name == dtypes.narrow(want.dtype)  # numpy 2 keeps np.sqrt's float64 scalars strong
    assert_close(got, want.astype(got.dtype))  # the rewrite keeps the meaning
    return ops_of(art.stages["graph"]), after, lines


def ops_of(text: str) -> Counter:
    return Counter(line.split("= ")[1].split("(")[0].split(" ")[0] for line in text.splitlines() if " = " in line)


# ---- the spellings --------------------------------------------------------------------------------


def softmax_np(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def pico_mha(x, n_head=2):
    """picoGPT: split the qkv projection, split heads, -1e10 causal mask, numpy softmax, hstack."""
    qkv = np.split(x, 3, axis=-1)
    heads = [np.split(t, n_head, axis=-1) for t in qkv]
    causal = (1 - np.tri(x.shape[0], dtype=x.dtype)) * -1e10
    out = [softmax_np(q @ k.T / np.sqrt(q.shape[-1]) + causal) @ v for q, k, v in zip(*heads)]
    return np.hstack(out)


def test_picogpt_heads_become_one_batched_attention_on_views_of_qkv():
    before, after, lines = compiled(pico_mha, f32(T, 3 * D))
    assert before["split"] == 4 and before["matmul"] == 4 and before["exp"] == 2 and before["concat"] == 1
    assert after == """graph pico_mha {
  %x = Data {index=0} : f32[8,48]
  %0 = slice(%x) {starts=(0, 0), steps=(1, 1), stops=(None, 16)} : f32[8,16]
  %1 = reshape(%0) {shape=(8, 2, 8)} : f32[8,2,8]
  %2 = transpose(%1) {axes=(1, 0, 2)} : f32[2,8,8]
  %3 = slice(%x) {starts=(0, 16), steps=(1, 1), stops=(None, 32)} : f32[8,16]
  %4 = reshape(%3) {shape=(8, 2, 8)} : f32[8,2,8]
  %5 = transpose(%4) {axes=(1, 0, 2)} : f32[2,8,8]
  %6 = slice(%x) {starts=(0, 32), steps=(1, 1), stops=(None, 48)} : f32[8,16]
  %7 = reshape(%6) {shape=(8, 2, 8)} : f32[8,2,8]
  %8 = transpose(%7) {axes=(1, 0, 2)} : f32[2,8,8]
  %9 = attention(%2, %5, %8) {causal=True, has_mask=False, scale=0.3535533966440824} : f32[2,8,8]
  %10 = transpose(%9) {axes=(1, 0, 2)} : f32[8,2,8]
  %11 = reshape(%10) {shape=(8, 16)} : f32[8,16]
  return (%11)
}
"""
    assert len(lines) == 3 and all(line.startswith("attention: found softmax(q @ k^T") for line in lines[:2])
    assert "exp(x - max) / sum; + mask; / 2.82843" in lines[0] and "-> attention(scale=0.353553, causal)" in lines[0]
    assert lines[2].startswith("attention_heads: found 2 heads of attention joined by hstack (q: column slices of "
                               "%x from 0, 8 wide, k: column slices of %x from 16, 8 wide, v: column slices of %x "
                               "from 32, 8 wide) at concat")


def bhtd_where_tri(q, k, v):
    """(B, H, T, D) with the scale on q, np.transpose(k, (0, 1, 3, 2)), np.where(np.tri, s, -inf), pyasc.softmax."""
    s = (q * (1.0 / np.sqrt(q.shape[-1]))) @ np.transpose(k, (0, 1, 3, 2))
    return pyasc.softmax(np.where(np.tri(q.shape[-2], dtype=bool), s, -np.inf)) @ v


def swapaxes_triu_exp(q, k, v):
    """k.swapaxes(-1, -2), `* (1/sqrt(d))`, an added np.triu(ones, 1) * -1e10 mask, exp(x) / sum without the max."""
    s = q @ k.swapaxes(-1, -2) * (1 / np.sqrt(q.shape[-1]))
    e = np.exp(s + np.triu(np.ones((q.shape[-2], q.shape[-2]), dtype=np.float32), 1) * -1e10)
    return e / e.sum(axis=-1, keepdims=True) @ v


SINGLE = """graph {name} {{
  %q = Data {{index=0}} : {t}
  %k = Data {{index=1}} : {t}
  %v = Data {{index=2}} : {t}
  %0 = attention(%q, %k, %v) {{causal=True, has_mask=False, scale=0.25}} : {t}
  return (%0)
}}
"""


@pytest.mark.parametrize("fn,shape,spelling", [
    (bhtd_where_tri, (2, 2, T, D), "pyasc.softmax; where(.., -inf)"),
    (swapaxes_triu_exp, (2, T, D), "exp(x) / sum; + mask; * 0.25"),
])
def test_batched_spellings_with_a_causal_triangle(fn, shape, spelling):
    before, after, lines = compiled(fn, f32(*shape), f32(*shape), f32(*shape))
    assert before["matmul"] == 2
    t = f"f32[{','.join(map(str, shape))}]"
    assert after == SINGLE.format(name=fn.__name__, t=t)
    assert len(lines) == 1 and spelling in lines[0] and lines[0].endswith("-> attention(scale=0.25, causal)")


def max_by_index(q, k, v):
    """The reductions without keepdims, put back with [:, None]."""
    s = q @ k.T * 0.25
    e = np.exp(s - s.max(axis=-1)[:, None])
    return (e / e.sum(-1)[:, None]) @ v


def times_reciprocal(q, k, v):
    """e * (1 / sum) instead of e / sum."""
    s = q @ k.T * 0.25
    e = np.exp(s - np.max(s, axis=1, keepdims=True))
    return (e * (1.0 / e.sum(axis=1, keepdims=True))) @ v


@pytest.mark.parametrize("fn", [max_by_index, times_reciprocal])
def test_more_numpy_softmax_spellings(fn):
    before, after, lines = compiled(fn, f32(T, D), f32(T, D), f32(T, D))
    assert before["exp"] == 1 and before["max"] == 1 and before["sum"] == 1
    assert "  %0 = attention(%q, %k, %v) {causal=False, has_mask=False, scale=0.25} : f32[8,16]\n" in after
    assert len(lines) == 1 and "exp(x - max) / sum; * 0.25" in lines[0]


def einsum_products(q, k, v):
    """Both products as np.einsum."""
    return np.einsum("hqk,hkd->hqd", pyasc.softmax(np.einsum("hqd,hkd->hqk", q, k) * 0.25), v)


def scipy_softmax(q, k, v):
    return scipy_special.softmax(q @ k.swapaxes(-1, -2) * 0.25, axis=-1) @ v


@pytest.mark.parametrize("fn,spelling", [
    (einsum_products, "einsum 'hqk,hkd->hqd'; pyasc.softmax; * 0.25; einsum 'hqd,hkd->hqk'"),
    (scipy_softmax, "scipy.special.softmax; * 0.25"),
])
def test_einsum_and_scipy_spellings(fn, spelling):
    if fn is scipy_softmax and scipy_special is None:
        pytest.skip("scipy is not installed")
    _, after, lines = compiled(fn, f32(2, T, D), f32(2, T, D), f32(2, T, D))
    assert "  %0 = attention(%q, %k, %v) {causal=False, has_mask=False, scale=0.25} : f32[2,8,16]\n" in after
    assert len(lines) == 1 and spelling in lines[0]


def f16_casts(q, k, v):
    """float16 in and out; the scores cast to float32 for the softmax, the weights back to float16."""
    s = (q @ k.swapaxes(-1, -2)).astype(np.float32) / np.sqrt(q.shape[-1])
    return pyasc.softmax(s).astype(np.float16) @ v


def f16_widened(q, k, v):
    """q, k and v cast up to float32 first: the result is float32."""
    s = q.astype(np.float32) @ k.astype(np.float32).swapaxes(-1, -2)
    return pyasc.softmax(s / np.sqrt(q.shape[-1])) @ v.astype(np.float32)


def test_dtype_casts_around_the_pattern():
    args = [f32(2, T, D).astype(np.float16) for _ in range(3)]
    before, after, lines = compiled(f16_casts, *args)
    assert before["cast"] == 2
    assert "  %0 = attention(%q, %k, %v) {causal=False, has_mask=False, scale=0.25} : f16[2,8,16]\n" in after
    assert "cast(" not in after and "/ 4; cast" in lines[0]
    before, after, lines = compiled(f16_widened, *args)
    assert before["cast"] == 3
    # k and v are read as float16 (the op computes in float32 anyway); q is cast, which makes the result float32
    assert ("  %0 = cast(%q) {dtype='float32'} : f32[2,8,16]\n"
            "  %1 = attention(%0, %k, %v) {causal=False, has_mask=False, scale=0.25} : f32[2,8,16]\n") in after


def band_mask(q, k, v):
    i = np.arange(q.shape[-2])
    band = np.where(np.abs(i[:, None] - i[None, :]) <= 2, 0.0, -np.inf).astype(np.float32)
    return pyasc.softmax(q @ k.swapaxes(-1, -2) * 0.25 + band) @ v


def input_mask(q, k, v, m):
    return pyasc.softmax(q @ k.swapaxes(-1, -2) * 0.25 + m) @ v


def bool_mask(q, k, v, keep):
    return pyasc.softmax(np.where(keep, q @ k.swapaxes(-1, -2) * 0.25, -np.inf)) @ v


def test_other_masks_stay_a_mask_operand():
    q, k, v = f32(2, T, D), f32(2, T, D), f32(2, T, D)
    _, after, lines = compiled(band_mask, q, k, v)
    assert "attention(%q, %k, %v, %0) {causal=False, has_mask=True, scale=0.25}" in after
    assert "%0 = Const {value=f32[8,8]" in after and "mask added" in lines[0]
    _, after, _ = compiled(input_mask, q, k, v, np.zeros((2, 1, T), np.float32))
    assert "attention(%q, %k, %v, %m) {causal=False, has_mask=True, scale=0.25} : f32[2,8,16]" in after
    keep = rng.random((T, T)) < 0.8
    keep[:, 0] = True
    _, after, lines = compiled(bool_mask, q, k, v, keep)
    assert ("  %0 = Const {value=f32[] 0.0} : f32[]\n  %1 = Const {value=f32[] -inf} : f32[]\n"
            "  %2 = where(%keep, %0, %1) : f32[8,8]\n"
            "  %3 = attention(%q, %k, %v, %2) {causal=False, has_mask=True, scale=0.25} : f32[2,8,16]\n") in after
    assert "mask where -> where(keep, 0, -inf)" in lines[0]


def heads_by_index(q, k, v):
    """A loop over heads indexing (H, T, D) tensors, the results stacked."""
    return np.stack([pyasc.softmax(q[h] @ k[h].T / 4.0) @ v[h] for h in range(q.shape[0])])


def multi_query(x, k, v):
    """Each head's q a column slice of x; one k and v shared by every head; concatenate(axis=-1)."""
    return np.concatenate([pyasc.softmax(x[:, h * D:(h + 1) * D] @ k.T / 4.0) @ v for h in range(4)], axis=-1)


def test_heads_by_index_and_shared_keys():
    _, after, lines = compiled(heads_by_index, f32(4, T, D), f32(4, T, D), f32(4, T, D))
    assert "  %0 = attention(%q, %k, %v) {causal=False, has_mask=False, scale=0.25} : f32[4,8,16]\n" \
           "  return (%0)" in after
    assert "(q: %q indexed on axis 0, k: %k indexed on axis 0, v: %v indexed on axis 0)" in lines[-1]
    _, after, lines = compiled(multi_query, f32(T, 4 * D), f32(T, D), f32(T, D))
    assert after.endswith("""  %0 = reshape(%x) {shape=(8, 4, 16)} : f32[8,4,16]
  %1 = transpose(%0) {axes=(1, 0, 2)} : f32[4,8,16]
  %2 = expand_dims(%k) {axis=0} : f32[1,8,16]
  %3 = expand_dims(%v) {axis=0} : f32[1,8,16]
  %4 = attention(%1, %2, %3) {causal=False, has_mask=False, scale=0.25} : f32[4,8,16]
  %5 = transpose(%4) {axes=(1, 0, 2)} : f32[8,4,16]
  %6 = reshape(%5) {shape=(8, 64)} : f32[8,64]
  return (%6)
}
""")
    assert "k: %k shared by every head" in lines[-1]


# ---- near misses: the log says which piece stopped the pattern ----------------------------------------


def over_axis0(q, k, v):
    return pyasc.softmax(q @ k.swapaxes(-1, -2), axis=0) @ v


def weights_returned(q, k, v):
    p = pyasc.softmax(q @ k.swapaxes(-1, -2))
    return p @ v, p


def soft_capped(q, k, v):
    return pyasc.softmax(np.tanh(q @ k.swapaxes(-1, -2))) @ v


def filled_with_zero(q, k, v):
    return pyasc.softmax(np.where(np.tri(q.shape[-2], dtype=bool), q @ k.swapaxes(-1, -2), 0.0)) @ v


def sums_over_queries(q, k, v):
    e = np.exp(q @ k.swapaxes(-1, -2))
    return e / e.sum(axis=1, keepdims=True) @ v


def multiplied_mask(q, k, v):
    return pyasc.softmax(q @ k.swapaxes(-1, -2) * np.tri(q.shape[-2], dtype=np.float32)) @ v


def heads_out_of_order(x):
    q, k, v = np.split(x, 3, axis=-1)
    return np.hstack([pyasc.softmax(q[:, h * 8:(h + 1) * 8] @ k[:, h * 8:(h + 1) * 8].T) @ v[:, h * 8:(h + 1) * 8]
                      for h in (1, 0)])


@pytest.mark.parametrize("fn,line", [
    (over_axis0, "attention: not matched at matmul %3: pyasc.softmax over axis 0, not the keys (the last axis, 2)"),
    (weights_returned, "attention: not matched at matmul %3: softmax %2 inside the pattern is a result of the "
                       "kernel (the weights or scores are returned)"),
    (soft_capped, "attention: not matched at matmul %4: the softmax input is not computed from q @ k^T: it goes "
                  "through tanh %2, not a scale, a mask or a cast"),
    (filled_with_zero, "attention: not matched at matmul %6: np.where fills 0, not -inf or a number <= -1e9: "
                       "not a mask"),
    (sums_over_queries, "attention: not matched at matmul %5: the softmax sums over axis 1, not the keys (the last "
                        "axis, 2)"),
    (multiplied_mask, "attention: not matched at matmul %5: the scores are multiplied by a Const of shape (8, 8), "
                      "not by a compile-time scalar"),
])
def test_a_near_miss_names_the_piece_that_stopped_it(fn, line):
    _, after, lines = compiled(fn, f32(2, T, D), f32(2, T, D), f32(2, T, D))
    assert after is None and lines == [line]


def band_heads(x):
    """Heads sharing a constant band mask (the frontend makes one Const per use of the array)."""
    i = np.arange(x.shape[0])
    band = np.where(np.abs(i[:, None] - i[None, :]) <= 2, 0.0, -np.inf).astype(x.dtype)
    q, k, v = np.split(x, 3, axis=-1)
    return np.hstack([pyasc.softmax(q[:, h * 8:(h + 1) * 8] @ k[:, h * 8:(h + 1) * 8].T + band)
                      @ v[:, h * 8:(h + 1) * 8] for h in range(2)])


def test_heads_sharing_a_constant_mask_are_merged():
    _, after, lines = compiled(band_heads, f32(T, 48))
    assert after.count("attention(") == 1 and "has_mask=True" in after
    assert lines[-1].startswith("attention_heads: found 2 heads")


def test_heads_out_of_order_stay_per_head():
    _, after, lines = compiled(heads_out_of_order, f32(T, 48))
    assert after.count("attention(") == 2
    assert lines[-1] == ("attention_heads: not matched at concat %15: the heads' q are not the heads of one tensor: "
                         "head 1 starts at 0, not 16")


# ---- switches ---------------------------------------------------------------------------------------


def test_disable_passes_and_opt_level_turn_it_off():
    x = f32(T, 3 * D)
    for options in ({"disable_passes": ["attention"]}, {"opt_level": 1}):
        _, after, lines = compiled(pico_mha, x, **options)
        assert after is None and lines == []
    art = pyasc.kernel(pico_mha, chip="tiny", backend="reference", disable_passes=["attention"]).compile(x)
    assert "attention: skipped (disabled)" in art.pass_log


def attention_graph(q_shape=(2, T, D)) -> Graph:
    g = Graph("g")
    q, k, v = (g.add_input(TensorType(q_shape, "float32"), n) for n in "qkv")
    s = g.add("mul", [g.add("matmul", [q, k], {"transpose_b": True}).out(), g.const(np.float32(0.25))]).out()
    g.set_outputs([g.add("matmul", [g.add("softmax", [s], {"axis": -1}).out(), v]).out()])
    return g


def refuse(candidate) -> CapacityVerdict:
    return CapacityVerdict(False, None, "no template for it in this test")


def test_a_refusing_capacity_leaves_the_pattern_and_says_why():
    g = attention_graph()
    before = format_graph(g)
    result = ge.optimize(g, opt_level=2, capacity=refuse, disabled_passes=["fusion", "memory_planning"],
                         required_passes=["attention"])
    assert "attention" not in [name for name, _ in result.stages]
    assert result.fusion_log[0] == ("attention: not matched at matmul %4: found the pattern, but codegen cannot lower "
                                    "it whole (no template for it in this test); left as it is")
    assert "matmul" in format_graph(g) and "softmax" in before


def test_pyasc_attention_is_decomposed_when_codegen_refuses_it():
    g = Graph("g")
    q, k, v = (g.add_input(TensorType((2, T, D), "float32"), n) for n in "qkv")
    g.set_outputs([g.add("attention", [q, k, v], {"causal": True, "has_mask": False}).out()])
    result = ge.optimize(g, opt_level=2, capacity=refuse)
    text = format_graph(g)
    assert "attention(" not in text and text.count("matmul") == 2 and "softmax" in text
    decided = [d for d in result.fusion_decisions if d.kind is DecisionKind.DECOMPOSED]
    assert [d.render() for d in decided] == [
        "decomposed: attention %0: not lowered whole (no template for it in this test); its decomposition is "
        "lowered instead"]
    kept = Graph("g")
    q, k, v = (kept.add_input(TensorType((2, T, D), "float32"), n) for n in "qkv")
    kept.set_outputs([kept.add("attention", [q, k, v], {"causal": True, "has_mask": False}).out()])
    ge.optimize(kept, opt_level=2)  # the default estimate: kept whole, its own kernel
    assert "attention(" in format_graph(kept)


def test_the_knob_dedicated_lowerings_decides_too():
    g = attention_graph()
    knobs = {"dedicated_lowerings": frozenset({"softmax", "layer_norm", "rms_norm"})}
    result = ge.optimize(g, opt_level=2, knobs=knobs)
    assert "attention" not in format_graph(g)
    assert result.fusion_log[0].endswith("found the pattern, but attention is not in the knob dedicated_lowerings; "
                                         "left as it is")


def test_the_decisions_are_records():
    result = ge.optimize(attention_graph(), opt_level=2)
    (found,) = [d for d in result.fusion_decisions if d.rule == "attention"]
    assert found.kind is DecisionKind.PATTERN and found.producer == "matmul %4"
    assert found.consumer == "attention(scale=0.25)"


# ---- on the emulator: the pattern runs as the fused attention kernel --------------------------------


def mha_where(x, n_head: int):
    """picoGPT's heads with the np.where causal spelling (a -1e10 mask overflows float16 to -inf * 0 = NaN)."""
    heads = [np.split(t, n_head, axis=-1) for t in np.split(x, 3, axis=-1)]
    causal = np.tri(x.shape[0], dtype=bool)
    return np.hstack([softmax_np(np.where(causal, q @ k.T / np.sqrt(q.shape[-1]), -np.inf)) @ v
                      for q, k, v in zip(*heads)])


def test_the_found_pattern_runs_as_one_fused_attention_kernel():
    x = rng.standard_normal((32, 3 * 32)).astype(np.float16)
    kernel = pyasc.kernel(mha_where, chip="tiny")
    art = kernel.compile(x, 2)
    templates = [k.template for k in art.kernels]
    assert templates.count("attention") == 1 and not {"matmul", "mixed", "vector"} & set(templates)
    assert "attention_heads: found 2 heads" in art.stages["fusion_log"]
    got = kernel(x, 2)
    assert got.dtype == np.float16
    assert_close(got, mha_where(x.astype(np.float64), 2).astype(np.float16))  # fp16 tolerance, vs float64 numpy
    unfused = pyasc.kernel(mha_where, chip="tiny", disable_passes=["attention"])
    assert "attention" not in [k.template for k in unfused.compile(x, 2).kernels]
