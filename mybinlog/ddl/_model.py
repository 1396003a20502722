"""The table model: :class:`TableDef` and :class:`ColumnDef`, a table as MySQL stores it once type aliases,
defaults and charsets are resolved, and the rules the parser and :func:`~._apply.apply_alter` share (charset names,
keys).

It imports the lexer (to read DEFAULT clauses and write types as text), never the parser, the actions or
:func:`~._apply.apply_alter` (they build on this module).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import DdlParseError
from ._lexer import _tokenize, quote_string

__all__ = ["ColumnDef", "TableDef", "norm"]


# --------------------------------------------------------------------------------------------------------------
# model


def norm(name: str) -> str:
    """Key for case-insensitive comparison of column (and index) names."""
    return name.lower()


_INT_TYPES = frozenset({"tinyint", "smallint", "mediumint", "int", "bigint"})
_FLOAT_TYPES = frozenset({"float", "double"})
_TIME_TYPES = frozenset({"time", "datetime", "timestamp"})
_TEXT_TYPES = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set"})
_BLOB_TYPES = frozenset({"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"})
_GEOMETRY_TYPES = frozenset(
    {
        "geometry",
        "point",
        "linestring",
        "polygon",
        "multipoint",
        "multilinestring",
        "multipolygon",
        "geometrycollection",
    }
)
_BYTES_TYPES = _BLOB_TYPES | _GEOMETRY_TYPES
_TO_BINARY = {
    "char": "binary",
    "varchar": "varbinary",
    "tinytext": "tinyblob",
    "text": "blob",
    "mediumtext": "mediumblob",
    "longtext": "longblob",
}


@dataclass
class ColumnDef:
    """One column, as MySQL stores it after resolving aliases and defaults.

    ``type_name``: lower-case base type after aliasing (``bool`` -> ``tinyint`` with length 1, ``integer`` ->
    ``int``, ``numeric``/``dec``/``fixed`` -> ``decimal``, ``real``/``double precision``/``float(p>24)`` ->
    ``double``, ``long [varchar]`` -> ``mediumtext``, ``char ... CHARACTER SET binary`` -> ``binary``,
    ``text ... CHARACTER SET binary`` -> ``blob``, ``serial`` -> ``bigint unsigned NOT NULL AUTO_INCREMENT
    UNIQUE``, MariaDB's ``longtext ... CHECK (json_valid(col))`` -> ``json``).
    ``length``: char/varchar/binary/varbinary length (char and binary default 1), bit width (default 1),
    decimal precision (default 10), float/double M of (M,D), vector dimensions, an integer's display width when
    written (``int(11)``; ``None`` otherwise), ``2`` for YEAR(2), text/blob (n) when written.
    ``scale``: decimal scale (default 0) or float/double D. ``fsp``: fractional digits of time/datetime/timestamp
    (0 when absent; ``None`` for other types). ``values``: ENUM/SET members, unescaped.
    ``nullable`` is False for NOT NULL and for primary-key columns. ``charset``/``collation`` are set for the
    text types (char varchar *text enum set) only: the column's own, else the one implied by its COLLATE, else
    the table default; ``None`` when unknown; ``utf8`` is written ``utf8mb3``. ``binary``: values are bytes
    (binary varbinary *blob and the geometry types). ``default``: the DEFAULT clause as canonical SQL text
    (``"NULL"``, ``"'abc'"``, ``"-1"``, ``"current_timestamp(6)"``, ``"(1 + 2)"``), ``None`` without a DEFAULT
    clause (see :attr:`default_kind` / :attr:`default_value`). ``raw_type``: the type as SHOW CREATE TABLE
    prints it, lower case, without charset (``"decimal(65,30) unsigned"``, ``"enum('a','b')"``).
    ``generated``: ``'virtual'`` or ``'stored'`` (STORED/PERSISTENT) for generated columns, with
    ``generation_expr``; ``on_update``: the ON UPDATE expression; ``invisible``; ``srid`` (SRID /
    REF_SYSTEM_ID).

    ``raw_type`` and ``binary`` are derived from the other fields when the object is created (pass
    ``raw_type=""`` to :func:`dataclasses.replace` after changing the type).
    """

    name: str
    type_name: str
    unsigned: bool = False
    zerofill: bool = False
    length: int | None = None
    scale: int | None = None
    fsp: int | None = None
    values: tuple[str, ...] = ()
    nullable: bool = True
    charset: str | None = None
    collation: str | None = None
    binary: bool = False
    default: str | None = None
    auto_increment: bool = False
    comment: str | None = None
    raw_type: str = ""
    generated: str | None = None
    generation_expr: str | None = None
    on_update: str | None = None
    invisible: bool = False
    srid: int | None = None

    def __post_init__(self) -> None:
        self.binary = self.type_name in _BYTES_TYPES
        if not self.raw_type:
            self.raw_type = _type_sql(self)

    @property
    def default_kind(self) -> str:
        """``'none'`` (no DEFAULT clause), ``'null'``, ``'literal'`` or ``'expression'``."""
        return _default_info(self.default)[0]

    @property
    def default_value(self) -> str | None:
        """The value of a literal DEFAULT: a string unescaped, a number as written (``'-1.5'``), a bit literal
        ``b'101'`` as a decimal integer (``'5'``), TRUE/FALSE as ``'1'``/``'0'``; ``None`` otherwise."""
        return _default_info(self.default)[1]


@dataclass
class TableDef:
    """One table: columns in order, primary key (``[]`` when none) and unique keys (by name)."""

    schema: str
    name: str
    columns: list[ColumnDef]
    primary_key: list[str] = field(default_factory=list)
    unique_keys: list[list[str]] = field(default_factory=list)
    unique_key_names: list[str] = field(default_factory=list)
    charset: str | None = None
    collation: str | None = None
    engine: str | None = None

    def column(self, name: str) -> ColumnDef:
        """The column called ``name`` (case-insensitive); KeyError when there is none."""
        key = norm(name)
        for col in self.columns:
            if norm(col.name) == key:
                return col
        raise KeyError(f"table `{self.schema}`.`{self.name}` has no column `{name}`")

    def has_column(self, name: str) -> bool:
        key = norm(name)
        return any(norm(col.name) == key for col in self.columns)

    def column_names(self) -> list[str]:
        return [col.name for col in self.columns]


def _default_info(default: str | None) -> tuple[str, str | None]:
    if default is None:
        return "none", None
    try:
        toks = _tokenize(default)
    except DdlParseError:
        return "expression", None
    while len(toks) >= 3 and toks[0].value == "(" and toks[-1].value == ")" and toks[0].kind == "op":
        toks = toks[1:-1]
    if len(toks) == 1:
        tok = toks[0]
        if tok.kind == "word" and tok.upper == "NULL":
            return "null", None
        if tok.kind == "word" and tok.upper in ("TRUE", "FALSE"):
            return "literal", "1" if tok.upper == "TRUE" else "0"
        if tok.kind in ("str", "num"):
            return "literal", tok.value
        if tok.kind == "bit":
            digits = tok.value[2:] if tok.value[:2] in ("0b", "0B") else tok.value[2:-1]
            if digits.strip("01"):
                return "expression", None
            return "literal", str(int(digits or "0", 2))
        return "expression", None
    if len(toks) == 2:
        first, second = toks
        if first.kind == "op" and first.value in ("-", "+") and second.kind == "num":
            return "literal", ("-" if first.value == "-" else "") + second.value
        if (
            first.kind == "word"
            and second.kind == "str"
            and (first.value.startswith("_") or first.upper in ("DATE", "TIME", "TIMESTAMP"))
        ):
            return "literal", second.value
    if toks and all(t.kind == "str" for t in toks):
        return "literal", "".join(t.value for t in toks)
    return "expression", None


def _type_sql(col: ColumnDef) -> str:
    """The column type as SHOW CREATE TABLE prints it (lower case, without charset/collation)."""
    t = col.type_name
    args = ""
    if t in ("enum", "set"):
        args = "(" + ",".join(quote_string(v) for v in col.values) + ")"
    elif t == "decimal":
        args = f"({col.length if col.length is not None else 10},{col.scale or 0})"
    elif t in _FLOAT_TYPES:
        if col.length is not None:
            args = f"({col.length},{col.scale or 0})"
    elif t in _TIME_TYPES:
        if col.fsp:
            args = f"({col.fsp})"
    elif col.length is not None:
        args = f"({col.length})"
    text = t + args
    if col.unsigned:
        text += " unsigned"
    if col.zerofill:
        text += " zerofill"
    return text


# --------------------------------------------------------------------------------------------------------------
# charsets


_KNOWN_CHARSETS = frozenset(
    {
        "armscii8",
        "ascii",
        "big5",
        "binary",
        "cp1250",
        "cp1251",
        "cp1256",
        "cp1257",
        "cp850",
        "cp852",
        "cp866",
        "cp932",
        "dec8",
        "eucjpms",
        "euckr",
        "gb18030",
        "gb2312",
        "gbk",
        "geostd8",
        "greek",
        "hebrew",
        "hp8",
        "keybcs2",
        "koi8r",
        "koi8u",
        "latin1",
        "latin2",
        "latin5",
        "latin7",
        "macce",
        "macroman",
        "sjis",
        "swe7",
        "tis620",
        "ucs2",
        "ujis",
        "utf16",
        "utf16le",
        "utf32",
        "utf8",
        "utf8mb3",
        "utf8mb4",
    }
)


def _norm_charset(name: str | None) -> str | None:
    if name is None:
        return None
    low = name.lower()
    return "utf8mb3" if low == "utf8" else low


def _norm_collation(name: str | None) -> str | None:
    if name is None:
        return None
    low = name.lower()
    return "utf8mb3" + low[4:] if low.startswith("utf8_") else low


def _charset_of_collation(collation: str | None) -> str | None:
    if collation is None:
        return None
    if collation == "binary":
        return "binary"
    best = None
    for cs in _KNOWN_CHARSETS:
        if collation.startswith(cs + "_") and (best is None or len(cs) > len(best)):
            best = cs
    return _norm_charset(best)


# --------------------------------------------------------------------------------------------------------------
# keys


def _set_primary_key(table: TableDef, columns: list[str]) -> None:
    names = []
    for name in columns:
        col = table.column(name)
        col.nullable = False
        names.append(col.name)
    table.primary_key = names


def _add_unique(table: TableDef, index_name: str | None, columns: list[str]) -> None:
    names = [table.column(c).name for c in columns]
    if not names:
        return
    taken = {norm(n) for n in table.unique_key_names} | {"primary"}
    if index_name is None:
        index_name = names[0]
        suffix = 2
        while norm(index_name) in taken:
            index_name = f"{names[0]}_{suffix}"
            suffix += 1
    elif norm(index_name) in taken:
        return  # MySQL refuses a duplicate key name; ADD UNIQUE IF NOT EXISTS on an existing key does nothing
    table.unique_keys.append(names)
    table.unique_key_names.append(index_name)
