"""Column value codecs: hand-made examples, edge cases, and round trips against an independent encoder."""

from __future__ import annotations

import datetime
import struct
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mybinlog.errors import DecodeError, TruncatedError
from mybinlog.protocol._values import (
    bit_size,
    datetime2_decoder,
    decimal_decoder,
    decimal_size,
    decode_bit,
    decode_date,
    decode_datetime2,
    decode_datetime_old,
    decode_decimal,
    decode_integer,
    decode_packed_int,
    decode_time2,
    decode_time_old,
    decode_timestamp2,
    decode_timestamp_old,
    decode_year,
    format_time_text,
    fsp_size,
    integer_decoder,
    time2_decoder,
    timestamp2_decoder,
)
from tests.builders import (
    WIDE,
    encode_date,
    encode_datetime2,
    encode_decimal,
    encode_fraction,
    encode_time2,
    encode_timestamp2,
    truncate_usec,
)

UTC = datetime.UTC

# ----------------------------------------------------------------------------------------------------
# Independent encoders, written from the documented formats (what mysqld writes)
# ----------------------------------------------------------------------------------------------------


def mysql_datetime_text(year: int, month: int, day: int, hms: str, usec: int, fsp: int) -> str:
    text = f"{year:04d}-{month:02d}-{day:02d} {hms}"
    return f"{text}.{usec:06d}"[: 20 + fsp] if fsp else text


# ----------------------------------------------------------------------------------------------------
# DECIMAL
# ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hex_bytes", "precision", "scale", "expected"),
    [
        ("75c87fff", 4, 2, "-10.55"),
        ("80018000", 4, 2, "0.01"),
        ("7ffff47ff5", 5, 0, "-11"),
        ("8000008000", 5, 0, "0"),
        ("85f5e10000000000000000000000", 30, 30, "0.100000000000000000000000000000"),
    ],
)
def test_decimal_known_bytes(hex_bytes: str, precision: int, scale: int, expected: str) -> None:
    value, pos = decode_decimal(bytes.fromhex(hex_bytes), 0, precision, scale)
    assert format(value, "f") == expected
    assert value.as_tuple().exponent == -scale
    assert pos == decimal_size(precision, scale)


def test_decimal_keeps_scale_digits() -> None:
    data = encode_decimal(Decimal("1.5"), 5, 2)
    value, _ = decode_decimal(data, 0, 5, 2)
    assert str(value) == "1.50"
    assert value == Decimal("1.50")


@pytest.mark.parametrize(
    "text",
    [
        "9" * 35 + "." + "9" * 30,
        "-" + "9" * 35 + "." + "9" * 30,
        "0." + "0" * 29 + "1",
        "-0." + "0" * 29 + "1",
        "12345678901234567890123456789012345.123456789012345678901234567890",
    ],
)
def test_decimal_max_precision(text: str) -> None:
    data = encode_decimal(Decimal(text), 65, 30)
    assert len(data) == decimal_size(65, 30) == 30
    value, pos = decode_decimal(data + b"\xff\xff", 0, 65, 30)
    assert value == Decimal(text)
    assert format(value, "f") == text
    assert pos == 30


def test_decimal_negative_zero_is_plain_zero() -> None:
    # all digits zero with the sign bit clear: mysqld never writes it, decode as 0 rather than -0
    data = bytes(b ^ 0xFF for b in encode_decimal(Decimal("0.00"), 4, 2))
    value, _ = decode_decimal(data, 0, 4, 2)
    assert format(value, "f") == "0.00"


@pytest.mark.parametrize(
    ("precision", "scale", "size"),
    [
        (1, 0, 1),
        (4, 2, 2),
        (9, 0, 4),
        (10, 0, 5),
        (10, 2, 5),
        (18, 9, 8),
        (19, 9, 9),
        (65, 30, 30),
        (30, 30, 14),
    ],
)
def test_decimal_size(precision: int, scale: int, size: int) -> None:
    assert decimal_size(precision, scale) == size


@pytest.mark.parametrize(("precision", "scale"), [(0, 0), (66, 0), (10, 31), (5, 6), (-1, 0)])
def test_decimal_invalid_metadata(precision: int, scale: int) -> None:
    with pytest.raises(DecodeError, match="not a valid MySQL decimal type"):
        decode_decimal(b"\x80" * 40, 0, precision, scale)


def test_decimal_truncated() -> None:
    with pytest.raises(TruncatedError, match="needs 5 bytes at offset 1"):
        decode_decimal(b"\x00\x80\x00\x00", 1, 10, 2)


def test_decimal_out_of_range_group_is_rejected() -> None:
    # a full 9-digit group holding 0x7fffffff (> 999999999) cannot come from mysqld
    data = bytes([0x80 | 0x7F, 0xFF, 0xFF, 0xFF])
    with pytest.raises(DecodeError, match="digit group"):
        decode_decimal(data, 0, 9, 0)


def test_decimal_decoder_matches_function() -> None:
    data = b"\x00" + encode_decimal(Decimal("-12345.678"), 12, 3)
    decode = decimal_decoder(12, 3)
    assert decode(data, 1) == decode_decimal(data, 1, 12, 3)
    assert decode(data, 1)[0] == Decimal("-12345.678")


@st.composite
def decimals(draw: st.DrawFn) -> tuple[Decimal, int, int]:
    precision = draw(st.integers(1, 65))
    scale = draw(st.integers(0, min(30, precision)))
    unscaled = draw(st.integers(-(10**precision) + 1, 10**precision - 1))
    return Decimal(unscaled).scaleb(-scale, context=WIDE), precision, scale


@given(decimals(), st.binary(max_size=3), st.binary(max_size=3))
def test_decimal_round_trip(case: tuple[Decimal, int, int], prefix: bytes, suffix: bytes) -> None:
    value, precision, scale = case
    data = prefix + encode_decimal(value, precision, scale) + suffix
    decoded, pos = decode_decimal(data, len(prefix), precision, scale)
    assert decoded == value
    assert decoded.as_tuple().exponent == -scale
    assert pos == len(prefix) + decimal_size(precision, scale)


# ----------------------------------------------------------------------------------------------------
# DATETIME2 / TIMESTAMP2 / TIME2
# ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fsp", range(7))
def test_datetime2_every_fsp(fsp: int) -> None:
    dt = datetime.datetime(2024, 2, 29, 23, 59, 58, truncate_usec(987654, fsp))
    data = encode_datetime2(dt, fsp)
    assert len(data) == 5 + fsp_size(fsp)
    value, pos = decode_datetime2(data, 0, fsp)
    assert value == dt
    assert pos == len(data)


def test_datetime2_odd_fsp_is_scaled() -> None:
    # DATETIME(1) stores .5 as 50 hundredths
    data = encode_datetime2(datetime.datetime(2020, 1, 2, 3, 4, 5), 1)[:5] + bytes([50])
    value, _ = decode_datetime2(data, 0, 1)
    assert isinstance(value, datetime.datetime)
    assert value.microsecond == 500000


@pytest.mark.parametrize(
    ("fields", "fsp", "expected"),
    [
        ((0, 0, 0, 0, 0, 0, 0), 0, "0000-00-00 00:00:00"),
        ((0, 0, 0, 0, 0, 0, 0), 3, "0000-00-00 00:00:00.000"),
        ((0, 0, 0, 0, 0, 0, 0), 6, "0000-00-00 00:00:00.000000"),
        ((2020, 0, 0, 10, 11, 12, 0), 0, "2020-00-00 10:11:12"),
        ((2020, 5, 0, 10, 11, 12, 120000), 2, "2020-05-00 10:11:12.12"),
        ((0, 1, 1, 0, 0, 0, 0), 0, "0000-01-01 00:00:00"),
        ((2021, 2, 31, 0, 0, 0, 0), 0, "2021-02-31 00:00:00"),
    ],
)
def test_datetime2_zero_and_invalid_dates_are_text(
    fields: tuple[int, int, int, int, int, int, int], fsp: int, expected: str
) -> None:
    year, month, day, hour, minute, second, usec = fields
    ymd = ((year * 13 + month) << 5) | day
    intpart = (ymd << 17) | (hour << 12) | (minute << 6) | second
    data = (intpart + 0x8000000000).to_bytes(5, "big") + encode_fraction(usec, fsp)
    value, pos = decode_datetime2(data, 0, fsp)
    assert value == expected
    assert pos == len(data)


def test_datetime2_truncated_and_bad_fsp() -> None:
    with pytest.raises(TruncatedError):
        decode_datetime2(b"\x99\x9a\xb8\xf7\xaa", 0, 1)
    with pytest.raises(DecodeError, match=r"0\.\.6"):
        decode_datetime2(b"\x99\x9a\xb8\xf7\xaa\x00\x00\x00\x00", 0, 7)
    with pytest.raises(DecodeError, match="negative DATETIME"):
        decode_datetime2(b"\x00\x00\x00\x00\x00", 0, 0)


@given(
    st.datetimes(min_value=datetime.datetime(1, 1, 1), max_value=datetime.datetime(9999, 12, 31, 23, 59, 59)),
    st.integers(0, 6),
)
def test_datetime2_round_trip(dt: datetime.datetime, fsp: int) -> None:
    dt = dt.replace(microsecond=truncate_usec(dt.microsecond, fsp))
    data = b"\x01" + encode_datetime2(dt, fsp)
    assert decode_datetime2(data, 1, fsp) == (dt, len(data))
    assert datetime2_decoder(fsp)(data, 1) == (dt, len(data))


@pytest.mark.parametrize("fsp", range(7))
def test_timestamp2(fsp: int) -> None:
    usec = truncate_usec(123456, fsp)
    data = encode_timestamp2(1_700_000_000, usec, fsp)
    value, pos = decode_timestamp2(data, 0, fsp)
    assert value == datetime.datetime.fromtimestamp(1_700_000_000, UTC).replace(microsecond=usec)
    assert isinstance(value, datetime.datetime)
    assert value.tzinfo is not None
    assert value.utcoffset() == datetime.timedelta(0)
    assert pos == 4 + fsp_size(fsp)


@pytest.mark.parametrize(
    ("fsp", "expected"),
    [(0, "0000-00-00 00:00:00"), (1, "0000-00-00 00:00:00.0"), (6, "0000-00-00 00:00:00.000000")],
)
def test_timestamp2_zero(fsp: int, expected: str) -> None:
    data = encode_timestamp2(0, 0, fsp)
    assert decode_timestamp2(data, 0, fsp) == (expected, len(data))
    assert timestamp2_decoder(fsp)(data, 0) == (expected, len(data))


def test_timestamp2_max() -> None:
    data = encode_timestamp2(2**32 - 1, 999999, 6)
    value, _ = decode_timestamp2(data, 0, 6)
    assert value == datetime.datetime(2106, 2, 7, 6, 28, 15, 999999, tzinfo=UTC)


@pytest.mark.parametrize(
    ("negative", "hms", "usec", "fsp", "text"),
    [
        (False, (838, 59, 59), 0, 0, "838:59:59"),
        (True, (838, 59, 59), 0, 0, "-838:59:59"),
        (False, (0, 0, 0), 0, 0, "00:00:00"),
        (True, (0, 0, 1), 0, 0, "-00:00:01"),
        (True, (0, 0, 0), 100000, 1, "-00:00:00.1"),
        (True, (0, 0, 0), 10000, 2, "-00:00:00.01"),
        (True, (15, 4, 5), 120000, 2, "-15:04:05.12"),
        (True, (0, 0, 0), 100, 4, "-00:00:00.0001"),
        (True, (1, 2, 3), 123400, 4, "-01:02:03.1234"),
        (True, (0, 0, 0), 500000, 3, "-00:00:00.500"),
        (True, (0, 0, 0), 1, 6, "-00:00:00.000001"),
        (True, (838, 59, 58), 999999, 6, "-838:59:58.999999"),
        (False, (12, 0, 0), 999999, 6, "12:00:00.999999"),
        (False, (0, 0, 0), 990000, 2, "00:00:00.99"),
    ],
)
def test_time2(negative: bool, hms: tuple[int, int, int], usec: int, fsp: int, text: str) -> None:
    data = encode_time2(negative, *hms, usec, fsp)
    value, pos = decode_time2(data, 0, fsp)
    assert pos == 3 + fsp_size(fsp)
    assert format_time_text(value, fsp) == text
    expected = datetime.timedelta(hours=hms[0], minutes=hms[1], seconds=hms[2], microseconds=usec)
    assert value == (-expected if negative else expected)


@given(
    st.booleans(),
    st.integers(0, 838),
    st.integers(0, 59),
    st.integers(0, 59),
    st.integers(0, 999999),
    st.integers(0, 6),
)
def test_time2_round_trip(negative: bool, hour: int, minute: int, second: int, usec: int, fsp: int) -> None:
    usec = truncate_usec(usec, fsp)
    data = encode_time2(negative, hour, minute, second, usec, fsp) + b"\x00"
    expected = datetime.timedelta(hours=hour, minutes=minute, seconds=second, microseconds=usec)
    if negative:
        expected = -expected
    assert decode_time2(data, 0, fsp) == (expected, len(data) - 1)
    assert time2_decoder(fsp)(data, 0) == (expected, len(data) - 1)


def test_time2_truncated() -> None:
    with pytest.raises(TruncatedError, match="TIME"):
        decode_time2(b"\x80\x00\x00\x00", 0, 3)


# ----------------------------------------------------------------------------------------------------
# Pre-5.6 temporal types, YEAR
# ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ymd", "expected"),
    [
        ((2024, 2, 29), datetime.date(2024, 2, 29)),
        ((1000, 1, 1), datetime.date(1000, 1, 1)),
        ((9999, 12, 31), datetime.date(9999, 12, 31)),
        ((0, 0, 0), "0000-00-00"),
        ((2020, 0, 15), "2020-00-15"),
        ((2020, 6, 0), "2020-06-00"),
        ((2021, 2, 31), "2021-02-31"),
    ],
)
def test_date(ymd: tuple[int, int, int], expected: datetime.date | str) -> None:
    assert decode_date(b"\x00" + encode_date(*ymd), 1) == (expected, 4)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, datetime.timedelta(0)),
        (123456, datetime.timedelta(hours=12, minutes=34, seconds=56)),
        (-10203, -datetime.timedelta(hours=1, minutes=2, seconds=3)),
        (8385959, datetime.timedelta(hours=838, minutes=59, seconds=59)),
        (-8385959, -datetime.timedelta(hours=838, minutes=59, seconds=59)),
    ],
)
def test_time_old(value: int, expected: datetime.timedelta) -> None:
    assert decode_time_old(value.to_bytes(3, "little", signed=True), 0) == (expected, 3)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (20240229235958, datetime.datetime(2024, 2, 29, 23, 59, 58)),
        (0, "0000-00-00 00:00:00"),
        (20200015101112, "2020-00-15 10:11:12"),
    ],
)
def test_datetime_old(value: int, expected: datetime.datetime | str) -> None:
    assert decode_datetime_old(struct.pack("<Q", value), 0) == (expected, 8)


def test_timestamp_old() -> None:
    assert decode_timestamp_old(struct.pack("<I", 0), 0) == ("0000-00-00 00:00:00", 4)
    value, pos = decode_timestamp_old(struct.pack("<I", 1_000_000_000), 0)
    assert value == datetime.datetime(2001, 9, 9, 1, 46, 40, tzinfo=UTC)
    assert pos == 4


@pytest.mark.parametrize(("byte", "expected"), [(0, 0), (1, 1901), (124, 2024), (255, 2155)])
def test_year(byte: int, expected: int) -> None:
    assert decode_year(bytes([7, byte]), 1) == (expected, 2)


@pytest.mark.parametrize(
    ("func", "size"),
    [
        (decode_date, 3),
        (decode_time_old, 3),
        (decode_datetime_old, 8),
        (decode_timestamp_old, 4),
        (decode_year, 1),
    ],
)
def test_old_types_truncated(func: object, size: int) -> None:
    assert callable(func)
    with pytest.raises(TruncatedError):
        func(b"\x00" * (size - 1), 0)


# ----------------------------------------------------------------------------------------------------
# BIT, integers, packed integers
# ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("nbits", "data", "expected"),
    [
        (1, b"\x01", 1),
        (1, b"\x00", 0),
        (8, b"\xff", 255),
        (9, b"\x01\x00", 256),
        (17, b"\x01\x02\x03", 0x010203),
        (64, b"\xff" * 8, 2**64 - 1),
        (64, b"\x80" + b"\x00" * 7, 2**63),
    ],
)
def test_bit(nbits: int, data: bytes, expected: int) -> None:
    assert bit_size(nbits) == len(data)
    assert decode_bit(data + b"\xee", 0, nbits) == (expected, len(data))


def test_bit_errors() -> None:
    with pytest.raises(TruncatedError):
        decode_bit(b"\x01", 0, 9)
    with pytest.raises(DecodeError, match="BIT"):
        decode_bit(b"\x01" * 9, 0, 65)


@pytest.mark.parametrize(
    ("type_code", "unsigned", "data", "expected"),
    [
        (1, False, b"\xff", -1),
        (1, True, b"\xff", 255),
        (2, False, b"\x00\x80", -32768),
        (2, True, b"\x00\x80", 32768),
        (9, False, b"\xff\xff\xff", -1),
        (9, True, b"\xff\xff\xff", 16777215),
        (9, False, b"\x00\x00\x80", -8388608),
        (3, False, b"\xff\xff\xff\xff", -1),
        (3, True, b"\xff\xff\xff\xff", 4294967295),
        (8, False, b"\x00" * 7 + b"\x80", -(2**63)),
        (8, True, b"\xff" * 8, 2**64 - 1),
    ],
)
def test_integers(type_code: int, unsigned: bool, data: bytes, expected: int) -> None:
    assert decode_integer(b"\x00" + data, 1, type_code, unsigned) == (expected, 1 + len(data))
    assert integer_decoder(type_code, unsigned)(data, 0) == (expected, len(data))
    with pytest.raises(TruncatedError):
        decode_integer(data[:-1], 0, type_code, unsigned)


def test_integer_unknown_type() -> None:
    with pytest.raises(DecodeError, match="not an integer type"):
        decode_integer(b"\x00" * 8, 0, 4, False)


@pytest.mark.parametrize(
    ("data", "expected", "end"),
    [
        (b"\x00", 0, 1),
        (b"\xfa", 250, 1),
        (b"\xfb", None, 1),
        (b"\xfc\xfb\x00", 251, 3),
        (b"\xfc\xff\xff", 65535, 3),
        (b"\xfd\x00\x00\x01", 65536, 4),
        (b"\xfd\xff\xff\xff", 16777215, 4),
        (b"\xfe\x00\x00\x00\x01\x00\x00\x00\x00", 16777216, 9),
        (b"\xfe" + b"\xff" * 8, 2**64 - 1, 9),
    ],
)
def test_packed_int(data: bytes, expected: int | None, end: int) -> None:
    assert decode_packed_int(data + b"\x07", 0) == (expected, end)


@pytest.mark.parametrize("data", [b"", b"\xfc\x01", b"\xfd\x01\x02", b"\xfe" + b"\x00" * 7])
def test_packed_int_truncated(data: bytes) -> None:
    with pytest.raises(TruncatedError):
        decode_packed_int(data, 0)


def test_packed_int_ff_is_invalid() -> None:
    with pytest.raises(DecodeError, match="0xff"):
        decode_packed_int(b"\xff\x00\x00", 0)


@given(st.integers(0, 2**64 - 1))
def test_packed_int_round_trip(value: int) -> None:
    if value < 251:
        data = bytes([value])
    elif value < 2**16:
        data = b"\xfc" + value.to_bytes(2, "little")
    elif value < 2**24:
        data = b"\xfd" + value.to_bytes(3, "little")
    else:
        data = b"\xfe" + value.to_bytes(8, "little")
    assert decode_packed_int(data, 0) == (value, len(data))


@given(st.binary(max_size=10))
def test_packed_int_is_the_binlog_reader_with_null(data: bytes) -> None:
    """Row values read 0xfb as NULL; everywhere else in the binlog (read_packed_int) it is an error."""
    from mybinlog.protocol._reader import read_packed_int

    try:
        expected: tuple[int | None, int] | type[Exception] = read_packed_int(data, 0)
    except DecodeError as exc:
        expected = type(exc)
    if data[:1] == b"\xfb":
        assert expected is DecodeError
        assert decode_packed_int(data, 0) == (None, 1)
    elif isinstance(expected, tuple):
        assert decode_packed_int(data, 0) == expected
    else:
        with pytest.raises(expected):
            decode_packed_int(data, 0)


def test_format_time_text() -> None:
    assert format_time_text(datetime.timedelta(hours=100, microseconds=5), 6) == "100:00:00.000005"
    assert format_time_text(-datetime.timedelta(seconds=1), 0) == "-00:00:01"
    assert format_time_text(datetime.timedelta(microseconds=123456), 3) == "00:00:00.123"
