/* One token's banned set, BANNED(u), as a bitset: the loop behind a decoding mask over a large vocabulary.
 *
 * The pure twin and its explanation are bpefst/bpe/banned.py (SingleBanned): BANNED(u) is read off u's
 * right spine.  At spine node x, current at the boundary while rank(x) < m < limit (limit: the rank of
 * x's parent on the spine, none for u itself), every merge m = (x, y) bans V_m, the followers v whose
 * left spine holds y under a parent built at m or later.  The index keeps, per y, the followers by that
 * parent's rank, latest first, so V_m is a prefix of y's list; and per x its merges (m, y) by rank.
 * Both are built here from the merge forest's arrays (Seed 000 Sec. 6.5; Berglund & van der Merwe).
 */
#ifndef BPEFST_BANNED_H
#define BPEFST_BANNED_H

#include "bpe.h"

#define NO_BOUND UINT32_MAX /* a follower's own spine top: no parent above it */

typedef struct {
    PyObject_HEAD
    uint32_t size;
    int32_t *rank, *left, *right;
    uint32_t *follower_start, *follower, *follower_bound; /* per y: followers, their bounds descending */
    uint32_t *merge_start, *merge_rank, *merge_right;     /* per x: merges (m, y), m ascending */
} BannedIndex;

typedef struct {
    uint32_t key, value, tag;
} SpineEntry;

static int by_key_then_tag(const void *a, const void *b) {
    const SpineEntry *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->tag < y->tag ? -1 : x->tag > y->tag;
}

/* Bucket `count` entries by key (0..size-1) into starts[size + 1], keeping each bucket sorted by tag
 * (one qsort of the whole array: key, then tag). */
static void bucket(SpineEntry *entries, size_t count, uint32_t size, uint32_t *starts) {
    qsort(entries, count, sizeof(SpineEntry), by_key_then_tag);
    memset(starts, 0, (size_t)(size + 1) * sizeof(uint32_t));
    for (size_t k = 0; k < count; k++) starts[entries[k].key + 1]++;
    for (uint32_t y = 0; y < size; y++) starts[y + 1] += starts[y];
}

static void banned_index_free(BannedIndex *b) {
    PyMem_Free(b->rank), PyMem_Free(b->left), PyMem_Free(b->right), PyMem_Free(b->follower_start), PyMem_Free(b->merge_start);
    PyMem_Free(b->follower), PyMem_Free(b->follower_bound), PyMem_Free(b->merge_rank), PyMem_Free(b->merge_right);
    b->rank = b->left = b->right = NULL;
    b->follower_start = b->follower = b->follower_bound = b->merge_start = b->merge_rank = b->merge_right = NULL;
}

static int BannedIndex_init(BannedIndex *b, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"rank", "left", "right", "reachable", "pairs", "pair_ranks", NULL};
    Py_buffer rank = {0}, left = {0}, right = {0}, reachable = {0}, pairs = {0}, ranks = {0};
    if (b->rank) {
        PyErr_SetString(PyExc_RuntimeError, "BannedIndex is already initialised");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*y*y*y*y*y*:BannedIndex", names, &rank, &left, &right, &reachable,
                                     &pairs, &ranks))
        return -1;
    int rc = -1;
    SpineEntry *entries = NULL;
    size_t n = (size_t)rank.len / 4, count = (size_t)ranks.len / 4;
    if (rank.len % 4 || left.len != rank.len || right.len != rank.len || (size_t)reachable.len != n || n == 0 ||
        n >= MAX_ID) {
        PyErr_SetString(PyExc_ValueError, "rank, left and right must hold one packed 32-bit int per token, reachable one byte");
        goto done;
    }
    if (ranks.len % 4 || (size_t)pairs.len != 8 * count || count >= NO_RANK) {
        PyErr_SetString(PyExc_ValueError, "pairs must hold a packed (left, right) per rank in pair_ranks");
        goto done;
    }
    const int32_t *rank_of = rank.buf, *left_of = left.buf, *right_of = right.buf;
    const uint8_t *live = reachable.buf;
    for (size_t t = 0; t < n; t++) { /* children exist and are built first, so every spine walk ends */
        int32_t a = left_of[t], c = right_of[t];
        if (a < 0 && c < 0) continue;
        if (a < 0 || c < 0 || (size_t)a >= n || (size_t)c >= n || rank_of[a] >= rank_of[t] || rank_of[c] >= rank_of[t]) {
            PyErr_Format(PyExc_ValueError, "token %zu: its children must be tokens built at lower ranks", t);
            goto done;
        }
    }
    size_t spine_entries = 0;
    for (size_t v = 0; v < n; v++)
        if (live[v])
            for (int32_t y = (int32_t)v; y >= 0; y = left_of[y]) spine_entries++;
    entries = PyMem_Malloc((spine_entries > count ? spine_entries : count) * sizeof(SpineEntry) + sizeof(SpineEntry));
    b->rank = PyMem_Malloc(n * 4), b->left = PyMem_Malloc(n * 4), b->right = PyMem_Malloc(n * 4);
    b->follower_start = PyMem_Malloc((n + 1) * 4), b->merge_start = PyMem_Malloc((n + 1) * 4);
    b->follower = PyMem_Malloc(spine_entries * 4 + 4), b->follower_bound = PyMem_Malloc(spine_entries * 4 + 4);
    b->merge_rank = PyMem_Malloc(count * 4 + 4), b->merge_right = PyMem_Malloc(count * 4 + 4);
    if (!entries || !b->rank || !b->left || !b->right || !b->follower_start || !b->merge_start || !b->follower ||
        !b->follower_bound || !b->merge_rank || !b->merge_right) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(b->rank, rank_of, n * 4), memcpy(b->left, left_of, n * 4), memcpy(b->right, right_of, n * 4);
    b->size = (uint32_t)n;
    /* followers: (y, bound, v) for every node y of v's left spine; sorted by bound descending (tag = ~bound) */
    size_t k = 0;
    for (size_t v = 0; v < n; v++) {
        if (!live[v]) continue;
        uint32_t bound = NO_BOUND;
        for (int32_t y = (int32_t)v; y >= 0; y = left_of[y]) {
            entries[k++] = (SpineEntry){(uint32_t)y, (uint32_t)v, ~bound};
            bound = (uint32_t)rank_of[y];
        }
    }
    bucket(entries, spine_entries, b->size, b->follower_start);
    for (k = 0; k < spine_entries; k++) b->follower[k] = entries[k].value, b->follower_bound[k] = ~entries[k].tag;
    /* merges: (x, y, m) by x, then m ascending */
    const uint32_t *p = pairs.buf, *r = ranks.buf;
    for (k = 0; k < count; k++) {
        if (p[2 * k] >= n || p[2 * k + 1] >= n) {
            PyErr_Format(PyExc_ValueError, "merge %u: a side outside the forest", r[k]);
            goto done;
        }
        entries[k] = (SpineEntry){p[2 * k], p[2 * k + 1], r[k]};
    }
    bucket(entries, count, b->size, b->merge_start);
    for (k = 0; k < count; k++) b->merge_right[k] = entries[k].value, b->merge_rank[k] = entries[k].tag;
    rc = 0;
done:
    PyMem_Free(entries);
    if (rc) banned_index_free(b); /* a half-built index is never used */
    PyBuffer_Release(&rank), PyBuffer_Release(&left), PyBuffer_Release(&right), PyBuffer_Release(&reachable);
    PyBuffer_Release(&pairs), PyBuffer_Release(&ranks);
    return rc;
}

static void BannedIndex_dealloc(BannedIndex *b) {
    banned_index_free(b);
    Py_TYPE(b)->tp_free((PyObject *)b);
}

/* The first index in [lo, hi) whose value is >= key, in an ascending array. */
static uint32_t lower_bound(const uint32_t *values, uint32_t lo, uint32_t hi, uint64_t key) {
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (values[mid] < key) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* The end of the prefix of [lo, hi) whose bounds (descending) are >= m. */
static uint32_t followers_end(const uint32_t *bounds, uint32_t lo, uint32_t hi, uint32_t m) {
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (bounds[mid] >= m) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Set the bit of every v in BANNED(u) (bits holds length bytes, one per 8 ids of the forest). */
static void mark_banned(const BannedIndex *b, uint32_t u, uint8_t *bits, size_t length) {
    uint64_t limit = UINT64_MAX;
    for (int32_t x = (int32_t)u;;) {
        uint32_t first = b->merge_start[x], stop = lower_bound(b->merge_rank, first, b->merge_start[x + 1], limit);
        for (uint32_t j = first; j < stop; j++) {
            uint32_t y = b->merge_right[j], lo = b->follower_start[y];
            uint32_t end = followers_end(b->follower_bound, lo, b->follower_start[y + 1], b->merge_rank[j]);
            for (uint32_t f = lo; f < end; f++) {
                uint32_t v = b->follower[f];
                if ((size_t)(v >> 3) < length) bits[v >> 3] |= (uint8_t)(1u << (v & 7));
            }
        }
        if (b->right[x] < 0) break;
        limit = (uint64_t)(uint32_t)b->rank[x];
        x = b->right[x];
    }
}

static int index_ready(const BannedIndex *b) {
    if (b->rank) return 1;
    PyErr_SetString(PyExc_RuntimeError, "BannedIndex was not initialised");
    return 0;
}

/* mask(u) -> bytes: BANNED(u) as a little-endian bitset of size bits (bit v set iff v may not follow u). */
static PyObject *BannedIndex_mask(BannedIndex *b, PyObject *token) {
    uint32_t u;
    if (!index_ready(b) || id_of(token, b->size, &u)) return NULL;
    size_t length = ((size_t)b->size + 7) / 8;
    PyObject *result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)length);
    if (!result) return NULL;
    memset(PyBytes_AS_STRING(result), 0, length);
    mark_banned(b, u, (uint8_t *)PyBytes_AS_STRING(result), length);
    return result;
}

/* allowed_union(pairs) -> bytes: the union over (good, banned) in `pairs` of good & ~banned, bitsets as
 * little-endian bytes (every good of one length; banned of any length, or None for nothing banned): the
 * tokens a state of the on-demand product allows, one pair per configuration (the tokens its lattice
 * state reads, the previous token's banned set), straight into the bytes a decoding mask is made of. */
static PyObject *allowed_union(PyObject *module, PyObject *pairs) {
    if (!PyList_Check(pairs) || PyList_GET_SIZE(pairs) == 0) {
        PyErr_SetString(PyExc_TypeError, "allowed_union takes a non-empty list of (good, banned) pairs");
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t length = -1;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(pairs); k++) {
        PyObject *pair = PyList_GET_ITEM(pairs, k), *banned_object;
        Py_buffer good = {0}, banned = {0};
        if (!PyTuple_Check(pair) || !PyArg_ParseTuple(pair, "y*O:allowed_union", &good, &banned_object)) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "allowed_union takes (good, banned) pairs");
            goto fail;
        }
        if (banned_object != Py_None && PyObject_GetBuffer(banned_object, &banned, PyBUF_SIMPLE) < 0) {
            PyBuffer_Release(&good);
            goto fail;
        }
        if (length < 0) {
            length = good.len;
            result = PyBytes_FromStringAndSize(NULL, length);
            if (result) memset(PyBytes_AS_STRING(result), 0, (size_t)length);
        }
        if (!result || good.len != length) {
            if (result) PyErr_SetString(PyExc_ValueError, "allowed_union: every good bitset must have the same length");
            PyBuffer_Release(&good), PyBuffer_Release(&banned);
            goto fail;
        }
        uint8_t *out = (uint8_t *)PyBytes_AS_STRING(result);
        const uint8_t *in = good.buf, *ban = banned.buf;
        Py_ssize_t both = banned.buf && banned.len < length ? banned.len : banned.buf ? length : 0;
        for (Py_ssize_t i = 0; i < both; i++) out[i] |= in[i] & (uint8_t)~ban[i];
        for (Py_ssize_t i = both; i < length; i++) out[i] |= in[i];
        PyBuffer_Release(&good), PyBuffer_Release(&banned);
    }
    return result;
fail:
    Py_XDECREF(result);
    return NULL;
}

static PyMethodDef BannedIndex_methods[] = {
    {"mask", (PyCFunction)BannedIndex_mask, METH_O, "mask(u) -> BANNED(u) as little-endian bitset bytes."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject BannedIndexType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "bpefst._core.BannedIndex",
    .tp_basicsize = sizeof(BannedIndex),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "BannedIndex(rank, left, right, reachable, pairs, pair_ranks): one token's banned set at a time.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)BannedIndex_init,
    .tp_dealloc = (destructor)BannedIndex_dealloc,
    .tp_methods = BannedIndex_methods,
};

#endif
