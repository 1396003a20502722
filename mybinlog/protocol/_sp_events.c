/* Events: packet framing (frame_events), cutting a binlog file (cut_events), CRC32 (carry-less multiplication
 * where the CPU has it, slice-by-8 tables otherwise) and the decoder's fast loop (decode_events). */
#include "_speedups.h"

#include <structmember.h>

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

/* _speedups.crc32(data); Python twin: zlib.crc32 (protocol/_decoder.py, _crc32) */
PyObject *
mb_py_crc32(PyObject *module, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    uint32_t c = crc32_of(view.buf, view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(c);
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
/* no Python twin: protocol/_decoder.py (_c_decode_events) tells decode_events the event classes it builds */
PyObject *
mb_set_event_classes(PyObject *module, PyObject *arg)
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

/* _speedups.decode_events; Python twin: EventDecoder._decode_batch_python (protocol/_decoder.py) */
PyObject *
mb_decode_events(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
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
/* Python twin: the loop of read_binlog_file that cuts events when this stops (source/_files.py) */
PyObject *
mb_cut_events(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
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
/* Python twin: PacketFramer.next_batch (protocol/_packets.py) */
PyObject *
mb_frame_events(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
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

void
mb_events_init(void)
{
    crc_init();
#ifdef HAVE_CLMUL_CRC
    __builtin_cpu_init();
    use_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1") &&
                getenv("MYBINLOG_NO_CLMUL") == NULL;
#endif
}
