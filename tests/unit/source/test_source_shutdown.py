"""A source that is shutting down (or starting) answers the replica lock's new connection with "Server shutdown in
progress" (1053): taking the lock again retries that within ``retry_seconds`` like an unreachable server, and
gives up only when the budget is spent (the live test is tests/integration/replication/test_source_shutdown.py)."""

from __future__ import annotations

from typing import Any

import pytest

from mybinlog.errors import SourceConnectionError
from tests.fakes import FakeConn, LockServer, make_lease
from tests.fakes import lock_server as lock_server


def _shutting_down(server: LockServer, times: int) -> None:
    """The next ``times`` GET_LOCKs fail as on a server in a clean shutdown."""
    left = [times]

    def on_get_lock(conn: FakeConn) -> None:
        if left[0] > 0:
            left[0] -= 1
            conn.broken = True
            raise SourceConnectionError("Server shutdown in progress", errno=1053)

    server.on_get_lock = on_get_lock


async def test_the_lock_is_taken_again_after_shutdown_errors(server: LockServer) -> None:
    lease = make_lease(lease_seconds=60, retry_seconds=30)
    await lease.acquire()
    server.conns[0].break_()
    _shutting_down(server, 2)
    lease._confirmed -= 60
    await lease.confirm()  # before: the first 1053 was final (the replica stopped)
    assert (lease.term, lease.reacquired) == (2, 1)
    assert server.holder == server.conns[-1].id
    assert all(c.closed for c in server.conns[1:-1])  # the connections that failed are closed
    await lease.release()


async def test_a_shutdown_longer_than_the_budget_is_a_connection_error(server: LockServer) -> None:
    lease = make_lease(lease_seconds=60, retry_seconds=0.3)
    await lease.acquire()
    server.conns[0].break_()
    _shutting_down(server, 1_000_000)
    lease._confirmed -= 60
    with pytest.raises(SourceConnectionError, match=r"stayed unreachable for 0.3 s .*Server shutdown in progress"):
        await lease.confirm()
    with pytest.raises(SourceConnectionError):
        await lease.confirm()  # final
    got: Any = lease.failure
    assert isinstance(got, SourceConnectionError)
