"""The sans-IO binlog event decoder: bytes in, events out.

:class:`EventDecoder` holds the state a binlog stream carries between events (the current FORMAT_DESCRIPTION,
checksum algorithm and table maps) and turns one complete event (19-byte header, body, optional CRC32) into an
:class:`~mybinlog.Event`. It performs no IO and imports nothing that does: the network source and the file reader
both feed it.
"""

from __future__ import annotations

import dataclasses
import re
import struct
import zlib
from collections.abc import Callable, Iterable
from itertools import repeat
from typing import Any

from ..errors import ChecksumError, DecodeError, TruncatedError, UnknownEventError
from ._accel import speedups
from ._constants import (
    BINLOG_CHECKSUM_ALG_CRC32,
    CHECKSUM_LEN,
    HEADER_LEN,
    LOG_EVENT_ARTIFICIAL_F,
    LOG_EVENT_BINLOG_IN_USE_F,
    LOG_EVENT_IGNORABLE_F,
    EventType,
    collation_codec,
    event_type_name,
)
from ._events import (
    ROWS_EVENT_CLASSES,
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
    fast_constructor,
    fast_constructors,
    fields_of_header,
)
from ._gtid import MariaDBGtid, MariaDBGtidSet, MySQLGtid, MySQLGtidSet
from ._reader import read_packed_int
from ._table import TableMap, parse_table_map_body, table_names_or_none

__all__ = ["EventDecoder", "parse_header"]

_HEADER = struct.Struct("<IBIIIH")
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_Q_POST = struct.Struct("<IIBHH")
_TID6_FLAGS = struct.Struct("<IHH")  # rows event: 6-byte table id (low 4, high 2), flags
_TID4_FLAGS = struct.Struct("<IH")  # rows event of a 5.1.x server: 4-byte table id, flags
_crc32 = zlib.crc32
_unpack_header = _HEADER.unpack_from
_from_bytes = int.from_bytes
_CRC32_RESIDUE = 0x2144DF1C  # zlib.crc32(message + crc32(message) as 4 little-endian bytes), for any message

# the common header as the handlers receive it: timestamp, type_code, server_id, size, log_pos, flags,
# offset, file (the positional prefix of every fast constructor)
_Header = tuple[int, int, int, int, int, int, "int | None", "str | None"]

_FDE = int(EventType.FORMAT_DESCRIPTION_EVENT)
_ROTATE = int(EventType.ROTATE_EVENT)
_QUERY = int(EventType.QUERY_EVENT)
_QUERY_COMPRESSED = int(EventType.QUERY_COMPRESSED_EVENT)
_XID = int(EventType.XID_EVENT)
_TABLE_MAP = int(EventType.TABLE_MAP_EVENT)
_ANNOTATE_ROWS = int(EventType.ANNOTATE_ROWS_EVENT)
_HEARTBEAT = int(EventType.HEARTBEAT_LOG_EVENT)
_HEARTBEAT_V2 = int(EventType.HEARTBEAT_LOG_EVENT_V2)
_V2_ROWS = frozenset({30, 31, 32, 39})
_UPDATE_ROWS = frozenset(int(c) for c, cls in ROWS_EVENT_CLASSES.items() if cls.kind == "update") | {21}
_COMPRESSED_ROWS_MIN = int(EventType.WRITE_ROWS_COMPRESSED_EVENT_V1)

fast_constructors(
    [FormatDescriptionEvent, RotateEvent, StopEvent, OtherEvent, QueryEvent, XidEvent, TableMapEvent, GtidEvent,
     MariadbGtidEvent, MariadbGtidListEvent, PreviousGtidsEvent, RowsQueryEvent, AnnotateRowsEvent, HeartbeatEvent,
     TransactionPayloadEvent, XaPrepareEvent, IntvarEvent, RandEvent, UserVarEvent, IncidentEvent,
     BinlogCheckpointEvent, *ROWS_EVENT_CLASSES.values()]
)  # fmt: skip
_new_fde = fast_constructor(FormatDescriptionEvent)
_new_rotate = fast_constructor(RotateEvent)
_new_stop = fast_constructor(StopEvent)
_new_other = fast_constructor(OtherEvent)
_new_query = fast_constructor(QueryEvent)
_new_xid = fast_constructor(XidEvent)
_new_table_map = fast_constructor(TableMapEvent)
_new_gtid = fast_constructor(GtidEvent)
_new_mariadb_gtid = fast_constructor(MariadbGtidEvent)
_new_gtid_list = fast_constructor(MariadbGtidListEvent)
_new_previous_gtids = fast_constructor(PreviousGtidsEvent)
_new_rows_query = fast_constructor(RowsQueryEvent)
_new_annotate = fast_constructor(AnnotateRowsEvent)
_new_heartbeat = fast_constructor(HeartbeatEvent)
_new_payload = fast_constructor(TransactionPayloadEvent)
_new_xa_prepare = fast_constructor(XaPrepareEvent)
_new_intvar = fast_constructor(IntvarEvent)
_new_rand = fast_constructor(RandEvent)
_new_user_var = fast_constructor(UserVarEvent)
_new_incident = fast_constructor(IncidentEvent)
_new_checkpoint = fast_constructor(BinlogCheckpointEvent)
_ROWS_NEW: dict[int, Callable[..., RowsEvent]] = {
    int(code): fast_constructor(cls) for code, cls in ROWS_EVENT_CLASSES.items()
}
# plain v1/v2 WRITE/UPDATE/DELETE rows events: decoded inline by EventDecoder.decode
_FAST_ROWS: dict[int, Callable[..., RowsEvent]] = {code: _ROWS_NEW[code] for code in (23, 24, 25, 30, 31, 32)}
_PRE_GA_NEW: dict[int, Callable[..., RowsEvent]] = {
    20: fast_constructor(WriteRowsEvent),
    21: fast_constructor(UpdateRowsEvent),
    22: fast_constructor(DeleteRowsEvent),
}

_C_ROWS_FIELDS = (
    "table_id", "rows_flags", "table", "body", "rows_start", "rows_end", "present", "present_after", "extra_data",
    "_rows",
)  # fmt: skip


def _c_decode_events() -> Callable[..., int] | None:
    """The compiled core's fast loop (_sp_events.c decode_events), once it knows the event classes' slots; None
    when the extension is absent or the classes are not laid out the way it builds them."""
    if speedups is None:
        return None
    header = (*fields_of_header(), "in_payload")
    classes = [(TableMapEvent, ("table_id", "table")), (AnnotateRowsEvent, ("_query",))]
    classes += [(ROWS_EVENT_CLASSES[code], _C_ROWS_FIELDS) for code in (23, 24, 25, 30, 31, 32)]
    spec = []
    for cls, own in classes:
        names = tuple(f.name for f in dataclasses.fields(cls))
        if names != (*header, *own):
            return None
        spec.append((cls, names))
    speedups.set_event_classes(tuple(spec))
    fn: Callable[..., int] = speedups.decode_events
    return fn


_decode_events = _c_decode_events()

# Types that carry nothing we model but are legitimate in old or special binlogs.
_RAW_TYPES = frozenset(
    {
        EventType.START_EVENT_V3,
        EventType.LOAD_EVENT,
        EventType.SLAVE_EVENT,
        EventType.CREATE_FILE_EVENT,
        EventType.APPEND_BLOCK_EVENT,
        EventType.EXEC_LOAD_EVENT,
        EventType.DELETE_FILE_EVENT,
        EventType.NEW_LOAD_EVENT,
        EventType.BEGIN_LOAD_QUERY_EVENT,
        EventType.IGNORABLE_LOG_EVENT,
        EventType.TRANSACTION_CONTEXT_EVENT,
        EventType.VIEW_CHANGE_EVENT,
    }
)

_VERSION_RE = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def parse_header(data: bytes) -> tuple[int, int, int, int, int, int]:
    """(timestamp, type_code, server_id, event_size, log_pos, flags) of an event's 19-byte header."""
    if len(data) < HEADER_LEN:
        raise TruncatedError(f"event header needs {HEADER_LEN} bytes, got {len(data)}")
    return _HEADER.unpack_from(data)


def _checksum_capable(server_version: str) -> bool:
    m = _VERSION_RE.match(server_version)
    if m is None:
        return False
    version = tuple(int(x) for x in m.groups())
    if "mariadb" in server_version.lower():
        return version >= (5, 3, 0)
    return version >= (5, 6, 1)


class EventDecoder:
    """Decode complete binlog events, one at a time, keeping the stream's state.

    ``checksum`` says whether events before the first FORMAT_DESCRIPTION carry a CRC32 (the network source knows
    this from its negotiation; files always start with a FORMAT_DESCRIPTION, which settles it).
    ``verify_checksum`` checks every CRC32 (zlib's C implementation: cheap next to decoding).
    ``network=True`` is for events of a server's binlog dump: an event decoded without an explicit ``offset``
    gets ``log_pos - size`` (unless it is artificial or a heartbeat, whose log_pos is not its end), and
    ``file`` follows the ROTATE events (a ROTATE belongs to the file it ends, the server's artificial ROTATE at
    the start of a dump to the file it names; the events after either belong to the named file).

    Speed: :meth:`decode_batch` decodes many events in one loop. It unpacks each header once, verifies the
    CRC32 in one pass (a message followed by its CRC32 always has the same CRC32, so nothing is sliced), builds
    events with positional constructors, and handles the bulk of every binlog inline: a TABLE_MAP whose bytes
    were seen before costs one dict lookup, a plain rows event a few slices (its rows are decoded only when
    ``RowsEvent.rows`` is read). Everything else goes through one handler per event type.
    """

    def __init__(
        self,
        *,
        checksum: bool = False,
        verify_checksum: bool = True,
        file: str | None = None,
        network: bool = False,
    ) -> None:
        self.format: FormatDescriptionEvent | None = None
        self.file = file
        self.verify_checksum = verify_checksum
        self.network = network
        self._crc = checksum
        self._table_id_len = 6
        self._post_header: bytes = b""
        self._table_maps: dict[int, TableMap] = {}
        self._table_cache: dict[bytes, TableMap] = {}
        # TABLE_MAP bytes after the header (table id included) -> (table id, table): the common case, a table
        # map seen before, costs one lookup. Cleared at every FORMAT_DESCRIPTION (table id width may change).
        self._table_map_hits: dict[bytes, tuple[int, TableMap]] = {}
        self._mariadb = False  # flavor of the current FORMAT_DESCRIPTION: changes how table maps are read
        self._dispatch: dict[int, Callable[[bytes, int, _Header], Event]] = {
            _ROTATE: self._rotate,
            _QUERY: self._query,
            _QUERY_COMPRESSED: self._query,
            _XID: self._xid,
            EventType.STOP_EVENT: self._stop,
            _TABLE_MAP: self._table_map,
            EventType.GTID_LOG_EVENT: self._gtid,
            EventType.ANONYMOUS_GTID_LOG_EVENT: self._gtid,
            EventType.GTID_TAGGED_LOG_EVENT: self._gtid_tagged,
            EventType.PREVIOUS_GTIDS_LOG_EVENT: self._previous_gtids,
            EventType.ROWS_QUERY_LOG_EVENT: self._rows_query,
            EventType.HEARTBEAT_LOG_EVENT: self._heartbeat,
            EventType.HEARTBEAT_LOG_EVENT_V2: self._heartbeat_v2,
            EventType.TRANSACTION_PAYLOAD_EVENT: self._payload,
            EventType.XA_PREPARE_LOG_EVENT: self._xa_prepare,
            EventType.INTVAR_EVENT: self._intvar,
            EventType.RAND_EVENT: self._rand,
            EventType.USER_VAR_EVENT: self._user_var,
            EventType.INCIDENT_EVENT: self._incident,
            EventType.EXECUTE_LOAD_QUERY_EVENT: self._query,
            EventType.ANNOTATE_ROWS_EVENT: self._annotate,
            EventType.BINLOG_CHECKPOINT_EVENT: self._checkpoint,
            EventType.MARIADB_GTID_EVENT: self._mariadb_gtid,
            EventType.MARIADB_GTID_LIST_EVENT: self._mariadb_gtid_list,
            EventType.START_ENCRYPTION_EVENT: self._start_encryption,
        }
        for code in ROWS_EVENT_CLASSES:
            self._dispatch[code] = self._rows
        for code in (20, 21, 22):  # 5.1 pre-GA rows events: v1 layout
            self._dispatch[code] = self._rows
        for code in _RAW_TYPES:
            self._dispatch[code] = self._raw
        self._dispatch = {int(k): v for k, v in self._dispatch.items()}  # plain int keys: faster lookups

    # ------------------------------------------------------------------------------------------------
    @property
    def checksum(self) -> bool:
        """Whether the events currently being decoded end with a CRC32."""
        return self._crc

    def table_map(self, table_id: int) -> TableMap | None:
        return self._table_maps.get(table_id)

    def decode(self, data: bytes, offset: int | None = None) -> Event:
        """Decode one complete event (header + body + checksum if any).

        Raises :class:`DecodeError` subclasses naming the event type and ``offset`` on malformed input, and
        :class:`UnknownEventError` for an unknown type without LOG_EVENT_IGNORABLE_F.
        """
        out: list[Event] = []
        self.decode_batch((data,), out, (offset,))
        return out[0]

    def decode_batch(
        self, raws: Iterable[bytes], out: list[Event], offsets: Iterable[int | None] | None = None
    ) -> None:
        """Decode complete events in order, appending them to ``out`` (``offsets``: each event's offset).

        Same results and errors as calling :meth:`decode` for each; on an error, ``out`` holds the events
        before the bad one. With the compiled core, its loop decodes the bulk and stops at any other event, which
        the pure-Python loop below then decodes.
        """
        fast = _decode_events
        if fast is not None:
            raws = raws if type(raws) is list else list(raws)
            offs = None if offsets is None else offsets if type(offsets) is list else list(offsets)
            i, n = 0, len(raws)
            while i < n:
                file, trailer, verify, network, tid6 = self._fast_state()
                i = fast(raws, offs, i, out, file, trailer, verify, network, tid6, self._table_map_hits,
                         self._table_maps)  # fmt: skip
                if i < n:
                    self._decode_batch_python(raws[i : i + 1], out, None if offs is None else offs[i : i + 1])
                    i += 1
            return
        self._decode_batch_python(raws, out, offsets)

    def _decode_batch_python(
        self, raws: Iterable[bytes], out: list[Event], offsets: Iterable[int | None] | None = None
    ) -> None:
        append = out.append
        hits_get = self._table_map_hits.get
        table_maps = self._table_maps
        tid_unpack = _TID6_FLAGS.unpack_from
        fast_rows = _FAST_ROWS
        new_table_map = _new_table_map
        new_annotate = _new_annotate
        crc32 = _crc32
        unpack_header = _unpack_header
        file, trailer, verify, network, tid6 = self._fast_state()
        # literals in the loop: 19 = HEADER_LEN, 0x2144DF1C = _CRC32_RESIDUE, 0x20 = LOG_EVENT_ARTIFICIAL_F,
        # 19 = TABLE_MAP, 160 = ANNOTATE_ROWS, 24/31 = UPDATE_ROWS v1/v2
        for data, offset in zip(raws, offsets if offsets is not None else repeat(None), strict=False):
            # Fast paths for the bulk of every binlog: a TABLE_MAP seen before, and plain rows events. Anything
            # unusual (including every error) goes to _decode_one, which decodes or rejects every case.
            n = len(data)
            if n >= 19 and type(data) is bytes:
                timestamp, type_code, server_id, size, log_pos, flags = unpack_header(data)
                end = size - trailer
                if size == n and end >= 19 and not (verify and crc32(data) != 0x2144DF1C):
                    if offset is None and network and log_pos >= size and not flags & 0x20:
                        offset = log_pos - size
                    if type_code == 19:
                        hit = hits_get(data[19:end])
                        if hit is not None:
                            table_id, table = hit
                            table_maps[table_id] = table
                            append(
                                new_table_map(
                                    timestamp, type_code, server_id, size, log_pos, flags, offset, file, table_id,
                                    table,
                                )
                            )  # fmt: skip
                            continue
                    elif type_code == 160:  # ANNOTATE_ROWS (MariaDB files: one before every rows event)
                        append(
                            new_annotate(
                                timestamp, type_code, server_id, size, log_pos, flags, offset, file, data[19:end],
                            )
                        )  # fmt: skip
                        continue
                    elif type_code in fast_rows and tid6:
                        low, high, rows_flags = tid_unpack(data, 19)
                        table_id = low | high << 32
                        maybe_table = table_maps.get(table_id)
                        pos = 27
                        if type_code >= 30:  # v2: extra data, usually only its own 2-byte length
                            pos = 29 if data[27] == 2 and not data[28] else 0
                        if maybe_table is not None and pos and pos + 2 < end:
                            table = maybe_table
                            ncols = data[pos]
                            if ncols == table.column_count and ncols < 0xFB:
                                pos += 1
                                if 0 < ncols <= 8:  # one bitmap byte
                                    present = data[pos]
                                    pos += 1
                                    if type_code == 24 or type_code == 31:
                                        present_after = data[pos]
                                        pos += 1
                                    else:
                                        present_after = present
                                else:
                                    nb = (ncols + 7) >> 3
                                    present = _from_bytes(data[pos : pos + nb], "little")
                                    pos += nb
                                    if type_code == 24 or type_code == 31:
                                        present_after = _from_bytes(data[pos : pos + nb], "little")
                                        pos += nb
                                    else:
                                        present_after = present
                                if pos <= end:
                                    append(
                                        fast_rows[type_code](
                                            timestamp, type_code, server_id, size, log_pos, flags, offset, file,
                                            table_id, rows_flags, table, data, pos, end, present, present_after,
                                            b"",
                                        )
                                    )  # fmt: skip
                                    continue
            append(self._decode_one(data, offset))
            file, trailer, verify, network, tid6 = self._fast_state()  # an FDE or a ROTATE may change them

    def _fast_state(self) -> tuple[str | None, int, bool, bool, bool]:
        """What decode_batch's fast paths depend on: file, checksum bytes, verify, network, 6-byte table ids."""
        return (
            self.file,
            CHECKSUM_LEN if self._crc else 0,
            self._crc and self.verify_checksum,
            self.network,
            self._table_id_len == 6,
        )

    def _decode_one(self, data: bytes, offset: int | None) -> Event:
        """Decode one event through its type's handler (every case, every error)."""
        if len(data) < HEADER_LEN:
            raise TruncatedError(
                f"event needs at least {HEADER_LEN} header bytes, got {len(data)}", file=self.file, offset=offset
            )
        timestamp, type_code, server_id, size, log_pos, flags = _unpack_header(data)
        if size != len(data):
            cls = TruncatedError if size > len(data) else DecodeError
            raise cls(
                f"{event_type_name(type_code)} header says {size} bytes but {len(data)} were given",
                file=self.file,
                offset=offset,
                type_code=type_code,
            )
        if (
            offset is None
            and self.network
            and log_pos >= size
            and not flags & LOG_EVENT_ARTIFICIAL_F
            and type_code != _HEARTBEAT
            and type_code != _HEARTBEAT_V2
        ):
            offset = log_pos - size
        try:
            header = (timestamp, type_code, server_id, size, log_pos, flags, offset, self.file)
            if type_code == _FDE:
                return self._fde(data, size, header)
            end = size
            if self._crc:
                end -= CHECKSUM_LEN
                if end < HEADER_LEN:
                    raise TruncatedError(f"{event_type_name(type_code)} is too short to hold its checksum")
                # the CRC32 of an event including its stored (correct) CRC32 is always the residue constant
                if self.verify_checksum and _crc32(data) != _CRC32_RESIDUE:
                    raise self._checksum_error(data, end, type_code)
            handler = self._dispatch.get(type_code)
            if handler is None:
                if flags & LOG_EVENT_IGNORABLE_F:
                    return _new_other(*header, data[HEADER_LEN:end])
                raise UnknownEventError(
                    f"unknown binlog event type {type_code} (not flagged ignorable); this server writes events "
                    "mybinlog does not know: upgrade mybinlog or report the server version"
                )
            return handler(data, end, header)
        except DecodeError as exc:
            if exc.type_code is None:
                exc.type_code = type_code
            raise exc.locate(file=self.file, offset=offset) from None
        except (IndexError, struct.error, ValueError, UnicodeDecodeError, zlib.error, OverflowError) as exc:
            raise DecodeError(
                f"malformed {event_type_name(type_code)} ({size} bytes): {exc}",
                file=self.file,
                offset=offset,
                type_code=type_code,
            ) from exc

    @staticmethod
    def _checksum_error(data: bytes, end: int, type_code: int) -> DecodeError:
        expected = _U32.unpack_from(data, end)[0]
        actual = zlib.crc32(memoryview(data)[:end])
        return ChecksumError(
            f"CRC32 mismatch in {event_type_name(type_code)}: stored 0x{expected:08x}, "
            f"computed 0x{actual:08x}; the binlog is corrupt (or was altered after writing)"
        )

    # ------------------------------------------------------------------------------------------------
    def _post_header_len(self, type_code: int, default: int) -> int:
        ph = self._post_header
        if 0 < type_code <= len(ph):
            return ph[type_code - 1]
        return default

    def _fde(self, data: bytes, size: int, h: _Header) -> Event:
        if size < HEADER_LEN + 2 + 50 + 4 + 1:
            raise TruncatedError("FORMAT_DESCRIPTION event is too short")
        binlog_version = _U16.unpack_from(data, 19)[0]
        server_version = data[21:71].split(b"\0", 1)[0].decode("ascii", "replace")
        create_timestamp = _U32.unpack_from(data, 71)[0]
        header_length = data[75]
        if binlog_version != 4 or header_length != HEADER_LEN:
            raise DecodeError(
                f"binlog format version {binlog_version} (header length {header_length}) is not supported; "
                "mybinlog reads binlog v4 (MySQL 5.0 and later, all MariaDB)"
            )
        checksum_alg: int | None = None
        end = size
        if _checksum_capable(server_version):
            checksum_alg = data[size - 5]
            end = size - 5
            if checksum_alg == BINLOG_CHECKSUM_ALG_CRC32 and self.verify_checksum:
                stored = _U32.unpack_from(data, size - 4)[0]
                view = bytearray(data[: size - 4])
                actual = zlib.crc32(view)
                if actual != stored and h[5] & LOG_EVENT_BINLOG_IN_USE_F:
                    view[17] &= ~LOG_EVENT_BINLOG_IN_USE_F & 0xFF
                    actual = zlib.crc32(view)
                if actual != stored:
                    raise ChecksumError(
                        f"CRC32 mismatch in FORMAT_DESCRIPTION_EVENT: stored 0x{stored:08x}, computed "
                        f"0x{actual:08x}; the binlog is corrupt"
                    )
        post_header = bytes(data[76:end])
        self._post_header = post_header
        self._crc = checksum_alg == BINLOG_CHECKSUM_ALG_CRC32
        tm_len = self._post_header_len(EventType.TABLE_MAP_EVENT, 8)
        self._table_id_len = 4 if tm_len == 6 else 6
        self._table_map_hits.clear()
        mariadb = "mariadb" in server_version.lower()
        if mariadb != self._mariadb:
            self._mariadb = mariadb
            self._table_cache.clear()  # cached table maps were parsed with the other flavor's rules
        event = _new_fde(
            *h,
            binlog_version,
            server_version,
            create_timestamp,
            header_length,
            post_header,
            checksum_alg,
        )
        self.format = event
        return event

    def _rotate(self, data: bytes, end: int, h: _Header) -> Event:
        ph = self._post_header_len(EventType.ROTATE_EVENT, 8) if self._post_header else 8
        position = _U64.unpack_from(data, 19)[0] if ph >= 8 else 4
        name = data[19 + ph : end].decode("utf-8", "replace")
        event = _new_rotate(*h, position, name)
        if self.network:
            if h[5] & LOG_EVENT_ARTIFICIAL_F:
                event.file = name  # the server's ROTATE at the start of a dump names the file it is in
            self.file = name or None
        return event

    def _stop(self, data: bytes, end: int, h: _Header) -> Event:
        return _new_stop(*h)

    def _raw(self, data: bytes, end: int, h: _Header) -> Event:
        return _new_other(*h, data[HEADER_LEN:end])

    def _query(self, data: bytes, end: int, h: _Header) -> Event:
        type_code = h[1]
        ph = self._post_header_len(type_code, 13)
        if type_code == EventType.QUERY_COMPRESSED_EVENT:
            ph = self._post_header_len(EventType.QUERY_EVENT, 13)
        thread_id, exec_time, schema_len, error_code, status_len = _Q_POST.unpack_from(data, 19)
        pos = 19 + ph
        status_end = pos + status_len
        charset_client, sql_mode = _parse_query_status(data, pos, status_end)
        pos = status_end
        schema = data[pos : pos + schema_len].decode("utf-8", "replace")
        pos += schema_len + 1
        # EXECUTE_LOAD_QUERY_EVENT: its extra post-header (file id, positions) is covered by ph
        raw = bytes(data[pos:end])
        compressed = type_code == EventType.QUERY_COMPRESSED_EVENT
        if compressed:
            raw = _mariadb_uncompress(raw)
        codec = collation_codec(charset_client) or "utf-8"
        try:
            query = raw.decode(codec)
        except (UnicodeDecodeError, LookupError):
            query = raw.decode("utf-8", "replace")
        if pos > end:
            raise TruncatedError("QUERY event ends inside its schema name")
        return _new_query(*h, thread_id, exec_time, error_code, schema, query, charset_client, sql_mode, compressed)

    def _xid(self, data: bytes, end: int, h: _Header) -> Event:
        if end - HEADER_LEN != 8:
            raise DecodeError(f"XID event body must be 8 bytes, got {end - HEADER_LEN}")
        return _new_xid(*h, _U64.unpack_from(data, 19)[0])

    def _table_map(self, data: bytes, end: int, h: _Header) -> Event:
        key = data[19:end]
        hit = self._table_map_hits.get(key)
        if hit is None:
            tl = self._table_id_len
            table_id = int.from_bytes(key[:tl], "little")
            body = key[tl:]
            table = self._table_cache.get(body)
            if table is None:
                table = self._parse_table_map(body, h)
                if len(self._table_cache) > 10_000:
                    self._table_cache.clear()
                self._table_cache[body] = table
            hit = (table_id, table)
            if len(self._table_map_hits) > 10_000:
                self._table_map_hits.clear()
            self._table_map_hits[key] = hit
        table_id, table = hit
        self._table_maps[table_id] = table
        return _new_table_map(*h, table_id, table)

    def _parse_table_map(self, body: bytes, h: _Header) -> TableMap:
        try:
            return parse_table_map_body(body, 0, mariadb=self._mariadb)[0]
        except (IndexError, struct.error, ValueError, UnicodeDecodeError, OverflowError) as exc:
            names = table_names_or_none(body)
            raise DecodeError(
                f"malformed {event_type_name(h[1])} ({h[3]} bytes): {exc}",
                schema=names[0] if names else None,
                table=names[1] if names else None,
            ) from exc

    def _rows(self, data: bytes, end: int, h: _Header) -> Event:
        type_code = h[1]
        new = _ROWS_NEW.get(type_code)
        if self._table_id_len == 6:
            low, high, rows_flags = _TID6_FLAGS.unpack_from(data, 19)
            table_id = low | high << 32
            pos = 27
        else:
            table_id, rows_flags = _TID4_FLAGS.unpack_from(data, 19)
            pos = 25
        extra_data = b""
        if type_code in _V2_ROWS:
            extra = _U16.unpack_from(data, pos)[0]
            if extra < 2:
                raise DecodeError(f"rows event extra-data length {extra} is invalid")
            if extra > 2:
                extra_data = bytes(data[pos + 2 : pos + extra])
            pos += extra
        table = self._table_maps.get(table_id)
        if table is None:
            if type_code in (20, 21, 22):
                # MySQL 5.1/5.2 pre-GA prototype rows events may come without TABLE_MAP: kept raw, not decodable
                return _new_other(*h, data[HEADER_LEN:end])
            raise DecodeError(
                f"{event_type_name(type_code)} refers to table_id {table_id} with no preceding TABLE_MAP; "
                "start reading at a transaction boundary (a GTID/BEGIN event), not in the middle of one"
            )
        if new is None:  # pre-GA (5.1) rows events
            new = _PRE_GA_NEW[type_code]
        try:
            body, pos, end, present, present_after = self._rows_layout(data, pos, end, type_code, table)
        except DecodeError as exc:
            raise exc.for_table(table.schema, table.name) from None
        except (IndexError, struct.error, ValueError, zlib.error, OverflowError) as exc:
            raise DecodeError(
                f"malformed {event_type_name(type_code)} ({h[3]} bytes): {exc}",
                schema=table.schema,
                table=table.name,
            ) from exc
        return new(*h, table_id, rows_flags, table, body, pos, end, present, present_after, extra_data)

    @staticmethod
    def _rows_layout(
        data: bytes, pos: int, end: int, type_code: int, table: TableMap
    ) -> tuple[bytes, int, int, int, int]:
        """Column count and bitmaps of a rows event: (body, rows_start, rows_end, present, present_after)."""
        body: bytes = data
        if pos < len(body) and body[pos] < 0xFB:
            ncols = body[pos]
            pos += 1
        else:
            ncols, pos = read_packed_int(body, pos)
        nb = (ncols + 7) >> 3
        if nb == 1 and pos < len(body):
            present = body[pos]
        else:
            present = int.from_bytes(body[pos : pos + nb], "little")
        pos += nb
        present_after = present
        if type_code in _UPDATE_ROWS:
            present_after = int.from_bytes(body[pos : pos + nb], "little")
            pos += nb
        if type_code >= _COMPRESSED_ROWS_MIN:
            # MariaDB log_bin_compress: column count and bitmaps stay plain, the row images are compressed
            body = bytes(data[:pos]) + _mariadb_uncompress(bytes(data[pos:end]))
            end = len(body)
        if pos > end:
            raise TruncatedError("rows event ends inside its column bitmaps")
        if ncols != table.column_count:
            raise DecodeError(
                f"{event_type_name(type_code)} for `{table.schema}`.`{table.name}` has {ncols} columns but "
                f"its TABLE_MAP has {table.column_count}"
            )
        if type(body) is not bytes:
            body = bytes(body)
        return body, pos, end, present, present_after

    def _gtid(self, data: bytes, end: int, h: _Header) -> Event:
        flags = data[19]
        sid = data[20:36]
        gno = _U64.unpack_from(data, 36)[0]
        pos = 44
        anonymous = h[1] == EventType.ANONYMOUS_GTID_LOG_EVENT
        gtid = None if anonymous else MySQLGtid(sid=_uuid_text(sid), gno=gno)
        fields: dict[str, Any] = {}
        if pos < end and data[pos] == 2:  # logical timestamps
            fields["last_committed"], fields["sequence_number"] = struct.unpack_from("<QQ", data, pos + 1)
            pos += 17
        if pos + 7 <= end:
            ts = int.from_bytes(data[pos : pos + 7], "little")
            pos += 7
            if ts & (1 << 55):
                ts &= ~(1 << 55)
                fields["original_commit_timestamp"] = int.from_bytes(data[pos : pos + 7], "little")
                pos += 7
            else:
                fields["original_commit_timestamp"] = ts
            fields["immediate_commit_timestamp"] = ts
            if pos < end:
                fields["transaction_length"], pos = read_packed_int(data, pos)
            if pos + 4 <= end:
                sv = _U32.unpack_from(data, pos)[0]
                pos += 4
                if sv & (1 << 31):
                    sv &= ~(1 << 31)
                    fields["original_server_version"] = _U32.unpack_from(data, pos)[0]
                    pos += 4
                else:
                    fields["original_server_version"] = sv
                fields["immediate_server_version"] = sv
                if pos + 8 <= end:
                    fields["commit_group_ticket"] = _U64.unpack_from(data, pos)[0]
        return _new_gtid(*h, gtid, bool(flags & 1), **fields)

    def _gtid_tagged(self, data: bytes, end: int, h: _Header) -> Event:
        return _decode_tagged_gtid(h, data, HEADER_LEN, end)

    def _previous_gtids(self, data: bytes, end: int, h: _Header) -> Event:
        return _new_previous_gtids(*h, MySQLGtidSet.decode(data[HEADER_LEN:end]))

    def _rows_query(self, data: bytes, end: int, h: _Header) -> Event:
        return _new_rows_query(*h, data[20:end].decode("utf-8", "replace"))

    def _annotate(self, data: bytes, end: int, h: _Header) -> Event:
        return _new_annotate(*h, data[19:end])  # decoded when AnnotateRowsEvent.query is read

    def _heartbeat(self, data: bytes, end: int, h: _Header) -> Event:
        return _new_heartbeat(*h, data[19:end].decode("utf-8", "replace"), h[4])

    def _heartbeat_v2(self, data: bytes, end: int, h: _Header) -> Event:
        name, position = decode_heartbeat_v2(data[HEADER_LEN:end])
        return _new_heartbeat(*h, name, position, 2)

    def _payload(self, data: bytes, end: int, h: _Header) -> Event:
        pos = HEADER_LEN
        payload_size = uncompressed_size = 0
        compression_type = 0
        while pos < end:
            field, pos = read_packed_int(data, pos)
            if field == 0:
                break
            length, pos = read_packed_int(data, pos)
            value, _ = read_packed_int(data, pos)
            if field == 1:
                payload_size = value
            elif field == 2:
                compression_type = value
            elif field == 3:
                uncompressed_size = value
            pos += length
        payload = bytes(data[pos:end])
        if payload_size and payload_size != len(payload):
            raise TruncatedError(f"TRANSACTION_PAYLOAD says {payload_size} payload bytes but holds {len(payload)}")
        if compression_type == 0:
            raw = _zstd_decompress(payload, uncompressed_size)
        elif compression_type == 255:
            raw = payload
        else:
            raise DecodeError(f"TRANSACTION_PAYLOAD compression type {compression_type} is not supported")
        events = self.decode_payload_events(raw)
        return _new_payload(*h, compression_type, len(payload), uncompressed_size or len(raw), events)

    def decode_payload_events(self, raw: bytes, outer: object = None) -> list[Event]:
        """Decode the events inside a TRANSACTION_PAYLOAD: full events without checksums."""
        events: list[Event] = []
        saved_crc = self._crc
        self._crc = False
        try:
            pos = 0
            n = len(raw)
            while pos < n:
                if pos + HEADER_LEN > n:
                    raise TruncatedError("TRANSACTION_PAYLOAD ends inside an inner event header")
                size = _U32.unpack_from(raw, pos + 9)[0]
                if size < HEADER_LEN or pos + size > n:
                    raise TruncatedError(f"TRANSACTION_PAYLOAD inner event of {size} bytes runs past the payload")
                inner = self.decode(raw[pos : pos + size], None)
                inner.in_payload = True
                events.append(inner)
                pos += size
        finally:
            self._crc = saved_crc
        return events

    def _xa_prepare(self, data: bytes, end: int, h: _Header) -> Event:
        one_phase = bool(data[19])
        format_id, gtrid_len, bqual_len = struct.unpack_from("<iII", data, 20)
        pos = 32
        if gtrid_len > 64 or bqual_len > 64 or pos + gtrid_len + bqual_len > end:
            raise DecodeError("XA_PREPARE event has invalid XID lengths")
        gtrid = bytes(data[pos : pos + gtrid_len])
        bqual = bytes(data[pos + gtrid_len : pos + gtrid_len + bqual_len])
        return _new_xa_prepare(*h, one_phase, format_id, gtrid, bqual)

    def _intvar(self, data: bytes, end: int, h: _Header) -> Event:
        return _new_intvar(*h, data[19], _U64.unpack_from(data, 20)[0])

    def _rand(self, data: bytes, end: int, h: _Header) -> Event:
        s1, s2 = struct.unpack_from("<QQ", data, 19)
        return _new_rand(*h, s1, s2)

    def _user_var(self, data: bytes, end: int, h: _Header) -> Event:
        name_len = _U32.unpack_from(data, 19)[0]
        pos = 23
        name = data[pos : pos + name_len].decode("utf-8", "replace")
        pos += name_len
        is_null = bool(data[pos])
        pos += 1
        if is_null:
            return _new_user_var(*h, name, True)
        value_type = data[pos]
        charset, value_len = struct.unpack_from("<II", data, pos + 1)
        pos += 9
        value = bytes(data[pos : pos + value_len])
        pos += value_len
        var_flags = data[pos] if pos < end else 0
        return _new_user_var(*h, name, False, value_type, charset, value, var_flags)

    def _incident(self, data: bytes, end: int, h: _Header) -> Event:
        incident = _U16.unpack_from(data, 19)[0]
        n = data[21] if end > 21 else 0
        return _new_incident(*h, incident, data[22 : 22 + n].decode("utf-8", "replace"))

    def _checkpoint(self, data: bytes, end: int, h: _Header) -> Event:
        n = _U32.unpack_from(data, 19)[0]
        return _new_checkpoint(*h, data[23 : 23 + n].decode("utf-8", "replace"))

    def _mariadb_gtid(self, data: bytes, end: int, h: _Header) -> Event:
        return decode_mariadb_gtid(h, data[HEADER_LEN:end])

    def _mariadb_gtid_list(self, data: bytes, end: int, h: _Header) -> Event:
        # MariaDB may pad the list (seen: 2 zero bytes after an empty list); the count says what is real
        count = _U32.unpack_from(data, HEADER_LEN)[0] & 0x0FFFFFFF
        used = HEADER_LEN + 4 + 16 * count
        if used > end:
            raise TruncatedError(f"GTID_LIST announces {count} GTIDs but the event is too short for them")
        gtid_set, list_flags = MariaDBGtidSet.decode_gtid_list(data[HEADER_LEN:used])
        return _new_gtid_list(*h, gtid_set, list_flags)

    def _start_encryption(self, data: bytes, end: int, h: _Header) -> Event:
        raise DecodeError(
            "this binlog file is encrypted (START_ENCRYPTION_EVENT); mybinlog cannot decrypt files on disk: "
            "read it through the server (--dsn), which decrypts before sending"
        )


# -------------------------------------------------------------------------------------------------------
# helpers shared with tests and the file reader
# -------------------------------------------------------------------------------------------------------


def _uuid_text(raw: bytes) -> str:
    h = bytes(raw).hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _parse_query_status(data: bytes, pos: int, end: int) -> tuple[int | None, int | None]:
    """Extract character_set_client and sql_mode from QUERY status variables (others are skipped)."""
    charset: int | None = None
    sql_mode: int | None = None
    fixed = {
        0: 4, 1: 8, 3: 4, 4: 6, 7: 2, 8: 2, 9: 8, 10: 4, 13: 3, 16: 1, 17: 8, 18: 2, 19: 1, 20: 1,
        128: 3, 129: 8, 130: 1,
    }
    try:
        while pos < end:
            code = data[pos]
            pos += 1
            if code == 4:
                charset = _U16.unpack_from(data, pos)[0]
            elif code == 1:
                sql_mode = _U64.unpack_from(data, pos)[0]
            if code in fixed:
                pos += fixed[code]
            elif code == 2:  # Q_CATALOG_CODE: len, bytes, NUL
                pos += data[pos] + 2
            elif code in (5, 6):  # time zone, catalog nz
                pos += data[pos] + 1
            elif code == 11:  # invoker: user, host
                pos += data[pos] + 1
                pos += data[pos] + 1
            elif code == 12:  # updated db names
                count = data[pos]
                pos += 1
                if count != 254:
                    for _ in range(count):
                        pos = data.index(b"\0", pos) + 1
            else:  # unknown code: its length is unknowable; the remaining variables are not needed
                break
    except (IndexError, ValueError, struct.error):
        pass
    return charset, sql_mode


def _mariadb_uncompress(raw: bytes) -> bytes:
    """MariaDB compressed event payload: 1 header byte (0x80 | length-of-length), big-endian length, zlib."""
    if not raw:
        raise TruncatedError("compressed event payload is empty")
    head = raw[0]
    lenlen = head & 0x07
    if not head & 0x80 or not 1 <= lenlen <= 4:
        raise DecodeError(f"MariaDB compressed event has an invalid header byte 0x{head:02x}")
    size = int.from_bytes(raw[1 : 1 + lenlen], "big")
    out = zlib.decompress(raw[1 + lenlen :])
    if len(out) != size:
        raise DecodeError(f"MariaDB compressed event inflated to {len(out)} bytes, header says {size}")
    return out


def _zstd_decompress(payload: bytes, expected: int) -> bytes:
    import zstandard

    try:
        dctx = zstandard.ZstdDecompressor()
        if expected:
            return bytes(dctx.decompress(payload, max_output_size=expected))
        return b"".join(dctx.read_to_iter(payload))
    except zstandard.ZstdError as exc:
        raise DecodeError(f"TRANSACTION_PAYLOAD zstd data is corrupt: {exc}") from exc


def decode_heartbeat_v2(body: bytes) -> tuple[str, int]:
    """HEARTBEAT_LOG_EVENT_V2 body: TLV fields (1 = log file name, 2 = position as packed int)."""
    pos = 0
    name: str | None = None
    position = 0
    n = len(body)
    while pos < n:
        field = body[pos]
        pos += 1
        if field == 0:
            break
        length, pos = read_packed_int(body, pos)
        if pos + length > n:
            raise TruncatedError("HEARTBEAT_LOG_EVENT_V2 field runs past the event")
        if field == 1:
            name = body[pos : pos + length].decode("utf-8", "replace")
        elif field == 2:
            position, used = read_packed_int(body, pos)
            if used != pos + length:
                raise DecodeError("HEARTBEAT_LOG_EVENT_V2 position field has an invalid length")
        else:
            raise DecodeError(f"HEARTBEAT_LOG_EVENT_V2 has an unknown field type {field}")
        pos += length
    if name is None:
        raise DecodeError("HEARTBEAT_LOG_EVENT_V2 has no log file name")
    return name, position


def decode_mariadb_gtid(h: _Header, body: bytes) -> MariadbGtidEvent:
    if len(body) < 13:
        raise TruncatedError(f"MariaDB GTID event body needs 13 bytes, got {len(body)}")
    seq_no = _U64.unpack_from(body, 0)[0]
    domain_id = _U32.unpack_from(body, 8)[0]
    gflags = body[12]
    pos = 13
    extra: dict[str, Any] = {}
    if gflags & MariadbGtidEvent.FL_GROUP_COMMIT_ID:
        extra["commit_id"] = _U64.unpack_from(body, pos)[0]
        pos += 8
    elif gflags & (MariadbGtidEvent.FL_PREPARED_XA | MariadbGtidEvent.FL_COMPLETED_XA):
        extra["xa_format_id"] = _U32.unpack_from(body, pos)[0]
        gl, bl = body[pos + 4], body[pos + 5]
        pos += 6
        extra["xa_gtrid"] = bytes(body[pos : pos + gl])
        extra["xa_bqual"] = bytes(body[pos + gl : pos + gl + bl])
    gtid = MariaDBGtid(domain_id=domain_id, server_id=h[2], seq_no=seq_no)
    return _new_mariadb_gtid(*h, gtid, gflags, **extra)


# MySQL 8.4 GTID_TAGGED_LOG_EVENT uses mysql::serialization: variable-length integers whose first byte's
# trailing one-bits count the extra bytes (value stored little-endian, shifted past that prefix), signed values
# zigzag-encoded; a message is (format version, message size, last non-ignorable field id) then (field id, value)
# pairs. Gtid_event field ids: 0 flags, 1 uuid (16 varlen bytes), 2 gno, 3 tag, 4 last_committed,
# 5 sequence_number, 6 immediate_commit_timestamp, 7 original_commit_timestamp, 8 transaction_length,
# 9 immediate_server_version, 10 original_server_version, 11 commit_group_ticket.


def _read_varlen(buf: bytes, pos: int) -> tuple[int, int]:
    first = buf[pos]
    extra = 0
    while extra < 8 and first >> extra & 1:
        extra += 1
    if extra == 8:
        return int.from_bytes(buf[pos + 1 : pos + 9], "little"), pos + 9
    if pos + 1 + extra > len(buf):
        raise TruncatedError("variable-length integer runs past the event")
    value = int.from_bytes(buf[pos : pos + 1 + extra], "little") >> (extra + 1)
    return value, pos + 1 + extra


def _zigzag(v: int) -> int:
    return (v >> 1) ^ -(v & 1)


def _decode_tagged_gtid(h: _Header, data: bytes, pos: int, end: int) -> GtidEvent:
    _version, pos = _read_varlen(data, pos)
    size, pos = _read_varlen(data, pos)
    if HEADER_LEN + size > end:
        raise TruncatedError(f"GTID_TAGGED_LOG_EVENT message of {size} bytes runs past the event")
    end = HEADER_LEN + size
    _last_non_ignorable, pos = _read_varlen(data, pos)
    flags = 0
    uuid = b""
    gno = 0
    tag = ""
    f: dict[str, Any] = {}
    names = {
        4: "last_committed",
        5: "sequence_number",
        6: "immediate_commit_timestamp",
        7: "original_commit_timestamp",
        8: "transaction_length",
        9: "immediate_server_version",
        10: "original_server_version",
        11: "commit_group_ticket",
    }
    signed = {4, 5}
    while pos < end:
        field_id, pos = _read_varlen(data, pos)
        if field_id == 0:
            flags, pos = _read_varlen(data, pos)
        elif field_id == 1:
            out = bytearray()
            for _ in range(16):
                b, pos = _read_varlen(data, pos)
                out.append(b & 0xFF)
            uuid = bytes(out)
        elif field_id == 2:
            v, pos = _read_varlen(data, pos)
            gno = _zigzag(v)
        elif field_id == 3:
            n, pos = _read_varlen(data, pos)
            tag = data[pos : pos + n].decode("ascii")
            pos += n
        elif field_id in names:
            v, pos = _read_varlen(data, pos)
            f[names[field_id]] = _zigzag(v) if field_id in signed else v
        else:
            raise DecodeError(f"GTID_TAGGED_LOG_EVENT has an unknown field id {field_id}")
    if len(uuid) != 16:
        raise DecodeError("GTID_TAGGED_LOG_EVENT has no source UUID")
    f.setdefault("original_commit_timestamp", f.get("immediate_commit_timestamp", 0))
    f.setdefault("original_server_version", f.get("immediate_server_version", 0))
    gtid = MySQLGtid(sid=_uuid_text(uuid), gno=gno, tag=tag)
    return _new_gtid(*h, gtid, bool(flags & 1), **f)
