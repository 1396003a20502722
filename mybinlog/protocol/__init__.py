"""The sans-IO layer: bytes in, events out. No sockets, no asyncio, no threads, no clients of any server.

``_reader``/``_values``/``_jsonb`` decode field and column values; ``_table`` holds table maps and generates the
per-table row decoders; ``_events`` defines the event classes; ``_decoder`` turns event bytes into events
(:class:`~mybinlog.EventDecoder`); ``_gtid`` holds GTID sets of both flavours; ``_position`` tracks transaction
boundaries in a sequence of events (:class:`~mybinlog.BinlogPosition`); ``_transaction`` groups events into whole
transactions (:class:`~mybinlog.Transaction`); ``_format`` renders events as text or JSON Lines (``mybinlog dump``);
``_packets`` cuts a server's byte stream into MySQL packets (headers, sequence ids, 16 MiB continuations, EOF/ERR).

The layers above use it through the names below only (``from ..protocol import RowsEvent``, never
``from ..protocol._events import RowsEvent``), each imported on first use.

Layer rules: may import :mod:`mybinlog.errors`, ``mybinlog._lazy`` (the table below) and the standard library only
(zstandard for compressed events). A test (tests/unit/test_public_api.py) checks that importing it pulls in no
asyncio, socket or client library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:  # for type checkers only (`X as X`: exported); at run time the names below are lazy
    from ._accel import (  # noqa: I001 (one import per module)
        describe as describe,
        implementation as implementation,
        speedups as speedups,
    )
    from ._constants import (
        BINLOG_MAGIC as BINLOG_MAGIC,
        ColumnType as ColumnType,
        EventType as EventType,
        HEADER_LEN as HEADER_LEN,
        MISSING as MISSING,
    )
    from ._decoder import (
        EventDecoder as EventDecoder,
    )
    from ._events import (
        AnnotateRowsEvent as AnnotateRowsEvent,
        BinlogCheckpointEvent as BinlogCheckpointEvent,
        DeleteRowsEvent as DeleteRowsEvent,
        Event as Event,
        FormatDescriptionEvent as FormatDescriptionEvent,
        GtidEvent as GtidEvent,
        HeartbeatEvent as HeartbeatEvent,
        IncidentEvent as IncidentEvent,
        IntvarEvent as IntvarEvent,
        MariadbGtidEvent as MariadbGtidEvent,
        MariadbGtidListEvent as MariadbGtidListEvent,
        OtherEvent as OtherEvent,
        PartialUpdateRowsEvent as PartialUpdateRowsEvent,
        PreviousGtidsEvent as PreviousGtidsEvent,
        QueryEvent as QueryEvent,
        RandEvent as RandEvent,
        RotateEvent as RotateEvent,
        RowsEvent as RowsEvent,
        RowsQueryEvent as RowsQueryEvent,
        StopEvent as StopEvent,
        TableMapEvent as TableMapEvent,
        TransactionPayloadEvent as TransactionPayloadEvent,
        UpdateRowsEvent as UpdateRowsEvent,
        UserVarEvent as UserVarEvent,
        WriteRowsEvent as WriteRowsEvent,
        XaPrepareEvent as XaPrepareEvent,
        XidEvent as XidEvent,
    )
    from ._format import (
        event_to_json as event_to_json,
        event_to_text as event_to_text,
        events_to_jsonl as events_to_jsonl,
        events_to_jsonl_utf8 as events_to_jsonl_utf8,
    )
    from ._gtid import (
        Gtid as Gtid,
        GtidSet as GtidSet,
        MariaDBGtid as MariaDBGtid,
        MariaDBGtidSet as MariaDBGtidSet,
        MySQLGtid as MySQLGtid,
        MySQLGtidSet as MySQLGtidSet,
        can_attach as can_attach,
        is_new as is_new,
        parse_gtid_set as parse_gtid_set,
    )
    from ._jsonb import (
        JsonDiff as JsonDiff,
        JsonDiffs as JsonDiffs,
        JsonOpaque as JsonOpaque,
        apply_json_diffs as apply_json_diffs,
        render_json_mysql_text as render_json_mysql_text,
    )
    from ._packets import (
        DEFAULT_BATCH_BYTES as DEFAULT_BATCH_BYTES,
        EofPacket as EofPacket,
        ErrorPacket as ErrorPacket,
        PacketFramer as PacketFramer,
        StopPacket as StopPacket,
        encode_packets as encode_packets,
        parse_error_packet as parse_error_packet,
    )
    from ._position import (
        BinlogPosition as BinlogPosition,
        PASSIVE_TYPES as PASSIVE_TYPES,
        PositionTracker as PositionTracker,
        binlog_file_key as binlog_file_key,
        position_from as position_from,
        position_json as position_json,
    )
    from ._table import (
        ColumnInfo as ColumnInfo,
        TableMap as TableMap,
    )
    from ._transaction import (
        Transaction as Transaction,
        TransactionCollector as TransactionCollector,
        XaStatement as XaStatement,
        Xid as Xid,
        parse_xa_statement as parse_xa_statement,
    )

__all__, __getattr__, __dir__ = lazy_names(
    __name__,
    {
        "._constants": ("BINLOG_MAGIC", "ColumnType", "EventType", "HEADER_LEN", "MISSING"),
        "._accel": ("describe", "implementation", "speedups"),
        "._packets": (
            "DEFAULT_BATCH_BYTES",
            "EofPacket",
            "ErrorPacket",
            "PacketFramer",
            "StopPacket",
            "encode_packets",
            "parse_error_packet",
        ),
        "._events": (
            "AnnotateRowsEvent",
            "BinlogCheckpointEvent",
            "DeleteRowsEvent",
            "Event",
            "FormatDescriptionEvent",
            "GtidEvent",
            "HeartbeatEvent",
            "IncidentEvent",
            "IntvarEvent",
            "MariadbGtidEvent",
            "MariadbGtidListEvent",
            "OtherEvent",
            "PartialUpdateRowsEvent",
            "PreviousGtidsEvent",
            "QueryEvent",
            "RandEvent",
            "RotateEvent",
            "RowsEvent",
            "RowsQueryEvent",
            "StopEvent",
            "TableMapEvent",
            "TransactionPayloadEvent",
            "UpdateRowsEvent",
            "UserVarEvent",
            "WriteRowsEvent",
            "XaPrepareEvent",
            "XidEvent",
        ),
        "._table": ("ColumnInfo", "TableMap"),
        "._decoder": ("EventDecoder",),
        "._gtid": (
            "Gtid",
            "GtidSet",
            "MariaDBGtid",
            "MariaDBGtidSet",
            "MySQLGtid",
            "MySQLGtidSet",
            "can_attach",
            "is_new",
            "parse_gtid_set",
        ),
        "._position": (
            "BinlogPosition",
            "PASSIVE_TYPES",
            "PositionTracker",
            "binlog_file_key",
            "position_from",
            "position_json",
        ),
        "._transaction": ("Transaction", "TransactionCollector", "XaStatement", "Xid", "parse_xa_statement"),
        "._jsonb": ("JsonDiff", "JsonDiffs", "JsonOpaque", "apply_json_diffs", "render_json_mysql_text"),
        "._format": ("event_to_json", "event_to_text", "events_to_jsonl", "events_to_jsonl_utf8"),
    },
)
