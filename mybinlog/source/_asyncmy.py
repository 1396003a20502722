"""The only module that touches asyncmy's private internals.

asyncmy gives us the connection phase (handshake, caching_sha2_password / native auth, TLS) and text queries.
A binlog dump needs two things its public API does not offer: writing an arbitrary command packet, and reading
a stream of raw packets fast. Both are done here against the internals of asyncmy >= 0.2.18, where
``Connection._proto`` is an ``asyncio.BufferedProtocol`` that receives bytes straight into a ``bytearray``
(``buffer``; ``pos`` is the first unconsumed byte, ``length`` the end of the valid bytes, ``eof``/``exc``
report a closed or failed connection, ``wait_for_data(n)`` suspends until ``n`` unconsumed bytes are
buffered).

Used internals (checked by :func:`check_asyncmy_compat`, which ``tests/unit/test_asyncmy_compat.py`` calls so
that an asyncmy upgrade that changes them fails loudly):

- ``Connection._write_bytes(data)``: write raw bytes to the transport.
- ``Connection._next_seq_id``: the packet sequence number asyncmy expects next.
- ``Connection._proto``: the protocol object with ``buffer``, ``pos``, ``length``, ``eof``, ``exc``,
  ``wait_for_data(need)``, ``drain()``, ``buffer_updated(nbytes)``.
- ``Connection._transport``: the asyncio transport (for ``pause_reading``/``resume_reading``).

Reading: the packet reader parses packet headers directly out of the protocol's buffer, so a burst of small
events costs one slice per event and no await (no per-packet objects, no futures). It also adds flow control,
which asyncmy lacks: when more than ``high_water`` unconsumed bytes are buffered the transport stops reading
from the socket, and resumes once the consumer has drained below ``high_water // 4``. That keeps the kernel's
TCP window, not Python memory, as the buffer when a consumer is slow.
"""

from __future__ import annotations

import asyncio
import inspect
import struct
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from ..errors import ConfigurationError

__all__ = [
    "ASYNCMY_VERSION",
    "MAX_PACKET_PAYLOAD",
    "ConnectionLost",
    "PacketReader",
    "ProtocolDesync",
    "check_asyncmy_compat",
    "close_transport",
    "read_packet",
    "send_command",
]


try:
    ASYNCMY_VERSION: str = version("asyncmy")
except PackageNotFoundError:  # pragma: no cover - asyncmy imported from a source tree
    ASYNCMY_VERSION = "unknown"

MAX_PACKET_PAYLOAD = 0xFFFFFF
"""A wire packet carries at most 16 MiB - 1 bytes; longer payloads continue in the next packet(s)."""

_DEFAULT_HIGH_WATER = 8 * 1024 * 1024
_HEADER = struct.Struct("<I")  # 3-byte payload length + 1-byte sequence id

_CONNECTION_ATTRS = ("_write_bytes", "_next_seq_id", "_proto", "_transport")
_PROTOCOL_ATTRS = ("buffer", "pos", "length", "eof", "exc")
_PROTOCOL_COROUTINES = {"wait_for_data": ("self", "need"), "drain": ("self",)}
_checked = False


class ConnectionLost(Exception):
    """The server closed the connection or the socket failed (translated to SourceConnectionError)."""


class ProtocolDesync(Exception):
    """A packet arrived with an unexpected sequence number: the stream cannot be trusted any more."""


def _incompatible(detail: str) -> ConfigurationError:
    return ConfigurationError(
        f"asyncmy {ASYNCMY_VERSION} is not compatible with this mybinlog: {detail}. mybinlog's binlog reader "
        "relies on asyncmy internals (see mybinlog/source/_asyncmy.py); install asyncmy 0.2.18, the version "
        "it was tested with (pip install 'asyncmy==0.2.18'), or upgrade mybinlog"
    )


def check_asyncmy_compat() -> None:
    """Verify that the asyncmy internals this module uses exist with the expected shape.

    Raises :class:`ConfigurationError` naming the installed asyncmy version otherwise. Cheap after the first
    successful call.
    """
    global _checked
    if _checked:
        return
    try:
        from asyncmy import connection as connection_module
    except ImportError as exc:  # pragma: no cover - asyncmy is a hard dependency
        raise _incompatible(f"asyncmy.connection cannot be imported ({exc})") from exc
    conn_cls = getattr(connection_module, "Connection", None)
    proto_cls = getattr(connection_module, "_MySQLProtocol", None)
    if conn_cls is None or proto_cls is None:
        raise _incompatible("asyncmy.connection has no Connection or _MySQLProtocol class")
    for attr in _CONNECTION_ATTRS:
        if not hasattr(conn_cls, attr):
            raise _incompatible(f"Connection.{attr} is missing")
    _expect_signature(conn_cls._write_bytes, ("self", "data"), "Connection._write_bytes")
    if not issubclass(proto_cls, asyncio.BufferedProtocol):
        raise _incompatible("_MySQLProtocol is not an asyncio.BufferedProtocol")
    for attr in _PROTOCOL_ATTRS:
        if not hasattr(proto_cls, attr):
            raise _incompatible(f"_MySQLProtocol.{attr} is missing")
    for name, params in _PROTOCOL_COROUTINES.items():
        func = getattr(proto_cls, name, None)
        if func is None or not inspect.iscoroutinefunction(func):
            raise _incompatible(f"_MySQLProtocol.{name} is missing or not a coroutine function")
        _expect_signature(func, params, f"_MySQLProtocol.{name}")
    _expect_signature(proto_cls.buffer_updated, ("self", "nbytes"), "_MySQLProtocol.buffer_updated")
    _checked = True


def _expect_signature(func: Any, params: tuple[str, ...], name: str) -> None:
    try:
        found = tuple(inspect.signature(func).parameters)
    except (TypeError, ValueError) as exc:
        raise _incompatible(f"the signature of {name} cannot be inspected ({exc})") from exc
    if found != params:
        raise _incompatible(f"{name} takes ({', '.join(found)}), expected ({', '.join(params)})")


# -- writing ----------------------------------------------------------------------------------------------


async def send_command(conn: Any, payload: bytes) -> None:
    """Send one command (``payload`` = command byte + arguments) as a new exchange, sequence ids from 0.

    Payloads of 16 MiB or more are split over several wire packets; an exact multiple of the maximum is
    followed by an empty packet, as the protocol requires.
    """
    seq = 0
    view = memoryview(payload)
    offset = 0
    while True:
        chunk = view[offset : offset + MAX_PACKET_PAYLOAD]
        size = len(chunk)
        conn._write_bytes(bytes((size & 0xFF, (size >> 8) & 0xFF, size >> 16, seq)) + chunk)
        seq = (seq + 1) & 0xFF
        offset += size
        if size < MAX_PACKET_PAYLOAD:
            break
    conn._next_seq_id = seq
    proto = conn._proto
    if proto is not None:
        await proto.drain()


def close_transport(conn: Any) -> None:
    """Close the socket at once, without COM_QUIT (a connection in a binlog dump cannot take commands)."""
    transport = conn._transport
    if transport is not None:
        transport.close()
    conn.close()


# -- reading ----------------------------------------------------------------------------------------------


class PacketReader:
    """Reads whole packet payloads (multi-packet payloads reassembled) from an asyncmy connection.

    Create it when the connection starts streaming (after :func:`send_command`); it takes over sequence-id
    tracking from asyncmy. ``high_water`` bounds the bytes buffered in Python (0 disables flow control).
    ``idle_timeout`` (seconds, ``None`` for no limit) is how long :meth:`read` waits for bytes before it
    declares the connection dead.

    :meth:`read` is cancellation-safe: a read cancelled while waiting loses nothing, the next read continues.
    """

    __slots__ = (
        "_conn",
        "_high",
        "_idle_timeout",
        "_low",
        "_parts",
        "_paused",
        "_proto",
        "_seq",
        "_transport",
    )

    def __init__(self, conn: Any, *, high_water: int = _DEFAULT_HIGH_WATER, idle_timeout: float | None = None) -> None:
        proto = conn._proto
        if proto is None:
            raise ConnectionLost("the connection is not open")
        self._conn = conn
        self._proto = proto
        self._transport = conn._transport
        self._seq: int = conn._next_seq_id
        self._high = high_water
        self._low = high_water // 4
        self._paused = False
        self._parts: list[bytes] = []
        self._idle_timeout = idle_timeout
        if high_water > 0:
            self._install_flow_control()

    def _install_flow_control(self) -> None:
        proto = self._proto
        original = proto.buffer_updated
        high = self._high

        def buffer_updated(nbytes: int) -> None:
            original(nbytes)
            if not self._paused and proto.length - proto.pos > high:
                transport = self._transport
                if transport is not None and not transport.is_closing():
                    transport.pause_reading()
                    self._paused = True

        # An instance attribute shadows the method. asyncio's socket transports look up protocol.buffer_updated
        # on every read; its TLS transport binds it once, in set_protocol(), so hand the protocol over again.
        proto.buffer_updated = buffer_updated
        transport = self._transport
        if transport is not None and not transport.is_closing():
            transport.set_protocol(proto)

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as packets."""
        proto = self._proto
        return int(proto.length - proto.pos)

    @property
    def paused(self) -> bool:
        """Whether socket reads are paused because ``high_water`` bytes are buffered."""
        return self._paused

    @property
    def next_seq(self) -> int:
        """The sequence number expected for the next packet."""
        return self._seq

    async def read(self) -> bytes:
        """Return the next packet's full payload.

        Raises :class:`ConnectionLost` when the connection closes, fails or stays silent for ``idle_timeout``;
        :class:`ProtocolDesync` on a wrong sequence number (except an error packet with sequence 0, which
        MariaDB sends on shutdown: that payload is returned so the caller can report the server's error).
        """
        proto = self._proto
        # Fast path: a whole packet (< 16 MiB) is buffered.
        pos = proto.pos
        avail = proto.length - pos
        if avail >= 4 and not self._parts:
            buf = proto.buffer
            size = buf[pos] | (buf[pos + 1] << 8) | (buf[pos + 2] << 16)
            if size < MAX_PACKET_PAYLOAD and avail >= size + 4:
                seq = buf[pos + 3]
                end = pos + 4 + size
                payload = bytes(memoryview(buf)[pos + 4 : end])
                proto.pos = end
                if seq != self._seq:
                    self._check_seq(seq, payload)
                self._seq = (seq + 1) & 0xFF
                if self._paused and avail - size - 4 < self._low:
                    self._resume()
                return payload
        return await self._read_slow()

    async def read_ok_batch(self, max_bytes: int = 256 * 1024) -> tuple[list[bytes], bytes | None]:
        """Every complete packet already buffered (at least one; waits if none), up to about ``max_bytes``
        (more when the first packet alone is larger), for a stream of OK-marked packets (a binlog dump: ``0x00``
        + event). Much cheaper per packet than :meth:`read`.

        Returns ``(payloads without their leading 0x00, stop)``: ``stop`` is the first packet that does not
        start with 0x00 (EOF, error), complete and unstripped, which ends the batch; ``None`` if there was none.
        The payloads are cut from one copy of the buffer, so each costs one slice. Same errors as :meth:`read`;
        a packet with a wrong sequence number ends the batch early and raises on the next call.
        """
        proto = self._proto
        pos = proto.pos
        length = proto.length
        if self._parts or length - pos < 4:
            return _classify(await self._read_slow())
        buf = proto.buffer
        header = _HEADER.unpack_from(buf, pos)[0]
        if (header & 0xFFFFFF) >= MAX_PACKET_PAYLOAD or length - pos < (header & 0xFFFFFF) + 4:
            return _classify(await self._read_slow())
        with memoryview(buf) as view:
            chunk = bytes(view[pos : min(length, pos + max(max_bytes, (header & 0xFFFFFF) + 4))])
        base = pos
        n = len(chunk)
        out: list[bytes] = []
        append = out.append
        seq = self._seq
        unpack_from = _HEADER.unpack_from
        offset = 0
        stop: bytes | None = None
        while True:
            size = header & 0xFFFFFF
            start = offset + 4
            if header >> 24 != seq:
                if out:
                    break
                self._check_seq(header >> 24, chunk[start : start + size])
            offset = start + size
            seq = ((header >> 24) + 1) & 0xFF
            if size and not chunk[start]:
                append(chunk[start + 1 : offset])
            else:
                stop = chunk[start:offset]
                break
            if n - offset < 4:
                break
            header = unpack_from(chunk, offset)[0]
            if (header & 0xFFFFFF) >= MAX_PACKET_PAYLOAD or n - offset < (header & 0xFFFFFF) + 4:
                break
        pos = base + offset
        proto.pos = pos
        self._seq = seq
        if self._paused and length - pos < self._low:
            self._resume()
        return out, stop

    async def _read_slow(self) -> bytes:
        proto = self._proto
        parts = self._parts
        while True:
            await self._need(4)
            pos = proto.pos
            buf = proto.buffer
            size = buf[pos] | (buf[pos + 1] << 8) | (buf[pos + 2] << 16)
            seq = buf[pos + 3]
            await self._need(4 + size)
            pos = proto.pos  # the buffer may have been compacted or replaced while waiting
            buf = proto.buffer
            payload = bytes(memoryview(buf)[pos + 4 : pos + 4 + size])
            proto.pos = pos + 4 + size
            if seq != self._seq:
                self._check_seq(seq, payload)
            self._seq = (seq + 1) & 0xFF
            if size < MAX_PACKET_PAYLOAD:
                if self._paused and proto.length - proto.pos < self._low:
                    self._resume()
                if parts:
                    parts.append(payload)
                    self._parts = []
                    return b"".join(parts)
                return payload
            # kept on self, so a read cancelled while waiting for the next part loses nothing
            parts.append(payload)

    async def _need(self, need: int) -> None:
        proto = self._proto
        while proto.length - proto.pos < need:
            if proto.exc is not None:
                raise ConnectionLost(f"the connection failed ({proto.exc})")
            if proto.eof:
                raise ConnectionLost("the server closed the connection")
            if self._paused:
                # The consumer wants more than is buffered (a packet larger than high_water): read on.
                self._resume()
            if self._idle_timeout is None:
                await proto.wait_for_data(need)
                continue
            try:
                async with asyncio.timeout(self._idle_timeout):
                    await proto.wait_for_data(need)
            except TimeoutError:
                raise ConnectionLost(
                    f"no data from the server for {self._idle_timeout:g} s (heartbeats stopped too)"
                ) from None

    def _resume(self) -> None:
        self._paused = False
        transport = self._transport
        if transport is not None and not transport.is_closing():
            transport.resume_reading()

    def _check_seq(self, seq: int, payload: bytes) -> None:
        if seq == 0 and payload[:1] == b"\xff":
            return
        raise ProtocolDesync(f"packet sequence number {seq} where {self._seq} was expected")


def _classify(payload: bytes) -> tuple[list[bytes], bytes | None]:
    if payload and not payload[0]:
        return [payload[1:]], None
    return [], payload


async def read_packet(conn: Any) -> bytes:
    """Read one packet payload outside a stream (sequence ids kept in sync with asyncmy)."""
    reader = PacketReader(conn, high_water=0)
    payload = await reader.read()
    conn._next_seq_id = reader.next_seq
    return payload
