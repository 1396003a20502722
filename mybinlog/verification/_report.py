"""What verify found, and how it is shown: a :class:`VerifyReport` of :class:`TableResult` (one per table) with
their :class:`RowDifference` and :class:`ColumnDifference`; ``render_text`` for people, ``to_json`` for programs."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["ColumnDifference", "DifferenceKind", "RowDifference", "TableResult", "TableStatus", "VerifyReport"]


DifferenceKind = Literal["missing", "extra", "changed", "duplicate"]
TableStatus = Literal["equal", "different", "missing", "extra", "error"]


# ---------------------------------------------------------------------------------------------------------------
# results


@dataclass(frozen=True)
class ColumnDifference:
    """One column of a row held by both sides with different values (canonical text; None = NULL)."""

    column: str
    source: str | None
    replica: str | None


@dataclass(frozen=True)
class RowDifference:
    """One differing row.

    ``kind``: ``missing`` (in MySQL, not in the replica), ``extra`` (in the replica only), ``changed`` (both hold
    the key; ``columns`` lists what differs) or ``duplicate`` (the replica returns the key ``count`` times after
    FINAL). ``key`` maps the key columns to their canonical values; for tables without a key it holds the whole
    row and ``count`` says how many more copies one side has.
    """

    kind: DifferenceKind
    key: tuple[tuple[str, str | None], ...]
    columns: tuple[ColumnDifference, ...] = ()
    count: int = 1

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "key": dict(self.key), "count": self.count}
        if self.columns:
            out["columns"] = [dataclasses.asdict(c) for c in self.columns]
        return out


@dataclass
class TableResult:
    """The comparison of one table. ``status``: ``equal``, ``different``, ``missing`` (no such table in the
    replica), ``extra`` (a replica table with no source table), ``error`` (see ``error``)."""

    source_table: str  # "db.table" in MySQL ("" for an extra replica table)
    replica_table: str  # "db.table" in ClickHouse
    status: TableStatus = "equal"
    source_rows: int | None = None
    replica_rows: int | None = None
    source_checksum: str | None = None  # 16 hex digits: sum of row hashes mod 2**64
    replica_checksum: str | None = None
    key: tuple[str, ...] = ()  # the columns rows were matched by; () = compared as a multiset of rows
    replica_duplicates: int = 0  # replica rows after FINAL beyond the number of distinct keys
    schema: list[str] = field(default_factory=list)  # columns missing/extra in the replica (make it different)
    notes: list[str] = field(default_factory=list)  # type mismatches and other remarks (informational)
    differences: list[RowDifference] = field(default_factory=list)
    min_differences: int = 0  # a lower bound on the number of differing keys (rows without a key)
    complete: bool = True  # whether ``differences`` lists every difference
    error: str | None = None
    seconds: float = 0.0

    @property
    def equal(self) -> bool:
        return self.status == "equal"

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["key"] = list(self.key)
        out["differences"] = [d.to_dict() for d in self.differences]
        out["seconds"] = round(self.seconds, 3)
        return out


@dataclass
class VerifyReport:
    """What :func:`verify` found. ``equal`` is True when every table is equal; ``exit_code`` is 0 (equal),
    1 (differences) or 2 (an error prevented a complete comparison)."""

    source: str  # user@host:port (never the password)
    replica: str  # the target's description (never the password)
    tables: list[TableResult] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def equal(self) -> bool:
        return all(t.status == "equal" for t in self.tables)

    @property
    def errors(self) -> list[TableResult]:
        return [t for t in self.tables if t.status == "error"]

    @property
    def exit_code(self) -> int:
        if self.errors:
            return 2
        return 0 if self.equal else 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "replica": self.replica,
            "equal": self.equal,
            "tables": [t.to_dict() for t in self.tables],
            "seconds": round(self.seconds, 3),
        }

    def to_json(self, *, indent: int | None = 2) -> str:
        data = self.to_dict()
        text = json.dumps(data, indent=indent, ensure_ascii=False)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # replica text that is not UTF-8 (surrogate-escaped bytes): escape everything
            text = json.dumps(data, indent=indent)
        return text

    def render_text(self) -> str:
        lines = [f"source  {self.source}", f"replica {self.replica}", ""]
        width = max([len(_table_label(t)) for t in self.tables] + [10])
        for t in self.tables:
            lines.extend(_render_table(t, width))
        n_diff = sum(1 for t in self.tables if t.status in ("different", "missing", "extra"))
        n_err = len(self.errors)
        rows = sum(t.source_rows or 0 for t in self.tables)
        if not self.tables:
            summary = "no tables to compare"
        elif n_diff == 0 and n_err == 0:
            summary = f"all {len(self.tables)} tables equal"
        else:
            summary = f"{n_diff} of {len(self.tables)} tables differ"
            if n_err:
                summary += f", {n_err} could not be compared"
        lines.append("")
        lines.append(f"{summary} ({rows} source rows, {self.seconds:.1f} s)")
        return "\n".join(lines) + "\n"


def _table_label(t: TableResult) -> str:
    return t.source_table or f"({t.replica_table})"


def _show(value: str | None) -> str:
    if value is None:
        return "NULL"
    if len(value) > 60:
        value = value[:57] + "..."
    return repr(value)


def _show_key(key: Iterable[tuple[str, str | None]]) -> str:
    return ", ".join(f"{name}={_show(value)}" for name, value in key)


_KIND_LABEL = {
    "missing": "missing in replica",
    "extra": "extra in replica",
    "changed": "changed",
    "duplicate": "duplicate in replica",
}


def _render_table(t: TableResult, width: int) -> list[str]:
    label = _table_label(t).ljust(width)
    if t.status == "equal":
        return [f"{label}  equal      {t.source_rows} rows  checksum {t.source_checksum}"]
    if t.status == "error":
        return [f"{label}  ERROR      {t.error}"]
    if t.status == "missing":
        rows = f" (source {t.source_rows} rows)" if t.source_rows is not None else ""
        return [f"{label}  MISSING    not in the replica as {t.replica_table}{rows}"]
    if t.status == "extra":
        rows = f" ({t.replica_rows} rows)" if t.replica_rows is not None else ""
        return [f"{label}  EXTRA      {t.replica_table} exists only in the replica{rows}"]
    lines = [f"{label}  DIFFERENT  source {t.source_rows} rows, replica {t.replica_rows} rows"]
    indent = "    "
    lines.extend(f"{indent}schema: {text}" for text in t.schema)
    if t.replica_duplicates:
        lines.append(
            f"{indent}{t.replica_duplicates} replica row(s) share a key with another row after FINAL "
            "(duplicates the engine did not collapse)"
        )
    if not t.key and t.min_differences:
        lines.append(f"{indent}(no primary key: rows compared as a multiset)")
    for d in t.differences:
        head = f"{indent}{_KIND_LABEL[d.kind]:<21} {_show_key(d.key)}"
        if d.kind == "duplicate" or (not t.key and d.count > 1):
            head += f"  ({d.count} rows)"
        lines.append(head)
        lines.extend(f"{indent}    {c.column}: source {_show(c.source)}, replica {_show(c.replica)}" for c in d.columns)
    if not t.complete:
        lines.append(
            f"{indent}... more differences: at least {t.min_differences} in total (raise --max-differences to see more)"
        )
    lines.extend(f"{indent}note: {text}" for text in t.notes)
    return lines
