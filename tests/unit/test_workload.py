"""Pure logic of the test workload: type parsing, value conventions of normalize(), determinism."""

from __future__ import annotations

import datetime as dt
import decimal
import ipaddress
import random
import uuid
from pathlib import Path

import pytest

from tests import corpus
from tests.workload import (
    ALL_TYPES_COLUMNS,
    ALL_TYPES_DDL,
    extreme_rows,
    normalize,
    parse_type,
    random_row,
    to_sql_param,
)

UTC = dt.UTC


def test_parse_type() -> None:
    info = parse_type("DECIMAL(65,30)")
    assert (info.base, info.args, info.unsigned, info.nullable) == ("decimal", (65, 30), False, True)
    assert parse_type("INT UNSIGNED NOT NULL").unsigned
    assert not parse_type("INT UNSIGNED NOT NULL").nullable
    assert parse_type("CHAR(10) CHARACTER SET latin1").charset == "latin1"
    assert parse_type("VARBINARY(300)").charset == "binary"
    assert parse_type("SET('a','b''c')").args == ("a", "b'c")
    assert parse_type("TIMESTAMP(3)").fsp == 3
    assert parse_type("TIME").fsp == 0


@pytest.mark.parametrize(
    ("column_type", "decoded", "written"),
    [
        ("FLOAT", 0.10000000149011612, 0.1),
        ("DOUBLE", 1.5e308, 1.5e308),
        ("DECIMAL(10,2)", decimal.Decimal("1.5"), decimal.Decimal("1.50")),
        ("BIT(13)", b"\x1f\xff", 8191),
        ("SET('a','b','c')", "c,a", frozenset({"a", "c"})),
        ("SET('a','b','c')", 0b101, frozenset({"a", "c"})),
        ("SET('a','b','c')", "", frozenset()),
        ("ENUM('x','y')", 2, "y"),
        ("JSON", '{"a": [1, 2]}', {"a": [1, 2]}),
        ("TIMESTAMP(6)", dt.datetime(2020, 1, 2, 3, 4, 5, 6), dt.datetime(2020, 1, 2, 3, 4, 5, 6, tzinfo=UTC)),
        ("TIMESTAMP(3)", "0000-00-00 00:00:00", "0000-00-00 00:00:00.000"),
        ("TIMESTAMP", 0, "0000-00-00 00:00:00"),
        ("DATETIME(3)", "2021-00-00 00:00:00.000", "2021-00-00 00:00:00"),
        ("DATETIME(2)", "2021-01-02 03:04:05.12", dt.datetime(2021, 1, 2, 3, 4, 5, 120000)),
        ("DATE", "0000-00-00", "0000-00-00"),
        ("DATE", "2021-02-03", dt.date(2021, 2, 3)),
        ("TIME(1)", "-00:00:00.5", dt.timedelta(microseconds=-500000)),
        ("TIME", "-838:59:59", -dt.timedelta(hours=838, minutes=59, seconds=59)),
        ("CHAR(5)", "ab  ", "ab"),
        ("BINARY(4)", b"ab", b"ab\0\0"),
        ("UUID", b"", uuid.UUID(int=0)),
        ("UUID", bytes.fromhex("123456789abc1def8123456789abcdef"), "12345678-9abc-1def-8123-456789abcdef"),
        ("INET6", "1.2.3.4", ipaddress.IPv6Address("::ffff:1.2.3.4")),
        ("INET6", b"\0" * 10 + b"\xff\xff\x01\x02\x03\x04", "::ffff:1.2.3.4"),
        ("VARCHAR(10)", "é".encode(), "é"),
        ("YEAR", 2155, 2155),
    ],
)
def test_normalize_equates_representations(column_type: str, decoded: object, written: object) -> None:
    assert normalize(decoded, column_type) == normalize(written, column_type)


@pytest.mark.parametrize(
    ("column_type", "a", "b"),
    [
        ("FLOAT", 0.1, 0.2),
        ("TIMESTAMP", dt.datetime(2020, 1, 1, tzinfo=UTC), dt.datetime(2020, 1, 1, 1, tzinfo=UTC)),
        ("SET('a','b')", "a", "a,b"),
        ("VARCHAR(5)", "a ", "a"),  # VARCHAR keeps trailing spaces
        ("VARBINARY(5)", b"a\0", b"a"),
        ("TIME(6)", dt.timedelta(microseconds=-1), dt.timedelta(microseconds=1)),
    ],
)
def test_normalize_keeps_real_differences(column_type: str, a: object, b: object) -> None:
    assert normalize(a, column_type) != normalize(b, column_type)


def test_normalize_none_and_unknown_type() -> None:
    assert normalize(None, "INT") is None
    with pytest.raises(ValueError, match="does not know"):
        normalize(1, "SOMETYPE")


@pytest.mark.parametrize(
    ("value", "column_type", "param"),
    [
        (dt.timedelta(minutes=-30), "TIME(6)", "-00:30:00.000000"),
        (dt.timedelta(hours=-838, minutes=-59, seconds=-59), "TIME", "-838:59:59.000000"),
        (dt.datetime(2038, 1, 19, 3, 14, 7, tzinfo=UTC), "TIMESTAMP", "2038-01-19 03:14:07.000000"),
        (frozenset({"b", "a"}), "SET('a','b')", "a,b"),
        (decimal.Decimal("-0.000000000000000000000000000001"), "DECIMAL(65,30)", "-0.000000000000000000000000000001"),
        ({"k": "✓"}, "JSON", '{"k": "✓"}'),
        (uuid.UUID(int=1), "UUID", "00000000-0000-0000-0000-000000000001"),
    ],
)
def test_to_sql_param(value: object, column_type: str, param: object) -> None:
    assert to_sql_param(value, column_type) == param


def test_random_rows_are_deterministic_and_cover_all_columns() -> None:
    rows_a = [random_row(random.Random(9)) for _ in range(3)]
    rows_b = [random_row(random.Random(9)) for _ in range(3)]
    assert rows_a == rows_b
    assert list(rows_a[0]) == [name for name, _ in ALL_TYPES_COLUMNS]
    rng = random.Random(1)
    many = [random_row(rng) for _ in range(200)]
    for name, sql_type in ALL_TYPES_COLUMNS:
        values = [row[name] for row in many]
        if parse_type(sql_type).nullable:
            assert None in values, name
        assert any(v is not None for v in values), name


def test_extreme_rows_shape() -> None:
    low, high, nulls, zeros = extreme_rows()
    assert low["c_bigint"] == -(2**63)
    assert high["c_bigint_u"] == 2**64 - 1
    assert high["c_dec_65_30"] == decimal.Decimal("9" * 35 + "." + "9" * 30)
    assert high["c_time6"] == dt.timedelta(hours=838, minutes=59, seconds=59, microseconds=999999)
    assert high["c_timestamp0"] == dt.datetime(2038, 1, 19, 3, 14, 7, tzinfo=UTC)
    assert nulls["c_int"] is None
    assert nulls["c_int_nn"] == -(2**31)
    assert zeros["c_datetime6"] == "0000-00-00 00:00:00"


def test_all_types_ddl_mentions_every_column() -> None:
    for name, _sql_type in ALL_TYPES_COLUMNS:
        assert f"`{name}`" in ALL_TYPES_DDL


def test_corpus_helpers(corpus_dir: Path) -> None:
    assert corpus.corpus_dir() == corpus_dir
    vectors = corpus.load_vectors()
    assert len(vectors) > 100
    assert vectors[0]["id"] == 1
    assert all("kind" in record for record in vectors)
    assert corpus.vectors_by_kind("decimal")
    assert corpus.binlog_files()


def test_corpus_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MYBINLOG_CORPUS", str(tmp_path / "nowhere"))
    assert corpus.corpus_dir() is None
    assert corpus.load_vectors() == []
    assert "MYBINLOG_CORPUS" in corpus.missing_reason()
