/* mybinlog.protocol._speedups: the optional compiled core of the sans-IO decoder.
 *
 * What it does (docs/compiled-core.md):
 *   RowProgram  a table's row image layout compiled once (mybinlog/protocol/_table.py builds it from a TableMap);
 *               RowProgram.decode(buf, pos, end) decodes every row image of a rows event into the same list of
 *               tuples as the generated pure-Python decoder.
 *   scan_events the framing loop of the decoder (mybinlog/protocol/_decoder.py): headers, CRC32 and the kind
 *               of each event of a batch, in one C pass.
 *
 * The contract with the pure-Python code is "same result or no result": whenever a value is unusual (a zero or
 * invalid date, a digit group out of range, bytes that are not valid text, an image running past its event) this
 * code either hands that one value to the pure-Python value function (passed in as the column's fallback) or gives
 * up on the whole event by returning None, and the caller then decodes the event in pure Python, which produces the
 * exact value or the exact error. Errors are therefore always raised by the pure-Python code, never here.
 *
 * No IO, no global state but a few immutable references taken at import (decimal.Decimal, datetime's C API).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <datetime.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <structmember.h>

#include "_jsonbuf.h"

static PyObject *Decimal = NULL;   /* decimal.Decimal */
static PyObject *UTC = NULL;       /* datetime.timezone.utc */

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

/* ---------------------------------------------------------------------------------------------------------- */

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

static int
parse_image(PyObject *ops_seq, Image *img, Py_ssize_t ncols)
{
    PyObject *fast = PySequence_Fast(ops_seq, "ops must be a sequence");
    if (fast == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    img->nops = n;
    img->null_bytes = (n + 7) >> 3;
    img->ordered = 1;
    img->ops = PyMem_Calloc(n ? n : 1, sizeof(Op));
    if (img->ops == NULL) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(fast, i);
        Op *op = &img->ops[i];
        PyObject *obj = Py_None, *fallback = Py_None, *dec = Py_None;
        if (!PyArg_ParseTuple(item, "iiiii|OOO", &op->kind, &op->slot, &op->a, &op->b, &op->c, &obj, &fallback,
                              &dec)) {
            Py_DECREF(fast);
            return -1;
        }
        if (i && op->slot <= img->ops[i - 1].slot)
            img->ordered = 0;
        if (op->slot < 0 || op->slot >= ncols || op->kind < OP_INT || op->kind > OP_SET) {
            PyErr_SetString(PyExc_ValueError, "bad row program op");
            Py_DECREF(fast);
            return -1;
        }
        Py_INCREF(fallback);
        op->fallback = fallback;
        if ((op->kind == OP_STRING || op->kind == OP_BLOB) && op->b == TEXT_TABLE) {
            /* obj = (codec name, the 256-character table): the name stays in obj for the codec's own errors */
            PyObject *name, *chars;
            if (!PyTuple_Check(obj) || !PyArg_ParseTuple(obj, "UU", &name, &chars) ||
                PyUnicode_GET_LENGTH(chars) != 256) {
                PyErr_Clear();
                PyErr_SetString(PyExc_ValueError, "bad row program op: a byte table is (codec, 256 characters)");
                Py_DECREF(fast);
                return -1;
            }
            op->table = PyMem_Malloc(256 * sizeof(Py_UCS4));
            if (op->table == NULL) {
                PyErr_NoMemory();
                Py_DECREF(fast);
                return -1;
            }
            for (int k = 0; k < 256; k++) {
                Py_UCS4 ch = PyUnicode_READ_CHAR(chars, k);
                op->table[k] = ch == 0xFFFE || (ch >= 0xD800 && ch <= 0xDFFF) ? TABLE_NONE : ch;
            }
            obj = name;
        }
        Py_INCREF(obj);
        op->obj = obj;
        if ((op->kind == OP_TIME2 && (op->a < 0 || op->a > 3)) ||
            ((op->kind == OP_BIT || op->kind == OP_SET) && (op->a < 1 || op->a > 8)) ||
            (op->kind == OP_SET && obj != Py_None && (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) > 64))) {
            PyErr_SetString(PyExc_ValueError, "bad row program op");
            Py_DECREF(fast);
            return -1;
        }
        if (op->kind == OP_DECIMAL) {
            /* dec = (size, scale, ((bytes, digits, limit), ...)) */
            PyObject *fields;
            if (!PyArg_ParseTuple(dec, "iiO", &op->dec_size, &op->scale, &fields)) {
                Py_DECREF(fast);
                return -1;
            }
            PyObject *ff = PySequence_Fast(fields, "decimal fields");
            if (ff == NULL) {
                Py_DECREF(fast);
                return -1;
            }
            Py_ssize_t nf = PySequence_Fast_GET_SIZE(ff);
            if (nf < 1 || nf > 16) {
                Py_DECREF(ff);
                Py_DECREF(fast);
                PyErr_SetString(PyExc_ValueError, "bad decimal layout");
                return -1;
            }
            op->dec_fields = (int)nf;
            int total_digits = 0;
            for (Py_ssize_t k = 0; k < nf; k++) {
                if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(ff, k), "iiI", &op->dec_bytes[k], &op->dec_digits[k],
                                      &op->dec_limit[k])) {
                    Py_DECREF(ff);
                    Py_DECREF(fast);
                    return -1;
                }
                total_digits += op->dec_digits[k];
                if (op->dec_bytes[k] < 1 || op->dec_bytes[k] > 4 || op->dec_digits[k] < 0 || op->dec_digits[k] > 9 ||
                    total_digits > 96 || op->scale < 0 || op->scale > 99) {
                    Py_DECREF(ff);
                    Py_DECREF(fast);
                    PyErr_SetString(PyExc_ValueError, "bad decimal layout");
                    return -1;
                }
            }
            Py_DECREF(ff);
        }
    }
    Py_DECREF(fast);
    return 0;
}

static void
free_image(Image *img)
{
    if (img->ops == NULL)
        return;
    for (Py_ssize_t i = 0; i < img->nops; i++) {
        Py_XDECREF(img->ops[i].obj);
        Py_XDECREF(img->ops[i].fallback);
        PyMem_Free(img->ops[i].table);
    }
    PyMem_Free(img->ops);
    img->ops = NULL;
}

static void
RowProgram_dealloc(RowProgram *self)
{
    free_image(&self->images[0]);
    free_image(&self->images[1]);
    Py_XDECREF(self->missing);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
RowProgram_init(RowProgram *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"ncols", "missing", "before", "after", NULL};
    Py_ssize_t ncols;
    PyObject *missing, *before, *after = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "nOO|O", kwlist, &ncols, &missing, &before, &after))
        return -1;
    if (ncols < 0) {
        PyErr_SetString(PyExc_ValueError, "ncols must be >= 0");
        return -1;
    }
    free_image(&self->images[0]);
    free_image(&self->images[1]);
    self->ncols = ncols;
    Py_INCREF(missing);
    Py_XSETREF(self->missing, missing);
    if (parse_image(before, &self->images[0], ncols) < 0)
        return -1;
    self->mode = 0;
    if (after != Py_None) {
        if (parse_image(after, &self->images[1], ncols) < 0)
            return -1;
        self->mode = 1;
    }
    return 0;
}

/* days since 1970-01-01 -> civil date (proleptic Gregorian), Howard Hinnant's published algorithm */
static void
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

/* call the column's pure-Python value function: (value, new pos); NULL on error or a position past `end` */
static PyObject *
call_fallback(Op *op, PyObject *buf, Py_ssize_t *pos, Py_ssize_t end)
{
    PyObject *res = PyObject_CallFunction(op->fallback, "On", buf, *pos);
    if (res == NULL)
        return NULL;
    if (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) != 2) {
        Py_DECREF(res);
        PyErr_SetString(PyExc_TypeError, "value function must return (value, pos)");
        return NULL;
    }
    Py_ssize_t np = PyLong_AsSsize_t(PyTuple_GET_ITEM(res, 1));
    if (np == -1 && PyErr_Occurred()) {
        Py_DECREF(res);
        return NULL;
    }
    if (np < *pos || np > end) {
        Py_DECREF(res);
        PyErr_SetString(PyExc_ValueError, "value runs past its row image");
        return NULL;
    }
    PyObject *value = PyTuple_GET_ITEM(res, 0);
    Py_INCREF(value);
    Py_DECREF(res);
    *pos = np;
    return value;
}

/* strict UTF-8 -> str in two passes, with utf8_fast's contract: the str, or NULL without an error set for anything
 * it does not accept (invalid, truncated, overlong, a surrogate, > U+10FFFF), so that the caller hands those bytes to
 * CPython's decoder, which raises its exact error.
 *
 * Pass 1 (utf8_measure, 16 bytes at a time) counts the continuation bytes and finds the largest byte. For valid text
 * that is all the str needs: the characters are the bytes that are not continuations, and the largest lead byte
 * decides the kind (C2-C3: U+0080-U+00FF, one byte; C4-EF: up to U+FFFF, two; F0-F4: four), the same canonical kind
 * CPython picks. Pass 2 (one loop per kind) validates each sequence and writes it; every character written has its
 * own lead byte, so it never writes past the counted length, even when the text turns out invalid. CPython's own
 * decoder writes into a one-byte buffer and widens and copies it each time a wider character appears, which made it
 * 3.5 ns a byte on the mixed workload's text. */

static inline void
utf8_measure(const unsigned char *s, Py_ssize_t n, Py_ssize_t *pconts, unsigned *pmax)
{
    Py_ssize_t i = 0, conts = 0;
    unsigned mx = 0;
#ifdef __SSE2__
    if (n >= 16) {
        const __m128i lim = _mm_set1_epi8((char)0xC0), z = _mm_setzero_si128();
        __m128i vmax = z;
        while (i + 16 <= n) {
            /* per-lane counts of continuation bytes (0x80-0xBF: as signed bytes, below (signed) 0xC0), summed
             * before a lane can wrap */
            __m128i acc = z;
            for (int blocks = 0; blocks < 255 && i + 16 <= n; blocks++, i += 16) {
                __m128i v = _mm_loadu_si128((const __m128i *)(s + i));
                vmax = _mm_max_epu8(vmax, v);
                acc = _mm_sub_epi8(acc, _mm_cmplt_epi8(v, lim));
            }
            __m128i sums = _mm_sad_epu8(acc, z);
            conts += _mm_cvtsi128_si32(sums) + _mm_cvtsi128_si32(_mm_unpackhi_epi64(sums, sums));
        }
        unsigned char lanes[16];
        _mm_storeu_si128((__m128i *)lanes, vmax);
        for (int k = 0; k < 16; k++)
            mx = lanes[k] > mx ? lanes[k] : mx;
    }
#endif
    for (; i + 8 <= n; i += 8) { /* short text: ASCII words skipped (only whether mx reaches 0x80 matters then) */
        uint64_t w;
        memcpy(&w, s + i, 8);
        if (w & 0x8080808080808080ULL)
            break;
    }
    for (; i < n; i++) {
        unsigned c = s[i];
        mx = c > mx ? c : mx;
        conts += (c & 0xC0) == 0x80;
    }
    *pconts = conts;
    *pmax = mx;
}

#define UTF8_CONT(x) (((x) & 0xC0) == 0x80)

/* when s[0:8] is ASCII, its 8 characters written to out as code units of `width` bytes, and 1; else 0 */
static inline int
utf8_ascii8(const unsigned char *s, void *out, int width)
{
    uint64_t w;
    memcpy(&w, s, 8);
    if (w & 0x8080808080808080ULL)
        return 0;
    if (width == 1)
        memcpy(out, &w, 8);
    else
        for (int j = 0; j < 8; j++) {
            if (width == 2)
                ((Py_UCS2 *)out)[j] = s[j];
            else
                ((Py_UCS4 *)out)[j] = s[j];
        }
    return 1;
}

/* one decoding loop per kind: T is the code unit, WIDE the widest sequence it may meet (1: two-byte sequences with
 * C2-C3 leads only, 2: up to three bytes, 3: four bytes too). An ASCII byte at an aligned address starts a copy of
 * whole ASCII words (utf8_ascii8), as CPython's decoder does: testing for a run at every ASCII byte cost more than
 * it saved on text where short words alternate with other characters. Every character written has its own lead
 * byte, so k never passes nchars, valid text or not (the word copy checks it as well). 0 when every byte was
 * decoded, -1 when the bytes are not valid UTF-8 */
#define UTF8_DECODE_LOOP(T, WIDE)                                                                                  \
    Py_ssize_t i = 0, k = 0;                                                                                        \
    while (i < n) {                                                                                                 \
        unsigned c = s[i];                                                                                          \
        if (c < 0x80) {                                                                                             \
            if (!((uintptr_t)(s + i) & 7)) { /* aligned: whole words of ASCII */                                   \
                while (i + 8 <= n && k + 8 <= nchars && utf8_ascii8(s + i, out + k, (int)sizeof(T))) {              \
                    i += 8;                                                                                         \
                    k += 8;                                                                                         \
                }                                                                                                   \
                if (i == n)                                                                                         \
                    break;                                                                                          \
                c = s[i];                                                                                           \
                if (c >= 0x80)                                                                                      \
                    continue;                                                                                       \
            }                                                                                                       \
            out[k++] = (T)c;                                                                                        \
            i++;                                                                                                    \
        }                                                                                                           \
        else if (c >= 0xC2 && c < (WIDE == 1 ? 0xC4 : 0xE0)) {                                                      \
            if (i + 1 >= n || !UTF8_CONT(s[i + 1]))                                                                 \
                return -1;                                                                                          \
            out[k++] = (T)((c & 0x1F) << 6 | (s[i + 1] & 0x3F));                                                    \
            i += 2;                                                                                                 \
        }                                                                                                           \
        else if (WIDE >= 2 && c >= 0xE0 && c < 0xF0) {                                                              \
            if (i + 2 >= n || !UTF8_CONT(s[i + 1]) || !UTF8_CONT(s[i + 2]))                                         \
                return -1;                                                                                          \
            if ((c == 0xE0 && s[i + 1] < 0xA0) || (c == 0xED && s[i + 1] >= 0xA0))                                  \
                return -1; /* overlong, or a surrogate */                                                           \
            out[k++] = (T)((c & 0x0F) << 12 | (unsigned)(s[i + 1] & 0x3F) << 6 | (s[i + 2] & 0x3F));                \
            i += 3;                                                                                                 \
        }                                                                                                           \
        else if (WIDE >= 3 && c >= 0xF0 && c < 0xF5) {                                                              \
            if (i + 3 >= n || !UTF8_CONT(s[i + 1]) || !UTF8_CONT(s[i + 2]) || !UTF8_CONT(s[i + 3]))                 \
                return -1;                                                                                          \
            if ((c == 0xF0 && s[i + 1] < 0x90) || (c == 0xF4 && s[i + 1] >= 0x90))                                  \
                return -1; /* overlong, or past U+10FFFF */                                                         \
            out[k++] = (T)((c & 0x07) << 18 | (unsigned)(s[i + 1] & 0x3F) << 12 | (unsigned)(s[i + 2] & 0x3F) << 6 | \
                           (s[i + 3] & 0x3F));                                                                      \
            i += 4;                                                                                                 \
        }                                                                                                           \
        else                                                                                                        \
            return -1;                                                                                              \
    }                                                                                                               \
    return k == nchars ? 0 : -1;

#define UTF8_DECODER(name, T, WIDE)                                                                                \
    static int name(const unsigned char *restrict s, Py_ssize_t n, T *restrict out, Py_ssize_t nchars)             \
    {                                                                                                               \
        UTF8_DECODE_LOOP(T, WIDE)                                                                                   \
    }

UTF8_DECODER(utf8_decode_ucs1, Py_UCS1, 1)
UTF8_DECODER(utf8_decode_ucs2, Py_UCS2, 2)
UTF8_DECODER(utf8_decode_ucs4, Py_UCS4, 3)

/* the AVX-512 intrinsics used below need GCC 10 or clang 8 (an older compiler builds the scalar loop only) */
#if defined(__x86_64__) && defined(__GNUC__) && (defined(__clang__) ? __clang_major__ >= 8 : __GNUC__ >= 10)
#include <immintrin.h>
#define HAVE_AVX512_UTF8 1
/* pass 2 with AVX-512 (VBMI2: Ice Lake, Zen 4 and later), chosen at import (MYBINLOG_NO_AVX512=1: never). The scalar
 * loop above takes a branch per character on its width, and text that mixes widths (words of several languages,
 * emoji) mispredicts at almost every change: about 2 ns a byte. This kernel has no branch on the text. For each 16
 * bytes it decodes a character at every byte position as if it started there (the 4 bytes from that position in a
 * 32-bit lane, the lead byte giving the length), keeps the lanes where a character really starts (every byte but a
 * continuation byte) and stores them packed (a compress), at any width. It validates with masks: the continuation
 * bytes must be exactly those the lead bytes call for (a 16-bit mask per block, carried into the next), and each
 * character must be in range for its length (not overlong, not a surrogate, not past U+10FFFF). Loads and stores are
 * masked at the ends, so nothing outside the text or the str is touched. The characters written are the starts,
 * which pass 1 counted, so it never writes past nchars, valid text or not. Same contract as the scalar loop: 0 when
 * the text is valid, -1 when it is not (CPython's decoder then raises its exact error). */
static int use_avx512_utf8 = 0, avx512_utf8_supported = 0;
#define AVX512_UTF8_TARGET                                                                                         \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512cd,avx512vbmi,avx512vbmi2,popcnt,bmi2")))

AVX512_UTF8_TARGET static int
utf8_decode_avx512(const unsigned char *s, Py_ssize_t n, void *out, Py_ssize_t nchars, int width)
{
    /* lane j of the 16: the bytes j..j+3 as a big-endian 32-bit value (its lead byte on top) */
    const __m512i gather = _mm512_set_epi8(
        15, 16, 17, 18, 14, 15, 16, 17, 13, 14, 15, 16, 12, 13, 14, 15, 11, 12, 13, 14, 10, 11, 12, 13, 9, 10, 11, 12,
        8, 9, 10, 11, 7, 8, 9, 10, 6, 7, 8, 9, 5, 6, 7, 8, 4, 5, 6, 7, 3, 4, 5, 6, 2, 3, 4, 5, 1, 2, 3, 4, 0, 1, 2, 3);
    /* by the count of leading one bits of the lead byte (0 for ASCII, 2, 3, 4; 1 for a continuation byte, whose
     * lane is dropped): the shift that brings the character's bytes to the bottom, the bits of them that are the
     * character's (the lead byte's payload, 6 of each continuation byte's), the smallest character of that length.
     * 5 and more (F8-FF) are never UTF-8 and are refused by the byte test below */
    const __m512i shifts = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 16, 24, 24);
    const __m512i payload =
        _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x073F3F3F, 0x0F3F3F, 0x1F3F, 0x7F, 0x7F);
    const __m512i least = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10000, 0x800, 0x80, 0, 0);
    /* the payload bits put together: byte pairs (low + 64 * high), then word pairs (low + 4096 * high) */
    const __m512i by64 = _mm512_set1_epi16(0x4001), by4096 = _mm512_set1_epi32(0x10000001);
    const __m128i cont_limit = _mm_set1_epi8((char)0xC0);
    Py_ssize_t i = 0, k = 0;
    uint32_t carry = 0, err = 0;
    while (i < n) {
        Py_ssize_t rem = n - i;
        __mmask32 load = rem >= 32 ? (__mmask32)0xFFFFFFFFu : (__mmask32)((1u << rem) - 1);
        __mmask16 valid = rem >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << rem) - 1);
        __m256i x = _mm256_maskz_loadu_epi8(load, s + i);
        __m128i lo = _mm256_castsi256_si128(x);
        __mmask16 high = _mm_movepi8_mask(lo); /* bytes >= 0x80 (the zeros past the end are not) */
        __m512i c;
        __mmask16 starts;
        if (high == 0 && carry == 0) { /* ASCII: every byte a character */
            c = _mm512_cvtepu8_epi32(lo);
            starts = valid;
        }
        else {
            __mmask16 cont = _mm_mask_cmplt_epi8_mask(valid, lo, cont_limit); /* 0x80-0xBF (signed compare) */
            /* leads of 2 bytes or more, 3 or more, 4; each calls for that many continuation bytes after it */
            __mmask16 ge2 = _mm_cmpge_epu8_mask(lo, _mm_set1_epi8((char)0xC0));
            __mmask16 ge3 = _mm_cmpge_epu8_mask(lo, _mm_set1_epi8((char)0xE0));
            __mmask16 ge4 = _mm_cmpge_epu8_mask(lo, _mm_set1_epi8((char)0xF0));
            err |= (uint32_t)_mm_cmpge_epu8_mask(lo, _mm_set1_epi8((char)0xF8)); /* never in UTF-8 */
            uint32_t due = (uint32_t)ge2 << 1 | (uint32_t)ge3 << 2 | (uint32_t)ge4 << 3 | carry;
            err |= (due & 0xFFFFu) ^ (uint32_t)cont; /* continuation bytes exactly where the leads call for them */
            carry = due >> 16;
            __m512i w = _mm512_permutexvar_epi8(gather, _mm512_zextsi256_si512(x));
            __m512i ones = _mm512_lzcnt_epi32(_mm512_ternarylogic_epi32(w, w, w, 0x55)); /* leading ones of b0 */
            __m512i v = _mm512_and_si512(_mm512_srlv_epi32(w, _mm512_permutexvar_epi32(ones, shifts)),
                                         _mm512_permutexvar_epi32(ones, payload));
            c = _mm512_madd_epi16(_mm512_maddubs_epi16(v, by64), by4096);
            starts = valid & (__mmask16)~cont;
            __mmask16 bad = _mm512_mask_cmplt_epu32_mask(starts, c, _mm512_permutexvar_epi32(ones, least)) |
                            _mm512_mask_cmpgt_epu32_mask(starts, c, _mm512_set1_epi32(0x10FFFF)) |
                            _mm512_mask_cmplt_epu32_mask(starts, _mm512_sub_epi32(c, _mm512_set1_epi32(0xD800)),
                                                         _mm512_set1_epi32(0x800));
            err |= bad;
            c = _mm512_maskz_compress_epi32(starts, c);
        }
        int cnt = __builtin_popcount((unsigned)starts);
        __mmask16 put = (__mmask16)((1u << cnt) - 1);
        if (k + cnt > nchars) /* cannot happen (pass 1 counted the starts); a guard, not a path */
            return -1;
        if (width == 4)
            _mm512_mask_storeu_epi32((Py_UCS4 *)out + k, put, c);
        else if (width == 2)
            _mm256_mask_storeu_epi16((Py_UCS2 *)out + k, put, _mm512_cvtepi32_epi16(c));
        else
            _mm_mask_storeu_epi8((Py_UCS1 *)out + k, put, _mm512_cvtepi32_epi8(c));
        k += cnt;
        i += 16;
    }
    return (err | carry) == 0 && k == nchars ? 0 : -1;
}

/* pass 1 with AVX-512: 64 bytes at a time, the end through a masked load (no scalar tail, which cost more than the
 * blocks on short text). *pmax is not the largest byte but the smallest of 0, 0x80, 0xC4, 0xF0, 0xF5 that is not
 * above it: all utf8_fast asks of it */
AVX512_UTF8_TARGET static void
utf8_measure_avx512(const unsigned char *s, Py_ssize_t n, Py_ssize_t *pconts, unsigned *pmax)
{
    const __m512i cont_limit = _mm512_set1_epi8((char)0xC0);
    Py_ssize_t conts = 0;
    __mmask64 any80 = 0, anyC4 = 0, anyF0 = 0, anyF5 = 0;
    for (Py_ssize_t i = 0; i < n; i += 64) {
        Py_ssize_t rem = n - i;
        __mmask64 valid = rem >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << rem) - 1);
        __m512i v = _mm512_maskz_loadu_epi8(valid, s + i); /* zeros past the end: ASCII, counted as nothing */
        conts += __builtin_popcountll(_mm512_cmplt_epi8_mask(v, cont_limit)); /* 0x80-0xBF, signed compare */
        any80 |= _mm512_movepi8_mask(v);
        anyC4 |= _mm512_cmpge_epu8_mask(v, _mm512_set1_epi8((char)0xC4));
        anyF0 |= _mm512_cmpge_epu8_mask(v, _mm512_set1_epi8((char)0xF0));
        anyF5 |= _mm512_cmpge_epu8_mask(v, _mm512_set1_epi8((char)0xF5));
    }
    *pconts = conts;
    *pmax = anyF5 ? 0xF5 : anyF0 ? 0xF0 : anyC4 ? 0xC4 : any80 ? 0x80 : 0;
}
#endif

static PyObject *
utf8_fast(const unsigned char *s, Py_ssize_t n)
{
    Py_ssize_t conts;
    unsigned mx;
#ifdef HAVE_AVX512_UTF8
    if (use_avx512_utf8)
        utf8_measure_avx512(s, n, &conts, &mx);
    else
#endif
        utf8_measure(s, n, &conts, &mx);
    if (mx < 0x80) {
        PyObject *u = PyUnicode_New(n, 0x7F);
        if (u != NULL)
            memcpy(PyUnicode_DATA(u), s, n);
        return u;
    }
    if (mx > 0xF4)
        return NULL; /* a byte that never occurs in UTF-8 */
    Py_ssize_t nchars = n - conts;
    PyObject *u = PyUnicode_New(nchars, mx < 0xC4 ? 0xFF : mx < 0xF0 ? 0xFFFF : 0x10FFFF);
    if (u == NULL)
        return NULL;
    int rc;
#ifdef HAVE_AVX512_UTF8
    if (use_avx512_utf8)
        rc = utf8_decode_avx512(s, n, PyUnicode_DATA(u), nchars, mx < 0xC4 ? 1 : mx < 0xF0 ? 2 : 4);
    else
#endif
    if (mx < 0xC4)
        rc = utf8_decode_ucs1(s, n, PyUnicode_1BYTE_DATA(u), nchars);
    else if (mx < 0xF0)
        rc = utf8_decode_ucs2(s, n, PyUnicode_2BYTE_DATA(u), nchars);
    else
        rc = utf8_decode_ucs4(s, n, PyUnicode_4BYTE_DATA(u), nchars);
    if (rc < 0) {
        Py_DECREF(u);
        return NULL;
    }
    return u;
}

static PyObject *
py_utf8_simd(PyObject *self, PyObject *on)
{
    int want = PyObject_IsTrue(on);
    if (want < 0)
        return NULL;
#ifdef HAVE_AVX512_UTF8
    use_avx512_utf8 = want && avx512_utf8_supported;
    return PyBool_FromLong(use_avx512_utf8);
#else
    return PyBool_FromLong(0);
#endif
}

/* _jsonb.c: MySQL binary JSON */
int mb_jsonb_is_decoder(PyObject *f);
PyObject *mb_jsonb_decode(const unsigned char *p, Py_ssize_t n, PyObject *fallback);
PyObject *mb_jsonb_py_decode(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

static PyObject *
decode_utf8(const char *p, Py_ssize_t n)
{
    PyObject *u = utf8_fast((const unsigned char *)p, n);
    if (u != NULL || PyErr_Occurred())
        return u;
    return PyUnicode_DecodeUTF8(p, n, NULL);
}

/* text of a single-byte codec through its table: the largest character first (it decides the str's kind), then
 * the characters; the codec itself when a byte has no character (it raises the exact error). Python's charmap
 * codecs are 10x slower per value (a codec lookup and a call per value) */
static PyObject *
decode_table(const Op *op, const unsigned char *s, Py_ssize_t n)
{
    const Py_UCS4 *table = op->table;
    Py_UCS4 mx = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = table[s[i]];
        mx = c > mx ? c : mx;
    }
    if (mx >= TABLE_NONE)
        return PyUnicode_Decode((const char *)s, n, PyUnicode_AsUTF8(op->obj), NULL);
    PyObject *u = PyUnicode_New(n, mx);
    if (u == NULL)
        return NULL;
    int kind = PyUnicode_KIND(u);
    if (kind == PyUnicode_1BYTE_KIND) {
        Py_UCS1 *out = PyUnicode_1BYTE_DATA(u);
        for (Py_ssize_t i = 0; i < n; i++)
            out[i] = (Py_UCS1)table[s[i]];
    }
    else if (kind == PyUnicode_2BYTE_KIND) {
        Py_UCS2 *out = PyUnicode_2BYTE_DATA(u);
        for (Py_ssize_t i = 0; i < n; i++)
            out[i] = (Py_UCS2)table[s[i]];
    }
    else {
        Py_UCS4 *out = PyUnicode_4BYTE_DATA(u);
        for (Py_ssize_t i = 0; i < n; i++)
            out[i] = table[s[i]];
    }
    return u;
}

static PyObject *
decode_text(const Op *op, const char *p, Py_ssize_t n)
{
    PyObject *codec = op->obj;
    switch (op->b) {
    case TEXT_UTF8:
        return decode_utf8(p, n);
    case TEXT_TABLE:
        return decode_table(op, (const unsigned char *)p, n);
    case TEXT_CODEC:
    case TEXT_CODEC_ASCII:
        return PyUnicode_Decode(p, n, PyUnicode_AsUTF8(codec), NULL);
    case TEXT_UTF8_OR_BYTES: {
        PyObject *s = decode_utf8(p, n);
        if (s == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            PyErr_Clear();
            return PyBytes_FromStringAndSize(p, n);
        }
        return s;
    }
    case TEXT_CALL: {
        int jsonb = mb_jsonb_is_decoder(codec); /* binary JSON: decoded in C (_jsonb.c), errors by the value function */
        if (jsonb)
            return jsonb < 0 ? NULL : mb_jsonb_decode((const unsigned char *)p, n, codec);
        PyObject *raw = PyBytes_FromStringAndSize(p, n);
        if (raw == NULL)
            return NULL;
        PyObject *v = PyObject_CallOneArg(codec, raw);
        Py_DECREF(raw);
        return v;
    }
    default:
        return PyBytes_FromStringAndSize(p, n);
    }
}

/* a DECIMAL's fields (see Op.dec_*) in vals[], the sign in *negative (also for zero); -1 when a field is out of
 * range (the value function raises) */
static int
decimal_fields(const Op *op, const unsigned char *p, unsigned int *vals, int *negative)
{
    int neg = !(p[0] & 0x80);
    const unsigned char *q = p;
    for (int k = 0; k < op->dec_fields; k++) {
        int nb = op->dec_bytes[k];
        unsigned int v = (unsigned int)read_be(q, nb);
        unsigned int all = nb == 4 ? 0xFFFFFFFFu : ((1u << (8 * nb)) - 1);
        if (k == 0)
            v ^= 1u << (8 * nb - 1); /* the flipped sign bit */
        if (neg)
            v ^= all;
        if (k == 0 && neg)
            v &= all >> 1; /* after inversion the sign bit is set again: clear it */
        if (v >= op->dec_limit[k])
            return -1;
        vals[k] = v;
        q += nb;
    }
    *negative = neg;
    return 0;
}

/* a DECIMAL's coefficient: its digits without leading zeros (at least one) in digits[], their count returned, the
 * sign in *negative (never for zero); -1 when a field is out of range (the value function raises) */
static int
decimal_digits(const Op *op, const unsigned char *p, char *digits, int *negative)
{
    unsigned int vals[16];
    int neg, nd = 0;
    if (decimal_fields(op, p, vals, &neg) < 0)
        return -1;
    for (int k = 0; k < op->dec_fields; k++) {
        int w = op->dec_digits[k];
        unsigned int v = vals[k];
        for (int d = w - 1; d >= 0; d--) {
            digits[nd + d] = (char)('0' + v % 10);
            v /= 10;
        }
        nd += w;
    }
    int start = 0;
    while (start < nd - 1 && digits[start] == '0')
        start++;
    if (nd == 0) {
        digits[0] = '0';
        nd = 1;
    }
    nd -= start;
    memmove(digits, digits + start, nd);
    *negative = neg && !(nd == 1 && digits[0] == '0');
    return nd;
}

/* Decimal objects built directly. Decimal(str) costs about 150 ns a value (argument parsing, the context, a copy of
 * the text, libmpdec's parser): 7% of a full decode of the mixed workload. CPython's _decimal keeps a small value's
 * coefficient inside the object: {PyObject_HEAD; Py_hash_t hash; mpd_t dec; mpd_uint_t data[4]}, with mpd_t =
 * {uint8_t flags; mpd_ssize_t exp, digits, len, alloc; mpd_uint_t *data} and words of 19 decimal digits (64-bit
 * libmpdec), so every DECIMAL (65 digits at most) fits. That layout is not a public API: dec_direct_init checks it
 * on Decimals made by the constructor, then checks values built here against the constructor's (str and ==), and
 * leaves dec_direct off (Decimal(str) for every value) when anything differs: another Python, a 32-bit libmpdec,
 * _pydecimal. */
typedef struct {
    uint8_t flags;
    int64_t exp, digits, len, alloc;
    uint64_t *data;
} MpdLayout;

#define DEC_WORDS 4
#define DEC_RADIX 10000000000000000000ULL /* 10**19 */
static int dec_direct = 0;
static Py_ssize_t dec_mpd_offset, dec_data_offset;
static uint8_t dec_static_flags;

static const uint64_t POW10[20] = {
    1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL, 100000000ULL, 1000000000ULL,
    10000000000ULL, 100000000000ULL, 1000000000000ULL, 10000000000000ULL, 100000000000000ULL,
    1000000000000000ULL, 10000000000000000ULL, 100000000000000000ULL, 1000000000000000000ULL,
    10000000000000000000ULL,
};

/* the Decimal with coefficient words[0..len) (base 10**19, least significant first, words[len - 1] != 0 unless
 * len == 1), exponent exp and the sign */
static PyObject *
dec_build(const uint64_t *words, int len, int64_t exp, int negative)
{
    PyTypeObject *tp = (PyTypeObject *)Decimal;
    PyObject *d = tp->tp_alloc(tp, 0);
    if (d == NULL)
        return NULL;
    *(Py_hash_t *)((char *)d + sizeof(PyObject)) = -1;
    MpdLayout *m = (MpdLayout *)((char *)d + dec_mpd_offset);
    uint64_t *data = (uint64_t *)((char *)d + dec_data_offset);
    uint64_t top = words[len - 1];
    int topdigits = 1;
    while (topdigits < 20 && top >= POW10[topdigits])
        topdigits++;
    for (int i = 0; i < len; i++)
        data[i] = words[i];
    m->flags = (uint8_t)(dec_static_flags | (negative ? 1 : 0));
    m->exp = exp;
    m->digits = (int64_t)(len - 1) * 19 + topdigits;
    m->len = len;
    m->alloc = DEC_WORDS;
    m->data = data;
    return d;
}

/* the DECIMAL's value built directly (dec_direct): the fields folded into words of 19 digits; NULL without an
 * error where the compiler has no 128-bit integers (the text path then) */
static PyObject *
decimal_direct(const Op *op, const unsigned int *vals, int neg)
{
#ifndef __SIZEOF_INT128__
    (void)op;
    (void)vals;
    (void)neg;
    return NULL;
#else
    uint64_t words[DEC_WORDS + 1] = {0};
    int len = 1;
    for (int k = 0; k < op->dec_fields; k++) {
        uint64_t mul = POW10[op->dec_digits[k]], carry = vals[k];
        for (int i = 0; i < len; i++) {
            unsigned __int128 t = (unsigned __int128)words[i] * mul + carry;
            if (t < DEC_RADIX) { /* the common case: no division */
                words[i] = (uint64_t)t;
                carry = 0;
            }
            else {
                words[i] = (uint64_t)(t % DEC_RADIX);
                carry = (uint64_t)(t / DEC_RADIX);
            }
        }
        if (carry) {
            if (len == DEC_WORDS)
                return NULL; /* cannot happen for 65 digits; the text path then */
            words[len++] = carry;
        }
    }
    int zero = len == 1 && words[0] == 0;
    return dec_build(words, len, -(int64_t)op->scale, neg && !zero);
#endif
}

/* a decimal's digits (nd of them, no leading zeros) in plain notation with `scale` decimals at p ("-123.45",
 * "0.005", "7"): at most nd + scale + 3 bytes; the end returned */
static char *
put_plain_decimal(char *p, const char *digits, int nd, int scale, int negative)
{
    if (negative)
        *p++ = '-';
    if (nd > scale) {
        memcpy(p, digits, (size_t)(nd - scale));
        p += nd - scale;
        if (scale) {
            *p++ = '.';
            memcpy(p, digits + nd - scale, (size_t)scale);
            p += scale;
        }
    }
    else {
        *p++ = '0';
        *p++ = '.';
        memset(p, '0', (size_t)(scale - nd));
        p += scale - nd;
        memcpy(p, digits, (size_t)nd);
        p += nd;
    }
    return p;
}

/* the Decimal through its constructor, from text with a decimal point ("-123.45", "0.005": the same coefficient and
 * exponent as "-12345E-2", without parsing an exponent) */
static PyObject *
decimal_from_text(const char *digits, int nd, int sc, int negative)
{
    char text[256]; /* at most 96 digits and a scale of 99 (parse_image) */
    int len = (int)(put_plain_decimal(text, digits, nd, sc, negative) - text);
    PyObject *s = PyUnicode_FromStringAndSize(text, len);
    if (s == NULL)
        return NULL;
    PyObject *d = PyObject_CallOneArg(Decimal, s);
    Py_DECREF(s);
    return d;
}

static PyObject *
decode_decimal(const Op *op, const unsigned char *p)
{
    if (dec_direct) {
        unsigned int vals[16];
        int neg;
        if (decimal_fields(op, p, vals, &neg) < 0)
            return NULL; /* out of range: the value function raises */
        PyObject *d = decimal_direct(op, vals, neg);
        if (d != NULL || PyErr_Occurred())
            return d;
    }
    char digits[128];
    int negative;
    int nd = decimal_digits(op, p, digits, &negative);
    if (nd < 0)
        return NULL; /* out of range: the value function raises */
    return decimal_from_text(digits, nd, op->scale, negative);
}

/* whether a Decimal made by the constructor has the layout dec_build writes (see above); sets the offsets */
static int
dec_layout_matches(PyObject *d, int64_t exp, int64_t digits, int64_t len, const uint64_t *words, int negative)
{
    const MpdLayout *m = (const MpdLayout *)((const char *)d + dec_mpd_offset);
    if (m->exp != exp || m->digits != digits || m->len != len || m->alloc != DEC_WORDS ||
        m->data != (const uint64_t *)((const char *)d + dec_data_offset) || (m->flags & 1) != negative ||
        (m->flags & ~1) != dec_static_flags)
        return 0;
    for (int i = 0; i < len; i++)
        if (m->data[i] != words[i])
            return 0;
    return 1;
}

static PyObject *
dec_from_cstring(const char *text)
{
    PyObject *s = PyUnicode_FromString(text);
    if (s == NULL)
        return NULL;
    PyObject *d = PyObject_CallOneArg(Decimal, s);
    Py_DECREF(s);
    return d;
}

/* turn dec_direct on when Decimal has the layout dec_build writes: 0, or -1 with an error set (only for a failed
 * allocation or call; a different layout is not an error) */
static int
dec_direct_init(void)
{
    PyTypeObject *tp = (PyTypeObject *)Decimal;
    dec_direct = 0;
#ifndef __SIZEOF_INT128__
    return 0; /* decimal_direct needs 128-bit integers */
#endif
    if (!PyType_Check(Decimal) || sizeof(void *) != 8 || (tp->tp_flags & Py_TPFLAGS_HAVE_GC) ||
        tp->tp_itemsize != 0 || tp->tp_alloc == NULL || getenv("MYBINLOG_NO_DIRECT_DECIMAL") != NULL)
        return 0;
    dec_mpd_offset = (Py_ssize_t)(sizeof(PyObject) + sizeof(Py_hash_t));
    dec_data_offset = dec_mpd_offset + (Py_ssize_t)sizeof(MpdLayout);
    if (tp->tp_basicsize != dec_data_offset + (Py_ssize_t)(DEC_WORDS * sizeof(uint64_t)))
        return 0;
    /* the constructor's layout: a positive zero with exponent -2, a negative value of two words */
    PyObject *a = dec_from_cstring("0.00");
    if (a == NULL)
        return -1;
    PyObject *b = dec_from_cstring("-1234567890123456789012.345");
    if (b == NULL) {
        Py_DECREF(a);
        return -1;
    }
    dec_static_flags = ((const MpdLayout *)((const char *)a + dec_mpd_offset))->flags;
    /* 1234567890123456789012345 = 123456 * 10**19 + 7890123456789012345 */
    const uint64_t zero[1] = {0}, two[2] = {7890123456789012345ULL, 123456ULL};
    int ok = (dec_static_flags & 1) == 0 && dec_layout_matches(a, -2, 1, 1, zero, 0) &&
             dec_layout_matches(b, -3, 25, 2, two, 1);
    Py_DECREF(a);
    Py_DECREF(b);
    if (!ok)
        return 0;
    /* values built here against the constructor's, at one to four words: the same str, and equal */
    static const char *checks[] = {
        "0", "7", "-7", "0.05", "-0.05", "9999999999999999999", "10000000000000000000", "-123456789012.34",
        "99999999999999999999999999999999999999.999999999999999999999999999",
        "-12345678901234567890123456789012345678901234567890123456789012345",
        "0.000000000000000000000000000001", "-100000000000000000000000000000.000000000000000000000000000000",
    };
    for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
        const char *t = checks[i];
        int negative = t[0] == '-', exp = 0, seen_point = 0;
        uint64_t words[DEC_WORDS + 1] = {0};
        char digits[80];
        int nd = 0;
        for (const char *c = t + negative; *c; c++) {
            if (*c == '.')
                seen_point = 1;
            else {
                digits[nd++] = *c;
                exp -= seen_point;
            }
        }
        int start = 0;
        while (start < nd - 1 && digits[start] == '0')
            start++;
        int len = 0;
        for (int end = nd; end > start; end -= 19, len++) {
            uint64_t w = 0;
            for (int j = end - 19 > start ? end - 19 : start; j < end; j++)
                w = w * 10 + (uint64_t)(digits[j] - '0');
            words[len] = w;
        }
        if (len > DEC_WORDS)
            return 0;
        PyObject *ours = dec_build(words, len, exp, negative);
        PyObject *theirs = ours == NULL ? NULL : dec_from_cstring(t);
        if (theirs == NULL) {
            Py_XDECREF(ours);
            return -1;
        }
        PyObject *s1 = PyObject_Str(ours), *s2 = PyObject_Str(theirs);
        int same = s1 != NULL && s2 != NULL && PyUnicode_Compare(s1, s2) == 0 &&
                   PyObject_RichCompareBool(ours, theirs, Py_EQ) == 1 && PyObject_Hash(ours) == PyObject_Hash(theirs);
        Py_XDECREF(s1);
        Py_XDECREF(s2);
        Py_DECREF(ours);
        Py_DECREF(theirs);
        if (PyErr_Occurred())
            return -1;
        if (!same)
            return 0;
    }
    dec_direct = 1;
    return 0;
}

/* after a failed date/datetime constructor: 1 when the value was only invalid (ValueError, OverflowError: cleared,
 * the column's pure-Python value function takes it), 0 for any other error (left set) */
static int
invalid_value_cleared(void)
{
    if (!PyErr_ExceptionMatches(PyExc_ValueError) && !PyErr_ExceptionMatches(PyExc_OverflowError))
        return 0;
    PyErr_Clear();
    return 1;
}

#define NEED(n)                      \
    do {                             \
        if (pos + (n) > end)         \
            goto fail;               \
    } while (0)

/* decode one row image at *ppos into a new tuple; NULL (error set) to give up on the event */
static PyObject *
decode_image(RowProgram *self, Image *img, PyObject *buf, const unsigned char *data, Py_ssize_t *ppos,
             Py_ssize_t end)
{
    Py_ssize_t pos = *ppos;
    Py_ssize_t ncols = self->ncols;
    const unsigned char *nulls = data + pos;
    if (pos + img->null_bytes > end) {
        PyErr_SetString(PyExc_IndexError, "row image runs past its event");
        return NULL;
    }
    pos += img->null_bytes;
    PyObject *row = PyTuple_New(ncols);
    if (row == NULL)
        return NULL;
    for (Py_ssize_t j = 0; j < img->nops; j++) {
        Op *op = &img->ops[j];
        PyObject *v;
        if (nulls[j >> 3] >> (j & 7) & 1) {
            v = Py_None;
            Py_INCREF(v);
            PyTuple_SET_ITEM(row, op->slot, v);
            continue;
        }
        const unsigned char *p = data + pos;
        switch (op->kind) {
        case OP_INT: {
            NEED(op->a);
            unsigned long long u = read_le(p, op->a);
            int bits = op->a * 8;
            long long s = bits == 64 ? (long long)u : (long long)(u ^ (1ULL << (bits - 1))) - (1LL << (bits - 1));
            v = PyLong_FromLongLong(s);
            pos += op->a;
            break;
        }
        case OP_UINT:
            NEED(op->a);
            v = PyLong_FromUnsignedLongLong(read_le(p, op->a));
            pos += op->a;
            break;
        case OP_FLOAT: {
            NEED(4);
            double d = PyFloat_Unpack4((const char *)p, 1);
            if (d == -1.0 && PyErr_Occurred())
                goto fail_row;
            v = PyFloat_FromDouble(d);
            pos += 4;
            break;
        }
        case OP_DOUBLE: {
            NEED(8);
            double d = PyFloat_Unpack8((const char *)p, 1);
            if (d == -1.0 && PyErr_Occurred())
                goto fail_row;
            v = PyFloat_FromDouble(d);
            pos += 8;
            break;
        }
        case OP_YEAR:
            NEED(1);
            v = PyLong_FromLong(p[0] ? 1900 + p[0] : 0);
            pos += 1;
            break;
        case OP_DECIMAL:
            NEED(op->dec_size);
            v = decode_decimal(op, p);
            if (v == NULL) {
                if (PyErr_Occurred())
                    goto fail_row;
                v = call_fallback(op, buf, &pos, end);
            }
            else
                pos += op->dec_size;
            break;
        case OP_DATETIME2: {
            int size = 5 + op->a;
            NEED(size);
            Fields f;
            v = NULL;
            if (datetime2_fields(op, p, &f) && f.year >= 1 && f.year <= 9999 && f.usec < 1000000) {
                v = PyDateTimeAPI->DateTime_FromDateAndTime(f.year, f.month, f.day, f.hour, f.minute, f.second,
                                                            (int)f.usec, Py_None, PyDateTimeAPI->DateTimeType);
                if (v == NULL && !invalid_value_cleared())
                    goto fail_row;
            }
            if (v == NULL)
                v = call_fallback(op, buf, &pos, end);
            else
                pos += size;
            break;
        }
        case OP_TIMESTAMP2: {
            int size = 4 + op->a;
            NEED(size);
            Fields f;
            if (timestamp2_fields(op, p, &f)) {
                v = PyDateTimeAPI->DateTime_FromDateAndTime(f.year, f.month, f.day, f.hour, f.minute, f.second,
                                                            (int)f.usec, UTC, PyDateTimeAPI->DateTimeType);
                pos += size;
            }
            else
                v = call_fallback(op, buf, &pos, end);
            break;
        }
        case OP_DATE: {
            NEED(3);
            unsigned int x = (unsigned int)read_le(p, 3);
            int day = x & 31, month = (x >> 5) & 15, year = (int)(x >> 9);
            v = NULL;
            if (year && month && day) {
                v = PyDateTimeAPI->Date_FromDate(year, month, day, PyDateTimeAPI->DateType);
                if (v == NULL && !invalid_value_cleared())
                    goto fail_row;
            }
            if (v == NULL)
                v = call_fallback(op, buf, &pos, end);
            else
                pos += 3;
            break;
        }
        case OP_STRING: {
            NEED(op->a);
            Py_ssize_t n = op->a == 1 ? p[0] : (p[0] | p[1] << 8);
            pos += op->a;
            NEED(n);
            const char *s = (const char *)data + pos;
            if (op->b == TEXT_BYTES && n < op->c) {
                v = PyBytes_FromStringAndSize(NULL, op->c);
                if (v != NULL) {
                    memcpy(PyBytes_AS_STRING(v), s, n);
                    memset(PyBytes_AS_STRING(v) + n, 0, op->c - n);
                }
            }
            else
                v = decode_text(op, s, n);
            pos += n;
            break;
        }
        case OP_BLOB: {
            NEED(op->a);
            Py_ssize_t n = (Py_ssize_t)read_le(p, op->a);
            pos += op->a;
            if (n < 0 || n > end - pos)
                goto fail_row;
            v = decode_text(op, (const char *)data + pos, n);
            pos += n;
            break;
        }
        case OP_ENUM: {
            NEED(op->a);
            Py_ssize_t index = (Py_ssize_t)read_le(p, op->a);
            pos += op->a;
            if (op->obj == Py_None)
                v = PyLong_FromSsize_t(index);
            else if (index == 0 || index > PyTuple_GET_SIZE(op->obj))
                v = PyUnicode_FromStringAndSize("", 0);
            else {
                v = PyTuple_GET_ITEM(op->obj, index - 1);
                Py_INCREF(v);
            }
            break;
        }
        case OP_TIME2: {
            int size = 3 + op->a;
            NEED(size);
            int negative, secs, usec;
            time2_parts(op, p, &negative, &secs, &usec);
            v = PyDelta_FromDSU(0, negative ? -secs : secs, negative ? -usec : usec);
            pos += size;
            break;
        }
        case OP_BIT:
            NEED(op->a);
            v = PyLong_FromUnsignedLongLong(read_be(p, op->a));
            pos += op->a;
            break;
        case OP_SET: {
            NEED(op->a);
            unsigned long long bits = read_le(p, op->a);
            pos += op->a;
            if (op->obj == Py_None) {
                v = PyLong_FromUnsignedLongLong(bits);
                break;
            }
            v = PyFrozenSet_New(NULL);
            Py_ssize_t nvalues = PyTuple_GET_SIZE(op->obj);
            for (Py_ssize_t k = 0; v != NULL && k < nvalues && k < 64; k++)
                if (bits >> k & 1 && PySet_Add(v, PyTuple_GET_ITEM(op->obj, k)) < 0)
                    Py_CLEAR(v);
            break;
        }
        case OP_CALL:
            v = call_fallback(op, buf, &pos, end);
            break;
        case OP_NULL:
        default:
            v = Py_None;
            Py_INCREF(v);
            break;
        }
        if (v == NULL)
            goto fail_row;
        PyTuple_SET_ITEM(row, op->slot, v);
    }
    /* absent columns (a MINIMAL or NOBLOB image); a row of plain values is no container the GC must visit */
    int plain = 1;
    for (Py_ssize_t k = 0; k < ncols; k++) {
        PyObject *item = PyTuple_GET_ITEM(row, k);
        if (item == NULL) {
            Py_INCREF(self->missing);
            PyTuple_SET_ITEM(row, k, self->missing);
        }
        else if (plain && PyType_HasFeature(Py_TYPE(item), Py_TPFLAGS_HAVE_GC) && PyObject_GC_IsTracked(item))
            plain = 0; /* the type test first, inline: int, str, Decimal and datetime are not GC types */
    }
    if (plain)
        PyObject_GC_UnTrack(row);
    *ppos = pos;
    return row;
fail:
    PyErr_SetString(PyExc_IndexError, "row image runs past its event");
fail_row:
    Py_DECREF(row);
    return NULL;
}

/* the (buf, pos, end) arguments of RowProgram.decode and render_json: 1 when they are bytes and a span inside
 * them, 0 when the call should return None (not bytes, a span outside them: the pure-Python decoder then says
 * what is wrong), -1 on an error */
static int
row_span(PyObject *const *args, Py_ssize_t nargs, const char *usage, PyObject **pbuf, const unsigned char **pdata,
         Py_ssize_t *ppos, Py_ssize_t *pend)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    PyObject *buf = args[0];
    if (!PyBytes_Check(buf))
        return 0;
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    Py_ssize_t end = PyLong_AsSsize_t(args[2]);
    if ((pos == -1 || end == -1) && PyErr_Occurred())
        return -1;
    if (pos < 0 || end > PyBytes_GET_SIZE(buf) || pos > end)
        return 0;
    *pbuf = buf;
    *pdata = (const unsigned char *)PyBytes_AS_STRING(buf);
    *ppos = pos;
    *pend = end;
    return 1;
}

static PyObject *
RowProgram_decode(RowProgram *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *buf;
    const unsigned char *data;
    Py_ssize_t pos, end;
    int span = row_span(args, nargs, "decode(buf, pos, end)", &buf, &data, &pos, &end);
    if (span <= 0)
        return span < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    while (pos < end) {
        PyObject *row = decode_image(self, &self->images[0], buf, data, &pos, end);
        if (row == NULL)
            goto give_up;
        if (self->mode) {
            PyObject *after = decode_image(self, &self->images[1], buf, data, &pos, end);
            if (after == NULL) {
                Py_DECREF(row);
                goto give_up;
            }
            PyObject *pair = PyTuple_New(2);
            if (pair == NULL) {
                Py_DECREF(row);
                Py_DECREF(after);
                goto give_up;
            }
            PyTuple_SET_ITEM(pair, 0, row);
            PyTuple_SET_ITEM(pair, 1, after);
            row = pair;
        }
        int rc = PyList_Append(out, row);
        Py_DECREF(row);
        if (rc < 0)
            goto give_up;
    }
    return out;
give_up:
    /* the pure-Python decoder decodes this event again and raises the exact error (or a MemoryError) */
    Py_DECREF(out);
    if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_Exception))
            return NULL; /* KeyboardInterrupt, SystemExit: never swallowed */
        PyErr_Clear();
    }
    Py_RETURN_NONE;
}

/* -- rows as JSON text, straight from the row images (dump --format jsonl) ------------------------------------
 * render_json() writes what the JSON Lines renderer writes for the rows that decode() would give, without
 * building them: the same text byte for byte, or None whenever a value is anything but plain (a value that
 * decode() hands to its Python value function, text that is not UTF-8 or needs a codec, SET members, MySQL's
 * binary JSON, a damaged image). The renderer then decodes the rows and writes them from the values. */

#define RENDER_GIVE_UP 1

static int
days_in_month(int y, int m)
{
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && (y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)))
        return 29;
    return days[m - 1];
}

/* the date/datetime constructors' checks: a value they refuse goes to the column's value function */
static int
valid_date(int y, int m, int d)
{
    return y >= 1 && y <= 9999 && m >= 1 && m <= 12 && d >= 1 && d <= days_in_month(y, m);
}

/* text of a single-byte codec written through its table as a JSON string: transcoded to UTF-8 (at most 3 bytes a
 * character: the tables hold no character past U+FFFF), then quoted; RENDER_GIVE_UP when a byte has no character */
static int
render_table(Buf *b, const Py_UCS4 *table, const unsigned char *s, Py_ssize_t n)
{
    unsigned char small[768], *u = small;
    if (n > (Py_ssize_t)sizeof(small) / 3) {
        u = PyMem_Malloc((size_t)n * 3);
        if (u == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    }
    Py_ssize_t k = 0;
    int rc = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = table[s[i]];
        if (c > 0xFFFF) {
            rc = RENDER_GIVE_UP;
            break;
        }
        k = (unsigned char *)put_cp((char *)u + k, c) - u;
    }
    if (rc == 0)
        rc = buf_quoted_utf8(b, u, k);
    if (u != small)
        PyMem_Free(u);
    return rc;
}

static int
render_text(Buf *b, const Op *op, const unsigned char *s, Py_ssize_t n, Py_ssize_t pad)
{
    int rc;
    switch (op->b) {
    case TEXT_TABLE:
        return render_table(b, op->table, s, n);
    case TEXT_UTF8: /* buf_quoted_checked: 1 (nothing written) when the text is not UTF-8 */
        return buf_quoted_checked(b, s, n);
    case TEXT_UTF8_OR_BYTES:
        rc = buf_quoted_checked(b, s, n);
        return rc == 1 ? buf_hex(b, s, n, 0) : rc;
    case TEXT_BYTES:
        return buf_hex(b, s, n, pad);
    case TEXT_CODEC_ASCII: /* ASCII-only text is the same text in this codec; anything else must be decoded */
        for (Py_ssize_t i = 0; i < n; i++)
            if (s[i] >= 0x80)
                return RENDER_GIVE_UP;
        return buf_quoted_utf8(b, s, n);
    default: /* another codec, or a value function (binary JSON, VECTOR) */
        return RENDER_GIVE_UP;
    }
}

/* the value decode_decimal() builds, quoted, in fixed notation with the column's scale ("0.000000000", not str()'s
 * "0E-9"): the Python renderer's decimal_text() */
static int
render_decimal(Buf *b, Op *op, const unsigned char *p)
{
    char digits[128];
    int negative;
    int nd = decimal_digits(op, p, digits, &negative);
    if (nd < 0)
        return RENDER_GIVE_UP;
    int exponent = -op->scale;
    int dotplace = exponent + nd; /* exponent <= 0 always */
    if (BUF_RESERVE(b, nd - exponent + 16) < 0)
        return -1;
    char *q = b->data + b->len;
    *q++ = '"';
    if (negative)
        *q++ = '-';
    if (dotplace <= 0) {
        *q++ = '0';
        *q++ = '.';
        memset(q, '0', (size_t)-dotplace);
        q += -dotplace;
        memcpy(q, digits, (size_t)nd);
        q += nd;
    }
    else if (dotplace >= nd) {
        memcpy(q, digits, (size_t)nd);
        q += nd;
        memset(q, '0', (size_t)(dotplace - nd));
        q += dotplace - nd;
    }
    else {
        memcpy(q, digits, (size_t)dotplace);
        q += dotplace;
        *q++ = '.';
        memcpy(q, digits + dotplace, (size_t)(nd - dotplace));
        q += nd - dotplace;
    }
    b->len = q - b->data;
    return buf_byte(b, '"');
}

#define RNEED(n)                     \
    do {                             \
        if (pos + (n) > end)         \
            return RENDER_GIVE_UP;   \
    } while (0)

static int
render_value(Buf *b, Op *op, const unsigned char *data, Py_ssize_t *ppos, Py_ssize_t end)
{
    Py_ssize_t pos = *ppos;
    const unsigned char *p = data + pos;
    int rc;
    switch (op->kind) {
    case OP_INT: {
        RNEED(op->a);
        unsigned long long u = read_le(p, op->a);
        int bits = op->a * 8;
        rc = buf_ll(b, bits == 64 ? (long long)u : (long long)(u ^ (1ULL << (bits - 1))) - (1LL << (bits - 1)));
        pos += op->a;
        break;
    }
    case OP_UINT:
        RNEED(op->a);
        rc = buf_ull(b, read_le(p, op->a));
        pos += op->a;
        break;
    case OP_FLOAT:
    case OP_DOUBLE: {
        int size = op->kind == OP_FLOAT ? 4 : 8;
        RNEED(size);
        double d = size == 4 ? PyFloat_Unpack4((const char *)p, 1) : PyFloat_Unpack8((const char *)p, 1);
        if (d == -1.0 && PyErr_Occurred())
            return -1;
        rc = buf_double(b, d);
        pos += size;
        break;
    }
    case OP_YEAR:
        RNEED(1);
        rc = buf_ll(b, p[0] ? 1900 + p[0] : 0);
        pos += 1;
        break;
    case OP_DECIMAL:
        RNEED(op->dec_size);
        rc = render_decimal(b, op, p);
        pos += op->dec_size;
        break;
    case OP_DATETIME2: {
        int size = 5 + op->a;
        RNEED(size);
        Fields f;
        if (!datetime2_fields(op, p, &f) || !valid_date(f.year, f.month, f.day) || f.usec >= 1000000 ||
            f.hour > 23 || f.minute > 59 || f.second > 59)
            return RENDER_GIVE_UP;
        rc = buf_datetime(b, f.year, f.month, f.day, f.hour, f.minute, f.second, (int)f.usec, 0);
        pos += size;
        break;
    }
    case OP_TIMESTAMP2: {
        int size = 4 + op->a;
        RNEED(size);
        Fields f;
        if (!timestamp2_fields(op, p, &f))
            return RENDER_GIVE_UP;
        rc = buf_datetime(b, f.year, f.month, f.day, f.hour, f.minute, f.second, (int)f.usec, 1);
        pos += size;
        break;
    }
    case OP_DATE: {
        RNEED(3);
        unsigned int x = (unsigned int)read_le(p, 3);
        int day = x & 31, month = (x >> 5) & 15, year = (int)(x >> 9);
        if (!valid_date(year, month, day))
            return RENDER_GIVE_UP;
        rc = buf_byte(b, '"') < 0 || buf_date(b, year, month, day) < 0 ? -1 : buf_byte(b, '"');
        pos += 3;
        break;
    }
    case OP_STRING: {
        RNEED(op->a);
        Py_ssize_t n = op->a == 1 ? p[0] : (p[0] | p[1] << 8);
        pos += op->a;
        RNEED(n);
        Py_ssize_t pad = op->b == TEXT_BYTES && n < op->c ? op->c - n : 0;
        rc = render_text(b, op, data + pos, n, pad);
        pos += n;
        break;
    }
    case OP_BLOB: {
        RNEED(op->a);
        unsigned long long n = read_le(p, op->a);
        pos += op->a;
        if (n > (unsigned long long)(end - pos))
            return RENDER_GIVE_UP;
        rc = render_text(b, op, data + pos, (Py_ssize_t)n, 0);
        pos += (Py_ssize_t)n;
        break;
    }
    case OP_ENUM: {
        RNEED(op->a);
        Py_ssize_t index = (Py_ssize_t)read_le(p, op->a);
        pos += op->a;
        if (op->obj == Py_None)
            rc = buf_ll(b, index);
        else if (index == 0 || index > PyTuple_GET_SIZE(op->obj))
            rc = BUF_LIT(b, "\"\"");
        else {
            Py_ssize_t n;
            const char *s = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(op->obj, index - 1), &n);
            if (s == NULL) { /* not a str, or a lone surrogate: the renderer's own str code writes it */
                PyErr_Clear();
                return RENDER_GIVE_UP;
            }
            rc = buf_quoted_utf8(b, (const unsigned char *)s, n);
        }
        break;
    }
    case OP_TIME2: {
        int size = 3 + op->a;
        RNEED(size);
        int negative, secs, usec;
        time2_parts(op, p, &negative, &secs, &usec);
        long long total = secs * 1000000LL + usec;
        rc = buf_duration(b, negative ? -total : total);
        pos += size;
        break;
    }
    case OP_BIT:
        RNEED(op->a);
        rc = buf_ull(b, read_be(p, op->a));
        pos += op->a;
        break;
    case OP_SET: {
        RNEED(op->a);
        unsigned long long bits = read_le(p, op->a);
        pos += op->a;
        if (op->obj == Py_None) {
            rc = buf_ull(b, bits);
            break;
        }
        /* the members, sorted (the renderer writes a SET's frozenset as sorted(members)): op->fallback holds the
           members' indexes in that order */
        PyObject *order = op->fallback;
        Py_ssize_t nvalues = PyTuple_GET_SIZE(op->obj);
        if (!PyTuple_Check(order) || PyTuple_GET_SIZE(order) != nvalues)
            return RENDER_GIVE_UP;
        rc = buf_byte(b, '[');
        for (Py_ssize_t k = 0, written = 0; !rc && k < nvalues; k++) {
            Py_ssize_t index = PyLong_AsSsize_t(PyTuple_GET_ITEM(order, k));
            if (index < 0 || index >= nvalues || index >= 64) {
                PyErr_Clear();
                return RENDER_GIVE_UP;
            }
            if (!(bits >> index & 1))
                continue;
            Py_ssize_t len;
            const char *text = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(op->obj, index), &len);
            if (text == NULL) {
                PyErr_Clear();
                return RENDER_GIVE_UP;
            }
            rc = (written++ && buf_byte(b, ',') < 0) ? -1 : buf_quoted_utf8(b, (const unsigned char *)text, len);
        }
        if (!rc)
            rc = buf_byte(b, ']');
        break;
    }
    case OP_NULL:
        rc = BUF_LIT(b, "null");
        break;
    default: /* OP_CALL: a Python value function */
        return RENDER_GIVE_UP;
    }
    *ppos = pos;
    return rc;
}

static int
render_image(RowProgram *self, Image *img, const unsigned char *data, Py_ssize_t *ppos, Py_ssize_t end, Buf *b)
{
    Py_ssize_t pos = *ppos;
    if (!img->ordered || pos + img->null_bytes > end)
        return RENDER_GIVE_UP;
    const unsigned char *nulls = data + pos;
    pos += img->null_bytes;
    if (buf_byte(b, '[') < 0)
        return -1;
    Py_ssize_t slot = 0;
    for (Py_ssize_t j = 0; j < img->nops; j++) {
        Op *op = &img->ops[j];
        for (; slot < op->slot; slot++) /* columns absent from the image (MINIMAL, NOBLOB) */
            if ((slot && buf_byte(b, ',') < 0) || BUF_LIT(b, "{\"$missing\":true}") < 0)
                return -1;
        if (slot++ && buf_byte(b, ',') < 0)
            return -1;
        int rc = nulls[j >> 3] >> (j & 7) & 1 ? BUF_LIT(b, "null") : render_value(b, op, data, &pos, end);
        if (rc)
            return rc;
    }
    for (; slot < self->ncols; slot++)
        if ((slot && buf_byte(b, ',') < 0) || BUF_LIT(b, "{\"$missing\":true}") < 0)
            return -1;
    if (buf_byte(b, ']') < 0)
        return -1;
    *ppos = pos;
    return 0;
}

static PyObject *
RowProgram_render_json(RowProgram *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *buf;
    const unsigned char *data;
    Py_ssize_t pos, end;
    int span = row_span(args, nargs, "render_json(buf, pos, end)", &buf, &data, &pos, &end);
    if (span <= 0)
        return span < 0 ? NULL : Py_NewRef(Py_None);
    Buf b = {NULL, 0, 0, 0};
    int rc = 0;
    for (int first = 1; pos < end && !rc; first = 0) {
        if (!first && buf_byte(&b, ',') < 0) {
            rc = -1;
            break;
        }
        if (self->mode) {
            if (BUF_LIT(&b, "{\"before\":") < 0)
                rc = -1;
            else if (!(rc = render_image(self, &self->images[0], data, &pos, end, &b))) {
                if (BUF_LIT(&b, ",\"after\":") < 0)
                    rc = -1;
                else if (!(rc = render_image(self, &self->images[1], data, &pos, end, &b)))
                    rc = buf_byte(&b, '}');
            }
        }
        else
            rc = render_image(self, &self->images[0], data, &pos, end, &b);
    }
    PyObject *out = NULL;
    if (!rc)
        out = PyBytes_FromStringAndSize(b.data ? b.data : "", b.len);
    PyMem_Free(b.data);
    if (out != NULL)
        return out;
    /* the rows are decoded and written from their values (or the decoder raises the exact error) */
    if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_Exception))
            return NULL;
        PyErr_Clear();
    }
    Py_RETURN_NONE;
}

static PyMethodDef RowProgram_methods[] = {
    {"decode", (PyCFunction)(void (*)(void))RowProgram_decode, METH_FASTCALL,
     "decode(buf, pos, end) -> list of rows, or None when the pure-Python decoder must decode this event"},
    {"render_json", (PyCFunction)(void (*)(void))RowProgram_render_json, METH_FASTCALL,
     "render_json(buf, pos, end) -> the rows as the JSON Lines renderer writes them (UTF-8 bytes, rows separated "
     "by commas), or None when they must be decoded first"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject RowProgramType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "mybinlog.protocol._speedups.RowProgram",
    .tp_basicsize = sizeof(RowProgram),
    .tp_dealloc = (destructor)RowProgram_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "RowProgram(ncols, missing, before_ops, after_ops=None): a row image layout compiled for decode()",
    .tp_methods = RowProgram_methods,
    .tp_init = (initproc)RowProgram_init,
    .tp_new = PyType_GenericNew,
};

/* ---------------------------------------------------------------------------------------------------------- */
/* The decoder's fast loop (EventDecoder.decode_batch): CRC32, headers, and the bulk of every binlog (a TABLE_MAP
 * seen before, MariaDB's ANNOTATE_ROWS, plain rows events) built straight into the event objects' slots. Anything
 * else stops the loop and the pure-Python decoder takes that event. */

static uint32_t crc_table[8][256];

static void
crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
}

static uint32_t
crc32_table(uint32_t c, const unsigned char *p, Py_ssize_t n)
{
    while (n >= 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        c = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^ crc_table[5][(lo >> 16) & 0xFF] ^
            crc_table[4][lo >> 24] ^ crc_table[3][p[4]] ^ crc_table[2][p[5]] ^ crc_table[1][p[6]] ^
            crc_table[0][p[7]];
        p += 8;
        n -= 8;
    }
    while (n-- > 0)
        c = crc_table[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
    return c;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_CLMUL_CRC 1
static int use_clmul = 0;

/* CRC32 (zlib's polynomial, bit-reflected) of the 16-byte blocks of p by carry-less multiplication: four lanes
 * folded 64 bytes at a time, folded into one, reduced to 32 bits by Barrett reduction (the method of Intel's
 * white paper "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ"). n >= 64, a multiple of 16; c is the
 * running (inverted) CRC. */
__attribute__((target("pclmul,sse4.1"))) static uint32_t
crc32_clmul(uint32_t c, const unsigned char *p, Py_ssize_t n)
{
    const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596LL, 0x0154442bd4LL);
    const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009eLL, 0x01751997d0LL);
    const __m128i k5 = _mm_set_epi64x(0, 0x0163cd6124LL);
    const __m128i poly = _mm_set_epi64x(0x01f7011641LL, 0x01db710641LL);
    const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
    __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 0));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i x4 = _mm_loadu_si128((const __m128i *)(p + 48));
    x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)c));
    p += 64;
    n -= 64;
    while (n >= 64) {
        __m128i h1 = _mm_clmulepi64_si128(x1, k1k2, 0x11), h2 = _mm_clmulepi64_si128(x2, k1k2, 0x11);
        __m128i h3 = _mm_clmulepi64_si128(x3, k1k2, 0x11), h4 = _mm_clmulepi64_si128(x4, k1k2, 0x11);
        x1 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x1, k1k2, 0x00), h1),
                           _mm_loadu_si128((const __m128i *)(p + 0)));
        x2 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x2, k1k2, 0x00), h2),
                           _mm_loadu_si128((const __m128i *)(p + 16)));
        x3 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x3, k1k2, 0x00), h3),
                           _mm_loadu_si128((const __m128i *)(p + 32)));
        x4 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x4, k1k2, 0x00), h4),
                           _mm_loadu_si128((const __m128i *)(p + 48)));
        p += 64;
        n -= 64;
    }
    /* four lanes into one */
    x1 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x1, k3k4, 0x00), _mm_clmulepi64_si128(x1, k3k4, 0x11)), x2);
    x1 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x1, k3k4, 0x00), _mm_clmulepi64_si128(x1, k3k4, 0x11)), x3);
    x1 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x1, k3k4, 0x00), _mm_clmulepi64_si128(x1, k3k4, 0x11)), x4);
    while (n >= 16) {
        x1 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x1, k3k4, 0x00), _mm_clmulepi64_si128(x1, k3k4, 0x11)),
                           _mm_loadu_si128((const __m128i *)p));
        p += 16;
        n -= 16;
    }
    /* 128 -> 64 bits */
    x1 = _mm_xor_si128(_mm_clmulepi64_si128(x1, k3k4, 0x10), _mm_srli_si128(x1, 8));
    /* 64 -> 32 bits */
    x1 = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x1, mask32), k5, 0x00), _mm_srli_si128(x1, 4));
    /* Barrett reduction */
    __m128i x2b = x1;
    x1 = _mm_clmulepi64_si128(_mm_and_si128(x1, mask32), poly, 0x10);
    x1 = _mm_clmulepi64_si128(_mm_and_si128(x1, mask32), poly, 0x00);
    x1 = _mm_xor_si128(x1, x2b);
    return (uint32_t)_mm_extract_epi32(x1, 1);
}
#endif

static uint32_t
crc32_of(const unsigned char *p, Py_ssize_t n)
{
    uint32_t c = 0xFFFFFFFFu;
#ifdef HAVE_CLMUL_CRC
    if (use_clmul && n >= 64) {
        Py_ssize_t whole = n & ~(Py_ssize_t)15;
        c = crc32_clmul(c, p, whole);
        p += whole;
        n -= whole;
    }
#endif
    return crc32_table(c, p, n) ^ 0xFFFFFFFFu;
}

static PyObject *
py_crc32(PyObject *module, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    uint32_t c = crc32_of(view.buf, view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(c);
}

static PyObject *
py_utf8(PyObject *module, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *u = decode_utf8(view.buf, view.len);
    PyBuffer_Release(&view);
    return u;
}

#define MAX_FIELDS 24

typedef struct {
    PyTypeObject *cls;
    int nfields;
    Py_ssize_t offsets[MAX_FIELDS];
} Maker;

enum { MK_TABLE_MAP, MK_ANNOTATE, MK_ROWS_23, MK_ROWS_24, MK_ROWS_25, MK_ROWS_30, MK_ROWS_31, MK_ROWS_32, MK_COUNT };
static Maker makers[MK_COUNT];
static int makers_ready = 0;

/* an event with every slot set from `values` (references stolen; NULL values make the call fail).
 *
 * The event is left out of the garbage collector (as CPython does with tuples of atomic values, and msgspec with
 * structs): it holds integers, strings, bytes, None and the table's TableMap, none of which refers back to an event,
 * so it can never be part of a reference cycle, and reference counting frees it. Tracked, the events of a batch were
 * traversed by every young-generation collection their own allocation set off: 17% of the CPU of routing. A rows
 * event's rows, decoded later into its _rows slot, are a list of tuples, which never refers to the event either. */
static PyObject *
make_event(Maker *mk, PyObject **values)
{
    PyObject *obj = mk->cls->tp_alloc(mk->cls, 0);
    int ok = obj != NULL;
    for (int k = 0; k < mk->nfields; k++) {
        if (values[k] == NULL)
            ok = 0;
        if (ok)
            *(PyObject **)((char *)obj + mk->offsets[k]) = values[k];
        else
            Py_XDECREF(values[k]);
    }
    if (!ok) {
        Py_XDECREF(obj);
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        return NULL;
    }
    PyObject_GC_UnTrack(obj);
    return obj;
}

/* set_event_classes(((cls, (slot names...)), ...) in MK_* order): the slot offsets of each event class */
static PyObject *
set_event_classes(PyObject *module, PyObject *arg)
{
    PyObject *fast = PySequence_Fast(arg, "a sequence of (class, names)");
    if (fast == NULL)
        return NULL;
    if (PySequence_Fast_GET_SIZE(fast) != MK_COUNT) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_ValueError, "expected %d event classes", MK_COUNT);
        return NULL;
    }
    makers_ready = 0;
    for (int i = 0; i < MK_COUNT; i++) {
        PyObject *cls, *names;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i), "O!O!", &PyType_Type, &cls, &PyTuple_Type, &names))
            goto error;
        Py_ssize_t n = PyTuple_GET_SIZE(names);
        if (n > MAX_FIELDS) {
            PyErr_SetString(PyExc_ValueError, "too many fields");
            goto error;
        }
        Py_INCREF(cls);
        Py_XSETREF(makers[i].cls, (PyTypeObject *)cls);
        makers[i].nfields = (int)n;
        for (Py_ssize_t k = 0; k < n; k++) {
            PyObject *descr = PyObject_GetAttr(cls, PyTuple_GET_ITEM(names, k));
            if (descr == NULL)
                goto error;
            if (!Py_IS_TYPE(descr, &PyMemberDescr_Type) ||
                ((PyMemberDescrObject *)descr)->d_member->type != T_OBJECT_EX) {
                Py_DECREF(descr);
                PyErr_Format(PyExc_TypeError, "%R.%R is not a slot", cls, PyTuple_GET_ITEM(names, k));
                goto error;
            }
            makers[i].offsets[k] = ((PyMemberDescrObject *)descr)->d_member->offset;
            Py_DECREF(descr);
        }
    }
    Py_DECREF(fast);
    makers_ready = 1;
    Py_RETURN_NONE;
error:
    Py_DECREF(fast);
    return NULL;
}

static inline uint32_t
u32le(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* decode_events(raws, offsets, start, out, file, trailer, verify, network, tid6, hits, table_maps) -> index of
 * the first event it did not decode (len(raws) when all were): see EventDecoder.decode_batch */
/* decode_events keeps what consecutive events repeat, for the length of one call: the last TABLE_MAP body and
 * what it was found to be, the last rows event's table, and the ints of the last header fields and bitmaps (an int
 * is immutable, so events may share one). Every statement of a transaction repeats its TABLE_MAP and most header
 * fields: 10-15% of the decoding of an event that way. */
typedef struct {
    uint64_t value;
    PyObject *obj; /* owned; NULL: none yet */
} CachedInt;

typedef struct {
    const unsigned char *tm_body; /* the last TABLE_MAP's body (inside a bytes object of raws) */
    Py_ssize_t tm_len;
    PyObject *tm_hit;             /* borrowed from hits, which does not change during the call */
    uint64_t table_id;            /* the last rows event's table id, */
    PyObject *tid;                /* its int (owned), */
    PyObject *table;              /* its TableMap (borrowed from table_maps; NULL once table_maps changes), */
    Py_ssize_t count;             /* and the TableMap's column_count */
    CachedInt timestamp, server_id, size, end, bitmap[2];
    int next_bitmap;
} Recent;

/* a new reference to the int `value`, the cached one when the last value was the same */
static PyObject *
cached_int(CachedInt *c, uint64_t value)
{
    if (c->obj == NULL || c->value != value) {
        PyObject *obj = PyLong_FromUnsignedLongLong(value);
        if (obj == NULL)
            return NULL;
        Py_XSETREF(c->obj, obj);
        c->value = value;
    }
    return Py_NewRef(c->obj);
}

/* a column bitmap of nb bytes as an int (little-endian), from the two most recent ones when it is one of them */
static PyObject *
bitmap_int(Recent *r, const unsigned char *p, Py_ssize_t nb)
{
    if (nb > 8)
        return _PyLong_FromByteArray(p, nb, 1, 0);
    uint64_t value = 0;
    for (Py_ssize_t k = nb - 1; k >= 0; k--)
        value = value << 8 | p[k];
    for (int k = 0; k < 2; k++)
        if (r->bitmap[k].obj != NULL && r->bitmap[k].value == value)
            return Py_NewRef(r->bitmap[k].obj);
    CachedInt *slot = &r->bitmap[r->next_bitmap];
    r->next_bitmap ^= 1;
    return cached_int(slot, value);
}

static PyObject *
decode_events_loop(PyObject *const *args, Py_ssize_t nargs, Recent *r)
{
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError, "decode_events takes 11 arguments");
        return NULL;
    }
    PyObject *raws = args[0], *offsets = args[1], *out = args[3], *file = args[4];
    PyObject *hits = args[9], *table_maps = args[10];
    Py_ssize_t i = PyLong_AsSsize_t(args[2]);
    long trailer = PyLong_AsLong(args[5]);
    int verify = PyObject_IsTrue(args[6]), network = PyObject_IsTrue(args[7]), tid6 = PyObject_IsTrue(args[8]);
    if (PyErr_Occurred())
        return NULL;
    if (!PyList_Check(raws) || !PyList_Check(out) || !PyDict_Check(hits) || !PyDict_Check(table_maps) ||
        (offsets != Py_None && !PyList_Check(offsets))) {
        PyErr_SetString(PyExc_TypeError, "decode_events: bad argument types");
        return NULL;
    }
    if (!makers_ready)
        return PyLong_FromSsize_t(i);
    static PyObject *s_column_count = NULL;
    if (s_column_count == NULL && (s_column_count = PyUnicode_InternFromString("column_count")) == NULL)
        return NULL;
    for (; i < PyList_GET_SIZE(raws); i++) {
        PyObject *raw = PyList_GET_ITEM(raws, i);
        if (!PyBytes_CheckExact(raw))
            break;
        const unsigned char *data = (const unsigned char *)PyBytes_AS_STRING(raw);
        Py_ssize_t n = PyBytes_GET_SIZE(raw);
        if (n < 19)
            break;
        uint32_t timestamp = u32le(data), server_id = u32le(data + 5), size = u32le(data + 9),
                 log_pos = u32le(data + 13);
        int type_code = data[4], flags = data[17] | data[18] << 8;
        Py_ssize_t end = (Py_ssize_t)size - trailer;
        if ((Py_ssize_t)size != n || end < 19)
            break;
        if (type_code != 19 && type_code != 160 && !(tid6 && ((type_code >= 23 && type_code <= 25) ||
                                                                (type_code >= 30 && type_code <= 32))))
            break; /* not a fast type: the pure-Python loop decodes it (no CRC computed twice) */
        if (verify && crc32_of(data, n) != 0x2144DF1Cu)
            break;
        PyObject *offset = offsets == Py_None ? Py_None : PyList_GET_ITEM(offsets, i);
        Py_INCREF(offset);
        if (offset == Py_None && network && log_pos >= size && !(flags & 0x20)) {
            Py_DECREF(offset);
            offset = PyLong_FromUnsignedLong(log_pos - size);
            if (offset == NULL)
                return NULL;
        }
        PyObject *values[MAX_FIELDS];
        Maker *mk;
        int nv = 9;
        if (type_code == 19) {
            PyObject *hit;
            if (r->tm_hit != NULL && r->tm_len == end - 19 && memcmp(r->tm_body, data + 19, end - 19) == 0)
                hit = r->tm_hit; /* the same table map as the last one (every statement repeats it) */
            else {
                PyObject *key = PyBytes_FromStringAndSize((const char *)data + 19, end - 19);
                if (key == NULL) {
                    Py_DECREF(offset);
                    return NULL;
                }
                hit = PyDict_GetItemWithError(hits, key);
                Py_DECREF(key);
                if (hit == NULL || !PyTuple_Check(hit) || PyTuple_GET_SIZE(hit) != 2) {
                    Py_DECREF(offset);
                    if (PyErr_Occurred())
                        return NULL;
                    break;
                }
                if (PyDict_SetItem(table_maps, PyTuple_GET_ITEM(hit, 0), PyTuple_GET_ITEM(hit, 1)) < 0) {
                    Py_DECREF(offset);
                    return NULL;
                }
                r->tm_body = data + 19; /* alive: raws holds it for the whole call */
                r->tm_len = end - 19;
                r->tm_hit = hit; /* borrowed: `hits` does not change during the call */
                r->table = NULL; /* table_maps changed: the rows events' cache is stale */
            }
            mk = &makers[MK_TABLE_MAP];
            values[nv++] = Py_NewRef(PyTuple_GET_ITEM(hit, 0));
            values[nv++] = Py_NewRef(PyTuple_GET_ITEM(hit, 1));
        }
        else if (type_code == 160) {
            mk = &makers[MK_ANNOTATE]; /* the text's bytes: AnnotateRowsEvent.query decodes them when read */
            values[nv++] = PyBytes_FromStringAndSize((const char *)data + 19, end - 19);
        }
        else {
            if (n < 29) {
                Py_DECREF(offset);
                break;
            }
            uint64_t table_id = u32le(data + 19) | (uint64_t)(data[23] | data[24] << 8) << 32;
            int rows_flags = data[25] | data[26] << 8;
            Py_ssize_t pos = 27;
            if (type_code >= 30)
                pos = (data[27] == 2 && !data[28]) ? 29 : 0;
            if (r->table == NULL || r->table_id != table_id) { /* else the last rows event's table */
                PyObject *tid = PyLong_FromUnsignedLongLong(table_id);
                if (tid == NULL) {
                    Py_DECREF(offset);
                    return NULL;
                }
                PyObject *table = PyDict_GetItemWithError(table_maps, tid);
                if (table == NULL) {
                    Py_DECREF(tid);
                    Py_DECREF(offset);
                    if (PyErr_Occurred())
                        return NULL;
                    break;
                }
                PyObject *cc = PyObject_GetAttr(table, s_column_count);
                if (cc == NULL) {
                    Py_DECREF(tid);
                    Py_DECREF(offset);
                    return NULL;
                }
                Py_ssize_t count = PyLong_AsSsize_t(cc);
                Py_DECREF(cc);
                if (count == -1 && PyErr_Occurred()) {
                    PyErr_Clear();
                    count = -2;
                }
                Py_XSETREF(r->tid, tid);
                r->table_id = table_id;
                r->table = table; /* borrowed from table_maps, which holds it until it changes (see above) */
                r->count = count;
            }
            PyObject *table = r->table, *tid = Py_NewRef(r->tid);
            Py_ssize_t count = r->count;
            if (!pos || pos + 2 >= end) {
                Py_DECREF(tid);
                Py_DECREF(offset);
                break;
            }
            Py_ssize_t ncols = data[pos];
            int update = type_code == 24 || type_code == 31;
            Py_ssize_t nb = (ncols + 7) >> 3;
            pos += 1;
            if (ncols != count || ncols >= 0xFB || pos + nb * (update ? 2 : 1) > end) {
                Py_DECREF(tid);
                Py_DECREF(offset);
                break;
            }
            PyObject *present = bitmap_int(r, data + pos, nb);
            pos += nb;
            PyObject *present_after;
            if (update) {
                present_after = bitmap_int(r, data + pos, nb);
                pos += nb;
            }
            else
                present_after = Py_XNewRef(present);
            mk = &makers[MK_ROWS_23 + (type_code >= 30 ? 3 : 0) + (type_code - (type_code >= 30 ? 30 : 23))];
            values[nv++] = tid;
            values[nv++] = PyLong_FromLong(rows_flags);
            values[nv++] = Py_NewRef(table);
            values[nv++] = Py_NewRef(raw);
            values[nv++] = PyLong_FromSsize_t(pos);
            values[nv++] = cached_int(&r->end, (uint64_t)end);
            values[nv++] = present;
            values[nv++] = present_after;
            values[nv++] = PyBytes_FromStringAndSize("", 0);
            values[nv++] = Py_NewRef(Py_None);
        }
        values[0] = cached_int(&r->timestamp, timestamp);
        values[1] = PyLong_FromLong(type_code);
        values[2] = cached_int(&r->server_id, server_id);
        values[3] = cached_int(&r->size, size);
        values[4] = PyLong_FromUnsignedLong(log_pos);
        values[5] = PyLong_FromLong(flags);
        values[6] = offset;
        values[7] = Py_NewRef(file);
        values[8] = Py_NewRef(Py_False);
        if (nv != mk->nfields) {
            for (int k = 0; k < nv; k++)
                Py_XDECREF(values[k]);
            PyErr_SetString(PyExc_RuntimeError, "event class fields do not match the compiled core");
            return NULL;
        }
        PyObject *event = make_event(mk, values);
        if (event == NULL)
            return NULL;
        int rc = PyList_Append(out, event);
        Py_DECREF(event);
        if (rc < 0)
            return NULL;
    }
    return PyLong_FromSsize_t(i);
}

static PyObject *
decode_events(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Recent r;
    memset(&r, 0, sizeof(r));
    PyObject *result = decode_events_loop(args, nargs, &r);
    Py_XDECREF(r.tid);
    CachedInt *owned[] = {&r.timestamp, &r.server_id, &r.size, &r.end, &r.bitmap[0], &r.bitmap[1]};
    for (size_t k = 0; k < sizeof(owned) / sizeof(owned[0]); k++)
        Py_XDECREF(owned[k]->obj);
    return result;
}

/* cut_events(data, pos, limit) -> (raws, offsets, new pos): the events of a binlog file's bytes (any buffer: bytes,
 * mmap) from pos, each sliced once, up to `limit` of them; it stops early at an event whose header is incomplete or
 * whose size is impossible or runs past the end, which the pure-Python reader then describes (the hot loop of
 * read_binlog_file) */
static PyObject *
cut_events(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "cut_events(data, pos, limit)");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]), limit = PyLong_AsSsize_t(args[2]);
    if (PyErr_Occurred())
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *b = (const unsigned char *)view.buf;
    Py_ssize_t n = view.len;
    PyObject *raws = PyList_New(0), *offsets = PyList_New(0), *result = NULL;
    if (raws == NULL || offsets == NULL)
        goto done;
    if (pos < 0 || limit < 0) {
        PyErr_SetString(PyExc_ValueError, "cut_events: pos and limit must be >= 0");
        goto done;
    }
    while (pos < n && PyList_GET_SIZE(raws) < limit && n - pos >= 19) {
        Py_ssize_t size = (Py_ssize_t)u32le(b + pos + 9);
        if (size < 19 || size > n - pos)
            break;
        PyObject *raw = PyBytes_FromStringAndSize((const char *)b + pos, size);
        PyObject *off = raw ? PyLong_FromSsize_t(pos) : NULL;
        int rc = off == NULL ? -1 : PyList_Append(raws, raw) < 0 ? -1 : PyList_Append(offsets, off);
        Py_XDECREF(raw);
        Py_XDECREF(off);
        if (rc < 0)
            goto done;
        pos += size;
    }
    result = Py_BuildValue("OOn", raws, offsets, pos);
done:
    Py_XDECREF(raws);
    Py_XDECREF(offsets);
    PyBuffer_Release(&view);
    return result;
}

/* frame_events(buf, pos, end, max_bytes, seq) -> (events, new pos, new seq, stop payload or None), or None when
 * the pure-Python framer must take the next packet (a sequence gap, a 16 MiB packet, a partial packet): the hot
 * loop of PacketFramer.next_batch, cutting each event straight out of the receive buffer (one copy). */
static PyObject *
frame_events(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || !PyByteArray_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "frame_events(bytearray, pos, end, max_bytes, seq)");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]), end = PyLong_AsSsize_t(args[2]);
    Py_ssize_t max_bytes = PyLong_AsSsize_t(args[3]);
    long seq = PyLong_AsLong(args[4]);
    if (PyErr_Occurred())
        return NULL;
    if (pos < 0 || end > PyByteArray_GET_SIZE(args[0]) || pos > end)
        Py_RETURN_NONE;
    const unsigned char *b = (const unsigned char *)PyByteArray_AS_STRING(args[0]);
    if (end - pos < 4)
        Py_RETURN_NONE;
    uint32_t header = u32le(b + pos);
    Py_ssize_t size = header & 0xFFFFFF;
    if (size >= 0xFFFFFF || end - pos < size + 4)
        Py_RETURN_NONE;
    Py_ssize_t limit = pos + (max_bytes > size + 4 ? max_bytes : size + 4);
    if (limit > end)
        limit = end;
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    PyObject *stop = Py_None;
    Py_INCREF(stop);
    Py_ssize_t p = pos;
    while (p + 4 <= limit) {
        header = u32le(b + p);
        size = header & 0xFFFFFF;
        if (size >= 0xFFFFFF || p + 4 + size > limit)
            break;
        if ((long)(header >> 24) != seq) {
            if (PyList_GET_SIZE(out))
                break;
            Py_DECREF(out);
            Py_DECREF(stop);
            Py_RETURN_NONE;
        }
        const unsigned char *payload = b + p + 4;
        seq = (seq + 1) & 0xFF;
        p += 4 + size;
        if (size && payload[0] == 0) {
            PyObject *event = PyBytes_FromStringAndSize((const char *)payload + 1, size - 1);
            if (event == NULL || PyList_Append(out, event) < 0) {
                Py_XDECREF(event);
                Py_DECREF(out);
                Py_DECREF(stop);
                return NULL;
            }
            Py_DECREF(event);
        }
        else {
            Py_DECREF(stop);
            stop = PyBytes_FromStringAndSize((const char *)payload, size);
            if (stop == NULL) {
                Py_DECREF(out);
                return NULL;
            }
            break;
        }
    }
    if (p == pos) {
        Py_DECREF(out);
        Py_DECREF(stop);
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(NnlN)", out, p, seq, stop);
}

/* Ready(value): an awaitable that is already done, returned by BinlogStream.__anext__ for an event that is already
 * decoded, so that `async for` costs no coroutine per event. */
typedef struct {
    PyObject_HEAD
    PyObject *value;
} Ready;

static void
Ready_dealloc(Ready *self)
{
    Py_XDECREF(self->value);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
Ready_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *value;
    if (!PyArg_ParseTuple(args, "O:Ready", &value))
        return NULL;
    Ready *self = (Ready *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    Py_INCREF(value);
    self->value = value;
    return (PyObject *)self;
}

static PyObject *
Ready_await(PyObject *self)
{
    Py_INCREF(self);
    return self;
}

static PyObject *
Ready_next(Ready *self)
{
    PyObject *value = self->value;
    if (value == NULL)
        return NULL; /* awaited twice: plain StopIteration */
    self->value = NULL;
    PyObject *exc = PyObject_CallOneArg(PyExc_StopIteration, value);
    Py_DECREF(value);
    if (exc == NULL)
        return NULL;
    PyErr_SetObject(PyExc_StopIteration, exc);
    Py_DECREF(exc);
    return NULL;
}

static PySendResult
Ready_send(Ready *self, PyObject *arg, PyObject **result)
{
    PyObject *value = self->value;
    self->value = NULL;
    *result = value != NULL ? value : Py_NewRef(Py_None);
    return PYGEN_RETURN;
}

static PyObject *
Ready_send_method(Ready *self, PyObject *arg)
{
    return Ready_next(self);
}

static PyObject *
Ready_throw(Ready *self, PyObject *args)
{
    PyObject *type, *value = NULL, *tb = NULL;
    if (!PyArg_ParseTuple(args, "O|OO:throw", &type, &value, &tb))
        return NULL;
    Py_CLEAR(self->value);
    if (PyExceptionInstance_Check(type))
        PyErr_SetObject((PyObject *)Py_TYPE(type), type);
    else
        PyErr_SetObject(type, value);
    return NULL;
}

static PyObject *
Ready_close(Ready *self, PyObject *unused)
{
    Py_CLEAR(self->value);
    Py_RETURN_NONE;
}

static PyMethodDef Ready_methods[] = {
    {"send", (PyCFunction)Ready_send_method, METH_O, NULL},
    {"throw", (PyCFunction)Ready_throw, METH_VARARGS, NULL},
    {"close", (PyCFunction)Ready_close, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyAsyncMethods Ready_async = {
    .am_await = Ready_await,
    .am_send = (sendfunc)Ready_send,
};

static PyTypeObject ReadyType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "mybinlog.protocol._speedups.Ready",
    .tp_basicsize = sizeof(Ready),
    .tp_dealloc = (destructor)Ready_dealloc,
    .tp_as_async = &Ready_async,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)Ready_next,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Ready(value): an awaitable whose result is value, without suspending",
    .tp_methods = Ready_methods,
    .tp_new = Ready_new,
};

/* StreamIter(stream, pending, marks, slow): what BinlogStream.__aiter__ returns with the compiled core. Its __anext__
 * is BinlogStream.__anext__ in C: the next decoded event (popped from the `pending` deque, the stream's `_position`
 * moved when it is the event of the first of `marks`) as a Ready, without a Python frame; when none is decoded, the
 * coroutine slow() (BinlogStream._anext, which reads, waits and raises). An `async for` step cost 91 ns with a
 * Python __anext__ returning a Ready. */
typedef struct {
    PyObject_HEAD
    PyObject *stream, *popleft, *marks, *marks_popleft, *slow, *pending;
} StreamIter;

static int
StreamIter_traverse(StreamIter *self, visitproc visit, void *arg)
{
    Py_VISIT(self->stream);
    Py_VISIT(self->pending);
    Py_VISIT(self->popleft);
    Py_VISIT(self->marks);
    Py_VISIT(self->marks_popleft);
    Py_VISIT(self->slow);
    return 0;
}

static int
StreamIter_clear(StreamIter *self)
{
    Py_CLEAR(self->stream);
    Py_CLEAR(self->pending);
    Py_CLEAR(self->popleft);
    Py_CLEAR(self->marks);
    Py_CLEAR(self->marks_popleft);
    Py_CLEAR(self->slow);
    return 0;
}

static void
StreamIter_dealloc(StreamIter *self)
{
    PyObject_GC_UnTrack(self);
    StreamIter_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
StreamIter_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *stream, *pending, *marks, *slow;
    if (!PyArg_ParseTuple(args, "OOOO:StreamIter", &stream, &pending, &marks, &slow))
        return NULL;
    PyObject *popleft = PyObject_GetAttrString(pending, "popleft");
    if (popleft == NULL)
        return NULL;
    PyObject *marks_popleft = PyObject_GetAttrString(marks, "popleft");
    if (marks_popleft == NULL) {
        Py_DECREF(popleft);
        return NULL;
    }
    StreamIter *self = (StreamIter *)type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_DECREF(popleft);
        Py_DECREF(marks_popleft);
        return NULL;
    }
    self->stream = Py_NewRef(stream);
    self->pending = Py_NewRef(pending);
    self->popleft = popleft;
    self->marks = Py_NewRef(marks);
    self->marks_popleft = marks_popleft;
    self->slow = Py_NewRef(slow);
    return (PyObject *)self;
}

static PyObject *
StreamIter_aiter(PyObject *self)
{
    return Py_NewRef(self);
}

static PyObject *
StreamIter_anext(StreamIter *self)
{
    static PyObject *s_position = NULL;
    if (s_position == NULL && (s_position = PyUnicode_InternFromString("_position")) == NULL)
        return NULL;
    Py_ssize_t waiting = PyObject_Size(self->pending);
    if (waiting < 0)
        return NULL;
    if (waiting == 0)
        return PyObject_CallNoArgs(self->slow);
    PyObject *event = PyObject_CallNoArgs(self->popleft);
    if (event == NULL)
        return NULL;
    Py_ssize_t nmarks = PyObject_Size(self->marks);
    if (nmarks < 0)
        goto fail;
    if (nmarks > 0) {
        PyObject *first = PySequence_GetItem(self->marks, 0);
        if (first == NULL)
            goto fail;
        int is_mark = PyTuple_Check(first) && PyTuple_GET_SIZE(first) == 2 && PyTuple_GET_ITEM(first, 0) == event;
        Py_DECREF(first);
        if (is_mark) {
            PyObject *mark = PyObject_CallNoArgs(self->marks_popleft);
            if (mark == NULL)
                goto fail;
            int rc = PyObject_SetAttr(self->stream, s_position, PyTuple_GET_ITEM(mark, 1));
            Py_DECREF(mark);
            if (rc < 0)
                goto fail;
        }
    }
    Ready *ready = (Ready *)ReadyType.tp_alloc(&ReadyType, 0);
    if (ready == NULL)
        goto fail;
    ready->value = event; /* the reference popped */
    return (PyObject *)ready;
fail:
    Py_DECREF(event);
    return NULL;
}

static PyAsyncMethods StreamIter_async = {
    .am_aiter = StreamIter_aiter,
    .am_anext = (unaryfunc)StreamIter_anext,
};

static PyMethodDef StreamIter_methods[] = {
    {"__anext__", (PyCFunction)StreamIter_anext, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject StreamIterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "mybinlog.protocol._speedups.StreamIter",
    .tp_basicsize = sizeof(StreamIter),
    .tp_dealloc = (destructor)StreamIter_dealloc,
    .tp_as_async = &StreamIter_async,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "StreamIter(stream, pending, marks, slow): BinlogStream's async iterator in C",
    .tp_traverse = (traverseproc)StreamIter_traverse,
    .tp_clear = (inquiry)StreamIter_clear,
    .tp_methods = StreamIter_methods,
    .tp_new = StreamIter_new,
};

/* active_indexes(events, passive) -> the indexes of the events whose type_code is not in `passive` (a set of ints
 * below 256): BinlogStream._track's scan of a batch, which queues the runs between them as they are (in Python, three
 * chained maps and a compress cost 75 ns an event) */
static PyObject *
active_indexes(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyList_Check(args[0]) || !PyAnySet_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "active_indexes(events: list, passive: frozenset)");
        return NULL;
    }
    static PyObject *s_type_code = NULL;
    if (s_type_code == NULL && (s_type_code = PyUnicode_InternFromString("type_code")) == NULL)
        return NULL;
    unsigned char passive[256] = {0};
    PyObject *it = PyObject_GetIter(args[1]), *key;
    if (it == NULL)
        return NULL;
    while ((key = PyIter_Next(it)) != NULL) {
        long code = PyLong_Check(key) ? PyLong_AsLong(key) : -1;
        Py_DECREF(key);
        if (code < 0 || code > 255) {
            Py_DECREF(it);
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError, "active_indexes: passive type codes are ints below 256");
            return NULL;
        }
        passive[code] = 1;
    }
    Py_DECREF(it);
    if (PyErr_Occurred())
        return NULL;
    PyObject *events = args[0], *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(events); i++) {
        PyObject *code = PyObject_GetAttr(PyList_GET_ITEM(events, i), s_type_code);
        if (code == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        long c = PyLong_Check(code) ? PyLong_AsLong(code) : -1;
        Py_DECREF(code);
        if (c == -1 && PyErr_Occurred()) {
            Py_DECREF(out);
            return NULL;
        }
        if (c >= 0 && c <= 255 && passive[c])
            continue;
        PyObject *index = PyLong_FromSsize_t(i);
        if (index == NULL || PyList_Append(out, index) < 0) {
            Py_XDECREF(index);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(index);
    }
    return out;
}

/* ---------------------------------------------------------------------------------------------------------- */
/* TsvRows(ops, python_row): the replicator's and the snapshot's rows encoder (a row of Python values -> one line of
 * TabSeparated fields, mybinlog/replication/types/_encoders.py) in C. `ops` has one (kind, position, nullable,
 * encoder, arg) per ClickHouse column; the usual value of each kind is written here exactly as the generated Python
 * encoder writes it, anything else goes to the column's Python `encoder`, and a row this code cannot write (a value
 * the encoder refuses, a lone surrogate, a short row) is handed whole to `python_row`, the generated Python row
 * encoder, which writes it or raises its exact error. */
enum { TSV_ZERO = 1, TSV_INT, TSV_UINT, TSV_FLOAT64, TSV_TEXT, TSV_DATETIME, TSV_TIMESTAMP, TSV_DATE, TSV_DECIMAL,
       TSV_CALL };

typedef struct {
    int kind;
    Py_ssize_t pos;
    int nullable;
    PyObject *encoder; /* the column's Python encoder (value -> field) */
    PyObject *text;    /* TSV_ZERO: the field */
    int fsp, scale;
    int has_range;
    int lo[7], hi[7];  /* DATETIME/TIMESTAMP: y, mo, d, h, mi, s, us; DATE: y, mo, d */
} TsvOp;

typedef struct {
    PyObject_HEAD
    Py_ssize_t nops;
    TsvOp *ops;
    PyObject **values; /* one row's values, read before any is written */
    PyObject *python_row;
} TsvRows;

static void
TsvRows_dealloc(TsvRows *self)
{
    for (Py_ssize_t k = 0; k < self->nops; k++) {
        Py_XDECREF(self->ops[k].encoder);
        Py_XDECREF(self->ops[k].text);
    }
    PyMem_Free(self->ops);
    PyMem_Free(self->values);
    Py_XDECREF(self->python_row);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
tsv_fields(PyObject *t, int *out, int n)
{
    if (t == Py_None)
        return 0;
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != n) {
        PyErr_SetString(PyExc_TypeError, "TsvRows: a range bound is a tuple of ints");
        return -1;
    }
    for (int k = 0; k < n; k++) {
        out[k] = (int)PyLong_AsLong(PyTuple_GET_ITEM(t, k));
        if (out[k] == -1 && PyErr_Occurred())
            return -1;
    }
    return 1;
}

static PyObject *
TsvRows_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *ops, *python_row;
    if (!PyArg_ParseTuple(args, "O!O:TsvRows", &PyTuple_Type, &ops, &python_row))
        return NULL;
    TsvRows *self = (TsvRows *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->python_row = Py_NewRef(python_row);
    Py_ssize_t n = PyTuple_GET_SIZE(ops);
    self->ops = PyMem_Calloc(n ? n : 1, sizeof(TsvOp));
    self->values = PyMem_Calloc(n ? n : 1, sizeof(PyObject *));
    if (self->ops == NULL || self->values == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    self->nops = n;
    for (Py_ssize_t k = 0; k < n; k++) {
        TsvOp *op = &self->ops[k];
        PyObject *kind, *pos, *nullable, *encoder, *arg, *item = PyTuple_GET_ITEM(ops, k);
        if (!PyTuple_Check(item)) {
            PyErr_SetString(PyExc_TypeError, "TsvRows: an op is a tuple (kind, position, nullable, encoder, arg)");
            goto fail;
        }
        if (!PyArg_ParseTuple(item, "OOOOO:TsvRows op", &kind, &pos, &nullable, &encoder, &arg))
            goto fail;
        op->kind = (int)PyLong_AsLong(kind);
        op->pos = PyLong_AsSsize_t(pos);
        op->nullable = PyObject_IsTrue(nullable);
        if (PyErr_Occurred())
            goto fail;
        op->encoder = Py_NewRef(encoder);
        if (op->kind == TSV_ZERO) {
            if (!PyUnicode_Check(arg)) {
                PyErr_SetString(PyExc_TypeError, "TsvRows: a zero field is a str");
                goto fail;
            }
            op->text = Py_NewRef(arg);
        }
        else if (op->kind == TSV_DATETIME || op->kind == TSV_TIMESTAMP || op->kind == TSV_DATE) {
            PyObject *fsp, *lo, *hi;
            if (!PyTuple_Check(arg)) {
                PyErr_SetString(PyExc_TypeError, "TsvRows: a temporal op's arg is (fsp, low, high)");
                goto fail;
            }
            if (!PyArg_ParseTuple(arg, "OOO:TsvRows range", &fsp, &lo, &hi))
                goto fail;
            op->fsp = (int)PyLong_AsLong(fsp);
            int nf = op->kind == TSV_DATE ? 3 : 7;
            int a = tsv_fields(lo, op->lo, nf), b = a < 0 ? -1 : tsv_fields(hi, op->hi, nf);
            if (a < 0 || b < 0 || PyErr_Occurred())
                goto fail;
            op->has_range = a && b;
            if (op->fsp < 0 || op->fsp > 6) {
                PyErr_SetString(PyExc_ValueError, "TsvRows: fsp is 0..6");
                goto fail;
            }
        }
        else if (op->kind == TSV_DECIMAL) {
            op->scale = (int)PyLong_AsLong(arg);
            if (op->scale == -1 && PyErr_Occurred())
                goto fail;
            if (op->scale < 0 || op->scale > 1000) {
                PyErr_SetString(PyExc_ValueError, "TsvRows: a DECIMAL scale is 0..1000");
                goto fail;
            }
        }
        else if (op->kind < TSV_ZERO || op->kind > TSV_CALL) {
            PyErr_SetString(PyExc_ValueError, "TsvRows: unknown op kind");
            goto fail;
        }
    }
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

/* a str's text in UTF-8; -2 (no error set) for a lone surrogate, which UTF-8 cannot carry */
static int
tsv_put_str(Buf *b, PyObject *u)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(u);
    if (PyUnicode_IS_ASCII(u))
        return buf_put(b, (const char *)PyUnicode_DATA(u), n);
    if (BUF_RESERVE(b, 4 * n) < 0)
        return -1;
    int kind = PyUnicode_KIND(u);
    const void *data = PyUnicode_DATA(u);
    char *p = b->data + b->len;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c >= 0xD800 && c < 0xE000)
            return -2;
        p = put_cp(p, c);
    }
    b->len = p - b->data;
    return 0;
}

/* whether the text needs no escaping: none of the characters _escape replaces (backslash, tab, newline, CR, NUL,
 * backspace, form feed; all ASCII). The generated Python tests str.isprintable() first and sends the rest to the
 * encoder, whose _escape leaves every other character as it is: the same text either way */
static inline int
tsv_special(Py_UCS4 c)
{
    return c < 0x80 && (c == '\\' || c == '\t' || c == '\n' || c == '\r' || c == 0 || c == '\b' || c == '\f');
}

static int
tsv_plain(PyObject *u)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(u);
    int kind = PyUnicode_KIND(u);
    const void *data = PyUnicode_DATA(u);
    if (kind == PyUnicode_1BYTE_KIND) {
        const unsigned char *s = (const unsigned char *)data;
        for (Py_ssize_t i = 0; i < n; i++)
            if (tsv_special(s[i]))
                return 0;
        return 1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (tsv_special(PyUnicode_READ(kind, data, i)))
            return 0;
    return 1;
}

/* fields (y, mo, d, h, mi, s, us)[:n] compared: <0, 0, >0 */
static int
tsv_cmp(const int *a, const int *b, int n)
{
    for (int k = 0; k < n; k++)
        if (a[k] != b[k])
            return a[k] < b[k] ? -1 : 1;
    return 0;
}

/* a Decimal with the column's exponent (-scale), written in plain notation with `scale` decimals, as the Python
 * encoder writes it ("0.00" for zero of either sign); 0 when it is not such a Decimal (the encoder then) */
static int
tsv_decimal(Buf *b, PyObject *v, int scale)
{
    if (!dec_direct || Py_TYPE(v) != (PyTypeObject *)Decimal)
        return 0;
    const MpdLayout *m = (const MpdLayout *)((const char *)v + dec_mpd_offset);
    if ((m->flags & 14) || m->exp != -(int64_t)scale || m->len < 1 || m->len > 8 || m->digits < 1 ||
        m->digits > 19 * m->len)
        return 0; /* special (NaN, infinity), another exponent, or a layout this code does not read */
    char digits[8 * 19 + 1];
    int nd = 0;
    for (int64_t w = m->len - 1; w >= 0; w--) {
        uint64_t x = m->data[w];
        char tmp[20];
        int t = 0;
        do {
            tmp[t++] = (char)('0' + x % 10);
            x /= 10;
        } while (x);
        if (w != m->len - 1) /* inner words: 19 digits, zero-padded */
            while (t < 19)
                tmp[t++] = '0';
        while (t)
            digits[nd++] = tmp[--t];
    }
    int zero = nd == 1 && digits[0] == '0';
    if (BUF_RESERVE(b, nd + scale + 3) < 0)
        return -1;
    b->len = put_plain_decimal(b->data + b->len, digits, nd, scale, (m->flags & 1) && !zero) - b->data;
    return 1;
}

/* one value's field; 0 written, 1 for "let the encoder do it", -1 error, -2 "hand the row to python_row" */
static int
tsv_value(Buf *b, const TsvOp *op, PyObject *v)
{
    if (v == Py_None)
        return op->nullable && op->kind >= TSV_INT && op->kind <= TSV_TEXT ? BUF_LIT(b, "\\N") : 1;
    switch (op->kind) {
    case TSV_INT:
    case TSV_UINT: {
        if (!PyLong_CheckExact(v))
            return 1;
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (x == -1 && PyErr_Occurred())
            return -1;
        if (overflow < 0 || (!overflow && op->kind == TSV_UINT && x < 0))
            return 1; /* below -2**63, or a negative unsigned value (read as signed): the encoder */
        if (overflow > 0) {
            unsigned long long u = PyLong_AsUnsignedLongLong(v);
            if (u == (unsigned long long)-1 && PyErr_Occurred()) {
                PyErr_Clear();
                return 1; /* past 64 bits: str() through the encoder */
            }
            return buf_ull(b, u);
        }
        return buf_ll(b, x);
    }
    case TSV_FLOAT64: {
        if (!PyFloat_CheckExact(v))
            return 1;
        double x = PyFloat_AS_DOUBLE(v);
        if (!isfinite(x))
            return 1;
        return buf_double(b, x);
    }
    case TSV_TEXT:
        if (!PyUnicode_CheckExact(v) || !tsv_plain(v))
            return 1;
        return tsv_put_str(b, v);
    case TSV_DATETIME:
    case TSV_TIMESTAMP: {
        if (Py_TYPE(v) != PyDateTimeAPI->DateTimeType)
            return 1;
        PyObject *tz = PyDateTime_DATE_GET_TZINFO(v); /* borrowed; None when naive */
        if (tz != Py_None && !(op->kind == TSV_TIMESTAMP && tz == UTC))
            return 1; /* a DATETIME's zone is dropped, another zone converted: the encoder */
        int f[7] = {PyDateTime_GET_YEAR(v), PyDateTime_GET_MONTH(v), PyDateTime_GET_DAY(v),
                    PyDateTime_DATE_GET_HOUR(v), PyDateTime_DATE_GET_MINUTE(v), PyDateTime_DATE_GET_SECOND(v),
                    PyDateTime_DATE_GET_MICROSECOND(v)};
        if (op->has_range && (tsv_cmp(f, op->lo, 7) < 0 || tsv_cmp(f, op->hi, 7) > 0))
            return 1;
        if (buf_date(b, f[0], f[1], f[2]) < 0 || buf_byte(b, ' ') < 0 || buf_pad(b, f[3], 2) < 0 ||
            buf_byte(b, ':') < 0 || buf_pad(b, f[4], 2) < 0 || buf_byte(b, ':') < 0 || buf_pad(b, f[5], 2) < 0)
            return -1;
        if (op->fsp) {
            char frac[7];
            int us = f[6];
            for (int k = 5; k >= 0; k--) {
                frac[k] = (char)('0' + us % 10);
                us /= 10;
            }
            if (buf_byte(b, '.') < 0 || buf_put(b, frac, op->fsp) < 0)
                return -1;
        }
        return 0;
    }
    case TSV_DATE: {
        if (Py_TYPE(v) != PyDateTimeAPI->DateType)
            return 1;
        int f[3] = {PyDateTime_GET_YEAR(v), PyDateTime_GET_MONTH(v), PyDateTime_GET_DAY(v)};
        if (op->has_range && (tsv_cmp(f, op->lo, 3) < 0 || tsv_cmp(f, op->hi, 3) > 0))
            return 1;
        return buf_date(b, f[0], f[1], f[2]);
    }
    case TSV_DECIMAL: {
        int rc = tsv_decimal(b, v, op->scale);
        return rc < 0 ? -1 : rc ? 0 : 1;
    }
    default:
        return 1;
    }
}

/* one row's line: 0, -1 error, -2 "hand the row to python_row". Every value is read from the row first, as the
 * generated Python reads them, so that nothing an encoder does to the row changes what is written */
static int
tsv_row(TsvRows *self, Buf *b, PyObject *row)
{
    PyObject **vals = self->values;
    Py_ssize_t k, got = 0;
    int rc = 0, tuple = PyTuple_CheckExact(row), fast = tuple || PyList_CheckExact(row);
    for (k = 0; k < self->nops; k++, got++) {
        const TsvOp *op = &self->ops[k];
        PyObject *v = NULL;
        if (op->kind == TSV_ZERO)
            v = Py_NewRef(Py_None);
        else if (fast) {
            if (op->pos >= 0 && op->pos < Py_SIZE(row))
                v = Py_NewRef(tuple ? PyTuple_GET_ITEM(row, op->pos) : PyList_GET_ITEM(row, op->pos));
        }
        else if ((v = PySequence_GetItem(row, op->pos)) == NULL)
            PyErr_Clear();
        if (v == NULL) {
            rc = -2; /* python_row raises the IndexError */
            goto done;
        }
        vals[k] = v;
    }
    for (k = 0; k < self->nops; k++) {
        const TsvOp *op = &self->ops[k];
        if (k && buf_byte(b, '\t') < 0) {
            rc = -1;
            goto done;
        }
        if (op->kind == TSV_ZERO) {
            if ((rc = tsv_put_str(b, op->text)) < 0)
                goto done;
            continue;
        }
        PyObject *v = vals[k];
        rc = tsv_value(b, op, v);
        if (rc == 1) { /* the column's own encoder */
            PyObject *field = PyObject_CallOneArg(op->encoder, v);
            if (field == NULL) {
                PyErr_Clear();
                rc = -2; /* python_row raises the error, named */
            }
            else {
                rc = PyUnicode_Check(field) ? tsv_put_str(b, field) : -2;
                Py_DECREF(field);
            }
        }
        if (rc < 0)
            goto done;
    }
done:
    for (k = 0; k < got; k++)
        Py_DECREF(vals[k]);
    return rc;
}

static PyObject *
TsvRows_encode(TsvRows *self, PyObject *rows)
{
    /* a tuple of the rows (the same one for a tuple): it holds every row while its values are encoded, whatever an
     * encoder called for a value does to the caller's list */
    PyObject *seq = PySequence_Tuple(rows);
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(seq);
    PyObject *out = PyList_New(n);
    Buf b = {NULL, 0, 0, 0};
    if (out == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = PyTuple_GET_ITEM(seq, i), *line;
        b.len = 0;
        int rc = tsv_row(self, &b, row);
        if (rc == -1)
            goto fail;
        if (rc == -2)
            line = PyObject_CallOneArg(self->python_row, row);
        else
            line = decode_utf8(b.data, b.len);
        if (line == NULL)
            goto fail;
        PyList_SET_ITEM(out, i, line);
    }
    PyMem_Free(b.data);
    Py_DECREF(seq);
    return out;
fail:
    PyMem_Free(b.data);
    Py_XDECREF(out);
    Py_DECREF(seq);
    return NULL;
}

static PyMethodDef TsvRows_methods[] = {
    {"encode_rows", (PyCFunction)TsvRows_encode, METH_O, "encode_rows(rows) -> [line, ...]"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject TsvRowsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "mybinlog.protocol._speedups.TsvRows",
    .tp_basicsize = sizeof(TsvRows),
    .tp_dealloc = (destructor)TsvRows_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "TsvRows(ops, python_row): rows of Python values -> lines of TabSeparated fields",
    .tp_methods = TsvRows_methods,
    .tp_new = TsvRows_new,
};

static PyMethodDef module_methods[] = {
    {"active_indexes", (PyCFunction)(void (*)(void))active_indexes, METH_FASTCALL,
     "active_indexes(events, passive) -> indexes of the events whose type_code is not in passive"},
    {"crc32", (PyCFunction)py_crc32, METH_O, "crc32(data) -> the CRC32 of data (zlib's)"},
    {"utf8", (PyCFunction)py_utf8, METH_O, "utf8(data) -> data decoded as strict UTF-8, like bytes.decode()"},
    {"utf8_simd", (PyCFunction)py_utf8_simd, METH_O,
     "utf8_simd(on) -> whether UTF-8 text is now decoded with AVX-512 (only where the CPU has it; for the tests)"},
    {"set_event_classes", (PyCFunction)set_event_classes, METH_O,
     "set_event_classes(((cls, slot names), ...)): the event classes decode_events builds"},
    {"cut_events", (PyCFunction)(void (*)(void))cut_events, METH_FASTCALL,
     "cut_events(data, pos, limit) -> (raws, offsets, pos): a binlog file's events, each sliced once"},
    {"frame_events", (PyCFunction)(void (*)(void))frame_events, METH_FASTCALL,
     "frame_events(buf, pos, end, max_bytes, seq) -> (events, pos, seq, stop payload) or None"},
    {"decode_events", (PyCFunction)(void (*)(void))decode_events, METH_FASTCALL,
     "decode_events(raws, offsets, start, out, file, trailer, verify, network, tid6, hits, table_maps) -> index"},
    {"decode_jsonb", (PyCFunction)(void (*)(void))mb_jsonb_py_decode, METH_FASTCALL,
     "decode_jsonb(data, fallback=None) -> a MySQL binary JSON document decoded as _jsonb.decode_jsonb does; when it "
     "is malformed, fallback(bytes(data)) (which raises the exact error), or ValueError without one"},
    {NULL, NULL, 0, NULL},
};

/* ---------------------------------------------------------------------------------------------------------- */

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT, .m_name = "mybinlog.protocol._speedups",
    .m_doc = "The optional compiled core of mybinlog's decoder (see mybinlog/protocol/_accel.py).", .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    crc_init();
#ifdef HAVE_CLMUL_CRC
    __builtin_cpu_init();
    use_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1") &&
                getenv("MYBINLOG_NO_CLMUL") == NULL;
#endif
#ifdef HAVE_AVX512_UTF8
    avx512_utf8_supported = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                            __builtin_cpu_supports("avx512cd") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi") &&
                      __builtin_cpu_supports("avx512vbmi2");
    use_avx512_utf8 = avx512_utf8_supported && getenv("MYBINLOG_NO_AVX512") == NULL;
#endif
    PyDateTime_IMPORT;
    if (PyDateTimeAPI == NULL)
        return NULL;
    PyObject *decimal = PyImport_ImportModule("decimal");
    if (decimal == NULL)
        return NULL;
    Decimal = PyObject_GetAttrString(decimal, "Decimal");
    Py_DECREF(decimal);
    if (Decimal == NULL || dec_direct_init() < 0)
        return NULL;
    UTC = PyDateTimeAPI->TimeZone_UTC;
    Py_INCREF(UTC);
    if (PyType_Ready(&RowProgramType) < 0 || PyType_Ready(&ReadyType) < 0 || PyType_Ready(&StreamIterType) < 0 ||
        PyType_Ready(&TsvRowsType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&speedups_module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&RowProgramType);
    if (PyModule_AddObject(m, "RowProgram", (PyObject *)&RowProgramType) < 0) {
        Py_DECREF(&RowProgramType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&ReadyType);
    if (PyModule_AddObject(m, "Ready", (PyObject *)&ReadyType) < 0) {
        Py_DECREF(&ReadyType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&TsvRowsType);
    if (PyModule_AddObject(m, "TsvRows", (PyObject *)&TsvRowsType) < 0) {
        Py_DECREF(&TsvRowsType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&StreamIterType);
    if (PyModule_AddObject(m, "StreamIter", (PyObject *)&StreamIterType) < 0) {
        Py_DECREF(&StreamIterType);
        Py_DECREF(m);
        return NULL;
    }
    /* whether DECIMAL values are built directly (dec_direct_init), for the tests and the benchmarks */
    if (PyModule_AddIntConstant(m, "DIRECT_DECIMAL", dec_direct) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
