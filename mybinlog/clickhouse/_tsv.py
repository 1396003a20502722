"""ClickHouse SQL quoting and the TabSeparated format, the text both kinds of target speak in both directions:
every ClickHouse version (18.16 to today) reads and writes it the same way, and it carries every type as text."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..errors import ConfigurationError

__all__ = [
    "parse_tsv",
    "quote_bytes",
    "quote_ident",
    "quote_string",
    "quote_table",
    "tsv_escape",
    "tsv_escape_bytes",
    "tsv_unescape",
]


def quote_ident(name: str) -> str:
    """A ClickHouse identifier in backquotes: ``quote_ident("a`b") == "`a\\\\`b`"``."""
    return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"


def quote_table(database: str, table: str) -> str:
    """```database`.`table``` (the form :meth:`Target.insert_tsv` takes)."""
    return f"{quote_ident(database)}.{quote_ident(table)}"


_LITERAL_ESCAPES = str.maketrans({"\\": "\\\\", "'": "\\'", "\0": "\\0", "\n": "\\n", "\r": "\\r", "\t": "\\t"})


def quote_string(s: str) -> str:
    """A ClickHouse string literal: ``quote_string("it's") == "'it\\\\'s'"``."""
    return "'" + s.translate(_LITERAL_ESCAPES) + "'"


def quote_bytes(b: bytes) -> str:
    """A ClickHouse string literal holding exactly these bytes (non-printable and non-ASCII bytes as ``\\xHH``)."""
    out = []
    for byte in b:
        if 0x20 <= byte < 0x7F and byte not in (0x27, 0x5C):  # printable ASCII except ' and backslash
            out.append(chr(byte))
        else:
            out.append(f"\\x{byte:02X}")
    return "'" + "".join(out) + "'"


_TSV_ESCAPES = (("\t", "\\t"), ("\n", "\\n"), ("\r", "\\r"), ("\0", "\\0"), ("\b", "\\b"), ("\f", "\\f"))
_TSV_BYTE_ESCAPES = (
    (b"\\", b"\\\\"),  # first: the escapes below add backslashes
    (b"\t", b"\\t"),
    (b"\n", b"\\n"),
    (b"\r", b"\\r"),
    (b"\0", b"\\0"),
    (b"\b", b"\\b"),
    (b"\f", b"\\f"),
)


def tsv_escape(value: str) -> str:
    """One TabSeparated field for a text value (backslash, tab, newline, CR, NUL, BS, FF escaped).

    The row encoders call it for every text value: printable text without a backslash (most of it) is returned
    as it is, and the rest is replaced escape by escape (several times faster than ``str.translate``).
    """
    if value.isprintable() and "\\" not in value:
        return value
    if "\\" in value:
        value = value.replace("\\", "\\\\")  # first: the escapes below add backslashes
    for raw, escaped in _TSV_ESCAPES:
        if raw in value:
            value = value.replace(raw, escaped)
    return value


def tsv_escape_bytes(value: bytes) -> str:
    """One TabSeparated field holding exactly these bytes; bytes that are not UTF-8 become ``\\xHH``.

    The result is plain text (encodable as UTF-8), and ClickHouse stores the original bytes in a ``String``.
    """
    for raw, escaped in _TSV_BYTE_ESCAPES:
        if raw in value:
            value = value.replace(raw, escaped)
    return value.decode("utf-8", "backslashreplace")  # invalid bytes -> \xhh, which ClickHouse reads back


_UNESCAPES = {
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "0": "\0",
    "a": "\a",
    "v": "\v",
    "e": "\x1b",
}
_UNESCAPE_RE = re.compile(r"\\(x[0-9A-Fa-f]{2}|.)", re.DOTALL)


def _unescape_match(match: re.Match[str]) -> str:
    seq = match.group(1)
    if len(seq) == 3:  # xHH: one byte; >= 0x80 as its surrogateescape stand-in
        byte = int(seq[1:], 16)
        return chr(byte) if byte < 0x80 else chr(0xDC00 + byte)
    return _UNESCAPES.get(seq, seq)


def _unescape(field: str) -> str | None:
    if field == "\\N":
        return None
    value = _UNESCAPE_RE.sub(_unescape_match, field)
    if "\\x" in field:  # bytes given as \xHH may form UTF-8 characters together
        value = value.encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape")
    return value


def tsv_unescape(field: bytes | str) -> str | None:
    """One TabSeparated field as ClickHouse writes it -> its value (``None`` for ``\\N``)."""
    if isinstance(field, bytes):
        field = field.decode("utf-8", "surrogateescape")
    return _unescape(field) if "\\" in field else field


def parse_tsv(data: bytes) -> list[list[str | None]]:
    """TabSeparated output (every row ends with a newline) -> rows of unescaped fields.

    Fields are ``str``; bytes that are not UTF-8 are decoded with ``surrogateescape`` (``value.encode("utf-8",
    "surrogateescape")`` restores them); ``\\N`` is ``None``.
    """
    if not data:
        return []
    text = data.decode("utf-8", "surrogateescape")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if "\\" not in text:  # no escapes and no NULLs anywhere: split only
        return [line.split("\t") for line in lines]  # type: ignore[misc]
    rows: list[list[str | None]] = []
    append = rows.append
    for line in lines:
        if "\\" in line:
            append([_unescape(raw) if "\\" in raw else raw for raw in line.split("\t")])
        else:
            append(line.split("\t"))  # type: ignore[arg-type]
    return rows


def _insert_sql(table: str, columns: Sequence[str]) -> str:
    if not columns:
        raise ConfigurationError(f"insert into {table}: no columns given")
    return f"INSERT INTO {table} ({', '.join(quote_ident(c) for c in columns)})"
