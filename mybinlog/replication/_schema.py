"""How a replica follows the source's schema: the tables in scope (their MySQL definitions, the ``mybinlog.ddl``
model) and the DDL statements of the binlog, applied to the model and handed to the sink (docs/replication.md,
"DDL"; docs/types.md).

:class:`SchemaTracker` is the replicator's collaborator for QUERY events: it flushes what is batched, parses the
statement (``mybinlog.ddl``), has the sink follow it (create, alter, rename, truncate, drop), updates the tracked
schemas in the checkpoint, and stops the replication of a table the sink cannot follow. A DDL replayed after a
crash between its ALTER and its checkpoint is recognised and not applied twice.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from .. import _failpoints
from .. import ddl as _ddl
from .._checkpoint import Checkpoint
from ..errors import MybinlogError
from ..protocol import QueryEvent
from ..source import SourceConnection

if TYPE_CHECKING:
    from ..source import DSN
    from ._leader import Leader
    from ._settings import ReplicaStatus
    from ._sink import Sink, SinkTable

__all__ = ["SchemaTracker"]

logger = logging.getLogger("mybinlog.replication")


class SchemaTracker:
    """The replica's tables and the DDL that changes them (see the module docstring).

    ``tables`` maps a source table name to the sink's table (one dict for the tracker's life: the sink reads it
    too); ``checkpoint`` is the replicator's checkpoint, whose ``tables``/``stopped`` this keeps current; ``dirty`` is
    set when a DDL was applied (the replicator flushes, so the checkpoint after it is saved at once).
    """

    def __init__(
        self,
        *,
        replica: str,
        dsn: DSN,
        database: str,
        wanted: Callable[[str], bool],
        sink: Sink,
        leader: Leader,
        status: ReplicaStatus,
        flush: Callable[[], Awaitable[None]],
    ) -> None:
        self.replica = replica
        self.dsn = dsn
        self.database = database
        self._wanted = wanted
        self.sink = sink
        self.leader = leader
        self.status = status
        self._flush = flush
        self.tables: dict[str, SinkTable] = {}
        self.checkpoint: Checkpoint | None = None
        self.dirty = False

    def load(self, cp: Checkpoint, built: Mapping[str, SinkTable] | None = None) -> None:
        """Start from the schemas a checkpoint recorded. ``built``: tables already made from the same texts (an
        initial load just made them), used instead of parsing again."""
        self.checkpoint = cp
        self.tables.clear()
        for name, text in cp.tables.items():
            if name not in cp.stopped:
                table = built.get(name) if built else None
                self.tables[name] = (
                    table if table is not None else self.sink.table(_ddl.parse_create_table(text, self.database))
                )
        self.status.stopped_tables = dict(cp.stopped)
        self.dirty = False

    # -- DDL -----------------------------------------------------------------------------------------------
    async def query(self, event: QueryEvent) -> None:
        """A QUERY event of the source (a DDL statement, or BEGIN/COMMIT/XA/SAVEPOINT, ignored)."""
        head = event.query.lstrip()[:9].upper()
        if head.startswith(("BEGIN", "COMMIT", "ROLLBACK", "XA ", "SAVEPOINT")):
            return
        ops = _ddl.parse_ddl(event.query, event.schema or self.database, sql_mode=event.sql_mode or 0)
        if not ops:
            return
        relevant = [op for op in ops if self._ddl_relevant(op)]
        if not relevant:
            return
        await self._flush()  # what is batched first (the DDL is its own transaction)
        await self.leader.confirm()
        when = dt.datetime.fromtimestamp(event.timestamp, dt.UTC).replace(tzinfo=None) if event.timestamp else None
        for op in relevant:
            await self._apply_ddl(op, event.query, when)
        if _failpoints.ACTIVE:
            _failpoints.reached("ddl.after_apply")
        self.status.ddl_applied += 1
        self.dirty = True

    def _ddl_relevant(self, op: Any) -> bool:
        return any(schema == self.database for schema, _name in _ddl_tables(op))

    async def _apply_ddl(self, op: Any, statement: str, statement_time: dt.datetime | None = None) -> None:
        cp = self.checkpoint
        assert cp is not None
        db = self.database
        if isinstance(op, _ddl.CreateTable):
            t = op.table
            if t.schema != db or not self._wanted(t.name):
                return
            await self.sink.create_table(t)
            self.tables[t.name] = self.sink.table(t)
            cp.tables[t.name] = _ddl.render_create_table(t)
        elif isinstance(op, _ddl.CreateTableLike):
            if op.schema != db or not self._wanted(op.name):
                return
            like = self.tables.get(op.like_name) if op.like_schema == db else None
            if like is None:
                await self.stop_table(op.name, statement, "the table it copies is not replicated")
                return
            t = _copy_table(like.definition, db, op.name)
            await self.sink.create_table(t)
            self.tables[t.name] = self.sink.table(t)
            cp.tables[t.name] = _ddl.render_create_table(t)
        elif isinstance(op, _ddl.AlterTable):
            if op.schema != db or op.name not in self.tables:
                return
            await self._alter(self.tables[op.name], op, statement, statement_time)
        elif isinstance(op, _ddl.RenameTable):
            for (s1, n1), (s2, n2) in op.pairs:
                if s1 == db and n1 in self.tables:
                    table = self.tables.pop(n1)
                    cp.tables.pop(n1, None)
                    if s2 != db or not self._wanted(n2):
                        await self.sink.drop_table(n1)
                        continue
                    t = _copy_table(table.definition, db, n2)
                    await self.sink.rename_table(table, t)
                    self.tables[n2] = table
                    cp.tables[n2] = _ddl.render_create_table(t)
        elif isinstance(op, _ddl.DropTable):
            for s1, n1 in op.tables:
                if s1 == db and (n1 in self.tables or n1 in cp.stopped):
                    self.tables.pop(n1, None)
                    cp.tables.pop(n1, None)
                    cp.stopped.pop(n1, None)
                    await self.sink.drop_table(n1)
        elif isinstance(op, _ddl.TruncateTable):
            if op.schema == db and op.name in self.tables:
                await self.sink.truncate_table(self.tables[op.name])
        elif isinstance(op, _ddl.DropDatabase):
            if op.name == db:
                for name in list(self.tables):
                    await self.sink.drop_table(name)
                self.tables.clear()
                cp.tables.clear()
        elif isinstance(op, _ddl.CreateDatabase):
            return
        elif isinstance(op, _ddl.CreateTableSelect):
            if op.schema != db or not self._wanted(op.name):
                return
            async with await SourceConnection.connect(self.dsn) as src:
                try:
                    text = await src.show_create_table(db, op.name)
                except MybinlogError as exc:
                    await self.stop_table(op.name, statement, f"SHOW CREATE TABLE failed: {exc}")
                    return
            t = _ddl.parse_create_table(text, db)
            await self.sink.create_table(t)
            self.tables[t.name] = self.sink.table(t)
            cp.tables[t.name] = _ddl.render_create_table(t)
        elif isinstance(op, _ddl.Unsupported):
            for schema, name in _ddl_tables(op):
                if schema == db and name in self.tables:
                    await self.stop_table(name, statement, op.reason)

    async def _alter(self, table: SinkTable, op: Any, statement: str, statement_time: dt.datetime | None) -> None:
        cp = self.checkpoint
        assert cp is not None
        definition = table.definition
        for action in op.actions:
            if isinstance(action, _ddl.UnsupportedAction):
                await self.stop_table(table.name, statement, action.reason)
                return
            if isinstance(action, _ddl.NoOpAction):  # nothing to do in the replica; keep the definition exact
                with contextlib.suppress(MybinlogError):
                    definition = _ddl.apply_alter(definition, action)
                continue
            if _already_applied(definition, action):
                continue  # replayed after a crash between the DDL and its checkpoint, or the schema is newer
            try:
                new = _ddl.apply_alter(definition, action)
            except MybinlogError as exc:
                await self.stop_table(table.name, statement, str(exc))
                return
            if isinstance(action, _ddl.RenameTableAction):
                self.tables.pop(table.name, None)
                cp.tables.pop(table.name, None)
                if new.schema != self.database or not self._wanted(new.name):
                    await self.sink.drop_table(table.name)
                    return
                await self.sink.rename_table(table, new)
                self.tables[new.name] = table
                cp.tables[new.name] = _ddl.render_create_table(new)
                definition = new
                continue
            reason = await self.sink.alter_table(table, definition, new, action, statement_time)
            if reason is not None:  # the sink cannot follow
                await self.stop_table(table.name, statement, reason)
                return
            definition = new
        self.sink.redefine(table, definition)
        cp.tables[table.name] = _ddl.render_create_table(definition)

    async def stop_table(self, name: str, statement: str, reason: str) -> None:
        cp = self.checkpoint
        assert cp is not None
        if statement:
            message = (
                f"replication of {self.database}.{name} stopped at {cp.position}: cannot translate "
                f"{statement[:300]!r} ({reason}). The replica's table keeps the data up to this statement; re-create "
                "the replica of this table (drop it in the replica and run a snapshot/backfill) once the schema is "
                "supported"
            )
        else:
            message = (
                f"replication of {self.database}.{name} stopped at {cp.position}: {reason}. Fix that, then copy the "
                f"table with a backfill (mybinlog snapshot --mode backfill --tables {name})"
            )
        logger.error("%s: %s", self.replica, message)
        self.tables.pop(name, None)
        cp.tables.pop(name, None)
        cp.stopped[name] = message
        self.status.stopped_tables[name] = message


# ------------------------------------------------------------------------------------------------------------
# helpers


def _copy_table(definition: _ddl.TableDef, schema: str, name: str) -> _ddl.TableDef:
    text = _ddl.render_create_table(definition)
    t = _ddl.parse_create_table(text, schema)
    t.schema, t.name = schema, name
    return t


def _ddl_tables(op: Any) -> list[tuple[str, str]]:
    """(schema, table) pairs a DDL op touches."""
    if isinstance(op, _ddl.CreateTable):
        return [(op.table.schema, op.table.name)]
    if isinstance(op, _ddl.RenameTable):
        return [p for pair in op.pairs for p in pair]
    if isinstance(op, _ddl.DropTable):
        return list(op.tables)
    if isinstance(op, _ddl.CreateDatabase | _ddl.DropDatabase):
        return [(op.name, "")]
    if isinstance(op, _ddl.CreateTableLike):
        return [(op.schema, op.name)]
    schema = getattr(op, "schema", None)
    name = getattr(op, "name", None)
    if schema is not None and name is not None:
        return [(schema, name)]
    return []


def _already_applied(definition: _ddl.TableDef, action: Any) -> bool:
    names = {c.name.lower() for c in definition.columns}
    if isinstance(action, _ddl.AddColumn):
        return action.column.name.lower() in names
    if isinstance(action, _ddl.DropColumn):
        return action.name.lower() not in names
    if isinstance(action, _ddl.ChangeColumn):
        return action.old_name.lower() not in names and action.column.name.lower() in names
    if isinstance(action, _ddl.RenameColumn):
        return action.old.lower() not in names and action.new.lower() in names
    return False
