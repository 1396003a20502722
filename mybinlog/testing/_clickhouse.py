"""Private, throwaway ClickHouse servers (the Debian ``clickhouse-server`` 18.16 package) for tests and demos.

:class:`ClickHouseServer` runs its own ``clickhouse-server`` in a temporary directory with a generated config:
free HTTP and native TCP ports on 127.0.0.1 (and on ``::1`` where the machine has IPv6 loopback: ``ipv6``),
data/tmp/user_files/format_schemas directories and logs inside that directory, time zone UTC, and two
users:

* ``default`` with password :data:`CH_PASSWORD` (``url()``), so tests can check the password never leaks;
* ``nopass`` without a password (``url(user="nopass")``).

Readiness is polled on ``GET /ping`` with a deadline. Servers never outlive the Python process: they are killed at
interpreter exit (atexit) and, when started from the main thread, get SIGKILL from the kernel if the process dies
(PR_SET_PDEATHSIG), as :mod:`mybinlog.testing._mariadb` does for MariaDB.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from xml.sax.saxutils import escape

from ._mariadb import _die_with_parent, _free_port, _tail

__all__ = [
    "CH_PASSWORD",
    "CH_USER",
    "ClickHouseNotAvailable",
    "ClickHouseServer",
    "ClickHouseStartError",
    "find_clickhouse",
]

CH_USER = "default"
CH_PASSWORD = "ch-pw-Vq9"
NOPASS_USER = "nopass"

_SEARCH_DIRS = ("/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin")


class ClickHouseNotAvailable(RuntimeError):
    """No ``clickhouse-server`` / ``clickhouse`` binary (run ``bash scripts/setup.sh --test``)."""


class ClickHouseStartError(RuntimeError):
    """A private ClickHouse server did not start; the message carries the tail of its logs."""


def find_clickhouse() -> list[str] | None:
    """The command that starts a server: ``[".../clickhouse-server"]`` or ``[".../clickhouse", "server"]``."""
    for name, prefix in (("clickhouse-server", []), ("clickhouse", ["server"])):
        found = shutil.which(name)
        candidates = [found] if found else []
        candidates += [os.path.join(d, name) for d in _SEARCH_DIRS]
        for candidate in candidates:
            if candidate and os.access(candidate, os.X_OK) and os.path.isfile(candidate):
                return [candidate, *prefix]
    return None


_LIVE: set[ClickHouseServer] = set()
_LIVE_LOCK = threading.Lock()


def _kill_all_at_exit() -> None:
    with _LIVE_LOCK:
        servers = list(_LIVE)
    for server in servers:
        with contextlib.suppress(Exception):
            server.kill()


atexit.register(_kill_all_at_exit)


def ipv6_loopback() -> bool:
    """Whether this machine can listen on ``::1`` (IPv6 loopback)."""
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as sock:
            sock.bind(("::1", 0))
    except OSError:
        return False
    return True


def _config_xml(base: Path, http_port: int, tcp_port: int, *, ipv6: bool = False) -> str:
    def path(name: str) -> str:
        return escape(str(base / name)) + "/"

    return f"""<?xml version="1.0"?>
<yandex>
    <logger>
        <level>information</level>
        <log>{escape(str(base / "log" / "clickhouse-server.log"))}</log>
        <errorlog>{escape(str(base / "log" / "clickhouse-server.err.log"))}</errorlog>
        <size>100M</size>
        <count>2</count>
        <console>0</console>
    </logger>
    <listen_host>127.0.0.1</listen_host>{"<listen_host>::1</listen_host>" if ipv6 else ""}
    <http_port>{http_port}</http_port>
    <tcp_port>{tcp_port}</tcp_port>
    <path>{path("data")}</path>
    <tmp_path>{path("tmp")}</tmp_path>
    <user_files_path>{path("user_files")}</user_files_path>
    <format_schema_path>{path("format_schemas")}</format_schema_path>
    <users_config>users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <mark_cache_size>67108864</mark_cache_size>
    <uncompressed_cache_size>67108864</uncompressed_cache_size>
    <max_concurrent_queries>64</max_concurrent_queries>
    <keep_alive_timeout>3</keep_alive_timeout>
    <mlock_executable>false</mlock_executable>
</yandex>
"""


def _users_xml() -> str:
    user = """        <{name}>
            <password>{password}</password>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>default</profile>
            <quota>default</quota>
        </{name}>"""
    return f"""<?xml version="1.0"?>
<yandex>
    <profiles>
        <default>
            <max_memory_usage>2000000000</max_memory_usage>
            <use_uncompressed_cache>0</use_uncompressed_cache>
        </default>
    </profiles>
    <users>
{user.format(name=CH_USER, password=escape(CH_PASSWORD))}
{user.format(name=NOPASS_USER, password="")}
    </users>
    <quotas>
        <default>
            <interval>
                <duration>3600</duration>
                <queries>0</queries>
                <errors>0</errors>
                <result_rows>0</result_rows>
                <read_rows>0</read_rows>
                <execution_time>0</execution_time>
            </interval>
        </default>
    </quotas>
</yandex>
"""


class ClickHouseServer:
    """One private ``clickhouse-server`` in ``base_dir`` (a new temporary directory when ``None``).

    Use as a context manager or call :meth:`start` / :meth:`stop`; :meth:`cleanup` removes the directory when it
    was created here.
    """

    host = "127.0.0.1"

    def __init__(self, base_dir: str | os.PathLike[str] | None = None, *, startup_timeout: float = 60.0) -> None:
        command = find_clickhouse()
        if command is None:
            raise ClickHouseNotAvailable(
                "clickhouse-server not found: install it with `bash scripts/setup.sh --test` "
                "(Debian packages clickhouse-server and clickhouse-client)"
            )
        self.command = command
        self._own_dir = base_dir is None
        self.base_dir = Path(base_dir if base_dir is not None else tempfile.mkdtemp(prefix="mybinlog-ch-")).absolute()
        self.startup_timeout = startup_timeout
        self.http_port = _free_port()
        self.tcp_port = _free_port()
        self.ipv6 = ipv6_loopback()  # listens on ::1 too (url(host="[::1]"))
        self.config_file = self.base_dir / "config.xml"
        self.log_dir = self.base_dir / "log"
        self._proc: subprocess.Popen[bytes] | None = None

    # -- addresses ---

    @property
    def http_url(self) -> str:
        """``http://127.0.0.1:<port>`` (no user, no password)."""
        return f"http://{self.host}:{self.http_port}"

    def url(self, *, with_password: bool = True, user: str = CH_USER, host: str | None = None) -> str:
        """The HTTP URL with credentials: ``http://default:<password>@127.0.0.1:<port>``. ``host``: another name of
        this server (``localhost``, ``[::1]`` when :attr:`ipv6`)."""
        host = host or self.host
        if user == NOPASS_USER or not with_password:
            return f"http://{user}@{host}:{self.http_port}"
        return f"http://{user}:{CH_PASSWORD}@{host}:{self.http_port}"

    @property
    def password(self) -> str:
        return CH_PASSWORD

    @property
    def pid(self) -> int | None:
        if self._proc is None or self._proc.poll() is not None:
            return None
        return self._proc.pid

    @property
    def running(self) -> bool:
        return self.pid is not None

    def __repr__(self) -> str:
        state = f"pid={self.pid}" if self.running else "stopped"
        return f"<ClickHouseServer {self.http_url} {state} dir={self.base_dir}>"

    # -- lifecycle ---

    def _write_config(self) -> None:
        for name in ("data", "tmp", "user_files", "format_schemas", "log"):
            (self.base_dir / name).mkdir(parents=True, exist_ok=True)
        self.config_file.write_text(_config_xml(self.base_dir, self.http_port, self.tcp_port, ipv6=self.ipv6))
        (self.base_dir / "users.xml").write_text(_users_xml())

    def logs_tail(self, lines: int = 30) -> str:
        err = _tail(self.log_dir / "clickhouse-server.err.log", lines)
        out = _tail(self.base_dir / "stdout.log", 10)
        return f"{err}\n--- stdout/stderr ---\n{out}"

    def start(self) -> ClickHouseServer:
        """Start the server and wait until ``/ping`` answers (retrying on other ports if a port was taken)."""
        if self.running:
            return self
        for attempt in range(3):
            self._write_config()
            main_thread = threading.current_thread() is threading.main_thread()
            with (self.base_dir / "stdout.log").open("ab") as out:
                self._proc = subprocess.Popen(
                    [*self.command, f"--config-file={self.config_file}"],
                    cwd=self.base_dir,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    preexec_fn=_die_with_parent if main_thread else None,
                )
            with _LIVE_LOCK:
                _LIVE.add(self)
            try:
                self._wait_ready(time.monotonic() + self.startup_timeout)
                return self
            except ClickHouseStartError as exc:
                self.kill()
                if attempt < 2 and "Address already in use" in str(exc):
                    self.http_port = _free_port()
                    self.tcp_port = _free_port()
                    continue
                raise
        raise AssertionError("unreachable")

    def _wait_ready(self, deadline: float) -> None:
        proc = self._proc
        assert proc is not None
        last_error = "no answer"
        while True:
            if proc.poll() is not None:
                raise ClickHouseStartError(
                    f"clickhouse-server exited with code {proc.returncode} during startup:\n{self.logs_tail()}"
                )
            try:
                with urllib.request.urlopen(f"{self.http_url}/ping", timeout=2) as response:
                    if response.status == 200:
                        return
                    last_error = f"HTTP {response.status}"
            except (urllib.error.URLError, OSError) as exc:
                last_error = str(exc)
            if time.monotonic() > deadline:
                raise ClickHouseStartError(
                    f"clickhouse-server did not answer {self.http_url}/ping in time (last error: {last_error}):\n"
                    f"{self.logs_tail()}"
                )
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.05)  # poll interval that notices an early exit

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM and wait; SIGKILL when the server takes longer than ``timeout`` seconds."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        with _LIVE_LOCK:
            _LIVE.discard(self)

    def kill(self) -> None:
        """SIGKILL and reap."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        with _LIVE_LOCK:
            _LIVE.discard(self)

    def cleanup(self) -> None:
        """Kill if running; remove the directory if this object created it (else only the data)."""
        self.kill()
        if self._own_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)
        else:
            shutil.rmtree(self.base_dir / "data", ignore_errors=True)

    def __enter__(self) -> ClickHouseServer:
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

    # -- synchronous SQL over HTTP (for fixtures; the library uses mybinlog.replication.open_target) ---

    def execute(self, sql: str, *, user: str = CH_USER) -> str:
        """Run one statement as ``user`` and return the response body (TabSeparated for SELECT)."""
        headers = {"X-ClickHouse-User": user}
        if user == CH_USER:
            headers["X-ClickHouse-Key"] = CH_PASSWORD
        request = urllib.request.Request(self.http_url + "/", data=sql.encode(), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return str(response.read().decode("utf-8", "replace"))
        except urllib.error.HTTPError as exc:
            body = exc.read().decode("utf-8", "replace").strip()
            raise RuntimeError(f"ClickHouse error for {sql[:200]!r}: {body}") from None
