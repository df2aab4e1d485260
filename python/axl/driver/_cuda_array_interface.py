"""``Buffer.__cuda_array_interface__`` (Numba's CUDA Array Interface, version
3), so CuPy, Numba, PyTorch and CUDA-aware mpi4py take CUDA device buffers
without DLPack.

Only CUDA device memory (DLPack device ``kDLCUDA``) has the attribute: every
other buffer raises ``AttributeError`` from it, because consumers probe with
``hasattr`` and would otherwise take host, staging, ROCm or virtual-device
addresses for CUDA device pointers.
"""

from __future__ import annotations

from .. import _core
from .._core import Buffer
from ..dtype import DType

_DL_CUDA = _core._DL_CUDA  # DLPack's kDLCUDA: device memory of a CUDA device
# CAI v3's stream field: 0 is forbidden (ambiguous); 1 names the legacy
# default stream, which a native handle of 0 is.
_CAI_LEGACY_DEFAULT_STREAM = 1


def _typestr(dtype: DType) -> str:
    """The numpy array-interface type string of ``dtype`` (``'<f4'``)."""
    try:
        np_type = dtype.to_numpy()
    except ValueError:
        np_type = None
    # ml_dtypes' types (bfloat16, float8) have numpy's 'V' (void) kind:
    # a consumer would read raw bytes and call them anything.
    import numpy

    if np_type is None or numpy.dtype(np_type).kind == "V" or dtype.is_float8():
        # AttributeError, not TypeError: consumers probe with hasattr (CuPy,
        # Numba, mpi4py) and fall back to DLPack only when the probe is False.
        raise AttributeError(
            f"__cuda_array_interface__: {dtype} has no array-interface type string; "
            "export it with DLPack (__dlpack__), which has a code for it, or view it as an integer type"
        )
    return numpy.dtype(np_type).str


def _cuda_array_interface(self: Buffer) -> dict[str, object]:
    """CUDA Array Interface v3 of a CUDA device buffer.

    ``data`` is element 0's device address (0 for an empty buffer) and
    writable; ``strides`` is None for a C-contiguous buffer, else byte
    strides; ``stream`` is the native stream of the buffer's queue (1 for the
    legacy default stream): the consumer makes its own stream wait for it
    before touching the data, so no host wait is needed here.

    Raises:
        AttributeError: the buffer is not CUDA device memory, or its dtype
            has no array-interface type string (bfloat16, float8, float6,
            float4): either way ``hasattr`` is False, so a consumer falls
            back to DLPack.
    """
    if self._dlpack_device()[0] != _DL_CUDA:
        raise AttributeError(
            f"__cuda_array_interface__: the buffer is in {self.device}'s memory ({self.device.api} backend, "
            f"DLPack device {self._dlpack_device()}), not CUDA device memory"
        )
    stream = self.stream.native_stream_handle or _CAI_LEGACY_DEFAULT_STREAM
    element_size = self.element_size
    return {
        "shape": tuple(self.shape),
        "typestr": _typestr(self.dtype),
        "data": (self._data_ptr() if self.num_elements else 0, False),
        "strides": None if self.is_contiguous else tuple(s * element_size for s in self.strides),
        "version": 3,
        "stream": stream,
    }


setattr(Buffer, "__cuda_array_interface__", property(_cuda_array_interface, doc=_cuda_array_interface.__doc__))
