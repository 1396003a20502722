"""A TCP proxy on 127.0.0.1 that tests can cut, to break client connections at a moment of their choosing, or
blackhole, to leave them half-open (nothing forwarded, nothing closed)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time

__all__ = ["ProxyThread", "TcpProxy"]


class TcpProxy:
    """Forwards 127.0.0.1:<port> to ``target``; :meth:`cut` closes every connection open through it; after
    :meth:`blackhole` nothing is forwarded any more and nothing is closed. ``forwarded_at`` is the
    :func:`time.monotonic` time of the last bytes forwarded from the target to a client (0 before any)."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self.connections = 0
        self.blackholed = False
        self.forwarded_at = 0.0
        self._stall_budget: int | None = None
        self.delay = 0.0  # seconds each chunk from a client waits before it is forwarded (a slow link or server)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> TcpProxy:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
        self.cut()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await task
        if self._server is not None:
            await self._server.wait_closed()

    def cut(self) -> int:
        """Close every open connection (both sides); returns how many were cut."""
        writers = list(self._writers)
        for w in writers:
            w.transport.abort()
        self._writers.clear()
        return len(writers) // 2

    def blackhole(self) -> None:
        """Stop forwarding without closing, as a server gone without a FIN looks to its clients: the bytes of open
        connections are read and dropped in both directions, and connections made from now on are accepted and
        never answered. :meth:`cut` (or leaving the proxy) closes them."""
        self.blackholed = True

    def stall_after(self, nbytes: int) -> None:
        """Forward ``nbytes`` more bytes to the clients, then :meth:`blackhole`: a client is left in the middle of
        whatever the server was sending (a big transaction, say)."""
        self._stall_budget = nbytes

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        if self.blackholed:  # accepted, never answered
            self._writers.add(writer)
            try:
                while await reader.read(65536):
                    pass
            except (ConnectionError, OSError):
                pass
            finally:
                self._writers.discard(writer)
                writer.transport.abort()
            return
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        self._writers.update((writer, up_writer))

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    if self.blackholed:
                        continue
                    if self.delay and dst is not writer:
                        await asyncio.sleep(self.delay)  # the link's latency, not synchronisation
                    if dst is writer:
                        budget = self._stall_budget
                        if budget is not None:
                            if len(data) >= budget:
                                data, self.blackholed, self._stall_budget = data[:budget], True, None
                            else:
                                self._stall_budget = budget - len(data)
                        self.forwarded_at = time.monotonic()  # before the client can have the bytes
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                dst.transport.abort()

        tasks = [asyncio.ensure_future(pump(reader, up_writer)), asyncio.ensure_future(pump(up_reader, writer))]
        self._tasks.update(tasks)
        try:
            await asyncio.gather(*tasks)
        finally:
            self._tasks.difference_update(tasks)
            self._writers.discard(writer)
            self._writers.discard(up_writer)


class ProxyThread:
    """A :class:`TcpProxy` on its own event loop in a thread, for a child process to connect through."""

    def __init__(self, host: str, port: int) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.proxy = TcpProxy(host, port)
        asyncio.run_coroutine_threadsafe(self.proxy.__aenter__(), self.loop).result(30)

    @property
    def port(self) -> int:
        return self.proxy.port

    def cut(self) -> int:
        """:meth:`TcpProxy.cut` on the proxy's loop."""
        cut = self.call("cut")
        assert isinstance(cut, int)
        return cut

    def call(self, method: str, *args: object) -> object:
        """Run a method of the proxy on its loop and return its result."""

        async def run() -> object:
            return getattr(self.proxy, method)(*args)

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(30)

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.proxy.__aexit__(None, None, None), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        self.loop.close()
