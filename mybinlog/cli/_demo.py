"""``mybinlog demo``: a throwaway MariaDB with a writer, replicated into embedded ClickHouse, with zero setup.

The main job: start a private MariaDB, load a table, keep a writer running, take the initial copy with the Spark
snapshot (local mode), stream the binlog into embedded ClickHouse (chdb), show the status rows and finish with
``verify``. ``--stream`` shows the decoded change stream instead (the source layer alone).
"""

from __future__ import annotations

import asyncio
import random
import sys
import tempfile
from pathlib import Path
from typing import TextIO

import asyncmy

from ..protocol import RowsEvent, event_to_json, event_to_text
from ..source import BinlogStream

__all__ = ["run_demo", "run_stream_demo"]

_DDL = """CREATE TABLE shop.orders (
    id BIGINT UNSIGNED PRIMARY KEY AUTO_INCREMENT,
    customer VARCHAR(64) NOT NULL,
    amount DECIMAL(12, 2) NOT NULL,
    status ENUM('new', 'paid', 'shipped') NOT NULL DEFAULT 'new',
    tags SET('gift', 'express', 'fragile'),
    created_at DATETIME(3) NOT NULL,
    note JSON
)"""


async def _writer(kwargs: dict[str, object], transactions: int, seed: int) -> str:
    """Write the demo workload; return the server's GTID position after the last commit."""
    rng = random.Random(seed)
    conn = await asyncmy.connect(**kwargs, autocommit=False)
    try:
        async with conn.cursor() as cur:
            await cur.execute("CREATE DATABASE shop")
            await cur.execute(_DDL)
            ids: list[int] = []
            for n in range(transactions):
                for _ in range(rng.randint(1, 3)):
                    await cur.execute(
                        "INSERT INTO shop.orders (customer, amount, tags, created_at, note) "
                        "VALUES (%s, %s, %s, NOW(3), %s)",
                        (
                            rng.choice(["ada", "grace", "linus", "barbara"]),
                            f"{rng.randint(100, 99999) / 100:.2f}",
                            rng.choice(["", "gift", "express,fragile"]),
                            f'{{"source": "demo", "n": {n}}}',
                        ),
                    )
                    ids.append(int(cur.lastrowid))
                if ids and rng.random() < 0.5:
                    await cur.execute("UPDATE shop.orders SET status = 'paid' WHERE id = %s", (rng.choice(ids),))
                if len(ids) > 3 and rng.random() < 0.2:
                    victim = ids.pop(rng.randrange(len(ids)))
                    await cur.execute("DELETE FROM shop.orders WHERE id = %s", (victim,))
                await conn.commit()
            await cur.execute("SELECT @@global.gtid_binlog_pos")
            row = await cur.fetchone()
            return str(row[0])
    finally:
        conn.close()


async def run_stream_demo(transactions: int, fmt: str, out: TextIO) -> None:
    from ..testing import MariaDBServer

    render = event_to_json if fmt == "jsonl" else event_to_text
    with tempfile.TemporaryDirectory(prefix="mybinlog-demo-") as tmp:
        print(f"demo: starting a private MariaDB in {tmp} ...", file=sys.stderr)
        server = MariaDBServer(Path(tmp), name="demo")
        server.start()
        try:
            print(f"demo: {server.version} on {server.host}:{server.port}; streaming its binlog", file=sys.stderr)
            rows = 0
            txns = 0
            async with BinlogStream(server.repl_dsn, heartbeat_period=1.0) as stream:
                kwargs = server.connect_kwargs("admin")
                writer = asyncio.create_task(_writer(kwargs, transactions, seed=42))
                target: str | None = None
                async for event in stream:
                    out.write(render(event) + "\n")
                    if isinstance(event, RowsEvent):
                        rows += len(event.rows)
                    if target is None and writer.done():
                        target = writer.result()  # re-raises a writer failure
                    if target is not None and str(stream.position.gtid_set) == target:
                        break
                    if stream.position.gtid_set is not None and event.type_name == "XID_EVENT":
                        txns += 1
                out.flush()
                print(
                    f"demo: done: {txns} transactions, {rows} rows decoded; final position {stream.position}",
                    file=sys.stderr,
                )
        finally:
            server.stop()


# --- the replication demo ---------------------------------------------------------------------------------------

_CUSTOMERS = """CREATE TABLE shop.customers (
    email VARCHAR(120) PRIMARY KEY,
    name VARCHAR(64) NOT NULL,
    country CHAR(2) NOT NULL,
    joined DATE NOT NULL
)"""


async def _seed(kwargs: dict[str, object], rows: int, seed: int) -> None:
    rng = random.Random(seed)
    conn = await asyncmy.connect(**kwargs, autocommit=True)
    try:
        async with conn.cursor() as cur:
            await cur.execute("CREATE DATABASE shop")
            await cur.execute(_DDL)
            await cur.execute(_CUSTOMERS)
            batch = []
            for n in range(rows):
                batch.append(
                    (
                        rng.choice(["ada", "grace", "linus", "barbara", "edsger", "margaret"]),
                        f"{rng.randint(100, 999_999) / 100:.2f}",
                        rng.choice(["new", "paid", "shipped"]),
                        rng.choice(["", "gift", "express,fragile"]),
                        f'{{"source": "seed", "n": {n}}}',
                    )
                )
                if len(batch) == 5000 or n == rows - 1:
                    await cur.executemany(
                        "INSERT INTO shop.orders (customer, amount, status, tags, created_at, note) "
                        "VALUES (%s, %s, %s, %s, NOW(3), %s)",
                        batch,
                    )
                    batch = []
            await cur.executemany(
                "INSERT INTO shop.customers VALUES (%s, %s, %s, %s)",
                [
                    (f"user{i}@example.com", f"user {i}", rng.choice(["DE", "FR", "US", "JP"]), "2024-01-01")
                    for i in range(min(rows, 2000))
                ],
            )
    finally:
        conn.close()


async def _steady_writer(kwargs: dict[str, object], stop: asyncio.Event, seed: int) -> int:
    """Insert, update and delete until ``stop`` is set; returns the number of transactions."""
    rng = random.Random(seed)
    conn = await asyncmy.connect(**kwargs, autocommit=False)
    txns = 0
    try:
        async with conn.cursor() as cur:
            await cur.execute("SELECT MAX(id) FROM shop.orders")
            row = await cur.fetchone()
            top = int(row[0] or 1)
            while not stop.is_set():
                for _ in range(rng.randint(1, 5)):
                    await cur.execute(
                        "INSERT INTO shop.orders (customer, amount, tags, created_at, note) "
                        "VALUES (%s, %s, %s, NOW(3), %s)",
                        ("live", f"{rng.randint(100, 99999) / 100:.2f}", "gift", '{"source": "writer"}'),
                    )
                    top = int(cur.lastrowid)
                await cur.execute(
                    "UPDATE shop.orders SET status = 'shipped', amount = amount + 1 WHERE id = %s",
                    (rng.randint(1, top),),
                )
                if rng.random() < 0.3:
                    await cur.execute("DELETE FROM shop.orders WHERE id = %s", (rng.randint(1, top),))
                if rng.random() < 0.1:
                    await cur.execute(
                        "UPDATE shop.customers SET country = %s WHERE email = %s",
                        (rng.choice(["DE", "FR", "US", "JP"]), f"user{rng.randint(0, 1999)}@example.com"),
                    )
                await conn.commit()
                txns += 1
                await asyncio.sleep(0.002)  # a steady rate, not synchronisation
    finally:
        conn.close()
    return txns


async def run_demo(rows: int, seconds: float, target_dir: str | None, out: TextIO) -> int:
    """Replicate a throwaway MariaDB (with a writer running) into embedded ClickHouse; returns the exit code."""
    import json
    import time

    from ..clickhouse import open_target
    from ..replication import ReplicationSettings, Replicator
    from ..snapshot import SnapshotOptions, run_snapshot
    from ..testing import MariaDBServer
    from ..verification import verify

    def say(text: str) -> None:
        print(f"demo: {text}", file=out, flush=True)

    with tempfile.TemporaryDirectory(prefix="mybinlog-demo-") as tmp:
        chdb_dir = target_dir or str(Path(tmp) / "clickhouse")
        say(f"starting a private MariaDB in {tmp} ...")
        server = MariaDBServer(Path(tmp) / "mariadb", name="demo")
        server.start()
        try:
            say(f"{server.version} on 127.0.0.1:{server.port}; loading {rows:,} orders")
            kwargs = server.connect_kwargs("admin")
            await _seed(kwargs, rows, seed=7)
            stop_writer = asyncio.Event()
            writer = asyncio.create_task(_steady_writer(kwargs, stop_writer, seed=8))
            target = await open_target(f"chdb://{chdb_dir}")
            try:
                say(f"initial load with the Spark snapshot (local[2]) into embedded ClickHouse at {chdb_dir}")
                result = await run_snapshot(
                    SnapshotOptions(source=server.repl_dsn, target=f"chdb://{chdb_dir}", database="shop"),
                    target=target,
                    master="local[2]",
                    on_progress=lambda p: say(p.line()),
                )
                for line in result.summary().splitlines():
                    say(line)
                replicator = Replicator(
                    server.repl_dsn,
                    target,
                    database="shop",
                    settings=ReplicationSettings(max_flush_data_time=200),
                )
                task = asyncio.create_task(replicator.run())
                say(f"streaming the binlog into ClickHouse while the writer runs for {seconds:g} s")
                deadline = time.monotonic() + seconds
                while time.monotonic() < deadline and not task.done():
                    await asyncio.sleep(min(1.0, max(0.0, deadline - time.monotonic())))  # progress ticks
                    s = replicator.status
                    lag = "-" if s.lag_seconds is None else f"{s.lag_seconds:.2f} s"
                    say(f"replica: {s.transactions:,} transactions, {s.rows_written:,} rows written, lag {lag}")
                stop_writer.set()
                txns = await writer
                say(f"writer stopped after {txns:,} transactions; catching up")
                if replicator.client is not None:
                    say("status rows of the shared binlog client (ClickHouse's system.mysql_binlogs columns):")
                    for row in replicator.client.status():
                        say("  " + json.dumps(row, default=str))
                replicator.stop()
                await task
                await Replicator(server.repl_dsn, target, database="shop", client=replicator.client).run(
                    until_caught_up=True
                )
                if replicator.client is not None:
                    await replicator.client.aclose()
                report = await verify(server.repl_dsn, target, databases=["shop"])
                print(report.render_text(), file=out, flush=True)
                rows_now = await target.query("SELECT count() FROM shop.orders FINAL WHERE _sign = 1")
                verdict = "EQUAL" if report.equal else "DIFFERENT"
                say(f"ClickHouse now holds {rows_now[0][0]} live orders; verify: {verdict}")
                return 0 if report.equal else 1
            finally:
                stop_writer.set()
                if not writer.done():
                    writer.cancel()
                await target.aclose()
        finally:
            server.stop()
