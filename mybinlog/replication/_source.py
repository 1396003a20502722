"""Queries against the MySQL/MariaDB source: table lists, SHOW CREATE TABLE, positions, consistent reads."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

from .._dsn import DSN
from .._gtid import parse_gtid_set
from .._position import BinlogPosition
from .._transport import BinlogConnection

__all__ = ["SourceConnection", "quote_mysql_ident"]


def quote_mysql_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _text(value: Any) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes | bytearray) else str(value)


class SourceConnection:
    """A query connection to the source (never used for a binlog dump). ``async with`` closes it."""

    def __init__(self, conn: BinlogConnection) -> None:
        self._binlog_conn = conn
        self.dsn = conn.dsn
        self.info = conn.info

    @classmethod
    async def connect(cls, dsn: DSN) -> SourceConnection:
        conn = await BinlogConnection.connect(dsn, heartbeat_period=0)
        self = cls(conn)
        await self.query("SET time_zone = '+00:00'")
        return self

    async def __aenter__(self) -> SourceConnection:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._binlog_conn.close()

    async def query(self, sql: str, args: tuple[object, ...] | None = None) -> list[tuple[Any, ...]]:
        return await self._binlog_conn.query(sql, args)

    @property
    def flavor(self) -> str:
        return self.info.flavor

    async def tables(self, database: str) -> list[str]:
        rows = await self.query(
            f"SHOW FULL TABLES FROM {quote_mysql_ident(database)} WHERE Table_type = 'BASE TABLE'"
        )
        return sorted(_text(r[0]) for r in rows)

    async def show_create_table(self, database: str, table: str) -> str:
        rows = await self.query(f"SHOW CREATE TABLE {quote_mysql_ident(database)}.{quote_mysql_ident(table)}")
        return _text(rows[0][1])

    async def current_position(self) -> BinlogPosition:
        file, offset, gtids = await self._binlog_conn.current_position()
        gtid_set = parse_gtid_set(gtids, self.flavor) if gtids or self.flavor == "mariadb" else None
        return BinlogPosition(file, offset, gtid_set)

    async def start_consistent_snapshot(self) -> BinlogPosition | None:
        """Start a consistent-snapshot transaction; on MariaDB also return the binlog position it is consistent
        with (``binlog_snapshot_file``/``binlog_snapshot_position``), None on MySQL."""
        await self.query("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        await self.query("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        if self.flavor != "mariadb":
            return None
        rows = await self.query("SHOW STATUS LIKE 'binlog_snapshot_%'")
        status = {_text(k): _text(v) for k, v in rows}
        file = status.get("Binlog_snapshot_file", "")
        offset = int(status.get("Binlog_snapshot_position", "0") or 0)
        if not file:
            return None
        gtid_rows = await self.query("SELECT BINLOG_GTID_POS(%s, %s)", (file, offset))
        gtids = _text(gtid_rows[0][0]) if gtid_rows and gtid_rows[0][0] is not None else ""
        return BinlogPosition(file, offset, parse_gtid_set(gtids, "mariadb"))

    async def commit(self) -> None:
        await self.query("COMMIT")

    async def stream_rows(
        self, database: str, table: str, columns: Sequence[str], *, batch: int = 10_000
    ) -> AsyncIterator[list[tuple[Any, ...]]]:
        """Every row of ``table`` (inside the current transaction), ``batch`` rows at a time, unbuffered."""
        from asyncmy.cursors import SSCursor

        cols = ", ".join(quote_mysql_ident(c) for c in columns)
        sql = f"SELECT {cols} FROM {quote_mysql_ident(database)}.{quote_mysql_ident(table)}"
        raw = self._binlog_conn._conn
        cursor = raw.cursor(SSCursor)
        try:
            await cursor.execute(sql)
            while True:
                rows = await cursor.fetchmany(batch)
                if not rows:
                    break
                yield list(rows)
        finally:
            with contextlib.suppress(Exception):
                await cursor.close()
