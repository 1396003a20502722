/* The JSON Lines renderer's hot path in C (optional): mybinlog.protocol._jsonl_speedups.

   It writes exactly the text of the pure-Python renderer (mybinlog/protocol/_format.py, event_to_json), byte for
   byte. The events it knows (rows events, TABLE_MAP, ANNOTATE_ROWS/ROWS_QUERY, XID) are written here; the
   repeating parts (the head's type/file prefix, a table's names and columns) come from Python helpers once and
   are cached. Values of the usual column types (None, bool, int, float, str, Decimal, datetime, date, timedelta,
   bytes, MISSING, and JSON documents made of dicts with str keys, lists and those) are written here; any other
   value goes to the Python json encoder used by the pure-Python renderer, and any event this code is unsure of
   (another event class, an unexpected attribute type, a row of the wrong length) to the pure-Python event_to_json.
   Errors (a row image that fails to decode, ...) are the pure-Python code's: they come from the same calls.

   Text is built as UTF-8 (lone surrogates as 3-byte sequences, like the "surrogatepass" error handler) and
   decoded once into the str returned. configure() is called once by _format.py with the Python helpers. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <datetime.h>
#include <structmember.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "_jsonbuf.h"

/* -- str to UTF-8, escaped as json.encoder.encode_basestring (ensure_ascii=False) does, or raw --------------- */

/* at or above this many characters, a non-ASCII str is encoded by CPython's UTF-8 encoder and then escaped as
   bytes, which is faster than the character loop below */
#define STR_LONG 32

/* append str s: quoted and escaped (JSON string literal) or raw (text that is already JSON) */
static int buf_str(Buf *b, PyObject *s, int quoted) {
    if (PyUnicode_READY(s) < 0) return -1;
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    if (PyUnicode_IS_ASCII(s)) {
        const unsigned char *src = PyUnicode_1BYTE_DATA(s);
        return quoted ? buf_quoted_utf8(b, src, n) : buf_put(b, (const char *)src, n);
    }
    if (n >= STR_LONG) {
        PyObject *u8 = PyUnicode_AsUTF8String(s);
        if (u8 != NULL) {
            const unsigned char *src = (const unsigned char *)PyBytes_AS_STRING(u8);
            Py_ssize_t m = PyBytes_GET_SIZE(u8);
            int rc = quoted ? buf_quoted_utf8(b, src, m) : buf_put(b, (const char *)src, m);
            Py_DECREF(u8);
            return rc;
        }
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return -1;
        PyErr_Clear();  /* a lone surrogate: the character loop writes it as surrogatepass does */
    }
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    /* 6 bytes per character covers \u00XX and 4-byte UTF-8 */
    if (n > (PY_SSIZE_T_MAX - 2) / 6) {
        PyErr_NoMemory();
        return -1;
    }
    if (BUF_RESERVE(b, 6 * n + 2) < 0) return -1;
    char *p = b->data + b->len;
    if (quoted) *p++ = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (quoted && c < 0x80 && NEEDS_ESCAPE(c))
            p = put_escaped_ascii(p, c);
        else {
            if (c >= 0xD800 && c <= 0xDFFF) b->surrogates = 1;
            p = put_cp(p, c);
        }
    }
    if (quoted) *p++ = '"';
    b->len = p - b->data;
    return 0;
}

/* -- configuration: the Python helpers ----------------------------------------------------------------------- */

static PyObject *json_kind;       /* cls -> kind (int) */
static PyObject *head_prefix;     /* event -> '{"type":..,"type_code":..,"file":..,"offset":' */
static PyObject *rows_prefix;     /* table -> (',"schema":..,"table":..,"columns":[..],"rows":[', column count) */
static PyObject *table_map_tail;  /* event -> ',"table_id":..,..,"column_types":[..]}' */
static PyObject *encode_value;    /* value -> its JSON text (the pure-Python renderer's json encoder) */
static PyObject *event_fallback;  /* event -> its JSON line (the pure-Python event_to_json) */
static PyObject *missing;         /* mybinlog's MISSING */
static PyObject *decimal_type;    /* decimal.Decimal */
static PyObject *fixed_spec;      /* "f": the format spec of a Decimal in fixed notation */
static PyObject *rows_json;       /* event -> its rows' JSON (bytes) rendered from the row images, or None */
static PyObject *kind_cache;      /* dict: event class -> kind */

enum { KIND_ROWS = 0, KIND_UPDATE = 1, KIND_TABLE_MAP = 2, KIND_QUERY = 3, KIND_XID = 4, KIND_OTHER = 5 };

enum {
    A_TYPE_CODE, A_FILE, A_OFFSET, A_LOG_POS, A_TIMESTAMP, A_SERVER_ID, A_SIZE, A_FLAGS, A_IN_PAYLOAD, A_TABLE,
    A_ROWS, A_QUERY, A_XID, A_TABLE_ID, A_QUERY_RAW, N_ATTRS
};
static const char *const attr_text[N_ATTRS] = {
    "type_code", "file", "offset", "log_pos", "timestamp", "server_id", "size", "flags", "in_payload", "table",
    "rows", "query", "xid", "table_id", "_query",
};
static PyObject *attr_names[N_ATTRS];

typedef struct {
    int kind;
    Py_ssize_t offset[N_ATTRS];  /* of the __slots__ member, or -1 */
} ClassInfo;

/* caches; entries hold strong references to their keys so that an id is never reused while cached */
typedef struct {
    PyObject *file;    /* the event's file (str or None) */
    PyObject *prefix;  /* bytes */
    int surrogates;    /* the prefix holds a lone surrogate */
} HeadEntry;
static HeadEntry head_cache[256];

#define TABLE_SLOTS 256
typedef struct {
    PyObject *table;
    PyObject *prefix;  /* bytes */
    Py_ssize_t ncols;
    int surrogates;
} RowsEntry;
static RowsEntry rows_cache[TABLE_SLOTS];

typedef struct {
    PyObject *table;
    PyObject *table_id;
    PyObject *tail;  /* bytes */
    int surrogates;
} MapEntry;
static MapEntry map_cache[TABLE_SLOTS];

static inline size_t slot_of(PyObject *o) { return ((size_t)o >> 4) % TABLE_SLOTS; }

static void clear_caches(void) {
    for (int i = 0; i < 256; i++) {
        Py_CLEAR(head_cache[i].file);
        Py_CLEAR(head_cache[i].prefix);
    }
    for (int i = 0; i < TABLE_SLOTS; i++) {
        Py_CLEAR(rows_cache[i].table);
        Py_CLEAR(rows_cache[i].prefix);
        Py_CLEAR(map_cache[i].table);
        Py_CLEAR(map_cache[i].table_id);
        Py_CLEAR(map_cache[i].tail);
    }
}

/* str -> UTF-8 bytes with lone surrogates kept (text from the Python helpers, appended raw) */
static PyObject *utf8_bytes(PyObject *s) {
    if (!PyUnicode_Check(s)) {
        PyErr_Format(PyExc_TypeError, "expected str, got %.100s", Py_TYPE(s)->tp_name);
        return NULL;
    }
    return PyUnicode_AsEncodedString(s, "utf-8", "surrogatepass");
}

/* UTF-8 bytes from utf8_bytes hold a lone surrogate (ED A0..BF: never in valid UTF-8) */
static int has_surrogate(PyObject *bytes) {
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(bytes);
    Py_ssize_t n = PyBytes_GET_SIZE(bytes);
    for (Py_ssize_t i = 0; i + 1 < n; i++)
        if (p[i] == 0xED && p[i + 1] >= 0xA0) return 1;
    return 0;
}

/* -- values -------------------------------------------------------------------------------------------------- */

#define GIVE_UP 1  /* a value inside a JSON document this code does not write: the whole value goes to Python */
#define MAX_DEPTH 32

static int put_float(Buf *b, PyObject *v) { return buf_double(b, PyFloat_AS_DOUBLE(v)); }

static int put_int(Buf *b, PyObject *v) {
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (!overflow) {
        if (x == -1 && PyErr_Occurred()) return -1;
        return buf_ll(b, x);
    }
    PyObject *s = PyLong_Type.tp_repr(v);
    if (s == NULL) return -1;
    int rc = buf_str(b, s, 0);
    Py_DECREF(s);
    return rc;
}

/* value -> JSON; returns 0, -1 (error), or GIVE_UP (only when depth > 0) */
static int put_value(Buf *b, PyObject *v, int depth);

static int put_python(Buf *b, PyObject *v) {
    PyObject *s = PyObject_CallOneArg(encode_value, v);
    if (s == NULL) return -1;
    int rc = PyUnicode_Check(s) ? buf_str(b, s, 0) : (PyErr_SetString(PyExc_TypeError, "encoder gave no str"), -1);
    Py_DECREF(s);
    return rc;
}

static int put_container(Buf *b, PyObject *v, int depth) {
    if (depth >= MAX_DEPTH) return GIVE_UP;
    int rc;
    if (PyDict_CheckExact(v)) {
        if (buf_byte(b, '{') < 0) return -1;
        Py_ssize_t pos = 0, i = 0;
        PyObject *key, *item;
        while (PyDict_Next(v, &pos, &key, &item)) {
            if (!PyUnicode_Check(key)) return GIVE_UP;
            if (i++ && buf_byte(b, ',') < 0) return -1;
            if (buf_str(b, key, 1) < 0 || buf_byte(b, ':') < 0) return -1;
            Py_INCREF(item);  /* the dict cannot change under us: no Python code runs here, but be safe */
            rc = put_value(b, item, depth + 1);
            Py_DECREF(item);
            if (rc) return rc;
        }
        return buf_byte(b, '}');
    }
    /* list or tuple */
    Py_ssize_t n = PyList_CheckExact(v) ? PyList_GET_SIZE(v) : PyTuple_GET_SIZE(v);
    if (buf_byte(b, '[') < 0) return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyList_CheckExact(v) && i >= PyList_GET_SIZE(v)) break;
        PyObject *item = PyList_CheckExact(v) ? PyList_GET_ITEM(v, i) : PyTuple_GET_ITEM(v, i);
        if (i && buf_byte(b, ',') < 0) return -1;
        Py_INCREF(item);
        rc = put_value(b, item, depth + 1);
        Py_DECREF(item);
        if (rc) return rc;
    }
    return buf_byte(b, ']');
}

static int put_value(Buf *b, PyObject *v, int depth) {
    PyTypeObject *t = Py_TYPE(v);
    if (t == &PyLong_Type) return put_int(b, v);
    if (t == &PyUnicode_Type) return buf_str(b, v, 1);
    if (v == Py_None) return BUF_LIT(b, "null");
    if (t == &PyFloat_Type) return put_float(b, v);
    if ((PyObject *)t == decimal_type) {
        /* fixed notation (docs/dump-format.md): str() but format(v, "f") where str() has an exponent ("0E-9") */
        PyObject *s = PyObject_Str(v);
        if (s == NULL) return -1;
        if (PyUnicode_FindChar(s, 'E', 0, PyUnicode_GET_LENGTH(s), 1) >= 0) {
            Py_SETREF(s, PyObject_Format(v, fixed_spec));
            if (s == NULL) return -1;
        }
        int rc = buf_str(b, s, 1);
        Py_DECREF(s);
        return rc;
    }
    if (PyDateTime_CheckExact(v)) {
        PyObject *tz = PyDateTime_DATE_GET_TZINFO(v);
        if (tz != Py_None && tz != PyDateTime_TimeZone_UTC) goto python;
        return buf_datetime(b, PyDateTime_GET_YEAR(v), PyDateTime_GET_MONTH(v), PyDateTime_GET_DAY(v),
                            PyDateTime_DATE_GET_HOUR(v), PyDateTime_DATE_GET_MINUTE(v), PyDateTime_DATE_GET_SECOND(v),
                            PyDateTime_DATE_GET_MICROSECOND(v), tz == PyDateTime_TimeZone_UTC);
    }
    if (PyDate_CheckExact(v)) {
        return buf_byte(b, '"') < 0 ||
                       buf_date(b, PyDateTime_GET_YEAR(v), PyDateTime_GET_MONTH(v), PyDateTime_GET_DAY(v)) < 0
                   ? -1
                   : buf_byte(b, '"');
    }
    if (v == Py_True) return BUF_LIT(b, "true");
    if (v == Py_False) return BUF_LIT(b, "false");
    if (PyDelta_CheckExact(v)) {
        long long days = PyDateTime_DELTA_GET_DAYS(v);
        if (days > 100000000LL || days < -100000000LL) goto python;
        return buf_duration(b, days * 86400000000LL + (long long)PyDateTime_DELTA_GET_SECONDS(v) * 1000000LL +
                                   PyDateTime_DELTA_GET_MICROSECONDS(v));
    }
    if (t == &PyBytes_Type) return buf_hex(b, (const unsigned char *)PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v), 0);
    if (v == missing) return BUF_LIT(b, "{\"$missing\":true}");
    if (PyDict_CheckExact(v) || PyList_CheckExact(v) || PyTuple_CheckExact(v)) {
        if (depth > 0) return put_container(b, v, depth);
        /* a whole document: written here, or by the json encoder if anything in it is not for this code */
        Py_ssize_t start = b->len;
        int rc = put_container(b, v, 0);
        if (rc != GIVE_UP) return rc;
        b->len = start;
        return put_python(b, v);
    }
python:
    if (depth > 0) return GIVE_UP;
    return put_python(b, v);
}

/* -- events -------------------------------------------------------------------------------------------------- */

static void free_class_info(PyObject *capsule) { PyMem_Free(PyCapsule_GetPointer(capsule, "mybinlog.jsonl.class")); }

/* the descriptor `name` of a class, as attribute lookup finds it (borrowed, NULL when absent) */
static PyObject *type_lookup(PyTypeObject *type, PyObject *name) {
    PyObject *mro = type->tp_mro;
    if (mro == NULL || !PyTuple_Check(mro)) return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); i++) {
        PyObject *base = PyTuple_GET_ITEM(mro, i);
        PyObject *dict = ((PyTypeObject *)base)->tp_dict;
        if (dict == NULL) continue;
        PyObject *v = PyDict_GetItemWithError(dict, name);
        if (v != NULL) return v;
        if (PyErr_Occurred()) {
            PyErr_Clear();
            return NULL;
        }
    }
    return NULL;
}

static ClassInfo *class_info(PyObject *event) {
    PyTypeObject *type = Py_TYPE(event);
    PyObject *cap = PyDict_GetItemWithError(kind_cache, (PyObject *)type);
    if (cap != NULL) return (ClassInfo *)PyCapsule_GetPointer(cap, "mybinlog.jsonl.class");
    if (PyErr_Occurred()) return NULL;
    PyObject *k = PyObject_CallOneArg(json_kind, (PyObject *)type);
    if (k == NULL) return NULL;
    long kind = PyLong_AsLong(k);
    Py_DECREF(k);
    if (kind == -1 && PyErr_Occurred()) return NULL;
    ClassInfo *info = PyMem_Malloc(sizeof(ClassInfo));
    if (info == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    info->kind = (int)kind;
    /* attributes stored in __slots__ are read at their offset; anything else through getattr */
    for (int i = 0; i < N_ATTRS; i++) {
        info->offset[i] = -1;
        if (type->tp_getattro != PyObject_GenericGetAttr) continue;
        PyObject *descr = type_lookup(type, attr_names[i]);
        if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type)) continue;
        PyMemberDef *m = ((PyMemberDescrObject *)descr)->d_member;
        if (m->type != T_OBJECT_EX) continue;
#ifdef Py_RELATIVE_OFFSET
        if (m->flags & Py_RELATIVE_OFFSET) continue;
#endif
        info->offset[i] = m->offset;
    }
    cap = PyCapsule_New(info, "mybinlog.jsonl.class", free_class_info);
    if (cap == NULL) {
        PyMem_Free(info);
        return NULL;
    }
    int rc = PyDict_SetItem(kind_cache, (PyObject *)type, cap);
    Py_DECREF(cap);  /* the dict holds it (and the info stays valid while the dict does) */
    return rc < 0 ? NULL : info;
}

/* a new reference to attribute i of the event */
static inline PyObject *get_attr(PyObject *event, const ClassInfo *info, int i) {
    Py_ssize_t off = info->offset[i];
    if (off >= 0) {
        PyObject *v = *(PyObject **)((char *)event + off);
        if (v != NULL) {
            Py_INCREF(v);
            return v;
        }
    }
    return PyObject_GetAttr(event, attr_names[i]);  /* also the AttributeError of an unset slot */
}


#define FALLBACK 1  /* this event goes to the pure-Python event_to_json */

/* an int attribute as its decimal text (None as null when nullable); FALLBACK for anything else */
static int put_int_attr(Buf *b, PyObject *event, const ClassInfo *info, int attr, int nullable) {
    PyObject *v = get_attr(event, info, attr);
    if (v == NULL) return -1;
    int rc;
    if (PyLong_CheckExact(v))
        rc = put_int(b, v);
    else if (nullable && v == Py_None)
        rc = BUF_LIT(b, "null");
    else
        rc = FALLBACK;
    Py_DECREF(v);
    return rc;
}

static int put_head(Buf *b, PyObject *event, const ClassInfo *info) {
    PyObject *code = get_attr(event, info, A_TYPE_CODE);
    if (code == NULL) return -1;
    long c = PyLong_CheckExact(code) ? PyLong_AsLong(code) : -1;
    Py_DECREF(code);
    if (c == -1 && PyErr_Occurred()) PyErr_Clear();
    if (c < 0 || c > 255) return FALLBACK;
    PyObject *file = get_attr(event, info, A_FILE);
    if (file == NULL) return -1;
    HeadEntry *e = &head_cache[c];
    int same = e->prefix != NULL && e->file == file;
    if (!same && e->prefix != NULL && Py_TYPE(file) == &PyUnicode_Type && Py_TYPE(e->file) == &PyUnicode_Type) {
        same = PyUnicode_Compare(file, e->file) == 0;
        if (same) {  /* the new object: the next identity check succeeds */
            Py_INCREF(file);
            Py_SETREF(e->file, file);
        }
    }
    if (!same) {
        if (file != Py_None && Py_TYPE(file) != &PyUnicode_Type) {
            Py_DECREF(file);
            return FALLBACK;
        }
        PyObject *s = PyObject_CallOneArg(head_prefix, event);
        PyObject *bytes = s ? utf8_bytes(s) : NULL;
        Py_XDECREF(s);
        if (bytes == NULL) {
            Py_DECREF(file);
            return -1;
        }
        Py_INCREF(bytes);
        Py_XSETREF(e->prefix, bytes);
        Py_INCREF(file);
        Py_XSETREF(e->file, file);
        Py_DECREF(file);
        e->surrogates = has_surrogate(bytes);
        b->surrogates |= e->surrogates;
        int rc = buf_put(b, PyBytes_AS_STRING(bytes), PyBytes_GET_SIZE(bytes));
        Py_DECREF(bytes);
        if (rc < 0) return -1;
    } else {
        Py_DECREF(file);
        b->surrogates |= e->surrogates;
        if (buf_put(b, PyBytes_AS_STRING(e->prefix), PyBytes_GET_SIZE(e->prefix)) < 0) return -1;
    }
    int rc;
    if ((rc = put_int_attr(b, event, info, A_OFFSET, 1))) return rc;
    if (BUF_LIT(b, ",\"log_pos\":") < 0) return -1;
    if ((rc = put_int_attr(b, event, info, A_LOG_POS, 0))) return rc;
    if (BUF_LIT(b, ",\"timestamp\":") < 0) return -1;
    if ((rc = put_int_attr(b, event, info, A_TIMESTAMP, 0))) return rc;
    if (BUF_LIT(b, ",\"server_id\":") < 0) return -1;
    if ((rc = put_int_attr(b, event, info, A_SERVER_ID, 0))) return rc;
    if (BUF_LIT(b, ",\"size\":") < 0) return -1;
    if ((rc = put_int_attr(b, event, info, A_SIZE, 0))) return rc;
    if (BUF_LIT(b, ",\"flags\":") < 0) return -1;
    if ((rc = put_int_attr(b, event, info, A_FLAGS, 0))) return rc;
    PyObject *inp = get_attr(event, info, A_IN_PAYLOAD);
    if (inp == NULL) return -1;
    int truth = PyObject_IsTrue(inp);
    Py_DECREF(inp);
    if (truth < 0) return -1;
    if (truth && BUF_LIT(b, ",\"in_payload\":true") < 0) return -1;
    return 0;
}

static RowsEntry *rows_entry(PyObject *table) {
    RowsEntry *e = &rows_cache[slot_of(table)];
    if (e->table == table) return e;
    PyObject *r = PyObject_CallOneArg(rows_prefix, table);
    if (r == NULL) return NULL;
    if (!PyTuple_CheckExact(r) || PyTuple_GET_SIZE(r) != 2) {
        Py_DECREF(r);
        PyErr_SetString(PyExc_TypeError, "rows_prefix must return (str, int)");
        return NULL;
    }
    PyObject *bytes = utf8_bytes(PyTuple_GET_ITEM(r, 0));
    Py_ssize_t ncols = PyLong_AsSsize_t(PyTuple_GET_ITEM(r, 1));
    Py_DECREF(r);
    if (bytes == NULL || (ncols == -1 && PyErr_Occurred())) {
        Py_XDECREF(bytes);
        return NULL;
    }
    Py_INCREF(table);
    Py_XSETREF(e->table, table);
    Py_XSETREF(e->prefix, bytes);
    e->ncols = ncols;
    e->surrogates = has_surrogate(bytes);
    return e;
}

/* one row image '[v0,v1,...]'; FALLBACK when it is not a tuple of the table's width */
static int put_row(Buf *b, PyObject *row, Py_ssize_t ncols) {
    if (!PyTuple_CheckExact(row) || PyTuple_GET_SIZE(row) != ncols) return FALLBACK;
    if (BUF_RESERVE(b, 2 + ncols) < 0) return -1;
    b->data[b->len++] = '[';
    for (Py_ssize_t i = 0; i < ncols; i++) {
        if (i && buf_byte(b, ',') < 0) return -1;
        if (put_value(b, PyTuple_GET_ITEM(row, i), 0) < 0) return -1;
    }
    return buf_byte(b, ']');
}

static int put_rows_event(Buf *b, PyObject *event, const ClassInfo *info, int update) {
    PyObject *table = get_attr(event, info, A_TABLE);
    if (table == NULL) return -1;
    RowsEntry *e = rows_entry(table);
    Py_DECREF(table);
    if (e == NULL) return -1;
    /* the cache entry may be replaced while the rows decode (Python code runs): keep what is needed */
    PyObject *prefix = e->prefix;
    Py_ssize_t ncols = e->ncols;
    b->surrogates |= e->surrogates;
    Py_INCREF(prefix);
    /* rows not decoded yet: the compiled core writes them straight from the row images when it can */
    PyObject *direct = PyObject_CallOneArg(rows_json, event);
    if (direct == NULL || PyBytes_Check(direct)) {
        int rc = direct == NULL || buf_put(b, PyBytes_AS_STRING(prefix), PyBytes_GET_SIZE(prefix)) < 0 ||
                         buf_put(b, PyBytes_AS_STRING(direct), PyBytes_GET_SIZE(direct)) < 0
                     ? -1
                     : BUF_LIT(b, "]}");
        Py_XDECREF(direct);
        Py_DECREF(prefix);
        return rc;
    }
    Py_DECREF(direct);
    PyObject *rows = get_attr(event, info, A_ROWS);
    int rc = 0;
    if (rows == NULL) {
        rc = -1;
    } else if (!PyList_CheckExact(rows)) {
        rc = FALLBACK;
    } else if (buf_put(b, PyBytes_AS_STRING(prefix), PyBytes_GET_SIZE(prefix)) < 0) {
        rc = -1;
    } else {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(rows); i++) {
            PyObject *row = PyList_GET_ITEM(rows, i);
            Py_INCREF(row);
            if (i && buf_byte(b, ',') < 0) rc = -1;
            if (!rc && update) {
                if (!PyTuple_CheckExact(row) || PyTuple_GET_SIZE(row) != 2)
                    rc = FALLBACK;
                else if (BUF_LIT(b, "{\"before\":") < 0)
                    rc = -1;
                else if (!(rc = put_row(b, PyTuple_GET_ITEM(row, 0), ncols))) {
                    if (BUF_LIT(b, ",\"after\":") < 0)
                        rc = -1;
                    else if (!(rc = put_row(b, PyTuple_GET_ITEM(row, 1), ncols)))
                        rc = buf_byte(b, '}');
                }
            } else if (!rc) {
                rc = put_row(b, row, ncols);
            }
            Py_DECREF(row);
            if (rc) break;
        }
        if (!rc) rc = BUF_LIT(b, "]}");
    }
    Py_XDECREF(rows);
    Py_DECREF(prefix);
    return rc;
}

static int put_table_map(Buf *b, PyObject *event, const ClassInfo *info) {
    PyObject *table = get_attr(event, info, A_TABLE);
    if (table == NULL) return -1;
    PyObject *table_id = get_attr(event, info, A_TABLE_ID);
    if (table_id == NULL) {
        Py_DECREF(table);
        return -1;
    }
    MapEntry *e = &map_cache[slot_of(table)];
    int hit = e->table == table && PyLong_CheckExact(table_id) && e->table_id != NULL;
    if (hit) {
        hit = e->table_id == table_id || PyObject_RichCompareBool(e->table_id, table_id, Py_EQ) == 1;
        if (PyErr_Occurred()) PyErr_Clear();
    }
    int rc = 0;
    if (!hit) {
        PyObject *s = PyObject_CallOneArg(table_map_tail, event);
        PyObject *bytes = s ? utf8_bytes(s) : NULL;
        Py_XDECREF(s);
        if (bytes == NULL) {
            rc = -1;
        } else {
            int sur = has_surrogate(bytes);
            b->surrogates |= sur;
            if (PyLong_CheckExact(table_id)) {  /* cached (anything else is written once) */
                e->surrogates = sur;
                Py_INCREF(table);
                Py_XSETREF(e->table, table);
                Py_INCREF(table_id);
                Py_XSETREF(e->table_id, table_id);
                Py_INCREF(bytes);
                Py_XSETREF(e->tail, bytes);
            }
            rc = buf_put(b, PyBytes_AS_STRING(bytes), PyBytes_GET_SIZE(bytes));
            Py_DECREF(bytes);
        }
    } else {
        b->surrogates |= e->surrogates;
        rc = buf_put(b, PyBytes_AS_STRING(e->tail), PyBytes_GET_SIZE(e->tail));
    }
    Py_DECREF(table);
    Py_DECREF(table_id);
    return rc;
}


static int put_event(Buf *b, PyObject *event) {
    const ClassInfo *info = class_info(event);
    if (info == NULL) return -1;
    int kind = info->kind;
    if (kind < 0 || kind >= KIND_OTHER) return FALLBACK;
    int rc = put_head(b, event, info);
    if (rc) return rc;
    switch (kind) {
        case KIND_ROWS:
        case KIND_UPDATE:
            return put_rows_event(b, event, info, kind == KIND_UPDATE);
        case KIND_TABLE_MAP:
            return put_table_map(b, event, info);
        case KIND_QUERY: {
            if (info->offset[A_QUERY_RAW] >= 0) {  /* AnnotateRowsEvent: the text's bytes when still undecoded */
                PyObject *raw = *(PyObject **)((char *)event + info->offset[A_QUERY_RAW]);
                if (raw != NULL && PyBytes_CheckExact(raw)) {  /* valid UTF-8: the text `query` decodes to */
                    Py_ssize_t start = b->len;
                    if (BUF_LIT(b, ",\"query\":") < 0) return -1;
                    rc = buf_quoted_checked(b, (const unsigned char *)PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw));
                    if (rc != 1) return rc ? rc : buf_byte(b, '}');
                    b->len = start;  /* not UTF-8: `query` replaces the invalid bytes */
                }
            }
            PyObject *q = get_attr(event, info, A_QUERY);
            if (q == NULL) return -1;
            if (!PyUnicode_Check(q)) {
                Py_DECREF(q);
                return FALLBACK;
            }
            rc = BUF_LIT(b, ",\"query\":");
            if (!rc) rc = buf_str(b, q, 1);
            Py_DECREF(q);
            return rc ? rc : buf_byte(b, '}');
        }
        case KIND_XID:
            if (BUF_LIT(b, ",\"xid\":") < 0) return -1;
            if ((rc = put_int_attr(b, event, info, A_XID, 0))) return rc;
            return buf_byte(b, '}');
    }
    return FALLBACK;
}

static int put_event_or_fallback(Buf *b, PyObject *event) {
    Py_ssize_t start = b->len;
    int rc = put_event(b, event);
    if (rc != FALLBACK) return rc;
    b->len = start;
    PyObject *s = PyObject_CallOneArg(event_fallback, event);
    if (s == NULL) return -1;
    if (!PyUnicode_Check(s)) {
        Py_DECREF(s);
        PyErr_SetString(PyExc_TypeError, "event_to_json must return str");
        return -1;
    }
    rc = buf_str(b, s, 0);
    Py_DECREF(s);
    return rc;
}

/* the buffer of the last call, kept for the next one (not while a call is running: a Python helper may run
   another rendering, in this thread or another) */
static Buf spare;
static int spare_in_use;

static Buf buf_take(void) {
    Buf b = {NULL, 0, 0, 0};
    if (!spare_in_use) {
        spare_in_use = 1;
        b = spare;
        b.len = 0;
        b.surrogates = 0;
        spare.data = NULL;
        spare.cap = 0;
    }
    return b;
}

static void buf_release(Buf *b, int taken) {
    if (taken && b->cap <= (8 << 20)) {
        spare = *b;
        b->data = NULL;
    } else {
        PyMem_Free(b->data);
        b->data = NULL;
    }
    if (taken) spare_in_use = 0;
}

static int check_configured(void) {
    if (json_kind == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "mybinlog.protocol._jsonl_speedups: configure() was not called");
        return -1;
    }
    return 0;
}

/* the text: a str (mode 0), or UTF-8 bytes (mode 1; None when it holds a lone surrogate, which has no UTF-8) */
static PyObject *finish(Buf *b, int mode) {
    const char *data = b->data ? b->data : "";
    if (mode == 0) return PyUnicode_DecodeUTF8(data, b->len, "surrogatepass");
    if (b->surrogates) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize(data, b->len);
}

static PyObject *render(PyObject *events, int many, int mode) {
    if (check_configured() < 0) return NULL;
    int taken = !spare_in_use;
    Buf b = buf_take();
    PyObject *result = NULL;
    if (!many) {
        if (put_event_or_fallback(&b, events) < 0) goto done;
    } else {
        PyObject *seq = PySequence_Fast(events, "events_to_jsonl() needs a sequence of events");
        if (seq == NULL) goto done;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {  /* a list may shrink meanwhile */
            PyObject *event = PySequence_Fast_GET_ITEM(seq, i);
            Py_INCREF(event);
            int rc = put_event_or_fallback(&b, event);
            Py_DECREF(event);
            if (rc < 0 || buf_byte(&b, '\n') < 0) {
                Py_DECREF(seq);
                goto done;
            }
        }
        Py_DECREF(seq);
    }
    result = finish(&b, mode);
done:
    buf_release(&b, taken);
    return result;
}

/* Python twin: _format._py_event_to_json */
static PyObject *py_event_to_json(PyObject *self, PyObject *event) { return render(event, 0, 0); }

/* Python twin: _format._py_events_to_jsonl */
static PyObject *py_events_to_jsonl(PyObject *self, PyObject *events) { return render(events, 1, 0); }

/* Python twin: _format._py_events_to_jsonl(events).encode() (None where that raises: a lone surrogate) */
static PyObject *py_events_to_jsonl_utf8(PyObject *self, PyObject *events) { return render(events, 1, 1); }

/* Python twin: _format._ENCODE, the json encoder of column values (for the tests) */
static PyObject *py_value_to_json(PyObject *self, PyObject *value) {
    if (check_configured() < 0) return NULL;
    Buf b = {NULL, 0, 0, 0};
    PyObject *result = put_value(&b, value, 0) < 0 ? NULL : finish(&b, 0);
    PyMem_Free(b.data);
    return result;
}

/* no Python twin: _format._configure_compiled hands over the Python helpers */
static PyObject *py_configure(PyObject *self, PyObject *args) {
    PyObject *a[9];
    if (!PyArg_UnpackTuple(args, "configure", 9, 9, &a[0], &a[1], &a[2], &a[3], &a[4], &a[5], &a[6], &a[7], &a[8]))
        return NULL;
    PyObject *d = PyDict_New();
    if (d == NULL) return NULL;
    clear_caches();
    PyObject **slots[9] = {&json_kind,      &head_prefix, &rows_prefix,  &table_map_tail, &encode_value,
                           &event_fallback, &missing,     &decimal_type, &rows_json};
    for (int i = 0; i < 9; i++) {
        Py_INCREF(a[i]);
        Py_XSETREF(*slots[i], a[i]);
    }
    Py_XSETREF(kind_cache, d);
    Py_RETURN_NONE;
}

/* no Python twin: forgets the cached heads and tables (for the tests) */
static PyObject *py_clear_caches(PyObject *self, PyObject *unused) {
    clear_caches();
    if (kind_cache != NULL) PyDict_Clear(kind_cache);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", py_configure, METH_VARARGS,
     "configure(json_kind, head_prefix, rows_prefix, table_map_tail, encode_value, event_fallback, missing, "
     "decimal_type, rows_json): the Python helpers (called once by mybinlog.protocol._format)"},
    {"event_to_json", py_event_to_json, METH_O, "event_to_json(event) -> str: one JSON Lines record"},
    {"events_to_jsonl", py_events_to_jsonl, METH_O,
     "events_to_jsonl(events) -> str: the records of a sequence of events, each followed by a newline"},
    {"events_to_jsonl_utf8", py_events_to_jsonl_utf8, METH_O,
     "events_to_jsonl_utf8(events) -> bytes | None: the same text as UTF-8, or None when it has a lone surrogate"},
    {"value_to_json", py_value_to_json, METH_O, "value_to_json(value) -> str: one column value as JSON"},
    {"clear_caches", py_clear_caches, METH_NOARGS, "forget the cached heads and tables"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "mybinlog.protocol._jsonl_speedups",
    "The JSON Lines renderer's hot path in C (optional; the pure-Python renderer is the reference).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__jsonl_speedups(void) {
    PyDateTime_IMPORT;
    if (PyDateTimeAPI == NULL) return NULL;
    for (int i = 0; i < N_ATTRS; i++)
        if ((attr_names[i] = PyUnicode_InternFromString(attr_text[i])) == NULL) return NULL;
    if ((fixed_spec = PyUnicode_InternFromString("f")) == NULL) return NULL;
    return PyModule_Create(&module);
}
