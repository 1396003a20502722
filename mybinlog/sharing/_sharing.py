"""Deprecated alias, kept for one release: the names of the former ``mybinlog.sharing._sharing`` module.

The sharing layer is now split along its data path (``_items``, ``_dispatcher``, ``_consumer``, ``_client``,
``_rows``, ``_source``; see :mod:`mybinlog.sharing`) and the status endpoint moved to :mod:`mybinlog.status`. Import
the public names from :mod:`mybinlog` (or :mod:`mybinlog.sharing` / :mod:`mybinlog.status`). This module warns on
import and will be removed in the next release.

The status names (``serve_status``, ``read_status``...) are resolved on first use from :mod:`mybinlog.status`, a
layer above this one: the one place where the sharing package reaches the status layer, only to keep old imports
working.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from ..errors import BinlogClosedError, BinlogDetachedError, BinlogStoppedError, StatusReadError
from ._client import (
    DEFAULT_MAX_BYTES_IN_BINLOG_DISPATCHER_BUFFER,
    DEFAULT_MAX_BYTES_IN_BINLOG_QUEUE,
    DEFAULT_MAX_FLUSH_MILLISECONDS_IN_BINLOG_DISPATCHER,
    DEFAULT_MAX_MILLISECONDS_TO_WAIT_IN_BINLOG_QUEUE,
    BinlogClient,
    BinlogClientFactory,
    get_binlog_client,
    get_binlog_client_factory,
)
from ._consumer import Binlog
from ._dispatcher import BinlogEventsDispatcher
from ._items import SHARED_DECODE_MIN_BYTES
from ._rows import BinlogStatus
from ._source import EventSource, SourceFactory

__all__ = [
    "DEFAULT_MAX_BYTES_IN_BINLOG_DISPATCHER_BUFFER",
    "DEFAULT_MAX_BYTES_IN_BINLOG_QUEUE",
    "DEFAULT_MAX_FLUSH_MILLISECONDS_IN_BINLOG_DISPATCHER",
    "DEFAULT_MAX_MILLISECONDS_TO_WAIT_IN_BINLOG_QUEUE",
    "SHARED_DECODE_MIN_BYTES",
    "Binlog",
    "BinlogClient",
    "BinlogClientFactory",
    "BinlogClosedError",
    "BinlogDetachedError",
    "BinlogEventsDispatcher",
    "BinlogStatus",
    "BinlogStoppedError",
    "EventSource",
    "SourceFactory",
    "StatusReadError",
    "get_binlog_client",
    "get_binlog_client_factory",
]

# resolved by __getattr__ (so not in __all__)
_MOVED_TO_STATUS = frozenset(
    {"STATUS_COLUMNS", "STATUS_FORMAT", "StatusServer", "read_status", "serve_status", "status_document"}
)


warnings.warn(
    "mybinlog.sharing._sharing is deprecated: import from mybinlog (or mybinlog.sharing, mybinlog.status)",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str) -> Any:
    if name in _MOVED_TO_STATUS:
        return getattr(importlib.import_module("mybinlog.status"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
