"""Verify: compare MySQL/MariaDB tables with their ClickHouse replica (:func:`verify`, ``mybinlog verify``).

For every table both sides are read once, in whatever order the servers return rows (the replica while the source
streams, so both servers work at once), and each row is reduced to a 64-bit hash (BLAKE2b) of its canonical form:
:func:`~..types.canonical` maps a MySQL value and ClickHouse's text of the same stored value to one string (here
with inlined fast paths for the usual value forms, see :func:`fast_canonical`). Rows are spread over *buckets* by
their key (or, for a table without a key, by their exact columns), and each side keeps per bucket the number of
rows and the sum of their hashes modulo 2**64: order-independent, duplicate-sensitive, and memory for the buckets
only, never for the rows. The table is equal when every bucket is equal on both sides.

When buckets differ, both sides are read again keeping only the rows of (at most ``max_differences``) differing
buckets, which are matched by key: a key only in MySQL is *missing* in the replica, a key only in ClickHouse is
*extra*, a key held by both with other values is *changed* (with the differing columns), a key ClickHouse returns
more than once after ``FINAL`` is a *duplicate*. Tables without a usable key are compared as multisets of rows.
Tables with FLOAT/DOUBLE columns are confirmed row by row with a tolerance (old ClickHouse versions parse floats
inexactly), drilling further until a real difference is found or every differing bucket was looked at. The
second MySQL read runs in the same ``START TRANSACTION WITH CONSISTENT SNAPSHOT`` as the first, so the source side
is identical; the replica may have moved if replication is running.

MySQL is read through an unbuffered (streaming) cursor with session ``time_zone = '+00:00'``. ClickHouse is read
with ``SELECT ... FROM t FINAL WHERE <alive predicate>``; a large table in slices
``cityHash64(toString(tuple(<key>))) % n = i`` of about ``page_rows`` rows, so memory stays bounded.
See docs/verify.md.

Modules
-------
Each imports only modules above it in this table.

=================  =============================================================================================
``_report``        the results: :class:`VerifyReport`, :class:`TableResult`, the differences; text and JSON
``_canonical``     canonical rows, fast: :func:`fast_canonical`, the row functions generated per table
``_compare``       the comparison engine, pure: :class:`TableComparer` (buckets, checksums, drilling)
``_replica``       reading ClickHouse: the replica's tables and columns, FINAL and the alive predicate
``_verifier``      the orchestration: :func:`verify` reads both sides at once, table by table
=================  =============================================================================================

The command line (``mybinlog verify``: its arguments, the printed report, exit codes) is mybinlog/cli/_verify.py.

Layer rules: may import :mod:`mybinlog.ddl`, :mod:`mybinlog.clickhouse` (the replica's format: targets, types,
table layout), :mod:`mybinlog.source` (queries to the source) and :mod:`mybinlog.errors`; never the replicator or
the command line. It sits beside :mod:`mybinlog.replication` and :mod:`mybinlog.snapshot`, which write what it
reads.
"""

from __future__ import annotations

from ._canonical import fast_canonical
from ._compare import TableComparer, bucket_count, row_hash
from ._report import ColumnDifference, RowDifference, TableResult, VerifyReport
from ._verifier import DEFAULT_MAX_DIFFERENCES, DEFAULT_PAGE_ROWS, verify

__all__ = [
    "DEFAULT_MAX_DIFFERENCES",
    "DEFAULT_PAGE_ROWS",
    "ColumnDifference",
    "RowDifference",
    "TableComparer",
    "TableResult",
    "VerifyReport",
    "bucket_count",
    "fast_canonical",
    "row_hash",
    "verify",
]
