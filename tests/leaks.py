"""Leaks of our own code fail the test; a third-party library's own leaks are tolerated (docs/testing.md, "Leaks").

pyproject.toml turns every warning into an error, so a ``ResourceWarning`` raised by a finalizer (an unclosed
socket, transport, file, event loop or subprocess), a coroutine never awaited, and any other exception raised
where nobody can catch it reach ``sys.unraisablehook``, which pytest turns into a
``PytestUnraisableExceptionWarning`` that fails the test. Python reports them where the garbage collector happened
to run, not where the object was made, so a warning filter by module cannot tell whose leak it is. :func:`install`
wraps pytest's hook and asks where the leaked object came from instead. An unraisable is dropped only when:

- it is about a socket (or a transport holding one) that a third-party package (a file under site-packages)
  created, the first frame outside the standard library when ``socket.socket`` was constructed, and either no
  code of ours (``mybinlog/``, ``tests/``) was on that stack (the library's own threads, pools and callbacks) or
  the socket never got a peer (pymysql 1.2.4 drops the socket of a refused ``connect()`` without closing it: our
  start-up polls of a server that is not ready yet hit it). A connected socket made at our request belongs to a
  connection we held and did not close: ours;
- or it is in :data:`TOLERATED` (empty today), a named third-party object with the reason beside it.

A task or future whose exception nobody retrieved is only logged by asyncio; :func:`install` makes the ones whose
coroutine or exception traceback is in our code unraisables too, so they fail the test like the rest.

Everything else fails the test: sockets of ours, files, event loops, subprocesses, aiohttp sessions and
coroutines never awaited (whoever wrote the class, leaving it open was the caller's mistake), and anything whose
origin cannot be told.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import sysconfig
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

_STDLIB = tuple(str(Path(p).resolve()) for p in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]})
_OURS = tuple(str(Path(__file__).resolve().parents[1] / d) + "/" for d in ("mybinlog", "tests"))

#: where installed packages live; tests/unit/test_leaks.py adds a directory of its own to play one
THIRD_PARTY_ROOTS = [
    str(Path(p).resolve()) for p in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
]
#: extra roots counted as ours (tests/unit/test_leaks.py adds one to play mybinlog)
OUR_ROOTS: list[str] = []
#: (exception type name, qualified name of the object's class or function) -> why a third-party leak is tolerated
TOLERATED: dict[tuple[str, str], str] = {}


class Origin(NamedTuple):
    maker: str  # file of the first frame outside the standard library, "" when there was none
    ours_on_stack: bool  # code of ours anywhere on the stack that made it


#: id of a socket -> where it was made. Not a WeakKeyDictionary: the collector clears weak references before it
#: runs finalizers, so a socket in a reference cycle could no longer be looked up when it warns. Each new socket
#: overwrites the entry of a dead one with the same id.
_socket_origins: dict[int, Origin] = {}
#: unraisables dropped as third-party (for tests/unit/test_leaks.py and for debugging)
tolerated: list[str] = []


def _resolved(filename: str) -> str:
    return str(Path(filename).resolve())


def is_third_party(filename: str) -> bool:
    """True for a file of an installed package (site-packages)."""
    return _resolved(filename).startswith(tuple(THIRD_PARTY_ROOTS))


def is_ours(filename: str) -> bool:
    """True for a file of the package or the tests."""
    return _resolved(filename).startswith(_OURS + tuple(OUR_ROOTS))


def _is_stdlib(filename: str) -> bool:
    if filename.startswith("<"):  # <frozen ...>, <string>
        return True
    return _resolved(filename).startswith(_STDLIB) and not is_third_party(filename)


def _origin_of_new_socket(frame: types.FrameType | None) -> Origin:
    if frame is not None and frame.f_code is socket.socket.accept.__code__:
        listener = frame.f_locals.get("self")  # accepted: it belongs to whoever made the listening socket
        found = _socket_origins.get(id(listener)) if isinstance(listener, socket.socket) else None
        if found is not None:
            return found
    maker = ""
    ours = False
    while frame is not None:
        filename = frame.f_code.co_filename
        if not maker and not _is_stdlib(filename):
            maker = filename
        ours = ours or is_ours(filename)
        frame = frame.f_back
    return Origin(maker, ours)


def _has_peer(sock: socket.socket) -> bool:
    try:
        sock.getpeername()
    except OSError:
        return False
    return True


def _subjects(unraisable: Any) -> list[Any]:
    """What an unraisable is about, most specific first: the ``self`` of each frame of its traceback, innermost
    first (the transport whose ``__del__`` warned), then its object (that ``__del__``, or the socket itself)."""
    if not isinstance(unraisable.object, (types.FunctionType, types.MethodType)):
        return [unraisable.object]  # a C finalizer (a socket's): the traceback is wherever the collector ran
    owners = []
    tb = unraisable.exc_traceback
    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        if owner is not None:
            owners.append(owner)
        tb = tb.tb_next
    return [*reversed(owners), unraisable.object]


def _socket_of(subject: Any) -> socket.socket | None:
    """The socket under a socket, an asyncio transport or a stream writer."""
    for _ in range(3):
        if isinstance(subject, socket.socket):
            return subject
        subject = getattr(subject, "_sock", None) or getattr(subject, "_transport", None)
    return None


def _qualname(obj: Any) -> str:
    if isinstance(obj, (types.FunctionType, types.MethodType, types.BuiltinFunctionType)):
        return f"{obj.__module__}.{obj.__qualname__}"
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def third_party_reason(unraisable: Any) -> str | None:
    """Why an unraisable is a third-party library's own leak, or None when it is (or may be) ours."""
    name = unraisable.exc_type.__name__
    for subject in _subjects(unraisable):
        reason = TOLERATED.get((name, _qualname(subject)))
        if reason is not None:
            return reason
        sock = _socket_of(subject)
        if isinstance(sock, socket.socket):
            made = _socket_origins.get(id(sock))
            if made is None or not is_third_party(made.maker):
                return None
            if not made.ours_on_stack:
                return f"a socket {made.maker} made on its own"
            if not _has_peer(sock):
                return f"a socket {made.maker} made and never connected"
            return None
    return None


def _lost_by_us(context: dict[str, Any]) -> bool:
    """A task or future of ours whose exception nobody retrieved: its coroutine, or a frame of its exception, is
    in our code."""
    exception = context.get("exception")
    future = context.get("future")
    if exception is None or future is None or "never retrieved" not in str(context.get("message", "")):
        return False
    coro = future.get_coro() if isinstance(future, asyncio.Task) else None
    code = getattr(coro, "cr_code", None)
    if isinstance(code, types.CodeType) and is_ours(code.co_filename):
        return True
    tb = exception.__traceback__
    while tb is not None:
        if is_ours(tb.tb_frame.f_code.co_filename):
            return True
        tb = tb.tb_next
    return False


def install() -> Callable[[], None]:
    """Record where sockets are made and filter the unraisables pytest sees; returns the function that undoes it.

    Call it after pytest's own unraisable hook is in place (a ``trylast`` ``pytest_configure``)."""
    original_init = socket.socket.__init__

    def init(self: socket.socket, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        _socket_origins[id(self)] = _origin_of_new_socket(sys._getframe(1))

    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        reason = third_party_reason(unraisable)
        if reason is not None:
            tolerated.append(f"{unraisable.exc_type.__name__} in {unraisable.object!r}: {reason}")
            return
        previous(unraisable)

    original_handler = asyncio.BaseEventLoop.default_exception_handler

    def default_exception_handler(self: asyncio.BaseEventLoop, context: dict[str, Any]) -> None:
        original_handler(self, context)
        if _lost_by_us(context):  # logged and forgotten by asyncio: report it as the unraisable it is
            exception = context["exception"]
            sys.unraisablehook(
                types.SimpleNamespace(  # type: ignore[arg-type]
                    exc_type=type(exception),
                    exc_value=exception,
                    exc_traceback=exception.__traceback__,
                    err_msg=context["message"],
                    object=context["future"],
                )
            )

    socket.socket.__init__ = init  # type: ignore[method-assign]
    sys.unraisablehook = hook
    asyncio.BaseEventLoop.default_exception_handler = default_exception_handler  # type: ignore[method-assign]

    def uninstall() -> None:
        socket.socket.__init__ = original_init  # type: ignore[method-assign]
        asyncio.BaseEventLoop.default_exception_handler = original_handler  # type: ignore[method-assign]
        if sys.unraisablehook is hook:
            sys.unraisablehook = previous

    return uninstall
