"""The sink interface: what a :class:`~mybinlog.replication.Replicator` needs from where it writes a replica.

The replicator owns everything on the source's side: the binlog consumer, transaction boundaries, prepared XA
transactions, the tables in scope and their MySQL definitions (the ``mybinlog.ddl`` model, followed through every
DDL), when a batch ends (``max_rows_in_buffer``, ``max_bytes_in_buffer``, ``max_flush_data_time``, a DDL, a stop),
the replica lock and the leader epoch (:class:`~._leader.Leader`), retries. A sink owns everything on the replica's
side: how rows are encoded and held, how a batch is written, where the checkpoint lives, how its tables follow a
DDL. :class:`~._clickhouse.ClickHouseSink` is the first implementation; docs/architecture.md ("Writing a sink")
shows a small one and the contract.

The exactly-once contract, in the order the replicator calls:

1. ``identity()`` names where the replica lives: two processes that would write the same replica must get the
   same string (the replica lock on the source is named after it and the replica's name).
2. ``read_checkpoint()`` returns the newest :class:`~mybinlog.clickhouse.Checkpoint` that ``save_checkpoint``
   saved (also one whose ``loading`` is set), or None; ``newest_epoch()`` the epoch of the newest one.
3. ``resume(checkpoint, leader)``: the replicator reads again from ``checkpoint.position``; whatever the sink wrote
   after it (a batch whose checkpoint was not saved) comes again, the same transactions in the same order, and the
   sink makes that replay exact (ClickHouse: row versions, or a tail delete; a transactional store: nothing, the
   uncommitted batch is gone). ``replay_until`` may name the end of a batch that must be written again exactly as
   it was (the replicator then flushes there and only there).
4. ``table(definition)`` gives the sink's view of a table; ``rows(table, event)`` adds one rows event to the
   transaction being read; ``commit(start, end)`` ends it (its position ``end``; True: flush now, e.g. it was too
   big to hold); ``rollback()`` drops it. ``take()``/``extend()`` move a transaction's entries out and back (a
   prepared XA transaction, applied at its COMMIT; ``table(...).entry(event)`` makes such entries).
5. ``flush(checkpoint, xa, leader, wait=...)`` writes everything committed since the last flush and then the
   checkpoint at the last transaction's end, as one unit: after a crash anywhere in it, ``read_checkpoint``
   returns the previous checkpoint (and 3. makes the replay exact) or this one. Every write is preceded by
   ``leader.confirm()`` and every checkpoint saved through ``leader.save()`` (which calls ``save_checkpoint`` in
   the leader's epoch). With ``wait=False`` the writes may go on in a task: ``settle()`` waits for them (and raises
   their error), ``writing``/``writing_done`` say whether one is in flight/finished; ``reset()`` forgets what was
   not written. ``buffered`` is (rows, bytes) held, for the replicator's batch limits.
6. DDL: ``create_table``, ``drop_table``, ``rename_table``, ``truncate_table``, ``alter_table`` (a reason when the
   sink cannot follow: the replicator then stops that table, loudly, and goes on with the others) and
   ``redefine`` (the MySQL definition changed); ``check_table`` refuses a table before the load. The replicator
   flushes before a DDL and saves a checkpoint after it. A DDL replayed after a crash must be harmless.
7. The initial load: ``prepare_load(names, leftovers, leader)`` checks where the tables go (a first load needs
   them empty) and drops what an unfinished load left; the replicator reads each table inside one consistent
   snapshot of the source and calls ``load_payload(table, rows, position)`` (encode) and
   ``load_write(table, payload)`` (write); ``existing_tables()`` lists what is there.

``tables`` is set by the replicator: the replica's tables now (name -> the sink's table); ``flavor`` too (the
source's: ``"mysql"`` or ``"mariadb"``); ``check()`` refuses settings the sink cannot serve before anything is
written; ``description`` names the sink in logs and errors (never a password).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import datetime as dt

    from .._checkpoint import Checkpoint
    from ..ddl import TableDef
    from ..protocol import BinlogPosition, RowsEvent

__all__ = ["Guard", "Sink", "SinkTable"]


class Guard(Protocol):
    """What a sink uses of the replica's leader (``_leader.Leader``): confirm the lock before each write, report a
    write, save a checkpoint in the leader's epoch."""

    epoch: int
    saves: int

    async def confirm(self) -> None: ...

    def wrote(self, what: str) -> None: ...

    async def save(self, cp: Checkpoint) -> None: ...


class SinkTable(Protocol):
    """One replicated table as a sink writes it (made by :meth:`Sink.table`)."""

    name: str
    definition: TableDef

    def entry(self, event: RowsEvent) -> Any | None:
        """What the sink holds for one rows event of this table (None: nothing to write)."""
        ...


@runtime_checkable
class Sink(Protocol):
    """Where a replicator writes (see the module docstring for the contract)."""

    @property
    def description(self) -> str: ...

    tables: Mapping[str, Any]  # set by the replicator: name -> the sink's table (SinkTable)
    flavor: str  # set by the replicator: the source's flavour

    def check(self) -> None: ...

    # -- identity, checkpoints, the replay ----------------------------------------------------------------------
    async def identity(self) -> str: ...

    async def read_checkpoint(self) -> Checkpoint | None: ...

    async def newest_epoch(self) -> int: ...

    async def save_checkpoint(self, cp: Checkpoint) -> None: ...

    async def resume(self, cp: Checkpoint, leader: Guard) -> None: ...

    @property
    def replay_until(self) -> BinlogPosition | None: ...

    # -- transactions and batches -----------------------------------------------------------------------------
    def table(self, definition: TableDef) -> Any: ...

    def rows(self, table: Any, event: RowsEvent, *, may_spill: bool = True) -> None: ...

    def take(self) -> list[Any]: ...

    def entry_bytes(self, entry: Any) -> int:
        """About what one entry of :meth:`take` holds in memory (prepared XA transactions are bounded with it)."""
        ...

    def extend(self, entries: Sequence[Any]) -> None: ...

    def rollback(self) -> None: ...

    async def commit(self, start: BinlogPosition | None, end: BinlogPosition) -> bool: ...

    @property
    def buffered(self) -> tuple[int, int]: ...

    async def flush(self, cp: Checkpoint, xa: dict[str, Any], leader: Guard, *, wait: bool = True) -> None: ...

    async def settle(self) -> None: ...

    @property
    def writing(self) -> bool: ...

    @property
    def writing_done(self) -> bool: ...

    async def reset(self, *, cancel: bool = False) -> None: ...

    # -- DDL -------------------------------------------------------------------------------------------------------
    def check_table(self, definition: TableDef) -> None: ...

    async def create_table(self, definition: TableDef) -> None: ...

    async def drop_table(self, name: str) -> None: ...

    async def rename_table(self, table: Any, new: TableDef) -> None: ...

    async def truncate_table(self, table: Any) -> None: ...

    async def alter_table(
        self, table: Any, old: TableDef, new: TableDef, action: Any, statement_time: dt.datetime | None
    ) -> str | None: ...

    def redefine(self, table: Any, definition: TableDef) -> None: ...

    # -- the initial load -------------------------------------------------------------------------------------
    async def prepare_load(self, names: Sequence[str], leftovers: Sequence[str], leader: Guard) -> None: ...

    async def existing_tables(self) -> set[str]: ...

    def load_payload(self, table: Any, rows: list[tuple[Any, ...]], position: BinlogPosition) -> Any: ...

    async def load_write(self, table: Any, payload: Any) -> None: ...
