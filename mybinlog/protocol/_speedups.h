/* _speedups.h: what the files of the extension mybinlog.protocol._speedups share (one module built from several
 * files, setup.py; the map of which file does what is at the top of _speedups.c). Anything not declared here is
 * static in its file. Shared symbols carry the prefix mb_; the small helpers that the row decoder and the JSON row
 * writer both inline (byte reads, temporal fields) are static inline here, so that they stay inlined in both. */
#ifndef MYBINLOG_SPEEDUPS_H
#define MYBINLOG_SPEEDUPS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* -- the module (_speedups.c) --------------------------------------------------------------------------------- */

extern PyObject *mb_Decimal; /* decimal.Decimal, taken at import */
extern PyObject *mb_UTC;     /* datetime.timezone.utc, taken at import */

/* adds a type, readied, to the module as `name`: 0, or -1 with an error set */
int mb_add_type(PyObject *module, const char *name, PyTypeObject *type);

/* -- row programs (_sp_rows.c decodes, _sp_render.c writes JSON, _sp_decimal.c builds DECIMAL values) ---------- */

enum {
    OP_INT = 1,      /* a = bytes (1, 2, 3, 4, 8), little-endian, signed */
    OP_UINT,         /* a = bytes, unsigned */
    OP_FLOAT,        /* 4-byte IEEE little-endian */
    OP_DOUBLE,       /* 8-byte IEEE little-endian */
    OP_YEAR,         /* 1 byte, 0 or 1900 + byte */
    OP_DECIMAL,      /* layout in dec_*; fallback for invalid values */
    OP_DATETIME2,    /* a = fraction bytes, b = fraction multiplier; fallback for zero/invalid dates */
    OP_TIMESTAMP2,   /* a = fraction bytes, b = fraction multiplier; fallback for the zero timestamp */
    OP_DATE,         /* 3 bytes; fallback for zero/invalid dates */
    OP_STRING,       /* a = length bytes (1, 2); b = text mode; c = pad length (BINARY(n)); obj = codec */
    OP_BLOB,         /* a = length bytes (1..4); b = text mode; obj = codec or post-processing callable */
    OP_ENUM,         /* a = bytes (1, 2); obj = the values tuple or None */
    OP_CALL,         /* fallback(buf, pos) -> (value, new pos) */
    OP_NULL,         /* MYSQL_TYPE_NULL: always None, no bytes */
    OP_TIME2,        /* a = fraction bytes (0..3), b = fraction multiplier: a timedelta */
    OP_BIT,          /* a = bytes (1..8), big-endian: an int */
    OP_SET,          /* a = bytes (1..8), little-endian bits; obj = the values tuple (a frozenset of them) or None */
};

/* TEXT_CODEC_ASCII: a codec that decodes ASCII bytes as ASCII (GBK, Shift-JIS...): render_json writes ASCII-only
   text of it as it is. TEXT_TABLE: a single-byte codec (latin1, which is cp1252, the other ISO 8859 and Windows
   code pages, KOI8...): obj is (codec name, the 256 characters each byte decodes to, U+FFFE where it raises), and
   text is decoded and written through that table; a byte without a character goes to the codec (its error) */
enum {
    TEXT_BYTES = 0,
    TEXT_CODEC = 1,
    TEXT_UTF8 = 2,
    TEXT_UTF8_OR_BYTES = 3,
    TEXT_CALL = 4,
    TEXT_CODEC_ASCII = 5,
    TEXT_TABLE = 6,
};
#define TABLE_NONE 0x110000 /* a byte of a TEXT_TABLE codec that decodes to no character */

typedef struct {
    int kind;
    int slot;        /* index in the row tuple */
    int a, b, c;
    int dec_size, dec_fields;
    int dec_bytes[16];  /* bytes of each field: lead (1..4), 9-digit groups (4), trail (1..4) */
    int dec_digits[16]; /* decimal digits of each field */
    unsigned int dec_limit[16];  /* each field must be below this */
    int scale;
    PyObject *obj;
    PyObject *fallback;
    Py_UCS4 *table; /* TEXT_TABLE: each byte's code point (TABLE_NONE: none); else NULL */
} Op;

typedef struct {
    Py_ssize_t nops;
    Py_ssize_t null_bytes;
    int ordered;  /* the ops' slots ascend (render_json writes the columns in slot order) */
    Op *ops;
} Image;

typedef struct {
    PyObject_HEAD
    Py_ssize_t ncols;
    int mode;            /* 0: one image per row, 1: before and after images */
    PyObject *missing;
    Image images[2];
} RowProgram;

static inline unsigned long long
read_le(const unsigned char *p, int n)
{
    unsigned long long v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static inline unsigned long long
read_be(const unsigned char *p, int n)
{
    unsigned long long v = 0;
    for (int i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

/* days since 1970-01-01 -> civil date (proleptic Gregorian), Howard Hinnant's published algorithm */
static inline void
civil_from_days(long long z, int *y, int *m, int *d)
{
    z += 719468;
    long long era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long long yy = (long long)yoe + era * 400;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    unsigned dd = doy - (153 * mp + 2) / 5 + 1;
    unsigned mm = mp < 10 ? mp + 3 : mp - 9;
    *y = (int)(yy + (mm <= 2));
    *m = (int)mm;
    *d = (int)dd;
}

/* -- temporal fields, shared by decode() and render_json() -------------------------------------------------- */

typedef struct {
    int year, month, day, hour, minute, second;
    unsigned long long usec; /* DATETIME2: the fraction as stored (may be out of range); TIMESTAMP2: < 1000000 */
} Fields;

/* DATETIME2 (5 + op->a bytes): 0 for a negative packed value (invalid), else 1 with the fields as stored */
static inline int
datetime2_fields(Op *op, const unsigned char *p, Fields *f)
{
    unsigned int th = p[0];
    unsigned long long tl = read_be(p + 1, 4);
    if (th < 128)
        return 0;
    long long ym = ((long long)(th - 128) << 10) | (long long)(tl >> 22);
    unsigned long long hms = tl & 0x1FFFF;
    f->year = (int)(ym / 13);
    f->month = (int)(ym % 13);
    f->day = (int)(tl >> 17 & 31);
    f->hour = (int)(hms >> 12);
    f->minute = (int)(hms >> 6 & 63);
    f->second = (int)(hms & 63);
    f->usec = op->a ? read_be(p + 5, op->a) * (unsigned)op->b : 0;
    return 1;
}

/* TIMESTAMP2 (4 + op->a bytes): 0 for the zero timestamp, else 1 with the UTC fields */
static inline int
timestamp2_fields(Op *op, const unsigned char *p, Fields *f)
{
    unsigned long long secs = read_be(p, 4);
    if (!secs)
        return 0;
    unsigned long long usec = op->a ? read_be(p + 4, op->a) * (unsigned)op->b : 0;
    secs += usec / 1000000;
    civil_from_days((long long)(secs / 86400), &f->year, &f->month, &f->day);
    unsigned long long rem = secs % 86400;
    f->hour = (int)(rem / 3600);
    f->minute = (int)(rem / 60 % 60);
    f->second = (int)(rem % 60);
    f->usec = usec % 1000000;
    return 1;
}

/* TIME2 (3 + op->a bytes), MySQL's packed time: the integer part (hours, minutes, seconds) << 24 plus signed
 * microseconds; a negative value with a fraction counts the fraction down from the next integer. Sets the sign, the
 * seconds and the microseconds of the magnitude. */
static inline void
time2_parts(Op *op, const unsigned char *p, int *negative, int *secs, int *usec)
{
    long long packed;
    if (op->a == 0)
        packed = ((long long)read_be(p, 3) - 0x800000LL) * (1LL << 24);
    else if (op->a == 3)
        packed = (long long)read_be(p, 6) - 0x800000000000LL;
    else {
        long long intpart = (long long)read_be(p, 3) - 0x800000LL;
        long long frac = (long long)read_be(p + 3, op->a);
        if (intpart < 0 && frac) {
            intpart += 1;
            frac -= op->a == 1 ? 0x100 : 0x10000;
        }
        packed = intpart * (1LL << 24) + frac * op->b;
    }
    *negative = packed < 0;
    if (*negative)
        packed = -packed;
    long long hms = packed >> 24;
    *secs = (int)(((hms >> 12) & 0x3FF) * 3600 + ((hms >> 6) & 63) * 60 + (hms & 63));
    *usec = (int)(packed & 0xFFFFFF);
}


/* _sp_rows.c: the RowProgram type, added to the module at import (also takes datetime's C API for that file) */
int mb_rows_init(PyObject *module);
/* the (buf, pos, end) arguments of RowProgram.decode and render_json: 1 span, 0 return None, -1 error */
int mb_row_span(PyObject *const *args, Py_ssize_t nargs, const char *usage, PyObject **pbuf,
                const unsigned char **pdata, Py_ssize_t *ppos, Py_ssize_t *pend);

/* _sp_render.c: RowProgram.render_json */
PyObject *mb_RowProgram_render_json(RowProgram *self, PyObject *const *args, Py_ssize_t nargs);

/* _sp_decimal.c: DECIMAL values. CPython's _decimal object layout as read and written in place (checked at import
 * by mb_dec_direct_init, which sets mb_dec_direct only when it matches) */
typedef struct {
    uint8_t flags;
    int64_t exp, digits, len, alloc;
    uint64_t *data;
} MpdLayout;

#define DEC_WORDS 4
extern int mb_dec_direct;            /* Decimals are built in place (DIRECT_DECIMAL) */
extern Py_ssize_t mb_dec_mpd_offset; /* the offset of a Decimal's MpdLayout */
int mb_dec_direct_init(void);
PyObject *mb_decode_decimal(const Op *op, const unsigned char *p);
int mb_decimal_digits(const Op *op, const unsigned char *p, char *digits, int *negative);
char *mb_put_plain_decimal(char *p, const char *digits, int nd, int scale, int negative);

/* -- UTF-8 text (_sp_utf8.c) ------------------------------------------------------------------------------------ */

void mb_utf8_init(void); /* picks the AVX-512 kernel where the CPU has it (MYBINLOG_NO_AVX512 unset) */
PyObject *mb_decode_utf8(const char *p, Py_ssize_t n);
PyObject *mb_py_utf8(PyObject *module, PyObject *arg);
PyObject *mb_py_utf8_simd(PyObject *module, PyObject *on);

/* -- framing, CRC32 and the decoder loop (_sp_events.c) ------------------------------------------------------- */

void mb_events_init(void); /* the CRC32 tables; PCLMULQDQ where the CPU has it (MYBINLOG_NO_CLMUL unset) */
PyObject *mb_py_crc32(PyObject *module, PyObject *arg);
PyObject *mb_set_event_classes(PyObject *module, PyObject *arg);
PyObject *mb_decode_events(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *mb_cut_events(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *mb_frame_events(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* -- BinlogStream's side: the Ready and StreamIter awaitables, active_indexes (_sp_stream.c) ------------------- */

int mb_stream_init(PyObject *module);
PyObject *mb_active_indexes(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* -- TsvRows, rows into ClickHouse's TabSeparated (_sp_tsv.c) -------------------------------------------------- */

int mb_tsv_init(PyObject *module);

/* -- MySQL's binary JSON (_jsonb.c) ----------------------------------------------------------------------------- */

int mb_jsonb_is_decoder(PyObject *f);
PyObject *mb_jsonb_decode(const unsigned char *p, Py_ssize_t n, PyObject *fallback);
PyObject *mb_jsonb_py_decode(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

#endif /* MYBINLOG_SPEEDUPS_H */
