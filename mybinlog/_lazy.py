"""Names of a package imported on first use (PEP 562), so that importing the package stays cheap.

A package lists each lazy name once, under the module that defines it, and gets its module ``__getattr__`` and
``__dir__`` and the list of the names (for its ``__all__``)::

    LAZY, __getattr__, __dir__ = lazy_names(__name__, {".sharing": ("Binlog", "BinlogClient")})

Type checkers do not run ``__getattr__``: the package also imports the names under ``if TYPE_CHECKING:`` as
``from .sharing import Binlog as Binlog`` (the explicit re-export mypy --strict wants), and
tests/unit/test_public_api.py checks that both lists agree.

Layer: imports nothing of mybinlog.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, where: Mapping[str, Sequence[str]]
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """(the names, the module ``__getattr__``, the module ``__dir__``) of ``package``, whose names in ``where``
    (module, relative to ``package`` -> the names it defines) are imported when first used."""
    # absolute module names, resolved once: a module already imported is taken from sys.modules without a call
    # into importlib (`import mybinlog` resolves some sixty names of mybinlog.protocol this way)
    resolved = {module: importlib.util.resolve_name(module, package) for module in where}
    modules = {name: resolved[module] for module, names in where.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        loaded = sys.modules.get(module)
        value = getattr(loaded if loaded is not None else importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # the next lookup does not come here
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(modules))

    return list(modules), __getattr__, __dir__
