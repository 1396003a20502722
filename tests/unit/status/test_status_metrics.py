"""Metrics, health, the status page and the binlog purge risk, without a database server.

* :func:`assess_binlogs` (the purge risk rules) on listed binlog files;
* the sharing layer's counters (:meth:`BinlogClient.statistics`, queue waits, detaches, merges, reconnects) and
  :class:`MetricsCollector` in a real ``prometheus_client`` registry, driven by the scripted sources of
  tests/fakes.py;
* the status server's endpoints over a unix socket and TCP: ``/metrics`` (checked by ``promtool check metrics``
  from Debian's prometheus package), ``/healthz``, ``/readyz``, ``/history``, the page;
* the replica snapshot's lag (an upper bound that does not jump after a quiet hour);
* docs: docs/alerts.yml passes ``promtool check rules``; the alerts, the Grafana dashboard and docs/operations.md
  name only metrics that exist, and docs/operations.md lists every one.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from mybinlog import BinlogPosition, BinlogStream, MariaDBGtidSet
from mybinlog.replication._observe import count_rows, replica_snapshot
from mybinlog.replication._settings import ReplicaStatus
from mybinlog.replication._watch import SourceBinlogs, assess_binlogs
from mybinlog.sharing import BinlogClientFactory
from mybinlog.status import METRICS, MetricsCollector, serve_status
from tests.fakes import FakeLog, make_client, read_txns, wait_until
from tests.observability import find_binary

REPO = Path(__file__).resolve().parents[3]
CLIENT = "repl@db.example:3306"
NOW = 1_800_000_000.0

# -- the binlog purge risk --------------------------------------------------------------------------------------

FILES = [("binlog.000007", 1000), ("binlog.000008", 2000), ("binlog.000009", 500)]


def _pos(file: str, offset: int = 100, *, ts: float = NOW - 60, gtids: str | None = None) -> BinlogPosition:
    gtid_set = MariaDBGtidSet.parse(gtids) if gtids is not None else None
    return BinlogPosition(file, offset, gtid_set, int(ts), 1)


def test_purge_risk_ok_in_the_newest_file_and_bytes_behind() -> None:
    check = assess_binlogs(SourceBinlogs(FILES, 3600, 0, 1), _pos("binlog.000009", 120), NOW)
    assert (check.risk, check.lag_bytes, check.files) == ("ok", 380, 3)
    check = assess_binlogs(SourceBinlogs(FILES, 0, 0, 1), _pos("binlog.000008", 100), NOW)
    assert (check.risk, check.lag_bytes, check.retention_left_seconds) == ("ok", 2400, None)


def test_purge_risk_warns_in_the_oldest_file_near_the_retention_and_the_size_limit() -> None:
    oldest = assess_binlogs(SourceBinlogs(FILES, 0, 0, 1), _pos("binlog.000007"), NOW)
    assert (oldest.risk, oldest.causes) == ("warning", ("oldest",))
    assert "binlog.000007 is the oldest" in oldest.reason
    # 3000 s old with a retention of 3600 s: 600 s left, less than a quarter
    aged = assess_binlogs(SourceBinlogs(FILES, 3600, 0, 1), _pos("binlog.000008", ts=NOW - 3000), NOW)
    assert (aged.risk, aged.causes, aged.retention_left_seconds) == ("warning", ("retention",), 600)
    young = assess_binlogs(SourceBinlogs(FILES, 3600, 0, 1), _pos("binlog.000008", ts=NOW - 600), NOW)
    assert (young.risk, young.retention_left_seconds) == ("ok", 3000)
    full = assess_binlogs(SourceBinlogs(FILES, 0, 3000, 1), _pos("binlog.000008", 0), NOW)  # 2500 of 3000 bytes
    assert (full.risk, full.causes) == ("warning", ("space",))
    both = assess_binlogs(SourceBinlogs(FILES, 3600, 0, 1), _pos("binlog.000007", ts=NOW - 3500), NOW)
    assert both.causes == ("retention", "oldest")


def test_purge_risk_purged_and_unknown() -> None:
    gone = assess_binlogs(SourceBinlogs(FILES, 0, 0, 1), _pos("binlog.000005"), NOW)
    assert gone.risk == "purged"
    assert "take a new snapshot" in gone.reason
    # by GTIDs: everything after the checkpoint is still there (the oldest file starts at a position it contains)
    start = MariaDBGtidSet.parse("0-1-40")
    resumable = assess_binlogs(SourceBinlogs(FILES, 0, 0, 1, start), _pos("binlog.000005", gtids="0-1-40"), NOW)
    assert (resumable.risk, resumable.causes, resumable.lag_bytes) == ("warning", ("oldest",), 3496)
    lost = assess_binlogs(SourceBinlogs(FILES, 0, 0, 1, start), _pos("binlog.000005", gtids="0-1-39"), NOW)
    assert lost.risk == "purged"
    assert assess_binlogs(SourceBinlogs([], 0, 0, 1), _pos("binlog.000005"), NOW).risk == "unknown"
    other_server = BinlogPosition("binlog.000008", 4, None, int(NOW), 2)
    assert assess_binlogs(SourceBinlogs(FILES, 0, 0, 1), other_server, NOW).risk == "unknown"
    assert assess_binlogs(SourceBinlogs(FILES, 0, 0, 1), _pos("other-bin.000001"), NOW).risk == "unknown"


# -- sharing counters and the collector -------------------------------------------------------------------------


async def test_client_statistics_and_the_collector_count_across_dispatchers() -> None:
    log = FakeLog()
    client = make_client(log, factory=BinlogClientFactory())
    factory = client._factory
    registry = CollectorRegistry()
    registry.register(MetricsCollector(factory=factory))

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, {"client": CLIENT, **labels})

    fast = await client.create_binlog(name="fast", executed_gtid_set=log.gtids(0))
    slow = await client.create_binlog(
        name="slow",
        executed_gtid_set=log.gtids(0),
        max_bytes_in_binlog_queue=300,
        max_milliseconds_to_wait_in_binlog_queue=30,
    )
    log.sources[0].reconnects = 2  # as a BinlogStream counts them
    last = log.txns(20)[-1]
    await read_txns(fast, last)
    await wait_until(lambda: slow.detached, "slow consumer detached")
    st = client.statistics()
    assert (st.name, st.dispatchers, st.connected, st.detaches, st.reconnects) == (CLIENT, 1, 1, 1, 2)
    assert st.queue_waits >= 1
    assert st.queue_wait_seconds > 0
    assert st.events_read == len(log.events) + 1  # and the ROTATE a connection starts with
    assert st.bytes_read == sum(e.size for e in log.events) + 40
    assert slow.statistics().queue_waits >= 1
    assert value("mybinlog_binlog_detaches_total") == 1
    assert value("mybinlog_binlog_read_events_total") == st.events_read
    assert value("mybinlog_binlog_read_bytes_total") == st.bytes_read
    assert value("mybinlog_binlog_reconnects_total") == 2
    assert value("mybinlog_consumer_queue_limit_bytes", consumer="fast", dispatcher="dispatcher-1") == 64 << 20
    assert value("mybinlog_consumer_queue_bytes", consumer="fast", dispatcher="dispatcher-1") == 0
    received = value("mybinlog_consumer_received_events_total", consumer="fast", dispatcher="dispatcher-1")
    assert received == fast.statistics().events_received > 0

    # the slow one comes back on a catch-up dispatcher of its own, which merges into the first: counted
    again = await slow.reopen()
    await read_txns(again, last)
    await wait_until(lambda: again.dispatcher is fast.dispatcher, "re-created consumer merged back")
    await wait_until(lambda: len(client._dispatchers) == 1, "the catch-up dispatcher gone")
    st2 = client.statistics()
    assert st2.merges == 1
    assert st2.events_read > st.events_read  # the catch-up dispatcher's reads stay counted after it stopped
    assert (st2.reconnects, st2.detaches) == (2, 1)
    await fast.close()
    await again.close()
    # a client whose last consumer went still counts (its totals are kept with the client object)
    assert client.statistics().events_read == st2.events_read
    assert client.statistics().dispatchers == 0


def test_a_stream_is_connected_only_while_it_holds_a_connection() -> None:
    stream = BinlogStream("mysql://repl@db.example:3306")
    assert stream.connected is False  # not started
    assert stream.reconnects == 0


def test_collector_without_clients_or_replicas_describes_every_metric() -> None:
    registry = CollectorRegistry()
    registry.register(MetricsCollector(factory=BinlogClientFactory()))
    names = {m.name for m in registry.collect()}
    expected = {spec.name.removesuffix("_total") for spec in METRICS}
    assert names == expected
    assert registry.get_sample_value("mybinlog_build_info", {"version": __import__("mybinlog").__version__}) == 1


def test_the_replica_states_are_the_replication_layers() -> None:
    """The status layer observes the replicators from above: it imports the states they report (declared once, in
    mybinlog/replication/_state.py) and every state the replicator sets is one of them."""
    import ast
    import typing

    import mybinlog.replication
    import mybinlog.status
    from mybinlog.replication import REPLICA_STATES, ReplicaState

    assert mybinlog.status.REPLICA_STATES is REPLICA_STATES
    assert typing.get_args(ReplicaState) == REPLICA_STATES
    assert typing.get_type_hints(ReplicaStatus)["state"] == ReplicaState
    root = Path(mybinlog.replication.__file__).parent
    assigned = {
        node.value.value
        for path in root.glob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Attribute) and t.attr == "state" for t in node.targets)
        and isinstance(node.value, ast.Constant)
    }
    assert assigned, "no `.state = ...` found in mybinlog/replication"
    assert assigned <= set(REPLICA_STATES), assigned - set(REPLICA_STATES)


def test_metric_names_follow_prometheus_conventions() -> None:
    names = [spec.name for spec in METRICS]
    assert len(names) == len(set(names))
    for spec in METRICS:
        assert re.fullmatch(r"mybinlog_[a-z_]+", spec.name), spec.name
        assert spec.kind in ("counter", "gauge")
        assert spec.name.endswith("_total") == (spec.kind == "counter"), spec.name
        assert spec.help.endswith("."), spec.name


# -- replica snapshots: the lag ----------------------------------------------------------------------------------


def _replica(state: str, *, ts: int, saved: float | None, idle: float | None) -> Any:
    status = ReplicaStatus("r", "db", "db", "binlog.000001:4", None, state=state, checkpoint_time=saved, idle_at=idle)
    cp = SimpleNamespace(position=BinlogPosition("binlog.000001", 4, None, ts), loading=None)
    return SimpleNamespace(status=status, checkpoint=cp, binlog=None)


def test_snapshot_lag_is_an_upper_bound_that_a_quiet_hour_does_not_inflate() -> None:
    now = NOW
    # idle a moment ago, the last transaction written an hour ago: not behind
    quiet = replica_snapshot(_replica("streaming", ts=int(now - 3600), saved=now - 3600, idle=now - 0.5), now)
    assert quiet["lag_seconds"] == 0.5
    # busy since, nothing idle: the last transaction written 40 s ago bounds it
    busy = replica_snapshot(_replica("streaming", ts=int(now - 40), saved=now - 1, idle=now - 300), now)
    assert busy["lag_seconds"] == 40
    # a checkpoint loaded, not saved by this process, nothing idle yet: unknown, not the checkpoint's age
    fresh = replica_snapshot(_replica("streaming", ts=int(now - 86_400), saved=None, idle=None), now)
    assert fresh["lag_seconds"] is None
    assert fresh["connected"] is False  # streaming without a consumer (being reopened)
    stuck = replica_snapshot(_replica("retrying", ts=int(now - 100), saved=now - 100, idle=now - 120), now)
    assert stuck["lag_seconds"] == 100
    assert stuck["connected"] is None
    assert stuck["checkpoint_age_seconds"] == 100
    standby = replica_snapshot(_replica("standby", ts=0, saved=None, idle=None), now)
    assert standby["leader"] is False
    assert "idle_at" not in standby


def test_rows_by_kind_count_the_net_change_per_key() -> None:
    counts: dict[str, dict[str, int]] = {}
    changes = [  # (first_before, after, last, version): _batch.Change
        (None, "a", "a", 1),  # inserted in the batch
        ("b0", "b1", "b1", 1),  # updated
        ("c0", None, "c0", 1),  # deleted
        (None, None, "d0", 1),  # inserted and deleted in the batch
    ]
    count_rows(counts, "t", changes)
    count_rows(counts, "t", changes[:1])
    assert counts == {"t": {"insert": 2, "update": 1, "delete": 2}}


# -- the status server: /metrics, /healthz, /readyz, /history, the page ------------------------------------------


def _rep(**over: Any) -> dict[str, Any]:
    rep = {
        "replica": "shop",
        "database": "shop",
        "target_database": "ch_shop",
        "state": "streaming",
        "leader": True,
        "connected": True,
        "lag_seconds": 1.5,
        "lag_bytes": 420,
        "rows_written": 7,
        "transactions": 3,
        "rows_by_table": {"t1": {"insert": 4, "update": 2, "delete": 1}},
        "stopped_tables": {"t9": "a DDL ClickHouse cannot follow"},
        "binlog_purge_risk": "warning",
        "binlog_retention_left_seconds": 500.0,
        "binlog_retention_seconds": 3600.0,
        "binlog_files": 3,
        "checkpoint_age_seconds": 0.4,
        "checkpoint_timestamp": 1_700_000_000,
    }
    rep.update(over)
    return rep


async def _get(address: str, path: str, headers: str = "") -> tuple[int, dict[str, str], bytes]:
    if address.startswith("unix:"):
        reader, writer = await asyncio.open_unix_connection(address[5:])
    else:
        host, port = address.removeprefix("http://").rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode())
    await writer.drain()
    data = await reader.read()
    writer.close()
    await writer.wait_closed()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    fields = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), fields, body


@pytest.mark.parametrize("kind", ["unix", "http"])
async def test_status_server_metrics_health_history_and_page(tmp_path: Path, kind: str) -> None:
    log = FakeLog()
    client = make_client(log, factory=BinlogClientFactory())
    consumer = await client.create_binlog(name="shop", executed_gtid_set=log.gtids(0))
    await read_txns(consumer, log.txns(3)[-1])
    replicas = [_rep()]
    address = f"unix:{tmp_path}/s.sock" if kind == "unix" else "http://127.0.0.1:0"
    async with serve_status(address, source=client._factory.status, replicas=lambda: replicas) as server:
        status, head, body = await _get(server.address, "/metrics")
        assert status == 200
        assert head["content-type"].startswith("text/plain; version=0.0.4")
        text = body.decode()
        assert 'mybinlog_replica_lag_seconds{replica="shop"} 1.5' in text
        assert 'mybinlog_replica_rows_written_total{kind="update",replica="shop",table="t1"} 2.0' in text
        assert 'mybinlog_replica_table_stopped{replica="shop",table="t9"} 1.0' in text
        assert 'mybinlog_replica_binlog_purge_risk{replica="shop"} 1.0' in text
        assert 'mybinlog_replica_state{replica="shop",state="streaming"} 1.0' in text
        assert f'mybinlog_binlog_connected_dispatchers{{client="{CLIENT}"}} 1.0' in text
        assert 'consumer="shop"' in text
        assert "process_" in text or "python_info" in text  # the process's own metrics beside ours
        promtool = find_binary("promtool", "prometheus")
        lint = await asyncio.to_thread(subprocess.run, [promtool, "check", "metrics"], input=body, capture_output=True)
        assert lint.returncode == 0, lint.stdout + lint.stderr
        openmetrics = "Accept: application/openmetrics-text; version=1.0.0\r\n"
        status, head, body = await _get(server.address, "/metrics", openmetrics)
        assert head["content-type"].startswith("application/openmetrics-text")
        assert body.endswith(b"# EOF\n")

        status, _, body = await _get(server.address, "/healthz")
        assert status == 200
        assert json.loads(body)["status"] == "ok"
        status, _, body = await _get(server.address, "/readyz")
        assert (status, json.loads(body)["replicas"]["shop"]["ready"]) == (200, True)
        replicas[0] = _rep(lag_seconds=600.0)
        status, _, body = await _get(server.address, "/readyz")
        assert status == 503
        assert "lag 600 s > 60 s" in json.loads(body)["replicas"]["shop"]["why"]
        replicas[0] = _rep(state="retrying")
        assert (await _get(server.address, "/readyz"))[0] == 503
        replicas[0] = _rep(connected=False)
        assert (await _get(server.address, "/readyz"))[0] == 503
        replicas[0] = _rep(state="standby", leader=False, lag_seconds=None)
        assert (await _get(server.address, "/readyz"))[0] == 200
        replicas[0] = _rep(state="failed")
        status, _, body = await _get(server.address, "/healthz")
        assert (status, json.loads(body)["failed"]) == (503, ["shop"])

        status, _, body = await _get(server.address, "/history")
        history = json.loads(body)
        assert history["format"] == "mybinlog-history/1"
        assert history["samples"][0]["replicas"]["shop"]["lag"] == 1.5  # sampled when it started
        assert f"{CLIENT}/shop" in history["samples"][0]["consumers"]

        status, head, page = await _get(server.address, "/", "Accept: text/html,application/xhtml+xml\r\n")
        assert (status, head["content-type"]) == (200, "text/html; charset=utf-8")
        assert (await _get(server.address, "/ui"))[2] == page
        assert b'id="lag-chart"' in page
        for external in (b"<link", b" src=", b"@import", b"url(", b"https://"):
            assert external not in page  # no asset from anywhere else: CSS, JS and the chart are inline
        status, head, body = await _get(server.address, "/")  # no HTML asked for: the JSON document, as before
        assert head["content-type"] == "application/json"
        assert json.loads(body)["replicas"][0]["replica"] == "shop"
        assert (await _get(server.address, "/nope"))[0] == 404
    await consumer.close()


async def test_readiness_without_replicas_needs_a_connected_consumer(tmp_path: Path) -> None:
    factory = BinlogClientFactory()
    async with serve_status(f"unix:{tmp_path}/s.sock", source=factory.status) as server:
        status, _, body = await _get(server.address, "/readyz")
        assert (status, json.loads(body)["why"]) == (503, "no consumer")
        log = FakeLog()
        client = make_client(log, factory=factory)
        consumer = await client.create_binlog(name="c", executed_gtid_set=log.gtids(0))
        assert (await _get(server.address, "/readyz"))[0] == 200
        await consumer.close()


# -- docs -----------------------------------------------------------------------------------------------------


def _referenced(text: str) -> set[str]:
    return set(re.findall(r"\bmybinlog_[a-z_]+[a-z]", text))


def test_alert_rules_pass_promtool_and_name_real_metrics() -> None:
    rules = REPO / "docs" / "alerts.yml"
    promtool = find_binary("promtool", "prometheus")
    check = subprocess.run([promtool, "check", "rules", str(rules)], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    known = {spec.name for spec in METRICS}
    assert _referenced(rules.read_text()) <= known


def test_dashboard_and_operations_page_name_real_metrics() -> None:
    known = {spec.name for spec in METRICS}
    dashboard = json.loads((REPO / "docs" / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", ())]
    assert exprs
    assert _referenced(" ".join(exprs)) <= known
    page = (REPO / "docs" / "operations.md").read_text()
    assert _referenced(page) <= known | {"mybinlog_meta"}
    missing = sorted(name for name in known if f"`{name}`" not in page)
    assert not missing, f"docs/operations.md does not list {missing}"
