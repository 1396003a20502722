"""Source failover seen from the command line and from outside (issue 23), without a database server:

* several servers of one source: a repeated ``--source``/``--dsn`` (later ones may be bare ``host:port``) combined
  in order into one DSN by every connecting command; the URLs must agree on login and options (exit 2 naming the
  difference, never a password);
* the half-open bound: ``--source-heartbeat-seconds``/``--source-idle-seconds`` (ReplicationSettings) and the
  stream options the replica's shared client gets;
* the server being read and the failovers: the sharing layer's status rows (``dispatcher_source_server``), client
  statistics, the replica status (``source_server``, ``source_server_id``, ``source_failovers``,
  ``last_source_failover``), the Prometheus metrics (``mybinlog_source_failovers_total``,
  ``mybinlog_source_server_info``, ``mybinlog_replica_source_info``), the status page and ``mybinlog status``,
  driven by the scripted sources of tests/fakes.py standing in for a ``BinlogStream``.
"""

from __future__ import annotations

import io
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from mybinlog.cli import _common as common
from mybinlog.cli._common import combine_source_dsns, source_dsn
from mybinlog.cli._main import _build_parser, main
from mybinlog.errors import ConfigurationError
from mybinlog.replication import ReplicationSettings
from mybinlog.replication._observe import replica_snapshot
from mybinlog.replication._settings import ReplicaStatus
from mybinlog.sharing import BinlogClientFactory
from mybinlog.status import MetricsCollector, status_document
from mybinlog.status._page import STATUS_PAGE
from tests.fakes import FakeLog, make_client, read_txns

ENV_VARS = (common.PASSWORD_ENV, common.PASSWORD_FILE_ENV, common.CH_PASSWORD_ENV, common.CH_PASSWORD_FILE_ENV)
CLIENT = "repl@db.example:3306"


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


# --- several servers on the command line -------------------------------------------------------------------------

COMMANDS = [
    (["replicate", "-d", "shop"], "source", "--source"),
    (["verify", "-d", "shop"], "source", "--source"),
    (["snapshot", "-d", "shop"], "source", "--source"),
    (["dump"], "dsn", "--dsn"),
    (["status"], "dsn", "--dsn"),
]


@pytest.mark.parametrize(("argv", "attr", "option"), COMMANDS, ids=[c[0][0] for c in COMMANDS])
def test_a_repeated_source_option_names_several_servers_in_order(argv: list[str], attr: str, option: str) -> None:
    command, *rest = argv
    args = _build_parser().parse_args(
        [
            command,
            *(option, "mysql://repl@db1:3306/shop?ssl=required"),
            *(option, "mysql://repl@db2:3307/shop?ssl=required"),
            *(option, "db3"),
            *(option, "[::1]:3309,db4:3310"),
            *rest,
        ]
    )
    dsn = source_dsn(args, attr=attr, option=option)
    assert dsn.servers == (("db1", 3306), ("db2", 3307), ("db3", 3306), ("::1", 3309), ("db4", 3310))
    assert (dsn.user, dsn.database, dsn.ssl) == ("repl", "shop", "required")
    assert dsn.display == "repl@db1:3306,db2:3307,db3:3306,[::1]:3309,db4:3310"


def test_one_url_with_a_list_and_one_option_are_the_same_source() -> None:
    listed = combine_source_dsns(["mysql://repl@db1:3306,db2:3306"])
    repeated = combine_source_dsns(["mysql://repl@db1:3306", "mysql://repl@db2:3306"])
    bare = combine_source_dsns(["mysql://repl@db1:3306", "db2:3306"])
    assert listed == repeated == bare
    assert listed.key == bare.key  # one shared client


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        (["mysql://repl@db1", "mysql://other@db2"], ["--source #2", "differs from --source #1", "the user"]),
        (["mysql://repl@db1/shop", "mysql://repl@db2/crm"], ["the database", "'shop' and 'crm'"]),
        (["mysql://repl@db1", "mysql://repl@db2?ssl=verify_ca&ssl_ca=/ca.pem"], ["the TLS mode (ssl)"]),
        (["mysql://repl@db1?ssl_ca=/a.pem", "mysql://repl@db2?ssl_ca=/b.pem"], ["ssl_ca", "'/a.pem' and '/b.pem'"]),
        (["mysql://repl@db1", "mysql://repl@db2?connect_timeout=3"], ["connect_timeout"]),
        (["mysql://repl@db1:3306", "db2", "db1"], ["the server db1:3306 twice", "once"]),
        (["mysql://repl@db1", "db2:port"], ["--source #2", "malformed"]),
        (["mysql://repl@db1", "db2/shop"], ["--source #2", "not host[:port]"]),
        (["mysql://repl@db1", " "], ["--source #2 is empty"]),
        (["mysql://repl@localhost?unix_socket=/s.sock", "db2"], ["unix socket", "host:port"]),
        (["db1:3306", "db2:3306"], ["no scheme"]),
    ],
)
def test_servers_that_disagree_are_refused_naming_the_difference(texts: list[str], expected: list[str]) -> None:
    with pytest.raises(ConfigurationError) as info:
        combine_source_dsns(texts)
    for part in expected:
        assert part in str(info.value), f"{part!r} not in: {info.value}"


def test_a_password_that_differs_is_named_but_not_shown() -> None:
    with pytest.raises(ConfigurationError) as info:
        combine_source_dsns(["mysql://repl:first-secret@db1", "mysql://repl:other-secret@db2"])
    message = str(info.value)
    assert "in the password:" in message
    assert "secret" not in message
    # the same password in both: one login, kept
    dsn = combine_source_dsns(["mysql://repl:same@db1", "mysql://repl:same@db2"])
    assert (dsn.password, dsn.servers) == ("same", (("db1", 3306), ("db2", 3306)))


@pytest.mark.parametrize(
    "argv",
    [
        ["replicate", "--source", "mysql://repl@db1", "--source", "mysql://other@db2", "-d", "shop"],
        ["dump", "--dsn", "mysql://repl@db1", "--dsn", "mysql://other@db2"],
        ["status", "--dsn", "mysql://repl@db1", "--dsn", "mysql://other@db2"],
        ["verify", "--source", "mysql://repl@db1", "--source", "mysql://other@db2", "-d", "shop"],
    ],
    ids=["replicate", "dump", "status", "verify"],
)
def test_commands_exit_2_when_the_servers_disagree(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "#2 (other@db2:3306) differs from" in err
    assert "the user" in err


# --- the half-open bound ------------------------------------------------------------------------------------------


def test_heartbeat_and_idle_settings_make_the_stream_options() -> None:
    default = ReplicationSettings()
    assert (default.source_heartbeat_seconds, default.idle_seconds) == (5.0, 30.0)
    assert ReplicationSettings(source_heartbeat_seconds=20).idle_seconds == 80.0  # max(30, 4 x 20)
    settings = ReplicationSettings(source_retry_seconds=60, source_heartbeat_seconds=1, source_idle_seconds=3)
    assert settings.stream_options() == {
        "max_reconnect_attempts": 1_000_000,
        "max_reconnect_seconds": 60,
        "heartbeat_period": 1,
        "idle_timeout": 3,
    }
    assert settings.stream_options(120)["max_reconnect_seconds"] == 120


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"source_heartbeat_seconds": 0}, "source_heartbeat_seconds must be above 0"),
        ({"source_heartbeat_seconds": 5_000_000}, "at most 4294967"),
        ({"source_idle_seconds": 5}, "source_idle_seconds (5) must be longer than source_heartbeat_seconds (5)"),
    ],
)
def test_heartbeat_and_idle_settings_errors(kwargs: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        ReplicationSettings(**kwargs)
    assert expected in str(info.value)


def test_replicate_flags_reach_the_settings(capsys: pytest.CaptureFixture[str]) -> None:
    """The settings are built (and checked) from the flags before anything connects: exit 2 names them."""
    argv = ["replicate", "--source", "mysql://repl@127.0.0.1:1", "-d", "shop", "--source-heartbeat-seconds", "10"]
    assert main([*argv, "--source-idle-seconds", "8"]) == 2
    assert "source_idle_seconds (8) must be longer than source_heartbeat_seconds (10)" in capsys.readouterr().err
    args = _build_parser().parse_args(argv)
    assert (args.source_heartbeat_seconds, args.source_idle_seconds) == (10.0, None)


def test_heartbeat_flags_do_not_go_with_a_configuration(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "replicas.toml"
    path.write_text('[sources.m]\ndsn = "mysql://r@h"\n[targets.t]\nurl = "chdb:///x"\n[replicas.s]\ndatabase = "s"\n')
    assert main(["replicate", "--config", str(path), "--source-idle-seconds", "60"]) == 2
    assert "--source-idle-seconds cannot go with --config" in capsys.readouterr().err


# --- seen from outside ------------------------------------------------------------------------------------------


class _Server:
    def __init__(self, server_id: int) -> None:
        self.server_id = server_id


async def test_the_server_being_read_and_the_failovers_are_shown_everywhere() -> None:
    log = FakeLog()
    factory = BinlogClientFactory()
    client = make_client(log, factory=factory)
    consumer = await client.create_binlog(name="shop", executed_gtid_set=log.gtids(0))
    await read_txns(consumer, log.txns(2)[-1])
    stream = log.sources[0]
    # as a BinlogStream reads after moving from db1 to db2 (mybinlog/source/_stream.py)
    stream.source = "db2:3306"  # type: ignore[attr-defined]
    stream.server = _Server(2)  # type: ignore[attr-defined]
    stream.failovers = 1  # type: ignore[attr-defined]
    stream.last_failover = "db1:3306 lost (connection refused)"  # type: ignore[attr-defined]

    # the sharing layer: rows and client statistics
    (row,) = client.status()
    assert row["dispatcher_source_server"] == "db2:3306"
    stats = client.statistics()
    assert (stats.failovers, stats.last_failover) == (1, "db1:3306 lost (connection refused)")

    # the replica status (what /status serves, the periodic status lines print)
    status = ReplicaStatus("shop", "shop", "shop", "", None, state="streaming")
    replica = SimpleNamespace(status=status, checkpoint=None, binlog=consumer, client=client, _lease=None)
    snap = replica_snapshot(replica)  # type: ignore[arg-type]
    assert (snap["source_server"], snap["source_server_id"]) == ("db2:3306", 2)
    assert (snap["source_failovers"], snap["last_source_failover"]) == (1, "db1:3306 lost (connection refused)")
    doc = status_document(factory.status, replicas=[snap])
    assert doc["replicas"][0]["source_failovers"] == 1
    assert doc["mysql_binlogs"][0]["dispatcher_source_server"] == "db2:3306"
    assert "dispatcher_source_server" in doc["columns"]

    # Prometheus
    registry = CollectorRegistry()
    registry.register(MetricsCollector(factory=factory, replicas=[snap]))
    assert registry.get_sample_value("mybinlog_source_failovers_total", {"client": CLIENT}) == 1
    info = {"client": CLIENT, "dispatcher": "dispatcher-1", "server": "db2:3306", "server_id": "2"}
    assert registry.get_sample_value("mybinlog_source_server_info", info) == 1
    replica_info = {"replica": "shop", "server": "db2:3306", "server_id": "2"}
    assert registry.get_sample_value("mybinlog_replica_source_info", replica_info) == 1

    # a dispatcher that stopped keeps its count in the client's totals (the replica's never goes back)
    await consumer.close()
    assert client.statistics().failovers == 1
    assert replica_snapshot(replica)["source_failovers"] == 1  # type: ignore[arg-type]

    # `mybinlog status --from`: the table has the column, and one line per replica
    from mybinlog.cli._status import STATUS_COLUMNS, _print_process

    out = io.StringIO()
    _print_process(doc, list(STATUS_COLUMNS), "table", out)
    text = out.getvalue()
    assert "dispatcher_source_server" in text
    assert "db2:3306" in text
    assert (
        "# replica shop: streaming, source db2:3306 (server_id 2), 1 source failover(s) "
        "(last: db1:3306 lost (connection refused))"
    ) in text


def test_the_status_page_shows_the_source_server_and_failovers() -> None:
    page = STATUS_PAGE.decode()
    for name in ("source_server", "source_server_id", "source_failovers", "last_source_failover"):
        assert f"r.{name}" in page, name
    assert "c.dispatcher_source_server" in page
    assert "<th>source server</th><th>source failovers</th>" in page
