"""mybinlog: asyncio-native MySQL/MariaDB change data capture.

The public API lives here; every other module is private. Layers:

- :class:`BinlogStream` streams decoded events from a live server and resumes after disconnects;
- :func:`read_binlog_file` / :func:`iter_binlog_events` decode binlog files on disk;
- :class:`EventDecoder` is the sans-IO decoder under both (bytes in, events out);
- GTID sets of both flavours: :class:`MySQLGtidSet`, :class:`MariaDBGtidSet`, :func:`parse_gtid_set`;
- :func:`implementation` says whether the compiled core (C extension) or pure Python decodes rows.
"""

from __future__ import annotations

import typing as _typing

from . import _compat
from .errors import (
    AuthenticationError,
    BinlogClosedError,
    BinlogDetachedError,
    BinlogPurgedError,
    BinlogStoppedError,
    ChecksumError,
    ConfigurationError,
    DdlApplyError,
    DdlParseError,
    DecodeError,
    GtidSetError,
    MybinlogError,
    NotABinlogError,
    PacketSequenceError,
    PreconditionError,
    ReplicaLockedError,
    ReplicationError,
    SnapshotError,
    SourceConnectionError,
    SourceError,
    SourceHistoryError,
    SourceLaggingError,
    StatusReadError,
    TargetConnectionError,
    TargetError,
    TargetUnavailableError,
    TransactionInterruptedError,
    TruncatedError,
    TypeMappingError,
    UnknownEventError,
)
from .protocol._accel import implementation
from .protocol._constants import MISSING, ColumnType, EventType
from .protocol._decoder import EventDecoder
from .protocol._events import (
    AnnotateRowsEvent,
    BinlogCheckpointEvent,
    DeleteRowsEvent,
    Event,
    FormatDescriptionEvent,
    GtidEvent,
    HeartbeatEvent,
    IncidentEvent,
    IntvarEvent,
    MariadbGtidEvent,
    MariadbGtidListEvent,
    OtherEvent,
    PartialUpdateRowsEvent,
    PreviousGtidsEvent,
    QueryEvent,
    RandEvent,
    RotateEvent,
    RowsEvent,
    RowsQueryEvent,
    StopEvent,
    TableMapEvent,
    TransactionPayloadEvent,
    UpdateRowsEvent,
    UserVarEvent,
    WriteRowsEvent,
    XaPrepareEvent,
    XidEvent,
)
from .protocol._gtid import (
    Gtid,
    GtidSet,
    MariaDBGtid,
    MariaDBGtidSet,
    MySQLGtid,
    MySQLGtidSet,
    can_attach,
    is_new,
    parse_gtid_set,
)
from .protocol._jsonb import JsonDiff, JsonDiffs, JsonOpaque, apply_json_diffs
from .protocol._position import BinlogPosition
from .protocol._table import ColumnInfo, TableMap
from .source._dsn import DSN
from .source._files import iter_binlog_events, read_binlog_file

if _typing.TYPE_CHECKING:  # imported on first use (below): `mybinlog dump` and file readers start faster without them
    from .protocol._transaction import Transaction, XaStatement, Xid, parse_xa_statement
    from .sharing import (
        Binlog,
        BinlogClient,
        BinlogClientFactory,
        BinlogClientStatistics,
        BinlogEventsDispatcher,
        BinlogStatistics,
        BinlogStatus,
        get_binlog_client,
        get_binlog_client_factory,
    )
    from .source._connection import ServerInfo
    from .source._stream import BinlogStream
    from .status import MetricsCollector, StatusServer, read_status, serve_status, status_document

# name -> module, for the names imported on first use (the asyncio connection, sharing and status layers)
_LAZY = {
    "Binlog": ".sharing",
    "BinlogClient": ".sharing",
    "BinlogClientFactory": ".sharing",
    "BinlogEventsDispatcher": ".sharing",
    "BinlogStatistics": ".sharing",
    "BinlogClientStatistics": ".sharing",
    "BinlogStatus": ".sharing",
    "get_binlog_client": ".sharing",
    "get_binlog_client_factory": ".sharing",
    "MetricsCollector": ".status",
    "StatusServer": ".status",
    "read_status": ".status",
    "serve_status": ".status",
    "status_document": ".status",
    "Transaction": ".protocol._transaction",
    "XaStatement": ".protocol._transaction",
    "Xid": ".protocol._transaction",
    "parse_xa_statement": ".protocol._transaction",
    "BinlogStream": ".source._stream",
    "ServerInfo": ".source._connection",
}


def __getattr__(name: str) -> _typing.Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__version__ = "0.1.0.dev0"

__all__ = [
    # reading
    "BinlogStream",
    "BinlogPosition",
    "ServerInfo",
    "DSN",
    "read_binlog_file",
    "iter_binlog_events",
    "EventDecoder",
    "implementation",
    # sharing
    "get_binlog_client",
    "get_binlog_client_factory",
    "StatusServer",
    "serve_status",
    "read_status",
    "status_document",
    "MetricsCollector",
    "BinlogClientFactory",
    "BinlogClient",
    "BinlogEventsDispatcher",
    "Binlog",
    "BinlogStatistics",
    "BinlogClientStatistics",
    "Transaction",
    "XaStatement",
    "Xid",
    "parse_xa_statement",
    "BinlogStatus",
    # events
    "Event",
    "EventType",
    "FormatDescriptionEvent",
    "RotateEvent",
    "StopEvent",
    "QueryEvent",
    "XidEvent",
    "GtidEvent",
    "MariadbGtidEvent",
    "PreviousGtidsEvent",
    "MariadbGtidListEvent",
    "BinlogCheckpointEvent",
    "TableMapEvent",
    "RowsEvent",
    "WriteRowsEvent",
    "UpdateRowsEvent",
    "PartialUpdateRowsEvent",
    "DeleteRowsEvent",
    "RowsQueryEvent",
    "AnnotateRowsEvent",
    "HeartbeatEvent",
    "TransactionPayloadEvent",
    "XaPrepareEvent",
    "IntvarEvent",
    "RandEvent",
    "UserVarEvent",
    "IncidentEvent",
    "OtherEvent",
    "MISSING",
    "TableMap",
    "ColumnInfo",
    "ColumnType",
    "JsonDiff",
    "JsonDiffs",
    "JsonOpaque",
    "apply_json_diffs",
    # GTIDs
    "Gtid",
    "GtidSet",
    "MySQLGtid",
    "MariaDBGtid",
    "MySQLGtidSet",
    "MariaDBGtidSet",
    "parse_gtid_set",
    "is_new",
    "can_attach",
    # errors
    "MybinlogError",
    "ConfigurationError",
    "GtidSetError",
    "DecodeError",
    "TruncatedError",
    "ChecksumError",
    "NotABinlogError",
    "PacketSequenceError",
    "UnknownEventError",
    "SourceError",
    "SourceConnectionError",
    "AuthenticationError",
    "PreconditionError",
    "BinlogPurgedError",
    "SourceHistoryError",
    "SourceLaggingError",
    "TransactionInterruptedError",
    "BinlogDetachedError",
    "BinlogStoppedError",
    "BinlogClosedError",
    "StatusReadError",
    "TargetError",
    "TargetConnectionError",
    "TypeMappingError",
    "DdlParseError",
    "DdlApplyError",
    "ReplicationError",
    "TargetUnavailableError",
    "ReplicaLockedError",
    "SnapshotError",
]

_compat.install()  # the module paths of 0.1 (mybinlog._sharing, ...), with a DeprecationWarning
