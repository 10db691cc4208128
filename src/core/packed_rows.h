/* PackedRows: a DFA's rows held as arrays, seen from Python as a list of dicts.
 *
 * chunk_product's chunked pattern (a JSON Schema's has 20,000-150,000 states and millions of arcs) is read
 * by the compiled trie walks, which take these arrays as they are, and by Python one row at a time (a
 * decoder's next state, the cuts), so a row's dict is made only when Python asks for it, and kept.  Before,
 * every row was a dict: made, packed back into arrays by each walk, then freed, a fifth of a schema's
 * set-up.  States with equal rows share one row, as they shared one dict.
 *
 * As a sequence it is what DFA.transitions is: len(), rows[q] (a dict symbol -> target, the same object
 * every time: read it, do not change it), iteration, == with a list of dicts (and pickling as one).  Beside
 * that, what the promotion reads of every row without making dicts: cuts(), weights(), has_boundary(). */

#define PACKED_BOUNDARY (-1LL) /* the key of a row's BOUNDARY arc (symbols are >= 0) */

typedef struct {
    PyObject_HEAD
    Py_ssize_t states, rows;
    int32_t *row_of;    /* state -> its row */
    size_t *start;      /* rows + 1: a row's arcs */
    long long *key;     /* per arc: its symbol, or PACKED_BOUNDARY */
    int32_t *target;    /* per arc */
    PyObject *boundary; /* the key BOUNDARY arcs have in Python */
    PyObject **made;    /* per row: its dict once asked for */
} PackedRows;

static void PackedRows_dealloc(PackedRows *p) {
    if (p->made)
        for (Py_ssize_t r = 0; r < p->rows; r++) Py_XDECREF(p->made[r]);
    free(p->made), free(p->row_of), free(p->start), free(p->key), free(p->target);
    Py_XDECREF(p->boundary);
    Py_TYPE(p)->tp_free((PyObject *)p);
}

static Py_ssize_t PackedRows_length(PackedRows *p) { return p->states; }

static PyObject *PackedRows_item(PackedRows *p, Py_ssize_t q) {
    if (q < 0 || q >= p->states) {
        PyErr_SetString(PyExc_IndexError, "state out of range");
        return NULL;
    }
    int32_t r = p->row_of[q];
    if (!p->made[r]) {
        PyObject *row = _PyDict_NewPresized((Py_ssize_t)(p->start[r + 1] - p->start[r]));
        if (!row) return NULL;
        for (size_t a = p->start[r]; a < p->start[r + 1]; a++) {
            PyObject *key = p->key[a] == PACKED_BOUNDARY ? Py_NewRef(p->boundary) : PyLong_FromLongLong(p->key[a]);
            PyObject *target = key ? PyLong_FromLong(p->target[a]) : NULL;
            int failed = !target || PyDict_SetItem(row, key, target);
            Py_XDECREF(key);
            Py_XDECREF(target);
            if (failed) {
                Py_DECREF(row);
                return NULL;
            }
        }
        p->made[r] = row;
    }
    return Py_NewRef(p->made[r]);
}

/* == and != as the list of lists: PackedRows' and Filed's (a sequence of the same type is listed too). */
static PyObject *compare_as_list(PyObject *self, PyObject *other, int op) {
    if (op != Py_EQ && op != Py_NE) Py_RETURN_NOTIMPLEMENTED;
    PyObject *mine = PySequence_List(self);
    if (!mine) return NULL;
    PyObject *theirs = PyObject_TypeCheck(other, Py_TYPE(self)) ? PySequence_List(other) : Py_NewRef(other);
    PyObject *result = theirs ? PyObject_RichCompare(mine, theirs, op) : NULL;
    Py_DECREF(mine);
    Py_XDECREF(theirs);
    return result;
}

/* Pickled as the list it stands for. */
static PyObject *reduce_as_list(PyObject *self, PyObject *unused) {
    (void)unused;
    PyObject *items = PySequence_List(self);
    return items ? Py_BuildValue("(O(N))", (PyObject *)&PyList_Type, items) : NULL;
}

/* cuts() -> per state, the target of its BOUNDARY arc, or None. */
static PyObject *PackedRows_cuts(PackedRows *p, PyObject *unused) {
    PyObject *out = PyList_New(p->states);
    for (Py_ssize_t q = 0; out && q < p->states; q++) {
        int32_t r = p->row_of[q];
        PyObject *cut = NULL;
        for (size_t a = p->start[r]; a < p->start[r + 1] && !cut; a++)
            if (p->key[a] == PACKED_BOUNDARY && !(cut = PyLong_FromLong(p->target[a]))) Py_CLEAR(out);
        if (out) PyList_SET_ITEM(out, q, cut ? cut : Py_NewRef(Py_None));
    }
    return out;
}

/* weights(table) -> per state, the sum of table[symbol] over the symbols its row reads: table an array('q')
 * indexed by symbol, the symbols past its end and the BOUNDARY arc weighing nothing.  Summed once per row. */
static PyObject *PackedRows_weights(PackedRows *p, PyObject *table) {
    Py_buffer view;
    if (PyObject_GetBuffer(table, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (view.itemsize != 8 || !view.format || strcmp(view.format, "q") != 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_TypeError, "weights() takes an array('q') indexed by symbol");
        return NULL;
    }
    const long long *weight = view.buf;
    Py_ssize_t symbols = view.len / 8;
    long long *sum = malloc((size_t)p->rows * sizeof(long long) + 8);
    PyObject *out = sum ? PyList_New(p->states) : PyErr_NoMemory();
    for (Py_ssize_t r = 0; out && r < p->rows; r++) {
        long long total = 0;
        for (size_t a = p->start[r]; a < p->start[r + 1]; a++)
            if (p->key[a] >= 0 && p->key[a] < symbols) total += weight[p->key[a]];
        sum[r] = total;
    }
    for (Py_ssize_t q = 0; out && q < p->states; q++) {
        PyObject *item = PyLong_FromLongLong(sum[p->row_of[q]]);
        if (!item) Py_CLEAR(out);
        else PyList_SET_ITEM(out, q, item);
    }
    free(sum);
    PyBuffer_Release(&view);
    return out;
}

/* has_boundary() -> whether some state has a BOUNDARY arc. */
static PyObject *PackedRows_has_boundary(PackedRows *p, PyObject *unused) {
    for (Py_ssize_t r = 0; r < p->rows; r++)
        for (size_t a = p->start[r]; a < p->start[r + 1]; a++)
            if (p->key[a] == PACKED_BOUNDARY) Py_RETURN_TRUE;
    Py_RETURN_FALSE;
}

/* follow(q, symbols) -> the state reached from q along the symbols (a sequence of ints), None where an arc is
 * missing: a decoder's step reads a token's spelling through the chunked pattern without making the dicts of
 * the rows on its way (a cold step's first read of a row made its dict, 200 arcs between two characters). */
static PyObject *PackedRows_follow(PackedRows *p, PyObject *args) {
    Py_ssize_t q;
    PyObject *symbols;
    if (!PyArg_ParseTuple(args, "nO:follow", &q, &symbols)) return NULL;
    if (q < 0 || q >= p->states) {
        PyErr_SetString(PyExc_IndexError, "state out of range");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(symbols, "follow() takes a sequence of symbols");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    long long boundary = PyLong_Check(p->boundary) ? PyLong_AsLongLong(p->boundary) : PACKED_BOUNDARY;
    if (boundary == -1 && PyErr_Occurred()) PyErr_Clear(); /* (a boundary past 64 bits: no symbol is it) */
    int32_t state = (int32_t)q;
    for (Py_ssize_t k = 0; k < n && state >= 0; k++) {
        long long symbol = PyLong_AsLongLong(items[k]);
        if (symbol == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return NULL;
        }
        if (symbol == boundary) symbol = PACKED_BOUNDARY; /* as rows[q][BOUNDARY] reads it */
        else if (symbol < 0) symbol = PACKED_BOUNDARY - 1; /* no arc */
        int32_t r = p->row_of[state], next = -1;
        if (symbol != PACKED_BOUNDARY - 1)
            for (size_t a = p->start[r]; a < p->start[r + 1]; a++)
                if (p->key[a] == symbol) {
                    next = p->target[a];
                    break;
                }
        state = next;
    }
    Py_DECREF(seq);
    if (state < 0) Py_RETURN_NONE;
    return PyLong_FromLong(state);
}

static PyMethodDef PackedRows_methods[] = {
    {"follow", (PyCFunction)PackedRows_follow, METH_VARARGS,
     "follow(q, symbols) -> the state reached from q along symbols, or None where an arc is missing."},
    {"cuts", (PyCFunction)PackedRows_cuts, METH_NOARGS, "Per state, the target of its BOUNDARY arc, or None."},
    {"weights", (PyCFunction)PackedRows_weights, METH_O,
     "weights(table) -> per state, the sum of table[symbol] (an array('q')) over its row's symbols."},
    {"has_boundary", (PyCFunction)PackedRows_has_boundary, METH_NOARGS, "Whether some state has a BOUNDARY arc."},
    {"__reduce__", (PyCFunction)reduce_as_list, METH_NOARGS, "Pickled as the list of dicts it stands for."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods PackedRows_as_sequence = {
    .sq_length = (lenfunc)PackedRows_length,
    .sq_item = (ssizeargfunc)PackedRows_item,
};

static PyTypeObject PackedRowsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "bpefst._core.PackedRows",
    .tp_basicsize = sizeof(PackedRows),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A DFA's rows as arrays, read as a list of dicts (made when asked for); chunk_product's result.",
    .tp_dealloc = (destructor)PackedRows_dealloc,
    .tp_as_sequence = &PackedRows_as_sequence,
    .tp_richcompare = compare_as_list,
    .tp_hash = PyObject_HashNotImplemented,
    .tp_methods = PackedRows_methods,
};

/* An empty PackedRows of `states` states and `rows` rows of `arcs` arcs in all, for its maker to fill
 * (row_of, start, key, target); NULL with an exception when out of memory. */
static PackedRows *packed_rows_new(Py_ssize_t states, Py_ssize_t rows, size_t arcs, PyObject *boundary) {
    PackedRows *p = PyObject_New(PackedRows, &PackedRowsType);
    if (!p) return NULL;
    p->states = states, p->rows = rows;
    p->row_of = malloc((size_t)states * sizeof(int32_t) + 4);
    p->start = malloc(((size_t)rows + 1) * sizeof(size_t));
    p->key = malloc((arcs + 1) * sizeof(long long));
    p->target = malloc((arcs + 1) * sizeof(int32_t));
    p->made = calloc((size_t)rows + 1, sizeof(PyObject *));
    p->boundary = Py_NewRef(boundary);
    if (!p->row_of || !p->start || !p->key || !p->target || !p->made) {
        Py_DECREF(p);
        PyErr_NoMemory();
        return NULL;
    }
    return p;
}
