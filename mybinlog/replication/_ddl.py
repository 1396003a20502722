"""Deprecated alias of :mod:`mybinlog.replication.ddl`, the DDL parser now split by concern into a package. It
re-exports the same names and will be removed in the next release: import from ``mybinlog.replication.ddl``.
"""

from __future__ import annotations

import warnings

from .ddl import *  # noqa: F403
from .ddl import __all__ as __all__

warnings.warn(
    "mybinlog.replication._ddl is deprecated: import from mybinlog.replication.ddl",
    DeprecationWarning,
    stacklevel=2,
)
