"""The exception tree of mybinlog.

Every error mybinlog raises derives from :class:`MybinlogError`. Errors say what went wrong and what to do about
it; ``retriable`` tells whether trying the same thing again may succeed (a dropped connection) or not (a purged
binlog, malformed bytes, a wrong password).

::

    MybinlogError                        every error mybinlog raises; ``retriable``: may trying again succeed?
    ├── ConfigurationError               bad argument, DSN, option or setting (client side)
    ├── GtidSetError (ValueError)        a GTID set that cannot be parsed or combined
    ├── DecodeError                      bytes that cannot be decoded (carries file, offset, table when known)
    │   ├── TruncatedError               input ended in the middle of an event
    │   ├── ChecksumError                CRC32 of an event does not match
    │   ├── NotABinlogError              a file without the binlog magic bytes
    │   ├── UnknownEventError            an event type this decoder does not know and may not skip
    │   └── PacketSequenceError          a packet with an unexpected sequence id (the connection is dropped and
    │                                    resumed: readers of a server see SourceConnectionError)
    ├── SourceError                      the MySQL/MariaDB server (carries the server's error code when it gave one)
    │   ├── SourceConnectionError        cannot reach the server, or the connection dropped (retriable)
    │   │   └── SourceLaggingError       the server to fail over to has not caught up with the position yet
    │   ├── TransactionInterruptedError  a failover in the middle of a transaction: discard its part (retriable)
    │   ├── AuthenticationError          wrong user or password, or missing privileges
    │   ├── PreconditionError            server not set up for row-based CDC (binlog off, STATEMENT format, ...)
    │   ├── BinlogPurgedError            the requested position is no longer on the server
    │   └── SourceHistoryError           the server's history does not contain the position (RESET MASTER,
    │                                    another server): resuming would skip or mix transactions
    ├── BinlogDetachedError              a shared consumer did not keep up and was detached (retriable)
    ├── BinlogStoppedError               the dispatcher of a shared consumer stopped (retriable)
    ├── BinlogClosedError                a shared consumer used after it was closed
    ├── StatusReadError                  the status of another process could not be read (retriable)
    ├── TargetError                      ClickHouse rejected a statement (its error code, the SQL)
    │   └── TargetConnectionError        ClickHouse cannot be reached or the connection broke (retriable)
    ├── TypeMappingError                 a MySQL column type or value ClickHouse cannot hold
    ├── DdlParseError                    a DDL statement that cannot be parsed
    ├── DdlApplyError                    an ALTER action that does not fit the tracked table
    ├── ReplicationError                 a replica cannot go on (the message names the fix)
    │   └── TargetUnavailableError       ClickHouse failed for longer than the retry budget (retriable)
    ├── ReplicaLockedError               another process writes this replica
    └── SnapshotError                    a snapshot cannot go on or did not finish

Every class is re-exported by :mod:`mybinlog`. Foreign exceptions (asyncmy, aiohttp, chdb, OSError, zstandard) are
translated where they enter mybinlog, always with ``raise ... from exc``.
"""

from __future__ import annotations

from typing import Protocol

__all__ = [
    "AuthenticationError",
    "BinlogClosedError",
    "BinlogDetachedError",
    "BinlogPurgedError",
    "BinlogStoppedError",
    "ChecksumError",
    "ConfigurationError",
    "DdlApplyError",
    "DdlParseError",
    "DecodeError",
    "GtidSetError",
    "MybinlogError",
    "NotABinlogError",
    "PacketSequenceError",
    "PreconditionError",
    "ReplicaLockedError",
    "ReplicationError",
    "SnapshotError",
    "SourceConnectionError",
    "SourceError",
    "SourceHistoryError",
    "SourceLaggingError",
    "StatusReadError",
    "TransactionInterruptedError",
    "TargetConnectionError",
    "TargetError",
    "TargetUnavailableError",
    "TruncatedError",
    "TypeMappingError",
    "UnknownEventError",
]


class _Position(Protocol):
    """What an error says of a binlog position: a :class:`mybinlog.BinlogPosition` (this module is the lowest layer
    and imports nothing of mybinlog, so it names only what it shows)."""

    @property
    def file(self) -> str: ...
    @property
    def offset(self) -> int: ...
    @property
    def gtid_set(self) -> object: ...


class MybinlogError(Exception):
    """Base class of every error raised by mybinlog."""

    retriable: bool = False


class ConfigurationError(MybinlogError):
    """An argument, DSN or option is invalid. Fix the call; retrying will not help."""


class GtidSetError(MybinlogError, ValueError):
    """A GTID set (or a single GTID) could not be parsed, encoded or combined."""


class DecodeError(MybinlogError):
    """Bytes that cannot be decoded as a binlog event.

    ``file`` and ``offset`` locate the event when they are known (``offset`` is the byte offset of the event's
    start in its file, or in the stream for network sources). ``type_code`` is the event type when known.
    ``schema`` and ``table`` name the table when the error concerns one (a TABLE_MAP whose names could be read,
    a rows event, or the lazy decoding of ``RowsEvent.rows``), so that a reader of many tables can tell which
    table is affected; both are ``None`` otherwise.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        offset: int | None = None,
        type_code: int | None = None,
        schema: str | None = None,
        table: str | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.offset = offset
        self.type_code = type_code
        self.schema = schema
        self.table = table
        super().__init__(message)

    def __str__(self) -> str:
        where = []
        if self.file is not None:
            where.append(f"file {self.file!r}")
        if self.offset is not None:
            where.append(f"offset {self.offset}")
        if where:
            return f"{self.message} (at {', '.join(where)})"
        return self.message

    def locate(self, *, file: str | None = None, offset: int | None = None) -> DecodeError:
        """Fill in the location if it is not known yet; returns self for ``raise err.locate(...)``."""
        if self.file is None and file is not None:
            self.file = file
        if self.offset is None and offset is not None:
            self.offset = offset
        return self

    def for_table(self, schema: str, table: str) -> DecodeError:
        """Name the table the error concerns if it is not named yet; returns self for ``raise``."""
        if self.schema is None and self.table is None:
            self.schema = schema
            self.table = table
        return self


class TruncatedError(DecodeError):
    """The input ended inside an event (a partly written or cut binlog file, or a short packet)."""


class ChecksumError(DecodeError):
    """The CRC32 checksum of an event does not match its bytes: the data is corrupt."""


class NotABinlogError(DecodeError):
    """The file does not start with the binlog magic bytes ``fe 62 69 6e``."""


class PacketSequenceError(DecodeError):
    """A packet arrived with an unexpected sequence id: the stream cannot be trusted any more."""


class UnknownEventError(DecodeError):
    """An event type the decoder does not know, and which is not flagged ignorable by the server."""


class SourceError(MybinlogError):
    """An error reported by, or while talking to, the MySQL/MariaDB server.

    ``errno`` is the server's error code (e.g. 1045, 1236) when the server sent one.
    """

    def __init__(self, message: str, *, errno: int | None = None) -> None:
        self.message = message
        self.errno = errno
        super().__init__(message)

    def __str__(self) -> str:
        if self.errno is not None:
            return f"{self.message} [server error {self.errno}]"
        return self.message


class SourceConnectionError(SourceError):
    """The server cannot be reached or the connection was lost. Reconnecting may succeed."""

    retriable = True


class SourceLaggingError(SourceConnectionError):
    """Another server of the topology (a replica the stream would fail over to) has not yet executed every
    transaction of the position to resume from. The stream waits for it (within its reconnect budget) or reads from
    another server; a replica that never catches up lost those transactions with the old primary."""


class TransactionInterruptedError(SourceError):
    """The source failed over to another server in the middle of a transaction. The events of that transaction
    already delivered cannot be matched with the new server's (it may split them into other events, or not have
    the transaction at all): discard them. The stream goes on from its ``position`` (the end of the last whole
    transaction): iterating again delivers the next transaction the new server has, from its start. A replicator
    starts again from its checkpoint, which is exact."""

    retriable = True


class AuthenticationError(SourceError):
    """The server rejected the user or password, or the user lacks a needed privilege."""


class PreconditionError(SourceError):
    """The server is not configured for row-based change data capture (see the message for the fix)."""


class BinlogPurgedError(SourceError):
    """The requested binlog file, position or GTIDs were purged from the server (or never existed)."""


class SourceHistoryError(SourceError):
    """The server's binlog history does not contain the position to resume from: it went backwards (RESET MASTER, a
    restored backup) or it is another server's history. Resuming would skip or mix transactions, so mybinlog stops;
    the fix is a new snapshot (or a new start position you choose knowingly)."""


# -- sharing -------------------------------------------------------------------------------------------------------


class BinlogDetachedError(MybinlogError):
    """The consumer did not keep up: its queue stayed full longer than ``max_milliseconds_to_wait_in_binlog_queue``
    and the dispatcher detached it. Everything queued before was delivered. Re-create the consumer from its
    committed position (``await binlog.reopen()`` or ``client.create_binlog(executed_gtid_set=...)``)."""

    retriable = True

    def __init__(self, message: str, *, position: _Position | None = None) -> None:
        self.position = position
        super().__init__(message)


class BinlogStoppedError(MybinlogError):
    """The dispatcher serving this consumer was stopped (its client was closed); the consumer cannot be used.
    Create a new consumer from the position you committed."""

    retriable = True


class BinlogClosedError(MybinlogError):
    """The consumer was closed by its owner; it cannot be read any more."""


class StatusReadError(MybinlogError):
    """The status of a consuming process could not be read (nothing listens at the address, a stale or foreign
    file, a malformed answer). Check that the process runs and serves its status at that address."""

    retriable = True


# -- replication and snapshots ---------------------------------------------------------------------------------------


class TargetError(MybinlogError):
    """ClickHouse rejected a statement, or talking to it failed.

    ``code`` is ClickHouse's error code when the server gave one (60 = unknown table, 81 = unknown database,
    193 = wrong password, ...); ``sql`` is the statement (truncated, without inserted data).
    """

    def __init__(self, message: str, *, sql: str | None = None, code: int | None = None) -> None:
        self.message = message
        self.code = code
        self.sql = _truncate(sql) if sql is not None else None
        super().__init__(message)

    def __str__(self) -> str:
        text = self.message
        if self.code is not None:
            text += f" [ClickHouse error {self.code}]"
        if self.sql is not None:
            text += f" (SQL: {self.sql})"
        return text


class TargetConnectionError(TargetError):
    """The ClickHouse server cannot be reached, or the connection broke. Trying again may succeed.

    An INSERT interrupted this way may or may not have been written: retry it with the same deduplication token
    (see :meth:`Target.insert_tsv`) where the server supports one.
    """

    retriable = True


class TypeMappingError(MybinlogError):
    """A MySQL column type that mybinlog cannot map to ClickHouse (the message names the column and type)."""


class DdlParseError(MybinlogError):
    """A statement that cannot be parsed. ``statement`` is the text (truncated to ~200 characters),
    ``position`` the character offset of the offending token (``None`` when unknown)."""

    def __init__(self, message: str, statement: str, position: int | None = None) -> None:
        self.message = message
        self.statement = statement if len(statement) <= 200 else statement[:197] + "..."
        self.position = position
        where = f" at position {position}" if position is not None else ""
        super().__init__(f"{message}{where} in statement: {self.statement}")


class DdlApplyError(MybinlogError):
    """An ALTER action that does not fit the table (unknown or duplicate column, an unsupported action)."""


class ReplicationError(MybinlogError):
    """Replication of a table or a replica cannot go on (the message names the statement or value and the fix)."""


class TargetUnavailableError(ReplicationError):
    """ClickHouse kept failing for longer than ``target_retry_seconds``; nothing was lost: run again to resume."""

    retriable = True


class ReplicaLockedError(MybinlogError):
    """Another process writes this replica (it holds the replica's lock on the source), or took it over."""


class SnapshotError(MybinlogError):
    """The snapshot cannot go on or did not finish (the message says why and how to resume)."""


_SQL_IN_ERRORS = 300  # characters of SQL quoted in an error message


def _truncate(sql: str) -> str:
    sql = sql.strip()
    if len(sql) <= _SQL_IN_ERRORS:
        return sql
    return sql[:_SQL_IN_ERRORS] + f"... ({len(sql)} characters)"
