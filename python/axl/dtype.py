"""Element types (MAX: ``max.dtype.DType``).

The member values are MAX's numbering (spec section 11; also the dtype byte
of MAX's ``.max`` files), so a value means the same thing in both. Integer
codes follow ``0x80 | (log2(bits) << 1) | is_signed``. This first version
holds the types kernels and buffers need today; the float8/float4/float6
families slot in with their MAX values (64-66, 73-78) when buffers grow.
"""

from __future__ import annotations

import builtins
import enum
from typing import Any


class DType(enum.Enum):
    """An element type. ``str(DType.float32) == "DType.float32"``,
    ``repr(DType.float32) == "float32"`` (as MAX)."""

    bool = 1
    float16 = 79
    bfloat16 = 80
    float32 = 81
    float64 = 82
    uint8 = 134
    int8 = 135
    uint16 = 136
    int16 = 137
    uint32 = 138
    int32 = 139
    uint64 = 140
    int64 = 141

    @classmethod
    def _missing_(cls, value: object) -> DType | None:
        # DType("f32") resolves MLIR type names, as MAX does.
        if isinstance(value, str):
            for member in cls:
                if member._mlir == value or member.name == value:
                    return member
        return None

    def __repr__(self) -> str:
        return self.name

    @property
    def size_in_bits(self) -> int:
        """Bits per element (bool: 8, stored as one byte)."""
        return _BITS[self]

    @property
    def size_in_bytes(self) -> int:
        """Bytes per element."""
        return _BITS[self] // 8

    @property
    def align(self) -> int:
        """Alignment in bytes (the element size for every type here)."""
        return self.size_in_bytes

    @property
    def _mlir(self) -> str:
        return _MLIR[self]

    def is_integral(self) -> builtins.bool:
        """True for the signed and unsigned integer types (not bool)."""
        return self.value >= 0x80

    def is_signed_integral(self) -> builtins.bool:
        return self.is_integral() and bool(self.value & 1)

    def is_unsigned_integral(self) -> builtins.bool:
        return self.is_integral() and not (self.value & 1)

    def is_float(self) -> builtins.bool:
        """True for every floating-point type, bfloat16 included."""
        return 64 <= self.value < 0x80

    def is_half(self) -> builtins.bool:
        """float16 and bfloat16."""
        return self in (DType.float16, DType.bfloat16)

    def to_numpy(self) -> Any:
        """The numpy scalar type (``np.float32``, ...).

        Raises:
            ValueError: ``unsupported DType to convert to NumPy: DType.bfloat16``
                for types numpy lacks.
        """
        import numpy as np

        name = _NUMPY.get(self)
        if name is None:
            raise ValueError(f"unsupported DType to convert to NumPy: {self}")
        return getattr(np, name)

    @classmethod
    def from_numpy(cls, dtype: Any) -> DType:
        """The DType of a numpy dtype or scalar type (``np.dtype("f4")``, ``np.int32``).

        Raises:
            ValueError: ``unsupported NumPy dtype: ...`` (complex, object, float128, ...).
        """
        import numpy as np

        try:
            key = np.dtype(dtype)
        except TypeError:
            raise ValueError(f"unsupported NumPy dtype: {dtype}") from None
        for member, name in _NUMPY.items():
            if key == np.dtype(name):
                return member
        raise ValueError(f"unsupported NumPy dtype: {dtype}")


_BITS = {
    DType.bool: 8,
    DType.float16: 16,
    DType.bfloat16: 16,
    DType.float32: 32,
    DType.float64: 64,
    DType.uint8: 8,
    DType.int8: 8,
    DType.uint16: 16,
    DType.int16: 16,
    DType.uint32: 32,
    DType.int32: 32,
    DType.uint64: 64,
    DType.int64: 64,
}

_MLIR = {
    DType.bool: "i1",
    DType.float16: "f16",
    DType.bfloat16: "bf16",
    DType.float32: "f32",
    DType.float64: "f64",
    DType.uint8: "ui8",
    DType.int8: "si8",
    DType.uint16: "ui16",
    DType.int16: "si16",
    DType.uint32: "ui32",
    DType.int32: "si32",
    DType.uint64: "ui64",
    DType.int64: "si64",
}

# numpy attribute names; bfloat16 has no numpy type.
_NUMPY = {
    DType.bool: "bool_",
    DType.float16: "float16",
    DType.float32: "float32",
    DType.float64: "float64",
    DType.uint8: "uint8",
    DType.int8: "int8",
    DType.uint16: "uint16",
    DType.int16: "int16",
    DType.uint32: "uint32",
    DType.int32: "int32",
    DType.uint64: "uint64",
    DType.int64: "int64",
}

__all__ = ["DType"]
