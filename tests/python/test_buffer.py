"""The minimal Buffer this issue needs (the buffers issue extends it)."""

from __future__ import annotations

import numpy as np
import pytest

from axl.driver import CPU, Buffer
from axl.dtype import DType

from conftest import on_accelerator_kinds, run_on, run_py

NUMPY_DTYPES = [d for d in DType if d.is_integral() or d in (DType.bool, DType.float16, DType.float32, DType.float64)]


def test_metadata(cpu):
    b = Buffer(DType.float32, (3, 4), cpu)
    assert b.dtype is DType.float32
    assert b.shape == (3, 4) and b.rank == 2 and b.num_elements == 12
    assert b.element_size == 4 and b.is_contiguous and b.is_host
    assert b.device is cpu
    assert repr(b).startswith("axl.driver.Buffer(DType.float32, (3, 4)")
    assert b._data_ptr() != 0


def test_defaults_and_shapes(cpu):
    assert Buffer(DType.int8, [5]).device is cpu
    scalar = Buffer(DType.int32, ())
    assert scalar.shape == () and scalar.num_elements == 1 and scalar.rank == 0
    empty = Buffer(DType.int32, (0, 3))
    assert empty.num_elements == 0 and empty.to_numpy().shape == (0, 3)
    shape = [2, 2]
    b = Buffer(DType.uint8, shape)
    shape.append(9)  # the buffer copied the list
    assert b.shape == (2, 2)
    assert Buffer(DType.uint8, 7).shape == (7,)


def test_constructor_errors():
    with pytest.raises(TypeError, match="axl.dtype.DType"):
        Buffer(np.float32, (2,))
    with pytest.raises(ValueError, match=">= 0"):
        Buffer(DType.float32, (2, -1))
    with pytest.raises(TypeError, match="expected an axl.driver.Device"):
        Buffer(DType.float32, (2,), "cpu")
    with pytest.raises(ValueError, match="too large"):
        Buffer(DType.float64, (2**40, 2**40))


def _outcome(make):
    """(shape, dtype, device) of what make() built, or its exception's type and text."""
    try:
        b = make()
    except Exception as e:  # noqa: BLE001 - compared, not swallowed
        return type(e), str(e)
    return b.shape, b.dtype, b.device


@pytest.mark.parametrize(
    "shape",
    [(3, 4), [5], 7, (), (0, 3), np.array([2, 3]), (np.int64(4),), (2, -1), (2.0,), "ab", b"\x02", None,
     (True,), (2**63,), (2**40, 2**40), object()],
    ids=repr,
)
def test_positional_construction_matches_keyword_construction(cpu, shape):
    # Buffer(dtype, shape[, device]) with a known DType and Device has its
    # own fast tp_init (python/src/buffer.cpp, buffer_init); keywords take
    # pybind11's __init__. Both must build the same buffer or raise the
    # same error, for good and bad shapes alike.
    Buffer(DType.float32, (1,), cpu)  # the DType and the Device are known from here on
    fast = _outcome(lambda: Buffer(DType.float32, shape, cpu))
    assert fast == _outcome(lambda: Buffer(DType.float32, shape, device=cpu))
    assert _outcome(lambda: Buffer(DType.float32, shape)) == fast


def test_fast_construction_leaves_every_other_form_alone(cpu):
    b = Buffer(DType.float32, (4,), cpu)
    # A second __init__ (pybind11's, which b.__init__ names) is ignored.
    b.__init__(DType.int8, (9,), cpu)
    assert b.shape == (4,) and b.dtype is DType.float32
    Buffer.__init__(b, DType.int8, (9,))
    assert b.shape == (4,)
    # Subclasses, usage and the array form still construct through pybind11.
    from axl.driver import Usage

    assert Buffer(DType.uint8, (3,), cpu, Usage.UNTRACKED)._untracked_host
    copied = Buffer(np.arange(3, dtype=np.int16), cpu)
    assert copied.dtype is DType.int16 and copied.to_numpy().tolist() == [0, 1, 2]

    class Mine(Buffer):
        pass

    m = Mine(DType.float32, (2,), cpu)
    assert type(m) is Mine and m.shape == (2,)


@pytest.mark.parametrize("dt", NUMPY_DTYPES, ids=lambda d: d.name)
def test_numpy_round_trip_copies(dt):
    src = (np.arange(24) % 2 == 1) if dt is DType.bool else np.arange(24).astype(dt.to_numpy())
    src = src.reshape(2, 3, 4)
    b = Buffer.from_numpy(src)
    assert b.dtype is dt and b.shape == (2, 3, 4)
    out = b.to_numpy()
    np.testing.assert_array_equal(out, src)
    out[0, 0, 0] = out[0, 0, 1]  # a copy: the buffer is untouched
    np.testing.assert_array_equal(b.to_numpy(), src)


def test_from_numpy_non_contiguous_and_0d():
    a = np.arange(20, dtype=np.int32).reshape(4, 5)[:, ::2]
    np.testing.assert_array_equal(Buffer.from_numpy(a).to_numpy(), a)
    z = Buffer.from_numpy(np.array(3.5, dtype=np.float64))
    assert z.shape == () and z.to_numpy() == 3.5


def test_from_numpy_big_endian():
    a = np.arange(6, dtype=">i4")
    b = Buffer.from_numpy(a)
    assert b.dtype is DType.int32
    np.testing.assert_array_equal(b.to_numpy(), np.arange(6, dtype=np.int32))


def test_from_numpy_rejects_unknown_dtype():
    with pytest.raises(ValueError, match="unsupported NumPy dtype"):
        Buffer.from_numpy(np.zeros(3, dtype=np.complex64))


def test_bfloat16_to_numpy_needs_ml_dtypes():
    b = Buffer.zeros((2,), DType.bfloat16)
    assert b.element_size == 2
    try:
        import ml_dtypes
    except ImportError:  # MAX's behaviour
        with pytest.raises(ValueError, match="unsupported DType to convert to NumPy"):
            b.to_numpy()
        return
    out = b.to_numpy()
    assert out.dtype == ml_dtypes.bfloat16 and out.shape == (2,) and (out == 0).all()


def test_zeros(cpu):
    b = Buffer.zeros((5, 5), DType.float64, cpu)
    assert (b.to_numpy() == 0).all()
    assert (Buffer.zeros(3, DType.uint16).to_numpy() == 0).all()
    Buffer.zeros((0,), DType.uint8)


@on_accelerator_kinds
def test_buffers_on_an_accelerator(kind):
    run_on(kind, """
        import numpy as np
        from axl.driver import Buffer
        from axl.dtype import DType
        a = dev
        src = np.arange(1000, dtype=np.float32)
        b = Buffer.from_numpy(src, device=a)
        assert b.device is a and not b.is_host
        np.testing.assert_array_equal(b.to_numpy(), src)
        z = Buffer.zeros((10,), DType.int64, a)
        assert (z.to_numpy() == 0).all()
    """)
