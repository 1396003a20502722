"""GTIDs and GTID sets of MySQL and MariaDB: parse, format, combine, and their binary wire encodings.

Two flavours, two models:

* **MySQL** (5.6+): a GTID is ``uuid:gno`` (MySQL 8.4+ also ``uuid:tag:gno``). A GTID set holds, per
  (uuid, tag), a set of transaction numbers written as merged closed intervals:
  ``3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7:tag_a:1-3,4c2d...:1-9``. :class:`MySQLGtidSet` is a real set:
  union, superset test and membership are exact.
* **MariaDB** (10.0+): a GTID is ``domain-server-seq``. A position (``gtid_slave_pos``, ``gtid_binlog_pos``)
  holds ONE GTID per replication domain; everything in that domain up to its ``seq_no`` counts as executed.
  :class:`MariaDBGtidSet` models that position.

Binary formats (see ``docs/gtid.md``):

* MySQL, classic (untagged) - the body of PREVIOUS_GTIDS_LOG_EVENT and the data of COM_BINLOG_DUMP_GTID:
  ``n_sids u64 LE``, then per sid ``uuid (16 bytes) + n_intervals u64 LE + n * (start u64 LE, end u64 LE)``
  with ``end`` exclusive.
* MySQL, tagged (8.3+, written whenever a tag is present): the first 8 bytes are
  ``0x01, n_sids (6 bytes LE), 0x01`` (the top byte is the format: 0 = classic, 1 = tagged); each entry is
  ``uuid (16) + tag (length as a mysql::serialization varint, i.e. ``len << 1`` for tags up to 63 bytes, then
  the ASCII bytes; length 0 = untagged) + n_intervals u64 + intervals``. Every (uuid, tag) pair is its own
  entry, sorted by uuid then tag.
* MariaDB GTID_LIST_EVENT body: ``u32 LE`` whose low 28 bits are the count and high 4 bits are flags, then
  ``count * (domain_id u32, server_id u32, seq_no u64)``, all little-endian.

All values are immutable and hashable; equality is by content. ``add()`` (called once per transaction on the
hot path) extends the last interval in O(1) for the usual case.
"""

from __future__ import annotations

import re
import struct
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from operator import itemgetter
from types import MappingProxyType
from typing import Any, ClassVar, Final, NoReturn, TypeAlias

from mybinlog.errors import GtidSetError

__all__ = [
    "MAX_GNO",
    "GTID_LIST_FLAG_IGN_GTIDS",
    "GTID_LIST_FLAG_UNTIL_REACHED",
    "Gtid",
    "GtidSet",
    "MariaDBGtid",
    "MariaDBGtidSet",
    "MySQLGtid",
    "MySQLGtidSet",
    "can_attach",
    "is_new",
    "parse_gtid_set",
]

#: Largest valid MySQL transaction number. MySQL keeps GNOs in a signed 64-bit integer and reserves
#: ``GNO_END = 2**63 - 1`` as the one-past-the-end sentinel (the binary format stores exclusive ends), so the
#: last usable GNO is ``2**63 - 2``.
MAX_GNO: Final = (1 << 63) - 2

#: MariaDB GTID_LIST_EVENT flags (the high 4 bits of the count word, unshifted, as MariaDB defines them).
GTID_LIST_FLAG_UNTIL_REACHED: Final = 1 << 28
GTID_LIST_FLAG_IGN_GTIDS: Final = 1 << 29

_GTID_LIST_COUNT_MASK: Final = (1 << 28) - 1
_GTID_LIST_FLAGS_MASK: Final = 0xF << 28
_MAX_U32: Final = (1 << 32) - 1
_MAX_U64: Final = (1 << 64) - 1
_MAX_TAG_LEN: Final = 32

_MYSQL_SET_EXAMPLE: Final = (
    "a valid MySQL GTID set looks like '3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7,"
    "4c2d1a3e-71ca-11e1-9e33-c80aa9429562:1-3' (MySQL 8.4+ tags: 'uuid:1-5:my_tag:1-3'), or '' for empty"
)
_MARIADB_SET_EXAMPLE: Final = (
    "a valid MariaDB GTID position looks like '0-1-100,1-2-5' (domain-server-seq, one per domain), "
    "or '' for empty"
)

_CANON_UUID_RE: Final = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_UUID_RE: Final = re.compile(
    r"([0-9a-fA-F]{8})-?([0-9a-fA-F]{4})-?([0-9a-fA-F]{4})-?([0-9a-fA-F]{4})-?([0-9a-fA-F]{12})"
)
_TAG_RE: Final = re.compile(r"[a-z_][a-z0-9_]{0,31}")
_TAG_START_RE: Final = re.compile(r"[A-Za-z_]")
_INTERVAL_RE: Final = re.compile(r"(\d+)(?:\s*-\s*(\d+))?")
_MARIADB_GTID_RE: Final = re.compile(r"(\d+)-(\d+)-(\d+)")

_U64: Final = struct.Struct("<Q")
_U32: Final = struct.Struct("<I")
_INTERVAL: Final = struct.Struct("<QQ")
_MARIADB_ENTRY: Final = struct.Struct("<IIQ")

Interval: TypeAlias = tuple[int, int]
Intervals: TypeAlias = tuple[Interval, ...]
_Key: TypeAlias = tuple[str, str]
_start: Final = itemgetter(0)


# ----------------------------------------------------------------------------------------------------
# validation helpers


def _canonical_uuid(text: str, context: str) -> str:
    """Lowercase dashed form of a UUID given with or without dashes, in any case."""
    match = _UUID_RE.fullmatch(text.strip())
    if match is None:
        where = "" if context == text else f" in {context!r}"
        raise GtidSetError(
            f"{text!r}{where} is not a server UUID: expected 32 hex digits such as "
            f"'3e11fa47-71ca-11e1-9e33-c80aa9429562'"
        )
    return "-".join(match.groups()).lower()


def _canonical_tag(text: str, context: str) -> str:
    tag = text.strip().lower()
    if not _TAG_RE.fullmatch(tag):
        where = "" if context == text else f" in {context!r}"
        raise GtidSetError(
            f"invalid GTID tag {text!r}{where}: a tag is 1-32 characters of letters, digits and "
            f"'_', starting with a letter or '_' (e.g. 'tag_a')"
        )
    return tag


def _check_gno(gno: int, context: str) -> None:
    if not 1 <= gno <= MAX_GNO:
        raise GtidSetError(
            f"transaction number {gno} in {context!r} is out of range: a MySQL GNO is between 1 and {MAX_GNO}"
        )


@lru_cache(maxsize=1024)
def _uuid_from_bytes(raw: bytes) -> str:
    h = raw.hex()
    return f"{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


@lru_cache(maxsize=1024)
def _uuid_to_bytes(sid: str) -> bytes:
    return bytes.fromhex(sid.replace("-", ""))


def _normalize(intervals: Iterable[Interval]) -> Intervals:
    """Sort closed intervals and merge overlapping or adjacent ones."""
    ordered = sorted(intervals)
    if not ordered:
        return ()
    out: list[Interval] = []
    cur_s, cur_e = ordered[0]
    for s, e in ordered[1:]:
        if s <= cur_e + 1:
            if e > cur_e:
                cur_e = e
        else:
            out.append((cur_s, cur_e))
            cur_s, cur_e = s, e
    out.append((cur_s, cur_e))
    return tuple(out)


def _merge(a: Intervals, b: Intervals) -> Intervals:
    if not a:
        return b
    if not b:
        return a
    if a[-1][1] + 1 < b[0][0]:
        return a + b
    if b[-1][1] + 1 < a[0][0]:
        return b + a
    return _normalize(a + b)


def _intervals_contain(big: Intervals, small: Intervals) -> bool:
    """Every interval of ``small`` lies inside one interval of ``big`` (both normalized)."""
    i = 0
    n = len(big)
    for s, e in small:
        while i < n and big[i][1] < s:
            i += 1
        if i == n:
            return False
        bs, be = big[i]
        if bs > s or be < e:
            return False
    return True


def _subtract(a: Intervals, b: Intervals) -> Intervals:
    """The numbers of ``a`` that are not in ``b`` (both normalized)."""
    out: list[Interval] = []
    j, n = 0, len(b)
    for s, e in a:
        while j < n and b[j][1] < s:
            j += 1
        k = j
        while s <= e:
            if k == n or b[k][0] > e:
                out.append((s, e))
                break
            bs, be = b[k]
            if bs > s:
                out.append((s, bs - 1))
            s = max(s, be + 1)
            k += 1
    return tuple(out)


def _insert_gno(intervals: Intervals, gno: int) -> Intervals:
    """General (slow) path of add(): put one gno into normalized intervals."""
    i = bisect_right(intervals, gno, key=_start)
    if i and intervals[i - 1][1] >= gno:
        return intervals
    left = intervals[i - 1] if i else None
    right = intervals[i] if i < len(intervals) else None
    joins_left = left is not None and left[1] + 1 == gno
    joins_right = right is not None and right[0] - 1 == gno
    if joins_left and joins_right:
        assert left is not None
        assert right is not None
        return (*intervals[: i - 1], (left[0], right[1]), *intervals[i + 1 :])
    if joins_left:
        assert left is not None
        return (*intervals[: i - 1], (left[0], gno), *intervals[i:])
    if joins_right:
        assert right is not None
        return (*intervals[:i], (gno, right[1]), *intervals[i + 1 :])
    return (*intervals[:i], (gno, gno), *intervals[i:])


# ----------------------------------------------------------------------------------------------------
# single GTIDs


@dataclass(frozen=True, slots=True)
class MySQLGtid:
    """One MySQL transaction id: ``uuid:gno``, or ``uuid:tag:gno`` for a tagged GTID (MySQL 8.4+).

    ``sid`` is normalized to the lowercase dashed UUID form and ``tag`` to lowercase (``""`` = untagged);
    ``gno`` is between 1 and :data:`MAX_GNO`.
    """

    sid: str
    gno: int
    tag: str = ""

    def __post_init__(self) -> None:
        if not _CANON_UUID_RE.fullmatch(self.sid):
            object.__setattr__(self, "sid", _canonical_uuid(self.sid, self.sid))
        if self.tag and not _TAG_RE.fullmatch(self.tag):
            object.__setattr__(self, "tag", _canonical_tag(self.tag, self.tag))
        _check_gno(self.gno, f"{self.sid}:{self.gno}")

    @classmethod
    def parse(cls, text: str) -> MySQLGtid:
        """Parse ``'uuid:gno'`` or ``'uuid:tag:gno'`` (whitespace around the parts is ignored)."""
        parts = text.split(":")
        if len(parts) not in (2, 3):
            raise GtidSetError(
                f"{text!r} is not a MySQL GTID: expected 'uuid:gno' such as "
                f"'3e11fa47-71ca-11e1-9e33-c80aa9429562:23' or 'uuid:tag:gno' (MySQL 8.4+)"
            )
        sid = _canonical_uuid(parts[0], text)
        tag = _canonical_tag(parts[1], text) if len(parts) == 3 else ""
        gno_text = parts[-1].strip()
        if not gno_text.isdigit() or not gno_text.isascii():
            raise GtidSetError(
                f"{text!r} is not a MySQL GTID: the transaction number {parts[-1]!r} is not a positive "
                f"integer"
            )
        gno = int(gno_text)
        _check_gno(gno, text)
        return cls(sid, gno, tag)

    def __str__(self) -> str:
        if self.tag:
            return f"{self.sid}:{self.tag}:{self.gno}"
        return f"{self.sid}:{self.gno}"


@dataclass(frozen=True, slots=True)
class MariaDBGtid:
    """One MariaDB transaction id ``domain-server-seq`` (``domain_id`` and ``server_id`` are u32, ``seq_no``
    u64)."""

    domain_id: int
    server_id: int
    seq_no: int

    def __post_init__(self) -> None:
        if not (
            0 <= self.domain_id <= _MAX_U32
            and 0 <= self.server_id <= _MAX_U32
            and 0 <= self.seq_no <= _MAX_U64
        ):
            raise GtidSetError(
                f"MariaDB GTID {self.domain_id}-{self.server_id}-{self.seq_no} is out of range: "
                f"domain_id and server_id are 0..{_MAX_U32}, seq_no is 0..{_MAX_U64}"
            )

    @classmethod
    def parse(cls, text: str) -> MariaDBGtid:
        """Parse ``'domain-server-seq'`` such as ``'0-1-100'``."""
        match = _MARIADB_GTID_RE.fullmatch(text.strip())
        if match is None or not match.group(0).isascii():
            raise GtidSetError(
                f"{text!r} is not a MariaDB GTID: expected 'domain-server-seq' such as '0-1-100'"
            )
        return cls(int(match.group(1)), int(match.group(2)), int(match.group(3)))

    def __str__(self) -> str:
        return f"{self.domain_id}-{self.server_id}-{self.seq_no}"


# ----------------------------------------------------------------------------------------------------
# MySQL GTID sets


class _Immutable:
    __slots__ = ()

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is immutable: operations return a new set")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is immutable: operations return a new set")


_set_attr = object.__setattr__


class MySQLGtidSet(_Immutable):
    """An immutable set of MySQL GTIDs.

    ``MySQLGtidSet()`` is the empty set; build others with :meth:`parse`, :meth:`decode`,
    :meth:`from_intervals`, :meth:`add` and :meth:`union`. Intervals are exposed as CLOSED ranges
    ``(first, last)`` exactly as MySQL prints them (``1-5`` is ``(1, 5)``); only the binary encoding uses
    exclusive ends.
    """

    __slots__ = ("_hash", "_map")
    flavor: ClassVar[str] = "mysql"
    _map: dict[_Key, Intervals]
    _hash: int | None

    def __init__(self) -> None:
        _set_attr(self, "_map", {})
        _set_attr(self, "_hash", None)

    @classmethod
    def _from_map(cls, mapping: dict[_Key, Intervals]) -> MySQLGtidSet:
        obj = object.__new__(cls)
        _set_attr(obj, "_map", mapping)
        _set_attr(obj, "_hash", None)
        return obj

    # ---- construction --------------------------------------------------------------------------------

    @classmethod
    def parse(cls, text: str) -> MySQLGtidSet:
        """Parse a GTID set as MySQL prints or accepts it.

        Accepts ``''`` (empty), whitespace and newlines anywhere between tokens (``@@gtid_executed`` prints
        ``',\\n'`` between UUIDs), UUIDs in any case with or without dashes, unsorted / overlapping /
        adjacent intervals (they are merged), repeated UUIDs (merged), and MySQL 8.4 tags:
        ``uuid:1-5:7:tag_a:1-3:tag_b:4`` - intervals after a tag belong to that tag.
        """
        collected: dict[_Key, list[Interval]] = {}
        for element in text.split(","):
            if not element.strip():
                continue
            parts = element.split(":")
            sid = _canonical_uuid(parts[0], text)
            if len(parts) == 1:
                raise GtidSetError(
                    f"UUID {parts[0].strip()!r} in {text!r} has no intervals; {_MYSQL_SET_EXAMPLE}"
                )
            tag = ""
            tag_has_intervals = True
            for part in parts[1:]:
                token = part.strip()
                if not token:
                    raise GtidSetError(
                        f"empty interval in {text!r} (two ':' in a row?); {_MYSQL_SET_EXAMPLE}"
                    )
                if _TAG_START_RE.match(token):
                    if not tag_has_intervals:
                        raise GtidSetError(
                            f"GTID tag {tag!r} in {text!r} has no intervals; {_MYSQL_SET_EXAMPLE}"
                        )
                    tag = _canonical_tag(token, text)
                    tag_has_intervals = False
                    continue
                match = _INTERVAL_RE.fullmatch(token)
                if match is None or not token.isascii():
                    raise GtidSetError(
                        f"invalid interval {token!r} in {text!r}: expected 'N' or 'N-M'; {_MYSQL_SET_EXAMPLE}"
                    )
                start = int(match.group(1))
                end = int(match.group(2)) if match.group(2) is not None else start
                _check_gno(start, text)
                _check_gno(end, text)
                if end < start:
                    raise GtidSetError(
                        f"invalid interval {token!r} in {text!r}: the end is smaller than the start "
                        f"(write 'first-last', e.g. '3-5')"
                    )
                collected.setdefault((sid, tag), []).append((start, end))
                tag_has_intervals = True
            if not tag_has_intervals:
                raise GtidSetError(f"GTID tag {tag!r} in {text!r} has no intervals; {_MYSQL_SET_EXAMPLE}")
        return cls._from_map({key: _normalize(ivs) for key, ivs in collected.items()})

    @classmethod
    def from_intervals(cls, mapping: Mapping[tuple[str, str], Iterable[tuple[int, int]]]) -> MySQLGtidSet:
        """Build a set from ``{(uuid, tag): [(first, last), ...]}`` with closed intervals (``tag`` ``''`` =
        untagged). Intervals may be unsorted, overlapping or adjacent."""
        collected: dict[_Key, list[Interval]] = {}
        for (sid_in, tag_in), intervals in mapping.items():
            context = f"{sid_in}:{tag_in}" if tag_in else sid_in
            sid = sid_in if _CANON_UUID_RE.fullmatch(sid_in) else _canonical_uuid(sid_in, context)
            tag = _canonical_tag(tag_in, context) if tag_in else ""
            bucket = collected.setdefault((sid, tag), [])
            for start, end in intervals:
                _check_gno(start, context)
                _check_gno(end, context)
                if end < start:
                    raise GtidSetError(f"invalid interval ({start}, {end}) for {context!r}: end < start")
                bucket.append((start, end))
        return cls._from_map({key: _normalize(ivs) for key, ivs in collected.items() if ivs})

    # ---- formatting ----------------------------------------------------------------------------------

    def __str__(self) -> str:
        """Canonical text: UUIDs sorted; per UUID the untagged intervals first, then tags sorted; no
        whitespace (MySQL prints the same with ``',\\n'`` between UUIDs)."""
        if not self._map:
            return ""
        groups: list[str] = []
        current_sid = None
        pieces: list[str] = []
        for sid, tag in sorted(self._map):
            if sid != current_sid:
                if pieces:
                    groups.append("".join(pieces))
                pieces = [sid]
                current_sid = sid
            if tag:
                pieces.append(f":{tag}")
            for s, e in self._map[(sid, tag)]:
                pieces.append(f":{s}" if s == e else f":{s}-{e}")
        groups.append("".join(pieces))
        return ",".join(groups)

    def __repr__(self) -> str:
        return f"MySQLGtidSet.parse({str(self)!r})"

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (MySQLGtidSet.parse, (str(self),))

    # ---- accessors -----------------------------------------------------------------------------------

    def sids(self) -> tuple[str, ...]:
        """The server UUIDs in the set, sorted (each once, whatever its tags)."""
        return tuple(sorted({sid for sid, _ in self._map}))

    def keys(self) -> tuple[tuple[str, str], ...]:
        """The ``(uuid, tag)`` pairs in the set, sorted (``tag`` is ``''`` for untagged GTIDs)."""
        return tuple(sorted(self._map))

    def intervals(self, sid: str, tag: str = "") -> Intervals:
        """Closed intervals ``((first, last), ...)`` of one ``(uuid, tag)``, ascending; ``()`` if absent."""
        key = (sid if _CANON_UUID_RE.fullmatch(sid) else _canonical_uuid(sid, sid), tag.lower())
        return self._map.get(key, ())

    def items(self) -> tuple[tuple[tuple[str, str], Intervals], ...]:
        """``(((uuid, tag), intervals), ...)`` sorted by uuid then tag."""
        return tuple(sorted(self._map.items()))

    def __bool__(self) -> bool:
        return bool(self._map)

    def __len__(self) -> int:
        """Number of transactions in the set."""
        return sum(e - s + 1 for ivs in self._map.values() for s, e in ivs)

    def __iter__(self) -> Iterator[MySQLGtid]:
        """Every GTID, in canonical order. Beware: a set like ``uuid:1-100000000`` yields 10^8 items."""
        for (sid, tag), ivs in sorted(self._map.items()):
            for s, e in ivs:
                for gno in range(s, e + 1):
                    yield MySQLGtid(sid, gno, tag)

    def __contains__(self, gtid: object) -> bool:
        if not isinstance(gtid, MySQLGtid):
            return False
        ivs = self._map.get((gtid.sid, gtid.tag))
        if not ivs:
            return False
        gno = gtid.gno
        s, e = ivs[-1]
        if s <= gno:
            return gno <= e
        i = bisect_right(ivs, gno, key=_start)
        return i > 0 and ivs[i - 1][1] >= gno

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MySQLGtidSet):
            return self._map == other._map
        return NotImplemented

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = hash(frozenset(self._map.items()))
            _set_attr(self, "_hash", h)
        return h

    # ---- operations ----------------------------------------------------------------------------------

    def add(self, gtid: MySQLGtid) -> MySQLGtidSet:
        """A new set with ``gtid`` added (``self`` if already present).

        O(1) plus a copy of the small (uuid, tag) map when ``gtid`` extends the last interval of its
        (uuid, tag) - the usual case of one transaction after another from the same source.
        """
        key = (gtid.sid, gtid.tag)
        mapping = self._map
        ivs = mapping.get(key)
        gno = gtid.gno
        if ivs is None:
            new: Intervals = ((gno, gno),)
        else:
            s, e = ivs[-1]
            if gno == e + 1:
                new = (*ivs[:-1], (s, gno))
            elif gno > e:
                new = (*ivs, (gno, gno))
            elif gno >= s:
                return self
            else:
                new = _insert_gno(ivs, gno)
                if new is ivs:
                    return self
        copy = mapping.copy()
        copy[key] = new
        return MySQLGtidSet._from_map(copy)

    def union(self, other: MySQLGtidSet) -> MySQLGtidSet:
        """All GTIDs in ``self`` or ``other``."""
        if not isinstance(other, MySQLGtidSet):
            raise _flavour_mismatch("union", self, other)
        if not other._map:
            return self
        if not self._map:
            return other
        result = self._map.copy()
        for key, ivs in other._map.items():
            mine = result.get(key)
            result[key] = ivs if mine is None else _merge(mine, ivs)
        return MySQLGtidSet._from_map(result)

    def __or__(self, other: MySQLGtidSet) -> MySQLGtidSet:
        if not isinstance(other, MySQLGtidSet):
            return NotImplemented
        return self.union(other)

    def difference(self, other: MySQLGtidSet) -> MySQLGtidSet:
        """The GTIDs of ``self`` that are not in ``other`` (MySQL's ``GTID_SUBTRACT``)."""
        if not isinstance(other, MySQLGtidSet):
            raise _flavour_mismatch("difference", self, other)
        result: dict[_Key, Intervals] = {}
        for key, ivs in self._map.items():
            theirs = other._map.get(key)
            left = ivs if theirs is None else _subtract(ivs, theirs)
            if left:
                result[key] = left
        return MySQLGtidSet._from_map(result)

    def __sub__(self, other: MySQLGtidSet) -> MySQLGtidSet:
        if not isinstance(other, MySQLGtidSet):
            return NotImplemented
        return self.difference(other)

    def contains(self, other: MySQLGtidSet) -> bool:
        """Superset test: every GTID of ``other`` is in ``self``."""
        if not isinstance(other, MySQLGtidSet):
            raise _flavour_mismatch("contains", self, other)
        mine = self._map
        for key, ivs in other._map.items():
            have = mine.get(key)
            if have is None or not _intervals_contain(have, ivs):
                return False
        return True

    # ---- binary encoding -----------------------------------------------------------------------------

    def encode(self, *, tagged: bool | None = None) -> bytes:
        """Encode as in PREVIOUS_GTIDS_LOG_EVENT / COM_BINLOG_DUMP_GTID.

        ``tagged=None`` picks MySQL's rule: the tagged format (8.3+) when any tag is present, else classic.
        ``tagged=True`` forces the tagged format; ``tagged=False`` forces classic and raises
        :class:`GtidSetError` if the set has tags (the classic format cannot carry them).
        """
        keys = sorted(self._map)
        has_tags = any(tag for _, tag in keys)
        if tagged is None:
            tagged = has_tags
        elif not tagged and has_tags:
            raise GtidSetError(
                f"the set {str(self)!r} has tagged GTIDs, which the classic (untagged) binary format cannot "
                f"carry: encode with tagged=True (servers before MySQL 8.3 do not understand tags)"
            )
        n = len(keys)
        if tagged:
            out = [_U64.pack((1 << 56) | (n << 8) | 1)]
        else:
            out = [_U64.pack(n)]
        pack_interval = _INTERVAL.pack
        for key in keys:
            sid, tag = key
            out.append(_uuid_to_bytes(sid))
            if tagged:
                out.append(bytes((len(tag) << 1,)))
                out.append(tag.encode("ascii"))
            ivs = self._map[key]
            out.append(_U64.pack(len(ivs)))
            out.extend(pack_interval(s, e + 1) for s, e in ivs)
        return b"".join(out)

    @staticmethod
    def decode_header(data: bytes | bytearray | memoryview) -> tuple[str, int]:
        """Read the first 8 bytes of an encoded set.

        Returns ``('classic' | 'tagged', number of (uuid, tag) entries)``.
        """
        if len(data) < 8:
            raise GtidSetError(
                f"binary GTID set too short: {len(data)} bytes, the header alone is 8 bytes "
                f"(is this really a PREVIOUS_GTIDS body or COM_BINLOG_DUMP_GTID data?)"
            )
        (word,) = _U64.unpack_from(data, 0)
        fmt = word >> 56
        if fmt == 0:
            return "classic", word & ((1 << 56) - 1)
        if fmt == 1:
            return "tagged", (word >> 8) & ((1 << 48) - 1)
        raise GtidSetError(
            f"binary GTID set has unknown format byte {fmt:#04x} in its header {bytes(data[:8]).hex()!r}: "
            f"0x00 is classic and 0x01 tagged; the data is corrupt or not a GTID set"
        )

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview) -> MySQLGtidSet:
        """Decode the binary format (classic or tagged, detected from the header).

        Strict like MySQL's own decoder: the input must be exactly one encoded set (no trailing bytes);
        within an entry intervals must be ascending, non-empty and non-adjacent; an entry must have at least
        one interval. Repeated (uuid, tag) entries are merged. Every malformation raises
        :class:`GtidSetError`.
        """
        buf = bytes(data)
        size = len(buf)
        fmt, n_entries = cls.decode_header(buf)
        is_tagged = fmt == "tagged"
        pos = 8
        collected: dict[_Key, list[Interval]] = {}
        for index in range(n_entries):
            if size - pos < 16 + 8 + (1 if is_tagged else 0):
                _truncated(buf, pos, f"entry {index + 1} of {n_entries}")
            sid = _uuid_from_bytes(buf[pos : pos + 16])
            pos += 16
            tag = ""
            if is_tagged:
                length, pos = _read_varint(buf, pos, index, n_entries)
                if length > _MAX_TAG_LEN:
                    raise GtidSetError(
                        f"binary GTID set: entry {index + 1} has a tag of {length} bytes at offset {pos}, "
                        f"longer than the {_MAX_TAG_LEN} MySQL allows; the data is corrupt"
                    )
                if size - pos < length:
                    _truncated(buf, pos, f"the tag of entry {index + 1}")
                raw_tag = buf[pos : pos + length]
                pos += length
                if length:
                    tag = raw_tag.decode("ascii", errors="replace").lower()
                    if not _TAG_RE.fullmatch(tag):
                        raise GtidSetError(
                            f"binary GTID set: entry {index + 1} has an invalid tag {raw_tag!r}: tags are "
                            f"letters, digits and '_', starting with a letter or '_'"
                        )
            if size - pos < 8:
                _truncated(buf, pos, f"the interval count of entry {index + 1}")
            (n_intervals,) = _U64.unpack_from(buf, pos)
            pos += 8
            if n_intervals == 0:
                raise GtidSetError(
                    f"binary GTID set: entry {index + 1} ({sid}{':' + tag if tag else ''}) has zero "
                    f"intervals; MySQL never writes such an entry, the data is corrupt"
                )
            if (size - pos) // 16 < n_intervals:
                _truncated(buf, pos, f"the {n_intervals} intervals of entry {index + 1}")
            bucket = collected.setdefault((sid, tag), [])
            last = 0
            for start, end in _INTERVAL.iter_unpack(buf[pos : pos + 16 * n_intervals]):
                if start <= last or end <= start or end > MAX_GNO + 1:
                    raise GtidSetError(
                        f"binary GTID set: entry {index + 1} ({sid}{':' + tag if tag else ''}) has an "
                        f"invalid interval [start {start}, end {end}) at offset {pos}: intervals must be "
                        f"ascending, non-adjacent, with 1 <= start < end <= {MAX_GNO + 1} (end is exclusive)"
                    )
                bucket.append((start, end - 1))
                last = end
                pos += 16
        if pos != size:
            raise GtidSetError(
                f"binary GTID set: {size - pos} unexpected bytes after the {n_entries} entries (at offset "
                f"{pos} of {size}); pass exactly the PREVIOUS_GTIDS body, without event header or checksum"
            )
        return cls._from_map({key: _normalize(ivs) for key, ivs in collected.items()})


def _truncated(buf: bytes, pos: int, what: str) -> NoReturn:
    raise GtidSetError(
        f"binary GTID set is truncated: {len(buf)} bytes end at offset {pos} inside {what}; "
        f"the data is cut short or corrupt"
    )


def _read_varint(buf: bytes, pos: int, index: int, n_entries: int) -> tuple[int, int]:
    """mysql::serialization variable-length unsigned integer: the number of trailing 1 bits of the first byte
    is the number of extra bytes; the value is the little-endian number shifted right by the byte count."""
    if pos >= len(buf):
        _truncated(buf, pos, f"the tag length of entry {index + 1} of {n_entries}")
    first = buf[pos]
    extra = 0
    while extra < 8 and first & (1 << extra):
        extra += 1
    total = extra + 1
    if len(buf) - pos < total:
        _truncated(buf, pos, f"the tag length of entry {index + 1} of {n_entries}")
    if extra == 8:
        value = int.from_bytes(buf[pos + 1 : pos + 9], "little")
    else:
        value = int.from_bytes(buf[pos : pos + total], "little") >> total
    return value, pos + total


# ----------------------------------------------------------------------------------------------------
# MariaDB GTID positions


class MariaDBGtidSet(_Immutable):
    """An immutable MariaDB GTID position: at most one GTID per replication domain.

    Like ``gtid_slave_pos`` / ``gtid_binlog_pos``: a domain's GTID means "everything in that domain up to
    and including this ``seq_no`` is executed". ``MariaDBGtidSet()`` is the empty position.
    """

    __slots__ = ("_hash", "_map")
    flavor: ClassVar[str] = "mariadb"
    _map: dict[int, MariaDBGtid]
    _hash: int | None

    def __init__(self) -> None:
        _set_attr(self, "_map", {})
        _set_attr(self, "_hash", None)

    @classmethod
    def _from_map(cls, mapping: dict[int, MariaDBGtid]) -> MariaDBGtidSet:
        obj = object.__new__(cls)
        _set_attr(obj, "_map", mapping)
        _set_attr(obj, "_hash", None)
        return obj

    @classmethod
    def parse(cls, text: str) -> MariaDBGtidSet:
        """Parse ``'0-1-100,1-2-5'`` (whitespace around elements ignored; ``''`` = empty). Two GTIDs for the
        same domain are an error, as in MariaDB."""
        mapping: dict[int, MariaDBGtid] = {}
        for element in text.split(","):
            if not element.strip():
                continue
            match = _MARIADB_GTID_RE.fullmatch(element.strip())
            if match is None or not match.group(0).isascii():
                raise GtidSetError(
                    f"invalid MariaDB GTID {element.strip()!r} in {text!r}; {_MARIADB_SET_EXAMPLE}"
                )
            gtid = MariaDBGtid(int(match.group(1)), int(match.group(2)), int(match.group(3)))
            if gtid.domain_id in mapping:
                raise GtidSetError(
                    f"{text!r} has two GTIDs for domain {gtid.domain_id} ({mapping[gtid.domain_id]} and "
                    f"{gtid}): a MariaDB GTID position holds one GTID per domain; keep the later one"
                )
            mapping[gtid.domain_id] = gtid
        return cls._from_map(mapping)

    @classmethod
    def from_gtids(cls, gtids: Iterable[MariaDBGtid]) -> MariaDBGtidSet:
        """Build a position from GTIDs; two for the same domain raise :class:`GtidSetError`."""
        mapping: dict[int, MariaDBGtid] = {}
        for gtid in gtids:
            if gtid.domain_id in mapping:
                raise GtidSetError(
                    f"two GTIDs for domain {gtid.domain_id} ({mapping[gtid.domain_id]} and {gtid}): a "
                    f"MariaDB GTID position holds one GTID per domain"
                )
            mapping[gtid.domain_id] = gtid
        return cls._from_map(mapping)

    def __str__(self) -> str:
        """Domains ascending, comma-separated, as MariaDB prints ``gtid_binlog_pos``."""
        return ",".join(str(self._map[d]) for d in sorted(self._map))

    def __repr__(self) -> str:
        return f"MariaDBGtidSet.parse({str(self)!r})"

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (MariaDBGtidSet.parse, (str(self),))

    def domains(self) -> Mapping[int, MariaDBGtid]:
        """Read-only mapping ``domain_id -> GTID``, domains ascending."""
        return MappingProxyType({d: self._map[d] for d in sorted(self._map)})

    def get(self, domain_id: int) -> MariaDBGtid | None:
        """The GTID of ``domain_id``, or None."""
        return self._map.get(domain_id)

    def __iter__(self) -> Iterator[MariaDBGtid]:
        """The GTIDs, domains ascending."""
        return iter([self._map[d] for d in sorted(self._map)])

    def __bool__(self) -> bool:
        return bool(self._map)

    def __len__(self) -> int:
        """Number of domains."""
        return len(self._map)

    def __contains__(self, gtid: object) -> bool:
        """True when ``gtid``'s domain is here with ``seq_no >= gtid.seq_no`` (executed)."""
        if not isinstance(gtid, MariaDBGtid):
            return False
        mine = self._map.get(gtid.domain_id)
        return mine is not None and mine.seq_no >= gtid.seq_no

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MariaDBGtidSet):
            return self._map == other._map
        return NotImplemented

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = hash(frozenset(self._map.values()))
            _set_attr(self, "_hash", h)
        return h

    def add(self, gtid: MariaDBGtid) -> MariaDBGtidSet:
        """A new position where ``gtid`` replaces its domain's GTID (the binlog moved on in that domain)."""
        if self._map.get(gtid.domain_id) == gtid:
            return self
        copy = self._map.copy()
        copy[gtid.domain_id] = gtid
        return MariaDBGtidSet._from_map(copy)

    def union(self, other: MariaDBGtidSet) -> MariaDBGtidSet:
        """Per domain, the later position (higher ``seq_no``; on a tie the higher ``server_id``, so that the
        result does not depend on the argument order)."""
        if not isinstance(other, MariaDBGtidSet):
            raise _flavour_mismatch("union", self, other)
        if not other._map:
            return self
        if not self._map:
            return other
        result = self._map.copy()
        for domain, gtid in other._map.items():
            mine = result.get(domain)
            if mine is None or (gtid.seq_no, gtid.server_id) > (mine.seq_no, mine.server_id):
                result[domain] = gtid
        return MariaDBGtidSet._from_map(result)

    def __or__(self, other: MariaDBGtidSet) -> MariaDBGtidSet:
        if not isinstance(other, MariaDBGtidSet):
            return NotImplemented
        return self.union(other)

    def contains(self, other: MariaDBGtidSet) -> bool:
        """Every domain of ``other`` is here with a ``seq_no`` at least as high."""
        if not isinstance(other, MariaDBGtidSet):
            raise _flavour_mismatch("contains", self, other)
        mine = self._map
        for domain, gtid in other._map.items():
            have = mine.get(domain)
            if have is None or have.seq_no < gtid.seq_no:
                return False
        return True

    def encode(self, *, flags: int = 0) -> bytes:
        """The GTID_LIST_EVENT body: count word (``flags`` in the high 4 bits, unshifted as
        :data:`GTID_LIST_FLAG_UNTIL_REACHED`), then ``(domain u32, server u32, seq u64)`` per domain."""
        if flags & ~_GTID_LIST_FLAGS_MASK:
            raise GtidSetError(
                f"GTID_LIST flags {flags:#x} use bits below bit 28; flags live in the high 4 bits "
                f"(use GTID_LIST_FLAG_UNTIL_REACHED / GTID_LIST_FLAG_IGN_GTIDS)"
            )
        gtids = [self._map[d] for d in sorted(self._map)]
        out = [_U32.pack(len(gtids) | flags)]
        pack = _MARIADB_ENTRY.pack
        out.extend(pack(g.domain_id, g.server_id, g.seq_no) for g in gtids)
        return b"".join(out)

    @classmethod
    def decode_gtid_list(cls, data: bytes | bytearray | memoryview) -> tuple[MariaDBGtidSet, int]:
        """Decode a GTID_LIST_EVENT body: ``(position, flags)`` with the flags unshifted (compare with
        :data:`GTID_LIST_FLAG_UNTIL_REACHED` etc.).

        A GTID_LIST written by the server is the binlog *state*, which may hold several GTIDs for one domain
        (one per server that wrote in it); MariaDB writes the domain's most recent GTID last, so the LAST
        entry of a domain wins - that is the ``gtid_binlog_pos`` view.

        ``data`` is the event body without the 19-byte header. Bytes after the listed GTIDs are ignored, as
        MariaDB's own reader does: MariaDB 10.5-11.8 write an EMPTY list with 2 padding bytes (body
        ``00000000 0000``), and a trailing checksum, if left on, is harmless. Too few bytes for the count
        raise :class:`GtidSetError`.
        """
        buf = bytes(data)
        if len(buf) < 4:
            raise GtidSetError(
                f"MariaDB GTID_LIST body too short: {len(buf)} bytes, the count alone is 4 bytes"
            )
        (word,) = _U32.unpack_from(buf, 0)
        count = word & _GTID_LIST_COUNT_MASK
        flags = word & _GTID_LIST_FLAGS_MASK
        needed = 4 + 16 * count
        if len(buf) < needed:
            raise GtidSetError(
                f"MariaDB GTID_LIST body is truncated: {len(buf)} bytes for a count of {count} GTIDs "
                f"({needed} bytes needed); the event is cut short or corrupt"
            )
        mapping: dict[int, MariaDBGtid] = {}
        for domain, server, seq in _MARIADB_ENTRY.iter_unpack(buf[4:needed]):
            mapping[domain] = MariaDBGtid(domain, server, seq)
        return cls._from_map(mapping), flags

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview) -> MariaDBGtidSet:
        """Decode a GTID_LIST_EVENT body, ignoring its flags (see :meth:`decode_gtid_list`)."""
        return cls.decode_gtid_list(data)[0]


# ----------------------------------------------------------------------------------------------------
# flavour-neutral helpers

GtidSet: TypeAlias = MySQLGtidSet | MariaDBGtidSet
Gtid: TypeAlias = MySQLGtid | MariaDBGtid


def _flavour_mismatch(op: str, a: object, b: object) -> GtidSetError:
    return GtidSetError(
        f"cannot {op} a {type(a).__name__} with a {type(b).__name__}: MySQL and MariaDB GTIDs do not mix; "
        f"parse both sets with the flavour of the server they come from"
    )


def parse_gtid_set(text: str, flavor: str | None = None) -> GtidSet:
    """Parse a GTID set of either flavour.

    ``flavor`` is ``'mysql'``, ``'mariadb'`` or None to detect it: text with ``':'`` is MySQL, a list of
    ``domain-server-seq`` is MariaDB. An empty text has no flavour to detect, so it needs ``flavor``.
    """
    if flavor is not None:
        name = flavor.strip().lower()
        if name == "mysql":
            return MySQLGtidSet.parse(text)
        if name == "mariadb":
            return MariaDBGtidSet.parse(text)
        raise GtidSetError(
            f"unknown GTID flavour {flavor!r}: use 'mysql' or 'mariadb' (or None to detect it)"
        )
    stripped = text.strip().strip(",").strip()
    if not stripped:
        raise GtidSetError(
            f"cannot tell the flavour of the empty GTID set {text!r}: pass flavor='mysql' or flavor='mariadb'"
        )
    if ":" in stripped:
        return MySQLGtidSet.parse(text)
    if all(_MARIADB_GTID_RE.fullmatch(part.strip()) for part in stripped.split(",") if part.strip()):
        return MariaDBGtidSet.parse(text)
    raise GtidSetError(
        f"{text!r} is neither a MySQL GTID set nor a MariaDB GTID position: {_MYSQL_SET_EXAMPLE}; "
        f"{_MARIADB_SET_EXAMPLE}"
    )


def _same_flavour(op: str, position: GtidSet, requested: GtidSet) -> None:
    if type(position) is not type(requested):
        raise _flavour_mismatch(op, position, requested)


def is_new(position: GtidSet, requested: GtidSet) -> bool:
    """ClickHouse's attach rule (``BinlogParser::isNew`` used by ``BinlogEventsDispatcher::attach``).

    A consumer whose executed set is ``requested`` may join a running dispatcher at ``position`` when:

    1. ``position`` does NOT already contain ``requested`` (otherwise the consumer is behind the dispatcher
       and ClickHouse starts a catch-up dispatcher for it), and
    2. every server UUID of ``requested`` also appears in ``position`` (no unknown source).

    ClickHouse then lets the consumer skip events until the dispatcher's position contains ``requested``.
    An empty ``requested`` is never new. Tags are ignored for rule 2 (only UUIDs are compared, as in
    ClickHouse, which predates tags). For MariaDB the analogue is per domain: ``position`` does not contain
    ``requested`` and every domain of ``requested`` is known to ``position``.

    This rule is NOT loss-free (e.g. ``position = u:1-10``, ``requested = u:1-5:8-20`` attaches although
    the dispatcher already passed 6-7); use :func:`can_attach` to decide, and this only for comparison with
    ClickHouse. See ``docs/gtid.md``.
    """
    _same_flavour("compare", position, requested)
    if not requested or position.contains(requested):  # type: ignore[arg-type]
        return False
    if isinstance(position, MySQLGtidSet):
        assert isinstance(requested, MySQLGtidSet)
        known = {sid for sid, _ in position._map}
        return all(sid in known for sid, _ in requested._map)
    assert isinstance(requested, MariaDBGtidSet)
    return all(domain in position._map for domain in requested._map)


def can_attach(position: GtidSet, requested: GtidSet) -> bool:
    """The loss-free attach rule: True when every transaction the dispatcher has already passed
    (``position``) is executed by the consumer (``requested``), i.e. ``requested.contains(position)``.

    The attached consumer must then skip each transaction whose GTID is in ``requested`` (per transaction,
    not "until the position contains requested"), so it receives exactly what it has not executed. For
    MariaDB: every domain of ``position`` is in ``requested`` at the same or a later ``seq_no``.
    """
    _same_flavour("compare", position, requested)
    return requested.contains(position)  # type: ignore[arg-type]
