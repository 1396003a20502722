"""Exit codes that say what to do (docs/exit-codes.md) and bad input refused, without a server: the mapping of
errors to codes, the translation of TLS and DNS failures, `--target` and `--replica` checks and the start-up retry
of an unreachable source, each through `python -m mybinlog` as a supervisor runs it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mybinlog.cli._common import check_replica_name, exit_code
from mybinlog.errors import (
    AuthenticationError,
    BinlogPurgedError,
    ConfigurationError,
    PreconditionError,
    ReplicaLockedError,
    SourceConnectionError,
    SourceError,
    StatusReadError,
    TargetConnectionError,
    TargetError,
    TargetUnavailableError,
)
from mybinlog.source._connection import translate_server_error
from mybinlog.source._dsn import DSN

DSN_ = DSN.parse("mysql://repl@db.example:3306")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _mybinlog(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MYBINLOG_")}
    return subprocess.run(
        [sys.executable, "-m", "mybinlog", *args],
        cwd=cwd,
        env={**env, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# -- the mapping -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (ConfigurationError("bad"), 2),
        (ReplicaLockedError("locked"), 4),
        (SourceConnectionError("down"), 75),
        (TargetConnectionError("down"), 75),
        (TargetUnavailableError("down"), 75),
        (StatusReadError("nothing listens"), 75),
        (AuthenticationError("grant"), 1),
        (PreconditionError("no TLS"), 1),
        (BinlogPurgedError("purged"), 1),
        (SourceError("other"), 1),
        (TargetError("bad type", code=53), 1),
    ],
)
def test_exit_code_is_75_only_for_what_a_retry_can_cure(error: Exception, code: int) -> None:
    assert exit_code(error) == code


def test_a_certificate_that_does_not_verify_is_permanent() -> None:
    message = (
        "Can't connect to MySQL server on '127.0.0.1' ([SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
        "self-signed certificate (_ssl.c:1006))"
    )
    error = translate_server_error(DSN_, 2003, message, during="connecting")
    assert not error.retriable
    assert exit_code(error) == 1
    assert "ssl_ca" in str(error)
    # a client certificate the server refuses: permanent too
    refused = translate_server_error(DSN_, 2003, "Can't connect ([SSL: TLSV1_ALERT_UNKNOWN_CA] tlsv1 alert)")
    assert not refused.retriable
    assert "ssl_cert" in str(refused)
    # a connection cut in the middle of the handshake is not
    cut = translate_server_error(DSN_, 2003, "Can't connect ([SSL: UNEXPECTED_EOF_WHILE_READING] EOF)")
    assert cut.retriable


def test_require_secure_transport_names_the_fix() -> None:
    error = translate_server_error(
        DSN_,
        3159,
        "Connections using insecure transport are prohibited while --require_secure_transport=ON.",
        during="connecting",
    )
    assert isinstance(error, PreconditionError)
    assert not error.retriable
    assert "requires TLS" in str(error)
    assert "ssl=true" in str(error)


def test_a_refused_port_and_an_unknown_name_are_retried_and_the_name_is_named() -> None:
    refused = translate_server_error(DSN_, 2003, "Can't connect ([Errno 111] Connect call failed)")
    assert refused.retriable
    unknown = translate_server_error(DSN_, 2003, "Can't connect to MySQL server on 'db.example' ([Errno -2] Name or "
                                     "service not known)")  # fmt: skip
    assert unknown.retriable  # a restarting container's name may vanish from DNS for a while
    assert "'db.example' does not resolve" in str(unknown)


@pytest.mark.parametrize("name", ["", "   ", "a\nb", "shop\r", "tab\there", "bell\x07", "del\x7f"])
def test_replica_names_refused(name: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        check_replica_name(name)
    assert "--replica" in str(info.value)


@pytest.mark.parametrize("name", ["shop", "shop-eu.2", "ünïcode_名"])
def test_replica_names_accepted(name: str) -> None:
    assert check_replica_name(name) == name


# -- the command line ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "meant"),
    [
        ("http:127.0.0.1:8123", "http://127.0.0.1:8123"),
        ("127.0.0.1:8123", "http://127.0.0.1:8123"),
        ("clickhouse:8123", "http://clickhouse:8123"),
        ("https:/ch.example:8443", "https://ch.example:8443"),
    ],
)
@pytest.mark.parametrize("command", ["replicate", "verify"])
def test_a_target_that_is_neither_a_url_nor_a_path_is_refused(
    tmp_path: Path, target: str, meant: str, command: str
) -> None:
    port = _free_port()
    result = _mybinlog(command, "--source", f"mysql://repl@127.0.0.1:{port}", "--target", target, "-d", "shop",
                       cwd=tmp_path)  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert f"did you mean {meant}" in result.stderr
    assert "chdb:///absolute/path" in result.stderr  # the accepted forms
    assert list(tmp_path.iterdir()) == []  # no embedded directory named after the URL


def test_a_clear_path_is_still_an_embedded_target(tmp_path: Path) -> None:
    # './name:with:colons' is clearly a path: accepted (the source is unreachable: nothing else happens)
    port = _free_port()
    result = _mybinlog("replicate", "--source", f"mysql://repl@127.0.0.1:{port}", "--target", "./ch:1", "-d", "shop",
                       "--source-retry-seconds", "0", cwd=tmp_path)  # fmt: skip
    assert result.returncode == 75, result.stderr
    assert "neither a URL nor a clear path" not in result.stderr


@pytest.mark.parametrize("replica", ["", "a\nb"])
def test_a_bad_replica_name_is_refused_before_connecting(tmp_path: Path, replica: str) -> None:
    port = _free_port()
    result = _mybinlog("replicate", "--source", f"mysql://repl@127.0.0.1:{port}", "--target", "chdb://./ch",
                       "-d", "shop", "--replica", replica, cwd=tmp_path)  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "--replica" in result.stderr
    assert "unreachable" not in result.stderr
    assert "Can't connect" not in result.stderr


def test_a_bad_replica_name_in_a_config_file_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "r.toml"
    config.write_text(
        '[sources.db]\ndsn = "mysql://repl@127.0.0.1:1"\n[targets.ch]\nurl = "chdb://./ch"\n'
        '[[replicas]]\nname = "a\\nb"\ndatabase = "shop"\nsource = "db"\ntarget = "ch"\n'
    )
    result = _mybinlog("replicate", "--config", str(config), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "control character" in result.stderr


def test_the_start_up_retries_an_unreachable_source_within_the_budget(tmp_path: Path) -> None:
    # a port with nothing listening is what a restarting server looks like: retried for --source-retry-seconds
    # (was: exit 75 at the first refusal, about a second after the start, whatever the budget)
    port = _free_port()
    started = time.monotonic()
    result = _mybinlog("replicate", "--source", f"mysql://repl@127.0.0.1:{port}", "--target", "chdb://./ch",
                       "-d", "shop", "--source-retry-seconds", "4", cwd=tmp_path)  # fmt: skip
    elapsed = time.monotonic() - started
    assert result.returncode == 75, result.stderr
    assert elapsed >= 3.5, elapsed
    assert result.stderr.count("trying again") >= 3, result.stderr
    assert "--source-retry-seconds" in result.stderr
    assert "stayed unreachable for 4 s" in result.stderr


def test_a_signal_during_the_start_up_wait_stops_cleanly(tmp_path: Path) -> None:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MYBINLOG_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mybinlog", "replicate", "--source", f"mysql://repl@127.0.0.1:{port}",
         "--target", "chdb://./ch", "-d", "shop", "--source-retry-seconds", "300"],
        cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    try:
        deadline = time.monotonic() + 60
        seen = ""
        while "trying again" not in seen:  # the first retry is logged: the process waits for the source
            assert time.monotonic() < deadline, seen
            line = proc.stderr.readline()
            assert line, seen
            seen += line
        proc.terminate()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
