"""Both ClickHouse targets against the real thing: a private clickhouse-server 18.16 over HTTP, and chdb."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import pytest

from mybinlog import ConfigurationError, TargetConnectionError, TargetError
from mybinlog.clickhouse import (
    Capabilities,
    ChdbTarget,
    HttpTarget,
    Target,
    open_target,
    quote_bytes,
    quote_ident,
    quote_table,
    tsv_escape,
    tsv_escape_bytes,
)
from mybinlog.testing._clickhouse import CH_PASSWORD, ClickHouseServer

pytestmark = pytest.mark.integration  # also for tests that get their target through the parametrized fixture


@pytest.fixture(params=["http", "chdb"])
def target(request: pytest.FixtureRequest) -> Any:
    """The same test on both kinds of target (each with a fresh database)."""
    return request.getfixturevalue("ch_http" if request.param == "http" else "chdb_target")


NASTY = [
    "",
    "plain",
    "tab\there",
    "new\nline",
    "cr\rlf\r\n",
    "back\\slash \\N \\t",
    "\\N",
    "nul\0byte",
    "quote ' and \" and `",
    "unicode é ✓ 日本語 🎉",
    "\b\f\a\v\x1b",
    " leading and trailing spaces ",
]


def _rows_tsv(rows: list[list[str]]) -> bytes:
    return "".join("\t".join(row) + "\n" for row in rows).encode()


async def test_capabilities_and_description(target: Target) -> None:
    assert isinstance(target, Target)
    rows = await target.query("SELECT version()")
    assert target.capabilities == Capabilities.from_version(str(rows[0][0]))
    if isinstance(target, HttpTarget):
        assert target.kind == "http"
        assert target.capabilities.version[:2] == (18, 16)
    else:
        assert isinstance(target, ChdbTarget)
        assert target.kind == "chdb"
        assert target.capabilities.insert_deduplication_token
    assert target.database is not None
    assert target.database in target.description
    assert CH_PASSWORD not in target.description
    assert CH_PASSWORD not in repr(target)
    assert await target.query("SELECT currentDatabase()") == [[target.database]]


async def test_strings_round_trip(target: Target) -> None:
    table = quote_table(str(target.database), "strings")
    await target.execute(
        f"CREATE TABLE {table} (id UInt32, s String, n Nullable(String)) ENGINE = MergeTree ORDER BY id"
    )
    rows = [[str(i), tsv_escape(text), "\\N" if i % 2 else tsv_escape(text)] for i, text in enumerate(NASTY)]
    await target.insert_tsv(table, ["id", "s", "n"], _rows_tsv(rows))
    result = await target.query(f"SELECT id, s, n FROM {table} ORDER BY id")
    assert result == [[str(i), text, None if i % 2 else text] for i, text in enumerate(NASTY)]


async def test_binary_round_trip(target: Target) -> None:
    table = quote_table(str(target.database), "blobs")
    await target.execute(f"CREATE TABLE {table} (id UInt32, b String) ENGINE = MergeTree ORDER BY id")
    blobs = [b"", bytes(range(256)), b"\xff\xfe\x00\\x41", "é".encode(), b"\xed\xa0\x80", b"\\N"]
    rows = [[str(i), tsv_escape_bytes(blob)] for i, blob in enumerate(blobs)]
    await target.insert_tsv(table, ["id", "b"], _rows_tsv(rows))
    result = await target.query(f"SELECT b, hex(b), length(b) FROM {table} ORDER BY id")
    assert len(result) == len(blobs)
    for blob, (value, hexed, length) in zip(blobs, result, strict=True):
        assert value is not None
        assert value.encode("utf-8", "surrogateescape") == blob
        assert hexed == blob.hex().upper()
        assert length == str(len(blob))
    # a bytes literal finds the row
    assert await target.query(f"SELECT id FROM {table} WHERE b = {quote_bytes(blobs[2])}") == [["2"]]


async def test_many_types(target: Target) -> None:
    caps = target.capabilities
    columns = [
        ("id", "UInt64", "18446744073709551615"),
        ("i8", "Int8", "-128"),
        ("i64", "Int64", "-9223372036854775808"),
        ("f64", "Float64", "0.1"),
        ("dec", "Decimal(38, 10)", "-1234567890123456789012345678.0123456789"),
        ("d", "Date", "2038-01-19"),
        ("dt", "DateTime('UTC')", "2020-02-29 23:59:59"),
        ("fs", "FixedString(3)", "ab\\0"),
        ("u", "UUID", "61f0c404-5cb3-11e7-907b-a6006ad3dba0"),
        ("e", "Enum8('a' = 1, 'b\\'c' = 2)", "b'c"),
        ("arr", "Array(String)", "['x','y\\'z','t\\tb']"),  # composite: quoted text form, no TSV escaping
        ("nn", "Nullable(Int32)", "\\N"),
    ]
    if caps.datetime64:
        columns.append(("dt64", "DateTime64(6, 'UTC')", "1900-01-01 00:00:00.000001"))
    if caps.date32:
        columns.append(("d32", "Date32", "1900-01-01"))
    if caps.bool_type:
        columns.append(("bo", "Bool", "true"))
    big = "12345678901234567890123456789012345.123456789012345678901234567891"
    if caps.decimal256:
        columns.append(("dec256", "Decimal(65, 30)", big))
    table = quote_table(str(target.database), "types")
    definition = ", ".join(f"{quote_ident(name)} {ctype}" for name, ctype, _ in columns)
    await target.execute(f"CREATE TABLE {table} ({definition}) ENGINE = MergeTree ORDER BY id")
    await target.insert_tsv(table, [c[0] for c in columns], _rows_tsv([[c[2] for c in columns]]))
    # composite types come back in their quoted text form, which is not TSV-escaped: read them with toString()
    selected = ", ".join(f"toString({quote_ident(c[0])})" if c[0] == "arr" else quote_ident(c[0]) for c in columns)
    (row,) = await target.query(f"SELECT {selected} FROM {table}")
    got = dict(zip([c[0] for c in columns], row, strict=True))
    assert got["id"] == "18446744073709551615"
    assert got["i64"] == "-9223372036854775808"
    assert got["f64"] == "0.1"
    assert got["dec"] == "-1234567890123456789012345678.0123456789"
    assert got["dt"] == "2020-02-29 23:59:59"
    assert got["fs"] == "ab\0"
    assert got["e"] == "b'c"
    assert got["arr"] == "['x','y\\'z','t\\tb']"
    assert got["nn"] is None
    if caps.datetime64:
        assert got["dt64"] == "1900-01-01 00:00:00.000001"
    if caps.date32:
        assert got["d32"] == "1900-01-01"
    if caps.bool_type:
        assert got["bo"] == "true"
    if caps.decimal256:
        assert got["dec256"] == big


async def test_bulk_insert(target: Target) -> None:
    table = quote_table(str(target.database), "bulk")
    await target.execute(f"CREATE TABLE {table} (id UInt64, s String) ENGINE = MergeTree ORDER BY id")
    data = "".join(f"{i}\trow {i}\n" for i in range(20_000)).encode()
    await target.insert_tsv(table, ["id", "s"], data)
    await target.insert_tsv(table, ["id", "s"], b"")  # nothing
    assert await target.query(f"SELECT count(), sum(id), max(s) FROM {table}") == [
        ["20000", str(sum(range(20_000))), "row 9999"]
    ]
    rows = await target.query(f"SELECT id, s, NULL FROM {table} ORDER BY id")  # > 256 KiB: parsed off the loop
    assert len(rows) == 20_000
    assert rows[-1] == ["19999", "row 19999", None]


async def test_statement_errors_name_the_sql(target: Target) -> None:
    with pytest.raises(TargetError) as info:
        await target.query("SELECT * FROM no_such_table_xyz")
    assert info.value.code == 60
    assert "no_such_table_xyz" in str(info.value)
    assert "(SQL: SELECT * FROM no_such_table_xyz)" in str(info.value)
    assert CH_PASSWORD not in str(info.value)

    with pytest.raises(TargetError) as info:
        await target.execute("CREATE TABLE broken (")
    assert info.value.code == 62  # syntax error
    assert "CREATE TABLE broken (" in str(info.value)

    table = quote_table(str(target.database), "typed")
    await target.execute(f"CREATE TABLE {table} (id UInt64) ENGINE = MergeTree ORDER BY id")
    with pytest.raises(TargetError) as info:
        await target.insert_tsv(table, ["id"], b"not a number\n")
    assert info.value.code == 27  # cannot parse input
    assert f"INSERT INTO {table} (`id`)" in str(info.value)
    assert CH_PASSWORD not in str(info.value)
    # the target still works after errors
    assert await target.query(f"SELECT count() FROM {table}") == [["0"]]


async def test_concurrent_calls(target: Target) -> None:
    results = await asyncio.gather(*(target.query(f"SELECT {i}, sleepEachRow(0) FROM system.one") for i in range(8)))
    assert [r[0][0] for r in results] == [str(i) for i in range(8)]


async def test_deduplication_token(target: Target) -> None:
    caps = target.capabilities
    settings = " SETTINGS non_replicated_deduplication_window = 100" if caps.insert_deduplication_token else ""
    table = quote_table(str(target.database), "dedup")
    await target.execute(f"CREATE TABLE {table} (id UInt64, s String) ENGINE = MergeTree ORDER BY id{settings}")
    batch = b"1\ta\n2\tb\n"
    await target.insert_tsv(table, ["id", "s"], batch, dedup_token="batch-1")
    await target.insert_tsv(table, ["id", "s"], batch, dedup_token="batch-1")  # a retry
    await target.insert_tsv(table, ["id", "s"], batch, dedup_token="batch-2")  # same rows, another batch
    (count,) = (await target.query(f"SELECT count() FROM {table}"))[0]
    if caps.insert_deduplication_token:
        assert count == "4"  # the retry was dropped
    else:
        assert count == "6"  # 18.16: no tokens, every insert is written (documented)


# --- HTTP only ---

# 18.16 has no currentUser(): find this very query in the process list
_WHO_AM_I = "SELECT user FROM system.processes WHERE query LIKE '%who-am-i-marker%'"


async def test_http_wrong_password(clickhouse_server: ClickHouseServer) -> None:
    url = f"http://default:Wrong-Secret-1@127.0.0.1:{clickhouse_server.http_port}"
    with pytest.raises(TargetError) as info:
        await open_target(url)
    assert info.value.code == 193
    assert "authentication failed for user 'default'" in str(info.value)
    assert "Wrong-Secret-1" not in str(info.value)
    assert "Wrong-Secret-1" not in repr(info.value)


async def test_http_unknown_database(clickhouse_server: ClickHouseServer) -> None:
    with pytest.raises(TargetError) as info:
        await open_target(clickhouse_server.url(), database="no_such_db_xyz")
    assert info.value.code == 81
    assert CH_PASSWORD not in str(info.value)


async def test_http_unreachable() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(TargetConnectionError) as info:
        await open_target(f"http://default:Hidden-Pw-2@127.0.0.1:{port}")
    assert info.value.retriable
    assert f"127.0.0.1:{port}" in str(info.value)
    assert "Hidden-Pw-2" not in str(info.value)


async def test_http_password_from_environment(
    clickhouse_server: ClickHouseServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MYBINLOG_CH_PASSWORD", CH_PASSWORD)
    target = await open_target(clickhouse_server.http_url)
    try:
        assert await target.query(_WHO_AM_I) == [["default"]]
        assert CH_PASSWORD not in target.description
    finally:
        await target.aclose()
    monkeypatch.delenv("MYBINLOG_CH_PASSWORD")
    with pytest.raises(TargetError) as info:
        await open_target(clickhouse_server.http_url)
    assert info.value.code == 194  # password required


async def test_http_user_without_password_and_settings(clickhouse_server: ClickHouseServer) -> None:
    target = await open_target(clickhouse_server.url(user="nopass") + "/?max_threads=1&database=system")
    try:
        assert target.database == "system"
        assert await target.query(_WHO_AM_I) == [["nopass"]]
        assert await target.query("SELECT currentDatabase()") == [["system"]]
        assert await target.query("SELECT value FROM system.settings WHERE name = 'max_threads'") == [["1"]]
    finally:
        await target.aclose()


async def test_http_credentials_as_query_parameters(clickhouse_server: ClickHouseServer) -> None:
    target = await open_target(f"{clickhouse_server.http_url}/?user=default&password={CH_PASSWORD}")
    try:
        assert await target.query(_WHO_AM_I) == [["default"]]
        assert CH_PASSWORD not in target.description
    finally:
        await target.aclose()


async def test_http_closed_target(clickhouse_server: ClickHouseServer) -> None:
    target = await open_target(clickhouse_server.url())
    await target.aclose()
    await target.aclose()  # idempotent
    with pytest.raises(TargetError, match="closed"):
        await target.query("SELECT 1")


async def test_http_server_stopped_midway(tmp_path: Path) -> None:
    server = ClickHouseServer(tmp_path / "ch")
    server.start()
    try:
        target = await open_target(server.url())
        try:
            assert await target.query("SELECT 1") == [["1"]]
            server.kill()
            with pytest.raises(TargetConnectionError) as info:
                await target.query("SELECT 1")
            assert CH_PASSWORD not in str(info.value)
        finally:
            await target.aclose()
    finally:
        server.cleanup()


# --- chdb only ---


async def test_chdb_reopen_keeps_data(chdb_target: Any) -> None:
    path, database = chdb_target.path, chdb_target.database
    table = quote_table(database, "kept")
    await chdb_target.execute(f"CREATE TABLE {table} (id UInt64) ENGINE = MergeTree ORDER BY id")
    await chdb_target.insert_tsv(table, ["id"], b"1\n2\n")
    second = await open_target(f"chdb://{path}", database=database)  # the same directory: shared
    try:
        assert await second.query(f"SELECT count() FROM {table}") == [["2"]]
    finally:
        await second.aclose()
    assert await chdb_target.query(f"SELECT sum(id) FROM {table}") == [["3"]]


async def test_chdb_one_directory_per_process(chdb_dir: Path, tmp_path: Path) -> None:
    first = await open_target(str(chdb_dir))
    try:
        with pytest.raises(ConfigurationError, match="one data directory per process"):
            await open_target(str(tmp_path / "other"))
    finally:
        await first.aclose()
    with pytest.raises(TargetError, match="closed"):
        await first.query("SELECT 1")
    other = await open_target(f"chdb://{tmp_path / 'other'}")  # free once every target on chdb_dir is closed
    try:
        await other.execute("CREATE TABLE default.t (id UInt8) ENGINE = MergeTree ORDER BY id")
        await other.insert_tsv("default.t", ["id"], b"7\n")
    finally:
        await other.aclose()
    again = await open_target(str(tmp_path / "other"))  # data persisted in the directory
    try:
        assert await again.query("SELECT id FROM default.t") == [["7"]]
    finally:
        await again.aclose()


async def test_chdb_unknown_database(chdb_dir: Path) -> None:
    with pytest.raises(TargetError) as info:
        await open_target(str(chdb_dir), database="no_such_db_xyz")
    assert info.value.code == 81
    first = await open_target(str(chdb_dir))  # the failed open released the directory
    await first.aclose()


# --- the capability table against real servers ---

PROBES: dict[str, list[str]] = {
    "datetime64": ["CREATE TABLE {db}.p (a DateTime64(3)) ENGINE = Memory"],
    "date32": ["CREATE TABLE {db}.p (a Date32) ENGINE = Memory"],
    "bool_type": ["CREATE TABLE {db}.p (a Bool) ENGINE = Memory"],
    "json_type": ["CREATE TABLE {db}.p (a JSON) ENGINE = Memory"],
    "decimal256": ["CREATE TABLE {db}.p (a Decimal(50, 10)) ENGINE = Memory"],
    "replacing_is_deleted": [
        "CREATE TABLE {db}.p (id UInt8, v UInt64, d UInt8) ENGINE = ReplacingMergeTree(v, d) ORDER BY id"
    ],
    "insert_deduplication_token": [
        "CREATE TABLE {db}.p (id UInt8) ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window=9",
        "SELECT 1 SETTINGS insert_deduplication_token = 'x'",
    ],
    "lightweight_delete": [
        "CREATE TABLE {db}.p (id UInt8) ENGINE = MergeTree ORDER BY id",
        "DELETE FROM {db}.p WHERE id = 1",
    ],
    "alter_if_exists": [
        "CREATE TABLE {db}.p (id UInt8) ENGINE = MergeTree ORDER BY id",
        "ALTER TABLE {db}.p ADD COLUMN IF NOT EXISTS id UInt8",
        "ALTER TABLE {db}.p DROP COLUMN IF EXISTS nope",
    ],
    "mutations_sync": ["SELECT 1 SETTINGS mutations_sync = 2"],
    "low_cardinality": ["CREATE TABLE {db}.p (a LowCardinality(String)) ENGINE = Memory"],
    "rename_column": [
        "CREATE TABLE {db}.p (id UInt8, a UInt8) ENGINE = MergeTree ORDER BY id",
        "ALTER TABLE {db}.p RENAME COLUMN a TO b",
    ],
    "nullable_key": [
        "CREATE TABLE {db}.p (id Nullable(UInt8)) ENGINE = MergeTree ORDER BY id SETTINGS allow_nullable_key = 1"
    ],
}


@pytest.mark.parametrize("feature", sorted(PROBES))
async def test_capability_matches_the_server(target: Target, feature: str) -> None:
    db = quote_ident(str(target.database))
    try:
        for sql in PROBES[feature]:
            await target.execute(sql.format(db=db))
        works = True
    except TargetError:
        works = False
    finally:
        await target.execute(f"DROP TABLE IF EXISTS {db}.p")
    assert works == getattr(target.capabilities, feature), f"{feature} on {target.capabilities}"
