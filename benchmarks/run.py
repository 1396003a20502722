"""Run every benchmark and write docs/benchmarks.md and docs/benchmarks.png.

    python -m benchmarks --quick          # every benchmark in quick mode (under 5 minutes on 2 cores)
    python -m benchmarks                  # full size (tens of minutes)
    python -m benchmarks --only decode,fanout --out /tmp/bench.md
    python -m benchmarks --quick --save /tmp/run.json   # keep the run's documents, then after editing ANALYSIS.md:
    python -m benchmarks --render /tmp/run.json         # the markdown again, from the same measurements

(``python benchmarks/run.py`` is the same.) A benchmark is any ``benchmarks/<name>.py`` (not starting with ``_``)
whose source mentions both ``--json`` and ``--quick``: it is run as ``python benchmarks/<name>.py --json
[--quick]`` in its own process, its progress (stderr) is passed through, and its stdout must end with one JSON
document. Known ones run first (decode, fanout, filtering, memory, e2e, snapshot), others alphabetically. A
benchmark that fails or times out is reported as such in the document; the others still run.

The JSON document (version 1 of the shape; every key optional except the name)::

    {
      "benchmark": "decode",              # or "name": the section's name
      "version": 1,
      "title": "Decode throughput",      # section title
      "quick": true,
      "seconds": 61.2,                    # the benchmark's own duration
      "environment": {"server": "MariaDB 10.11.19", "python": "3.11.7", ...},   # versions (merged into one table)
      "tables": [                         # rendered as markdown tables, in order
        {"title": "...", "columns": ["reader", "seconds", ...], "rows": [["...", 1.23, ...], ...],
         "notes": "markdown shown under the table"}
      ],
      "goals": [                          # collected into the summary at the top
        {"goal": "full decode, stream (compiled) >= 2x `mariadb-binlog -v`, standard workload (CPU)",
         "value": 2.31, "target": 2, "met": true, "detail": "wall 2.2x; ..."}
      ],
      "chart": {"title": "...", "xlabel": "...", "bars": [{"label": "...", "value": 12.3}]},  # one panel of the PNG
      "notes": ["markdown paragraph", ...]
    }

The goals (GOALS below) are each benchmark's to measure and report, met or not, with the measured ratio; when a
benchmark does not complete, its goals are listed as not measured, so that no goal drops out of the summary.

Documents without ``tables`` are rendered generically: every top-level list of objects becomes a table (the
memory benchmark's ``scenarios`` and the end-to-end benchmark's ``results`` have dedicated column choices).
Cells: floats are rounded for reading (>= 1000 with thousands separators, >= 10 to one decimal, else two).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
sys.path.insert(0, str(BENCH_DIR))

from _common import environment, fmt_cell, machine  # noqa: E402

ORDER = ["decode", "fanout", "filtering", "memory", "txn_memory", "scale", "e2e", "kafka", "snapshot"]
# seconds a benchmark may take before it is stopped (quick, full)
TIMEOUTS = {"quick": 240.0, "full": 7200.0}

# The goals, by benchmark: (goal, target). Each benchmark reports its own with the measured value (the decode
# benchmark one line per workload where the goal says "every workload"); these are shown as not measured when
# the benchmark does not complete. The compiled core is optional (MYBINLOG_NO_EXTENSIONS=1 or no C compiler):
# the decode benchmark measures every mybinlog reader both ways and reports the speed-up, the goals are the
# compiled core's.
GOALS: dict[str, list[tuple[str, float]]] = {
    "decode": [
        ("full decode, stream (compiled) >= 2x `mariadb-binlog -v` on every workload: standard, wide, json, mixed "
         "(CPU; wall in the detail)", 2.0),
        ("full decode, stream (compiled) >= 2x `mysqlbinlog -v` 9.7 on the MySQL 9.7 workloads: mysql-mixed, "
         "mysql-json (CPU; wall in the detail)", 2.0),
        ("routing, rows not decoded (compiled) >= 1.0x the raw packet read (CPU per event, best of 5)", 1.0),
        ("`mybinlog dump --format jsonl` from the file (compiled, start-up included) >= 1.0x `mariadb-binlog -v` "
         "on every workload (CPU)", 1.0),
        ("full decode, stream (compiled) >= 20x python-mysql-replication, standard workload (CPU)", 20.0),
    ],
    "fanout": [("8 consumers through one shared connection cost <= 1.5x one consumer (reading + server CPU)", 1.5)],
    "e2e": [("`replicate` catch-up >= 0.9x a direct bulk insert of the same rows, chdb and the ClickHouse server",
             0.9)],
    "kafka": [(">= 100k rows/s into Kafka exactly-once (Tansu), catch-up of a backlog", 100_000.0)],
    "snapshot": [("snapshot of 1M rows: the whole command (start-up included) >= 1.5x the single-threaded copy "
                  "(pymysql stream into chdb), local[2]", 1.5)],
    # issue 24: cost with the number of tables (lower is better: ratios and seconds), memory of one big transaction
    "scale": [
        ("`replicate` CPU per change at 2,000 tables <= 1.5x at 20 tables, chdb", 1.5),
        ("initial load of 2,000 small tables >= 5x faster than before (50 s), chdb", 5.0),
        ("`replicate` CPU per change at 2,000 tables <= 1.5x at 20 tables, clickhouse-server", 1.5),
    ],
    "txn_memory": [
        ("peak RSS of `replicate` over its streaming baseline <= max_bytes_in_transaction + 100 MB at every "
         "transaction size, bound 256 MiB, chdb (MB)", 356.0),
        ("peak RSS of `replicate` over its streaming baseline <= max_bytes_in_transaction + 100 MB at every "
         "transaction size, bound 16 MiB, chdb (MB)", 116.0),
    ],
}  # fmt: skip


def discover() -> list[Path]:
    found = []
    for path in sorted(BENCH_DIR.glob("*.py")):
        if path.name.startswith("_") or path.stem in ("run",):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if "--json" in text and "--quick" in text:
            found.append(path)
    rank = {name: i for i, name in enumerate(ORDER)}
    return sorted(found, key=lambda p: (rank.get(p.stem, len(ORDER)), p.stem))


def run_one(path: Path, quick: bool, timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, str(path), "--json"] + (["--quick"] if quick else [])
    began = time.monotonic()
    print(f"== {path.stem}: {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=None, timeout=timeout, check=False, cwd=REPO)
    except subprocess.TimeoutExpired:
        return {"name": path.stem, "error": f"timed out after {timeout:.0f} s", "seconds": timeout}
    seconds = time.monotonic() - began
    if proc.returncode != 0:
        return {"name": path.stem, "error": f"exit status {proc.returncode}", "seconds": seconds}
    lines = [line for line in proc.stdout.decode("utf-8", "replace").splitlines() if line.strip()]
    for candidate in (lines[-1:] if lines else []) + ["\n".join(lines)]:
        try:
            doc = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(doc, dict):
            doc.setdefault("seconds", seconds)
            doc["_wall"] = seconds
            return doc
    return {"name": path.stem, "error": "no JSON document on stdout", "seconds": seconds}


# -- markdown ---------------------------------------------------------------------------------------------------


def name_of(doc: dict[str, Any]) -> str:
    return str(doc.get("benchmark") or doc.get("name") or "benchmark")


def md_table(columns: list[str], rows: list[list[Any]]) -> str:
    def cell(v: Any) -> str:
        return fmt_cell(v).replace("|", "\\|").replace("\n", " ")

    numeric = [all(isinstance(r[i], (int, float)) and not isinstance(r[i], bool) for r in rows if i < len(r))
               for i in range(len(columns))]  # fmt: skip
    out = ["| " + " | ".join(columns) + " |", "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    out += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(out)


_MEMORY_COLUMNS = [
    ("name", "scenario", 1),
    ("workload", "workload", 1),
    ("queue_limit_bytes", "queue limit MiB", 1 << 20),
    ("configured_bytes", "configured MiB", 1 << 20),
    ("peak_over_baseline_bytes", "peak RSS over baseline MiB", 1 << 20),
    ("overhead_bytes", "over configured MiB", 1 << 20),
    ("stalled_detached", "stalled consumer detached", 1),
    ("seconds", "seconds", 1),
]
_E2E_COLUMNS = [("target", "target", 1), ("metric", "metric", 1), ("value", "value", 1), ("unit", "unit", 1),
                ("ratio", "ratio", 1), ("note", "note", 1)]  # fmt: skip


def _records_table(title: str, records: list[dict[str, Any]], spec: list[tuple[str, str, int]] | None) -> str:
    if spec is None:
        keys: list[str] = []
        for r in records:
            keys += [k for k, v in r.items() if k not in keys and not isinstance(v, (dict, list))]
        spec = [(k, k, 1) for k in keys[:10]]
    spec = [s for s in spec if any(s[0] in r for r in records)]
    rows = []
    for r in records:
        row = []
        for key, _label, unit in spec:
            v = r.get(key, "")
            row.append(v / unit if unit != 1 and isinstance(v, (int, float)) else v)
        rows.append(row)
    return f"**{title}**\n\n" + md_table([label for _k, label, _u in spec], rows)


def render_section(doc: dict[str, Any], quick: bool) -> str:
    name = name_of(doc)
    title = doc.get("title") or name
    parts = [f"## {title} (`benchmarks/{name}.py`)"]
    if "error" in doc:
        parts.append(f"This benchmark did not complete: {doc['error']}. Run `python benchmarks/{name}.py` to see why.")
        return "\n\n".join(parts)
    mode = "quick" if doc.get("quick", quick) else "full"
    parts.append(f"Mode: {mode}; ran {doc.get('_wall', doc.get('seconds', 0.0)):.0f} s.")
    if doc.get("tables"):
        for table in doc["tables"]:
            parts.append(f"**{table.get('title', '')}**\n\n" + md_table(table["columns"], table["rows"]))
            if table.get("notes"):
                parts.append(str(table["notes"]))
    else:
        for key, value in doc.items():
            if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
                spec = {("memory", "scenarios"): _MEMORY_COLUMNS, ("e2e", "results"): _E2E_COLUMNS}.get((name, key))
                parts.append(_records_table(f"{title}: {key}", value, spec))
    for note in doc.get("notes", []) or []:
        parts.append(str(note))
    return "\n\n".join(parts)


def render(docs: list[dict[str, Any]], args: argparse.Namespace, began: float, load0: list[float],
           png: str | None, *, generated: str | None = None, load_end: list[float] | None = None) -> str:  # fmt: skip
    """The markdown. ``generated`` and ``load_end``: those of a saved run rendered again (``--render``)."""
    m = machine()
    if load_end is not None:
        m["load_average"] = load_end
    env: dict[str, str] = dict(environment())
    for doc in docs:
        for k, v in (doc.get("environment") or {}).items():
            env.setdefault(k, str(v))
        if "server" in doc and isinstance(doc["server"], str):
            env.setdefault("server", doc["server"])
    with contextlib.suppress(OSError):
        env["mariadb-binlog"] = subprocess.run(
            ["mariadb-binlog", "--version"], capture_output=True, text=True, check=False
        ).stdout.strip().split(" for ")[0]
    command = "python -m benchmarks" + (" --quick" if args.quick else "")
    now = generated or datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Benchmarks",
        "",
        "Generated by `" + command + "` (benchmarks/run.py) on " + now + f", in {time.monotonic() - began:.0f} s. "
        "Do not edit by hand: change the benchmarks or their analysis (benchmarks/ANALYSIS.md) and run it again.",
        "",
        "Speed is measured, never asserted in tests. Within a benchmark every reader or scenario runs in the same "
        "run on the same data, and figures are given as ratios to a reference measured in that run, so that a "
        "noisy machine still gives comparable answers. Absolute seconds vary with what else the machine does.",
        "",
        "## Machine and versions",
        "",
        md_table(
            ["", ""],
            [
                ["CPU", f"{m['cpu']} ({m['cores']} cores)"],
                ["memory", f"{m['memory_gib']} GiB"],
                ["OS", f"{m['os']}, Linux {m['kernel']}"],
                ["load average (1, 5, 15 min) at start / end",
                 f"{', '.join(map(str, load0))} / {', '.join(map(str, m['load_average']))}"],
                *[[k, v] for k, v in sorted(env.items())],
            ],
        ),
        "",
    ]
    goals = [(name_of(d), g) for d in docs for g in d.get("goals", []) or []]
    goal_rows: list[list[Any]] = [
        [n, g["goal"], float(g["value"]), float(g["target"]), ("yes" if g["met"] else "**no**")
         + (f" ({g['detail']})" if g.get("detail") else "")] for n, g in goals
    ]  # fmt: skip
    for d in docs:  # a benchmark that did not complete: its goals are not measured, not left out
        if "error" in d:
            goal_rows += [[name_of(d), text, "not measured", target, f"**no** (the benchmark did not complete: "
                           f"{d['error']})"] for text, target in GOALS.get(name_of(d), [])]  # fmt: skip
    if goal_rows:
        lines += ["## Goals", "", md_table(["benchmark", "goal", "measured", "target", "met"], goal_rows), ""]
    if png:
        lines += [f"![benchmark charts]({png})", ""]
    failed = [d for d in docs if "error" in d]
    if failed:
        lines += ["Did not complete: " + ", ".join(f"{name_of(d)} ({d['error']})" for d in failed) + ".", ""]
    for doc in docs:
        lines += [render_section(doc, args.quick), ""]
    analysis = BENCH_DIR / "ANALYSIS.md"
    if analysis.exists():
        lines += [analysis.read_text().strip(), ""]
    return "\n".join(lines)


# -- chart ------------------------------------------------------------------------------------------------------


def write_chart(docs: list[dict[str, Any]], path: Path) -> bool:
    charts = [d["chart"] for d in docs if isinstance(d.get("chart"), dict) and d["chart"].get("bars")]
    if not charts:
        return False
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install 'mybinlog[bench]'): no chart", file=sys.stderr)
        return False
    heights = [0.45 * len(c["bars"]) + 1.2 for c in charts]
    fig, axes = plt.subplots(len(charts), 1, figsize=(10, sum(heights)), squeeze=False,
                             gridspec_kw={"height_ratios": heights})  # fmt: skip
    for ax, chart in zip(axes[:, 0], charts, strict=True):
        labels = [b["label"] for b in chart["bars"]][::-1]
        values = [float(b["value"]) for b in chart["bars"]][::-1]
        colors = ["#d62728" if "python-mysql-replication" in lab else "#1f77b4" if "mybinlog" in lab else "#7f7f7f"
                  for lab in labels]  # fmt: skip
        bars = ax.barh(labels, values, color=colors)
        if chart.get("log"):
            ax.set_xscale("log")
        for bar, value in zip(bars, values, strict=True):
            ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, f" {fmt_cell(value)}", va="center",
                    fontsize=9)  # fmt: skip
        ax.set_title(chart.get("title", ""), fontsize=10)
        ax.set_xlabel(chart.get("xlabel", ""), fontsize=9)
        ax.tick_params(axis="y", labelsize=9)
        if chart.get("log"):
            ax.set_xlim(min(values) / 2, max(values) * 4)
        else:
            ax.set_xlim(0, max(values) * 1.18)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="quick mode of every benchmark (< 5 min in total)")
    parser.add_argument("--only", help="comma-separated benchmark names to run")
    parser.add_argument("--skip", default="", help="comma-separated benchmark names to leave out")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "benchmarks.md", help="markdown to write")
    parser.add_argument("--timeout", type=float, help="seconds per benchmark (default 240 quick, 7200 full)")
    parser.add_argument("--list", action="store_true", help="list the benchmarks found and exit")
    parser.add_argument("--save", type=Path, help="also write the run's JSON documents here, for --render")
    parser.add_argument("--render", type=Path, metavar="SAVED",
                        help="run nothing: write the markdown and chart from a run saved with --save, with the "
                             "current ANALYSIS.md")  # fmt: skip
    args = parser.parse_args()
    if args.render:
        saved = json.loads(args.render.read_text())
        args.quick = bool(saved["quick"])
        out, png_path = args.out, args.out.with_suffix(".png")
        png = png_path.name if write_chart(saved["docs"], png_path) else None
        text = render(saved["docs"], args, time.monotonic() - float(saved["seconds"]), saved["load_start"], png,
                      generated=saved["generated"], load_end=saved["load_end"])  # fmt: skip
        out.write_text(text)
        print(f"wrote {out} from {args.render}", file=sys.stderr)
        return 0
    paths = discover()
    if args.list:
        print("\n".join(p.stem for p in paths))
        return 0
    if args.only:
        wanted = set(args.only.split(","))
        paths = [p for p in paths if p.stem in wanted]
    skip = set(filter(None, args.skip.split(",")))
    paths = [p for p in paths if p.stem not in skip]
    timeout = args.timeout or TIMEOUTS["quick" if args.quick else "full"]
    began = time.monotonic()
    load0 = [round(x, 2) for x in os.getloadavg()]
    docs = [run_one(p, args.quick, timeout) for p in paths]
    if args.save:
        args.save.write_text(json.dumps({
            "quick": args.quick, "seconds": round(time.monotonic() - began, 1), "load_start": load0,
            "load_end": [round(x, 2) for x in os.getloadavg()],
            "generated": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"), "docs": docs,
        }, indent=1))  # fmt: skip
    out: Path = args.out
    png_path = out.with_suffix(".png")
    png = png_path.name if write_chart(docs, png_path) else None
    out.write_text(render(docs, args, began, load0, png))
    print(f"wrote {out}" + (f" and {png_path}" if png else ""), file=sys.stderr)
    failed = [name_of(d) for d in docs if "error" in d]
    if failed:
        print(f"did not complete: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
