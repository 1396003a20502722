"""``mybinlog replicate --config FILE`` (mybinlog/cli/_config.py): the TOML file read into sources, targets and
replicas; every mistake an error naming the file, the table, the key and the fix (exit code 2); passwords from files
and the environment, and from the file itself only when the user insists."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from mybinlog.cli import _common as common
from mybinlog.cli._config import CONNECTION_SETTINGS, ReplicasConfig, load_config, parse_config
from mybinlog.cli._main import main
from mybinlog.errors import ConfigurationError
from mybinlog.replication import ReplicationSettings

REPO = Path(__file__).resolve().parents[3]
SECRET = "s3cr&t:p@ss/wörd #1"
ENV_VARS = (common.PASSWORD_ENV, common.PASSWORD_FILE_ENV, common.CH_PASSWORD_ENV, common.CH_PASSWORD_FILE_ENV)

GOOD = """
[status]
address = "unix:/run/mybinlog/status.sock"
log_interval = 30

[settings]
max_flush_data_time = 500
max_rows_in_buffer = 1000
max_flush_milliseconds_in_binlog_dispatcher = 50

[sources.main]
dsn = "mysql://repl@db1:3306"
password_file = "secrets/repl.pw"
max_bytes_in_binlog_dispatcher_buffer = 262144

[sources.archive]
dsn = "mariadb://reader@db2:3307?ssl=required"
password_env = "ARCHIVE_PW"

[targets.warehouse]
url = "http://default@ch:8123/?max_threads=2"
password_env = "CH_PW"

[targets.local]
url = "chdb:///var/lib/mybinlog"

[replicas.shop]
source = "main"
target = "warehouse"
database = "shop"

[replicas.shop_collapsing]
source = "main"
target = "warehouse"
database = "shop"
target_database = "shop_c"
engine = "collapsing"
max_flush_data_time = 200

[replicas."crm.slow"]
source = "main"
target = "local"
database = "crm"
tables = ["customers", "contracts"]
max_bytes_in_binlog_queue = 1024
max_milliseconds_to_wait_in_binlog_queue = 5
source_retry_seconds = 600

[replicas.history]
source = "archive"
target = "local"
database = "shop"
initial_load = "none"
"""

ONE_OF_EACH = """
[sources.main]
dsn = "mysql://repl@db:3306"
password_env = "REPL_PW"
[targets.ch]
url = "http://default@ch:8123"
password_env = "CH_PW"
"""


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


def _write(tmp_path: Path, text: str, name: str = "replicas.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _parse(text: str) -> ReplicasConfig:
    return parse_config(text, path="replicas.toml")


# --- a good file -------------------------------------------------------------------------------------------------


def test_a_good_file(tmp_path: Path) -> None:
    config = load_config(_write(tmp_path, GOOD))
    assert config.path == str(tmp_path / "replicas.toml")
    assert config.status_address == "unix:/run/mybinlog/status.sock"
    assert config.status_interval == 30.0
    assert set(config.sources) == {"main", "archive"}
    main_source = config.sources["main"]
    assert (main_source.dsn.user, main_source.dsn.host, main_source.dsn.port) == ("repl", "db1", 3306)
    assert main_source.password.file == str(tmp_path / "secrets" / "repl.pw")  # relative to the file
    assert main_source.max_bytes_in_binlog_dispatcher_buffer == 262144
    assert main_source.max_flush_milliseconds_in_binlog_dispatcher == 50  # the [settings] default
    archive = config.sources["archive"]
    assert archive.dsn.ssl == "required"
    assert archive.password.env == "ARCHIVE_PW"
    assert archive.max_bytes_in_binlog_dispatcher_buffer == 1 << 20
    assert not config.targets["warehouse"].embedded
    assert config.targets["local"].embedded

    by_name = {r.name: r for r in config.replicas}
    assert [r.name for r in config.replicas] == ["shop", "shop_collapsing", "crm.slow", "history"]
    shop = by_name["shop"]
    assert (shop.source, shop.target, shop.database, shop.target_database, shop.tables) == (
        "main",
        "warehouse",
        "shop",
        "shop",
        None,
    )
    assert shop.settings == ReplicationSettings(
        max_flush_data_time=500, max_rows_in_buffer=1000, max_flush_milliseconds_in_binlog_dispatcher=50
    )
    collapsing = by_name["shop_collapsing"]
    assert (collapsing.database, collapsing.target_database) == ("shop", "shop_c")
    assert (collapsing.settings.engine, collapsing.settings.max_flush_data_time) == ("collapsing", 200)
    assert collapsing.settings.max_rows_in_buffer == 1000
    slow = by_name["crm.slow"]
    assert slow.tables == ("customers", "contracts")
    assert (slow.settings.max_bytes_in_binlog_queue, slow.settings.max_milliseconds_to_wait_in_binlog_queue) == (
        1024,
        5,
    )
    assert by_name["history"].settings.initial_load == "none"
    assert by_name["history"].settings.max_flush_milliseconds_in_binlog_dispatcher == 50
    # the shared stream of a source reconnects as long as the most patient of its replicas
    assert config.connection_retry_seconds("main") == 600
    assert config.connection_retry_seconds("archive") == 300


def test_replicas_as_an_array_and_one_source_and_target_by_default() -> None:
    config = _parse(
        ONE_OF_EACH
        + """
[[replicas]]
database = "shop"

[[replicas]]
name = "shop_copy"
database = "shop"
target_database = "shop_copy"
engine = "replacing_is_deleted"
"""
    )
    assert [(r.name, r.source, r.target, r.target_database) for r in config.replicas] == [
        ("shop", "main", "ch", "shop"),
        ("shop_copy", "main", "ch", "shop_copy"),
    ]
    assert config.replicas[1].settings.engine == "replacing_is_deleted"
    assert config.status_address is None
    assert config.status_interval is None


def test_the_example_file_is_valid() -> None:
    config = load_config(REPO / "examples" / "replicas.toml")
    assert len(config.replicas) == 3
    assert len({r.source for r in config.replicas}) == 1  # one source: one binlog connection
    assert {(r.database, r.target, r.target_database) for r in config.replicas} == {
        ("shop", "warehouse", "shop"),
        ("shop", "warehouse", "shop_collapsing"),
        ("crm", "local", "crm"),
    }


def test_every_replication_setting_can_be_set_by_its_name() -> None:
    """The keys come from ReplicationSettings itself: a field added there is a key of the file at once."""
    values: dict[str, tuple[str, object]] = {
        "engine": ('"collapsing"', "collapsing"),
        "max_rows_in_buffer": ("7", 7),
        "max_bytes_in_buffer": ("8", 8),
        "max_flush_data_time": ("9", 9),
        "max_bytes_in_binlog_queue": ("10", 10),
        "max_milliseconds_to_wait_in_binlog_queue": ("11", 11),
        "meta_database": ('"meta2"', "meta2"),
        "initial_load": ('"none"', "none"),
        "target_retry_seconds": ("12.5", 12.5),
        "source_retry_seconds": ("13", 13.0),
    }
    # the connection's settings are the source's (test_errors_..., test_connection_settings_...)
    names = [f.name for f in dataclasses.fields(ReplicationSettings) if f.name not in CONNECTION_SETTINGS]
    lines = "\n".join(f"{name} = {values[name][0] if name in values else _default_text(name)}" for name in names)
    settings = _parse(ONE_OF_EACH + f'[replicas.shop]\ndatabase = "shop"\n{lines}\n').replicas[0].settings
    for name, (_, expected) in values.items():
        assert getattr(settings, name) == expected, name


def _default_text(name: str) -> str:
    """A field's default written in TOML (for fields added to ReplicationSettings after this test was written)."""
    default = getattr(ReplicationSettings(), name)
    if isinstance(default, bool):
        return "true" if default else "false"
    if isinstance(default, str):
        return f'"{default}"'
    return str(default)


# --- errors ------------------------------------------------------------------------------------------------------

_BASE = ONE_OF_EACH + '[replicas.shop]\ndatabase = "shop"\n'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # unknown keys and tables, with the nearest known one
        (_BASE + "[replica.x]\n", ["the top level", "unknown key 'replica'", "did you mean 'replicas'"]),
        (_BASE + "max_row_in_buffer = 1\n", ["[replicas.shop]", "'max_row_in_buffer'", "'max_rows_in_buffer'"]),
        (_BASE + "colour = 1\n", ["[replicas.shop]", "unknown key 'colour'", "the keys of a replica are:"]),
        (
            _BASE.replace('password_env = "REPL_PW"', 'password_env = "REPL_PW"\npasword_file = "x"'),
            ["[sources.main]", "'pasword_file'", "did you mean 'password_file'"],
        ),
        (_BASE.replace('url = "http://default@ch:8123"', 'uri = "x"'), ["[targets.ch]", "'uri'", "'url'"]),
        (_BASE + "[settings]\nengin = 'collapsing'\n", ["[settings]", "'engin'", "did you mean 'engine'"]),
        (_BASE + "[status]\naddres = 'unix:/x'\n", ["[status]", "'addres'", "did you mean 'address'"]),
        # a connection setting in a replica: where it belongs
        (
            _BASE + "max_flush_milliseconds_in_binlog_dispatcher = 5\n",
            ["[replicas.shop]", "shared binlog connection", "[sources.NAME]"],
        ),
        # types and ranges
        (_BASE + 'max_rows_in_buffer = "many"\n', ["[replicas.shop] max_rows_in_buffer", "whole number", "string"]),
        (_BASE + "max_rows_in_buffer = true\n", ["[replicas.shop] max_rows_in_buffer", "whole number", "boolean"]),
        (_BASE + "max_rows_in_buffer = 1.5\n", ["[replicas.shop] max_rows_in_buffer", "whole number"]),
        (_BASE + "max_bytes_in_binlog_queue = -1\n", ["max_bytes_in_binlog_queue", "must be >= 0"]),
        (_BASE + "target_retry_seconds = -2.5\n", ["target_retry_seconds", "must be >= 0"]),
        (_BASE + "engine = 3\n", ["[replicas.shop] engine", "expected a string"]),
        (_BASE + 'engine = "merge"\n', ["[replicas.shop]", "unknown engine 'merge'", "replacing"]),
        (_BASE + 'initial_load = "all"\n', ["[replicas.shop]", "initial_load must be 'auto' or 'none'"]),
        (_BASE + 'tables = "a,b"\n', ["[replicas.shop] tables", "a list of table names", 'tables = ["orders"']),
        (_BASE + "tables = []\n", ["[replicas.shop] tables", "a list of table names"]),
        (_BASE + 'tables = ["a", ""]\n', ["[replicas.shop] tables", "non-empty string"]),
        (_BASE + 'target_database = ""\n', ["[replicas.shop] target_database", "give a ClickHouse database"]),
        (_BASE + "[status]\nlog_interval = 'often'\n", ["[status] log_interval", "a number"]),
        (_BASE + "[status]\naddress = 'ftp://x'\n", ["[status] address", "unix:/path.sock"]),
        ("settings = 3\n" + _BASE, ["the top level", "settings must be a table [settings]"]),
        # what is missing
        (ONE_OF_EACH + "[replicas.shop]\ntables = ['a']\n", ["[replicas.shop]", "database is missing", "database ="]),
        (
            ONE_OF_EACH.replace('dsn = "mysql://repl@db:3306"\n', ""),
            ["[sources.main]", "dsn is missing", 'dsn = "mysql://'],
        ),
        (ONE_OF_EACH, ["no replicas", "[replicas.shop]"]),
        (
            '[targets.ch]\nurl = "chdb:///x"\n[replicas.shop]\ndatabase = "shop"\n',
            ["no sources", "[sources.main]"],
        ),
        (
            '[sources.main]\ndsn = "mysql://r@h"\n[replicas.shop]\ndatabase = "shop"\n',
            ["no targets", "[targets."],
        ),
        # references
        (_BASE + 'source = "mian"\n', ["[replicas.shop] source", "no [sources.mian]", "defined: main", "'main'"]),
        (_BASE + 'target = "warehouse"\n', ["[replicas.shop] target", "no [targets.warehouse]", "defined: ch"]),
        (
            _BASE + '[targets.other]\nurl = "chdb:///o"\n',
            ["[replicas.shop]", "target is missing", "2 targets (ch, other)", 'target = "ch"'],
        ),
        # names and what they write
        (
            ONE_OF_EACH + '[[replicas]]\ndatabase = "shop"\n[[replicas]]\ndatabase = "shop"\ntarget_database = "b"\n',
            ["[[replicas]] #2", "a second replica named 'shop'", "[[replicas]] #1", "add name ="],
        ),
        (
            _BASE + '[replicas.shop2]\ndatabase = "other"\ntarget_database = "shop"\n',
            ["[replicas.shop2]", "[replicas.shop] writes the same ClickHouse database 'shop'", "target_database"],
        ),
        (_BASE + 'name = "x"\n', ["[replicas.shop] name", "its table key", "remove name"]),
        (ONE_OF_EACH + "[[replicas]]\nname = ''\ndatabase = 'd'\n", ["[[replicas]] #1 name", "give the replica"]),
        # values the lower layers refuse, with the place
        (_BASE.replace("mysql://repl@db:3306", "postgres://x@y"), ["[sources.main] dsn", "mysql://"]),
        (_BASE.replace("http://default@ch:8123", "ftp://ch"), ["[targets.ch] url", "http(s)://host:8123"]),
        (
            _BASE.replace(
                'url = "http://default@ch:8123"\npassword_env = "CH_PW"', 'url = "chdb:///x"\npassword_env = "P"'
            ),
            ["[targets.ch]", "embedded (chdb) target has no password"],
        ),
        (_BASE.replace('password_env = "REPL_PW"', 'password_env = "1 BAD"'), ["password_env", "not an environment"]),
        (
            _BASE.replace('password_env = "REPL_PW"', 'password_env = "REPL_PW"\npassword_file = "/p"'),
            ["[sources.main]", "given twice", "password_file and password_env", "give it once"],
        ),
        (
            _BASE.replace('password_env = "REPL_PW"', "allow_inline_password = 'yes'"),
            ["[sources.main] allow_inline_password", "true or false"],
        ),
        # not TOML at all
        (_BASE + "max_rows_in_buffer = \n", ["not valid TOML", "line"]),
    ],
)
def test_errors_name_the_file_the_table_the_key_and_the_fix(text: str, expected: list[str]) -> None:
    with pytest.raises(ConfigurationError) as info:
        _parse(text)
    message = str(info.value)
    assert message.startswith("replicas.toml: "), message
    for part in expected:
        assert part in message, f"{part!r} not in: {message}"


def test_a_password_written_in_password_env_is_not_shown() -> None:
    with pytest.raises(ConfigurationError) as info:
        _parse(_BASE.replace('password_env = "REPL_PW"', 'password_env = "hunter 2!"'))
    assert "[sources.main] password_env: not an environment variable name" in str(info.value)
    assert "hunter" not in str(info.value)


def test_a_file_that_cannot_be_read(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"cannot read the configuration file .*missing\.toml"):
        load_config(tmp_path / "missing.toml")
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'[sources.m]\ndsn = "mysql://r\xe9@h"\n')
    with pytest.raises(ConfigurationError, match=r"latin1\.toml: not UTF-8"):
        load_config(path)


# --- passwords ---------------------------------------------------------------------------------------------------


def test_passwords_from_the_environment(caplog: pytest.LogCaptureFixture) -> None:
    config = _parse(_BASE)
    env = {"REPL_PW": SECRET, "CH_PW": SECRET + "-ch"}
    with caplog.at_level(logging.DEBUG):
        dsn = config.source_dsn("main", environ=env)
        url = config.target_url("ch", environ=env)
    assert dsn.password == SECRET
    assert unquote(urlsplit(url).password or "") == SECRET + "-ch"
    assert urlsplit(url).username == "default"
    assert SECRET not in caplog.text
    assert SECRET not in repr(config)
    with pytest.raises(ConfigurationError) as info:
        config.source_dsn("main", environ={})
    assert str(info.value).startswith("replicas.toml: [sources.main]: password_env names the environment variable")
    assert "REPL_PW" in str(info.value)
    with pytest.raises(ConfigurationError, match=r"\[targets.ch\].*CH_PW.*not set"):
        config.target_url("ch", environ={"REPL_PW": "x", "CH_PW": ""})  # empty counts as unset


def test_passwords_from_files_relative_to_the_configuration(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "repl.pw").write_text(SECRET + "\n", encoding="utf-8")
    (tmp_path / "ch.pw").write_text("ch-secret\r\n", encoding="utf-8")
    path = _write(
        tmp_path,
        """
[sources.main]
dsn = "mysql://repl@db:3306"
password_file = "secrets/repl.pw"
[targets.ch]
url = "http://ch:8123/?user=reader&max_threads=2"
password_file = "ch.pw"
[replicas.shop]
database = "shop"
""",
    )
    config = load_config(path)
    assert config.source_dsn("main", environ={}).password == SECRET
    parts = urlsplit(config.target_url("ch", environ={}))
    assert (parts.username, parts.password, parts.hostname, parts.port) == ("reader", "ch-secret", "ch", 8123)
    assert parts.query == "user=reader&max_threads=2"
    (tmp_path / "secrets" / "repl.pw").unlink()
    with pytest.raises(ConfigurationError) as info:
        config.source_dsn("main", environ={})
    message = str(info.value)
    assert "repl.pw" in message
    assert "[sources.main] password_file" in message


def test_without_a_password_key_the_command_line_fallbacks_apply() -> None:
    config = _parse(
        '[sources.main]\ndsn = "mysql://repl@db"\n[targets.ch]\nurl = "http://ch:8123"\n'
        '[replicas.shop]\ndatabase = "shop"\n'
    )
    assert config.source_dsn("main", environ={common.PASSWORD_ENV: "from-env"}).password == "from-env"
    assert config.source_dsn("main", environ={}).password == ""
    assert config.target_url("ch", environ={}) == "http://ch:8123"  # open_target reads MYBINLOG_CH_PASSWORD


@pytest.mark.parametrize(
    "source",
    [
        'dsn = "mysql://repl@db:3306"\npassword = "inline-secret"',
        'dsn = "mysql://repl:inline-secret@db:3306"',
    ],
)
def test_an_inline_password_is_refused_unless_allowed(source: str, caplog: pytest.LogCaptureFixture) -> None:
    text = f'[sources.main]\n{source}\n[targets.ch]\nurl = "chdb:///x"\n[replicas.shop]\ndatabase = "shop"\n'
    with pytest.raises(ConfigurationError) as info:
        _parse(text)
    message = str(info.value)
    assert "[sources.main]" in message
    assert "allow_inline_password = true" in message
    assert "password_file" in message
    assert "password_env" in message
    assert "inline-secret" not in message
    config = _parse(text.replace("[targets.ch]", "allow_inline_password = true\n[targets.ch]"))
    assert "inline-secret" not in repr(config)
    with caplog.at_level(logging.WARNING, logger="mybinlog.cli"):
        assert config.source_dsn("main", environ={common.PASSWORD_ENV: "other"}).password == "inline-secret"
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1
    assert "[sources.main]" in warnings[0]
    assert "written in the configuration file" in warnings[0]
    assert "inline-secret" not in caplog.text


@pytest.mark.parametrize(
    "url",
    ["http://default:inline-secret@ch:8123", "http://ch:8123/?password=inline-secret&max_threads=1"],
)
def test_an_inline_target_password_is_refused_unless_allowed(url: str, caplog: pytest.LogCaptureFixture) -> None:
    text = f'[sources.main]\ndsn = "mysql://r@h"\npassword_env = "P"\n[targets.ch]\nurl = "{url}"\n'
    text += '[replicas.shop]\ndatabase = "shop"\n'
    with pytest.raises(ConfigurationError, match=r"\[targets.ch\]: a password in the url.*allow_inline_password"):
        _parse(text)
    config = _parse(text.replace("[replicas.shop]", "allow_inline_password = true\n[replicas.shop]"))
    assert "inline-secret" not in config.targets["ch"].url
    with caplog.at_level(logging.WARNING, logger="mybinlog.cli"):
        resolved = config.target_url("ch", environ={})
    assert urlsplit(resolved).password == "inline-secret"
    assert "max_threads=1" in resolved or "max_threads" not in url
    assert "inline-secret" not in caplog.text
    assert "[targets.ch]" in caplog.text


# --- the command -------------------------------------------------------------------------------------------------


def test_replicate_with_a_bad_configuration_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, _BASE + "max_row_in_buffer = 5\n")
    assert main(["replicate", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: [replicas.shop]: unknown key 'max_row_in_buffer'" in err
    assert "did you mean 'max_rows_in_buffer'" in err


def test_replicate_checks_the_passwords_before_connecting(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # nothing listens on these hosts: a password error comes first, with exit code 2
    path = _write(tmp_path, _BASE)
    assert main(["replicate", "--config", str(path)]) == 2
    assert "[sources.main]: password_env names the environment variable REPL_PW" in capsys.readouterr().err


@pytest.mark.parametrize(
    "flags",
    [
        ["--source", "mysql://repl@db"],
        ["--database", "shop"],
        ["--engine", "collapsing"],
        ["--max-rows-in-buffer", "5"],
        ["--target", "http://ch:8123"],
        ["--password-file", "/p"],
    ],
)
def test_replica_options_do_not_go_with_a_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str]
) -> None:
    path = _write(tmp_path, _BASE)
    assert main(["replicate", "--config", str(path), *flags]) == 2
    err = capsys.readouterr().err
    assert f"{flags[0]} cannot go with --config" in err
    assert "--once" in err


def test_without_a_configuration_source_and_database_are_required(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replicate", "--database", "shop"]) == 2
    assert "--source mysql://user@host:port is required" in capsys.readouterr().err
    assert main(["replicate", "--source", "mysql://repl@127.0.0.1:1"]) == 2
    assert "--database is required (or --config FILE" in capsys.readouterr().err


# --- several servers of one source, and the half-open bound (docs/ha.md, "Source failover") -----------------------


@pytest.mark.parametrize(
    "dsn",
    [
        '"mysql://repl@db1:3306,db2:3307,[::1]:3308"',
        '["mysql://repl@db1:3306", "db2:3307", "[::1]:3308"]',
        '["mysql://repl@db1:3306", "mysql://repl@db2:3307,[::1]:3308"]',
    ],
    ids=["comma-list", "array-of-url-and-hosts", "array-of-urls"],
)
def test_a_source_names_several_servers(dsn: str) -> None:
    config = _parse(_BASE.replace('"mysql://repl@db:3306"', dsn))
    source = config.sources["main"].dsn
    assert source.servers == (("db1", 3306), ("db2", 3307), ("::1", 3308))
    assert source.user == "repl"
    assert config.source_dsn("main", environ={"REPL_PW": "pw"}).servers == source.servers


@pytest.mark.parametrize(
    ("dsn", "expected"),
    [
        ('["mysql://repl@db1:3306", "mysql://other@db2:3306"]', ["dsn #2", "differs from dsn #1", "the user"]),
        ('["mysql://repl@db1/shop", "mysql://repl@db2/crm"]', ["dsn #2", "the database", "'shop'", "'crm'"]),
        ('["mysql://repl@db1", "mysql://repl@db2?ssl=required"]', ["dsn #2", "the TLS mode (ssl)"]),
        ('["mysql://repl@db1:3306", "db1:3306"]', ["dsn", "db1:3306 twice"]),
        ('["mysql://repl@db1", "db2:notaport"]', ["dsn #2", "malformed"]),
        ('["mysql://repl@db1", ""]', ["dsn #2 is empty"]),
        ("[]", ["[sources.main] dsn", "a non-empty array of strings"]),
        ('["mysql://repl@db1", 3]', ["[sources.main] dsn", "a non-empty array of strings", "a list"]),
        ("3306", ["[sources.main] dsn", "expected a string", "a number"]),
    ],
)
def test_a_source_whose_servers_disagree_is_refused(dsn: str, expected: list[str]) -> None:
    with pytest.raises(ConfigurationError) as info:
        _parse(_BASE.replace('"mysql://repl@db:3306"', dsn))
    message = str(info.value)
    assert message.startswith("replicas.toml: [sources.main] dsn"), message
    for part in expected:
        assert part in message, f"{part!r} not in: {message}"


def test_a_password_in_a_later_url_of_the_array_is_not_shown() -> None:
    with pytest.raises(ConfigurationError) as info:
        _parse(_BASE.replace('"mysql://repl@db:3306"', '["mysql://repl@db1", "mysql://repl:hunter2@db2"]'))
    assert "the password" in str(info.value)
    assert "hunter2" not in str(info.value)


def test_connection_settings_of_a_source_reach_its_stream_and_replicas() -> None:
    text = (
        ONE_OF_EACH.replace('password_env = "REPL_PW"', 'password_env = "REPL_PW"\nsource_heartbeat_seconds = 2')
        + '[sources.other]\ndsn = "mysql://repl@db9"\nsource_idle_seconds = 45\n'
        + "[settings]\nsource_retry_seconds = 60\n"
        + '[replicas.shop]\ndatabase = "shop"\nsource = "main"\n'
        + '[replicas.crm]\ndatabase = "crm"\nsource = "other"\n'
    )
    config = _parse(text)
    assert config.stream_options("main") == {
        "max_reconnect_attempts": 1_000_000,
        "max_reconnect_seconds": 60.0,
        "heartbeat_period": 2.0,
        "idle_timeout": 30.0,  # max(30, 4 x 2)
    }
    assert config.stream_options("other")["heartbeat_period"] == 5.0
    assert config.stream_options("other")["idle_timeout"] == 45.0
    shop, crm = config.replicas
    assert (shop.settings.source_heartbeat_seconds, shop.settings.source_idle_seconds) == (2.0, None)
    assert (crm.settings.source_heartbeat_seconds, crm.settings.source_idle_seconds) == (5.0, 45.0)


@pytest.mark.parametrize(
    ("where", "line", "expected"),
    [
        ("replica", "source_idle_seconds = 60", ["[replicas.shop]", "shared binlog connection", "[sources.NAME]"]),
        ("source", "source_idle_seconds = 4", ["[sources.main]", "source_idle_seconds (4)", "longer than"]),
        ("source", "source_heartbeat_seconds = 0", ["[sources.main]", "source_heartbeat_seconds must be above 0"]),
        ("source", "source_idle_seconds = 'long'", ["[sources.main] source_idle_seconds", "a number"]),
    ],
)
def test_connection_settings_errors(where: str, line: str, expected: list[str]) -> None:
    if where == "replica":
        text = _BASE + line + "\n"
    else:
        text = _BASE.replace('password_env = "REPL_PW"', f'password_env = "REPL_PW"\n{line}')
    with pytest.raises(ConfigurationError) as info:
        _parse(text)
    for part in expected:
        assert part in str(info.value), f"{part!r} not in: {info.value}"
