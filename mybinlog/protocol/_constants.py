"""Binlog event type codes, column type codes, flags and charsets (protocol facts, no logic)."""

from __future__ import annotations

from enum import IntEnum
from typing import Any

BINLOG_MAGIC = b"\xfebin"
HEADER_LEN = 19
CHECKSUM_LEN = 4


class EventType(IntEnum):
    UNKNOWN_EVENT = 0
    START_EVENT_V3 = 1
    QUERY_EVENT = 2
    STOP_EVENT = 3
    ROTATE_EVENT = 4
    INTVAR_EVENT = 5
    LOAD_EVENT = 6
    SLAVE_EVENT = 7
    CREATE_FILE_EVENT = 8
    APPEND_BLOCK_EVENT = 9
    EXEC_LOAD_EVENT = 10
    DELETE_FILE_EVENT = 11
    NEW_LOAD_EVENT = 12
    RAND_EVENT = 13
    USER_VAR_EVENT = 14
    FORMAT_DESCRIPTION_EVENT = 15
    XID_EVENT = 16
    BEGIN_LOAD_QUERY_EVENT = 17
    EXECUTE_LOAD_QUERY_EVENT = 18
    TABLE_MAP_EVENT = 19
    PRE_GA_WRITE_ROWS_EVENT = 20
    PRE_GA_UPDATE_ROWS_EVENT = 21
    PRE_GA_DELETE_ROWS_EVENT = 22
    WRITE_ROWS_EVENT_V1 = 23
    UPDATE_ROWS_EVENT_V1 = 24
    DELETE_ROWS_EVENT_V1 = 25
    INCIDENT_EVENT = 26
    HEARTBEAT_LOG_EVENT = 27
    IGNORABLE_LOG_EVENT = 28
    ROWS_QUERY_LOG_EVENT = 29
    WRITE_ROWS_EVENT = 30
    UPDATE_ROWS_EVENT = 31
    DELETE_ROWS_EVENT = 32
    GTID_LOG_EVENT = 33
    ANONYMOUS_GTID_LOG_EVENT = 34
    PREVIOUS_GTIDS_LOG_EVENT = 35
    TRANSACTION_CONTEXT_EVENT = 36
    VIEW_CHANGE_EVENT = 37
    XA_PREPARE_LOG_EVENT = 38
    PARTIAL_UPDATE_ROWS_EVENT = 39
    TRANSACTION_PAYLOAD_EVENT = 40
    HEARTBEAT_LOG_EVENT_V2 = 41
    GTID_TAGGED_LOG_EVENT = 42
    # MariaDB
    ANNOTATE_ROWS_EVENT = 160
    BINLOG_CHECKPOINT_EVENT = 161
    MARIADB_GTID_EVENT = 162
    MARIADB_GTID_LIST_EVENT = 163
    START_ENCRYPTION_EVENT = 164
    QUERY_COMPRESSED_EVENT = 165
    WRITE_ROWS_COMPRESSED_EVENT_V1 = 166
    UPDATE_ROWS_COMPRESSED_EVENT_V1 = 167
    DELETE_ROWS_COMPRESSED_EVENT_V1 = 168
    WRITE_ROWS_COMPRESSED_EVENT = 169
    UPDATE_ROWS_COMPRESSED_EVENT = 170
    DELETE_ROWS_COMPRESSED_EVENT = 171


def event_type_name(code: int) -> str:
    try:
        return EventType(code).name
    except ValueError:
        return f"UNKNOWN_EVENT_{code}"


# Header flags
LOG_EVENT_BINLOG_IN_USE_F = 0x1
LOG_EVENT_ARTIFICIAL_F = 0x20
LOG_EVENT_RELAY_LOG_F = 0x40
LOG_EVENT_IGNORABLE_F = 0x80

# Rows event flags
STMT_END_F = 0x1

# FORMAT_DESCRIPTION checksum algorithms
BINLOG_CHECKSUM_ALG_OFF = 0
BINLOG_CHECKSUM_ALG_CRC32 = 1
BINLOG_CHECKSUM_ALG_UNDEF = 255


class ColumnType(IntEnum):
    DECIMAL = 0
    TINY = 1
    SHORT = 2
    LONG = 3
    FLOAT = 4
    DOUBLE = 5
    NULL = 6
    TIMESTAMP = 7
    LONGLONG = 8
    INT24 = 9
    DATE = 10
    TIME = 11
    DATETIME = 12
    YEAR = 13
    NEWDATE = 14
    VARCHAR = 15
    BIT = 16
    TIMESTAMP2 = 17
    DATETIME2 = 18
    TIME2 = 19
    TYPED_ARRAY = 20
    VECTOR = 242
    INVALID = 243
    BOOL = 244
    JSON = 245
    NEWDECIMAL = 246
    ENUM = 247
    SET = 248
    TINY_BLOB = 249
    MEDIUM_BLOB = 250
    LONG_BLOB = 251
    BLOB = 252
    VAR_STRING = 253
    STRING = 254
    GEOMETRY = 255


NUMERIC_TYPES = frozenset(
    {
        ColumnType.TINY,
        ColumnType.SHORT,
        ColumnType.INT24,
        ColumnType.LONG,
        ColumnType.LONGLONG,
        ColumnType.NEWDECIMAL,
        ColumnType.FLOAT,
        ColumnType.DOUBLE,
        ColumnType.DECIMAL,
    }
)
CHARACTER_TYPES = frozenset({ColumnType.STRING, ColumnType.VAR_STRING, ColumnType.VARCHAR, ColumnType.BLOB})


class OptionalMetadata(IntEnum):
    SIGNEDNESS = 1
    DEFAULT_CHARSET = 2
    COLUMN_CHARSET = 3
    COLUMN_NAME = 4
    SET_STR_VALUE = 5
    ENUM_STR_VALUE = 6
    GEOMETRY_TYPE = 7
    SIMPLE_PRIMARY_KEY = 8
    PRIMARY_KEY_WITH_PREFIX = 9
    ENUM_AND_SET_DEFAULT_CHARSET = 10
    ENUM_AND_SET_COLUMN_CHARSET = 11
    COLUMN_VISIBILITY = 12
    VECTOR_DIMENSIONALITY = 13


BINARY_COLLATION = 63

# Collation id -> Python codec. Unknown ids fall back to UTF-8 (utf8mb3/utf8mb4 are by far the most common,
# and MariaDB's newer uca1400 ids are all utf8mb3/utf8mb4/ucs2/utf16/utf32 variants; see _collation_codec()).
_LATIN1 = (5, 8, 15, 31, 47, 48, 49, 94)
_ASCII = (11, 65)
_UCS2 = (35, 90, *range(128, 152), 159)
_UTF16 = (54, 55, *range(101, 125), 122)
_UTF16LE = (56, 62)
_UTF32 = (60, 61, *range(160, 184))
_CP1250 = (26, 34, 44, 66, 99)
_CP1251 = (14, 23, 50, 51, 52)
_CP1256 = (57, 67)
_CP1257 = (29, 58, 59)
_GBK = (28, 87)
_BIG5 = (1, 84)
_SJIS = (13, 88)
_CP932 = (95, 96)
_EUCKR = (19, 85)
_GB2312 = (24, 86)
_UJIS = (12, 91)
_EUCJPMS = (97, 98)
_KOI8R = (7, 74)
_KOI8U = (22, 75)
_GREEK = (25, 70)
_HEBREW = (16, 71)
_LATIN2 = (2, 9, 21, 27, 77)
_LATIN5 = (30, 78)
_LATIN7 = (20, 41, 42, 79)
_CP850 = (4, 80)
_CP852 = (40, 81)
_CP866 = (36, 68)
_TIS620 = (18, 89)
_GB18030 = (248, 249, 250)

COLLATION_CODECS: dict[int, str] = {}
for _ids, _codec in (
    (_LATIN1, "cp1252"),  # MySQL's latin1 is really cp1252
    (_ASCII, "ascii"),
    (_UCS2, "utf-16-be"),
    (_UTF16, "utf-16-be"),
    (_UTF16LE, "utf-16-le"),
    (_UTF32, "utf-32-be"),
    (_CP1250, "cp1250"),
    (_CP1251, "cp1251"),
    (_CP1256, "cp1256"),
    (_CP1257, "cp1257"),
    (_GBK, "gbk"),
    (_BIG5, "big5"),
    (_SJIS, "shift_jis"),
    (_CP932, "cp932"),
    (_EUCKR, "euc_kr"),
    (_GB2312, "gb2312"),
    (_UJIS, "euc_jp"),
    (_EUCJPMS, "euc_jis_2004"),
    (_KOI8R, "koi8_r"),
    (_KOI8U, "koi8_u"),
    (_GREEK, "iso8859_7"),
    (_HEBREW, "iso8859_8"),
    (_LATIN2, "iso8859_2"),
    (_LATIN5, "iso8859_9"),
    (_LATIN7, "iso8859_13"),
    (_CP850, "cp850"),
    (_CP852, "cp852"),
    (_CP866, "cp866"),
    (_TIS620, "tis_620"),
    (_GB18030, "gb18030"),
):
    for _id in _ids:
        COLLATION_CODECS[_id] = _codec


def collation_codec(collation_id: int | None) -> str | None:
    """Python codec for a MySQL/MariaDB collation id; None means binary (bytes, not text)."""
    if collation_id == BINARY_COLLATION:
        return None
    if collation_id is None:
        return "utf-8"
    return COLLATION_CODECS.get(collation_id, "utf-8")


MISSING: Any = type("Missing", (), {"__repr__": lambda self: "MISSING", "__slots__": ()})()
"""Stands for a column absent from a row image (binlog_row_image=MINIMAL/NOBLOB), distinct from NULL (None). Defined
here, at the bottom of the decoder's modules, so that the events and the table maps that fill rows both use it
without importing each other."""
