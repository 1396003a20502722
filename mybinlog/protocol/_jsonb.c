/* MySQL binary JSON (JSON columns) in the compiled core: part of mybinlog.protocol._speedups (setup.py).
 *
 * mb_jsonb_decode() turns a document into the same Python values as decode_jsonb() of
 * mybinlog/protocol/_jsonb.py, which stays the specification (the format is described there): dicts (keys in
 * stored order), lists, str, int, float, True/False/None, decimal.Decimal, datetime.date/datetime/timedelta, the
 * text of zero or invalid temporals, and JsonOpaque for the other OPAQUE types.
 *
 * It follows the compiled core's contract, "same result or no result": it checks every offset and size as the
 * Python decoder does, and when the document is malformed (anything the Python decoder raises DecodeError for) it
 * builds nothing and calls the fallback (the Python decode_jsonb) on the bytes, which raises the exact error. The
 * row decoder (_sp_rows.c) calls it for a JSON column (TEXT_CALL with decode_jsonb as the value function);
 * _speedups.decode_jsonb(data, fallback=None) exposes it for the differential tests
 * (tests/unit/protocol/test_jsonb_c.py), raising ValueError when it finds the document malformed and no fallback is
 * given.
 *
 * The recursion is bounded by MAX_DEPTH (150, as in _jsonb.py), a few hundred bytes of C stack a level.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <datetime.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define JB_MAX_DEPTH 150 /* _jsonb.MAX_DEPTH */

enum {
    JB_SMALL_OBJECT = 0x00,
    JB_LARGE_OBJECT = 0x01,
    JB_SMALL_ARRAY = 0x02,
    JB_LARGE_ARRAY = 0x03,
    JB_LITERAL = 0x04,
    JB_INT16 = 0x05,
    JB_UINT16 = 0x06,
    JB_INT32 = 0x07,
    JB_UINT32 = 0x08,
    JB_INT64 = 0x09,
    JB_UINT64 = 0x0A,
    JB_DOUBLE = 0x0B,
    JB_STRING = 0x0C,
    JB_OPAQUE = 0x0F,
};

enum {
    MYSQL_TIMESTAMP = 7,
    MYSQL_DATE = 10,
    MYSQL_TIME = 11,
    MYSQL_DATETIME = 12,
    MYSQL_NEWDECIMAL = 246,
};

/* references taken once, on the first use (the datetime C API is per translation unit) */
static int jb_ready = 0;
static PyObject *jb_decimal = NULL;     /* decimal.Decimal */
static PyObject *jb_opaque = NULL;      /* mybinlog.protocol._jsonb.JsonOpaque */
static PyObject *jb_py_decoder = NULL;  /* mybinlog.protocol._jsonb.decode_jsonb */

static int
jb_init(void)
{
    if (jb_ready)
        return 0;
    PyDateTime_IMPORT;
    if (PyDateTimeAPI == NULL)
        return -1;
    PyObject *decimal = PyImport_ImportModule("decimal");
    if (decimal == NULL)
        return -1;
    jb_decimal = PyObject_GetAttrString(decimal, "Decimal");
    Py_DECREF(decimal);
    if (jb_decimal == NULL)
        return -1;
    PyObject *mod = PyImport_ImportModule("mybinlog.protocol._jsonb");
    if (mod == NULL)
        return -1;
    jb_opaque = PyObject_GetAttrString(mod, "JsonOpaque");
    jb_py_decoder = jb_opaque ? PyObject_GetAttrString(mod, "decode_jsonb") : NULL;
    Py_DECREF(mod);
    if (jb_py_decoder == NULL) {
        Py_CLEAR(jb_opaque);
        return -1;
    }
    jb_ready = 1;
    return 0;
}

/* 1 when f is the Python decode_jsonb (the value function of a JSON column), 0 when not, -1 with an error set */
int
mb_jsonb_is_decoder(PyObject *f)
{
    if (!jb_ready && jb_init() < 0)
        return -1;
    return f == jb_py_decoder;
}

typedef struct {
    const unsigned char *d;
    int malformed; /* set when NULL is returned for a malformed document (no Python error set) */
} Ctx;

static inline PyObject *
malformed(Ctx *c)
{
    c->malformed = 1;
    return NULL;
}

static inline uint64_t
le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* read_varlen(): 0 and *value, *next; -1 when malformed (too long, too large, or past end) */
static int
varlen(const unsigned char *d, uint64_t pos, uint64_t end, uint64_t *value, uint64_t *next)
{
    uint64_t v = 0;
    int shift = 0;
    uint64_t stop = pos + 5 < end ? pos + 5 : end;
    for (uint64_t i = pos; i < stop; i++) {
        unsigned b = d[i];
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            if (v > 0xFFFFFFFFu)
                return -1;
            *value = v;
            *next = i + 1;
            return 0;
        }
        shift += 7;
    }
    return -1;
}

/* Short ASCII strings (object keys above all, which repeat from document to document, and short values) come from a
 * small direct-mapped cache of str objects: no allocation, and a key's hash is computed once, not at every dict
 * insertion. The strs are equal to the ones bytes.decode() makes, which is all a caller can see. */
#define JB_CACHE_SIZE 1024
#define JB_CACHE_MAX_LEN 24
static PyObject *jb_cache[JB_CACHE_SIZE];

static PyObject *
cached_ascii(const unsigned char *p, uint64_t n)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    unsigned high = 0;
    for (uint64_t i = 0; i < n; i++) {
        high |= p[i];
        h = (h ^ p[i]) * 16777619u;
    }
    if (high & 0x80)
        return NULL; /* not ASCII: decoded (and checked) as UTF-8 */
    PyObject **slot = &jb_cache[(h ^ (h >> 16)) & (JB_CACHE_SIZE - 1)];
    PyObject *s = *slot;
    if (s != NULL && (uint64_t)PyUnicode_GET_LENGTH(s) == n && memcmp(PyUnicode_1BYTE_DATA(s), p, (size_t)n) == 0) {
        Py_INCREF(s);
        return s;
    }
    s = PyUnicode_New((Py_ssize_t)n, 127);
    if (s == NULL)
        return NULL;
    memcpy(PyUnicode_1BYTE_DATA(s), p, (size_t)n);
    if (PyObject_Hash(s) == -1) {
        Py_DECREF(s);
        return NULL;
    }
    Py_INCREF(s);
    Py_XSETREF(*slot, s);
    return s;
}

/* str of strict UTF-8 (bytes.decode("utf-8")); malformed when it is not UTF-8 */
static PyObject *
text(Ctx *c, const unsigned char *p, uint64_t n)
{
    if (n <= JB_CACHE_MAX_LEN) {
        PyObject *s = cached_ascii(p, n);
        if (s != NULL || PyErr_Occurred())
            return s;
    }
    PyObject *s = PyUnicode_DecodeUTF8((const char *)p, (Py_ssize_t)n, NULL);
    if (s == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        PyErr_Clear();
        return malformed(c);
    }
    return s;
}

static PyObject *
literal(Ctx *c, unsigned v)
{
    switch (v) {
    case 0:
        Py_RETURN_NONE;
    case 1:
        Py_RETURN_TRUE;
    case 2:
        Py_RETURN_FALSE;
    default:
        return malformed(c);
    }
}

static const int dig2bytes[10] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};
static const uint32_t pow10_[10] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000};

/* decode_decimal(data, 2, precision, scale): Decimal("<digits>E-<scale>") as the Python code builds it */
static PyObject *
opaque_decimal(Ctx *c, const unsigned char *p, uint64_t n)
{
    if (n < 2)
        return malformed(c);
    int precision = p[0], scale = p[1];
    if (precision < 1 || precision > 65 || scale > 30 || scale > precision)
        return malformed(c);
    int intg = precision - scale;
    int intg0 = intg / 9, intg0x = intg % 9, frac0 = scale / 9, frac0x = scale % 9;
    int lead = dig2bytes[intg0x], trail = dig2bytes[frac0x];
    int size = lead + 4 * (intg0 + frac0) + trail;
    if (n < 2 + (uint64_t)size)
        return malformed(c);
    unsigned char raw[40];
    memcpy(raw, p + 2, (size_t)size);
    int negative = !(raw[0] & 0x80);
    if (negative)
        for (int i = 0; i < size; i++)
            raw[i] ^= 0xFF;
    raw[0] ^= 0x80;
    char out[128];
    int k = 0, nonzero = 0;
    out[k++] = '-';
    const unsigned char *q = raw;
    if (lead) {
        uint32_t v = 0;
        for (int i = 0; i < lead; i++)
            v = (v << 8) | q[i];
        if (v >= pow10_[intg0x])
            return malformed(c);
        nonzero |= v != 0;
        k += snprintf(out + k, sizeof(out) - (size_t)k, "%u", v);
        q += lead;
    }
    for (int g = 0; g < intg0 + frac0; g++, q += 4) {
        uint32_t v = (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3];
        if (v > 999999999u)
            return malformed(c);
        nonzero |= v != 0;
        k += snprintf(out + k, sizeof(out) - (size_t)k, "%09u", v);
    }
    if (trail) {
        uint32_t v = 0;
        for (int i = 0; i < trail; i++)
            v = (v << 8) | q[i];
        if (v >= pow10_[frac0x])
            return malformed(c);
        nonzero |= v != 0;
        k += snprintf(out + k, sizeof(out) - (size_t)k, "%0*u", frac0x, v);
    }
    if (scale)
        k += snprintf(out + k, sizeof(out) - (size_t)k, "E-%d", scale);
    const char *start = negative && nonzero ? out : out + 1; /* a negative zero is Decimal('0E-n'), unsigned */
    PyObject *s = PyUnicode_FromStringAndSize(start, (Py_ssize_t)(out + k - start));
    if (s == NULL)
        return NULL;
    PyObject *v = PyObject_CallOneArg(jb_decimal, s);
    Py_DECREF(s);
    return v;
}

static int
days_in_month(int y, int m)
{
    static const int days[13] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
        return 29;
    return days[m];
}

/* the packed temporals of decode_opaque(): DATE, TIME, DATETIME, TIMESTAMP */
static PyObject *
opaque_temporal(Ctx *c, int type_code, const unsigned char *p, uint64_t n)
{
    if (n < 8)
        return malformed(c);
    int64_t packed = (int64_t)le(p, 8);
    int negative = packed < 0;
    uint64_t mag = negative ? (uint64_t)0 - (uint64_t)packed : (uint64_t)packed;
    int usec = (int)(mag & 0xFFFFFF);
    if (type_code == MYSQL_TIME) {
        uint64_t hms = mag >> 24;
        int seconds = (int)((hms >> 12) & 0x3FF) * 3600 + (int)((hms >> 6) & 63) * 60 + (int)(hms & 63);
        return negative ? PyDelta_FromDSU(0, -seconds, -usec) : PyDelta_FromDSU(0, seconds, usec);
    }
    uint64_t ymdhms = mag >> 24;
    uint64_t ymd = ymdhms >> 17;
    unsigned hms = (unsigned)(ymdhms & 0x1FFFF);
    int year = (int)((ymd >> 5) / 13), month = (int)((ymd >> 5) % 13), day = (int)(ymd & 31);
    int hour = (int)(hms >> 12), minute = (int)((hms >> 6) & 63), second = (int)(hms & 63);
    int valid_date = year >= 1 && year <= 9999 && month >= 1 && day >= 1 && day <= days_in_month(year, month);
    char buf[64];
    if (type_code == MYSQL_DATE) {
        if (valid_date)
            return PyDate_FromDate(year, month, day);
        snprintf(buf, sizeof(buf), "%04d-%02d-%02d", year, month, day);
        return PyUnicode_FromString(buf);
    }
    if (valid_date && !negative && hour < 24 && minute < 60 && second < 60 && usec < 1000000)
        return PyDateTime_FromDateAndTime(year, month, day, hour, minute, second, usec);
    snprintf(buf, sizeof(buf), "%04d-%02d-%02d %02d:%02d:%02d.%06d", year, month, day, hour, minute, second, usec);
    return PyUnicode_FromString(buf);
}

static PyObject *
opaque(Ctx *c, int type_code, const unsigned char *p, uint64_t n)
{
    if (type_code == MYSQL_NEWDECIMAL)
        return opaque_decimal(c, p, n);
    if (type_code == MYSQL_DATE || type_code == MYSQL_TIME || type_code == MYSQL_DATETIME ||
        type_code == MYSQL_TIMESTAMP)
        return opaque_temporal(c, type_code, p, n);
    PyObject *code = PyLong_FromLong(type_code);
    if (code == NULL)
        return NULL;
    PyObject *raw = PyBytes_FromStringAndSize((const char *)p, (Py_ssize_t)n);
    if (raw == NULL) {
        Py_DECREF(code);
        return NULL;
    }
    PyObject *args[2] = {code, raw};
    PyObject *v = PyObject_Vectorcall(jb_opaque, args, 2, NULL);
    Py_DECREF(code);
    Py_DECREF(raw);
    return v;
}

static PyObject *container(Ctx *c, int t, uint64_t pos, uint64_t end, int depth);

/* _parse_value(): the value of type t whose payload starts at pos, bounded by end */
static PyObject *
value(Ctx *c, int t, uint64_t pos, uint64_t end, int depth)
{
    const unsigned char *d = c->d;
    uint64_t len, start;
    switch (t) {
    case JB_SMALL_OBJECT:
    case JB_LARGE_OBJECT:
    case JB_SMALL_ARRAY:
    case JB_LARGE_ARRAY:
        if (depth >= JB_MAX_DEPTH)
            return malformed(c);
        return container(c, t, pos, end, depth + 1);
    case JB_STRING:
        if (varlen(d, pos, end, &len, &start) < 0 || start + len > end)
            return malformed(c);
        return text(c, d + start, len);
    case JB_INT16:
        return pos + 2 > end ? malformed(c) : PyLong_FromLong((int16_t)le(d + pos, 2));
    case JB_UINT16:
        return pos + 2 > end ? malformed(c) : PyLong_FromLong((long)le(d + pos, 2));
    case JB_INT32:
        return pos + 4 > end ? malformed(c) : PyLong_FromLong((int32_t)le(d + pos, 4));
    case JB_UINT32:
        return pos + 4 > end ? malformed(c) : PyLong_FromUnsignedLong((unsigned long)le(d + pos, 4));
    case JB_INT64:
        return pos + 8 > end ? malformed(c) : PyLong_FromLongLong((long long)le(d + pos, 8));
    case JB_UINT64:
        return pos + 8 > end ? malformed(c) : PyLong_FromUnsignedLongLong(le(d + pos, 8));
    case JB_DOUBLE: {
        if (pos + 8 > end)
            return malformed(c);
        uint64_t bits = le(d + pos, 8);
        double x;
        memcpy(&x, &bits, sizeof(x));
        return PyFloat_FromDouble(x);
    }
    case JB_LITERAL:
        return pos >= end ? malformed(c) : literal(c, d[pos]);
    case JB_OPAQUE:
        if (pos >= end || varlen(d, pos + 1, end, &len, &start) < 0 || start + len > end)
            return malformed(c);
        return opaque(c, d[pos], d + start, len);
    default:
        return malformed(c);
    }
}

/* _parse_entry(): the value of the entry at `entry` of the container at base (size bytes, ending at cend) */
static PyObject *
entry_value(Ctx *c, uint64_t entry, uint64_t base, uint64_t size, uint64_t cend, int large, int depth)
{
    const unsigned char *d = c->d;
    int t = d[entry];
    uint64_t offset;
    switch (t) {
    case JB_LITERAL:
        return literal(c, d[entry + 1]);
    case JB_INT16:
        return PyLong_FromLong((int16_t)le(d + entry + 1, 2));
    case JB_UINT16:
        return PyLong_FromLong((long)le(d + entry + 1, 2));
    default:
        break;
    }
    if (large) {
        if (t == JB_INT32)
            return PyLong_FromLong((int32_t)le(d + entry + 1, 4));
        if (t == JB_UINT32)
            return PyLong_FromUnsignedLong((unsigned long)le(d + entry + 1, 4));
        offset = le(d + entry + 1, 4);
    }
    else
        offset = le(d + entry + 1, 2);
    if (offset >= size)
        return malformed(c);
    return value(c, t, base + offset, cend, depth);
}

/* _parse_container(): an object (a dict) or an array (a list) whose header starts at pos */
static PyObject *
container(Ctx *c, int t, uint64_t pos, uint64_t end, int depth)
{
    const unsigned char *d = c->d;
    int large = t & 1, is_object = t <= JB_LARGE_OBJECT;
    uint64_t count, size, osz;
    if (large) {
        if (pos + 8 > end)
            return malformed(c);
        count = le(d + pos, 4);
        size = le(d + pos + 4, 4);
        osz = 4;
    }
    else {
        if (pos + 4 > end)
            return malformed(c);
        count = le(d + pos, 2);
        size = le(d + pos + 2, 2);
        osz = 2;
    }
    if (size > end - pos)
        return malformed(c);
    uint64_t cend = pos + size;
    uint64_t value_entry = 1 + osz, key_entry = is_object ? osz + 2 : 0;
    uint64_t header = 2 * osz + count * (key_entry + value_entry); /* count < 2**32: no overflow */
    if (header > size)
        return malformed(c);
    uint64_t entry = pos + 2 * osz;
    if (is_object) {
        /* the keys entries come first, then the value entries */
        uint64_t ventry = entry + count * key_entry;
        PyObject *obj = PyDict_New();
        if (obj == NULL)
            return NULL;
        for (uint64_t i = 0; i < count; i++, entry += key_entry, ventry += value_entry) {
            uint64_t key_off = le(d + entry, (int)osz), key_len = le(d + entry + osz, 2);
            if (key_off < header || key_off + key_len > size) {
                Py_DECREF(obj);
                return malformed(c);
            }
            PyObject *key = text(c, d + pos + key_off, key_len);
            if (key == NULL) {
                Py_DECREF(obj);
                return NULL;
            }
            PyObject *v = entry_value(c, ventry, pos, size, cend, large, depth);
            if (v == NULL || PyDict_SetItem(obj, key, v) < 0) {
                Py_DECREF(key);
                Py_XDECREF(v);
                Py_DECREF(obj);
                return NULL;
            }
            Py_DECREF(key);
            Py_DECREF(v);
        }
        return obj;
    }
    PyObject *arr = PyList_New((Py_ssize_t)count);
    if (arr == NULL)
        return NULL;
    for (uint64_t i = 0; i < count; i++, entry += value_entry) {
        PyObject *v = entry_value(c, entry, pos, size, cend, large, depth);
        if (v == NULL) {
            Py_DECREF(arr);
            return NULL;
        }
        PyList_SET_ITEM(arr, (Py_ssize_t)i, v);
    }
    return arr;
}

/* decode_jsonb() of n bytes at p: the value (a new reference); for a malformed document, fallback(bytes) (which
 * raises the exact DecodeError), or ValueError when fallback is NULL; NULL with an error set on failure */
PyObject *
mb_jsonb_decode(const unsigned char *p, Py_ssize_t n, PyObject *fallback)
{
    if (n == 0)
        Py_RETURN_NONE;
    if (!jb_ready && jb_init() < 0)
        return NULL;
    Ctx c = {p, 0};
    PyObject *v = value(&c, p[0], 1, (uint64_t)n, 0);
    if (v != NULL || !c.malformed)
        return v;
    if (fallback == NULL || fallback == Py_None) {
        PyErr_SetString(PyExc_ValueError, "malformed MySQL binary JSON document");
        return NULL;
    }
    PyObject *raw = PyBytes_FromStringAndSize((const char *)p, n);
    if (raw == NULL)
        return NULL;
    v = PyObject_CallOneArg(fallback, raw);
    Py_DECREF(raw);
    return v;
}

/* _speedups.decode_jsonb(data, fallback=None): mb_jsonb_decode of a bytes-like object (for the tests); Python twin:
 * _jsonb.decode_jsonb */
PyObject *
mb_jsonb_py_decode(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "decode_jsonb(data, fallback=None)");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *v = mb_jsonb_decode(view.buf, view.len, nargs == 2 ? args[1] : NULL);
    PyBuffer_Release(&view);
    return v;
}
