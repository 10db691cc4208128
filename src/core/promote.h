/* The compiled loops of promotion, the two a decoder waits on before its first mask (the pure twins,
 * which are the specification, are in bpefst/promotion/agnostic.py and pretokenized.py):
 *
 *   TrieWalker.walk   the spelling trie of a tokenizer walked against a pattern DFA from every state,
 *                     depth first (agnostic._walk, token_rows and the per-state part of walk_groups):
 *                     per state, `token -> target` for every token whose spelling the pattern reads, as
 *                     a dict or as groups `(tokens, {state: target})`, in the pure walk's exact order.
 *                     The trie is packed once per tokenizer (bpefst/native.py, trie_walker) and kept
 *                     on the SpellingTrie; the pattern's rows are packed here, per call.
 *   chunk_product     the pattern DFA times the pre-tokenizer's chunker (and, for byte-level models,
 *                     a UTF-8 decoder), states numbered breadth first, BOUNDARY arcs, then trimmed
 *                     (pretokenized.chunked_pattern followed by automata.trim).
 *
 * Python builds and owns every table; each entry point checks what it is given (sizes, every index
 * within its table, that the trie is a tree so every walk ends) and raises rather than read out of
 * bounds.  Limits (max_states, max_arcs) are checked where the pure code checks them; a call that
 * reaches one returns None and the caller raises the same exception as the pure path.  The loops
 * that touch no Python object run without the GIL.
 */
#ifndef BPEFST_PROMOTE_H
#define BPEFST_PROMOTE_H

#include <limits.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#ifdef __GLIBC__
#include <malloc.h>
#endif

#define DECODER_NO_ARC INT32_MIN   /* a decoder entry: no arc for this byte (else >= 0: next state; < 0: -1 - atom ends) */
/* After a call that freed this many bytes of C arrays, the freed pages go back to the system (glibc keeps
 * them in its heap otherwise, and the holes left between later blocks add to the peak of a process that
 * promotes one large pattern after another). */
#define TRIM_AFTER ((size_t)64 << 20)


/* Whether a build since the last release_freed() was large enough to leave much behind when it is dropped:
 * set where a call frees TRIM_AFTER or more of its own arrays (its rows and groups are as large), or by
 * note_large_build().  A flag rather than the heap's statistics: mallinfo walks every free chunk, and
 * asking it twice a promotion cost a first mask a millisecond. */
static int large_build_pending = 0;

static void give_back(size_t freed) {
#ifdef __GLIBC__
    if (freed >= TRIM_AFTER) {
        malloc_trim(0);
        large_build_pending = 1;
    }
#else
    (void)freed;
#endif
}

/* A lattice walk of this many arcs marks a large build: its groups are few (equal token lists are held
 * once) and its C arrays small, but the liveness solved over it and the states expanded from it are as
 * large as before, and go back to the heap when the language is dropped. */
#define LARGE_LATTICE_ARCS 4000000LL

/* note_large_build(): as if a call had freed TRIM_AFTER bytes of its arrays (for tests, and builds made
 * of Python objects only). */
static PyObject *note_large_build(PyObject *module, PyObject *unused) {
    (void)module, (void)unused;
    large_build_pending = 1;
    Py_RETURN_NONE;
}

/* release_freed() -> whether the heap was given back: called before a promotion, after a large one was
 * built.  What that one freed once the caller let go of its language (its rows and groups) is in the heap,
 * resident and unused, and the next large promotion's big blocks would be mapped beside it (a cl100k schema
 * after a hundred others: 160 MB retained under its 450 MB).  After small builds it does nothing: giving the
 * heap back at every promotion made small ones fault their pages in anew (a first mask 3-6 ms slower). */
static PyObject *release_freed(PyObject *module, PyObject *unused) {
    (void)module, (void)unused;
    if (!large_build_pending) Py_RETURN_FALSE;
    large_build_pending = 0;
#ifdef __GLIBC__
    malloc_trim(0);
    Py_RETURN_TRUE;
#else
    Py_RETURN_FALSE;
#endif
}

/* A zeroed block of `bytes` for a table filled sparsely and read at random (a dense lookup: up to 64 MB).  On
 * Linux a large one is mapped on its own, 2 MB-aligned and marked for huge pages: a median JSON Schema's table
 * of 37 MB took 9,000 page faults each walk, a sixth of its set-up (where the system gives huge pages; where
 * it does not, the pages are as calloc's).  *mapped: the length to unmap, or 0 when it came from calloc. */
#define HUGE_PAGE ((size_t)2 << 20)

static void *zeroed_table(size_t bytes, size_t *mapped) {
    *mapped = 0;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= 2 * HUGE_PAGE) {
        size_t length = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE, span = length + HUGE_PAGE;
        char *block = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (block != MAP_FAILED) {
            char *aligned = (char *)(((uintptr_t)block + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
            if (aligned > block) munmap(block, (size_t)(aligned - block));
            if (block + span > aligned + length) munmap(aligned + length, (size_t)(block + span - (aligned + length)));
            madvise(aligned, length, MADV_HUGEPAGE);
            *mapped = length;
            return aligned;
        }
    }
#endif
    return calloc(bytes ? bytes : 1, 1);
}

static void free_table(void *table, size_t mapped) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (mapped) {
        munmap(table, mapped);
        return;
    }
#endif
    (void)mapped;
    free(table);
}

#define DENSE_LOOKUP_MAX ((size_t)1 << 24) /* pattern rows as a states x symbols table up to this many entries */
#define WIDE_LOOKUP_MAX ((size_t)1 << 24)  /* beyond: the wide rows alone as such a table, up to this many */

/* A growable array of int32. */
typedef struct {
    int32_t *data;
    size_t length, capacity;
} Ints;

static int ints_reserve(Ints *a, size_t more) {
    if (a->capacity - a->length >= more) return 0;
    size_t capacity = a->capacity ? a->capacity : 1024;
    while (capacity - a->length < more) {
        if (capacity > SIZE_MAX / 2 / sizeof(int32_t)) return -1;
        capacity *= 2;
    }
    int32_t *data = realloc(a->data, capacity * sizeof(int32_t));
    if (!data) return -1;
    a->data = data;
    a->capacity = capacity;
    return 0;
}

static int ints_push(Ints *a, int32_t value) {
    if (a->length == a->capacity && ints_reserve(a, 1)) return -1;
    a->data[a->length++] = value;
    return 0;
}

/* An int key or value as a long long; 0 when it is not an int or does not fit (no error is left set). */
static int as_small_int(PyObject *o, long long *value) {
    if (!PyLong_Check(o)) return 0;
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    *value = v;
    return 1;
}

/* A bytes-like argument read as `count` int32 (count = -1: any whole number of them). */
static const int32_t *int32_table(Py_buffer *view, Py_ssize_t count, const char *what, Py_ssize_t *length) {
    if (view->len % 4 || (count >= 0 && view->len != 4 * count)) {
        if (count >= 0)
            PyErr_Format(PyExc_ValueError, "%s must hold %zd packed 32-bit ints", what, count);
        else
            PyErr_Format(PyExc_ValueError, "%s must hold packed 32-bit ints", what);
        return NULL;
    }
    if (length) *length = view->len / 4;
    return view->buf;
}

/* ---------------------------------------------------------------- a pattern's rows, packed per call */

/* rows[q] = {symbol: target}: per state the arcs whose symbol `map` knows (map[symbol] >= 0), in the dict's
 * order, as (mapped symbol, target, and with keys, the key object).  A dict is packed once however many
 * states hold it (chunk_product gives states with equal rows one dict): state q's arcs are those of packed
 * row row_of[q], start[r] .. start[r + 1]; `size[r]` is len(rows[q]) (every key counts). */
typedef struct {
    Py_ssize_t states, packed;
    int32_t *row_of;        /* states */
    size_t *start;          /* packed + 1 offsets */
    int32_t *symbol, *target;
    PyObject **key;         /* strong references, or NULL when not asked for */
    Py_ssize_t *size;       /* packed */
    size_t arcs;
    int borrowed;           /* the arrays are a StateWalk's (state_walk_borrow): not freed here */
} Rows;

static void rows_free(Rows *rows) {
    if (rows->borrowed) {
        memset(rows, 0, sizeof *rows);
        return;
    }
    if (rows->key)
        for (size_t e = 0; e < rows->arcs; e++) Py_XDECREF(rows->key[e]);
    free(rows->row_of);
    free(rows->start);
    free(rows->symbol);
    free(rows->target);
    free(rows->key);
    free(rows->size);
    memset(rows, 0, sizeof *rows);
}

/* The first index of a dict in `list` (by identity), or -1 with index stored in the table. */
static Py_ssize_t first_of_dict(PyObject **slot_dict, Py_ssize_t *slot_index, size_t mask, PyObject *dict, Py_ssize_t index) {
    size_t h = ((size_t)dict >> 4) * 0x9E3779B97F4A7C15ull;
    for (size_t k = (h >> 20) & mask;; k = (k + 1) & mask) {
        if (!slot_dict[k]) {
            slot_dict[k] = dict;
            slot_index[k] = index;
            return -1;
        }
        if (slot_dict[k] == dict) return slot_index[k];
    }
}

/* rows_pack of a PackedRows: its arrays read as they are (no dict is made), one packed row per row. */
static int rows_pack_packed(const PackedRows *p, const int32_t *map, Py_ssize_t map_length, Rows *rows) {
    size_t total = p->start[p->rows];
    rows->states = p->states;
    rows->packed = p->rows;
    rows->row_of = malloc(((size_t)p->states + 1) * sizeof(int32_t));
    rows->start = malloc(((size_t)p->rows + 1) * sizeof(size_t));
    rows->size = malloc(((size_t)p->rows + 1) * sizeof(Py_ssize_t));
    rows->symbol = malloc((total + 1) * sizeof(int32_t));
    rows->target = malloc((total + 1) * sizeof(int32_t));
    if (!rows->row_of || !rows->start || !rows->size || !rows->symbol || !rows->target) {
        rows_free(rows);
        return -1;
    }
    memcpy(rows->row_of, p->row_of, (size_t)p->states * sizeof(int32_t));
    size_t e = 0;
    for (Py_ssize_t r = 0; r < p->rows; r++) {
        rows->start[r] = e;
        rows->size[r] = (Py_ssize_t)(p->start[r + 1] - p->start[r]);
        for (size_t a = p->start[r]; a < p->start[r + 1]; a++) {
            long long symbol = p->key[a];
            if (symbol < 0 || symbol >= map_length || map[symbol] < 0) continue;
            rows->symbol[e] = map[symbol];
            rows->target[e++] = p->target[a];
        }
    }
    rows->start[p->rows] = e;
    rows->arcs = e;
    return 0;
}

static int rows_pack(PyObject *list, const int32_t *map, Py_ssize_t map_length, Rows *rows, int keys) {
    memset(rows, 0, sizeof *rows);
    if (PyObject_TypeCheck(list, &PackedRowsType) && !keys) { /* C arrays, copied without the GIL */
        int failed;
        Py_BEGIN_ALLOW_THREADS
        failed = rows_pack_packed((PackedRows *)list, map, map_length, rows);
        Py_END_ALLOW_THREADS
        if (failed) PyErr_NoMemory();
        return failed;
    }
    if (!PyList_Check(list)) {
        PyErr_SetString(PyExc_TypeError, "the transitions must be a list of dicts");
        return -1;
    }
    Py_ssize_t n = PyList_GET_SIZE(list);
    if (n > INT32_MAX / 4) {
        PyErr_SetString(PyExc_ValueError, "too many states");
        return -1;
    }
    size_t total = 0, capacity = 16;
    while (capacity < 2 * (size_t)n + 2) capacity *= 2;
    PyObject **slot_dict = calloc(capacity, sizeof(PyObject *));
    Py_ssize_t *slot_index = malloc(capacity * sizeof(Py_ssize_t));
    rows->row_of = malloc(((size_t)n + 1) * sizeof(int32_t));
    if (!slot_dict || !slot_index || !rows->row_of) {
        free(slot_dict), free(slot_index);
        rows_free(rows);
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t packed = 0;
    for (Py_ssize_t q = 0; q < n; q++) {
        PyObject *row = PyList_GET_ITEM(list, q);
        if (!PyDict_Check(row)) {
            free(slot_dict), free(slot_index);
            rows_free(rows);
            PyErr_SetString(PyExc_TypeError, "the transitions must be a list of dicts");
            return -1;
        }
        Py_ssize_t first = first_of_dict(slot_dict, slot_index, capacity - 1, row, packed);
        if (first >= 0) {
            rows->row_of[q] = (int32_t)first;
            continue;
        }
        rows->row_of[q] = (int32_t)packed++;
        total += (size_t)PyDict_GET_SIZE(row);
    }
    free(slot_dict), free(slot_index);
    rows->states = n;
    rows->packed = packed;
    rows->start = malloc(((size_t)packed + 1) * sizeof(size_t));
    rows->size = malloc(((size_t)packed + 1) * sizeof(Py_ssize_t));
    rows->symbol = malloc((total + 1) * sizeof(int32_t));
    rows->target = malloc((total + 1) * sizeof(int32_t));
    rows->key = keys ? calloc(total + 1, sizeof(PyObject *)) : NULL;
    if (!rows->start || !rows->size || !rows->symbol || !rows->target || (keys && !rows->key)) {
        rows_free(rows);
        PyErr_NoMemory();
        return -1;
    }
    size_t e = 0;
    Py_ssize_t r = 0;
    for (Py_ssize_t q = 0; q < n; q++) {
        if (rows->row_of[q] != r) continue; /* a dict packed already */
        PyObject *row = PyList_GET_ITEM(list, q), *key, *value;
        Py_ssize_t at = 0;
        rows->start[r] = e;
        rows->size[r] = PyDict_GET_SIZE(row);
        while (PyDict_Next(row, &at, &key, &value)) {
            long long symbol, target;
            if (!as_small_int(key, &symbol) || symbol < 0 || symbol >= map_length || map[symbol] < 0) continue;
            if (!as_small_int(value, &target) || target < 0 || target >= n) {
                rows->arcs = e;
                rows_free(rows);
                PyErr_Format(PyExc_ValueError, "state %zd has an arc to %R, which is not a state", q, value);
                return -1;
            }
            if (e >= total) break; /* cannot happen: no Python code runs while the dicts are read */
            rows->symbol[e] = map[symbol];
            rows->target[e] = (int32_t)target;
            if (keys) {
                Py_INCREF(key);
                rows->key[e] = key;
            }
            e++;
        }
        r++;
    }
    rows->start[packed] = e;
    rows->arcs = e;
    return 0;
}

/* ---------------------------------------------------------------- TrieWalker */

#include "trie_subtrees.h"

typedef struct {
    PyObject_HEAD
    int32_t nodes, edges, symbols;
    int32_t *node_start;                     /* nodes + 1: node -> its edges, in the trie's order */
    int32_t *edge_symbol, *edge_token, *edge_child; /* symbol index, token code (steps()), child or 0 */
    int32_t *sorted;                         /* per node, its edges sorted by symbol (for lookups) */
    int32_t *end_start, *end_token;          /* nodes + 1: node -> the tokens ending there */
    int32_t *subtree_end;                    /* nodes: the node after node's subtree (subtrees are contiguous) */
    int32_t *symbol_index;                   /* symbol -> index, or -1 */
    Py_ssize_t symbol_range;
    int32_t max_token;
    PyObject **token_object;                 /* token -> its int, made on first use */
    int32_t *wide_node_of, *wide_node_edge;  /* nodes of WIDE_NODE edges or more: their edges by symbol (edge + 1) */
    TrieSubtrees *subtrees;                  /* for walk_transforms, built on its first call (NULL: none) */
    int subtrees_built;
} TrieWalker;

/* A trie node with this many edges or more has them as a table by symbol (up to WIDE_NODE_CELLS entries in all):
 * the root, read from every mid-character state with its continuation bytes, reads all 256 bytes. */
#define WIDE_NODE 32
#define WIDE_NODE_CELLS ((size_t)1 << 22)

static void TrieWalker_clear(TrieWalker *w) {
    free(w->node_start);
    free(w->edge_symbol);
    free(w->edge_token);
    free(w->edge_child);
    free(w->sorted);
    free(w->subtree_end);
    free(w->end_start);
    free(w->end_token);
    free(w->symbol_index);
    free(w->wide_node_of);
    free(w->wide_node_edge);
    w->wide_node_of = w->wide_node_edge = NULL;
    trie_subtrees_free(w->subtrees);
    w->subtrees = NULL, w->subtrees_built = 0;
    if (w->token_object) {
        for (int32_t t = 0; t <= w->max_token; t++) Py_XDECREF(w->token_object[t]);
        free(w->token_object);
    }
    w->node_start = w->edge_symbol = w->edge_token = w->edge_child = w->sorted = NULL;
    w->end_start = w->end_token = w->symbol_index = w->subtree_end = NULL;
    w->token_object = NULL;
    w->nodes = w->edges = w->symbols = 0;
}

static void TrieWalker_dealloc(TrieWalker *w) {
    TrieWalker_clear(w);
    Py_TYPE(w)->tp_free((PyObject *)w);
}

static int32_t *copy_ints(const int32_t *source, size_t count) {
    int32_t *copy = malloc((count ? count : 1) * sizeof(int32_t));
    if (copy && count) memcpy(copy, source, count * sizeof(int32_t));
    return copy;
}

static const int32_t *walker_sorted_symbol; /* qsort has no context argument; set under the GIL only */

static int by_symbol(const void *a, const void *b) {
    int32_t x = walker_sorted_symbol[*(const int32_t *)a], y = walker_sorted_symbol[*(const int32_t *)b];
    return (x > y) - (x < y);
}

/* Offsets `start[0..count]` that start at 0, never fall and end at `total`. */
static int valid_offsets(const int32_t *start, Py_ssize_t count, Py_ssize_t total) {
    if (start[0] != 0 || start[count] != total) return 0;
    for (Py_ssize_t k = 0; k < count; k++)
        if (start[k + 1] < start[k]) return 0;
    return 1;
}

/* The nodes renumbered in the order the walks visit them (depth first, the last edge's child first, as a
 * stack pops them), edges and ends laid out in that order: a walk then reads the trie's arrays nearly
 * front to back instead of jumping between nodes numbered when they were inserted.  Nodes no walk reaches
 * (no parent) keep their order after the rest.  What the walks file does not change: the edge order of
 * each node is kept, and token codes naming a node (-2 - node) follow it.  In this order a node's subtree
 * is the nodes from it to subtree_end[node], which walk_transforms reads as a scan.  -1 when out of memory. */
static int walker_lay_out(TrieWalker *w) {
    int32_t n = w->nodes, *order = malloc((size_t)n * 4), *new_id = malloc((size_t)n * 4), *stack = malloc((size_t)n * 4);
    int32_t *node_start = malloc(((size_t)n + 1) * 4), *end_start = malloc(((size_t)n + 1) * 4);
    int32_t *edge_symbol = malloc(((size_t)w->edges + 1) * 4), *edge_token = malloc(((size_t)w->edges + 1) * 4);
    int32_t *edge_child = malloc(((size_t)w->edges + 1) * 4);
    int32_t *end_token = malloc(((size_t)w->end_start[n] + 1) * 4), *subtree_end = malloc((size_t)n * 4);
    int ok = order && new_id && stack && node_start && end_start && edge_symbol && edge_token && edge_child && end_token &&
             subtree_end;
    if (ok) {
        int32_t placed = 0, top = 0;
        for (int32_t k = 0; k < n; k++) new_id[k] = -1;
        stack[top++] = 0;
        while (top) { /* a tree: each node is pushed once, so the stack holds at most n */
            int32_t node = stack[--top];
            new_id[node] = placed;
            order[placed++] = node;
            for (int32_t e = w->node_start[node]; e < w->node_start[node + 1]; e++)
                if (w->edge_child[e]) stack[top++] = w->edge_child[e];
        }
        for (int32_t k = 0; k < n; k++)
            if (new_id[k] < 0) new_id[k] = placed, order[placed++] = k;
        int32_t edges = 0, ends = 0;
        for (int32_t k = 0; k < n; k++) {
            int32_t node = order[k];
            node_start[k] = edges, end_start[k] = ends;
            for (int32_t e = w->node_start[node]; e < w->node_start[node + 1]; e++, edges++) {
                int32_t token = w->edge_token[e];
                edge_symbol[edges] = w->edge_symbol[e];
                edge_token[edges] = token < -1 ? -2 - new_id[-2 - token] : token;
                edge_child[edges] = w->edge_child[e] ? new_id[w->edge_child[e]] : 0;
            }
            for (int32_t j = w->end_start[node]; j < w->end_start[node + 1]; j++) end_token[ends++] = w->end_token[j];
        }
        node_start[n] = edges, end_start[n] = ends;
        for (int32_t k = n - 1; k >= 0; k--) { /* children come after their parent: their ends are known */
            subtree_end[k] = k + 1;
            for (int32_t e = node_start[k]; e < node_start[k + 1]; e++)
                if (edge_child[e] && subtree_end[edge_child[e]] > subtree_end[k]) subtree_end[k] = subtree_end[edge_child[e]];
        }
        w->subtree_end = subtree_end;
        free(w->node_start), free(w->end_start), free(w->edge_symbol), free(w->edge_token), free(w->edge_child);
        free(w->end_token);
        w->node_start = node_start, w->end_start = end_start, w->edge_symbol = edge_symbol, w->edge_token = edge_token;
        w->edge_child = edge_child, w->end_token = end_token;
    } else {
        free(node_start), free(end_start), free(edge_symbol), free(edge_token), free(edge_child), free(end_token);
        free(subtree_end);
    }
    free(order), free(new_id), free(stack);
    return ok ? 0 : -1;
}

/* The tables of the nodes with WIDE_NODE edges or more, where they fit; 0, or -1 out of memory. */
static int walker_wide_nodes(TrieWalker *w) {
    size_t count = 0;
    for (int32_t node = 0; node < w->nodes; node++) count += w->node_start[node + 1] - w->node_start[node] >= WIDE_NODE;
    if (!count || w->symbols <= 0 || count > WIDE_NODE_CELLS / (size_t)w->symbols) return 0;
    w->wide_node_of = malloc((size_t)w->nodes * sizeof(int32_t) + 4);
    w->wide_node_edge = calloc(count * (size_t)w->symbols, sizeof(int32_t));
    if (!w->wide_node_of || !w->wide_node_edge) return -1;
    int32_t next = 0;
    for (int32_t node = 0; node < w->nodes; node++) {
        w->wide_node_of[node] = -1;
        if (w->node_start[node + 1] - w->node_start[node] < WIDE_NODE) continue;
        int32_t *cells = w->wide_node_edge + (size_t)next * (size_t)w->symbols;
        for (int32_t e = w->node_start[node]; e < w->node_start[node + 1]; e++) cells[w->edge_symbol[e]] = e + 1;
        w->wide_node_of[node] = next++;
    }
    return 0;
}

static int TrieWalker_init(TrieWalker *w, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"node_start", "edge_symbol", "edge_token", "edge_child", "end_start", "end_token",
                            "symbol_index", "symbols", NULL};
    Py_buffer v_node = {0}, v_symbol = {0}, v_token = {0}, v_child = {0}, v_end_start = {0}, v_end = {0}, v_index = {0};
    int symbols;
    int ok = -1;
    uint8_t *seen = NULL;
    int32_t *stamp = NULL;
    if (w->node_start) {
        PyErr_SetString(PyExc_RuntimeError, "TrieWalker is already initialised");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*y*y*y*y*y*y*i:TrieWalker", names, &v_node, &v_symbol, &v_token,
                                     &v_child, &v_end_start, &v_end, &v_index, &symbols))
        return -1;
    Py_ssize_t node_count, edge_count, end_count, index_count;
    const int32_t *node_start = int32_table(&v_node, -1, "node_start", &node_count);
    if (!node_start) goto done;
    if (node_count < 2 || node_count - 1 > INT32_MAX / 2) {
        PyErr_SetString(PyExc_ValueError, "node_start must hold one offset per node and one more (a root at least)");
        goto done;
    }
    Py_ssize_t nodes = node_count - 1;
    const int32_t *edge_symbol = int32_table(&v_symbol, -1, "edge_symbol", &edge_count);
    if (!edge_symbol) goto done;
    const int32_t *edge_token = int32_table(&v_token, edge_count, "edge_token", NULL);
    const int32_t *edge_child = edge_token ? int32_table(&v_child, edge_count, "edge_child", NULL) : NULL;
    const int32_t *end_start = edge_child ? int32_table(&v_end_start, node_count, "end_start", NULL) : NULL;
    const int32_t *end_token = end_start ? int32_table(&v_end, -1, "end_token", &end_count) : NULL;
    const int32_t *symbol_index = end_token ? int32_table(&v_index, -1, "symbol_index", &index_count) : NULL;
    if (!symbol_index) goto done;
    if (symbols < 0 || edge_count > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "symbols must be a count");
        goto done;
    }
    if (!valid_offsets(node_start, nodes, edge_count)) {
        PyErr_SetString(PyExc_ValueError, "node_start must be offsets into the edges");
        goto done;
    }
    if (!valid_offsets(end_start, nodes, end_count)) {
        PyErr_SetString(PyExc_ValueError, "end_start must be offsets into end_token");
        goto done;
    }
    for (Py_ssize_t k = 0; k < index_count; k++)
        if (symbol_index[k] < -1 || symbol_index[k] >= symbols) {
            PyErr_SetString(PyExc_ValueError, "symbol_index holds an index outside the symbols");
            goto done;
        }
    int32_t max_token = -1;
    for (Py_ssize_t k = 0; k < end_count; k++) {
        if (end_token[k] < 0 || (uint32_t)end_token[k] >= MAX_ID) {
            PyErr_SetString(PyExc_ValueError, "end_token holds a token outside 0 .. 2**26 - 1");
            goto done;
        }
        if (end_token[k] > max_token) max_token = end_token[k];
    }
    /* A tree: every child comes after its parent and has one parent, so a walk visits each node once. */
    seen = calloc((size_t)nodes, 1);
    stamp = malloc(((size_t)symbols + 1) * sizeof(int32_t));
    if (!seen || !stamp) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < symbols; k++) stamp[k] = -1;
    for (Py_ssize_t node = 0; node < nodes; node++) {
        for (int32_t e = node_start[node]; e < node_start[node + 1]; e++) {
            int32_t symbol = edge_symbol[e], token = edge_token[e], child = edge_child[e];
            if (symbol < 0 || symbol >= symbols || stamp[symbol] == node) {
                PyErr_SetString(PyExc_ValueError, "a node's edges must have distinct symbols within the symbols");
                goto done;
            }
            stamp[symbol] = (int32_t)node;
            if (child != 0 && (child <= node || child >= nodes || seen[child])) {
                PyErr_SetString(PyExc_ValueError, "the trie must be a tree with each child after its parent");
                goto done;
            }
            if (child) seen[child] = 1;
            if (token >= 0) {
                if ((uint32_t)token >= MAX_ID) {
                    PyErr_SetString(PyExc_ValueError, "edge_token holds a token outside 0 .. 2**26 - 1");
                    goto done;
                }
                if (token > max_token) max_token = token;
            } else if (token < -1 && (token == INT32_MIN || -2 - (int64_t)token >= nodes)) {
                PyErr_SetString(PyExc_ValueError, "edge_token names the tokens of a node that is not in the trie");
                goto done;
            }
        }
    }
    w->nodes = (int32_t)nodes;
    w->edges = (int32_t)edge_count;
    w->symbols = symbols;
    w->symbol_range = index_count;
    w->max_token = max_token;
    w->node_start = copy_ints(node_start, (size_t)node_count);
    w->edge_symbol = copy_ints(edge_symbol, (size_t)edge_count);
    w->edge_token = copy_ints(edge_token, (size_t)edge_count);
    w->edge_child = copy_ints(edge_child, (size_t)edge_count);
    w->end_start = copy_ints(end_start, (size_t)node_count);
    w->end_token = copy_ints(end_token, (size_t)end_count);
    w->symbol_index = copy_ints(symbol_index, (size_t)index_count);
    w->sorted = malloc(((size_t)edge_count + 1) * sizeof(int32_t));
    w->token_object = calloc((size_t)max_token + 2, sizeof(PyObject *));
    if (!w->node_start || !w->edge_symbol || !w->edge_token || !w->edge_child || !w->end_start || !w->end_token ||
        !w->symbol_index || !w->sorted || !w->token_object || walker_lay_out(w)) {
        TrieWalker_clear(w);
        PyErr_NoMemory();
        goto done;
    }
    for (int32_t e = 0; e < w->edges; e++) w->sorted[e] = e;
    walker_sorted_symbol = w->edge_symbol;
    for (int32_t node = 0; node < w->nodes; node++) {
        int32_t from = w->node_start[node], count = w->node_start[node + 1] - from;
        if (count > 1) qsort(w->sorted + from, (size_t)count, sizeof(int32_t), by_symbol);
    }
    if (walker_wide_nodes(w)) {
        TrieWalker_clear(w);
        PyErr_NoMemory();
        goto done;
    }
    ok = 0;
done:
    free(seen);
    free(stamp);
    PyBuffer_Release(&v_node);
    PyBuffer_Release(&v_symbol);
    PyBuffer_Release(&v_token);
    PyBuffer_Release(&v_child);
    PyBuffer_Release(&v_end_start);
    PyBuffer_Release(&v_end);
    PyBuffer_Release(&v_index);
    return ok;
}

/* The edge of `node` reading symbol index `symbol`, or -1 (its table, or a binary search over its sorted edges). */
static int32_t walker_edge(const TrieWalker *w, int32_t node, int32_t symbol) {
    if ((uint32_t)symbol >= (uint32_t)w->symbols) return -1; /* (an arc off the trie: product_lattice_over's) */
    if (w->wide_node_of && w->wide_node_of[node] >= 0)
        return w->wide_node_edge[(size_t)w->wide_node_of[node] * (size_t)w->symbols + (size_t)symbol] - 1;
    int32_t lo = w->node_start[node], hi = w->node_start[node + 1];
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2, e = w->sorted[mid], s = w->edge_symbol[e];
        if (s == symbol) return e;
        if (s < symbol) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

/* Where state q goes on symbol index k: a dense table, or a binary search of q's arcs sorted by symbol
 * (through `sorted`, or the rows themselves when they are in symbol order: `rows_by_symbol`). */
typedef struct {
    const Rows *rows;
    int32_t symbols;
    int32_t *dense;    /* packed rows x symbols: target + 1, 0 for none; or NULL */
    size_t dense_mapped, wide_mapped; /* zeroed_table's, for dense and wide */
    int32_t *sorted;   /* per state, its arcs sorted by symbol (when there is no dense table) */
    int rows_by_symbol;
    int scanned;       /* rows in no order: searched from end to end (product_lattice_over's, of a few arcs) */
    int32_t *wide_of;  /* without a dense table: per packed row, its place in `wide`, or -1 */
    int32_t *wide;     /* the rows of LOOKUP_WIDE_ROW arcs or more as a table: target + 1, 0 for none */
    uint8_t *filled;   /* lookup_init_lazy's: per packed row, whether its dense cells are written (NULL: all are) */
} Lookup;

/* Without a dense table, rows of this many arcs or more get one (up to WIDE_LOOKUP_MAX entries in all): a
 * string's states between two characters read 200 bytes, and the trie walk looks them up below every node;
 * the rest are binary searched. */
#define LOOKUP_WIDE_ROW 24
#define LOOKUP_SIZES 256 /* row sizes told apart when choosing the widest rows */

static void lookup_free(Lookup *l) {
    free_table(l->dense, l->dense_mapped), free(l->sorted), free(l->wide_of), free_table(l->wide, l->wide_mapped);
    free(l->filled);
    l->filled = NULL;
    l->dense = l->sorted = l->wide_of = l->wide = NULL;
    l->dense_mapped = l->wide_mapped = 0;
}

/* The wide rows' table: of the rows of LOOKUP_WIDE_ROW arcs or more, the widest that fit in WIDE_LOOKUP_MAX
 * entries (a JSON Schema's 143k-state chunked pattern has 100k rows of 24-250 arcs: with none tabled because
 * they did not all fit, binary searches were a fifth of its set-up).  0, or -1 out of memory. */
static int lookup_wide_rows(Lookup *l) {
    const Rows *rows = l->rows;
    size_t count = 0, fits, by_size[LOOKUP_SIZES + 1] = {0};
    if (l->symbols <= 0) return 0;
    fits = WIDE_LOOKUP_MAX / (size_t)l->symbols;
    for (Py_ssize_t r = 0; r < rows->packed; r++) {
        size_t size = rows->start[r + 1] - rows->start[r];
        by_size[size < LOOKUP_SIZES ? size : LOOKUP_SIZES]++;
    }
    size_t narrowest = LOOKUP_SIZES + 1; /* the rows of at least this many arcs (sizes past LOOKUP_SIZES as one) */
    while (narrowest > LOOKUP_WIDE_ROW && count + by_size[narrowest - 1] <= fits) count += by_size[--narrowest];
    if (!count) return 0;
    l->wide_of = malloc((size_t)rows->packed * sizeof(int32_t) + 4);
    l->wide = zeroed_table(count * (size_t)l->symbols * sizeof(int32_t), &l->wide_mapped);
    if (!l->wide_of || !l->wide) return -1;
    int32_t next = 0;
    for (Py_ssize_t r = 0; r < rows->packed; r++) {
        if (rows->start[r + 1] - rows->start[r] < narrowest) {
            l->wide_of[r] = -1;
            continue;
        }
        int32_t *cells = l->wide + (size_t)next * (size_t)l->symbols;
        for (size_t e = rows->start[r]; e < rows->start[r + 1]; e++) cells[rows->symbol[e]] = rows->target[e] + 1;
        l->wide_of[r] = next++;
    }
    return 0;
}

/* qsort has no context argument, and lookups are made without the GIL: one per thread */
static _Thread_local const int32_t *lookup_sorted_symbol;

static int arc_by_symbol(const void *a, const void *b) {
    int32_t x = lookup_sorted_symbol[*(const int32_t *)a], y = lookup_sorted_symbol[*(const int32_t *)b];
    return (x > y) - (x < y);
}

/* rows_by_symbol: the rows' arcs are in symbol order already, so no index is made unless a dense table fits. */
static int lookup_init(Lookup *l, const Rows *rows, int32_t symbols, int rows_by_symbol) {
    memset(l, 0, sizeof *l);
    l->rows = rows;
    l->symbols = symbols;
    size_t cells = (size_t)rows->packed * (size_t)symbols;
    if (symbols == 0 || (rows->packed && cells / (size_t)rows->packed != (size_t)symbols)) cells = SIZE_MAX;
    if (cells > DENSE_LOOKUP_MAX && rows_by_symbol) {
        l->rows_by_symbol = 1;
        return lookup_wide_rows(l);
    }
    if (cells <= DENSE_LOOKUP_MAX) {
        /* target + 1, 0 where there is no arc: zeroed pages instead of a pass filling up to 64 MB */
        l->dense = zeroed_table(cells * sizeof(int32_t), &l->dense_mapped);
        if (!l->dense) return -1;
        for (Py_ssize_t r = 0; r < rows->packed; r++)
            for (size_t e = rows->start[r]; e < rows->start[r + 1]; e++)
                l->dense[(size_t)r * (size_t)symbols + (size_t)rows->symbol[e]] = rows->target[e] + 1;
        return 0;
    }
    l->sorted = malloc((rows->arcs + 1) * sizeof(int32_t));
    if (!l->sorted || lookup_wide_rows(l)) return -1;
    for (size_t e = 0; e < rows->arcs; e++) l->sorted[e] = (int32_t)e;
    lookup_sorted_symbol = rows->symbol;
    for (Py_ssize_t r = 0; r < rows->packed; r++) {
        if (l->wide_of && l->wide_of[r] >= 0) continue; /* looked up in its table, never searched */
        size_t from = rows->start[r], count = rows->start[r + 1] - from;
        int32_t *arc = l->sorted + from;
        if (count > 64) {
            qsort(arc, count, sizeof(int32_t), arc_by_symbol);
            continue;
        }
        for (size_t i = 1; i < count; i++) { /* short rows (a mid-character state reads at most 64 bytes) */
            int32_t e = arc[i], symbol = rows->symbol[e];
            size_t j = i;
            for (; j > 0 && rows->symbol[arc[j - 1]] > symbol; j--) arc[j] = arc[j - 1];
            arc[j] = e;
        }
    }
    return 0;
}

/* lookup_init without the GIL (it reads the packed rows and writes C memory only), for the walks' callers. */
static int lookup_init_released(Lookup *l, const Rows *rows, int32_t symbols) {
    int failed;
    Py_BEGIN_ALLOW_THREADS
    failed = lookup_init(l, rows, symbols, 0);
    Py_END_ALLOW_THREADS
    return failed;
}

/* lookup_init for walks from a few states (state_walk.h): the dense table's pages are mapped zeroed and each
 * row's cells written when the row is first looked up, so its cost is that of the rows the walks reach (a
 * JSON Schema's chunked pattern of 32k states: 9.5 ms of page faults and writes up front for a first mask
 * that reads a few hundred rows).  Without room for a dense table, lookup_init's. */
static int lookup_init_lazy(Lookup *l, const Rows *rows, int32_t symbols) {
    size_t cells = (size_t)rows->packed * (size_t)symbols;
    if (symbols == 0 || (rows->packed && cells / (size_t)rows->packed != (size_t)symbols) || cells > DENSE_LOOKUP_MAX)
        return lookup_init(l, rows, symbols, 0);
    memset(l, 0, sizeof *l);
    l->rows = rows;
    l->symbols = symbols;
    l->dense = zeroed_table(cells * sizeof(int32_t), &l->dense_mapped);
    l->filled = calloc((size_t)rows->packed + 1, 1);
    return l->dense && l->filled ? 0 : -1;
}

/* The walks' lookup (TrieWalker.walk and walk_transforms): filled row by row as rows are reached
 * (lookup_init_lazy) when they walk from a quarter of the states or fewer, since the rows they read are then
 * those near the states walked from (a large pattern's heavy states, walked carrying transforms); made whole
 * otherwise.  Without the GIL. */
static int lookup_init_for_walks(Lookup *l, const Rows *rows, int32_t symbols, const uint8_t *walked_from,
                                 Py_ssize_t states) {
    Py_ssize_t walked = states;
    if (walked_from) {
        walked = 0;
        for (Py_ssize_t q = 0; q < states; q++) walked += walked_from[q] != 0;
    }
    if (4 * walked > states) return lookup_init_released(l, rows, symbols);
    int failed;
    Py_BEGIN_ALLOW_THREADS
    failed = lookup_init_lazy(l, rows, symbols);
    Py_END_ALLOW_THREADS
    return failed;
}

static void lookup_fill_row(const Lookup *l, int32_t r) {
    const Rows *rows = l->rows;
    int32_t *cells = l->dense + (size_t)r * (size_t)l->symbols;
    for (size_t e = rows->start[r]; e < rows->start[r + 1]; e++) cells[rows->symbol[e]] = rows->target[e] + 1;
    l->filled[r] = 1;
}

static int32_t lookup_target(const Lookup *l, int32_t q, int32_t symbol) {
    const Rows *rows = l->rows;
    int32_t r = rows->row_of[q];
    if (l->dense) {
        if (l->filled && !l->filled[r]) lookup_fill_row(l, r);
        return l->dense[(size_t)r * (size_t)l->symbols + (size_t)symbol] - 1;
    }
    if (l->wide_of && l->wide_of[r] >= 0) return l->wide[(size_t)l->wide_of[r] * (size_t)l->symbols + (size_t)symbol] - 1;
    size_t lo = rows->start[r], hi = rows->start[r + 1];
    if (l->scanned) {
        for (; lo < hi; lo++)
            if (rows->symbol[lo] == symbol) return rows->target[lo];
        return -1;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2, e = l->rows_by_symbol ? mid : (size_t)l->sorted[mid];
        int32_t s = rows->symbol[e];
        if (s == symbol) return rows->target[e];
        if (s < symbol) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

/* States walked so far by their rows: (state + 1, or 0 for a free slot; row hash), open addressing by hash. */
typedef struct {
    struct { int32_t state; uint32_t hash; } *slots;
    size_t mask;
} RowMemo;

static int row_memo_init(RowMemo *m, Py_ssize_t states) {
    size_t capacity = 16;
    while (capacity < 2 * (size_t)states + 2) capacity *= 2;
    m->slots = calloc(capacity, sizeof *m->slots);
    m->mask = capacity - 1;
    return m->slots ? 0 : -1;
}

static uint32_t row_hash(const Rows *rows, int32_t q) {
    int32_t r = rows->row_of[q];
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)rows->size[r];
    for (size_t e = rows->start[r]; e < rows->start[r + 1]; e++) {
        h = (h ^ (uint32_t)rows->symbol[e]) * 0x100000001B3ull;
        h = (h ^ (uint32_t)rows->target[e]) * 0x100000001B3ull;
    }
    return (uint32_t)(h ^ (h >> 32));
}

static int rows_equal(const Rows *rows, int32_t state_a, int32_t state_b) {
    int32_t a = rows->row_of[state_a], b = rows->row_of[state_b];
    if (a == b) return 1;
    size_t from_a = rows->start[a], from_b = rows->start[b], count = rows->start[a + 1] - from_a;
    if (rows->size[a] != rows->size[b] || rows->start[b + 1] - from_b != count) return 0;
    return memcmp(rows->symbol + from_a, rows->symbol + from_b, count * sizeof(int32_t)) == 0 &&
           memcmp(rows->target + from_a, rows->target + from_b, count * sizeof(int32_t)) == 0;
}

/* An earlier state with q's row, or -1; q's hash is left in *hash for row_memo_add. */
static int32_t row_memo_find(const RowMemo *m, const Rows *rows, int32_t q, uint32_t *hash) {
    *hash = row_hash(rows, q);
    for (size_t slot = *hash & m->mask; m->slots[slot].state; slot = (slot + 1) & m->mask)
        if (m->slots[slot].hash == *hash && rows_equal(rows, m->slots[slot].state - 1, q)) return m->slots[slot].state - 1;
    return -1;
}

/* Remember q, whose row no earlier state has (at most one state per slot: init made 2 slots a state). */
static void row_memo_add(RowMemo *m, int32_t q, uint32_t hash) {
    size_t slot = hash & m->mask;
    while (m->slots[slot].state) slot = (slot + 1) & m->mask;
    m->slots[slot].state = q + 1;
    m->slots[slot].hash = hash;
}

/* One edge read from a state: file what ends there and go on below it. */
static int walker_take(const TrieWalker *w, int32_t e, int32_t target, Ints *found, Ints *stack) {
    int32_t token = w->edge_token[e], child = w->edge_child[e];
    if (token >= 0) {
        if (ints_push(found, token) || ints_push(found, target)) return -1;
    } else if (token < -1) {
        int32_t node = -2 - token;
        for (int32_t k = w->end_start[node]; k < w->end_start[node + 1]; k++)
            if (ints_push(found, w->end_token[k]) || ints_push(found, target)) return -1;
    }
    if (child && (ints_push(stack, child) || ints_push(stack, target))) return -1;
    return 0;
}

/* agnostic._walk from state q: appends (token, target) pairs to `found` in the order the pure walk files them. */
static int walker_walk_state(const TrieWalker *w, const Lookup *l, int32_t q, Ints *found, Ints *stack) {
    const Rows *rows = l->rows;
    const size_t *row_start = rows->start;
    stack->length = 0;
    if (ints_push(stack, 0) || ints_push(stack, q)) return -1;
    while (stack->length) {
        int32_t state = stack->data[--stack->length];
        int32_t node = stack->data[--stack->length];
        int32_t from = w->node_start[node], to = w->node_start[node + 1], r = rows->row_of[state];
        if ((Py_ssize_t)(to - from) <= rows->size[r]) { /* the smaller side, as the pure walk picks it */
            for (int32_t e = from; e < to; e++) {
                int32_t target = lookup_target(l, state, w->edge_symbol[e]);
                if (target >= 0 && walker_take(w, e, target, found, stack)) return -1;
            }
        } else {
            for (size_t a = row_start[r]; a < row_start[r + 1]; a++) {
                int32_t e = walker_edge(w, node, rows->symbol[a]);
                if (e >= 0 && walker_take(w, e, rows->target[a], found, stack)) return -1;
            }
        }
    }
    return 0;
}

static PyObject *walker_token(TrieWalker *w, int32_t token) {
    PyObject *object = w->token_object[token];
    if (!object) object = w->token_object[token] = PyLong_FromLong(token);
    return object;
}

/* One state's arcs (found[from:to] as pairs) as a dict of token -> target, the tokens `keep` leaves out
 * left out. */
static int walker_emit_row(TrieWalker *w, const int32_t *pairs, size_t count, PyObject **target_object, PyObject *out,
                           const uint8_t *keep) {
    PyObject *row = PyDict_New();
    if (!row) return -1;
    for (size_t k = 0; k < count; k++) {
        if (keep && !keep[pairs[2 * k]]) continue;
        PyObject *token = walker_token(w, pairs[2 * k]);
        if (!token || PyDict_SetItem(row, token, target_object[pairs[2 * k + 1]])) {
            Py_DECREF(row);
            return -1;
        }
    }
    int failed = PyList_Append(out, row);
    Py_DECREF(row);
    return failed;
}

/* ---------------------------------------------------------------- groups of equal token lists */

/* The token lists of the groups found so far, each stored once however many states take it: a JSON
 * Schema's string states (one per string of the schema) read the same 90,000 tokens of cl100k back into
 * themselves, and one list with a (state, target) pair per state holds what took a list per state
 * (cl100k, a schema of 300 strings: 21.5M tokens stored become 0.9M).  Open addressing over the groups
 * by the hash of their tokens. */
typedef struct {
    Ints tokens;        /* the groups' tokens, one list after another */
    size_t *start;      /* groups + 1 offsets into tokens */
    uint64_t *hash;     /* per group */
    size_t groups, capacity;
    int32_t *table;     /* group, or -1 for a free slot */
    size_t table_mask;
} GroupTable;

static void group_table_free(GroupTable *t) {
    free(t->tokens.data), free(t->start), free(t->hash), free(t->table);
    memset(t, 0, sizeof *t);
}

static uint64_t tokens_hash(const int32_t *tokens, size_t count) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)count;
    for (size_t k = 0; k < count; k++) h = (h ^ (uint32_t)tokens[k]) * 0x100000001B3ull;
    return h ^ (h >> 29);
}

static int group_table_rehash(GroupTable *t, size_t slots) {
    int32_t *table = malloc(slots * sizeof(int32_t));
    if (!table) return -1;
    for (size_t k = 0; k < slots; k++) table[k] = -1;
    for (size_t g = 0; g < t->groups; g++) {
        size_t slot = t->hash[g] & (slots - 1);
        while (table[slot] >= 0) slot = (slot + 1) & (slots - 1);
        table[slot] = (int32_t)g;
    }
    free(t->table);
    t->table = table;
    t->table_mask = slots - 1;
    return 0;
}

/* The group holding exactly `tokens` (in that order), made when new; -1 when out of memory. */
static int32_t group_table_intern(GroupTable *t, const int32_t *tokens, size_t count) {
    uint64_t h = tokens_hash(tokens, count);
    if (t->table) {
        for (size_t slot = h & t->table_mask; t->table[slot] >= 0; slot = (slot + 1) & t->table_mask) {
            int32_t g = t->table[slot];
            if (t->hash[g] == h && t->start[g + 1] - t->start[g] == count &&
                memcmp(t->tokens.data + t->start[g], tokens, count * sizeof(int32_t)) == 0)
                return g;
        }
    }
    if (t->groups >= INT32_MAX - 1) return -1;
    if (t->groups + 1 >= t->capacity) {
        size_t capacity = t->capacity ? 2 * t->capacity : 256;
        size_t *start = realloc(t->start, (capacity + 1) * sizeof(size_t));
        if (!start) return -1;
        t->start = start;
        uint64_t *hash = realloc(t->hash, capacity * sizeof(uint64_t));
        if (!hash) return -1;
        t->hash = hash;
        t->capacity = capacity;
    }
    if (ints_reserve(&t->tokens, count)) return -1;
    if (t->groups == 0) t->start[0] = 0;
    memcpy(t->tokens.data + t->tokens.length, tokens, count * sizeof(int32_t));
    t->tokens.length += count;
    int32_t g = (int32_t)t->groups++;
    t->start[g + 1] = t->tokens.length;
    t->hash[g] = h;
    if (!t->table || 2 * t->groups > t->table_mask + 1) return group_table_rehash(t, t->table ? 2 * (t->table_mask + 1) : 1024) ? -1 : g;
    size_t slot = h & t->table_mask;
    while (t->table[slot] >= 0) slot = (slot + 1) & t->table_mask;
    t->table[slot] = g;
    return g;
}

/* One walked state's arcs (pairs, in the walk's order) grouped by target in order of first appearance (every
 * token counts for the order, kept or not), the tokens `keep` leaves out dropped: per group, (target, kept
 * tokens, offset) in `scratch`, its kept tokens at that offset of `sorted`, one group after another.
 * `group_of` is -1 everywhere on entry and on exit.  0, or -1 out of memory. */
static int walker_group_by_target(const int32_t *pairs, size_t count, const uint8_t *keep, int32_t *group_of,
                                  Ints *scratch, Ints *sorted) {
    scratch->length = 0;
    int status = 0;
    for (size_t k = 0; k < count && !status; k++) {
        int32_t target = pairs[2 * k + 1];
        if (group_of[target] < 0) {
            group_of[target] = (int32_t)(scratch->length / 3);
            status = ints_push(scratch, target) || ints_push(scratch, 0) || ints_push(scratch, 0);
        }
        if (!status && (!keep || keep[pairs[2 * k]])) scratch->data[3 * group_of[target] + 1]++;
    }
    size_t targets = scratch->length / 3, offset = 0;
    for (size_t g = 0; g < targets; g++) {
        scratch->data[3 * g + 2] = (int32_t)offset;
        offset += (size_t)scratch->data[3 * g + 1];
    }
    sorted->length = 0;
    if (!status && !(status = ints_reserve(sorted, offset + 1))) {
        sorted->length = offset;
        for (size_t g = 0; g < targets; g++) scratch->data[3 * g + 1] = 0; /* filled so far */
        for (size_t k = 0; k < count; k++) {
            if (keep && !keep[pairs[2 * k]]) continue;
            int32_t g = group_of[pairs[2 * k + 1]];
            sorted->data[scratch->data[3 * g + 2] + scratch->data[3 * g + 1]++] = pairs[2 * k];
        }
    }
    for (size_t g = 0; g < targets; g++) group_of[scratch->data[3 * g]] = -1;
    return status ? -1 : 0;
}

/* One walked state's arcs filed as groups (walker_group_by_target), groups left empty dropped, each list
 * interned and (group, q, target) appended to `filed`.  `scratch` and `sorted` are the caller's buffers. */
static int walker_file_state(const int32_t *pairs, size_t count, int32_t q, const uint8_t *keep, int32_t *group_of,
                             Ints *scratch, Ints *sorted, GroupTable *table, Ints *filed) {
    if (walker_group_by_target(pairs, count, keep, group_of, scratch, sorted)) return -1;
    for (size_t g = 0; g < scratch->length / 3; g++) {
        size_t size = (size_t)scratch->data[3 * g + 1];
        if (!size) continue;
        int32_t group = group_table_intern(table, sorted->data + scratch->data[3 * g + 2], size);
        if (group < 0 || ints_push(filed, group) || ints_push(filed, q) || ints_push(filed, scratch->data[3 * g])) return -1;
    }
    return 0;
}

static int state_walk_borrow(PyObject *o, const TrieWalker *w, Rows *rows); /* state_walk.h */

/* What both walks read first: the `keep` flags (None: every token) and the pattern's rows packed, or borrowed
 * from a StateWalk of this walker that packed them (`transitions` may be one: state_walk_borrow). */
static int walker_arguments(const TrieWalker *w, PyObject *transitions, PyObject *keep_object, Py_buffer *keep_view,
                            const uint8_t **keep, Rows *rows) {
    if (!w->node_start) {
        PyErr_SetString(PyExc_RuntimeError, "TrieWalker is not initialised");
        return -1;
    }
    *keep = NULL;
    if (keep_object != Py_None) {
        if (PyObject_GetBuffer(keep_object, keep_view, PyBUF_SIMPLE)) return -1;
        if (keep_view->len <= w->max_token) {
            PyBuffer_Release(keep_view);
            PyErr_SetString(PyExc_ValueError, "keep must hold one byte per token of the trie");
            return -1;
        }
        *keep = keep_view->buf;
    }
    int borrowed = state_walk_borrow(transitions, w, rows);
    if (borrowed < 0 || (!borrowed && rows_pack(transitions, w->symbol_index, w->symbol_range, rows, 0))) {
        PyBuffer_Release(keep_view);
        return -1;
    }
    return 0;
}

/* The `sources` argument of the walks: None (every state), or one byte per state, nonzero for the states
 * walked from.  *mask is NULL for None; -1 with an exception when it is not that. */
static int walker_sources(PyObject *sources, Py_ssize_t states, Py_buffer *view, const uint8_t **mask) {
    *mask = NULL;
    if (sources == Py_None) return 0;
    if (PyObject_GetBuffer(sources, view, PyBUF_SIMPLE)) return -1;
    if (view->len != states) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError, "sources must hold one byte per state of the transitions");
        return -1;
    }
    *mask = view->buf;
    return 0;
}

/* The Python groups of a grouped walk: per group of `table` its tokens (an array('I')) and its pairs q -> target
 * (a Pairs, pairs.h) from the (group, q, target) triples of `filed`, in the order the groups were made, as
 * (tokens, pairs) tuples. */
static PyObject *walker_groups_made(const GroupTable *table, const Ints *filed) {
    size_t groups = table->groups;
    PyObject *out = PyList_New((Py_ssize_t)groups);
    Pairs **pairs = calloc(groups + 1, sizeof(Pairs *));
    Py_ssize_t *count = calloc(groups + 1, sizeof(Py_ssize_t));
    int status = out && pairs && count ? 0 : -1;
    if (!pairs || !count) PyErr_NoMemory();
    for (size_t k = 0; !status && k + 3 <= filed->length; k += 3) count[filed->data[k]]++;
    for (size_t g = 0; !status && g < groups; g++) {
        size_t from = table->start[g], size = table->start[g + 1] - from;
        PyObject *tokens = token_array((const uint32_t *)table->tokens.data + from, size);
        if (!tokens || !(pairs[g] = pairs_new(count[g]))) {
            Py_XDECREF(tokens);
            status = -1;
            break;
        }
        PyObject *group = PyTuple_Pack(2, tokens, (PyObject *)pairs[g]);
        Py_DECREF(tokens);
        if (!group) {
            status = -1;
            break;
        }
        /* A tuple of an array and a Pairs can be in no cycle: untracked, the collector never walks it. */
        PyObject_GC_UnTrack(group);
        PyList_SET_ITEM(out, (Py_ssize_t)g, group);
        count[g] = 0; /* (now the pairs filled) */
    }
    for (size_t k = 0; !status && k + 3 <= filed->length; k += 3) { /* in filing order: by state */
        Pairs *x = pairs[filed->data[k]];
        x->source[count[filed->data[k]]] = filed->data[k + 1];
        x->target[count[filed->data[k]]++] = filed->data[k + 2];
    }
    for (size_t g = 0; !status && g < groups; g++)
        if (!pairs_ascending(pairs[g]->source, pairs[g]->size)) { /* (one state, one target per token: cannot be) */
            PyErr_SetString(PyExc_RuntimeError, "walk: a group filed twice by one state");
            status = -1;
        }
    if (pairs)
        for (size_t g = 0; g < groups; g++) Py_XDECREF(pairs[g]); /* the tuples hold theirs */
    free(pairs), free(count);
    if (status) Py_CLEAR(out);
    return out;
}

/* walk(transitions, max_arcs, groups, keep=None, sources=None) -> the rows (a list of dicts, one per state) or
 * the groups, or None once more than max_arcs (>= 0) arcs are found (counted before `keep`, one byte per
 * token, leaves out the tokens whose byte is 0).  A state whose row equals an earlier state's (in order, size
 * included) is not walked: its arcs are that state's.  `sources` (one byte per state) leaves the states whose
 * byte is 0 without arcs (walk_groups walks them carrying transforms instead).
 *
 * Groups (walk_groups; its pure twin in bpefst/promotion/agnostic.py files them alike): each state's arcs
 * grouped by target, and a group whose token list an earlier state already filed is that group, one more
 * (state, target) pair in its dict.  A state is filed as soon as it is walked, so the memory is that of
 * the distinct lists and the pairs, whatever the count of arcs.  Rows: every state is walked first, its
 * arcs kept as packed pairs (8 bytes an arc), and only then are the dicts made (about 70 bytes an arc), so
 * that a pattern refused at max_arcs is refused before it has cost more than the pairs. */
static PyObject *TrieWalker_walk(TrieWalker *w, PyObject *args) {
    PyObject *transitions, *keep_object = Py_None, *sources_object = Py_None;
    long long max_arcs;
    int groups;
    if (!PyArg_ParseTuple(args, "OLp|OO:walk", &transitions, &max_arcs, &groups, &keep_object, &sources_object)) return NULL;
    Py_buffer keep_view = {0}, sources_view = {0};
    const uint8_t *keep, *walked_from;
    Rows rows;
    if (walker_arguments(w, transitions, keep_object, &keep_view, &keep, &rows)) return NULL;
    Py_ssize_t n = rows.states;
    if (n > INT32_MAX / 2 || walker_sources(sources_object, n, &sources_view, &walked_from)) {
        rows_free(&rows);
        PyBuffer_Release(&keep_view);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "too many states");
        return NULL;
    }
    Lookup lookup = {0};
    RowMemo memo = {0};
    GroupTable table = {0};
    Ints found = {0}, stack = {0}, scratch = {0}, sorted = {0}, filed = {0};
    PyObject **target_object = groups ? NULL : calloc((size_t)n + 1, sizeof(PyObject *)); /* (rows' values) */
    int32_t *group_of = malloc(((size_t)n + 1) * sizeof(int32_t));
    int32_t *state_of_row = malloc(((size_t)rows.packed + 1) * sizeof(int32_t));
    size_t *pair_from = malloc(((size_t)n + 1) * sizeof(size_t)), *pair_to = malloc(((size_t)n + 1) * sizeof(size_t));
    long long *arcs_of = malloc(((size_t)n + 1) * sizeof(long long)); /* per walked state, its arcs before keep */
    PyObject *out = NULL, *result = NULL;
    if (lookup_init_for_walks(&lookup, &rows, w->symbols, walked_from, n) || row_memo_init(&memo, n) ||
        (!groups && !target_object) ||
        !group_of || !state_of_row || !pair_from || !pair_to || !arcs_of) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t r = 0; r < rows.packed; r++) state_of_row[r] = -1;
    for (Py_ssize_t q = 0; q < n; q++) group_of[q] = -1;
    int failed = 0, over = 0;
    long long arcs = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t q = 0; q < n; q++) {
        if (walked_from && !walked_from[q]) { /* not walked from: no arcs */
            pair_from[q] = pair_to[q] = groups ? filed.length / 3 : found.length / 2;
            continue;
        }
        /* one dict held by several states is compared once: its first state stands for it */
        uint32_t hash = 0;
        int32_t same_state = state_of_row[rows.row_of[q]];
        if (same_state < 0) same_state = row_memo_find(&memo, &rows, (int32_t)q, &hash);
        long long count;
        if (same_state >= 0) {
            count = arcs_of[same_state];
            if (groups) { /* the earlier state's groups, with this state as one more source */
                size_t from = pair_from[same_state], to = pair_to[same_state];
                pair_from[q] = filed.length / 3;
                for (size_t k = 3 * from; k < 3 * to && !failed; k += 3)
                    failed = ints_push(&filed, filed.data[k]) || ints_push(&filed, (int32_t)q) ||
                             ints_push(&filed, filed.data[k + 2]);
                if (failed) break;
                pair_to[q] = filed.length / 3;
            } else {
                pair_from[q] = pair_from[same_state];
                pair_to[q] = pair_to[same_state];
            }
        } else {
            size_t before = groups ? 0 : found.length / 2;
            if (groups) found.length = 0;
            if (walker_walk_state(w, &lookup, (int32_t)q, &found, &stack)) {
                failed = 1;
                break;
            }
            count = arcs_of[q] = (long long)(found.length / 2 - before);
            if (groups) {
                pair_from[q] = filed.length / 3;
                if (walker_file_state(found.data, found.length / 2, (int32_t)q, keep, group_of, &scratch, &sorted,
                                      &table, &filed)) {
                    failed = 1;
                    break;
                }
                pair_to[q] = filed.length / 3;
            } else {
                pair_from[q] = before;
                pair_to[q] = found.length / 2;
            }
            row_memo_add(&memo, (int32_t)q, hash);
            state_of_row[rows.row_of[q]] = (int32_t)q;
        }
        arcs += count;
        if (max_arcs >= 0 && arcs > max_arcs) {
            over = 1;
            break;
        }
    }
    Py_END_ALLOW_THREADS
    if (arcs >= LARGE_LATTICE_ARCS) large_build_pending = 1;
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    if (over) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    /* what the objects are made from is all the walk needs now: the lookup and the stack go first */
    lookup_free(&lookup), free(stack.data), free(memo.slots);
    memset(&lookup, 0, sizeof lookup), memset(&stack, 0, sizeof stack), memset(&memo, 0, sizeof memo);
    for (Py_ssize_t q = 0; target_object && q < n; q++)
        if (!(target_object[q] = PyLong_FromSsize_t(q))) goto done;
    /* the objects made here hold only ints: no collection is needed while they are made (the GIL is held
     * and no Python code runs, so no other thread sees the collector off) */
    int collecting = PyGC_Disable();
    if (groups) {
        out = walker_groups_made(&table, &filed);
    } else if ((out = PyList_New(0))) {
        for (Py_ssize_t q = 0; q < n; q++)
            if (walker_emit_row(w, found.data + 2 * pair_from[q], pair_to[q] - pair_from[q], target_object, out, keep)) {
                Py_CLEAR(out);
                break;
            }
    }
    if (collecting) PyGC_Enable();
    result = out;
    out = NULL;
done:
    Py_XDECREF(out);
    if (target_object)
        for (Py_ssize_t q = 0; q < n; q++) Py_XDECREF(target_object[q]);
    free(target_object);
    free(group_of), free(state_of_row), free(pair_from), free(pair_to), free(arcs_of);
    lookup_free(&lookup);
    free(memo.slots);
    size_t freed = (found.capacity + filed.capacity + table.tokens.capacity) * sizeof(int32_t);
    free(found.data), free(stack.data), free(scratch.data), free(sorted.data), free(filed.data);
    group_table_free(&table);
    rows_free(&rows);
    give_back(freed);
    PyBuffer_Release(&keep_view);
    if (walked_from) PyBuffer_Release(&sources_view);
    return result;
}

/* ---------------------------------------------------------------- the walk carrying transforms */

/* A transform: the partial map q -> delta*(q, w) of the spellings w that lead to it, as its sources
 * (ascending) and their targets.  The walk carries one per trie node instead of one walk per state:
 * the compiled twin of agnostic._walk_transforms for patterns of few states. */
typedef struct {
    int32_t *source, *target, size;
    uint64_t hash;
} Transform;

typedef struct {
    Transform *items;
    int32_t count, capacity;
    int32_t *next;          /* count x symbols: the transform after a symbol, -1 dead, -2 not yet known */
    int32_t symbols;
    int32_t *table;         /* open addressing by hash: -1 free */
    size_t table_size;
} Transforms;

static uint64_t transform_hash(const int32_t *source, const int32_t *target, int32_t size) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)size;
    for (int32_t i = 0; i < size; i++) {
        h = (h ^ (uint64_t)(uint32_t)source[i]) * 0x100000001B3ull;
        h = (h ^ (uint64_t)(uint32_t)target[i]) * 0x100000001B3ull;
    }
    return h ^ h >> 29;
}

static void transforms_free(Transforms *t) {
    for (int32_t k = 0; k < t->count; k++) free(t->items[k].source), free(t->items[k].target);
    free(t->items), free(t->next), free(t->table);
}

static int transforms_rehash(Transforms *t) {
    size_t size = t->table_size ? 2 * t->table_size : 1024;
    int32_t *table = ids_by_hash(size, t->count, t->count ? (const void *)&t->items[0].hash : NULL, sizeof(Transform));
    if (!table) return -1;
    free(t->table);
    t->table = table, t->table_size = size;
    return 0;
}

/* The id of the transform (source, target) (copied when new), or -1 when out of memory. */
static int32_t transforms_intern(Transforms *t, const int32_t *source, const int32_t *target, int32_t size) {
    uint64_t hash = transform_hash(source, target, size);
    size_t k = (size_t)hash & (t->table_size - 1);
    for (; t->table[k] >= 0; k = (k + 1) & (t->table_size - 1)) {
        const Transform *x = &t->items[t->table[k]];
        if (x->hash == hash && x->size == size && !memcmp(x->source, source, (size_t)size * 4) &&
            !memcmp(x->target, target, (size_t)size * 4))
            return t->table[k];
    }
    if (t->count == t->capacity) {
        int32_t capacity = t->capacity ? 2 * t->capacity : 64;
        Transform *items = realloc(t->items, (size_t)capacity * sizeof(Transform));
        if (items) t->items = items;
        int32_t *next = items ? realloc(t->next, (size_t)capacity * (size_t)t->symbols * sizeof(int32_t) + 4) : NULL;
        if (next) t->next = next;
        if (!items || !next) return -1;
        t->capacity = capacity;
    }
    int32_t id = t->count;
    Transform *x = &t->items[id];
    x->source = malloc((size_t)size * 4 + 4), x->target = malloc((size_t)size * 4 + 4);
    if (!x->source || !x->target) {
        free(x->source), free(x->target);
        return -1;
    }
    memcpy(x->source, source, (size_t)size * 4), memcpy(x->target, target, (size_t)size * 4);
    x->size = size, x->hash = hash;
    for (int32_t s = 0; s < t->symbols; s++) t->next[(size_t)id * (size_t)t->symbols + (size_t)s] = -2;
    t->count++;
    if (2 * (size_t)t->count > t->table_size) {
        if (transforms_rehash(t)) return -1;
    } else {
        t->table[k] = id;
    }
    return id;
}

/* The transform after one more symbol from `id` (memoized), -1 when no target reads it, -3 out of memory. */
static int32_t transforms_step(Transforms *t, const Lookup *l, int32_t id, int32_t symbol, int32_t *source, int32_t *target) {
    int32_t *memo = &t->next[(size_t)id * (size_t)t->symbols + (size_t)symbol];
    if (*memo != -2) return *memo;
    const Transform *x = &t->items[id];
    int32_t size = 0;
    for (int32_t i = 0; i < x->size; i++) {
        int32_t r = lookup_target(l, x->target[i], symbol);
        if (r >= 0) source[size] = x->source[i], target[size++] = r;
    }
    int32_t found = size ? transforms_intern(t, source, target, size) : -1;
    if (size && found < 0) return -3;
    t->next[(size_t)id * (size_t)t->symbols + (size_t)symbol] = found; /* (intern may have moved t->next) */
    return found;
}

/* (transform, alphabet) -> the transform every symbol of the alphabet leads it to (-1: none leads anywhere),
 * or NOT_UNIFORM; open addressing, key + 1 (0 free). */
#define NOT_UNIFORM (-4)
typedef struct {
    uint64_t *keys;
    int32_t *values;
    size_t mask, count;
} UniformMemo;

static void uniform_memo_free(UniformMemo *m) { free(m->keys), free(m->values); }

static int uniform_memo_grow(UniformMemo *m) {
    size_t capacity = m->keys ? 2 * (m->mask + 1) : 256;
    uint64_t *keys = calloc(capacity, sizeof(uint64_t));
    int32_t *values = malloc(capacity * sizeof(int32_t));
    if (!keys || !values) {
        free(keys), free(values);
        return -1;
    }
    for (size_t k = 0; m->keys && k <= m->mask; k++)
        if (m->keys[k]) {
            size_t slot = (size_t)((m->keys[k] * 0x9E3779B97F4A7C15ull) >> 20) & (capacity - 1);
            while (keys[slot]) slot = (slot + 1) & (capacity - 1);
            keys[slot] = m->keys[k], values[slot] = m->values[k];
        }
    free(m->keys), free(m->values);
    m->keys = keys, m->values = values, m->mask = capacity - 1;
    return 0;
}

/* Where every symbol of `alphabet` takes transform `id` (memoized), NOT_UNIFORM when they differ, -3 out of
 * memory. */
static int32_t uniform_step(Transforms *t, const Lookup *l, UniformMemo *m, const TrieSubtrees *s, int32_t id,
                            int32_t alphabet, int32_t *source, int32_t *target) {
    if (!m->keys || 2 * (m->count + 1) > m->mask + 1) {
        if (uniform_memo_grow(m)) return -3;
    }
    uint64_t key = ((uint64_t)(uint32_t)id << 32 | (uint32_t)alphabet) + 1;
    size_t slot = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & m->mask;
    for (; m->keys[slot]; slot = (slot + 1) & m->mask)
        if (m->keys[slot] == key) return m->values[slot];
    int32_t found = -5;
    for (int32_t i = s->alphabet_start[alphabet]; i < s->alphabet_start[alphabet + 1]; i++) {
        int32_t symbol = s->alphabet_symbol[i], next = t->next[(size_t)id * (size_t)t->symbols + (size_t)symbol];
        if (next == -2 && (next = transforms_step(t, l, id, symbol, source, target)) == -3) return -3;
        if (found == -5) {
            found = next;
        } else if (next != found) {
            found = NOT_UNIFORM;
            break;
        }
    }
    if (found == -5) found = -1; /* (an empty alphabet: a subtree with no arcs is never indexed) */
    m->keys[slot] = key, m->values[slot] = found, m->count++;
    return found;
}

/* Files the tokens below indexed node k in bulk when its alphabet moves transform `id` uniformly at every
 * depth (found gets (transform, token) pairs, arcs their count): 1 when filed, 0 when the subtree must be
 * walked, -1 out of memory.  `chain` holds at least the node's height + 1 entries. */
static int file_subtree(Transforms *t, const Lookup *l, UniformMemo *m, const TrieSubtrees *s, int32_t k, int32_t id,
                        int32_t *source, int32_t *target, int32_t *chain, Ints *found, long long *arcs) {
    int32_t height = s->height[k], alphabet = s->alphabet[k], reached = 0;
    for (int32_t d = 1, at = id; d <= height; d++) {
        int32_t next = uniform_step(t, l, m, s, at, alphabet, source, target);
        if (next == -3) return -1;
        if (next == NOT_UNIFORM) return 0;
        if (next < 0) break;
        chain[d] = at = next, reached = d;
    }
    for (int32_t d = 1; d <= reached; d++) {
        int32_t from, to;
        subtree_tokens_at(s, k, d, &from, &to);
        if (from == to) continue;
        if (ints_reserve(found, 2 * (size_t)(to - from))) return -1;
        for (int32_t i = from; i < to; i++) found->data[found->length++] = chain[d], found->data[found->length++] = s->tokens[i];
        *arcs += (long long)t->items[chain[d]].size * (to - from);
    }
    return 1;
}

/* walk_transforms(transitions, max_arcs, keep=None) -> walk_groups' groups [(tokens, {q: r})], or None past
 * max_arcs (>= 0; counted before keep).  One walk of the trie carrying transforms; each group is the tokens
 * of one transform, ascending, groups by their first token (agnostic.walk_groups orders the pure walk's
 * groups the same way). */
static PyObject *TrieWalker_walk_transforms(TrieWalker *w, PyObject *args) {
    PyObject *transitions, *keep_object = Py_None, *sources_object = Py_None;
    long long max_arcs;
    if (!PyArg_ParseTuple(args, "OL|OO:walk_transforms", &transitions, &max_arcs, &keep_object, &sources_object)) return NULL;
    Py_buffer keep_view = {0}, sources_view = {0};
    const uint8_t *keep, *walked_from;
    Rows rows;
    if (walker_arguments(w, transitions, keep_object, &keep_view, &keep, &rows)) return NULL;
    Py_ssize_t n = rows.states;
    if (walker_sources(sources_object, n, &sources_view, &walked_from)) {
        rows_free(&rows);
        PyBuffer_Release(&keep_view);
        return NULL;
    }
    PyObject *result = NULL, *out = NULL;
    Lookup lookup = {0};
    Transforms t = {0};
    Ints found = {0}, order = {0};
    int32_t *source = NULL, *target = NULL, *count = NULL, *start = NULL, *tokens = NULL, *transform_of = NULL;
    int32_t *tid_of = NULL, *chain = NULL;
    uint64_t *filed_bits = NULL;
    UniformMemo uniform = {0};
    if (n > (1 << 20)) {
        PyErr_SetString(PyExc_ValueError, "walk_transforms takes patterns of at most 2**20 states");
        goto done;
    }
    t.symbols = w->symbols > 0 ? w->symbols : 1;
    source = malloc(((size_t)n + 1) * 4), target = malloc(((size_t)n + 1) * 4);
    if (lookup_init_for_walks(&lookup, &rows, w->symbols, walked_from, n) || !source || !target || transforms_rehash(&t)) {
        PyErr_NoMemory();
        goto done;
    }
    int32_t sources = 0; /* the identity on the states walked from */
    for (int32_t q = 0; q < (int32_t)n; q++)
        if (!walked_from || walked_from[q]) source[sources] = target[sources] = q, sources++;
    if (sources == 0 || transforms_intern(&t, source, target, sources) < 0) {
        if (sources) PyErr_NoMemory();
        else result = PyList_New(0);
        goto done;
    }
    /* the walk: the nodes scanned in their order, where each subtree is contiguous; a node's transform is set
     * by its parent (-1: dead, its subtree skipped).  The output does not depend on the order the walk files
     * in, and a scan reads the trie front to back with no stack of (node, transform) pairs (the JSON
     * pattern's walk over GPT-2: 1.3 -> 1.0 ms).  found holds (transform, token) pairs as filed, and the
     * arcs (before keep) are counted as they are filed, so a lattice past max_arcs stops the walk there. */
    long long arcs = 0;
    if (!w->subtrees_built) {
        int failed;
        w->subtrees = trie_subtrees_build(w->nodes, w->symbols, w->node_start, w->edge_symbol, w->edge_token,
                                          w->edge_child, w->end_start, w->end_token, w->subtree_end, &failed);
        if (failed) goto nomemory;
        w->subtrees_built = 1;
    }
    const TrieSubtrees *subtrees = w->subtrees;
    tid_of = malloc((size_t)w->nodes * 4);
    chain = malloc(((size_t)(subtrees ? subtrees->max_height : 0) + 1) * 4);
    if (!tid_of || !chain) goto nomemory;
    tid_of[0] = 0;
    /* The walk and the bucketing read and write C memory only (the rows were packed, the walker's subtrees
     * built above, under the GIL), so they run without it: another thread may decode meanwhile. */
    enum { WALKED, WALK_OUT_OF_MEMORY, WALK_PAST_LIMIT, WALK_SPELLED_TWICE } walk = WALKED;
    Py_BEGIN_ALLOW_THREADS
    for (int32_t node = 0, end = w->subtree_end[0]; node < end; node++) {
        int32_t id = tid_of[node];
        if (id < 0) {
            node = w->subtree_end[node] - 1;
            continue;
        }
        if (subtrees && subtrees->index_of[node] >= 0) {
            int filed = file_subtree(&t, &lookup, &uniform, subtrees, subtrees->index_of[node], id, source, target, chain,
                                     &found, &arcs);
            if (filed < 0) {
                walk = WALK_OUT_OF_MEMORY;
                goto walked;
            }
            if (filed) {
                if (max_arcs >= 0 && arcs > max_arcs) {
                    walk = WALK_PAST_LIMIT;
                    goto walked;
                }
                node = w->subtree_end[node] - 1;
                continue;
            }
        }
        const int32_t *memo = t.next + (size_t)id * (size_t)t.symbols; /* (moves when a transform is added) */
        for (int32_t e = w->node_start[node]; e < w->node_start[node + 1]; e++) {
            int32_t next = memo[w->edge_symbol[e]], child = w->edge_child[e];
            if (next == -2) {
                next = transforms_step(&t, &lookup, id, w->edge_symbol[e], source, target);
                if (next == -3) {
                    walk = WALK_OUT_OF_MEMORY;
                    goto walked;
                }
                memo = t.next + (size_t)id * (size_t)t.symbols;
            }
            if (child) tid_of[child] = next;
            if (next < 0) continue;
            int32_t token = w->edge_token[e];
            if (token >= 0) {
                if (ints_push(&found, next) || ints_push(&found, token)) {
                    walk = WALK_OUT_OF_MEMORY;
                    goto walked;
                }
                arcs += t.items[next].size;
            } else if (token < -1) {
                int32_t end = -2 - token;
                for (int32_t k = w->end_start[end]; k < w->end_start[end + 1]; k++)
                    if (ints_push(&found, next) || ints_push(&found, w->end_token[k])) {
                        walk = WALK_OUT_OF_MEMORY;
                        goto walked;
                    }
                arcs += (long long)t.items[next].size * (w->end_start[end + 1] - w->end_start[end]);
            }
            if (max_arcs >= 0 && arcs > max_arcs) {
                walk = WALK_PAST_LIMIT;
                goto walked;
            }
        }
    }
    /* the kept tokens bucketed by transform, each bucket ascending and the buckets by their first token:
     * a token is filed once (it ends at one node), so reading the tokens in ascending order and placing
     * each in its transform's bucket gives both orders without a sort (sorting was a fifth of the call).
     * The tokens filed are read off a bitset a word at a time: a scan of every id, testing each for a
     * transform, mispredicted its branch on most ids (a fifth of the walk over cl100k, 100,000 ids). */
    size_t words = ((size_t)w->max_token + 64) / 64;
    count = calloc((size_t)t.count + 1, 4), start = calloc((size_t)t.count + 2, 4);
    tokens = malloc((found.length / 2 + 1) * 4);
    transform_of = malloc(((size_t)w->max_token + 1) * 4);
    filed_bits = calloc(words + 1, 8);
    if (!count || !start || !tokens || !transform_of || !filed_bits) {
        walk = WALK_OUT_OF_MEMORY;
        goto walked;
    }
    for (size_t k = 0; k < found.length; k += 2) {
        int32_t id = found.data[k], token = found.data[k + 1];
        if (keep && !keep[token]) continue;
        uint64_t bit = (uint64_t)1 << (token & 63);
        if (filed_bits[token >> 6] & bit) { /* only tables that lie file a token twice */
            walk = WALK_SPELLED_TWICE;
            goto walked;
        }
        filed_bits[token >> 6] |= bit;
        transform_of[token] = id;
        count[id]++;
    }
    for (int32_t id = 0; id < t.count; id++) start[id + 1] = start[id] + count[id];
    memset(count, 0, (size_t)t.count * 4);
    for (size_t word = 0; word < words; word++)
        for (uint64_t bits = filed_bits[word]; bits; bits &= bits - 1) {
            int32_t token = (int32_t)(word * 64 + (size_t)__builtin_ctzll(bits)), id = transform_of[token];
            if (!count[id] && (ints_push(&order, token) || ints_push(&order, id))) {
                walk = WALK_OUT_OF_MEMORY;
                goto walked;
            }
            tokens[start[id] + count[id]++] = token;
        }
walked:
    Py_END_ALLOW_THREADS
    if (walk == WALK_OUT_OF_MEMORY) goto nomemory;
    if (walk == WALK_PAST_LIMIT) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    if (walk == WALK_SPELLED_TWICE) {
        PyErr_SetString(PyExc_ValueError, "walk_transforms: the trie spells a token twice");
        goto done;
    }
    if (!(out = PyList_New((Py_ssize_t)(order.length / 2)))) goto nomemory;
    int collecting = PyGC_Disable(); /* arrays, tuples and Pairs only: no cycle to collect */
    for (size_t g = 0; g < order.length / 2; g++) {
        int32_t id = order.data[2 * g + 1];
        const Transform *x = &t.items[id];
        PyObject *list = token_array((const uint32_t *)tokens + start[id], (size_t)count[id]), *group = NULL;
        Pairs *pairs = list ? pairs_new(x->size) : NULL;
        if (pairs && !pairs_ascending(x->source, x->size)) /* (a step keeps its sources' order: cannot be) */
            PyErr_SetString(PyExc_RuntimeError, "walk_transforms: a transform's states out of order");
        else if (pairs) {
            memcpy(pairs->source, x->source, (size_t)x->size * sizeof(int32_t));
            memcpy(pairs->target, x->target, (size_t)x->size * sizeof(int32_t));
            group = PyTuple_Pack(2, list, (PyObject *)pairs);
        }
        Py_XDECREF(list), Py_XDECREF(pairs);
        if (!group) {
            if (collecting) PyGC_Enable();
            goto done;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)g, group);
    }
    if (collecting) PyGC_Enable();
    result = out;
    out = NULL;
    goto done;
nomemory:
    PyErr_NoMemory();
done:
    Py_XDECREF(out);
    transforms_free(&t);
    lookup_free(&lookup);
    free(found.data), free(order.data);
    free(source), free(target), free(count), free(start), free(tokens), free(transform_of), free(tid_of), free(chain), free(filed_bits);
    uniform_memo_free(&uniform);
    rows_free(&rows);
    PyBuffer_Release(&keep_view);
    if (walked_from) PyBuffer_Release(&sources_view);
    return result;
}

static PyObject *TrieWalker_over(TrieWalker *w, PyObject *args); /* state_walk.h */

static PyMethodDef TrieWalker_methods[] = {
    {"over", (PyCFunction)TrieWalker_over, METH_VARARGS,
     "over(transitions, keep=None) -> a StateWalk: walks from one state at a time over these rows, packed once; "
     "keep: one byte per token, 0 leaves it out."},
    {"walk_transforms", (PyCFunction)TrieWalker_walk_transforms, METH_VARARGS,
     "walk_transforms(transitions, max_arcs, keep=None, sources=None) -> walk_groups' groups from one walk carrying "
     "transforms; None past max_arcs (< 0: no limit); keep: one byte per token, 0 leaves it out; sources: one byte "
     "per state, 0 for the states not walked from (None: all)."},
    {"walk", (PyCFunction)TrieWalker_walk, METH_VARARGS,
     "walk(transitions, max_arcs, groups, keep=None, sources=None) -> per state token -> target (dicts), or "
     "walk_groups' groups; None past max_arcs (< 0: no limit); keep: one byte per token, 0 leaves it out; sources: "
     "one byte per state, 0 for the states not walked from (no arcs; None: all)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject TrieWalkerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "bpefst._core.TrieWalker",
    .tp_basicsize = sizeof(TrieWalker),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A tokenizer's spelling trie, packed, walked against pattern DFAs (bpefst.promotion.agnostic).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)TrieWalker_init,
    .tp_dealloc = (destructor)TrieWalker_dealloc,
    .tp_methods = TrieWalker_methods,
};

/* ---------------------------------------------------------------- token_masks */

/* token_masks(lists) -> [the bitset of each list's tokens] (canonical.token_mask of each); a list is a list
 * of ints or an array('I'). */
static PyObject *token_masks(PyObject *module, PyObject *lists) {
    if (!PyList_Check(lists)) {
        PyErr_SetString(PyExc_TypeError, "token_masks() takes a list of token lists");
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(lists);
    PyObject *out = PyList_New(count);
    if (!out) return NULL;
    uint8_t *buffer = NULL;
    uint32_t *ids = NULL;
    size_t capacity = 0, id_capacity = 0;
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *tokens = PyList_GET_ITEM(lists, k);
        Py_ssize_t size = token_count(tokens);
        if (size < 0) goto fail;
        if ((size_t)size >= id_capacity) {
            uint32_t *grown = realloc(ids, ((size_t)size + 1) * 4);
            if (!grown) {
                PyErr_NoMemory();
                goto fail;
            }
            ids = grown, id_capacity = (size_t)size + 1;
        }
        if (token_copy(tokens, size, MAX_ID, ids)) {
            if (PyErr_ExceptionMatches(PyExc_IndexError) || PyErr_ExceptionMatches(PyExc_TypeError)) {
                PyErr_Clear();
                PyErr_SetString(PyExc_ValueError, "token_masks() takes tokens in 0 .. 2**26 - 1");
            }
            goto fail;
        }
        long long top = -1;
        for (Py_ssize_t j = 0; j < size; j++)
            if ((long long)ids[j] > top) top = ids[j];
        size_t bytes = (size_t)((top >> 3) + 1);
        if (bytes > capacity) {
            uint8_t *grown = realloc(buffer, bytes);
            if (!grown) {
                PyErr_NoMemory();
                goto fail;
            }
            buffer = grown;
            capacity = bytes;
        }
        memset(buffer, 0, bytes);
        for (Py_ssize_t j = 0; j < size; j++) buffer[ids[j] >> 3] |= (uint8_t)(1u << (ids[j] & 7));
        PyObject *mask = top < 0 ? PyLong_FromLong(0) : _PyLong_FromByteArray(buffer, bytes, 1, 0);
        if (!mask) goto fail;
        PyList_SET_ITEM(out, k, mask);
    }
    free(buffer), free(ids);
    return out;
fail:
    free(buffer), free(ids);
    Py_DECREF(out);
    return NULL;
}

/* ---------------------------------------------------------------- chunk_product */

/* (pattern state, chunker state, decoder state) -> product state, open addressing. */
typedef struct {
    uint64_t *keys; /* key + 1; 0 is free */
    int32_t *values;
    size_t mask, count;
} StateTable;

static int state_table_grow(StateTable *t) {
    size_t capacity = t->keys ? 2 * (t->mask + 1) : 1024;
    uint64_t *keys = calloc(capacity, sizeof(uint64_t));
    int32_t *values = malloc(capacity * sizeof(int32_t));
    if (!keys || !values) {
        free(keys);
        free(values);
        return -1;
    }
    if (t->keys)
        for (size_t k = 0; k <= t->mask; k++)
            if (t->keys[k]) {
                size_t slot = (size_t)((t->keys[k] * 0x9E3779B97F4A7C15ull) >> 20) & (capacity - 1);
                while (keys[slot]) slot = (slot + 1) & (capacity - 1);
                keys[slot] = t->keys[k];
                values[slot] = t->values[k];
            }
    free(t->keys);
    free(t->values);
    t->keys = keys;
    t->values = values;
    t->mask = capacity - 1;
    return 0;
}

typedef struct {
    StateTable table;
    /* or, where every key's slot would fit in DIRECT_PRODUCT_BYTES, slots read directly: per (p, c) pair its
     * block of decoder_states slots in `slots` (block number + 1 in pair_block, 0: none yet), each slot the
     * state's number + 1 (0: none yet).  A block is made when its pair is first met: over cl100k a median
     * JSON Schema's product meets 3,576 of its 23,520 pairs, and a table of every key's slot (33 MB) cost
     * 3 ms a call in zeroed pages, a sixth of the numbering. */
    int32_t *pair_block;
    int32_t *slots;
    size_t blocks, slot_capacity;
    Ints p, c, d;         /* per product state, its parts (the numbering's keys) */
    long long limit;      /* max_states, or < 0 */
    int32_t chunk_states, decoder_states;
} Product;

enum { NUMBER_LIMIT = -1, NUMBER_NO_MEMORY = -2 };

/* A product of at most this many (p, c, d) keys' worth of int32 numbers them by slots read directly (its
 * blocks never take more), the rest by hashing (a median JSON Schema's over cl100k: 735 pattern states, its
 * numbering 2 million lookups). */
#define DIRECT_PRODUCT_BYTES ((size_t)64 << 20)

/* Numbering.__call__: the number of (p, c, d), giving the next one to a new key. */
static int32_t product_number(Product *x, int32_t p, int32_t c, int32_t d) {
    uint64_t pair = (uint64_t)p * (uint64_t)x->chunk_states + (uint64_t)c;
    if (x->pair_block) {
        size_t block = (size_t)x->pair_block[pair];
        if (!block) {
            size_t width = (size_t)x->decoder_states;
            if ((x->blocks + 1) * width > x->slot_capacity) {
                size_t capacity = x->slot_capacity ? 2 * x->slot_capacity : 64 * width;
                int32_t *grown = realloc(x->slots, capacity * sizeof(int32_t));
                if (!grown) return NUMBER_NO_MEMORY;
                x->slots = grown, x->slot_capacity = capacity;
            }
            memset(x->slots + x->blocks * width, 0, width * sizeof(int32_t));
            block = ++x->blocks;
            x->pair_block[pair] = (int32_t)block;
        }
        int32_t *slot = &x->slots[(block - 1) * (size_t)x->decoder_states + (size_t)d];
        if (*slot) return *slot - 1;
        size_t k = x->p.length;
        if (k >= (size_t)INT32_MAX - 1) return NUMBER_NO_MEMORY;
        if (ints_push(&x->p, p) || ints_push(&x->c, c) || ints_push(&x->d, d)) return NUMBER_NO_MEMORY;
        *slot = (int32_t)k + 1;
        if (x->limit >= 0 && (long long)k >= x->limit) return NUMBER_LIMIT;
        return (int32_t)k;
    }
    uint64_t key = pair * (uint64_t)x->decoder_states + (uint64_t)d + 1;
    StateTable *t = &x->table;
    if (!t->keys || 2 * (t->count + 1) > t->mask + 1) {
        if (state_table_grow(t)) return NUMBER_NO_MEMORY;
    }
    size_t slot = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & t->mask;
    while (t->keys[slot]) {
        if (t->keys[slot] == key) return t->values[slot];
        slot = (slot + 1) & t->mask;
    }
    size_t k = x->p.length;
    if (k >= (size_t)INT32_MAX) return NUMBER_NO_MEMORY;
    if (ints_push(&x->p, p) || ints_push(&x->c, c) || ints_push(&x->d, d)) return NUMBER_NO_MEMORY;
    t->keys[slot] = key;
    t->values[slot] = (int32_t)k;
    t->count++;
    if (x->limit >= 0 && (long long)k >= x->limit) return NUMBER_LIMIT;
    return (int32_t)k;
}

/* An arc to (p, c, d), numbered, read from pattern arc `from` (-1: BOUNDARY); *into_first set when it leads
 * back to state 0.  0, or NUMBER_LIMIT / NUMBER_NO_MEMORY. */
static int product_arc(Product *x, int32_t p, int32_t c, int32_t d, int32_t from, Ints *arc_from, Ints *arc_target,
                       int *into_first) {
    int32_t t = product_number(x, p, c, d);
    if (t < 0) return t;
    if (t == 0) *into_first = 1;
    return ints_push(arc_from, from) || ints_push(arc_target, t) ? NUMBER_NO_MEMORY : 0;
}

/* The trimmed product's rows by content, to make one dict per distinct row: a row is its kept arcs in order,
 * each (the symbol's value, or -1 for BOUNDARY; the new target).  Open addressing: state + 1, 0 free. */
typedef struct {
    const int32_t *arc_start, *arc_from, *arc_target, *new_id;
    long long *value;   /* pattern arc -> its symbol's value */
    int32_t *slot_state;
    uint64_t *slot_hash;
    size_t mask;
} ProductRows;

static void product_rows_free(ProductRows *r) {
    free(r->value), free(r->slot_state), free(r->slot_hash);
    r->value = NULL, r->slot_state = NULL, r->slot_hash = NULL;
}

static int product_rows_init(ProductRows *r, const Rows *rows, int32_t kept) {
    size_t capacity = 16;
    while (capacity < 2 * (size_t)kept + 2) capacity *= 2;
    r->mask = capacity - 1;
    r->value = malloc((rows->arcs + 1) * sizeof(long long));
    r->slot_state = calloc(capacity, sizeof(int32_t));
    r->slot_hash = malloc(capacity * sizeof(uint64_t));
    if (!r->value || !r->slot_state || !r->slot_hash) {
        product_rows_free(r);
        return -1;
    }
    for (size_t e = 0; e < rows->arcs; e++)
        if (!as_small_int(rows->key[e], &r->value[e])) r->value[e] = -2; /* cannot happen: rows_pack kept ints */
    return 0;
}

static uint64_t product_row_hash(const ProductRows *r, int32_t s) {
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (int32_t a = r->arc_start[s]; a < r->arc_start[s + 1]; a++) {
        int32_t t = r->new_id[r->arc_target[a]];
        if (t < 0) continue;
        h = (h ^ (uint64_t)(r->arc_from[a] < 0 ? -1 : r->value[r->arc_from[a]])) * 0x100000001B3ull;
        h = (h ^ (uint64_t)(uint32_t)t) * 0x100000001B3ull;
    }
    return h ^ h >> 29;
}

static int product_rows_equal(const ProductRows *r, int32_t s, int32_t u) {
    int32_t a = r->arc_start[s], b = r->arc_start[u], a_end = r->arc_start[s + 1], b_end = r->arc_start[u + 1];
    for (;;) {
        while (a < a_end && r->new_id[r->arc_target[a]] < 0) a++;
        while (b < b_end && r->new_id[r->arc_target[b]] < 0) b++;
        if (a == a_end || b == b_end) return a == a_end && b == b_end;
        long long x = r->arc_from[a] < 0 ? -1 : r->value[r->arc_from[a]];
        long long y = r->arc_from[b] < 0 ? -1 : r->value[r->arc_from[b]];
        if (x != y || r->new_id[r->arc_target[a]] != r->new_id[r->arc_target[b]]) return 0;
        a++, b++;
    }
}

/* An earlier kept state whose row equals s's, or -1 (s is remembered then). */
static int32_t product_rows_find(ProductRows *r, int32_t s) {
    uint64_t hash = product_row_hash(r, s);
    size_t slot = (size_t)hash & r->mask;
    for (; r->slot_state[slot]; slot = (slot + 1) & r->mask)
        if (r->slot_hash[slot] == hash && product_rows_equal(r, r->slot_state[slot] - 1, s)) return r->slot_state[slot] - 1;
    r->slot_state[slot] = s + 1;
    r->slot_hash[slot] = hash;
    return -1;
}

/* Whether the token lattice of the merged product passes max_arcs, counted by walking `w` from each state
 * (equal rows walked once) with nothing filed: 1 over, 0 not, -1 out of memory.  What TrieWalker.walk counts
 * (arcs before keep), without the Python rows it reads and the pairs it keeps: a chunked pattern whose
 * lattice is refused costs its C arrays only (a JSON Schema's refused last cut made 300 MB of rows, then
 * 270 MB of pairs, before).  The walk reads the product's own arcs, in their order, beside one symbol an arc
 * (the walker's, or one past its symbols for an arc off the trie), and searches a row from end to end where
 * it has no table: a copy of the arcs sorted by symbol made a refused chunked pattern of 37M arcs take 300 MB
 * more, and the rows it searches are a character's (64 continuation bytes at most). */
static int product_lattice_over(const TrieWalker *w, const Rows *pattern, const ProductRows *product,
                                const Ints *arc_from, const Ints *arc_target, Py_ssize_t states, long long max_arcs) {
    Rows rows = {0};
    Lookup lookup = {0};
    ProductRows same = *product;
    Ints found = {0}, stack = {0};
    size_t arcs = arc_from->length;
    const int32_t *at = product->arc_start;
    long long *counted = malloc(((size_t)states + 1) * sizeof(long long));
    int32_t *walker_symbol = malloc((pattern->arcs + 1) * sizeof(int32_t));
    int over = -1;
    same.slot_state = NULL, same.slot_hash = NULL, same.value = NULL;
    rows.states = rows.packed = states, rows.arcs = arcs;
    rows.row_of = malloc(((size_t)states + 1) * sizeof(int32_t));
    rows.start = malloc(((size_t)states + 1) * sizeof(size_t));
    rows.size = malloc(((size_t)states + 1) * sizeof(Py_ssize_t));
    rows.symbol = malloc((arcs + 1) * sizeof(int32_t));
    rows.target = arc_target->data;
    if (!counted || !walker_symbol || !rows.row_of || !rows.start || !rows.size || !rows.symbol ||
        product_rows_init(&same, pattern, (int32_t)states))
        goto done;
    for (size_t e = 0; e < pattern->arcs; e++) { /* a pattern arc's symbol as the walker's index, -1 if none */
        long long v = same.value[e];
        walker_symbol[e] = v >= 0 && v < w->symbol_range ? w->symbol_index[v] : -1;
    }
    for (Py_ssize_t q = 0; q < states; q++) {
        rows.row_of[q] = (int32_t)q;
        rows.start[q] = (size_t)at[q];
        rows.size[q] = at[q + 1] - at[q];
        for (int32_t a = at[q]; a < at[q + 1]; a++) {
            int32_t from = arc_from->data[a], symbol = from >= 0 ? walker_symbol[from] : -1;
            rows.symbol[a] = symbol >= 0 ? symbol : w->symbols;
        }
    }
    rows.start[states] = arcs;
    /* (symbols + 1: the arcs off the trie have their column, which no trie edge reads) */
    if (lookup_init(&lookup, &rows, w->symbols + 1, 1)) goto done;
    lookup.scanned = !lookup.dense;
    long long total = 0;
    over = 0;
    for (Py_ssize_t q = 0; q < states && !over; q++) {
        int32_t earlier = product_rows_find(&same, (int32_t)q);
        if (earlier >= 0) {
            counted[q] = counted[earlier];
        } else {
            found.length = 0;
            if (walker_walk_state(w, &lookup, (int32_t)q, &found, &stack)) {
                over = -1;
                break;
            }
            counted[q] = (long long)(found.length / 2);
        }
        total += counted[q];
        over = total > max_arcs;
    }
done:
    free(counted), free(walker_symbol), free(found.data), free(stack.data);
    lookup_free(&lookup);
    rows.target = NULL; /* the product's */
    free(rows.row_of), free(rows.start), free(rows.size), free(rows.symbol);
    product_rows_free(&same);
    return over;
}

#define MERGE_MAX_SYMBOL (1 << 22) /* pretokenized.MERGE_MAX_SYMBOL */

/* The bytes left in the character after each decoder state (0 between characters): a mid-character product
 * state reaches a state between characters within that many bytes.  -1 where the decoder has a cycle. */
static int decoder_heights(const int32_t *decoder, int32_t decoder_states, uint8_t *height) {
    memset(height, 0, (size_t)decoder_states);
    for (int round = 0; round <= decoder_states; round++) {
        int changed = 0;
        for (int32_t d = 1; d < decoder_states; d++) {
            int h = 0;
            for (int b = 0; b < 256; b++) {
                int32_t v = decoder[(size_t)d * 256 + (size_t)b];
                if (v != DECODER_NO_ARC && v > 0 && height[v] > h) h = height[v];
            }
            if (h + 1 > 250) return -1;
            if (height[d] != h + 1) height[d] = (uint8_t)(h + 1), changed = 1;
        }
        if (!changed) return 0;
    }
    return -1;
}

/* The chunker's tables as chunk_product last checked them, kept by identity: bytes objects cannot change, and
 * the references held here keep their addresses from being reused, so a later call given the same three
 * objects skips their range checks and the decoder's heights (over cl100k's UTF-8 decoder, 356 states, they
 * were 0.37 ms of every call, a third of a small pattern's first mask).  Read and written under the GIL. */
static struct {
    PyObject *decoder, *chunks, *inside; /* strong references, or NULL */
    int atoms;
    int heights_status;                  /* decoder_heights' result */
    uint8_t *height;                     /* its heights, one per decoder state */
    int32_t decoder_states;
} checked_tables;

static int tables_immutable(const Py_buffer *decoder, const Py_buffer *chunks, const Py_buffer *inside) {
    return decoder->obj && chunks->obj && inside->obj && PyBytes_CheckExact(decoder->obj) &&
           PyBytes_CheckExact(chunks->obj) && PyBytes_CheckExact(inside->obj);
}

static int tables_checked(const Py_buffer *decoder, const Py_buffer *chunks, const Py_buffer *inside, int atoms) {
    return checked_tables.decoder == decoder->obj && checked_tables.chunks == chunks->obj &&
           checked_tables.inside == inside->obj && checked_tables.atoms == atoms;
}

/* decoder_heights, taken from checked_tables when the tables are the ones checked there, else computed (and
 * kept there when the tables are bytes: they passed chunk_product's checks to get here). */
static int checked_decoder_heights(const Py_buffer *v_decoder, const Py_buffer *v_chunks, const Py_buffer *v_inside,
                                   int atoms, int immutable, int checked, const int32_t *decoder,
                                   int32_t decoder_states, uint8_t *height) {
    /* (checked again: another thread may have replaced checked_tables while this call ran without the GIL) */
    if (checked && tables_checked(v_decoder, v_chunks, v_inside, atoms) &&
        checked_tables.decoder_states == decoder_states) {
        memcpy(height, checked_tables.height, (size_t)decoder_states);
        return checked_tables.heights_status;
    }
    int status = decoder_heights(decoder, decoder_states, height);
    uint8_t *kept = immutable ? malloc((size_t)decoder_states + 1) : NULL;
    if (kept) {
        memcpy(kept, height, (size_t)decoder_states);
        Py_XDECREF(checked_tables.decoder), Py_XDECREF(checked_tables.chunks), Py_XDECREF(checked_tables.inside);
        free(checked_tables.height);
        Py_INCREF(v_decoder->obj), Py_INCREF(v_chunks->obj), Py_INCREF(v_inside->obj);
        checked_tables.decoder = v_decoder->obj, checked_tables.chunks = v_chunks->obj;
        checked_tables.inside = v_inside->obj;
        checked_tables.atoms = atoms, checked_tables.heights_status = status, checked_tables.height = kept;
        checked_tables.decoder_states = decoder_states;
    }
    return status;
}

/* Mid-character states with the same future merged, in place of the trimmed product.  A state inside a
 * character (height > 0: bytes left in it) reads continuation bytes only and reaches a state between characters
 * within `height` bytes, so its future is its row, and states whose rows read the same symbols to the same
 * (merged) targets are equivalent: each is merged into the first of them.  Taken by height, lowest first, a
 * state's targets are settled before it is, so one pass finds what rounds of the rule would (the pure twin
 * goes round after round until nothing merges; a row's arcs are compared as sets).  A JSON string's
 * mid-character states, one per decoder state, chunker state and string, mostly agree: over GPT-2 a schema's
 * 66k trimmed states became 20k (keyed as pretokenized.mid_character_chunks says, the product makes 21k and
 * this merges them to the same 20k).  The states left keep their order; states between characters are never
 * merged (that would take the whole minimization, whose log factor costs more than the walk it saves).  Its
 * pure twin: pretokenized._merged_mid_character.  height: one byte per product state (before the trim), on
 * return one per state left.  On return the arcs are those of the states left (written over the product's, in
 * place) and new_id is the identity, merged or not; *distinct is 1 when the mid-character states were merged
 * (no two of them have the same row then), 0 when the symbols or heights left them apart.  0, or -1 out of
 * memory. */
static int chunk_merge_mid(Ints *arc_start, Ints *arc_from, Ints *arc_target, Ints *finals, int32_t **new_id,
                           Py_ssize_t *states, int32_t *kept, int32_t *product_start, uint8_t *height,
                           const long long *value, size_t values, int *distinct) {
    /* read in place (a kept state's arcs are its product state's arcs into kept states): no copy of the
     * product's arcs, which are the call's peak (12 bytes an arc) */
    int32_t m = *kept, *id = *new_id;
    const int32_t *at = arc_start->data, *from = arc_from->data, *target = arc_target->data;
    int32_t *size = calloc((size_t)m + 1, 4), *cls = malloc((size_t)m * 4 + 4), *next = malloc((size_t)m * 4 + 4);
    int32_t *origin = malloc((size_t)m * 4 + 4), *order = malloc((size_t)m * 4 + 4), *stamp = NULL, *seen = NULL;
    struct { int32_t state; uint32_t hash; } *slot = NULL;
    uint8_t *level = calloc((size_t)m + 1, 1);
    long long max_value = 0;
    size_t by_level[257] = {0};
    Ints new_finals = {0};
    int status = -1;
    if (!size || !cls || !next || !origin || !order || !level) goto done;
    for (Py_ssize_t s = 0; s < *states; s++) {
        int32_t k = id[s];
        if (k >= 0) origin[k] = (int32_t)s, level[k] = height[s];
    }
    for (int32_t k = 0; k < m; k++) cls[k] = k;
    *distinct = 0;
    /* the stamps below are indexed by symbol value: the pattern's largest bounds them, or where that is past
     * MERGE_MAX_SYMBOL, the mid-character rows' (symbols past any vocabulary: none merged, as the pure twin) */
    for (size_t e = 0; e < values; e++)
        if (value[e] > max_value) max_value = value[e];
    if (max_value > MERGE_MAX_SYMBOL) {
        max_value = 0;
        for (int32_t k = 0; k < m; k++)
            for (int32_t a = at[origin[k]]; level[k] && a < at[origin[k] + 1]; a++)
                if (id[target[a]] >= 0 && value[from[a]] > max_value) max_value = value[from[a]];
    }
    if (max_value > MERGE_MAX_SYMBOL) goto compact;
    *distinct = 1;
    /* the mid-character states by height, lowest first, each height in state order (a counting sort) */
    for (int32_t k = 0; k < m; k++) by_level[level[k] + 1]++;
    for (int h = 1; h < 257; h++) by_level[h] += by_level[h - 1];
    for (int32_t k = 0; k < m; k++) order[by_level[level[k]]++] = k;
    size_t table = 16;
    while (table < 2 * (size_t)m + 2) table *= 2;
    slot = malloc(table * sizeof *slot), stamp = calloc((size_t)max_value + 2, 4), seen = malloc(((size_t)max_value + 2) * 4);
    if (!slot || !stamp || !seen) goto done;
    for (size_t j = 0; j < table; j++) slot[j].state = -1;
    int32_t epoch = 0;
    for (int32_t i = 0; i < m; i++) {
        int32_t k = order[i];
        if (!level[k]) continue;
        int32_t s = origin[k];
        uint64_t h = 0x9E3779B97F4A7C15ull;
        for (int32_t a = at[s]; a < at[s + 1]; a++) { /* a sum: the arcs' order does not count */
            int32_t t = id[target[a]];
            if (t < 0) continue;
            if (height[target[a]] >= height[s]) { /* the heights are not the rows': nothing is merged */
                for (int32_t q = 0; q < m; q++) cls[q] = q;
                *distinct = 0;
                goto compact;
            }
            size[k]++;
            uint64_t x = ((uint64_t)value[from[a]] << 32 | (uint32_t)cls[t]) * 0xBF58476D1CE4E5B9ull;
            h += x ^ x >> 31;
        }
        h ^= (uint64_t)size[k] * 0x94D049BB133111EBull;
        uint32_t hash = (uint32_t)(h ^ h >> 32);
        size_t j = (size_t)(h ^ h >> 29) & (table - 1);
        for (; slot[j].state >= 0; j = (j + 1) & (table - 1)) {
            int32_t o = slot[j].state, u = origin[o];
            if (slot[j].hash != hash || size[o] != size[k]) continue;
            if (++epoch == INT32_MAX) { /* (stamps wrap: clear them) */
                memset(stamp, 0, ((size_t)max_value + 2) * 4);
                epoch = 1;
            }
            for (int32_t a = at[u]; a < at[u + 1]; a++)
                if (id[target[a]] >= 0) stamp[value[from[a]]] = epoch, seen[value[from[a]]] = cls[id[target[a]]];
            int same = 1;
            for (int32_t a = at[s]; same && a < at[s + 1]; a++) {
                int32_t t = id[target[a]];
                if (t >= 0) same = stamp[value[from[a]]] == epoch && seen[value[from[a]]] == cls[t];
            }
            if (same) break;
        }
        if (slot[j].state >= 0) {
            cls[k] = slot[j].state;
        } else {
            slot[j].state = k;
            slot[j].hash = hash;
        }
    }
compact:; /* (a statement: a declaration may not follow a label before C23) */
    /* the states left, in order: their finals and start first (what can fail), then their arcs written over
     * the product's own, front to back (a state's arcs move down or stay: no second copy of the arcs, which
     * are the call's peak) */
    int32_t count = 0;
    for (int32_t k = 0; k < m; k++) next[k] = cls[k] == k ? count++ : -1;
    for (size_t f = 0; f < finals->length; f++) {
        int32_t k = id[finals->data[f]];
        if (k >= 0 && ints_push(&new_finals, next[cls[k]])) goto done;
    }
    int32_t *identity = malloc((size_t)count * 4 + 4);
    if (!identity) goto done;
    for (int32_t i = 0; i < count; i++) identity[i] = i;
    int32_t new_product_start = next[cls[id[*product_start]]];
    int32_t *write_start = arc_start->data, *write_from = arc_from->data, *write_target = arc_target->data;
    int32_t written = 0, left = 0;
    for (int32_t k = 0; k < m; k++) {
        if (cls[k] != k) continue;
        int32_t s = origin[k], first = at[s], last = at[s + 1]; /* read before write_start[left] (left <= s) */
        height[left] = level[k];
        write_start[left++] = written;
        for (int32_t a = first; a < last; a++) {
            int32_t t = id[target[a]];
            if (t < 0) continue;
            write_from[written] = from[a];
            write_target[written++] = next[cls[t]];
        }
    }
    write_start[left] = written;
    arc_start->length = (size_t)count + 1, arc_from->length = arc_target->length = (size_t)written;
    free(finals->data), free(*new_id);
    *finals = new_finals, *new_id = identity;
    memset(&new_finals, 0, sizeof new_finals);
    *states = count, *kept = count, *product_start = new_product_start;
    status = 0;
done:
    free(size), free(cls), free(next), free(origin), free(order), free(level), free(slot), free(stamp), free(seen);
    free(new_finals.data);
    return status;
}

/* coacc[s] = 1 for the states from which a final state is reached (arcs: arc_start/arc_target, CSR), breadth
 * first over the reversed arcs (counted, then placed).  (Passes over the rows from the last state to the
 * first, marking a state at its first marked target, took more than eight passes over a median JSON Schema's
 * chunked pattern: each goes back one loop of its strings.)  0, or -1 out of memory. */
static int mark_coaccessible(const int32_t *arc_start, const int32_t *arc_target, Py_ssize_t states,
                             const Ints *finals, uint8_t *coacc) {
    size_t arcs = (size_t)arc_start[states];
    int32_t *into = calloc((size_t)states + 2, sizeof(int32_t)), *from = malloc((arcs + 1) * sizeof(int32_t));
    int32_t *queue = malloc(((size_t)states + 1) * sizeof(int32_t));
    if (!into || !from || !queue) {
        free(into), free(from), free(queue);
        return -1;
    }
    for (size_t a = 0; a < arcs; a++) into[arc_target[a] + 2]++; /* reversed arcs, counted then placed */
    for (Py_ssize_t s = 0; s < states; s++) into[s + 2] += into[s + 1];
    for (Py_ssize_t s = 0; s < states; s++)
        for (int32_t a = arc_start[s]; a < arc_start[s + 1]; a++) from[into[arc_target[a] + 1]++] = (int32_t)s;
    size_t queued = 0;
    for (size_t k = 0; k < finals->length; k++)
        if (!coacc[finals->data[k]]) coacc[finals->data[k]] = 1, queue[queued++] = finals->data[k];
    for (size_t k = 0; k < queued; k++)
        for (int32_t a = into[queue[k]]; a < into[queue[k] + 1]; a++)
            if (!coacc[from[a]]) coacc[from[a]] = 1, queue[queued++] = from[a];
    free(into), free(from), free(queue);
    return 0;
}

/* Whether every entry is a chunker state or -1. */
static int chunk_states_or_none(const int32_t *table, Py_ssize_t length, int32_t chunk_states) {
    for (Py_ssize_t k = 0; k < length; k++)
        if (table[k] < -1 || table[k] >= chunk_states) return 0;
    return 1;
}

/* chunk_product(transitions, start, finals, symbol_map, decoder, chunks, inside, atoms, chunk_start, chunk_finals,
 *               boundary, max_states, max_arcs=-1, walker=None, count_above=0.0) -> (rows, start, finals) of the
 * trimmed chunked pattern; rows is None for the empty language; the whole result is None once more than
 * max_states (>= 0) states are numbered, and False when the trimmed pattern has more than max_arcs (>= 0)
 * arcs on symbols (every one of them is an arc of the token lattice: base symbols are tokens), or, given
 * the tokenizer's TrieWalker, when its arcs times count_above pass max_arcs and the lattice itself, counted
 * (product_lattice_over), does; both before any Python row is made.
 *
 *   finals        one byte per pattern state (1: final)
 *   symbol_map    symbol -> its byte (byte-level; decoder holds 256 entries per decoder state) or its atom
 *                 (decoder empty), -1 where the symbol has none
 *   decoder       per decoder state and byte: the next decoder state, -1 - atom where a character ends,
 *                 DECODER_NO_ARC where there is no arc
 *   chunks        per chunker state, atoms + 1 entries (the last: the cut), -1 where there is no arc
 *   inside        per decoder state and chunker state, the chunker state a product state inside a character
 *                 keeps (pretokenized.mid_character_chunks: the first that moves alike on the atoms the
 *                 character can still end in), -1 where the character leads nowhere; empty with no decoder
 *   boundary      the key the BOUNDARY arcs get
 */
static PyObject *chunk_product(PyObject *module, PyObject *args) {
    PyObject *transitions, *boundary;
    Py_ssize_t start;
    int atoms, chunk_start;
    long long max_states, max_arcs = -1;
    PyObject *walker = Py_None;
    double count_above = 0.0;
    Py_buffer v_finals = {0}, v_map = {0}, v_decoder = {0}, v_chunks = {0}, v_inside = {0}, v_chunk_finals = {0};
    if (!PyArg_ParseTuple(args, "Ony*y*y*y*y*iiy*OL|LOd:chunk_product", &transitions, &start, &v_finals, &v_map,
                          &v_decoder, &v_chunks, &v_inside, &atoms, &chunk_start, &v_chunk_finals, &boundary, &max_states,
                          &max_arcs, &walker, &count_above))
        return NULL;
    PyObject *result = NULL;
    Rows rows = {0};
    Product x = {0};
    Ints arc_start = {0}, arc_from = {0}, arc_target = {0}, finals = {0};
    uint8_t *acc = NULL, *coacc = NULL, *height = NULL, *decoder_height = NULL;
    int32_t *new_id = NULL;
    int32_t *own_decoder = NULL, *own_chunks = NULL, *own_inside = NULL;
    uint8_t *own_finals = NULL, *own_chunk_finals = NULL;
    int32_t kept = 0;
    int mid_distinct = 0; /* chunk_merge_mid's: the mid-character states' rows differ */
    Py_ssize_t map_length, decoder_length, chunk_length, inside_length;
    if (walker != Py_None && (!PyObject_TypeCheck(walker, &TrieWalkerType) || !((TrieWalker *)walker)->node_start)) {
        PyErr_SetString(PyExc_TypeError, "chunk_product: walker must be an initialised TrieWalker or None");
        goto done;
    }
    const int32_t *map = int32_table(&v_map, -1, "symbol_map", &map_length);
    const int32_t *decoder = map ? int32_table(&v_decoder, -1, "decoder", &decoder_length) : NULL;
    const int32_t *chunks = decoder ? int32_table(&v_chunks, -1, "chunks", &chunk_length) : NULL;
    const int32_t *inside = chunks ? int32_table(&v_inside, -1, "inside", &inside_length) : NULL;
    if (!inside) goto done;
    /* the tables read without the GIL are bytes (which cannot change) or copies: another thread cannot change
     * them under the loop */
    int immutable = tables_immutable(&v_decoder, &v_chunks, &v_inside);
    int checked = immutable && tables_checked(&v_decoder, &v_chunks, &v_inside, atoms);
    if (!immutable) {
        own_decoder = copy_ints(decoder, (size_t)decoder_length);
        own_chunks = copy_ints(chunks, (size_t)chunk_length);
        own_inside = copy_ints(inside, (size_t)inside_length);
        decoder = own_decoder;
        chunks = own_chunks;
        inside = own_inside;
    }
    own_finals = malloc((size_t)v_finals.len + 1);
    own_chunk_finals = malloc((size_t)v_chunk_finals.len + 1);
    if (!decoder || !chunks || !inside || !own_finals || !own_chunk_finals) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(own_finals, v_finals.buf, (size_t)v_finals.len);
    memcpy(own_chunk_finals, v_chunk_finals.buf, (size_t)v_chunk_finals.len);
    int byte_level = decoder_length > 0;
    if (atoms < 1 || atoms > 1 << 20 || decoder_length % 256 || chunk_length % (atoms + 1) ||
        chunk_length / (atoms + 1) < 1 || chunk_length / (atoms + 1) > INT32_MAX / 4) {
        PyErr_SetString(PyExc_ValueError, "chunk_product: the decoder or chunker table has the wrong size");
        goto done;
    }
    int32_t chunk_states = (int32_t)(chunk_length / (atoms + 1));
    int32_t decoder_states = byte_level ? (int32_t)(decoder_length / 256) : 1;
    if (chunk_start < 0 || chunk_start >= chunk_states || v_chunk_finals.len != chunk_states) {
        PyErr_SetString(PyExc_ValueError, "chunk_product: the chunker's start or finals do not fit its table");
        goto done;
    }
    for (Py_ssize_t k = 0; k < map_length; k++)
        if (map[k] < -1 || map[k] >= (byte_level ? 256 : atoms)) {
            PyErr_SetString(PyExc_ValueError, "chunk_product: symbol_map holds a byte or atom out of range");
            goto done;
        }
    for (Py_ssize_t k = 0; !checked && k < decoder_length; k++) {
        int32_t v = decoder[k];
        if (v != DECODER_NO_ARC && (v >= decoder_states || (v < 0 && -1 - (int64_t)v >= atoms))) {
            PyErr_SetString(PyExc_ValueError, "chunk_product: the decoder holds a state or atom out of range");
            goto done;
        }
    }
    if (!checked && !chunk_states_or_none(chunks, chunk_length, chunk_states)) {
        PyErr_SetString(PyExc_ValueError, "chunk_product: the chunker table holds a state out of range");
        goto done;
    }
    if (inside_length != (byte_level ? (Py_ssize_t)decoder_states * chunk_states : 0) ||
        (!checked && !chunk_states_or_none(inside, inside_length, chunk_states))) {
        PyErr_SetString(PyExc_ValueError, "chunk_product: the inside table is not a chunker state (or -1) per decoder "
                                          "and chunker state");
        goto done;
    }
    if (rows_pack(transitions, map, map_length, &rows, 1)) goto done;
    Py_ssize_t n = rows.states;
    if (start < 0 || start >= n || v_finals.len != n || n > INT32_MAX / 4) {
        PyErr_SetString(PyExc_ValueError, "chunk_product: the start or finals do not fit the transitions");
        goto done;
    }
    const uint8_t *pattern_final = own_finals, *chunk_final = own_chunk_finals;
    x.limit = max_states;
    x.chunk_states = chunk_states;
    x.decoder_states = decoder_states;
    size_t keys; /* (every key is below n x chunk_states x decoder_states: the tables were checked above) */
    if (!__builtin_mul_overflow((size_t)n, (size_t)chunk_states, &keys) &&
        !__builtin_mul_overflow(keys, (size_t)decoder_states, &keys) && keys <= DIRECT_PRODUCT_BYTES / sizeof(int32_t))
        x.pair_block = calloc((size_t)n * (size_t)chunk_states + 1, sizeof(int32_t)); /* (else hashed) */
    int status = 0; /* 0, or NUMBER_LIMIT / NUMBER_NO_MEMORY */
    int32_t product_start = 0;
    int into_first = 0; /* whether an arc leads back to state 0 */
    Py_ssize_t states = 0;
    Py_BEGIN_ALLOW_THREADS
    int32_t first = product_number(&x, (int32_t)start, chunk_start, 0);
    if (first < 0) status = first;
    /* arcs: arc_from is the pattern arc index, or -1 for BOUNDARY */
    for (size_t s = 0; !status && s < x.p.length; s++) { /* grows while we iterate */
        int32_t p = x.p.data[s], c = x.c.data[s], d = x.d.data[s];
        if (ints_push(&arc_start, (int32_t)arc_from.length)) {
            status = NUMBER_NO_MEMORY;
            break;
        }
        for (size_t e = rows.start[rows.row_of[p]]; e < rows.start[rows.row_of[p] + 1]; e++) {
            int32_t nc = c, nd;
            int32_t symbol = rows.symbol[e];
            if (byte_level) {
                int32_t v = decoder[(size_t)d * 256 + (size_t)symbol];
                if (v == DECODER_NO_ARC) continue;
                if (v >= 0) {
                    nc = inside[(size_t)v * (size_t)chunk_states + (size_t)c];
                    nd = v;
                } else {
                    nc = chunks[(size_t)c * (size_t)(atoms + 1) + (size_t)(-1 - v)];
                    nd = 0;
                }
            } else {
                nc = chunks[(size_t)c * (size_t)(atoms + 1) + (size_t)symbol];
                nd = 0;
            }
            if (nc < 0) continue;
            if ((status = product_arc(&x, rows.target[e], nc, nd, (int32_t)e, &arc_from, &arc_target, &into_first)))
                break;
        }
        if (status) break;
        int32_t after_cut = chunks[(size_t)c * (size_t)(atoms + 1) + (size_t)atoms];
        if (d == 0 && after_cut >= 0 && (status = product_arc(&x, p, after_cut, 0, -1, &arc_from, &arc_target, &into_first)))
            break;
        if (d == 0 && pattern_final[p] && chunk_final[c] && ints_push(&finals, (int32_t)s)) status = NUMBER_NO_MEMORY;
    }
    states = (Py_ssize_t)arc_start.length;
    if (!status && pattern_final[start] && !(finals.length && finals.data[0] == 0)) {
        /* the empty text is zero chunks: a fresh start, a copy of state 0's row, accepts it */
        product_start = (int32_t)states;
        int32_t from = arc_start.data[0], to = states > 1 ? arc_start.data[1] : (int32_t)arc_from.length;
        if (ints_push(&arc_start, (int32_t)arc_from.length) || ints_push(&finals, product_start)) status = NUMBER_NO_MEMORY;
        for (int32_t a = from; !status && a < to; a++)
            if (ints_push(&arc_from, arc_from.data[a]) || ints_push(&arc_target, arc_target.data[a])) status = NUMBER_NO_MEMORY;
        states++;
    }
    if (!status && ints_push(&arc_start, (int32_t)arc_from.length)) status = NUMBER_NO_MEMORY;
    if (!status && arc_from.length > (size_t)INT32_MAX) status = NUMBER_NO_MEMORY;
    /* trim: accessible from the start, co-accessible to a final state (automata/trimming.py) */
    if (!status) {
        acc = calloc((size_t)states + 1, 1);
        coacc = calloc((size_t)states + 1, 1);
        new_id = malloc(((size_t)states + 1) * sizeof(int32_t));
        if (!acc || !coacc || !new_id) status = NUMBER_NO_MEMORY;
    }
    if (!status) {
        /* accessible: every state was numbered from state 0, breadth first, and the fresh start reads state
         * 0's row, so all are, but state 0 itself when the fresh start stands for it and no arc comes back */
        memset(acc, 1, (size_t)states);
        if (product_start != 0 && !into_first) acc[0] = 0;
        if (mark_coaccessible(arc_start.data, arc_target.data, states, &finals, coacc)) status = NUMBER_NO_MEMORY;
        for (Py_ssize_t s = 0; !status && s < states; s++) new_id[s] = acc[s] && coacc[s] ? kept++ : -1;
    }
    Py_END_ALLOW_THREADS
    /* what only the numbering and the trim read goes before the rows are made */
    free(acc);
    /* each state's height: the bytes left in its character (the fresh start, past x's states, is between
     * characters); with no height (a decoder with a cycle, which UTF-8's has not) nothing is merged */
    if (!status && (height = calloc((size_t)states + 1, 1)) && (decoder_height = malloc((size_t)decoder_states + 1))) {
        if (checked_decoder_heights(&v_decoder, &v_chunks, &v_inside, atoms, immutable, checked, decoder, decoder_states,
                                    decoder_height) == 0)
            for (Py_ssize_t k = 0; k < states; k++) height[k] = (size_t)k < x.d.length ? decoder_height[x.d.data[k]] : 0;
    } else if (!status) {
        status = NUMBER_NO_MEMORY;
    }
    free(x.table.keys), free(x.table.values), free(x.p.data), free(x.c.data), free(x.d.data);
    free(x.pair_block), free(x.slots);
    memset(&x, 0, sizeof x);
    acc = NULL;
    if (status == NUMBER_LIMIT) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    if (status) {
        PyErr_NoMemory();
        goto done;
    }
    if (!coacc[product_start]) {
        result = Py_BuildValue("(Oii)", Py_None, 0, 0);
        goto done;
    }
    {
        long long *value = malloc((rows.arcs + 1) * sizeof(long long));
        int merged = value ? 0 : -1;
        for (size_t e = 0; !merged && e < rows.arcs; e++)
            if (!as_small_int(rows.key[e], &value[e])) value[e] = 1LL << 40; /* (never: rows_pack kept ints) */
        if (!merged) {
            Py_BEGIN_ALLOW_THREADS /* the merge and the rows' grouping below read and write C memory only */
            merged = chunk_merge_mid(&arc_start, &arc_from, &arc_target, &finals, &new_id, &states, &kept,
                                     &product_start, height, value, rows.arcs, &mid_distinct);
            Py_END_ALLOW_THREADS
        }
        free(value);
        if (merged) {
            PyErr_NoMemory();
            goto done;
        }
    }
    if (max_arcs >= 0) {
        long long arcs = 0;
        for (Py_ssize_t s = 0; s < states; s++)
            if (new_id[s] >= 0)
                for (int32_t a = arc_start.data[s]; a < arc_start.data[s + 1]; a++)
                    arcs += arc_from.data[a] >= 0 && new_id[arc_target.data[a]] >= 0;
        if (arcs > max_arcs) {
            result = Py_False;
            Py_INCREF(result);
            goto done;
        }
        if (walker != Py_None && (double)arcs * count_above > (double)max_arcs) {
            /* its lattice is likely past max_arcs (count_above: the fewest lattice arcs per arc seen): counted
             * exactly here, before the rows are made, so that a refusal costs no rows */
            ProductRows product = {.arc_start = arc_start.data, .arc_from = arc_from.data, .arc_target = arc_target.data,
                                   .new_id = new_id};
            int over = product_lattice_over((TrieWalker *)walker, &rows, &product, &arc_from, &arc_target, states,
                                            max_arcs);
            if (over < 0) {
                PyErr_NoMemory();
                goto done;
            }
            if (over) {
                result = Py_False;
                Py_INCREF(result);
                goto done;
            }
        }
    }
    PyObject *out_finals = NULL;
    PackedRows *out_rows = NULL;
    {
        ProductRows shared = {.arc_start = arc_start.data, .arc_from = arc_from.data, .arc_target = arc_target.data,
                              .new_id = new_id};
        int32_t *row_of_kept = NULL;
        Py_ssize_t distinct = 0;
        size_t arcs = 0;
        if (product_rows_init(&shared, &rows, kept)) { /* (reads the symbols' int objects: under the GIL) */
            PyErr_NoMemory();
            goto done;
        }
        Py_BEGIN_ALLOW_THREADS
        /* States with equal rows share one row: counted first, then written.  Merged mid-character states
         * have rows of their own (and read continuation bytes only, which no state between characters
         * reads): only the others are looked up, 4 % of a JSON Schema's states over cl100k */
        row_of_kept = malloc(((size_t)kept + 1) * sizeof(int32_t));
        for (Py_ssize_t s = 0; row_of_kept && s < states; s++) {
            if (new_id[s] < 0) continue;
            int32_t same = mid_distinct && height[s] ? -1 : product_rows_find(&shared, (int32_t)s);
            if (same >= 0) {
                row_of_kept[new_id[s]] = row_of_kept[new_id[same]];
                continue;
            }
            row_of_kept[new_id[s]] = (int32_t)distinct++;
            for (int32_t a = arc_start.data[s]; a < arc_start.data[s + 1]; a++) arcs += new_id[arc_target.data[a]] >= 0;
        }
        Py_END_ALLOW_THREADS
        out_rows = row_of_kept ? packed_rows_new(kept, distinct, arcs, boundary) : NULL;
        if (!out_rows) {
            if (!row_of_kept) PyErr_NoMemory();
            free(row_of_kept);
            product_rows_free(&shared);
            goto done;
        }
        Py_BEGIN_ALLOW_THREADS /* (out_rows is this call's own until it returns) */
        memcpy(out_rows->row_of, row_of_kept, (size_t)kept * sizeof(int32_t));
        free(row_of_kept);
        size_t e = 0;
        Py_ssize_t next = 0;
        for (Py_ssize_t s = 0; s < states; s++) {
            if (new_id[s] < 0 || out_rows->row_of[new_id[s]] != next) continue; /* a row written already */
            out_rows->start[next++] = e;
            for (int32_t a = arc_start.data[s]; a < arc_start.data[s + 1]; a++) {
                int32_t t = new_id[arc_target.data[a]];
                if (t < 0) continue;
                out_rows->key[e] = arc_from.data[a] < 0 ? PACKED_BOUNDARY : shared.value[arc_from.data[a]];
                out_rows->target[e++] = t;
            }
        }
        out_rows->start[distinct] = e;
        product_rows_free(&shared);
        Py_END_ALLOW_THREADS
    }
    out_finals = PyList_New(0);
    if (!out_finals) goto fail;
    for (size_t k = 0; k < finals.length; k++) {
        int32_t t = new_id[finals.data[k]];
        if (t < 0) continue;
        PyObject *final = PyLong_FromLong(t);
        int failed = !final || PyList_Append(out_finals, final);
        Py_XDECREF(final);
        if (failed) goto fail;
    }
    result = Py_BuildValue("(NiN)", (PyObject *)out_rows, new_id[product_start], out_finals);
    goto done;
fail:
    Py_XDECREF((PyObject *)out_rows);
    Py_XDECREF(out_finals);
done:
    free(own_decoder);
    free(own_chunks);
    free(own_inside);
    free(own_finals);
    free(own_chunk_finals);
    free(acc);
    free(coacc), free(height), free(decoder_height);
    free(new_id);
    free(x.pair_block), free(x.slots);
    free(x.table.keys);
    free(x.table.values);
    free(x.p.data);
    free(x.c.data);
    free(x.d.data);
    size_t arc_capacity_bytes = (arc_from.capacity + arc_target.capacity) * sizeof(int32_t);
    free(arc_start.data);
    free(arc_from.data);
    free(arc_target.data);
    free(finals.data);
    rows_free(&rows);
    give_back(arc_capacity_bytes);
    PyBuffer_Release(&v_finals);
    PyBuffer_Release(&v_map);
    PyBuffer_Release(&v_decoder);
    PyBuffer_Release(&v_chunks);
    PyBuffer_Release(&v_inside);
    PyBuffer_Release(&v_chunk_finals);
    return result;
}

#endif
