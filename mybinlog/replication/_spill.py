"""Transactions bigger than ``max_bytes_in_transaction``: past half of it their rows spill to a file, and at their
COMMIT go to the target in chunks of a quarter of it, before the checkpoint moves past the whole transaction
(docs/replication.md, "Memory and big transactions").

Why a spill file and chunks at COMMIT rather than chunks written while the transaction is read: the checkpoint and
the collapsing engine's ``pending`` announcement need the transaction's end, which is known only at its COMMIT; with
the rows on disk until then, a big transaction is one ordinary batch (announced, written, checkpointed) that happens
to take several inserts per table, and a crash anywhere in it replays it from the checkpoint before it like any
other batch.

Versions: one transaction's rows normally share the version of its end. Chunks of one transaction may hold the same
key twice (changed in two chunks), so a replay that writes an earlier chunk again must not win over a later one: a
spilled transaction's rows get the version of the position ``start + n`` (``start``: the boundary before the
transaction, ``n``: the rows event's ordinal in it), above every earlier transaction's end and below this one's end
(every rows event takes more than one byte of the binlog), so below every later transaction's; the same on every
replay. Collapsing tables take each chunk's insert with a deduplication token named after the transaction and the
chunk (targets without tokens, ClickHouse before 22.2, keep such a transaction in memory: see the docs).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import pickle
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any, Protocol

from .. import _failpoints
from ..protocol import BinlogPosition
from ._batch import Change, Entry, add_transaction, table_payload
from ._observe import count_batch

if TYPE_CHECKING:
    from ..clickhouse import Checkpoint, Target
    from ._settings import ReplicaStatus, ReplicationSettings
    from ._sink import Guard


class _ChunkTable(Protocol):
    """What the chunks read of a table (``_clickhouse.ClickHouseTable``)."""

    @property
    def name(self) -> str: ...

    @property
    def ch_table(self) -> str: ...

    @property
    def insert_columns(self) -> list[str]: ...

    def layout(self, names: tuple[str | None, ...]) -> Any: ...


class _ChunkSink(Protocol):
    """What the chunks read of the sink (``_clickhouse.ClickHouseSink``)."""

    @property
    def replica(self) -> str: ...

    @property
    def target(self) -> Target: ...

    @property
    def settings(self) -> ReplicationSettings: ...

    @property
    def status(self) -> ReplicaStatus: ...

    @property
    def tables(self) -> Mapping[str, Any]: ...

    @property
    def replay_until(self) -> BinlogPosition | None: ...

    @property
    def version_base(self) -> int: ...


__all__ = ["ROW_OVERHEAD", "Spill", "entry_bytes", "give_memory_back", "write_spilled"]

logger = logging.getLogger("mybinlog.replication")

# bytes of Python objects per row image held (the str, list slots, the key, the batch's change tuple), beside its
# text: measured, a 1M-row UPDATE held whole costs about 2 x (text + 200) per row
ROW_OVERHEAD = 200


def entry_bytes(entry: Entry) -> int:
    """What a transaction entry holds in memory, about: its images' text plus a fixed overhead per image."""
    _table, _kb, b, _ka, a = entry
    size = 0
    for images in (b, a):
        if images is not None:
            size += sum(map(len, images)) + ROW_OVERHEAD * len(images)
    return size


class Spill:
    """The entries of one transaction, pickled to an unnamed temporary file (removed when closed or when the
    process dies), each with its ordinal in the transaction."""

    def __init__(self) -> None:
        self._file: IO[bytes] = tempfile.TemporaryFile(prefix="mybinlog-txn-")  # noqa: SIM115 (closed by close())
        self.count = 0  # entries written
        self.bytes = 0  # bytes written to the file

    def add(self, entries: Sequence[Entry]) -> None:
        dump = pickle.dump
        f = self._file
        for table, kb, b, ka, a in entries:
            self.count += 1
            dump((table.name, self.count, kb, b, ka, a), f, protocol=pickle.HIGHEST_PROTOCOL)
        self.bytes = f.tell()

    def read(self) -> Iterator[tuple[str, int, Any, Any, Any, Any]]:
        f = self._file
        f.flush()
        f.seek(0)
        load = pickle.load
        while True:
            try:
                yield load(f)
            except EOFError:
                return

    def close(self) -> None:
        self._file.close()


def chunks(
    spill: Spill, tables: dict[str, _ChunkTable], limit: int, version_of: Any
) -> Iterator[dict[str, dict[Any, Change]]]:
    """The spilled transaction as batches (table -> key -> net change) of about ``limit`` bytes, in order; a rows
    event is never split (its rows may change one key twice)."""
    batch: dict[str, dict[Any, Change]] = {}
    size = 0
    for name, n, kb, b, ka, a in spill.read():
        table = tables.get(name)
        if table is None:
            continue
        entry: Entry = (table, kb, b, ka, a)
        add_transaction(batch, (entry,), version_of(n))
        size += entry_bytes(entry)
        if size >= limit:
            yield batch
            batch, size = {}, 0
    if batch:
        yield batch


async def write_spilled(
    sink: _ChunkSink,
    cp: Checkpoint,
    leader: Guard,
    spill: Spill,
    start: BinlogPosition,
    end: BinlogPosition,
    version: int,
) -> None:
    """Write the chunks of the spilled transaction that ended at ``end`` (its end's version ``version``), after the
    complete transactions before it (their checkpoint: the caller's); the checkpoint at ``end`` follows (the
    caller's flush)."""
    collapsing = sink.settings.engine == "collapsing"
    first = start.offset if start.file == end.file else 0

    def version_of(n: int) -> int:
        # the position start + n: above the transaction before, below this one's end (see the module docstring)
        return version - ((end.offset - min(first + n, end.offset)) << 1)

    tables = dict(sink.tables)
    # a chunk's changes, its encoded payload and the target's copy of it: a quarter of the bound each, about
    limit = max(sink.settings.max_bytes_in_transaction // 4, 1)
    logger.info(
        "%s: the transaction ending at %s spilled %d MB to disk (max_bytes_in_transaction); writing it in chunks",
        sink.replica, end, spill.bytes >> 20)  # fmt: skip
    announced = False
    status = sink.status
    for i, batch in enumerate(chunks(spill, tables, limit, version_of)):
        if collapsing and not announced and cp.pending is None and sink.replay_until is None:
            cp.pending = end
            cp.version_base = sink.version_base
            await leader.save(cp)
            announced = True
        written = 0
        for name, changes in batch.items():
            table = tables[name]
            data, lines = table_payload(changes.values(), sink.settings.engine)
            if not lines:
                continue
            token = None
            if collapsing:
                token = f"{sink.replica}:{start.file}:{start.offset}-{end.file}:{end.offset}:{name}:chunk{i}"
            await leader.confirm()
            await sink.target.insert_tsv(table.ch_table, table.insert_columns, data, dedup_token=token)
            leader.wrote(f"an insert into {table.ch_table}")
            written += lines
            del data
        count_batch(status.rows_by_table, batch, tables)
        status.rows_written += written
        del batch
        if _failpoints.ACTIVE:
            _failpoints.reached("transaction.after_chunk")
    spill.close()


_trim: Any = None


def give_memory_back() -> None:
    """Return the freed heap to the operating system (glibc keeps it otherwise), after a big transaction."""
    global _trim
    if _trim is None:
        _trim = False
        name = ctypes.util.find_library("c")
        if name:
            try:
                _trim = ctypes.CDLL(name).malloc_trim
            except (OSError, AttributeError):
                _trim = False
    if _trim:
        _trim(0)
