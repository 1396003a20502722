"""The sharing layer: one binlog connection shared by many consumers (ClickHouse's "MySQL Binlog Client").

The modules follow the data path::

    _source      EventSource: what a dispatcher reads (an opened BinlogStream, or a test fake): events with the
                 positions the source computed
    _items       the flow objects: _Item (one event as the dispatcher saw it), _Batch (one queue entry), _Routed
    _dispatcher  BinlogEventsDispatcher: reader task -> buffer -> flusher -> consumer queues; attach, catch-up merge
    _queue       _QueueState: one consumer queue's state, declared once; _Feed: the dispatcher's end of it (its
                 whole interface to a consumer)
    _consumer    Binlog: the consumer's end, an anyio ObjectReceiveStream of events
    _client      BinlogClient (consumers of one user:password@host:port), BinlogClientFactory, get_binlog_client
    _rows        BinlogStatus: the status rows (ClickHouse's system.mysql_binlogs columns); BinlogClientStatistics

A :class:`BinlogClient` per server owns dispatchers; each dispatcher reads one :class:`~mybinlog.BinlogStream` and
fans its events out to byte-limited consumer queues (:class:`Binlog`), detaching a consumer that stays full too long
and merging catch-up dispatchers back. Serving the status rows to other processes is the status layer's
(:mod:`mybinlog.status`). See docs/sharing.md.

ClickHouse name                                  mybinlog name
BinlogClientFactory::getClient                   BinlogClientFactory.get_client / get_binlog_client
BinlogClient::createBinlog                       BinlogClient.create_binlog
BinlogClient::getMetadata / factory getMetadata  BinlogClient.status / BinlogClientFactory.status
BinlogEventsDispatcher                           BinlogEventsDispatcher
BinlogEventsDispatcher::attach / syncTo          (internal) attach, sync targets
IBinlog::tryReadEvent(event, timeout_ms)         Binlog.read_event(timeout=seconds) / ``async for`` / receive()
IBinlog::getPosition                             Binlog.position

Layer rules: may import :mod:`mybinlog.source`, :mod:`mybinlog.protocol` and :mod:`mybinlog.errors`; never the
status, replication, snapshot or cli layers (they import it).
"""

from ._client import (
    DEFAULT_MAX_BYTES_IN_BINLOG_DISPATCHER_BUFFER,
    DEFAULT_MAX_BYTES_IN_BINLOG_QUEUE,
    DEFAULT_MAX_FLUSH_MILLISECONDS_IN_BINLOG_DISPATCHER,
    DEFAULT_MAX_MILLISECONDS_TO_WAIT_IN_BINLOG_QUEUE,
    BinlogClient,
    BinlogClientFactory,
    get_binlog_client,
    get_binlog_client_factory,
)
from ._consumer import Binlog, BinlogStatistics
from ._dispatcher import BinlogEventsDispatcher
from ._rows import BinlogClientStatistics, BinlogStatus
from ._source import EventSource, SourceFactory

__all__ = [
    "DEFAULT_MAX_BYTES_IN_BINLOG_DISPATCHER_BUFFER",
    "DEFAULT_MAX_BYTES_IN_BINLOG_QUEUE",
    "DEFAULT_MAX_FLUSH_MILLISECONDS_IN_BINLOG_DISPATCHER",
    "DEFAULT_MAX_MILLISECONDS_TO_WAIT_IN_BINLOG_QUEUE",
    "Binlog",
    "BinlogClient",
    "BinlogClientFactory",
    "BinlogClientStatistics",
    "BinlogEventsDispatcher",
    "BinlogStatistics",
    "BinlogStatus",
    "EventSource",
    "SourceFactory",
    "get_binlog_client",
    "get_binlog_client_factory",
]
