"""Packaging: what `pip install .` must give (layout, stubs, python -m axl info)."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import axl
import axl.driver as driver
from axl import _core

from conftest import PACKAGE_DIR, PLUGIN_DIR, REPO

PY_DIR = Path(axl.__file__).resolve().parent


def test_version_and_abi():
    assert axl.__version__ == _core.__version__ == driver.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", axl.__version__)
    assert _core.abi_version() == (_core.ABI_MAJOR, _core.ABI_MINOR)


def test_wheel_layout():
    # The core, its plugins next to it, the example kernels and the typing files.
    assert list((PACKAGE_DIR / "lib").glob("libaxl.so*"))
    assert (PLUGIN_DIR / "libaxl_plugin_cpu.so").exists()
    # Python files: next to axl/__init__.py (the source folder in an
    # editable install, where binaries stay in site-packages).
    assert (PY_DIR / "py.typed").exists()
    assert (PY_DIR / "_core.pyi").exists()
    assert (PACKAGE_DIR / "kernels" / "libaxl_example_kernels.so").exists()


def test_extension_finds_core_through_its_own_rpath():
    out = subprocess.run(["readelf", "-d", _core.__file__], capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("readelf not available")
    assert "$ORIGIN/lib" in out.stdout


def test_installed_package_is_imported_not_the_source_tree():
    # run_tests.sh runs pytest outside the source tree; an editable install
    # legitimately maps axl to python/axl, so only the extension is checked.
    assert not str(PACKAGE_DIR).startswith(str(REPO / "python"))


def test_all_names_exist():
    for name in driver.__all__:
        assert hasattr(driver, name), name
    # MAX's __all__ (spec section 1), every name.
    for name in ["CPU", "Accelerator", "Buffer", "CompletionFlag", "DLPackArray", "Device", "DeviceEvent",
                 "DeviceQueue", "DeviceSpec", "HostHazardError", "LaunchTraceEntry", "SymmetricPool", "Usage",
                 "accelerator_api", "accelerator_architecture_name", "accelerator_count", "batch_inplace_copy",
                 "begin_launch_trace", "calculate_virtual_device_count", "calculate_virtual_device_count_from_cli",
                 "copy_pinned_to_destinations", "devices_exist", "load_max_buffer",
                 "enable_all_peer_access", "get_virtual_cpu_target", "get_virtual_device_api",
                 "get_virtual_device_count", "get_virtual_device_target_arch", "is_virtual_device_mode",
                 "launch_trace", "load_devices", "scan_available_devices", "set_virtual_cpu_target",
                 "set_virtual_device_api", "set_virtual_device_count", "set_virtual_device_target_arch",
                 "take_launch_trace"]:
        assert name in driver.__all__, name
    # As in MAX, load_device lives in the driver submodule only.
    assert "load_device" not in driver.__all__
    assert callable(driver.driver.load_device)


def test_core_stub_matches_extension():
    """Every public name of axl._core is in _core.pyi and the other way round."""
    tree = ast.parse((PY_DIR / "_core.pyi").read_text())
    stubbed = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            stubbed.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            stubbed.add(node.target.id)
    actual = {n for n in dir(_core) if not n.startswith("__") or n == "__version__"}
    assert actual - stubbed == set(), "missing from _core.pyi"
    assert stubbed - actual == set(), "in _core.pyi but not in the extension"


def _run_info(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "axl", "info", *args], capture_output=True)


def _mask_free(b: bytes) -> bytes:
    # Free memory is live; everything else must be byte-identical.
    b = re.sub(rb"(free memory\s+)\d+ bytes \([0-9.]+ GiB\)", rb"\1N", b)
    return re.sub(rb'("free_memory_bytes": )\d+', rb"\1N", b)


@pytest.mark.parametrize("args", [[], ["--json"], ["--verbose"], ["--json", "--verbose"]])
def test_python_m_axl_info_matches_axl_info(args):
    tool = PACKAGE_DIR / "bin" / "axl-info"
    if not tool.exists():
        pytest.skip("axl-info is not installed in the package")
    want = subprocess.run([str(tool), *args], capture_output=True)
    got = _run_info(args)
    assert got.returncode == want.returncode == 0
    assert _mask_free(got.stdout) == _mask_free(want.stdout)


def test_python_m_axl_info_json_is_valid():
    got = _run_info(["--json"])
    doc = json.loads(got.stdout)
    assert doc["core"]["version"] == axl.__version__
    names = [p["name"] for p in doc["plugins"]]
    assert "cpu" in names
    assert any(d["ok"] and d["label"] == "cpu" for d in doc["devices"])


def test_python_m_axl_usage():
    assert subprocess.run([sys.executable, "-m", "axl", "info", "--help"], capture_output=True).returncode == 0
    bad = subprocess.run([sys.executable, "-m", "axl", "info", "--nope"], capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown argument '--nope'" in bad.stderr
    bad = subprocess.run([sys.executable, "-m", "axl", "frobnicate"], capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown command" in bad.stderr


def test_info_reports_init_failure_like_axl_info(tmp_path):
    """AXL_PLUGINS naming a file that does not load: both print INIT FAILED, exit 1."""
    tool = PACKAGE_DIR / "bin" / "axl-info"
    if not tool.exists():
        pytest.skip("axl-info is not installed in the package")
    env = {"AXL_PLUGINS": str(tmp_path / "libaxl_plugin_missing.so"), "PATH": "/usr/bin:/bin"}
    want = subprocess.run([str(tool)], capture_output=True, env=env)
    got = subprocess.run([sys.executable, "-m", "axl", "info"], capture_output=True, env=env)
    assert want.returncode == got.returncode == 1
    assert b"INIT FAILED" in got.stdout
    assert got.stdout == want.stdout
