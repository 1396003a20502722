"""Shared helpers of the benchmark scripts: the result document, timing, servers, workloads.

Every benchmark script ``benchmarks/<name>.py`` is a standalone program; with ``--json`` it prints one JSON
document on stdout (progress goes to stderr) and ``benchmarks/run.py`` turns the documents into
docs/benchmarks.md. The document shape (version 1) is described in :mod:`benchmarks.run`.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from mybinlog.testing._mariadb import MariaDBServer  # noqa: E402

MiB = 1 << 20


# -- output ---------------------------------------------------------------------------------------------------


class Log:
    """Progress lines on stderr (stdout is reserved for the JSON document)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.began = time.monotonic()

    def __call__(self, message: str) -> None:
        print(f"[{self.name} {time.monotonic() - self.began:6.1f}s] {message}", file=sys.stderr, flush=True)


def package_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def environment(server: MariaDBServer | None = None) -> dict[str, str]:
    env = {
        "python": platform.python_version(),
        "mybinlog": package_version("mybinlog"),
        "asyncmy": package_version("asyncmy"),
        "mysql-replication": package_version("mysql-replication"),
    }
    if server is not None:
        env["server"] = f"MariaDB {server.version}"
    return env


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = 0.0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gib = int(line.split()[1]) / (1 << 20)
    except OSError:
        pass
    os_name = platform.platform(terse=True)
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                os_name = line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count() or 0,
        "memory_gib": round(mem_gib, 1),
        "os": os_name,
        "kernel": platform.release(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def emit(doc: dict[str, Any], as_json: bool) -> None:
    """Print the result: one JSON document (``--json``) or its tables as text."""
    if as_json:
        print(json.dumps(doc, default=str))
        return
    for table in doc.get("tables", []):
        print(f"\n{table['title']}")
        widths = [
            max(len(str(c)), *(len(fmt_cell(r[i])) for r in table["rows"])) for i, c in enumerate(table["columns"])
        ]
        print("  ".join(str(c).ljust(w) for c, w in zip(table["columns"], widths, strict=True)))
        for row in table["rows"]:
            print("  ".join(fmt_cell(v).ljust(w) for v, w in zip(row, widths, strict=True)))
    for goal in doc.get("goals", []):
        state = "met" if goal["met"] else "NOT met"
        print(f"goal: {goal['goal']}: {goal['value']:.2f} (target {goal['target']}) {state}")


def fmt_cell(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        if abs(v) >= 10:
            return f"{v:.1f}"
        return f"{v:.2f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


# -- timing ---------------------------------------------------------------------------------------------------


def cpu_self() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of another process (e.g. the server), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


class Measurement:
    """Wall seconds and CPU seconds of this process and its children, for one run."""

    def __init__(self, wall: float, cpu: float, result: Any) -> None:
        self.wall = wall
        self.cpu = cpu
        self.result = result


def measure(fn: Callable[[], Any]) -> Measurement:
    c0 = cpu_self() + cpu_children()
    t0 = time.perf_counter()
    result = fn()
    wall = time.perf_counter() - t0
    return Measurement(wall, cpu_self() + cpu_children() - c0, result)


def best_run(fn: Callable[[], Any], runs: int) -> Measurement:
    """The fastest of ``runs`` runs (all must give the same result): the run least disturbed by the rest of the
    machine, as timeit does."""
    results = [measure(fn) for _ in range(runs)]
    answers = {repr(m.result) for m in results}
    if len(answers) != 1:
        raise RuntimeError(f"runs disagree: {sorted(answers)}")
    return min(results, key=lambda m: m.wall)


def run_quiet(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kwargs)


# -- servers --------------------------------------------------------------------------------------------------


def start_server(base: Path, name: str = "bench") -> MariaDBServer:
    """A private MariaDB 10.11 (ROW, FULL image, FULL metadata, CRC32) with one binlog file for the workload."""
    server = MariaDBServer(base / name, name=name, options={"max_binlog_size": 1 << 30})
    server.start()
    return server


def server_status(server: MariaDBServer, name: str) -> int:
    return int(server.query("SHOW GLOBAL STATUS LIKE %s", (name,))[0][1])


def goal(text: str, value: float, target: float, *, higher_is_better: bool = True, detail: str = "") -> dict[str, Any]:
    met = value >= target if higher_is_better else value <= target
    return {"goal": text, "value": value, "target": target, "met": met, "detail": detail}


# -- scenarios in child processes -------------------------------------------------------------------------------


def run_children(server: MariaDBServer, params: list[dict[str, Any]], timeout: float = 900) -> dict[str, Any]:
    """Run ``_consumers.py`` once per parameter set, all at once; measure what they cost together.

    Returns wall seconds, client CPU seconds (all children, start-up included), work CPU seconds (what the
    children report for the reading itself), server CPU seconds, server bytes sent (``Bytes_sent``), and the
    children's results.
    """
    script = str(Path(__file__).resolve().parent / "_consumers.py")
    server_pid = server.pid
    assert server_pid is not None
    sent0 = server_status(server, "Bytes_sent")
    scpu0 = process_cpu(server_pid)
    ccpu0 = cpu_children()
    t0 = time.perf_counter()
    procs = [
        subprocess.Popen([sys.executable, script, json.dumps(p)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for p in params
    ]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"scenario failed: {err.decode()[-3000:]}")
        outputs.append(json.loads(out.decode().strip().splitlines()[-1]))
    wall = time.perf_counter() - t0
    ccpu = cpu_children() - ccpu0
    scpu = process_cpu(server_pid) - scpu0
    sent = server_status(server, "Bytes_sent") - sent0
    work_cpu = sum(out.get("cpu", 0.0) for out in outputs)
    return {
        "wall": wall,
        "client_cpu": ccpu,
        "work_cpu": work_cpu,
        "server_cpu": scpu,
        "bytes_sent": sent,
        "outputs": outputs,
    }
