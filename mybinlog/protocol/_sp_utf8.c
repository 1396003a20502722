/* UTF-8 text into str, strict: the same str as bytes.decode("utf-8") (CPython's decoder, which raises the exact
 * error, takes any text this code does not accept). Two passes: a scalar loop per str kind, or the AVX-512 kernel
 * where the CPU has it (mb_utf8_init). Used by the row decoder (_sp_rows.c) and TsvRows (_sp_tsv.c). */
#include "_speedups.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

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

/* _speedups.utf8_simd(on): the tests' switch between the AVX-512 kernel and the scalar loop (no Python twin) */
PyObject *
mb_py_utf8_simd(PyObject *self, PyObject *on)
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

/* text values (_sp_rows.c, _sp_tsv.c); Python twin: bytes.decode("utf-8"), which also raises for invalid text */
PyObject *
mb_decode_utf8(const char *p, Py_ssize_t n)
{
    PyObject *u = utf8_fast((const unsigned char *)p, n);
    if (u != NULL || PyErr_Occurred())
        return u;
    return PyUnicode_DecodeUTF8(p, n, NULL);
}

/* _speedups.utf8(data), for the tests; Python twin: bytes(data).decode("utf-8") */
PyObject *
mb_py_utf8(PyObject *module, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *u = mb_decode_utf8(view.buf, view.len);
    PyBuffer_Release(&view);
    return u;
}

void
mb_utf8_init(void)
{
#ifdef HAVE_AVX512_UTF8
    __builtin_cpu_init();
    avx512_utf8_supported = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                            __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512vl") &&
                            __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512vbmi2");
    use_avx512_utf8 = avx512_utf8_supported && getenv("MYBINLOG_NO_AVX512") == NULL;
#endif
}
