"""Element types (MAX: ``max.dtype.DType``, ``max.dtype.finfo``).

The member values are MAX's numbering (spec section 11, S2-S4; also the
dtype byte of MAX's ``.max`` files and of the core's ``axl_dtype_size_bits``),
so a value means the same thing in both. Integer codes follow
``0x80 | (log2(bits) << 1) | is_signed``.

Decisions where MAX is ambiguous or awkward (docs/python.md, "Differences
from MAX"):

* ``bool`` is stored as one byte: ``size_in_bits`` 8.
* float4 and float6 are stored unpacked, one element per byte (the value in
  the low bits): ``size_in_bytes`` 1, ``size_in_bits`` 4 or 6. This is also
  how ``ml_dtypes`` lays them out in numpy arrays.
* With ``ml_dtypes`` installed, ``to_numpy()`` of bfloat16 and the float8,
  float6 and float4 types gives the real ml_dtypes numpy type (and
  ``from_numpy`` maps it back); without it, MAX's behaviour stays: bfloat16,
  float6 and float4 raise ``ValueError`` and float8 maps to ``np.uint8`` (raw
  bits).

``_decode``/``_encode`` convert between storage bits and Python floats for
the types numpy lacks, in pure numpy/Python, with or without ml_dtypes (the
tests check them against ml_dtypes bit for bit).
"""

from __future__ import annotations

import builtins
import collections
import enum
import math

# Annotations name nothing from typing (object where anything goes), so
# typing.get_type_hints resolves them in these globals while `import
# axl.driver` stays free of typing (benchmarks/python_overhead.py).


class DType(enum.Enum):
    """An element type. ``str(DType.float32) == "DType.float32"``,
    ``repr(DType.float32) == "float32"`` (as MAX); ``DType("f32")`` looks a
    type up by its MLIR name."""

    bool = 1
    float4_e2m1fn = 64
    float6_e2m3fn = 65
    float6_e3m2fn = 66
    float8_e8m0fnu = 73
    float8_e4m3fn = 75
    float8_e4m3fnuz = 76
    float8_e5m2 = 77
    float8_e5m2fnuz = 78
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
        """Bits of one value: bool 8 (one byte), float4 4, float6 6."""
        return _BITS[self]

    @property
    def size_in_bytes(self) -> int:
        """Bytes each element occupies in memory; float4 and float6 take one
        byte each (unpacked)."""
        return (_BITS[self] + 7) // 8

    @property
    def align(self) -> int:
        """Alignment in bytes (the element size for every type)."""
        return self.size_in_bytes

    @property
    def _mlir(self) -> str:
        return _MLIR[self]

    def is_integral(self) -> builtins.bool:
        """True for the signed and unsigned integer types (not bool)."""
        return self.value >= 0x80

    def is_signed_integral(self) -> builtins.bool:
        return self.is_integral() and builtins.bool(self.value & 1)

    def is_unsigned_integral(self) -> builtins.bool:
        return self.is_integral() and not (self.value & 1)

    def is_float(self) -> builtins.bool:
        """True for every floating-point type: float4/6/8, float16/32/64 and
        bfloat16."""
        return 64 <= self.value < 0x80

    def is_float8(self) -> builtins.bool:
        """The five float8 types."""
        return 73 <= self.value <= 78

    def is_half(self) -> builtins.bool:
        """float16 and bfloat16."""
        return self in (DType.float16, DType.bfloat16)

    def to_numpy(self) -> object:
        """The ``numpy.dtype`` (``np.dtype('float32')``, ...; ``ml_dtypes``'
        bfloat16 and friends when ml_dtypes is installed).

        A ``numpy.dtype`` instance, not the scalar type, as MAX returns: code
        written for MAX reads ``.type``, ``.itemsize`` or ``.kind`` from it
        (``dtype.to_numpy().type(7)``); it still compares equal to the scalar
        type (``DType.int8.to_numpy() == np.int8``).

        Without ml_dtypes, float8 types give ``np.dtype('uint8')``: the array
        holds the raw bits, as in MAX.

        Raises:
            ValueError: ``unsupported DType to convert to NumPy: DType.bfloat16``
                for a type with no numpy equivalent here.
        """
        found = _numpy_type(self)
        if found is None:
            raise ValueError(f"unsupported DType to convert to NumPy: {self}")
        import numpy as np

        return np.dtype(found)

    @classmethod
    def from_numpy(cls, dtype: object) -> DType:
        """The DType of a numpy dtype or scalar type (``np.dtype("f4")``,
        ``np.int32``, ``ml_dtypes.bfloat16``). ``np.uint8`` is always
        ``DType.uint8``.

        Raises:
            ValueError: ``unsupported NumPy dtype: ...`` (complex, object,
                float128, ...).
        """
        import numpy as np

        try:
            key = np.dtype(dtype)
        except TypeError:
            raise ValueError(f"unsupported NumPy dtype: {dtype}") from None
        # Built once: from_numpy is on the path of every Buffer.from_numpy.
        global _FROM_NUMPY
        if _FROM_NUMPY is None:
            table = {}
            for member in cls:
                found = _numpy_type(member)
                # A float8 type that this ml_dtypes lacks (or no ml_dtypes)
                # falls back to its raw bits, np.uint8: that stands for it
                # one way only, or uint8 data would import as float8
                # (ml_dtypes < 0.5 has no float8_e8m0fnu).
                if member.is_float8() and found is np.uint8:
                    continue
                if found is not None:
                    table.setdefault(np.dtype(found), member)
            _FROM_NUMPY = table
        member = _FROM_NUMPY.get(key)
        if member is None:
            raise ValueError(f"unsupported NumPy dtype: {dtype}")
        return member


_BITS = {
    DType.bool: 8,
    DType.float4_e2m1fn: 4,
    DType.float6_e2m3fn: 6,
    DType.float6_e3m2fn: 6,
    DType.float8_e8m0fnu: 8,
    DType.float8_e4m3fn: 8,
    DType.float8_e4m3fnuz: 8,
    DType.float8_e5m2: 8,
    DType.float8_e5m2fnuz: 8,
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
    DType.float4_e2m1fn: "f4e2m1fn",
    DType.float6_e2m3fn: "f6e2m3fn",
    DType.float6_e3m2fn: "f6e3m2fn",
    DType.float8_e8m0fnu: "f8e8m0fnu",
    DType.float8_e4m3fn: "f8e4m3fn",
    DType.float8_e4m3fnuz: "f8e4m3fnuz",
    DType.float8_e5m2: "f8e5m2",
    DType.float8_e5m2fnuz: "f8e5m2fnuz",
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

# numpy attribute names of the types numpy has.
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

# numpy dtype -> DType, filled on the first DType.from_numpy call.
_FROM_NUMPY: dict[object, DType] | None = None

_ML_DTYPES_MISSING = object()
_ml_dtypes_module: object = None


def _ml_dtypes() -> object:
    """The ml_dtypes module, or None when it is not installed (looked up once)."""
    global _ml_dtypes_module
    if _ml_dtypes_module is None:
        try:
            import ml_dtypes

            _ml_dtypes_module = ml_dtypes
        except ImportError:
            _ml_dtypes_module = _ML_DTYPES_MISSING
    return None if _ml_dtypes_module is _ML_DTYPES_MISSING else _ml_dtypes_module


def _numpy_type(dtype: DType) -> object:
    import numpy as np

    name = _NUMPY.get(dtype)
    if name is not None:
        return getattr(np, name)
    ml = _ml_dtypes()
    if ml is not None and hasattr(ml, dtype.name):
        return getattr(ml, dtype.name)  # ml_dtypes uses MAX's names
    if dtype.is_float8():
        return np.uint8  # MAX: a reinterpretation, the raw bits
    return None


def _raw_numpy(dtype: DType) -> object:
    """The numpy unsigned integer type as wide as one element's storage."""
    import numpy as np

    return {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[dtype.size_in_bytes]


# ------------------------------------------------------------------- finfo --


class finfo:  # noqa: N801 (MAX's name)
    """Machine limits of a floating-point DType (MAX: ``max.dtype.finfo``,
    also ``DType.finfo``): ``bits``, ``eps``, ``max``, ``min``, ``tiny``
    (= ``smallest_normal``) and ``dtype``. The values of the types numpy lacks
    are MAX's hard-coded ones; float16/32/64 come from ``numpy.finfo``.

    Raises:
        TypeError: ``finfo only supports floating-point types, got int32``.
    """

    bits: int
    eps: float
    max: float
    min: float
    tiny: float
    dtype: DType

    def __init__(self, dtype: DType) -> None:
        if not isinstance(dtype, DType) or not dtype.is_float():
            name = dtype.name if isinstance(dtype, DType) else repr(dtype)
            raise TypeError(f"finfo only supports floating-point types, got {name}")
        self.dtype = dtype
        limits = _FINFO.get(dtype)
        if limits is None:
            import numpy as np

            info = np.finfo(_NUMPY[dtype])
            limits = (info.bits, float(info.eps), float(info.max), float(info.min), float(info.tiny))
        self.bits, self.eps, self.max, self.min, self.tiny = limits

    @property
    def smallest_normal(self) -> float:
        return self.tiny

    def __repr__(self) -> str:
        return (
            f"finfo(resolution={self.eps}, min={self.min}, max={self.max}, "
            f"tiny={self.tiny}, bits={self.bits}, dtype={self.dtype.name})"
        )


_BF16_MAX = (2 - 2.0**-7) * 2.0**127
# (bits, eps, max, min, tiny) as MAX hard-codes them.
_FINFO = {
    DType.bfloat16: (16, 2.0**-7, _BF16_MAX, -_BF16_MAX, 2.0**-126),
    DType.float8_e4m3fn: (8, 0.125, 448.0, -448.0, 2.0**-6),
    DType.float8_e4m3fnuz: (8, 0.125, 240.0, -240.0, 2.0**-7),
    DType.float8_e5m2: (8, 0.25, 57344.0, -57344.0, 2.0**-14),
    DType.float8_e5m2fnuz: (8, 0.25, 57344.0, -57344.0, 2.0**-15),
    DType.float8_e8m0fnu: (8, 1.0, 2.0**127, 2.0**-127, 2.0**-127),
    DType.float4_e2m1fn: (4, 0.5, 6.0, -6.0, 1.0),
    DType.float6_e2m3fn: (6, 0.125, 7.5, -7.5, 1.0),
    DType.float6_e3m2fn: (6, 0.25, 28.0, -28.0, 0.25),
}

# DType.finfo(DType.bfloat16), as MAX. A class is not a descriptor, so it is
# reachable from the enum class and its members alike.
setattr(DType, "finfo", finfo)


# --------------------------------------------------- storage bits <-> float --


# ebits, mbits, bias: ints. kind, the special values: "ieee" (all-ones
# exponent: inf / NaN), "fn" (no inf; all-ones exponent and mantissa is NaN),
# "fnuz" (no inf, no -0; 0x80 is the only NaN), "none" (float4/float6: every
# pattern a finite number), "e8m0" (exponent only, unsigned; 0xFF is NaN).
_Format = collections.namedtuple("_Format", ["ebits", "mbits", "bias", "kind"])


_FORMATS = {
    DType.bfloat16: _Format(8, 7, 127, "ieee"),
    DType.float8_e5m2: _Format(5, 2, 15, "ieee"),
    DType.float8_e4m3fn: _Format(4, 3, 7, "fn"),
    DType.float8_e4m3fnuz: _Format(4, 3, 8, "fnuz"),
    DType.float8_e5m2fnuz: _Format(5, 2, 16, "fnuz"),
    DType.float8_e8m0fnu: _Format(8, 0, 127, "e8m0"),
    DType.float4_e2m1fn: _Format(2, 1, 1, "none"),
    DType.float6_e2m3fn: _Format(2, 3, 1, "none"),
    DType.float6_e3m2fn: _Format(3, 2, 3, "none"),
}


def _format(dtype: DType) -> _Format:
    fmt = _FORMATS.get(dtype)
    if fmt is None:
        raise ValueError(f"no bit codec for {dtype}: numpy reads it directly")
    return fmt


def _decode(dtype: DType, raw: object) -> object:
    """Values of storage bit patterns as a float64 numpy array of raw's shape.

    ``raw`` holds patterns of the storage width (uint8, or uint16 for
    bfloat16); float4/float6 use the low 4/6 bits and ignore the rest.
    """
    import numpy as np

    fmt = _format(dtype)
    width = 1 + fmt.ebits + fmt.mbits if fmt.kind != "e8m0" else 8
    bits = np.asarray(raw).astype(np.int64) & ((1 << width) - 1)
    if fmt.kind == "e8m0":
        out = np.ldexp(1.0, bits - fmt.bias)
        out[bits == 0xFF] = np.nan
        return out
    mant_mask = (1 << fmt.mbits) - 1
    exp_all = (1 << fmt.ebits) - 1
    sign = (bits >> (fmt.ebits + fmt.mbits)) & 1
    exp = (bits >> fmt.mbits) & exp_all
    man = bits & mant_mask
    # Subnormals (exp 0) have no implicit 1 and the exponent of exp 1.
    significand = np.where(exp == 0, man, man + (1 << fmt.mbits)).astype(np.float64)
    mag = np.ldexp(significand, np.maximum(exp, 1) - fmt.bias - fmt.mbits)
    out = np.where(sign == 1, -mag, mag)
    signed_nan = np.where(sign == 1, -np.nan, np.nan)  # NaNs keep their sign bit
    if fmt.kind == "ieee":
        top = exp == exp_all
        out = np.where(top & (man == 0), np.where(sign == 1, -np.inf, np.inf), out)
        out = np.where(top & (man != 0), signed_nan, out)
    elif fmt.kind == "fn":
        out = np.where((exp == exp_all) & (man == mant_mask), signed_nan, out)
    elif fmt.kind == "fnuz":
        out = np.where(bits == 0x80, -np.nan, out)  # the sign bit is set in 0x80
    return out


def _encode(dtype: DType, value: float) -> int:
    """The storage bits of ``value`` in ``dtype`` (bfloat16, float8, float6,
    float4), rounded to nearest, ties to even.

    The conventions are ml_dtypes' (so results match it bit for bit):
    bfloat16 and float8_e5m2 overflow to inf; float8_e4m3fn overflows to NaN
    (it has no inf); the fnuz types map overflow, inf and NaN to 0x80 and
    never produce -0; float4/float6 saturate to +-max; float8_e8m0fnu rounds
    ties up, maps 0, negatives, inf and NaN to its NaN 0xFF and values below
    2^-127 to 2^-127. MAX truncates bfloat16 instead of rounding.

    Where this differs from ml_dtypes, on purpose:
    * ``value`` is rounded once, from float64; ml_dtypes casts float64 through
      float32 first, so a value within half a float32 step of a tie can round
      the other way there (double rounding). For float32-exact inputs the
      results are identical.
    * float8_e8m0fnu: values in (2^-127, 2^-126) go to the nearer of the two
      (ml_dtypes rounds every float32 subnormal up).
    * NaN in float4/float6, which have no NaN, becomes a zero of the NaN's
      sign (ml_dtypes gives the zero of the opposite sign).
    """
    fmt = _format(dtype)
    x = float(value)
    negative = math.copysign(1.0, x) < 0
    if fmt.kind == "e8m0":
        return _encode_e8m0(x, negative)
    exp_all = (1 << fmt.ebits) - 1
    sign = (1 << (fmt.ebits + fmt.mbits)) if negative else 0
    nan_bits = {
        "ieee": sign | (exp_all << fmt.mbits) | (1 << (fmt.mbits - 1)),
        "fn": sign | (exp_all << fmt.mbits) | ((1 << fmt.mbits) - 1),
        "fnuz": 0x80,
        "none": sign,
    }[fmt.kind]
    # The largest finite magnitude's bits for each convention.
    max_bits = {
        "ieee": ((exp_all - 1) << fmt.mbits) | ((1 << fmt.mbits) - 1),
        "fn": (exp_all << fmt.mbits) | ((1 << fmt.mbits) - 2),
        "fnuz": (exp_all << fmt.mbits) | ((1 << fmt.mbits) - 1),
        "none": (exp_all << fmt.mbits) | ((1 << fmt.mbits) - 1),
    }[fmt.kind]
    if fmt.kind == "ieee":
        overflow_bits = sign | (exp_all << fmt.mbits)  # inf
    elif fmt.kind == "none":
        overflow_bits = sign | max_bits
    else:
        overflow_bits = nan_bits
    if math.isnan(x):
        return nan_bits
    a = abs(x)
    if math.isinf(a):
        return overflow_bits
    emin = 1 - fmt.bias
    e = math.frexp(a)[1] - 1 if a else emin
    e = max(e, emin)  # below the normal range the quantum stays 2^(emin - m)
    # a / quantum is exact (a power-of-two scale); round() is ties-to-even.
    n = round(math.ldexp(a, fmt.mbits - e))
    if n == 1 << (fmt.mbits + 1):  # rounded up into the next binade
        n >>= 1
        e += 1
    if n == 0:
        return 0 if fmt.kind == "fnuz" else sign
    if n < (1 << fmt.mbits):
        bits = n  # subnormal: exponent field 0
    else:
        bits = ((e + fmt.bias) << fmt.mbits) | (n - (1 << fmt.mbits))
    if bits > max_bits:
        return overflow_bits
    return sign | bits


def _encode_e8m0(x: float, negative: bool) -> int:
    if math.isnan(x) or math.isinf(x) or negative or x == 0:
        return 0xFF
    mant, e = math.frexp(x)  # x = mant * 2^e, 0.5 <= mant < 1
    e -= 1
    if mant >= 0.75:  # 1.5 * 2^e and above round up
        e += 1
    if e > 127:
        return 0xFF
    return max(e, -127) + 127


__all__ = ["DType", "finfo"]
