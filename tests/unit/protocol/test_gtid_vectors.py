"""GTID-set vectors of the external binlog corpus (vectors.jsonl): binary GTID sets and their text forms.

Covered here:
* every ``previous_gtids`` record (PREVIOUS_GTIDS bodies, hand-built binary sets, 8-byte set headers, fuzz
  inputs, and full PREVIOUS_GTIDS events cut from real MySQL 8.0.40 / 9.6.0 binlogs);
* the MariaDB GTID_LIST_EVENT bodies (kind ``other``, event type 163): same format as ``MariaDBGtidSet``;
* the text of the GTIDs asserted by kind ``gtid`` records (the event bodies themselves belong to the event
  decoder's tests).

The corpus is found by ``tests.corpus`` / the ``corpus_dir`` fixture (env MYBINLOG_CORPUS, default
``<repo>/../shared/testdata/binlog-corpus``); without it these tests fail when CI=true and are skipped
otherwise.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import pytest

from mybinlog.errors import GtidSetError
from mybinlog.protocol._gtid import MariaDBGtid, MariaDBGtidSet, MySQLGtid, MySQLGtidSet
from tests import corpus

Record = dict[str, Any]

_HEADER_LEN = 19
_SET_SCOPES = {"event_body", "gtid_set_binary", "full_event", "gtid_set_header"}


def _params(kind: str, *, event_type_prefix: str = "", scope: str | None = None) -> list[Any]:
    """Records as test parameters; one placeholder when the corpus is absent, so that the ``corpus_dir``
    fixture fails (CI=true) or skips the test instead of pytest silently collecting nothing."""
    records = corpus.vectors_by_kind(kind)
    if corpus.corpus_dir() is None:
        return [pytest.param(None, id="corpus-missing")]
    return [
        pytest.param(r, id=f"v{r['id']}")
        for r in records
        if str(r.get("event_type") or "").startswith(event_type_prefix)
        and (scope is None or r["bytes_scope"] == scope)
    ]


def _set_bytes(record: Record) -> bytes:
    data = bytes.fromhex(record["event_bytes_hex"])
    if record["bytes_scope"] != "full_event":
        return data
    # full_event = 19-byte header + body + CRC32 when the FDE enables checksums
    checksum_len = 4 if (record.get("params") or {}).get("checksum_alg") == 1 else 0
    assert record["header"]["event_size"] == len(data)
    assert record["header"]["type"] == 35  # PREVIOUS_GTIDS_LOG_EVENT
    if checksum_len:
        assert zlib.crc32(data[:-4]) == int.from_bytes(data[-4:], "little")
    return data[_HEADER_LEN : len(data) - checksum_len]


def test_corpus_has_gtid_set_vectors(corpus_dir: Path) -> None:
    assert (corpus_dir / "vectors.jsonl").is_file()
    records = corpus.vectors_by_kind("previous_gtids")
    assert records, "vectors.jsonl has no previous_gtids records"
    # every record must fall into a scope handled below: nothing is skipped silently
    assert {r["bytes_scope"] for r in records} <= _SET_SCOPES


@pytest.mark.parametrize("record", _params("previous_gtids"))
def test_previous_gtids_vector(corpus_dir: Path, record: Record | None) -> None:
    assert record is not None
    expected = record["expected"]
    data = _set_bytes(record)

    if record["bytes_scope"] == "gtid_set_header":
        if expected.get("error"):
            with pytest.raises(GtidSetError):
                MySQLGtidSet.decode_header(data)
            return
        assert MySQLGtidSet.decode_header(data) == (expected["gtid_format"], expected["sid_count"])
        return

    if expected.get("must_not_crash"):
        message = ""
        try:
            decoded = MySQLGtidSet.decode(data)
        except GtidSetError as exc:  # allowed; anything else (IndexError, struct.error) fails the test
            message = str(exc)
            assert "GTID set" in message  # an explanation, not a bare error
        else:
            assert MySQLGtidSet.decode(decoded.encode()) == decoded
        return

    if expected.get("error") is True:
        with pytest.raises(GtidSetError):
            MySQLGtidSet.decode(data)
        return

    decoded = MySQLGtidSet.decode(data)
    fmt, _ = MySQLGtidSet.decode_header(data)
    # re-encoding in the same format gives back the exact bytes (all corpus sets are canonical)
    assert decoded.encode(tagged=fmt == "tagged") == data
    assert MySQLGtidSet.parse(str(decoded)) == decoded

    if "gtid_sets" in expected:
        assert str(decoded) == expected["gtid_sets"]
    if "gtid_set_text" in expected:
        assert str(decoded) == expected["gtid_set_text"]
    if "sids" in expected:
        want = {
            (entry["uuid"], entry["tag"] or ""): tuple((start, end - 1) for start, end in entry["intervals"])
            for entry in expected["sids"]
        }
        assert dict(decoded.items()) == want
    if set(expected) == {"error"}:
        assert expected["error"] is False


@pytest.mark.parametrize("record", _params("previous_gtids", scope="full_event"))
def test_previous_gtids_full_events_match_their_binlog(corpus_dir: Path, record: Record | None) -> None:
    assert record is not None
    path = corpus_dir / record["binlog_file"]
    assert path.is_file(), f"{path} named by vector {record['id']} is missing from the corpus"
    raw = path.read_bytes()
    start = record["event_offset"]
    event = bytes.fromhex(record["event_bytes_hex"])
    assert raw[start : start + len(event)] == event
    assert str(MySQLGtidSet.decode(_set_bytes(record))) == record["expected"]["gtid_set_text"]


@pytest.mark.parametrize("record", _params("other", event_type_prefix="MARIADB_GTID_LIST_EVENT"))
def test_mariadb_gtid_list_vector(corpus_dir: Path, record: Record | None) -> None:
    assert record is not None
    assert record["bytes_scope"] == "event_body"
    data = bytes.fromhex(record["event_bytes_hex"])
    position, flags = MariaDBGtidSet.decode_gtid_list(data)
    want = [
        MariaDBGtid(g["domain_id"], g["server_id"], g["sequence_number"]) for g in record["expected"]["gtids"]
    ]
    assert list(position) == sorted(want, key=lambda g: g.domain_id)
    assert flags == 0
    assert position.encode() == data  # the vectors list domains ascending, as our encoder does


@pytest.mark.parametrize("record", _params("gtid"))
def test_gtid_text_of_gtid_events(corpus_dir: Path, record: Record | None) -> None:
    """Only the GTID text these records assert; decoding the GTID event bodies is the event decoder's job."""
    assert record is not None
    expected = record["expected"]
    if "gtid_next" in expected:  # MariaDB GTID event
        g = MariaDBGtid.parse(expected["gtid_next"])
        assert (g.domain_id, g.seq_no) == (expected["domain_id"], expected["sequence_number"])
        assert str(g) == expected["gtid_next"]
        return
    text = expected.get("gtid_text") or expected["gtid"]
    mysql_gtid = MySQLGtid.parse(text)
    assert str(mysql_gtid) == text
    if "uuid" in expected:
        assert mysql_gtid == MySQLGtid(expected["uuid"], expected["gno"], expected.get("tag") or "")
    assert mysql_gtid in MySQLGtidSet().add(mysql_gtid)


# ------------------------------------------------------------------------------------------------------------
# every PREVIOUS_GTIDS / GTID_LIST event of the corpus's real binlog files

_PREVIOUS_GTIDS = 35
_GTID = 33
_MARIADB_GTID = 162
_MARIADB_GTID_LIST = 163


def _events(raw: bytes) -> list[tuple[int, int, bytes]]:
    """(type, server_id, body without checksum) of each event of a binlog file, by a minimal header walk."""
    out = []
    pos = 4
    while pos + _HEADER_LEN <= len(raw):
        type_code = raw[pos + 4]
        server_id = int.from_bytes(raw[pos + 5 : pos + 9], "little")
        size = int.from_bytes(raw[pos + 9 : pos + 13], "little")
        if size < _HEADER_LEN or pos + size > len(raw):
            break  # a deliberately truncated file
        event = raw[pos : pos + size]
        has_crc = size >= _HEADER_LEN + 4 and zlib.crc32(event[:-4]) == int.from_bytes(event[-4:], "little")
        out.append((type_code, server_id, event[_HEADER_LEN : size - 4 if has_crc else size]))
        pos += size
    return out


def _binlog_files() -> list[Any]:
    if corpus.corpus_dir() is None:
        return [pytest.param(None, id="corpus-missing")]
    files = []
    for path in corpus.binlog_files():
        raw = path.read_bytes()
        if raw[:4] == b"\xfebin" and any(
            type_code in (_PREVIOUS_GTIDS, _MARIADB_GTID_LIST) for type_code, _, _ in _events(raw)
        ):
            files.append(pytest.param(path, id=path.name))
    return files


@pytest.mark.parametrize("path", _binlog_files())
def test_gtid_sets_of_real_binlogs(corpus_dir: Path, path: Path | None) -> None:
    assert path is not None
    events = _events(path.read_bytes())
    assert any(type_code in (_PREVIOUS_GTIDS, _MARIADB_GTID_LIST) for type_code, _, _ in events)
    mysql_position: MySQLGtidSet | None = None
    mariadb_position: MariaDBGtidSet | None = None
    for type_code, server_id, body in events:
        if type_code == _PREVIOUS_GTIDS:
            previous = MySQLGtidSet.decode(body)
            fmt, _ = MySQLGtidSet.decode_header(body)
            assert previous.encode(tagged=fmt == "tagged") == body
            mysql_position = previous
        elif type_code == _GTID and mysql_position is not None:
            # classic GTID_LOG_EVENT: flags (1) + uuid (16) + gno (8)
            sid = body[1:17].hex()
            gtid = MySQLGtid(sid, int.from_bytes(body[17:25], "little"))
            # a transaction of this file is not among the GTIDs of the files before it, nor repeated
            assert gtid not in mysql_position
            mysql_position = mysql_position.add(gtid)
            assert gtid in mysql_position
        elif type_code == _MARIADB_GTID_LIST:
            mariadb_position, flags = MariaDBGtidSet.decode_gtid_list(body)
            assert flags == 0
        elif type_code == _MARIADB_GTID and mariadb_position is not None:
            # MariaDB GTID event: seq_no u64 + domain_id u32 + flags ...; server_id from the header
            mgtid = MariaDBGtid(
                int.from_bytes(body[8:12], "little"), server_id, int.from_bytes(body[0:8], "little")
            )
            assert mgtid not in mariadb_position
            mariadb_position = mariadb_position.add(mgtid)
            assert mgtid in mariadb_position
