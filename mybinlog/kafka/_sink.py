"""The Kafka sink: a replica written into Kafka as Debezium messages, exactly once (docs/kafka.md).

:class:`KafkaSink` is a :class:`~mybinlog.replication.TransactionalSink`: each batch of the replicator is one Kafka
transaction holding the Debezium messages of its row changes (one topic per table, :func:`~._envelope.topic_name`)
and the replica's checkpoint (the whole :func:`~mybinlog.replication.checkpoint_json`, so that the tables' definitions
and stopped tables survive a restart) on the position topic, committed together by :class:`~._producer.KafkaProducer`
(which also fences a former producer of the replica). A crash before the commit leaves none of the batch visible to a
``read_committed`` consumer and the previous checkpoint; the replicator reads the batch again.

A DDL's schema change message waits for the checkpoint the replicator saves right after the DDL and is committed in
its transaction: a DDL replayed after a crash is published once. The initial load (the replicator's, between a
checkpoint that says "loading" and the load's last checkpoint) is one transaction: its ``CREATE`` and ``op: r``
messages are sent into it table by table (:meth:`~._producer.KafkaProducer.send`) and committed with the load's last
checkpoint, so a load cut short by a crash is invisible and the next one is published once (it must end within the
transaction timeout, ``transaction_timeout``). A broker without transactions, or one that does not keep a
transaction's group offset (librdkafka's mock cluster), makes everything at-least-once (said in the log, and in
:attr:`KafkaSink.mode` and the replica status's ``delivery``).

``kafka://host:port[,host:port]?prefix=P&transactional=auto|true|false&partitions=N&tombstones=true|false
&topic_pattern=...&timeout=S&transaction_timeout=S`` names a Kafka target on the command line and in the TOML
configuration (:func:`parse_kafka_url`).
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
from ..replication import RowChange, Transaction, TransactionalSink
from ._envelope import Message, SourceInfo, TableEncoder, schema_change, topic_name, truncate
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
    transaction_timeout: float | None = None

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
            transaction_timeout=self.transaction_timeout,
        )


def _bool(value: str, key: str) -> bool:
    if value.lower() in ("true", "1", "yes", "on"):
        return True
    if value.lower() in ("false", "0", "no", "off"):
        return False
    raise ConfigurationError(f"the Kafka target's {key}={value!r} is not true or false")


def parse_kafka_url(url: str) -> KafkaTarget:
    """``kafka://host:port[,host:port...][?prefix=P&transactional=auto|true|false&partitions=N&tombstones=true|false
    &topic_pattern=PATTERN&timeout=SECONDS&transaction_timeout=SECONDS]``: refuses anything else (an unknown
    parameter, a host without a port, a path, a user or password: Kafka's SASL settings are not taken from a URL) with
    :class:`ConfigurationError`."""
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
    known = {"prefix", "transactional", "partitions", "tombstones", "topic_pattern", "timeout", "transaction_timeout"}
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
    transaction_timeout: float | None = None
    if "transaction_timeout" in params:
        try:
            transaction_timeout = float(params["transaction_timeout"])
        except ValueError:
            transaction_timeout = 0.0
        if not 1 <= transaction_timeout <= 86_400:
            raise ConfigurationError(
                f"the Kafka target's transaction_timeout={params['transaction_timeout']!r} is not a number of seconds "
                "(1 to 86400; the broker's transaction.max.timeout.ms bounds it, 900 s by default)"
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
        transaction_timeout=transaction_timeout,
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
        transaction_timeout: float | None = None,
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
            transaction_timeout=transaction_timeout,
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
        self._topics: dict[str, str] = {}
        # schema changes (table, DDL text, definition, change, GTID, a truncate), committed with the checkpoint that
        # follows them
        self._ddl: list[tuple[str, str, TableDef | None, Literal["CREATE", "ALTER", "DROP"], str | None, bool]] = []
        self._loading = False  # a checkpoint saying "loading" was written: the load's messages join one transaction
        self._held: tuple[TableDef, RowChange, int] | None = None  # the load's last row so far (_loading)

    @property
    def mode(self) -> str:
        """``"exactly-once"``, ``"at-least-once"`` or ``"stopped"`` (before the first checkpoint read, after close)."""
        return self.producer.mode

    def topic(self, table: str) -> str:
        topic = self._topics.get(table)
        if topic is None:
            topic = self._topics[table] = topic_name(self.prefix, self.database, table, self.topic_pattern)
        return topic

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
        if self.status is not None:
            self.status.delivery = self.producer.mode
        self._ddl, self._loading, self._held = [], False, None  # an attempt starts: what was not committed comes again
        if position is None:
            return None
        cp = checkpoint_from(position)
        self._last = cp.position
        return cp

    async def newest_epoch(self) -> int:
        # not read_checkpoint(): asked in the middle of the stream (the replica lock taken again), it must leave the
        # schema changes waiting for their checkpoint as they are
        if not self._started:
            cp = await self.read_checkpoint()
            return cp.epoch if cp is not None else 0
        position = await self.producer.read_position()
        return checkpoint_from(position).epoch if position is not None else 0

    async def write(self, transactions: Sequence[Transaction], checkpoint: Checkpoint) -> None:
        messages: list[tuple[str, Message]] = []
        now = int(time.time() * 1000)
        if self._held is not None and checkpoint.loading is None:  # the load's last checkpoint: its last row
            (table, change, row), self._held = self._held, None
            messages.extend(self._messages(change, self._load_position or self._last, "last", row, now, {}, table))
        for txn in transactions:
            tables: dict[str, tuple[TableEncoder, str, tuple[str, str]]] = {}  # see _messages
            end = txn.end
            for i, change in enumerate(txn.changes):
                messages.extend(self._messages(change, end, "false", i, now, tables, gtid=txn.gtid))
        await self._commit(messages, checkpoint_json(checkpoint), checkpoint.position)
        self._loading = checkpoint.loading is not None
        if self.status is not None:
            self.status.delivery = self.producer.mode  # it may learn at the first commit that it is at-least-once
        self._last = checkpoint.position
        log.info(
            "%s: checkpoint at %s after %d rows (epoch %d, seq %d)",
            self.replica,
            checkpoint.position,
            sum(len(t.changes) for t in transactions),
            checkpoint.epoch,
            checkpoint.seq,
        )

    def _schema_changes(self, at: BinlogPosition | None) -> list[tuple[str, Message]]:
        """The schema change messages held, with ``at`` as their binlog position (the end of the DDL: the checkpoint
        after it; the load's snapshot for the load's CREATEs). Taken: a failure drops them, the replay makes them
        again."""
        held, self._ddl = self._ddl, []
        out: list[tuple[str, Message]] = []
        for name, ddl, definition, change, gtid, truncated in held:
            source = SourceInfo(
                name=self.prefix,
                db=self.database,
                table=name,
                server_id=at.server_id if at else 0,
                file=at.file if at else "",
                pos=at.offset if at else 0,
                gtid=gtid,
                ts_ms=at.timestamp * 1000 if at else 0,
            )
            out.append((self.prefix, schema_change(source, self.database, ddl, table=definition, change=change)))
            if truncated:  # and Debezium's truncate event on the table's topic
                out.append((self.topic(name), truncate(source, int(time.time() * 1000))))
        return out

    async def _commit(
        self, messages: list[tuple[str, Message]], position: dict[str, Any] | None, at: BinlogPosition | None = None
    ) -> None:
        """One transaction: the schema changes not committed yet, ``messages`` and ``position`` (with what the
        load sent into the open transaction, if any)."""
        messages = self._schema_changes(at or self._load_position or self._last) + messages
        try:
            await self.producer.ensure_topics(dict.fromkeys(t for t, _ in messages))
            await self.producer.commit(messages, position)
        except TargetError:
            self._stale = True
            raise

    async def _send(self, messages: list[tuple[str, Message]]) -> None:
        """Into the load's open transaction, committed with the load's last checkpoint (:meth:`write`)."""
        messages = self._schema_changes(self._load_position or self._last) + messages
        try:
            await self.producer.ensure_topics(dict.fromkeys(t for t, _ in messages))
            await self.producer.send(messages)
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
        if self._loading:
            # the load's last row is written "last" (source.snapshot, as Debezium): each block's last row is held
            # back until the next block, or the load's last checkpoint
            held, self._held = self._held, (table, changes[-1], len(changes) - 1)
            if held is not None:
                messages.extend(self._messages(held[1], position, "true", held[2], now, {}, held[0]))
            changes = changes[:-1]
        tables: dict[str, tuple[TableEncoder, str, tuple[str, str]]] = {}
        for i, change in enumerate(changes):
            messages.extend(self._messages(change, position, "true", i, now, tables, table))
        if self._loading:
            await self._send(messages)  # the replicator's initial load: visible with its last checkpoint only
        else:
            await self._commit(messages, None)

    async def prepare_load(self, names: Sequence[str], leftovers: Sequence[str], leader: Any) -> None:
        # an unfinished load wrote into a transaction that never committed (the next producer's init_transactions
        # aborted it): nothing of it is visible, nothing to drop (at-least-once: its messages stay, as Debezium's)
        return None

    async def reset(self, *, cancel: bool = False) -> None:
        self._ddl, self._held = [], None
        await super().reset(cancel=cancel)

    async def schema_change(self, kind: str, name: str, definition: TableDef | None) -> str | None:
        if kind == "drop" or definition is None:
            ddl = f"DROP TABLE `{name}`"
        elif kind == "truncate":
            ddl = f"TRUNCATE TABLE `{name}`"
        elif kind == "rename":
            ddl = f"RENAME TABLE `{name}` TO `{definition.name}`"
        else:
            ddl = render_create_table(definition, qualified=False)
        # held until the checkpoint after the DDL (the replicator saves one at once, or the load's last one): in its
        # transaction, a DDL replayed after a crash is published once
        # (the GTID is the DDL's: the replicator read its GTID event just before)
        self._ddl.append((name, ddl, definition, _CHANGE.get(kind, "ALTER"), self.gtid, kind == "truncate"))
        return None  # Kafka follows every DDL: the next messages of the table carry its new columns

    # -- messages ------------------------------------------------------------------------------------------------
    def _messages(
        self,
        change: RowChange,
        position: BinlogPosition | None,
        snapshot: str,
        row: int,
        now: int,
        tables: dict[str, tuple[TableEncoder, str, tuple[str, str]]],
        definition: TableDef | None = None,
        *,
        gtid: str | None = None,
    ) -> list[tuple[str, Message]]:
        """The messages of ``change``; ``tables``: the encoder, topic and source block of each table, made once per
        transaction (or block of loaded rows) by the first change of the table."""
        made = tables.get(change.table)
        if made is None:
            if definition is None:
                definition = self.tables[change.table].definition
            source = SourceInfo(
                name=self.prefix,
                db=self.database,
                table=change.table,
                server_id=position.server_id if position else 0,
                file=position.file if position else "",
                pos=position.offset if position else 0,
                gtid=gtid,
                ts_ms=position.timestamp * 1000 if position else 0,
                snapshot=snapshot,
            )
            made = tables[change.table] = (self._encoders.get(definition), self.topic(change.table), source.parts())
        encoder, topic, parts = made
        return [(topic, m) for m in encoder.encode(change.op, change.before, change.after, parts, row, now)]

    # -- lifetime ------------------------------------------------------------------------------------------------
    async def aclose(self) -> None:
        """Release the producer (what a committed transaction wrote is already in Kafka)."""
        await self.producer.close()
        self._started = False
