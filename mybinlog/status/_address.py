"""Status addresses: where a consuming process serves its status and where ``mybinlog status --from`` reads it."""

from __future__ import annotations

import urllib.parse

from ..errors import ConfigurationError

__all__ = ["parse_status_address"]


def parse_status_address(address: str) -> tuple[str, str, int]:
    """(kind, path or host, port): ``unix:PATH``, ``http://HOST:PORT``, ``file:PATH``, or a bare path (a
    ``.json`` path is a file, anything else a unix socket)."""
    text = address.strip()
    if not text:
        raise ConfigurationError("a status address is needed: unix:/path.sock, http://127.0.0.1:PORT or file:/path")
    if text.startswith("unix:"):
        path = text[5:]
        if path.startswith("//"):
            path = path[2:]
        if not path:
            raise ConfigurationError(f"status address {address!r}: unix: needs a socket path")
        return "unix", path, 0
    if text.startswith("file:"):
        path = text[5:]
        if path.startswith("//"):
            path = path[2:]
        if not path:
            raise ConfigurationError(f"status address {address!r}: file: needs a path")
        return "file", path, 0
    if "://" in text:
        parts = urllib.parse.urlsplit(text)
        if parts.scheme != "http":
            raise ConfigurationError(
                f"status address {address!r}: use unix:/path.sock, http://HOST:PORT or file:/path.json"
            )
        try:
            port = parts.port
        except ValueError as exc:
            raise ConfigurationError(f"status address {address!r}: bad port") from exc
        if port is None:
            raise ConfigurationError(f"status address {address!r}: give a port (0 picks a free one when serving)")
        return "http", parts.hostname or "127.0.0.1", port
    return ("file" if text.endswith(".json") else "unix"), text, 0
