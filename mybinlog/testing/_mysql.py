"""Private, throwaway Oracle MySQL servers (8.0, 8.4, 9.x) for the test suite and users' own tests.

:class:`MySQLServer` has the interface of :class:`~mybinlog.testing.MariaDBServer` (start, stop, kill, restart,
``execute``/``query``, ``repl_dsn``...) and runs its own ``mysqld`` in a temporary data directory on a free TCP
port on 127.0.0.1, with the binlog configured for row-based CDC and GTIDs on::

    log-bin, binlog_format=ROW, binlog_row_image=FULL, binlog_row_metadata=FULL, gtid_mode=ON,
    enforce_gtid_consistency=ON, server_id=1

Where ``mysqld`` comes from (:func:`find_mysql`), first match wins:

1. ``MYBINLOG_MYSQLD``: the path of an Oracle MySQL ``mysqld`` of your own (run as is).
2. A Debian unstable root built by ``scripts/mysql-root.sh`` (``bash scripts/setup.sh --test`` runs it), at
   ``MYBINLOG_MYSQL_ROOT`` or ``/var/lib/mybinlog/mysql-root``: Debian 12 has no Oracle MySQL, and the ``mysqld``
   9.x of Debian unstable needs a newer libc, so it runs chrooted there (needs root). The server's data directory
   then lives inside that root (``datadir`` is its path as seen from outside).
3. A ``mysqld`` on PATH that is Oracle MySQL (Debian's ``mysqld`` of the MariaDB packages is skipped).

``mysqld --initialize-insecure`` runs once per process into a template data directory (the accounts below are
created there with the binlog off), and every server starts from a copy of it with its own ``server_uuid``: the
binlog of a new server holds nothing written by the harness.

Accounts (caching_sha2_password, MySQL's default):

* ``root@127.0.0.1`` with password :data:`ADMIN_PASSWORD`: all privileges.
* ``repl@%`` with password :data:`REPL_PASSWORD`: REPLICATION SLAVE, REPLICATION CLIENT, SELECT, RELOAD,
  SHOW DATABASES, SHOW VIEW and XA_RECOVER_ADMIN, what a CDC client needs (docs/servers.md).

Layer rules: imports nothing from the rest of mybinlog (standard library and pymysql only).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ._mariadb import (
    _IS_ROOT,
    _LIVE,
    _LIVE_LOCK,
    _PR_SET_PDEATHSIG,
    _PRCTL,
    ADMIN_PASSWORD,
    ADMIN_USER,
    REPL_PASSWORD,
    REPL_USER,
    MariaDBServer,
    MariaDBStartError,
    _format_options,
    _run_bootstrap,
    _tail,
)

__all__ = [
    "DEFAULT_MYSQL_ROOT",
    "MYSQL_DEFAULT_OPTIONS",
    "MySQLBinaries",
    "MySQLNotAvailable",
    "MySQLServer",
    "MySQLStartError",
    "find_mysql",
]

DEFAULT_MYSQL_ROOT = "/var/lib/mybinlog/mysql-root"

#: Options every MySQL server gets unless overridden (as in MariaDBServer: dashes, ``None`` removes one).
MYSQL_DEFAULT_OPTIONS: dict[str, str | int | bool] = {
    "server-id": 1,
    "binlog-format": "ROW",
    "binlog-row-image": "FULL",
    "binlog-row-metadata": "FULL",
    "gtid-mode": "ON",
    "enforce-gtid-consistency": "ON",
    "character-set-server": "utf8mb4",
    "default-time-zone": "+00:00",
    "skip-name-resolve": True,
    "max-allowed-packet": "64M",
    "secure-file-priv": "",
    "mysqlx": "OFF",  # no X Protocol listener (its fixed port 33060 would collide between servers)
    "skip-replica-start": True,
    # speed and quiet; committed transactions survive SIGKILL of the server (written to the OS on commit)
    "innodb-buffer-pool-size": "32M",
    "innodb-redo-log-capacity": "32M",
    "innodb-flush-log-at-trx-commit": 2,
    "sync-binlog": 0,
    "innodb-doublewrite": "OFF",
    "innodb-buffer-pool-load-at-startup": "OFF",
    "innodb-buffer-pool-dump-at-shutdown": "OFF",
    "performance-schema": "OFF",
}

_INSTALL_OPTIONS = ("innodb-redo-log-capacity", "innodb-buffer-pool-size")


class MySQLNotAvailable(RuntimeError):
    """No Oracle MySQL ``mysqld`` was found (run scripts/setup.sh --test, or set MYBINLOG_MYSQLD)."""


class MySQLStartError(MariaDBStartError):
    """A private MySQL server did not start; the message carries the tail of its error log."""


class MySQLBinaries:
    """Where ``mysqld`` is and how to run it: directly, or chrooted into a root that holds it."""

    def __init__(self, mysqld: str, *, root: Path | None = None, version: str = "") -> None:
        self.mysqld = mysqld  # the path as the process sees it (inside ``root`` when chrooted)
        self.root = root
        self.version = version

    @property
    def mariadbd(self) -> str:  # what MariaDBServer's code calls the server program
        return self.mysqld

    def argv(self, program: str, *args: str) -> list[str]:
        """The command line that runs ``program`` (a path as the process sees it)."""
        if self.root is None:
            return [program, *args]
        return ["chroot", str(self.root), program, *args]

    def tool(self, name: str) -> list[str] | None:
        """The command prefix of a client program of this MySQL (``mysqlbinlog``, ``mysql``), or None."""
        if self.root is not None:
            for directory in ("/usr/bin", "/usr/sbin"):
                if os.access(f"{self.root}{directory}/{name}", os.X_OK):
                    return self.argv(f"{directory}/{name}")
            return None
        found = shutil.which(name) or (
            os.path.join(os.path.dirname(self.mysqld), name)
            if os.access(os.path.join(os.path.dirname(self.mysqld), name), os.X_OK)
            else None
        )
        return [found] if found else None

    def inside(self, host_path: Path) -> str:
        """A path on this machine as mysqld sees it."""
        if self.root is None:
            return str(host_path)
        return "/" + str(host_path.relative_to(self.root))

    def scratch_dir(self, prefix: str) -> Path:
        """A new temporary directory that mysqld can reach (inside the root when chrooted)."""
        if self.root is None:
            return Path(tempfile.mkdtemp(prefix=prefix))
        base = self.root / "tmp"
        base.mkdir(exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=prefix, dir=base))

    def __repr__(self) -> str:
        where = f", root={str(self.root)!r}" if self.root is not None else ""
        return f"MySQLBinaries(mysqld={self.mysqld!r}{where}, version={self.version!r})"


def _version_of(argv: list[str]) -> str | None:
    try:
        out = subprocess.run(
            [*argv, "--version"], capture_output=True, text=True, timeout=30, check=False, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return None
    text = (out.stdout or "").strip()
    if out.returncode != 0 or not text or "mariadb" in text.lower():
        return None
    return text


_FOUND: list[MySQLBinaries | None] = []


def find_mysql() -> MySQLBinaries | None:
    """Locate an Oracle MySQL ``mysqld`` (see the module docstring for the order); ``None`` when there is none."""
    if _FOUND:
        return _FOUND[0]
    found: MySQLBinaries | None = None
    explicit = os.environ.get("MYBINLOG_MYSQLD")
    if explicit:
        version = _version_of([explicit])
        if version is not None:
            found = MySQLBinaries(explicit, version=version)
    if found is None:
        root = Path(os.environ.get("MYBINLOG_MYSQL_ROOT") or DEFAULT_MYSQL_ROOT)
        if _IS_ROOT and os.access(root / "usr/sbin/mysqld", os.X_OK):
            candidate = MySQLBinaries("/usr/sbin/mysqld", root=root)
            version = _version_of(candidate.argv("/usr/sbin/mysqld"))
            if version is not None:
                candidate.version = version
                found = candidate
    if found is None:
        on_path = shutil.which("mysqld")
        if on_path is not None:
            version = _version_of([on_path])
            if version is not None:
                found = MySQLBinaries(on_path, version=version)
    _FOUND.append(found)
    return found


def not_available_reason() -> str:
    """Why :func:`find_mysql` found nothing, and the fix."""
    root = os.environ.get("MYBINLOG_MYSQL_ROOT") or DEFAULT_MYSQL_ROOT
    if os.environ.get("MYBINLOG_MYSQLD"):
        return (
            f"MYBINLOG_MYSQLD={os.environ['MYBINLOG_MYSQLD']} is not an Oracle MySQL mysqld that runs "
            "(`mysqld --version` failed or names MariaDB)"
        )
    if os.access(os.path.join(root, "usr/sbin/mysqld"), os.X_OK) and not _IS_ROOT:
        return f"Oracle MySQL is in the root {root}, but running it there (chroot) needs root"
    return (
        f"no Oracle MySQL mysqld: run `bash scripts/setup.sh --test` (builds the Debian unstable root {root} with "
        "mysql-server-core), or point MYBINLOG_MYSQLD at a mysqld of your own"
    )


def _require_mysql() -> MySQLBinaries:
    binaries = find_mysql()
    if binaries is None:
        raise MySQLNotAvailable(not_available_reason())
    return binaries


def _die_with_parent() -> None:  # runs in the child between fork and exec
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL)


# --- template data directory ---

_TEMPLATES: dict[tuple[tuple[str, str], ...], Path] = {}
_TEMPLATE_LOCK = threading.Lock()
_SCRATCH: list[Path] = []


def _remove_scratch() -> None:
    for path in _SCRATCH:
        shutil.rmtree(path, ignore_errors=True)


import atexit  # noqa: E402  (registered after the _mariadb module's handler: runs first, at exit)

atexit.register(_remove_scratch)


def _bootstrap_sql() -> list[str]:
    admin = f"'{ADMIN_USER}'@'127.0.0.1'"
    repl = f"'{REPL_USER}'@'%'"
    return [
        f"CREATE USER IF NOT EXISTS {admin} IDENTIFIED BY '{ADMIN_PASSWORD}'",
        f"GRANT ALL PRIVILEGES ON *.* TO {admin} WITH GRANT OPTION",
        f"CREATE USER IF NOT EXISTS {repl} IDENTIFIED BY '{REPL_PASSWORD}'",
        f"GRANT SELECT, RELOAD, SHOW DATABASES, SHOW VIEW, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO {repl}",
        f"GRANT XA_RECOVER_ADMIN ON *.* TO {repl}",  # the initial load lists prepared XA transactions
    ]


def _template_datadir(binaries: MySQLBinaries, install_options: Mapping[str, str | int | bool]) -> Path:
    """``mysqld --initialize-insecure`` once per process (with the test accounts); the template's path."""
    key = (("mysqld", binaries.mysqld), *sorted((k, str(v)) for k, v in install_options.items()))
    with _TEMPLATE_LOCK:
        cached = _TEMPLATES.get(key)
        if cached is not None:
            return cached
        root = binaries.scratch_dir("mybinlog-mysql-template-")
        _SCRATCH.append(root)
        datadir = root / "data"
        install_log = root / "install.log"
        user = ["--user=root"] if _IS_ROOT else []
        with install_log.open("wb") as out:
            result = subprocess.run(
                binaries.argv(
                    binaries.mysqld,
                    "--no-defaults",
                    "--initialize-insecure",
                    f"--datadir={binaries.inside(datadir)}",
                    *user,
                    *_format_options(install_options),
                ),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                check=False,
                timeout=300,
            )
        if result.returncode != 0:
            raise MySQLStartError(
                f"mysqld --initialize-insecure failed with code {result.returncode}:\n{_tail(install_log)}"
            )
        sock = root / "bootstrap.sock"
        error_log = root / "bootstrap-error.log"
        proc = subprocess.Popen(
            binaries.argv(
                binaries.mysqld,
                "--no-defaults",
                f"--datadir={binaries.inside(datadir)}",
                f"--socket={binaries.inside(sock)}",
                "--skip-networking",
                "--skip-log-bin",
                "--mysqlx=OFF",
                "--secure-file-priv=",
                f"--pid-file={binaries.inside(root / 'bootstrap.pid')}",
                f"--log-error={binaries.inside(error_log)}",
                *user,
                *_format_options(install_options),
            ),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _run_bootstrap(proc, str(sock), error_log, "bootstrap mysqld", _bootstrap_sql(), 120)
        if proc.returncode != 0:
            raise MySQLStartError(f"bootstrap mysqld exited with {proc.returncode}:\n{_tail(error_log)}")
        # every copy gets its own server_uuid (auto.cnf is written again at the first start)
        for leftover in ("auto.cnf", "ib_buffer_pool", "mysqld.sock", "mysqld.sock.lock"):
            with contextlib.suppress(FileNotFoundError):
                (datadir / leftover).unlink()
        _TEMPLATES[key] = datadir
        return datadir


class MySQLServer(MariaDBServer):
    """One private Oracle MySQL ``mysqld`` (the interface of :class:`MariaDBServer`).

    ``options`` override :data:`MYSQL_DEFAULT_OPTIONS` (``binlog_row_metadata="MINIMAL"``, ``gtid_mode="OFF"``
    with ``enforce_gtid_consistency="OFF"``, ``binlog_transaction_compression="ON"``...). When mysqld runs
    chrooted, the data directory is made inside the root and ``base_dir`` only names the server's directory.
    """

    flavor = "mysql"

    def __init__(
        self,
        base_dir: str | os.PathLike[str],
        *,
        options: Mapping[str, str | int | bool | None] | None = None,
        extra_args: Sequence[str] = (),
        startup_timeout: float = 120.0,
        name: str = "mysql",
    ) -> None:
        binaries = _require_mysql()
        merged: dict[str, str | int | bool | None] = dict(MYSQL_DEFAULT_OPTIONS)
        for raw_key, value in (options or {}).items():
            merged[raw_key.replace("_", "-")] = value
        # MariaDBServer's constructor merges its own defaults: start from ours and drop what MySQL lacks
        super().__init__(base_dir, options=None, extra_args=extra_args, startup_timeout=startup_timeout, name=name)
        self.binaries = binaries
        self.options = {}
        for key, value in merged.items():
            if key in ("log-bin", "skip-log-bin"):
                self._log_bin = key == "log-bin" and value not in (None, False, 0, "OFF", "0")
            elif value is not None:
                self.options[key] = value
        self._home: Path | None = None
        if binaries.root is not None:
            self._home = binaries.scratch_dir("mybinlog-mysql-")
            self.datadir = self._home / "data"
            (Path(self.base_dir) / "mysql-home").write_text(str(self._home) + "\n")
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = None
        self.socket = str(self.datadir / "mysqld.sock")
        if len(self.socket) > 100:
            self._socket_dir = Path(tempfile.mkdtemp(prefix="mdb-", dir=binaries.scratch_dir("s")))
            self.socket = str(self._socket_dir / "mysqld.sock")
        self.error_log = self.datadir / "error.log"
        self.pid_file = self.datadir / "mysqld.pid"

    def _find_binaries(self) -> Any:
        return _require_mysql()

    def __repr__(self) -> str:
        state = f"pid={self.pid}" if self.running else "stopped"
        return f"<MySQLServer {self.name} {self.host}:{self.port} {state} datadir={self.datadir}>"

    def command(self) -> list[str]:
        """The mysqld command line (chrooted when the binaries live in a root)."""
        b: MySQLBinaries = self.binaries
        args = [
            "--no-defaults",
            f"--datadir={b.inside(self.datadir)}",
            f"--socket={b.inside(Path(self.socket))}",
            f"--port={self.port}",
            f"--bind-address={self.host}",
            f"--pid-file={b.inside(self.pid_file)}",
            f"--log-error={b.inside(self.error_log)}",
        ]
        if _IS_ROOT:
            args.append("--user=root")
        if self._log_bin:
            args.append(f"--log-bin={b.inside(self.datadir / 'binlog')}")
        else:
            args.append("--skip-log-bin")
        args.extend(_format_options(self.options))
        args.extend(self.extra_args)
        return b.argv(b.mysqld, *args)

    def _template(self) -> Path:
        install_options = {k: v for k, v in self.options.items() if k in _INSTALL_OPTIONS}
        return _template_datadir(self.binaries, install_options)

    def _start_error(self, new_log: str) -> bool:
        return "Address already in use" in new_log or "Do you already have another mysqld server running" in new_log

    def start(self) -> MySQLServer:
        super().start()
        return self

    def cleanup(self) -> None:
        super().cleanup()
        if self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)

    def stop(self, timeout: float = 120.0) -> None:
        super().stop(timeout)

    # -- SQL helpers that differ from MariaDB ---

    def create_database(self, name: str) -> str:
        self.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_0900_ai_ci")
        return name

    def master_status(self) -> tuple[str, int]:
        """Current binlog file name and position (SHOW BINARY LOG STATUS, MySQL 8.2+)."""
        row = self.query("SHOW BINARY LOG STATUS" if self.version_tuple >= (8, 2, 0) else "SHOW MASTER STATUS")[0]
        return str(row[0]), int(row[1])

    def gtid_binlog_pos(self) -> str:
        return self.gtid_position()

    def gtid_position(self) -> str:
        """``@@global.gtid_executed`` (newlines removed)."""
        return str(self.query_value("SELECT @@global.gtid_executed")).replace("\n", "")

    @property
    def server_uuid(self) -> str:
        return str(self.query_value("SELECT @@server_uuid"))

    def mysqlbinlog(self, *args: str, timeout: float = 300) -> str:
        """Run this MySQL's ``mysqlbinlog`` on files of this server (host paths are translated); its stdout."""
        b: MySQLBinaries = self.binaries
        prefix = b.tool("mysqlbinlog")
        if prefix is None:
            raise MySQLNotAvailable(f"mysqlbinlog not found beside {b.mysqld}")
        translated = [b.inside(Path(a)) if a.startswith("/") else a for a in args]
        out = subprocess.run(
            [*prefix, *translated], capture_output=True, text=True, errors="replace", timeout=timeout, check=False
        )
        if out.returncode != 0:
            raise MySQLStartError(f"mysqlbinlog {' '.join(args)} failed ({out.returncode}): {out.stderr[-2000:]}")
        return out.stdout


def live_servers() -> list[MariaDBServer]:
    with _LIVE_LOCK:
        return [s for s in _LIVE if isinstance(s, MySQLServer)]
