"""The only module that touches asyncmy's internals: taking the socket over when the binlog dump starts.

asyncmy does the connection phase (handshake, authentication plugins, TLS) and the control queries through its
public API (``asyncmy.connect``, ``Connection.cursor`` with ``Cursor``/``SSCursor``, ``Connection.ensure_closed``,
``Connection.close``, ``asyncmy.errors``). It has no public way to send an arbitrary command or to read a raw
packet stream, so when the dump starts mybinlog takes the connection's asyncio transport over: its own protocol
(:class:`~mybinlog.source._wire.WireProtocol`) replaces asyncmy's with ``transport.set_protocol()`` (public
asyncio API), and from then on bytes flow only between the transport and the sans-IO
:class:`~mybinlog.protocol._packets.PacketFramer`. The dump command is written with ``transport.write``.

asyncmy internals used (exactly these, checked by :func:`check_asyncmy_compat`, pinned by
``tests/unit/source/test_asyncmy_compat.py``):

- ``Connection._transport``: the asyncio transport of the authenticated connection (after asyncmy's in-handshake
  TLS upgrade, the TLS transport). Read once; only public ``asyncio.Transport`` methods are called on it.
- ``Connection._proto.buffer``, ``.pos``, ``.length``: asyncmy's receive buffer, read once at the hand-over.
  ``buffer[pos:length]`` are bytes asyncmy received but did not consume (normally none: every query result was
  read whole; an unsolicited packet such as MariaDB's shutdown error could be there). They go to the framer
  first, so nothing the server sent is dropped.

Nothing else of asyncmy's is touched: no private methods, no sequence ids (the dump command starts a new
exchange at sequence id 0), no patched callbacks. Supported: asyncmy ``SUPPORTED_ASYNCMY`` (pyproject.toml pins
the same range). asyncmy's 0.2.x patch releases have rewritten its receive path before, so a new release is
tested before the range is widened.
"""

from __future__ import annotations

import asyncio
import logging
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from ..errors import ConfigurationError

__all__ = [
    "ASYNCMY_VERSION",
    "SUPPORTED_ASYNCMY",
    "check_asyncmy_compat",
    "take_over_transport",
]

logger = logging.getLogger("mybinlog.transport")

try:
    ASYNCMY_VERSION: str = version("asyncmy")
except PackageNotFoundError:  # pragma: no cover - asyncmy imported from a source tree
    ASYNCMY_VERSION = "unknown"

SUPPORTED_ASYNCMY = ">=0.2.18,<0.2.19"
"""The asyncmy versions this module is tested with (the same range as the dependency in pyproject.toml)."""
_SUPPORTED_RANGE = ((0, 2, 18), (0, 2, 19))  # [low, high)

_CONNECTION_ATTRS = ("_transport", "_proto")
_RECEIVE_BUFFER_ATTRS = ("buffer", "pos", "length")
_checked = False


def _incompatible(detail: str) -> ConfigurationError:
    return ConfigurationError(
        f"asyncmy {ASYNCMY_VERSION} is not compatible with this mybinlog: {detail}. mybinlog takes the socket of "
        f"an asyncmy connection over when the binlog dump starts (see mybinlog/source/_asyncmy.py) and supports "
        f"asyncmy {SUPPORTED_ASYNCMY}: pip install 'asyncmy{SUPPORTED_ASYNCMY}', or upgrade mybinlog"
    )


def _version_tuple(text: str) -> tuple[int, ...] | None:
    parts = []
    for part in text.split("."):
        digits = ""
        for char in part:
            if not char.isdigit():
                break
            digits += char
        if not digits:
            break
        parts.append(int(digits))
        if digits != part:
            break
    return tuple(parts) if parts else None


def check_asyncmy_compat() -> None:
    """Verify that the asyncmy internals this module uses exist.

    Raises :class:`ConfigurationError` naming the installed and the supported asyncmy versions otherwise. An
    installed version outside :data:`SUPPORTED_ASYNCMY` whose internals still look right is logged as a warning
    (once). Cheap after the first successful call.
    """
    global _checked
    if _checked:
        return
    try:
        from asyncmy import connection as connection_module
    except ImportError as exc:  # pragma: no cover - asyncmy is a hard dependency
        raise _incompatible(f"asyncmy.connection cannot be imported ({exc})") from exc
    conn_cls = getattr(connection_module, "Connection", None)
    proto_cls = getattr(connection_module, "_MySQLProtocol", None)
    if conn_cls is None or proto_cls is None:
        raise _incompatible("asyncmy.connection has no Connection or _MySQLProtocol class")
    for attr in _CONNECTION_ATTRS:
        if not hasattr(conn_cls, attr):
            raise _incompatible(f"Connection.{attr} is missing")
    for attr in _RECEIVE_BUFFER_ATTRS:
        if not hasattr(proto_cls, attr):
            raise _incompatible(f"the receive buffer _MySQLProtocol.{attr} is missing")
    found = _version_tuple(ASYNCMY_VERSION)
    low, high = _SUPPORTED_RANGE
    if found is None or not low <= found < high:
        logger.warning(
            "asyncmy %s is outside the versions mybinlog is tested with (%s); its internals look compatible, but "
            "if binlog streaming fails, install a supported asyncmy",
            ASYNCMY_VERSION,
            SUPPORTED_ASYNCMY,
        )
    _checked = True


def take_over_transport(conn: Any) -> tuple[asyncio.Transport, bytes] | None:
    """The asyncio transport of an authenticated asyncmy connection, and the bytes asyncmy received but did not
    consume; ``None`` when the connection is closed or closing.

    The caller must install its protocol (``transport.set_protocol``) before it awaits anything, so that no
    byte reaches asyncmy's protocol in between; asyncmy must not use the connection afterwards (closing it with
    ``Connection.close()`` is fine: that closes the transport).
    """
    transport = conn._transport
    if transport is None or transport.is_closing():
        return None
    if not isinstance(transport, asyncio.Transport):
        raise _incompatible(f"Connection._transport is a {type(transport).__name__}, not an asyncio.Transport")
    proto = conn._proto
    leftover = b""
    if proto is not None:
        pos, length = proto.pos, proto.length
        if length > pos:
            leftover = bytes(memoryview(proto.buffer)[pos:length])
    return transport, leftover
