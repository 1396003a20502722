"""BinlogStream: decoded events from a live server, resuming after disconnects without loss or repeats."""

from __future__ import annotations

import asyncio
import logging
import random
import re
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable
from dataclasses import replace
from itertools import compress, count
from operator import attrgetter, not_
from types import TracebackType
from typing import Any, Literal

from ..errors import (
    ConfigurationError,
    MybinlogError,
    SourceConnectionError,
    SourceError,
    SourceHistoryError,
    TransactionInterruptedError,
)
from ..protocol import (
    PASSIVE_TYPES,
    BinlogCheckpointEvent,
    BinlogPosition,
    Event,
    EventDecoder,
    FormatDescriptionEvent,
    GtidSet,
    HeartbeatEvent,
    MariadbGtidListEvent,
    MariaDBGtidSet,
    MySQLGtidSet,
    PositionTracker,
    PreviousGtidsEvent,
    RotateEvent,
    Transaction,
    TransactionCollector,
    TransactionPayloadEvent,
    parse_gtid_set,
    speedups,
)
from ._connection import BinlogConnection, ServerInfo, prefer_server
from ._dsn import DSN
from ._failover import check_other_server

__all__ = ["BinlogStream"]

logger = logging.getLogger("mybinlog.stream")

_U32 = 1 << 32
_type_code = attrgetter("type_code")
_NUMBERED = re.compile(r"^(.*)\.(\d+)$")


def _file_order(name: str) -> tuple[str, int] | None:
    """(stem, number) of a binlog file name (``binlog.000042`` -> ``("binlog", 42)``), None when not numbered."""
    m = _NUMBERED.match(name)
    return (m.group(1), int(m.group(2))) if m else None


# Position bookkeeping, not transaction data: a reconnect re-sends some of these (and, in GTID mode, not the
# BINLOG_CHECKPOINTs between transactions); they are never counted as already-yielded transaction events.
_CONTROL = (
    FormatDescriptionEvent,
    RotateEvent,
    HeartbeatEvent,
    PreviousGtidsEvent,
    MariadbGtidListEvent,
    BinlogCheckpointEvent,
)


_Ready: Any = speedups.Ready if speedups is not None else None
_StreamIter: Any = speedups.StreamIter if speedups is not None else None
# the indexes of a batch's non-passive events (the compiled core's scan; the chained maps of _track otherwise)
_active_indexes: Any = speedups.active_indexes if speedups is not None else None


class BinlogStream:
    """Stream decoded binlog events from a MySQL or MariaDB server.

    ::

        async with BinlogStream("mysql://repl:secret@db:3306", gtid_set="0-1-100") as stream:
            async for event in stream:
                ...
                checkpoint(stream.position)   # a transaction boundary, safe to resume from

    Where to start (pick one; default: the server's current end, i.e. only new changes):

    - ``gtid_set``: after these executed GTIDs (MySQL GTID set or MariaDB GTID position, text or object);
    - ``binlog_file`` (+ ``position``, default 4): at that file and offset;
    - ``resume_from``: a :class:`BinlogPosition` an earlier stream reported (a checkpoint): by its GTID set when it
      has one and the server logs GTIDs, else by its file and offset;
    - ``from_beginning=True``: the oldest binlog file still on the server.

    ``blocking=False`` stops at the current end of the binlog (``async for`` ends); otherwise the stream waits
    for new events. ``position`` is the last completed transaction's boundary: persist it after you have
    handled that transaction, and start from it after a restart.

    When the connection drops, the stream reconnects (exponential backoff, up to ``max_reconnect_attempts``
    consecutive failed rounds and, when ``max_reconnect_seconds`` is set, for at most that long; each attempt logged)
    from ``position``, then skips the events of the interrupted transaction
    it had already yielded, so every event reaches you exactly once. A connection that delivers no byte (no event, no
    heartbeat) for ``idle_timeout`` seconds (default ``max(30, 4 * heartbeat_period)``) counts as lost: a half-open
    connection to a server that vanished without closing it is found that way.

    **Several servers** (``mysql://repl@db1:3306,db2:3306``, servers of one replication topology): the stream
    starts on the first that works and, when its server fails, tries the others in turn (each round of the
    reconnection tries every server, the current one first). Before it reads from another server than the one its
    position was read from, it checks that server's history by GTIDs (:mod:`mybinlog.source._failover`): a server
    that lags behind the position is waited for (:class:`SourceLaggingError`, within the reconnect budget), one with
    errant transactions or of another topology is refused (:class:`SourceHistoryError`). ``server`` names the server
    being read, ``failovers`` counts the moves and ``last_failover`` says why the last one happened.

    Errors that retrying cannot fix (wrong
    password, purged binlog, server misconfigured) are raised at once.

    Before resuming (at start from ``gtid_set``/``binlog_file``/``resume_from``, and after every reconnect) the
    stream checks that the server's history contains the position: its executed GTIDs include the position's, and
    on the same server its binlog does not end before the position. A server whose history went backwards (RESET
    MASTER, a restored backup, another server with another history) raises :class:`SourceHistoryError` instead of
    streaming something else. A failover to another server (a new ``server_id``) is followed in GTID mode (the
    positions then carry the new ``server_id``) and refused in file mode, where offsets of one server mean nothing
    on another.

    A server whose ``binlog_row_image`` is not FULL is refused (:class:`PreconditionError`) unless
    ``require_full_row_image=False``: MINIMAL and NOBLOB row images then give :data:`mybinlog.MISSING` for the
    columns they leave out (``mybinlog dump`` streams so).
    """

    def __init__(
        self,
        dsn: str | DSN,
        *,
        gtid_set: str | GtidSet | None = None,
        binlog_file: str | None = None,
        position: int = 4,
        resume_from: BinlogPosition | None = None,
        from_beginning: bool = False,
        blocking: bool = True,
        server_id: int | None = None,
        heartbeat_period: float = 5.0,
        verify_checksum: bool = True,
        check_preconditions: bool = True,
        require_full_row_image: bool = True,
        max_reconnect_attempts: int = 10,
        reconnect_backoff: tuple[float, float] = (0.1, 10.0),
        max_reconnect_seconds: float | None = None,
        idle_timeout: float | None = None,
    ) -> None:
        self.dsn = dsn if isinstance(dsn, DSN) else DSN.parse(dsn)
        if (gtid_set is not None) + (binlog_file is not None) + (resume_from is not None) + bool(from_beginning) > 1:
            raise ConfigurationError("give at most one of gtid_set, binlog_file, resume_from and from_beginning=True")
        if resume_from is not None and resume_from.gtid_set is None and not resume_from.file:
            raise ConfigurationError(f"cannot resume from {resume_from}: it has neither a GTID set nor a binlog file")
        if max_reconnect_attempts < 0:
            raise ConfigurationError("max_reconnect_attempts must be >= 0")
        self._gtid_arg = gtid_set
        self._resume_arg = resume_from
        self._file_arg = binlog_file
        self._pos_arg = position
        self._from_beginning = from_beginning
        self.blocking = blocking
        self.server_id = server_id
        self.heartbeat_period = heartbeat_period
        self.verify_checksum = verify_checksum
        self.check_preconditions = check_preconditions
        self.require_full_row_image = require_full_row_image
        self.max_reconnect_attempts = max_reconnect_attempts
        self.reconnect_backoff = reconnect_backoff
        self.max_reconnect_seconds = max_reconnect_seconds
        self.idle_timeout = idle_timeout
        self._server_index = 0  # which of the DSN's servers the stream reads (or tries first)
        self.failovers = 0
        self.last_failover: str | None = None
        self._conn: BinlogConnection | None = None
        self._decoder: EventDecoder | None = None
        self._tracker: PositionTracker | None = None
        self._mode: Literal["gtid", "file"] = "file"
        self._yielded_in_txn = 0  # transaction events yielded since the last completed transaction
        self._skip = 0  # after a reconnect: transaction events to drop (already yielded)
        self._replaying = False
        # decoded events not handed out yet; the tracker runs ahead by up to one received batch. ``_marks``
        # holds (event, position) for the pending events after which the position moves (transaction ends):
        # the position holds once that event is handed out.
        self._pending: deque[Event] = deque()
        self._marks: deque[tuple[Event, BinlogPosition]] = deque()
        self._position: BinlogPosition | None = None
        self._error: MybinlogError | None = None
        self._last_position: BinlogPosition | None = None
        self._closed = False
        self._ended = False
        self.reconnects = 0
        self._server_id = resume_from.server_id if resume_from is not None else 0  # whose positions these are
        self._server_uuid: str | None = None  # MySQL: the server_uuid of the server last read

    def __repr__(self) -> str:
        at = self._tracker.position if self._tracker else "start"
        return f"<BinlogStream {self.dsn.at(self._server_index).display} at {at}>"

    @property
    def source(self) -> str:
        """``host:port`` of the server the stream reads (or will try first): with several servers, the one it is on."""
        return self.dsn.at(self._server_index).hosts_text

    # ------------------------------------------------------------------------------------------------
    @property
    def position(self) -> BinlogPosition:
        """The boundary after the last completed transaction (safe to persist and resume from)."""
        if self._position is None:
            raise ConfigurationError("the stream is not started: use `async with BinlogStream(...)` first")
        return self._position

    @property
    def connected(self) -> bool:
        """Whether the stream holds a connection now: False before it starts, while it reconnects after a loss
        (``reconnects`` counts those that succeeded) and once it is closed or failed."""
        return self._conn is not None and not self._closed and self._error is None

    @property
    def server(self) -> ServerInfo:
        if self._conn is None:
            raise ConfigurationError("the stream is not started: use `async with BinlogStream(...)` first")
        return self._conn.info

    async def __aenter__(self) -> BinlogStream:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def start(self) -> None:
        """Connect, resolve the start position and begin the dump (errors surface here). With several servers: on
        the first that works (an unreachable or lagging server is skipped)."""
        failures: list[SourceConnectionError] = []
        refused: list[SourceError] = []
        for index in range(len(self.dsn.servers)):
            try:
                await self._start_on(index)
                return
            except SourceConnectionError as exc:
                if not self.dsn.fallbacks:
                    raise
                failures.append(exc)
            except SourceError as exc:
                if not self.dsn.fallbacks:
                    raise
                logger.warning("%s: refused (trying the other servers): %s", self.dsn.at(index).display, exc)
                refused.append(exc)
        if refused:
            raise refused[0]
        raise SourceConnectionError(
            f"{self.dsn.display}: none of the {len(failures)} servers could be read: "
            + "; ".join(str(f) for f in failures)
        ) from failures[-1]

    async def _start_on(self, index: int) -> None:
        conn = await self._connect(index)
        try:
            flavor = conn.info.flavor
            resume = self._resume_arg
            check = True
            if self._gtid_arg is not None:
                arg = self._gtid_arg
                requested = parse_gtid_set(arg, flavor) if isinstance(arg, str) else arg
                self._check_flavor(requested, flavor)
                start = BinlogPosition("", 4, requested)
                self._mode = "gtid"
            elif resume is not None:
                self._mode = self._resume_mode(resume, conn.info)
                start = resume
            elif self._file_arg is not None:
                start = BinlogPosition(self._file_arg, self._pos_arg, None)
                self._mode = "file"
            elif self._from_beginning:
                files = await conn.binlog_files()
                start = BinlogPosition(files[0][0] if files else "", 4, None, server_id=conn.info.server_id)
                self._mode = "file"
                check = False
            else:
                file, pos, gtid_text = await conn.current_position()
                current: GtidSet | None = None
                if flavor == "mariadb" or (gtid_text and conn.info.gtid_mode):
                    current = parse_gtid_set(gtid_text, flavor)
                start = BinlogPosition(file, pos, current, server_id=conn.info.server_id)
                self._mode = "file"
                check = False
            if check:
                await self._check_history(conn, start)
            if not start.server_id and self._server_id:
                start = replace(start, server_id=self._server_id)
            self._tracker = PositionTracker(start)
            self._position = start
            await self._start_dump(conn, start)
        except BaseException:
            await conn.close()
            raise
        self._use(conn, index)

    def _use(self, conn: BinlogConnection, index: int) -> None:
        """Read from now on from ``conn``, the DSN's ``index``-th server (and send the process's other connections
        there first)."""
        self._conn = conn
        self._server_index = index
        self._server_uuid = conn.info.server_uuid
        prefer_server(self.dsn, index)

    @staticmethod
    def _check_flavor(gtids: GtidSet, flavor: str) -> None:
        want = MariaDBGtidSet if flavor == "mariadb" else MySQLGtidSet
        if not isinstance(gtids, want):
            raise ConfigurationError(
                f"the server is {flavor} but the GTID set is {gtids.flavor}-style ({gtids}); "
                + ("MariaDB positions look like 0-1-100" if flavor == "mariadb" else "MySQL sets look like uuid:1-5")
            )

    def _resume_mode(self, resume: BinlogPosition, info: ServerInfo) -> Literal["gtid", "file"]:
        """By GTID set where the position has one and the server logs GTIDs, else by file and offset."""
        if resume.gtid_set is not None and (info.flavor == "mariadb" or info.gtid_mode):
            self._check_flavor(resume.gtid_set, info.flavor)
            return "gtid"
        if resume.file:
            return "file"
        raise ConfigurationError(
            f"{self.dsn.display}: cannot resume from {resume}: the server does not use GTIDs (gtid_mode=OFF) and "
            "the position names no binlog file"
        )

    async def _check_history(self, conn: BinlogConnection, resume: BinlogPosition, *, moved: bool = False) -> None:
        """Refuse to stream from a server whose history does not contain ``resume`` (see the class docstring)."""
        info = conn.info
        where = self.dsn.display
        # the server whose binlog the position names (a position carries it; after a failover the stream may still
        # resume from a position of the old server, until a transaction of the new one completes)
        expected = resume.server_id or self._server_id
        changed = bool(expected) and bool(info.server_id) and info.server_id != expected
        if moved and not changed:
            # another host of the list that reports the same server_id: the same server under another name, or a
            # server of another topology whose ids collide (MariaDB GTIDs could not tell them apart)
            changed = not await self._same_server(conn, resume)
        if changed and (self._mode == "file" or resume.gtid_set is None):
            raise SourceHistoryError(
                f"{where}: the source is now another server (server_id {info.server_id}, not {expected} whose "
                "binlog the position names), and this stream resumes by binlog file and offset "
                f"({resume.file}:{resume.offset}), which mean nothing on another server. Turn on GTIDs "
                "(gtid_mode=ON) so that readers can follow a failover, or take a new snapshot from the new server"
            )
        if changed and resume.gtid_set is not None:
            await check_other_server(conn, resume, old_server_id=expected)
        file, offset, gtid_text = await conn.current_position()
        if self._mode == "gtid" and resume.gtid_set is not None and gtid_text.strip():
            server_set = parse_gtid_set(gtid_text, info.flavor)
            if type(server_set) is type(resume.gtid_set) and not server_set.contains(resume.gtid_set):  # type: ignore[arg-type]
                raise SourceHistoryError(
                    f"{where}: the server's binlog ends at GTIDs [{server_set}], which do not include this stream's "
                    f"position [{resume.gtid_set}]: the source's history went backwards or is another history "
                    "(RESET MASTER, a restored backup, a different server). Resuming would skip or mix transactions: "
                    "take a new snapshot (for a replica: mybinlog snapshot, or drop its checkpoint and let replicate "
                    "load it again)"
                )
        elif self._mode == "gtid" and resume.gtid_set is not None and bool(resume.gtid_set):
            raise SourceHistoryError(
                f"{where}: the server reports no executed GTIDs, but this stream resumes after [{resume.gtid_set}]: "
                "the source's history went backwards (RESET MASTER?) or this is another server. Take a new snapshot"
            )
        if not changed and resume.file and file:
            ours, theirs = _file_order(resume.file), _file_order(file)
            if (
                ours is not None
                and theirs is not None
                and ours[0] == theirs[0]
                and (theirs[1], offset)
                < (
                    ours[1],
                    resume.offset,
                )
            ):
                raise SourceHistoryError(
                    f"{where}: the server's binlog ends at {file}:{offset}, before this stream's position "
                    f"{resume.file}:{resume.offset}: the source's history went backwards (RESET MASTER, a restored "
                    "backup). Resuming would read other transactions at the same offsets: take a new snapshot (for "
                    "a replica: mybinlog snapshot, or drop its checkpoint and let replicate load it again)"
                )
        if changed:
            logger.warning(
                "%s: the source is now the server with server_id %d (was %d): following it by GTID set [%s]; "
                "binlog files and offsets from now on are that server's",
                where,
                info.server_id,
                expected,
                resume.gtid_set,
            )
        if info.server_id:
            self._server_id = info.server_id

    async def _same_server(self, conn: BinlogConnection, resume: BinlogPosition) -> bool:
        """Whether ``conn``'s server, reached at another host of the list with the position's server_id, is the
        server the position was read from. MySQL: the same ``server_uuid``. MariaDB: its binlog has the position's
        file and offset at the position's GTIDs. Else :class:`SourceHistoryError` (server ids must be unique)."""
        info = conn.info
        if info.flavor == "mysql":
            # another uuid: another server, whose GTIDs carry its own uuid (checked by GTIDs as such)
            return self._server_uuid is None or info.server_uuid == self._server_uuid
        if resume.file and resume.gtid_set is not None:
            rows = await conn.query("SELECT BINLOG_GTID_POS(%s, %s)", (resume.file, resume.offset))
            found = rows[0][0] if rows else None
            text = found.decode() if isinstance(found, bytes | bytearray) else found
            if text is not None and parse_gtid_set(str(text), "mariadb") == resume.gtid_set:
                return True
        raise SourceHistoryError(
            f"{conn.dsn.display} reports server_id {info.server_id}, the server_id of the server this stream's "
            f"position was read from, but its binlog does not hold that position ({resume}): a server of another "
            "topology with a colliding server_id (server ids must be unique among the servers of a topology), or "
            "the same server restored from a backup. Give it another server_id or remove it from the list; to "
            "follow it from now on, take a new snapshot"
        )

    async def _connect(self, index: int) -> BinlogConnection:
        conn = await BinlogConnection.connect(
            self.dsn.at(index),
            server_id=self.server_id,
            heartbeat_period=self.heartbeat_period,
            idle_timeout=self.idle_timeout,
            check_preconditions=self.check_preconditions,
            require_full_row_image=self.require_full_row_image,
        )
        self.server_id = conn.server_id
        return conn

    def _new_decoder(self, conn: BinlogConnection, file: str) -> EventDecoder:
        return EventDecoder(
            checksum=conn.checksum, verify_checksum=self.verify_checksum, file=file or None, network=True
        )

    async def _start_dump(self, conn: BinlogConnection, start: BinlogPosition) -> None:
        self._decoder = self._new_decoder(conn, start.file)
        if self._mode == "gtid" and start.gtid_set is not None:
            await conn.start_dump(gtid_set=start.gtid_set, blocking=self.blocking)
        else:
            await conn.start_dump(file=start.file, position=start.offset, blocking=self.blocking)

    async def aclose(self) -> None:
        self._closed = True
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()

    close = aclose  # the earlier name; aclose is the one way to close everywhere (anyio's name)

    @property
    def has_pending(self) -> bool:
        """Whether the next event is already decoded (the next ``__anext__`` will not wait for the server)."""
        return bool(self._pending)

    # ------------------------------------------------------------------------------------------------
    def __aiter__(self) -> AsyncIterator[Event]:
        # compiled core: __anext__ in C (the same steps as below), unless a subclass has its own __anext__
        if _StreamIter is not None and type(self).__anext__ is BinlogStream.__anext__:
            return _StreamIter(self, self._pending, self._marks, self._anext)  # type: ignore[no-any-return]
        return self

    def __anext__(self) -> Awaitable[Event]:
        pending = self._pending
        if pending and _Ready is not None:  # compiled core: an awaitable already done, no coroutine per event
            event = pending.popleft()
            marks = self._marks
            if marks and marks[0][0] is event:
                self._position = marks.popleft()[1]
            return _Ready(event)  # type: ignore[no-any-return]
        return self._anext()

    async def _anext(self) -> Event:
        pending = self._pending
        if pending:  # fast path: an event decoded from the last batch
            event = pending.popleft()
            marks = self._marks
            if marks and marks[0][0] is event:
                self._position = marks.popleft()[1]
            return event
        next_event = await self.next_event()
        if next_event is None:
            raise StopAsyncIteration
        return next_event

    async def transactions(self) -> AsyncIterator[Transaction]:
        """The events as whole transactions: each :class:`~mybinlog.Transaction` holds the events of one transaction
        (from its GTID or BEGIN to its XID or COMMIT; events between transactions, such as ROTATE, heartbeats or
        FORMAT_DESCRIPTION, are left out) and ``position``, the boundary after it: persist it once the transaction is
        handled and start again with ``BinlogStream(resume_from=position)``. Ends with a non-blocking stream."""
        collector = TransactionCollector()
        add = collector.add
        async for event in self:
            txn = add(event, self.position)
            if txn is not None:
                yield txn

    async def next_event(self) -> Event | None:
        """The next event, or None at the end of a non-blocking stream."""
        pending = self._pending
        if not pending and not await self._fill():
            return None
        event = pending.popleft()
        marks = self._marks
        if marks and marks[0][0] is event:
            self._position = marks.popleft()[1]
        return event

    async def next_with_position(self) -> tuple[Event, BinlogPosition | None] | None:
        """The next event and the position handing it out moved :attr:`position` to (None: it did not move it), or
        None at the end of a non-blocking stream: the boundary this stream computed, handed over with its event (what
        a sharing dispatcher reads, :class:`mybinlog.sharing.EventSource`). The position moves at the event that
        completes a transaction (the last inner event of a compressed one), at a ROTATE between transactions, and
        where the stream learns a file, offset or GTID set of the boundary it stands at."""
        pending = self._pending
        if not pending and not await self._fill():
            return None
        event = pending.popleft()
        marks = self._marks
        if marks and marks[0][0] is event:
            position = self._position = marks.popleft()[1]
            return event, position
        return event, None

    async def _fill(self) -> bool:
        """Wait until an event is decoded and pending; False at the end of a non-blocking stream."""
        pending = self._pending
        while not pending:
            if self._error is not None:
                # sticky: the events after a bad one were not decoded, so the stream cannot go on past it
                raise self._error
            if self._closed and self._conn is None:
                raise ConfigurationError("the stream is closed")
            if self._ended:
                return False
            conn = self._conn
            if conn is None or self._decoder is None or self._tracker is None:
                raise ConfigurationError("the stream is not started: use `async with BinlogStream(...)` first")
            try:
                batch = await conn.read_events()
            except SourceConnectionError as exc:
                await self._reconnect(exc)
                continue
            if batch is None:
                self._ended = True
                return False
            try:
                self._process(batch)
            except MybinlogError as exc:
                # deliver the events before the bad one first, then the error
                self._error = exc
        return True

    def _process(self, batch: list[bytes]) -> None:
        """Decode a batch of raw events into ``_pending``, tracking positions.

        The decoder follows ROTATE events itself (``network=True``), so the whole batch is decoded first; if it
        raises, the events before the bad one are still tracked and queued, then the error propagates.
        """
        decoder = self._decoder
        tracker = self._tracker
        assert decoder is not None
        assert tracker is not None
        events: list[Event] = []
        try:
            decoder.decode_batch(batch, events)
        finally:
            if self._replaying or self._skip:
                for event in events:
                    self._process_event(event)
            else:
                self._track(events, tracker, sum(map(len, batch)))

    def _track(self, events: list[Event], tracker: PositionTracker, nbytes: int) -> None:
        """Queue ``events`` and track positions (``nbytes``: their total size).

        Table maps and rows events (PASSIVE_TYPES) only move the tracker's offset to their log_pos, so they are
        queued in runs: the non-passive events are found at C speed, and only they go through
        PositionTracker.update one by one. When the file may grow past 4 GiB within this batch (log_pos wraps)
        every event goes through PositionTracker.update.
        """
        if tracker.offset + nbytes >= _U32:
            for event in events:
                self._process_event(event)
            return
        extend = self._pending.extend
        if _active_indexes is not None:
            special = _active_indexes(events, PASSIVE_TYPES)
        else:
            codes = map(_type_code, events)
            special = list(compress(count(), map(not_, map(PASSIVE_TYPES.__contains__, codes))))
        special.append(len(events))
        start = 0
        for i in special:
            if i > start:
                run = events[start:i]
                for event in reversed(run):
                    if event.log_pos:  # artificial events carry no position
                        tracker.offset = event.log_pos
                        break
                self._yielded_in_txn += i - start
                extend(run)
            if i < len(events):
                self._process_event(events[i])
            start = i + 1

    def _process_event(self, event: Event) -> None:
        tracker = self._tracker
        assert tracker is not None
        pending = self._pending
        completed = tracker.update(event)
        position: BinlogPosition | None = tracker.position
        if position is self._last_position:
            position = None
        else:
            self._last_position = position
        if self._replaying or self._skip or isinstance(event, TransactionPayloadEvent):
            out = [event]
            if isinstance(event, TransactionPayloadEvent):
                out.extend(event.events)
            kept = self._filter_replayed(out, completed)
            if kept:
                pending.extend(kept)
                if position is not None:
                    self._marks.append((kept[-1], position))
            elif position is not None:
                # nothing to hand out: the position holds once what is queued has been handed out
                if pending:
                    self._mark_last(position)
                else:
                    self._position = position
            return
        if completed:
            self._yielded_in_txn = 0
        elif not isinstance(event, _CONTROL):
            self._yielded_in_txn += 1
        pending.append(event)
        if position is not None:
            self._marks.append((event, position))

    def _mark_last(self, position: BinlogPosition) -> None:
        last = self._pending[-1]
        marks = self._marks
        if marks and marks[-1][0] is last:
            marks[-1] = (last, position)
        else:
            marks.append((last, position))

    def _filter_replayed(self, events: list[Event], completed: bool) -> list[Event]:
        """Drop what a reconnect re-sends and the caller has already seen."""
        out: list[Event] = []
        skipping_payload = False
        for event in events:
            if event.in_payload:
                if not skipping_payload:
                    out.append(event)
                continue
            if isinstance(event, _CONTROL):
                # a re-sent FDE/previous-GTIDs preamble is dropped; the ROTATE that opens the new dump is not: it
                # names the file (and the server) the events that follow belong to, which may be new (a restart
                # opens a new file; a failover streams another server's files)
                if not self._replaying or isinstance(event, RotateEvent):
                    out.append(event)
                continue
            self._replaying = False
            self._yielded_in_txn += 1
            if self._skip > 0:
                self._skip -= 1
                skipping_payload = True
                continue
            skipping_payload = False
            out.append(event)
        if completed:
            self._yielded_in_txn = 0
        return out

    async def _reconnect(self, error: SourceConnectionError) -> None:
        assert self._tracker is not None
        resume = self._tracker.position
        low, high = self.reconnect_backoff
        attempt = 0
        old = self._conn
        self._conn = None
        old_index, old_server_id = self._server_index, (old.info.server_id if old is not None else self._server_id)
        if old is not None:
            await old.close()
        lost = error
        began = time.monotonic()
        budget = self.max_reconnect_seconds
        servers = len(self.dsn.servers)
        while True:
            attempt += 1
            delay = min(high, low * 2 ** min(attempt - 1, 60)) * (0.5 + random.random() / 2)
            if attempt > self.max_reconnect_attempts:
                raise SourceConnectionError(
                    f"{self.dsn.display}: gave up after {self.max_reconnect_attempts} reconnect attempts "
                    f"(last error: {error}); resume later from {resume}"
                ) from error
            if budget is not None and time.monotonic() - began + delay > budget:
                raise SourceConnectionError(
                    f"{self.dsn.display}: no server could be read for {budget:g} s (last error: {error}); "
                    f"resume later from {resume}"
                ) from error
            logger.warning(
                "%s: connection lost (%s); reconnecting in %.2fs (attempt %d of %d) from %s",
                self.dsn.display,
                error,
                delay,
                attempt,
                self.max_reconnect_attempts,
                resume,
            )
            await asyncio.sleep(delay)
            # one round: every server once, the current one first. A server refused for good (another history,
            # errant transactions, not set up) is skipped while another may work; a round that found only such
            # servers and unreachable ones ends the stream with the first refusal
            refused: list[SourceError] = []
            for step in range(servers):
                index = (old_index + step) % servers
                try:
                    conn = await self._connect(index)
                except SourceConnectionError as exc:
                    error = exc
                    continue
                try:
                    mode_gtid = self._mode == "gtid" or (not resume.file and resume.gtid_set is not None)
                    moved = index != old_index
                    if moved and resume.gtid_set is not None:
                        mode_gtid = True  # another server: only a GTID set names the same transactions there
                    if mode_gtid:
                        self._mode = "gtid"
                    await self._check_history(conn, resume, moved=moved)
                    self._tracker = PositionTracker(resume)
                    if mode_gtid and resume.gtid_set is not None:
                        self._decoder = self._new_decoder(conn, resume.file)
                        await conn.start_dump(gtid_set=resume.gtid_set, blocking=self.blocking)
                    else:
                        await self._start_dump(conn, resume)
                except SourceConnectionError as exc:
                    await conn.close()
                    error = exc
                    continue
                except SourceError as exc:
                    await conn.close()
                    if servers == 1:
                        raise
                    logger.warning("%s: refused (trying the other servers): %s", self.dsn.at(index).display, exc)
                    refused.append(exc)
                    continue
                except BaseException:
                    await conn.close()
                    raise
                self._use(conn, index)
                another = index != old_index or bool(old_server_id and conn.info.server_id != old_server_id)
                # already yielded in the interrupted transaction: those re-seen since the last reconnect plus
                # those not re-seen yet (a second cut can come while skipping)
                interrupted = self._skip + self._yielded_in_txn
                self._skip = 0 if another else interrupted
                self._yielded_in_txn = 0
                self._replaying = True
                self.reconnects += 1
                if another:
                    self.failovers += 1
                    self.last_failover = (
                        f"{self.dsn.at(old_index).hosts_text} (server_id {old_server_id}) failed: {lost}; now reading "
                        f"{self.dsn.at(index).hosts_text} (server_id {conn.info.server_id})"
                    )
                    logger.warning("%s: source failover: %s; resuming from %s", self.dsn.display,
                                   self.last_failover, resume)  # fmt: skip
                else:
                    logger.info("%s: reconnected; resuming from %s", self.dsn.at(index).display, resume)
                if another and interrupted:
                    # the new server may split that transaction into other events, or not have it: counting the
                    # events already delivered off its stream would drop others (docs/ha.md, "Source failover")
                    raise TransactionInterruptedError(
                        f"{self.dsn.display}: the source failed over in the middle of a transaction ({interrupted} "
                        f"of its events were delivered); discard them: the stream goes on from {resume}, where the "
                        "next whole transaction starts"
                    )
                return
            if refused:
                raise refused[0]
