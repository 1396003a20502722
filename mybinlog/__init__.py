"""mybinlog: asyncio-native MySQL/MariaDB change data capture.

The public API lives here; every other module is private. Layers:

- :class:`BinlogStream` streams decoded events from a live server and resumes after disconnects;
- :func:`read_binlog_file` / :func:`iter_binlog_events` decode binlog files on disk;
- :class:`EventDecoder` is the sans-IO decoder under both (bytes in, events out);
- GTID sets of both flavours: :class:`MySQLGtidSet`, :class:`MariaDBGtidSet`, :func:`parse_gtid_set`.
"""

from __future__ import annotations

from ._dsn import DSN
from ._exceptions import (
    AuthenticationError,
    BinlogPurgedError,
    ChecksumError,
    ConfigurationError,
    DecodeError,
    GtidSetError,
    MybinlogError,
    NotABinlogError,
    PreconditionError,
    SourceConnectionError,
    SourceError,
    TruncatedError,
    UnknownEventError,
)
from ._files import iter_binlog_events, read_binlog_file
from ._gtid import (
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
from ._position import BinlogPosition
from ._protocol._constants import ColumnType, EventType
from ._protocol._decoder import EventDecoder
from ._protocol._events import (
    MISSING,
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
from ._protocol._jsonb import JsonDiff, JsonOpaque, apply_json_diffs
from ._protocol._table import ColumnInfo, TableMap
from ._sharing import (
    Binlog,
    BinlogClient,
    BinlogClientFactory,
    BinlogClosedError,
    BinlogDetachedError,
    BinlogEventsDispatcher,
    BinlogStatus,
    BinlogStoppedError,
    StatusReadError,
    StatusServer,
    get_binlog_client,
    get_binlog_client_factory,
    read_status,
    serve_status,
    status_document,
)
from ._stream import BinlogStream
from ._transport import ServerInfo

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
    # sharing
    "get_binlog_client",
    "get_binlog_client_factory",
    "StatusServer",
    "StatusReadError",
    "serve_status",
    "read_status",
    "status_document",
    "BinlogClientFactory",
    "BinlogClient",
    "BinlogEventsDispatcher",
    "Binlog",
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
    "UnknownEventError",
    "SourceError",
    "SourceConnectionError",
    "AuthenticationError",
    "PreconditionError",
    "BinlogPurgedError",
    "BinlogDetachedError",
    "BinlogStoppedError",
    "BinlogClosedError",
]
