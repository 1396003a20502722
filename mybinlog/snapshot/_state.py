"""Snapshot state in ClickHouse, beside the data: the plan, and what happened to every chunk.

Two tables in the meta database (``mybinlog_meta`` unless configured), both plain enough for ClickHouse 18.16:

``snapshots`` (ReplacingMergeTree(seq) ORDER BY snapshot_id)
    one JSON document per snapshot: replica, databases, kind (``initial``/``backfill``), the chunk plan, the tables'
    CREATE TABLE text at the start, status (``running``/``finished``/``failed``, or ``superseded`` when a new
    initial snapshot dropped its tables). Rewritten with a larger ``seq``.
``snapshot_chunks`` (MergeTree, append-only)
    one row per event of a chunk *attempt* (one read of a chunk by one task): ``started`` (written before the
    attempt inserts anything, with its low watermark), ``rows`` (a batch was inserted), ``read`` (progress: how many
    rows the attempt has read so far, between inserts) and ``done`` (all rows of the attempt are inserted).

The state lives in the target (not in a local file) because executors on a cluster write it directly and a
resumed job may run on another machine. A chunk is finished when one of its attempts has ``done``. The position
the stream starts from is the smallest watermark of *all* started attempts, finished or not: an abandoned attempt
(a killed task) may have inserted rows with its version, and every change after its watermark must be replayed
to supersede them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._source import Watermark

if TYPE_CHECKING:
    from ..clickhouse import Target

__all__ = ["ChunkEvent", "ChunkStates", "StateStore", "summarize"]

SNAPSHOTS = "snapshots"
CHUNKS = "snapshot_chunks"


def _q(text: str) -> str:
    from ..clickhouse import quote_string

    return quote_string(text)


def _tsv(text: str) -> str:
    from ..clickhouse import tsv_escape

    return tsv_escape(text)


@dataclass(frozen=True)
class ChunkEvent:
    ordinal: int
    attempt: str
    event: str  # started | rows | done
    watermark: Watermark | None
    rows: int


@dataclass
class ChunkStates:
    """What the events say: finished chunks (ordinal -> rows, watermark of the finishing attempt), rows inserted
    by unfinished chunks' latest attempts, and the smallest watermark of any attempt."""

    done: dict[int, tuple[int, Watermark]] = field(default_factory=dict)
    partial_rows: dict[int, int] = field(default_factory=dict)
    min_watermark: Watermark | None = None
    attempts: int = 0

    @property
    def rows_done(self) -> int:
        return sum(rows for rows, _ in self.done.values()) + sum(self.partial_rows.values())


def summarize(events: Iterable[ChunkEvent]) -> ChunkStates:
    states = ChunkStates()
    attempt_rows: dict[tuple[int, str], int] = {}
    read_rows: dict[tuple[int, str], int] = {}
    latest_attempt: dict[int, str] = {}
    started: set[tuple[int, str]] = set()
    for ev in events:
        key = (ev.ordinal, ev.attempt)
        if ev.watermark is not None and (
            states.min_watermark is None or ev.watermark.sort_key < states.min_watermark.sort_key
        ):
            states.min_watermark = ev.watermark
        if ev.event == "started":
            if key not in started:
                started.add(key)
                states.attempts += 1
            latest_attempt[ev.ordinal] = ev.attempt
            attempt_rows.setdefault(key, 0)
        elif ev.event == "rows":
            attempt_rows[key] = attempt_rows.get(key, 0) + ev.rows
        elif ev.event == "read":  # rows read so far (progress between inserts; cumulative per attempt)
            read_rows[key] = max(read_rows.get(key, 0), ev.rows)
        elif ev.event == "done" and ev.watermark is not None:
            prev = states.done.get(ev.ordinal)
            if prev is None or ev.watermark.sort_key < prev[1].sort_key:
                states.done[ev.ordinal] = (ev.rows, ev.watermark)
    for ordinal, attempt in latest_attempt.items():
        if ordinal not in states.done:
            key = (ordinal, attempt)
            states.partial_rows[ordinal] = max(attempt_rows.get(key, 0), read_rows.get(key, 0))
    return states


class StateStore:
    """Reads and writes the snapshot state of one snapshot id through a :class:`Target`."""

    def __init__(self, target: Target, meta_database: str, snapshot_id: str) -> None:
        from ..clickhouse import quote_ident

        self.target = target
        self.snapshot_id = snapshot_id
        db = quote_ident(meta_database)
        self.meta_database = meta_database
        self._db = db
        self._snapshots = f"{db}.{quote_ident(SNAPSHOTS)}"
        self._chunks = f"{db}.{quote_ident(CHUNKS)}"

    async def ensure(self) -> None:
        await self.target.execute(f"CREATE DATABASE IF NOT EXISTS {self._db}")
        await self.target.execute(
            f"CREATE TABLE IF NOT EXISTS {self._snapshots} (snapshot_id String, seq UInt64, state String) "
            "ENGINE = ReplacingMergeTree(seq) ORDER BY snapshot_id"
        )
        await self.target.execute(
            f"CREATE TABLE IF NOT EXISTS {self._chunks} (snapshot_id String, chunk UInt32, attempt String, "
            "event String, file String, offset UInt64, gtids String, has_gtids UInt8, rows UInt64, at UInt64) "
            "ENGINE = MergeTree ORDER BY (snapshot_id, chunk)"
        )

    # -- the snapshot document ------------------------------------------------------------------------------
    async def save(self, document: dict[str, Any]) -> None:
        seq = time.time_ns()
        text = json.dumps(document, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
        line = f"{_tsv(self.snapshot_id)}\t{seq}\t{_tsv(text)}\n"
        await self.target.insert_tsv(self._snapshots, ("snapshot_id", "seq", "state"), line.encode("utf-8"))

    async def load(self) -> dict[str, Any] | None:
        rows = await self.target.query(
            f"SELECT state FROM {self._snapshots} WHERE snapshot_id = {_q(self.snapshot_id)} ORDER BY seq DESC LIMIT 1"
        )
        if not rows or rows[0][0] is None:
            return None
        doc: dict[str, Any] = json.loads(rows[0][0])
        return doc

    async def documents(self, replica: str) -> list[dict[str, Any]]:
        """The documents of every snapshot of ``replica``, newest first."""
        rows = await self.target.query(
            f"SELECT snapshot_id, argMax(state, seq) AS s, max(seq) AS m FROM {self._snapshots} "
            "GROUP BY snapshot_id ORDER BY m DESC"
        )
        docs = []
        for snapshot_id, state, _ in rows:
            if snapshot_id is None or state is None:
                continue
            doc: dict[str, Any] = json.loads(state)
            doc.setdefault("snapshot_id", str(snapshot_id))
            if doc.get("replica") == replica:
                docs.append(doc)
        return docs

    async def latest(self, replica: str, *, unfinished: bool) -> str | None:
        """The id of the newest snapshot of ``replica`` (only unfinished ones when asked: not finished,
        not superseded)."""
        for doc in await self.documents(replica):
            if unfinished and doc.get("status") in ("finished", "superseded"):
                continue
            return str(doc["snapshot_id"])
        return None

    # -- chunk events ---------------------------------------------------------------------------------------
    def event_line(self, ordinal: int, attempt: str, event: str, watermark: Watermark | None, rows: int) -> str:
        file = watermark.file if watermark is not None else ""
        offset = watermark.offset if watermark is not None else 0
        gtids = watermark.gtids if watermark is not None else None
        return (
            f"{_tsv(self.snapshot_id)}\t{ordinal}\t{_tsv(attempt)}\t{event}\t{_tsv(file)}\t{offset}\t"
            f"{_tsv(gtids or '')}\t{0 if gtids is None else 1}\t{rows}\t{time.time_ns()}\n"
        )

    async def record(
        self, ordinal: int, attempt: str, event: str, watermark: Watermark | None = None, rows: int = 0
    ) -> None:
        await self.record_lines([self.event_line(ordinal, attempt, event, watermark, rows)])

    async def record_lines(self, lines: list[str]) -> None:
        if not lines:
            return
        await self.target.insert_tsv(
            self._chunks,
            ("snapshot_id", "chunk", "attempt", "event", "file", "offset", "gtids", "has_gtids", "rows", "at"),
            "".join(lines).encode("utf-8"),
        )

    async def events(self) -> list[ChunkEvent]:
        rows = await self.target.query(
            f"SELECT chunk, attempt, event, file, offset, gtids, has_gtids, rows FROM {self._chunks} "
            f"WHERE snapshot_id = {_q(self.snapshot_id)} ORDER BY at, chunk"
        )
        out = []
        for chunk, attempt, event, file, offset, gtids, has_gtids, rows_ in rows:
            wm = Watermark(file or "", int(offset or 0), gtids if has_gtids == "1" else None) if file else None
            out.append(ChunkEvent(int(chunk or 0), attempt or "", event or "", wm, int(rows_ or 0)))
        return out

    async def states(self) -> ChunkStates:
        return summarize(await self.events())
