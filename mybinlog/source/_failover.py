"""Source failover: may a stream read on from another server of its replication topology?

A :class:`~mybinlog.BinlogStream` whose DSN names several servers (``mysql://repl@db1,db2``) moves to the next one
when its server fails. A position is a GTID set, so on another server it names the same transactions; what must be
true of that server first (docs/ha.md, "Source failover"):

1. **Its history contains the position.** MySQL: ``gtid_executed`` contains the position's set. MariaDB, domain by
   domain: ``gtid_binlog_state`` holds the position's last GTID (same domain and origin server) with a sequence
   number at least as high. A server of the same topology that has not got there yet **lags**
   (:class:`SourceLaggingError`, retried within the reconnect budget); one that shares nothing with the position is
   **another topology** (:class:`SourceHistoryError`).
2. **It holds no errant transaction**: a transaction written on it while it was still a replica, which the old
   server never had. Reading on would apply it to the replica although the old source never had it, while the rows
   it changed differ from what the replica holds. The check reads the new server's binlog after the position (the
   transactions the stream would read next) and finds the server's own transactions (its ``server_uuid`` on MySQL,
   its ``server_id`` on MariaDB) that come *before* a transaction of the old topology: written while it still
   applied the old source's transactions, so not after a promotion. Its own transactions after the last replicated
   one look exactly like the first writes after a promotion and are read as such.
3. **GTIDs at all**: a file and an offset name nothing on another server; without GTIDs the move is refused
   (:class:`SourceHistoryError`), in :mod:`._stream`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable

from ..errors import PreconditionError, SourceHistoryError, SourceLaggingError
from ..protocol import (
    BinlogPosition,
    Event,
    EventDecoder,
    GtidEvent,
    MariaDBGtid,
    MariadbGtidEvent,
    MariaDBGtidSet,
    MySQLGtid,
    MySQLGtidSet,
    parse_gtid_set,
)
from ._connection import BinlogConnection

__all__ = ["check_other_server"]

logger = logging.getLogger("mybinlog.stream")

_SHOWN = 10  # errant GTIDs named in an error (their number is always given)

_NEW_SNAPSHOT = (
    "take a new snapshot from this server (mybinlog snapshot, or drop the replica's checkpoint and let replicate "
    "load it again)"
)


async def check_other_server(conn: BinlogConnection, resume: BinlogPosition, *, old_server_id: int) -> None:
    """Raise unless the stream may resume from ``resume`` (a GTID position read from the server ``old_server_id``)
    on ``conn``'s server, another server of the topology (see the module docstring)."""
    assert resume.gtid_set is not None
    where = conn.dsn.display
    await _check_logs_replicated(conn)
    if conn.info.flavor == "mysql":
        _, _, text = await conn.current_position()
        executed = parse_gtid_set(text, "mysql")
        assert isinstance(executed, MySQLGtidSet)
        assert isinstance(resume.gtid_set, MySQLGtidSet)
        _check_mysql(where, executed, resume.gtid_set, old_server_id)
        own = conn.info.server_uuid
    else:
        rows = await conn.query("SELECT @@global.gtid_binlog_state, @@global.gtid_strict_mode")
        state_text, strict = rows[0]
        state = _mariadb_state(_text(state_text))
        assert isinstance(resume.gtid_set, MariaDBGtidSet)
        _check_mariadb(where, state, resume.gtid_set, old_server_id)
        if not int(strict or 0):
            logger.warning(
                "%s: gtid_strict_mode is OFF on this server: MariaDB does not then ensure that sequence numbers only "
                "grow, which the failover check relies on. Set gtid_strict_mode=ON on every server of the topology",
                where,
            )
        own = None
    errant = await _errant(conn, resume, own)
    if errant:
        shown = ", ".join(errant[:_SHOWN]) + (f" and {len(errant) - _SHOWN} more" if len(errant) > _SHOWN else "")
        raise SourceHistoryError(
            f"{where}: this server (server_id {conn.info.server_id}) holds {len(errant)} errant transaction(s) that "
            f"the old source (server_id {old_server_id}) never had: {shown}. They were written on it while it was "
            "still a replica (they come before transactions it replicated), so following it would apply changes the "
            "old source never made, to rows that differ. Find them on the server (SHOW BINLOG EVENTS, mysqlbinlog) "
            f"and {_NEW_SNAPSHOT}; or list a server without them first"
        )


async def _check_logs_replicated(conn: BinlogConnection) -> None:
    """A server that does not write what it replicates to its own binlog has, in its binlog, only the transactions
    written on it: reading it from the position would skip the replicated ones (MySQL still counts them in
    ``gtid_executed``), so it is refused."""
    mysql = conn.info.flavor == "mysql"
    name = "log_replica_updates" if mysql and conn.info.version >= (8, 0, 26) else "log_slave_updates"
    rows = await conn.query(f"SELECT @@global.{name}")
    if rows and not int(rows[0][0] or 0):
        raise PreconditionError(
            f"{conn.dsn.display}: this server has {name}=OFF: its binlog lacks the transactions it replicated, so "
            f"following it after a failover would skip them. Set {name}=ON on every server a source list names "
            "(it needs a restart), or remove this server from the list"
        )


def _check_mysql(where: str, executed: MySQLGtidSet, position: MySQLGtidSet, old_server_id: int) -> None:
    if executed.contains(position):
        return
    missing = position - executed
    if not (position - missing):
        raise SourceHistoryError(
            f"{where}: this server's executed GTIDs [{executed}] share no transaction with this stream's position "
            f"[{position}] (read from server_id {old_server_id}): it is not a server of the same replication "
            f"topology. Remove it from the source list, or, to follow this topology from now on, {_NEW_SNAPSHOT}"
        )
    raise SourceLaggingError(
        f"{where}: this server has not yet executed [{missing}] of this stream's position [{position}] (it has "
        f"[{executed}]): a replica that lags behind; waiting for it to catch up. If it never does, those transactions "
        f"were lost with the old source (server_id {old_server_id}) although the replica already has them: "
        f"{_NEW_SNAPSHOT}"
    )


def _mariadb_state(text: str) -> dict[tuple[int, int], int]:
    """``gtid_binlog_state`` (the last GTID of every domain and origin server) as ``{(domain, server): seq}``."""
    state: dict[tuple[int, int], int] = {}
    for item in text.split(","):
        if item.strip():
            gtid = MariaDBGtid.parse(item)
            key = (gtid.domain_id, gtid.server_id)
            state[key] = max(state.get(key, 0), gtid.seq_no)
    return state


def _check_mariadb(where: str, state: dict[tuple[int, int], int], position: MariaDBGtidSet, old_server_id: int) -> None:
    shown = ",".join(f"{d}-{s}-{q}" for (d, s), q in sorted(state.items())) or "nothing"
    behind: list[str] = []
    for gtid in position:
        have = state.get((gtid.domain_id, gtid.server_id))
        if have is None:
            raise SourceHistoryError(
                f"{where}: this server's binlog state [{shown}] has no transaction of domain {gtid.domain_id} from "
                f"server_id {gtid.server_id}, whose GTID {gtid} is this stream's position [{position}] (read from "
                f"server_id {old_server_id}): it is not a server of the same replication topology. Remove it from "
                f"the source list, or, to follow this topology from now on, {_NEW_SNAPSHOT}"
            )
        if have < gtid.seq_no:
            # strict mode: sequence numbers grow in a domain, so a server that already holds other transactions
            # at or above this one's number can never replicate it: those are errant transactions
            others = sorted(
                (q, s)
                for (d, s), q in state.items()
                if d == gtid.domain_id and s != gtid.server_id and q >= gtid.seq_no
            )
            if others:
                errant = ", ".join(f"{gtid.domain_id}-{s}-{q}" for q, s in others)
                raise SourceHistoryError(
                    f"{where}: this server holds errant transaction(s) {errant} in domain {gtid.domain_id} that the "
                    f"old source (server_id {old_server_id}) never had, in place of this stream's position {gtid} "
                    f"(it reached only {gtid.domain_id}-{gtid.server_id}-{have}): its history went another way and "
                    f"it can never replicate {gtid} (gtid_strict_mode). {_NEW_SNAPSHOT[0].upper()}{_NEW_SNAPSHOT[1:]}"
                )
            behind.append(f"{gtid} (it has {gtid.domain_id}-{gtid.server_id}-{have})")
    if behind:
        raise SourceLaggingError(
            f"{where}: this server has not yet reached {', '.join(behind)} of this stream's position [{position}]: a "
            "replica that lags behind; waiting for it to catch up. If it never does, those transactions were lost "
            f"with the old source (server_id {old_server_id}) although the replica already has them: {_NEW_SNAPSHOT}"
        )


async def _errant(conn: BinlogConnection, resume: BinlogPosition, own_uuid: str | None) -> list[str]:
    """The server's own transactions after ``resume`` that come before a transaction it replicated, in its binlog
    (see the module docstring).

    First a non-blocking dump from the position (what the stream would read): the server's own transactions in it,
    and those already followed there by a replicated one. When some own ones are not, a second dump by file and
    offset from the first of them to the end of the binlog also sees the replicated transactions the position
    contains (the GTID dump skips those): any of them after an own transaction makes it errant.
    """
    own_id = conn.info.server_id
    position = resume.gtid_set
    assert position is not None

    def origin(event: object) -> tuple[str, bool] | None:
        if isinstance(event, GtidEvent):
            if event.gtid is None:
                return None
            return str(event.gtid), own_uuid is not None and event.gtid.sid == own_uuid
        if isinstance(event, MariadbGtidEvent):
            return str(event.gtid), event.gtid.server_id == own_id
        return None

    def contained(name: str) -> bool:
        if isinstance(position, MySQLGtidSet):
            return MySQLGtid.parse(name) in position
        gtid = MariaDBGtid.parse(name)
        have = position.get(gtid.domain_id) if isinstance(position, MariaDBGtidSet) else None
        return have is not None and gtid.seq_no <= have.seq_no

    errant: list[str] = []
    pending: list[tuple[str, str, int]] = []  # own transactions not yet followed by a replicated one: (gtid, file, at)
    async for event, (name, mine) in _gtid_events(conn, origin, gtid_set=position):
        if mine:
            pending.append((name, event.file or "", event.log_pos - event.size))
        elif pending:
            errant.extend(p[0] for p in pending)
            pending.clear()
    if pending and pending[0][1]:
        candidates = {p[0] for p in pending}
        waiting: list[str] = []
        async for _, (name, mine) in _gtid_events(conn, origin, file=pending[0][1], offset=pending[0][2]):
            if mine:
                if name in candidates:
                    waiting.append(name)
            elif waiting:
                errant.extend(waiting)
                waiting.clear()
    return list(dict.fromkeys(errant))


async def _gtid_events(
    conn: BinlogConnection,
    origin: Callable[[object], tuple[str, bool] | None],
    *,
    gtid_set: object = None,
    file: str = "",
    offset: int = 4,
) -> AsyncIterator[tuple[Event, tuple[str, bool]]]:
    """The GTID events of a non-blocking dump on a second connection to ``conn``'s server, with their origin."""
    scan = await BinlogConnection.connect(conn.dsn, heartbeat_period=0, check_preconditions=False)
    try:
        if gtid_set is not None:
            await scan.start_dump(gtid_set=gtid_set, blocking=False)
        else:
            await scan.start_dump(file=file, position=offset, blocking=False)
        decoder = EventDecoder(checksum=scan.checksum, verify_checksum=True, file=file or None, network=True)
        while (batch := await scan.read_events()) is not None:
            events: list[Event] = []
            decoder.decode_batch(batch, events)
            for event in events:
                found = origin(event)
                if found is not None:
                    yield event, found
    finally:
        await scan.close()


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes | bytearray) else str(value or "")
