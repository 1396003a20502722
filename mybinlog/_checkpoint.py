"""A replica's checkpoint: where it stands, whatever store it is written to.

Every sink keeps one (docs/architecture.md, "The sink interface"): ClickHouse as a row of
``<meta_database>.checkpoints`` (``mybinlog/clickhouse/_checkpoint.py``), a transactional sink (SQLite, Kafka) as the
JSON document :func:`checkpoint_json` makes, committed with the batch it covers. A checkpoint says: every transaction
up to ``position`` is in the replica, and the replicated tables had these schemas at that point; ``pending``,
``written``, ``loading``, ``stopped``, ``xa`` and ``version_base`` are what a replicator needs to resume exactly
(``mybinlog/clickhouse/_checkpoint.py`` says what each means in ClickHouse, where they matter most).

``seq`` orders the saves of a replica and carries its **leader epoch** (docs/ha.md): ``seq = epoch << 32 |
counter``. Every process that takes the replica's lock claims the epoch above the newest saved one and saves with
it before it writes any data; its later saves count up in the low 32 bits, so a former leader that resumes can never
save a checkpoint that wins over the new leader's.

Why here, a module of its own at the top of the package: it is every sink's record, not ClickHouse's, so it sits
below both ``clickhouse/`` (which stores it in a table) and ``replication/`` (the sink interface, the transactional
sinks). It is not about talking to MySQL (``source/``), and it is more than a binlog position (``protocol/``, where
the JSON form of a position lives: :func:`~mybinlog.protocol._position.position_json`). Users reach it as
``mybinlog.replication.Checkpoint`` (with :func:`checkpoint_json` and :func:`checkpoint_from`, for their own sinks)
or ``mybinlog.clickhouse.Checkpoint`` (what :func:`~mybinlog.clickhouse.load_checkpoint` returns).

Layer: imports :mod:`mybinlog.protocol` (positions) and :mod:`mybinlog.errors` only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import ReplicationError
from .protocol import BinlogPosition, position_from, position_json

__all__ = ["Checkpoint", "checkpoint_from", "checkpoint_json", "make_seq", "next_seq", "seq_epoch"]

_EPOCH_SHIFT = 32
_COUNTER_MASK = (1 << _EPOCH_SHIFT) - 1
_MAX_EPOCH = (1 << (64 - _EPOCH_SHIFT)) - 1  # seq is a UInt64


def make_seq(epoch: int, counter: int) -> int:
    """The ``seq`` of the ``counter``-th save in leader epoch ``epoch`` (the module docstring)."""
    if not 0 <= epoch <= _MAX_EPOCH or not 0 <= counter <= _COUNTER_MASK:
        raise ValueError(f"epoch {epoch} / counter {counter} out of range")
    return epoch << _EPOCH_SHIFT | counter


def seq_epoch(seq: int) -> int:
    """The leader epoch a checkpoint's ``seq`` belongs to (0: saved before epochs existed)."""
    return seq >> _EPOCH_SHIFT


def next_seq(seq: int) -> int:
    """The ``seq`` of the next save in the same epoch."""
    if seq & _COUNTER_MASK == _COUNTER_MASK:
        raise ReplicationError(
            f"checkpoint counter of epoch {seq_epoch(seq)} exhausted ({_COUNTER_MASK} saves); restart the replica "
            "(a new epoch starts the counter again)"
        )
    return seq + 1


@dataclass
class Checkpoint:
    """Where a replica stands; see the module docstring."""

    replica: str
    position: BinlogPosition
    tables: dict[str, str] = field(default_factory=dict)  # MySQL table name -> CREATE TABLE text at `position`
    source: str = ""  # the source DSN without password
    pending: BinlogPosition | None = None  # end of a batch being inserted (None: nothing in flight)
    stopped: dict[str, str] = field(default_factory=dict)  # table -> why its replication stopped
    seq: int = 0  # epoch << 32 | counter (the module docstring); 0: never saved, the next save claims an epoch
    loading: list[str] | None = None  # an unfinished initial load: the tables it may have written
    version_base: int = 0  # added to binlog file numbers in row versions (changes on a failover)
    written: list[str] = field(default_factory=list)  # tables whose insert of the pending batch returned
    # the prepared XA transactions passed at `position` and not resolved yet: XID -> where to read them again
    # (replication/_xa.py)
    xa: dict[str, Any] = field(default_factory=dict)
    # ClickHouse's note (clickhouse/_checkpoint.py), not part of the checkpoint: the schemas last known stored in
    # checkpoint_schemas, (meta database, a copy of `tables`, their ref), so that a batch without DDL writes none
    _schemas_saved: tuple[str, dict[str, str], str] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def epoch(self) -> int:
        """The leader epoch of the process that saved (or will save) this checkpoint."""
        return seq_epoch(self.seq)


def checkpoint_json(cp: Checkpoint) -> dict[str, Any]:
    """A checkpoint as a JSON-able dict (every field; :func:`checkpoint_from` reads it back): what a sink that keeps
    its checkpoint elsewhere than in ClickHouse stores."""
    return {
        "replica": cp.replica,
        "position": position_json(cp.position),
        "tables": dict(cp.tables),
        "source": cp.source,
        "pending": position_json(cp.pending),
        "stopped": dict(cp.stopped),
        "seq": cp.seq,
        "loading": None if cp.loading is None else list(cp.loading),
        "version_base": cp.version_base,
        "written": list(cp.written),
        "xa": dict(cp.xa),
    }


def checkpoint_from(obj: dict[str, Any]) -> Checkpoint:
    """The checkpoint :func:`checkpoint_json` made."""
    position = position_from(obj["position"])
    assert position is not None
    return Checkpoint(
        obj["replica"],
        position,
        dict(obj.get("tables") or {}),
        source=obj.get("source", ""),
        pending=position_from(obj.get("pending")),
        stopped=dict(obj.get("stopped") or {}),
        seq=int(obj.get("seq", 0)),
        loading=None if obj.get("loading") is None else list(obj["loading"]),
        version_base=int(obj.get("version_base", 0)),
        written=list(obj.get("written") or []),
        xa=dict(obj.get("xa") or {}),
    )
