/* GuideCore: the two calls a decoder makes per token, answered from memory once a state has been met.
 *
 *   fill_next_token_bitmask(state, bitmask, index=0)   copy the state's packed row into a bitmask
 *   step(state, token)                                  the next state, or None
 *   advance(state, tokens)                              step along several tokens (a forced chain, a draft)
 *
 * bpefst.promotion.guided.GuidedAutomaton subclasses this type.  Everything here is a memo over two Python
 * methods of the subclass, which stay the definition (and are the whole of the pure path's GuidedAutomaton):
 *
 *   _packed_row(state, words) -> bytes      the next-token mask as 4 * words little-endian bytes
 *   _step_missed(state, token) -> int|None  the automaton's step
 *
 * so a decoder that reuses a guide pays two C calls per token and no Python frame (a warm step of a Python
 * guide is about 1 us, most of it the calls themselves).  Anything the memo does not cover -- a state or
 * token that is not a small non-negative int, a bitmask without a writable C-contiguous int32 buffer (torch
 * tensors), keyword arguments other than index, a row index numpy would reject -- is handed to the Python
 * method of the same name with a leading underscore and "_slow" (`_fill_slow`, `_advance_slow`), which
 * behaves, and fails, as before.
 *
 * Both memos are bounded: the rows by the subclass's `_rows_kept` (a full table starts over, as the Python
 * caches do), the steps by STEPS_KEPT.
 */

#define STEPS_KEPT (1 << 20)

/* An open-addressing table from 64-bit keys to fixed-size values (linear probing, at most 3/4 full): both
 * memos are one, the steps with an int32 value, the rows with a KeptRow. */
typedef struct {
    uint64_t *keys; /* MEMO_FREE for a free slot */
    char *values; /* value_size bytes per slot */
    size_t value_size, capacity, count; /* capacity: 0 or a power of two */
} MemoTable;

#define MEMO_FREE UINT64_MAX

typedef struct {
    PyObject *row; /* bytes of 4 * words */
    uint32_t *sparse; /* NULL, or a row with few nonzero words: {count, word index, word, word index, word, ...} */
} KeptRow;

/* A row is written as zeros plus its nonzero words when at most one word in SPARSE_SHARE is nonzero: a
 * small language's rows over a large vocabulary (a date over cl100k: 12.5 KB, a few dozen words set), where
 * clearing costs half of copying. */
#define SPARSE_SHARE 16

typedef struct {
    PyObject_HEAD
    MemoTable steps; /* state << 32 | token -> int32 next state, -1 for None */
    MemoTable rows; /* state -> KeptRow, for bitmasks rows_words wide */
    Py_ssize_t rows_words, rows_kept;
} GuideCore;

static inline size_t memo_home(uint64_t key, size_t capacity) {
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 17) & (capacity - 1);
}

/* The value kept for `key`, or NULL. */
static void *memo_find(const MemoTable *t, uint64_t key) {
    if (!t->capacity) return NULL;
    for (size_t i = memo_home(key, t->capacity);; i = (i + 1) & (t->capacity - 1)) {
        if (t->keys[i] == key) return t->values + i * t->value_size;
        if (t->keys[i] == MEMO_FREE) return NULL;
    }
}

/* Empties the table, `release` called on each value kept (when not NULL). */
static void memo_clear(MemoTable *t, void (*release)(void *value)) {
    if (release)
        for (size_t i = 0; i < t->capacity; i++)
            if (t->keys[i] != MEMO_FREE) release(t->values + i * t->value_size);
    free(t->keys);
    free(t->values);
    t->keys = NULL;
    t->values = NULL;
    t->capacity = t->count = 0;
}

static int memo_grow(MemoTable *t, size_t capacity) {
    uint64_t *keys = malloc(capacity * sizeof(uint64_t));
    char *values = malloc(capacity * t->value_size);
    if (!keys || !values) {
        free(keys);
        free(values);
        return -1;
    }
    memset(keys, 0xff, capacity * sizeof(uint64_t));
    for (size_t j = 0; j < t->capacity; j++) {
        if (t->keys[j] == MEMO_FREE) continue;
        size_t i = memo_home(t->keys[j], capacity);
        while (keys[i] != MEMO_FREE) i = (i + 1) & (capacity - 1);
        keys[i] = t->keys[j];
        memcpy(values + i * t->value_size, t->values + j * t->value_size, t->value_size);
    }
    free(t->keys);
    free(t->values);
    t->keys = keys;
    t->values = values;
    t->capacity = capacity;
    return 0;
}

/* The slot for a `key` not in the table, to be filled by the caller, within `kept` keys (a full table starts
 * over, `release` called on what it held); NULL when the memo cannot keep it (out of memory, or kept <= 0). */
static void *memo_insert(MemoTable *t, uint64_t key, size_t kept, void (*release)(void *value)) {
    if (!kept) return NULL;
    if (t->count >= kept) memo_clear(t, release);
    if (4 * (t->count + 1) > 3 * t->capacity && memo_grow(t, t->capacity ? 2 * t->capacity : 64)) return NULL;
    size_t i = memo_home(key, t->capacity);
    while (t->keys[i] != MEMO_FREE) i = (i + 1) & (t->capacity - 1);
    t->keys[i] = key;
    t->count++;
    return t->values + i * t->value_size;
}

static void release_kept_row(void *value) {
    KeptRow *kept = value;
    Py_DECREF(kept->row);
    free(kept->sparse);
}

/* The nonzero words of a row of `words` words, when few enough (SPARSE_SHARE), else NULL (also when out of
 * memory: the row is then copied whole). */
static uint32_t *sparse_words(const char *row, Py_ssize_t words) {
    Py_ssize_t nonzero = 0, most = words / SPARSE_SHARE;
    uint32_t word;
    for (Py_ssize_t k = 0; k < words; k++) {
        memcpy(&word, row + 4 * k, 4);
        if (word && ++nonzero > most) return NULL;
    }
    uint32_t *found = malloc((size_t)(1 + 2 * nonzero) * sizeof(uint32_t)), *next = found + 1;
    if (!found) return NULL;
    found[0] = (uint32_t)nonzero;
    for (Py_ssize_t k = 0; k < words; k++) {
        memcpy(&word, row + 4 * k, 4);
        if (word) {
            *next++ = (uint32_t)k;
            *next++ = word;
        }
    }
    return found;
}

/* Keeps a new reference to `row` (4 * rows_words bytes) for `state`, within rows_kept rows. */
static void kept_rows_add(GuideCore *self, int64_t state, PyObject *row) {
    KeptRow *kept = memo_insert(&self->rows, (uint64_t)state, self->rows_kept > 0 ? (size_t)self->rows_kept : 0,
                                release_kept_row);
    if (!kept) return;
    Py_INCREF(row);
    kept->row = row;
    kept->sparse = sparse_words(PyBytes_AS_STRING(row), self->rows_words);
}

/* Writes `row` (4 * words bytes; `sparse`, its nonzero words, when known) into `into`. */
static void write_row(PyObject *row, const uint32_t *sparse, Py_ssize_t words, char *into) {
    if (!sparse) {
        memcpy(into, PyBytes_AS_STRING(row), (size_t)(4 * words));
        return;
    }
    memset(into, 0, (size_t)(4 * words));
    for (uint32_t k = 0; k < sparse[0]; k++) memcpy(into + 4 * (size_t)sparse[1 + 2 * k], &sparse[2 + 2 * k], 4);
}

/* The int in [0, 2**31) that `value` is, or -1 (not an exact int, or out of that range). */
static int64_t small_index(PyObject *value) {
    if (!PyLong_CheckExact(value)) return -1;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow || v < 0 || v > INT32_MAX) {
        if (v == -1 && PyErr_Occurred()) PyErr_Clear();
        return -1;
    }
    return (int64_t)v;
}

static PyObject *guide_call(GuideCore *self, const char *name, PyObject *const *args, size_t nargs, PyObject *kwnames) {
    PyObject *method_name = PyUnicode_InternFromString(name);
    if (!method_name) return NULL;
    PyObject *stack[8];
    size_t n = nargs + (kwnames ? (size_t)PyTuple_GET_SIZE(kwnames) : 0);
    if (n + 1 > 8) {
        Py_DECREF(method_name);
        PyErr_SetString(PyExc_TypeError, "too many arguments");
        return NULL;
    }
    stack[0] = (PyObject *)self;
    for (size_t i = 0; i < n; i++) stack[i + 1] = args[i];
    PyObject *result = PyObject_VectorcallMethod(method_name, stack, (nargs + 1) | PY_VECTORCALL_ARGUMENTS_OFFSET, kwnames);
    Py_DECREF(method_name);
    return result;
}

/* step(state, token) */
static PyObject *GuideCore_step(GuideCore *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) return guide_call(self, "_step_missed", args, (size_t)nargs, NULL);
    int64_t state = small_index(args[0]), token = small_index(args[1]);
    if (state < 0 || token < 0) return guide_call(self, "_step_missed", args, 2, NULL);
    uint64_t key = (uint64_t)state << 32 | (uint64_t)token;
    const int32_t *target = memo_find(&self->steps, key);
    if (target) {
        if (*target < 0) Py_RETURN_NONE;
        return PyLong_FromLong(*target);
    }
    PyObject *found = guide_call(self, "_step_missed", args, 2, NULL);
    if (!found) return NULL;
    int64_t next = found == Py_None ? -1 : small_index(found);
    if (found == Py_None || next >= 0) {
        int32_t *kept = memo_insert(&self->steps, key, STEPS_KEPT, NULL);
        if (kept) *kept = (int32_t)next;
    }
    return found;
}

/* advance(state, tokens): the state after every token, or None once one leaves the language. */
static PyObject *GuideCore_advance(GuideCore *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) return guide_call(self, "_advance_slow", args, (size_t)nargs, NULL);
    PyObject *iterator = PyObject_GetIter(args[1]);
    if (!iterator) return NULL;
    PyObject *state = args[0], *token;
    Py_INCREF(state);
    while ((token = PyIter_Next(iterator))) {
        if (state == Py_None) {
            Py_DECREF(token);
            break;
        }
        PyObject *pair[2] = {state, token};
        PyObject *next = GuideCore_step(self, pair, 2);
        Py_DECREF(token);
        Py_DECREF(state);
        state = next;
        if (!state) break;
    }
    Py_DECREF(iterator);
    if (!state) return NULL;
    if (PyErr_Occurred()) {
        Py_DECREF(state);
        return NULL;
    }
    return state;
}

/* The bitmask's buffer if it is a writable C-contiguous buffer of 4-byte ints of 1 or 2 dimensions. */
static int int32_rows(PyObject *bitmask, Py_buffer *view) {
    if (PyObject_GetBuffer(bitmask, view, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_ND) < 0) {
        PyErr_Clear();
        return 0;
    }
    const char *format = view->format ? view->format : "B";
    if (*format == '<' || *format == '=' || *format == '@') format++;
#if PY_LITTLE_ENDIAN
    int little = 1;
#else
    int little = 0;
#endif
    if (little && view->itemsize == 4 && (view->ndim == 1 || view->ndim == 2) && (!strcmp(format, "i") || !strcmp(format, "I")) &&
        view->shape && view->shape[view->ndim - 1] > 0)
        return 1;
    PyBuffer_Release(view);
    return 0;
}

/* fill_next_token_bitmask(state, bitmask, index=0) */
static PyObject *GuideCore_fill(GuideCore *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    Py_ssize_t n_keywords = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *index_object = nargs == 3 ? args[2] : NULL;
    if (n_keywords == 1 && nargs == 2 && PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "index") == 0)
        index_object = args[2];
    else if (n_keywords || nargs < 2 || nargs > 3)
        return guide_call(self, "_fill_slow", args, (size_t)nargs, kwnames);
    int64_t state = small_index(args[0]);
    Py_ssize_t index = 0;
    if (index_object) {
        index = PyLong_CheckExact(index_object) ? PyLong_AsSsize_t(index_object) : -1;
        if (index == -1 && PyErr_Occurred()) PyErr_Clear();
    }
    Py_buffer view;
    if (state < 0 || index < 0 || !int32_rows(args[1], &view)) return guide_call(self, "_fill_slow", args, (size_t)nargs, kwnames);
    Py_ssize_t words = view.shape[view.ndim - 1];
    if (view.ndim == 2 && index >= view.shape[0]) {
        PyBuffer_Release(&view);
        return guide_call(self, "_fill_slow", args, (size_t)nargs, kwnames);
    }
    if (words != self->rows_words) {
        memo_clear(&self->rows, release_kept_row);
        self->rows_words = words;
    }
    const KeptRow *kept = memo_find(&self->rows, (uint64_t)state);
    PyObject *row = kept ? kept->row : NULL;
    if (row) {
        Py_INCREF(row);
    } else {
        PyObject *call[2] = {args[0], NULL};
        if (!(call[1] = PyLong_FromSsize_t(words))) {
            PyBuffer_Release(&view);
            return NULL;
        }
        row = guide_call(self, "_packed_row", call, 2, NULL);
        Py_DECREF(call[1]);
        if (!row) {
            PyBuffer_Release(&view);
            return NULL;
        }
        if (!PyBytes_Check(row) || PyBytes_GET_SIZE(row) != 4 * words) {
            Py_DECREF(row);
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_RuntimeError, "_packed_row returned something other than 4 * words bytes");
            return NULL;
        }
        if (words != self->rows_words) { /* _packed_row asked for another width meanwhile (re-entered) */
            memo_clear(&self->rows, release_kept_row);
            self->rows_words = words;
        }
        if (!memo_find(&self->rows, (uint64_t)state)) kept_rows_add(self, state, row); /* (re-entered: kept already) */
        kept = memo_find(&self->rows, (uint64_t)state);
    }
    char *into = (char *)view.buf + (view.ndim == 2 ? index * 4 * words : 0);
    write_row(row, kept && kept->row == row ? kept->sparse : NULL, words, into);
    Py_DECREF(row);
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}

/* kept() -> (rows, steps): how many packed rows and steps the memo holds (for tests of its bound). */
static PyObject *GuideCore_kept(GuideCore *self, PyObject *Py_UNUSED(ignored)) {
    return Py_BuildValue("(nn)", (Py_ssize_t)self->rows.count, (Py_ssize_t)self->steps.count);
}

static PyObject *GuideCore_forget(GuideCore *self, PyObject *Py_UNUSED(ignored)) {
    memo_clear(&self->rows, release_kept_row);
    memo_clear(&self->steps, NULL);
    Py_RETURN_NONE;
}

static PyObject *GuideCore_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    GuideCore *self = (GuideCore *)PyType_GenericNew(type, args, kwds);
    if (self) {
        self->steps.value_size = sizeof(int32_t);
        self->rows.value_size = sizeof(KeptRow);
    }
    return (PyObject *)self;
}

static void GuideCore_dealloc(GuideCore *self) {
    memo_clear(&self->rows, release_kept_row);
    memo_clear(&self->steps, NULL);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef GuideCore_methods[] = {
    {"fill_next_token_bitmask", (PyCFunction)(void (*)(void))GuideCore_fill, METH_FASTCALL | METH_KEYWORDS,
     "fill_next_token_bitmask(state, bitmask, index=0): write state's allowed tokens into row index of a packed "
     "int32 bitmask."},
    {"step", (PyCFunction)(void (*)(void))GuideCore_step, METH_FASTCALL,
     "step(state, token) -> the next state, or None if token leaves the language."},
    {"advance", (PyCFunction)(void (*)(void))GuideCore_advance, METH_FASTCALL,
     "advance(state, tokens) -> the state after tokens, or None if one leaves the language."},
    {"_kept", (PyCFunction)GuideCore_kept, METH_NOARGS, "_kept() -> (rows, steps) held by the memo."},
    {"_forget", (PyCFunction)GuideCore_forget, METH_NOARGS, "_forget(): drop the memo."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef GuideCore_members[] = {
    {"_rows_kept", T_PYSSIZET, offsetof(GuideCore, rows_kept), 0, "packed rows the memo keeps"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject GuideCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "bpefst._core.GuideCore",
    .tp_basicsize = sizeof(GuideCore),
    .tp_dealloc = (destructor)GuideCore_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The per-token calls of a guide, memoized in C (bpefst.promotion.guided.GuidedAutomaton's base).",
    .tp_methods = GuideCore_methods,
    .tp_members = GuideCore_members,
    .tp_new = GuideCore_new,
};
