"""MySQL -> ClickHouse type mapping, TabSeparated encoders, canonical values and table DDL (no servers).

Column definitions come from the workload's real CREATE TABLE statements (tests.workload) parsed by
mybinlog's DDL parser. Values come in the two forms the replicator meets: what the binlog decoder delivers
(the workload's value convention) and what pymysql returns for ``SELECT`` (:func:`pymysql_form`); both must
give the same ClickHouse contents (floats: the same canonical value), for random rows and the extreme rows.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import ipaddress
import json
import random
import struct
import uuid
from typing import Any

import pytest

from mybinlog import TypeMappingError, ddl
from mybinlog.clickhouse import Capabilities
from mybinlog.clickhouse._tables import (
    ENGINES,
    META_COLUMNS,
    alive_predicate,
    alter_sql,
    create_table_sql,
    meta_columns,
    sorting_key,
    truncate_sql,
)
from mybinlog.clickhouse.types import (
    NULL_FIELD,
    canonical,
    clickhouse_type,
    f32_repr,
    make_encoder,
    make_row_encoder,
    tsv_field_text,
    values_match,
    zero_field,
)
from mybinlog.ddl import ColumnDef, TableDef, parse_create_table
from tests.workload import (
    ALL_TYPES_COLUMNS,
    ALL_TYPES_DDL,
    COMPOSITE_PK_DDL,
    NO_PK_DDL,
    extreme_rows,
    parse_type,
    random_row,
)

OLD = Capabilities.from_version("18.16.1")  # Debian's clickhouse-server
MID = Capabilities.from_version("23.8.1.1")  # Date32/DateTime64 limited to 1900..2299, fast float parsing
NEW = Capabilities.from_version("26.9.2.1")  # chdb
ALL_CAPS = pytest.mark.parametrize("caps", [OLD, MID, NEW], ids=["18.16", "23.8", "26.9"])
UTC = dt.UTC

ALL_TYPES = parse_create_table(ALL_TYPES_DDL, "db")
COMPOSITE = parse_create_table(COMPOSITE_PK_DDL, "db")
NO_PK = parse_create_table(NO_PK_DDL, "db")
SQL_TYPES = dict(ALL_TYPES_COLUMNS)


def col(sql: str, name: str = "c") -> ColumnDef:
    """A ColumnDef from a column definition, e.g. ``col("DATETIME(3) NOT NULL")``."""
    return parse_create_table(f"CREATE TABLE t (`{name}` {sql})", "db").columns[0]


def field(column: ColumnDef, value: Any, caps: Capabilities = NEW, **kw: Any) -> str:
    return make_encoder(column, caps, **kw)(value)


# --- the two source forms ---


def binlog_form(value: Any, sql_type: str) -> Any:
    """The workload's value as mybinlog's decoder delivers it from a MariaDB binlog."""
    if value is None:
        return None
    base = parse_type(sql_type).base
    if base == "uuid" and isinstance(value, uuid.UUID):
        return value.bytes.rstrip(b"\0")  # BINARY(16) in text order, trailing zero bytes dropped
    if base == "inet6" and isinstance(value, ipaddress.IPv6Address):
        return value.packed.rstrip(b"\0")
    if base == "binary" and isinstance(value, bytes):
        return value.rstrip(b"\0")
    if base == "json":
        return json.dumps(value, ensure_ascii=False)  # MariaDB: JSON is text, the binlog carries it as written
    return value


def pymysql_form(value: Any, sql_type: str) -> Any:
    """The workload's value as pymysql returns it for ``SELECT`` in a ``time_zone = '+00:00'`` session."""
    if value is None:
        return None
    info = parse_type(sql_type)
    base = info.base
    if base == "float":
        f32 = struct.unpack("<f", struct.pack("<f", value))[0]
        return float(f"{f32:.6g}")  # MariaDB's text protocol prints FLOAT with 6 significant digits
    if base == "double":
        return float(f"{value:.15g}")
    if base == "bit":
        return value.to_bytes((info.length + 7) // 8, "big")
    if base == "timestamp" and isinstance(value, dt.datetime):
        return value.astimezone(UTC).replace(tzinfo=None)
    if base in ("datetime", "timestamp") and isinstance(value, str) and info.fsp:
        return value + "." + "0" * info.fsp  # '0000-00-00 00:00:00.000'
    if base == "set":
        return ",".join(m for m in info.args if m in value)
    if base == "json":
        return json.dumps(value, ensure_ascii=False)
    if base == "binary":
        return value.ljust(info.length, b"\0")
    if base in ("uuid", "inet6"):
        return str(value)
    return value


def _rows(n: int = 60, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return extreme_rows() + [random_row(rng, null_probability=0.15, large=False) for _ in range(n)]


ROWS = _rows()


# --- the mapping ---

EXPECTED_TYPES = {
    # column: (18.16, 26.9)
    "c_tinyint": ("Int8", "Int8"),
    "c_tinyint_u": ("UInt8", "UInt8"),
    "c_mediumint": ("Int32", "Int32"),
    "c_mediumint_u": ("UInt32", "UInt32"),
    "c_bigint_u": ("UInt64", "UInt64"),
    "c_int_nn": ("Int32", "Int32"),
    "c_dec_65_30": ("String", "Decimal(65, 30)"),
    "c_dec_20_10": ("Decimal(20, 10)", "Decimal(20, 10)"),
    "c_float": ("Float32", "Float32"),
    "c_double": ("Float64", "Float64"),
    "c_bit64": ("UInt64", "UInt64"),
    "c_date": ("Date", "Date32"),
    "c_time3": ("Int64", "Int64"),
    "c_datetime0": ("DateTime('UTC')", "DateTime64(0, 'UTC')"),
    "c_datetime6": ("String", "DateTime64(6, 'UTC')"),
    "c_timestamp0": ("DateTime('UTC')", "DateTime64(0, 'UTC')"),
    "c_timestamp3": ("String", "DateTime64(3, 'UTC')"),
    "c_year": ("UInt16", "UInt16"),
    "c_char": ("String", "String"),
    "c_binary": ("String", "String"),
    "c_longblob": ("String", "String"),
    "c_enum": ("String", "String"),
    "c_set_big": ("String", "String"),
    "c_json": ("String", "String"),
    "c_geometry": ("String", "String"),
    "c_point": ("String", "String"),
    "c_uuid": ("UUID", "UUID"),
    "c_inet6": ("FixedString(16)", "IPv6"),
}


@pytest.mark.parametrize("name", sorted(EXPECTED_TYPES))
def test_clickhouse_types(name: str) -> None:
    column = ALL_TYPES.column(name)
    old, new = EXPECTED_TYPES[name]
    wrap = "{}" if name == "c_int_nn" else "Nullable({})"
    assert clickhouse_type(column, OLD) == wrap.format(old)
    assert clickhouse_type(column, NEW) == wrap.format(new)
    assert clickhouse_type(column, NEW, key=True) == new


def test_every_workload_column_maps_on_every_version() -> None:
    for caps in (OLD, MID, NEW):
        for column in ALL_TYPES.columns + COMPOSITE.columns + NO_PK.columns:
            assert "LowCardinality" not in clickhouse_type(column, caps)


def test_more_types() -> None:
    assert clickhouse_type(col("BOOL NOT NULL"), NEW) == "Int8"
    assert clickhouse_type(col("TINYINT(1) UNSIGNED NOT NULL"), NEW) == "UInt8"
    assert clickhouse_type(col("INET4"), NEW) == "Nullable(IPv4)"
    assert clickhouse_type(col("INET4"), OLD) == "Nullable(UInt32)"
    assert clickhouse_type(col("VECTOR(3)"), NEW) == "Array(Float32)"  # Array cannot be Nullable
    assert clickhouse_type(col("DECIMAL(38,2)"), OLD) == "Nullable(Decimal(38, 2))"
    assert clickhouse_type(col("DECIMAL(39,2)"), OLD) == "Nullable(String)"
    assert clickhouse_type(col("DECIMAL NOT NULL"), NEW) == "Decimal(10, 0)"
    assert clickhouse_type(col("MULTIPOLYGON"), NEW) == "Nullable(String)"
    assert clickhouse_type(col("SERIAL"), NEW) == "UInt64"


def test_unknown_type_is_an_error_naming_the_column() -> None:
    weird = dataclasses.replace(col("INT"), name="odd", type_name="money", raw_type="money")
    with pytest.raises(TypeMappingError, match=r"`odd`.*money"):
        clickhouse_type(weird, NEW)


# --- encoders: both source forms ---


@ALL_CAPS
@pytest.mark.parametrize(("name", "sql_type"), ALL_TYPES_COLUMNS, ids=[n for n, _ in ALL_TYPES_COLUMNS])
def test_binlog_and_select_forms_agree(caps: Capabilities, name: str, sql_type: str) -> None:
    column = ALL_TYPES.column(name)
    encode = make_encoder(column, caps)
    source = canonical(column, caps)
    replica = canonical(column, caps, side="clickhouse")
    same = values_match(column, caps)
    base = parse_type(sql_type).base
    for row in ROWS:
        value = row[name]
        a, b = binlog_form(value, sql_type), pymysql_form(value, sql_type)
        fa, fb = encode(a), encode(b)
        if base not in ("float", "double"):
            assert fa == fb, (value, a, b)
        ca, cb = source(a), source(b)
        assert ca == cb or same(ca, cb), (value, ca, cb)
        # what ClickHouse returns for the stored field has the same canonical value
        assert replica(tsv_field_text(fa)) == ca, (value, fa)
        if value is None:
            assert ca is None
            assert fa == (NULL_FIELD if base != "vector" else "[]")


def test_row_encoder_matches_column_encoders() -> None:
    columns = ALL_TYPES.columns[2:]
    row_encoder = make_row_encoder(columns, NEW)
    encoders = [make_encoder(c, NEW) for c in columns]
    for row in ROWS:
        values = [binlog_form(row[c.name], SQL_TYPES[c.name]) for c in columns]
        assert row_encoder(values) == "\t".join(e(v) for e, v in zip(encoders, values, strict=True))


def test_row_encoder_names_the_column_of_a_bad_value() -> None:
    columns = [col("INT", "a"), col("DATE", "when")]
    encode = make_row_encoder(columns, NEW)
    assert encode([1, dt.date(2020, 1, 2)]) == "1\t2020-01-02"
    with pytest.raises(TypeMappingError, match="`when`"):
        encode([1, 3.5])
    with pytest.raises(TypeMappingError, match="`a`"):
        make_encoder(columns[0], NEW)("x1")


# --- encoders: specific values ---


def test_integers() -> None:
    assert field(col("BIGINT UNSIGNED"), 2**64 - 1) == "18446744073709551615"
    # a binlog without signedness metadata reads unsigned columns as signed: wrapped back
    assert field(col("BIGINT UNSIGNED"), -1) == "18446744073709551615"
    assert field(col("MEDIUMINT UNSIGNED"), -1) == "16777215"
    assert field(col("TINYINT UNSIGNED"), -128) == "128"
    assert field(col("INT"), True) == "1"
    assert field(col("INT"), "42") == "42"
    assert field(col("INT"), None) == NULL_FIELD
    assert field(col("BIT(13)"), b"\x1f\xff") == str(2**13 - 1)
    assert field(col("BIT(64)"), b"\xff" * 8) == str(2**64 - 1)
    assert field(col("YEAR"), 0) == "0"


def test_decimals() -> None:
    d = col("DECIMAL(65,30)")
    big = decimal.Decimal("-" + "9" * 35 + "." + "9" * 30)
    assert field(d, big, NEW) == field(d, big, OLD) == str(big)
    assert field(col("DECIMAL(10,2)"), decimal.Decimal("1.5")) == "1.50"
    assert field(col("DECIMAL(10,2)"), decimal.Decimal("-0.00")) == "0.00"
    assert field(col("DECIMAL(10,2)"), "3") == "3.00"
    assert field(col("DECIMAL(10,2)"), decimal.Decimal("1.005")) == "1.01"  # MySQL rounds half away from zero
    assert field(col("DECIMAL(4,4)"), decimal.Decimal("0.0001")) == "0.0001"  # never 1E-4
    assert field(col("DECIMAL(5,0)"), decimal.Decimal("1E+4")) == "10000"


def test_floats() -> None:
    f = col("FLOAT")
    f32 = struct.unpack("<f", struct.pack("<f", 0.1))[0]
    assert field(f, f32) == field(f, 0.1) == "0.1"
    assert field(f, 123456792.0) == "1.2345679e+08"
    assert float(field(f, 1e38)) == pytest.approx(1e38, rel=1e-7)
    assert field(col("DOUBLE"), 0.1 + 0.2) == "0.30000000000000004"
    assert field(col("DOUBLE"), 5e-324) == "5e-324"
    for value in (1.5e308, -1.5e308, 2.2250738585072014e-308, 1e-300):
        assert float(field(col("DOUBLE"), value)) == value


def test_f32_repr_is_shortest_and_exact() -> None:
    rng = random.Random(3)
    for _ in range(2000):
        x = struct.unpack("<f", struct.pack("<I", rng.getrandbits(31)))[0]
        if x != x or x == float("inf"):
            continue
        text = f32_repr(x)
        assert struct.unpack("<f", struct.pack("<f", float(text)))[0] == x
        assert len(text.split("e")[0].replace(".", "").replace("-", "").lstrip("0")) <= 9


def test_text_escaping() -> None:
    t = col("TEXT")
    assert field(t, "a\tb\nc\\d\re\0f\bg\fh") == "a\\tb\\nc\\\\d\\re\\0f\\bg\\fh"
    assert field(t, "\\N") == "\\\\N"  # the text \N is not NULL
    assert field(t, "plain ✓ 😀") == "plain ✓ 😀"
    assert field(col("CHAR(10)"), "ab  ") == "ab"  # CHAR values are read without trailing spaces
    assert field(col("VARCHAR(10)"), "ab  ") == "ab  "


def test_binary_is_byte_exact() -> None:
    b = col("VARBINARY(300)")
    raw = bytes(range(256))
    text = field(b, raw)
    assert tsv_field_text(text).encode("utf-8", "surrogateescape") == raw  # type: ignore[union-attr]
    line = (text + "\n").encode("utf-8", "surrogateescape")
    assert b"\t" not in line
    assert line.count(b"\n") == 1
    assert field(col("BINARY(4)"), b"\x01") == "\x01\\0\\0\\0"
    assert field(col("BINARY(4)"), b"") == "\\0\\0\\0\\0"


def test_dates_zero_and_invalid() -> None:
    nullable, not_null = col("DATE"), col("DATE NOT NULL")
    for zero in ("0000-00-00", "2021-00-00", "2021-02-30", "0000-01-01", b"0000-00-00"):
        assert field(nullable, zero) == NULL_FIELD
        assert field(not_null, zero) == "1970-01-01"
        assert field(not_null, zero, OLD) == "1970-01-01"
    assert field(nullable, "2021-02-28") == "2021-02-28"
    assert field(nullable, dt.datetime(2021, 2, 28, 12)) == "2021-02-28"


def test_date_ranges_per_version() -> None:
    d = col("DATE")
    assert field(d, dt.date(1000, 1, 1), NEW) == "1000-01-01"
    assert field(d, dt.date(9999, 12, 31), NEW) == "9999-12-31"
    assert field(d, dt.date(1000, 1, 1), MID) == "1900-01-01"
    assert field(d, dt.date(9999, 12, 31), MID) == "2299-12-31"
    assert field(d, dt.date(1000, 1, 1), OLD) == "1970-01-01"
    assert field(d, dt.date(9999, 12, 31), OLD) == "2105-12-31"
    datetime0 = col("DATETIME")
    assert field(datetime0, dt.datetime(9999, 12, 31, 23, 59, 59), OLD) == "2105-12-31 23:59:59"
    assert field(datetime0, dt.datetime(1000, 1, 1), OLD) == "1970-01-01 00:00:00"
    datetime6 = col("DATETIME(6)")
    top = dt.datetime(9999, 12, 31, 23, 59, 59, 999999)
    assert field(datetime6, top, OLD) == "9999-12-31 23:59:59.999999"  # stored as text: no range limit
    assert field(datetime6, top, MID) == "2299-12-31 23:59:59.999999"
    assert field(datetime6, top, NEW) == "9999-12-31 23:59:59.999999"


def test_datetimes() -> None:
    d3 = col("DATETIME(3)")
    value = dt.datetime(2001, 2, 3, 4, 5, 6, 789000)
    assert field(d3, value) == "2001-02-03 04:05:06.789"
    assert field(d3, value.replace(tzinfo=dt.timezone(dt.timedelta(hours=5)))) == "2001-02-03 04:05:06.789"
    assert field(d3, "0000-00-00 00:00:00.000") == NULL_FIELD
    assert field(col("DATETIME(3) NOT NULL"), "0000-00-00 00:00:00.000") == "1970-01-01 00:00:00.000"
    assert field(col("DATETIME"), dt.datetime(999, 1, 2)) == "0999-01-02 00:00:00"

    class Stamp(dt.datetime):
        def __str__(self) -> str:
            return "not the ISO text"

    assert field(d3, Stamp(2001, 2, 3, 4, 5, 6, 789000)) == "2001-02-03 04:05:06.789"
    ts = col("TIMESTAMP(6) NULL")
    aware = dt.datetime(2020, 2, 29, 12, 0, 0, 1, tzinfo=UTC)
    assert field(ts, aware) == field(ts, aware.replace(tzinfo=None)) == "2020-02-29 12:00:00.000001"
    berlin = aware.astimezone(dt.timezone(dt.timedelta(hours=1)))
    assert field(ts, berlin) == "2020-02-29 12:00:00.000001"  # a TIMESTAMP is an instant
    assert field(ts, "0000-00-00 00:00:00.000000") == NULL_FIELD
    assert field(ts, aware, OLD) == "2020-02-29 12:00:00.000001"


def test_time_is_microseconds() -> None:
    t = col("TIME(6)")
    assert field(t, dt.timedelta(microseconds=-500_000)) == "-500000"
    assert field(t, dt.timedelta(hours=838, minutes=59, seconds=59)) == str((838 * 3600 + 3599) * 10**6)
    assert field(t, "-838:59:59.999999") == str(-((838 * 3600 + 3599) * 10**6 + 999999))
    assert field(t, "-00:00:00.5") == "-500000"
    assert field(t, dt.time(1, 2, 3, 4)) == str(3723 * 10**6 + 4)


def test_enum_and_set() -> None:
    e = col("ENUM('a','b','c')")
    assert field(e, "b") == "b"
    assert field(e, 2) == "b"  # an index: a binlog without ENUM labels
    assert field(e, 0) == ""  # MySQL's invalid-value index
    s = col("SET('a','b','c','ß')")
    assert field(s, frozenset({"ß", "a"})) == "a,ß"
    assert field(s, "c,a") == "a,c"  # definition order, like MySQL prints it
    assert field(s, 0b101) == "a,c"
    assert field(s, frozenset()) == field(s, "") == ""


def test_json() -> None:
    j = col("JSON")
    text = '{"b": 1, "a": [1, 2.5, "x\\ty"]}'
    assert field(j, text) == text.replace("\\", "\\\\")  # text is stored as the source holds it
    # a parsed document (MySQL binary JSON from the binlog) is rendered as MySQL's SELECT prints it
    assert field(j, {"b": 1, "a": [1, 2.5, True, None]}) == '{"a": [1, 2.5, true, null], "b": 1}'
    assert field(j, "abc", parsed_json=True) == '"abc"'
    assert field(j, [1, "x"], parsed_json=True) == '[1, "x"]'


def test_uuid_inet_vector() -> None:
    u = uuid.UUID("01234567-89ab-cdef-0123-456789abcdef")
    c = col("UUID")
    assert field(c, u.bytes) == field(c, str(u).upper()) == field(c, u) == str(u)
    assert field(c, b"") == "00000000-0000-0000-0000-000000000000"
    i6 = col("INET6")
    mapped = ipaddress.IPv6Address("::ffff:1.2.3.4")
    assert field(i6, mapped.packed) == field(i6, "::ffff:1.2.3.4") == field(i6, "1.2.3.4") == "::ffff:1.2.3.4"
    assert field(i6, b"\x20\x01\x0d\xb8") == "2001:db8::"
    assert field(i6, mapped.packed, OLD) == "\\0" * 10 + "\udcff\udcff\x01\x02\x03\x04"
    i4 = col("INET4")
    assert field(i4, b"\x01\x02\x03\x04") == field(i4, "1.2.3.4") == "1.2.3.4"
    assert field(i4, "1.2.3.4", OLD) == str(0x01020304)
    v = col("VECTOR(3)")
    values = [0.1, -2.5, 3.0]
    assert field(v, values) == field(v, struct.pack("<3f", *values)) == field(v, "[0.1,-2.5,3]") == "[0.1,-2.5,3]"
    assert field(v, None) == "[]"


def test_zero_field() -> None:
    assert zero_field(col("INT"), NEW) == NULL_FIELD
    assert zero_field(col("INT NOT NULL"), NEW) == "0"
    assert zero_field(col("DECIMAL(5,2) NOT NULL"), NEW) == "0.00"
    assert zero_field(col("DATE NOT NULL"), NEW) == "1970-01-01"
    assert zero_field(col("DATETIME(2) NOT NULL"), NEW) == "1970-01-01 00:00:00.00"
    assert zero_field(col("ENUM('x','y') NOT NULL"), NEW) == "x"
    assert zero_field(col("BINARY(2) NOT NULL"), NEW) == "\\0\\0"
    assert zero_field(col("UUID NOT NULL"), NEW) == "00000000-0000-0000-0000-000000000000"
    assert zero_field(col("VARCHAR(3) NOT NULL"), NEW) == ""


# --- canonical values ---


def test_canonical_sides() -> None:
    d = col("DATE NOT NULL")
    # 18.16 prints the epoch Date as zeros; on the source side zeros are a zero date
    assert canonical(d, OLD, side="clickhouse")("0000-00-00") == "1970-01-01"
    assert canonical(d, OLD)("0000-00-00") == "1970-01-01"
    assert canonical(col("DATE"), OLD)("0000-00-00") is None
    assert canonical(col("DATETIME(3)"), NEW, side="clickhouse")("2001-02-03 04:05:06.789") == "2001-02-03 04:05:06.789"
    assert canonical(col("DECIMAL(10,4)"), NEW, side="clickhouse")("1.5") == "1.5000"  # new servers drop zeros
    assert canonical(col("DECIMAL(10,4)"), NEW)(decimal.Decimal("1.5000")) == "1.5000"
    assert canonical(col("VARBINARY(4)"), NEW)(b"\x00\xff") == "00ff"
    assert canonical(col("VARBINARY(4)"), NEW, side="clickhouse")("\x00\udcff") == "00ff"
    assert canonical(col("VARBINARY(4)"), NEW, side="clickhouse")(b"\x00\xff") == "00ff"
    assert canonical(col("INET6"), NEW, side="clickhouse")("::ffff:1.2.3.4") == "::ffff:1.2.3.4"
    assert canonical(col("UUID"), NEW, side="clickhouse")("01234567-89AB-CDEF-0123-456789ABCDEF") == (
        "01234567-89ab-cdef-0123-456789abcdef"
    )
    assert canonical(col("VECTOR(2)"), NEW, side="clickhouse")("[]") is None
    assert canonical(col("DOUBLE"), NEW)(0.1 + 0.2) == canonical(col("DOUBLE"), NEW)(0.3) == "0.3"
    with pytest.raises(ValueError, match="side"):
        canonical(col("INT"), NEW, side="mysql")  # type: ignore[arg-type]


def test_values_match_tolerates_float_parsing_only() -> None:
    d = values_match(col("DOUBLE"), OLD)
    assert d("0.1", "0.1")
    assert d("1.00000000000000", "1.00000000000001")
    assert not d("1.0", "1.0001")
    assert not d(None, "1")
    f = values_match(col("FLOAT"), OLD)
    assert f("1.00001", "1.00002")
    assert not f("1.0", "1.01")
    assert not values_match(col("DOUBLE"), NEW)("1.00000000000000", "1.00000000000001")  # 26.7+ parses exactly
    assert values_match(col("INT"), OLD)("1", "1")
    assert not values_match(col("INT"), OLD)("1", "2")
    v = values_match(col("VECTOR(2)"), OLD)
    assert v("[1,2]", "[1.000001,2]")
    assert not v("[1,2]", "[1,2,3]")


# --- tables ---


def _caps_with(**flags: Any) -> Capabilities:
    return dataclasses.replace(NEW, **flags)


@pytest.mark.parametrize("engine", ENGINES)
def test_create_table_engines(engine: str) -> None:
    sql = create_table_sql(COMPOSITE, database="rep", engine=engine, caps=NEW)
    assert sql.startswith("CREATE TABLE IF NOT EXISTS `rep`.`composite_pk`\n(\n    `tenant` UInt16,\n")
    assert "    `payload` Nullable(String),\n" in sql
    assert "ORDER BY (`tenant`, `k`, `seq`)" in sql
    assert "SETTINGS non_replicated_deduplication_window = 1000" in sql
    engines = {
        "replacing": "ReplacingMergeTree(`_version`)",
        "collapsing": "CollapsingMergeTree(`_sign`)",
        "replacing_is_deleted": "ReplacingMergeTree(`_version`, `_is_deleted`)",
    }
    assert f"ENGINE = {engines[engine]}" in sql
    for meta in meta_columns(engine):
        assert f"`{meta}` " in sql
    assert ("`_is_deleted` UInt8" in sql) == (engine == "replacing_is_deleted")
    assert alive_predicate(engine) == ("_is_deleted = 0" if engine == "replacing_is_deleted" else "_sign = 1")


def test_create_table_on_18_16() -> None:
    sql = create_table_sql(ALL_TYPES, database="rep", engine="replacing", caps=OLD)
    assert "SETTINGS" not in sql  # no deduplication window before 22.2
    assert "`c_dec_65_30` Nullable(String)" in sql
    with pytest.raises(TypeMappingError, match=r"23\.2"):
        create_table_sql(ALL_TYPES, database="rep", engine="replacing_is_deleted", caps=OLD)


def test_sorting_key_fallbacks() -> None:
    assert sorting_key(ALL_TYPES) == ("primary", ["id"])
    unique = parse_create_table(
        "CREATE TABLE u (a INT NULL, b INT NOT NULL, c VARCHAR(5) NOT NULL, UNIQUE KEY ua (a), UNIQUE KEY ubc (b, c))",
        "db",
    )
    assert sorting_key(unique) == ("unique", ["b", "c"])
    sql = create_table_sql(unique, database="rep", engine="replacing", caps=OLD)
    assert "ORDER BY (`b`, `c`)" in sql
    assert sorting_key(NO_PK) == ("row", ["a", "rev", "b", "c", "d", "e"])
    sql = create_table_sql(NO_PK, database="rep", engine="collapsing", caps=OLD)
    assert "ORDER BY (`a`, `rev`, isNull(`b`), assumeNotNull(`b`), isNull(`c`), assumeNotNull(`c`)," in sql
    assert "`b` Nullable(String)" in sql


def test_meta_column_names_are_reserved() -> None:
    table = parse_create_table("CREATE TABLE t (id INT PRIMARY KEY, _version INT)", "db")
    with pytest.raises(TypeMappingError, match="_version"):
        create_table_sql(table, database="rep", engine="replacing", caps=NEW)
    assert set(META_COLUMNS) == {"_sign", "_version", "_is_deleted"}


def test_truncate() -> None:
    assert truncate_sql("t`x", database="rep") == "TRUNCATE TABLE `rep`.`t\\`x`"


# --- ALTER ---

BASE = parse_create_table(
    "CREATE TABLE t (id INT NOT NULL, name VARCHAR(20), amount DECIMAL(10,4), PRIMARY KEY (id))", "db"
)


def alter(sql: str, caps: Capabilities = NEW, table: TableDef = BASE, **kw: Any) -> list[list[str] | str]:
    """alter_sql for each action of an ALTER TABLE statement on ``table``."""
    (op,) = ddl.parse_ddl(sql, "db")
    assert isinstance(op, ddl.AlterTable)
    out: list[list[str] | str] = []
    for action in op.actions:
        new = ddl.apply_alter(table, action)
        out.append(alter_sql(table, new, action, database="rep", engine="replacing", caps=caps, **kw))
        table = new
    return out


def test_alter_add_column() -> None:
    assert alter("ALTER TABLE t ADD COLUMN note VARCHAR(5) AFTER id") == [
        ["ALTER TABLE `rep`.`t` ADD COLUMN IF NOT EXISTS `note` Nullable(String) AFTER `id`"]
    ]
    assert alter("ALTER TABLE t ADD COLUMN note VARCHAR(5) FIRST", OLD) == [
        ["ALTER TABLE `rep`.`t` ADD COLUMN `note` Nullable(String)"]  # 18.16: no FIRST, no IF NOT EXISTS
    ]
    # NOT NULL without DEFAULT: existing rows get 0, ClickHouse's own default
    assert alter("ALTER TABLE t ADD COLUMN n INT NOT NULL") == [
        ["ALTER TABLE `rep`.`t` ADD COLUMN IF NOT EXISTS `n` Int32"]
    ]
    # a DEFAULT for existing rows, written out at once (a later MODIFY COLUMN may drop the DEFAULT)
    assert alter("ALTER TABLE t ADD COLUMN n INT NULL DEFAULT 7", OLD) == [
        [
            "ALTER TABLE `rep`.`t` ADD COLUMN `n` Nullable(Int32) DEFAULT CAST('7' AS Nullable(Int32))",
            "ALTER TABLE `rep`.`t` UPDATE `n` = `n` WHERE 1",
        ]
    ]
    (statements,) = alter("ALTER TABLE t ADD COLUMN e ENUM('x','y') NOT NULL")
    assert statements[0].endswith("`e` String DEFAULT CAST('x' AS String)")
    assert statements[1].endswith("SETTINGS mutations_sync = 2")
    (statements,) = alter("ALTER TABLE t ADD COLUMN d DATE NOT NULL DEFAULT '0000-00-00'")
    assert statements[0] == (
        "ALTER TABLE `rep`.`t` ADD COLUMN IF NOT EXISTS `d` Date32 DEFAULT CAST('1970-01-01' AS Date32)"
    )  # zero date, NOT NULL: the epoch; explicit, as Date32's own default is 1900-01-01 on new servers


def test_alter_add_column_defaults_that_cannot_be_followed() -> None:
    (reason,) = alter("ALTER TABLE t ADD COLUMN u VARCHAR(36) DEFAULT (uuid())")
    assert isinstance(reason, str)
    assert "uuid()" in reason
    (reason,) = alter("ALTER TABLE t ADD COLUMN ts TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP")
    assert isinstance(reason, str)
    assert "statement's time" in reason
    when = dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    add = "ALTER TABLE t ADD COLUMN ts TIMESTAMP(3) NULL DEFAULT CURRENT_TIMESTAMP(3)"
    (statements,) = alter(add, statement_time=when)
    assert isinstance(statements, list)
    assert "DEFAULT CAST('2024-05-06 07:08:09.123' AS Nullable(DateTime64(3, 'UTC')))" in statements[0]
    (reason,) = alter("ALTER TABLE t ADD COLUMN g INT AS (id + 1) STORED")
    assert isinstance(reason, str)
    assert "generated" in reason


def test_alter_drop_and_rename() -> None:
    assert alter("ALTER TABLE t DROP COLUMN name") == [["ALTER TABLE `rep`.`t` DROP COLUMN IF EXISTS `name`"]]
    (reason,) = alter("ALTER TABLE t DROP COLUMN id, ADD PRIMARY KEY (name)")[:1]
    assert isinstance(reason, str)
    assert alter("ALTER TABLE t RENAME COLUMN name TO title") == [
        ["ALTER TABLE `rep`.`t` RENAME COLUMN IF EXISTS `name` TO `title`"]
    ]
    (reason,) = alter("ALTER TABLE t RENAME COLUMN name TO title", OLD)
    assert isinstance(reason, str)
    assert "20.4" in reason
    (reason,) = alter("ALTER TABLE t RENAME COLUMN id TO ident")
    assert isinstance(reason, str)
    assert "sorting key" in reason


def test_alter_modify_column() -> None:
    assert alter("ALTER TABLE t MODIFY COLUMN name VARCHAR(200)") == [[]]  # String either way
    assert alter("ALTER TABLE t MODIFY COLUMN amount DECIMAL(12,4)") == [
        ["ALTER TABLE `rep`.`t` MODIFY COLUMN IF EXISTS `amount` Nullable(Decimal(12, 4))"]
    ]
    (reason,) = alter("ALTER TABLE t MODIFY COLUMN amount DECIMAL(10,2)")
    assert isinstance(reason, str)
    assert "rounds" in reason
    assert alter("ALTER TABLE t ADD COLUMN f FLOAT, MODIFY COLUMN f DOUBLE")[1] == [
        "ALTER TABLE `rep`.`t` MODIFY COLUMN IF EXISTS `f` Nullable(Float64)"
    ]
    (reason,) = alter("ALTER TABLE t MODIFY COLUMN name INT")
    assert isinstance(reason, str)
    (reason,) = alter("ALTER TABLE t MODIFY COLUMN id BIGINT NOT NULL")
    assert isinstance(reason, str)
    assert "sorting key" in reason
    (statements,) = alter("ALTER TABLE t MODIFY COLUMN amount DECIMAL(10,4) NOT NULL")
    assert statements == [
        "ALTER TABLE `rep`.`t` MODIFY COLUMN IF EXISTS `amount` Decimal(10, 4) DEFAULT CAST('0.0000' AS Decimal(10, 4))"
    ]
    (statements,) = alter("ALTER TABLE t CHANGE COLUMN name title VARCHAR(20)")
    assert statements == ["ALTER TABLE `rep`.`t` RENAME COLUMN IF EXISTS `name` TO `title`"]
    (statements,) = alter("ALTER TABLE t MODIFY COLUMN name CHAR(20)")
    assert statements == [
        "ALTER TABLE `rep`.`t` UPDATE `name` = replaceRegexpOne(`name`, ' +$', '') WHERE 1 SETTINGS mutations_sync = 2"
    ]


def test_alter_no_ops_and_keys() -> None:
    assert alter("ALTER TABLE t ADD INDEX ix (name)") == [[]]
    assert alter("ALTER TABLE t ALTER COLUMN name SET DEFAULT 'x'") == [[]]
    (reason,) = alter("ALTER TABLE t DROP PRIMARY KEY")
    assert isinstance(reason, str)
    assert "sorting key" in reason


def test_alter_on_a_table_without_key() -> None:
    (statements,) = alter("ALTER TABLE no_pk ADD COLUMN x INT", OLD, NO_PK)
    assert isinstance(statements, list)
    assert len(statements) == 1
    assert statements[0].endswith(", isNull(`x`), assumeNotNull(`x`))")
    assert "MODIFY ORDER BY (`a`, `rev`," in statements[0]
    (reason,) = alter("ALTER TABLE no_pk DROP COLUMN e", NEW, NO_PK)
    assert isinstance(reason, str)
    assert "no primary key" in reason
