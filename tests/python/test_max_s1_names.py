"""MAX's S1 names (max-driver.md, version timeline: `DeviceStream` and
`default_stream` became `DeviceQueue` and `default_queue`, `pinned=` became
`usage=`), kept so S1 code runs unchanged: MAX's own older driver tests use
them (`test_pinning`, `test_zero_copy_on_to_stream_on_same_device`, the
device-event tests)."""
import pytest

import axl.driver as driver
from axl.driver import CPU, Buffer, DeviceQueue, Usage
from axl.dtype import DType

from conftest import VIRTUAL, on_accelerator_kinds, run_on


def test_device_stream_is_device_queue_and_stays_out_of_all():
    assert driver.DeviceStream is DeviceQueue
    assert "DeviceStream" not in driver.__all__  # __all__ follows the newest MAX
    from axl.driver import DeviceStream  # noqa: F401  (S1 code imports it by name)


def test_default_stream_is_the_default_queue():
    dev = CPU()
    assert dev.default_stream is dev.default_queue
    q = DeviceQueue(dev)
    b = Buffer(DType.int32, (3,), q)
    assert b.stream is q


def test_pinned_keyword_on_the_cpu():
    dev = CPU()
    plain = Buffer(DType.float32, (4,), dev, pinned=False)
    assert plain.usage == Usage.DEFAULT
    staged = Buffer(DType.float32, (4,), dev, pinned=True)
    assert staged.usage == Usage.STAGING
    assert not staged.pinned  # host memory: STAGING's meaning on the CPU (docs/python.md)


def test_pinned_keyword_refuses_non_bools_and_a_second_usage():
    dev = CPU()
    for bad in ("yes", 1, 1.0, object()):
        with pytest.raises(TypeError, match="pinned must be a bool"):
            Buffer(DType.float32, (4,), dev, pinned=bad)
    with pytest.raises(TypeError, match="usage= or the older pinned="):
        Buffer(DType.float32, (4,), dev, usage=Usage.STAGING, pinned=True)
    with pytest.raises(TypeError, match="usage= or the older pinned="):
        Buffer(DType.float32, (4,), dev, usage=Usage.DEFAULT, pinned=False)


@on_accelerator_kinds(kinds=(VIRTUAL,))
def test_pinned_keyword_on_an_accelerator_is_staging(kind):
    p = run_on(kind, """
        import numpy as np
        from axl.driver import Buffer, Usage
        from axl.dtype import DType
        b = Buffer(DType.int32, (8,), dev, pinned=True)
        assert b.pinned and b.usage == Usage.STAGING, (b.pinned, b.usage)
        assert not Buffer(DType.int32, (8,), dev, pinned=False).pinned
        b.inplace_copy_from(Buffer.from_numpy(np.arange(8, dtype=np.int32)))
        assert b.to_numpy().tolist() == list(range(8))
        print("OK")
        """)
    assert "OK" in p.stdout, p.stdout + p.stderr


# MAX's positional order is (dtype, shape, device | stream, usage)
# (max-driver.md 4.1, overloads A and B); axl had stream fourth, so ported
# MAX code passing a Usage positionally was refused.
def test_usage_is_the_fourth_positional_as_in_max():
    dev = CPU()
    b = Buffer(DType.float32, (4,), dev, Usage.STAGING)
    assert b.usage == Usage.STAGING
    q = DeviceQueue(dev)
    s = Buffer(DType.float32, (4,), q, Usage.UNTRACKED)  # overload B
    assert s.stream is q and s.usage == Usage.UNTRACKED
    assert Buffer(DType.float32, (4,), dev, True).usage == Usage.STAGING  # S1's positional pinned
    assert Buffer(DType.float32, (4,), dev, False).usage == Usage.DEFAULT
    with pytest.raises(TypeError, match="usage must be a Usage"):
        Buffer(DType.float32, (4,), dev, q)  # a queue goes third (or stream=), not fourth
    assert Buffer(DType.float32, (4,), stream=q).stream is q


def test_static_constructors_name_themselves_in_argument_errors():
    # Python's own TypeError names the function: Buffer.zeros, not _zeros.
    with pytest.raises(TypeError, match=r"Buffer\.zeros\(\) got an unexpected keyword argument 'pinned'"):
        Buffer.zeros((4,), DType.float32, CPU(), pinned=True)
    with pytest.raises(TypeError, match=r"Buffer\.scalar\(\) got an unexpected keyword"):
        Buffer.scalar(1.0, DType.float32, stream=None)
