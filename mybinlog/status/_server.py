"""The status server: :class:`StatusServer` serves a process's status over HTTP/1.1 (a unix socket or TCP, a
hand-written server of a few paths) or rewrites it as a JSON file; :func:`serve_status` makes one.

Paths: ``/status`` (the JSON document; also ``/`` unless a browser asks for HTML), ``/ui`` (the status page, also
``/`` for a browser), ``/history`` (the last minutes of lag and counters, sampled every second), ``/metrics``
(Prometheus), ``/healthz`` (liveness) and ``/readyz`` (readiness). See docs/operations.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import time
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from ..errors import ConfigurationError
from ..sharing import BinlogClient, BinlogClientFactory, get_binlog_client_factory
from ._address import parse_status_address
from ._document import StatusSource, status_document
from ._health import DEFAULT_READY_MAX_LAG_SECONDS, ReplicaSource, readiness, replica_snapshots, replica_state
from ._metrics import MetricsCollector, render_metrics
from ._page import STATUS_PAGE

__all__ = ["StatusServer", "serve_status"]

logger = logging.getLogger("mybinlog.status")

_MAX_REQUEST_LINES = 100
HISTORY_FORMAT: Final = "mybinlog-history/1"
_JSON: Final = "application/json"


class StatusServer:
    """Serves a process's status (see :func:`serve_status`); an async context manager owning its server and its
    one-second sampler (:attr:`history`), or its file-writing task. ``address`` is the resolved address (the real
    port when serving on port 0); :attr:`metrics` is the :class:`MetricsCollector` behind ``/metrics``."""

    def __init__(
        self,
        address: str,
        *,
        source: StatusSource | None = None,
        extra: Callable[[], Mapping[str, Any]] | None = None,
        interval_ms: int = 1000,
        replicas: ReplicaSource | None = None,
        factory: BinlogClientFactory | None = None,
        ready_max_lag_seconds: float = DEFAULT_READY_MAX_LAG_SECONDS,
        history_seconds: int = 600,
    ) -> None:
        self.kind, self._target, self._port = parse_status_address(address)
        if interval_ms <= 0:
            raise ConfigurationError("interval_ms must be > 0")
        if history_seconds < 0 or ready_max_lag_seconds < 0:
            raise ConfigurationError("history_seconds and ready_max_lag_seconds must be >= 0")
        self.interval_ms = interval_ms
        self._source = source
        self._extra = extra
        self._replicas = replicas
        owner = getattr(source, "__self__", None)  # `source=factory.status` or `client.status`: count those clients
        self._factory = factory or (owner if isinstance(owner, BinlogClientFactory) else None)
        self._client = owner if isinstance(owner, BinlogClient) else None
        self.ready_max_lag_seconds = ready_max_lag_seconds
        self.metrics = MetricsCollector(
            factory=self._factory, replicas=replicas, ready_max_lag_seconds=ready_max_lag_seconds
        )
        self.history_seconds = history_seconds
        self.history: deque[dict[str, Any]] = deque(maxlen=max(1, history_seconds))
        self._server: asyncio.Server | None = None
        self._task: asyncio.Task[None] | None = None
        self._sampler: asyncio.Task[None] | None = None
        self._started = time.monotonic()
        self.loop_delay = 0.0  # how late the last one-second sampler tick ran (the event loop's responsiveness)
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
        doc = status_document(self._source, self._extra, replicas=self._replicas)
        if self.kind == "file":
            doc["interval_ms"] = self.interval_ms
        return doc

    def _connected(self) -> list[bool]:
        if self._client is not None:
            clients = [self._client]
        else:
            clients = (self._factory or get_binlog_client_factory()).clients
        return [d.connected for c in clients for d in c.dispatchers]

    def health(self) -> tuple[bool, dict[str, Any]]:
        """(alive, details) for ``/healthz``: the process answers from its event loop (this runs on it), and no
        replica has failed."""
        replicas = replica_snapshots(self._replicas)
        failed = [str(r.get("replica")) for r in replicas if replica_state(r) == "failed"]
        details: dict[str, Any] = {
            "pid": os.getpid(),
            "uptime_seconds": round(time.monotonic() - self._started, 3),
            "loop_delay_seconds": round(self.loop_delay, 6),
        }
        if failed:
            details["failed"] = failed
        return not failed, details

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """(ready, details) for ``/readyz`` (see :func:`~mybinlog.status._health.readiness`)."""
        rows = list((self._source or get_binlog_client_factory().status)())
        return readiness(replica_snapshots(self._replicas), rows, self._connected(), self.ready_max_lag_seconds)

    def sample(self) -> dict[str, Any]:
        """One point of :attr:`history`: the time, each replica's lag and counters, each consumer's queue and lag
        (now minus its position's timestamp while it is behind its dispatcher, else 0)."""
        doc = self.document()
        now = float(doc["time"])
        point: dict[str, Any] = {"time": round(now, 3), "replicas": {}, "consumers": {}}
        for r in doc.get("replicas") or ():
            point["replicas"][str(r.get("replica"))] = {
                "lag": r.get("lag_seconds"),
                "rows": r.get("rows_written"),
                "transactions": r.get("transactions"),
            }
        for row in doc["mysql_binlogs"]:
            behind = (row["mysql_binlog_name"], row["mysql_binlog_pos"]) != (
                row["dispatcher_mysql_binlog_name"],
                row["dispatcher_mysql_binlog_pos"],
            )
            ts = row["mysql_binlog_timestamp"]
            point["consumers"][f"{row['binlog_client_name']}/{row['name']}"] = {
                "lag": max(0.0, round(now - ts, 3)) if behind and ts else 0.0,
                "bytes": row["bytes"],
            }
        return point

    def history_document(self) -> dict[str, Any]:
        return {"format": HISTORY_FORMAT, "interval_seconds": 1.0, "samples": list(self.history)}

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
        if self._server is not None and self.history_seconds > 0:
            self._sampler = asyncio.create_task(self._sample_loop(), name=f"mybinlog status sampler {self.address}")
        logger.info("serving mybinlog status at %s", self.address)
        return self

    async def aclose(self) -> None:
        """Stop serving (a unix socket or status file is removed)."""
        server, self._server = self._server, None
        task, self._task = self._task, None
        sampler, self._sampler = self._sampler, None
        if server is not None:
            server.close()
            await asyncio.shield(server.wait_closed())
        for t in (task, sampler):
            if t is not None:
                t.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.shield(t)
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

    # -- history -------------------------------------------------------------------------------------------
    async def _sample_loop(self) -> None:
        loop = asyncio.get_running_loop()
        tick = loop.time()
        failing = False
        while True:
            try:
                self.history.append(self.sample())
                failing = False
            except Exception:  # a sample is worth a warning (once until it works again), never the server
                logger.log(logging.DEBUG if failing else logging.WARNING, "cannot sample the status", exc_info=True)
                failing = True
            tick += 1.0
            now = loop.time()
            if tick < now:  # the loop was busy for longer than a tick: skip the missed ones
                tick = now
            await asyncio.sleep(tick - now)  # a periodic timer, not a synchronisation
            self.loop_delay = max(0.0, loop.time() - tick)

    # -- HTTP (unix socket or TCP) ---------------------------------------------------------------------------
    def _answer(self, method: str, path: str, headers: Mapping[str, str]) -> tuple[str, str, bytes]:
        """(status line, content type, body) of a request."""
        accept = headers.get("accept", "")
        if method not in ("GET", "HEAD"):
            return "405 Method Not Allowed", _JSON, b'{"error": "use GET /status"}\n'
        if path == "/ui" or (path == "/" and "text/html" in accept):
            return "200 OK", "text/html; charset=utf-8", STATUS_PAGE
        if path in ("/", "/status"):
            self.requests += 1
            return "200 OK", _JSON, _json(self.document())
        if path == "/history":
            return "200 OK", _JSON, _json(self.history_document())
        if path == "/metrics":
            try:
                body, content_type = render_metrics(self.metrics, accept=accept)
            except ConfigurationError as exc:
                return "501 Not Implemented", "text/plain; charset=utf-8", f"{exc}\n".encode()
            return "200 OK", content_type, body
        if path in ("/healthz", "/readyz"):
            ok, details = self.health() if path == "/healthz" else self.readiness()
            body = _json({"status": "ok" if ok else "fail", **details})
            return ("200 OK" if ok else "503 Service Unavailable"), _JSON, body
        return "404 Not Found", _JSON, b'{"error": "see /status, /ui, /history, /metrics, /healthz, /readyz"}\n'

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            headers: dict[str, str] = {}
            async with asyncio.timeout(5):
                request = await reader.readline()
                for _ in range(_MAX_REQUEST_LINES):
                    line = await reader.readline()
                    if line in (b"\r\n", b"\n", b""):
                        break
                    name, sep, value = line.decode("latin-1").partition(":")
                    if sep:
                        headers[name.strip().lower()] = value.strip()
            parts = request.decode("latin-1").split()
            method, target = (parts[0], parts[1]) if len(parts) >= 2 else ("", "")
            status, content_type, body = self._answer(method, target.split("?", 1)[0], headers)
            head = (
                f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
                "Cache-Control: no-store\r\nConnection: close\r\n\r\n"
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


def _json(doc: Any) -> bytes:
    return json.dumps(doc, default=str).encode() + b"\n"


def serve_status(
    address: str,
    *,
    source: StatusSource | None = None,
    extra: Callable[[], Mapping[str, Any]] | None = None,
    interval_ms: int = 1000,
    replicas: ReplicaSource | None = None,
    factory: BinlogClientFactory | None = None,
    ready_max_lag_seconds: float = DEFAULT_READY_MAX_LAG_SECONDS,
    history_seconds: int = 600,
) -> StatusServer:
    """Expose this process's status rows so that ``mybinlog status --from ADDRESS`` (or :func:`read_status`)
    can read them from outside: ``async with mybinlog.serve_status("unix:/run/app/mybinlog.sock"): ...``.

    ``address``: ``unix:/path.sock`` (HTTP over a unix socket: ``curl --unix-socket /path.sock http://x/status``),
    ``http://127.0.0.1:PORT`` (HTTP over TCP; port 0 picks a free one, see :attr:`StatusServer.address`; bind to
    loopback unless you mean to publish it), or ``file:/path.json`` (the document rewritten every
    ``interval_ms``, atomically). Nothing is served before ``start()``/``async with``; the rows are computed per
    request. ``source`` defaults to the default factory's status (every consumer created through
    :func:`get_binlog_client`); ``extra`` adds keys to the document. No password appears in it.

    Over HTTP it also serves the status page (``/ui``, and ``/`` for a browser), ``/history`` (the last
    ``history_seconds`` of lag, one sample a second), ``/metrics`` (Prometheus, with ``pip install
    'mybinlog[metrics]'``; the clients of ``factory``, default: the factory ``source`` belongs to, or the default
    one), ``/healthz`` and ``/readyz`` (a replica is ready when it streams, connected, with a lag of at most
    ``ready_max_lag_seconds``). ``replicas`` adds the replicas (replicators, or a callable returning them) to the
    document, the metrics and the page.
    """
    return StatusServer(
        address,
        source=source,
        extra=extra,
        interval_ms=interval_ms,
        replicas=replicas,
        factory=factory,
        ready_max_lag_seconds=ready_max_lag_seconds,
        history_seconds=history_seconds,
    )
