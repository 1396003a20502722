"""The source layer: everything that talks to a MySQL/MariaDB server or reads binlog files from disk.

``_dsn`` (connection settings, passwords never shown) -> ``_asyncmy`` (the one module that touches asyncmy's
internals) -> ``_connection`` (connect, check the server, run control queries, start the dump, hand out raw event
bytes) -> ``_stream`` (:class:`BinlogStream`: decoded events, positions, reconnects, history checks); ``_files``
reads binlog files with the same decoder.

Layer rules: may import :mod:`mybinlog.protocol` and :mod:`mybinlog.errors`; never the sharing, replication,
snapshot or cli layers.
"""
