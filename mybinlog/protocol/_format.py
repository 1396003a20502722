"""Rendering events for people (text) and programs (JSON Lines). The JSONL shape is a stable interface,
documented in docs/dump-format.md."""

from __future__ import annotations

import datetime
import decimal
import json
from collections.abc import Callable, Sequence
from typing import Any

from . import _accel
from ._constants import MISSING
from ._events import (
    AnnotateRowsEvent,
    BinlogCheckpointEvent,
    Event,
    FormatDescriptionEvent,
    GtidEvent,
    HeartbeatEvent,
    IncidentEvent,
    IntvarEvent,
    MariadbGtidEvent,
    MariadbGtidListEvent,
    PreviousGtidsEvent,
    QueryEvent,
    RandEvent,
    RotateEvent,
    RowsEvent,
    RowsQueryEvent,
    TableMapEvent,
    TransactionPayloadEvent,
    UpdateRowsEvent,
    UserVarEvent,
    XaPrepareEvent,
    XidEvent,
)
from ._jsonb import JsonDiff, JsonOpaque
from ._table import TableMap

__all__ = ["event_to_json", "event_to_text", "events_to_jsonl", "format_time", "json_value"]


def format_time(td: datetime.timedelta) -> str:
    """MySQL TIME text: [-]H:MM:SS[.ffffff] (hours may exceed 24)."""
    total_us = td // datetime.timedelta(microseconds=1)
    sign = "-" if total_us < 0 else ""
    total_us = abs(total_us)
    secs, us = divmod(total_us, 1_000_000)
    mins, s = divmod(secs, 60)
    h, m = divmod(mins, 60)
    text = f"{sign}{h:02d}:{m:02d}:{s:02d}"
    if us:
        text += f".{us:06d}"
    return text


def decimal_text(v: decimal.Decimal) -> str:
    """A Decimal in fixed notation with all its digits (``"0.000000000"``, ``"-0.000000080"``, ``"12.3400"``):
    ``str()`` switches to exponent form below 1e-6 (``"0E-9"``), docs/dump-format.md promises the column's scale."""
    text = str(v)
    return text if "E" not in text else format(v, "f")


def json_value(v: Any) -> Any:
    """A column value as a JSON-ready object (see docs/dump-format.md)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, decimal.Decimal):
        return decimal_text(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    if isinstance(v, datetime.datetime):
        return v.isoformat()
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, datetime.timedelta):
        return format_time(v)
    if isinstance(v, frozenset | set):
        return sorted(v)
    if v is MISSING:
        return {"$missing": True}
    return _json_doc(v)


def _json_doc(v: Any) -> Any:
    """Values inside a JSON column: documents stay JSON; DECIMAL/temporal opaque values become strings."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, dict):
        return {k: _json_doc(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_json_doc(x) for x in v]
    if isinstance(v, JsonDiff):
        return {"op": v.operation, "path": v.path, "value": _json_doc(v.value)}
    if isinstance(v, JsonOpaque):
        return {"$opaque_type": v.type_code, "hex": v.data.hex()}
    return json_value(v)


def _row(values: tuple[Any, ...]) -> list[Any]:
    out = []
    for v in values:
        if v is None or type(v) in (int, str, float):
            out.append(v)
        elif isinstance(v, (dict, list)) or type(v).__name__ == "JsonDiff":
            out.append(_json_doc(v))
        else:
            out.append(json_value(v))
    return out


def _json_default(v: Any) -> Any:
    """The JSON encoder's hook for what it cannot encode itself: the same forms as :func:`json_value` (and, in
    JSON documents, :func:`_json_doc`), so rows go to the C encoder as they are, without a copy."""
    if isinstance(v, decimal.Decimal):
        return decimal_text(v)
    if isinstance(v, datetime.date):  # datetime.datetime included
        return v.isoformat()
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    if isinstance(v, datetime.timedelta):
        return format_time(v)
    if isinstance(v, frozenset | set):
        return sorted(v)
    if v is MISSING:
        return {"$missing": True}
    if isinstance(v, JsonDiff):
        return {"op": v.operation, "path": v.path, "value": v.value}
    if isinstance(v, JsonOpaque):
        return {"$opaque_type": v.type_code, "hex": v.data.hex()}
    raise TypeError(f"cannot render a {type(v).__name__} value as JSON")


_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_json_default).encode
_jstr: Callable[[str], str] = json.encoder.encode_basestring  # a str as a JSON string literal (C)
_float_repr = float.__repr__

# -- the fast JSON Lines path ---------------------------------------------------------------------------------
#
# event_to_json writes the text directly: the common header with one f-string, and rows with a formatter
# generated per column-type layout, which handles the type each column normally has inline (int, str, float,
# Decimal, datetime, date) and hands anything else (None, MISSING, bytes, sets, JSON documents, zero dates as
# text, NaN) to the json encoder with the same conversions as json_value. The output is byte for byte what
# json.dumps(..., ensure_ascii=False, separators=(",", ":")) gives for the documented objects.

_INT_COLUMNS = frozenset({1, 2, 3, 8, 9, 13, 16})  # TINY SHORT LONG LONGLONG INT24 YEAR BIT
_FLOAT_COLUMNS = frozenset({4, 5})
_TEXT_COLUMNS = frozenset({15, 253, 254, 247, 249, 250, 251, 252})  # VARCHAR VAR_STRING STRING ENUM BLOBs
_DATETIME_COLUMNS = frozenset({7, 12, 17, 18})  # TIMESTAMP DATETIME TIMESTAMP2 DATETIME2
_DATE_COLUMNS = frozenset({10, 14})
_DECIMAL_COLUMNS = frozenset({246})
_ROW_FORMATTERS: dict[tuple[int, ...], Callable[[tuple[Any, ...]], str]] = {}


def _value_expr(type_code: int, v: str) -> str:
    if type_code in _INT_COLUMNS:
        return f"{v} if type({v}) is int else _g({v})"
    if type_code in _FLOAT_COLUMNS:
        return f"_fr({v}) if type({v}) is float and {v} - {v} == 0.0 else _g({v})"
    if type_code in _TEXT_COLUMNS:
        return f"_js({v}) if type({v}) is str else _g({v})"
    if type_code in _DECIMAL_COLUMNS:
        return f"_q + _dec({v}) + _q if type({v}) is _Dec else _g({v})"
    if type_code in _DATETIME_COLUMNS:
        return f"_q + {v}.isoformat() + _q if type({v}) is _DT else _g({v})"
    if type_code in _DATE_COLUMNS:
        return f"_q + {v}.isoformat() + _q if type({v}) is _Date else _g({v})"
    return f"_g({v})"


def _row_formatter(types: tuple[int, ...]) -> Callable[[tuple[Any, ...]], str]:
    """``fmt(row) -> '[v0,v1,...]'`` for rows of tables with these column types (real_type codes)."""
    cached = _ROW_FORMATTERS.get(types)
    if cached is not None:
        return cached
    names = [f"v{i}" for i in range(len(types))]
    if names:
        unpack = f"    {', '.join(names)}{',' if len(names) == 1 else ''} = row"
        body = ",".join("{" + _value_expr(t, n) + "}" for t, n in zip(types, names, strict=True))
        src = f"def fmt(row):\n{unpack}\n    return f'[{body}]'"
    else:
        src = "def fmt(row):\n    return '[]'"
    ns: dict[str, Any] = {
        "_g": _ENCODE,
        "_js": _jstr,
        "_fr": _float_repr,
        "_q": '"',
        "_Dec": decimal.Decimal,
        "_dec": decimal_text,
        "_DT": datetime.datetime,
        "_Date": datetime.date,
    }
    exec(compile(src, "<mybinlog json row>", "exec"), ns)
    fmt: Callable[[tuple[Any, ...]], str] = ns["fmt"]
    if len(_ROW_FORMATTERS) > 4096:
        _ROW_FORMATTERS.clear()
    _ROW_FORMATTERS[types] = fmt
    return fmt


_TableJson = tuple[Any, str, str, str, Callable[[tuple[Any, ...]], str]]
_TABLE_JSON: dict[int, _TableJson] = {}


def _table_json(table: Any) -> _TableJson:
    """(table, '"schema":..,"table":..', columns JSON, column types JSON, row formatter) of a TableMap."""
    cached = _TABLE_JSON.get(id(table))
    if cached is not None and cached[0] is table:
        return cached
    names = f'"schema":{_jstr(table.schema)},"table":{_jstr(table.name)}'
    entry = (
        table,
        names,
        _ENCODE(table.column_names),
        _ENCODE(table.column_type_names),
        _row_formatter(tuple(c.real_type for c in table.columns)),
    )
    if len(_TABLE_JSON) > 4096:
        _TABLE_JSON.clear()
    _TABLE_JSON[id(table)] = entry
    return entry


# (type code, file) -> '{"type":..,"type_code":..,"file":..,"offset":' : the part of the head that repeats
_HEAD_PREFIX: dict[tuple[int, str | None], str] = {}


def _head_prefix(event: Event) -> str:
    file = event.file
    key = (event.type_code, file)
    prefix = _HEAD_PREFIX.get(key)
    if prefix is None:
        if len(_HEAD_PREFIX) > 4096:
            _HEAD_PREFIX.clear()
        prefix = _HEAD_PREFIX[key] = (
            f'{{"type":{_jstr(event.type_name)},"type_code":{event.type_code},'
            f'"file":{"null" if file is None else _jstr(file)},"offset":'
        )
    return prefix


def _head(event: Event) -> str:
    """The common fields of an event's JSON object, without the closing brace."""
    prefix = _HEAD_PREFIX.get((event.type_code, event.file)) or _head_prefix(event)
    offset = event.offset
    head = (
        f'{prefix}{"null" if offset is None else offset},"log_pos":{event.log_pos},'
        f'"timestamp":{event.timestamp},"server_id":{event.server_id},"size":{event.size},"flags":{event.flags}'
    )
    if event.in_payload:
        head += ',"in_payload":true'
    return head


def _rows_prefix(table: Any) -> tuple[str, int]:
    """For the compiled renderer: (',"schema":..,"table":..,"columns":[..],"rows":[', column count) of a table."""
    _, names, columns, _types, _fmt = _table_json(table)
    return f',{names},"columns":{columns},"rows":[', len(table.columns)


def _rows_json(event: Any) -> bytes | None:
    """For the compiled renderer: the rows of an event whose rows were not decoded, written by the compiled core
    straight from the row images (``TableMap.render_rows_json``, the same text), or None to write the values."""
    table = event.table
    if event._rows is not None or type(table) is not TableMap:
        return None
    return table.render_rows_json(event)


def _json_rows(event: Any) -> str:
    _, names, columns, _types, fmt = _table_json(event.table)
    rows = ",".join(map(fmt, event.rows))
    return f'{_head(event)},{names},"columns":{columns},"rows":[{rows}]}}'


def _json_update_rows(event: Any) -> str:
    _, names, columns, _types, fmt = _table_json(event.table)
    rows = ",".join([f'{{"before":{fmt(b)},"after":{fmt(a)}}}' for b, a in event.rows])
    return f'{_head(event)},{names},"columns":{columns},"rows":[{rows}]}}'


# (table id, id(table)) -> (table, ',"table_id":..,"schema":..,"table":..,"columns":..,"column_types":..}')
_TABLE_MAP_TAILS: dict[tuple[int, int], tuple[Any, str]] = {}


def _table_map_tail(event: Any) -> str:
    """The part of a TABLE_MAP event's JSON after the head (built once per table)."""
    table = event.table
    key = (event.table_id, id(table))
    cached = _TABLE_MAP_TAILS.get(key)
    if cached is None or cached[0] is not table:
        _, names, columns, types, _fmt = _table_json(table)
        if len(_TABLE_MAP_TAILS) > 4096:
            _TABLE_MAP_TAILS.clear()
        cached = _TABLE_MAP_TAILS[key] = (
            table,
            f',"table_id":{event.table_id},{names},"columns":{columns},"column_types":{types}}}',
        )
    return cached[1]


def _json_table_map(event: Any) -> str:
    return _head(event) + _table_map_tail(event)


def _json_query_text(event: Any) -> str:
    return f'{_head(event)},"query":{_jstr(event.query)}}}'


def _json_xid(event: Any) -> str:
    return f'{_head(event)},"xid":{event.xid}}}'


def _json_generic(event: Event) -> str:
    fields = event_fields(event)
    if not fields:
        return _head(event) + "}"
    return _head(event) + "," + _ENCODE(fields)[1:]


_JSON_BY_CLASS: dict[type, Callable[[Any], str]] = {}
_JSON_FUNCTIONS: tuple[Callable[[Any], str], ...] = (
    _json_rows,
    _json_update_rows,
    _json_table_map,
    _json_query_text,
    _json_xid,
    _json_generic,
)


def _json_kind(cls: type) -> int:
    """Which of the renderers in ``_JSON_FUNCTIONS`` writes events of this class (the compiled renderer uses the
    same numbers: 0 rows, 1 update rows, 2 table map, 3 query text, 4 xid, 5 anything else)."""
    if issubclass(cls, UpdateRowsEvent):
        return 1
    if issubclass(cls, RowsEvent):
        return 0
    if issubclass(cls, TableMapEvent):
        return 2
    if issubclass(cls, (AnnotateRowsEvent, RowsQueryEvent)):
        return 3
    if issubclass(cls, XidEvent):
        return 4
    return 5


def _json_function(cls: type) -> Callable[[Any], str]:
    fn = _JSON_BY_CLASS[cls] = _JSON_FUNCTIONS[_json_kind(cls)]
    return fn


def event_fields(event: Event) -> dict[str, Any]:
    """The event-specific fields (beyond the common header ones)."""
    d: dict[str, Any] = {}
    if isinstance(event, RowsEvent):
        d["schema"] = event.schema
        d["table"] = event.table_name
        d["columns"] = list(event.columns)
        if isinstance(event, UpdateRowsEvent):
            d["rows"] = [{"before": _row(b), "after": _row(a)} for b, a in event.rows]
        else:
            d["rows"] = [_row(r) for r in event.rows]
    elif isinstance(event, (GtidEvent, MariadbGtidEvent)):
        d["gtid"] = str(event.gtid) if event.gtid is not None else None
        if isinstance(event, GtidEvent):
            d["last_committed"] = event.last_committed
            d["sequence_number"] = event.sequence_number
            d["immediate_commit_timestamp"] = event.immediate_commit_timestamp
            d["original_commit_timestamp"] = event.original_commit_timestamp
            d["transaction_length"] = event.transaction_length
        else:
            d["standalone"] = event.standalone
            d["gtid_flags"] = event.gtid_flags
            d["commit_id"] = event.commit_id
    elif isinstance(event, QueryEvent):
        d["schema"] = event.schema
        d["query"] = event.query
        d["error_code"] = event.error_code
    elif isinstance(event, XidEvent):
        d["xid"] = event.xid
    elif isinstance(event, RotateEvent):
        d["next_file"] = event.next_file
        d["position"] = event.position
    elif isinstance(event, FormatDescriptionEvent):
        d["server_version"] = event.server_version
        d["binlog_version"] = event.binlog_version
        d["checksum_alg"] = event.checksum_alg
    elif isinstance(event, (PreviousGtidsEvent, MariadbGtidListEvent)):
        d["gtid_set"] = str(event.gtid_set)
    elif isinstance(event, TableMapEvent):
        d["table_id"] = event.table_id
        d["schema"] = event.schema
        d["table"] = event.table_name
        d["columns"] = list(event.table.column_names)
        d["column_types"] = [c.type_name for c in event.table.columns]
    elif isinstance(event, HeartbeatEvent):
        d["log_file"] = event.log_file
        d["position"] = event.position
    elif isinstance(event, TransactionPayloadEvent):
        d["compression_type"] = event.compression_type
        d["payload_size"] = event.payload_size
        d["uncompressed_size"] = event.uncompressed_size
        d["event_count"] = len(event.events)
    elif isinstance(event, (RowsQueryEvent, AnnotateRowsEvent)):
        d["query"] = event.query
    elif isinstance(event, BinlogCheckpointEvent):
        d["checkpoint_file"] = event.checkpoint_file
    elif isinstance(event, XaPrepareEvent):
        d.update(one_phase=event.one_phase, format_id=event.format_id, gtrid=event.gtrid.hex(), bqual=event.bqual.hex())
    elif isinstance(event, IntvarEvent):
        d.update(intvar_type=event.intvar_type, value=event.value)
    elif isinstance(event, RandEvent):
        d.update(seed1=event.seed1, seed2=event.seed2)
    elif isinstance(event, UserVarEvent):
        d.update(name=event.name, is_null=event.is_null, value=event.value.hex() if event.value else None)
    elif isinstance(event, IncidentEvent):
        d.update(incident=event.incident, message=event.message)
    return d


def _py_event_to_json(event: Event) -> str:
    """One JSON Lines record (docs/dump-format.md), built as text (see the fast JSON Lines path above)."""
    fn = _JSON_BY_CLASS.get(type(event)) or _json_function(type(event))
    return fn(event)


def _py_events_to_jsonl(events: Sequence[Event]) -> str:
    """The JSON Lines records of ``events``, each followed by a newline."""
    if not events:
        return ""
    return "\n".join(map(_py_event_to_json, events)) + "\n"


# The compiled renderer (mybinlog/protocol/_jsonl.c) writes the same text byte for byte; it hands any event or
# value it does not write itself to the functions above. Without it, or with MYBINLOG_NO_EXTENSIONS=1, the pure-
# Python functions run.
def _configure_compiled(module: Any) -> None:
    """Give the compiled renderer the pure-Python helpers it uses for what it does not write itself."""
    module.configure(
        _json_kind,
        _head_prefix,
        _rows_prefix,
        _table_map_tail,
        _ENCODE,
        _py_event_to_json,
        MISSING,
        decimal.Decimal,
        _rows_json,
    )


if _accel.jsonl_speedups is not None:
    _configure_compiled(_accel.jsonl_speedups)
    event_to_json: Callable[[Event], str] = _accel.jsonl_speedups.event_to_json
    events_to_jsonl: Callable[[Sequence[Event]], str] = _accel.jsonl_speedups.events_to_jsonl
    events_to_jsonl_utf8: Callable[[Sequence[Event]], bytes | None] | None = _accel.jsonl_speedups.events_to_jsonl_utf8
    """The same text as UTF-8 bytes (``None`` when it has a lone surrogate, which UTF-8 cannot hold), for
    writers that take bytes; ``None`` itself without the compiled renderer."""
else:
    event_to_json = _py_event_to_json
    events_to_jsonl = _py_events_to_jsonl
    events_to_jsonl_utf8 = None


def _text_value(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, str):
        return repr(v)
    j = json_value(v)
    if isinstance(j, str):
        return repr(j) if not isinstance(v, (decimal.Decimal, int, float)) else j
    return json.dumps(j, ensure_ascii=False)


def event_to_text(event: Event) -> str:
    when = datetime.datetime.fromtimestamp(event.timestamp, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")
    if event.offset is not None:
        where = f"#{event.offset}"
    else:
        where = "  (in payload)" if event.in_payload else "#-"
    head = f"{where} {when} server {event.server_id} end_log_pos {event.log_pos} {event.type_name}"
    detail = event.describe()
    lines = [f"{head} {detail}".rstrip()]
    if isinstance(event, RowsEvent):
        names = event.columns
        def fmt(values: tuple[Any, ...]) -> str:
            return ", ".join(
                f"{names[i] if names[i] is not None else '@' + str(i + 1)}={_text_value(v)}"
                for i, v in enumerate(values)
                if v is not MISSING
            )
        for row in event.rows:
            if isinstance(event, UpdateRowsEvent):
                lines.append(f"    UPDATE {fmt(row[0])}")
                lines.append(f"        TO {fmt(row[1])}")
            else:
                lines.append(f"    {'INSERT' if event.kind == 'insert' else 'DELETE'} {fmt(row)}")
    return "\n".join(lines)
