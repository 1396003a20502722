"""Column definitions, as written in CREATE TABLE and in ALTER TABLE ADD/MODIFY/CHANGE: the type with every
alias MySQL and MariaDB accept (``INTEGER``, ``NATIONAL VARCHAR``, ``SERIAL``, ``LONG``...) and the attributes
(NULL, DEFAULT, charset and collation, generated columns, ``CHECK (json_valid(c))``...)."""

from __future__ import annotations

from dataclasses import dataclass

from ._lexer import _render_tokens, _Tok
from ._model import (
    _BLOB_TYPES,
    _BYTES_TYPES,
    _FLOAT_TYPES,
    _INT_TYPES,
    _TEXT_TYPES,
    _TIME_TYPES,
    _TO_BINARY,
    ColumnDef,
    _charset_of_collation,
    _norm_charset,
    _norm_collation,
    _type_sql,
    norm,
)
from ._parser import _EOF, _Parser

# --------------------------------------------------------------------------------------------------------------
# column definitions


_TYPE_ALIASES = {
    "TINYINT": "tinyint",
    "INT1": "tinyint",
    "SMALLINT": "smallint",
    "INT2": "smallint",
    "MEDIUMINT": "mediumint",
    "MIDDLEINT": "mediumint",
    "INT3": "mediumint",
    "INT": "int",
    "INTEGER": "int",
    "INT4": "int",
    "BIGINT": "bigint",
    "INT8": "bigint",
    "DECIMAL": "decimal",
    "DEC": "decimal",
    "NUMERIC": "decimal",
    "FIXED": "decimal",
    "FLOAT": "float",
    "FLOAT4": "float",
    "DOUBLE": "double",
    "FLOAT8": "double",
    "REAL": "double",
    "BIT": "bit",
    "DATE": "date",
    "TIME": "time",
    "DATETIME": "datetime",
    "TIMESTAMP": "timestamp",
    "YEAR": "year",
    "CHAR": "char",
    "CHARACTER": "char",
    "VARCHAR": "varchar",
    "VARCHARACTER": "varchar",
    "BINARY": "binary",
    "VARBINARY": "varbinary",
    "TINYTEXT": "tinytext",
    "TEXT": "text",
    "MEDIUMTEXT": "mediumtext",
    "LONGTEXT": "longtext",
    "TINYBLOB": "tinyblob",
    "BLOB": "blob",
    "MEDIUMBLOB": "mediumblob",
    "LONGBLOB": "longblob",
    "ENUM": "enum",
    "SET": "set",
    "JSON": "json",
    "GEOMETRY": "geometry",
    "POINT": "point",
    "LINESTRING": "linestring",
    "POLYGON": "polygon",
    "MULTIPOINT": "multipoint",
    "MULTILINESTRING": "multilinestring",
    "MULTIPOLYGON": "multipolygon",
    "GEOMETRYCOLLECTION": "geometrycollection",
    "GEOMCOLLECTION": "geometrycollection",
    "UUID": "uuid",
    "INET4": "inet4",
    "INET6": "inet6",
    "VECTOR": "vector",
    "BOOL": "bool",
    "BOOLEAN": "bool",
    "SERIAL": "serial",
    "NCHAR": "nchar",
    "NVARCHAR": "nvarchar",
    "NATIONAL": "national",
    "LONG": "long",
}


@dataclass
class _ColSpec:
    """A parsed column definition plus what it implies for the table."""

    column: ColumnDef
    primary_key: bool = False
    unique: bool = False
    binary_collation: bool = False  # the BINARY attribute: the charset's _bin collation
    json_check: bool = False
    explicit_charset: bool = False


def _parse_type(p: _Parser, col: ColumnDef, spec: _ColSpec) -> None:
    tok = p.next()
    if tok.kind != "word" or tok.upper not in _TYPE_ALIASES:
        raise p.error("unknown column type", tok)
    word = tok.upper
    base = _TYPE_ALIASES[word]
    national = False
    if base == "double" and word == "DOUBLE":
        p.accept("PRECISION")
    elif base == "double" and word == "REAL" and p.real_as_float:
        base = "float"
    elif base == "char" and p.accept("VARYING"):
        base = "varchar"
    elif base == "national":
        national = True
        t2 = p.next()
        if t2.kind == "word" and t2.upper in ("CHAR", "CHARACTER"):
            base = "varchar" if p.accept("VARYING") else "char"
        elif t2.kind == "word" and t2.upper in ("VARCHAR", "VARCHARACTER"):
            base = "varchar"
        else:
            raise p.error("expected CHAR or VARCHAR after NATIONAL", t2)
    elif base == "nchar":
        national = True
        base = "varchar" if p.accept("VARYING") or p.accept("VARCHAR") or p.accept("VARCHARACTER") else "char"
    elif base == "nvarchar":
        national = True
        base = "varchar"
    elif base == "long":
        if p.accept("VARBINARY"):
            base = "mediumblob"
        else:
            p.accept("VARCHAR") or p.accept("VARCHARACTER")
            base = "mediumtext"
    if national:
        col.charset = "utf8mb3"
        spec.explicit_charset = True
    args: list[int] = []
    if p.is_op("("):
        if base in ("enum", "set"):
            p.expect_op("(")
            values: list[str] = []
            while True:
                values.append(p.string())
                if p.accept_op(","):
                    continue
                p.expect_op(")")
                break
            col.values = tuple(values)
        else:
            p.expect_op("(")
            while True:
                args.append(p.integer())
                if p.accept_op(","):
                    continue
                p.expect_op(")")
                break
    elif base in ("enum", "set"):
        raise p.error(f"{base.upper()} needs a list of members")
    if len(args) > 2 or (len(args) == 2 and base not in ("decimal", "float", "double")):
        raise p.error(f"too many arguments for {base.upper()}")
    if base == "bool":
        base, args = "tinyint", [1]
    elif base == "serial":
        base = "bigint"
        col.unsigned = True
        col.nullable = False
        col.auto_increment = True
        spec.unique = True
    if base in _INT_TYPES:
        col.length = args[0] if args else None
    elif base == "decimal":
        col.length = args[0] if args else 10
        col.scale = args[1] if len(args) > 1 else 0
    elif base in _FLOAT_TYPES:
        if len(args) == 2:
            col.length, col.scale = args
        elif len(args) == 1 and base == "float":
            if args[0] > 24:
                base = "double"
        elif args:
            raise p.error("DOUBLE takes (M,D)")
    elif base in _TIME_TYPES:
        col.fsp = args[0] if args else 0
    elif base in ("char", "binary", "bit"):
        col.length = args[0] if args else 1
    elif base in ("varchar", "varbinary", "vector"):
        if not args:
            raise p.error(f"{base.upper()} needs a length")
        col.length = args[0]
    elif base == "year":
        col.length = 2 if args and args[0] == 2 else None
    elif args:
        if base in _TEXT_TYPES or base in _BLOB_TYPES:
            col.length = args[0]
        else:
            raise p.error(f"{base.upper()} takes no length")
    col.type_name = base


_REF_ACTIONS = ("RESTRICT", "CASCADE", "SET", "NO")


def _skip_references(p: _Parser) -> None:
    """After REFERENCES: tbl [(cols)] [MATCH x] [ON DELETE|UPDATE action]..."""
    p.table_name("")
    if p.is_op("("):
        p.group()
    while True:
        if p.accept("MATCH"):
            p.next()
        elif p.is_kw("ON") and p.is_kw("DELETE", "UPDATE", k=1):
            p.i += 2
            if p.accept("SET"):
                p.next()
            elif p.accept("NO"):
                p.expect("ACTION")
            else:
                p.next()
        else:
            return


def _parse_default_expr(p: _Parser) -> list[_Tok]:
    """One DEFAULT / ON UPDATE expression: a parenthesized expression, a literal or a function call."""
    start = p.i
    _parse_primary(p)
    while p.peek().kind == "op" and p.peek().value in ("+", "-", "*", "/", "%", "||"):
        p.next()
        _parse_primary(p)
    return p.toks[start : p.i]


def _parse_primary(p: _Parser) -> None:
    if p.is_op("("):
        p.group()
        return
    while p.peek().kind == "op" and p.peek().value in ("-", "+", "~", "!"):
        p.next()
    tok = p.next()
    if tok.kind == "str":
        while p.peek().kind == "str":
            p.next()
    elif tok.kind in ("num", "hex", "bit"):
        pass
    elif tok.kind == "word":
        nxt = p.peek()
        if tok.upper in ("NEXT", "PREVIOUS") and p.is_kw("VALUE") and p.is_kw("FOR", k=1):
            p.i += 2
            p.table_name("")
        elif nxt.kind == "str" and (tok.value.startswith("_") or tok.upper in ("DATE", "TIME", "TIMESTAMP")):
            while p.peek().kind == "str":
                p.next()
        elif nxt.kind == "op" and nxt.value == "(":
            p.group()
        elif nxt.kind == "op" and nxt.value == "." and p.peek(1).kind in ("word", "qident"):
            p.i += 2  # NEXT VALUE FOR db.seq / qualified names
    else:
        raise p.error("expected an expression", tok)


def _parse_column(p: _Parser, name: str, *, in_alter: bool = False) -> _ColSpec:
    col = ColumnDef(name=name, type_name="int")
    spec = _ColSpec(col)
    _parse_type(p, col, spec)
    collation: str | None = None
    while True:
        tok = p.peek()
        if tok.kind == _EOF or (tok.kind == "op" and tok.value in (",", ")")):
            break
        if tok.kind != "word":
            raise p.error("unexpected text in a column definition")
        word = tok.upper
        if in_alter and word in ("FIRST", "AFTER"):
            break
        p.i += 1
        if word == "NOT":
            if p.accept("NULL"):
                col.nullable = False
            else:
                raise p.error("expected NULL after NOT")
        elif word == "NULL":
            col.nullable = True
        elif word == "UNSIGNED":
            col.unsigned = True
        elif word == "SIGNED":
            col.unsigned = False
        elif word == "ZEROFILL":
            col.zerofill = True
            col.unsigned = True
        elif word == "BINARY":
            spec.binary_collation = True
        elif word == "BYTE":
            col.charset = "binary"
            spec.explicit_charset = True
        elif word == "ASCII":
            col.charset = "latin1"
            spec.explicit_charset = True
        elif word == "UNICODE":
            col.charset = "ucs2"
            spec.explicit_charset = True
        elif word in ("CHARACTER", "CHARSET"):
            if word == "CHARACTER":
                p.expect("SET")
            p.optional_eq()
            col.charset = _norm_charset(p.name_value())
            spec.explicit_charset = True
        elif word == "COLLATE":
            p.optional_eq()
            collation = _norm_collation(p.name_value())
        elif word == "DEFAULT":
            col.default = _render_tokens(_parse_default_expr(p))
        elif word == "ON":
            p.expect("UPDATE")
            col.on_update = _render_tokens(_parse_default_expr(p))
        elif word == "AUTO_INCREMENT":
            col.auto_increment = True
        elif word == "UNIQUE":
            p.accept("KEY") or p.accept("INDEX")
            spec.unique = True
        elif word == "PRIMARY":
            p.expect("KEY")
            spec.primary_key = True
        elif word == "KEY":
            spec.primary_key = True
        elif word == "COMMENT":
            p.optional_eq()
            col.comment = p.string()
        elif word in ("GENERATED", "AS"):
            if word == "GENERATED":
                p.expect("ALWAYS")
                p.expect("AS")
            if p.accept("ROW"):
                if not (p.accept("START") or p.accept("END")):
                    raise p.error("expected START or END")
                continue
            col.generation_expr = _render_tokens(p.group())
            col.generated = "virtual"
        elif word == "VIRTUAL":
            col.generated = "virtual"
        elif word in ("STORED", "PERSISTENT"):
            col.generated = "stored"
        elif word == "INVISIBLE":
            col.invisible = True
        elif word == "VISIBLE":
            col.invisible = False
        elif word == "SERIAL":
            p.expect("DEFAULT")
            p.expect("VALUE")
            col.nullable = False
            col.auto_increment = True
            spec.unique = True
        elif word in ("COLUMN_FORMAT", "STORAGE"):
            p.next()
        elif word == "SRID":
            col.srid = p.integer()
        elif word == "REF_SYSTEM_ID":
            p.optional_eq()
            col.srid = p.integer()
        elif word in ("ENGINE_ATTRIBUTE", "SECONDARY_ENGINE_ATTRIBUTE"):
            p.optional_eq()
            p.string()
        elif word == "COMPRESSED":
            if p.accept_op("="):
                p.next()
        elif word in ("WITH", "WITHOUT"):
            p.expect("SYSTEM")
            p.expect("VERSIONING")
        elif word == "CONSTRAINT":
            if not p.is_kw("CHECK"):
                p.ident()
            p.expect("CHECK")
            _column_check(p, col, spec)
        elif word == "CHECK":
            _column_check(p, col, spec)
        elif word == "REFERENCES":
            _skip_references(p)
        else:
            raise p.error("unknown column attribute", tok)
    if collation is not None:
        col.collation = collation
        if col.charset is None:
            col.charset = _charset_of_collation(collation)
            spec.explicit_charset = col.charset is not None
    return spec


def _column_check(p: _Parser, col: ColumnDef, spec: _ColSpec) -> None:
    inner = p.group()
    if _is_json_check(inner, col.name):
        spec.json_check = True
    p.accept("NOT")
    p.accept("ENFORCED")


def _is_json_check(inner: list[_Tok], column: str) -> bool:
    return (
        len(inner) == 4
        and inner[0].kind == "word"
        and inner[0].upper == "JSON_VALID"
        and inner[1].value == "("
        and inner[2].kind in ("word", "qident")
        and norm(inner[2].value) == norm(column)
        and inner[3].value == ")"
    )


def _finish_column(spec: _ColSpec, table_charset: str | None, table_collation: str | None) -> ColumnDef:
    """Resolve charset/collation (table defaults, BINARY attribute, CHARACTER SET binary) and JSON."""
    col = spec.column
    if spec.json_check and col.type_name == "longtext":
        col.type_name = "json"
    if col.type_name in _TEXT_TYPES:
        if col.charset is None and table_charset is not None:
            col.charset = table_charset
            if col.collation is None and _charset_of_collation(table_collation) == table_charset:
                col.collation = table_collation
        if spec.binary_collation and col.charset is not None and col.collation is None:
            col.collation = "binary" if col.charset == "binary" else f"{col.charset}_bin"
        if col.charset == "binary":
            col.charset = None
            col.collation = None
            col.type_name = _TO_BINARY.get(col.type_name, col.type_name)
    else:
        col.charset = None
        col.collation = None
    col.binary = col.type_name in _BYTES_TYPES
    col.raw_type = _type_sql(col)
    return col
