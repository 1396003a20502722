/* The JSON text writer shared by the compiled renderer (_jsonl.c), the row programs' render_json (_sp_render.c) and
   TsvRows (_sp_tsv.c): a growing UTF-8 buffer, numbers, dates and times as the pure-Python renderer writes them,
   JSON string escaping as json.encoder.encode_basestring (ensure_ascii=False) does it, and a strict UTF-8 validator.
   Everything here is static: each file that includes it gets its own copy. */

#ifndef MYBINLOG_JSONBUF_H
#define MYBINLOG_JSONBUF_H

#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* -- output buffer ------------------------------------------------------------------------------------------- */

typedef struct {
    char *data;
    Py_ssize_t len;
    Py_ssize_t cap;
    int surrogates;  /* a lone surrogate was written (as surrogatepass does): the text is not valid UTF-8 */
} Buf;

static inline int buf_grow(Buf *b, Py_ssize_t extra) {
    Py_ssize_t need = b->len + extra;
    if (need <= b->cap) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 4096;
    while (cap < need) {
        if (cap > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        cap *= 2;
    }
    char *p = PyMem_Realloc(b->data, (size_t)cap);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

#define BUF_RESERVE(b, n) (((b)->len + (Py_ssize_t)(n) <= (b)->cap) ? 0 : buf_grow((b), (Py_ssize_t)(n)))

static inline int buf_put(Buf *b, const char *s, Py_ssize_t n) {
    if (BUF_RESERVE(b, n) < 0) return -1;
    memcpy(b->data + b->len, s, (size_t)n);
    b->len += n;
    return 0;
}

#define BUF_LIT(b, s) buf_put((b), (s), (Py_ssize_t)(sizeof(s) - 1))

/* one code point as UTF-8 at p (surrogates too, as surrogatepass writes them); the end returned */
static inline char *put_cp(char *p, Py_UCS4 c) {
    if (c < 0x80) {
        *p++ = (char)c;
    } else if (c < 0x800) {
        *p++ = (char)(0xC0 | (c >> 6));
        *p++ = (char)(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {  /* surrogates too, as surrogatepass writes them */
        *p++ = (char)(0xE0 | (c >> 12));
        *p++ = (char)(0x80 | ((c >> 6) & 0x3F));
        *p++ = (char)(0x80 | (c & 0x3F));
    } else {
        *p++ = (char)(0xF0 | (c >> 18));
        *p++ = (char)(0x80 | ((c >> 12) & 0x3F));
        *p++ = (char)(0x80 | ((c >> 6) & 0x3F));
        *p++ = (char)(0x80 | (c & 0x3F));
    }
    return p;
}

static inline int buf_byte(Buf *b, char c) {
    if (BUF_RESERVE(b, 1) < 0) return -1;
    b->data[b->len++] = c;
    return 0;
}

static inline int buf_ll(Buf *b, long long v) {
    char tmp[24];
    char *end = tmp + sizeof(tmp), *p = end;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        *--p = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    if (v < 0) *--p = '-';
    return buf_put(b, p, end - p);
}

/* zero-padded decimal of at least `width` digits (v >= 0) */
static inline int buf_pad(Buf *b, long long v, int width) {
    char tmp[24];
    char *end = tmp + sizeof(tmp), *p = end;
    unsigned long long u = (unsigned long long)v;
    do {
        *--p = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    while (end - p < width) *--p = '0';
    return buf_put(b, p, end - p);
}


static inline int buf_ull(Buf *b, unsigned long long u) {
    char tmp[24];
    char *end = tmp + sizeof(tmp), *p = end;
    do {
        *--p = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    return buf_put(b, p, end - p);
}

/* The shortest decimal digits that read back as x (a positive normal double of moderate exponent), and the
   closest of them to x: Steele and White's free-format digit generation in exact integer arithmetic (64-bit when
   the scaled values fit, 128-bit otherwise). It gives up (returns 0) outside that range, and wherever Python's
   dtoa could decide differently: a candidate on the exact boundary of x's rounding interval, an exact tie between
   two candidates, a carry out of the last digit. Otherwise the digits are those of repr(x) (dtoa mode 0). Returns
   the digit count; *pdecpt is where the decimal point goes (x = 0.d1d2... * 10^decpt). */
typedef unsigned __int128 jb_u128;

static inline int shortest_digits(double x, char *digits, int *pdecpt) {
    static const uint64_t P10[20] = {
        1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL, 100000000ULL, 1000000000ULL,
        10000000000ULL, 100000000000ULL, 1000000000000ULL, 10000000000000ULL, 100000000000000ULL,
        1000000000000000ULL, 10000000000000000ULL, 100000000000000000ULL, 1000000000000000000ULL,
        10000000000000000000ULL,
    };
    uint64_t bits;
    memcpy(&bits, &x, 8);
    int be = (int)((bits >> 52) & 0x7FF);
    uint64_t f = bits & ((1ULL << 52) - 1);
    if (be == 0 || be == 0x7FF || (bits >> 63)) return 0;
    f |= 1ULL << 52;
    int e = be - 1075; /* x = f * 2^e */
    if (e < -80 || e > 10) return 0;
    int narrow = f == (1ULL << 52) && be > 1; /* the interval's lower half is half as wide */
    /* x = R/S; the rounding interval is (R - Mm, R + Mp) / S */
    jb_u128 R, S, Mp, Mm;
    if (e >= 0) {
        R = (jb_u128)f << (e + 1 + narrow);
        S = narrow ? 4 : 2;
        Mp = (jb_u128)1 << (e + narrow);
        Mm = (jb_u128)1 << e;
    } else {
        R = (jb_u128)f << (1 + narrow);
        S = (jb_u128)1 << (1 + narrow - e);
        Mp = narrow ? 2 : 1;
        Mm = 1;
    }
    int k = (int)((be - 1022) * 0.30102999566398120); /* about log10(x): corrected below */
    if (k >= 0) {
        if (k > 19) return 0;
        S *= P10[k];
    } else {
        if (-k > 19) return 0;
        R *= P10[-k];
        Mp *= P10[-k];
        Mm *= P10[-k];
    }
    while (R >= S) {
        S *= 10;
        k++;
    }
    while (R * 10 < S) {
        R *= 10;
        Mp *= 10;
        Mm *= 10;
        k--;
    }
    /* R/S is in [0.1, 1): digits follow. Mp and Mm grow tenfold per digit and end the loop once they pass the
       remainder, so nothing outgrows S times 10 (below 2^63 in the 64-bit loop, 2^90 in the other) */
    int n = 0;
    if (S < ((jb_u128)1 << 59)) {
        uint64_t r = (uint64_t)R, s = (uint64_t)S, mp = (uint64_t)Mp, mm = (uint64_t)Mm;
        for (;;) {
            r *= 10;
            mp *= 10;
            mm *= 10;
            unsigned d = (unsigned)(r / s);
            r -= (uint64_t)d * s;
            if (r == mm || r + mp == s) return 0;
            int low = r < mm, high = r + mp > s;
            if (!low && !high) {
                digits[n++] = (char)('0' + d);
                if (n > 17) return 0;
                continue;
            }
            if (low && high) {
                if (2 * r == s) return 0;
                d += 2 * r > s;
            } else
                d += high;
            if (d > 9) return 0;
            digits[n++] = (char)('0' + d);
            break;
        }
    } else {
        jb_u128 S2 = S << 1, S4 = S << 2, S8 = S << 3;
        for (;;) {
            R *= 10;
            Mp *= 10;
            Mm *= 10;
            unsigned d = 0;
            if (R >= S8) R -= S8, d += 8;
            if (R >= S4) R -= S4, d += 4;
            if (R >= S2) R -= S2, d += 2;
            if (R >= S) R -= S, d += 1;
            if (R == Mm || R + Mp == S) return 0;
            int low = R < Mm, high = R + Mp > S;
            if (!low && !high) {
                digits[n++] = (char)('0' + d);
                if (n > 17) return 0;
                continue;
            }
            if (low && high) {
                if ((R << 1) == S) return 0;
                d += (R << 1) > S;
            } else
                d += high;
            if (d > 9) return 0;
            digits[n++] = (char)('0' + d);
            break;
        }
    }
    *pdecpt = k;
    return n;
}

/* a float as Python's json writes it: repr (the shortest round-trip digits), NaN, Infinity, -Infinity */
static inline int buf_double(Buf *b, double x) {
    if (!isfinite(x)) {
        if (isnan(x)) return BUF_LIT(b, "NaN");
        return x > 0 ? BUF_LIT(b, "Infinity") : BUF_LIT(b, "-Infinity");
    }
    char digits[24];
    int decpt, n = shortest_digits(fabs(x), digits, &decpt);
    if (n == 0) { /* zero, subnormal, far exponents, the rare cases above: CPython's own repr */
        char *s = PyOS_double_to_string(x, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
        if (s == NULL) return -1;
        int rc = buf_put(b, s, (Py_ssize_t)strlen(s));
        PyMem_Free(s);
        return rc;
    }
    /* repr's layout: positional for 1e-4 <= |x| < 1e16, else d.ddde[+-]XX */
    if (BUF_RESERVE(b, 48) < 0) return -1;
    char *p = b->data + b->len;
    if (x < 0) *p++ = '-';
    if (decpt > -4 && decpt <= 16) {
        if (decpt <= 0) {
            *p++ = '0';
            *p++ = '.';
            memset(p, '0', (size_t)-decpt);
            p += -decpt;
            memcpy(p, digits, (size_t)n);
            p += n;
        } else if (decpt >= n) {
            memcpy(p, digits, (size_t)n);
            p += n;
            memset(p, '0', (size_t)(decpt - n));
            p += decpt - n;
            *p++ = '.';
            *p++ = '0';
        } else {
            memcpy(p, digits, (size_t)decpt);
            p += decpt;
            *p++ = '.';
            memcpy(p, digits + decpt, (size_t)(n - decpt));
            p += n - decpt;
        }
    } else {
        *p++ = digits[0];
        if (n > 1) {
            *p++ = '.';
            memcpy(p, digits + 1, (size_t)(n - 1));
            p += n - 1;
        }
        int ex = decpt - 1;
        *p++ = 'e';
        *p++ = ex < 0 ? '-' : '+';
        if (ex < 0) ex = -ex;
        if (ex >= 100) {
            *p++ = (char)('0' + ex / 100);
            ex %= 100;
        }
        *p++ = (char)('0' + ex / 10);
        *p++ = (char)('0' + ex % 10);
    }
    b->len = p - b->data;
    return 0;
}

/* YYYY-MM-DD, as date.isoformat() */
static inline int buf_date(Buf *b, int y, int m, int d) {
    if (buf_pad(b, y, 4) < 0 || buf_byte(b, '-') < 0 || buf_pad(b, m, 2) < 0 || buf_byte(b, '-') < 0) return -1;
    return buf_pad(b, d, 2);
}

/* "YYYY-MM-DDTHH:MM:SS[.ffffff][+00:00]", as datetime.isoformat() in quotes (microseconds only when not zero) */
static inline int buf_datetime(Buf *b, int y, int mo, int d, int h, int mi, int s, int us, int utc) {
    if (buf_byte(b, '"') < 0 || buf_date(b, y, mo, d) < 0 || buf_byte(b, 'T') < 0 || buf_pad(b, h, 2) < 0 ||
        buf_byte(b, ':') < 0 || buf_pad(b, mi, 2) < 0 || buf_byte(b, ':') < 0 || buf_pad(b, s, 2) < 0)
        return -1;
    if (us && (buf_byte(b, '.') < 0 || buf_pad(b, us, 6) < 0)) return -1;
    if (utc && BUF_LIT(b, "+00:00") < 0) return -1;
    return buf_byte(b, '"');
}

/* a duration of `total` microseconds as the renderer writes a timedelta: "[-]HH:MM:SS[.ffffff]" in quotes */
static inline int buf_duration(Buf *b, long long total) {
    if (buf_byte(b, '"') < 0) return -1;
    if (total < 0) {
        total = -total;
        if (buf_byte(b, '-') < 0) return -1;
    }
    long long us = total % 1000000LL, secs = total / 1000000LL;
    if (buf_pad(b, secs / 3600, 2) < 0 || buf_byte(b, ':') < 0 || buf_pad(b, (secs / 60) % 60, 2) < 0 ||
        buf_byte(b, ':') < 0 || buf_pad(b, secs % 60, 2) < 0)
        return -1;
    if (us && (buf_byte(b, '.') < 0 || buf_pad(b, us, 6) < 0)) return -1;
    return buf_byte(b, '"');
}

static const char HEX[] = "0123456789abcdef";

/* bytes as the renderer writes them: lower-case hex in quotes, then `pad` zero bytes ("00" each) */
static inline int buf_hex(Buf *b, const unsigned char *src, Py_ssize_t n, Py_ssize_t pad) {
    if (n > (PY_SSIZE_T_MAX - 2) / 2 - pad) {
        PyErr_NoMemory();
        return -1;
    }
    if (BUF_RESERVE(b, 2 * (n + pad) + 2) < 0) return -1;
    char *p = b->data + b->len;
    *p++ = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        *p++ = HEX[src[i] >> 4];
        *p++ = HEX[src[i] & 0xF];
    }
    memset(p, '0', (size_t)(2 * pad));
    p += 2 * pad;
    *p++ = '"';
    b->len = p - b->data;
    return 0;
}

static inline char *put_escaped_ascii(char *p, Py_UCS4 c) {
    switch (c) {
        case '"': *p++ = '\\'; *p++ = '"'; break;
        case '\\': *p++ = '\\'; *p++ = '\\'; break;
        case '\n': *p++ = '\\'; *p++ = 'n'; break;
        case '\r': *p++ = '\\'; *p++ = 'r'; break;
        case '\t': *p++ = '\\'; *p++ = 't'; break;
        case '\b': *p++ = '\\'; *p++ = 'b'; break;
        case '\f': *p++ = '\\'; *p++ = 'f'; break;
        default:
            *p++ = '\\'; *p++ = 'u'; *p++ = '0'; *p++ = '0';
            *p++ = HEX[(c >> 4) & 0xF];
            *p++ = HEX[c & 0xF];
    }
    return p;
}

#define NEEDS_ESCAPE(c) ((c) < 0x20 || (c) == '"' || (c) == '\\')

/* 8 bytes at once: is any of them below 0x20, '"' or '\\'? (exact for any bytes, UTF-8 lead and continuation
   bytes included: the ~w terms keep bytes >= 0x80 out) */
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
static inline uint64_t escape_hit(uint64_t w) {
    uint64_t q = w ^ 0x2222222222222222ULL, bs = w ^ 0x5C5C5C5C5C5C5C5CULL;
    return (((w - 0x20 * ONES) & ~w) | ((q - ONES) & ~q) | ((bs - ONES) & ~bs)) & HIGHS;
}

#ifdef __SSE2__
#include <emmintrin.h>
/* bit i set: byte i of src[0:16] must be looked at: below 0x20, '"' or '\\' (with `high`, any byte >= 0x80 too) */
static inline unsigned special16(const unsigned char *src, int high) {
    __m128i v = _mm_loadu_si128((const __m128i *)src);
    __m128i hit = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
    hit = _mm_or_si128(hit, _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1F)), v));
    unsigned m = (unsigned)_mm_movemask_epi8(hit);
    return high ? m | (unsigned)_mm_movemask_epi8(v) : m;
}
#endif

/* The length of the valid strict UTF-8 sequence starting at src[i] (a byte >= 0x80), or 0: invalid, overlong, a
   surrogate, past U+10FFFF, or cut by the end of the text */
static inline int utf8_sequence(const unsigned char *src, Py_ssize_t i, Py_ssize_t n) {
    unsigned char c = src[i];
    int len = c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
    if (!len || i + len > n) return 0;
    for (int k = 1; k < len; k++)
        if ((src[i + k] & 0xC0) != 0x80) return 0;
    if ((c == 0xE0 && src[i + 1] < 0xA0) || (c == 0xED && src[i + 1] >= 0xA0) || (c == 0xF0 && src[i + 1] < 0x90) ||
        (c == 0xF4 && src[i + 1] >= 0x90))
        return 0;
    return len;
}

/* src[0:n] as a JSON string literal, escaped as json's encode_basestring (ensure_ascii=False) does: characters
   below 0x20, '"' and '\\'. With `check`, the text must be valid strict UTF-8: when it is not, nothing is appended
   and 1 is returned. 0 when written, -1 on error (no memory). Plain runs are copied 16 bytes at a time (SSE2; 8 with
   SWAR otherwise), and within a block only the bytes to look at are visited. */
__attribute__((always_inline)) static inline int quote_text(Buf *b, const unsigned char *src, Py_ssize_t n, int check) {
    if (n > (PY_SSIZE_T_MAX - 2) / 6) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t start = b->len;
    /* room for the worst case (every character as \u00XX) when that is small; otherwise for the plain text
       first, and for the worst case of the rest at the first escape */
    Py_ssize_t room = n <= (1 << 16) ? 6 * n + 2 : n + 2;
    if (BUF_RESERVE(b, room + 16) < 0) return -1; /* 16: the slack of the 16-byte writes below */
    int roomy = room > n + 2;
    char *p = b->data + b->len;
    *p++ = '"';
    Py_ssize_t i = 0;
#define QUOTE_ESCAPE(c)                                              \
    do {                                                             \
        if (!roomy) {                                                \
            b->len = p - b->data;                                    \
            if (BUF_RESERVE(b, 6 * (n - i) + 17) < 0) return -1;     \
            p = b->data + b->len;                                    \
            roomy = 1;                                               \
        }                                                            \
        p = put_escaped_ascii(p, (c));                               \
    } while (0)
#ifdef __SSE2__
    unsigned char block[32] = {0}; /* a block and room to read 16 bytes from any offset in it */
    while (i + 16 <= n) {
        unsigned m = special16(src + i, check);
        /* no escape yet, or room for the worst case: the 16 bytes fit where they go */
        _mm_storeu_si128((__m128i *)p, _mm_loadu_si128((const __m128i *)(src + i)));
        if (!m) {
            p += 16;
            i += 16;
            continue;
        }
        memcpy(block, src + i, 16);
        Py_ssize_t done = 0; /* bytes of this block written */
        while (m) {
            int j = __builtin_ctz(m);
            memcpy(p, block + done, 16); /* the run up to byte j, and bytes that the next write covers (slack) */
            p += j - done;
            unsigned char c = block[j];
            if (c < 0x80) {
                i += j; /* for QUOTE_ESCAPE's room: the rest of the text starts here */
                QUOTE_ESCAPE(c);
                i -= j;
                done = j + 1;
            } else {
                int len = utf8_sequence(src, i + j, n);
                if (!len) goto invalid;
                memcpy(p, src + i + j, (size_t)len);
                p += len;
                done = j + len; /* may pass the block's end */
            }
            m = done >= 16 ? 0 : m & (~0u << done);
        }
        if (done < 16) {
            memcpy(p, block + done, 16);
            p += 16 - done;
            done = 16;
        }
        i += done;
    }
#endif
    while (i < n) {
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, src + i, 8);
            if ((check && (w & HIGHS)) || escape_hit(w)) break;
            memcpy(p, &w, 8);
            p += 8;
            i += 8;
        }
        Py_ssize_t stop = i + 8 < n ? i + 8 : n;
        while (i < stop) {
            unsigned char c = src[i];
            if (c >= 0x80 && check) {
                int len = utf8_sequence(src, i, n);
                if (!len) goto invalid;
                memcpy(p, src + i, (size_t)len);
                p += len;
                i += len;
                continue;
            }
            if (NEEDS_ESCAPE(c))
                QUOTE_ESCAPE(c);
            else
                *p++ = (char)c;
            i++;
        }
    }
#undef QUOTE_ESCAPE
    *p++ = '"';
    b->len = p - b->data;
    return 0;
invalid:
    b->len = start;
    return 1;
}

/* append the UTF-8 (or ASCII) text src[0:n] as a JSON string literal (see quote_text) */
static inline int buf_quoted_utf8(Buf *b, const unsigned char *src, Py_ssize_t n) { return quote_text(b, src, n, 0); }

/* the same when src is valid strict UTF-8 (0); when it is not, nothing is appended and 1 is returned (validation and
   buf_quoted_utf8 in one pass); -1 on error */
static inline int buf_quoted_checked(Buf *b, const unsigned char *src, Py_ssize_t n) { return quote_text(b, src, n, 1); }

#endif
