/* StateWalk: the trie walk of promote.h from one state at a time, over a pattern packed once.
 *
 * TrieWalker.walk packs the pattern's rows and builds their lookup on every call, which is what a walk of
 * the whole lattice wants (a JSON Schema's chunked pattern: 2M arcs, 20-70 ms of packing) and what a walk
 * of one state cannot afford.  The lazy liveness of bpefst.promotion.regions walks the few states a decoder
 * needs, one at a time, so the packed rows and their lookup are made once here and kept with the walker.
 * Everything runs with the GIL held: one state's walk is a fraction of a millisecond.
 *
 * The walks of the whole rows (TrieWalker.walk, walk_transforms) take a StateWalk in place of the
 * transitions and read its packed rows as they are (state_walk_borrow): the declared part's walks and the
 * two threads of walk_groups pack a median JSON Schema's 2M arcs once instead of three times (1.9 ms each
 * over cl100k, and as many fresh pages).  Nothing writes the packed rows after over() made them, so walks on
 * other threads read them while this one walks; each walk's caller holds the StateWalk until it returns. */

typedef struct {
    PyObject_HEAD
    TrieWalker *walker; /* a strong reference: the trie the walks read (initialised, never re-initialised) */
    Rows rows;
    Lookup lookup;
    uint8_t *keep;      /* one byte per token, 0 leaves it out; NULL: every token */
    Ints found, stack, scratch, sorted;
    int32_t *group_of;  /* per state, -1 (walker_file_state's scratch) */
} StateWalk;

static void StateWalk_dealloc(StateWalk *s) {
    lookup_free(&s->lookup); /* (zeroed when never made) */
    rows_free(&s->rows);
    free(s->keep), free(s->group_of);
    free(s->found.data), free(s->stack.data), free(s->scratch.data), free(s->sorted.data);
    Py_XDECREF(s->walker);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyTypeObject StateWalkType;

/* `o`'s packed rows lent to `rows` when `o` is a StateWalk of `w` (1), else 0 (the caller packs `o`); -1 with
 * an exception for a StateWalk of another walker (its symbols are numbered by that walker's trie). */
static int state_walk_borrow(PyObject *o, const TrieWalker *w, Rows *rows) {
    if (!PyObject_TypeCheck(o, &StateWalkType)) return 0;
    const StateWalk *s = (const StateWalk *)o;
    if (s->walker != w) {
        PyErr_SetString(PyExc_ValueError, "the StateWalk's rows were packed for another trie");
        return -1;
    }
    *rows = s->rows;
    rows->borrowed = 1;
    return 1;
}

/* TrieWalker.over(transitions, keep=None) -> a StateWalk of the trie over these rows (copied: later changes
 * to `transitions` are not seen). */
static PyObject *TrieWalker_over(TrieWalker *w, PyObject *args) {
    PyObject *transitions, *keep_object = Py_None;
    if (!PyArg_ParseTuple(args, "O|O:over", &transitions, &keep_object)) return NULL;
    if (PyObject_TypeCheck(transitions, &StateWalkType)) {
        PyErr_SetString(PyExc_TypeError, "over() takes the transitions, not a StateWalk");
        return NULL;
    }
    Py_buffer keep_view = {0};
    const uint8_t *keep;
    StateWalk *s = PyObject_New(StateWalk, &StateWalkType);
    if (!s) return NULL;
    memset((char *)s + sizeof(PyObject), 0, sizeof(StateWalk) - sizeof(PyObject));
    if (walker_arguments(w, transitions, keep_object, &keep_view, &keep, &s->rows)) {
        Py_DECREF(s);
        return NULL;
    }
    Py_INCREF(w);
    s->walker = w;
    Py_ssize_t n = s->rows.states;
    if (n > INT32_MAX / 2) {
        PyBuffer_Release(&keep_view);
        Py_DECREF(s);
        PyErr_SetString(PyExc_ValueError, "too many states");
        return NULL;
    }
    if (keep) {
        size_t tokens = (size_t)w->max_token + 1;
        if ((s->keep = malloc(tokens))) memcpy(s->keep, keep, tokens);
    }
    PyBuffer_Release(&keep_view);
    s->group_of = malloc(((size_t)n + 1) * sizeof(int32_t));
    if ((keep && !s->keep) || !s->group_of || lookup_init_lazy(&s->lookup, &s->rows, w->symbols)) {
        Py_DECREF(s); /* (lookup_init leaves what it made to lookup_free) */
        return PyErr_NoMemory();
    }
    for (Py_ssize_t q = 0; q < n; q++) s->group_of[q] = -1;
    return (PyObject *)s;
}

/* walk(q) -> [(target, tokens)]: the lattice arcs of state q grouped by target in order of first appearance,
 * each group's kept tokens an array('I') in the order the walk finds them, groups left empty dropped (the
 * groups TrieWalker.walk files for q, unshared). */
static PyObject *StateWalk_walk(StateWalk *s, PyObject *arg) {
    long long q;
    if (!as_small_int(arg, &q) || q < 0 || q >= s->rows.states) {
        PyErr_SetString(PyExc_ValueError, "walk() takes a state of the transitions");
        return NULL;
    }
    s->found.length = 0;
    if (walker_walk_state(s->walker, &s->lookup, (int32_t)q, &s->found, &s->stack)) return PyErr_NoMemory();
    if (walker_group_by_target(s->found.data, s->found.length / 2, s->keep, s->group_of, &s->scratch, &s->sorted))
        return PyErr_NoMemory();
    const Ints *scratch = &s->scratch;
    PyObject *out = PyList_New(0);
    for (size_t g = 0; out && g < scratch->length / 3; g++) {
        size_t size = (size_t)scratch->data[3 * g + 1];
        if (!size) continue;
        PyObject *tokens = token_array((const uint32_t *)s->sorted.data + scratch->data[3 * g + 2], size);
        PyObject *item = tokens ? Py_BuildValue("(iN)", scratch->data[3 * g], tokens) : NULL;
        if (!item || PyList_Append(out, item)) Py_CLEAR(out);
        Py_XDECREF(item);
    }
    return out;
}

/* The targets of `pairs` (a Pairs or a dict q -> r) that are states, not walked and not open, pushed in the
 * pairs' order.  0, or -1 with an exception. */
static int close_push_targets(PyObject *pairs, Py_ssize_t n, const uint8_t *walked, const uint8_t *is_open, Ints *stack) {
    if (PyObject_TypeCheck(pairs, &PairsType)) {
        const Pairs *p = (const Pairs *)pairs;
        for (Py_ssize_t i = 0; i < p->size; i++) {
            int32_t r = p->target[i];
            if (r < 0 || r >= n) goto not_a_state;
            if (!walked[r] && !is_open[r] && ints_push(stack, r)) goto no_memory;
        }
        return 0;
    }
    if (!PyDict_Check(pairs)) {
        PyErr_SetString(PyExc_TypeError, "close(): a group's pairs must be a Pairs or a dict");
        return -1;
    }
    PyObject *key, *value;
    Py_ssize_t at = 0;
    while (PyDict_Next(pairs, &at, &key, &value)) {
        long long r;
        if (!as_small_int(value, &r) || r < 0 || r >= n) goto not_a_state;
        if (!walked[r] && !is_open[r] && ints_push(stack, (int32_t)r)) goto no_memory;
    }
    return 0;
not_a_state:
    PyErr_SetString(PyExc_ValueError, "close(): a group's pairs lead to what is not a state");
    return -1;
no_memory:
    PyErr_NoMemory();
    return -1;
}

/* close(groups, walked, is_open): the declared part's closure (bpefst.promotion.declared) in one call.  The
 * targets of the groups' pairs that are neither walked nor open are walked from, one state at a time, and so
 * are the targets of those walks, until none is left; each walk's groups (as walk(q) gives them, the pairs a
 * one-pair Pairs {q: r}) are appended to `groups`, and `walked` (a bytearray, one byte per state) marks every
 * state walked from.  The same groups in the same order as its twin, declared.close_by_walks (a stack: the last
 * target found is walked first), without a Python object per target read. */
static PyObject *StateWalk_close(StateWalk *s, PyObject *args) {
    PyObject *groups, *walked_object, *open_object, *result = NULL;
    if (!PyArg_ParseTuple(args, "O!OO:close", &PyList_Type, &groups, &walked_object, &open_object)) return NULL;
    Py_buffer walked_view = {0}, open_view = {0};
    Ints stack = {0};
    Py_ssize_t n = s->rows.states;
    if (PyObject_GetBuffer(walked_object, &walked_view, PyBUF_WRITABLE)) return NULL;
    if (PyObject_GetBuffer(open_object, &open_view, PyBUF_SIMPLE)) {
        PyBuffer_Release(&walked_view);
        return NULL;
    }
    uint8_t *walked = walked_view.buf;
    const uint8_t *is_open = open_view.buf;
    if (walked_view.len != n || open_view.len != n) {
        PyErr_SetString(PyExc_ValueError, "close(): walked and is_open must hold one byte per state");
        goto done;
    }
    Py_ssize_t given = PyList_GET_SIZE(groups);
    for (Py_ssize_t g = 0; g < given; g++) {
        PyObject *group = PyList_GET_ITEM(groups, g);
        if (!PyTuple_Check(group) || PyTuple_GET_SIZE(group) != 2) {
            PyErr_SetString(PyExc_TypeError, "close(): groups must be (tokens, pairs) tuples");
            goto done;
        }
        if (close_push_targets(PyTuple_GET_ITEM(group, 1), n, walked, is_open, &stack)) goto done;
    }
    while (stack.length) {
        int32_t q = stack.data[--stack.length];
        if (walked[q]) continue;
        walked[q] = 1;
        s->found.length = 0;
        if (walker_walk_state(s->walker, &s->lookup, q, &s->found, &s->stack) ||
            walker_group_by_target(s->found.data, s->found.length / 2, s->keep, s->group_of, &s->scratch, &s->sorted)) {
            PyErr_NoMemory();
            goto done;
        }
        const Ints *scratch = &s->scratch;
        for (size_t k = 0; k < scratch->length / 3; k++) {
            int32_t r = scratch->data[3 * k];
            size_t size = (size_t)scratch->data[3 * k + 1];
            if (!size) continue;
            PyObject *tokens = token_array((const uint32_t *)s->sorted.data + scratch->data[3 * k + 2], size);
            Pairs *pair = tokens ? pairs_new(1) : NULL;
            PyObject *item = NULL;
            if (pair) {
                pair->source[0] = q, pair->target[0] = r;
                item = PyTuple_Pack(2, tokens, (PyObject *)pair);
            }
            Py_XDECREF(tokens), Py_XDECREF((PyObject *)pair);
            if (!item || PyList_Append(groups, item)) {
                Py_XDECREF(item);
                goto done;
            }
            Py_DECREF(item);
            if (!walked[r] && !is_open[r] && ints_push(&stack, r)) {
                PyErr_NoMemory();
                goto done;
            }
        }
    }
    result = Py_None;
    Py_INCREF(result);
done:
    free(stack.data);
    PyBuffer_Release(&walked_view);
    PyBuffer_Release(&open_view);
    return result;
}

static PyObject *StateWalk_len(StateWalk *s, PyObject *unused) { return PyLong_FromSsize_t(s->rows.states); }

static PyMethodDef StateWalk_methods[] = {
    {"walk", (PyCFunction)StateWalk_walk, METH_O,
     "walk(q) -> [(target, tokens)]: state q's lattice arcs by target in order of first appearance, the kept "
     "tokens of each an array('I') in the walk's order, empty groups dropped."},
    {"close", (PyCFunction)StateWalk_close, METH_VARARGS,
     "close(groups, walked, is_open): walks from the groups' targets neither walked nor open, and from their "
     "walks' targets in turn, appending each walk's groups (tokens, Pairs {q: r}) to groups and marking walked "
     "(a bytearray) where it walked from."},
    {"states", (PyCFunction)StateWalk_len, METH_NOARGS, "states() -> the states of the rows walked."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject StateWalkType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "bpefst._core.StateWalk",
    .tp_basicsize = sizeof(StateWalk),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A TrieWalker's walk from one state at a time over rows packed once (TrieWalker.over).",
    .tp_dealloc = (destructor)StateWalk_dealloc,
    .tp_methods = StateWalk_methods,
};
