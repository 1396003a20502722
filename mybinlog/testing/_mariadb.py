"""Private, throwaway MariaDB servers: for ``mybinlog demo`` and for the test suite.

:class:`MariaDBServer` runs its own ``mariadbd`` in a temporary data directory, listening on a free TCP port
on 127.0.0.1 and on a unix socket, with the binlog configured for row-based CDC::

    log-bin, binlog_format=ROW, binlog_row_image=FULL, binlog_row_metadata=FULL, gtid_strict_mode=1

Starting a server is fast (~0.2 s after the first one): ``mariadb-install-db`` runs once per test process into
a template data directory (the accounts below are created there with the binlog off), and every server starts
from a copy of it. The binlog of a new server therefore contains nothing written by the test harness: the
first transaction a test writes is GTID 0-1-1 (for server_id 1).

Accounts:

* ``root@127.0.0.1`` with password :data:`ADMIN_PASSWORD`: all privileges (``admin_dsn``, ``connect()``).
* ``repl@%`` with password :data:`REPL_PASSWORD`: what a CDC client needs on MariaDB 10.11 --
  REPLICATION SLAVE (binlog dump), BINLOG MONITOR (alias REPLICATION CLIENT: SHOW MASTER STATUS, SHOW BINARY
  LOGS, SHOW BINLOG EVENTS), SELECT, RELOAD, SHOW DATABASES (``repl_dsn``, ``connect(user="repl")``).
* ``root@localhost`` without password over the unix socket: used internally to probe readiness.

Processes never outlive the test run: servers are stopped at interpreter exit (atexit) and, when started from
the main thread, receive SIGKILL from the kernel if the Python process dies abruptly (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import ctypes.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import pymysql

__all__ = [
    "ADMIN_PASSWORD",
    "ADMIN_USER",
    "REPL_PASSWORD",
    "REPL_USER",
    "DEFAULT_OPTIONS",
    "MariaDBBinaries",
    "MariaDBNotAvailable",
    "MariaDBServer",
    "MariaDBStartError",
    "find_mariadb",
]

ADMIN_USER = "root"
ADMIN_PASSWORD = "admin-pw-Tk3"
REPL_USER = "repl"
REPL_PASSWORD = "repl-pw-8Qz"

#: Options every server gets unless overridden. Keys use dashes; ``None`` as a value in ``options`` removes an
#: option (``log_bin=None`` turns the binlog off). Paths are filled in by the server.
DEFAULT_OPTIONS: dict[str, str | int | bool] = {
    "server-id": 1,
    "binlog-format": "ROW",
    "binlog-row-image": "FULL",
    "binlog-row-metadata": "FULL",
    "gtid-strict-mode": 1,
    "character-set-server": "utf8mb4",
    "collation-server": "utf8mb4_general_ci",
    "default-time-zone": "+00:00",
    "skip-name-resolve": True,
    "max-allowed-packet": "64M",
    # speed and quiet; commit writes redo/binlog to the OS on every commit (flush_log_at_trx_commit=2,
    # sync_binlog=0), so SIGKILL of the server loses nothing that was committed
    "innodb-buffer-pool-size": "32M",
    "innodb-log-file-size": "16M",
    "innodb-flush-log-at-trx-commit": 2,
    "sync-binlog": 0,
    "innodb-doublewrite": 0,
    "innodb-buffer-pool-load-at-startup": 0,
    "innodb-buffer-pool-dump-at-shutdown": 0,
    "performance-schema": 0,
    "loose-feedback": 0,
}

# options that apply to mariadb-install-db and the template bootstrap as well
_INSTALL_OPTIONS = ("innodb-log-file-size", "innodb-buffer-pool-size")

_IS_ROOT = os.geteuid() == 0
_SEARCH_DIRS = ("/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin", "/usr/libexec")


class MariaDBNotAvailable(RuntimeError):
    """The MariaDB server binaries are not installed (run scripts/setup.sh)."""


class MariaDBStartError(RuntimeError):
    """A private server did not start; the message carries the tail of its error log."""


class MariaDBBinaries:
    """Paths of the MariaDB programs a private server needs."""

    def __init__(self, mariadbd: str, install_db: str, client: str | None) -> None:
        self.mariadbd = mariadbd
        self.install_db = install_db
        self.client = client

    def __repr__(self) -> str:
        return f"MariaDBBinaries(mariadbd={self.mariadbd!r}, install_db={self.install_db!r})"


def _which(*names: str) -> str | None:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
        for directory in _SEARCH_DIRS:
            candidate = os.path.join(directory, name)
            if os.access(candidate, os.X_OK):
                return candidate
    return None


def find_mariadb() -> MariaDBBinaries | None:
    """Locate ``mariadbd`` and ``mariadb-install-db``; ``None`` when they are not installed."""
    mariadbd = _which("mariadbd", "mysqld")
    install_db = _which("mariadb-install-db", "mysql_install_db")
    if mariadbd is None or install_db is None:
        return None
    return MariaDBBinaries(mariadbd, install_db, _which("mariadb", "mysql"))


def _require_binaries() -> MariaDBBinaries:
    binaries = find_mariadb()
    if binaries is None:
        raise MariaDBNotAvailable(
            "mariadbd / mariadb-install-db not found: install the MariaDB server with "
            "`bash scripts/setup.sh` (Debian packages mariadb-server and mariadb-client)"
        )
    return binaries


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _user_name() -> str:
    return pwd.getpwuid(os.geteuid()).pw_name


# --- kill the server when the test process dies ---

_PR_SET_PDEATHSIG = 1


def _load_prctl() -> Any:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _load_prctl()


def _die_with_parent() -> None:  # runs in the child between fork and exec
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL)


# --- atexit registry ---

_LIVE: set[MariaDBServer] = set()
_LIVE_LOCK = threading.Lock()


def _cleanup_at_exit() -> None:
    with _LIVE_LOCK:
        servers = list(_LIVE)
    for server in servers:
        with contextlib.suppress(Exception):
            server.kill()
    _remove_templates()


atexit.register(_cleanup_at_exit)


# --- template data directory ---

_TEMPLATES: dict[tuple[tuple[str, str], ...], Path] = {}
_TEMPLATE_LOCK = threading.Lock()
_TEMPLATE_ROOT: Path | None = None


def _remove_templates() -> None:
    if _TEMPLATE_ROOT is not None:
        shutil.rmtree(_TEMPLATE_ROOT, ignore_errors=True)


def _tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"(no {path.name})"
    return "\n".join(text.splitlines()[-lines:])


def _format_options(options: Mapping[str, str | int | bool]) -> list[str]:
    args = []
    for key, value in options.items():
        if value is True:
            args.append(f"--{key}")
        else:
            args.append(f"--{key}={value}")
    return args


def _short_socket_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="mdb-"))


def _wait_ready(
    proc: subprocess.Popen[bytes], sock: str, deadline: float, error_log: Path, what: str
) -> pymysql.connections.Connection[Any]:
    """Poll the socket with real connection attempts until the server answers, dies or the deadline passes."""
    last_error: Exception | None = None
    while True:
        if proc.poll() is not None:
            raise MariaDBStartError(
                f"{what} exited with code {proc.returncode} during startup; error log:\n{_tail(error_log)}"
            )
        try:
            return pymysql.connect(
                unix_socket=sock, user="root", password="", connect_timeout=2, autocommit=True
            )
        except pymysql.err.OperationalError as exc:
            last_error = exc
        if time.monotonic() > deadline:
            raise MariaDBStartError(
                f"{what} did not accept connections on {sock} in time (last error: {last_error}); "
                f"error log:\n{_tail(error_log)}"
            )
        # poll interval that also notices an early exit of the process
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=0.02)


def _run_bootstrap(
    proc: subprocess.Popen[bytes], sock: str, error_log: Path, what: str, statements: Sequence[str], timeout: float
) -> None:
    """Run ``statements`` on a bootstrap server as soon as it answers on ``sock``, then stop it cleanly (SIGKILL
    if anything fails on the way)."""
    try:
        conn = _wait_ready(proc, sock, time.monotonic() + timeout, error_log, what)
        try:
            with conn.cursor() as cur:
                for statement in statements:
                    cur.execute(statement)
        finally:
            conn.close()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _bootstrap_sql() -> list[str]:
    admin = f"'{ADMIN_USER}'@'127.0.0.1'"
    repl = f"'{REPL_USER}'@'%'"
    return [
        "SET SESSION sql_log_bin = 0",
        f"CREATE USER IF NOT EXISTS {admin}",
        f"ALTER USER {admin} IDENTIFIED BY '{ADMIN_PASSWORD}'",
        f"GRANT ALL PRIVILEGES ON *.* TO {admin} WITH GRANT OPTION",
        f"CREATE USER IF NOT EXISTS {repl} IDENTIFIED BY '{REPL_PASSWORD}'",
        f"GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, BINLOG MONITOR ON *.* TO {repl}",
    ]


def _template_datadir(binaries: MariaDBBinaries, install_options: Mapping[str, str | int | bool]) -> Path:
    """Install a data directory once per process (with the test accounts) and return its path."""
    global _TEMPLATE_ROOT
    key = tuple(sorted((k, str(v)) for k, v in install_options.items()))
    with _TEMPLATE_LOCK:
        cached = _TEMPLATES.get(key)
        if cached is not None:
            return cached
        if _TEMPLATE_ROOT is None:
            _TEMPLATE_ROOT = Path(tempfile.mkdtemp(prefix="mybinlog-mariadb-template-"))
        # mariadb-install-db fails now and then on a heavily loaded machine ("Installation of system tables
        # failed" with nothing more in its log); a fresh attempt in a new directory succeeds
        for attempt in range(3):
            root = Path(tempfile.mkdtemp(prefix="t", dir=_TEMPLATE_ROOT))
            datadir = root / "data"
            user_args = [f"--user={_user_name()}"]
            install_log = root / "install.log"
            with install_log.open("wb") as out:
                result = subprocess.run(
                    [
                        binaries.install_db,
                        "--no-defaults",
                        f"--datadir={datadir}",
                        *user_args,
                        "--auth-root-authentication-method=normal",
                        "--skip-test-db",
                        *_format_options(install_options),
                    ],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    check=False,
                    timeout=120,
                )
            if result.returncode == 0:
                break
            if attempt == 2:
                raise MariaDBStartError(
                    f"mariadb-install-db failed with code {result.returncode} (3 attempts):\n{_tail(install_log)}"
                )
        # start once without binlog and networking to create the accounts, then shut down cleanly
        sock_dir = _short_socket_dir()
        sock = str(sock_dir / "bootstrap.sock")
        error_log = root / "bootstrap-error.log"
        args = [
            binaries.mariadbd,
            "--no-defaults",
            f"--datadir={datadir}",
            f"--socket={sock}",
            "--skip-networking",
            "--skip-log-bin",
            f"--pid-file={root / 'bootstrap.pid'}",
            f"--log-error={error_log}",
            *(["--user=root"] if _IS_ROOT else []),
            *_format_options(install_options),
            *_format_options({k: v for k, v in DEFAULT_OPTIONS.items() if k.startswith("loose-")}),
        ]
        proc = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            _run_bootstrap(proc, sock, error_log, "bootstrap mariadbd", _bootstrap_sql(), 60)
        finally:
            shutil.rmtree(sock_dir, ignore_errors=True)
        if proc.returncode != 0:
            raise MariaDBStartError(f"bootstrap mariadbd exited with {proc.returncode}:\n{_tail(error_log)}")
        for leftover in ("ibtmp1", "mysqld.sock", "ib_buffer_pool"):
            with contextlib.suppress(FileNotFoundError):
                (datadir / leftover).unlink()
        _TEMPLATES[key] = datadir
        return datadir


# --- the server ---


class MariaDBServer:
    """One private ``mariadbd`` in ``base_dir`` (created if needed; absolute paths everywhere).

    ``options`` override :data:`DEFAULT_OPTIONS` (underscores or dashes, e.g. ``binlog_format="STATEMENT"``,
    ``binlog_checksum="NONE"``, ``max_binlog_size=4096``); a value of ``None`` removes an option, and
    ``log_bin=None`` starts the server without a binlog. ``True`` passes a bare flag. ``extra_args`` are
    appended verbatim.

    Use as a context manager (``with MariaDBServer(path) as server:``) or call :meth:`start` / :meth:`stop`.
    """

    host = "127.0.0.1"

    def __init__(
        self,
        base_dir: str | os.PathLike[str],
        *,
        options: Mapping[str, str | int | bool | None] | None = None,
        extra_args: Sequence[str] = (),
        startup_timeout: float = 60.0,
        name: str = "mariadb",
    ) -> None:
        self.binaries = self._find_binaries()
        self.name = name
        self.base_dir = Path(base_dir).absolute()
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.datadir = self.base_dir / "data"
        self.startup_timeout = startup_timeout
        self.extra_args = list(extra_args)
        merged: dict[str, str | int | bool] = dict(DEFAULT_OPTIONS)
        self._log_bin = True
        for raw_key, value in (options or {}).items():
            key = raw_key.replace("_", "-")
            if key in ("log-bin", "skip-log-bin"):
                self._log_bin = key == "log-bin" and value not in (None, False, 0, "OFF", "0")
                continue
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        self.options = merged
        self.port = _free_port()
        socket_path = self.datadir / "mysqld.sock"
        self._socket_dir: Path | None = None
        if len(str(socket_path)) > 100:  # sun_path is 108 bytes
            self._socket_dir = _short_socket_dir()
            socket_path = self._socket_dir / "mysqld.sock"
        self.socket = str(socket_path)
        self.error_log = self.datadir / "error.log"
        self.pid_file = self.datadir / "mysqld.pid"
        self._proc: subprocess.Popen[bytes] | None = None
        self._conn: pymysql.connections.Connection[Any] | None = None
        self._version: str | None = None

    #: "mariadb" or "mysql": the flavour of server (for SQL that differs between them)
    flavor = "mariadb"

    def _find_binaries(self) -> Any:
        return _require_binaries()

    # -- descriptive properties ---

    @property
    def pid(self) -> int | None:
        """PID of the running mariadbd, ``None`` when stopped."""
        if self._proc is None or self._proc.poll() is not None:
            return None
        return self._proc.pid

    @property
    def running(self) -> bool:
        return self.pid is not None

    @property
    def log_bin_basename(self) -> Path | None:
        """``<datadir>/binlog`` (files are ``binlog.000001`` ...), ``None`` when the binlog is off."""
        return self.datadir / "binlog" if self._log_bin else None

    @property
    def admin_user(self) -> str:
        return ADMIN_USER

    @property
    def admin_password(self) -> str:
        return ADMIN_PASSWORD

    @property
    def repl_user(self) -> str:
        return REPL_USER

    @property
    def repl_password(self) -> str:
        return REPL_PASSWORD

    @property
    def admin_dsn(self) -> str:
        return f"mysql://{ADMIN_USER}:{ADMIN_PASSWORD}@{self.host}:{self.port}"

    @property
    def repl_dsn(self) -> str:
        return f"mysql://{REPL_USER}:{REPL_PASSWORD}@{self.host}:{self.port}"

    @property
    def server_id(self) -> int:
        return int(self.options.get("server-id", 1))

    @property
    def version(self) -> str:
        """``SELECT VERSION()``, e.g. ``10.11.19-MariaDB-0+deb12u1-log`` (needs a running server once)."""
        if self._version is None:
            self._version = str(self.query_value("SELECT VERSION()"))
        return self._version

    @property
    def version_tuple(self) -> tuple[int, int, int]:
        numbers = self.version.split("-", 1)[0].split(".")
        return (int(numbers[0]), int(numbers[1]), int(numbers[2]))

    def connect_kwargs(self, user: str = "admin", database: str | None = None) -> dict[str, Any]:
        """Keyword arguments for asyncmy/pymysql ``connect()`` over TCP (``user`` is "admin" or "repl")."""
        if user == "admin":
            creds = {"user": ADMIN_USER, "password": ADMIN_PASSWORD}
        elif user == "repl":
            creds = {"user": REPL_USER, "password": REPL_PASSWORD}
        else:
            raise ValueError(f"user must be 'admin' or 'repl', not {user!r}")
        kwargs: dict[str, Any] = {"host": self.host, "port": self.port, **creds}
        if database is not None:
            kwargs["database"] = database
        return kwargs

    def __repr__(self) -> str:
        state = f"pid={self.pid}" if self.running else "stopped"
        return f"<MariaDBServer {self.name} {self.host}:{self.port} {state} datadir={self.datadir}>"

    # -- lifecycle ---

    def command(self) -> list[str]:
        """The mariadbd command line."""
        args = [
            self.binaries.mariadbd,
            "--no-defaults",
            f"--datadir={self.datadir}",
            f"--socket={self.socket}",
            f"--port={self.port}",
            f"--bind-address={self.host}",
            f"--pid-file={self.pid_file}",
            f"--log-error={self.error_log}",
        ]
        if _IS_ROOT:
            args.append("--user=root")  # mariadbd refuses to run as root otherwise
        if self._log_bin:
            args.append(f"--log-bin={self.datadir / 'binlog'}")
        else:
            args.append("--skip-log-bin")
        args.extend(_format_options(self.options))
        args.extend(self.extra_args)
        return args

    def start(self) -> MariaDBServer:
        """Start the server (creating the data directory on first start) and wait until it accepts queries."""
        if self.running:
            return self
        if not (self.datadir / "mysql").is_dir():
            self._install_datadir()
        for attempt in range(3):
            deadline = time.monotonic() + self.startup_timeout
            log_size = self.error_log.stat().st_size if self.error_log.exists() else 0
            main_thread = threading.current_thread() is threading.main_thread()
            self._proc = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                preexec_fn=_die_with_parent if main_thread else None,
            )
            with _LIVE_LOCK:
                _LIVE.add(self)
            try:
                conn = _wait_ready(self._proc, self.socket, deadline, self.error_log, f"{self.flavor} {self.name}")
            except MariaDBStartError:
                self._reap()
                new_log = (
                    self.error_log.read_text(errors="replace")[log_size:] if self.error_log.exists() else ""
                )
                if attempt < 2 and self._start_error(new_log):
                    self.port = _free_port()
                    continue
                raise
            conn.close()
            return self
        raise AssertionError("unreachable")

    def _template(self) -> Path:
        """The per-process template data directory for this server's install options."""
        install_options = {k: v for k, v in self.options.items() if k in _INSTALL_OPTIONS}
        return _template_datadir(self.binaries, install_options)

    def _install_datadir(self) -> None:
        """Create the data directory from the per-process template."""
        template = self._template()
        if self.datadir.exists():
            shutil.rmtree(self.datadir)
        shutil.copytree(template, self.datadir, symlinks=True)

    def _start_error(self, new_log: str) -> bool:
        """Whether a failed start is worth retrying on another port."""
        return "already in use" in new_log or "Can't start server: Bind" in new_log

    def _reap(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._close_conn()
        with _LIVE_LOCK:
            _LIVE.discard(self)

    def stop(self, timeout: float = 60.0) -> None:
        """SIGTERM, then wait for the process to exit; SIGKILL if that takes longer than ``timeout`` s."""
        self._close_conn()
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise MariaDBStartError(
                    f"mariadbd {self.name} ignored SIGTERM for {timeout} s and was killed; error log:\n"
                    f"{_tail(self.error_log)}"
                ) from None
        with _LIVE_LOCK:
            _LIVE.discard(self)

    def kill(self) -> None:
        """SIGKILL the server (a crash) and reap it; the next :meth:`start` runs crash recovery."""
        self._close_conn()
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        with _LIVE_LOCK:
            _LIVE.discard(self)

    def restart(self) -> MariaDBServer:
        """Clean shutdown, then start again on the same port and data directory."""
        self.stop()
        return self.start()

    def cleanup(self) -> None:
        """Kill if running and remove the data directory."""
        self.kill()
        shutil.rmtree(self.datadir, ignore_errors=True)
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)

    def __enter__(self) -> MariaDBServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self.stop()
        finally:
            self.kill()

    def error_log_tail(self, lines: int = 30) -> str:
        return _tail(self.error_log, lines)

    # -- SQL helpers (pymysql, synchronous) ---

    def connect(
        self, *, user: str = "admin", database: str | None = None, autocommit: bool = True, **kwargs: Any
    ) -> pymysql.connections.Connection[Any]:
        """A new pymysql connection over TCP (``user`` is "admin" or "repl"); the caller closes it."""
        params = self.connect_kwargs(user, database)
        params.update(kwargs)
        params.setdefault("charset", "utf8mb4")
        params.setdefault("connect_timeout", 10)
        return pymysql.connect(autocommit=autocommit, **params)

    def _admin_conn(self) -> pymysql.connections.Connection[Any]:
        if self._conn is None or not self._conn.open:
            if not self.running:
                raise MariaDBStartError(f"mariadbd {self.name} is not running; call start() first")
            self._conn = self.connect()
        return self._conn

    def _close_conn(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None

    def execute(self, sql: str, args: Any = None) -> int:
        """Run one statement as admin (autocommit); returns the affected row count."""
        with self._admin_conn().cursor() as cur:
            return int(cur.execute(sql, args))

    def query(self, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        """Run a query as admin and return all rows as tuples."""
        with self._admin_conn().cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())

    def query_value(self, sql: str, args: Any = None) -> Any:
        """The first column of the first row (``None`` for no rows)."""
        rows = self.query(sql, args)
        return rows[0][0] if rows else None

    def variables(self, *names: str) -> dict[str, Any]:
        """``SELECT @@name`` for each name, as a dict."""
        row = self.query("SELECT " + ", ".join(f"@@{n}" for n in names))[0]
        return dict(zip(names, row, strict=True))

    def create_database(self, name: str) -> str:
        self.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci")
        return name

    def drop_database(self, name: str) -> None:
        self.execute(f"DROP DATABASE IF EXISTS `{name}`")

    def master_status(self) -> tuple[str, int]:
        """Current binlog file name and position (SHOW MASTER STATUS)."""
        row = self.query("SHOW MASTER STATUS")[0]
        return str(row[0]), int(row[1])

    def binlog_files(self) -> list[tuple[str, int]]:
        """(name, size) of every binlog file (SHOW BINARY LOGS)."""
        return [(str(r[0]), int(r[1])) for r in self.query("SHOW BINARY LOGS")]

    def binlog_paths(self) -> list[Path]:
        """Absolute paths of the binlog files, oldest first."""
        return [self.datadir / name for name, _ in self.binlog_files()]

    def gtid_binlog_pos(self) -> str:
        """``@@gtid_binlog_pos``: the GTID of the last transaction in the binlog per domain."""
        return str(self.query_value("SELECT @@gtid_binlog_pos"))

    def gtid_position(self) -> str:
        """The server's GTID position in its own flavour: MariaDB ``@@gtid_binlog_pos``, MySQL
        ``@@global.gtid_executed`` (what a GTID-resuming client passes to start after everything written)."""
        return self.gtid_binlog_pos()

    # -- replication topologies (source failover tests) ----------------------------------------------------------

    def follow(self, primary: MariaDBServer, *, wait: bool = True) -> None:
        """Make this server a replica of ``primary`` by GTIDs (the server's own replication: MariaDB
        ``MASTER_USE_GTID=slave_pos``, MySQL ``SOURCE_AUTO_POSITION=1``) and, with ``wait``, wait until it has
        caught up. Start this server with ``log_slave_updates=True`` (MariaDB) so that it logs what it replicates."""
        gtid = primary.gtid_position()
        if self.flavor == "mariadb":
            self.execute(
                f"CHANGE MASTER TO MASTER_HOST='{primary.host}', MASTER_PORT={primary.port}, "
                f"MASTER_USER='{primary.repl_user}', MASTER_PASSWORD='{primary.repl_password}', "
                "MASTER_USE_GTID=slave_pos"
            )
            self.execute("START SLAVE")
        else:  # MySQL 8.4+; caching_sha2_password over plain TCP needs the source's RSA key, asked for
            self.execute(
                f"CHANGE REPLICATION SOURCE TO SOURCE_HOST='{primary.host}', SOURCE_PORT={primary.port}, "
                f"SOURCE_USER='{primary.repl_user}', SOURCE_PASSWORD='{primary.repl_password}', "
                "SOURCE_AUTO_POSITION=1, GET_SOURCE_PUBLIC_KEY=1"
            )
            self.execute("START REPLICA")
        if wait:
            self.wait_for_gtids(gtid)

    def wait_for_gtids(self, gtid: str, timeout: float = 60) -> None:
        """Wait until this server has executed ``gtid`` (a position in the server's flavour); raise on timeout."""
        if self.flavor == "mariadb":
            waited = self.query_value("SELECT MASTER_GTID_WAIT(%s, %s)", (gtid, timeout))
            status = "SHOW SLAVE STATUS"
        else:
            waited = self.query_value("SELECT WAIT_FOR_EXECUTED_GTID_SET(%s, %s)", (gtid, timeout))
            status = "SHOW REPLICA STATUS"
        if waited != 0:
            raise TimeoutError(f"{self.flavor} on port {self.port} did not reach {gtid}: {self.query(status)}")

    def pause_replication(self) -> None:
        """Stop applying what arrives from the primary (it is still received): a replica that lags behind."""
        self.execute("STOP SLAVE SQL_THREAD" if self.flavor == "mariadb" else "STOP REPLICA SQL_THREAD")

    def resume_replication(self) -> None:
        self.execute("START SLAVE SQL_THREAD" if self.flavor == "mariadb" else "START REPLICA SQL_THREAD")

    def promote(self) -> None:
        """What an orchestrator does to a replica whose primary died: stop replicating (after applying what it has
        received) and forget the source. The server is then a primary."""
        maria = self.flavor == "mariadb"
        self.execute("STOP SLAVE IO_THREAD" if maria else "STOP REPLICA IO_THREAD")
        received = self.replica_status().get("Gtid_IO_Pos" if maria else "Retrieved_Gtid_Set") or ""
        self.execute("START SLAVE SQL_THREAD" if maria else "START REPLICA SQL_THREAD")
        if str(received).strip():  # apply what was received (the relay log) before it is thrown away
            self.wait_for_gtids(str(received).replace("\n", ""))
        self.execute("STOP SLAVE" if maria else "STOP REPLICA")
        self.execute("RESET SLAVE ALL" if maria else "RESET REPLICA ALL")

    def replica_status(self) -> dict[str, Any]:
        """SHOW SLAVE STATUS (MariaDB) / SHOW REPLICA STATUS (MySQL) as a dict; empty when not a replica."""
        with self._admin_conn().cursor() as cur:
            cur.execute("SHOW SLAVE STATUS" if self.flavor == "mariadb" else "SHOW REPLICA STATUS")
            row = cur.fetchone()
            names = [d[0] for d in cur.description or ()]
        return dict(zip(names, row, strict=True)) if row else {}

    def flush_binary_logs(self) -> str:
        """Rotate to a new binlog file and return its name."""
        self.execute("FLUSH BINARY LOGS")
        return self.master_status()[0]


def iter_live_servers() -> Iterator[MariaDBServer]:
    """Servers started by this process and not yet stopped (for diagnostics)."""
    with _LIVE_LOCK:
        yield from list(_LIVE)
