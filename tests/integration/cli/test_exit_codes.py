"""Exit codes that say what to do, live on MariaDB and MySQL (docs/exit-codes.md): a permanent error (a TLS
certificate that does not verify, TLS required by the account or the server, TLS not offered, a missing grant) ends
`mybinlog replicate` at once with 1 and the fix, never with 75 (which a supervisor restarts forever); an unreachable
source at start-up is retried within --source-retry-seconds; `verify` of a missing database says so on stderr."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.faults import ReplicateProcess, child_env, source_dsn
from tests.live import make_certificate, server_readable_dir
from tests.servers import MariaDBServer

pytestmark = pytest.mark.integration

DB = "shop"
NO_TLS_HINT = "Check the DSN's user name and password"


def _replicate(server: MariaDBServer, tmp_path: Path, dsn: str, password: str, *extra: str) -> tuple[int, str, float]:
    started = time.monotonic()
    with ReplicateProcess(dsn, password, f"chdb://{tmp_path / 'ch'}", DB, "--once", *extra, env={}) as rep:
        rc = rep.wait_exit(timeout=240)
    return rc, rep.log, time.monotonic() - started


@pytest.fixture
def tls_source(
    server_factory: Callable[..., MariaDBServer], server_kind: str, tmp_path: Path
) -> Iterator[MariaDBServer]:
    """A server with TLS (its own certificate), a table, and a user 'sec' that may connect only over TLS."""
    directory, inside = server_readable_dir(server_kind, tmp_path)
    try:
        cert, key = make_certificate(directory)
        server = server_factory(ssl_cert=inside(cert), ssl_key=inside(key))
        server.create_database(DB)
        server.execute(f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, v VARCHAR(20))")
        server.execute(f"INSERT INTO {DB}.t VALUES (1, 'a'), (2, 'b')")
        server.execute("CREATE USER 'sec'@'%' IDENTIFIED BY 'sec-pw-123' REQUIRE SSL")
        monitor = "BINLOG MONITOR" if server.flavor == "mariadb" else "REPLICATION CLIENT"
        server.execute(f"GRANT REPLICATION SLAVE, {monitor}, SELECT, RELOAD ON *.* TO 'sec'@'%'")
        yield server
    finally:
        if directory != tmp_path:
            shutil.rmtree(directory, ignore_errors=True)


def test_permanent_tls_errors_exit_1_with_the_fix_at_once(tls_source: MariaDBServer, tmp_path: Path) -> None:
    server = tls_source
    (tmp_path / "other").mkdir()
    other_ca, _ = make_certificate(tmp_path / "other")
    # a CA that did not sign the server's certificate: permanent (was exit 75 after the retry budget: a supervisor
    # restarted it forever)
    rc, log, seconds = _replicate(
        server, tmp_path, f"{source_dsn(server)}?ssl=verify_ca&ssl_ca={other_ca}", server.repl_password
    )
    assert rc == 1, log
    assert "CERTIFICATE_VERIFY_FAILED" in log, log
    assert "ssl_ca" in log, log
    assert "trying again" not in log
    assert seconds < 60  # not retried for the 300 s of --source-retry-seconds
    # an account that requires TLS, reached without it: says so (was "check the user name and password")
    rc, log, _ = _replicate(server, tmp_path, source_dsn(server, user="sec"), "sec-pw-123")
    assert rc == 1, log
    assert "only over TLS" in log, log
    assert "ssl=true" in log, log
    assert NO_TLS_HINT not in log.split("only over TLS")[1]  # the final error names TLS, not the password
    assert "sec-pw-123" not in log
    # with ssl=true it replicates
    rc, log, _ = _replicate(server, tmp_path, f"{source_dsn(server, user='sec')}?ssl=true", "sec-pw-123")
    assert rc == 0, log
    # a wrong password to that account is still a wrong password
    rc, log, _ = _replicate(server, tmp_path, source_dsn(server, user="sec"), "not-the-password")
    assert rc == 1, log
    assert "only over TLS" not in log
    assert NO_TLS_HINT in log


def test_tls_not_offered_and_missing_grants_exit_1(
    server_factory: Callable[..., MariaDBServer], server_kind: str, tmp_path: Path
) -> None:
    server = server_factory(**({"tls_version": ""} if server_kind == "mysql" else {}))
    server.create_database(DB)
    server.execute(f"CREATE TABLE {DB}.t (id INT PRIMARY KEY)")
    rc, log, seconds = _replicate(server, tmp_path, f"{source_dsn(server)}?ssl=required", server.repl_password)
    assert rc == 1, log
    assert "does not offer TLS" in log, log
    assert "ssl=false" in log, log
    assert seconds < 60
    server.execute("CREATE USER 'nogrant'@'%' IDENTIFIED BY 'nogrant-pw'")
    rc, log, seconds = _replicate(server, tmp_path, source_dsn(server, user="nogrant"), "nogrant-pw")
    assert rc == 1, log
    assert "GRANT" in log
    assert seconds < 60


@pytest.mark.servers("mysql")
def test_mysql_require_secure_transport_says_add_ssl_true(
    server_factory: Callable[..., MariaDBServer], tmp_path: Path
) -> None:
    server = server_factory(require_secure_transport="ON")
    server.create_database(DB)
    rc, log, _ = _replicate(server, tmp_path, source_dsn(server), server.repl_password)
    assert rc == 1, log
    assert "requires TLS" in log, log
    assert "add ssl=true" in log.lower(), log


def test_the_start_up_waits_for_a_source_that_comes_back_within_the_budget(
    fresh_server: MariaDBServer, tmp_path: Path
) -> None:
    # a restarting source at start-up is what a reconnect sees: replicate waits for it (was: exit 75 at once)
    server = fresh_server
    server.create_database(DB)
    server.execute(f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, v VARCHAR(20))")
    server.execute(f"INSERT INTO {DB}.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    server.stop()
    target = f"chdb://{tmp_path / 'ch'}"
    with ReplicateProcess(source_dsn(server), server.repl_password, target, DB, "--once", "--source-retry-seconds",
                          "120", env={}) as rep:  # fmt: skip
        rep.wait_for("trying again")
        rep.wait_for("trying again", start=len(rep.lines))  # still waiting after the first retry
        server.start()
        rc = rep.wait_exit(timeout=240)
    assert rc == 0, rep.tail()
    verify = subprocess.run(
        [sys.executable, "-m", "mybinlog", "verify", "--source", source_dsn(server), "--target", target, "-d", DB],
        env=child_env(MYBINLOG_PASSWORD=server.repl_password),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_verify_of_a_missing_database_says_why_on_stderr(server: MariaDBServer, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mybinlog", "verify", "--source", source_dsn(server), "--target",
         f"chdb://{tmp_path / 'ch'}", "-d", "no_such_database_xyz"],
        env=child_env(MYBINLOG_PASSWORD=server.repl_password),
        capture_output=True,
        text=True,
        timeout=240,
    )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    assert "no_such_database_xyz does not exist in the source" in result.stderr
    assert "--database" in result.stderr  # the fix
