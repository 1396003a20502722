"""The ``mybinlog`` command line: ``dump`` (decode binlog files or a live server), ``demo``."""

from __future__ import annotations

import argparse
import codecs
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import Any, TextIO

from ..errors import MybinlogError
from ..protocol import Event, event_to_json, event_to_text, events_to_jsonl, events_to_jsonl_utf8
from ..source import iter_binlog_events
from ._common import ArgumentParser, add_source_arguments, exit_code, source_dsn

__all__ = ["main"]

logger = logging.getLogger("mybinlog.cli")


def _version() -> str:
    """``mybinlog 0.1.0 (compiled core (...))`` or ``mybinlog 0.1.0 (pure Python (why))``."""
    import mybinlog

    from ..protocol import describe

    return f"mybinlog {mybinlog.__version__} ({describe()})"


def _build_parser(plugins: bool = True) -> argparse.ArgumentParser:
    """The argument parser; ``plugins=False`` leaves out the subcommands living in their own modules (their
    imports cost start-up time that ``mybinlog dump`` does not need)."""
    parser = ArgumentParser(prog="mybinlog", description="MySQL/MariaDB change data capture tools.")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)")
    parser.add_argument(
        "--version",
        action="version",
        version=_version(),
        help="print the version and which implementation decodes rows (compiled core or pure Python), and exit",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    dump = sub.add_parser(
        "dump",
        help="print the events of binlog files or of a live server",
        description="Decode binlog events from files (--file) or a server (--dsn) and print them, one per line "
        "(--format jsonl) or readably (default). The JSON Lines format is documented in docs/dump-format.md.",
    )
    src = dump.add_mutually_exclusive_group(required=True)
    src.add_argument("--file", nargs="+", metavar="PATH", help="binlog file(s), read in the order given")
    src.add_argument(
        "--dsn",
        action="append",
        metavar="URL",
        help="mysql://user@host:port (repeatable, later ones may be host:port, or a list db1:3306,db2:3306: the "
        "servers of one topology, read in turn when one fails); the password from --password-file, "
        "MYBINLOG_PASSWORD_FILE or "
        "MYBINLOG_PASSWORD (in the URL, `ps` shows it to every user)",
    )
    add_source_arguments(dump)
    dump.add_argument("--format", choices=("text", "jsonl"), default="text", help="output format (default text)")
    dump.add_argument("--follow-rotate", action="store_true", help="with --file: continue into the next file")
    start = dump.add_mutually_exclusive_group()
    start.add_argument("--gtid", metavar="SET", help="with --dsn: start after this executed GTID set")
    start.add_argument("--binlog-file", metavar="NAME", help="with --dsn: start at this binlog file")
    start.add_argument("--from-beginning", action="store_true", help="with --dsn: start at the oldest binlog")
    dump.add_argument("--position", type=int, default=4, help="offset in the first file (default 4)")
    dump.add_argument("--stop-at-end", action="store_true", help="with --dsn: stop at the current end")
    dump.add_argument("--server-id", type=int, default=None, help="with --dsn: replica server id (default random)")
    dump.add_argument("--no-verify-checksum", action="store_true", help="do not verify event CRC32 checksums")
    dump.add_argument("--limit", type=int, default=None, metavar="N", help="stop after N events")

    demo = sub.add_parser(
        "demo",
        help="replicate a throwaway local MariaDB, with a writer running, into embedded ClickHouse (zero setup)",
        description="Start a private MariaDB server in a temporary directory, load a table, keep a writer running, "
        "take the initial copy with the Spark snapshot, stream the binlog into embedded ClickHouse (chdb), show "
        "the status rows and verify the copy. --stream prints the decoded change stream instead. Needs mariadbd "
        "and Java (scripts/setup.sh installs them).",
    )
    demo.add_argument("--rows", type=int, default=50_000, help="orders loaded before the snapshot (default 50000)")
    demo.add_argument("--seconds", type=float, default=10.0, help="how long the writer runs (default 10)")
    demo.add_argument("--target-dir", help="keep the embedded ClickHouse data here (default: a temporary dir)")
    demo.add_argument("--stream", action="store_true", help="print the decoded change stream instead")
    demo.add_argument("--transactions", type=int, default=20, help="with --stream: transactions to write")
    demo.add_argument("--format", choices=("text", "jsonl"), default="text", help="with --stream: output format")

    # the other commands, one module each (not imported for dump and demo: they start faster without them)
    if plugins:
        from . import _replicate, _snapshot, _status, _verify

        for module in (_status, _replicate, _verify, _snapshot):
            module.register(sub)
    return parser


def _render(fmt: str) -> Callable[[Event], str]:
    return event_to_json if fmt == "jsonl" else event_to_text


def _utf8_buffer(out: TextIO) -> Any:
    """The binary buffer under ``out`` when ``out`` writes UTF-8 (JSON Lines then go there as bytes, without a
    str in between), or None."""
    buffer = getattr(out, "buffer", None)
    encoding = getattr(out, "encoding", None)
    if buffer is None or events_to_jsonl_utf8 is None or not isinstance(encoding, str):
        return None
    try:
        if codecs.lookup(encoding).name != "utf-8":
            return None
    except LookupError:
        return None
    return buffer


def _write_bytes(binary: Any, data: bytes) -> None:
    """All of ``data``: an unbuffered binary layer (``python -u``) may take only part of it at once."""
    written = binary.write(data)
    if written is not None and written < len(data):
        view = memoryview(data)
        while written < len(data):
            n = binary.write(view[written:])
            written += n if n is not None else len(data) - written


def _write_events(events: list[Event], fmt: str, out: TextIO, binary: Any = None) -> None:
    """Write the events, one line each: a JSON Lines chunk is rendered in one call (by the compiled renderer
    when it is there; as UTF-8 bytes into ``binary``, the buffer under ``out``, when given). If rendering fails
    (a row image that does not decode), the events before the failing one are written before the error
    propagates, as when each event is rendered on its own."""
    data: bytes | None = None
    try:
        if fmt == "jsonl":
            if binary is not None and events_to_jsonl_utf8 is not None:
                data = events_to_jsonl_utf8(events)  # None: a lone surrogate, for the text layer (or its error)
            text = events_to_jsonl(events) if data is None else ""
        else:
            text = "\n".join(map(event_to_text, events)) + "\n"
    except Exception:  # noqa: BLE001 - rendered again one by one, which raises the error at the failing event
        render = _render(fmt)
        lines: list[str] = []
        try:
            for event in events:
                lines.append(render(event))  # noqa: PERF401 - the lines before an error are kept
        finally:
            if lines:
                out.write("\n".join(lines) + "\n")
        return  # rendered one by one without an error
    if data is not None:
        out.flush()  # anything the text layer holds goes first
        _write_bytes(binary, data)
        if getattr(out, "line_buffering", False):
            binary.flush()
    else:
        out.write(text)


def _write_all(events: Iterable[Event], fmt: str, out: TextIO, limit: int | None) -> int:
    n = 0
    buf: list[Event] = []
    binary = _utf8_buffer(out) if fmt == "jsonl" else None
    try:
        for event in events:
            buf.append(event)
            n += 1
            if len(buf) >= 512:
                _write_events(buf, fmt, out, binary)
                buf.clear()
            if limit is not None and n >= limit:
                break
    finally:
        # the events before a decode error are printed before the error is reported
        if buf:
            _write_events(buf, fmt, out, binary)
    return n


async def _dump_server(args: argparse.Namespace, out: TextIO) -> int:
    from ..source import BinlogStream

    dsn = source_dsn(args, attr="dsn", option="--dsn")
    stream = BinlogStream(
        dsn,
        gtid_set=args.gtid,
        binlog_file=args.binlog_file,
        position=args.position,
        from_beginning=args.from_beginning,
        blocking=not args.stop_at_end,
        server_id=args.server_id,
        verify_checksum=not args.no_verify_checksum,
        require_full_row_image=False,  # MINIMAL/NOBLOB images print absent columns as such (docs/dump-format.md)
    )
    render = _render(args.format)
    n = 0
    buf: list[str] = []
    try:
        async with stream:
            async for event in stream:
                buf.append(render(event))
                n += 1
                if args.limit is not None and n >= args.limit:
                    break
                # write in chunks while a batch is being handed out; flush whenever the stream is about to
                # wait for the server, so that a live tail shows every event at once
                caught_up = not stream.has_pending
                if caught_up or len(buf) >= 512:
                    out.write("\n".join(buf) + "\n")
                    buf.clear()
                    if caught_up:
                        out.flush()
    finally:
        if buf:
            out.write("\n".join(buf) + "\n")
        out.flush()
    return n


def _run_async(coro_factory: Callable[[], Coroutine[Any, Any, object]]) -> None:
    import asyncio  # here, not at the top: `mybinlog dump --file` starts faster without it

    async def runner() -> None:
        task = asyncio.ensure_future(coro_factory())
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(runner())


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    # `dump`, `demo` and `--version` need no plugin subcommand (their imports cost start-up time)
    parser = _build_parser(plugins=command not in ("dump", "demo") and not (command is None and "--version" in argv))
    args = parser.parse_args(argv)
    level = logging.WARNING - 10 * min(args.verbose, 2)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    # progress lines (the initial load: rows, rate, ETA) are for people waiting: shown without -v
    logging.getLogger("mybinlog.progress").setLevel(min(level, logging.INFO))
    out = sys.stdout
    try:
        if args.command == "dump":
            if args.file:
                if args.gtid or args.binlog_file or args.from_beginning or args.stop_at_end:
                    parser.error("--gtid/--binlog-file/--from-beginning/--stop-at-end go with --dsn, not --file")
                if args.password_file:
                    parser.error("--password-file goes with --dsn, not --file")
                events = iter_binlog_events(
                    args.file,
                    verify_checksum=not args.no_verify_checksum,
                    follow_rotate=args.follow_rotate,
                    start=args.position,
                )
                _write_all(events, args.format, out, args.limit)
            else:
                _run_async(lambda: _dump_server(args, out))
        elif getattr(args, "func", None) is not None:
            rc = int(args.func(args))
            out.flush()
            return rc
        elif args.command == "demo":
            if args.stream:
                from ._demo import run_stream_demo

                _run_async(lambda: run_stream_demo(args.transactions, args.format, out))
            else:
                import asyncio

                from ._demo import run_demo

                rc = asyncio.run(run_demo(args.rows, args.seconds, args.target_dir, out))
                out.flush()
                return rc
        out.flush()
    except MybinlogError as exc:
        print(f"mybinlog: error: {exc}", file=sys.stderr)
        return exit_code(exc)  # 2 bad input, 75 unreachable (run again later), 1 the rest (docs/exit-codes.md)
    except BrokenPipeError:
        # output piped into `head` and closed: not an error
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        return 0
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
