"""Value-level conformance vectors from the external binlog corpus (vectors.jsonl).

Covers every record of kind ``decimal``, ``time`` and ``json_binary``, and the value-scoped ``other`` records
(unsigned integers, packed integers). Each record is one test, named by its id and source test, so a failure
points at the vector. The remaining ``other`` records are whole events or event bodies (heartbeat, INTVAR,
GTID_LIST, STOP, XID, ROTATE headers): they belong to the event decoder's tests.

The corpus is found through $MYBINLOG_CORPUS, defaulting to ``<repo>/../shared/testdata/binlog-corpus``. When
it is missing the tests fail under CI=true and skip otherwise.
"""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path
from typing import Any

import pytest

from mybinlog.errors import DecodeError
from mybinlog.protocol._jsonb import decode_jsonb, decode_opaque, read_varlen, render_json_mysql_text
from mybinlog.protocol._values import (
    decode_datetime2,
    decode_decimal,
    decode_integer,
    decode_packed_int,
    decode_time2,
    format_time_text,
)

pytestmark = pytest.mark.corpus

REPO = Path(__file__).resolve().parents[3]
CORPUS = Path(os.environ.get("MYBINLOG_CORPUS") or REPO.parent / "shared" / "testdata" / "binlog-corpus")
VECTORS = CORPUS / "vectors.jsonl"

VALUE_KINDS = {"decimal", "time", "json_binary"}
VALUE_SCOPED_OTHER = {"value", "packed_integer"}
# counts in the corpus described by SOURCES.md: decimal 199, time 26, json_binary 166, value-level other 25 +
# 3
EXPECTED_COUNT = 199 + 26 + 166 + 25 + 3


def _selected(record: dict[str, Any]) -> bool:
    if record["kind"] in VALUE_KINDS:
        return True
    return record["kind"] == "other" and record["bytes_scope"] in VALUE_SCOPED_OTHER


def _load() -> list[dict[str, Any]]:
    if not VECTORS.is_file():
        return []
    with VECTORS.open(encoding="utf-8") as fh:
        return [r for r in map(json.loads, fh) if _selected(r)]


RECORDS = _load()


def _missing_corpus() -> None:
    message = f"binlog corpus not found at {CORPUS} (set MYBINLOG_CORPUS to its directory)"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def _record_id(record: dict[str, Any]) -> str:
    return f"{record['id']}-{record['source'].split('::', 1)[-1]}"


def test_all_value_records_are_covered() -> None:
    if not RECORDS:
        _missing_corpus()
    assert len(RECORDS) == EXPECTED_COUNT
    assert len({r["id"] for r in RECORDS}) == EXPECTED_COUNT


# ----------------------------------------------------------------------------------------------------
# Checks per kind of vector
# ----------------------------------------------------------------------------------------------------

INTEGER_TYPES = {"TINY": 1, "SHORT": 2, "INT24": 9, "LONG": 3, "LONGLONG": 8}


def _datetime_text(value: datetime.datetime | str, fsp: int) -> str:
    if isinstance(value, str):
        return value
    text = f"{value.year:04d}-{value.month:02d}-{value.day:02d} {value:%H:%M:%S}"
    return f"{text}.{value.microsecond:06d}"[: 20 + fsp] if fsp else text


def _check_decimal(record: dict[str, Any], data: bytes) -> None:
    params, expected = record["params"], record["expected"]
    value, pos = decode_decimal(data, 0, params["precision"], params["scale"])
    assert format(value, "f") == expected["value"]
    assert value.as_tuple().exponent == -params["scale"]
    if "consumed_bytes" in expected:
        assert pos == expected["consumed_bytes"]


def _check_time(record: dict[str, Any], data: bytes) -> None:
    params, expected = record["params"], record["expected"]
    fsp = params["fsp"]
    if params["type"] == "TIME2":
        value, pos = decode_time2(data, 0, fsp)
        assert format_time_text(value, fsp) == expected["value"]
    else:
        assert params["type"] == "DATETIME2"
        dt, pos = decode_datetime2(data, 0, fsp)
        assert _datetime_text(dt, fsp) == expected["value"]
        if expected["parse_time_yields_time_object"]:
            # go-mysql gives a time object only for ordinary dates; those must never come back as text
            assert isinstance(dt, datetime.datetime)
        else:
            # go-mysql falls back to text for year < 1000 too; only zero month/day/year must be text here
            ymd = expected["value"][:10]
            assert isinstance(dt, str) == any(part.strip("0") == "" for part in ymd.split("-"))
    assert pos == len(data)


def _check_other(record: dict[str, Any], data: bytes) -> None:
    expected = record["expected"]
    if record["bytes_scope"] == "packed_integer":
        value, pos = decode_packed_int(data, 0)
        assert value == expected["value"]
        assert pos == len(data)
        return
    params = record["params"]
    assert params["unsigned"] is True
    type_code = INTEGER_TYPES[params["type"]]
    assert record["column_types"] == [type_code]
    number, pos = decode_integer(data, 0, type_code, unsigned=True)
    assert number == expected["value"]
    assert pos == expected["consumed_bytes"]


def _strip_zero_fraction(text: str) -> str:
    return text.removesuffix(".000000")


def _check_json(record: dict[str, Any], data: bytes) -> None:
    scope, expected = record["bytes_scope"], record["expected"]
    if scope == "jsonb_value":
        if expected.get("error"):
            # (go-mysql's "errors ignored -> null" mode has no counterpart: malformed JSON is always an error)
            with pytest.raises(DecodeError):
                decode_jsonb(data)
            return
        text = render_json_mysql_text(decode_jsonb(data), compact=True)
        if expected.get("mysql_text_not_base64"):
            assert "base64:" not in text
        else:
            assert text == expected["mysql_text"]
    elif scope == "jsonb_scalar_payload":
        value = decode_jsonb(bytes([record["params"]["jsonb_type"]]) + data)
        assert render_json_mysql_text(value) == expected["json_with_trailing_zero"]
    elif scope == "jsonb_varlen":
        assert read_varlen(data, 0) == (expected["value"], expected["consumed_bytes"])
    elif scope == "jsonb_opaque_payload":
        type_code = record["params"]["opaque_type"]
        value = decode_opaque(type_code, data)
        # the same payload wrapped in a whole document decodes identically
        assert decode_jsonb(bytes([0x0F, type_code, len(data)]) + data) == value
        if "time" in expected:
            assert isinstance(value, datetime.timedelta)
            assert format_time_text(value) == expected["time"]
        else:
            # python-mysql-replication prints a zero datetime without the fraction MySQL keeps in JSON
            assert isinstance(value, datetime.datetime | str)
            text = value if isinstance(value, str) else _datetime_text(value, 6)
            assert _strip_zero_fraction(text) == expected["datetime"]
    else:
        pytest.fail(f"record {record['id']} has bytes_scope {scope!r}, which this test does not know")


CHECKS = {"decimal": _check_decimal, "time": _check_time, "json_binary": _check_json, "other": _check_other}


PARAMS: list[dict[str, Any] | None] = [*RECORDS] or [None]


@pytest.mark.parametrize("record", PARAMS, ids=[_record_id(r) for r in RECORDS] or ["corpus-missing"])
def test_vector(record: dict[str, Any] | None) -> None:
    if record is None:
        _missing_corpus()
        return
    data = bytes.fromhex(record["event_bytes_hex"])
    CHECKS[record["kind"]](record, data)
