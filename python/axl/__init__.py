"""axl: an accelerator abstraction layer.

A small C core (libaxl.so) loads backend plugins (cpu, virtual, cuda, hip,
...) at run time; this package is its Python face. The device API lives in
:mod:`axl.driver`, which mirrors Modular MAX's ``max.driver``; element types
are in :mod:`axl.dtype`. ``python -m axl info`` lists plugins and devices
(the same report as the ``axl-info`` tool).
"""

from . import _core
from . import _errors  # registers the exception classes with _core
from ._core import __version__
from . import dtype
from . import driver

__all__ = ["__version__", "driver", "dtype"]
