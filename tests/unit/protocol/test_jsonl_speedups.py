"""The compiled JSON Lines renderer (mybinlog/protocol/_jsonl.c) writes exactly the pure-Python renderer's text.

* Every event of every corpus file renders to the same text, byte for byte, one event at a time and as a chunk
  (``events_to_jsonl``, and as UTF-8 bytes ``events_to_jsonl_utf8``); an event that fails to render (a row image
  that does not decode) fails with the same error.
* Property tests: any value (every type a column or a JSON document can hold, and odd ones: NaN, -0.0, huge ints,
  lone surrogates, control characters, aware datetimes, sets, JSON diffs and opaque values, deep or non-str-keyed
  documents, subclasses) renders as the pure-Python json encoder renders it, or fails the same way; random rows
  events (inserts, updates, rows of the wrong width, tables with odd names) and other events render the same.
* ``mybinlog dump --format jsonl`` writes the same bytes through the compiled renderer (as bytes into the
  binary buffer) and the pure-Python one, and prints the events before one that fails to render.

The module is imported directly, so these tests also run in the MYBINLOG_NO_EXTENSIONS=1 pass (where mybinlog
itself does not use it). Without the extension they are skipped, and fail under CI=true, where it must be built.
"""

from __future__ import annotations

import contextlib
import datetime
import decimal
import enum
import importlib
import io
import math
import os
import struct
import types
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mybinlog.cli import _main
from mybinlog.errors import DecodeError
from mybinlog.protocol import _format
from mybinlog.protocol._constants import MISSING
from mybinlog.protocol._events import (
    AnnotateRowsEvent,
    DeleteRowsEvent,
    Event,
    QueryEvent,
    TableMapEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
    XidEvent,
)
from mybinlog.protocol._jsonb import JsonDiff, JsonOpaque
from mybinlog.source._files import read_binlog_file
from tests.corpus import binlog_files

CI = os.environ.get("CI") == "true"


def _load() -> Any:
    try:
        module = importlib.import_module("mybinlog.protocol._jsonl_speedups")
    except ImportError as exc:
        reason = (
            f"the compiled JSON Lines renderer is not built ({exc}); build it with "
            "`.venv/bin/python -m pip install --no-deps -e .` (needs gcc and the Python headers)"
        )
        if CI:
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    _format._configure_compiled(module)
    return module


@pytest.fixture(scope="module")
def c() -> Any:
    return _load()


def outcome(fn: Any, *args: Any) -> tuple[str, str]:
    """('ok', text) or (exception type, message): results and errors compare alike."""
    try:
        return "ok", fn(*args)
    except Exception as exc:  # every error must be the same one
        return type(exc).__name__, str(exc)


def assert_same_events(c: Any, events: list[Event]) -> None:
    for ev in events:
        assert outcome(c.event_to_json, ev) == outcome(_format._py_event_to_json, ev), ev
    expected = outcome(_format._py_events_to_jsonl, events)
    assert outcome(c.events_to_jsonl, events) == expected
    if expected[0] == "ok":
        try:
            utf8: bytes | None = expected[1].encode("utf-8")
        except UnicodeEncodeError:
            utf8 = None
        assert c.events_to_jsonl_utf8(events) == utf8


# ----------------------------------------------------------------------------------------------------------
# the corpus
# ----------------------------------------------------------------------------------------------------------


def _read(path: Path) -> list[Event]:
    """The events of a file, up to a decode error (the deliberately broken files); rows are not decoded yet,
    so that decoding them happens inside the renderers (whose errors are compared too)."""
    events: list[Event] = []
    try:
        for ev in read_binlog_file(path):
            events.append(ev)
    except DecodeError:
        pass
    return events


@pytest.mark.parametrize("path", binlog_files(), ids=lambda p: p.name)
def test_corpus_file_renders_the_same(c: Any, corpus_dir: Path, path: Path) -> None:
    events = _read(path)
    py = [outcome(_format._py_event_to_json, ev) for ev in _read(path)]  # fresh events: rows decoded here
    compiled = [outcome(c.event_to_json, ev) for ev in events]
    assert compiled == py
    assert_same_events(c, events)


def test_corpus_is_there(corpus_dir: Path) -> None:
    assert binlog_files(), "no binlog files in the corpus"


# ----------------------------------------------------------------------------------------------------------
# values
# ----------------------------------------------------------------------------------------------------------


class Color(enum.IntEnum):
    RED = 1


class Text(str):
    pass


class Num(int):
    pass


class Real(float):
    pass


class Dec(decimal.Decimal):
    pass


class Stamp(datetime.datetime):
    pass


class Doc(dict):  # type: ignore[type-arg]
    pass


_TZ = datetime.timezone(datetime.timedelta(hours=5, minutes=30))

# long text too: non-ASCII strings of 32 characters or more take the renderer's other path (CPython's encoder)
texts = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=40) | st.text(
    alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), min_size=30, max_size=300
) | st.sampled_from(
    ["", '"', "\\", "\n\r\t\b\f\x00\x1f\x7f", "é€😀", "\ud800", "a\udcffb", "\ud83d\ude00", "x" * 100]
)
ints = st.integers(-(2**70), 2**70) | st.sampled_from([0, -1, 2**63 - 1, -(2**63), 2**63, 2**64 - 1, 10**40])
floats = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0.0, -0.0, 1e16, 1e-5, 1.5e300])
decimals = st.decimals(allow_nan=True, allow_infinity=True) | st.sampled_from(
    [decimal.Decimal("-0.50"), decimal.Decimal("1E+3"), decimal.Decimal("sNaN"), decimal.Decimal("-0")]
)
datetimes = st.datetimes() | st.datetimes(timezones=st.sampled_from([datetime.UTC, _TZ]))
timedeltas = st.timedeltas() | st.sampled_from(
    [datetime.timedelta(hours=-838, seconds=1), datetime.timedelta(microseconds=-1), datetime.timedelta.max]
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    ints,
    floats,
    texts,
    decimals,
    datetimes,
    st.dates(),
    timedeltas,
    st.binary(max_size=20),
    st.binary(max_size=5).map(bytearray),
    st.frozensets(st.text(max_size=3), max_size=4),
    st.sets(st.integers(0, 9), max_size=3),
    st.just(MISSING),
    st.builds(JsonOpaque, st.integers(0, 255), st.binary(max_size=6)),
    st.sampled_from(
        [
            Color.RED,
            Text("sub"),
            Num(7),
            Real(2.5),
            Dec("3.25"),
            Stamp(2020, 1, 2, 3, 4, 5),
            frozenset({1, "a"}),  # unsortable: the same TypeError
            object(),  # not renderable: the same TypeError
            memoryview(b"mv"),
        ]
    ),
)
keys = texts | st.sampled_from([1, 2.5, True, None, Text("k")])  # non-str keys: the encoder's rules
documents = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(texts, inner, max_size=4),
        st.dictionaries(keys, inner, max_size=3),
        st.dictionaries(texts, inner, max_size=2).map(Doc),
        st.builds(JsonDiff, st.sampled_from(["REPLACE", "INSERT", "REMOVE"]), texts, inner),
    ),
    max_leaves=12,
)


def deep(levels: int, leaf: Any) -> Any:
    doc = leaf
    for i in range(levels):
        doc = [doc] if i % 2 else {"k": doc}
    return doc


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=documents)
def test_value_renders_as_the_json_encoder_renders_it(c: Any, value: Any) -> None:
    assert outcome(c.value_to_json, value) == outcome(_format._ENCODE, value)


@pytest.mark.parametrize(
    "text",
    [
        "é" * 31,
        "é" * 32,
        "é" * 33 + '"',
        '"quoted" \\ back\nslash, tab\t, nul\x00, del\x7f, ' + "東京😀" * 20,
        "mis à jour ✓ " * 500 + "\x1f",
        "ünïcödé and a lone surrogate \ud800 in long text " * 3,
        "\udcff" * 40,
    ],
)
def test_long_non_ascii_strings_render_as_the_json_encoder_renders_them(c: Any, text: str) -> None:
    for value in (text, {text: [text]}):
        assert outcome(c.value_to_json, value) == outcome(_format._ENCODE, value)


def _float_json(x: float) -> str:
    if x != x:
        return "NaN"
    return {math.inf: "Infinity", -math.inf: "-Infinity"}.get(x) or repr(x)


@settings(max_examples=3000, deadline=None)
@given(
    st.floats()
    | st.integers(0, 2**64 - 1).map(lambda bits: struct.unpack("<d", struct.pack("<Q", bits))[0])
    | st.builds(lambda m, e: math.ldexp(m, e), st.integers(-(2**53), 2**53), st.integers(-140, 80))
    | st.builds(lambda n, k: n / 10**k, st.integers(-(10**17), 10**17), st.integers(0, 20))
)
def test_floats_render_as_repr(c: Any, x: float) -> None:
    """The renderer's own shortest round-trip digits (it hands CPython the cases it is unsure of): repr's text for
    any double, random bit patterns, powers of two (a narrower rounding interval below), decimal fractions."""
    assert c.value_to_json(x) == _float_json(x)


def test_floats_at_the_edges_render_as_repr(c: Any) -> None:
    edges = [
        0.0, -0.0, 5e-324, 2.0**-1022, 2.2250738585072014e-308, 1.7976931348623157e308, 1e-4, 1e-5,
        9.999999999999999e-5, 1e15, 1e16, 9999999999999998.0, 1e17, 123456789012345678.0, 2.0**53, 2.0**53 + 2,
        2.0**63, 2.0**64, 2.0**-80, 2.0**-81, 0.1, 0.2, 0.3, 1 / 3, 2 / 3, 4.35, 0.1 + 0.2, 1e22, 1e23, 5e-7, 1.5,
        -2.5, 9007199254740993.0,
    ]  # fmt: skip
    for x in edges + [-x for x in edges] + [math.nextafter(x, math.inf) for x in edges]:
        assert c.value_to_json(x) == _float_json(x), x


@pytest.mark.parametrize("levels", [1, 30, 31, 32, 33, 40, 200])
@pytest.mark.parametrize("leaf", [1, decimal.Decimal("1.5"), JsonOpaque(1, b"\x01"), {1: 2}])
def test_deep_documents(c: Any, levels: int, leaf: Any) -> None:
    value = deep(levels, leaf)
    assert outcome(c.value_to_json, value) == outcome(_format._ENCODE, value)


def test_circular_document_fails_as_in_python(c: Any) -> None:
    doc: list[Any] = []
    doc.append(doc)
    assert outcome(c.value_to_json, doc)[0] == outcome(_format._ENCODE, doc)[0]


# ----------------------------------------------------------------------------------------------------------
# events
# ----------------------------------------------------------------------------------------------------------

_TYPES = [1, 2, 3, 4, 5, 7, 8, 9, 10, 12, 13, 15, 16, 17, 18, 245, 246, 247, 248, 252, 253, 254, 255]
_HEAD = {"timestamp": 1700000000, "server_id": 1, "size": 100, "log_pos": 500, "flags": 0}
_ROWS_BODY = {"table_id": 1, "rows_flags": 0, "body": b"", "rows_start": 0, "rows_end": 0, "present": 1,
              "present_after": 1}  # fmt: skip


def fake_table(schema: str, name: str, types_: list[int], names: list[str | None]) -> Any:
    """What the renderers read of a TableMap."""
    return types.SimpleNamespace(
        schema=schema,
        name=name,
        column_names=tuple(names),
        column_type_names=tuple(f"T{t}" for t in types_),
        columns=[types.SimpleNamespace(real_type=t) for t in types_],
    )


class Broken(WriteRowsEvent):
    """A rows event whose row image fails to decode."""

    __slots__ = ()

    @property
    def rows(self) -> list[Any]:
        raise DecodeError("bad row image")


def broken_event() -> Broken:
    table = fake_table("s", "t", [3], ["id"])
    return Broken(type_code=30, table=table, **_HEAD, **_ROWS_BODY)  # type: ignore[arg-type]


@st.composite
def rows_events(draw: st.DrawFn) -> list[Event]:
    ncols = draw(st.integers(0, 6))
    types_ = draw(st.lists(st.sampled_from(_TYPES), min_size=ncols, max_size=ncols))
    names = draw(st.lists(st.none() | texts, min_size=ncols, max_size=ncols))
    table = fake_table(draw(texts), draw(texts), types_, names)
    width = st.just(ncols) | st.integers(0, 7)  # now and then a row of the wrong width
    row = width.flatmap(lambda n: st.lists(documents, min_size=n, max_size=n).map(tuple))
    head = dict(
        _HEAD,
        offset=draw(st.none() | st.integers(4, 2**40)),
        file=draw(st.none() | st.sampled_from(["binlog.000001", 'b\u00e9"\\.1', "x\ud800"])),
        in_payload=draw(st.booleans()),
    )
    body = {"table_id": 7, "rows_flags": 0, "table": table, "body": b"", "rows_start": 0, "rows_end": 0,
            "present": 0, "present_after": 0}  # fmt: skip
    events: list[Event] = [TableMapEvent(type_code=19, table_id=draw(st.integers(0, 2**48)), table=table, **head)]
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from([WriteRowsEvent, DeleteRowsEvent, UpdateRowsEvent]))
        if kind is UpdateRowsEvent:
            pair = st.tuples(row, row) | st.tuples(row)  # a malformed pair now and then
            rows: Any = draw(st.lists(pair, max_size=3))
        else:
            rows = draw(st.lists(row, max_size=3))
        if draw(st.integers(0, 20)) == 0:
            rows = tuple(rows)  # not a list: rendered by Python
        code = {WriteRowsEvent: 30, DeleteRowsEvent: 32, UpdateRowsEvent: 31}[kind]
        events.append(kind(type_code=code, _rows=rows, **head, **body))  # type: ignore[arg-type]
    events.append(AnnotateRowsEvent(type_code=160, query=draw(texts), **head))
    # as the decoders build it: the text's bytes (any bytes: invalid UTF-8 is replaced when `query` is read)
    raw = draw(texts.map(lambda s: s.encode("utf-8", "surrogatepass")) | st.binary(max_size=60))
    events.append(AnnotateRowsEvent(type_code=160, query=raw, **head))
    events.append(XidEvent(type_code=16, xid=draw(st.integers(0, 2**64 - 1)), **head))
    events.append(QueryEvent(type_code=2, thread_id=1, exec_time=0, error_code=0, schema="s", query="BEGIN", **head))
    return events


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=rows_events())
def test_events_render_the_same(c: Any, events: list[Event]) -> None:
    assert_same_events(c, events)


def test_odd_header_values_go_to_python(c: Any) -> None:
    table = fake_table("s", "t", [3], ["id"])
    events: list[Event] = [
        XidEvent(type_code=16, xid=Num(5), **dict(_HEAD, offset=4)),  # type: ignore[arg-type]
        XidEvent(type_code=16, xid=1, **dict(_HEAD, log_pos=Num(3), offset=True)),  # type: ignore[arg-type]
        XidEvent(type_code=300, xid=1, **_HEAD),
        AnnotateRowsEvent(type_code=160, query=Text("q\n"), **_HEAD),
        AnnotateRowsEvent(type_code=160, query=5, **_HEAD),  # type: ignore[arg-type]
        WriteRowsEvent(type_code=30, table=table, _rows=[[1], (2,)], **_HEAD, **_ROWS_BODY),  # type: ignore[arg-type]
        TableMapEvent(type_code=19, table_id="7", table=table, **_HEAD),  # type: ignore[arg-type]
    ]
    assert_same_events(c, events)


@pytest.mark.parametrize(
    "raw",
    [b"", b"INSERT INTO t VALUES ('caf\xc3\xa9', \"x\\\\y\")\n", b"\xff\xfe", b"a\xed\xa0\x80b", b"\xc3",
     b"\xf4\x90\x80\x80", b"\xe0\x80\x80", ("\u00e9" * 40).encode(), b"x" * 70 + b"\x80", b"\x01\x1f\x7f"],
)  # fmt: skip
def test_annotate_text_kept_as_bytes_renders_as_its_decoded_query(c: Any, raw: bytes) -> None:
    """The renderer writes valid UTF-8 bytes without decoding them, and text that is not UTF-8 as ``query`` gives it
    (invalid bytes replaced): the same line as the pure-Python renderer, and as an event built from the str."""
    ev = AnnotateRowsEvent(type_code=160, query=raw, **_HEAD)
    line = c.event_to_json(ev)
    assert line == _format._py_event_to_json(AnnotateRowsEvent(type_code=160, query=raw, **_HEAD))
    assert line == c.event_to_json(AnnotateRowsEvent(type_code=160, query=raw.decode("utf-8", "replace"), **_HEAD))
    assert ev.query == raw.decode("utf-8", "replace")
    assert_same_events(c, [AnnotateRowsEvent(type_code=160, query=raw, **_HEAD)])


def test_rows_that_fail_to_decode_fail_the_same(c: Any) -> None:
    ev = broken_event()
    assert outcome(c.event_to_json, ev) == outcome(_format._py_event_to_json, ev) == ("DecodeError", "bad row image")
    assert outcome(c.events_to_jsonl, [ev]) == outcome(_format._py_events_to_jsonl, [ev])


# ----------------------------------------------------------------------------------------------------------
# mybinlog dump
# ----------------------------------------------------------------------------------------------------------


def _dump(events: list[Event], out: Any) -> str:
    with contextlib.suppress(DecodeError):
        _main._write_all(iter(events), "jsonl", out, None)
    out.flush()
    return out.buffer.getvalue().decode("utf-8") if hasattr(out, "buffer") else out.getvalue()


@pytest.mark.parametrize("path", binlog_files()[:60], ids=lambda p: p.name)
def test_dump_writes_the_same_bytes(c: Any, corpus_dir: Path, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _dump(_read(path), io.StringIO())  # the module's renderer: compiled or not
    monkeypatch.setattr(_main, "events_to_jsonl", _format._py_events_to_jsonl)
    monkeypatch.setattr(_main, "events_to_jsonl_utf8", None)
    python = _dump(_read(path), io.StringIO())
    monkeypatch.setattr(_main, "events_to_jsonl", c.events_to_jsonl)
    monkeypatch.setattr(_main, "events_to_jsonl_utf8", c.events_to_jsonl_utf8)
    binary = _dump(_read(path), io.TextIOWrapper(io.BytesIO(), encoding="utf-8"))
    assert expected == python == binary


@pytest.mark.parametrize("compiled", [False, True])
def test_dump_prints_the_events_before_one_that_fails(c: Any, compiled: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if compiled:
        monkeypatch.setattr(_main, "event_to_json", c.event_to_json)
        monkeypatch.setattr(_main, "events_to_jsonl", c.events_to_jsonl)
        monkeypatch.setattr(_main, "events_to_jsonl_utf8", c.events_to_jsonl_utf8)
    else:
        monkeypatch.setattr(_main, "event_to_json", _format._py_event_to_json)
        monkeypatch.setattr(_main, "events_to_jsonl", _format._py_events_to_jsonl)
        monkeypatch.setattr(_main, "events_to_jsonl_utf8", None)

    good = [XidEvent(type_code=16, xid=i, **dict(_HEAD, offset=i)) for i in range(3)]
    bad = broken_event()
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with pytest.raises(DecodeError):
        _main._write_all(iter([*good, bad, *good]), "jsonl", out, None)
    out.flush()
    lines = out.buffer.getvalue().decode("utf-8").splitlines()  # type: ignore[attr-defined]
    assert lines == [_format._py_event_to_json(e) for e in good]


def test_dump_writes_text_with_a_lone_surrogate_through_the_text_layer(c: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_main, "events_to_jsonl", c.events_to_jsonl)
    monkeypatch.setattr(_main, "events_to_jsonl_utf8", c.events_to_jsonl_utf8)
    ev = AnnotateRowsEvent(type_code=160, query="a\udcffb", **_HEAD)
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="surrogateescape")
    _main._write_all(iter([ev]), "jsonl", out, None)
    out.flush()
    assert out.buffer.getvalue() == _format._py_event_to_json(ev).encode("utf-8", "surrogateescape") + b"\n"  # type: ignore[attr-defined]


def test_dump_writes_everything_through_a_binary_layer_taking_part_of_it() -> None:
    class Trickle(io.BytesIO):
        """Like an unbuffered binary stdout (``python -u``) that takes at most 7 bytes per write."""

        def write(self, data: Any) -> int:
            return super().write(bytes(data[:7]))

    sink = Trickle()
    _main._write_bytes(sink, b"0123456789" * 5)
    assert sink.getvalue() == b"0123456789" * 5
