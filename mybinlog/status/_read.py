"""Reading a status from outside: :func:`read_status` (``mybinlog status --from ADDRESS``) reads the document another
process serves, over HTTP (however many pieces the answer comes in) or from its file."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any, Final

from ..errors import StatusReadError
from ._address import parse_status_address
from ._document import STATUS_FORMAT

__all__ = ["read_status"]

MiB: Final = 1 << 20
_MAX_STATUS_ANSWER: Final = 64 * MiB


async def _read_status_answer(reader: asyncio.StreamReader, where: str) -> bytes:
    """The body of the HTTP answer on ``reader``, which may arrive in any number of pieces: ``Content-Length``
    bytes when the head gives it (the connection may stay open after them), else everything up to EOF."""
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
        complete = True
    except asyncio.IncompleteReadError as exc:  # EOF before the end of the head
        raw, complete = exc.partial, False
    except asyncio.LimitOverrunError as exc:
        raise StatusReadError(f"{where}: unexpected answer (no end of its head in {exc.consumed} bytes)") from exc
    lines = raw.decode("latin-1").split("\r\n")
    status_line = lines[0]
    if not status_line.startswith("HTTP/") or status_line.split()[1:2] != ["200"]:
        raise StatusReadError(f"{where}: unexpected answer {status_line[:80]!r}")
    if not complete:
        raise StatusReadError(f"{where}: the answer ended inside its head ({len(raw)} bytes)")
    length: int | None = None
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep and name.strip().lower() == "content-length":
            value = value.strip()
            if not (value.isascii() and value.isdigit()):
                raise StatusReadError(f"{where}: bad Content-Length {value[:40]!r}")
            length = int(value)
    if length is None:  # the answer ends with the connection
        pieces: list[bytes] = []
        size = 0
        while piece := await reader.read(MiB):
            size += len(piece)
            if size > _MAX_STATUS_ANSWER:
                raise StatusReadError(f"{where}: the answer is larger than {_MAX_STATUS_ANSWER // MiB} MiB")
            pieces.append(piece)
        return b"".join(pieces)
    if length > _MAX_STATUS_ANSWER:
        raise StatusReadError(f"{where}: the answer is larger than {_MAX_STATUS_ANSWER // MiB} MiB ({length} bytes)")
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError as exc:
        raise StatusReadError(
            f"{where}: the answer ended after {len(exc.partial)} of the {length} bytes its Content-Length announced"
        ) from exc


async def read_status(address: str, *, timeout_s: float = 5.0) -> dict[str, Any]:
    """The status document served at ``address`` by :func:`serve_status` (another process, usually).

    Over HTTP it reads the whole answer, however many pieces it comes in: the ``Content-Length`` bytes its head
    announces, or everything up to the end of the connection without one.

    Raises :class:`StatusReadError` when nothing serves it there, the answer is cut short (fewer bytes than its
    Content-Length) or is not a mybinlog status, and :class:`~mybinlog.ConfigurationError` for a malformed address.
    """
    kind, target, port = parse_status_address(address)
    where = address.strip()
    try:
        if kind == "file":
            text = await asyncio.to_thread(Path(target).read_bytes)
            body = text
        else:
            async with asyncio.timeout(timeout_s):
                if kind == "unix":
                    reader, writer = await asyncio.open_unix_connection(target)
                else:
                    reader, writer = await asyncio.open_connection(target, port)
                try:
                    writer.write(b"GET /status HTTP/1.1\r\nHost: mybinlog\r\nConnection: close\r\n\r\n")
                    await writer.drain()
                    body = await _read_status_answer(reader, where)
                finally:
                    writer.close()
                    with contextlib.suppress(OSError):
                        await writer.wait_closed()
    except TimeoutError as exc:
        raise StatusReadError(f"{where}: no answer within {timeout_s:g} s") from exc
    except OSError as exc:
        raise StatusReadError(
            f"{where}: cannot read the status ({exc.strerror or exc}); is the consuming process running and "
            "serving its status there (serve_status)?"
        ) from exc
    try:
        doc = json.loads(body)
    except ValueError as exc:
        raise StatusReadError(f"{where}: the answer is not JSON ({exc})") from exc
    if not isinstance(doc, dict) or doc.get("format") != STATUS_FORMAT:
        raise StatusReadError(f"{where}: not a mybinlog status document (format {STATUS_FORMAT!r} expected)")
    return doc
