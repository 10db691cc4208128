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
 * that, what the promotion reads of every row without making dicts: cuts(), weights(), has_boundary(),
 * reachable(), reached_with(). */

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

/* reached_with(part, start, part_start) -> bytearray: per state, 1 where some prefix of a word of `part` leads
 * from `start` (the BOUNDARY arcs read at no cost to the part), else 0.  `part` is a DFA's rows (a list of
 * dicts symbol -> target) whose language lies within this automaton's words with their BOUNDARY arcs removed:
 * a JSON Schema's closed translation against its open chunked pattern (bpefst.promotion.declared).  The pairs
 * (state, part state) are walked from (start, part_start), each once: a hash set of the pairs met, the part's
 * rows as a dense table by symbol. */
typedef struct {
    uint64_t *slot; /* pair + 1, 0 for an empty slot */
    size_t mask, used;
} PairSet;

static size_t pair_hash(uint64_t key) { /* (splitmix64's finalizer: every bit of the pair reaches the low bits) */
    key = (key ^ (key >> 30)) * 0xBF58476D1CE4E5B9ULL;
    key = (key ^ (key >> 27)) * 0x94D049BB133111EBULL;
    return (size_t)(key ^ (key >> 31));
}

static int pair_set_add(PairSet *set, uint64_t pair) { /* 1 if new, 0 if met before, -1 out of memory */
    if (2 * (set->used + 1) > set->mask + 1) {
        size_t size = 2 * (set->mask + 1);
        uint64_t *slot = calloc(size, sizeof(uint64_t));
        if (!slot) return -1;
        for (size_t k = 0; k <= set->mask; k++)
            if (set->slot[k]) {
                size_t h = pair_hash(set->slot[k]) & (size - 1);
                while (slot[h]) h = (h + 1) & (size - 1);
                slot[h] = set->slot[k];
            }
        free(set->slot);
        set->slot = slot, set->mask = size - 1;
    }
    uint64_t key = pair + 1;
    size_t h = pair_hash(key) & set->mask;
    while (set->slot[h]) {
        if (set->slot[h] == key) return 0;
        h = (h + 1) & set->mask;
    }
    set->slot[h] = key, set->used++;
    return 1;
}

#define PART_TABLE_LIMIT (1 << 26) /* part states x symbols: a wider part is refused (ValueError) */

static PyObject *PackedRows_reached_with(PackedRows *p, PyObject *args) {
    PyObject *part;
    Py_ssize_t start, part_start;
    if (!PyArg_ParseTuple(args, "O!nn:reached_with", &PyList_Type, &part, &start, &part_start)) return NULL;
    Py_ssize_t m = PyList_GET_SIZE(part);
    if (start < 0 || start >= p->states || part_start < 0 || part_start >= m) {
        PyErr_SetString(PyExc_IndexError, "reached_with(): a start out of range");
        return NULL;
    }
    long long width = 0; /* symbols of the part's table: its largest symbol + 1 */
    for (Py_ssize_t c = 0; c < m; c++) {
        PyObject *row = PyList_GET_ITEM(part, c), *key, *value;
        Py_ssize_t pos = 0;
        if (!PyDict_Check(row)) {
            PyErr_SetString(PyExc_TypeError, "reached_with() takes the part's rows as dicts");
            return NULL;
        }
        while (PyDict_Next(row, &pos, &key, &value)) {
            if (!PyLong_CheckExact(key) || !PyLong_CheckExact(value)) { /* (nothing of Python's runs in between) */
                PyErr_SetString(PyExc_TypeError, "reached_with() takes the part's arcs as ints");
                return NULL;
            }
            long long symbol = PyLong_AsLongLong(key), target = PyLong_AsLongLong(value);
            if ((symbol == -1 || target == -1) && PyErr_Occurred()) return NULL;
            if (symbol < 0 || target < 0 || target >= m) {
                PyErr_SetString(PyExc_ValueError, "reached_with(): a part arc with a negative symbol or no target state");
                return NULL;
            }
            if (symbol >= width) width = symbol + 1;
        }
    }
    if (width && (long long)m * width > PART_TABLE_LIMIT) {
        PyErr_SetString(PyExc_ValueError, "reached_with(): the part's alphabet is too wide for its table");
        return NULL;
    }
    int32_t *next = malloc(((size_t)m * (size_t)width + 1) * sizeof(int32_t));
    PyObject *reached = next ? PyByteArray_FromStringAndSize(NULL, p->states) : PyErr_NoMemory();
    PairSet set = {calloc(1024, sizeof(uint64_t)), 1023, 0};
    size_t depth = 0, room = 1024;
    uint64_t *stack = malloc(room * sizeof(uint64_t));
    if (reached && (!set.slot || !stack)) {
        Py_CLEAR(reached);
        PyErr_NoMemory();
    }
    if (reached) {
        memset(next, 0xff, ((size_t)m * (size_t)width + 1) * sizeof(int32_t));
        for (Py_ssize_t c = 0; c < m; c++) {
            PyObject *key, *value;
            Py_ssize_t pos = 0;
            while (PyDict_Next(PyList_GET_ITEM(part, c), &pos, &key, &value)) {
                long long symbol = PyLong_AsLongLong(key), target = PyLong_AsLongLong(value);
                next[(size_t)c * (size_t)width + (size_t)symbol] = (int32_t)target; /* (checked above) */
            }
        }
        char *flag = PyByteArray_AS_STRING(reached);
        memset(flag, 0, (size_t)p->states);
        flag[start] = 1;
        uint64_t first = (uint64_t)start << 32 | (uint64_t)part_start;
        pair_set_add(&set, first);
        stack[depth++] = first;
        while (depth && reached) {
            uint64_t pair = stack[--depth];
            int32_t q = (int32_t)(pair >> 32), c = (int32_t)(pair & 0xffffffffu), r = p->row_of[q];
            for (size_t a = p->start[r]; a < p->start[r + 1]; a++) {
                long long symbol = p->key[a];
                int32_t c_next = c;
                if (symbol != PACKED_BOUNDARY) {
                    if (symbol < 0 || symbol >= width) continue;
                    c_next = next[(size_t)c * (size_t)width + (size_t)symbol];
                    if (c_next < 0) continue;
                }
                uint64_t pair_next = (uint64_t)p->target[a] << 32 | (uint64_t)c_next;
                int added = pair_set_add(&set, pair_next);
                if (added > 0 && depth == room) {
                    uint64_t *grown = realloc(stack, 2 * room * sizeof(uint64_t));
                    if (grown) stack = grown, room *= 2;
                    else added = -1;
                }
                if (added < 0) {
                    Py_CLEAR(reached);
                    PyErr_NoMemory();
                    break;
                }
                if (added) flag[p->target[a]] = 1, stack[depth++] = pair_next;
            }
        }
    }
    free(next), free(set.slot), free(stack);
    return reached;
}

/* reachable(sources) -> bytearray: per state, 1 where some path (BOUNDARY arcs included) leads from a state
 * whose byte in `sources` (one per state) is not 0, those states included. */
static PyObject *PackedRows_reachable(PackedRows *p, PyObject *sources) {
    Py_buffer view;
    if (PyObject_GetBuffer(sources, &view, PyBUF_SIMPLE) < 0) return NULL;
    if (view.len != p->states) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "reachable() takes one byte per state");
        return NULL;
    }
    PyObject *reached = PyByteArray_FromStringAndSize(NULL, p->states);
    int32_t *stack = reached ? malloc(((size_t)p->states + 1) * sizeof(int32_t)) : NULL;
    if (reached && !stack) {
        Py_CLEAR(reached);
        PyErr_NoMemory();
    }
    if (reached) {
        char *flag = PyByteArray_AS_STRING(reached);
        const unsigned char *given = view.buf;
        size_t depth = 0;
        for (Py_ssize_t q = 0; q < p->states; q++)
            if ((flag[q] = given[q] != 0)) stack[depth++] = (int32_t)q;
        while (depth) { /* each state pushed once: when its flag is set */
            int32_t r = p->row_of[stack[--depth]];
            for (size_t a = p->start[r]; a < p->start[r + 1]; a++)
                if (!flag[p->target[a]]) flag[p->target[a]] = 1, stack[depth++] = p->target[a];
        }
    }
    free(stack);
    PyBuffer_Release(&view);
    return reached;
}

static PyMethodDef PackedRows_methods[] = {
    {"follow", (PyCFunction)PackedRows_follow, METH_VARARGS,
     "follow(q, symbols) -> the state reached from q along symbols, or None where an arc is missing."},
    {"cuts", (PyCFunction)PackedRows_cuts, METH_NOARGS, "Per state, the target of its BOUNDARY arc, or None."},
    {"weights", (PyCFunction)PackedRows_weights, METH_O,
     "weights(table) -> per state, the sum of table[symbol] (an array('q')) over its row's symbols."},
    {"has_boundary", (PyCFunction)PackedRows_has_boundary, METH_NOARGS, "Whether some state has a BOUNDARY arc."},
    {"reachable", (PyCFunction)PackedRows_reachable, METH_O,
     "reachable(sources) -> per state, 1 where a path leads from a state whose byte in sources is not 0."},
    {"reached_with", (PyCFunction)PackedRows_reached_with, METH_VARARGS,
     "reached_with(part, start, part_start) -> per state, 1 where a prefix of a word of part (rows as dicts) leads."},
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
