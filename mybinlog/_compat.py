"""Old module paths, for one release: ``import mybinlog._sharing`` (and the other flat modules of 0.1) still works,
with a DeprecationWarning naming the new place (docs/architecture.md). The modules were private, but examples and
users' tests imported some of them; an import hook serves them instead of twenty alias files in the package.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import warnings
from types import ModuleType
from typing import Any

__all__ = ["MOVED", "install"]

MOVED: dict[str, str] = {
    "mybinlog._exceptions": "mybinlog.errors",
    "mybinlog._gtid": "mybinlog.protocol._gtid",
    "mybinlog._position": "mybinlog.protocol._position",
    "mybinlog._format": "mybinlog.protocol._format",
    "mybinlog._protocol": "mybinlog.protocol",
    "mybinlog._protocol._constants": "mybinlog.protocol._constants",
    "mybinlog._protocol._decoder": "mybinlog.protocol._decoder",
    "mybinlog._protocol._events": "mybinlog.protocol._events",
    "mybinlog._protocol._jsonb": "mybinlog.protocol._jsonb",
    "mybinlog._protocol._table": "mybinlog.protocol._table",
    "mybinlog._protocol._values": "mybinlog.protocol._values",
    "mybinlog._dsn": "mybinlog.source._dsn",
    "mybinlog._transport": "mybinlog.source._connection",
    "mybinlog._stream": "mybinlog.source._stream",
    "mybinlog._files": "mybinlog.source._files",
    "mybinlog._sharing": "mybinlog.sharing",
    "mybinlog._sandbox": "mybinlog.testing",
    "mybinlog._chserver": "mybinlog.testing",
    "mybinlog._cli_common": "mybinlog.cli._common",
}
"""Old module -> the module (or package) that has its names now."""


class _Alias:  # an importlib loader (duck-typed: importlib.abc costs 8 ms of every start-up)
    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(
            f"{spec.name} moved to {self.new} (mybinlog 0.2; the old path goes away in the next release)",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(self.new)

    def exec_module(self, module: ModuleType) -> None:
        return None  # the new module is already executed


class _Finder:  # a meta path finder (duck-typed, as _Alias)
    def find_spec(self, name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(name)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(name, _Alias(new))  # type: ignore[arg-type]


def install() -> None:
    """Serve the old paths (idempotent)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())  # before the path finder, which would load a second copy
