"""``mybinlog verify``: the checksum/diff engine, the report, and the orchestration against fakes."""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import hashlib
import json
import math
import random
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mybinlog.cli import _verify as cli_verify
from mybinlog.clickhouse import Capabilities, tsv_unescape
from mybinlog.clickhouse._tables import clickhouse_type
from mybinlog.clickhouse.types import canonical, make_encoder
from mybinlog.ddl import parse_create_table
from mybinlog.errors import ConfigurationError, SourceError
from mybinlog.verification import (
    ColumnDifference,
    RowDifference,
    TableComparer,
    TableResult,
    VerifyReport,
    _canonical,
    _verifier,
    bucket_count,
    row_hash,
)
from tests.workload import ALL_TYPES_COLUMNS, all_types_ddl, extreme_rows, random_value


def _same(value: Any) -> str | None:
    return None if value is None else str(value)


def _comparer(columns: Sequence[str], key: Sequence[int], *, buckets: int = 64, **kw: Any) -> TableComparer:
    n = len(columns)
    return TableComparer(columns, key, [_same] * n, [_same] * n, buckets=buckets, **kw)


def _drill(c: TableComparer, source: list[tuple[Any, ...]], replica: list[tuple[Any, ...]]) -> list[RowDifference]:
    c.start_drill(c.differing_buckets())
    c.add_source(source)
    c.add_replica(replica)
    return c.differences()


# -- hashing ------------------------------------------------------------------------------------------------------


def test_row_hash_is_blake2b_of_the_repr_and_unambiguous() -> None:
    row = ("1", "a\tb", None)
    expected = int.from_bytes(hashlib.blake2b(repr(row).encode(), digest_size=8).digest(), "little")
    assert row_hash(row) == expected
    assert row_hash(("a\tb", None)) != row_hash(("a", "\tb"))
    assert row_hash(("a,b",)) != row_hash(("a", "b"))
    assert row_hash((None,)) != row_hash(("None",))
    assert row_hash((None,)) != row_hash(("",))
    assert row_hash(("\udcff",)) != row_hash(("\udcfe",))  # binary via surrogateescape hashes fine


def test_bucket_count_scales_with_rows_within_bounds() -> None:
    assert bucket_count(0) == 16
    assert bucket_count(1000) == 16
    assert bucket_count(64 * 1000) == 1024
    assert bucket_count(10**9) == 1 << 16
    for rows in (0, 5, 999, 12345, 10**6, 10**8):
        n = bucket_count(rows)
        assert n & (n - 1) == 0


# -- comparer -----------------------------------------------------------------------------------------------------


def test_equal_sets_in_any_order_and_batching() -> None:
    rows = [(i, f"name {i}", None if i % 3 else "x") for i in range(500)]
    shuffled = rows[:]
    random.Random(7).shuffle(shuffled)
    c = _comparer(("id", "name", "opt"), [0])
    c.add_source(rows[:100])
    c.add_source(rows[100:])
    for i in range(0, 500, 37):
        c.add_replica([tuple(map(_same, r)) for r in shuffled[i : i + 37]])
    assert c.differing_buckets() == []
    assert c.source_rows == c.replica_rows == 500
    assert c.source_checksum == c.replica_checksum
    assert c.source_checksum == sum(row_hash(tuple(map(_same, r))) for r in rows) % 2**64


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 50), st.text(max_size=5) | st.none()), max_size=40, unique_by=lambda r: r[0]),
    st.randoms(use_true_random=False),
    st.sampled_from(["change", "delete", "add", "duplicate"]),
)
def test_any_single_change_is_found(rows: list[tuple[int, str | None]], rnd: random.Random, change: str) -> None:
    replica = rows[:]
    rnd.shuffle(replica)
    c = _comparer(("id", "v"), [0], buckets=16)
    c.add_source(rows)
    if change == "add" or not replica:
        replica.append((1000, "new"))
        expected = RowDifference("extra", (("id", "1000"),))
    elif change == "change":
        k, v = replica[0]
        replica[0] = (k, (v or "") + "!")
        expected = RowDifference("changed", (("id", str(k)),), (ColumnDifference("v", v, (v or "") + "!"),))
    elif change == "delete":
        k, _ = replica.pop(0)
        expected = RowDifference("missing", (("id", str(k)),))
    else:
        k, v = replica[0]
        replica.append((k, v))
        expected = RowDifference("duplicate", (("id", str(k)),), count=2)
    c.add_replica(replica)
    assert len(c.differing_buckets()) == 1
    assert _drill(c, rows, replica) == [expected]


def test_checksum_is_duplicate_sensitive_without_key() -> None:
    rows = [("a", "1"), ("a", "1"), ("b", "2")]
    c = _comparer(("x", "y"), [])
    c.add_source(rows)
    c.add_replica([("a", "1"), ("b", "2"), ("b", "2")])
    assert c.source_rows == c.replica_rows == 3
    assert c.differing_buckets()
    diffs = _drill(c, rows, [("a", "1"), ("b", "2"), ("b", "2")])
    assert diffs == [
        RowDifference("missing", (("x", "a"), ("y", "1")), count=1),
        RowDifference("extra", (("x", "b"), ("y", "2")), count=1),
    ]


def test_multiset_equal_with_duplicates() -> None:
    rows = [("a", None), ("a", None), ("b", "2")]
    c = _comparer(("x", "y"), [])
    c.add_source(rows)
    c.add_replica(list(reversed(rows)))
    assert c.differing_buckets() == []


def test_changed_lists_only_the_differing_columns_and_sorts_keys_numerically() -> None:
    src = [(i, "a", "b", "c") for i in range(1, 20)]
    rep = [(i, "a", "B" if i in (2, 10) else "b", None if i == 10 else "c") for i in range(1, 20)]
    c = _comparer(("id", "p", "q", "r"), [0], buckets=1)
    c.add_source(src)
    c.add_replica(rep)
    diffs = _drill(c, src, rep)
    assert [d.key for d in diffs] == [(("id", "2"),), (("id", "10"),)]
    assert diffs[0].columns == (ColumnDifference("q", "b", "B"),)
    assert diffs[1].columns == (ColumnDifference("q", "b", "B"), ColumnDifference("r", "c", None))


def test_composite_key() -> None:
    src = [(1, "k", 1, "x"), (1, "k", 2, "y"), (2, "k", 1, "z")]
    rep = [(1, "k", 1, "x"), (2, "k", 1, "z"), (2, "k", 9, "w")]
    c = _comparer(("tenant", "k", "seq", "v"), [0, 1, 2], buckets=4)
    c.add_source(src)
    c.add_replica(rep)
    diffs = _drill(c, src, rep)
    assert [(d.kind, d.key) for d in diffs] == [
        ("missing", (("tenant", "1"), ("k", "k"), ("seq", "2"))),
        ("extra", (("tenant", "2"), ("k", "k"), ("seq", "9"))),
    ]


def _close(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return a is b
    return abs(float(a) - float(b)) <= 1e-9 * max(abs(float(a)), abs(float(b)))


def test_float_noise_is_not_a_difference_with_a_matcher() -> None:
    src = [(1, "0.1", "a"), (2, "0.30000000000000004", "b")]
    rep = [(1, "0.1", "a"), (2, "0.3", "b")]
    c = _comparer(("id", "f", "s"), [0], matchers=[None, _close, None])
    assert c.approximate
    c.add_source(src)
    c.add_replica(rep)
    assert c.differing_buckets()  # the hash sees it ...
    assert _drill(c, src, rep) == []  # ... the matcher does not
    # a real change next to float noise is still reported
    c2 = _comparer(("id", "f", "s"), [0], matchers=[None, _close, None])
    rep2 = [(1, "0.1", "a"), (2, "0.3", "B")]
    c2.add_source(src)
    c2.add_replica(rep2)
    assert _drill(c2, src, rep2) == [RowDifference("changed", (("id", "2"),), (ColumnDifference("s", "b", "B"),))]


def test_float_noise_without_key_pairs_rows() -> None:
    src = [("0.30000000000000004", "b"), ("0.5", "c"), ("0.5", "c")]
    rep = [("0.3", "b"), ("0.5", "c")]
    c = _comparer(("f", "s"), [], matchers=[_close, None], buckets=256)
    c.add_source(src)
    c.add_replica(rep)
    # the row with float noise lands in the same bucket as its counterpart (buckets use exact columns only)
    assert 1 <= len(c.differing_buckets()) <= 2
    assert _drill(c, src, rep) == [RowDifference("missing", (("f", "0.5"), ("s", "c")), count=1)]


def test_drill_holds_only_the_chosen_buckets() -> None:
    other = next(i for i in range(18, 10_000) if hash((str(i),)) % 1024 != hash(("17",)) % 1024)
    src = [(i, "v") for i in range(10_000)]
    rep = [(i, "v" if i not in (17, other) else "w") for i in range(10_000)]
    c = _comparer(("id", "v"), [0], buckets=1024)
    c.add_source(src)
    c.add_replica(rep)
    differing = c.differing_buckets()
    assert len(differing) == 2
    c.start_drill(differing[:1])
    c.add_source(src)
    c.add_replica(rep)
    assert c.held_rows < 100
    assert len(c.differences()) == 1


def test_comparer_rejects_mismatched_lengths() -> None:
    with pytest.raises(ValueError, match="same length"):
        TableComparer(("a", "b"), [0], [_same], [_same, _same])


# -- report -------------------------------------------------------------------------------------------------------


def _report() -> VerifyReport:
    equal = TableResult("shop.a", "shop.a", source_rows=3, replica_rows=3, source_checksum="00ff", key=("id",))
    equal.replica_checksum = "00ff"
    diff = TableResult(
        "shop.b",
        "shop.b",
        status="different",
        source_rows=5,
        replica_rows=5,
        key=("id",),
        replica_duplicates=1,
        min_differences=4,
        complete=False,
        differences=[
            RowDifference("missing", (("id", "7"),)),
            RowDifference("changed", (("id", "8"),), (ColumnDifference("price", "1.50", "1.05"),)),
            RowDifference("duplicate", (("id", "9"),), count=2),
        ],
        schema=["column `extra_col` exists only in the replica"],
    )
    missing = TableResult("shop.c", "shop.c", status="missing", source_rows=12)
    extra = TableResult("", "shop.old", status="extra", replica_rows=2)
    return VerifyReport(
        source="root@127.0.0.1:3306 (mariadb 10.11)", replica="chdb:///x", tables=[equal, diff, missing, extra]
    )


def test_render_text_lists_each_kind_of_difference() -> None:
    text = _report().render_text()
    assert "shop.a" in text
    assert "checksum 00ff" in text
    assert "DIFFERENT  source 5 rows, replica 5 rows" in text
    assert "missing in replica    id='7'" in text
    assert "price: source '1.50', replica '1.05'" in text
    assert "duplicate in replica  id='9'  (2 rows)" in text
    assert "schema: column `extra_col` exists only in the replica" in text
    assert "at least 4 in total" in text
    assert "MISSING    not in the replica as shop.c (source 12 rows)" in text
    assert "EXTRA      shop.old exists only in the replica (2 rows)" in text
    assert "3 of 4 tables differ" in text


def test_exit_codes_and_json() -> None:
    report = _report()
    assert not report.equal
    assert report.exit_code == 1
    data = json.loads(report.to_json())
    assert data["equal"] is False
    b = data["tables"][1]
    assert b["differences"][1] == {
        "kind": "changed",
        "key": {"id": "8"},
        "count": 1,
        "columns": [{"column": "price", "source": "1.50", "replica": "1.05"}],
    }
    assert b["key"] == ["id"]
    report.tables = [report.tables[0]]
    assert report.equal
    assert report.exit_code == 0
    assert "all 1 tables equal" in report.render_text()
    report.tables.append(TableResult("shop.z", "shop.z", status="error", error="boom"))
    assert report.exit_code == 2
    assert "ERROR      boom" in report.render_text()


def test_json_of_non_utf8_replica_text_is_valid() -> None:
    t = TableResult(
        "d.t",
        "d.t",
        status="different",
        differences=[RowDifference("changed", (("id", "1"),), (ColumnDifference("s", "é", "\udcff"),))],
    )
    text = VerifyReport("s", "r", [t]).to_json()
    text.encode("utf-8")
    assert json.loads(text)["tables"][0]["differences"][0]["columns"][0]["replica"] == "\udcff"
    ok = VerifyReport("s", "r", [TableResult("d.t", "d.t", status="missing", source_rows=1)]).to_json()
    assert json.loads(ok)["tables"][0]["status"] == "missing"


def test_long_values_are_shortened_in_text() -> None:
    t = TableResult(
        "d.t",
        "d.t",
        status="different",
        differences=[RowDifference("changed", (("id", "1"),), (ColumnDifference("blob", "ab" * 100, None),))],
        min_differences=1,
    )
    text = VerifyReport("s", "r", [t]).render_text()
    assert "ab" * 100 not in text
    assert "blob: source 'abababab" in text
    assert "...', replica NULL" in text


# -- table selection ----------------------------------------------------------------------------------------------


def test_split_tables() -> None:
    split = _verifier._split_tables
    assert split([], ["a", "b"], None) == {"a": None, "b": None}
    assert split(["t1", "t2"], ["a"], None) == {"a": ["t1", "t2"]}
    assert split(["x.t1", "y.t2"], [], None) == {"x": ["t1"], "y": ["t2"]}
    assert split(["t1"], [], "dsn_db") == {"dsn_db": ["t1"]}
    assert split([], [], "dsn_db") == {"dsn_db": None}
    with pytest.raises(ConfigurationError, match=r"database\.table"):
        split(["t1"], ["a", "b"], None)
    with pytest.raises(ConfigurationError, match="nothing to verify"):
        split([], [], None)


# -- orchestration against fakes ----------------------------------------------------------------------------------


@dataclass
class FakeTable:
    engine: str
    columns: list[tuple[str, str, bool]]  # name, ClickHouse type, in sorting key
    rows: list[list[str | None]]  # alive rows after FINAL, all columns in order


@dataclass
class FakeTarget:
    tables: dict[tuple[str, str], FakeTable]
    capabilities: Capabilities = field(default_factory=lambda: Capabilities.from_version("26.1.1"))
    kind: str = "fake"
    description: str = "fake://clickhouse"
    database: str | None = None
    queries: list[str] = field(default_factory=list)

    async def query(self, sql: str) -> list[list[str | None]]:
        self.queries.append(sql)
        if m := re.fullmatch(r"SELECT name, engine FROM system\.tables WHERE database = '(\w+)'", sql):
            return [[t, v.engine] for (d, t), v in self.tables.items() if d == m[1]]
        if m := re.fullmatch(r"SELECT name, type FROM system\.columns .*= '(\w+)' .*= '(\w+)'", sql):
            return [[n, ty] for n, ty, _ in self.tables[(m[1], m[2])].columns]
        m = re.fullmatch(r"SELECT (.*) FROM `(\w+)`\.`(\w+)`( FINAL)?( WHERE .*)?", sql)
        assert m, sql
        table = self.tables[(m[2], m[3])]
        names = [c[0] for c in table.columns]
        rows = table.rows
        if m[5] and (s := re.search(r"% (\d+) = (\d+)$", m[5])):
            rows = [r for r in rows if hash(r[0]) % int(s[1]) == int(s[2])]
        if m[1].startswith("count()"):
            keys = {tuple(r[i] for i, c in enumerate(table.columns) if c[2]) for r in rows}
            return [[str(len(rows)), str(len(keys))]] if "uniqExact" in m[1] else [[str(len(rows))]]
        wanted = [names.index(c.strip("`")) for c in m[1].split(", ")]
        return [[r[i] for i in wanted] for r in rows]

    async def execute(self, sql: str) -> None:
        raise AssertionError("verify must not write to the replica")


@dataclass
class FakeInfo:
    flavor: str = "mariadb"
    version_string: str = "10.11.0-fake"


@dataclass
class FakeSource:
    ddl: dict[str, str]
    rows: dict[str, list[tuple[Any, ...]]]
    info: FakeInfo = field(default_factory=FakeInfo)
    snapshot: bool = False
    closed: bool = False
    streams_open: int = 0

    async def start_consistent_snapshot(self) -> None:
        self.snapshot = True

    async def commit(self) -> None:
        pass

    async def close(self) -> None:
        self.closed = True

    async def tables(self, database: str) -> list[str]:
        if database != "shop":
            raise SourceError(f"Unknown database '{database}'", errno=1049)
        return sorted(self.ddl)

    async def show_create_table(self, database: str, table: str) -> str:
        return self.ddl[table]

    async def estimated_rows(self, database: str, tables: Sequence[str]) -> int:
        return sum(len(self.rows[t]) for t in tables)

    async def count_rows(self, database: str, table: str, where: str | None = None) -> int:
        assert where is None
        return len(self.rows[table])

    async def stream_rows(
        self, database: str, table: str, columns: Sequence[str], *, batch: int = 10_000
    ) -> AsyncIterator[list[tuple[Any, ...]]]:
        assert self.snapshot
        assert self.streams_open == 0, "a previous stream was left open"
        self.streams_open += 1
        try:
            rows = self.rows[table]
            for i in range(0, len(rows), 7):  # small batches
                yield rows[i : i + 7]
        finally:
            self.streams_open -= 1


_ITEMS_DDL = (
    "CREATE TABLE `items` (`id` int(11) NOT NULL, `name` varchar(20) DEFAULT NULL, PRIMARY KEY (`id`)) "
    "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
)
_LOG_DDL = "CREATE TABLE `log` (`msg` varchar(20) DEFAULT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
_META = [("_sign", "Int8", False), ("_version", "UInt64", False)]


def _fakes(n: int = 100) -> tuple[FakeSource, FakeTarget]:
    items = [(i, f"item {i}") for i in range(n)]
    source = FakeSource(
        ddl={"items": _ITEMS_DDL, "log": _LOG_DDL, "gone": _LOG_DDL},
        rows={"items": items, "log": [("a",), ("a",), ("b",)], "gone": [("x",)]},
    )
    target = FakeTarget(
        {
            ("shop", "items"): FakeTable(
                "ReplacingMergeTree",
                [("id", "Int32", True), ("name", "Nullable(String)", False), *_META],
                [[str(i), name, "1", "5"] for i, name in items],
            ),
            ("shop", "log"): FakeTable(
                "ReplacingMergeTree",
                [("msg", "Nullable(String)", True), *_META],
                [["a", "1", "1"], ["a", "1", "1"], ["b", "1", "1"]],
            ),
            ("shop", "stale"): FakeTable("ReplacingMergeTree", [("x", "Int32", True), *_META], [["1", "1", "1"]]),
        }
    )
    return source, target


async def _run(source: FakeSource, target: FakeTarget, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> VerifyReport:
    async def connect(dsn: Any) -> FakeSource:
        return source

    monkeypatch.setattr(_verifier, "_connect_source", connect)
    return await _verifier.verify("mysql://u:pw-not-shown@h:1/shop", target, **kw)  # type: ignore[arg-type]


async def test_verify_with_fakes_reports_tables_and_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    source, target = _fakes()
    target.tables[("shop", "items")].rows[5][1] = "changed"
    del target.tables[("shop", "items")].rows[9]
    report = await _run(source, target, monkeypatch)
    assert source.closed
    by_name = {t.source_table or t.replica_table: t for t in report.tables}
    assert set(by_name) == {"shop.items", "shop.log", "shop.gone", "shop.stale"}
    items = by_name["shop.items"]
    assert items.status == "different"
    assert (items.source_rows, items.replica_rows) == (100, 99)
    assert items.key == ("id",)
    assert [(d.kind, d.key) for d in items.differences] == [("changed", (("id", "5"),)), ("missing", (("id", "9"),))]
    assert items.differences[0].columns == (ColumnDifference("name", "item 5", "changed"),)
    assert items.complete
    assert by_name["shop.log"].status == "equal"
    assert by_name["shop.log"].key == ()
    assert by_name["shop.gone"].status == "missing"
    assert by_name["shop.gone"].source_rows == 1
    assert by_name["shop.stale"].status == "extra"
    assert report.exit_code == 1
    assert "pw-not-shown" not in report.render_text() + report.to_json()
    assert all("FINAL WHERE _sign = 1" in q for q in target.queries if "`items`" in q)


async def test_verify_equal_with_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    source, target = _fakes(1000)
    report = await _run(source, target, monkeypatch, tables=["items", "log"], page_rows=150)
    assert [t.status for t in report.tables] == ["equal", "equal"]
    assert report.tables[0].source_rows == 1000
    assert report.tables[0].source_checksum == report.tables[0].replica_checksum
    slices = [q for q in target.queries if "cityHash64" in q and "`items`" in q]
    assert len(slices) == 7  # ceil(1000 / 150)
    assert report.exit_code == 0


async def test_verify_schema_difference_and_duplicates(monkeypatch: pytest.MonkeyPatch) -> None:
    source, target = _fakes(20)
    table = target.tables[("shop", "items")]
    table.columns.insert(2, ("added", "String", False))
    table.rows = [[r[0], r[1], "x", *r[2:]] for r in table.rows]
    table.rows.append(list(table.rows[3]))
    report = await _run(source, target, monkeypatch, tables=["items"])
    (items,) = report.tables
    assert items.status == "different"
    assert items.schema == ["column `added` exists only in the replica"]
    assert items.replica_duplicates == 1
    assert [(d.kind, d.key, d.count) for d in items.differences] == [("duplicate", (("id", "3"),), 2)]


async def test_verify_max_differences_limits_the_listing(monkeypatch: pytest.MonkeyPatch) -> None:
    source, target = _fakes(200)
    for row in target.tables[("shop", "items")].rows[:50]:
        row[1] = "x"
    report = await _run(source, target, monkeypatch, tables=["items"], max_differences=3)
    (items,) = report.tables
    assert len(items.differences) == 3
    assert not items.complete
    assert items.min_differences >= 3
    assert "raise --max-differences" in report.render_text()
    report0 = await _run(source, target, monkeypatch, tables=["items"], max_differences=0)
    assert report0.tables[0].status == "different"
    assert report0.tables[0].differences == []


async def test_verify_table_errors_do_not_stop_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    source, target = _fakes(10)
    source.ddl["log"] = "CREATE TABLE `log` (this is not sql"
    report = await _run(source, target, monkeypatch, tables=["log", "items", "nope"])
    assert [t.status for t in report.tables] == ["error", "equal", "error"]
    assert "does not exist in the source" in (report.tables[2].error or "")
    assert report.exit_code == 2


async def test_a_value_that_cannot_be_compared_fails_only_its_table(monkeypatch: pytest.MonkeyPatch) -> None:
    source, target = _fakes(30)
    source.rows["items"][20] = ("not a number", "x")
    report = await _run(source, target, monkeypatch, tables=["items", "log"])
    items, log = report.tables
    assert items.status == "error"
    assert "column `id`" in (items.error or "")
    assert "not a number" in (items.error or "")
    assert log.status == "equal"
    assert source.streams_open == 0


async def test_unknown_source_database(monkeypatch: pytest.MonkeyPatch) -> None:
    source, target = _fakes(3)
    report = await _run(source, target, monkeypatch, databases=["nope", "shop"])
    assert report.tables[0].status == "error"
    assert report.tables[0].error == "database nope does not exist in the source"
    assert {t.status for t in report.tables[1:]} == {"equal", "missing", "extra"}
    assert report.exit_code == 2


def _float_noise_pair() -> tuple[float, float]:
    """Two neighbouring doubles whose 15-digit canonical texts differ (what 18.16's float parsing can produce)."""
    x = 1.234567890123455
    for _ in range(100):
        y = math.nextafter(x, 2.0)
        if format(x, ".15g") != format(y, ".15g"):
            return x, y
        x = y
    raise AssertionError("no pair found")


async def test_float_rounding_is_not_a_difference(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = _float_noise_pair()
    source = FakeSource(
        ddl={"f": "CREATE TABLE `f` (`id` int NOT NULL, `d` double DEFAULT NULL, PRIMARY KEY (`id`))"},
        rows={"f": [(i, a if i == 3 else i / 7) for i in range(50)]},
    )
    replica_rows = [[str(i), repr(b if i == 3 else i / 7), "1", "1"] for i in range(50)]
    columns = [("id", "Int32", True), ("d", "Nullable(Float64)", False), *_META]
    target = FakeTarget({("shop", "f"): FakeTable("ReplacingMergeTree", columns, replica_rows)})
    report = await _run(source, target, monkeypatch)
    (f,) = report.tables
    assert f.status == "equal", report.render_text()
    assert f.source_checksum != f.replica_checksum
    assert any("float rounding" in n for n in f.notes)
    replica_rows[10][1] = "0.5"
    report = await _run(source, target, monkeypatch)
    (f,) = report.tables
    assert f.status == "different"
    assert [d.key for d in f.differences] == [(("id", "10"),)]


async def test_verify_rejects_bad_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    source, target = _fakes(1)
    with pytest.raises(ConfigurationError, match="engine"):
        await _run(source, target, monkeypatch, engine="nope")
    with pytest.raises(ConfigurationError, match="target_database"):
        await _run(source, target, monkeypatch, databases=["a", "b"], target_database="x")


# -- command line -------------------------------------------------------------------------------------------------


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli_verify.add_verify_arguments(parser)
    return parser.parse_args(argv)


def test_arguments() -> None:
    args = _args("--source", "mysql://u@h/db", "-d", "a", "--tables", "t1, b.t2", "--tables", "t3", "--format", "json")
    assert args.source == ["mysql://u@h/db"]  # --source may be repeated (several servers of one source)
    assert args.database == ["a"]
    assert args.tables == ["t1, b.t2", "t3"]
    assert args.engine == "auto"
    assert args.max_differences == _verifier.DEFAULT_MAX_DIFFERENCES


async def test_run_verify_errors_never_show_passwords(capsys: pytest.CaptureFixture[str]) -> None:
    args = _args("--source", "mysql://u:dbsecret1@127.0.0.1:1/db", "--target", "ftp://u:chsecret2@host/")
    assert await cli_verify.run_verify(args) == 2
    out, err = capsys.readouterr()
    assert "mybinlog verify: error:" in err
    assert "dbsecret1" not in out + err
    assert "chsecret2" not in out + err


# -- fast canonical forms are canonical's -------------------------------------------------------------------------


def _outcome(func: Any, value: Any) -> tuple[str, Any]:
    try:
        return ("ok", func(value))
    except Exception:  # both must fail alike; the exception types differ by design
        return ("error", None)


def _driver_forms(value: Any) -> list[Any]:
    """The value as the workload writes it, plus the forms a MySQL driver returns for it."""
    forms = [value]
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        forms.append(value.astimezone(dt.UTC).replace(tzinfo=None))  # TIMESTAMP read with time_zone +00:00
    if isinstance(value, frozenset):
        forms.append(",".join(sorted(value)))
    if isinstance(value, decimal.Decimal):
        forms += [value.normalize(), -value, decimal.Decimal("-0"), value + decimal.Decimal("0.000001")]
    if isinstance(value, float):
        forms += [-0.0, -value]
    if isinstance(value, int) and not isinstance(value, bool):
        forms += [-value, str(value)]
    if isinstance(value, str):
        forms += [value + "  ", value.encode("utf-8")]
    return forms


def _clickhouse_texts(text: str | None, sql_type: str) -> list[str | None]:
    """ClickHouse's text of a stored value (the encoder's field), plus the variants other versions print."""
    if text is None:
        return [None]
    texts: list[str | None] = [text]
    base = sql_type.split("(")[0].split()[0].lower()
    if base == "decimal" and "." in text:
        texts += [text.rstrip("0"), text.rstrip("0").rstrip(".")]  # ClickHouse 20+: no trailing zeros
    if base in ("date", "datetime", "timestamp") and text.startswith("1970-01-01"):
        texts.append("0000-00-00" + (" 00:00:00" if base != "date" else ""))  # 18.16 prints the epoch as zeros
    if base == "double":
        texts.append(repr(float(text)))
    return texts


@pytest.mark.parametrize("version", ["18.16.1", "22.3.1", "26.9.2"])
def test_fast_canonical_equals_canonical(version: str) -> None:
    caps = Capabilities.from_version(version)
    table = parse_create_table(all_types_ddl(), "d")
    rng = random.Random(11)
    extremes = extreme_rows()
    inlined = {"source": 0, "clickhouse": 0}
    for name, sql_type in ALL_TYPES_COLUMNS:
        col = table.column(name)
        values = [random_value(rng, sql_type, large=False) for _ in range(60)]
        values += [row[name] for row in extremes if row[name] is not None]
        fast_src = _canonical.fast_canonical(col, caps, side="source")
        slow_src = canonical(col, caps)
        fast_ch = _canonical.fast_canonical(col, caps, side="clickhouse", replica_type=clickhouse_type(col, caps))
        slow_ch = canonical(col, caps, side="clickhouse")
        encode = make_encoder(col, caps)
        inlined["source"] += _canonical._TEMPLATES[fast_src][0] != _canonical._CALL
        inlined["clickhouse"] += _canonical._TEMPLATES[fast_ch][0] != _canonical._CALL
        for value in [*values, None]:
            for form in _driver_forms(value):
                assert _outcome(fast_src, form) == _outcome(slow_src, form), (name, form)
            stored = encode(value) if value is not None else "\\N"
            for text in _clickhouse_texts(tsv_unescape(stored), sql_type):
                assert _outcome(fast_ch, text) == _outcome(slow_ch, text), (name, text)
    # the fast paths are really taken: integers, decimals, doubles, dates and times, text, enums
    assert inlined["source"] >= 40
    assert inlined["clickhouse"] >= (30 if caps.datetime64 else 20)


def test_fast_canonical_of_another_replica_type_is_canonical() -> None:
    caps = Capabilities.from_version("26.9.2")
    col = parse_create_table("CREATE TABLE t (d DATETIME(3))", "d").column("d")
    fast = _canonical.fast_canonical(col, caps, side="clickhouse", replica_type="String")
    assert fast("2020-01-02 03:04:05") == canonical(col, caps, side="clickhouse")("2020-01-02 03:04:05")
    assert fast("2020-01-02 03:04:05") == "2020-01-02 03:04:05.000"


def test_row_function_inlines_templates_and_calls_others() -> None:
    caps = Capabilities.from_version("26.9.2")
    table = parse_create_table("CREATE TABLE t (a INT, b VARCHAR(5), c DECIMAL(6,2), d JSON)", "d")
    funcs = [_canonical.fast_canonical(c, caps, side="source") for c in table.columns]
    row = _canonical._row_function([*funcs, _same])
    assert row((5, "x", decimal.Decimal("1.50"), '{"a": 1}', 7)) == ("5", "x", "1.50", '{"a": 1}', "7")
    assert row((None, None, None, None, None)) == (None,) * 5
    with pytest.raises(ValueError, match="unpack"):
        row((1, 2))
