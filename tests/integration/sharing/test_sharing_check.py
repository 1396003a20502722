"""The acceptance scenario, run as a user would: examples/sharing_check.py against a live MariaDB and a live MySQL
under steady writes.

Several consumers, one deliberately slow with tiny limits (detached, re-created, merged back), one started late
from an old GTID set; each must receive exactly the source's transactions in order, and the status rows must end
with a single dispatcher and ClickHouse's column names. The script checks all of this itself (public API only);
the test runs it in a subprocess and checks its JSON result.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from mybinlog.testing._mariadb import MariaDBServer
from tests.fakes import COLUMNS

SCRIPT = Path(__file__).resolve().parents[3] / "examples" / "sharing_check.py"


async def test_sharing_check_script_passes_under_steady_writes(server: MariaDBServer, db: str) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(SCRIPT),
        "--dsn",
        server.repl_dsn,
        "--write-dsn",
        server.admin_dsn,
        "--seconds",
        "4",
        "--database",
        db,
        "--json",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 180)
    assert out, err.decode()[-3000:]
    result = json.loads(out)
    assert result["ok"], result["problems"]
    assert process.returncode == 0
    consumers = result["consumers"]
    assert set(consumers) == {"consumer-1", "consumer-2", "consumer-3", "slow", "late"}
    for name, c in consumers.items():
        assert c["transactions"] == c["expected"] > 0, name
    assert consumers["late"]["expected"] == result["source_transactions"]  # from the old set: everything
    assert consumers["consumer-1"]["expected"] < result["source_transactions"]
    assert consumers["slow"]["detaches"] >= 1
    leader = consumers["consumer-1"]["dispatchers"][0]
    assert consumers["late"]["dispatchers"][0] != leader  # caught up on its own connection...
    assert consumers["late"]["dispatchers"][-1] == leader  # ...and merged into the leader
    assert consumers["slow"]["dispatchers"][-1] == leader  # came back after its detaches
    assert result["dispatchers_at_end"] == [leader]
    assert [list(row) for row in result["status"]] == [COLUMNS] * 5
    assert {row["dispatcher_name"] for row in result["status"]} == {leader}
    assert server.repl_password not in out.decode()
    assert server.admin_password not in out.decode()
    assert server.repl_password not in err.decode()
