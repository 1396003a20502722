"""Opening a target from its URL: ``http(s)://`` is a server, ``chdb://``, a path or ``:memory:`` is embedded."""

from __future__ import annotations

from ...errors import ConfigurationError
from ._chdb import ChdbTarget
from ._http import HttpTarget, _redact_url
from ._interface import Target

__all__ = ["open_target"]


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
    if "://" in url and not url.startswith("chdb:"):
        raise ConfigurationError(
            f"unsupported ClickHouse URL scheme in {_redact_url(url)!r}: use http(s)://host:8123, chdb:///path or a "
            f"directory"
        )
    return await ChdbTarget.open(url, database=database)
