"""Connections to ClickHouse: a server over HTTP (aiochclient + aiohttp) or embedded ClickHouse (chdb).

:func:`open_target` returns a :class:`Target`, one connection to one ClickHouse::

    target = await open_target("http://default:secret@127.0.0.1:8123")   # a server, over HTTP
    target = await open_target("chdb:///var/lib/mybinlog/ch")             # embedded, data in that directory
    target = await open_target(":memory:")                                 # embedded, in memory

Both kinds speak the same small interface: ``execute`` (DDL and commands), ``query`` (rows of strings) and
``insert_tsv`` (TabSeparated bytes), plus the server's :class:`Capabilities`, decided from ``SELECT version()``.

Values cross the boundary as TabSeparated text in both directions, because it is the one format every ClickHouse
version reads and writes the same way (18.16 to today) and it carries every type as text:

* writing: :func:`tsv_escape` / :func:`tsv_escape_bytes` escape one field; ``\\N`` is NULL; rows end with ``\\n``.
* reading: :meth:`Target.query` unescapes each field and returns ``str`` (``None`` for NULL). Bytes that are not
  UTF-8 (a ``String`` column holding binary data) are decoded with ``surrogateescape``, so
  ``value.encode("utf-8", "surrogateescape")`` gives back the exact bytes.

Errors are :class:`TargetError` (the server's message, its error code and the SQL, truncated); a server that
cannot be reached raises :class:`TargetConnectionError` (``retriable``). Passwords never appear in descriptions,
reprs or messages.

Embedded ClickHouse allows one data directory per process at a time (chdb's ``EmbeddedServer``): opening the same
directory again shares it (each target gets its own chdb connection), opening a different directory while one is
open raises :class:`~mybinlog.ConfigurationError`. All calls into chdb of one directory run in one worker thread,
so the event loop never blocks on chdb.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast, runtime_checkable
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from ..errors import ConfigurationError, MybinlogError, TargetConnectionError, TargetError

__all__ = [
    "Capabilities",
    "ChdbTarget",
    "HttpTarget",
    "Target",
    "TargetConnectionError",
    "TargetError",
    "FEATURE_VERSIONS",
    "open_target",
    "parse_tsv",
    "quote_bytes",
    "quote_ident",
    "quote_string",
    "quote_table",
    "tsv_escape",
    "tsv_escape_bytes",
    "tsv_unescape",
]

logger = logging.getLogger("mybinlog.target")

_T = TypeVar("_T")

#: Environment variable with the ClickHouse password, used when the URL has none.
PASSWORD_ENV = "MYBINLOG_CH_PASSWORD"

_PARSE_IN_THREAD = 256 * 1024  # HTTP results larger than this are parsed in a worker thread


# --- errors ------------------------------------------------------------------------------------------------------


_CODE_RE = re.compile(r"Code: (\d+)")
_AUTH_CODES = frozenset({192, 193, 194, 195, 516})  # unknown user, wrong/required password, ip, auth failed


def _server_message(text: str) -> tuple[str, int | None]:
    """(message, code) from a ClickHouse exception text, in the 18.x form or the current one."""
    text = text.strip()
    match = _CODE_RE.search(text)
    code = int(match.group(1)) if match else None
    # 18.x: "Code: 60, e.displayText() = DB::Exception: Table x doesn't exist., e.what() = DB::Exception"
    text = text.replace("e.displayText() = ", "")
    text = re.sub(r",? ?e\.what\(\) = DB::Exception\s*$", "", text)
    text = re.sub(r"^Code: \d+[,.] ", "", text)  # the code is reported separately
    text = re.sub(r"^DB::Exception: ", "", text)
    text = re.sub(r" \(version \d[^\n]*\)\s*$", "", text)
    # drop stack traces (they follow "Stack trace" in server logs and some HTTP answers)
    text = text.split("\nStack trace", 1)[0].split(", Stack trace", 1)[0]
    if len(text) > 2000:
        text = text[:2000] + "..."
    return text, code


# --- capabilities ------------------------------------------------------------------------------------------------

#: First ClickHouse version with each feature, usable without experimental settings. Sources: the ClickHouse
#: pull requests and changelogs named in docs/targets.md; checked against 18.16.1 (no feature) and chdb.
FEATURE_VERSIONS: Mapping[str, tuple[int, int]] = {
    "alter_if_exists": (19, 4),  # ADD COLUMN IF NOT EXISTS / DROP COLUMN IF EXISTS (#3900 in 19.1; fixed 19.4)
    "low_cardinality": (19, 3),  # LowCardinality without allow_experimental_low_cardinality_type (#4323)
    "datetime64": (20, 1),  # DateTime64(p) (#7170)
    "mutations_sync": (20, 1),  # setting mutations_sync (#8237)
    "rename_column": (20, 4),  # ALTER TABLE ... RENAME COLUMN (#9948)
    "nullable_key": (20, 7),  # MergeTree SETTINGS allow_nullable_key = 1 (#12433)
    "decimal256": (21, 6),  # Decimal(p > 38): 20.8 behind allow_experimental_bigint_types, GA 21.6 (#23631)
    "date32": (21, 9),  # Date32
    "bool_type": (21, 12),  # Bool
    "insert_deduplication_token": (22, 2),  # + non_replicated_deduplication_window (21.5, #22514) (#32304)
    "replacing_is_deleted": (23, 2),  # ReplacingMergeTree(ver, is_deleted) (#41005)
    "lightweight_delete": (23, 3),  # DELETE FROM without allow_experimental_lightweight_delete (22.8 experimental)
    "json_type": (25, 3),  # the new JSON type GA (Object('json') 22.3 and JSON 24.8 were experimental)
}

_VERSION_RE = re.compile(r"\s*(\d+)((?:\.\d+)*)")


@dataclass(frozen=True)
class Capabilities:
    """What one ClickHouse server can do, decided from its version (see :data:`FEATURE_VERSIONS`)."""

    version: tuple[int, ...]
    datetime64: bool
    date32: bool
    bool_type: bool
    json_type: bool
    decimal256: bool
    replacing_is_deleted: bool
    insert_deduplication_token: bool
    lightweight_delete: bool
    alter_if_exists: bool
    mutations_sync: bool
    low_cardinality: bool
    rename_column: bool
    nullable_key: bool

    @classmethod
    def from_version(cls, version: str) -> Capabilities:
        """From ``SELECT version()`` text such as ``"18.16.1"`` or ``"26.9.2.1"``."""
        match = _VERSION_RE.match(version)
        if match is None:
            raise TargetError(f"cannot parse the ClickHouse version {version!r}")
        numbers = (int(match.group(1)), *(int(part) for part in match.group(2).split(".")[1:]))
        if len(numbers) < 2:
            numbers = (*numbers, 0)
        major_minor = numbers[:2]
        flags = {name: major_minor >= first for name, first in FEATURE_VERSIONS.items()}
        return cls(version=numbers, **flags)

    @property
    def version_text(self) -> str:
        return ".".join(str(n) for n in self.version)

    def __str__(self) -> str:
        enabled = [f.name for f in fields(self) if f.name != "version" and getattr(self, f.name)]
        return f"ClickHouse {self.version_text} ({', '.join(enabled) or 'no optional features'})"


# --- quoting and TabSeparated ------------------------------------------------------------------------------------


def quote_ident(name: str) -> str:
    """A ClickHouse identifier in backquotes: ``quote_ident("a`b") == "`a\\\\`b`"``."""
    return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"


def quote_table(database: str, table: str) -> str:
    """```database`.`table``` (the form :meth:`Target.insert_tsv` takes)."""
    return f"{quote_ident(database)}.{quote_ident(table)}"


_LITERAL_ESCAPES = str.maketrans({"\\": "\\\\", "'": "\\'", "\0": "\\0", "\n": "\\n", "\r": "\\r", "\t": "\\t"})


def quote_string(s: str) -> str:
    """A ClickHouse string literal: ``quote_string("it's") == "'it\\\\'s'"``."""
    return "'" + s.translate(_LITERAL_ESCAPES) + "'"


def quote_bytes(b: bytes) -> str:
    """A ClickHouse string literal holding exactly these bytes (non-printable and non-ASCII bytes as ``\\xHH``)."""
    out = []
    for byte in b:
        if 0x20 <= byte < 0x7F and byte not in (0x27, 0x5C):  # printable ASCII except ' and backslash
            out.append(chr(byte))
        else:
            out.append(f"\\x{byte:02X}")
    return "'" + "".join(out) + "'"


_TSV_ESCAPES = str.maketrans(
    {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\0": "\\0", "\b": "\\b", "\f": "\\f"}
)
_TSV_BYTE_ESCAPES = (
    (b"\\", b"\\\\"),  # first: the escapes below add backslashes
    (b"\t", b"\\t"),
    (b"\n", b"\\n"),
    (b"\r", b"\\r"),
    (b"\0", b"\\0"),
    (b"\b", b"\\b"),
    (b"\f", b"\\f"),
)


def tsv_escape(value: str) -> str:
    """One TabSeparated field for a text value (backslash, tab, newline, CR, NUL, BS, FF escaped)."""
    return value.translate(_TSV_ESCAPES)


def tsv_escape_bytes(value: bytes) -> str:
    """One TabSeparated field holding exactly these bytes; bytes that are not UTF-8 become ``\\xHH``.

    The result is plain text (encodable as UTF-8), and ClickHouse stores the original bytes in a ``String``.
    """
    for raw, escaped in _TSV_BYTE_ESCAPES:
        if raw in value:
            value = value.replace(raw, escaped)
    return value.decode("utf-8", "backslashreplace")  # invalid bytes -> \xhh, which ClickHouse reads back


_UNESCAPES = {
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "0": "\0",
    "a": "\a",
    "v": "\v",
    "e": "\x1b",
}
_UNESCAPE_RE = re.compile(r"\\(x[0-9A-Fa-f]{2}|.)", re.DOTALL)


def _unescape_match(match: re.Match[str]) -> str:
    seq = match.group(1)
    if len(seq) == 3:  # xHH: one byte; >= 0x80 as its surrogateescape stand-in
        byte = int(seq[1:], 16)
        return chr(byte) if byte < 0x80 else chr(0xDC00 + byte)
    return _UNESCAPES.get(seq, seq)


def _unescape(field: str) -> str | None:
    if field == "\\N":
        return None
    value = _UNESCAPE_RE.sub(_unescape_match, field)
    if "\\x" in field:  # bytes given as \xHH may form UTF-8 characters together
        value = value.encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape")
    return value


def tsv_unescape(field: bytes | str) -> str | None:
    """One TabSeparated field as ClickHouse writes it -> its value (``None`` for ``\\N``)."""
    if isinstance(field, bytes):
        field = field.decode("utf-8", "surrogateescape")
    return _unescape(field) if "\\" in field else field


def parse_tsv(data: bytes) -> list[list[str | None]]:
    """TabSeparated output (every row ends with a newline) -> rows of unescaped fields.

    Fields are ``str``; bytes that are not UTF-8 are decoded with ``surrogateescape`` (``value.encode("utf-8",
    "surrogateescape")`` restores them); ``\\N`` is ``None``.
    """
    if not data:
        return []
    text = data.decode("utf-8", "surrogateescape")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if "\\" not in text:  # no escapes and no NULLs anywhere: split only
        return [line.split("\t") for line in lines]  # type: ignore[misc]
    rows: list[list[str | None]] = []
    append = rows.append
    for line in lines:
        if "\\" in line:
            append([_unescape(raw) if "\\" in raw else raw for raw in line.split("\t")])
        else:
            append(line.split("\t"))  # type: ignore[arg-type]
    return rows


def _insert_sql(table: str, columns: Sequence[str]) -> str:
    if not columns:
        raise ConfigurationError(f"insert into {table}: no columns given")
    return f"INSERT INTO {table} ({', '.join(quote_ident(c) for c in columns)})"


# --- the interface -----------------------------------------------------------------------------------------------


@runtime_checkable
class Target(Protocol):
    """One connection to one ClickHouse (a server over HTTP, or embedded chdb).

    Calls on one target may be made concurrently from tasks of one event loop; each call is one statement.
    """

    capabilities: Capabilities
    kind: str  # "http" | "chdb"
    description: str  # safe for logs: never the password
    database: str | None  # the default database for unqualified names (None: the server's default)

    async def execute(self, sql: str) -> None:
        """Run a statement that returns no rows (DDL, ALTER, OPTIMIZE, ...)."""
        ...

    async def query(self, sql: str) -> list[list[str | None]]:
        """Run a SELECT (without a FORMAT clause) and return all rows: strings, ``None`` for NULL."""
        ...

    async def insert_tsv(
        self, table: str, columns: Sequence[str], data: bytes, *, dedup_token: str | None = None
    ) -> None:
        """Insert TabSeparated rows (each ending with ``\\n``) into ``table`` (already quoted, "`db`.`t`").

        ``columns`` are the unquoted column names, in the order of the fields. ``dedup_token`` is sent as
        ``insert_deduplication_token`` when the server supports it (``capabilities.insert_deduplication_token``;
        ignored otherwise): a repeated insert with the same token into a table with
        ``non_replicated_deduplication_window`` (or a Replicated table) is dropped by the server. Empty ``data``
        inserts nothing.
        """
        ...

    async def aclose(self) -> None:
        """Close the connection (idempotent)."""
        ...


# --- HTTP (aiochclient over aiohttp) -----------------------------------------------------------------------------


def _redact(text: str, secret: str | None) -> str:
    if secret:
        text = text.replace(secret, "***")
        quoted = quote(secret, safe="")
        if quoted != secret:
            text = text.replace(quoted, "***")
    return text


class HttpTarget:
    """A ClickHouse server over its HTTP interface.

    The connection pool is an :class:`aiohttp.ClientSession` owned by an :class:`aiochclient.ChClient`; inserts go
    through ``ChClient.insert_file`` (the query in the URL, the TabSeparated bytes as the body), statements and
    queries are POSTed on the same session with ``wait_end_of_query=1`` (so an error is always an HTTP error, never
    text appended to a half-sent result) and read as raw TabSeparated, because aiochclient's typed row decoding does
    not know newer types (Date32, JSON, ...) and drops a row made of one empty string.

    Credentials travel in the ``X-ClickHouse-User`` / ``X-ClickHouse-Key`` headers, never in URLs.
    """

    kind: str = "http"

    def __init__(
        self,
        *,
        client: Any,
        session: Any,
        endpoint: str,
        user: str,
        password: str,
        database: str | None,
        settings: Mapping[str, str],
        description: str,
    ) -> None:
        self._client = client
        self._session = session
        self._endpoint = endpoint
        self._user = user
        self._password = password
        self.database = database
        self._settings = dict(settings)
        self.description = description
        self._headers = {"X-ClickHouse-User": user}
        if password:
            self._headers["X-ClickHouse-Key"] = password
        self._closed = False
        self.capabilities: Capabilities = Capabilities.from_version("18.16")  # replaced by open()

    def __repr__(self) -> str:
        return f"<HttpTarget {self.description}>"

    @classmethod
    async def open(cls, url: str, *, database: str | None = None) -> HttpTarget:
        """Connect (``SELECT version()``) and read the capabilities. See :func:`open_target` for the URL."""
        try:
            import aiohttp
            from aiochclient import ChClient  # type: ignore[import-untyped,unused-ignore]
        except ImportError as exc:  # pragma: no cover - depends on the installation
            raise ConfigurationError(
                "ClickHouse over HTTP needs aiochclient and aiohttp: pip install 'mybinlog[clickhouse]'"
            ) from exc
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigurationError(f"not a ClickHouse HTTP URL: {_redact_url(url)!r} (use http://host:8123)")
        settings = dict(parse_qsl(parts.query, keep_blank_values=True))
        # credentials given as query parameters go into the headers too, never into request URLs
        query_user, query_password = settings.pop("user", None), settings.pop("password", None)
        user = unquote(parts.username) if parts.username else (query_user or "default")
        if parts.password is not None:
            password = unquote(parts.password)
        else:
            password = query_password if query_password is not None else os.environ.get(PASSWORD_ENV, "")
        try:
            port = parts.port or (8443 if parts.scheme == "https" else 8123)
        except ValueError as exc:
            raise ConfigurationError(f"bad port in ClickHouse URL {_redact_url(url)!r}") from exc
        host = parts.hostname
        host_text = f"[{host}]" if ":" in host else host
        path = parts.path or "/"
        endpoint = f"{parts.scheme}://{host_text}:{port}{path}"
        if database is None:
            database = settings.pop("database", None) or None
        else:
            settings.pop("database", None)
        description = f"{parts.scheme}://{user}@{host_text}:{port}{path if path != '/' else ''}"
        if database:
            description += f" database={database}"
        connector = aiohttp.TCPConnector(keepalive_timeout=2.0, limit=16)
        session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=None, connect=10.0, sock_connect=10.0, sock_read=900.0),
        )
        client = ChClient(
            session, url=endpoint, user=user, password=password or None, database=database or "", **settings
        )
        target = cls(
            client=client,
            session=session,
            endpoint=endpoint,
            user=user,
            password=password,
            database=database,
            settings=settings,
            description=description,
        )
        try:
            rows = await target.query("SELECT version()")
            target.capabilities = Capabilities.from_version(str(rows[0][0]))
        except BaseException:
            await target.aclose()
            raise
        logger.debug("connected to %s: %s", description, target.capabilities)
        return target

    def _params(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        params = dict(self._settings)
        if self.database:
            params["database"] = self.database
        if extra:
            params.update(extra)
        return params

    def _error(self, text: str, sql: str, status: int | None = None) -> TargetError:
        message, code = _server_message(_redact(text, self._password))
        if not message:
            message = f"HTTP status {status} without a message"
        if code in _AUTH_CODES or status in (401, 403):
            message = f"{self.description}: authentication failed for user {self._user!r}: {message}"
        return TargetError(message, sql=_redact(sql, self._password), code=code)

    def _connection_error(self, exc: BaseException, sql: str) -> TargetConnectionError:
        detail = _redact(str(exc) or type(exc).__name__, self._password)
        return TargetConnectionError(
            f"cannot talk to ClickHouse at {self.description}: {type(exc).__name__}: {detail}",
            sql=_redact(sql, self._password),
        )

    async def _post(self, sql: str) -> bytes:
        import aiohttp

        if self._closed:
            raise TargetError(f"{self.description}: target is closed", sql=sql)
        params = self._params({"wait_end_of_query": "1", "default_format": "TabSeparated"})
        try:
            async with self._session.post(
                self._endpoint, params=params, headers=self._headers, data=sql.encode("utf-8")
            ) as response:
                body: bytes = await response.read()
                if response.status != 200:
                    raise self._error(body.decode("utf-8", "replace"), sql, response.status)
                return body
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise self._connection_error(exc, sql) from exc

    async def execute(self, sql: str) -> None:
        await self._post(sql)

    async def query(self, sql: str) -> list[list[str | None]]:
        body = await self._post(sql)
        if len(body) > _PARSE_IN_THREAD:
            return await asyncio.to_thread(parse_tsv, body)  # keep the loop responsive for big results
        return parse_tsv(body)

    async def insert_tsv(
        self, table: str, columns: Sequence[str], data: bytes, *, dedup_token: str | None = None
    ) -> None:
        import aiohttp
        from aiochclient import ChClient, ChClientError  # type: ignore[import-untyped,unused-ignore]

        sql = f"{_insert_sql(table, columns)} FORMAT TabSeparated"
        if not data:
            return
        if self._closed:
            raise TargetError(f"{self.description}: target is closed", sql=sql)
        client = self._client
        if dedup_token is not None and self.capabilities.insert_deduplication_token:
            # a per-call client on the same session: aiochclient takes settings per client
            client = ChClient(
                self._session,
                url=self._endpoint,
                user=self._user,
                password=self._password or None,
                database=self.database or "",
                **self._settings,
                insert_deduplication_token=dedup_token,
            )
        try:
            await client.insert_file(sql, data)
        except ChClientError as exc:
            raise self._error(str(exc), sql) from None
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise self._connection_error(exc, sql) from exc

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self._client.close()  # closes the aiohttp session


def _redact_url(url: str) -> str:
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "<unparsable URL>"
    if "password=" in parts.query:
        parts = parts._replace(query=re.sub(r"(^|&)password=[^&]*", r"\1password=***", parts.query))
    if password is not None:
        netloc = parts.netloc.rsplit("@", 1)[1]
        parts = parts._replace(netloc=f"{parts.username or ''}:***@{netloc}")
    return parts.geturl()


# --- embedded ClickHouse (chdb) ----------------------------------------------------------------------------------


class _ChdbEngine:
    """One chdb data directory in this process: a worker thread, the number of open targets."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.refs = 0
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mybinlog-chdb")

    async def run(self, func: Callable[[], _T]) -> _T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, func)


_ENGINES: dict[str, _ChdbEngine] = {}
_ENGINES_LOCK = threading.Lock()


def _acquire_engine(path: str) -> _ChdbEngine:
    with _ENGINES_LOCK:
        engine = _ENGINES.get(path)
        if engine is None:
            others = [p for p, e in _ENGINES.items() if e.refs > 0]
            if others:
                raise ConfigurationError(
                    f"embedded ClickHouse (chdb) is already open on {others[0]!r} in this process; chdb allows one "
                    f"data directory per process at a time, so {path!r} cannot be opened until every target on "
                    f"{others[0]!r} is closed (open the same directory again to share it)"
                )
            engine = _ENGINES[path] = _ChdbEngine(path)
        engine.refs += 1
        return engine


def _release_engine(engine: _ChdbEngine) -> None:
    with _ENGINES_LOCK:
        engine.refs -= 1
        if engine.refs > 0:
            return
        if _ENGINES.get(engine.path) is engine:
            del _ENGINES[engine.path]
    engine.executor.shutdown(wait=False)


def _chdb_path(url: str) -> str:
    """The directory (absolute) or ``":memory:"`` named by a chdb URL or a plain path."""
    rest = url
    if rest.startswith("chdb:"):
        rest = rest[len("chdb:") :]
        if rest.startswith("//"):
            rest = rest[2:]
    if rest in (":memory:", ""):
        if rest == "":
            raise ConfigurationError("chdb URL without a path: use chdb:///absolute/path, chdb://relative or :memory:")
        return ":memory:"
    if "?" in rest:
        raise ConfigurationError(f"options in chdb URLs are not supported: {url!r}")
    return os.path.realpath(os.path.expanduser(rest))


def _chdb_error(exc: BaseException, sql: str, path: str) -> MybinlogError:
    text = re.sub(r"^Streaming insert \w+ failed: ", "", str(exc))
    message, code = _server_message(text)
    if "EmbeddedServer already initialized" in message:
        return ConfigurationError(
            f"embedded ClickHouse (chdb) is already open on another directory in this process (outside mybinlog?); "
            f"cannot open {path!r}: {message}"
        )
    return TargetError(message or type(exc).__name__, sql=sql, code=code)


class ChdbTarget:
    """Embedded ClickHouse (chdb) with its data in a local directory, or in memory.

    Each target has its own chdb connection; the targets of one directory share one worker thread, which runs every
    chdb call, so calls are serialised and the event loop never waits on chdb. Cancelling a call does not stop the
    statement in the worker (an INSERT cancelled this way may still be written).
    """

    kind: str = "chdb"

    def __init__(self, engine: _ChdbEngine, conn: Any, database: str | None, capabilities: Capabilities) -> None:
        self._engine = engine
        self._conn: Any = conn
        self.database = database
        self.capabilities = capabilities
        self.path = engine.path
        self.description = f"chdb:{'' if engine.path == ':memory:' else '//'}{engine.path}"
        if database:
            self.description += f" database={database}"

    def __repr__(self) -> str:
        return f"<ChdbTarget {self.description}>"

    @classmethod
    async def open(cls, url: str, *, database: str | None = None) -> ChdbTarget:
        path = _chdb_path(url)
        engine = _acquire_engine(path)
        try:
            conn, version = await engine.run(lambda: _chdb_connect(path, database))
        except BaseException:
            _release_engine(engine)
            raise
        target = cls(engine, conn, database, Capabilities.from_version(version))
        logger.debug("opened %s: %s", target.description, target.capabilities)
        return target

    def _live_conn(self, sql: str) -> Any:
        if self._conn is None:
            raise TargetError(f"{self.description}: target is closed", sql=sql)
        return self._conn

    async def _run(self, sql: str, func: Callable[[Any], _T]) -> _T:
        conn = self._live_conn(sql)

        def call() -> _T:
            try:
                return func(conn)
            except _chdb_exceptions() as exc:
                raise _chdb_error(exc, sql, self.path) from None

        return await self._engine.run(call)

    async def execute(self, sql: str) -> None:
        await self._run(sql, lambda conn: conn.query(sql, "TabSeparated"))

    async def query(self, sql: str) -> list[list[str | None]]:
        def call(conn: Any) -> list[list[str | None]]:
            return parse_tsv(bytes(conn.query(sql, "TabSeparated").bytes()))  # parsed in the worker too

        return await self._run(sql, call)

    async def insert_tsv(
        self, table: str, columns: Sequence[str], data: bytes, *, dedup_token: str | None = None
    ) -> None:
        sql = _insert_sql(table, columns)
        if dedup_token is not None and self.capabilities.insert_deduplication_token:
            sql += f" SETTINGS insert_deduplication_token = {quote_string(dedup_token)}"
        if not data:
            return

        def call(conn: Any) -> None:
            inserter = conn.send_insert(sql, "TabSeparated")
            try:
                inserter.append(data)
            except BaseException:
                with contextlib.suppress(Exception):
                    inserter.cancel()
                raise
            inserter.finish()

        await self._run(f"{sql} FORMAT TabSeparated", call)

    async def aclose(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            await self._engine.run(conn.close)
        finally:
            _release_engine(self._engine)


def _chdb_exceptions() -> tuple[type[Exception], ...]:
    """What chdb raises for a failed statement: ``ChdbError`` from queries, ``RuntimeError`` from inserts."""
    import chdb

    return (RuntimeError, cast(type[Exception], chdb.ChdbError))


def _chdb_connect(path: str, database: str | None) -> tuple[Any, str]:
    """In the worker thread: open a chdb connection (creating the directory) and read the version."""
    try:
        import chdb
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ConfigurationError("embedded ClickHouse needs chdb: pip install 'mybinlog[embedded]'") from exc
    if path != ":memory:":
        try:
            Path(path).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigurationError(f"cannot create the chdb directory {path!r}: {exc}") from exc
    try:
        conn = cast(Any, chdb).connect(path)
    except _chdb_exceptions() as exc:
        raise _chdb_error(exc, f"(open {path})", path) from None
    try:
        if database:
            sql = f"USE {quote_ident(database)}"
            try:
                conn.query(sql, "TabSeparated")
            except _chdb_exceptions() as exc:
                raise _chdb_error(exc, sql, path) from None
        version = bytes(conn.query("SELECT version()", "TabSeparated").bytes()).decode().strip()
    except BaseException:
        conn.close()
        raise
    return conn, version


# --- opening -----------------------------------------------------------------------------------------------------


async def open_target(url: str, *, database: str | None = None) -> Target:
    """Open a ClickHouse target.

    * ``http://[user[:password]@]host[:port][/][?setting=value&...]`` (also ``https://``): a server over HTTP.
      The user defaults to ``default``; without a password in the URL, the environment variable
      ``MYBINLOG_CH_PASSWORD`` is used when set. Query parameters are ClickHouse settings sent with every request
      (``?database=x`` chooses the default database).
    * ``chdb:///absolute/path``, ``chdb://relative/path``, a plain filesystem path, or ``:memory:`` (also
      ``chdb://:memory:``): embedded ClickHouse with its data in that directory (created if missing).

    ``database``: the default database for unqualified table names (must exist). Raises
    :class:`~mybinlog.ConfigurationError` for a bad URL, :class:`TargetConnectionError` when the server cannot be
    reached and :class:`TargetError` when it refuses the connection (wrong password, unknown database).
    """
    if url.startswith(("http://", "https://")):
        return await HttpTarget.open(url, database=database)
    if "://" in url and not url.startswith("chdb:"):
        raise ConfigurationError(
            f"unsupported ClickHouse URL scheme in {_redact_url(url)!r}: use http(s)://host:8123, chdb:///path or a "
            f"directory"
        )
    return await ChdbTarget.open(url, database=database)
