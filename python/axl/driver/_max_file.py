"""``load_max_buffer``: one tensor from MAX's ``.max`` checkpoint format
(spec section 8; written by MAX's ``BINARY_MAX_CHECKPOINT`` debug print).

The header is parsed and validated in the core (``axl_max_file_parse``), so
every binding refuses the same malformed files with the same messages; this
module opens the file, feeds the parser the leading bytes it asks for and
maps the data. Differences from MAX (docs/python.md): every malformed file
is a ``ValueError`` naming the path (MAX lets some through to numpy or
``struct``), a rank-0 bfloat16 file keeps shape ``()`` (MAX: ``(1,)``), and
float8 files load with their real dtype (MAX: ``uint8``).
"""

from __future__ import annotations

import os

from .. import _core
from .._core import Buffer
from . import _args
from ..dtype import DType

# The first read; a header is 38 bytes plus the key and 4 per dimension, so
# this holds any header MAX writes for ordinary tensor names.
_FIRST_READ = 4096
_STATUS_OK = 0
_STATUS_OUT_OF_RANGE = 2  # the parser needs more leading bytes


def load_max_buffer(path: str | os.PathLike[str]) -> Buffer:
    """The tensor stored in the ``.max`` file at ``path``, as a host buffer.

    The data is read as ``Buffer.mmap(path, dtype, shape, mode="r",
    offset=...)`` reads it.

    Raises:
        FileNotFoundError: (and other ``OSError``) the file cannot be opened.
        ValueError: the file is not a valid single-tensor ``.max`` file: bad
            magic (``"{path} is not a max checkpoint. ..."``, MAX's text),
            major version > 0 (``"Unable to read from version > 0."``), an
            unknown dtype code (``"N is not a valid DType"``), a metadata size
            that does not describe one tensor (``"Multiple buffers found in
            .max file. ..."``), a truncated header, a shape too large to count,
            or data running past the end of the file. Messages other than
            the magic one start with ``"{path}: "``.
    """
    name = _args.fspath(path, "load_max_buffer: path")
    with open(name, "rb") as f:
        file_size = os.fstat(f.fileno()).st_size
        prefix = f.read(min(file_size, _FIRST_READ))
        info = _core._max_file_parse(prefix, file_size)
        while info["status"] == _STATUS_OUT_OF_RANGE:
            f.seek(0)
            prefix = f.read(info["header_bytes"])
            if len(prefix) < info["header_bytes"]:  # the file shrank meanwhile
                raise ValueError(f"{name}: the file changed while its header was being read")
            info = _core._max_file_parse(prefix, file_size)
    if info["status"] != _STATUS_OK:
        raise ValueError(_message(name, info["message"]))
    return _read_data(name, DType(info["dtype"]), tuple(info["shape"]), info["data_offset"], info["data_bytes"])


def _message(path: str, detail: str) -> str:
    # The core words the magic error as MAX does but without the path
    # ("the file is not a max checkpoint. ..."): put the path in its place,
    # giving MAX's exact text.
    subject = "the file "
    if detail.startswith(subject + "is not a max checkpoint"):
        return f"{path} {detail[len(subject):]}"
    return f"{path}: {detail}"


def _read_data(path: str, dtype: DType, shape: tuple[int, ...], offset: int, nbytes: int) -> Buffer:
    # Mode "r" maps the file privately and lazily (MAX copies it whole).
    # The header is valid .max but may not fit a Buffer (rank above
    # MAX_RANK): mmap's refusal, too, names the file first.
    try:
        return Buffer.mmap(path, dtype, shape, mode="r", offset=offset)
    except ValueError as e:
        if str(e).startswith(f"{path}"):
            raise
        raise ValueError(f"{path}: {e}") from None


__all__ = ["load_max_buffer"]
