"""The compiled rows encoder (``TsvRows`` in mybinlog/protocol/_sp_tsv.c) writes exactly the lines of the
generated pure-Python rows encoder (mybinlog/clickhouse/types/_encoders.py), or raises the same error.

Random rows of random values for every column kind it writes itself (integers, DOUBLE, text, DATETIME, TIMESTAMP,
DATE, DECIMAL) and for kinds it hands to the encoders (CHAR, ENUM, FLOAT, TIME...), NULL and NOT NULL, for a new
ClickHouse (chdb) and for 18.16 (narrower date ranges, DECIMAL(65) as String): values of the usual type, values at
and past the ClickHouse ranges, aware and naive datetimes, other zones, subclasses, text that needs escaping, lone
surrogates, NaN and infinities, Decimals of another exponent, negative zeros, strings and bools where numbers go.
Also: rows shorter than the layout, columns missing from the row (MySQL's implicit default), other row sequences,
the workload's own rows as the binlog decoder delivers them.

Skipped without the extension (failed under CI=true) and in the MYBINLOG_NO_EXTENSIONS=1 pass.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections import deque
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mybinlog.clickhouse import Capabilities
from mybinlog.clickhouse.types import _encoders
from mybinlog.ddl import ColumnDef, parse_create_table
from mybinlog.errors import TypeMappingError
from mybinlog.protocol import _table
from mybinlog.protocol._constants import ColumnType
from mybinlog.protocol._table import ColumnInfo, TableMap
from tests.builders import encode_decimal, require_speedups

NEW = Capabilities.from_version("26.9.2.1")  # chdb
OLD = Capabilities.from_version("18.16.1")  # Debian's clickhouse-server

COLUMNS = [
    "INT", "INT NOT NULL", "INT UNSIGNED", "BIGINT UNSIGNED NOT NULL", "TINYINT", "DOUBLE", "DOUBLE NOT NULL",
    "VARCHAR(40)", "TEXT NOT NULL", "CHAR(5)", "DATETIME(3)", "DATETIME NOT NULL", "DATETIME(6)", "TIMESTAMP(3)",
    "TIMESTAMP NULL", "DATE", "DATE NOT NULL", "DECIMAL(12,2)", "DECIMAL(12,2) NOT NULL", "DECIMAL(65,30)",
    "DECIMAL(5,0)", "ENUM('a','b') NOT NULL", "FLOAT", "TIME(2)", "BLOB",
]  # fmt: skip


def col(sql: str, name: str) -> ColumnDef:
    return parse_create_table(f"CREATE TABLE t (`{name}` {sql})", "db").columns[0]


def pure_rows(columns: Sequence[ColumnDef], caps: Capabilities, positions: Sequence[int] | None) -> Any:
    saved = _encoders.speedups
    _encoders.speedups = None
    try:
        return _encoders.make_rows_encoder(columns, caps, positions=positions)
    finally:
        _encoders.speedups = saved


def outcome(encode: Any, rows: Any) -> tuple[str, Any]:
    try:
        return "ok", encode(rows)
    except Exception as exc:  # the same error, named the same way
        return "error", (type(exc).__name__, str(exc))


def check(columns: Sequence[ColumnDef], caps: Capabilities, rows: Any, positions: Sequence[int] | None = None) -> Any:
    compiled = _encoders.make_rows_encoder(columns, caps, positions=positions)
    got = outcome(compiled, rows)
    assert got == outcome(pure_rows(columns, caps, positions), rows)
    return got


_UTC = dt.UTC
_ZONE = dt.timezone(dt.timedelta(hours=5, minutes=30))


class SubDatetime(dt.datetime):
    pass


def _decimal_from_compiled_decoder(text: str, precision: int, scale: int) -> decimal.Decimal:
    """A Decimal built in place by the compiled decoder (not by the constructor)."""
    table = TableMap("db", "t", [ColumnInfo(0, ColumnType.NEWDECIMAL, precision << 8 | scale, True)], 0)
    image = b"\x00" + encode_decimal(decimal.Decimal(text), precision, scale)
    value: decimal.Decimal = _table._program(table, 0, 1, 1).decode(image, 0, len(image))[0][0]
    return value


TEXTS = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["plain", "tab\there", "new\nline", "back\\slash", "nul\0", "é café", "日本語", "🚀", "\x7f",
                     "\x85", "\xa0nbsp", "\u2028", "", " ", "x" * 300, "\ud800lone"]),
)  # fmt: skip

DATETIMES = st.one_of(
    st.datetimes(),
    st.datetimes(min_value=dt.datetime(1969, 12, 31), max_value=dt.datetime(1970, 1, 2)),
    st.datetimes(min_value=dt.datetime(2105, 12, 31), max_value=dt.datetime(2106, 2, 8)),
    st.datetimes(min_value=dt.datetime(2299, 12, 31), max_value=dt.datetime(2300, 1, 2)),
    st.datetimes(min_value=dt.datetime(1899, 12, 31), max_value=dt.datetime(1900, 1, 2)),
    st.sampled_from([dt.datetime.min, dt.datetime.max, dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 1, 0, 0, 0, 1)]),
)

VALUES = st.one_of(
    st.none(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, -1, 2**63 - 1, 2**63, -(2**63), 2**64 - 1, 2**64, True, False, "42", " 7 "]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e16, 1e-5, 5e-324, 1.7976931348623157e308, 0.1]),
    TEXTS,
    DATETIMES,
    DATETIMES.map(lambda v: v.replace(tzinfo=_UTC)),
    DATETIMES.filter(lambda v: v.year > 1 and v.year < 9999).map(lambda v: v.replace(tzinfo=_ZONE)),
    DATETIMES.map(lambda v: SubDatetime(v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond)),
    st.dates(),
    st.sampled_from(
        [
            dt.date(1969, 12, 31),
            dt.date(1970, 1, 1),
            dt.date(2149, 6, 6),
            dt.date(2149, 6, 7),
            dt.date(1900, 1, 1),
            dt.date(2299, 12, 31),
            dt.date(2300, 1, 1),
        ]
    ),
    st.decimals(allow_nan=True, allow_infinity=True, places=None),
    st.decimals(min_value=-(10**10), max_value=10**10, places=2),
    st.sampled_from(["-0.00", "0.00", "0E-30", "-0E-30", "1E+3", "12.345", "-99999999999999999999.123456789"]).map(
        decimal.Decimal
    ),
    st.sampled_from(
        [
            ("0.00", 12, 2),
            ("-0.00", 12, 2),
            ("-123456.78", 12, 2),
            ("0.01", 12, 2),
            ("9999999999.99", 12, 2),
            ("-12345678901234567890123456789012345.123456789012345678901234567891", 65, 30),
            ("0E-30", 65, 30),
            ("0.000000000000000000000000000001", 65, 30),
            ("12345", 5, 0),
            ("-0", 5, 0),
        ]
    ).map(lambda t: _decimal_from_compiled_decoder(*t)),
    st.timedeltas(),
    st.binary(max_size=10),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=6),
    st.sampled_from([NEW, OLD]),
    st.data(),
)
def test_compiled_rows_are_the_python_rows(sqls: list[str], caps: Capabilities, data: st.DataObject) -> None:
    require_speedups()
    columns = [col(sql, f"c{i}") for i, sql in enumerate(sqls)]
    width = len(columns)
    rows = data.draw(st.lists(st.lists(VALUES, min_size=width, max_size=width).map(tuple), max_size=5))
    check(columns, caps, rows)


def test_the_usual_values_are_written_by_the_compiled_core() -> None:
    """Values of each column's usual type (what the binlog decoder delivers) never reach the Python encoders: the
    compiled core writes them, and the text is the generated Python's."""
    require_speedups()
    sqls = ["INT", "BIGINT UNSIGNED", "DOUBLE", "VARCHAR(40)", "DATETIME(3)", "TIMESTAMP(6)", "DATE",
            "DECIMAL(12,2)", "DECIMAL(65,30)"]  # fmt: skip
    columns = [col(sql, f"c{i}") for i, sql in enumerate(sqls)]
    rows = [
        (-5, 2**64 - 1, 1.5, "café\t", dt.datetime(2024, 2, 29, 23, 59, 59, 123456),
         dt.datetime(2030, 1, 1, tzinfo=_UTC), dt.date(2024, 1, 31), _decimal_from_compiled_decoder("-0.00", 12, 2),
         _decimal_from_compiled_decoder("-1234.000000000000000000000000000001", 65, 30)),
        (None, None, None, None, None, None, None, None, None),
        (0, 0, -0.0, "plain 🚀", dt.datetime(1970, 1, 1), dt.datetime(2000, 1, 1, 0, 0, 0, 5, tzinfo=_UTC),
         dt.date(2000, 2, 29), decimal.Decimal("12.34"), decimal.Decimal("0E-30")),
    ]  # fmt: skip
    calls = 0

    def counting(enc: Any) -> Any:
        def encode(v: Any) -> str:
            nonlocal calls
            if v is not None and not (isinstance(v, str) and not v.isprintable()):
                calls += 1
            return str(enc(v))

        return encode

    saved = _encoders._encoder
    _encoders._encoder = lambda spec, parsed: counting(saved(spec, parsed))  # type: ignore[assignment]
    try:
        got = _encoders.make_rows_encoder(columns, NEW)(rows)
    finally:
        _encoders._encoder = saved
    assert got == pure_rows(columns, NEW, None)(rows)
    assert calls == 0
    assert got[0].split("\t")[3] == "café\\t"  # escaped by the encoder, which the tab sent it to
    assert got[0].split("\t")[7] == "0.00"  # a negative zero is written as zero


def test_missing_columns_short_rows_and_other_sequences() -> None:
    require_speedups()
    columns = [col("INT NOT NULL", "a"), col("VARCHAR(5) NOT NULL", "b"), col("DATE NOT NULL", "c")]
    assert check(columns, NEW, [(7, "x", dt.date(2020, 1, 2))], positions=[0, -1, 2]) == ("ok", ["7\t\t2020-01-02"])
    check(columns, OLD, [[1, "y"], (2, "z", dt.date(2021, 3, 4))], positions=[1, 0, -1])
    got = check(columns, NEW, [(1, "a")])  # too short: the Python encoder's error
    assert got[0] == "error"

    class Row(Sequence[Any]):
        def __init__(self, *values: Any) -> None:
            self.values = values

        def __getitem__(self, i: Any) -> Any:
            return self.values[i]

        def __len__(self) -> int:
            return len(self.values)

    assert check(columns, NEW, [Row(1, "b", dt.date(2020, 1, 1))]) == ("ok", ["1\tb\t2020-01-01"])
    assert check(columns, NEW, ((1, "b", dt.date(2020, 1, 1)),)) == ("ok", ["1\tb\t2020-01-01"])  # a tuple of rows
    assert check(columns, NEW, deque([[2, "c", dt.date(2020, 1, 1)]])) == ("ok", ["2\tc\t2020-01-01"])


def test_a_bad_value_is_named_by_its_column() -> None:
    require_speedups()
    columns = [col("INT", "a"), col("DATE", "when")]
    encode = _encoders.make_rows_encoder(columns, NEW)
    assert encode([[1, dt.date(2020, 1, 2)]]) == ["1\t2020-01-02"]
    with pytest.raises(TypeMappingError, match="`when`"):
        encode([[1, dt.date(2020, 1, 2)], [1, 3.5]])


def test_floats_are_repr() -> None:
    require_speedups()
    columns = [col("DOUBLE", "d")]
    values = [0.1, 1e16, 1e-5, 123456789.125, 5e-324, 2.5e-310, 1.7976931348623157e308, -0.0, math.pi, 1e22]
    got = _encoders.make_rows_encoder(columns, NEW)([(v,) for v in values])
    assert got == [repr(v) for v in values]


TRICKY = [
    None, 0, -1, 7, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64 - 1, 2**64, True, "42",
    0.0, -0.0, 0.1, 1e16, 1e-5, 5e-324, float("nan"), float("inf"), float("-inf"),
    "plain", "tab\there", "new\nline", "back\\slash", "nul\0", "del\x7f", "\x85", "\xa0", "é café", "日本語", "🚀",
    "\u2028", "", "\ud800", "cr\r", "\b\f", "\x01\x1f", "vt\x0b", "esc\x1b[0m",
    dt.datetime(2024, 2, 29, 23, 59, 59, 123456), dt.datetime(2024, 1, 1), dt.datetime(1, 1, 1),
    dt.datetime(9999, 12, 31, 23, 59, 59, 999999), dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
    dt.datetime(1970, 1, 1), dt.datetime(2106, 2, 7, 6, 28, 15), dt.datetime(2106, 2, 7, 6, 28, 16),
    dt.datetime(1900, 1, 1), dt.datetime(2299, 12, 31, 23, 59, 59, 999999), dt.datetime(2300, 1, 1),
    dt.datetime(2024, 5, 6, 7, 8, 9, 500, tzinfo=_UTC), dt.datetime(1969, 12, 31, tzinfo=_UTC),
    dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=_ZONE), SubDatetime(2024, 5, 6, 7, 8, 9, 10),
    dt.date(2024, 2, 29), dt.date(1969, 12, 31), dt.date(1970, 1, 1), dt.date(2149, 6, 6), dt.date(2149, 6, 7),
    dt.date(1900, 1, 1), dt.date(2299, 12, 31), dt.date(2300, 1, 1), dt.date(1, 1, 1),
    decimal.Decimal("-0.00"), decimal.Decimal("0.00"), decimal.Decimal("-0"), decimal.Decimal("12.34"),
    decimal.Decimal("-12.34"), decimal.Decimal("12.345"), decimal.Decimal("1E+3"), decimal.Decimal("NaN"),
    decimal.Decimal("-Infinity"), decimal.Decimal("0E-30"), decimal.Decimal("-0E-30"), decimal.Decimal("0.01"),
    decimal.Decimal("-0.000000000000000000000000000001"), decimal.Decimal("99999999999999999999999999999999999"),
    dt.timedelta(hours=-1, microseconds=5), b"bytes\t",
]  # fmt: skip


@pytest.mark.parametrize("sql", COLUMNS)
@pytest.mark.parametrize("caps", [NEW, OLD], ids=["new", "18.16"])
def test_every_tricky_value_in_every_column(sql: str, caps: Capabilities) -> None:
    """Each value alone in each column kind, then all the values that encode as one batch: the compiled lines are the
    generated Python's, and the values Python refuses fail the same way."""
    require_speedups()
    columns = [col(sql, "c")]
    ok = []
    for value in TRICKY:
        if check(columns, caps, [(value,)])[0] == "ok":
            ok.append((value,))
    assert ok
    assert check(columns, caps, ok)[0] == "ok"
    decimals = [("-0.00", 12, 2), ("-123456.78", 12, 2), ("0.01", 12, 2), ("0E-30", 65, 30), ("-5", 5, 0),
                ("-12345678901234567890123456789012345.123456789012345678901234567891", 65, 30)]  # fmt: skip
    check(columns, caps, [(_decimal_from_compiled_decoder(*d),) for d in decimals])


class _Meddler:
    """A value whose conversion by its column's Python encoder runs a callback (that changes the rows)."""

    def __init__(self, callback: Any) -> None:
        self.callback = callback

    def __int__(self) -> int:
        self.callback()
        return 5

    __index__ = __int__


def test_an_encoder_that_changes_the_rows_while_they_are_encoded() -> None:
    """A value's own code (run by its column's Python encoder) empties its row or the list of rows: the compiled
    encoder holds every row and reads a row's size at each value, so it never reads a freed or missing item; the
    lines are the generated Python's."""
    require_speedups()
    columns = [col("YEAR", "a"), col("INT", "b"), col("VARCHAR(10)", "c")]

    def emptied_row() -> list[Any]:
        row: list[Any] = [None, 1, "x"]
        row[0] = _Meddler(row.clear)
        return [row]

    compiled = outcome(_encoders.make_rows_encoder(columns, NEW), emptied_row())
    assert compiled == outcome(pure_rows(columns, NEW, None), emptied_row())
    assert compiled == ("ok", ["5\t1\tx"])  # the values are read before any is written
    rows: list[Any] = []
    rows += [[_Meddler(rows.clear), 1, "x" * 50], [2000, 2, "y"]]
    assert _encoders.make_rows_encoder(columns, NEW)(rows) == ["5\t1\t" + "x" * 50, "2000\t2\ty"]


def test_rows_from_an_iterator_are_read_once() -> None:
    """An iterator of rows, one of them refused: the error names the column, as for a list."""
    require_speedups()
    columns = [col("INT", "a"), col("DATE", "when")]
    encode = _encoders.make_rows_encoder(columns, NEW)
    assert encode(iter([(1, dt.date(2020, 1, 2))])) == ["1\t2020-01-02"]
    with pytest.raises(TypeMappingError, match="`when`"):
        encode(iter([(1, dt.date(2020, 1, 2)), (2, 3.5)]))


def test_the_compiled_encoder_refuses_a_negative_scale() -> None:
    require_speedups()
    from mybinlog.protocol._accel import speedups

    with pytest.raises(ValueError, match="scale"):
        speedups.TsvRows(((_encoders._TSV_DECIMAL, 0, True, str, -5),), str)
