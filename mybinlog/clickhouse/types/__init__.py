"""MySQL/MariaDB column types in ClickHouse: the type mapping, TabSeparated encoders and canonical values.

Everything here is pure Python (no IO) and decided per column from its :class:`~..ddl.ColumnDef` and the
target's :class:`~..target.Capabilities`. docs/types.md has the mapping table and the rules for values that
ClickHouse cannot hold (zero dates, dates outside the range of a ClickHouse type, ...).

* :func:`clickhouse_type`: the ClickHouse type of a column (``Nullable(Decimal(65, 30))``).
* :func:`make_encoder` / :func:`make_row_encoder` (:func:`make_rows_encoder`: many rows in one call): Python value
  -> one TabSeparated field (already escaped, ``\\N`` for NULL). They accept both forms a value reaches the
  replicator in: the binlog decoder's values (docs/source-layer.md, "Values") and what pymysql/asyncmy return for
  ``SELECT`` (snapshots), so that both give identical ClickHouse contents. Binary data comes back as ``str``
  decoded with ``surrogateescape``: encode the joined line with ``.encode("utf-8", "surrogateescape")`` to get the
  exact bytes.
* :func:`canonical`: one comparable string per value, from either side (a MySQL value, or the text ClickHouse
  returns), for ``mybinlog verify``; :func:`values_match` compares two of them (floats with a tolerance).
* :func:`zero_field`: the field for MySQL's implicit default of a column (a column missing from a row image).
* :func:`select_expression`: how a ``SELECT`` of the source reads a column (VECTOR cast to binary).

Modules
-------
Each imports only modules above it in this table.

===============  ===============================================================================================
``_mapping``     value families and ClickHouse types per column (:func:`column_kind`, :func:`clickhouse_type`)
``_values``      TabSeparated fields and value conversions shared by the encoders and the canonical forms
``_encoders``    :func:`make_encoder`, :func:`make_row_encoder`, :func:`zero_field`: values -> ClickHouse fields
``_canonical``   :func:`canonical`, :func:`values_match`: comparable values for verify
===============  ===============================================================================================

Layer rules: pure (no IO); imports :mod:`mybinlog.errors`, the protocol's JSON rendering, and for type checking
only :mod:`mybinlog.ddl` and :mod:`mybinlog.clickhouse`.
"""

from __future__ import annotations

from ._canonical import Canonical, canonical, values_match
from ._encoders import Encoder, implicit_default, make_encoder, make_row_encoder, make_rows_encoder, zero_field
from ._mapping import Kind, clickhouse_type, column_kind, column_spec, select_expression
from ._values import NULL_FIELD, f32_repr, tsv_field_text

__all__ = [
    "NULL_FIELD",
    "Canonical",
    "Encoder",
    "Kind",
    "canonical",
    "clickhouse_type",
    "column_kind",
    "column_spec",
    "f32_repr",
    "implicit_default",
    "make_encoder",
    "make_row_encoder",
    "make_rows_encoder",
    "select_expression",
    "tsv_field_text",
    "values_match",
    "zero_field",
]
