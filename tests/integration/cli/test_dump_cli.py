"""`mybinlog dump` as a real subprocess, against binlogs written by a private MariaDB server.

The JSON Lines output is a stable interface (docs/dump-format.md): every event has its header fields, offsets
are exact, column values are rendered as documented (checked against what the workload wrote), and file mode
and server mode agree. The server's own ``mariadb-binlog`` is a second oracle for offsets, event types and row
counts. Errors exit 1 with a message that names the problem (and never the password).
"""

from __future__ import annotations

import collections
import datetime as dt
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mybinlog.testing._mysql import not_available_reason
from tests.conftest import skip_or_fail
from tests.servers import MariaDBServer, MySQLServer, find_mariadb, find_mysql
from tests.workload import Workload, WorkloadResult, normalize, parse_type

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
TIMEOUT = 60.0  # per subprocess; generous for a loaded 2-core CI machine

COMMON_FIELDS = {
    "type": str,
    "type_code": int,
    "offset": (int, type(None)),
    "log_pos": int,
    "timestamp": int,
    "server_id": int,
    "size": int,
    "flags": int,
}
ROWS_TYPES = frozenset(
    {"WRITE_ROWS_EVENT_V1", "UPDATE_ROWS_EVENT_V1", "DELETE_ROWS_EVENT_V1"}  # MariaDB writes v1
    | {"WRITE_ROWS_EVENT", "UPDATE_ROWS_EVENT", "DELETE_ROWS_EVENT"}  # MySQL v2
)
#: event types every dump of the module's workload holds, by flavour
FLAVOR_TYPES = {
    "mariadb": {"MARIADB_GTID_LIST_EVENT", "MARIADB_GTID_EVENT"},
    "mysql": {"PREVIOUS_GTIDS_LOG_EVENT", "GTID_LOG_EVENT"},
}
FLAVOR_ROWS_TYPES = {
    "mariadb": {"WRITE_ROWS_EVENT_V1", "UPDATE_ROWS_EVENT_V1", "DELETE_ROWS_EVENT_V1"},
    "mysql": {"WRITE_ROWS_EVENT", "UPDATE_ROWS_EVENT", "DELETE_ROWS_EVENT"},
}


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mybinlog", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        timeout=TIMEOUT,
        check=False,
    )


def jsonl(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


# --- one private server with a small workload over two binlog files ---


@dataclass
class Dumped:
    server: MariaDBServer
    db: str
    result: WorkloadResult
    paths: list[Path]
    file_events: list[dict[str, Any]]  # `dump --file` output
    server_events: list[dict[str, Any]]  # `dump --dsn --from-beginning --stop-at-end` output


@pytest.fixture(scope="module", params=["mariadb", "mysql"])
def server(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[MariaDBServer]:
    """A private server of each flavour for the module (MariaDB 10.11, Oracle MySQL 9.x)."""
    srv: MariaDBServer
    if request.param == "mysql":
        if find_mysql() is None:
            skip_or_fail(f"Oracle MySQL not found: {not_available_reason()}")
        srv = MySQLServer(tmp_path_factory.mktemp("dump-cli-mysql"), name="dump-cli")
    else:
        if find_mariadb() is None:
            skip_or_fail("MariaDB server binaries not found: run `bash scripts/setup.sh` to install mariadb-server")
        srv = MariaDBServer(tmp_path_factory.mktemp("dump-cli"), name="dump-cli")
    try:
        srv.start()
        yield srv
    finally:
        try:
            srv.stop()
        finally:
            srv.cleanup()


@pytest.fixture(scope="module")
def dumped(server: MariaDBServer) -> Dumped:
    db = server.create_database("dump_cli")
    conn = server.connect(database=db)
    try:
        workload = Workload(9, large_values=False)
        workload.run(conn, db, n_transactions=4, statements_per_txn=3, ddl_every=3)
        server.flush_binary_logs()  # two files: the dump follows them in order
        result = workload.run(conn, db, n_transactions=4, statements_per_txn=3, ddl_every=3)
    finally:
        conn.close()
    paths = server.binlog_paths()
    assert len(paths) == 2
    file_events = jsonl(run_cli("dump", "--format", "jsonl", "--file", *map(str, paths)))
    server_events = jsonl(
        run_cli("dump", "--dsn", server.repl_dsn, "--from-beginning", "--stop-at-end", "--format", "jsonl")
    )
    return Dumped(server, db, result, paths, file_events, server_events)


# --- the JSONL format ---


def test_jsonl_fields_and_exact_offsets(dumped: Dumped) -> None:
    events = dumped.file_events
    flavor = dumped.server.flavor
    types = {e["type"] for e in events}
    assert types >= {
        "FORMAT_DESCRIPTION_EVENT",
        *FLAVOR_TYPES[flavor],
        "QUERY_EVENT",
        "TABLE_MAP_EVENT",
        "XID_EVENT",
        "ROTATE_EVENT",
        *FLAVOR_ROWS_TYPES[flavor],
    }
    assert not types & (ROWS_TYPES - FLAVOR_ROWS_TYPES[flavor])
    by_file: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for e in events:
        for name, kind in COMMON_FIELDS.items():
            assert isinstance(e[name], kind), (name, e)
        assert e["file"] in {str(p) for p in dumped.paths}
        by_file[e["file"]].append(e)
        assert e["offset"] + e["size"] == e["log_pos"], e  # every event of a file is a real one
        if e["type"] in ROWS_TYPES:
            assert isinstance(e["schema"], str)
            assert isinstance(e["table"], str)
            assert all(isinstance(c, str) for c in e["columns"])  # binlog_row_metadata=FULL: names known
            assert e["rows"]
            for row in e["rows"]:
                if e["type"].startswith("UPDATE"):
                    assert set(row) == {"before", "after"}
                    assert len(row["before"]) == len(row["after"]) == len(e["columns"])
                else:
                    assert len(row) == len(e["columns"])
        elif e["type"] == "MARIADB_GTID_EVENT":
            assert re.fullmatch(r"\d+-\d+-\d+", e["gtid"]), e
            assert isinstance(e["standalone"], bool)
        elif e["type"] == "GTID_LOG_EVENT":
            assert re.fullmatch(r"[0-9a-f-]{36}:\d+", e["gtid"]), e
            assert isinstance(e["transaction_length"], int)
        elif e["type"] == "XID_EVENT":
            assert isinstance(e["xid"], int)
        elif e["type"] == "QUERY_EVENT":
            assert isinstance(e["query"], str)
    assert [Path(f).name for f in by_file] == [p.name for p in dumped.paths]
    for path in dumped.paths:
        in_file = by_file[str(path)]
        assert in_file[0]["offset"] == 4
        assert in_file[0]["type"] == "FORMAT_DESCRIPTION_EVENT"
        for prev, cur in itertools.pairwise(in_file):
            assert cur["offset"] == prev["log_pos"]  # events tile the file
        assert in_file[-1]["log_pos"] == path.stat().st_size
    first_file = by_file[str(dumped.paths[0])]
    assert first_file[-1]["type"] == "ROTATE_EVENT"
    assert first_file[-1]["next_file"] == dumped.paths[1].name


def _dt_text(value: str, *, aware: bool) -> Any:
    """A DATETIME/TIMESTAMP rendering: ISO 8601 (with +00:00 exactly when ``aware``), or MySQL's zero text."""
    if value.startswith("0000-00-00") or "-00" in value[:10]:
        return value
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?" + (r"\+00:00" if aware else ""), value), value
    return dt.datetime.fromisoformat(value)


def json_problem(rendered: Any, written: Any, sql_type: str, flavor: str = "mariadb") -> str | None:
    """How the JSON rendering of a column value breaks docs/dump-format.md (None when it follows it)."""
    want = normalize(written, sql_type)
    if written is None:
        return None if rendered is None else "NULL must be null"
    base = parse_type(sql_type).base
    got: Any
    if base in ("tinyint", "smallint", "mediumint", "int", "bigint", "year", "bit"):
        ok = type(rendered) is int
        got = rendered
    elif base in ("float", "double"):
        ok = isinstance(rendered, int | float)
        got = normalize(rendered, sql_type)
    elif base == "decimal":
        ok = isinstance(rendered, str) and rendered == format(want, "f")  # exact, with the column's scale
        got = normalize(rendered, sql_type)
    elif base == "date":
        ok = isinstance(rendered, str) and re.fullmatch(r"\d{4}-\d\d-\d\d", rendered) is not None
        got = normalize(rendered, sql_type)
    elif base in ("datetime", "timestamp"):
        ok = isinstance(rendered, str)
        got = normalize(_dt_text(rendered, aware=base == "timestamp"), sql_type) if ok else None
    elif base == "time":
        ok = isinstance(rendered, str) and re.fullmatch(r"-?\d{2,3}:\d\d:\d\d(\.\d{6})?", rendered) is not None
        got = normalize(rendered, sql_type)
    elif base in ("char", "varchar", "enum") or base.endswith("text"):
        ok = isinstance(rendered, str)
        got = normalize(rendered, sql_type)
    elif base == "set":
        ok = isinstance(rendered, list) and rendered == sorted(rendered)
        got = frozenset(rendered)
    elif base in ("binary", "varbinary", "geometry", "point", "uuid", "inet6") or base.endswith("blob"):
        ok = isinstance(rendered, str) and re.fullmatch(r"(?:[0-9a-f]{2})*", rendered) is not None
        got = normalize(bytes.fromhex(rendered), sql_type) if ok else None
    elif base == "json" and flavor == "mariadb":
        ok = isinstance(rendered, str)  # MariaDB JSON is LONGTEXT: the document's text, as a JSON string
        got = json.loads(rendered) if ok else None
    elif base == "json":  # MySQL's binary JSON: the document itself
        ok = True
        got = rendered
    elif base == "vector":
        ok = isinstance(rendered, list) and all(isinstance(x, int | float) for x in rendered)
        got = normalize(rendered, sql_type)
    else:
        return f"no rule for {sql_type}"
    if not ok:
        return f"rendered as {rendered!r:.100}, against docs/dump-format.md"
    if got != want:
        return f"rendered {rendered!r:.100}, written {written!r:.100}"
    return None


def test_jsonl_values_follow_dump_format(dumped: Dumped) -> None:
    changes = [c for c in dumped.result.changes if c.txn >= 4]  # the second file (after FLUSH BINARY LOGS)
    second = str(dumped.paths[1])
    rendered: list[tuple[str, str, list[str], Any]] = [
        (e["table"], e["type"], e["columns"], row)
        for e in dumped.file_events
        if e["type"] in ROWS_TYPES and e["schema"] == dumped.db and e["file"] == second
        for row in e["rows"]
    ]
    assert len(rendered) == len(changes)
    problems: list[str] = []
    for (table, etype, columns, row), change in zip(rendered, changes, strict=True):
        assert table == change.table
        suffix = "_ROWS_EVENT_V1" if dumped.server.flavor == "mariadb" else "_ROWS_EVENT"
        assert etype == {"insert": "WRITE", "update": "UPDATE", "delete": "DELETE"}[change.kind] + suffix
        types = dumped.result.column_types[table]
        images = (
            [(row["before"], change.before), (row["after"], change.after)]
            if change.kind == "update"
            else [(row, change.after if change.kind == "insert" else change.before)]
        )
        for values, written in images:
            assert written is not None
            assert columns == list(written)
            for name, value in zip(columns, values, strict=True):
                problem = json_problem(value, written[name], types[name], dumped.server.flavor)
                if problem:
                    problems.append(f"txn {change.txn} {change.kind} {table}.{name} ({types[name]}): {problem}")
    assert not problems, "\n".join(problems[:25])


def _comparable(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The server sends ANNOTATE_ROWS only to replicas that ask for them (mybinlog does not), and adds
    artificial events (offset null, e.g. the fake ROTATE naming the file); LOG_EVENT_BINLOG_IN_USE_F (flag 1)
    is set only in the file. The file is compared by name (a path in file mode)."""
    return [
        {**e, "file": Path(e["file"]).name, "flags": e["flags"] & ~1}
        for e in events
        if e["offset"] is not None and e["type"] != "ANNOTATE_ROWS_EVENT"
    ]


def test_file_and_server_modes_agree(dumped: Dumped) -> None:
    online = _comparable(dumped.server_events)
    offline = _comparable(dumped.file_events)
    assert [e for e in online if e["type"] in ROWS_TYPES] == [e for e in offline if e["type"] in ROWS_TYPES]
    # a ROTATE's "file" is wrong online: test_live_workload.py::test_stream_rotate_event_is_in_the_file_it_ends
    assert [{**e, "file": None} if e["type"] == "ROTATE_EVENT" else e for e in online] == [
        {**e, "file": None} if e["type"] == "ROTATE_EVENT" else e for e in offline
    ]
    artificial = [e for e in dumped.server_events if e["offset"] is None]
    assert artificial
    assert {e["type"] for e in artificial} == {"ROTATE_EVENT"}


def test_text_format_one_header_line_per_event(dumped: Dumped) -> None:
    proc = run_cli("dump", "--file", *map(str, dumped.paths))
    assert proc.returncode == 0, proc.stderr
    header = re.compile(r"#(\d+) \d{4}-\d\d-\d\d \d\d:\d\d:\d\d server (\d+) end_log_pos (\d+) ([A-Z0-9_]+)")
    heads = [m.groups() for line in proc.stdout.splitlines() if (m := header.match(line))]
    assert heads == [(str(e["offset"]), str(e["server_id"]), str(e["log_pos"]), e["type"]) for e in dumped.file_events]
    n_rows = sum(len(e["rows"]) for e in dumped.file_events if e["type"] in ROWS_TYPES)
    row_lines = [line for line in proc.stdout.splitlines() if re.match(r"    (INSERT|UPDATE|DELETE) ", line)]
    assert len(row_lines) == n_rows


# --- errors ---


def test_wrong_password_exits_1_without_the_password(server: MariaDBServer) -> None:
    secret = "Wr0ng-S3cret-pw"
    dsn = f"mysql://{server.repl_user}:{secret}@{server.host}:{server.port}"
    proc = run_cli("dump", "--dsn", dsn, "--stop-at-end", "--format", "jsonl")
    assert proc.returncode == 1
    # the password was on the command line: one warning saying so, then the error
    warning, error = proc.stderr.splitlines()
    assert " WARNING mybinlog.cli: " in warning
    assert "--password-file" in warning
    assert error.startswith("mybinlog: error:")
    assert server.repl_user in error  # names who was rejected...
    assert secret not in proc.stderr + proc.stdout  # ...but never the password
    assert proc.stdout == ""


def test_password_from_environment(dumped: Dumped) -> None:
    server = dumped.server
    dsn = f"mysql://{server.repl_user}@{server.host}:{server.port}"
    proc = run_cli(
        "dump",
        "--dsn",
        dsn,
        "--from-beginning",
        "--stop-at-end",
        "--format",
        "jsonl",
        "--limit",
        "3",
        env={"MYBINLOG_PASSWORD": server.repl_password},
    )
    events = jsonl(proc)
    assert len(events) == 3
    assert events == dumped.server_events[:3]


def test_password_from_file(dumped: Dumped, tmp_path: Path) -> None:
    server = dumped.server
    path = tmp_path / "repl.pw"
    path.write_text(server.repl_password + "\n")
    dsn = f"mysql://{server.repl_user}@{server.host}:{server.port}"
    proc = run_cli(
        "dump",
        "--dsn",
        dsn,
        "--password-file",
        str(path),
        "--from-beginning",
        "--stop-at-end",
        "--format",
        "jsonl",
        "--limit",
        "3",
        env={"MYBINLOG_PASSWORD": "not-the-password"},  # the file comes first
    )
    assert jsonl(proc) == dumped.server_events[:3]
    assert server.repl_password not in proc.stderr
    assert "WARNING" not in proc.stderr


def test_wrong_password_from_file_exits_1_without_the_password(server: MariaDBServer, tmp_path: Path) -> None:
    secret = "Wr0ng-fi1e-S3cret"
    path = tmp_path / "wrong.pw"
    path.write_text(secret + "\n")
    dsn = f"mysql://{server.repl_user}@{server.host}:{server.port}"
    proc = run_cli("dump", "--dsn", dsn, "--password-file", str(path), "--stop-at-end", env={"MYBINLOG_PASSWORD": ""})
    assert proc.returncode == 1
    assert proc.stderr.startswith("mybinlog: error:")
    assert f"{server.repl_user}@{server.host}:{server.port}" in proc.stderr
    assert secret not in proc.stderr + proc.stdout
    assert proc.stdout == ""


def test_password_in_url_warns_once_without_the_password(dumped: Dumped) -> None:
    server = dumped.server
    proc = run_cli("dump", "--dsn", server.repl_dsn, "--from-beginning", "--stop-at-end", "--limit", "1")
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "WARNING" in line]
    assert len(warnings) == 1, proc.stderr
    assert "other users of this machine can read it" in warnings[0]
    assert "--password-file" in warnings[0]
    assert "MYBINLOG_PASSWORD" in warnings[0]
    assert server.repl_password not in proc.stderr


def test_not_a_binlog_file_exits_1_naming_file_and_offset(tmp_path: Path, dumped: Dumped) -> None:
    bogus = tmp_path / "notes.txt"
    bogus.write_text("this is not a binlog\n")
    proc = run_cli("dump", "--file", str(bogus))
    assert proc.returncode == 1
    assert proc.stderr.startswith("mybinlog: error:")
    assert str(bogus) in proc.stderr
    assert "offset 0" in proc.stderr

    # a binlog cut inside an event: the error names the file and the offset of the event that broke
    proc, cut = _dump_truncated(tmp_path, dumped)
    assert proc.returncode == 1
    assert proc.stderr.startswith("mybinlog: error:")
    assert str(tmp_path / "binlog.truncated") in proc.stderr
    assert f"offset {cut}" in proc.stderr


def _dump_truncated(tmp_path: Path, dumped: Dumped) -> tuple[subprocess.CompletedProcess[str], int]:
    """`dump --format jsonl` of the first binlog cut 10 bytes into its first XID event."""
    cut = next(e["offset"] for e in dumped.file_events if e["type"] == "XID_EVENT")
    truncated = tmp_path / "binlog.truncated"
    truncated.write_bytes(dumped.paths[0].read_bytes()[: cut + 10])
    return run_cli("dump", "--format", "jsonl", "--file", str(truncated)), cut


def test_truncated_file_prints_the_events_before_the_error(tmp_path: Path, dumped: Dumped) -> None:
    proc, cut = _dump_truncated(tmp_path, dumped)
    assert proc.returncode == 1
    printed = [json.loads(line)["offset"] for line in proc.stdout.splitlines()]
    first = str(dumped.paths[0])
    assert printed == [e["offset"] for e in dumped.file_events if e["file"] == first and e["offset"] < cut]


# --- the server's own mariadb-binlog as an oracle ---

# label at the start of mariadb-binlog's event description -> our type names
_MARIADB_BINLOG_TYPES = (
    ("Start:", {"FORMAT_DESCRIPTION_EVENT"}),
    ("Gtid list", {"MARIADB_GTID_LIST_EVENT"}),
    ("Previous-GTIDs", {"PREVIOUS_GTIDS_LOG_EVENT"}),  # MySQL's mysqlbinlog
    ("GTID\tlast_committed", {"GTID_LOG_EVENT"}),
    ("Binlog checkpoint", {"BINLOG_CHECKPOINT_EVENT"}),
    ("GTID ", {"MARIADB_GTID_EVENT"}),
    ("Query", {"QUERY_EVENT"}),
    ("Annotate_rows", {"ANNOTATE_ROWS_EVENT"}),
    ("Table_map", {"TABLE_MAP_EVENT"}),
    ("Write_rows", {"WRITE_ROWS_EVENT_V1", "WRITE_ROWS_EVENT"}),
    ("Update_rows", {"UPDATE_ROWS_EVENT_V1", "UPDATE_ROWS_EVENT"}),
    ("Delete_rows", {"DELETE_ROWS_EVENT_V1", "DELETE_ROWS_EVENT"}),
    ("Xid", {"XID_EVENT"}),
    ("Rotate", {"ROTATE_EVENT"}),
    ("Stop", {"STOP_EVENT"}),
)
_AT = re.compile(r"# at (\d+)\s*$")
_HEADER = re.compile(r"#\d{6} +\d{1,2}:\d\d:\d\d server id (\d+) +end_log_pos (\d+)(?: +CRC32 0x[0-9a-f]+)?\s+(.*)$")
_ROW = re.compile(r"### (INSERT INTO|UPDATE|DELETE FROM) ")


@dataclass
class MariadbBinlogEvent:
    offset: int
    log_pos: int
    label: str
    rows: collections.Counter[str]  # row kind -> count, for the statement that ends with this event


def parse_mariadb_binlog(output: str) -> list[MariadbBinlogEvent]:
    """Pair ``# at N`` lines with event header lines (mariadb-binlog prints the ``# at`` lines of a rows
    statement's events first, then their headers, then the statement's rows): the n-th of each belong together.
    ``### INSERT/UPDATE/DELETE`` lines count towards the last header printed before them."""
    offsets: list[int] = []
    events: list[MariadbBinlogEvent] = []
    for line in output.splitlines():
        if m := _AT.match(line):
            offsets.append(int(m.group(1)))
        elif m := _HEADER.match(line):
            events.append(MariadbBinlogEvent(offsets[len(events)], int(m.group(2)), m.group(3), collections.Counter()))
        elif m := _ROW.match(line):
            events[-1].rows[m.group(1).split()[0].lower()] += 1
        elif line.startswith("###   @") and "Don't know how to handle column type" in line:
            # MySQL 9's mysqlbinlog cannot print GEOMETRY (255) and stops printing that rows event
            events[-1].rows["unprintable"] += 1
    assert len(offsets) == len(events), "every '# at' line has its event header"
    return events


def _mariadb_binlog() -> str:
    tool = shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog")
    if tool is None:
        skip_or_fail("mariadb-binlog not found: install mariadb-client (scripts/setup.sh does it)")
    return tool


def test_offsets_types_and_row_counts_match_mariadb_binlog(dumped: Dumped) -> None:
    """The server's own tool: ``mariadb-binlog`` for MariaDB, MySQL 9's ``mysqlbinlog`` for MySQL."""
    for path in dumped.paths:
        if isinstance(dumped.server, MySQLServer):
            text = dumped.server.mysqlbinlog("--no-defaults", "--base64-output=decode-rows", "-vv", str(path))
        else:
            proc = subprocess.run(
                [_mariadb_binlog(), "--no-defaults", "--base64-output=decode-rows", "-vv", str(path)],
                capture_output=True,
                timeout=TIMEOUT,
                check=False,
            )
            assert proc.returncode == 0, proc.stderr
            text = proc.stdout.decode("utf-8", errors="replace")
        theirs = parse_mariadb_binlog(text)
        ours = [e for e in dumped.file_events if e["file"] == str(path)]
        assert [(e.offset, e.log_pos) for e in theirs] == [(e["offset"], e["log_pos"]) for e in ours]
        for their, our in zip(theirs, ours, strict=True):
            names = next((types for label, types in _MARIADB_BINLOG_TYPES if their.label.startswith(label)), None)
            assert names is not None, f"unexpected mariadb-binlog event description {their.label!r}"
            assert our["type"] in names, (their, our["type"])
        # rows: mariadb-binlog prints a statement's rows after its last rows event (a run of consecutive
        # rows events, large statements span several)
        our_rows: dict[int, collections.Counter[str]] = {}
        run: collections.Counter[str] = collections.Counter()
        for e, nxt in zip(ours, [*ours[1:], None], strict=True):
            if e["type"] in ROWS_TYPES:
                run[e["type"].split("_")[0].lower().replace("write", "insert")] += len(e["rows"])
                if nxt is None or nxt["type"] not in ROWS_TYPES:
                    our_rows[e["offset"]], run = run, collections.Counter()
        # mysqlbinlog (MySQL) prints each rows event's rows after its own header: sum a run the same way
        their_rows: dict[int, collections.Counter[str]] = {}
        their_run: collections.Counter[str] = collections.Counter()
        for their, our in zip(theirs, ours, strict=True):
            their_run += their.rows
            ends_run = our["offset"] in our_rows if our["type"] in ROWS_TYPES else bool(their_run)
            if ends_run:
                their_rows[our["offset"]], their_run = their_run, collections.Counter()
        unprintable = {offset for offset, rows in their_rows.items() if rows["unprintable"]}
        assert {o: r for o, r in their_rows.items() if o not in unprintable} == {
            o: r for o, r in our_rows.items() if o not in unprintable
        }
        assert set(their_rows) == set(our_rows)
        assert len(unprintable) <= len(our_rows) // 2  # most statements are compared
        assert sum(sum(c.values()) for c in our_rows.values()) > 10


# --- live tail ---


def test_live_tail_prints_each_transaction_without_waiting_for_more(server: MariaDBServer) -> None:
    """A blocking ``dump --dsn`` into a pipe shows a transaction as soon as it is read: the output is flushed
    whenever the stream waits for the server (not only every few hundred events)."""
    import selectors
    import time

    server.execute("CREATE DATABASE IF NOT EXISTS tail_db")
    server.execute("CREATE TABLE IF NOT EXISTS tail_db.t (id INT PRIMARY KEY, v VARCHAR(20))")
    gtid = server.gtid_binlog_pos()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mybinlog", "dump", "--dsn", server.repl_dsn, "--gtid", gtid, "--format", "jsonl"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    try:
        for i in range(3):  # each transaction alone, the next one written only after this one was printed
            server.execute("INSERT INTO tail_db.t VALUES (%s, %s)", (i, f"tail-{i}"))
            deadline = time.monotonic() + TIMEOUT
            seen: dict[str, Any] | None = None
            while seen is None:
                remaining = deadline - time.monotonic()
                assert remaining > 0, f"transaction {i} was not printed"
                if not sel.select(remaining):
                    continue
                line = proc.stdout.readline()
                assert line, f"dump exited: {proc.stderr.read() if proc.stderr else ''}"
                event = json.loads(line)
                if event["type"].startswith("WRITE_ROWS") and event["rows"][0] == [i, f"tail-{i}"]:
                    seen = event
            assert seen["table"] == "t"
    finally:
        sel.close()
        proc.terminate()
        proc.wait(timeout=TIMEOUT)
        proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()
