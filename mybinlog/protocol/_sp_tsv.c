/* TsvRows(ops, python_row): the replicator's and the snapshot's rows encoder (a row of Python values -> one line of
 * TabSeparated fields, mybinlog/clickhouse/types/_encoders.py) in C. `ops` has one (kind, position, nullable,
 * encoder, arg) per ClickHouse column; the usual value of each kind is written here exactly as the generated Python
 * encoder writes it, anything else goes to the column's Python `encoder`, and a row this code cannot write (a value
 * the encoder refuses, a lone surrogate, a short row) is handed whole to `python_row`, the generated Python row
 * encoder, which writes it or raises its exact error. */
#include "_speedups.h"

#include <datetime.h> /* its C API is per file: taken in mb_tsv_init */

#include "_jsonbuf.h"

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
    if (!mb_dec_direct || Py_TYPE(v) != (PyTypeObject *)mb_Decimal)
        return 0;
    const MpdLayout *m = (const MpdLayout *)((const char *)v + mb_dec_mpd_offset);
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
    b->len = mb_put_plain_decimal(b->data + b->len, digits, nd, scale, (m->flags & 1) && !zero) - b->data;
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
        if (tz != Py_None && !(op->kind == TSV_TIMESTAMP && tz == mb_UTC))
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

/* TsvRows.encode_rows(rows); Python twin: the encoder make_rows_encoder generates (clickhouse/types/_encoders.py) */
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
            line = mb_decode_utf8(b.data, b.len);
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

int
mb_tsv_init(PyObject *module)
{
    PyDateTime_IMPORT;
    if (PyDateTimeAPI == NULL)
        return -1;
    return mb_add_type(module, "TsvRows", &TsvRowsType);
}
