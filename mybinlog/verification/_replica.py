"""Reading the ClickHouse side: the tables and columns of the replica database, and which rows are alive (FINAL,
the engine's meta columns)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..clickhouse import Target


# ---------------------------------------------------------------------------------------------------------------
# reading ClickHouse


def _q(text: str) -> str:
    from ..clickhouse import quote_string

    return quote_string(text)


def _qi(name: str) -> str:
    from ..clickhouse import quote_ident

    return quote_ident(name)


@dataclass
class _ReplicaTable:
    name: str
    engine: str
    columns: dict[str, str]  # name -> ClickHouse type, in table order, without the meta columns
    meta: set[str]  # meta columns present (_sign, _version, _is_deleted)


async def _replica_tables(target: Target, database: str) -> dict[str, str]:
    """name -> engine of the replica database's tables (views and materialized-view internals left out)."""
    rows = await target.query(f"SELECT name, engine FROM system.tables WHERE database = {_q(database)}")
    out: dict[str, str] = {}
    for name, engine in rows:
        if name is None or name.startswith(".inner") or (engine or "").endswith("View"):
            continue
        out[name] = engine or ""
    return out


async def _describe_replica(target: Target, database: str, name: str, engine: str) -> _ReplicaTable:
    from ..clickhouse import META_COLUMNS

    rows = await target.query(
        f"SELECT name, type FROM system.columns WHERE database = {_q(database)} AND table = {_q(name)}"
    )
    columns: dict[str, str] = {}
    meta: set[str] = set()
    for col, typ in rows:
        if col is None:
            continue
        if col in META_COLUMNS:
            meta.add(col)
        else:
            columns[col] = typ or ""
    return _ReplicaTable(name, engine, columns, meta)


def _engine_mode(table: _ReplicaTable, requested: str) -> str:
    """The replication engine mode of a replica table (``auto``: from its engine and meta columns)."""
    if requested != "auto":
        return requested
    if "Collapsing" in table.engine:
        return "collapsing"
    if "_is_deleted" in table.meta:
        return "replacing_is_deleted"
    return "replacing"


def _from_clause(database: str, table: _ReplicaTable, mode: str) -> str:
    from ..clickhouse import alive_predicate

    sql = f"{_qi(database)}.{_qi(table.name)}"
    engine = table.engine
    if engine.endswith("MergeTree") and engine not in ("MergeTree", "ReplicatedMergeTree"):
        sql += " FINAL"
    if table.meta:
        sql += f" WHERE {alive_predicate(mode)}"
    return sql
