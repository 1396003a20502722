"""Where the commands take passwords from (mybinlog.cli._common): precedence, conflicts, password files."""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

import pytest

from mybinlog.cli import _common as common
from mybinlog.cli._common import (
    read_password_file,
    resolve_source_password,
    resolve_target_url,
    source_dsn,
    target_url,
)
from mybinlog.errors import ConfigurationError
from mybinlog.source._dsn import DSN

SECRET = "s3cr&t:p@ss/wörd #1"
ENV_VARS = (common.PASSWORD_ENV, common.PASSWORD_FILE_ENV, common.CH_PASSWORD_ENV, common.CH_PASSWORD_FILE_ENV)


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


def _file(tmp_path: Path, content: str | bytes, name: str = "pw") -> str:
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return str(path)


def _warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.WARNING]


# --- password files ---


@pytest.mark.parametrize(
    ("content", "password"),
    [
        (SECRET, SECRET),
        (SECRET + "\n", SECRET),
        (SECRET + "\r\n", SECRET),
        (SECRET + "\n\n", SECRET + "\n"),  # one newline only
        (" pw with spaces \n", " pw with spaces "),  # other whitespace is part of the password
    ],
)
def test_password_file_strips_one_trailing_newline(tmp_path: Path, content: str, password: str) -> None:
    assert read_password_file(_file(tmp_path, content), what="--password-file") == password


def test_missing_password_file_names_the_path(tmp_path: Path) -> None:
    path = str(tmp_path / "nope" / "pw")
    with pytest.raises(ConfigurationError, match="password file") as info:
        read_password_file(path, what="--password-file")
    assert path in str(info.value)
    assert "--password-file" in str(info.value)
    assert "No such file" in str(info.value)


def test_unreadable_password_file_names_the_path_not_the_content(tmp_path: Path) -> None:
    path = _file(tmp_path, SECRET)
    os.chmod(path, 0)
    try:
        if os.access(path, os.R_OK):  # running as root: permissions do not apply, use a directory instead
            path = str(tmp_path)
        with pytest.raises(ConfigurationError, match="cannot read the password file") as info:
            read_password_file(path, what=common.PASSWORD_FILE_ENV)
    finally:
        os.chmod(tmp_path / "pw", 0o600)
    assert path in str(info.value)
    assert common.PASSWORD_FILE_ENV in str(info.value)
    assert SECRET not in str(info.value)


def test_empty_password_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="is empty"):
        read_password_file(_file(tmp_path, "\n"), what="--password-file")


def test_non_utf8_password_file_does_not_show_its_bytes(tmp_path: Path) -> None:
    path = _file(tmp_path, b"abc\xffsecret")
    with pytest.raises(ConfigurationError, match="not UTF-8") as info:
        read_password_file(path, what="--password-file")
    assert "secret" not in str(info.value)
    assert "xff" not in str(info.value)
    assert info.value.__cause__ is None
    assert info.value.__suppress_context__


def test_oversized_password_file_is_refused(tmp_path: Path) -> None:
    path = _file(tmp_path, b"x" * (common.MAX_PASSWORD_FILE_BYTES + 1))
    with pytest.raises(ConfigurationError, match="larger than"):
        read_password_file(path, what="--password-file")


# --- source password precedence ---


def test_source_precedence(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    option_file = _file(tmp_path, "from-option\n", "option")
    env_file = _file(tmp_path, "from-env-file\n", "env")
    bare = DSN.parse("mysql://repl@db:3306")
    full_env = {common.PASSWORD_FILE_ENV: env_file, common.PASSWORD_ENV: "from-env"}
    with caplog.at_level(logging.DEBUG, logger="mybinlog.cli"):
        assert resolve_source_password(bare, password_file=option_file, environ=full_env).password == "from-option"
        assert resolve_source_password(bare, environ=full_env).password == "from-env-file"
        assert resolve_source_password(bare, environ={common.PASSWORD_ENV: "from-env"}).password == "from-env"
        assert resolve_source_password(bare, environ={}).password == ""
        # an empty variable counts as unset
        assert resolve_source_password(bare, environ={common.PASSWORD_ENV: ""}).password == ""
    assert _warnings(caplog) == []  # none of these was on the command line
    for secret in ("from-option", "from-env-file", "from-env"):
        assert secret not in caplog.text
    assert "comes from --password-file" in caplog.text  # the origin is logged at debug level, not the password


def test_password_in_url_wins_over_the_environment_and_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    dsn = DSN.parse("mysql://repl:url-secret-1@db:3306")
    env = {common.PASSWORD_ENV: "env", common.PASSWORD_FILE_ENV: "/nonexistent"}
    with caplog.at_level(logging.WARNING, logger="mybinlog.cli"):
        assert resolve_source_password(dsn, environ=env, option="--dsn").password == "url-secret-1"
    [record] = _warnings(caplog)
    message = record.getMessage()
    assert "repl@db:3306" in message
    assert "--dsn" in message
    assert "ps" in message
    assert "--password-file" in message
    assert common.PASSWORD_ENV in message
    assert "url-secret-1" not in caplog.text


def test_password_in_url_and_file_is_an_error(tmp_path: Path) -> None:
    dsn = DSN.parse("mysql://repl:url-secret-2@db:3306")
    with pytest.raises(ConfigurationError, match="give the password once") as info:
        resolve_source_password(dsn, password_file=_file(tmp_path, "file-secret"))
    assert "url-secret-2" not in str(info.value)
    assert "file-secret" not in str(info.value)
    assert "repl@db:3306" in str(info.value)


def test_source_dsn_from_parsed_arguments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mybinlog.cli._main import _build_parser

    path = _file(tmp_path, SECRET + "\n")
    args = _build_parser().parse_args(
        ["replicate", "--source", "mysql://repl@db:3306", "--password-file", path, "-d", "shop"]
    )
    dsn = source_dsn(args)
    assert dsn.password == SECRET
    assert SECRET not in repr(dsn) + str(dsn) + dsn.display
    monkeypatch.setenv(common.PASSWORD_ENV, "env-pw")
    args = _build_parser().parse_args(["status", "--dsn", "mysql://repl@db:3306"])
    assert source_dsn(args, attr="dsn", option="--dsn").password == "env-pw"
    args.dsn = None
    with pytest.raises(ConfigurationError, match="--dsn mysql://user@host:port is required"):
        source_dsn(args, attr="dsn", option="--dsn")


@pytest.mark.parametrize(
    "argv",
    [
        ["dump", "--dsn", "mysql://repl@db"],
        ["replicate", "--source", "mysql://repl@db", "-d", "x"],
        ["verify", "--source", "mysql://repl@db", "-d", "x"],
        ["snapshot", "--source", "mysql://repl@db", "-d", "x"],
        ["status", "--dsn", "mysql://repl@db"],
    ],
)
def test_every_connecting_command_takes_password_files(argv: list[str]) -> None:
    from mybinlog.cli._main import _build_parser

    args = _build_parser().parse_args([*argv, "--password-file", "/p"])
    assert args.password_file == "/p"
    if argv[0] in ("replicate", "verify", "snapshot"):
        args = _build_parser().parse_args([*argv, "--target-password-file", "/t"])
        assert args.target_password_file == "/t"


# --- target URL ---


def test_target_password_file_goes_into_the_url(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = _file(tmp_path, SECRET + "\n")
    with caplog.at_level(logging.DEBUG, logger="mybinlog.cli"):
        url = resolve_target_url("http://ch.example:8123/?max_threads=2", password_file=path, environ={})
    parts = urlsplit(url)
    assert (parts.scheme, parts.hostname, parts.port, parts.path) == ("http", "ch.example", 8123, "/")
    assert parts.username == "default"
    assert unquote(parts.password or "") == SECRET
    assert parse_qsl(parts.query) == [("max_threads", "2")]
    assert SECRET not in caplog.text
    assert _warnings(caplog) == []


def test_target_password_keeps_the_user(tmp_path: Path) -> None:
    path = _file(tmp_path, "pw")
    named = urlsplit(resolve_target_url("https://writer@[::1]:8443", password_file=path, environ={}))
    assert (named.username, named.password, named.hostname, named.port) == ("writer", "pw", "::1", 8443)
    by_query = urlsplit(resolve_target_url("http://h:8123/?user=rw%20user", password_file=path, environ={}))
    assert (unquote(by_query.username or ""), by_query.password) == ("rw user", "pw")


def test_target_precedence(tmp_path: Path) -> None:
    option_file = _file(tmp_path, "from-option", "option")
    env_file = _file(tmp_path, "from-env-file", "env")
    env = {common.CH_PASSWORD_FILE_ENV: env_file, common.CH_PASSWORD_ENV: "from-env"}
    url = "http://h:8123"
    assert urlsplit(resolve_target_url(url, password_file=option_file, environ=env)).password == "from-option"
    assert urlsplit(resolve_target_url(url, environ=env)).password == "from-env-file"
    # MYBINLOG_CH_PASSWORD alone: the URL is unchanged, open_target reads the variable itself
    assert resolve_target_url(url, environ={common.CH_PASSWORD_ENV: "from-env"}) == url
    # a password in the URL wins over the environment
    assert resolve_target_url("http://u:inurl@h:8123", environ=env) == "http://u:inurl@h:8123"


def test_open_target_reads_the_variable_this_module_documents() -> None:
    from mybinlog import clickhouse as target

    assert common.CH_PASSWORD_ENV == target.PASSWORD_ENV


@pytest.mark.parametrize("url", ["http://u:url-secret-3@h:8123", "http://h:8123/?password=url-secret-3"])
def test_target_password_in_url_and_file_is_an_error(tmp_path: Path, url: str) -> None:
    with pytest.raises(ConfigurationError, match="give the password once") as info:
        resolve_target_url(url, password_file=_file(tmp_path, "file-secret"), environ={})
    assert "url-secret-3" not in str(info.value)
    assert "file-secret" not in str(info.value)


@pytest.mark.parametrize("url", ["http://u:url-secret-4@h:8123", "http://h:8123/?password=url-secret-4"])
def test_target_password_in_url_warns_once(caplog: pytest.LogCaptureFixture, url: str) -> None:
    with caplog.at_level(logging.WARNING, logger="mybinlog.cli"):
        assert resolve_target_url(url, environ={}) == url
    [record] = _warnings(caplog)
    assert "--target-password-file" in record.getMessage()
    assert common.CH_PASSWORD_ENV in record.getMessage()
    assert "url-secret-4" not in caplog.text


def test_chdb_target_has_no_password(tmp_path: Path) -> None:
    path = _file(tmp_path, "pw")
    with pytest.raises(ConfigurationError, match="chdb targets have no password"):
        resolve_target_url("chdb:///data/ch", password_file=path, environ={})
    env = {common.CH_PASSWORD_FILE_ENV: path}  # the environment is ambient: ignored for chdb
    assert resolve_target_url("chdb:///data/ch", environ=env) == "chdb:///data/ch"
    assert resolve_target_url(str(tmp_path), environ=env) == str(tmp_path)


def test_target_url_from_parsed_arguments(tmp_path: Path) -> None:
    from mybinlog.cli._main import _build_parser

    path = _file(tmp_path, "ch-pw\n")
    args = _build_parser().parse_args(
        ["verify", "--source", "mysql://r@db", "--target", "http://h:8123", "--target-password-file", path]
    )
    assert urlsplit(target_url(args)).password == "ch-pw"


def test_snapshot_options_take_both_password_files(tmp_path: Path) -> None:
    from mybinlog.cli._snapshot import add_arguments, options_from_args
    from mybinlog.snapshot._job import SnapshotOptions

    parser = argparse.ArgumentParser()
    add_arguments(parser, spark_submit=True)  # the spark-submit entry's parser (job.py)
    src, ch = _file(tmp_path, "db-pw\n", "src"), _file(tmp_path, "ch-pw\n", "ch")
    args = parser.parse_args(
        [
            *("--source", "mysql://repl@db/shop", "--password-file", src),
            *("--target", "http://h:8123", "--target-password-file", ch),
        ]
    )
    options, _ = options_from_args(args)
    assert isinstance(options, SnapshotOptions)
    assert isinstance(options.source, DSN)
    assert options.source.password == "db-pw"
    assert urlsplit(options.target).password == "ch-pw"
    assert "db-pw" not in repr(options.source)


def test_help_is_as_wide_as_columns_says(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's help formatter sizes itself as argparse's does (COLUMNS, the terminal, else 80), without shutil."""
    from mybinlog.cli import _main

    for columns in ("50", "100"):
        monkeypatch.setenv("COLUMNS", columns)
        monkeypatch.setattr(common, "_COLUMNS", [])
        text = _main._build_parser(plugins=False).format_help()
        assert max(map(len, text.splitlines())) <= int(columns) - 2
        assert max(map(len, text.splitlines())) > int(columns) - 20


def test_dump_of_a_file_does_not_import_what_it_does_not_need(tmp_path: Path) -> None:
    """Start-up counts in every `mybinlog dump`: shutil (argparse's terminal size) and the server-side stack stay
    out of it."""
    empty = tmp_path / "empty.000001"
    empty.write_bytes(b"\xfebin")
    code = (
        "import sys; from mybinlog.cli import main; rc = main(['dump', '--format', 'jsonl', '--file', sys.argv[1]]); "
        "print(sorted(m for m in ('shutil', 'asyncio', 'asyncmy', 'mybinlog.source._stream') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code, str(empty)], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
