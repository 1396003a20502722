"""Text benchmark: UTF-8 column values decoded to ``str`` by the compiled core and by CPython's decoder.

Every TEXT, VARCHAR and (on MariaDB) JSON value of a row is UTF-8 bytes that become a ``str``. The compiled core
decodes them itself (docs/compiled-core.md: count, then an AVX-512 kernel where the CPU has it, else one scalar loop
per ``str`` kind; both are measured); the pure-Python decoder uses
``bytes.decode``, which is also what the compiled core falls back to for text it does not accept. Samples:

- ``mixed workload notes``: the note column of the decode benchmark's ``mixed`` workload (1 to 16 words drawn
  from a list of ASCII, accented, Greek, CJK and emoji words), generated here with the same recipe;
- a paragraph of French, German, Russian, Chinese and Japanese, an emoji-laden review, mostly-ASCII English with
  one accent, and short values (a name, an address, a city in Chinese).

Each sample is decoded many times in a loop (best of 5); the numbers include the call from Python, which both
pay. A second table decodes rows of text in single-byte charsets (latin1, which MySQL means as cp1252; cp1251;
koi8r), which the compiled core decodes through the codec's byte table in C and the pure-Python decoder with
``codecs.charmap_decode`` and the same table: 2,000 rows of a VARCHAR of 1 to 4 words and a VARCHAR code. No
server is needed.

    python benchmarks/text.py [--quick] [--json]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import emit, environment

from mybinlog.protocol._accel import speedups
from mybinlog.protocol._constants import ColumnType
from mybinlog.protocol._table import ColumnInfo, TableMap, _compile_python, _program

_WORDS = ("order", "café", "naïve", "Straße", "日本語", "données", "🚀", "plain", "ascii", "Ελληνικά", "mañana", "ok",
          "delivered", "über", "façade", "東京", "😀")  # fmt: skip  (decode.py's _MIXED_WORDS)

SAMPLES = {
    "French paragraph": "Les données de la base sont mises à jour régulièrement ; la société a décidé d'évaluer où "
    "se trouvent les problèmes à l'échelle européenne. Ça marche très bien, même en été.",
    "German paragraph": "Die Straße führt über die Brücke zum Großmarkt, wo täglich frische Äpfel, Gemüse und "
    "Blumen verkauft werden. Öffnungszeiten: Montag bis Samstag.",
    "Russian paragraph": "Съешь же ещё этих мягких французских булок, да выпей чаю. Широкая электрификация южных "
    "губерний даст мощный толчок подъёму сельского хозяйства.",
    "Chinese paragraph": "我们的数据库每天都会同步到分析系统中，以便业务团队可以及时查看最新的订单和库存情况。"  # noqa: RUF001
    "如果出现延迟，请联系运维值班人员。",  # noqa: RUF001
    "Japanese paragraph": "東京の天気は晴れのち曇り、午後からは所により雨が降るでしょう。最高気温は二十五度の予想です。"
    "お出かけの際は傘をお持ちください。",
    "review with emoji": "Great product 👍 would buy again 😀 shipping was fast 🚀 but the box was damaged 😞 "
    "overall 4/5 ⭐⭐⭐⭐",
    "English, one accent": "This is a fairly long English sentence describing a product in detail with only one "
    "accent in it: café. And then some more words follow to make it long.",
    "name": "José Müller",
    "address": "Königstraße 12, 70173 Stuttgart",
    "city (Chinese)": "北京市",
    "ASCII code": "SKU-48213377",
}


def mixed_notes(count: int) -> list[bytes]:
    rng = random.Random(3)
    return [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 16))).encode() for _ in range(count)]


def ns_per_value(fn: Callable[[bytes], str], values: list[bytes], repeat: int) -> float:
    best = float("inf")
    for _ in range(5):
        t0 = time.process_time()
        for _ in range(repeat):
            for value in values:
                fn(value)
        best = min(best, time.process_time() - t0)
    return best / (repeat * len(values)) * 1e9


# charset id, its codec, words in it
_SINGLE_BYTE = [
    ("latin1 (cp1252)", 8, "cp1252", ("José", "Müller", "Königstraße", "café", "naïve", "plain", "order", "€uro")),
    ("cp1251", 51, "cp1251", ("Москва", "улица", "дом", "order", "Лев", "Толстой", "plain", "№5")),
    ("koi8r", 7, "koi8_r", ("Москва", "улица", "дом", "order", "Лев", "Толстой", "plain", "ok")),
]


def single_byte_rows(charset: int, codec: str, words: tuple[str, ...], count: int) -> tuple[TableMap, bytes]:
    cols = [ColumnInfo(0, ColumnType.VARCHAR, 200, True), ColumnInfo(1, ColumnType.VARCHAR, 200, True)]
    cols[0].charset = cols[1].charset = charset
    rng = random.Random(charset)
    rows = b""
    for _ in range(count):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 4))).encode(codec)
        code = b"SKU-%d" % rng.randrange(10**8)
        rows += b"\x00" + bytes([len(text)]) + text + bytes([len(code)]) + code
    return TableMap("db", "t", cols, 0), rows


def ns_per_row(fn: Callable[[bytes, int, int], Any], rows: bytes, count: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(5):
        t0 = time.process_time()
        for _ in range(repeat):
            fn(rows, 0, len(rows))
        best = min(best, time.process_time() - t0)
    return best / (repeat * count) * 1e9


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args()
    if speedups is None:
        print("text benchmark: the compiled core is not available (built without a compiler?)", file=sys.stderr)
        return 1
    began = time.monotonic()
    scale = 3 if args.quick else 10
    cpython: Callable[[bytes], str] = bytes.decode
    ours: Callable[[bytes], str] = speedups.utf8
    cases: list[tuple[str, list[bytes], int]] = [("mixed workload notes", mixed_notes(20_000), 2 * scale)]
    cases += [(name, [text.encode()], 40_000 * scale) for name, text in SAMPLES.items()]
    # the AVX-512 kernel where the CPU has it (docs/compiled-core.md), and the scalar loop every other CPU runs
    simd = bool(speedups.utf8_simd(True))
    rows: list[list[Any]] = []
    for name, values, repeat in cases:
        for value in values:
            if ours(value) != value.decode():
                raise RuntimeError(f"{name}: the compiled decoder's text differs from bytes.decode")
        size = sum(map(len, values)) / len(values)
        theirs_ns = ns_per_value(cpython, values, repeat)
        ours_ns = ns_per_value(ours, values, repeat)
        speedups.utf8_simd(False)
        scalar_ns = ns_per_value(ours, values, repeat)
        speedups.utf8_simd(True)
        rows.append([name, round(size, 1), round(theirs_ns, 1), round(ours_ns, 1), round(theirs_ns / ours_ns, 2),
                     round(scalar_ns, 1), round(theirs_ns / scalar_ns, 2)])  # fmt: skip
    table_rows: list[list[Any]] = []
    for name, charset, codec, words in _SINGLE_BYTE:
        table, data = single_byte_rows(charset, codec, words, 2000)
        program = _program(table, 0, 3, 3)
        python = _compile_python(table, 0, 3, 3)
        if program is None or program.decode(data, 0, len(data)) != python(data, 0, len(data)):
            raise RuntimeError(f"{name}: the compiled core does not decode these rows as Python does")
        theirs_ns = ns_per_row(python, data, 2000, 5 * scale)
        ours_ns = ns_per_row(program.decode, data, 2000, 5 * scale)
        table_rows.append([name, round(theirs_ns, 1), round(ours_ns, 1), round(theirs_ns / ours_ns, 2)])
    doc = {
        "benchmark": "text",
        "version": 1,
        "title": "UTF-8 text to str",
        "quick": args.quick,
        "seconds": time.monotonic() - began,
        "environment": environment(),
        "tables": [
            {
                "title": "CPU nanoseconds per value (call from Python included, best of 5)",
                "columns": ["text", "bytes (mean)", "bytes.decode ns", "compiled core ns", "bytes.decode / compiled",
                            "scalar loop ns", "bytes.decode / scalar"],
                "rows": rows,
                "notes": "The pure-Python decoder uses `bytes.decode`; the compiled core's `RowProgram` decodes "
                "text with `speedups.utf8`'s routine: "
                + ("the AVX-512 kernel (this CPU has AVX-512 VBMI2)" if simd else "the scalar loop (this CPU has no "
                   "AVX-512 VBMI2: both compiled columns measure it)")
                + "; the scalar loop is what CPUs without AVX-512 VBMI2 run. Above 1.0 the compiled core is faster.",
            },
            {
                "title": "Single-byte charsets: CPU nanoseconds per row of two VARCHARs (2,000 rows, best of 5)",
                "columns": ["charset", "pure-Python decoder ns", "compiled core ns", "pure Python / compiled"],
                "rows": table_rows,
                "notes": "The pure-Python decoder calls `codecs.charmap_decode` with the codec's table per value "
                "(`bytes.decode(codec)` took 2.7x as long: a codec lookup and a Python method per value); the "
                "compiled core decodes through the same 256-character table in C.",
            },
        ],
    }
    emit(doc, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
