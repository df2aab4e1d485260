"""Bad input gets the error MAX or numpy would raise, naming the value
(issue 14), never pybind11's default cast messages or a silent misreading."""
from __future__ import annotations

import re

import numpy as np
import pytest

from axl.driver import Buffer, batch_inplace_copy
from axl.dtype import DType
from axl.profiler import set_gpu_profiling_state

PYBIND11_DEFAULTS = ("Unable to cast", "incompatible function arguments", "C++ type")


def no_default_text(info: pytest.ExceptionInfo) -> None:
    text = str(info.value)
    assert not any(d in text for d in PYBIND11_DEFAULTS), text


@pytest.mark.parametrize("src", [np.zeros(4, np.int32), [0, 0, 0, 0], None, 3])
def test_inplace_copy_from_a_non_buffer_is_a_type_error(src):
    dst = Buffer(DType.int32, (4,))
    with pytest.raises(TypeError, match=rf"inplace_copy_from: src must be a Buffer, got {type(src).__name__}"):
        dst.inplace_copy_from(src)


def test_batch_inplace_copy_of_a_non_buffer_is_a_type_error():
    dst = Buffer(DType.int32, (4,))
    with pytest.raises(TypeError, match=r"batch_inplace_copy: srcs\[0\] must be a Buffer, got ndarray"):
        batch_inplace_copy([dst], [np.zeros(4, np.int32)])


@pytest.mark.parametrize("obj", [object(), 3, "abc", [1, 2]])
def test_from_dlpack_without_dunder_dlpack_is_a_type_error(obj):
    with pytest.raises(TypeError, match=rf"expected a DLPack producer .*got {type(obj).__name__}"):
        Buffer.from_dlpack(obj)


@pytest.mark.parametrize("shape", [(2**63,), (1, 2**64), 2**63, [2**100]])
def test_shape_entry_beyond_int64_is_a_value_error(shape):
    with pytest.raises(ValueError, match=r"shape entry \d+ is out of range: maximum allowed dimension exceeded") as info:
        Buffer(DType.int8, shape)
    no_default_text(info)


def test_view_shape_beyond_int64_is_a_value_error():
    with pytest.raises(ValueError, match=r"shape entry 9223372036854775808 is out of range"):
        Buffer(DType.int8, (4,)).view(DType.int8, (2**63,))


@pytest.mark.parametrize("key", [2**63, -(2**63) - 1, 2**70, (0, 2**64), np.uint64(2**63)])
def test_index_beyond_int64_is_an_index_error(key):
    b = Buffer(DType.int8, (3, 3))
    with pytest.raises(IndexError, match=r"Buffer index \d+ is out of bounds|Buffer index -\d+ is out of bounds") as info:
        b[key]
    no_default_text(info)
    with pytest.raises(IndexError):
        b[key] = 1


@pytest.mark.parametrize("key", [[1, 2], [0], ([0], 1)])
def test_list_index_is_refused(key):
    b = Buffer(DType.int8, (3, 3))
    with pytest.raises(TypeError, match=r"got the list .*use a tuple"):
        b[key]
    with pytest.raises(TypeError, match=r"got the list"):
        b[key] = 1
    assert b[(1, 2)].shape == ()  # a tuple is one index per axis


def test_set_gpu_profiling_state_none_is_a_type_error():
    with pytest.raises(TypeError, match=r"state must be a str"):
        set_gpu_profiling_state(None)


@pytest.mark.parametrize("mode", ["r+", "readwrite"])
def test_mmap_read_write_of_a_short_file_is_refused(tmp_path, mode):
    path = tmp_path / "short.bin"
    path.write_bytes(bytes(10))
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}: the file has 10 bytes, mode {re.escape(repr(mode))} .* needs 16"):
        Buffer.mmap(path, DType.int32, (4,), mode=mode)
    assert path.stat().st_size == 10  # not grown
    with pytest.raises(ValueError, match=r"needs 12"):
        Buffer.mmap(path, DType.int32, (1,), mode=mode, offset=8)
    assert Buffer.mmap(path, DType.int16, (5,), mode=mode).shape == (5,)  # exactly fits


def _entry_points():
    """(name, call taking one bad value) for each public entry point whose
    argument reaches a C++ conversion."""
    from axl.driver import (CPU, Accelerator, CompletionFlag, DeviceEvent, DevicePinnedBuffer, DeviceQueue,
                            HostHazardCompletion, begin_launch_trace, calculate_virtual_device_count,
                            copy_pinned_to_destinations, set_virtual_cpu_target, set_virtual_device_api,
                            set_virtual_device_count, set_virtual_device_target_arch)

    cpu = CPU()
    q = cpu.default_queue
    flag = CompletionFlag(cpu)
    ev = DeviceEvent(cpu)
    b = Buffer(DType.int32, (4,))
    return {
        "DeviceEvent.elapsed_time": lambda x: ev.elapsed_time(x),
        "DeviceQueue.record_event": lambda x: q.record_event(x),
        "DeviceQueue.wait_for_host_value(flag)": lambda x: q.wait_for_host_value(x, 1),
        "DeviceQueue.wait_for_host_value(value)": lambda x: q.wait_for_host_value(flag, x),
        "CompletionFlag.signal": lambda x: flag.signal(x),
        "set_virtual_device_count": lambda x: set_virtual_device_count(x),
        "set_virtual_device_api": lambda x: set_virtual_device_api(x),
        "set_virtual_device_target_arch": lambda x: set_virtual_device_target_arch(x),
        "set_virtual_cpu_target": lambda x: set_virtual_cpu_target(x),
        "HostHazardCompletion.record_on": lambda x: HostHazardCompletion.record_on(x),
        "HostHazardCompletion.poisoned": lambda x: HostHazardCompletion.poisoned(q, x),
        "HostHazardCompletion.poison": lambda x: HostHazardCompletion.record_on(q).poison(x),
        "Buffer(usage=)": lambda x: Buffer(DType.int8, (2,), usage=x),
        "Buffer(stream=)": lambda x: Buffer(DType.int8, (2,), stream=x),
        "Device.load_module(format=)": lambda x: cpu.load_module(b"", format=x),
        "Accelerator(id)": lambda x: Accelerator(x),
        "begin_launch_trace": lambda x: begin_launch_trace(x),
        "calculate_virtual_device_count": lambda x: calculate_virtual_device_count(x),
        "copy_pinned_to_destinations": lambda x: copy_pinned_to_destinations(b, x),
        "DevicePinnedBuffer(device)": lambda x: DevicePinnedBuffer(DType.int8, (2,), x),
        "Buffer.__setitem__": lambda x: b.__setitem__(0, x),
        "DeviceQueue(device)": lambda x: DeviceQueue(x),
        "CompletionFlag(device)": lambda x: CompletionFlag(x),
        "DeviceEvent(device)": lambda x: DeviceEvent(x),
    }


BAD_VALUES = [None, "x", 1.5, object(), 2**64, -1, [1], b"x"]


@pytest.mark.parametrize("name", sorted(_entry_points()))
def test_no_pybind11_default_message_reaches_the_user(name):
    """Every wrong value gets a Python error naming the argument (never
    pybind11's "incompatible function arguments" / "Unable to cast", an
    AttributeError from deep inside, or a bare OverflowError)."""
    import axl.driver as d
    from axl.driver import AxlError

    call = _entry_points()[name]
    # The virtual-device setters take some of these values as valid (any
    # str): the process-wide settings are restored after each.
    saved = (d.get_virtual_device_api(), d.get_virtual_device_target_arch(), d.get_virtual_cpu_target())
    for value in BAD_VALUES:
        try:
            call(value)
        except (TypeError, ValueError, IndexError, OverflowError, BufferError, AxlError) as e:
            text = str(e)
            assert not any(m in text for m in PYBIND11_DEFAULTS), (name, value, text)
            assert "too large to convert to C" not in text, (name, value, text)
        except AttributeError as e:
            pytest.fail(f"{name}({value!r}): AttributeError {e}")
        finally:
            d.set_virtual_device_api(saved[0])
            d.set_virtual_device_target_arch(saved[1])
            d.set_virtual_cpu_target(saved[2])
            d.take_launch_trace()


@pytest.mark.parametrize("device", ["x", None, "cpu"])
def test_device_pinned_buffer_refusal_leaves_no_half_built_instance(device):
    """The device is refused before the instance exists: a Buffer whose C++
    half was never built, left in the traceback's frames, crashed the
    process when anything (pytest's report of locals) touched it."""
    from axl.driver import CPU, DevicePinnedBuffer

    with pytest.raises((TypeError, ValueError)) as info:
        DevicePinnedBuffer(DType.int8, (2,), CPU() if device == "cpu" else device)
    tb = info.value.__traceback__
    while tb is not None:
        for value in tb.tb_frame.f_locals.values():
            assert not isinstance(value, DevicePinnedBuffer), tb.tb_frame.f_code.co_name
        tb = tb.tb_next


@pytest.mark.parametrize("kwargs", [{"usage": 0}, {"pinned": True}, {"stream": None}, {"bogus": 1}])
def test_device_pinned_buffer_refuses_unknown_keywords(cpu, kwargs):
    # Its signature is (dtype, shape, device); a keyword it would drop
    # silently (the usage is always STAGING | UNTRACKED) is a TypeError.
    from axl.driver import DevicePinnedBuffer

    name = next(iter(kwargs))
    with pytest.raises(TypeError, match=rf"^DevicePinnedBuffer\(\) got an unexpected keyword argument '{name}'$"):
        DevicePinnedBuffer(DType.int8, (2,), cpu, **kwargs)


# ------------------------------------- second adversarial review (break 2)


@pytest.mark.parametrize("call", [
    lambda: Buffer.from_numpy(np.ones(3), device="gpu"),
    lambda: Buffer(shape=np.ones(3), device="gpu"),
    lambda: Buffer.scalar(1.0, DType.float32, device=0),
])
def test_a_device_that_is_not_a_device_is_a_type_error(call):
    with pytest.raises(TypeError, match=r"expected an axl\.driver\.Device \(CPU\(\) or Accelerator\(\)\), got (str|int)"):
        call()


def test_an_out_of_range_int_says_so():
    from axl.driver import CPU, CompletionFlag, set_virtual_device_count
    f = CompletionFlag(CPU())
    for bad in (-1, 2**64):
        with pytest.raises(TypeError, match=r"an int in \[0, 2\*\*64\), got int .*: out of range \[0, 18446744073709551615\]"):
            f.signal(bad)
    with pytest.raises(TypeError, match=r"out of range \[-2147483648, 2147483647\]"):
        set_virtual_device_count(2**40)


@pytest.mark.parametrize("kwargs, match", [
    ({"max_version": "1"}, "max_version must be a tuple of two ints"),
    ({"max_version": (1,)}, "max_version must be a tuple of two ints"),
    ({"dl_device": "cpu"}, "dl_device must be a tuple of two ints"),
    ({"dl_device": (1.0, 0)}, "dl_device must be a tuple of two ints"),
    ({"copy": "yes"}, "copy must be True, False or None"),
    ({"copy": 1}, "copy must be True, False or None"),
])
def test_dlpack_keywords_of_the_wrong_type_are_type_errors(kwargs, match):
    b = Buffer.from_numpy(np.arange(3.0))
    with pytest.raises(TypeError, match=match):
        b.__dlpack__(**kwargs)


def test_from_dlpack_copy_of_the_wrong_type_is_a_type_error():
    with pytest.raises(TypeError, match="copy must be True, False or None"):
        Buffer.from_dlpack(np.ones(3), copy="x")


def test_max_pending_takes_numpy_integers():
    from axl.driver import CPU, DeviceQueue
    q = DeviceQueue(CPU(), max_pending=np.int64(5))
    q.synchronize()
    with pytest.raises(ValueError, match="max_pending must be from 1 to 4294967295"):
        DeviceQueue(CPU(), max_pending=np.int64(0))
    with pytest.raises(TypeError, match="max_pending must be an int > 0 or None"):
        DeviceQueue(CPU(), max_pending=np.float64(5))


def test_int_and_float_of_a_one_element_buffer_are_its_value():
    # They fell through to the buffer protocol and parsed the raw bytes.
    assert int(Buffer.from_numpy(np.array(3))) == 3
    assert float(Buffer.from_numpy(np.array([2.5]))) == 2.5
    assert int(Buffer.from_numpy(np.array([[7.9]], np.float32))) == 7
    with pytest.raises(TypeError, match="only one-element buffers can be converted to Python scalars, got 3"):
        int(Buffer.from_numpy(np.arange(3.0)))
    with pytest.raises(TypeError, match="only one-element buffers"):
        float(Buffer.from_numpy(np.zeros((2, 2))))


@pytest.mark.parametrize("interval, error", [
    (float("nan"), ValueError), (float("inf"), ValueError), (1e300, ValueError), (-1, ValueError),
    ("1", TypeError), (None, TypeError), (True, TypeError),
])
def test_background_recorder_interval_is_checked_before_a_child_starts(interval, error):
    from axl.profiler.gpu import BackgroundRecorder
    with pytest.raises(error):
        BackgroundRecorder(interval=interval)


def test_module_namespace_lists_only_what_it_offers():
    import axl.driver
    assert "atexit" not in dir(axl.driver) and "annotations" not in dir(axl.driver)


@pytest.mark.parametrize("shape", [b"\x02\x03", bytearray(b"\x04"), "ab"])
def test_text_and_bytes_are_not_shapes(shape):
    # Both are sequences (bytes of small ints), but numpy refuses them as shapes.
    with pytest.raises(TypeError, match=rf"Buffer: shape must be a sequence of ints, got {type(shape).__name__}") as info:
        Buffer(DType.int8, shape)
    no_default_text(info)
    with pytest.raises(TypeError, match=r"shape must be a sequence of ints"):
        Buffer(DType.int8, (4,)).view(DType.int8, shape)
