"""The spill file of transactions bigger than ``max_bytes_in_transaction`` (replication/_spill.py): entries come back
in order, chunks hold about the bound and never split a rows event, and the chunked net changes equal the whole
transaction's for the collapsing engine (the sum of the chunks' signed rows) and the replacing engines (the
highest version per key)."""

from __future__ import annotations

import random
from collections import Counter
from types import SimpleNamespace
from typing import Any

from mybinlog.replication._batch import Entry, add_transaction, table_payload
from mybinlog.replication._spill import Spill, chunks, entry_bytes


def _table(name: str) -> Any:
    return SimpleNamespace(name=name)


def _transaction(seed: int, events: int) -> list[Entry]:
    """Random inserts, updates (some moving keys) and deletes over keys 0..199, as rows events of a table."""
    rng = random.Random(seed)
    t = _table("t")
    state: dict[int, str] = {}
    out: list[Entry] = []
    for e in range(events):
        kind = rng.choice("iud")
        if kind == "i":
            keys = [k for k in rng.sample(range(200), 5) if k not in state]
            images = [f"{k}\tv{e}" for k in keys]
            state.update(zip(keys, images, strict=True))
            if keys:
                out.append((t, None, None, keys, images))
        elif kind == "u" and state:
            olds = rng.sample(sorted(state), min(4, len(state)))
            news = [k if rng.random() < 0.8 or (k + 1000) in state else k + 1000 for k in olds]
            b = [state.pop(k) for k in olds]
            a = [f"{k}\tu{e}" for k in news]
            state.update(zip(news, a, strict=True))
            out.append((t, olds, b, news, a))
        elif state:
            keys = rng.sample(sorted(state), min(3, len(state)))
            out.append((t, keys, [state.pop(k) for k in keys], None, None))
    return out


def _signed(payloads: list[bytes]) -> Counter[str]:
    """Collapsing: the rows that remain once +1 and -1 rows of the same image cancel (version left out)."""
    total: Counter[str] = Counter()
    for data in payloads:
        for line in data.decode().splitlines():
            *image, sign, _version = line.split("\t")
            total["\t".join(image)] += int(sign)
    return +total


def test_spill_round_trip_and_chunks() -> None:
    txn = _transaction(1, 300)
    spill = Spill()
    spill.add(txn[:100])
    spill.add(txn[100:])
    back = list(spill.read())
    assert [(name, n) for name, n, *_ in back] == [("t", i + 1) for i in range(len(txn))]
    assert [tuple(x) for _, _, *x in back] == [e[1:] for e in txn]
    limit = 2000
    tables = {"t": txn[0][0]}
    got = list(chunks(spill, tables, limit, lambda n: n))
    assert len(got) > 5
    biggest = max(entry_bytes(e) for e in txn)
    sizes = [sum(len(c[1] or "") + len(c[0] or "") for c in chunk["t"].values()) for chunk in got]
    assert all(s < limit + biggest for s in sizes)  # the bound, passed by at most one rows event
    spill.close()


def test_chunks_equal_the_whole_transaction() -> None:
    for seed in range(5):
        txn = _transaction(seed, 400)
        spill = Spill()
        spill.add(txn)
        tables = {"t": txn[0][0]}
        whole: dict[str, Any] = {}
        add_transaction(whole, txn, 10**6)
        parts = list(chunks(spill, tables, 500, lambda n: n))
        assert len(parts) > 3
        # collapsing: the chunks' +1/-1 rows sum to the whole transaction's
        expected = _signed([table_payload(whole["t"].values(), "collapsing")[0]])
        assert _signed([table_payload(p["t"].values(), "collapsing")[0] for p in parts]) == expected
        # replacing: per key, the row of the highest version is the whole transaction's last state
        best: dict[Any, tuple[int, Any]] = {}
        for p in parts:
            for key, (_first, after, last, version) in p["t"].items():
                if key not in best or version > best[key][0]:
                    best[key] = (version, (after, last))
        assert {k: v[1] for k, v in best.items()} == {k: (c[1], c[2]) for k, c in whole["t"].items()}
        spill.close()
