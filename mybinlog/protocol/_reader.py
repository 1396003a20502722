"""Tiny helpers for reading protocol integers from bytes (sans-IO)."""

from __future__ import annotations

from ..errors import DecodeError, TruncatedError

__all__ = ["read_packed_int"]


def read_packed_int(buf: bytes, pos: int) -> tuple[int, int]:
    """Read a MySQL length-encoded integer at ``pos``; returns (value, new_pos).

    0xfb (SQL NULL in result sets) is not valid where this is used (binlog metadata) and raises DecodeError.
    """
    try:
        first = buf[pos]
    except IndexError:
        raise TruncatedError(f"length-encoded integer expected at byte {pos}, input ends there") from None
    if first < 0xFB:
        return first, pos + 1
    if first == 0xFC:
        size = 2
    elif first == 0xFD:
        size = 3
    elif first == 0xFE:
        size = 8
    else:
        raise DecodeError(f"invalid length-encoded integer prefix 0x{first:02x} at byte {pos}")
    end = pos + 1 + size
    if end > len(buf):
        raise TruncatedError(f"length-encoded integer at byte {pos} needs {size} more bytes than the input has")
    return int.from_bytes(buf[pos + 1 : end], "little"), end
