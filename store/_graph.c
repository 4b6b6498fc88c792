/* store.linkgraph.encode_record's work, in one pass over a page's links.
 *
 * It writes what this Python would, byte for byte (tests/test_graph_record.py holds the Python as the
 * oracle and compares them on generated link lists):
 *
 *     targets = list(dict.fromkeys(links))
 *     hosts = list(dict.fromkeys(map(host_of, targets)))
 *     name = url.encode("utf-8", "replace")
 *     words = array("Q", (offset, node_id(url), node_id(host_of(url)),
 *                         len(targets) | len(hosts) << 32, len(name) | MAGIC << 32))
 *     words.extend(map(node_id, targets)); words.extend(map(node_id, hosts))
 *     return words.tobytes() + name + b"\0" * (-len(name) % 8)
 *
 * where node_id(s) is xxh3_64(s encoded in UTF-8) and host_of(u) is u.split("/", 3)[2] if "://"
 * is in u, else u. The hash is the xxhash package's, called once a link and once a host.
 *
 * Why C: a page's record cost 18.5 us in Python, two function calls, an encode and a split for
 * each of its ~26 links; this pass costs 5 (bench/RESULTS.md, issue 18, "The small records'
 * deflate, the graph record in C, DNS answers on the loop"). A string that is not valid UTF-8 as
 * it stands (a lone surrogate) makes it return None, and the Python writes it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "store._graph writes the graph's little-endian words as they are in memory: little-endian machines only"
#endif

#define MAGIC 0x534B4E4CULL

static PyObject *xxh3_64; /* xxhash.xxh3_64_intdigest */

typedef struct {
    const char *at;
    Py_ssize_t len;
} Span;

/* What url.split("/", 3)[2] is when url holds "://" (the text between its second and third
 * slashes), else all of url. */
static Span
host_of(const char *url, Py_ssize_t n)
{
    const char *end = url + n, *first, *second, *third;
    int authority = 0;
    for (Py_ssize_t i = 0; i + 3 <= n && !authority; i++)
        authority = url[i] == ':' && url[i + 1] == '/' && url[i + 2] == '/';
    if (!authority)
        return (Span){url, n};
    first = memchr(url, '/', (size_t)n);
    second = memchr(first + 1, '/', (size_t)(end - first - 1));
    third = memchr(second + 1, '/', (size_t)(end - second - 1));
    return (Span){second + 1, (third != NULL ? third : end) - second - 1};
}

/* xxh3_64 of the bytes, or (uint64_t)-1 with an exception set (check PyErr_Occurred). */
static uint64_t
hash_of(const char *at, Py_ssize_t n)
{
    PyObject *bytes = PyBytes_FromStringAndSize(at, n);
    if (bytes == NULL)
        return (uint64_t)-1;
    PyObject *value = PyObject_CallOneArg(xxh3_64, bytes);
    Py_DECREF(bytes);
    if (value == NULL)
        return (uint64_t)-1;
    uint64_t h = PyLong_AsUnsignedLongLong(value);
    Py_DECREF(value);
    return h;
}

static PyObject *
encode_record(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *number, *url, *links;
    if (!PyArg_ParseTuple(args, "O!UO", &PyLong_Type, &number, &url, &links))
        return NULL;
    uint64_t offset = PyLong_AsUnsignedLongLong(number);
    if (offset == (uint64_t)-1 && PyErr_Occurred())
        return NULL;
    PyObject *seq = PySequence_Fast(links, "links must be a sequence");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *result = NULL, *seen = PySet_New(NULL), *out = NULL;
    uint64_t *ids = PyMem_Malloc(sizeof(uint64_t) * (size_t)(2 * n + 1));
    Span *hosts = PyMem_Malloc(sizeof(Span) * (size_t)(n + 1));
    if (seen == NULL || ids == NULL || hosts == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t name_len;
    const char *name = PyUnicode_AsUTF8AndSize(url, &name_len);
    if (name == NULL)
        goto unencodable;
    Span own = host_of(name, name_len);
    uint64_t src = hash_of(name, name_len), src_host = hash_of(own.at, own.len);
    if (PyErr_Occurred())
        goto done;
    Py_ssize_t targets = 0, host_count = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *link = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyUnicode_Check(link)) {
            PyErr_SetString(PyExc_TypeError, "links must be strings");
            goto done;
        }
        int added = PySet_Contains(seen, link);
        if (added < 0)
            goto done;
        if (added)
            continue;
        if (PySet_Add(seen, link) < 0)
            goto done;
        Py_ssize_t len;
        const char *text = PyUnicode_AsUTF8AndSize(link, &len);
        if (text == NULL)
            goto unencodable;
        ids[targets++] = hash_of(text, len);
        if (PyErr_Occurred())
            goto done;
        Span host = host_of(text, len);
        int known = 0;
        for (Py_ssize_t k = 0; k < host_count && !known; k++)
            known = hosts[k].len == host.len && memcmp(hosts[k].at, host.at, (size_t)host.len) == 0;
        if (!known)
            hosts[host_count++] = host;
    }
    for (Py_ssize_t k = 0; k < host_count; k++) {
        ids[targets + k] = hash_of(hosts[k].at, hosts[k].len);
        if (PyErr_Occurred())
            goto done;
    }
    Py_ssize_t words = 5 + targets + host_count, padded = (name_len + 7) / 8 * 8;
    out = PyBytes_FromStringAndSize(NULL, words * 8 + padded);
    if (out == NULL)
        goto done;
    char *p = PyBytes_AS_STRING(out);
    uint64_t head[5] = {offset, src, src_host, (uint64_t)targets | (uint64_t)host_count << 32,
                        (uint64_t)name_len | MAGIC << 32};
    memcpy(p, head, sizeof head); /* little-endian: checked at compile time */
    memcpy(p + sizeof head, ids, (size_t)(targets + host_count) * 8);
    memcpy(p + words * 8, name, (size_t)name_len);
    memset(p + words * 8 + name_len, 0, (size_t)(padded - name_len));
    result = out;
    out = NULL;
    goto done;
unencodable:
    if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
        goto done;
    PyErr_Clear();
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(out);
    Py_XDECREF(seen);
    PyMem_Free(ids);
    PyMem_Free(hosts);
    Py_DECREF(seq);
    return result;
}

static PyMethodDef methods[] = {
    {"encode_record", encode_record, METH_VARARGS,
     "encode_record(offset, url, links, /) -> bytes | None: a page's graph record (store/linkgraph.py), "
     "None if a string is not valid UTF-8."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_graph", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__graph(void)
{
    PyObject *xxhash = PyImport_ImportModule("xxhash");
    if (xxhash == NULL)
        return NULL;
    xxh3_64 = PyObject_GetAttrString(xxhash, "xxh3_64_intdigest");
    Py_DECREF(xxhash);
    if (xxh3_64 == NULL)
        return NULL;
    return PyModule_Create(&module);
}
