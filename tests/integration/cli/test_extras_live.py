"""``replicate`` and ``verify`` with only the [cli] extra's libraries into a ClickHouse server: PySpark, pandas and
chdb cannot be imported in the child process (tests/unit/test_extras.py explains how), and both commands work."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from tests.fakes import BLOCK_EXTRAS
from tests.faults import child_env, create_tables, source_dsn, write
from tests.servers import MariaDBServer

ABSENT = {"pyspark", "pandas", "chdb", "matplotlib"}


def _mybinlog(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    script = BLOCK_EXTRAS.format(blocked=ABSENT) + (
        "import sys\nfrom mybinlog.cli import main\nrc = main(sys.argv[1:])\n"
        "assert not {'pyspark', 'pandas', 'chdb'} & set(sys.modules), sorted(sys.modules)\nsys.exit(rc)\n"
    )
    return subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, env=env, timeout=300)


def test_replicate_and_verify_need_no_spark_pandas_or_chdb(fresh_server: MariaDBServer, clickhouse_server: Any) -> None:
    server = fresh_server
    server.create_database("slim")
    create_tables(server, "slim", filler=500)
    write(server, "slim", 1, 5)
    env = child_env(MYBINLOG_PASSWORD=server.repl_password, MYBINLOG_CH_PASSWORD=clickhouse_server.password)
    url = clickhouse_server.url(with_password=False)
    # one replica per flavour in the session's ClickHouse server (a replica refuses another server's checkpoint)
    replica = f"slim_{server.flavor}"
    common = ("--source", source_dsn(server), "--target", url, "--database", "slim", "--target-database", replica)
    done = _mybinlog("replicate", *common, "--replica", replica, "--once", env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    # progress for people waiting, without -v (and nothing else at INFO)
    assert f"{replica}: initial load done: " in done.stderr
    assert " INFO mybinlog.replication" not in done.stderr
    checked = _mybinlog("verify", *common, env=env)
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]
