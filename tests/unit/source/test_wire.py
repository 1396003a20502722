"""WireProtocol, the asyncio side of a streaming connection, driven with scripted bytes.

Bytes are delivered the way asyncio's socket transport delivers them to a buffered protocol (``get_buffer`` +
``buffer_updated``); the transport below only records writes, pause/resume and close, and reports the loss of
the connection like a real one (``connection_lost`` from the event loop).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from mybinlog import PacketSequenceError
from mybinlog.protocol._packets import MAX_PACKET_PAYLOAD, EofPacket, PacketFramer
from mybinlog.source._wire import ConnectionLost, WireProtocol
from tests.fakes import RecordingTransport

MAX = MAX_PACKET_PAYLOAD


def make_wire(
    *, high_water: int = 8 * 1024 * 1024, idle_timeout: float | None = None
) -> tuple[WireProtocol, RecordingTransport]:
    transport = RecordingTransport()
    wire = WireProtocol(transport, PacketFramer(next_seq=1, high_water=high_water), idle_timeout=idle_timeout)
    transport.set_protocol(wire)
    return wire, transport


def deliver(wire: WireProtocol, data: bytes) -> None:
    """As asyncio's selector transport: receive into the protocol's buffer, in as many reads as it takes."""
    view = memoryview(data)
    while view:
        buf = wire.get_buffer(-1)
        n = min(len(buf), len(view))
        buf[:n] = view[:n]
        buf.release()
        wire.buffer_updated(n)
        view = view[n:]


def packet(payload: bytes, seq: int) -> bytes:
    n = len(payload)
    return bytes((n & 0xFF, (n >> 8) & 0xFF, n >> 16, seq & 0xFF)) + payload


def wire_bytes(payload: bytes, first_seq: int = 1) -> bytes:
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


async def until(condition: Callable[[], bool]) -> None:
    """Let other tasks run until ``condition`` holds (event-loop turns, no clock)."""
    for _ in range(100):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the condition never held")


async def test_reads_packets_delivered_byte_by_byte() -> None:
    wire, _t = make_wire()
    payloads = [b"\x00abc", b"\x00", b"\x00" * 300]
    data = b"".join(packet(p, seq) for seq, p in enumerate(payloads, start=1))

    async def read_all() -> list[bytes]:
        out: list[bytes] = []
        while len(out) < len(payloads):
            events, stop = await wire.read_batch()
            assert stop is None
            out += events
        return out

    reader = asyncio.create_task(read_all())
    for i in range(len(data)):
        await until(lambda: wire.waiting or reader.done())
        deliver(wire, data[i : i + 1])
    assert await reader == [p[1:] for p in payloads]


async def test_read_packet_joins_continuations() -> None:
    wire, _t = make_wire(high_water=0)
    payload = b"\x00" + b"L" * (MAX + 3)
    task = asyncio.create_task(wire.read_packet())
    await until(lambda: wire.waiting)
    deliver(wire, wire_bytes(payload))
    assert await task == payload


async def test_read_batch_waits_and_reassembles_large_events() -> None:
    wire, _t = make_wire(high_water=0)
    payload = b"\x00" + b"L" * (MAX + 3)
    task = asyncio.create_task(wire.read_batch())
    await until(lambda: wire.waiting)
    deliver(wire, wire_bytes(payload) + packet(b"\xfe\x00\x00\x02\x00", 3))
    assert await task == ([payload[1:]], None)
    assert await wire.read_batch() == ([], EofPacket(b"\xfe\x00\x00\x02\x00"))


async def test_sequence_gap_raises_after_the_events_before_it() -> None:
    wire, _t = make_wire()
    deliver(wire, packet(b"\x00ok", 1) + packet(b"\x00bad", 5))
    assert await wire.read_batch() == ([b"ok"], None)
    with pytest.raises(PacketSequenceError, match="sequence number 5 where 2"):
        await wire.read_batch()


async def test_server_closing_raises_connection_lost() -> None:
    wire, _t = make_wire()
    deliver(wire, packet(b"\x00ev", 1))
    wire.eof_received()
    wire.connection_lost(None)
    assert await wire.read_batch() == ([b"ev"], None)  # what arrived is still returned
    with pytest.raises(ConnectionLost, match=r"^the server closed the connection$"):
        await wire.read_batch()


async def test_server_closing_in_the_middle_of_a_packet_says_so() -> None:
    wire, _t = make_wire()
    deliver(wire, packet(b"\x00ev", 1) + b"\x10\x00")  # a packet, then half a header
    wire.eof_received()
    assert await wire.read_batch() == ([b"ev"], None)
    with pytest.raises(ConnectionLost, match=r"closed the connection \(.*inside a packet header \(2 of 4 bytes\)"):
        await wire.read_batch()


async def test_connection_reset_while_waiting_raises_connection_lost() -> None:
    wire, _t = make_wire()
    task = asyncio.create_task(wire.read_batch())
    await until(lambda: wire.waiting)
    wire.connection_lost(ConnectionResetError(104, "Connection reset by peer"))
    with pytest.raises(ConnectionLost, match="reset by peer"):
        await task


async def test_idle_timeout_raises_connection_lost() -> None:
    wire, _t = make_wire(idle_timeout=0.05)
    with pytest.raises(ConnectionLost, match=r"no data from the server for 0.05 s"):
        await wire.read_batch()


async def test_cancelled_read_loses_nothing() -> None:
    wire, _t = make_wire(high_water=0)
    payload = b"\x00" + b"z" * (MAX + 100)
    data = wire_bytes(payload)
    # the first part of a multi-packet payload plus half of the second packet's header
    deliver(wire, data[: MAX + 4 + 2])
    task = asyncio.create_task(wire.read_batch())
    await until(lambda: wire.waiting)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not wire.waiting
    deliver(wire, data[MAX + 4 + 2 :])
    assert await wire.read_batch() == ([payload[1:]], None)


async def test_flow_control_pauses_and_resumes_the_transport() -> None:
    wire, transport = make_wire(high_water=1000)
    payloads = [b"\x00" + bytes([i]) * 99 for i in range(30)]  # 30 * 104 bytes on the wire
    data = b"".join(packet(p, seq) for seq, p in enumerate(payloads, start=1))
    for i in range(0, len(data), 200):  # socket reads of 200 bytes
        deliver(wire, data[i : i + 200])
    assert transport.paused
    assert wire.paused
    assert transport.pause_calls == 1
    got: list[bytes] = []
    while transport.paused:
        events, _stop = await wire.read_batch(max_bytes=100)
        got += events
    # resumed once fewer than high_water // 4 bytes were left
    assert wire.buffered < 250
    assert transport.resume_calls == 1
    while len(got) < len(payloads):
        events, _stop = await wire.read_batch(max_bytes=100)
        got += events
    assert got == [p[1:] for p in payloads]


async def test_flow_control_resumes_for_a_packet_larger_than_high_water() -> None:
    wire, transport = make_wire(high_water=100)
    big = b"\x00" + b"b" * 999
    data = packet(big, 1)
    deliver(wire, data[:500])
    assert transport.paused
    task = asyncio.create_task(wire.read_batch())
    await until(lambda: wire.waiting)
    assert not transport.paused  # the reader needs the rest of the packet, so it reads on
    deliver(wire, data[500:])
    assert await task == ([big[1:]], None)


async def test_send_writes_and_waits_while_the_transport_is_full() -> None:
    wire, transport = make_wire()
    await wire.send(b"\x01\x00\x00\x00\x0e")
    assert bytes(transport.written) == b"\x01\x00\x00\x00\x0e"
    wire.pause_writing()
    task = asyncio.create_task(wire.send(b"more"))
    await until(lambda: bytes(transport.written).endswith(b"more"))
    assert not task.done()
    wire.resume_writing()
    await task


async def test_send_on_a_closed_connection_raises_connection_lost() -> None:
    wire, transport = make_wire()
    wire.close()
    assert transport.closed
    with pytest.raises(ConnectionLost):
        await wire.send(b"x")
    assert bytes(transport.written) == b""


async def test_close_wakes_a_waiting_reader() -> None:
    wire, transport = make_wire()
    task = asyncio.create_task(wire.read_batch())
    await until(lambda: wire.waiting)
    wire.close()
    with pytest.raises(ConnectionLost):
        await task
    assert transport.closed
