"""Observability of a running ``mybinlog replicate`` (docs/operations.md), with real observers and real servers:

* a private Prometheus (Debian's ``prometheus``) scrapes ``/metrics`` of a child ``mybinlog replicate
  --status-address http://127.0.0.1:0`` every second, with docs/alerts.yml loaded as its rules; its query API is
  polled until the replica's series appear with sensible values, and every alert rule evaluates without error;
  ``promtool check metrics`` accepts the exposition; ``/healthz`` and ``/readyz`` answer 200;
* headless Chromium (Debian's ``chromium``, over the DevTools protocol) loads the status page of the same process:
  it shows the replica, and its lag chart gains points while the page stays open;
* the binlog purge risk with a real MariaDB and a real MySQL: the checkpoint in the oldest binlog file, near a short
  retention, and in a purged file, each seen by the check a replicator makes before it streams (status, log and the
  reason).

The replicate child runs for the module, once per server flavour (the source is the session's MariaDB or MySQL,
ClickHouse the session's server).
"""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mybinlog import MybinlogError
from mybinlog.replication import ReplicationSettings, Replicator
from tests.faults import STREAMING, ReplicateProcess, create_tables, execute, purge_to_current, source_dsn, write
from tests.observability import Chromium, PrometheusServer, find_binary, http_get
from tests.servers import MariaDBServer

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
DB = "obs_shop"
REPLICA = "obs_shop"  # + the flavour: the ClickHouse server and its checkpoints are the session's, and a replica's
# checkpoint of one flavour is refused by the other (Running.replica)


class Running:
    """The replicate child and where it serves its status."""

    def __init__(self, rep: ReplicateProcess, address: str, server: MariaDBServer, replica: str) -> None:
        self.rep = rep
        self.address = address
        self.server = server
        self.replica = replica
        self.next_txn = 1

    @property
    def hostport(self) -> str:
        return self.address.removeprefix("http://")

    def write(self, count: int) -> None:
        self.next_txn = write(self.server, DB, self.next_txn, count)


@pytest.fixture(scope="module")
def running(server_kind: str, request: pytest.FixtureRequest, clickhouse_server: Any) -> Iterator[Running]:
    server: MariaDBServer = request.getfixturevalue(server_kind)  # the flavour's session server (`server` is per test)
    server.execute(f"DROP DATABASE IF EXISTS {DB}")
    server.create_database(DB)
    create_tables(server, DB, filler=1_000)
    replica = f"{REPLICA}_{server.flavor}"
    clickhouse_server.execute(f"DROP DATABASE IF EXISTS {replica}")
    rep = ReplicateProcess(
        source_dsn(server),
        server.repl_password,
        clickhouse_server.url(with_password=False),
        DB,
        "--replica",
        replica,
        "--target-database",
        replica,
        "--status-address",
        "http://127.0.0.1:0",
        env={"MYBINLOG_CH_PASSWORD": clickhouse_server.password},
    )
    try:
        line = rep.wait_for("serving mybinlog status at ")
        address = line.split("serving mybinlog status at ", 1)[1].split()[0]
        rep.wait_for(STREAMING)
        yield Running(rep, address, server, replica)
        assert rep.stop() == 0, rep.tail()
    finally:
        rep.kill()
        server.drop_database(DB)
        clickhouse_server.execute(f"DROP DATABASE IF EXISTS {replica}")


def _one(result: dict[str, float]) -> float:
    assert len(result) == 1, result
    return next(iter(result.values()))


async def test_prometheus_scrapes_replicate(running: Running, tmp_path: Path) -> None:
    running.write(20)
    await asyncio.to_thread(running.rep.wait_caught_up, running.server)
    rules = REPO / "docs" / "alerts.yml"
    with PrometheusServer(tmp_path / "prometheus", [running.hostport], rule_files=[rules]) as prom:
        r = f'replica="{running.replica}"'
        assert (await asyncio.to_thread(prom.api, "rules"))["groups"], "docs/alerts.yml was not loaded"
        assert _one(await asyncio.to_thread(prom.wait_for, 'up{job="mybinlog"} == 1')) == 1
        written = await asyncio.to_thread(
            prom.wait_for, f"sum(mybinlog_replica_rows_written_total{{{r}}})", lambda v: _one(v) >= 20
        )
        assert _one(written) >= 20  # 20 transactions of several rows each
        by_kind = f'sum by (kind) (mybinlog_replica_rows_written_total{{{r},table="t1"}})'
        kinds = await asyncio.to_thread(prom.wait_for, by_kind, lambda v: len(v) == 3)
        assert all(v > 0 for v in kinds.values()), kinds  # the writer inserts, updates and deletes in t1
        assert _one(await asyncio.to_thread(prom.wait_for, f"mybinlog_replica_transactions_total{{{r}}}")) >= 20
        streaming = await asyncio.to_thread(prom.wait_for, f'mybinlog_replica_state{{{r},state="streaming"}}')
        assert _one(streaming) == 1
        assert _one(await asyncio.to_thread(prom.wait_for, f"mybinlog_replica_leader{{{r}}}")) == 1
        assert _one(await asyncio.to_thread(prom.wait_for, f"mybinlog_replica_source_connected{{{r}}}")) == 1
        assert _one(await asyncio.to_thread(prom.wait_for, f"mybinlog_replica_ready{{{r}}}")) == 1
        lag = _one(await asyncio.to_thread(prom.wait_for, f"mybinlog_replica_lag_seconds{{{r}}}"))
        assert 0 <= lag < 60
        assert _one(await asyncio.to_thread(prom.wait_for, f"mybinlog_replica_lag_bytes{{{r}}}")) >= 0
        assert _one(await asyncio.to_thread(prom.wait_for, f"mybinlog_replica_binlog_purge_risk{{{r}}}")) == 0
        assert _one(await asyncio.to_thread(prom.wait_for, f"mybinlog_replica_stopped_tables{{{r}}}")) == 0
        assert _one(await asyncio.to_thread(prom.wait_for, f"mybinlog_replica_checkpoint_age_seconds{{{r}}}")) >= 0
        events = await asyncio.to_thread(prom.wait_for, "sum(mybinlog_binlog_read_events_total)", lambda v: _one(v) > 0)
        assert _one(events) > 0
        assert _one(await asyncio.to_thread(prom.wait_for, "sum(mybinlog_binlog_read_bytes_total)")) > _one(events)
        assert _one(await asyncio.to_thread(prom.wait_for, "sum(mybinlog_binlog_connected_dispatchers)")) == 1
        consumer = f'consumer="{running.replica}"'
        queue = await asyncio.to_thread(prom.wait_for, f"mybinlog_consumer_queue_limit_bytes{{{consumer}}}")
        assert _one(queue) == 64 << 20
        # rows written go up while Prometheus watches: the counter moves between two scrapes
        before = _one(await asyncio.to_thread(prom.query, f"sum(mybinlog_replica_rows_written_total{{{r}}})"))
        running.write(5)
        await asyncio.to_thread(
            prom.wait_for, f"sum(mybinlog_replica_rows_written_total{{{r}}})", lambda v: _one(v) > before
        )

        # every alert rule of docs/alerts.yml evaluated against these series without an error, and none fires
        def rules_evaluated(_: Any) -> bool:
            groups = prom.api("rules")["groups"]
            states = [rule.get("health") for g in groups for rule in g["rules"]]
            return bool(states) and all(h == "ok" for h in states)

        await asyncio.to_thread(prom.wait_for, "vector(1)", rules_evaluated)
        firing = await asyncio.to_thread(prom.query, 'ALERTS{alertstate="firing"}')
        assert not firing, firing

        # every query of the Grafana dashboard runs (its variables set to everything), and the lag panel has data
        dashboard = json.loads((REPO / "docs" / "grafana-dashboard.json").read_text())
        for panel in dashboard["panels"]:
            for target in panel.get("targets", ()):
                expr = target["expr"].replace("$instance", ".*").replace("$replica", ".*")
                result = await asyncio.to_thread(prom.api, "query", query=expr.replace("$__rate_interval", "1m"))
                if panel["title"] == "Lag":
                    assert result["result"], expr

    # the exposition passes promtool's lint, and the health endpoints answer
    status, content_type, body = await asyncio.to_thread(http_get, f"{running.address}/metrics")
    assert status == 200
    assert content_type.startswith("text/plain"), content_type
    promtool = find_binary("promtool", "prometheus")
    lint = await asyncio.to_thread(subprocess.run, [promtool, "check", "metrics"], input=body, capture_output=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert (await asyncio.to_thread(http_get, f"{running.address}/healthz"))[0] == 200
    status, _, body = await asyncio.to_thread(http_get, f"{running.address}/readyz")
    assert status == 200, body
    assert json.loads(body)["replicas"][running.replica]["ready"] is True


async def test_status_page_in_chromium(running: Running, tmp_path: Path) -> None:
    async with Chromium(tmp_path / "chromium") as browser:
        page = await browser.page(running.address + "/")  # a browser asks for HTML: the page
        assert await page.evaluate("document.title") == "mybinlog status"
        await page.wait_for(f"document.querySelector('#replicas tbody').innerText.includes('{running.replica}')")
        await page.wait_for("document.querySelector('#replicas tbody').innerText.includes('streaming')")
        await page.wait_for(f"document.querySelector('#consumers tbody').innerText.includes('{running.replica}')")
        series = f'#lag-chart polyline[data-series="{running.replica}"]'
        points = f"Number(document.querySelector('{series}')?.dataset.points)"
        first = await page.wait_for(f"{points} > 0 && {points}")
        running.write(3)  # something to show; the chart moves on with every sample either way
        later = await page.wait_for(f"{points} > {first} && {points}")
        assert later > first
        text = await page.evaluate("document.body.innerText")
        assert "rows/s" in text
        assert "queue" in text
        assert await page.evaluate("document.getElementById('error').textContent") == ""


# --- the binlog purge risk ----------------------------------------------------------------------------------


def _replicator(server: MariaDBServer, target: Any, db: str, client: Any = None) -> Replicator:
    """A fresh Replicator of ``db`` (its binlog check runs before it streams)."""
    settings = ReplicationSettings(max_flush_data_time=100)
    return Replicator(server.repl_dsn, target, database=db, replica=db, settings=settings, client=client)


async def _catch_up(server: MariaDBServer, target: Any, db: str, client: Any = None) -> Replicator:
    r = _replicator(server, target, db, client)
    await r.run(until_caught_up=True)
    return r


async def test_binlog_purge_risk(fresh_server: MariaDBServer, ch_http: Any, caplog: pytest.LogCaptureFixture) -> None:
    server = fresh_server
    db = ch_http.database
    server.create_database(db)
    execute(server, db, "CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1)")
    caplog.set_level(logging.INFO, logger="mybinlog.replication")

    # the checkpoint in the newest file (the one being written, never purged): ok
    r = await _catch_up(server, ch_http, db)
    check = r.status.binlog_check
    assert check is not None
    assert check.risk == "ok", check
    assert r.checkpoint is not None
    first_file = r.checkpoint.position.file
    assert check.lag_bytes is not None
    assert check.lag_bytes >= 0
    assert r.snapshot()["binlog_purge_risk"] == "ok"

    # rotated: the checkpoint's file is the oldest left and no longer the newest: the next purge removes it
    server.flush_binary_logs()
    caplog.clear()
    r = await _catch_up(server, ch_http, db, r.client)
    check = r.status.binlog_check
    assert check is not None
    assert (check.risk, check.causes) == ("warning", ("oldest",)), check
    assert first_file in check.reason
    assert check.lag_bytes is not None
    assert check.lag_bytes > 0  # the rest of its file and the new one
    warnings = [rec.getMessage() for rec in caplog.records if rec.levelname == "WARNING"]
    assert any("binlog purge risk (warning)" in m for m in warnings), warnings
    snap = r.snapshot()
    assert (snap["binlog_purge_risk"], snap["binlog_files"]) == ("warning", 2)

    # a short retention: the checkpoint's transaction committed 3000 s ago (SET timestamp), the source keeps binlogs
    # 3600 s; once rotated past, the checkpoint's file is not the oldest (the first file is still there) but the
    # retention may purge it within 600 s
    server.execute("SET GLOBAL binlog_expire_logs_seconds = 3600")
    conn = server.connect(database=db)
    try:
        with conn.cursor() as cur:
            cur.execute("SET timestamp = UNIX_TIMESTAMP() - 3000")
            cur.execute("INSERT INTO t VALUES (2, 2)")
    finally:
        conn.close()
    r = await _catch_up(server, ch_http, db, r.client)
    assert r.checkpoint is not None
    stamped = r.checkpoint.position
    server.flush_binary_logs()
    r = await _catch_up(server, ch_http, db, r.client)
    check = r.status.binlog_check
    assert check is not None
    assert (check.risk, check.causes) == ("warning", ("retention",)), (check, stamped)
    assert check.retention_seconds == 3600
    assert check.retention_left_seconds is not None
    assert 0 < check.retention_left_seconds < 900
    assert r.snapshot()["binlog_retention_left_seconds"] == check.retention_left_seconds

    # purged: a transaction after the checkpoint went with its file: the replica cannot resume from its checkpoint
    server.execute("SET GLOBAL binlog_expire_logs_seconds = 0")
    execute(server, db, "INSERT INTO t VALUES (3, 3)")
    purge_to_current(server)
    caplog.clear()
    r = _replicator(server, ch_http, db, r.client)
    with pytest.raises(MybinlogError):
        await r.run(until_caught_up=True)
    check = r.status.binlog_check
    assert check is not None
    assert check.risk == "purged", check
    assert "take a new snapshot" in check.reason
    assert r.snapshot()["binlog_purge_risk"] == "purged"
    assert any("binlog purge risk (purged)" in rec.getMessage() for rec in caplog.records)
    if r.client is not None:
        await r.client.aclose()
