"""pyasc.grad / value_and_grad / vjp: compiled gradients against float64 finite differences of py_func.

Gradients are computed in float32 by the compiled backward (tiny chip, emulator with the sanitizer on,
or the reference backend for the cases that only check the differentiated graph), and compared with
central differences of the function evaluated eagerly in float64 (tolerances: rtol 2e-4, atol 2e-5
scaled by the largest gradient, float32 accumulation over a few dozen terms).
"""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from pyasc import autodiff
from pyasc.frontend import ArgSpec, build_graph
from pyasc.tensor_type import TensorType

TINY = {"chip": "tiny"}
REF = {"chip": "tiny", "backend": "reference"}


def numeric_grad(fn, args, i, step=1e-6, ct=None):
    """d<ct, fn(*args)>/d args[i] by central differences in float64 (ct None: fn is scalar)."""
    xs = [np.asarray(a, dtype=np.float64) if isinstance(a, np.ndarray) else a for a in args]
    out = np.zeros(xs[i].shape)

    def value(vals):
        y = np.asarray(fn(*vals), dtype=np.float64)
        return float(np.sum(y if ct is None else y * ct))

    for idx in np.ndindex(xs[i].shape):
        plus, minus = list(xs), list(xs)
        plus[i], minus[i] = xs[i].copy(), xs[i].copy()
        plus[i][idx] += step
        minus[i][idx] -= step
        out[idx] = (value(plus) - value(minus)) / (2 * step)
    return out


def close(got, want, rtol=2e-4, atol=2e-5):
    got = np.asarray(got, dtype=np.float64)
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale)


def f32(rng, *shape, low=None, high=None):
    if low is not None:
        return rng.uniform(low, high, shape).astype(np.float32)
    return rng.standard_normal(shape).astype(np.float32)


# ---- kernels -------------------------------------------------------------------------------------


def mlp_loss(x, w1, b1, w2):
    h = pyasc.relu(x @ w1 + b1)
    return pyasc.mean(pyasc.log_softmax(h @ w2, axis=-1))


def attention_norm(x, wq, g):
    q = pyasc.layer_norm(x, g) @ wq
    att = pyasc.softmax(q @ q.T * 0.25, axis=-1)
    return pyasc.sum(pyasc.rms_norm(att @ x) * pyasc.gelu(x))


def test_grad_of_an_mlp_on_the_emulator_matches_finite_differences(rng):
    k = pyasc.kernel(mlp_loss, **TINY)
    args = [f32(rng, 4, 8), f32(rng, 8, 16), f32(rng, 16), f32(rng, 16, 6)]
    grads = pyasc.grad(k, argnums=(0, 1, 2, 3))(*args)
    assert isinstance(grads, tuple) and len(grads) == 4
    for i, g in enumerate(grads):
        assert g.dtype == np.float32 and g.shape == args[i].shape
        close(g, numeric_grad(mlp_loss, args, i))


def test_grad_through_layer_norm_softmax_rms_norm_gelu_on_the_emulator(rng):
    k = pyasc.kernel(attention_norm, **TINY)
    args = [f32(rng, 6, 8), f32(rng, 8, 8) * 0.3, f32(rng, 8, low=0.5, high=1.5)]
    grads = pyasc.grad(k, argnums=(0, 1, 2))(*args)
    for i, g in enumerate(grads):
        close(g, numeric_grad(attention_norm, args, i), rtol=5e-4)


def test_value_and_grad_and_the_single_argnum_result(rng):
    k = pyasc.kernel(mlp_loss, **REF)
    args = [f32(rng, 3, 8), f32(rng, 8, 4), f32(rng, 4), f32(rng, 4, 5)]
    value, g = pyasc.value_and_grad(k, argnums=1)(*args)
    pyasc.testing.assert_close(value, k(*args), rtol=1e-6, atol=1e-6)
    assert isinstance(g, np.ndarray) and g.shape == (8, 4)
    close(g, numeric_grad(mlp_loss, args, 1))
    close(pyasc.grad(k, argnums=-1)(*args), numeric_grad(mlp_loss, args, 3))
    g1, g1_again = pyasc.grad(k, argnums=(1, 1))(*args)  # an argument named twice gets its gradient twice
    np.testing.assert_array_equal(g1, g1_again)
    close(g1, numeric_grad(mlp_loss, args, 1))


def loss_with_aux(x, w):
    y = pyasc.tanh(x @ w)
    return pyasc.sum(y * y), (y, pyasc.max(y))


def test_has_aux_returns_the_auxiliary_values_undifferentiated(rng):
    x, w = f32(rng, 3, 4), f32(rng, 4, 5)
    (value, (y, m)), g = pyasc.value_and_grad(pyasc.kernel(loss_with_aux, **REF), argnums=1, has_aux=True)(x, w)
    want_y = np.tanh(x @ w)
    pyasc.testing.assert_close(y, want_y, rtol=1e-5, atol=1e-6)
    pyasc.testing.assert_close(m, want_y.max(), rtol=1e-5, atol=1e-6)
    close(g, numeric_grad(lambda a, b: loss_with_aux(a, b)[0], [x, w], 1))
    g2, aux = pyasc.grad(loss_with_aux, argnums=1, has_aux=True)(x, w)
    close(g2, g, rtol=1e-6, atol=1e-7)


def params_loss(params, x):
    h = x @ params["w"] + params["b"]
    return pyasc.sum(pyasc.sigmoid(h) * params["scale"])


def test_a_pytree_argument_gets_a_gradient_of_the_same_structure(rng):
    params = {"w": f32(rng, 4, 3), "b": f32(rng, 3), "scale": 2.0}
    x = f32(rng, 5, 4)
    g = pyasc.grad(pyasc.kernel(params_loss, **REF))(params, x)
    assert set(g) == {"w", "b", "scale"} and g["scale"] is None
    flat = lambda w, b, x: params_loss({"w": w, "b": b, "scale": 2.0}, x)  # noqa: E731
    close(g["w"], numeric_grad(flat, [params["w"], params["b"], x], 0))
    close(g["b"], numeric_grad(flat, [params["w"], params["b"], x], 1))


def shaped(x, y):
    return pyasc.sum(x * y, axis=-1)


def test_vjp_pulls_back_a_cotangent_and_keeps_expensive_values_only(rng):
    def f(x, w):
        h = x * w + 1.0
        return pyasc.exp(h) * h

    x, w = f32(rng, 3, 4), f32(rng, 4)
    k = pyasc.kernel(f, **TINY)
    out, f_vjp = pyasc.vjp(k, x, w)
    pyasc.testing.assert_close(out, k(x, w))
    ct = f32(rng, 3, 4)
    dx, dw = f_vjp(ct)
    close(dx, numeric_grad(f, [x, w], 0, ct=ct))
    close(dw, numeric_grad(f, [x, w], 1, ct=ct))
    # exp is expensive: its result is kept (a saved value); h = x * w + 1 is cheap: the backward recomputes it
    # from the primal inputs, which it takes as they are (nothing stored for them)
    graphs = autodiff.vjp_graphs(_graph(f, (3, 4), (4,)), [0, 1])
    assert sorted(r.kind for r in graphs.residuals) == ["input", "input", "saved"], graphs.residuals
    assert [v.node.op for v in graphs.plan.saved] == ["exp"]
    backward_ops = [n.op for n in graphs.backward.nodes]
    assert "exp" not in backward_ops and "add" in backward_ops
    assert len(graphs.forward.outputs) == 2  # the result and the saved exp


def _graph(fn, *shapes):
    names = fn.__code__.co_varnames[:len(shapes)]
    return build_graph(fn, [ArgSpec(n, TensorType(s, "float32")) for n, s in zip(names, shapes)]).graph


def test_vjp_of_a_function_with_several_outputs_and_an_integer_argument(rng):
    def two(x, idx):
        return x * 2.0, pyasc.sum(x * x, axis=0)

    x = f32(rng, 3, 4)
    idx = np.arange(3, dtype=np.int32)
    (a, b), f_vjp = pyasc.vjp(pyasc.kernel(two, **REF), x, idx)
    ca, cb = f32(rng, 3, 4), f32(rng, 4)
    dx, didx = f_vjp((ca, cb))
    assert didx is None
    close(dx, 2.0 * ca + 2.0 * x * cb)
    with pytest.raises(TypeError, match="structure of the function's output"):
        f_vjp(ca)


def test_the_reverse_of_a_slice_a_reshape_a_transpose_and_a_slice_write(rng):
    def f(x, y):
        z = x.T.reshape(4, 6)
        z[1:3, ::2] = y * 3.0
        return pyasc.sum(pyasc.tanh(z[:, 1:5]) * z[::-1, :4])

    x, y = f32(rng, 6, 4), f32(rng, 2, 3)
    gx, gy = pyasc.grad(pyasc.kernel(f, **TINY), argnums=(0, 1))(x, y)
    close(gx, numeric_grad(f, [x, y], 0))
    close(gy, numeric_grad(f, [x, y], 1))


def test_broadcasting_batch_matmul_where_and_ties(rng):
    def f(a, b, c):
        p = a @ b                                    # (2, 3, 5) from (2, 3, 4) @ (4, 5)
        m = pyasc.maximum(p, c)                      # c (5,) broadcast; ties below
        return pyasc.sum(pyasc.where(p > 0.5, m, c * 2.0)) + pyasc.sum(pyasc.max(m, axis=-1) * 3.0)

    # small integers: the products are exact in float32 and float64, so the ties are ties in both (and p is
    # never 0.5: the where's condition does not flip under the finite differences)
    a = rng.integers(-2, 3, (2, 3, 4)).astype(np.float32)
    b = rng.integers(-2, 3, (4, 5)).astype(np.float32)
    c = (a @ b)[0, 0].copy()  # c equals p in its first row: maximum ties there
    c[1] += 0.5
    grads = pyasc.grad(pyasc.kernel(f, **TINY), argnums=(0, 1, 2))(a, b, c)
    for i, g in enumerate(grads):
        close(g, numeric_grad(f, [a, b, c], i))


def test_casts_give_gradients_in_the_argument_dtype(rng):
    def f(x, w):
        return pyasc.sum(pyasc.sigmoid(x.astype(np.float32) @ w))

    def f64(x, w):  # the same function without the cast, for float64 differences
        return pyasc.sum(pyasc.sigmoid(x @ w))

    x, w = f32(rng, 4, 8).astype(np.float16), f32(rng, 8, 3)
    gx, gw = pyasc.grad(pyasc.kernel(f, **REF), argnums=(0, 1))(x, w)
    assert gx.dtype == np.float16 and gw.dtype == np.float32
    close(gx, numeric_grad(f64, [x.astype(np.float32), w], 0), rtol=2e-3, atol=1e-3)
    close(gw, numeric_grad(f64, [x.astype(np.float32), w], 1))


def clip_loss(x):
    return pyasc.sum(pyasc.clip(x, -0.5, 0.5) * x)


def var_std_loss(x):
    return pyasc.sum(np.var(x, axis=0)) + pyasc.sum(np.std(x, axis=1, keepdims=True))


def join_loss(x):
    return pyasc.sum(np.concatenate([x, x * 2.0], axis=1) * np.stack([x, -x], axis=1).reshape(4, 12))


def pad_tile_loss(x):
    return pyasc.sum(np.pad(x, ((1, 0), (0, 2))) * 1.5) + pyasc.sum(np.tile(x[:, :2], (1, 3)) ** 2)


def cumsum_loss(x):
    return pyasc.sum(np.cumsum(x, axis=1) ** 2)


def elementary_loss(x):
    return pyasc.sum(np.logaddexp(x, 0.5 * x) + np.log1p(x * x) + np.arctan(x))


def softmax_axis0_loss(x):
    return pyasc.sum(pyasc.softmax(x - pyasc.mean(x, axis=0, keepdims=True), axis=0) * x)


COMPOSITES = [clip_loss, var_std_loss, join_loss, pad_tile_loss, cumsum_loss, elementary_loss, softmax_axis0_loss]


@pytest.mark.parametrize("f", COMPOSITES, ids=[f.__name__ for f in COMPOSITES])
def test_composites_differentiate_through_their_decomposition_or_rule(f, rng):
    x = f32(rng, 4, 6)
    g = pyasc.grad(pyasc.kernel(f, **REF))(x)
    close(g, numeric_grad(f, [x], 0), rtol=5e-4)


# ---- errors --------------------------------------------------------------------------------------


def vector_out(x):
    return x * 2.0


def branchy(x):
    if pyasc.sum(x) > 0:
        y = x * 2.0
    else:
        y = x * 3.0
    return pyasc.sum(y)


def scaled(x, n: int):
    return pyasc.sum(x * n)


def test_grad_errors_name_what_is_wrong(rng):
    x = f32(rng, 3, 4)
    with pytest.raises(TypeError, match=r"scalar output .*shape \(3, 4\)"):
        pyasc.grad(pyasc.kernel(vector_out, **REF))(x)
    with pytest.raises(TypeError, match="argnums 1 names the compile-time argument 'n'"):
        pyasc.grad(pyasc.kernel(scaled, **REF), argnums=1)(x, 3)
    with pytest.raises(TypeError, match="int32 tensor; only float tensors"):
        pyasc.grad(pyasc.kernel(shaped, **REF), argnums=1)(x, np.ones((3, 4), np.int32))
    with pytest.raises(TypeError, match="argnums must be an int or a non-empty tuple"):
        pyasc.grad(scaled, argnums="x")
    with pytest.raises(TypeError, match="argnums 5 is out of range"):
        pyasc.grad(pyasc.kernel(scaled, **REF), argnums=5)(x, 3)


def test_an_op_without_a_derivative_is_a_located_compile_error(rng):
    with pytest.raises(pyasc.CompileError) as info:
        pyasc.grad(pyasc.kernel(branchy, **REF))(f32(rng, 3, 4))
    e = info.value
    assert "no VJP rule for op 'If'" in e.reason and "tensor-dependent `if`" in e.reason
    assert e.filename.endswith("test_grad.py") and "if pyasc.sum(x) > 0:" in e.source_line


def tanh_loss(x, w):
    return pyasc.sum(pyasc.tanh(x @ w)) + pyasc.mean(x)


def test_grad_of_a_dynamic_kernel_serves_every_size(rng):
    k = pyasc.kernel(tanh_loss, chip="tiny", dynamic=True)
    df = pyasc.grad(k, argnums=(0, 1))
    for n in (3, 5):
        x, w = f32(rng, n, 8), f32(rng, 8, 4)
        gx, gw = df(x, w)
        t = np.tanh(x.astype(np.float64) @ w)
        close(gw, x.T.astype(np.float64) @ (1 - t * t))
        close(gx, (1 - t * t) @ w.T.astype(np.float64) + 1.0 / x.size)  # the mean's 1/n at the launch's n
    assert df.graph_kernel(x, w).cache_info().misses == 1  # one compile for both sizes


def test_the_gradient_kernel_is_compiled_once_and_found_on_disk_by_a_new_process(rng, disk_cache):
    x, w = f32(rng, 4, 8), f32(rng, 8, 4)
    first = pyasc.grad(pyasc.kernel(tanh_loss, **TINY), argnums=1)
    g1 = first(x, w)
    assert first.graph_kernel(x, w).cache_info().misses == 1
    again = pyasc.grad(pyasc.kernel(tanh_loss, **TINY), argnums=1)  # a new kernel object: a fresh memory cache
    g2 = again(x, w)
    info = again.graph_kernel(x, w).cache_info()
    assert (info.misses, info.disk_hits) == (0, 1)
    np.testing.assert_array_equal(g1, g2)
