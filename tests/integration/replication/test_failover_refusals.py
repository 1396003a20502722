"""`replicate` refuses a failover it cannot make safely, with a non-zero exit that says why and a replica untouched
by the refused server (issue: source failover). The stream-level checks are in test_source_failover.py and
test_failover_checks.py; this is what a supervisor of the CLI sees."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from mybinlog.testing import MariaDBServer
from tests.faults import STREAMING, ReplicateProcess, create_tables, target_for, write

DB = "refusal"


def _sources(*servers: MariaDBServer) -> str:
    return "mysql://repl@" + ",".join(f"{s.host}:{s.port}" for s in servers)


def test_replicate_exits_1_on_a_promoted_replica_with_an_errant_transaction(
    server_kind: str, server_factory: Callable[..., MariaDBServer], tmp_path: Path, clickhouse_server: Any
) -> None:
    """chdb only: the refusal happens before anything is written, whatever the target (the target kinds are
    covered by the failover runs that succeed)."""
    options: dict[str, Any] = {"log_slave_updates": True} if server_kind == "mariadb" else {}
    primary = server_factory(server_id=1, **options)
    replica = server_factory(server_id=2, **options)
    primary.create_database(DB)
    create_tables(primary, DB, filler=50)
    replica.follow(primary)
    url, env = target_for("chdb", clickhouse_server, tmp_path / "ch")
    name = f"{DB}_{server_kind}"
    with ReplicateProcess(
        _sources(primary, replica),
        primary.repl_password,
        url,
        DB,
        "--replica",
        name,
        "--target-database",
        name,
        "--source-retry-seconds",
        "60",
        env=env,
    ) as rep:
        rep.wait_for(STREAMING)
        n = write(primary, DB, 1, 5)
        rep.wait_caught_up(primary)
        with replica.connect() as conn, conn.cursor() as cur:  # written on the replica itself
            if server_kind == "mariadb":
                cur.execute("SET SESSION gtid_domain_id = 9")
            cur.execute(f"INSERT INTO `{DB}`.t1 (id, v) VALUES (999999, 'errant')")
        write(primary, DB, n, 5)  # replicated after it
        rep.wait_caught_up(primary)
        replica.wait_for_gtids(primary.gtid_position())
        primary.kill()
        replica.promote()
        code = rep.wait_exit(timeout=120)
    assert code == 1, rep.tail()
    assert "errant transaction" in rep.log, rep.tail()
    assert "new snapshot" in rep.log, rep.tail()
