"""Queries against the MySQL/MariaDB source: table lists, SHOW CREATE TABLE, positions, consistent reads."""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Any, Protocol

from ..errors import AuthenticationError, SourceConnectionError, SourceError
from ..protocol import BinlogPosition, Xid, parse_gtid_set
from ._connection import BinlogConnection
from ._dsn import DSN
from ._sql import quote_mysql_ident, select_column

__all__ = ["SourceConnection", "select_scope"]


class _Column(Protocol):
    """A column as :meth:`SourceConnection.stream_rows` reads it (``mybinlog.ddl.ColumnDef`` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def type_name(self) -> str: ...


def _text(value: Any) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes | bytearray) else str(value)


def _table(database: str, table: str) -> str:
    return f"{quote_mysql_ident(database)}.{quote_mysql_ident(table)}"


_GRANT_RE = re.compile(r"^GRANT\s+(?P<privs>.+?)\s+ON\s+(?:TABLE\s+)?(?P<obj>\S+)\s+TO\s", re.IGNORECASE | re.DOTALL)


def _split_privileges(text: str) -> list[str]:
    """``SELECT, INSERT (a, b), UPDATE`` -> ``["SELECT", "INSERT (A, B)", "UPDATE"]`` (commas in parentheses kept)."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip().upper())
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur).strip().upper())
    return [p for p in out if p]


def _ident(part: str) -> str:
    part = part.strip()
    if len(part) >= 2 and part[0] == part[-1] == "`":
        return part[1:-1].replace("``", "`")
    return part


def _db_matches(pattern: str, database: str) -> bool:
    """A database name in a database-level grant may use LIKE wildcards (``%``, ``_``; ``\\_`` is a literal _)."""
    if "%" not in pattern and "_" not in pattern:
        return pattern == database
    parts = []
    for piece in re.findall(r"\\.|%|_|[^%_\\]+|\\", pattern):
        if piece == "%":
            parts.append(".*")
        elif piece == "_":
            parts.append(".")
        else:
            parts.append(re.escape(piece[1:] if piece.startswith("\\") and len(piece) == 2 else piece))
    return re.fullmatch("".join(parts), database, re.DOTALL) is not None


def select_scope(grants: Sequence[str], database: str) -> tuple[str, set[str]] | None:
    """What ``SHOW GRANTS`` says the user may SELECT in ``database``: ``("all", set())`` (a global or database-level
    grant), ``("some", {tables})`` (only table- or column-level grants), ``("none", set())``; ``None`` when roles
    are granted (their privileges are not listed, the server decides)."""
    tables: set[str] = set()
    everything = False
    roles = False
    for line in grants:
        m = _GRANT_RE.match(line.strip())
        if m is None:
            if line.strip().upper().startswith("GRANT "):
                roles = True  # GRANT `role` TO `user`@`host`
            continue
        privs = _split_privileges(m.group("privs"))
        full = any(p in ("SELECT", "ALL", "ALL PRIVILEGES") for p in privs)
        partial = any(p.startswith("SELECT") for p in privs)  # SELECT (col, ...): some columns
        if not (full or partial):
            continue
        obj = m.group("obj")
        db_part, _, table_part = obj.partition(".")
        db = _ident(db_part)
        table = _ident(table_part)
        if db == "*":
            if full:
                everything = True
            continue
        if not _db_matches(db, database) if table == "*" else db != database:
            continue
        if table == "*" and full:
            everything = True
        elif table != "*":
            tables.add(table)
    if everything:
        return ("all", set())
    if roles:
        return None
    return ("some", tables) if tables else ("none", set())


class SourceConnection:
    """A query connection to the source (never used for a binlog dump). ``async with`` closes it."""

    def __init__(self, conn: BinlogConnection) -> None:
        self._binlog_conn = conn
        self.dsn = conn.dsn
        self.info = conn.info

    @classmethod
    async def connect(
        cls, dsn: DSN, *, check_preconditions: bool = True, net_write_timeout: int | None = None
    ) -> SourceConnection:
        """Connect with ``time_zone = '+00:00'`` (TIMESTAMP values arrive as UTC, as the binlog carries them).

        ``check_preconditions``: check the server is set up for row-based CDC (``BinlogConnection.connect``);
        ``net_write_timeout``: seconds the server waits for a slow reader of a streamed result before it drops it."""
        conn = await BinlogConnection.connect(dsn, heartbeat_period=0, check_preconditions=check_preconditions)
        self = cls(conn)
        try:
            await self.query("SET time_zone = '+00:00'")
            if net_write_timeout is not None:
                await self.query(f"SET SESSION net_write_timeout = {int(net_write_timeout)}")
        except BaseException:
            await self.close()
            raise
        return self

    async def __aenter__(self) -> SourceConnection:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def aclose(self) -> None:
        await self._binlog_conn.close()

    close = aclose  # the earlier name; aclose is the one way to close everywhere (anyio's name)

    async def query(self, sql: str, args: tuple[object, ...] | None = None) -> list[tuple[Any, ...]]:
        return await self._binlog_conn.query(sql, args)

    async def query_processlist(self, sql: str, args: tuple[object, ...] | None = None) -> list[tuple[Any, ...]]:
        """``sql`` with ``{processlist}`` read from the server's process list (BinlogConnection.query_processlist)."""
        return await self._binlog_conn.query_processlist(sql, args)

    @property
    def flavor(self) -> str:
        return self.info.flavor

    async def tables(self, database: str) -> list[str]:
        rows = await self.query(f"SHOW FULL TABLES FROM {quote_mysql_ident(database)} WHERE Table_type = 'BASE TABLE'")
        return sorted(_text(r[0]) for r in rows)

    async def estimated_rows(self, database: str, tables: Sequence[str]) -> int:
        """The source's estimate of the rows of ``tables`` (InnoDB statistics: approximate, cheap)."""
        if not tables:
            return 0
        marks = ", ".join(["%s"] * len(tables))
        rows = await self.query(
            "SELECT COALESCE(SUM(TABLE_ROWS), 0) FROM information_schema.TABLES "
            f"WHERE TABLE_SCHEMA = %s AND TABLE_NAME IN ({marks})",
            (database, *tables),
        )
        return int(rows[0][0] or 0) if rows else 0

    async def database_visible(self, database: str) -> bool:
        """Whether the database exists and the user has some privilege on it (otherwise the server hides it)."""
        rows = await self.query("SHOW DATABASES")
        return any(_text(r[0]) == database for r in rows)

    async def grants(self) -> list[str]:
        """``SHOW GRANTS`` of the current user (lines may contain password hashes: never log them)."""
        return [_text(r[0]) for r in await self.query("SHOW GRANTS")]

    async def vector_columns(self, database: str, table: str) -> set[str]:
        """The names (lower case) of the table's VECTOR columns (MySQL 9; none elsewhere)."""
        rows = await self.query(
            "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
            "AND DATA_TYPE = 'vector'",
            (database, table),
        )
        return {_text(r[0]).lower() for r in rows}

    async def check_readable(self, database: str, table: str) -> None:
        """Raise the server's error (a :class:`~mybinlog.errors.SourceError`) unless the user may SELECT ``table``
        (reads no row)."""
        await self.query(f"SELECT 1 FROM {_table(database, table)} LIMIT 0")

    async def readable_tables(self, database: str, tables: Sequence[str], group: int = 100) -> set[str]:
        """The tables of ``tables`` that one ``SELECT`` naming ``group`` of them at once shows readable (``LIMIT 0``:
        no row is read; thousands of tables in tens of round trips). A group that fails is left out: the caller
        probes its tables one by one (:meth:`check_readable`), which names the culprit. A lost connection raises."""
        readable: set[str] = set()
        for i in range(0, len(tables), group):
            chunk = tables[i : i + group]
            if len(chunk) < 2:
                continue
            sql = " UNION ALL ".join(f"(SELECT 1 FROM {_table(database, t)} LIMIT 0)" for t in chunk)
            try:
                await self.query(sql)
            except SourceConnectionError:
                raise
            except SourceError:
                continue
            readable.update(chunk)
        return readable

    async def count_rows(self, database: str, table: str, where: str | None = None) -> int:
        """``COUNT(*)`` of ``table`` (of its rows matching the SQL condition ``where``)."""
        sql = f"SELECT COUNT(*) FROM {_table(database, table)}"
        rows = await self.query(sql if where is None else f"{sql} WHERE {where}")
        return int(rows[0][0] or 0)

    async def key_bounds(self, database: str, table: str, column: str, where: str = "1") -> tuple[Any, Any]:
        """``(MIN(column), MAX(column))`` over the rows matching ``where`` (``(None, None)`` when none do)."""
        col = quote_mysql_ident(column)
        rows = await self.query(f"SELECT MIN({col}), MAX({col}) FROM {_table(database, table)} WHERE {where}")
        return rows[0][0], rows[0][1]

    async def key_at_offset(
        self, database: str, table: str, key: Sequence[str], where: str, offset: int
    ) -> tuple[Any, ...] | None:
        """The value of ``key`` (columns) of the row at ``offset`` in key order among the rows matching ``where``;
        None when fewer rows match (one pass over the key index: how the snapshot samples chunk boundaries)."""
        cols = ", ".join(quote_mysql_ident(c) for c in key)
        rows = await self.query(
            f"SELECT {cols} FROM {_table(database, table)} WHERE {where} ORDER BY {cols} LIMIT 1 OFFSET {int(offset)}"
        )
        return tuple(rows[0]) if rows else None

    async def show_create_table(self, database: str, table: str) -> str:
        rows = await self.query(f"SHOW CREATE TABLE {quote_mysql_ident(database)}.{quote_mysql_ident(table)}")
        return _text(rows[0][1])

    async def current_position(self) -> BinlogPosition:
        file, offset, gtids = await self._binlog_conn.current_position()
        gtid_set = parse_gtid_set(gtids, self.flavor) if gtids or self.flavor == "mariadb" else None
        return BinlogPosition(file, offset, gtid_set)

    async def start_consistent_snapshot(self, *, locked: bool = False) -> BinlogPosition | None:
        """Start a consistent-snapshot transaction; on MariaDB also return the binlog position it is consistent
        with (``binlog_snapshot_file``/``binlog_snapshot_position``).

        MySQL keeps no such position: with ``locked`` the snapshot starts under ``FLUSH TABLES WITH READ LOCK``
        (as ``mysqldump --single-transaction --source-data`` does: no transaction can commit meanwhile) and the
        position is read before ``UNLOCK TABLES`` (a moment of blocked writes; the user needs RELOAD, else an
        :class:`~mybinlog.errors.AuthenticationError` naming the grant). Without ``locked``, None on MySQL."""
        await self.query("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        if self.flavor != "mariadb":
            if not locked:
                await self.query("START TRANSACTION WITH CONSISTENT SNAPSHOT")
                return None
            try:
                await self.query("FLUSH TABLES WITH READ LOCK")
            except AuthenticationError as exc:
                raise AuthenticationError(
                    f"{self.dsn.display}: user {self.dsn.user!r} may not run FLUSH TABLES WITH READ LOCK, which "
                    "gives a collapsing replica's initial load the exact binlog position of its snapshot on MySQL: "
                    f"GRANT RELOAD ON *.* TO '{self.dsn.user}'@'<host>', or use engine='replacing'",
                    errno=exc.errno,
                ) from None
            try:
                await self.query("START TRANSACTION WITH CONSISTENT SNAPSHOT")
                return await self.current_position()
            finally:
                await self.query("UNLOCK TABLES")  # releases the global read lock; the transaction goes on
        await self.query("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        rows = await self.query("SHOW STATUS LIKE 'binlog_snapshot_%'")
        status = {_text(k): _text(v) for k, v in rows}
        file = status.get("Binlog_snapshot_file", "")
        offset = int(status.get("Binlog_snapshot_position", "0") or 0)
        if not file:
            return None
        gtids = await self.binlog_gtid_pos(file, offset) or ""
        return BinlogPosition(file, offset, parse_gtid_set(gtids, "mariadb"))

    async def binlog_end(self) -> tuple[str, int, str | None] | None:
        """The current end of the binlog (``SHOW MASTER STATUS``; ``SHOW BINARY LOG STATUS`` on MySQL 8.2+): file,
        offset and MySQL's executed GTID set (as text, without newlines and spaces; None on MariaDB), or None when
        binary logging is off. One query (:meth:`current_position` adds MariaDB's GTIDs)."""
        new_syntax = self.flavor == "mysql" and self.info.version >= (8, 2, 0)
        rows = await self.query("SHOW BINARY LOG STATUS" if new_syntax else "SHOW MASTER STATUS")
        if not rows:
            return None
        row = rows[0]
        gtids = None
        if self.flavor == "mysql" and len(row) >= 5:
            gtids = _text(row[4]).replace("\n", "").replace(" ", "")
        return _text(row[0]), int(row[1]), gtids

    async def start_snapshot_read(self) -> tuple[str, int] | None:
        """Start a ``REPEATABLE READ`` consistent-snapshot transaction and return the binlog position its read view
        is consistent with (``binlog_snapshot_file``/``binlog_snapshot_position``: MariaDB, Percona Server), or
        None where the server keeps no such position (MySQL)."""
        await self.query("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        await self.query("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        rows = await self.query("SHOW SESSION STATUS LIKE 'binlog_snapshot_%'")
        status = {_text(k).lower(): _text(v) for k, v in rows}
        file = status.get("binlog_snapshot_file", "")
        if not file:
            return None
        return file, int(status.get("binlog_snapshot_position") or 0)

    async def binlog_gtid_pos(self, file: str, offset: int) -> str | None:
        """MariaDB's GTID position at ``file:offset`` (``BINLOG_GTID_POS``), None when the server cannot tell (the
        file was purged)."""
        rows = await self.query("SELECT BINLOG_GTID_POS(%s, %s)", (file, offset))
        if not rows or rows[0][0] is None:
            return None
        return _text(rows[0][0])

    async def gtid_purged(self) -> str | None:
        """MySQL's ``@@global.gtid_purged`` (newlines removed): the transactions no longer in any binlog file."""
        rows = await self.query("SELECT @@global.gtid_purged")
        if not rows or rows[0][0] is None:
            return None
        return _text(rows[0][0]).replace("\n", "")

    async def binlog_sizes(self) -> list[tuple[str, int]]:
        """``SHOW BINARY LOGS``: (name, size) of every binlog file on the server, oldest first; the last one is being
        written (its size is its end)."""
        return await self._binlog_conn.binlog_files()

    async def global_variables(self, names: Sequence[str]) -> dict[str, str]:
        """The server's global variables among ``names`` (names lower case, values as text; a variable the server
        does not have is missing)."""
        if not names:
            return {}
        marks = ", ".join(["%s"] * len(names))
        rows = await self.query(f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({marks})", tuple(names))
        return {_text(k).lower(): _text(v) for k, v in rows}

    async def commit(self) -> None:
        await self.query("COMMIT")

    async def binlog_files(self) -> list[str]:
        """The names of the binlog files still on the server, oldest first (``SHOW BINARY LOGS``)."""
        return [name for name, _size in await self._binlog_conn.binlog_files()]

    async def xa_recover(self) -> list[Xid] | None:
        """The XA transactions prepared on the server now (``XA RECOVER``), or None when the user may not list them
        (MySQL 8.0+ needs the ``XA_RECOVER_ADMIN`` privilege and answers error 1401 without it; MariaDB lists them to
        any user)."""
        mysql = self.flavor != "mariadb"
        try:  # MySQL's CONVERT XID gives the data as hex: the drivers may decode raw bytes as text
            rows = await self.query("XA RECOVER CONVERT XID" if mysql else "XA RECOVER")
        except SourceError as exc:
            if exc.errno in (1401, 1227, 1044, 1045, 1142):
                return None
            raise
        out = []
        for row in rows:
            format_id, gtrid_len, bqual_len, data = int(row[0]), int(row[1]), int(row[2]), row[3]
            if isinstance(data, str):
                data = (bytes.fromhex(data[2:]) if mysql and data[:2].lower() == "0x"
                        else data.encode("utf-8", "surrogateescape"))  # fmt: skip
            raw = bytes(data)
            out.append(Xid(raw[:gtrid_len], raw[gtrid_len : gtrid_len + bqual_len], format_id))
        return out

    def stream_query(self, sql: str, *, batch_rows: int = 10_000) -> AsyncGenerator[list[tuple[Any, ...]], None]:
        """The rows of ``sql`` (inside the current transaction) in lists of up to ``batch_rows``, unbuffered; close
        the iterator (or read it to the end) before the next query."""
        return self._binlog_conn.stream_query(sql, batch_rows=batch_rows)

    async def stream_rows(
        self, database: str, table: str, columns: Sequence[str | _Column], *, batch: int = 10_000
    ) -> AsyncIterator[list[tuple[Any, ...]]]:
        """Every row of ``table`` (inside the current transaction), ``batch`` rows at a time, unbuffered.

        ``columns``: column definitions (``mybinlog.ddl.ColumnDef``: a name and a MySQL type), each read as
        :func:`select_column` says (a VECTOR as its bytes: the drivers cannot decode a VECTOR field), or names (the
        table's VECTOR columns are then looked up in information_schema and read the same way)."""
        vectors: set[str] = set()
        if any(isinstance(c, str) for c in columns):
            vectors = await self.vector_columns(database, table)
        cols = ", ".join(
            select_column(c.name, c.type_name)
            if not isinstance(c, str)
            else select_column(c, "vector" if c.lower() in vectors else "")
            for c in columns
        )
        sql = f"SELECT {cols} FROM {quote_mysql_ident(database)}.{quote_mysql_ident(table)}"
        rows = self.stream_query(sql, batch_rows=batch)
        try:
            async for batch_of_rows in rows:
                yield batch_of_rows
        finally:
            await rows.aclose()
