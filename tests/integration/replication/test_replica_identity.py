"""One writer per replica, whatever the target's address is spelled like (docs/ha.md, "The replica's identity").

The replica lock on the source is named after what the ClickHouse server itself reports (18.16: ``hostName()`` and
its data directory; later servers: ``serverUUID()``), not after the URL: two ``mybinlog replicate`` processes of one
replica, one with ``--target http://default@127.0.0.1:PORT`` and the other with ``http://localhost:PORT/`` or
``http://default@[::1]:PORT``, are one replica. Without ``--standby`` the second is refused (exit code 4); with it,
it waits and takes over only when the first is gone. Before, each spelling had its own lock: both led (epochs 1 and
2), and with the collapsing engine keys ended with ``sum(_sign)`` outside {0, 1}.

An embedded target (chdb) spelled as two paths of one directory (a symbolic link, a relative path) is refused with
exit code 4 too (chdb holds the directory for one process; the message names the holder). ``--standby`` with a chdb
target is refused (exit 2) before the directory is created.

Also checked here: the periodic status lines and the standby's "took over" line are INFO (not WARNING); a former
leader that was paused and lost its lease says ``"leader": false`` in every status line after it resumed and in its
last one, and is not told to add the ``--standby`` it runs with.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.compare import assert_replica_equal
from tests.faults import STREAMING, ReplicateProcess, child_env, create_tables, source_dsn, write
from tests.live import Member
from tests.servers import MariaDBServer

pytestmark = pytest.mark.integration

DEADLINE = 120.0
LEASE = 4
REFUSED = "is already being written by another mybinlog process"


def _spellings(clickhouse: Any) -> list[str]:
    """Other names of the session's ClickHouse server than ``clickhouse.url(with_password=False)`` (127.0.0.1)."""
    names = [f"http://localhost:{clickhouse.http_port}/"]  # no user, a trailing slash
    if clickhouse.ipv6:
        names.append(clickhouse.url(with_password=False, host="[::1]"))
    return names


def _start(
    server: MariaDBServer,
    db: str,
    target: str,
    replica: str,
    engine: str,
    *extra: str,
    group: threading.Condition | None = None,
) -> ReplicateProcess:
    """A ``replicate`` process of ``replica`` (its log lines also wake ``group``, when given)."""
    from mybinlog.testing._clickhouse import CH_PASSWORD

    args = (
        source_dsn(server),
        server.repl_password,
        target,
        db,
        "--target-database",
        replica,
        "--replica",
        replica,
        "--engine",
        engine,
        *extra,
    )
    env = {"MYBINLOG_CH_PASSWORD": CH_PASSWORD}
    if group is not None:
        return Member(group, *args, env=env)
    return ReplicateProcess(*args, env=env)


def _bad_signs(clickhouse: Any, database: str) -> int:
    """Keys of the collapsing table ``t1`` whose rows do not sum to 0 or 1 (two writers replaying each other)."""
    out = clickhouse.execute(
        f"SELECT count() FROM (SELECT id, sum(_sign) AS s FROM {database}.t1 GROUP BY id) WHERE s NOT IN (0, 1)"
    )
    return int(out.strip())


def _status_lines(lines: list[str]) -> list[dict[str, Any]]:
    return [json.loads(line.split(" status ", 1)[1]) for line in lines if " mybinlog.progress: status {" in line]


@pytest.mark.parametrize("engine", ["replacing", "collapsing"])
def test_second_spelling_refused(server: MariaDBServer, db: str, clickhouse_server: Any, engine: str) -> None:
    """Without --standby: every other spelling of the server is refused with exit code 4 while the first runs; the
    first alone writes, and the replica ends equal to the source (collapsing: every key sums to 0 or 1). Replacing
    with is_deleted needs ClickHouse 23.2 (the 18.16 server refuses that engine); chdb covers it below."""
    replica = f"ident_{engine}_{server.flavor}"
    create_tables(server, db, filler=300)
    first = _start(server, db, clickhouse_server.url(with_password=False), replica, engine)
    try:
        first.wait_for(STREAMING, timeout=DEADLINE)
        n = write(server, db, 1_000, 20)
        for target in _spellings(clickhouse_server):
            second = _start(server, db, target, replica, engine)
            try:
                assert second.wait_exit(60) == 4, second.tail()
                assert REFUSED in second.log, second.tail()
                assert "leads replica" not in second.log, second.tail()
            finally:
                second.kill()
            n = write(server, db, n, 20)
        first.wait_caught_up(server, timeout=DEADLINE)
        assert first.proc.poll() is None, first.tail()
        assert first.stop() == 0, first.tail()
    finally:
        first.kill()
    asyncio.run(assert_replica_equal(server, db, clickhouse_server.url(), engine=engine, target_database=replica))
    if engine == "collapsing":
        assert _bad_signs(clickhouse_server, replica) == 0


def test_second_spelling_waits_as_standby(server: MariaDBServer, db: str, clickhouse_server: Any) -> None:
    """With --standby: processes naming the server differently wait for the one lock; when the leader is paused
    (SIGSTOP) one of them takes over (an INFO line), and the former leader, resumed, stops with exit code 4, says
    ``"leader": false`` from then on, and is not told to add the --standby it runs with."""
    replica = f"ident_standby_{server.flavor}"
    create_tables(server, db, filler=300)
    standby = ("--standby", "--lease-seconds", str(LEASE), "--status-interval", "0.2")
    group = threading.Condition()
    leader = _start(server, db, clickhouse_server.url(with_password=False), replica, "replacing", *standby)
    others: list[ReplicateProcess] = []
    try:
        leader.wait_for(STREAMING, timeout=DEADLINE)
        for target in _spellings(clickhouse_server):
            other = _start(server, db, target, replica, "replacing", *standby, group=group)
            others.append(other)
            other.wait_for("waiting for the replica lock", timeout=DEADLINE)
        n = write(server, db, 1_000, 20)
        leader.wait_caught_up(server, timeout=DEADLINE)
        status = _status_lines(leader.lines)
        assert status, leader.tail()
        assert status[-1]["leader"] is True, leader.tail()
        assert not any(" WARNING mybinlog.cli: status " in line for line in leader.lines)
        for other in others:  # nobody else led meanwhile
            assert other.proc.poll() is None, other.tail()
            assert "took over" not in other.log, other.tail()
            assert "leads replica" not in other.log, other.tail()
            assert all(s["leader"] is False for s in _status_lines(other.lines)), other.tail()

        os.kill(leader.proc.pid, signal.SIGSTOP)
        try:
            line = _wait_any(group, others, "took over replica")
        finally:
            resumed_at = len(leader.lines)
            os.kill(leader.proc.pid, signal.SIGCONT)
        assert " INFO " in line, line
        assert leader.wait_exit(DEADLINE) == 4, leader.tail()
        assert "lost its lease" in leader.log, leader.tail()
        assert "start it again with --standby" not in leader.log, leader.tail()
        assert all(s["leader"] is False for s in _status_lines(leader.lines[resumed_at:])), leader.tail(20)
        last = json.loads(leader.out[-1])
        assert last["leader"] is False, last

        new = next(o for o in others if "took over replica" in o.log)
        write(server, db, n, 20)
        new.wait_caught_up(server, timeout=DEADLINE)
        for other in others:
            if other is not new:
                assert other.proc.poll() is None, other.tail()
                assert "took over" not in other.log, other.tail()
                assert other.stop() == 0, other.tail()
        assert new.stop() == 0, new.tail()
    finally:
        leader.kill()
        for other in others:
            other.kill()
    asyncio.run(assert_replica_equal(server, db, clickhouse_server.url(), target_database=replica))


def _wait_any(group: threading.Condition, processes: list[ReplicateProcess], text: str) -> str:
    """The first line containing ``text`` of any of ``processes`` (woken by ``group`` whenever one logs a line)."""
    deadline = time.monotonic() + DEADLINE
    with group:
        while True:
            for p in processes:
                for line in list(p.lines):
                    if text in line:
                        return line
            left = deadline - time.monotonic()
            assert left > 0, f"no {text!r} within {DEADLINE} s:\n" + "\n".join(p.tail(20) for p in processes)
            group.wait(left)


@pytest.mark.parametrize("engine", ["replacing", "replacing_is_deleted", "collapsing"])
def test_chdb_directory_under_two_names(
    server: MariaDBServer, db: str, tmp_path: Path, engine: str, chdb_dir: Path
) -> None:
    """An embedded target: a symbolic link to the directory and a relative path to it name the same replica; the
    second process is refused with exit code 4 and told who holds the directory."""
    replica = f"ident_chdb_{engine}_{server.flavor}"
    create_tables(server, db, filler=100)
    directory = tmp_path / "ch"
    link = tmp_path / "link"
    link.symlink_to(directory, target_is_directory=True)
    first = _start(server, db, f"chdb://{directory}", replica, engine)
    try:
        first.wait_for(STREAMING, timeout=DEADLINE)
        for target in (f"chdb://{link}", os.path.relpath(directory)):
            second = _start(server, db, target, replica, engine)
            try:
                assert second.wait_exit(60) == 4, second.tail()
                assert f"is open in process {first.proc.pid}" in second.log, second.tail()
            finally:
                second.kill()
        assert first.proc.poll() is None, first.tail()
        assert first.stop() == 0, first.tail()
    finally:
        first.kill()


def test_standby_with_chdb_creates_nothing(tmp_path: Path) -> None:
    """``--standby`` with an embedded target is refused (exit 2) before the target is opened: no directory."""
    directory = tmp_path / "never"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mybinlog",
            "replicate",
            "--source",
            "mysql://repl@127.0.0.1:9",
            "--target",
            f"chdb://{directory}",
            "--database",
            "shop",
            "--standby",
        ],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "standby needs a ClickHouse server" in proc.stderr
    assert not directory.exists()
