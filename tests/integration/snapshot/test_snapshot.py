"""The Spark snapshot against real servers: a concurrent writer, then streaming, then ``verify`` must say equal.

Spark is slow to start (10-20 s), so the tests share one local SparkSession (``local[2]``, module scope) and one
test runs the job through a real ``spark-submit`` child process -- which it kills half-way, after which the job is
resumed in-process. The writer runs the randomized workload of ``tests/workload.py`` (every column type, updates,
deletes, multi-row statements) plus key-moving updates, in real transactions, while the chunks are read.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import skip_or_fail
from tests.live import (
    catch_up,
    ch_rows,
    mysql_rows,
    open_target_,
    populate_extra,
    require_spark,
    snapshot_meta_exists,
    snapshot_options,
    spark_env,
    verify_replica,
    wait_mutations,
)
from tests.live import spark as spark
from tests.servers import MariaDBServer
from tests.workload import Workload

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[3]


# --- fixtures and helpers -----------------------------------------------------------------------------------


class Writer(threading.Thread):
    """Writes until stopped: the workload's transactions (``tables``) and, on ``extra`` tables with an integer
    ``id`` key and an integer ``n`` column, inserts, updates, deletes and updates that move a row to another key
    (possibly into another chunk)."""

    def __init__(
        self, server: MariaDBServer, db: str, workload: Workload | None, extra: dict[str, int], seed: int
    ) -> None:
        super().__init__(daemon=True)
        self.server, self.db, self.workload = server, db, workload
        self.extra = extra  # table -> upper bound of ids
        self.rng = random.Random(seed)
        self.stop_flag = threading.Event()
        self.error: BaseException | None = None
        self.transactions = 0

    def _extra_txn(self, cur: Any) -> None:
        table = self.rng.choice(sorted(self.extra))
        top = self.extra[table]
        for _ in range(self.rng.randint(1, 4)):
            op = self.rng.random()
            a = self.rng.randint(1, top)
            if op < 0.35:
                cur.execute(f"INSERT IGNORE INTO `{table}` (id, n) VALUES (%s, %s)", (a, self.rng.randint(0, 9)))
            elif op < 0.6:
                cur.execute(f"UPDATE `{table}` SET n = n + 1 WHERE id BETWEEN %s AND %s", (a, a + 40))
            elif op < 0.8:
                cur.execute(f"DELETE FROM `{table}` WHERE id = %s", (a,))
            else:  # move a row to another key
                cur.execute(f"UPDATE IGNORE `{table}` SET id = %s WHERE id = %s", (self.rng.randint(1, top), a))

    def run(self) -> None:
        conn = self.server.connect(database=self.db)
        try:
            while not self.stop_flag.is_set():
                if self.workload is not None and self.rng.random() < 0.5:
                    self.workload.run(conn, self.db, n_transactions=1, statements_per_txn=3, ddl_every=0)
                elif self.extra:
                    conn.begin()
                    with conn.cursor() as cur:
                        self._extra_txn(cur)
                    conn.commit()
                self.transactions += 1
                self.stop_flag.wait(0.002)  # a rate limit (about 300 transactions/s), not synchronisation
        except BaseException as exc:  # reported by finish()
            self.error = exc
        finally:
            conn.close()

    def wait_for(self, transactions: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while self.transactions < transactions and time.monotonic() < deadline and self.error is None:
            self.stop_flag.wait(0.01)  # polls the writer's counter
        assert self.error is None, self.error
        assert self.transactions >= transactions, "the writer is stuck"

    def finish(self) -> None:
        self.stop_flag.set()
        self.join(timeout=120)
        assert not self.is_alive(), "writer did not stop"
        if self.error is not None:
            raise self.error


async def _independent_check(server: MariaDBServer, db: str, target_url: str, table: str) -> None:
    """Counts and sums of the key and an integer column, read separately from both sides."""
    ((count, ids, ns),) = mysql_rows(
        server, db, f"SELECT COUNT(*), COALESCE(SUM(id), 0), COALESCE(SUM(n), 0) FROM `{table}`"
    )
    rows = await ch_rows(target_url, f"SELECT count(), sum(id), sum(n) FROM `{db}`.`{table}` FINAL WHERE _sign = 1")
    assert [int(x or 0) for x in rows[0]] == [int(count), int(ids), int(ns)]


# --- tests ----------------------------------------------------------------------------------------------------


async def test_snapshot_with_concurrent_writer_then_stream_is_equal(
    spark: Any, server: MariaDBServer, db: str, db_conn: Any, clickhouse_server: Any
) -> None:
    """Integer keys (dense: even ranges; sparse and skewed: sampled), every column type, a composite key and a
    table without key, on a ClickHouse server written by the executors; then a backfill of a key range while
    the stream runs, repairing rows removed from the replica behind the replicator's back."""
    from mybinlog.clickhouse import load_checkpoint, open_target
    from mybinlog.replication import Replicator
    from mybinlog.snapshot import run_snapshot

    workload = Workload(seed=11, large_values=False)
    workload.run(db_conn, db, n_transactions=40, statements_per_txn=8, ddl_every=0, max_rows_per_statement=12)
    populate_extra(db_conn, "dense", list(range(1, 2001)))
    rng = random.Random(3)
    sparse = sorted({*range(1, 300), *(rng.randrange(10**6, 10**12) for _ in range(1000))})
    populate_extra(db_conn, "sparse", sparse, "BIGINT UNSIGNED")
    url = clickhouse_server.url()
    writer = Writer(server, db, workload, {"dense": 2500, "sparse": 10**6}, seed=5)
    writer.start()
    try:
        writer.wait_for(20)
        before = writer.transactions
        progress: list[Any] = []
        result = await run_snapshot(
            snapshot_options(source=server.repl_dsn, target=url, database=db, chunk_rows=250),
            spark=spark,
            on_progress=progress.append,
        )
        during = writer.transactions - before
        assert result.kind == "initial"
        assert result.checkpoint_saved
        assert result.chunks >= 15
        assert result.chunks_skipped == 0
        assert progress
        assert progress[-1].chunks_done == result.chunks
        assert result.rows == progress[-1].rows_done
        assert during > 0
        # every chunk recorded its own low watermark; with the writer going they differ
        watermarks = await ch_rows(
            url,
            "SELECT uniqExact(file, offset) FROM mybinlog_meta.snapshot_chunks "
            f"WHERE snapshot_id = '{result.snapshot_id}' AND event = 'done'",
        )
        assert int(watermarks[0][0] or 0) >= 2
        target = await open_target(url)
        try:
            cp = await load_checkpoint(target, db)
        finally:
            await target.aclose()
        assert cp is not None
        assert cp.position == result.position
        assert set(cp.tables) == {"all_types", "composite_pk", "no_pk", "dense", "sparse"}

        # stream while the writer goes on; meanwhile lose some rows in the replica and backfill their key range
        target = await open_target(url)
        replicator = Replicator(server.repl_dsn, target, database=db)
        streaming = asyncio.create_task(replicator.run())
        try:
            writer.wait_for(writer.transactions + 30)
            clickhouse_server.execute(f"ALTER TABLE `{db}`.`dense` DELETE WHERE id BETWEEN 500 AND 1499")
            await wait_mutations(url, db)
            backfill = await run_snapshot(
                snapshot_options(
                    source=server.repl_dsn, target=url, database=db, tables=("dense",), key_range=("500", "1499")
                ),
                spark=spark,
            )
            assert backfill.kind == "backfill"
            assert not backfill.checkpoint_saved
            assert 500 <= backfill.rows <= 1000 + 2 * writer.transactions
            writer.wait_for(writer.transactions + 30)
        finally:
            replicator.stop()
            await asyncio.wait_for(streaming, 120)
            await target.aclose()
    finally:
        writer.finish()
    await catch_up(server.repl_dsn, url, db)
    report = await verify_replica(server.repl_dsn, url, db)
    assert report.equal, report.render_text()
    for table in ("dense", "sparse"):
        await _independent_check(server, db, url, table)
    clickhouse_server.execute(f"DROP DATABASE IF EXISTS `{db}`")


async def test_snapshot_string_and_composite_keys_into_chdb(
    spark: Any, server: MariaDBServer, db: str, db_conn: Any, chdb_dir: Path
) -> None:
    """String keys (utf8mb4 with accents and emoji, latin1, binary with NUL and 0xFF bytes) and a composite key
    (integer, string, date) into embedded ClickHouse: executors spool batches, the driver loads them."""
    from mybinlog.snapshot import run_snapshot

    rng = random.Random(7)
    with db_conn.cursor() as cur:
        cur.execute(
            "CREATE TABLE s_utf8 (k VARCHAR(40) COLLATE utf8mb4_unicode_ci PRIMARY KEY, id INT NOT NULL, "
            "n INT NOT NULL)"
        )
        cur.execute("CREATE TABLE s_latin1 (k VARCHAR(20) CHARACTER SET latin1 PRIMARY KEY, n INT NOT NULL)")
        cur.execute("CREATE TABLE s_bin (k VARBINARY(12) PRIMARY KEY, n INT NOT NULL)")
        cur.execute(
            "CREATE TABLE comp (a INT NOT NULL, b VARCHAR(20) NOT NULL, c DATE NOT NULL, n INT NOT NULL, "
            "PRIMARY KEY (a, b, c))"
        )
        words = ["Äpfel", "apfel ", "zebra", "Ölung", "ß", "日本", "😀", "naïve", "ZZ", "a b", "a\tb", "'q'", "\\x"]
        keys = sorted({f"{rng.choice(words)}{i}" for i in range(1500)})
        cur.executemany("INSERT INTO s_utf8 VALUES (%s, %s, %s)", [(k, i, i % 5) for i, k in enumerate(keys)])
        cur.executemany(
            "INSERT INTO s_latin1 VALUES (%s, %s)", [(f"{rng.choice('aAéÉzZ ')}{i:04d}é", i) for i in range(900)]
        )
        cur.executemany(
            "INSERT IGNORE INTO s_bin VALUES (%s, %s)",
            [(bytes(rng.randrange(256) for _ in range(6)), i) for i in range(900)],
        )
        cur.executemany(
            "INSERT IGNORE INTO comp VALUES (%s, %s, %s, %s)",
            [(i % 7, f"b{rng.randrange(300)}", f"2020-01-{1 + i % 28:02d}", i) for i in range(1800)],
        )
    workload = Workload(seed=3, tables=("composite_pk", "no_pk"), large_values=False)
    workload.run(db_conn, db, n_transactions=30, statements_per_txn=8, ddl_every=0, max_rows_per_statement=10)

    stop = threading.Event()
    errors: list[BaseException] = []

    def string_writer() -> None:
        conn = server.connect(database=db)
        try:
            while not stop.is_set():
                conn.begin()
                with conn.cursor() as cur:
                    k = rng.choice(keys)
                    cur.execute("UPDATE s_utf8 SET n = n + 1 WHERE k = %s", (k,))
                    cur.execute("DELETE FROM s_utf8 WHERE k = %s", (rng.choice(keys),))
                    cur.execute(
                        "INSERT IGNORE INTO s_utf8 VALUES (%s, 1, 1)", (f"{rng.choice(words)}new{rng.random()}",)
                    )
                    cur.execute(
                        "UPDATE IGNORE s_utf8 SET k = %s WHERE k = %s", (f"moved{rng.random()}", rng.choice(keys))
                    )
                    cur.execute(
                        "UPDATE comp SET n = n + 1 WHERE a = %s AND b > %s",
                        (rng.randrange(7), f"b{rng.randrange(300)}"),
                    )
                    cur.execute(
                        "DELETE FROM comp WHERE a = %s AND b = %s", (rng.randrange(7), f"b{rng.randrange(300)}")
                    )
                    cur.execute(
                        "INSERT IGNORE INTO comp VALUES (%s, %s, '2021-06-01', 0)",
                        (rng.randrange(9), f"b{rng.randrange(400)}"),
                    )
                conn.commit()
                stop.wait(0.002)  # a rate limit, not synchronisation
        except BaseException as exc:
            errors.append(exc)
        finally:
            conn.close()

    thread = threading.Thread(target=string_writer, daemon=True)
    thread.start()
    workload_writer = Writer(server, db, workload, {}, seed=9)
    workload_writer.start()
    try:
        workload_writer.wait_for(5)
        # a source list whose first server is down: the whole snapshot reads the second (one server for all the
        # watermarks), and records it
        with socket.socket() as closed:
            closed.bind(("127.0.0.1", 0))
            down = closed.getsockname()[1]
        listed = server.repl_dsn.replace("@", f"@127.0.0.1:{down},", 1)
        result = await run_snapshot(
            snapshot_options(source=listed, target=f"chdb://{chdb_dir}", database=db, chunk_rows=300),
            spark=spark,
        )
        assert result.kind == "initial"
        assert result.chunks >= 15
        workload_writer.wait_for(workload_writer.transactions + 10)
    finally:
        stop.set()
        thread.join(60)
        workload_writer.finish()
    assert not errors, errors
    url = str(chdb_dir)
    await catch_up(server.repl_dsn, url, db)
    report = await verify_replica(server.repl_dsn, url, db)
    assert report.equal, report.render_text()
    target = await open_target_(url)
    try:
        await target.execute(f"DROP DATABASE IF EXISTS `{db}`")
    finally:
        await target.aclose()


async def test_spark_submit_killed_then_resumed_is_equal(
    spark: Any, server: MariaDBServer, db: str, db_conn: Any, clickhouse_server: Any, tmp_path: Path
) -> None:
    """``spark-submit mybinlog/snapshot/job.py`` copies a table while a writer runs; SIGKILL half-way (two
    attempts have inserted part of their chunk); ``--resume`` copies the unfinished chunks only; the stream
    then makes the replica equal to the source."""
    from mybinlog.snapshot import run_snapshot

    spark_submit = Path(sys.executable).with_name("spark-submit")
    if not spark_submit.exists():
        skip_or_fail(f"spark-submit not found next to {sys.executable} (pyspark installs it)")
    populate_extra(db_conn, "big", list(range(1, 6001)))
    url = clickhouse_server.url()
    hold = tmp_path / "hold"
    hold.touch()
    snapshot_id = f"{db}-killed"
    writer = Writer(server, db, None, {"big": 6500}, seed=1)
    writer.start()
    proc = None
    try:
        writer.wait_for(10)
        cmd = [
            str(spark_submit),
            "--master",
            "local[2]",
            "--conf",
            "spark.ui.enabled=false",
            str(REPO / "mybinlog" / "snapshot" / "job.py"),
            "--source",
            server.repl_dsn,
            "--target",
            url,
            "--database",
            db,
            "--chunk-rows",
            "600",
            "--batch-rows",
            "300",
            "--snapshot-id",
            snapshot_id,
            "--test-hold",
            f"4:{hold}",
            "--progress-interval",
            "0.5",
        ]
        out_path, err_path = tmp_path / "job.out", tmp_path / "job.err"
        with out_path.open("wb") as out_file, err_path.open("wb") as err_file:
            proc = subprocess.Popen(  # noqa: ASYNC220 - a long-running child, polled below
                cmd, stdout=out_file, stderr=err_file, env=spark_env(), start_new_session=True, cwd=tmp_path
            )
        # chunks 0-3 finish; the two tasks then hold in chunks >= 4 after their first batch
        for _ in range(6000):
            if proc.poll() is not None:
                break
            if await snapshot_meta_exists(url):
                rows = await ch_rows(
                    url,
                    "SELECT countIf(event = 'done'), uniqExactIf(chunk, event = 'rows' AND chunk >= 4) "
                    f"FROM mybinlog_meta.snapshot_chunks WHERE snapshot_id = '{snapshot_id}'",
                )
                if int(rows[0][0] or 0) >= 4 and int(rows[0][1] or 0) >= 2:
                    break
            await asyncio.sleep(0.05)  # polling the job's recorded state
        assert proc.poll() is None, err_path.read_text(errors="replace")[-3000:]
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        assert "finished" not in out_path.read_text()
        # its progress lines go to spark-submit's stderr (the JVM's System.err), stdout is for the result only
        assert f"snapshot {snapshot_id}: " in err_path.read_text()
        assert out_path.read_text() == ""
        writer.wait_for(writer.transactions + 20)
        done_before = await ch_rows(
            url,
            "SELECT uniqExactIf(chunk, event = 'done') FROM mybinlog_meta.snapshot_chunks "
            f"WHERE snapshot_id = '{snapshot_id}'",
        )
        assert int(done_before[0][0] or 0) == 4
        result = await run_snapshot(
            snapshot_options(source=server.repl_dsn, target=url, database=db, resume="latest"), spark=spark
        )
        assert result.snapshot_id == snapshot_id
        assert result.chunks_skipped == 4
        assert result.chunks > 5
        assert result.rows_this_run < result.rows
        writer.wait_for(writer.transactions + 20)
    finally:
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
        writer.finish()
    await catch_up(server.repl_dsn, url, db)
    report = await verify_replica(server.repl_dsn, url, db)
    assert report.equal, report.render_text()
    await _independent_check(server, db, url, "big")
    clickhouse_server.execute(f"DROP DATABASE IF EXISTS `{db}`")


async def test_ddl_during_snapshot_fails_clearly(
    spark: Any, server: MariaDBServer, db: str, db_conn: Any, clickhouse_server: Any, tmp_path: Path
) -> None:
    from mybinlog import SnapshotError
    from mybinlog.clickhouse import load_checkpoint, open_target
    from mybinlog.snapshot import run_snapshot

    populate_extra(db_conn, "t", list(range(1, 3001)))
    url = clickhouse_server.url()
    hold = tmp_path / "hold"
    hold.touch()
    job = asyncio.create_task(
        run_snapshot(
            snapshot_options(
                source=server.repl_dsn,
                target=url,
                database=db,
                chunk_rows=500,
                batch_rows=100,
                hold=(2, str(hold)),
                snapshot_id=f"{db}-ddl",
            ),
            spark=spark,
        )
    )
    try:
        for _ in range(6000):
            if job.done():
                break
            if await snapshot_meta_exists(url):
                rows = await ch_rows(
                    url,
                    "SELECT countIf(event = 'rows' AND chunk >= 2) FROM mybinlog_meta.snapshot_chunks "
                    f"WHERE snapshot_id = '{db}-ddl'",
                )
                if int(rows[0][0] or 0) >= 1:
                    break
            await asyncio.sleep(0.05)  # polling the job's recorded state
        assert not job.done()

        def alter() -> None:  # waits for the metadata lock of the chunks' open read transactions
            conn = server.connect(database=db)
            try:
                with conn.cursor() as cur:
                    cur.execute("ALTER TABLE t ADD COLUMN extra INT")
            finally:
                conn.close()

        ddl = asyncio.ensure_future(asyncio.to_thread(alter))
        for _ in range(6000):
            waiting = mysql_rows(
                server, db, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'ALTER TABLE t %'"
            )
            if waiting[0][0] or ddl.done():
                break
            await asyncio.sleep(0.01)  # polling the server's process list
    finally:
        hold.unlink()
    await asyncio.wait_for(ddl, 300)
    with pytest.raises(SnapshotError, match="changed during the snapshot"):
        await asyncio.wait_for(job, 300)
    target = await open_target(url)
    try:
        assert await load_checkpoint(target, db) is None
    finally:
        await target.aclose()
    clickhouse_server.execute(f"DROP DATABASE IF EXISTS `{db}`")


# --- the driver JVM's class archive --------------------------------------------------------------------------------

_ARCHIVE_SCRIPT = """
import sys
from mybinlog.snapshot._spark import _session, _stop_spark_context
sc, own = _session("local[1]")
assert own
print(sc.getConf().get("spark.driver.extraJavaOptions"))
print(sum(sc.parallelize(range(100), 2).map(lambda x: x * 2).collect()))
_stop_spark_context(sc)
sc, own = _session("local[1]")  # after the archive was written: pyspark starts another JVM in this process
print(sum(sc.parallelize(range(10), 2).collect()))
_stop_spark_context(sc)
"""


def test_class_archive_is_written_once_then_mapped_by_the_next_jvm(tmp_path: Path) -> None:
    """The first context the snapshot starts writes the class archive when its JVM exits; it is published only
    then (complete), and the next command's JVM maps it and runs Spark jobs as before."""
    require_spark()
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    for key in ("MYBINLOG_SPARK_JAVA_OPTIONS", "MYBINLOG_SPARK_CLASS_ARCHIVE"):
        env.pop(key, None)
    archives = tmp_path / "mybinlog" / "spark-class-archive"

    def run() -> list[str]:
        proc = subprocess.run(
            [sys.executable, "-c", _ARCHIVE_SCRIPT], env=env, cwd=REPO, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
        return proc.stdout.split("\n")

    first = run()
    assert "-XX:ArchiveClassesAtExit=" in first[0]
    assert first[1:3] == ["9900", "45"]
    written = sorted(p.name for p in archives.iterdir())
    assert len(written) == 1
    assert written[0].endswith(".jsa")  # no temporary file left
    assert (archives / written[0]).stat().st_size > 1_000_000

    second = run()
    assert f"-XX:SharedArchiveFile={archives / written[0]} " in second[0]
    assert second[1:3] == ["9900", "45"]
    assert sorted(p.name for p in archives.iterdir()) == written

    # a cut archive would crash a JVM mapping it (SIGBUS): its size is not the size in its name, so it is deleted
    # and the next JVM writes a new one
    archive = archives / written[0]
    archive.chmod(0o600)
    with archive.open("r+b") as f:
        f.truncate(archive.stat().st_size // 2)
    third = run()
    assert "-XX:ArchiveClassesAtExit=" in third[0]
    assert third[1:3] == ["9900", "45"]
    rewritten = sorted(p.name for p in archives.iterdir())
    assert len(rewritten) == 1
    assert (archives / rewritten[0]).stat().st_size == int(rewritten[0].split(".")[1])


def test_a_jvm_that_rejects_the_archive_options_starts_without_them(tmp_path: Path) -> None:
    """Another JDK may not know an option of the class archive: the snapshot's Spark still starts."""
    require_spark()
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    for key in ("MYBINLOG_SPARK_JAVA_OPTIONS", "MYBINLOG_SPARK_CLASS_ARCHIVE"):
        env.pop(key, None)
    script = "import mybinlog.snapshot._spark as s; s._ARCHIVE_OPTIONS += ' -Xlog:nosuchtag=off'\n" + _ARCHIVE_SCRIPT
    proc = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split("\n")[-3:] == ["9900", "45", ""]  # (the java launcher's error line may come first)
    assert "did not start with its class archive" in proc.stderr, proc.stderr[-3000:]
    leftovers = list((tmp_path / "mybinlog" / "spark-class-archive").glob("*.tmp"))
    assert not leftovers
