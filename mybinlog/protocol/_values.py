"""Column value codecs of MySQL/MariaDB row events (sans-IO, pure functions).

Every ``decode_*`` function takes the whole buffer (``bytes``; the row decoder passes the event body) and the
offset of the value, and returns ``(value, new_offset)``. They never look at anything but the bytes of their
value, so they are safe to call from any thread and cost nothing to import. A value that runs past the end of
the buffer raises :class:`~mybinlog.errors.TruncatedError`; bytes that cannot be a valid value raise
:class:`~mybinlog.errors.DecodeError`. Offsets in messages are relative to ``buf``.

Speed: the row decoder calls these once per column per row, so they use precompiled :class:`struct.Struct`
objects, ``int.from_bytes`` and cached layouts, and allocate nothing but the result. Where a column's metadata
is fixed for the whole table, the ``*_decoder(...)`` factories return a closure with the layout already bound
(e.g. :func:`decimal_decoder`, :func:`datetime2_decoder`) so the per-row call does no layout work at all.

Zero and invalid dates
----------------------
MySQL stores dates Python cannot represent: the zero date ``0000-00-00``, dates with a zero month or day
(``2020-00-15``, allowed unless NO_ZERO_IN_DATE is set), year 0, and with ALLOW_INVALID_DATES days such as
``2021-02-31``. :class:`datetime.date` / :class:`datetime.datetime` cannot hold these, and turning them into
``None`` would make them indistinguishable from SQL NULL. They are therefore returned as the exact text MySQL
itself prints (``'0000-00-00'``, ``'0000-00-00 00:00:00'``, and for DATETIME(fsp)/TIMESTAMP(fsp) with ``fsp``
fraction digits, e.g. ``'0000-00-00 00:00:00.000'`` for fsp 3). Consumers that need a uniform type check
``isinstance(value, str)``. Valid values are :class:`datetime.date`, naive :class:`datetime.datetime`
(DATETIME, which has no time zone in MySQL) and aware UTC :class:`datetime.datetime` (TIMESTAMP, which MySQL
stores as seconds since the epoch).

TIME values are :class:`datetime.timedelta` (MySQL TIME is a duration from -838:59:59 to 838:59:59, not a time
of day). DECIMAL values are exact :class:`decimal.Decimal` with exactly ``scale`` fraction digits.

Fractional seconds (``fsp`` 0..6) are stored after the integer part, big-endian, in ``(fsp + 1) // 2`` bytes:
fsp 1-2 one byte of hundredths, fsp 3-4 two bytes of ten-thousandths, fsp 5-6 three bytes of microseconds
(an odd fsp stores its digits scaled up: TIME(1) stores .5 as 50 hundredths).
"""

from __future__ import annotations

import datetime
import struct
from collections.abc import Callable
from decimal import Decimal

from mybinlog.errors import DecodeError, TruncatedError
from mybinlog.protocol._reader import read_packed_int

__all__ = [
    "DATETIME2_SIZE",
    "TIME2_SIZE",
    "TIMESTAMP2_SIZE",
    "bit_size",
    "datetime2_decoder",
    "decimal_decoder",
    "decimal_size",
    "decode_bit",
    "decode_date",
    "decode_datetime2",
    "decode_datetime_old",
    "decode_decimal",
    "decode_integer",
    "decode_packed_int",
    "decode_time2",
    "decode_time_old",
    "decode_timestamp2",
    "decode_timestamp_old",
    "decode_year",
    "format_time_text",
    "fsp_size",
    "integer_decoder",
    "time2_decoder",
    "timestamp2_decoder",
]

_UTC = datetime.UTC
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=_UTC)
_timedelta = datetime.timedelta
_datetime = datetime.datetime
_date = datetime.date
_from_bytes = int.from_bytes

# Bytes used by the integer part of the temporal2 types (fraction bytes come on top: see fsp_size).
DATETIME2_SIZE = 5
TIME2_SIZE = 3
TIMESTAMP2_SIZE = 4

# Fraction bytes per fsp, and the factor that turns the stored fraction into microseconds.
_FSP_BYTES = (0, 1, 1, 2, 2, 3, 3)
_FRAC_TO_USEC = (1, 10000, 100, 1)  # indexed by the number of fraction bytes

_DATETIMEF_INT_OFS = 0x8000000000
_TIMEF_INT_OFS = 0x800000
_TIMEF_OFS = 0x800000000000


def _truncated(what: str, pos: int, need: int, buf: bytes) -> TruncatedError:
    have = max(len(buf) - pos, 0)
    return TruncatedError(
        f"{what} needs {need} bytes at offset {pos} but only {have} remain: the row image is truncated or "
        "the column metadata in the TABLE_MAP does not match the row data"
    )


def _check_fsp(fsp: int, what: str) -> None:
    if not 0 <= fsp <= 6:
        raise DecodeError(
            f"{what} has fractional-seconds precision {fsp}, but MySQL allows 0..6: the TABLE_MAP column "
            "metadata is corrupt or belongs to another column type"
        )


def fsp_size(fsp: int) -> int:
    """Bytes used by the fractional seconds of a TIME2/DATETIME2/TIMESTAMP2 value of precision ``fsp``."""
    _check_fsp(fsp, "a temporal column")
    return _FSP_BYTES[fsp]


# ----------------------------------------------------------------------------------------------------
# DECIMAL (MYSQL_TYPE_NEWDECIMAL, type 246)
#
# The number is split into an integer part of precision - scale digits and a fraction of scale digits. Each
# part is stored in groups of 9 decimal digits per 4-byte big-endian word; the integer part's leftover digits
# (intg % 9) come first in a shorter word, the fraction's leftover digits (scale % 9) come last in a shorter
# word (holding them as an integer, i.e. left-aligned: .55 with 2 leftover digits is stored as 55). The first
# byte's top bit is flipped (set for positive numbers); negative numbers additionally have every byte
# inverted, so the bytes sort like the numbers.
# ----------------------------------------------------------------------------------------------------

_DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
_INVERT = bytes(255 - i for i in range(256))
_MAX_GROUP = 999_999_999
_BILLION = 1_000_000_000

# (precision, scale) -> (size, lead_bytes, 10**lead_digits, struct of the 9-digit groups or None, trail_bytes,
#                        10**trail_digits, scale)
_DecimalLayout = tuple[int, int, int, "struct.Struct | None", int, int, int]
_DECIMAL_LAYOUTS: dict[tuple[int, int], _DecimalLayout] = {}


def _decimal_layout(precision: int, scale: int) -> _DecimalLayout:
    layout = _DECIMAL_LAYOUTS.get((precision, scale))
    if layout is not None:
        return layout
    if not (1 <= precision <= 65 and 0 <= scale <= 30 and scale <= precision):
        raise DecodeError(
            f"DECIMAL({precision},{scale}) is not a valid MySQL decimal type (precision 1..65, scale 0..30 "
            "and at most the precision): the TABLE_MAP column metadata is corrupt or belongs to another "
            "column type"
        )
    intg = precision - scale
    intg0, intg0x = divmod(intg, 9)
    frac0, frac0x = divmod(scale, 9)
    lead_bytes = _DIG2BYTES[intg0x]
    trail_bytes = _DIG2BYTES[frac0x]
    size = lead_bytes + 4 * (intg0 + frac0) + trail_bytes
    n_groups = intg0 + frac0
    groups = struct.Struct(f">{n_groups}I") if n_groups else None
    layout = (
        size,
        lead_bytes,
        10**intg0x,
        groups,
        trail_bytes,
        10**frac0x,
        scale,
    )
    _DECIMAL_LAYOUTS[(precision, scale)] = layout
    return layout


def decimal_size(precision: int, scale: int) -> int:
    """Bytes used by a DECIMAL(precision, scale) value in a row image."""
    return _decimal_layout(precision, scale)[0]


def _decode_decimal_layout(
    buf: bytes, pos: int, layout: _DecimalLayout, precision: int
) -> tuple[Decimal, int]:
    size, lead_bytes, lead_limit, groups_st, trail_bytes, trail_pow, scale = layout
    end = pos + size
    if end > len(buf):
        raise _truncated(f"DECIMAL({precision},{scale}) value", pos, size, buf)
    raw = buf[pos:end]
    negative = not raw[0] & 0x80
    if negative:
        raw = raw.translate(_INVERT)
    # the flipped sign bit only ever sits in the first byte: clear it from whichever word holds that byte
    value = 0
    if lead_bytes:
        value = _from_bytes(raw[:lead_bytes], "big") ^ (0x80 << (8 * (lead_bytes - 1)))
        if value >= lead_limit:
            raise _bad_decimal(raw, precision, scale, pos)
        first_bit_done = True
    else:
        first_bit_done = False
    if groups_st is not None:
        groups = groups_st.unpack_from(raw, lead_bytes)
        if not first_bit_done:
            groups = (groups[0] ^ 0x80000000, *groups[1:])
            first_bit_done = True
        if max(groups) > _MAX_GROUP:
            raise _bad_decimal(raw, precision, scale, pos)
        for g in groups:
            value = value * _BILLION + g
    if trail_bytes:
        trail = _from_bytes(raw[size - trail_bytes :], "big")
        if not first_bit_done:
            trail ^= 0x80 << (8 * (trail_bytes - 1))
        if trail >= trail_pow:
            raise _bad_decimal(raw, precision, scale, pos)
        value = value * trail_pow + trail
    if scale == 0:
        return Decimal(-value if negative else value), end
    if negative and value:
        return Decimal(f"-{value}E-{scale}"), end
    return Decimal(f"{value}E-{scale}"), end


def _bad_decimal(raw: bytes, precision: int, scale: int, pos: int) -> DecodeError:
    return DecodeError(
        f"bytes {raw.hex()} at offset {pos} are not a valid DECIMAL({precision},{scale}) value (a digit "
        "group is out of range): the row data is corrupt or the column metadata does not match it"
    )


def decode_decimal(buf: bytes, pos: int, precision: int, scale: int) -> tuple[Decimal, int]:
    """Decode a DECIMAL(precision, scale) value (MySQL NEWDECIMAL binary format), exactly.

    The result has exactly ``scale`` fraction digits (``Decimal('1.50')`` for scale 2) whatever the decimal
    context, because it is built from a digit string and never goes through arithmetic.
    """
    layout = _DECIMAL_LAYOUTS.get((precision, scale))
    if layout is None:
        layout = _decimal_layout(precision, scale)
    return _decode_decimal_layout(buf, pos, layout, precision)


def decimal_decoder(precision: int, scale: int) -> Callable[[bytes, int], tuple[Decimal, int]]:
    """Return ``decode(buf, pos)`` for DECIMAL(precision, scale) with the layout precomputed."""
    layout = _decimal_layout(precision, scale)

    def decode(buf: bytes, pos: int) -> tuple[Decimal, int]:
        return _decode_decimal_layout(buf, pos, layout, precision)

    return decode


# ----------------------------------------------------------------------------------------------------
# Temporal types
# ----------------------------------------------------------------------------------------------------


def _datetime_text(
    year: int, month: int, day: int, hour: int, minute: int, second: int, usec: int, fsp: int
) -> str:
    text = f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}"
    if fsp:
        return f"{text}.{usec:06d}"[: 20 + fsp]
    return text


def _make_datetime(
    year: int, month: int, day: int, hour: int, minute: int, second: int, usec: int, fsp: int
) -> datetime.datetime | str:
    if year and month and day:
        try:
            return _datetime(year, month, day, hour, minute, second, usec)
        except ValueError:
            pass
    return _datetime_text(year, month, day, hour, minute, second, usec, fsp)


def _decode_datetime2(buf: bytes, pos: int, fsp: int, nfrac: int) -> tuple[datetime.datetime | str, int]:
    end = pos + 5 + nfrac
    if end > len(buf):
        raise _truncated(f"DATETIME({fsp}) value", pos, 5 + nfrac, buf)
    if nfrac:
        whole = _from_bytes(buf[pos:end], "big")
        usec = (whole & ((1 << (8 * nfrac)) - 1)) * _FRAC_TO_USEC[nfrac]
        intpart = (whole >> (8 * nfrac)) - _DATETIMEF_INT_OFS
    else:
        usec = 0
        intpart = _from_bytes(buf[pos:end], "big") - _DATETIMEF_INT_OFS
    if intpart < 0:
        raise DecodeError(
            f"bytes {buf[pos:end].hex()} at offset {pos} are a negative DATETIME({fsp}), which MySQL never "
            "writes: the row data is corrupt or the column metadata does not match it"
        )
    ymd = intpart >> 17
    ym = ymd >> 5
    hms = intpart & 0x1FFFF
    year, month = divmod(ym, 13)
    return (
        _make_datetime(year, month, ymd & 31, hms >> 12, (hms >> 6) & 63, hms & 63, usec, fsp),
        end,
    )


def decode_datetime2(buf: bytes, pos: int, fsp: int) -> tuple[datetime.datetime | str, int]:
    """Decode DATETIME(fsp) (type 18, DATETIME2): naive datetime, or text for zero/invalid dates."""
    if not 0 <= fsp <= 6:
        _check_fsp(fsp, "DATETIME")
    return _decode_datetime2(buf, pos, fsp, _FSP_BYTES[fsp])


def datetime2_decoder(fsp: int) -> Callable[[bytes, int], tuple[datetime.datetime | str, int]]:
    """Return ``decode(buf, pos)`` for DATETIME(fsp) with the fraction layout bound."""
    _check_fsp(fsp, "DATETIME")
    nfrac = _FSP_BYTES[fsp]

    def decode(buf: bytes, pos: int) -> tuple[datetime.datetime | str, int]:
        return _decode_datetime2(buf, pos, fsp, nfrac)

    return decode


def _decode_timestamp2(buf: bytes, pos: int, fsp: int, nfrac: int) -> tuple[datetime.datetime | str, int]:
    end = pos + 4 + nfrac
    if end > len(buf):
        raise _truncated(f"TIMESTAMP({fsp}) value", pos, 4 + nfrac, buf)
    if nfrac:
        whole = _from_bytes(buf[pos:end], "big")
        usec = (whole & ((1 << (8 * nfrac)) - 1)) * _FRAC_TO_USEC[nfrac]
        seconds = whole >> (8 * nfrac)
    else:
        usec = 0
        seconds = _from_bytes(buf[pos:end], "big")
    if seconds == 0:
        # MySQL's zero TIMESTAMP; 1970-01-01 00:00:00 UTC itself is outside the TIMESTAMP range
        return ("0000-00-00 00:00:00." + "0" * fsp) if fsp else "0000-00-00 00:00:00", end
    return _EPOCH + _timedelta(0, seconds, usec), end


def decode_timestamp2(buf: bytes, pos: int, fsp: int) -> tuple[datetime.datetime | str, int]:
    """Decode TIMESTAMP(fsp) (MYSQL_TYPE_TIMESTAMP2, type 17): aware UTC datetime, or the zero-date text."""
    if not 0 <= fsp <= 6:
        _check_fsp(fsp, "TIMESTAMP")
    return _decode_timestamp2(buf, pos, fsp, _FSP_BYTES[fsp])


def timestamp2_decoder(fsp: int) -> Callable[[bytes, int], tuple[datetime.datetime | str, int]]:
    """Return ``decode(buf, pos)`` for TIMESTAMP(fsp) with the fraction layout bound."""
    _check_fsp(fsp, "TIMESTAMP")
    nfrac = _FSP_BYTES[fsp]

    def decode(buf: bytes, pos: int) -> tuple[datetime.datetime | str, int]:
        return _decode_timestamp2(buf, pos, fsp, nfrac)

    return decode


def _decode_time2(buf: bytes, pos: int, fsp: int, nfrac: int) -> tuple[datetime.timedelta, int]:
    end = pos + 3 + nfrac
    if end > len(buf):
        raise _truncated(f"TIME({fsp}) value", pos, 3 + nfrac, buf)
    # Build MySQL's "packed" time (integer part << 24 plus signed microseconds), as
    # TIME_from_longlong_time_packed expects. Negative values with a fraction store the fraction counted down
    # from the next integer, so the integer part moves one up and the fraction becomes negative.
    if nfrac == 0:
        packed = (_from_bytes(buf[pos:end], "big") - _TIMEF_INT_OFS) << 24
    elif nfrac == 3:
        packed = _from_bytes(buf[pos:end], "big") - _TIMEF_OFS
    else:
        intpart = _from_bytes(buf[pos : pos + 3], "big") - _TIMEF_INT_OFS
        frac = _from_bytes(buf[pos + 3 : end], "big")
        if intpart < 0 and frac:
            intpart += 1
            frac -= 0x100 if nfrac == 1 else 0x10000
        packed = (intpart << 24) + frac * _FRAC_TO_USEC[nfrac]
    if packed < 0:
        packed = -packed
        hms = packed >> 24
        return (
            _timedelta(
                0,
                -(((hms >> 12) & 0x3FF) * 3600 + ((hms >> 6) & 63) * 60 + (hms & 63)),
                -(packed & 0xFFFFFF),
            ),
            end,
        )
    hms = packed >> 24
    return (
        _timedelta(0, ((hms >> 12) & 0x3FF) * 3600 + ((hms >> 6) & 63) * 60 + (hms & 63), packed & 0xFFFFFF),
        end,
    )


def decode_time2(buf: bytes, pos: int, fsp: int) -> tuple[datetime.timedelta, int]:
    """Decode TIME(fsp) (MYSQL_TYPE_TIME2, type 19) into a timedelta (negative times included)."""
    if not 0 <= fsp <= 6:
        _check_fsp(fsp, "TIME")
    return _decode_time2(buf, pos, fsp, _FSP_BYTES[fsp])


def time2_decoder(fsp: int) -> Callable[[bytes, int], tuple[datetime.timedelta, int]]:
    """Return ``decode(buf, pos)`` for TIME(fsp) with the fraction layout bound."""
    _check_fsp(fsp, "TIME")
    nfrac = _FSP_BYTES[fsp]

    def decode(buf: bytes, pos: int) -> tuple[datetime.timedelta, int]:
        return _decode_time2(buf, pos, fsp, nfrac)

    return decode


def format_time_text(value: datetime.timedelta, fsp: int = 0) -> str:
    """Format a TIME value the way MySQL prints it: ``[-]HH:MM:SS[.fraction]`` (hours may exceed 24)."""
    usec_total = (value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds
    sign = "-" if usec_total < 0 else ""
    seconds, usec = divmod(abs(usec_total), 1_000_000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    text = f"{sign}{hour:02d}:{minute:02d}:{second:02d}"
    if fsp:
        return f"{text}.{usec:06d}"[: len(text) + 1 + fsp]
    return text


def decode_date(buf: bytes, pos: int) -> tuple[datetime.date | str, int]:
    """Decode DATE (type 10): 3 bytes little-endian, day | month << 5 | year << 9."""
    end = pos + 3
    if end > len(buf):
        raise _truncated("DATE value", pos, 3, buf)
    v = _from_bytes(buf[pos:end], "little")
    day = v & 31
    month = (v >> 5) & 15
    year = v >> 9
    if year and month and day:
        try:
            return _date(year, month, day), end
        except ValueError:
            pass
    return f"{year:04d}-{month:02d}-{day:02d}", end


def decode_time_old(buf: bytes, pos: int) -> tuple[datetime.timedelta, int]:
    """Decode the pre-5.6 TIME (type 11): 3 bytes little-endian signed integer HHMMSS."""
    end = pos + 3
    if end > len(buf):
        raise _truncated("TIME value", pos, 3, buf)
    v = _from_bytes(buf[pos:end], "little", signed=True)
    a = -v if v < 0 else v
    hours, rest = divmod(a, 10000)
    minutes, seconds = divmod(rest, 100)
    total = hours * 3600 + minutes * 60 + seconds
    return _timedelta(0, -total if v < 0 else total), end


def decode_datetime_old(buf: bytes, pos: int) -> tuple[datetime.datetime | str, int]:
    """Decode the pre-5.6 DATETIME (type 12): 8 bytes little-endian integer YYYYMMDDHHMMSS."""
    end = pos + 8
    if end > len(buf):
        raise _truncated("DATETIME value", pos, 8, buf)
    v = _from_bytes(buf[pos:end], "little")
    d, t = divmod(v, 1_000_000)
    year, md = divmod(d, 10000)
    month, day = divmod(md, 100)
    hour, ms = divmod(t, 10000)
    minute, second = divmod(ms, 100)
    return _make_datetime(year, month, day, hour, minute, second, 0, 0), end


def decode_timestamp_old(buf: bytes, pos: int) -> tuple[datetime.datetime | str, int]:
    """Decode the pre-5.6 TIMESTAMP (type 7): 4 bytes little-endian seconds since the epoch, 0 = zero date."""
    end = pos + 4
    if end > len(buf):
        raise _truncated("TIMESTAMP value", pos, 4, buf)
    seconds = _from_bytes(buf[pos:end], "little")
    if seconds == 0:
        return "0000-00-00 00:00:00", end
    return _EPOCH + _timedelta(0, seconds), end


def decode_year(buf: bytes, pos: int) -> tuple[int, int]:
    """Decode YEAR (type 13): one byte, 0 stays 0 (the zero year), otherwise 1900 + value."""
    if pos >= len(buf):
        raise _truncated("YEAR value", pos, 1, buf)
    v = buf[pos]
    return (1900 + v if v else 0), pos + 1


# ----------------------------------------------------------------------------------------------------
# BIT, integers, packed integers
# ----------------------------------------------------------------------------------------------------


def bit_size(nbits: int) -> int:
    """Bytes used by a BIT(nbits) value."""
    return (nbits + 7) >> 3


def decode_bit(buf: bytes, pos: int, nbits: int) -> tuple[int, int]:
    """Decode BIT(nbits) (type 16): (nbits + 7) // 8 bytes, big-endian, as an unsigned int."""
    if not 1 <= nbits <= 64:
        raise DecodeError(
            f"BIT({nbits}) is not a valid MySQL type (1..64 bits): the TABLE_MAP column metadata is corrupt"
        )
    end = pos + ((nbits + 7) >> 3)
    if end > len(buf):
        raise _truncated(f"BIT({nbits}) value", pos, end - pos, buf)
    return _from_bytes(buf[pos:end], "big"), end


_INT_STRUCTS: dict[tuple[int, bool], struct.Struct] = {
    (1, False): struct.Struct("<b"),
    (1, True): struct.Struct("<B"),
    (2, False): struct.Struct("<h"),
    (2, True): struct.Struct("<H"),
    (3, False): struct.Struct("<l"),
    (3, True): struct.Struct("<L"),
    (8, False): struct.Struct("<q"),
    (8, True): struct.Struct("<Q"),
}
_INT_SIZES = {1: 1, 2: 2, 3: 4, 8: 8, 9: 3}  # TINY, SHORT, LONG, LONGLONG, INT24
_INT_NAMES = {1: "TINYINT", 2: "SMALLINT", 3: "INT", 8: "BIGINT", 9: "MEDIUMINT"}


def integer_decoder(type_code: int, unsigned: bool) -> Callable[[bytes, int], tuple[int, int]]:
    """Return ``decode(buf, pos)`` for an integer column (types 1, 2, 3, 8 and 9 = INT24), little-endian."""
    size = _INT_SIZES.get(type_code)
    if size is None:
        raise DecodeError(f"column type {type_code} is not an integer type (expected 1, 2, 3, 8 or 9)")
    name = _INT_NAMES[type_code]
    if type_code == 9:
        signed = not unsigned

        def decode_int24(buf: bytes, pos: int) -> tuple[int, int]:
            end = pos + 3
            if end > len(buf):
                raise _truncated(f"{name} value", pos, 3, buf)
            return _from_bytes(buf[pos:end], "little", signed=signed), end

        return decode_int24
    unpack_from = _INT_STRUCTS[(type_code, unsigned)].unpack_from

    def decode(buf: bytes, pos: int) -> tuple[int, int]:
        end = pos + size
        if end > len(buf):
            raise _truncated(f"{name} value", pos, size, buf)
        return unpack_from(buf, pos)[0], end

    return decode


_INTEGER_DECODERS = {
    (code, unsigned): integer_decoder(code, unsigned) for code in _INT_SIZES for unsigned in (False, True)
}


def decode_integer(buf: bytes, pos: int, type_code: int, unsigned: bool) -> tuple[int, int]:
    """Decode an integer column value of MySQL type ``type_code`` (1, 2, 3, 8, 9)."""
    decoder = _INTEGER_DECODERS.get((type_code, unsigned))
    if decoder is None:
        raise DecodeError(f"column type {type_code} is not an integer type (expected 1, 2, 3, 8 or 9)")
    return decoder(buf, pos)


def decode_packed_int(buf: bytes, pos: int) -> tuple[int | None, int]:
    """Decode a length-encoded integer: one byte < 0xfb; 0xfb NULL (None); 0xfc/0xfd/0xfe + 2/3/8 bytes LE.

    :func:`~mybinlog.protocol._reader.read_packed_int` (where NULL is not allowed) with 0xfb read as NULL.
    """
    if pos < len(buf) and buf[pos] == 0xFB:
        return None, pos + 1
    return read_packed_int(buf, pos)
