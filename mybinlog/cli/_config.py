"""``mybinlog replicate --config FILE``: one TOML file naming the sources, targets and replicas of one process.

::

    [status]                                  # optional: as --status-address / --status-interval
    address = "unix:/run/mybinlog/status.sock"

    [settings]                                # optional: defaults of every replica (ReplicationSettings names)
    max_flush_data_time = 500

    [sources.main]                            # a MySQL/MariaDB server: one binlog connection for its replicas
    dsn = "mysql://repl@db:3306"              # never a password here (see below)
    # several servers of one replication topology, read in turn when one fails (docs/ha.md, "Source failover"):
    # dsn = "mysql://repl@db1:3306,db2:3306"  or  dsn = ["mysql://repl@db1:3306", "db2:3306"]
    password_file = "/etc/mybinlog/repl.pw"   # or password_env = "NAME"

    [targets.warehouse]                       # a ClickHouse server (http://), embedded chdb (chdb:///path) or
                                              # Kafka (kafka://broker:9092?prefix=shop: docs/kafka.md)
    url = "http://default@ch:8123"
    password_env = "CH_PASSWORD"

    [replicas.shop]                           # the table key is the replica's name (its checkpoint, its lock)
    source = "main"                           # may be left out when the file has one source (target: the same)
    target = "warehouse"
    database = "shop"
    tables = ["orders", "customers"]          # default: every table
    target_database = "shop"                  # default: the database's name
    engine = "replacing"                      # and any other ReplicationSettings field by its name

Replicas may also be written as an array, ``[[replicas]]`` with ``name = ...`` (default: the database's name).

The rules, each checked when the file is read (:func:`load_config`), with an error naming the file, the table, the
key and the fix (a :class:`~mybinlog.ConfigurationError`; ``mybinlog replicate`` exits with code 2):

* Unknown keys and tables are errors (with the nearest known key), never ignored; so are values of the wrong type,
  negative sizes and times, a source or target a replica names that the file does not define, two replicas of one
  name, and two replicas writing the same ClickHouse database of the same target.
* Passwords come from a file (``password_file``, the password alone, one trailing newline ignored; a relative
  path is relative to the configuration file's directory) or the environment (``password_env``, the name of a
  variable), one of them. A password in the file itself (``password = ...``, or in the ``dsn``/``url``) is refused
  unless the table also says ``allow_inline_password = true``, and then logs a WARNING. Without any of these, the
  command line's environment fallbacks apply (``MYBINLOG_PASSWORD_FILE``/``MYBINLOG_PASSWORD`` for sources,
  ``MYBINLOG_CH_PASSWORD_FILE``/``MYBINLOG_CH_PASSWORD`` for targets). Files and variables are read by
  :meth:`ReplicasConfig.source_dsn` and :meth:`ReplicasConfig.target_url` (before any replica starts).
* A source's ``dsn`` is a URL, which may list several servers of one replication topology
  (``mysql://repl@db1:3306,db2:3306``), or an array whose first item is a URL and whose later items are URLs or
  bare ``host:port`` (``["mysql://repl@db1:3306", "db2:3306"]``); the URLs of an array must agree on everything but
  their servers (user, database, TLS options), as a repeated ``--source`` must. The stream reads the first server
  that works and moves to the next when it fails (docs/ha.md, "Source failover").
* The settings of a source's shared connection (``max_bytes_in_binlog_dispatcher_buffer``,
  ``max_flush_milliseconds_in_binlog_dispatcher``, ``source_heartbeat_seconds``, ``source_idle_seconds``) belong
  to ``[sources.NAME]`` (defaults in ``[settings]``): one connection has one value. Its stream reconnects for the
  largest ``source_retry_seconds`` of its replicas.

The model lives here, in the command line layer, rather than in :mod:`mybinlog.replication`: a program that embeds
mybinlog builds its :class:`~mybinlog.replication.Replicator` objects (and passes them one shared
:class:`~mybinlog.BinlogClient`) in Python with typed settings; the file, its password rules and its exit codes are
the command's. See docs/replication.md, "One configuration for many replicas".
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import os
import re
import tomllib
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from ..errors import ConfigurationError
from ..replication import ReplicationSettings
from ..sharing import DEFAULT_MAX_BYTES_IN_BINLOG_DISPATCHER_BUFFER
from ..source import DSN
from ..status import parse_status_address
from ._common import (
    combine_source_dsns,
    read_password_file,
    resolve_source_password,
    resolve_target_url,
    target_url_with_password,
)

__all__ = [
    "PasswordSource",
    "ReplicaConfig",
    "ReplicasConfig",
    "SourceConfig",
    "TargetConfig",
    "load_config",
    "parse_config",
]

logger = logging.getLogger("mybinlog.cli")

#: Settings of a source's shared binlog connection (the first creator of a client fixes them).
CONNECTION_SETTINGS = (
    "max_bytes_in_binlog_dispatcher_buffer",
    "max_flush_milliseconds_in_binlog_dispatcher",
    "source_heartbeat_seconds",
    "source_idle_seconds",
)
_SETTING_TYPES: dict[str, Any] = typing.get_type_hints(ReplicationSettings)
#: The ReplicationSettings fields a replica (or [settings]) may set, by name.
REPLICA_SETTINGS = tuple(f.name for f in dataclasses.fields(ReplicationSettings) if f.name not in CONNECTION_SETTINGS)
_DEFAULTS = ReplicationSettings()
_CONNECTION_DEFAULTS = {
    "max_bytes_in_binlog_dispatcher_buffer": DEFAULT_MAX_BYTES_IN_BINLOG_DISPATCHER_BUFFER,
    # the replicate command's default (ClickHouse's 1000 ms adds up to a second of lag)
    "max_flush_milliseconds_in_binlog_dispatcher": _DEFAULTS.max_flush_milliseconds_in_binlog_dispatcher,
    "source_heartbeat_seconds": _DEFAULTS.source_heartbeat_seconds,
    "source_idle_seconds": _DEFAULTS.source_idle_seconds,
}
#: The connection settings that are ReplicationSettings fields too (each replica of the source gets the source's).
_REPLICA_CONNECTION_SETTINGS = tuple(k for k in CONNECTION_SETTINGS if k in _SETTING_TYPES)
_PASSWORD_KEYS = ("password_file", "password_env", "password", "allow_inline_password")
_SOURCE_KEYS = ("dsn", *_PASSWORD_KEYS, *CONNECTION_SETTINGS)
_TARGET_KEYS = ("url", *_PASSWORD_KEYS)
_REPLICA_KEYS = ("source", "target", "database", "tables", "target_database", *REPLICA_SETTINGS)
_SETTINGS_KEYS = (*REPLICA_SETTINGS, *CONNECTION_SETTINGS)
_STATUS_KEYS = ("address", "log_interval")
_TOP_KEYS = ("sources", "targets", "replicas", "settings", "status")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# --- the model ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class PasswordSource:
    """Where the password of a source or target comes from: a file, an environment variable, the configuration file
    itself (only with ``allow_inline_password = true``), or none of them (the environment fallbacks)."""

    file: str | None = None
    env: str | None = None
    inline: str | None = field(default=None, repr=False)


@dataclass(frozen=True, kw_only=True)
class SourceConfig:
    """``[sources.NAME]``: a MySQL/MariaDB server; its replicas share one binlog client (one connection)."""

    name: str
    dsn: DSN  # without the password (see ``password``)
    password: PasswordSource
    max_bytes_in_binlog_dispatcher_buffer: int
    max_flush_milliseconds_in_binlog_dispatcher: int
    source_heartbeat_seconds: float = _DEFAULTS.source_heartbeat_seconds
    source_idle_seconds: float | None = None  # None: max(30, 4 * source_heartbeat_seconds)


@dataclass(frozen=True, kw_only=True)
class TargetConfig:
    """``[targets.NAME]``: a ClickHouse server (``http(s)://``) or embedded chdb, opened once for its replicas; or
    Kafka (``kafka://``: one producer per replica)."""

    name: str
    url: str  # without the password (see ``password``)
    password: PasswordSource

    @property
    def embedded(self) -> bool:
        return not self.url.startswith(("http://", "https://", "kafka://"))

    @property
    def kafka(self) -> bool:
        return self.url.startswith("kafka://")


@dataclass(frozen=True, kw_only=True)
class ReplicaConfig:
    """``[replicas.NAME]``: one replica, ``database`` of ``source`` into ``target_database`` of ``target``."""

    name: str
    source: str
    target: str
    database: str
    tables: tuple[str, ...] | None
    target_database: str
    settings: ReplicationSettings


@dataclass(frozen=True, kw_only=True)
class ReplicasConfig:
    """A parsed and checked configuration file (:func:`load_config`)."""

    path: str
    sources: Mapping[str, SourceConfig]
    targets: Mapping[str, TargetConfig]
    replicas: tuple[ReplicaConfig, ...]
    status_address: str | None = None
    status_interval: float | None = None

    def source_dsn(self, name: str, *, environ: Mapping[str, str] | None = None) -> DSN:
        """The DSN of source ``name`` with its password (read now from its file or variable). Never log it."""
        source = self.sources[name]
        where = f"{self.path}: {_table('sources', name)}"
        password = _password(source.password, where, environ)
        if password is None:  # the command line's fallbacks: MYBINLOG_PASSWORD_FILE, MYBINLOG_PASSWORD
            return resolve_source_password(source.dsn, environ=environ, option=where)
        return dataclasses.replace(source.dsn, password=password)

    def target_url(self, name: str, *, environ: Mapping[str, str] | None = None) -> str:
        """The URL of target ``name`` with its password put in (read now). The result may hold the password."""
        target = self.targets[name]
        where = f"{self.path}: {_table('targets', name)}"
        password = _password(target.password, where, environ)
        if password is None:  # MYBINLOG_CH_PASSWORD_FILE here, MYBINLOG_CH_PASSWORD in open_target
            return resolve_target_url(target.url, environ=environ, option=where)
        return target_url_with_password(target.url, password)

    def connection_retry_seconds(self, source: str) -> float:
        """How long the shared stream of ``source`` reconnects: the largest ``source_retry_seconds`` of its
        replicas (each replica still gives up on its own lock after its own)."""
        return max(r.settings.source_retry_seconds for r in self.replicas if r.source == source)

    def stream_options(self, source: str) -> dict[str, Any]:
        """The ``stream_options`` of the shared client of ``source``: it reconnects for
        :meth:`connection_retry_seconds`, with the source's heartbeat period and idle bound (half-open detection)."""
        spec = self.sources[source]
        settings = ReplicationSettings(
            source_heartbeat_seconds=spec.source_heartbeat_seconds, source_idle_seconds=spec.source_idle_seconds
        )
        return settings.stream_options(self.connection_retry_seconds(source))


# --- reading -----------------------------------------------------------------------------------------------------


def load_config(path: str | os.PathLike[str]) -> ReplicasConfig:
    """Read and check the configuration file ``path`` (passwords are read later, see :class:`ReplicasConfig`).

    Raises :class:`~mybinlog.ConfigurationError` naming the file, the table, the key and the fix.
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            data = f.read()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigurationError(f"cannot read the configuration file {name!r}: {reason}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigurationError(f"{name}: not UTF-8 text (a TOML file is UTF-8)") from None
    return parse_config(text, path=name)


def parse_config(text: str, *, path: str = "<config>") -> ReplicasConfig:
    """Parse and check the TOML ``text`` (``path`` names it in messages; relative password files are relative to
    its directory)."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"{path}: not valid TOML: {exc}") from None
    return _Parser(path).parse(doc)


class _Parser:
    def __init__(self, path: str) -> None:
        self.path = path
        self.base = os.path.dirname(os.path.abspath(path)) if not path.startswith("<") else os.getcwd()

    def error(self, where: str, message: str) -> ConfigurationError:
        return ConfigurationError(f"{self.path}: {where}: {message}")

    # -- the document --------------------------------------------------------------------------------------------
    def parse(self, doc: dict[str, Any]) -> ReplicasConfig:
        self.check_keys(doc, _TOP_KEYS, "the top level", "top-level tables")
        settings = self.table(doc, "settings", "the top level", "[settings]")
        self.check_keys(settings, _SETTINGS_KEYS, "[settings]", "settings")
        defaults = {k: self.setting(settings, k, "[settings]") for k in settings}
        status = self.table(doc, "status", "the top level", "[status]")
        self.check_keys(status, _STATUS_KEYS, "[status]", "keys of [status]")
        address = self.string(status, "address", "[status]", 'address = "unix:/run/mybinlog/status.sock"')
        if address is not None:
            try:
                parse_status_address(address)
            except ConfigurationError as exc:
                raise self.error("[status] address", str(exc)) from None
        interval = self.number(status, "log_interval", "[status]", float)

        sources = {
            name: self.source(name, body, defaults)
            for name, body in self.named_tables(doc, "sources", 'dsn = "mysql://repl@db:3306"').items()
        }
        targets = {
            name: self.target(name, body)
            for name, body in self.named_tables(doc, "targets", 'url = "http://default@ch:8123"').items()
        }
        replicas = self.replicas(doc, defaults, sources, targets)
        return ReplicasConfig(
            path=self.path,
            sources=sources,
            targets=targets,
            replicas=replicas,
            status_address=address,
            status_interval=interval,
        )

    def named_tables(self, doc: dict[str, Any], kind: str, example: str) -> dict[str, dict[str, Any]]:
        value = doc.get(kind, {})
        if not isinstance(value, dict):
            raise self.error(f"{kind}", f"expected tables [{kind}.NAME] (e.g. [{kind}.main] with {example})")
        out: dict[str, dict[str, Any]] = {}
        for name, body in value.items():
            where = _table(kind, name)
            if not isinstance(body, dict):
                raise self.error(where, f"expected a table [{kind}.NAME] with keys, e.g. {example}")
            if not name.strip():
                raise self.error(where, "give it a name")
            out[name] = body
        return out

    # -- sources and targets -------------------------------------------------------------------------------------
    def source(self, name: str, body: dict[str, Any], defaults: dict[str, Any]) -> SourceConfig:
        where = _table("sources", name)
        self.check_keys(body, _SOURCE_KEYS, where, "keys of a source")
        dsn = self.source_dsn(body, where)
        password = self.password(body, where, dsn.password or None, "in the dsn")
        connection: dict[str, Any] = {}
        for key in CONNECTION_SETTINGS:
            value = self.setting(body, key, where) if key in body else defaults.get(key, _CONNECTION_DEFAULTS[key])
            connection[key] = value
        try:  # the heartbeat and idle bound checked together, as a replica's settings are
            ReplicationSettings(**{k: connection[k] for k in _REPLICA_CONNECTION_SETTINGS})
        except ConfigurationError as exc:
            raise self.error(where, str(exc)) from None
        return SourceConfig(
            name=name,
            dsn=dataclasses.replace(dsn, password=""),
            password=password,
            **connection,
        )

    def source_dsn(self, body: dict[str, Any], where: str) -> DSN:
        """``dsn``: a URL (possibly listing several servers) or an array of a URL and more URLs or host:port."""
        example = 'dsn = "mysql://repl@db:3306" (or ["mysql://repl@db1:3306", "db2:3306"])'
        if "dsn" not in body:
            raise self.error(where, f"dsn is missing, e.g. {example}")
        value = body["dsn"]
        if isinstance(value, str):
            texts = [value]
        elif isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            texts = value
        else:
            raise self.error(f"{where} dsn", f"expected a string or a non-empty array of strings, e.g. {example}; "
                             f"got {_shown(value)}")  # fmt: skip
        try:
            return combine_source_dsns(texts, option="dsn")
        except ConfigurationError as exc:
            raise self.error(f"{where} dsn", str(exc)) from None

    def target(self, name: str, body: dict[str, Any]) -> TargetConfig:
        where = _table("targets", name)
        self.check_keys(body, _TARGET_KEYS, where, "keys of a target")
        url = self.string(body, "url", where, 'url = "http://default@ch:8123" (or "chdb:///path")', required=True)
        assert url is not None
        if "://" in url and not url.startswith(("http://", "https://", "chdb:", "kafka://")):
            raise self.error(
                f"{where} url", "use http(s)://host:8123 (a ClickHouse server), chdb:///path or kafka://broker:9092"
            )
        in_url: str | None = None
        bare = url
        if url.startswith("kafka://"):
            from ..kafka import parse_kafka_url

            try:
                parse_kafka_url(url)
            except ConfigurationError as exc:
                raise self.error(f"{where} url", str(exc)) from None
            if any(k in body for k in ("password", "password_file", "password_env")):
                raise self.error(where, "a Kafka target has no password here: remove the password keys")
        elif url.startswith(("http://", "https://")):
            bare, in_url = _split_target_password(url)
        elif any(k in body for k in ("password", "password_file", "password_env")):
            raise self.error(where, "an embedded (chdb) target has no password: remove the password keys")
        return TargetConfig(name=name, url=bare, password=self.password(body, where, in_url, "in the url"))

    def password(self, body: dict[str, Any], where: str, in_url: str | None, url_place: str) -> PasswordSource:
        file = self.string(body, "password_file", where, 'password_file = "/etc/mybinlog/repl.pw"')
        env = self.string(body, "password_env", where, 'password_env = "MYBINLOG_REPL_PASSWORD"')
        inline = self.string(body, "password", where, 'password = "..." (with allow_inline_password = true)')
        allow = body.get("allow_inline_password", False)
        if not isinstance(allow, bool):
            raise self.error(f"{where} allow_inline_password", f"expected true or false, got {_shown(allow)}")
        given = [
            what
            for what, value in (
                (f"a password {url_place}", in_url),
                ("password", inline),
                ("password_file", file),
                ("password_env", env),
            )
            if value is not None
        ]
        if len(given) > 1:
            raise self.error(where, f"the password is given twice ({' and '.join(given)}): give it once")
        if inline is None:
            inline = in_url
        if inline is not None and not allow:
            raise self.error(
                where,
                f"{given[0]}: a password written in the configuration file can be read by anyone who can read the "
                "file (and ends up in backups and version control); put it in a file (password_file = PATH, "
                "chmod 600) or the environment (password_env = NAME), or, if you must, add "
                "allow_inline_password = true",
            )
        if inline is not None and not inline:
            raise self.error(f"{where} password", "the password is empty")
        if env is not None and not _ENV_NAME.fullmatch(env):
            # not shown: a value that is no variable name may be the password itself, written in the wrong key
            raise self.error(
                f"{where} password_env",
                "not an environment variable name (letters, digits and _, not starting with a digit): give the "
                "name of the variable that holds the password",
            )
        if file is not None:
            if not file:
                raise self.error(f"{where} password_file", "give the path of the file holding the password")
            file = os.path.join(self.base, os.path.expanduser(file))
        return PasswordSource(file=file, env=env, inline=inline)

    # -- replicas ------------------------------------------------------------------------------------------------
    def replicas(
        self,
        doc: dict[str, Any],
        defaults: dict[str, Any],
        sources: dict[str, SourceConfig],
        targets: dict[str, TargetConfig],
    ) -> tuple[ReplicaConfig, ...]:
        value = doc.get("replicas")
        entries: list[tuple[str | None, str, dict[str, Any]]] = []  # (name from the key, where, body)
        if isinstance(value, dict):
            for name, body in value.items():
                where = _table("replicas", name)
                if not isinstance(body, dict):
                    raise self.error(where, 'expected a table [replicas.NAME] with keys, e.g. database = "shop"')
                if not name.strip():
                    raise self.error(where, "give the replica a name")
                _check_name(name, f"{self.path}: {where}")
                if "name" in body:
                    raise self.error(f"{where} name", f"the replica's name is its table key ({name!r}): remove name")
                entries.append((name, where, body))
        elif isinstance(value, list):
            for i, body in enumerate(value, 1):
                where = f"[[replicas]] #{i}"
                if not isinstance(body, dict):
                    raise self.error(where, 'expected a table [[replicas]] with keys, e.g. database = "shop"')
                entries.append((None, where, body))
        elif value is not None:
            raise self.error("replicas", "expected tables [replicas.NAME] (or [[replicas]] with name = ...)")
        if not entries:
            raise self.error(
                "the top level",
                'no replicas: add one, e.g. [replicas.shop] with database = "shop" (and source, target)',
            )
        if not sources:
            raise self.error("the top level", 'no sources: add one, e.g. [sources.main] dsn = "mysql://repl@db:3306"')
        if not targets:
            raise self.error("the top level", 'no targets: add one, e.g. [targets.ch] url = "http://default@ch:8123"')

        out: list[ReplicaConfig] = []
        names: dict[str, str] = {}
        writes: dict[tuple[str, str], str] = {}
        for key_name, where, body in entries:
            allowed = _REPLICA_KEYS if key_name is not None else ("name", *_REPLICA_KEYS)
            self.check_keys(body, allowed, where, "keys of a replica")
            replica = self.replica(key_name, where, body, defaults, sources, targets)
            if replica.name in names:
                raise self.error(
                    where,
                    f"a second replica named {replica.name!r} (the first is {names[replica.name]}): each replica "
                    "needs its own name (its checkpoint and lock are named after it); add name = ...",
                )
            names[replica.name] = where
            written = (targets[replica.target].url, replica.target_database)
            if written in writes:
                raise self.error(
                    where,
                    f"{writes[written]} writes the same ClickHouse database {replica.target_database!r} of target "
                    f"{replica.target!r}: give one of them another target_database",
                )
            writes[written] = where
            out.append(replica)
        return tuple(out)

    def replica(
        self,
        key_name: str | None,
        where: str,
        body: dict[str, Any],
        defaults: dict[str, Any],
        sources: dict[str, SourceConfig],
        targets: dict[str, TargetConfig],
    ) -> ReplicaConfig:
        database = self.string(body, "database", where, 'database = "shop"', required=True)
        assert database is not None
        if not database:
            raise self.error(f"{where} database", "give the MySQL database to replicate")
        name = key_name
        if name is None:
            name = self.string(body, "name", where, 'name = "shop"')
            if name is not None and not name.strip():
                raise self.error(f"{where} name", "give the replica a name")
            if name is not None:
                _check_name(name, f"{self.path}: {where} name")
            name = name or database
        source = self.reference(body, "source", where, sources)
        target = self.reference(body, "target", where, targets)
        tables: tuple[str, ...] | None = None
        if "tables" in body:
            value = body["tables"]
            example = 'e.g. tables = ["orders", "customers"] (leave it out for every table)'
            if not isinstance(value, list) or not value:
                raise self.error(f"{where} tables", f"expected a list of table names, {example}")
            if not all(isinstance(t, str) and t.strip() for t in value):
                raise self.error(f"{where} tables", f"every table name must be a non-empty string, {example}")
            tables = tuple(dict.fromkeys(t.strip() for t in value))
        target_database = self.string(body, "target_database", where, 'target_database = "shop_copy"')
        if target_database is not None and not target_database:
            raise self.error(f"{where} target_database", "give a ClickHouse database name (or leave it out)")
        values = {k: v for k, v in defaults.items() if k not in CONNECTION_SETTINGS}
        for key in REPLICA_SETTINGS:
            if key in body:
                values[key] = self.setting(body, key, where)
        # the connection's values (the client is created with them; the replicator only reads them without a client)
        for key in _REPLICA_CONNECTION_SETTINGS:
            values[key] = getattr(sources[source], key)
        try:
            settings = ReplicationSettings(**values)
        except ConfigurationError as exc:
            raise self.error(where, str(exc)) from None
        return ReplicaConfig(
            name=name,
            source=source,
            target=target,
            database=database,
            tables=tables,
            target_database=target_database or database,
            settings=settings,
        )

    def reference(self, body: dict[str, Any], kind: str, where: str, defined: Mapping[str, object]) -> str:
        plural = f"{kind}s"
        name = self.string(body, kind, where, f'{kind} = "{next(iter(defined), "main")}"')
        if name is None:
            if len(defined) == 1:
                return next(iter(defined))
            raise self.error(
                where,
                f"{kind} is missing: the file defines {len(defined)} {plural} ({_listing(defined)}); "
                f'name one, e.g. {kind} = "{next(iter(defined))}"',
            )
        if name not in defined:
            raise self.error(
                f"{where} {kind}",
                f"no [{plural}.{name}] in the file (defined: {_listing(defined)}){_did_you_mean(name, defined)}",
            )
        return name

    # -- values --------------------------------------------------------------------------------------------------
    def check_keys(self, body: Mapping[str, Any], allowed: tuple[str, ...], where: str, what: str) -> None:
        for key in body:
            if key in allowed:
                continue
            hint = _did_you_mean(key, allowed)
            if where.startswith(("[replicas", "[[replicas")) and key in CONNECTION_SETTINGS:
                hint = (
                    f"; {key} is a setting of the source's shared binlog connection: set it in its [sources.NAME] "
                    "(or [settings]), one connection has one value"
                )
            elif not hint:
                hint = f"; the {what} are: {', '.join(allowed)}"
            raise self.error(where, f"unknown key {key!r}{hint}")

    def table(self, doc: dict[str, Any], key: str, where: str, shown: str) -> dict[str, Any]:
        value = doc.get(key, {})
        if not isinstance(value, dict):
            raise self.error(where, f"{key} must be a table {shown}, got {_shown(value)}")
        return value

    def string(
        self, body: Mapping[str, Any], key: str, where: str, example: str, *, required: bool = False
    ) -> str | None:
        if key not in body:
            if required:
                raise self.error(where, f"{key} is missing, e.g. {example}")
            return None
        value = body[key]
        if not isinstance(value, str):
            raise self.error(f"{where} {key}", f"expected a string, e.g. {example}; got {_shown(value)}")
        return value

    def number(self, body: Mapping[str, Any], key: str, where: str, kind: type) -> Any:
        if key not in body:
            return None
        value = body[key]
        ok = isinstance(value, int) if kind is int else isinstance(value, int | float)
        if isinstance(value, bool) or not ok:
            expected = "a whole number" if kind is int else "a number"
            raise self.error(f"{where} {key}", f"expected {expected}, got {_shown(value)}")
        if value < 0:
            raise self.error(f"{where} {key}", f"must be >= 0, got {value}")
        return kind(value)

    def setting(self, body: Mapping[str, Any], key: str, where: str) -> Any:
        kind = _SETTING_TYPES.get(key, int)  # the dispatcher buffer, not a replica setting, is a whole number
        options = [k for k in typing.get_args(kind) if k is not type(None)]
        if len(options) == 1:  # X | None: TOML has no None, so the key is X (left out: the default)
            kind = options[0]
        if kind in (int, float):
            return self.number(body, key, where, kind)
        if kind is str:
            return self.string(body, key, where, f"{key} = {getattr(_DEFAULTS, key)!r}".replace("'", '"'))
        if kind is bool:
            value = body[key]
            if not isinstance(value, bool):
                raise self.error(f"{where} {key}", f"expected true or false, got {_shown(value)}")
            return value
        raise self.error(f"{where} {key}", "this setting cannot be given in the file")  # pragma: no cover


# --- helpers -----------------------------------------------------------------------------------------------------


def _table(kind: str, name: str) -> str:
    key = name if _BARE_KEY.fullmatch(name) else '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"[{kind}.{key}]"


def _listing(names: Mapping[str, object]) -> str:
    return ", ".join(sorted(names)) or "none"


def _did_you_mean(key: str, allowed: Any) -> str:
    close = difflib.get_close_matches(key, list(allowed), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _shown(value: Any) -> str:
    """A value's type for messages (never the value: it may be a password)."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__


def _split_target_password(url: str) -> tuple[str, str | None]:
    """(the URL without its password, the password or None) of a ClickHouse server URL."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return url, None  # malformed: open_target says so (with the password redacted)
    query = parse_qsl(parts.query, keep_blank_values=True)
    in_query = next((value for key, value in query if key == "password"), None)
    if password is None and in_query is None:
        return url, None
    netloc = parts.netloc
    if password is not None:
        userinfo, _, hostport = netloc.rpartition("@")
        netloc = f"{userinfo.partition(':')[0]}@{hostport}"
    rest = "&".join(p for p in parts.query.split("&") if not p.startswith("password="))
    bare = parts._replace(netloc=netloc, query=rest).geturl()
    return bare, unquote(password) if password is not None else in_query


def _password(spec: PasswordSource, where: str, environ: Mapping[str, str] | None) -> str | None:
    env = os.environ if environ is None else environ
    if spec.file is not None:
        return read_password_file(spec.file, what=f"{where} password_file")
    if spec.env is not None:
        value = env.get(spec.env)
        if not value:
            raise ConfigurationError(
                f"{where}: password_env names the environment variable {spec.env}, which is not set (or empty): "
                "set it, or use password_file"
            )
        return value
    if spec.inline is not None:
        logger.warning(
            "%s: the password is written in the configuration file (allow_inline_password = true): anyone who "
            "can read the file can read it; prefer password_file (chmod 600) or password_env",
            where,
        )
        return spec.inline
    return None


def _check_name(name: str, where: str) -> None:
    """A replica's name without control characters (it appears in log lines and status rows)."""
    from ._common import check_replica_name

    check_replica_name(name, where=f"{where}: the replica name")
