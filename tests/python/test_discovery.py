"""Discovery, device specs, virtual-device mode (spec sections 2.8 and 10)."""

from __future__ import annotations

import dataclasses

import pytest

import axl.driver.driver as driver_module
from axl import _core, driver
from axl.driver import (
    CPU,
    BackendUnavailableError,
    DeviceSpec,
    InvalidArgumentError,
    UnsupportedError,
    calculate_virtual_device_count,
    calculate_virtual_device_count_from_cli,
)

from conftest import needs_virtual, run_py


# ------------------------------------------------------------ DeviceSpec

def test_device_spec_frozen_hashable():
    a, b = DeviceSpec(0, "gpu"), DeviceSpec.accelerator(0)
    assert a == b and hash(a) == hash(b)
    assert len({a, b, DeviceSpec.cpu()}) == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.id = 3
    assert DeviceSpec.cpu() == DeviceSpec(-1, "cpu")
    assert DeviceSpec(3).device_type == "cpu"
    assert DeviceSpec.accelerator() == DeviceSpec(0, "gpu")


def _decorated_twin():
    """DeviceSpec as MAX writes it, a real @dataclass(frozen=True): axl's
    hand-written class must behave the same."""

    @dataclasses.dataclass(frozen=True)
    class DeviceSpec:
        id: int
        device_type: str = "cpu"

        def __post_init__(self) -> None:
            if self.device_type == "gpu" and self.id < 0:
                raise ValueError(f"id provided {self.id} for accelerator must always be greater than 0")

    DeviceSpec.__qualname__ = "DeviceSpec"  # repr prints it
    return DeviceSpec


def test_device_spec_behaves_as_frozen_dataclass():
    import copy
    import pickle

    twin = _decorated_twin()
    for args in [(0,), (3, "gpu"), (-1, "cpu"), (2, "tpu")]:
        a, t = DeviceSpec(*args), twin(*args)
        assert repr(a) == repr(t)
        assert hash(a) == hash(t)
        assert (a == DeviceSpec(*args)) is True and (a != DeviceSpec(args[0] + 1)) is True
        assert a.__eq__((a.id, a.device_type)) is NotImplemented  # not equal to a tuple, as a dataclass
        assert dataclasses.astuple(a) == dataclasses.astuple(t) and dataclasses.asdict(a) == dataclasses.asdict(t)
        assert dataclasses.replace(a, id=7) == DeviceSpec(7, a.device_type)
        assert pickle.loads(pickle.dumps(a)) == a and copy.deepcopy(a) == a
        for attr in ("id", "device_type", "other"):
            with pytest.raises(dataclasses.FrozenInstanceError) as ours:
                setattr(a, attr, 1)
            with pytest.raises(dataclasses.FrozenInstanceError) as theirs:
                setattr(t, attr, 1)
            assert str(ours.value) == str(theirs.value)
            with pytest.raises(dataclasses.FrozenInstanceError) as ours:
                delattr(a, attr)
            with pytest.raises(dataclasses.FrozenInstanceError) as theirs:
                delattr(t, attr)
            assert str(ours.value) == str(theirs.value)
        match a:
            case DeviceSpec(i, kind):
                assert (i, kind) == (a.id, a.device_type)
    assert dataclasses.is_dataclass(DeviceSpec) and dataclasses.is_dataclass(DeviceSpec.cpu())
    ours_f, theirs_f = dataclasses.fields(DeviceSpec), dataclasses.fields(twin)
    assert [(f.name, f.default, f.init, f.repr, f.compare) for f in ours_f] == \
        [(f.name, f.default, f.init, f.repr, f.compare) for f in theirs_f]
    assert DeviceSpec.__dataclass_params__.frozen and DeviceSpec.__dataclass_params__.eq
    assert DeviceSpec.__match_args__ == twin.__match_args__


def test_import_and_scan_load_no_heavy_stdlib():
    # What keeps `import axl.driver` + scan cheap (benchmarks/python_overhead.py
    # times it): none of these is imported until a feature needs it.
    p = run_py("""
        import sys
        import axl.driver
        axl.driver.scan_available_devices()
        heavy = {"dataclasses", "inspect", "typing", "concurrent.futures", "logging", "re", "numpy", "contextlib"}
        print(sorted(heavy & set(sys.modules)))
        axl.driver.DLPackArray  # built on first use
        print("typing" in sys.modules)
    """)
    assert p.stdout.split("\n")[:2] == ["[]", "True"], p.stdout


def test_device_spec_subclass_inherits_the_fields_whichever_class_dataclasses_reads_first():
    # A fresh interpreter: the fields are built on first read, and the first
    # read here goes through the subclasses (found by a hostile-input review:
    # they got [] / their own annotations, and replace() lost device_type).
    p = run_py("""
        import dataclasses
        from axl.driver import DeviceSpec
        class T(DeviceSpec):
            pass
        class S(DeviceSpec):
            extra: int = 5
        print([f.name for f in dataclasses.fields(T)], [f.name for f in dataclasses.fields(S)])
        print(dataclasses.replace(T(1, "gpu"), id=2), dataclasses.asdict(S(1)))
    """)
    assert p.stdout.splitlines() == ["['id', 'device_type'] ['id', 'device_type']",
                                     "T(id=2, device_type='gpu') {'id': 1, 'device_type': 'cpu'}"], p.stdout


def test_device_spec_validation_message():
    with pytest.raises(ValueError, match=r"^id provided -1 for accelerator must always be greater than 0$"):
        DeviceSpec(-1, "gpu")
    DeviceSpec(0, "gpu")  # 0 is valid despite the wording
    DeviceSpec(-5, "cpu")


def test_load_device_and_devices(cpu):
    assert driver.driver.load_device(DeviceSpec.cpu()) is cpu
    assert driver.load_devices([DeviceSpec.cpu(), DeviceSpec.cpu(7)]) == [cpu, cpu]


def test_load_device_errors(monkeypatch):
    monkeypatch.setattr(driver_module, "accelerator_count", lambda: 0)
    with pytest.raises(ValueError, match=r"^Device 0 was requested but no devices were found\.$"):
        driver.driver.load_device(DeviceSpec.accelerator(0))
    monkeypatch.setattr(driver_module, "accelerator_count", lambda: 2)
    with pytest.raises(ValueError, match=r"^Device 5 was requested but only found 2 devices\.$"):
        driver.load_devices([DeviceSpec.cpu(), DeviceSpec.accelerator(5)])


def test_scan_and_exist(monkeypatch):
    monkeypatch.setattr(driver_module, "accelerator_count", lambda: 0)
    assert driver.scan_available_devices() == [DeviceSpec.cpu()]
    assert driver.devices_exist([DeviceSpec.cpu(3)])
    assert driver.devices_exist([])
    assert not driver.devices_exist([DeviceSpec.accelerator(0)])
    monkeypatch.setattr(driver_module, "accelerator_count", lambda: 2)
    assert driver.scan_available_devices() == [DeviceSpec.accelerator(0), DeviceSpec.accelerator(1)]
    assert driver.devices_exist([DeviceSpec.accelerator(1), DeviceSpec.cpu()])
    assert not driver.devices_exist([DeviceSpec.accelerator(2)])


def test_accelerator_count_matches_core():
    assert driver.accelerator_count() == _core._device_count("gpu")
    assert _core._device_count("cpu") == 1


def test_accelerator_api_and_arch_on_this_host():
    if driver.accelerator_count() == 0:
        assert driver.accelerator_api() == "cpu"
        with pytest.raises(UnsupportedError, match="failed to get device architecture name"):
            driver.accelerator_architecture_name()
    else:
        assert driver.accelerator_api() == driver.Accelerator().api
        assert driver.accelerator_architecture_name()


def test_enable_all_peer_access_is_idempotent():
    driver.enable_all_peer_access()
    driver.enable_all_peer_access()


# --------------------------------------------------- virtual-device counts

def test_calculate_virtual_device_count():
    acc, cpu = DeviceSpec.accelerator, DeviceSpec.cpu
    assert calculate_virtual_device_count() == 1
    assert calculate_virtual_device_count([cpu()]) == 1
    assert calculate_virtual_device_count([acc(3)], [acc(1)]) == 4
    assert calculate_virtual_device_count([acc(0), cpu(9)]) == 1
    # The C ABI's version agrees.
    assert _core._calculate_virtual_device_count([(True, 3), (True, 1), (False, 9)]) == 4


CLI_CASES = [
    (("gpu:0,3",), 4), (("gpu",), 1), (("GPU:2",), 3), (("gpu:1,all",), 2), (("gpu:",), 1), (("GPU",), 1),
    (("gpu0",), 1), (("cpu",), 1), ((" gpu:2",), 1), (("gpu: 3 , 1",), 4), (("gpu:-1",), 1), (("gpu:1", "gpu:4"), 5),
    ((), 1),
]


@pytest.mark.parametrize("inputs,want", CLI_CASES)
def test_from_cli_strings(inputs, want):
    assert calculate_virtual_device_count_from_cli(*inputs) == want
    # Cross-check with the core's implementation of the same grammar.
    assert _core._calculate_virtual_device_count_from_cli(list(inputs)) == want


def test_from_cli_lists_and_mixes():
    assert calculate_virtual_device_count_from_cli([0, 1, 2]) == 3
    assert calculate_virtual_device_count_from_cli([]) == 1
    assert calculate_virtual_device_count_from_cli("gpu:1", [5]) == 6
    assert calculate_virtual_device_count_from_cli(7, ("gpu:3",)) == 1  # ignored kinds


def test_from_cli_gpu_all_consults_patched_count(monkeypatch):
    monkeypatch.setattr(driver_module, "accelerator_count", lambda: 4)
    assert calculate_virtual_device_count_from_cli("gpu:all") == 4
    assert calculate_virtual_device_count_from_cli("GPU:ALL") == 4
    monkeypatch.setattr(driver_module, "accelerator_count", lambda: 0)
    assert calculate_virtual_device_count_from_cli("gpu:all") == 1


def test_from_cli_bad_id():
    with pytest.raises(ValueError, match="'x' is not an accelerator id"):
        calculate_virtual_device_count_from_cli("gpu:1,x")
    with pytest.raises(InvalidArgumentError, match="'x' is not an accelerator id"):
        _core._calculate_virtual_device_count_from_cli(["gpu:1,x"])


# One grammar: every input below got a different answer from the Python
# reader (int() takes '_', any script's digits, str.strip()'s whitespace and
# any size) than from the core (strtoll, whose ids past 2^32 wrapped the
# count); now Python asks the core, so both agree and ids stay in int32.
ONE_GRAMMAR_REFUSED = [
    ("gpu:1_000", "'1_000' is not an accelerator id"),
    ("gpu:\uff14", "is not an accelerator id"),        # FULLWIDTH DIGIT FOUR
    ("gpu:\u0663", "is not an accelerator id"),        # ARABIC-INDIC DIGIT THREE
    ("gpu:3\u00a0", "is not an accelerator id"),       # NO-BREAK SPACE, stripped by str.strip
    ("gpu:\n3", "is not an accelerator id"),
    ("gpu:\v3", "is not an accelerator id"),
    ("gpu:4294967296", "'4294967296' is out of range"),
    ("gpu:2147483648", "'2147483648' is out of range"),
    ("gpu:-2147483649", "'-2147483649' is out of range"),
    ("gpu:" + "9" * 4000, "is out of range"),
    ("gpu:" + "9" * 5000, "is out of range"),
]


@pytest.mark.parametrize("text,message", ONE_GRAMMAR_REFUSED, ids=lambda v: repr(v)[:30])
def test_from_cli_one_grammar_refuses(text, message):
    with pytest.raises(ValueError, match=message):
        calculate_virtual_device_count_from_cli(text)
    with pytest.raises(InvalidArgumentError, match=message):
        _core._calculate_virtual_device_count_from_cli([text])
    # The spec grammar reads ids alike (it has no sign).
    with pytest.raises(ValueError, match=message.replace("-", "")):
        _core._device_spec_parse(text.replace("-", ""))


def test_from_cli_int32_edges_and_nul():
    assert calculate_virtual_device_count_from_cli("gpu:2147483647") == 2**31
    assert calculate_virtual_device_count_from_cli("gpu:0000000000007") == 8
    assert calculate_virtual_device_count_from_cli("gpu:-2147483648") == 1
    assert _core._device_spec_parse("gpu:2147483647") == [(True, 2**31 - 1)]
    with pytest.raises(ValueError, match="embedded null"):
        calculate_virtual_device_count_from_cli("gpu:1\x002")


def test_from_cli_lists_take_ints_only():
    np = pytest.importorskip("numpy")
    assert calculate_virtual_device_count_from_cli([np.int64(3), 1]) == 4
    assert calculate_virtual_device_count_from_cli([-1]) == 1
    for bad in ([1.0], [2, 3.5], ["3"], [None], [[1]]):
        with pytest.raises(TypeError, match="is not an accelerator id .expected an int"):
            calculate_virtual_device_count_from_cli(bad)
    for bad in ([True], [1, False]):
        with pytest.raises(TypeError, match="is a bool"):
            calculate_virtual_device_count_from_cli(bad)
    with pytest.raises(ValueError, match=r"device list \[4294967296\].*'4294967296' is out of range"):
        calculate_virtual_device_count_from_cli([2**32])
    with pytest.raises(ValueError, match="out of range"):
        calculate_virtual_device_count_from_cli([0, -(2**31) - 1])


def test_device_spec_grammar_in_core():
    assert _core._device_spec_parse("cpu") == [(False, -1)]
    assert _core._device_spec_parse("gpu:0,1") == [(True, 0), (True, 1)]
    with pytest.raises(ValueError):
        _core._device_spec_parse("gpu:x")


# ------------------------------------------------------ virtual-device mode

def test_virtual_settings_round_trip():
    # Settings are process-wide; every value set here is restored.
    assert driver.get_virtual_device_count() == 0
    assert driver.is_virtual_device_mode() is False
    old_api, old_arch = driver.get_virtual_device_api(), driver.get_virtual_device_target_arch()
    try:
        driver.set_virtual_device_api("cuda")
        driver.set_virtual_device_target_arch("sm_80")
        assert driver.get_virtual_device_api() == "cuda"
        assert driver.get_virtual_device_target_arch() == "sm_80"
    finally:
        driver.set_virtual_device_api(old_api)
        driver.set_virtual_device_target_arch(old_arch)
    assert driver.get_virtual_device_api() == old_api
    with pytest.raises(ValueError):
        driver.set_virtual_device_api("no spaces allowed")


def test_virtual_cpu_target_round_trip():
    assert driver.get_virtual_cpu_target() == ""
    try:
        driver.set_virtual_cpu_target("x86-64-v3")
        assert driver.get_virtual_cpu_target() == "x86-64-v3"
        driver.set_virtual_cpu_target("generic")
        assert driver.get_virtual_cpu_target() == "generic"
        with pytest.raises(ValueError, match="native"):
            driver.set_virtual_cpu_target("native")
        assert driver.get_virtual_cpu_target() == "generic"
    finally:
        driver.set_virtual_cpu_target("")
    assert driver.get_virtual_cpu_target() == ""


@pytest.mark.parametrize("count", [-1, 1025])
def test_virtual_device_count_out_of_range(count):
    with pytest.raises(InvalidArgumentError, match="expected 0 \\(off\\) to 1024"):
        driver.set_virtual_device_count(count)
    assert driver.get_virtual_device_count() == 0


def test_virtual_device_count_zero_is_always_fine():
    driver.set_virtual_device_count(0)
    assert not driver.is_virtual_device_mode()


@needs_virtual
def test_virtual_device_mode_recipe():
    """MAX's tested recipe: api cuda, arch sm_80, count 2."""
    run_py("""
        from axl import driver
        from axl.driver import Accelerator, CPU
        before = driver.accelerator_count()
        driver.set_virtual_device_api("cuda")
        driver.set_virtual_device_target_arch("sm_80")
        driver.set_virtual_device_count(2)
        assert driver.is_virtual_device_mode() and driver.get_virtual_device_count() == 2
        assert driver.accelerator_count() == 2
        a0, a1 = Accelerator(0), Accelerator(1)
        assert a0.api == "cuda" and a0.architecture_name == "sm_80", (a0.api, a0.architecture_name)
        assert a1.id == 1
        assert driver.accelerator_api() == "cuda"
        assert driver.accelerator_architecture_name() == "sm_80"
        assert driver.scan_available_devices() == [driver.DeviceSpec.accelerator(0), driver.DeviceSpec.accelerator(1)]
        driver.set_virtual_device_count(0)
        assert not driver.is_virtual_device_mode()
        assert driver.accelerator_count() == before
        assert CPU().is_host
        print("ok")
    """)


def test_virtual_device_mode_without_plugin():
    p = run_py("""
        from axl import driver
        try:
            driver.set_virtual_device_count(2)
        except driver.BackendUnavailableError as e:
            print("unavailable:", e)
        else:
            raise SystemExit("no error")
        assert not driver.is_virtual_device_mode()
    """, env={"AXL_PLUGINS_DISABLE": "virtual"})
    assert "virtual" in p.stdout and "unavailable:" in p.stdout
    assert issubclass(BackendUnavailableError, RuntimeError)


def test_cpu_still_there(cpu):
    assert CPU() is cpu


def test_no_cpu_device_names_the_reason(tmp_path):
    # AXL_PLUGINS_DISABLE=cpu: the error said to look for the plugin file,
    # while the variable was the cause.
    p = run_py("""
        from axl.driver import CPU
        try:
            CPU()
        except ValueError as e:
            print("ERR", e)
    """, env={"AXL_PLUGINS_DISABLE": "cpu"})
    assert "ERR no CPU device" in p.stdout and "AXL_PLUGINS_DISABLE" in p.stdout, p.stdout


def test_unsearchable_plugin_folder_is_warned_about(tmp_path):
    missing = tmp_path / "no-such-folder"
    afile = tmp_path / "a-file"
    afile.write_text("x")
    p = run_py("import axl.driver as d; d.accelerator_count()",
               env={"AXL_PLUGIN_PATH": f"{missing}:{afile}"})
    assert f"cannot search folder '{missing}' in AXL_PLUGIN_PATH: No such file or directory" in p.stderr, p.stderr
    assert f"cannot search folder '{afile}' in AXL_PLUGIN_PATH: Not a directory" in p.stderr, p.stderr


def test_log_file_in_a_missing_folder_is_not_created(tmp_path):
    target = tmp_path / "missing" / "x.log"
    p = run_py("import axl.driver as d; d.accelerator_count()",
               env={"AXL_LOG_FILE": str(target), "AXL_PLUGIN_PATH": str(tmp_path / "nope")})
    assert not (tmp_path / "missing").exists()
    assert f"cannot open AXL_LOG_FILE '{target}': No such file or directory; logging to stderr" in p.stderr, p.stderr
    # and the warnings it would have hidden reach stderr
    assert "cannot search folder" in p.stderr
