"""BinlogStream: decoded events from a live server, resuming after disconnects without loss or repeats."""

from __future__ import annotations

import asyncio
import logging
import random
from collections import deque
from collections.abc import AsyncIterator
from itertools import compress, count
from operator import attrgetter, not_
from types import TracebackType
from typing import Literal

from ._dsn import DSN
from ._exceptions import ConfigurationError, MybinlogError, SourceConnectionError
from ._gtid import GtidSet, MariaDBGtidSet, MySQLGtidSet, parse_gtid_set
from ._position import PASSIVE_TYPES, BinlogPosition, PositionTracker
from ._protocol._decoder import EventDecoder
from ._protocol._events import (
    BinlogCheckpointEvent,
    Event,
    FormatDescriptionEvent,
    HeartbeatEvent,
    MariadbGtidListEvent,
    PreviousGtidsEvent,
    RotateEvent,
    TransactionPayloadEvent,
)
from ._transport import BinlogConnection, ServerInfo

__all__ = ["BinlogStream"]

logger = logging.getLogger("mybinlog.stream")

_U32 = 1 << 32
_type_code = attrgetter("type_code")

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
    - ``from_beginning=True``: the oldest binlog file still on the server.

    ``blocking=False`` stops at the current end of the binlog (``async for`` ends); otherwise the stream waits
    for new events. ``position`` is the last completed transaction's boundary: persist it after you have
    handled that transaction, and start from it after a restart.

    When the connection drops, the stream reconnects (exponential backoff, up to ``max_reconnect_attempts``
    consecutive failures, each logged) from ``position``, then skips the events of the interrupted transaction
    it had already yielded, so every event reaches you exactly once. Errors that retrying cannot fix (wrong
    password, purged binlog, server misconfigured) are raised at once.
    """

    def __init__(
        self,
        dsn: str | DSN,
        *,
        gtid_set: str | GtidSet | None = None,
        binlog_file: str | None = None,
        position: int = 4,
        from_beginning: bool = False,
        blocking: bool = True,
        server_id: int | None = None,
        heartbeat_period: float = 5.0,
        verify_checksum: bool = True,
        check_preconditions: bool = True,
        max_reconnect_attempts: int = 10,
        reconnect_backoff: tuple[float, float] = (0.1, 10.0),
    ) -> None:
        self.dsn = dsn if isinstance(dsn, DSN) else DSN.parse(dsn)
        if (gtid_set is not None) + (binlog_file is not None) + bool(from_beginning) > 1:
            raise ConfigurationError("give at most one of gtid_set, binlog_file and from_beginning=True")
        if max_reconnect_attempts < 0:
            raise ConfigurationError("max_reconnect_attempts must be >= 0")
        self._gtid_arg = gtid_set
        self._file_arg = binlog_file
        self._pos_arg = position
        self._from_beginning = from_beginning
        self.blocking = blocking
        self.server_id = server_id
        self.heartbeat_period = heartbeat_period
        self.verify_checksum = verify_checksum
        self.check_preconditions = check_preconditions
        self.max_reconnect_attempts = max_reconnect_attempts
        self.reconnect_backoff = reconnect_backoff
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

    def __repr__(self) -> str:
        return f"<BinlogStream {self.dsn.display} at {self._tracker.position if self._tracker else 'start'}>"

    # ------------------------------------------------------------------------------------------------
    @property
    def position(self) -> BinlogPosition:
        """The boundary after the last completed transaction (safe to persist and resume from)."""
        if self._position is None:
            raise ConfigurationError("the stream is not started: use `async with BinlogStream(...)` first")
        return self._position

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
        """Connect, resolve the start position and begin the dump (errors surface here)."""
        conn = await self._connect()
        try:
            flavor = conn.info.flavor
            if self._gtid_arg is not None:
                arg = self._gtid_arg
                requested = parse_gtid_set(arg, flavor) if isinstance(arg, str) else arg
                self._check_flavor(requested, flavor)
                start = BinlogPosition("", 4, requested)
                self._mode = "gtid"
            elif self._file_arg is not None:
                start = BinlogPosition(self._file_arg, self._pos_arg, None)
                self._mode = "file"
            elif self._from_beginning:
                files = await conn.binlog_files()
                start = BinlogPosition(files[0][0] if files else "", 4, None)
                self._mode = "file"
            else:
                file, pos, gtid_text = await conn.current_position()
                current: GtidSet | None = None
                if flavor == "mariadb" or (gtid_text and conn.info.gtid_mode):
                    current = parse_gtid_set(gtid_text, flavor)
                start = BinlogPosition(file, pos, current)
                self._mode = "file"
            self._tracker = PositionTracker(start)
            self._position = start
            await self._start_dump(conn, start)
        except BaseException:
            await conn.close()
            raise
        self._conn = conn

    @staticmethod
    def _check_flavor(gtids: GtidSet, flavor: str) -> None:
        want = MariaDBGtidSet if flavor == "mariadb" else MySQLGtidSet
        if not isinstance(gtids, want):
            raise ConfigurationError(
                f"the server is {flavor} but the GTID set is {gtids.flavor}-style ({gtids}); "
                + ("MariaDB positions look like 0-1-100" if flavor == "mariadb" else "MySQL sets look like uuid:1-5")
            )

    async def _connect(self) -> BinlogConnection:
        conn = await BinlogConnection.connect(
            self.dsn,
            server_id=self.server_id,
            heartbeat_period=self.heartbeat_period,
            check_preconditions=self.check_preconditions,
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

    async def close(self) -> None:
        self._closed = True
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()

    @property
    def has_pending(self) -> bool:
        """Whether the next event is already decoded (the next ``__anext__`` will not wait for the server)."""
        return bool(self._pending)

    # ------------------------------------------------------------------------------------------------
    def __aiter__(self) -> AsyncIterator[Event]:
        return self

    async def __anext__(self) -> Event:
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

    async def next_event(self) -> Event | None:
        """The next event, or None at the end of a non-blocking stream."""
        pending = self._pending
        while not pending:
            if self._error is not None:
                # sticky: the events after a bad one were not decoded, so the stream cannot go on past it
                raise self._error
            if self._closed and self._conn is None:
                raise ConfigurationError("the stream is closed")
            if self._ended:
                return None
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
                return None
            try:
                self._process(batch)
            except MybinlogError as exc:
                # deliver the events before the bad one first, then the error
                self._error = exc
        event = pending.popleft()
        marks = self._marks
        if marks and marks[0][0] is event:
            self._position = marks.popleft()[1]
        return event

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
                if not self._replaying:
                    out.append(event)  # a re-sent ROTATE/FDE/previous-GTIDs preamble is dropped
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
        if old is not None:
            await old.close()
        while True:
            attempt += 1
            if attempt > self.max_reconnect_attempts:
                raise SourceConnectionError(
                    f"{self.dsn.display}: gave up after {self.max_reconnect_attempts} reconnect attempts "
                    f"(last error: {error}); resume later from {resume}"
                ) from error
            delay = min(high, low * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)
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
            try:
                conn = await self._connect()
            except SourceConnectionError as exc:
                error = exc
                continue
            try:
                self._tracker = PositionTracker(resume)
                mode_gtid = self._mode == "gtid" or (not resume.file and resume.gtid_set is not None)
                if mode_gtid and resume.gtid_set is not None:
                    self._decoder = self._new_decoder(conn, resume.file)
                    await conn.start_dump(gtid_set=resume.gtid_set, blocking=self.blocking)
                else:
                    await self._start_dump(conn, resume)
            except SourceConnectionError as exc:
                await conn.close()
                error = exc
                continue
            except BaseException:
                await conn.close()
                raise
            self._conn = conn
            # already yielded in the interrupted transaction: those re-seen since the last reconnect plus
            # those not re-seen yet (a second cut can come while skipping)
            self._skip += self._yielded_in_txn
            self._yielded_in_txn = 0
            self._replaying = True
            self.reconnects += 1
            logger.info("%s: reconnected; resuming from %s", self.dsn.display, resume)
            return
