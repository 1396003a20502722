"""The source layer: everything that talks to a MySQL/MariaDB server or reads binlog files from disk.

``_dsn`` (connection settings, passwords never shown) -> ``_asyncmy`` (the one module that touches asyncmy's
internals: it hands the socket over when the dump starts) -> ``_wire`` (the socket of a streaming connection: an
asyncio protocol feeding the sans-IO packet framer, with idle timeout and flow control) -> ``_connection``
(connect, check the server, run control queries, start the dump, hand out raw event bytes) -> ``_stream``
(:class:`BinlogStream`: decoded events, positions, reconnects, history checks); ``_files`` reads binlog files with
the same decoder. ``_session`` runs the SQL a replica needs (table lists, SHOW CREATE TABLE, consistent reads),
``_lease`` is the replica lock, ``_xa`` finds the XA transactions prepared and not resolved at a position
(:func:`prepared_at`, for every writer that starts a stream after a consistent read).

Every SQL statement mybinlog runs against the source lives in this package: the control queries of a streaming
connection (``_connection``), and the reads of the layers above (table lists, grants, schemas, positions,
consistent-snapshot transactions, row counts and chunk boundaries, binlog files and retention: the methods of
:class:`SourceConnection` in ``_session``); ``_sql`` builds SQL text (identifier quoting, column and row SELECTs).
The layers above use the names below only (``from ..source import DSN``, never ``from ..source._dsn import DSN``)
and hold no MySQL SQL of their own (tests/unit/test_sql_home.py); each name is imported on first use: ``import
mybinlog`` and ``mybinlog dump --file`` load the connection modules (asyncio, asyncmy) only when a name that lives
there is used.

Layer rules: may import :mod:`mybinlog.protocol`, :mod:`mybinlog.errors` and ``mybinlog._lazy`` (the table below);
never the sharing, replication, snapshot or cli layers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:  # for type checkers only (`X as X`: exported); at run time the names below are lazy
    from ._connection import BinlogConnection as BinlogConnection, ServerInfo as ServerInfo  # noqa: I001
    from ._dsn import DSN as DSN, DSNKey as DSNKey, server_list as server_list
    from ._files import iter_binlog_events as iter_binlog_events, read_binlog_file as read_binlog_file
    from ._lease import ReplicaLease as ReplicaLease, lease_name as lease_name
    from ._session import SourceConnection as SourceConnection, select_scope as select_scope
    from ._sql import (
        quote_mysql_ident as quote_mysql_ident,
        select_column as select_column,
        select_where as select_where,
    )
    from ._stream import BinlogStream as BinlogStream
    from ._xa import PreparedXa as PreparedXa, prepared_at as prepared_at

__all__, __getattr__, __dir__ = lazy_names(
    __name__,
    {
        "._dsn": ("DSN", "DSNKey", "server_list"),
        "._connection": ("BinlogConnection", "ServerInfo"),
        "._stream": ("BinlogStream",),
        "._files": ("iter_binlog_events", "read_binlog_file"),
        "._session": ("SourceConnection", "select_scope"),
        "._sql": ("quote_mysql_ident", "select_column", "select_where"),
        "._lease": ("ReplicaLease", "lease_name"),
        "._xa": ("PreparedXa", "prepared_at"),
    },
)
