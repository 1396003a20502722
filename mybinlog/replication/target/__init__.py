"""Connections to ClickHouse: a server over HTTP (aiochclient + aiohttp) or embedded ClickHouse (chdb).

:func:`open_target` returns a :class:`Target`, one connection to one ClickHouse::

    target = await open_target("http://default:secret@127.0.0.1:8123")   # a server, over HTTP
    target = await open_target("chdb:///var/lib/mybinlog/ch")             # embedded, data in that directory
    target = await open_target(":memory:")                                 # embedded, in memory

Both kinds speak the same small interface: ``execute`` (DDL and commands), ``query`` (rows of strings) and
``insert_tsv`` (TabSeparated bytes), plus the server's :class:`Capabilities`, decided from ``SELECT version()``.

Values cross the boundary as TabSeparated text in both directions, because it is the one format every ClickHouse
version reads and writes the same way (18.16 to today) and it carries every type as text:

* writing: :func:`tsv_escape` / :func:`tsv_escape_bytes` escape one field; ``\\N`` is NULL; rows end with ``\\n``.
* reading: :meth:`Target.query` unescapes each field and returns ``str`` (``None`` for NULL). Bytes that are not
  UTF-8 (a ``String`` column holding binary data) are decoded with ``surrogateescape``, so
  ``value.encode("utf-8", "surrogateescape")`` gives back the exact bytes.

Errors are :class:`~mybinlog.TargetError` (the server's message, its error code and the SQL, truncated); a server
that cannot be reached raises :class:`~mybinlog.TargetConnectionError` (``retriable``). Passwords never appear in
descriptions, reprs or messages.

Embedded ClickHouse allows one data directory per process at a time (chdb's ``EmbeddedServer``): opening the same
directory again shares it (each target gets its own chdb connection), opening a different directory while one is
open raises :class:`~mybinlog.ConfigurationError`. All calls into chdb of one directory run in one worker thread,
so the event loop never blocks on chdb.

Modules
-------
Each imports only modules above it in this table.

==================  ============================================================================================
``_capabilities``   :class:`Capabilities` from the server version, :data:`FEATURE_VERSIONS`
``_tsv``            ClickHouse SQL quoting (:func:`quote_ident`, :func:`quote_string`...) and TabSeparated text
``_interface``      the :class:`Target` protocol, ``PASSWORD_ENV``, ClickHouse error messages
``_http``           :class:`HttpTarget`: a server over HTTP (aiochclient, aiohttp)
``_chdb``           :class:`ChdbTarget`: embedded ClickHouse, one worker thread per data directory
``_open``           :func:`open_target`: a URL -> a target
==================  ============================================================================================

Layer rules: imports :mod:`mybinlog.errors` and the standard library; aiochclient, aiohttp and chdb only inside the
functions that open a target (``import mybinlog.replication`` needs neither extra). It knows nothing of MySQL: the
type mapping, the schema, the replicator and verify build on it.
"""

from __future__ import annotations

from ._capabilities import FEATURE_VERSIONS, Capabilities
from ._chdb import ChdbTarget
from ._http import HttpTarget
from ._interface import PASSWORD_ENV, Target
from ._open import open_target
from ._tsv import (
    parse_tsv,
    quote_bytes,
    quote_ident,
    quote_string,
    quote_table,
    tsv_escape,
    tsv_escape_bytes,
    tsv_unescape,
)

__all__ = [
    "Capabilities",
    "ChdbTarget",
    "HttpTarget",
    "Target",
    "FEATURE_VERSIONS",
    "PASSWORD_ENV",
    "open_target",
    "parse_tsv",
    "quote_bytes",
    "quote_ident",
    "quote_string",
    "quote_table",
    "tsv_escape",
    "tsv_escape_bytes",
    "tsv_unescape",
]
