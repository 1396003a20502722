"""Sharing across a real restart: a separate consuming process (examples/checkpointed_consumers.py) with four
consumers, two of them slow enough to be detached, while 100 ALTER TABLE ... ADD COLUMN and 10k inserts are
written; the process is killed (SIGKILL) and started again from the positions it saved. Every consumer must end
with exactly the source's transactions, and the process's status (read from outside) with one dispatcher.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from mybinlog import BinlogStream, GtidEvent, GtidSet, MariadbGtidEvent, QueryEvent, RowsEvent, parse_gtid_set
from mybinlog.cli._status import server_facts
from mybinlog.errors import StatusReadError
from mybinlog.source._dsn import DSN
from mybinlog.status import read_status
from mybinlog.testing._mariadb import MariaDBServer

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "examples" / "checkpointed_consumers.py"
TRANSACTIONS = 1000  # x 10 rows inserted = 10k inserts
ALTER_EVERY = 10  # -> 100 ALTER TABLE ... ADD COLUMN
CONSUMERS = ["fast:100000000:60000", "default", "slow1:10:10:100:50", "slow2:10:10:150:50"]


def write(server: MariaDBServer, db: str, first: int, last: int) -> None:
    """Transactions first..last-1: 10 rows inserted each; an ALTER TABLE ADD COLUMN before every 10th."""
    conn = server.connect(database=db, autocommit=False)
    try:
        with conn.cursor() as cur:
            for t in range(first, last):
                if t % ALTER_EVERY == 0:
                    cur.execute(f"ALTER TABLE t ADD COLUMN c{t // ALTER_EVERY} INT")  # DDL commits on its own
                column = f"c{t // ALTER_EVERY}"
                values = [(t * 10 + j, f"v{t * 10 + j}", t) for j in range(10)]
                cur.executemany(f"INSERT INTO t (id, v, {column}) VALUES (%s, %s, %s)", values)  # one statement
                conn.commit()
    finally:
        conn.close()


def transactions(path: Path) -> tuple[list[dict[str, Any]], int]:
    """(transaction lines, number of detaches) of one consumer's file."""
    txns, detaches = [], 0
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if "gtid_set" in record:
            txns.append({k: record[k] for k in ("gtid", "rows", "queries")})
        elif record.get("event") == "detached":
            detaches += 1
    return txns, detaches


def saved_gtid_set(path: Path, flavor: str) -> GtidSet | None:
    """The position in the last complete line (the process may be writing the next one), parsed as ``flavor``."""
    if not path.exists():
        return None
    text = path.read_text()
    last = None
    for line in text[: text.rfind("\n") + 1].splitlines():
        if line.startswith('{"gtid"'):
            last = line
    return parse_gtid_set(json.loads(last)["gtid_set"], flavor) if last else None


async def reference(server: MariaDBServer, start: str, db: str) -> list[dict[str, Any]]:
    """The source's transactions after ``start``, read by a plain stream, in the consumers' line format."""
    out: list[dict[str, Any]] = []
    txn: dict[str, Any] | None = None
    gtid: Any = None
    async with BinlogStream(server.repl_dsn, gtid_set=start, blocking=False) as stream:
        async for event in stream:
            if isinstance(event, (GtidEvent, MariadbGtidEvent)):
                gtid = event.gtid
                txn = {"gtid": str(gtid), "rows": [], "queries": []}
            elif txn is None:
                continue
            elif isinstance(event, RowsEvent) and event.schema == db:
                txn["rows"].append([event.table_name, event.kind, json.loads(json.dumps(event.rows, default=str))])
            elif isinstance(event, QueryEvent) and event.query not in ("BEGIN", "COMMIT"):
                txn["queries"].append(event.query)
            gtids = stream.position.gtid_set
            if gtids is not None and gtid in gtids:
                out.append(txn)
                txn = None
    return out


async def poll(pred: Any, what: str, limit_s: float) -> None:
    """Wait until ``await pred()`` holds: the state is in files and another process, nothing to wait on."""

    async def loop() -> None:
        while not await pred():  # noqa: ASYNC110 - polling files and another process
            await asyncio.sleep(0.05)

    try:
        await asyncio.wait_for(loop(), limit_s)
    except TimeoutError:
        raise AssertionError(f"timed out waiting until {what}") from None


async def test_four_consumers_two_detached_ddl_and_inserts_survive_a_restart_of_the_consuming_process(
    server: MariaDBServer, db: str, tmp_path: Path
) -> None:
    server.execute(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v VARCHAR(40))")
    start = server.gtid_binlog_pos()
    state = tmp_path / "state"
    sock = tmp_path / "status.sock"
    files = [state / f"{spec.split(':')[0]}.jsonl" for spec in CONSUMERS]
    command = [str(SCRIPT), "--dsn", server.repl_dsn, "--state-dir", str(state), "--start", start]
    command += ["--database", db, "--status", f"unix:{sock}", "--heartbeat", "0.5"]
    for spec in CONSUMERS:
        command += ["--consumer", spec]

    async def launch(name: str) -> asyncio.subprocess.Process:
        with (tmp_path / f"{name}.log").open("wb") as log:  # the child keeps its own descriptor
            return await asyncio.create_subprocess_exec(sys.executable, *command, cwd=ROOT, stderr=log)

    def log_of(name: str) -> str:
        return (tmp_path / f"{name}.log").read_text()

    async def saved_at_least(n: int) -> bool:
        def check() -> bool:
            return all(f.exists() and f.read_text().count('"gtid_set"') >= n for f in files)

        return await asyncio.to_thread(check)

    await asyncio.to_thread(write, server, db, 0, 300)  # a backlog: the slow consumers fall behind at once
    writer = threading.Thread(target=write, args=(server, db, 300, TRANSACTIONS))
    processes: list[asyncio.subprocess.Process] = []
    try:
        first = await launch("first")
        processes.append(first)
        writer.start()
        await poll(lambda: saved_at_least(200), "every consumer saved 200 transactions", 30)
        assert first.returncode is None, log_of("first")
        first.kill()  # SIGKILL, a crash: no cleanup, maybe a half-written line
        assert await asyncio.wait_for(first.wait(), 10) == -signal.SIGKILL

        second = await launch("second")
        processes.append(second)
        await asyncio.to_thread(writer.join)
        final = parse_gtid_set(server.gtid_binlog_pos(), server.flavor)

        async def caught_up() -> bool:
            assert second.returncode is None, log_of("second")
            sets = await asyncio.to_thread(lambda: [saved_gtid_set(f, server.flavor) for f in files])
            return all(s is not None and s.contains(final) for s in sets)  # type: ignore[arg-type]

        await poll(caught_up, "every consumer saved the last transaction", 40)

        rows: list[dict[str, Any]] = []

        async def one_dispatcher() -> bool:
            nonlocal rows
            try:
                rows = (await read_status(f"unix:{sock}"))["mysql_binlogs"]
            except StatusReadError:
                return False
            return len(rows) == 4 and len({r["dispatcher_name"] for r in rows}) == 1

        await poll(one_dispatcher, "all four consumers are on one dispatcher", 20)
        assert {r["name"] for r in rows} == {"fast", "default", "slow1", "slow2"}
        assert all(
            parse_gtid_set(r["mysql_binlog_executed_gtid_set"], server.flavor).contains(final)  # type: ignore[arg-type]
            for r in rows
        )

        # the server agrees: one binlog dump connection is left (a dump thread whose client went away, killed or
        # merged, ends when its next heartbeat cannot be sent)
        async def one_dump() -> bool:
            facts = await server_facts(DSN.parse(server.repl_dsn))
            return len([d for d in facts["binlog_dumps"] if d["user"] == server.repl_user]) == 1

        await poll(one_dump, "the server has one binlog dump connection", 30)
        second.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(second.wait(), 20) == 0, log_of("second")
    finally:
        for process in processes:
            if process.returncode is None:
                process.kill()
                await process.wait()
        if writer.is_alive():
            await asyncio.to_thread(writer.join)

    expected = await reference(server, start, db)
    assert len(expected) == TRANSACTIONS + TRANSACTIONS // ALTER_EVERY
    assert sum(len(r[2]) for t in expected for r in t["rows"]) == TRANSACTIONS * 10
    assert sum(1 for t in expected if t["queries"]) == TRANSACTIONS // ALTER_EVERY
    detaches = {}
    for f in files:
        got, detaches[f.stem] = transactions(f)
        assert got == expected, f"{f.stem}: {len(got)} transactions instead of {len(expected)}"
    assert detaches["slow1"] >= 1
    assert detaches["slow2"] >= 1
    assert detaches["fast"] == 0
