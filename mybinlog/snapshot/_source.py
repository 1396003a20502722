"""Reading the MySQL/MariaDB source for a snapshot: low watermarks, chunk reads, schemas.

Connections are :class:`mybinlog.source.SourceConnection` (asyncmy underneath: its C row parser
reads about four times faster than pymysql, which matters in the executors), with ``time_zone = '+00:00'`` so
TIMESTAMP values arrive as UTC, exactly as the binlog carries them.

The low watermark of a chunk (see docs/snapshot.md, "Why the replica converges"):

* MariaDB (and Percona Server): ``START TRANSACTION WITH CONSISTENT SNAPSHOT``, then the status variables
  ``binlog_snapshot_file`` / ``binlog_snapshot_position``: the binlog position the read view is consistent with.
  Every transaction that ends at or before it is visible to the read, none after it. Exact.
* MySQL: ``SHOW MASTER STATUS`` (``SHOW BINARY LOG STATUS`` from 8.2) immediately before starting the read
  transaction. Every transaction visible at that moment ends at or before the position, and everything after it
  is replayed by the stream.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..clickhouse import binlog_file_number
from ..errors import PreconditionError, SourceConnectionError, SourceError
from ..protocol import BinlogPosition, parse_gtid_set

if TYPE_CHECKING:
    from ..source import DSN, SourceConnection

__all__ = [
    "Watermark",
    "connect_source",
    "gtid_set_at",
    "normalize_create",
    "open_chunk_snapshot",
    "read_position",
    "stream_query",
]


@dataclass(frozen=True)
class Watermark:
    """A binlog position recorded before a chunk was read. ``gtids``: the executed GTID set there when the
    server gave it cheaply (MySQL), else None (MariaDB: computed once, for the smallest watermark only).
    ``exact``: the position came from the read view itself (``binlog_snapshot_position``)."""

    file: str
    offset: int
    gtids: str | None = None
    exact: bool = False

    @property
    def sort_key(self) -> tuple[int, int]:
        return (binlog_file_number(self.file), self.offset)

    def to_position(self, flavor: str, gtids: str | None = None) -> BinlogPosition:
        text = gtids if gtids is not None else self.gtids
        gtid_set = parse_gtid_set(text, flavor) if text is not None and (text or flavor == "mariadb") else None
        return BinlogPosition(self.file, self.offset, gtid_set)

    def __str__(self) -> str:
        return f"{self.file}:{self.offset}"


async def connect_source(dsn: DSN) -> SourceConnection:
    from ..source import SourceConnection

    return await SourceConnection.connect(dsn)


async def read_position(src: SourceConnection) -> Watermark:
    """The current end of the binlog (``SHOW MASTER STATUS``), with MySQL's executed GTID set."""
    end = await src.binlog_end()
    if end is None:
        raise PreconditionError(
            f"{src.dsn.display}: the server reports no binlog position (binary logging is off); a snapshot "
            "needs the binlog to be consistent with the stream: start the server with --log-bin"
        )
    return Watermark(*end)


async def open_chunk_snapshot(src: SourceConnection) -> Watermark:
    """Start the read transaction of one chunk and return its low watermark (see the module docstring)."""
    before = None if src.flavor == "mariadb" else await read_position(src)
    exact = await src.start_snapshot_read()
    if exact is not None:
        return Watermark(exact[0], exact[1], None, exact=True)
    if before is None:  # MariaDB without the status variables (binlog off?)
        before = await read_position(src)
    return before


async def gtid_set_at(src: SourceConnection, watermark: Watermark) -> str | None:
    """The executed GTID set at ``watermark``: MySQL's from SHOW MASTER STATUS, MariaDB's from
    ``BINLOG_GTID_POS(file, offset)`` (None when the server cannot tell, e.g. the file was purged)."""
    if watermark.gtids is not None:
        return watermark.gtids
    if src.flavor != "mariadb":
        return None
    return await src.binlog_gtid_pos(watermark.file, watermark.offset)


async def stream_query(src: SourceConnection, sql: str, batch_rows: int) -> AsyncIterator[list[tuple[Any, ...]]]:
    """Rows of ``sql`` (run inside the connection's current transaction) in lists of up to ``batch_rows``,
    through an unbuffered cursor: memory holds one batch, not the chunk."""
    rows = src.stream_query(sql, batch_rows=batch_rows)
    try:
        async for batch in rows:
            yield batch
    except SourceConnectionError:
        raise
    except SourceError as exc:
        raise SourceError(f"{src.dsn.display}: reading a chunk failed ({exc}); the query was {sql[:300]}") from exc
    finally:
        await rows.aclose()


_AUTO_INCREMENT = re.compile(r"\s+AUTO_INCREMENT=\d+")


def normalize_create(text: str) -> str:
    """SHOW CREATE TABLE text without what changes with every insert (the ``AUTO_INCREMENT=N`` option): two
    normalized texts differ only when a DDL changed the table."""
    return _AUTO_INCREMENT.sub("", text).strip()
