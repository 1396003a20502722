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

from ._lazy import lazy_names as _lazy_names
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
from .protocol import (
    MISSING,
    AnnotateRowsEvent,
    BinlogCheckpointEvent,
    BinlogPosition,
    ColumnInfo,
    ColumnType,
    DeleteRowsEvent,
    Event,
    EventDecoder,
    EventType,
    FormatDescriptionEvent,
    Gtid,
    GtidEvent,
    GtidSet,
    HeartbeatEvent,
    IncidentEvent,
    IntvarEvent,
    JsonDiff,
    JsonDiffs,
    JsonOpaque,
    MariaDBGtid,
    MariadbGtidEvent,
    MariadbGtidListEvent,
    MariaDBGtidSet,
    MySQLGtid,
    MySQLGtidSet,
    OtherEvent,
    PartialUpdateRowsEvent,
    PreviousGtidsEvent,
    QueryEvent,
    RandEvent,
    RotateEvent,
    RowsEvent,
    RowsQueryEvent,
    StopEvent,
    TableMap,
    TableMapEvent,
    TransactionPayloadEvent,
    UpdateRowsEvent,
    UserVarEvent,
    WriteRowsEvent,
    XaPrepareEvent,
    XidEvent,
    apply_json_diffs,
    can_attach,
    implementation,
    is_new,
    parse_gtid_set,
)
from .source import DSN, iter_binlog_events, read_binlog_file

if _typing.TYPE_CHECKING:  # for type checkers only (`X as X`: exported); at run time the names below are lazy
    from .protocol import (  # noqa: I001 (one import per module)
        Transaction as Transaction,
        XaStatement as XaStatement,
        Xid as Xid,
        parse_xa_statement as parse_xa_statement,
    )
    from .sharing import (
        Binlog as Binlog,
        BinlogClient as BinlogClient,
        BinlogClientFactory as BinlogClientFactory,
        BinlogClientStatistics as BinlogClientStatistics,
        BinlogEventsDispatcher as BinlogEventsDispatcher,
        BinlogStatistics as BinlogStatistics,
        BinlogStatus as BinlogStatus,
        get_binlog_client as get_binlog_client,
        get_binlog_client_factory as get_binlog_client_factory,
    )
    from .source import ServerInfo as ServerInfo
    from .source import BinlogStream as BinlogStream
    from .status import (
        MetricsCollector as MetricsCollector,
        StatusServer as StatusServer,
        read_status as read_status,
        serve_status as serve_status,
        status_document as status_document,
    )

# imported on first use: `mybinlog dump` and the file readers start faster without the asyncio connection, sharing
# and status layers
_LAZY, __getattr__, __dir__ = _lazy_names(
    __name__,
    {
        ".source": ("BinlogStream", "ServerInfo"),
        ".sharing": (
            "get_binlog_client",
            "get_binlog_client_factory",
            "BinlogClientFactory",
            "BinlogClient",
            "BinlogEventsDispatcher",
            "Binlog",
            "BinlogStatistics",
            "BinlogClientStatistics",
            "BinlogStatus",
        ),
        ".status": ("StatusServer", "serve_status", "read_status", "status_document", "MetricsCollector"),
        ".protocol": ("Transaction", "XaStatement", "Xid", "parse_xa_statement"),
    },
)

__version__ = "0.1.0.dev0"

__all__ = [  # and the lazy names (below)
    # reading
    "BinlogPosition",
    "DSN",
    "read_binlog_file",
    "iter_binlog_events",
    "EventDecoder",
    "implementation",
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
__all__ += _LAZY
