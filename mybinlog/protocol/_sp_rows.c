/* RowProgram: a table's row image layout compiled once into a list of column instructions (Op), and
 * RowProgram.decode, which decodes every row image of a rows event into the rows of the generated pure-Python
 * decoder (mybinlog/protocol/_table.py, _compile_python), or gives up on the event (None). render_json is in
 * _sp_render.c, DECIMAL values in _sp_decimal.c, UTF-8 in _sp_utf8.c, binary JSON in _jsonb.c. */
#include "_speedups.h"

#include <datetime.h> /* its C API is per file: taken in mb_rows_init */

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

/* RowProgram(ncols, missing, before, after=None); built by _table.py (_row_program) from a TableMap */
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
        return mb_decode_utf8(p, n);
    case TEXT_TABLE:
        return decode_table(op, (const unsigned char *)p, n);
    case TEXT_CODEC:
    case TEXT_CODEC_ASCII:
        return PyUnicode_Decode(p, n, PyUnicode_AsUTF8(codec), NULL);
    case TEXT_UTF8_OR_BYTES: {
        PyObject *s = mb_decode_utf8(p, n);
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
            v = mb_decode_decimal(op, p);
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
                                                            (int)f.usec, mb_UTC, PyDateTimeAPI->DateTimeType);
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
int
mb_row_span(PyObject *const *args, Py_ssize_t nargs, const char *usage, PyObject **pbuf, const unsigned char **pdata,
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

/* RowProgram.decode(buf, pos, end); Python twin: the decoder _table._compile_python generates (protocol/_table.py) */
static PyObject *
RowProgram_decode(RowProgram *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *buf;
    const unsigned char *data;
    Py_ssize_t pos, end;
    int span = mb_row_span(args, nargs, "decode(buf, pos, end)", &buf, &data, &pos, &end);
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

static PyMethodDef RowProgram_methods[] = {
    {"decode", (PyCFunction)(void (*)(void))RowProgram_decode, METH_FASTCALL,
     "decode(buf, pos, end) -> list of rows, or None when the pure-Python decoder must decode this event"},
    {"render_json", (PyCFunction)(void (*)(void))mb_RowProgram_render_json, METH_FASTCALL,
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

int
mb_rows_init(PyObject *module)
{
    PyDateTime_IMPORT;
    if (PyDateTimeAPI == NULL)
        return -1;
    return mb_add_type(module, "RowProgram", &RowProgramType);
}
