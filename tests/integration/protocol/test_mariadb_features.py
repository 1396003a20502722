"""Binlog features against a real server: MariaDB's compressed events (MariaDB only), checksums off and following
rotations from file to file (both flavours)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mybinlog import BinlogStream, QueryEvent, RowsEvent, read_binlog_file


def _write(server: Any) -> None:
    server.execute("CREATE DATABASE c")
    server.execute("CREATE TABLE c.t (id INT PRIMARY KEY, v VARCHAR(200), n DECIMAL(10, 3), j JSON)")
    server.execute("INSERT INTO c.t VALUES (1, REPEAT('a', 150), 1.5, '{\"k\": 1}'), (2, 'bb', NULL, NULL)")
    server.execute("UPDATE c.t SET v = REPEAT('z', 80) WHERE id = 1")
    server.execute("DELETE FROM c.t WHERE id = 2")


EXPECTED_ROWS = [
    ("insert", [(1, "a" * 150, "1.500", '{"k": 1}'), (2, "bb", None, None)]),
    ("update", [((1, "a" * 150, "1.500", '{"k": 1}'), (1, "z" * 80, "1.500", '{"k": 1}'))]),
    ("delete", [(2, "bb", None, None)]),
]


def _plain_value(value: Any) -> Any:
    if isinstance(value, (dict, list)):
        return json.dumps(value)  # a JSON column is text on MariaDB, a decoded document on MySQL (binary JSON)
    return str(value) if value is not None and not isinstance(value, (int, str)) else value


def _plain(rows: list[Any]) -> list[Any]:
    def conv(row: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(_plain_value(v) for v in row)

    return [(conv(r[0]), conv(r[1])) if isinstance(r[0], tuple) else conv(r) for r in rows]


async def _stream_rows(server: Any) -> list[tuple[str, list[Any]]]:
    got = []
    async with BinlogStream(server.repl_dsn, from_beginning=True, blocking=False) as stream:
        async for event in stream:
            if isinstance(event, RowsEvent) and event.schema == "c":
                got.append((event.kind, _plain(event.rows)))
    return got


@pytest.mark.servers("mariadb")  # log_bin_compress and the *_COMPRESSED_EVENT types are MariaDB's (MySQL compresses
# whole transactions, binlog_transaction_compression: tests/integration/protocol/test_mysql_features.py covers it)
async def test_compressed_binlog_events(server_factory: Any) -> None:
    server = server_factory(log_bin_compress=1, log_bin_compress_min_len=10)
    _write(server)
    events = [e for p in server.binlog_paths() for e in read_binlog_file(p)]
    names = {e.type_name for e in events}
    # the server really compressed them, and we decoded them
    assert "QUERY_COMPRESSED_EVENT" in names
    assert {"WRITE_ROWS_COMPRESSED_EVENT_V1", "UPDATE_ROWS_COMPRESSED_EVENT_V1"} <= names
    ddl = [e.query for e in events if isinstance(e, QueryEvent) and e.compressed]
    assert any(q.startswith("CREATE TABLE c.t") for q in ddl)
    from_files = [(e.kind, _plain(e.rows)) for e in events if isinstance(e, RowsEvent) and e.schema == "c"]
    assert from_files == EXPECTED_ROWS
    assert await _stream_rows(server) == EXPECTED_ROWS


async def test_checksum_none(server_factory: Any) -> None:
    server = server_factory(binlog_checksum="NONE")
    _write(server)
    events = [e for p in server.binlog_paths() for e in read_binlog_file(p)]
    assert events[0].type_name == "FORMAT_DESCRIPTION_EVENT"
    assert events[0].checksum_alg == 0  # type: ignore[attr-defined]
    from_files = [(e.kind, _plain(e.rows)) for e in events if isinstance(e, RowsEvent) and e.schema == "c"]
    assert from_files == EXPECTED_ROWS
    assert await _stream_rows(server) == EXPECTED_ROWS


def test_files_follow_rotate_into_the_next_file(server_factory: Any) -> None:
    from mybinlog import RotateEvent, iter_binlog_events

    server = server_factory()
    server.execute("CREATE DATABASE f")
    server.execute("CREATE TABLE f.t (id INT PRIMARY KEY)")
    server.execute("INSERT INTO f.t VALUES (1)")
    server.flush_binary_logs()
    server.execute("INSERT INTO f.t VALUES (2)")
    server.flush_binary_logs()
    server.execute("INSERT INTO f.t VALUES (3)")
    first, *rest = server.binlog_paths()
    assert len(rest) == 2
    events = list(iter_binlog_events([first], follow_rotate=True))
    ids = [row[0] for e in events if isinstance(e, RowsEvent) for row in e.rows]
    assert ids == [1, 2, 3]
    assert [e.file for e in events if isinstance(e, RotateEvent)] == [str(first), str(rest[0])]
    assert {e.file for e in events} == {str(p) for p in (first, *rest)}
    # without following, only the first file
    alone = [row[0] for e in iter_binlog_events([first]) if isinstance(e, RowsEvent) for row in e.rows]
    assert alone == [1]
