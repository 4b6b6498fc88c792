/* The normalisation behind store.signature.html_signature, in one pass over the bytes.
 *
 * It writes what this Python would, byte for byte (tests/test_signature.py holds the Python as
 * the oracle and compares them on generated markup):
 *
 *     lowered = payload.lower()
 *     simplified = b"<".join(re.compile(rb"<(/?[a-z0-9]*)[^>]*>").split(lowered))
 *     simplified = simplified.translate(None, b"0123456789 \t\n\r\f\v")
 *     return simplified, b"frame" in lowered
 *
 * Why C: that Python costs ~80 us for a 16 KB page, nearly all of it in the regular
 * expression's split, about a tenth of what the crawler spends on a page; one pass with byte
 * tables and memchr costs ~15 us (bench/RESULTS.md, issue 18, "The hot path").
 *
 * The regular expression matches a '<' exactly when a '>' follows it somewhere, and the match
 * ends at the first '>' after it; so a '<' at or after the last '>' is text, and a tag is
 * "<", an optional "/", the longest run of [a-z0-9], then anything up to the next '>'.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

static unsigned char lower[256];
static unsigned char dropped[256]; /* digits and ASCII whitespace: never written out */
static unsigned char name_char[256]; /* [a-z0-9] */

/* Whether "frame" occurs in the bytes, in any case, without lowering them all: memchr for an
 * 'f' or an 'F', then four bytes compared. */
static int
has_frame(const unsigned char *in, Py_ssize_t n)
{
    static const unsigned char firsts[] = {'f', 'F'};
    if (n < 5)
        return 0;
    for (int k = 0; k < 2; k++) {
        const unsigned char *p = in, *last = in + n - 5; /* the last place a match can start */
        while (p <= last && (p = memchr(p, firsts[k], (size_t)(last - p + 1))) != NULL) {
            if (lower[p[1]] == 'r' && lower[p[2]] == 'a' && lower[p[3]] == 'm' && lower[p[4]] == 'e')
                return 1;
            p++;
        }
    }
    return 0;
}

static PyObject *
simplify_html(PyObject *Py_UNUSED(module), PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *in = view.buf;
    Py_ssize_t n = view.len;
    PyObject *result = PyBytes_FromStringAndSize(NULL, n); /* the output is never longer */
    if (result == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(result);
    Py_ssize_t written = 0;

    Py_ssize_t last_gt = n - 1;
    while (last_gt >= 0 && in[last_gt] != '>')
        last_gt--;

    Py_ssize_t i = 0;
    while (i < n) {
        /* text, up to a '<' that opens a tag: every byte written, then kept unless dropped */
        for (; i < n; i++) {
            unsigned char c = lower[in[i]];
            if (c == '<' && i < last_gt)
                break;
            out[written] = c;
            written += !dropped[c];
        }
        if (i == n)
            break;
        out[written++] = '<';
        i++;
        /* the tag's name: an optional '/', then [a-z0-9]*, digits dropped */
        if (in[i] == '/') {
            out[written++] = '/';
            i++;
        }
        for (; name_char[lower[in[i]]]; i++) {
            out[written] = lower[in[i]];
            written += !dropped[in[i]];
        }
        /* its attributes, up to the first '>', which exists since i <= last_gt */
        i = (const unsigned char *)memchr(in + i, '>', (size_t)(last_gt + 1 - i)) - in + 1;
        out[written++] = '<';
    }
    int frame = has_frame(in, n);
    PyBuffer_Release(&view);
    if (_PyBytes_Resize(&result, written) < 0)
        return NULL;
    return Py_BuildValue("(NO)", result, frame ? Py_True : Py_False);
}

static PyMethodDef methods[] = {
    {"simplify_html", simplify_html, METH_O,
     "simplify_html(payload) -> (simplified, has_frame): the page lower-cased, tags reduced to their names, "
     "digits and whitespace dropped; and whether 'frame' occurs in it, in any case."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_signature", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC
PyInit__signature(void)
{
    for (int c = 0; c < 256; c++) {
        lower[c] = (unsigned char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
        name_char[c] = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        dropped[c] = (c >= '0' && c <= '9') || c == ' ' || (c >= '\t' && c <= '\r');
    }
    return PyModule_Create(&module);
}
