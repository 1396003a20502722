"""Fail points: the process SIGKILLs itself at a named step, so that tests can crash it exactly there.

Crash tests kill real processes at random moments too; a fail point reaches the moments a random kill rarely hits
(between the last insert of a batch and its checkpoint, between a DDL and its checkpoint, in the middle of the
initial load). They are off unless the environment of the process names them::

    MYBINLOG_FAILPOINTS="flush.after_inserts=3"     # SIGKILL at the 3rd time this step is reached
    MYBINLOG_FAILPOINTS="load.after_rows=2,ddl.after_apply"   # several; no count means the first time

Steps (see the callers of :func:`reached`):

``load.after_rows``        the initial load inserted a block of rows (its checkpoint says it is still loading)
``flush.after_pending``    a collapsing batch was announced in the checkpoint, nothing inserted yet
``flush.after_table``      a batch inserted one table's rows (more tables may follow)
``flush.after_inserts``    a batch inserted every table's rows, its checkpoint is not written yet
``ddl.after_apply``        a DDL statement was applied in ClickHouse, its checkpoint is not written yet

The check costs one dictionary lookup when the environment names no fail point.
"""

from __future__ import annotations

import logging
import os
import signal

__all__ = ["ENV", "ACTIVE", "reached"]

ENV = "MYBINLOG_FAILPOINTS"

logger = logging.getLogger("mybinlog.failpoints")


def _parse(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in text.split(","):
        name, _, count = part.strip().partition("=")
        if name:
            out[name] = int(count) if count.strip().isdigit() else 1
    return out


ACTIVE: dict[str, int] = _parse(os.environ.get(ENV, ""))
"""Fail point name -> how many more times it may be reached before the process kills itself."""


def reached(name: str) -> None:
    """Count one pass through step ``name``; SIGKILL this process when its count is used up."""
    left = ACTIVE.get(name)
    if left is None:
        return
    left -= 1
    ACTIVE[name] = left
    if left <= 0:
        logger.critical("fail point %s reached: killing this process (SIGKILL)", name)
        for handler in logging.getLogger().handlers:
            handler.flush()
        os.kill(os.getpid(), signal.SIGKILL)
