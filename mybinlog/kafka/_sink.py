"""The Kafka sink: a replica written into Kafka as Debezium messages, exactly once (docs/kafka.md).

:class:`KafkaSink` is a :class:`~mybinlog.replication.TransactionalSink`: each batch of the replicator is one Kafka
transaction holding the Debezium messages of its row changes (one topic per table, :func:`~._envelope.topic_name`)
and the replica's checkpoint (the whole :func:`~mybinlog.replication.checkpoint_json`, so that the tables' definitions
and stopped tables survive a restart) on the position topic, committed together by :class:`~._producer.KafkaProducer`
(which also fences a former producer of the replica). A crash before the commit leaves none of the batch visible to a
``read_committed`` consumer and the previous checkpoint; the replicator reads the batch again.

What is not exactly-once: the initial load's ``op: r`` messages (each block of rows is its own transaction, without
a position: a load interrupted by a crash starts again and publishes its rows again, as a Debezium snapshot does) and
the schema change messages (a DDL replayed after a crash is published again). A broker without transactions makes
everything at-least-once (said at start, and in :attr:`KafkaSink.mode`).

``kafka://host:port[,host:port]?prefix=P&transactional=auto|true|false&partitions=N&tombstones=true|false
&topic_pattern=...`` names a Kafka target on the command line and in the TOML configuration
(:func:`parse_kafka_url`).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import parse_qsl

from .._checkpoint import Checkpoint, checkpoint_from, checkpoint_json
from ..ddl import render_create_table
from ..errors import ConfigurationError, TargetError
from ..protocol import MISSING
from ..replication import RowChange, Transaction, TransactionalSink
from ._envelope import Message, SourceInfo, TableEncoder, schema_change, topic_name
from ._producer import KafkaProducer, KafkaSettings

if TYPE_CHECKING:
    from ..ddl import TableDef
    from ..protocol import BinlogPosition

__all__ = ["KafkaSink", "KafkaTarget", "parse_kafka_url"]

log = logging.getLogger("mybinlog.kafka")

_DEFAULT_PATTERN = "{prefix}.{database}.{table}"
_HOST_PORT = re.compile(r"^(?:[A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\]):(\d{1,5})$")
_CHANGE: dict[str, Literal["CREATE", "ALTER", "DROP"]] = {
    "create": "CREATE",
    "alter": "ALTER",
    "rename": "ALTER",
    "truncate": "ALTER",
    "drop": "DROP",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class KafkaTarget:
    """What a ``kafka://`` URL says (:func:`parse_kafka_url`); :meth:`sink` makes the sink of one replica."""

    bootstrap: str
    prefix: str = "mybinlog"
    transactional: bool | None = None
    partitions: int = 1
    tombstones: bool = True
    topic_pattern: str = _DEFAULT_PATTERN
    timeout: float = 30.0

    @property
    def description(self) -> str:
        return f"Kafka {self.bootstrap} (prefix {self.prefix})"

    def sink(self, *, replica: str, database: str) -> KafkaSink:
        return KafkaSink(
            self.bootstrap,
            replica=replica,
            database=database,
            prefix=self.prefix,
            transactional=self.transactional,
            partitions=self.partitions,
            tombstones=self.tombstones,
            topic_pattern=self.topic_pattern,
            timeout=self.timeout,
        )


def _bool(value: str, key: str) -> bool:
    if value.lower() in ("true", "1", "yes", "on"):
        return True
    if value.lower() in ("false", "0", "no", "off"):
        return False
    raise ConfigurationError(f"the Kafka target's {key}={value!r} is not true or false")


def parse_kafka_url(url: str) -> KafkaTarget:
    """``kafka://host:port[,host:port...][?prefix=P&transactional=auto|true|false&partitions=N&tombstones=true|false
    &topic_pattern=PATTERN&timeout=SECONDS]``: refuses anything else (an unknown parameter, a host without a port, a
    path, a user or password: Kafka's SASL settings are not taken from a URL) with :class:`ConfigurationError`."""
    if not url.startswith("kafka://"):
        raise ConfigurationError(f"a Kafka target starts with kafka:// (kafka://broker:9092), not {url[:40]!r}")
    rest = url[len("kafka://") :]
    hosts, _, query = rest.partition("?")
    if "#" in query or "/" in hosts.rstrip("/") or "@" in hosts:
        raise ConfigurationError(
            "a Kafka target is kafka://host:port[,host:port][?prefix=...]: no path, fragment, user or password"
        )
    brokers = [h.strip() for h in hosts.rstrip("/").split(",")]
    for broker in brokers:
        match = _HOST_PORT.match(broker)
        if match is None or not 0 < int(match.group(1)) < 65536:
            raise ConfigurationError(
                f"the Kafka target's broker {broker!r} is not host:port (kafka://broker:9092[,broker2:9092])"
            )
    known = {"prefix", "transactional", "partitions", "tombstones", "topic_pattern", "timeout"}
    params: dict[str, str] = {}
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise ConfigurationError(
            f"the Kafka target's parameters {query!r} are not key=value pairs (kafka://broker:9092?prefix=...)"
        ) from None
    for key, value in pairs:
        if key not in known:
            raise ConfigurationError(f"unknown parameter {key!r} in the Kafka target: use {', '.join(sorted(known))}")
        if key in params:
            raise ConfigurationError(f"the Kafka target gives {key!r} twice")
        params[key] = value
    prefix = params.get("prefix", "mybinlog")
    if not prefix or topic_name(prefix, "d", "t", "{prefix}") != prefix:
        raise ConfigurationError(f"the Kafka target's prefix {prefix!r} is not a topic name ([a-zA-Z0-9._-]+)")
    transactional: bool | None = None
    if params.get("transactional", "auto").lower() != "auto":
        transactional = _bool(params["transactional"], "transactional")
    try:
        partitions = int(params.get("partitions", "1"))
    except ValueError:
        partitions = 0
    if partitions < 1:
        raise ConfigurationError(f"the Kafka target's partitions={params['partitions']!r} is not a positive number")
    try:
        timeout = float(params.get("timeout", "30"))
    except ValueError:
        timeout = 0.0
    if not 0 < timeout < 3600:
        raise ConfigurationError(
            f"the Kafka target's timeout={params['timeout']!r} is not a number of seconds (0 < timeout < 3600)"
        )
    pattern = params.get("topic_pattern", _DEFAULT_PATTERN)
    try:
        topic_name(prefix, "d", "t", pattern)
    except (KeyError, IndexError, ValueError) as exc:
        raise ConfigurationError(
            f"the Kafka target's topic_pattern {pattern!r} may use only {{prefix}}, {{database}} and {{table}}"
        ) from exc
    return KafkaTarget(
        bootstrap=",".join(brokers),
        prefix=prefix,
        transactional=transactional,
        partitions=partitions,
        tombstones=_bool(params.get("tombstones", "true"), "tombstones"),
        topic_pattern=pattern,
        timeout=timeout,
    )


class _Encoders:
    """A :class:`TableEncoder` per table definition (a DDL gives the table a new definition: a new encoder)."""

    def __init__(self, tombstones: bool) -> None:
        self.tombstones = tombstones
        self._made: dict[str, tuple[Any, TableEncoder]] = {}

    def get(self, definition: TableDef) -> TableEncoder:
        made = self._made.get(definition.name)
        if made is None or made[0] is not definition:
            made = (definition, TableEncoder(definition, tombstones=self.tombstones))
            self._made[definition.name] = made
        return made[1]


def _values(encoder: TableEncoder, row: Mapping[str, Any] | None) -> list[Any] | None:
    if row is None:
        return None
    return [row.get(name, MISSING) for name in encoder.names]


class KafkaSink(TransactionalSink):
    """A replica in Kafka (see the module docstring). Give it to a :class:`~mybinlog.replication.Replicator`;
    ``replica`` must be the replicator's replica name (the transactional id and the position record's key),
    ``database`` its source database (``source.db`` of the messages, the topics' ``{database}``).
    """

    def __init__(
        self,
        bootstrap: str,
        *,
        replica: str,
        database: str,
        prefix: str = "mybinlog",
        transactional: bool | None = None,
        partitions: int = 1,
        tombstones: bool = True,
        topic_pattern: str = _DEFAULT_PATTERN,
        config: Mapping[str, Any] | None = None,
        timeout: float = 30.0,
    ) -> None:
        super().__init__()
        self.settings = KafkaSettings(
            bootstrap=bootstrap,
            replica=replica,
            prefix=prefix,
            transactional=transactional,
            partitions=partitions,
            config=dict(config or {}),
            timeout=timeout,
        )
        self.replica, self.database, self.prefix = replica, database, prefix
        self.topic_pattern = topic_pattern
        self.description = f"Kafka {bootstrap} (prefix {prefix})"
        self.producer = KafkaProducer(self.settings)
        self._encoders = _Encoders(tombstones)
        self._started = False
        self._stale = False  # a transaction failed: the producer is replaced before the next checkpoint read
        self._load_position: BinlogPosition | None = None
        self._last: BinlogPosition | None = None

    @property
    def mode(self) -> str:
        """``"exactly-once"``, ``"at-least-once"`` or ``"stopped"`` (before the first checkpoint read, after close)."""
        return self.producer.mode

    def topic(self, table: str) -> str:
        return topic_name(self.prefix, self.database, table, self.topic_pattern)

    # -- TransactionalSink ---------------------------------------------------------------------------------------
    async def identity(self) -> str:
        # the cluster, not the address it was reached by; the producer is not started here (that would fence the
        # replica's running producer before the replica lock says whether this process may write)
        cluster = await self.producer.cluster_id()
        return f"kafka:{cluster or self.settings.bootstrap}"

    async def read_checkpoint(self) -> Checkpoint | None:
        if not self._started:
            await self.producer.start()  # fences any former producer of the replica
            self._started = True
            log.info(
                "replica %s: writing into %s %s%s",
                self.replica,
                self.description,
                self.producer.mode.upper(),
                "" if self.producer.mode == "exactly-once" else ": a crash may repeat the last batch",
            )
            position = self.producer.position
        elif self._stale:
            # after a failed transaction (a broker restarted or unreachable), librdkafka's producer can stay stuck
            # in it: a new one (init_transactions aborts the open transaction) starts from the committed position
            await self.producer.close()
            self.producer = KafkaProducer(self.settings)
            await self.producer.start()
            self._stale = False
            log.info("replica %s: a new producer after a failed transaction", self.replica)
            position = self.producer.position
        else:
            position = await self.producer.read_position()
        if position is None:
            return None
        cp = checkpoint_from(position)
        self._last = cp.position
        return cp

    async def write(self, transactions: Sequence[Transaction], checkpoint: Checkpoint) -> None:
        messages: list[tuple[str, Message]] = []
        now = int(time.time() * 1000)
        for txn in transactions:
            end = txn.end
            for i, change in enumerate(txn.changes):
                messages.extend(self._messages(change, end, "false", i, now))
        await self._commit(messages, checkpoint_json(checkpoint))
        self._last = checkpoint.position
        log.info(
            "%s: checkpoint at %s after %d rows (epoch %d, seq %d)",
            self.replica,
            checkpoint.position,
            sum(len(t.changes) for t in transactions),
            checkpoint.epoch,
            checkpoint.seq,
        )

    async def _commit(self, messages: list[tuple[str, Message]], position: dict[str, Any] | None) -> None:
        try:
            await self.producer.ensure_topics(dict.fromkeys(t for t, _ in messages))
            await self.producer.commit(messages, position)
        except TargetError:
            self._stale = True
            raise

    def load_payload(self, table: Any, rows: list[tuple[Any, ...]], position: BinlogPosition) -> list[RowChange]:
        self._load_position = position
        return super().load_payload(table, rows, position)

    async def write_rows(self, table: TableDef, changes: Sequence[RowChange]) -> None:
        if not changes:
            return
        position = self._load_position or self._last
        now = int(time.time() * 1000)
        messages: list[tuple[str, Message]] = []
        for i, change in enumerate(changes):
            messages.extend(self._messages(change, position, "true", i, now, table))
        await self._commit(messages, None)

    async def schema_change(self, kind: str, name: str, definition: TableDef | None) -> str | None:
        position = self._last
        source = SourceInfo(
            name=self.prefix,
            db=self.database,
            table=name,
            server_id=position.server_id if position else 0,
            file=position.file if position else "",
            pos=position.offset if position else 0,
            ts_ms=position.timestamp * 1000 if position else 0,
        )
        if kind == "drop" or definition is None:
            ddl = f"DROP TABLE `{name}`"
        elif kind == "truncate":
            ddl = f"TRUNCATE TABLE `{name}`"
        elif kind == "rename":
            ddl = f"RENAME TABLE `{name}` TO `{definition.name}`"
        else:
            ddl = render_create_table(definition, qualified=False)
        message = schema_change(source, self.database, ddl, table=definition, change=_CHANGE.get(kind, "ALTER"))
        await self._commit([(self.prefix, message)], None)
        return None  # Kafka follows every DDL: the next messages of the table carry its new columns

    # -- messages ------------------------------------------------------------------------------------------------
    def _messages(
        self,
        change: RowChange,
        position: BinlogPosition | None,
        snapshot: str,
        row: int,
        now: int,
        definition: TableDef | None = None,
    ) -> list[tuple[str, Message]]:
        if definition is None:
            definition = self.tables[change.table].definition
        encoder = self._encoders.get(definition)
        source = SourceInfo(
            name=self.prefix,
            db=self.database,
            table=change.table,
            server_id=position.server_id if position else 0,
            file=position.file if position else "",
            pos=position.offset if position else 0,
            ts_ms=position.timestamp * 1000 if position else 0,
            snapshot=snapshot,
            row=row,
        )
        topic = self.topic(change.table)
        out = encoder.change(change.op, _values(encoder, change.before), _values(encoder, change.after), source, now)
        return [(topic, m) for m in out]

    # -- lifetime ------------------------------------------------------------------------------------------------
    async def aclose(self) -> None:
        """Release the producer (what a committed transaction wrote is already in Kafka)."""
        await self.producer.close()
        self._started = False
