"""The replicator killed with SIGKILL at random points, restarted each time, must end exactly equal to the source.

A writer keeps running the randomized workload (every column type, multi-row statements, updates that change
nothing but ``rev``, deletes, ALTER TABLE ADD/DROP COLUMN mid-stream) while ``mybinlog replicate`` runs as a real
child process. The test kills it with SIGKILL after a random number (0-3) of checkpoints (20 times with the
ClickHouse server, 8 times with chdb, whose start is slower), restarts it,
and finally lets it catch up (``--once``) and runs ``mybinlog verify`` (row counts, checksums over all columns and
duplicates visible through FINAL) as another child process.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.servers import MariaDBServer
from tests.workload import Workload

pytestmark = pytest.mark.integration

KILLS = 20  # the ClickHouse server variant (fast restarts)
KILLS_CHDB = 8  # embedded ClickHouse takes a few seconds to start per restart
REPO = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("MYBINLOG_PASSWORD", None)
    return env


class Writer(threading.Thread):
    """Runs the workload in small transactions until stopped (a real concurrent writer)."""

    def __init__(self, server: MariaDBServer, db: str, seed: int) -> None:
        super().__init__(daemon=True)
        self.server, self.db = server, db
        self.workload = Workload(seed, large_values=False)
        self.stop_flag = threading.Event()
        self.error: BaseException | None = None
        self.transactions = 0
        conn = server.connect(database=db)
        self.workload.run(conn, db, n_transactions=5, statements_per_txn=4, ddl_every=0)
        conn.close()

    def run(self) -> None:
        conn = self.server.connect(database=self.db)
        try:
            while not self.stop_flag.is_set():
                self.workload.run(conn, self.db, n_transactions=3, statements_per_txn=3, ddl_every=9)
                self.transactions += 3
        except BaseException as exc:  # reported by the test
            self.error = exc
        finally:
            conn.close()

    def finish(self) -> None:
        self.stop_flag.set()
        self.join(timeout=120)
        assert not self.is_alive(), "writer did not stop"
        if self.error is not None:
            raise self.error


def _replicate_cmd(source: str, target: str, db: str, *extra: str) -> list[str]:
    return [
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
        db,
        "--max-flush-data-time",
        "100",
        "--max-rows-in-buffer",
        "200",
        "--status-interval",
        "0",
        *extra,
    ]


def _wait_checkpoints(proc: subprocess.Popen[str], n: int, log: list[str], marker: str = "checkpoint at") -> bool:
    """Read the child's log until it has written ``n`` more lines with ``marker`` (checkpoints by default); False if
    it exited first."""
    seen = 0
    assert proc.stderr is not None
    while seen < n:
        line = proc.stderr.readline()
        if not line:
            return False
        log.append(line)
        if marker in line:
            seen += 1
    return True


STREAMING = "on new dispatcher"  # the replicator's consumer started streaming (logged by mybinlog.sharing)


def _drain(proc: subprocess.Popen[str], log: list[str]) -> threading.Thread:
    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            log.append(line)

    t = threading.Thread(target=pump, daemon=True)
    t.start()
    return t


def run_with_kills(source: str, target: str, db: str, writer: Writer, seed: int, kills_wanted: int) -> list[str]:
    rng = random.Random(seed)
    log: list[str] = []
    kills = 0
    while kills < kills_wanted:
        proc = subprocess.Popen(
            _replicate_cmd(source, target, db),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        try:
            alive = _wait_checkpoints(proc, rng.randint(0, 3), log)
            if not alive:
                proc.wait(timeout=60)
                raise AssertionError(f"replicator exited with {proc.returncode}:\n{''.join(log[-40:])}")
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
            kills += 1
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return log


def finish_and_verify(source: str, target: str, db: str) -> None:
    done = subprocess.run(
        [*_replicate_cmd(source, target, db, "--once")], capture_output=True, text=True, env=_env(), timeout=600
    )
    assert done.returncode == 0, done.stderr[-4000:]
    verify = subprocess.run(
        [sys.executable, "-m", "mybinlog", "verify", "--source", source, "--target", target, "--database", db],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=600,
    )
    assert verify.returncode == 0, verify.stdout[-4000:] + verify.stderr[-4000:]
    assert "password" not in verify.stdout.lower() or "***" in verify.stdout


def _scenario(server: MariaDBServer, db: str, target: str, seed: int, kills: int) -> None:
    writer = Writer(server, db, seed)
    writer.start()
    try:
        run_with_kills(server.repl_dsn, target, db, writer, seed, kills)
    finally:
        writer.finish()
    assert writer.transactions > 0
    finish_and_verify(server.repl_dsn, target, db)


def test_sigkill_chdb(fresh_mariadb: MariaDBServer, tmp_path: Path) -> None:
    fresh_mariadb.create_database("crash_chdb")
    _scenario(fresh_mariadb, "crash_chdb", f"chdb://{tmp_path / 'ch'}", seed=11, kills=KILLS_CHDB)


def test_sigkill_clickhouse_server(fresh_mariadb: MariaDBServer, clickhouse_server: Any) -> None:
    fresh_mariadb.create_database("crash_server")
    _scenario(fresh_mariadb, "crash_server", _server_url(clickhouse_server), seed=12, kills=KILLS)


def _server_url(server: Any) -> str:
    url: Callable[..., str] | str = server.url
    return url(with_password=True) if callable(url) else url


def test_sigterm_stops_cleanly_and_status_is_served(
    mariadb: MariaDBServer, db: str, clickhouse_server: Any, tmp_path: Path
) -> None:
    conn = mariadb.connect(database=db)
    wl = Workload(21, tables=("composite_pk",))
    wl.run(conn, db, n_transactions=3, statements_per_txn=3, ddl_every=0)
    target = _server_url(clickhouse_server)
    status_file = tmp_path / "status.json"
    proc = subprocess.Popen(
        [*_replicate_cmd(mariadb.repl_dsn, target, db), "--status-address", f"file:{status_file}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    log: list[str] = []
    try:
        # an idle replica writes no checkpoint (nothing moved); wait until it streams
        assert _wait_checkpoints(proc, 1, log, STREAMING), "".join(log[-40:])
        wl.run(conn, db, n_transactions=5, statements_per_txn=3, ddl_every=0)
        assert _wait_checkpoints(proc, 1, log), "".join(log[-40:])
        shown = subprocess.run(
            [sys.executable, "-m", "mybinlog", "status", "--from", f"file:{status_file}", "--format", "json"],
            capture_output=True,
            text=True,
            env=_env(),
            timeout=60,
        )
        assert shown.returncode == 0, shown.stderr
        assert '"dispatcher_name"' in shown.stdout
        assert '"mysql_binlog_executed_gtid_set"' in shown.stdout
        assert mariadb.repl_password not in shown.stdout
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err[-3000:]
    assert '"state": "stopped"' in out
    conn.close()
    finish_and_verify(mariadb.repl_dsn, target, db)
