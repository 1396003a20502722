"""A clean shutdown of the source in the middle of ``mybinlog replicate``'s initial load is an outage like any other:
the load starts over once the server is back within ``--source-retry-seconds`` (its crash-safe "loading" checkpoint
makes that exact: what the interrupted load wrote is dropped first), and ``replicate`` exits 75 only when the budget
is spent. Before, the load's lost connection ended ``replicate`` with exit 75 at once.

Both flavours, each a private server stopped with ``server.stop()`` (SIGTERM, a clean shutdown) exactly in the middle
of the load: the ``load.after_rows`` fail point pauses the child (SIGSTOP) after its first block of rows, the server
is stopped, and the child resumed (SIGCONT) to find its connections gone.
"""

from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest

from tests.compare import assert_replica_equal
from tests.faults import ReplicateProcess, create_tables, source_dsn, write
from tests.servers import MariaDBServer

pytestmark = pytest.mark.integration

DB = "shop"
_CHECKPOINT = re.compile(r"checkpoint at (\S+):(\d+) ")
_PAUSED = "fail point load.after_rows reached"
_LOST = "went away during the initial load"
_LOCK_RECONNECT = "the replica lock's connection broke"
# the lock is confirmed every quarter lease: with a long one the load's own connection finds the source gone first
# where the socket does not hold the rest of the block (MariaDB here)
_LONG_LEASE = ("--lease-seconds", "600")


def _run(server: MariaDBServer, target: str, *extra: str, failpoints: str | None = None) -> ReplicateProcess:
    return ReplicateProcess(source_dsn(server), server.repl_password, target, DB, *extra, failpoints=failpoints)


def _wait_caught_up(rep: ReplicateProcess, server: MariaDBServer, *, start: int = 0) -> None:
    goal = server.master_status()

    def covers(line: str) -> bool:
        m = _CHECKPOINT.search(line)
        return m is not None and (m.group(1), int(m.group(2))) >= goal

    rep.wait_for(covers, start=start)


def _stop_source_mid_load(rep: ReplicateProcess, server: MariaDBServer) -> int:
    """Stop ``server`` while the child is paused after the first block of its load, then resume the child; returns
    the log line to look from."""
    rep.wait_for(_PAUSED)
    mark = len(rep.lines)
    server.stop()  # SIGTERM: a clean shutdown, while the load's connection has rows in flight
    rep.proc.send_signal(signal.SIGCONT)
    return mark


async def test_the_initial_load_outlives_a_clean_shutdown_of_the_source(
    fresh_server: MariaDBServer, tmp_path: Path
) -> None:
    """Whichever connection finds the source gone first (MariaDB: the load's; MySQL, whose socket still holds the
    rest of the block: the replica lock's, confirmed before the next insert), the load starts over when it is back."""
    server = fresh_server
    server.create_database(DB)
    create_tables(server, DB)  # 20,000 rows in t1: several blocks of the load
    url = f"chdb://{tmp_path / 'ch'}"
    with _run(server, url, "--source-retry-seconds", "300", *_LONG_LEASE, failpoints="load.after_rows=1@stop") as rep:
        mark = _stop_source_mid_load(rep, server)
        # the load's connection or the replica lock's finds the source gone first (before the fix: exit 75 at once)
        rep.wait_for(lambda line: _LOST in line or _LOCK_RECONNECT in line, start=mark)
        assert rep.proc.poll() is None, rep.tail()
        server.start()
        rep.wait_for("initial load copied", start=mark)
        mark = len(rep.lines)
        write(server, DB, 1, 5)
        _wait_caught_up(rep, server, start=mark)
        assert rep.stop() == 0, rep.tail()
    assert "an earlier initial load did not finish" in rep.log  # the load started over, dropping the first one's rows
    await assert_replica_equal(server, DB, url)


async def test_a_shutdown_during_the_load_longer_than_the_budget_exits_75(
    fresh_server: MariaDBServer, tmp_path: Path
) -> None:
    server = fresh_server
    server.create_database(DB)
    create_tables(server, DB)
    url = f"chdb://{tmp_path / 'ch'}"
    with _run(server, url, "--source-retry-seconds", "3", *_LONG_LEASE, failpoints="load.after_rows=1@stop") as rep:
        _stop_source_mid_load(rep, server)
        assert rep.wait_exit() == 75, rep.tail()
    # the load's budget (MariaDB) or the replica lock's (MySQL: it notices first, see above)
    assert "stayed unreachable for 3 s" in rep.log, rep.tail()
    server.start()
    write(server, DB, 1, 3)
    with _run(server, url, "--once") as rep:
        assert rep.wait_exit() == 0, rep.tail()
    await assert_replica_equal(server, DB, url)
