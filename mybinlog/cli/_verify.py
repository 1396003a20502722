"""``mybinlog verify``: compare MySQL/MariaDB tables with their ClickHouse replica
(:func:`mybinlog.replication.verify`) and print the report. Exit code: 0 equal, 1 different, 2 error."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Iterable
from typing import Any

from ..errors import MybinlogError
from ..verification import DEFAULT_MAX_DIFFERENCES, DEFAULT_PAGE_ROWS, verify
from . import _common as _cli_common

__all__ = ["add_verify_arguments", "register", "run_verify"]

DEFAULT_TARGET = "chdb://./mybinlog-clickhouse"


def register(sub: Any) -> None:
    ver = sub.add_parser(
        "verify",
        help="compare MySQL tables with their ClickHouse replicas (counts and checksums)",
        description="Compare each table of a MySQL database with its ClickHouse replica: row counts and an "
        "order-independent checksum over all columns; print the differences. Exit 0 equal, 1 different, 2 error.",
    )
    add_verify_arguments(ver)
    ver.set_defaults(func=lambda args: _run(run_verify(args)))


def _run(coro: Any) -> int:
    try:
        return int(asyncio.run(coro))
    except MybinlogError as exc:
        print(f"mybinlog: error: {exc}", file=sys.stderr)
        return 2


def add_verify_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``mybinlog verify``'s options to ``parser`` (then call :func:`run_verify` with the parsed args)."""
    parser.add_argument(
        "--source",
        "--dsn",
        dest="source",
        required=True,
        action="append",
        metavar="DSN",
        help="the MySQL/MariaDB source, mysql://user@host:port[/database] (repeatable, or a list db1:3306,db2:3306: "
        "the servers of one topology, the first that answers is read); the password from --password-file, "
        "MYBINLOG_PASSWORD_FILE or MYBINLOG_PASSWORD (in the URL, `ps` shows it to every user)",
    )
    _cli_common.add_source_arguments(parser)
    parser.add_argument(
        "--target",
        default=DEFAULT_TARGET,
        metavar="URL",
        help=f"the ClickHouse replica: http://user@host:8123 or chdb:///path (default {DEFAULT_TARGET}); the "
        "password from --target-password-file, MYBINLOG_CH_PASSWORD_FILE or MYBINLOG_CH_PASSWORD",
    )
    _cli_common.add_target_arguments(parser)
    parser.add_argument(
        "--database", "-d", action="append", default=[], metavar="DB", help="a whole MySQL database (repeatable)"
    )
    parser.add_argument(
        "--tables",
        action="append",
        default=[],
        metavar="T1,T2",
        help="only these tables: comma-separated, table or database.table (repeatable); without it, every table "
        "of each --database and the table sets are compared too",
    )
    parser.add_argument("--target-database", metavar="NAME", help="the ClickHouse database (default: the MySQL name)")
    parser.add_argument(
        "--engine",
        default="auto",
        choices=("auto", "replacing", "collapsing", "replacing_is_deleted"),
        help="how the replica marks live rows (default auto: from each table's engine and columns)",
    )
    parser.add_argument(
        "--max-differences",
        type=int,
        default=DEFAULT_MAX_DIFFERENCES,
        metavar="N",
        help=f"list at most N differing rows per table (default {DEFAULT_MAX_DIFFERENCES}; 0 = counts only)",
    )
    parser.add_argument(
        "--page-rows",
        type=int,
        default=DEFAULT_PAGE_ROWS,
        metavar="N",
        help=f"read the replica in slices of about N rows (default {DEFAULT_PAGE_ROWS})",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default text)")


async def run_verify(args: argparse.Namespace) -> int:
    """Run ``mybinlog verify`` with parsed arguments; print the report. Exit code: 0 equal, 1 different,
    2 error."""
    from ..clickhouse import open_target

    secrets: list[str] = []
    try:
        dsn = _cli_common.source_dsn(args)
        secrets.append(dsn.password)
        url = _cli_common.target_url(args)
        secrets.append(_url_password(url))
        target = await open_target(url)
        try:
            report = await verify(
                dsn,
                target,
                databases=args.database,
                tables=[t.strip() for item in args.tables for t in item.split(",") if t.strip()],
                target_database=args.target_database,
                engine=args.engine,
                max_differences=args.max_differences,
                page_rows=args.page_rows,
            )
        finally:
            await target.aclose()
    except MybinlogError as exc:
        sys.stderr.write(f"mybinlog verify: error: {_redact(str(exc), secrets)}\n")
        return 2
    out = report.to_json() + "\n" if args.format == "json" else report.render_text()
    sys.stdout.write(_redact(out, secrets))
    sys.stdout.flush()
    # what kept the comparison from completing goes to stderr too (a script or a log sees it without the report)
    for t in report.errors:
        sys.stderr.write(f"mybinlog verify: error: {_redact(_with_fix(t.error or 'failed'), secrets)}\n")
    sys.stderr.flush()
    return report.exit_code


def _with_fix(error: str) -> str:
    """A table's or database's error with what to do about it when the error does not say."""
    if "does not exist in the source" in error:
        return (
            f"{error}: check the name given with --database/--tables (SHOW DATABASES, SHOW TABLES on the source), "
            "and that the source user has a privilege on it (the server hides databases the user may not see)"
        )
    return error


def _url_password(url: str) -> str:
    from urllib.parse import unquote, urlsplit

    try:
        password = urlsplit(url).password
    except ValueError:
        return ""
    return unquote(password) if password else ""


def _redact(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        if secret and len(secret) >= 3:
            text = text.replace(secret, "***")
    return text
