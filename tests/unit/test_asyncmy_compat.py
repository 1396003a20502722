"""The asyncmy private-API layer: compatibility check, command writing, packet reading, flow control.

The reader is driven through asyncmy's real protocol object, fed with bytes the way asyncio's socket transport
feeds it (``get_buffer`` + ``buffer_updated``); the transport below only records writes and pause/resume calls.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asyncmy import connection as _asyncmy_connection

from mybinlog.errors import ConfigurationError
from mybinlog.source import _asyncmy as compat

MAX = compat.MAX_PACKET_PAYLOAD
asyncmy_connection: Any = _asyncmy_connection  # private attributes are not in asyncmy's stubs


class RecordingTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.paused = False
        self.pause_calls = 0
        self.resume_calls = 0
        self.closed = False

    def write(self, data: Any) -> None:
        self.written += data

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self.protocol = protocol

    def pause_reading(self) -> None:
        self.paused = True
        self.pause_calls += 1

    def resume_reading(self) -> None:
        self.paused = False
        self.resume_calls += 1


def make_conn() -> tuple[Any, Any, RecordingTransport]:
    loop = asyncio.get_running_loop()
    conn = asyncmy_connection.Connection(user="test", password="")
    proto = asyncmy_connection._MySQLProtocol(loop)
    transport = RecordingTransport()
    proto.connection_made(transport)
    conn._proto = proto
    conn._transport = transport
    conn._next_seq_id = 1  # as after a command was sent
    return conn, proto, transport


def feed(proto: Any, data: bytes) -> None:
    """Deliver bytes as asyncio's selector transport does: into the protocol's own buffer."""
    view = memoryview(data)
    while view:
        buf = proto.get_buffer(len(view))
        n = min(len(buf), len(view))
        buf[:n] = view[:n]
        proto.buffer_updated(n)
        view = view[n:]


def packet(payload: bytes, seq: int) -> bytes:
    n = len(payload)
    return bytes((n & 0xFF, (n >> 8) & 0xFF, n >> 16, seq & 0xFF)) + payload


def wire(payload: bytes, first_seq: int = 1) -> bytes:
    """A payload as the server sends it: split into 16 MiB - 1 packets, empty packet after an exact multiple."""
    out = []
    seq = first_seq
    offset = 0
    while True:
        chunk = payload[offset : offset + MAX]
        out.append(packet(chunk, seq))
        seq += 1
        offset += len(chunk)
        if len(chunk) < MAX:
            return b"".join(out)


def test_check_asyncmy_compat_passes_for_installed_version() -> None:
    compat.check_asyncmy_compat()
    assert compat.ASYNCMY_VERSION not in ("", "unknown")


def test_check_asyncmy_compat_fails_loudly_naming_the_version(monkeypatch: pytest.MonkeyPatch) -> None:
    class NotAProtocol:
        pass

    monkeypatch.setattr(compat, "_checked", False)
    monkeypatch.setattr(asyncmy_connection, "_MySQLProtocol", NotAProtocol)
    with pytest.raises(ConfigurationError) as info:
        compat.check_asyncmy_compat()
    message = str(info.value)
    assert f"asyncmy {compat.ASYNCMY_VERSION}" in message
    assert "BufferedProtocol" in message
    assert "pip install" in message


def test_check_asyncmy_compat_detects_changed_signature(monkeypatch: pytest.MonkeyPatch) -> None:
    class ChangedProtocol(asyncmy_connection._MySQLProtocol):  # type: ignore[misc]
        async def wait_for_data(self, need: int, extra: float) -> None:
            raise NotImplementedError

    monkeypatch.setattr(compat, "_checked", False)
    monkeypatch.setattr(asyncmy_connection, "_MySQLProtocol", ChangedProtocol)
    with pytest.raises(ConfigurationError, match=r"wait_for_data takes \(self, need, extra\)"):
        compat.check_asyncmy_compat()


async def test_send_command_small() -> None:
    conn, _proto, transport = make_conn()
    await compat.send_command(conn, b"\x12payload")
    assert bytes(transport.written) == b"\x08\x00\x00\x00\x12payload"
    assert conn._next_seq_id == 1


@pytest.mark.parametrize(("size", "sizes"), [(MAX - 1, [MAX - 1]), (MAX, [MAX, 0]), (MAX + 5, [MAX, 5])])
async def test_send_command_splits_16mib_payloads(size: int, sizes: list[int]) -> None:
    conn, _proto, transport = make_conn()
    payload = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    await compat.send_command(conn, payload)
    written = bytes(transport.written)
    pos = 0
    seen = []
    body = bytearray()
    for seq, expected in enumerate(sizes):
        n = int.from_bytes(written[pos : pos + 3], "little")
        assert written[pos + 3] == seq
        assert n == expected
        body += written[pos + 4 : pos + 4 + n]
        pos += 4 + n
        seen.append(n)
    assert pos == len(written)
    assert bytes(body) == payload
    assert conn._next_seq_id == len(sizes)


async def test_reads_many_packets_from_one_chunk() -> None:
    conn, proto, _t = make_conn()
    payloads = [b"\x00" + bytes([i]) * i for i in range(1, 50)]
    feed(proto, b"".join(packet(p, seq) for seq, p in enumerate(payloads, start=1)))
    reader = compat.PacketReader(conn)
    got = [await reader.read() for _ in payloads]
    assert got == payloads
    assert reader.buffered == 0
    assert reader.next_seq == 50


async def test_reads_packets_delivered_byte_by_byte() -> None:
    conn, proto, _t = make_conn()
    payloads = [b"abc", b"", b"\x00" * 300]
    data = b"".join(packet(p, seq) for seq, p in enumerate(payloads, start=1))
    reader = compat.PacketReader(conn)

    async def produce() -> None:
        for i in range(len(data)):
            feed(proto, data[i : i + 1])
            await asyncio.sleep(0)

    producer = asyncio.create_task(produce())
    got = [await reader.read() for _ in payloads]
    await producer
    assert got == payloads


@pytest.mark.parametrize("size", [MAX - 1, MAX, MAX + 1, 2 * MAX + 7])
async def test_reassembles_multi_packet_payloads(size: int) -> None:
    conn, proto, _t = make_conn()
    payload = b"\x00" + b"e" * (size - 1)
    feed(proto, wire(payload) + packet(b"\x00next", (size // MAX + 2) & 0xFF))
    reader = compat.PacketReader(conn, high_water=0)
    assert await reader.read() == payload
    assert await reader.read() == b"\x00next"


async def test_sequence_numbers_wrap_at_256() -> None:
    conn, proto, _t = make_conn()
    feed(proto, b"".join(packet(b"\x00" + bytes([i & 0xFF]), (i + 1) & 0xFF) for i in range(600)))
    reader = compat.PacketReader(conn)
    for i in range(600):
        assert await reader.read() == b"\x00" + bytes([i & 0xFF])


async def test_wrong_sequence_number_is_desync() -> None:
    conn, proto, _t = make_conn()
    feed(proto, packet(b"\x00ok", 1) + packet(b"\x00bad", 5))
    reader = compat.PacketReader(conn)
    assert await reader.read() == b"\x00ok"
    with pytest.raises(compat.ProtocolDesync, match="sequence number 5 where 2"):
        await reader.read()


async def test_error_packet_with_sequence_zero_is_returned() -> None:
    # MariaDB sends its shutdown error with sequence 0 in the middle of a stream.
    conn, proto, _t = make_conn()
    error = b"\xff\x87\x07#70100Connection was killed"
    feed(proto, packet(b"\x00ev", 1) + packet(error, 0))
    reader = compat.PacketReader(conn)
    assert await reader.read() == b"\x00ev"
    assert await reader.read() == error


async def test_eof_raises_connection_lost() -> None:
    conn, proto, _t = make_conn()
    feed(proto, packet(b"\x00ev", 1) + b"\x10\x00")  # a packet, then half a header
    proto.eof_received()
    reader = compat.PacketReader(conn)
    assert await reader.read() == b"\x00ev"
    with pytest.raises(compat.ConnectionLost, match="closed the connection"):
        await reader.read()


async def test_connection_reset_while_waiting_raises_connection_lost() -> None:
    conn, proto, _t = make_conn()
    reader = compat.PacketReader(conn)
    task = asyncio.create_task(reader.read())
    await asyncio.sleep(0)
    assert not task.done()
    proto.connection_lost(ConnectionResetError(104, "Connection reset by peer"))
    with pytest.raises(compat.ConnectionLost, match="reset by peer"):
        await task


async def test_idle_timeout_raises_connection_lost() -> None:
    conn, _proto, _t = make_conn()
    reader = compat.PacketReader(conn, idle_timeout=0.05)
    with pytest.raises(compat.ConnectionLost, match=r"no data from the server for 0.05 s"):
        await reader.read()


async def test_cancelled_read_loses_nothing() -> None:
    conn, proto, _t = make_conn()
    payload = b"\x00" + b"z" * (MAX + 100)
    data = wire(payload)
    reader = compat.PacketReader(conn, high_water=0)
    # first part of a multi-packet payload plus half of the second packet's header
    feed(proto, data[: MAX + 4 + 2])
    task = asyncio.create_task(reader.read())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    feed(proto, data[MAX + 4 + 2 :])
    assert await reader.read() == payload


async def test_flow_control_pauses_and_resumes_the_transport() -> None:
    conn, proto, transport = make_conn()
    reader = compat.PacketReader(conn, high_water=1000)
    payloads = [b"\x00" + bytes([i]) * 99 for i in range(30)]  # 30 * 104 bytes on the wire
    feed(proto, b"".join(packet(p, seq) for seq, p in enumerate(payloads, start=1)))
    assert transport.paused
    assert reader.paused
    got = []
    while transport.paused:
        got.append(await reader.read())
    # resumed once fewer than high_water // 4 bytes were left
    assert reader.buffered < 250
    assert transport.resume_calls == 1
    while len(got) < len(payloads):
        got.append(await reader.read())
    assert got == payloads


async def test_flow_control_resumes_for_a_packet_larger_than_high_water() -> None:
    conn, proto, transport = make_conn()
    reader = compat.PacketReader(conn, high_water=100)
    big = b"\x00" + b"b" * 999
    data = packet(big, 1)
    feed(proto, data[:500])
    assert transport.paused
    task = asyncio.create_task(reader.read())
    await asyncio.sleep(0)
    assert not transport.paused  # the reader needs the rest of the packet, so it reads on
    feed(proto, data[500:])
    assert await task == big


async def test_read_packet_keeps_asyncmy_sequence_in_sync() -> None:
    conn, proto, _t = make_conn()
    await compat.send_command(conn, b"\x03SELECT 1")
    feed(proto, packet(b"\x00\x00\x00\x02\x00\x00\x00", 1))
    assert await compat.read_packet(conn) == b"\x00\x00\x00\x02\x00\x00\x00"
    assert conn._next_seq_id == 2


async def test_close_transport_closes_without_quit() -> None:
    conn, _proto, transport = make_conn()
    compat.close_transport(conn)
    assert transport.closed
    assert bytes(transport.written) == b""


async def test_read_ok_batch_strips_the_ok_byte_and_stops_at_eof() -> None:
    conn, proto, _t = make_conn()
    events = [bytes([i]) * (19 + i) for i in range(10)]
    eof = b"\xfe\x00\x00\x02\x00"
    feed(proto, b"".join(packet(b"\x00" + e, seq) for seq, e in enumerate(events, start=1)) + packet(eof, 11))
    feed(proto, packet(b"\x00late", 12))
    reader = compat.PacketReader(conn)
    batch, stop = await reader.read_ok_batch()
    assert batch == events
    assert stop == eof
    # the batch ended at the EOF packet: what follows is still buffered
    assert await reader.read_ok_batch() == ([b"late"], None)


async def test_read_ok_batch_respects_max_bytes_but_returns_a_large_first_packet() -> None:
    conn, proto, _t = make_conn()
    feed(proto, packet(b"\x00" + b"a" * 5000, 1) + packet(b"\x00b", 2) + packet(b"\x00c", 3))
    reader = compat.PacketReader(conn)
    assert await reader.read_ok_batch(max_bytes=100) == ([b"a" * 5000], None)
    assert await reader.read_ok_batch(max_bytes=100) == ([b"b", b"c"], None)


async def test_read_ok_batch_error_packet_alone() -> None:
    conn, proto, _t = make_conn()
    error = b"\xff\xd4\x04#HY000Could not find first log file name in binary log index file"
    feed(proto, packet(error, 1))
    reader = compat.PacketReader(conn)
    assert await reader.read_ok_batch() == ([], error)


async def test_read_ok_batch_keeps_packets_before_a_bad_sequence_number() -> None:
    conn, proto, _t = make_conn()
    feed(proto, packet(b"\x00one", 1) + packet(b"\x00two", 2) + packet(b"\x00bad", 9))
    reader = compat.PacketReader(conn)
    assert await reader.read_ok_batch() == ([b"one", b"two"], None)
    with pytest.raises(compat.ProtocolDesync, match="sequence number 9 where 3"):
        await reader.read_ok_batch()


async def test_read_ok_batch_waits_and_reassembles_large_events() -> None:
    conn, proto, _t = make_conn()
    reader = compat.PacketReader(conn, high_water=0)
    payload = b"\x00" + b"L" * (MAX + 3)
    task = asyncio.create_task(reader.read_ok_batch())
    await asyncio.sleep(0)
    assert not task.done()
    feed(proto, wire(payload))
    assert await task == ([payload[1:]], None)
