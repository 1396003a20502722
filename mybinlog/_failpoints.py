"""Fail points: the process SIGKILLs (or SIGSTOPs) itself at a named step, so that tests can crash it exactly there.

Crash tests kill real processes at random moments too; a fail point reaches the moments a random kill rarely hits
(between the last insert of a batch and its checkpoint, between a DDL and its checkpoint, in the middle of the
initial load). They are off unless the environment of the process names them::

    MYBINLOG_FAILPOINTS="flush.after_inserts=3"     # SIGKILL at the 3rd time this step is reached
    MYBINLOG_FAILPOINTS="load.after_rows=2,ddl.after_apply"   # several; no count means the first time
    MYBINLOG_FAILPOINTS="checkpoint.before_save=8@stop"        # SIGSTOP instead: paused with a write in flight

Steps (see the callers of :func:`reached`):

``load.after_rows``        the initial load inserted a block of rows (its checkpoint says it is still loading)
``flush.after_pending``    a collapsing batch was announced in the checkpoint, nothing inserted yet
``flush.after_table``      a batch inserted one table's rows (more tables may follow)
``flush.after_inserts``    a batch inserted every table's rows, its checkpoint is not written yet
``ddl.after_apply``        a DDL statement was applied in ClickHouse, its checkpoint is not written yet
``flush.before_insert``    the replica lease was confirmed for one table's insert of a batch, the insert not sent
``transaction.after_chunk`` a chunk of a transaction bigger than ``max_bytes_in_transaction`` was inserted (its
                           checkpoint comes after the last chunk; replication/_spill.py)
``kafka.before_commit``    a Kafka batch's messages and position record were sent in its transaction, the
                           transaction is not committed yet (mybinlog/kafka/_producer.py)
``checkpoint.before_save`` the replica lease was confirmed for a checkpoint save, the row not sent (docs/ha.md)

``@stop`` after the count makes the process SIGSTOP itself instead (a test resumes it with SIGCONT): a paused
leader with a write in flight, for the active/standby tests.

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
        name, _, count = part.strip().partition("@")[0].partition("=")
        if name:
            out[name] = int(count) if count.strip().isdigit() else 1
    return out


def _stops(text: str) -> set[str]:
    return {
        part.strip().partition("=")[0].partition("@")[0] for part in text.split(",") if part.strip().endswith("@stop")
    }


ACTIVE: dict[str, int] = _parse(os.environ.get(ENV, ""))
"""Fail point name -> how many more times it may be reached before the process kills itself."""
STOP: set[str] = _stops(os.environ.get(ENV, ""))
"""Fail points that SIGSTOP the process instead of killing it."""


def reached(name: str) -> None:
    """Count one pass through step ``name``; SIGKILL this process when its count is used up."""
    left = ACTIVE.get(name)
    if left is None:
        return
    left -= 1
    ACTIVE[name] = left
    if left <= 0:
        stop = name in STOP
        logger.critical(
            "fail point %s reached: %s",
            name,
            "stopping this process (SIGSTOP)" if stop else "killing this process (SIGKILL)",
        )
        for handler in logging.getLogger().handlers:
            handler.flush()
        if stop:
            del ACTIVE[name]  # once: resumed (SIGCONT), the process goes on from here
            os.kill(os.getpid(), signal.SIGSTOP)
            return
        os.kill(os.getpid(), signal.SIGKILL)
