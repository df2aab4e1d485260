"""Python methods of :class:`Buffer` (MAX adds its Python-level Buffer
methods the same way, in ``max/driver/buffer.py``).

This first version is what queues and kernels need: allocation with a dtype
and shape, zero fill, and numpy round trips that copy. The buffers issue
extends it with views, slicing, strides, staging memory and DLPack.
"""

from __future__ import annotations

from typing import Any, Union

from .._core import Buffer
from ..dtype import DType
from ._device import CPU, Device


def _from_numpy(arr: Any, device: Device | None = None) -> Buffer:
    """A new buffer holding a copy of ``arr`` (``Buffer.from_numpy``).

    Args:
        arr: a numpy array (any layout and byte order: it is made contiguous
            and native first) of a dtype :class:`DType` knows.
        device: where to allocate; CPU() when None. An axl extension: MAX
            always returns a host buffer, which ``to(device)`` then moves.

    Returns when the copy has finished, so ``arr`` may be changed at once.
    Unlike MAX, which aliases host arrays through DLPack, this always
    copies: aliasing comes with DLPack in the buffers issue.

    Raises:
        ValueError: an unsupported dtype (``unsupported NumPy dtype: ...``).
    """
    import numpy as np

    # asarray keeps 0-d arrays 0-d (ascontiguousarray would make them 1-d);
    # device memory holds native byte order, so big-endian input is swapped.
    a = np.asarray(arr, order="C")
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    dtype = DType.from_numpy(a.dtype)
    buf = Buffer(dtype, a.shape, device if device is not None else CPU())
    # Copied as bytes: a flat uint8 view exports through the buffer protocol
    # whatever the dtype (bool, float16) and rank (0-d included).
    buf._copy_from_host(a.reshape(-1).view(np.uint8))
    return buf


def _to_numpy(self: Buffer) -> Any:
    """A new numpy array with a copy of the buffer's contents
    (``Buffer.to_numpy``). Waits for earlier work on the device's default
    queue. Unlike MAX it never aliases the buffer's memory.

    Raises:
        ValueError: the dtype has no numpy equivalent (bfloat16).
    """
    import numpy as np

    out = np.empty(self.shape, dtype=self.dtype.to_numpy())
    self._copy_to_host(out.reshape(-1).view(np.uint8))
    return out


def _zeros(shape: Union[int, tuple[int, ...], list[int]], dtype: DType, device: Device | None = None) -> Buffer:
    """A new buffer of zeros (``Buffer.zeros(shape, dtype, device=None)``;
    note MAX's argument order, shape first).

    The fill is enqueued on the device's default queue, as in MAX: work on
    that queue sees zeros; read it from the host only after it ran
    (``to_numpy`` waits by itself).
    """
    buf = Buffer(dtype, shape, device)
    buf._fill_zero()
    return buf


# setattr: the stub (_core.pyi) already declares these on Buffer.
setattr(Buffer, "from_numpy", staticmethod(_from_numpy))
setattr(Buffer, "to_numpy", _to_numpy)
setattr(Buffer, "zeros", staticmethod(_zeros))

__all__ = ["Buffer"]
