"""numpy's own protocols on Buffer (issue 14): ``__array__`` (np.asarray,
np.array) and the buffer protocol (memoryview, PEP 688), zero copy for host
memory; device memory refused with an error that says how to reach the
host."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

from axl.driver import CPU, Buffer
from axl.dtype import DType

from test_buffer_model import on_virtual

FORMATS = {DType.bool: "?", DType.int8: "b", DType.uint8: "B", DType.int16: "h", DType.uint16: "H",
           DType.int32: "i", DType.uint32: "I", DType.int64: "q", DType.uint64: "Q", DType.float16: "e",
           DType.float32: "f", DType.float64: "d"}


def filled(shape=(3, 4), dtype=np.int32) -> tuple[Buffer, np.ndarray]:
    ref = np.arange(int(np.prod(shape))).astype(dtype).reshape(shape)
    return Buffer.from_numpy(ref.copy()), ref


# -------------------------------------------------------------- __array__

def test_asarray_aliases_host_memory():
    b, ref = filled()
    a = np.asarray(b)
    assert a.dtype == np.int32 and a.shape == (3, 4)
    assert a.ctypes.data == b._data_ptr()  # zero copy, not a 0-d object array
    a[1, 2] = -5
    assert b[1, 2].item() == -5
    v = np.asarray(b[:, 1::2])
    assert v.ctypes.data == b[:, 1::2]._data_ptr() and v.strides == (16, 8)
    np.testing.assert_array_equal(v, np.asarray(b)[:, 1::2])


def test_array_copy_and_dtype_are_honoured():
    b, ref = filled()
    c = np.array(b)  # copy=True by default
    assert c.ctypes.data != b._data_ptr()
    np.testing.assert_array_equal(c, ref)
    assert b.__array__().ctypes.data == b._data_ptr()  # numpy 1.x: __array__()
    assert b.__array__(None, copy=None).ctypes.data == b._data_ptr()
    assert b.__array__(copy=False).ctypes.data == b._data_ptr()
    assert b.__array__(copy=True).ctypes.data != b._data_ptr()
    f = b.__array__(np.float64)  # numpy 1.x: __array__(dtype)
    assert f.dtype == np.float64
    np.testing.assert_array_equal(f, ref)
    assert b.__array__(np.int32, copy=False).ctypes.data == b._data_ptr()
    with pytest.raises(ValueError, match="needs a copy, but copy=False"):
        b.__array__(np.float64, copy=False)
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        assert np.asarray(b, copy=False).ctypes.data == b._data_ptr()
        assert np.asarray(b, dtype=np.int64).dtype == np.int64


def test_asarray_of_a_rank0_buffer():
    b = Buffer.scalar(7, DType.int16)
    a = np.asarray(b)
    assert a.shape == () and a.dtype == np.int16 and a[()] == 7


# --------------------------------------------------------- buffer protocol

@pytest.mark.parametrize("dt", list(FORMATS), ids=lambda d: d.name)
def test_memoryview_format_shape_strides(dt):
    b = Buffer(dt, (2, 3))
    b._fill_zero()
    m = memoryview(b)
    assert m.format == FORMATS[dt] and m.itemsize == dt.size_in_bytes
    assert m.shape == (2, 3) and m.strides == (3 * dt.size_in_bytes, dt.size_in_bytes)
    assert not m.readonly and m.c_contiguous and m.obj is b
    assert m.nbytes == 6 * dt.size_in_bytes


def test_memoryview_aliases_and_keeps_strides():
    b, ref = filled()
    m = memoryview(b)
    m[2, 3] = 99
    assert b[2, 3].item() == 99
    s = memoryview(b[::-1, 1::2])
    assert s.shape == (3, 2) and s.strides == (-16, 8) and not s.c_contiguous
    assert s.tolist() == np.asarray(b)[::-1, 1::2].tolist()
    assert memoryview(Buffer.scalar(3, DType.int64)).shape == ()
    assert memoryview(Buffer(DType.int8, (0, 4))).nbytes == 0
    mv = b.__buffer__(0)  # PEP 688 (derived from the slot on 3.12+)
    assert isinstance(mv, memoryview) and mv.shape == (3, 4)
    np.testing.assert_array_equal(np.frombuffer(b, dtype=np.int32).reshape(3, 4), np.asarray(b))


def test_contiguous_only_consumers_refuse_strided_views():
    b, ref = filled((8,), np.uint8)
    assert hashlib.sha256(b).hexdigest() == hashlib.sha256(ref.tobytes()).hexdigest()  # contiguous bytes
    with pytest.raises(BufferError, match=r"strided .* use buf.contiguous\(\)"):
        hashlib.sha256(b[::2])


@pytest.mark.parametrize("dt", [DType.bfloat16, DType.float8_e4m3fn])
def test_memoryview_of_a_type_without_a_struct_format_is_refused(dt):
    with pytest.raises(BufferError, match=rf"{dt} has no buffer-protocol format"):
        memoryview(Buffer(dt, (2,)))


def test_memoryview_waits_for_the_producer():
    # A host access point, as to_numpy: the copy writing b is waited for.
    src = Buffer.from_numpy(np.arange(1 << 16, dtype=np.int32))
    b = Buffer(DType.int32, (1 << 16,))
    b.inplace_copy_from(src)
    assert memoryview(b)[65535] == 65535


# ------------------------------------------------- device memory, staging

@on_virtual()
def test_device_memory_is_refused_with_how_to_reach_the_host(dev):
    import re

    b = Buffer(DType.float32, (4,), dev)
    with pytest.raises(TypeError, match=r"device memory to a numpy array: .*buf\.to\(CPU\(\)\)"):
        np.asarray(b)
    with pytest.raises(BufferError, match=re.escape(f"on {dev} is not addressable by the host") + r".*to\(CPU\(\)\)"):
        memoryview(b)
    np.testing.assert_array_equal(np.asarray(b.to(CPU())).shape, (4,))


@on_virtual()
def test_staging_memory_takes_both_protocols(dev):
    from axl.driver import Usage

    s = Buffer(DType.int16, (8,), dev, usage=Usage.STAGING)
    s._fill_zero()
    assert np.asarray(s).ctypes.data == s._data_ptr()
    m = memoryview(s)
    m[3] = 9
    assert s[3].item() == 9
