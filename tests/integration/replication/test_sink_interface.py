"""The sink interface, implemented outside the package by following docs/architecture.md ("Writing a sink"):
examples/sqlite_sink.py replicates a real server into SQLite. The replica is compared row by row with the source
after an initial load, DML and DDL (both flavours), and after SIGKILLs of the replicating process at random moments
while a writer runs (MariaDB: the kill path is the sink's atomic write, the same for both flavours)."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.faults import REPO, child_env, execute
from tests.servers import MariaDBServer

pytestmark = pytest.mark.integration

sys.path.insert(0, str(REPO / "examples"))
from sqlite_sink import SqliteSink, row_json  # noqa: E402

from mybinlog.replication import Replicator  # noqa: E402


def _source_rows(server: Any, db: str) -> dict[tuple[str, str], str]:
    """(table, primary key JSON) -> row JSON, for every table of ``db`` (as the example sink keys them)."""
    out = {}
    for (table,) in server.query(f"SELECT table_name FROM information_schema.tables WHERE table_schema = '{db}'"):
        cols = [r[0] for r in server.query(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = %s "
            "ORDER BY ordinal_position", (db, table))]  # fmt: skip
        key = [r[0] for r in server.query(
            "SELECT column_name FROM information_schema.key_column_usage WHERE table_schema = %s AND table_name = %s "
            "AND constraint_name = 'PRIMARY' ORDER BY ordinal_position", (db, table))]  # fmt: skip
        for values in server.query(f"SELECT * FROM `{db}`.`{table}`"):
            row = dict(zip(cols, values, strict=True))
            pk = json.dumps([json.loads(row_json({c: row[c]}))[c] for c in key], default=str)
            out[(str(table), pk)] = row_json(row)
    return out


def _replica_rows(path: Path) -> dict[tuple[str, str], str]:
    with sqlite3.connect(path) as conn:
        return {(t, pk): row for t, pk, row in conn.execute("SELECT tbl, pk, row FROM rows")}


async def _catch_up(server: Any, db: str, path: Path) -> None:
    sink = SqliteSink(str(path), replica=db)
    await Replicator(server.repl_dsn, sink, database=db).run(until_caught_up=True)
    sink.db.close()


async def test_an_outside_sink_replicates_load_dml_and_ddl_exactly(server: Any, tmp_path: Path) -> None:
    db = server.create_database(f"sink_{server.flavor}")
    _run(server, db, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20), d DECIMAL(10,2), ts DATETIME)",
         "INSERT INTO t VALUES (1, 'a', 1.50, '2026-01-01 10:00:00'), (2, 'b', NULL, NULL)")  # fmt: skip
    path = tmp_path / "replica.sqlite"
    await _catch_up(server, db, path)  # the initial load
    assert _replica_rows(path) == _source_rows(server, db)
    for sql in (
        "INSERT INTO t VALUES (3, 'c', 3.25, '2026-02-02 00:00:01')",
        "UPDATE t SET v = 'bb', d = 2.00 WHERE id = 2",
        "UPDATE t SET id = 10 WHERE id = 1",  # a key change
        "DELETE FROM t WHERE id = 3",
        "ALTER TABLE t ADD COLUMN n INT, DROP COLUMN ts",
        "INSERT INTO t (id, v) VALUES (4, 'd')",
        "CREATE TABLE u (k VARCHAR(10) PRIMARY KEY, x INT)",
        "INSERT INTO u VALUES ('p', 1), ('q', 2)",
        "RENAME TABLE u TO w",
        "UPDATE w SET x = x + 1",
        "CREATE TABLE gone (id INT PRIMARY KEY)",
        "INSERT INTO gone VALUES (1)",
        "DROP TABLE gone",
    ):
        _run(server, db, sql)
    # an XA transaction prepared, another transaction in between, then committed: applied at its COMMIT
    _run(server, db, "XA START 'x1'", "INSERT INTO t (id, v) VALUES (20, 'xa')", "XA END 'x1'", "XA PREPARE 'x1'")
    _run(server, db, "INSERT INTO t (id, v) VALUES (21, 'between')")
    _run(server, db, "XA COMMIT 'x1'")
    await _catch_up(server, db, path)
    assert _replica_rows(path) == _source_rows(server, db)
    server.drop_database(db)


def _run(server: Any, db: str, *sql: str) -> None:
    execute(server, db, *sql)


async def test_sigkills_of_the_replicating_process_end_exact(mariadb: MariaDBServer, tmp_path: Path) -> None:
    server = mariadb
    db = server.create_database("sink_kill")
    _run(server, db, "CREATE TABLE t (id INT PRIMARY KEY, v INT, s VARCHAR(30))")
    path = tmp_path / "replica.sqlite"
    _kill_rounds(server, db, path)
    await _catch_up(server, db, path)
    assert _replica_rows(path) == _source_rows(server, db)
    assert len(_replica_rows(path)) > 0
    server.drop_database(db)


def _kill_rounds(server: MariaDBServer, db: str, path: Path) -> None:
    """Four runs of examples/sqlite_sink.py, each SIGKILLed after a random number of small transactions."""
    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    env = child_env()
    dsn = server.repl_dsn
    script = str(REPO / "examples" / "sqlite_sink.py")
    next_id = 0
    for _ in range(4):
        child = subprocess.Popen([sys.executable, script, dsn, db, str(path)], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
        try:
            for _ in range(rng.randint(20, 60)):  # small transactions while it runs
                next_id += 1
                _run(server, db, "BEGIN", f"INSERT INTO t VALUES ({next_id}, {next_id}, 'row {next_id}')",
                     f"UPDATE t SET v = v + 1 WHERE id = {rng.randint(1, next_id)}",
                     *([f"DELETE FROM t WHERE id = {rng.randint(1, next_id)}"] if rng.random() < 0.2 else []),
                     "COMMIT")  # fmt: skip
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(30)
        assert child.stderr is not None
        with child.stderr:
            assert child.returncode == -signal.SIGKILL, child.stderr.read().decode()[-2000:]
