"""Randomized comparison of Buffer against numpy on the same data: chains
of __getitem__ (integers, negative ones, slices with random start, stop and
step, out-of-range bounds, the IndexError/ValueError cases), __setitem__
through views, view() to compatible dtypes, contiguous(), to_numpy() and
inplace_copy_from between random strided views, over random shapes (rank
0-4), steps and dtypes, on the CPU and on the virtual device.

One case is written against a small "draw" interface, so it runs twice:
driven by hypothesis when it is installed (it shrinks failures), and by a
seeded loop of 300 cases that needs nothing (a failure names its seed).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from axl.driver import CPU, Buffer
from axl.dtype import DType

from test_buffer_model import NUMPY_DTYPES, c_strides, on_devices, put, read

SEEDED_CASES = 300
HYPOTHESIS_EXAMPLES = 100
STEPS = [None, 1, 2, 3, -1, -2, -3]


class SeededDraw:
    def __init__(self, rng: random.Random):
        self.rng = rng

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def choice(self, options):
        return options[self.rng.randrange(len(options))]

    def boolean(self) -> bool:
        return self.rng.random() < 0.5


class HypothesisDraw:
    def __init__(self, data):
        from hypothesis import strategies as st

        self.data, self.st = data, st

    def integer(self, lo: int, hi: int) -> int:
        return self.data.draw(self.st.integers(lo, hi))

    def choice(self, options):
        return self.data.draw(self.st.sampled_from(options))

    def boolean(self) -> bool:
        return self.data.draw(self.st.booleans())


# ----------------------------------------------------------------- one case

def random_values(rng: np.random.Generator, dt: DType, shape) -> np.ndarray:
    t = np.dtype(dt.to_numpy())
    if dt is DType.bool:
        out = rng.integers(0, 2, size=shape).astype(np.bool_)
    elif t.kind in "iu":
        info = np.iinfo(t)
        out = rng.integers(info.min, info.max, size=shape, dtype=t, endpoint=True)
    else:
        out = (rng.standard_normal(size=shape) * 100).astype(t)
    return np.array(out, dtype=t)  # a writable array, also for shape ()


def draw_shape(draw, rank: int) -> tuple[int, ...]:
    return tuple(0 if draw.integer(0, 9) == 0 else draw.integer(1, 5) for _ in range(rank))


def draw_index(draw, shape) -> tuple:
    idx = []
    for n in shape:
        if n > 0 and draw.integer(0, 2) == 0:
            idx.append(draw.integer(-n, n - 1))
        else:
            def bound():
                return None if draw.integer(0, 2) == 0 else draw.integer(-n - 3, n + 3)
            idx.append(slice(bound(), bound(), draw.choice(STEPS)))
    return tuple(idx)


def draw_bad_index(draw, shape) -> tuple[tuple, type]:
    """A full index with one bad entry, and the error numpy and MAX raise."""
    idx = list(draw_index(draw, shape))
    k = draw.integer(0, len(shape) - 1)
    n = shape[k]
    if draw.boolean():
        idx[k] = draw.choice([n, n + 2, -n - 1])
        return tuple(idx), IndexError
    idx[k] = slice(draw.choice([None, 0, 1]), None, 0)
    return tuple(idx), ValueError


def check_metadata(v: Buffer, r: np.ndarray, dt: DType, dev, what: str) -> None:
    assert v.shape == r.shape, what
    assert v.rank == r.ndim and v.num_elements == r.size, what
    assert v.dtype is dt and v.device is dev, what
    strides = [s // r.itemsize for s in r.strides]
    for k, n in enumerate(r.shape):
        if n > 1 and r.size:  # strides of extent-1 dims and of empty arrays mean nothing
            assert v.strides[k] == strides[k], (what, v.strides, tuple(strides))
    if all(n > 1 for n in r.shape):
        assert v.is_contiguous == (tuple(strides) == c_strides(r.shape)), (what, v.strides)


def check_bytes(buf: Buffer, want: np.ndarray, what: str) -> None:
    got = read(buf)
    assert got.shape == want.shape and got.dtype == want.dtype, (what, got.shape, want.shape, got.dtype, want.dtype)
    assert got.tobytes() == np.ascontiguousarray(want).tobytes(), (what, got, want)


def strided_slot(draw, shape):
    """A base shape and an index into it giving a view of exactly `shape`
    with random (possibly negative) steps and offsets."""
    base, idx = [], []
    for n in shape:
        step, off = draw.choice([1, 2, 3, -1, -2]), draw.integer(0, 2)
        a = abs(step)
        base.append(n * a + off)
        if n == 0:
            idx.append(slice(0, 0, step))
        elif step > 0:
            idx.append(slice(off, off + n * step, step))
        else:
            idx.append(slice(off + (n - 1) * a, off - 1 if off > 0 else None, step))
    return tuple(base), tuple(idx)


def run_case(draw, dev) -> None:
    cpu = CPU()
    dt = draw.choice(NUMPY_DTYPES)
    shape = draw_shape(draw, draw.integer(0, 4))
    rng = np.random.default_rng(draw.integer(0, 2**32 - 1))
    base_ref = random_values(rng, dt, shape)
    base = put(base_ref, dev)
    v, r = base, base_ref[...]  # r: a numpy view of base_ref, like v of base
    trail = f"{dt.name}{shape}"

    for _ in range(draw.integer(0, 3)):
        if r.ndim == 0:
            break
        if draw.integer(0, 7) == 0:
            bad, err = draw_bad_index(draw, r.shape)
            with pytest.raises(err):
                r[bad]
            with pytest.raises(err):
                v[bad]
            continue
        idx = draw_index(draw, r.shape)
        v = v[idx[0]] if len(idx) == 1 and draw.boolean() else v[idx]
        r = r[idx + (Ellipsis,)]
        trail += f"[{idx}]"
        check_metadata(v, r, dt, dev, trail)

    check_bytes(v, r, trail + ".to_numpy()")
    c = v.contiguous()
    assert c.device is dev and c.is_contiguous and c.shape == r.shape, trail
    check_bytes(c, r, trail + ".contiguous()")

    # view() to a compatible dtype
    if r.ndim >= 1:
        last = r.shape[-1] * r.itemsize
        fits = [d for d in NUMPY_DTYPES if d is not DType.bool and last % d.size_in_bytes == 0]
        d2 = draw.choice(fits)
        check_bytes(c.view(d2), np.ascontiguousarray(r).view(d2.to_numpy()), trail + f".view({d2.name})")
    if r.size and draw.boolean():
        d3 = draw.choice([d for d in NUMPY_DTYPES if d is not DType.bool and (r.size * r.itemsize) % d.size_in_bytes == 0])
        n3 = r.size * r.itemsize // d3.size_in_bytes
        check_bytes(c.view(d3, (n3,)), np.ascontiguousarray(r).reshape(-1).view(d3.to_numpy()),
                    trail + f".view({d3.name}, ({n3},))")

    # __setitem__ through the view reaches the base
    if r.ndim >= 1 and r.size:
        pos = tuple(draw.integer(-n, n - 1) for n in r.shape)
        value = random_values(rng, dt, ()).item()
        v[pos] = value
        r[pos] = value
        check_bytes(base, base_ref, trail + f" after [{pos}] = {value!r}")

    # inplace_copy_from into a random strided view of the same shape, or a flat one
    ddev = draw.choice([dev, cpu])
    if draw.boolean():
        dshape, didx = strided_slot(draw, r.shape)
        want_of = r
    else:
        dshape, didx = strided_slot(draw, (r.size,))
        want_of = r.reshape(-1)
    dbase_ref = random_values(rng, dt, dshape)
    dbase = put(dbase_ref, ddev)
    dview = dbase[didx] if didx else dbase
    dview.inplace_copy_from(v)
    dbase_ref[didx + (Ellipsis,)] = want_of
    check_bytes(dbase, dbase_ref, trail + f" copied into {ddev}{dshape}[{didx}]")
    # and back: from a strided view into the view v
    if r.size:
        src_ref = random_values(rng, dt, r.shape)
        sdev = draw.choice([dev, cpu])
        sshape, sidx = strided_slot(draw, r.shape)
        sbase_ref = random_values(rng, dt, sshape)
        sbase_ref[sidx + (Ellipsis,)] = src_ref
        sbase = put(sbase_ref, sdev)
        v.inplace_copy_from(sbase[sidx] if sidx else sbase)
        r[...] = src_ref
        check_bytes(base, base_ref, trail + f" filled from {sdev}{sshape}[{sidx}]")


# ---------------------------------------------------------------- the tests

@on_devices
def test_random_seeded(dev):
    for i in range(SEEDED_CASES):
        seed = 0xA11 * 1000 + i
        try:
            run_case(SeededDraw(random.Random(seed)), dev)
        except Exception as e:
            raise AssertionError(f"seeded case {i} (random.Random({seed})) on {dev}: {e!r}") from e


@on_devices
def test_random_hypothesis(dev):
    hypothesis = pytest.importorskip("hypothesis")
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    @settings(max_examples=HYPOTHESIS_EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def case(data):
        run_case(HypothesisDraw(data), dev)

    assert hypothesis.__version__
    case()
