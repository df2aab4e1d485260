"""NumPy, DLPack and file interop of Buffer (spec sections 4.1 and 4.5):
from_numpy / to_numpy (zero copy where the memory allows, proven by
address), np.from_dlpack, Buffer.from_dlpack for numpy, Buffers and any
DLPack producer, __dlpack__ capsules (versioned and legacy) and
__dlpack_device__, the DLPackArray protocol, torch (when installed) and
Buffer.mmap with np.memmap's modes. load_max_buffer has its own tests.
"""

from __future__ import annotations

import ctypes
import gc
import re
import time
import weakref
from pathlib import Path

import numpy as np
import pytest

from axl import _core
from axl.driver import CPU, Buffer
from axl.dtype import DType

from test_buffer_model import on_accelerators, on_virtual, put, same

# ------------------------------------------------------------ DLPack structs
# DLPack 1.x (dlpack.h); read straight from the capsule to check what a
# consumer would see, without consuming it (the capsule's destructor frees it).


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.restype = ctypes.c_int
_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

DL_CPU, DL_EXT_DEV = 1, 12
DL_INT, DL_UINT, DL_FLOAT, DL_BFLOAT, DL_BOOL = 0, 1, 2, 4, 6
READ_ONLY_FLAG = 1


def capsule_name(cap) -> str:
    for name in ("dltensor_versioned", "dltensor"):
        if _is_valid(cap, name.encode()):
            return name
    raise AssertionError(f"{cap!r} is neither a dltensor nor a dltensor_versioned capsule")


def unpack(cap):
    """(name, version or None, flags, DLTensor fields as a dict)."""
    name = capsule_name(cap)
    ptr = _get_pointer(cap, name.encode())
    if name == "dltensor_versioned":
        m = ctypes.cast(ptr, ctypes.POINTER(DLManagedTensorVersioned)).contents
        version, flags, t = (m.version.major, m.version.minor), m.flags, m.dl_tensor
    else:
        m = ctypes.cast(ptr, ctypes.POINTER(DLManagedTensor)).contents
        version, flags, t = None, 0, m.dl_tensor
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = tuple(t.strides[i] for i in range(t.ndim)) if t.strides else None
    return name, version, flags, {
        "data": t.data or 0, "byte_offset": t.byte_offset, "device": (t.device.device_type, t.device.device_id),
        "dtype": (t.dtype.code, t.dtype.bits, t.dtype.lanes), "shape": shape, "strides": strides}


def released(ref: weakref.ref, seconds: float = 5.0) -> bool:
    """True once ``ref``'s object is gone (the core may release external
    memory from a queue's thread after the queues that used it finished)."""
    deadline = time.monotonic() + seconds
    while True:
        gc.collect()
        if ref() is None:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)


# ---------------------------------------------------------------- producers

class Producer:
    """A DLPack producer that is neither numpy nor a Buffer (it wraps an
    array); records how the consumer called it."""

    def __init__(self, arr):
        self.arr = arr
        self.calls = []

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self.calls.append({"stream": stream, "max_version": max_version, "dl_device": dl_device, "copy": copy})
        if max_version is None:
            return self.arr.__dlpack__(stream=stream)
        return self.arr.__dlpack__(stream=stream, max_version=max_version)

    def __dlpack_device__(self):
        return self.arr.__dlpack_device__()


class LegacyProducer:
    """An old producer: ``__dlpack__(stream=None)`` only, legacy capsules."""

    def __init__(self, arr):
        self.arr = arr

    def __dlpack__(self, stream=None):
        return self.arr.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.arr.__dlpack_device__()


class NonContiguousTensor(Producer):
    """Looks like a torch tensor (a callable is_contiguous) that is not contiguous."""

    def is_contiguous(self):
        return False


# ---------------------------------------------------------------- from_numpy

@pytest.mark.parametrize("dt", [DType.int8, DType.uint16, DType.int32, DType.float16, DType.float32,
                                DType.float64, DType.uint64, DType.bool], ids=lambda d: d.name)
def test_from_numpy_is_zero_copy(dt):
    arr = (np.arange(12) % 3 == 0) if dt is DType.bool else np.arange(12).astype(dt.to_numpy())
    arr = arr.reshape(3, 4)
    b = Buffer.from_numpy(arr)
    assert b.dtype is dt and b.shape == (3, 4) and b.device is CPU() and b.is_host
    assert b._data_ptr() == arr.ctypes.data
    arr[0, 1] = 1  # array -> buffer
    assert b[0, 1].item() == 1
    b[2, 3] = 0  # buffer -> array
    assert arr[2, 3] == 0


def test_from_numpy_zero_d_stays_rank0_and_aliases():
    a = np.array(2.5, dtype=np.float32)
    b = Buffer.from_numpy(a)
    assert b.shape == () and b.item() == 2.5
    assert b._data_ptr() == a.ctypes.data


def test_from_numpy_keeps_the_array_alive():
    arr = np.arange(1000, dtype=np.int64)
    ref = weakref.ref(arr)
    b = Buffer.from_numpy(arr)
    del arr
    gc.collect()
    assert ref() is not None  # the buffer holds the memory's owner
    same(b, np.arange(1000, dtype=np.int64))
    view = b[10:20]
    del b
    gc.collect()
    same(view, np.arange(10, 20, dtype=np.int64))
    del view
    assert released(ref)  # and lets it go with the last view


def test_from_numpy_copies_non_contiguous_input():
    base = np.arange(40, dtype=np.int32).reshape(4, 10)
    for arr in [base[:, ::2], np.asfortranarray(base), base[::-1]]:
        b = Buffer.from_numpy(arr)
        assert b._data_ptr() != arr.ctypes.data and b.is_contiguous
        same(b, np.ascontiguousarray(arr))
        b[(0,) * b.rank] = -1
        assert base.min() == 0  # the copy is private


def test_from_numpy_read_only_is_copied():
    arr = np.arange(5, dtype=np.float64)
    arr.flags.writeable = False
    b = Buffer.from_numpy(arr)
    assert b._data_ptr() != arr.ctypes.data
    b[0] = 9
    assert arr[0] == 0 and b[0].item() == 9


# ------------------------------------------------------------------ to_numpy

def test_to_numpy_of_host_buffers_aliases():
    b = Buffer(DType.int32, (3, 4))
    a = b.to_numpy()
    assert a.ctypes.data == b._data_ptr() and not a.flags.owndata and a.flags.writeable
    assert a.dtype == np.int32 and a.shape == (3, 4)
    a[...] = np.arange(12).reshape(3, 4)
    assert b[2, 1].item() == 9
    b[0, 0] = -3
    assert a[0, 0] == -3
    v = b[:, ::2]  # a strided view exports with its strides, still an alias
    av = v.to_numpy()
    assert av.ctypes.data == v._data_ptr() and av.strides == (16, 8)
    np.testing.assert_array_equal(av, a[:, ::2])
    av[1, 1] = 100
    assert b[1, 2].item() == 100
    np.testing.assert_array_equal(b[::-1, 1].to_numpy(), a[::-1, 1])


@on_accelerators()
def test_to_numpy_of_device_memory_copies(dev):
    ref = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = put(ref, dev)
    a = b.to_numpy()
    assert a.flags.writeable
    np.testing.assert_array_equal(a, ref)
    a[0, 0] = 77  # a private copy
    assert b[0, 0].item() == 0
    np.testing.assert_array_equal(b[::-1, ::3].to_numpy(), ref[::-1, ::3])


@on_accelerators()
def test_to_numpy_of_staging_memory_aliases(dev):
    from axl.driver import Usage

    s = Buffer(DType.int16, (8,), dev, usage=Usage.STAGING)
    a = s.to_numpy()
    assert a.ctypes.data == s._data_ptr() and not a.flags.owndata
    a[:] = np.arange(8)
    assert s[5].item() == 5
    s[1] = -1
    assert a[1] == -1


# -------------------------------------------------------------- np.from_dlpack

@pytest.mark.parametrize("dt", [DType.uint8, DType.int64, DType.float16, DType.float32, DType.bool],
                         ids=lambda d: d.name)
def test_np_from_dlpack_aliases(dt):
    src = (np.arange(6) % 2 == 1) if dt is DType.bool else np.arange(6).astype(dt.to_numpy())
    b = Buffer.from_numpy(src.copy())
    a = np.from_dlpack(b)
    assert a.dtype == dt.to_numpy() and a.shape == (6,)
    assert a.ctypes.data == b._data_ptr()
    b[0] = 1
    assert a[0] == 1


def test_np_from_dlpack_copy_and_device_arguments():
    b = Buffer.from_numpy(np.arange(6, dtype=np.int32))
    c = np.from_dlpack(b, copy=True)
    assert c.ctypes.data != b._data_ptr()
    np.testing.assert_array_equal(c, np.arange(6))
    assert np.from_dlpack(b, copy=False).ctypes.data == b._data_ptr()
    assert np.from_dlpack(b, device="cpu").ctypes.data == b._data_ptr()
    z = np.from_dlpack(Buffer(DType.float32, (0, 3)))
    assert z.shape == (0, 3)
    s = np.from_dlpack(Buffer.scalar(4, DType.int16))
    assert s.shape == () and s == 4
    strided = Buffer.from_numpy(np.arange(20, dtype=np.int64).reshape(4, 5))[1:, ::2]
    np.testing.assert_array_equal(np.from_dlpack(strided), np.arange(20).reshape(4, 5)[1:, ::2])


# ------------------------------------------------------------ __dlpack__ itself

@pytest.mark.parametrize("max_version,name", [(None, "dltensor"), ((0, 8), "dltensor"),
                                              ((1, 0), "dltensor_versioned"), ((1, 3), "dltensor_versioned"),
                                              ((2, 0), "dltensor_versioned")])
def test_capsule_kinds(max_version, name):
    b = Buffer.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
    cap = b.__dlpack__() if max_version is None else b.__dlpack__(max_version=max_version)
    got, version, flags, t = unpack(cap)
    assert got == name
    if name == "dltensor_versioned":
        assert version[0] == 1
        assert not flags & READ_ONLY_FLAG
    assert t["device"] == (DL_CPU, 0)
    assert t["dtype"] == (DL_FLOAT, 32, 1)
    assert t["shape"] == (2, 3)
    assert t["strides"] in (None, (3, 1))
    assert t["data"] + t["byte_offset"] == b._data_ptr()


def test_capsule_of_a_strided_view():
    b = Buffer.from_numpy(np.arange(60, dtype=np.int16).reshape(3, 4, 5))
    v = b[1:, ::-2, 1:4:2]
    _, _, _, t = unpack(v.__dlpack__(max_version=(1, 0)))
    assert t["shape"] == v.shape == (2, 2, 2)
    assert t["strides"] == v.strides == (20, -10, 2)
    assert t["dtype"] == (DL_INT, 16, 1)
    assert t["data"] + t["byte_offset"] == v._data_ptr()
    _, _, _, tb = unpack(Buffer(DType.bool, (2,)).__dlpack__(max_version=(1, 0)))
    assert tb["dtype"] == (DL_BOOL, 8, 1)
    _, _, _, tu = unpack(Buffer(DType.uint64, (2,)).__dlpack__(max_version=(1, 0)))
    assert tu["dtype"] == (DL_UINT, 64, 1)
    _, _, _, tf = unpack(Buffer(DType.bfloat16, (2,)).__dlpack__(max_version=(1, 0)))
    assert tf["dtype"] == (DL_BFLOAT, 16, 1)


def test_dlpack_keyword_arguments():
    b = Buffer.from_numpy(np.arange(4, dtype=np.int32))
    for kwargs in [{"stream": None}, {"dl_device": (DL_CPU, 0)}, {"copy": False},
                   {"stream": None, "max_version": (1, 0), "dl_device": (DL_CPU, 0), "copy": None}]:
        _, _, _, t = unpack(b.__dlpack__(**kwargs))
        assert t["data"] + t["byte_offset"] == b._data_ptr(), kwargs
    _, _, _, t = unpack(b.__dlpack__(max_version=(1, 0), copy=True))
    assert t["data"] + t["byte_offset"] != b._data_ptr()


def test_dlpack_device_of_the_cpu():
    assert Buffer(DType.int8, (2,)).__dlpack_device__() == (DL_CPU, 0)
    assert Buffer.from_numpy(np.zeros(3))[1:].__dlpack_device__() == (DL_CPU, 0)


@on_virtual()
def test_dlpack_device_of_virtual_memory(dev):
    """Assumption (the virtual backend is not a DLPack device type): device
    memory reports kDLExtDev (12, device id), and is not exported (no
    consumer could read it; test_numpy_protocols.py); its pinned staging
    memory is plain host memory to a consumer, so (kDLCPU, 0)."""
    from axl.driver import Usage

    b = Buffer(DType.float32, (2, 3), dev)
    assert b.__dlpack_device__() == (DL_EXT_DEV, dev.id)
    with pytest.raises(BufferError, match="no DLPack consumer can read"):
        b[:, 1:].__dlpack__(max_version=(1, 0))
    s = Buffer(DType.float32, (4,), dev, usage=Usage.STAGING)
    assert s.__dlpack_device__() == (DL_CPU, 0)
    a = np.from_dlpack(s)
    assert a.ctypes.data == s._data_ptr()
    assert Buffer.from_dlpack(b) is b


# --------------------------------------------------------- Buffer.from_dlpack

def test_from_dlpack_numpy():
    arr = np.arange(6, dtype=np.float32)
    b = Buffer.from_dlpack(arr)
    assert b._data_ptr() == arr.ctypes.data and b.dtype is DType.float32
    arr[2] = -1
    assert b[2].item() == -1
    assert Buffer.from_dlpack(arr, copy=False)._data_ptr() == arr.ctypes.data
    c = Buffer.from_dlpack(arr, copy=True)
    assert c._data_ptr() != arr.ctypes.data
    same(c, arr)
    flags = np.array([True, False, True])
    fb = Buffer.from_dlpack(flags)
    assert fb.dtype is DType.bool and fb._data_ptr() == flags.ctypes.data
    assert [fb[i].item() for i in range(3)] == [True, False, True]


def test_from_dlpack_numpy_errors_and_read_only():
    arr = np.arange(12, dtype=np.int32).reshape(3, 4)
    with pytest.raises(ValueError, match=re.escape(
            "driver buffer's from_dlpack only accepts contiguous arrays. First call np.ascontiguousarray(array)")):
        Buffer.from_dlpack(arr[:, ::2])
    ro = arr.copy()
    ro.flags.writeable = False
    b = Buffer.from_dlpack(ro)  # read-only input: copied, writable
    assert b._data_ptr() != ro.ctypes.data
    b[0, 0] = 5
    assert ro[0, 0] == 0


# Read-only producers stay read-only: a Buffer is always writable, so
# aliasing a read-only producer let writes land in it (and segfaulted for a
# read-only np.memmap). copy=False is refused with BufferError, as numpy
# refuses a writable request; otherwise the producer is copied.

def test_from_dlpack_read_only_numpy_copy_false_is_buffer_error():
    ro = np.arange(6, dtype=np.int32)
    ro.flags.writeable = False
    with pytest.raises(BufferError, match="read-only.*copy=False"):
        Buffer.from_dlpack(ro, copy=False)
    assert ro.tolist() == list(range(6))


def test_from_dlpack_read_only_memmap(tmp_path):
    path = tmp_path / "ro.bin"
    np.arange(8, dtype=np.float32).tofile(path)
    mm = np.memmap(path, dtype=np.float32, mode="r", shape=(8,))
    with pytest.raises(BufferError, match="read-only"):
        Buffer.from_dlpack(mm, copy=False)
    for b in (Buffer.from_dlpack(mm), Buffer.from_dlpack(mm, copy=True), Buffer.from_numpy(mm)):
        assert b._data_ptr() != mm.ctypes.data
        b[0] = 42.0  # a private copy: no fault, the file is unchanged
        b.inplace_copy_from(Buffer.from_numpy(np.full(8, 7, dtype=np.float32)))
        assert b[0].item() == 7.0
    del mm
    assert np.fromfile(path, dtype=np.float32).tolist() == list(range(8))


def test_from_dlpack_versioned_read_only_flag_is_honoured():
    ro = np.arange(4, dtype=np.int16)
    ro.flags.writeable = False
    # numpy >= 2.1 sets DLPACK_FLAG_BITMASK_READ_ONLY in a versioned capsule.
    buf, read_only = _core._from_dlpack_capsule(ro.__dlpack__(max_version=(1, 0)))
    assert read_only
    p = Producer(ro)  # not numpy to from_dlpack: only the capsule's flag says read-only
    b = Buffer.from_dlpack(p)
    assert p.calls and b._data_ptr() != ro.ctypes.data
    b[1] = 99
    assert ro[1] == 1 and b[1].item() == 99


def _versioned_flags(capsule) -> int:
    """The flags field of a 'dltensor_versioned' capsule's
    DLManagedTensorVersioned (after version, manager_ctx and deleter)."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return ctypes.c_uint64.from_address(get(capsule, b"dltensor_versioned") + 24).value


def test_exported_buffers_are_writable_dlpack():
    # No Buffer is read-only (read-only producers are copied on import), so
    # an export never sets the read-only flag and consumers may write.
    ro = np.arange(3, dtype=np.int64)
    ro.flags.writeable = False
    for b in (Buffer.from_dlpack(ro), Buffer.from_numpy(np.arange(3, dtype=np.int64))):
        assert _versioned_flags(b.__dlpack__(max_version=(1, 0))) & 1 == 0
        a = np.from_dlpack(b)
        assert a.flags.writeable
        a[0] = 5
        assert b[0].item() == 5
    assert ro[0] == 0


def test_from_dlpack_buffer():
    b = Buffer.from_numpy(np.arange(3, dtype=np.int8))
    assert Buffer.from_dlpack(b) is b
    assert Buffer.from_dlpack(b, copy=False) is b
    c = Buffer.from_dlpack(b, copy=True)
    assert c is not b and c._data_ptr() != b._data_ptr()
    same(c, np.arange(3, dtype=np.int8))


def test_from_dlpack_any_producer():
    arr = np.arange(10, dtype=np.uint16).reshape(2, 5)
    p = Producer(arr)
    b = Buffer.from_dlpack(p)
    assert b._data_ptr() == arr.ctypes.data and b.shape == (2, 5) and b.dtype is DType.uint16
    assert p.calls and p.calls[-1]["stream"] is None  # a CPU consumer passes no stream
    assert p.calls[-1]["max_version"] is not None and tuple(p.calls[-1]["max_version"]) >= (1, 0)
    arr[1, 4] = 999
    assert b[1, 4].item() == 999
    ref = weakref.ref(arr)
    del arr, p
    gc.collect()
    assert ref() is not None  # the capsule's owner lives as long as the buffer
    del b
    assert released(ref)

    old = np.arange(4, dtype=np.float64)
    lb = Buffer.from_dlpack(LegacyProducer(old))  # no max_version keyword: the legacy call
    assert lb._data_ptr() == old.ctypes.data
    same(lb, np.arange(4, dtype=np.float64))


class EditedProducer:
    """A producer whose legacy capsule (numpy's) has its DLTensor edited in
    place first: the hostile or unusual tensors a real producer may hand
    over. The edits keep their arrays alive with the producer."""

    def __init__(self, arr, **fields):
        self.arr, self.fields, self.keep = arr, fields, []

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        cap = self.arr.__dlpack__()
        t = ctypes.cast(_get_pointer(cap, b"dltensor"), ctypes.POINTER(DLManagedTensor)).contents.dl_tensor
        for name, value in self.fields.items():
            if name == "strides":
                arr = (ctypes.c_int64 * len(value))(*value)
                self.keep.append(arr)
                t.strides = ctypes.cast(arr, ctypes.POINTER(ctypes.c_int64))
            elif name == "dtype":
                t.dtype = DLDataType(*value)
            else:
                setattr(t, name, value)
        return cap

    def __dlpack_device__(self):
        return (DL_CPU, 0)


@pytest.mark.parametrize("fields, match", [
    # 2^61 elements x 4 bytes wrapped to a negative byte stride; reads then faulted.
    ({"strides": (1 << 61,)}, "overflows a 64-bit byte stride"),
    ({"strides": ((1 << 62) // 4,)}, "span more than 2\\^63 bytes"),
    # A byte_offset past the address space: reads faulted.
    ({"byte_offset": (1 << 64) - 8}, "outside the address space"),
    # Two float4 per byte (JAX's layout, no padded flag in a legacy capsule):
    # one byte per element would read past the producer's bytes.
    ({"dtype": (17, 4, 1)}, "arrives packed"),
])
def test_from_dlpack_refuses_tensors_it_would_misread(fields, match):
    arr = np.zeros(4, dtype=np.float32)
    with pytest.raises(BufferError, match=match):
        Buffer.from_dlpack(EditedProducer(arr, **fields))
    # Refused before it is consumed: numpy still owns (and frees) it.
    b = Buffer.from_dlpack(EditedProducer(arr))
    assert b._data_ptr() == arr.ctypes.data


def test_from_dlpack_copy_flag_only_for_numpy_and_buffers():
    msg = re.escape("`Buffer.from_dlpack` supports the `copy` flag only for numpy array and `Buffer` inputs")
    for copy in (True, False):
        with pytest.raises(ValueError, match=msg):
            Buffer.from_dlpack(Producer(np.zeros(2)), copy=copy)
    with pytest.raises(ValueError, match=re.escape(
            "driver buffer's from_dlpack only accepts contiguous tensors. First call .contiguous() on the tensor")):
        Buffer.from_dlpack(NonContiguousTensor(np.zeros(2)))


def test_dlpack_array_protocol():
    from axl.driver import DLPackArray

    assert isinstance(np.zeros(2), DLPackArray)
    assert isinstance(Buffer(DType.int8, (1,)), DLPackArray)
    assert isinstance(Producer(np.zeros(1)), DLPackArray)
    assert isinstance(LegacyProducer(np.zeros(1)), DLPackArray)
    assert not isinstance(object(), DLPackArray)
    assert not isinstance([1, 2], DLPackArray)

    class OnlyDlpack:
        def __dlpack__(self, *, stream=None):
            return None

    assert not isinstance(OnlyDlpack(), DLPackArray)  # __dlpack_device__ is part of it


# --------------------------------------------------------------------- torch

def test_torch_round_trips():
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.int32)
    b = Buffer.from_dlpack(t)
    assert b.dtype is DType.int32 and b._data_ptr() == t.data_ptr()
    t[0] = 50
    assert b[0].item() == 50
    back = torch.from_dlpack(b)
    assert back.data_ptr() == b._data_ptr() and back.tolist() == t.tolist()
    bt = Buffer.from_dlpack(torch.tensor([True, False]))
    assert bt.dtype is DType.bool and [bt[0].item(), bt[1].item()] == [True, False]
    bf = Buffer.from_dlpack(torch.tensor([1.5, -2.0], dtype=torch.bfloat16))
    assert bf.dtype is DType.bfloat16 and [bf[0].item(), bf[1].item()] == [1.5, -2.0]
    assert torch.from_dlpack(bf).tolist() == [1.5, -2.0]
    with pytest.raises(ValueError, match="only accepts contiguous tensors"):
        Buffer.from_dlpack(torch.arange(6).reshape(2, 3).t())


# ---------------------------------------------------------------------- mmap

def _mapping_of(address: int):
    """(permissions, path) of the /proc/self/maps entry holding `address`."""
    for line in Path("/proc/self/maps").read_text().splitlines():
        parts = line.split(None, 5)
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        if lo <= address < hi:
            return parts[1], (parts[5] if len(parts) > 5 else "")
    raise AssertionError(f"0x{address:x} is in no mapping")


@pytest.fixture
def data_file(tmp_path):
    p = tmp_path / "data.bin"
    np.arange(16, dtype=np.int32).tofile(p)
    return p


def test_mmap_r_plus_writes_reach_the_file(data_file):
    b = Buffer.mmap(data_file, DType.int32, (4, 4), mode="r+")
    assert b.shape == (4, 4) and b.dtype is DType.int32 and b.device is CPU()
    same(b, np.arange(16, dtype=np.int32).reshape(4, 4))
    perms, path = _mapping_of(b._data_ptr())
    assert path == str(data_file.resolve()) and perms[3] == "s", (perms, path)
    b[1, 2] = -7
    b.to_numpy()[3, 3] = 1234
    on_disk = np.fromfile(data_file, dtype=np.int32)
    assert on_disk[6] == -7 and on_disk[15] == 1234


@pytest.mark.parametrize("mode", [None, "c", "copyonwrite"])
def test_mmap_copy_on_write_is_private(data_file, mode):
    b = (Buffer.mmap(data_file, DType.int32, (16,)) if mode is None
         else Buffer.mmap(data_file, DType.int32, (16,), mode=mode))
    perms, path = _mapping_of(b._data_ptr())
    assert path == str(data_file.resolve()) and perms[3] == "p", (perms, path)
    b[0] = 99
    assert b[0].item() == 99
    assert np.fromfile(data_file, dtype=np.int32)[0] == 0
    other = Buffer.mmap(data_file, DType.int32, (16,), mode="r+")
    assert other[0].item() == 0


def test_mmap_r_is_a_private_writable_mapping(data_file):
    """axl maps mode "r" privately (MAX copies the whole file): writable,
    and the writes never reach the file or other mappings."""
    b = Buffer.mmap(data_file, DType.int32, 16, mode="r")
    assert b.shape == (16,)
    same(b, np.arange(16, dtype=np.int32))
    perms, path = _mapping_of(b._data_ptr())
    assert path == str(data_file.resolve()) and perms[3] == "p", (perms, path)
    b[3] = 5000
    assert b[3].item() == 5000
    assert np.fromfile(data_file, dtype=np.int32)[3] == 3
    assert Buffer.mmap(data_file, DType.int32, 16, mode="r")[3].item() == 3


def test_mmap_offsets(data_file):
    b = Buffer.mmap(str(data_file), DType.int32, (2, 3), mode="r", offset=8)
    same(b, np.arange(2, 8, dtype=np.int32).reshape(2, 3))
    w = Buffer.mmap(data_file, DType.int32, [2], mode="r+", offset=5 * 4)
    same(w, np.array([5, 6], np.int32))
    w[1] = -1
    assert np.fromfile(data_file, dtype=np.int32)[6] == -1
    u = Buffer.mmap(data_file, DType.uint8, (3,), offset=1)  # not even element aligned
    same(u, np.arange(16, dtype=np.int32).view(np.uint8)[1:4])
    flags = data_file.parent / "flags.bin"
    np.array([1, 0, 1], np.uint8).tofile(flags)
    fb = Buffer.mmap(flags, DType.bool, (3,), mode="r")
    assert [fb[i].item() for i in range(3)] == [True, False, True]


def test_mmap_errors(data_file, tmp_path):
    with pytest.raises(ValueError):
        Buffer.mmap(data_file, DType.int32, (17,), mode="r")  # past the end of the file
    with pytest.raises(ValueError):
        Buffer.mmap(data_file, DType.int32, (4,), mode="r", offset=60)
    with pytest.raises(ValueError):
        Buffer.mmap(data_file, DType.int32, (4,), mode="bogus")
    with pytest.raises(FileNotFoundError):
        Buffer.mmap(tmp_path / "missing.bin", DType.int32, (4,), mode="r")
