"""Decoded binlog events.

Every event carries its common header (``timestamp``, ``type_code``, ``server_id``, ``size``, ``log_pos``,
``flags``) and, when known, ``offset`` (byte offset of the event's start in its binlog file) and ``file``.
Row events keep their raw bytes and decode rows only when ``rows`` is first read (then cache them), so routing
and filtering by table costs nothing per row.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from ._constants import MISSING as MISSING  # re-exported: row images hold it
from ._constants import EventType, event_type_name

if TYPE_CHECKING:
    from ._gtid import MariaDBGtid, MariaDBGtidSet, MySQLGtid, MySQLGtidSet
    from ._table import TableMap

__all__ = [
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
]


@dataclass(slots=True, eq=False, kw_only=True)
class Event:
    """Base of all events: the 19-byte common header plus location."""

    timestamp: int
    type_code: int
    server_id: int
    size: int
    log_pos: int
    flags: int
    offset: int | None = None
    file: str | None = None
    in_payload: bool = False  # an inner event of a TRANSACTION_PAYLOAD (no checksum, log_pos 0)

    @property
    def type_name(self) -> str:
        return event_type_name(self.type_code)

    @property
    def datetime(self) -> datetime.datetime:
        """The header timestamp as an aware UTC datetime."""
        return datetime.datetime.fromtimestamp(self.timestamp, datetime.UTC)

    def describe(self) -> str:
        """One line of human-readable detail (used by ``mybinlog dump``)."""
        return ""


@dataclass(slots=True, eq=False, kw_only=True)
class FormatDescriptionEvent(Event):
    """FORMAT_DESCRIPTION_EVENT: the server version, binlog version, checksum algorithm and post-header lengths."""

    binlog_version: int
    server_version: str
    create_timestamp: int
    header_length: int
    post_header_lengths: bytes
    checksum_alg: int | None  # None: server predates checksums (< 5.6.1 / MariaDB < 5.3)

    @property
    def is_mariadb(self) -> bool:
        return "mariadb" in self.server_version.lower()

    def describe(self) -> str:
        alg = {None: "n/a", 0: "NONE", 1: "CRC32"}.get(self.checksum_alg, str(self.checksum_alg))
        return f"server {self.server_version}, binlog v{self.binlog_version}, checksum {alg}"


@dataclass(slots=True, eq=False, kw_only=True)
class RotateEvent(Event):
    """ROTATE_EVENT: the binlog continues in ``next_file`` at ``position``."""

    position: int
    next_file: str

    def describe(self) -> str:
        return f"next file {self.next_file} at {self.position}"


@dataclass(slots=True, eq=False, kw_only=True)
class StopEvent(Event):
    """STOP_EVENT: the server stopped; the binlog file ends here."""


@dataclass(slots=True, eq=False, kw_only=True)
class QueryEvent(Event):
    """QUERY_EVENT: a statement (DDL, BEGIN, COMMIT, or DML in statement format) and its default schema."""

    thread_id: int
    exec_time: int
    error_code: int
    schema: str
    query: str
    charset_client: int | None = None
    sql_mode: int | None = None
    compressed: bool = False

    def describe(self) -> str:
        return f"`{self.schema}` {self.query}" if self.schema else self.query


@dataclass(slots=True, eq=False, kw_only=True)
class XidEvent(Event):
    """XID_EVENT: the commit of an InnoDB transaction, with its XA id."""

    xid: int

    def describe(self) -> str:
        return f"xid {self.xid}"


@dataclass(slots=True, eq=False, kw_only=True)
class GtidEvent(Event):
    """MySQL GTID_LOG_EVENT / ANONYMOUS_GTID_LOG_EVENT / GTID_TAGGED_LOG_EVENT.

    ``gtid`` is None for anonymous transactions. Timestamps are microseconds since the epoch (0 when absent).
    """

    gtid: MySQLGtid | None
    commit_flag: bool
    last_committed: int | None = None
    sequence_number: int | None = None
    immediate_commit_timestamp: int = 0
    original_commit_timestamp: int = 0
    transaction_length: int = 0
    immediate_server_version: int = 0
    original_server_version: int = 0
    commit_group_ticket: int = 0

    @property
    def anonymous(self) -> bool:
        return self.gtid is None

    def describe(self) -> str:
        return f"GTID {self.gtid}" if self.gtid is not None else "anonymous GTID"


@dataclass(slots=True, eq=False, kw_only=True)
class MariadbGtidEvent(Event):
    """MariaDB GTID_EVENT: starts an event group (instead of BEGIN) or marks a standalone statement."""

    FL_STANDALONE: ClassVar[int] = 1
    FL_GROUP_COMMIT_ID: ClassVar[int] = 2
    FL_TRANSACTIONAL: ClassVar[int] = 4
    FL_ALLOW_PARALLEL: ClassVar[int] = 8
    FL_WAITED: ClassVar[int] = 16
    FL_DDL: ClassVar[int] = 32
    FL_PREPARED_XA: ClassVar[int] = 64
    FL_COMPLETED_XA: ClassVar[int] = 128

    gtid: MariaDBGtid
    gtid_flags: int
    commit_id: int | None = None
    xa_format_id: int | None = None
    xa_gtrid: bytes | None = None
    xa_bqual: bytes | None = None

    @property
    def standalone(self) -> bool:
        return bool(self.gtid_flags & self.FL_STANDALONE)

    @property
    def is_ddl(self) -> bool:
        return bool(self.gtid_flags & self.FL_DDL)

    def describe(self) -> str:
        extra = " standalone" if self.standalone else ""
        if self.is_ddl:
            extra += " ddl"
        if self.gtid_flags & self.FL_PREPARED_XA:
            extra += " xa-prepare"
        if self.gtid_flags & self.FL_COMPLETED_XA:
            extra += " xa-complete"
        return f"GTID {self.gtid}{extra}"


@dataclass(slots=True, eq=False, kw_only=True)
class PreviousGtidsEvent(Event):
    """MySQL's PREVIOUS_GTIDS_LOG_EVENT: the GTID set executed before this binlog file."""

    gtid_set: MySQLGtidSet

    def describe(self) -> str:
        return f"previous GTIDs [{self.gtid_set}]"


@dataclass(slots=True, eq=False, kw_only=True)
class MariadbGtidListEvent(Event):
    """MariaDB's GTID_LIST_EVENT: the last GTID of each replication domain before this binlog file."""

    gtid_set: MariaDBGtidSet
    list_flags: int = 0

    def describe(self) -> str:
        return f"GTID list [{self.gtid_set}]"


@dataclass(slots=True, eq=False, kw_only=True)
class BinlogCheckpointEvent(Event):
    """MariaDB's BINLOG_CHECKPOINT_EVENT: the oldest binlog file crash recovery may still need."""

    checkpoint_file: str

    def describe(self) -> str:
        return f"checkpoint {self.checkpoint_file}"


# ``event.schema`` and ``event.table_name`` of table maps and rows events: properties whose getter is C
# (operator.attrgetter), read for every event by routers and filters; a Python getter costs a frame per read
_SCHEMA = property(attrgetter("table.schema"), doc="The table's schema (database).")
_TABLE_NAME = property(attrgetter("table.name"), doc="The table's name.")


@dataclass(slots=True, eq=False, kw_only=True)
class TableMapEvent(Event):
    """TABLE_MAP_EVENT: the table (schema, name, columns) that the rows events after it refer to by ``table_id``."""

    table_id: int
    table: TableMap

    if TYPE_CHECKING:

        @property
        def schema(self) -> str: ...

        @property
        def table_name(self) -> str: ...

    else:  # the getters in C (see _SCHEMA): no Python frame per read
        schema = _SCHEMA
        table_name = _TABLE_NAME

    def describe(self) -> str:
        return f"table_id {self.table_id} `{self.table.schema}`.`{self.table.name}` ({self.table.column_count} columns)"




@dataclass(slots=True, eq=False, kw_only=True)
class RowsEvent(Event):
    """Base of WRITE/UPDATE/DELETE rows events (v1, v2, MariaDB compressed).

    ``rows`` is a list of tuples of column values (for updates: a list of ``(before, after)`` pairs of tuples),
    decoded on first access. Columns missing from a minimal image are :data:`MISSING`.
    """

    kind: ClassVar[str] = ""
    _image_mode: ClassVar[int] = 0  # 0: one image per row, 1: before/after pairs, 2: pairs with JSON diffs

    table_id: int
    rows_flags: int
    table: TableMap
    body: bytes
    rows_start: int
    rows_end: int
    present: int  # bitmap of columns present in the (before) image
    present_after: int  # bitmap for the after image (updates), equal to present otherwise
    extra_data: bytes = b""  # v2 rows events: the extra row info after its 2-byte length (usually empty)
    _rows: list[Any] | None = field(default=None, repr=False)

    if TYPE_CHECKING:

        @property
        def schema(self) -> str: ...

        @property
        def table_name(self) -> str: ...

        @property
        def columns(self) -> tuple[str | None, ...]: ...

    else:  # the getters in C (see _SCHEMA): no Python frame per read
        schema = _SCHEMA
        table_name = _TABLE_NAME
        columns = property(attrgetter("table.column_names"), doc="The column names (None without full metadata).")

    @property
    def rows(self) -> list[Any]:
        rows = self._rows
        if rows is None:
            rows = self._rows = self.table.decode_rows(self)
        return rows

    def _extra_info(self) -> tuple[int | None, int | None, tuple[int, bytes] | None]:
        """(partition_id, source_partition_id, (ndb_format, ndb_data)) from ``extra_data``."""
        data = self.extra_data
        partition_id = source_partition_id = None
        ndb: tuple[int, bytes] | None = None
        pos = 0
        try:
            while pos < len(data):
                tag = data[pos]
                if tag == 0:  # RW_V_EXTRAINFO_TAG / NDB_INFO: length (incl. its 2-byte header), format, data
                    length = data[pos + 1]
                    ndb = (data[pos + 2], bytes(data[pos + 3 : pos + 1 + length]))
                    pos += 1 + length
                elif tag == 1:  # PART_INFO: partition id, plus the source partition for updates
                    partition_id = data[pos + 1] | data[pos + 2] << 8
                    pos += 3
                    if self.kind == "update":
                        source_partition_id = data[pos] | data[pos + 1] << 8
                        pos += 2
                else:  # unknown extra info: its length is unknowable
                    break
        except IndexError:
            pass
        return partition_id, source_partition_id, ndb

    @property
    def partition_id(self) -> int | None:
        """The partition the row(s) went to (MySQL 8.0.16+ extra row info for partitioned tables)."""
        return self._extra_info()[0]

    @property
    def source_partition_id(self) -> int | None:
        """For updates that move a row between partitions: the partition it came from."""
        return self._extra_info()[1]

    @property
    def ndb_info(self) -> tuple[int, bytes] | None:
        """NDB cluster extra row info as (format, data), or None."""
        return self._extra_info()[2]

    def describe(self) -> str:
        return f"`{self.table.schema}`.`{self.table.name}` table_id {self.table_id}"


@dataclass(slots=True, eq=False, kw_only=True)
class WriteRowsEvent(RowsEvent):
    """WRITE_ROWS_EVENT (v1, v2, MariaDB compressed): inserted rows."""

    kind: ClassVar[str] = "insert"


@dataclass(slots=True, eq=False, kw_only=True)
class UpdateRowsEvent(RowsEvent):
    """UPDATE_ROWS_EVENT (v1, v2, MariaDB compressed, MySQL partial JSON): ``rows`` are ``(before, after)`` pairs."""

    kind: ClassVar[str] = "update"
    _image_mode: ClassVar[int] = 1


@dataclass(slots=True, eq=False, kw_only=True)
class PartialUpdateRowsEvent(UpdateRowsEvent):
    """MySQL 8.0 PARTIAL_UPDATE_ROWS_EVENT (binlog_row_value_options=PARTIAL_JSON).

    In after images, JSON columns updated in place hold a list of :class:`JsonDiff` instead of a document;
    ``apply_json_diffs(before_value, diffs)`` rebuilds the new document.
    """

    kind: ClassVar[str] = "update"
    _image_mode: ClassVar[int] = 2


@dataclass(slots=True, eq=False, kw_only=True)
class DeleteRowsEvent(RowsEvent):
    """DELETE_ROWS_EVENT (v1, v2, MariaDB compressed): deleted rows."""

    kind: ClassVar[str] = "delete"


@dataclass(slots=True, eq=False, kw_only=True)
class RowsQueryEvent(Event):
    """MySQL's ROWS_QUERY_LOG_EVENT: the statement behind the rows events that follow
    (``binlog_rows_query_log_events``)."""

    query: str

    def describe(self) -> str:
        return self.query


@dataclass(slots=True, eq=False, kw_only=True, init=False, repr=False)
class AnnotateRowsEvent(Event):
    """MariaDB's ANNOTATE_ROWS: the text of the statement whose rows events follow (``binlog_annotate_row_events``).

    The decoder keeps the text's bytes; ``query`` decodes them on first access (UTF-8, invalid bytes replaced),
    so readers that never look at it do not pay for it (on multi-row INSERTs it is often half of the binlog).
    """

    _query: str | bytes

    def __init__(self, *, query: str | bytes | None = None, _query: str | bytes | None = None, **header: Any) -> None:
        # _query: the field's own name, which dataclasses.replace() passes
        text = query if query is not None else _query
        if text is None:
            raise TypeError("AnnotateRowsEvent() needs query")
        Event.__init__(self, **header)
        self._query = text

    @property
    def query(self) -> str:
        q = self._query
        if type(q) is bytes:
            q = self._query = q.decode("utf-8", "replace")
        return q  # type: ignore[return-value]

    def __repr__(self) -> str:
        fields = [f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(Event)]
        return f"{type(self).__qualname__}({', '.join(fields)}, query={self.query!r})"

    def describe(self) -> str:
        return self.query


@dataclass(slots=True, eq=False, kw_only=True)
class HeartbeatEvent(Event):
    """HEARTBEAT_LOG_EVENT (v1: position in the header's log_pos) and HEARTBEAT_LOG_EVENT_V2."""

    log_file: str
    position: int
    version: int = 1

    def describe(self) -> str:
        return f"heartbeat {self.log_file}:{self.position}"


@dataclass(slots=True, eq=False, kw_only=True)
class TransactionPayloadEvent(Event):
    """MySQL 8.0.20+ compressed transaction; ``events`` are the decoded inner events (no checksums, log_pos 0)."""

    compression_type: int
    payload_size: int
    uncompressed_size: int
    events: list[Event]

    def describe(self) -> str:
        kind = {0: "zstd", 255: "none"}.get(self.compression_type, str(self.compression_type))
        return f"{kind} {self.payload_size} -> {self.uncompressed_size} bytes, {len(self.events)} events"


@dataclass(slots=True, eq=False, kw_only=True)
class XaPrepareEvent(Event):
    """XA_PREPARE_LOG_EVENT: an XA transaction prepared (or committed in one phase)."""

    one_phase: bool
    format_id: int
    gtrid: bytes
    bqual: bytes

    def describe(self) -> str:
        # the form of the server's XA COMMIT/ROLLBACK statements, so that a reader can pair them up
        xid = f"X'{self.gtrid.hex()}',X'{self.bqual.hex()}',{self.format_id}"
        return f"XA COMMIT {xid} ONE PHASE" if self.one_phase else f"XA PREPARE {xid}"


@dataclass(slots=True, eq=False, kw_only=True)
class IntvarEvent(Event):
    """INTVAR_EVENT: LAST_INSERT_ID or INSERT_ID for the next statement (statement format)."""

    INVALID_INT: ClassVar[int] = 0
    LAST_INSERT_ID: ClassVar[int] = 1
    INSERT_ID: ClassVar[int] = 2

    intvar_type: int
    value: int

    def describe(self) -> str:
        name = {1: "LAST_INSERT_ID", 2: "INSERT_ID"}.get(self.intvar_type, str(self.intvar_type))
        return f"{name}={self.value}"


@dataclass(slots=True, eq=False, kw_only=True)
class RandEvent(Event):
    """RAND_EVENT: the RAND() seeds for the next statement (statement format)."""

    seed1: int
    seed2: int

    def describe(self) -> str:
        return f"rand seeds {self.seed1},{self.seed2}"


@dataclass(slots=True, eq=False, kw_only=True)
class UserVarEvent(Event):
    """USER_VAR_EVENT: a user variable the next statement uses (statement format)."""

    name: str
    is_null: bool
    value_type: int | None = None
    charset: int | None = None
    value: bytes | None = None
    var_flags: int = 0

    def describe(self) -> str:
        return f"@`{self.name}`" + ("=NULL" if self.is_null else f"={self.value!r}")


@dataclass(slots=True, eq=False, kw_only=True)
class IncidentEvent(Event):
    """INCIDENT_EVENT: the server lost events here (a replica must stop or resynchronize)."""

    incident: int
    message: str

    def describe(self) -> str:
        return f"incident {self.incident}: {self.message}"


@dataclass(slots=True, eq=False, kw_only=True)
class OtherEvent(Event):
    """A known event type with no structured decoding here (e.g. legacy LOAD DATA events, ignorable events,
    group replication's TRANSACTION_CONTEXT/VIEW_CHANGE). ``body`` holds the raw body without checksum."""

    body: bytes

    def describe(self) -> str:
        return f"{len(self.body)} bytes"


ROWS_EVENT_CLASSES: dict[int, type[RowsEvent]] = {
    EventType.WRITE_ROWS_EVENT_V1: WriteRowsEvent,
    EventType.UPDATE_ROWS_EVENT_V1: UpdateRowsEvent,
    EventType.DELETE_ROWS_EVENT_V1: DeleteRowsEvent,
    EventType.WRITE_ROWS_EVENT: WriteRowsEvent,
    EventType.UPDATE_ROWS_EVENT: UpdateRowsEvent,
    EventType.DELETE_ROWS_EVENT: DeleteRowsEvent,
    EventType.PARTIAL_UPDATE_ROWS_EVENT: PartialUpdateRowsEvent,
    EventType.WRITE_ROWS_COMPRESSED_EVENT_V1: WriteRowsEvent,
    EventType.UPDATE_ROWS_COMPRESSED_EVENT_V1: UpdateRowsEvent,
    EventType.DELETE_ROWS_COMPRESSED_EVENT_V1: DeleteRowsEvent,
    EventType.WRITE_ROWS_COMPRESSED_EVENT: WriteRowsEvent,
    EventType.UPDATE_ROWS_COMPRESSED_EVENT: UpdateRowsEvent,
    EventType.DELETE_ROWS_COMPRESSED_EVENT: DeleteRowsEvent,
}


_E = TypeVar("_E", bound=Event)
_HEADER_FIELDS = ("timestamp", "type_code", "server_id", "size", "log_pos", "flags", "offset", "file")


def fields_of_header() -> tuple[str, ...]:
    """The header fields every event starts with, in order (the compiled core builds events in this order)."""
    return _HEADER_FIELDS


_FAST: dict[type, Callable[..., Any]] = {}


def fast_constructor(cls: type[_E]) -> Callable[..., _E]:
    """A positional constructor for the decoder's hot path, equivalent to the keyword-only dataclass one.

    ``make(timestamp, type_code, server_id, size, log_pos, flags, offset, file, *own_fields)``: the header
    fields, then the class's own fields in declaration order (those with defaults may be left out). It skips
    the keyword matching of the generated ``__init__`` (about 3x cheaper per event); the public constructor
    is unchanged. Made once per class (:func:`fast_constructors` makes many in one compile).
    """
    make = _FAST.get(cls)
    if make is None:
        fast_constructors([cls])
        make = _FAST[cls]
    return make


def fast_constructors(classes: Iterable[type[Event]]) -> None:
    """Make the fast constructors of ``classes`` (one ``compile`` for all of them: it is most of their cost)."""
    ns: dict[str, Any] = {"_new": object.__new__}
    sources: list[str] = []
    made: list[tuple[type, str]] = []
    for k, cls in enumerate(dict.fromkeys(c for c in classes if c not in _FAST)):
        own = [f for f in dataclasses.fields(cls) if f.name not in _HEADER_FIELDS and f.name != "in_payload"]
        params = list(_HEADER_FIELDS)
        ns[f"_cls{k}"] = cls
        for f in own:
            if f.default is not dataclasses.MISSING:
                ns[f"_d{k}_{f.name}"] = f.default
                params.append(f"{f.name}=_d{k}_{f.name}")
            else:
                params.append(f.name)
        body = [f"    self = _new(_cls{k})"]
        body += [f"    self.{name} = {name}" for name in _HEADER_FIELDS]
        body.append("    self.in_payload = False")
        body += [f"    self.{f.name} = {f.name}" for f in own]
        body.append("    return self")
        sources.append(f"def make{k}({', '.join(params)}):\n" + "\n".join(body))
        made.append((cls, f"make{k}"))
    if not made:
        return
    exec(compile("\n\n".join(sources), "<mybinlog fast constructors>", "exec"), ns)
    for cls, name in made:
        _FAST[cls] = ns[name]
