"""axl.dtype: MAX's DType values, sizes, predicates, numpy mapping (with and
without ml_dtypes) and finfo (spec section 11); the storage-bit codecs
``_decode``/``_encode``, exhaustively against ml_dtypes when it is installed
and against hand-checked values always."""

from __future__ import annotations

import enum
import math

import numpy as np
import pytest

import axl.dtype as axl_dtype
from axl.dtype import DType, finfo

try:
    import ml_dtypes
except ImportError:  # the codec tests against it are skipped, the rest runs
    ml_dtypes = None

needs_ml_dtypes = pytest.mark.skipif(ml_dtypes is None, reason="ml_dtypes is not installed")

# name: (value, bits, bytes, mlir)
MAX_TABLE = {
    "bool": (1, 8, 1, "i1"),
    "float4_e2m1fn": (64, 4, 1, "f4e2m1fn"),
    "float6_e2m3fn": (65, 6, 1, "f6e2m3fn"),
    "float6_e3m2fn": (66, 6, 1, "f6e3m2fn"),
    "float8_e8m0fnu": (73, 8, 1, "f8e8m0fnu"),
    "float8_e4m3fn": (75, 8, 1, "f8e4m3fn"),
    "float8_e4m3fnuz": (76, 8, 1, "f8e4m3fnuz"),
    "float8_e5m2": (77, 8, 1, "f8e5m2"),
    "float8_e5m2fnuz": (78, 8, 1, "f8e5m2fnuz"),
    "float16": (79, 16, 2, "f16"),
    "bfloat16": (80, 16, 2, "bf16"),
    "float32": (81, 32, 4, "f32"),
    "float64": (82, 64, 8, "f64"),
    "uint8": (134, 8, 1, "ui8"),
    "int8": (135, 8, 1, "si8"),
    "uint16": (136, 16, 2, "ui16"),
    "int16": (137, 16, 2, "si16"),
    "uint32": (138, 32, 4, "ui32"),
    "int32": (139, 32, 4, "si32"),
    "uint64": (140, 64, 8, "ui64"),
    "int64": (141, 64, 8, "si64"),
}
FLOAT8 = [DType.float8_e8m0fnu, DType.float8_e4m3fn, DType.float8_e4m3fnuz, DType.float8_e5m2,
          DType.float8_e5m2fnuz]
SUB_BYTE = [DType.float4_e2m1fn, DType.float6_e2m3fn, DType.float6_e3m2fn]
CODEC_TYPES = [DType.bfloat16, *FLOAT8, *SUB_BYTE]
NUMPY_NATIVE = [d for d in DType if d is not DType.bfloat16 and d not in FLOAT8 and d not in SUB_BYTE]


def _all_patterns(dt):
    width = 16 if dt is DType.bfloat16 else (dt.size_in_bits if dt in SUB_BYTE else 8)
    return np.arange(1 << width, dtype=axl_dtype._raw_numpy(dt))


@pytest.fixture
def without_ml_dtypes(monkeypatch):
    """DType behaves as if ml_dtypes were not installed (MAX's mapping)."""
    monkeypatch.setattr(axl_dtype, "_ml_dtypes_module", axl_dtype._ML_DTYPES_MISSING)


def test_members_values_sizes_and_mlir_names_are_max():
    assert issubclass(DType, enum.Enum)
    assert [d.name for d in DType] == list(MAX_TABLE)
    for name, (value, bits, nbytes, mlir) in MAX_TABLE.items():
        dt = DType[name]
        assert dt.value == value and DType(value) is dt
        assert (dt.size_in_bits, dt.size_in_bytes, dt.align) == (bits, nbytes, nbytes)
        assert dt._mlir == mlir and DType(mlir) is dt and DType(name) is dt


def test_integer_code_pattern():
    ints = [d for d in DType if d.is_integral()]
    assert len(ints) == 8
    for dt in ints:
        assert dt.value == 0x80 | ((dt.size_in_bits.bit_length() - 1) << 1) | int(dt.is_signed_integral())


def test_str_repr_and_lookup_errors():
    assert str(DType.float32) == "DType.float32"
    assert repr(DType.float8_e4m3fn) == "float8_e4m3fn"
    with pytest.raises(ValueError):
        DType("f128")
    with pytest.raises(ValueError, match="74 is not a valid DType"):
        DType(74)


def test_predicates():
    floats = {d for d in DType if d.is_float()}
    assert floats == {DType.float16, DType.bfloat16, DType.float32, DType.float64, *FLOAT8, *SUB_BYTE}
    assert {d for d in DType if d.is_float8()} == set(FLOAT8)
    assert {d for d in DType if d.is_half()} == {DType.float16, DType.bfloat16}
    assert {d for d in DType if d.is_signed_integral()} == {DType.int8, DType.int16, DType.int32, DType.int64}
    assert {d for d in DType if d.is_unsigned_integral()} == {
        DType.uint8, DType.uint16, DType.uint32, DType.uint64}
    assert not DType.bool.is_integral() and not DType.bool.is_float()


@pytest.mark.parametrize("dt", NUMPY_NATIVE, ids=lambda d: d.name)
def test_to_numpy_is_a_numpy_dtype_instance(dt):
    """MAX's to_numpy() returns np.dtype(...), not the scalar type: code
    written for MAX builds values with .type and reads .itemsize/.kind."""
    got = dt.to_numpy()
    assert isinstance(got, np.dtype), type(got)
    assert got.itemsize == dt.size_in_bytes
    value = got.type(1)  # numpy's bool_(1) is True
    assert np.array([value]).dtype == got
    assert got == got.type  # still equal to the scalar type


@pytest.mark.parametrize("dt", NUMPY_NATIVE, ids=lambda d: d.name)
def test_numpy_round_trip(dt):
    np_type = dt.to_numpy()
    assert np.dtype(np_type).itemsize == dt.size_in_bytes
    assert DType.from_numpy(np_type) is dt
    assert DType.from_numpy(np.dtype(np_type)) is dt


def test_max_numpy_mapping_without_ml_dtypes(without_ml_dtypes):
    for dt in [DType.bfloat16, *SUB_BYTE]:
        with pytest.raises(ValueError, match=f"^unsupported DType to convert to NumPy: DType.{dt.name}$"):
            dt.to_numpy()
    for dt in FLOAT8:
        assert dt.to_numpy() == np.dtype(np.uint8)  # raw bits, as MAX
    assert DType.from_numpy(np.uint8) is DType.uint8
    for dt in NUMPY_NATIVE:
        assert DType.from_numpy(dt.to_numpy()) is dt


@needs_ml_dtypes
@pytest.mark.parametrize("dt", CODEC_TYPES, ids=lambda d: d.name)
def test_ml_dtypes_mapping(dt):
    np_type = dt.to_numpy()
    assert np_type == np.dtype(getattr(ml_dtypes, dt.name))
    assert np_type.type is getattr(ml_dtypes, dt.name)
    assert np.dtype(np_type).itemsize == dt.size_in_bytes
    assert DType.from_numpy(np_type) is dt
    assert DType.from_numpy(np.dtype(np_type)) is dt
    assert DType.from_numpy(np.uint8) is DType.uint8


@pytest.mark.parametrize("bad", [np.complex64, np.object_, "datetime64[s]", "U3", "not a dtype"])
def test_from_numpy_rejects(bad):
    with pytest.raises(ValueError, match="^unsupported NumPy dtype: "):
        DType.from_numpy(bad)


# ------------------------------------------------------------------ finfo --

def _derived_limits(dt):
    """(eps, max, min, tiny) derived from the format's bit patterns, so finfo's
    hard-coded table (MAX's) is checked against an independent source."""
    values = axl_dtype._decode(dt, _all_patterns(dt))
    finite = np.unique(values[np.isfinite(values)])
    eps = finite[finite > 1.0][0] - 1.0
    if dt is DType.float8_e8m0fnu:  # unsigned: min is the smallest value
        return eps, finite[-1], finite[0], finite[0]
    return eps, finite[-1], -finite[-1], 2.0 ** (1 - axl_dtype._FORMATS[dt].bias)


@pytest.mark.parametrize("dt", CODEC_TYPES, ids=lambda d: d.name)
def test_finfo_of_formats_numpy_lacks(dt):
    for info in (finfo(dt), DType.finfo(dt), dt.finfo(dt)):
        assert (info.eps, info.max, info.min, info.tiny) == _derived_limits(dt)
        assert info.bits == dt.size_in_bits and info.smallest_normal == info.tiny and info.dtype is dt


def test_finfo_spot_values_from_the_spec():
    assert finfo(DType.bfloat16).max == (2 - 2.0**-7) * 2.0**127
    assert (finfo(DType.float8_e4m3fn).max, finfo(DType.float8_e4m3fnuz).max) == (448.0, 240.0)
    assert (finfo(DType.float8_e5m2).tiny, finfo(DType.float8_e5m2fnuz).tiny) == (2.0**-14, 2.0**-15)
    assert finfo(DType.float8_e8m0fnu).min == 2.0**-127
    assert (finfo(DType.float4_e2m1fn).max, finfo(DType.float6_e3m2fn).tiny) == (6.0, 0.25)


@pytest.mark.parametrize("dt", [DType.float16, DType.float32, DType.float64], ids=lambda d: d.name)
def test_finfo_of_numpy_floats(dt):
    ref = np.finfo(dt.to_numpy())
    info = finfo(dt)
    assert (info.bits, info.eps, info.max, info.min, info.tiny) == (
        ref.bits, float(ref.eps), float(ref.max), float(ref.min), float(ref.tiny))
    assert info.smallest_normal == info.tiny and info.dtype is dt


@needs_ml_dtypes
@pytest.mark.parametrize("dt", CODEC_TYPES, ids=lambda d: d.name)
def test_finfo_agrees_with_ml_dtypes(dt):
    ref = ml_dtypes.finfo(getattr(ml_dtypes, dt.name))
    info = finfo(dt)
    assert float(ref.max) == info.max and float(ref.eps) == info.eps
    assert float(ref.smallest_normal) == info.tiny


@pytest.mark.parametrize("dt", [DType.int32, DType.bool, DType.uint8])
def test_finfo_rejects_non_floats(dt):
    with pytest.raises(TypeError, match=f"^finfo only supports floating-point types, got {dt.name}$"):
        finfo(dt)


# ---------------------------------------------------------- codecs by hand --

# (dtype, bits, value): hand-checked from each format's definition.
HAND = [
    (DType.bfloat16, 0x3F80, 1.0), (DType.bfloat16, 0xC000, -2.0), (DType.bfloat16, 0x7F80, math.inf),
    (DType.bfloat16, 0xFF80, -math.inf), (DType.bfloat16, 0x0001, 2.0**-133), (DType.bfloat16, 0x8000, -0.0),
    (DType.bfloat16, 0x7F7F, (2 - 2.0**-7) * 2.0**127), (DType.bfloat16, 0x3E80, 0.25),
    (DType.float8_e4m3fn, 0x7E, 448.0), (DType.float8_e4m3fn, 0x01, 2.0**-9), (DType.float8_e4m3fn, 0x38, 1.0),
    (DType.float8_e4m3fn, 0x80, -0.0), (DType.float8_e4m3fn, 0xF8, -256.0), (DType.float8_e4m3fn, 0xF0, -128.0),
    (DType.float8_e4m3fnuz, 0x7F, 240.0), (DType.float8_e4m3fnuz, 0x40, 1.0), (DType.float8_e4m3fnuz, 0x01, 2.0**-10),
    (DType.float8_e5m2, 0x7B, 57344.0), (DType.float8_e5m2, 0x3C, 1.0), (DType.float8_e5m2, 0x7C, math.inf),
    (DType.float8_e5m2, 0xFC, -math.inf), (DType.float8_e5m2, 0x01, 2.0**-16),
    (DType.float8_e5m2fnuz, 0x7F, 57344.0), (DType.float8_e5m2fnuz, 0x40, 1.0), (DType.float8_e5m2fnuz, 0x01, 2.0**-17),
    (DType.float8_e8m0fnu, 0x7F, 1.0), (DType.float8_e8m0fnu, 0x00, 2.0**-127), (DType.float8_e8m0fnu, 0xFE, 2.0**127),
    (DType.float4_e2m1fn, 0x7, 6.0), (DType.float4_e2m1fn, 0x1, 0.5), (DType.float4_e2m1fn, 0xA, -1.0),
    (DType.float4_e2m1fn, 0x5, 3.0),
    (DType.float6_e2m3fn, 0x1F, 7.5), (DType.float6_e2m3fn, 0x01, 0.125), (DType.float6_e2m3fn, 0x28, -1.0),
    (DType.float6_e3m2fn, 0x1F, 28.0), (DType.float6_e3m2fn, 0x01, 0.0625), (DType.float6_e3m2fn, 0x2C, -1.0),
]
NANS = {DType.bfloat16: [0x7FC0, 0xFFC0, 0x7F81], DType.float8_e4m3fn: [0x7F, 0xFF],
        DType.float8_e4m3fnuz: [0x80], DType.float8_e5m2: [0x7D, 0x7E, 0xFF],
        DType.float8_e5m2fnuz: [0x80], DType.float8_e8m0fnu: [0xFF]}


@pytest.mark.parametrize("dt,bits,value", HAND, ids=lambda x: x.name if isinstance(x, DType) else str(x))
def test_codec_hand_checked(dt, bits, value):
    raw = np.array([bits], dtype=axl_dtype._raw_numpy(dt))
    got = axl_dtype._decode(dt, raw)
    assert got.dtype == np.float64 and got.shape == (1,)
    assert got[0] == value and math.copysign(1, got[0]) == math.copysign(1, value)
    assert axl_dtype._encode(dt, value) == bits


@pytest.mark.parametrize("dt", list(NANS), ids=lambda d: d.name)
def test_codec_nans(dt):
    assert np.isnan(axl_dtype._decode(dt, np.array(NANS[dt]))).all()
    assert axl_dtype._encode(dt, math.nan) in NANS[dt]


def test_encode_rounding_and_overflow_by_hand():
    e = axl_dtype._encode
    # bfloat16: ties to even (MAX truncates), carry into the exponent, overflow to inf.
    assert e(DType.bfloat16, 1 + 2.0**-8) == 0x3F80  # tie, 1.0 is even
    assert e(DType.bfloat16, 1 + 3 * 2.0**-8) == 0x3F82  # tie, up to even
    assert e(DType.bfloat16, 1 + 2.0**-8 + 2.0**-30) == 0x3F81  # above the tie
    assert e(DType.bfloat16, 1.9999) == 0x4000
    assert e(DType.bfloat16, 3.5e38) == 0x7F80 and e(DType.bfloat16, -1e300) == 0xFF80
    # Rounded once from float64: just below a tie rounds down. Through float32
    # (ml_dtypes) this value becomes the tie itself and rounds up to even.
    assert e(DType.bfloat16, np.nextafter(1 + 3 * 2.0**-8, 0)) == 0x3F81
    # float8_e4m3fn: no inf; past 448 (and the 464 tie rounding down) -> NaN.
    assert e(DType.float8_e4m3fn, 464.0) == 0x7E
    assert e(DType.float8_e4m3fn, 465.0) == 0x7F and e(DType.float8_e4m3fn, -math.inf) == 0xFF
    # fnuz: no negative zero, one NaN.
    assert e(DType.float8_e4m3fnuz, -0.0) == 0x00 and e(DType.float8_e4m3fnuz, -1e-30) == 0x00
    assert e(DType.float8_e5m2fnuz, math.inf) == 0x80 and e(DType.float8_e5m2fnuz, -1e9) == 0x80
    # float8_e5m2 is IEEE-like: overflow to inf.
    assert e(DType.float8_e5m2, 61440.0) == 0x7C and e(DType.float8_e5m2, 61439.0) == 0x7B
    # float4/float6 saturate; NaN becomes a zero of its sign.
    assert e(DType.float4_e2m1fn, 100.0) == 0x7 and e(DType.float4_e2m1fn, -math.inf) == 0xF
    assert e(DType.float4_e2m1fn, 2.5) == 0x4  # tie 2 | 3 -> 2 (even)
    assert e(DType.float6_e3m2fn, math.nan) == 0x00 and e(DType.float6_e3m2fn, -math.nan) == 0x20
    # e8m0: exponent only; ties up; zero, negatives and NaN -> 0xFF; tiny -> 2^-127.
    assert e(DType.float8_e8m0fnu, 1.5) == 0x80 and e(DType.float8_e8m0fnu, 1.49) == 0x7F
    assert e(DType.float8_e8m0fnu, 0.0) == 0xFF and e(DType.float8_e8m0fnu, -2.0) == 0xFF
    assert e(DType.float8_e8m0fnu, 1e-300) == 0x00 and e(DType.float8_e8m0fnu, 2.0**128) == 0xFF
    assert e(DType.float8_e8m0fnu, 1.3 * 2.0**-127) == 0x00  # nearer to 2^-127 than 2^-126


def test_decode_masks_sub_byte_and_keeps_shape():
    raw = np.array([[0x07, 0xF7], [0x47, 0x0A]], dtype=np.uint8)
    np.testing.assert_array_equal(axl_dtype._decode(DType.float4_e2m1fn, raw), [[6.0, 6.0], [6.0, -1.0]])
    assert axl_dtype._decode(DType.bfloat16, np.uint16(0x4040)).shape == ()
    with pytest.raises(ValueError, match="no bit codec for DType.float32"):
        axl_dtype._decode(DType.float32, raw)
    with pytest.raises(ValueError, match="no bit codec for DType.int8"):
        axl_dtype._encode(DType.int8, 1.0)


# ------------------------------------------- codecs against ml_dtypes, all --


@needs_ml_dtypes
@pytest.mark.parametrize("dt", CODEC_TYPES, ids=lambda d: d.name)
def test_decode_matches_ml_dtypes_for_every_pattern(dt):
    raw = _all_patterns(dt)  # all 65536 bf16 / 256 float8 / 16 float4 / 64 float6 patterns
    with np.errstate(invalid="ignore"):  # NaN patterns
        ref = raw.view(getattr(ml_dtypes, dt.name)).astype(np.float64)
    got = axl_dtype._decode(dt, raw)
    np.testing.assert_array_equal(got, ref)  # NaN positions must agree too
    np.testing.assert_array_equal(np.signbit(got), np.signbit(ref))


@needs_ml_dtypes
@pytest.mark.parametrize("dt", CODEC_TYPES, ids=lambda d: d.name)
def test_encode_matches_ml_dtypes(dt):
    ml_type = getattr(ml_dtypes, dt.name)
    with np.errstate(invalid="ignore"):
        ref_values = _all_patterns(dt).view(ml_type).astype(np.float64)
    finite = np.unique(ref_values[np.isfinite(ref_values)])
    mids = (finite[:-1] + finite[1:]) / 2  # the ties
    rng = np.random.default_rng(5)
    wide = np.exp(rng.uniform(-95, 95, 3000)) * rng.choice([-1.0, 1.0], 3000)
    values = np.concatenate([
        finite, mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf), finite * (1 + 2.0**-20),
        finite * (1 - 2.0**-20), wide, [np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0, 3.4e38, -3.4e38, 1e-44],
    ])
    # float32-exact inputs: ml_dtypes casts float64 through float32, which
    # rounds twice; axl rounds once (compared by hand above).
    with np.errstate(over="ignore"):
        values = values.astype(np.float32).astype(np.float64)
    if dt in SUB_BYTE:
        values = values[~np.isnan(values)]  # no NaN there: axl keeps the sign, ml_dtypes flips it
    if dt is DType.float8_e8m0fnu:
        # ml_dtypes rounds every float32 subnormal above 2^-127 up to 2^-126.
        values = values[~((np.abs(values) > 2.0**-127) & (np.abs(values) < 2.0**-126))]
    with np.errstate(over="ignore", invalid="ignore"):
        ref = values.astype(ml_type).view(axl_dtype._raw_numpy(dt)).astype(np.int64)
    got = np.array([axl_dtype._encode(dt, v) for v in values], dtype=np.int64)
    mismatch = np.nonzero(got != ref)[0]
    assert mismatch.size == 0, [(values[i], hex(got[i]), hex(ref[i])) for i in mismatch[:5]]
    assert values.size > 1000


def test_no_numpy_dtype_maps_to_a_float8_it_is_not():
    """ml_dtypes < 0.5 has no float8_e8m0fnu: that DType falls back to
    np.uint8 (its raw bits), which must not make np.uint8 map back to it
    (Buffer.from_numpy of uint8 data made a float8 buffer). Run in a child,
    where the attribute is removed before axl builds its table; every numpy
    dtype that maps to a DType must be that DType's own numpy type."""
    from conftest import run_py

    code = """
        import ml_dtypes
        import numpy as np
        if hasattr(ml_dtypes, "float8_e8m0fnu"):
            del ml_dtypes.float8_e8m0fnu  # as in ml_dtypes 0.3 / 0.4
        from axl.driver import Buffer
        from axl.dtype import DType
        assert DType.from_numpy(np.uint8) is DType.uint8, DType.from_numpy(np.uint8)
        assert Buffer.from_numpy(np.arange(3, dtype=np.uint8)).dtype is DType.uint8
        assert DType.float8_e8m0fnu.to_numpy() == np.dtype(np.uint8)  # still exported as its bits
        for member in DType:
            try:
                np_type = member.to_numpy()
            except ValueError:
                continue
            back = DType.from_numpy(np_type)
            assert back is member or (member.is_float8() and np_type == np.uint8), (member, back)
        print("ok")
    """
    assert run_py(code).stdout.strip() == "ok"
