"""The replicator killed with SIGKILL at random points, restarted each time, must end exactly equal to the source,
while the source itself is restarted and rotates its binlog under it.

A writer keeps running the randomized workload (every column type, multi-row statements, updates that change
nothing but ``rev``, deletes, ALTER TABLE ADD/DROP COLUMN mid-stream) while ``mybinlog replicate`` runs as a real
child process. Each round the test waits for a random number (0-3) of checkpoints, then at random restarts the
source (MariaDB or MySQL: a clean shutdown or SIGKILL, the writer paused between transactions meanwhile) or rotates
its binlog (FLUSH BINARY LOGS) under the running replicator, waits for more checkpoints, and SIGKILLs the
replicator. 20 kills with the ClickHouse server (replacing and collapsing engines), 8 with chdb
(replacing_is_deleted; its start is slower).
Finally it catches up (``--once``); the replica is compared with the source row by row (tests/compare.py) and by
``mybinlog verify`` (row counts, checksums over all columns, duplicates visible through FINAL) in a child process.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.compare import assert_replica_equal
from tests.faults import STREAMING, PausableWriter, ReplicateProcess, child_env, source_dsn, target_for
from tests.servers import MariaDBServer
from tests.workload import Workload

pytestmark = pytest.mark.integration

KILLS = 20  # the ClickHouse server variant (fast restarts)
KILLS_CHDB = 8  # embedded ClickHouse takes a few seconds to start per restart
REPO = Path(__file__).resolve().parents[3]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("MYBINLOG_PASSWORD", None)
    return env


class Writer(PausableWriter):
    """Runs the randomized workload in small transactions (a real concurrent writer; pausable, see
    tests/faults.py)."""

    autocommit = True

    def __init__(self, server: MariaDBServer, db: str, seed: int) -> None:
        super().__init__(server, db)
        self.workload = Workload(seed, large_values=False)
        conn = server.connect(database=db)
        self.workload.run(conn, db, n_transactions=5, statements_per_txn=4, ddl_every=0)
        conn.close()

    def write_some(self, conn: Any) -> int:
        self.workload.run(conn, self.db, n_transactions=3, statements_per_txn=3, ddl_every=9)
        return 3


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




def run_with_kills(
    server: MariaDBServer,
    target: str,
    env: dict[str, str],
    args: tuple[str, ...],
    writer: Writer,
    seed: int,
    kills: int,
) -> dict[str, int]:
    """SIGKILL the replicator ``kills`` times, restarting or rotating the source under it in between (see the
    module docstring); returns how often each thing happened."""
    rng = random.Random(seed)
    done = {"kills": 0, "clean restarts": 0, "killed sources": 0, "rotations": 0}
    while done["kills"] < kills:
        with ReplicateProcess(source_dsn(server), server.repl_password, target, args[0], *args[1:], env=env) as rep:
            for _ in range(rng.randint(0, 3)):
                rep.wait_for("checkpoint at", start=len(rep.lines))
            event = rng.random()
            if event < 0.3:
                rep.wait_for(STREAMING)
                writer.pause()
                if event < 0.15:
                    server.restart()
                    done["clean restarts"] += 1
                else:
                    server.kill()
                    server.start()
                    done["killed sources"] += 1
                writer.resume()
                rep.wait_for("reconnected", start=0)
                rep.wait_for("checkpoint at", start=len(rep.lines))
            elif event < 0.5:
                server.flush_binary_logs()
                done["rotations"] += 1
                rep.wait_for("checkpoint at", start=len(rep.lines))
            assert rep.proc.poll() is None, f"replicator exited with {rep.proc.returncode}:\n{rep.tail()}"
            rep.kill()
            done["kills"] += 1
    return done


def finish_and_verify(
    server: MariaDBServer, target: str, env: dict[str, str], args: tuple[str, ...], readable: str, engine: str
) -> None:
    with ReplicateProcess(
        source_dsn(server), server.repl_password, target, args[0], *args[1:], "--once", env=env
    ) as rep:
        assert rep.wait_exit(600) == 0, rep.tail()
    db = args[0]
    target_db = args[args.index("--target-database") + 1]
    asyncio.run(assert_replica_equal(server, db, readable, engine=engine, target_database=target_db))
    verify = subprocess.run(
        [
            sys.executable,
            "-m",
            "mybinlog",
            "verify",
            "--source",
            source_dsn(server),
            "--target",
            target,
            "--database",
            db,
            "--target-database",
            target_db,
        ],
        capture_output=True,
        text=True,
        env=child_env(MYBINLOG_PASSWORD=server.repl_password, **env),
        timeout=600,
    )
    assert verify.returncode == 0, verify.stdout[-4000:] + verify.stderr[-4000:]
    assert server.repl_password not in verify.stdout + verify.stderr


def _scenario(
    server: MariaDBServer, db: str, kind: str, engine: str, clickhouse: Any, tmp_path: Path, seed: int, kills: int
) -> None:
    if server.flavor != "mariadb":
        # one long randomized run per engine and target (MariaDB); the other flavour runs the same scenario with
        # half the kills: what differs there is the source, which every kill restarts or rotates as well
        kills = max(3, kills // 2)
    target, env = target_for(kind, clickhouse, tmp_path / "ch")
    name = f"{db}_{server.flavor}_{engine}"  # both flavours share the session's ClickHouse server
    args = (db, "--engine", engine, "--target-database", name, "--replica", name)
    writer = Writer(server, db, seed)
    writer.start()
    try:
        done = run_with_kills(server, target, env, args, writer, seed, kills)
    finally:
        writer.finish()
    assert writer.transactions > 0
    assert done["clean restarts"] + done["killed sources"] > 0, done
    readable = clickhouse.url() if kind == "server" else target
    finish_and_verify(server, target, env, args, readable, engine)


def test_sigkill_chdb(fresh_server: MariaDBServer, clickhouse_server: Any, tmp_path: Path) -> None:
    fresh_server.create_database("crash_chdb")
    _scenario(fresh_server, "crash_chdb", "chdb", "replacing_is_deleted", clickhouse_server, tmp_path, 11, KILLS_CHDB)


@pytest.mark.parametrize(("engine", "kills", "seed"), [("replacing", KILLS, 12), ("collapsing", KILLS // 2, 13)])
def test_sigkill_clickhouse_server(
    fresh_server: MariaDBServer, clickhouse_server: Any, tmp_path: Path, engine: str, kills: int, seed: int
) -> None:
    fresh_server.create_database("crash_server")
    _scenario(fresh_server, "crash_server", "server", engine, clickhouse_server, tmp_path, seed, kills)


def _server_url(server: Any) -> str:
    url: Callable[..., str] | str = server.url
    return url(with_password=True) if callable(url) else url


def test_sigterm_stops_cleanly_and_status_is_served(
    server: MariaDBServer, db: str, clickhouse_server: Any, tmp_path: Path
) -> None:
    conn = server.connect(database=db)
    wl = Workload(21, tables=("composite_pk",))
    wl.run(conn, db, n_transactions=3, statements_per_txn=3, ddl_every=0)
    target = _server_url(clickhouse_server)
    status_file = tmp_path / "status.json"
    proc = subprocess.Popen(
        [*_replicate_cmd(server.repl_dsn, target, db), "--status-address", f"file:{status_file}"],
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
        assert server.repl_password not in shown.stdout
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err[-3000:]
    assert '"state": "stopped"' in out
    conn.close()
    finish_and_verify(
        server,
        clickhouse_server.url(with_password=False),
        {"MYBINLOG_CH_PASSWORD": clickhouse_server.password},
        (db, "--target-database", db),
        clickhouse_server.url(),
        "replacing",
    )
