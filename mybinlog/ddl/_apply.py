"""Applying ALTER actions to the model: :func:`apply_alter` computes the :class:`~._model.TableDef` after one
action, as a new object, the way MySQL changes the table (charset inheritance, keys following renames and drops,
IF [NOT] EXISTS)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from ..errors import DdlApplyError
from ._model import (
    _TEXT_TYPES,
    _TO_BINARY,
    ColumnDef,
    TableDef,
    _add_unique,
    _charset_of_collation,
    _set_primary_key,
    norm,
)
from ._ops import (
    AddColumn,
    AddIndex,
    AddPrimaryKey,
    AlterAction,
    ChangeColumn,
    ConvertCharset,
    DropColumn,
    DropIndex,
    DropPrimaryKey,
    ModifyColumn,
    RenameColumn,
    RenameTableAction,
    SetColumnDefault,
    SetTableCharset,
    UnsupportedAction,
)

__all__ = ["apply_actions", "apply_alter"]


# --------------------------------------------------------------------------------------------------------------
# applying ALTER actions


def _index_of(table: TableDef, name: str) -> int:
    key = norm(name)
    for i, col in enumerate(table.columns):
        if norm(col.name) == key:
            return i
    raise DdlApplyError(f"table `{table.schema}`.`{table.name}` has no column `{name}`")


def _inherit_charset(table: TableDef, col: ColumnDef) -> ColumnDef:
    if col.type_name in _TEXT_TYPES and col.charset is None and table.charset is not None:
        collation = col.collation
        if (
            collation is None
            and table.collation is not None
            and _charset_of_collation(table.collation) == (table.charset)
        ):
            collation = table.collation
        return replace(col, charset=table.charset, collation=collation)
    return col


def _place(columns: list[ColumnDef], col: ColumnDef, first: bool, after: str | None, table: TableDef) -> None:
    if first:
        columns.insert(0, col)
    elif after is not None:
        key = norm(after)
        for i, other in enumerate(columns):
            if norm(other.name) == key:
                columns.insert(i + 1, col)
                return
        raise DdlApplyError(f"table `{table.schema}`.`{table.name}` has no column `{after}` (AFTER)")
    else:
        columns.append(col)


def _copy(table: TableDef) -> TableDef:
    return replace(
        table,
        columns=list(table.columns),
        primary_key=list(table.primary_key),
        unique_keys=[list(k) for k in table.unique_keys],
        unique_key_names=list(table.unique_key_names),
    )


def _rename_in_keys(table: TableDef, old: str, new: str) -> None:
    key = norm(old)
    table.primary_key = [new if norm(c) == key else c for c in table.primary_key]
    table.unique_keys = [[new if norm(c) == key else c for c in cols] for cols in table.unique_keys]


def _drop_from_keys(table: TableDef, name: str) -> None:
    key = norm(name)
    table.primary_key = [c for c in table.primary_key if norm(c) != key]
    keys, names = [], []
    for cols, index_name in zip(table.unique_keys, table.unique_key_names, strict=True):
        cols = [c for c in cols if norm(c) != key]
        if cols:
            keys.append(cols)
            names.append(index_name)
    table.unique_keys, table.unique_key_names = keys, names


def _redefine(table: TableDef, old_name: str, col: ColumnDef, first: bool, after: str | None) -> TableDef:
    new = _copy(table)
    i = _index_of(new, old_name)
    col = _inherit_charset(new, col)
    if norm(col.name) != norm(old_name) and new.has_column(col.name):
        raise DdlApplyError(f"table `{table.schema}`.`{table.name}` already has a column `{col.name}`")
    if any(norm(c) == norm(old_name) for c in new.primary_key):
        col = replace(col, nullable=False)
    del new.columns[i]
    if first or after is not None:
        _place(new.columns, col, first, after, new)
    else:
        new.columns.insert(i, col)
    _rename_in_keys(new, old_name, col.name)
    return new


def _convert_column(col: ColumnDef, charset: str | None, collation: str | None) -> ColumnDef:
    if col.type_name not in _TEXT_TYPES or col.type_name == "json":
        return col
    if charset == "binary":
        return replace(
            col, type_name=_TO_BINARY.get(col.type_name, col.type_name), charset=None, collation=None, raw_type=""
        )
    return replace(col, charset=charset, collation=collation)


def apply_alter(table: TableDef, action: AlterAction) -> TableDef:
    """The table after one ALTER action, as a new :class:`TableDef` (``table`` is not changed).

    Raises :class:`DdlApplyError` when the action does not fit (unknown column, a name already taken) unless
    its IF [NOT] EXISTS says to skip it, and for :class:`UnsupportedAction`. Text columns added or redefined
    without a charset get the table's default charset (as MySQL does).
    """
    where = f"`{table.schema}`.`{table.name}`"
    if isinstance(action, AddColumn):
        if table.has_column(action.column.name):
            if action.if_not_exists:
                return table
            raise DdlApplyError(f"table {where} already has a column `{action.column.name}`")
        new = _copy(table)
        _place(new.columns, _inherit_charset(new, action.column), action.first, action.after, new)
        return new
    if isinstance(action, DropColumn):
        if not table.has_column(action.name):
            if action.if_exists:
                return table
            raise DdlApplyError(f"table {where} has no column `{action.name}`")
        new = _copy(table)
        del new.columns[_index_of(new, action.name)]
        _drop_from_keys(new, action.name)
        return new
    if isinstance(action, ModifyColumn):
        if not table.has_column(action.column.name):
            if action.if_exists:
                return table
            raise DdlApplyError(f"table {where} has no column `{action.column.name}`")
        old = table.column(action.column.name)
        return _redefine(table, old.name, replace(action.column, name=old.name), action.first, action.after)
    if isinstance(action, ChangeColumn):
        if not table.has_column(action.old_name):
            if action.if_exists:
                return table
            raise DdlApplyError(f"table {where} has no column `{action.old_name}`")
        return _redefine(table, action.old_name, action.column, action.first, action.after)
    if isinstance(action, RenameColumn):
        if not table.has_column(action.old):
            raise DdlApplyError(f"table {where} has no column `{action.old}`")
        old = table.column(action.old)
        return _redefine(table, old.name, replace(old, name=action.new), False, None)
    if isinstance(action, AddPrimaryKey):
        new = _copy(table)
        new.columns = [replace(c) for c in new.columns]
        try:
            _set_primary_key(new, action.columns)
        except KeyError as exc:
            raise DdlApplyError(f"PRIMARY KEY of {where} names an unknown column: {exc.args[0]}") from exc
        return new
    if isinstance(action, DropPrimaryKey):
        new = _copy(table)
        new.primary_key = []
        return new
    if isinstance(action, RenameTableAction):
        new = _copy(table)
        new.schema, new.name = action.new_schema, action.new_name
        return new
    if isinstance(action, UnsupportedAction):
        raise DdlApplyError(f"cannot apply to {where}: {action.text}: {action.reason}")
    if isinstance(action, AddIndex):
        if not action.unique:
            return table
        new = _copy(table)
        try:
            _add_unique(new, action.index_name, action.columns)
        except KeyError as exc:
            raise DdlApplyError(f"UNIQUE key of {where} names an unknown column: {exc.args[0]}") from exc
        return new
    if isinstance(action, DropIndex):
        new = _copy(table)
        key = norm(action.index_name)
        keep = [i for i, n in enumerate(new.unique_key_names) if norm(n) != key]
        new.unique_keys = [new.unique_keys[i] for i in keep]
        new.unique_key_names = [new.unique_key_names[i] for i in keep]
        return new
    if isinstance(action, SetColumnDefault):
        new = _copy(table)
        i = _index_of(new, action.column)
        new.columns[i] = replace(new.columns[i], default=action.default)
        return new
    if isinstance(action, SetTableCharset):
        new = _copy(table)
        new.charset, new.collation = action.charset, action.collation
        return new
    if isinstance(action, ConvertCharset):
        new = _copy(table)
        new.charset, new.collation = action.charset, action.collation
        new.columns = [_convert_column(c, action.charset, action.collation) for c in new.columns]
        return new
    return table


def apply_actions(table: TableDef, actions: Iterable[AlterAction]) -> TableDef:
    """:func:`apply_alter` for each action in order."""
    for action in actions:
        table = apply_alter(table, action)
    return table
