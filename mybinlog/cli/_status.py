"""``mybinlog status``: the shared-binlog consumers of a running process, and a server's binlog state.

Status lives in the process that consumes (its :class:`~mybinlog.BinlogClientFactory`): that process opts in with
``serve_status(address)`` and this command reads it from outside::

    mybinlog status --from unix:/run/app/mybinlog.sock            # one row per consumer (system.mysql_binlogs)
    mybinlog status --from http://127.0.0.1:9187 --format json
    mybinlog status --from file:/run/app/mybinlog-status.json --format vertical
    mybinlog status --dsn mysql://repl@db:3306                    # the server side: position, binlog dumps

No password is ever printed. The DSN's password may come from ``--password-file``, ``MYBINLOG_PASSWORD_FILE`` or
``MYBINLOG_PASSWORD`` instead of the URL (:mod:`mybinlog.cli._common`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

from ..errors import ConfigurationError, MybinlogError
from ..source import DSN
from ..status import STATUS_COLUMNS, read_status
from ._common import add_source_arguments, source_dsn

__all__ = ["register", "run", "server_facts"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "status",
        help="show the shared binlog consumers of a running process (--from) or a server's binlog state (--dsn)",
        description="Print the status rows of the binlog consumers of a running process, with the columns of "
        "ClickHouse's system.mysql_binlogs (the process serves them with mybinlog.serve_status; see "
        "docs/sharing.md), and/or the binlog state of a server: position, "
        "executed GTID set, binlog files and the binlog dump connections it serves.",
    )
    parser.add_argument(
        "--from",
        dest="endpoint",
        metavar="ADDRESS",
        help="where the process serves its status: unix:/path.sock, http://127.0.0.1:PORT or file:/path.json",
    )
    parser.add_argument(
        "--dsn",
        action="append",
        metavar="URL",
        help="mysql://user@host:port: show the server's side (repeatable or a list db1:3306,db2:3306: the first "
        "that answers; the password from --password-file, "
        "MYBINLOG_PASSWORD_FILE or MYBINLOG_PASSWORD; in the URL, `ps` shows it to every user)",
    )
    add_source_arguments(parser)
    parser.add_argument(
        "--format",
        choices=("table", "vertical", "json"),
        default="table",
        help="table (default; one line per consumer), vertical (one column per line) or json",
    )
    parser.add_argument(
        "--columns", metavar="A,B,...", help="only these status columns, in this order (table and vertical)"
    )
    parser.add_argument("--timeout", type=float, default=5.0, metavar="SECONDS", help="give up after (default 5)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    if not args.endpoint and not args.dsn:
        print("mybinlog status: give --from ADDRESS (a consuming process) and/or --dsn URL (a server)", file=sys.stderr)
        return 2
    if args.password_file and not args.dsn:
        print("mybinlog status: --password-file goes with --dsn URL", file=sys.stderr)
        return 2
    columns = list(STATUS_COLUMNS)
    if args.columns:
        columns = [c.strip() for c in args.columns.split(",") if c.strip()]
        unknown = [c for c in columns if c not in STATUS_COLUMNS]
        if unknown:
            raise ConfigurationError(
                f"unknown status column(s) {', '.join(unknown)}; known: {', '.join(STATUS_COLUMNS)}"
            )
    process, server = asyncio.run(_collect(args))
    if args.format == "json":
        if process is not None and server is not None:
            json.dump({"process": process, "server": server}, out, indent=2, default=str)
        else:
            json.dump(process if process is not None else server, out, indent=2, default=str)
        out.write("\n")
        return 0
    if process is not None:
        _print_process(process, columns, args.format, out)
    if server is not None:
        if process is not None:
            out.write("\n")
        _print_server(server, args.format, out)
    return 0


async def _collect(args: argparse.Namespace) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    process = await read_status(args.endpoint, timeout_s=args.timeout) if args.endpoint else None
    server = None
    if args.dsn:
        dsn = source_dsn(args, attr="dsn", option="--dsn")
        async with asyncio.timeout(args.timeout + dsn.connect_timeout):
            server = await server_facts(dsn)
    return process, server


async def server_facts(dsn: DSN) -> dict[str, Any]:
    """What the server says about its binlog: version, settings, current position, files and dump connections.

    A fact the user may not read (a missing privilege) is reported as ``"unavailable: <reason>"``.
    """
    from ..source import BinlogConnection

    conn = await BinlogConnection.connect(dsn, check_preconditions=False, heartbeat_period=0)
    try:
        info = conn.info
        facts: dict[str, Any] = {
            "server": conn.dsn.display,  # with several servers, the one that answered
            "flavor": info.flavor,
            "version": info.version_string,
            "server_id": info.server_id,
            "server_uuid": info.server_uuid,
            "log_bin": info.log_bin,
            "binlog_format": info.binlog_format,
            "binlog_row_image": info.binlog_row_image,
            "binlog_row_metadata": info.binlog_row_metadata,
            "binlog_checksum": info.binlog_checksum,
            "gtid_mode": info.gtid_mode,
        }
        try:
            file, position, gtids = await conn.current_position()
            facts.update(binlog_name=file, binlog_pos=position, binlog_executed_gtid_set=gtids)
        except MybinlogError as exc:
            facts["binlog_name"] = f"unavailable: {exc}"
        try:
            files = await conn.binlog_files()
            facts.update(
                binlog_files=len(files),
                binlog_bytes=sum(size for _, size in files),
                oldest_binlog_name=files[0][0] if files else "",
            )
        except MybinlogError as exc:
            facts["binlog_files"] = f"unavailable: {exc}"
        try:
            rows = await conn.binlog_dumps()
            facts["binlog_dumps"] = [
                {
                    "id": r[0],
                    "user": _text(r[1]),
                    "host": _text(r[2]),
                    "command": _text(r[3]),
                    "time": r[4],
                    "state": _text(r[5]),
                }
                for r in rows
            ]
        except MybinlogError as exc:
            facts["binlog_dumps"] = f"unavailable: {exc}"
        return facts
    finally:
        await conn.close()


def _text(value: object) -> str:
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return "" if value is None else str(value)


# -- rendering ---------------------------------------------------------------------------------------------------


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.1f}"
    return _text(value)


def render_table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """Rows as an aligned text table (numbers right-aligned), one line per row under a header."""
    cells = [[_cell(row.get(c, "")) for c in columns] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    numeric = [all(isinstance(row.get(c), int | float) for row in rows) and bool(rows) for c in columns]

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            (v.rjust(w) if num else v.ljust(w)) for v, w, num in zip(values, widths, numeric, strict=True)
        ).rstrip()

    out = [line(list(columns)), "  ".join("-" * w for w in widths)]
    out.extend(line(r) for r in cells)
    return "\n".join(out)


def render_vertical(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    width = max((len(c) for c in columns), default=0)
    blocks = []
    for i, row in enumerate(rows, 1):
        lines = [f"Row {i}:", "-" * (len(str(i)) + 5)]
        lines.extend(f"{c.ljust(width)}: {_cell(row.get(c, ''))}" for c in columns)
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _print_process(doc: dict[str, Any], columns: Sequence[str], fmt: str, out: TextIO) -> None:
    rows = doc.get("mysql_binlogs") or []
    dispatchers = {(r.get("binlog_client_name"), r.get("dispatcher_name")) for r in rows}
    age = time.time() - float(doc.get("time", 0) or 0)
    header = f"# process {doc.get('pid')}: {len(rows)} consumer(s) on {len(dispatchers)} dispatcher(s)" + (
        f", status written {age:.1f} s ago" if "interval_ms" in doc else ""
    )
    out.write(header + "\n")
    interval = doc.get("interval_ms")
    if isinstance(interval, int | float) and age > 3 * interval / 1000 + 1:
        out.write(f"# warning: the status file is stale ({age:.0f} s old): is the process still running?\n")
    if rows:
        out.write((render_vertical(rows, columns) if fmt == "vertical" else render_table(rows, columns)) + "\n")
    for rep in doc.get("replicas") or []:
        out.write(_replica_line(rep) + "\n")


def _replica_line(rep: dict[str, Any]) -> str:
    """``# replica shop: streaming, source db2:3306 (server_id 2), 1 source failover(s) (last: ...)``."""
    server = rep.get("source_server") or "?"
    if rep.get("source_server_id") is not None:
        server += f" (server_id {rep['source_server_id']})"
    line = f"# replica {rep.get('replica')}: {rep.get('state')}, source {server}"
    if rep.get("delivery"):
        line += f", {str(rep['delivery']).upper()}"
    line += f", {rep.get('source_failovers') or 0} source failover(s)"
    if rep.get("last_source_failover"):
        line += f" (last: {rep['last_source_failover']})"
    return line


def _print_server(facts: dict[str, Any], fmt: str, out: TextIO) -> None:
    dumps = facts.get("binlog_dumps")
    scalar = {k: v for k, v in facts.items() if k != "binlog_dumps"}
    width = max(len(k) for k in scalar)
    out.write(f"# server {facts.get('server')}\n")
    for key, value in scalar.items():
        out.write(f"{key.ljust(width)}  {_cell(value)}\n")
    if isinstance(dumps, list):
        out.write(f"# {len(dumps)} binlog dump connection(s) visible to this user\n")
        if dumps:
            cols = ["id", "user", "host", "command", "time", "state"]
            out.write((render_vertical(dumps, cols) if fmt == "vertical" else render_table(dumps, cols)) + "\n")
    else:
        out.write(f"{'binlog_dumps'.ljust(width)}  {dumps}\n")
