"""Pure logic of the snapshot job: chunk boundaries, key predicates, the plan's JSON, state summaries, spool
names, progress lines and the command line. No servers, no Spark."""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import io
import os
import stat
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mybinlog import ConfigurationError
from mybinlog.cli._snapshot import _DriverStderr, add_arguments, options_from_args
from mybinlog.snapshot import SnapshotOptions, SnapshotProgress
from mybinlog.snapshot._chunks import (
    Chunk,
    TablePlan,
    balance,
    chunk_predicate,
    decode_key,
    encode_key,
    even_boundaries,
    key_at_most,
    key_greater,
    parse_key_range,
    sql_literal,
)
from mybinlog.snapshot._copy import CopyTable, meta_suffix, parse_spool_name, spool_name
from mybinlog.snapshot._job import _executor_target_url, _make_spool, _spark_error, _spool_directory
from mybinlog.snapshot._plan import auto_chunk_rows, choose_key
from mybinlog.snapshot._source import Watermark, normalize_create
from mybinlog.snapshot._state import ChunkEvent, summarize
from tests.conftest import skip_or_fail

# --- even ranges ------------------------------------------------------------------------------------------------


def _chunks_of(lo: int, hi: int, bounds: list[int]) -> list[tuple[int, int]]:
    edges = [lo - 1, *bounds, hi]
    return [(edges[i] + 1, edges[i + 1]) for i in range(len(edges) - 1)]


def test_even_boundaries_split_a_dense_key_evenly() -> None:
    bounds = even_boundaries(1, 1000, 1000, 100)
    assert bounds == [100, 200, 300, 400, 500, 600, 700, 800, 900]


def test_even_boundaries_small_table_is_one_chunk() -> None:
    assert even_boundaries(1, 50, 50, 100) == []
    assert even_boundaries(5, 5, 1, 100) == []


def test_even_boundaries_refuse_a_sparse_key() -> None:
    # 10 000 rows spread over a billion key values: even ranges would be mostly empty and a few full
    assert even_boundaries(1, 10**9, 10_000, 1000) is None


@settings(deadline=None)
@given(lo=st.integers(-(10**12), 10**12), span=st.integers(1, 10**6), chunk_rows=st.integers(50, 10**5))
def test_even_boundaries_cover_the_range_in_order(lo: int, span: int, chunk_rows: int) -> None:
    hi = lo + span - 1
    count = span  # fully dense
    bounds = even_boundaries(lo, hi, count, chunk_rows)
    assert bounds is not None
    assert bounds == sorted(set(bounds))
    assert all(lo <= b < hi for b in bounds)
    parts = _chunks_of(lo, hi, bounds)
    assert sum(b - a + 1 for a, b in parts) == span
    # no chunk much bigger than asked for
    assert max(b - a + 1 for a, b in parts) <= 2 * chunk_rows


# --- predicates -------------------------------------------------------------------------------------------------


def test_single_column_predicates() -> None:
    assert key_greater(["id"], (5,)) == "`id` > 5"
    assert key_at_most(["id"], (9,)) == "`id` <= 9"
    chunk = Chunk(0, "t", 0, (5,), (9,), 4)
    assert chunk_predicate(["id"], chunk) == "(`id` > 5) AND (`id` <= 9)"
    assert chunk_predicate(["id"], Chunk(0, "t", 0, None, None)) == "1"


def test_composite_predicates_expand_row_comparison() -> None:
    sql = key_greater(["a", "b"], (1, "x"), [None, "utf8mb4"])
    assert sql == "`a` >= 1 AND (`a` > 1 OR (`a` = 1 AND `b` > _utf8mb4 X'78'))"
    sql = key_at_most(["a", "b", "c"], (1, 2, 3))
    assert sql == "`a` <= 1 AND (`a` < 1 OR (`a` = 1 AND `b` <= 2 AND (`b` < 2 OR (`b` = 2 AND `c` <= 3))))"


def _row_greater(row: tuple[int, ...], bound: tuple[int, ...]) -> bool:
    """Evaluate key_greater's SQL shape in Python (same boolean structure)."""
    a, rest_row, v, rest_bound = row[0], row[1:], bound[0], bound[1:]
    if not rest_row:
        return a > v
    return a >= v and (a > v or (a == v and _row_greater(rest_row, rest_bound)))


@given(
    rows=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=30),
    bound=st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3)),
)
def test_expanded_comparison_is_tuple_order(rows: list[tuple[int, int, int]], bound: tuple[int, int, int]) -> None:
    for row in rows:
        assert _row_greater(row, bound) == (row > bound)


def test_sql_literals() -> None:
    assert sql_literal(None) == "NULL"
    assert sql_literal(-3) == "-3"
    assert sql_literal(decimal.Decimal("1.50")) == "1.50"
    assert sql_literal(b"\x00\xff") == "X'00ff'"
    assert sql_literal(b"") == "''"
    # strings: hex in the column's charset, so quotes, backslashes and NUL need no escaping in any sql_mode
    assert sql_literal("a'\\\0", "utf8mb4") == "_utf8mb4 X'61275c00'"
    assert sql_literal("é", "latin1") == "_latin1 X'e9'"
    assert sql_literal("é", "utf8mb3") == "_utf8 X'c3a9'"
    assert sql_literal("日本", "latin1") == "_utf8mb4 X'e697a5e69cac'"  # not representable: stays utf8mb4
    assert sql_literal("", "utf8mb4") == "_utf8mb4''"
    assert sql_literal(dt.date(2020, 1, 2)) == "'2020-01-02'"
    assert sql_literal(dt.datetime(2020, 1, 2, 3, 4, 5, 6)) == "'2020-01-02 03:04:05.000006'"
    assert sql_literal(dt.timedelta(hours=-1, microseconds=5)) == "'-00:59:59.999995'"
    assert sql_literal(dt.timedelta(hours=838)) == "'838:00:00.000000'"


key_values = st.one_of(
    st.integers(-(2**64), 2**64),
    st.text(),
    st.binary(),
    st.decimals(allow_nan=False, allow_infinity=False),
    st.dates(),
    st.datetimes(),
    st.timedeltas(),
)


@given(st.lists(key_values, min_size=1, max_size=4))
def test_key_values_survive_the_plan_json(values: list[object]) -> None:
    import json

    key = tuple(values)
    assert decode_key(json.loads(json.dumps(encode_key(key)))) == key


def test_plan_json_round_trip() -> None:
    plan = TablePlan(
        "t",
        ["a", "b"],
        "primary",
        "sampled",
        [Chunk(3, "t", 0, None, (1, "x"), 10), Chunk(4, "t", 1, (1, "x"), None, 7)],
    )
    again = TablePlan.from_json(plan.to_json())
    assert again == plan
    assert again.estimated_rows == 17


def test_parse_key_range() -> None:
    assert parse_key_range("10:20") == ("10", "20")
    assert parse_key_range(":20") == (None, "20")
    assert parse_key_range("a\\:b:") == ("a:b", None)
    with pytest.raises(ConfigurationError):
        parse_key_range("1:2:3")
    with pytest.raises(ConfigurationError):
        parse_key_range(":")


def test_balance_spreads_estimated_rows() -> None:
    chunks = [Chunk(i, "t", i, None, None, rows) for i, rows in enumerate([100, 10, 10, 10, 10, 10, 50, 50])]
    groups = balance(chunks, 3)
    assert sorted(c.ordinal for g in groups for c in g) == list(range(8))
    loads = sorted(sum(c.estimated_rows for c in g) for g in groups)
    assert loads == [70, 80, 100]  # largest first, each into the lightest group
    assert all(g == sorted(g, key=lambda c: c.ordinal) for g in groups)
    assert balance(chunks[:2], 5) == [[chunks[0]], [chunks[1]]]


def test_auto_chunk_rows() -> None:
    assert auto_chunk_rows(0, 2) == 10_000
    assert auto_chunk_rows(400_000, 2) == 50_000
    assert auto_chunk_rows(10**9, 8) == 250_000


def test_choose_key() -> None:
    from mybinlog.ddl import parse_create_table

    pk = parse_create_table("CREATE TABLE t (a INT, b INT, PRIMARY KEY (b, a))", "d")
    assert choose_key(pk) == (["b", "a"], "primary")
    uk = parse_create_table("CREATE TABLE t (a INT, b INT NOT NULL, UNIQUE KEY (a), UNIQUE KEY (b))", "d")
    assert choose_key(uk) == (["b"], "unique")  # the nullable unique key cannot chunk
    none = parse_create_table("CREATE TABLE t (a INT)", "d")
    assert choose_key(none) == ([], "none")


def test_copy_table_select() -> None:
    from mybinlog.ddl import parse_create_table

    definition = parse_create_table("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)", "d")
    table = CopyTable("t", definition, "`d`.`t`", "`c`.`t`", ("id",), (None,), ("v <> '%'",))
    assert table.select_sql(Chunk(0, "t", 0, None, (10,))) == (
        "SELECT `id`, `v` FROM `d`.`t` WHERE (`id` <= 10) AND (v <> '%')"
    )
    whole = CopyTable("t", definition, "`d`.`t`", "`c`.`t`", (), ())
    assert whole.select_sql(Chunk(0, "t", 0, None, None)) == "SELECT `id`, `v` FROM `d`.`t` WHERE 1"


def test_meta_suffix() -> None:
    assert meta_suffix(("_sign", "_version"), 7) == "\t1\t7\n"
    assert meta_suffix(("_sign", "_version", "_is_deleted"), 7) == "\t1\t7\t0\n"


# --- state ------------------------------------------------------------------------------------------------------


def _wm(offset: int, file: str = "binlog.000002") -> Watermark:
    return Watermark(file, offset)


def test_summarize_finished_partial_and_lowest_watermark() -> None:
    events = [
        ChunkEvent(0, "a1", "started", _wm(500), 0),
        ChunkEvent(0, "a1", "rows", None, 10),
        ChunkEvent(0, "a1", "done", _wm(500), 10),
        # chunk 1: an abandoned attempt (killed) with an early watermark, then a finished one
        ChunkEvent(1, "b1", "started", _wm(100), 0),
        ChunkEvent(1, "b1", "rows", None, 4),
        ChunkEvent(1, "b2", "started", _wm(900), 0),
        ChunkEvent(1, "b2", "rows", None, 6),
        ChunkEvent(1, "b2", "done", _wm(900), 6),
        # chunk 2: started in an older binlog file, not finished
        ChunkEvent(2, "c1", "started", _wm(99_999, "binlog.000001"), 0),
        ChunkEvent(2, "c1", "rows", None, 3),
    ]
    states = summarize(events)
    assert set(states.done) == {0, 1}
    assert states.done[1] == (6, _wm(900))
    assert states.partial_rows == {2: 3}
    assert states.rows_done == 19
    # the abandoned attempt's rows are in ClickHouse: the stream must start before all of them
    assert states.min_watermark == _wm(99_999, "binlog.000001")
    assert states.attempts == 4


def test_summarize_nothing() -> None:
    states = summarize([])
    assert states.min_watermark is None
    assert states.rows_done == 0


def test_spool_names_round_trip() -> None:
    assert parse_spool_name(spool_name(12, "abc", "tsv", 3, 500)) == (12, "abc", "tsv", 3, 500)
    assert parse_spool_name(spool_name(12, "abc", "started")) == (12, "abc", "started", 0, 0)
    assert parse_spool_name(spool_name(0, "abc", "done")) == (0, "abc", "done", 0, 0)
    assert parse_spool_name(".c0000012-abc-b000003-r5.tsv.123.tmp") is None
    assert parse_spool_name("other.txt") is None


def test_spool_directory_is_the_same_for_every_run_of_a_snapshot() -> None:
    default = Path(tempfile.gettempdir()) / f"mybinlog-spool-{os.getuid()}" / "shop-20261121T172103-85023e"
    assert _spool_directory(None, "shop-20261121T172103-85023e") == default
    assert _spool_directory("/shared/spool", "shop-1") == Path("/shared/spool/shop-1")
    for bad in ("../x", "a/b", "..", ".", ""):
        with pytest.raises(ConfigurationError, match="snapshot id"):
            _spool_directory(None, bad)
    with pytest.raises(ConfigurationError, match="snapshot id"):
        SnapshotOptions(source="mysql://u@h", database="d", snapshot_id="../../etc")


def test_default_spool_parent_must_be_private(tmp_path: Path) -> None:
    _make_spool(tmp_path / "mine" / "snap", default=True)
    assert stat.S_IMODE((tmp_path / "mine").stat().st_mode) == 0o700
    assert (tmp_path / "mine" / "snap").is_dir()
    _make_spool(tmp_path / "mine" / "snap", default=True)  # a resumed run: exists already
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(ConfigurationError, match="not a private directory"):
        _make_spool(shared / "snap", default=True)
    (tmp_path / "link").symlink_to(tmp_path / "mine")
    with pytest.raises(ConfigurationError, match="not a private directory"):
        _make_spool(tmp_path / "link" / "snap", default=True)
    _make_spool(shared / "snap", default=False)  # --spool-dir: the user's choice
    assert (shared / "snap").is_dir()


def test_normalize_create_ignores_auto_increment() -> None:
    a = "CREATE TABLE `t` (\n  `id` int NOT NULL AUTO_INCREMENT\n) ENGINE=InnoDB AUTO_INCREMENT=17 DEFAULT CHARSET=x"
    b = a.replace("AUTO_INCREMENT=17", "AUTO_INCREMENT=90")
    assert normalize_create(a) == normalize_create(b)
    assert normalize_create(a) != normalize_create(a.replace("int", "bigint"))
    assert "NOT NULL AUTO_INCREMENT" in normalize_create(a)  # the column attribute stays


# --- options, progress, CLI -------------------------------------------------------------------------------------


def test_collapsing_engine_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="collapsing"):
        SnapshotOptions(source="mysql://u@h", target="x", database="d", engine="collapsing")
    with pytest.raises(ConfigurationError, match="chunk_rows"):
        SnapshotOptions(source="mysql://u@h", target="x", database="d", chunk_rows=0)


def test_progress_line() -> None:
    p = SnapshotProgress("snap", 50_000, 200_000, 3, 10, 10.0, 5000.0, 30.0)
    assert p.line() == "snapshot snap: 50,000/~200,000 rows (25.0%), chunks 3/10, 5,000 rows/s, ETA 30s"
    assert "ETA ?" in SnapshotProgress("s", 0, 10, 0, 1, 1.0, 0.0, None).line()
    assert "ETA 1h01m" in SnapshotProgress("s", 1, 10, 0, 1, 1.0, 1.0, 3700).line()


def test_driver_stderr_without_spark_submit_is_pythons(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    fallback = io.StringIO()
    err = _DriverStderr(fallback)
    err.attach()  # no gateway to find outside spark-submit
    print("progress", file=err, flush=True)
    assert fallback.getvalue() == "progress\n"


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(argv)


def test_cli_options() -> None:
    args = _parse(
        "--source",
        "mysql://repl:pw@db:3306/shop",
        "--target",
        "http://ch:8123",
        "--tables",
        "a, b",
        "--key-range",
        "10:",
        "--resume",
        "--batch-mb",
        "8",
        "--parallelism",
        "3",
    )
    options, master = options_from_args(args)
    assert isinstance(options, SnapshotOptions)
    assert options.database == "shop"
    assert options.tables == ("a", "b")
    assert options.key_range == ("10", None)
    assert options.resume == "latest"
    assert options.batch_bytes == 8 << 20
    assert options.parallelism == 3
    assert master is None
    assert "pw" not in repr(options)


def test_cli_needs_a_database() -> None:
    with pytest.raises(ConfigurationError, match="database"):
        options_from_args(_parse("--source", "mysql://repl@db"))


def test_executor_url_gets_the_password_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MYBINLOG_CH_PASSWORD", "s3cr:t")
    assert _executor_target_url("http://ch:8123/?x=1") == "http://default:s3cr%3At@ch:8123/?x=1"
    assert _executor_target_url("http://u:given@ch:8123") == "http://u:given@ch:8123"
    assert _executor_target_url("chdb:///data") == "chdb:///data"
    monkeypatch.delenv("MYBINLOG_CH_PASSWORD")
    assert _executor_target_url("http://ch:8123") == "http://ch:8123"


def test_spark_error_names_the_python_exception() -> None:
    text = (
        "An error occurred while calling o53.collectAndServe.\n: org.apache.spark.SparkException: Job aborted\n"
        'Traceback (most recent call last):\n  File "x.py", line 1\n'
        "mybinlog.errors.SourceConnectionError: db:3306: connection refused\n\tat org.apache..."
    )
    err = _spark_error(RuntimeError(text), "snap1")
    assert "SourceConnectionError: db:3306: connection refused" in str(err)
    assert "--resume snap1" in str(err)


def test_importing_the_package_does_not_import_spark() -> None:
    import subprocess
    import sys

    code = (
        "import sys, mybinlog.snapshot, mybinlog.cli._snapshot; "
        "print(sorted(m for m in ('pyspark', 'chdb', 'aiochclient') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_mybinlog_snapshot_subcommand() -> None:
    from mybinlog.cli._main import _build_parser

    args = _build_parser().parse_args(
        ["snapshot", "--source", "mysql://u@h/db", "--target", "chdb:///x", "--master", "local[3]", "--json"]
    )
    assert args.command == "snapshot"
    assert args.func.__module__ == "mybinlog.cli._snapshot"
    options, master = options_from_args(args)
    assert isinstance(options, SnapshotOptions)
    assert (options.database, options.target, master) == ("db", "chdb:///x", "local[3]")


def test_run_snapshot_needs_the_server_url_for_executors() -> None:
    import asyncio

    from mybinlog.snapshot import run_snapshot

    class FakeTarget:
        kind = "http"

    options = SnapshotOptions(source="mysql://u@h", database="d")
    with pytest.raises(ConfigurationError, match="executors"):
        asyncio.run(run_snapshot(options, spark=object(), target=FakeTarget()))  # type: ignore[arg-type]


def test_progress_counts_rows_read_between_inserts() -> None:
    """``read`` events (an attempt's rows read so far) count for chunks not finished, so progress moves with the
    rows, not per inserted batch or per chunk; a finished chunk counts its done rows."""
    from mybinlog.snapshot._source import Watermark
    from mybinlog.snapshot._state import ChunkEvent, summarize

    wm = Watermark("binlog.000001", 100, None)
    events = [
        ChunkEvent(0, "a", "started", wm, 0),
        ChunkEvent(0, "a", "read", None, 10_000),
        ChunkEvent(0, "a", "read", None, 30_000),
        ChunkEvent(0, "a", "rows", None, 25_000),
        ChunkEvent(1, "b", "started", wm, 0),
        ChunkEvent(1, "b", "read", None, 5_000),
        ChunkEvent(1, "b", "rows", None, 8_000),
        ChunkEvent(1, "b", "done", wm, 8_000),
    ]
    states = summarize(events)
    assert states.partial_rows == {0: 30_000}
    assert states.rows_done == 38_000


def test_initial_load_progress_lines(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from mybinlog.replication._observe import _LoadProgress

    progress = _LoadProgress("shop", 2, 1_000, interval=0)
    with caplog.at_level(logging.INFO, logger="mybinlog.progress"):
        progress.update(500, "orders")
        progress.finish(1_200)
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0].startswith("shop: initial load 500/~1,000 rows (50%) of 2 tables, now orders, ")
    assert "ETA " in lines[0]
    assert lines[1].startswith("shop: initial load done: 1,200 rows of 2 tables in ")


class _FakeAccumulatorServer:
    def __init__(self) -> None:
        import threading

        self.server_shutdown = False
        self.shut = threading.Event()

    def shutdown(self) -> None:
        assert self.server_shutdown, "told to stop polling before shutdown() waits for it"
        self.shut.set()

    def handle_error(self, request: object, client_address: object) -> None:  # socketserver's: prints a traceback
        raise AssertionError("the EOF of a JVM hanging up during the shutdown would be printed")


class _FakeContext:
    def __init__(self, server: _FakeAccumulatorServer | None) -> None:
        self._accumulatorServer = server
        self.stopped_with: list[object] = []

    def stop(self) -> None:  # what SparkContext.stop() waits on: a server still set here
        self.stopped_with.append(self._accumulatorServer)


class _FakeSession:
    def __init__(self, context: _FakeContext) -> None:
        self.sparkContext = context

    def stop(self) -> None:
        self.sparkContext.stop()


@pytest.mark.parametrize("session", [False, True])
def test_spark_stop_does_not_wait_for_the_accumulator_server(session: bool) -> None:
    """The snapshot stops the Spark it started with the accumulator server taken out of SparkContext.stop()'s
    way (that wait is up to a second of every command) and shut down in a thread of its own."""
    from mybinlog.snapshot._spark import _stop_spark_context

    server = _FakeAccumulatorServer()
    context = _FakeContext(server)
    _stop_spark_context(_FakeSession(context) if session else context)
    assert context.stopped_with == [None]  # stopped once, without the server to wait for
    assert server.server_shutdown
    assert server.shut.wait(timeout=30)  # and the server was still shut down
    server.handle_error(None, ("127.0.0.1", 1))  # quiet now


def test_spark_stop_without_a_known_accumulator_server_is_a_plain_stop() -> None:
    from mybinlog.snapshot._spark import _stop_spark_context

    context = _FakeContext(None)
    _stop_spark_context(context)
    assert context.stopped_with == [None]


# --- the driver JVM's class archive ------------------------------------------------------------------------------


@pytest.fixture
def archive_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    try:
        import pyspark  # noqa: F401 - part of the test extra; the archive's key names its version
    except ImportError:
        skip_or_fail("pyspark is not installed: run `bash scripts/setup.sh --test`")
    from mybinlog.snapshot import _spark

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("MYBINLOG_SPARK_JAVA_OPTIONS", raising=False)
    monkeypatch.delenv("MYBINLOG_SPARK_CLASS_ARCHIVE", raising=False)
    monkeypatch.delenv("SPARK_LAUNCHER_OPTS", raising=False)
    monkeypatch.setattr(_spark, "_class_archive_pending", None)
    return tmp_path / "mybinlog" / "spark-class-archive"


def test_first_local_context_writes_the_class_archive_then_later_ones_map_it(archive_env: Path) -> None:
    from mybinlog.snapshot import _spark

    options = _spark._spark_settings("local[2]", "x", False, class_archive=True)["spark.driver.extraJavaOptions"]
    assert options.startswith(_spark.LOCAL_JAVA_OPTIONS)
    pending = _spark._class_archive_pending
    assert pending is not None
    assert pending.writing is not None
    assert pending.writing.parent == archive_env
    assert f"-XX:ArchiveClassesAtExit={pending.writing} " in options
    assert "-Xlog:cds=off" in options  # the dump's warnings stay out of the command's output
    assert os.environ["SPARK_LAUNCHER_OPTS"] == _spark.LOCAL_JAVA_OPTIONS  # the launcher's JVM writes no archive
    assert stat.S_IMODE(archive_env.stat().st_mode) == 0o700

    published = pending.published(7)
    published.write_bytes(b"archive")  # published by an earlier command: 7 bytes, as its name says
    _spark._class_archive_pending = None
    options = _spark._spark_settings("local[2]", "x", False, class_archive=True)["spark.driver.extraJavaOptions"]
    assert f"-XX:SharedArchiveFile={published} " in options
    assert "ArchiveClassesAtExit" not in options
    assert _spark._class_archive_pending is None


@pytest.mark.parametrize(
    ("env", "master", "class_archive"),
    [
        ({"MYBINLOG_SPARK_CLASS_ARCHIVE": "0"}, "local[2]", True),
        ({"MYBINLOG_SPARK_JAVA_OPTIONS": "-Xmx1g"}, "local[2]", True),  # the user's options, exactly
        ({}, "local[2]", False),  # spark_session(): a session the caller stops, whose JVM nobody waits for
        ({}, "spark://cluster:7077", True),
        ({}, None, True),  # spark-submit's own settings
    ],
)
def test_no_class_archive(
    archive_env: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], master: str | None, class_archive: bool
) -> None:
    from mybinlog.snapshot import _spark

    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = _spark._spark_settings(master, "x", False, class_archive=class_archive)
    options = settings.get("spark.driver.extraJavaOptions", "")
    assert "Archive" not in options
    if "MYBINLOG_SPARK_JAVA_OPTIONS" in env:
        assert options == "-Xmx1g"
    assert _spark._class_archive_pending is None
    assert not archive_env.exists() or not any(archive_env.iterdir())


def test_stale_temporary_archives_are_removed(archive_env: Path) -> None:
    from mybinlog.snapshot import _spark

    archive_env.mkdir(parents=True)
    stale, fresh = archive_env / "k.1.a.tmp", archive_env / "k.2.b.tmp"
    stale.write_bytes(b"x")
    fresh.write_bytes(b"x")
    old = time.time() - 2 * _spark._ARCHIVE_STALE_SECONDS
    os.utime(stale, (old, old))
    assert _spark._class_archive() is not None
    assert not stale.exists()
    assert fresh.exists()  # maybe still being written by another command's JVM


class _FakeProc:
    def __init__(self, code: int, writes: Path | None) -> None:
        self.stdin = io.BytesIO()
        self.code, self.writes = code, writes

    def wait(self, timeout: float | None = None) -> int:
        assert self.stdin.closed, "the JVM exits when its standard input closes"
        if self.writes is not None:
            self.writes.write_bytes(b"archive")
        return self.code


@pytest.mark.parametrize("code", [0, 1])
def test_the_archive_is_published_only_after_a_clean_jvm_exit(archive_env: Path, code: int) -> None:
    from mybinlog.snapshot import _spark

    archive_env.mkdir(parents=True)
    archive = _spark._ClassArchive(archive_env, "k", writing=archive_env / "k.1.x.tmp")
    _spark._class_archive_pending = archive

    class Context:
        _gateway: object = type("Gateway", (), {})()
        _jvm: object = object()

    Context._gateway.proc = _FakeProc(code, archive.writing)  # type: ignore[attr-defined]
    _spark._publish_class_archive(Context())
    assert archive.writing is not None
    assert not archive.writing.exists()
    # a JVM that failed may have left half an archive: never mapped; a complete one is named with its size
    assert sorted(p.name for p in archive_env.iterdir()) == (["k.7.jsa"] if code == 0 else [])
    assert Context._gateway is None  # pyspark starts a new JVM for the next context
    assert Context._jvm is None
    assert _spark._class_archive_pending is None


def test_no_home_directory_means_no_class_archive(archive_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mybinlog.snapshot import _spark

    monkeypatch.delenv("XDG_CACHE_HOME")

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert _spark._class_archive() is None
    options = _spark._spark_settings("local[2]", "x", False, class_archive=True)["spark.driver.extraJavaOptions"]
    assert options == _spark.LOCAL_JAVA_OPTIONS


def test_an_archive_whose_size_is_not_its_published_size_is_not_mapped(archive_env: Path) -> None:
    """A JVM mapping a cut archive crashes (SIGBUS): an archive is used only at the size it was published with;
    others of the same key are deleted, and the JVM writes a new one."""
    from mybinlog.snapshot import _spark

    first = _spark._class_archive()
    assert first is not None
    assert first.writing is not None
    cut = first.published(1000)
    cut.write_bytes(b"x" * 500)
    again = _spark._class_archive()
    assert again is not None
    assert again.use is None
    assert again.writing is not None
    assert not cut.exists()
    whole = first.published(3)
    whole.write_bytes(b"abc")
    found = _spark._class_archive()
    assert found is not None
    assert found.use == whole
