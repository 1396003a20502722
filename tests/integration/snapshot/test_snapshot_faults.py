"""The snapshot under real faults: SIGKILLed jobs, a DDL in between, a new initial load over what a killed one left.

* ``spark-submit`` into embedded ClickHouse (chdb), killed while two chunks are half-copied, then resumed by a
  second ``spark-submit``: the spool directory is the same path for both runs and is gone when the snapshot
  finishes; stdout holds only the JSON result (progress, logs and errors go to spark-submit's stderr).
* ``mybinlog snapshot`` into a ClickHouse server, killed half-way; the source then gets a DDL, updates and deletes;
  a new initial snapshot (no --resume, no --recreate) drops and recreates the tables the killed one left, and
  ``mybinlog replicate --once`` makes the replica equal to the source, compared row by row. Tables holding rows
  that no unfinished snapshot of the replica wrote are still refused.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import skip_or_fail
from tests.live import (
    REPO,
    catch_up,
    ch_rows,
    mysql_rows,
    populate_extra,
    require_spark,
    snapshot_meta_exists,
    snapshot_options,
    spark_env,
    verify_replica,
    wait_mutations,
)
from tests.servers import REPL_PASSWORD, MariaDBServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

JOB = REPO / "mybinlog" / "snapshot" / "job.py"
PROGRESS = re.compile(r"snapshot (\S+): ([\d,]+)/~[\d,]+ rows \([^)]*\), chunks (\d+)/(\d+)")


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """One local Spark session for this module (local[2], no UI)."""
    require_spark()
    from mybinlog.snapshot import spark_session

    session = spark_session("local[2]")
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


def _spark_submit() -> Path:
    require_spark()
    path = Path(sys.executable).with_name("spark-submit")
    if not path.exists():
        skip_or_fail(f"spark-submit not found next to {sys.executable} (pyspark installs it)")
    return path


def _text(value: Any) -> str:
    """A value as text, the same for MariaDB's Python values and ClickHouse's text results."""
    return "NULL" if value is None else str(value)


async def _same_rows(server: MariaDBServer, db: str, target_url: str, table: str, columns: list[str]) -> int:
    """Compare the table row by row (every column, as text) with its replica's alive rows; returns the row count."""
    cols = ", ".join(f"`{c}`" for c in columns)
    source = sorted(tuple(_text(v) for v in row) for row in mysql_rows(server, db, f"SELECT {cols} FROM `{table}`"))
    replica = sorted(
        tuple(_text(v) for v in row)
        for row in await ch_rows(target_url, f"SELECT {cols} FROM `{db}`.`{table}` FINAL WHERE _sign = 1")
    )
    assert len(replica) == len(source)
    missing = sorted(set(source) - set(replica))[:5]
    extra = sorted(set(replica) - set(source))[:5]
    assert replica == source, f"{table}: missing {missing}, extra {extra}"
    return len(source)


def _execute(server: MariaDBServer, db: str, *statements: str) -> None:
    conn = server.connect(database=db)
    try:
        with conn.cursor() as cur:
            for sql in statements:
                cur.execute(sql)
        conn.commit()
    finally:
        conn.close()


def _last_progress(text: str, snapshot_id: str) -> tuple[int, int]:
    """(rows done, chunks done) of the last progress line of ``snapshot_id`` in ``text`` ((0, 0) before any)."""
    found = [m for m in PROGRESS.finditer(text) if m.group(1) == f"{snapshot_id}"]
    if not found:
        return 0, 0
    return int(found[-1].group(2).replace(",", "")), int(found[-1].group(3))


def _kill(proc: subprocess.Popen[bytes]) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)


# --- spark-submit into chdb: the spool directory, stdout and stderr --------------------------------------------


async def test_spark_submit_into_chdb_killed_then_resumed_reuses_its_spool(
    server: MariaDBServer, db: str, db_conn: Any, tmp_path: Path
) -> None:
    spark_submit = _spark_submit()
    populate_extra(db_conn, "big", list(range(1, 4001)))  # 8 chunks of 500 rows
    chdb_dir = tmp_path / "ch"
    tmp = tmp_path / "tmp"  # the jobs' temporary directory (TMPDIR)
    tmp.mkdir()
    env = {**spark_env(), "TMPDIR": str(tmp)}
    snapshot_id = f"{db}-spool"
    spool = tmp / f"mybinlog-spool-{os.getuid()}" / snapshot_id

    def command(source: str, *extra: str) -> list[str]:
        return [
            str(spark_submit),
            "--master",
            "local[2]",
            "--conf",
            "spark.ui.enabled=false",
            str(JOB),
            "--source",
            source,
            "--target",
            f"chdb://{chdb_dir}",
            "--database",
            db,
            "--json",
            "-v",
            "--progress-interval",
            "0.3",
            *extra,
        ]

    # a failing run: its error on stderr, nothing on stdout, exit code 1
    wrong = server.repl_dsn.replace(REPL_PASSWORD, "not-the-password")
    assert wrong != server.repl_dsn
    failed = await asyncio.to_thread(
        subprocess.run, command(wrong), capture_output=True, env=env, cwd=tmp_path, timeout=600
    )
    failed_err = failed.stderr.decode(errors="replace")
    assert failed.returncode == 1, failed_err[-3000:]
    assert failed.stdout == b"", failed.stdout[-3000:]
    assert "mybinlog snapshot: error: " in failed_err
    assert "Access denied" in failed_err
    assert "not-the-password" not in failed_err

    # the snapshot, killed while chunks 2 and 3 have loaded their first batch and hold
    hold = tmp_path / "hold"
    hold.touch()
    out_path, err_path = tmp_path / "killed.out", tmp_path / "killed.err"
    proc = None
    try:
        with out_path.open("wb") as out_file, err_path.open("wb") as err_file:
            proc = subprocess.Popen(  # noqa: ASYNC220 - a long-running child, polled below
                command(
                    server.repl_dsn,
                    "--snapshot-id",
                    snapshot_id,
                    "--chunk-rows",
                    "500",
                    "--batch-rows",
                    "200",
                    "--test-hold",
                    f"2:{hold}",
                ),
                stdout=out_file,
                stderr=err_file,
                env=env,
                start_new_session=True,
                cwd=tmp_path,
            )
        deadline = time.monotonic() + 300
        while proc.poll() is None and time.monotonic() < deadline:
            rows, chunks = _last_progress(err_path.read_text(errors="replace"), snapshot_id)
            if chunks >= 2 and rows >= 4 * 500:  # a chunk's first batch is all of it (fetched at once)
                break
            await asyncio.sleep(0.1)  # polling the job's progress lines
        assert proc.poll() is None, err_path.read_text(errors="replace")[-3000:]
        assert _last_progress(err_path.read_text(errors="replace"), snapshot_id) == (2000, 2)
        _kill(proc)
    finally:
        if proc is not None and proc.poll() is None:
            _kill(proc)
    killed_err = err_path.read_text(errors="replace")
    assert out_path.read_text(errors="replace") == ""  # progress and logs went to stderr
    assert f"executors spool their batches in {spool}\n" in killed_err
    assert spool.is_dir()
    leftover = spool / "left-by-the-killed-run"
    leftover.write_text("a file the resumed run must clear")
    _execute(
        server,
        db,
        "UPDATE big SET n = n + 100 WHERE id % 10 = 0",
        "DELETE FROM big WHERE id % 13 = 0",
        "INSERT INTO big (id, n, pad) VALUES (5000, 1, 'new')",
    )

    # --resume in a new spark-submit: the same spool directory, removed at the end; stdout is the JSON result
    resumed = await asyncio.to_thread(
        subprocess.run,
        command(server.repl_dsn, "--resume", snapshot_id),
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    resumed_err = resumed.stderr.decode(errors="replace")
    assert resumed.returncode == 0, resumed_err[-3000:]
    result = json.loads(resumed.stdout)
    assert result["snapshot_id"] == snapshot_id
    assert result["chunks"] == 8
    assert result["chunks_skipped"] == 2
    assert result["checkpoint_saved"] is True
    assert f"snapshot {snapshot_id}: " in resumed_err  # progress lines
    # the first line of the command comes before Spark's start; the final progress line (every chunk) comes once
    mine = [line for line in resumed_err.splitlines() if line.startswith("snapshot ")]
    assert "starting Spark" in mine[0], mine[:3]
    assert len([m for m in PROGRESS.finditer(resumed_err) if m.group(3) == m.group(4) == "8"]) == 1, mine
    assert f"executors spool their batches in {spool}\n" in resumed_err
    # Spark was stopped without pyspark's accumulator-server wait, and nothing complained about it
    assert "Traceback" not in resumed_err, resumed_err[-3000:]
    assert "Exception in thread" not in resumed_err, resumed_err[-3000:]
    assert not leftover.exists()
    assert not spool.exists()

    url = str(chdb_dir)
    await catch_up(server.repl_dsn, url, db)
    assert await _same_rows(server, db, url, "big", ["id", "n", "pad"]) > 3000
    report = await verify_replica(server.repl_dsn, url, db)
    assert report.equal, report.render_text()


# --- a new initial snapshot over what a killed one left ----------------------------------------------------------


async def test_new_initial_snapshot_replaces_what_a_killed_one_left(
    spark: Any,
    server: MariaDBServer,
    db: str,
    db_conn: Any,
    clickhouse_server: Any,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from mybinlog import SnapshotError
    from mybinlog.clickhouse import load_checkpoint, open_target
    from mybinlog.snapshot import run_snapshot
    from mybinlog.snapshot._state import StateStore

    populate_extra(db_conn, "big", list(range(1, 3001)))  # chunks 0-5
    populate_extra(db_conn, "small", list(range(1, 201)))  # chunk 6: never reached by the killed run
    url = clickhouse_server.url()
    killed_id = f"{db}-killed"
    hold = tmp_path / "hold"
    hold.touch()
    err_path = tmp_path / "killed.err"
    proc = None
    try:
        with err_path.open("wb") as err_file:
            proc = subprocess.Popen(  # noqa: ASYNC220 - a long-running child, polled below
                [
                    sys.executable,
                    "-m",
                    "mybinlog",
                    "snapshot",
                    "--master",
                    "local[2]",
                    "--source",
                    server.repl_dsn,
                    "--target",
                    url,
                    "--database",
                    db,
                    "--chunk-rows",
                    "500",
                    "--batch-rows",
                    "200",
                    "--snapshot-id",
                    killed_id,
                    "--test-hold",
                    f"2:{hold}",
                ],
                stdout=subprocess.DEVNULL,
                stderr=err_file,
                env=spark_env(),
                start_new_session=True,
                cwd=tmp_path,
            )
        deadline = time.monotonic() + 300
        while proc.poll() is None and time.monotonic() < deadline:
            if await snapshot_meta_exists(url):
                rows = await ch_rows(
                    url,
                    "SELECT countIf(event = 'done'), uniqExactIf(chunk, event = 'rows' AND chunk >= 2) "
                    f"FROM mybinlog_meta.snapshot_chunks WHERE snapshot_id = '{killed_id}'",
                )
                if int(rows[0][0] or 0) >= 2 and int(rows[0][1] or 0) >= 2:
                    break
            await asyncio.sleep(0.05)  # polling the job's recorded state
        assert proc.poll() is None, err_path.read_text(errors="replace")[-3000:]
        _kill(proc)
    finally:
        if proc is not None and proc.poll() is None:
            _kill(proc)
    left = await ch_rows(url, f"SELECT count() FROM `{db}`.big")
    assert 1000 < int(left[0][0] or 0) < 3000  # the killed run left part of big, nothing of small
    assert await ch_rows(url, f"SELECT count() FROM `{db}`.small") == [["0"]]

    # the source changes shape and rows; the killed snapshot can no longer be resumed
    _execute(
        server,
        db,
        "ALTER TABLE big ADD COLUMN extra INT",
        "ALTER TABLE small ADD COLUMN extra VARCHAR(10) NOT NULL DEFAULT 'x'",
        "UPDATE big SET extra = id % 3, n = n + 1 WHERE id % 7 = 0",
        "DELETE FROM big WHERE id % 11 = 0",
        "UPDATE small SET extra = 'y' WHERE id % 2 = 0",
        "DELETE FROM small WHERE id % 5 = 0",
    )
    with pytest.raises(SnapshotError, match="changed since the snapshot started"):
        await run_snapshot(
            snapshot_options(source=server.repl_dsn, target=url, database=db, resume=killed_id), spark=spark
        )

    # refused: another replica has no unfinished snapshot that wrote these rows
    with pytest.raises(SnapshotError, match=rf"{db}\.big already holds rows"):
        await run_snapshot(
            snapshot_options(source=server.repl_dsn, target=url, database=db, replica=f"{db}_other"),
            spark=spark,
        )
    # refused: a row the killed snapshot did not write (a streamed row's version)
    clickhouse_server.execute(
        f"INSERT INTO `{db}`.big (id, n, pad, _sign, _version) VALUES (999999, 0, 'not from the snapshot', 1, 2)"
    )
    with pytest.raises(SnapshotError, match=rf"{db}\.big already holds rows"):
        await run_snapshot(snapshot_options(source=server.repl_dsn, target=url, database=db), spark=spark)
    clickhouse_server.execute(f"ALTER TABLE `{db}`.big DELETE WHERE id = 999999")
    await wait_mutations(url, db)

    # a new initial snapshot: no --resume, no --recreate
    with caplog.at_level(logging.WARNING, logger="mybinlog.snapshot"):
        result = await run_snapshot(
            snapshot_options(source=server.repl_dsn, target=url, database=db, chunk_rows=700), spark=spark
        )
    assert result.kind == "initial"
    assert result.checkpoint_saved
    assert result.chunks_skipped == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(f"{db}.big, {db}.small" in m and killed_id in m for m in warnings), warnings

    target = await open_target(url)
    try:
        killed = await StateStore(target, "mybinlog_meta", killed_id).load()
        assert killed is not None
        assert killed["status"] == "superseded"
        assert killed["superseded_by"] == result.snapshot_id
        cp = await load_checkpoint(target, db)
        assert cp is not None
        assert cp.position == result.position
    finally:
        await target.aclose()
    with pytest.raises(SnapshotError, match="cannot be resumed"):
        await run_snapshot(
            snapshot_options(source=server.repl_dsn, target=url, database=db, resume=killed_id), spark=spark
        )

    # the stream takes over: more changes, then `mybinlog replicate --once` in a child process
    _execute(
        server,
        db,
        "UPDATE big SET extra = 7, pad = 'later' WHERE id BETWEEN 100 AND 160",
        "DELETE FROM big WHERE id BETWEEN 2900 AND 2950",
        "INSERT INTO big (id, n, pad, extra) VALUES (4000, 4, 'new', 4)",
        "UPDATE small SET id = id + 1000 WHERE id = 3",
    )
    replicate = await asyncio.to_thread(
        subprocess.run,
        [
            sys.executable,
            "-m",
            "mybinlog",
            "replicate",
            "--source",
            server.repl_dsn,
            "--target",
            url,
            "--database",
            db,
            "--once",
        ],
        capture_output=True,
        env=spark_env(),
        cwd=tmp_path,
        timeout=300,
    )
    assert replicate.returncode == 0, replicate.stderr.decode(errors="replace")[-3000:]
    assert await _same_rows(server, db, url, "big", ["id", "n", "pad", "extra"]) > 2500
    assert await _same_rows(server, db, url, "small", ["id", "n", "pad", "extra"]) > 100
    report = await verify_replica(server.repl_dsn, url, db)
    assert report.equal, report.render_text()
    clickhouse_server.execute(f"DROP DATABASE IF EXISTS `{db}`")


# --- one writer per replica: the snapshot and replicate share the replica's lock ---------------------------------


async def test_a_killed_replicate_load_is_replaced_and_snapshot_and_replicate_exclude_each_other(
    spark: Any, fresh_server: MariaDBServer, clickhouse_server: Any, tmp_path: Path
) -> None:
    """``replicate``'s built-in initial load is SIGKILLed half-way (a fail point): an initial snapshot of the same
    replica then replaces what it wrote (the checkpoint said it was loading). While that snapshot runs (held
    half-way), a ``replicate`` of the replica is refused (exit 4: the replica's lock on the source); afterwards it
    continues from the snapshot's checkpoint, and the replica is equal row by row."""
    from mybinlog.snapshot import run_snapshot
    from tests.compare import assert_replica_equal
    from tests.faults import ReplicateProcess, create_tables, source_dsn, target_for, write

    server = fresh_server
    server.create_database("lk")
    create_tables(server, "lk", filler=30_000)
    url, env = target_for("server", clickhouse_server, tmp_path)
    load = f"lk_load_{server.flavor}"  # both flavours share the session's ClickHouse server
    held = f"lk-held-{server.flavor}"
    args = ("--target-database", load, "--replica", load)
    with ReplicateProcess(
        source_dsn(server), server.repl_password, url, "lk", *args, env=env, failpoints="load.after_rows=2"
    ) as rep:
        assert rep.wait_exit() == -9, rep.tail()
    (count,) = (await ch_rows(clickhouse_server.url(), "SELECT count() FROM " + load + ".t1"))[0]
    assert int(count or 0) > 0  # the killed load left rows behind
    write(server, "lk", 1, 5)
    hold = tmp_path / "hold"
    hold.touch()
    job = asyncio.create_task(
        run_snapshot(
            snapshot_options(
                source=server.repl_dsn,
                target=clickhouse_server.url(),
                database="lk",
                target_database=load,
                replica=load,
                chunk_rows=5_000,
                batch_rows=1_000,
                hold=(1, str(hold)),
                snapshot_id=held,
            ),
            spark=spark,
        )
    )
    try:
        for _ in range(6000):  # until the snapshot is copying (it holds the replica's lock by then)
            assert not job.done(), job.result()
            if await snapshot_meta_exists(clickhouse_server.url()):
                rows = await ch_rows(
                    clickhouse_server.url(),
                    "SELECT count() FROM mybinlog_meta.snapshot_chunks "
                    f"WHERE snapshot_id = '{held}' AND event = 'rows'",
                )
                if int(rows[0][0] or 0) >= 1:
                    break
            await asyncio.sleep(0.05)  # polling the job's recorded state
        with ReplicateProcess(source_dsn(server), server.repl_password, url, "lk", *args, "--once", env=env) as rep:
            assert await asyncio.to_thread(rep.wait_exit) == 4, rep.tail()
        assert "is already being written by another mybinlog process" in rep.log
    finally:
        hold.unlink()
        result = await job
    assert result.checkpoint_saved
    write(server, "lk", 10, 5)
    with ReplicateProcess(source_dsn(server), server.repl_password, url, "lk", *args, "--once", env=env) as rep:
        assert await asyncio.to_thread(rep.wait_exit) == 0, rep.tail()
    await assert_replica_equal(server, "lk", clickhouse_server.url(), target_database=load)
