"""The driver of a snapshot into Kafka (``--target kafka://...``): plan as for ClickHouse, let the executors publish
each chunk in a Kafka transaction of its own (``_kafka_copy.py``), decide from the committed chunk records which
chunks are done, then hand over to ``replicate --target kafka://`` by committing the replica's checkpoint through
the Kafka sink, exactly as the sink commits it after a batch (docs/kafka.md, "Snapshotting into Kafka").

::

    driver                                              executors (a Spark task per chunk)
    ──────                                              ──────────────────────────────────
    replica lock on the source; the replica's producer
    (fences a former replicate); no checkpoint yet?
    SHOW CREATE TABLE, plan the chunks     ───────────>  producer of the chunk (fences a former attempt),
                                                         consistent snapshot, low watermark W,
                                                         op r messages + chunk record, one transaction
    committed chunk records (fencing stale attempts)
    SHOW CREATE TABLE again: a DDL meanwhile fails the snapshot
    checkpoint at the smallest W of the committed chunks, committed by the sink (position record + group offset)

What differs from the ClickHouse target: no state in ClickHouse (the chunk records are in Kafka), so no
``--resume`` (a new snapshot publishes every chunk again) and no backfill; no progress lines while the chunks run
(one at the start and one at the end).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from typing import TYPE_CHECKING, Any, cast

from ..errors import ConfigurationError, MybinlogError, SnapshotError
from ..source import quote_mysql_ident
from ._chunks import Chunk, balance
from ._copy import ChunkResult, CopyJob, CopyTable
from ._job import SnapshotResult, _new_snapshot_id, _Run, _spark_error, run_chunks
from ._kafka_copy import committed_chunks
from ._plan import key_range_filter
from ._source import Watermark, connect_source, gtid_set_at, read_position
from ._spark import _context
from ._state import ChunkStates

if TYPE_CHECKING:
    from ..clickhouse import Target
    from ..ddl import TableDef
    from ..kafka import KafkaTarget
    from ._chunks import TablePlan
    from ._job import SnapshotOptions

__all__ = ["KafkaRun"]

logger = logging.getLogger("mybinlog.snapshot")


class KafkaRun(_Run):
    """One snapshot into Kafka. Reuses the ClickHouse run's planning, schema checks, Spark handling and progress
    lines (none of which touch the target); the target-specific parts are here."""

    def __init__(
        self, options: SnapshotOptions, kafka: KafkaTarget, spark: Any, on_progress: Any, master: str | None
    ) -> None:
        super().__init__(options, cast("Target", None), spark, on_progress, master)
        self.kafka = kafka
        self.sink = kafka.sink(replica=self.replica, database=self.database)

    async def run(self) -> SnapshotResult:
        try:
            return await super().run()  # runs _run below, then releases the replica lock
        finally:
            await self.sink.aclose()

    async def _run(self) -> SnapshotResult:
        from ..ddl import parse_create_table
        from ..errors import ReplicaLockedError
        from ..replication import Checkpoint
        from ..source import ReplicaLease, lease_name, prepared_at

        o = self.o
        if o.resume is not None:
            raise ConfigurationError(
                "--resume: a snapshot into Kafka keeps no state to resume from; start a new snapshot (the chunks an "
                "interrupted one committed stay in the topics, its open transactions are never visible)"
            )
        if o.mode == "backfill":
            raise ConfigurationError(
                "a snapshot into Kafka is an initial load (then `replicate --target kafka://` goes on from it); "
                "there is no backfill into Kafka"
            )
        given = [name for name, value in (("--target-database", o.target_database), ("--recreate", o.recreate),
                 ("--spool-dir", o.spool_dir), ("--engine", o.engine != "replacing")) if value]  # fmt: skip
        if given:
            raise ConfigurationError(
                f"{', '.join(given)} go with a ClickHouse target, not kafka:// (topics are named by the URL's prefix "
                "and topic_pattern)"
            )
        if self.kafka.transactional is False:
            raise ConfigurationError(
                "a snapshot into Kafka publishes each chunk in a Kafka transaction: drop transactional=false, or use "
                "`replicate`'s own initial load for an at-least-once load"
            )
        started = time.monotonic()
        # the replica's lock, named as `replicate --target kafka://` names it: one writer of the replica at a time
        lease = ReplicaLease(
            self.dsn, lease_name(await self.sink.identity(), o.meta_database, self.replica), replica=self.replica
        )
        try:
            await lease.acquire()
        except ReplicaLockedError as exc:
            raise SnapshotError(str(exc)) from exc
        self._lease = lease
        checkpoint = await self.sink.read_checkpoint()  # starts the replica's producer
        if checkpoint is not None:
            raise SnapshotError(
                f"replica {self.replica!r} already has a position in Kafka (at {checkpoint.position}): "
                "`replicate --target kafka://` goes on from it; a snapshot into Kafka is for a new replica"
            )
        src = await connect_source(self.dsn)
        if self.dsn.fallbacks:
            self.dsn = src.dsn  # the watermarks are offsets of one server: every executor reads that one
        try:
            flavor = src.flavor
            snapshot_id = o.snapshot_id or _new_snapshot_id(self.replica)
            start = await read_position(src)
            texts: dict[str, str] = {}
            for name in list(o.tables) or await src.tables(self.database):
                try:
                    texts[name] = await src.show_create_table(self.database, name)
                except MybinlogError as exc:
                    raise SnapshotError(f"cannot read the definition of {self.database}.{name}: {exc}") from exc
            plans = await self._plan(src, texts, parse_create_table)
            definitions = {t: parse_create_table(texts[t], self.database) for t in texts}
            tables = self._tables(definitions, plans)
            chunks = [c for p in plans.values() for c in p.chunks]
            estimate = sum(c.estimated_rows for c in chunks)
            logger.info(
                "snapshot %s (initial of %s into %s): %d chunks of %d tables",
                snapshot_id,
                self.replica,
                self.kafka.description,
                len(chunks),
                len(plans),
            )
            self._report(snapshot_id, ChunkStates(), estimate, len(chunks), 0, time.monotonic() - started)
            await src.close()  # not needed while the executors work
            await self._publish(snapshot_id, tables, chunks)
            self._stop_spark()
            src = await connect_source(self.dsn)
            done = await committed_chunks(self.kafka, snapshot_id, chunks)
            missing = [c.label for c in chunks if c.ordinal not in done]
            if missing:
                raise SnapshotError(
                    f"snapshot {snapshot_id}: chunks {', '.join(missing[:10])} were not committed; start a new snapshot"
                )
            states = ChunkStates(done={i: (r.rows, r.watermark) for i, r in done.items()})
            self._report(snapshot_id, states, estimate, len(chunks), 0, time.monotonic() - started)
            await self._check_schemas(src, texts, "during the snapshot", all_tables=not o.tables)
            # the stream starts at the smallest watermark of the *committed* chunks: an aborted attempt's messages
            # are never visible, so (unlike ClickHouse, where its rows stay) it needs no replay
            low = min((r.watermark for r in done.values()), key=lambda w: w.sort_key, default=None)
            low = low or Watermark(start.file, start.offset)
            gtids = await gtid_set_at(src, low)
            if gtids is None and flavor == "mariadb":
                raise SnapshotError(
                    f"cannot compute the GTID position at the snapshot's low watermark {low} (BINLOG_GTID_POS "
                    "returned NULL: was the binlog file purged?); the stream could not start there"
                )
            position = dataclasses.replace(low.to_position(flavor, gtids), server_id=src.info.server_id)
            xa = await prepared_at(src, position, self.database)
        finally:
            await src.close()
        cp = Checkpoint(self.replica, position, tables=texts, source=self.dsn.display,
                        xa={xid: held.to_json() for xid, held in xa.items()})  # fmt: skip
        await self.sink.write([], cp)  # the position record and the group offset, as after a batch of replicate
        table_rows: dict[str, int] = {}
        by_ordinal = {c.ordinal: c for c in chunks}
        for ordinal, r in done.items():
            name = by_ordinal[ordinal].table
            table_rows[name] = table_rows.get(name, 0) + r.rows
        total = sum(table_rows.values())
        result = SnapshotResult(
            snapshot_id=snapshot_id,
            kind="initial",
            replica=self.replica,
            position=position,
            tables=texts,
            rows=total,
            rows_this_run=total,
            chunks=len(chunks),
            chunks_skipped=0,
            seconds=time.monotonic() - started,
            table_rows=table_rows,
            checkpoint_saved=True,
        )
        logger.info("%s", result.summary())
        return result

    def _tables(self, definitions: dict[str, TableDef], plans: dict[str, TablePlan]) -> dict[str, CopyTable]:
        out = {}
        for name, definition in definitions.items():
            plan = plans[name]
            keyed = plan.method != "single"
            filters = [key_range_filter(definition, plan.key, self.o.key_range)] if self.o.key_range else []
            filters += [self.o.where] if self.o.where else []
            out[name] = CopyTable(
                name=name,
                definition=definition,
                source_table=f"{quote_mysql_ident(self.database)}.{quote_mysql_ident(name)}",
                ch_table="",
                key=tuple(plan.key) if keyed else (),
                key_charsets=tuple(definition.column(c).charset for c in plan.key) if keyed else (),
                filters=tuple(filters),
            )
        return out

    async def _publish(self, snapshot_id: str, tables: dict[str, CopyTable], chunks: list[Chunk]) -> None:
        o = self.o
        spark = await self._session()
        job = CopyJob(
            snapshot_id=snapshot_id,
            source=self.dsn,
            tables=tables,
            capabilities=None,
            sink="kafka",
            target_url=o.target,
            fetch_rows=min(5_000, o.batch_rows),
            hold=o.hold,
        )
        groups = balance(chunks, o.parallelism) if o.parallelism else [[c] for c in chunks]
        group_id = f"mybinlog-snapshot-{snapshot_id}"
        sc = _context(spark)

        description = f"mybinlog snapshot {snapshot_id} into Kafka"
        worker = asyncio.ensure_future(asyncio.to_thread(run_chunks, sc, group_id, description, groups, job))
        try:
            results = await asyncio.shield(worker)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                sc.cancelJobGroup(group_id)
            with contextlib.suppress(BaseException):  # a task that commits meanwhile: its rows are published once
                await asyncio.shield(worker)
            raise
        except Exception as exc:  # noqa: BLE001 - Py4J/Spark errors have no common base we can import
            detail = str(_spark_error(exc, snapshot_id)).split("; finished chunks")[0]
            raise SnapshotError(f"{detail}; no position was written: start a new snapshot") from None
        for r in results:
            cr = ChunkResult.from_dict(r)
            logger.debug(
                "chunk %d: %d rows in %.2f s (low watermark %s)", cr.ordinal, cr.rows, cr.seconds, cr.watermark
            )
