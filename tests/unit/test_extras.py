"""What each install extra gives (README, "Which extra"): the core imports none of the optional libraries, and every
command works with only what its extra installs.

Each case runs a fresh interpreter in which the libraries of the extras not installed cannot be imported (a meta
path finder refuses them, as if they were absent), then uses the package the way that install would.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.fakes import BLOCK_EXTRAS

CORE_ONLY = (
    "pyspark",
    "pandas",
    "chdb",
    "aiochclient",
    "aiohttp",
    "pymysql",
    "matplotlib",
    "pymysqlreplication",
    "prometheus_client",
)
CLI = ("pyspark", "pandas", "matplotlib", "pymysqlreplication")  # [cli] with a ClickHouse server: no Spark, no pandas


def _run(blocked: tuple[str, ...], code: str) -> subprocess.CompletedProcess[str]:
    script = BLOCK_EXTRAS.format(blocked=set(blocked)) + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)


def test_no_extras_gives_the_decoder_the_stream_and_sharing() -> None:
    done = _run(
        CORE_ONLY,
        """
        import anyio, asyncio
        import mybinlog
        from mybinlog import BinlogStream, EventDecoder, get_binlog_client, read_binlog_file, serve_status, Binlog
        import mybinlog.protocol, mybinlog.source, mybinlog.sharing, mybinlog.errors
        client = get_binlog_client("mysql://u:p@127.0.0.1:1")
        assert client.name == "u@127.0.0.1:1"
        from mybinlog.cli import main
        try:
            main(["dump", "--help"])
        except SystemExit as exc:
            assert exc.code == 0, exc.code
        else:
            raise AssertionError("--help did not exit")
        """,
    )
    assert done.returncode == 0, done.stderr
    assert "--file" in done.stdout  # dump's help


@pytest.mark.parametrize("command", ["replicate", "verify", "status", "snapshot", "dump"])
def test_every_command_parses_without_spark_or_pandas(command: str) -> None:
    """[cli] gives every command's parser (snapshot and demo then say to install [spark] when they run)."""
    done = _run(
        CLI,
        f"""
        import sys
        from mybinlog.cli import main
        try:
            main([{command!r}, "--help"])
        except SystemExit as exc:
            sys.exit(exc.code)
        """,
    )
    assert done.returncode == 0, done.stderr
    assert "usage: mybinlog" in done.stdout


def test_replicate_and_verify_import_no_spark_and_no_pandas() -> None:
    done = _run(
        CLI,
        """
        import sys
        import mybinlog.replication, mybinlog.cli._replicate, mybinlog.cli._verify
        from mybinlog.replication import Replicator
        from mybinlog.clickhouse import open_target
        from mybinlog.verification import verify
        assert "pandas" not in sys.modules and "pyspark" not in sys.modules
        """,
    )
    assert done.returncode == 0, done.stderr


def test_snapshot_without_spark_names_the_extra() -> None:
    done = _run(
        CLI,
        """
        from mybinlog.snapshot import spark_session
        spark_session("local[1]")
        """,
    )
    assert done.returncode != 0
    assert "pip install 'mybinlog[spark]'" in done.stderr


def test_replicate_without_its_extra_names_the_extra() -> None:
    done = _run(
        CORE_ONLY,
        """
        import asyncio
        from mybinlog.clickhouse import open_target
        asyncio.run(open_target("chdb:///nonexistent/ch"))
        """,
    )
    assert done.returncode != 0
    assert "pip install 'mybinlog[cli]'" in done.stderr


def test_metrics_without_their_extra_name_the_extra() -> None:
    """The status server, its health checks, its page and the collector's samples need no prometheus_client; the
    Prometheus formats do, and say which extra brings them ([metrics], part of [cli])."""
    done = _run(
        CORE_ONLY,
        """
        import asyncio
        import mybinlog
        from mybinlog import ConfigurationError, MetricsCollector, serve_status

        collector = MetricsCollector(replicas=[{"replica": "r", "state": "streaming", "lag_seconds": 0.5}])
        assert collector.samples()["mybinlog_replica_lag_seconds"] == [(("r",), 0.5)]
        try:
            list(collector.collect())
        except ConfigurationError as exc:
            assert "pip install 'mybinlog[metrics]'" in str(exc), exc
        else:
            raise AssertionError("collect() worked without prometheus_client")

        async def main():
            async with serve_status("http://127.0.0.1:0") as server:
                host, port = server.address.removeprefix("http://").rsplit(":", 1)
                answers = []
                for path in ("/metrics", "/healthz", "/ui"):
                    reader, writer = await asyncio.open_connection(host, int(port))
                    writer.write(f"GET {path} HTTP/1.1\\r\\n\\r\\n".encode())
                    answers.append(await reader.read())
                    writer.close()
            return answers

        metrics, health, page = asyncio.run(main())
        assert metrics.startswith(b"HTTP/1.1 501"), metrics[:200]
        assert b"pip install 'mybinlog[metrics]'" in metrics
        assert health.startswith(b"HTTP/1.1 200") and page.startswith(b"HTTP/1.1 200")
        """,
    )
    assert done.returncode == 0, done.stderr
