"""Rendering events for people (text) and programs (JSON Lines). The JSONL shape is a stable interface,
documented in docs/dump-format.md."""

from __future__ import annotations

import datetime
import decimal
import json
from typing import Any

from ._protocol._events import (
    MISSING,
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
from ._protocol._jsonb import JsonDiff, JsonOpaque

__all__ = ["event_to_json", "event_to_text", "format_time", "json_value"]


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


def json_value(v: Any) -> Any:
    """A column value as a JSON-ready object (see docs/dump-format.md)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, decimal.Decimal):
        return str(v)
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


def event_to_json(event: Event) -> str:
    d: dict[str, Any] = {
        "type": event.type_name,
        "type_code": event.type_code,
        "file": event.file,
        "offset": event.offset,
        "log_pos": event.log_pos,
        "timestamp": event.timestamp,
        "server_id": event.server_id,
        "size": event.size,
        "flags": event.flags,
    }
    if event.in_payload:
        d["in_payload"] = True
    d.update(event_fields(event))
    return json.dumps(d, ensure_ascii=False, separators=(",", ":"))


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
