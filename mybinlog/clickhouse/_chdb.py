"""Embedded ClickHouse (chdb, imported when a target is opened): one data directory per process, one worker
thread per directory running every chdb call."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar, cast

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows
    fcntl = None  # type: ignore[assignment]

from ..errors import ConfigurationError, MybinlogError, ReplicaLockedError, TargetError
from ._capabilities import Capabilities
from ._target import _server_message
from ._tsv import _insert_sql, parse_tsv, quote_ident, quote_string

__all__ = ["ChdbTarget"]

logger = logging.getLogger("mybinlog.target")


_T = TypeVar("_T")


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
        first = engine.refs == 1  # the first target of the directory in this process: nobody here has it open
        try:
            conn, version = await engine.run(lambda: _chdb_connect(path, database, first=first))
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


def _check_not_open_elsewhere(path: str) -> None:
    """Raise :class:`ReplicaLockedError` (exit code 4 for ``replicate``) when another process has the directory open.

    ClickHouse (and so chdb) holds an exclusive ``flock`` on ``<path>/status`` while a directory is open and refuses
    a second process with a bare "Error initializing EmbeddedServer"; a second ``replicate`` of the same replica,
    whatever the path is spelled like (a symbolic link, a relative path), ends there. The status file names the
    holder's PID."""
    if path == ":memory:" or fcntl is None:
        return
    status = Path(path) / "status"
    try:
        fd = os.open(status, os.O_RDONLY)
    except OSError:
        return  # no status file: nobody has the directory open
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pass
        except OSError:
            return
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
            return
        try:
            text = os.read(fd, 4096).decode("utf-8", "replace")
        except OSError:
            text = ""
    finally:
        os.close(fd)
    pid = re.search(r"PID: (\d+)", text)
    holder = f"process {pid.group(1)}" if pid else "another process"
    raise ReplicaLockedError(
        f"embedded ClickHouse (chdb) directory {path!r} is open in {holder}: chdb opens a directory in one process at "
        "a time, and one process writes a replica at a time. If it is another mybinlog process of this replica (the "
        "same directory under another name counts too), stop it first; otherwise close the program that has it open"
    )


def _chdb_connect(path: str, database: str | None, *, first: bool = True) -> tuple[Any, str]:
    """In the worker thread: open a chdb connection (creating the directory) and read the version. ``first``: no
    other target of this process has the directory open (then another process must not have it either)."""
    try:
        import chdb
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ConfigurationError(
            "embedded ClickHouse needs chdb: pip install 'mybinlog[cli]' (every command) or 'mybinlog[embedded]'"
        ) from exc
    if path != ":memory:":
        try:
            Path(path).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigurationError(f"cannot create the chdb directory {path!r}: {exc}") from exc
        if first:
            _check_not_open_elsewhere(path)
    try:
        conn = cast(Any, chdb).connect(path)
    except _chdb_exceptions() as exc:
        if first:
            _check_not_open_elsewhere(path)  # opened by another process meanwhile: say so rather than chdb's bare error
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
