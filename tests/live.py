"""What the integration tests share, one copy of each (no test module imports another).

* Decoded streams: :func:`stream_events` (a non-blocking stream up to a position), :func:`decoded_changes` and
  :class:`Decoded` (its row changes), :func:`write_workload` and :class:`Written`, :func:`assert_changes_match` and
  :func:`convention_problem` (the workload's value conventions).
* TLS: :func:`make_certificate`, :func:`server_readable_dir`.
* HA: :class:`Member`, a ``replicate --standby`` process that wakes its group's condition.
* Spark snapshots: the module-scoped fixture ``spark``, :func:`require_spark`, :func:`spark_env`,
  :func:`snapshot_options` and the checks around a snapshot (:func:`catch_up`, :func:`verify_replica`,
  :func:`ch_rows`, :func:`mysql_rows`, :func:`wait_mutations`, :func:`snapshot_meta_exists`).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import decimal
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mybinlog.protocol._constants import LOG_EVENT_ARTIFICIAL_F
from mybinlog.protocol._events import (
    Event,
    GtidEvent,
    MariadbGtidEvent,
    RotateEvent,
    RowsEvent,
)
from mybinlog.source._stream import BinlogStream
from mybinlog.testing._mysql import find_mysql
from tests.conftest import skip_or_fail
from tests.faults import ReplicateProcess
from tests.servers import MariaDBServer
from tests.workload import RowChange, Workload, WorkloadResult, normalize, parse_type

REPO = Path(__file__).resolve().parents[1]
STREAM_DEADLINE = 30.0  # seconds; generous for a loaded 2-core CI machine, never reached when things work


# --- decoded streams


@dataclass(frozen=True)
class Decoded:
    """One decoded row change; ``gtid`` is the GTID of its transaction (MariaDB's or MySQL's text)."""

    gtid: str
    table: str
    kind: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None


class ChangeCollector:
    """Collects the row changes of schema ``db`` from events fed in stream order."""

    def __init__(self, db: str) -> None:
        self.db = db
        self.changes: list[Decoded] = []
        self._gtid = ""

    def feed(self, event: Event) -> int:
        """Account for one event; returns how many row changes it added."""
        if isinstance(event, MariadbGtidEvent | GtidEvent):
            self._gtid = str(event.gtid)
        if not isinstance(event, RowsEvent) or event.schema != self.db:
            return 0
        names = event.columns
        assert None not in names, f"{event.table_name}: the binlog carries column names (binlog_row_metadata=FULL)"
        gtid, table, add = self._gtid, event.table_name, self.changes.append
        for row in event.rows:
            if event.kind == "update":
                before, after = row
                add(
                    Decoded(
                        gtid,
                        table,
                        "update",
                        dict(zip(names, before, strict=True)),
                        dict(zip(names, after, strict=True)),
                    )
                )
            elif event.kind == "insert":
                add(Decoded(gtid, table, "insert", None, dict(zip(names, row, strict=True))))
            else:
                add(Decoded(gtid, table, "delete", dict(zip(names, row, strict=True)), None))
        return len(event.rows)


def decoded_changes(events: Iterable[Event], db: str) -> list[Decoded]:
    """The row changes of schema ``db`` in ``events`` (in order), as column-name dicts."""
    collector = ChangeCollector(db)
    for event in events:
        collector.feed(event)
    return collector.changes


_INT_BASES = frozenset({"tinyint", "smallint", "mediumint", "int", "bigint", "year", "bit"})


_TEXT_BASES = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum"})


_BYTES_BASES = frozenset({"varbinary", "tinyblob", "blob", "mediumblob", "longblob", "geometry", "point"})


def convention_problem(value: Any, sql_type: str, flavor: str = "mariadb") -> str | None:
    """Why ``value`` breaks the documented decoder value convention for ``sql_type`` (None when it follows it).

    ``normalize`` accepts many representations (it also reads pymysql output); this checks the one form the
    decoder promises (tests/workload.py, docs/source-layer.md).
    """
    if value is None:
        return None
    info = parse_type(sql_type)
    base = info.base
    ok: bool
    if base in _INT_BASES:
        ok = type(value) is int
        if ok and info.unsigned:
            ok = value >= 0
    elif base == "decimal":
        scale = info.args[1] if len(info.args) > 1 else 0
        ok = isinstance(value, decimal.Decimal) and value.as_tuple().exponent == -scale
    elif base in ("float", "double"):
        ok = type(value) is float
    elif base == "date":
        ok = (isinstance(value, dt.date) and not isinstance(value, dt.datetime)) or (
            isinstance(value, str) and value.endswith(("-00", "0000-00-00"))
        )
    elif base == "time":
        ok = isinstance(value, dt.timedelta)
    elif base == "datetime":
        ok = (isinstance(value, dt.datetime) and value.tzinfo is None) or (isinstance(value, str) and "-00" in value)
    elif base == "timestamp":
        ok = (isinstance(value, dt.datetime) and value.utcoffset() == dt.timedelta(0)) or (
            isinstance(value, str) and value.startswith("0000-00-00 00:00:00")
        )
    elif base in _TEXT_BASES:
        ok = type(value) is str
    elif base == "binary":
        ok = type(value) is bytes and len(value) == info.length
    elif base in ("uuid", "inet6"):
        ok = type(value) is bytes and len(value) == 16
    elif base in _BYTES_BASES:
        ok = type(value) is bytes
    elif base == "set":
        ok = isinstance(value, frozenset) and value <= set(info.args)
    elif base == "json":
        if flavor == "mariadb":
            ok = type(value) is str  # MariaDB: JSON is a LONGTEXT alias, the binlog cannot tell
        else:  # MySQL's binary JSON: the document as Python objects
            ok = type(value) in (dict, list, str, int, float, bool)
    elif base == "vector":
        ok = type(value) is list and all(type(x) is float for x in value) and len(value) == info.length
    else:
        return f"no convention known for {sql_type}"
    return None if ok else f"{type(value).__name__} {value!r:.120} breaks the convention for {sql_type}"


def _image_problems(
    where: str,
    image: str,
    got: dict[str, Any] | None,
    want: dict[str, Any] | None,
    types: dict[str, str],
    flavor: str = "mariadb",
) -> list[str]:
    if got is None or want is None:
        return [] if got is want else [f"{where}: {image} image {'missing' if got is None else 'unexpected'}"]
    if list(got) != list(want):
        return [f"{where}: {image} columns {list(got)} != written {list(want)}"]
    problems = []
    for name, written in want.items():
        value = got[name]
        sql_type = types[name]
        convention = convention_problem(value, sql_type, flavor)
        if convention:
            problems.append(f"{where}: {image}.{name}: {convention}")
        elif normalize(value, sql_type) != normalize(written, sql_type):
            problems.append(f"{where}: {image}.{name} ({sql_type}): decoded {value!r:.200} != written {written!r:.200}")
    return problems


def assert_changes_match(decoded: list[Decoded], expected: list[RowChange], result: WorkloadResult) -> None:
    """Same count, order, tables, kinds, columns and (normalized) values; one GTID per workload transaction."""
    problems: list[str] = []
    if len(decoded) != len(expected):
        problems.append(f"decoded {len(decoded)} row changes, the workload wrote {len(expected)}")
    txn_gtids: dict[int, str] = {}
    for i, (got, want) in enumerate(zip(decoded, expected, strict=False)):
        where = f"change #{i} (txn {want.txn}, {want.kind} {want.table})"
        if (got.table, got.kind) != (want.table, want.kind):
            problems.append(f"{where}: decoded {got.kind} {got.table}")
            continue
        if txn_gtids.setdefault(want.txn, got.gtid) != got.gtid:
            problems.append(f"{where}: in GTID {got.gtid}, but its transaction began in {txn_gtids[want.txn]}")
        types = result.column_types[want.table]
        flavor = "mysql" if ":" in got.gtid else "mariadb"  # MySQL GTIDs are uuid:gno
        problems += _image_problems(where, "before", got.before, want.before, types, flavor)
        problems += _image_problems(where, "after", got.after, want.after, types, flavor)
    if len(set(txn_gtids.values())) != len(txn_gtids):
        problems.append(f"two workload transactions share a GTID: {txn_gtids}")
    assert not problems, f"{len(problems)} mismatches:\n" + "\n".join(problems[:25])


async def stream_events(dsn: str, end: tuple[str, int], **start: Any) -> list[Event]:
    """Every event of a non-blocking stream up to (file, offset) ``end`` (the stream may go further: other
    tests write to the shared server)."""
    events: list[Event] = []
    async with asyncio.timeout(STREAM_DEADLINE), BinlogStream(dsn, blocking=False, **start) as stream:
        async for event in stream:
            if past_end(event, end):
                break
            events.append(event)
    return events


def past_end(event: Event, end: tuple[str, int]) -> bool:
    """True for a positioned event that starts at or after ``end``. ROTATE events are never past it: they end
    a file before ``end``'s file, and online their ``file`` is the next one (see
    test_stream_rotate_event_is_in_the_file_it_ends)."""
    if event.file is None or event.offset is None or event.flags & LOG_EVENT_ARTIFICIAL_F:
        return False
    if isinstance(event, RotateEvent):
        return False
    return (os.path.basename(event.file), event.offset) >= end


@dataclass
class Written:
    db: str
    result: WorkloadResult
    gtid_before: str  # @@gtid_binlog_pos just before the workload
    start: tuple[str, int]  # binlog file and offset just before the workload
    end: tuple[str, int]  # ... and just after it


def write_workload(
    server: MariaDBServer,
    db: str,
    seed: int,
    *,
    n_transactions: int,
    rotate_midway: bool = False,
    omit_types: Sequence[str] = (),
    **run: Any,
) -> Written:
    """Run ``Workload(seed)`` in a new database ``db``; ``rotate_midway``: FLUSH BINARY LOGS halfway through;
    ``omit_types``: column base types left out of ``all_types`` on MySQL (``Workload(omit_types=...)``)."""
    server.drop_database(db)
    server.create_database(db)
    gtid_before = server.gtid_binlog_pos()
    start = server.master_status()
    conn = server.connect(database=db)
    try:
        workload = Workload(seed, omit_types=omit_types)
        if rotate_midway:
            workload.run(conn, db, n_transactions // 2, **run)
            server.flush_binary_logs()
            n_transactions -= n_transactions // 2
        result = workload.run(conn, db, n_transactions, **run)
    finally:
        conn.close()
    end = server.master_status()
    if rotate_midway:
        assert end[0] > start[0]
    return Written(db, result, gtid_before, start, end)


# --- TLS


def make_certificate(directory: Path) -> tuple[Path, Path]:
    openssl = shutil.which("openssl")
    if openssl is None:
        skip_or_fail("openssl is not installed; it is needed to make a test certificate")
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def server_readable_dir(server_kind: str, tmp_path: Path) -> tuple[Path, Callable[[Path], str]]:
    """A directory the server of this flavour can read files from, and how the server names a path in it: a
    chrooted mysqld sees only its root (a certificate it cannot read leaves it without TLS, and MySQL starts
    anyway)."""
    if server_kind == "mysql":
        binaries = find_mysql()
        if binaries is not None:
            return binaries.scratch_dir("mybinlog-tls-"), binaries.inside
    return tmp_path, str


# --- HA


class Member(ReplicateProcess):
    """A ``replicate --standby`` process whose log lines also wake the group's condition (see :class:`Group`)."""

    def __init__(self, group: threading.Condition, *args: Any, **kwargs: Any) -> None:
        self.group = group  # before the pump threads start (in ReplicateProcess.__init__)
        super().__init__(*args, **kwargs)

    def _pump(self, stream: Any, sink: list[str]) -> None:
        with stream:  # read to the end, then close our end of the pipe (a leak fails the test: tests/leaks.py)
            for line in stream:
                with self._cond:
                    sink.append(line)
                    self._cond.notify_all()
                with self.group:
                    self.group.notify_all()
        with self._cond:
            self._done += 1
            self._cond.notify_all()
        with self.group:
            self.group.notify_all()

    def lines_from(self, start: int) -> list[str]:
        with self._cond:
            return self.lines[start:]


# --- Spark snapshots


def require_spark() -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        skip_or_fail("pyspark is not installed: run `bash scripts/setup.sh --test`")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        skip_or_fail("Java (17+) is needed by Spark: apt-get install openjdk-17-jre-headless")


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """One local Spark session for this module (local[2], no UI)."""
    require_spark()
    from mybinlog.snapshot import spark_session

    session = spark_session("local[2]")
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


def populate_extra(conn: Any, table: str, ids: list[int], key_type: str = "INT") -> None:
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{table}` (id {key_type} PRIMARY KEY, n INT NOT NULL, pad VARCHAR(30))")
        for i in range(0, len(ids), 2000):
            part = ids[i : i + 2000]
            cur.execute(
                f"INSERT INTO `{table}` (id, n, pad) VALUES " + ",".join(f"({k}, {k % 7}, 'p{k}')" for k in part)
            )


async def catch_up(dsn: str, target_url: str, db: str) -> None:
    from mybinlog.clickhouse import open_target
    from mybinlog.replication import Replicator

    target = await open_target(target_url)
    try:
        await asyncio.wait_for(Replicator(dsn, target, database=db).run(until_caught_up=True), 300)
    finally:
        await target.aclose()


async def verify_replica(dsn: str, target_url: str, db: str) -> Any:
    from mybinlog.verification import verify

    target = await open_target_(target_url)
    try:
        return await verify(dsn, target, databases=[db])
    finally:
        await target.aclose()


async def open_target_(url: str) -> Any:
    from mybinlog.clickhouse import open_target

    return await open_target(url)


async def ch_rows(target_url: str, sql: str) -> list[list[str | None]]:
    target = await open_target_(target_url)
    try:
        return await target.query(sql)
    finally:
        await target.aclose()


def mysql_rows(server: MariaDBServer, db: str, sql: str) -> list[tuple[Any, ...]]:
    conn = server.connect(database=db)
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall())
    finally:
        conn.close()


def snapshot_options(**kwargs: Any) -> Any:
    from mybinlog.snapshot import SnapshotOptions

    return SnapshotOptions(progress_interval=0.5, **kwargs)


async def wait_mutations(url: str, db: str) -> None:
    for _ in range(3000):
        rows = await ch_rows(url, f"SELECT count() FROM system.mutations WHERE database = '{db}' AND is_done = 0")
        if int(rows[0][0] or 0) == 0:
            return
        await asyncio.sleep(0.02)  # polling the server's mutation state
    raise AssertionError("ClickHouse mutation did not finish")


def spark_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env.pop("MYBINLOG_PASSWORD", None)
    return env


async def snapshot_meta_exists(url: str) -> bool:
    rows = await ch_rows(
        url, "SELECT count() FROM system.tables WHERE database = 'mybinlog_meta' AND name = 'snapshot_chunks'"
    )
    return int(rows[0][0] or 0) > 0
