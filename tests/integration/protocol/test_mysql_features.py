"""Live Oracle MySQL 9.x binlog features, each decoded value compared with the source's own ``SELECT`` (or the
workload's model), with ``mysqlbinlog -vv`` 9.x as a second oracle where it prints the type, and the replica-relevant
ones replicated into chdb and compared row by row with the source (tests/compare.py).

* ``binlog_row_metadata`` MINIMAL (no names: positional; ENUM/SET as numbers) and FULL, over the randomized
  workload of every MySQL type in a random column order.
* ``binlog_row_image`` FULL / MINIMAL / NOBLOB: which columns an image holds (``MISSING`` for the others, as
  ``mysqlbinlog -vv`` lists them and ``dump --format jsonl`` marks them) and the value of every present one.
* ``binlog_row_value_options=PARTIAL_JSON``: ``apply_json_diffs`` on the decoded diffs rebuilds the document the
  source holds after every JSON_SET / JSON_REPLACE / JSON_REMOVE (FULL and MINIMAL images).
* ``binlog_transaction_compression=ON``: TRANSACTION_PAYLOAD events, small and large transactions.
* Tagged GTIDs (``SET gtid_next='AUTOMATIC:tag'``): the GTIDs, positions and resuming by a tagged set.
* Generated (VIRTUAL, STORED) and invisible columns, GIPK, large (> 64 KB) and nested JSON, every charset family
  on CHAR/VARCHAR/TEXT/ENUM/SET.
* ``gtid_mode=OFF``: positions and resuming by file/offset across a rotation.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mybinlog import BinlogStream, RowsEvent, apply_json_diffs
from mybinlog.clickhouse import Target
from mybinlog.protocol._constants import MISSING
from mybinlog.protocol._events import (
    Event,
    GtidEvent,
    PartialUpdateRowsEvent,
    TransactionPayloadEvent,
    XidEvent,
)
from mybinlog.protocol._gtid import parse_gtid_set
from mybinlog.protocol._jsonb import JsonDiff
from mybinlog.protocol._position import BinlogPosition
from mybinlog.replication import ReplicationSettings, Replicator
from tests.compare import assert_replica_equal
from tests.live import Decoded, assert_changes_match
from tests.servers import MySQLServer
from tests.workload import Workload, WorkloadResult, normalize, parse_type

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
DEADLINE = 60.0


# ----------------------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------------------


async def _events(server: MySQLServer, **start: Any) -> tuple[list[Event], BinlogPosition | None]:
    """Every event of a non-blocking stream (from the beginning unless told), and the final position."""
    if not start:
        start = {"from_beginning": True}
    out: list[Event] = []
    async with (
        asyncio.timeout(DEADLINE),
        BinlogStream(server.repl_dsn, blocking=False, require_full_row_image=False, **start) as stream,
    ):
        async for event in stream:
            out.append(event)
        return out, stream.position


def _rows_events(events: list[Event], db: str) -> list[RowsEvent]:
    return [e for e in events if isinstance(e, RowsEvent) and e.schema == db]


def _columns(conn: Any, db: str, table: str) -> list[tuple[str, str]]:
    """(name, COLUMN_TYPE) of every column of ``table`` in table order, invisible and generated ones included."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND "
            "TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
            (db, table),
        )
        return [(str(n), str(t)) for n, t in cur.fetchall()]


def _select(conn: Any, db: str, table: str, where: str = "1", params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """Rows as dicts of every column (explicitly named, so invisible ones too; VECTOR as its bytes)."""
    cols = _columns(conn, db, table)
    names = ", ".join(
        f"CAST(`{n}` AS BINARY) AS `{n}`" if t.lower().startswith("vector") else f"`{n}`" for n, t in cols
    )
    with conn.cursor() as cur:
        cur.execute(f"SELECT {names} FROM `{db}`.`{table}` WHERE {where}", params)
        return [dict(zip([n for n, _ in cols], row, strict=True)) for row in cur.fetchall()]


def _norm_row(row: dict[str, Any] | None, types: dict[str, str], *, decoded: bool = False) -> dict[str, Any] | None:
    """Comparable values (``decoded``: a decoder's, whose JSON documents are Python values, not JSON text)."""
    if row is None:
        return None
    out = {}
    for k, v in row.items():
        if v is MISSING or v is None:
            out[k] = v
        elif decoded and types[k].lower().startswith("json"):
            out[k] = normalize(json.dumps(v), types[k])
        else:
            out[k] = normalize(v, types[k])
    return out


@dataclass
class Change:
    """One expected row change: images as the source's SELECT showed the row before and after the statement."""

    table: str
    kind: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    named: frozenset[str] = frozenset()  # the columns the statement named (INSERT list, UPDATE SET)


class Recorder:
    """Runs single-row statements and records what the source holds before and after each (the oracle)."""

    def __init__(self, conn: Any, db: str) -> None:
        self.conn = conn
        self.db = db
        self.changes: list[Change] = []
        self.types: dict[str, dict[str, str]] = {}

    def _row(self, table: str, key: str, value: Any) -> dict[str, Any] | None:
        rows = _select(self.conn, self.db, table, f"`{key}` = %s", (value,))
        assert len(rows) <= 1
        return rows[0] if rows else None

    def run(
        self,
        table: str,
        kind: str,
        key: str,
        value: Any,
        sql: str,
        params: list[Any],
        named: frozenset[str] = frozenset(),
    ) -> Any:
        """Run ``sql`` (one row, keyed ``key = value``; an INSERT's value may be None: LAST_INSERT_ID())."""
        self.types.setdefault(table, dict(_columns(self.conn, self.db, table)))
        before = self._row(table, key, value) if kind != "insert" else None
        with self.conn.cursor() as cur:
            cur.execute(sql, params)
            assert cur.rowcount == 1, (sql, cur.rowcount)
            if value is None:
                cur.execute("SELECT LAST_INSERT_ID()")
                value = cur.fetchone()[0]
        after = self._row(table, key, value) if kind != "delete" else None
        self.changes.append(Change(table, kind, before, after, named))
        return value


def _decoded_changes(events: list[Event], db: str, names: dict[str, list[str]] | None = None) -> list[Change]:
    """Row changes of ``db`` as name dicts (``names``: positional names, for MINIMAL metadata)."""
    out: list[Change] = []
    for event in _rows_events(events, db):
        cols = list(event.columns)
        if names is not None:
            assert cols == [None] * len(cols), f"{event.table_name}: MINIMAL metadata carries no names: {cols}"
            cols = names[event.table_name]
        for row in event.rows:
            if event.kind == "update":
                b, a = row
                out.append(
                    Change(event.table_name, "update", dict(zip(cols, b, strict=True)), dict(zip(cols, a, strict=True)))
                )
            elif event.kind == "insert":
                out.append(Change(event.table_name, "insert", None, dict(zip(cols, row, strict=True))))
            else:
                out.append(Change(event.table_name, "delete", dict(zip(cols, row, strict=True)), None))
    return out


def _assert_same_changes(decoded: list[Change], expected: list[Change], types: dict[str, dict[str, str]]) -> None:
    """Same order, tables, kinds and every (present) value, normalized by column type."""
    problems: list[str] = []
    if len(decoded) != len(expected):
        problems.append(f"decoded {len(decoded)} row changes, the source made {len(expected)}")
    for i, (got, want) in enumerate(zip(decoded, expected, strict=False)):
        where = f"change #{i} ({want.kind} {want.table})"
        if (got.table, got.kind) != (want.table, want.kind):
            problems.append(f"{where}: decoded {got.kind} {got.table}")
            continue
        for image in ("before", "after"):
            g = _norm_row(getattr(got, image), types[want.table], decoded=True)
            w = _norm_row(getattr(want, image), types[want.table])
            if g is None or w is None:
                if g is not w:
                    problems.append(f"{where}: {image} image {g!r:.200} / {w!r:.200}")
                continue
            if list(g) != list(w):
                problems.append(f"{where}: {image} columns {list(g)} != {list(w)}")
                continue
            for name in w:
                if g[name] is not MISSING and g[name] != w[name]:
                    problems.append(
                        f"{where}: {image}.{name} ({types[want.table][name]}): decoded "
                        f"{g[name]!r:.200}, the source holds {w[name]!r:.200}"
                    )
    assert not problems, f"{len(problems)} mismatches:\n" + "\n".join(problems[:30])


# --- mysqlbinlog -vv as a second oracle ---


@dataclass
class VvRow:
    table: str
    kind: str
    images: list[dict[int, bytes]]  # column number (1-based) -> value text as printed (raw bytes)


_VV_HEAD = re.compile(rb"^### (INSERT INTO|UPDATE|DELETE FROM) `([^`]*)`\.`([^`]*)`$")
_VV_VALUE = re.compile(rb"^###   @(\d+)=(.*?)(?: /\* [^*]* \*/)?$")


def _mysqlbinlog_vv(server: MySQLServer, db: str) -> list[VvRow]:
    """The rows ``mysqlbinlog --base64-output=DECODE-ROWS -vv`` prints for ``db``, values as raw bytes."""
    prefix = server.binaries.tool("mysqlbinlog")
    assert prefix is not None, "mysqlbinlog 9.x is not beside mysqld"
    paths = [server.binaries.inside(Path(p)) for p in server.binlog_paths()]
    out = subprocess.run(
        [*prefix, "--base64-output=DECODE-ROWS", "-vv", *paths], capture_output=True, timeout=120, check=True
    ).stdout
    rows: list[VvRow] = []
    current: VvRow | None = None
    kinds = {b"INSERT INTO": "insert", b"UPDATE": "update", b"DELETE FROM": "delete"}
    for line in out.split(b"\n"):
        head = _VV_HEAD.match(line)
        if head:
            current = None
            if head.group(2).decode() == db:
                current = VvRow(head.group(3).decode(), kinds[head.group(1)], [])
                rows.append(current)
            continue
        if current is None:
            continue
        if line in (b"### SET", b"### WHERE"):
            current.images.append({})
            continue
        value = _VV_VALUE.match(line)
        if value:  # (lines of a multi-line string in between are skipped: its value is not compared)
            current.images[-1][int(value.group(1))] = value.group(2)
    return rows


def _vv_string(text: bytes) -> bytes:
    """A string as mysqlbinlog prints it (``'...'``, bytes below 0x20, quote and backslash as \\xNN)."""
    assert text[:1] == text[-1:] == b"'", text
    return re.sub(rb"\\x([0-9a-f]{2})", lambda m: bytes([int(m.group(1), 16)]), text[1:-1])


def _vv_int(text: bytes) -> set[int]:
    """The numbers mysqlbinlog prints for an integer (``-56 (200)``: signed and unsigned readings)."""
    return {int(x) for x in re.findall(rb"-?\d+", text)}


def _images_of(change: Change) -> list[dict[str, Any]]:
    return [i for i in (change.before, change.after) if i is not None]


def _assert_vv_agrees(
    vv: list[VvRow], decoded: list[Change], columns: dict[str, list[str]], types: dict[str, dict[str, str]]
) -> int:
    """Same rows, kinds, present columns, NULLs and integers (signed or unsigned reading) as mysqlbinlog -vv;
    returns how many values were compared."""
    assert [(r.table, r.kind) for r in vv] == [(c.table, c.kind) for c in decoded]
    compared = 0
    for i, (row, change) in enumerate(zip(vv, decoded, strict=True)):
        images = _images_of(change)
        assert len(row.images) == len(images), (i, row)
        names = columns[change.table]
        for printed, ours in zip(row.images, images, strict=True):
            present = {n + 1 for n, name in enumerate(names) if ours[name] is not MISSING}
            assert set(printed) == present, (
                f"row {i} {change.table}: mysqlbinlog lists @{sorted(printed)}, we decoded @{sorted(present)}"
            )
            for number, text in printed.items():
                name = names[number - 1]
                value = ours[name]
                assert (text == b"NULL") == (value is None), (i, change.table, name, text, value)
                base = parse_type(types[change.table][name]).base
                if value is not None and base in ("tinyint", "smallint", "mediumint", "int", "bigint"):
                    assert value in _vv_int(text), (i, change.table, name, text, value)
                compared += 1
    return compared


# --- dump --format jsonl ---


def _dump_jsonl(server: MySQLServer, *args: str) -> tuple[list[dict[str, Any]], str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mybinlog",
            "dump",
            "--dsn",
            server.repl_dsn,
            "--from-beginning",
            "--stop-at-end",
            "--format",
            "jsonl",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=REPO,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return [json.loads(line) for line in out.stdout.splitlines()], out.stderr


def _jsonl_value(value: Any, sql_type: str) -> Any:
    """What docs/dump-format.md says dump prints for a decoded value (the types these tests dump)."""
    if value is MISSING:
        return {"$missing": True}
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list) and value and isinstance(value[0], JsonDiff):
        return [{"op": d.operation, "path": d.path, "value": d.value} for d in value]  # REMOVE: null
    return value


# --- replication into chdb ---


async def _replicate(server: MySQLServer, db: str, target: Target) -> Replicator:
    """Replicate ``db`` into ``target`` until caught up (the first run loads the tables with SELECT: write the
    changes under test after it, so that they come through the binlog)."""
    settings = ReplicationSettings(max_flush_data_time=50)
    repl = Replicator(
        server.repl_dsn,
        target,
        database=db,
        target_database=target.database,
        settings=settings,
        replica=str(target.database),
    )  # the replica's name: its checkpoint (the default is db's name)
    await repl.run(until_caught_up=True)
    return repl


async def _replicate_and_compare(server: MySQLServer, db: str, target: Target, chdb_dir: Path) -> int:
    """Stream what changed since the last run into the replica, then compare it row by row with the source."""
    repl = await _replicate(server, db, target)
    assert repl.status.rows_written > 0, "nothing came through the binlog"
    compared = await assert_replica_equal(server, db, str(chdb_dir), target_database=str(target.database))
    assert compared > 0
    return compared


# ----------------------------------------------------------------------------------------------------------
# binlog_row_metadata MINIMAL and FULL: the randomized workload of every type in a random column order
# ----------------------------------------------------------------------------------------------------------


def _as_workload_changes(changes: list[Change], result: WorkloadResult, events: list[Event], db: str) -> list[Decoded]:
    gtids: list[str] = []
    gtid = ""
    for event in events:
        if isinstance(event, GtidEvent):  # an anonymous one (gtid_mode=OFF) named by where it is
            gtid = str(event.gtid) if event.gtid is not None else f"anonymous:{event.file}:{event.offset}"
        elif isinstance(event, RowsEvent) and event.schema == db:
            gtids.extend([gtid] * len(event.rows))
    out = []
    for change, g in zip(changes, gtids, strict=True):
        types = result.column_types[change.table]

        def labels(image: dict[str, Any] | None, types: dict[str, str] = types) -> dict[str, Any] | None:
            if image is None:
                return None  # ENUM/SET as numbers without names in the table map: their members, by the model's type
            return {
                k: normalize(v, types[k]) if isinstance(v, int) and parse_type(types[k]).base in ("enum", "set") else v
                for k, v in image.items()
            }

        out.append(Decoded(g, change.table, change.kind, labels(change.before), labels(change.after)))
    return out


@pytest.mark.parametrize("metadata", ["FULL", "MINIMAL"])
async def test_row_metadata_workload_value_by_value(
    mysql_factory: Callable[..., MySQLServer], metadata: str, chdb_target: Target, chdb_dir: Path
) -> None:
    server = mysql_factory(binlog_row_metadata=metadata)
    db = server.create_database("meta")
    conn = server.connect(database=db)
    try:
        # no GEOMETRY/POINT: mysqlbinlog -vv, the second oracle, stops a row at one ("Don't know how to handle
        # column type=255") and drops the rest of its event (GEOMETRY is checked in test_mysql_decoding.py)
        wl = Workload(41 if metadata == "FULL" else 43, omit_types=("geometry", "point"))
        wl.run(conn, db, n_transactions=2, statements_per_txn=2, ddl_every=0)
        await _replicate(server, db, chdb_target)  # the initial load: the rest comes through the binlog
        result = wl.run(conn, db, n_transactions=12, statements_per_txn=4, ddl_every=0)
    finally:
        conn.close()
    events, _ = await _events(server)
    positional = {t: [c for c, _ in cols] for t, cols in result.columns.items()} if metadata == "MINIMAL" else None
    changes = _decoded_changes(events, db, positional)
    if metadata == "MINIMAL":  # ENUM and SET come as numbers (no labels in the table map)
        enum_cols = [
            (t, c) for t, cols in result.columns.items() for c, ty in cols if parse_type(ty).base in ("enum", "set")
        ]
        assert enum_cols
        assert any(
            isinstance((ch.after or ch.before or {}).get(c), int)
            for t, c in enum_cols
            for ch in changes
            if ch.table == t
        )
    assert_changes_match(_as_workload_changes(changes, result, events, db), result.changes, result)
    # mysqlbinlog -vv: the same rows, columns, NULLs and integers
    names = {t: [c for c, _ in cols] for t, cols in result.columns.items()}
    assert _assert_vv_agrees(_mysqlbinlog_vv(server, db), changes, names, result.column_types) > 500
    # dump: names under MINIMAL metadata are null (docs/dump-format.md), the same number of rows
    dumped, _ = _dump_jsonl(server)
    rows = [e for e in dumped if e.get("schema") == db and "rows" in e]
    assert sum(len(e["rows"]) for e in rows) == len(changes)
    for e in rows:
        expected = [None] * len(names[e["table"]]) if metadata == "MINIMAL" else names[e["table"]]
        assert e["columns"] == expected
    # the replica (names from the tracked CREATE TABLE under MINIMAL metadata) equals the source row by row
    await _replicate_and_compare(server, db, chdb_target, chdb_dir)


# ----------------------------------------------------------------------------------------------------------
# binlog_row_image FULL / MINIMAL / NOBLOB
# ----------------------------------------------------------------------------------------------------------

IMAGE_TABLE = (
    "CREATE TABLE t (id INT PRIMARY KEY, a INT, s VARCHAR(20) CHARACTER SET utf8mb4, bl BLOB, tx TEXT, j JSON,"
    " g INT AS (a + 1) VIRTUAL, d BIGINT DEFAULT -5, u TINYINT UNSIGNED)"
)
IMAGE_COLUMNS = ["id", "a", "s", "bl", "tx", "j", "g", "d", "u"]
WRITABLE = ["a", "s", "bl", "tx", "j", "d", "u"]
BLOBS = {"bl", "tx"}  # BLOB and TEXT: NOBLOB leaves them out unless needed (JSON is logged)


def _image_value(r: random.Random, column: str) -> tuple[str, Any]:
    if r.random() < 0.1:
        return "%s", None
    if column == "a":
        return "%s", r.randint(-1000, 1000)
    if column == "s":
        return "%s", "".join(r.choice("aé€🚀z") for _ in range(r.randint(0, 8)))
    if column in ("bl", "tx"):
        return "%s", "".join(r.choice("xyzü") for _ in range(r.randint(0, 30)))
    if column == "j":
        return "%s", json.dumps({"n": r.randint(0, 9), "l": [r.random() < 0.5, None, "ü"]})
    if column == "d":
        return "%s", r.randint(-(2**63), 2**63 - 1)
    return "%s", r.randint(0, 255)


def _same(current: Any, new: Any, column: str) -> bool:
    if column == "j" and current is not None and new is not None:
        return bool(json.loads(current) == json.loads(new))
    if isinstance(current, bytes) and isinstance(new, str):
        return current == new.encode()
    return bool(current == new)


def _present(image: str, which: str, kind: str, named: frozenset[str]) -> set[str]:
    """The columns MySQL puts into a row image (binlog_row_image docs; the key is id)."""
    every = set(IMAGE_COLUMNS)
    if image == "FULL":
        return every
    if image == "MINIMAL":
        if which == "before":
            return {"id"}
        if kind == "insert":
            return set(named) | {"id", "g"}  # the generated column is computed from the row written
        return set(named) | ({"g"} if "a" in named else set())
    if which == "before":
        return every - BLOBS
    return every - (BLOBS - set(named))


@pytest.mark.parametrize("image", ["FULL", "MINIMAL", "NOBLOB"])
async def test_row_images_hold_the_right_columns_with_the_source_values(
    mysql: MySQLServer, mysql_factory: Callable[..., MySQLServer], image: str
) -> None:
    server = mysql if image == "FULL" else mysql_factory(binlog_row_image=image)
    r = random.Random(image)
    db = server.create_database(f"img_{image.lower()}")
    start = server.gtid_position()
    conn = server.connect(database=db)
    rec = Recorder(conn, db)
    try:
        with conn.cursor() as cur:
            cur.execute(IMAGE_TABLE)
        alive: list[int] = []
        for step in range(40):
            op = r.choice(["insert", "insert", "update", "update", "delete"]) if alive else "insert"
            if op == "insert":
                key = step + 1
                cols = r.sample(WRITABLE, r.randint(0, len(WRITABLE)))
                vals = [_image_value(r, c)[1] for c in cols]
                sql = f"INSERT INTO t (id{''.join(', ' + c for c in cols)}) VALUES (%s{', %s' * len(cols)})"
                rec.run("t", "insert", "id", key, sql, [key, *vals], frozenset(["id", *cols]))
                alive.append(key)
            elif op == "update":
                key = r.choice(alive)
                row = rec._row("t", "id", key)
                assert row is not None
                while True:  # an UPDATE that changes nothing is not logged: make it change something
                    cols = r.sample(WRITABLE, r.randint(1, 3))
                    vals = [_image_value(r, c)[1] for c in cols]
                    if any(_same(row[c], v, c) is False for c, v in zip(cols, vals, strict=True)):
                        break
                sets = ", ".join(f"{c} = %s" for c in cols)
                rec.run("t", "update", "id", key, f"UPDATE t SET {sets} WHERE id = %s", [*vals, key], frozenset(cols))
            else:
                key = r.choice(alive)
                alive.remove(key)
                rec.run("t", "delete", "id", key, "DELETE FROM t WHERE id = %s", [key])
    finally:
        conn.close()
    events, _ = await _events(server, gtid_set=start)
    decoded = _decoded_changes(events, db)
    _assert_same_changes(decoded, rec.changes, rec.types)
    # exactly the columns the row image option logs: the others are MISSING
    for i, (got, want) in enumerate(zip(decoded, rec.changes, strict=True)):
        for which in ("before", "after"):
            img = getattr(got, which)
            if img is None:
                continue
            present = {c for c, v in img.items() if v is not MISSING}
            assert present == _present(image, which, want.kind, want.named), (i, which, want.kind, sorted(want.named))
    # mysqlbinlog -vv lists the same columns, NULLs and integers
    types = rec.types
    assert _assert_vv_agrees(_mysqlbinlog_vv(server, db), decoded, {"t": IMAGE_COLUMNS}, types) > 100
    if image != "FULL":  # dump prints the same values, absent ones as {"$missing": true} (the session server's
        dumped, _ = _dump_jsonl(server)  # binlog holds other tests' tables too: FULL is dumped elsewhere)
        rows = [row for e in dumped if e.get("schema") == db and "rows" in e for row in e["rows"]]
        want_rows: list[Any] = []
        for change in decoded:
            imgs = [[_jsonl_value(v, types["t"][k]) for k, v in im.items()] for im in _images_of(change)]
            want_rows.append({"before": imgs[0], "after": imgs[1]} if change.kind == "update" else imgs[0])
        assert rows == want_rows


# ----------------------------------------------------------------------------------------------------------
# PARTIAL_JSON
# ----------------------------------------------------------------------------------------------------------


def _json_edit(r: random.Random, doc: Any) -> tuple[str, list[Any]]:
    """A random JSON_SET / JSON_REPLACE / JSON_REMOVE of an object-of-arrays document."""
    fn = r.choice(["JSON_SET", "JSON_REPLACE", "JSON_REMOVE", "JSON_SET"])
    keys = sorted(doc) if isinstance(doc, dict) else []
    if fn == "JSON_REMOVE":
        if keys and r.random() < 0.5:
            return "JSON_REMOVE(j, %s)", [f"$.{r.choice(keys)}"]
        if "arr" in keys and doc["arr"]:
            return "JSON_REMOVE(j, %s)", [f"$.arr[{r.randrange(len(doc['arr']))}]"]
        fn = "JSON_SET"
    value = r.choice([r.randint(-99, 99), "s" * r.randint(0, 5) + "ü", None, True, 2.5, {"x": [1, "y"]}, [3]])
    path = r.choice([f"$.k{r.randint(0, 4)}", "$.arr[0]", f"$.arr[{r.randint(0, 6)}]", "$.o.x", "$.o.n"])
    return f"{fn}(j, %s, CAST(%s AS JSON))", [path, json.dumps(value)]


@pytest.mark.parametrize("image", ["FULL", "MINIMAL"])
async def test_partial_json_updates_rebuild_the_source_documents(
    mysql_factory: Callable[..., MySQLServer], image: str, chdb_target: Target, chdb_dir: Path
) -> None:
    server = mysql_factory(binlog_row_image=image, binlog_row_value_options="PARTIAL_JSON")
    r = random.Random(f"pj{image}")
    db = server.create_database("pj")
    conn = server.connect(database=db)
    expected: list[tuple[int, Any]] = []  # (id, document the source holds after the update), in order
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE d (id INT PRIMARY KEY, n INT, j JSON)")
            for i in range(1, 5):
                doc = {
                    "arr": [r.randint(0, 9) for _ in range(r.randint(1, 5))],
                    "o": {"x": "ü" * i},
                    **{f"k{k}": r.randint(0, 9) for k in range(r.randint(0, 3))},
                }
                cur.execute("INSERT INTO d VALUES (%s, 0, %s)", (i, json.dumps(doc)))
            if image == "FULL":
                await _replicate(server, db, chdb_target)  # loaded; the partial updates come through the binlog
            for _step in range(40):
                key = r.randint(1, 4)
                cur.execute("SELECT j FROM d WHERE id = %s", (key,))
                doc = json.loads(cur.fetchone()[0])
                expr, params = _json_edit(r, doc)
                also = ", n = n + 1" if r.random() < 0.3 else ""
                cur.execute(f"UPDATE d SET j = {expr}{also} WHERE id = %s", [*params, key])
                if cur.rowcount != 1:
                    continue  # no change (JSON_REPLACE of a missing path...): nothing logged
                cur.execute("SELECT j FROM d WHERE id = %s", (key,))
                expected.append((key, json.loads(cur.fetchone()[0])))
    finally:
        conn.close()
    events, _ = await _events(server)
    rows_events = _rows_events(events, db)
    partial = [e for e in rows_events if isinstance(e, PartialUpdateRowsEvent)]
    assert partial, "the server logged no PARTIAL_UPDATE_ROWS event: is binlog_row_value_options applied?"
    current: dict[int, Any] = {}  # the consumer's view: inserts, then diffs applied to the last document
    got: list[tuple[int, Any]] = []
    with_diffs = 0
    for event in rows_events:
        if event.kind == "insert":
            for row in event.rows:
                current[row[0]] = row[2]
            continue
        for before, after in event.rows:
            key = before[0]
            if image == "FULL":
                assert before[2] == current[key], "the full before image holds the document the stream built"
            value = after[2]
            if isinstance(value, list) and all(isinstance(d, JsonDiff) for d in value):
                with_diffs += bool(value)
                value = apply_json_diffs(current[key], value)
            elif value is MISSING:
                value = current[key]
            current[key] = value
            got.append((key, value))
    assert with_diffs >= 10
    assert got == expected
    # mysqlbinlog -vv shows the same number of partial updates (it prints JSON_INSERT/REPLACE/REMOVE calls)
    vv = _mysqlbinlog_vv(server, db)
    assert Counter(row.kind for row in vv) == Counter(e.kind for e in rows_events for _ in e.rows)
    diffs_printed = sum(row.images[1].get(3, b"").startswith((b"JSON_", b"@")) for row in vv if row.kind == "update")
    assert diffs_printed == sum(1 for e in partial for _b, a in e.rows if isinstance(a[2], list)), diffs_printed
    # dump prints the diffs as docs/dump-format.md says
    dumped, _ = _dump_jsonl(server)
    dumped_after = [
        row["after"][2]
        for e in dumped
        if e.get("schema") == db and e.get("type") and "rows" in e and e["rows"] and isinstance(e["rows"][0], dict)
        for row in e["rows"]
    ]
    ours = [_jsonl_value(a[2], "json") for e in rows_events if e.kind == "update" for _b, a in e.rows]
    assert dumped_after == ours
    if image == "FULL":  # the replicator requires FULL images: PARTIAL_JSON must not reach the replica as diffs
        await _replicate_and_compare(server, db, chdb_target, chdb_dir)


# ----------------------------------------------------------------------------------------------------------
# binlog_transaction_compression=ON
# ----------------------------------------------------------------------------------------------------------


async def test_compressed_transactions_small_and_large(
    mysql_factory: Callable[..., MySQLServer], chdb_target: Target, chdb_dir: Path
) -> None:
    server = mysql_factory(binlog_transaction_compression="ON")
    db = server.create_database("zstd")
    conn = server.connect(database=db)
    try:
        wl = Workload(57, omit_types=("geometry", "point"))
        wl.run(conn, db, n_transactions=2, statements_per_txn=2, ddl_every=0)
        await _replicate(server, db, chdb_target)
        wl.run(conn, db, n_transactions=10, statements_per_txn=3, ddl_every=0)  # small transactions
        # a large one: many rows and statements, several MB before compression
        result = wl.run(conn, db, n_transactions=1, statements_per_txn=120, max_rows_per_statement=8, ddl_every=0)
    finally:
        conn.close()
    events, _ = await _events(server)
    payloads = [e for e in events if isinstance(e, TransactionPayloadEvent)]
    assert len(payloads) >= 13, [e.type_name for e in events][-40:]
    assert max(p.uncompressed_size for p in payloads) > 1_000_000
    assert all(p.compression_type == 0 for p in payloads)  # zstd
    inner_rows = [e for p in payloads for e in p.events if isinstance(e, RowsEvent) and e.schema == db]
    streamed = _rows_events(events, db)
    assert streamed
    assert all(e.in_payload for e in streamed)
    assert sum(len(e.rows) for e in inner_rows) == sum(len(e.rows) for e in streamed)
    changes = _decoded_changes(events, db)
    assert_changes_match(_as_workload_changes(changes, result, events, db), result.changes, result)
    # the files read from disk decode to the same
    from mybinlog import read_binlog_file

    on_disk = [e for p in server.binlog_paths() for e in read_binlog_file(p)]
    assert _decoded_changes(on_disk, db) == changes
    names = {t: [c for c, _ in cols] for t, cols in result.columns.items()}
    assert _assert_vv_agrees(_mysqlbinlog_vv(server, db), changes, names, result.column_types) > 1000
    await _replicate_and_compare(server, db, chdb_target, chdb_dir)


# ----------------------------------------------------------------------------------------------------------
# tagged GTIDs (MySQL 8.4+)
# ----------------------------------------------------------------------------------------------------------


async def test_tagged_gtids_positions_and_resume(
    mysql_factory: Callable[..., MySQLServer], chdb_target: Target, chdb_dir: Path
) -> None:
    server = mysql_factory()
    r = random.Random(5)
    db = server.create_database("tags")
    uuid = server.server_uuid
    conn = server.connect(database=db)
    written: list[tuple[str | None, int, int]] = []  # (tag, id, value) per transaction
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v BIGINT, s VARCHAR(10))")
            cur.execute("INSERT INTO t VALUES (0, 0, 'load')")
        await _replicate(server, db, chdb_target)

        def write(n: int) -> None:
            with conn.cursor() as cur:
                for _ in range(n):
                    tag = r.choice([None, "alpha", "beta_2", "alpha"])
                    cur.execute(f"SET gtid_next = 'AUTOMATIC{':' + tag if tag else ''}'")
                    key, value = len(written) + 1, r.randint(-(2**63), 2**63 - 1)
                    cur.execute("INSERT INTO t VALUES (%s, %s, %s)", (key, value, tag or "-"))
                    written.append((tag, key, value))
                cur.execute("SET gtid_next = 'AUTOMATIC'")

        write(12)
    except BaseException:
        conn.close()
        raise
    events, end = await _events(server)
    txns: list[tuple[str, list[Any]]] = []
    for event in events:
        if isinstance(event, GtidEvent):
            txns.append((str(event.gtid), []))
        elif isinstance(event, RowsEvent) and event.schema == db:
            txns[-1][1].extend(event.rows)
    mine = txns[-12:]
    counters: Counter[str | None] = Counter()
    # untagged transactions before the writes: the schema, the table and the loaded row, numbered 1, 2, 3
    untagged_first = 1 + sum(1 for gtid, _rows in txns[:-12] if gtid.count(":") == 1)
    for (gtid, rows), (tag, key, value) in zip(mine, written, strict=True):
        counters[tag] += 1
        want = f"{uuid}:{tag}:{counters[tag]}" if tag else f"{uuid}:{untagged_first + counters[None] - 1}"
        assert gtid == want, gtid
        assert rows == [(key, value, tag or "-")]
    assert end is not None
    assert end.gtid_set is not None
    assert str(end.gtid_set) == str(parse_gtid_set(server.gtid_position(), "mysql"))
    assert ":alpha:" in str(end.gtid_set)
    assert ":beta_2:" in str(end.gtid_set)
    # positions after each transaction are GTID sets with the tags; resuming from one yields exactly the rest
    positions: list[BinlogPosition] = []
    async with asyncio.timeout(DEADLINE), BinlogStream(server.repl_dsn, blocking=False, from_beginning=True) as st:
        async for event in st:
            if isinstance(event, XidEvent):
                positions.append(st.position)  # type: ignore[arg-type]
    assert len(positions) == 1 + len(written)  # the loaded row's transaction, then one per written row
    for i in (0, 3, 7, 11, 12):  # positions[i]: after the load and i written transactions
        resume = positions[i]
        assert resume.gtid_set is not None
        got, _ = await _events(server, gtid_set=str(resume.gtid_set))
        rows = [row for e in _rows_events(got, db) for row in e.rows]
        assert rows == [(k, v, tag or "-") for tag, k, v in written[i:]], i
        again, _ = await _events(server, resume_from=resume)
        assert [row for e in _rows_events(again, db) for row in e.rows] == rows
    # the replica keeps a tagged GTID set in its checkpoint and resumes from it
    await _replicate_and_compare(server, db, chdb_target, chdb_dir)
    try:
        write(6)
    finally:
        conn.close()
    await _replicate_and_compare(server, db, chdb_target, chdb_dir)


# ----------------------------------------------------------------------------------------------------------
# generated and invisible columns, GIPK, large and nested JSON, every charset family
# ----------------------------------------------------------------------------------------------------------

# family -> (alphabet, Python codec of the column's bytes as mysqlbinlog prints them)
CHARSETS: dict[str, tuple[str, str]] = {
    "latin1": ("aZéß€üÿ", "cp1252"),
    "utf8mb3": ("aé€д中ü", "utf-8"),
    "utf8mb4": ("aé€д中🚀", "utf-8"),
    "ucs2": ("aé€д中", "utf-16-be"),
    "utf16": ("aé€д中🚀", "utf-16-be"),
    "utf16le": ("aé€д🚀", "utf-16-le"),
    "utf32": ("aé€д中🚀", "utf-32-be"),
    "gbk": ("a中文字", "gbk"),
    "sjis": ("aあいカナ漢", "shift_jis"),
    "big5": ("a中文字", "big5"),
    "euckr": ("a한국어", "euc-kr"),
}


def _charset_columns(r: random.Random) -> list[tuple[str, str]]:
    cols: list[tuple[str, str]] = []
    for cs, (alphabet, _codec) in CHARSETS.items():
        members = ["x", *alphabet[1:4]]
        quoted = ",".join(f"'{m}'" for m in members)
        cols += [
            (f"{cs}_c", f"CHAR(5) CHARACTER SET {cs}"),
            (f"{cs}_v", f"VARCHAR(12) CHARACTER SET {cs}"),
            (f"{cs}_t", f"TEXT CHARACTER SET {cs}"),
            (f"{cs}_e", f"ENUM({quoted}) CHARACTER SET {cs}"),
            (f"{cs}_s", f"SET({quoted}) CHARACTER SET {cs}"),
        ]
    cols += [
        ("bin_c", "BINARY(4)"),
        ("bin_v", "VARBINARY(12)"),
        ("bin_t", "BLOB"),
        ("bin_e", "ENUM('x','y') CHARACTER SET binary"),
        ("num_vec", "VECTOR(2)"),
        ("num_yr", "YEAR"),
        ("num_neg", "BIGINT"),
        ("num_uns", "TINYINT UNSIGNED"),
    ]
    r.shuffle(cols)
    return cols


def _charset_value(r: random.Random, name: str, sql: str) -> tuple[str, Any]:
    if r.random() < 0.08:
        return "%s", None
    cs = name.rsplit("_", 1)[0]
    kind = name.rsplit("_", 1)[1]
    if name == "num_vec":
        return "STRING_TO_VECTOR(%s)", json.dumps([r.choice([0.5, -2.25, 1.0]) for _ in range(2)])
    if name == "num_yr":
        return "%s", r.randint(1901, 2155)
    if name == "num_neg":
        return "%s", r.randint(-(2**63), -1)
    if name == "num_uns":
        return "%s", r.randint(128, 255)
    if cs == "bin":
        if kind == "e":
            return "%s", r.choice(["x", "y"])
        return "%s", bytes(r.randrange(1, 256) for _ in range(r.randint(1 if kind == "c" else 0, 4)))
    alphabet = CHARSETS[cs][0]
    members = ["x", *alphabet[1:4]]
    if kind == "e":
        return "%s", r.choice(members)
    if kind == "s":
        return "%s", ",".join(r.sample(members, r.randint(0, len(members))))
    n = {"c": 5, "v": 12, "t": 40}[kind]
    return "%s", "".join(r.choice(alphabet) for _ in range(r.randint(0, n)))


def _big_json(r: random.Random, depth: int = 0) -> Any:
    if depth > 4 or r.random() < 0.2:
        return r.choice([r.randint(-(2**40), 2**40), "ü" * r.randint(0, 3) + "s", None, True, False, 1.5e300, -0.5])
    if r.random() < 0.5:
        return [_big_json(r, depth + 1) for _ in range(r.randint(0, 6))]
    return {f"k{i}_{'é' * (i % 2)}": _big_json(r, depth + 1) for i in range(r.randint(0, 6))}


async def test_generated_invisible_gipk_json_and_charsets(
    mysql: MySQLServer, chdb_target: Target, chdb_dir: Path
) -> None:
    server = mysql
    r = random.Random(11)
    db = server.create_database("cols_feat")
    conn = server.connect(database=db)
    rec = Recorder(conn, db)
    gen_cols = [
        "a INT",
        "b VARCHAR(20) CHARACTER SET utf8mb4",
        "j JSON",
        "v_sum INT AS (a * 3) VIRTUAL",
        "s_cat VARCHAR(40) AS (CONCAT(b, '!')) STORED",
        "v_jn BIGINT AS (CAST(j->>'$.n' AS SIGNED)) VIRTUAL",
        "hid VARCHAR(10) INVISIBLE DEFAULT 'h'",
        "hid2 INT INVISIBLE",
        "s_up VARCHAR(20) AS (UPPER(b)) STORED INVISIBLE",
    ]
    r.shuffle(gen_cols)
    cs_cols = _charset_columns(r)
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE TABLE gen (id INT PRIMARY KEY, {', '.join(gen_cols)})")
            cur.execute("SET SESSION sql_generate_invisible_primary_key = ON")
            cur.execute("CREATE TABLE gipk (a INT, t TEXT, j JSON)")
            cur.execute("SET SESSION sql_generate_invisible_primary_key = OFF")
            cur.execute("CREATE TABLE docs (id INT PRIMARY KEY, j JSON, k JSON NOT NULL)")
            cur.execute(f"CREATE TABLE cs (id INT PRIMARY KEY, {', '.join(f'`{n}` {t}' for n, t in cs_cols)})")
            cur.execute("INSERT INTO gen (id, a) VALUES (0, 1)")
        await _replicate(server, db, chdb_target)  # loaded: the rest comes through the binlog
        start = server.gtid_position()
        for step in range(1, 13):
            # generated / invisible
            a, b = r.randint(-99, 99), "".join(r.choice("abé€") for _ in range(r.randint(0, 8)))
            j = json.dumps({"n": r.randint(-9, 9), "l": [1, "ü"]})
            rec.run(
                "gen",
                "insert",
                "id",
                step,
                "INSERT INTO gen (id, a, b, j, hid2) VALUES (%s, %s, %s, %s, %s)",
                [step, a, b, j, r.randint(0, 5)],
            )
            rec.run(
                "gen",
                "update",
                "id",
                step,
                "UPDATE gen SET a = a + 1, hid = %s, b = CONCAT(b, 'x') WHERE id = %s",
                [f"h{step}", step],
            )
            # GIPK
            key = rec.run(
                "gipk",
                "insert",
                "my_row_id",
                None,
                "INSERT INTO gipk (a, t, j) VALUES (%s, %s, %s)",
                [r.randint(-5, 5), "ü" * r.randint(0, 9), json.dumps(_big_json(r))],
            )
            rec.run("gipk", "update", "my_row_id", key, "UPDATE gipk SET a = a * 2 + 1 WHERE my_row_id = %s", [key])
            # JSON: large (> 64 KB: MySQL's large binary format) and nested
            big = {"items": [_big_json(r) for _ in range(r.randint(300, 400))], "pad": "z" * 70_000}
            rec.run(
                "docs",
                "insert",
                "id",
                step,
                "INSERT INTO docs VALUES (%s, %s, %s)",
                [step, json.dumps(big) if step % 2 else json.dumps(_big_json(r)), json.dumps(_big_json(r, 1))],
            )
            rec.run(
                "docs",
                "update",
                "id",
                step,
                "UPDATE docs SET k = JSON_ARRAY(k, %s) WHERE id = %s",
                [json.dumps(_big_json(r)), step],
            )
            # charsets
            vals = [_charset_value(r, n, t) for n, t in cs_cols]
            placeholders = ", ".join("NULL" if v is None else sql for sql, v in vals)
            rec.run(
                "cs",
                "insert",
                "id",
                step,
                f"INSERT INTO cs VALUES (%s, {placeholders})",
                [step, *[v for _sql, v in vals if v is not None]],
            )
            if step % 3 == 0:
                rec.run("cs", "delete", "id", step - 1, "DELETE FROM cs WHERE id = %s", [step - 1])
                rec.run("gen", "delete", "id", step - 2, "DELETE FROM gen WHERE id = %s", [step - 2])
    finally:
        conn.close()
    events, _ = await _events(server, gtid_set=start)
    decoded = _decoded_changes(events, db)
    _assert_same_changes(decoded, rec.changes, rec.types)
    # present and in the right columns: generated (both kinds), invisible and the GIPK
    gen_names = [c for c, _ in _columns(server.connect(database=db), db, "gen")]
    first = next(c for c in decoded if c.table == "gen")
    assert first.after is not None
    assert list(first.after) == gen_names
    assert {"v_sum", "s_cat", "v_jn", "hid", "hid2", "s_up"} <= set(first.after)
    gipk = next(c for c in decoded if c.table == "gipk")
    assert gipk.after is not None
    assert next(iter(gipk.after)) == "my_row_id"
    assert isinstance(gipk.after["my_row_id"], int)
    big_docs = [c for c in decoded if c.table == "docs" and c.after and len(json.dumps(c.after["j"])) > 65_536]
    assert len(big_docs) >= 6
    # mysqlbinlog -vv: the charset columns' bytes, ENUM indexes and SET bitmasks, integers as written
    cs_types = rec.types["cs"]
    cs_names = list(cs_types)
    vv = [row for row in _mysqlbinlog_vv(server, db) if row.table == "cs"]
    cs_decoded = [c for c in decoded if c.table == "cs"]
    assert len(vv) == len(cs_decoded)
    checked = 0
    for row, change in zip(vv, cs_decoded, strict=True):
        for printed, ours in zip(row.images, _images_of(change), strict=True):
            for number, text in printed.items():
                name = cs_names[number - 1]
                value = ours[name]
                info = parse_type(cs_types[name])
                cs = name.rsplit("_", 1)[0]
                if value is None:
                    assert text == b"NULL", (name, text)
                elif cs in CHARSETS and info.base in ("varchar", "text"):
                    assert _vv_string(text) == value.encode(CHARSETS[cs][1]), (name, text, value)
                elif info.base == "enum":
                    assert int(text) == list(info.args).index(value) + 1, (name, text, value)
                elif info.base == "set":
                    bits = int(text[2:-1], 2) if text.startswith(b"b'") else int(text)  # printed as b'00000010'
                    assert bits == sum(1 << list(info.args).index(m) for m in value), (name, text, value)
                elif info.base in ("bigint", "tinyint", "year"):
                    assert value in _vv_int(text), (name, text, value)
                else:
                    continue
                checked += 1
    assert checked > 400
    await _replicate_and_compare(server, db, chdb_target, chdb_dir)


# ----------------------------------------------------------------------------------------------------------
# gtid_mode=OFF: positions and resume by file/offset
# ----------------------------------------------------------------------------------------------------------


async def test_gtid_mode_off_resume_by_file_and_offset(
    mysql_factory: Callable[..., MySQLServer], chdb_target: Target, chdb_dir: Path
) -> None:
    server = mysql_factory(gtid_mode="OFF", enforce_gtid_consistency="OFF")
    db = server.create_database("nogtid")
    conn = server.connect(database=db)
    try:
        wl = Workload(71, omit_types=("geometry", "point"))
        wl.run(conn, db, n_transactions=2, statements_per_txn=2, ddl_every=0)
        await _replicate(server, db, chdb_target)
        wl.run(conn, db, n_transactions=6, statements_per_txn=3, ddl_every=0)
        server.flush_binary_logs()
        result = wl.run(conn, db, n_transactions=6, statements_per_txn=3, ddl_every=0)
    finally:
        conn.close()
    events, end = await _events(server)
    assert end is not None
    assert end.gtid_set is None or not str(end.gtid_set)
    assert all(e.anonymous for e in events if isinstance(e, GtidEvent))
    changes = _decoded_changes(events, db)
    assert_changes_match(_as_workload_changes(changes, result, events, db), result.changes, result)
    # the position after every transaction; a stream from any of them yields exactly the rest
    positions: list[tuple[BinlogPosition, int]] = []  # (position, row changes before it)
    seen = 0
    async with asyncio.timeout(DEADLINE), BinlogStream(server.repl_dsn, blocking=False, from_beginning=True) as st:
        async for event in st:
            if isinstance(event, RowsEvent) and event.schema == db:
                seen += len(event.rows)
            if isinstance(event, XidEvent):
                positions.append((st.position, seen))  # type: ignore[arg-type]
    files = {p.file for p, _ in positions}
    assert len(files) == 2, files
    r = random.Random(3)
    for position, before in [*r.sample(positions, 5), positions[-1]]:
        got, _ = await _events(server, binlog_file=position.file, position=position.offset)
        assert _decoded_changes(got, db) == changes[before:], position
        again, _ = await _events(server, resume_from=position)
        assert _decoded_changes(again, db) == changes[before:], position
    await _replicate_and_compare(server, db, chdb_target, chdb_dir)
