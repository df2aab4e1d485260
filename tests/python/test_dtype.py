"""axl.dtype.DType: MAX's values and conversions (spec section 11)."""

from __future__ import annotations

import enum

import numpy as np
import pytest

from axl.dtype import DType

MAX_VALUES = {
    "bool": 1, "float16": 79, "bfloat16": 80, "float32": 81, "float64": 82, "uint8": 134, "int8": 135,
    "uint16": 136, "int16": 137, "uint32": 138, "int32": 139, "uint64": 140, "int64": 141,
}


def test_values_are_max_numbering():
    assert issubclass(DType, enum.Enum)
    for name, value in MAX_VALUES.items():
        assert DType[name].value == value
        assert DType(value) is DType[name]


def test_integer_code_pattern():
    for dt in DType:
        if dt.is_integral():
            bits = dt.size_in_bits
            assert dt.value == 0x80 | ((bits.bit_length() - 1) << 1) | int(dt.is_signed_integral())


def test_str_repr_and_mlir_names():
    assert str(DType.float32) == "DType.float32"
    assert repr(DType.float32) == "float32"
    assert DType("f32") is DType.float32
    assert DType("bf16") is DType.bfloat16
    assert DType("si64") is DType.int64
    with pytest.raises(ValueError):
        DType("f128")


@pytest.mark.parametrize("dt", list(DType))
def test_sizes_and_numpy(dt):
    assert dt.size_in_bytes * 8 == dt.size_in_bits
    assert dt.align == dt.size_in_bytes
    if dt is DType.bfloat16:
        with pytest.raises(ValueError, match="unsupported DType to convert to NumPy: DType.bfloat16"):
            dt.to_numpy()
        return
    np_type = dt.to_numpy()
    assert np.dtype(np_type).itemsize == dt.size_in_bytes
    assert DType.from_numpy(np_type) is dt
    assert DType.from_numpy(np.dtype(np_type)) is dt


def test_predicates():
    assert DType.float32.is_float() and DType.bfloat16.is_float() and not DType.int8.is_float()
    assert DType.float16.is_half() and DType.bfloat16.is_half() and not DType.float32.is_half()
    assert DType.uint32.is_unsigned_integral() and not DType.uint32.is_signed_integral()
    assert DType.int32.is_signed_integral() and DType.int32.is_integral()
    assert not DType.bool.is_integral() and not DType.bool.is_float()


@pytest.mark.parametrize("bad", [np.complex64, np.object_, "datetime64[s]", "U3"])
def test_from_numpy_rejects(bad):
    with pytest.raises(ValueError, match="unsupported NumPy dtype"):
        DType.from_numpy(bad)
