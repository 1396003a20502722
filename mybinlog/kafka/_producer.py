"""Exactly-once producing into Kafka with confluent-kafka's transactional producer, without blocking the event loop.

One :class:`KafkaProducer` per replica. Each batch is one Kafka transaction holding the batch's messages, a record of
the batch's binlog position on the compacted position topic ``<prefix>.mybinlog.positions`` (key: the replica) and
a consumer-group offset (group ``mybinlog.<replica>``) that points at that record, committed together
(:meth:`KafkaProducer.commit`). At start (:meth:`KafkaProducer.start`) the committed offset of the group names the
last committed position record, which is read back: this does not depend on the broker hiding aborted records
(Tansu does not, docs/kafka.md), only on it applying a transaction's offsets when, and only when, it commits.
:meth:`KafkaProducer.send` adds messages to an open transaction that the next commit ends (the initial load: one
transaction). A broker that accepts a transaction's offsets but keeps nothing (librdkafka's mock cluster) is found
at the first commit: the offset is then committed after each transaction (at-least-once, said in :attr:`mode`).

The transactional id is ``mybinlog.<replica>``: a second process that starts the replica fences the first (the
broker bumps the producer epoch), whose next commit raises :class:`~mybinlog.errors.ReplicaLockedError`. A paused
former leader therefore cannot commit a batch after a takeover.

Against a broker without transactions (``transactional=False``, or ``None`` when ``init_transactions`` fails), the
producer is at-least-once: the batch's messages are acknowledged (``acks=all``) before the position record is
written; a crash in between repeats the batch. This is logged as a warning at start and shown by :attr:`mode`.

Why a thread and not confluent-kafka's ``AIOProducer``: ``produce()`` only appends to librdkafka's queue and never
waits for the network (it raises ``BufferError`` when the queue is full), so it runs on the event loop; the calls
that wait (``init_transactions``, ``flush``, ``send_offsets_to_transaction``, ``commit_transaction``, the admin
client and the read-back consumer) run in one worker thread of this producer. ``AIOProducer`` (experimental in
confluent-kafka 2.x) creates an asyncio future per message and batches on a timer, which costs more per message than
the whole envelope encoding, and cannot send headers.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import json
import logging
import queue
import threading
import time
from collections.abc import AsyncIterable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .. import _failpoints
from ..errors import ConfigurationError, ReplicaLockedError, TargetConnectionError, TargetError
from ._envelope import Message

__all__ = ["KafkaProducer", "KafkaSettings", "position_topic_name", "transactional_id"]

log = logging.getLogger("mybinlog.kafka")
T = TypeVar("T")

_POSITION_TOPIC = "{prefix}.mybinlog.positions"


def position_topic_name(prefix: str) -> str:
    """``<prefix>.mybinlog.positions``: the compacted topic of the replicas' committed positions."""
    return _POSITION_TOPIC.format(prefix=prefix)


def transactional_id(replica: str) -> str:
    """``mybinlog.<replica>``: the transactional id (and consumer group) of a replica."""
    return f"mybinlog.{replica}"


@dataclass(frozen=True, slots=True, kw_only=True)
class KafkaSettings:
    """Where and how a replica writes.

    ``bootstrap``: ``host:port[,host:port]``. ``replica``: the replica's name (transactional id, group, position
    key). ``prefix``: Debezium's ``topic.prefix`` (topics ``<prefix>.<database>.<table>``, the schema change topic
    ``<prefix>``, the position topic ``<prefix>.mybinlog.positions``). ``transactional``: ``True`` exactly-once
    (fails when the broker cannot), ``False`` at-least-once, ``None`` exactly-once when the broker can.
    ``partitions``/``replication_factor``: of the topics created here (``-1``: the broker's default).
    ``config``: more librdkafka settings (``security.protocol``, ``sasl.*``, ``compression.type``...).
    ``timeout``: seconds for each blocking broker call. ``transaction_timeout``: seconds a transaction may stay open
    before the broker aborts it (librdkafka's ``transaction.timeout.ms``; default 900 s, Apache Kafka's and
    Redpanda's default ``transaction.max.timeout.ms``, which bounds it): the initial load is one transaction and must
    end within it. A crashed process's open transaction is aborted at once by its successor (same transactional id).
    """

    bootstrap: str
    replica: str
    prefix: str
    transactional: bool | None = None
    partitions: int = 1
    replication_factor: int = -1
    config: Mapping[str, Any] = field(default_factory=dict)
    timeout: float = 30.0
    transaction_timeout: float | None = None

    @property
    def transaction_timeout_ms(self) -> int:
        configured = self.config.get("transaction.timeout.ms")
        if configured is not None:
            return int(configured)
        if self.transaction_timeout is not None:
            return int(self.transaction_timeout * 1000)
        return max(900_000, int(self.timeout * 2000))

    def __post_init__(self) -> None:
        if not self.bootstrap or not self.replica or not self.prefix:
            raise ConfigurationError("KafkaSettings needs bootstrap, replica and prefix")


def _kafka() -> Any:
    try:
        import confluent_kafka
        import confluent_kafka.admin
    except ImportError as exc:
        raise ConfigurationError("the Kafka output needs confluent-kafka: pip install 'mybinlog[kafka]'") from exc
    return confluent_kafka


_FENCED_NAMES = frozenset(
    {"_FENCED", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"}
)


def _translate(exc: Exception, what: str, replica: str) -> Exception:
    """A confluent-kafka error as a mybinlog error (the caller raises it ``from exc``)."""
    error: Any = exc.args[0] if exc.args else None
    name = error.name() if hasattr(error, "name") else type(exc).__name__
    text = error.str() if hasattr(error, "str") else str(exc)
    if name in _FENCED_NAMES:
        return ReplicaLockedError(
            f"replica {replica!r}: another producer with transactional id {transactional_id(replica)!r} took over "
            f"({what}: {name}); this process must stop: the other one writes the replica now"
        )
    if hasattr(error, "retriable") and error.retriable():
        return TargetConnectionError(f"Kafka {what} failed, retrying may succeed: {name}: {text}")
    return TargetError(f"Kafka {what} failed: {name}: {text}")


class _Worker(concurrent.futures.Executor):
    """One daemon thread that runs librdkafka's blocking calls in order. Not a ThreadPoolExecutor: its threads are
    joined at interpreter exit, and a call stuck in librdkafka past its timeout (:meth:`KafkaProducer._bounded`)
    would then keep the process from exiting."""

    def __init__(self, name: str) -> None:
        self._queue: queue.SimpleQueue[tuple[concurrent.futures.Future[Any], Callable[[], Any]] | None]
        self._queue = queue.SimpleQueue()
        threading.Thread(target=self._loop, name=name, daemon=True).start()

    def _loop(self) -> None:
        while (item := self._queue.get()) is not None:
            future, call = item
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(call())
                except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine
                    future.set_exception(exc)

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._queue.put((future, functools.partial(fn, *args, **kwargs)))
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._queue.put(None)


class KafkaProducer:
    """The Kafka side of one replica (see the module docstring). Use ``async with`` or :meth:`start`/:meth:`close`.

    Attributes after :meth:`start`: :attr:`mode` (``"exactly-once"`` or ``"at-least-once"``), :attr:`position` (the
    last committed position, the JSON object given to :meth:`commit`, or ``None``), :attr:`position_topic`.
    """

    def __init__(self, settings: KafkaSettings) -> None:
        self.settings = settings
        self.position_topic = position_topic_name(settings.prefix)
        self.mode = "stopped"
        self.position: dict[str, Any] | None = None
        self._kafka = _kafka()
        self._executor = _Worker(f"mybinlog-kafka-{settings.replica}")
        self._producer: Any = None
        self._admin: Any = None
        self._group_metadata: Any = None
        self._known_topics: set[str] = set()
        self._errors: list[Any] = []
        self._position_offset = -1
        self._stuck = False  # a call of librdkafka outlived its timeout: the worker thread is blocked in it
        self._open = False  # a transaction begun by send() is open: commit() ends it
        self._transactional = False  # the producer writes transactions (mode says what a crash may do)
        self._offsets_checked = False  # whether the broker keeps a transaction's group offset was checked
        self._plain_offsets = False  # it does not (librdkafka's mock): the offset is committed after the transaction
        self._offsets: Any = None  # the consumer that reads and commits the group's offset (worker thread)
        self._opened_at = 0.0  # when send() began it (time.monotonic())

    # -- plumbing ---

    def _base_config(self) -> dict[str, Any]:
        return {"bootstrap.servers": self.settings.bootstrap, "logger": log, **self.settings.config}

    async def _run(self, what: str, call: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, call, *args)
        except self._kafka.KafkaException as exc:
            raise _translate(exc, what, self.settings.replica) from exc
        except SystemError as exc:
            # confluent-kafka: a fatal error (fenced) raised inside flush() surfaces as the SystemError of the next
            # delivery callback, caused by the KafkaException, or as "returned NULL without setting an exception":
            # the transactional API then reports the fatal error itself
            cause = exc.__cause__ or exc.__context__
            if not isinstance(cause, self._kafka.KafkaException):
                cause = await loop.run_in_executor(self._executor, self._fatal_error)
            if isinstance(cause, self._kafka.KafkaException):
                raise _translate(cause, what, self.settings.replica) from exc
            raise TargetError(f"Kafka {what} failed: {exc}") from exc

    def _fatal_error(self) -> Exception | None:  # worker thread
        try:
            self._producer.abort_transaction(1.0)
        except self._kafka.KafkaException as exc:
            error = exc.args[0] if exc.args else None
            return exc if error is not None and error.fatal() else None
        except Exception:  # noqa: BLE001 - only probing for a fatal error; the caller reports the original one
            return None
        return None

    def _on_delivery(self, error: Any, message: Any) -> None:  # in the worker thread, inside poll/flush
        if error is not None:
            self._errors.append(error)
        elif message.topic() == self.position_topic:
            self._position_offset = message.offset()

    async def _flush(self, what: str) -> None:
        timeout = self.settings.timeout
        remaining = await self._run(what, self._producer.flush, timeout)
        if remaining:
            raise TargetConnectionError(f"Kafka {what}: {remaining} messages not acknowledged in {timeout} s")
        if self._errors:
            error, self._errors = self._errors[0], []
            raise _translate(self._kafka.KafkaException(error), what, self.settings.replica)

    # -- start ---

    async def start(self) -> KafkaProducer:
        """Create the position topic if missing, initialise transactions (fencing any former producer of the
        replica), and read back the last committed position into :attr:`position`."""
        kafka = self._kafka
        self._admin = kafka.admin.AdminClient(self._base_config())
        await self.ensure_topics([self.position_topic], compacted=True)
        transactional = self.settings.transactional
        if transactional is not False:
            config = {
                **self._base_config(),
                "transactional.id": transactional_id(self.settings.replica),
                "enable.idempotence": True,
                "on_delivery": self._on_delivery,
                "transaction.timeout.ms": self.settings.transaction_timeout_ms,
            }
            self._producer = kafka.Producer(config)
            try:
                await self._run("init_transactions", self._producer.init_transactions, self.settings.timeout)
            except ReplicaLockedError:
                raise
            except TargetError as exc:
                if transactional:
                    raise
                log.warning(
                    "replica %s: the broker refused transactions (%s): writing AT-LEAST-ONCE, a crash may repeat "
                    "the last batch; set transactional=True to refuse to start instead",
                    self.settings.replica,
                    exc,
                )
                self._producer = None
            else:
                self.mode = "exactly-once"
                self._transactional = True
                consumer = kafka.Consumer({**self._base_config(), "group.id": transactional_id(self.settings.replica)})
                self._group_metadata = consumer.consumer_group_metadata()
                consumer.close()
        if self._producer is None:
            if transactional is False:
                log.warning("replica %s: writing AT-LEAST-ONCE (transactional=False)", self.settings.replica)
            self._producer = kafka.Producer({**self._base_config(), "acks": "all", "on_delivery": self._on_delivery})
            self.mode = "at-least-once"
        self.position = await self._run("reading the position", self._read_position)
        return self

    def _read_position(self) -> dict[str, Any] | None:  # worker thread
        kafka = self._kafka
        partition = kafka.TopicPartition(self.position_topic, 0)
        consumer = kafka.Consumer(
            {
                **self._base_config(),
                "group.id": transactional_id(self.settings.replica),
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
            }
        )
        try:
            timeout = self.settings.timeout
            low, high = consumer.get_watermark_offsets(partition, timeout=timeout)
            if self._transactional:
                committed = consumer.committed([partition], timeout=timeout)[0].offset
                if committed <= 0:
                    return None  # no transaction of this replica committed yet
                start, end = committed - 1, committed
            else:
                start, end = low, high  # at-least-once: the last record of the replica up to the end
            found: dict[str, Any] | None = None
            if start >= end:
                return None
            consumer.assign([kafka.TopicPartition(self.position_topic, 0, start)])
            replica = self.settings.replica.encode()
            while True:
                message = consumer.poll(timeout)
                if message is None:
                    raise TargetConnectionError(f"reading {self.position_topic}: no answer in {timeout} s")
                error = message.error()
                if error is not None:
                    if error.code() == kafka.KafkaError._PARTITION_EOF:
                        break
                    raise kafka.KafkaException(error)
                if message.key() == replica and message.value() is not None:
                    found = json.loads(message.value())["position"]
                if message.offset() + 1 >= end:
                    break
            if found is None and self._transactional:
                raise TargetError(
                    f"the committed offset {end} of group {transactional_id(self.settings.replica)!r} on "
                    f"{self.position_topic} does not point at a position record of replica {self.settings.replica!r}"
                )
            return found
        finally:
            consumer.close()

    async def read_position(self) -> dict[str, Any] | None:
        """Read the last committed position back again (after a failed batch) into :attr:`position`."""
        self.position = await self._run("reading the position", self._read_position)
        return self.position

    async def cluster_id(self) -> str | None:
        """The cluster's id (None when the broker does not say), without starting the producer."""
        if self._admin is None:
            self._admin = self._kafka.admin.AdminClient(self._base_config())
        metadata = await self._run("reading the cluster id", self._admin.list_topics, None, self.settings.timeout)
        cluster: str | None = metadata.cluster_id
        return cluster or None

    async def ensure_topics(self, topics: Iterable[str], *, compacted: bool = False) -> None:
        """Create the topics that do not exist yet (an existing topic is left as it is)."""
        missing = [t for t in dict.fromkeys(topics) if t not in self._known_topics]
        if not missing:
            return
        metadata = await self._run("listing topics", self._admin.list_topics, None, self.settings.timeout)
        new = [t for t in missing if t not in metadata.topics]
        if new:
            admin = self._kafka.admin
            config = {"cleanup.policy": "compact"} if compacted else {}
            specs = [
                admin.NewTopic(
                    t, self.settings.partitions if not compacted else 1, self.settings.replication_factor, config=config
                )
                for t in new
            ]
            timeout = self.settings.timeout
            futures = self._admin.create_topics(specs, operation_timeout=timeout, request_timeout=timeout)
            for topic, future in futures.items():
                try:
                    # bounded here too: a request that never gets an answer must not hang the replica
                    await asyncio.wait_for(asyncio.wrap_future(future), timeout + 5.0)
                except (self._kafka.KafkaException, TimeoutError) as exc:
                    if isinstance(exc, self._kafka.KafkaException):
                        if exc.args[0].code() == self._kafka.KafkaError.TOPIC_ALREADY_EXISTS:
                            continue
                        error = _translate(exc, f"creating topic {topic}", self.settings.replica)
                    else:
                        error = TargetConnectionError(f"Kafka creating topic {topic}: no answer in {timeout + 5:g} s")
                    # a broker that cannot create it through the admin API (librdkafka's mock cluster names no
                    # controller) may create it when its metadata is asked for (auto.create.topics.enable)
                    if not await self._auto_created(topic):
                        raise TargetError(
                            f"{error}; the topic {topic!r} does not exist: create it (cleanup.policy=compact for "
                            f"{self.position_topic}), or let the broker create topics"
                        ) from exc
                    log.warning(
                        "replica %s: creating topic %s failed (%s); the broker created it when asked for its metadata "
                        "(its default partitions%s)",
                        self.settings.replica,
                        topic,
                        error,
                        " and cleanup policy, not compact" if compacted else "",
                    )
        self._known_topics.update(missing)

    async def _auto_created(self, topic: str) -> bool:
        """True when the broker has the topic after being asked for its metadata (which may create it)."""
        try:
            metadata = await self._run("reading topic metadata", self._admin.list_topics, topic, self.settings.timeout)
        except TargetError:
            return False
        found = metadata.topics.get(topic)
        return found is not None and found.error is None and bool(found.partitions)

    # -- batches ---

    async def _produce(self, topic: str, message: Message, partition: int | None = None) -> None:
        producer = self._producer
        extra = {} if partition is None else {"partition": partition}
        while True:
            try:
                producer.produce(topic, message.value, message.key, headers=list(message.headers) or None, **extra)
                return
            except BufferError:  # librdkafka's queue is full: let it send
                await self._run("producing", producer.poll, 0.05)

    async def _produce_all(self, messages: Iterable[tuple[str, Message]] | AsyncIterable[tuple[str, Message]]) -> None:
        """Produce ``messages`` in order. One plain loop: ``produce()`` is called inline and the loop awaits only
        when librdkafka's queue is full (``BufferError``: :meth:`_produce` polls and retries), not once a message
        (a coroutine per message cost about 0.4 us of the 10 us a row may take)."""
        produce = self._producer.produce
        if isinstance(messages, AsyncIterable):
            async for topic, message in messages:
                key, value, headers = message
                try:
                    produce(topic, value, key, headers=list(headers) if headers else None)
                except BufferError:
                    await self._produce(topic, message)
        else:
            for topic, message in messages:
                key, value, headers = message
                try:
                    produce(topic, value, key, headers=list(headers) if headers else None)
                except BufferError:
                    await self._produce(topic, message)

    async def commit(
        self,
        messages: Iterable[tuple[str, Message]] | AsyncIterable[tuple[str, Message]],
        position: dict[str, Any] | None,
    ) -> None:
        """Write ``messages`` (``(topic, message)`` pairs, in order) and ``position`` (a JSON object: mybinlog's
        checkpoint form of a binlog position) as one transaction; return when it is committed. ``position`` None:
        the messages alone (the committed position stays what it was). ``messages`` may be an async iterable (the
        Spark snapshot streams a chunk's rows through one transaction); ``position`` is serialised after the last
        message, so such an iterable may complete it (the chunk's row count).

        Raises :class:`~mybinlog.errors.ReplicaLockedError` when another producer took the replica over,
        :class:`~mybinlog.errors.TargetConnectionError` (retriable) when the broker could not be reached (the
        transaction is aborted: nothing of the batch is visible), :class:`~mybinlog.errors.TargetError` otherwise.
        """

        def record() -> Message:
            value = json.dumps({"replica": self.settings.replica, "position": position}).encode()
            return Message(self.settings.replica.encode(), value)

        if not self._transactional:
            await self._produce_all(messages)
            await self._flush("producing the batch")
            if position is not None:
                await self._produce(self.position_topic, record(), 0)
                await self._flush("storing the position")
                self.position = position
            return
        producer = self._producer
        opened_at = self._opened_at if self._open else time.monotonic()
        if not self._open:
            self._begin()
        self._open = False  # committed or aborted below
        try:
            await self._produce_all(messages)
            if position is not None:
                await self._produce(self.position_topic, record(), 0)
            await self._flush("producing the batch")
            if position is not None:
                _failpoints.reached("kafka.before_commit")  # messages and position sent, the transaction open
                pointer = [self._kafka.TopicPartition(self.position_topic, 0, self._position_offset + 1)]
                await self._bounded(
                    "send_offsets_to_transaction",
                    producer.send_offsets_to_transaction,
                    pointer,
                    self._group_metadata,
                    self.settings.timeout,
                )
            await self._bounded("commit_transaction", producer.commit_transaction, self.settings.timeout)
        except ReplicaLockedError as exc:
            self._too_long(opened_at, exc)
            raise
        except (TargetError, asyncio.CancelledError) as exc:
            if not self._stuck:  # else the abort would queue behind the blocked call: the next producer aborts
                await self._abort()
            if isinstance(exc, TargetError):
                self._too_long(opened_at, exc)
            raise
        if position is not None:
            self.position = position
            await self._offset_kept(pointer)

    async def _offset_kept(self, pointer: list[Any]) -> None:
        """After the first transaction of this producer with a position: check that the broker applied its group
        offset. librdkafka's mock cluster accepts ``send_offsets_to_transaction`` but keeps nothing: then the offset
        is committed after each transaction instead (a crash between the two repeats the batch: at-least-once)."""
        if self._plain_offsets:
            await self._run("committing the position's offset", self._commit_offset, pointer)
            return
        if self._offsets_checked:
            return
        self._offsets_checked = True
        kept = await self._run("reading the committed offset", self._committed_offset)
        if kept >= pointer[0].offset:
            return
        log.warning(
            "replica %s: the broker did not keep the consumer offset of a committed transaction (group %s: %s, not "
            "%s); committing it after each transaction instead: AT-LEAST-ONCE, a crash between the two repeats the "
            "batch (a broker that keeps them, as Apache Kafka does, is exactly-once)",
            self.settings.replica,
            transactional_id(self.settings.replica),
            kept,
            pointer[0].offset,
        )
        self._plain_offsets = True
        self.mode = "at-least-once"
        await self._run("committing the position's offset", self._commit_offset, pointer)

    def _group_consumer(self) -> Any:  # worker thread
        if self._offsets is None:
            group = transactional_id(self.settings.replica)
            self._offsets = self._kafka.Consumer(
                {**self._base_config(), "group.id": group, "enable.auto.commit": False}
            )
        return self._offsets

    def _committed_offset(self) -> int:  # worker thread
        partition = self._kafka.TopicPartition(self.position_topic, 0)
        committed = self._group_consumer().committed([partition], timeout=self.settings.timeout)
        return int(committed[0].offset)

    def _commit_offset(self, pointer: list[Any]) -> None:  # worker thread
        self._group_consumer().commit(offsets=pointer, asynchronous=False)

    def _too_long(self, opened_at: float, exc: Exception) -> None:
        """A transaction open longer than ``transaction.timeout.ms`` was aborted by the broker (which fences the
        producer, or reports an invalid state): say that, not "retry" or "another producer took over" (a retry would
        run as long again)."""
        limit = self.settings.transaction_timeout_ms / 1000
        seconds = time.monotonic() - opened_at
        if seconds > limit:
            raise TargetError(
                f"replica {self.settings.replica!r}: a Kafka transaction was open {seconds:.0f} s, longer than its "
                f"transaction timeout ({limit:g} s), and failed ({exc}); the initial load is one transaction: give "
                "the Kafka target a longer transaction_timeout=SECONDS (at most the broker's "
                "transaction.max.timeout.ms, 900 s by default), or load the tables with the Spark snapshot"
            ) from exc

    def _begin(self) -> None:
        self._errors = []
        self._position_offset = -1
        try:
            self._producer.begin_transaction()
        except self._kafka.KafkaException as exc:
            raise _translate(exc, "begin_transaction", self.settings.replica) from exc

    @property
    def in_transaction(self) -> bool:
        """True between a :meth:`send` and the :meth:`commit` (or failure) that ends its transaction."""
        return self._open

    async def send(self, messages: Iterable[tuple[str, Message]]) -> None:
        """Produce ``messages`` into the open transaction (begun here if none is open); the next :meth:`commit`
        commits them with its own messages and position, all or nothing. The initial load's messages go this way:
        a crash before that commit leaves none of them visible. At-least-once: produced and acknowledged at once.
        Errors as :meth:`commit` (the transaction is then aborted)."""
        if not self._transactional:
            await self._produce_all(messages)
            await self._flush("producing the batch")
            return
        if not self._open:
            self._begin()
            self._open = True
            self._opened_at = time.monotonic()
        try:
            await self._produce_all(messages)
            if self._errors:  # a delivery already failed (reported by a poll): the transaction cannot commit
                error, self._errors = self._errors[0], []
                raise _translate(self._kafka.KafkaException(error), "producing", self.settings.replica)
        except ReplicaLockedError:
            self._open = False
            raise
        except (TargetError, asyncio.CancelledError):
            self._open = False
            if not self._stuck:
                await self._abort()
            raise

    async def _bounded(self, what: str, call: Callable[..., T], *args: Any) -> T:
        """:meth:`_run` of a transactional call with a deadline of our own: librdkafka's
        ``send_offsets_to_transaction`` was seen blocking far past its timeout against a broker restarted under it
        (Tansu). Past the deadline the producer is given up (:attr:`stuck`): its owner makes a new one, whose
        ``init_transactions`` aborts the open transaction."""
        try:
            return await asyncio.wait_for(self._run(what, call, *args), self.settings.timeout + 5.0)
        except TimeoutError:
            self._stuck = True
            raise TargetConnectionError(
                f"Kafka {what}: no answer in {self.settings.timeout + 5.0:.0f} s; retrying with a new producer"
            ) from None

    @property
    def stuck(self) -> bool:
        """True when a call outlived its deadline (the worker thread is still blocked in it)."""
        return self._stuck

    async def _abort(self) -> None:
        try:
            await asyncio.shield(
                self._run("abort_transaction", self._producer.abort_transaction, self.settings.timeout)
            )
        except (TargetError, ReplicaLockedError) as exc:
            log.warning("replica %s: aborting the transaction failed: %s", self.settings.replica, exc)

    # -- close ---

    async def close(self) -> None:
        """Wait for what is queued (outside a transaction) and release the worker thread."""
        producer, self._producer = self._producer, None
        consumer, self._offsets = self._offsets, None
        if consumer is not None and not self._stuck:
            with contextlib.suppress(Exception):  # closing: nothing to report
                await asyncio.get_running_loop().run_in_executor(self._executor, consumer.close)
        if producer is not None and not self._stuck:
            try:
                await asyncio.get_running_loop().run_in_executor(self._executor, producer.flush, 1.0)
            except Exception:  # closing: the error was already raised where it happened
                log.debug("replica %s: flush at close failed", self.settings.replica, exc_info=True)
        self._executor.shutdown(wait=False)
        self.mode = "stopped"

    async def __aenter__(self) -> KafkaProducer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
