"""Conformance of mybinlog.kafka's Debezium messages with Debezium's documented examples (tests/data/debezium/)."""

from __future__ import annotations

import base64
import json
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from mybinlog.ddl import parse_create_table
from mybinlog.errors import ConfigurationError
from mybinlog.kafka import SourceInfo, TableEncoder, encode_decimal, schema_change, topic_name, truncate
from mybinlog.protocol._constants import MISSING

DATA = Path(__file__).parents[2] / "data" / "debezium"
# the fields of `source` that depend on the position and the table, compared exactly
SOURCE_FIELDS = ("connector", "name", "db", "table", "server_id", "gtid", "file", "pos", "row")


def _load(name: str) -> dict[str, Any]:
    return dict(json.loads((DATA / name).read_text()))


def _source(spec: dict[str, Any]) -> SourceInfo:
    return SourceInfo(**spec)


def _check_source(ours: dict[str, Any], documented: dict[str, Any]) -> None:
    assert set(documented) <= set(ours), f"fields Debezium writes that we do not: {set(documented) - set(ours)}"
    for name in SOURCE_FIELDS:
        assert ours[name] == documented[name], name
    # Debezium 2.x writes snapshot as a string enum ("true", "last", "false"); the row examples print a boolean
    assert ours["snapshot"] == str(documented["snapshot"]).lower()


@pytest.mark.parametrize("event", _load("customers.json")["events"], ids=lambda e: e["name"])
def test_documented_change_events(event: dict[str, Any]) -> None:
    fixture = _load("customers.json")
    encoder = TableEncoder(parse_create_table(fixture["ddl"], fixture["database"]))
    messages = encoder.change(
        event["op"], event["before_row"], event["after_row"], _source(event["source"]), event["payload"]["ts_ms"]
    )
    key = json.dumps(event["key"], separators=(",", ":")).encode()
    assert messages[0].key == key
    assert messages[0].value is not None
    value = json.loads(messages[0].value)
    payload = event["payload"]
    for name in ("before", "after", "op", "ts_ms"):
        assert value[name] == payload[name], name
    assert value["transaction"] is None
    _check_source(value["source"], payload["source"])
    if event["tombstone"]:
        assert len(messages) == 2
        assert messages[1].key == key
        assert messages[1].value is None
    else:
        assert len(messages) == 1


def test_tombstones_can_be_turned_off() -> None:
    fixture = _load("customers.json")
    encoder = TableEncoder(parse_create_table(fixture["ddl"], "inventory"), tombstones=False)
    event = fixture["events"][2]
    assert len(encoder.change("d", event["before_row"], None, _source(event["source"]), 1)) == 1


def test_primary_key_update_is_delete_tombstone_create() -> None:
    fixture = _load("customers.json")
    encoder = TableEncoder(parse_create_table(fixture["ddl"], "inventory"))
    source = _source(fixture["events"][1]["source"])
    deleted, tombstone, created = encoder.change("u", (1, "a", "b", "c"), (2, "a", "b", "c"), source, 1)
    assert (deleted.key, created.key, tombstone.key) == (b'{"id":1}', b'{"id":2}', b'{"id":1}')
    assert tombstone.value is None
    assert deleted.headers == (("__debezium.newkey", b'{"id":2}'),)
    assert created.headers == (("__debezium.oldkey", b'{"id":1}'),)
    assert deleted.value is not None
    assert created.value is not None
    assert json.loads(deleted.value)["op"] == "d"
    assert json.loads(created.value)["op"] == "c"


def test_documented_schema_change() -> None:
    fixture = _load("schema_change.json")
    payload = fixture["payload"]
    table = parse_create_table(fixture["ddl_after"], "inventory")
    message = schema_change(_source(fixture["source"]), "inventory", payload["ddl"], table=table, change="ALTER")
    assert message.key == b'{"databaseName":"inventory"}'
    assert message.value is not None
    value = json.loads(message.value)
    _check_source(value["source"], payload["source"])
    for name in ("databaseName", "schemaName", "ddl"):
        assert value[name] == payload[name]
    (ours,) = value["tableChanges"]
    (theirs,) = payload["tableChanges"]
    assert (ours["type"], ours["id"]) == (theirs["type"], theirs["id"])
    for name in ("defaultCharsetName", "primaryKeyColumnNames"):
        assert ours["table"][name] == theirs["table"][name]
    assert ours["table"]["columns"] == theirs["table"]["columns"]


_NAMES = {"datetime": datetime, "date": date, "timedelta": timedelta, "timezone": timezone, "Decimal": Decimal}


@pytest.mark.parametrize("case", _load("types.json")["cases"], ids=lambda c: c["column"])
def test_documented_value_types(case: dict[str, Any]) -> None:
    table = parse_create_table(f"CREATE TABLE t (id INT PRIMARY KEY, {case['column']})", "db")
    value = eval(case["value"], dict(_NAMES))  # the fixture's Python literal of a decoded value
    row = TableEncoder(table).row((1, value))
    assert row["c"] == case["debezium"], case["doc"]
    assert TableEncoder(table).row((1, None))["c"] is None


def test_decimal_bytes_match_java_biginteger() -> None:
    for unscaled in (0, 1, -1, 127, 128, -128, -129, 255, 256, 2**63, -(2**63), 10**40):
        raw = base64.b64decode(encode_decimal(unscaled, 0))
        assert int.from_bytes(raw, "big", signed=True) == unscaled
        assert len(raw) == (unscaled.bit_length() if unscaled >= 0 else (~unscaled).bit_length()) // 8 + 1
    assert encode_decimal(Decimal("1.5"), 3) == encode_decimal(1500, 0)


def test_missing_columns_are_left_out_and_keyless_tables_have_no_key() -> None:
    table = parse_create_table("CREATE TABLE t (a INT, b INT)", "db")
    encoder = TableEncoder(table)
    assert encoder.row((1, MISSING)) == {"a": 1}
    (message,) = encoder.change("c", None, (1, 2), SourceInfo(name="p", db="db", table="t"), 0)
    assert message.key is None
    assert len(encoder.change("d", (1, 2), None, SourceInfo(name="p", db="db", table="t"), 0)) == 1  # no tombstone


def test_topic_names() -> None:
    assert topic_name("shop", "inventory", "customers") == "shop.inventory.customers"
    assert topic_name("shop", "db", "t", "cdc_{table}") == "cdc_t"
    assert topic_name("shop", "d b", "täble") == "shop.d_b.t_ble"
    with pytest.raises(ConfigurationError):
        topic_name("", "", "", "{prefix}")


# -- the fast encoder against a straightforward reference ---------------------------------------------------------
# TableEncoder assembles messages as JSON text from pre-encoded parts; the reference builds the objects
# (TableEncoder.row, SourceInfo.as_json) and json.dumps them: every message must be the same bytes.

_REF_DUMPS = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=True).encode


def _reference(
    encoder: TableEncoder, op: str, before: Any, after: Any, source: SourceInfo, ts_ms: int
) -> list[tuple[bytes | None, bytes | None, tuple[tuple[str, bytes], ...]]]:
    def key(values: Any) -> bytes | None:
        found = encoder.key_json(values)
        return None if found is None else _REF_DUMPS(found).encode()

    def value(op: str, before: Any, after: Any) -> bytes:
        return _REF_DUMPS(
            {
                "before": None if before is None else encoder.row(before),
                "after": None if after is None else encoder.row(after),
                "source": source.as_json(),
                "op": op,
                "ts_ms": ts_ms,
                "transaction": None,
            }
        ).encode()

    if op in ("c", "r"):
        return [(key(after), value(op, None, after), ())]
    if op == "d":
        out = [(key(before), value("d", before, None), ())]
        return out + ([(out[0][0], None, ())] if encoder.tombstones and out[0][0] is not None else [])
    old, new = key(before), key(after)
    if old == new:
        return [(new, value("u", before, after), ())]
    assert old is not None
    assert new is not None
    tombstone = [(old, None, ())] if encoder.tombstones else []
    return [
        (old, value("d", before, None), (("__debezium.newkey", new),)),
        *tombstone,
        (new, value("c", None, after), (("__debezium.oldkey", old),)),
    ]


def _same(encoder: TableEncoder, op: str, before: Any, after: Any, source: SourceInfo, ts_ms: int = 17) -> None:
    ours = [tuple(m) for m in encoder.change(op, before, after, source, ts_ms)]  # type: ignore[arg-type]
    assert ours == _reference(encoder, op, before, after, source, ts_ms)
    # the sink's form: row images as mappings, the source block cut once per transaction
    names = encoder.names
    as_map = [None if v is None else dict(zip(names, v, strict=False)) for v in (before, after)]
    sink = encoder.encode(op, as_map[0], as_map[1], source.parts(), source.row, ts_ms)  # type: ignore[arg-type]
    assert [tuple(m) for m in sink] == ours


_SOURCES = [
    SourceInfo(name="p", db="db", table="t"),
    SourceInfo(
        name='q"ü',
        db="d\\b",
        table="t\n",
        server_id=7,
        file="bin.000001",
        pos=4,
        gtid="0-1-9",
        ts_ms=1_700_000_000_000,
        snapshot="true",
        row=3,
        thread=12,
        query="INSERT 'é'",
    ),
]
# values beyond the fixture's, per type: what escapes, rounds or wraps differently
_MORE: dict[str, list[Any]] = {
    "c DOUBLE": [float("nan"), float("inf"), -float("inf"), 1e16, -0.0, 5e-324, 2],
    "c FLOAT": [float("nan"), 3.4028234663852886e38, 1e-45],
    "c VARCHAR(10)": ['"\\\n\t\x00\u2028😀', b"bytes \xe9"],
    "c TEXT": ["", "é" * 3],
    "c BIGINT UNSIGNED": [2**63, 2**63 - 1, 0],
    "c DECIMAL(10,2)": [Decimal("-0.01"), Decimal("99999999.99"), 0],
    "c JSON": ['{"a":1}', None, [1, "x", {"k": None}]],
    "c ENUM('a','b')": [1, 0],
    "c SET('a','b','c')": [5, 0, "a,c"],
    "c BIT(1)": [0],
    "c DATETIME": [datetime(1969, 12, 31, 23, 59, 59, 999999), datetime(2020, 1, 1, tzinfo=UTC), "0000-00-00"],
    "c DATETIME(6)": [datetime(1, 1, 1), datetime(2020, 1, 1, 0, 0, 0, 1, tzinfo=UTC), "0000-00-00"],
}


@pytest.mark.parametrize("case", _load("types.json")["cases"], ids=lambda c: c["column"])
@pytest.mark.parametrize("bigint_unsigned", ["long", "precise"])
def test_fast_encoder_matches_reference(case: dict[str, Any], bigint_unsigned: str) -> None:
    value = eval(case["value"], dict(_NAMES))
    for column in (case["column"], case["column"].replace("c ", "k ", 1)):
        keyed = column.startswith("k ")  # the type also as (part of) the primary key
        ddl = f"CREATE TABLE t (id INT, {column}, PRIMARY KEY (id{', k' if keyed else ''}))"
        encoder = TableEncoder(parse_create_table(ddl, "db"), bigint_unsigned=bigint_unsigned)
        for v in [value, *_MORE.get(case["column"], []), None]:
            for source in _SOURCES:
                _same(encoder, "c", None, (1, v), source)
                _same(encoder, "r", None, (1, v), source)
                _same(encoder, "d", (1, v), None, source)
                _same(encoder, "u", (1, v), (1, v), source)
                _same(encoder, "u", (1, v), (2, v), source)  # a primary key update: three messages


def test_fast_encoder_matches_reference_for_wide_rows() -> None:
    ddl = (
        'CREATE TABLE `wé"ird` (`a b` BIGINT, `é` VARCHAR(20), `q"` DECIMAL(12,2), d DATETIME(3), e DOUBLE, '
        "f TINYINT, g JSON, h VARBINARY(8), PRIMARY KEY (`é`, `a b`))"
    )
    row = (1, 'x"y', Decimal("-12.34"), datetime(2020, 1, 2, 3, 4, 5, 6000), 1.5, -1, {"k": [1]}, b"\x00")
    for tombstones in (True, False):
        encoder = TableEncoder(parse_create_table(ddl, "db"), tombstones=tombstones)
        for source in _SOURCES:
            _same(encoder, "c", None, row, source)
            _same(encoder, "d", row, None, source)
            _same(encoder, "u", row, (2, *row[1:]), source)
            _same(encoder, "u", row, (*row[:2], None, *row[3:]), source)
            _same(encoder, "c", None, (*row[:3], MISSING, MISSING, *row[5:]), source)  # a minimal image
            _same(encoder, "c", None, row[:4], source)  # a shorter image


def test_truncate_message() -> None:
    source = SourceInfo(name="p", db="db", table="t", gtid="3E11FA47-71CA-11E1-9E33-C80AA9429562:23")
    message = truncate(source, 5)
    assert message.key is None
    assert message.value is not None
    assert json.loads(message.value) == {
        "before": None,
        "after": None,
        "source": source.as_json(),
        "op": "t",
        "ts_ms": 5,
        "transaction": None,
    }
    assert message.value == _REF_DUMPS(json.loads(message.value)).encode()
