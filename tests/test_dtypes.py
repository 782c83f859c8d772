"""pyasc.dtypes: canonical names, numpy mapping, promotion (numpy 2 rules, weak scalars, narrowed)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import pyasc
from pyasc import dtypes

F16, F32, I8, I16, I32, U8, B = "float16", "float32", "int8", "int16", "int32", "uint8", "bool"

# numpy 2's promotion table restricted to our dtypes, written out by hand;
# "(64)" marks where numpy says float64 and pyasc narrows to float32
PROMOTE_TABLE = {
    (F16, F16): F16, (F16, F32): F32, (F16, I8): F16, (F16, I16): F32, (F16, I32): F32,  # (64)
    (F16, U8): F16, (F16, B): F16,
    (F32, F32): F32, (F32, I8): F32, (F32, I16): F32, (F32, I32): F32, (F32, U8): F32, (F32, B): F32,  # I32: (64)
    (I8, I8): I8, (I8, I16): I16, (I8, I32): I32, (I8, U8): I16, (I8, B): I8,
    (I16, I16): I16, (I16, I32): I32, (I16, U8): I16, (I16, B): I16,
    (I32, I32): I32, (I32, U8): I32, (I32, B): I32,
    (U8, U8): U8, (U8, B): U8,
    (B, B): B,
}


def test_names_and_numpy_mapping():
    assert dtypes.NAMES == (F16, F32, I8, I16, I32, U8, B)
    for name in dtypes.NAMES:
        assert dtypes.to_numpy(name) == np.dtype(name)
        assert dtypes.itemsize(name) == np.dtype(name).itemsize
    assert [dtypes.short(n) for n in dtypes.NAMES] == ["f16", "f32", "i8", "i16", "i32", "u8", "bool"]
    assert pyasc.float16 is np.float16 and pyasc.bool_ is np.bool_ and pyasc.uint8 is np.uint8


@pytest.mark.parametrize("pair", sorted(PROMOTE_TABLE))
def test_promote_table(pair):
    a, b = pair
    assert dtypes.promote(a, b) == PROMOTE_TABLE[pair]
    assert dtypes.promote(b, a) == PROMOTE_TABLE[pair]


def test_promote_matches_numpy_arithmetic_narrowed():
    for a, b in itertools.product(dtypes.NAMES, repeat=2):
        numpy_result = (np.zeros(2, a) + np.zeros(2, b)).dtype
        assert dtypes.promote(a, b) == dtypes.narrow(numpy_result), (a, b)


@pytest.mark.parametrize(
    "operands, expected",
    [
        ((I8, 1), I8),  # a Python int is weak: int8 + 1 stays int8
        ((U8, 1), U8),
        ((I16, True), I16),
        ((I8, 1.0), F32),  # int array + Python float: numpy says float64, narrowed
        ((U8, 2.5), F32),
        ((F16, 1.0), F16),  # a Python float does not widen float16
        ((F16, 1), F16),
        ((B, 1), I32),  # bool + Python int: numpy's default int (int64), narrowed
        ((B, 1.0), F32),
        ((B, True), B),
        ((F16, I8, 1.0), F16),
        ((1, 2.0), F32),  # only scalars: their default types
        ((1,), I32),
        ((True,), B),
        ((F16, np.float32(1)), F32),  # numpy scalars are strong
        ((I8, np.int16(1)), I16),
        ((F16, np.float64(1.0)), F32),  # np.float64 is a Python float subclass, but strong
        ((I8, np.dtype(np.int16)), I16),
        ((I8, np.uint8), I16),
    ],
)
def test_promote_weak_and_strong_scalars(operands, expected):
    assert dtypes.promote(*operands) == expected


def test_promote_weak_scalars_agree_with_numpy_arrays():
    for name in dtypes.NAMES:
        for scalar in (1, 1.5, True):
            got = (np.ones(2, name) + scalar).dtype
            assert dtypes.promote(name, scalar) == dtypes.narrow(got), (name, scalar)


def test_promote_errors():
    with pytest.raises(TypeError, match="at least one operand"):
        dtypes.promote()
    with pytest.raises(dtypes.DTypeError, match="neither a dtype"):
        dtypes.promote(I8, 1j)


@pytest.mark.parametrize(
    "obj, name",
    [(np.float16, F16), ("float16", F16), ("f2", F16), (np.dtype("float32"), F32), (np.int8, I8), ("int16", I16),
     (np.int32, I32), (np.uint8, U8), (bool, B), (np.bool_, B), ("bool", B), (pyasc.bool_, B)],
)
def test_normalize(obj, name):
    assert dtypes.normalize(obj) == name
    assert dtypes.is_supported(obj)


@pytest.mark.parametrize("obj, words", [(np.float64, "float64"), (float, "float64"), (np.int64, "int64"),
                                        (np.complex64, "complex64"), ("nonsense", "not a dtype")])
def test_normalize_rejects_unsupported(obj, words):
    with pytest.raises(dtypes.DTypeError, match=words) as e:
        dtypes.normalize(obj)
    assert "supported dtypes are float16, float32, int8, int16, int32, uint8, bool_" in str(e.value)
    assert not dtypes.is_supported(obj)
    assert isinstance(e.value, TypeError)


def test_narrow():
    assert dtypes.narrow(np.float64) == F32
    assert dtypes.narrow(np.int64) == I32
    assert dtypes.narrow(np.uint64) == I32
    assert dtypes.narrow(np.float16) == F16
    with pytest.raises(dtypes.DTypeError, match="complex128"):
        dtypes.narrow(np.complex128)


def test_kind_predicates_and_scalar_dtype():
    assert [n for n in dtypes.NAMES if dtypes.is_float(n)] == [F16, F32]
    assert [n for n in dtypes.NAMES if dtypes.is_int(n)] == [I8, I16, I32, U8]
    assert [n for n in dtypes.NAMES if dtypes.is_bool(n)] == [B]
    assert dtypes.scalar_dtype(True) == B
    assert dtypes.scalar_dtype(3) == I32
    assert dtypes.scalar_dtype(2.5) == F32
    with pytest.raises(dtypes.DTypeError, match="not a tensor scalar"):
        dtypes.scalar_dtype("a")
