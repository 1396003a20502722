"""The source layer: everything that talks to a MySQL/MariaDB server or reads binlog files from disk.

``_dsn`` (connection settings, passwords never shown) -> ``_asyncmy`` (the one module that touches asyncmy's
internals: it hands the socket over when the dump starts) -> ``_wire`` (the socket of a streaming connection: an
asyncio protocol feeding the sans-IO packet framer, with idle timeout and flow control) -> ``_connection``
(connect, check the server, run control queries, start the dump, hand out raw event bytes) -> ``_stream``
(:class:`BinlogStream`: decoded events, positions, reconnects, history checks); ``_files`` reads binlog files with
the same decoder.

Every SQL statement mybinlog runs against the source lives in this package: the control queries of a streaming
connection (``_connection``), and the reads of the layers above (table lists, grants, schemas, positions,
consistent-snapshot transactions, row counts and chunk boundaries, binlog files and retention: the methods of
:class:`SourceConnection` in ``_session``); ``_sql`` builds SQL text (identifier quoting, column and row SELECTs).
The layers above use the names below and hold no MySQL SQL of their own (tests/unit/test_sql_home.py).

Layer rules: may import :mod:`mybinlog.protocol` and :mod:`mybinlog.errors`; never the sharing, replication,
snapshot or cli layers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:  # for type checkers only (`X as X`: exported); at run time the names below are lazy
    from ._dsn import DSN as DSN  # noqa: I001
    from ._session import SourceConnection as SourceConnection, select_scope as select_scope
    from ._sql import (
        quote_mysql_ident as quote_mysql_ident,
        select_column as select_column,
        select_where as select_where,
    )

# Imported on first use: importing a light module of this package (``_dsn``, ``_sql``) must not import asyncmy.
__all__, __getattr__, __dir__ = lazy_names(
    __name__,
    {
        "._dsn": ("DSN",),
        "._session": ("SourceConnection", "select_scope"),
        "._sql": ("quote_mysql_ident", "select_column", "select_where"),
    },
)
