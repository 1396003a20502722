"""Live type mapping: workload rows from a real MariaDB and MySQL, in both source forms, stored in real ClickHouse.

A seeded workload (every column type, the extreme rows, zero dates, the composite-key and key-less tables) is
written to the session MariaDB. Each table's final contents are taken twice: from the binlog (mybinlog's decoder,
replayed change by change) and from ``SELECT *`` through pymysql (what a snapshot reads). Both are encoded with
mybinlog's encoders into tables created from the real ``SHOW CREATE TABLE`` text, in embedded ClickHouse (chdb,
26.x) and in the ClickHouse 18.16 server over HTTP. Then:

* ClickHouse's column types are exactly :func:`clickhouse_type`;
* for every row and column, the canonical value of the source value equals the canonical value of the text
  ClickHouse returns (:func:`values_match`: floats within the documented tolerance);
* both source forms give byte-identical ClickHouse contents, except FLOAT/DOUBLE (pymysql gets them through
  MariaDB's text protocol, rounded to 6 / 15 digits); on chdb the binlog's floats come back bit-exact.

A second test runs ALTER statements from :func:`alter_sql` against both servers and checks the existing rows.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import decimal
import struct
import time
from dataclasses import dataclass
from typing import Any

import asyncmy
import pytest

from mybinlog import ddl
from mybinlog.clickhouse._tables import alter_sql, create_table_sql, sorting_key
from mybinlog.clickhouse.types import (
    canonical,
    clickhouse_type,
    column_kind,
    make_row_encoder,
    values_match,
)
from mybinlog.ddl import TableDef, parse_create_table
from tests.live import decoded_changes, stream_events
from tests.servers import MariaDBServer
from tests.workload import TABLES, Workload

SEED = 1111
DEADLINE = 60.0  # seconds for a mutation on the 18.16 server; never reached when things work


@dataclass
class SourceTable:
    definition: TableDef
    key: tuple[str, ...]  # the workload's logical key
    binlog: list[tuple[Any, ...]]  # final rows replayed from the binlog, in table column order
    select: list[tuple[Any, ...]]  # SELECT * through pymysql


@dataclass
class Source:
    db: str
    tables: dict[str, SourceTable]


def _select_list(definition: TableDef) -> str:
    """The table's columns for a ``SELECT``: a VECTOR as its bytes (pymysql and asyncmy decode a VECTOR field as
    text and fail), every other column as is."""
    return ", ".join(
        f"CAST(`{c.name}` AS BINARY) AS `{c.name}`" if c.type_name == "vector" else f"`{c.name}`"
        for c in definition.columns
    )


@pytest.fixture(scope="module")
async def source(server_kind: str, request: pytest.FixtureRequest) -> Any:
    server: MariaDBServer = request.getfixturevalue(server_kind)  # the session server (``server`` is per test)
    db = "ch_types_live"
    server.drop_database(db)
    server.create_database(db)
    gtid_before = server.gtid_binlog_pos()
    conn = server.connect(database=db)
    try:
        Workload(SEED, large_values=False).run(conn, db, 12, 4, ddl_every=0, max_rows_per_statement=4)
        end = server.master_status()
        tables: dict[str, SourceTable] = {}
        with conn.cursor() as cur:
            cur.execute("SET time_zone = '+00:00'")
            for name, (_ddl_text, _columns, key) in TABLES.items():
                cur.execute(f"SHOW CREATE TABLE `{name}`")
                definition = parse_create_table(cur.fetchone()[1], db)
                cur.execute(f"SELECT {_select_list(definition)} FROM `{name}`")
                assert [d[0] for d in cur.description] == definition.column_names()
                tables[name] = SourceTable(definition, key, [], [tuple(r) for r in cur.fetchall()])
    finally:
        conn.close()
    # the snapshot reads with asyncmy: it returns exactly what pymysql returns, for every type
    kw = server.connect_kwargs("admin", db)
    aconn = await asyncmy.connect(
        host=kw["host"], port=kw["port"], user=kw["user"], password=kw["password"], db=db, charset="utf8mb4"
    )
    try:
        async with aconn.cursor() as acur:
            await acur.execute("SET time_zone = '+00:00'")
            for name, table in tables.items():
                await acur.execute(f"SELECT {_select_list(table.definition)} FROM `{name}`")
                assert sorted(map(repr, await acur.fetchall())) == sorted(map(repr, table.select)), name
    finally:
        aconn.close()
    events = await stream_events(server.repl_dsn, end, gtid_set=gtid_before)
    state: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {name: {} for name in tables}
    for change in decoded_changes(events, db):
        rows, key = state[change.table], tables[change.table].key
        if change.before is not None:
            del rows[tuple(change.before[k] for k in key)]
        if change.after is not None:
            rows[tuple(change.after[k] for k in key)] = change.after
    zero_dates = [v for row in tables["all_types"].select for v in row if isinstance(v, str) and v[:4] == "0000"]
    assert zero_dates, "pymysql returns zero dates as text"
    for name, table in tables.items():
        names = table.definition.column_names()
        table.binlog = [tuple(row[n] for n in names) for row in state[name].values()]
        assert len(table.binlog) == len(table.select) > 3, name
    yield Source(db, tables)
    server.drop_database(db)


def test_select_value_forms(source: Source) -> None:
    """What pymysql/asyncmy return (the forms the encoders accept besides the binlog's)."""
    table = source.tables["all_types"]
    names = table.definition.column_names()
    flavored = {"c_uuid": str, "c_inet6": str} if "c_uuid" in names else {"c_vector": bytes, "c_vector_big": bytes}
    expected = {
        **flavored,  # MariaDB's UUID/INET6 as text; MySQL's VECTOR read as its bytes (CAST AS BINARY)
        "c_bit13": bytes,
        "c_set": str,
        "c_json": str,
        "c_time6": dt.timedelta,
        "c_dec_65_30": decimal.Decimal,
        "c_binary": bytes,
        "c_geometry": bytes,
    }
    for name, kind in expected.items():
        values = [row[names.index(name)] for row in table.select if row[names.index(name)] is not None]
        assert values
        assert all(type(v) is kind for v in values), name
    stamps = [row[names.index("c_timestamp6")] for row in table.select]
    assert all(v.tzinfo is None for v in stamps if isinstance(v, dt.datetime))  # naive, in the UTC session
    for name in ("c_timestamp6", "c_datetime6"):  # zero dates come as text, with the fsp digits
        texts = {row[names.index(name)] for row in table.select if isinstance(row[names.index(name)], str)}
        assert texts <= {"0000-00-00 00:00:00.000000"}
    dates = {row[names.index("c_date")] for row in table.select if isinstance(row[names.index("c_date")], str)}
    assert all("-00" in d for d in dates)
    binary = [row[names.index("c_binary")] for row in table.select if row[names.index("c_binary")] is not None]
    assert all(len(v) == 16 for v in binary)  # padded by the server


@pytest.fixture(params=["chdb", "http"])
def target(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue("chdb_target" if request.param == "chdb" else "ch_http")


def _renamed(definition: TableDef, name: str) -> TableDef:
    return dataclasses.replace(definition, name=name)


async def _store(target: Any, definition: TableDef, rows: list[tuple[Any, ...]]) -> list[list[str | None]]:
    """Create the table, insert the rows with mybinlog's row encoder, read them back (all columns)."""
    caps = target.capabilities
    await target.execute(create_table_sql(definition, database=target.database, engine="replacing", caps=caps))
    encode = make_row_encoder(definition.columns, caps)
    data = "".join(encode(row) + "\t1\t1\n" for row in rows).encode("utf-8", "surrogateescape")
    table = f"`{target.database}`.`{definition.name}`"
    await target.insert_tsv(table, [*definition.column_names(), "_sign", "_version"], data)
    columns = ", ".join(f"`{c}`" for c in definition.column_names())
    back: list[list[str | None]] = await target.query(f"SELECT {columns} FROM {table}")
    return back


def _key_index(table: SourceTable) -> list[int]:
    names = [n.lower() for n in table.definition.column_names()]
    return [names.index(k.lower()) for k in table.key]


@pytest.mark.parametrize("table_name", list(TABLES))
async def test_replica_holds_both_source_forms(target: Any, source: Source, table_name: str) -> None:
    caps = target.capabilities
    table = source.tables[table_name]
    definition = table.definition
    columns = definition.columns
    stored = {
        "binlog": await _store(target, _renamed(definition, f"{table_name}_binlog"), table.binlog),
        "select": await _store(target, _renamed(definition, f"{table_name}_select"), table.select),
    }
    # the types ClickHouse reports are the mapped ones
    described = await target.query(f"DESCRIBE TABLE `{target.database}`.`{table_name}_binlog`")
    types = {row[0]: row[1] for row in described}
    for col in columns:
        assert types[col.name] == clickhouse_type(col, caps), col.name

    src_canon = [canonical(c, caps) for c in columns]
    ch_canon = [canonical(c, caps, side="clickhouse") for c in columns]
    match = [values_match(c, caps) for c in columns]
    key = _key_index(table)

    def by_key(rows: list[Any], canon: list[Any]) -> dict[tuple[str | None, ...], list[Any]]:
        out = {tuple(canon[k](row[k]) for k in key): list(row) for row in rows}
        assert len(out) == len(rows)
        return out

    problems: list[str] = []
    replica = {form: by_key(rows, ch_canon) for form, rows in stored.items()}
    for form, rows in (("binlog", table.binlog), ("select", table.select)):
        source_rows = by_key(rows, src_canon)
        assert source_rows.keys() == replica[form].keys(), form
        for k, row in source_rows.items():
            back = replica[form][k]
            for i, col in enumerate(columns):
                want, got = src_canon[i](row[i]), ch_canon[i](back[i])
                if not match[i](want, got):
                    problems.append(
                        f"{form} {k} {col.name}: source {row[i]!r:.80} -> {want!r:.80}, replica {got!r:.80}"
                    )
                elif form == "binlog" and target.kind == "chdb" and row[i] is not None:
                    kind = column_kind(col)
                    if kind == "float64" and float(back[i]) != row[i]:  # chdb parses floats exactly
                        problems.append(f"{k} {col.name}: DOUBLE {row[i]!r} came back as {back[i]}")
                    if kind == "float32" and struct.pack("<f", float(back[i])) != struct.pack("<f", row[i]):
                        problems.append(f"{k} {col.name}: FLOAT {row[i]!r} came back as {back[i]}")
    # both forms of the source give the same ClickHouse contents (floats: see the module docstring)
    for k, binlog_row in replica["binlog"].items():
        select_row = replica["select"][k]
        for i, col in enumerate(columns):
            if column_kind(col) not in ("float32", "float64") and binlog_row[i] != select_row[i]:
                problems.append(
                    f"{k} {col.name}: binlog form stored {binlog_row[i]!r:.80}, SELECT form {select_row[i]!r:.80}"
                )
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:30])


# --- ALTER ---

START = """CREATE TABLE t (
  id INT NOT NULL,
  name VARCHAR(20) DEFAULT NULL,
  amount DECIMAL(10,4) DEFAULT NULL,
  PRIMARY KEY (id)
)"""
ROWS = "1\tone\t1.5000\t1\t1\n2\t\\N\t\\N\t1\t1\n"


async def _wait_mutations(target: Any) -> None:
    """18.16 runs ALTER ... UPDATE asynchronously (no mutations_sync): wait until its mutations are done."""
    if target.capabilities.mutations_sync:
        return
    deadline = time.monotonic() + DEADLINE
    while await target.query(
        f"SELECT count() FROM system.mutations WHERE database = '{target.database}' AND is_done = 0"
    ) != [["0"]]:
        assert time.monotonic() < deadline, "mutations did not finish"
        await asyncio.sleep(0.05)


async def _apply(target: Any, table: TableDef, statement: str) -> tuple[TableDef, list[str] | str]:
    """Apply one MySQL ALTER TABLE to ``table`` and run what alter_sql makes of it; returns the new definition and
    the statements (or the reason ClickHouse cannot follow)."""
    (op,) = ddl.parse_ddl(statement, "db")
    assert isinstance(op, ddl.AlterTable)
    ran: list[str] = []
    for action in op.actions:
        new = ddl.apply_alter(table, action)
        result = alter_sql(table, new, action, database=target.database, engine="replacing", caps=target.capabilities)
        if isinstance(result, str):
            return table, result
        for sql in result:
            await target.execute(sql)
        ran += result
        table = new
    await _wait_mutations(target)
    return table, ran


async def _contents(target: Any, table: TableDef) -> list[list[str | None]]:
    columns = ", ".join(f"`{c}`" for c in table.column_names())
    rows: list[list[str | None]] = await target.query(f"SELECT {columns} FROM `{target.database}`.`t` ORDER BY id")
    return rows


async def _types(target: Any) -> dict[str | None, str | None]:
    return {r[0]: r[1] for r in await target.query(f"DESCRIBE TABLE `{target.database}`.`t`")}


async def test_alter_statements_run_on_the_server(target: Any) -> None:
    caps = target.capabilities
    new_server = target.kind == "chdb"
    table = parse_create_table(START, "db")
    await target.execute(create_table_sql(table, database=target.database, engine="replacing", caps=caps))
    await target.insert_tsv(f"`{target.database}`.`t`", [*table.column_names(), "_sign", "_version"], ROWS.encode())

    table, ran = await _apply(target, table, "ALTER TABLE t ADD COLUMN n INT NULL DEFAULT 7 AFTER id")
    assert len(ran) == 2  # ADD COLUMN ... DEFAULT, then the UPDATE that writes the default out
    table, ran = await _apply(target, table, "ALTER TABLE t ADD COLUMN e ENUM('x','y') NOT NULL, ADD d DATE NOT NULL")
    assert await _contents(target, table) == [
        ["1", "7", "one", "1.5" if new_server else "1.5000", "x", "1970-01-01" if new_server else "0000-00-00"],
        ["2", "7", None, None, "x", "1970-01-01" if new_server else "0000-00-00"],
    ]
    # the DEFAULT is gone after MODIFY on 18.16, but the rows were written out: they keep 7
    table, ran = await _apply(
        target, table, "ALTER TABLE t MODIFY COLUMN n BIGINT NOT NULL, MODIFY amount DECIMAL(12,4)"
    )
    assert ran
    types = await _types(target)
    assert (types["n"], types["amount"]) == ("Int64", "Nullable(Decimal(12, 4))")
    rows = await _contents(target, table)
    assert [r[1] for r in rows] == ["7", "7"]
    assert [r[3] for r in rows] == ["1.5" if new_server else "1.5000", None]
    # ClickHouse cannot follow these: the reasons say why
    _, reason = await _apply(target, table, "ALTER TABLE t MODIFY COLUMN amount DECIMAL(12,2)")
    assert isinstance(reason, str)
    assert "rounds" in reason
    _, reason = await _apply(target, table, "ALTER TABLE t MODIFY COLUMN id BIGINT NOT NULL")
    assert isinstance(reason, str)
    assert "sorting key" in reason
    table2, result = await _apply(target, table, "ALTER TABLE t RENAME COLUMN name TO title")
    if caps.rename_column:
        table = table2
        assert "title" in await _types(target)
    else:
        assert isinstance(result, str)
        assert "20.4" in result
    table, _ = await _apply(target, table, "ALTER TABLE t DROP COLUMN e")
    assert "e" not in await _types(target)
    assert [r[0] for r in await _contents(target, table)] == ["1", "2"]


async def test_key_less_table_adds_columns_to_its_key(target: Any) -> None:
    caps = target.capabilities
    table = parse_create_table("CREATE TABLE t (id INT NOT NULL, b VARCHAR(5) NULL)", "db")
    assert sorting_key(table)[0] == "row"
    await target.execute(create_table_sql(table, database=target.database, engine="replacing", caps=caps))
    columns = [*table.column_names(), "_sign", "_version"]
    await target.insert_tsv(f"`{target.database}`.`t`", columns, b"1\tx\t1\t1\n1\t\\N\t1\t1\n")
    table, ran = await _apply(target, table, "ALTER TABLE t ADD COLUMN c INT NULL, ADD COLUMN d INT NOT NULL")
    assert len(ran) == 2
    assert all("MODIFY ORDER BY" in sql for sql in ran)
    _, reason = await _apply(target, table, "ALTER TABLE t ADD COLUMN e INT NULL DEFAULT 3")
    assert isinstance(reason, str)
    assert "no primary key" in reason
    # rows that differ only in a nullable column are different keys: FINAL keeps both
    await target.insert_tsv(
        f"`{target.database}`.`t`", [*table.column_names(), "_sign", "_version"], b"2\ty\t5\t6\t1\t1\n"
    )
    rows = await target.query(f"SELECT id, b, c, d FROM `{target.database}`.`t` FINAL")
    assert sorted(rows, key=str) == sorted(
        [["1", "x", None, "0"], ["1", None, None, "0"], ["2", "y", "5", "6"]], key=str
    )
