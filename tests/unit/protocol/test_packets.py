"""The sans-IO MySQL packet framer, driven with scripted bytes: headers, sequence ids, 16 MiB continuations,
binlog-stream classification (event, EOF, ERR), truncation, the receive buffer and its flow-control marks."""

from __future__ import annotations

import pytest

from mybinlog import PacketSequenceError
from mybinlog.errors import DecodeError, TruncatedError
from mybinlog.protocol._packets import (
    MAX_PACKET_PAYLOAD,
    EofPacket,
    ErrorPacket,
    PacketFramer,
    StopPacket,
    UnexpectedPacket,
    classify_stop,
    encode_packets,
    parse_error_packet,
)

MAX = MAX_PACKET_PAYLOAD
EOF = b"\xfe\x00\x00\x02\x00"
ERR_PURGED = b"\xff\xd4\x04#HY000Could not find first log file name in binary log index file"


def packet(payload: bytes, seq: int) -> bytes:
    n = len(payload)
    return bytes((n & 0xFF, (n >> 8) & 0xFF, n >> 16, seq & 0xFF)) + payload


def wire(payload: bytes, first_seq: int = 1) -> bytes:
    """A payload as the server sends it: packets of 16 MiB - 1, then a shorter one (empty after an exact
    multiple)."""
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


def stream(events: list[bytes], end: bytes | None = EOF, first_seq: int = 1) -> bytes:
    """A binlog stream: each event behind an OK byte, then ``end`` (EOF by default)."""
    data = b"".join(packet(b"\x00" + e, seq) for seq, e in enumerate(events, start=first_seq))
    if end is not None:
        data += packet(end, first_seq + len(events))
    return data


def drain_packets(framer: PacketFramer) -> list[bytes]:
    out = []
    while (payload := framer.next_packet()) is not None:
        out.append(payload)
    return out


def drain_batches(framer: PacketFramer, max_bytes: int = 256 * 1024) -> tuple[list[bytes], list[StopPacket]]:
    events: list[bytes] = []
    stops: list[StopPacket] = []
    while (batch := framer.next_batch(max_bytes)) is not None:
        got, stop = batch
        assert got or stop is not None, "a batch holds an event or a stop packet"
        events += got
        if stop is not None:
            stops.append(stop)
    return events, stops


EVENTS = [bytes([i]) * (19 + i) for i in range(6)] + [b"", b"\x00" * 300]


# -- single packets and the every-boundary split ----------------------------------------------------------------


def test_one_packet() -> None:
    framer = PacketFramer(next_seq=1)
    framer.feed(packet(b"hello", 1))
    assert framer.next_packet() == b"hello"
    assert framer.next_packet() is None
    assert framer.next_seq == 2
    assert framer.buffered == 0
    assert not framer.partial
    framer.end_of_input()  # ended on a packet boundary: fine


def test_many_packets_from_one_chunk() -> None:
    payloads = [b"\x00" + bytes([i]) * i for i in range(1, 50)]
    framer = PacketFramer(next_seq=1)
    framer.feed(b"".join(packet(p, seq) for seq, p in enumerate(payloads, start=1)))
    assert drain_packets(framer) == payloads
    assert framer.buffered == 0
    assert framer.next_seq == 50


def test_batches_from_one_chunk_strip_the_ok_byte_and_stop_at_eof() -> None:
    framer = PacketFramer(next_seq=1)
    framer.feed(stream(EVENTS) + packet(b"\x00late", len(EVENTS) + 2))
    batch = framer.next_batch()
    assert batch == (EVENTS, EofPacket(EOF))
    # the batch ended at the EOF packet: what follows is still buffered
    assert framer.next_batch() == ([b"late"], None)
    assert framer.next_batch() is None


@pytest.mark.parametrize("api", ["packets", "batches"])
def test_split_at_every_byte_boundary(api: str) -> None:
    data = stream(EVENTS)
    expected_packets = [b"\x00" + e for e in EVENTS] + [EOF]
    for cut in range(len(data) + 1):
        framer = PacketFramer(next_seq=1)
        framer.feed(data[:cut])
        if api == "packets":
            got = drain_packets(framer)
            framer.feed(data[cut:])
            got += drain_packets(framer)
            assert got == expected_packets, f"cut at byte {cut}"
        else:
            events, stops = drain_batches(framer)
            framer.feed(data[cut:])
            more, more_stops = drain_batches(framer)
            assert (events + more, stops + more_stops) == (EVENTS, [EofPacket(EOF)]), f"cut at byte {cut}"
        assert framer.buffered == 0
        assert framer.next_seq == len(EVENTS) + 2


@pytest.mark.parametrize("api", ["packets", "batches"])
def test_split_at_every_pair_of_boundaries(api: str) -> None:
    data = stream(EVENTS[:3], end=ERR_PURGED)
    for first in range(len(data) + 1):
        for second in range(first, len(data) + 1):
            framer = PacketFramer(next_seq=1)
            got: list[object] = []
            for piece in (data[:first], data[first:second], data[second:]):
                framer.feed(piece)
                if api == "packets":
                    got += drain_packets(framer)
                else:
                    events, stops = drain_batches(framer)
                    got += events + stops
            if api == "packets":
                assert got == [b"\x00" + e for e in EVENTS[:3]] + [ERR_PURGED]
            else:
                assert got == [*EVENTS[:3], ErrorPacket(1236, "HY000", ERR_PURGED[9:].decode())]


def test_byte_by_byte() -> None:
    data = stream(EVENTS)
    framer = PacketFramer(next_seq=1)
    events: list[bytes] = []
    stops: list[StopPacket] = []
    for i in range(len(data)):
        framer.feed(data[i : i + 1])
        more, more_stops = drain_batches(framer)
        events += more
        stops += more_stops
    assert events == EVENTS
    assert stops == [EofPacket(EOF)]


def test_batch_respects_max_bytes_but_returns_a_large_first_packet() -> None:
    framer = PacketFramer(next_seq=1)
    framer.feed(packet(b"\x00" + b"a" * 5000, 1) + packet(b"\x00b", 2) + packet(b"\x00c", 3))
    assert framer.next_batch(max_bytes=100) == ([b"a" * 5000], None)
    assert framer.next_batch(max_bytes=100) == ([b"b", b"c"], None)


def test_batch_of_an_error_packet_alone() -> None:
    framer = PacketFramer(next_seq=1)
    framer.feed(packet(ERR_PURGED, 1))
    assert framer.next_batch() == (
        [],
        ErrorPacket(1236, "HY000", "Could not find first log file name in binary log index file"),
    )


# -- 16 MiB continuations -----------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [MAX - 1, MAX, MAX + 1, 2 * MAX, 2 * MAX + 7])
@pytest.mark.parametrize("api", ["packets", "batches"])
def test_continuation_packets_are_joined(size: int, api: str) -> None:
    payload = b"\x00" + bytes(range(256)) * ((size - 1) // 256) + b"e" * ((size - 1) % 256)
    assert len(payload) == size
    data = wire(payload)
    n_packets = size // MAX + 1
    data += packet(b"\x00next", n_packets + 1)
    framer = PacketFramer(next_seq=1)
    framer.feed(data)
    if api == "packets":
        assert framer.next_packet() == payload
        assert framer.next_packet() == b"\x00next"
    else:
        assert framer.next_batch() == ([payload[1:]], None)
        assert framer.next_batch() == ([b"next"], None)
    assert framer.next_seq == (n_packets + 2) & 0xFF


def test_payload_of_exactly_max_is_followed_by_an_empty_packet() -> None:
    payload = b"\x00" + b"x" * (MAX - 1)
    data = packet(payload, 1) + packet(b"", 2)
    assert data == wire(payload)
    framer = PacketFramer(next_seq=1)
    framer.feed(data[: MAX + 4])  # the full first packet: not a payload yet
    assert framer.next_batch() is None
    assert framer.partial
    framer.feed(data[MAX + 4 :])  # the empty packet ends it
    assert framer.next_batch() == ([payload[1:]], None)
    assert not framer.partial
    assert framer.next_seq == 3


def test_continuation_split_around_every_packet_boundary() -> None:
    payload = b"\x00" + b"y" * (MAX + 2)
    data = wire(payload) + packet(EOF, 3)
    boundaries = [0, MAX + 4, MAX + 4 + 7, len(data)]  # both headers, the end of the payload, the EOF
    cuts = sorted({c + d for c in boundaries for d in range(-5, 6) if 0 <= c + d <= len(data)})
    for cut in cuts:
        framer = PacketFramer(next_seq=1)
        framer.feed(data[:cut])
        events, stops = drain_batches(framer)
        framer.feed(data[cut:])
        more, more_stops = drain_batches(framer)
        assert events + more == [payload[1:]], f"cut at byte {cut}"
        assert stops + more_stops == [EofPacket(EOF)]


def test_continuation_interrupted_by_a_sequence_gap() -> None:
    framer = PacketFramer(next_seq=1)
    framer.feed(packet(b"\x00" + b"z" * (MAX - 1), 1) + packet(b"tail", 3))
    with pytest.raises(PacketSequenceError, match="sequence number 3 where 2"):
        framer.next_packet()


def test_an_error_with_sequence_zero_inside_a_continuation_is_a_desync() -> None:
    framer = PacketFramer(next_seq=1)
    framer.feed(packet(b"\x00" + b"z" * (MAX - 1), 1) + packet(ERR_PURGED, 0))
    with pytest.raises(PacketSequenceError):
        framer.next_batch()


# -- sequence ids -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("api", ["packets", "batches"])
def test_sequence_ids_wrap_at_255(api: str) -> None:
    framer = PacketFramer(next_seq=1)
    framer.feed(b"".join(packet(b"\x00" + bytes([i & 0xFF]), (i + 1) & 0xFF) for i in range(600)))
    if api == "packets":
        assert drain_packets(framer) == [b"\x00" + bytes([i & 0xFF]) for i in range(600)]
    else:
        assert drain_batches(framer) == ([bytes([i & 0xFF]) for i in range(600)], [])
    assert framer.next_seq == 601 & 0xFF


def test_sequence_wraps_from_255_to_0_inside_a_continuation() -> None:
    payload = b"\x00" + b"w" * MAX  # two packets: ids 255 and 0
    framer = PacketFramer(next_seq=255)
    framer.feed(wire(payload, first_seq=255) + packet(b"\x00after", 1))
    assert framer.next_batch() == ([payload[1:]], None)
    assert framer.next_batch() == ([b"after"], None)


def test_sequence_gap_is_a_desync() -> None:
    framer = PacketFramer(next_seq=1)
    framer.feed(packet(b"\x00ok", 1) + packet(b"\x00bad", 5))
    assert framer.next_packet() == b"\x00ok"
    with pytest.raises(PacketSequenceError, match="sequence number 5 where 2") as info:
        framer.next_packet()
    assert isinstance(info.value, DecodeError)
    # nothing is consumed: the stream stays broken
    with pytest.raises(PacketSequenceError):
        framer.next_packet()


def test_batch_keeps_the_packets_before_a_sequence_gap() -> None:
    framer = PacketFramer(next_seq=1)
    framer.feed(packet(b"\x00one", 1) + packet(b"\x00two", 2) + packet(b"\x00bad", 9))
    assert framer.next_batch() == ([b"one", b"two"], None)
    with pytest.raises(PacketSequenceError, match="sequence number 9 where 3"):
        framer.next_batch()


def test_repeated_sequence_id_is_a_desync() -> None:
    framer = PacketFramer(next_seq=1)
    framer.feed(packet(b"\x00a", 1) + packet(b"\x00a", 1))
    assert framer.next_batch() == ([b"a"], None)
    with pytest.raises(PacketSequenceError, match="sequence number 1 where 2"):
        framer.next_batch()


def test_error_packet_with_sequence_zero_is_accepted() -> None:
    # MariaDB sends its shutdown (or KILL) error with sequence id 0 in the middle of a stream.
    error = b"\xff\x87\x07#70100Connection was killed"
    framer = PacketFramer(next_seq=1)
    framer.feed(packet(b"\x00ev", 1) + packet(error, 0))
    assert framer.next_batch() == ([b"ev"], None)
    assert framer.next_batch() == ([], ErrorPacket(1927, "70100", "Connection was killed"))
    assert framer.next_seq == 1


def test_other_packet_with_sequence_zero_is_a_desync() -> None:
    framer = PacketFramer(next_seq=1)
    framer.feed(packet(b"\x00ev", 0))
    with pytest.raises(PacketSequenceError, match="sequence number 0 where 1"):
        framer.next_batch()


# -- classification -----------------------------------------------------------------------------------------


def test_eof_packet() -> None:
    assert classify_stop(EOF) == EofPacket(EOF)
    framer = PacketFramer(next_seq=1)
    framer.feed(packet(EOF, 1))
    assert framer.next_batch() == ([], EofPacket(EOF))


def test_error_packet_with_sqlstate() -> None:
    assert parse_error_packet(b"\xff\xd4\x04#HY000Could not find first log") == (
        1236,
        "HY000",
        "Could not find first log",
    )
    assert classify_stop(b"\xff\xd4\x04#HY000Could not find first log") == ErrorPacket(
        1236, "HY000", "Could not find first log"
    )


def test_error_packet_without_sqlstate() -> None:
    assert parse_error_packet(b"\xff\x15\x04no state") == (1045, None, "no state")
    assert classify_stop(b"\xff\x15\x04no state") == ErrorPacket(1045, None, "no state")


def test_malformed_error_packet() -> None:
    assert parse_error_packet(b"\xff\x15") == (0, None, "malformed error packet")
    assert classify_stop(b"\xff") == ErrorPacket(0, None, "malformed error packet")


@pytest.mark.parametrize("payload", [b"", b"\x01something", b"\xfb"])
def test_unexpected_packets(payload: bytes) -> None:
    assert classify_stop(payload) == UnexpectedPacket(payload)
    framer = PacketFramer(next_seq=1)
    framer.feed(packet(b"\x00ev", 1) + packet(payload, 2))
    assert framer.next_batch() == ([b"ev"], UnexpectedPacket(payload))


# -- truncation ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("tail", [1, 2, 3])
def test_truncated_header_at_the_end(tail: int) -> None:
    framer = PacketFramer(next_seq=1)
    framer.feed(packet(b"\x00ev", 1) + packet(b"\x00next", 2)[:tail])
    assert framer.next_batch() == ([b"ev"], None)
    assert framer.next_batch() is None
    assert framer.next_packet() is None
    assert framer.partial
    with pytest.raises(TruncatedError, match=rf"inside a packet header \({tail} of 4 bytes\)"):
        framer.end_of_input()


def test_truncated_payload_at_the_end() -> None:
    framer = PacketFramer(next_seq=1)
    framer.feed(packet(b"\x00" + b"p" * 99, 1)[:50])
    assert framer.next_batch() is None
    with pytest.raises(TruncatedError, match=r"inside a packet \(50 of 104 bytes\)"):
        framer.end_of_input()


def test_missing_last_packet_of_a_continuation() -> None:
    framer = PacketFramer(next_seq=1)
    framer.feed(packet(b"\x00" + b"q" * (MAX - 1), 1))
    assert framer.next_batch() is None
    assert framer.buffered == 0
    assert framer.partial
    with pytest.raises(TruncatedError, match="last packet is missing"):
        framer.end_of_input()


# -- the receive buffer and flow-control marks ----------------------------------------------------------------


def test_full_and_drained_marks() -> None:
    framer = PacketFramer(next_seq=1, high_water=1000)
    payloads = [b"\x00" + bytes([i]) * 99 for i in range(30)]  # 30 * 104 bytes on the wire
    framer.feed(b"".join(packet(p, seq) for seq, p in enumerate(payloads, start=1))[:1000])
    assert not framer.full  # exactly high_water is not over it
    framer.feed(b"".join(packet(p, seq) for seq, p in enumerate(payloads, start=1))[1000:])
    assert framer.full
    assert not framer.drained
    got = []
    while not framer.drained:
        got.append(framer.next_packet())
    assert framer.buffered < 250
    assert not framer.full
    got += drain_packets(framer)
    assert got == payloads


def test_no_limit() -> None:
    framer = PacketFramer(high_water=0)
    framer.feed(b"\x00" * 100_000)
    assert not framer.full
    with pytest.raises(ValueError, match="high_water"):
        PacketFramer(high_water=-1)


def test_get_buffer_never_resizes_a_buffer_that_is_being_written() -> None:
    framer = PacketFramer(next_seq=1)
    first = framer.get_buffer(-1)
    data = packet(b"\x00" + b"r" * 500_000, 1)  # larger than the initial buffer
    first[:100] = data[:100]
    framer.buffer_updated(100)
    # a second view while the first is still held (as asyncio's proactor loop does): the buffer is replaced,
    # not resized (that would raise BufferError)
    second = framer.get_buffer(len(data))
    assert len(second) >= len(data) - 100
    second[: len(data) - 100] = data[100:]
    framer.buffer_updated(len(data) - 100)
    first.release()
    second.release()
    assert framer.next_batch() == ([b"r" * 500_000], None)


def test_get_buffer_compacts_and_gives_memory_back() -> None:
    framer = PacketFramer(next_seq=1)
    framer.feed(packet(b"\x00" + b"h" * 3_000_000, 1))  # grows the buffer far beyond its initial size
    assert framer.next_batch() == ([b"h" * 3_000_000], None)
    view = framer.get_buffer(-1)
    assert len(view) == 256 * 1024  # everything consumed: back to the initial size
    view.release()
    # consumed bytes at the front are reclaimed by moving the rest forward
    data = b"".join(packet(b"\x00" + bytes([i % 256]) * 1000, i + 2) for i in range(250))
    framer.feed(data)
    for i in range(200):
        assert framer.next_packet() == b"\x00" + bytes([i % 256]) * 1000
    view = framer.get_buffer(200_000)
    assert len(view) >= 200_000
    view.release()
    assert drain_packets(framer) == [b"\x00" + bytes([i % 256]) * 1000 for i in range(200, 250)]


# -- writing ------------------------------------------------------------------------------------------------


def test_encode_small_command() -> None:
    assert encode_packets(b"\x12payload") == b"\x08\x00\x00\x00\x12payload"
    assert encode_packets(b"", seq=3) == b"\x00\x00\x00\x03"


@pytest.mark.parametrize(("size", "sizes"), [(MAX - 1, [MAX - 1]), (MAX, [MAX, 0]), (MAX + 5, [MAX, 5])])
def test_encode_splits_16mib_payloads(size: int, sizes: list[int]) -> None:
    payload = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    written = encode_packets(payload)
    pos = 0
    body = bytearray()
    for seq, expected in enumerate(sizes):
        assert int.from_bytes(written[pos : pos + 3], "little") == expected
        assert written[pos + 3] == seq
        body += written[pos + 4 : pos + 4 + expected]
        pos += 4 + expected
    assert pos == len(written)
    assert bytes(body) == payload
    # and the framer reads it back
    framer = PacketFramer(next_seq=0)
    framer.feed(written)
    assert framer.next_packet() == payload
    assert framer.next_seq == len(sizes)
