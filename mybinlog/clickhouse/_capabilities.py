"""What one ClickHouse server can do, decided from its version: :class:`Capabilities` and the first version of
each feature (:data:`FEATURE_VERSIONS`, with their sources in docs/targets.md)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields

from ..errors import TargetError

__all__ = ["FEATURE_VERSIONS", "Capabilities"]


#: First ClickHouse version with each feature, usable without experimental settings. Sources: the ClickHouse
#: pull requests and changelogs named in docs/targets.md; checked against 18.16.1 (no feature) and chdb.
FEATURE_VERSIONS: Mapping[str, tuple[int, int]] = {
    "alter_if_exists": (19, 4),  # ADD COLUMN IF NOT EXISTS / DROP COLUMN IF EXISTS (#3900 in 19.1; fixed 19.4)
    "low_cardinality": (19, 3),  # LowCardinality without allow_experimental_low_cardinality_type (#4323)
    "datetime64": (20, 1),  # DateTime64(p) (#7170)
    "mutations_sync": (20, 1),  # setting mutations_sync (#8237)
    "rename_column": (20, 4),  # ALTER TABLE ... RENAME COLUMN (#9948)
    "nullable_key": (20, 7),  # MergeTree SETTINGS allow_nullable_key = 1 (#12433)
    "decimal256": (21, 6),  # Decimal(p > 38): 20.8 behind allow_experimental_bigint_types, GA 21.6 (#23631)
    "date32": (21, 9),  # Date32
    "bool_type": (21, 12),  # Bool
    "insert_deduplication_token": (22, 2),  # + non_replicated_deduplication_window (21.5, #22514) (#32304)
    "replacing_is_deleted": (23, 2),  # ReplacingMergeTree(ver, is_deleted) (#41005)
    "lightweight_delete": (23, 3),  # DELETE FROM without allow_experimental_lightweight_delete (22.8 experimental)
    "json_type": (25, 3),  # the new JSON type GA (Object('json') 22.3 and JSON 24.8 were experimental)
}

_VERSION_RE = re.compile(r"\s*(\d+)((?:\.\d+)*)")


@dataclass(frozen=True)
class Capabilities:
    """What one ClickHouse server can do, decided from its version (see :data:`FEATURE_VERSIONS`)."""

    version: tuple[int, ...]
    datetime64: bool
    date32: bool
    bool_type: bool
    json_type: bool
    decimal256: bool
    replacing_is_deleted: bool
    insert_deduplication_token: bool
    lightweight_delete: bool
    alter_if_exists: bool
    mutations_sync: bool
    low_cardinality: bool
    rename_column: bool
    nullable_key: bool

    @classmethod
    def from_version(cls, version: str) -> Capabilities:
        """From ``SELECT version()`` text such as ``"18.16.1"`` or ``"26.9.2.1"``."""
        match = _VERSION_RE.match(version)
        if match is None:
            raise TargetError(f"cannot parse the ClickHouse version {version!r}")
        numbers = (int(match.group(1)), *(int(part) for part in match.group(2).split(".")[1:]))
        if len(numbers) < 2:
            numbers = (*numbers, 0)
        major_minor = numbers[:2]
        flags = {name: major_minor >= first for name, first in FEATURE_VERSIONS.items()}
        return cls(version=numbers, **flags)

    @property
    def version_text(self) -> str:
        return ".".join(str(n) for n in self.version)

    def __str__(self) -> str:
        enabled = [f.name for f in fields(self) if f.name != "version" and getattr(self, f.name)]
        return f"ClickHouse {self.version_text} ({', '.join(enabled) or 'no optional features'})"
