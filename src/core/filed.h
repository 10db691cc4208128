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

static inline void put_u32(uint8_t *at, uint32_t v) {
    at[0] = (uint8_t)v, at[1] = (uint8_t)(v >> 8), at[2] = (uint8_t)(v >> 16), at[3] = (uint8_t)(v >> 24);
}

/* A group's tokens as uint32 little-endian bytes: an array('I') (a walk's group) read as it is, any other
 * sequence of ints below 2**32 converted; NULL with an exception set. */
static PyObject *filed_tokens_bytes(PyObject *tokens) {
    Py_buffer view;
    if (PyObject_GetBuffer(tokens, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) == 0) {
        PyObject *out = NULL;
        if (view.itemsize == 4 && view.format && strcmp(view.format, "I") == 0 &&
            (out = PyBytes_FromStringAndSize(NULL, view.len))) {
            const uint32_t *from = view.buf;
            for (Py_ssize_t i = 0; i < view.len / 4; i++) put_u32((uint8_t *)PyBytes_AS_STRING(out) + 4 * i, from[i]);
        }
        PyBuffer_Release(&view);
        if (out || PyErr_Occurred()) return out;
    } else {
        PyErr_Clear();
    }
    PyObject *fast = PySequence_Fast(tokens, "a filed group must be a sequence of tokens");
    Py_ssize_t n = fast ? PySequence_Fast_GET_SIZE(fast) : 0;
    PyObject *out = fast ? PyBytes_FromStringAndSize(NULL, 4 * n) : NULL;
    for (Py_ssize_t i = 0; out && i < n; i++) {
        unsigned long v = PyLong_AsUnsignedLong(PySequence_Fast_GET_ITEM(fast, i));
        if ((v == (unsigned long)-1 && PyErr_Occurred()) || v > UINT32_MAX) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_OverflowError, "a token does not fit 32 bits");
            Py_CLEAR(out);
        } else {
            put_u32((uint8_t *)PyBytes_AS_STRING(out) + 4 * i, (uint32_t)v);
        }
    }
    Py_XDECREF(fast);
    return out;
}

/* A batch's tokens (settled one by one) as uint32 little-endian bytes, or NULL. */
static PyObject *filed_batch_bytes(const Filed *f, uint32_t batch) {
    uint32_t from = f->batch_start[batch], n = f->batch_start[batch + 1] - from;
    PyObject *out = PyBytes_FromStringAndSize(NULL, 4 * (Py_ssize_t)n);
    for (uint32_t i = 0; out && i < n; i++) put_u32((uint8_t *)PyBytes_AS_STRING(out) + 4 * i, f->settled[from + i]);
    return out;
}

/* first[g]: the first group whose tokens are g's object (setup_fields numbers objects; g itself for most).
 * -1 when out of memory. */
static int filed_same_objects(const Filed *f, uint32_t *first) {
    size_t capacity = 16;
    while (capacity < 2 * (size_t)f->groups) capacity *= 2;
    uint32_t *slot = malloc(capacity * sizeof(uint32_t)); /* group + 1, 0 free */
    if (!slot) {
        PyErr_NoMemory();
        return -1;
    }
    memset(slot, 0, capacity * sizeof(uint32_t));
    for (uint32_t g = 0; g < f->groups; g++) {
        size_t at = (size_t)(((uintptr_t)f->group[g] >> 4) * 0x9E3779B97F4A7C15ull >> 20) & (capacity - 1);
        while (slot[at] && f->group[slot[at] - 1] != f->group[g]) at = (at + 1) & (capacity - 1);
        if (!slot[at]) slot[at] = g + 1;
        first[g] = slot[at] - 1;
    }
    free(slot);
    return 0;
}

/* Filed.packed() -> (rows, groups): what guide_cache.setup_fields stores, made here instead of a Python pass
 * over every pair (cl100k, a median JSON Schema: 430,000 of them, most of the 0.6 s its guide took to
 * write).  rows[q] is q's pairs as uint32 little-endian (group number, r); groups[k] is the k-th group's
 * tokens so, numbered in the order the rows first name them: a walk's group (one object however many states
 * file it) once, a batch settled one by one each time (setup_fields numbers the objects it is given, and
 * filed[q] makes a new list per batch).  Byte for byte guide_cache.packed_filed_in_python. */
static PyObject *Filed_packed(Filed *f, PyObject *Py_UNUSED(ignored)) {
    PyObject *rows = PyList_New(f->states), *groups = PyList_New(0), *result = NULL;
    uint32_t *number = malloc(2 * ((size_t)f->groups + 1) * sizeof(uint32_t)), *first; /* per group */
    if (!rows || !groups || !number) {
        if (!number) PyErr_NoMemory();
        goto done;
    }
    first = number + f->groups + 1;
    memset(number, 0xFF, ((size_t)f->groups + 1) * sizeof(uint32_t));
    if (filed_same_objects(f, first)) goto done;
    for (uint32_t q = 0; q < f->states; q++) {
        uint32_t from = f->start[q], to = f->start[q + 1];
        PyObject *row = PyBytes_FromStringAndSize(NULL, 8 * (Py_ssize_t)(to - from));
        if (!row) goto done;
        PyList_SET_ITEM(rows, q, row);
        uint8_t *at = (uint8_t *)PyBytes_AS_STRING(row);
        for (uint32_t k = from; k < to; k++, at += 8) {
            uint32_t code = f->code[k];
            if (code < f->groups) code = first[code];
            uint32_t g = code < f->groups ? number[code] : UINT32_MAX;
            if (g == UINT32_MAX) {
                g = (uint32_t)PyList_GET_SIZE(groups);
                PyObject *data = code < f->groups ? filed_tokens_bytes(f->group[code]) : filed_batch_bytes(f, code - f->groups);
                if (!data || PyList_Append(groups, data)) {
                    Py_XDECREF(data);
                    goto done;
                }
                Py_DECREF(data);
                if (code < f->groups) number[code] = g;
            }
            put_u32(at, g), put_u32(at + 4, f->target[k]);
        }
    }
    result = PyTuple_Pack(2, rows, groups);
done:
    free(number);
    Py_XDECREF(rows), Py_XDECREF(groups);
    return result;
}

static PyMethodDef Filed_methods[] = {
    {"__reduce__", (PyCFunction)reduce_as_list, METH_NOARGS, "Pickled as the list of lists it stands for."},
    {"packed", (PyCFunction)Filed_packed, METH_NOARGS,
     "(rows, groups) as guide_cache.setup_fields packs them: rows[q] the (group number, r) pairs of state q, "
     "groups[k] a group's tokens, uint32 little-endian, groups numbered as the rows first name them."},
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
