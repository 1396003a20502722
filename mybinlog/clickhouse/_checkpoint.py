"""Replication checkpoints, stored in ClickHouse beside the data they cover.

The :class:`~mybinlog._checkpoint.Checkpoint` record and its leader epochs are every sink's
(``mybinlog/_checkpoint.py``); this module is how ClickHouse stores it: the tables, their SQL, the row.

A checkpoint says: every transaction up to ``position`` is in the replica, and the replicated tables had these
schemas at that point. It is written only after the data it covers has been inserted (and after every DDL), as one
single-row insert (atomic in ClickHouse) into ``<meta_database>.checkpoints``, a ReplacingMergeTree keyed by replica
with an increasing ``seq``. ``pending`` records a batch that is about to be inserted (its end position): after a
crash, the replicator replays exactly that batch first, so collapsing tables can deduplicate or roll it back.

More states share the row:

* ``loading``: the replica's built-in initial load has started and not finished; the list names every ClickHouse
  table it may have written. A replicator that finds it drops those tables and loads again (a load is never
  resumed: rows deleted at the source meanwhile would stay). :func:`load_checkpoint` returns such a row only when
  asked (``include_loading=True``): for everyone else the replica has no checkpoint yet.
* ``xa``: the prepared XA transactions the position has passed whose COMMIT or ROLLBACK has not come yet, with the
  position to read each again from the binlog (``_xa.py``, docs/replication.md "XA transactions").
* ``tables`` (the CREATE TABLE text of every replicated table) is written inline only for a few tables; beyond
  :data:`INLINE_TABLES` the row carries ``tables_ref`` instead, the content hash of those schemas, which are stored
  once in ``<meta_database>.checkpoint_schemas`` (keyed by replica and hash, written before the first checkpoint row
  that refers to them, and again only when a schema changes). A checkpoint saved after every batch thus stays a
  few hundred bytes whatever the number of tables (issue 24: a 2,000-table database wrote 400 KB per batch). Being
  content-addressed, a schemas row cannot be changed by anyone: a former leader writing after a takeover only
  writes rows that are identical or unreferenced.
* ``version_base``: added to binlog file numbers in row versions (see :mod:`._version`). It changes when the source
  becomes another server (a failover: ``position.server_id`` changes), so that versions keep growing although the
  new server numbers its binlog files differently.

``seq`` orders the rows of a replica and carries its **leader epoch** (docs/ha.md): ``seq = epoch << 32 | counter``.
Every process that takes the replica's lock (a start, a standby taking over, a retake after the lock's connection
broke) claims ``epoch = (epoch of the newest row) + 1`` and saves a row with it before it writes any data; its later
saves count up in the low 32 bits. A former leader that was paused or cut off and resumes can therefore never save
a row that wins over the new leader's (ReplacingMergeTree(seq) keeps, and :func:`load_checkpoint` returns, the
highest ``seq``), however many saves it makes. Rows written before epochs existed have epoch 0.
"""

from __future__ import annotations

import hashlib
import json
import weakref
from typing import TYPE_CHECKING, Any

from .._checkpoint import Checkpoint, make_seq, next_seq, seq_epoch
from ..errors import ReplicationError, TargetError
from ..protocol import position_from, position_json
from ._tsv import quote_ident, quote_string
from ._tsv import tsv_escape as _tsv

if TYPE_CHECKING:
    from ._target import Target

__all__ = ["DEFAULT_META_DATABASE", "latest_seq", "load_checkpoint", "save_checkpoint"]

DEFAULT_META_DATABASE = "mybinlog_meta"
_TABLE = "checkpoints"
_SCHEMAS = "checkpoint_schemas"
INLINE_TABLES = 16  # up to this many tables, their schemas are written inline in every checkpoint row

# per target: the meta databases whose checkpoints table is known to exist, so that saving a checkpoint is one
# insert and no DDL
_ENSURED: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
_MISSING_CODES = frozenset({60, 81})  # unknown table, unknown database: dropped behind our back


async def _ensure_table(target: Target, meta_database: str, *, force: bool = False) -> str:
    db = quote_ident(meta_database)
    table = f"{db}.{quote_ident(_TABLE)}"
    known = _ENSURED.setdefault(target, set())
    if meta_database in known and not force:
        return table
    await target.execute(f"CREATE DATABASE IF NOT EXISTS {db}")
    await target.execute(
        f"CREATE TABLE IF NOT EXISTS {table} (replica String, seq UInt64, state String) "
        "ENGINE = ReplacingMergeTree(seq) ORDER BY replica"
    )
    known.add(meta_database)
    return table


async def _ensure_schemas_table(target: Target, meta_database: str, *, force: bool = False) -> str:
    """The checkpoint_schemas table (made when a replica first has more than INLINE_TABLES tables)."""
    table = f"{quote_ident(meta_database)}.{quote_ident(_SCHEMAS)}"
    known = _ENSURED.setdefault(target, set())
    if f"{meta_database}\0{_SCHEMAS}" in known and not force:
        return table
    await target.execute(
        f"CREATE TABLE IF NOT EXISTS {table} (replica String, ref String, tables String) "
        "ENGINE = ReplacingMergeTree ORDER BY (replica, ref)"
    )
    known.add(f"{meta_database}\0{_SCHEMAS}")
    return table


def _tables_ref(tables: dict[str, str]) -> tuple[str, str]:
    """(the JSON text of ``tables``, its content hash)."""
    text = json.dumps(tables, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text, hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


async def _store_tables(target: Target, checkpoint: Checkpoint, meta_database: str, *, force: bool = False) -> str:
    """The ref of ``checkpoint.tables`` in checkpoint_schemas, storing them first unless this checkpoint already
    did (or loaded them) and they did not change since: a batch without DDL writes nothing here."""
    saved = checkpoint._schemas_saved
    if not force and saved is not None and saved[0] == meta_database and saved[1] == checkpoint.tables:
        return saved[2]
    text, ref = _tables_ref(checkpoint.tables)
    table = await _ensure_schemas_table(target, meta_database, force=force)
    data = ("\t".join((_tsv(checkpoint.replica), ref, _tsv(text))) + "\n").encode("utf-8")
    await target.insert_tsv(table, ("replica", "ref", "tables"), data)
    checkpoint._schemas_saved = (meta_database, dict(checkpoint.tables), ref)
    return ref


async def _load_tables(target: Target, replica: str, meta_database: str, ref: str) -> dict[str, str]:
    rows = await target.query(
        f"SELECT tables FROM {quote_ident(meta_database)}.{quote_ident(_SCHEMAS)} "
        f"WHERE replica = {quote_string(replica)} AND ref = {quote_string(ref)} LIMIT 1"
    )
    if not rows or rows[0][0] is None:
        raise ReplicationError(
            f"the checkpoint of replica {replica!r} refers to table schemas {ref} that "
            f"{meta_database}.{_SCHEMAS} does not hold (the table was dropped or truncated): the replica cannot "
            "resume; drop its tables and its checkpoint rows and load it again"
        )
    tables = json.loads(rows[0][0])
    return {str(k): str(v) for k, v in tables.items()}


async def latest_seq(target: Target, replica: str, *, meta_database: str = DEFAULT_META_DATABASE) -> int:
    """The highest ``seq`` saved for ``replica`` (0 when it has no row): a new leader claims the epoch above it."""
    table = await _ensure_table(target, meta_database)
    rows = await target.query(f"SELECT max(seq) FROM {table} WHERE replica = {quote_string(replica)}")
    return int(rows[0][0] or 0) if rows and rows[0][0] not in (None, "") else 0


async def load_checkpoint(
    target: Target, replica: str, *, meta_database: str = DEFAULT_META_DATABASE, include_loading: bool = False
) -> Checkpoint | None:
    """The newest checkpoint of ``replica``, or None when it never saved one (or, unless ``include_loading``, when
    its initial load has not finished)."""
    table = await _ensure_table(target, meta_database)
    rows = await target.query(
        f"SELECT seq, state FROM {table} WHERE replica = {quote_string(replica)} ORDER BY seq DESC LIMIT 1"
    )
    if not rows:
        return None
    seq, state = rows[0]
    obj = json.loads(state or "{}")
    position = position_from(obj["position"])
    assert position is not None
    loading = obj.get("loading")
    if loading is not None and not include_loading:
        return None
    ref = obj.get("tables_ref")
    tables = dict(obj.get("tables", {})) if ref is None else await _load_tables(target, replica, meta_database, ref)
    cp = Checkpoint(
        replica=replica,
        position=position,
        tables=tables,
        source=obj.get("source", ""),
        pending=position_from(obj.get("pending")),
        stopped=dict(obj.get("stopped", {})),
        seq=int(seq or 0),
        loading=None if loading is None else [str(t) for t in loading],
        version_base=int(obj.get("version_base", 0)),
        written=[str(t) for t in obj.get("written") or []],
        xa=dict(obj.get("xa") or {}),
    )
    if ref is not None:
        cp._schemas_saved = (meta_database, dict(tables), ref)
    return cp


async def save_checkpoint(
    target: Target, checkpoint: Checkpoint, *, meta_database: str = DEFAULT_META_DATABASE
) -> None:
    """Persist ``checkpoint`` (one atomic single-row insert); its ``seq`` counts up within its epoch.

    A checkpoint that was never saved or loaded (``seq`` 0, e.g. the one a finished snapshot writes) first claims the
    epoch above every row of the replica, so that it wins over them (the writer holds the replica's lock).
    """
    table = await _ensure_table(target, meta_database)
    if checkpoint.seq == 0:
        newest = await latest_seq(target, checkpoint.replica, meta_database=meta_database)
        checkpoint.seq = make_seq(seq_epoch(newest) + 1, 0)
    checkpoint.seq = next_seq(checkpoint.seq)
    try:
        data = await _checkpoint_row(target, checkpoint, meta_database)
        await target.insert_tsv(table, ("replica", "seq", "state"), data)
    except TargetError as exc:
        if exc.code not in _MISSING_CODES:
            raise
        table = await _ensure_table(target, meta_database, force=True)
        data = await _checkpoint_row(target, checkpoint, meta_database, force=True)
        await target.insert_tsv(table, ("replica", "seq", "state"), data)


async def _checkpoint_row(target: Target, checkpoint: Checkpoint, meta_database: str, *, force: bool = False) -> bytes:
    """The TSV line of the checkpoints row (the schemas inline, or stored first and referred to by their hash)."""
    if len(checkpoint.tables) <= INLINE_TABLES:
        tables: dict[str, Any] = {"tables": checkpoint.tables}
    else:
        tables = {"tables_ref": await _store_tables(target, checkpoint, meta_database, force=force)}
    state = json.dumps(
        {
            "position": position_json(checkpoint.position),
            **tables,
            "source": checkpoint.source,
            "pending": position_json(checkpoint.pending),
            "stopped": checkpoint.stopped,
            "loading": checkpoint.loading,
            "version_base": checkpoint.version_base,
            "written": checkpoint.written,
            **({"xa": checkpoint.xa} if checkpoint.xa else {}),
        },
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return ("\t".join((_tsv(checkpoint.replica), str(checkpoint.seq), _tsv(state))) + "\n").encode("utf-8")
