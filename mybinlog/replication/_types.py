"""Deprecated alias of :mod:`mybinlog.replication.types`, the type mapping now split by concern into a package. It
re-exports the same names and will be removed in the next release: import from ``mybinlog.replication.types``.
"""

from __future__ import annotations

import warnings

from .types import *  # noqa: F403
from .types import __all__ as __all__

warnings.warn(
    "mybinlog.replication._types is deprecated: import from mybinlog.replication.types",
    DeprecationWarning,
    stacklevel=2,
)
