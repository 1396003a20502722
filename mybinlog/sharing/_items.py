"""What flows from a dispatcher's reader to the consumers: the flow objects of the sharing layer.

- :class:`_Item`: one event as the dispatcher saw it (its kind, the position after it when it completes a
  transaction, its size), or a per-table decode error;
- :class:`_Batch`: one consumer queue entry, what one flush brings a consumer (shared by every consumer without
  routing state of its own and the same table filter);
- :class:`_Routed`: an entry routed for one consumer (a skip set, positions merged with what it had executed).

Also the helpers of the sharing window of decoded rows (:func:`_held`, :func:`_private_copy`) and of GTID sets that
may be None. Nothing here awaits.
"""

from __future__ import annotations

import copy
import itertools
import operator
from collections.abc import Iterator
from typing import Any, Final

from ..protocol import (
    BinlogPosition,
    Event,
    GtidEvent,
    GtidSet,
    MariadbGtidEvent,
    QueryEvent,
    RotateEvent,
    RowsEvent,
    XaPrepareEvent,
    XidEvent,
)

_NOT_FORWARDED = 0
_FORWARDED = 1
_ROWS = 2
_ERROR = 3
_FORWARD_TYPES = (GtidEvent, MariadbGtidEvent, RotateEvent, XidEvent, QueryEvent, XaPrepareEvent)


class _Item:
    """One event as the dispatcher saw it (or a per-table decode error)."""

    __slots__ = (
        "error",
        "event",
        "gtid",
        "holders",
        "home",
        "in_txn",
        "is_gtid",
        "kind",
        "mark",
        "position",
        "size",
        "table",
        "windowed",
    )

    def __init__(
        self,
        event: Event | None,
        kind: int,
        position: BinlogPosition | None,
        in_txn: bool,
        *,
        is_gtid: bool = False,
        gtid: Any = None,
        error: BaseException | None = None,
        table: tuple[str, str] | None = None,
    ) -> None:
        self.event = event
        self.kind = kind
        self.position = position  # the boundary after this event when it completes a transaction
        self.in_txn = in_txn  # inside a transaction after this event
        self.is_gtid = is_gtid
        self.gtid = gtid
        self.error = error
        self.table = table
        # what it takes in a consumer queue: its wire size when it is handed out, 0 for a position-only marker
        self.size = event.size if event is not None and kind in (_FORWARDED, _ROWS) else 0
        # a consumer reads it outside the fast path: it moves the position, or it is only a marker
        self.mark = position is not None or kind == _NOT_FORWARDED
        # rows events: consumer queues still holding it, counted here (batches that are not its home) plus in
        # `home` (the queues holding the batch that is its home: one count per queue, not per item)
        self.holders = 0
        self.home: _Count | None = None
        self.windowed = False  # in its client's window of shared rows events


_Entry = tuple[_Item | None, BinlogPosition | None, BaseException | None]
"""A consumer queue entry as routed: the item whose event is handed out (None: only a position or an error)."""

_KIND = operator.attrgetter("kind")
_SIZE = operator.attrgetter("size")
_MARK = operator.attrgetter("mark")
_IS_EVENT = (False, True, True, False).__getitem__  # by kind: handed out (_FORWARDED, _ROWS)
_IS_ROWS = (False, False, True, False).__getitem__


class _Count:
    """How many consumer queues hold a home batch (see :class:`_Batch`)."""

    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0


class _Routed:
    """An entry routed for one consumer: ``item`` (None: a marker) with the consumer's own ``position``."""

    __slots__ = ("item", "position")

    def __init__(self, item: _Item | None, position: BinlogPosition | None) -> None:
        self.item = item
        self.position = position

    @property
    def event(self) -> Event | None:  # what the fast path hands out (an entry before the next mark has an item)
        return None if self.item is None else self.item.event


class _Batch:
    """One consumer queue entry: what a consumer gets from one flush of its dispatcher (or the part of it that
    fitted in its queue). Plain consumers with the same table filter share one batch object.

    ``entries`` are either the dispatcher's items themselves (``routed`` False: an item of kind ``_FORWARDED``
    or ``_ROWS`` is handed out, ``_NOT_FORWARDED`` only moves the position; each item's own position applies),
    or :class:`_Routed` entries routed for one consumer (``routed`` True: skip sets, positions merged with what
    the consumer had executed, a transaction it must wait out). ``index`` maps an entry back to the
    flushed items (None: entry ``j`` is item ``offset + j``); ``marks`` are the entries a consumer reads outside
    its fast path (a position to take, a marker).

    A queue holds a batch from the moment it is queued until the consumer has read it to the end. The unfiltered
    batch of a flush is the ``home`` of its items: its holders are counted once per queue (``home.n``), those of
    other batches on each rows event (``_Item.holders``).
    """

    __slots__ = ("_prefix", "entries", "home", "index", "marks", "nbytes", "nevents", "offset", "routed", "windowed")

    def __init__(
        self,
        entries: list[Any],
        routed: bool,
        nbytes: int,
        nevents: int,
        *,
        index: list[int] | None = None,
        offset: int = 0,
        marks: list[int] | None = None,
    ) -> None:
        self.entries = entries
        self.routed = routed
        self.nbytes = nbytes  # bytes of the events handed out (what counts against max_bytes_in_binlog_queue)
        self.nevents = nevents  # events handed out (markers not counted)
        self.index = index
        self.offset = offset
        self.marks: list[int] = marks if marks is not None else []
        self.home: _Count | None = None
        self.windowed = 0  # entries before this one were read and went through the window (if others hold them)
        self._prefix: tuple[list[int], list[int]] | None = None

    @classmethod
    def of_items(cls, items: list[_Item], *, index: list[int] | None = None, offset: int = 0) -> _Batch:
        kinds = list(map(_KIND, items))
        nevents = len(kinds) - kinds.count(_NOT_FORWARDED)
        marks = list(itertools.compress(range(len(items)), map(_MARK, items)))
        return cls(items, False, sum(map(_SIZE, items)), nevents, index=index, offset=offset, marks=marks)

    @classmethod
    def of_routed(cls, entries: list[_Routed], index: list[int]) -> _Batch:
        nbytes = nevents = 0
        marks = []
        for j, entry in enumerate(entries):
            item = entry.item
            if item is not None:
                nbytes += item.size
                nevents += 1
            if item is None or entry.position is not None:
                marks.append(j)
        return cls(entries, True, nbytes, nevents, index=index, marks=marks)

    def claim(self) -> None:
        """Become the home of its items (none of them has one yet)."""
        home = self.home = _Count()
        for item in self.entries:
            item.home = home

    def prefix(self) -> tuple[list[int], list[int]]:
        """(bytes, events) before each entry, one more than there are entries; computed when first needed."""
        if self._prefix is None:
            if self.routed:
                sizes = [0 if e.item is None else e.item.size for e in self.entries]
                counts = [e.item is not None for e in self.entries]
            else:
                sizes = list(map(_SIZE, self.entries))
                counts = list(map(_IS_EVENT, map(_KIND, self.entries)))
            self._prefix = (list(itertools.accumulate(sizes, initial=0)), list(itertools.accumulate(counts, initial=0)))
        return self._prefix

    def item_index(self, j: int) -> int:
        """The position of entry ``j`` among the flushed items."""
        return self.offset + j if self.index is None else self.index[j]

    def part(self, start: int, end: int) -> _Batch:
        """Entries ``start:end`` as a batch of their own (a queue never keeps alive entries it does not hold)."""
        if start == 0 and end == len(self.entries):
            return self
        cum, counts = self.prefix()
        entries = self.entries[start:end]
        if self.routed:
            marks = [j for j, e in enumerate(entries) if e.item is None or e.position is not None]
        else:
            marks = list(itertools.compress(range(len(entries)), map(_MARK, entries)))
        return _Batch(entries, self.routed, cum[end] - cum[start], counts[end] - counts[start], marks=marks)

    def rows(self, start: int = 0, end: int | None = None) -> Iterator[_Item]:
        """Its rows events (among entries ``start:end``)."""
        entries = self.entries if start == 0 and end is None else self.entries[start:end]
        if self.routed:
            return (e.item for e in entries if e.item is not None and e.item.kind == _ROWS)
        return itertools.compress(entries, map(_IS_ROWS, map(_KIND, entries)))

    def hold(self, queues: int) -> None:
        """``queues`` more consumer queues hold this batch."""
        if self.home is not None:
            self.home.n += queues
        else:
            for item in self.rows():
                item.holders += queues

    def release(self) -> None:
        """A queue no longer holds this batch (read to its end, or dropped)."""
        if self.home is not None:
            self.home.n -= 1
        else:
            for item in self.rows():
                item.holders -= 1


def _held(item: _Item) -> int:
    """How many consumer queues hold ``item`` (a rows event)."""
    home = item.home
    return item.holders if home is None else item.holders + home.n


_NO_BATCH: Final = _Batch([], False, 0, 0)

SHARED_DECODE_MIN_BYTES: Final = 256 << 10
_WINDOW_STEP: Final = 256


def _private_copy(event: RowsEvent) -> RowsEvent:
    """The same rows event as a new object without decoded rows: the consumer that gets it decodes it itself."""
    own = copy.copy(event)
    own._rows = None
    return own


def _gtid_set_contains(outer: GtidSet | None, inner: GtidSet | None) -> bool:
    if outer is None or inner is None or type(outer) is not type(inner):
        return False
    return outer.contains(inner)  # type: ignore[arg-type]


def _union(a: GtidSet | None, b: GtidSet | None) -> GtidSet | None:
    if a is None:
        return b
    if b is None or type(a) is not type(b):
        return a
    return a.union(b)  # type: ignore[arg-type]
