"""The LLVM host module computes exactly what the compiler computes in Python (one algebra, two evaluators)."""
from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from llvmlite import ir

import pyasc
from pyasc import symbolic as sy
from pyasc.codegen.host import I64, I64P, ExprEmitter, HostProgram, _target_machine
from pyasc.codegen.launch import reference_launches

SYMS = ["a", "b", "c"]
OPS = ["add", "mul", "floordiv", "ceildiv", "mod", "min", "max", "lt", "le", "eq", "ne"]


def _random_expr(rng: np.random.Generator, depth: int):
    if depth == 0 or rng.random() < 0.3:
        return sy.sym(SYMS[rng.integers(3)]) if rng.random() < 0.6 else int(rng.integers(-7, 12))
    op = OPS[rng.integers(len(OPS))]
    a, b = _random_expr(rng, depth - 1), _random_expr(rng, depth - 1)
    if op in ("floordiv", "ceildiv", "mod"):
        b = sy.max_(1, b)  # a positive divisor, as tiling formulas have
    if rng.random() < 0.1:
        return sy.select(sy.lt(a, b), a, b)
    return sy.build(op, a, b)


def _jit(exprs):
    module = ir.Module("exprs")
    module.triple = llvm.get_process_triple()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64P, I64P]), "f")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    syms = {s: b.load(b.gep(fn.args[0], [ir.Constant(I64, i)])) for i, s in enumerate(SYMS)}
    ex = ExprEmitter(b, syms)
    for i, e in enumerate(exprs):
        b.store(ex(e), b.gep(fn.args[1], [ir.Constant(I64, i)]))
    b.ret_void()
    mod = llvm.parse_assembly(str(module))
    jit = llvm.create_lljit_compiler(_target_machine())
    tracker = llvm.JITLibraryBuilder().add_ir(mod).export_symbol("f").link(jit, "exprs")
    f = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64))(tracker["f"])
    return f, (jit, tracker)


def test_llvm_expressions_match_python_on_random_formulas():
    rng = np.random.default_rng(7)
    exprs = [_random_expr(rng, 4) for _ in range(300)]
    f, keep = _jit(exprs)
    for _ in range(20):
        env = {s: int(rng.integers(-50, 5000)) for s in SYMS}
        dims = (ctypes.c_int64 * 3)(*(env[s] for s in SYMS))
        out = (ctypes.c_int64 * len(exprs))()
        f(dims, out)
        assert list(out) == [sy.evaluate(e, env) for e in exprs]
    del keep


@pyasc.kernel(dynamic=True, chip="tiny")
def dyn(x, w):
    return pyasc.softmax(x * w, axis=-1) + 1.0


@pyasc.kernel(dynamic=True, chip="910b")
def dyn_sum(x):
    return pyasc.sum(pyasc.exp(x), axis=0)


@settings(max_examples=12, deadline=None)
@given(st.integers(2, 300), st.integers(2, 5000))
def test_host_tiling_equals_python_tiling_on_random_shapes(rows, cols):
    x = np.zeros((rows, cols), np.float32)
    w = np.zeros((cols,), np.float32)
    for kern, args in ((dyn, (x, w)), (dyn_sum, (x,))):
        art = kern.compile(*args)
        env = {"x_d0": rows, "x_d1": cols, "w_d0": cols}
        env = {s: env[s] for s in art.device.launch.dim_symbols}
        calls = []
        art.host.run(env, lambda site, blocks, fields: calls.append((site.kernel, blocks, dict(zip(site.fields, fields)))),
                     lambda site, off: True)
        assert calls == reference_launches(art.device.launch, art.device.kernels, env)
        ws, outs = art.host.sizes(env)
        assert ws == sy.evaluate(art.device.launch.workspace_bytes, env)


def test_a_callback_error_stops_the_run_and_is_raised():
    art = dyn.compile(np.zeros((4, 8), np.float32), np.zeros((8,), np.float32))

    def boom(site, blocks, fields):
        raise RuntimeError("emulator refused")

    env = {s: 4 if s.endswith("d0") and s.startswith("x") else 8 for s in art.device.launch.dim_symbols}
    with pytest.raises(RuntimeError, match="emulator refused"):
        art.host.run(env, boom, lambda site, off: True)


def test_object_code_reloads_without_the_ir_compiler():
    art = dyn.compile(np.zeros((4, 8), np.float32), np.zeros((8,), np.float32))
    again = HostProgram.load(art.host.source, art.host.object_code)
    env = {s: 4 if s == "x_d0" else 8 for s in art.device.launch.dim_symbols}
    assert again.sizes(env) == art.host.sizes(env)
    assert isinstance(art.host.object_code, bytes) and len(art.host.object_code) > 100
