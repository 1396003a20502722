"""Small text forms shared by several layers (no IO, imports nothing of mybinlog)."""

from __future__ import annotations

__all__ = ["duration"]


def duration(seconds: float) -> str:
    """A duration for progress lines: ``45s``, ``12m05s``, ``3h07m`` (rounded to the second, never negative)."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
