"""A base for sinks that commit a batch and its checkpoint in one transaction of their own (a SQL database, Kafka).

Subclass :class:`TransactionalSink` and write four methods: :meth:`~TransactionalSink.identity`,
:meth:`~TransactionalSink.read_checkpoint`, :meth:`~TransactionalSink.write` (the changes of some whole
transactions, in binlog order, and the checkpoint after them, atomically) and, for the initial load,
:meth:`~TransactionalSink.write_rows`; optionally :meth:`~TransactionalSink.schema_change`. Everything else the
replicator asks of a :class:`~._sink.Sink` is done here: rows events become :class:`RowChange` values (column name
-> the value as the binlog decoder gives it: docs/source-layer.md, "Values"), whole transactions are held until the
replicator ends the batch, the checkpoint carries the leader's epoch.

Exactly-once follows from the atomic ``write``: a crash before it commits leaves the previous checkpoint and none of
the batch (the replicator reads the batch again); after it, both. A replay is therefore never partial, and
:meth:`resume` has nothing to do. docs/architecture.md, "Writing a sink", has a complete example.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .._checkpoint import Checkpoint, make_seq
from ..protocol import (
    BinlogPosition,
    DeleteRowsEvent,
    PartialUpdateRowsEvent,
    RowsEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)
from ._batch import whole_json_documents

if TYPE_CHECKING:
    from ..ddl import TableDef
    from ._settings import ReplicaStatus
    from ._sink import Guard

__all__ = ["RowChange", "TransactionalSink", "Transaction"]

Op = Literal["c", "u", "d", "r"]


@dataclass(frozen=True, slots=True)
class RowChange:
    """One row changed: ``op`` is ``"c"`` (insert), ``"u"`` (update), ``"d"`` (delete) or ``"r"`` (read by the
    initial load); ``before``/``after`` map column names to values (None where the op has no such image)."""

    table: str
    op: Op
    before: dict[str, Any] | None
    after: dict[str, Any] | None


@dataclass(slots=True)
class Transaction:
    """The row changes of one source transaction, in binlog order, the position where it ends and its GTID
    (``uuid:n`` on MySQL, ``domain-server-seq`` on MariaDB; None without GTIDs)."""

    end: BinlogPosition
    changes: list[RowChange] = field(default_factory=list)
    gtid: str | None = None


class _Table:
    """A table as :class:`TransactionalSink` sees it: its definition, and rows events -> :class:`RowChange`."""

    def __init__(self, definition: TableDef) -> None:
        self.define(definition)

    def define(self, definition: TableDef) -> None:
        self.definition = definition
        self.name = definition.name
        self.names = [c.name for c in definition.columns]

    def _columns(self, event: RowsEvent) -> list[str]:
        names = event.columns
        if names and all(n is not None for n in names):
            return [str(n) for n in names]
        return self.names[: len(names)] if names else self.names  # no names in the binlog: by position

    def entry(self, event: RowsEvent) -> list[RowChange] | None:
        rows = event.rows
        if not rows:
            return None
        cols = self._columns(event)
        name = self.name
        if isinstance(event, UpdateRowsEvent):
            befores = [pair[0] for pair in rows]
            afters = [pair[1] for pair in rows]
            if isinstance(event, PartialUpdateRowsEvent):
                afters = whole_json_documents(event, befores, afters)
            return [
                RowChange(name, "u", dict(zip(cols, b, strict=False)), dict(zip(cols, a, strict=False)))
                for b, a in zip(befores, afters, strict=True)
            ]
        if isinstance(event, WriteRowsEvent):
            return [RowChange(name, "c", None, dict(zip(cols, r, strict=False))) for r in rows]
        if isinstance(event, DeleteRowsEvent):
            return [RowChange(name, "d", dict(zip(cols, r, strict=False)), None) for r in rows]
        return None


_ROW_BYTES = 200  # what one held row change costs, about (the buffer limits count it)


class TransactionalSink:
    """Base class of a sink whose store commits a batch and its checkpoint atomically (see the module docstring)."""

    description = "a transactional sink"

    def __init__(self) -> None:
        self.tables: Mapping[str, Any] = {}
        self.flavor = "mariadb"
        self.status: ReplicaStatus | None = None
        self._txn: list[RowChange] = []
        self._batch: list[Transaction] = []
        self._rows = 0
        self._end: BinlogPosition | None = None
        self.gtid: str | None = None  # the GTID of the transaction being read (set by the replicator)

    # -- what a subclass writes ------------------------------------------------------------------------------
    async def identity(self) -> str:
        """Where the replica lives, the same for every process that would write it (the replica lock's name)."""
        raise NotImplementedError

    async def read_checkpoint(self) -> Checkpoint | None:
        """The checkpoint the last successful :meth:`write` stored (``mybinlog.replication.checkpoint_from`` reads
        what ``checkpoint_json`` made), or None."""
        raise NotImplementedError

    async def write(self, transactions: Sequence[Transaction], checkpoint: Checkpoint) -> None:
        """Atomically: apply the changes of ``transactions`` (in order) and store ``checkpoint``
        (``checkpoint.position`` is the last transaction's end; ``transactions`` may be empty: a checkpoint alone)."""
        raise NotImplementedError

    async def write_rows(self, table: TableDef, changes: Sequence[RowChange]) -> None:
        """The initial load: existing rows of ``table`` (``op == "r"``), read in one consistent snapshot of the
        source; the replicator saves the checkpoint at that snapshot after the last table (a crash before it makes
        the next start drop the load's tables and load again)."""
        raise NotImplementedError

    async def schema_change(self, kind: str, name: str, definition: TableDef | None) -> str | None:
        """A table was created, altered, renamed (``name`` is the old name), truncated or dropped (``kind``:
        ``"create"``, ``"alter"``, ``"rename"``, ``"truncate"``, ``"drop"``; ``definition`` the table after it, None
        for a drop). Returns a reason when the store cannot follow (the replicator stops that table loudly)."""
        return None

    # -- the Sink protocol ----------------------------------------------------------------------------------
    def check(self) -> None:
        return None

    async def newest_epoch(self) -> int:
        cp = await self.read_checkpoint()
        return cp.epoch if cp is not None else 0

    async def save_checkpoint(self, cp: Checkpoint) -> None:
        await self.write([], cp)

    async def resume(self, cp: Checkpoint, leader: Guard) -> None:
        self.reset_buffers()

    @property
    def replay_until(self) -> BinlogPosition | None:
        return None  # a batch is never partly written

    def table(self, definition: TableDef) -> _Table:
        return _Table(definition)

    def rows(self, table: _Table, event: RowsEvent, *, may_spill: bool = True) -> None:
        changes = table.entry(event)
        if changes:
            self._txn.extend(changes)

    def entry_bytes(self, entry: Any) -> int:
        return len(entry) * _ROW_BYTES  # an entry of take(): a transaction's row changes

    def take(self) -> list[Any]:
        changes, self._txn = self._txn, []
        return [changes]

    def extend(self, entries: Sequence[Any]) -> None:
        for changes in entries:
            self._txn.extend(changes)

    def rollback(self) -> None:
        self._txn = []

    async def commit(self, start: BinlogPosition | None, end: BinlogPosition) -> bool:
        changes, self._txn = self._txn, []
        if changes:
            self._batch.append(Transaction(end, changes, self.gtid))
            self._rows += len(changes)
        self._end = end
        return False

    @property
    def buffered(self) -> tuple[int, int]:
        return self._rows, self._rows * _ROW_BYTES

    async def flush(self, cp: Checkpoint, xa: dict[str, Any], leader: Guard, *, wait: bool = True) -> None:
        end = self._end
        if end is None or (end == cp.position and not self._batch):
            return
        batch, self._batch, rows, self._rows = self._batch, [], self._rows, 0
        await leader.confirm()
        cp.position, cp.xa, cp.pending, cp.written = end, xa, None, []
        if cp.epoch < leader.epoch:
            cp.seq = make_seq(leader.epoch, 0)
        await self.write(batch, cp)
        leader.wrote(f"the batch ending at {end}")
        leader.saves += 1
        status = self.status
        if status is not None:
            status.rows_written += rows
            status.batches += 1
            status.checkpoint_time = dt.datetime.now(dt.UTC).timestamp()
            if status.state == "retrying":
                status.state = "streaming"

    async def settle(self) -> None:
        return None

    @property
    def writing(self) -> bool:
        return False

    @property
    def writing_done(self) -> bool:
        return False

    def reset_buffers(self) -> None:
        self._txn, self._batch, self._rows, self._end = [], [], 0, None

    async def reset(self, *, cancel: bool = False) -> None:
        self.reset_buffers()

    def check_table(self, definition: TableDef) -> None:
        return None

    async def create_table(self, definition: TableDef) -> None:
        await self._follow("create", definition.name, definition)

    async def drop_table(self, name: str) -> None:
        await self._follow("drop", name, None)

    async def rename_table(self, table: _Table, new: TableDef) -> None:
        await self._follow("rename", table.name, new)
        table.define(new)

    async def truncate_table(self, table: _Table) -> None:
        await self._follow("truncate", table.name, table.definition)

    async def alter_table(
        self, table: _Table, old: TableDef, new: TableDef, action: Any, statement_time: dt.datetime | None
    ) -> str | None:
        return await self.schema_change("alter", table.name, new)

    def redefine(self, table: _Table, definition: TableDef) -> None:
        table.define(definition)

    async def _follow(self, kind: str, name: str, definition: TableDef | None) -> None:
        reason = await self.schema_change(kind, name, definition)
        if reason is not None:
            raise ValueError(f"{self.description} cannot {kind} {name}: {reason}")

    async def prepare_load(self, names: Sequence[str], leftovers: Sequence[str], leader: Guard) -> None:
        for name in leftovers:
            await leader.confirm()
            await self.drop_table(name)

    async def existing_tables(self) -> set[str]:
        return set()

    def load_payload(self, table: _Table, rows: list[tuple[Any, ...]], position: BinlogPosition) -> list[RowChange]:
        cols = table.names
        return [RowChange(table.name, "r", None, dict(zip(cols, row, strict=False))) for row in rows]

    async def load_write(self, table: _Table, payload: list[RowChange]) -> None:
        await self.write_rows(table.definition, payload)
