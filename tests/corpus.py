"""Where the real binlog corpus lives, usable at collection time (``pytest.mark.parametrize``).

The corpus (``binlogs/`` and ``vectors.jsonl``, described in its SOURCES.md) is found through the
environment variable ``MYBINLOG_CORPUS``, defaulting to ``<repo>/../shared/testdata/binlog-corpus``. It is
never copied into the repository. Tests that need it use the ``corpus_dir`` fixture (fails under CI=true
when missing, skips otherwise); module-level parametrization can call :func:`load_vectors`, which returns
``[]`` when the corpus is absent: also request the ``corpus_dir`` fixture in such tests, so an absent corpus
is not a silent pass.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

__all__ = [
    "REPO_ROOT",
    "DEFAULT_CORPUS",
    "binlog_files",
    "corpus_dir",
    "load_vectors",
    "missing_reason",
    "vectors_by_kind",
]

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO_ROOT.parent / "shared" / "testdata" / "binlog-corpus"


def _configured_path() -> Path:
    env = os.environ.get("MYBINLOG_CORPUS")
    return Path(env).expanduser().absolute() if env else DEFAULT_CORPUS


def corpus_dir() -> Path | None:
    """The corpus directory, or ``None`` when it does not exist or has no vectors.jsonl."""
    path = _configured_path()
    if path.is_dir() and (path / "vectors.jsonl").is_file():
        return path
    return None


def missing_reason() -> str:
    """Why :func:`corpus_dir` returned ``None``, with the fix."""
    return (
        f"binlog corpus not found at {_configured_path()} (needs vectors.jsonl and binlogs/): "
        "set MYBINLOG_CORPUS to the binlog-corpus directory"
    )


@functools.cache
def _load(path: Path) -> tuple[dict[str, Any], ...]:
    records = []
    with (path / "vectors.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                records.append(json.loads(line))
    return tuple(records)


def load_vectors() -> list[dict[str, Any]]:
    """Every record of vectors.jsonl in file order (``[]`` when the corpus is absent)."""
    path = corpus_dir()
    return list(_load(path)) if path is not None else []


def vectors_by_kind(*kinds: str) -> list[dict[str, Any]]:
    """Records whose ``kind`` is one of ``kinds`` (table_map, write_rows, decimal, time, gtid, ...)."""
    return [record for record in load_vectors() if record.get("kind") in kinds]


def binlog_files() -> list[Path]:
    """The files under ``binlogs/``, sorted by name (``[]`` when the corpus is absent)."""
    path = corpus_dir()
    if path is None or not (path / "binlogs").is_dir():
        return []
    return sorted(p for p in (path / "binlogs").iterdir() if p.is_file())
