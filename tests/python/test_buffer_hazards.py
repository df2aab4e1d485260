"""Usage flags, staging and pinned memory, host hazard tracking and batched
copies (spec sections 3, 4.7, 5, 6 and 7, with axl's improvements).

axl differs from MAX in one documented way that these tests pin down: it
tracks host access for every buffer (MAX: only tracked staging memory on an
accelerator), unless the buffer has Usage.UNTRACKED. A host read waits for
the last device work that wrote the buffer, a host write also for the device
reads since, and nothing else: never for the whole device or queue.

Blocking is shown with gates (a queue waiting on a CompletionFlag that the
test opens later) and, on the virtual device, with simulated latency, under
which a reader that does not wait sees the old bytes on every run. The
hazard cases that need no latency also run on PoCL's OpenCL device
(``on_accelerators``). Every wait that could hang runs in a thread with a
timeout, so a bug fails.
"""

from __future__ import annotations

import enum
import re
import threading
import time

import numpy as np
import pytest

from axl.driver import (
    CPU,
    Buffer,
    CompletionFlag,
    DeviceQueue,
    HostHazardError,
    Usage,
    launch_trace,
)
from axl.dtype import DType

from test_buffer_model import on_accelerators, on_devices, on_virtual, put, read, same

LATENCY = {"AXL_VIRTUAL_LATENCY_US": "250000"}  # 0.25 s per copy and fill

# ------------------------------------------------------------------ helpers


def gate(queue: DeviceQueue) -> CompletionFlag:
    """Stalls ``queue`` until the returned flag is signalled with 1."""
    flag = CompletionFlag(queue.device)
    queue.wait_for_host_value(flag, 1)
    return flag


class Background:
    """Runs ``fn`` in a daemon thread and remembers its result or error."""

    def __init__(self, fn):
        self.value = None
        self.error = None

        def run():
            try:
                self.value = fn()
            except BaseException as e:  # reported by result()
                self.error = e

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def done_within(self, seconds: float) -> bool:
        self.thread.join(seconds)
        return not self.thread.is_alive()

    def result(self):
        assert self.done_within(20), "still blocked after its gate opened"
        if self.error is not None:
            raise self.error
        return self.value


def blocks_until_opened(fn, flag: CompletionFlag, hold: float = 0.3):
    """Asserts ``fn()`` is still waiting ``hold`` seconds in, opens the gate,
    and returns what ``fn`` returned."""
    bg = Background(fn)
    try:
        assert not bg.done_within(hold), "returned while the work it must wait for was gated"
    finally:
        flag.signal(1)
    return bg.result()


def returns_while_gated(fn, *flags: CompletionFlag, within: float = 10.0, open_after: bool = True):
    """Asserts ``fn()`` returns while the gates stay shut; opens them after
    (with ``open_after=False`` only when ``fn`` blocked, to free it)."""
    bg = Background(fn)
    finished = bg.done_within(within)
    if open_after or not finished:
        for f in flags:
            f.signal(1)
    assert finished, "waited for work it does not depend on"
    return bg.result()


# ------------------------------------------------------------------- Usage

def test_usage_flag_algebra():
    assert issubclass(Usage, enum.Flag)
    assert Usage.DEFAULT == Usage(0)
    assert (Usage.DEFAULT.value, Usage.STAGING.value, Usage.UNTRACKED.value) == (0, 1, 2)
    assert Usage.STAGING in (Usage.STAGING | Usage.DEFAULT)
    assert not (Usage.DEFAULT & Usage.STAGING)
    both = Usage.STAGING | Usage.UNTRACKED
    assert Usage.STAGING in both and Usage.UNTRACKED in both
    assert Usage.UNTRACKED not in Usage.STAGING


@on_devices
def test_default_usage_and_tracking_everywhere(dev):
    """Every way to get a buffer of host memory gives a tracked one (axl's
    improvement; MAX tracks staging memory only). Device memory the host
    never touches directly: its host reads are copies ordered behind the
    work that wrote it (test_device_buffer_written_on_another_queue)."""
    b = Buffer(DType.int32, (4, 4), dev)
    made = [b, b[1:, ::2], b.view(DType.uint8), Buffer.zeros((3,), DType.int8, dev), b.copy(), put([1, 2], dev),
            Buffer.scalar(1, DType.int32, dev), Buffer.from_dlpack(b)]
    if dev.is_host:
        made += [Buffer.from_numpy(np.zeros(3)), Buffer.from_dlpack(np.zeros(3))]
    for x in made:
        assert x.usage == Usage.DEFAULT
        if x.is_host:
            assert x._host_hazard_tracked is True


@on_devices
def test_untracked_buffers_and_their_views(dev):
    for usage in (Usage.UNTRACKED, Usage.STAGING | Usage.UNTRACKED):
        u = Buffer(DType.float32, (4, 4), dev, usage=usage)
        assert u.usage == usage
        for x in (u, u[::2, 1], u.view(DType.int32), u[1:, :][1:, ::-1]):
            assert x._host_hazard_tracked is False
            assert x.usage == usage  # slices and views report the parent's usage


def test_staging_on_the_cpu(cpu):
    s = Buffer(DType.int32, (3,), cpu, usage=Usage.STAGING)
    assert s.usage == Usage.STAGING and s.pinned is False and s.is_host and s.device is cpu
    assert s._host_hazard_tracked is True  # axl tracks it like any other buffer
    s[0] = 4
    assert s[0].item() == 4
    assert s[1:].usage == Usage.STAGING and s.view(DType.uint8).usage == Usage.STAGING
    z = Buffer.zeros((5,), DType.float32, cpu, usage=Usage.STAGING)
    assert z.usage == Usage.STAGING
    same(z, np.zeros(5, np.float32))  # the fill is waited for by the read


@on_accelerators()
def test_staging_on_an_accelerator(dev):
    for usage in (Usage.STAGING, Usage.STAGING | Usage.UNTRACKED):
        s = Buffer(DType.int16, (2, 4), dev, usage=usage)
        assert s.pinned is True and s.is_host is False and s.device is dev and s.usage == usage
        assert s._host_hazard_tracked is (usage == Usage.STAGING)
        a = s.to_numpy()  # zero copy
        assert a.ctypes.data == s._data_ptr() and not a.flags.owndata
        a[...] = np.arange(8).reshape(2, 4)
        assert s[1, 2].item() == 6
        for v in (s[:, 1:], s.view(DType.uint8)):
            assert v.usage == usage and v.pinned is True
            assert v._host_hazard_tracked is s._host_hazard_tracked
    z = Buffer.zeros((4,), DType.float64, dev, usage=Usage.STAGING)
    assert z.pinned
    same(z, np.zeros(4))
    # Moving staging memory to its own accelerator makes real device memory (GEX-2864).
    s = put(np.arange(5, dtype=np.int32), CPU())
    st = Buffer(DType.int32, (5,), dev, usage=Usage.STAGING)
    st.inplace_copy_from(s)
    d = st.to(dev)
    assert d is not st and d.pinned is False and d.usage == Usage.DEFAULT and d.device is dev
    assert d._data_ptr() != st._data_ptr()
    same(d, np.arange(5, dtype=np.int32))
    assert put([1.0], dev).to(CPU()).pinned is False


# -------------------------------------------------------- DevicePinnedBuffer

def test_device_pinned_buffer_needs_an_accelerator(cpu):
    from axl.driver import DevicePinnedBuffer

    msg = "^DevicePinnedBuffer requires a non-host device$"
    with pytest.raises(ValueError, match=msg):
        DevicePinnedBuffer(DType.float32, (2,), cpu)
    with pytest.raises(ValueError, match=msg):
        DevicePinnedBuffer(DType.float32, (2,), cpu.default_queue)
    with pytest.raises(ValueError, match=msg):
        DevicePinnedBuffer.zeros((2,), DType.float32, cpu)


@on_virtual(**LATENCY)
def test_device_pinned_buffer(dev):
    from axl.driver import DevicePinnedBuffer

    p = DevicePinnedBuffer(DType.int32, (4, 4), dev)
    assert isinstance(p, Buffer) and p.pinned and not p.is_host and p.device is dev
    assert p._host_hazard_tracked is False  # no implicit synchronisation
    for v in (p[1:, ::2], p[0, :], p.view(DType.uint8), p[1, ::-1][::-1].view(DType.int16)):
        assert type(v) is DevicePinnedBuffer, v
    q = DeviceQueue(dev)
    pq = DevicePinnedBuffer(DType.int8, (3,), q)
    assert type(pq) is DevicePinnedBuffer and pq.device is dev
    z = DevicePinnedBuffer.zeros((3, 2), DType.float32, dev)
    assert type(z) is DevicePinnedBuffer and z.shape == (3, 2)
    dev.synchronize()
    np.testing.assert_array_equal(z.to_numpy(), np.zeros((3, 2), np.float32))

    # No implicit synchronisation: under latency an unsynchronised read sees the old bytes.
    alias = p.to_numpy()
    assert alias.ctypes.data == p._data_ptr()
    alias[...] = -1
    src = put(np.arange(16, dtype=np.int32).reshape(4, 4), dev)
    dev.synchronize()
    p.inplace_copy_from(src)
    early = np.array(p.to_numpy(), copy=True)
    dev.synchronize()
    late = np.array(p.to_numpy(), copy=True)
    np.testing.assert_array_equal(early, np.full((4, 4), -1, np.int32))
    np.testing.assert_array_equal(late, np.arange(16).reshape(4, 4))


# ------------------------------------------------------- HostHazardCompletion

def test_completion_record_and_wait(cpu, queue):
    from axl.driver import HostHazardCompletion

    c = HostHazardCompletion.record_on(cpu.default_queue)
    c.wait()
    assert c.is_ready()
    flag = gate(queue)
    g = HostHazardCompletion.record_on(queue)
    assert not g.is_ready()
    blocks_until_opened(g.wait, flag)
    assert g.is_ready()


def test_completion_poison(cpu, queue):
    from axl.driver import HostHazardCompletion

    p = HostHazardCompletion.poisoned(queue, "boom: the producer failed")
    assert p.is_ready()
    with pytest.raises(HostHazardError, match="boom: the producer failed") as e:
        p.wait()
    assert isinstance(e.value, RuntimeError)
    # poison outranks a recorded event, and the wait does not block on the gate
    flag = gate(queue)
    try:
        c = HostHazardCompletion.record_on(queue)
        c.poison("late failure")
        assert c.is_ready()
        t0 = time.monotonic()
        with pytest.raises(HostHazardError, match="late failure"):
            c.wait()
        assert time.monotonic() - t0 < 5
    finally:
        flag.signal(1)
    done = HostHazardCompletion.record_on(queue)
    done.wait()
    done.poison("after the fact")
    with pytest.raises(HostHazardError, match="after the fact"):
        done.wait()


def test_completion_poison_text_with_a_nul_gets_through(queue):
    """A poison message is a diagnostic, not a name: a NUL in it (decoded
    bytes in an exception message) reads as the two characters \\0 rather
    than refusing the text (which would leave the completion unpoisoned,
    the failure unreported), through both entries."""
    from axl.driver import HostHazardCompletion

    p = HostHazardCompletion.poisoned(queue, "bad\0byte\0")
    with pytest.raises(HostHazardError) as e:
        p.wait()
    assert "bad\\0byte\\0" in str(e.value), str(e.value)
    c = HostHazardCompletion.record_on(queue)
    c.poison("late\0failure")
    assert c.is_ready()
    with pytest.raises(HostHazardError) as e:
        c.wait()
    assert "late\\0failure" in str(e.value), str(e.value)
    # A buffer stamped with it refuses host access with that text.
    b = Buffer.from_numpy(np.zeros(2, np.int32))
    b._stamp_write(HostHazardCompletion.poisoned(queue, "x\0y"))
    with pytest.raises(HostHazardError, match=r"x\\0y"):
        b.to_numpy()


def test_completion_identity(queue):
    from axl.driver import HostHazardCompletion

    a = HostHazardCompletion.record_on(queue)
    b = HostHazardCompletion.record_on(queue)
    assert a == a and a != b
    assert hash(a) == hash(a)
    assert len({a, b, a}) == 2
    import axl.driver

    assert "HostHazardCompletion" in dir(axl.driver)
    assert issubclass(HostHazardError, RuntimeError)


# ------------------------------------------------- stamps and host accesses

def test_poisoned_write_raises_at_every_host_access(queue):
    from axl.driver import HostHazardCompletion

    b = Buffer.from_numpy(np.arange(6, dtype=np.int32).reshape(2, 3))
    b._stamp_write(HostHazardCompletion.poisoned(queue, "kernel exploded"))
    accesses = {
        "to_numpy": lambda: b.to_numpy(),
        "item": lambda: b[0, 0].item(),
        # MAX waits in __getitem__ and copy() too; axl may instead hand out
        # the view / the copy and raise when it is read (the data is never seen)
        "getitem": lambda: b[1, 1].item(),
        "setitem": lambda: b.__setitem__((0, 1), 5),
        "copy": lambda: b.copy().to_numpy(),
        "to": lambda: b.to(DeviceQueue(b.device)).to_numpy(),
        "dlpack": lambda: b.__dlpack__(),
        "slice": lambda: b[:, ::2].to_numpy(),  # views share the record
        "view": lambda: b.view(DType.uint8).to_numpy(),
    }
    wrong = {}
    for name, access in accesses.items():
        try:
            access()
            wrong[name] = "returned"
        except HostHazardError as e:
            if "kernel exploded" not in str(e):
                wrong[name] = f"HostHazardError without the producer's message: {e}"
        except Exception as e:  # noqa: BLE001 - reported below
            wrong[name] = f"{type(e).__name__}: {e}"
    assert not wrong, f"host accesses that did not raise HostHazardError('kernel exploded'): {wrong}"
    # a new write (e.g. a successful copy) replaces the poisoned one
    b.inplace_copy_from(Buffer.from_numpy(np.full((2, 3), 8, np.int32)))
    same(b, np.full((2, 3), 8, np.int32))


def test_stamps_on_untracked_buffers_are_no_ops(queue):
    from axl.driver import HostHazardCompletion

    u = Buffer(DType.int8, (3,), usage=Usage.UNTRACKED)
    u._stamp_write(HostHazardCompletion.poisoned(queue, "ignored"))
    u._stamp_read(HostHazardCompletion.poisoned(queue, "ignored"))
    u[0] = 1
    assert u[0].item() == 1
    u.to_numpy()


def test_host_read_waits_for_the_stamped_writer(queue):
    from axl.driver import HostHazardCompletion

    b = Buffer.from_numpy(np.arange(4, dtype=np.int64))
    flag = gate(queue)
    b._stamp_write(HostHazardCompletion.record_on(queue))
    out = blocks_until_opened(lambda: np.array(b[1:].to_numpy()), flag)
    np.testing.assert_array_equal(out, [1, 2, 3])


def test_host_write_waits_for_stamped_readers_but_reads_do_not(queue):
    from axl.driver import HostHazardCompletion

    b = Buffer.from_numpy(np.arange(4, dtype=np.int64))
    flag = gate(queue)
    b._stamp_read(HostHazardCompletion.record_on(queue))
    assert returns_while_gated(lambda: b[2].item(), flag, open_after=False) == 2  # read after read: no wait
    blocks_until_opened(lambda: b.__setitem__(2, 20), flag)
    assert b[2].item() == 20


def test_real_copy_orders_host_access_on_the_cpu(cpu):
    """The same with a copy the core stamps itself: the destination is
    written, the source read, by work gated on the buffers' queue."""
    q = DeviceQueue(cpu)
    src = put(np.arange(8, dtype=np.int32), cpu).to(q)
    dst = Buffer(DType.int32, (8,), q)
    flag = gate(q)
    dst.inplace_copy_from(src)  # enqueued behind the gate
    assert returns_while_gated(lambda: src[3].item(), flag, open_after=False) == 3  # reading the source: no wait
    # a host write of the source waits for the pending copy to read it ...
    blocks_until_opened(lambda: src.__setitem__(0, 99), flag)
    # ... so the copy saw the old value, and reading dst waited for the copy
    same(dst, np.arange(8, dtype=np.int32))
    assert src[0].item() == 99

    flag2 = gate(q)
    dst2 = Buffer(DType.int32, (8,), q)
    dst2.inplace_copy_from(src)
    out = blocks_until_opened(lambda: np.array(dst2.to_numpy()), flag2)
    np.testing.assert_array_equal(out, [99, 1, 2, 3, 4, 5, 6, 7])


def test_reads_wait_only_for_their_own_producer_on_the_cpu(cpu):
    own = DeviceQueue(cpu)
    unrelated = DeviceQueue(cpu)
    b = Buffer(DType.float32, (4,), own)
    b.inplace_copy_from(put(np.arange(4, dtype=np.float32), cpu))
    own.synchronize()
    g1, g2 = gate(unrelated), gate(cpu.default_queue)
    # more work the buffer does not depend on, behind the gates
    other = Buffer(DType.float32, (4,), unrelated)
    ones = put(np.ones(4, np.float32), cpu)  # kept: see test_dropping_a_buffer_in_use_does_not_block
    other.inplace_copy_from(ones)
    got = returns_while_gated(lambda: (np.array(b.to_numpy()), b[2].item(), b.copy(cpu)), g1, g2)
    np.testing.assert_array_equal(got[0], np.arange(4))
    assert got[1] == 2.0
    same(got[2], np.arange(4, dtype=np.float32))
    same(other, np.ones(4, np.float32))


def test_dropping_a_buffer_in_use_does_not_block():
    """The last reference to a buffer that queued work still reads can go
    at any time: the memory is released once that work ran, without
    blocking the thread that dropped it (MAX: a deferred free). Run in a
    child so that a blocking release fails instead of hanging pytest."""
    from test_buffer_model import run_child

    p = run_child("""
        import threading, time
        import numpy as np
        from axl.driver import CPU, Buffer, CompletionFlag, DeviceQueue
        from axl.dtype import DType
        cpu = CPU()
        q = DeviceQueue(cpu)
        flag = CompletionFlag(cpu)
        q.wait_for_host_value(flag, 1)
        threading.Timer(5.0, flag.signal, (1,)).start()  # frees a blocked release, to measure it
        dst = Buffer(DType.float32, (4,), q)
        for src in (Buffer.from_numpy(np.arange(4, dtype=np.float32)), ):
            dst.inplace_copy_from(src)
        t0 = time.monotonic()
        del src
        print("release took %.2f s" % (time.monotonic() - t0), flush=True)
        assert time.monotonic() - t0 < 2, "dropping the source blocked until its queue ran"
        flag.signal(1)
        np.testing.assert_array_equal(dst.to_numpy(), np.arange(4))
    """, {}, timeout=60)
    assert p.returncode == 0, f"exit {p.returncode}\n{p.stdout}\n{p.stderr}"


def test_untracked_host_write_does_not_wait(cpu):
    q = DeviceQueue(cpu)
    src = Buffer(DType.int32, (4,), q, usage=Usage.UNTRACKED)
    src.to_numpy()[...] = 7
    dst = Buffer(DType.int32, (4,), q)
    flag = gate(q)
    dst.inplace_copy_from(src)  # a pending read of src
    returns_while_gated(lambda: src.__setitem__(0, 1), flag)
    q.synchronize()


# ------------------------------------------------ hazards on accelerators

@on_accelerators(**LATENCY)
def test_copy_into_staging_is_waited_for(dev):
    ref = np.arange(64, dtype=np.float32).reshape(8, 8)
    src = put(ref, dev)
    for read_back in (lambda s: np.array(s.to_numpy()),
                      lambda s: np.array([[s[i, j].item() for j in range(8)] for i in range(8)], np.float32),
                      lambda s: np.array(s[2:5, ::3].to_numpy()),
                      lambda s: np.from_dlpack(s).copy()):
        st = Buffer(DType.float32, (8, 8), dev, usage=Usage.STAGING)
        st.to_numpy()[...] = -1
        st.inplace_copy_from(src)
        got = read_back(st)  # no synchronize: the read waits for the copy
        want = ref[2:5, ::3] if got.shape == (3, 3) else ref
        np.testing.assert_array_equal(got, want)


@on_virtual(**LATENCY)
def test_untracked_staging_is_not_waited_for(dev):
    src = put(np.arange(16, dtype=np.int32), dev)
    dev.synchronize()
    st = Buffer(DType.int32, (16,), dev, usage=Usage.STAGING | Usage.UNTRACKED)
    st.to_numpy()[...] = -1
    st.inplace_copy_from(src)
    early = np.array(st.to_numpy())  # no wait: the copy has not landed yet
    dev.synchronize()
    np.testing.assert_array_equal(early, np.full(16, -1))
    np.testing.assert_array_equal(st.to_numpy(), np.arange(16))


@on_accelerators(**LATENCY)
def test_device_buffer_reads_see_enqueued_work(dev):
    """MAX's DRIV-311 contracts 1 and 2 for device memory: to_numpy,
    __dlpack__-based reads and item() never return data older than work
    already enqueued on the buffer."""
    a = put(np.arange(10, dtype=np.int64), dev)
    b = Buffer.zeros((10,), DType.int64, dev)
    b.inplace_copy_from(a)
    np.testing.assert_array_equal(b.to_numpy(), np.arange(10))
    c = Buffer.zeros((10,), DType.int64, dev)
    c.inplace_copy_from(a)
    assert c[9].item() == 9


@on_accelerators(**LATENCY)
def test_device_buffer_written_on_another_queue(dev):
    """A host read of device memory is never older than the work that wrote
    it, whichever queue that work ran on."""
    other = DeviceQueue(dev)
    src = Buffer(DType.int32, (8,), other)
    src.inplace_copy_from(put(np.arange(8, dtype=np.int32), CPU()))
    d = Buffer.zeros((8,), DType.int32, dev)  # bound to the default queue
    dev.synchronize()
    d.inplace_copy_from(src)
    np.testing.assert_array_equal(d.to_numpy(), np.arange(8))
    e = Buffer.zeros((8,), DType.int32, dev)
    dev.synchronize()
    e.inplace_copy_from(src)
    assert e[7].item() == 7
    f = Buffer.zeros((8,), DType.int32, dev)
    dev.synchronize()
    f.inplace_copy_from(src)
    np.testing.assert_array_equal(np.from_dlpack(f, device="cpu"), np.arange(8))


@on_virtual(**LATENCY)
def test_copies_of_untracked_buffers_keep_queue_order(dev):
    """UNTRACKED drops the host waits, not the order of axl's own copies: a
    copy on another queue read a DevicePinnedBuffer before the copy that
    filled it on its own queue had run (stale data, no error)."""
    from axl.driver import DevicePinnedBuffer, batch_inplace_copy, copy_pinned_to_destinations

    other = DeviceQueue(dev)
    makers = (lambda: DevicePinnedBuffer(DType.int32, (8,), other),
              lambda: Buffer(DType.int32, (8,), other, usage=Usage.STAGING | Usage.UNTRACKED))
    copies = (lambda dst, src: dst.inplace_copy_from(src),
              lambda dst, src: batch_inplace_copy([dst], [src]),
              lambda dst, src: copy_pinned_to_destinations(src, [dst]))
    for make in makers:
        for copy in copies:
            src = make()
            src.inplace_copy_from(put(np.arange(8, dtype=np.int32), CPU()))  # 0.25 s on `other`
            dst = Buffer(DType.int32, (8,), dev)  # the default queue's
            copy(dst, src)
            np.testing.assert_array_equal(dst.to_numpy(), np.arange(8))


@on_accelerators(**LATENCY)
def test_host_write_waits_for_a_pending_device_read(dev):
    q = DeviceQueue(dev)
    st = Buffer(DType.int32, (4,), q, usage=Usage.STAGING)
    st.to_numpy()[...] = [1, 2, 3, 4]
    d = Buffer(DType.int32, (4,), q)
    flag = gate(q)
    d.inplace_copy_from(st)  # reads st once the gate opens
    blocks_until_opened(lambda: st.__setitem__(0, 100), flag)
    same(d, np.array([1, 2, 3, 4], np.int32))  # the copy read the old value
    assert st[0].item() == 100


@on_accelerators(**LATENCY)
def test_untracked_staging_write_does_not_wait(dev):
    q = DeviceQueue(dev)
    st = Buffer(DType.int32, (4,), q, usage=Usage.STAGING | Usage.UNTRACKED)
    d = Buffer(DType.int32, (4,), q)
    flag = gate(q)
    d.inplace_copy_from(st)
    returns_while_gated(lambda: st.__setitem__(0, 100), flag)
    q.synchronize()


@on_accelerators(**LATENCY)
def test_staging_reads_wait_only_for_their_own_producer(dev):
    own = DeviceQueue(dev)
    src = Buffer(DType.int16, (6,), own)
    src.inplace_copy_from(put(np.arange(6, dtype=np.int16), CPU()))
    dev.synchronize()
    st = Buffer(DType.int16, (6,), own, usage=Usage.STAGING)
    st.inplace_copy_from(src)  # still running (latency) while the read below starts
    unrelated = DeviceQueue(dev)
    g1, g2 = gate(unrelated), gate(dev.default_queue)
    busy = Buffer(DType.int16, (6,), unrelated)
    host = put(np.arange(6, dtype=np.int16), CPU())  # kept alive: see test_dropping_a_buffer_in_use_does_not_block
    busy.inplace_copy_from(host)  # runs on busy's queue, stuck behind g1
    got = returns_while_gated(lambda: (np.array(st.to_numpy()), st[5].item()), g1, g2)
    np.testing.assert_array_equal(got[0], np.arange(6))
    assert got[1] == 5
    same(busy, np.arange(6, dtype=np.int16))


@on_virtual(AXL_VIRTUAL_DEVICES="2", **LATENCY)
def test_copy_into_staging_from_another_device(dev):
    """The copy runs on the source device's queue; the read waits for it there."""
    from axl.driver import Accelerator

    other = Accelerator(1)
    src = put(np.arange(32, dtype=np.uint8), other)
    st = Buffer(DType.uint8, (32,), dev, usage=Usage.STAGING)
    st.to_numpy()[...] = 0
    st.inplace_copy_from(src)
    np.testing.assert_array_equal(st.to_numpy(), np.arange(32))


@on_virtual(AXL_VIRTUAL_FAIL="memcpy_dtoh:*=INTERNAL@async")
def test_failed_producer_raises_host_hazard_error(dev):
    src = put(np.arange(4, dtype=np.float32), dev)
    st = Buffer(DType.float32, (4,), dev, usage=Usage.STAGING)
    st.inplace_copy_from(src)  # fails on the queue (injected)
    for access in (lambda: st.to_numpy(), lambda: st[0].item(), lambda: st.__setitem__(1, 2.0)):
        t0 = time.monotonic()
        with pytest.raises(HostHazardError, match="injected failure") as e:
            access()
        assert isinstance(e.value, RuntimeError)
        assert time.monotonic() - t0 < 10


@on_virtual(AXL_VIRTUAL_FAIL="memcpy_dtoh:*=INTERNAL")
def test_failed_enqueue_poisons_the_destination(dev):
    src = put(np.arange(4, dtype=np.float32), dev)
    st = Buffer(DType.float32, (4,), dev, usage=Usage.STAGING)
    with pytest.raises(RuntimeError, match="injected failure"):
        st.inplace_copy_from(src)
    with pytest.raises(HostHazardError, match="injected failure"):
        st.to_numpy()


# ------------------------------------------------------------- batched copies

def _batch_cases(dev):
    """dsts, srcs and what each dst must hold: host, staging and device
    sources in one batch, a repeated pair, an identity pair."""
    cpu = CPU()
    host = put(np.arange(0, 8, dtype=np.int32), cpu)
    stage = Buffer(DType.int32, (8,), dev, usage=Usage.STAGING)
    stage.inplace_copy_from(put(np.arange(100, 108, dtype=np.int32), cpu))
    devsrc = put(np.arange(200, 208, dtype=np.int32), dev)
    d1, d2, d3 = (Buffer(DType.int32, (8,), dev) for _ in range(3))
    d4 = Buffer(DType.int32, (2, 4), cpu)
    ident = put(np.arange(300, 308, dtype=np.int32), dev)
    dsts = [d1, d2, d3, d4, d1, ident]
    srcs = [host, stage, devsrc, devsrc, host, ident]
    want = [np.arange(0, 8), np.arange(100, 108), np.arange(200, 208), np.arange(200, 208).reshape(2, 4),
            np.arange(0, 8), np.arange(300, 308)]
    return dsts, srcs, want


@on_devices
def test_batch_inplace_copy_matches_a_loop(dev):
    from axl.driver import batch_inplace_copy

    dsts, srcs, want = _batch_cases(dev)
    batch_inplace_copy(dsts, srcs)
    for d, w in zip(dsts, want):
        same(d, w.astype(np.int32))
    loop_dsts, loop_srcs, _ = _batch_cases(dev)
    for d, s in zip(loop_dsts, loop_srcs):
        d.inplace_copy_from(s)
    for a, b in zip(dsts, loop_dsts):
        same(a, read(b))
    batch_inplace_copy([], [])


@on_devices
def test_batch_inplace_copy_errors(dev):
    from axl.driver import batch_inplace_copy

    a, b = Buffer(DType.int8, (4,), dev), Buffer(DType.int8, (4,), dev)
    with pytest.raises(ValueError, match=re.escape(
            "batch_inplace_copy: dsts and srcs must have the same length (got 2 dsts, 1 srcs)")):
        batch_inplace_copy([a, b], [a])
    first = put(np.zeros(4, np.int8), dev)
    with pytest.raises(ValueError):  # a bad pair: nothing of the batch lands
        batch_inplace_copy([first, a], [put(np.ones(4, np.int8), dev), Buffer(DType.int8, (5,), dev)])
    same(first, np.zeros(4, np.int8))


@on_virtual(AXL_VIRTUAL_DEVICES="2")
def test_batch_inplace_copy_skips_identity_and_repeated_pairs(dev):
    from axl.driver import Accelerator, batch_inplace_copy

    other = Accelerator(1)
    s1, s2 = put(np.arange(16, dtype=np.float64), dev), put(np.arange(16, 32, dtype=np.float64), CPU())
    d1, d2 = Buffer(DType.float64, (16,), dev), Buffer(DType.float64, (16,), other)
    dev.synchronize()
    other.synchronize()
    with launch_trace() as trace:
        batch_inplace_copy([d1, d2, d1, s1, d2], [s1, s2, s1, s1, s2])
        dev.synchronize()
        other.synchronize()
    copied = sum(e.memcpy_byte_size for e in trace if e.kind.name == "MEMCPY")
    assert copied == 2 * 16 * 8, trace  # d1<-s1 and d2<-s2 once each; s1<-s1 skipped
    same(d1, np.arange(16, dtype=np.float64))
    same(d2, np.arange(16, 32, dtype=np.float64))


@on_virtual(AXL_VIRTUAL_DEVICES="2", AXL_VIRTUAL_GUARD="1", **LATENCY)
def test_copy_pinned_to_destinations(dev):
    import gc

    from axl.driver import Accelerator, copy_pinned_to_destinations

    other = Accelerator(1)
    src = Buffer(DType.int64, (64,), dev, usage=Usage.STAGING)
    src.to_numpy()[...] = np.arange(64)
    dsts = [Buffer(DType.int64, (64,), dev), Buffer(DType.int64, (64,), other), Buffer(DType.int64, (8, 8), CPU())]
    copy_pinned_to_destinations(src, dsts)
    del src  # the copies still pending on both devices keep it alive
    gc.collect()
    for d in dsts:
        same(d, np.arange(64, dtype=np.int64).reshape(d.shape))
    with pytest.raises(ValueError, match="^Cannot copy buffers of different sizes$"):
        copy_pinned_to_destinations(Buffer(DType.int64, (3,), dev, usage=Usage.STAGING), dsts[:1])


def test_copy_pinned_to_destinations_on_the_cpu(cpu):
    from axl.driver import copy_pinned_to_destinations

    src = put(np.arange(5, dtype=np.uint16), cpu)
    dsts = [Buffer(DType.uint16, (5,), cpu) for _ in range(3)]
    copy_pinned_to_destinations(src, dsts)
    for d in dsts:
        same(d, np.arange(5, dtype=np.uint16))
