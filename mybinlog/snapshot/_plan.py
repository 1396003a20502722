"""Chunk planning (on the driver): split each table into key ranges of about ``chunk_rows`` rows.

* The chunking key is the primary key; a table without one uses its first unique key whose columns are all
  NOT NULL; a table with neither is read as one chunk (one task, one consistent read).
* An integer single-column key that is *dense* (at least :data:`~._chunks.DENSE_THRESHOLD` rows per key value
  between MIN and MAX) is split into even ranges: two index lookups, no scan.
* Any other key -- strings, composite keys, sparse or skewed integers -- gets boundaries read from the data:
  ``SELECT key FROM t WHERE key > <previous boundary> ORDER BY key LIMIT 1 OFFSET chunk_rows - 1``, repeated
  until the end: one pass over the key index, and chunks of exactly ``chunk_rows`` rows at planning time.
* Key columns of types MySQL orders differently from how it compares them to a literal (ENUM, SET, BIT), or
  that do not round-trip exactly (FLOAT, DOUBLE), or cannot be ordered (JSON, geometry): one chunk.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError
from ..source import quote_mysql_ident
from ._chunks import (
    INTEGER_TYPES,
    ORDERED_TYPES,
    Chunk,
    TablePlan,
    even_boundaries,
    key_greater,
    sql_literal,
)

if TYPE_CHECKING:
    from ..ddl import TableDef
    from ..source import SourceConnection

__all__ = ["auto_chunk_rows", "choose_key", "key_range_filter", "plan_table"]

logger = logging.getLogger("mybinlog.snapshot")

#: Tables with up to this many rows (information_schema estimate) are counted exactly while planning.
EXACT_COUNT_LIMIT = 5_000_000
MIN_AUTO_CHUNK_ROWS = 10_000
MAX_AUTO_CHUNK_ROWS = 250_000


def choose_key(definition: TableDef) -> tuple[list[str], str]:
    """(chunking key columns, ``primary``/``unique``/``none``)."""
    if definition.primary_key:
        return list(definition.primary_key), "primary"
    for key in definition.unique_keys:
        if key and all(not definition.column(c).nullable for c in key):
            return list(key), "unique"
    return [], "none"


def _splittable(definition: TableDef, key: Sequence[str]) -> bool:
    return bool(key) and all(definition.column(c).type_name in ORDERED_TYPES for c in key)


def auto_chunk_rows(rows: int, parallelism: int) -> int:
    """About four chunks per parallel task (so a slow chunk does not leave cores idle at the end), within
    [:data:`MIN_AUTO_CHUNK_ROWS`, :data:`MAX_AUTO_CHUNK_ROWS`]."""
    want = math.ceil(rows / max(1, 4 * parallelism)) if rows > 0 else MIN_AUTO_CHUNK_ROWS
    return max(MIN_AUTO_CHUNK_ROWS, min(MAX_AUTO_CHUNK_ROWS, want))


def key_range_filter(definition: TableDef, key: Sequence[str], key_range: tuple[str | None, str | None]) -> str:
    """SQL for ``LOW <= key[0] <= HIGH`` (inclusive; integers for integer columns, text otherwise)."""
    if not key:
        raise ConfigurationError(
            f"table {definition.name!r} has no primary key nor NOT NULL unique key: --key-range cannot apply; "
            "use --where"
        )
    column = definition.column(key[0])
    parts = []
    for bound, op in zip(key_range, (">=", "<="), strict=True):
        if bound is None:
            continue
        value: Any = bound
        if column.type_name in INTEGER_TYPES:
            try:
                value = int(bound)
            except ValueError:
                raise ConfigurationError(
                    f"key range bound {bound!r} is not an integer, but {definition.name}.{column.name} is "
                    f"{column.raw_type or column.type_name}"
                ) from None
        parts.append(f"{quote_mysql_ident(column.name)} {op} {sql_literal(value, column.charset)}")
    return " AND ".join(parts)


async def _count(src: SourceConnection, table_sql: str, where: str) -> int:
    rows = await src.query(f"SELECT COUNT(*) FROM {table_sql} WHERE {where}")
    return int(rows[0][0] or 0)


async def plan_table(
    src: SourceConnection,
    database: str,
    definition: TableDef,
    *,
    chunk_rows: int | None,
    parallelism: int,
    filters: Sequence[str] = (),
    first_ordinal: int = 0,
) -> TablePlan:
    """Plan the chunks of one table. ``filters``: SQL conditions limiting the key range (``--key-range``);
    ``--where`` conditions are not used for planning (they may not be indexed), only when reading."""
    name = definition.name
    table_sql = f"{quote_mysql_ident(database)}.{quote_mysql_ident(name)}"
    key, key_source = choose_key(definition)
    where = " AND ".join(f"({f})" for f in filters) or "1"

    est_rows = await src.query(
        "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
        (database, name),
    )
    estimate = int(est_rows[0][0] or 0) if est_rows else 0
    count = await _count(src, table_sql, where) if estimate <= EXACT_COUNT_LIMIT else estimate
    size = chunk_rows if chunk_rows is not None else auto_chunk_rows(count, parallelism)

    def chunk(index: int, lower: tuple[Any, ...] | None, upper: tuple[Any, ...] | None, rows: int) -> Chunk:
        return Chunk(first_ordinal + index, name, index, lower, upper, rows)

    if not _splittable(definition, key) or count <= size:
        method = "single" if not _splittable(definition, key) else "even"
        if not key:
            logger.warning("%s.%s has no primary key nor NOT NULL unique key: copied as one chunk", database, name)
        return TablePlan(name, key, key_source, method, [chunk(0, None, None, count)])

    cols = ", ".join(quote_mysql_ident(c) for c in key)
    charsets = [definition.column(c).charset for c in key]
    if len(key) == 1 and definition.column(key[0]).type_name in INTEGER_TYPES:
        rows = await src.query(f"SELECT MIN({cols}), MAX({cols}) FROM {table_sql} WHERE {where}")
        lo, hi = rows[0]
        if lo is not None and hi is not None:
            bounds = even_boundaries(int(lo), int(hi), count, size)
            if bounds is not None:
                span = int(hi) - int(lo) + 1
                edges = [int(lo) - 1, *bounds, int(hi)]
                chunks = []
                for i in range(len(edges) - 1):
                    est = round(count * (edges[i + 1] - edges[i]) / span)
                    lower = None if i == 0 else (edges[i],)
                    upper = None if i == len(edges) - 2 else (edges[i + 1],)
                    chunks.append(chunk(i, lower, upper, est))
                return TablePlan(name, key, key_source, "even", chunks)

    # sampled boundaries: one pass over the key
    boundaries: list[tuple[Any, ...]] = []
    while True:
        cond = where
        if boundaries:
            cond = f"{where} AND ({key_greater(key, boundaries[-1], charsets)})"
        rows = await src.query(f"SELECT {cols} FROM {table_sql} WHERE {cond} ORDER BY {cols} LIMIT 1 OFFSET {size - 1}")
        if not rows:
            break
        boundaries.append(tuple(rows[0]))
    chunks = []
    for i, upper in enumerate(boundaries):
        chunks.append(chunk(i, boundaries[i - 1] if i else None, upper, size))
    last_where = f"{where} AND ({key_greater(key, boundaries[-1], charsets)})" if boundaries else where
    last_rows = await _count(src, table_sql, last_where)
    if last_rows or not chunks:
        chunks.append(chunk(len(chunks), boundaries[-1] if boundaries else None, None, last_rows))
    else:  # the key ends exactly at a boundary: the last chunk still must be open above
        last = chunks[-1]
        chunks[-1] = Chunk(last.ordinal, last.table, last.index, last.lower, None, last.estimated_rows)
    return TablePlan(name, key, key_source, "sampled", chunks)
