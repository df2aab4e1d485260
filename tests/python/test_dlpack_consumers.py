"""DLPack exports a consumer can use (issue 14): memory no consumer can read
(the virtual backend's device memory, kDLExtDev; OpenCL's, test_opencl.py)
is refused cleanly instead
of handing out an address that torch cannot map and mpi4py dereferences,
and ``copy=True`` copies into the kind of memory the buffer reports."""
from __future__ import annotations

import numpy as np
import pytest

from axl import _core
from axl.driver import CPU, Buffer
from axl.dtype import DType

from test_buffer_interop import unpack
from test_buffer_model import on_virtual


@pytest.mark.parametrize("stream", ["0", 1.0, object(), b"", True])
def test_dlpack_stream_of_another_type_is_a_type_error(stream):
    b = Buffer(DType.int8, (3,))
    with pytest.raises(TypeError, match=r"__dlpack__: stream must be an int or None, got"):
        b.__dlpack__(stream=stream)
    b.__dlpack__(stream=None)
    b.__dlpack__(stream=-1)
    b.__dlpack__(stream=0)


@on_virtual()
def test_virtual_device_memory_is_not_exported_through_dlpack(dev):
    """No consumer can read the virtual backend's device memory (torch has no
    device type for kDLExtDev; mpi4py would dereference the address): the
    export refuses, naming the ways to the host, which still work."""
    b = Buffer.from_numpy(np.arange(4, dtype=np.int32)).to(dev)
    for call in (lambda: b.__dlpack__(), lambda: b.__dlpack__(max_version=(1, 0)), lambda: np.from_dlpack(b),
                 lambda: b.__dlpack__(copy=True)):  # refused before copying (the copy is device memory too)
        with pytest.raises(BufferError, match=r"no DLPack consumer can read .*buf\.to\(CPU\(\)\).*dl_device=\(1, 0\)"):
            call()
    assert b.__dlpack_device__() == (12, dev.id)
    if np.lib.NumpyVersion(np.__version__) >= "2.1.0":  # numpy's device= keyword
        host = np.from_dlpack(b, device="cpu")  # dl_device=(1, 0): a host copy
        np.testing.assert_array_equal(host, np.arange(4))
    _, _, _, t = unpack(b.__dlpack__(max_version=(1, 0), dl_device=(1, 0)))
    assert t["device"] == (1, 0)


@on_virtual()
def test_staging_dlpack_copy_is_made_where_the_buffer_lives(dev):
    """A staging buffer says DLPack device CPU, so copy=True must hand out
    host memory (it used to be a device-memory copy labelled CPU)."""
    from axl.driver import Usage

    for usage in (Usage.STAGING, Usage.STAGING | Usage.UNTRACKED):
        s = Buffer(DType.int32, (6,), dev, usage=usage)
        s.inplace_copy_from(Buffer.from_numpy(np.arange(6, dtype=np.int32)))
        dev.default_queue.synchronize()
        cap = s.__dlpack__(max_version=(1, 0), copy=True)
        name, _, flags, t = unpack(cap)
        assert t["device"] == (1, 0) and flags & 2  # DLPACK_FLAG_BITMASK_IS_COPIED
        assert t["data"] != s._data_ptr()
        copy, _ = _core._from_dlpack_capsule(cap)
        assert copy.device == CPU() or copy.pinned
        np.testing.assert_array_equal(np.from_dlpack(copy), np.arange(6))
        a = np.from_dlpack(s, copy=True) if np.lib.NumpyVersion(np.__version__) >= "2.1.0" else None
        if a is not None:
            np.testing.assert_array_equal(a, np.arange(6))
