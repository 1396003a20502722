"""A sink of its own: replicate a MySQL/MariaDB database into SQLite, exactly once (docs/architecture.md, "Writing a
sink").

Each MySQL table becomes rows of one SQLite table ``rows(tbl, pk, row)`` (the primary key and the whole row as JSON);
the checkpoint lives in the same SQLite file and is written in the same SQLite transaction as the rows it covers,
which is all the exactly-once contract asks of a :class:`mybinlog.replication.TransactionalSink`.

    python examples/sqlite_sink.py mysql://repl:secret@127.0.0.1:3306 shop /var/lib/shop.sqlite

Stop it with Ctrl-C (or SIGTERM); kill it at any moment: the next start goes on from the last committed batch.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import decimal
import json
import os
import signal
import sqlite3
import sys
from collections.abc import Sequence
from typing import Any

from mybinlog.ddl import TableDef
from mybinlog.replication import (
    Checkpoint,
    Replicator,
    RowChange,
    Transaction,
    TransactionalSink,
    checkpoint_from,
    checkpoint_json,
)


def to_json(value: Any) -> Any:
    """A value of a row (as the binlog decoder or the driver gives it) as JSON: exact text for the rest."""
    if isinstance(value, bytes | bytearray):
        return {"b64": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, decimal.Decimal | dt.date | dt.datetime | dt.time | dt.timedelta):
        return str(value)
    if isinstance(value, set | frozenset):
        return sorted(value)
    return value


def row_json(row: dict[str, Any]) -> str:
    return json.dumps({k: to_json(v) for k, v in row.items()}, sort_keys=True, default=str)


class SqliteSink(TransactionalSink):
    def __init__(self, path: str, replica: str) -> None:
        super().__init__()
        self.path = os.path.realpath(path)
        self.replica = replica
        self.description = f"SQLite {self.path}"
        self.db = sqlite3.connect(self.path, isolation_level=None)  # transactions are ours (BEGIN ... COMMIT)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("CREATE TABLE IF NOT EXISTS rows (tbl TEXT, pk TEXT, row TEXT, PRIMARY KEY (tbl, pk))")
        self.db.execute("CREATE TABLE IF NOT EXISTS checkpoint (replica TEXT PRIMARY KEY, state TEXT)")
        self.keys: dict[str, list[str]] = {}  # table -> its primary key columns
        self.columns: dict[str, list[str]] = {}  # table -> its columns

    def _pk(self, table: str, row: dict[str, Any]) -> str:
        key = self.keys.get(table) or sorted(row)  # no primary key: the whole row
        return json.dumps([to_json(row.get(c)) for c in key], default=str)

    async def identity(self) -> str:
        return f"sqlite:{self.path}"

    async def read_checkpoint(self) -> Checkpoint | None:
        found = self.db.execute("SELECT state FROM checkpoint WHERE replica = ?", (self.replica,)).fetchone()
        if found is None:
            return None
        cp = checkpoint_from(json.loads(found[0]))
        for text in cp.tables.values():  # the key columns of the tables the checkpoint knows
            from mybinlog.ddl import parse_create_table

            definition = parse_create_table(text, "")
            self.keys[definition.name] = list(definition.primary_key)
            self.columns[definition.name] = [c.name for c in definition.columns]
        return cp

    def _apply(self, changes: Sequence[RowChange]) -> None:
        for change in changes:
            if change.before is not None and change.op in ("u", "d"):
                self.db.execute(
                    "DELETE FROM rows WHERE tbl = ? AND pk = ?", (change.table, self._pk(change.table, change.before))
                )
            if change.after is not None:
                self.db.execute(
                    "INSERT OR REPLACE INTO rows VALUES (?, ?, ?)",
                    (change.table, self._pk(change.table, change.after), row_json(change.after)),
                )

    async def write(self, transactions: Sequence[Transaction], checkpoint: Checkpoint) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            for txn in transactions:
                self._apply(txn.changes)
            state = json.dumps(checkpoint_json(checkpoint))
            self.db.execute("INSERT OR REPLACE INTO checkpoint VALUES (?, ?)", (self.replica, state))
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    async def write_rows(self, table: TableDef, changes: Sequence[RowChange]) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        self._apply(changes)
        self.db.execute("COMMIT")

    async def schema_change(self, kind: str, name: str, definition: TableDef | None) -> str | None:
        if kind == "alter" and definition is not None:
            old = set(self.columns.get(name, []))
            added = [c for c in definition.columns if c.name not in old]
            if any(not (c.default_kind == "null" or (c.default_kind == "none" and c.nullable)) for c in added):
                # existing rows would need the default's value: say so (the replicator stops this table loudly)
                return "this example cannot fill a new column's DEFAULT into existing rows"
            new = [c.name for c in definition.columns]
            rows = self.db.execute("SELECT pk, row FROM rows WHERE tbl = ?", (name,)).fetchall()
            for pk, text in rows:
                row = json.loads(text)
                self.db.execute(
                    "UPDATE rows SET row = ? WHERE tbl = ? AND pk = ?",
                    (json.dumps({c: row.get(c) for c in new}, sort_keys=True), name, pk),
                )
        if definition is not None:
            self.keys[definition.name] = list(definition.primary_key)
            self.columns[definition.name] = [c.name for c in definition.columns]
        if kind in ("drop", "truncate", "create"):  # a created table starts empty (a replayed CREATE too)
            self.db.execute("DELETE FROM rows WHERE tbl = ?", (name,))
        elif kind == "rename" and definition is not None:
            self.db.execute("UPDATE rows SET tbl = ? WHERE tbl = ?", (definition.name, name))
        return None


async def main(dsn: str, database: str, path: str) -> None:
    sink = SqliteSink(path, replica=database)
    replicator = Replicator(dsn, sink, database=database)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, replicator.stop)
    await replicator.run()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
