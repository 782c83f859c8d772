"""pyasc.torch.custom_op: registration and schema, fake/meta shapes, results against eager PyTorch, the
error cases, autograd with a user backward, in-place ops, zero-copy CPU tensors."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import pyasc  # noqa: E402
import pyasc.torch as pt  # noqa: E402
from pyasc.torch.convert import from_numpy, to_numpy  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

import torch_kernels as kernels  # noqa: E402

F = torch.nn.functional


def gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


@pytest.fixture(scope="module")
def ops():
    return {
        "bias_gelu": pt.custom_op("pyasc_test::bias_gelu", pyasc.kernel(kernels.bias_gelu, chip="tiny")),
        "layer_norm": pt.custom_op("pyasc_test::layer_norm", pyasc.kernel(kernels.layer_norm, chip="tiny")),
        "sum_diff": pt.custom_op("pyasc_test::sum_diff", kernels.split_sum_diff),
        "row_sums": pt.custom_op("pyasc_test::row_sums", kernels.row_sums),
        "repeat_add": pt.custom_op("pyasc_test::repeat_add", kernels.repeat_add),
        "scale_": pt.custom_op("pyasc_test::scale_", kernels.scale_in_place, mutates_args=("x",)),
    }


def test_the_schema_comes_from_the_kernel_signature(ops):
    assert ops["bias_gelu"].schema == "(Tensor x, Tensor b, float scale=1.0) -> Tensor"
    assert ops["sum_diff"].schema == "(Tensor x, Tensor y) -> (Tensor, Tensor)"
    assert ops["row_sums"].schema == "(Tensor x, bool keep=False) -> Tensor"
    assert ops["repeat_add"].schema == "(Tensor x, int times=2) -> Tensor"
    assert ops["scale_"].schema == "(Tensor(a!) x, float s) -> ()"
    assert str(torch.ops.pyasc_test.bias_gelu.default._schema) == \
        "pyasc_test::bias_gelu(Tensor x, Tensor b, float scale=1.) -> Tensor"


def test_results_match_eager_pytorch(ops):
    g = torch.Generator().manual_seed(0)
    x, b = torch.randn(8, 40, generator=g), torch.randn(40, generator=g)
    torch.testing.assert_close(torch.ops.pyasc_test.bias_gelu(x, b), gelu_tanh(x + b), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ops["bias_gelu"](x, b, 0.5), 0.5 * gelu_tanh(x + b), rtol=1e-5, atol=1e-5)
    w, bb = torch.randn(40, generator=g), torch.randn(40, generator=g)
    torch.testing.assert_close(torch.ops.pyasc_test.layer_norm(x, w, bb), F.layer_norm(x, (40,), w, bb),
                               rtol=1e-4, atol=1e-4)
    s, d = torch.ops.pyasc_test.sum_diff(x, x * 2)
    torch.testing.assert_close(s, x * 3) and torch.testing.assert_close(d, -x)
    torch.testing.assert_close(torch.ops.pyasc_test.row_sums(x, True), x.sum(-1, keepdim=True), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(torch.ops.pyasc_test.repeat_add(x, 3), x * 4)


def test_float16_and_int_tensors(ops):
    x = torch.arange(-20, 20, dtype=torch.int32).reshape(4, 10)
    torch.testing.assert_close(torch.ops.pyasc_test.repeat_add(x), x * 3)
    h = torch.randn(4, 16).half()
    out = torch.ops.pyasc_test.sum_diff(h, h)[0]
    assert out.dtype == torch.float16
    torch.testing.assert_close(out, h + h)


def test_meta_and_fake_tensors_get_shapes_from_pyasc_inference(ops):
    m = torch.ops.pyasc_test.row_sums(torch.empty(3, 7, device="meta"), True)
    assert m.device.type == "meta" and m.shape == (3, 1) and m.dtype == torch.float32
    with FakeTensorMode():
        s, d = torch.ops.pyasc_test.sum_diff(torch.empty(5, 6, dtype=torch.float16), torch.empty(6, dtype=torch.float16))
        assert s.shape == (5, 6) and d.dtype == torch.float16
        assert torch.ops.pyasc_test.row_sums(torch.empty(2, 9)).shape == (2,)


def test_opcheck_passes(ops):
    x, b = torch.randn(4, 16), torch.randn(16)
    torch.library.opcheck(torch.ops.pyasc_test.bias_gelu.default, (x, b))
    torch.library.opcheck(torch.ops.pyasc_test.sum_diff.default, (x, x))


def test_torch_compile_traces_the_op_with_its_fake_impl(ops):
    def f(x, b):
        return torch.ops.pyasc_test.bias_gelu(x, b) + 1.0

    x, b = torch.randn(4, 16), torch.randn(16)
    compiled = torch.compile(f, backend="eager", fullgraph=True)
    torch.testing.assert_close(compiled(x, b), gelu_tanh(x + b) + 1.0, rtol=1e-5, atol=1e-5)


def test_op_inside_an_nn_module_matches_the_eager_module(ops):
    class Block(torch.nn.Module):
        def __init__(self, use_pyasc):
            super().__init__()
            torch.manual_seed(0)
            self.lin = torch.nn.Linear(16, 32)
            self.use_pyasc = use_pyasc

        def forward(self, x):
            h = x @ self.lin.weight.T
            if self.use_pyasc:
                return torch.ops.pyasc_test.bias_gelu(h, self.lin.bias)
            return gelu_tanh(h + self.lin.bias)

    x = torch.randn(8, 16)
    with torch.no_grad():  # parameters require grad; the op has no backward
        torch.testing.assert_close(Block(True)(x), Block(False)(x), rtol=1e-5, atol=1e-5)


def test_unsupported_dtype_lists_the_supported_ones(ops):
    with pytest.raises(TypeError) as e:
        torch.ops.pyasc_test.bias_gelu(torch.randn(2, 4, dtype=torch.float64), torch.randn(4, dtype=torch.float64))
    assert str(e.value) == ("pyasc_test::bias_gelu: argument 'x' has dtype torch.float64, which the NPU does not "
                            "have; supported dtypes: torch.float16, torch.float32, torch.int8, torch.int16, "
                            "torch.int32, torch.uint8, torch.bool (cast with .to(...))")


def test_backward_none_runs_the_forward_and_raises_only_when_backward_is_called():
    op = pt.custom_op("pyasc_test::no_grad_square", kernels.square, backward=None)
    x = torch.randn(2, 4, requires_grad=True)
    y = op(x)  # the forward runs under grad mode, as torch.library.custom_op's does
    torch.testing.assert_close(y.detach(), x.detach() ** 2)
    assert y.requires_grad
    with pytest.raises(RuntimeError) as e:
        y.sum().backward()
    assert str(e.value).startswith("pyasc_test::no_grad_square was registered with backward=None, so it has no "
                                   "backward: gradients cannot flow through it.")
    assert x.grad is None


def test_non_cpu_tensor_is_an_error(ops):
    with pytest.raises(ValueError) as e:  # the CPU implementation, handed a tensor on another device
        ops["bias_gelu"].impl(torch.empty(2, 4, device="meta"), torch.empty(4, device="meta"), 1.0)
    assert str(e.value) == ("pyasc_test::bias_gelu: argument 'x' is on device 'meta'; pyasc runs kernels on its "
                            "emulator from host memory, so pass CPU tensors (.cpu())")


def test_a_user_backward_makes_the_op_differentiable():
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 * x

    op = pt.custom_op("pyasc_test::square", kernels.square, backward=backward, setup_context=setup_context)
    x = torch.randn(3, 5, requires_grad=True)
    y = op(x)
    y.sum().backward()
    torch.testing.assert_close(y.detach(), x.detach() ** 2)
    torch.testing.assert_close(x.grad, 2 * x.detach())


def test_mutates_args_writes_the_kernel_result_into_the_tensor(ops):
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    before = x.data_ptr()
    assert torch.ops.pyasc_test.scale_(x, 3.0) is None
    assert x.data_ptr() == before
    torch.testing.assert_close(x, torch.arange(12, dtype=torch.float32).reshape(3, 4) * 3)


def test_a_kernel_writing_in_place_mutates_the_tensor():
    op = pt.custom_op("pyasc_test::scale_truly_", kernels.scale_truly_in_place, mutates_args=("x",))
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    before = x.data_ptr()
    assert op(x, 2.0) is None
    assert x.data_ptr() == before
    torch.testing.assert_close(x, torch.arange(12, dtype=torch.float32).reshape(3, 4) * 2)


def test_a_kernel_writing_an_undeclared_argument_is_an_error():
    op = pt.custom_op("pyasc_test::add_undeclared", kernels.add_in_place_undeclared)
    x, y = torch.ones(4), torch.ones(4)
    with pytest.raises(TypeError, match="writes argument 'x' in place; declare it in mutates_args="):
        op(x, y)
    torch.testing.assert_close(x, torch.ones(4))  # refused before the kernel ran


def test_cpu_tensors_cross_without_copies():
    t = torch.randn(4, 8)
    a = to_numpy(t)
    assert a.__array_interface__["data"][0] == t.data_ptr()
    out = np.ones((4, 8), np.float32)
    assert from_numpy(out).data_ptr() == out.__array_interface__["data"][0]
    ro = out.view()
    ro.flags.writeable = False
    assert from_numpy(ro).data_ptr() != out.__array_interface__["data"][0]  # torch must not write a read-only one


@pytest.mark.parametrize("call, exc, message", [
    (lambda: pt.custom_op("no_namespace", kernels.square), ValueError,
     "pyasc.torch.custom_op: the name must be 'namespace::name', got 'no_namespace'"),
    (lambda: pt.custom_op("pyasc_test::bad1", kernels.square, mutates_args=("y",)), ValueError,
     "pyasc.torch.custom_op('pyasc_test::bad1'): mutates_args names 'y', which is not a parameter of square(x)"),
    (lambda: pt.custom_op("pyasc_test::bad2", kernels.two_paths), TypeError,
     "pyasc.torch.custom_op('pyasc_test::bad2'): kernel two_paths returns [1, 2] results on different paths; "
     "pass results=N (the number of tensors it returns)"),
    (lambda: pt.custom_op("pyasc_test::bad3", kernels.no_return), TypeError,
     "pyasc.torch.custom_op('pyasc_test::bad3'): kernel no_return has no return statement; pass results=N "
     "(the number of tensors it returns)"),
    (lambda: pt.custom_op("pyasc_test::bad4", kernels.bad_default), TypeError,
     "pyasc.torch.custom_op('pyasc_test::bad4'): parameter 'mode' has default 'fast'; a torch op takes tensors "
     "and int/float/bool values"),
    (lambda: pt.custom_op("pyasc_test::bad5", kernels.scale_in_place, mutates_args=("x",), backward=lambda c, g: g),
     ValueError, "pyasc.torch.custom_op('pyasc_test::bad5'): an op that mutates its arguments cannot have a backward "
     "(torch.library needs a functional op); drop mutates_args and return the result"),
])
def test_registration_errors(call, exc, message):
    with pytest.raises(exc) as e:
        call()
    assert str(e.value) == message


def test_dynamic_shapes_trace_once_with_symbolic_sizes(ops):
    from torch._dynamo.utils import counters  # dynamo's own count of the graphs it compiled

    def f(x, b):
        return torch.ops.pyasc_test.row_sums(torch.ops.pyasc_test.bias_gelu(x, b) * 2, True)

    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(f, backend="eager", dynamic=True, fullgraph=True)
    for n in (3, 5, 7):
        x, b = torch.randn(n, 16), torch.randn(16)
        got = compiled(x, b)
        assert got.shape == (n, 1)
        torch.testing.assert_close(got, (2 * gelu_tanh(x + b)).sum(-1, keepdim=True), rtol=1e-5, atol=1e-4)
    assert counters["stats"]["unique_graphs"] == 1  # the fake impl kept the batch size symbolic


def test_the_kernel_reads_the_tensors_memory_and_the_result_shares_the_kernels_buffer(ops):
    op = ops["bias_gelu"]
    x, b = torch.randn(8, 40), torch.randn(40)
    compiled = op.kernel.compile(x.numpy(), b.numpy(), 1.0)
    result = np.ones((8, 40), np.float32)
    seen = []
    compiled.launch = lambda arrays: (seen.append([a.__array_interface__["data"][0] for a in arrays]), result)[1]
    try:
        out = torch.ops.pyasc_test.bias_gelu(x, b)
    finally:
        del compiled.launch
    assert seen == [[x.data_ptr(), b.data_ptr()]]  # no copy on the way in
    assert out.data_ptr() == result.__array_interface__["data"][0]  # nor on the way out


# ---- the derived backward: gradients against eager PyTorch's autograd in float32 -------------------------
# tolerances: rtol 1e-4, atol 1e-5 (float32 kernels on the emulator against torch's float32 autograd)


def grads_of(fn, inputs, cotangents):
    leaves = [t.detach().clone().requires_grad_(t.is_floating_point()) for t in inputs]
    outs = fn(*leaves)
    outs = outs if isinstance(outs, tuple) else (outs,)
    total = sum((o * c).sum() for o, c in zip(outs, cotangents))
    total.backward()
    return [o.detach() for o in outs], [t.grad for t in leaves]


@pytest.mark.parametrize("case", ["bias_gelu", "layer_norm", "sum_diff", "row_sums", "repeat_add"])
def test_the_derived_backward_matches_eager_autograd(ops, case):
    g = torch.Generator().manual_seed(3)
    x, y = torch.randn(4, 24, generator=g), torch.randn(24, generator=g)
    cases = {
        "bias_gelu": (lambda a, b: torch.ops.pyasc_test.bias_gelu(a, b, 0.5),
                      lambda a, b: 0.5 * gelu_tanh(a + b), (x, y)),
        "layer_norm": (lambda a, w, b: torch.ops.pyasc_test.layer_norm(a, w, b),
                       lambda a, w, b: F.layer_norm(a, (24,), w, b), (x, y, y * 0.5)),
        "sum_diff": (lambda a, b: torch.ops.pyasc_test.sum_diff(a, b), lambda a, b: (a + b, a - b), (x, x * 2)),
        "row_sums": (lambda a: torch.ops.pyasc_test.row_sums(a, True), lambda a: a.sum(-1, keepdim=True), (x,)),
        "repeat_add": (lambda a: torch.ops.pyasc_test.repeat_add(a, 3), lambda a: a * 4, (x,)),
    }
    ours, eager, inputs = cases[case]
    outs_ref = eager(*inputs)
    outs_ref = outs_ref if isinstance(outs_ref, tuple) else (outs_ref,)
    cts = [torch.randn(o.shape, generator=g) for o in outs_ref]
    got_outs, got_grads = grads_of(ours, inputs, cts)
    want_outs, want_grads = grads_of(eager, inputs, cts)
    for a, b in zip(got_outs, want_outs):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    for a, b in zip(got_grads, want_grads):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_an_integer_input_gets_no_gradient_and_opcheck_passes_with_grad():
    op = pt.custom_op("pyasc_test::mse_rows", kernels.mse_rows)
    g = torch.Generator().manual_seed(4)
    x, w = torch.randn(5, 8, generator=g), torch.randn(8, 3, generator=g)
    got_outs, got_grads = grads_of(op, (x, w), [torch.ones(5), torch.ones(5)])
    want_outs, want_grads = grads_of(kernels.mse_rows_eager, (x, w), [torch.ones(5), torch.ones(5)])
    for a, b in zip(got_grads, want_grads):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    scale = pt.custom_op("pyasc_test::gather_scale", kernels.gather_scale)
    idx = torch.arange(8, dtype=torch.int32)
    xr = x.clone().requires_grad_()
    scale(xr, idx).sum().backward()
    torch.testing.assert_close(xr.grad, idx.float().expand(5, 8))
    assert torch.ops.pyasc_test.mse_rows_backward.default._schema.name == "pyasc_test::mse_rows_backward"
    torch.library.opcheck(torch.ops.pyasc_test.mse_rows.default, (x.requires_grad_(), w.requires_grad_()))


def test_a_module_with_parameters_trains_through_the_op_without_no_grad():
    class FeedForward(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.up = torch.nn.Linear(16, 24)

        def forward(self, x):
            return torch.ops.pyasc_test.bias_gelu(x @ self.up.weight.T, self.up.bias, 1.0)

    model = FeedForward()
    x = torch.randn(8, 16)
    model(x).square().sum().backward()  # the first complaint: this raised in the forward
    ref = torch.nn.Linear(16, 24)
    ref.load_state_dict(model.up.state_dict())
    gelu_tanh(ref(x)).square().sum().backward()
    torch.testing.assert_close(model.up.weight.grad, ref.weight.grad, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(model.up.bias.grad, ref.bias.grad, rtol=1e-4, atol=1e-5)


def test_torch_compile_training_inlines_the_op_and_its_derived_backward(ops):
    import warnings

    def f(x, b):
        return torch.ops.pyasc_test.bias_gelu(torch.exp(x), b, 2.0).sum(-1)

    x, b = torch.randn(4, 16, requires_grad=True), torch.randn(16, requires_grad=True)
    torch._dynamo.reset()
    compiled = torch.compile(f, backend="pyasc", options={"chip": "tiny"})
    with warnings.catch_warnings():
        warnings.simplefilter("error", pt.PyascGraphBreak)
        compiled(x, b).sum().backward()
    gx, gb = x.grad.clone(), b.grad.clone()
    x.grad = b.grad = None
    (2 * gelu_tanh(torch.exp(x) + b)).sum().backward()
    torch.testing.assert_close(gx, x.grad, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(gb, b.grad, rtol=1e-4, atol=1e-5)
    graphs = pt.last_graphs()
    assert [len(g.subgraphs) for g in graphs] == [1, 1]
    assert all("pyasc_test" not in g.module.code for g in graphs)  # forward and backward ops both inlined
