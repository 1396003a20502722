"""ALTER TABLE: each action (ADD/DROP/MODIFY/CHANGE/RENAME COLUMN, keys, charsets, partitions, options) read into
an :data:`~._ops.AlterAction`. Partition operations that remove or swap rows without row events become
:class:`~._ops.UnsupportedAction`; changes with no effect on the replicated data, :class:`~._ops.NoOpAction`."""

from __future__ import annotations

from ._lexer import _render_tokens
from ._model import ColumnDef, _charset_of_collation, _norm_charset, _norm_collation, norm
from ._ops import (
    AddColumn,
    AddIndex,
    AddPrimaryKey,
    AlterAction,
    AlterTable,
    ChangeColumn,
    ConvertCharset,
    DropColumn,
    DropIndex,
    DropPrimaryKey,
    ModifyColumn,
    NoOpAction,
    RenameColumn,
    RenameTableAction,
    SetColumnDefault,
    SetTableCharset,
    UnsupportedAction,
)
from ._parse_column import _ColSpec, _finish_column, _parse_column, _parse_default_expr
from ._parse_create import _Body, _create_definition, _table_charset, _table_options, _TableOptions
from ._parser import _EOF, _Parser

# --------------------------------------------------------------------------------------------------------------
# ALTER TABLE


def _position(p: _Parser) -> tuple[bool, str | None]:
    if p.accept("FIRST"):
        return True, None
    if p.accept("AFTER"):
        return False, p.ident()
    return False, None


def _column_actions(p: _Parser, spec: _ColSpec, text: str) -> list[AlterAction]:
    """Extra actions implied by inline PRIMARY KEY / UNIQUE of an added or changed column."""
    extra: list[AlterAction] = []
    if spec.primary_key:
        extra.append(AddPrimaryKey([spec.column.name]))
    if spec.unique:
        extra.append(AddIndex(text, None, [spec.column.name], True))
    return extra


def _finish_alter_column(spec: _ColSpec) -> ColumnDef:
    return _finish_column(spec, None, None)


_PARTITION_UNSUPPORTED = {
    "DROP": "DROP PARTITION deletes the partition's rows without row events",
    "TRUNCATE": "TRUNCATE PARTITION deletes the partition's rows without row events",
    "EXCHANGE": "EXCHANGE PARTITION swaps rows with another table without row events",
    "DISCARD": "DISCARD PARTITION TABLESPACE removes the partition's rows without row events",
    "IMPORT": "IMPORT PARTITION TABLESPACE loads rows without row events",
    "CONVERT": "CONVERT PARTITION / CONVERT TABLE moves rows between tables without row events",
}


def _list_continues(p: _Parser, *followers: str) -> bool:
    """At ``, name`` where ``name`` continues a list of names (it is followed by a comma, the end or one of
    ``followers``) rather than starting the next ALTER action."""
    if not p.is_op(",") or p.peek(1).kind not in ("word", "qident"):
        return False
    after = p.peek(2)
    return after.kind == _EOF or (after.kind == "op" and after.value == ",") or p.is_kw(*followers, k=2)


def _partition_tail(p: _Parser) -> None:
    """After ``... PARTITION``: ``[IF EXISTS] {names | ALL | n}`` and what follows the names."""
    p.accept("IF", "EXISTS")
    if p.peek().kind == "num":
        p.next()
        return
    p.ident()
    while _list_continues(p, "TABLESPACE", "INTO"):
        p.i += 2
    p.accept("TABLESPACE")
    if p.accept("INTO"):
        p.group()
    if p.accept("WITH", "TABLE") or p.accept("TO", "TABLE"):
        p.table_name("")
        p.accept("WITH", "VALIDATION") or p.accept("WITHOUT", "VALIDATION")


def _alter_action(p: _Parser, default_schema: str) -> list[AlterAction]:
    start = p.i
    tok = p.peek()
    if tok.kind != "word":
        raise p.error("expected an ALTER TABLE action")
    word = tok.upper

    def text() -> str:
        return p.text_since(start)

    if word == "ADD":
        p.i += 1
        return _alter_add(p, start)
    if word == "DROP":
        p.i += 1
        return _alter_drop(p, start)
    if word in ("MODIFY", "CHANGE"):
        p.i += 1
        p.accept("COLUMN")
        if_exists = p.accept("IF", "EXISTS")
        old = p.ident() if word == "CHANGE" else None
        new = p.ident()
        spec = _parse_column(p, new, in_alter=True)
        first, after = _position(p)
        col = _finish_alter_column(spec)
        action: AlterAction
        if old is None:
            action = ModifyColumn(col, first, after, if_exists)
        else:
            action = ChangeColumn(old, col, first, after, if_exists)
        return [action, *_column_actions(p, spec, text())]
    if word == "ALTER":
        p.i += 1
        if p.accept("INDEX") or p.accept("KEY") or p.accept("CHECK") or p.accept("CONSTRAINT"):
            p.skip_to_comma()
            return [NoOpAction(text())]
        p.accept("COLUMN")
        p.accept("IF", "EXISTS")
        name = p.ident()
        if p.accept("SET", "DEFAULT"):
            default = _render_tokens(_parse_default_expr(p))
            return [SetColumnDefault(text(), name, default)]
        if p.accept("DROP", "DEFAULT"):
            return [SetColumnDefault(text(), name, None)]
        if p.accept("SET", "VISIBLE") or p.accept("SET", "INVISIBLE"):
            return [NoOpAction(text())]
        raise p.error("expected SET DEFAULT, DROP DEFAULT or SET [IN]VISIBLE")
    if word == "RENAME":
        p.i += 1
        if p.accept("COLUMN"):
            p.accept("IF", "EXISTS")
            old = p.ident()
            p.expect("TO")
            return [RenameColumn(old, p.ident())]
        if p.accept("INDEX") or p.accept("KEY"):
            p.accept("IF", "EXISTS")
            p.ident()
            p.expect("TO")
            p.ident()
            return [NoOpAction(text())]
        p.accept("TO") or p.accept("AS")
        new_schema, new_name = p.table_name(default_schema)
        return [RenameTableAction(new_schema, new_name)]
    if word == "CONVERT":
        p.i += 1
        if p.accept("TO"):
            if not (p.accept("CHARACTER", "SET") or p.accept("CHARSET")):
                raise p.error("expected CHARACTER SET")
            p.optional_eq()
            charset = None if p.accept("DEFAULT") else _norm_charset(p.name_value())
            collation = None
            if p.accept("COLLATE"):
                p.optional_eq()
                collation = _norm_collation(p.name_value())
            if charset is None:
                charset = _charset_of_collation(collation)
            return [ConvertCharset(text(), charset, collation)]
        if p.accept("PARTITION"):
            _partition_tail(p)
        else:
            p.skip_to_comma()
        return [UnsupportedAction(text(), _PARTITION_UNSUPPORTED["CONVERT"])]
    if word in ("DEFAULT", "CHARACTER", "CHARSET", "COLLATE") and (
        word != "DEFAULT" or p.is_kw("CHARACTER", "CHARSET", "COLLATE", k=1)
    ):
        opts = _TableOptions()
        _table_options(p, opts, stop=lambda: p.is_op(",") or not p.is_kw("DEFAULT", "CHARACTER", "CHARSET", "COLLATE"))
        charset, collation = _table_charset(opts)
        return [SetTableCharset(text(), charset, collation)]
    if word in ("DISCARD", "IMPORT"):
        p.i += 1
        if p.accept("PARTITION"):
            _partition_tail(p)
            return [UnsupportedAction(text(), _PARTITION_UNSUPPORTED[word])]
        p.expect("TABLESPACE")
        return [UnsupportedAction(text(), f"{word} TABLESPACE replaces the table's rows without row events")]
    if word in ("TRUNCATE", "EXCHANGE") and p.is_kw("PARTITION", k=1):
        p.i += 2
        _partition_tail(p)
        return [UnsupportedAction(text(), _PARTITION_UNSUPPORTED[word])]
    if word in ("COALESCE", "REORGANIZE", "ANALYZE", "CHECK", "OPTIMIZE", "REBUILD", "REPAIR") and p.is_kw(
        "PARTITION", k=1
    ):
        p.i += 2
        _partition_tail(p)
        return [NoOpAction(text())]
    if word in ("REMOVE", "UPGRADE") and p.is_kw("PARTITIONING", k=1):
        p.i += 2
        return [NoOpAction(text())]
    if word == "PARTITION" and p.is_kw("BY", k=1):
        p.skip_until(lambda t: False)
        return [NoOpAction(text())]
    if word == "ORDER" and p.is_kw("BY", k=1):
        p.i += 2
        while True:
            p.table_name("")
            p.accept("ASC") or p.accept("DESC")
            if not (_list_continues(p) or (p.is_op(",") and p.is_kw("ASC", "DESC", k=2))):
                break
            p.i += 1
        return [NoOpAction(text())]
    if word in ("ALGORITHM", "LOCK"):
        p.i += 1
        p.optional_eq()
        p.next()
        return [NoOpAction(text())]
    if word in ("FORCE", "SECONDARY_LOAD", "SECONDARY_UNLOAD"):
        p.i += 1
        return [NoOpAction(text())]
    if word in ("ENABLE", "DISABLE") and p.is_kw("KEYS", k=1):
        p.i += 2
        return [NoOpAction(text())]
    if word in ("WITH", "WITHOUT") and p.is_kw("VALIDATION", k=1):
        p.i += 2
        return [NoOpAction(text())]
    # anything else: table options (ENGINE=, ROW_FORMAT=, COMMENT=, AUTO_INCREMENT= ...)
    opts = _TableOptions()
    _table_options(p, opts, stop=lambda: p.is_op(","))
    if opts.charset is not None or opts.collation is not None:
        charset, collation = _table_charset(opts)
        return [SetTableCharset(text(), charset, collation)]
    return [NoOpAction(text())]


def _alter_add(p: _Parser, start: int) -> list[AlterAction]:
    def text() -> str:
        return p.text_since(start)

    tok = p.peek()
    word = tok.upper if tok.kind == "word" else ""
    if word == "CONSTRAINT" or word in ("PRIMARY", "UNIQUE", "INDEX", "KEY", "FULLTEXT", "SPATIAL", "FOREIGN"):
        body = _Body()
        _create_definition(p, body)
        if body.primary_key:
            return [AddPrimaryKey(body.primary_key)]
        if body.uniques:
            name, cols = body.uniques[0]
            return [AddIndex(text(), name, cols, True)]
        if word in ("INDEX", "KEY"):
            return [AddIndex(text(), None, [], False)]
        return [NoOpAction(text())]
    if (word == "VECTOR" and p.is_kw("INDEX", "KEY", k=1)) or (word == "CHECK" and p.is_op("(", k=1)):
        body = _Body()
        _create_definition(p, body)
        return [NoOpAction(text())]
    if word == "PERIOD" and p.is_kw("FOR", k=1):
        p.skip_to_comma()
        return [NoOpAction(text())]
    if word == "PARTITION":
        p.skip_to_comma()
        return [NoOpAction(text())]
    if word == "SYSTEM" and p.is_kw("VERSIONING", k=1):
        p.i += 2
        return [UnsupportedAction(text(), "ADD SYSTEM VERSIONING adds hidden row_start/row_end columns")]
    p.accept("COLUMN")
    if_not_exists = p.accept("IF", "NOT", "EXISTS")
    if p.is_op("("):
        p.i += 1
        actions: list[AlterAction] = []
        while True:
            body = _Body()
            _create_definition(p, body)
            for spec in body.specs:
                col = _finish_alter_column(spec)
                actions.append(AddColumn(col, if_not_exists=if_not_exists))
                actions.extend(_column_actions(p, spec, text()))
            if body.primary_key:
                actions.append(AddPrimaryKey(body.primary_key))
            for name, cols in body.uniques:
                actions.append(AddIndex(text(), name, cols, True))
            if p.accept_op(","):
                continue
            p.expect_op(")")
            return actions
    name = p.ident()
    spec = _parse_column(p, name, in_alter=True)
    first, after = _position(p)
    col = _finish_alter_column(spec)
    return [AddColumn(col, first, after, if_not_exists), *_column_actions(p, spec, text())]


def _alter_drop(p: _Parser, start: int) -> list[AlterAction]:
    def text() -> str:
        return p.text_since(start)

    if p.accept("PRIMARY", "KEY"):
        return [DropPrimaryKey()]
    if p.accept("INDEX") or p.accept("KEY") or p.accept("CONSTRAINT"):
        p.accept("IF", "EXISTS")
        name = p.ident()
        if norm(name) == "primary":
            return [DropPrimaryKey()]
        return [DropIndex(text(), name)]
    if p.accept("FOREIGN", "KEY") or p.accept("CHECK"):
        p.accept("IF", "EXISTS")
        p.ident()
        return [NoOpAction(text())]
    if p.is_kw("PERIOD") and p.is_kw("FOR", k=1):
        p.skip_to_comma()
        return [NoOpAction(text())]
    if p.accept("PARTITION"):
        _partition_tail(p)
        return [UnsupportedAction(text(), _PARTITION_UNSUPPORTED["DROP"])]
    if p.is_kw("SYSTEM") and p.is_kw("VERSIONING", k=1):
        p.i += 2
        return [UnsupportedAction(text(), "DROP SYSTEM VERSIONING deletes history rows and hidden columns")]
    p.accept("COLUMN")
    if_exists = p.accept("IF", "EXISTS")
    name = p.ident()
    p.accept("RESTRICT") or p.accept("CASCADE")
    return [DropColumn(name, if_exists)]


def _alter_table(p: _Parser, default_schema: str) -> AlterTable:
    """After ALTER [ONLINE] [IGNORE] TABLE."""
    p.accept("IF", "EXISTS")
    schema, name = p.table_name(default_schema)
    p.target = (schema, name)
    if p.accept("WAIT"):
        p.integer()
    p.accept("NOWAIT")
    actions: list[AlterAction] = []
    while not p.at_end():
        if p.accept_op(","):
            continue
        actions.extend(_alter_action(p, default_schema))
    return AlterTable(schema, name, actions)
