"""What a DDL statement does, as data: the operations :func:`~._parse_statement.parse_ddl` returns
(:data:`DdlOp`) and the actions of an ALTER TABLE (:data:`AlterAction`), which :func:`~._apply.apply_alter` applies
to a :class:`~._model.TableDef`."""

from __future__ import annotations

from dataclasses import dataclass, field

from ._model import ColumnDef, TableDef

__all__ = [
    "AddColumn",
    "AddIndex",
    "AddPrimaryKey",
    "AlterAction",
    "AlterTable",
    "ChangeColumn",
    "ConvertCharset",
    "CreateDatabase",
    "CreateTable",
    "CreateTableLike",
    "CreateTableSelect",
    "DdlOp",
    "DropColumn",
    "DropDatabase",
    "DropIndex",
    "DropPrimaryKey",
    "DropTable",
    "ModifyColumn",
    "NoOpAction",
    "RenameColumn",
    "RenameTable",
    "RenameTableAction",
    "SetColumnDefault",
    "SetTableCharset",
    "TruncateTable",
    "Unsupported",
    "UnsupportedAction",
]


# --------------------------------------------------------------------------------------------------------------
# operations


@dataclass
class CreateTable:
    table: TableDef
    if_not_exists: bool = False


@dataclass
class CreateTableLike:
    schema: str
    name: str
    like_schema: str
    like_name: str
    if_not_exists: bool = False


@dataclass
class CreateTableSelect:
    """``CREATE TABLE ... [AS] SELECT``: read the new table's schema with SHOW CREATE TABLE (rows come as row
    events)."""

    schema: str
    name: str
    statement: str
    reason: str
    if_not_exists: bool = False


@dataclass
class AlterTable:
    schema: str
    name: str
    actions: list[AlterAction]


@dataclass
class RenameTable:
    pairs: list[tuple[tuple[str, str], tuple[str, str]]]


@dataclass
class DropTable:
    tables: list[tuple[str, str]]
    if_exists: bool = False


@dataclass
class TruncateTable:
    schema: str
    name: str


@dataclass
class CreateDatabase:
    name: str
    if_not_exists: bool = False


@dataclass
class DropDatabase:
    name: str
    if_exists: bool = False


@dataclass
class Unsupported:
    """A statement that affects a table (or its data) and cannot be followed; ``reason`` says why."""

    statement: str
    reason: str
    schema: str | None = None
    name: str | None = None


# --------------------------------------------------------------------------------------------------------------
# alter actions


@dataclass
class AddColumn:
    column: ColumnDef
    first: bool = False
    after: str | None = None
    if_not_exists: bool = False


@dataclass
class DropColumn:
    name: str
    if_exists: bool = False


@dataclass
class ModifyColumn:
    column: ColumnDef
    first: bool = False
    after: str | None = None
    if_exists: bool = False


@dataclass
class ChangeColumn:
    old_name: str
    column: ColumnDef
    first: bool = False
    after: str | None = None
    if_exists: bool = False


@dataclass
class RenameColumn:
    old: str
    new: str


@dataclass
class AddPrimaryKey:
    columns: list[str]


@dataclass
class DropPrimaryKey:
    pass


@dataclass
class RenameTableAction:
    new_schema: str
    new_name: str


@dataclass
class NoOpAction:
    """A change with no effect on the replicated data (index, constraint, option, partition maintenance)."""

    text: str


@dataclass
class AddIndex(NoOpAction):
    index_name: str | None = None
    columns: list[str] = field(default_factory=list)
    unique: bool = False


@dataclass
class DropIndex(NoOpAction):
    index_name: str = ""


@dataclass
class SetColumnDefault(NoOpAction):
    column: str = ""
    default: str | None = None


@dataclass
class SetTableCharset(NoOpAction):
    charset: str | None = None
    collation: str | None = None


@dataclass
class ConvertCharset(NoOpAction):
    charset: str | None = None
    collation: str | None = None


@dataclass
class UnsupportedAction:
    text: str
    reason: str


AlterAction = (
    AddColumn
    | DropColumn
    | ModifyColumn
    | ChangeColumn
    | RenameColumn
    | AddPrimaryKey
    | DropPrimaryKey
    | RenameTableAction
    | NoOpAction
    | UnsupportedAction
)
DdlOp = (
    CreateTable
    | CreateTableLike
    | CreateTableSelect
    | AlterTable
    | RenameTable
    | DropTable
    | TruncateTable
    | CreateDatabase
    | DropDatabase
    | Unsupported
)
