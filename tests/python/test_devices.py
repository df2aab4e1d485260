"""Device, CPU and Accelerator (spec section 2.1-2.3)."""

from __future__ import annotations

import pickle

import pytest

from axl import driver
from axl.driver import CPU, Accelerator, AxlError, Device, DeviceQueue, UnsupportedError

from conftest import needs_virtual, run_py


def test_cpu_properties(cpu):
    assert cpu.label == "cpu"
    assert cpu.api == "cpu"
    assert cpu.id == 0
    assert cpu.is_host
    assert cpu.is_host_unified
    assert cpu.is_compatible
    assert isinstance(cpu.model_name, str) and cpu.model_name
    assert isinstance(cpu, Device) and isinstance(cpu, CPU)


def test_cpu_str_repr(cpu):
    assert str(cpu) == repr(cpu) == "Device(type=cpu,id=0)"
    assert "cpu" in str(cpu)


def test_cpu_is_one_object_and_ignores_id(cpu):
    assert CPU() is cpu
    assert CPU(5) is cpu and CPU(5).id == 0
    assert Device.cpu() is cpu and Device.cpu(3) is cpu


def test_equality_and_hash(cpu):
    assert CPU() == CPU()
    assert hash(CPU()) == hash(cpu)
    assert len({cpu, CPU(), CPU(1)}) == 1
    assert cpu != "cpu"
    assert (cpu == 0) is False


def test_cpu_architecture_name_raises(cpu):
    with pytest.raises(Exception, match="failed to get device architecture name"):
        cpu.architecture_name
    with pytest.raises(UnsupportedError) as e:
        cpu.architecture_name
    assert isinstance(e.value, RuntimeError) and e.value.backend == "cpu"


def test_stats_and_limits(cpu):
    stats = cpu.stats
    assert set(stats) >= {"free_memory", "total_memory"}
    assert 0 <= stats["free_memory"] <= stats["total_memory"]
    assert cpu.max_single_alloc_size > 0


def test_device_is_not_constructible():
    with pytest.raises(TypeError, match="use CPU"):
        Device()


def test_default_queue(cpu):
    q = cpu.default_queue
    assert isinstance(q, DeviceQueue)
    assert q is cpu.default_queue
    assert q.device is cpu
    assert DeviceQueue(cpu) != q


def test_can_access_host(cpu):
    assert cpu.can_access(cpu) is False


def test_synchronize(cpu):
    cpu.synchronize()


def test_pickle_names_the_device(cpu):
    assert pickle.loads(pickle.dumps(cpu)) is cpu


def test_no_accelerator_error_names_count():
    if driver.accelerator_count() > 0:
        pytest.skip("this host has accelerators")
    with pytest.raises(ValueError, match=r"no accelerator was found \(accelerator_count\(\) is 0\)"):
        Accelerator()
    with pytest.raises(ValueError):
        Accelerator(0)


def test_accelerator_bad_ids():
    with pytest.raises(ValueError, match="must be >= 0"):
        Accelerator(-2)
    with pytest.raises(TypeError):
        Accelerator("0")


@needs_virtual
def test_accelerator_cached_and_properties_on_virtual():
    run_py("""
        from axl.driver import Accelerator, CPU, accelerator_count, DeviceQueue
        assert accelerator_count() == 2
        objs = {id(Accelerator()) for _ in range(64)}
        assert len(objs) == 1, objs
        a0 = Accelerator()
        assert Accelerator(0) is a0 and Accelerator(-1) is a0
        a1 = Accelerator(1)
        assert a1 is not a0 and a1 != a0 and a1.id == 1
        assert str(a0) == repr(a0) == "Device(type=gpu,id=0)"
        assert a0.label == "gpu" and not a0.is_host and not a0.is_host_unified
        assert a0.api == "virtual" and a0.architecture_name == "virtual"
        assert a0.is_compatible
        s = a0.stats
        assert 0 <= s["free_memory"] <= s["total_memory"]
        assert a0.max_single_alloc_size > 0
        assert a0 != CPU() and CPU() != a0
        # MAX's peer rules: itself False, host False both ways, GPU pair symmetric.
        assert a0.can_access(a0) is False
        assert a0.can_access(CPU()) is False and CPU().can_access(a0) is False
        assert a0.can_access(a1) == a1.can_access(a0)
        assert a0.default_queue.device is a0
        assert DeviceQueue(a0) != a0.default_queue
        try:
            Accelerator(2)
        except ValueError as e:
            assert "only 2 accelerators exist" in str(e), e
        else:
            raise AssertionError("Accelerator(2) did not raise")
        print("ok")
    """, env={"AXL_VIRTUAL_DEVICES": "2"})


@needs_virtual
def test_accelerator_backend_init_failure_is_an_axl_error():
    # The only accelerator's backend fails to initialise: Accelerator()
    # reports the backend's reason, not just "no accelerator".
    p = run_py("""
        from axl.driver import Accelerator, BackendUnavailableError, accelerator_count
        assert accelerator_count() == 1
        try:
            Accelerator()
        except BackendUnavailableError as e:
            print("raised", e.backend, e.native_name)
        assert accelerator_count() == 0
    """, env={"AXL_VIRTUAL_DEVICES": "1", "AXL_VIRTUAL_FAIL": "init:*=BACKEND_UNAVAILABLE"})
    assert "raised virtual VIRTUAL_ERROR_BACKEND_UNAVAILABLE" in p.stdout, p.stdout

