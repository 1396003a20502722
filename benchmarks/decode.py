"""Decode benchmark: mybinlog, compiled core and pure Python, versus python-mysql-replication and mariadb-binlog,
same binlog, same run.

Six workloads: four written to a private MariaDB 10.11, two to a private Oracle MySQL 9.7 (each ROW, FULL image,
FULL metadata, CRC32):

- ``standard`` (DESIGN §8): 8 mixed columns (INT UNSIGNED, BIGINT, VARCHAR, DECIMAL, DATETIME(3), DOUBLE,
  TINYINT, VARCHAR(255)); single-row statements, 100 per transaction: 200k inserts + 50k updates + 50k deletes
  (--quick: a tenth);
- ``wide``: 65 columns (8 x INT, BIGINT, VARCHAR(32), DECIMAL(12,2), DATETIME(3), DOUBLE, TINYINT, SMALLINT);
  single-row statements, 40k + 10k + 10k (--quick: a tenth);
- ``json``: a JSON document of about 1.5 KB per row beside 3 small columns; single-row statements, 40k + 10k +
  10k (--quick: a fifth). MariaDB stores JSON as LONGTEXT, so every reader gets the document text;
- ``mixed``: 12 columns of mixed types (BIGINT UNSIGNED, DATETIME(6), TIMESTAMP(3), DECIMAL(12,2), ENUM, DATE,
  utf8mb4 TEXT with some NULLs, a small JSON, INT, VARCHAR(32), DOUBLE with some NULLs, TINYINT), written as
  multi-row statements, one per transaction: 200k rows inserted 100 per INSERT, 50k updated 50 per UPDATE, 50k
  deleted 100 per DELETE (--quick: a tenth). Rows events hold many rows here, unlike the other workloads;
- ``mysql-mixed``: the mixed workload written to MySQL 9.7 (``mybinlog.testing.MySQLServer``, GTIDs on, no
  transaction compression), where its JSON column is MySQL's binary JSON;
- ``mysql-json``: the json workload written to MySQL 9.7: JSON-heavy, every document in MySQL's binary JSON
  (nested objects and arrays, strings, integers, doubles, booleans), decoded by the compiled core's JSONB decoder.

Readers of the same binlog range (every figure also as a ratio to python-mysql-replication and to
``mariadb-binlog -v``, or ``mysqlbinlog -v`` 9.7 for the MySQL workloads, in the same run). Each mybinlog reader
runs twice, with the compiled core and in pure Python (``MYBINLOG_NO_EXTENSIONS=1``): the in-process readers in
two child processes of this script (one per implementation, the same code measuring the same way), the dumps as
processes with and without the variable.

- raw packet read: asyncmy socket, one ``read_event()`` per event, no decoding (the physical limit; measured in
  the compiled child);
- mybinlog stream, routing only: ``async for`` over BinlogStream, rows events routed by table, rows not decoded;
- mybinlog stream, full decode: the same plus ``event.rows`` of every rows event;
- mybinlog files, full decode: ``read_binlog_file`` on the binlog file;
- ``mybinlog dump --format jsonl`` of the binlog file, and of the server, to /dev/null (a new process: start-up
  included; bytecode cached as in an installed package);
- ``mariadb-binlog -v`` (C, from the file; its output is discarded); for the MySQL workloads ``mysqlbinlog -v``
  9.7 instead (C++, run chrooted in the MySQL root on a copy of the file inside it; the CPU is the child's);
- python-mysql-replication 1.x, file/position mode, every row read;
- python-mysql-replication writing every event as a JSON line with ``json`` (the work ``dump --format jsonl``
  does; in-process, so without the start-up the dump pays).

Fast readers run five times and the fastest run is reported (as timeit does: the run least disturbed by
the rest of the machine); the slow python-mysql-replication, whose 5-10 s are disturbed proportionally less, once.

    python benchmarks/decode.py [--quick] [--json] [--workloads standard,wide,json,mixed,mysql-mixed,mysql-json]
        [--no-profile]

The MySQL workloads need mysqld 9.x (``mybinlog.testing.find_mysql``: the root scripts/mysql-root.sh builds, PATH, or
MYBINLOG_MYSQLD); without it they are skipped with a note (the goals on them are then not measured).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pymysql
from _common import (
    REPO,
    Log,
    Measurement,
    emit,
    environment,
    goal,
    measure,
    run_quiet,
    start_server,
)

from mybinlog import BinlogStream, RowsEvent, read_binlog_file
from mybinlog.protocol._decoder import EventDecoder
from mybinlog.source._connection import BinlogConnection
from mybinlog.source._dsn import DSN
from mybinlog.testing._mariadb import MariaDBServer
from mybinlog.testing._mysql import MySQLServer, find_mysql, not_available_reason

# -- workloads ------------------------------------------------------------------------------------------------


@dataclass
class Workload:
    name: str
    title: str
    ddl: str
    insert: str
    row: Callable[[random.Random, int], tuple[Any, ...]]
    update: str
    update_args: Callable[[random.Random, int], tuple[Any, ...]]
    inserts: int
    updates: int
    deletes: int
    quick_scale: int = 10  # --quick divides the sizes by this
    single_row: bool = True  # one row per rows event (single-row statements)
    writer: Callable[[Any, Any, random.Random, Workload], None] | None = None  # (conn, cursor, rng, wl)
    flavor: str = "mariadb"  # the server written to: "mariadb" (10.11) or "mysql" (9.x)

    @property
    def rows(self) -> int:
        return self.inserts + self.updates + self.deletes


def _standard(scale: int) -> Workload:
    return Workload(
        name="standard",
        title="standard: 8 mixed columns (DESIGN §8)",
        ddl="""CREATE TABLE bench.t (
            id INT UNSIGNED NOT NULL PRIMARY KEY, a BIGINT NOT NULL, b VARCHAR(64) NOT NULL, c DECIMAL(12, 2),
            d DATETIME(3), e DOUBLE, f TINYINT, g VARCHAR(255))""",
        insert="INSERT INTO bench.t VALUES (%s, %s, %s, %s, '2024-05-06 07:08:09.123', %s, %s, %s)",
        row=lambda rng, i: (
            i,
            rng.randint(-(2**40), 2**40),
            f"name-{i}",
            f"{rng.random() * 1e6:.2f}",
            rng.random(),
            rng.randint(-128, 127),
            "x" * rng.randint(0, 200),
        ),
        update="UPDATE bench.t SET a = a + 1, g = %s WHERE id = %s",
        update_args=lambda rng, i: ("y" * rng.randint(0, 100), i),
        inserts=200_000 // scale,
        updates=50_000 // scale,
        deletes=50_000 // scale,
    )


_WIDE_TYPES = ["INT", "BIGINT", "VARCHAR(32)", "DECIMAL(12,2)", "DATETIME(3)", "DOUBLE", "TINYINT", "SMALLINT"]


def _wide_value(rng: random.Random, sql_type: str, i: int) -> Any:
    if sql_type == "INT":
        return rng.randint(-(2**31), 2**31 - 1)
    if sql_type == "BIGINT":
        return rng.randint(-(2**62), 2**62)
    if sql_type.startswith("VARCHAR"):
        return f"v{i}-" + "w" * rng.randint(0, 24)
    if sql_type.startswith("DECIMAL"):
        return f"{rng.uniform(-1e9, 1e9):.2f}"
    if sql_type.startswith("DATETIME"):
        return f"20{rng.randint(10, 30)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} 12:34:56.{rng.randint(0, 999):03d}"
    if sql_type == "DOUBLE":
        return rng.random() * 1e6
    if sql_type == "TINYINT":
        return rng.randint(-128, 127)
    return rng.randint(-32768, 32767)


def _wide(scale: int) -> Workload:
    columns = [(f"c{k}", _WIDE_TYPES[k % len(_WIDE_TYPES)]) for k in range(64)]
    ddl = (
        "CREATE TABLE bench.t (id INT UNSIGNED NOT NULL PRIMARY KEY, "
        + ", ".join(f"{name} {sql_type}" for name, sql_type in columns)
        + ")"
    )
    return Workload(
        name="wide",
        title="wide: 65 columns",
        ddl=ddl,
        insert=f"INSERT INTO bench.t VALUES (%s{', %s' * len(columns)})",
        row=lambda rng, i: (i, *(_wide_value(rng, t, i) for _, t in columns)),
        update="UPDATE bench.t SET c1 = c1 + 1, c2 = %s WHERE id = %s",
        update_args=lambda rng, i: (f"u{i}", i),
        inserts=40_000 // scale,
        updates=10_000 // scale,
        deletes=10_000 // scale,
    )


def _json_doc(rng: random.Random, i: int) -> str:
    doc = {
        "id": i,
        "name": f"customer-{i}",
        "active": rng.random() < 0.5,
        "score": round(rng.random() * 100, 3),
        "tags": [f"tag{rng.randint(0, 50)}" for _ in range(8)],
        "address": {"street": f"{rng.randint(1, 999)} Main Street", "city": "Springfield", "zip": "12345"},
        "orders": [
            {"sku": f"SKU-{rng.randint(0, 10**6)}", "qty": rng.randint(1, 9), "price": round(rng.random() * 500, 2),
             "note": "n" * rng.randint(0, 40)}
            for _ in range(10)
        ],
    }  # fmt: skip
    return json.dumps(doc)


def _json(scale: int) -> Workload:
    return Workload(
        name="json",
        title="json: 1.5 KB JSON documents",
        ddl="""CREATE TABLE bench.t (id INT UNSIGNED NOT NULL PRIMARY KEY, a BIGINT NOT NULL, doc JSON,
            tag VARCHAR(32))""",
        insert="INSERT INTO bench.t VALUES (%s, %s, %s, %s)",
        row=lambda rng, i: (i, rng.randint(0, 2**40), _json_doc(rng, i), f"tag-{i % 97}"),
        update="UPDATE bench.t SET a = a + 1, doc = JSON_SET(doc, '$.score', %s) WHERE id = %s",
        update_args=lambda rng, i: (rng.random(), i),
        inserts=40_000 // scale,
        updates=10_000 // scale,
        deletes=10_000 // scale,
        quick_scale=5,
    )


_MIXED_STATUS = ("new", "paid", "shipped", "cancelled", "refunded")
_MIXED_WORDS = ("order", "café", "naïve", "Straße", "日本語", "données", "🚀", "plain", "ascii", "Ελληνικά", "mañana",
                "ok", "delivered", "über", "façade", "東京", "😀")  # fmt: skip
_MIXED_INSERT_BATCH = 100  # rows per INSERT statement (and transaction)
_MIXED_UPDATE_BATCH = 50  # rows per UPDATE statement
_MIXED_DELETE_BATCH = 100  # rows per DELETE statement


def _mixed_datetime(rng: random.Random, year: str, digits: int) -> str:
    fraction = f".{rng.randint(0, 10**digits - 1):0{digits}d}" if digits else ""
    return (f"{year}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} {rng.randint(0, 23):02d}:"
            f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}{fraction}")  # fmt: skip


def _mixed_row(rng: random.Random, i: int) -> tuple[Any, ...]:
    note = None if rng.random() < 0.1 else " ".join(rng.choice(_MIXED_WORDS) for _ in range(rng.randint(1, 16)))
    meta = {"src": rng.choice(("web", "app", "api")), "v": rng.randint(1, 9),
            "tags": [f"t{rng.randint(0, 20)}" for _ in range(rng.randint(0, 3))]}  # fmt: skip
    if rng.random() < 0.3:
        meta["ref"] = f"réf-{rng.randint(0, 9999)}"
    return (
        i,
        _mixed_datetime(rng, "2024", 6),  # DATETIME(6)
        _mixed_datetime(rng, f"20{rng.randint(10, 30)}", 3),  # TIMESTAMP(3)
        f"{rng.uniform(-1e5, 1e8):.2f}",  # DECIMAL(12,2)
        rng.choice(_MIXED_STATUS),  # ENUM
        f"20{rng.randint(0, 39):02d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",  # DATE
        note,  # utf8mb4 TEXT, a tenth NULL
        json.dumps(meta, ensure_ascii=False),  # small JSON
        rng.randint(-(2**31), 2**31 - 1),  # INT
        f"SKU-{rng.randint(0, 10**8)}",  # VARCHAR(32)
        None if rng.random() < 0.05 else rng.random() * 1e4,  # DOUBLE, a twentieth NULL
        rng.randint(-128, 127),  # TINYINT
    )


def _write_mixed(conn: Any, cur: Any, rng: random.Random, wl: Workload) -> None:
    """Multi-row statements, one per transaction: INSERTs of 100 rows (pymysql's ``executemany`` sends one
    multi-row INSERT), UPDATEs of 50 rows by id range from the bottom, DELETEs of 100 rows from the top."""
    for start in range(0, wl.inserts, _MIXED_INSERT_BATCH):
        stop = min(start + _MIXED_INSERT_BATCH, wl.inserts)
        cur.executemany(wl.insert, [wl.row(rng, i) for i in range(start, stop)])
        conn.commit()
    for start in range(0, wl.updates, _MIXED_UPDATE_BATCH):
        stop = min(start + _MIXED_UPDATE_BATCH, wl.updates)
        cur.execute(wl.update, (*wl.update_args(rng, start), start, stop - 1))
        conn.commit()
    for start in range(wl.inserts - wl.deletes, wl.inserts, _MIXED_DELETE_BATCH):
        stop = min(start + _MIXED_DELETE_BATCH, wl.inserts)
        cur.execute("DELETE FROM bench.t WHERE id BETWEEN %s AND %s", (start, stop - 1))
        conn.commit()


def _mixed_update_args(rng: random.Random, i: int) -> tuple[Any, ...]:
    return rng.choice(_MIXED_STATUS), _mixed_datetime(rng, "2025", 3), rng.random(), f" — mis à jour {i} ✓"


def _mixed(scale: int) -> Workload:
    status = ", ".join(f"'{s}'" for s in _MIXED_STATUS)
    return Workload(
        name="mixed",
        title="mixed: 12 columns of mixed types, multi-row statements",
        ddl=f"""CREATE TABLE bench.t (
            id BIGINT UNSIGNED NOT NULL PRIMARY KEY, created DATETIME(6) NOT NULL, ts TIMESTAMP(3) NULL,
            amount DECIMAL(12, 2) NOT NULL, status ENUM({status}) NOT NULL, day DATE,
            note TEXT CHARACTER SET utf8mb4, meta JSON, qty INT NOT NULL, code VARCHAR(32) NOT NULL, ratio DOUBLE,
            flag TINYINT NOT NULL) DEFAULT CHARSET = utf8mb4""",
        insert="INSERT INTO bench.t VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        row=_mixed_row,
        update="""UPDATE bench.t SET status = %s, amount = amount + 1.25, ts = %s, ratio = %s,
            note = CONCAT(COALESCE(note, ''), %s) WHERE id BETWEEN %s AND %s""",
        update_args=_mixed_update_args,
        inserts=200_000 // scale,
        updates=50_000 // scale,
        deletes=50_000 // scale,
        single_row=False,
        writer=_write_mixed,
    )


def _mysql_mixed(scale: int) -> Workload:
    title = "MySQL 9.7, mixed: 12 columns of mixed types (a small binary JSON), multi-row statements"
    return replace(_mixed(scale), name="mysql-mixed", flavor="mysql", title=title)


def _mysql_json(scale: int) -> Workload:
    title = "MySQL 9.7, json: 1.5 KB documents in MySQL's binary JSON"
    return replace(_json(scale), name="mysql-json", flavor="mysql", title=title)


WORKLOADS = {"standard": _standard, "wide": _wide, "json": _json, "mixed": _mixed, "mysql-mixed": _mysql_mixed,
             "mysql-json": _mysql_json}  # fmt: skip

# the C reader each flavour's workloads are compared with: (result key, table label, chart label)
C_READERS = {
    "mariadb": ("mariadb-binlog", "`mariadb-binlog -v` (C, file)", "mariadb-binlog -v"),
    "mysql": ("mysqlbinlog", "`mysqlbinlog -v` 9.7 (C++, file, chrooted)", "mysqlbinlog -v"),
}


def _write_single_rows(conn: Any, cur: Any, rng: random.Random, wl: Workload) -> None:
    """Single-row statements, 100 per transaction: inserts, updates from the bottom, deletes from the top."""
    n = 0
    for i in range(wl.inserts):
        cur.execute(wl.insert, wl.row(rng, i))
        n += 1
        if n % 100 == 0:
            conn.commit()
    for i in range(wl.updates):
        cur.execute(wl.update, wl.update_args(rng, i))
        n += 1
        if n % 100 == 0:
            conn.commit()
    for i in range(wl.deletes):
        cur.execute("DELETE FROM bench.t WHERE id = %s", (wl.inserts - 1 - i,))
        n += 1
        if n % 100 == 0:
            conn.commit()


def start_workload_server(base: Path, wl: Workload) -> MariaDBServer:
    """The workload's private server: MariaDB 10.11 (_common.start_server) or MySQL 9.x (one binlog file, FULL row
    metadata, GTIDs on, no transaction compression: the fixture's defaults)."""
    if wl.flavor == "mysql":
        server = MySQLServer(base / f"decode-{wl.name}", name=f"decode-{wl.name}",
                             options={"max_binlog_size": 1 << 30})  # fmt: skip
        server.start()
        return server
    return start_server(base, f"decode-{wl.name}")


def write_workload(server: MariaDBServer, wl: Workload) -> None:
    rng = random.Random(7)
    conn = pymysql.connect(**server.connect_kwargs("admin"), autocommit=False)
    with conn.cursor() as cur:
        cur.execute("CREATE DATABASE bench")
        cur.execute(wl.ddl)
        conn.commit()
        if wl.writer is not None:
            wl.writer(conn, cur, rng, wl)
        else:
            _write_single_rows(conn, cur, rng, wl)
        conn.commit()
    conn.close()


# -- readers --------------------------------------------------------------------------------------------------


async def raw_read(dsn: str, file: str) -> int:
    conn = await BinlogConnection.connect(DSN.parse(dsn))
    n = 0
    async with conn:
        await conn.start_dump(file=file, position=4, blocking=False)
        while await conn.read_event() is not None:
            n += 1
    return n


async def stream_read(dsn: str, file: str, decode: bool) -> int:
    rows = 0
    async with BinlogStream(dsn, binlog_file=file, blocking=False) as stream:
        async for event in stream:
            if isinstance(event, RowsEvent) and event.table_name == "t" and event.schema == "bench":
                rows += len(event.rows) if decode else 1
    return rows


def files_read(paths: list[Path]) -> int:
    rows = 0
    for path in paths:
        for event in read_binlog_file(path):
            if isinstance(event, RowsEvent) and event.table_name == "t" and event.schema == "bench":
                rows += len(event.rows)
    return rows


def implementation_env(implementation: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a child process running ``implementation``: ``"compiled"`` (the compiled core, when it
    is built) or ``"python"`` (``MYBINLOG_NO_EXTENSIONS=1``, read when mybinlog is imported)."""
    env = dict(os.environ if base is None else base)
    env.pop("MYBINLOG_NO_EXTENSIONS", None)
    if implementation == "python":
        env["MYBINLOG_NO_EXTENSIONS"] = "1"
    return env


def _installed_env(pycache: Path, implementation: str) -> dict[str, str]:
    """The environment of a ``mybinlog`` process started as from an installed package: bytecode is cached (in
    ``pycache``, outside the checkout) even where PYTHONDONTWRITEBYTECODE is set, as ``pip install`` compiles it.
    The first of the best-of-5 runs writes the cache."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return implementation_env(implementation, env)


def dump_jsonl(paths: list[Path], pycache: Path, implementation: str) -> int:
    cmd = [sys.executable, "-m", "mybinlog", "dump", "--format", "jsonl", "--file", *map(str, paths)]
    run_quiet(cmd, env=_installed_env(pycache, implementation), cwd=REPO)
    return 0


def dump_jsonl_server(dsn: str, file: str, pycache: Path, implementation: str) -> int:
    cmd = [sys.executable, "-m", "mybinlog", "dump", "--format", "jsonl", "--dsn", dsn, "--binlog-file", file,
           "--stop-at-end"]  # fmt: skip
    run_quiet(cmd, env=_installed_env(pycache, implementation), cwd=REPO)
    return 0


def mariadb_binlog(paths: list[Path]) -> int:
    with open(os.devnull, "wb") as devnull:
        subprocess.run(
            ["mariadb-binlog", "--base64-output=decode-rows", "-v", *map(str, paths)], check=True, stdout=devnull
        )
    return 0


def mysqlbinlog(argv: list[str]) -> int:
    """``mysqlbinlog -v`` (``argv``: the chrooted command line, ending with the file as mysqlbinlog sees it)."""
    with open(os.devnull, "wb") as devnull:
        subprocess.run(argv, check=True, stdout=devnull)
    return 0


def pymysqlreplication(server: MariaDBServer, file: str) -> int:
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    kwargs = server.connect_kwargs("repl")
    settings = {"host": kwargs["host"], "port": kwargs["port"], "user": kwargs["user"], "passwd": kwargs["password"]}
    stream = BinLogStreamReader(
        connection_settings=settings,
        server_id=4242,
        blocking=False,
        resume_stream=True,
        log_file=file,
        log_pos=4,
        only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent],
        is_mariadb=False,
    )
    rows = 0
    for event in stream:
        for _row in event.rows:
            rows += 1
    stream.close()
    return rows


def _jsonable(value: Any) -> Any:
    """python-mysql-replication gives a MySQL JSON column as a dict or list with bytes keys and strings: as text."""
    if isinstance(value, dict):
        return {(k.decode("utf-8", "replace") if isinstance(k, bytes) else k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def _jsonable_row(values: Any) -> list[Any]:
    return [_jsonable(v) if isinstance(v, (dict, list)) else v for v in values]


def pymysqlreplication_jsonl(server: MariaDBServer, file: str) -> int:
    """python-mysql-replication doing what ``mybinlog dump --format jsonl`` does: every event of the range as
    one JSON line (its header fields, and for rows events the table, columns and rows) written to /dev/null.
    In-process: no interpreter start-up counted, unlike the dump."""
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import RowsEvent as PmrRowsEvent
    from pymysqlreplication.row_event import UpdateRowsEvent as PmrUpdateRowsEvent

    kwargs = server.connect_kwargs("repl")
    settings = {"host": kwargs["host"], "port": kwargs["port"], "user": kwargs["user"], "passwd": kwargs["password"]}
    stream = BinLogStreamReader(
        connection_settings=settings, server_id=4243, blocking=False, resume_stream=True, log_file=file, log_pos=4,
        is_mariadb=False,
    )  # fmt: skip
    rows = 0
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode
    with open(os.devnull, "w") as out:
        for event in stream:
            head = {
                "type": type(event).__name__, "timestamp": event.timestamp, "server_id": event.packet.server_id,
                "log_pos": event.packet.log_pos, "size": event.event_size, "flags": event.packet.flags,
            }  # fmt: skip
            if isinstance(event, PmrRowsEvent):
                head["schema"], head["table"] = event.schema, event.table
                head["columns"] = [c.name for c in event.columns]
                if isinstance(event, PmrUpdateRowsEvent):
                    head["rows"] = [
                        {"before": _jsonable_row(r["before_values"].values()),
                         "after": _jsonable_row(r["after_values"].values())}
                        for r in event.rows
                    ]  # fmt: skip
                else:
                    head["rows"] = [_jsonable_row(r["values"].values()) for r in event.rows]
                rows += len(event.rows)
            out.write(dumps(head) + "\n")
    stream.close()
    return rows


# -- limits: what a pure-Python reader cannot avoid -------------------------------------------------------------

_HEADER = struct.Struct("<IBIIIH").unpack_from
_TID = struct.Struct("<IHH").unpack_from


class _Slots:
    __slots__ = ("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k")


def _floor(batches: list[list[bytes]], objects: bool) -> int:
    """The least a Python decoder does per event: header, CRC32, table lookup (and with ``objects`` one slotted
    object of 11 fields per event). Returns the number of rows events seen."""
    cache: dict[bytes, tuple[int, bytes]] = {}
    tables: dict[int, bytes] = {}
    crc32 = zlib.crc32
    new = object.__new__
    n = 0
    for batch in batches:
        for data in batch:
            ts, tc, sid, size, log_pos, flags = _HEADER(data)
            if crc32(data) != 0x2144DF1C:
                raise ValueError("bad CRC32")
            table: Any = None
            tid = 0
            if tc == 19:
                key = data[19 : size - 4]
                hit = cache.get(key)
                if hit is None:
                    hit = cache[key] = (int.from_bytes(key[:6], "little"), key)
                tid, table = hit
                tables[tid] = table
            elif tc in (23, 24, 25):
                low, high, _flags = _TID(data, 19)
                tid = low | high << 32
                table = tables.get(tid)
                n += 1
            if objects:
                e = new(_Slots)
                e.a, e.b, e.c, e.d, e.e, e.f = ts, tc, sid, size, log_pos, flags
                e.g = e.h = None
                e.i = False
                e.j, e.k = tid, table
    return n


async def _capture(dsn: str, file: str) -> tuple[list[list[bytes]], bool]:
    conn = await BinlogConnection.connect(DSN.parse(dsn))
    batches = []
    async with conn:
        await conn.start_dump(file=file, position=4, blocking=False)
        while (batch := await conn.read_events()) is not None:
            batches.append(batch)
        return batches, conn.checksum


async def _timed_raw(dsn: str, file: str, batched: bool) -> float:
    conn = await BinlogConnection.connect(DSN.parse(dsn))
    async with conn:
        await conn.start_dump(file=file, position=4, blocking=False)
        t0 = time.process_time()
        if batched:
            while await conn.read_events() is not None:
                pass
        else:
            while await conn.read_event() is not None:
                pass
        return time.process_time() - t0


async def _timed_route(dsn: str, file: str) -> float:
    async with BinlogStream(dsn, binlog_file=file, blocking=False) as stream:
        t0 = time.process_time()
        async for event in stream:
            if isinstance(event, RowsEvent) and event.table_name == "t" and event.schema == "bench":
                pass
        return time.process_time() - t0


LIMIT_ROWS = [
    "raw packet read, one read_event() per event (the reference)",
    "raw packet read, read_events() batches",
    "floor: header + CRC32 + table lookup per event, no objects (pure Python)",
    "floor + one slotted object per event",
    "mybinlog EventDecoder.decode_batch (every event an Event)",
    "mybinlog stream, routing only (read + decode + positions + async for)",
]


def limits(dsn: str, file: str) -> tuple[int, list[float]]:
    """CPU microseconds per event (best of 5) of each of LIMIT_ROWS, in this process: the raw read, the least
    any Python decoder must do, and mybinlog. Returns the number of events too."""
    batches, checksum = asyncio.run(_capture(dsn, file))
    events = sum(len(b) for b in batches)

    def best(fn: Callable[[], float]) -> float:
        return min(fn() for _ in range(5)) / events * 1e6

    def cpu_of(fn: Callable[[], Any]) -> float:
        t0 = time.process_time()
        fn()
        return time.process_time() - t0

    def decode_all() -> None:
        decoder = EventDecoder(checksum=checksum)
        for batch in batches:
            decoder.decode_batch(batch, [])

    return events, [
        best(lambda: asyncio.run(_timed_raw(dsn, file, batched=False))),
        best(lambda: asyncio.run(_timed_raw(dsn, file, batched=True))),
        best(lambda: cpu_of(lambda: _floor(batches, objects=False))),
        best(lambda: cpu_of(lambda: _floor(batches, objects=True))),
        best(lambda: cpu_of(decode_all)),
        best(lambda: asyncio.run(_timed_route(dsn, file))),
    ]


def limits_table(events: int, by_impl: dict[str, list[float]]) -> dict[str, Any]:
    """The Limits table: one pair of columns (CPU us/event, raw read / this) per implementation measured."""
    columns = ["what"]
    for impl in by_impl:
        columns += [f"CPU us/event ({IMPL_LABEL[impl]})", f"raw read / this ({IMPL_LABEL[impl]})"]
    rows: list[list[Any]] = []
    for i, what in enumerate(LIMIT_ROWS):
        row: list[Any] = [what]
        for us in by_impl.values():
            row += [us[i], us[0] / us[i]]
        rows.append(row)
    return {
        "title": f"Limits: CPU microseconds per event ({events:,} events of the standard workload, best of 5)",
        "columns": columns,
        "rows": rows,
        "notes": (
            "The routing goal compares mybinlog with the raw read, which itself only cuts packets. Reading the "
            "packets in batches, then the least that any pure-Python decoder must do per event (unpack the "
            "header, verify the CRC32, look the table up), then one object per event, already add up to more than "
            "the raw read; an `async for` step per event comes on top. Each column is measured in its own child "
            "process (the floor rows are the same Python code in both). See the analysis below."
        ),
    }


# -- profiles -------------------------------------------------------------------------------------------------


def profile_table(title: str, fn: Callable[[], Any], top: int = 12) -> dict[str, Any]:
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    stats = pstats.Stats(prof)
    total = stats.total_tt  # type: ignore[attr-defined]
    entries = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:top]  # type: ignore[attr-defined]
    rows = []
    for (filename, line, func), (_cc, ncalls, tottime, cumtime, _callers) in entries:
        where = Path(filename).name if filename.startswith("/") else filename
        rows.append([f"{func} ({where}:{line})", ncalls, 100 * tottime / total, 100 * cumtime / total])
    return {
        "title": title,
        "columns": ["function", "calls", "own time %", "cumulative %"],
        "rows": rows,
        "notes": f"cProfile, {total:.2f} s profiled (profiling slows Python code several times; shares matter).",
    }


def best_of(fn: Callable[[], Any], runs: int) -> Measurement:
    """The least wall time and the least CPU time of ``runs`` runs (all must give the same result): each the run
    least disturbed by the rest of the machine, as timeit does. Taken separately, so that the CPU ratios (the
    steadier on a busy machine) do not depend on which run had the best wall time."""
    results = [measure(fn) for _ in range(runs)]
    answers = {repr(m.result) for m in results}
    if len(answers) != 1:
        raise RuntimeError(f"runs disagree: {sorted(answers)}")
    return Measurement(min(m.wall for m in results), min(m.cpu for m in results), results[0].result)


# -- readers, compiled core and pure Python ----------------------------------------------------------------------

IMPLEMENTATIONS = ("compiled", "python")
IMPL_LABEL = {"compiled": "compiled", "python": "pure Python"}

RAW = ("raw", "raw packet read (asyncmy socket, no decoding: the physical limit)", "raw packet read")
# mybinlog's readers, each measured with both implementations: key, label, chart label
MYBINLOG_READERS = [
    ("route", "mybinlog stream, routing only, rows not decoded", "mybinlog stream, routing"),
    ("stream", "mybinlog stream, full decode", "mybinlog stream, full decode"),
    ("files", "mybinlog files, full decode", "mybinlog files, full decode"),
    ("dump", "`mybinlog dump --format jsonl` from the file, start-up included", "mybinlog dump jsonl (file)"),
    ("dump-server", "`mybinlog dump --format jsonl` from the server, start-up included",
     "mybinlog dump jsonl (server)"),
    ("dump-empty", "`mybinlog dump --format jsonl` of an empty binlog file: the start-up alone",
     "mybinlog dump jsonl start-up"),
]  # fmt: skip
IN_PROCESS = ("route", "stream", "files")  # run in a child process of this script, one per implementation
PEERS = [
    ("mariadb-binlog", "`mariadb-binlog -v` (C, file)", "mariadb-binlog -v"),
    ("pymysqlrepl", "python-mysql-replication (file/position mode)", "python-mysql-replication"),
    ("pymysqlrepl-jsonl", "python-mysql-replication + json, every event as a JSON line (what dump does)",
     "python-mysql-replication + json"),
]  # fmt: skip


def reader_rows(flavor: str = "mariadb") -> list[tuple[str, str, str]]:
    """(result key, table label, chart label) of every reader in table order; mybinlog's as ``key:impl``; the C
    reader of the workload's server flavour (``mariadb-binlog -v`` or ``mysqlbinlog -v``)."""
    rows = [RAW]
    for key, label, short in MYBINLOG_READERS:
        if key == "dump-empty":  # no rows: in the notes and the speed-up table only
            continue
        for impl in IMPLEMENTATIONS:
            rows.append((f"{key}:{impl}", f"{label} ({IMPL_LABEL[impl]})", f"{short} ({IMPL_LABEL[impl]})"))
    return [*rows, C_READERS[flavor], *PEERS[1:]]


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    """What a child process of this script measures (``--worker``): the in-process readers, best of
    ``spec["runs"]``, and with ``spec["limits"]`` the Limits, with the implementation this process imported
    (chosen by its parent with MYBINLOG_NO_EXTENSIONS, see implementation_env)."""
    from mybinlog.protocol._accel import implementation

    impl = implementation()
    log = Log(f"decode {IMPL_LABEL[impl]}")
    dsn, file, paths = spec["dsn"], spec["file"], [Path(p) for p in spec["paths"]]
    runs: dict[str, Callable[[], Any]] = {
        "raw": lambda: asyncio.run(raw_read(dsn, file)),
        "route": lambda: asyncio.run(stream_read(dsn, file, decode=False)),
        "stream": lambda: asyncio.run(stream_read(dsn, file, decode=True)),
        "files": lambda: files_read(paths),
    }
    out: dict[str, Any] = {"implementation": impl, "results": {}}
    for key in spec["readers"]:
        m = best_of(runs[key], spec["runs"])
        out["results"][key] = {"wall": m.wall, "cpu": m.cpu, "result": m.result}
        log(f"{spec['workload']}: {key} {m.wall:.3f} s")
    if spec.get("limits"):
        out["events"], out["limits"] = limits(dsn, file)
    return out


def run_worker(spec: dict[str, Any], implementation: str, timeout: float) -> dict[str, Any]:
    """Run :func:`worker` in a child process with ``implementation`` (its progress goes to our stderr)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)]
    proc = subprocess.run(cmd, env=implementation_env(implementation), cwd=REPO, stdout=subprocess.PIPE,
                          check=False, timeout=timeout)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"the {implementation} child process failed with exit status {proc.returncode}")
    result: dict[str, Any] = json.loads(proc.stdout.decode().strip().splitlines()[-1])
    return result


# -- one workload ---------------------------------------------------------------------------------------------


def run_workload(base: Path, wl: Workload, log: Log, profile: bool, quick: bool) -> dict[str, Any]:
    server = start_workload_server(base, wl)
    c_key = C_READERS[wl.flavor][0]
    inside: Path | None = None  # the copy of the binlog inside the MySQL root
    try:
        empty = base / f"{wl.name}-empty.bin"  # the server's binlog before the workload: a few events
        shutil.copy(server.binlog_paths()[0], empty)
        t0 = time.perf_counter()
        write_workload(server, wl)
        written = time.perf_counter() - t0
        file = server.binlog_files()[0][0]
        paths = [server.binlog_paths()[0]]
        copy = base / f"{wl.name}-{paths[0].name}"  # files readers read a copy: the server cannot change it
        shutil.copy(paths[0], copy)
        paths = [copy]
        size = copy.stat().st_size
        dsn = server.repl_dsn
        log(f"{wl.name}: {wl.rows} rows, {size / 1e6:.1f} MB binlog, written in {written:.1f} s")
        results: dict[str, Measurement] = {}
        implementations: dict[str, str] = {}
        limits_us: dict[str, list[float]] = {}
        events = 0
        spec = {"workload": wl.name, "dsn": dsn, "file": file, "paths": [str(p) for p in paths], "runs": 5,
                "limits": wl.name == "standard"}  # fmt: skip
        for impl in IMPLEMENTATIONS:
            readers = (["raw"] if impl == "compiled" else []) + list(IN_PROCESS)
            out = run_worker({**spec, "readers": readers}, impl, 600.0 if quick else 7200.0)
            implementations[impl] = out["implementation"]
            for key, r in out["results"].items():
                results[key if key == "raw" else f"{key}:{impl}"] = Measurement(r["wall"], r["cpu"], r["result"])
            if "limits" in out:
                events, limits_us[impl] = out["events"], out["limits"]
        pycache = base / "pycache"
        runs: dict[str, Callable[[], Any]] = {}
        for impl in IMPLEMENTATIONS:
            runs[f"dump:{impl}"] = lambda impl=impl: dump_jsonl(paths, pycache, impl)  # type: ignore[misc]
            runs[f"dump-server:{impl}"] = lambda impl=impl: dump_jsonl_server(dsn, file, pycache, impl)  # type: ignore[misc]
            runs[f"dump-empty:{impl}"] = lambda impl=impl: dump_jsonl([empty], pycache, impl)  # type: ignore[misc]
        if wl.flavor == "mysql":
            assert isinstance(server, MySQLServer)
            tool = server.binaries.tool("mysqlbinlog")
            if tool is None:
                raise RuntimeError(f"mysqlbinlog not found beside {server.binaries.mysqld}")
            inside = server.binaries.scratch_dir("mybinlog-bench-")
            shutil.copy(paths[0], inside / paths[0].name)
            argv = [*tool, "--base64-output=decode-rows", "-v", server.binaries.inside(inside / paths[0].name)]
            runs["mysqlbinlog"] = lambda: mysqlbinlog(argv)
        else:
            runs["mariadb-binlog"] = lambda: mariadb_binlog(paths)
        runs["pymysqlrepl"] = lambda: pymysqlreplication(server, file)
        runs["pymysqlrepl-jsonl"] = lambda: pymysqlreplication_jsonl(server, file)
        for key, fn in runs.items():
            results[key] = best_of(fn, 1 if key.startswith("pymysqlrepl") else 5)
            log(f"{wl.name}: {key} {results[key].wall:.3f} s")
        for key in ("stream:compiled", "stream:python", "files:compiled", "files:python", "pymysqlrepl",
                    "pymysqlrepl-jsonl") + (("route:compiled",) if wl.single_row else ()):  # fmt: skip
            # route counts rows events: one row each with single-row statements
            if results[key].result != wl.rows:
                raise RuntimeError(f"{wl.name}: {key} saw {results[key].result} rows, expected {wl.rows}")
        if results["route:compiled"].result != results["route:python"].result:
            raise RuntimeError(f"{wl.name}: routing saw {results['route:compiled'].result} rows events compiled, "
                               f"{results['route:python'].result} in pure Python")  # fmt: skip
        profiles = []
        if limits_us:
            profiles.append(limits_table(events, limits_us))
        if profile:
            from mybinlog.protocol._accel import implementation

            here = IMPL_LABEL[implementation()]
            profiles.append(
                profile_table(
                    f"{wl.name}: where the time goes, stream routing only ({here})",
                    lambda: asyncio.run(stream_read(dsn, file, decode=False)),
                )
            )
            profiles.append(
                profile_table(f"{wl.name}: where the time goes, files full decode ({here})", lambda: files_read(paths))
            )
        return {
            "workload": wl,
            "binlog_bytes": size,
            "written_seconds": written,
            "results": results,
            "implementations": implementations,
            "profiles": profiles,
            "limits": limits_us,
            "server": server.version,
            "c_key": c_key,
        }
    finally:
        server.stop()
        if inside is not None:
            shutil.rmtree(inside, ignore_errors=True)


# -- the document -----------------------------------------------------------------------------------------------


def _ratio(a: float, b: float) -> float:
    return a / max(b, 1e-9)


def reader_columns(flavor: str) -> list[str]:
    c = C_READERS[flavor][2]
    return ["reader", "seconds", "CPU seconds", "rows/s", f"x {c}", f"x {c} (CPU)", "x python-mysql-replication",
            "x python-mysql-replication (CPU)"]  # fmt: skip


READER_COLUMNS = reader_columns("mariadb")


def workload_table(wl: Workload, out: dict[str, Any]) -> dict[str, Any]:
    results: dict[str, Measurement] = out["results"]
    pmr, mb = results["pymysqlrepl"], results[out["c_key"]]
    c_tool = f"`{C_READERS[wl.flavor][2]}`"
    rows = []
    for key, label, _short in reader_rows(wl.flavor):
        m = results[key]
        rows.append([label, m.wall, m.cpu, wl.rows / m.wall, _ratio(mb.wall, m.wall), _ratio(mb.cpu, m.cpu),
                     _ratio(pmr.wall, m.wall), _ratio(pmr.cpu, m.cpu)])  # fmt: skip
    jsonl = results["pymysqlrepl-jsonl"].wall
    return {
        "title": f"Decode, {wl.title}: {wl.rows:,} rows ({wl.inserts:,} inserts, {wl.updates:,} updates, "
        f"{wl.deletes:,} deletes), {out['binlog_bytes'] / 1e6:.1f} MB of binlog",
        "columns": reader_columns(wl.flavor),
        "rows": rows,
        "notes": "Seconds: wall time of the fastest of 5 runs (python-mysql-replication: 1 run). CPU seconds: the "
        "least of the same runs, of the measuring process and its children, not the server. The stream and files "
        "readers (and the raw read) run "
        "in a child process of the benchmark, one with the compiled core and one with MYBINLOG_NO_EXTENSIONS=1 "
        "(pure Python); the dumps are processes started with or without it. The ratios compare seconds (and CPU "
        f"seconds) with {c_tool}'s and python-mysql-replication's in the same run; on a busy machine the "
        "CPU ratio is the steadier. Doing the same work (every event as a JSON line), `mybinlog dump` is "
        f"{_ratio(jsonl, results['dump:compiled'].wall):.1f}x (file) and "
        f"{_ratio(jsonl, results['dump-server:compiled'].wall):.1f}x (server) faster compiled, "
        f"{_ratio(jsonl, results['dump:python'].wall):.1f}x and "
        f"{_ratio(jsonl, results['dump-server:python'].wall):.1f}x "
        "in pure Python, than python-mysql-replication with json, start-up included. The dump's start-up alone "
        f"(an empty binlog file) takes {results['dump-empty:compiled'].wall:.2f} s "
        f"({results['dump-empty:compiled'].cpu:.2f} s of CPU) compiled, {results['dump-empty:python'].wall:.2f} s "
        f"({results['dump-empty:python'].cpu:.2f} s) in pure Python.",
    }


def speedup_table(outs: list[dict[str, Any]]) -> dict[str, Any]:
    columns = ["reader"]
    for out in outs:
        columns += [f"{out['workload'].name} (CPU)", f"{out['workload'].name} (wall)"]
    rows = []
    for key, label, _short in MYBINLOG_READERS:
        row: list[Any] = [label]
        for out in outs:
            r = out["results"]
            c, p = r[f"{key}:compiled"], r[f"{key}:python"]
            row += [_ratio(p.cpu, c.cpu), _ratio(p.wall, c.wall)]
        rows.append(row)
    return {
        "title": "Compiled core: speed-up over pure Python (pure-Python seconds / compiled seconds, same run)",
        "columns": columns,
        "rows": rows,
        "notes": "Per reader and workload, from the tables above: how many times faster the reader runs with the "
        "compiled core than with MYBINLOG_NO_EXTENSIONS=1. The dumps include the process start-up, which the "
        "compiled core does not speed up.",
    }


def goals_of(outs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_name = {out["workload"].name: out for out in outs}
    goals: list[dict[str, Any]] = []

    def compiled_ok(out: dict[str, Any]) -> tuple[bool, str]:
        impl = out["implementations"]["compiled"]
        if impl == "compiled":
            return True, ""
        return False, f"the compiled core is not available (the child ran {impl}); "

    def add(text: str, value: float, target: float, detail: str, out: dict[str, Any]) -> None:
        ok, why = compiled_ok(out)
        g = goal(text, value, target, detail=why + detail)
        g["met"] = g["met"] and ok
        goals.append(g)

    for name, out in by_name.items():
        r = out["results"]
        c_tool = f"`{C_READERS[out['workload'].flavor][2]}`" + (" 9.7" if out["workload"].flavor == "mysql" else "")
        mb, sc, sp, fc = r[out["c_key"]], r["stream:compiled"], r["stream:python"], r["files:compiled"]
        add(f"full decode, stream (compiled) >= 2x {c_tool}, {name} workload (CPU)", _ratio(mb.cpu, sc.cpu),
            2.0, f"wall {_ratio(mb.wall, sc.wall):.2f}x; files (compiled): CPU {_ratio(mb.cpu, fc.cpu):.2f}x; "
            f"stream in pure Python: CPU {_ratio(mb.cpu, sp.cpu):.2f}x", out)  # fmt: skip
    if "standard" in by_name and by_name["standard"]["limits"]:
        # CPU per event, best of 5 (the Limits table): the raw read of a quick run takes about 0.02 s, and wall
        # times that short swing with whatever else the machine does
        out = by_name["standard"]
        r, lim = out["results"], out["limits"]
        raw_us, route_us = lim["compiled"][0], lim["compiled"][-1]
        detail = f"raw {raw_us:.2f} us/event, routing {route_us:.2f} us/event; wall (best of 5): " \
                 f"{_ratio(r['raw'].wall, r['route:compiled'].wall):.2f}x"  # fmt: skip
        if "python" in lim:
            detail += f"; pure Python: {lim['python'][0] / lim['python'][-1]:.2f}x"
        add("routing, rows not decoded (compiled) >= 1.0x the raw packet read, standard workload (CPU per event, "
            "best of 5)", raw_us / route_us, 1.0, detail, out)  # fmt: skip
    for name, out in by_name.items():
        r = out["results"]
        c_key, c_tool = out["c_key"], C_READERS[out["workload"].flavor][2]
        mb, dc, ds, dp = r[c_key], r["dump:compiled"], r["dump-server:compiled"], r["dump:python"]
        add(f"`mybinlog dump --format jsonl` from the file (compiled, start-up included) >= 1.0x `{c_tool}`, "
            f"{name} workload (CPU)", _ratio(mb.cpu, dc.cpu), 1.0,
            f"wall {_ratio(mb.wall, dc.wall):.2f}x; from the server: CPU {_ratio(mb.cpu, ds.cpu):.2f}x; "
            f"pure Python: CPU {_ratio(mb.cpu, dp.cpu):.2f}x; CPU seconds: {c_key} {mb.cpu:.2f}, dump "
            f"{dc.cpu:.2f} of which start-up {r['dump-empty:compiled'].cpu:.2f}", out)  # fmt: skip
    if "standard" in by_name:
        out = by_name["standard"]
        r = out["results"]
        pmr, sc, fc, sp = r["pymysqlrepl"], r["stream:compiled"], r["files:compiled"], r["stream:python"]
        add("full decode, stream (compiled) >= 20x python-mysql-replication, standard workload (CPU)",
            _ratio(pmr.cpu, sc.cpu), 20.0, f"wall {_ratio(pmr.wall, sc.wall):.1f}x; files (compiled): CPU "
            f"{_ratio(pmr.cpu, fc.cpu):.1f}x; stream in pure Python: CPU {_ratio(pmr.cpu, sp.cpu):.1f}x",
            out)  # fmt: skip
    return goals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a tenth or a fifth of every workload (a few minutes)")
    parser.add_argument("--json", action="store_true", help="print one JSON document (benchmarks/run.py shape)")
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help=f"comma-separated: {','.join(WORKLOADS)}")
    parser.add_argument("--no-profile", action="store_true", help="skip the cProfile tables")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # a child process: JSON spec of what to measure
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    log = Log("decode")
    began = time.monotonic()
    outs: list[dict[str, Any]] = []
    chart: list[dict[str, Any]] = []
    servers: dict[str, str] = {}
    skipped: list[str] = []
    with tempfile.TemporaryDirectory(prefix="mybinlog-bench-decode-") as tmp:
        for name in args.workloads.split(","):
            wl = WORKLOADS[name](1)
            if args.quick:
                wl = WORKLOADS[name](wl.quick_scale)
            if wl.flavor == "mysql" and find_mysql() is None:
                skipped.append(name)
                log(f"{name}: skipped, {not_available_reason()}")
                continue
            out = run_workload(Path(tmp), wl, log, not args.no_profile and name == "standard", args.quick)
            servers[wl.flavor] = out["server"]
            outs.append(out)
            if name == "standard":
                base = out["results"]["pymysqlrepl"].wall
                chart += [{"label": short, "value": base / out["results"][key].wall}
                          for key, _label, short in reader_rows()]  # fmt: skip
    implementations = {impl: {out["implementations"][impl] for out in outs} for impl in IMPLEMENTATIONS}
    notes = [
        "Every reader reads the same binlog range; ratios come from the same run, so a noisy machine still "
        "gives comparable ratios. The routing reader does what a router or a table filter does: it looks at "
        "every event and at the table of every rows event, without decoding rows.",
        "Implementations measured (`mybinlog.protocol._accel.implementation()` in the child processes): "
        + "; ".join(f"rows marked {IMPL_LABEL[impl]}: {', '.join(sorted(found))}"
                    for impl, found in implementations.items()) + ".",
    ]  # fmt: skip
    if skipped:
        notes.append(f"Not run: {', '.join(skipped)} (no MySQL 9.x: {not_available_reason()}).")
    server = "; ".join(f"{'MariaDB' if flavor == 'mariadb' else 'MySQL'} {v}" for flavor, v in sorted(servers.items()))
    doc = {
        "benchmark": "decode",
        "version": 1,
        "title": "Decode throughput",
        "quick": args.quick,
        "seconds": time.monotonic() - began,
        "environment": {**environment(), "server": server},
        "tables": [workload_table(out["workload"], out) for out in outs]
        + ([speedup_table(outs)] if outs else [])
        + [t for out in outs for t in out["profiles"]],
        "goals": goals_of(outs),
        "chart": {
            "title": "Decode, standard workload: speed as a multiple of python-mysql-replication",
            "xlabel": "x python-mysql-replication (higher is faster)",
            "bars": chart,
        },
        "notes": notes,
    }
    emit(doc, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
