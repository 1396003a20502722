/* RowProgram.render_json: the rows of a rows event written as JSON text straight from the row images, for
 * `mybinlog dump --format jsonl` (the same bytes as the JSON Lines renderer, mybinlog/protocol/_format.py, writes
 * from the decoded values), or None. Shares the row program (Op, Image) and the temporal fields with _sp_rows.c and
 * the JSON writer (Buf) with _jsonl.c (_jsonbuf.h). */
#include "_speedups.h"
#include "_jsonbuf.h"

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
    int nd = mb_decimal_digits(op, p, digits, &negative);
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

/* RowProgram.render_json(buf, pos, end); Python twin: _format._json_rows, _json_update_rows (protocol/_format.py) */
PyObject *
mb_RowProgram_render_json(RowProgram *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *buf;
    const unsigned char *data;
    Py_ssize_t pos, end;
    int span = mb_row_span(args, nargs, "render_json(buf, pos, end)", &buf, &data, &pos, &end);
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
