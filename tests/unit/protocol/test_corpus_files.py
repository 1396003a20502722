"""Every real binlog file of the shared corpus decodes end to end, as SOURCES.md describes it.

* Each binlog file (not the .sql/.txt companions) is read with :func:`read_binlog_file`, every rows event's rows
  are decoded and every event is rendered with :func:`event_to_json`.
* The event count and the histogram of event types match SOURCES.md's ``events: N`` and ``event types:`` lines
  (which count the events of the file, not the inner events of a TRANSACTION_PAYLOAD: those are matched with the
  ``containing ...`` detail instead). Checksum algorithm and FORMAT_DESCRIPTION count are checked too.
* The deliberately broken inputs raise the specific error class, located (``file``, ``offset``), with a message
  naming the problem.
* CRC32 verification is real: a copy with one flipped byte raises ChecksumError at that event's offset.
"""

from __future__ import annotations

import collections
import json
import re
from pathlib import Path
from typing import Any

import pytest

from mybinlog.errors import ChecksumError, DecodeError, NotABinlogError, TruncatedError
from mybinlog.protocol._constants import EventType
from mybinlog.protocol._events import (
    Event,
    FormatDescriptionEvent,
    QueryEvent,
    RowsEvent,
    TransactionPayloadEvent,
)
from mybinlog.protocol._format import event_to_json
from mybinlog.source._files import read_binlog_file
from tests.builders import type_code_of
from tests.corpus import binlog_files

COMPANION_SUFFIXES = (".sql", ".txt")


def _is_binlog(path: Path) -> bool:
    return not path.name.endswith(COMPANION_SUFFIXES)


FILES = [p for p in binlog_files() if _is_binlog(p)]

# Broken on purpose (SOURCES.md): (error class, offset of the failing event, words the message must contain)
BROKEN: dict[str, tuple[type[DecodeError], int, tuple[str, ...]]] = {
    "mysql-binlog-connector-rust__non-binlog": (NotABinlogError, 0, ("not a binlog", "magic")),
    "canal__parse_tsdb_mysql-bin.000001": (NotABinlogError, 0, ("not a binlog", "efbfbd")),
    "rust_mysql_common__binlog_truncated_event.000001": (TruncatedError, 4, ("truncated", "header")),
    "rust_mysql_common__binlog_truncated_prev_gtid_event.000001": (TruncatedError, 120, ("truncated", "header")),
    "rust_mysql_common__corrupt-relay-bin.000624": (TruncatedError, 91204, ("QUERY",)),
    "rust_mysql_common__ver_5_1-wl2325_r.001": (DecodeError, 428, ("XID", "8 bytes")),
}
CLEAN = [p for p in FILES if p.name not in BROKEN]


# ----------------------------------------------------------------------------------------------------------
# SOURCES.md
# ----------------------------------------------------------------------------------------------------------


def _parse_sources(text: str) -> dict[str, dict[str, Any]]:
    """Per file: events, types (Counter of type codes), fdes, checksum_alg, inner (Counter) from SOURCES.md."""
    out: dict[str, dict[str, Any]] = {}
    for section in re.split(r"^### ", text, flags=re.M)[1:]:
        m = re.match(r"`binlogs/([^`]+)`", section)
        if m is None:
            continue
        info: dict[str, Any] = {}
        m_events = re.search(r"FDEs: (\d+); checksum_alg: ([^;]*); events: (\d+);", section)
        if m_events:
            info["fdes"] = int(m_events.group(1))
            alg = m_events.group(2).strip()
            info["checksum_alg"] = None if alg in ("None", "") else int(alg)
            info["events"] = int(m_events.group(3))
        m_types = re.search(r"^\* event types: (.*)$", section, flags=re.M)
        if m_types:
            info["types"] = _histogram(m_types.group(1))
        inner = re.findall(r"TRANSACTION_PAYLOAD \(compression \[[^\]]*\]\) containing ([^;\n]*)", section)
        if inner:
            info["inner"] = _histogram(inner[0])
        out[m.group(1)] = info
    return out


def _histogram(text: str) -> collections.Counter[int]:
    hist: collections.Counter[int] = collections.Counter()
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, count = item.rsplit(" x", 1)
        hist[type_code_of(name)] += int(count)
    return hist


@pytest.fixture(scope="module")
def sources(corpus_dir: Path) -> dict[str, dict[str, Any]]:
    return _parse_sources((corpus_dir / "SOURCES.md").read_text(encoding="utf-8"))


def _read_into(path: Path, seen: list[Event]) -> None:
    """Read events into ``seen`` (which keeps what was read before an error)."""
    for ev in read_binlog_file(path):
        if isinstance(ev, RowsEvent):
            _ = ev.rows
        seen.append(ev)


def _read_all(path: Path, **kwargs: Any) -> list[Event]:
    events = []
    for ev in read_binlog_file(path, **kwargs):
        if isinstance(ev, RowsEvent):
            _ = ev.rows
        doc = json.loads(event_to_json(ev))
        assert doc["type_code"] == ev.type_code
        events.append(ev)
    return events


# ----------------------------------------------------------------------------------------------------------
# tests
# ----------------------------------------------------------------------------------------------------------


def test_corpus_files_present(corpus_dir: Path, sources: dict[str, dict[str, Any]]) -> None:
    assert FILES, "no binlog files found in the corpus"
    assert len(CLEAN) == len(FILES) - len(BROKEN)
    for name in BROKEN:
        assert name in {p.name for p in FILES}, f"broken-input list names {name}, which is not in the corpus"
    for path in CLEAN:
        assert "events" in sources.get(path.name, {}), f"SOURCES.md has no event count for {path.name}"


@pytest.mark.parametrize("path", CLEAN, ids=[p.name for p in CLEAN])
def test_file_decodes_end_to_end(path: Path, corpus_dir: Path, sources: dict[str, dict[str, Any]]) -> None:
    info = sources[path.name]
    events = _read_all(path)
    outer = [e for e in events if not e.in_payload]
    assert all(e.file == str(path) for e in events)
    assert all(e.offset is not None for e in outer)
    assert all(e.offset is None for e in events if e.in_payload)
    # offsets are contiguous: each event starts where the previous one ended, the last one ends the file
    ends = [(e.offset or 0) + e.size for e in outer]
    assert [e.offset for e in outer[1:]] == ends[:-1]
    assert ends[-1] == _file_size(path)

    assert len(outer) == info["events"]
    assert collections.Counter(e.type_code for e in outer) == info["types"]
    fdes = [e for e in outer if isinstance(e, FormatDescriptionEvent)]
    assert len(fdes) == info["fdes"]
    assert fdes[0].checksum_alg == info["checksum_alg"]
    if "inner" in info:
        inner = [e for e in events if e.in_payload]
        assert collections.Counter(e.type_code for e in inner) == info["inner"]
        payloads = [e for e in outer if isinstance(e, TransactionPayloadEvent)]
        assert sum(len(p.events) for p in payloads) == len(inner)


def _file_size(path: Path) -> int:
    if path.name.endswith(".gz"):
        import gzip

        with gzip.open(path) as fh:
            return len(fh.read())
    return path.stat().st_size


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_input_raises_located_error(name: str, corpus_dir: Path, sources: dict[str, dict[str, Any]]) -> None:
    cls, offset, words = BROKEN[name]
    path = corpus_dir / "binlogs" / name
    seen: list[Event] = []
    with pytest.raises(cls) as info:
        _read_into(path, seen)
    err = info.value
    assert type(err) is cls, f"expected exactly {cls.__name__}, got {type(err).__name__}: {err}"
    assert err.file == str(path)
    assert err.offset == offset
    message = str(err)
    for word in words:
        assert word.lower() in message.lower(), f"{word!r} not in {message!r}"
    assert f"offset {offset}" in message
    # everything before the broken event decoded, and no event at or after it was yielded
    assert all(e.offset is not None and e.offset < offset for e in seen if not e.in_payload)
    expected_total = sources.get(name, {}).get("events")
    if expected_total is not None:
        assert len([e for e in seen if not e.in_payload]) <= expected_total


def _copy_with_flip(src: Path, dst: Path, position: int) -> Path:
    data = bytearray(src.read_bytes())
    data[position] ^= 0x5A
    dst.write_bytes(bytes(data))
    return dst


CRC_FILES = [
    "mysql-binlog-connector-java__mysql-bin.checksum-crc32",
    "mariadb-poc__domain_id_0_mariadb-repl-bin.000009",
    "rust_mysql_common__transaction_compression.000001",
    "rust_mysql_common__mariadb-bin.000001",
]


@pytest.mark.parametrize("name", CRC_FILES)
@pytest.mark.parametrize("which", ["format_description", "middle", "last"])
def test_flipped_byte_raises_checksum_error(name: str, which: str, corpus_dir: Path, tmp_path: Path) -> None:
    src = corpus_dir / "binlogs" / name
    outer = [e for e in _read_all(src) if not e.in_payload]
    assert outer[0].type_code == EventType.FORMAT_DESCRIPTION_EVENT
    target = {"format_description": outer[0], "middle": outer[len(outer) // 2], "last": outer[-1]}[which]
    assert target.offset is not None
    # a byte in the body (not the header's size field, so the event boundaries stay intact)
    position = target.offset + 19 + (target.size - 19) // 2
    copy = _copy_with_flip(src, tmp_path / name, position)
    with pytest.raises(ChecksumError) as info:
        _read_all(copy)
    assert info.value.offset == target.offset
    assert info.value.file == str(copy)
    assert info.value.type_code == target.type_code
    assert "CRC32 mismatch" in str(info.value)


def test_unverified_checksum_reads_altered_query(corpus_dir: Path, tmp_path: Path) -> None:
    """With verify_checksum=False the same alteration is not detected (so the test above proves verification)."""
    src = corpus_dir / "binlogs" / CRC_FILES[0]
    query = next(e for e in _read_all(src) if isinstance(e, QueryEvent) and e.query == "BEGIN")
    assert query.offset is not None
    position = query.offset + query.size - 4 - 1  # last byte of the statement text, before the CRC32
    copy = _copy_with_flip(src, tmp_path / "altered", position)
    with pytest.raises(ChecksumError):
        _read_all(copy)
    altered = [e for e in _read_all(copy, verify_checksum=False) if e.offset == query.offset]
    assert isinstance(altered[0], QueryEvent)
    assert altered[0].query != "BEGIN"
