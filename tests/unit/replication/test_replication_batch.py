"""The replicator's bulk buffers (replication/_batch.py) against the row-at-a-time rules they replaced: the same net
change per key, the same counters, the same TabSeparated payload; and the rows encoder against the row encoder."""

from __future__ import annotations

import datetime as dt
import decimal
import random
from types import SimpleNamespace
from typing import Any

import pytest

from mybinlog.clickhouse import Capabilities
from mybinlog.clickhouse.types import make_row_encoder, make_rows_encoder
from mybinlog.ddl import parse_create_table
from mybinlog.errors import TypeMappingError
from mybinlog.protocol._events import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent
from mybinlog.replication._batch import add_transaction, rows_entry, table_payload
from mybinlog.replication._clickhouse import ClickHouseTable as _Table

NEW = Capabilities.from_version("25.1")
OLD = Capabilities.from_version("18.16")
ENGINES = ("replacing", "replacing_is_deleted", "collapsing")


# -- the reference: one change per row, as the replicator did it before ---------------------------------------------


def _reference(
    txns: list[tuple[int, list[tuple[Any, str | None, str | None, bool]]]],
) -> tuple[dict[Any, list[Any]], int, int]:
    """(key -> [first_before, after, last, version], rows, bytes) from (version, [(key, before, after, existed)])."""
    changes: dict[Any, list[Any]] = {}
    rows = size = 0
    for version, items in txns:
        for key, before, after, existed in items:
            image = after if after is not None else before
            assert image is not None
            change = changes.get(key)
            if change is None:
                changes[key] = [before if existed else None, after, image, version]
                rows += 1
                size += len(image)
            else:
                change[1:] = [after, image, version]
    return changes, rows, size


def _reference_payload(changes: list[list[Any]], engine: str) -> bytes:
    lines = []
    for first_before, after, last, version in changes:
        if engine == "collapsing":
            if first_before is not None:
                lines.append(f"{first_before}\t-1\t{version}\n")
            if after is not None:
                lines.append(f"{after}\t1\t{version}\n")
            continue
        sign, image = (1, after) if after is not None else (-1, last)
        extra = f"\t{1 if sign < 0 else 0}" if engine == "replacing_is_deleted" else ""
        lines.append(f"{image}\t{sign}\t{version}{extra}\n")
    return "".join(lines).encode("utf-8", "surrogateescape")


def _random_txns(rng: random.Random, keyless: bool) -> tuple[list[Any], list[Any]]:
    """Random transactions of random events over a few keys: (entries per transaction for add_transaction, the same
    as (key, before, after, existed) items for the reference)."""
    table = SimpleNamespace(name="t")
    entries_by_txn: list[Any] = []
    reference: list[Any] = []
    for t in range(rng.randint(1, 6)):
        version = 100 + t * 7
        entries: list[Any] = []
        items: list[Any] = []
        for _ in range(rng.randint(1, 4)):
            kind = rng.choice(("write", "delete", "update"))
            n = rng.randint(1, 5)

            def image(key: int) -> str:
                return f"{key}\tv{rng.randint(0, 2)}"  # equal images happen (keyless tables: equal rows)

            if kind in ("write", "delete"):
                keys = [rng.randint(0, 6) for _ in range(n)]
                images = [image(k) for k in keys]
                ks: list[Any] = images if keyless else keys
                if kind == "write":
                    entries.append((table, None, None, ks, images))
                    items += [(k, None, x, False) for k, x in zip(ks, images, strict=True)]
                else:
                    entries.append((table, ks, images, None, None))
                    items += [(k, x, None, True) for k, x in zip(ks, images, strict=True)]
                continue
            kb = [rng.randint(0, 6) for _ in range(n)]
            ka = [k if rng.random() < 0.7 else rng.randint(0, 6) for k in kb]
            b, a = [image(k) for k in kb], [image(k) for k in ka]
            if keyless:
                kb, ka = b, a  # type: ignore[assignment]
            entries.append((table, kb, b, ka, a))
            for k1, x1, k2, x2 in zip(kb, b, ka, a, strict=True):
                if k1 == k2:
                    items.append((k2, x1, x2, True))
                else:
                    items += [(k1, x1, None, True), (k2, None, x2, False)]
        entries_by_txn.append((version, entries))
        reference.append((version, items))
    return entries_by_txn, reference


@pytest.mark.parametrize("keyless", [False, True])
def test_add_transaction_matches_the_row_at_a_time_rules(keyless: bool) -> None:
    rng = random.Random(7 + keyless)
    for _ in range(400):
        entries_by_txn, reference = _random_txns(rng, keyless)
        batch: dict[str, dict[Any, Any]] = {}
        rows = size = 0
        for version, entries in entries_by_txn:
            r, s = add_transaction(batch, entries, version)
            rows += r
            size += s
        want, want_rows, want_size = _reference(reference)
        got = batch.get("t", {})
        assert list(got) == list(want)  # the same keys in the same order
        assert [list(c) for c in got.values()] == list(want.values())
        assert (rows, size) == (want_rows, want_size)
        for engine in ENGINES:
            data, lines = table_payload(got.values(), engine)
            assert data == _reference_payload(list(want.values()), engine)
            assert lines == data.count(b"\n")


def test_payload_groups_versions_and_keeps_bytes() -> None:
    changes = [(None, "a\udcff", "a\udcff", 5), ("b0", None, "b0", 5), (None, "c", "c", 6)]
    data, lines = table_payload(changes, "replacing_is_deleted")
    assert data == b"a\xff\t1\t5\t0\nb0\t-1\t5\t1\nc\t1\t6\t0\n"
    assert lines == 3
    assert table_payload([], "collapsing") == (b"", 0)


# -- the rows encoder ------------------------------------------------------------------------------------------------

DDL = """CREATE TABLE t (
    id BIGINT PRIMARY KEY, a INT UNSIGNED NOT NULL, b VARCHAR(32) NOT NULL, c DECIMAL(12, 2), d DATETIME(3),
    e DOUBLE, f CHAR(4), g TIMESTAMP(6) NULL, h DATE
)"""


def _values(rng: random.Random, i: int) -> tuple[Any, ...]:
    return (
        i,
        rng.choice([0, 7, 2**32 - 1, -1]),
        rng.choice(["plain", "tab\there", "back\\slash", "new\nline", ""]),
        rng.choice([None, decimal.Decimal("12.30"), decimal.Decimal("-0.00"), decimal.Decimal("1E-7"), "3.5"]),
        rng.choice(
            [
                None,
                dt.datetime(2024, 1, 2, 3, 4, 5, 678900),
                dt.datetime(2024, 1, 2, 3, 4, 5),
                dt.datetime(1000, 1, 1),
                dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
                dt.datetime(2020, 2, 29, 12, tzinfo=dt.timezone(dt.timedelta(hours=2))),
                "0000-00-00 00:00:00",
            ]
        ),
        rng.choice([None, 1.5, 1e300, -0.0, 3]),
        rng.choice([None, "ab  ", "x"]),
        rng.choice([None, dt.datetime(2021, 5, 6, 7, 8, 9, 123456, tzinfo=dt.UTC), dt.datetime(2021, 5, 6)]),
        rng.choice([None, dt.date(2020, 1, 1), dt.date(1, 1, 1)]),
    )


@pytest.mark.parametrize("caps", [NEW, OLD], ids=["25.1", "18.16"])
@pytest.mark.parametrize("positions", [None, [8, 0, 1, 2, 3, 4, 5, 6, 7], [0, 1, -1, 3, 4, 5, 6, 7, 8]])
def test_rows_encoder_matches_the_row_encoder(caps: Capabilities, positions: list[int] | None) -> None:
    columns = parse_create_table(DDL, "db").columns
    rng = random.Random(3)
    rows = [_values(rng, i) for i in range(500)]
    if positions is not None:  # the values where the layout says they are (a column left out: not in the row)
        where = {p: i for i, p in enumerate(positions) if p >= 0}
        rows = [tuple(r[where[p]] if p in where else None for p in range(max(positions) + 1)) for r in rows]
    row_encoder = make_row_encoder(columns, caps, positions=positions)
    assert make_rows_encoder(columns, caps, positions=positions)(rows) == [row_encoder(r) for r in rows]


def test_rows_encoder_names_the_column_of_a_bad_value() -> None:
    columns = parse_create_table("CREATE TABLE t (a INT, `when` DATE)", "db").columns
    encode = make_rows_encoder(columns, NEW)
    assert encode([(1, dt.date(2020, 1, 2)), (2, None)]) == ["1\t2020-01-02", "2\t\\N"]
    with pytest.raises(TypeMappingError, match="`when`"):
        encode([(1, dt.date(2020, 1, 2)), (2, 3.5)])
    with pytest.raises(TypeMappingError, match="a row has 1 values"):
        encode([(1,)])


# -- rows events -> transaction entries ------------------------------------------------------------------------------


def _event(cls: type, rows: list[Any]) -> Any:
    event = cls.__new__(cls)
    event.table = SimpleNamespace(column_names=("id", "k2", "v"), schema="db", name="t")
    event._rows = rows
    return event


@pytest.mark.parametrize(
    ("ddl", "key"),
    [
        ("CREATE TABLE t (id INT PRIMARY KEY, k2 INT, v TEXT)", lambda r: r[0]),
        ("CREATE TABLE t (id INT, k2 INT, v TEXT, PRIMARY KEY (id, k2))", lambda r: (r[0], r[1])),
        ("CREATE TABLE t (id INT, k2 INT, v TEXT)", None),
    ],
    ids=["one-column key", "two-column key", "no key"],
)
def test_rows_entry(ddl: str, key: Any) -> None:
    repl = SimpleNamespace(
        target=SimpleNamespace(capabilities=NEW),
        settings=SimpleNamespace(engine="replacing"),
        flavor="mariadb",
        target_database="db",
        database="db",
    )
    table = _Table(repl, parse_create_table(ddl, "db"))  # type: ignore[arg-type]
    r1, r2 = (1, 2, "a"), (3, 4, "b\tc")
    i1, i2 = "1\t2\ta", "3\t4\tb\\tc"
    keys = (lambda *rows: [key(r) for r in rows]) if key is not None else (lambda *rows: None)
    write = rows_entry(table, _event(WriteRowsEvent, [r1, r2]))
    assert write == (table, None, None, keys(r1, r2) or [i1, i2], [i1, i2])
    delete = rows_entry(table, _event(DeleteRowsEvent, [r1]))
    assert delete == (table, keys(r1) or [i1], [i1], None, None)
    update = rows_entry(table, _event(UpdateRowsEvent, [(r1, r2)]))
    assert update == (table, keys(r1) or [i1], [i1], keys(r2) or [i2], [i2])
    assert rows_entry(table, _event(WriteRowsEvent, [])) is None


def test_rows_entry_rebuilds_partial_json_documents() -> None:
    """binlog_row_value_options=PARTIAL_JSON: the after image's diffs applied to the before image's document (an
    empty list: the column left as it was); before, the diffs reached the encoder ("cannot render JsonDiff")."""
    from mybinlog.protocol._events import PartialUpdateRowsEvent
    from mybinlog.protocol._jsonb import JsonDiff, JsonDiffs

    repl = SimpleNamespace(
        target=SimpleNamespace(capabilities=NEW),
        settings=SimpleNamespace(engine="replacing"),
        flavor="mysql",
        target_database="db",
        database="db",
    )
    table = _Table(repl, parse_create_table("CREATE TABLE t (id INT PRIMARY KEY, j JSON, k JSON)", "db"))  # type: ignore[arg-type]
    event = PartialUpdateRowsEvent.__new__(PartialUpdateRowsEvent)
    event.table = SimpleNamespace(
        column_names=("id", "j", "k"),
        columns=[SimpleNamespace(type_name=t) for t in ("int", "json", "json")],
        schema="db",
        name="t",
    )
    before = (1, {"a": [1, 2], "s": "x"}, [])
    diffs = JsonDiffs(
        [JsonDiff("REPLACE", "$.a[1]", 9), JsonDiff("REMOVE", "$.s", None), JsonDiff("INSERT", "$.n", "ü")]
    )
    event._rows = [(before, (1, diffs, JsonDiffs()))]
    entry = rows_entry(table, event)
    assert entry is not None
    assert entry[4] == ['1\t{"a": [1, 9], "n": "ü"}\t[]']
    # a column written whole with the document [] (its partial bit clear) is that document, not "unchanged"
    event._rows = [((2, {"x": 1}, {"k": 1}), (2, [], JsonDiffs()))]
    entry = rows_entry(table, event)
    assert entry is not None
    assert entry[4] == ['2\t[]\t{"k": 1}']
    assert before == (1, {"a": [1, 2], "s": "x"}, [])  # the before image is left alone
