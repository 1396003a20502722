"""Which implementation of the decoder's hot path runs: the compiled core or pure Python.

The compiled core (``mybinlog/protocol/_speedups.c`` and its ``_sp_*.c`` files, built by ``pip install`` when a C
compiler is present) is optional: without it, or with ``MYBINLOG_NO_EXTENSIONS=1`` in the environment when mybinlog
is imported, the pure-Python code runs, with the same results and the same errors (docs/compiled-core.md).
:func:`implementation` says which one runs; ``mybinlog --version`` prints it.
"""

from __future__ import annotations

import contextlib
import os
from types import ModuleType

__all__ = ["implementation", "jsonl_speedups", "speedups"]

speedups: ModuleType | None = None
"""The compiled module, or None when the pure-Python code runs."""

_why_not: str | None = None

if os.environ.get("MYBINLOG_NO_EXTENSIONS", "").strip() not in ("", "0"):
    _why_not = "MYBINLOG_NO_EXTENSIONS is set"
else:
    try:
        from . import _speedups as speedups  # type: ignore[no-redef]
    except ImportError as exc:  # not built (no C compiler at install time) or built for another Python
        _why_not = f"the extension is not installed ({exc})"


jsonl_speedups: ModuleType | None = None
"""The compiled JSON Lines renderer (``mybinlog/protocol/_jsonl.c``), or None when the pure-Python one runs."""

if os.environ.get("MYBINLOG_NO_EXTENSIONS", "").strip() in ("", "0"):
    # built without it (or an older build): the pure-Python renderer runs
    with contextlib.suppress(ImportError):
        from . import _jsonl_speedups as jsonl_speedups  # type: ignore[no-redef]


def implementation() -> str:
    """``"compiled"`` when the C extension decodes rows, ``"python"`` when the pure-Python code does."""
    return "compiled" if speedups is not None else "python"


def describe() -> str:
    """One line for ``mybinlog --version``: which implementation runs, and why the compiled one does not."""
    if speedups is not None:
        return "compiled core (C extension mybinlog.protocol._speedups)"
    return f"pure Python ({_why_not})"
