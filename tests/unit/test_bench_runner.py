"""The benchmark runner (benchmarks/run.py): discovery, the JSON document contract, markdown and chart output.

No benchmark is run here (they need servers and minutes); a tiny fake benchmark script checks the subprocess
contract.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks import run


def _doc() -> dict[str, Any]:
    return {
        "benchmark": "decode",
        "version": 1,
        "title": "Decode throughput",
        "quick": True,
        "environment": {"server": "MariaDB 10.11.0"},
        "tables": [{"title": "T1", "columns": ["reader", "seconds"], "rows": [["a | b", 1234.5], ["c", 0.123]],
                    "notes": "note under T1"}],
        "goals": [{"goal": "fast", "value": 21.0, "target": 20.0, "met": True, "detail": "files 30x"},
                  {"goal": "faster", "value": 0.3, "target": 0.5, "met": False}],
        "chart": {"title": "C", "xlabel": "x", "bars": [{"label": "mybinlog", "value": 20.0},
                                                         {"label": "python-mysql-replication", "value": 1.0}]},
        "notes": ["a closing paragraph"],
    }


def test_discover_finds_the_benchmarks_and_orders_known_ones_first() -> None:
    names = [p.stem for p in run.discover()]
    assert names[:3] == ["decode", "fanout", "filtering"]
    assert "memory" in names
    assert not any(n.startswith("_") or n == "run" for n in names)


def test_render_has_machine_goals_tables_and_generic_shapes() -> None:
    memory = {"benchmark": "memory", "scenarios": [{"name": "blocked", "workload": "wide",
              "queue_limit_bytes": 8 << 20, "peak_over_baseline_bytes": 40 << 20, "stalled_detached": False}]}
    e2e = {"name": "e2e", "results": [{"target": "chdb", "metric": "catch-up", "value": 1000.0, "unit": "rows/s"}]}
    failed = {"name": "snapshot", "error": "timed out after 240 s"}
    args = argparse.Namespace(quick=True)
    text = run.render([_doc(), memory, e2e, failed], args, time.monotonic(), [0.1, 0.2, 0.3], "benchmarks.png")
    assert "python -m benchmarks --quick" in text
    assert "| server | MariaDB 10.11.0 |" in text
    assert "| decode | fast | 21.0 | 20.0 | yes (files 30x) |" in text
    assert "| decode | faster | 0.30 | 0.50 | **no** |" in text
    assert "| a \\| b | 1,234 |" in text  # pipes escaped, numbers rounded for reading
    assert "note under T1" in text
    assert "a closing paragraph" in text
    assert "| blocked | wide | 8.00 | 40.0 | no |" in text  # MiB columns; booleans as yes/no
    assert "| chdb | catch-up | 1,000 | rows/s |" in text
    assert "did not complete: timed out after 240 s" in text
    assert "![benchmark charts](benchmarks.png)" in text


def test_goals_of_a_benchmark_that_did_not_complete_are_listed_as_not_measured() -> None:
    failed = {"name": "decode", "error": "exit status 1"}
    text = run.render([failed], argparse.Namespace(quick=True), time.monotonic(), [0.1, 0.2, 0.3], None)
    for goal, _target in run.GOALS["decode"]:
        line = next(line for line in text.splitlines() if goal.replace("|", "\\|") in line)
        assert "not measured" in line
        assert "**no** (the benchmark did not complete: exit status 1)" in line
    assert any("mariadb-binlog -v" in goal for goal, _target in run.GOALS["decode"])


def test_run_one_reads_the_last_json_line_and_reports_failures(tmp_path: Path) -> None:
    good = tmp_path / "good.py"
    good.write_text(textwrap.dedent("""
        import json, sys
        print("progress on stdout is tolerated")
        print(json.dumps({"benchmark": "good", "quick": "--quick" in sys.argv, "json": "--json" in sys.argv}))
    """))
    doc = run.run_one(good, quick=True, timeout=60)
    assert (doc["benchmark"], doc["quick"], doc["json"]) == ("good", True, True)
    bad = tmp_path / "bad.py"
    bad.write_text("import sys\nsys.exit(3)\n")
    assert run.run_one(bad, quick=False, timeout=60)["error"] == "exit status 3"
    silent = tmp_path / "silent.py"
    silent.write_text("print('no json here')\n")
    assert run.run_one(silent, quick=False, timeout=60)["error"] == "no JSON document on stdout"


def test_chart_is_written_when_matplotlib_is_installed(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "chart.png"
    assert run.write_chart([_doc(), {"benchmark": "no chart"}], out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not run.write_chart([{"benchmark": "no chart"}], tmp_path / "none.png")


def test_runner_script_lists_benchmarks() -> None:
    import subprocess

    out = subprocess.run([sys.executable, "-m", "benchmarks", "--list"], capture_output=True, text=True,
                         check=True, cwd=Path(run.__file__).resolve().parents[1]).stdout.split()  # fmt: skip
    assert out[:3] == ["decode", "fanout", "filtering"]


def test_a_saved_run_renders_again_with_its_own_date_and_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--render writes the markdown from a run saved with --save (after ANALYSIS.md changed), not from a new run."""
    import json

    saved = tmp_path / "run.json"
    saved.write_text(json.dumps({
        "quick": True, "seconds": 123.0, "load_start": [0.5, 0.6, 0.7], "load_end": [1.5, 1.6, 1.7],
        "generated": "2026-01-02 03:04 UTC", "docs": [_doc()],
    }))  # fmt: skip
    out = tmp_path / "bench.md"
    monkeypatch.setattr(run, "run_one", lambda *a, **k: pytest.fail("--render must not run a benchmark"))
    monkeypatch.setattr(sys, "argv", ["run.py", "--render", str(saved), "--out", str(out)])
    assert run.main() == 0
    text = out.read_text()
    assert "python -m benchmarks --quick` (benchmarks/run.py) on 2026-01-02 03:04 UTC, in 123 s." in text
    assert "| load average (1, 5, 15 min) at start / end | 0.5, 0.6, 0.7 / 1.5, 1.6, 1.7 |" in text
    assert "| decode | fast | 21.0 | 20.0 | yes (files 30x) |" in text
