"""The status server: :class:`StatusServer` serves a process's status document over HTTP/1.1 (a unix socket or TCP,
a hand-written server of two paths) or rewrites it as a JSON file; :func:`serve_status` makes one."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from ..errors import ConfigurationError
from ._address import _status_address
from ._document import StatusSource, status_document

__all__ = ["StatusServer", "serve_status"]

logger = logging.getLogger("mybinlog.status")

_MAX_REQUEST_LINES = 100


class StatusServer:
    """Serves a process's status rows (see :func:`serve_status`); an async context manager owning its server or
    file-writing task. ``address`` is the resolved address (the real port when serving on port 0)."""

    def __init__(
        self,
        address: str,
        *,
        source: StatusSource | None = None,
        extra: Callable[[], Mapping[str, Any]] | None = None,
        interval_ms: int = 1000,
    ) -> None:
        self.kind, self._target, self._port = _status_address(address)
        if interval_ms <= 0:
            raise ConfigurationError("interval_ms must be > 0")
        self.interval_ms = interval_ms
        self._source = source
        self._extra = extra
        self._server: asyncio.Server | None = None
        self._task: asyncio.Task[None] | None = None
        self.requests = 0

    def __repr__(self) -> str:
        return f"<StatusServer {self.address}{' running' if self.running else ''}>"

    @property
    def address(self) -> str:
        if self.kind == "http":
            host = f"[{self._target}]" if ":" in self._target else self._target
            return f"http://{host}:{self._port}"
        return f"{self.kind}:{self._target}"

    @property
    def running(self) -> bool:
        return self._server is not None or self._task is not None

    def document(self) -> dict[str, Any]:
        doc = status_document(self._source, self._extra)
        if self.kind == "file":
            doc["interval_ms"] = self.interval_ms
        return doc

    async def start(self) -> StatusServer:
        """Start listening (or write the file once and keep rewriting it). Errors (address in use...) raise here."""
        if self.running:
            return self
        try:
            if self.kind == "unix":
                self._clear_stale_socket()
                self._server = await asyncio.start_unix_server(self._handle, path=self._target)
            elif self.kind == "http":
                self._server = await asyncio.start_server(self._handle, self._target, self._port)
                self._port = int(self._server.sockets[0].getsockname()[1])
            else:
                self._write_file()
                self._task = asyncio.create_task(self._file_loop(), name=f"mybinlog status {self._target}")
        except OSError as exc:
            raise ConfigurationError(f"cannot serve status at {self.address}: {exc}") from exc
        logger.info("serving mybinlog status at %s", self.address)
        return self

    async def aclose(self) -> None:
        """Stop serving (a unix socket or status file is removed)."""
        server, self._server = self._server, None
        task, self._task = self._task, None
        if server is not None:
            server.close()
            await asyncio.shield(server.wait_closed())
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(task)
        if (server is not None or task is not None) and self.kind in ("unix", "file"):
            self._remove_path()

    def _clear_stale_socket(self) -> None:
        path = Path(self._target)
        if path.is_socket():
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                probe.settimeout(1)
                try:
                    probe.connect(self._target)
                except OSError:
                    path.unlink()  # left by a process that is gone
                    return
            raise ConfigurationError(f"another process serves its status at {self.address}; pick another path")
        if path.exists():
            raise ConfigurationError(f"status socket path {self._target!r} exists and is not a socket")

    def _remove_path(self) -> None:
        with contextlib.suppress(OSError):
            Path(self._target).unlink()

    async def __aenter__(self) -> StatusServer:
        return await self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # -- file ------------------------------------------------------------------------------------------------
    def _write_file(self) -> None:
        path = Path(self._target)
        data = json.dumps(self.document(), default=str, indent=1).encode()
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)  # readers see the old or the new file, never half of one

    async def _file_loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval_ms / 1000)  # a periodic timer, not a synchronisation
            try:
                self._write_file()
            except OSError as exc:
                logger.warning("cannot write the status file %s: %s", self._target, exc)

    # -- HTTP (unix socket or TCP) ---------------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(5):
                request = await reader.readline()
                for _ in range(_MAX_REQUEST_LINES):
                    line = await reader.readline()
                    if line in (b"\r\n", b"\n", b""):
                        break
            parts = request.decode("latin-1").split()
            method, target = (parts[0], parts[1]) if len(parts) >= 2 else ("", "")
            path = target.split("?", 1)[0]
            if method not in ("GET", "HEAD"):
                status, body = "405 Method Not Allowed", b'{"error": "use GET /status"}\n'
            elif path not in ("/", "/status"):
                status, body = "404 Not Found", b'{"error": "the status is at /status"}\n'
            else:
                self.requests += 1
                status, body = "200 OK", json.dumps(self.document(), default=str).encode() + b"\n"
            head = (
                f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n"
            ).encode()
            writer.write(head if method == "HEAD" else head + body)
            await writer.drain()
        except (TimeoutError, OSError, ValueError) as exc:  # a client that went away or sent nonsense
            logger.debug("status request failed: %s", exc)
        except Exception:
            logger.exception("status request failed")
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


def serve_status(
    address: str,
    *,
    source: StatusSource | None = None,
    extra: Callable[[], Mapping[str, Any]] | None = None,
    interval_ms: int = 1000,
) -> StatusServer:
    """Expose this process's status rows so that ``mybinlog status --from ADDRESS`` (or :func:`read_status`)
    can read them from outside: ``async with mybinlog.serve_status("unix:/run/app/mybinlog.sock"): ...``.

    ``address``: ``unix:/path.sock`` (HTTP over a unix socket: ``curl --unix-socket /path.sock http://x/status``),
    ``http://127.0.0.1:PORT`` (HTTP over TCP; port 0 picks a free one, see :attr:`StatusServer.address`; bind to
    loopback unless you mean to publish it), or ``file:/path.json`` (the document rewritten every
    ``interval_ms``, atomically). Nothing is served before ``start()``/``async with``; the rows are computed per
    request. ``source`` defaults to the default factory's status (every consumer created through
    :func:`get_binlog_client`); ``extra`` adds keys to the document. No password appears in it.
    """
    return StatusServer(address, source=source, extra=extra, interval_ms=interval_ms)
