"""Reading binlog files from disk with the same sans-IO decoder the network source uses.

Files are memory-mapped (gzip-compressed files are inflated in memory), split into events by the header's
event_size, and decoded one by one. A sequence of files is read in order; with ``follow_rotate=True`` a file
that ends with a ROTATE event continues into the named next file when it exists beside it.
"""

from __future__ import annotations

import gzip
import mmap
import os
import struct
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..errors import DecodeError, NotABinlogError, TruncatedError
from ..protocol import BINLOG_MAGIC, HEADER_LEN, Event, EventDecoder, RotateEvent, TransactionPayloadEvent, speedups

__all__ = ["iter_binlog_events", "read_binlog_file"]

_SIZE_OFFSET = 9
_SIZE = struct.Struct("<I")
_CHUNK = 64


def _load(path: Path) -> tuple[bytes | mmap.mmap, object | None]:
    try:
        with path.open("rb") as fh:
            head = fh.read(4)
            if head[:2] == b"\x1f\x8b":
                fh.seek(0)
                with gzip.GzipFile(fileobj=fh) as gz:
                    return gz.read(), None
            size = os.fstat(fh.fileno()).st_size
            if size == 0:
                return b"", None
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            return mm, mm
    except FileNotFoundError:
        raise DecodeError(f"binlog file {str(path)!r} does not exist") from None
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise DecodeError(f"cannot read binlog file {str(path)!r}: {exc}") from exc


def read_binlog_file(
    path: str | os.PathLike[str],
    *,
    decoder: EventDecoder | None = None,
    verify_checksum: bool = True,
    start: int = 4,
    flatten_payloads: bool = True,
) -> Iterator[Event]:
    """Yield the events of one binlog file, each with ``offset`` (its start in the file) and ``file`` set.

    Reading from ``start`` > 4 needs the FORMAT_DESCRIPTION first: it is read from offset 4 and not yielded.
    With ``flatten_payloads`` (default) the inner events of a compressed transaction are yielded right after
    their TRANSACTION_PAYLOAD event (with ``offset=None``), as if they were written uncompressed.
    Errors name the file and the offset: a file without the magic bytes raises NotABinlogError, a file that
    ends inside an event raises TruncatedError.
    """
    p = Path(path)
    name = str(p)
    data, closer = _load(p)
    try:
        n = len(data)
        if n < 4 or data[:4] != BINLOG_MAGIC:
            raise NotABinlogError(
                f"not a binlog file: it starts with {bytes(data[:4]).hex() or 'nothing'}, "
                f"expected the magic bytes {BINLOG_MAGIC.hex()}",
                file=name,
                offset=0,
            )
        dec = decoder or EventDecoder(verify_checksum=verify_checksum)
        dec.file = name
        pos = 4
        if start > 4:
            # the FORMAT_DESCRIPTION at offset 4 sets checksum and post-header lengths
            size = _event_size(data, pos, n, name)
            dec.decode(bytes(data[pos : pos + size]), pos)
            pos = start
        # Events are cut and decoded in chunks (one decode_batch call each); a chunk is small, so a reader that
        # stops early leaves the decoder at most _CHUNK events ahead. Errors come after the events before them.
        size_at = _SIZE.unpack_from
        cut = speedups.cut_events if speedups is not None else None
        while pos < n:
            raws: list[bytes] = []
            offsets: list[int] = []
            error: DecodeError | None = None
            if cut is not None:  # the compiled core cuts the chunk; it stops before an event it cannot cut
                raws, offsets, pos = cut(data, pos, _CHUNK)
            while pos < n and len(raws) < _CHUNK:
                if pos + HEADER_LEN <= n:
                    size = size_at(data, pos + _SIZE_OFFSET)[0]
                    if size >= HEADER_LEN and pos + size <= n:
                        raws.append(data[pos : pos + size])
                        offsets.append(pos)
                        pos += size
                        continue
                try:
                    _event_size(data, pos, n, name)  # raises the error that describes the problem
                except DecodeError as exc:
                    error = exc
                break
            events: list[Event] = []
            try:
                dec.decode_batch(raws, events, offsets)
            except DecodeError as exc:
                error = exc
            for event in events:
                yield event
                if flatten_payloads and isinstance(event, TransactionPayloadEvent):
                    for inner in event.events:
                        inner.file = name
                        yield inner
            if error is not None:
                raise error
    finally:
        if closer is not None:
            data.close()  # type: ignore[union-attr]


def _event_size(data: bytes | mmap.mmap, pos: int, n: int, name: str) -> int:
    if pos + HEADER_LEN > n:
        raise TruncatedError(
            f"file ends inside an event header ({n - pos} of {HEADER_LEN} bytes present); the file is truncated "
            "or still being written",
            file=name,
            offset=pos,
        )
    size = int.from_bytes(data[pos + _SIZE_OFFSET : pos + _SIZE_OFFSET + 4], "little")
    if size < HEADER_LEN:
        raise DecodeError(f"event at this offset claims an impossible size of {size} bytes", file=name, offset=pos)
    if pos + size > n:
        raise TruncatedError(
            f"file ends inside an event ({n - pos} of its {size} bytes present); the file is truncated or still "
            "being written",
            file=name,
            offset=pos,
        )
    return size


def iter_binlog_events(
    paths: Iterable[str | os.PathLike[str]],
    *,
    verify_checksum: bool = True,
    follow_rotate: bool = False,
    start: int = 4,
) -> Iterator[Event]:
    """Yield the events of several binlog files in order (``start`` applies to the first file only).

    With ``follow_rotate`` the last file's closing ROTATE leads on to the next file in the same directory,
    while it exists.
    """
    queue = [Path(p) for p in paths]
    seen: set[Path] = set()
    first = True
    while queue:
        path = queue.pop(0)
        seen.add(path.resolve())
        last: Event | None = None
        for event in read_binlog_file(path, verify_checksum=verify_checksum, start=start if first else 4):
            last = event
            yield event
        first = False
        if follow_rotate and not queue and isinstance(last, RotateEvent):
            nxt = path.parent / last.next_file
            if nxt.exists() and nxt.resolve() not in seen:
                queue.append(nxt)
