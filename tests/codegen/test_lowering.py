"""Every op that can reach code generation has a lowering; one that has none is a located CompileError."""
from __future__ import annotations

import pytest

from pyasc import ops
from pyasc.codegen.lowering import BOOL_FN, VECTOR, no_lowering
from pyasc.codegen.templates import lowered_by
from pyasc.errors import CompileError, SourceLoc


def _reaching_codegen() -> set[str]:
    """Registry ops a kernel graph can hold: every primitive (composites are expanded into primitives)."""
    return {name for name in ops.names() if not ops.get(name).structural and not ops.get(name).composite}


@pytest.mark.parametrize("op", sorted(_reaching_codegen()))
def test_every_primitive_op_has_a_lowering(op):
    assert lowered_by(op) is not None, f"no lowering for {op}"


def test_vector_functions_exist_in_the_simulator():
    from simulator import isa

    for op, low in VECTOR.items():
        if low.kind in ("binary",):
            assert low.fn in isa.VBINARY_COST, op
        elif low.kind == "unary":
            assert low.fn in isa.VUNARY_COST, op
        elif low.kind == "compare":
            assert low.fn in isa.VCOMPARE_FNS, op
    assert set(BOOL_FN.values()) <= set(isa.VBINARY_COST)


def test_no_lowering_is_a_located_compile_error():
    loc = SourceLoc(__file__, 1, 0, 1, 3)
    err = no_lowering("frobnicate", "k_k0", loc, "nothing computes it")
    assert isinstance(err, CompileError) and err.loc == loc
    assert "no NPU lowering for `frobnicate` in kernel k_k0: nothing computes it" in str(err)
