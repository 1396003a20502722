"""The ``kafka://`` target (``replicate --target`` and a ``[targets.NAME]`` of the TOML file): what it says, and
every malformed form refused before anything connects (an error naming the problem and the form to use)."""

from __future__ import annotations

import pytest

from mybinlog.cli._config import parse_config
from mybinlog.cli._main import main
from mybinlog.errors import ConfigurationError
from mybinlog.kafka import KafkaSink, parse_kafka_url


def test_a_kafka_url_and_its_sink() -> None:
    target = parse_kafka_url("kafka://k1:9092, k2:9093?prefix=shop&transactional=true&partitions=3&tombstones=no")
    assert (target.bootstrap, target.prefix, target.transactional, target.partitions, target.tombstones) == (
        "k1:9092,k2:9093",
        "shop",
        True,
        3,
        False,
    )
    assert parse_kafka_url("kafka://[::1]:9092").transactional is None  # auto: exactly-once when the broker can
    sink = target.sink(replica="shop_r", database="shop")
    assert isinstance(sink, KafkaSink)
    assert sink.topic("orders") == "shop.shop.orders"
    assert (sink.settings.replica, sink.settings.partitions, sink.description) == ("shop_r", 3, target.description)
    assert sink.settings.timeout == 30.0
    assert parse_kafka_url("kafka://k1:9092?timeout=2.5").sink(replica="r", database="d").settings.timeout == 2.5
    # the initial load is one transaction: its timeout (librdkafka's transaction.timeout.ms) is the brokers' usual
    # maximum by default, and can be set
    assert sink.settings.transaction_timeout_ms == 900_000
    short = parse_kafka_url("kafka://k1:9092?transaction_timeout=60").sink(replica="r", database="d")
    assert short.settings.transaction_timeout_ms == 60_000


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("kafka://", "is not host:port"),
        ("kafka://broker", "is not host:port"),
        ("kafka://broker:0", "is not host:port"),
        ("kafka://broker:99999", "is not host:port"),
        ("kafka://a:1,,b:2", "is not host:port"),
        ("kafka://user:pw@broker:9092", "no path, fragment, user or password"),
        ("kafka://broker:9092/topic", "no path"),
        ("kafka://broker:9092?prefx=shop", "unknown parameter 'prefx'"),
        ("kafka://broker:9092?prefix=a&prefix=b", "gives 'prefix' twice"),
        ("kafka://broker:9092?prefix=", "is not a topic name"),
        ("kafka://broker:9092?prefix=sh op", "is not a topic name"),
        ("kafka://broker:9092?transactional=maybe", "is not true or false"),
        ("kafka://broker:9092?partitions=0", "is not a positive number"),
        ("kafka://broker:9092?partitions=x", "is not a positive number"),
        ("kafka://broker:9092?topic_pattern={schema}.{table}", "may use only"),
        ("kafka://broker:9092?timeout=0", "is not a number of seconds"),
        ("kafka://broker:9092?timeout=soon", "is not a number of seconds"),
        ("kafka://broker:9092?transaction_timeout=0.5", "transaction_timeout='0.5' is not a number of seconds"),
        ("kafka://broker:9092?transaction_timeout=x", "transaction.max.timeout.ms bounds it"),
        ("kafka://broker:9092?garbage", "kafka://"),
        ("kafkaa://broker:9092", "starts with kafka://"),
    ],
)
def test_malformed_kafka_urls_are_refused(url: str, expected: str) -> None:
    with pytest.raises(ConfigurationError, match=expected.replace("(", r"\(").replace("?", r"\?")):
        parse_kafka_url(url)


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--target", "kafka://broker"], "is not host:port"),
        (["--target", "kafka://b:9092?prefx=1"], "unknown parameter"),
        (["--target", "kafka://b:9092", "--target-database", "x"], "--target-database goes with a ClickHouse"),
        (["--target", "kafka://b:9092", "--standby"], "--standby needs a ClickHouse server target"),
    ],
)
def test_the_command_line_refuses_a_bad_kafka_target_before_connecting(
    extra: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(["replicate", "--source", "mysql://repl@127.0.0.1:1", "--database", "shop", *extra])
    assert rc == 2
    assert expected in capsys.readouterr().err


def test_a_kafka_target_in_the_config_file() -> None:
    text = """
[sources.main]
dsn = "mysql://repl@db1:3306"
password_env = "PW"

[targets.bus]
url = "kafka://k1:9092?prefix=shop"

[replicas.shop]
database = "shop"
"""
    config = parse_config(text)
    assert config.targets["bus"].kafka
    assert not config.targets["bus"].embedded
    with pytest.raises(ConfigurationError, match=r"targets.bus.*unknown parameter 'prefx'"):
        parse_config(text.replace("prefix=", "prefx="))
    with pytest.raises(ConfigurationError, match="a Kafka target has no password"):
        parse_config(text.replace('prefix=shop"', 'prefix=shop"\npassword_env = "X"'))
