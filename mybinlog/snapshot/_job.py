"""The driver of a snapshot: plan, run the chunks on Spark, follow progress, hand over to the stream.

::

    driver                                            executors (Spark tasks, one per chunk)
    ──────                                            ──────────────────────────────────────
    checkpoint?  none -> initial load, else backfill
    SHOW CREATE TABLE (schemas at the start)
    plan chunks, save the plan (state)  ───────────>  connect, START TRANSACTION WITH CONSISTENT SNAPSHOT,
                                                      low watermark W, record "started W",
    poll state: progress lines                        SELECT the chunk, insert rows with
    (chdb: load spooled batches)        <───────────  _version = snapshot_version(W), record "done"
    SHOW CREATE TABLE again: a DDL meanwhile fails the snapshot
    initial load: checkpoint at the smallest W of all attempts (the stream starts there)
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import functools
import itertools
import json
import logging
import os
import re
import shutil
import stat
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit, urlunsplit

from .._text import duration
from ..errors import ConfigurationError, MybinlogError, SnapshotError
from ..protocol import BinlogPosition
from ..source import DSN, quote_mysql_ident
from ._chunks import Chunk, TablePlan, balance
from ._copy import ChunkResult, CopyJob, CopyTable, copy_partition, meta_columns, parse_spool_name
from ._plan import choose_key, key_range_filter, plan_table
from ._source import Watermark, connect_source, gtid_set_at, normalize_create, read_position
from ._spark import _context, _stop_spark_context, spark_session
from ._state import ChunkStates, StateStore

if TYPE_CHECKING:
    from ..clickhouse import Target
    from ..ddl import TableDef
    from ..source import SourceConnection

__all__ = [
    "SnapshotOptions",
    "SnapshotProgress",
    "SnapshotResult",
    "spark_session",
]

logger = logging.getLogger("mybinlog.snapshot")

KINDS = ("auto", "initial", "backfill")


@dataclass(frozen=True, kw_only=True)
class SnapshotOptions:
    """What to copy, where, and how. Settings map 1:1 to ``mybinlog snapshot`` options.

    ``source``: the MySQL/MariaDB DSN (password from the URL or ``MYBINLOG_PASSWORD``). ``target``: the
    ClickHouse URL (``http://user:pw@host:8123``, password also from ``MYBINLOG_CH_PASSWORD``) or a chdb path, or
    a Kafka target (``kafka://broker:9092?prefix=P``: an initial load as Debezium messages, docs/kafka.md).
    ``database``: the MySQL database; ``tables``: some of its tables (default all base tables).
    ``target_database``/``replica``: as for the replicator (default: the MySQL database name).
    ``mode``: ``auto`` (initial load when the replica has no checkpoint, else backfill), ``initial`` or
    ``backfill``. ``where``: an SQL condition rows must meet (backfill); ``key_range``: (low, high) inclusive
    bounds on the first key column (either may be None). ``chunk_rows``: rows per chunk (None: about four chunks
    per parallel task, 10k-250k). ``parallelism``: the number of partitions the chunks are grouped into (None:
    one task per chunk, Spark runs as many at once as it has cores). ``batch_rows``/``batch_bytes``: size of one
    insert. ``resume``: a snapshot id, or ``"latest"`` (the newest unfinished snapshot of the replica).
    ``recreate``: drop and recreate existing ClickHouse tables before an initial load. ``spool_dir``: where
    executors leave batches for a chdb target, in a subdirectory named by the snapshot id (default:
    ``<tempdir>/mybinlog-spool-<uid>``; on a cluster it must be shared with the driver).
    """

    source: str | DSN
    target: str = ""
    database: str
    tables: tuple[str, ...] = ()
    target_database: str | None = None
    replica: str | None = None
    engine: str = "replacing"
    mode: str = "auto"
    where: str | None = None
    key_range: tuple[str | None, str | None] | None = None
    chunk_rows: int | None = None
    parallelism: int | None = None
    batch_rows: int = 100_000
    batch_bytes: int = 32 << 20
    resume: str | None = None
    snapshot_id: str | None = None
    meta_database: str = "mybinlog_meta"
    spool_dir: str | None = None
    recreate: bool = False
    progress_interval: float = 2.0
    hold: tuple[int, str] | None = field(default=None, repr=False)  # tests only: see CopyJob.hold

    def __post_init__(self) -> None:
        if self.mode not in KINDS:
            raise ConfigurationError(f"mode must be one of {', '.join(KINDS)}, got {self.mode!r}")
        if self.engine == "collapsing":
            raise ConfigurationError(
                "a chunked snapshot cannot load a collapsing replica: the stream replays changes the chunks "
                "already contain, which a CollapsingMergeTree would count twice; use engine 'replacing' or "
                "'replacing_is_deleted' (see docs/snapshot.md)"
            )
        if self.engine not in ("replacing", "replacing_is_deleted"):
            raise ConfigurationError(f"unknown engine {self.engine!r}; use replacing or replacing_is_deleted")
        for name in ("chunk_rows", "parallelism", "batch_rows", "batch_bytes"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigurationError(f"{name} must be >= 1, got {value}")
        if self.snapshot_id is not None:
            _check_snapshot_id(self.snapshot_id)


@dataclass
class SnapshotProgress:
    snapshot_id: str
    rows_done: int
    rows_total: int
    chunks_done: int
    chunks_total: int
    elapsed: float
    rows_per_second: float
    eta_seconds: float | None

    def line(self) -> str:
        pct = 100.0 * self.rows_done / self.rows_total if self.rows_total else 100.0
        eta = "?" if self.eta_seconds is None else duration(self.eta_seconds)
        return (
            f"snapshot {self.snapshot_id}: {self.rows_done:,}/~{self.rows_total:,} rows ({min(pct, 100.0):.1f}%), "
            f"chunks {self.chunks_done}/{self.chunks_total}, {self.rows_per_second:,.0f} rows/s, ETA {eta}"
        )


@dataclass
class SnapshotResult:
    """What a snapshot did. ``position``: where the stream must start (the smallest low watermark of all chunk
    attempts); ``tables``: CREATE TABLE text of each table at the start; ``kind``: initial or backfill."""

    snapshot_id: str
    kind: str
    replica: str
    position: BinlogPosition
    tables: dict[str, str]
    rows: int
    rows_this_run: int
    chunks: int
    chunks_skipped: int
    seconds: float
    table_rows: dict[str, int] = field(default_factory=dict)
    checkpoint_saved: bool = False

    @property
    def rows_per_second(self) -> float:
        return self.rows_this_run / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> str:
        lines = [
            f"snapshot {self.snapshot_id} ({self.kind}) finished: {self.rows:,} rows in {self.chunks} chunks of "
            f"{len(self.tables)} tables",
            f"  this run: {self.rows_this_run:,} rows in {self.seconds:.1f} s ({self.rows_per_second:,.0f} rows/s)"
            + (f", {self.chunks_skipped} chunks already done" if self.chunks_skipped else ""),
        ]
        for name, rows in sorted(self.table_rows.items()):
            lines.append(f"  {name}: {rows:,} rows")
        if self.checkpoint_saved:
            lines.append(f"  replica {self.replica!r}: streaming starts at {self.position}")
        else:
            lines.append(f"  low watermark {self.position} (the replica's checkpoint was not changed)")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "snapshot_id": self.snapshot_id,
            "kind": self.kind,
            "replica": self.replica,
            "position": str(self.position),
            "rows": self.rows,
            "rows_this_run": self.rows_this_run,
            "chunks": self.chunks,
            "chunks_skipped": self.chunks_skipped,
            "seconds": round(self.seconds, 3),
            "rows_per_second": round(self.rows_per_second, 1),
            "table_rows": self.table_rows,
            "checkpoint_saved": self.checkpoint_saved,
        }


def run_chunks(
    sc: Any, group_id: str, description: str, groups: list[list[Chunk]], job: CopyJob
) -> list[dict[str, Any]]:
    """In a thread of the driver: one Spark job of the chunk ``groups`` (a partition each, :func:`_partition_task`
    on the executors) under the job group ``group_id`` (what a cancelled run cancels); the chunks' results."""
    sc.setJobGroup(group_id, description, interruptOnCancel=True)
    rdd = sc.parallelize(groups, len(groups))
    results: list[dict[str, Any]] = rdd.mapPartitions(functools.partial(_partition_task, job)).collect()
    return results


def _partition_task(job: CopyJob, groups: Iterable[list[Chunk]]) -> Iterator[dict[str, Any]]:
    chunks = itertools.chain.from_iterable(groups)
    if job.sink == "kafka":  # the other chunk writer: Debezium messages, a Kafka transaction per chunk
        from ._kafka_copy import publish_partition

        return publish_partition(job, chunks)
    return copy_partition(job, chunks)


def _spark_error(exc: BaseException, snapshot_id: str) -> SnapshotError:
    """A readable error from a failed Spark job: the Python exception of the failed task, when there is one."""
    text = str(exc)
    found = re.findall(r"^(?:mybinlog\.[\w.]+|[\w.]*Error|[\w.]*Exception)[\w.]*: .+$", text, re.MULTILINE)
    detail = found[-1] if found else (text.strip().splitlines() or [type(exc).__name__])[0]
    return SnapshotError(
        f"snapshot {snapshot_id}: a chunk failed: {detail[:1000]}; finished chunks are kept, run again with "
        f"--resume {snapshot_id} to copy the rest"
    )


# --- chdb: the driver loads the executors' batches -------------------------------------------------------------


def _check_snapshot_id(snapshot_id: str) -> None:
    if not re.fullmatch(r"[\w.-]+", snapshot_id) or snapshot_id in (".", ".."):
        raise ConfigurationError(f"a snapshot id is letters, digits, '_', '-' and '.', got {snapshot_id!r}")


def _spool_directory(spool_dir: str | None, snapshot_id: str) -> Path:
    """Where the executors leave their batches for a chdb target: ``<spool_dir>/<snapshot_id>``, by default
    ``<tempdir>/mybinlog-spool-<uid>/<snapshot_id>``. Every run of a snapshot uses the same directory, so
    ``--resume`` reuses (and clears) what a killed run left; it is removed when the snapshot finishes."""
    _check_snapshot_id(snapshot_id)
    if spool_dir:
        return Path(spool_dir) / snapshot_id
    return Path(tempfile.gettempdir()) / f"mybinlog-spool-{os.getuid()}" / snapshot_id


def _make_spool(path: Path, *, default: bool) -> None:
    if default:  # a fixed name in a shared temporary directory: it must be this user's and private
        path.parent.mkdir(mode=0o700, exist_ok=True)
        st = path.parent.lstat()
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            raise ConfigurationError(
                f"{path.parent} is not a private directory of this user (mode 700): remove it, or give --spool-dir"
            )
    path.mkdir(mode=0o700 if default else 0o777, parents=True, exist_ok=True)


class SpoolLoader:
    """Moves spooled batches into an embedded ClickHouse and records the chunk state (see ``_copy.py``)."""

    def __init__(
        self,
        directory: Path,
        target: Target,
        store: StateStore,
        chunks: dict[int, Chunk],
        tables: dict[str, CopyTable],
    ) -> None:
        self.dir = directory
        self.target = target
        self.store = store
        self.chunks = chunks
        self.tables = tables
        self.started: set[tuple[int, str]] = set()
        self.loaded: dict[tuple[int, str], int] = {}

    async def step(self) -> int:
        """Load what is there now; returns the number of files handled."""
        names = sorted(await asyncio.to_thread(os.listdir, self.dir))
        parsed = [(n, p) for n in names if (p := parse_spool_name(n)) is not None]
        handled = 0
        for name, (ordinal, attempt, kind, _batch, _rows) in parsed:  # "started" first: before any data
            if kind != "started":
                continue
            doc = json.loads((self.dir / name).read_text())
            wm = Watermark(doc["file"], int(doc["offset"]), doc.get("gtids"))
            await self.store.record(ordinal, attempt, "started", wm)
            self.started.add((ordinal, attempt))
            (self.dir / name).unlink()
            handled += 1
        for name, (ordinal, attempt, kind, _batch, rows) in parsed:
            if kind != "tsv" or (ordinal, attempt) not in self.started:
                continue
            table = self.tables[self.chunks[ordinal].table]
            data = await asyncio.to_thread((self.dir / name).read_bytes)
            await self.target.insert_tsv(table.ch_table, table.insert_columns, data)
            await self.store.record(ordinal, attempt, "rows", None, rows)
            self.loaded[(ordinal, attempt)] = self.loaded.get((ordinal, attempt), 0) + 1
            (self.dir / name).unlink()
            handled += 1
        for name, (ordinal, attempt, kind, _batch, _rows) in parsed:
            if kind != "read" or (ordinal, attempt) not in self.started:
                continue
            try:
                rows_read = int(json.loads((self.dir / name).read_text())["rows"])
            except (OSError, ValueError, KeyError):
                continue  # replaced meanwhile by a newer count: the next step reads it
            await self.store.record(ordinal, attempt, "read", None, rows_read)
            with contextlib.suppress(OSError):
                (self.dir / name).unlink()
            handled += 1
        for name, (ordinal, attempt, kind, _batch, _rows) in parsed:
            if kind != "done" or (ordinal, attempt) not in self.started:
                continue
            doc = json.loads((self.dir / name).read_text())
            if self.loaded.get((ordinal, attempt), 0) < int(doc["batches"]):
                continue  # a batch is still being renamed into place: next step
            wm = Watermark(doc["file"], int(doc["offset"]), doc.get("gtids"))
            await self.store.record(ordinal, attempt, "done", wm, int(doc["rows"]))
            (self.dir / name).unlink()
            handled += 1
        return handled


# --- the job --------------------------------------------------------------------------------------------------


def _resolve_dsn(source: str | DSN) -> DSN:
    dsn = source if isinstance(source, DSN) else DSN.parse(source)
    if not dsn.password and os.environ.get("MYBINLOG_PASSWORD"):
        dsn = dataclasses.replace(dsn, password=os.environ["MYBINLOG_PASSWORD"])
    return dsn


def _executor_target_url(url: str) -> str:
    """The target URL for executors: with the password from ``MYBINLOG_CH_PASSWORD`` put in (executors on other
    machines do not have the driver's environment). Never logged."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return url
    password = os.environ.get("MYBINLOG_CH_PASSWORD")
    if parts.password is not None or not password:
        return url
    user = parts.username or "default"
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    netloc = f"{quote(user, safe='')}:{quote(password, safe='')}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _new_snapshot_id(replica: str) -> str:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
    safe = re.sub(r"[^0-9A-Za-z_]+", "_", replica)[:40]
    return f"{safe}-{stamp}-{uuid.uuid4().hex[:6]}"


class _Run:
    """One run of the job (a new snapshot or a resumed one)."""

    def __init__(
        self, options: SnapshotOptions, target: Target, spark: Any, on_progress: Any, master: str | None = None
    ) -> None:
        self.o = options
        self.target = target
        # a SparkSession, or a future of (session, created here) still starting: it starts while the driver plans
        self.spark = spark
        self.master = master
        self.own_spark = False  # started by run_snapshot: stopped as soon as the copy is over
        self.stopping: asyncio.Future[None] | None = None
        self.on_progress = on_progress
        self.dsn = _resolve_dsn(options.source)
        self.replica = options.replica or options.database
        self.database = options.database
        self.target_database = options.target_database or options.database
        self.engine = options.engine
        self._lease: Any = None

    async def _table_info(self, name: str) -> tuple[bool, str | None]:
        from ..clickhouse import quote_string

        rows = await self.target.query(
            f"SELECT engine FROM system.tables WHERE database = {quote_string(self.target_database)} "
            f"AND name = {quote_string(name)}"
        )
        return (bool(rows), rows[0][0] if rows else None)

    async def _prepare_tables(self, definitions: dict[str, TableDef], kind: str, snapshot_id: str) -> None:
        """Create the ClickHouse tables that do not exist yet. An initial load needs empty tables: it drops those
        holding only rows of unfinished initial snapshots of this replica (all of them with ``--recreate``) and
        refuses tables holding other rows. The unfinished snapshots whose tables it dropped cannot be resumed any
        more: they are marked ``superseded``."""
        from .. import clickhouse
        from ..clickhouse import quote_ident

        existing: dict[str, str | None] = {}
        for name in definitions:
            exists, engine = await self._table_info(name)
            if exists:
                existing[name] = engine
        drop: dict[str, list[str]] = {}  # table -> the unfinished snapshots that copied into it
        if kind == "initial" and existing:
            unfinished = await self._unfinished_initial()
            if self.o.recreate:
                drop = {n: [str(d["snapshot_id"]) for d in unfinished if n in d["tables"]] for n in existing}
            else:
                drop = await self._leftovers(list(existing), unfinished)
                # what an unfinished built-in initial load of `replicate` wrote for this replica is a leftover too
                from ..clickhouse import load_checkpoint

                loading = await load_checkpoint(
                    self.target, self.replica, meta_database=self.o.meta_database, include_loading=True
                )
                if loading is not None and loading.loading is not None:
                    for name in existing:
                        if name in loading.loading:
                            drop.setdefault(name, [])
                for name in existing:
                    if name not in drop and await self._holds_rows(name):
                        raise SnapshotError(
                            f"ClickHouse table {self.target_database}.{name} already holds rows and the replica "
                            f"{self.replica!r} has no checkpoint: an initial load needs empty tables (rows deleted "
                            "at the source would stay). Use --recreate to drop and recreate them, or --resume to "
                            "continue an interrupted snapshot"
                        )
                if drop:
                    logger.warning(
                        "dropping and recreating ClickHouse tables %s: they hold only rows of unfinished snapshot(s) "
                        "%s (or of an unfinished initial load of `mybinlog replicate`) of replica %r (killed, "
                        "failed, or made invalid by a DDL), which has no checkpoint",
                        ", ".join(f"{self.target_database}.{n}" for n in sorted(drop)),
                        ", ".join(sorted({i for ids in drop.values() for i in ids})) or "-",
                        self.replica,
                    )
        for name, definition in definitions.items():
            ch_table = f"{quote_ident(self.target_database)}.{quote_ident(name)}"
            if name in drop:
                await self.target.execute(f"DROP TABLE IF EXISTS {ch_table}")
            elif name in existing:
                engine = existing[name]
                if engine and "Collapsing" in engine:
                    raise SnapshotError(
                        f"ClickHouse table {self.target_database}.{name} is a {engine}: a chunked snapshot "
                        "cannot load a collapsing table (see docs/snapshot.md); use a replacing engine"
                    )
                continue
            await self.target.execute(f"CREATE DATABASE IF NOT EXISTS {quote_ident(self.target_database)}")
            await self.target.execute(
                clickhouse.create_table_sql(
                    definition, database=self.target_database, engine=self.engine, caps=self.target.capabilities
                )
            )
        for old_id in sorted({i for ids in drop.values() for i in ids}):
            old = StateStore(self.target, self.o.meta_database, old_id)
            doc = await old.load()
            if doc is not None:
                doc["status"] = "superseded"
                doc["superseded_by"] = snapshot_id
                await old.save(doc)
            await self._remove_spool(old_id)

    async def _unfinished_initial(self) -> list[dict[str, Any]]:
        """The documents of this replica's initial snapshots into this database that did not finish."""
        docs = await StateStore(self.target, self.o.meta_database, "").documents(self.replica)
        return [
            d
            for d in docs
            if d.get("kind") == "initial"
            and d.get("status") not in ("finished", "superseded")
            and d.get("target_database", d.get("database")) == self.target_database
            and isinstance(d.get("tables"), dict)
        ]

    async def _leftovers(self, names: list[str], unfinished: list[dict[str, Any]]) -> dict[str, list[str]]:
        """The tables of ``names`` that unfinished snapshots copied into and that hold no other rows, with those
        snapshots' ids. A row's ``_version`` names the chunk attempt that wrote it, and every attempt recorded
        its watermark before inserting anything."""
        from ..clickhouse import quote_ident, quote_string, snapshot_version

        versions: dict[str, set[int]] = {}  # snapshot id -> the versions of its attempts
        out: dict[str, list[str]] = {}
        for name in names:
            owners = [str(d["snapshot_id"]) for d in unfinished if name in d["tables"]]
            if not owners:
                continue
            rows = await self.target.query(
                f"SELECT count() FROM system.columns WHERE database = {quote_string(self.target_database)} "
                f"AND table = {quote_string(name)} AND name = '_version'"
            )
            if not rows or int(rows[0][0] or 0) == 0:
                continue
            allowed: set[int] = set()
            for owner in owners:
                if owner not in versions:
                    events = await StateStore(self.target, self.o.meta_database, owner).events()
                    versions[owner] = {
                        snapshot_version(BinlogPosition(e.watermark.file, e.watermark.offset))
                        for e in events
                        if e.event == "started" and e.watermark is not None
                    }
                allowed |= versions[owner]
            found = await self.target.query(
                f"SELECT DISTINCT _version FROM {quote_ident(self.target_database)}.{quote_ident(name)} "
                f"LIMIT {len(allowed) + 1}"
            )
            if all(r[0] is not None and int(r[0]) in allowed for r in found):
                out[name] = owners
        return out

    async def _holds_rows(self, name: str) -> bool:
        from ..clickhouse import quote_ident

        rows = await self.target.query(f"SELECT count() FROM {quote_ident(self.target_database)}.{quote_ident(name)}")
        return bool(rows) and int(rows[0][0] or 0) > 0

    async def _remove_spool(self, snapshot_id: str) -> None:
        """Remove the spool directory of a snapshot that finished or can no longer be resumed (chdb targets)."""
        if self.target.kind != "chdb":
            return
        with contextlib.suppress(ConfigurationError):  # an id that cannot name a directory has none
            path = _spool_directory(self.o.spool_dir, snapshot_id)
            await asyncio.to_thread(shutil.rmtree, path, True)

    async def _meta_columns(self, name: str) -> tuple[str, ...]:
        """The meta columns the ClickHouse table has (it may predate this run, made by the replicator)."""
        from ..clickhouse import quote_string

        rows = await self.target.query(
            f"SELECT name FROM system.columns WHERE database = {quote_string(self.target_database)} "
            f"AND table = {quote_string(name)} AND name IN ('_sign', '_version', '_is_deleted')"
        )
        present = {r[0] for r in rows}
        if not {"_sign", "_version"} <= present:
            raise SnapshotError(
                f"ClickHouse table {self.target_database}.{name} has no _sign/_version columns: it was not made by "
                "mybinlog; drop it or choose another --target-database"
            )
        return meta_columns("replacing_is_deleted" if "_is_deleted" in present else "replacing")

    async def _copy_tables(self, definitions: dict[str, TableDef], plans: dict[str, TablePlan]) -> dict[str, CopyTable]:
        from ..clickhouse import quote_ident

        out = {}
        for name, definition in definitions.items():
            plan = plans[name]
            filters: list[str] = []
            if self.o.key_range is not None:
                filters.append(key_range_filter(definition, plan.key, self.o.key_range))
            if self.o.where:
                filters.append(self.o.where)
            out[name] = CopyTable(
                name=name,
                definition=definition,
                source_table=f"{quote_mysql_ident(self.database)}.{quote_mysql_ident(name)}",
                ch_table=f"{quote_ident(self.target_database)}.{quote_ident(name)}",
                key=tuple(plan.key) if plan.method != "single" else (),
                key_charsets=tuple(definition.column(c).charset for c in plan.key) if plan.method != "single" else (),
                filters=tuple(filters),
                meta=await self._meta_columns(name),
            )
        return out

    async def run(self) -> SnapshotResult:
        try:
            return await self._run()
        finally:
            lease, self._lease = self._lease, None
            if lease is not None:
                await asyncio.shield(lease.release())

    async def _take_lease(self, kind: str) -> None:
        """An initial snapshot writes the replica as `replicate` does: it holds the replica's lock on the source
        (a second initial snapshot, or a replicator, of the same replica refuses to start meanwhile). A backfill runs
        beside the replicator and takes no lock."""
        if kind != "initial":
            return
        from ..clickhouse import target_identity
        from ..errors import ReplicaLockedError
        from ..source import ReplicaLease, lease_name

        lease = ReplicaLease(
            self.dsn,
            lease_name(await target_identity(self.target), self.o.meta_database, self.replica),
            replica=self.replica,
        )
        try:
            await lease.acquire()
        except ReplicaLockedError as exc:
            raise SnapshotError(str(exc)) from exc
        self._lease = lease

    async def _run(self) -> SnapshotResult:
        from ..clickhouse import Checkpoint, load_checkpoint, save_checkpoint
        from ..ddl import parse_create_table
        from ..source import prepared_at

        o = self.o
        started = time.monotonic()
        checkpoint = await load_checkpoint(self.target, self.replica, meta_database=o.meta_database)
        src = await connect_source(self.dsn)
        if self.dsn.fallbacks:
            # several servers: the whole snapshot reads the one that answered (watermarks are file offsets of one
            # server; executors must not each pick another)
            logger.info("snapshot: the source list %s: reading %s", self.dsn.display, src.dsn.display)
            self.dsn = src.dsn
        try:
            flavor = src.flavor
            if o.resume is not None:
                store, doc = await self._load(o.resume)
                kind = str(doc["kind"])
                started_on = int(doc.get("server_id") or 0)
                if started_on and started_on != src.info.server_id:
                    raise SnapshotError(
                        f"snapshot {store.snapshot_id} started on the server with server_id {started_on}, but "
                        f"{src.dsn.display} is server_id {src.info.server_id}: its watermarks are binlog offsets of "
                        "the first server. Resume it when that server answers first, or start a new snapshot"
                    )
                if doc.get("replica", self.replica) != self.replica:
                    self.replica = str(doc["replica"])
                    checkpoint = await load_checkpoint(self.target, self.replica, meta_database=o.meta_database)
                if kind == "initial" and checkpoint is not None:
                    raise SnapshotError(
                        f"snapshot {store.snapshot_id} was an initial load and replica {self.replica!r} has a "
                        "checkpoint now (the snapshot finished, or replication started): nothing to resume"
                    )
                await self._take_lease(kind)
                texts: dict[str, str] = dict(doc["tables"])
                plans = {t: TablePlan.from_json(p) for t, p in doc["plans"].items()}
                await self._check_schemas(
                    src,
                    texts,
                    "since the snapshot started",
                    store=store,
                    doc=doc,
                    all_tables=bool(doc.get("all_tables")),
                )
                self.o = o = dataclasses.replace(
                    o,
                    where=doc.get("where"),
                    key_range=(doc["key_range"][0], doc["key_range"][1]) if doc.get("key_range") else None,
                )
                self.engine = str(doc.get("engine", self.engine))
                self.target_database = str(doc.get("target_database", self.target_database))
            else:
                kind = o.mode
                if kind == "auto":
                    kind = "initial" if checkpoint is None else "backfill"
                if kind == "initial" and checkpoint is not None:
                    raise SnapshotError(
                        f"replica {self.replica!r} already has a checkpoint (at {checkpoint.position}): an initial "
                        "load would not be consistent with it; use --mode backfill"
                    )
                await self._take_lease(kind)
                snapshot_id = o.snapshot_id or _new_snapshot_id(self.replica)
                store = StateStore(self.target, o.meta_database, snapshot_id)
                await store.ensure()
                if await store.load() is not None:
                    raise SnapshotError(f"snapshot id {snapshot_id!r} exists already; resume it with --resume")
                start_position = await read_position(src)
                names = list(o.tables) or await src.tables(self.database)
                texts = {}
                for name in names:
                    try:
                        texts[name] = await src.show_create_table(self.database, name)
                    except MybinlogError as exc:
                        raise SnapshotError(f"cannot read the definition of {self.database}.{name}: {exc}") from exc
                plans = await self._plan(src, texts, parse_create_table)
                doc = {
                    "snapshot_id": snapshot_id,
                    "replica": self.replica,
                    "database": self.database,
                    "target_database": self.target_database,
                    "engine": self.engine,
                    "kind": kind,
                    "status": "running",
                    "created": time.time(),
                    "start_position": {"file": start_position.file, "offset": start_position.offset},
                    "source": self.dsn.display,
                    "server_id": src.info.server_id,
                    "where": o.where,
                    "key_range": list(o.key_range) if o.key_range else None,
                    "all_tables": not o.tables,
                    "tables": texts,
                    "plans": {t: p.to_json() for t, p in plans.items()},
                }
                definitions = {t: parse_create_table(texts[t], self.database) for t in texts}
                await self._prepare_tables(definitions, kind, snapshot_id)
                await store.save(doc)
            snapshot_id = store.snapshot_id
            definitions = {t: parse_create_table(texts[t], self.database) for t in texts}
            tables = await self._copy_tables(definitions, plans)
            all_chunks = [c for p in plans.values() for c in p.chunks]
            states = await store.states()
            todo = [c for c in all_chunks if c.ordinal not in states.done]
            skipped = len(all_chunks) - len(todo)
            rows_before = sum(rows for rows, _ in states.done.values())
            logger.info(
                "snapshot %s (%s of %s): %d chunks of %d tables, %d to copy",
                snapshot_id,
                kind,
                self.replica,
                len(all_chunks),
                len(plans),
                len(todo),
            )
            # the first line with totals, before any chunk runs (planning is done)
            self._report(
                snapshot_id,
                states,
                sum(c.estimated_rows for c in all_chunks),
                len(all_chunks),
                rows_before,
                time.monotonic() - started,
            )
            if todo:
                await src.close()  # not needed while the executors work (long snapshots: server timeouts)
                try:
                    await self._execute(store, tables, todo, all_chunks, rows_before, started)
                except BaseException as exc:
                    doc["status"] = "failed"
                    doc["error"] = str(exc)[:2000] if isinstance(exc, Exception) else type(exc).__name__
                    with contextlib.suppress(Exception):
                        await asyncio.shield(store.save(doc))
                    raise
                self._stop_spark()  # the copy is over: Spark stops while the driver finishes
                src = await connect_source(self.dsn)
            states = await store.states()
            missing = [c.label for c in all_chunks if c.ordinal not in states.done]
            if missing:
                raise SnapshotError(
                    f"snapshot {snapshot_id}: chunks {', '.join(missing[:10])} did not finish; run again with "
                    f"--resume {snapshot_id}"
                )
            await self._check_schemas(
                src, texts, "during the snapshot", store=store, doc=doc, all_tables=bool(doc.get("all_tables"))
            )
            low = states.min_watermark
            if low is None:
                sp = doc["start_position"]
                low = Watermark(str(sp["file"]), int(sp["offset"]))
            gtids = await gtid_set_at(src, low)
            if gtids is None and flavor == "mariadb":
                raise SnapshotError(
                    f"cannot compute the GTID position at the snapshot's low watermark {low} (BINLOG_GTID_POS "
                    "returned NULL: was the binlog file purged?); the stream could not start there"
                )
            # the server whose binlog the watermark names: the replica's versions are ordered within its files
            position = dataclasses.replace(low.to_position(flavor, gtids), server_id=src.info.server_id)
            # XA transactions prepared before the low watermark and not resolved there: no chunk saw their rows and
            # the stream starts after their prepared parts; the replica holds them until their COMMIT/ROLLBACK
            xa = await prepared_at(src, position, self.database) if kind == "initial" else {}
        finally:
            await src.close()

        saved = False
        if kind == "initial":
            cp = Checkpoint(self.replica, position, tables=texts, source=self.dsn.display,
                            xa={xid: held.to_json() for xid, held in xa.items()})  # fmt: skip
            await save_checkpoint(self.target, cp, meta_database=o.meta_database)
            saved = True
        doc["status"] = "finished"
        doc["position"] = str(position)
        await store.save(doc)
        await self._remove_spool(snapshot_id)
        table_rows: dict[str, int] = {}
        by_ordinal = {c.ordinal: c for c in all_chunks}
        for ordinal, (rows, _) in states.done.items():
            name = by_ordinal[ordinal].table
            table_rows[name] = table_rows.get(name, 0) + rows
        total = sum(table_rows.values())
        result = SnapshotResult(
            snapshot_id=snapshot_id,
            kind=kind,
            replica=self.replica,
            position=position,
            tables=texts,
            rows=total,
            rows_this_run=total - rows_before,
            chunks=len(all_chunks),
            chunks_skipped=skipped,
            seconds=time.monotonic() - started,
            table_rows=table_rows,
            checkpoint_saved=saved,
        )
        logger.info("%s", result.summary())
        return result

    async def _load(self, resume: str) -> tuple[StateStore, dict[str, Any]]:
        snapshot_id = resume
        probe = StateStore(self.target, self.o.meta_database, resume)
        await probe.ensure()
        if resume == "latest":
            found = await probe.latest(self.replica, unfinished=True)
            if found is None:
                raise SnapshotError(f"replica {self.replica!r} has no unfinished snapshot to resume")
            snapshot_id = found
        store = StateStore(self.target, self.o.meta_database, snapshot_id)
        doc = await store.load()
        if doc is None:
            raise SnapshotError(f"no snapshot {snapshot_id!r} in {self.o.meta_database}: nothing to resume")
        if doc.get("database") != self.database:
            raise SnapshotError(
                f"snapshot {snapshot_id} copies database {doc.get('database')!r}, not {self.database!r}"
            )
        if doc.get("status") == "finished":
            raise SnapshotError(f"snapshot {snapshot_id} has finished already")
        if doc.get("status") == "superseded":
            raise SnapshotError(
                f"snapshot {snapshot_id} cannot be resumed: snapshot {doc.get('superseded_by')} dropped the tables it "
                "was copying into"
            )
        return store, doc

    async def _session(self) -> Any:
        """The SparkSession, once it has started."""
        if isinstance(self.spark, asyncio.Future):
            self.spark, self.own_spark = await asyncio.shield(self.spark)
        return self.spark

    def _stop_spark(self) -> None:
        """Stop a session started by run_snapshot (in the background: the driver's last steps do not need it)."""
        if self.own_spark and self.stopping is None and not isinstance(self.spark, asyncio.Future):
            self.stopping = asyncio.ensure_future(asyncio.to_thread(_stop_spark_context, self.spark))

    async def _parallelism(self) -> int:
        """Spark's default parallelism; for a local master still starting, the N of ``local[N]``."""
        if isinstance(self.spark, asyncio.Future) and not self.spark.done():
            cores = _local_cores(self.master)
            if cores is not None:
                return cores
        return _default_parallelism(await self._session())

    async def _plan(
        self, src: SourceConnection, texts: dict[str, str], parse: Callable[[str, str], TableDef]
    ) -> dict[str, TablePlan]:
        parallelism = self.o.parallelism or await self._parallelism()
        plans: dict[str, TablePlan] = {}
        ordinal = 0
        for name, text in texts.items():
            definition = parse(text, self.database)
            key, _ = choose_key(definition)
            filters = [key_range_filter(definition, key, self.o.key_range)] if self.o.key_range else []
            plan = await plan_table(
                src,
                self.database,
                definition,
                chunk_rows=self.o.chunk_rows,
                parallelism=parallelism,
                filters=filters,
                first_ordinal=ordinal,
            )
            ordinal += len(plan.chunks)
            plans[name] = plan
            logger.info(
                "%s: %s chunks by %s key %s (~%d rows)",
                name,
                len(plan.chunks),
                plan.method,
                plan.key,
                plan.estimated_rows,
            )
        return plans

    async def _check_schemas(
        self,
        src: SourceConnection,
        texts: dict[str, str],
        when: str,
        *,
        store: StateStore | None = None,
        doc: dict[str, Any] | None = None,
        all_tables: bool = False,
    ) -> None:
        """Fail when a copied table's definition changed (or, copying a whole database, a table appeared: it
        would be missing from the replica, its CREATE being older than the position the stream starts from)."""
        changed = []
        if all_tables:
            changed += [f"{t} (created)" for t in await src.tables(self.database) if t not in texts]
        for name, text in texts.items():
            try:
                now = await src.show_create_table(self.database, name)
            except MybinlogError:
                changed.append(f"{name} (dropped)")
                continue
            if normalize_create(now) != normalize_create(text):
                changed.append(name)
        if not changed:
            return
        if store is not None and doc is not None:
            doc["status"] = "failed"
            doc["error"] = f"schema changed: {', '.join(changed)}"
            await store.save(doc)
            await self._remove_spool(store.snapshot_id)  # it cannot be resumed
        raise SnapshotError(
            f"the definition of {', '.join(changed)} changed {when} (a DDL ran): the copied rows may not match "
            "one schema, so the snapshot is not valid; start a new snapshot (without --resume) when no DDL runs "
            "on these tables"
        )

    async def _execute(
        self,
        store: StateStore,
        tables: dict[str, CopyTable],
        todo: list[Chunk],
        all_chunks: list[Chunk],
        rows_before: int,
        started: float,
    ) -> None:
        o = self.o
        spark = await self._session()
        spool = self.target.kind == "chdb"
        spool_dir: Path | None = None
        if spool:
            master = str(_context(spark).master)
            if not master.startswith("local") and not o.spool_dir:
                raise ConfigurationError(
                    f"an embedded ClickHouse (chdb) target on a cluster (master {master}) needs --spool-dir on a file "
                    "system shared by the driver and the executors; or use a ClickHouse server"
                )
            spool_dir = _spool_directory(o.spool_dir, store.snapshot_id)
            _make_spool(spool_dir, default=not o.spool_dir)
            for stale in spool_dir.iterdir():  # left by a killed run: its attempts are abandoned
                stale.unlink()
            logger.info("executors spool their batches in %s", spool_dir)
        job = CopyJob(
            snapshot_id=store.snapshot_id,
            source=self.dsn,
            tables=tables,
            capabilities=self.target.capabilities,
            sink="spool" if spool else "http",
            target_url=_executor_target_url(o.target) if not spool else "",
            meta_database=o.meta_database,
            spool_dir=str(spool_dir) if spool_dir is not None else None,
            batch_rows=o.batch_rows,
            batch_bytes=o.batch_bytes,
            hold=o.hold,
        )
        groups = balance(todo, o.parallelism) if o.parallelism else [[c] for c in todo]
        loader = (
            SpoolLoader(spool_dir, self.target, store, {c.ordinal: c for c in all_chunks}, tables)
            if spool_dir is not None
            else None
        )
        group_id = f"mybinlog-snapshot-{store.snapshot_id}"
        sc = _context(spark)

        total = sum(c.estimated_rows for c in all_chunks)
        chunk_count = len(all_chunks)
        worker = asyncio.ensure_future(
            asyncio.to_thread(run_chunks, sc, group_id, f"mybinlog snapshot {store.snapshot_id}", groups, job)
        )
        last_report = 0.0
        try:
            while True:
                done, _ = await asyncio.wait({worker}, timeout=0.2 if loader is not None else 0.5)
                if loader is not None:
                    await loader.step()
                now = time.monotonic()
                if done:
                    break  # the final line comes once, after what the executors left is loaded
                if now - last_report >= o.progress_interval:
                    last_report = now
                    states = await store.states()
                    if len(states.done) < chunk_count:  # the line with every chunk done comes once, at the end
                        self._report(store.snapshot_id, states, total, chunk_count, rows_before, now - started)
            try:
                results = worker.result()
            except Exception as exc:  # noqa: BLE001 - Py4J/Spark errors have no common base we can import
                raise _spark_error(exc, store.snapshot_id) from None
            if loader is not None:  # the executors are done: load what they left
                while await loader.step():
                    pass
            for r in results:
                cr = ChunkResult.from_dict(r)
                logger.debug(
                    "chunk %d: %d rows in %.2f s (low watermark %s)", cr.ordinal, cr.rows, cr.seconds, cr.watermark
                )
            states = await store.states()
            self._report(store.snapshot_id, states, total, chunk_count, rows_before, time.monotonic() - started)
        except BaseException:
            if not worker.done():
                with contextlib.suppress(Exception):
                    sc.cancelJobGroup(group_id)
                with contextlib.suppress(BaseException):
                    await asyncio.shield(worker)
            raise

    def _report(
        self, snapshot_id: str, states: ChunkStates, total: int, chunks: int, rows_before: int, elapsed: float
    ) -> None:
        if self.on_progress is None:
            return
        done_rows = states.rows_done
        this_run = max(0, done_rows - rows_before)
        rate = this_run / elapsed if elapsed > 0 else 0.0
        remaining = max(0, total - done_rows)
        eta = remaining / rate if rate > 0 else None
        if len(states.done) == chunks:
            eta = 0.0
        total = max(total, done_rows)
        self.on_progress(SnapshotProgress(snapshot_id, done_rows, total, len(states.done), chunks, elapsed, rate, eta))


def _local_cores(master: str | None) -> int | None:
    """The number of cores of a local master (``local``, ``local[N]``, ``local[*]``, ``local[N,F]``), else None."""
    if master is None:
        return None
    if master == "local":
        return 1
    m = re.fullmatch(r"local\[(\d+|\*)(?:,\s*\d+)?\]", master.strip())
    if m is None:
        return None
    if m.group(1) == "*":
        return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    return max(1, int(m.group(1)))


def _default_parallelism(spark: Any) -> int:
    try:
        return max(1, int(_context(spark).defaultParallelism))
    except Exception:  # noqa: BLE001 - any Spark trouble: plan for two cores
        return 2
