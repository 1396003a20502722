"""Issue 24: a checkpoint saved after every batch costs the same whatever the number of tables in scope.

The schemas of many tables are stored once (``checkpoint_schemas``, keyed by their hash) and only referred to by the
checkpoint rows; they are written again only when a schema changes. Real embedded ClickHouse (chdb).
"""

from __future__ import annotations

from typing import Any

from mybinlog import BinlogPosition
from mybinlog.clickhouse import Checkpoint, load_checkpoint, quote_ident, quote_string, save_checkpoint


def _tables(n: int) -> dict[str, str]:
    return {f"t{i:05d}": f"CREATE TABLE `t{i:05d}` (`id` int NOT NULL, `a` int, PRIMARY KEY (`id`))" for i in range(n)}


async def _rows(target: Any, meta: str, table: str, replica: str, column: str) -> list[int]:
    rows = await target.query(
        f"SELECT length({column}) FROM {quote_ident(meta)}.{quote_ident(table)} WHERE replica = {quote_string(replica)}"
    )
    return sorted(int(r[0] or 0) for r in rows)


class Recording:
    """The chdb target, with the size of every insert recorded by table (everything else passed through)."""

    def __init__(self, target: Any) -> None:
        self.target = target
        self.inserts: list[tuple[str, int]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.target, name)

    async def insert_tsv(self, table: str, columns: Any, data: bytes, **kw: Any) -> None:
        self.inserts.append((table.rsplit(".", 1)[-1].strip("`"), len(data)))
        await self.target.insert_tsv(table, columns, data, **kw)


async def _batches(chdb: Any, meta: str, replica: str, n: int) -> tuple[list[int], list[int]]:
    """Save a checkpoint of ``n`` tables, then three more as batches without DDL would; the sizes of the inserts
    into checkpoints and into checkpoint_schemas."""
    target = Recording(chdb)
    cp = Checkpoint(replica, BinlogPosition("binlog.000001", 4), tables=_tables(n))
    for k in range(4):
        cp.position = BinlogPosition("binlog.000001", 1000 + k)
        await save_checkpoint(target, cp, meta_database=meta)
    return [s for t, s in target.inserts if t == "checkpoints"], [
        s for t, s in target.inserts if t == "checkpoint_schemas"
    ]


async def test_checkpoint_rows_do_not_grow_with_the_number_of_tables(chdb_target: Any) -> None:
    meta = f"{chdb_target.database}_meta"
    small, small_schemas = await _batches(chdb_target, meta, "r10", 10)
    big, big_schemas = await _batches(chdb_target, meta, "r2000", 2000)
    assert len(big) == 4
    assert max(big) <= max(small) + 64, (small, big)  # the same few hundred bytes, not 2,000 schemas per batch
    assert len(big_schemas) == 1  # the schemas written once, not once per batch
    assert small_schemas == []  # a few tables: inline, as before
    back = await load_checkpoint(chdb_target, "r2000", meta_database=meta)
    assert back is not None
    assert back.position.offset == 1003
    assert back.tables == _tables(2000)


async def test_a_changed_schema_is_stored_again_and_loaded_back(chdb_target: Any) -> None:
    meta = f"{chdb_target.database}_meta"
    cp = Checkpoint("r", BinlogPosition("binlog.000001", 4), tables=_tables(100))
    await save_checkpoint(chdb_target, cp, meta_database=meta)
    loaded = await load_checkpoint(chdb_target, "r", meta_database=meta)
    assert loaded is not None
    await save_checkpoint(chdb_target, loaded, meta_database=meta)  # loaded: the stored schemas are known
    assert len(await _rows(chdb_target, meta, "checkpoint_schemas", "r", "tables")) == 1
    loaded.tables["t00007"] = "CREATE TABLE `t00007` (`id` int NOT NULL, `b` text, PRIMARY KEY (`id`))"
    del loaded.tables["t00008"]
    await save_checkpoint(chdb_target, loaded, meta_database=meta)  # a DDL: the new schemas stored, then referred to
    assert len(await _rows(chdb_target, meta, "checkpoint_schemas", "r", "tables")) == 2
    back = await load_checkpoint(chdb_target, "r", meta_database=meta)
    assert back is not None
    assert back.tables["t00007"].endswith("`b` text, PRIMARY KEY (`id`))")
    assert "t00008" not in back.tables
    assert len(back.tables) == 99


def test_the_status_snapshot_copies_every_field_and_the_counters() -> None:
    """The snapshot (sampled every second by the status server) is copied field by field, not with
    dataclasses.asdict's recursion through every table's counters: the same document, nothing shared."""
    import dataclasses
    from types import SimpleNamespace

    from mybinlog.replication._observe import replica_snapshot
    from mybinlog.replication._settings import ReplicaStatus
    from mybinlog.replication._watch import BinlogCheck

    status = ReplicaStatus("r", "db", "db", "binlog.000001:4", None, state="stopped")
    status.rows_by_table = {f"t{i}": {"insert": i, "update": 1} for i in range(3000)}
    status.stopped_tables = {"t7": "why"}
    status.binlog_check = BinlogCheck("warning", "because", lag_bytes=12, files=3)
    r = SimpleNamespace(status=status, checkpoint=None, binlog=None)
    out = replica_snapshot(r, now=1000.0)  # type: ignore[arg-type]
    expected = dataclasses.asdict(status)
    for name in ("binlog_check", "idle_at", "checkpoint_time"):
        expected.pop(name)
    assert {k: out[k] for k in expected} == expected
    assert (out["lag_bytes"], out["binlog_purge_risk"], out["binlog_files"]) == (12, "warning", 3)
    out["rows_by_table"]["t1"]["insert"] = 99
    out["stopped_tables"].clear()
    assert status.rows_by_table["t1"]["insert"] == 1
    assert status.stopped_tables == {"t7": "why"}
