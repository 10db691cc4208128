/* Pairs: a token group's (state, target) pairs held as two arrays, seen from Python as the dict q -> r.
 *
 * The compiled walks hand the token lattice to the liveness solve as groups (tokens, {q: r}) (see
 * agnostic.walk_groups).  As int dicts the pairs were made one PyDict_SetItem at a time and read back by the
 * solve one PyDict_Next and two int conversions at a time: over cl100k a median JSON Schema's lattice has
 * 340,000 of them, and making them was 12-13 ms of its 85 ms walk state by state.  The solve reads these
 * arrays as they are; Python reads them as the mapping the pure walks make (len, [q], in, iteration in
 * ascending q, keys/values/items, get, == with a dict or another Pairs, pickling as a dict).
 *
 * Sources are strictly ascending (the walks file a group's pairs state by state), which makes [q] a binary
 * search and == between two Pairs a comparison of the arrays.  Read-only: nothing changes the pairs once made. */

typedef struct {
    PyObject_HEAD
    Py_ssize_t size;
    int32_t *source; /* strictly ascending */
    int32_t *target;
} Pairs;

static PyTypeObject PairsType;

static void Pairs_dealloc(Pairs *p) {
    free(p->source);
    Py_TYPE(p)->tp_free((PyObject *)p);
}

/* A Pairs of `size` pairs for its maker to fill (sources strictly ascending); NULL with MemoryError. */
static Pairs *pairs_new(Py_ssize_t size) {
    Pairs *p = PyObject_New(Pairs, &PairsType);
    if (!p) return NULL;
    p->size = size;
    p->source = malloc(2 * (size_t)size * sizeof(int32_t) + 4); /* sources, then targets: one block */
    p->target = p->source ? p->source + size : NULL;
    if (!p->source) {
        Py_DECREF(p);
        PyErr_NoMemory();
        return NULL;
    }
    return p;
}

/* Whether the sources are strictly ascending, as every reader here assumes (a maker's check). */
static int pairs_ascending(const int32_t *source, Py_ssize_t size) {
    for (Py_ssize_t i = 1; i < size; i++)
        if (source[i] <= source[i - 1]) return 0;
    return 1;
}

/* The index of source q, or -1. */
static Py_ssize_t pairs_find(const Pairs *p, long long q) {
    Py_ssize_t lo = 0, hi = p->size;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (p->source[mid] == q) return mid;
        if (p->source[mid] < q) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

/* The index of `key` if it is an int among the sources, -1 if not, -2 with an exception. */
static Py_ssize_t pairs_index(const Pairs *p, PyObject *key) {
    if (!PyLong_Check(key)) return -1;
    int overflow;
    long long q = PyLong_AsLongLongAndOverflow(key, &overflow);
    if (q == -1 && PyErr_Occurred()) return -2;
    return overflow ? -1 : pairs_find(p, q);
}

static Py_ssize_t Pairs_length(Pairs *p) { return p->size; }

static PyObject *Pairs_subscript(Pairs *p, PyObject *key) {
    Py_ssize_t i = pairs_index(p, key);
    if (i == -2) return NULL;
    if (i < 0) {
        PyErr_SetObject(PyExc_KeyError, key);
        return NULL;
    }
    return PyLong_FromLong(p->target[i]);
}

static int Pairs_contains(Pairs *p, PyObject *key) {
    Py_ssize_t i = pairs_index(p, key);
    return i == -2 ? -1 : i >= 0;
}

/* The dict q -> r these pairs stand for. */
static PyObject *pairs_as_dict(const Pairs *p) {
    PyObject *out = _PyDict_NewPresized(p->size);
    for (Py_ssize_t i = 0; out && i < p->size; i++) {
        PyObject *q = PyLong_FromLong(p->source[i]), *r = q ? PyLong_FromLong(p->target[i]) : NULL;
        if (!r || PyDict_SetItem(out, q, r) < 0) Py_CLEAR(out);
        Py_XDECREF(q), Py_XDECREF(r);
    }
    return out;
}

/* The sources (which = 0), targets (1) or (source, target) tuples (2) as a list, in ascending source order. */
static PyObject *pairs_list(const Pairs *p, int which) {
    PyObject *out = PyList_New(p->size);
    for (Py_ssize_t i = 0; out && i < p->size; i++) {
        PyObject *item = which == 0   ? PyLong_FromLong(p->source[i])
                         : which == 1 ? PyLong_FromLong(p->target[i])
                                      : Py_BuildValue("(ii)", p->source[i], p->target[i]);
        if (!item) Py_CLEAR(out);
        else PyList_SET_ITEM(out, i, item);
    }
    return out;
}

static PyObject *Pairs_keys(Pairs *p, PyObject *unused) {
    (void)unused;
    return pairs_list(p, 0);
}

static PyObject *Pairs_values(Pairs *p, PyObject *unused) {
    (void)unused;
    return pairs_list(p, 1);
}

static PyObject *Pairs_items(Pairs *p, PyObject *unused) {
    (void)unused;
    return pairs_list(p, 2);
}

static PyObject *Pairs_iter(Pairs *p) {
    PyObject *keys = pairs_list(p, 0), *iterator = keys ? PyObject_GetIter(keys) : NULL;
    Py_XDECREF(keys);
    return iterator;
}

static PyObject *Pairs_get(Pairs *p, PyObject *args) {
    PyObject *key, *fallback = Py_None;
    if (!PyArg_UnpackTuple(args, "get", 1, 2, &key, &fallback)) return NULL;
    Py_ssize_t i = pairs_index(p, key);
    if (i == -2) return NULL;
    return i < 0 ? Py_NewRef(fallback) : PyLong_FromLong(p->target[i]);
}

/* == and != as the dict: with another Pairs, the arrays (sources ascending, so equal mappings have equal
 * arrays); with a dict, the dict this stands for. */
static PyObject *Pairs_richcompare(PyObject *self, PyObject *other, int op) {
    if (op != Py_EQ && op != Py_NE) Py_RETURN_NOTIMPLEMENTED;
    if (PyObject_TypeCheck(other, &PairsType)) {
        const Pairs *a = (const Pairs *)self, *b = (const Pairs *)other;
        int equal = a->size == b->size && !memcmp(a->source, b->source, 2 * (size_t)a->size * sizeof(int32_t));
        return PyBool_FromLong(op == Py_EQ ? equal : !equal);
    }
    if (!PyDict_Check(other)) Py_RETURN_NOTIMPLEMENTED;
    PyObject *mine = pairs_as_dict((const Pairs *)self);
    PyObject *result = mine ? PyObject_RichCompare(mine, other, op) : NULL;
    Py_XDECREF(mine);
    return result;
}

static PyObject *Pairs_repr(Pairs *p) {
    PyObject *mine = pairs_as_dict(p), *text = mine ? PyObject_Repr(mine) : NULL;
    Py_XDECREF(mine);
    return text;
}

/* Pickled as the dict it stands for. */
static PyObject *Pairs_reduce(Pairs *p, PyObject *unused) {
    (void)unused;
    PyObject *mine = pairs_as_dict(p);
    return mine ? Py_BuildValue("(O(N))", (PyObject *)&PyDict_Type, mine) : NULL;
}

static PyMethodDef Pairs_methods[] = {
    {"keys", (PyCFunction)Pairs_keys, METH_NOARGS, "The states, ascending (a list)."},
    {"values", (PyCFunction)Pairs_values, METH_NOARGS, "Their targets, in the states' order (a list)."},
    {"items", (PyCFunction)Pairs_items, METH_NOARGS, "(state, target) tuples, states ascending (a list)."},
    {"get", (PyCFunction)Pairs_get, METH_VARARGS, "get(q, default=None) -> q's target, or default."},
    {"__reduce__", (PyCFunction)Pairs_reduce, METH_NOARGS, "Pickled as the dict it stands for."},
    {NULL, NULL, 0, NULL},
};

static PyMappingMethods Pairs_as_mapping = {
    .mp_length = (lenfunc)Pairs_length,
    .mp_subscript = (binaryfunc)Pairs_subscript,
};

static PySequenceMethods Pairs_as_sequence = {
    .sq_contains = (objobjproc)Pairs_contains,
};

static PyTypeObject PairsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "bpefst._core.Pairs",
    .tp_basicsize = sizeof(Pairs),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_MAPPING,
    .tp_doc = "A token group's (state, target) pairs as arrays, read as the dict q -> r (the compiled walks' groups).",
    .tp_dealloc = (destructor)Pairs_dealloc,
    .tp_as_mapping = &Pairs_as_mapping,
    .tp_as_sequence = &Pairs_as_sequence,
    .tp_iter = (getiterfunc)Pairs_iter,
    .tp_richcompare = Pairs_richcompare,
    .tp_repr = (reprfunc)Pairs_repr,
    .tp_hash = PyObject_HashNotImplemented,
    .tp_methods = Pairs_methods,
};
