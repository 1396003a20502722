"""Conformance of mybinlog.kafka's Debezium messages with Debezium's documented examples (tests/data/debezium/)."""

from __future__ import annotations

import base64
import json
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from mybinlog.ddl import parse_create_table
from mybinlog.errors import ConfigurationError
from mybinlog.kafka import SourceInfo, TableEncoder, encode_decimal, schema_change, topic_name
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
