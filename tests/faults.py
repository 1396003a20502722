"""Helpers of the fault tests: ``mybinlog replicate`` as a real child process whose log the test waits on.

:class:`ReplicateProcess` starts ``python -m mybinlog -v replicate ...`` with the source password in
``MYBINLOG_PASSWORD`` (never on the command line) and, for a ClickHouse server, the target's in
``MYBINLOG_CH_PASSWORD``; fail points (mybinlog/_failpoints.py) make it SIGKILL itself at a chosen step. A thread
collects its log lines; the test waits on them (a condition variable with a deadline, never a sleep):
``wait_for("on new dispatcher")`` (streaming), ``wait_caught_up(server)`` (a checkpoint covers every transaction the
server has logged), ``wait_exit()``.

:class:`TxnWriter` writes small transactions touching several tables (inserts, updates, primary-key moves, deletes)
from a thread, and can be paused so that a source server is restarted between transactions.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mybinlog import parse_gtid_set
from tests.servers import MariaDBServer

REPO = Path(__file__).resolve().parents[1]
STREAMING = "on new dispatcher"  # logged (INFO, mybinlog.sharing) when the replica's consumer starts streaming
_CHECKPOINT = re.compile(r"checkpoint at (\S+):(\d+) gtids \[([^\]]*)\]")


def child_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    for name in ("MYBINLOG_PASSWORD", "MYBINLOG_PASSWORD_FILE", "MYBINLOG_CH_PASSWORD", "MYBINLOG_FAILPOINTS"):
        env.pop(name, None)
    env.update(extra)
    return env


def source_dsn(server: MariaDBServer, *, user: str = "repl", port: int | None = None) -> str:
    """The DSN without a password (it goes in the environment)."""
    return f"mysql://{user}@{server.host}:{port or server.port}"


def target_for(kind: str, clickhouse: Any, directory: Path) -> tuple[str, dict[str, str]]:
    """(target URL, environment) for ``kind`` "server" (the ClickHouse server fixture) or "chdb" (a directory)."""
    if kind == "server":
        return clickhouse.url(with_password=False), {"MYBINLOG_CH_PASSWORD": clickhouse.password}
    return f"chdb://{directory}", {}


class ReplicateProcess:
    """One ``mybinlog replicate`` child process (see the module docstring)."""

    def __init__(
        self,
        source: str,
        password: str,
        target: str,
        database: str,
        *extra: str,
        env: dict[str, str] | None = None,
        failpoints: str | None = None,
        flush_ms: int = 100,
    ) -> None:
        self.args = [
            sys.executable,
            "-m",
            "mybinlog",
            "-v",
            "replicate",
            "--source",
            source,
            "--target",
            target,
            "--database",
            database,
            "--max-flush-data-time",
            str(flush_ms),
            "--max-rows-in-buffer",
            "500",
            "--status-interval",
            "0",
            *extra,
        ]
        more = dict(env or {})
        more["MYBINLOG_PASSWORD"] = password
        if failpoints:
            more["MYBINLOG_FAILPOINTS"] = failpoints
        self._launch(more)

    @classmethod
    def with_config(cls, config: Path, *extra: str, env: dict[str, str] | None = None) -> ReplicateProcess:
        """``mybinlog -v replicate --config FILE --status-interval 0 ...``: the file names the replicas and where
        their passwords are (``env`` holds the variables it names; the MYBINLOG_* ones are not passed on)."""
        self = cls.__new__(cls)
        self.args = [
            sys.executable,
            "-m",
            "mybinlog",
            "-v",
            "replicate",
            "--config",
            str(config),
            "--status-interval",
            "0",
            *extra,
        ]
        self._launch(dict(env or {}))
        return self

    def _launch(self, more: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(**more)
        )
        self.lines: list[str] = []
        self.out: list[str] = []
        self._cond = threading.Condition()
        self._done = 0
        for stream, sink in ((self.proc.stderr, self.lines), (self.proc.stdout, self.out)):
            threading.Thread(target=self._pump, args=(stream, sink), daemon=True).start()

    def _pump(self, stream: Any, sink: list[str]) -> None:
        with stream:  # read to the end, then close our end of the pipe
            for line in stream:
                with self._cond:
                    sink.append(line)
                    self._cond.notify_all()
        with self._cond:
            self._done += 1
            self._cond.notify_all()

    @property
    def log(self) -> str:
        with self._cond:
            return "".join(self.lines)

    def tail(self, n: int = 40) -> str:
        with self._cond:
            return "".join(self.lines[-n:])

    def wait_for(self, match: str | Callable[[str], bool], *, start: int = 0, timeout: float = 120.0) -> str:
        """The first log line from index ``start`` that contains ``match`` (or satisfies it); fails when the process
        ends first or the deadline passes."""
        test = (lambda line: match in line) if isinstance(match, str) else match
        deadline = time.monotonic() + timeout
        i = start
        with self._cond:
            while True:
                while i < len(self.lines):
                    line = self.lines[i]
                    i += 1
                    if test(line):
                        return line
                if self._done == 2:
                    raise AssertionError(
                        f"replicate exited ({self.proc.wait()}) before {match!r}:\n{''.join(self.lines[-40:])}"
                    )
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no {match!r} within {timeout} s:\n{''.join(self.lines[-40:])}")
                self._cond.wait(left)

    def wait_caught_up(self, server: MariaDBServer, *, timeout: float = 120.0, replica: str | None = None) -> str:
        """Until a checkpoint (of ``replica``, when given) covers every transaction ``server`` has logged until now."""
        flavor = server.flavor  # the checkpoint's GTIDs are in the server's own text (MariaDB or MySQL)
        goal = parse_gtid_set(server.gtid_binlog_pos(), flavor)

        def covers(line: str) -> bool:
            if replica is not None and f" {replica}: checkpoint at " not in line:
                return False
            m = _CHECKPOINT.search(line)
            return m is not None and parse_gtid_set(m.group(3), flavor).contains(goal)  # type: ignore[arg-type]

        return self.wait_for(covers, timeout=timeout)

    def checkpoints(self) -> list[tuple[str, int]]:
        with self._cond:
            return [(m.group(1), int(m.group(2))) for line in self.lines if (m := _CHECKPOINT.search(line))]

    def wait_exit(self, timeout: float = 120.0) -> int:
        rc = self.proc.wait(timeout=timeout)
        with self._cond:
            deadline = time.monotonic() + 10
            while self._done < 2 and time.monotonic() < deadline:
                self._cond.wait(deadline - time.monotonic())
        return rc

    def stop(self, timeout: float = 120.0) -> int:
        """SIGTERM (a clean stop: flush, checkpoint, exit 0)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.wait_exit(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=60)

    def __enter__(self) -> ReplicateProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


class PausableWriter(threading.Thread):
    """A writer thread that runs :meth:`write_some` until stopped; :meth:`pause` waits until it is between
    transactions and holds it there with its connection closed (while the source restarts), :meth:`resume` lets it
    go on (reconnecting). :meth:`finish` stops it and re-raises what went wrong in it."""

    autocommit = False

    def __init__(self, server: MariaDBServer, db: str) -> None:
        super().__init__(daemon=True)
        self.server, self.db = server, db
        self.transactions = 0
        self.error: BaseException | None = None
        self._stop_flag = threading.Event()
        self._go = threading.Event()
        self._go.set()
        self._idle = threading.Event()

    def write_some(self, conn: Any) -> int:
        """Write one or a few transactions on ``conn``; returns how many."""
        raise NotImplementedError

    def run(self) -> None:
        conn = None
        try:
            while not self._stop_flag.is_set():
                if not self._go.is_set():
                    if conn is not None:
                        conn.close()
                        conn = None
                    self._idle.set()
                    self._go.wait()
                    self._idle.clear()
                    continue
                if conn is None:
                    conn = self.server.connect(database=self.db, autocommit=self.autocommit)
                self.transactions += self.write_some(conn)
        except BaseException as exc:  # reported by finish()
            self.error = exc
        finally:
            self._idle.set()
            if conn is not None:
                conn.close()

    def pause(self) -> None:
        self._go.clear()
        assert self._idle.wait(120), "writer did not pause"
        if self.error is not None:
            raise self.error

    def resume(self) -> None:
        self._go.set()

    def finish(self) -> int:
        self._stop_flag.set()
        self._go.set()
        self.join(timeout=120)
        assert not self.is_alive(), "writer did not stop"
        if self.error is not None:
            raise self.error
        return self.transactions


class TxnWriter(PausableWriter):
    """Writes :func:`write_transaction` transactions into the tables of :func:`create_tables`."""

    def __init__(self, server: MariaDBServer, db: str, *, first_id: int = 500_000) -> None:
        super().__init__(server, db)
        self.n = first_id

    def write_some(self, conn: Any) -> int:
        write_transaction(conn, self.n)
        self.n += 1
        return 1


FILLER = 20_000


def create_tables(server: MariaDBServer, db: str, *, filler: int = FILLER) -> None:
    """``t1`` (int key, filled with ``filler`` rows), ``t2`` (composite key), ``nokey`` (no key at all)."""
    conn = server.connect(database=db)
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE t1 (id INT PRIMARY KEY, v VARCHAR(40) NOT NULL, n BIGINT, d DATETIME(3))")
            cur.execute("CREATE TABLE t2 (a INT, b VARCHAR(10), w DECIMAL(12,3), PRIMARY KEY (a, b))")
            cur.execute("CREATE TABLE nokey (x INT, y VARCHAR(20))")
            step = 5_000
            for lo in range(1, filler + 1, step):
                values = ",".join(
                    f"({i}, 'filler-{i}', {i * 7}, '2024-01-01 00:00:00.{i % 1000:03d}')"
                    for i in range(lo, min(lo + step, filler + 1))
                )
                cur.execute(f"INSERT INTO t1 VALUES {values}")
            cur.execute("INSERT INTO t1 VALUES (-1, 'old', 1, NULL), (-2, 'old', 2, NULL)")
            cur.execute("INSERT INTO t2 VALUES (1, 'a', 1.5), (2, 'b', 2.25), (3, 'c', NULL)")
            # no two rows alike: a table without any key is keyed by the whole row in ClickHouse, so identical rows
            # are one row there (docs/replication.md, Keys)
            cur.execute("INSERT INTO nokey VALUES (1, 'one'), (2, 'two'), (2, 'deux')")
    finally:
        conn.close()


def write_transaction(conn: Any, n: int) -> None:
    """One transaction over all three tables: an insert, an update, a primary-key move and a delete in t1; an
    upsert in t2; an insert and sometimes a delete in nokey (whose rows stay distinct: ``y`` is unique by ``n``)."""
    with conn.cursor() as cur:
        cur.execute("INSERT INTO t1 (id, v, n, d) VALUES (%s, %s, %s, NOW(3))", (10_000_000 + n, f"new-{n}", n))
        cur.execute("UPDATE t1 SET v = %s, n = n + 1 WHERE id = %s", (f"upd-{n}", n % 20_000 + 1))
        cur.execute("UPDATE t1 SET id = id + 3000000 WHERE id = %s", ((n * 7) % 20_000 + 1,))  # a key move
        cur.execute("DELETE FROM t1 WHERE id = %s", ((n * 13) % 20_000 + 1,))
        cur.execute(
            "INSERT INTO t2 (a, b, w) VALUES (%s, %s, %s) ON DUPLICATE KEY UPDATE w = w + 1",
            (n % 50, "k" + str(n % 3), n / 8),
        )
        cur.execute("INSERT INTO nokey (x, y) VALUES (%s, %s)", (n % 11, f"n{n}"))
        if n % 4 == 0:
            cur.execute("DELETE FROM nokey WHERE x = %s ORDER BY y LIMIT 1", (n % 11,))
    conn.commit()


def write(server: MariaDBServer, db: str, first: int, count: int) -> int:
    """``count`` transactions with numbers from ``first``; returns the next number."""
    conn = server.connect(database=db, autocommit=False)
    try:
        for n in range(first, first + count):
            write_transaction(conn, n)
    finally:
        conn.close()
    return first + count


def execute(server: MariaDBServer, db: str, *statements: str) -> None:
    """Run ``statements`` in ``db`` on a connection of their own (autocommit), then disconnect (a prepared XA
    transaction outlives its session on both servers, MySQL 5.7.7+ and MariaDB 10.5+, and is resolved from another)."""
    conn = server.connect(database=db)
    try:
        with conn.cursor() as cur:
            for sql in statements:
                cur.execute(sql)
    finally:
        conn.close()


def purge_to_current(server: MariaDBServer, *, timeout: float = 60.0) -> str:
    """Rotate, then purge every older binlog file; returns the file left. MariaDB keeps a file until InnoDB's binlog
    checkpoint has moved past it (asynchronously), so the purge is repeated until the server reports it done."""
    newest = server.flush_binary_logs()
    deadline = time.monotonic() + timeout
    while True:
        server.execute(f"PURGE BINARY LOGS TO '{newest}'")
        if [name for name, _ in server.binlog_files()] == [newest]:
            return newest
        assert time.monotonic() < deadline, f"the server kept {server.binlog_files()} for {timeout} s"
        time.sleep(0.05)  # polling the server's state until the condition holds (bounded by the deadline)
