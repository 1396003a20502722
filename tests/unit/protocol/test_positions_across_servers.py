"""Positions that survive reconnects, restarts and failovers (issue: exactly-once under real operations).

* :class:`PositionTracker`: the fake ROTATE that opens a dump names the server streaming; in GTID mode its offset
  (4) is not a transaction boundary, so the position waits for the next GTID event; a new file without a ROTATE is
  the next file.
* row versions with a version base (after a failover) stay above everything before;
* the grants parser that decides whether the source user can read a whole database;
* fail points; checkpoints carrying the new fields.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from typing import Any

import pytest

from mybinlog import BinlogPosition, MariaDBGtidSet
from mybinlog.clickhouse._version import transaction_version, version_file
from mybinlog.protocol._events import (
    FormatDescriptionEvent,
    MariadbGtidEvent,
    RotateEvent,
    StopEvent,
    XidEvent,
)
from mybinlog.protocol._gtid import MariaDBGtid
from mybinlog.protocol._position import PositionTracker
from mybinlog.source._session import select_scope


def _hdr(type_code: int, size: int, log_pos: int, server_id: int = 1) -> dict[str, Any]:
    return {
        "timestamp": 1,
        "type_code": type_code,
        "server_id": server_id,
        "size": size,
        "log_pos": log_pos,
        "flags": 0,
    }


def _fake_rotate(file: str, position: int = 4, server_id: int = 1) -> RotateEvent:
    return RotateEvent(**_hdr(4, 44, 0, server_id), position=position, next_file=file)


def _fde(log_pos: int) -> FormatDescriptionEvent:
    return FormatDescriptionEvent(
        **_hdr(15, 252, log_pos),
        binlog_version=4,
        server_version="10.11.19-MariaDB",
        create_timestamp=0,
        header_length=19,
        post_header_lengths=b"",
        checksum_alg=1,
    )


def _txn(seq: int, start: int, server_id: int = 1) -> list[Any]:
    gtid = MariadbGtidEvent(**_hdr(162, 42, start + 42, server_id), gtid=MariaDBGtid(0, 1, seq), gtid_flags=0)
    return [gtid, XidEvent(**_hdr(16, 31, start + 73, server_id), xid=seq)]


def test_the_fake_rotate_of_a_gtid_dump_does_not_move_the_boundary() -> None:
    """An idle stream resumed by GTID set keeps its checkpoint's file and offset (it used to report <file>:4)."""
    start = BinlogPosition("binlog.000003", 1500, MariaDBGtidSet.parse("0-1-10"), 5, server_id=1)
    tracker = PositionTracker(start)
    for event in (_fake_rotate("binlog.000003"), _fde(256)):
        tracker.update(event)
    assert tracker.position == start
    for event in _txn(11, 1500):
        tracker.update(event)
    assert (tracker.position.file, tracker.position.offset) == ("binlog.000003", 1573)
    assert str(tracker.position.gtid_set) == "0-1-11"


def test_a_dump_from_another_server_stamps_its_server_id() -> None:
    tracker = PositionTracker(BinlogPosition("binlog.000009", 900, MariaDBGtidSet.parse("0-1-10"), server_id=1))
    tracker.update(_fake_rotate("binlog.000002", server_id=2))
    tracker.update(_fde(256))
    for event in _txn(11, 300, server_id=1):  # events replicated from server 1 keep its id in their headers
        tracker.update(event)
    assert tracker.position.server_id == 2
    assert tracker.position.file == "binlog.000002"


def test_file_mode_rotate_moves_the_position_to_the_next_file() -> None:
    tracker = PositionTracker(BinlogPosition("binlog.000001", 4, None))
    for event in (_fake_rotate("binlog.000001"), _fde(256), *_txn(1, 300)):
        tracker.update(event)
    assert (tracker.position.file, tracker.position.offset) == ("binlog.000001", 373)
    tracker.update(StopEvent(**_hdr(3, 23, 396)))
    tracker.update(_fake_rotate("binlog.000002"))  # the server moves on to the file a restart opened
    assert (tracker.position.file, tracker.position.offset) == ("binlog.000002", 4)


def test_a_new_file_without_rotate_is_the_next_file(caplog: pytest.LogCaptureFixture) -> None:
    tracker = PositionTracker(BinlogPosition("binlog.000041", 4, None))
    for event in (_fake_rotate("binlog.000041"), _fde(256), *_txn(1, 300), StopEvent(**_hdr(3, 23, 396))):
        tracker.update(event)
    with caplog.at_level(logging.WARNING, "mybinlog.stream"):
        tracker.update(_fde(256))  # a FORMAT_DESCRIPTION with no ROTATE before it
    assert "assuming binlog.000042" in caplog.text
    for event in _txn(2, 300):
        tracker.update(event)
    assert (tracker.position.file, tracker.position.offset) == ("binlog.000042", 373)


def test_the_preamble_after_a_rotate_is_not_a_new_file() -> None:
    """A dump that starts at the file's beginning sends the real FORMAT_DESCRIPTION (log_pos > 0) after the fake
    ROTATE: that is the same file."""
    tracker = PositionTracker(BinlogPosition("binlog.000007", 4, None))
    for event in (_fake_rotate("binlog.000007"), _fde(256), *_txn(1, 300)):
        tracker.update(event)
    assert tracker.position.file == "binlog.000007"


def test_version_base_puts_a_new_server_above_the_old_one() -> None:
    old = transaction_version(BinlogPosition("binlog.000040", 9_000_000))
    # the new server writes binlog.000002; the base maps its first file above the old server's last
    base = version_file(old) + 1 - 2
    new = transaction_version(BinlogPosition("binlog.000002", 500), base)
    assert new > old
    assert transaction_version(BinlogPosition("binlog.000003", 4), base) > new


@pytest.mark.parametrize(
    ("grants", "scope"),
    [
        (["GRANT SELECT, REPLICATION SLAVE ON *.* TO `u`@`%`"], ("all", set())),
        (["GRANT ALL PRIVILEGES ON `shop`.* TO `u`@`%`"], ("all", set())),
        (["GRANT REPLICATION SLAVE ON *.* TO `u`@`%`", "GRANT SELECT ON `shop`.* TO `u`@`%`"], ("all", set())),
        (["GRANT SELECT ON `sh%`.* TO `u`@`%`"], ("all", set())),
        (["GRANT SELECT ON `sh\\_p`.* TO `u`@`%`"], ("none", set())),
        (["GRANT SELECT ON `other`.* TO `u`@`%`"], ("none", set())),
        (["GRANT REPLICATION SLAVE ON *.* TO `u`@`%`"], ("none", set())),
        (
            ["GRANT SELECT ON `shop`.`t1` TO `u`@`%`", "GRANT SELECT (a, b) ON `shop`.`t2` TO `u`@`%`"],
            ("some", {"t1", "t2"}),
        ),
        (["GRANT USAGE ON *.* TO `u`@`%`", "GRANT `reader` TO `u`@`%`"], None),
    ],
)
def test_select_scope(grants: list[str], scope: Any) -> None:
    assert select_scope(grants, "shop") == scope


def test_fail_points_kill_the_process_at_the_chosen_pass() -> None:
    code = (
        "import logging, sys; logging.basicConfig(stream=sys.stderr)\n"
        "from mybinlog import _failpoints\n"
        "for i in range(5):\n"
        "    print(i, flush=True)\n"
        "    _failpoints.reached('x.y')\n"
    )
    env = dict(os.environ, MYBINLOG_FAILPOINTS="other,x.y=3")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == -9
    assert done.stdout.split() == ["0", "1", "2"]
    assert "fail point x.y reached" in done.stderr
    env.pop("MYBINLOG_FAILPOINTS")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0
    assert done.stdout.split() == ["0", "1", "2", "3", "4"]


async def test_checkpoint_round_trip_with_loading_and_version_base() -> None:
    from mybinlog.clickhouse import Checkpoint, load_checkpoint, save_checkpoint

    class Memory:
        """A stand-in for a ClickHouse target: the checkpoints table as a list of TSV lines (pure logic only)."""

        kind = "memory"
        description = "memory"

        def __init__(self) -> None:
            self.rows: list[list[str]] = []
            self.ddl = 0

        async def execute(self, sql: str) -> None:
            self.ddl += 1

        async def query(self, sql: str) -> list[list[str]]:
            from mybinlog.clickhouse import tsv_unescape

            if not self.rows:
                return []
            seq, state = max((int(r[1]), r[2]) for r in self.rows)
            return [[str(seq), str(tsv_unescape(state))]]

        async def insert_tsv(self, table: str, columns: Any, data: bytes, **kw: Any) -> None:
            self.rows.append(data.decode().rstrip("\n").split("\t"))

    target: Any = Memory()
    cp = Checkpoint("r", BinlogPosition("binlog.000002", 77, MariaDBGtidSet.parse("0-2-9"), 5, server_id=2))
    cp.version_base = 39
    await save_checkpoint(target, cp)
    await save_checkpoint(target, cp)
    assert target.ddl == 2  # the checkpoints table is made once per target, not at every save
    back = await load_checkpoint(target, "r")
    assert back is not None
    assert back.position == cp.position
    assert back.version_base == 39
    marker = Checkpoint("r", BinlogPosition("", 4), loading=["t1", "t2"], seq=back.seq)
    await save_checkpoint(target, marker)
    assert await load_checkpoint(target, "r") is None  # an unfinished load is no checkpoint for others
    loading = await load_checkpoint(target, "r", include_loading=True)
    assert loading is not None
    assert loading.loading == ["t1", "t2"]
