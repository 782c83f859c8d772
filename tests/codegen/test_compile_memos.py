"""Memos of compile-time facts (pyasc.memo): a memoised result equals what the function computes now, for
every chip and dtype it is asked about (a memo keyed on immutable values is never stale)."""
from __future__ import annotations

import pytest

from pyasc.codegen.templates import matmul as matmul_template
from pyasc.codegen.templates import matmul_tiling
from pyasc.memo import memoised
from simulator import chips


def test_memoised_keys_on_values_and_types_and_passes_unhashable_arguments_through():
    calls = []

    @memoised(8)
    def double(x):
        calls.append(x)
        if isinstance(x, list):
            raise TypeError("lists are refused")
        return 2 * x

    assert double(2) == 4 and double(2) == 4 and calls == [2]
    assert double(True) == 2 and calls == [2, True]       # a bool is not the int 1's entry
    with pytest.raises(TypeError, match="lists are refused"):
        double([1])
    assert double.cache_info().currsize == 2


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_matmul_tilings_memo_follows_the_chip_and_the_dtype(dtype):
    """The router and the tiler ask for the same candidates; the memo answers per chip, per chip variant
    (a smaller L1 tiles differently) and per dtype exactly what a fresh enumeration gives."""
    big = chips.get("910b")
    seen = []
    for chip in (chips.get("tiny"), big, big.replace(l1_bytes=big.l1_bytes // 8)):
        mk = matmul_template.CubeMatmul("probe", 256, 256, 512, (), dtype, "float32").for_chip(chip)
        cores = chip.cores_of("aic")
        got = matmul_tiling.tilings(mk, chip, 2, cores, {})
        assert got == matmul_tiling.tilings(mk, chip, 2, cores, {})
        assert got == list(matmul_tiling._tilings.__wrapped__(mk, chip, 2, min(cores, chip.aic_cores), 256, 256, 512))
        seen.append(got)
    assert seen[0] != seen[1] and seen[1] != seen[2]


def add(x, y):
    return x + y


def mul_add(x, y):
    return x * y + 1.0


def test_kernels_with_the_same_host_code_share_its_object_code_and_each_runs_right():
    """Host modules differ by the kernel's name only when their launches are alike: they share object code
    and the JIT linked from it (host functions keep no state), and each kernel still computes its own result;
    a kernel with other launch fields gets its own."""
    import numpy as np
    import pyasc
    from pyasc.testing import assert_close

    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    k1, k2 = pyasc.kernel(add, chip="tiny"), pyasc.kernel(mul_add, chip="tiny")
    a1, a2 = k1.compile(x, y), k2.compile(x, y)
    assert a1.host_ir != a2.host_ir          # the module names differ
    assert a1.host.object_code == a2.host.object_code and a1.host._run is a2.host._run
    assert_close(k1(x, y), x + y)
    assert_close(k2(x, y), x * y + 1.0)
    big = rng.standard_normal((64, 300)).astype(np.float32)
    a3 = k1.compile(big, big)
    assert a3.host.object_code != a1.host.object_code and a3.host._run is not a1.host._run
    assert_close(k1(big, big), big + big)


def test_vector_op_cycles_memo_follows_the_chip_and_the_dtype():
    """The cost model's memo of a vector op's cycles is keyed on the chip's vector costs and the op's dtype:
    a chip with a slower vector unit, or a wider dtype, is charged more."""
    from pyasc.codegen import cost, tileops
    from pyasc.codegen.schedule import Ref

    chip = chips.get("910b")
    slow = chip.replace(vector_binary_cycles=chip.vector_binary_cycles * 3)

    def cycles(c, dtype):
        op = tileops.vbinary("add", Ref("c"), Ref("a"), Ref("b"), 4096, dtype)
        return cost._vector_cycles(op, {}, c)

    assert cycles(chip, "float16") == cycles(chip, "float16") < cycles(slow, "float16")
    assert cycles(chip, "float16") < cycles(chip, "float32")


def test_ufunc_dtype_memo_answers_per_dtype():
    import numpy as np
    from pyasc.errors import InferError
    from pyasc.ops.common import ufunc_dtype

    assert ufunc_dtype(np.add, "add", "float16", "float32") == "float32"
    assert ufunc_dtype(np.add, "add", "int8", "uint8") == "int16"
    assert ufunc_dtype(np.add, "add", "float16", "float16") == "float16"
    for _ in range(2):  # a refusal is never remembered as an answer
        with pytest.raises(InferError, match="does not accept"):
            ufunc_dtype(np.bitwise_and, "bitwise_and", "float32", "float32")
