"""SymmetricPool (MAX spec 2.7) on the virtual backend's emulation
(AXL_VIRTUAL_DEVICES=2 and 3), on the cuda backend's multicast objects
against the fake libcuda (conftest's fake_cuda), and is_supported's honest
answers elsewhere.
Each case runs in a child: the registry is process-wide and discovery reads
the environment once."""

from __future__ import annotations

import textwrap

from conftest import needs_virtual, run_py

PRELUDE = """
import numpy as np
import axl.driver as drv
from axl.driver import SymmetricPool
from axl.dtype import DType
gpus = [drv.Accelerator(i) for i in range(drv.accelerator_count())]
def raises(exc, fn, *args, match=""):
    try:
        fn(*args)
    except exc as e:
        assert match in str(e), (match, str(e))
        return e
    raise AssertionError(f"{fn} did not raise {exc.__name__}")
"""


def run_pool(code: str, devices: int | None = 2, setup: str = ""):
    """``code`` after PRELUDE in a child with ``devices`` virtual devices
    (None: no virtual devices unless ``setup`` makes them)."""
    env = {} if devices is None else {"AXL_VIRTUAL_DEVICES": str(devices)}
    return run_py(setup + PRELUDE + textwrap.dedent(code), env=env)


@needs_virtual
def test_one_pool_per_device_set_and_lookup():
    p = run_pool("""
        a, b = gpus
        assert SymmetricPool.is_supported([a, b]) and SymmetricPool.is_supported((b, a))
        assert SymmetricPool.lookup([a, b]) is None
        pool = SymmetricPool.allocate([a, b], 1000)
        assert pool.byte_size == 1000  # exactly the request, not the reservation
        again = SymmetricPool.lookup([b, a])  # order-insensitive
        assert again is not None and again.byte_size == 1000
        raises(RuntimeError, SymmetricPool.allocate, [b, a], 64, match="already exists")
        raises(TypeError, SymmetricPool, match="SymmetricPool.allocate")
        print("OK")
        """)
    assert "OK" in p.stdout


@needs_virtual
def test_views_are_flat_uint8_per_device_and_distinct():
    p = run_pool("""
        a, b = gpus
        pool = SymmetricPool.allocate([a, b], 4096)
        for d in (a, b):
            u, m = pool.unicast_view(d), pool.multicast_view(d)
            for v in (u, m):
                assert v.dtype == DType.uint8 and v.shape == (4096,) and v.device == d, (v.dtype, v.shape)
            assert u._data_ptr() != m._data_ptr()
        assert pool.unicast_view(a)._data_ptr() != pool.unicast_view(b)._data_ptr()
        print("OK")
        """)
    assert "OK" in p.stdout


@needs_virtual
def test_round_trip_and_handles_alias_one_allocation():
    p = run_pool("""
        import gc
        a, b = gpus
        pool = SymmetricPool.allocate([a, b], 256)
        data = np.arange(256, dtype=np.uint8)
        pool.unicast_view(a).inplace_copy_from(drv.Buffer.from_numpy(data))
        pool.unicast_view(b).inplace_copy_from(pool.unicast_view(a))  # peer copy between the views
        other = SymmetricPool.lookup([a, b])
        assert other.unicast_view(b).to_numpy().tolist() == data.tolist()
        del pool, other
        gc.collect()  # dropping every handle frees nothing
        assert SymmetricPool.lookup([a, b]).unicast_view(a).to_numpy().tolist() == data.tolist()
        print("OK")
        """)
    assert "OK" in p.stdout


@needs_virtual
def test_errors_name_what_is_wrong():
    p = run_pool("""
        a, b, c = gpus
        pool = SymmetricPool.allocate([a, b], 16)
        raises(RuntimeError, pool.unicast_view, c, match="not one of the pool's devices")
        raises(RuntimeError, pool.multicast_view, drv.CPU(), match="not one of the pool's devices")
        raises(RuntimeError, SymmetricPool.allocate, [c], 16, match="at least 2 devices")
        raises(RuntimeError, SymmetricPool.allocate, [c, c], 16, match="listed twice")
        raises(RuntimeError, SymmetricPool.allocate, [c, drv.CPU()], 16, match="no multicast support")
        raises(ValueError, SymmetricPool.allocate, [a, c], 0, match="positive")
        raises(TypeError, SymmetricPool.allocate, [a, c], 1.5, match="byte_size")
        raises(TypeError, SymmetricPool.allocate, "gpu", 16, match="sequence of Device")
        raises(TypeError, SymmetricPool.is_supported, [a, 3], match="Device objects")
        assert not SymmetricPool.is_supported([a]) and not SymmetricPool.is_supported([a, drv.CPU()])
        # A set that is a subset or superset of another is a pool of its own.
        assert SymmetricPool.lookup([a, b, c]) is None and SymmetricPool.lookup([a, c]) is None
        assert SymmetricPool.allocate([a, b, c], 8).byte_size == 8
        # Any __index__ integer is a size (numpy's, as the rest of axl takes
        # them), bool is not.
        raises(TypeError, SymmetricPool.allocate, [b, c], True, match="byte_size")
        import numpy
        assert SymmetricPool.allocate([b, c], numpy.int64(32)).byte_size == 32
        print("OK")
        """, devices=3)
    assert "OK" in p.stdout


@needs_virtual
def test_lookup_refuses_the_device_lists_allocate_refuses():
    # One rule for both: a list naming a device twice is not the pool of the
    # devices it names, for lookup as for allocate (same type, same words).
    p = run_pool("""
        a, b = gpus
        SymmetricPool.allocate([a, b], 16)
        for fn, args in ((SymmetricPool.allocate, ([a, a, b], 16)), (SymmetricPool.lookup, ([a, a, b],))):
            e = raises(RuntimeError, fn, *args, match="a device is listed twice in")
            assert str(e).startswith(f"SymmetricPool.{fn.__name__}: "), str(e)
        raises(RuntimeError, SymmetricPool.lookup, (b, a, b), match="listed twice")
        raises(TypeError, SymmetricPool.lookup, [a, "b"], match="Device objects")
        assert SymmetricPool.lookup([b, a]).byte_size == 16
        assert not SymmetricPool.is_supported([a, a, b])  # a predicate answers, it does not raise
        print("OK")
        """)
    assert "OK" in p.stdout


@needs_virtual
def test_a_byte_size_no_buffer_can_hold_names_byte_size():
    # MAX's RuntimeError for an allocation that cannot succeed, naming the
    # figure the caller passed, not only the rounded reservation (2^63 - 1
    # rounded up to 2 MiB) nor a shape entry of the Buffer behind the view.
    p = run_pool("""
        a, b = gpus
        for size in (2**63, 2**64, 2**80):
            e = raises(RuntimeError, SymmetricPool.allocate, [a, b], size, match=f"byte_size {size} is too large")
            assert "shape" not in str(e), str(e)
        # Below the limit, rounded past it by the backend: its refusal (no
        # memory for the reservation), led by the caller's figure.
        for size in (2**63 - 1, 2**63 - 2**20):
            e = raises(RuntimeError, SymmetricPool.allocate, [a, b], size, match=f"byte_size {size} on ")
            assert "shape" not in str(e), str(e)
        assert SymmetricPool.lookup([a, b]) is None  # nothing registered by a refusal
        print("OK")
        """)
    assert "OK" in p.stdout


def test_cpu_only_is_unsupported_and_allocation_refused():
    p = run_pool("""
        cpu = drv.CPU()
        assert gpus == [] and not SymmetricPool.is_supported([cpu, cpu])
        raises(RuntimeError, SymmetricPool.allocate, [cpu], 16, match="at least 2 devices")
        print("OK")
        """, devices=None)
    assert "OK" in p.stdout


@needs_virtual
def test_virtual_devices_keep_their_emulation_whatever_api_they_show():
    # set_virtual_device_api changes the api the devices report, not the
    # backend that emulates the pool.
    setup = "import axl.driver\naxl.driver.set_virtual_device_api('cuda')\naxl.driver.set_virtual_device_count(2)\n"
    p = run_pool("""
        assert [g.api for g in gpus] == ["cuda"] * 2, [g.api for g in gpus]
        assert SymmetricPool.is_supported(gpus)
        print("OK")
        """, devices=None, setup=setup)
    assert "OK" in p.stdout


@needs_virtual
def test_a_write_into_a_multicast_view_reaches_every_device():
    # The virtual backend's multicast groups broadcast a copy into one
    # device's multicast view to every device's unicast memory, as a
    # multicast store does; a write into unicast memory stays local.
    p = run_pool("""
        a, b, c = gpus
        pool = SymmetricPool.allocate([a, b, c], 300)
        for d in gpus:
            pool.unicast_view(d).inplace_copy_from(drv.Buffer.from_numpy(np.zeros(300, np.uint8)))
            d.synchronize()
        data = np.arange(300, dtype=np.uint16).astype(np.uint8)
        pool.multicast_view(b).inplace_copy_from(drv.Buffer.from_numpy(data))
        b.synchronize()  # other devices' queues do not wait for b's
        for d in gpus:
            assert pool.unicast_view(d).to_numpy().tolist() == data.tolist(), d
        pool.unicast_view(c).inplace_copy_from(drv.Buffer.from_numpy(np.full(300, 7, np.uint8)))
        assert pool.unicast_view(a).to_numpy().tolist() == data.tolist()
        assert set(pool.unicast_view(c).to_numpy().tolist()) == {7}
        print("OK")
        """, devices=3)
    assert "OK" in p.stdout


def test_support_is_the_cores_answer_per_device():
    p = run_pool("""
        from axl import _core
        assert not _core._multicast_supported(drv.CPU())
        assert all(_core._multicast_supported(g) for g in gpus)
        print("OK")
        """)
    assert "OK" in p.stdout


def run_fake_cuda(fake_cuda, code: str, **env: str):
    """``code`` after PRELUDE in a child whose accelerators are two devices
    of the fake libcuda (plus ``env``)."""
    return run_py(PRELUDE + "assert [g.api for g in gpus] == ['cuda', 'cuda'], gpus\n" + textwrap.dedent(code),
                  env={"AXL_CUDA_DRIVER_PATH": fake_cuda, "FAKE_CUDA_DEVICES": "2", **env})


def test_two_cuda_devices_with_multicast_support_hold_a_pool_whose_multicast_writes_reach_both(fake_cuda):
    p = run_fake_cuda(fake_cuda, """
        assert SymmetricPool.is_supported(gpus)
        pool = SymmetricPool.allocate(gpus, 1000)
        assert pool.byte_size == 1000
        zeros = drv.Buffer.from_numpy(np.zeros(1000, np.uint8))
        for g in gpus:
            pool.unicast_view(g).inplace_copy_from(zeros)
            g.synchronize()
        data = (np.arange(1000) % 251).astype(np.uint8)
        pool.multicast_view(gpus[1]).inplace_copy_from(drv.Buffer.from_numpy(data))
        gpus[1].synchronize()
        for g in gpus:
            np.testing.assert_array_equal(pool.unicast_view(g).to(drv.CPU()).to_numpy(), data)
        print("OK")
        """)
    assert "OK" in p.stdout


def test_cuda_devices_without_multicast_support_refuse_a_pool_with_the_attribute_named(fake_cuda):
    p = run_fake_cuda(fake_cuda, """
        assert not SymmetricPool.is_supported(gpus)
        raises(RuntimeError, SymmetricPool.allocate, gpus, 1000, match="CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED")
        print("OK")
        """, FAKE_CUDA_MULTICAST="0")
    assert "OK" in p.stdout
