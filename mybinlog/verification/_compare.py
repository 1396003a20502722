"""The comparison engine, pure (rows in, buckets and differences out): :class:`TableComparer` keeps per bucket
the number of rows and the sum of their 64-bit hashes for each side, then collects the rows of differing buckets
and matches them by key to name the differences."""

from __future__ import annotations

import hashlib
import math
import operator
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, cast

from ._canonical import Canon, Row, _row_function
from ._report import ColumnDifference, RowDifference

__all__ = ["Match", "TableComparer", "bucket_count", "row_hash"]


_MASK64 = (1 << 64) - 1
_ROWS_PER_BUCKET = 64
_MIN_BUCKETS = 16
_MAX_BUCKETS = 1 << 16


# ---------------------------------------------------------------------------------------------------------------
# the comparison engine (pure: rows in, buckets and differences out)


def row_hash(row: tuple[str | None, ...]) -> int:
    """64-bit hash of a canonical row: BLAKE2b over an unambiguous encoding (``repr`` of the tuple), so
    ``('a\\tb', None)`` and ``('a', '\\tb')`` or ``'NULL'`` and None never collide by construction."""
    return int.from_bytes(hashlib.blake2b(repr(row).encode("utf-8"), digest_size=8).digest(), "little")


def bucket_count(expected_rows: int) -> int:
    """Buckets for a table of about ``expected_rows`` rows: a power of two near rows/64, from 16 to 65536."""
    want = max(1, expected_rows // _ROWS_PER_BUCKET)
    return max(_MIN_BUCKETS, min(_MAX_BUCKETS, 1 << math.ceil(math.log2(want)) if want > 1 else 1))


Match = Callable[["str | None", "str | None"], bool]
"""Whether two canonical values of one column are the same value (equality, or a tolerance for floats)."""


class TableComparer:
    """Order-independent comparison of two row sets of one table (see :mod:`mybinlog.verification`).

    ``columns``: column names; ``key``: indexes of the key columns (empty: multiset comparison);
    ``source_canon`` / ``replica_canon``: per column, the function from that side's raw value to canonical text.
    ``matchers``: per column, a :data:`Match` for columns whose canonical text may differ for the same value
    (floats read back from old ClickHouse versions), None for exact columns. Buckets of a multiset comparison are
    chosen by the exact columns only, so a row whose float differs in the last bit still meets its counterpart.

    Feed rows with :meth:`add_source` / :meth:`add_replica`; when :meth:`differing_buckets` is not empty, call
    :meth:`start_drill` with the buckets to inspect, feed both sides again, and read :meth:`differences`.
    """

    def __init__(
        self,
        columns: Sequence[str],
        key: Sequence[int],
        source_canon: Sequence[Canon],
        replica_canon: Sequence[Canon],
        *,
        matchers: Sequence[Match | None] | None = None,
        buckets: int = 1024,
    ) -> None:
        if matchers is None:
            matchers = [None] * len(columns)
        if not len(columns) == len(source_canon) == len(replica_canon) == len(matchers):
            raise ValueError("columns, source_canon, replica_canon and matchers must have the same length")
        if buckets < 1:
            raise ValueError("buckets must be >= 1")
        self.columns = tuple(columns)
        self.key = tuple(key)
        self.buckets = buckets
        self.matchers = tuple(matchers)
        self.approximate = any(m is not None for m in self.matchers)
        self._canon = (_row_function(source_canon), _row_function(replica_canon))
        self.counts = ([0] * buckets, [0] * buckets)
        self.sums = ([0] * buckets, [0] * buckets)
        self._drill: frozenset[int] | None = None
        self._held: tuple[dict[Any, list[Row]], dict[Any, list[Row]]] = ({}, {})
        # what places a row in a bucket: its key, else (multiset) its exact columns, else its hash
        self._key_of = _getter(self.key) if self.key else None
        exact = [i for i, m in enumerate(self.matchers) if m is None]
        self._bucket_of = self._key_of or (_getter(exact) if self.approximate else None)

    # -- feeding --------------------------------------------------------------------------------------------

    def add_source(self, rows: Iterable[Sequence[Any]]) -> None:
        """Rows of the source (values as the MySQL driver returns them, in ``columns`` order)."""
        self._add(0, rows)

    def add_replica(self, rows: Iterable[Sequence[Any]]) -> None:
        """Rows of the replica (ClickHouse text, in ``columns`` order)."""
        self._add(1, rows)

    def _add(self, side: int, rows: Iterable[Sequence[Any]]) -> None:
        canon_row = self._canon[side]
        n = self.buckets
        bucket_of = self._bucket_of
        blake2b = hashlib.blake2b
        from_bytes = int.from_bytes
        if self._drill is None:
            counts = self.counts[side]
            sums = self.sums[side]
            for raw in rows:
                row = canon_row(raw)
                h = from_bytes(blake2b(repr(row).encode(), digest_size=8).digest(), "little")  # = row_hash(row)
                b = h % n if bucket_of is None else hash(bucket_of(row)) % n
                counts[b] += 1
                sums[b] += h
            return
        drill = self._drill
        held = self._held[side]
        key_of = self._key_of
        for raw in rows:
            row = canon_row(raw)
            b = row_hash(row) % n if bucket_of is None else hash(bucket_of(row)) % n
            if b in drill:
                held.setdefault(row if key_of is None else key_of(row), []).append(row)

    # -- pass 1 results -------------------------------------------------------------------------------------

    @property
    def source_rows(self) -> int:
        return sum(self.counts[0])

    @property
    def replica_rows(self) -> int:
        return sum(self.counts[1])

    @property
    def source_checksum(self) -> int:
        """Sum of the source's row hashes modulo 2**64."""
        return sum(self.sums[0]) & _MASK64

    @property
    def replica_checksum(self) -> int:
        return sum(self.sums[1]) & _MASK64

    def differing_buckets(self) -> list[int]:
        """Buckets whose row count or checksum differs. Without matchers each holds at least one difference;
        with matchers a bucket may differ only by float rounding (confirm with a drill)."""
        c0, c1 = self.counts
        s0, s1 = self.sums
        return [b for b in range(self.buckets) if c0[b] != c1[b] or (s0[b] - s1[b]) & _MASK64]

    # -- pass 2 ---------------------------------------------------------------------------------------------

    def start_drill(self, buckets: Collection[int]) -> None:
        """Switch to collecting the rows of ``buckets`` (feed both sides again after this)."""
        self._drill = frozenset(buckets)
        self._held = ({}, {})

    @property
    def held_rows(self) -> int:
        return sum(len(v) for side in self._held for v in side.values())

    def differences(self) -> list[RowDifference]:
        """Every difference among the collected rows, ordered by key."""
        if self._key_of is None:
            return self._multiset_differences()
        src, rep = self._held
        key_names = [self.columns[i] for i in self.key]
        out: list[RowDifference] = []
        for k in sorted(src.keys() | rep.keys(), key=_sort_key):
            s = src.get(k, [])
            r = rep.get(k, [])
            named = tuple(zip(key_names, k, strict=True))
            if not r:
                out.append(RowDifference("missing", named, count=len(s)))
            elif not s:
                out.append(RowDifference("extra", named, count=len(r)))
            elif len(r) > 1:
                out.append(RowDifference("duplicate", named, count=len(r)))
            elif s[0] != r[0]:
                cols = tuple(
                    ColumnDifference(self.columns[i], a, b)
                    for i, (a, b) in enumerate(zip(s[0], r[0], strict=True))
                    if not self._same(i, a, b)
                )
                if cols:
                    out.append(RowDifference("changed", named, cols))
        return out

    def _same(self, index: int, a: str | None, b: str | None) -> bool:
        if a == b:
            return True
        match = self.matchers[index]
        return match is not None and match(a, b)

    def _rows_match(self, a: Row, b: Row) -> bool:
        return all(self._same(i, x, y) for i, (x, y) in enumerate(zip(a, b, strict=True)))

    def _multiset_differences(self) -> list[RowDifference]:
        src, rep = self._held
        balance = Counter({row: len(v) for row, v in src.items()})
        balance.subtract({row: len(v) for row, v in rep.items()})
        missing = sorted((row for row, n in balance.items() if n > 0), key=_sort_key)
        extra = sorted((row for row, n in balance.items() if n < 0), key=_sort_key)
        if self.approximate:  # pair rows that differ only within the float tolerance
            for row in missing:
                for other in extra:
                    while balance[row] > 0 and balance[other] < 0 and self._rows_match(row, other):
                        balance[row] -= 1
                        balance[other] += 1
        return [
            RowDifference(
                "missing" if balance[row] > 0 else "extra",
                tuple(zip(self.columns, row, strict=True)),
                count=abs(balance[row]),
            )
            for row in sorted((r for r in (*missing, *extra) if balance[r]), key=_sort_key)
        ]


def _getter(indexes: Sequence[int]) -> Callable[[Row], tuple[str | None, ...]]:
    """``row -> tuple of the values at indexes`` (always a tuple, also for one index)."""
    if len(indexes) == 1:
        one = indexes[0]
        return lambda row: (row[one],)
    if not indexes:
        return lambda row: ()
    return cast("Callable[[Row], tuple[str | None, ...]]", operator.itemgetter(*indexes))


def _sort_key(key: tuple[str | None, ...]) -> tuple[tuple[int, int, str], ...]:
    """Numbers in numeric order, then text; NULL first."""
    parts: list[tuple[int, int, str]] = []
    for v in key:
        if v is None:
            parts.append((0, 0, ""))
            continue
        try:
            parts.append((1, int(v), ""))
        except ValueError:
            parts.append((2, 0, v))
    return tuple(parts)
