"""Snapshot and backfill on Spark: see docs/snapshot.md."""

from __future__ import annotations

__all__: list[str] = []
