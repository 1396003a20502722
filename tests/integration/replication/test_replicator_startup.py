"""The library's :class:`Replicator` at start-up: a source not reachable yet is waited for within
``source_retry_seconds`` (as a reconnect is, and as ``mybinlog replicate`` does), and a stop meanwhile ends ``run()``
cleanly. The command line's start-up is tested in tests/unit/cli/test_exit_codes.py."""

from __future__ import annotations

import asyncio
import logging
import socket
import time

import pytest

from mybinlog.clickhouse import Target, quote_ident
from mybinlog.replication import ReplicationSettings, Replicator
from mybinlog.source._dsn import DSN
from tests.proxy import TcpProxy
from tests.servers import MariaDBServer


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _ProxyOnPort(TcpProxy):
    """A :class:`TcpProxy` listening on a port chosen before it starts (where the replicator already knocks)."""

    def __init__(self, target_host: str, target_port: int, listen: int) -> None:
        super().__init__(target_host, target_port)
        self.listen = listen

    async def __aenter__(self) -> _ProxyOnPort:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.listen)
        self.port = self.listen
        return self


async def _wait_for_retry(caplog: pytest.LogCaptureFixture, task: asyncio.Future[None]) -> None:
    """Until the replicator logged that it waits for the source (its run must not have ended: the old code failed
    at the first refusal)."""
    deadline = time.monotonic() + 30
    while "trying again" not in caplog.text:
        if task.done():
            task.result()  # raises what ended it
            pytest.fail("run() returned while the source was unreachable")
        assert time.monotonic() < deadline, caplog.text
        await asyncio.sleep(0.05)  # polling the log until the condition holds (bounded by the deadline)


# the start-up wait comes before anything a flavour does differently: one flavour is enough
@pytest.mark.servers("mariadb")
async def test_a_source_not_reachable_yet_is_waited_for(
    server: MariaDBServer, db: str, chdb_target: Target, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="mybinlog.replication")
    conn = server.connect(database=db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))")
        cur.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    conn.commit()
    port = _free_port()  # nothing listens there yet: what a source restarting looks like
    repl = Replicator(
        DSN.parse(server.repl_dsn).with_servers([("127.0.0.1", port)]),
        chdb_target,
        database=db,
        target_database=chdb_target.database,
        replica=f"{db}_{server.flavor}",
        settings=ReplicationSettings(source_retry_seconds=120, max_flush_data_time=50),
    )
    task = asyncio.ensure_future(repl.run(until_caught_up=True))
    try:
        await _wait_for_retry(caplog, task)
        assert "source_retry_seconds" in caplog.text
        async with _ProxyOnPort(server.host, server.port, port):  # the source is back
            await asyncio.wait_for(task, 120)
    finally:
        task.cancel()
        if repl.client is not None:
            await repl.client.aclose()
        conn.close()
    assert repl.status.state == "stopped"
    rows = await chdb_target.query(f"SELECT id, v FROM {quote_ident(chdb_target.database)}.t FINAL ORDER BY id")
    assert [(int(i), v) for i, v in rows] == [(1, "a"), (2, "b"), (3, "c")]


async def test_a_stop_while_waiting_for_the_source_ends_run_cleanly(
    chdb_target: Target, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="mybinlog.replication")
    port = _free_port()
    repl = Replicator(
        f"mysql://repl@127.0.0.1:{port}",
        chdb_target,
        database="shop",
        target_database=chdb_target.database,
        replica=f"{chdb_target.database}_stop",
        settings=ReplicationSettings(source_retry_seconds=300),
    )
    task = asyncio.ensure_future(repl.run())
    try:
        await _wait_for_retry(caplog, task)
        repl.stop()
        await asyncio.wait_for(task, 30)  # within a backoff, not after the budget of 300 s
    finally:
        task.cancel()
    assert repl.status.state == "stopped"
    assert repl.client is None  # nothing was started
