"""Live Oracle MySQL 9.x (and MariaDB) decoding, compared value by value with what was written.

* Random column orders over YEAR, VECTOR, GEOMETRY, BIT, SET, ENUM, JSON, DECIMAL, signed and unsigned integers of
  every width, FLOAT/DOUBLE and text in several charsets (latin1, utf8mb4, cp1251, gbk, ascii, binary): a column
  the decoder counts differently from the server in the table map's SIGNEDNESS or charset lists shifts the sign or
  charset of every later column. Read through the stream, by the compiled core and by the pure-Python decoder.
* ``mybinlog dump`` reads servers with ``binlog_row_image=MINIMAL`` and ``NOBLOB`` (absent columns printed as
  ``{"$missing": true}``), while the library's default (the replicator's) still refuses them.
* With ``binlog_row_metadata=MINIMAL``, ``dump`` says what happens (no names: ``null``) and prints ``null`` names.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import struct
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from mybinlog import BinlogStream, PreconditionError, RowsEvent, UpdateRowsEvent
from mybinlog.protocol._constants import MISSING
from tests.servers import MariaDBServer, MySQLServer

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
TIMEOUT = 120.0


@dataclass(frozen=True)
class Kind:
    """A column type: its SQL, a value generator, how to write a value as SQL, and the value the decoder gives."""

    sql: str
    make: Callable[[random.Random], Any]
    literal: Callable[[Any], tuple[str, list[Any]]] = lambda v: ("%s", [v])
    decoded: Callable[[Any], Any] = lambda v: v


def _f32(x: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", x))[0])


def _point(v: tuple[int, int]) -> tuple[str, list[Any]]:
    return "ST_GeomFromText(%s)", [f"POINT({v[0]} {v[1]})"]


def _point_bytes(v: tuple[int, int]) -> bytes:
    return struct.pack("<IBIdd", 0, 1, 1, float(v[0]), float(v[1]))  # SRID 0, then WKB (little-endian POINT)


def _ints(bits: int, unsigned: bool) -> Callable[[random.Random], int]:
    if unsigned:
        return lambda r: r.choice([0, 2**bits - 1, r.randrange(2**bits)])
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    return lambda r: r.choice([low, -5, high, r.randint(low, high)])


def _text(alphabet: str, n: int = 6) -> Callable[[random.Random], str]:
    return lambda r: "".join(r.choice(alphabet) for _ in range(r.randint(0, n)))


def _json_doc(r: random.Random) -> Any:
    return {"k": [r.randint(-9, 9), "s\u00fc", None, True, {"n": r.choice([1.5, -0.25, 3])}], "e": {}, "a": []}


KINDS: dict[str, Kind] = {
    "tinyint": Kind("TINYINT", _ints(8, False)),
    "tinyint_u": Kind("TINYINT UNSIGNED", _ints(8, True)),
    "smallint": Kind("SMALLINT", _ints(16, False)),
    "smallint_u": Kind("SMALLINT UNSIGNED", _ints(16, True)),
    "mediumint": Kind("MEDIUMINT", _ints(24, False)),
    "mediumint_u": Kind("MEDIUMINT UNSIGNED", _ints(24, True)),
    "int": Kind("INT", _ints(32, False)),
    "int_u": Kind("INT UNSIGNED", _ints(32, True)),
    "bigint": Kind("BIGINT", _ints(64, False)),
    "bigint_u": Kind("BIGINT UNSIGNED", _ints(64, True)),
    "year": Kind("YEAR", lambda r: r.choice([1901, 2155, r.randint(1901, 2155)])),
    "year2": Kind("YEAR", lambda r: r.randint(1901, 2155)),
    "bit1": Kind("BIT(1)", lambda r: r.randint(0, 1)),
    "bit13": Kind("BIT(13)", lambda r: r.randrange(2**13)),
    "bit64": Kind("BIT(64)", lambda r: r.choice([2**64 - 1, r.randrange(2**64)])),
    "decimal": Kind("DECIMAL(20,7)", lambda r: Decimal(r.randrange(-(10**20) + 1, 10**20)).scaleb(-7)),
    "decimal_u": Kind("DECIMAL(10,2) UNSIGNED", lambda r: Decimal(r.randrange(10**10)).scaleb(-2)),
    "float": Kind("FLOAT", lambda r: r.choice([0.5, -1.25, 3.0e10]), decoded=_f32),
    "double_u": Kind("DOUBLE", lambda r: r.choice([0.1, -2.5e-300, 1e300])),
    "enum": Kind("ENUM('a','b','ç') CHARACTER SET latin1", lambda r: r.choice(["a", "b", "ç"])),
    "enum8": Kind("ENUM('x','€','д') CHARACTER SET utf8mb4", lambda r: r.choice(["x", "€", "д"])),
    "set": Kind("SET('p','q','ü') CHARACTER SET utf8mb4",
                lambda r: frozenset(r.sample(["p", "q", "ü"], r.randint(0, 3))),
                literal=lambda v: ("%s", [",".join(sorted(v))])),
    "json": Kind("JSON", _json_doc, literal=lambda v: ("%s", [json.dumps(v)])),
    "vector": Kind("VECTOR(3)", lambda r: [r.choice([0.5, -2.25, 1.0, 0.0]) for _ in range(3)],
                   literal=lambda v: ("STRING_TO_VECTOR(%s)", [json.dumps(v)])),
    "geometry": Kind("GEOMETRY", lambda r: (r.randint(-50, 50), r.randint(-50, 50)), literal=_point,
                     decoded=_point_bytes),
    "latin1": Kind("VARCHAR(20) CHARACTER SET latin1", _text("aéü€ßZ")),
    "utf8mb4": Kind("VARCHAR(20) CHARACTER SET utf8mb4", _text("aü€д🚀中")),
    "cp1251": Kind("VARCHAR(20) CHARACTER SET cp1251", _text("a\u0434\u0416\u0431")),
    "gbk": Kind("VARCHAR(20) CHARACTER SET gbk", _text("a中文")),
    "ascii": Kind("CHAR(6) CHARACTER SET ascii", _text("abcXYZ")),
    "text": Kind("TEXT CHARACTER SET utf8mb4", _text("aü€🚀", 40)),
    "binary": Kind("VARBINARY(8)", lambda r: bytes(r.randrange(256) for _ in range(r.randint(0, 8)))),
}
MARIADB_UNSUPPORTED = {"vector"}  # MariaDB's VECTOR is another type (11.7+): not this test's


def _table_kinds(r: random.Random, flavor: str) -> list[str]:
    kinds = [k for k in KINDS if not (flavor == "mariadb" and k in MARIADB_UNSUPPORTED)]
    chosen = r.sample(kinds, r.randint(8, len(kinds)))
    for must in ("year", "vector", "latin1", "bigint", "tinyint_u"):  # the shapes in every table
        if must in kinds and must not in chosen:
            chosen.insert(r.randrange(len(chosen) + 1), must)
    return chosen


def _insert(conn: Any, db: str, table: str, kinds: list[str], row_id: int, values: list[Any]) -> None:
    parts: list[str] = []
    args: list[Any] = [row_id]
    for kind, value in zip(kinds, values, strict=True):
        if value is None:
            parts.append("NULL")
            continue
        sql, params = KINDS[kind].literal(value)
        parts.append(sql)
        args += params
    with conn.cursor() as cur:
        cur.execute(f"INSERT INTO `{db}`.`{table}` VALUES (%s, {', '.join(parts)})", args)


def _expected(kinds: list[str], values: list[Any], flavor: str) -> tuple[Any, ...]:
    def one(kind: str, v: Any) -> Any:
        if v is None:
            return None
        if kind == "json" and flavor == "mariadb":
            return json.dumps(v)  # MariaDB's JSON is a LONGTEXT alias: its text, as written
        return KINDS[kind].decoded(v)

    return tuple(one(k, v) for k, v in zip(kinds, values, strict=True))


async def _rows_since(dsn: str, gtid_set: str, db: str) -> list[RowsEvent]:
    out: list[RowsEvent] = []
    async with BinlogStream(dsn, gtid_set=gtid_set, blocking=False) as stream:
        async for event in stream:
            if isinstance(event, RowsEvent) and event.schema == db:
                _ = event.rows  # decoded here, while the implementation under test is in place
                out.append(event)
    return out


@pytest.fixture(params=["compiled", "python"])
def implementation(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    from mybinlog.protocol._accel import speedups

    if request.param == "python":
        monkeypatch.setattr("mybinlog.protocol._table.speedups", None)
    elif speedups is None:
        if os.environ.get("MYBINLOG_NO_EXTENSIONS"):
            pytest.skip("MYBINLOG_NO_EXTENSIONS is set: the python case covers this pass")
        pytest.fail("the compiled core is not built: build it (pip install -e .) or set MYBINLOG_NO_EXTENSIONS=1")
    return str(request.param)


def _check_random_orders(server: MariaDBServer, seed: int) -> None:
    r = random.Random(seed)
    db = server.create_database(f"orders_{seed}")
    start = server.gtid_position()
    conn = server.connect(database=db)
    written: dict[str, list[tuple[Any, ...]]] = {}
    layouts: dict[str, list[str]] = {}
    try:
        for t in range(5):
            kinds = _table_kinds(r, server.flavor)
            table = f"t{t}"
            cols = ", ".join(f"c{i} {KINDS[k].sql}" for i, k in enumerate(kinds))
            with conn.cursor() as cur:
                cur.execute(f"CREATE TABLE `{table}` (id INT PRIMARY KEY, {cols})")
            layouts[table] = kinds
            for row_id in range(12):
                values = [None if r.random() < 0.08 else KINDS[k].make(r) for k in kinds]
                _insert(conn, db, table, kinds, row_id, values)
                written.setdefault(table, []).append((row_id, *_expected(kinds, values, server.flavor)))
    finally:
        conn.close()
    events = asyncio.run(_rows_since(server.repl_dsn, start, db))
    if isinstance(server, MySQLServer):  # mysqlbinlog's reading of the same table maps: UNSIGNED on the same columns
        listed = _mysqlbinlog_unsigned(server, db)
        for event in events:
            table_map = event.table
            assert table_map is not None
            ours = [c.name for c in table_map.columns if c.unsigned and c.type_name != "year"]
            assert ours == listed[table_map.name], (table_map.name, layouts[table_map.name])
    decoded: dict[str, list[tuple[Any, ...]]] = {}
    for event in events:
        decoded.setdefault(event.table.name, []).extend(event.rows)  # type: ignore[union-attr]
    assert sorted(decoded) == sorted(written)
    for table, rows in written.items():
        assert len(decoded[table]) == len(rows), table
        for want, got in zip(rows, decoded[table], strict=True):
            for i, (w, g) in enumerate(zip(want, got, strict=True)):
                kind = "id" if i == 0 else layouts[table][i - 1]
                got_value = list(g) if kind == "vector" and g is not None else g
                assert got_value == w, f"{table}.c{i - 1} ({kind}) row {want[0]}: decoded {g!r}, wrote {w!r}; " \
                                       f"columns {layouts[table]}"
                if isinstance(w, int) and not isinstance(w, bool):
                    assert type(g) is int, (table, kind)


def _mysqlbinlog_unsigned(server: MySQLServer, db: str) -> dict[str, list[str]]:
    """Per table of ``db``: the columns ``mysqlbinlog --print-table-metadata`` prints as UNSIGNED (not YEAR)."""
    text = server.mysqlbinlog("--print-table-metadata", *map(str, server.binlog_paths()))
    out: dict[str, list[str]] = {}
    table: str | None = None
    for line in text.splitlines():
        match = re.search(r"Table_map: `([^`]*)`\.`([^`]*)`", line)
        if match:
            table = match.group(2) if match.group(1) == db else None
            if table is not None:
                out[table] = []
            continue
        column = re.match(r"#\s+(?:Columns\()?`([^`]*)` (.*)", line)
        if table is not None and column and " UNSIGNED" in column.group(2) and "YEAR" not in column.group(2):
            out[table].append(column.group(1))
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_mysql_random_column_orders_decode_value_by_value(mysql: MySQLServer, implementation: str, seed: int) -> None:
    _check_random_orders(mysql, seed + (100 if implementation == "python" else 0))


def test_mariadb_random_column_orders_decode_value_by_value(mariadb: MariaDBServer, implementation: str) -> None:
    _check_random_orders(mariadb, 7 + (100 if implementation == "python" else 0))


# ----------------------------------------------------------------------------------------------------------
# dump on MINIMAL / NOBLOB row images and MINIMAL metadata
# ----------------------------------------------------------------------------------------------------------


def run_dump(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "mybinlog", "dump", *args], capture_output=True, text=True,
                          timeout=TIMEOUT, env=env, cwd=REPO, check=False)


def _image_workload(server: MariaDBServer) -> str:
    db = server.create_database("images")
    conn = server.connect(database=db)
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(10), blb BLOB, y YEAR, g BIGINT)")
            cur.execute("INSERT INTO t VALUES (1, 10, 'x', 'blob1', 2024, -5)")
            cur.execute("UPDATE t SET a = 11 WHERE id = 1")
            cur.execute("DELETE FROM t WHERE id = 1")
    finally:
        conn.close()
    return db


def _dump_rows(server: MariaDBServer, db: str) -> tuple[list[dict[str, Any]], str]:
    out = run_dump("--dsn", server.repl_dsn, "--from-beginning", "--stop-at-end", "--format", "jsonl")
    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines()]
    return [e for e in events if e.get("schema") == db and "rows" in e], out.stderr


MISS = {"$missing": True}
# (WRITE after-image, UPDATE before/after, DELETE before) of `_image_workload` per row image
IMAGES = {
    "MINIMAL": ([[1, 10, "x", "626c6f6231", 2024, -5]],
                [{"before": [1, MISS, MISS, MISS, MISS, MISS], "after": [MISS, 11, MISS, MISS, MISS, MISS]}],
                [[1, MISS, MISS, MISS, MISS, MISS]]),
    "NOBLOB": ([[1, 10, "x", "626c6f6231", 2024, -5]],
               [{"before": [1, 10, "x", MISS, 2024, -5], "after": [1, 11, "x", MISS, 2024, -5]}],
               [[1, 11, "x", MISS, 2024, -5]]),
}


def _check_images(server: MariaDBServer, image: str) -> None:
    db = _image_workload(server)
    rows, _stderr = _dump_rows(server, db)
    assert [e["rows"] for e in rows] == list(IMAGES[image])
    assert rows[0]["columns"] == ["id", "a", "b", "blb", "y", "g"]

    async def library_default() -> None:
        async with BinlogStream(server.repl_dsn, blocking=False) as stream:
            async for _ in stream:
                pass

    with pytest.raises(PreconditionError, match="binlog_row_image"):  # the replicator's requirement stays
        asyncio.run(library_default())

    async def accepted() -> list[Any]:
        got: list[Any] = []
        async with BinlogStream(server.repl_dsn, from_beginning=True, blocking=False,
                                require_full_row_image=False) as stream:
            async for event in stream:
                if isinstance(event, UpdateRowsEvent) and event.schema == db:
                    got.extend(event.rows)
        return got

    ((before, after),) = asyncio.run(accepted())
    if image == "MINIMAL":
        assert before[1] is MISSING
        assert after[0] is MISSING
        assert after[1] == 11


@pytest.mark.parametrize("image", ["MINIMAL", "NOBLOB"])
def test_mysql_dump_reads_partial_row_images(mysql_factory: Callable[..., MySQLServer], image: str) -> None:
    _check_images(mysql_factory(binlog_row_image=image), image)


@pytest.mark.parametrize("image", ["MINIMAL", "NOBLOB"])
def test_mariadb_dump_reads_partial_row_images(mariadb_factory: Callable[..., MariaDBServer], image: str) -> None:
    _check_images(mariadb_factory(binlog_row_image=image), image)


def test_mysql_dump_with_minimal_metadata_says_names_are_null(mysql_factory: Callable[..., MySQLServer]) -> None:
    server = mysql_factory(binlog_row_metadata="MINIMAL")
    db = _image_workload(server)
    rows, stderr = _dump_rows(server, db)
    assert rows
    assert all(e["columns"] == [None] * 6 for e in rows)
    # charsets and signedness are in MINIMAL metadata too: values still decode right
    assert rows[0]["rows"] == [[1, 10, "x", "626c6f6231", 2024, -5]]
    assert "no column names" in stderr, stderr
    assert "tracking DDL" not in stderr, stderr
    text = run_dump("--dsn", server.repl_dsn, "--from-beginning", "--stop-at-end")
    assert text.returncode == 0, text.stderr
    assert "@1=1, @2=10, @3='x'" in text.stdout, text.stdout[-2000:]

