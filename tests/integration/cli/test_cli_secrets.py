"""Passwords off the command line: ``replicate``, ``verify`` and ``status`` as real child processes taking the
source's and ClickHouse's passwords from files and the environment (``dump``: tests/integration/cli/test_dump_cli.py).

The source is the session server of each flavour (``server``: MariaDB, then MySQL, whose replication user
authenticates with caching_sha2_password), the target the private ClickHouse 18.16 server
(``clickhouse_server``), whose ``default`` user has a password. No password is ever on a child's command line;
the tests check that it is not in ``/proc/<pid>/cmdline`` of a running replicator, and not in any output.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mybinlog.clickhouse import quote_ident
from mybinlog.testing._clickhouse import ClickHouseServer
from tests.servers import MariaDBServer

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
TIMEOUT = 120.0  # per child process; generous for a loaded 2-core machine
ROWS = [(1, "one"), (2, "two"), (3, "three")]
PS_WARNING = "where other users of this machine can read it"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MYBINLOG_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def _mybinlog(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mybinlog", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=TIMEOUT,
        check=False,
    )


def _bare_dsn(server: MariaDBServer, db: str = "") -> str:
    """The DSN without a password."""
    return f"mysql://{server.repl_user}@{server.host}:{server.port}" + (f"/{db}" if db else "")


def _secret_file(tmp_path: Path, name: str, password: str) -> str:
    path = tmp_path / name
    path.write_text(password + "\n")  # as `echo pw > file` writes it
    path.chmod(0o600)
    return str(path)


def _assert_no_secrets(text: str, server: MariaDBServer, ch: ClickHouseServer) -> None:
    assert server.repl_password not in text
    assert ch.password not in text


@pytest.fixture
def source_table(server: MariaDBServer, db: str) -> str:
    server.execute(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v VARCHAR(20))")
    server.execute(f"INSERT INTO `{db}`.t VALUES (%s, %s), (%s, %s), (%s, %s)", [x for r in ROWS for x in r])
    return db


@pytest.fixture
def ch_database(clickhouse_server: ClickHouseServer, db: str) -> Iterator[str]:
    """The ClickHouse database the replica goes into (created by ``replicate``), dropped afterwards."""
    name = f"ch_{db}"
    try:
        yield name
    finally:
        if clickhouse_server.running:
            clickhouse_server.execute(f"DROP DATABASE IF EXISTS {quote_ident(name)}")


def _replicated_rows(ch: ClickHouseServer, database: str) -> list[tuple[int, str]]:
    body = ch.execute(f"SELECT id, v FROM {quote_ident(database)}.t FINAL WHERE _sign = 1 ORDER BY id")
    return [(int(i), v) for i, v in (line.split("\t") for line in body.splitlines())]


def _replicate_args(server: MariaDBServer, ch: ClickHouseServer, db: str, ch_db: str, *extra: str) -> list[str]:
    return [
        "replicate",
        "--source",
        _bare_dsn(server),
        "--target",
        ch.url(with_password=False),
        "--database",
        db,
        "--target-database",
        ch_db,
        "--status-interval",
        "0",
        *extra,
    ]


def test_replicate_with_passwords_from_the_environment(
    server: MariaDBServer, clickhouse_server: ClickHouseServer, source_table: str, ch_database: str
) -> None:
    env = _env(MYBINLOG_PASSWORD=server.repl_password, MYBINLOG_CH_PASSWORD=clickhouse_server.password)
    args = _replicate_args(server, clickhouse_server, source_table, ch_database, "--once")
    _assert_no_secrets(" ".join(args), server, clickhouse_server)
    proc = _mybinlog(*args, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _replicated_rows(clickhouse_server, ch_database) == ROWS
    [status] = [json.loads(line) for line in proc.stdout.splitlines()]
    assert status["rows_written"] == len(ROWS)
    _assert_no_secrets(proc.stdout + proc.stderr, server, clickhouse_server)
    assert PS_WARNING not in proc.stderr  # nothing was on the command line


def test_replicate_and_verify_with_password_files(
    server: MariaDBServer,
    clickhouse_server: ClickHouseServer,
    source_table: str,
    ch_database: str,
    tmp_path: Path,
) -> None:
    files = [
        "--password-file",
        _secret_file(tmp_path, "db.pw", server.repl_password),
        "--target-password-file",
        _secret_file(tmp_path, "ch.pw", clickhouse_server.password),
    ]
    # wrong passwords in the environment: the files come first
    env = _env(MYBINLOG_PASSWORD="not-the-db-password", MYBINLOG_CH_PASSWORD="not-the-ch-password")
    proc = _mybinlog(*_replicate_args(server, clickhouse_server, source_table, ch_database, "--once", *files), env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _replicated_rows(clickhouse_server, ch_database) == ROWS
    _assert_no_secrets(proc.stdout + proc.stderr, server, clickhouse_server)

    verify = _mybinlog(
        "verify",
        "--source",
        _bare_dsn(server),
        "--database",
        source_table,
        "--target",
        clickhouse_server.url(with_password=False),
        "--target-database",
        ch_database,
        "--format",
        "json",
        *files,
        env=env,
    )
    assert verify.returncode == 0, verify.stdout[-3000:] + verify.stderr[-3000:]
    report = json.loads(verify.stdout)
    assert [(t["source_table"], t["status"], t["source_rows"]) for t in report["tables"]] == [
        (f"{source_table}.t", "equal", len(ROWS))
    ]
    _assert_no_secrets(verify.stdout + verify.stderr, server, clickhouse_server)


def test_running_replicator_has_no_password_in_its_command_line(
    server: MariaDBServer,
    clickhouse_server: ClickHouseServer,
    source_table: str,
    ch_database: str,
    tmp_path: Path,
) -> None:
    args = _replicate_args(
        server,
        clickhouse_server,
        source_table,
        ch_database,
        "--password-file",
        _secret_file(tmp_path, "db.pw", server.repl_password),
        "--max-flush-data-time",
        "100",
    )
    env = _env(MYBINLOG_CH_PASSWORD_FILE=_secret_file(tmp_path, "ch.pw", clickhouse_server.password))
    proc = subprocess.Popen(
        [sys.executable, "-m", "mybinlog", "-v", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=env,
    )
    log: list[str] = []

    def wait_for(text: str) -> None:
        assert proc.stderr is not None
        while not any(text in line for line in log):
            line = proc.stderr.readline()
            assert line, f"replicate exited ({proc.wait(timeout=TIMEOUT)}):\n{''.join(log[-40:])}"
            log.append(line)

    try:
        wait_for("initial load copied")
        server.execute(f"INSERT INTO `{source_table}`.t VALUES (4, 'four')")
        wait_for("checkpoint at")  # the insert came through the binlog: it is streaming
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode().split("\0")
        assert "replicate" in cmdline  # the right process
        assert "--password-file" in cmdline
        _assert_no_secrets("\0".join(cmdline), server, clickhouse_server)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err[-3000:]
    assert json.loads(out)["state"] == "stopped"
    assert _replicated_rows(clickhouse_server, ch_database) == [*ROWS, (4, "four")]
    _assert_no_secrets("".join(log) + out + err, server, clickhouse_server)


@pytest.mark.parametrize("wrong", ["source", "target"])
def test_wrong_password_from_file_names_user_and_host_only(
    server: MariaDBServer,
    clickhouse_server: ClickHouseServer,
    source_table: str,
    ch_database: str,
    tmp_path: Path,
    wrong: str,
) -> None:
    secret = "Wr0ng-fi1e-pw"
    db_pw = secret if wrong == "source" else server.repl_password
    ch_pw = secret if wrong == "target" else clickhouse_server.password
    args = _replicate_args(server, clickhouse_server, source_table, ch_database, "--once")
    args += ["--password-file", _secret_file(tmp_path, "db.pw", db_pw)]
    args += ["--target-password-file", _secret_file(tmp_path, "ch.pw", ch_pw)]
    proc = _mybinlog(*args, env=_env())
    assert proc.returncode != 0
    assert proc.stderr.startswith("mybinlog: error:"), proc.stderr[-3000:]
    if wrong == "source":
        assert f"{server.repl_user}@{server.host}:{server.port}" in proc.stderr
    else:
        assert f"default@{clickhouse_server.host}:{clickhouse_server.http_port}" in proc.stderr
    assert secret not in proc.stdout + proc.stderr
    _assert_no_secrets(proc.stdout + proc.stderr, server, clickhouse_server)


def test_missing_password_file_is_a_clear_error(
    server: MariaDBServer, clickhouse_server: ClickHouseServer, source_table: str, ch_database: str, tmp_path: Path
) -> None:
    missing = str(tmp_path / "no-such.pw")
    args = _replicate_args(server, clickhouse_server, source_table, ch_database, "--once", "--password-file", missing)
    proc = _mybinlog(*args, env=_env(MYBINLOG_PASSWORD=server.repl_password))  # a file given must exist
    assert proc.returncode == 2  # a usage error (docs/replication.md, "Exit codes")
    assert proc.stderr.strip().splitlines()[-1] == (
        f"mybinlog: error: cannot read the password file '{missing}' (--password-file): No such file or directory"
    )


def test_password_in_url_and_file_is_refused(server: MariaDBServer, source_table: str, tmp_path: Path) -> None:
    proc = _mybinlog(
        "verify",
        "--source",
        server.repl_dsn,
        "--database",
        source_table,
        "--password-file",
        _secret_file(tmp_path, "db.pw", server.repl_password),
        env=_env(),
    )
    assert proc.returncode == 2
    assert "give the password once" in proc.stderr
    assert server.repl_password not in proc.stdout + proc.stderr


def test_status_dsn_with_password_file_and_environment_file(server: MariaDBServer, tmp_path: Path) -> None:
    path = _secret_file(tmp_path, "db.pw", server.repl_password)
    by_option = _mybinlog("status", "--dsn", _bare_dsn(server), "--password-file", path, "--format", "json", env=_env())
    by_env = _mybinlog("status", "--dsn", _bare_dsn(server), "--format", "json", env=_env(MYBINLOG_PASSWORD_FILE=path))
    for proc in (by_option, by_env):
        assert proc.returncode == 0, proc.stderr
        facts = json.loads(proc.stdout)
        assert facts["server"] == f"{server.repl_user}@{server.host}:{server.port}"
        assert facts["log_bin"] is True
        assert server.repl_password not in proc.stdout + proc.stderr
        assert PS_WARNING not in proc.stderr


def test_status_warns_once_when_the_password_is_in_the_url(server: MariaDBServer) -> None:
    proc = _mybinlog("status", "--dsn", server.repl_dsn, "--format", "json", env=_env())
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "WARNING" in line]
    assert len(warnings) == 1, proc.stderr
    assert PS_WARNING in warnings[0]
    assert "--password-file" in warnings[0]
    assert "MYBINLOG_PASSWORD" in warnings[0]
    assert server.repl_password not in proc.stdout + proc.stderr
