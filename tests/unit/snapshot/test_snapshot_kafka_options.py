"""A snapshot into Kafka refuses what it cannot do before it connects anywhere (the publishing itself is in
tests/integration/snapshot/test_snapshot_kafka.py)."""

from __future__ import annotations

from typing import Any

import pytest

from mybinlog.errors import ConfigurationError
from mybinlog.snapshot import SnapshotOptions, run_snapshot

pytest.importorskip("confluent_kafka")

# nothing listens there: each case must be refused before a connection is tried
SOURCE = "mysql://repl:pw@127.0.0.1:9"
KAFKA = "kafka://127.0.0.1:9"


class _NoSpark:
    """A Spark session that must not be used."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"Spark used ({name})")


@pytest.mark.parametrize(
    ("target", "extra", "message"),
    [
        ("kafka://broker", {}, "is not host:port"),
        (KAFKA, {"resume": "latest"}, "keeps no state to resume"),
        (KAFKA, {"mode": "backfill"}, "no backfill into Kafka"),
        (f"{KAFKA}?transactional=false", {}, "in a Kafka transaction"),
        (KAFKA, {"target_database": "x", "recreate": True}, "--target-database, --recreate go with a ClickHouse"),
    ],
)
async def test_refused_before_connecting(target: str, extra: dict[str, Any], message: str) -> None:
    options = SnapshotOptions(source=SOURCE, target=target, database="shop", **extra)
    with pytest.raises(ConfigurationError, match=message):
        await run_snapshot(options, spark=_NoSpark())


def test_the_command_refuses_a_bad_kafka_target_before_spark_starts(capsys: pytest.CaptureFixture[str]) -> None:
    from mybinlog.cli._main import main

    code = main(["snapshot", "--source", SOURCE, "--database", "shop", "--target", "kafka://broker?prefix=p"])
    assert code == 2
    err = capsys.readouterr().err
    assert "is not host:port" in err
    assert "pw" not in err.replace("password", "")  # the source's password is not printed
