"""The replicator's buffers in bulk: rows events -> transaction entries (every row of an event encoded in one pass),
complete transactions -> the batch (the net change per key), the batch -> one TabSeparated payload per table.

A transaction entry is ``(table, keys before, images before, keys after, images after)`` for one rows event: an
insert has no "before" lists, a delete no "after" lists, an update both (row ``i`` of one list goes with row ``i``
of the other). Images are the encoded fields of a row (no meta columns); keys are the key columns' values (one
value for a one-column key, a tuple otherwise) or, for a table without a key, the image itself.

The batch maps a table name to ``{key: change}``, each change a :data:`Change` tuple ``(first_before, after, last,
version)``: the image before the batch's first change when that change was an update/delete (what a collapsing
table holds; None when it was an insert), the image after the last change (None: deleted), the last image seen (a
deleted row's last state, for replacing deletes) and the version of the last change's transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from ..protocol import (
    DeleteRowsEvent,
    JsonDiffs,
    PartialUpdateRowsEvent,
    RowsEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
    apply_json_diffs,
)


class _Table(Protocol):
    """What the batch reads of a table (``_clickhouse.ClickHouseTable`` is one): its name and, for an event's column
    names, the row encoders and the key (its ``layout``)."""

    @property
    def name(self) -> str: ...

    def layout(self, names: tuple[str | None, ...]) -> Any: ...


__all__ = ["Change", "Entry", "add_transaction", "rows_entry", "table_payload", "whole_json_documents"]

Change = tuple[str | None, str | None, str, int]
Entry = tuple["_Table", Sequence[Any] | None, Sequence[str] | None, Sequence[Any] | None, Sequence[str] | None]


def rows_entry(table: _Table, event: RowsEvent) -> Entry | None:
    """The transaction entry of one rows event of ``table`` (None for an event without rows or of another kind)."""
    layout = table.layout(event.columns)
    encode_rows, key_of = layout.encode_rows, layout.key_of
    rows = event.rows
    if not rows:
        return None
    if isinstance(event, UpdateRowsEvent):
        befores = [pair[0] for pair in rows]
        afters = [pair[1] for pair in rows]
        if isinstance(event, PartialUpdateRowsEvent):
            afters = whole_json_documents(event, befores, afters)
        b, a = encode_rows(befores), encode_rows(afters)
        if key_of is None:
            return (table, b, b, a, a)
        return (table, list(map(key_of, befores)), b, list(map(key_of, afters)), a)
    if isinstance(event, WriteRowsEvent):
        images = encode_rows(rows)
        return (table, None, None, images if key_of is None else list(map(key_of, rows)), images)
    if isinstance(event, DeleteRowsEvent):
        images = encode_rows(rows)
        return (table, images if key_of is None else list(map(key_of, rows)), images, None, None)
    return None


def whole_json_documents(event: RowsEvent, befores: list[Any], afters: list[Any]) -> list[Any]:
    """After images of a PARTIAL_UPDATE_ROWS event (``binlog_row_value_options=PARTIAL_JSON``) with the JSON
    columns updated in place rebuilt from the before image (full: the replicator requires FULL row images): their
    diffs applied, an empty list of diffs (the column left as it was) replaced by the before image's document."""
    table_map = event.table
    if table_map is None:
        return afters
    json_columns = [i for i, c in enumerate(table_map.columns) if c.type_name == "json"]
    if not json_columns:
        return afters
    out: list[Any] = []
    for before, after in zip(befores, afters, strict=True):
        row = list(after)
        for i in json_columns:
            value = row[i]
            if type(value) is JsonDiffs:  # updated in place (a document written whole is never a JsonDiffs)
                row[i] = apply_json_diffs(before[i], value) if value else before[i]
        out.append(tuple(row))
    return out


def add_transaction(batch: dict[str, dict[Any, Change]], txn: Iterable[Entry], version: int) -> tuple[int, int]:
    """Move the entries of a transaction that ended with ``version`` into ``batch``, in their order; returns the
    rows (keys new in the batch) and bytes (their images) added."""
    rows = size = 0
    for table, kb, b, ka, a in txn:
        changes = batch.get(table.name)
        if changes is None:
            changes = batch[table.name] = {}
        get = changes.get
        if b is None:  # inserts
            assert ka is not None
            assert a is not None
            before = len(changes)
            if not before or changes.keys().isdisjoint(ka):  # the usual case: keys new to the batch, in one go
                changes.update(zip(ka, [(None, x, x, version) for x in a], strict=True))
                added = len(changes) - before
                rows += added
                if added == len(a):
                    size += sum(map(len, a))
                else:  # a key twice in the event (a table without a key and two equal rows): count it once
                    seen: set[Any] = set()
                    for k, x in zip(ka, a, strict=True):
                        if k not in seen:
                            seen.add(k)
                            size += len(x)
                continue
            for k, x in zip(ka, a, strict=True):
                old = get(k)
                if old is None:
                    changes[k] = (None, x, x, version)
                    rows += 1
                    size += len(x)
                else:
                    changes[k] = (old[0], x, x, version)
        elif a is None:  # deletes
            assert kb is not None
            for k, x in zip(kb, b, strict=True):
                old = get(k)
                if old is None:
                    changes[k] = (x, None, x, version)
                    rows += 1
                    size += len(x)
                else:
                    changes[k] = (old[0], None, x, version)
        else:  # updates
            assert kb is not None
            assert ka is not None
            for k1, x1, k2, x2 in zip(kb, b, ka, a, strict=True):
                if k1 == k2:
                    old = get(k2)
                    if old is None:
                        changes[k2] = (x1, x2, x2, version)
                        rows += 1
                        size += len(x2)
                    else:
                        changes[k2] = (old[0], x2, x2, version)
                    continue
                old = get(k1)  # the key changed: a delete of the old key, an insert of the new one
                if old is None:
                    changes[k1] = (x1, None, x1, version)
                    rows += 1
                    size += len(x1)
                else:
                    changes[k1] = (old[0], None, x1, version)
                old = get(k2)
                if old is None:
                    changes[k2] = (None, x2, x2, version)
                    rows += 1
                    size += len(x2)
                else:
                    changes[k2] = (old[0], x2, x2, version)
    return rows, size


def table_payload(changes: Iterable[Change], engine: str) -> tuple[bytes, int]:
    """The TabSeparated rows of one table's changes with their meta columns (``_sign``, ``_version``[,
    ``_is_deleted``]), encoded, and their number.

    Collapsing: the row before the batch is cancelled (-1) and the row after it added (1). Replacing: the row after
    the batch, or, for a deleted key, its last state with -1; a deleted key always gets its delete row, even when the
    batch also inserted it (after a snapshot the replay overlaps rows the snapshot already wrote, so "inserted in
    this batch" does not mean "absent").
    """
    out: list[str] = []
    append = out.append
    if engine == "collapsing":
        for first_before, after, _last, version in changes:
            if first_before is not None:
                append(f"{first_before}\t-1\t{version}\n")
            if after is not None:
                append(f"{after}\t1\t{version}\n")
        return "".join(out).encode("utf-8", "surrogateescape"), len(out)
    deleted = engine == "replacing_is_deleted"
    current = -1  # versions are never negative
    plus = minus = ""
    for _first, after, last, version in changes:
        if version != current:  # the suffixes of a version, made once for its run of rows
            current = version
            plus = f"\t1\t{version}\t0\n" if deleted else f"\t1\t{version}\n"
            minus = f"\t-1\t{version}\t1\n" if deleted else f"\t-1\t{version}\n"
        if after is not None:
            append(after)
            append(plus)
        else:
            append(last)
            append(minus)
    return "".join(out).encode("utf-8", "surrogateescape"), len(out) // 2
