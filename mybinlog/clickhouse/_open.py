"""Opening a target from its URL: ``http(s)://`` is a server, ``chdb://``, a path or ``:memory:`` is embedded."""

from __future__ import annotations

import os
import re

from ..errors import ConfigurationError
from ._chdb import ChdbTarget
from ._http import HttpTarget, _redact_url
from ._target import Target

__all__ = ["check_embedded_url", "open_target"]


async def open_target(url: str, *, database: str | None = None) -> Target:
    """Open a ClickHouse target.

    * ``http://[user[:password]@]host[:port][/][?setting=value&...]`` (also ``https://``): a server over HTTP.
      The user defaults to ``default``; without a password in the URL, the environment variable
      ``MYBINLOG_CH_PASSWORD`` is used when set. Query parameters are ClickHouse settings sent with every request
      (``?database=x`` chooses the default database).
    * ``chdb:///absolute/path``, ``chdb://relative/path``, a plain filesystem path, or ``:memory:`` (also
      ``chdb://:memory:``): embedded ClickHouse with its data in that directory (created if missing).

    ``database``: the default database for unqualified table names (must exist). Raises
    :class:`~mybinlog.ConfigurationError` for a bad URL, :class:`TargetConnectionError` when the server cannot be
    reached and :class:`TargetError` when it refuses the connection (wrong password, unknown database).
    """
    if url.startswith(("http://", "https://")):
        return await HttpTarget.open(url, database=database)
    check_embedded_url(url)
    return await ChdbTarget.open(url, database=database)


_ACCEPTED = (
    "a ClickHouse server http(s)://[user@]host:8123, or embedded ClickHouse: chdb:///absolute/path, "
    "chdb://relative/path, :memory:, or a directory path that starts with /, ./, ../ or ~ (or has no ':')"
)
_HOST_PORT_RE = re.compile(r"^(?:(https?):/?)?([\w.-]+|\[[0-9a-fA-F:]+\]):(\d+)(/.*)?$")


def check_embedded_url(url: str) -> None:
    """Raise :class:`ConfigurationError` unless ``url`` names embedded ClickHouse without doubt: ``chdb:...``,
    ``:memory:``, a path that exists, or one that is clearly a path (starts with ``/``, ``./``, ``../`` or ``~``,
    or has no colon). ``http:127.0.0.1:8123`` or ``127.0.0.1:8123`` is a mistyped server URL, not a directory to
    create."""
    if url.startswith("chdb:") or url == ":memory:":
        return
    if "://" in url:
        raise ConfigurationError(f"unsupported ClickHouse URL scheme in {_redact_url(url)!r}: use {_ACCEPTED}")
    if not url:
        raise ConfigurationError(f"the ClickHouse target is empty: use {_ACCEPTED}")
    if ":" not in url or url.startswith(("/", "./", "../", "~")) or os.path.exists(url):
        return
    hint = ""
    match = _HOST_PORT_RE.match(url)
    if match is not None:
        scheme = match.group(1) or "http"
        hint = f" (did you mean {scheme}://{match.group(2)}:{match.group(3)}{match.group(4) or ''}?)"
    raise ConfigurationError(
        f"the ClickHouse target {_shown(url)!r} is neither a URL nor a clear path{hint}: use {_ACCEPTED} "
        f"(an embedded directory whose name holds ':' is written ./name or chdb://name)"
    )


def _shown(url: str) -> str:
    """``url`` for a message, without what may be a password (``user:pw@``, ``password=``)."""
    if "@" in url:
        scheme = re.match(r"[A-Za-z][A-Za-z0-9+.-]*:/*", url)
        url = (scheme.group(0) if scheme else "") + "***@" + url.rpartition("@")[2]
    return re.sub(r"(?i)(password=)[^&]*", r"\1***", url)
