"""Buffer's memory model (spec sections 4.1-4.4 and 4.6, with axl's
documented improvements): construction, properties, indexing and views,
reinterpreting views, contiguous(), copy(), to(), inplace_copy_from
(non-contiguous endpoints included), zeros, scalar, item, str and repr.

Most tests take a device and run on CPU() in this process and on each kind
of accelerator (conftest.ACCELERATOR_KINDS: the virtual backend, and PoCL's
OpenCL device where installed; device memory the host cannot read) in one
child interpreter per test module and kind, see ``on_devices``. test_buffer_interop,
test_buffer_hazards and test_buffer_random import that harness from here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from axl.driver import CPU, Buffer, DeviceQueue
from axl.dtype import DType

from conftest import ACCELERATOR_KINDS, VIRTUAL, AcceleratorKind, skip_unless_available

# ------------------------------------------------------------------ harness

# (test module stem, kind name, child environment) -> (folder, names of the bodies)
_REGISTRY: dict[tuple, tuple[str, list[str]]] = {}
# same key -> {name: None (passed) | "SKIP reason" | traceback}
_VIRTUAL_RESULTS: dict[tuple, dict[str, str | None]] = {}
_VIRTUAL_FAILURE: dict[tuple, str] = {}

_CHILD = """
import faulthandler, importlib, json, sys, traceback
# Discovery reads AXL_VIRTUAL_* and AXL_OPENCL_* now, before the test module
# imports conftest (which clears those variables).
{pick}
sys.path.insert(0, {folder!r})
module = importlib.import_module({module!r})
import pytest
for name in {names!r}:
    faulthandler.dump_traceback_later({per_case}, exit=True)  # a hang ends the child, visibly
    try:
        getattr(module, name).body(dev)
        outcome = None
    except pytest.skip.Exception as e:
        outcome = "SKIP " + str(e)
    except BaseException:
        outcome = traceback.format_exc()
    faulthandler.cancel_dump_traceback_later()
    print("@@CASE " + json.dumps([name, outcome]), flush=True)
"""


def run_child(code: str, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    """Runs ``code`` in a fresh interpreter whose AXL_* environment is ``env``
    (conftest.run_py without failing on a non-zero exit, keeping the output
    of a child that timed out)."""
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("AXL_")}
    child_env.update(env)
    try:
        return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=child_env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        def text(b):
            return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
        return subprocess.CompletedProcess(e.cmd, -9, text(e.stdout), text(e.stderr) + f"\n[timed out after {timeout}s]")


def _child_outcome(key: tuple, name: str) -> None:
    kind = _KINDS[key[1]]
    skip_unless_available(kind)
    if key not in _VIRTUAL_RESULTS:
        folder, names = _REGISTRY[key]
        code = _CHILD.format(pick=kind.pick_code("dev"), folder=folder, module=key[0], names=names, per_case=120)
        p = run_child(code, dict(key[2]), timeout=900)
        results = {}
        for line in p.stdout.splitlines():
            if line.startswith("@@CASE "):
                n, outcome = json.loads(line[len("@@CASE "):])
                results[n] = outcome
        _VIRTUAL_RESULTS[key] = results
        _VIRTUAL_FAILURE[key] = (f"child ({dict(key[2])}) exited {p.returncode}\n--- stdout\n{p.stdout[-4000:]}"
                                 f"\n--- stderr\n{p.stderr[-8000:]}")
    results = _VIRTUAL_RESULTS[key]
    if name not in results:
        pytest.fail(f"{name} did not report from the {kind.name} child\n{_VIRTUAL_FAILURE[key]}")
    outcome = results[name]
    if outcome is None:
        return
    if outcome.startswith("SKIP "):
        pytest.skip(outcome[5:])
    pytest.fail(f"on the {kind.name} device ({dict(key[2])}):\n{outcome}", pytrace=False)


_KINDS = {k.name: k for k in ACCELERATOR_KINDS}


def _register(fn: Callable, env: dict[str, str], kind: AcceleratorKind = VIRTUAL) -> tuple:
    path = Path(fn.__globals__["__file__"]).resolve()
    key = (path.stem, kind.name, tuple(sorted({**kind.env, **env}.items())))
    _REGISTRY.setdefault(key, (str(path.parent), []))[1].append(fn.__name__)
    return key


def _named_like(test: Callable, fn: Callable) -> Callable:
    test.__name__ = test.__qualname__ = fn.__name__
    test.__doc__ = fn.__doc__
    test.__module__ = fn.__module__
    test.body = fn  # what the child calls
    return test


def on_devices(fn: Callable) -> Callable:
    """Makes ``fn(device)`` a test parametrized ``[cpu]`` (runs here on CPU())
    and one id per accelerator kind, ``[virtual]``, ``[opencl]`` (each runs
    on that accelerator in a child interpreter; one child per module and
    kind runs every such body, then each test reports its own outcome; a
    kind this machine lacks skips, saying why)."""
    keys = {k.name: _register(fn, {}, k) for k in ACCELERATOR_KINDS}

    def test(where):
        if where == "cpu":
            fn(CPU())
        else:
            _child_outcome(keys[where], fn.__name__)

    return pytest.mark.parametrize("where", ["cpu", *keys])(_named_like(test, fn))


def on_accelerators(**virtual_env: str) -> Callable[[Callable], Callable]:
    """Makes ``fn(device)`` a test parametrized over the accelerator kinds
    only (``[virtual]``, ``[opencl]``), for what the host CPU cannot show
    (device memory, staging); ``virtual_env`` is added to the virtual
    child's environment only (e.g. ``AXL_VIRTUAL_LATENCY_US``, which makes
    an order bug visible there; a real device needs no such help)."""
    def deco(fn: Callable) -> Callable:
        keys = {k.name: _register(fn, virtual_env if k is VIRTUAL else {}, k) for k in ACCELERATOR_KINDS}

        def test(where):
            _child_outcome(keys[where], fn.__name__)

        return pytest.mark.parametrize("where", list(keys))(_named_like(test, fn))
    return deco


def on_virtual(**env: str) -> Callable[[Callable], Callable]:
    """Makes ``fn(device)`` a test that runs only on a virtual accelerator,
    in a child whose environment also has ``env`` (e.g.
    ``AXL_VIRTUAL_LATENCY_US`` where the test depends on latency, or
    ``AXL_VIRTUAL_FAIL``); bodies with the same env share a child."""
    def deco(fn: Callable) -> Callable:
        key = _register(fn, env)

        def test():
            _child_outcome(key, fn.__name__)

        return _named_like(test, fn)
    return deco


# ------------------------------------------------------------------ helpers

NUMPY_DTYPES = [DType.bool, DType.int8, DType.uint8, DType.int16, DType.uint16, DType.int32, DType.uint32,
                DType.int64, DType.uint64, DType.float16, DType.float32, DType.float64]


def put(arr, device) -> Buffer:
    """A buffer on ``device`` holding a private copy of ``arr``."""
    b = Buffer.from_numpy(np.array(arr, copy=True))
    return b if device.is_host else b.to(device)


def read(buf: Buffer) -> np.ndarray:
    """The buffer's values as a numpy array of its own (never an alias)."""
    return np.array(buf.to_numpy(), copy=True)


def same(buf: Buffer, want: np.ndarray) -> None:
    got = read(buf)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)


def c_strides(shape) -> tuple[int, ...]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return tuple(reversed(out))


# --------------------------------------------------------------- construction

@on_devices
def test_constructor_overloads(dev):
    a = Buffer(DType.float32, (3, 4), dev)
    assert a.device is dev and a.shape == (3, 4) and a.dtype is DType.float32
    k = Buffer(dtype=DType.int16, shape=[5], device=dev)
    assert k.device is dev and k.shape == (5,) and k.dtype is DType.int16
    q = DeviceQueue(dev)
    s = Buffer(DType.uint8, (2, 2), q)  # overload B: allocates on the queue's device, bound to it
    assert s.device is dev and s.stream == q
    s2 = Buffer(dtype=DType.uint8, shape=(2,), stream=q)
    assert s2.stream == q and s2.device is dev
    assert Buffer(DType.int8, [4]).device is CPU()  # device=None is the CPU
    shape = [2, 3]
    b = Buffer(DType.int32, shape, dev)
    shape[0] = 7  # the buffer copied the list
    assert b.shape == (2, 3)
    q.synchronize()


@on_devices
def test_constructor_from_ndarray(dev):
    """Overload C of MAX's stub, ``__init__(self, shape: ndarray, device)``:
    a buffer on `device` with a copy of the array (read-only arrays
    included), by keyword and positionally."""
    src = np.arange(6, dtype=np.int16).reshape(2, 3)
    src.flags.writeable = False
    for b in (Buffer(shape=src, device=dev), Buffer(src, dev)):
        assert b.device is dev and b.dtype is DType.int16 and b.shape == (2, 3)
        same(b, src)
        b[0, 0] = 9
        assert src[0, 0] == 0


@on_devices
def test_every_dtype_is_allocatable(dev):
    for dt in DType:
        b = Buffer(dt, [2], dev)
        assert b.dtype is dt and b.shape == (2,) and b.num_elements == 2, dt
        try:
            np_type = dt.to_numpy()
        except ValueError:
            continue  # no numpy equivalent (bfloat16 without ml_dtypes, float4/6)
        assert b.element_size == np.dtype(np_type).itemsize, dt
    assert Buffer(DType.bool, [2], dev).element_size == 1


@on_devices
def test_rank0_and_zero_extent(dev):
    s = Buffer(DType.int32, (), dev)
    assert s.shape == () and s.rank == 0 and s.num_elements == 1 and s.strides == ()
    for shape in [(0,), (2, 0, 3), (0, 0)]:
        e = Buffer(DType.float32, shape, dev)
        assert e.shape == shape and e.num_elements == 0 and e.rank == len(shape)
        assert read(e).shape == shape
        z = Buffer.zeros(shape, DType.float32, dev)
        assert read(z).shape == shape


@on_devices
def test_properties(dev):
    from axl.driver import Usage

    b = Buffer(DType.int32, (2, 3, 4), dev)
    assert b.device is dev
    assert b.stream == dev.default_queue
    assert b.dtype is DType.int32 and b.element_size == 4
    assert b.shape == (2, 3, 4) and b.rank == 3 and b.num_elements == 24
    assert b.strides == (12, 4, 1)
    assert b.is_contiguous
    assert b.is_host is dev.is_host
    assert b.pinned is False
    assert b.usage == Usage.DEFAULT
    if dev.is_host:
        assert b._host_hazard_tracked is True  # axl tracks host memory unless UNTRACKED
    assert Buffer(DType.float64, (7,), dev).element_size == 8
    assert Buffer(DType.bool, (7,), dev).element_size == 1


def test_strides_and_contiguity_of_slices():
    """Spec 4.2's cases: slices keep the parent's strides (in elements)."""
    b = Buffer(DType.uint8, [8, 10])
    s = b[:, :6]
    assert s.shape == (8, 6) and s.strides == (10, 1) and not s.is_contiguous
    g = Buffer(DType.float32, (3, 3))
    assert not g[:2, :2].is_contiguous
    assert g[0, :].is_contiguous
    assert Buffer(DType.int32, (5, 3))[2:4, :].is_contiguous
    assert Buffer(DType.int32, (9,))[2:5].is_contiguous
    r = Buffer(DType.int32, (9,))[::-1]
    assert not r.is_contiguous and r.strides == (-1,)
    assert Buffer(DType.int32, (4, 6))[::2, 1].strides == (12,)
    assert Buffer(DType.int32, (4, 6))[::-2, ::3].strides == (-12, 3)
    assert Buffer(DType.int16, (4, 6))[1:3, ::2].is_contiguous is False


def test_repr():
    b = Buffer(DType.float32, (3, 4))
    assert repr(b).startswith("axl.driver.Buffer(DType.float32, (3, 4)")
    assert repr(Buffer(DType.int8, (5,))).startswith("axl.driver.Buffer(DType.int8, (5,)")
    assert repr(Buffer(DType.int8, ())).startswith("axl.driver.Buffer(DType.int8, ()")


# ------------------------------------------------------------------ indexing

@on_devices
def test_getitem_ints_negatives_slices_and_steps(dev):
    ref = np.arange(60, dtype=np.int32).reshape(3, 4, 5)
    b = put(ref, dev)
    cases = [
        (slice(None), 1, slice(None)),
        (slice(0, 3, 2), slice(None, None, -1), slice(1, -1)),
        (slice(-2, None), slice(-100, 100, 3), -1),
        (slice(None, None, -2), slice(3, 0, -1), slice(4, None, -3)),
        (-1, slice(None), slice(None, None, 2)),
        (1, -4, slice(None, None, -1)),
        (slice(None), slice(None), slice(None)),
    ]
    for idx in cases:
        v = b[idx]
        want = ref[idx + (Ellipsis,)]
        assert v.shape == want.shape, idx
        assert v.device is dev
        same(v, want)
    for idx in [(1, 2, 3), (-1, -4, -5), (0, 3, -1)]:
        s = b[idx]
        assert s.shape == () and s.rank == 0
        assert s.item() == ref[idx] and type(s.item()) is int
    assert b[(2, 3, 4)].item() == 59  # a tuple object is an index too


@on_devices
def test_out_of_range_slices_give_zero_extents(dev):
    t = put(np.arange(27, dtype=np.float32).reshape(3, 3, 3), dev)
    z = t[4:, :2, 8:10:-1]
    assert z.shape == (0, 2, 0) and z.num_elements == 0
    assert read(z).shape == (0, 2, 0)
    assert t[5:9, 0, 0].shape == (0,)
    assert t[2:1, :, -10:-20].shape == (0, 3, 0)


@on_devices
def test_index_errors(dev):
    t = put(np.arange(27, dtype=np.int64).reshape(3, 3, 3), dev)
    for idx in [(3, 0, 0), (-4, 0, 0), (0, 0, 3)]:
        with pytest.raises(IndexError):
            t[idx]
    with pytest.raises(IndexError):
        t[4:, :2, 4]  # out of range even next to slices
    with pytest.raises(ValueError):
        t[::0, 0, 0]
    # __setitem__: one element, a full integer index
    with pytest.raises(ValueError):
        t[2, 2] = 1
    with pytest.raises(ValueError):
        t[2, 2, 2, 2] = 1
    with pytest.raises(ValueError):
        t[:, 0, 0] = 1
    with pytest.raises(IndexError):
        t[3, 0, 0] = 1
    with pytest.raises(IndexError):
        t[0, -4, 0] = 1


@on_devices
def test_setitem_values_and_negative_indices(dev):
    ref = np.zeros((2, 3, 4), dtype=np.float64)
    b = put(ref, dev)
    b[0, 0, 0] = 1.5
    b[-1, -1, -1] = -2
    b[1, -3, 2] = np.float32(0.25)
    b[0, 2, -4] = True
    ref[0, 0, 0], ref[-1, -1, -1], ref[1, -3, 2], ref[0, 2, -4] = 1.5, -2, 0.25, 1
    same(b, ref)
    i = put(np.zeros(3, np.int32), dev)
    i[1] = 7
    i[-1] = np.int64(-9)
    same(i, np.array([0, 7, -9], np.int32))
    f = put(np.zeros(2, np.bool_), dev)
    f[1] = True
    assert f[1].item() is True and f[0].item() is False


@on_devices
def test_rank0_setitem_quirk(dev):
    s = Buffer.zeros((), DType.int32, dev)
    s[0] = 5  # MAX: a rank-0 buffer accepts [0]
    assert s.item() == 5


@on_devices
def test_setitem_with_one_index_per_dimension_at_every_rank(dev):
    # `buf[tuple(0 for _ in shape)] = v`: at rank 0 that tuple is (), which
    # numpy and MAX accept as the element's index.
    for shape in [(), (1,), (1, 1), (1, 1, 1)]:
        b = Buffer.zeros(shape, DType.float32, dev)
        b[tuple(0 for _ in shape)] = 2.5
        assert b.item() == 2.5, shape
    with pytest.raises(ValueError, match="give 1 integer"):
        Buffer.zeros((1,), DType.float32, dev)[()] = 1  # () picks no element of a rank-1 buffer


@on_devices
def test_views_alias_both_ways(dev):
    ref = np.arange(60, dtype=np.int32).reshape(3, 4, 5)
    b = put(ref, dev)
    v = b[1, :, ::2]
    assert v.shape == (4, 3) and v.strides == (5, 2)
    v[0, 1] = 1000  # view -> parent
    ref[1, 0, 2] = 1000
    b[1, 3, 4] = -5  # parent -> view
    ref[1, 3, 4] = -5
    assert v[3, 2].item() == -5
    same(b, ref)
    same(v, ref[1, :, ::2])


@on_devices
def test_slices_of_slices(dev):
    ref = np.arange(120, dtype=np.int64).reshape(4, 5, 6)
    b = put(ref, dev)
    s1 = b[::-1, 1:, ::2]
    r1 = ref[::-1, 1:, ::2]
    s2 = s1[1:, ::-2, 1]
    r2 = r1[1:, ::-2, 1]
    assert s2.shape == r2.shape == (3, 2)
    same(s2, r2)
    s3 = s2[::-1, -1:]
    r3 = r2[::-1, -1:]
    same(s3, r3)
    s2[0, 1] = 1234
    r2[0, 1] = 1234  # writes through r1 into ref
    same(b, ref)
    same(s3, r3)


# --------------------------------------------------------------------- view

VIEW_ERROR = ("When changing to a larger dtype, its size must be a divisor of the total size in bytes "
              "of the last axis of the array.")


@on_devices
def test_view_deduces_the_last_axis(dev):
    raw = np.arange(8, dtype=np.int8).reshape(2, 4)
    b = put(raw, dev)
    v = b.view(DType.int16)
    assert v.dtype is DType.int16 and v.shape == (2, 2)
    same(v, raw.view(np.int16))
    w = put(np.arange(5, dtype=np.int32), dev).view(DType.uint8)
    assert w.shape == (20,)
    same(w, np.arange(5, dtype=np.int32).view(np.uint8))
    with pytest.raises(ValueError, match=re.escape(VIEW_ERROR)):
        put(np.zeros((2, 3), np.int8), dev).view(DType.int16)


@on_devices
def test_view_of_empty_buffers(dev):
    """Zero elements: MAX's rule (last axis bytes divisible by the new size)
    holds with 0 bytes, as in numpy: the last axis stays 0."""
    for shape in [(3, 0), (0, 2, 0), (2, 0)]:
        for src_dt, dst_dt in [(DType.bool, DType.int32), (DType.float32, DType.float64), (DType.uint16, DType.int8)]:
            e = Buffer(src_dt, shape, dev)
            v = e.view(dst_dt)
            assert v.shape == np.zeros(shape, src_dt.to_numpy()).view(dst_dt.to_numpy()).shape, (shape, src_dt, dst_dt)
            assert v.num_elements == 0


@on_devices
def test_view_explicit_shape(dev):
    src = np.arange(6, dtype=np.int32).reshape(2, 3)
    b = put(src, dev)
    v = b.view(DType.uint8, (4, 6))
    assert v.shape == (4, 6)
    same(v, src.view(np.uint8).reshape(4, 6))
    same(b.view(DType.float32, [6]), src.reshape(6).view(np.float32))
    with pytest.raises((ValueError, RuntimeError)):
        b.view(DType.int32, (7,))  # 28 bytes from 24
    with pytest.raises((ValueError, RuntimeError)):
        b.view(DType.uint8, (25,))


@on_devices
def test_view_of_unaligned_slice(dev):
    b = put(np.arange(8, dtype=np.uint8), dev)
    part = b[3:7]
    v = part.view(DType.int16, (2,))
    assert v.shape == (2,)
    assert [v[0].item(), v[1].item()] == [0x0403, 0x0605]
    assert part.view(DType.int16).shape == (2,)
    same(part.view(DType.int16), np.array([0x0403, 0x0605], dtype=np.int16))
    c = v.copy()  # an unaligned view copies into an aligned contiguous buffer
    assert c.is_contiguous
    same(c, np.array([0x0403, 0x0605], dtype=np.int16))


@on_devices
def test_view_aliases_both_ways(dev):
    b = put(np.zeros(4, np.int32), dev)
    v = b.view(DType.uint8)
    v[0] = 1
    assert b[0].item() == 1
    b[1] = 0x01020304
    assert [v[i].item() for i in range(4, 8)] == [4, 3, 2, 1]
    # a slice of a reinterpreting view computes its byte offset in the view's dtype
    u = put(np.zeros(8, np.uint8), dev)
    h = u.view(DType.int16)
    h[1:3].inplace_copy_from(put(np.array([0x1111, 0x2222], np.int16), dev))
    same(u, np.array([0, 0, 0x11, 0x11, 0x22, 0x22, 0, 0], np.uint8))


# --------------------------------------------------------- contiguous, copies

@on_devices
def test_contiguous_stays_on_the_device(dev):
    """axl's improvement over MAX (whose contiguous() lands on the CPU)."""
    ref = np.arange(48, dtype=np.float32).reshape(6, 8)
    b = put(ref, dev)
    for idx in [(slice(None), slice(None, None, 2)), (slice(None, None, -1), slice(1, 7, 3)), (slice(1, 3), 2)]:
        v = b[idx]
        c = v.contiguous()
        assert c.device is dev and c.is_contiguous and c.shape == ref[idx].shape
        same(c, ref[idx])
        if c.num_elements:
            c[(0,) * c.rank] = -1  # independent of the source
    same(b, ref)
    same(b.contiguous(), ref)


@on_devices
def test_copy(dev):
    ref = np.arange(12, dtype=np.int32).reshape(3, 4)
    b = put(ref, dev)
    c = b.copy()
    assert c is not b and c.device is dev and c._data_ptr() != b._data_ptr()
    same(c, ref)
    c[0, 0] = 100
    same(b, ref)
    for target in {dev, CPU()}:
        t = b.copy(target)
        assert t.device is target
        same(t, ref)
        t2 = b.copy(device=target)
        assert t2.device is target
    q = DeviceQueue(dev)
    cq = b.copy(q)
    assert cq.stream == q and cq.device is dev
    same(cq, ref)
    cq2 = b.copy(stream=q)
    assert cq2.stream == q
    strided = b[::-1, ::2].copy()
    assert strided.is_contiguous and strided.shape == (3, 2)
    same(strided, ref[::-1, ::2])
    host = put(ref, CPU())
    d = host.copy(dev)
    assert d.device is dev
    same(d, ref)


@on_devices
def test_to_identity_and_moves(dev):
    ref = np.arange(6, dtype=np.float64)
    b = put(ref, dev)
    assert b.to(dev) is b
    assert b.to(b.stream) is b
    assert b.to(dev.default_queue) is b
    lst = b.to([dev])
    assert isinstance(lst, list) and lst[0] is b
    cpu = CPU()
    moved = b.to([dev, cpu])
    assert moved[0] is b and moved[1].device is cpu
    same(moved[1], ref)
    if not dev.is_host:
        assert b.to(cpu).device is cpu and b.to(cpu).pinned is False
        h = put(ref, cpu)
        d = h.to(dev)
        assert d is not h and d.device is dev
        same(d, ref)
    q2 = DeviceQueue(dev)
    m = b.to(q2)  # same device, other queue: a new object bound to q2, nothing copied
    assert m is not b and m.stream == q2 and m.device is dev
    assert m.shape == b.shape and m.dtype is b.dtype
    assert m._data_ptr() == b._data_ptr()
    same(m, ref)
    ms = b.to([q2, b.stream])
    assert ms[1] is b and ms[0].stream == q2


# --------------------------------------------------------- inplace_copy_from

@on_devices
def test_inplace_copy_from_contiguous(dev):
    src = put(np.arange(6, dtype=np.int32), dev)
    dst = Buffer(DType.int32, (2, 3), dev)  # shapes may differ, counts must match
    dst.inplace_copy_from(src)
    same(dst, np.arange(6, dtype=np.int32).reshape(2, 3))
    dst.inplace_copy_from(dst)  # self: no-op
    same(dst, np.arange(6, dtype=np.int32).reshape(2, 3))
    for other in {dev, CPU()}:
        d = Buffer(DType.int32, (6,), other)
        d.inplace_copy_from(src)
        same(d, np.arange(6, dtype=np.int32))
        src2 = put(np.arange(6, 12, dtype=np.int32), other)
        dst.inplace_copy_from(src2)
        same(dst, np.arange(6, 12, dtype=np.int32).reshape(2, 3))
    # contiguous slices as endpoints
    base = put(np.zeros((4, 2, 3), np.int32), dev)
    srcb = put(np.arange(24, dtype=np.int32).reshape(4, 2, 3), dev)
    base[1, :, :].inplace_copy_from(srcb[3, :, :])
    want = np.zeros((4, 2, 3), np.int32)
    want[1] = np.arange(24, dtype=np.int32).reshape(4, 2, 3)[3]
    same(base, want)


@on_devices
def test_inplace_copy_from_errors_keep_max_texts(dev):
    a = Buffer(DType.float32, (4,), dev)
    with pytest.raises(ValueError, match="^Cannot copy buffers of different sizes$"):
        a.inplace_copy_from(Buffer(DType.float32, (5,), dev))
    with pytest.raises(ValueError, match="^Cannot copy buffers of different dtypes$"):
        a.inplace_copy_from(Buffer(DType.int32, (4,), dev))
    with pytest.raises(ValueError, match="^Cannot copy buffers of different sizes$"):
        a.inplace_copy_from(Buffer(DType.int8, (3,), dev))  # sizes are checked first
    with pytest.raises(ValueError, match="^Cannot copy buffers of different sizes$"):
        a[::2].inplace_copy_from(Buffer(DType.float32, (3,), CPU()))


def _copy_cases(dev):
    """(src device, dst device) pairs: within `dev` and across to the CPU."""
    cpu = CPU()
    return [(dev, dev), (cpu, dev), (dev, cpu)] if not dev.is_host else [(dev, dev)]


@on_devices
def test_inplace_copy_from_strided_to_contiguous(dev):
    ref = np.arange(48, dtype=np.int16).reshape(6, 8)
    for sdev, ddev in _copy_cases(dev):
        src = put(ref, sdev)
        for idx in [(slice(None), slice(None, None, 2)), (slice(1, None, 2), slice(None, None, -3)), (slice(None), 5)]:
            want = ref[idx]
            dst = Buffer(DType.int16, want.shape, ddev)
            dst.inplace_copy_from(src[idx])
            same(dst, want)
            flat = Buffer(DType.int16, (want.size,), ddev)  # element counts decide, not shapes
            flat.inplace_copy_from(src[idx])
            same(flat, want.reshape(-1))


@on_devices
def test_inplace_copy_from_contiguous_to_strided(dev):
    for sdev, ddev in _copy_cases(dev):
        base_ref = np.full((4, 6), -1, dtype=np.float32)
        base = put(base_ref, ddev)
        vals = np.arange(12, dtype=np.float32).reshape(4, 3)
        base[:, 1::2].inplace_copy_from(put(vals, sdev))
        base_ref[:, 1::2] = vals
        same(base, base_ref)  # the gaps are untouched
        base[::-1, 0].inplace_copy_from(put(np.array([10, 20, 30, 40], np.float32), sdev))
        base_ref[::-1, 0] = [10, 20, 30, 40]
        same(base, base_ref)


@on_devices
def test_inplace_copy_from_strided_to_strided(dev):
    src_ref = np.arange(5 * 7 * 3, dtype=np.int64).reshape(5, 7, 3)
    for sdev, ddev in _copy_cases(dev):
        src = put(src_ref, sdev)
        dst_ref = np.zeros((9, 4, 8), dtype=np.int64)
        dst = put(dst_ref, ddev)
        s_idx = (slice(1, 5), slice(None, None, -2), slice(0, 3, 2))      # (4, 4, 2)
        d_idx = (slice(None, None, -2), slice(None), slice(7, 2, -3))     # (5, 4, 2) -> use [1:]
        d_view = dst[d_idx][1:, :, :]
        dst_ref[d_idx][1:, :, :] = src_ref[s_idx]
        d_view.inplace_copy_from(src[s_idx])
        same(dst, dst_ref)
        # different shapes, same count: row-major order of each side
        d2_ref = np.zeros((8, 8), dtype=np.int64)
        d2 = put(d2_ref, ddev)
        d2[::2, ::-1].inplace_copy_from(src[s_idx])  # (4, 8) <- (4, 4, 2)
        d2_ref[::2, ::-1] = src_ref[s_idx].reshape(4, 8)
        same(d2, d2_ref)


# ------------------------------------------------------- zeros, scalar, item

@on_devices
def test_zeros(dev):
    from axl.driver import Usage

    z = Buffer.zeros((2, 3), DType.float32, dev)
    assert z.device is dev and z.shape == (2, 3) and z.dtype is DType.float32
    same(z, np.zeros((2, 3), np.float32))
    z2 = Buffer.zeros([4], DType.int64, device=dev, usage=Usage.DEFAULT)
    same(z2, np.zeros(4, np.int64))
    assert Buffer.zeros((), DType.uint8, dev).item() == 0


@on_devices
def test_scalar(dev):
    s = Buffer.scalar(3.5, DType.float32)
    assert s.shape == () and s.device is CPU() and s.item() == 3.5
    d = Buffer.scalar(-7, DType.int64, dev)
    assert d.device is dev and d.shape == () and d.item() == -7
    t = Buffer.scalar(True, DType.bool, dev)
    assert t.item() is True
    assert type(Buffer.scalar(2, DType.float64, dev).item()) is float


@on_devices
def test_item(dev):
    for shape in [(), (1,), (1, 1), (1, 1, 1)]:
        b = put(np.full(shape, 42, dtype=np.uint16), dev)
        assert b.item() == 42 and type(b.item()) is int
    f = put(np.array([[2.5]], dtype=np.float16), dev)
    assert f.item() == 2.5 and type(f.item()) is float
    with pytest.raises(ValueError, match=re.escape("calling `item` on a tensor with 6 items but expected only 1")):
        Buffer(DType.int32, (2, 3), dev).item()
    with pytest.raises(ValueError, match=re.escape("calling `item` on a tensor with 0 items but expected only 1")):
        Buffer(DType.int32, (0,), dev).item()


# ---------------------------------------------------------------- __str__

@on_devices
def test_str_of_numpy_types(dev):
    b = put(np.array([1, 2, 3], np.int32), dev)
    s = str(b)
    assert s.startswith("Buffer([1 2 3]"), s
    assert "dtype=DType.int32" in s and "shape=(3,)" in s and f"device={dev}" in s, s
    assert s.endswith(")")
    big = Buffer.zeros((2000,), DType.float32, dev)
    assert "..." in str(big)  # numpy's summarization
    assert "7" in str(Buffer.scalar(7, DType.int8, dev))


@on_devices
def test_bfloat16_rounds_to_nearest_even(dev):
    """axl's documented difference: MAX truncates bfloat16 writes."""
    b = Buffer(DType.bfloat16, (4,), dev)
    b[0] = 1 + 2**-8 + 2**-10  # above the half-way point: rounds up (truncation gives 1.0)
    b[1] = 1 + 2**-8  # a tie: to the even neighbour, 1.0
    b[2] = 1 + 3 * 2**-8  # a tie: to the even neighbour, 1 + 2**-6
    b[3] = -(1 + 2**-7)  # exact
    assert [b[i].item() for i in range(4)] == [1 + 2**-7, 1.0, 1 + 2**-6, -(1 + 2**-7)]


@on_devices
def test_str_decodes_bfloat16_and_float8(dev):
    vals = [1.5, -2.0, 3.0]
    missing = [n for n in ("bfloat16", "float8_e4m3fn", "float8_e5m2") if not hasattr(DType, n)]
    for name, raw_bits in [("bfloat16", "16320"), ("float8_e4m3fn", "60"), ("float8_e5m2", "62")]:
        if name in missing:
            continue
        dt = getattr(DType, name)
        b = Buffer(dt, (3,), dev)
        for i, v in enumerate(vals):
            b[i] = v
        assert [b[i].item() for i in range(3)] == vals, dt
        assert type(b[0].item()) is float
        s = str(b)
        assert "1.5" in s and "-2." in s and "3." in s, (dt, s)
        assert raw_bits not in s, (dt, s)  # numbers, not the stored bits
        assert f"dtype={dt}" in s, s
        r = Buffer(dt, (), dev)
        r[0] = 1.5
        assert "1.5" in str(r)
    assert not missing, f"DType lacks MAX's members {missing}"


def test_rank0_setitem_takes_only_the_one_element():
    # [()] and [0] (or [-1]) name the element; any other integer wrote it too.
    from axl.driver import Buffer
    r = Buffer.from_numpy(np.array(1.0, np.float32))
    r[0] = 5.0
    assert r.item() == 5.0
    r[-1] = 6.0
    r[()] = 7.0
    assert r.item() == 7.0
    for bad in (7, -100, 1, (3,)):
        with pytest.raises(IndexError, match="out of range for a rank-0 buffer"):
            r[bad] = 9.0
    assert r.item() == 7.0
