"""DSN parsing, validation and password redaction."""

from __future__ import annotations

import dataclasses
import ssl

import pytest

from mybinlog.errors import ConfigurationError
from mybinlog.source._dsn import DSN

SECRET = "s3cr&t:p@ss/wörd"
SECRET_URL = "s3cr%26t%3Ap%40ss%2Fw%C3%B6rd"


def test_parse_full_form() -> None:
    dsn = DSN.parse("mysql://repl:pw@db.example.com:3307/shop?connect_timeout=2.5")
    assert dsn.user == "repl"
    assert dsn.password == "pw"
    assert dsn.host == "db.example.com"
    assert dsn.port == 3307
    assert dsn.database == "shop"
    assert dsn.connect_timeout == 2.5
    assert dsn.ssl == "disabled"
    assert dsn.unix_socket is None


def test_parse_defaults_and_mariadb_scheme() -> None:
    dsn = DSN.parse("mariadb://repl@10.0.0.5")
    assert (dsn.host, dsn.port, dsn.password, dsn.database) == ("10.0.0.5", 3306, "", None)
    assert dsn.connect_timeout == 10.0


def test_percent_decoding_of_credentials_and_database() -> None:
    dsn = DSN.parse(f"mysql://us%40er:{SECRET_URL}@h:1/my%20db")
    assert dsn.user == "us@er"
    assert dsn.password == SECRET
    assert dsn.database == "my db"


def test_unencoded_at_sign_in_password_uses_last_at() -> None:
    dsn = DSN.parse("mysql://u:p@ss@host:3306")
    assert dsn.password == "p@ss"
    assert dsn.host == "host"


def test_ipv6_host() -> None:
    dsn = DSN.parse("mysql://repl:pw@[::1]:3307/db")
    assert dsn.host == "::1"
    assert dsn.port == 3307
    assert dsn.display == "repl@[::1]:3307"


def test_unix_socket() -> None:
    dsn = DSN.parse("mysql://root@localhost?unix_socket=/run/mysqld/mysqld.sock")
    assert dsn.unix_socket == "/run/mysqld/mysqld.sock"
    assert dsn.host == "localhost"


@pytest.mark.parametrize(
    ("query", "mode"),
    [
        ("ssl=true", "required"),
        ("ssl=1", "required"),
        ("ssl=require", "required"),
        ("ssl_mode=REQUIRED", "required"),
        ("ssl=verify", "verify_ca"),
        ("ssl=verify-ca", "verify_ca"),
        ("ssl=verify_identity", "verify_identity"),
        ("ssl=verify-full", "verify_identity"),
        ("ssl=false", "disabled"),
        ("ssl_ca=/etc/ca.pem", "verify_ca"),
        ("ssl=required&ssl_ca=/etc/ca.pem", "required"),
    ],
)
def test_ssl_modes(query: str, mode: str) -> None:
    assert DSN.parse(f"mysql://u@h?{query}").ssl == mode


def test_ssl_paths() -> None:
    dsn = DSN.parse("mysql://u@h?ssl=verify_ca&ssl_ca=/a/ca.pem&ssl_cert=/a/c.pem&ssl_key=/a/k.pem")
    assert (dsn.ssl_ca, dsn.ssl_cert, dsn.ssl_key) == ("/a/ca.pem", "/a/c.pem", "/a/k.pem")


def test_ssl_context_required_does_not_verify() -> None:
    ctx = DSN.parse("mysql://u@h?ssl=true").ssl_context()
    assert isinstance(ctx, ssl.SSLContext)
    assert ctx.verify_mode == ssl.CERT_NONE
    assert ctx.check_hostname is False


def test_ssl_context_verify_identity_checks_host() -> None:
    ctx = DSN.parse("mysql://u@h?ssl=verify_identity").ssl_context()
    assert ctx is not None
    assert ctx.verify_mode == ssl.CERT_REQUIRED
    assert ctx.check_hostname is True


def test_ssl_context_disabled_is_none() -> None:
    assert DSN.parse("mysql://u@h").ssl_context() is None


def test_ssl_context_missing_ca_file_is_configuration_error() -> None:
    dsn = DSN.parse(f"mysql://u:{SECRET_URL}@h?ssl_ca=/nonexistent/ca.pem")
    with pytest.raises(ConfigurationError, match="ssl_ca") as info:
        dsn.ssl_context()
    assert SECRET not in str(info.value)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("postgres://u:pw@h/db", "scheme"),
        ("u:pw@h:3306", "no scheme"),
        ("mysql://h:3306/db", "no user"),
        ("mysql://:pw@h:3306/db", "no user"),
        ("mysql://u:pw@h:notaport/db", "port"),
        ("mysql://u:pw@h:70000/db", "port"),
        ("mysql://u:pw@h:0", "port"),
        ("mysql://u:pw@[::1/db", "malformed"),
        ("mysql://u:pw@h?bogus=1", "unknown DSN option"),
        ("mysql://u:pw@h?ssl=maybe", "ssl="),
        ("mysql://u:pw@h?connect_timeout=soon", "connect_timeout"),
        ("mysql://u:pw@h?connect_timeout=0", "connect_timeout"),
        ("mysql://u:pw@h?ssl=true&ssl_mode=required", "twice"),
        ("mysql://u:pw@h?ssl_key=/k.pem", "ssl_cert"),
        ("mysql://u:pw@h/a/b", "'/'"),
    ],
)
def test_bad_dsns_raise_configuration_error(text: str, fragment: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        DSN.parse(text)
    assert fragment in str(info.value)


def test_error_names_expected_form() -> None:
    with pytest.raises(ConfigurationError, match=r"expected mysql://user\[:password\]@host"):
        DSN.parse("http://x")


@pytest.mark.parametrize(
    "text",
    [
        f"mysql://u:{SECRET_URL}@h:notaport/db",
        f"mysql://u:{SECRET_URL}@[::1/db",
        f"mysql://u:{SECRET_URL}@h?unknown=1",
        f"mysql://u:{SECRET_URL}@h?ssl=maybe",
        f"mysql://u:{SECRET_URL}@h/a/b",
        f"pgsql://u:{SECRET_URL}@h",
        f"mysql://u:{SECRET_URL}@h:3306?connect_timeout=x",
    ],
)
def test_errors_never_contain_the_password(text: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        DSN.parse(text)
    message = str(info.value) + repr(info.value)
    assert SECRET not in message
    assert SECRET_URL not in message
    assert "s3cr" not in message


def test_password_never_in_repr_str_display() -> None:
    dsn = DSN.parse(f"mysql://repl:{SECRET_URL}@db:3306/shop?ssl=true")
    assert dsn.password == SECRET
    for text in (repr(dsn), str(dsn), dsn.display, f"{dsn}", f"{dsn!r}", dsn.to_url()):
        assert SECRET not in text
        assert SECRET_URL not in text
        assert "s3cr" not in text
    assert dsn.display == "repl@db:3306"
    assert str(dsn) == "mysql://repl:***@db:3306/shop?ssl=required"


def test_to_url_unredacted_round_trips() -> None:
    dsn = DSN.parse(f"mysql://repl:{SECRET_URL}@[::1]:3307/my%20db?ssl=verify_ca&ssl_ca=/x/ca.pem&connect_timeout=3")
    again = DSN.parse(dsn.to_url(redact=False))
    assert again == dsn


def test_key_identifies_shared_client() -> None:
    a = DSN.parse("mysql://repl:pw@h:3306/db1?ssl=true")
    b = DSN.parse("mysql://repl:pw@h:3306/db2")
    c = DSN.parse("mysql://repl:other@h:3306/db1")
    assert a.key == b.key == ("repl", "pw", "h", 3306, ())
    assert a.key != c.key
    assert a.display == c.display  # same display name, different clients: the password is not shown


def test_several_servers_parse_in_order() -> None:
    dsn = DSN.parse(f"mysql://repl:{SECRET_URL}@db1:3306,db2,[::1]:3307/shop?ssl=true")
    assert dsn.servers == (("db1", 3306), ("db2", 3306), ("::1", 3307))
    assert (dsn.host, dsn.port) == ("db1", 3306)
    assert dsn.display == "repl@db1:3306,db2:3306,[::1]:3307"
    for shown in (repr(dsn), str(dsn), dsn.display):
        assert SECRET not in shown
    one = dsn.at(2)
    assert (one.host, one.port, one.fallbacks, one.database, one.ssl) == ("::1", 3307, (), "shop", "required")
    assert one.password == SECRET
    assert DSN.parse(dsn.to_url(redact=False)) == dsn
    # a list of servers is another shared client than its first server alone
    assert dsn.key != dsn.at(0).key
    assert dsn.with_servers([("db2", 3306)]).display == "repl@db2:3306"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("mysql://u@db1,", "empty entry"),
        ("mysql://u@db1,,db2", "empty entry"),
        ("mysql://u@db1:3306,db1", "names a server twice"),
        ("mysql://u@db1,db2:99999", "malformed"),
        ("mysql://u@db1,db2?unix_socket=/s", "unix_socket names one server"),
    ],
)
def test_several_servers_bad_lists_are_refused(text: str, says: str) -> None:
    with pytest.raises(ConfigurationError, match=says):
        DSN.parse(text)


def test_keyword_construction_and_frozen() -> None:
    dsn = DSN(user="u", password="pw", host="h", port=3310)
    assert dsn.display == "u@h:3310"
    with pytest.raises(dataclasses.FrozenInstanceError):
        dsn.port = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"user": ""},
        {"user": "u", "port": 0},
        {"user": "u", "port": True},
        {"user": "u", "connect_timeout": -1},
        {"user": "u", "connect_timeout": float("inf")},
        {"user": "u", "ssl": "sometimes"},
    ],
)
def test_keyword_validation(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        DSN(**kwargs)  # type: ignore[arg-type]
