"""The replica lease and the leader epoch (docs/ha.md), without servers.

* ``seq = epoch << 32 | counter``: every save of a former leader sorts below the first save of the next one;
* a never-saved checkpoint (a finished snapshot's) claims the epoch above every row;
* the replicator claims one epoch per lease term, saves it before anything else, and stops when another process
  saved a later epoch within its term;
* :class:`ReplicaLease` against a scripted lock server: the lease setting on its connection, the rate-limited
  confirmation, a retake after a broken connection (a new term), a lost lease (exit-4 error naming it), a standby's
  wait (logging who holds the lock) and its stop, the keep-alive recording a lost lease.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from mybinlog import BinlogPosition, MariaDBGtidSet
from mybinlog._checkpoint import make_seq, next_seq, seq_epoch
from mybinlog.clickhouse import Checkpoint, load_checkpoint, save_checkpoint
from mybinlog.errors import ConfigurationError, ReplicaLockedError, ReplicationError
from mybinlog.replication import ReplicationSettings, Replicator
from mybinlog.source import _lease
from tests.fakes import FakeConn, LockServer, make_lease
from tests.fakes import lock_server as lock_server

# -- seq and epochs ---------------------------------------------------------------------------------------------


def test_seq_carries_the_epoch_in_its_high_bits() -> None:
    assert seq_epoch(make_seq(7, 123)) == 7
    assert make_seq(7, 123) & 0xFFFFFFFF == 123
    assert seq_epoch(41) == 0  # rows saved before epochs existed
    assert make_seq(1, 1) > 41  # ... sort below the first epoch


def test_no_save_of_a_former_leader_wins_over_the_next_leaders_first() -> None:
    for epoch in (0, 1, 2, 1000, (1 << 32) - 2):
        last_of_former = make_seq(epoch, 0xFFFFFFFF)
        first_of_next = next_seq(make_seq(epoch + 1, 0))
        assert last_of_former < first_of_next
        assert seq_epoch(first_of_next) == epoch + 1


def test_the_counter_never_spills_into_the_epoch() -> None:
    assert next_seq(make_seq(3, 5)) == make_seq(3, 6)
    with pytest.raises(ReplicationError, match="exhausted"):
        next_seq(make_seq(3, 0xFFFFFFFF))
    with pytest.raises(ValueError, match="out of range"):
        make_seq(1 << 32, 0)


class Memory:
    """A stand-in for a ClickHouse target: the checkpoints table as a list of rows (replica, seq, state)."""

    kind = "memory"
    description = "memory"

    def __init__(self) -> None:
        self.rows: list[list[str]] = []

    async def execute(self, sql: str) -> None:
        pass

    async def query(self, sql: str) -> list[list[str]]:
        from mybinlog.clickhouse import tsv_unescape

        if not self.rows:
            return [] if "max(seq)" not in sql else [["0"]]
        seq, state = max((int(r[1]), r[2]) for r in self.rows)
        if "max(seq)" in sql:
            return [[str(seq)]]
        return [[str(seq), str(tsv_unescape(state))]]

    async def insert_tsv(self, table: str, columns: Any, data: bytes, **kw: Any) -> None:
        self.rows.append(data.decode().rstrip("\n").split("\t"))

    def seqs(self) -> list[int]:
        return [int(r[1]) for r in self.rows]


def _position(n: int = 77) -> BinlogPosition:
    return BinlogPosition("binlog.000002", n, MariaDBGtidSet.parse(f"0-1-{n}"), 5, server_id=1)


async def test_a_fresh_checkpoint_claims_the_epoch_above_every_row() -> None:
    target: Any = Memory()
    old = Checkpoint("r", _position(10), seq=make_seq(4, 9))
    await save_checkpoint(target, old)
    assert target.seqs() == [make_seq(4, 10)]
    fresh = Checkpoint("r", _position(20))  # seq 0: e.g. the checkpoint a finished snapshot writes
    await save_checkpoint(target, fresh)
    assert fresh.seq == make_seq(5, 1)
    back = await load_checkpoint(target, "r")
    assert back is not None
    assert back.position.offset == 20
    assert back.epoch == 5
    await save_checkpoint(target, old)  # the former writer saves again: it does not win
    back = await load_checkpoint(target, "r")
    assert back is not None
    assert back.epoch == 5


# -- the replicator's claim -------------------------------------------------------------------------------------


class _Lease:
    """What the replicator's claim reads of its lease."""

    def __init__(self) -> None:
        self.term = 1
        self.waited = 2.5
        self.lease_seconds = 15.0
        self.failure = None

    async def confirm(self) -> None:
        pass

    def maybe_expired(self) -> bool:
        return False


def _replicator(target: Any, **settings: Any) -> Any:
    r: Any = Replicator("mysql://repl@db:3306", target, database="shop", settings=ReplicationSettings(**settings))
    r.leader.lease = _Lease()
    return r


async def test_the_replicator_claims_one_epoch_per_term_and_saves_it_first(caplog: pytest.LogCaptureFixture) -> None:
    target: Any = Memory()
    cp = Checkpoint("shop", _position(), seq=make_seq(3, 17))
    await save_checkpoint(target, cp)
    r = _replicator(target, standby=True)
    newest = await load_checkpoint(target, "shop", include_loading=True)
    with caplog.at_level(logging.INFO, logger="mybinlog.replication"):
        await r._claim(newest)
    assert r.leader.epoch == 4
    assert target.seqs()[-1] == make_seq(4, 1)  # the claim is a save of the checkpoint as it was, new epoch
    assert r.status.epoch == 4
    assert r.status.leader
    assert "took over replica 'shop' (epoch 4) after 2.5 s as a standby" in caplog.text

    # a retry within the term (ClickHouse failed): the epoch stays, nothing is saved
    saves = len(target.rows)
    await r._claim(await load_checkpoint(target, "shop", include_loading=True))
    assert (r.leader.epoch, len(target.rows)) == (4, saves)

    # another process saved a later epoch while this one believed it held the lock: stop
    await save_checkpoint(target, Checkpoint("shop", _position(), seq=make_seq(5, 0)))
    with pytest.raises(ReplicaLockedError, match="epoch 5"):
        await r._claim(await load_checkpoint(target, "shop", include_loading=True))

    # the lock taken again (a new term): a new epoch above everything
    r.leader.lease.term = 2
    await r._claim(await load_checkpoint(target, "shop", include_loading=True))
    assert r.leader.epoch == 6
    assert seq_epoch(target.seqs()[-1]) == 6


async def test_a_lock_taken_again_goes_on_unless_another_process_led_meanwhile() -> None:
    target: Any = Memory()
    cp = Checkpoint("shop", _position(), seq=make_seq(3, 17))
    await save_checkpoint(target, cp)
    r = _replicator(target)
    await r._claim(await load_checkpoint(target, "shop", include_loading=True))
    r._checkpoint = cp
    assert r.leader.epoch == 4
    # the source restarted: the lock was taken again (term 2) and nobody saved anything meanwhile: go on ...
    r.leader.lease.term = 2
    await r.leader.confirm()
    assert (r.leader.epoch, r.leader.term) == (5, 2)
    await r._save(cp)  # ... and the next save carries the next epoch (above a claim another process had in flight)
    assert target.seqs()[-1] == make_seq(5, 1)
    # taken again once more, but another process saved a checkpoint of a later epoch meanwhile: start over
    await save_checkpoint(target, Checkpoint("shop", _position(), seq=make_seq(6, 0)))
    r.leader.lease.term = 3
    with pytest.raises(Exception, match="another process led the replica meanwhile") as info:
        await r.leader.confirm()
    assert type(info.value).__name__ == "NewTerm"
    # during the initial load a lock taken again always starts over (the load is redone)
    r.leader.term, r.leader.loading = 3, True
    r.leader.lease.term = 4
    with pytest.raises(Exception, match="during the initial load"):
        await r.leader.confirm()


async def test_without_a_checkpoint_the_initial_loads_row_is_the_claim() -> None:
    target: Any = Memory()
    r = _replicator(target)
    await r._claim(None)
    assert r.leader.epoch == 1
    assert target.rows == []  # the "loading" row of the initial load follows, before any data, with this epoch
    marker = Checkpoint("shop", _position(), loading=["t"], seq=make_seq(2, 3))
    await save_checkpoint(target, marker)
    r.leader.lease.term = 2
    newest = await load_checkpoint(target, "shop", include_loading=True)
    await r._claim(newest)
    assert newest is not None
    assert newest.seq == make_seq(3, 0)  # the next "loading" row is saved under the new epoch
    assert len(target.rows) == 1


async def test_standby_is_refused_for_an_embedded_target() -> None:
    class Chdb(Memory):
        kind = "chdb"
        capabilities = None

    r = Replicator("mysql://repl@db:3306", Chdb(), database="shop", settings=ReplicationSettings(standby=True))
    with pytest.raises(ConfigurationError, match="chdb"):
        await r.run()  # before anything connects


def test_standby_settings() -> None:
    ReplicationSettings(standby=True, lease_seconds=3)
    with pytest.raises(ConfigurationError, match="collapsing"):
        ReplicationSettings(standby=True, engine="collapsing")
    with pytest.raises(ConfigurationError, match="lease_seconds"):
        ReplicationSettings(lease_seconds=0.5)


# -- the lease against a scripted lock server -------------------------------------------------------------------


async def test_the_lease_is_set_on_the_lock_connection(server: LockServer) -> None:
    lease = make_lease(lease_seconds=2.5)
    assert await lease.acquire()
    try:
        conn = server.conns[0]
        assert conn.queries[0] == "SET SESSION wait_timeout = 3, net_read_timeout = 3, net_write_timeout = 3"
        assert server.holder == conn.id
        assert lease.term == 1
        assert lease.confirm_interval == 2.5 / 4
        await lease.confirm()  # just confirmed by taking it: no query
        assert sum("CONNECTION_ID" in q for q in conn.queries) == 0
    finally:
        await lease.release()
    assert server.holder is None


async def test_without_a_lease_nothing_is_set_and_no_keep_alive_runs(server: LockServer) -> None:
    lease = make_lease()
    assert await lease.acquire()
    assert not any(q.startswith("SET SESSION") for q in server.conns[0].queries)
    assert lease._keeper is None
    await lease.release()


async def test_a_second_process_is_refused_and_pointed_at_standby(server: LockServer) -> None:
    server.holder = 7
    with pytest.raises(ReplicaLockedError, match=r"already being written by .* 10\.0\.0\.9:5555.*--standby"):
        await make_lease().acquire()
    assert server.conns[0].closed


async def test_a_broken_lock_connection_is_taken_again_in_a_new_term(server: LockServer) -> None:
    lease = make_lease(lease_seconds=60)
    await lease.acquire()
    server.conns[0].break_()
    lease._confirmed -= 60  # the last confirmation is old enough for a real one
    await lease.confirm()
    assert (lease.term, lease.reacquired) == (2, 1)
    assert server.holder == server.conns[1].id
    await lease.release()


@pytest.mark.parametrize("standby", [False, True])
async def test_a_lost_lease_advises_standby_only_to_a_process_without_it(server: LockServer, standby: bool) -> None:
    """A leader that took the lock as a standby and lost it is not told to add the --standby it runs with."""
    lease = make_lease(lease_seconds=3)
    if standby:
        assert await lease.acquire(wait=True)
    else:
        await lease.acquire()
    server.conns[0].break_()
    server.holder = 55
    lease._confirmed = _lease._now() - 10
    with pytest.raises(ReplicaLockedError) as lost:
        await lease.confirm()
    assert "lost its lease" in str(lost.value)
    assert ("start it again with --standby" in str(lost.value)) is not standby
    if standby:
        assert "has --standby already" in str(lost.value)
    await lease.release()


async def test_a_lease_lost_to_a_standby_is_final_and_says_so(server: LockServer) -> None:
    lease = make_lease(lease_seconds=3)
    await lease.acquire()
    server.conns[0].break_()  # the server dropped the idle connection of the paused process ...
    server.holder = 55  # ... and a standby took the lock
    lease._confirmed = _lease._now() - 10  # resumed after 10 s
    assert lease.maybe_expired()
    with pytest.raises(ReplicaLockedError, match="lost its lease: nothing confirmed it for 10"):
        await lease.confirm()
    with pytest.raises(ReplicaLockedError):  # every later confirmation fails the same way
        await lease.confirm()
    assert not lease.held
    await lease.release()


async def test_a_standby_waits_for_the_lock_and_says_who_holds_it(
    server: LockServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.holder = 7
    calls = 0

    def free_on_the_third(conn: FakeConn) -> None:
        nonlocal calls
        calls += 1
        if calls == 3:
            server.holder = None  # the active died

    server.on_get_lock = free_on_the_third
    lease = make_lease(lease_seconds=5)
    with caplog.at_level(logging.WARNING, logger="mybinlog.replication"):
        assert await lease.acquire(wait=True)
    try:
        assert calls == 3
        assert server.holder == server.conns[0].id
        waiting = [r.getMessage() for r in caplog.records if "waiting for the replica lock" in r.getMessage()]
        assert len(waiting) == 1  # once per holder
        assert "held by source connection 7 from 10.0.0.9:5555" in waiting[0]
        assert lease.term == 1
    finally:
        await lease.release()


async def test_a_waiting_standby_stops_when_asked(server: LockServer) -> None:
    server.holder = 7
    stop = asyncio.Event()
    server.on_get_lock = lambda conn: stop.set()
    lease = make_lease(lease_seconds=5)
    assert not await lease.acquire(wait=True, stop=stop)
    assert server.holder == 7
    assert all(c.closed for c in server.conns)
    assert lease.term == 0


async def test_a_waiting_standby_survives_a_source_restart(server: LockServer) -> None:
    server.holder = 7
    calls = 0

    def restart_then_free(conn: FakeConn) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            conn.break_()
            server.holder = 7  # still held by the active (it took it again after the restart)
        elif calls == 3:
            server.holder = None

    server.on_get_lock = restart_then_free
    lease = make_lease(lease_seconds=5)
    assert await lease.acquire(wait=True)
    assert len(server.conns) == 2  # reconnected once
    await lease.release()


async def test_the_keep_alive_records_a_lost_lease(server: LockServer) -> None:
    lease = make_lease(lease_seconds=1)
    await lease.acquire()
    try:
        server.conns[0].break_()
        server.holder = 55
        keeper = lease._keeper
        assert keeper is not None
        async with asyncio.timeout(30):
            await asyncio.wait([keeper])  # the keep-alive ends when the lease is lost
        assert isinstance(lease.failure, ReplicaLockedError)
        with pytest.raises(ReplicaLockedError):
            await lease.confirm()
    finally:
        await lease.release()


async def test_the_keep_alive_keeps_a_healthy_lease(server: LockServer) -> None:
    lease = make_lease(lease_seconds=1)
    await lease.acquire()
    try:
        server.wanted = 3
        async with asyncio.timeout(30):
            await server.confirmed.wait()  # three confirmations by the keep-alive alone
        assert lease.failure is None
        assert lease.term == 1
    finally:
        await lease.release()
    assert lease._keeper is None
