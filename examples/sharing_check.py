"""Check mybinlog's sharing guarantees against a live MySQL/MariaDB server under steady writes (public API only).

What it does, in one process:

1. creates ``DATABASE.t`` and keeps writing small transactions to it (inserts, updates, deletes) until the end;
2. starts several consumers of one shared connection (``mybinlog.get_binlog_client``) at the current position,
   and one deliberately slow consumer with tiny limits (``max_bytes_in_binlog_queue=16``,
   ``max_milliseconds_to_wait_in_binlog_queue=10``) that pauses now and then: it gets detached, re-creates itself
   from its position (``binlog.reopen()``) and comes back;
3. part-way through, starts a late consumer from an old GTID set (before the writes began): it catches up on its
   own connection and merges into the running dispatcher while the writes go on;
4. stops writing, waits until every consumer has the last transaction, then checks that

   - every consumer received exactly the source's transactions after its start, in order (GTIDs and row
     contents, compared with a separate plain ``BinlogStream`` read of the same range): nothing lost, nothing
     twice, across detaches and merges;
   - the slow consumer was detached at least once and came back;
   - the status rows (``client.status()``) have ClickHouse's ``system.mysql_binlogs`` column names and show a
     single dispatcher at the end.

Usage::

    python examples/sharing_check.py --dsn mysql://repl:secret@127.0.0.1:3306 \\
        --write-dsn mysql://root:secret@127.0.0.1:3306 [--seconds 10] [--database mybinlog_sharing_check]

``--dsn`` is the user that reads the binlog (REPLICATION SLAVE/CLIENT), ``--write-dsn`` one that may create the
database and write to it (default: ``--dsn``). Exit code 0 when every check passed; ``--json`` prints the result.
The database is dropped at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import asyncmy  # the MySQL driver mybinlog itself uses; here only to write

import mybinlog

STATUS_COLUMNS = [
    "binlog_client_name",
    "name",
    "mysql_binlog_name",
    "mysql_binlog_pos",
    "mysql_binlog_timestamp",
    "mysql_binlog_executed_gtid_set",
    "dispatcher_name",
    "dispatcher_mysql_binlog_name",
    "dispatcher_mysql_binlog_pos",
    "dispatcher_mysql_binlog_timestamp",
    "dispatcher_mysql_binlog_executed_gtid_set",
    "size",
    "bytes",
    "max_bytes",
    "max_waiting_ms",
    "dispatcher_events_read_per_sec",
    "dispatcher_bytes_read_per_sec",
    "dispatcher_events_flush_per_sec",
    "dispatcher_bytes_flush_per_sec",
]


@dataclass
class Received:
    """What one consumer got: complete transactions as (GTID, rows), in order."""

    name: str
    start: mybinlog.GtidSet
    transactions: list[tuple[mybinlog.Gtid, Any]] = field(default_factory=list)
    detaches: int = 0
    dispatchers: list[str] = field(default_factory=list)
    binlog: mybinlog.Binlog | None = None


class Recorder:
    """Cuts a stream of events into transactions (GTID ... completing event) with the rows of one database."""

    def __init__(self, database: str) -> None:
        self.database = database
        self.gtid: Any = None
        self.rows: list[Any] = []

    def reset(self) -> None:
        self.gtid = None
        self.rows = []

    def feed(self, event: mybinlog.Event, position: mybinlog.BinlogPosition) -> tuple[mybinlog.Gtid, Any] | None:
        """The completed transaction after ``event`` (given the position after it), if it completed one."""
        if isinstance(event, (mybinlog.GtidEvent, mybinlog.MariadbGtidEvent)):
            self.gtid, self.rows = event.gtid, []
        elif isinstance(event, mybinlog.RowsEvent) and event.schema == self.database and self.gtid is not None:
            self.rows.append([event.table_name, event.kind, json.loads(json.dumps(event.rows, default=str))])
        if self.gtid is not None and position.gtid_set is not None and self.gtid in position.gtid_set:
            done = (self.gtid, self.rows)
            self.reset()
            return done
        return None


async def executed_set(conn: Any, mariadb: bool) -> mybinlog.GtidSet:
    async with conn.cursor() as cur:
        await cur.execute("SELECT @@global.gtid_binlog_pos" if mariadb else "SELECT @@global.gtid_executed")
        (text,) = await cur.fetchone()
    return mybinlog.parse_gtid_set(str(text or "").replace("\n", ""), "mariadb" if mariadb else "mysql")


async def connect(dsn: mybinlog.DSN, database: str | None = None) -> Any:
    return await asyncmy.connect(
        host=dsn.host, port=dsn.port, user=dsn.user, password=dsn.password, db=database, autocommit=True
    )


async def writer(dsn: mybinlog.DSN, database: str, stop: asyncio.Event, counts: dict[str, int]) -> None:
    """Small transactions, steadily, until ``stop``."""
    rnd = random.Random(1)
    conn = await connect(dsn, database)
    next_id = 1
    try:
        async with conn.cursor() as cur:
            while not stop.is_set():
                await cur.execute("BEGIN")
                for _ in range(rnd.randint(1, 4)):
                    await cur.execute(
                        "INSERT INTO t (id, v, n) VALUES (%s, %s, %s)", (next_id, f"value {next_id}", rnd.randint(0, 9))
                    )
                    next_id += 1
                if next_id > 20 and rnd.random() < 0.3:
                    await cur.execute(
                        "UPDATE t SET n = n + 1, v = CONCAT(v, '+') WHERE id = %s", (rnd.randrange(1, next_id),)
                    )
                if next_id > 20 and rnd.random() < 0.1:
                    await cur.execute("DELETE FROM t WHERE id = %s", (rnd.randrange(1, next_id),))
                await cur.execute("COMMIT")
                counts["transactions"] += 1
                await asyncio.sleep(0.002)  # steady, not flat out
    finally:
        conn.close()


async def consume(
    received: Received,
    binlog: mybinlog.Binlog,
    database: str,
    *,
    pause_every: int = 0,
    pause_ms: int = 0,
) -> None:
    """Record every complete transaction; after a detach, come back from the position (``reopen``)."""
    recorder = Recorder(database)
    received.binlog = binlog
    while True:
        try:
            async for event in binlog:
                done = recorder.feed(event, binlog.position)
                if done is not None:
                    received.transactions.append(done)
                    if pause_every and len(received.transactions) % pause_every == 0:
                        await asyncio.sleep(pause_ms / 1000)  # a deliberately slow consumer
                d = binlog.dispatcher
                if d is not None and (not received.dispatchers or received.dispatchers[-1] != d.name):
                    received.dispatchers.append(d.name)
            return
        except mybinlog.BinlogDetachedError:
            received.detaches += 1
            recorder.reset()  # the open transaction comes again from the committed position
            binlog = await binlog.reopen()
            received.binlog = binlog


async def wait_for(predicate: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


async def source_transactions(
    dsn: mybinlog.DSN, start: mybinlog.GtidSet, final: mybinlog.GtidSet, database: str
) -> list[tuple[mybinlog.Gtid, Any]]:
    """The source's transactions after ``start`` up to ``final``, read by a plain stream of its own."""
    recorder = Recorder(database)
    out: list[tuple[mybinlog.Gtid, Any]] = []
    async with mybinlog.BinlogStream(dsn, gtid_set=start, blocking=False) as stream:
        async for event in stream:
            done = recorder.feed(event, stream.position)
            if done is not None:
                out.append(done)
            gtids = stream.position.gtid_set
            if gtids is not None and gtids.contains(final):  # type: ignore[arg-type]
                break
    return out


async def run_check(
    dsn_text: str,
    write_dsn_text: str | None = None,
    *,
    seconds: float = 10.0,
    database: str = "mybinlog_sharing_check",
    consumers: int = 3,
    keep: bool = False,
    log: Any = print,
) -> dict[str, Any]:
    dsn = mybinlog.DSN.parse(dsn_text)
    write_dsn = mybinlog.DSN.parse(write_dsn_text or dsn_text)
    problems: list[str] = []
    admin = await connect(write_dsn)
    async with admin.cursor() as cur:
        await cur.execute("SELECT VERSION()")
        (version,) = await cur.fetchone()
        mariadb = "mariadb" in str(version).lower()
        await cur.execute(f"CREATE DATABASE IF NOT EXISTS `{database}`")
        await cur.execute(f"DROP TABLE IF EXISTS `{database}`.t")
        await cur.execute(f"CREATE TABLE `{database}`.t (id BIGINT PRIMARY KEY, v VARCHAR(200), n INT)")
    old = await executed_set(admin, mariadb)
    log(f"server {dsn.display} ({version}); old GTID set {old}")

    stop = asyncio.Event()
    counts = {"transactions": 0}
    client = mybinlog.get_binlog_client(
        dsn, max_bytes_in_binlog_dispatcher_buffer=64 << 10, max_flush_milliseconds_in_binlog_dispatcher=50
    )
    received: dict[str, Received] = {}
    try:
        async with asyncio.TaskGroup() as tg:
            write_task = tg.create_task(writer(write_dsn, database, stop, counts))
            await asyncio.sleep(seconds * 0.2)  # let the server get ahead of the old set
            start = await executed_set(admin, mariadb)
            tasks = []
            for i in range(consumers):
                name = f"consumer-{i + 1}"
                received[name] = Received(name, start)
                binlog = await client.create_binlog(name=name, executed_gtid_set=start, databases=[database])
                tasks.append(tg.create_task(consume(received[name], binlog, database)))
            received["slow"] = Received("slow", start)
            slow = await client.create_binlog(
                name="slow",
                executed_gtid_set=start,
                databases=[database],
                max_bytes_in_binlog_queue=16,
                max_milliseconds_to_wait_in_binlog_queue=10,
            )
            tasks.append(tg.create_task(consume(received["slow"], slow, database, pause_every=50, pause_ms=100)))
            log(f"{consumers} consumers and a slow one started at {start}")
            await asyncio.sleep(seconds * 0.3)
            received["late"] = Received("late", old)
            late = await client.create_binlog(name="late", executed_gtid_set=old, databases=[database])
            leader = received["consumer-1"].binlog
            if late.dispatcher is None or (leader is not None and late.dispatcher is leader.dispatcher):
                problems.append("the late consumer did not get a catch-up dispatcher of its own")
            log(f"late consumer started at the old set on {late.dispatcher.name if late.dispatcher else None}")
            tasks.append(tg.create_task(consume(received["late"], late, database)))
            await asyncio.sleep(seconds * 0.5)
            stop.set()
            await write_task
            final = await executed_set(admin, mariadb)
            log(f"writes stopped after {counts['transactions']} transactions; final GTID set {final}")

            def caught_up() -> bool:
                return all(
                    r.binlog is not None
                    and r.binlog.position.gtid_set is not None
                    and r.binlog.position.gtid_set.contains(final)  # type: ignore[arg-type]
                    for r in received.values()
                )

            if not await wait_for(caught_up, 60):
                problems.append("not every consumer received the last transaction within 60 s")

            def one_dispatcher() -> bool:
                rows = client.status()
                return len(rows) == len(received) and len({r["dispatcher_name"] for r in rows}) == 1

            if not await wait_for(one_dispatcher, 30):
                problems.append("the consumers did not end on a single dispatcher within 30 s")
            status = client.status()
            for r in received.values():  # a merge after a consumer's last event shows only here
                d = r.binlog.dispatcher if r.binlog is not None else None
                if d is not None and (not r.dispatchers or r.dispatchers[-1] != d.name):
                    r.dispatchers.append(d.name)
            for task in tasks:
                task.cancel()

        reference = await source_transactions(dsn, old, final, database)
        in_range = {gtid for gtid, _ in reference}
        results: dict[str, Any] = {}
        for name, r in received.items():
            expected = [t for t in reference if t[0] not in r.start]
            got = [t for t in r.transactions if t[0] in in_range]
            if got != expected:
                lost = len({g for g, _ in expected} - {g for g, _ in got})
                twice = len(got) - len({g for g, _ in got})
                first = next((i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b), None)
                problems.append(
                    f"{name}: received {len(got)} transactions, expected {len(expected)} ({lost} missing, {twice} "
                    f"repeated); first difference at #{first}: got {got[first] if first is not None else None}, "
                    f"expected {expected[first] if first is not None else None}"
                )
            results[name] = {
                "start": str(r.start),
                "transactions": len(got),
                "expected": len(expected),
                "detaches": r.detaches,
                "dispatchers": r.dispatchers,
            }
        if received["slow"].detaches < 1:
            problems.append("the slow consumer was never detached (the check needs it to be)")
        # ClickHouse's columns first, in its order (mybinlog adds its own after them)
        if not status or any(list(row)[: len(STATUS_COLUMNS)] != STATUS_COLUMNS for row in status):
            problems.append("status rows do not have the system.mysql_binlogs columns")
        dispatchers = sorted({row["dispatcher_name"] for row in status})
        if len(dispatchers) != 1:
            problems.append(f"status rows show {len(dispatchers)} dispatchers at the end: {dispatchers}")
        if any(str(dsn.password) in json.dumps(row, default=str) for row in status if dsn.password):
            problems.append("a status row shows the password")
    finally:
        stop.set()
        await client.aclose()
        if not keep:
            async with admin.cursor() as cur:
                await cur.execute(f"DROP DATABASE IF EXISTS `{database}`")
        admin.close()
    result = {
        "ok": not problems,
        "problems": problems,
        "source_transactions": len(reference),
        "written": counts["transactions"],
        "consumers": results,
        "dispatchers_at_end": dispatchers,
        "status": status,
    }
    for name, r in results.items():
        log(
            f"{name:12} start {r['start'] or '(empty)':>16}  {r['transactions']:6}/{r['expected']:<6} transactions  "
            f"detached {r['detaches']}x  dispatchers {' -> '.join(r['dispatchers'])}"
        )
    log("OK" if not problems else "FAILED:\n  " + "\n  ".join(problems))
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", required=True, help="mysql://user:password@host:port of a replication user")
    parser.add_argument("--write-dsn", help="a user that may create the database and write (default --dsn)")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long to write (default 10)")
    parser.add_argument("--database", default="mybinlog_sharing_check", help="scratch database (dropped after)")
    parser.add_argument("--consumers", type=int, default=3, help="normal consumers besides the slow and late ones")
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    quiet = args.json
    result = asyncio.run(
        run_check(
            args.dsn,
            args.write_dsn,
            seconds=args.seconds,
            database=args.database,
            consumers=args.consumers,
            keep=args.keep,
            log=(lambda *a: None) if quiet else print,
        )
    )
    if args.json:
        print(json.dumps(result, indent=2, default=str))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
