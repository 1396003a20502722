"""The source layer: everything that talks to a MySQL/MariaDB server or reads binlog files from disk.

``_dsn`` (connection settings, passwords never shown) -> ``_asyncmy`` (the one module that touches asyncmy's
internals: it hands the socket over when the dump starts) -> ``_wire`` (the socket of a streaming connection: an
asyncio protocol feeding the sans-IO packet framer, with idle timeout and flow control) -> ``_connection``
(connect, check the server, run control queries, start the dump, hand out raw event bytes) -> ``_stream``
(:class:`BinlogStream`: decoded events, positions, reconnects, history checks); ``_files`` reads binlog files with
the same decoder. ``_session`` runs the SQL a replica needs (table lists, SHOW CREATE TABLE, consistent reads),
``_lease`` is the replica lock, ``_xa`` finds the XA transactions prepared and not resolved at a position
(:func:`prepared_at`, for every writer that starts a stream after a consistent read).

Its modules are still reached one by one from above (``from ..source._dsn import DSN``); the names below are the
start of its public list, imported on first use.

Layer rules: may import :mod:`mybinlog.protocol` and :mod:`mybinlog.errors`; never the sharing, replication,
snapshot or cli layers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:  # for type checkers only (`X as X`: exported); at run time the names below are lazy
    from ._xa import PreparedXa as PreparedXa
    from ._xa import prepared_at as prepared_at

__all__, __getattr__, __dir__ = lazy_names(__name__, {"._xa": ("PreparedXa", "prepared_at")})
