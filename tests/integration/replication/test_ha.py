"""Active/standby ``mybinlog replicate --standby``: two or three processes on one replica under a writer; the active
is SIGKILLed or SIGSTOPped again and again, a standby takes over each time, and the replica ends equal to the source.

Every process runs with ``--standby --lease-seconds 4`` (docs/ha.md): the first takes the replica's lock, the others
wait for it. Each round the test waits for the active to write a checkpoint (the writer keeps it busy), then

* **kills** it (SIGKILL: its lock goes with its connection at once) and waits for a standby to log the takeover, or
* **pauses** it (SIGSTOP: it keeps its TCP connection; the source drops it once the lease passed without a
  confirmation), waits for a standby to log the takeover, then resumes it (SIGCONT): it must stop with the
  lost-lease error (exit code 4) without writing. Its checkpoint rows are checked in ClickHouse itself: a
  materialized view records every row inserted into ``mybinlog_meta.checkpoints`` (merges keep only the newest
  one in the table), and no row of the paused leader's epoch may appear after it was replaced, except a save it
  had in flight when it was paused (which it reports; its epoch is lower, so it can never win).

A third test pauses leaders exactly in that window, with fail points that SIGSTOP the process right after it
confirmed its lease for a table's insert, then for a checkpoint save: resumed after the takeover, each sends that one
write and reports it, then exits 4; the late insert leaves the replica exact, the late checkpoint row does not win.

A new standby is started after each round to keep the count. At the end the writer stops, the last leader catches
up, the standbys and then the leader stop cleanly, and the replica is compared with the source row by row. The
takeover times (signal to the new leader's "took over" line) are printed; they are reported, not asserted (the
only deadline is a generous one).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mybinlog._checkpoint import seq_epoch
from tests.compare import assert_replica_equal
from tests.faults import STREAMING, TxnWriter, create_tables, source_dsn, target_for
from tests.live import Member
from tests.servers import MariaDBServer

pytestmark = pytest.mark.integration

# replica names end with the source's flavour: the ClickHouse server and its checkpoints are the session's, and a
# replica's checkpoint of one flavour is refused by the other
DB = "shop"
LEASE = 4  # seconds: short, so that a paused leader is replaced quickly (with room for a busy CI host)
DEADLINE = 120.0  # generous: the only time limit (takeovers are reported, not asserted)
TOOK_OVER = re.compile(r"took over replica '[^']+' \(epoch (\d+)\)")
IN_FLIGHT = re.compile(r"checkpoint save of epoch (\d+) \(seq (\d+)\) finished .* after the last confirmation")


class Group:
    """The replicate processes of one replica: start standbys, find the leader, wait for a takeover."""

    def __init__(self, server: MariaDBServer, target: str, env: dict[str, str], replica: str) -> None:
        self.server, self.target, self.env, self.replica = server, target, env, replica
        self.cond = threading.Condition()
        self.members: list[Member] = []
        self.leader: Member | None = None
        self.epoch = 0

    def start(self, failpoints: str | None = None) -> Member:
        member = Member(
            self.cond,
            source_dsn(self.server),
            self.server.repl_password,
            self.target,
            DB,
            "--target-database",
            self.replica,
            "--replica",
            self.replica,
            "--standby",
            "--lease-seconds",
            str(LEASE),
            env=self.env,
            failpoints=failpoints,
        )
        self.members.append(member)
        return member

    def wait(self, test: Callable[[], Any], what: str, timeout: float = DEADLINE) -> Any:
        """Until ``test()`` returns something true (checked whenever any member logs a line)."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                result = test()
                if result:
                    return result
                left = deadline - time.monotonic()
                if left <= 0:
                    logs = "\n".join(f"--- member {i}:\n{m.tail(25)}" for i, m in enumerate(self.members))
                    raise AssertionError(f"no {what} within {timeout} s:\n{logs}")
                self.cond.wait(left)

    def wait_takeover(self, marks: dict[int, int], exclude: Member | None = None) -> tuple[Member, int]:
        """The member that logged "took over" after its mark (its log length when the round began)."""

        def found() -> tuple[Member, int] | None:
            for member in self.members:
                if member is exclude or id(member) not in marks:
                    continue
                for line in member.lines_from(marks[id(member)]):
                    m = TOOK_OVER.search(line)
                    if m:
                        return member, int(m.group(1))
            return None

        member, epoch = self.wait(found, "takeover")
        assert epoch > self.epoch, f"epoch {epoch} after {self.epoch}"
        self.leader, self.epoch = member, epoch
        return member, epoch

    def marks(self) -> dict[int, int]:
        return {id(m): len(m.lines_from(0)) for m in self.members if m.proc.poll() is None}

    def standbys(self) -> list[Member]:
        return [m for m in self.members if m is not self.leader and m.proc.poll() is None]

    def close(self) -> None:
        for member in self.members:
            member.kill()


class CheckpointLog:
    """Every checkpoint row ever inserted for one replica, recorded by a materialized view (the checkpoints table is
    a ReplacingMergeTree: merges keep only the newest row)."""

    def __init__(self, clickhouse: Any, replica: str) -> None:
        self.ch = clickhouse
        self.replica = replica
        self.table = f"mybinlog_meta.ha_log_{replica}"
        clickhouse.execute("CREATE DATABASE IF NOT EXISTS mybinlog_meta")
        clickhouse.execute(  # the same definition as mybinlog/clickhouse/_checkpoint.py (IF NOT EXISTS there too)
            "CREATE TABLE IF NOT EXISTS mybinlog_meta.checkpoints (replica String, seq UInt64, state String) "
            "ENGINE = ReplacingMergeTree(seq) ORDER BY replica"
        )
        clickhouse.execute(f"CREATE TABLE {self.table} (replica String, seq UInt64) ENGINE = MergeTree ORDER BY seq")
        clickhouse.execute(
            f"CREATE MATERIALIZED VIEW {self.table}_mv TO {self.table} AS SELECT replica, seq "
            f"FROM mybinlog_meta.checkpoints WHERE replica = '{replica}'"
        )

    def seqs(self) -> list[int]:
        out = self.ch.execute(f"SELECT seq FROM {self.table} ORDER BY seq")
        return [int(line) for line in out.split()]

    def close(self) -> None:
        self.ch.execute(f"DROP TABLE IF EXISTS {self.table}_mv")
        self.ch.execute(f"DROP TABLE IF EXISTS {self.table}")


def _kill_round(group: Group) -> float:
    old = group.leader
    assert old is not None
    marks = group.marks()
    started = time.monotonic()
    old.kill()
    group.wait_takeover(marks, exclude=old)
    return time.monotonic() - started


def _pause_round(group: Group, log: CheckpointLog) -> float:
    old = group.leader
    assert old is not None
    old_epoch = group.epoch
    marks = group.marks()
    started = time.monotonic()
    os.kill(old.proc.pid, signal.SIGSTOP)
    try:
        new, epoch = group.wait_takeover(marks, exclude=old)
        took = time.monotonic() - started
        before = {s for s in log.seqs() if seq_epoch(s) == old_epoch}
    finally:
        os.kill(old.proc.pid, signal.SIGCONT)
    rc = old.wait_exit(DEADLINE)
    assert rc == 4, f"the paused leader went on (exit {rc}):\n{old.tail()}"
    assert "lost its lease" in old.log, old.tail()
    # no checkpoint row of the old epoch after the new leader's claim, except a save the old leader had in flight
    # when it was paused (announced in its log)
    in_flight = {int(m.group(2)) for m in IN_FLIGHT.finditer(old.log) if int(m.group(1)) == old_epoch}
    late = {s for s in log.seqs() if seq_epoch(s) == old_epoch} - before
    assert late <= in_flight, f"rows of epoch {old_epoch} written after the takeover: {sorted(late)}\n{old.tail()}"
    assert len(late) <= 1, late
    assert epoch > old_epoch
    assert new.proc.poll() is None
    return took


def _scenario(
    server: MariaDBServer, clickhouse: Any, tmp_path: Path, replica: str, processes: int, rounds: str
) -> list[tuple[str, float]]:
    server.create_database(DB)
    create_tables(server, DB, filler=2_000)
    target, env = target_for("server", clickhouse, tmp_path)
    log = CheckpointLog(clickhouse, replica)
    group = Group(server, target, env, replica)
    writer = TxnWriter(server, DB)
    times: list[tuple[str, float]] = []
    try:
        first = group.start()
        group.wait_takeover({id(first): 0})
        first.wait_for(STREAMING, timeout=DEADLINE)  # the initial load is done
        for _ in range(processes - 1):
            standby = group.start()
            standby.wait_for("waiting for the replica lock", timeout=DEADLINE)
        writer.start()
        for kind in rounds:
            leader = group.leader
            assert leader is not None
            leader.wait_for("checkpoint at", start=len(leader.lines_from(0)), timeout=DEADLINE)
            if kind == "k":
                times.append(("SIGKILL", _kill_round(group)))
            else:
                times.append(("SIGSTOP", _pause_round(group, log)))
            group.start().wait_for("waiting for the replica lock", timeout=DEADLINE)
        writer.finish()
        leader = group.leader
        assert leader is not None
        leader.wait_caught_up(server, timeout=DEADLINE)
        for standby in group.standbys():
            assert standby.stop() == 0, standby.tail()
        assert leader.stop() == 0, leader.tail()
        epochs = sorted({seq_epoch(s) for s in log.seqs()})
        assert epochs[-1] == group.epoch, epochs
        assert len(epochs) >= len(rounds) + 1, epochs
        for member in group.members:  # nothing but mybinlog's own lines (no driver warnings, e.g. of deprecations)
            assert not [line for line in member.lines if " asyncmy:" in line], member.tail()
    finally:
        if writer.is_alive():
            writer.finish()
        group.close()
        log.close()
    asyncio.run(assert_replica_equal(server, DB, clickhouse.url(), target_database=replica))
    summary = ", ".join(f"{kind} {seconds:.2f} s" for kind, seconds in times)
    print(f"\ntakeover times ({processes} processes, lease {LEASE} s): {summary}")
    return times


def test_three_processes_killed_and_paused(fresh_server: MariaDBServer, clickhouse_server: Any, tmp_path: Path) -> None:
    times = _scenario(fresh_server, clickhouse_server, tmp_path, f"ha_three_{fresh_server.flavor}", 3, "kpkp")
    assert len(times) == 4


def test_two_processes_paused_and_killed(fresh_server: MariaDBServer, clickhouse_server: Any, tmp_path: Path) -> None:
    times = _scenario(fresh_server, clickhouse_server, tmp_path, f"ha_two_{fresh_server.flavor}", 2, "pkp")
    assert len(times) == 3


def test_paused_with_a_write_in_flight(fresh_server: MariaDBServer, clickhouse_server: Any, tmp_path: Path) -> None:
    """The window no lease can close: a leader paused *after* confirming its lease and before its write reached
    ClickHouse (fail points that SIGSTOP the process there) sends that one write when it is resumed, after a standby
    took over. An insert: its rows carry the versions the new leader writes for the same transactions, so the replica
    stays exact. A checkpoint save: its row has the old epoch, so it never wins over the new leader's. Each is
    reported by the old leader, which then stops (exit 4) without writing anything else."""
    server, replica = fresh_server, f"ha_flight_{fresh_server.flavor}"
    server.create_database(DB)
    create_tables(server, DB, filler=2_000)
    target, env = target_for("server", clickhouse_server, tmp_path)
    log = CheckpointLog(clickhouse_server, replica)
    group = Group(server, target, env, replica)
    writer = TxnWriter(server, DB)
    try:
        a = group.start("flush.before_insert=6@stop")  # stops with a table's insert confirmed but not sent
        group.wait_takeover({id(a): 0})
        a.wait_for(STREAMING, timeout=DEADLINE)
        b = group.start("checkpoint.before_save=20@stop")  # as a leader: stops with its 20th save not sent
        b.wait_for("waiting for the replica lock", timeout=DEADLINE)
        marks = group.marks()
        writer.start()
        a.wait_for("fail point flush.before_insert reached: stopping", timeout=DEADLINE)
        new, _ = group.wait_takeover(marks, exclude=a)
        assert new is b
        b.wait_for("checkpoint at", timeout=DEADLINE)  # the new leader wrote data after the takeover
        os.kill(a.proc.pid, signal.SIGCONT)
        assert a.wait_exit(DEADLINE) == 4, a.tail()
        assert re.search(r"an insert into \S+ finished .* after the last confirmation", a.log), a.tail()
        assert "lost its lease" in a.log, a.tail()

        c = group.start()
        marks = group.marks()
        b.wait_for("fail point checkpoint.before_save reached: stopping", timeout=DEADLINE)
        old_epoch = group.epoch
        group.wait_takeover(marks, exclude=b)
        before = {s for s in log.seqs() if seq_epoch(s) == old_epoch}
        os.kill(b.proc.pid, signal.SIGCONT)
        assert b.wait_exit(DEADLINE) == 4, b.tail()
        in_flight = {int(m.group(2)) for m in IN_FLIGHT.finditer(b.log) if int(m.group(1)) == old_epoch}
        late = {s for s in log.seqs() if seq_epoch(s) == old_epoch} - before
        assert len(in_flight) == 1, b.tail()
        assert late == in_flight, (sorted(late), sorted(in_flight))
        newest = int(
            clickhouse_server.execute(
                f"SELECT max(seq) FROM mybinlog_meta.checkpoints WHERE replica = '{replica}'"
            ).strip()
        )
        assert seq_epoch(newest) == group.epoch > old_epoch  # the late row does not win

        writer.finish()
        c.wait_caught_up(server, timeout=DEADLINE)
        assert c.stop() == 0, c.tail()
    finally:
        if writer.is_alive():
            writer.finish()
        group.close()
        log.close()
    asyncio.run(assert_replica_equal(server, DB, clickhouse_server.url(), target_database=replica))
