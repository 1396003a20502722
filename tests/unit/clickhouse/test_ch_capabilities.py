"""ClickHouse target helpers without a server: versions and features, quoting, TabSeparated, URLs, errors."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mybinlog import ConfigurationError, TargetConnectionError, TargetError
from mybinlog.clickhouse import (
    FEATURE_VERSIONS,
    Capabilities,
    _chdb,
    _http,
    _target,
    open_target,
    parse_tsv,
    quote_bytes,
    quote_ident,
    quote_string,
    quote_table,
    tsv_escape,
    tsv_escape_bytes,
    tsv_unescape,
)

FLAGS = [f.name for f in dataclasses.fields(Capabilities) if f.name != "version"]


# --- versions and features ---


def test_every_flag_has_a_version_and_back() -> None:
    assert sorted(FEATURE_VERSIONS) == sorted(FLAGS)


def test_clickhouse_18_16_has_no_optional_feature() -> None:
    caps = Capabilities.from_version("18.16.1")
    assert caps.version == (18, 16, 1)
    assert not any(getattr(caps, flag) for flag in FLAGS)
    assert "no optional features" in str(caps)


def test_current_clickhouse_has_every_feature() -> None:
    caps = Capabilities.from_version("26.9.2.1")
    assert caps.version == (26, 9, 2, 1)
    assert all(getattr(caps, flag) for flag in FLAGS)
    assert caps.version_text == "26.9.2.1"


@pytest.mark.parametrize("flag", FLAGS)
def test_feature_boundary(flag: str) -> None:
    major, minor = FEATURE_VERSIONS[flag]
    before = f"{major}.{minor - 1}.9.9" if minor > 1 else f"{major - 1}.12.9"
    assert getattr(Capabilities.from_version(f"{major}.{minor}.1.1"), flag) is True
    assert getattr(Capabilities.from_version(f"{major + 1}.1"), flag) is True
    assert getattr(Capabilities.from_version(before), flag) is False


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("22.2", (22, 2)),
        ("23", (23, 0)),
        (" 24.3.1.2672 (official build)", (24, 3, 1, 2672)),
        ("21.9.1-test", (21, 9, 1)),
    ],
)
def test_version_forms(text: str, expected: tuple[int, ...]) -> None:
    assert Capabilities.from_version(text).version == expected


def test_unparsable_version() -> None:
    with pytest.raises(TargetError, match="cannot parse the ClickHouse version"):
        Capabilities.from_version("unknown")


def test_documented_versions() -> None:
    # spot checks of the table against the releases it cites (docs/targets.md)
    assert Capabilities.from_version("21.8.15").date32 is False
    assert Capabilities.from_version("21.9.2").date32 is True
    assert Capabilities.from_version("22.1.4").insert_deduplication_token is False
    assert Capabilities.from_version("22.2.2").insert_deduplication_token is True
    assert Capabilities.from_version("23.1.7").replacing_is_deleted is False
    assert Capabilities.from_version("23.2.1").replacing_is_deleted is True
    assert Capabilities.from_version("20.3.21").rename_column is False
    assert Capabilities.from_version("20.4.2").rename_column is True


# --- quoting ---


def test_quote_ident() -> None:
    assert quote_ident("t") == "`t`"
    assert quote_ident("a`b") == "`a\\`b`"
    assert quote_ident("a\\b") == "`a\\\\b`"
    assert quote_table("db", "my table") == "`db`.`my table`"


def test_quote_string() -> None:
    assert quote_string("it's") == "'it\\'s'"
    assert quote_string("a\\b") == "'a\\\\b'"
    assert quote_string("x\ny\t\0") == "'x\\ny\\t\\0'"
    assert quote_string("é") == "'é'"


def test_quote_bytes() -> None:
    assert quote_bytes(b"ab") == "'ab'"
    assert quote_bytes(b"\xff'\\\n") == "'\\xFF\\x27\\x5C\\x0A'"
    assert quote_bytes("é".encode()) == "'\\xC3\\xA9'"


# --- TabSeparated ---


def test_tsv_escape() -> None:
    assert tsv_escape("a\tb\nc\\d\re\0f\bg\fh") == "a\\tb\\nc\\\\d\\re\\0f\\bg\\fh"
    assert tsv_escape("plain é ✓") == "plain é ✓"
    assert tsv_escape("\\N") == "\\\\N"  # the text "\N" is not NULL


def test_tsv_escape_bytes() -> None:
    assert tsv_escape_bytes(b"ok") == "ok"
    assert tsv_escape_bytes(b"\xff\x00a\tb\\") == "\\xff\\0a\\tb\\\\"
    assert tsv_escape_bytes("é".encode()) == "é"
    tsv_escape_bytes(bytes(range(256))).encode("utf-8")  # always plain text


def test_parse_tsv_edges() -> None:
    assert parse_tsv(b"") == []
    assert parse_tsv(b"\n") == [[""]]
    assert parse_tsv(b"\\N\n") == [[None]]
    assert parse_tsv(b"\\\\N\n") == [["\\N"]]
    assert parse_tsv(b"a\t\t\\N\n1\t2\t3\n") == [["a", "", None], ["1", "2", "3"]]
    assert parse_tsv(b"a\\tb\\nc\\\\d\\0\\'\\x41\n") == [["a\tb\nc\\d\0'A"]]


def test_parse_tsv_non_utf8_bytes_survive() -> None:
    (row,) = parse_tsv(b"\xff\xfeok\t\\xFF\n")
    assert row[0] is not None
    assert row[1] is not None
    assert row[0].encode("utf-8", "surrogateescape") == b"\xff\xfeok"
    assert row[1].encode("utf-8", "surrogateescape") == b"\xff"


def test_tsv_unescape() -> None:
    assert tsv_unescape("\\N") is None
    assert tsv_unescape("a\\tb") == "a\tb"
    assert tsv_unescape(b"\\xC3\\xA9") == "é"


@given(st.lists(st.one_of(st.none(), st.text()), min_size=1, max_size=5))
def test_text_round_trip(values: list[str | None]) -> None:
    line = "\t".join("\\N" if v is None else tsv_escape(v) for v in values) + "\n"
    assert parse_tsv(line.encode("utf-8", "surrogatepass")) == [
        [None if v is None else v.encode("utf-8", "surrogatepass").decode("utf-8", "surrogateescape") for v in values]
    ]


@given(st.lists(st.binary(), min_size=1, max_size=5))
def test_bytes_round_trip(values: list[bytes]) -> None:
    line = "\t".join(tsv_escape_bytes(v) for v in values) + "\n"
    (row,) = parse_tsv(line.encode("utf-8"))
    assert [None if f is None else f.encode("utf-8", "surrogateescape") for f in row] == values


# --- errors ---


@pytest.mark.parametrize(
    ("text", "message", "code"),
    [
        (
            "Code: 60, e.displayText() = DB::Exception: Table db.t doesn't exist., e.what() = DB::Exception\n",
            "Table db.t doesn't exist.",
            60,
        ),
        (
            "Code: 60. DB::Exception: Table db.t does not exist. (UNKNOWN_TABLE) "
            "(version 24.3.1.2672 (official build))",
            "Table db.t does not exist. (UNKNOWN_TABLE)",
            60,
        ),
        ("something else", "something else", None),
    ],
)
def test_server_messages(text: str, message: str, code: int | None) -> None:
    assert _target._server_message(text) == (message, code)


def test_error_text_names_code_and_sql() -> None:
    err = TargetError("Table t doesn't exist.", sql="SELECT * FROM t", code=60)
    assert str(err) == "Table t doesn't exist. [ClickHouse error 60] (SQL: SELECT * FROM t)"
    long = TargetError("bad", sql="SELECT " + "x" * 1000)
    assert long.sql is not None
    assert len(long.sql) < 400
    assert "(1007 characters)" in long.sql
    assert TargetConnectionError("down").retriable is True
    assert TargetError("bad").retriable is False


# --- URLs ---


@pytest.mark.parametrize(
    "url",
    ["ftp://host/x", "mysql://u:p@h/db", "chdb:", "chdb://", "chdb:///tmp/x?opt=1", "http://", "http://h:notaport"],
)
async def test_bad_urls(url: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        await open_target(url.replace("u:p", "u:secret-pw"))
    assert "secret-pw" not in str(info.value)


def test_chdb_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(str(tmp_path))
    assert _chdb._chdb_path(":memory:") == ":memory:"
    assert _chdb._chdb_path("chdb://:memory:") == ":memory:"
    assert _chdb._chdb_path("chdb:///abs/dir") == "/abs/dir"
    assert _chdb._chdb_path("chdb://rel/dir") == f"{tmp_path}/rel/dir"
    assert _chdb._chdb_path("rel") == f"{tmp_path}/rel"
    assert _chdb._chdb_path("/abs/../abs2/") == "/abs2"


def test_redact_url() -> None:
    assert _http._redact_url("http://u:secret@h:1/") == "http://u:***@h:1/"
    assert _http._redact_url("http://h:1/") == "http://h:1/"
    assert _http._redact_url("http://h/?max_threads=1&password=pw&x=1") == "http://h/?max_threads=1&password=***&x=1"


def test_one_chdb_directory_per_process() -> None:
    first = _chdb._acquire_engine("/nonexistent/a")
    try:
        again = _chdb._acquire_engine("/nonexistent/a")
        assert again is first
        assert first.refs == 2
        with pytest.raises(ConfigurationError, match="one data directory per process"):
            _chdb._acquire_engine("/nonexistent/b")
        _chdb._release_engine(again)
        with pytest.raises(ConfigurationError):
            _chdb._acquire_engine("/nonexistent/b")
    finally:
        _chdb._release_engine(first)
    other = _chdb._acquire_engine("/nonexistent/b")  # free again once every target is closed
    _chdb._release_engine(other)
    assert "/nonexistent/b" not in _chdb._ENGINES
