/*
 * Compiled kernels for the hot loops of grading a million-row submission.
 *
 * Each kernel has a NumPy, pandas or Arrow counterpart (used when this module is not built, or
 * when MLEAUDIT_NO_NATIVE is set) and returns exactly what that counterpart returns; the tests
 * compare the two on random and edge-case input. Inputs are contiguous buffers handed over by
 * grading.metrics.native: Arrow large_string columns as their int64 offsets and UTF-8 bytes,
 * float64 and int64 arrays. Each kernel checks that what it is given fits (offsets within
 * the bytes, rows within the column, output sizes) and raises ValueError rather than read or
 * write out of bounds. The GIL is released while a kernel loops, so the caller may run two
 * kernels in two threads.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A text column: cell i is data[offsets[i] .. offsets[i + 1]). */
typedef struct {
    const int64_t *offsets;
    const unsigned char *data;
    const unsigned char *limit; /* the end of the data buffer: 8-byte reads stop before it */
    Py_ssize_t n;               /* cells */
} text_column;

static int
text_column_from(Py_buffer *offsets, Py_buffer *data, text_column *out)
{
    if (offsets->len % 8 != 0 || offsets->len < 8) {
        PyErr_SetString(PyExc_ValueError, "offsets must be int64 with at least one entry");
        return -1;
    }
    out->offsets = (const int64_t *)offsets->buf;
    out->data = (const unsigned char *)data->buf;
    out->limit = out->data + data->len;
    out->n = offsets->len / 8 - 1;
    /* Offsets must stay inside the data buffer and never decrease. */
    for (Py_ssize_t i = 0; i <= out->n; i++) {
        int64_t at = out->offsets[i];
        if (at < 0 || at > data->len || (i > 0 && at < out->offsets[i - 1])) {
            PyErr_SetString(PyExc_ValueError, "offsets out of bounds of the data buffer");
            return -1;
        }
    }
    return 0;
}

/* ---- words of bytes ------------------------------------------------------------------------- */

/* The n < 8 bytes at p as a little-endian word (a loop, not a memcpy call of variable size). */
static inline uint64_t
load_tail(const unsigned char *p, size_t n)
{
    uint64_t w = 0;
    for (size_t k = 0; k < n; k++)
        w |= (uint64_t)p[k] << (8 * k);
    return w;
}

/* The 8 bytes at p as a little-endian word, fewer (zero-filled) where the buffer ends first. */
static inline uint64_t
load_word(const unsigned char *p, const unsigned char *limit)
{
    if (limit - p >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        return w;
    }
    return load_tail(p, (size_t)(limit - p));
}

/* Bytes 0 .. n - 1 of a word, n <= 8. */
static inline uint64_t
low_bytes(size_t n)
{
    return n >= 8 ? ~0ULL : (1ULL << (8 * n)) - 1;
}

/* The 8 bytes ending at p (p - 8 .. p - 1) as a little-endian word; bytes before `start` read
 * as ASCII "0". */
static inline uint64_t
word_ending(const unsigned char *p, const unsigned char *start)
{
    if (p - start >= 8) {
        uint64_t w;
        memcpy(&w, p - 8, 8);
        return w;
    }
    size_t n = (size_t)(p - start);
    return (load_tail(start, n) << (8 * (8 - n))) | (0x3030303030303030ULL >> (8 * n));
}

/* ---- text_join ----------------------------------------------------------------------------- */

/* A 64-bit hash of a byte string: 8 bytes at a time, multiply-xorshift mixing (the finaliser
 * of MurmurHash3 / SplitMix64). Collisions only cost a comparison of the bytes. */
static inline uint64_t
hash_bytes(const unsigned char *p, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
        p += 8;
        n -= 8;
    }
    if (n) {
        h = (h ^ load_tail(p, n)) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
    }
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ULL;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBULL;
    return h ^ (h >> 31);
}

static inline int
same_text(const text_column *a, Py_ssize_t i, const text_column *b, Py_ssize_t j)
{
    int64_t na = a->offsets[i + 1] - a->offsets[i], nb = b->offsets[j + 1] - b->offsets[j];
    if (na != nb)
        return 0;
    const unsigned char *p = a->data + a->offsets[i], *q = b->data + b->offsets[j];
    size_t n = (size_t)na;
    for (; n >= 8; n -= 8, p += 8, q += 8) {
        uint64_t x, y;
        memcpy(&x, p, 8);
        memcpy(&y, q, 8);
        if (x != y)
            return 0;
    }
    return load_tail(p, n) == load_tail(q, n);
}

/* How many rows ahead of the one in use the loops prefetch. */
#define PREFETCH_AHEAD 16
#define TAG_MASK 0xFFFFFFFF00000000ULL
/* A slot's row + 1 takes the low 31 bits; bit 31 marks a text already matched by a row. */
#define ROW_MASK 0x7FFFFFFFULL
#define USED 0x80000000ULL

/*
 * order[j] = the row i of `values` whose text equals value_set[j], when `values` holds each
 * text of `value_set` exactly once and nothing else. Returns 1 on success, 0 when the columns
 * are not shown to be such a reordering, -1 when out of memory.
 *
 * Open addressing with linear probing over a power-of-two table at most half full, entered at
 * the hash's low bits; a slot holds the high 32 bits of the text's hash, its row + 1 and
 * whether a row matched it. Rows are matched on those 32 bits within the probe run, without
 * reading any text (which would cost two dependent cache misses per row); every pair matched
 * so is then compared byte for byte in one pass whose reads are independent of each other. A
 * hash collision can therefore only make the function return 0 (the caller's general path
 * then decides), never a wrong order. Hashes are computed in a sequential pass first, so the
 * random table accesses can be prefetched a few rows ahead.
 */
static int
join_texts(const text_column *values, const text_column *value_set, int64_t *order)
{
    Py_ssize_t n = value_set->n;
    if (values->n != n)
        return 0;
    if (n == 0)
        return 1;
    if ((uint64_t)n >= ROW_MASK)
        return 0;
    size_t capacity = 16;
    while (capacity < 2 * (size_t)n)
        capacity <<= 1;
    size_t mask = capacity - 1;
    uint64_t *slots = calloc(capacity, sizeof(uint64_t));
    uint64_t *hashes = malloc((size_t)n * sizeof(uint64_t));
    if (!slots || !hashes) {
        free(slots);
        free(hashes);
        return -1;
    }
    int result = 1;
    for (Py_ssize_t j = 0; j < n; j++) {
        int64_t at = value_set->offsets[j];
        hashes[j] = hash_bytes(value_set->data + at, (size_t)(value_set->offsets[j + 1] - at));
    }
    for (Py_ssize_t j = 0; j < n && result; j++) {
        if (j + PREFETCH_AHEAD < n)
            __builtin_prefetch(&slots[hashes[j + PREFETCH_AHEAD] & mask], 1);
        uint64_t h = hashes[j], tag = h & TAG_MASK;
        for (size_t s = h & mask;; s = (s + 1) & mask) {
            uint64_t slot = slots[s];
            if (slot == 0) {
                slots[s] = tag | (uint64_t)(j + 1);
                break;
            }
            if ((slot & TAG_MASK) == tag) {
                result = 0; /* a repeated text (or a collision): the general path decides */
                break;
            }
        }
    }
    for (Py_ssize_t i = 0; i < n && result; i++) {
        int64_t at = values->offsets[i];
        hashes[i] = hash_bytes(values->data + at, (size_t)(values->offsets[i + 1] - at));
    }
    for (Py_ssize_t i = 0; i < n && result; i++) {
        if (i + PREFETCH_AHEAD < n)
            __builtin_prefetch(&slots[hashes[i + PREFETCH_AHEAD] & mask], 1);
        uint64_t h = hashes[i], tag = h & TAG_MASK;
        size_t s = h & mask;
        for (; slots[s] != 0 && (slots[s] & TAG_MASK) != tag; s = (s + 1) & mask)
            ;
        uint64_t slot = slots[s];
        if (slot == 0 || (slot & USED)) {
            result = 0; /* an unknown text, or a second row with one text */
        } else {
            slots[s] = slot | USED; /* in the cache already, unlike order[] */
            order[(slot & ROW_MASK) - 1] = i;
        }
    }
    free(slots);
    free(hashes);
    /* n rows, each matched to a different one of n texts: every text is matched. Confirm each
     * match on the bytes; the reads of one row do not wait for another's. */
    for (Py_ssize_t j = 0; j < n && result; j++) {
        if (j + PREFETCH_AHEAD < n)
            __builtin_prefetch(&values->offsets[order[j + PREFETCH_AHEAD]], 0);
        if (!same_text(values, (Py_ssize_t)order[j], value_set, j))
            result = 0;
    }
    return result;
}

static PyObject *
py_text_join(PyObject *self, PyObject *args)
{
    Py_buffer vo, vd, so, sd, out;
    if (!PyArg_ParseTuple(args, "y*y*y*y*w*", &vo, &vd, &so, &sd, &out))
        return NULL;
    text_column values, value_set;
    int result = -2;
    if (text_column_from(&vo, &vd, &values) == 0 && text_column_from(&so, &sd, &value_set) == 0) {
        if (out.len != value_set.n * 8) {
            PyErr_SetString(PyExc_ValueError, "order must be int64 with one entry per text of value_set");
        } else {
            Py_BEGIN_ALLOW_THREADS
            result = join_texts(&values, &value_set, (int64_t *)out.buf);
            Py_END_ALLOW_THREADS
            if (result < 0)
                PyErr_NoMemory();
        }
    }
    PyBuffer_Release(&vo);
    PyBuffer_Release(&vd);
    PyBuffer_Release(&so);
    PyBuffer_Release(&sd);
    PyBuffer_Release(&out);
    if (result < 0)
        return NULL;
    return PyBool_FromLong(result);
}

/* ---- same_texts ----------------------------------------------------------------------------- */

/* Whether two columns hold the same texts row by row: the offsets, taken from each column's
 * first, agree everywhere, and then the bytes are one run in each column, compared at once.
 * The offsets are checked against the buffers in the same pass (no separate check). */
static int
same_texts(const int64_t *a, Py_ssize_t a_len, const int64_t *b, Py_ssize_t b_len, Py_ssize_t n,
           const unsigned char *a_data, const unsigned char *b_data, int *in_bounds)
{
    int64_t differ = 0, decreasing = 0;
    for (Py_ssize_t i = 1; i <= n; i++) {
        differ |= (a[i] - a[0]) ^ (b[i] - b[0]);
        decreasing |= (a[i] - a[i - 1]) | (b[i] - b[i - 1]); /* the sign bit of any negative step */
    }
    *in_bounds = a[0] >= 0 && b[0] >= 0 && decreasing >= 0 && a[n] <= a_len && b[n] <= b_len;
    if (!*in_bounds || differ)
        return 0;
    return memcmp(a_data + a[0], b_data + b[0], (size_t)(a[n] - a[0])) == 0;
}

static PyObject *
py_same_texts(PyObject *self, PyObject *args)
{
    Py_buffer ao, ad, bo, bd;
    if (!PyArg_ParseTuple(args, "y*y*y*y*", &ao, &ad, &bo, &bd))
        return NULL;
    int result = 0, in_bounds = 0;
    if (ao.len % 8 == 0 && ao.len >= 8 && ao.len == bo.len) {
        Py_BEGIN_ALLOW_THREADS
        result = same_texts(ao.buf, ad.len, bo.buf, bd.len, ao.len / 8 - 1, ad.buf, bd.buf, &in_bounds);
        Py_END_ALLOW_THREADS
    } else if (ao.len % 8 == 0 && bo.len % 8 == 0 && ao.len >= 8 && bo.len >= 8) {
        in_bounds = 1; /* different row counts: not the same texts */
    }
    PyBuffer_Release(&ao);
    PyBuffer_Release(&ad);
    PyBuffer_Release(&bo);
    PyBuffer_Release(&bd);
    if (!in_bounds) {
        PyErr_SetString(PyExc_ValueError, "offsets must be non-decreasing int64 within the data buffers");
        return NULL;
    }
    return PyBool_FromLong(result);
}

/* ---- integer keys ----------------------------------------------------------------------------- */

/* Digits a key may have: two 8-byte words of them (and any 16-digit number fits an int64). */
#define MAX_KEY_DIGITS 16

/*
 * keys[i] = the number spelled by the digits ending text i, when every text is `prefix`
 * followed by 1 to 16 ASCII digits (ids like "id0000042" or "12345"). Returns 0 and fills
 * stats (fewest digits, most digits, whether some text's digits start with a 0 and there are
 * several of them) on success, 1 when some text does not have that form.
 *
 * Two such texts are equal exactly when their numbers are, provided the digits either all
 * take one width or never start with a redundant 0 ("7" and "007" spell one number): the
 * caller checks that from stats, across both columns it joins.
 */
/* Whether the 8 bytes of w are all ASCII digits (simdjson's is_made_of_eight_digits_fast). */
static inline int
eight_digits(uint64_t w)
{
    return ((w & 0xF0F0F0F0F0F0F0F0ULL) | (((w + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) >> 4)) ==
           0x3333333333333333ULL;
}

/* The number spelled by 8 ASCII digits read as a little-endian word, the first byte the most
 * significant digit: three multiplications (simdjson's parse_eight_digits_unrolled, after
 * D. Lemire, "Faster parsing of integers", 2022). */
static inline uint64_t
parse_eight_digits(uint64_t w)
{
    w -= 0x3030303030303030ULL;
    w = (w * 10) + (w >> 8);
    return (((w & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32))) +
            (((w >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32)))) >> 32;
}

/* The value of the `digits` (1..16) ASCII digits ending at p, or -1 if some byte is not one. */
static inline int64_t
parse_digits(const unsigned char *p, Py_ssize_t digits, const unsigned char *start)
{
    /* The last up to 8 digits, the bytes before them replaced by "0"s; then the ones before. */
    Py_ssize_t low_count = digits < 8 ? digits : 8;
    uint64_t keep = low_count >= 8 ? ~0ULL : ~0ULL << (8 * (8 - low_count));
    uint64_t low = (word_ending(p, start) & keep) | (0x3030303030303030ULL & ~keep);
    if (!eight_digits(low))
        return -1;
    int64_t value = (int64_t)parse_eight_digits(low);
    if (digits > 8) {
        Py_ssize_t high_count = digits - 8;
        keep = ~0ULL << (8 * (8 - high_count));
        uint64_t high = (word_ending(p - 8, start) & keep) | (0x3030303030303030ULL & ~keep);
        if (!eight_digits(high))
            return -1;
        value += (int64_t)parse_eight_digits(high) * 100000000LL;
    }
    return value;
}

/*
 * keys[i] = the number spelled by the digits ending text i, when every text is `prefix`
 * followed by 1 to 16 ASCII digits (ids like "id0000042" or "12345"). Returns 0 and fills
 * stats (fewest digits, most digits, whether some text's digits start with a 0 and there are
 * several of them) on success, 1 when some text does not have that form.
 *
 * Two such texts are equal exactly when their numbers are, provided the digits either all
 * take one width or never start with a redundant 0 ("7" and "007" spell one number): the
 * caller checks that from stats, across both columns it joins.
 */
static int
digit_suffix_keys(const text_column *texts, const unsigned char *prefix, Py_ssize_t prefix_size, int64_t *keys,
                  Py_ssize_t stats[3])
{
    Py_ssize_t fewest = MAX_KEY_DIGITS + 1, most = 0, padded = 0;
    int short_prefix = prefix_size <= 8;
    uint64_t prefix_word = short_prefix ? load_tail(prefix, (size_t)prefix_size) : 0;
    uint64_t prefix_mask = low_bytes((size_t)prefix_size);
    for (Py_ssize_t i = 0; i < texts->n; i++) {
        const unsigned char *p = texts->data + texts->offsets[i];
        Py_ssize_t size = (Py_ssize_t)(texts->offsets[i + 1] - texts->offsets[i]);
        Py_ssize_t digits = size - prefix_size;
        if (digits < 1 || digits > MAX_KEY_DIGITS)
            return 1;
        if (short_prefix ? (load_word(p, texts->limit) & prefix_mask) != prefix_word
                         : memcmp(p, prefix, (size_t)prefix_size) != 0)
            return 1;
        int64_t value = parse_digits(p + size, digits, texts->data);
        if (value < 0)
            return 1;
        keys[i] = value;
        fewest = digits < fewest ? digits : fewest;
        most = digits > most ? digits : most;
        padded |= p[prefix_size] == '0' && digits > 1;
    }
    stats[0] = fewest;
    stats[1] = most;
    stats[2] = padded;
    return 0;
}

static PyObject *
py_digit_suffix_keys(PyObject *self, PyObject *args)
{
    Py_buffer offsets, data, prefix, out;
    if (!PyArg_ParseTuple(args, "y*y*y*w*", &offsets, &data, &prefix, &out))
        return NULL;
    text_column texts;
    int status = -1;
    Py_ssize_t stats[3] = {0, 0, 0};
    if (text_column_from(&offsets, &data, &texts) == 0) {
        if (out.len != texts.n * 8) {
            PyErr_SetString(PyExc_ValueError, "keys must be int64 with one entry per text");
        } else {
            Py_BEGIN_ALLOW_THREADS
            status = digit_suffix_keys(&texts, prefix.buf, prefix.len, out.buf, stats);
            Py_END_ALLOW_THREADS
        }
    }
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&data);
    PyBuffer_Release(&prefix);
    PyBuffer_Release(&out);
    if (status < 0)
        return NULL;
    if (status > 0)
        Py_RETURN_NONE;
    return Py_BuildValue("nnO", stats[0], stats[1], stats[2] ? Py_True : Py_False);
}

/*
 * order[j] = the row i with keys[i] == key_set[j], when `keys` holds each number of `key_set`
 * exactly once and nothing else, by direct addressing: a table with a place per number from
 * low to high (the caller keeps high - low small). Returns 1 on success, 0 when the keys are
 * not such a reordering, -1 when out of memory.
 *
 * Each key's row + 1 is written at its place; each number of key_set then takes the row at
 * its place and clears it. order may be key_set itself (each entry is read before its place
 * is written). All n lookups succeed exactly when the n keys are distinct (else a
 * place holds fewer than n rows) and each number of key_set is found once (a second lookup
 * of a number finds its place cleared).
 */
static int
dense_key_join(const int64_t *keys, const int64_t *key_set, Py_ssize_t n, int64_t low, int64_t high, int64_t *order)
{
    if (n == 0)
        return 1;
    if ((uint64_t)n >= UINT32_MAX)
        return 0;
    size_t span = (size_t)((uint64_t)high - (uint64_t)low) + 1; /* high >= low: no overflow */
    uint32_t *table = calloc(span, sizeof(uint32_t));
    if (!table)
        return -1;
    int result = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t key = keys[i];
        if (key < low || key > high) {
            result = 0;
            break;
        }
        table[key - low] = (uint32_t)(i + 1);
    }
    for (Py_ssize_t j = 0; j < n && result; j++) {
        int64_t key = key_set[j];
        if (key < low || key > high) {
            result = 0;
            break;
        }
        uint32_t row = table[key - low];
        table[key - low] = 0;
        if (row == 0)
            result = 0;
        order[j] = (int64_t)row - 1;
    }
    free(table);
    return result;
}

static PyObject *
py_dense_key_join(PyObject *self, PyObject *args)
{
    Py_buffer keys, key_set, out;
    long long low, high;
    if (!PyArg_ParseTuple(args, "y*y*LLw*", &keys, &key_set, &low, &high, &out))
        return NULL;
    int result = -2;
    /* The table takes 4 bytes per number from low to high: at most a few per key. */
    uint64_t span = (uint64_t)high - (uint64_t)low;
    if (keys.len != key_set.len || keys.len % 8 || out.len != key_set.len || high < low ||
        span > 4 * (uint64_t)(key_set.len / 8) + 1024) {
        PyErr_SetString(PyExc_ValueError,
                        "keys, key_set and order must be int64 of one length; low <= high, at most 4 numbers per key apart");
    } else {
        Py_BEGIN_ALLOW_THREADS
        result = dense_key_join(keys.buf, key_set.buf, key_set.len / 8, low, high, out.buf);
        Py_END_ALLOW_THREADS
        if (result < 0)
            PyErr_NoMemory();
    }
    PyBuffer_Release(&keys);
    PyBuffer_Release(&key_set);
    PyBuffer_Release(&out);
    if (result < 0)
        return NULL;
    return PyBool_FromLong(result);
}

/* ---- inverse of a reordering ---------------------------------------------------------------- */

/* place[order[j]] = j for a reordering `order` of 0 .. n - 1 (a ValueError when an entry is out
 * of range; repeats are the caller's to rule out). The writes are random: the ones a few rows
 * ahead are prefetched for writing. */
static PyObject *
py_inverse_order(PyObject *self, PyObject *args)
{
    Py_buffer order_buffer, out;
    if (!PyArg_ParseTuple(args, "y*w*", &order_buffer, &out))
        return NULL;
    const int64_t *order = order_buffer.buf;
    int64_t *place = out.buf;
    Py_ssize_t n = order_buffer.len / 8;
    int ok = order_buffer.len % 8 == 0 && out.len == order_buffer.len;
    if (ok) {
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t j = 0; j < n; j++) {
            int64_t row = order[j];
            if (row < 0 || row >= n) {
                ok = 0;
                break;
            }
            if (j + PREFETCH_AHEAD < n && order[j + PREFETCH_AHEAD] >= 0 && order[j + PREFETCH_AHEAD] < n)
                __builtin_prefetch(&place[order[j + PREFETCH_AHEAD]], 1);
            place[row] = j;
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&order_buffer);
    PyBuffer_Release(&out);
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "order must be int64 rows 0 .. n - 1; place as long");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ---- taking texts at given rows ------------------------------------------------------------- */

/*
 * A column made of the texts at rows order[0], order[1], ... of another, in two steps so the
 * caller can allocate the bytes and split the copying between threads: taken_offsets fills
 * the new column's offsets (one more than order) and returns the total size; copy_taken_texts
 * copies the texts of a stretch of those rows to their places in the new buffer.
 */
static PyObject *
py_taken_offsets(PyObject *self, PyObject *args)
{
    Py_buffer offsets, order_buffer, out;
    if (!PyArg_ParseTuple(args, "y*y*w*", &offsets, &order_buffer, &out))
        return NULL;
    const int64_t *source = offsets.buf, *order = order_buffer.buf;
    int64_t *new_offsets = out.buf;
    Py_ssize_t rows = offsets.len / 8 - 1, n = order_buffer.len / 8;
    int64_t total = 0;
    int ok = offsets.len % 8 == 0 && rows >= 0 && order_buffer.len % 8 == 0 && out.len == (n + 1) * 8;
    if (ok) {
        Py_BEGIN_ALLOW_THREADS
        /* One pass over the rows: each is checked as it is read (the reads are random). */
        new_offsets[0] = 0;
        for (Py_ssize_t j = 0; j < n; j++) {
            int64_t row = order[j];
            if (row < 0 || row >= rows) {
                ok = 0;
                break;
            }
            if (j + PREFETCH_AHEAD < n) {
                int64_t ahead = order[j + PREFETCH_AHEAD];
                if (ahead >= 0 && ahead < rows)
                    __builtin_prefetch(&source[ahead], 0);
            }
            int64_t size = source[row + 1] - source[row];
            if (size < 0) {
                ok = 0;
                break;
            }
            total += size;
            new_offsets[j + 1] = total;
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&order_buffer);
    PyBuffer_Release(&out);
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "order must be int64 rows of the column; new_offsets one longer");
        return NULL;
    }
    return PyLong_FromLongLong(total);
}

static PyObject *
py_copy_taken_texts(PyObject *self, PyObject *args)
{
    Py_buffer offsets, data, order_buffer, new_offsets_buffer, out;
    if (!PyArg_ParseTuple(args, "y*y*y*y*w*", &offsets, &data, &order_buffer, &new_offsets_buffer, &out))
        return NULL;
    const int64_t *source = offsets.buf, *order = order_buffer.buf, *new_offsets = new_offsets_buffer.buf;
    const unsigned char *texts = data.buf;
    Py_ssize_t rows = offsets.len / 8 - 1, n = order_buffer.len / 8;
    int ok = offsets.len % 8 == 0 && rows >= 0 && order_buffer.len % 8 == 0 && new_offsets_buffer.len == (n + 1) * 8 &&
             (n == 0 || (new_offsets[0] >= 0 && new_offsets[n] <= out.len));
    if (ok) {
        Py_BEGIN_ALLOW_THREADS
        unsigned char *target = out.buf;
        /* Texts of up to 16 bytes are copied as 16 bytes (a fixed-size copy, no call) where
         * that stays within this stretch of the output; the overrun is rewritten by the rows
         * after. */
        unsigned char *stretch_end = target + (n ? new_offsets[n] : 0);
        for (Py_ssize_t j = 0; j < n; j++) {
            int64_t row = order[j];
            if (row < 0 || row >= rows) {
                ok = 0;
                break;
            }
            /* The offsets of a row further on, then the text of a nearer one (its offsets by
             * now in cache): both reads are random. */
            if (j + 2 * PREFETCH_AHEAD < n && order[j + 2 * PREFETCH_AHEAD] >= 0 && order[j + 2 * PREFETCH_AHEAD] < rows)
                __builtin_prefetch(&source[order[j + 2 * PREFETCH_AHEAD]], 0);
            if (j + PREFETCH_AHEAD < n && order[j + PREFETCH_AHEAD] >= 0 && order[j + PREFETCH_AHEAD] < rows)
                __builtin_prefetch(texts + source[order[j + PREFETCH_AHEAD]], 0);
            /* A row's text lies within the bytes and goes to a place in the output as long as it. */
            int64_t begin = source[row], end = source[row + 1], at = new_offsets[j], size = end - begin;
            if (begin < 0 || end < begin || end > data.len || at < new_offsets[0] || new_offsets[j + 1] > new_offsets[n] ||
                new_offsets[j + 1] - at != size) {
                ok = 0;
                break;
            }
            unsigned char *to = target + at;
            if (size <= 16 && to + 16 <= stretch_end && begin + 16 <= data.len)
                memcpy(to, texts + begin, 16);
            else
                memcpy(to, texts + begin, (size_t)size);
        }
        Py_END_ALLOW_THREADS
    }
    if (!ok)
        PyErr_SetString(PyExc_ValueError, "order, new_offsets and the buffer do not fit the column");
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&data);
    PyBuffer_Release(&order_buffer);
    PyBuffer_Release(&new_offsets_buffer);
    PyBuffer_Release(&out);
    if (!ok)
        return NULL;
    Py_RETURN_NONE;
}

/* ---- first_token_match ---------------------------------------------------------------------- */

/* The first space in [p, end), or end. */
static inline const unsigned char *
next_space(const unsigned char *p, const unsigned char *end)
{
    const unsigned char *space = memchr(p, ' ', (size_t)(end - p));
    return space ? space : end;
}

/* High bit of each byte of w that is a space, and no other bit (an exact test, unlike the
 * shorter one that may also flag a byte above a match). */
static inline uint64_t
space_bytes(uint64_t w)
{
    uint64_t x = w ^ 0x2020202020202020ULL;
    uint64_t low7 = (x & 0x7F7F7F7F7F7F7F7FULL) + 0x7F7F7F7F7F7F7F7FULL;
    return ~(low7 | x | 0x7F7F7F7F7F7F7F7FULL);
}

/* The high bits of the 8 bytes of w gathered into 8 bits, byte j's into bit j. */
static inline uint64_t
byte_bits(uint64_t high_bits)
{
    return ((high_bits >> 7) * 0x0102040810204080ULL) >> 56;
}

/* Cells up to this many bytes have their spaces found as one 64-bit mask. */
#define MASKED_CELL_BYTES 63

/* place of the label among the first k tokens of a cell of at most MASKED_CELL_BYTES bytes:
 * bit b of `ends` marks a space at byte b, and one more bit the cell's end, so each token's
 * end is the lowest bit left. */
static inline int64_t
first_match_in_ends(const unsigned char *cell, size_t size, const unsigned char *limit, uint64_t ends,
                    const unsigned char *label, size_t label_size, const unsigned char *label_limit, Py_ssize_t k)
{
    ends = (ends & ((1ULL << size) - 1)) | (1ULL << size);
    size_t start = 0;
    if (label_size <= 8 && k <= 8) {
        /* The first k tokens all compared, without a branch on the outcome: where the label
         * turns up varies from row to row, so such branches are mispredicted. */
        uint64_t label_mask = low_bytes(label_size);
        uint64_t label_word = load_word(label, label_limit) & label_mask;
        uint64_t matches = 0, alive = 1;
        for (Py_ssize_t t = 0; t < k; t++) {
            size_t end = (size_t)__builtin_ctzll(ends);
            uint64_t same = (end - start == label_size) & ((load_word(cell + start, limit) & label_mask) == label_word);
            matches |= (same & alive) << t;
            alive &= end != size;
            ends &= ends - alive; /* the cell's end bit stays once reached */
            start = end + alive;  /* and start stays within the cell */
        }
        return matches ? (int64_t)__builtin_ctzll(matches) : -1;
    }
    for (Py_ssize_t t = 0; t < k; t++) {
        size_t end = (size_t)__builtin_ctzll(ends);
        if (end - start == label_size && memcmp(cell + start, label, label_size) == 0)
            return t;
        if (end == size)
            break;
        ends &= ends - 1;
        start = end + 1;
    }
    return -1;
}

static inline int64_t
match_in_short_cell(const unsigned char *cell, size_t size, const unsigned char *limit, const unsigned char *label,
                    size_t label_size, const unsigned char *label_limit, Py_ssize_t k)
{
    uint64_t ends = 0;
    for (size_t at = 0; at < size; at += 8)
        ends |= byte_bits(space_bytes(load_word(cell + at, limit))) << at;
    return first_match_in_ends(cell, size, limit, ends, label, label_size, label_limit, k);
}

/* The same for a cell of any length, a token at a time. */
static inline int64_t
match_in_cell(const unsigned char *p, const unsigned char *end, const unsigned char *label, size_t label_size,
              Py_ssize_t k)
{
    for (Py_ssize_t t = 0; t < k; t++) {
        const unsigned char *token_end = next_space(p, end);
        if ((size_t)(token_end - p) == label_size && memcmp(p, label, label_size) == 0)
            return t;
        if (token_end == end)
            break;
        p = token_end + 1;
    }
    return -1;
}

/* A row's place (-1 .. k - 1): written to found[i], or counted in counts[place + 1] when the
 * caller wants only how many rows take each place (counts has k + 1 entries). */
static inline void
record_place(int64_t *found, int64_t *counts, Py_ssize_t i, int64_t place)
{
    if (counts)
        counts[place + 1]++;
    else
        found[i] = place;
}

/*
 * found[i] = the 0-based place of labels[i] among the first k tokens of cells[i], split on * found[i] = the 0-based place of labels[i] among the first k tokens of cells[i], split on
 * single spaces as str.split(" ") splits (an empty cell is one empty token); -1 when none of
 * them equals the label. The caller makes sure no label holds a space.
 */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX512_VARIANT 1

/* match_first_tokens with each short cell's spaces found by one AVX-512 comparison of its
 * (up to 63) bytes; a masked load reads no byte past the cell. */
__attribute__((target("avx512f,avx512bw,bmi,bmi2"))) static void
match_first_tokens_avx512(const text_column *cells, const text_column *labels, Py_ssize_t k, int64_t *found,
                          int64_t *counts)
{
    const __m512i spaces = _mm512_set1_epi8(' ');
    for (Py_ssize_t i = 0; i < cells->n; i++) {
        const unsigned char *cell = cells->data + cells->offsets[i];
        size_t size = (size_t)(cells->offsets[i + 1] - cells->offsets[i]);
        const unsigned char *label = labels->data + labels->offsets[i];
        size_t label_size = (size_t)(labels->offsets[i + 1] - labels->offsets[i]);
        if (size <= MASKED_CELL_BYTES) {
            __m512i bytes = _mm512_maskz_loadu_epi8(_bzhi_u64(~0ULL, (unsigned)size), cell);
            uint64_t ends = _mm512_cmpeq_epi8_mask(bytes, spaces);
            record_place(found, counts, i,
                         first_match_in_ends(cell, size, cells->limit, ends, label, label_size, labels->limit, k));
        } else {
            record_place(found, counts, i, match_in_cell(cell, cell + size, label, label_size, k));
        }
    }
}
#endif

static void
match_first_tokens(const text_column *cells, const text_column *labels, Py_ssize_t k, int64_t *found, int64_t *counts)
{
    for (Py_ssize_t i = 0; i < cells->n; i++) {
        const unsigned char *cell = cells->data + cells->offsets[i];
        size_t size = (size_t)(cells->offsets[i + 1] - cells->offsets[i]);
        const unsigned char *label = labels->data + labels->offsets[i];
        size_t label_size = (size_t)(labels->offsets[i + 1] - labels->offsets[i]);
        if (size <= MASKED_CELL_BYTES) {
            record_place(found, counts, i, match_in_short_cell(cell, size, cells->limit, label, label_size, labels->limit, k));
        } else {
            record_place(found, counts, i, match_in_cell(cell, cell + size, label, label_size, k));
        }
    }
}

/* first_token_match (found: one place per row) or first_token_counts (counts: rows per place,
 * added to what the array holds), by `counting`. */
static PyObject *
first_tokens(PyObject *args, int counting)
{
    Py_buffer co, cd, lo, ld, out;
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "y*y*y*y*nw*", &co, &cd, &lo, &ld, &k, &out))
        return NULL;
    text_column cells, labels;
    int ok = 0;
    if (text_column_from(&co, &cd, &cells) == 0 && text_column_from(&lo, &ld, &labels) == 0) {
        if (labels.n != cells.n || k < 1 || out.len != (counting ? (k + 1) * 8 : cells.n * 8)) {
            PyErr_SetString(PyExc_ValueError,
                            "cells and labels must have one entry per row, k >= 1, and found one per row (counts k + 1)");
        } else {
            int64_t *found = counting ? NULL : (int64_t *)out.buf, *counts = counting ? (int64_t *)out.buf : NULL;
            Py_BEGIN_ALLOW_THREADS
#ifdef HAVE_AVX512_VARIANT
            if (__builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("bmi2"))
                match_first_tokens_avx512(&cells, &labels, k, found, counts);
            else
#endif
                match_first_tokens(&cells, &labels, k, found, counts);
            Py_END_ALLOW_THREADS
            ok = 1;
        }
    }
    PyBuffer_Release(&co);
    PyBuffer_Release(&cd);
    PyBuffer_Release(&lo);
    PyBuffer_Release(&ld);
    PyBuffer_Release(&out);
    if (!ok)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
py_first_token_match(PyObject *self, PyObject *args)
{
    return first_tokens(args, 0);
}

static PyObject *
py_first_token_counts(PyObject *self, PyObject *args)
{
    return first_tokens(args, 1);
}

/* ---- ROC AUC -------------------------------------------------------------------------------- */

/*
 * Split the scores of a two-class column: the classes are the column's lowest and highest
 * truth values (a NaN, a single class or a third value makes the column not two-class), the
 * positives those equal to the highest. Each score is written to both arrays and only one
 * count moves on, so there is no branch on the (unpredictable) class: each array needs room
 * for every row plus one (only the places written are ever touched). Returns the number of
 * positives, or -1 when the column is not two-class.
 */
static Py_ssize_t
split_by_label(const double *truth, const double *scores, Py_ssize_t n, double *pos, double *neg)
{
    if (n == 0)
        return -1;
    double low = truth[0], high = truth[0];
    int nan = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        double t = truth[i];
        nan |= t != t;
        low = t < low ? t : low;
        high = t > high ? t : high;
    }
    if (nan || !(low < high))
        return -1;
    Py_ssize_t n_pos = 0, n_neg = 0;
    int other = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t is_pos = truth[i] == high;
        other |= !is_pos & (truth[i] != low);
        pos[n_pos] = scores[i];
        neg[n_neg] = scores[i];
        n_pos += is_pos;
        n_neg += 1 - is_pos;
    }
    return other ? -1 : n_pos;
}

static PyObject *
py_split_by_label(PyObject *self, PyObject *args)
{
    Py_buffer truth, scores, pos, neg;
    if (!PyArg_ParseTuple(args, "y*y*w*w*", &truth, &scores, &pos, &neg))
        return NULL;
    Py_ssize_t n = scores.len / 8, n_pos = -1;
    int ok = truth.len == scores.len && scores.len % 8 == 0 && pos.len >= (n + 1) * 8 && neg.len >= (n + 1) * 8;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError,
                        "truth and scores must be float64 of one length; pos and neg each one longer");
    } else {
        Py_BEGIN_ALLOW_THREADS
        n_pos = split_by_label(truth.buf, scores.buf, n, pos.buf, neg.buf);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&truth);
    PyBuffer_Release(&scores);
    PyBuffer_Release(&pos);
    PyBuffer_Release(&neg);
    if (!ok)
        return NULL;
    return PyLong_FromSsize_t(n_pos);
}

/*
 * For two sorted arrays, the pairs (p, q) with q < p (strict) or q <= p (or_equal): a merge
 * that moves through q while q is below the current p and adds how far it got for each p,
 * written without a branch on the comparison (which is a coin toss on shuffled scores).
 */
static unsigned long long
pairs_below(const double *p, Py_ssize_t n_pos, const double *q, Py_ssize_t n_neg, int or_equal)
{
    unsigned long long total = 0;
    Py_ssize_t i = 0, j = 0;
    while (i < n_pos && j < n_neg) {
        Py_ssize_t take_neg = or_equal ? q[j] <= p[i] : q[j] < p[i];
        total += (unsigned long long)((1 - take_neg) * j);
        j += take_neg;
        i += 1 - take_neg;
    }
    /* Negatives exhausted: every remaining positive is above (or level with) all of them. */
    total += (unsigned long long)(n_pos - i) * (unsigned long long)j;
    return total;
}

static PyObject *
py_pairs_below(PyObject *self, PyObject *args)
{
    Py_buffer pos, neg;
    int or_equal;
    if (!PyArg_ParseTuple(args, "y*y*p", &pos, &neg, &or_equal))
        return NULL;
    unsigned long long total;
    Py_BEGIN_ALLOW_THREADS
    total = pairs_below(pos.buf, pos.len / 8, neg.buf, neg.len / 8, or_equal);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&pos);
    PyBuffer_Release(&neg);
    return PyLong_FromUnsignedLongLong(total);
}

static PyMethodDef kernel_methods[] = {
    {"text_join", py_text_join, METH_VARARGS,
     "text_join(values_offsets, values_data, set_offsets, set_data, order) -> bool\n\n"
     "Fill order (int64, one per text of the set) with the row of values holding each text;\n"
     "False when values is not a reordering of distinct texts of the set."},
    {"same_texts", py_same_texts, METH_VARARGS,
     "same_texts(a_offsets, a_data, b_offsets, b_data) -> bool\n\n"
     "Whether the two columns hold the same texts, row by row."},
    {"digit_suffix_keys", py_digit_suffix_keys, METH_VARARGS,
     "digit_suffix_keys(offsets, data, prefix, keys) -> (fewest, most, padded) or None\n\n"
     "Fill keys (int64) with the number spelled by the digits after prefix in each text; None\n"
     "when some text is not prefix + 1..16 digits."},
    {"dense_key_join", py_dense_key_join, METH_VARARGS,
     "dense_key_join(keys, key_set, low, high, order) -> bool\n\n"
     "Fill order with the row of keys holding each number of key_set (all within low..high);\n"
     "False when keys is not a reordering of distinct numbers of key_set."},
    {"inverse_order", py_inverse_order, METH_VARARGS,
     "inverse_order(order, place) -> None\n\n"
     "Fill place (int64) with place[order[j]] = j for a reordering order of 0 .. n - 1."},
    {"taken_offsets", py_taken_offsets, METH_VARARGS,
     "taken_offsets(offsets, order, new_offsets) -> int\n\n"
     "Fill new_offsets with the offsets of the texts at the given rows; return their total size."},
    {"copy_taken_texts", py_copy_taken_texts, METH_VARARGS,
     "copy_taken_texts(offsets, data, order, new_offsets, out) -> None\n\n"
     "Copy the texts at the given rows to their new_offsets in out."},
    {"first_token_match", py_first_token_match, METH_VARARGS,
     "first_token_match(cell_offsets, cell_data, label_offsets, label_data, k, found) -> None\n\n"
     "Fill found (int64, one per row) with the place of each row's label among the first k\n"
     "space-separated tokens of its cell, -1 where absent."},
    {"first_token_counts", py_first_token_counts, METH_VARARGS,
     "first_token_counts(cell_offsets, cell_data, label_offsets, label_data, k, counts) -> None\n\n"
     "Add to counts (int64, k + 1 entries) the rows whose label is absent from the first k tokens\n"
     "(counts[0]) or first found at place p (counts[p + 1])."},
    {"split_by_label", py_split_by_label, METH_VARARGS,
     "split_by_label(truth, scores, pos, neg) -> int\n\n"
     "Copy the scores of rows whose truth is the column's highest value into pos, those at its\n"
     "lowest into neg, in order; each array has room for every row plus one. Returns the number\n"
     "of positives, or -1 when the truth column does not hold exactly two values (or a NaN)."},
    {"pairs_below", py_pairs_below, METH_VARARGS,
     "pairs_below(pos_sorted, neg_sorted, or_equal) -> int\n\n"
     "Pairs (p, q) of the two sorted float64 arrays with q < p, or q <= p when or_equal."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kernel_module = {
    PyModuleDef_HEAD_INIT,
    "grading.metrics._kernels",
    "Compiled kernels for grading (see grading.metrics.native).",
    -1,
    kernel_methods,
};

PyMODINIT_FUNC
PyInit__kernels(void)
{
    return PyModule_Create(&kernel_module);
}
