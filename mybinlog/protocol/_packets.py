"""MySQL packet framing, sans-IO: bytes in, packets out (no sockets, no asyncio).

On the wire every packet is a 4-byte header, the payload length (3 bytes, little-endian) and a sequence id
(1 byte), followed by the payload. The sequence id counts the packets of one exchange modulo 256 (255 is followed
by 0): a packet with any other id means bytes were lost or the stream is out of step, and nothing after it can be
trusted. A payload of 16 MiB - 1 bytes (``0xFFFFFF``) or more is sent as packets of exactly ``0xFFFFFF`` bytes
followed by one shorter packet, an empty one if the size is an exact multiple; the framer joins them.

A binlog dump answers with a stream of packets that each hold one event behind an OK byte (``0x00``), ended by
an EOF packet (``0xFE``, the end of a non-blocking dump) or an ERR packet (``0xFF``, errno, ``#`` + SQLSTATE,
message). :meth:`PacketFramer.next_batch` cuts the events out in bulk and returns the packet that ended them
classified (:class:`EofPacket`, :class:`ErrorPacket` or :class:`UnexpectedPacket`).

The framer owns its receive buffer. Bytes are given to it with :meth:`PacketFramer.feed`, or without a copy the
way :class:`asyncio.BufferedProtocol` does (:meth:`~PacketFramer.get_buffer` then
:meth:`~PacketFramer.buffer_updated`), so the caller can receive straight into it. ``high_water`` bounds what the
caller lets pile up: :attr:`~PacketFramer.full` says when to stop reading, :attr:`~PacketFramer.drained` when
to read again (the framer never refuses bytes; backpressure is the caller's job).

A sequence gap raises :class:`PacketSequenceError` (a :class:`~mybinlog.errors.DecodeError`; the connection
turns it into a retriable ``SourceConnectionError``). One exception is allowed: an ERR packet with sequence id 0,
which MariaDB sends in the middle of a stream when it shuts down or kills the connection.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import PacketSequenceError, TruncatedError
from ._accel import speedups

__all__ = [
    "DEFAULT_BATCH_BYTES",
    "DEFAULT_HIGH_WATER",
    "MAX_PACKET_PAYLOAD",
    "EofPacket",
    "ErrorPacket",
    "PacketFramer",
    "StopPacket",
    "UnexpectedPacket",
    "classify_stop",
    "encode_packets",
    "parse_error_packet",
]

MAX_PACKET_PAYLOAD = 0xFFFFFF
"""A wire packet carries at most 16 MiB - 1 bytes; longer payloads continue in the next packet(s)."""

DEFAULT_HIGH_WATER = 8 * 1024 * 1024
"""Received bytes above which the caller should stop reading (resume below a quarter of it)."""

DEFAULT_BATCH_BYTES = 256 * 1024
"""About how many bytes of events :meth:`PacketFramer.next_batch` cuts at once."""

_HEADER = struct.Struct("<I")  # 3-byte payload length + 1-byte sequence id, as one little-endian u32
_INITIAL_BUFFER = 256 * 1024
_MIN_READ = 64 * 1024  # the least free space get_buffer() offers (one socket read fills up to all of it)


@dataclass(frozen=True, slots=True)
class EofPacket:
    """``0xFE``: the server has sent everything (the end of a non-blocking binlog dump)."""

    payload: bytes


@dataclass(frozen=True, slots=True)
class ErrorPacket:
    """``0xFF``: the server reports an error and ends the exchange."""

    errno: int
    sqlstate: str | None
    """The 5-character SQLSTATE (``HY000``) when the server sent one (after ``#``), else ``None``."""
    message: str

    @classmethod
    def parse(cls, payload: bytes) -> ErrorPacket:
        errno, sqlstate, message = parse_error_packet(payload)
        return cls(errno, sqlstate, message)


@dataclass(frozen=True, slots=True)
class UnexpectedPacket:
    """A packet a binlog stream should not contain (neither an event, nor EOF, nor ERR)."""

    payload: bytes


StopPacket = EofPacket | ErrorPacket | UnexpectedPacket
"""The packet that ends a run of events in a binlog stream."""


def parse_error_packet(payload: bytes) -> tuple[int, str | None, str]:
    """Split an ERR packet (``0xff``, errno u16, optional ``#`` + 5-char SQLSTATE, message)."""
    if len(payload) < 3 or payload[0] != 0xFF:
        return 0, None, "malformed error packet"
    errno = payload[1] | (payload[2] << 8)
    if payload[3:4] == b"#":
        return errno, payload[4:9].decode("ascii", "replace"), payload[9:].decode("utf-8", "replace")
    return errno, None, payload[3:].decode("utf-8", "replace")


def classify_stop(payload: bytes) -> StopPacket:
    """What a packet of a binlog stream that does not hold an event is: EOF, ERR or something unexpected."""
    first = payload[:1]
    if first == b"\xfe":
        return EofPacket(payload)
    if first == b"\xff":
        return ErrorPacket.parse(payload)
    return UnexpectedPacket(payload)


def encode_packets(payload: bytes, *, seq: int = 0) -> bytes:
    """``payload`` as wire packets, sequence ids from ``seq`` (a command starts a new exchange: 0).

    Payloads of 16 MiB - 1 bytes or more are split; an exact multiple of the maximum is followed by an empty
    packet, as the protocol requires.
    """
    out = []
    view = memoryview(payload)
    offset = 0
    while True:
        chunk = view[offset : offset + MAX_PACKET_PAYLOAD]
        size = len(chunk)
        out.append(bytes((size & 0xFF, (size >> 8) & 0xFF, size >> 16, seq & 0xFF)))
        out.append(bytes(chunk))
        seq += 1
        offset += size
        if size < MAX_PACKET_PAYLOAD:
            return b"".join(out)


_frame_events = speedups.frame_events if speedups is not None else None


class PacketFramer:
    """Cuts a stream of received bytes into packet payloads, checking sequence ids and joining continuations.

    ``next_seq`` is the sequence id of the first packet expected (after sending a command with id 0: 1).
    ``high_water`` (bytes, 0 = no limit) sets :attr:`full` and :attr:`drained` for the caller's flow control.

    Reading never blocks and never loses anything: :meth:`next_packet` and :meth:`next_batch` return ``None``
    until a whole packet is buffered, and an error leaves the packet that caused it in the buffer.
    """

    __slots__ = ("_buf", "_end", "_high", "_low", "_parts", "_pos", "_seq")

    def __init__(self, *, next_seq: int = 0, high_water: int = DEFAULT_HIGH_WATER) -> None:
        if high_water < 0:
            raise ValueError(f"high_water must be >= 0 (0 = no limit), got {high_water}")
        self._buf = bytearray(_INITIAL_BUFFER)
        self._pos = 0  # first unconsumed byte
        self._end = 0  # end of the received bytes
        self._seq = next_seq & 0xFF
        self._parts: list[bytes] = []  # the 16 MiB packets of a payload still being received
        self._high = high_water
        self._low = high_water // 4

    # ---- state -----------------------------------------------------------------------------------------

    @property
    def next_seq(self) -> int:
        """The sequence id expected for the next packet."""
        return self._seq

    @property
    def buffered(self) -> int:
        """Bytes received and not yet returned as packets (the parts of an unfinished 16 MiB+ payload that were
        already cut out are not counted)."""
        return self._end - self._pos

    @property
    def high_water(self) -> int:
        return self._high

    @property
    def full(self) -> bool:
        """More than ``high_water`` bytes are buffered: the caller should stop reading."""
        return 0 < self._high < self._end - self._pos

    @property
    def drained(self) -> bool:
        """Fewer than ``high_water // 4`` bytes are buffered: a caller that stopped reading may read again."""
        return self._end - self._pos < self._low

    @property
    def partial(self) -> bool:
        """Part of a packet (or of a 16 MiB+ payload) is buffered, but not all of it."""
        return self._end > self._pos or bool(self._parts)

    def end_of_input(self) -> None:
        """Declare that no more bytes will come; raises :class:`TruncatedError` if they end inside a packet."""
        avail = self._end - self._pos
        if 0 < avail < 4:
            raise TruncatedError(f"the input ended inside a packet header ({avail} of 4 bytes)")
        if avail:
            size = _HEADER.unpack_from(self._buf, self._pos)[0] & 0xFFFFFF
            raise TruncatedError(f"the input ended inside a packet ({avail} of {size + 4} bytes)")
        if self._parts:
            raise TruncatedError(
                f"the input ended inside a payload of {len(self._parts)} x 16 MiB packets and more (its last "
                "packet is missing)"
            )

    # ---- receiving -------------------------------------------------------------------------------------

    def get_buffer(self, sizehint: int = -1) -> memoryview:
        """Free space to receive into (``asyncio.BufferedProtocol.get_buffer``): at least ``sizehint`` bytes,
        64 KiB when no size is given. Confirm what was written with :meth:`buffer_updated`.

        The buffer is never resized while a view may be held: it is compacted in place or replaced.
        """
        buf = self._buf
        pos = self._pos
        end = self._end
        live = end - pos
        if not live:
            if end:
                self._pos = self._end = end = 0
            if len(buf) > 4 * _INITIAL_BUFFER:  # a huge packet has passed: give the memory back
                self._buf = buf = bytearray(_INITIAL_BUFFER)
        want = sizehint if sizehint > _MIN_READ else _MIN_READ
        if len(buf) - end < want:
            if live + want <= len(buf):
                buf[0:live] = buf[pos:end]  # same length: no resize
            else:
                grown = bytearray(max(2 * len(buf), live + want))
                grown[0:live] = memoryview(buf)[pos:end]
                self._buf = buf = grown
            self._pos = 0
            self._end = end = live
        return memoryview(buf)[end:]

    def buffer_updated(self, nbytes: int) -> None:
        """``nbytes`` were written at the start of the view :meth:`get_buffer` returned."""
        self._end += nbytes

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Add received bytes (a copy)."""
        view = memoryview(data).cast("B")
        while view:
            target = self.get_buffer(len(view))
            n = min(len(target), len(view))
            target[:n] = view[:n]
            target.release()
            self.buffer_updated(n)
            view = view[n:]

    # ---- packets ---------------------------------------------------------------------------------------

    def next_packet(self) -> bytes | None:
        """The next whole payload (16 MiB continuations joined), or ``None`` until all of it is buffered."""
        buf = self._buf
        while True:
            pos = self._pos
            avail = self._end - pos
            if avail < 4:
                return None
            header = _HEADER.unpack_from(buf, pos)[0]
            size = header & 0xFFFFFF
            if avail < size + 4:
                return None
            end = pos + 4 + size
            with memoryview(buf) as view:
                payload = bytes(view[pos + 4 : end])
            seq = header >> 24
            if seq != self._seq:
                self._check_seq(seq, payload)
            self._pos = end
            self._seq = (seq + 1) & 0xFF
            if size < MAX_PACKET_PAYLOAD:
                if self._parts:
                    self._parts.append(payload)
                    payload = b"".join(self._parts)
                    self._parts = []
                return payload
            self._parts.append(payload)

    def next_batch(self, max_bytes: int = DEFAULT_BATCH_BYTES) -> tuple[list[bytes], StopPacket | None] | None:
        """The events of a binlog stream that are buffered, or ``None`` until a whole packet is.

        Returns ``(events, stop)``: the payloads of the OK-marked packets (``0x00`` + event) without their
        first byte, about ``max_bytes`` of them (more when the first packet alone is larger), and ``stop``, the
        classified packet that is not an event (EOF, ERR, other) when one ended the batch, else ``None``.
        ``events`` is empty only when ``stop`` is not ``None``.

        Each event costs one slice of one copy of the buffer. A packet with a wrong sequence id ends the batch
        early; the next call raises :class:`PacketSequenceError` (the events before it are returned first).
        """
        pos = self._pos
        end = self._end
        if self._parts or end - pos < 4:
            return self._next_batch_slow()
        buf = self._buf
        if _frame_events is not None:  # the compiled core's loop; None: the loop below takes the next packet
            cut = _frame_events(buf, pos, end, max_bytes, self._seq)
            if cut is not None:
                events, self._pos, self._seq, stop_payload = cut
                return events, None if stop_payload is None else classify_stop(stop_payload)
        header = _HEADER.unpack_from(buf, pos)[0]
        if (header & 0xFFFFFF) >= MAX_PACKET_PAYLOAD or end - pos < (header & 0xFFFFFF) + 4:
            return self._next_batch_slow()
        with memoryview(buf) as view:
            chunk = bytes(view[pos : min(end, pos + max(max_bytes, (header & 0xFFFFFF) + 4))])
        n = len(chunk)
        last_header = n - 4  # the last offset a whole header can start at
        out: list[bytes] = []
        append = out.append
        seq = self._seq
        unpack_from = _HEADER.unpack_from
        offset = 0  # the first byte of chunk not yet returned
        stop: StopPacket | None = None
        size = header & 0xFFFFFF
        start = 4
        end = start + size
        while True:  # the hot loop: the packet chunk[offset:end] is whole, its payload starts at start
            if header >> 24 != seq:
                if out:
                    break
                self._check_seq(header >> 24, chunk[start:end])
                seq = header >> 24
            seq = (seq + 1) & 0xFF
            offset = end
            if size and not chunk[start]:
                append(chunk[start + 1 : end])
            else:
                stop = classify_stop(chunk[start:end])
                break
            if end > last_header:
                break
            header = unpack_from(chunk, end)[0]
            size = header & 0xFFFFFF
            start = end + 4
            end = start + size
            if size >= MAX_PACKET_PAYLOAD or end > n:
                break
        self._pos = pos + offset
        self._seq = seq
        return out, stop

    def _next_batch_slow(self) -> tuple[list[bytes], StopPacket | None] | None:
        payload = self.next_packet()
        if payload is None:
            return None
        if payload and not payload[0]:
            return [payload[1:]], None
        return [], classify_stop(payload)

    def _check_seq(self, seq: int, payload: bytes) -> None:
        if seq == 0 and not self._parts and payload[:1] == b"\xff":
            return  # MariaDB's error on shutdown or KILL comes with sequence id 0
        raise PacketSequenceError(f"packet sequence number {seq} where {self._seq} was expected")
