"""``BinlogStream.transactions()``: whole transactions with the position after each, across reconnects in the middle
of a transaction. Driven by the scripted server of tests/fakes.py serving a real binlog file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mybinlog import (
    BinlogCheckpointEvent,
    BinlogStream,
    Event,
    FormatDescriptionEvent,
    MariadbGtidEvent,
    MariadbGtidListEvent,
    RotateEvent,
    Transaction,
    read_binlog_file,
)
from tests.fakes import FILE, ScriptedServer

_NOT_IN_A_TRANSACTION = (FormatDescriptionEvent, MariadbGtidListEvent, BinlogCheckpointEvent, RotateEvent)


def _key(event: Event) -> tuple[Any, ...]:
    return (event.type_code, event.log_pos, event.size)


def _file_transactions(path: Path) -> list[list[tuple[Any, ...]]]:
    """The file's transactions, each from its GTID event to the event before the next one (this file's transactions
    all start with a GTID), without the events between transactions."""
    out: list[list[tuple[Any, ...]]] = []
    for event in read_binlog_file(path):
        if isinstance(event, MariadbGtidEvent):
            out.append([])
        if out and not isinstance(event, _NOT_IN_A_TRANSACTION):
            out[-1].append(_key(event))
    return out


@pytest.mark.parametrize("cuts", [[], [5], [10], [12, 3], [40, 1, 1, 2]])
async def test_stream_transactions_are_whole_across_reconnects(corpus_dir: Path, cuts: list[int]) -> None:
    path = corpus_dir / "binlogs" / FILE
    server = ScriptedServer(path, [])
    server.cuts = [1_000_000, *cuts]  # the first connection is the initial dump; then cut after that many events
    stream = BinlogStream(
        "mysql://u:p@127.0.0.1:1", binlog_file=server.name, position=4, blocking=False, reconnect_backoff=(0.0, 0.0)
    )
    stream._connect = server.connect  # type: ignore[method-assign]
    server.cuts = list(cuts)
    txns: list[Transaction] = []
    async with stream:
        async for txn in stream.transactions():
            assert stream.position == txn.position  # the stream stands right after it
            txns.append(txn)
    assert stream.reconnects == len(cuts)
    expected = _file_transactions(path)
    assert len(expected) == 87
    assert [[_key(e) for e in t.events] for t in txns] == expected  # every transaction once, whole, in order
    for txn in txns:
        assert isinstance(txn.events[0], MariadbGtidEvent)
        assert txn.gtid == txn.events[0].gtid
        assert txn.position.offset == txn.events[-1].log_pos  # right after its last event
        assert txn.position.gtid_set is not None
        assert txn.gtid in txn.position.gtid_set
    assert [t.position.gtid_set for t in txns[:-1]] != [t.position.gtid_set for t in txns[1:]]
