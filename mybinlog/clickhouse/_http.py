"""A ClickHouse server over HTTP (aiochclient over aiohttp, imported when a target is opened)."""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from ..errors import ConfigurationError, TargetConnectionError, TargetError
from ._capabilities import Capabilities
from ._target import PASSWORD_ENV, _server_message
from ._tsv import _insert_sql, parse_tsv

__all__ = ["HttpTarget"]


logger = logging.getLogger("mybinlog.target")


_PARSE_IN_THREAD = 256 * 1024  # HTTP results larger than this are parsed in a worker thread


_AUTH_CODES = frozenset({192, 193, 194, 195, 516})  # unknown user, wrong/required password, ip, auth failed


def _redact(text: str, secret: str | None) -> str:
    if secret:
        text = text.replace(secret, "***")
        quoted = quote(secret, safe="")
        if quoted != secret:
            text = text.replace(quoted, "***")
    return text


class HttpTarget:
    """A ClickHouse server over its HTTP interface.

    The connection pool is an :class:`aiohttp.ClientSession` owned by an :class:`aiochclient.ChClient`; inserts go
    through ``ChClient.insert_file`` (the query in the URL, the TabSeparated bytes as the body), statements and
    queries are POSTed on the same session with ``wait_end_of_query=1`` (so an error is always an HTTP error, never
    text appended to a half-sent result) and read as raw TabSeparated, because aiochclient's typed row decoding does
    not know newer types (Date32, JSON, ...) and drops a row made of one empty string.

    Credentials travel in the ``X-ClickHouse-User`` / ``X-ClickHouse-Key`` headers, never in URLs.
    """

    kind: str = "http"

    def __init__(
        self,
        *,
        client: Any,
        session: Any,
        endpoint: str,
        user: str,
        password: str,
        database: str | None,
        settings: Mapping[str, str],
        description: str,
    ) -> None:
        self._client = client
        self._session = session
        self._endpoint = endpoint
        self._user = user
        self._password = password
        self.database = database
        self._settings = dict(settings)
        self.description = description
        self._headers = {"X-ClickHouse-User": user}
        if password:
            self._headers["X-ClickHouse-Key"] = password
        self._closed = False
        self.capabilities: Capabilities = Capabilities.from_version("18.16")  # replaced by open()

    def __repr__(self) -> str:
        return f"<HttpTarget {self.description}>"

    @classmethod
    async def open(cls, url: str, *, database: str | None = None) -> HttpTarget:
        """Connect (``SELECT version()``) and read the capabilities. See :func:`open_target` for the URL."""
        try:
            import aiohttp
            from aiochclient import ChClient  # type: ignore[import-untyped,unused-ignore]
        except ImportError as exc:  # pragma: no cover - depends on the installation
            raise ConfigurationError(
                "ClickHouse over HTTP needs aiochclient and aiohttp: pip install 'mybinlog[cli]' (every command) or "
                "'mybinlog[clickhouse]'"
            ) from exc
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigurationError(f"not a ClickHouse HTTP URL: {_redact_url(url)!r} (use http://host:8123)")
        settings = dict(parse_qsl(parts.query, keep_blank_values=True))
        # credentials given as query parameters go into the headers too, never into request URLs
        query_user, query_password = settings.pop("user", None), settings.pop("password", None)
        user = unquote(parts.username) if parts.username else (query_user or "default")
        if parts.password is not None:
            password = unquote(parts.password)
        else:
            password = query_password if query_password is not None else os.environ.get(PASSWORD_ENV, "")
        try:
            port = parts.port or (8443 if parts.scheme == "https" else 8123)
        except ValueError as exc:
            raise ConfigurationError(f"bad port in ClickHouse URL {_redact_url(url)!r}") from exc
        host = parts.hostname
        host_text = f"[{host}]" if ":" in host else host
        path = parts.path or "/"
        endpoint = f"{parts.scheme}://{host_text}:{port}{path}"
        if database is None:
            database = settings.pop("database", None) or None
        else:
            settings.pop("database", None)
        description = f"{parts.scheme}://{user}@{host_text}:{port}{path if path != '/' else ''}"
        if database:
            description += f" database={database}"
        connector = aiohttp.TCPConnector(keepalive_timeout=2.0, limit=16)
        session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=None, connect=10.0, sock_connect=10.0, sock_read=900.0),
        )
        client = ChClient(
            session, url=endpoint, user=user, password=password or None, database=database or "", **settings
        )
        target = cls(
            client=client,
            session=session,
            endpoint=endpoint,
            user=user,
            password=password,
            database=database,
            settings=settings,
            description=description,
        )
        try:
            rows = await target.query("SELECT version()")
            target.capabilities = Capabilities.from_version(str(rows[0][0]))
        except BaseException:
            await target.aclose()
            raise
        logger.debug("connected to %s: %s", description, target.capabilities)
        return target

    def _params(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        params = dict(self._settings)
        if self.database:
            params["database"] = self.database
        if extra:
            params.update(extra)
        return params

    def _error(self, text: str, sql: str, status: int | None = None) -> TargetError:
        message, code = _server_message(_redact(text, self._password))
        if not message:
            message = f"HTTP status {status} without a message"
        if code in _AUTH_CODES or status in (401, 403):
            message = f"{self.description}: authentication failed for user {self._user!r}: {message}"
        return TargetError(message, sql=_redact(sql, self._password), code=code)

    def _connection_error(self, exc: BaseException, sql: str) -> TargetConnectionError:
        detail = _redact(str(exc) or type(exc).__name__, self._password)
        return TargetConnectionError(
            f"cannot talk to ClickHouse at {self.description}: {type(exc).__name__}: {detail}",
            sql=_redact(sql, self._password),
        )

    async def _post(self, sql: str) -> bytes:
        import aiohttp

        if self._closed:
            raise TargetError(f"{self.description}: target is closed", sql=sql)
        params = self._params({"wait_end_of_query": "1", "default_format": "TabSeparated"})
        try:
            async with self._session.post(
                self._endpoint, params=params, headers=self._headers, data=sql.encode("utf-8")
            ) as response:
                body: bytes = await response.read()
                if response.status != 200:
                    raise self._error(body.decode("utf-8", "replace"), sql, response.status)
                return body
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise self._connection_error(exc, sql) from exc

    async def execute(self, sql: str) -> None:
        await self._post(sql)

    async def query(self, sql: str) -> list[list[str | None]]:
        body = await self._post(sql)
        if len(body) > _PARSE_IN_THREAD:
            return await asyncio.to_thread(parse_tsv, body)  # keep the loop responsive for big results
        return parse_tsv(body)

    async def insert_tsv(
        self, table: str, columns: Sequence[str], data: bytes, *, dedup_token: str | None = None
    ) -> None:
        """One POST with the INSERT in the URL and the rows as the body, on the session's kept-alive connections (not
        through aiochclient, whose insert_file parses the statement with sqlparse: about 1 ms of CPU an insert, which
        a batch touching thousands of tables paid once per table; issue 24)."""
        import aiohttp

        sql = f"{_insert_sql(table, columns)} FORMAT TabSeparated"
        if not data:
            return
        if self._closed:
            raise TargetError(f"{self.description}: target is closed", sql=sql)
        extra = {"query": sql}
        if dedup_token is not None and self.capabilities.insert_deduplication_token:
            extra["insert_deduplication_token"] = dedup_token
        try:
            async with self._session.post(
                self._endpoint, params=self._params(extra), headers=self._headers, data=data
            ) as response:
                if response.status != 200:
                    body = await response.read()
                    raise self._error(body.decode("utf-8", "replace"), sql, response.status)
                await response.read()
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise self._connection_error(exc, sql) from exc

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self._client.close()  # closes the aiohttp session


def _redact_url(url: str) -> str:
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "<unparsable URL>"
    if "password=" in parts.query:
        parts = parts._replace(query=re.sub(r"(^|&)password=[^&]*", r"\1password=***", parts.query))
    if password is not None:
        netloc = parts.netloc.rsplit("@", 1)[1]
        parts = parts._replace(netloc=f"{parts.username or ''}:***@{netloc}")
    return parts.geturl()
