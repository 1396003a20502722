"""The source layer: everything that talks to a MySQL/MariaDB server or reads binlog files from disk.

``_dsn`` (connection settings, passwords never shown) -> ``_asyncmy`` (the one module that touches asyncmy's
internals: it hands the socket over when the dump starts) -> ``_wire`` (the socket of a streaming connection: an
asyncio protocol feeding the sans-IO packet framer, with idle timeout and flow control) -> ``_connection``
(connect, check the server, run control queries, start the dump, hand out raw event bytes) -> ``_stream``
(:class:`BinlogStream`: decoded events, positions, reconnects, history checks); ``_files`` reads binlog files with
the same decoder.

Layer rules: may import :mod:`mybinlog.protocol` and :mod:`mybinlog.errors`; never the sharing, replication,
snapshot or cli layers.
"""
