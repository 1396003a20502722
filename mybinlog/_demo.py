"""``mybinlog demo``: a throwaway MariaDB, a writer, and the decoded change stream, with zero setup."""

from __future__ import annotations

import asyncio
import random
import sys
import tempfile
from pathlib import Path
from typing import TextIO

import asyncmy

from ._format import event_to_json, event_to_text
from ._protocol._events import RowsEvent
from ._stream import BinlogStream

__all__ = ["run_demo"]

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


async def run_demo(transactions: int, fmt: str, out: TextIO) -> None:
    from ._sandbox import MariaDBServer

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
