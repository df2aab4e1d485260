"""axl.driver.load_max_buffer: MAX's .max checkpoint format (spec section 8).

Files are written here byte by byte as MAX's writer lays them out (the
writer of tests/fuzz/make_corpus.py, shared with the fuzz corpus).
"""

from __future__ import annotations

import importlib.util
import re
import struct

import numpy as np
import pytest

from axl import _core
from axl.driver import Buffer, load_max_buffer
from axl.dtype import DType

from conftest import REPO

_spec = importlib.util.spec_from_file_location("make_corpus", REPO / "tests" / "fuzz" / "make_corpus.py")
make_corpus = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_corpus)

NOT_MAX = (
    " is not a max checkpoint. If this file was saved from the \"BINARY\" debug print option (and not "
    "\"BINARY_MAX_CHECKPOINT\"), please initialize `Buffer.mmap` directly."
)


def write(tmp_path, data: bytes, name: str = "t.max"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def max_bytes(dtype: DType, shape, payload: bytes, **kw) -> bytes:
    return make_corpus.max_file(dtype=dtype.value, dims=tuple(shape), data=payload, **kw)


def raw_bytes(buf) -> bytes:
    """The buffer's bytes, for any dtype (to_numpy needs ml_dtypes for some)."""
    try:
        return buf.to_numpy().tobytes()
    except ValueError:
        pytest.skip(f"{buf.dtype} has no numpy type without ml_dtypes")


def test_worked_example_float32_2x3(tmp_path):
    values = np.array([[1.5, -2.0, 3.25], [0.0, 1e-3, 6e7]], dtype=np.float32)
    data = max_bytes(DType.float32, (2, 3), values.tobytes())
    assert len(data) == 71  # the spec's worked example
    assert data[47:] == values.tobytes()
    buf = load_max_buffer(write(tmp_path, data))
    assert isinstance(buf, Buffer)
    assert buf.dtype is DType.float32 and buf.shape == (2, 3)
    np.testing.assert_array_equal(buf.to_numpy(), values)


@pytest.mark.parametrize("dt", list(DType), ids=lambda d: d.name)
def test_every_dtype(tmp_path, dt):
    shape = (2, 3)
    rng = np.random.default_rng(dt.value)
    payload = rng.integers(0, 256, 6 * dt.size_in_bytes, dtype=np.uint8)
    if dt is DType.bool:
        payload &= 1
    elif dt.size_in_bits < 8:
        payload &= (1 << dt.size_in_bits) - 1  # float4/float6: one value per byte
    buf = load_max_buffer(write(tmp_path, max_bytes(dt, shape, payload.tobytes(), key=b"w/" + dt.name.encode())))
    assert buf.dtype is dt  # float8 too (MAX: uint8)
    assert buf.shape == shape
    assert raw_bytes(buf) == payload.tobytes()


def test_rank0_and_empty(tmp_path):
    buf = load_max_buffer(write(tmp_path, max_bytes(DType.int64, (), struct.pack("<q", -7))))
    assert buf.shape == () and buf.dtype is DType.int64
    assert buf.to_numpy() == -7
    empty = load_max_buffer(write(tmp_path, max_bytes(DType.float32, (0, 3), b"")))
    assert empty.shape == (0, 3) and empty.num_elements == 0


def test_rank0_bfloat16_keeps_its_shape(tmp_path):
    buf = load_max_buffer(write(tmp_path, max_bytes(DType.bfloat16, (), struct.pack("<H", 0x4049))))
    assert buf.dtype is DType.bfloat16 and buf.shape == ()  # MAX: (1,)
    assert raw_bytes(buf) == struct.pack("<H", 0x4049)


def test_long_key_and_high_rank(tmp_path):
    # A header beyond the first read: the loader reads what the parser asks.
    shape = (1,) * 31 + (3,)  # a Buffer has at most 32 dimensions; rank 255 is in the core test
    values = np.arange(3, dtype=np.int16)
    path = write(tmp_path, max_bytes(DType.int16, shape, values.tobytes(), key=b"k" * 10000))
    buf = load_max_buffer(str(path))  # a str path works as well as a Path
    assert buf.shape == shape
    too_deep = write(tmp_path, max_bytes(DType.int16, (1,) * 33, values[:1].tobytes()), name="deep.max")
    # A valid header whose rank no Buffer holds: the message names the file
    # first, as every other load_max_buffer error.
    with pytest.raises(ValueError, match=rf"^{re.escape(str(too_deep))}: mmap: shape .* has rank 33"):
        load_max_buffer(too_deep)
    np.testing.assert_array_equal(buf.to_numpy().reshape(-1), values)


def test_trailing_bytes_and_minor_version_are_ignored(tmp_path):
    values = np.arange(6, dtype=np.uint32)
    data = max_bytes(DType.uint32, (6,), values.tobytes(), minor=9) + b"trailing"
    np.testing.assert_array_equal(load_max_buffer(write(tmp_path, data)).to_numpy(), values)


def test_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_max_buffer(tmp_path / "missing.max")


GOOD = dict(dtype=DType.float32, shape=(2, 3), payload=bytes(24))


@pytest.mark.parametrize(
    "data,message",
    [
        (max_bytes(**GOOD, magic=b"\x89PNG\r\n\x1a\n"), None),
        (b"", None),
        (b"\x93\xf0\x9f", None),
        (np.arange(6, dtype=np.float32).tobytes(), None),  # a "BINARY" dump: raw data only
        (max_bytes(**GOOD, major=1), "Unable to read from version > 0."),
        (max_bytes(DType.float32, (2, 3), bytes(24))[:-1], "runs past the end of the file (70 bytes)"),
        (max_bytes(**GOOD)[:40], "truncated header: the file is 40 bytes long"),
        (max_bytes(**GOOD)[:20], "truncated header: the file is 20 bytes long"),
        (max_bytes(**GOOD, metadata_delta=8), "Multiple buffers found in .max file. This is currently not supported."),
        (max_bytes(**GOOD, metadata_delta=-1), "Multiple buffers found in .max file."),
        (make_corpus.max_file(dtype=74, data=bytes(24)), "74 is not a valid DType"),
        (make_corpus.max_file(dtype=0, data=bytes(24)), "0 is not a valid DType"),
        (max_bytes(**GOOD, offset_delta=1000), "at offset 1047) runs past the end of the file (71 bytes)"),
        (max_bytes(**GOOD, offset_delta=2**63), "runs past the end of the file"),
        (max_bytes(DType.float32, (2**32 - 1,) * 3, b""), "element count overflows 64 bits"),
        (max_bytes(DType.float64, (2**32 - 1,) * 2, b""), "data size"),
        (max_bytes(DType.uint8, (2**31, 2**31), b""), "runs past the end of the file"),
    ],
    ids=["magic", "empty", "short", "binary-dump", "version", "data-short", "header-40", "header-20",
         "metadata+8", "metadata-1", "dtype-74", "dtype-0", "offset", "offset-huge", "shape-overflow",
         "bytes-overflow", "shape-huge"],
)
def test_malformed_files(tmp_path, data, message):
    path = write(tmp_path, data)
    with pytest.raises(ValueError) as info:
        load_max_buffer(path)
    text = str(info.value)
    if message is None:
        assert text.startswith(f"{path}{NOT_MAX}")  # MAX's exact text
    else:
        assert text.startswith(f"{path}: ")
        assert message in text


def test_parser_binding_asks_for_more_of_a_prefix():
    data = max_bytes(**GOOD)
    info = _core._max_file_parse(data[:10], len(data))
    assert info["status"] == 2 and info["header_bytes"] == 16
    info = _core._max_file_parse(data[:47], len(data))
    assert info["status"] == 0 and info["header_bytes"] == 47
    assert info["shape"] == (2, 3) and info["dtype"] == 81 and info["version"] == (0, 1)
    assert (info["data_offset"], info["data_bytes"], info["num_elements"]) == (47, 24, 6)
    assert (info["key_offset"], info["key_size"]) == (28, 1)
    with pytest.raises(ValueError, match="1-D buffer of bytes"):
        _core._max_file_parse(np.zeros(4, dtype=np.float32), 16)


def test_data_is_mapped_through_buffer_mmap_when_it_exists(tmp_path, monkeypatch):
    calls = []

    def fake_mmap(filename, dtype, shape, mode="r+", offset=0):
        calls.append((filename, dtype, shape, mode, offset))
        return "mapped"

    monkeypatch.setattr(Buffer, "mmap", staticmethod(fake_mmap), raising=False)
    path = write(tmp_path, max_bytes(DType.float8_e5m2, (4, 1), bytes(4), key=b"abc"))
    assert load_max_buffer(path) == "mapped"
    assert calls == [(str(path), DType.float8_e5m2, (4, 1), "r", 49)]
