"""BinlogStream's reconnect-and-resume logic, driven by a scripted connection that serves a real binlog file.

The fake connection answers ``start_dump`` like a server (a fake ROTATE, the FORMAT_DESCRIPTION, then the events
from the requested file position or after the requested MariaDB GTID position) and drops the connection after a
chosen number of events. Whatever the cut point (between transactions, in the middle of one, inside the
preamble), the stream must yield every event of the file exactly once, in order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mybinlog import (
    BinlogPosition,
    BinlogStream,
    MariaDBGtidSet,
    SourceConnectionError,
    SourceHistoryError,
    read_binlog_file,
)
from mybinlog.source._stream import _CONTROL
from tests.fakes import FILE, FakeConnection, ScriptedInfo, ScriptedServer


def _key(ev: Any) -> tuple[Any, ...]:
    rows = tuple(map(tuple, ev.rows)) if hasattr(ev, "rows") else None
    return (ev.type_code, ev.log_pos, ev.size, rows)


def _expected(path: Path) -> list[tuple[Any, ...]]:
    return [_key(ev) for ev in read_binlog_file(path) if not isinstance(ev, _CONTROL)]


async def _run(server: ScriptedServer, **kwargs: Any) -> tuple[list[tuple[Any, ...]], BinlogStream]:
    stream = BinlogStream("mysql://u:p@127.0.0.1:1", blocking=False, reconnect_backoff=(0.0, 0.0), **kwargs)
    stream._connect = server.connect  # type: ignore[method-assign]
    got = []
    async with stream:
        async for ev in stream:
            if not isinstance(ev, _CONTROL):
                got.append(_key(ev))
    return got, stream


@pytest.fixture
def binlog(corpus_dir: Path) -> Path:
    return corpus_dir / "binlogs" / FILE


@pytest.mark.parametrize("cuts", [[], [5], [9], [10], [11], [12, 3], [40, 1, 1, 2], [100, 7], [3, 3, 3, 3, 3]])
async def test_resume_in_file_mode_yields_every_event_once(binlog: Path, cuts: list[int]) -> None:
    server = ScriptedServer(binlog, [1000000, *cuts])  # first connection: the initial dump
    server.cuts = list(cuts)
    got, stream = await _run(server, binlog_file=server.name, position=4)
    assert got == _expected(binlog)
    assert stream.reconnects == len(cuts)
    # every reconnect resumed at a transaction boundary the stream had reported
    for conn in server.connections[1:]:
        assert conn.started_at is not None
        assert conn.started_at[0] == "file"


@pytest.mark.parametrize("cuts", [[8], [10, 10], [27, 2, 50]])
async def test_resume_in_gtid_mode_yields_every_event_once(binlog: Path, cuts: list[int]) -> None:
    server = ScriptedServer(binlog, cuts)
    first_gtid = server.gtid_starts[0][0]
    before = MariaDBGtidSet.parse(f"{first_gtid.domain_id}-{first_gtid.server_id}-{first_gtid.seq_no - 1}")
    got, stream = await _run(server, gtid_set=before)
    # BINLOG_CHECKPOINT events (not transaction data) are control events and excluded by _key/_expected.
    # Every transaction event must arrive exactly once.
    assert got == _expected(binlog)
    assert got
    assert got[0][0] == 162
    assert stream.reconnects == len(cuts)
    assert [c.started_at[0] for c in server.connections if c.started_at] == ["gtid"] * (len(cuts) + 1)
    last = server.gtid_starts[-1][0]
    assert isinstance(stream.position, BinlogPosition)
    assert last in stream.position.gtid_set  # type: ignore[operator]


async def test_gives_up_after_max_attempts_with_position_in_message(binlog: Path) -> None:
    server = ScriptedServer(binlog, [20])

    async def refuse(index: int = 0) -> FakeConnection:
        raise SourceConnectionError("refused")

    stream = BinlogStream(
        "mysql://u:secret-pw@127.0.0.1:1",
        binlog_file=server.name,
        blocking=False,
        max_reconnect_attempts=2,
        reconnect_backoff=(0.0, 0.0),
    )
    stream._connect = server.connect  # type: ignore[method-assign]
    async with stream:
        stream._connect = refuse  # type: ignore[method-assign]
        with pytest.raises(SourceConnectionError) as info:
            async for _ in stream:
                pass
    text = str(info.value)
    assert "gave up after 2 reconnect attempts" in text
    assert server.name in text  # names the position to resume from
    assert "secret-pw" not in text


# --- resuming from a checkpoint position, and the server's history ------------------------------------------------


class _FileModeInfo(ScriptedInfo):
    gtid_mode = False  # MySQL with gtid_mode=OFF: positions carry no usable GTIDs
    flavor = "mysql"


def _with_info(
    server: ScriptedServer, info: type[ScriptedInfo], *, server_id: int = 1, end: tuple[str, int] | None = None
) -> Any:
    """server.connect, with connections that describe the server as ``info`` (server_id, binlog end) says."""

    async def connect(index: int = 0) -> FakeConnection:
        conn = await server.connect()
        conn.info = type("Info", (info,), {"server_id": server_id})()  # type: ignore[assignment]
        if end is not None:

            async def current_position() -> tuple[str, int, str]:
                return end[0], end[1], ""

            conn.current_position = current_position  # type: ignore[method-assign]
        return conn

    return connect


async def test_resume_from_a_position_without_gtids_uses_file_and_offset(binlog: Path) -> None:
    """A checkpoint of a server without GTIDs resumes by file and offset, at the transaction after it."""
    server = ScriptedServer(binlog, [])
    second = server.gtid_starts[1][1]  # the boundary before the second transaction
    stream = BinlogStream(
        "mysql://u:p@127.0.0.1:1",
        resume_from=BinlogPosition(server.name, second, None, server_id=1),
        blocking=False,
        reconnect_backoff=(0.0, 0.0),
    )
    stream._connect = _with_info(server, _FileModeInfo)  # type: ignore[method-assign]
    got = []
    async with stream:
        async for ev in stream:
            if not isinstance(ev, _CONTROL):
                got.append(_key(ev))
    assert server.connections[0].started_at == ("file", second)
    expected = [_key(ev) for ev in read_binlog_file(binlog) if not isinstance(ev, _CONTROL) and ev.offset >= second]
    assert got == expected
    assert stream.position.server_id == 1


async def test_file_mode_refuses_another_server(binlog: Path) -> None:
    server = ScriptedServer(binlog, [])
    stream = BinlogStream(
        "mysql://u:p@127.0.0.1:1", resume_from=BinlogPosition(server.name, 4, None, server_id=7), blocking=False
    )
    stream._connect = _with_info(server, _FileModeInfo, server_id=8)  # type: ignore[method-assign]
    with pytest.raises(SourceHistoryError, match="server_id 8, not 7 "):
        await stream.start()


async def test_a_binlog_that_ends_before_the_position_is_history_going_backwards(binlog: Path) -> None:
    server = ScriptedServer(binlog, [])
    stream = BinlogStream(
        "mysql://u:p@127.0.0.1:1", resume_from=BinlogPosition("binlog.000007", 500, None, server_id=1), blocking=False
    )
    stream._connect = _with_info(server, _FileModeInfo, end=("binlog.000001", 900))  # type: ignore[method-assign]
    with pytest.raises(SourceHistoryError, match="went backwards"):
        await stream.start()


async def test_gtids_beyond_the_server_are_history_going_backwards(binlog: Path) -> None:
    server = ScriptedServer(binlog, [])
    last = server.gtid_starts[-1][0]
    ahead = MariaDBGtidSet.parse(f"{last.domain_id}-{last.server_id}-{last.seq_no + 5}")
    stream = BinlogStream("mysql://u:p@127.0.0.1:1", gtid_set=ahead, blocking=False)
    stream._connect = server.connect  # type: ignore[method-assign]
    with pytest.raises(SourceHistoryError, match="do not include this stream's position"):
        await stream.start()


@pytest.mark.parametrize("cuts", [[], [2, 1, 1]])
async def test_gtid_mode_follows_another_server_and_stamps_its_id(
    binlog: Path, caplog: Any, cuts: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failover (another server_id, the same GTID history) is followed in GTID mode: the positions name the new
    server, whose files they are. Cut again before a transaction of the new server completed, the stream resumes
    from a position of the old server once more: its file and offset must not be compared with the new server's.
    (The new server's history check, which needs a real server, is tested live: test_source_failover.py.)"""
    checked: list[int] = []

    async def history_checked(conn: Any, resume: BinlogPosition, *, old_server_id: int) -> None:
        checked.append(old_server_id)

    monkeypatch.setattr("mybinlog.source._stream.check_other_server", history_checked)
    server = ScriptedServer(binlog, cuts)
    first_gtid = server.gtid_starts[0][0]
    before = MariaDBGtidSet.parse(f"{first_gtid.domain_id}-{first_gtid.server_id}-{first_gtid.seq_no - 1}")
    stream = BinlogStream(
        "mysql://u:p@127.0.0.1:1",
        resume_from=BinlogPosition("binlog.000099", 1234, before, server_id=3),
        blocking=False,
        reconnect_backoff=(0.0, 0.0),
    )

    async def connect(index: int = 0) -> FakeConnection:
        conn = await server.connect()
        conn.info = type("Info", (ScriptedInfo,), {"server_id": 1})()  # type: ignore[assignment]
        return conn

    stream._connect = connect  # type: ignore[method-assign]
    async with stream:
        async for _ in stream:
            pass
    assert "the source is now the server with server_id 1 (was 3)" in caplog.text
    assert set(checked) == {3}  # the history of the new server was checked against the old one's
    assert stream.position.file != "binlog.000099"  # the new server's file (the served file's ROTATE names the next)
    assert stream.position.file.endswith(".000006")
    assert stream.position.server_id == 1  # the fake ROTATE names the server streaming


async def _steps(server: ScriptedServer, **kwargs: Any) -> list[tuple[Any, ...]]:
    """Each event with the stream's position right after it was handed out (the position moves at marks)."""
    stream = BinlogStream("mysql://u:p@127.0.0.1:1", blocking=False, reconnect_backoff=(0.0, 0.0), **kwargs)
    stream._connect = server.connect  # type: ignore[method-assign]
    got = []
    async with stream:
        async for ev in stream:
            got.append((*_key(ev), repr(stream.position)))
    return got


@pytest.mark.parametrize("cuts", [[], [9], [40, 1, 1, 2]])
async def test_the_compiled_async_iterator_is_the_python_one(
    binlog: Path, cuts: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the compiled core, ``async for`` steps through a C iterator (``StreamIter``): the same events, and the
    same position after each one, as BinlogStream.__anext__ in Python, across reconnects too."""
    from mybinlog.source import _stream
    from tests.builders import require_speedups

    require_speedups()  # skipped in the pure-Python pass, failed under CI=true without the extension
    stream = BinlogStream("mysql://u:p@127.0.0.1:1")
    assert type(stream.__aiter__()).__name__ == "StreamIter"

    class Counting(BinlogStream):
        def __anext__(self) -> Any:  # a subclass's own __anext__ is what async for calls
            return super().__anext__()

    sub = Counting("mysql://u:p@127.0.0.1:1")
    assert sub.__aiter__() is sub

    def server() -> ScriptedServer:
        s = ScriptedServer(binlog, [1000000, *cuts])
        s.cuts = list(cuts)
        return s

    async def read_events(self: FakeConnection) -> list[bytes] | None:
        """Batches of up to 7 events (so that __anext__ mostly finds events already decoded), up to the cut."""
        batch: list[bytes] = []
        while len(batch) < 7 and self.queue and (self.cut is None or self.sent < self.cut):
            self.sent += 1
            batch.append(self.queue.pop(0))
        if batch:
            return batch
        event = await self.read_event()  # raises at the cut, None at the end
        return None if event is None else [event]

    monkeypatch.setattr(FakeConnection, "read_events", read_events)

    slow = 0
    anext = BinlogStream._anext

    def counted(self: BinlogStream) -> Any:
        nonlocal slow
        slow += 1
        return anext(self)

    monkeypatch.setattr(BinlogStream, "_anext", counted)
    s = server()
    compiled = await _steps(s, binlog_file=s.name, position=4)
    assert slow < len(compiled) / 2  # most steps took the C path: an event already decoded
    monkeypatch.setattr(_stream, "_StreamIter", None)
    assert stream.__aiter__() is stream
    s = server()
    python = await _steps(s, binlog_file=s.name, position=4)
    assert compiled == python
    assert len({step[-1] for step in compiled}) > 3  # the position really moved along the way
