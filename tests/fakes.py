"""The fakes the unit tests share: one copy of each, imported by the test modules (no test module imports another).

* Sharing: :class:`FakeLog` scripts a source's binlog (transactions, rotations, errors) and :class:`FakeSource` serves
  it to a :class:`~mybinlog.sharing.BinlogClient` made by :func:`make_client`; :func:`read_txns`, :func:`gtid_of`,
  :func:`seqs` and :func:`wait_until` read what the consumers got.
* Stream: :class:`ScriptedServer` serves a real binlog file's raw events over :class:`FakeConnection`\\ s that can be
  cut after any event (reconnects and resumes).
* Wire: :class:`RecordingTransport` records what a protocol writes and can answer it like a server.
* Extras: :data:`BLOCK_EXTRAS`, a script preamble (``str.format(blocked=...)``) under which the named top-level
  packages cannot be imported, as if their extra were not installed.
* Lease: :class:`LockServer` and :class:`FakeConn`, the GET_LOCK semantics of the replica lock; the fixture
  ``server`` (:func:`lock_server`) installs one; :func:`make_lease` builds a lease against it.
"""

from __future__ import annotations

import asyncio
import struct
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mybinlog import (
    BinlogPosition,
    DecodeError,
    Event,
    GtidEvent,
    MariaDBGtid,
    MariadbGtidEvent,
    MariaDBGtidSet,
    MySQLGtid,
    MySQLGtidSet,
    QueryEvent,
    RotateEvent,
    RowsEvent,
    SourceConnectionError,
    TableMapEvent,
    WriteRowsEvent,
    XidEvent,
    read_binlog_file,
)
from mybinlog.protocol._constants import HEADER_LEN
from mybinlog.protocol._events import (
    BinlogCheckpointEvent,
    HeartbeatEvent,
    IntvarEvent,
    MariadbGtidListEvent,
)
from mybinlog.protocol._gtid import GtidSet
from mybinlog.protocol._table import TableMap
from mybinlog.sharing import Binlog, BinlogClient, BinlogClientFactory, EventSource
from mybinlog.sharing._source import SourcePositions
from mybinlog.source import _lease
from mybinlog.source._dsn import DSN

# --- sharing: a scripted source log

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
PASSWORD = "s3cr3t-pw"
DSN_TEXT = f"mysql://repl:{PASSWORD}@db.example:3306"
COLUMNS = [
    "binlog_client_name",
    "name",
    "mysql_binlog_name",
    "mysql_binlog_pos",
    "mysql_binlog_timestamp",
    "mysql_binlog_executed_gtid_set",
    "dispatcher_name",
    "dispatcher_mysql_binlog_name",
    "dispatcher_mysql_binlog_pos",
    "dispatcher_mysql_binlog_timestamp",
    "dispatcher_mysql_binlog_executed_gtid_set",
    "size",
    "bytes",
    "max_bytes",
    "max_waiting_ms",
    "dispatcher_events_read_per_sec",
    "dispatcher_bytes_read_per_sec",
    "dispatcher_events_flush_per_sec",
    "dispatcher_bytes_flush_per_sec",
    "dispatcher_source_server",  # mybinlog's own, after ClickHouse's 19 (docs/ha.md, "Source failover")
]


class FakeTable(TableMap):
    """A table whose rows "decode" to the event's log_pos, or raise when ``fail``; counts decodes."""

    def __init__(self, schema: str, name: str, *, fail: bool = False) -> None:
        super().__init__(schema, name, [], 0)
        self.fail = fail
        self.decoded = 0

    def decode_rows(self, event: RowsEvent) -> list[Any]:
        self.decoded += 1
        if self.fail:
            raise DecodeError(f"cannot decode rows of `{self.schema}`.`{self.name}`: odd column type")
        return [(event.log_pos,)]


def _hdr(type_code: int, size: int, log_pos: int, flags: int = 0) -> dict[str, Any]:
    return {
        "timestamp": 1_700_000_000,
        "type_code": type_code,
        "server_id": 1,
        "size": size,
        "log_pos": log_pos,
        "flags": flags,
    }


class FakeLog:
    """A server binlog that grows; ``sources`` are the connections opened to it."""

    def __init__(self, flavor: str = "mariadb", *, file: str = "binlog.000001", start_offset: int = 4) -> None:
        self.flavor = flavor
        self.file = file
        self.offset = start_offset
        self.seq = 0
        self.events: list[Event] = []
        self.txn_of: list[Any] = []  # the GTID of the transaction each event belongs to (None: control)
        self.grown = asyncio.Event()
        self.sources: list[FakeSource] = []
        self.tables: dict[str, FakeTable] = {}
        self.fail_after: int | None = None  # sources raise after this many events

    def table(self, name: str, schema: str = "db", *, fail: bool = False) -> FakeTable:
        key = f"{schema}.{name}"
        if key not in self.tables:
            self.tables[key] = FakeTable(schema, name, fail=fail)
        return self.tables[key]

    def _add(self, cls: type[Event], type_code: int, size: int, txn: Any, /, **fields: Any) -> None:
        offset = self.offset
        self.offset += size
        event = cls(**_hdr(type_code, size, self.offset % (1 << 32)), offset=offset, file=self.file, **fields)
        self.events.append(event)
        self.txn_of.append(txn)

    def _gtid(self) -> Any:
        self.seq += 1
        if self.flavor == "mariadb":
            return MariaDBGtid(0, 1, self.seq)
        return MySQLGtid(UUID, self.seq)

    def control(self) -> None:
        """Events that move positions but must never reach consumers."""
        self._add(HeartbeatEvent, 27, 40, None, log_file=self.file, position=self.offset)
        self._add(BinlogCheckpointEvent, 161, 40, None, checkpoint_file=self.file)
        self._add(MariadbGtidListEvent, 163, 30, None, gtid_set=MariaDBGtidSet.parse(""))

    def txn(self, *tables: str, rows_size: int = 60) -> Any:
        gtid = self._gtid()
        if self.flavor == "mariadb":
            self._add(MariadbGtidEvent, 162, 38, gtid, gtid=gtid, gtid_flags=0)
        else:
            self._add(GtidEvent, 33, 65, gtid, gtid=gtid, commit_flag=True)
            self._add(QueryEvent, 2, 70, gtid, thread_id=1, exec_time=0, error_code=0, schema="db", query="BEGIN")
        for i, name in enumerate(tables or ("t1",)):
            schema, _, tname = name.rpartition(".")
            table = self.table(tname, schema or "db")
            self._add(TableMapEvent, 19, 50, gtid, table_id=100 + i, table=table)
            self._add(IntvarEvent, 5, 28, gtid, intvar_type=2, value=self.seq)
            self._add(
                WriteRowsEvent,
                30,
                rows_size,
                gtid,
                table_id=100 + i,
                rows_flags=0,
                table=table,
                body=b"",
                rows_start=0,
                rows_end=0,
                present=0,
                present_after=0,
            )
        self._add(XidEvent, 16, 31, gtid, xid=self.seq)
        self.grown.set()
        self.grown = asyncio.Event()
        return gtid

    def ddl(self, query: str = "CREATE TABLE x (a INT)") -> Any:
        gtid = self._gtid()
        if self.flavor == "mariadb":
            self._add(
                MariadbGtidEvent,
                162,
                38,
                gtid,
                gtid=gtid,
                gtid_flags=MariadbGtidEvent.FL_STANDALONE | MariadbGtidEvent.FL_DDL,
            )
        else:
            self._add(GtidEvent, 33, 65, gtid, gtid=gtid, commit_flag=True)
        self._add(QueryEvent, 2, 80, gtid, thread_id=1, exec_time=0, error_code=0, schema="db", query=query)
        self.grown.set()
        self.grown = asyncio.Event()
        return gtid

    def txns(self, n: int) -> list[Any]:
        return [self.txn() for _ in range(n)]

    def empty_set(self) -> GtidSet:
        return MariaDBGtidSet.parse("") if self.flavor == "mariadb" else MySQLGtidSet.parse("")

    def gtids(self, upto: int) -> GtidSet:
        if self.flavor == "mariadb":
            return MariaDBGtidSet.parse(f"0-1-{upto}") if upto else MariaDBGtidSet.parse("")
        return MySQLGtidSet.parse(f"{UUID}:1-{upto}") if upto else MySQLGtidSet.parse("")

    async def open(self, gtids: GtidSet | str | BinlogPosition | None) -> EventSource:
        if isinstance(gtids, BinlogPosition):  # a consumer reopened from its position: by its GTID set here
            gtids = gtids.gtid_set
        if isinstance(gtids, str):
            gtids = MariaDBGtidSet.parse(gtids) if self.flavor == "mariadb" else MySQLGtidSet.parse(gtids)
        source = FakeSource(self, gtids)
        self.sources.append(source)
        await asyncio.sleep(0)
        return source

    @property
    def open_sources(self) -> int:
        return sum(1 for s in self.sources if not s.closed)


class FakeSource:
    """One connection: a fake ROTATE, then every event of a transaction not in ``executed``."""

    def __init__(self, log: FakeLog, executed: GtidSet | None) -> None:
        self.log = log
        self.executed = executed
        self.closed = False
        self.gate: asyncio.Event | None = None
        self.sent = 0
        if executed is None:
            self.index = len(log.events)
            self._position = BinlogPosition(log.file, log.offset, log.gtids(log.seq))
        else:
            self.index = 0
            self._position = BinlogPosition("", 4, executed)
        self._rotated = False
        self.positions = SourcePositions(self._position)

    @property
    def position(self) -> BinlogPosition:
        return self._position

    async def next_with_position(self) -> tuple[Event, BinlogPosition | None] | None:
        event = await self.next_event()
        return None if event is None else (event, self.positions.after(event))

    async def next_event(self) -> Event | None:
        assert not self.closed, "read after close"
        log = self.log
        if not self._rotated:
            self._rotated = True
            return RotateEvent(**_hdr(4, 40, 0, 0x20), position=4, next_file=log.file)
        if self.gate is not None:
            await self.gate.wait()
        while True:
            if log.fail_after is not None and self.sent >= log.fail_after:
                raise SourceConnectionError("db.example:3306: connection lost (scripted)")
            while self.index < len(log.events):
                i = self.index
                self.index += 1
                gtid = log.txn_of[i]
                if gtid is not None and self.executed is not None and gtid in self.executed:
                    continue
                self.sent += 1
                if self.sent % 50 == 0:
                    await asyncio.sleep(0)  # a socket yields now and then
                return log.events[i]
            await log.grown.wait()

    async def close(self) -> None:
        self.closed = True


def make_client(
    log: FakeLog, *, buffer_bytes: int = 0, flush_ms: int = 0, factory: BinlogClientFactory | None = None
) -> BinlogClient:
    factory = factory or BinlogClientFactory()
    return factory.get_client(
        DSN_TEXT,
        max_bytes_in_binlog_dispatcher_buffer=buffer_bytes,
        max_flush_milliseconds_in_binlog_dispatcher=flush_ms,
        source_factory=log.open,
    )


def gtid_of(event: Event) -> Any:
    return event.gtid if isinstance(event, (GtidEvent, MariadbGtidEvent)) else None


async def read_txns(binlog: Binlog, until: Any, *, collect: list[Event] | None = None) -> list[Any]:
    """Read until the transaction ``until`` completed; return the GTIDs received (in order)."""
    seen: list[Any] = []
    async with asyncio.timeout(10):
        async for event in binlog:
            if collect is not None:
                collect.append(event)
            g = gtid_of(event)
            if g is not None:
                seen.append(g)
            if (
                isinstance(event, (XidEvent, QueryEvent))
                and seen
                and seen[-1] == until
                and binlog.position.gtid_set is not None
                and until in binlog.position.gtid_set
            ):
                return seen
    return seen


async def wait_until(pred: Callable[[], bool], what: str, limit_s: float = 10.0) -> None:
    """Poll a condition on in-memory state (bounded); nothing here is timing-based."""
    async with asyncio.timeout(limit_s):
        while not pred():  # noqa: ASYNC110 - the state belongs to several objects, no single event to wait on
            await asyncio.sleep(0.001)
    assert pred(), what


def seqs(gtids: list[Any]) -> list[int]:
    return [g.seq_no if isinstance(g, MariaDBGtid) else g.gno for g in gtids]


# --- stream: a scripted server serving a real binlog file

FILE = "mariadb-poc__domain_id_0_mariadb-repl-bin.000005"


class ScriptedInfo:
    flavor = "mariadb"
    gtid_mode = True
    server_id = 1
    server_uuid = None


class ScriptedServer:
    """Serves one binlog file's raw events; each connection may be cut after ``cut_after`` events."""

    def __init__(self, path: Path, cuts: list[int]) -> None:
        data = path.read_bytes()
        self.name = "binlog.000005"
        self.events: list[tuple[int, bytes]] = []  # (offset, raw)
        pos = 4
        while pos < len(data):
            size = struct.unpack_from("<I", data, pos + 9)[0]
            self.events.append((pos, data[pos : pos + size]))
            pos += size
        self.cuts = list(cuts)
        self.connections: list[FakeConnection] = []
        self.gtid_starts = [(ev.gtid, ev.offset) for ev in read_binlog_file(path) if isinstance(ev, MariadbGtidEvent)]

    def fake_rotate(self, position: int) -> bytes:
        body = struct.pack("<Q", position) + self.name.encode()
        size = HEADER_LEN + len(body) + 4
        head = struct.pack("<IBIIIH", 0, 4, 1, size, 0, 0x20)
        raw = head + body
        return raw + struct.pack("<I", zlib.crc32(raw))

    async def connect(self, index: int = 0) -> FakeConnection:
        cut = self.cuts.pop(0) if self.cuts else None
        conn = FakeConnection(self, cut)
        self.connections.append(conn)
        return conn


class FakeConnection:
    checksum = True
    server_id = 12345

    def __init__(self, server: ScriptedServer, cut: int | None) -> None:
        self.server = server
        self.info = ScriptedInfo()
        self.cut = cut
        self.queue: list[bytes] = []
        self.sent = 0
        self.started_at: tuple[str, Any] | None = None

    async def start_dump(
        self, *, file: str | None = None, position: int = 4, gtid_set: Any = None, blocking: bool = True
    ) -> None:
        srv = self.server
        if gtid_set is not None:
            assert isinstance(gtid_set, MariaDBGtidSet)
            self.started_at = ("gtid", str(gtid_set))
            # first transaction whose GTID is not executed
            position = next(
                (off for gtid, off in srv.gtid_starts if gtid not in gtid_set),
                srv.events[-1][0] + len(srv.events[-1][1]),
            )
        else:
            assert file == srv.name, file
            self.started_at = ("file", position)
        self.queue = [srv.fake_rotate(position), srv.events[0][1]]
        self.queue += [raw for off, raw in srv.events if off >= position and off > 4]

    async def current_position(self) -> tuple[str, int, str]:
        """The end of the served file and the GTID position there (what SHOW MASTER STATUS would say)."""
        srv = self.server
        last = srv.gtid_starts[-1][0]
        end = srv.events[-1][0] + len(srv.events[-1][1])
        return srv.name, end, f"{last.domain_id}-{last.server_id}-{last.seq_no}"

    async def read_event(self) -> bytes | None:
        if self.cut is not None and self.sent >= self.cut:
            raise SourceConnectionError("scripted cut")
        if not self.queue:
            return None
        self.sent += 1
        return self.queue.pop(0)

    async def read_events(self) -> list[bytes] | None:
        event = await self.read_event()
        return None if event is None else [event]

    async def close(self) -> None:
        pass


# --- wire: a recording transport


class RecordingTransport(asyncio.Transport):
    """A transport that records what the protocol writes, and its pauses; ``respond(data)`` (if set) is called with
    each write and returns the server's answer, delivered to the protocol as asyncio's selector transport would."""

    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.paused = False
        self.pause_calls = 0
        self.resume_calls = 0
        self.closed = False
        self.protocol: Any = None
        self.respond: Callable[[bytes], bytes] | None = None

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self.protocol = protocol

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self.protocol  # type: ignore[no-any-return]

    def write(self, data: Any) -> None:
        self.written += data
        if self.respond is not None:
            deliver(self.protocol, self.respond(bytes(data)))

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            asyncio.get_running_loop().call_soon(self.protocol.connection_lost, None)

    def pause_reading(self) -> None:
        self.paused = True
        self.pause_calls += 1

    def resume_reading(self) -> None:
        self.paused = False
        self.resume_calls += 1


def deliver(protocol: Any, data: bytes) -> None:
    """As asyncio's selector transport feeds a buffered protocol: into the protocol's own buffer."""
    view = memoryview(data)
    while view:
        buf = protocol.get_buffer(-1)
        n = min(len(buf), len(view))
        buf[:n] = view[:n]
        del buf
        protocol.buffer_updated(n)
        view = view[n:]


# --- lease: the replica lock's server


class LockServer:
    """GET_LOCK/IS_USED_LOCK semantics of one named lock, connections that can break, a scripted holder."""

    def __init__(self) -> None:
        self.holder: int | None = None
        self.next_id = 100
        self.conns: list[FakeConn] = []
        self.on_get_lock: Any = None  # called before each GET_LOCK (a test frees the lock there)
        self.confirmations = 0
        self.confirmed = asyncio.Event()  # set when ``confirmations`` reaches ``wanted``
        self.wanted = 0

    async def connect(self, dsn: DSN) -> FakeConn:
        self.next_id += 1
        conn = FakeConn(self, self.next_id)
        self.conns.append(conn)
        return conn


class FakeConn:
    def __init__(self, server: LockServer, conn_id: int) -> None:
        self.server = server
        self.id = conn_id
        self.broken = False
        self.closed = False
        self.queries: list[str] = []

    async def query(self, sql: str, args: tuple[object, ...] | None = None) -> list[tuple[Any, ...]]:
        self.queries.append(sql)
        if self.broken or self.closed:
            raise SourceConnectionError("Lost connection to MySQL server during query", errno=2013)
        s = self.server
        if sql.startswith("SET SESSION"):
            return []
        if "GET_LOCK" in sql and "RELEASE" not in sql:
            if s.on_get_lock is not None:
                s.on_get_lock(self)
            if s.holder in (None, self.id):
                s.holder = self.id
                return [(1,)]
            return [(0,)]
        if "= CONNECTION_ID()" in sql:
            s.confirmations += 1
            if s.wanted and s.confirmations >= s.wanted:
                s.confirmed.set()
            return [(1 if s.holder == self.id else 0,)]
        if "IS_USED_LOCK" in sql:
            return [(s.holder,)]
        if "PROCESSLIST" in sql:
            return [("10.0.0.9:5555",)]
        if "RELEASE_LOCK" in sql:
            if s.holder == self.id:
                s.holder = None
            return [(1,)]
        raise AssertionError(sql)

    async def query_processlist(self, sql: str, args: tuple[object, ...] | None = None) -> list[tuple[Any, ...]]:
        return await self.query(sql.format(processlist="information_schema.PROCESSLIST"), args)

    async def aclose(self) -> None:
        self.closed = True
        if self.server.holder == self.id:
            self.server.holder = None  # the server releases a closed connection's lock

    def break_(self) -> None:
        """The server dropped it (restart, wait_timeout): its lock is free."""
        self.broken = True
        if self.server.holder == self.id:
            self.server.holder = None


@pytest.fixture(name="server")
def lock_server(monkeypatch: pytest.MonkeyPatch) -> LockServer:
    s = LockServer()
    monkeypatch.setattr(_lease.SourceConnection, "connect", s.connect)
    return s


def make_lease(**kw: Any) -> _lease.ReplicaLease:
    return _lease.ReplicaLease(DSN.parse("mysql://repl@db:3306"), "mybinlog:x", replica="shop", **kw)


# --- extras: libraries that are not installed

#: a script preamble: ``BLOCK_EXTRAS.format(blocked={names})``; importing a module of those packages fails
BLOCK_EXTRAS = """
import importlib.abc, sys
BLOCKED = {blocked!r}
class _Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}} (not installed in this test)", name=name)
        return None
sys.meta_path.insert(0, _Absent())
"""
