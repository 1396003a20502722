"""Where the MySQL/MariaDB server is and how to log in: the :class:`DSN`.

A DSN is written as a URL::

    mysql://user:password@host:port/database?ssl=verify_ca&ssl_ca=/path/ca.pem&connect_timeout=5
    mariadb://repl@[::1]:3307
    mysql://repl:secret@localhost?unix_socket=/run/mysqld/mysqld.sock
    mysql://repl@db1:3306,db2:3306,[::1]:3307     # several servers of one replication topology, in order

With several servers, a connection goes to the first that answers, and a :class:`~mybinlog.BinlogStream` moves
to the next one when its server fails (source failover: checked by GTIDs, see docs/ha.md).

User and password are percent-decoded (write ``@`` as ``%40``, ``:`` as ``%3A``). The password is never shown:
``repr()``, ``str()``, :attr:`DSN.display` and every error message leave it out, so a DSN can be logged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal, get_args
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from ..errors import ConfigurationError

if TYPE_CHECKING:
    import ssl as _ssl

__all__ = ["DSN", "DSNKey", "SslMode", "server_list"]

DSNKey = tuple[str, str, str, int, tuple[tuple[str, int], ...]]

SslMode = Literal["disabled", "preferred", "required", "verify_ca", "verify_identity"]
"""TLS modes, named as in MySQL's ``--ssl-mode``.

- ``disabled``: plain TCP (the default unless a CA is given).
- ``preferred``: accepted as an alias of ``required`` (mybinlog does not silently fall back to plain text).
- ``required``: TLS, the server certificate is not verified (protects against eavesdropping only).
- ``verify_ca``: TLS, the certificate must be signed by ``ssl_ca`` (or the system CAs), any host name.
- ``verify_identity``: as ``verify_ca``, and the certificate must name the host.
"""

_EXPECTED_FORM = (
    "expected mysql://user[:password]@host[:port][/database][?ssl=required&ssl_ca=PATH&connect_timeout=SECS] "
    "(or mariadb://...; percent-encode special characters in user and password; IPv6 hosts in brackets, "
    "e.g. mysql://repl@[::1]:3306; several servers of one topology as mysql://repl@db1:3306,db2:3306; a unix "
    "socket with ?unix_socket=/path/mysqld.sock)"
)

_SSL_ALIASES: dict[str, SslMode] = {
    "": "required",
    "1": "required",
    "true": "required",
    "yes": "required",
    "on": "required",
    "require": "required",
    "required": "required",
    "preferred": "preferred",
    "prefer": "preferred",
    "0": "disabled",
    "false": "disabled",
    "no": "disabled",
    "off": "disabled",
    "disable": "disabled",
    "disabled": "disabled",
    "verify": "verify_ca",
    "verify_ca": "verify_ca",
    "verify-ca": "verify_ca",
    "verify_identity": "verify_identity",
    "verify-identity": "verify_identity",
    "verify_full": "verify_identity",
    "verify-full": "verify_identity",
}

_QUERY_KEYS = {
    "ssl": "ssl",
    "ssl_mode": "ssl",
    "sslmode": "ssl",
    "ssl_ca": "ssl_ca",
    "ca": "ssl_ca",
    "ssl_cert": "ssl_cert",
    "cert": "ssl_cert",
    "ssl_key": "ssl_key",
    "key": "ssl_key",
    "unix_socket": "unix_socket",
    "socket": "unix_socket",
    "connect_timeout": "connect_timeout",
}


@dataclass(frozen=True, kw_only=True)
class DSN:
    """Connection settings for one MySQL/MariaDB server. Build with :meth:`parse` or keywords.

    Two DSNs with the same :attr:`key` (user, password, hosts) share one binlog client when sharing is
    on, whatever their database or TLS settings.

    ``host``/``port`` name the first server; ``fallbacks`` the other servers of the same replication topology,
    in order (``mysql://repl@db1,db2:3307``). :attr:`servers` lists them all, :meth:`at` gives the DSN of one.
    """

    host: str = "localhost"
    port: int = 3306
    user: str
    password: str = field(default="", repr=False)
    database: str | None = None
    unix_socket: str | None = None
    ssl: SslMode = "disabled"
    ssl_ca: str | None = None
    ssl_cert: str | None = None
    ssl_key: str | None = None
    connect_timeout: float = 10.0
    fallbacks: tuple[tuple[str, int], ...] = ()

    def __post_init__(self) -> None:
        if not self.user:
            raise ConfigurationError(f"the DSN has no user name; {_EXPECTED_FORM}")
        if not self.host and not self.unix_socket:
            raise ConfigurationError(f"the DSN has no host; {_EXPECTED_FORM}")
        if isinstance(self.port, bool) or not isinstance(self.port, int) or not 0 < self.port < 65536:
            raise ConfigurationError(f"port {self.port!r} is not a TCP port (1-65535); {_EXPECTED_FORM}")
        if self.ssl not in get_args(SslMode):
            raise ConfigurationError(f"ssl mode {self.ssl!r} is unknown; use one of {', '.join(get_args(SslMode))}")
        if self.ssl_key is not None and self.ssl_cert is None:
            raise ConfigurationError("ssl_key is given without ssl_cert; a client key needs its certificate")
        timeout = self.connect_timeout
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not (timeout > 0 and math.isfinite(timeout))
        ):
            raise ConfigurationError(f"connect_timeout must be a positive number of seconds, got {timeout!r}")
        for host, port in self.fallbacks:
            if not host or isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
                raise ConfigurationError(
                    f"fallback server {host!r}:{port!r} is not a host and TCP port; {_EXPECTED_FORM}"
                )
        if self.fallbacks and self.unix_socket:
            raise ConfigurationError("a DSN with a unix_socket names one server; give several servers by host:port")
        if len(set(self.servers)) != len(self.servers):
            raise ConfigurationError(f"the DSN names a server twice ({self.display}); list each server once")

    # -- several servers -----------------------------------------------------------------------------

    @property
    def servers(self) -> tuple[tuple[str, int], ...]:
        """Every server of the DSN as ``(host, port)``, the first one first."""
        return ((self.host, self.port), *self.fallbacks)

    def at(self, index: int) -> DSN:
        """The DSN of the ``index``-th server alone (same user, password, database and TLS settings)."""
        host, port = self.servers[index]
        if index == 0 and not self.fallbacks:
            return self
        return replace(self, host=host, port=port, fallbacks=())

    def with_servers(self, servers: Sequence[tuple[str, int]]) -> DSN:
        """This DSN naming ``servers`` instead (the first becomes ``host``/``port``)."""
        if not servers:
            raise ConfigurationError("a DSN needs at least one server")
        (host, port), *rest = servers
        return replace(self, host=host, port=port, fallbacks=tuple(rest))

    # -- parsing -----------------------------------------------------------------------------------

    @classmethod
    def parse(cls, text: str) -> DSN:
        """Parse ``mysql://user:password@host:port/database?options`` (``mariadb://`` is the same).

        Options: ``ssl`` (``true``/``required``, ``verify_ca``, ``verify_identity``, ``false``; ``ssl_mode``
        is an alias), ``ssl_ca``, ``ssl_cert``, ``ssl_key`` (file paths), ``unix_socket`` and
        ``connect_timeout`` (seconds). Giving ``ssl_ca`` without ``ssl`` means ``verify_ca``.

        Raises :class:`ConfigurationError` naming the expected form; the message never contains the password.
        """
        if not isinstance(text, str):
            raise ConfigurationError(f"a DSN must be a string, got {type(text).__name__}; {_EXPECTED_FORM}")
        scheme, sep, rest = text.strip().partition("://")
        if not sep:
            raise ConfigurationError(f"the DSN has no scheme; {_EXPECTED_FORM}")
        if scheme.lower() not in ("mysql", "mariadb"):
            raise ConfigurationError(f"DSN scheme {scheme[:20]!r} is not supported; {_EXPECTED_FORM}")
        # The credentials are cut off before anything else looks at the text, so no error below can echo them.
        authority, path_and_query = _split_authority(rest)
        userinfo, at, hostport = authority.rpartition("@")
        if not at:
            raise ConfigurationError(f"the DSN has no user name; {_EXPECTED_FORM}")
        raw_user, colon, raw_password = userinfo.partition(":")
        user = unquote(raw_user)
        password = unquote(raw_password) if colon else ""

        first, *more = _split_hosts(hostport)
        try:
            parts = urlsplit("mysql://" + first + path_and_query)
            host = parts.hostname or ""
            port = parts.port
        except ValueError as exc:
            raise ConfigurationError(f"the DSN's host or port is malformed ({exc}); {_EXPECTED_FORM}") from None
        fallbacks = tuple(_host_port(item) for item in more)
        if parts.fragment:
            raise ConfigurationError(f"the DSN must not contain a '#fragment'; {_EXPECTED_FORM}")
        database = unquote(parts.path.lstrip("/")) or None
        if database is not None and "/" in database:
            raise ConfigurationError(f"database name {database!r} contains '/'; {_EXPECTED_FORM}")

        options: dict[str, str] = {}
        try:
            pairs = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
        except ValueError:
            raise ConfigurationError(f"the DSN's options are malformed; {_EXPECTED_FORM}") from None
        for raw_key, value in pairs:
            key = _QUERY_KEYS.get(raw_key.lower())
            if key is None:
                known = ", ".join(sorted(set(_QUERY_KEYS)))
                raise ConfigurationError(f"unknown DSN option {raw_key!r}; known options: {known}")
            if key in options:
                raise ConfigurationError(f"DSN option {raw_key!r} is given twice (or with an alias)")
            options[key] = value

        ssl_mode: SslMode
        if "ssl" in options:
            mode = _SSL_ALIASES.get(options["ssl"].strip().lower())
            if mode is None:
                raise ConfigurationError(
                    f"ssl={options['ssl']!r} is not a TLS mode; use ssl=true (encrypt), ssl=verify_ca, "
                    "ssl=verify_identity or ssl=false"
                )
            ssl_mode = mode
        else:
            ssl_mode = "verify_ca" if options.get("ssl_ca") else "disabled"

        kwargs: dict[str, object] = {}
        if "connect_timeout" in options:
            try:
                kwargs["connect_timeout"] = float(options["connect_timeout"])
            except ValueError:
                raise ConfigurationError(
                    f"connect_timeout={options['connect_timeout']!r} is not a number of seconds"
                ) from None
        unix_socket = options.get("unix_socket") or None
        return cls(
            host=host or "localhost",
            port=port if port is not None else 3306,
            user=user,
            password=password,
            database=database,
            unix_socket=unix_socket,
            ssl=ssl_mode,
            ssl_ca=options.get("ssl_ca") or None,
            ssl_cert=options.get("ssl_cert") or None,
            ssl_key=options.get("ssl_key") or None,
            fallbacks=fallbacks,
            **kwargs,  # type: ignore[arg-type]
        )

    # -- presentation ------------------------------------------------------------------------------

    @property
    def display(self) -> str:
        """``user@host:port`` (``user@db1:3306,db2:3306`` with several servers): the name used in logs, errors and
        status rows. Never contains the password."""
        return f"{self.user}@{self.hosts_text}"

    @property
    def hosts_text(self) -> str:
        """``host:port`` of every server, comma-separated (IPv6 literals in brackets)."""
        return ",".join(_show_host(host, port) for host, port in self.servers)

    @property
    def key(self) -> DSNKey:
        """``(user, password, host, port, fallbacks)``: identifies a shareable binlog client. Contains the
        password: use it as a dictionary key, never print or log it."""
        return (self.user, self.password, self.host, self.port, self.fallbacks)

    def to_url(self, *, redact: bool = True) -> str:
        """The DSN as a URL; the password is shown as ``***`` unless ``redact=False``."""
        userinfo = quote(self.user, safe="")
        if self.password:
            userinfo += ":" + ("***" if redact else quote(self.password, safe=""))
        url = f"mysql://{userinfo}@{self.hosts_text}"
        if self.database:
            url += "/" + quote(self.database, safe="")
        query = []
        if self.ssl != "disabled":
            query.append(f"ssl={self.ssl}")
        for name in ("ssl_ca", "ssl_cert", "ssl_key", "unix_socket"):
            value = getattr(self, name)
            if value:
                query.append(f"{name}={quote(value, safe='/')}")
        if self.connect_timeout != 10.0:
            query.append(f"connect_timeout={self.connect_timeout:g}")
        if query:
            url += "?" + "&".join(query)
        return url

    def __str__(self) -> str:
        return self.to_url(redact=True)

    # -- TLS ---------------------------------------------------------------------------------------

    def ssl_context(self) -> _ssl.SSLContext | None:
        """The TLS context for this DSN (``None`` when TLS is disabled).

        Raises :class:`ConfigurationError` when a CA, certificate or key file cannot be loaded.
        """
        if self.ssl == "disabled":
            return None
        import ssl as _ssl  # here: most connections are plain, and the import costs start-up time

        verify = self.ssl in ("verify_ca", "verify_identity")
        try:
            ctx = _ssl.create_default_context(cafile=self.ssl_ca if verify else None)
            ctx.check_hostname = self.ssl == "verify_identity"
            if not verify:
                ctx.verify_mode = _ssl.CERT_NONE
            if self.ssl_cert is not None:
                ctx.load_cert_chain(self.ssl_cert, keyfile=self.ssl_key)
        except (OSError, _ssl.SSLError) as exc:
            raise ConfigurationError(
                f"cannot load the TLS files of {self.display} ({type(exc).__name__}: {exc}); check ssl_ca, "
                "ssl_cert and ssl_key point to readable PEM files"
            ) from exc
        return ctx


def _show_host(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def server_list(text: str) -> list[tuple[str, int]]:
    """``db2:3306`` or ``db2,db3:3307`` or ``[::1]:3307`` -> [(host, port), ...] (port 3306 when left out)."""
    return [_host_port(item) for item in _split_hosts(text.strip())]


def _split_hosts(hostport: str) -> list[str]:
    """``db1:3306,[::1]:3307`` -> ``["db1:3306", "[::1]:3307"]`` (commas inside brackets do not split)."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(hostport):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(hostport[start:i])
            start = i + 1
    items.append(hostport[start:])
    if len(items) > 1 and not all(item.strip() for item in items):
        raise ConfigurationError(f"the DSN's server list has an empty entry; {_EXPECTED_FORM}")
    return items


def _host_port(item: str) -> tuple[str, int]:
    """One entry of a server list: ``host[:port]`` (port 3306 when left out)."""
    try:
        parts = urlsplit("mysql://" + item.strip())
        host = parts.hostname or ""
        port = parts.port
    except ValueError as exc:
        raise ConfigurationError(f"the DSN's server {item!r} is malformed ({exc}); {_EXPECTED_FORM}") from None
    if not host or parts.path or parts.query:
        raise ConfigurationError(f"the DSN's server {item!r} is not host[:port]; {_EXPECTED_FORM}")
    return host, port if port is not None else 3306


def _split_authority(rest: str) -> tuple[str, str]:
    """Split ``user:pass@host:port/db?x`` into the authority and the rest.

    The authority ends at the first ``/``, ``?`` or ``#`` after the last ``@`` (a password may contain
    unencoded ``/`` or ``?`` only if it also precedes an ``@``; percent-encoding is the reliable way).
    """
    at = rest.rfind("@")
    start = at + 1 if at >= 0 else 0
    end = len(rest)
    for ch in "/?#":
        idx = rest.find(ch, start)
        if idx != -1:
            end = min(end, idx)
    return rest[:end], rest[end:]
