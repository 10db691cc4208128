/* The compiled loops behind `bpefst validate` (the pure twins are in
 * bpefst/pipeline/validate.py, token_chunks.py and bpe/compatibility.py).
 *
 * The validator reads a stream of ids at the token level: a walk of the
 * token-level chunk automaton (rows built and owned by Python's TokenChunks),
 * then a test of every adjacent pair the walk marks as inside one chunk.  Three
 * loops run here:
 *
 *   walk_rows      the walk: row = row[class of id], token by token, stopping
 *                  where a row's entry is not built yet (Python fills it);
 *   PairChecker    the pair test: is (u, v) a canonical pair?  Berglund & van
 *                  der Merwe's spine walk (seed 000 Sec. 6.5; the algorithm is
 *                  explained in bpefst/bpe/compatibility.py), over the merge
 *                  forest's rank/left/right arrays and a pair -> rank table,
 *                  with a bounded set of pairs already known canonical;
 *   parse_ids      whitespace-separated decimal ids (what `bpefst tokenize`
 *                  writes) into a list, or None for anything else (Python then
 *                  names the bad word); format_ids writes them.
 */
#ifndef BPEFST_VALIDATE_H
#define BPEFST_VALIDATE_H

#include "bpe.h"

#define GOOD_BITS 20                                /* 2**20 slots (8 MB) for known-canonical pairs */
#define GOOD_PAIRS_MAX ((size_t)1 << (GOOD_BITS - 1)) /* at most half full: the set starts over when full */

typedef struct {
    PyObject_HEAD
    int32_t *rank, *left, *right; /* per token: the merge that builds it (-1: a base symbol) and its children */
    uint32_t size;
    PairTable merges; /* (left, right) -> rank of every merge */
    uint64_t *good;   /* open addressing, EMPTY_KEY where free: pairs known canonical */
    size_t good_count;
    uint32_t *solve_id, *solve_token; /* the liveness solve's numbering of tokens (liveness.h), made on first use */
    uint32_t solve_base, solve_range;
} PairChecker;

/* ---------------------------------------------------------------- token lists as array('I')
 * A token lattice group holds up to a vocabulary's tokens (cl100k: 100,000 in a JSON string's groups).  It
 * goes to Python and back as an array('I'): made with one copy, read back by the liveness solve with another,
 * an int made only for a token Python reads.  As lists of ints (an int object touched per token on the way
 * out, in, and when freed), they took 10-14 % of the first mask of bench_guided's JSON and person schemas. */
_Static_assert(sizeof(unsigned int) == 4, "array('I') holds 32-bit items");

static PyObject *token_array_type; /* array.array, imported on first use */

static PyObject *token_array(const uint32_t *tokens, size_t count) {
    if (!token_array_type) {
        PyObject *module = PyImport_ImportModule("array");
        if (!module) return NULL;
        token_array_type = PyObject_GetAttrString(module, "array");
        Py_DECREF(module);
        if (!token_array_type) return NULL;
    }
    PyObject *data = PyBytes_FromStringAndSize((const char *)tokens, (Py_ssize_t)(count * 4));
    if (!data) return NULL;
    PyObject *out = PyObject_CallFunction(token_array_type, "sO", "I", data);
    Py_DECREF(data);
    return out;
}

/* A view of an array('I') (or any contiguous buffer of native uint32 items) in `view`, 0; -1 with a
 * TypeError for anything else. */
static int token_buffer(PyObject *tokens, Py_buffer *view) {
    if (PyObject_CheckBuffer(tokens) && PyObject_GetBuffer(tokens, view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) == 0) {
        if (view->itemsize == 4 && view->format && !strcmp(view->format, "I")) return 0;
        PyBuffer_Release(view);
    }
    PyErr_Clear();
    PyErr_SetString(PyExc_TypeError, "tokens must be a list of ints or an array('I')");
    return -1;
}

/* The number of ids in a list of ints or an array('I'); -1 (an exception set) for anything else. */
static Py_ssize_t token_count(PyObject *tokens) {
    if (PyList_Check(tokens)) return PyList_GET_SIZE(tokens);
    Py_buffer view;
    if (token_buffer(tokens, &view)) return -1;
    Py_ssize_t count = view.len / 4;
    PyBuffer_Release(&view);
    return count;
}

/* Copy `count` ids (token_count's) from a list of ints or an array('I') into out, each checked < size. */
static int token_copy(PyObject *tokens, Py_ssize_t count, uint32_t size, uint32_t *out);

static uint64_t good_slot(uint64_t key) { return (key * 0x9E3779B97F4A7C15ull) >> (64 - GOOD_BITS); }

static int good_contains(const PairChecker *c, uint64_t key) {
    for (uint64_t slot = good_slot(key);; slot = (slot + 1) & (2 * GOOD_PAIRS_MAX - 1)) {
        if (c->good[slot] == key) return 1;
        if (c->good[slot] == EMPTY_KEY) return 0;
    }
}

static void good_add(PairChecker *c, uint64_t key) {
    if (c->good_count >= GOOD_PAIRS_MAX) { /* half full: start over rather than grow without bound */
        memset(c->good, 0xFF, 2 * GOOD_PAIRS_MAX * sizeof(uint64_t));
        c->good_count = 0;
    }
    uint64_t slot = good_slot(key);
    while (c->good[slot] != EMPTY_KEY) {
        if (c->good[slot] == key) return;
        slot = (slot + 1) & (2 * GOOD_PAIRS_MAX - 1);
    }
    c->good[slot] = key;
    c->good_count++;
}

static uint32_t merge_rank(const PairTable *table, uint32_t left, uint32_t right) {
    uint32_t unused;
    return pair_rank(table, left, right, &unused);
}

/* compatible_before(forest, x, y, limit): does no merge across the x | y boundary fire before time
 * `limit`?  Walk back in time from the pair, undoing the later-built boundary symbol each step; the pair
 * is not canonical when a merge of the current boundary pair falls inside its live window (ties: see
 * compatibility.py).  Ranks fall strictly along every spine, so the walk ends. */
static int compatible_before(const PairTable *merges, const int32_t *rank, const int32_t *left, const int32_t *right,
                             uint32_t x, uint32_t y, int64_t limit) {
    int strict = 1;
    for (;;) {
        uint32_t m = merge_rank(merges, x, y);
        if (m != NO_RANK && ((int64_t)m < limit || ((int64_t)m == limit && !strict))) return 0;
        int32_t rx = rank[x], ry = rank[y];
        if (rx < 0 && ry < 0) return 1;
        if (rx > ry) {
            limit = rx, strict = 1;
            x = (uint32_t)right[x];
        } else {
            limit = ry, strict = 0;
            y = (uint32_t)left[y];
        }
    }
}

static int canonical_pair(const PairChecker *c, uint32_t x, uint32_t y) {
    return compatible_before(&c->merges, c->rank, c->left, c->right, x, y, INT64_MAX);
}

static int is_known_canonical(PairChecker *c, uint32_t u, uint32_t v) {
    uint64_t key = pair_key(u, v);
    if (good_contains(c, key)) return 1;
    if (!canonical_pair(c, u, v)) return 0;
    good_add(c, key);
    return 1;
}

static int id_of(PyObject *item, uint32_t size, uint32_t *id) {
    if (!PyLong_Check(item)) {
        PyErr_SetString(PyExc_TypeError, "ids must be ints");
        return -1;
    }
    int overflow;
    long value = PyLong_AsLongAndOverflow(item, &overflow);
    if (value == -1 && PyErr_Occurred()) return -1;
    if (overflow || value < 0 || (unsigned long)value >= size) {
        PyErr_SetString(PyExc_IndexError, "an id is outside the vocabulary");
        return -1;
    }
    *id = (uint32_t)value;
    return 0;
}

static int token_copy(PyObject *tokens, Py_ssize_t count, uint32_t size, uint32_t *out) {
    if (PyList_Check(tokens)) {
        if (PyList_GET_SIZE(tokens) != count) goto changed;
        for (Py_ssize_t i = 0; i < count; i++)
            if (id_of(PyList_GET_ITEM(tokens, i), size, &out[i])) return -1;
        return 0;
    }
    Py_buffer view;
    if (token_buffer(tokens, &view)) return -1;
    int same = view.len == count * 4;
    if (same) memcpy(out, view.buf, (size_t)count * 4);
    PyBuffer_Release(&view);
    if (!same) goto changed;
    for (Py_ssize_t i = 0; i < count; i++)
        if (out[i] >= size) {
            PyErr_SetString(PyExc_IndexError, "an id is outside the vocabulary");
            return -1;
        }
    return 0;
changed:
    PyErr_SetString(PyExc_RuntimeError, "a token list changed while read");
    return -1;
}

/* Tokens whose first symbol begins at most this many tokens are numbered last in the solve's sets. */
#define LATE_FIRST_SYMBOL_TOKENS 16

/* The liveness solve's numbering of the checker's tokens (liveness.h), made with the checker: solve_id[t] is
 * t, or for a late token (one whose first symbol, at the end of its left spine, begins at most
 * LATE_FIRST_SYMBOL_TOKENS tokens) solve_base + its place among the late tokens, solve_base being the
 * vocabulary's size rounded up to a word; solve_token is the inverse (UINT32_MAX where no token has that
 * number).  0, or -1 with MemoryError. */
static int checker_solve_order(PairChecker *c) {
    uint32_t n = c->size, late = 0;
    uint32_t *first = PyMem_Malloc((size_t)n * 4 + 4), *begins = PyMem_Calloc((size_t)n + 1, 4);
    if (!first || !begins) {
        PyMem_Free(first), PyMem_Free(begins);
        PyErr_NoMemory();
        return -1;
    }
    for (uint32_t t = 0; t < n; t++) { /* (ranks fall along a spine, as PairChecker_init checks) */
        uint32_t f = t;
        while (c->rank[f] >= 0) f = (uint32_t)c->left[f];
        first[t] = f;
        begins[f]++;
    }
    for (uint32_t t = 0; t < n; t++) late += begins[first[t]] <= LATE_FIRST_SYMBOL_TOKENS;
    uint32_t base = late ? (n + 63) / 64 * 64 : n, range = base + late;
    uint32_t *id = PyMem_Malloc((size_t)n * 4 + 4), *token = PyMem_Malloc((size_t)range * 4 + 4);
    if (!id || !token) {
        PyMem_Free(first), PyMem_Free(begins), PyMem_Free(id), PyMem_Free(token);
        PyErr_NoMemory();
        return -1;
    }
    for (uint32_t i = 0; i < range; i++) token[i] = UINT32_MAX;
    for (uint32_t t = 0, k = base; t < n; t++) {
        id[t] = begins[first[t]] <= LATE_FIRST_SYMBOL_TOKENS ? k++ : t;
        token[id[t]] = t;
    }
    PyMem_Free(first), PyMem_Free(begins);
    c->solve_id = id, c->solve_token = token, c->solve_base = base, c->solve_range = range;
    return 0;
}

static int PairChecker_init(PairChecker *c, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"rank", "left", "right", "pairs", "pair_ranks", NULL};
    Py_buffer rank = {0}, left = {0}, right = {0}, pairs = {0}, ranks = {0};
    if (c->rank || c->good) {
        PyErr_SetString(PyExc_RuntimeError, "PairChecker is already initialised");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*y*y*y*y*:PairChecker", names, &rank, &left, &right, &pairs, &ranks))
        return -1;
    int rc = -1;
    size_t n = (size_t)rank.len / 4, count = (size_t)ranks.len / 4;
    if (rank.len % 4 || left.len != rank.len || right.len != rank.len || n == 0 || n >= MAX_ID) {
        PyErr_SetString(PyExc_ValueError, "rank, left and right must hold one packed 32-bit int per token");
        goto done;
    }
    if (ranks.len % 4 || (size_t)pairs.len != 8 * count || count >= NO_RANK) {
        PyErr_SetString(PyExc_ValueError, "pairs must hold a packed (left, right) per rank in pair_ranks");
        goto done;
    }
    c->rank = PyMem_Malloc(n * 4), c->left = PyMem_Malloc(n * 4), c->right = PyMem_Malloc(n * 4);
    c->good = PyMem_Malloc(2 * GOOD_PAIRS_MAX * sizeof(uint64_t));
    if (!c->rank || !c->left || !c->right || !c->good || pair_table_init(&c->merges, count)) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(c->rank, rank.buf, n * 4), memcpy(c->left, left.buf, n * 4), memcpy(c->right, right.buf, n * 4);
    memset(c->good, 0xFF, 2 * GOOD_PAIRS_MAX * sizeof(uint64_t));
    c->size = (uint32_t)n;
    for (size_t t = 0; t < n; t++) {
        if (c->rank[t] < 0) continue;
        int32_t a = c->left[t], b = c->right[t];
        if (a < 0 || b < 0 || (size_t)a >= n || (size_t)b >= n || c->rank[a] >= c->rank[t] || c->rank[b] >= c->rank[t]) {
            PyErr_Format(PyExc_ValueError, "token %zu: its children must be tokens built at lower ranks", t);
            goto done;
        }
    }
    const uint32_t *p = pairs.buf, *r = ranks.buf;
    for (size_t k = 0; k < count; k++) pair_table_add(&c->merges, p[2 * k], p[2 * k + 1], r[k], 0);
    rc = checker_solve_order(c);
done:
    PyBuffer_Release(&rank), PyBuffer_Release(&left), PyBuffer_Release(&right);
    PyBuffer_Release(&pairs), PyBuffer_Release(&ranks);
    return rc;
}

static void PairChecker_dealloc(PairChecker *c) {
    PyMem_Free(c->rank), PyMem_Free(c->left), PyMem_Free(c->right), PyMem_Free(c->good);
    PyMem_Free(c->solve_id), PyMem_Free(c->solve_token);
    pair_table_free(&c->merges);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static int checker_ready(PairChecker *c) {
    if (c->rank && c->good && c->solve_id) return 1;
    PyErr_SetString(PyExc_RuntimeError, "PairChecker was not initialised");
    return 0;
}

static PyObject *PairChecker_canonical(PairChecker *c, PyObject *args) {
    PyObject *u_object, *v_object;
    uint32_t u, v;
    if (!checker_ready(c) || !PyArg_ParseTuple(args, "OO:canonical", &u_object, &v_object)) return NULL;
    if (id_of(u_object, c->size, &u) || id_of(v_object, c->size, &v)) return NULL;
    return PyBool_FromLong(is_known_canonical(c, u, v));
}

/* The flag of a walk row: list rows hold it at flag_index, dict rows (rare states) under that key. */
static int row_flag(PyObject *row, Py_ssize_t flag_index, PyObject *flag_key) {
    if (PyList_CheckExact(row) && flag_index < PyList_GET_SIZE(row)) return PyObject_IsTrue(PyList_GET_ITEM(row, flag_index));
    PyObject *flag = PyObject_GetItem(row, flag_key);
    if (!flag) return -1;
    int truth = PyObject_IsTrue(flag);
    Py_DECREF(flag);
    return truth;
}

/* bad_gaps(block, seq, flag_index, end, last) -> [j < end whose gap before block[j] the walk `seq` marks
 * as inside a chunk (seq[j + 1][flag_index]) and whose pair (block[j - 1] or last, block[j]) is not
 * canonical], in order: Validator._bad_pairs. */
static PyObject *PairChecker_bad_gaps(PairChecker *c, PyObject *args) {
    PyObject *block, *seq, *last;
    Py_ssize_t flag_index, end;
    if (!checker_ready(c) || !PyArg_ParseTuple(args, "O!O!nnO:bad_gaps", &PyList_Type, &block, &PyList_Type, &seq,
                                               &flag_index, &end, &last))
        return NULL;
    if (end < 0 || end > PyList_GET_SIZE(block) || PyList_GET_SIZE(seq) < end + 1 || flag_index < 0) {
        PyErr_SetString(PyExc_ValueError, "bad_gaps: end must be within the block, seq one row longer");
        return NULL;
    }
    PyObject *flag_key = PyLong_FromSsize_t(flag_index), *bad = PyList_New(0);
    if (!flag_key || !bad) goto fail;
    for (Py_ssize_t j = 0; j < end; j++) {
        int flag = row_flag(PyList_GET_ITEM(seq, j + 1), flag_index, flag_key);
        if (flag < 0) goto fail;
        if (!flag) continue;
        PyObject *left = j ? PyList_GET_ITEM(block, j - 1) : last;
        if (left == Py_None) continue; /* the first token of a stream: no pair */
        /* tokens outside the forest (special tokens) never stand inside a chunk; were one flagged, the
         * gap is reported, which sends the caller to the exact (general) step */
        uint32_t u, v;
        int known = id_of(left, c->size, &u) == 0 && id_of(PyList_GET_ITEM(block, j), c->size, &v) == 0;
        if (!known) {
            if (!PyErr_ExceptionMatches(PyExc_IndexError)) goto fail;
            PyErr_Clear();
        }
        if (!known || !is_known_canonical(c, u, v)) {
            PyObject *index = PyLong_FromSsize_t(j);
            if (!index || PyList_Append(bad, index)) {
                Py_XDECREF(index);
                goto fail;
            }
            Py_DECREF(index);
        }
    }
    Py_DECREF(flag_key);
    return bad;
fail:
    Py_XDECREF(flag_key);
    Py_XDECREF(bad);
    return NULL;
}

static PyMethodDef PairChecker_methods[] = {
    {"canonical", (PyCFunction)PairChecker_canonical, METH_VARARGS, "canonical(u, v) -> is (u, v) a canonical pair?"},
    {"bad_gaps", (PyCFunction)PairChecker_bad_gaps, METH_VARARGS,
     "bad_gaps(block, seq, flag_index, end, last) -> the gaps the walk marks inside a chunk whose pair is not canonical."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject PairCheckerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "bpefst._core.PairChecker",
    .tp_basicsize = sizeof(PairChecker),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "PairChecker(rank, left, right, pairs, pair_ranks): canonical pairs of a merge forest (packed int32 arrays).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)PairChecker_init,
    .tp_dealloc = (destructor)PairChecker_dealloc,
    .tp_methods = PairChecker_methods,
};

/* build_forest(size, base_ids, merges) -> (rank, left, right, reachable, first_inversion): the merge
 * forest of MergeForest.from_model (its pure twin, bpefst/bpe/merge_forest.py).  `merges` holds packed
 * (left, right, result) uint32 triples in rank order; merge m builds its result when both sides are
 * built, the result is not, and merge m finds its two sides next to each other (compatible_before with
 * limit m).  rank/left/right come back as packed int32 (-1: none), reachable as one byte per token, and
 * first_inversion is the first merge that uses a token BPE builds only later (or -1). */
static PyObject *build_forest(PyObject *module, PyObject *args) {
    Py_ssize_t size;
    Py_buffer bases = {0}, merges = {0};
    if (!PyArg_ParseTuple(args, "ny*y*:build_forest", &size, &bases, &merges)) return NULL;
    PyObject *result = NULL, *rank_bytes = NULL, *left_bytes = NULL, *right_bytes = NULL, *reach_bytes = NULL;
    PairTable pairs = {0};
    size_t count = (size_t)merges.len / 12;
    if (size < 1 || (size_t)size >= MAX_ID || bases.len % 4 || merges.len % 12 || count >= NO_RANK) {
        PyErr_SetString(PyExc_ValueError, "build_forest: a size below the core's limit, packed base ids and merge triples");
        goto done;
    }
    const uint32_t *base = bases.buf, *triple = merges.buf;
    for (size_t k = 0; k < (size_t)bases.len / 4; k++)
        if (base[k] >= (size_t)size) {
            PyErr_SetString(PyExc_ValueError, "build_forest: a base id beyond size");
            goto done;
        }
    for (size_t k = 0; k < 3 * count; k++)
        if (triple[k] >= (size_t)size) {
            PyErr_Format(PyExc_ValueError, "build_forest: merge %zu names an id beyond size", k / 3);
            goto done;
        }
    rank_bytes = PyBytes_FromStringAndSize(NULL, size * 4), left_bytes = PyBytes_FromStringAndSize(NULL, size * 4);
    right_bytes = PyBytes_FromStringAndSize(NULL, size * 4), reach_bytes = PyBytes_FromStringAndSize(NULL, size);
    if (!rank_bytes || !left_bytes || !right_bytes || !reach_bytes) goto done;
    if (pair_table_init(&pairs, count)) {
        PyErr_NoMemory();
        goto done;
    }
    int32_t *rank = (int32_t *)PyBytes_AS_STRING(rank_bytes), *left = (int32_t *)PyBytes_AS_STRING(left_bytes);
    int32_t *right = (int32_t *)PyBytes_AS_STRING(right_bytes);
    uint8_t *built = (uint8_t *)PyBytes_AS_STRING(reach_bytes);
    memset(rank, 0xFF, size * 4), memset(left, 0xFF, size * 4), memset(right, 0xFF, size * 4), memset(built, 0, size);
    for (size_t k = 0; k < (size_t)bases.len / 4; k++) built[base[k]] = 1;
    /* a pair listed twice keeps its last rank, as a dict built in rank order does: add from the end */
    for (size_t m = count; m-- > 0;) pair_table_add(&pairs, triple[3 * m], triple[3 * m + 1], (uint32_t)m, 0);
    for (size_t m = 0; m < count; m++) {
        uint32_t a = triple[3 * m], b = triple[3 * m + 1], t = triple[3 * m + 2];
        if (built[t] || !built[a] || !built[b]) continue;
        if (compatible_before(&pairs, rank, left, right, a, b, (int64_t)m)) {
            rank[t] = (int32_t)m, left[t] = (int32_t)a, right[t] = (int32_t)b;
            built[t] = 1;
        }
    }
    Py_ssize_t inversion = -1;
    for (size_t m = 0; m < count && inversion < 0; m++)
        for (int side = 0; side < 2; side++) {
            uint32_t token = triple[3 * m + side];
            if (built[token] && rank[token] > (int32_t)m) inversion = (Py_ssize_t)m;
        }
    result = Py_BuildValue("OOOOn", rank_bytes, left_bytes, right_bytes, reach_bytes, inversion);
done:
    Py_XDECREF(rank_bytes), Py_XDECREF(left_bytes), Py_XDECREF(right_bytes), Py_XDECREF(reach_bytes);
    pair_table_free(&pairs);
    PyBuffer_Release(&bases), PyBuffer_Release(&merges);
    return result;
}

/* walk_rows(classes, ids, start, row) -> [row after ids[start], row after ids[start + 1], ...]: steps
 * row = row[classes[id]] until the ids end or the next entry is not built yet (None, or missing from a
 * dict row); `classes` holds one packed int32 class per id.  IndexError for an id outside it. */
static PyObject *walk_rows(PyObject *module, PyObject *args) {
    Py_buffer classes = {0};
    PyObject *ids, *row;
    Py_ssize_t start;
    if (!PyArg_ParseTuple(args, "y*O!nO:walk_rows", &classes, &PyList_Type, &ids, &start, &row)) return NULL;
    PyObject *rows = NULL;
    const int32_t *class_of = classes.buf;
    size_t size = (size_t)classes.len / 4;
    Py_ssize_t count = PyList_GET_SIZE(ids);
    if (start < 0 || start > count) {
        PyErr_SetString(PyExc_ValueError, "walk_rows: start is outside the ids");
        goto done;
    }
    rows = PyList_New(0);
    if (!rows) goto done;
    for (Py_ssize_t k = start; k < count; k++) {
        uint32_t id;
        if (id_of(PyList_GET_ITEM(ids, k), (uint32_t)(size < MAX_ID ? size : MAX_ID), &id)) goto fail;
        int32_t kind = class_of[id];
        PyObject *next;
        if (PyList_CheckExact(row)) {
            if (kind < 0 || kind >= PyList_GET_SIZE(row)) {
                PyErr_SetString(PyExc_ValueError, "walk_rows: a class is outside its row");
                goto fail;
            }
            next = PyList_GET_ITEM(row, kind);
        } else if (PyDict_CheckExact(row)) {
            PyObject *key = PyLong_FromLong(kind);
            if (!key) goto fail;
            next = PyDict_GetItemWithError(row, key);
            Py_DECREF(key);
            if (!next && PyErr_Occurred()) goto fail;
        } else {
            PyErr_SetString(PyExc_TypeError, "walk_rows: rows must be lists or dicts");
            goto fail;
        }
        if (!next || next == Py_None) break;
        if (PyList_Append(rows, next)) goto fail;
        row = next;
    }
    goto done;
fail:
    Py_CLEAR(rows);
done:
    PyBuffer_Release(&classes);
    return rows;
}

/* parse_ids(data) -> the ids of bytes made of decimal words of at most 18 digits between ASCII
 * whitespace, or None for anything else (bpefst/pipeline/validate.py then names the bad word). */
static PyObject *parse_ids(PyObject *module, PyObject *data) {
    if (!PyBytes_Check(data)) {
        PyErr_SetString(PyExc_TypeError, "parse_ids() takes bytes");
        return NULL;
    }
    const uint8_t *p = (const uint8_t *)PyBytes_AS_STRING(data), *end = p + PyBytes_GET_SIZE(data);
    PyObject *ids = PyList_New(0);
    if (!ids) return NULL;
    while (p < end) {
        uint8_t byte = *p;
        if (byte == ' ' || (byte >= '\t' && byte <= '\r')) {
            p++;
            continue;
        }
        uint64_t value = 0;
        int digits = 0;
        for (; p < end && *p >= '0' && *p <= '9'; p++, digits++) value = value * 10 + (*p - '0');
        int separated = p == end || *p == ' ' || (*p >= '\t' && *p <= '\r');
        if (digits == 0 || digits > 18 || !separated) {
            Py_DECREF(ids);
            Py_RETURN_NONE;
        }
        PyObject *id = PyLong_FromUnsignedLongLong(value);
        if (!id || PyList_Append(ids, id)) {
            Py_XDECREF(id);
            Py_DECREF(ids);
            return NULL;
        }
        Py_DECREF(id);
    }
    return ids;
}

/* format_ids(ids) -> b"id id id" (decimal, one space between; `bpefst tokenize --format ids`), the
 * inverse of parse_ids; ids are non-negative ints below 2**63. */
static PyObject *format_ids(PyObject *module, PyObject *ids) {
    if (!PyList_Check(ids)) {
        PyErr_SetString(PyExc_TypeError, "format_ids() takes a list of ints");
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(ids);
    if (count == 0) return PyBytes_FromStringAndSize(NULL, 0);
    if ((size_t)count > PY_SSIZE_T_MAX / 21) return PyErr_NoMemory();
    char *text = PyMem_Malloc((size_t)count * 20); /* 19 digits and a space each */
    if (!text) return PyErr_NoMemory();
    char *at = text;
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *item = PyList_GET_ITEM(ids, k);
        long long value = PyLong_Check(item) ? PyLong_AsLongLong(item) : -1;
        if (value < 0) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "format_ids() takes non-negative ints");
            PyMem_Free(text);
            return NULL;
        }
        char digits[20];
        int length = 0;
        do digits[length++] = (char)('0' + value % 10); while ((value /= 10) > 0);
        while (length) *at++ = digits[--length];
        *at++ = ' ';
    }
    PyObject *result = PyBytes_FromStringAndSize(text, at - text - 1);
    PyMem_Free(text);
    return result;
}

#endif
