/* Filed: the token groups the liveness solve filed under each lattice state, held as arrays.
 *
 * solve_liveness (liveness.h) files under a state q, in the order it finds them, pairs (tokens, r): the
 * tokens of a group whose arcs into an open r are all good (the walk's own array('I')), or the tokens of a
 * group settled one by one (a list).  A JSON Schema's lattice files 150,000-300,000 of them; as a list per
 * state, a tuple per pair and a list per settled batch they were made in the solve and freed again when the
 * language went, a fifth of a median schema's set-up between the two.  Here they are arrays, and a state's
 * list is made when Python asks for it (OnDemandCanonical.lattice_row and the guide cache: once a state).
 *
 * As a sequence it is the list of lists it stands for: len(), filed[q] (a new list each time, holding the
 * group's own array), iteration, == with such a list, pickling as one. */

typedef struct {
    PyObject_HEAD
    uint32_t states, groups;
    uint32_t *start;       /* states + 1: q -> its pairs */
    uint32_t *code;        /* per pair: a group, or groups + a batch of tokens settled one by one */
    uint32_t *target;      /* per pair */
    PyObject **group;      /* per group: its tokens (a reference held) */
    uint32_t *batch_start; /* batches + 1: a batch's tokens in `settled` */
    uint32_t *settled;
} Filed;

static void Filed_dealloc(Filed *f) {
    if (f->group)
        for (uint32_t g = 0; g < f->groups; g++) Py_XDECREF(f->group[g]);
    PyMem_Free(f->group);
    free(f->start), free(f->code), free(f->target), free(f->batch_start), free(f->settled);
    Py_TYPE(f)->tp_free((PyObject *)f);
}

static Py_ssize_t Filed_length(Filed *f) { return f->states; }

/* A batch's tokens as a list of ints, as the pure solve files them. */
static PyObject *filed_batch(const Filed *f, uint32_t batch) {
    uint32_t from = f->batch_start[batch], to = f->batch_start[batch + 1];
    PyObject *list = PyList_New(to - from);
    for (uint32_t i = from; list && i < to; i++) {
        PyObject *token = PyLong_FromUnsignedLong(f->settled[i]);
        if (!token) Py_CLEAR(list);
        else PyList_SET_ITEM(list, i - from, token);
    }
    return list;
}

static PyObject *Filed_item(Filed *f, Py_ssize_t q) {
    if (q < 0 || q >= f->states) {
        PyErr_SetString(PyExc_IndexError, "state out of range");
        return NULL;
    }
    uint32_t from = f->start[q], to = f->start[q + 1];
    PyObject *out = PyList_New(to - from);
    for (uint32_t k = from; out && k < to; k++) {
        uint32_t code = f->code[k];
        PyObject *tokens = code < f->groups ? Py_NewRef(f->group[code]) : filed_batch(f, code - f->groups);
        PyObject *r = tokens ? PyLong_FromUnsignedLong(f->target[k]) : NULL, *pair = r ? PyTuple_New(2) : NULL;
        if (!pair) {
            Py_XDECREF(tokens), Py_XDECREF(r);
            Py_CLEAR(out);
            break;
        }
        PyTuple_SET_ITEM(pair, 0, tokens);
        PyTuple_SET_ITEM(pair, 1, r);
        PyList_SET_ITEM(out, k - from, pair);
    }
    return out;
}

static PyMethodDef Filed_methods[] = {
    {"__reduce__", (PyCFunction)reduce_as_list, METH_NOARGS, "Pickled as the list of lists it stands for."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods Filed_as_sequence = {
    .sq_length = (lenfunc)Filed_length,
    .sq_item = (ssizeargfunc)Filed_item,
};

static PyTypeObject FiledType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bpefst._core.Filed",
    .tp_basicsize = sizeof(Filed),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The token groups filed under each lattice state by solve_liveness: filed[q] == [(tokens, r), ...].",
    .tp_dealloc = (destructor)Filed_dealloc,
    .tp_as_sequence = &Filed_as_sequence,
    .tp_richcompare = compare_as_list,
    .tp_methods = Filed_methods,
};
