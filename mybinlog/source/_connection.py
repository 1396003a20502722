"""One binlog connection to a MySQL or MariaDB server: connect, check, position, dump, read raw events.

asyncmy does the connection phase (authentication including MySQL 8's caching_sha2_password, TLS) and runs the
control queries, through its public API. When the dump starts, the connection's socket is taken over
(:mod:`mybinlog.source._asyncmy`, the one module that touches asyncmy's internals): the dump command is written
and the packet stream read by :class:`~mybinlog.source._wire.WireProtocol` and the sans-IO
:class:`~mybinlog.protocol._packets.PacketFramer` (packet headers, sequence ids, 16 MiB continuations, EOF and
ERR packets). :class:`BinlogConnection` moves bytes only: it returns each event's raw bytes (19-byte header, body,
and the CRC32 when :attr:`BinlogConnection.checksum` is true) for the sans-IO decoder.

Every foreign exception is translated where it enters, by :func:`_translate_errors`:

- access denied (1045, 1698) -> :class:`AuthenticationError` naming ``user@host:port`` (never the password);
- missing privilege (1227, 1142, 1044) -> :class:`AuthenticationError` naming the GRANT that fixes it;
- cannot connect, connection dropped, timeouts, server shutdown -> :class:`SourceConnectionError`
  (``retriable``);
- 1236 about purged binlogs or unknown GTIDs -> :class:`BinlogPurgedError`;
- any other server error -> :class:`SourceError` with its ``errno``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import re
import struct
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, NoReturn

import asyncmy
from asyncmy import errors as asyncmy_errors
from asyncmy.cursors import SSCursor

from ..errors import (
    AuthenticationError,
    BinlogPurgedError,
    ConfigurationError,
    GtidSetError,
    MybinlogError,
    PacketSequenceError,
    PreconditionError,
    SourceConnectionError,
    SourceError,
)
from ..protocol import (
    EofPacket,
    ErrorPacket,
    PacketFramer,
    StopPacket,
    encode_packets,
    parse_error_packet,
)
from . import _asyncmy as compat
from ._dsn import DSN, DSNKey
from ._wire import ConnectionLost, WireProtocol

__all__ = [
    "BINLOG_DUMP_NON_BLOCK",
    "BINLOG_SEND_ANNOTATE_ROWS_EVENT",
    "BINLOG_THROUGH_GTID",
    "COM_BINLOG_DUMP",
    "COM_BINLOG_DUMP_GTID",
    "SERVER_ID_RANGE",
    "BinlogConnection",
    "ServerInfo",
    "TransportStatistics",
    "encode_binlog_dump",
    "encode_binlog_dump_gtid",
    "missing_privileges",
    "parse_error_packet",
    "random_server_id",
    "translate_server_error",
]

logger = logging.getLogger("mybinlog.transport")

COM_BINLOG_DUMP = 0x12
COM_BINLOG_DUMP_GTID = 0x1E
BINLOG_DUMP_NON_BLOCK = 0x01
BINLOG_THROUGH_POSITION = 0x02
BINLOG_THROUGH_GTID = 0x04
BINLOG_SEND_ANNOTATE_ROWS_EVENT = 0x02  # MariaDB's meaning of flag 0x02 in COM_BINLOG_DUMP
MARIA_SLAVE_CAPABILITY_GTID = 4

SERVER_ID_RANGE = (0x4000_0000, 0xFFFF_FFFF)
"""Where random replica server ids are drawn from: above the small ids people give real servers."""

_MAX_HEARTBEAT_SECONDS = 4_294_967.0  # MySQL's limit for MASTER_HEARTBEAT_PERIOD
_MIN_IDLE_TIMEOUT = 30.0
_DUMP = struct.Struct("<BIHI")  # command, position, flags, server id
_DUMP_GTID = struct.Struct("<BHII")  # command, flags, server id, file name length

_CONNECTION_ERRNOS = frozenset(
    {
        1040,  # too many connections
        1053,  # server shutdown in progress
        1077,  # normal shutdown
        1927,  # MariaDB: connection was killed
        2002,  # can't connect through socket
        2003,  # can't connect to server
        2005,  # unknown host
        2006,  # server has gone away
        2013,  # lost connection during query
        2055,  # lost connection (system error)
    }
)
_AUTH_ERRNOS = frozenset({1045, 1698})  # access denied (wrong user/password), unix_socket plugin mismatch
_PRIVILEGE_ERRNOS = frozenset({1044, 1142, 1227})  # db access denied, table access denied, needs privilege
_PURGED_PATTERNS = (
    "purged",
    "could not find first log",
    "could not find gtid",
    "could not find next log",
    "not in the master's binlog",
    "not in the source's binlog",
    "is not found in the binlog index",
    "could not open log file",
    "binary log is not open",
)
# TLS failures a retry does not cure: a certificate that does not verify (wrong ssl_ca, a host name it does not
# name, expired), a client certificate the server refuses, no protocol version or cipher both sides accept
_TLS_REASON_RE = re.compile(r"\[SSL: ([A-Z0-9_]+)\]")
_TLS_TRANSIENT_REASONS = frozenset({"UNEXPECTED_EOF_WHILE_READING", "WRONG_VERSION_NUMBER"})  # a cut; no TLS offered
_DNS_FAILURE_RE = re.compile(r"Name or service not known|No address associated with hostname|nodename nor servname")
_MARIADB_GTID_RE = re.compile(r"\d+-\d+-\d+")
_VERSION_RE = re.compile(r"(\d+)\.(\d+)\.(\d+)")


# -- errors ---------------------------------------------------------------------------------------------


def _grant_hint(flavor: str | None, user: str) -> str:
    if flavor == "mariadb":
        return f"GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO '{user}'@'<host>'"
    if flavor == "mysql":
        return f"GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{user}'@'<host>'"
    return (
        f"GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{user}'@'<host>' (MariaDB 10.5+: REPLICATION "
        "SLAVE, BINLOG MONITOR)"
    )


def translate_server_error(
    dsn: DSN, errno: int | None, message: str, *, flavor: str | None = None, during: str = ""
) -> SourceError:
    """Map a server (or client library) error code and message to mybinlog's exception tree."""
    where = f"{dsn.display}" + (f" ({during})" if during else "")
    if errno in _AUTH_ERRNOS:
        return AuthenticationError(
            f"{where}: the server rejected user {dsn.user!r}: {message}. Check the DSN's user name and password, "
            f"and that the account may connect from this host",
            errno=errno,
        )
    if errno in _PRIVILEGE_ERRNOS:
        return AuthenticationError(
            f"{where}: user {dsn.user!r} lacks a privilege: {message}. mybinlog needs: {_grant_hint(flavor, dsn.user)}",
            errno=errno,
        )
    if errno == 4052 or (errno == 1236 and "same server_uuid/server_id" in message):
        return SourceError(
            f"{where}: {message}. Another replica or reader connected with the same server_id and the server "
            "dropped this one: give every reader a unique server_id (or leave it None for a random one)",
            errno=errno,
        )
    if errno == 1236 and any(p in message.lower() for p in _PURGED_PATTERNS):
        return BinlogPurgedError(
            f"{where}: {message.rstrip('. ')}. The binlog/GTIDs asked for were purged (or never existed on this "
            "server). A replica cannot resume from its checkpoint (the changes in between are gone): take a new "
            "snapshot (mybinlog snapshot, or drop the replica's checkpoint and tables and start replicate again for "
            "a new initial load). A reader that may skip those changes can start from a newer position (see SHOW "
            "BINARY LOGS)",
            errno=errno,
        )
    if errno == 3159:  # MySQL require_secure_transport=ON, reached without TLS
        return PreconditionError(
            f"{where}: the server requires TLS (require_secure_transport=ON) and the DSN does not ask for it: "
            f"{message}. Add ssl=true to the DSN (or ssl=verify_ca&ssl_ca=/path/ca.pem to check the certificate)",
            errno=errno,
        )
    tls = _TLS_REASON_RE.search(message)
    if (tls is not None and tls.group(1) not in _TLS_TRANSIENT_REASONS) or "certificate verify failed" in message:
        reason = tls.group(1) if tls is not None else "CERTIFICATE_VERIFY_FAILED"
        if reason == "CERTIFICATE_VERIFY_FAILED":
            fix = (
                "the server's certificate does not verify against the DSN's ssl_ca (or the system CAs), or does "
                "not name the host (ssl=verify_identity): give ssl_ca the CA that signed the server's certificate, "
                "connect by a name the certificate holds, or use ssl=verify_ca (any host name) or ssl=true "
                "(encrypted, unverified)"
            )
        else:
            fix = (
                "the TLS handshake failed: check the server's TLS settings and the DSN's ssl, ssl_ca, ssl_cert and "
                "ssl_key (a client certificate the server refuses, no TLS version or cipher both accept)"
            )
        return SourceError(f"{where}: {message}. Not retried: {fix}", errno=errno)
    if errno in _CONNECTION_ERRNOS or errno is None:
        if _DNS_FAILURE_RE.search(message):
            message += (
                f"; the host name {dsn.host!r} does not resolve (retried: a restarting container's name may "
                "vanish from DNS for a while): check the host of the DSN"
            )
        return SourceConnectionError(f"{where}: {message}", errno=errno)
    return SourceError(f"{where}: {message}", errno=errno)


def _translate_exception(
    exc: BaseException, dsn: DSN, *, flavor: str | None = None, during: str = ""
) -> SourceError | None:
    """The mybinlog exception for a foreign one (asyncmy, socket, timeout), or ``None`` to let it through."""
    context = f" ({during})" if during else ""
    if isinstance(exc, asyncmy_errors.MySQLError):
        errno, message = _mysql_error_args(exc)
        return translate_server_error(dsn, errno, message, flavor=flavor, during=during)
    if isinstance(exc, ConnectionLost):
        return SourceConnectionError(
            f"{dsn.display}: lost the connection{context}: {exc}; reconnect and resume from the last position"
        )
    if isinstance(exc, PacketSequenceError):
        return SourceConnectionError(
            f"{dsn.display}: the packet stream is out of sync ({exc}); reconnect and resume from the last position"
        )
    if isinstance(exc, TimeoutError):  # asyncio.TimeoutError is TimeoutError since Python 3.11
        return SourceConnectionError(
            f"{dsn.display}: timed out{context}; is the server reachable? (connect_timeout={dsn.connect_timeout:g} s)"
        )
    if isinstance(exc, OSError):
        return SourceConnectionError(f"{dsn.display}: cannot reach the server{context}: {exc.strerror or exc}")
    return None


@contextlib.contextmanager
def _translate_errors(dsn: DSN, *, flavor: str | None = None, during: str = "") -> Iterator[None]:
    """Translate asyncmy, socket and timeout errors into mybinlog's exceptions (``raise ... from exc``)."""
    try:
        yield
    except MybinlogError:
        raise
    except Exception as exc:
        error = _translate_exception(exc, dsn, flavor=flavor, during=during)
        if error is None:
            raise
        raise error from exc


@contextlib.contextmanager
def _tls_refused(dsn: DSN, tls: bool) -> Iterator[None]:
    """A server that does not offer TLS answers the client's TLS request in the plain protocol, which the TLS layer
    reports as ``WRONG_VERSION_NUMBER`` (asyncmy starts TLS whatever the server's capabilities): not a connection
    problem that a retry fixes, but a server without TLS (MySQL starts without it when it cannot load its
    certificate or with ``tls_version=''``; MariaDB has none unless given ``--ssl-cert``/``--ssl-key``)."""
    try:
        yield
    except asyncmy_errors.MySQLError as exc:
        if not tls or "WRONG_VERSION_NUMBER" not in str(exc):
            raise
        raise PreconditionError(
            f"{dsn.display}: the server does not offer TLS, and the DSN asks for it (ssl={dsn.ssl}): enable TLS on "
            "the server (MySQL: see its error log for 'Failed to set up SSL'; ssl_cert and ssl_key must be readable "
            "by mysqld; MariaDB: start it with --ssl-cert and --ssl-key), or connect with ssl=false"
        ) from exc


async def _accepts_over_tls(dsn: DSN) -> bool:
    """Whether the server lets the DSN's user in over TLS (an unverified handshake: only to tell a wrong password
    from an account that requires TLS; nothing is read or written on the connection)."""
    try:
        async with asyncio.timeout(dsn.connect_timeout):
            probe = await asyncmy.connect(
                host=dsn.host,
                port=dsn.port,
                user=dsn.user,
                password=dsn.password.encode("utf-8"),
                ssl=DSN(host=dsn.host, port=dsn.port, user=dsn.user, ssl="required").ssl_context(),
                connect_timeout=dsn.connect_timeout,
                program_name="mybinlog",
            )
    except Exception:  # noqa: BLE001 - any failure (a timeout too): no sign the account needs TLS
        return False
    probe.close()
    return True


@contextlib.asynccontextmanager
async def _tls_required(dsn: DSN, plain: bool) -> AsyncIterator[None]:
    """Access denied (1045) to a plain connection may mean the account requires TLS (MariaDB and MySQL ``CREATE
    USER ... REQUIRE SSL``; MySQL's require_secure_transport is its own error, 3159): then the same user and
    password get in over TLS, and the error says to add ``ssl=true`` instead of "check the password"."""
    try:
        yield
    except AuthenticationError as exc:
        if not plain or exc.errno != 1045 or dsn.unix_socket is not None or not await _accepts_over_tls(dsn):
            raise
        raise AuthenticationError(
            f"{dsn.display} (connecting): the server accepts user {dsn.user!r} only over TLS (the account requires "
            "SSL: REQUIRE SSL/X509) and the DSN does not ask for it: add ssl=true to the DSN (or "
            "ssl=verify_ca&ssl_ca=/path/ca.pem to check the certificate)",
            errno=exc.errno,
        ) from exc


def _mysql_error_args(exc: BaseException) -> tuple[int | None, str]:
    args = exc.args
    if len(args) >= 2 and isinstance(args[0], int):
        errno = args[0] if args[0] else None
        return errno, str(args[1])
    return None, str(exc)


# -- server description ---------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ServerInfo:
    """What the source server is and how its binlog is configured (read once at connect)."""

    flavor: Literal["mysql", "mariadb"]
    version: tuple[int, int, int]
    version_string: str
    server_id: int
    server_uuid: str | None
    """MySQL's ``server_uuid`` (the source id in its GTIDs); ``None`` on MariaDB."""
    gtid_mode: bool
    """MySQL: ``gtid_mode=ON``. MariaDB always logs GTIDs: ``True``."""
    log_bin: bool
    binlog_format: str
    binlog_row_image: str
    binlog_row_metadata: str | None
    """``FULL`` puts column names and more in each TABLE_MAP; ``None`` when the server has no such "
    "variable."""
    binlog_checksum: str
    """``NONE`` or ``CRC32``."""

    @property
    def is_mariadb(self) -> bool:
        return self.flavor == "mariadb"


def _parse_version(text: str) -> tuple[int, int, int]:
    # MariaDB before 11 may prefix "5.5.5-" in the handshake; VERSION() does not, but be tolerant.
    if text.startswith("5.5.5-") and "mariadb" in text.lower():
        text = text[len("5.5.5-") :]
    match = _VERSION_RE.search(text)
    if match is None:
        return (0, 0, 0)
    return (int(match.group(1)), int(match.group(2)), int(match.group(3)))


def _server_info(variables: dict[str, str]) -> ServerInfo:
    version_string = variables.get("version", "")
    flavor: Literal["mysql", "mariadb"] = "mariadb" if "mariadb" in version_string.lower() else "mysql"
    if flavor == "mariadb":
        gtid_mode = True
    else:
        gtid_mode = variables.get("gtid_mode", "OFF").upper() == "ON"
    return ServerInfo(
        flavor=flavor,
        version=_parse_version(version_string),
        version_string=version_string,
        server_id=int(variables.get("server_id") or 0),
        server_uuid=variables.get("server_uuid") or None,
        gtid_mode=gtid_mode,
        log_bin=variables.get("log_bin", "OFF").upper() in ("ON", "1"),
        binlog_format=variables.get("binlog_format", "").upper(),
        binlog_row_image=variables.get("binlog_row_image", "").upper(),
        binlog_row_metadata=(variables.get("binlog_row_metadata") or "").upper() or None,
        binlog_checksum=(variables.get("binlog_checksum") or "NONE").upper(),
    )


def _check_binlog_settings(info: ServerInfo, dsn: DSN, *, require_full_row_image: bool = True) -> None:
    where = dsn.display
    if not info.log_bin:
        raise PreconditionError(
            f"{where}: binary logging is off (log_bin=OFF); mybinlog reads the binlog: start the server with "
            "--log-bin (and a --server-id), e.g. --log-bin=mysql-bin --server-id=1"
        )
    if info.binlog_format != "ROW":
        raise PreconditionError(
            f"{where}: binlog_format is {info.binlog_format or 'unknown'}; mybinlog needs ROW: SET GLOBAL "
            "binlog_format=ROW and restart writers (sessions keep their format), or start the server with "
            "--binlog-format=ROW"
        )
    if info.binlog_row_image != "FULL":
        if require_full_row_image:
            raise PreconditionError(
                f"{where}: binlog_row_image is {info.binlog_row_image or 'unknown'}; mybinlog needs FULL (every "
                "column of every changed row): SET GLOBAL binlog_row_image=FULL and restart writers, or start the "
                "server with --binlog-row-image=FULL"
            )
        logger.info(
            "%s: binlog_row_image is %s, not FULL: row images may leave columns out (mybinlog.MISSING; "
            '{"$missing": true} in dump\'s JSON Lines, left out of its text)',
            where,
            info.binlog_row_image or "unknown",
        )
    if info.binlog_row_metadata != "FULL":
        logger.warning(
            "%s: binlog_row_metadata is %s, not FULL: table maps carry no column names, ENUM/SET labels or "
            "primary keys, so events have None names (dump prints null names, @1, @2... in text) and ENUM/SET "
            "values as numbers (replicate takes names from the table definitions it tracks); set "
            "binlog_row_metadata=FULL on the server to have them in every table map",
            where,
            info.binlog_row_metadata or "unsupported",
        )


_GRANT_RE = re.compile(r"^GRANT\s+(.+?)\s+ON\s+(\S+)\s+TO\s", re.IGNORECASE | re.DOTALL)


def missing_privileges(grants: list[str], flavor: str) -> list[str] | None:
    """The replication privileges missing from ``SHOW GRANTS`` output (global grants only).

    Returns ``None`` when roles are granted (their privileges are not listed; the server will decide).
    Grant lines can contain password hashes: they are never logged or put in messages.
    """
    privileges: set[str] = set()
    has_roles = False
    for line in grants:
        match = _GRANT_RE.match(line.strip())
        if match is None:
            if line.strip().upper().startswith("GRANT "):
                has_roles = True  # "GRANT `role` TO `user`@`host`"
            continue
        if match.group(2).replace("`", "") != "*.*":
            continue
        privileges.update(p.strip().upper() for p in match.group(1).split(","))
    if "ALL PRIVILEGES" in privileges or "ALL" in privileges:
        return []
    monitor = (
        ("BINLOG MONITOR", "REPLICATION CLIENT", "SUPER")
        if flavor == "mariadb"
        else (
            "REPLICATION CLIENT",
            "SUPER",
        )
    )
    missing = []
    if "REPLICATION SLAVE" not in privileges:
        missing.append("REPLICATION SLAVE")
    if not any(p in privileges for p in monitor):
        missing.append(monitor[0])
    if missing and has_roles:
        return None
    return missing


def random_server_id(avoid: int | None = None) -> int:
    """A random replica server id in :data:`SERVER_ID_RANGE` (different from ``avoid``)."""
    rng = random.SystemRandom()
    while True:
        candidate = rng.randint(*SERVER_ID_RANGE)
        if candidate != avoid:
            return candidate


@dataclass(frozen=True)
class TransportStatistics:
    """A snapshot of a :class:`BinlogConnection`'s receive side."""

    buffered_bytes: int
    """Bytes received from the server and not yet cut into events."""
    pending_events: int
    """Events cut from the buffer and not yet returned by read_event()/read_events()."""
    reading_paused: bool
    """True while the socket is not read because the buffer is over its limit (8 MiB)."""


# -- dump commands --------------------------------------------------------------------------------------


def encode_binlog_dump(*, file: str, position: int, server_id: int, flags: int) -> bytes:
    """COM_BINLOG_DUMP: command, position u32, flags u16, server id u32, then the file name to the end."""
    return _DUMP.pack(COM_BINLOG_DUMP, position, flags, server_id) + file.encode("utf-8")


def encode_binlog_dump_gtid(*, file: str, position: int, server_id: int, flags: int, gtid_data: bytes) -> bytes:
    """COM_BINLOG_DUMP_GTID (MySQL 5.6+): command, flags u16, server id u32, name length u32, name,
    position u64, GTID data length u32, GTID data (the server reads the length even when it is 0)."""
    name = file.encode("utf-8")
    return b"".join(
        (
            _DUMP_GTID.pack(COM_BINLOG_DUMP_GTID, flags, server_id, len(name)),
            name,
            struct.pack("<QI", position, len(gtid_data)),
            gtid_data,
        )
    )


# -- the connection -------------------------------------------------------------------------------------


_PREFERRED: dict[DSNKey, int] = {}  # several servers: which one a stream of this process reads (prefer_server)


def prefer_server(dsn: DSN, index: int) -> None:
    """Say that a stream of this process reads the ``index``-th server of ``dsn``: the other connections made with
    this DSN (queries, the replica lock) try that server first."""
    if dsn.fallbacks:
        _PREFERRED[dsn.key] = index


class BinlogConnection:
    """A connection to one server, used for a few control queries and then for one binlog dump.

    Create with :meth:`connect`; use as ``async with``. After :meth:`start_dump` the connection only streams
    events (:meth:`read_event`); queries need another connection.

    ``server_id`` identifies this reader to the source as a replica. It must be unique among everything that
    replicates from that server: a second dump with the same id makes the server kill the first one. Leave it
    ``None`` to draw a random id from :data:`SERVER_ID_RANGE`.

    ``heartbeat_period`` (seconds, 0 = off): while idle, the server sends a HEARTBEAT event (type 27) this
    often, which proves the connection is alive. When no byte at all arrives for ``idle_timeout`` seconds,
    reading raises :class:`SourceConnectionError`. The default ``idle_timeout`` is
    ``max(30, 4 * heartbeat_period)`` with heartbeats, and no limit without.
    """

    def __init__(
        self,
        conn: Any,
        dsn: DSN,
        info: ServerInfo,
        *,
        server_id: int,
        heartbeat_period: float,
        idle_timeout: float | None,
        checksum: bool,
    ) -> None:
        self._conn = conn
        self.dsn = dsn
        self.info = info
        self.server_id = server_id
        self.heartbeat_period = heartbeat_period
        self.idle_timeout = idle_timeout
        self.checksum = checksum
        """Whether streamed events end with a 4-byte CRC32 (the server's ``binlog_checksum`` is CRC32)."""
        self._wire: WireProtocol | None = None  # the socket, once the dump started
        self._batch: list[bytes] = []  # received events not yet returned: self._batch[self._batch_index:]
        self._batch_index = 0
        self._stop: StopPacket | None = None  # the non-event packet (EOF, error) after the batch
        self._finished = False
        self._blocking = True  # the dump waits for new events: an EOF then is the server ending it, not the end
        self._closed = False
        self._broken: str | None = None

    # ---- connecting -----------------------------------------------------------------------------------

    @classmethod
    async def connect(
        cls,
        dsn: DSN,
        *,
        server_id: int | None = None,
        heartbeat_period: float = 5.0,
        check_preconditions: bool = True,
        idle_timeout: float | None = None,
        require_full_row_image: bool = True,
    ) -> BinlogConnection:
        """Connect, read :class:`ServerInfo`, check the server is set up for row-based CDC, negotiate
        checksums and heartbeats.

        Raises :class:`AuthenticationError` (wrong credentials or missing privilege),
        :class:`SourceConnectionError` (unreachable; retriable), :class:`PreconditionError` (binlog off, not
        ROW, not FULL row image unless ``require_full_row_image=False``: MINIMAL and NOBLOB images then decode with
        absent columns as ``MISSING``) and :class:`ConfigurationError` (bad arguments).
        """
        if dsn.fallbacks:
            return await cls._connect_first(
                dsn,
                server_id=server_id,
                heartbeat_period=heartbeat_period,
                check_preconditions=check_preconditions,
                idle_timeout=idle_timeout,
                require_full_row_image=require_full_row_image,
            )
        compat.check_asyncmy_compat()
        if server_id is not None and (
            isinstance(server_id, bool) or not isinstance(server_id, int) or not 0 < server_id <= 0xFFFF_FFFF
        ):
            raise ConfigurationError(f"server_id must be an integer from 1 to 4294967295, got {server_id!r}")
        if not 0 <= heartbeat_period <= _MAX_HEARTBEAT_SECONDS:
            raise ConfigurationError(
                f"heartbeat_period must be from 0 (off) to {_MAX_HEARTBEAT_SECONDS:g} seconds, got {heartbeat_period!r}"
            )
        if idle_timeout is None and heartbeat_period > 0:
            idle_timeout = max(_MIN_IDLE_TIMEOUT, 4 * heartbeat_period)
        if idle_timeout is not None and not idle_timeout > 0:
            raise ConfigurationError(f"idle_timeout must be positive seconds or None, got {idle_timeout!r}")

        ssl_context = dsn.ssl_context()
        async with _tls_required(dsn, ssl_context is None):
            # One budget for the whole connection phase: TCP connect, TLS, authentication and the setup queries
            # (a server that accepts connections but does not answer must not hang us).
            try:
                async with asyncio.timeout(dsn.connect_timeout):
                    with _translate_errors(dsn, during="connecting"), _tls_refused(dsn, ssl_context is not None):
                        conn = await asyncmy.connect(
                            host=dsn.host,
                            port=dsn.port,
                            user=dsn.user,
                            password=dsn.password.encode("utf-8"),
                            database=dsn.database,
                            unix_socket=dsn.unix_socket,
                            ssl=ssl_context,
                            connect_timeout=dsn.connect_timeout,
                            autocommit=True,
                            charset="utf8mb4",
                            program_name="mybinlog",
                        )
                    try:
                        return await cls._setup(
                            conn,
                            dsn,
                            server_id=server_id,
                            heartbeat_period=heartbeat_period,
                            idle_timeout=idle_timeout,
                            check_preconditions=check_preconditions,
                            require_full_row_image=require_full_row_image,
                        )
                    except BaseException:
                        conn.close()
                        raise
            except TimeoutError as exc:
                raise SourceConnectionError(
                    f"{dsn.display}: the server did not complete the connection within connect_timeout="
                    f"{dsn.connect_timeout:g} s; is it overloaded or hung? Retry, or raise connect_timeout in the DSN"
                ) from exc

    @classmethod
    async def _connect_first(cls, dsn: DSN, **options: Any) -> BinlogConnection:
        """The first of the DSN's servers that answers (a server that cannot be reached is skipped; any other
        error, a wrong password for one, is raised at once), starting with the one a stream of this process reads
        (:func:`prefer_server`), so that queries go where the binlog is read. The connection's ``dsn`` names that
        server alone."""
        failures: list[str] = []
        last: SourceConnectionError | None = None
        first = _PREFERRED.get(dsn.key, 0)
        count = len(dsn.servers)
        for index in [(first + step) % count for step in range(count)]:
            try:
                return await cls.connect(dsn.at(index), **options)
            except SourceConnectionError as exc:
                failures.append(str(exc))
                last = exc
        raise SourceConnectionError(
            f"{dsn.display}: none of the {len(dsn.servers)} servers answered: " + "; ".join(failures)
        ) from last

    @classmethod
    async def _setup(
        cls,
        conn: Any,
        dsn: DSN,
        *,
        server_id: int | None,
        heartbeat_period: float,
        idle_timeout: float | None,
        check_preconditions: bool,
        require_full_row_image: bool = True,
    ) -> BinlogConnection:
        names = (
            "version",
            "server_id",
            "server_uuid",
            "gtid_mode",
            "log_bin",
            "binlog_format",
            "binlog_row_image",
            "binlog_row_metadata",
            "binlog_checksum",
        )
        in_list = ", ".join(f"'{name}'" for name in names)
        rows = await _query(conn, dsn, f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({in_list})")
        info = _server_info({str(row[0]).lower(): _text(row[1]) for row in rows})
        if check_preconditions:
            _check_binlog_settings(info, dsn, require_full_row_image=require_full_row_image)
            grants = await _query(conn, dsn, "SHOW GRANTS", flavor=info.flavor)
            missing = missing_privileges([_text(row[0]) for row in grants], info.flavor)
            if missing:
                raise AuthenticationError(
                    f"{dsn.display}: user {dsn.user!r} lacks {' and '.join(missing)}, needed to read the binlog: "
                    f"{_grant_hint(info.flavor, dsn.user)}"
                )
            if missing is None:
                logger.debug("%s: privileges come from roles; not checked before the dump", dsn.display)
        if server_id is None:
            server_id = random_server_id(avoid=info.server_id)
        elif server_id == info.server_id:
            logger.warning(
                "%s: server_id %d is the source's own server_id; pick another (or leave it None)",
                dsn.display,
                server_id,
            )

        # Checksums: announce we understand the server's algorithm, or it refuses to dump (MySQL) or strips.
        checksum = info.binlog_checksum != "NONE"
        statements = ["SET @master_binlog_checksum = @@global.binlog_checksum"]
        if info.flavor == "mysql":
            statements.append("SET @source_binlog_checksum = @@global.binlog_checksum")
        else:
            statements.append(f"SET @mariadb_slave_capability = {MARIA_SLAVE_CAPABILITY_GTID}")
        if heartbeat_period > 0:
            nanoseconds = int(heartbeat_period * 1_000_000_000)
            statements.append(f"SET @master_heartbeat_period = {nanoseconds}")
            if info.flavor == "mysql":
                statements.append(f"SET @source_heartbeat_period = {nanoseconds}")
        for statement in statements:
            await _query(conn, dsn, statement, flavor=info.flavor)
        logger.info(
            "%s: connected to %s %s (server_id %d), replica server_id %d, checksum %s, heartbeat %gs",
            dsn.display,
            info.flavor,
            info.version_string,
            info.server_id,
            server_id,
            info.binlog_checksum,
            heartbeat_period,
        )
        return cls(
            conn,
            dsn,
            info,
            server_id=server_id,
            heartbeat_period=heartbeat_period,
            idle_timeout=idle_timeout,
            checksum=checksum,
        )

    # ---- control queries ------------------------------------------------------------------------------

    def _check_queryable(self) -> None:
        if self._closed:
            raise ConfigurationError(f"{self.dsn.display}: the connection is closed")
        if self._wire is not None:
            raise ConfigurationError(
                f"{self.dsn.display}: this connection is streaming the binlog and cannot run queries; "
                "open a second BinlogConnection for control queries"
            )

    async def query(self, sql: str, args: tuple[object, ...] | None = None) -> list[tuple[Any, ...]]:
        """Run a control query before the dump starts; returns the rows."""
        self._check_queryable()
        return await _query(self._conn, self.dsn, sql, args, flavor=self.info.flavor)

    async def query_processlist(self, sql: str, args: tuple[object, ...] | None = None) -> list[tuple[Any, ...]]:
        """Run ``sql`` with ``{processlist}`` standing for the server's process list table (the connections the
        user may see: all of them with the PROCESS privilege).

        MySQL 8.0.22+ deprecates ``information_schema.PROCESSLIST`` (and ``SHOW PROCESSLIST``, built on it) with a
        warning that asyncmy logs as if it were the user's problem: there ``performance_schema.processlist`` is read,
        and only when the Performance Schema is off (its tables are empty then) the old table, without passing that
        warning on. MariaDB has only ``information_schema.PROCESSLIST``.
        """
        if self.info.flavor == "mysql":
            enabled = await self.query("SELECT @@global.performance_schema")
            if enabled and enabled[0][0] is not None and int(enabled[0][0]):
                return await self.query(sql.format(processlist="performance_schema.processlist"), args)
            with _without_processlist_deprecation():
                return await self.query(sql.format(processlist="information_schema.PROCESSLIST"), args)
        return await self.query(sql.format(processlist="information_schema.PROCESSLIST"), args)

    async def binlog_dumps(self) -> list[tuple[Any, ...]]:
        """The server's binlog dump connections, ``(ID, USER, HOST, COMMAND, TIME, STATE)`` by ID (those the user may
        see: all of them with the PROCESS privilege)."""
        return await self.query_processlist(
            "SELECT ID, USER, HOST, COMMAND, TIME, STATE FROM {processlist} "
            "WHERE COMMAND LIKE 'Binlog Dump%' ORDER BY ID"
        )

    async def current_position(self) -> tuple[str, int, str]:
        """The server's current binlog end: ``(file, position, executed GTID set as text)``.

        MySQL >= 8.2 uses ``SHOW BINARY LOG STATUS`` (older: ``SHOW MASTER STATUS``) and its Executed_Gtid_Set
        column (``''`` when gtid_mode is off). MariaDB uses ``SHOW MASTER STATUS`` and
        ``BINLOG_GTID_POS(file, position)``, so the GTID position matches the file position exactly.
        """
        use_new = self.info.flavor == "mysql" and self.info.version >= (8, 2, 0)
        rows = await self.query("SHOW BINARY LOG STATUS" if use_new else "SHOW MASTER STATUS")
        if not rows:
            raise PreconditionError(
                f"{self.dsn.display}: the server reports no binlog position (binary logging is off); start it "
                "with --log-bin"
            )
        row = rows[0]
        file, position = _text(row[0]), int(row[1])
        if self.info.flavor == "mariadb":
            gtid_rows = await self.query("SELECT BINLOG_GTID_POS(%s, %s)", (file, position))
            gtid = _text(gtid_rows[0][0]) if gtid_rows and gtid_rows[0][0] is not None else None
            if gtid is None:
                gtid_rows = await self.query("SELECT @@global.gtid_binlog_pos")
                gtid = _text(gtid_rows[0][0]) if gtid_rows else ""
        elif len(row) >= 5:
            gtid = _text(row[4])
        else:
            gtid_rows = await self.query("SELECT @@global.gtid_executed")
            gtid = _text(gtid_rows[0][0]) if gtid_rows else ""
        return file, position, gtid.replace("\n", "").replace(" ", "")

    async def binlog_files(self) -> list[tuple[str, int]]:
        """``SHOW BINARY LOGS``: the binlog files still on the server, oldest first, with their sizes."""
        rows = await self.query("SHOW BINARY LOGS")
        return [(_text(row[0]), int(row[1])) for row in rows]

    async def stream_query(
        self, sql: str, args: tuple[object, ...] | None = None, *, batch_rows: int = 10_000
    ) -> AsyncGenerator[list[tuple[Any, ...]], None]:
        """The rows of a control query in lists of up to ``batch_rows``, through an unbuffered cursor (memory
        holds one list, not the result). Like :meth:`query`, only before :meth:`start_dump`.

        Close the iterator (``aclose()``, or read it to the end) before the next query: the server sends the
        rest of the result first, and closing reads it.
        """
        self._check_queryable()
        if batch_rows < 1:
            raise ConfigurationError(f"batch_rows must be at least 1, got {batch_rows!r}")
        during = sql.split(" ", 1)[0].lower()
        cursor = self._conn.cursor(SSCursor)
        try:
            with _translate_errors(self.dsn, flavor=self.info.flavor, during=during):
                await cursor.execute(sql, args)
            while True:
                with _translate_errors(self.dsn, flavor=self.info.flavor, during=during):
                    rows = await cursor.fetchmany(batch_rows)
                if not rows:
                    return
                yield rows if isinstance(rows, list) else list(rows)
        finally:
            with contextlib.suppress(Exception):
                await cursor.close()

    # ---- the dump -------------------------------------------------------------------------------------

    async def start_dump(
        self,
        *,
        file: str | None = None,
        position: int = 4,
        gtid_set: str | object | None = None,
        blocking: bool = True,
        annotate_rows: bool = False,
    ) -> None:
        """Ask the server to stream the binlog, and wait until it has accepted (the first packet is in).

        - ``file``/``position``: start at that file and byte offset (4 = the file's first event).
        - ``gtid_set``: start after these executed GTIDs. MySQL: a GTID set (text or ``MySQLGtidSet``), sent
          with COM_BINLOG_DUMP_GTID; the server skips every transaction in the set. MariaDB: a GTID position
          (text or ``MariaDBGtidSet``), e.g. ``@@gtid_binlog_pos`` of an earlier moment; the server starts
          after it (strict mode: a GTID that is not in the binlog is an error).
        - neither: the oldest binlog file still on the server.
        - ``annotate_rows=True`` (MariaDB): also send the ANNOTATE_ROWS events (type 160, the SQL statement
          before its row events) that MariaDB logs by default but streams only on request. MySQL streams its
          ROWS_QUERY events whenever the server logs them (``binlog_rows_query_log_events=ON``).
        - ``blocking=False``: the server ends the stream at the current end of the binlog; :meth:`read_event`
          then returns ``None``. With ``blocking=True`` it waits for new events (and sends heartbeats).

        Raises :class:`BinlogPurgedError` when the start is no longer on the server.
        """
        self._check_queryable()
        if file is not None and gtid_set is not None:
            raise ConfigurationError("start_dump() takes file/position or gtid_set, not both")
        if isinstance(position, bool) or not isinstance(position, int) or position < 4:
            raise ConfigurationError(f"position must be an integer >= 4 (a binlog's first event), got {position!r}")
        info = self.info
        flags = 0 if blocking else BINLOG_DUMP_NON_BLOCK
        self._blocking = blocking
        if annotate_rows and info.flavor == "mariadb":
            flags |= BINLOG_SEND_ANNOTATE_ROWS_EVENT
        if gtid_set is not None:
            if info.flavor == "mariadb":
                payload = await self._prepare_mariadb_gtid(gtid_set, flags)
                description = f"GTID position {_mariadb_gtid_text(gtid_set)!r}"
            else:
                payload = self._prepare_mysql_gtid(gtid_set, flags)
                description = f"after GTID set {str(gtid_set)!r}"
        else:
            if file is None:
                files = await self.binlog_files()
                if not files:
                    raise PreconditionError(
                        f"{self.dsn.display}: the server has no binlog files (binary logging is off); start it "
                        "with --log-bin"
                    )
                file, position = files[0][0], 4
            if position > 0xFFFF_FFFF:
                if info.flavor == "mariadb":
                    raise ConfigurationError(f"position {position} does not fit COM_BINLOG_DUMP's 32 bits")
                payload = encode_binlog_dump_gtid(
                    file=file, position=position, server_id=self.server_id, flags=flags, gtid_data=b""
                )
            else:
                payload = encode_binlog_dump(file=file, position=position, server_id=self.server_id, flags=flags)
            description = f"{file}:{position}"

        try:
            with _translate_errors(self.dsn, flavor=info.flavor, during="starting the binlog dump"):
                wire = self._take_over()
                await wire.send(encode_packets(payload))  # a new exchange: sequence ids from 0
        except BaseException as exc:
            if self._wire is not None:  # the socket is no longer asyncmy's: it serves nothing else
                self._broken = f"the binlog dump could not be started ({type(exc).__name__})"
                self._close_socket()
            raise
        logger.info(
            "%s: binlog dump from %s (%s, replica server_id %d)",
            self.dsn.display,
            description,
            "blocking" if blocking else "non-blocking",
            self.server_id,
        )
        # The server answers with the first event (a fake ROTATE) once positioned, or with an error.
        await self._refill()
        if not self._batch and isinstance(self._stop, ErrorPacket):
            self._handle_stop()

    def _take_over(self) -> WireProtocol:
        """Move the socket from asyncmy to a :class:`WireProtocol` (before anything is awaited, so no byte can
        reach asyncmy in between); bytes asyncmy received and did not consume go to the framer first."""
        taken = compat.take_over_transport(self._conn)
        if taken is None:
            raise ConnectionLost("the connection is closed")
        transport, leftover = taken
        framer = PacketFramer(next_seq=1)  # the server's answers to the dump command count from 1
        if leftover:
            framer.feed(leftover)
        wire = WireProtocol(transport, framer, idle_timeout=self.idle_timeout)
        transport.set_protocol(wire)
        self._wire = wire
        return wire

    def _prepare_mysql_gtid(self, gtid_set: object, flags: int) -> bytes:
        from ..protocol import MySQLGtidSet

        if not self.info.gtid_mode:
            raise PreconditionError(
                f"{self.dsn.display}: a GTID start needs gtid_mode=ON on the server (it is OFF); start from a "
                "file and position instead, or enable GTIDs (SET GLOBAL gtid_mode ... step by step to ON)"
            )
        if isinstance(gtid_set, str):
            text = gtid_set
            try:
                gtid_set = MySQLGtidSet.parse(text)
            except GtidSetError as exc:
                mariadb = ": the server is MySQL, not MariaDB" if _MARIADB_GTID_RE.match(text.strip()) else ""
                raise ConfigurationError(
                    f"{text!r} is not a MySQL GTID set; expected uuid:interval lists like "
                    f"'3e11fa47-71ca-11e1-9e33-c80aa9429562:1-100' (e.g. @@global.gtid_executed){mariadb}"
                ) from exc
        if not isinstance(gtid_set, MySQLGtidSet):
            raise ConfigurationError(
                f"gtid_set must be a MySQL GTID set (text or MySQLGtidSet), got {type(gtid_set).__name__}"
            )
        return encode_binlog_dump_gtid(
            file="",
            position=4,
            server_id=self.server_id,
            flags=flags | BINLOG_THROUGH_GTID,
            gtid_data=gtid_set.encode(),
        )

    async def _prepare_mariadb_gtid(self, gtid_set: object, flags: int) -> bytes:
        text = _mariadb_gtid_text(gtid_set)
        # Validated to digits, dashes and commas, so it is safe inside the quotes.
        await self.query(
            f"SET @slave_connect_state = '{text}', @slave_gtid_strict_mode = 1, @slave_gtid_ignore_duplicates = 0"
        )
        # COM_BINLOG_DUMP with an empty file name and position 4: exactly 11 bytes, no trailing byte.
        return encode_binlog_dump(file="", position=4, server_id=self.server_id, flags=flags)

    async def _refill(self) -> bool:
        """Read the next batch of events (errors translated). Returns False at the end of the stream.

        The batch and the packet that ended it are stored before anything is returned, so a caller cancelled
        while waiting loses nothing.
        """
        wire = self._wire
        if wire is None:
            raise ConfigurationError(f"{self.dsn.display}: call start_dump() before read_event()")
        if self._broken is not None:
            raise SourceConnectionError(f"{self.dsn.display}: the connection is unusable ({self._broken}); reconnect")
        if self._finished:
            return False
        try:
            batch, stop = await wire.read_batch()
        except Exception as exc:
            error = _translate_exception(exc, self.dsn, flavor=self.info.flavor, during="reading the binlog")
            if error is None:
                raise
            self._broken = error.message
            self._close_socket()
            raise error from exc
        self._batch = batch
        self._batch_index = 0
        self._stop = stop
        return True

    def _handle_stop(self) -> None:
        """The packet that ended the events: EOF (end of a non-blocking dump) returns, anything else raises.

        An EOF that ends a *blocking* dump is the server ending it on its own: MySQL's dump thread sends one when the
        server shuts down cleanly (and when the thread is killed), where MariaDB sends error 1053. That is a lost
        connection like any other (:class:`SourceConnectionError`: reconnect), never the end of the stream.
        """
        packet = self._stop
        assert packet is not None
        self._stop = None
        if isinstance(packet, EofPacket) and self._blocking:
            self._broken = "the server ended the blocking binlog dump (it is shutting down, or the dump was killed)"
            self._close_socket()
            raise SourceConnectionError(
                f"{self.dsn.display}: {self._broken}; reconnect and resume from the last position"
            )
        if isinstance(packet, EofPacket):
            self._finished = True
            logger.debug("%s: end of the non-blocking binlog dump", self.dsn.display)
            return
        if isinstance(packet, ErrorPacket):
            self._fail(packet)
        self._broken = f"unexpected packet starting with {packet.payload[:1].hex() or 'nothing'}"
        self._close_socket()
        raise SourceConnectionError(
            f"{self.dsn.display}: {self._broken} in the binlog stream; reconnect and resume from the last position"
        )

    def _fail(self, packet: ErrorPacket) -> NoReturn:
        error = translate_server_error(
            self.dsn, packet.errno, packet.message, flavor=self.info.flavor, during="binlog dump"
        )
        self._broken = error.message
        self._close_socket()
        raise error

    async def read_event(self) -> bytes | None:
        """The next raw event, or ``None`` when a non-blocking dump has reached the end of the binlog.

        The bytes are the event as in a binlog file: 19-byte header, body, CRC32 (if :attr:`checksum`).
        Raises :class:`SourceConnectionError` when the connection drops (or stays silent past
        ``idle_timeout``), and the translated server error when the server ends the dump with one.
        Cancelling a read loses nothing: the next call returns the same event.
        """
        while True:
            batch = self._batch
            index = self._batch_index
            if index < len(batch):
                self._batch_index = index + 1
                return batch[index]
            if self._stop is not None:
                self._handle_stop()
                return None
            if not await self._refill():
                return None

    async def read_events(self) -> list[bytes] | None:
        """All events that are already received (at least one; waits if none), or ``None`` at the end of a
        non-blocking dump. The same events as :meth:`read_event`, without a call per event: use it to move
        events in bulk (a dispatcher filling its buffer). Cancellation-safe like :meth:`read_event`.
        """
        while True:
            batch = self._batch
            index = self._batch_index
            if index < len(batch):
                self._batch = []
                self._batch_index = 0
                return batch[index:] if index else batch
            if self._stop is not None:
                self._handle_stop()
                return None
            if not await self._refill():
                return None

    def statistics(self) -> TransportStatistics:
        """How much is received but not yet returned, and whether socket reads are paused for it."""
        wire = self._wire
        return TransportStatistics(
            buffered_bytes=wire.buffered if wire is not None else 0,
            pending_events=len(self._batch) - self._batch_index,
            reading_paused=wire.paused if wire is not None else False,
        )

    @property
    def streaming(self) -> bool:
        """True once :meth:`start_dump` succeeded and until the stream ended or failed."""
        return self._wire is not None and not self._finished and self._broken is None and not self._closed

    # ---- closing --------------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the connection (idempotent). A connection that never streamed says goodbye with COM_QUIT."""
        if self._closed:
            return
        self._closed = True
        if self._wire is None and self._broken is None:
            with contextlib.suppress(Exception):
                await self._conn.ensure_closed()
        self._close_socket()

    close = aclose  # the earlier name; aclose is the one way to close everywhere (anyio's name)

    def _close_socket(self) -> None:
        """Close the socket at once, without COM_QUIT (a connection in a binlog dump cannot take commands)."""
        if self._wire is not None:
            self._wire.close()
        self._conn.close()  # asyncmy's public close(): closes the transport (again) and marks it disconnected

    async def __aenter__(self) -> BinlogConnection:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "streaming" if self.streaming else "open"
        return f"<BinlogConnection {self.dsn.display} {self.info.flavor} {state} server_id={self.server_id}>"


# -- helpers --------------------------------------------------------------------------------------------


def _text(value: object) -> str:
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return "" if value is None else str(value)


def _mariadb_gtid_text(gtid_set: object) -> str:
    text = str(gtid_set).strip()
    elements = [e.strip() for e in text.split(",") if e.strip()]
    for element in elements:
        if not _MARIADB_GTID_RE.fullmatch(element) or not element.isascii():
            raise ConfigurationError(
                f"{text!r} is not a MariaDB GTID position; expected domain-server-seq list like '0-1-100,1-2-5' "
                "(e.g. @@gtid_binlog_pos)"
            )
    return ",".join(elements)


async def _query(
    conn: Any,
    dsn: DSN,
    sql: str,
    args: tuple[object, ...] | None = None,
    *,
    flavor: str | None = None,
) -> list[tuple[Any, ...]]:
    with _translate_errors(dsn, flavor=flavor, during=sql.split(" ", 1)[0].lower()):
        async with conn.cursor() as cursor:
            await cursor.execute(sql, args)
            rows = await cursor.fetchall()
    return [tuple(row) for row in rows or ()]


class _ProcesslistDeprecation(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "INFORMATION_SCHEMA.PROCESSLIST' is deprecated" not in record.getMessage()


@contextlib.contextmanager
def _without_processlist_deprecation() -> Iterator[None]:
    """Drop MySQL's deprecation warning of ``information_schema.PROCESSLIST`` that asyncmy logs, meanwhile."""
    driver = logging.getLogger("asyncmy")
    quiet = _ProcesslistDeprecation()
    driver.addFilter(quiet)
    try:
        yield
    finally:
        driver.removeFilter(quiet)
