"""The DDL of MySQL / MariaDB, in pure Python: the schema side of replication.

Three uses:

1. :func:`parse_create_table` reads ``SHOW CREATE TABLE`` output (or any ``CREATE TABLE`` statement) into a
   :class:`TableDef`;
2. :func:`parse_ddl` turns one statement from a binlog QUERY event into a list of operations (:data:`DdlOp`):
   create / alter / rename / drop / truncate of tables and databases. Statements that change nothing we track
   (``BEGIN``, ``GRANT``, views, triggers, temporary tables...) give ``[]``;
3. :func:`apply_alter` computes the table after one ALTER action, and :func:`render_create_table` writes a
   :class:`TableDef` back as ``CREATE TABLE`` text that parses to an equal :class:`TableDef` (schemas are
   stored in checkpoints as this text).

Decisions
---------
* Names keep the case they were written with. Column names compare case-insensitively (they are in MySQL),
  through :func:`norm`; table and database names compare exactly (MySQL on Linux with the default
  ``lower_case_table_names=0`` treats them as case-sensitive).
* :func:`parse_ddl` never raises. A statement on a table that cannot be parsed becomes
  ``[Unsupported(statement, reason, schema, name)]`` (schema/name when they were read before the failure);
  the replicator stops that table with the reason. A data-changing statement (``INSERT``, ``UPDATE``,
  ``DELETE``, ``REPLACE``, ``LOAD DATA``) is also :class:`Unsupported`: in a binlog it means the server logged
  that statement instead of row events (``binlog_format`` is STATEMENT or MIXED), so its rows are not there.
  :func:`parse_create_table` raises :class:`~mybinlog.DdlParseError` instead.
* Temporary tables are not replicated (MySQL does not log their rows in ROW format): ``CREATE TEMPORARY
  TABLE`` and ``DROP TEMPORARY TABLE`` give ``[]``.
* ``CREATE TABLE ... SELECT`` gives :class:`CreateTableSelect` (the resulting column types are not in the
  statement: read them with ``SHOW CREATE TABLE``; the rows arrive as row events). MySQL in ROW format logs
  such a statement as a plain CREATE TABLE with the columns, so this is rare.
* Versioned comments ``/*!50100 ... */`` and ``/*M!100100 ... */`` are read as code whatever their version;
  other comments are ignored.
* ``CONVERT TO CHARACTER SET`` is a :class:`ConvertCharset` (a :class:`NoOpAction`: ClickHouse stores text
  as UTF-8 bytes whatever the source charset); :func:`apply_alter` updates the charset of the text columns.
  MySQL may also widen a TEXT type to keep its length in characters; that is not modelled (re-read
  ``SHOW CREATE TABLE`` when the exact byte length matters).
* Partition maintenance is a :class:`NoOpAction`, except operations that remove or swap rows without row
  events (``DROP/TRUNCATE/EXCHANGE PARTITION``, ``DISCARD/IMPORT TABLESPACE``, ``CONVERT PARTITION``...),
  which are :class:`UnsupportedAction`.
* MariaDB's JSON is ``LONGTEXT ... CHECK (json_valid(col))`` in ``SHOW CREATE TABLE``; such a column is read
  back as ``type_name='json'``.
* ``sql_mode`` (from the QUERY event) matters for ``ANSI_QUOTES`` ("x" is an identifier),
  ``NO_BACKSLASH_ESCAPES`` and ``REAL_AS_FLOAT``. :func:`render_create_table` always writes text for the
  default mode.

Modules
-------
Each imports only modules above it in this table, plus :mod:`mybinlog.errors` and the standard library.

======================  ==================================================================================
``_lexer``              statement text -> tokens; quoting of names and strings; the ``sql_mode`` bits
``_model``              :class:`TableDef`, :class:`ColumnDef`, charset names, keys (imports the lexer, not the parser)
``_ops``                what a statement does, as data: :data:`DdlOp` and the ALTER actions (:data:`AlterAction`)
``_parser``             the cursor over one statement's tokens
``_parse_column``       column definitions: types and their aliases, attributes
``_parse_create``       CREATE TABLE; :func:`parse_create_table`
``_parse_alter``        ALTER TABLE actions
``_parse_statement``    :func:`parse_ddl`: one binlog statement -> operations
``_apply``              :func:`apply_alter`: the model after one ALTER action
``_render``             :func:`render_create_table`: the model back as CREATE TABLE text
======================  ==================================================================================

Layer rules: pure (no IO); imports nothing of mybinlog but :mod:`mybinlog.errors`. The rest of replication builds
on it (the ClickHouse schema, the type mapping, the replicator, verify, the snapshot), never the reverse.
"""

from __future__ import annotations

from ._apply import apply_actions, apply_alter
from ._lexer import (
    SQL_MODE_ANSI_QUOTES,
    SQL_MODE_NO_BACKSLASH_ESCAPES,
    SQL_MODE_REAL_AS_FLOAT,
    quote_identifier,
    quote_string,
)
from ._model import ColumnDef, TableDef, norm
from ._ops import (
    AddColumn,
    AddIndex,
    AddPrimaryKey,
    AlterAction,
    AlterTable,
    ChangeColumn,
    ConvertCharset,
    CreateDatabase,
    CreateTable,
    CreateTableLike,
    CreateTableSelect,
    DdlOp,
    DropColumn,
    DropDatabase,
    DropIndex,
    DropPrimaryKey,
    DropTable,
    ModifyColumn,
    NoOpAction,
    RenameColumn,
    RenameTable,
    RenameTableAction,
    SetColumnDefault,
    SetTableCharset,
    TruncateTable,
    Unsupported,
    UnsupportedAction,
)
from ._parse_create import parse_create_table
from ._parse_statement import parse_ddl
from ._render import render_create_table

__all__ = [
    "SQL_MODE_ANSI_QUOTES",
    "SQL_MODE_NO_BACKSLASH_ESCAPES",
    "SQL_MODE_REAL_AS_FLOAT",
    "AddColumn",
    "AddIndex",
    "AddPrimaryKey",
    "AlterAction",
    "AlterTable",
    "ChangeColumn",
    "ColumnDef",
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
    "TableDef",
    "TruncateTable",
    "Unsupported",
    "UnsupportedAction",
    "apply_actions",
    "apply_alter",
    "norm",
    "parse_create_table",
    "parse_ddl",
    "quote_identifier",
    "quote_string",
    "render_create_table",
]
