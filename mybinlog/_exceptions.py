"""The exception tree of mybinlog.

Every error mybinlog raises derives from :class:`MybinlogError`. Errors say what went wrong and what to do about
it; ``retriable`` tells whether trying the same thing again may succeed (a dropped connection) or not (a purged
binlog, malformed bytes, a wrong password).

::

    MybinlogError
    ├── ConfigurationError          bad argument, DSN, or option (client side)
    ├── GtidSetError (ValueError)   a GTID set that cannot be parsed or combined
    ├── DecodeError                 bytes that cannot be decoded (carries file and offset when known)
    │   ├── TruncatedError          input ended in the middle of an event
    │   ├── ChecksumError           CRC32 of an event does not match
    │   ├── NotABinlogError         a file without the binlog magic bytes
    │   └── UnknownEventError       an event type this decoder does not know and may not skip
    ├── BinlogDetachedError / BinlogStoppedError / BinlogClosedError   shared consumers (mybinlog._sharing)
    └── SourceError                 the MySQL/MariaDB server (carries the server's error code when it gave one)
        ├── SourceConnectionError   cannot reach the server, or the connection dropped (retriable)
        ├── AuthenticationError     wrong user or password, or missing privileges
        ├── PreconditionError       server not set up for row-based CDC (binlog off, STATEMENT format, ...)
        ├── BinlogPurgedError       the requested position is no longer on the server
        └── SourceHistoryError      the server's history does not contain the position (RESET MASTER, another
                                    server): resuming would skip or mix transactions

Foreign exceptions (asyncmy, OSError, zstandard) are translated where they enter mybinlog, always with
``raise ... from exc``.
"""

from __future__ import annotations

__all__ = [
    "AuthenticationError",
    "BinlogPurgedError",
    "ChecksumError",
    "ConfigurationError",
    "DecodeError",
    "GtidSetError",
    "MybinlogError",
    "NotABinlogError",
    "PreconditionError",
    "SourceConnectionError",
    "SourceError",
    "SourceHistoryError",
    "TruncatedError",
    "UnknownEventError",
]


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
