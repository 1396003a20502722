"""``_version`` values derived from binlog positions (see docs/replication.md, "Why the result is exactly-once").

A row's ``_version`` must grow with the order of changes and be the same every time the same change is replayed,
so that ReplacingMergeTree keeps the newest state whatever was delivered twice. We derive it from the position of
the transaction's *end* (the boundary after its commit event)::

    version = file_number << 42 | end_offset << 1 | snapshot_flag

* ``file_number`` is the numeric suffix of the binlog file name (``binlog.000042`` -> 42) plus the replica's
  ``version_base`` (0 until the source fails over to another server), < 2**22;
* ``end_offset`` < 2**41 (2 TiB per file);
* ``snapshot_flag`` is 0 for a binlog transaction and 1 for rows read by a snapshot chunk whose low watermark is
  that position.

A transaction committed after a snapshot chunk's low watermark ends strictly after it, so it has a larger version
than the chunk's rows; the last transaction committed before the watermark ends exactly at it and loses the tie
to the chunk's rows, which were read later. One transaction has one version: the replicator keeps only the last
change per primary key within a transaction, so no two rows of one key share a version.

Positions are ordered only within one server's binlog. When the source becomes another server with the same GTID
history (a failover: the positions' ``server_id`` changes), its file numbers may be lower than the old server's.
The replicator then raises ``version_base`` so that the new server's first file number maps above every version
already written, and keeps the base in its checkpoint: replays stay idempotent within one server, and everything
after the change sorts above everything before it.
"""

from __future__ import annotations

import re
from typing import Final

from ..errors import ConfigurationError
from ..protocol import BinlogPosition

__all__ = ["binlog_file_number", "snapshot_version", "transaction_version", "version_file", "version_position"]

FILE_BITS: Final = 22
OFFSET_BITS: Final = 41
_SUFFIX = re.compile(r"\.(\d+)$")


def binlog_file_number(name: str) -> int:
    """The numeric suffix of a binlog file name (``mysql-bin.000123`` -> 123)."""
    m = _SUFFIX.search(name)
    if m is None:
        raise ConfigurationError(
            f"binlog file name {name!r} has no numeric suffix; cannot derive row versions from it "
            "(expected names like binlog.000001)"
        )
    n = int(m.group(1))
    if n >= 1 << FILE_BITS:
        raise ConfigurationError(f"binlog file number {n} of {name!r} exceeds {1 << FILE_BITS} (version overflow)")
    return n


def _version(file: str, offset: int, flag: int, base: int) -> int:
    if not 0 <= offset < 1 << OFFSET_BITS:
        raise ConfigurationError(f"binlog offset {offset} in {file!r} is out of range for row versions")
    number = binlog_file_number(file) + base
    if not 0 <= number < 1 << FILE_BITS:
        raise ConfigurationError(
            f"binlog file number {number} ({file!r} + version base {base}) is out of range for row versions"
        )
    return number << (OFFSET_BITS + 1) | offset << 1 | flag


def transaction_version(end: BinlogPosition, base: int = 0) -> int:
    """Version of the rows changed by the transaction that ends at ``end`` (``base``: the replica's version base)."""
    return _version(end.file, end.offset, 0, base)


def snapshot_version(watermark: BinlogPosition, base: int = 0) -> int:
    """Version of rows read by a snapshot chunk whose low watermark (position before the read) is ``watermark``."""
    return _version(watermark.file, watermark.offset, 1, base)


def version_file(version: int) -> int:
    """The (based) file number part of a version."""
    return version >> (OFFSET_BITS + 1)


def version_position(version: int) -> tuple[int, int, bool]:
    """(file_number, offset, is_snapshot) of a version: for messages and debugging."""
    return version >> (OFFSET_BITS + 1), (version >> 1) & ((1 << OFFSET_BITS) - 1), bool(version & 1)
