"""The replica's identity (the replica lock's name: docs/ha.md), who counts as the leader in the status, and the
purged-binlog message. Against real servers: tests/integration/replication/test_replica_identity.py."""

from __future__ import annotations

import logging
import types
from typing import Any

import pytest

from mybinlog.clickhouse import target_identity
from mybinlog.errors import BinlogPurgedError, ReplicaLockedError, TargetConnectionError, TargetError
from mybinlog.replication._observe import is_leader, replica_snapshot
from mybinlog.source._connection import translate_server_error
from mybinlog.source._dsn import DSN
from mybinlog.source._lease import lease_name


class FakeServerTarget:
    """An HTTP target as far as target_identity looks: an endpoint and a query method (answers scripted)."""

    def __init__(self, endpoint: str, answers: dict[str, Any]) -> None:
        self._endpoint = endpoint
        self.description = endpoint
        self.answers = answers
        self.asked: list[str] = []

    async def query(self, sql: str) -> list[list[str | None]]:
        self.asked.append(sql)
        for key, answer in self.answers.items():
            if key in sql:
                if isinstance(answer, BaseException):
                    raise answer
                return answer  # type: ignore[no-any-return]
        raise AssertionError(sql)


def _clickhouse_18(endpoint: str) -> FakeServerTarget:
    return FakeServerTarget(
        endpoint,
        {
            "serverUUID": TargetError("Unknown function serverUUID", code=46),
            "system.databases": [["ch1", "/var/lib/clickhouse/data/system/"]],
        },
    )


async def test_spellings_of_an_18_16_server_are_one_identity() -> None:
    ids = {
        await target_identity(_clickhouse_18(endpoint))
        for endpoint in ("http://127.0.0.1:8123/", "http://localhost:8123/", "http://[::1]:8123/", "http://ch1:8123/")
    }
    assert ids == {"clickhouse-host:ch1:/var/lib/clickhouse/data/system/"}


async def test_a_server_with_a_uuid_is_named_by_it_and_asked_once() -> None:
    target = FakeServerTarget("http://localhost:8123/", {"serverUUID": [["6c9b0c6e-0000-4000-8000-000000000001"]]})
    assert await target_identity(target) == "clickhouse-uuid:6c9b0c6e-0000-4000-8000-000000000001"
    assert await target_identity(target) == "clickhouse-uuid:6c9b0c6e-0000-4000-8000-000000000001"
    assert len(target.asked) == 1  # cached on the target


async def test_a_zero_uuid_falls_back_to_host_and_directory() -> None:
    target = FakeServerTarget(
        "http://localhost:8123/",
        {"serverUUID": [["00000000-0000-0000-0000-000000000000"]], "system.databases": [["h", "/d/data/system/"]]},
    )
    assert await target_identity(target) == "clickhouse-host:h:/d/data/system/"


async def test_an_unreachable_server_is_never_guessed() -> None:
    target = FakeServerTarget("http://localhost:8123/", {"serverUUID": TargetConnectionError("refused")})
    with pytest.raises(TargetConnectionError):
        await target_identity(target)


async def test_a_server_that_will_not_say_falls_back_to_its_endpoint_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    target = FakeServerTarget(
        "http://localhost:8123/",
        {"serverUUID": TargetError("Unknown function", code=46), "system.databases": TargetError("denied", code=497)},
    )
    with caplog.at_level(logging.WARNING):
        assert await target_identity(target) == "http://localhost:8123/"
    assert "spell the target the same way" in caplog.text


async def test_chdb_is_named_by_its_resolved_directory() -> None:
    target = types.SimpleNamespace(path="/data/ch", description="chdb:///data/ch")
    assert await target_identity(target) == "chdb:/data/ch"


def test_the_lock_name_depends_on_identity_meta_database_and_replica() -> None:
    names = {lease_name(i, m, r) for i in ("a", "b") for m in ("meta", "m2") for r in ("r1", "r2")}
    assert len(names) == 8
    assert all(len(n) <= 64 for n in names)


class _Lease:
    def __init__(self, *, expired: bool = False, failure: BaseException | None = None) -> None:
        self.expired, self.failure = expired, failure

    def maybe_expired(self) -> bool:
        return self.expired


def _replicator(state: str, leader: bool, lease: _Lease | None) -> Any:
    from mybinlog.replication._replicator import ReplicaStatus

    status = ReplicaStatus("r", "db", "db", "", None)
    status.state, status.leader = state, leader
    return types.SimpleNamespace(status=status, _lease=lease, checkpoint=None, binlog=None)


@pytest.mark.parametrize(
    ("state", "leader", "lease", "expected"),
    [
        ("streaming", True, _Lease(), True),
        ("streaming", True, None, True),
        ("standby", False, _Lease(), False),
        ("streaming", True, _Lease(expired=True), False),  # resumed after a pause longer than the lease
        ("streaming", True, _Lease(failure=ReplicaLockedError("lost")), False),  # the keep-alive found it lost
        ("failed", True, None, False),  # stopped (lost its lease, or any error): it released the lock
    ],
)
def test_who_counts_as_the_leader(state: str, leader: bool, lease: _Lease | None, expected: bool) -> None:
    r = _replicator(state, leader, lease)
    assert is_leader(r) is expected
    assert replica_snapshot(r)["leader"] is expected


def test_the_purged_binlog_message_says_a_replica_needs_a_new_snapshot() -> None:
    message = (
        "Could not find GTID state requested by slave in any binlog files. Probably the slave state is too old and "
        "required binlog files have been purged."
    )
    error = translate_server_error(DSN.parse("mysql://repl@db:3306"), 1236, message, flavor="mariadb")
    assert isinstance(error, BinlogPurgedError)
    text = str(error)
    assert ".." not in text
    assert "A replica cannot resume from its checkpoint" in text
    assert "new initial load" in text
    assert text.index("take a new snapshot") < text.index("newer position")


def test_a_former_leader_whose_lease_may_have_expired_is_not_ready() -> None:
    from mybinlog.status._health import replica_ready

    r = _replicator("streaming", True, _Lease(expired=True))
    snap = replica_snapshot(r)
    assert replica_ready(snap) == (False, "not the leader: its replica lease may have expired or was lost (it stops)")
    assert replica_ready({**snap, "state": "standby"}) == (True, "standby")
    assert replica_ready({**snap, "state": "failed"})[0] is False
