"""``run_snapshot``: the snapshot's entry point, which picks the run by the target: ClickHouse (``_job._Run``) or
Kafka (``_kafka_job.KafkaRun``), and starts Spark while the run plans."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError
from ._job import SnapshotOptions, SnapshotProgress, SnapshotResult, _Run
from ._spark import _session, _stop_spark_context

if TYPE_CHECKING:
    from ..clickhouse import Target

__all__ = ["run_snapshot"]


async def run_snapshot(
    options: SnapshotOptions,
    *,
    spark: Any = None,
    target: Target | None = None,
    master: str | None = None,
    on_progress: Callable[[SnapshotProgress], None] | None = None,
) -> SnapshotResult:
    """Run a snapshot (or resume one) and return its result; see docs/snapshot.md.

    ``spark``: a SparkSession or SparkContext (default: the active one, else a new SparkContext with ``master``,
    started while the driver plans and stopped once the copy is over). ``target``: an open target to use on the
    driver (default: opened from ``options.target``). With a server, the executors open their own connections
    from ``options.target``, which is then required; with chdb only the driver writes, through ``target`` (so a
    process that already holds the chdb directory, like the replicator, can pass it). ``on_progress`` is called
    every ``options.progress_interval`` seconds while chunks run.

    ``options.target`` ``kafka://...`` (the URL of ``replicate --target kafka://``): an initial load published as
    Debezium ``op: r`` messages, a Kafka transaction per chunk, then the replica's position for ``replicate`` to go
    on from (docs/kafka.md, "Snapshotting into Kafka").
    """
    from ..clickhouse import open_target

    kafka = None
    if options.target.lower().startswith("kafka:"):  # Debezium messages into Kafka: _kafka_job.py
        from ..kafka import parse_kafka_url

        kafka = parse_kafka_url(options.target)  # refused before Spark starts

    own = target is None
    if kafka is not None:
        if target is not None:
            raise ConfigurationError("a snapshot into Kafka (target kafka://...) takes no ClickHouse target")
    elif target is None:
        if not options.target:
            raise ConfigurationError(
                "name the ClickHouse target: SnapshotOptions(target='http://...' or 'chdb:///path')"
            )
    elif target.kind != "chdb" and not options.target:
        raise ConfigurationError(
            "the executors write to the ClickHouse server themselves: give its URL (with credentials, or "
            "MYBINLOG_CH_PASSWORD) in SnapshotOptions.target as well as the open target"
        )
    # Spark starts (seconds: a JVM, then a SparkContext) while the driver opens the target, reads the checkpoint and
    # the schemas and plans the chunks; the copy waits for it
    starting: asyncio.Future[tuple[Any, bool]] | None = None
    run: _Run | None = None
    if spark is None:
        starting = asyncio.ensure_future(asyncio.to_thread(_session, master))
    try:
        if kafka is not None:
            from ._kafka_job import KafkaRun

            run = KafkaRun(options, kafka, spark if starting is None else starting, on_progress, master)
            return await run.run()
        if target is None:
            target = await open_target(options.target)
        run = _Run(options, target, spark if starting is None else starting, on_progress, master)
        try:
            return await run.run()
        finally:
            if own:
                await target.aclose()
    finally:
        if starting is not None:
            # never leave a JVM behind: wait for a session still starting, stop the one started here
            started: tuple[Any, bool] | None = None
            with contextlib.suppress(BaseException):  # an error starting Spark was raised by the run, or superseded
                started = await asyncio.shield(starting)
            if run is not None and run.stopping is not None:
                await asyncio.shield(run.stopping)
            elif started is not None and started[1]:
                await asyncio.shield(asyncio.to_thread(_stop_spark_context, started[0]))
