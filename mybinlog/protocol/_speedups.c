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
#include <string.h>

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
};

enum { TEXT_BYTES = 0, TEXT_CODEC = 1, TEXT_UTF8 = 2, TEXT_UTF8_OR_BYTES = 3, TEXT_CALL = 4 };

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
} Op;

typedef struct {
    Py_ssize_t nops;
    Py_ssize_t null_bytes;
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
        if (op->slot < 0 || op->slot >= ncols || op->kind < OP_INT || op->kind > OP_NULL) {
            PyErr_SetString(PyExc_ValueError, "bad row program op");
            Py_DECREF(fast);
            return -1;
        }
        Py_INCREF(obj);
        op->obj = obj;
        Py_INCREF(fallback);
        op->fallback = fallback;
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
            for (Py_ssize_t k = 0; k < nf; k++) {
                if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(ff, k), "iiI", &op->dec_bytes[k], &op->dec_digits[k],
                                      &op->dec_limit[k])) {
                    Py_DECREF(ff);
                    Py_DECREF(fast);
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

static PyObject *
decode_text(int mode, PyObject *codec, const char *p, Py_ssize_t n)
{
    switch (mode) {
    case TEXT_UTF8:
        return PyUnicode_DecodeUTF8(p, n, NULL);
    case TEXT_CODEC:
        return PyUnicode_Decode(p, n, PyUnicode_AsUTF8(codec), NULL);
    case TEXT_UTF8_OR_BYTES: {
        PyObject *s = PyUnicode_DecodeUTF8(p, n, NULL);
        if (s == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            PyErr_Clear();
            return PyBytes_FromStringAndSize(p, n);
        }
        return s;
    }
    case TEXT_CALL: {
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

static PyObject *
decode_decimal(Op *op, const unsigned char *p)
{
    unsigned int vals[16];
    int negative = !(p[0] & 0x80);
    const unsigned char *q = p;
    char digits[96];
    int nd = 0;
    for (int k = 0; k < op->dec_fields; k++) {
        int nb = op->dec_bytes[k];
        unsigned int v = (unsigned int)read_be(q, nb);
        unsigned int all = nb == 4 ? 0xFFFFFFFFu : ((1u << (8 * nb)) - 1);
        if (k == 0)
            v ^= 1u << (8 * nb - 1); /* the flipped sign bit */
        if (negative)
            v ^= all;
        if (k == 0 && negative)
            v &= all >> 1; /* after inversion the sign bit is set again: clear it */
        if (v >= op->dec_limit[k])
            return NULL; /* out of range: the value function raises */
        vals[k] = v;
        q += nb;
    }
    for (int k = 0; k < op->dec_fields; k++) {
        int w = op->dec_digits[k];
        if (w == 0)
            continue;
        nd += snprintf(digits + nd, sizeof(digits) - nd, "%0*u", w, vals[k]);
    }
    int start = 0;
    while (start < nd - 1 && digits[start] == '0')
        start++;
    int zero = (nd == 0) || (nd - start == 1 && digits[start] == '0');
    char text[128];
    int len;
    if (nd == 0) {
        digits[0] = '0';
        nd = 1;
        start = 0;
    }
    if (op->scale)
        len = snprintf(text, sizeof(text), "%s%.*sE-%d", (negative && !zero) ? "-" : "", nd - start, digits + start,
                       op->scale);
    else
        len = snprintf(text, sizeof(text), "%s%.*s", (negative && !zero) ? "-" : "", nd - start, digits + start);
    PyObject *s = PyUnicode_FromStringAndSize(text, len);
    if (s == NULL)
        return NULL;
    PyObject *d = PyObject_CallOneArg(Decimal, s);
    Py_DECREF(s);
    return d;
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
            unsigned int th = p[0];
            unsigned long long tl = read_be(p + 1, 4);
            unsigned long long frac = op->a ? read_be(p + 5, op->a) * (unsigned)op->b : 0;
            v = NULL;
            if (th >= 128) {
                long long ym = ((long long)(th - 128) << 10) | (long long)(tl >> 22);
                unsigned long long hms = tl & 0x1FFFF;
                int year = (int)(ym / 13), month = (int)(ym % 13);
                if (year >= 1 && year <= 9999 && frac < 1000000) {
                    v = PyDateTimeAPI->DateTime_FromDateAndTime(
                        year, month, (int)(tl >> 17 & 31), (int)(hms >> 12), (int)(hms >> 6 & 63), (int)(hms & 63),
                        (int)frac, Py_None, PyDateTimeAPI->DateTimeType);
                    if (v == NULL) {
                        if (!PyErr_ExceptionMatches(PyExc_ValueError) && !PyErr_ExceptionMatches(PyExc_OverflowError))
                            goto fail_row;
                        PyErr_Clear();
                    }
                }
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
            unsigned long long secs = read_be(p, 4);
            if (secs) {
                unsigned long long usec = op->a ? read_be(p + 4, op->a) * (unsigned)op->b : 0;
                secs += usec / 1000000;
                usec %= 1000000;
                int y, m, d;
                civil_from_days((long long)(secs / 86400), &y, &m, &d);
                unsigned long long rem = secs % 86400;
                v = PyDateTimeAPI->DateTime_FromDateAndTime(y, m, d, (int)(rem / 3600), (int)(rem / 60 % 60),
                                                            (int)(rem % 60), (int)usec, UTC,
                                                            PyDateTimeAPI->DateTimeType);
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
                if (v == NULL) {
                    if (!PyErr_ExceptionMatches(PyExc_ValueError) && !PyErr_ExceptionMatches(PyExc_OverflowError))
                        goto fail_row;
                    PyErr_Clear();
                }
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
                v = decode_text(op->b, op->obj, s, n);
            pos += n;
            break;
        }
        case OP_BLOB: {
            NEED(op->a);
            Py_ssize_t n = (Py_ssize_t)read_le(p, op->a);
            pos += op->a;
            if (n < 0 || n > end - pos)
                goto fail_row;
            v = decode_text(op->b, op->obj, (const char *)data + pos, n);
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
    /* absent columns (a MINIMAL or NOBLOB image) */
    for (Py_ssize_t k = 0; k < ncols; k++) {
        if (PyTuple_GET_ITEM(row, k) == NULL) {
            Py_INCREF(self->missing);
            PyTuple_SET_ITEM(row, k, self->missing);
        }
    }
    *ppos = pos;
    return row;
fail:
    PyErr_SetString(PyExc_IndexError, "row image runs past its event");
fail_row:
    Py_DECREF(row);
    return NULL;
}

static PyObject *
RowProgram_decode(RowProgram *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "decode(buf, pos, end)");
        return NULL;
    }
    PyObject *buf = args[0];
    if (!PyBytes_Check(buf))
        Py_RETURN_NONE;
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    Py_ssize_t end = PyLong_AsSsize_t(args[2]);
    if ((pos == -1 || end == -1) && PyErr_Occurred())
        return NULL;
    const unsigned char *data = (const unsigned char *)PyBytes_AS_STRING(buf);
    if (pos < 0 || end > PyBytes_GET_SIZE(buf) || pos > end)
        Py_RETURN_NONE;
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

static PyMethodDef RowProgram_methods[] = {
    {"decode", (PyCFunction)(void (*)(void))RowProgram_decode, METH_FASTCALL,
     "decode(buf, pos, end) -> list of rows, or None when the pure-Python decoder must decode this event"},
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

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT, .m_name = "mybinlog.protocol._speedups",
    .m_doc = "The optional compiled core of mybinlog's decoder (see mybinlog/protocol/_accel.py).", .m_size = -1,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    PyDateTime_IMPORT;
    if (PyDateTimeAPI == NULL)
        return NULL;
    PyObject *decimal = PyImport_ImportModule("decimal");
    if (decimal == NULL)
        return NULL;
    Decimal = PyObject_GetAttrString(decimal, "Decimal");
    Py_DECREF(decimal);
    if (Decimal == NULL)
        return NULL;
    UTC = PyDateTimeAPI->TimeZone_UTC;
    Py_INCREF(UTC);
    if (PyType_Ready(&RowProgramType) < 0)
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
    return m;
}
