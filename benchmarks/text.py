"""Text benchmark: UTF-8 column values decoded to ``str`` by the compiled core and by CPython's decoder.

Every TEXT, VARCHAR and (on MariaDB) JSON value of a row is UTF-8 bytes that become a ``str``. The compiled core
decodes them itself (docs/compiled-core.md: count, then one loop per ``str`` kind); the pure-Python decoder uses
``bytes.decode``, which is also what the compiled core falls back to for text it does not accept. Samples:

- ``mixed workload notes``: the note column of the decode benchmark's ``mixed`` workload (1 to 16 words drawn
  from a list of ASCII, accented, Greek, CJK and emoji words), generated here with the same recipe;
- a paragraph of French, German, Russian, Chinese and Japanese, an emoji-laden review, mostly-ASCII English with
  one accent, and short values (a name, an address, a city in Chinese).

Each sample is decoded many times in a loop (best of 5); the numbers include the call from Python, which both
pay. No server is needed.

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
    rows: list[list[Any]] = []
    for name, values, repeat in cases:
        for value in values:
            if ours(value) != value.decode():
                raise RuntimeError(f"{name}: the compiled decoder's text differs from bytes.decode")
        size = sum(map(len, values)) / len(values)
        theirs_ns = ns_per_value(cpython, values, repeat)
        ours_ns = ns_per_value(ours, values, repeat)
        rows.append([name, round(size, 1), round(theirs_ns, 1), round(ours_ns, 1), round(theirs_ns / ours_ns, 2)])
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
                "columns": ["text", "bytes (mean)", "bytes.decode ns", "compiled core ns", "bytes.decode / compiled"],
                "rows": rows,
                "notes": "The pure-Python decoder uses `bytes.decode`; the compiled core's `RowProgram` decodes "
                "text with `speedups.utf8`'s routine. Above 1.0 the compiled core is faster.",
            }
        ],
    }
    emit(doc, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
