"""How a replica follows the source's schema: its tables (definition, ClickHouse table, row encoders) and the DDL
statements of the binlog, translated and applied in ClickHouse (docs/replication.md, "DDL"; docs/types.md).

:class:`SchemaChanges` is the part of :class:`~mybinlog.replication.Replicator` that handles a QUERY event: it
flushes what is batched, parses the statement (:mod:`.ddl`), applies the ClickHouse statements (:mod:`._chschema`),
updates the tracked schemas in the checkpoint, and stops the replication of a table it cannot follow. A DDL
replayed after a crash between its ALTER and its checkpoint is recognised and not applied twice.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import operator
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from .. import _failpoints, clickhouse
from .. import ddl as _ddl
from ..clickhouse import Checkpoint, Target, quote_ident, quote_string
from ..clickhouse import types as _types
from ..errors import MybinlogError, ReplicationError, TargetError
from ..protocol._events import QueryEvent
from ..source._session import SourceConnection

if TYPE_CHECKING:
    from ..protocol._position import BinlogPosition
    from ..source._dsn import DSN
    from ._settings import ReplicaStatus, ReplicationSettings

__all__ = ["SchemaChanges", "TableOwner"]

logger = logging.getLogger("mybinlog.replication")


# ------------------------------------------------------------------------------------------------------------
# per-table state


class _Layout(NamedTuple):
    """How the rows of one event layout (its column names) become ClickHouse rows."""

    positions: list[int]  # index in the row image of each table column, or -1
    key: list[int]  # indexes of the key columns in the row image ([]: the whole row is the key)
    encode_rows: Callable[[Sequence[Sequence[Any]]], list[str]]  # rows -> their TabSeparated fields (no meta columns)
    key_of: Callable[[Sequence[Any]], Any] | None  # row -> its key (the value for one column, else a tuple)


class TableOwner(Protocol):
    """What a :class:`_Table` reads of the replica that owns it (the replicator)."""

    @property
    def target(self) -> Target: ...
    @property
    def settings(self) -> ReplicationSettings: ...
    @property
    def database(self) -> str: ...
    @property
    def target_database(self) -> str: ...
    @property
    def flavor(self) -> str: ...


class _Table:
    """A replicated table: its MySQL definition, its ClickHouse table, encoders and buffered changes."""

    def __init__(self, repl: TableOwner, definition: _ddl.TableDef) -> None:
        self.repl = repl
        self.define(definition)

    def define(self, definition: _ddl.TableDef) -> None:
        caps = self.repl.target.capabilities
        self.definition = definition
        self.name = definition.name
        self.columns = [c.name for c in definition.columns]
        self.lower = [c.lower() for c in self.columns]
        # MySQL's binlog carries JSON as parsed binary JSON, MariaDB's (a LONGTEXT alias) and SELECT as text;
        # columns missing from a row image (an older schema, replayed) get MySQL's implicit default
        kind, key_columns = clickhouse.sorting_key(definition)
        # the key of the ClickHouse sorting order: one row per key survives FINAL; "row" = the whole row is the key
        self.key = [] if kind == "row" else [self.lower.index(k.lower()) for k in key_columns]
        self.layouts: dict[tuple[str | None, ...], _Layout] = {}
        self.select_encoder = _types.make_row_encoder(definition.columns, caps, parsed_json=False)
        self.insert_columns = [*self.columns, *clickhouse.meta_columns(self.repl.settings.engine)]

    @property
    def ch_table(self) -> str:
        return f"{quote_ident(self.repl.target_database)}.{quote_ident(self.name)}"

    def layout(self, names: tuple[str | None, ...]) -> _Layout:
        """For an event's column names: the index in the row image of each table column, the key, and the generated
        row encoders for that layout."""
        got = self.layouts.get(names)
        if got is None:
            if names and all(n is not None for n in names):
                where = {str(n).lower(): i for i, n in enumerate(names)}
                idx = [where.get(c, -1) for c in self.lower]
            else:  # no column names in the binlog (binlog_row_metadata=MINIMAL): by position
                idx = [i if i < len(names) else -1 for i in range(len(self.columns))]
            key = [idx[k] for k in self.key]
            if any(k < 0 for k in key):
                raise ReplicationError(
                    f"rows event for {self.repl.database}.{self.name} lacks primary key column(s) "
                    f"{[self.columns[k] for k in self.key]}; the binlog does not match the tracked schema "
                    f"{_ddl.render_create_table(self.definition)!r}"
                )
            encode_rows = _types.make_rows_encoder(
                self.definition.columns,
                self.repl.target.capabilities,
                parsed_json=self.repl.flavor == "mysql",
                positions=idx,
            )
            got = self.layouts[names] = _Layout(
                idx,
                key,
                encode_rows,
                operator.itemgetter(*key) if key else None,
            )
        return got


class SchemaChanges:
    """The DDL side of a replicator (a mixin: the attributes and methods below come from
    :class:`~mybinlog.replication.Replicator`)."""

    dsn: DSN
    target: Target
    database: str
    target_database: str
    replica: str
    settings: ReplicationSettings
    status: ReplicaStatus
    _checkpoint: Checkpoint | None
    _tables: dict[str, _Table]
    flavor: str
    _ddl_dirty: bool
    _batch: dict[str, dict[Any, Any]]
    _batch_end: BinlogPosition | None

    async def _flush(self) -> None:
        raise NotImplementedError

    async def _confirm_lease(self) -> None:
        raise NotImplementedError

    async def _create_ch_table(self, definition: _ddl.TableDef) -> None:
        raise NotImplementedError

    def _wanted(self, table: str) -> bool:
        raise NotImplementedError

    # -- DDL -----------------------------------------------------------------------------------------------
    async def _query(self, event: QueryEvent) -> None:
        head = event.query.lstrip()[:9].upper()
        if head.startswith(("BEGIN", "COMMIT", "ROLLBACK", "XA ", "SAVEPOINT")):
            return
        ops = _ddl.parse_ddl(event.query, event.schema or self.database, sql_mode=event.sql_mode or 0)
        if not ops:
            return
        relevant = [op for op in ops if self._ddl_relevant(op)]
        if not relevant:
            return
        await self._commit_pending_rows()
        await self._confirm_lease()
        when = dt.datetime.fromtimestamp(event.timestamp, dt.UTC).replace(tzinfo=None) if event.timestamp else None
        for op in relevant:
            await self._apply_ddl(op, event.query, when)
        if _failpoints.ACTIVE:
            _failpoints.reached("ddl.after_apply")
        self.status.ddl_applied += 1
        self._ddl_dirty = True

    async def _commit_pending_rows(self) -> None:
        """Flush what is batched before a DDL changes the tables (the DDL is its own transaction)."""
        if self._batch or self._batch_end is not None:
            await self._flush()

    def _ddl_relevant(self, op: Any) -> bool:
        return any(schema == self.database for schema, _name in _ddl_tables(op))

    async def _apply_ddl(self, op: Any, statement: str, statement_time: dt.datetime | None = None) -> None:
        cp = self._checkpoint
        assert cp is not None
        db = self.database
        if isinstance(op, _ddl.CreateTable):
            t = op.table
            if t.schema != db or not self._wanted(t.name):
                return
            await self._create_ch_table(t)
            self._tables[t.name] = _Table(self, t)
            cp.tables[t.name] = _ddl.render_create_table(t)
        elif isinstance(op, _ddl.CreateTableLike):
            if op.schema != db or not self._wanted(op.name):
                return
            like = self._tables.get(op.like_name) if op.like_schema == db else None
            if like is None:
                await self._stop_table(op.name, statement, "the table it copies is not replicated")
                return
            t = _copy_table(like.definition, db, op.name)
            await self._create_ch_table(t)
            self._tables[t.name] = _Table(self, t)
            cp.tables[t.name] = _ddl.render_create_table(t)
        elif isinstance(op, _ddl.AlterTable):
            if op.schema != db or op.name not in self._tables:
                return
            await self._alter(self._tables[op.name], op, statement, statement_time)
        elif isinstance(op, _ddl.RenameTable):
            for (s1, n1), (s2, n2) in op.pairs:
                if s1 == db and n1 in self._tables:
                    table = self._tables.pop(n1)
                    cp.tables.pop(n1, None)
                    if s2 != db or not self._wanted(n2):
                        await self.target.execute(f"DROP TABLE IF EXISTS {table.ch_table}")
                        continue
                    await self._rename_ch(n1, n2)
                    t = _copy_table(table.definition, db, n2)
                    table.define(t)
                    self._tables[n2] = table
                    cp.tables[n2] = _ddl.render_create_table(t)
        elif isinstance(op, _ddl.DropTable):
            for s1, n1 in op.tables:
                if s1 == db and (n1 in self._tables or n1 in cp.stopped):
                    self._tables.pop(n1, None)
                    cp.tables.pop(n1, None)
                    cp.stopped.pop(n1, None)
                    q = f"{quote_ident(self.target_database)}.{quote_ident(n1)}"
                    await self.target.execute(f"DROP TABLE IF EXISTS {q}")
        elif isinstance(op, _ddl.TruncateTable):
            if op.schema == db and op.name in self._tables:
                await self._truncate(self._tables[op.name])
        elif isinstance(op, _ddl.DropDatabase):
            if op.name == db:
                for name in list(self._tables):
                    q = f"{quote_ident(self.target_database)}.{quote_ident(name)}"
                    await self.target.execute(f"DROP TABLE IF EXISTS {q}")
                self._tables.clear()
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
                    await self._stop_table(op.name, statement, f"SHOW CREATE TABLE failed: {exc}")
                    return
            t = _ddl.parse_create_table(text, db)
            await self._create_ch_table(t)
            self._tables[t.name] = _Table(self, t)
            cp.tables[t.name] = _ddl.render_create_table(t)
        elif isinstance(op, _ddl.Unsupported):
            for schema, name in _ddl_tables(op):
                if schema == db and name in self._tables:
                    await self._stop_table(name, statement, op.reason)

    async def _alter(self, table: _Table, op: Any, statement: str, statement_time: dt.datetime | None) -> None:
        cp = self._checkpoint
        assert cp is not None
        definition = table.definition
        for action in op.actions:
            if isinstance(action, _ddl.UnsupportedAction):
                await self._stop_table(table.name, statement, action.reason)
                return
            if isinstance(action, _ddl.NoOpAction):  # nothing to do in ClickHouse; keep the definition exact
                with contextlib.suppress(MybinlogError):
                    definition = _ddl.apply_alter(definition, action)
                continue
            if _already_applied(definition, action):
                continue  # replayed after a crash between the DDL and its checkpoint, or the schema is newer
            try:
                new = _ddl.apply_alter(definition, action)
            except MybinlogError as exc:
                await self._stop_table(table.name, statement, str(exc))
                return
            if isinstance(action, _ddl.RenameTableAction):
                self._tables.pop(table.name, None)
                cp.tables.pop(table.name, None)
                if new.schema != self.database or not self._wanted(new.name):
                    await self.target.execute(f"DROP TABLE IF EXISTS {table.ch_table}")
                    return
                await self._rename_ch(table.name, new.name)
                table.define(new)
                self._tables[new.name] = table
                cp.tables[new.name] = _ddl.render_create_table(new)
                definition = new
                continue
            statements = clickhouse.alter_sql(
                definition,
                new,
                action,
                database=self.target_database,
                engine=self.settings.engine,
                caps=self.target.capabilities,
                statement_time=statement_time,
            )
            if isinstance(statements, str):  # a reason why ClickHouse cannot follow
                await self._stop_table(table.name, statement, statements)
                return
            for sql in statements:
                try:
                    await self.target.execute(sql)
                except TargetError:
                    if not await self._ch_matches(table, new):
                        raise
            definition = new
        table.define(definition)
        cp.tables[table.name] = _ddl.render_create_table(definition)

    async def _ch_matches(self, table: _Table, new: _ddl.TableDef) -> bool:
        """Whether the ClickHouse table already has the columns of ``new`` (a DDL replayed after a crash)."""
        rows = await self.target.query(f"DESCRIBE TABLE {table.ch_table}")
        have = {r[0] for r in rows if r[0] not in clickhouse.META_COLUMNS}
        return have == {c.name for c in new.columns}

    async def _rename_ch(self, old: str, new: str) -> None:
        db = quote_ident(self.target_database)
        src, dst = f"{db}.{quote_ident(old)}", f"{db}.{quote_ident(new)}"
        try:
            await self.target.execute(f"RENAME TABLE {src} TO {dst}")
        except TargetError:
            rows = await self.target.query(
                f"SELECT name FROM system.tables WHERE database = {quote_string(self.target_database)} "
                f"AND name IN ({quote_string(old)}, {quote_string(new)})"
            )
            names = {r[0] for r in rows}
            if not (new in names and old not in names):
                raise

    async def _truncate(self, table: _Table) -> None:
        try:
            await self.target.execute(f"TRUNCATE TABLE {table.ch_table}")
        except TargetError:
            await self.target.execute(f"DROP TABLE IF EXISTS {table.ch_table}")
            await self._create_ch_table(table.definition)

    async def _stop_table(self, name: str, statement: str, reason: str) -> None:
        cp = self._checkpoint
        assert cp is not None
        if statement:
            message = (
                f"replication of {self.database}.{name} stopped at {cp.position}: cannot translate "
                f"{statement[:300]!r} ({reason}). The ClickHouse table keeps the data up to this statement; re-create "
                "the replica of this table (drop it in ClickHouse and run a snapshot/backfill) once the schema is "
                "supported"
            )
        else:
            message = (
                f"replication of {self.database}.{name} stopped at {cp.position}: {reason}. Fix that, then copy the "
                f"table with a backfill (mybinlog snapshot --mode backfill --tables {name})"
            )
        logger.error("%s: %s", self.replica, message)
        self._tables.pop(name, None)
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
