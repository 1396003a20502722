"""Deprecated alias of :mod:`mybinlog.replication.target`, the ClickHouse targets now split by concern into a
package. It re-exports the same names and will be removed in the next release: import from
``mybinlog.replication.target``.
"""

from __future__ import annotations

import warnings

from .target import *  # noqa: F403
from .target import __all__ as __all__

warnings.warn(
    "mybinlog.replication._target is deprecated: import from mybinlog.replication.target",
    DeprecationWarning,
    stacklevel=2,
)
