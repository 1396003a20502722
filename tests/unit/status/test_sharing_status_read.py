"""``read_status`` reads the whole HTTP answer, however many pieces it arrives in.

A status document of many consumers is several hundred KB: it reaches the reader in pieces (socket buffers, the
transport's reads). The reader must read to the end of the answer (EOF), or exactly ``Content-Length`` bytes when
the head gives it, and say so when the answer ends before that. Served here by a real asyncio server on a unix
socket that writes the answer in small pieces with awaits between them, and by the real StatusServer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mybinlog.errors import StatusReadError
from mybinlog.sharing import BinlogClientFactory
from mybinlog.status import STATUS_COLUMNS, read_status, serve_status, status_document
from tests.fakes import FakeLog, make_client, read_txns

PIECE = 4096


def big_document(rows: int = 800) -> bytes:
    """A valid status document of ``rows`` consumers, several hundred KB of JSON."""

    def row(i: int) -> dict[str, Any]:
        values: dict[str, Any] = {column: f"{column}-{i}" for column in STATUS_COLUMNS}
        values.update(name=f"consumer-{i:05d}", mysql_binlog_pos=4 + i, size=i, bytes=100 * i, max_bytes=1 << 26)
        return values

    body = json.dumps(status_document(lambda: [row(i) for i in range(rows)])).encode() + b"\n"
    assert len(body) > 300_000
    return body


def head(*, length: int | None) -> bytes:
    lines = ["HTTP/1.1 200 OK", "Content-Type: application/json"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join([*lines, "Connection: close"]) + "\r\n\r\n").encode()


@contextlib.asynccontextmanager
async def piecewise_server(
    path: Path, answer: bytes, *, hold: asyncio.Event | None = None
) -> AsyncIterator[list[bytes]]:
    """A unix-socket HTTP server that answers every request with ``answer``, in pieces of PIECE bytes with awaits
    between them; it keeps the connection open after the answer until ``hold`` is set (then closes it). Yields
    the requests received; on exit, waits for every connection it handled to end."""
    requests: list[bytes] = []
    handlers: list[asyncio.Event] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        ended = asyncio.Event()
        handlers.append(ended)
        try:
            requests.append(await reader.readuntil(b"\r\n\r\n"))
            for start in range(0, len(answer), PIECE):
                writer.write(answer[start : start + PIECE])
                await writer.drain()
                for _ in range(3):  # let the reader see this piece before the next one is written
                    await asyncio.sleep(0)
            if hold is not None:
                await hold.wait()
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            ended.set()

    server = await asyncio.start_unix_server(handle, path=str(path))
    try:
        yield requests
    finally:
        server.close()
        await server.wait_closed()
        async with asyncio.timeout(10):
            for ended in handlers:
                await ended.wait()


# ------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("content_length", [True, False], ids=["content-length", "until-eof"])
async def test_a_large_answer_in_small_pieces_is_read_whole(tmp_path: Path, content_length: bool) -> None:
    body = big_document()
    sock = tmp_path / "s.sock"
    answer = head(length=len(body) if content_length else None) + body
    async with piecewise_server(sock, answer) as requests:
        doc = await read_status(f"unix:{sock}")
    assert doc == json.loads(body)
    assert len(doc["mysql_binlogs"]) == 800
    assert doc["mysql_binlogs"][-1]["name"] == "consumer-00799"
    assert len(requests) == 1
    assert requests[0].startswith(b"GET /status HTTP/1.1\r\n")


async def test_content_length_ends_the_answer_even_if_the_connection_stays_open(tmp_path: Path) -> None:
    body = big_document()
    sock = tmp_path / "s.sock"
    hold = asyncio.Event()
    async with piecewise_server(sock, head(length=len(body)) + body, hold=hold):
        try:
            doc = await read_status(f"unix:{sock}", timeout_s=30)  # returns without waiting for the server to close
        finally:
            hold.set()
    assert doc == json.loads(body)


async def test_an_answer_shorter_than_its_content_length_is_an_error(tmp_path: Path) -> None:
    body = big_document()
    sock = tmp_path / "s.sock"
    cut = len(body) - 1000
    async with piecewise_server(sock, head(length=len(body)) + body[:cut]):
        with pytest.raises(StatusReadError, match="Content-Length") as info:
            await read_status(f"unix:{sock}")
    assert f"after {cut} of the {len(body)} bytes" in str(info.value)
    assert info.value.retriable


async def test_malformed_heads_are_errors(tmp_path: Path) -> None:
    sock = tmp_path / "s.sock"
    for answer, match in [
        (b"", "unexpected answer"),  # closed without a word
        (b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n", "unexpected answer 'HTTP/1.1 503"),
        (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n", "ended inside its head"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 1_000\r\n\r\n{}", "bad Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n{}", "bad Content-Length"),
    ]:
        async with piecewise_server(sock, answer):
            with pytest.raises(StatusReadError, match=match):
                await read_status(f"unix:{sock}")


@pytest.mark.parametrize("kind", ["unix", "http"])
async def test_the_status_server_with_many_consumers_is_read_whole(tmp_path: Path, kind: str) -> None:
    log = FakeLog()
    log.txns(3)
    factory = BinlogClientFactory()
    client = make_client(log, factory=factory)
    client._clock = lambda: 1000.0  # the rate columns stay what they are between the two reads of the rows
    names = [f"consumer-{i:04d}-{'of-a-rather-long-name-' * 12}" for i in range(400)]
    first = await client.create_binlog(name=names[0], executed_gtid_set=log.gtids(0))
    await read_txns(first, log.txn_of[-1])  # the dispatcher has delivered everything: the rows stay as they are
    consumers = [first] + [await client.create_binlog(name=name, executed_gtid_set=log.gtids(3)) for name in names[1:]]
    assert len(client.dispatchers) == 1
    address = f"unix:{tmp_path}/s.sock" if kind == "unix" else "http://127.0.0.1:0"
    async with serve_status(address, source=factory.status) as server:
        doc = await read_status(server.address)
    assert len(json.dumps(doc)) > 300_000
    assert [r["name"] for r in doc["mysql_binlogs"]] == names
    assert doc["mysql_binlogs"] == json.loads(json.dumps([dict(r) for r in factory.status()], default=str))
    assert server.requests == 1
    for c in consumers:
        await c.close()
    assert log.open_sources == 0
