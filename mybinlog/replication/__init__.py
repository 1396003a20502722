"""Replication into ClickHouse: see docs/replication.md."""

from __future__ import annotations

__all__: list[str] = []
