"""Durable consumers of one shared binlog connection: each one saves what it received together with its position.

A consuming process like a real one: several consumers share one connection (``mybinlog.get_binlog_client``),
each appends one JSON line per completed transaction to ``STATE_DIR/<name>.jsonl`` (the transaction's GTID, its
rows, its DDL, and the position after it), and resumes after a restart, a crash (``kill -9``) or a detach from
the last complete line. The data and the position are in the same line, so they cannot disagree: nothing is lost
and nothing is written twice. The process serves its status rows for ``mybinlog status --from ADDRESS``.

Usage::

    python examples/checkpointed_consumers.py --dsn mysql://repl:secret@127.0.0.1:3306 --state-dir ./state \\
        --start 0-1-100 --database shop --status unix:./state/status.sock \\
        --consumer search --consumer audit:1048576:1000 --consumer slow:10:10:100:50

``--consumer NAME[:MAX_BYTES[:MAX_WAIT_MS[:PAUSE_EVERY:PAUSE_MS]]]``: ``max_bytes_in_binlog_queue`` and
``max_milliseconds_to_wait_in_binlog_queue`` of that consumer; ``PAUSE_EVERY:PAUSE_MS`` makes it deliberately slow
(it stops for PAUSE_MS after every PAUSE_EVERY transactions), so that it gets detached and comes back.
``--start`` is where a consumer without saved state begins (an executed GTID set). SIGTERM/SIGINT stop cleanly.

Line format (one JSON object per line):
``{"gtid": "0-1-7", "gtid_set": "0-1-7", "file": "binlog.000001", "offset": 1234, "rows": [[table, kind, rows]],
"queries": ["ALTER TABLE ..."]}`` for a transaction, ``{"event": "start" | "detached", ...}`` otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mybinlog


@dataclass(frozen=True)
class ConsumerSpec:
    name: str
    max_bytes: int = 64 << 20
    max_wait_ms: int = 10_000
    pause_every: int = 0
    pause_ms: int = 0

    @classmethod
    def parse(cls, text: str) -> ConsumerSpec:
        parts = text.split(":")
        numbers = [int(p) for p in parts[1:]]
        if not parts[0] or len(numbers) not in (0, 1, 2, 4):
            raise argparse.ArgumentTypeError(f"--consumer {text!r}: NAME[:MAX_BYTES[:MAX_WAIT_MS[:EVERY:MS]]]")
        return cls(parts[0], *numbers)


def load_state(path: Path) -> tuple[str | None, int]:
    """(executed GTID set of the last complete transaction line, number of transaction lines).

    A line cut by a crash is removed, so that appending goes on after the last complete line.
    """
    if not path.exists():
        return None, 0
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data):
        with path.open("r+b") as f:
            f.truncate(end)
    executed = None
    count = 0
    for line in data[:end].splitlines():
        record = json.loads(line)
        if "gtid_set" in record:
            executed = record["gtid_set"]
            count += 1
    return executed, count


def rows_json(rows: list[Any]) -> Any:
    return json.loads(json.dumps(rows, default=str))


async def consume(
    client: mybinlog.BinlogClient,
    spec: ConsumerSpec,
    path: Path,
    start: str,
    databases: list[str] | None,
    fsync: bool,
) -> None:
    executed, done = await asyncio.to_thread(load_state, path)
    binlog = await client.create_binlog(
        name=spec.name,
        executed_gtid_set=executed if executed is not None else start,
        databases=databases,
        max_bytes_in_binlog_queue=spec.max_bytes,
        max_milliseconds_to_wait_in_binlog_queue=spec.max_wait_ms,
    )
    with path.open("a", encoding="utf-8") as out:

        def write(record: dict[str, Any]) -> None:
            out.write(json.dumps(record, default=str) + "\n")
            out.flush()
            if fsync:
                os.fsync(out.fileno())

        dispatcher = binlog.dispatcher
        write({"event": "start", "at": executed, "dispatcher": dispatcher.name if dispatcher else None})
        try:
            while True:
                try:
                    async for txn in binlog.transactions():  # whole transactions, with the position after each
                        record: dict[str, Any] = {"gtid": str(txn.gtid), "rows": [], "queries": []}
                        for event in txn.events:
                            if isinstance(event, mybinlog.RowsEvent):
                                record["rows"].append([event.table_name, event.kind, rows_json(event.rows)])
                            elif isinstance(event, mybinlog.QueryEvent) and event.query not in ("BEGIN", "COMMIT"):
                                record["queries"].append(event.query)
                        position = txn.position
                        record.update(gtid_set=str(position.gtid_set), file=position.file, offset=position.offset)
                        write(record)
                        done += 1
                        if spec.pause_every and done % spec.pause_every == 0:
                            await asyncio.sleep(spec.pause_ms / 1000)  # a deliberately slow sink
                    return  # a non-blocking source ended
                except mybinlog.BinlogDetachedError as exc:
                    # what was written is complete; the open transaction is delivered again, whole, after reopen()
                    write({"event": "detached", "at": str(exc.position.gtid_set if exc.position else None)})
                    binlog = await binlog.reopen()
        finally:
            await binlog.aclose()


async def main(args: argparse.Namespace) -> int:
    state = Path(args.state_dir)
    client = mybinlog.get_binlog_client(args.dsn, stream_options={"heartbeat_period": args.heartbeat})
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    status = mybinlog.serve_status(args.status) if args.status else None  # the default factory's consumers
    try:
        if status is not None:
            await status.start()
        async with asyncio.TaskGroup() as tg:
            tasks = [
                tg.create_task(
                    consume(client, spec, state / f"{spec.name}.jsonl", args.start, args.database, args.fsync)
                )
                for spec in args.consumer
            ]
            stopper = tg.create_task(stop.wait())
            await asyncio.wait([*tasks, stopper], return_when=asyncio.FIRST_COMPLETED)
            for task in [*tasks, stopper]:
                task.cancel()
    finally:
        if status is not None:
            await status.aclose()
        await client.aclose()
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", required=True, help="mysql://user:password@host:port (replication user)")
    parser.add_argument("--state-dir", required=True, help="where the consumers' JSON Lines files live")
    parser.add_argument("--start", default="", help="executed GTID set for consumers without saved state")
    parser.add_argument("--database", action="append", help="only rows of these databases (repeatable)")
    parser.add_argument("--consumer", action="append", type=ConsumerSpec.parse, required=True)
    parser.add_argument("--status", help="serve the status rows here, e.g. unix:./state/status.sock")
    parser.add_argument(
        "--heartbeat", type=float, default=5.0, help="seconds between server heartbeats while idle (default 5)"
    )
    parser.add_argument("--fsync", action="store_true", help="fsync each line (survive a machine crash too)")
    return parser.parse_args(argv)


if __name__ == "__main__":
    arguments = parse_args()
    Path(arguments.state_dir).mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(asyncio.run(main(arguments)))
