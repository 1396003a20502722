"""DECIMAL values are written as text in fixed notation with the column's scale, never in exponent form.

``str(Decimal)`` switches to exponent form below 1e-6 (``0E-9``, ``8.0E-8``), so every zero of a column with scale
>= 7 came out as ``"0E-9"`` against docs/dump-format.md's ``"-12.3400"`` form. Checked for every scale 0..30 and
several precisions, for zero, the smallest step of either sign and large values, through each writer of text:
``dump``'s JSON Lines (the compiled renderer from the row images, the compiled renderer from decoded values, the
pure-Python renderer), the text format, :func:`json_value`, and the rows encoder of replicate and snapshot.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from mybinlog.protocol import _format
from mybinlog.protocol._accel import jsonl_speedups
from mybinlog.protocol._constants import ColumnType, EventType
from tests.builders import WIDE, encode_decimal, event, mysql_decoder, rows_body, table_map_body


def _fixed(unscaled: int, scale: int) -> str:
    """The expected text: the digits with exactly ``scale`` decimals."""
    sign = "-" if unscaled < 0 else ""
    digits = str(abs(unscaled)).rjust(scale + 1, "0")
    return sign + (digits[:-scale] + "." + digits[-scale:] if scale else digits)


def _cases() -> list[tuple[int, int, int]]:
    cases = []
    for scale in range(31):
        for precision in sorted({max(scale, 1), scale + 1, scale + 9, min(65, scale + 20), 65}):
            if precision > 65 or precision < scale or precision == 0:
                continue
            top = 10**precision - 1
            for unscaled in (0, 1, -1, 8, -80, 10 ** min(scale, precision - 1), top, -top, 123456789 % (top + 1)):
                if abs(unscaled) <= top:
                    cases.append((precision, scale, unscaled))
    return cases


CASES = _cases()


def _events(precision: int, scale: int, unscaled: list[int]) -> list[bytes]:
    body = table_map_body(6, "db", "d", [ColumnType.LONG, ColumnType.NEWDECIMAL], [0, precision << 8 | scale], b"\x03")
    rows = b"".join(
        b"\x00"
        + n.to_bytes(4, "little", signed=True)
        + encode_decimal(Decimal(u).scaleb(-scale, WIDE), precision, scale)
        for n, u in enumerate(unscaled)
    )
    return [
        event(EventType.TABLE_MAP_EVENT, body, crc=True),
        event(EventType.WRITE_ROWS_EVENT, rows_body(6, 2, b"\x03", rows), crc=True),
    ]


def _by_precision_scale() -> dict[tuple[int, int], list[int]]:
    groups: dict[tuple[int, int], list[int]] = {}
    for precision, scale, unscaled in CASES:
        groups.setdefault((precision, scale), []).append(unscaled)
    return groups


GROUPS = sorted(_by_precision_scale().items())


def _decoded(precision: int, scale: int, unscaled: list[int]) -> tuple[object, object]:
    dec = mysql_decoder()
    table_raw, rows_raw = _events(precision, scale, unscaled)
    dec.decode(table_raw)
    return dec, dec.decode(rows_raw)


def _json_rows(text: str) -> list[str]:
    return [row[1] for row in json.loads(text)["rows"]]


@pytest.mark.parametrize(("layout", "unscaled"), GROUPS, ids=[f"{p},{s}" for (p, s), _ in GROUPS])
def test_json_lines_writes_decimals_in_fixed_notation(layout: tuple[int, int], unscaled: list[int]) -> None:
    precision, scale = layout
    want = [_fixed(u, scale) for u in unscaled]
    # the pure-Python renderer
    _, ev = _decoded(precision, scale, unscaled)
    assert _json_rows(_format._py_event_to_json(ev)) == want  # type: ignore[arg-type]
    assert [_format.json_value(row[1]) for row in ev.rows] == want  # type: ignore[attr-defined]
    assert [_format._text_value(row[1]) for row in ev.rows] == want  # type: ignore[attr-defined]
    if jsonl_speedups is None:
        return
    # the compiled renderer: straight from the row images (rows not decoded), then from the decoded values
    _, ev = _decoded(precision, scale, unscaled)
    assert ev._rows is None  # type: ignore[attr-defined]
    assert _json_rows(jsonl_speedups.event_to_json(ev)) == want
    _ = ev.rows  # type: ignore[attr-defined]
    assert _json_rows(jsonl_speedups.event_to_json(ev)) == want


def test_decimals_inside_json_documents_are_fixed_too() -> None:
    assert _format._json_doc({"a": [Decimal("0E-9"), Decimal("-8.0E-8")]}) == {"a": ["0.000000000", "-0.000000080"]}


@pytest.mark.parametrize("caps", ["18.16.1", "26.9.2.1"])
@pytest.mark.parametrize(("layout", "unscaled"), GROUPS[::5], ids=[f"{p},{s}" for (p, s), _ in GROUPS[::5]])
def test_the_rows_encoders_write_decimals_in_fixed_notation(
    layout: tuple[int, int], unscaled: list[int], caps: str
) -> None:
    """replicate and snapshot's encoders (per value, per row, the compiled TsvRows) write the decoder's Decimals
    with the column's scale (on 18.16, DECIMAL(p > 38) is a String of the same text); zero has no sign."""
    from mybinlog.clickhouse import Capabilities
    from mybinlog.clickhouse import types as _types
    from mybinlog.clickhouse.types import _encoders
    from mybinlog.ddl import parse_create_table

    precision, scale = layout
    _, ev = _decoded(precision, scale, unscaled)
    values = [row[1] for row in ev.rows]  # type: ignore[attr-defined]
    want = [_fixed(u, scale) for u in unscaled]
    column = parse_create_table(f"CREATE TABLE t (d DECIMAL({precision},{scale}))", "db").columns[0]
    capabilities = Capabilities.from_version(caps)
    assert [_types.make_encoder(column, capabilities)(v) for v in values] == want
    assert _encoders.make_rows_encoder([column], capabilities)([(v,) for v in values]) == want
    saved = _encoders.speedups
    _encoders.speedups = None
    try:
        assert _encoders.make_rows_encoder([column], capabilities)([(v,) for v in values]) == want
    finally:
        _encoders.speedups = saved


def test_a_decimal_in_a_text_column_is_written_in_fixed_notation() -> None:
    from mybinlog.clickhouse import Capabilities
    from mybinlog.clickhouse import types as _types
    from mybinlog.ddl import parse_create_table

    column = parse_create_table("CREATE TABLE t (s VARCHAR(40))", "db").columns[0]
    encode = _types.make_encoder(column, Capabilities.from_version("26.9.2.1"))
    assert [encode(Decimal(t)) for t in ("0E-9", "-8.0E-8", "12.50")] == ["0.000000000", "-0.000000080", "12.50"]
