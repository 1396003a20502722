/* DECIMAL values of the row programs: the MySQL digit groups read and checked (mb_decimal_digits, also for
 * render_json), and the Decimal built in place in CPython's _decimal object when its layout was checked at import
 * (mb_dec_direct_init), else through Decimal(str). The Python twin is decode_decimal (mybinlog/protocol/_values.py),
 * which also takes every value out of range. */
#include "_speedups.h"

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
int
mb_decimal_digits(const Op *op, const unsigned char *p, char *digits, int *negative)
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
 * libmpdec), so every DECIMAL (65 digits at most) fits. That layout is not a public API: mb_dec_direct_init checks it
 * on Decimals made by the constructor, then checks values built here against the constructor's (str and ==), and
 * leaves mb_dec_direct off (Decimal(str) for every value) when anything differs: another Python, a 32-bit libmpdec,
 * _pydecimal. */
#define DEC_RADIX 10000000000000000000ULL /* 10**19 */
int mb_dec_direct = 0;
Py_ssize_t mb_dec_mpd_offset;
static Py_ssize_t dec_data_offset;
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
    PyTypeObject *tp = (PyTypeObject *)mb_Decimal;
    PyObject *d = tp->tp_alloc(tp, 0);
    if (d == NULL)
        return NULL;
    *(Py_hash_t *)((char *)d + sizeof(PyObject)) = -1;
    MpdLayout *m = (MpdLayout *)((char *)d + mb_dec_mpd_offset);
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

/* the DECIMAL's value built directly (mb_dec_direct): the fields folded into words of 19 digits; NULL without an
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
char *
mb_put_plain_decimal(char *p, const char *digits, int nd, int scale, int negative)
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
    int len = (int)(mb_put_plain_decimal(text, digits, nd, sc, negative) - text);
    PyObject *s = PyUnicode_FromStringAndSize(text, len);
    if (s == NULL)
        return NULL;
    PyObject *d = PyObject_CallOneArg(mb_Decimal, s);
    Py_DECREF(s);
    return d;
}

/* a DECIMAL column's value, or NULL (no error set) for the value function; Python twin: _values.decode_decimal */
PyObject *
mb_decode_decimal(const Op *op, const unsigned char *p)
{
    if (mb_dec_direct) {
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
    int nd = mb_decimal_digits(op, p, digits, &negative);
    if (nd < 0)
        return NULL; /* out of range: the value function raises */
    return decimal_from_text(digits, nd, op->scale, negative);
}

/* whether a Decimal made by the constructor has the layout dec_build writes (see above); sets the offsets */
static int
dec_layout_matches(PyObject *d, int64_t exp, int64_t digits, int64_t len, const uint64_t *words, int negative)
{
    const MpdLayout *m = (const MpdLayout *)((const char *)d + mb_dec_mpd_offset);
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
    PyObject *d = PyObject_CallOneArg(mb_Decimal, s);
    Py_DECREF(s);
    return d;
}

/* turn mb_dec_direct on when Decimal has the layout dec_build writes: 0, or -1 with an error set (only for a failed
 * allocation or call; a different layout is not an error) */
int
mb_dec_direct_init(void)
{
    PyTypeObject *tp = (PyTypeObject *)mb_Decimal;
    mb_dec_direct = 0;
#ifndef __SIZEOF_INT128__
    return 0; /* decimal_direct needs 128-bit integers */
#endif
    if (!PyType_Check(mb_Decimal) || sizeof(void *) != 8 || (tp->tp_flags & Py_TPFLAGS_HAVE_GC) ||
        tp->tp_itemsize != 0 || tp->tp_alloc == NULL || getenv("MYBINLOG_NO_DIRECT_DECIMAL") != NULL)
        return 0;
    mb_dec_mpd_offset = (Py_ssize_t)(sizeof(PyObject) + sizeof(Py_hash_t));
    dec_data_offset = mb_dec_mpd_offset + (Py_ssize_t)sizeof(MpdLayout);
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
    dec_static_flags = ((const MpdLayout *)((const char *)a + mb_dec_mpd_offset))->flags;
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
    mb_dec_direct = 1;
    return 0;
}
