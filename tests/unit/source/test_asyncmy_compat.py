"""The asyncmy coupling (mybinlog/source/_asyncmy.py): the compatibility check, the version pin, the hand-over of
the socket, and a whole dump driven through a real asyncmy ``Connection`` object with scripted bytes.

The asyncmy objects are real (``Connection``, ``_MySQLProtocol`` fed the way asyncio feeds it); only the
transport is a recording stand-in that answers the dump command with scripted server bytes. If an asyncmy
release changes what mybinlog relies on, these tests fail.
"""

from __future__ import annotations

import asyncio
import logging
import tomllib
from pathlib import Path
from typing import Any

import pytest
from asyncmy import connection as _asyncmy_connection

from mybinlog.errors import BinlogPurgedError, ConfigurationError, SourceConnectionError
from mybinlog.source import _asyncmy as compat
from mybinlog.source._connection import BinlogConnection, ServerInfo, encode_binlog_dump
from mybinlog.source._dsn import DSN
from mybinlog.source._wire import WireProtocol
from tests.fakes import RecordingTransport, deliver

asyncmy_connection: Any = _asyncmy_connection  # private attributes are not in asyncmy's stubs
ROOT = Path(__file__).resolve().parents[3]
EOF = b"\xfe\x00\x00\x02\x00"


def packet(payload: bytes, seq: int) -> bytes:
    n = len(payload)
    return bytes((n & 0xFF, (n >> 8) & 0xFF, n >> 16, seq & 0xFF)) + payload


def make_asyncmy_conn() -> tuple[Any, Any, RecordingTransport]:
    """A real asyncmy Connection in the state asyncmy.connect() leaves it: protocol and transport attached."""
    loop = asyncio.get_running_loop()
    conn = asyncmy_connection.Connection(user="repl", password="")
    proto = asyncmy_connection._MySQLProtocol(loop)
    transport = RecordingTransport()
    proto.connection_made(transport)
    transport.set_protocol(proto)
    conn._proto = proto
    conn._transport = transport
    conn._connected = True
    return conn, proto, transport


def make_binlog_conn(conn: Any) -> BinlogConnection:
    info = ServerInfo(
        flavor="mariadb",
        version=(10, 11, 6),
        version_string="10.11.6-MariaDB",
        server_id=1,
        server_uuid=None,
        gtid_mode=True,
        log_bin=True,
        binlog_format="ROW",
        binlog_row_image="FULL",
        binlog_row_metadata="FULL",
        binlog_checksum="CRC32",
    )
    dsn = DSN(host="db", port=3306, user="repl", password="Pw-not-Shown9")
    return BinlogConnection(conn, dsn, info, server_id=77, heartbeat_period=0, idle_timeout=None, checksum=True)


def event(type_code: int, body: bytes = b"") -> bytes:
    size = 19 + len(body) + 4
    return (
        bytes(4)
        + bytes([type_code])
        + (1).to_bytes(4, "little")
        + size.to_bytes(4, "little")
        + bytes(6)
        + body
        + bytes(4)
    )


# -- the check and the pin ------------------------------------------------------------------------------------


def test_check_asyncmy_compat_passes_for_installed_version(caplog: pytest.LogCaptureFixture) -> None:
    compat._checked = False
    with caplog.at_level(logging.WARNING, logger="mybinlog.transport"):
        compat.check_asyncmy_compat()
    assert compat.ASYNCMY_VERSION not in ("", "unknown")
    assert not caplog.records, "the installed asyncmy is outside the supported range"


def test_supported_range_is_the_pin_in_pyproject() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = [d for d in project["dependencies"] if d.replace(" ", "").startswith("asyncmy")]
    assert pins == [f"asyncmy{compat.SUPPORTED_ASYNCMY}"]
    low, high = compat._SUPPORTED_RANGE
    spec = f">={'.'.join(map(str, low))},<{'.'.join(map(str, high))}"
    assert spec == compat.SUPPORTED_ASYNCMY
    installed = compat._version_tuple(compat.ASYNCMY_VERSION)
    assert installed is not None
    assert low <= installed < high, "the tests run against an asyncmy outside the pinned range"


def test_check_fails_loudly_naming_both_versions_when_the_transport_is_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    class ChangedConnection:
        _proto = None  # but no _transport

    monkeypatch.setattr(compat, "_checked", False)
    monkeypatch.setattr(asyncmy_connection, "Connection", ChangedConnection)
    with pytest.raises(ConfigurationError) as info:
        compat.check_asyncmy_compat()
    message = str(info.value)
    assert f"asyncmy {compat.ASYNCMY_VERSION} is not compatible" in message
    assert "Connection._transport is missing" in message
    assert f"supports asyncmy {compat.SUPPORTED_ASYNCMY}" in message
    assert f"pip install 'asyncmy{compat.SUPPORTED_ASYNCMY}'" in message


@pytest.mark.parametrize("attr", ["buffer", "pos", "length"])
def test_check_fails_when_the_receive_buffer_changed(monkeypatch: pytest.MonkeyPatch, attr: str) -> None:
    names = {"buffer": None, "pos": 0, "length": 0}
    del names[attr]
    changed = type("ChangedProtocol", (asyncio.BufferedProtocol,), names)
    monkeypatch.setattr(compat, "_checked", False)
    monkeypatch.setattr(asyncmy_connection, "_MySQLProtocol", changed)
    with pytest.raises(ConfigurationError, match=rf"_MySQLProtocol\.{attr} is missing"):
        compat.check_asyncmy_compat()


def test_check_warns_about_a_version_outside_the_range(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(compat, "_checked", False)
    monkeypatch.setattr(compat, "ASYNCMY_VERSION", "0.3.1")
    with caplog.at_level(logging.WARNING, logger="mybinlog.transport"):
        compat.check_asyncmy_compat()
    assert "asyncmy 0.3.1 is outside the versions mybinlog is tested with (>=0.2.18,<0.2.19)" in caplog.text


def test_version_tuple() -> None:
    assert compat._version_tuple("0.2.18") == (0, 2, 18)
    assert compat._version_tuple("0.2.19rc1") == (0, 2, 19)
    assert compat._version_tuple("unknown") is None


# -- the hand-over ------------------------------------------------------------------------------------------


async def test_unconsumed_bytes_are_what_asyncmy_did_not_read() -> None:
    """asyncmy's own reader consumes buffer[pos:...] and leaves the rest: exactly what is handed over."""
    conn, proto, transport = make_asyncmy_conn()
    conn._next_seq_id = 1
    deliver(proto, packet(b"\x00\x00\x00\x02\x00\x00\x00", 1) + packet(b"\xfe\x00\x00", 2) + b"\x05\x00")
    first = await conn.read_packet()
    assert first.get_all_data() == b"\x00\x00\x00\x02\x00\x00\x00"
    taken = compat.take_over_transport(conn)
    assert taken is not None
    assert taken[0] is transport
    assert taken[1] == packet(b"\xfe\x00\x00", 2) + b"\x05\x00"


async def test_take_over_with_nothing_buffered() -> None:
    conn, _proto, transport = make_asyncmy_conn()
    assert compat.take_over_transport(conn) == (transport, b"")


async def test_take_over_of_a_closed_connection() -> None:
    conn, _proto, transport = make_asyncmy_conn()
    transport.closed = True
    assert compat.take_over_transport(conn) is None
    conn._transport = None
    assert compat.take_over_transport(conn) is None


async def test_take_over_refuses_something_that_is_not_an_asyncio_transport() -> None:
    conn, _proto, _transport = make_asyncmy_conn()

    class Socketish:
        def is_closing(self) -> bool:
            return False

    conn._transport = Socketish()
    with pytest.raises(ConfigurationError, match=r"not an asyncio\.Transport"):
        compat.take_over_transport(conn)


# -- a whole dump through a real asyncmy Connection, scripted server bytes ------------------------------------


async def test_dump_takes_the_socket_over_and_reads_through_the_framer() -> None:
    conn, asyncmy_proto, transport = make_asyncmy_conn()
    events = [event(4, b"\x04" + bytes(7) + b"binlog.000001"), event(15, bytes(80)), event(2, b"q" * 100)]
    transport.respond = lambda _cmd: (
        b"".join(packet(b"\x00" + e, seq) for seq, e in enumerate(events, start=1)) + packet(EOF, 4)
    )
    bconn = make_binlog_conn(conn)
    await bconn.start_dump(file="binlog.000001", position=4, blocking=False)
    # the command went straight to the transport, as a new exchange (sequence id 0), not through asyncmy
    command = encode_binlog_dump(file="binlog.000001", position=4, server_id=77, flags=1)
    assert bytes(transport.written) == packet(command, 0)
    assert isinstance(transport.protocol, WireProtocol)
    assert asyncmy_proto.length == asyncmy_proto.pos  # asyncmy's protocol received nothing
    assert [await bconn.read_event() for _ in events] == events
    assert await bconn.read_event() is None
    assert await bconn.read_event() is None
    assert not bconn.streaming
    with pytest.raises(ConfigurationError, match="streaming the binlog and cannot run queries"):
        await bconn.query("SELECT 1")
    await bconn.close()
    assert transport.closed
    assert bytes(transport.written) == packet(command, 0)  # no COM_QUIT after a dump
    assert not conn.connected


async def test_dump_reads_bytes_asyncmy_had_received_first() -> None:
    # MariaDB's KILL error (sequence 0) arrived while asyncmy still owned the socket: it is not lost
    conn, asyncmy_proto, transport = make_asyncmy_conn()
    deliver(asyncmy_proto, packet(b"\xff\x87\x07#70100Connection was killed", 0))
    bconn = make_binlog_conn(conn)
    with pytest.raises(SourceConnectionError, match="Connection was killed") as info:
        await bconn.start_dump(file="binlog.000001", position=4)
    assert info.value.errno == 1927
    assert transport.closed


async def test_dump_error_is_translated() -> None:
    conn, _proto, transport = make_asyncmy_conn()
    transport.respond = lambda _cmd: packet(b"\xff\xd4\x04#HY000Could not find first log file name", 1)
    bconn = make_binlog_conn(conn)
    with pytest.raises(BinlogPurgedError) as info:
        await bconn.start_dump(file="binlog.000009", position=4)
    assert "repl@db:3306" in str(info.value)
    assert "Pw-not-Shown9" not in str(info.value)
    assert transport.closed
    with pytest.raises(SourceConnectionError, match="unusable"):
        await bconn.read_event()


async def test_dump_on_a_closed_socket_is_a_connection_error() -> None:
    conn, _proto, transport = make_asyncmy_conn()
    transport.closed = True
    bconn = make_binlog_conn(conn)
    with pytest.raises(SourceConnectionError, match="connection is closed"):
        await bconn.start_dump(file="binlog.000001", position=4)
    assert bytes(transport.written) == b""


async def test_failed_dump_command_leaves_a_broken_connection() -> None:
    conn, _proto, transport = make_asyncmy_conn()

    def refuse(_cmd: bytes) -> bytes:
        raise ConnectionResetError(104, "Connection reset by peer")

    transport.respond = refuse
    bconn = make_binlog_conn(conn)
    with pytest.raises(SourceConnectionError, match="reset by peer"):
        await bconn.start_dump(file="binlog.000001", position=4)
    assert not bconn.streaming
    assert transport.closed
    with pytest.raises(SourceConnectionError, match="could not be started"):
        await bconn.read_event()
