"""The socket of a streaming connection: an asyncio protocol that moves bytes between a transport and the
sans-IO :class:`~mybinlog.protocol._packets.PacketFramer`.

Once a connection starts its binlog dump, :class:`WireProtocol` replaces asyncmy's protocol on the connection's
transport (``transport.set_protocol``, public asyncio API; see :mod:`mybinlog.source._asyncmy`). asyncio then
receives straight into the framer's buffer (``get_buffer``/``buffer_updated``), and this class adds only what
needs an event loop:

- waiting for bytes, with an idle timeout (no byte at all for ``idle_timeout`` seconds: the connection is dead);
- flow control: when the framer holds more than its ``high_water`` the transport stops reading from the socket
  (``pause_reading``), and resumes once the consumer has drained it below a quarter, so the kernel's TCP window,
  not Python memory, buffers a slow consumer. Over TLS asyncio's SSL layer calls ``buffer_updated`` for each
  decrypted read and pauses the socket when its own small buffer fills, so the bound holds there too;
- end of stream and socket errors, raised as :class:`ConnectionLost`.

Reads are cancellation-safe: everything received stays in the framer, so a read cancelled while waiting loses
nothing and the next read continues.
"""

from __future__ import annotations

import asyncio

from ..errors import TruncatedError
from ..protocol import DEFAULT_BATCH_BYTES, PacketFramer, StopPacket

__all__ = ["ConnectionLost", "WireProtocol"]


class ConnectionLost(Exception):
    """The server closed the connection, the socket failed, or nothing arrived for ``idle_timeout`` seconds
    (translated to ``SourceConnectionError`` by the connection)."""


class WireProtocol(asyncio.BufferedProtocol):
    """Owns ``transport`` (already connected; the caller hands it over with ``transport.set_protocol(self)``)
    and reads packets through ``framer``."""

    def __init__(
        self,
        transport: asyncio.Transport,
        framer: PacketFramer,
        *,
        idle_timeout: float | None = None,
    ) -> None:
        self._transport = transport
        self.framer = framer
        self._idle_timeout = idle_timeout
        self._paused = False
        self._eof = False
        self._exc: BaseException | None = None
        self._read_waiter: asyncio.Future[None] | None = None
        self._write_paused = False
        self._drain_waiter: asyncio.Future[None] | None = None
        self._loop = asyncio.get_running_loop()

    # ---- asyncio callbacks -----------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:  # pragma: no cover - set_protocol()
        pass

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.framer.get_buffer(sizehint)

    def buffer_updated(self, nbytes: int) -> None:
        framer = self.framer
        framer.buffer_updated(nbytes)
        if not self._paused and framer.full and not self._transport.is_closing():
            self._transport.pause_reading()
            self._paused = True
        self._wake_reader()

    def eof_received(self) -> bool:
        self._eof = True
        self._wake_reader()
        return False  # let the transport close itself

    def connection_lost(self, exc: Exception | None) -> None:
        self._eof = True
        if exc is not None:
            self._exc = exc.with_traceback(None)  # no frames (and no transport) kept alive through it
        self._wake_reader()
        self._wake_writer()

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        self._wake_writer()

    def _wake_reader(self) -> None:
        waiter = self._read_waiter
        if waiter is not None:
            self._read_waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def _wake_writer(self) -> None:
        waiter = self._drain_waiter
        if waiter is not None:
            self._drain_waiter = None
            if not waiter.done():
                waiter.set_result(None)

    # ---- state -----------------------------------------------------------------------------------------

    @property
    def transport(self) -> asyncio.Transport:
        return self._transport

    @property
    def buffered(self) -> int:
        """Bytes received and not yet returned as packets."""
        return self.framer.buffered

    @property
    def waiting(self) -> bool:
        """Whether a read is waiting for bytes."""
        return self._read_waiter is not None

    @property
    def paused(self) -> bool:
        """Whether socket reads are paused because the framer is over its ``high_water``."""
        return self._paused

    # ---- writing and reading ---------------------------------------------------------------------------

    async def send(self, data: bytes) -> None:
        """Write ``data`` (wire packets) and wait while the transport's write buffer is over its limit."""
        transport = self._transport
        if self._eof or transport.is_closing():
            raise ConnectionLost(self._lost_reason())
        transport.write(data)
        while self._write_paused and not self._eof:
            waiter = self._loop.create_future()
            self._drain_waiter = waiter
            await waiter
        if self._exc is not None:
            raise ConnectionLost(self._lost_reason())

    async def read_packet(self) -> bytes:
        """The next whole payload (16 MiB continuations joined)."""
        framer = self.framer
        while True:
            payload = framer.next_packet()
            if payload is not None:
                self._after_read()
                return payload
            await self._wait()

    async def read_batch(self, max_bytes: int = DEFAULT_BATCH_BYTES) -> tuple[list[bytes], StopPacket | None]:
        """The buffered events of a binlog stream (waits for at least one packet): see
        :meth:`PacketFramer.next_batch`. Raises :class:`ConnectionLost` and
        :class:`~mybinlog.PacketSequenceError`."""
        framer = self.framer
        while True:
            batch = framer.next_batch(max_bytes)
            if batch is not None:
                if self._paused and framer.drained:
                    self._resume()
                return batch
            await self._wait()

    def close(self) -> None:
        """Close the socket at once (a connection in a binlog dump takes no more commands, not even QUIT)."""
        self._transport.close()

    def _after_read(self) -> None:
        if self._paused and self.framer.drained:
            self._resume()

    async def _wait(self) -> None:
        """Wait until more bytes arrive (the next packet is not complete yet)."""
        if self._exc is not None or self._eof:
            raise ConnectionLost(self._lost_reason())
        if self._paused:
            # The consumer wants more than is buffered (a packet larger than high_water): read on.
            self._resume()
        waiter = self._loop.create_future()
        self._read_waiter = waiter
        try:
            if self._idle_timeout is None:
                await waiter
            else:
                async with asyncio.timeout(self._idle_timeout):
                    await waiter
        except TimeoutError:
            raise ConnectionLost(
                f"no data from the server for {self._idle_timeout:g} s (heartbeats stopped too)"
            ) from None
        finally:
            if self._read_waiter is waiter:
                self._read_waiter = None

    def _resume(self) -> None:
        self._paused = False
        if not self._transport.is_closing():
            self._transport.resume_reading()

    def _lost_reason(self) -> str:
        if self._exc is not None:
            return f"the connection failed ({self._exc})"
        try:
            self.framer.end_of_input()
        except TruncatedError as exc:
            return f"the server closed the connection ({exc})"
        return "the server closed the connection"
