"""The Python half of :class:`Buffer` (MAX adds its Python-level Buffer
methods the same way, in ``max/driver/buffer.py``), plus :class:`Usage`,
:class:`DevicePinnedBuffer`, DLPack interop and the batched copies.

What lives where: the layout arithmetic (indexing, views, contiguity),
strided copies, batched copies and host hazard tracking are the core's
(``axl.h``), reached through ``axl._core``; this file composes them into
MAX's API. Differences from MAX are listed in docs/python.md.
"""

from __future__ import annotations

import enum
import itertools
import math
import operator
import os
import sys
from collections.abc import Callable, Iterator, Sequence

from .. import _core
from .._core import Buffer, DeviceQueue, HostHazardCompletion
from . import _args
from ..dtype import DType, _decode, _encode, _raw_numpy
from ._device import CPU, Device

# Annotations name nothing from typing (object where anything goes), so
# typing.get_type_hints resolves them in these globals while `import
# axl.driver` stays free of typing (benchmarks/python_overhead.py prints the
# startup ratio); DLPackArray, a typing.Protocol, is made on first use
# (module __getattr__ below).

_READ, _WRITE = 1, 2

# DTypes whose numpy type is the value itself (others go through their bits).
_NUMPY_NATIVE = frozenset(
    {
        DType.bool,
        DType.int8,
        DType.int16,
        DType.int32,
        DType.int64,
        DType.uint8,
        DType.uint16,
        DType.uint32,
        DType.uint64,
        DType.float16,
        DType.float32,
        DType.float64,
    }
)


class Usage(enum.Flag):
    """Allocation intent (MAX: ``max.driver.Usage``); compose with ``|``.

    ``DEFAULT``: device memory (host memory on the CPU). ``STAGING``: host
    memory for transfers to and from the given accelerator, page-locked
    (``pinned``); plain memory on the CPU. ``UNTRACKED``: no host hazard
    tracking: host reads and writes of the buffer never wait.
    """

    DEFAULT = 0
    STAGING = 1
    UNTRACKED = 2


def _make_dlpack_array() -> type:
    from typing import Any, Protocol, get_type_hints, runtime_checkable

    @runtime_checkable
    class DLPackArray(Protocol):
        """Anything numpy, torch or axl can exchange through DLPack."""

        def __dlpack__(self, *, stream: Any = None) -> Any: ...

        def __dlpack_device__(self) -> tuple[int, int]: ...

    # The methods' string annotations would be resolved in this module's
    # globals, which have no Any (typing stays out of import): resolve them
    # here, where it is in scope.
    for method in (DLPackArray.__dlpack__, DLPackArray.__dlpack_device__):
        method.__annotations__ = get_type_hints(method, localns={"Any": Any})
    DLPackArray.__module__, DLPackArray.__qualname__ = __name__, "DLPackArray"
    return DLPackArray


def __getattr__(name: str) -> object:
    # PEP 562: DLPackArray is built (and typing imported) on first access.
    if name == "DLPackArray":
        cls = globals()["DLPackArray"] = _make_dlpack_array()
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _np() -> object:
    import numpy

    return numpy


def _host_side(buf: Buffer) -> Buffer:
    """buf itself when the host can address it (after waiting for its
    producer), else a host copy of it whose copy has completed."""
    if buf._host_visible:
        buf._host_wait(_READ)
        return buf
    host = buf.to(CPU())
    host._host_wait(_READ)
    return host


# --------------------------------------------------------------- numpy side


_READ_ONLY_ALIAS = (
    "the producer is read-only and {what} asks to alias it; an axl Buffer is always writable "
    "(copies, fills and kernels may write it), so pass copy=None or copy=True for a private copy"
)


def _import_numpy(arr: object) -> Buffer:
    """A CPU buffer aliasing the C-contiguous, writable, native-order array."""
    dtype = DType.from_numpy(arr.dtype)
    # Every caller copies a read-only array first; this is the last line, so
    # that no path can alias one (a write would land in it, or fault on a
    # read-only np.memmap).
    if not arr.flags.writeable:
        raise BufferError("from_dlpack: " + _READ_ONLY_ALIAS.format(what="this import"))
    # Exported as unsigned ints of the same width: numpy cannot DLPack-export
    # bool views of every version or ml_dtypes types at all.
    buf, read_only = _core._from_dlpack_capsule(_numpy_capsule(arr.view(_raw_numpy(dtype))))
    if read_only:  # the capsule's DLPACK_FLAG_BITMASK_READ_ONLY
        raise BufferError("from_dlpack: " + _READ_ONLY_ALIAS.format(what="this import"))
    return buf._view(dtype, arr.shape)


def _numpy_capsule(arr: object) -> object:
    """A DLPack capsule of a numpy array (0-d as shape (1,)), versioned
    where numpy supports it."""
    a = arr if arr.ndim else arr.reshape(1)
    return a.__dlpack__(max_version=(1, 0)) if _dlpack_versioned(_np()) else a.__dlpack__()


_VERSIONED: dict[str, bool] = {}


def _dlpack_versioned(np: object) -> bool:
    """Whether this numpy exports versioned DLPack capsules (numpy >= 2.1)."""
    v = _VERSIONED.get(np.__version__)
    if v is None:
        major, minor = (int(x) for x in np.__version__.split(".")[:2])
        v = _VERSIONED[np.__version__] = (major, minor) >= (2, 1)
    return v


def _check_device(device: object, what: str) -> None:
    """TypeError unless ``device`` is None or a Device, with the text the
    native entry points give (checked before any work is done)."""
    if device is not None and not isinstance(device, Device):
        raise TypeError(f"{what}: device: expected {_core._DEVICE_EXPECTED}, got {type(device).__name__} {device!r}")


def _from_numpy(arr: object, device: Device | None = None) -> Buffer:
    """A host buffer over ``arr`` (MAX: ``Buffer.from_numpy``).

    Zero copy for C-contiguous, writable, native-order arrays: the buffer
    aliases the array (``buf._data_ptr() == arr.ctypes.data``) and keeps it
    alive. Other arrays are copied first (non-contiguous, read-only, or
    big-endian input), as MAX does.

    Args:
        arr: a numpy array of a dtype :class:`DType` knows (with ml_dtypes
            installed: bfloat16 and float8 too).
        device: an axl extension: when given and not the CPU, the result is
            moved there (``from_numpy(arr).to(device)``).

    Raises:
        ValueError: ``unsupported NumPy dtype: ...``.
    """
    _check_device(device, "Buffer.from_numpy")
    np = _np()
    a = np.asarray(arr)
    if a.ndim:
        a = np.ascontiguousarray(a)
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    if not a.flags.writeable or not a.flags.c_contiguous:
        a = a.copy()
    buf = _import_numpy(a)
    return buf if device is None or device.is_host else buf.to(device)


def _from_array(arr: object, device: Device | None) -> Buffer:
    """MAX's third constructor, ``Buffer(shape=ndarray, device=dev)``: a copy
    of the array on ``device``."""
    _check_device(device, "Buffer")
    src = _from_numpy(_np().array(arr, copy=True))
    return src if device is None or device.is_host else src.copy(device)


def _to_numpy(self: Buffer) -> object:
    """The buffer as a numpy array (MAX: ``Buffer.to_numpy``).

    Host and staging memory is aliased (no copy: writes go both ways), after
    waiting for the device work that last wrote the buffer (not with
    ``Usage.UNTRACKED``). Device memory is copied to the host first.

    Raises:
        ValueError: the dtype has no numpy type (bfloat16 and float4/6
            without ml_dtypes; float8 without ml_dtypes come back as their
            uint8 bits, as in MAX).
        HostHazardError: the work producing the buffer failed.
    """
    # The host-visible case in one native call (the 1 KiB copy + to_numpy
    # round trip is an issue 16 target); device memory is copied here.
    arr = self._host_numpy()
    if arr is None:
        arr = self.to(CPU())._host_numpy()  # waits for the copy, then aliases it
    return arr


def _from_dlpack(array: object, *, copy: bool | None = None) -> Buffer:
    """A buffer over any DLPack producer (MAX: ``Buffer.from_dlpack``).

    numpy arrays: must be C-contiguous (``ValueError`` otherwise); read-only
    ones are copied, and ``copy=False`` of a read-only one is a
    ``BufferError`` (numpy's answer to a writable request): a Buffer is
    always writable, so aliasing would let writes land in the producer (or
    fault, for a read-only ``np.memmap``). ``copy=True`` copies. A
    :class:`Buffer` is returned as is (or copied with ``copy=True``). Other
    producers (torch, cupy, ...) are aliased unless their capsule carries
    DLPack 1.x's read-only flag, then copied; the stream handshake passes our
    queue's native stream so the producer orders its work before ours
    (DLPack's ``stream`` argument).

    Raises:
        TypeError: ``array`` has no ``__dlpack__`` method; ``copy`` is not a
            bool or None.
        ValueError: MAX's messages for non-contiguous input and for ``copy``
            with inputs other than numpy arrays and Buffers.
        BufferError: the producer's device or dtype has no axl counterpart;
            ``copy=False`` of a read-only numpy array.
    """
    _check_copy(copy, "Buffer.from_dlpack")
    np = sys.modules.get("numpy")
    if isinstance(array, Buffer):
        return array.copy() if copy else array
    if np is not None and isinstance(array, np.ndarray):
        if not array.flags.c_contiguous:
            raise ValueError(
                "driver buffer's from_dlpack only accepts contiguous arrays. First call np.ascontiguousarray(array)"
            )
        if not array.flags.writeable:
            if copy is False:
                raise BufferError("from_dlpack: " + _READ_ONLY_ALIAS.format(what="copy=False"))
            copy = True
        if copy:
            array = array.copy()
        if not array.dtype.isnative:
            array = array.astype(array.dtype.newbyteorder("="))
        return _import_numpy(array)
    is_contiguous = getattr(array, "is_contiguous", None)
    if callable(is_contiguous) and not is_contiguous():
        raise ValueError(
            "driver buffer's from_dlpack only accepts contiguous tensors. First call .contiguous() on the tensor"
        )
    if copy is not None:
        raise ValueError("`Buffer.from_dlpack` supports the `copy` flag only for numpy array and `Buffer` inputs")
    if not callable(getattr(array, "__dlpack__", None)):
        raise TypeError(
            f"Buffer.from_dlpack: expected a DLPack producer (an object with __dlpack__, such as a numpy array "
            f"or a torch tensor), got {type(array).__name__}"
        )
    stream = None
    device = getattr(array, "__dlpack_device__", None)
    if callable(device) and device()[0] in (2, 10):  # CUDA, ROCm: hand over our stream
        stream = _consumer_stream(device())
    try:
        capsule = array.__dlpack__(stream=stream, max_version=(1, 1))
    except TypeError:  # producers older than DLPack 1.0
        capsule = array.__dlpack__(stream=stream)
    buf, read_only = _core._from_dlpack_capsule(capsule)
    return buf.copy() if read_only else buf


def _consumer_stream(dl_device: tuple[int, int]) -> int | None:
    from . import accelerator_count, Accelerator

    backend = "cuda" if dl_device[0] == 2 else "hip"
    for i in range(accelerator_count()):
        acc = Accelerator(i)
        if acc._h.backend == backend and acc._h.backend_index == dl_device[1]:
            return acc.default_queue.native_stream_handle or None
    return None


def _export_wait(buf: Buffer) -> None:
    # Host-visible memory: wait for its producer (a no-op when untracked).
    # Device memory: MAX's contract, the export never sees data older than
    # work already enqueued on the buffer's queue.
    if buf._host_visible:
        buf._host_wait(_READ)
    else:
        buf.stream.synchronize()


def _copy_in_place_kind(buf: Buffer) -> Buffer:
    """A contiguous copy in the same kind of memory as ``buf`` (``__dlpack__
    (copy=True)``: the copy lives where the buffer says it does, so a
    staging buffer's copy is staging memory too), hazard-tracked so that the
    export waits for the copy."""
    out = Buffer(buf.dtype, buf.shape, stream=buf.stream, usage=buf.usage & ~Usage.UNTRACKED)
    out._copy_ordered(buf)
    return out


def _int_pair(value: object, what: str) -> tuple[int, int] | None:
    """``value`` as a (major, minor) / (device_type, device_id) pair of
    ints, or None; TypeError naming it otherwise (the array API's types)."""
    if value is None:
        return None
    try:
        pair = tuple(value)  # type: ignore[arg-type]
    except TypeError:
        pair = ()
    if len(pair) != 2 or any(isinstance(v, bool) or not isinstance(v, int) for v in pair):
        raise TypeError(f"{what} must be a tuple of two ints or None, got {type(value).__name__} {value!r}")
    return pair  # type: ignore[return-value]


def _check_copy(copy: object, what: str) -> None:
    if copy is not None and not isinstance(copy, bool):
        raise TypeError(f"{what}: copy must be True, False or None, got {type(copy).__name__} {copy!r}")


def _dlpack(
    self: Buffer,
    *,
    stream: int | None = None,
    max_version: tuple[int, int] | None = None,
    dl_device: tuple[int, int] | None = None,
    copy: bool | None = None,
) -> object:
    """A DLPack capsule of the buffer (the Python array API's ``__dlpack__``).

    A versioned capsule (``dltensor_versioned``, DLPack 1.1) when the
    consumer passes ``max_version >= (1, 0)``, else a legacy ``dltensor``.
    ``stream=-1`` skips synchronisation; any other value waits on the host
    for the buffer's producer first. ``dl_device=(1, 0)`` exports a host copy
    of device memory; ``copy=True`` always copies, into the same kind of
    memory (a staging buffer's copy is staging memory); ``copy=False``
    refuses. Memory whose DLPack form no consumer can dereference (the
    virtual backend's, kDLExtDev; OpenCL's, whose kDLOpenCL data would have
    to be a cl_mem) is refused, saying how to get a host copy.

    Raises:
        TypeError: ``stream`` is neither an int nor None; ``max_version`` or
            ``dl_device`` is not a pair of ints; ``copy`` is not a bool or None.
        BufferError: a device change with ``copy=False``, or to a device other
            than the CPU; a dtype DLPack lacks; memory no consumer can read.
    """
    # The array API's stream is an int (or None); anything else is a caller's
    # mistake that would otherwise be read as "synchronize" silently.
    if stream is not None and (isinstance(stream, bool) or not isinstance(stream, int)):
        raise TypeError(f"__dlpack__: stream must be an int or None, got {type(stream).__name__} {stream!r}")
    max_version = _int_pair(max_version, "__dlpack__: max_version")
    dl_device = _int_pair(dl_device, "__dlpack__: dl_device")
    _check_copy(copy, "__dlpack__")
    target, copied = self, False
    if dl_device is not None and tuple(dl_device) != self._dlpack_device():
        if copy is False:
            raise BufferError(
                f"__dlpack__: the buffer is on DLPack device {self._dlpack_device()}; exporting to "
                f"{tuple(dl_device)} needs a copy but copy=False"
            )
        if tuple(dl_device)[0] != 1:
            raise BufferError(f"__dlpack__: can export to the CPU (1, 0) only, not {tuple(dl_device)}")
        target, copied = self.to(CPU()), True
    else:
        # Refused before copy=True copies: the copy would be the same kind.
        unreadable = self._dlpack_unreadable()
        if unreadable is not None:
            raise BufferError(
                f"__dlpack__: the buffer is in {self.device}'s memory ({self.device.api} api, "
                f"{self.device._h.backend} backend), which no DLPack consumer can read ({unreadable}); copy "
                "it to the host first with buf.to(CPU()), or ask for a host copy with __dlpack__(dl_device=(1, 0))"
            )
        if copy:
            target, copied = _copy_in_place_kind(self), True
    if stream != -1 or copied:
        _export_wait(target)
    versioned = max_version is not None and tuple(max_version)[0] >= 1
    return target._dlpack_capsule(versioned, copied)


def _dlpack_device(self: Buffer) -> tuple[int, int]:
    """(device_type, device_id) in DLPack's codes: CPU (1, 0), CUDA (2, id),
    CUDA pinned (3, 0), ROCm (10, id), ROCm pinned (11, 0), oneAPI (14, id),
    OpenCL (4, id); the virtual backend's device memory is kDLExtDev
    (12, id); pinned memory other than CUDA's and ROCm's is plain CPU
    memory (1, 0). OpenCL and virtual device memory are not exported
    (``__dlpack__``): no consumer could dereference them."""
    return self._dlpack_device()


def _array(self: Buffer, dtype: object = None, copy: bool | None = None) -> object:
    """numpy's ``__array__`` (``np.asarray(buf)``, ``np.array(buf)``): host
    and staging memory as a zero-copy alias, like :meth:`to_numpy`; with
    ``copy=True`` a private copy, with a ``dtype`` other than the buffer's a
    converted copy. Takes numpy 1.x's ``__array__(dtype)`` and 2.x's
    ``__array__(dtype, copy=)``.

    Raises:
        TypeError: device memory (numpy cannot read it; torch raises the
            same for CUDA tensors): copy it with ``buf.to(CPU())`` or call
            ``buf.to_numpy()``, which copies.
        ValueError: ``copy=False`` with a dtype conversion; a dtype numpy
            lacks (as :meth:`to_numpy`).
    """
    if not self._host_visible:
        raise TypeError(
            f"can't convert a Buffer in {self.device}'s device memory to a numpy array: copy it to the host "
            "first with buf.to(CPU()), or use buf.to_numpy(), which copies"
        )
    arr = self.to_numpy()
    np = _np()
    if dtype is not None and np.dtype(dtype) != arr.dtype:
        if copy is False:
            raise ValueError(
                f"Buffer.__array__: converting {self.dtype} to numpy {np.dtype(dtype)} needs a copy, but copy=False"
            )
        return arr.astype(dtype)
    return arr.copy() if copy else arr


# ----------------------------------------------------------- element access


def _write_element(view: Buffer, value: object) -> None:
    np = _np()
    dtype = view.dtype
    if dtype in _NUMPY_NATIVE:
        try:
            arr = np.array(value, dtype=dtype.to_numpy())
        except OverflowError:  # numpy 1.x words it without the value
            raise OverflowError(f"Python integer {value!r} out of bounds for {dtype}") from None
    else:
        arr = np.array(_encode(dtype, float(value)), dtype=_raw_numpy(dtype))
    if view._host_visible:
        view._host_wait(_WRITE)
        view._as_numpy(arr.dtype)[()] = arr
        return
    # Device memory: an asynchronous copy on the buffer's queue. The core
    # keeps the source alive until the copy ran.
    src = _import_numpy(arr.reshape(()))
    view._copy_from(src._view(dtype, view.shape) if view.shape else src, view.stream)


def _setitem(self: Buffer, index: object, value: object) -> None:
    """Assigns one element (MAX: ``Buffer.__setitem__``): one integer per
    dimension, negatives wrapping; a rank-0 buffer takes ``[()]`` (numpy's
    and MAX's spelling: no index per dimension) and also ``[0]``.

    Raises:
        ValueError: the index does not pick a single element (slices, too
            few or too many indices).
        IndexError: an integer out of range.
    """
    # ``buf[tuple(0 for _ in shape)] = v`` must work for every rank,
    # rank 0 included, so the empty tuple names a rank-0 buffer's element.
    rank0_empty = self.rank == 0 and isinstance(index, tuple) and not index
    if not rank0_empty and not self._index_is_element(index):
        raise ValueError(
            f"Buffer.__setitem__ sets one element: give {self.rank} integer index(es) (got {index!r}); "
            "assigning to slices is not supported"
        )
    if self.rank == 0 and not rank0_empty:
        # [0] (or [-1]) names the one element, as a length-1 axis would;
        # any other integer is out of range (it wrote the element).
        k = operator.index(index[0] if isinstance(index, tuple) else index)
        if k not in (0, -1):
            raise IndexError(f"Buffer.__setitem__: index {k} is out of range for a rank-0 buffer "
                             "(it takes [()] or [0])")
    view = self if self.rank == 0 else self[index]
    _write_element(view, value)


def _item(self: Buffer) -> object:
    """The single element as a Python int, float or bool (any shape with
    one element). Waits for the buffer's producer (MAX: synchronizes).

    Raises:
        ValueError: ``calling `item` on a tensor with N items but expected only 1``.
    """
    n = self.num_elements
    if n != 1:
        raise ValueError(f"calling `item` on a tensor with {n} items but expected only 1")
    if self.pinned and not self._host_hazard_tracked:
        self.stream.synchronize()  # MAX's contract 2: item() synchronizes
    host = _host_side(self)
    if self.dtype in _NUMPY_NATIVE:
        return host._as_numpy(self.dtype.to_numpy()).reshape(-1)[0].item()
    bits = host._as_numpy(_raw_numpy(self.dtype)).reshape(-1)
    return float(_decode(self.dtype, bits)[0])


def _scalar_conversion(kind: type) -> Callable[[Buffer], object]:
    """``int(buf)`` / ``float(buf)`` as numpy does for one-element arrays
    (through :meth:`item`); without it Python fell through to the buffer
    protocol and parsed the raw bytes as text."""

    def convert(self: Buffer) -> object:
        n = self.num_elements
        if n != 1:
            raise TypeError(f"only one-element buffers can be converted to Python scalars, got {n} elements; "
                            "use buf.item() or buf.to_numpy()")
        return kind(self.item())

    convert.__name__ = f"__{kind.__name__}__"
    return convert


def _values_for_print(self: Buffer) -> object:
    host = _host_side(self)
    if self.dtype in _NUMPY_NATIVE:
        return host._as_numpy(self.dtype.to_numpy())
    return _decode(self.dtype, host._as_numpy(_raw_numpy(self.dtype)))


def _str(self: Buffer) -> str:
    """``Buffer(<values>, dtype=..., shape=..., device=...)``; bfloat16 and
    float8 values are decoded to numbers, not shown as bits."""
    np = _np()
    values = _values_for_print(self)
    body = str(values.reshape(()).item()) if self.rank == 0 else np.array2string(values, prefix="Buffer(")
    return f"Buffer({body}, dtype={self.dtype}, shape={self.shape}, device={self.device})"


# ------------------------------------------------------------ construction


def _zeros(
    shape: int | Sequence[int], dtype: DType, device: Device | None = None, usage: Usage = Usage.DEFAULT
) -> Buffer:
    """A new buffer of zeros (MAX: ``Buffer.zeros(shape, dtype, device=None,
    usage=Usage.DEFAULT)``; note the order, shape first). The fill is
    enqueued; host reads wait for it (tracked buffers) or go through a copy
    on the same queue."""
    buf = Buffer(dtype, shape, device, usage=usage)
    buf._fill_zero()
    return buf


def _scalar(value: object, dtype: DType, device: Device | None = None) -> Buffer:
    """A rank-0 buffer holding ``value`` (on the CPU unless ``device``)."""
    _check_device(device, "Buffer.scalar")
    buf = Buffer(dtype, (), CPU())
    _write_element(buf, value)
    return buf if device is None or device.is_host else buf.to(device)


_MMAP_MODES = {
    "r": "c",  # private and lazy: MAX copies the whole file here
    "readonly": "c",
    "c": "c",
    "copyonwrite": "c",
    "r+": "r+",
    "readwrite": "r+",
    "w+": "w+",
    "write": "w+",
}


def _mmap(
    filename: str | os.PathLike,
    dtype: DType,
    shape: int | Sequence[int],
    mode: str = "copyonwrite",
    offset: int = 0,
) -> Buffer:
    """A host buffer over a file (MAX: ``Buffer.mmap``; ``np.memmap``'s
    modes and ``offset`` in bytes). ``"r+"`` writes reach the file;
    ``"c"``/``"copyonwrite"`` are private. ``"r"`` is private too: the pages
    are mapped copy-on-write instead of MAX's up-front copy of the file.
    Every DType works (bfloat16 and float8 keep their type).

    Raises:
        ValueError: an unknown mode; the file is shorter than offset + size.
        FileNotFoundError: no such file.
    """
    np = _np()
    # Every argument is checked before the file is touched.
    filename = _args.fspath(filename, "Buffer.mmap: filename")
    if not isinstance(dtype, DType):
        raise TypeError(f"Buffer.mmap: dtype must be an axl.dtype.DType, got {type(dtype).__name__} {dtype!r}")
    if not isinstance(mode, str):
        raise TypeError(f"Buffer.mmap: mode must be a str, got {type(mode).__name__} {mode!r}")
    if mode not in _MMAP_MODES:
        raise ValueError(f"mode must be one of {sorted(_MMAP_MODES)}, got {mode!r}")
    offset = _args.index(offset, "Buffer.mmap: offset")
    if not 0 <= offset < 2**63:  # numpy's own refusal names no argument
        raise ValueError(f"Buffer.mmap: offset must be in [0, 2**63), got {offset}")
    if isinstance(shape, (str, bytes)) or not (hasattr(shape, "__iter__") or hasattr(shape, "__index__")):
        raise TypeError(f"Buffer.mmap: shape must be an int or a sequence of ints, got {type(shape).__name__} "
                        f"{shape!r}")
    dims = (shape,) if hasattr(shape, "__index__") else tuple(shape)
    dims = tuple(_args.index(n, "Buffer.mmap: shape entry") for n in dims)
    if len(dims) > _core.MAX_RANK:
        raise ValueError(f"mmap: shape {dims} has rank {len(dims)}; a Buffer has at most {_core.MAX_RANK} dimensions")
    if any(d == 0 for d in dims):
        # Nothing to map (mmap refuses zero lengths); the file must still exist.
        if not os.path.exists(filename):
            raise FileNotFoundError(f"No such file or directory: {os.fspath(filename)!r}")
        return Buffer(dtype, dims, CPU())
    np_mode = _MMAP_MODES[mode]
    if np_mode == "r+":
        # np.memmap grows a short file in "r+" mode (writing a zero at the
        # end); mapping an existing file must not change its size.
        nbytes = offset + dtype.size_in_bytes * math.prod(dims)
        size = os.stat(filename).st_size
        if size < nbytes:
            raise ValueError(
                f"{os.fspath(filename)}: the file has {size} bytes, mode {mode!r} with offset {offset} and shape "
                f"{dims} needs {nbytes}; a mapping never grows the file (use mode='w+' to create one)"
            )
    mm = np.memmap(filename, dtype=_raw_numpy(dtype), mode=np_mode, offset=offset, shape=dims, order="C")
    buf, _ = _core._from_dlpack_capsule(_numpy_capsule(mm))
    return buf._view(dtype, dims)


# -------------------------------------------------------- copies, movement


def _inplace_copy_from(self: Buffer, src: Buffer) -> None:
    """Copies ``src``'s elements into this buffer, enqueued (MAX:
    ``Buffer.inplace_copy_from``). Any devices; either side may be a
    non-contiguous view (axl: the core splits the copy; MAX refuses).
    Shapes may differ when the element counts match.

    Raises:
        TypeError: ``src`` is not a Buffer (wrap arrays with
            ``Buffer.from_numpy`` / ``Buffer.from_dlpack``).
        ValueError: ``Cannot copy buffers of different sizes`` /
            ``Cannot copy buffers of different dtypes``.
    """
    if self is src:
        return
    if not isinstance(src, Buffer):
        raise TypeError(f"Buffer.inplace_copy_from: src must be a Buffer, got {type(src).__name__}")
    self._copy_ordered(src)  # also raises the two ValueErrors


def _copy(
    self: Buffer, device: Device | DeviceQueue | None = None, *, stream: DeviceQueue | None = None
) -> Buffer:
    """A contiguous deep copy (MAX: ``copy(device=None)`` / ``copy(stream)``)
    on ``device``, or bound to ``stream``; on the buffer's own queue when
    neither is given. Enqueued. A host access point: waits for the source's
    producer first and raises ``HostHazardError`` when it failed.

    Raises:
        TypeError: both device and stream given.
    """
    if device is not None and stream is not None:
        raise TypeError("Buffer.copy: pass device or stream, not both")
    target = stream if stream is not None else device
    if target is None:
        target = self.stream
    if self._host_visible:
        self._host_wait(_READ)
    out = Buffer(self.dtype, self.shape, stream=target) if isinstance(target, DeviceQueue) else Buffer(
        self.dtype, self.shape, target
    )
    out._copy_ordered(self)
    return out


def _to(self: Buffer, target: object) -> Buffer | list[Buffer]:
    """The buffer on ``target`` (MAX: ``Buffer.to``): the same object when
    nothing moves; a Buffer bound to another queue of the same device shares
    the memory; otherwise a copy. Staging memory ``.to`` its accelerator is
    a real device copy. A list of devices or queues gives a list."""
    if isinstance(target, (list, tuple)):
        return [self.to(t) for t in target]
    if isinstance(target, DeviceQueue):
        if target == self.stream:
            return self
        if target.device == self.device and not self.pinned:
            return self._with_queue(target)
        return self.copy(target)
    if not isinstance(target, Device):
        raise TypeError(f"Buffer.to: target must be a Device, a DeviceQueue or a list of them, got "
                        f"{type(target).__name__} {target!r}")
    if target == self.device and not self.pinned:
        return self
    return self.copy(target)


def _contiguous(self: Buffer) -> Buffer:
    """A contiguous copy on the buffer's own device and queue (MAX always
    returns a CPU buffer, copied element by element in Python)."""
    out = Buffer(self.dtype, self.shape, stream=self.stream, usage=self.usage)
    out._copy_ordered(self)
    return out


def _view(self: Buffer, dtype: DType, shape: Sequence[int] | None = None) -> Buffer:
    """The same bytes as ``dtype`` (MAX: ``Buffer.view``). Without a shape
    the last axis is rescaled; with one the byte counts must match.

    Raises:
        ValueError: MAX's divisor message; a byte-count mismatch.
        IndexError: a rank-0 buffer without a shape.
    """
    return self._view(dtype, shape)


def _aligned(self: Buffer, alignment: int | None = None) -> bool:
    """Whether element 0's address is a multiple of ``alignment`` bytes
    (the dtype's alignment when None)."""
    return self._data_ptr() % (alignment or self.dtype.align) == 0


def _iterate_indices(self: Buffer) -> Iterator[tuple[int, ...]]:
    return itertools.product(*(range(n) for n in self.shape))


def batch_inplace_copy(dsts: Sequence[Buffer], srcs: Sequence[Buffer]) -> None:
    """``dsts[i].inplace_copy_from(srcs[i])`` for every i, with one
    submission per destination device (MAX: ``batch_inplace_copy``).
    Identity pairs and repeated pairs are skipped.

    Raises:
        ValueError: length mismatch (MAX's text); a pair whose sizes or
            dtypes differ (nothing is enqueued then).
    """
    dsts = _args.items(dsts, Buffer, "batch_inplace_copy: dsts")
    srcs = _args.items(srcs, Buffer, "batch_inplace_copy: srcs")
    if len(dsts) != len(srcs):
        raise ValueError(
            f"batch_inplace_copy: dsts and srcs must have the same length (got {len(dsts)} dsts, {len(srcs)} srcs)"
        )
    batched, singles = [], []
    for i, (dst, src) in enumerate(zip(dsts, srcs)):
        if dst is src:
            continue
        if dst.num_elements != src.num_elements or dst.dtype != src.dtype:
            raise ValueError(
                f"batch_inplace_copy: pair {i} copies {src.num_elements} {src.dtype} elements into "
                f"{dst.num_elements} {dst.dtype} elements; sizes and dtypes must match"
            )
        if dst.num_elements == 0:
            continue
        # Untracked host-visible buffers have no writer record for the core's
        # batch to order against: they take the per-pair path, whose queue
        # waits for theirs (Buffer._copy_ordered).
        one_by_one = not (dst.is_contiguous and src.is_contiguous) or dst._untracked_host or src._untracked_host
        (singles if one_by_one else batched).append((dst, src))
    _core._copy_batch(batched)
    for dst, src in singles:
        dst._copy_ordered(src)


def copy_pinned_to_destinations(source: Buffer, destinations: Sequence[Buffer]) -> None:
    """Copies ``source`` into every destination; when ``source`` is pinned,
    its device's default queue then waits for each other device's default
    queue, so work freeing or reusing the pinned memory there comes after
    every read (MAX's semantics; axl also keeps the allocation itself alive
    until each queue that used it has finished)."""
    if not isinstance(source, Buffer):
        raise TypeError(f"copy_pinned_to_destinations: source must be a Buffer, got {type(source).__name__}")
    destinations = _args.items(destinations, Buffer, "copy_pinned_to_destinations: destinations")
    for dst in destinations:
        dst.inplace_copy_from(source)
    if source.pinned:
        for dst in destinations:
            if dst.device != source.device:
                source.device.default_queue.wait_for(dst.device.default_queue)


class DevicePinnedBuffer(Buffer):
    """Page-locked host memory bound to an accelerator (MAX S1-S3's
    ``DevicePinnedBuffer``; equivalent to ``Usage.STAGING | Usage.UNTRACKED``):
    ``to_numpy`` and ``__dlpack__`` alias without waiting, so synchronize
    before reading the result of asynchronous copies. Slices and views keep
    the type.

    Raises:
        ValueError: ``DevicePinnedBuffer requires a non-host device``.
    """

    # The device is checked in __new__, before an instance exists: an
    # exception from __init__ would leave an instance whose C++ half was
    # never built in the traceback's frames, and touching it (a debugger,
    # pytest's report of locals) crashed the process.
    def __new__(
        cls, dtype: object = None, shape: object = None, device: object = None, **kwargs: object
    ) -> DevicePinnedBuffer:
        unknown = [k for k in kwargs if k != "_like"]
        if unknown:
            raise TypeError(f"DevicePinnedBuffer() got an unexpected keyword argument {unknown[0]!r}")
        if "_like" not in kwargs:
            owner = device.device if isinstance(device, DeviceQueue) else device
            if owner is not None and not isinstance(owner, Device):
                raise TypeError(
                    f"DevicePinnedBuffer: device must be a Device or DeviceQueue, got {type(device).__name__}"
                )
            if owner is None or owner.is_host:
                raise ValueError("DevicePinnedBuffer requires a non-host device")
        return super().__new__(cls)

    def __init__(self, dtype: object = None, shape: object = None, device: object = None, **kwargs: object) -> None:
        if "_like" in kwargs:
            super().__init__(_like=kwargs["_like"])
            return
        super().__init__(dtype, shape, device, usage=Usage.STAGING | Usage.UNTRACKED)

    @staticmethod
    def zeros(shape: object, dtype: DType, device: object = None) -> DevicePinnedBuffer:  # type: ignore[override]
        buf = DevicePinnedBuffer(dtype, shape, device)
        buf._fill_zero()
        return buf

    def __getitem__(self, index: object) -> DevicePinnedBuffer:
        return DevicePinnedBuffer(_like=Buffer.__getitem__(self, index))

    def view(self, dtype: DType, shape: Sequence[int] | None = None) -> DevicePinnedBuffer:  # type: ignore[override]
        return DevicePinnedBuffer(_like=self._view(dtype, shape))


# setattr: the stub (_core.pyi) declares these on Buffer.
def _present_as_method(name: str, fn: object) -> None:
    """Names a module function after the Buffer method it becomes, so that
    Python's own argument errors say ``Buffer.zeros()``, not ``_zeros()``.
    Private aliases (``_inplace_copy_from``) keep the public name."""
    if (not name.startswith("_") or name.startswith("__")) and hasattr(fn, "__code__"):
        fn.__name__ = name
        fn.__qualname__ = f"Buffer.{name}"


for _name, _fn in {
    "to_numpy": _to_numpy,
    "__dlpack__": _dlpack,
    "__dlpack_device__": _dlpack_device,
    "__array__": _array,
    "__setitem__": _setitem,
    "__str__": _str,
    "item": _item,
    "__int__": _scalar_conversion(int),
    "__float__": _scalar_conversion(float),
    "inplace_copy_from": _inplace_copy_from,
    "_inplace_copy_from": _inplace_copy_from,
    "copy": _copy,
    "to": _to,
    "contiguous": _contiguous,
    "view": _view,
    "_aligned": _aligned,
    "_iterate_indices": _iterate_indices,
    "_stamp_read": lambda self, completion: self._stamp(completion, _READ),
    "_stamp_write": lambda self, completion: self._stamp(completion, _WRITE),
}.items():
    _present_as_method(_name, _fn)
    setattr(Buffer, _name, _fn)
for _name, _fn in {
    "from_numpy": _from_numpy,
    "from_dlpack": _from_dlpack,
    "zeros": _zeros,
    "scalar": _scalar,
    "mmap": _mmap,
}.items():
    _present_as_method(_name, _fn)
    setattr(Buffer, _name, staticmethod(_fn))
if sys.version_info < (3, 12):
    # PEP 688's __buffer__, which CPython derives from the C slot from 3.12 on.
    setattr(Buffer, "__buffer__", lambda self, flags: memoryview(self))
setattr(Buffer, "usage", property(lambda self: Usage(self._usage_bits), doc="Allocation intent (Usage)."))

__all__ = [
    "Buffer",
    "DLPackArray",
    "DevicePinnedBuffer",
    "HostHazardCompletion",
    "Usage",
    "batch_inplace_copy",
    "copy_pinned_to_destinations",
]
