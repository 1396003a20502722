"""Live conformance: a randomized workload written to MariaDB and to MySQL, decoded back value by value.

Every row change the workload wrote (``tests.workload``: every column type, extremes, NULLs, zero dates,
multi-row statements, the no-PK and composite-PK tables, ALTER TABLE ADD/DROP COLUMN in the middle) must come
back from :class:`BinlogStream` in binlog order, with the same kind, table, column names (those at the time of
the event) and values (compared through ``tests.workload.normalize``, after checking that each decoded value
has the Python type the documented value conventions promise). The binlog files read from disk with
``read_binlog_file`` must decode to exactly what the stream delivered, event by event.

Position tests: ``stream.position`` after each completed transaction is the exact boundary the server itself
reports (MariaDB: ``BINLOG_GTID_POS(file, offset)``; MySQL: the file's PREVIOUS_GTIDS and the GTIDs that
``SHOW BINLOG EVENTS`` lists before the offset, which must be where a transaction starts), and a new stream started
from a saved mid-workload position (GTID or file/offset) yields exactly the remaining transactions, nothing lost and
nothing repeated.

Everything runs on the shared session server; each workload writes its own database and every comparison is
bounded to the binlog range that workload wrote.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from mybinlog.protocol._constants import LOG_EVENT_ARTIFICIAL_F
from mybinlog.protocol._events import (
    AnnotateRowsEvent,
    BinlogCheckpointEvent,
    Event,
    GtidEvent,
    HeartbeatEvent,
    MariadbGtidEvent,
    QueryEvent,
    RotateEvent,
    RowsEvent,
    TableMapEvent,
    XidEvent,
)
from mybinlog.protocol._gtid import GtidSet, MariaDBGtidSet, MySQLGtidSet, parse_gtid_set
from mybinlog.protocol._position import BinlogPosition
from mybinlog.source._files import read_binlog_file
from mybinlog.source._stream import BinlogStream
from tests.live import (
    ChangeCollector,
    Written,
    assert_changes_match,
    decoded_changes,
    past_end,
    stream_events,
    write_workload,
)
from tests.servers import MariaDBServer
from tests.workload import Workload, WorkloadResult

SEEDS = (101, 202, 303)
N_TRANSACTIONS = 30
DEADLINE = 30.0  # seconds; generous for a loaded 2-core CI machine, never reached when things work


# --- decoding helpers (also used by test_differential.py) ---


# --- the workloads ---


@pytest.fixture(scope="module")
def module_server(server_kind: str, request: pytest.FixtureRequest) -> MariaDBServer:
    """The session server of the flavour under test, for module-scoped fixtures (``server`` is per test)."""
    found: MariaDBServer = request.getfixturevalue(server_kind)
    return found


def _gtid_events(events: Iterable[Event]) -> list[MariadbGtidEvent | GtidEvent]:
    return [e for e in events if isinstance(e, MariadbGtidEvent | GtidEvent)]


def server_gtid_pos(server: MariaDBServer, file: str, offset: int) -> GtidSet | None:
    """The GTID set the server says ``file:offset`` stands for, or None when no transaction starts there.

    MariaDB: ``BINLOG_GTID_POS``. MySQL has no such function: the file's PREVIOUS_GTIDS plus every GTID that
    ``SHOW BINLOG EVENTS`` lists before ``offset``, and ``offset`` must be where a GTID event starts (a transaction
    begins) or where the file ends."""
    if server.flavor == "mariadb":
        text = server.query_value("SELECT BINLOG_GTID_POS(%s, %s)", (file, offset))
        return None if text is None else parse_gtid_set(str(text), "mariadb")
    rows = server.query(f"SHOW BINLOG EVENTS IN '{file}'")
    gtids = MySQLGtidSet()
    at_boundary = offset == 4  # the start of a file: its PREVIOUS_GTIDS tell the set
    for _log, pos, kind, _sid, end, info in rows:
        if kind in ("Format_desc", "Previous_gtids"):  # the file's header, before any transaction
            if kind == "Previous_gtids":
                gtids = gtids | MySQLGtidSet.parse(str(info).replace("\n", ""))
            continue
        if int(pos) >= offset:
            # a transaction starts there, or the file ends there (ROTATE, STOP)
            at_boundary = at_boundary or (
                int(pos) == offset and kind in ("Gtid", "Anonymous_Gtid", "Gtid_tagged", "Rotate", "Stop")
            )
            break
        if kind in ("Gtid", "Gtid_tagged"):
            text = str(info).split("'")[1]  # SET @@SESSION.GTID_NEXT= 'uuid:gno'
            gtids = gtids | MySQLGtidSet.parse(text)
        at_boundary = int(end) == offset  # the end of the file's last event (the active file)
    return gtids if at_boundary else None


@pytest.fixture(scope="module", params=SEEDS, ids=lambda seed: f"seed{seed}")
def written(request: pytest.FixtureRequest, module_server: MariaDBServer) -> Iterator[Written]:
    seed: int = request.param
    server = module_server
    w = write_workload(
        server,
        f"live_wl_{seed}",
        seed,
        n_transactions=N_TRANSACTIONS,
        rotate_midway=seed == SEEDS[-1],
        statements_per_txn=4,
        ddl_every=6,
        max_rows_per_statement=4,
    )
    assert len(w.result.ddl) > 3 + 2, "the workload ran ALTER TABLEs in the middle"
    assert {c.kind for c in w.result.changes} == {"insert", "update", "delete"}
    yield w
    server.drop_database(w.db)


async def test_stream_matches_workload(server: MariaDBServer, written: Written) -> None:
    events = await stream_events(server.repl_dsn, written.end, gtid_set=written.gtid_before)
    decoded = decoded_changes(events, written.db)
    assert_changes_match(decoded, written.result.changes, written.result)
    # every table, kind and DDL phase was exercised
    assert {(d.table, d.kind) for d in decoded} >= {
        ("all_types", "insert"),
        ("all_types", "update"),
        ("all_types", "delete"),
        ("composite_pk", "insert"),
        ("no_pk", "insert"),
    }
    assert any("extra_" in name for d in decoded for name in (d.after or d.before or {}))


def _comparable(event: Event) -> tuple[Any, ...]:
    """What must be identical between the network and the file decoding of one event."""
    key: tuple[Any, ...] = (
        event.type_code,
        event.offset,
        event.log_pos,
        event.size,
        event.timestamp,
        event.server_id,
        event.flags & ~1,  # LOG_EVENT_BINLOG_IN_USE_F: set in the active file's FORMAT_DESCRIPTION only
        # a ROTATE's file is wrong online (test_stream_rotate_event_is_in_the_file_it_ends)
        None if isinstance(event, RotateEvent) else os.path.basename(event.file or ""),
    )
    if isinstance(event, RotateEvent):
        key += (event.next_file, event.position)
    elif isinstance(event, RowsEvent):
        key += (event.schema, event.table_name, event.columns, event.rows_flags, event.rows)
    elif isinstance(event, MariadbGtidEvent):
        key += (str(event.gtid), event.gtid_flags, event.commit_id)
    elif isinstance(event, GtidEvent):
        key += (str(event.gtid), event.last_committed, event.sequence_number, event.immediate_commit_timestamp)
    elif isinstance(event, QueryEvent):
        key += (event.schema, event.query, event.error_code)
    elif isinstance(event, XidEvent):
        key += (event.xid,)
    elif isinstance(event, TableMapEvent):
        key += (event.table_id, event.schema, event.table_name, event.table.column_names)
    return key


async def test_files_match_stream(server: MariaDBServer, written: Written) -> None:
    streamed = await stream_events(server.repl_dsn, written.end, gtid_set=written.gtid_before)
    # From the workload's first GTID on. Artificial events (fake ROTATE...) and heartbeats exist only online;
    # ANNOTATE_ROWS (the statement text) only in the file: the server sends it to replicas that ask for it in
    # the dump flags (BINLOG_SEND_ANNOTATE_ROWS_EVENT), and BinlogStream does not ask.
    first = next(i for i, e in enumerate(streamed) if isinstance(e, MariadbGtidEvent | GtidEvent))
    online = [
        e
        for e in streamed[first:]
        if not (e.flags & LOG_EVENT_ARTIFICIAL_F or e.log_pos == 0 or isinstance(e, HeartbeatEvent))
    ]
    begin = (os.path.basename(online[0].file or ""), online[0].offset or 0)
    assert begin >= written.start
    on_disk: list[Event] = []
    for path in server.binlog_paths():
        if begin[0] <= path.name <= written.end[0]:
            # stop at the end of the workload: later writes may still be arriving in the active file
            in_range = itertools.takewhile(
                lambda e: (e.file and os.path.basename(e.file), e.offset) < written.end, read_binlog_file(path)
            )
            on_disk.extend(e for e in in_range if begin <= (path.name, e.offset or 0))
    # consecutive events tile the file: each starts where the previous one ended
    for prev, cur in itertools.pairwise(on_disk):
        if prev.file == cur.file:
            assert cur.offset == prev.log_pos == (prev.offset or 0) + prev.size
    offline = [e for e in on_disk if not isinstance(e, AnnotateRowsEvent)]
    assert len(online) == len(offline)
    assert sum(isinstance(e, RowsEvent) for e in online) > N_TRANSACTIONS
    for net, disk in zip(online, offline, strict=True):
        assert _comparable(net) == _comparable(disk), f"{net.type_name} at {net.file}:{net.offset}"


async def test_blocking_stream_delivers_transactions_committed_after_start(
    server: MariaDBServer, db: str, db_conn: Any
) -> None:
    """Each round of writes starts only after the stream delivered the previous one: the stream must wait at
    the end of the binlog and wake up for every new transaction."""
    workload = Workload(7, large_values=False)
    workload.create_schema(db_conn, db)
    collector = ChangeCollector(db)
    changed = asyncio.Condition()
    result: WorkloadResult | None = None

    async with BinlogStream(server.repl_dsn, blocking=True) as stream:  # default start: the current end

        async def reader() -> None:
            async for event in stream:
                if collector.feed(event):
                    async with changed:
                        changed.notify_all()

        async def writer() -> None:
            nonlocal result
            for _ in range(4):
                result = await asyncio.to_thread(workload.run, db_conn, db, 2, 3, ddl_every=0, insert_extremes=False)
                want = len(result.changes)
                async with changed:
                    await changed.wait_for(lambda: len(collector.changes) >= want)  # noqa: B023

        async with asyncio.timeout(DEADLINE), asyncio.TaskGroup() as tg:
            reading = tg.create_task(reader())
            await tg.create_task(writer())
            reading.cancel()

    assert result is not None
    assert len(result.changes) >= 8
    assert_changes_match(collector.changes, result.changes, result)


# --- positions ---


@dataclass
class Boundaries:
    written: Written
    events: list[Event]
    #: (index in events of the event that completed the transaction, position after it)
    positions: list[tuple[int, BinlogPosition]]
    #: (index in events of a ROTATE event, position after it)
    rotations: list[tuple[int, BinlogPosition]]
    #: stream.position when the first GTID event arrived (before any transaction completed)
    initial: BinlogPosition


@pytest.fixture(scope="module")
async def boundaries(module_server: MariaDBServer) -> Boundaries:
    server = module_server
    w = write_workload(
        server,
        "live_positions",
        55,
        n_transactions=12,
        rotate_midway=True,
        statements_per_txn=3,
        ddl_every=4,
        insert_extremes=False,
    )
    events: list[Event] = []
    positions: list[tuple[int, BinlogPosition]] = []
    rotations: list[tuple[int, BinlogPosition]] = []
    initial: BinlogPosition | None = None
    async with (
        asyncio.timeout(DEADLINE),
        BinlogStream(server.repl_dsn, gtid_set=w.gtid_before, blocking=False) as stream,
    ):
        last = stream.position
        async for event in stream:
            if past_end(event, w.end):
                break
            events.append(event)
            if initial is None and isinstance(event, MariadbGtidEvent | GtidEvent):
                initial = stream.position
            if stream.position != last:
                last = stream.position
                if isinstance(event, MariadbGtidEvent | GtidEvent):
                    continue  # a GTID start learns its boundary's offset from the first GTID event
                (rotations if isinstance(event, RotateEvent) else positions).append((len(events) - 1, last))
    assert initial is not None
    return Boundaries(w, events, positions, rotations, initial)


async def test_positions_are_exact_transaction_boundaries(server: MariaDBServer, boundaries: Boundaries) -> None:
    w, events = boundaries.written, boundaries.events
    gtids = _gtid_events(events)
    # one position per transaction: 12 data transactions + the CREATE TABLEs + the ALTERs
    assert len(boundaries.positions) == len(gtids) == 12 + len(w.result.ddl)
    for index, position in boundaries.positions:
        event = events[index]
        assert isinstance(event, XidEvent | QueryEvent), f"position moved at {event.type_name}"
        if isinstance(event, QueryEvent):
            assert event.query.upper().startswith(("CREATE TABLE", "ALTER TABLE")), event.query
        assert (position.file, position.offset) == (event.file, event.log_pos)
        assert position.timestamp == event.timestamp
        server_pos = server_gtid_pos(server, position.file, position.offset)
        assert server_pos is not None, f"the server says {position} is not a transaction boundary"
        assert position.gtid_set == server_pos, position
    # ... and the next transaction (or the ROTATE that ends the file) starts exactly there
    for index, position in boundaries.positions[:-1]:
        following = events[index + 1]
        assert following.offset == position.offset
        if isinstance(following, RotateEvent):
            assert not following.flags & LOG_EVENT_ARTIFICIAL_F
        else:  # MariaDB writes BINLOG_CHECKPOINT events between transactions, too
            assert isinstance(following, MariadbGtidEvent | GtidEvent | BinlogCheckpointEvent)
            assert following.file == position.file


async def test_positions_follow_rotation(server: MariaDBServer, boundaries: Boundaries) -> None:
    events = boundaries.events
    real = [(i, p) for i, p in boundaries.rotations if not events[i].flags & LOG_EVENT_ARTIFICIAL_F]
    assert len(real) == 1, "the workload rotated once (FLUSH BINARY LOGS)"
    for index, position in boundaries.rotations:
        rotate = events[index]
        assert isinstance(rotate, RotateEvent)
        assert (position.file, position.offset) == (rotate.next_file, rotate.position)
    index, position = real[0]
    previous = [p for i, p in boundaries.positions if i < index][-1]
    assert position.gtid_set == previous.gtid_set  # a rotation completes no transaction
    assert position.gtid_set == server_gtid_pos(server, position.file, position.offset)
    assert any(p.file == position.file for _, p in boundaries.positions if _ > index)


async def test_position_before_the_first_transaction_is_a_boundary(
    server: MariaDBServer, boundaries: Boundaries
) -> None:
    initial = boundaries.initial
    first_gtid = _gtid_events(boundaries.events)[0]
    assert initial.gtid_set == parse_gtid_set(boundaries.written.gtid_before, server.flavor)
    server_pos = server_gtid_pos(server, initial.file, initial.offset)
    assert server_pos is not None
    assert server_pos == initial.gtid_set
    assert (initial.file, initial.offset) == (first_gtid.file, first_gtid.offset)


async def test_stream_rotate_event_is_in_the_file_it_ends(boundaries: Boundaries) -> None:
    events = boundaries.events
    index, _ = next((i, p) for i, p in boundaries.rotations if not events[i].flags & LOG_EVENT_ARTIFICIAL_F)
    rotate = events[index]
    assert isinstance(rotate, RotateEvent)
    previous = events[index - 1]
    assert previous.file != rotate.next_file
    assert rotate.file == previous.file
    assert rotate.offset == previous.log_pos


@pytest.mark.parametrize("mode", ["gtid", "file"])
@pytest.mark.parametrize("k", [3, 6, 9])  # 6: the last transaction before the rotation
async def test_restart_from_saved_position_yields_the_rest(
    server: MariaDBServer, boundaries: Boundaries, mode: str, k: int
) -> None:
    w, events = boundaries.written, boundaries.events
    data_commits = [(i, p) for i, p in boundaries.positions if isinstance(events[i], XidEvent)]
    assert len(data_commits) == 12
    index, saved = data_commits[k - 1]  # after the k-th data transaction (0-based txn k-1)
    before = decoded_changes(events[: index + 1], w.db)
    rest = decoded_changes(events[index + 1 :], w.db)
    assert before
    assert rest
    assert before + rest == decoded_changes(events, w.db)

    start: dict[str, Any] = (
        {"gtid_set": saved.gtid_set} if mode == "gtid" else {"binlog_file": saved.file, "position": saved.offset}
    )
    resumed = await stream_events(server.repl_dsn, w.end, **start)
    got = decoded_changes(resumed, w.db)
    assert got == rest  # exactly the remaining transactions: none lost, none repeated
    assert_changes_match(got, [c for c in w.result.changes if c.txn >= k], w.result)
    first_gtid = _gtid_events(resumed)[0]
    assert saved.gtid_set is not None
    if isinstance(first_gtid, MariadbGtidEvent):
        assert isinstance(saved.gtid_set, MariaDBGtidSet)
        last_done = saved.gtid_set.get(first_gtid.gtid.domain_id)
        assert last_done is not None
        assert first_gtid.gtid.seq_no == last_done.seq_no + 1
    else:  # MySQL: the next transaction number of the server's UUID
        assert isinstance(saved.gtid_set, MySQLGtidSet)
        assert first_gtid.gtid is not None
        sid, tag = first_gtid.gtid.sid, first_gtid.gtid.tag
        assert first_gtid.gtid.gno == saved.gtid_set.intervals(sid, tag)[-1][1] + 1
        assert first_gtid.gtid not in saved.gtid_set
