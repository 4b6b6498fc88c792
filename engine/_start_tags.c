/* The start tags of an HTML page that can carry a link, found by the HTML tokenizer's rules.
 *
 * engine/parse.py wants, of a page, the start tags in TAGS and their attributes, in document
 * order. lxml gave them through a parser target: libxml2 tokenizes the page (~90 us for the
 * ~15 KB pages of bench/parse_bench.py), then calls Python once for each of its ~350 start tags
 * with a dict of its attributes (~80 us more), of which only some 45 are wanted. This does the
 * tokenizing and builds Python objects for the wanted tags only (bench/RESULTS.md, issue 18).
 *
 * It follows the WHATWG HTML tokenizer (section 13.2.5) as far as start tags are concerned, as
 * libxml2 2.14 does (its tokenizer conforms to HTML5; tests/test_parse.py holds lxml as the
 * oracle and compares the two on generated markup):
 *
 * - a tag is '<', an ASCII letter, a name up to whitespace, '/' or '>', then attributes up to
 *   the '>'; a tag that the input ends inside is dropped; end tags are read the same way
 *   (quoted values may hold '>') and dropped;
 * - names are lowered (ASCII only); of two attributes with one name the first holds; a value
 *   has CR LF and CR as LF, NUL and each byte of invalid UTF-8 as U+FFFD, and character references
 *   decoded by the caller's `unescape` (only values holding '&' go to it);
 * - comments ("<!--" up to "-->", or "--!>" after the opening dashes; "<!-->" and "<!--->"
 *   close at once), bogus comments ("<?", "<!" and "</" not followed by a letter, doctypes:
 *   up to the next '>') hold no tags;
 * - the text of title and textarea (RCDATA), style, xmp, iframe, noembed and noframes
 *   (RAWTEXT) runs to the matching end tag; plaintext to the end of the input; script to its
 *   end tag by the script data states, "<!--" and a nested "<script" included. As in libxml2,
 *   these hold inside svg and math too (the tree builder's foreign content is not modelled),
 *   not after a self-closing start tag ("<title/>": browsers ignore the '/' there), and
 *   noscript's content is markup (scripting off).
 *
 * Left to the caller: which attributes matter, and everything about the tree.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

typedef const unsigned char *pos;

enum text { TEXT_DATA, TEXT_RCDATA, TEXT_RAWTEXT, TEXT_SCRIPT, TEXT_PLAINTEXT };

/* The wanted tags (engine/parse.py's _TAGS is this tuple), then the tags whose text is not markup. */
static const char *const WANTED[] = {"a", "area", "link", "frame", "iframe", "base", "meta", "title"};
#define N_WANTED ((int)(sizeof(WANTED) / sizeof(WANTED[0])))
static const struct {
    const char *name;
    enum text text;
} TEXT_ELEMENTS[] = {
    {"title", TEXT_RCDATA},     {"textarea", TEXT_RCDATA},  {"style", TEXT_RAWTEXT},    {"xmp", TEXT_RAWTEXT},
    {"iframe", TEXT_RAWTEXT},   {"noembed", TEXT_RAWTEXT},  {"noframes", TEXT_RAWTEXT}, {"script", TEXT_SCRIPT},
    {"plaintext", TEXT_PLAINTEXT},
};
#define N_TEXT_ELEMENTS ((int)(sizeof(TEXT_ELEMENTS) / sizeof(TEXT_ELEMENTS[0])))
#define LONGEST_NAME 9 /* "plaintext" */

static PyObject *wanted_names[N_WANTED]; /* interned str, one per WANTED */
static PyObject *escapes_to_fffd;         /* {0xDC80 + b: 0xFFFD}: surrogateescape's bytes as U+FFFD */
static unsigned char lower[256];
static unsigned char is_space[256];     /* HTML whitespace: TAB LF FF CR SPACE */
static unsigned char ends_name[256];    /* whitespace, '/', '>' */
static unsigned char ends_attr[256];    /* whitespace, '/', '>', '=' */
static unsigned char ends_unquoted[256]; /* whitespace, '>' */

static int
is_alpha(unsigned char c)
{
    return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
}

/* Whether [p, p + n) is `name`, ASCII case aside. */
static int
same_name(pos p, Py_ssize_t n, const char *name)
{
    if ((size_t)n != strlen(name))
        return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (lower[p[i]] != (unsigned char)name[i])
            return 0;
    return 1;
}

/* UTF-8 as str, each byte of an invalid sequence as one U+FFFD, as libxml2 has it (Python's
 * "replace" gives one for each longest invalid prefix). */
static PyObject *
decode(const char *p, Py_ssize_t n)
{
    PyObject *text = PyUnicode_DecodeUTF8(p, n, NULL);
    if (text != NULL || !PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
        return text;
    PyErr_Clear();
    text = PyUnicode_DecodeUTF8(p, n, "surrogateescape");
    if (text != NULL)
        Py_SETREF(text, PyObject_CallMethod(text, "translate", "O", escapes_to_fffd));
    return text;
}

/* A name or value as str: CR LF and CR read as LF, NUL as U+FFFD, and (lowered) ASCII
 * upper-case lowered; NULL with an exception set on failure. */
static PyObject *
text_of(pos p, Py_ssize_t n, int lowered)
{
    int plain = 1;
    for (Py_ssize_t i = 0; i < n && plain; i++)
        plain = p[i] != '\r' && p[i] != '\0' && !(lowered && p[i] >= 'A' && p[i] <= 'Z');
    if (plain)
        return decode((const char *)p, n);
    char *buffer = PyMem_Malloc((size_t)n * 3 + 1); /* NUL grows to three bytes */
    if (buffer == NULL)
        return PyErr_NoMemory();
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = p[i];
        if (c == '\r') {
            buffer[k++] = '\n';
            if (i + 1 < n && p[i + 1] == '\n')
                i++;
        } else if (c == '\0') {
            memcpy(buffer + k, "\xef\xbf\xbd", 3);
            k += 3;
        } else {
            buffer[k++] = (char)(lowered ? lower[c] : c);
        }
    }
    PyObject *text = decode(buffer, k);
    PyMem_Free(buffer);
    return text;
}

/* Adds one attribute to `attributes` unless it has one of that name already. */
static int
add_attribute(PyObject *attributes, PyObject *unescape, pos name, Py_ssize_t name_n, pos value, Py_ssize_t value_n)
{
    PyObject *key = text_of(name, name_n, 1);
    if (key == NULL)
        return -1;
    int present = PyDict_Contains(attributes, key);
    if (present != 0) {
        Py_DECREF(key);
        return present < 0 ? -1 : 0;
    }
    PyObject *text = text_of(value, value_n, 0);
    if (text != NULL && memchr(value, '&', (size_t)value_n) != NULL)
        Py_SETREF(text, PyObject_CallOneArg(unescape, text));
    int result = text == NULL ? -1 : PyDict_SetItem(attributes, key, text);
    Py_DECREF(key);
    Py_XDECREF(text);
    return result;
}

/* The attributes of a tag, from the end of its name: returns the byte after the tag's '>', or
 * NULL if the input ends first. With `attributes` NULL they are only skipped. *failed is set if
 * building them failed (an exception is set); *self_closing if the tag ends with "/>". */
static pos
read_attributes(pos p, pos end, PyObject *attributes, PyObject *unescape, int *failed, int *self_closing)
{
    for (;;) {
        /* before attribute name; a '/' not before '>' reads as whitespace (self-closing start tag state) */
        pos skipped = p;
        while (p < end && (is_space[*p] || *p == '/'))
            p++;
        if (p == end)
            return NULL;
        if (*p == '>') {
            *self_closing = p > skipped && p[-1] == '/';
            return p + 1;
        }
        pos name = p++; /* a first '=' belongs to the name */
        while (p < end && !ends_attr[*p])
            p++;
        pos name_end = p;
        while (p < end && is_space[*p])
            p++;
        if (p == end)
            return NULL;
        pos value = p, value_end = p;
        if (*p == '=') {
            p++;
            while (p < end && is_space[*p])
                p++;
            if (p == end)
                return NULL;
            if (*p == '"' || *p == '\'') {
                value = p + 1;
                value_end = memchr(value, *p, (size_t)(end - value));
                if (value_end == NULL)
                    return NULL;
                p = value_end + 1;
            } else if (*p != '>') { /* '>' here: the value is missing, the tag ends */
                value = p;
                while (p < end && !ends_unquoted[*p])
                    p++;
                if (p == end)
                    return NULL;
                value_end = p;
            }
        }
        if (attributes != NULL && add_attribute(attributes, unescape, name, name_end - name, value, value_end - value) < 0) {
            *failed = 1;
            return NULL;
        }
    }
}

/* The end of a tag name starting at p (whitespace, '/', '>' or the input's end). */
static pos
name_end(pos p, pos end)
{
    while (p < end && !ends_name[*p])
        p++;
    return p;
}

/* If an end tag named `name` starts at p (p after "</"), the byte after it; else NULL, and
 * *at_end tells whether the input ended inside it. */
static pos
end_tag(pos p, pos end, const char *name, int *at_end)
{
    Py_ssize_t n = (Py_ssize_t)strlen(name);
    *at_end = 0;
    if (end - p <= n || !same_name(p, n, name) || !ends_name[p[n]])
        return NULL;
    int unused;
    pos after = read_attributes(p + n, end, NULL, NULL, &unused, &unused);
    *at_end = after == NULL;
    return after;
}

/* The end of an RCDATA or RAWTEXT element's text and its end tag, from p. */
static pos
skip_raw(pos p, pos end, const char *name)
{
    while ((p = memchr(p, '<', (size_t)(end - p))) != NULL) {
        p++;
        if (p < end && *p == '/') {
            int at_end;
            pos after = end_tag(p + 1, end, name, &at_end);
            if (after != NULL || at_end)
                return after != NULL ? after : end;
        }
    }
    return end;
}

/* The length of the run of ASCII letters at p, and whether `name` is that run followed by a
 * byte that ends a name (*ended: the run reached a delimiter, not another byte or the end). */
static Py_ssize_t
letters(pos p, pos end, const char *name, int *named, int *ended)
{
    pos q = p;
    while (q < end && is_alpha(*q))
        q++;
    *ended = q < end && ends_name[*q];
    *named = *ended && same_name(p, q - p, name);
    return q - p;
}

/* The end of a script's text and its end tag, from p: the script data states of section 13.2.5. */
static pos
skip_script(pos p, pos end)
{
    enum { DATA, ESCAPED, DOUBLE } state = DATA;
    int dashes = 0; /* the dashes just read, up to two, in the escaped states */
    int at_end, named, ended;
    while (p < end) {
        if (state == DATA) {
            p = memchr(p, '<', (size_t)(end - p));
            if (p == NULL)
                return end;
            p++;
            if (p < end && *p == '/') {
                pos after = end_tag(p + 1, end, "script", &at_end);
                if (after != NULL || at_end)
                    return after != NULL ? after : end;
            } else if (end - p >= 3 && p[0] == '!' && p[1] == '-' && p[2] == '-') {
                state = ESCAPED;
                dashes = 2;
                p += 3;
            }
            continue;
        }
        unsigned char c = *p++;
        if (c == '-') {
            dashes += dashes < 2;
        } else if (c == '>' && dashes == 2) {
            state = DATA;
        } else if (c == '<') {
            dashes = 0;
            if (p < end && *p == '/') {
                if (state == ESCAPED) {
                    pos after = end_tag(p + 1, end, "script", &at_end);
                    if (after != NULL || at_end)
                        return after != NULL ? after : end;
                } else {
                    p += 1 + letters(p + 1, end, "script", &named, &ended);
                    if (ended) {
                        p++;
                        state = named ? ESCAPED : DOUBLE;
                    }
                }
            } else if (state == ESCAPED && p < end && is_alpha(*p)) {
                p += letters(p, end, "script", &named, &ended);
                if (ended) {
                    p++;
                    state = named ? DOUBLE : ESCAPED;
                }
            }
        } else {
            dashes = 0;
        }
    }
    return end;
}

/* The end of a comment that opens at lt ("<!--"): after the '>' that closes it, or the end. */
static pos
skip_comment(pos lt, pos end)
{
    pos p = lt + 4;
    if (p > end)
        return end;
    while ((p = memchr(p, '>', (size_t)(end - p))) != NULL) {
        if (p - 2 >= lt + 2 && p[-1] == '-' && p[-2] == '-')
            return p + 1;
        if (p - 3 >= lt + 4 && p[-1] == '!' && p[-2] == '-' && p[-3] == '-')
            return p + 1;
        p++;
    }
    return end;
}

/* After a '>' (a bogus comment's end), or the end. */
static pos
skip_to_gt(pos p, pos end)
{
    pos gt = memchr(p, '>', (size_t)(end - p));
    return gt != NULL ? gt + 1 : end;
}

static PyObject *
start_tags(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "start_tags(data, unescape) takes two arguments");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *unescape = args[1];
    PyObject *tags = PyList_New(0);
    if (tags == NULL)
        goto fail;
    pos p = view.buf, end = p + view.len;
    while (p < end && (p = memchr(p, '<', (size_t)(end - p))) != NULL) {
        pos lt = p++;
        if (p == end)
            break;
        unsigned char c = *p;
        if (is_alpha(c)) {
            pos name = p;
            p = name_end(p, end);
            Py_ssize_t n = p - name;
            int wanted = -1;
            enum text text = TEXT_DATA;
            const char *text_name = NULL;
            if (n <= LONGEST_NAME) {
                for (int i = 0; i < N_WANTED && wanted < 0; i++)
                    if (same_name(name, n, WANTED[i]))
                        wanted = i;
                for (int i = 0; i < N_TEXT_ELEMENTS && text_name == NULL; i++)
                    if (same_name(name, n, TEXT_ELEMENTS[i].name)) {
                        text = TEXT_ELEMENTS[i].text;
                        text_name = TEXT_ELEMENTS[i].name;
                    }
            }
            PyObject *attributes = NULL;
            if (wanted >= 0 && (attributes = PyDict_New()) == NULL)
                goto fail;
            int failed = 0, self_closing = 0;
            p = read_attributes(p, end, attributes, unescape, &failed, &self_closing);
            if (p == NULL) {
                Py_XDECREF(attributes);
                if (failed)
                    goto fail;
                break;
            }
            if (attributes != NULL) {
                PyObject *tag = PyTuple_Pack(2, wanted_names[wanted], attributes);
                Py_DECREF(attributes);
                if (tag == NULL || PyList_Append(tags, tag) < 0) {
                    Py_XDECREF(tag);
                    goto fail;
                }
                Py_DECREF(tag);
            }
            if (self_closing) /* libxml2 gives "<script/>" no content; browsers would read text up to "</script>" */
                continue;
            if (text == TEXT_RCDATA || text == TEXT_RAWTEXT)
                p = skip_raw(p, end, text_name);
            else if (text == TEXT_SCRIPT)
                p = skip_script(p, end);
            else if (text == TEXT_PLAINTEXT)
                break;
        } else if (c == '/') {
            p++;
            if (p < end && is_alpha(*p)) {
                int unused;
                p = read_attributes(name_end(p, end), end, NULL, NULL, &unused, &unused);
                if (p == NULL)
                    break;
            } else if (p < end && *p == '>') {
                p++;
            } else {
                p = skip_to_gt(p, end);
            }
        } else if (c == '!' && end - p >= 3 && p[1] == '-' && p[2] == '-') {
            p = skip_comment(lt, end);
        } else if (c == '!' || c == '?') {
            p = skip_to_gt(p, end);
        }
        /* else: '<' was text */
    }
    PyBuffer_Release(&view);
    return tags;
fail:
    Py_XDECREF(tags);
    PyBuffer_Release(&view);
    return NULL;
}

static PyMethodDef methods[] = {
    {"start_tags", (PyCFunction)(void (*)(void))start_tags, METH_FASTCALL,
     "start_tags(data, unescape) -> [(tag, attributes), ...]: the start tags named in TAGS of the UTF-8 page `data`, "
     "in document order, each with a dict of its attributes; values holding '&' pass through unescape(value)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_start_tags", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC
PyInit__start_tags(void)
{
    for (int c = 0; c < 256; c++) {
        lower[c] = (unsigned char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
        is_space[c] = c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r';
        ends_name[c] = is_space[c] || c == '/' || c == '>';
        ends_attr[c] = ends_name[c] || c == '=';
        ends_unquoted[c] = is_space[c] || c == '>';
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    PyObject *names = PyTuple_New(N_WANTED);
    if (names == NULL || (escapes_to_fffd = PyDict_New()) == NULL)
        goto fail;
    for (int b = 0x80; b < 0x100; b++) {
        PyObject *key = PyLong_FromLong(0xDC00 + b), *value = PyLong_FromLong(0xFFFD);
        int added = key != NULL && value != NULL ? PyDict_SetItem(escapes_to_fffd, key, value) : -1;
        Py_XDECREF(key);
        Py_XDECREF(value);
        if (added < 0)
            goto fail;
    }
    for (int i = 0; i < N_WANTED; i++) {
        if ((wanted_names[i] = PyUnicode_InternFromString(WANTED[i])) == NULL)
            goto fail;
        Py_INCREF(wanted_names[i]);
        PyTuple_SET_ITEM(names, i, wanted_names[i]);
    }
    if (PyModule_AddObject(m, "TAGS", names) < 0)
        goto fail;
    return m;
fail:
    Py_XDECREF(names);
    Py_DECREF(m);
    return NULL;
}
