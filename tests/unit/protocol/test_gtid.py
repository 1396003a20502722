"""GTIDs and GTID sets: examples, error cases, and property-based tests against brute-force models."""

from __future__ import annotations

import contextlib
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mybinlog.errors import GtidSetError
from mybinlog.protocol._gtid import (
    GTID_LIST_FLAG_IGN_GTIDS,
    GTID_LIST_FLAG_UNTIL_REACHED,
    MAX_GNO,
    MariaDBGtid,
    MariaDBGtidSet,
    MySQLGtid,
    MySQLGtidSet,
    can_attach,
    is_new,
    parse_gtid_set,
)

U1 = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
U2 = "4c2d1a3e-71ca-11e1-9e33-c80aa9429562"
U3 = "00000000-0000-0000-0000-000000000001"


# ------------------------------------------------------------------------------------------------------------
# single GTIDs


def test_mysql_gtid_parse_and_format() -> None:
    g = MySQLGtid.parse(f" {U1.upper()}:23 ")
    assert g == MySQLGtid(U1, 23)
    assert (g.sid, g.gno, g.tag) == (U1, 23, "")
    assert str(g) == f"{U1}:23"


def test_mysql_gtid_tagged_is_lowercased() -> None:
    g = MySQLGtid.parse(f"{U1}:My_Tag:7")
    assert g.tag == "my_tag"
    assert str(g) == f"{U1}:my_tag:7"
    assert MySQLGtid(U1, 7, "MY_TAG") == g


def test_mysql_gtid_accepts_uuid_without_dashes() -> None:
    assert MySQLGtid(U1.replace("-", "").upper(), 1).sid == U1


@pytest.mark.parametrize(
    "text",
    [
        "",
        U1,
        f"{U1}:0",
        f"{U1}:-1",
        f"{U1}:x1",
        f"{U1}:1-2",
        f"{U1}:{MAX_GNO + 1}",
        "not-a-uuid:1",
        f"{U1}:9tag:1",
        f"{U1}:{'a' * 33}:1",
        f"{U1}:a:b:1",
    ],
)
def test_mysql_gtid_parse_errors(text: str) -> None:
    with pytest.raises(GtidSetError):
        MySQLGtid.parse(text)


def test_mysql_gtid_constructor_validates() -> None:
    with pytest.raises(GtidSetError, match="out of range"):
        MySQLGtid(U1, 0)
    with pytest.raises(GtidSetError, match="not a server UUID"):
        MySQLGtid("abc", 1)
    with pytest.raises(GtidSetError, match="invalid GTID tag"):
        MySQLGtid(U1, 1, "1abc")
    assert MySQLGtid(U1, MAX_GNO).gno == MAX_GNO


def test_mariadb_gtid_parse_and_format() -> None:
    g = MariaDBGtid.parse(" 0-1-100 ")
    assert g == MariaDBGtid(0, 1, 100)
    assert str(g) == "0-1-100"
    assert MariaDBGtid.parse("70975786-0-578437695752307201").seq_no == 578437695752307201


@pytest.mark.parametrize(
    "text", ["", "0-1", "0-1-2-3", "a-1-2", "-1-1-2", "0-1-1.5", f"{2**32}-1-1", f"0-1-{2**64}"]
)
def test_mariadb_gtid_parse_errors(text: str) -> None:
    with pytest.raises(GtidSetError):
        MariaDBGtid.parse(text)


def test_gtids_are_immutable_and_hashable() -> None:
    g = MySQLGtid(U1, 1)
    with pytest.raises(AttributeError):
        g.gno = 2  # type: ignore[misc]
    assert len({g, MySQLGtid(U1, 1), MariaDBGtid(0, 1, 1), MariaDBGtid(0, 1, 1)}) == 2


# ------------------------------------------------------------------------------------------------------------
# MySQL sets: examples


def test_parse_gtid_executed_as_mysql_prints_it() -> None:
    printed = f"{U2}:1-3,\n{U1}:1-5:7:9-12"
    s = MySQLGtidSet.parse(printed)
    assert str(s) == f"{U1}:1-5:7:9-12,{U2}:1-3"
    assert s.sids() == (U1, U2)
    assert s.intervals(U1) == ((1, 5), (7, 7), (9, 12))
    assert s.intervals(U2.upper()) == ((1, 3),)
    assert s.intervals(U3) == ()
    assert len(s) == 5 + 1 + 4 + 3


def test_parse_tolerates_whitespace_everywhere() -> None:
    s = MySQLGtidSet.parse(f"  {U1} : 1 - 5 : 7 ,\n\t{U2}:TAG_A: 2 \n")
    assert str(s) == f"{U1}:1-5:7,{U2}:tag_a:2"


def test_adjacent_and_overlapping_intervals_merge() -> None:
    assert str(MySQLGtidSet.parse(f"{U1}:1-3:4-5")) == f"{U1}:1-5"
    assert str(MySQLGtidSet.parse(f"{U1}:7:1-3:2-6")) == f"{U1}:1-7"
    assert str(MySQLGtidSet.parse(f"{U1}:1-3,{U1}:4")) == f"{U1}:1-4"


def test_tagged_set_canonical_order() -> None:
    s = MySQLGtidSet.parse(f"{U1}:1-5:tag_a:1-3:7")
    assert str(s) == f"{U1}:1-5:tag_a:1-3:7"
    assert s.keys() == ((U1, ""), (U1, "tag_a"))
    assert s.intervals(U1, "tag_a") == ((1, 3), (7, 7))
    # tags sorted, untagged first, even when written in another order
    s2 = MySQLGtidSet.parse(f"{U2}:zz:1,{U1}:b:4:a:2,{U1}:1-9")
    assert str(s2) == f"{U1}:1-9:a:2:b:4,{U2}:zz:1"
    assert MySQLGtid(U1, 2, "a") in s2
    assert MySQLGtid(U1, 2) in s2
    assert MySQLGtid(U1, 4, "a") not in s2
    assert MySQLGtid(U1, 4, "b") in s2


def test_tag_starts_new_group_after_intervals_of_the_same_uuid() -> None:
    s = MySQLGtidSet.parse(f"{U1}:a:1:b:2:a:3")
    assert s.intervals(U1, "a") == ((1, 1), (3, 3))
    assert s.intervals(U1, "b") == ((2, 2),)
    assert s.intervals(U1) == ()


def test_empty_set() -> None:
    empty = MySQLGtidSet.parse("")
    assert empty == MySQLGtidSet()
    assert MySQLGtidSet.parse(" \n ,") == empty
    assert not empty
    assert len(empty) == 0
    assert str(empty) == ""
    assert empty.encode() == bytes(8)
    assert MySQLGtidSet.decode(bytes(8)) == empty
    assert MySQLGtid(U1, 1) not in empty


@pytest.mark.parametrize(
    "text",
    [
        U1,
        f"{U1}:",
        f"{U1}::1",
        f"{U1}:0",
        f"{U1}:5-3",
        f"{U1}:1-{MAX_GNO + 1}",
        f"{U1}:1-",
        f"{U1}:-3",
        f"{U1}:+3",
        f"{U1}:1-2-3",
        f"{U1}:tag",
        f"{U1}:tag:1:other",
        f"{U1}:a:b:1",
        f"{U1}:{'t' * 33}:1",
        f"{U1}:t-g:1",
        "3e11fa47-71ca-11e1-9e33-c80aa942956:1",
        "0-1-100",
        f"{U1}:1 2",
        f"{U1}:\u0661",  # Arabic-Indic digit one: not ASCII
    ],
)
def test_mysql_set_parse_errors(text: str) -> None:
    with pytest.raises(GtidSetError) as info:
        MySQLGtidSet.parse(text)
    assert (
        repr(text) in str(info.value) or repr(text.strip()) in str(info.value) or text[:8] in str(info.value)
    )


def test_error_message_names_input_and_valid_form() -> None:
    with pytest.raises(GtidSetError) as info:
        MySQLGtidSet.parse(f"{U1}:1-x")
    message = str(info.value)
    assert f"{U1}:1-x" in message
    assert "valid MySQL GTID set looks like" in message
    assert isinstance(info.value, ValueError)


def test_contains_union_examples() -> None:
    a = MySQLGtidSet.parse(f"{U1}:1-10,{U2}:1-3")
    b = MySQLGtidSet.parse(f"{U1}:3-5:9")
    assert a.contains(b)
    assert not b.contains(a)
    assert a.contains(MySQLGtidSet())
    assert not a.contains(MySQLGtidSet.parse(f"{U1}:10-11"))
    assert not a.contains(MySQLGtidSet.parse(f"{U1}:tag:1"))
    assert str(b | MySQLGtidSet.parse(f"{U1}:6-8,{U3}:4")) == f"{U3}:4,{U1}:3-9"
    assert a | MySQLGtidSet() is a
    assert MySQLGtidSet() | a is a


def test_add_examples() -> None:
    s = MySQLGtidSet()
    s = s.add(MySQLGtid(U1, 1)).add(MySQLGtid(U1, 2)).add(MySQLGtid(U1, 5))
    assert str(s) == f"{U1}:1-2:5"
    s2 = s.add(MySQLGtid(U1, 4))
    assert str(s2) == f"{U1}:1-2:4-5"
    assert str(s2.add(MySQLGtid(U1, 3))) == f"{U1}:1-5"
    assert str(s.add(MySQLGtid(U1, 7, "t"))) == f"{U1}:1-2:5:t:7"
    assert s.add(MySQLGtid(U1, 2)) is s
    assert s.add(MySQLGtid(U1, 5)) is s
    assert str(s) == f"{U1}:1-2:5"  # unchanged: sets are immutable


def test_sets_are_immutable_hashable_and_picklable() -> None:
    s = MySQLGtidSet.parse(f"{U1}:1-5:t:1")
    with pytest.raises(AttributeError):
        s._map = {}
    with pytest.raises(AttributeError):
        s.anything = 1
    same = MySQLGtidSet.parse(f"{U1}:t:1,{U1}:1-3:4-5")
    assert s == same
    assert hash(s) == hash(same)
    assert len({s, same}) == 1
    assert pickle.loads(pickle.dumps(s)) == s
    assert eval(repr(s)) == s
    m = MariaDBGtidSet.parse("0-1-5,2-1-3")
    assert pickle.loads(pickle.dumps(m)) == m
    assert hash(m) == hash(MariaDBGtidSet.parse("2-1-3,0-1-5"))
    with pytest.raises(AttributeError):
        m._map = {}
    assert s != m
    assert s != str(s)


def test_iteration_yields_every_gtid() -> None:
    s = MySQLGtidSet.parse(f"{U2}:2-3,{U1}:t:1")
    assert list(s) == [MySQLGtid(U1, 1, "t"), MySQLGtid(U2, 2), MySQLGtid(U2, 3)]


def test_from_intervals() -> None:
    s = MySQLGtidSet.from_intervals({(U1.upper(), ""): [(4, 5), (1, 3)], (U1, "T"): [(2, 2)], (U2, ""): []})
    assert str(s) == f"{U1}:1-5:t:2"
    with pytest.raises(GtidSetError):
        MySQLGtidSet.from_intervals({(U1, ""): [(3, 2)]})
    with pytest.raises(GtidSetError):
        MySQLGtidSet.from_intervals({(U1, ""): [(0, 2)]})


def test_encode_classic_layout() -> None:
    s = MySQLGtidSet.parse(f"{U1}:1-5:7")
    data = s.encode()
    assert MySQLGtidSet.decode_header(data) == ("classic", 1)
    expected = (
        (1).to_bytes(8, "little")
        + bytes.fromhex(U1.replace("-", ""))
        + (2).to_bytes(8, "little")
        + (1).to_bytes(8, "little")
        + (6).to_bytes(8, "little")
        + (7).to_bytes(8, "little")
        + (8).to_bytes(8, "little")
    )
    assert data == expected


def test_encode_tagged_layout() -> None:
    s = MySQLGtidSet.parse(f"{U1}:1-2:ab:3")
    data = s.encode()
    assert data[:8] == bytes.fromhex("0102000000000001")
    assert MySQLGtidSet.decode_header(data) == ("tagged", 2)
    uuid = bytes.fromhex(U1.replace("-", ""))
    entry1 = (
        uuid + b"\x00" + (1).to_bytes(8, "little") + (1).to_bytes(8, "little") + (3).to_bytes(8, "little")
    )
    entry2 = (
        uuid + b"\x04ab" + (1).to_bytes(8, "little") + (3).to_bytes(8, "little") + (4).to_bytes(8, "little")
    )
    assert data[8:] == entry1 + entry2
    assert MySQLGtidSet.decode(memoryview(data)) == s


def test_encode_format_choice() -> None:
    plain = MySQLGtidSet.parse(f"{U1}:1")
    forced = plain.encode(tagged=True)
    assert MySQLGtidSet.decode_header(forced) == ("tagged", 1)
    assert MySQLGtidSet.decode(forced) == plain
    with pytest.raises(GtidSetError, match="tagged=True"):
        MySQLGtidSet.parse(f"{U1}:t:1").encode(tagged=False)


def test_max_gno_roundtrip() -> None:
    s = MySQLGtidSet.parse(f"{U1}:{MAX_GNO - 1}-{MAX_GNO}")
    assert MySQLGtidSet.decode(s.encode()) == s
    assert MySQLGtid(U1, MAX_GNO) in s
    assert len(s) == 2


def _classic(*entries: tuple[str, list[tuple[int, int]]], count: int | None = None) -> bytes:
    out = (len(entries) if count is None else count).to_bytes(8, "little")
    for sid, intervals in entries:
        out += bytes.fromhex(sid.replace("-", "")) + len(intervals).to_bytes(8, "little")
        for start, end in intervals:
            out += start.to_bytes(8, "little") + end.to_bytes(8, "little")
    return out


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "too short"),
        (bytes(7), "too short"),
        (bytes.fromhex("0000000000000002"), "unknown format byte"),
        (_classic(count=1), "truncated"),
        (_classic((U1, [(1, 5)]))[:-1], "truncated"),
        (_classic((U1, [(1, 5)])) + b"\x00", "unexpected bytes"),
        (_classic((U1, [])), "zero intervals"),
        (_classic((U1, [(0, 5)])), "invalid interval"),
        (_classic((U1, [(5, 5)])), "invalid interval"),
        (_classic((U1, [(1, 5), (5, 7)])), "invalid interval"),  # adjacent: MySQL rejects too
        (_classic((U1, [(4, 6), (1, 2)])), "invalid interval"),  # descending
        (_classic((U1, [(1, 1 << 63)])), "invalid interval"),  # end beyond int64
        (_classic((U1, [(1, 2)]), count=1 << 40), "truncated"),
        (bytes.fromhex("0101000000000001") + bytes(16) + b"\x02\x41", "invalid tag|truncated"),
        (
            bytes.fromhex("0101000000000001") + bytes(16) + b"\x02-" + _classic((U1, [(1, 2)]))[24:],
            "invalid tag",
        ),
        (bytes.fromhex("0101000000000001") + bytes(16) + b"\xff" + bytes(3), "truncated"),
    ],
)
def test_decode_errors(data: bytes, message: str) -> None:
    with pytest.raises(GtidSetError, match=message):
        MySQLGtidSet.decode(data)


def test_decode_merges_repeated_entries() -> None:
    data = _classic((U1, [(5, 7)]), (U1, [(1, 3), (7, 9)]))
    assert str(MySQLGtidSet.decode(data)) == f"{U1}:1-2:5-8"


def test_decode_multi_byte_tag_length_varint() -> None:
    # length 2 written with a 2-byte varint (first byte ends in binary 01): (2 << 2) | 0b01 = 0x09, 0x00
    body = bytes.fromhex("0101000000000001") + bytes.fromhex(U1.replace("-", "")) + b"\x09\x00ab"
    body += (1).to_bytes(8, "little") + (1).to_bytes(8, "little") + (2).to_bytes(8, "little")
    assert str(MySQLGtidSet.decode(body)) == f"{U1}:ab:1"


@given(st.binary(max_size=120))
@settings(max_examples=300, deadline=None)
def test_decode_never_crashes_on_garbage(data: bytes) -> None:
    with contextlib.suppress(GtidSetError):
        MySQLGtidSet.decode(data)


@given(st.binary(max_size=60))
@settings(max_examples=200, deadline=None)
def test_mariadb_decode_never_crashes_on_garbage(data: bytes) -> None:
    with contextlib.suppress(GtidSetError):
        MariaDBGtidSet.decode_gtid_list(data)


# ------------------------------------------------------------------------------------------------------------
# MySQL sets: properties against a brute-force model (a Python set of (uuid, tag, gno))

UUIDS = [U1, U2, U3]
TAGS = ["", "a", "tag_b"]
Model = frozenset[tuple[str, str, int]]

models = st.frozensets(
    st.tuples(st.sampled_from(UUIDS), st.sampled_from(TAGS), st.integers(1, 24)),
    max_size=30,
)


def build(model: Model) -> MySQLGtidSet:
    mapping: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for sid, tag, gno in model:
        mapping.setdefault((sid, tag), []).append((gno, gno))
    return MySQLGtidSet.from_intervals(mapping)


big_sets = st.lists(
    st.tuples(
        st.sampled_from(UUIDS),
        st.sampled_from(TAGS),
        st.integers(1, MAX_GNO),
        st.integers(0, 1000),
    ),
    max_size=8,
).map(
    lambda rows: MySQLGtidSet.from_intervals(
        {(sid, tag): [(start, min(start + width, MAX_GNO))] for sid, tag, start, width in rows}
    )
)
any_sets = st.one_of(models.map(build), big_sets)


@given(models)
def test_model_agrees(model: Model) -> None:
    s = build(model)
    assert len(s) == len(model)
    assert bool(s) == bool(model)
    assert set(s) == {MySQLGtid(sid, gno, tag) for sid, tag, gno in model}
    for sid in UUIDS:
        for tag in TAGS:
            for gno in range(1, 26):
                assert (MySQLGtid(sid, gno, tag) in s) == ((sid, tag, gno) in model)


@given(any_sets)
def test_text_roundtrip(s: MySQLGtidSet) -> None:
    text = str(s)
    assert MySQLGtidSet.parse(text) == s
    assert str(MySQLGtidSet.parse(text.replace(",", ",\n").replace(":", " : "))) == text
    assert parse_gtid_set(text, "mysql") == s
    if s:
        assert parse_gtid_set(text) == s


@given(any_sets)
def test_binary_roundtrip(s: MySQLGtidSet) -> None:
    data = s.encode()
    assert MySQLGtidSet.decode(data) == s
    assert MySQLGtidSet.decode(s.encode(tagged=True)) == s
    fmt, count = MySQLGtidSet.decode_header(data)
    keys = s.keys()
    assert count == len(keys)
    assert fmt == ("tagged" if any(tag for _, tag in keys) else "classic")


@given(models, models, models)
def test_union_properties(a: Model, b: Model, c: Model) -> None:
    sa, sb, sc = build(a), build(b), build(c)
    assert sa | sb == sb | sa
    assert (sa | sb) | sc == sa | (sb | sc)
    assert sa | sa == sa
    assert sa | sb == build(a | b)
    assert (sa | sb).contains(sa)
    assert sa.union(sb).contains(sb)


@given(models, models)
def test_contains_agrees_with_model(a: Model, b: Model) -> None:
    assert build(a).contains(build(b)) == (b <= a)
    assert build(a | b).contains(build(b))


@given(any_sets, any_sets)
def test_contains_union_on_big_sets(s: MySQLGtidSet, t: MySQLGtidSet) -> None:
    u = s | t
    assert u.contains(s)
    assert u.contains(t)
    assert len(u) <= len(s) + len(t)
    assert s.contains(t) == (u == s)


@given(models, st.sampled_from(UUIDS), st.sampled_from(TAGS), st.integers(1, 26))
def test_add_properties(model: Model, sid: str, tag: str, gno: int) -> None:
    s = build(model)
    g = MySQLGtid(sid, gno, tag)
    added = s.add(g)
    assert g in added
    assert added == s | build(frozenset({(sid, tag, gno)}))
    assert added == build(model | {(sid, tag, gno)})
    assert added.contains(s)


@given(any_sets, st.sampled_from(UUIDS), st.sampled_from(TAGS), st.integers(1, MAX_GNO))
def test_add_on_big_sets(s: MySQLGtidSet, sid: str, tag: str, gno: int) -> None:
    g = MySQLGtid(sid, gno, tag)
    assert s.add(g) == s | MySQLGtidSet.from_intervals({(sid, tag): [(gno, gno)]})


def test_add_next_gno_extends_the_last_interval() -> None:
    # Speed is measured in benchmarks/, not asserted here; this checks the hot-path shape stays merged.
    s = MySQLGtidSet.parse(f"{U2}:1-100:7777")
    for gno in range(1, 20_001):
        s = s.add(MySQLGtid(U1, gno))
    assert s.intervals(U1) == ((1, 20_000),)
    assert str(s) == f"{U1}:1-20000,{U2}:1-100:7777" if U1 < U2 else str(s) == f"{U2}:1-100:7777,{U1}:1-20000"


# ------------------------------------------------------------------------------------------------------------
# MariaDB positions


def test_mariadb_parse_format() -> None:
    s = MariaDBGtidSet.parse("1-2-5, 0-1-100\n")
    assert str(s) == "0-1-100,1-2-5"
    assert len(s) == 2
    assert list(s) == [MariaDBGtid(0, 1, 100), MariaDBGtid(1, 2, 5)]
    assert dict(s.domains()) == {0: MariaDBGtid(0, 1, 100), 1: MariaDBGtid(1, 2, 5)}
    assert s.get(1) == MariaDBGtid(1, 2, 5)
    assert s.get(7) is None
    assert MariaDBGtidSet.parse("") == MariaDBGtidSet()
    assert not MariaDBGtidSet()


@pytest.mark.parametrize("text", ["0-1-100,0-2-101", "0-1", "0-1-x", "0:1:2", f"{U1}:1"])
def test_mariadb_parse_errors(text: str) -> None:
    with pytest.raises(GtidSetError) as info:
        MariaDBGtidSet.parse(text)
    assert repr(text) in str(info.value) or "domain" in str(info.value)


def test_mariadb_duplicate_domain_message() -> None:
    with pytest.raises(GtidSetError, match="one GTID per domain"):
        MariaDBGtidSet.parse("0-1-100,0-2-101")
    with pytest.raises(GtidSetError, match="one GTID per domain"):
        MariaDBGtidSet.from_gtids([MariaDBGtid(0, 1, 1), MariaDBGtid(0, 1, 2)])


def test_mariadb_semantics() -> None:
    s = MariaDBGtidSet.parse("0-1-100,1-2-5")
    assert MariaDBGtid(0, 1, 100) in s
    assert MariaDBGtid(0, 9, 50) in s  # same domain, earlier seq_no: executed
    assert MariaDBGtid(0, 1, 101) not in s
    assert MariaDBGtid(2, 1, 1) not in s
    assert str(s.add(MariaDBGtid(0, 3, 7))) == "0-3-7,1-2-5"  # add replaces the domain's position
    assert s.add(MariaDBGtid(0, 1, 100)) is s
    assert str(s | MariaDBGtidSet.parse("0-1-90,2-1-1")) == "0-1-100,1-2-5,2-1-1"
    assert s.contains(MariaDBGtidSet.parse("0-1-99"))
    assert not s.contains(MariaDBGtidSet.parse("0-1-99,3-1-1"))
    assert not s.contains(MariaDBGtidSet.parse("1-2-6"))


def test_gtid_list_encoding() -> None:
    s = MariaDBGtidSet.parse("7-8-9,1-2-3")
    data = s.encode()
    assert data == bytes.fromhex(
        "02000000" + "010000000200000003000000" + "00000000" + "07000000080000000900000000000000"
    )
    assert MariaDBGtidSet.decode(data) == s
    flagged = s.encode(flags=GTID_LIST_FLAG_UNTIL_REACHED)
    assert MariaDBGtidSet.decode_gtid_list(flagged) == (s, GTID_LIST_FLAG_UNTIL_REACHED)
    assert MariaDBGtidSet.decode(flagged) == s
    assert MariaDBGtidSet.decode_gtid_list(MariaDBGtidSet().encode(flags=GTID_LIST_FLAG_IGN_GTIDS)) == (
        MariaDBGtidSet(),
        GTID_LIST_FLAG_IGN_GTIDS,
    )
    with pytest.raises(GtidSetError, match="high 4 bits"):
        s.encode(flags=3)


def test_gtid_list_same_domain_twice_keeps_last() -> None:
    # a binlog state after a failover: domain 0 written by servers 1 then 2; MariaDB writes the newest last
    body = bytes.fromhex("02000000" + "00000000010000006400000000000000" + "00000000020000006500000000000000")
    s, flags = MariaDBGtidSet.decode_gtid_list(body)
    assert str(s) == "0-2-101"
    assert flags == 0


@pytest.mark.parametrize(
    "data",
    [b"", b"\x01\x00\x00", bytes.fromhex("01000000") + bytes(15), bytes.fromhex("02000000") + bytes(31)],
)
def test_gtid_list_errors(data: bytes) -> None:
    with pytest.raises(GtidSetError):
        MariaDBGtidSet.decode_gtid_list(data)


def test_gtid_list_ignores_trailing_bytes_like_mariadb() -> None:
    # MariaDB 10.5-11.8 write an empty GTID list as a count of 0 plus 2 zero bytes
    assert MariaDBGtidSet.decode_gtid_list(bytes.fromhex("000000000000")) == (MariaDBGtidSet(), 0)
    one = MariaDBGtidSet.parse("0-10-31").encode()
    assert MariaDBGtidSet.decode(one + b"\x00") == MariaDBGtidSet.parse("0-10-31")


mariadb_models = st.dictionaries(
    st.integers(0, 4), st.tuples(st.integers(1, 3), st.integers(0, 20)), max_size=5
)


def build_mariadb(model: dict[int, tuple[int, int]]) -> MariaDBGtidSet:
    return MariaDBGtidSet.from_gtids(MariaDBGtid(d, srv, seq) for d, (srv, seq) in model.items())


@given(mariadb_models, mariadb_models, mariadb_models)
def test_mariadb_properties(
    a: dict[int, tuple[int, int]], b: dict[int, tuple[int, int]], c: dict[int, tuple[int, int]]
) -> None:
    sa, sb, sc = build_mariadb(a), build_mariadb(b), build_mariadb(c)
    assert MariaDBGtidSet.parse(str(sa)) == sa
    assert MariaDBGtidSet.decode(sa.encode()) == sa
    assert sa | sb == sb | sa
    assert (sa | sb) | sc == sa | (sb | sc)
    assert sa | sa == sa
    assert (sa | sb).contains(sa)
    assert (sa | sb).contains(sb)
    brute = all(d in a and a[d][1] >= seq for d, (_, seq) in b.items())
    assert sa.contains(sb) == brute
    for d in range(5):
        for seq in range(22):
            assert (MariaDBGtid(d, 1, seq) in sa) == (d in a and a[d][1] >= seq)
    g = MariaDBGtid(2, 3, 7)
    assert g in sa.add(g)
    assert len(sa) == len(a)


# ------------------------------------------------------------------------------------------------------------
# flavour detection, mixing, attach rules


def test_parse_gtid_set_detects_flavour() -> None:
    assert isinstance(parse_gtid_set(f"{U1}:1-3"), MySQLGtidSet)
    assert isinstance(parse_gtid_set("0-1-100,1-2-3"), MariaDBGtidSet)
    assert parse_gtid_set("", "mysql") == MySQLGtidSet()
    assert parse_gtid_set("", "MariaDB") == MariaDBGtidSet()
    with pytest.raises(GtidSetError, match="flavor="):
        parse_gtid_set("  ")
    with pytest.raises(GtidSetError, match="unknown GTID flavour"):
        parse_gtid_set("0-1-1", "postgres")
    with pytest.raises(GtidSetError, match="neither"):
        parse_gtid_set("hello")


def test_mixing_flavours_is_an_error() -> None:
    my = MySQLGtidSet.parse(f"{U1}:1")
    ma = MariaDBGtidSet.parse("0-1-1")
    with pytest.raises(GtidSetError, match="do not mix"):
        my.union(ma)  # type: ignore[arg-type]
    with pytest.raises(GtidSetError, match="do not mix"):
        ma.contains(my)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        my | ma  # type: ignore[operator]
    with pytest.raises(GtidSetError):
        is_new(my, ma)
    with pytest.raises(GtidSetError):
        can_attach(ma, my)


def test_is_new_follows_clickhouse() -> None:
    pos = MySQLGtidSet.parse(f"{U1}:1-10,{U2}:1-5")
    # requested ahead of the dispatcher, known UUIDs: attach (the consumer waits for the dispatcher)
    assert is_new(pos, MySQLGtidSet.parse(f"{U1}:1-20,{U2}:1-5"))
    # already covered by the dispatcher: not new (ClickHouse starts a catch-up dispatcher)
    assert not is_new(pos, MySQLGtidSet.parse(f"{U1}:1-5"))
    assert not is_new(pos, pos)
    # an unknown server UUID: not new
    assert not is_new(pos, MySQLGtidSet.parse(f"{U1}:1-20,{U3}:1"))
    # empty request: never new
    assert not is_new(pos, MySQLGtidSet())
    # ClickHouse compares UUIDs only, so a new tag of a known UUID counts as known
    assert is_new(pos, MySQLGtidSet.parse(f"{U1}:1-10:t:1"))


def test_is_new_can_lose_transactions_but_can_attach_cannot() -> None:
    pos = MySQLGtidSet.parse(f"{U1}:1-10")
    gap = MySQLGtidSet.parse(f"{U1}:1-5:8-20")  # the consumer never executed 6-7, already passed
    assert is_new(pos, gap)
    assert not can_attach(pos, gap)
    missing_uuid = MySQLGtidSet.parse(f"{U1}:1-20")
    assert is_new(MySQLGtidSet.parse(f"{U1}:1-10,{U2}:1-3"), missing_uuid)
    assert not can_attach(MySQLGtidSet.parse(f"{U1}:1-10,{U2}:1-3"), missing_uuid)
    assert can_attach(pos, pos)
    assert can_attach(pos, MySQLGtidSet.parse(f"{U1}:1-20,{U3}:1"))
    assert not can_attach(pos, MySQLGtidSet.parse(f"{U1}:1-9"))


def test_mariadb_attach_rules() -> None:
    pos = MariaDBGtidSet.parse("0-1-100,1-1-5")
    assert is_new(pos, MariaDBGtidSet.parse("0-1-120,1-1-5"))
    assert not is_new(pos, MariaDBGtidSet.parse("0-1-90"))
    assert not is_new(pos, MariaDBGtidSet.parse("0-1-120,2-1-1"))
    assert is_new(pos, MariaDBGtidSet.parse("0-1-120"))
    assert not can_attach(pos, MariaDBGtidSet.parse("0-1-120"))  # domain 1 not executed by the consumer
    assert can_attach(pos, MariaDBGtidSet.parse("0-1-120,1-1-5,2-1-1"))
    assert can_attach(pos, pos)


@given(models, models)
def test_attach_rules_against_model(p: Model, r: Model) -> None:
    sp, sr = build(p), build(r)
    assert can_attach(sp, sr) == (p <= r)
    expected = bool(r) and not (r <= p) and {sid for sid, _, _ in r} <= {sid for sid, _, _ in p}
    assert is_new(sp, sr) == expected
    if can_attach(sp, sr):
        # loss-free: a consumer that skips exactly the GTIDs in `requested` and receives every later
        # transaction ends up with everything the dispatcher has seen plus what comes next
        later = frozenset((U1, "", gno) for gno in range(25, 30))
        delivered = later - r
        assert p | later <= r | delivered


@pytest.mark.parametrize(
    ("position", "requested", "expect_is_new", "expect_can_attach"),
    [  # the table in docs/gtid.md
        ("u:1-10", "u:1-20", True, True),
        ("u:1-10", "u:1-5:8-20", True, False),
        ("u:1-10,v:1-3", "u:1-20", True, False),
        ("u:1-10", "u:1-10", False, True),
        ("u:1-10", "u:1-5", False, False),
        ("u:1-10", "u:1-20,w:1", False, True),
    ],
)
def test_attach_rules_doc_table(
    position: str, requested: str, expect_is_new: bool, expect_can_attach: bool
) -> None:
    names = {"u": U1, "v": U2, "w": U3}

    def real(text: str) -> MySQLGtidSet:
        return MySQLGtidSet.parse(",".join(names[p[0]] + p[1:] for p in text.split(",")))

    assert is_new(real(position), real(requested)) is expect_is_new
    assert can_attach(real(position), real(requested)) is expect_can_attach
