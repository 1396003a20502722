"""Secrets on the command line: where every ``mybinlog`` command that connects takes its passwords from.

A password written in a URL on the command line is visible to every user of the machine (``ps``,
``/proc/PID/cmdline``). The commands therefore also take it from a file or the environment. The first one found
wins:

==== ======================================== =================================================
     source (MySQL/MariaDB)                   target (ClickHouse over HTTP)
==== ======================================== =================================================
1    the DSN URL (``mysql://user:pw@host``)   the URL (``http://user:pw@host``, ``?password=``)
2    ``--password-file PATH``                 ``--target-password-file PATH``
3    ``MYBINLOG_PASSWORD_FILE=PATH``          ``MYBINLOG_CH_PASSWORD_FILE=PATH``
4    ``MYBINLOG_PASSWORD``                    ``MYBINLOG_CH_PASSWORD`` (read by ``open_target``)
==== ======================================== =================================================

A password in the URL *and* a password file option is an error ("give the password once"); the environment is
a fallback and never conflicts. A password in a URL works but logs one WARNING (without the password) saying how
to keep it off the command line. A password file holds the password alone; one trailing newline (``\\n`` or
``\\r\\n``) is ignored, so ``echo pw > file`` works. Errors name the file, never its content.

The module is self-contained (standard library, :class:`~mybinlog.source.DSN` and the exception tree), so the
command modules can import it without start-up cost. See docs/transport.md, "Passwords: keeping them off the
command line".
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

from ..errors import ConfigurationError
from ..replication import check_replica_name
from ..source import DSN

__all__ = [
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_LOCKED",
    "EXIT_OK",
    "EXIT_STOPPED_TABLES",
    "EXIT_UNAVAILABLE",
    "EXIT_USAGE",
    "CH_PASSWORD_ENV",
    "CH_PASSWORD_FILE_ENV",
    "PASSWORD_ENV",
    "PASSWORD_FILE_ENV",
    "add_source_arguments",
    "add_target_arguments",
    "check_replica_name",
    "combine_source_dsns",
    "read_password_file",
    "resolve_source_password",
    "resolve_target_url",
    "source_dsn",
    "target_url",
    "target_url_with_password",
]

logger = logging.getLogger("mybinlog.cli")

#: The source (MySQL/MariaDB) password itself.
PASSWORD_ENV = "MYBINLOG_PASSWORD"
#: A file holding the source password (the environment form of ``--password-file``).
PASSWORD_FILE_ENV = "MYBINLOG_PASSWORD_FILE"
#: The ClickHouse password itself; read by :func:`mybinlog.replication.open_target` (its ``PASSWORD_ENV``), not
#: here: named for help texts only.
CH_PASSWORD_ENV = "MYBINLOG_CH_PASSWORD"
#: A file holding the ClickHouse password (the environment form of ``--target-password-file``).
CH_PASSWORD_FILE_ENV = "MYBINLOG_CH_PASSWORD_FILE"

#: A password file larger than this is refused (a wrong path such as /dev/zero must not hang or fill memory).
MAX_PASSWORD_FILE_BYTES = 64 * 1024

_ArgumentContainer = argparse.ArgumentParser | argparse._ArgumentGroup


# --- exit codes (docs/exit-codes.md: one table for every command) ---------------------------------------------------

EXIT_OK = 0  # done: stopped cleanly, caught up (--once), printed what was asked
EXIT_ERROR = 1  # a permanent error: the message says what to fix (a grant, the TLS CA, a purged binlog, ...)
EXIT_USAGE = 2  # bad arguments, DSN, URL or settings (argparse's code too)
EXIT_STOPPED_TABLES = 3  # replicate: the replica ran, but the replication of some tables stopped
EXIT_LOCKED = 4  # replicate: another process writes this replica (or took it over)
EXIT_UNAVAILABLE = 75  # EX_TEMPFAIL: the source or ClickHouse unreachable (past the retry budget): run again later
EXIT_INTERRUPTED = 130  # a (second) SIGINT/SIGTERM aborted the work in flight


def exit_code(exc: BaseException) -> int:
    """The exit code of an error that ended a command: 2 for bad input, 4 for a replica written elsewhere, 75 for
    what running again later may cure (``retriable``: the source or ClickHouse unreachable), 1 for the rest (a
    permanent error: a wrong TLS CA, a missing grant, a purged binlog; the message names the fix)."""
    from ..errors import MybinlogError, ReplicaLockedError

    if isinstance(exc, ReplicaLockedError):
        return EXIT_LOCKED
    if isinstance(exc, ConfigurationError):
        return EXIT_USAGE
    if isinstance(exc, MybinlogError) and exc.retriable:
        return EXIT_UNAVAILABLE
    return EXIT_ERROR


# --- argument definitions ----------------------------------------------------------------------------------------


_COLUMNS: list[int] = []


def _terminal_columns() -> int:
    """The terminal's width as shutil.get_terminal_size finds it (COLUMNS, then the terminal, else 80), once."""
    if not _COLUMNS:
        try:
            columns = int(os.environ.get("COLUMNS", "0"))
        except ValueError:
            columns = 0
        if columns <= 0:
            try:
                columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
            except (AttributeError, ValueError, OSError):
                columns = 0
        _COLUMNS.append(columns or 80)
    return _COLUMNS[0]


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help formatter, sized without importing shutil (argparse makes one per option it adds: shutil
    and what it imports were about 2 ms of every command's start-up)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None):
        super().__init__(prog, indent_increment, max_help_position, _terminal_columns() - 2 if width is None else width)


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser with :class:`HelpFormatter` (its subcommands' parsers are of this class too)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(**kwargs)


def add_source_arguments(parser: _ArgumentContainer) -> None:
    """Add ``--password-file PATH`` (the source password, read from a file) to a parser or argument group.

    The DSN option itself stays with each command (``--source``, ``--dsn``): its name and rules differ.
    """
    parser.add_argument(
        "--password-file",
        metavar="PATH",
        help=f"read the MySQL/MariaDB password from this file (one trailing newline ignored) instead of writing it "
        f"in the URL, where `ps` shows it; also {PASSWORD_FILE_ENV}=PATH, or the password in {PASSWORD_ENV}",
    )


def add_target_arguments(parser: _ArgumentContainer) -> None:
    """Add ``--target-password-file PATH`` (the ClickHouse password, read from a file) to a parser or group."""
    parser.add_argument(
        "--target-password-file",
        metavar="PATH",
        help=f"read the ClickHouse password (http:// targets) from this file (one trailing newline ignored) "
        f"instead of writing it in the URL; also {CH_PASSWORD_FILE_ENV}=PATH, or the password in {CH_PASSWORD_ENV}",
    )


# --- resolution from parsed arguments ----------------------------------------------------------------------------


def source_dsn(args: argparse.Namespace, *, attr: str = "source", option: str = "--source") -> DSN:
    """The source DSN of a command: ``args.<attr>`` parsed, with its password from the URL, ``--password-file``,
    ``MYBINLOG_PASSWORD_FILE`` or ``MYBINLOG_PASSWORD`` (:func:`resolve_source_password`).

    ``option`` names the DSN option in messages. Raises :class:`ConfigurationError` (never showing a password).
    """
    value = getattr(args, attr, None)
    texts = [value] if isinstance(value, str) else list(value or ())
    if not texts:
        raise ConfigurationError(f"{option} mysql://user@host:port is required")
    dsn = combine_source_dsns(texts, option=option)
    return resolve_source_password(dsn, password_file=getattr(args, "password_file", None), option=option)


#: What every server of one source shares: the servers of a DSN differ only in host and port.
_SHARED_DSN_FIELDS = (
    ("user", "the user"),
    ("password", "the password"),
    ("database", "the database"),
    ("unix_socket", "unix_socket"),
    ("ssl", "the TLS mode (ssl)"),
    ("ssl_ca", "ssl_ca"),
    ("ssl_cert", "ssl_cert"),
    ("ssl_key", "ssl_key"),
    ("connect_timeout", "connect_timeout"),
)


def combine_source_dsns(texts: Sequence[str], *, option: str = "--source") -> DSN:
    """One DSN naming every server of ``texts``, in order: a repeated ``--source`` (or the list of a configuration
    file's ``dsn``). The first is a URL (``mysql://repl@db1:3306``, itself possibly a list ``db1,db2``); each later
    one is a URL or a bare ``host[:port]`` (``db2:3306``, ``[::1]:3307``, comma lists too). URLs must agree on
    everything but their servers (user, password, database, TLS options, connect_timeout): one source has one
    login, else :class:`ConfigurationError` naming the difference (never a password). See docs/ha.md, "Source
    failover"."""
    if not texts:
        raise ConfigurationError(f"{option} mysql://user@host:port is required")
    first = DSN.parse(texts[0])
    servers = list(first.servers)
    for i, text in enumerate(texts[1:], 2):
        if not isinstance(text, str) or not text.strip():
            raise ConfigurationError(f"{option} #{i} is empty: give a URL or host:port")
        if "://" in text:
            other = DSN.parse(text)
            for name, what in _SHARED_DSN_FIELDS:
                mine, theirs = getattr(first, name), getattr(other, name)
                if mine != theirs:
                    shown = "" if name == "password" else f" ({mine!r} and {theirs!r})"
                    raise ConfigurationError(
                        f"{option} #{i} ({other.display}) differs from {option} #1 ({first.display}) in {what}{shown}: "
                        "the servers of one source are one replication topology read with one login and one set of "
                        "options; give the same URL options (or the later servers as host:port only)"
                    )
            servers.extend(other.servers)
        else:
            try:
                servers.extend(server_list(text))
            except ConfigurationError as exc:
                raise ConfigurationError(f"{option} #{i}: {exc}") from None
    seen: set[tuple[str, int]] = set()
    for server in servers:
        if server in seen:
            raise ConfigurationError(
                f"{option} names the server {_show_server(server)} twice: list each server of the source once"
            )
        seen.add(server)
    if first.unix_socket and len(servers) > 1:
        raise ConfigurationError(
            f"{option} #1 connects through a unix socket, which names one server: give several servers by host:port"
        )
    return first.with_servers(servers)


def server_list(text: str) -> list[tuple[str, int]]:
    """``db2:3306`` or ``db2,db3:3307`` or ``[::1]:3307`` -> [(host, port), ...] (port 3306 when left out)."""
    from ..source import server_list as parse

    return parse(text)


def _show_server(server: tuple[str, int]) -> str:
    host, port = server
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def target_url(args: argparse.Namespace, *, attr: str = "target", option: str = "--target") -> str:
    """The ClickHouse target URL of a command, for :func:`~mybinlog.replication.open_target`: ``args.<attr>`` with
    the password of ``--target-password-file`` or ``MYBINLOG_CH_PASSWORD_FILE`` put in (in memory only; see
    :func:`resolve_target_url`). The result may contain the password: pass it on, never print or log it."""
    return resolve_target_url(
        getattr(args, attr), password_file=getattr(args, "target_password_file", None), option=option
    )


# --- the rules ---------------------------------------------------------------------------------------------------


def read_password_file(path: str, *, what: str) -> str:
    """The password in file ``path``: its content as UTF-8 without one trailing newline.

    ``what`` says where the path came from (``--password-file``, ``MYBINLOG_PASSWORD_FILE``) for messages.
    A missing, unreadable, empty, oversized or non-UTF-8 file raises :class:`ConfigurationError` naming the path
    and never the content.
    """
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_PASSWORD_FILE_BYTES + 1)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigurationError(f"cannot read the password file {path!r} ({what}): {reason}") from exc
    if len(data) > MAX_PASSWORD_FILE_BYTES:
        raise ConfigurationError(
            f"the password file {path!r} ({what}) is larger than {MAX_PASSWORD_FILE_BYTES} bytes: "
            "it must hold the password alone"
        )
    if data.endswith(b"\r\n"):
        data = data[:-2]
    elif data.endswith(b"\n"):
        data = data[:-1]
    try:
        password = data.decode("utf-8")
    except UnicodeDecodeError:
        # not `from exc`: the exception carries the file's bytes
        raise ConfigurationError(f"the password file {path!r} ({what}) is not UTF-8 text") from None
    if not password:
        raise ConfigurationError(f"the password file {path!r} ({what}) is empty")
    return password


def resolve_source_password(
    dsn: DSN,
    *,
    password_file: str | None = None,
    environ: Mapping[str, str] | None = None,
    option: str = "--source",
) -> DSN:
    """``dsn`` with its password from the first of: the URL, ``password_file``, the file named by
    ``MYBINLOG_PASSWORD_FILE``, ``MYBINLOG_PASSWORD`` (``environ``, default ``os.environ``).

    A password in the URL together with ``password_file`` is a :class:`ConfigurationError`; a password in the
    URL logs one WARNING (it was on the command line). ``option`` names the DSN option in messages.
    """
    env = os.environ if environ is None else environ
    if dsn.password:
        if password_file is not None:
            raise ConfigurationError(
                f"the password of {dsn.display} is in the {option} URL and in --password-file: give the password "
                "once (leave it out of the URL)"
            )
        logger.warning(
            "the password of %s is on the command line (%s), where other users of this machine can read it "
            "(ps, /proc/PID/cmdline); leave it out of the URL and put it in a file given with --password-file "
            "(or %s) or in the environment variable %s",
            dsn.display,
            option,
            PASSWORD_FILE_ENV,
            PASSWORD_ENV,
        )
        return dsn
    if password_file is not None:
        password, origin = read_password_file(password_file, what="--password-file"), "--password-file"
    elif env.get(PASSWORD_FILE_ENV):
        path = env[PASSWORD_FILE_ENV]
        password, origin = read_password_file(path, what=PASSWORD_FILE_ENV), PASSWORD_FILE_ENV
    elif env.get(PASSWORD_ENV):
        password, origin = env[PASSWORD_ENV], PASSWORD_ENV
    else:
        return dsn
    logger.debug("the password of %s comes from %s", dsn.display, origin)
    return dataclasses.replace(dsn, password=password)


def resolve_target_url(
    url: str,
    *,
    password_file: str | None = None,
    environ: Mapping[str, str] | None = None,
    option: str = "--target",
) -> str:
    """``url`` with the ClickHouse password of ``password_file`` (or of the file named by
    ``MYBINLOG_CH_PASSWORD_FILE`` in ``environ``) put in, when the URL has none.

    Only ``http(s)://`` targets have passwords: a password file with a chdb target is a
    :class:`ConfigurationError`, and so is one with a URL that has a password (``user:pw@`` or ``?password=``).
    A password in the URL logs one WARNING. Without a file the URL is returned as is and
    :func:`~mybinlog.replication.open_target` falls back to ``MYBINLOG_CH_PASSWORD`` itself. The result may
    contain the password: never print or log it.
    """
    env = os.environ if environ is None else environ
    try:
        parts = urlsplit(url)
        url_password = parts.password
    except ValueError:  # malformed: open_target says so (with the password redacted)
        return url
    if parts.scheme not in ("http", "https"):
        if password_file is not None:
            raise ConfigurationError(
                f"--target-password-file goes with a ClickHouse server URL (http://host:8123); the {option} is "
                "not one (embedded chdb targets have no password)"
            )
        return url
    query = parse_qsl(parts.query, keep_blank_values=True)
    query_password = next((value for key, value in query if key == "password"), None)
    if url_password is not None or query_password is not None:
        if password_file is not None:
            raise ConfigurationError(
                f"the ClickHouse password is in the {option} URL and in --target-password-file: give the password "
                "once (leave it out of the URL)"
            )
        if url_password or query_password:
            logger.warning(
                "the ClickHouse password is on the command line (%s), where other users of this machine can read "
                "it (ps, /proc/PID/cmdline); leave it out of the URL and put it in a file given with "
                "--target-password-file (or %s) or in the environment variable %s",
                option,
                CH_PASSWORD_FILE_ENV,
                CH_PASSWORD_ENV,
            )
        return url
    if password_file is not None:
        password = read_password_file(password_file, what="--target-password-file")
    elif env.get(CH_PASSWORD_FILE_ENV):
        password = read_password_file(env[CH_PASSWORD_FILE_ENV], what=CH_PASSWORD_FILE_ENV)
    else:
        return url  # open_target reads MYBINLOG_CH_PASSWORD
    return target_url_with_password(url, password)


def target_url_with_password(url: str, password: str) -> str:
    """The ClickHouse server URL ``url`` (``http(s)://``, without a password) with ``password`` put in, for the
    user :func:`~mybinlog.replication.open_target` would log in as: the URL's, else ``?user=``, else ``default``.
    The result holds the password: never print or log it."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    user = parts.username or quote(next((v for k, v in query if k == "user"), "") or "default", safe="")
    hostport = parts.netloc.rpartition("@")[2]
    netloc = f"{user}:{quote(password, safe='')}@{hostport}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
