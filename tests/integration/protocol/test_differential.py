"""Differential oracle: python-mysql-replication and mybinlog decode the same randomized workload, row by row.

python-mysql-replication (pip ``mysql-replication``) is an independent decoder of the same binlog. It is run in
file/position mode (``is_mariadb=False``): its MariaDB GTID mode is broken (DESIGN.md section 7). It is
synchronous, so it runs in a worker thread. It takes column names from the binlog's optional table-map metadata
(``binlog_row_metadata=FULL``), so the ALTER TABLEs in the middle of the workload do not confuse it; values are
compared by position anyway, and the names are checked to agree.

Where python-mysql-replication is known to decode a type differently, the comparison goes through a documented
per-type mapping (:func:`repair_oracle` undoes its reversible mistakes, :func:`project_ours` maps mybinlog's
value onto what the oracle cannot represent). mybinlog's own values for those columns are checked against the
written values in test_live_workload.py. Every other column must be equal after ``tests.workload.normalize``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
from dataclasses import dataclass
from typing import Any

import pytest
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

from tests.live import Decoded, decoded_changes, stream_events, write_workload
from tests.servers import MariaDBServer
from tests.workload import ALL_TYPES_COLUMNS, normalize, parse_type

SEEDS = (404, 505)
UTC = dt.UTC


@dataclass(frozen=True)
class OracleChange:
    table: str
    kind: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None


def read_with_oracle(server: MariaDBServer, db: str, start: tuple[str, int], server_id: int) -> list[OracleChange]:
    """Row changes of ``db`` from ``start`` to the current end, decoded by python-mysql-replication."""
    kwargs = server.connect_kwargs("repl")
    reader = BinLogStreamReader(
        connection_settings={
            "host": kwargs["host"],
            "port": kwargs["port"],
            "user": kwargs["user"],
            "passwd": kwargs["password"],
        },
        server_id=server_id,
        is_mariadb=False,  # file/position mode; its MariaDB GTID mode loses events (DESIGN.md section 7)
        blocking=False,
        resume_stream=True,
        log_file=start[0],
        log_pos=start[1],
        only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent],
        only_schemas=[db],
    )
    out: list[OracleChange] = []
    try:
        for event in reader:
            for row in event.rows:
                if isinstance(event, UpdateRowsEvent):
                    out.append(OracleChange(event.table, "update", row["before_values"], row["after_values"]))
                elif isinstance(event, WriteRowsEvent):
                    out.append(OracleChange(event.table, "insert", None, row["values"]))
                else:
                    out.append(OracleChange(event.table, "delete", row["values"], None))
    finally:
        reader.close()
    return out


# --- where python-mysql-replication differs, by column type ---


def _local_naive_to_utc(value: dt.datetime) -> dt.datetime:
    """python-mysql-replication builds TIMESTAMPs with ``datetime.fromtimestamp`` (naive, the process's local
    time zone)."""
    return value.astimezone(UTC)  # a naive datetime is taken as local time


def _json_text(value: Any) -> Any:
    """python-mysql-replication gives MySQL binary JSON's strings and keys as UTF-8 ``bytes``."""
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, list):
        return [_json_text(v) for v in value]
    if isinstance(value, dict):
        return {_json_text(k): _json_text(v) for k, v in value.items()}
    return value


def repair_oracle(value: Any, sql_type: str) -> Any:
    """Undo python-mysql-replication's reversible decoding mistakes (1.0.x)."""
    if value is None:
        return None
    base = parse_type(sql_type).base
    if base == "json" and not isinstance(value, str):
        return _json_text(value)
    if base == "bit" and isinstance(value, str):
        return int(value, 2)  # BIT as a string of '0'/'1' characters
    if base == "year" and value == 1900:
        return 0  # YEAR 0000 comes back as 1900 (not a valid YEAR value: the range is 1901..2155)
    if base == "timestamp" and isinstance(value, dt.datetime):
        return _local_naive_to_utc(value)
    if base == "time" and isinstance(value, dt.timedelta):
        # negative TIME with a fraction: it adds the fraction to the negated whole seconds, i.e. it returns
        # -(S + (1 - f)) for -(S + f); mirror the fraction back
        micros = value // dt.timedelta(microseconds=1)
        if micros < 0 and micros % 1_000_000:
            whole, frac = divmod(-micros, 1_000_000)
            return -dt.timedelta(seconds=whole, microseconds=1_000_000 - frac)
    if base in ("uuid", "inet6") and value == "":
        return b""  # all-zero value: the binlog drops trailing zero bytes, it does not pad back
    return value


def project_ours(value: Any, sql_type: str) -> Any:
    """Map mybinlog's value onto what python-mysql-replication can represent (information it loses)."""
    base = parse_type(sql_type).base
    if base == "set" and value == frozenset():
        return None  # the empty SET comes back as None (indistinguishable from NULL)
    if base in ("date", "datetime") and isinstance(value, str):
        return None  # zero / partial dates come back as None
    if base == "timestamp" and isinstance(value, str):
        return dt.datetime(1970, 1, 1, tzinfo=UTC)  # the zero TIMESTAMP comes back as the epoch
    return value


def _comparable(value: Any, sql_type: str) -> Any:
    value = normalize(value, sql_type)
    if isinstance(value, ipaddress.IPv6Address):
        return value.packed
    return value


def compare(
    ours: list[Decoded], oracle: list[OracleChange], column_types: dict[str, dict[str, str]]
) -> tuple[list[str], set[str]]:
    """(differences, names of the columns compared with a non-NULL value on both sides)."""
    problems: list[str] = []
    covered: set[str] = set()
    if len(ours) != len(oracle):
        problems.append(f"mybinlog decoded {len(ours)} row changes, python-mysql-replication {len(oracle)}")
    for i, (mine, theirs) in enumerate(zip(ours, oracle, strict=False)):
        where = f"change #{i} ({mine.kind} {mine.table})"
        if (mine.table, mine.kind) != (theirs.table, theirs.kind):
            problems.append(f"{where}: python-mysql-replication has {theirs.kind} {theirs.table}")
            continue
        types = column_types[mine.table]
        for image, a, b in (("before", mine.before, theirs.before), ("after", mine.after, theirs.after)):
            if a is None or b is None:
                if (a is None) != (b is None):
                    problems.append(f"{where}: {image} image present in only one decoder")
                continue
            if list(a) != list(b):
                problems.append(f"{where}: {image} columns {list(a)} != {list(b)}")
            for (name, value), other in zip(a.items(), b.values(), strict=False):  # by position
                sql_type = types[name]
                mine_v = _comparable(project_ours(value, sql_type), sql_type)
                theirs_v = _comparable(repair_oracle(other, sql_type), sql_type)
                if mine_v is not None and theirs_v is not None:
                    covered.add(name)
                if mine_v != theirs_v:
                    problems.append(
                        f"{where}: {image}.{name} ({sql_type}): mybinlog {value!r:.150}, "
                        f"python-mysql-replication {other!r:.150}"
                    )
    return problems, covered


@pytest.mark.parametrize("seed", SEEDS)
async def test_mybinlog_agrees_with_python_mysql_replication(server: MariaDBServer, seed: int) -> None:
    # python-mysql-replication (1.0) cannot read MySQL 9's VECTOR table maps ("0 is not a valid MetadataFieldType")
    w = write_workload(
        server,
        f"differential_{seed}",
        seed,
        n_transactions=25,
        statements_per_txn=4,
        ddl_every=5,
        max_rows_per_statement=4,
        omit_types=("vector",),
    )
    try:
        assert len(w.result.ddl) > 3 + 2, "ALTER TABLEs ran in the middle of the workload"
        events = await stream_events(server.repl_dsn, w.end, binlog_file=w.start[0], position=w.start[1])
        ours = decoded_changes(events, w.db)
        assert len(ours) == len(w.result.changes)
        server_id = 0x7A00_0000 + seed  # distinct from every other replica of the session server
        oracle = await asyncio.to_thread(read_with_oracle, server, w.db, w.start, server_id)
        problems, covered = compare(ours, oracle, w.result.column_types)
        assert not problems, f"{len(problems)} differences:\n" + "\n".join(problems[:25])
        typed = {name for name, _ in w.result.columns["all_types"]} - {"id", "rev"}
        typed -= {name for name in typed if name.startswith("extra_")}
        assert typed <= covered, "every column type was compared"
        assert typed >= ({n for n, _ in ALL_TYPES_COLUMNS} - {"c_uuid", "c_inet6"})
    finally:
        server.drop_database(w.db)
