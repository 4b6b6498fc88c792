/* The links of one page resolved against its base: frontier.urls.BaseURL.resolve_all, in C for the common hrefs.
 *
 * BaseURL.resolve costs ~1 us an href in Python, and a page of the in-vitro web has ~43 of them
 * (bench/RESULTS.md, issue 18). Most hrefs a crawler meets are plain ASCII made of the characters
 * a canonical URL keeps as they are: absolute ("http://h/p"), network-path ("//h/p"), root
 * ("/p?q"), query ("?q") and relative ("p", "../p") references. For those, this writes what
 * BaseURL.resolve would, byte for byte; every other href goes to BaseURL.resolve itself, as does
 * one whose result would need what is not done here (tests/test_urls.py holds the Python as the
 * oracle and compares the two on generated hrefs):
 *
 * - an href (up to a '#') with a byte outside [-A-Za-z0-9._~!$&'()*+,;=:@/?[\]]: percent
 *   escapes, spaces, controls, backslashes, non-ASCII;
 * - a path that holds "/." once joined (dot segments, beyond the leading "./" and "../" climbed
 *   here as BaseURL.resolve climbs them);
 * - a scheme "http" or "https" not followed by "//" or not written in lower case ("HTTP://",
 *   "http:x"); other schemes ("javascript:", "mailto:") give None, as there;
 * - a query of more than MAX_PARAMETERS parameters to sort.
 *
 * An authority is made canonical by the caller's `origin(scheme, authority)` (frontier.urls._origin,
 * cached); query parameters are sorted by name, stably, when the base's sort_query is true.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define MAX_PARAMETERS 64

static unsigned char safe[256];        /* kept as they are in a canonical path or query */
static unsigned char scheme_char[256]; /* [A-Za-z0-9+.-] */
static PyObject *http, *https;         /* interned "http", "https" */

/* What a base is cut into, read once per page from the BaseURL. */
struct base {
    PyObject *url, *scheme, *origin, *path, *directory, *page;
    int sort_query;
};

/* A piece of text: bytes and a length. */
struct piece {
    const char *at;
    Py_ssize_t n;
};

static struct piece
piece_of(PyObject *text)
{
    return (struct piece){(const char *)PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text)};
}

static int
contains(struct piece p, const char *what)
{
    size_t k = strlen(what);
    for (Py_ssize_t i = 0; i + (Py_ssize_t)k <= p.n; i++)
        if (memcmp(p.at + i, what, k) == 0)
            return 1;
    return 0;
}

static Py_ssize_t
find(struct piece p, char c)
{
    const char *at = memchr(p.at, c, (size_t)p.n);
    return at != NULL ? at - p.at : -1;
}

/* A parameter of a query: where it starts, its length, the length of its name. */
struct parameter {
    Py_ssize_t at, n, name;
};

static int
name_before(const char *q, const struct parameter *a, const struct parameter *b)
{
    Py_ssize_t n = a->name < b->name ? a->name : b->name;
    int c = memcmp(q + a->at, q + b->at, (size_t)n);
    return c < 0 || (c == 0 && a->name < b->name);
}

/* origin + path_1 + path_2 [+ "?" + query], the query's parameters sorted by name if asked:
 * a new str, or NULL with *give_up set when the query has too many parameters. */
static PyObject *
compose(struct piece origin, struct piece path_1, struct piece path_2, struct piece query, int sort, int *give_up)
{
    struct parameter parameters[MAX_PARAMETERS];
    int count = 0;
    if (sort && query.n > 0 && memchr(query.at, '&', (size_t)query.n) != NULL) {
        Py_ssize_t start = 0;
        for (Py_ssize_t i = 0; i <= query.n; i++) {
            if (i < query.n && query.at[i] != '&')
                continue;
            if (count == MAX_PARAMETERS) {
                *give_up = 1;
                return NULL;
            }
            const char *eq = memchr(query.at + start, '=', (size_t)(i - start));
            struct parameter p = {start, i - start, eq != NULL ? eq - (query.at + start) : i - start};
            int j = count++;
            for (; j > 0 && name_before(query.at, &p, &parameters[j - 1]); j--) /* insertion sort: stable */
                parameters[j] = parameters[j - 1];
            parameters[j] = p;
            start = i + 1;
        }
    }
    Py_ssize_t total = origin.n + path_1.n + path_2.n + (query.n > 0 ? 1 + query.n : 0);
    PyObject *url = PyUnicode_New(total, 127);
    if (url == NULL)
        return NULL;
    char *out = (char *)PyUnicode_1BYTE_DATA(url);
    memcpy(out, origin.at, (size_t)origin.n);
    out += origin.n;
    memcpy(out, path_1.at, (size_t)path_1.n);
    out += path_1.n;
    memcpy(out, path_2.at, (size_t)path_2.n);
    out += path_2.n;
    if (query.n > 0) {
        *out++ = '?';
        if (count == 0) {
            memcpy(out, query.at, (size_t)query.n);
        } else {
            for (int i = 0; i < count; i++) {
                if (i > 0)
                    *out++ = '&';
                memcpy(out, query.at + parameters[i].at, (size_t)parameters[i].n);
                out += parameters[i].n;
            }
        }
    }
    return url;
}

/* A path that holds "/." (a dot segment, or a name such as ".well-known") is left to Python. */
static int
dotted(struct piece path_1, struct piece path_2)
{
    return contains(path_1, "/.") || contains(path_2, "/.") ||
           (path_1.n > 0 && path_1.at[path_1.n - 1] == '/' && path_2.n > 0 && path_2.at[0] == '.');
}

/* The path and query of `rest` joined to path_1, then composed; NULL with *give_up set to leave it to Python. */
static PyObject *
join(struct piece origin, struct piece path_1, struct piece rest, int sort, int *give_up)
{
    Py_ssize_t q = find(rest, '?');
    struct piece path_2 = {rest.at, q < 0 ? rest.n : q};
    struct piece query = {q < 0 ? rest.at + rest.n : rest.at + q + 1, q < 0 ? 0 : rest.n - q - 1};
    if (dotted(path_1, path_2)) {
        *give_up = 1;
        return NULL;
    }
    return compose(origin, path_1, path_2, query, sort, give_up);
}

/* An absolute reference: `scheme` and what follows "//" (authority, path, query). */
static PyObject *
absolute(PyObject *scheme, struct piece after, PyObject *origin_of, int sort, int *give_up)
{
    Py_ssize_t end = 0;
    while (end < after.n && after.at[end] != '/' && after.at[end] != '?')
        end++;
    PyObject *authority = PyUnicode_FromStringAndSize(after.at, end);
    if (authority == NULL)
        return NULL;
    PyObject *origin = PyObject_CallFunctionObjArgs(origin_of, scheme, authority, NULL);
    Py_DECREF(authority);
    if (origin == NULL || origin == Py_None)
        return origin;
    if (!PyUnicode_IS_ASCII(origin)) { /* never so: a canonical origin is ASCII */
        Py_DECREF(origin);
        *give_up = 1;
        return NULL;
    }
    struct piece rest = {after.at + end, after.n - end};
    static const struct piece root = {"/", 1};
    PyObject *url;
    if (rest.n == 0 || rest.at[0] == '?')
        url = join(piece_of(origin), root, rest, sort, give_up);
    else
        url = join(piece_of(origin), (struct piece){"", 0}, rest, sort, give_up);
    Py_DECREF(origin);
    return url;
}

/* resolve(href) for the hrefs of the common shapes; NULL with *give_up set for the others. */
static PyObject *
resolve_one(const struct base *base, PyObject *href, PyObject *origin_of, int *give_up)
{
    if (!PyUnicode_Check(href) || !PyUnicode_IS_ASCII(href)) {
        *give_up = 1;
        return NULL;
    }
    struct piece h = piece_of(href);
    Py_ssize_t hash = find(h, '#');
    if (hash >= 0)
        h.n = hash;
    for (Py_ssize_t i = 0; i < h.n; i++)
        if (!safe[(unsigned char)h.at[i]]) {
            *give_up = 1;
            return NULL;
        }
    int sort = base->sort_query;
    if (h.n >= 7 && memcmp(h.at, "http://", 7) == 0)
        return absolute(http, (struct piece){h.at + 7, h.n - 7}, origin_of, sort, give_up);
    if (h.n >= 8 && memcmp(h.at, "https://", 8) == 0)
        return absolute(https, (struct piece){h.at + 8, h.n - 8}, origin_of, sort, give_up);
    if (h.n == 0)
        return Py_NewRef(base->url);
    struct piece origin = piece_of(base->origin);
    if (h.at[0] == '/') {
        if (h.n >= 2 && h.at[1] == '/')
            return absolute(base->scheme, (struct piece){h.at + 2, h.n - 2}, origin_of, sort, give_up);
        return join(origin, (struct piece){"", 0}, h, sort, give_up);
    }
    if (h.at[0] == '?') {
        if (h.n == 1)
            return Py_NewRef(base->page);
        return join(origin, piece_of(base->path), h, sort, give_up);
    }
    Py_ssize_t colon = find(h, ':');
    if (colon > 0 && ((h.at[0] | 0x20) >= 'a' && (h.at[0] | 0x20) <= 'z')) {
        Py_ssize_t i = 1;
        while (i < colon && scheme_char[(unsigned char)h.at[i]])
            i++;
        if (i == colon) { /* a scheme: http(s) in any case is left to Python, any other gives no link */
            int web = (colon == 4 || colon == 5) && (h.at[0] | 0x20) == 'h' && (h.at[1] | 0x20) == 't' &&
                      (h.at[2] | 0x20) == 't' && (h.at[3] | 0x20) == 'p' && (colon == 4 || (h.at[4] | 0x20) == 's');
            if (web) {
                *give_up = 1;
                return NULL;
            }
            Py_RETURN_NONE;
        }
    }
    struct piece directory = piece_of(base->directory);
    if (h.at[0] == '.') {
        for (;;) {
            if (h.n >= 3 && memcmp(h.at, "../", 3) == 0) {
                h.at += 3;
                h.n -= 3;
                if (directory.n > 1) {
                    Py_ssize_t slash = directory.n - 2;
                    while (directory.at[slash] != '/')
                        slash--;
                    directory.n = slash + 1;
                }
            } else if (h.n >= 2 && memcmp(h.at, "./", 2) == 0) {
                h.at += 2;
                h.n -= 2;
            } else {
                break;
            }
        }
    }
    return join(origin, directory, h, sort, give_up);
}

static int
read_base(PyObject *object, struct base *base)
{
    static const char *const names[] = {"url", "scheme", "origin", "path", "directory", "_page"};
    PyObject **slots[] = {&base->url, &base->scheme, &base->origin, &base->path, &base->directory, &base->page};
    for (int i = 0; i < 6; i++) {
        *slots[i] = PyObject_GetAttrString(object, names[i]);
        if (*slots[i] == NULL)
            return -1;
        if (!PyUnicode_Check(*slots[i]) || !PyUnicode_IS_ASCII(*slots[i])) {
            PyErr_Format(PyExc_ValueError, "a base's %s is ASCII text", names[i]);
            return -1;
        }
    }
    PyObject *sort = PyObject_GetAttrString(object, "sort_query");
    if (sort == NULL)
        return -1;
    base->sort_query = PyObject_IsTrue(sort);
    Py_DECREF(sort);
    return base->sort_query;
}

static PyObject *
resolve_all(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyList_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "resolve_all(base, hrefs: list, origin) takes three arguments");
        return NULL;
    }
    PyObject *hrefs = args[1], *origin_of = args[2], *fallback = NULL, *links = NULL;
    struct base base = {0};
    if (read_base(args[0], &base) < 0 || (fallback = PyObject_GetAttrString(args[0], "resolve")) == NULL)
        goto done;
    Py_ssize_t n = PyList_GET_SIZE(hrefs);
    if ((links = PyList_New(n)) == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *href = PyList_GET_ITEM(hrefs, i);
        int give_up = 0;
        PyObject *link = resolve_one(&base, href, origin_of, &give_up);
        if (link == NULL && give_up && !PyErr_Occurred())
            link = PyObject_CallOneArg(fallback, href);
        if (link == NULL) {
            Py_CLEAR(links);
            goto done;
        }
        PyList_SET_ITEM(links, i, link);
    }
done:
    Py_XDECREF(base.url);
    Py_XDECREF(base.scheme);
    Py_XDECREF(base.origin);
    Py_XDECREF(base.path);
    Py_XDECREF(base.directory);
    Py_XDECREF(base.page);
    Py_XDECREF(fallback);
    return links;
}

static PyMethodDef methods[] = {
    {"resolve_all", (PyCFunction)(void (*)(void))resolve_all, METH_FASTCALL,
     "resolve_all(base, hrefs, origin) -> [base.resolve(href) for href in hrefs], the common hrefs in C."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_resolve", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC
PyInit__resolve(void)
{
    const char *kept = "-._~!$&'()*+,;=:@/?[]";
    for (int c = 0; c < 256; c++) {
        int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        safe[c] = alnum || (c != 0 && strchr(kept, c) != NULL);
        scheme_char[c] = alnum || c == '+' || c == '.' || c == '-';
    }
    if ((http = PyUnicode_InternFromString("http")) == NULL || (https = PyUnicode_InternFromString("https")) == NULL)
        return NULL;
    return PyModule_Create(&module);
}
