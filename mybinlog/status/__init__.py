"""The status layer: a consuming process shows its status rows to other processes (``mybinlog status --from``).

``_address`` parses status addresses (``unix:``, ``http://``, ``file:``) -> ``_document`` builds the status document
(the sharing layer's :class:`~mybinlog.BinlogStatus` rows, ClickHouse's ``system.mysql_binlogs`` columns, plus the
keys of ``extra``) -> ``_server`` serves it (:class:`StatusServer`: HTTP/1.1 over a unix socket or TCP, or a JSON
file rewritten atomically) and ``_read`` reads it from outside (:func:`read_status`). See docs/sharing.md, "Status".

Layer rules: may import :mod:`mybinlog.sharing` (the rows, the default factory), :mod:`mybinlog.source`,
:mod:`mybinlog.protocol` and :mod:`mybinlog.errors`; never the replication, snapshot or cli layers (they import it).
"""

from ._document import STATUS_COLUMNS, STATUS_FORMAT, StatusSource, status_document
from ._read import read_status
from ._server import StatusServer, serve_status

__all__ = [
    "STATUS_COLUMNS",
    "STATUS_FORMAT",
    "StatusServer",
    "StatusSource",
    "read_status",
    "serve_status",
    "status_document",
]
