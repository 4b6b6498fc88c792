/* Deflate (RFC 1951) with one Huffman code set once, for the small records of a fetch.
 *
 * store/deflate.py says why: a fetch's request record, its response's WARC fields and HTTP head
 * and its metadata record are 0.4-3 KB each, and ISA-L spends most of its ~10 us on each in
 * building a Huffman code for that one record. Their bytes are alike from record to record, so
 * one code, computed once from sample records (store/deflate.py), serves them all: it is still
 * sent at the start of each block, as a dynamic block's header, so any inflater reads the
 * stream; only the work of choosing it is saved.
 *
 * Matching is greedy, one candidate per hash of four bytes, as ISA-L's and zlib's fastest levels
 * do; distances up to 32 KiB. Every length and distance symbol has a code, and so has every byte
 * that WARC fields and HTTP heads are made of (printable ASCII, tab, CR, LF): a code for each of
 * the other bytes would cost every record's header bits, so a record holding one is not written
 * here (deflate returns None) and store/deflate.py's caller gives it to ISA-L.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "store._deflate writes its bit buffer a little-endian word at a time: little-endian machines only"
#endif

#define LITLEN 286
#define DISTS 30
#define WINDOW 32768
#define MIN_MATCH 4
#define MAX_MATCH 258
#define HASH_BITS 13

static const uint16_t len_base[29] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
                                      35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t len_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
                                      3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t dist_base[DISTS] = {1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129,
                                          193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097,
                                          6145, 8193, 12289, 16385, 24577};
static const uint8_t dist_extra[DISTS] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6,
                                          6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

static uint8_t len_symbol[MAX_MATCH + 1]; /* match length -> length symbol - 257 */
static uint8_t dist_symbol[512];          /* (d - 1) for d <= 256, else 256 + ((d - 1) >> 7) */

/* The code: bits already reversed, as deflate sends Huffman codes most significant bit first
 * into a stream read from the least significant bit. */
static uint16_t litlen_code[LITLEN], dist_code[DISTS];
static uint8_t litlen_bits[LITLEN], dist_bits[DISTS];
static uint8_t header[1024]; /* the block header after BFINAL and BTYPE: HLIT .. the code lengths */
static Py_ssize_t header_bits;
static int configured;

/* hash table: position + 1 + base of the call that wrote it, so one call's entries are stale for
 * the next without clearing the table */
static uint32_t head[1 << HASH_BITS];
static uint32_t base;

typedef struct {
    uint8_t *out;
    Py_ssize_t at;
    uint64_t bits;
    int count;
} Writer;

static inline void
put(Writer *w, uint32_t value, int n)
{
    w->bits |= (uint64_t)value << w->count;
    w->count += n;
    if (w->count >= 32) {
        uint32_t low = (uint32_t)w->bits;
        memcpy(w->out + w->at, &low, 4); /* little-endian: checked at compile time */
        w->at += 4;
        w->bits >>= 32;
        w->count -= 32;
    }
}

static void
flush_to_byte(Writer *w)
{
    while (w->count > 0) {
        w->out[w->at++] = (uint8_t)w->bits;
        w->bits >>= 8;
        w->count -= 8;
    }
    w->bits = 0;
    w->count = 0;
}

static inline uint32_t
load32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline uint32_t
hash4(const uint8_t *p)
{
    return (load32(p) * 2654435761u) >> (32 - HASH_BITS);
}

static inline int
literal(Writer *w, uint8_t byte, uint32_t *litlen_count)
{
    if (w == NULL) {
        litlen_count[byte]++;
        return 0;
    }
    if (litlen_bits[byte] == 0)
        return -1;
    put(w, litlen_code[byte], litlen_bits[byte]);
    return 0;
}

static inline Py_ssize_t
match_length(const uint8_t *a, const uint8_t *b, Py_ssize_t limit)
{
    Py_ssize_t n = MIN_MATCH;
    while (n + 8 <= limit) {
        uint64_t x, y;
        memcpy(&x, a + n, 8);
        memcpy(&y, b + n, 8);
        if (x != y)
            return n + (__builtin_ctzll(x ^ y) >> 3);
        n += 8;
    }
    while (n < limit && a[n] == b[n])
        n++;
    return n;
}

/* Parse `data` into literals and matches; write them with `w`, or count them into the arrays.
 * Returns -1 if a literal has no code (writing only). */
static int
parse(const uint8_t *data, Py_ssize_t n, Writer *w, uint32_t *litlen_count, uint32_t *dist_count)
{
    if ((uint64_t)base + (uint64_t)n + 2 >= UINT32_MAX) {
        memset(head, 0, sizeof head);
        base = 0;
    }
    Py_ssize_t i = 0;
    while (i + MIN_MATCH <= n) {
        uint32_t h = hash4(data + i);
        uint32_t seen = head[h];
        head[h] = base + (uint32_t)i + 1;
        if (seen > base) {
            Py_ssize_t from = (Py_ssize_t)(seen - base - 1), distance = i - from;
            if (distance <= WINDOW && load32(data + from) == load32(data + i)) {
                Py_ssize_t limit = n - i < MAX_MATCH ? n - i : MAX_MATCH;
                Py_ssize_t length = match_length(data + from, data + i, limit);
                int ls = len_symbol[length];
                int ds = distance <= 256 ? dist_symbol[distance - 1] : dist_symbol[256 + ((distance - 1) >> 7)];
                if (w != NULL) {
                    put(w, litlen_code[257 + ls], litlen_bits[257 + ls]);
                    put(w, (uint32_t)(length - len_base[ls]), len_extra[ls]);
                    put(w, dist_code[ds], dist_bits[ds]);
                    put(w, (uint32_t)(distance - dist_base[ds]), dist_extra[ds]);
                }
                else {
                    litlen_count[257 + ls]++;
                    dist_count[ds]++;
                }
                Py_ssize_t end = i + length;
                /* positions inside a long match are hashed at its end only, as zlib's fastest level does */
                for (i = length > 8 ? end - 2 : i + 1; i < end && i + MIN_MATCH <= n; i++)
                    head[hash4(data + i)] = base + (uint32_t)i + 1;
                i = end;
                continue;
            }
        }
        if (literal(w, data[i], litlen_count) < 0)
            goto uncoded;
        i++;
    }
    for (; i < n; i++)
        if (literal(w, data[i], litlen_count) < 0)
            goto uncoded;
    base += (uint32_t)n + 1;
    return 0;
uncoded:
    base += (uint32_t)n + 1;
    return -1;
}

static int
canonical(const uint8_t *bits, int symbols, uint16_t *codes)
{
    int count[16] = {0}, next[16] = {0};
    for (int s = 0; s < symbols; s++) {
        if (bits[s] > 15)
            return -1;
        count[bits[s]]++;
    }
    count[0] = 0;
    int code = 0;
    for (int b = 1; b < 16; b++) {
        code = (code + count[b - 1]) << 1;
        next[b] = code;
    }
    long kraft = 0;
    for (int b = 1; b < 16; b++)
        kraft += (long)count[b] << (15 - b);
    if (kraft != 1L << 15)
        return -1; /* not a complete prefix code */
    for (int s = 0; s < symbols; s++) {
        if (bits[s] == 0) {
            codes[s] = 0;
            continue;
        }
        int c = next[bits[s]]++, r = 0;
        for (int k = 0; k < bits[s]; k++)
            r |= ((c >> k) & 1) << (bits[s] - 1 - k);
        codes[s] = (uint16_t)r;
    }
    return 0;
}

static PyObject *
configure(PyObject *Py_UNUSED(module), PyObject *args)
{
    Py_buffer ll, d, h;
    Py_ssize_t nbits;
    if (!PyArg_ParseTuple(args, "y*y*y*n", &ll, &d, &h, &nbits))
        return NULL;
    PyObject *result = NULL;
    if (ll.len != LITLEN || d.len != DISTS || nbits < 0 || nbits > h.len * 8 || h.len > (Py_ssize_t)sizeof header) {
        PyErr_SetString(PyExc_ValueError, "configure: 286 and 30 code lengths and a header that fits");
        goto done;
    }
    if (canonical(ll.buf, LITLEN, litlen_code) < 0 || canonical(d.buf, DISTS, dist_code) < 0) {
        configured = 0;
        PyErr_SetString(PyExc_ValueError, "configure: the code lengths are not a complete code of at most 15 bits");
        goto done;
    }
    memcpy(litlen_bits, ll.buf, LITLEN);
    memcpy(dist_bits, d.buf, DISTS);
    memcpy(header, h.buf, (size_t)h.len);
    header_bits = nbits;
    configured = 1;
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&ll);
    PyBuffer_Release(&d);
    PyBuffer_Release(&h);
    return result;
}

static PyObject *
counts(PyObject *Py_UNUSED(module), PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    uint32_t ll[LITLEN] = {0}, d[DISTS] = {0};
    parse(view.buf, view.len, NULL, ll, d);
    PyBuffer_Release(&view);
    ll[256]++; /* the end of the block */
    PyObject *a = PyList_New(LITLEN), *b = PyList_New(DISTS);
    if (a == NULL || b == NULL)
        goto fail;
    for (int s = 0; s < LITLEN; s++) {
        PyObject *v = PyLong_FromUnsignedLong(ll[s]);
        if (v == NULL)
            goto fail;
        PyList_SET_ITEM(a, s, v);
    }
    for (int s = 0; s < DISTS; s++) {
        PyObject *v = PyLong_FromUnsignedLong(d[s]);
        if (v == NULL)
            goto fail;
        PyList_SET_ITEM(b, s, v);
    }
    return Py_BuildValue("(NN)", a, b);
fail:
    Py_XDECREF(a);
    Py_XDECREF(b);
    return NULL;
}

static PyObject *
deflate(PyObject *Py_UNUSED(module), PyObject *args)
{
    Py_buffer view;
    int final;
    if (!PyArg_ParseTuple(args, "y*p", &view, &final))
        return NULL;
    if (!configured) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_RuntimeError, "deflate: no code configured");
        return NULL;
    }
    /* at most 15 bits a literal, fewer for a match than for its bytes; the header; 8 bytes of
     * slack for put's whole words and the sync marker */
    Py_ssize_t bound = view.len * 2 + (header_bits + 7) / 8 + 32;
    PyObject *out = PyBytes_FromStringAndSize(NULL, bound);
    if (out == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    Writer w = {(uint8_t *)PyBytes_AS_STRING(out), 0, 0, 0};
    put(&w, (uint32_t)(final ? 1 : 0) | (2u << 1), 3); /* BFINAL, BTYPE 10: dynamic codes */
    Py_ssize_t k = 0;
    for (; k + 8 <= header_bits; k += 8)
        put(&w, header[k >> 3], 8);
    if (k < header_bits)
        put(&w, header[k >> 3] & ((1u << (header_bits - k)) - 1), (int)(header_bits - k));
    int coded = parse(view.buf, view.len, &w, NULL, NULL);
    PyBuffer_Release(&view);
    if (coded < 0) {
        Py_DECREF(out);
        Py_RETURN_NONE;
    }
    put(&w, litlen_code[256], litlen_bits[256]);
    if (!final) {
        /* a sync flush: an empty stored block that ends on a byte boundary, so stored blocks
         * (or more of the stream) can follow */
        put(&w, 0, 3);
        flush_to_byte(&w);
        put(&w, 0xFFFF0000u, 32);
    }
    flush_to_byte(&w);
    if (_PyBytes_Resize(&out, w.at) < 0)
        return NULL;
    return out;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(litlen_lengths, dist_lengths, header, header_bits, /): the code every block is written with."},
    {"counts", counts, METH_O,
     "counts(data, /) -> (litlen, dist): how often each symbol occurs when data is parsed (end of block included)."},
    {"deflate", deflate, METH_VARARGS,
     "deflate(data, final, /) -> bytes | None: data as one block of raw deflate, the last one of the stream if final, "
     "else followed by a sync flush's empty stored block; None if data holds a byte the code has no code for."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_deflate", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__deflate(void)
{
    for (int s = 0; s < 29; s++) {
        int last = s == 28 ? MAX_MATCH : len_base[s] + (1 << len_extra[s]) - 1;
        for (int length = len_base[s]; length <= last && length <= MAX_MATCH; length++)
            len_symbol[length] = (uint8_t)s;
    }
    len_symbol[MAX_MATCH] = 28; /* 258 has its own symbol, not 284's last value */
    for (int s = 0; s < DISTS; s++) {
        int last = dist_base[s] + (1 << dist_extra[s]) - 1;
        for (int d = dist_base[s]; d <= last; d++) {
            if (d <= 256)
                dist_symbol[d - 1] = (uint8_t)s;
            else
                dist_symbol[256 + ((d - 1) >> 7)] = (uint8_t)s;
        }
    }
    return PyModule_Create(&module);
}
