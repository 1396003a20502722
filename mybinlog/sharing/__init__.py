"""The sharing layer: one binlog connection shared by many consumers (ClickHouse's "MySQL Binlog Client").

A :class:`BinlogClient` per server owns dispatchers; each dispatcher reads one :class:`~mybinlog.BinlogStream`
and fans its events out to byte-limited consumer queues (:class:`Binlog`), detaching a consumer that stays full too
long and merging catch-up dispatchers back. See docs/sharing.md.

Layer rules: may import :mod:`mybinlog.source`, :mod:`mybinlog.protocol` and :mod:`mybinlog.errors`; never the
replication, snapshot or cli layers.
"""
