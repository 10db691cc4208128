/* NFA -> minimal DFA: the compiled twin of minimize(determinize(nfa)) in bpefst/automata (determinization.py,
 * minimization.py), which explain the algorithms; the regex compiler calls it (bpefst/regex/compiler.py).
 *
 * Three steps over flat arrays:
 *   - the subset construction (Rabin & Scott 1959): each DFA state is an epsilon-closed set of NFA states,
 *     kept sorted in one pool and found again by hash, numbered breadth-first with symbols ascending (an NFA
 *     that is already deterministic, as the JSON Schema translation's tables are, is numbered so directly);
 *   - trimming: states from which no final state is reached go, with the arcs into them;
 *   - Hopcroft's refinement and the quotient numbered canonically (refine.h), so the result is equal, as a
 *     value, to what the pure functions give: the minimal DFA of a language is unique up to numbering, and
 *     the numbering is fixed.
 *
 * An optional table maps each NFA symbol to its final id (-1: no arc), what ByteAlphabet.finish does after
 * minimization; relabelling first and minimizing after gives the same automaton.
 */
#ifndef BPEFST_MINIMAL_DFA_H
#define BPEFST_MINIMAL_DFA_H

#include "refine.h" /* (and Ints, ints_push: promote.h, included before this file) */

typedef struct {
    /* the NFA, flat */
    int32_t n, *arc_start, *arc_symbol, *arc_target, *eps_start, *eps_target;
    uint8_t *is_final;
    /* the subsets: their members in one pool, found by hash */
    Ints pool, subset_start; /* subset k: pool[subset_start[k] .. subset_start[k + 1] - 1] */
    int32_t *table;
    size_t table_size;
    /* the DFA's arcs as found: per state, ascending symbols */
    Ints dfa_start, dfa_symbol, dfa_target;
    /* scratch */
    int32_t *seen, generation;
    Ints closure, stack;
    uint64_t *moves;
    size_t moves_capacity;
} Subsets;

static void subsets_free(Subsets *s) {
    free(s->arc_start), free(s->arc_symbol), free(s->arc_target), free(s->eps_start), free(s->eps_target);
    free(s->is_final), free(s->pool.data), free(s->subset_start.data), free(s->table);
    free(s->dfa_start.data), free(s->dfa_symbol.data), free(s->dfa_target.data);
    free(s->seen), free(s->closure.data), free(s->stack.data), free(s->moves);
}

static int nfa_int(PyObject *item, long limit, int32_t *out, const char *what) {
    long value = PyLong_Check(item) ? PyLong_AsLong(item) : -1;
    if (value == -1 && PyErr_Occurred()) return -1;
    if (!PyLong_Check(item) || value < 0 || value >= limit) {
        PyErr_Format(PyExc_ValueError, "minimal_dfa: %s must be an int in 0 .. %ld", what, limit - 1);
        return -1;
    }
    *out = (int32_t)value;
    return 0;
}

/* The arcs of one row: a list of (symbol, target) tuples, or a DFA's dict symbol -> target (read as it is, so
 * that a written-out token automaton is not copied into tuples first: 64 bytes an arc), or a copy of another
 * automaton's row, a tuple (dict symbol -> its target there, list: the copy's state for each of those targets),
 * read through the list (so the JSON Schema translation's copied states need not be written out first). */
static int nfa_row_ok(PyObject *row) {
    return PyList_Check(row) || PyDict_Check(row) ||
           (PyTuple_Check(row) && PyTuple_GET_SIZE(row) == 2 && PyDict_Check(PyTuple_GET_ITEM(row, 0)) &&
            PyList_Check(PyTuple_GET_ITEM(row, 1)));
}

static Py_ssize_t nfa_row_size(PyObject *row) {
    if (PyTuple_Check(row)) return PyDict_GET_SIZE(PyTuple_GET_ITEM(row, 0));
    return PyDict_Check(row) ? PyDict_GET_SIZE(row) : PyList_GET_SIZE(row);
}

/* Read arcs [[(symbol, target), ...] or {symbol: target}, ...] (symbols relabelled by `map`, dropped where it
 * says -1) and eps [[target, ...], ...] into CSR arrays. */
static int nfa_read(Subsets *s, PyObject *arcs, PyObject *eps, const int32_t *map, Py_ssize_t map_length) {
    Py_ssize_t n = PyList_GET_SIZE(arcs);
    size_t arc_count = 0, eps_count = 0;
    for (Py_ssize_t q = 0; q < n; q++) {
        PyObject *row = PyList_GET_ITEM(arcs, q), *eps_row = PyList_GET_ITEM(eps, q);
        if (!nfa_row_ok(row) || !PyList_Check(eps_row)) {
            PyErr_SetString(PyExc_TypeError,
                            "minimal_dfa: the NFA's rows must be lists (of arcs: dicts too, or (dict, list) copies)");
            return -1;
        }
        arc_count += (size_t)nfa_row_size(row), eps_count += (size_t)PyList_GET_SIZE(eps_row);
    }
    if (arc_count >= INT32_MAX || eps_count >= INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "minimal_dfa: too many arcs");
        return -1;
    }
    s->n = (int32_t)n;
    s->arc_start = malloc(((size_t)n + 1) * 4), s->eps_start = malloc(((size_t)n + 1) * 4);
    s->arc_symbol = malloc(arc_count * 4 + 4), s->arc_target = malloc(arc_count * 4 + 4);
    s->eps_target = malloc(eps_count * 4 + 4), s->is_final = calloc((size_t)n + 1, 1);
    s->seen = calloc((size_t)n + 1, 4);
    if (!s->arc_start || !s->eps_start || !s->arc_symbol || !s->arc_target || !s->eps_target || !s->is_final || !s->seen) {
        PyErr_NoMemory();
        return -1;
    }
    int32_t a = 0, e = 0;
    for (Py_ssize_t q = 0; q < n; q++) {
        PyObject *row = PyList_GET_ITEM(arcs, q), *eps_row = PyList_GET_ITEM(eps, q);
        s->arc_start[q] = a, s->eps_start[q] = e;
        if (!nfa_row_ok(row) || !PyList_Check(eps_row) ||
            (size_t)a + (size_t)nfa_row_size(row) > arc_count || (size_t)e + (size_t)PyList_GET_SIZE(eps_row) > eps_count) {
            PyErr_SetString(PyExc_RuntimeError, "minimal_dfa: the NFA changed while read");
            return -1;
        }
        Py_ssize_t position = 0, size = nfa_row_size(row);
        PyObject *copy_of = NULL, *ids = NULL;
        if (PyTuple_Check(row)) copy_of = PyTuple_GET_ITEM(row, 0), ids = PyTuple_GET_ITEM(row, 1);
        for (Py_ssize_t i = 0; i < size; i++) {
            PyObject *key, *value;
            int32_t symbol, target;
            if (copy_of) {
                int32_t there;
                if (!PyDict_Next(copy_of, &position, &key, &value)) {
                    PyErr_SetString(PyExc_RuntimeError, "minimal_dfa: the NFA changed while read");
                    return -1;
                }
                if (nfa_int(value, (long)PyList_GET_SIZE(ids), &there, "a copied row's target")) return -1;
                value = PyList_GET_ITEM(ids, there);
            } else if (PyDict_Check(row)) {
                if (!PyDict_Next(row, &position, &key, &value)) {
                    PyErr_SetString(PyExc_RuntimeError, "minimal_dfa: the NFA changed while read");
                    return -1;
                }
            } else {
                PyObject *arc = PyList_GET_ITEM(row, i);
                if (!PyTuple_Check(arc) || PyTuple_GET_SIZE(arc) != 2) {
                    PyErr_SetString(PyExc_TypeError, "minimal_dfa: an arc must be a (symbol, target) tuple");
                    return -1;
                }
                key = PyTuple_GET_ITEM(arc, 0), value = PyTuple_GET_ITEM(arc, 1);
            }
            if (nfa_int(key, INT32_MAX, &symbol, "a symbol") || nfa_int(value, (long)n, &target, "a target")) return -1;
            if (map) {
                if (symbol >= map_length || map[symbol] < 0) continue;
                symbol = map[symbol];
            }
            s->arc_symbol[a] = symbol, s->arc_target[a++] = target;
        }
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(eps_row); i++)
            if (nfa_int(PyList_GET_ITEM(eps_row, i), (long)n, &s->eps_target[e++], "an epsilon target")) return -1;
    }
    s->arc_start[n] = a, s->eps_start[n] = e;
    return 0;
}

static uint64_t subset_hash(const int32_t *members, size_t count) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ count;
    for (size_t i = 0; i < count; i++) h = (h ^ (uint32_t)members[i]) * 0x100000001B3ull;
    return h ^ h >> 29;
}

static int by_int32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static int by_uint64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* s->closure := the epsilon closure of the states in s->closure, sorted. */
static int close_subset(Subsets *s) {
    if (++s->generation == INT32_MAX) { /* (stamps wrap: clear them) */
        memset(s->seen, 0, ((size_t)s->n + 1) * 4);
        s->generation = 1;
    }
    s->stack.length = 0;
    for (size_t i = 0; i < s->closure.length; i++) {
        s->seen[s->closure.data[i]] = s->generation;
        if (ints_push(&s->stack, s->closure.data[i])) return -1;
    }
    while (s->stack.length) {
        int32_t q = s->stack.data[--s->stack.length];
        for (int32_t k = s->eps_start[q]; k < s->eps_start[q + 1]; k++) {
            int32_t r = s->eps_target[k];
            if (s->seen[r] == s->generation) continue;
            s->seen[r] = s->generation;
            if (ints_push(&s->closure, r) || ints_push(&s->stack, r)) return -1;
        }
    }
    if (s->closure.length > 1) qsort(s->closure.data, s->closure.length, 4, by_int32);
    return 0;
}

/* Sort the moves by symbol, then target; a DFA's row is often ascending already (rows the core wrote). */
static void moves_sort(uint64_t *moves, size_t count) {
    for (size_t i = 1; i < count; i++)
        if (moves[i - 1] > moves[i]) {
            qsort(moves, count, 8, by_uint64);
            return;
        }
}

/* Room for `count` moves in s->moves (grown by doubling). 0, or -1 out of memory. */
static int moves_reserve(Subsets *s, size_t count) {
    if (count <= s->moves_capacity) return 0;
    size_t capacity = s->moves_capacity ? s->moves_capacity : 64;
    while (capacity < count) capacity *= 2;
    uint64_t *grown = realloc(s->moves, capacity * 8);
    if (!grown) return -1;
    s->moves = grown, s->moves_capacity = capacity;
    return 0;
}

static int table_rehash(Subsets *s) {
    size_t size = s->table_size ? 2 * s->table_size : 256;
    int32_t *table = malloc(size * 4);
    if (!table) return -1;
    for (size_t k = 0; k < size; k++) table[k] = -1;
    int32_t count = (int32_t)s->subset_start.length - 1;
    for (int32_t id = 0; id < count; id++) {
        const int32_t *members = s->pool.data + s->subset_start.data[id];
        size_t k = subset_hash(members, (size_t)(s->subset_start.data[id + 1] - s->subset_start.data[id])) & (size - 1);
        while (table[k] >= 0) k = (k + 1) & (size - 1);
        table[k] = id;
    }
    free(s->table);
    s->table = table, s->table_size = size;
    return 0;
}

/* The number of the subset in s->closure (numbered next when new), -1 out of memory, -2 past max_states. */
static int32_t subset_intern(Subsets *s, long long max_states) {
    const int32_t *members = s->closure.data;
    size_t count = s->closure.length;
    uint64_t hash = subset_hash(members, count);
    size_t k = hash & (s->table_size - 1);
    for (; s->table[k] >= 0; k = (k + 1) & (s->table_size - 1)) {
        int32_t id = s->table[k], at = s->subset_start.data[id];
        if ((size_t)(s->subset_start.data[id + 1] - at) == count && !memcmp(s->pool.data + at, members, count * 4))
            return id;
    }
    int32_t id = (int32_t)s->subset_start.length - 1;
    if (max_states >= 0 && (long long)id + 1 > max_states) return -2;
    if (s->pool.length + count >= INT32_MAX) return -1;
    for (size_t i = 0; i < count; i++)
        if (ints_push(&s->pool, members[i])) return -1;
    if (ints_push(&s->subset_start, (int32_t)s->pool.length)) return -1;
    s->table[k] = id;
    if (2 * (size_t)(id + 1) > s->table_size && table_rehash(s)) return -1;
    return id;
}

/* Whether the NFA is deterministic: no epsilon arc, no symbol twice in a state's arcs. 1: yes, 0: no, -1: out of
 * memory.  A stamp per symbol (the last state that read it) finds a repeated symbol in one pass over the arcs;
 * symbols past DETERMINISM_STAMPS (no alphabet here has them) sort each row instead. */
#define DETERMINISM_STAMPS (1 << 20) /* at most 4 MB of stamps; vocabularies of up to a million ids */

static int nfa_is_deterministic(Subsets *s) {
    if (s->eps_start[s->n]) return 0;
    int32_t arcs = s->arc_start[s->n], largest = -1;
    for (int32_t a = 0; a < arcs; a++)
        if (s->arc_symbol[a] > largest) largest = s->arc_symbol[a];
    if (largest < DETERMINISM_STAMPS) {
        int32_t *stamp = malloc(((size_t)largest + 1) * 4 + 4);
        if (!stamp) return -1;
        memset(stamp, 0xff, ((size_t)largest + 1) * 4); /* -1: no state yet */
        for (int32_t q = 0; q < s->n; q++)
            for (int32_t a = s->arc_start[q]; a < s->arc_start[q + 1]; a++) {
                if (stamp[s->arc_symbol[a]] == q) {
                    free(stamp);
                    return 0;
                }
                stamp[s->arc_symbol[a]] = q;
            }
        free(stamp);
        return 1;
    }
    for (int32_t q = 0; q < s->n; q++) {
        int32_t begin = s->arc_start[q], end = s->arc_start[q + 1];
        size_t count = (size_t)(end - begin);
        if (moves_reserve(s, count)) return -1;
        for (int32_t k = begin; k < end; k++) s->moves[k - begin] = (uint64_t)(uint32_t)s->arc_symbol[k] << 32;
        moves_sort(s->moves, count);
        for (size_t i = 1; i < count; i++)
            if (s->moves[i] == s->moves[i - 1]) return 0;
    }
    return 1;
}

/* The subset construction of a deterministic NFA: its subsets are the single states reached from the start,
 * numbered breadth first with each state's arcs in the order read, without closures or hashing (subsets_build
 * takes symbols ascending; the quotient's canonical numbering does not depend on this one).  The limit counts
 * the same states.  Same returns. */
static int subsets_of_a_dfa(Subsets *s, int32_t start, long long max_states) {
    int32_t *number = s->seen; /* (the state's number + 1; 0: not reached yet) */
    if (max_states == 0) return -2;
    if (ints_push(&s->subset_start, 0) || ints_push(&s->pool, start) || ints_push(&s->subset_start, 1)) return -1;
    number[start] = 1;
    for (size_t k = 0; k < s->pool.length; k++) { /* grows while read: breadth first */
        int32_t q = s->pool.data[k];
        if (ints_push(&s->dfa_start, (int32_t)s->dfa_symbol.length)) return -1;
        for (int32_t a = s->arc_start[q]; a < s->arc_start[q + 1]; a++) {
            int32_t r = s->arc_target[a];
            if (!number[r]) {
                if (max_states >= 0 && (long long)s->pool.length + 1 > max_states) return -2;
                if (ints_push(&s->pool, r) || ints_push(&s->subset_start, (int32_t)s->pool.length)) return -1;
                number[r] = (int32_t)s->pool.length;
            }
            if (ints_push(&s->dfa_symbol, s->arc_symbol[a]) || ints_push(&s->dfa_target, number[r] - 1)) return -1;
        }
    }
    return ints_push(&s->dfa_start, (int32_t)s->dfa_symbol.length);
}

/* The subset construction: s->dfa_* hold the DFA's arcs, breadth-first numbering. 0, -1 (memory), -2 (limit). */
static int subsets_build(Subsets *s, int32_t start, long long max_states) {
    if (ints_push(&s->subset_start, 0) || table_rehash(s)) return -1;
    s->closure.length = 0;
    if (ints_push(&s->closure, start) || close_subset(s)) return -1;
    int32_t found = subset_intern(s, max_states);
    if (found < 0) return found;
    for (int32_t k = 0; k < (int32_t)s->subset_start.length - 1; k++) { /* grows while read: breadth first */
        if (ints_push(&s->dfa_start, (int32_t)s->dfa_symbol.length)) return -1;
        size_t moves = 0;
        for (int32_t i = s->subset_start.data[k]; i < s->subset_start.data[k + 1]; i++) {
            int32_t q = s->pool.data[i];
            if (moves_reserve(s, moves + (size_t)(s->arc_start[q + 1] - s->arc_start[q]))) return -1;
            for (int32_t a = s->arc_start[q]; a < s->arc_start[q + 1]; a++)
                s->moves[moves++] = (uint64_t)(uint32_t)s->arc_symbol[a] << 32 | (uint32_t)s->arc_target[a];
        }
        moves_sort(s->moves, moves);
        for (size_t i = 0; i < moves;) {
            uint32_t symbol = (uint32_t)(s->moves[i] >> 32);
            s->closure.length = 0;
            for (; i < moves && (uint32_t)(s->moves[i] >> 32) == symbol; i++) {
                int32_t r = (int32_t)(uint32_t)s->moves[i];
                if ((!s->closure.length || s->closure.data[s->closure.length - 1] != r) && ints_push(&s->closure, r))
                    return -1;
            }
            if (close_subset(s)) return -1;
            int32_t target = subset_intern(s, max_states);
            if (target < 0) return target;
            if (ints_push(&s->dfa_symbol, (int32_t)symbol) || ints_push(&s->dfa_target, target)) return -1;
        }
    }
    return ints_push(&s->dfa_start, (int32_t)s->dfa_symbol.length);
}

/* An empty dict with room for `size` items (CPython's _PyDict_NewPresized, in every version this builds for). */
static PyObject *dict_for(Py_ssize_t size) {
#if PY_VERSION_HEX < 0x030D0000
    return size > 5 ? _PyDict_NewPresized(size) : PyDict_New();
#else
    (void)size;
    return PyDict_New();
#endif
}

/* The minimal DFA of the subsets' DFA as Python values: (rows, finals), start 0; NULL with an exception set. */
static PyObject *minimal_quotient(Subsets *s) {
    int32_t states = (int32_t)s->subset_start.length - 1, arcs = (int32_t)s->dfa_symbol.length;
    const int32_t *start_of = s->dfa_start.data, *symbol = s->dfa_symbol.data, *target = s->dfa_target.data;
    int32_t *keep = NULL, *kept_id = NULL, *in_start = NULL, *in_arc = NULL, *tail = NULL, *head = NULL;
    int64_t *label = NULL;
    uint8_t *final = NULL, *final_kept = NULL, *final_block = NULL;
    Quotient quotient = {0};
    Ints queue = {0};
    PyObject *rows = NULL, *finals = NULL, *result = NULL, **state_object = NULL;
    /* trimming: the states a final state is reached from, by the reversed arcs */
    keep = calloc((size_t)states + 1, 4), in_start = calloc((size_t)states + 2, 4), in_arc = malloc((size_t)arcs * 4 + 4);
    final = calloc((size_t)states + 1, 1);
    if (!keep || !in_start || !in_arc || !final) goto nomemory;
    for (int32_t k = 0; k < states; k++)
        for (int32_t i = s->subset_start.data[k]; i < s->subset_start.data[k + 1]; i++)
            if (s->is_final[s->pool.data[i]]) {
                final[k] = 1;
                break;
            }
    for (int32_t a = 0; a < arcs; a++) in_start[target[a] + 2]++;
    for (int32_t k = 0; k < states; k++) in_start[k + 2] += in_start[k + 1];
    for (int32_t k = 0; k < states; k++)
        for (int32_t a = start_of[k]; a < start_of[k + 1]; a++) in_arc[in_start[target[a] + 1]++] = k; /* sources */
    for (int32_t k = 0; k < states; k++)
        if (final[k]) {
            keep[k] = 1;
            if (ints_push(&queue, k)) goto nomemory;
        }
    for (size_t h = 0; h < queue.length; h++) {
        int32_t r = queue.data[h];
        for (int32_t i = in_start[r]; i < in_start[r + 1]; i++)
            if (!keep[in_arc[i]]) {
                keep[in_arc[i]] = 1;
                if (ints_push(&queue, in_arc[i])) goto nomemory;
            }
    }
    if (!keep[0]) { /* the empty language: one state, no arc, not final */
        result = Py_BuildValue("([{}][])");
        goto done;
    }
    /* the kept states renumbered 0 .. m-1, their arcs between kept states */
    kept_id = malloc((size_t)states * 4 + 4);
    tail = malloc((size_t)arcs * 4 + 4), head = malloc((size_t)arcs * 4 + 4), label = malloc((size_t)arcs * 8 + 8);
    if (!kept_id || !tail || !head || !label) goto nomemory;
    int32_t m = 0, kept_arcs = 0;
    for (int32_t k = 0; k < states; k++) kept_id[k] = keep[k] ? m++ : -1;
    final_kept = calloc((size_t)m + 1, 1);
    if (!final_kept) goto nomemory;
    for (int32_t k = 0; k < states; k++) {
        if (!keep[k]) continue;
        final_kept[kept_id[k]] = final[k];
        for (int32_t a = start_of[k]; a < start_of[k + 1]; a++)
            if (keep[target[a]]) tail[kept_arcs] = kept_id[k], label[kept_arcs] = symbol[a], head[kept_arcs++] = kept_id[target[a]];
    }
    if (minimal_quotient_of(m, kept_arcs, tail, label, head, final_kept, 0, &quotient)) goto nomemory;
    final_block = calloc((size_t)quotient.count + 1, 1);
    if (!final_block) goto nomemory;
    for (int32_t q = 0; q < m; q++) final_block[quotient.number[q]] = final_kept[q]; /* (a block agrees on finality) */
    rows = PyList_New(quotient.count), finals = PyList_New(0);
    state_object = calloc((size_t)quotient.count + 1, sizeof(PyObject *)); /* one int per state, shared by its arcs */
    if (!rows || !finals) goto done;
    if (!state_object) goto nomemory;
    for (int32_t i = 0; i < quotient.count; i++)
        if (!(state_object[i] = PyLong_FromLong(i))) goto done;
    for (int32_t i = 0; i < quotient.count; i++) {
        /* sized for its arcs at once: a string's row of two hundred bytes grew its table five times */
        PyObject *row = dict_for(quotient.arc_begin[i + 1] - quotient.arc_begin[i]);
        if (!row) goto done;
        PyList_SET_ITEM(rows, i, row);
        for (int32_t j = quotient.arc_begin[i]; j < quotient.arc_begin[i + 1]; j++) {
            int32_t a = quotient.arcs[j];
            PyObject *key = PyLong_FromLongLong(label[a]);
            int failed = !key || PyDict_SetItem(row, key, state_object[quotient.number[head[a]]]);
            Py_XDECREF(key);
            if (failed) goto done;
        }
        if (final_block[i] && PyList_Append(finals, state_object[i])) goto done;
    }
    result = PyTuple_Pack(2, rows, finals);
    goto done;
nomemory:
    PyErr_NoMemory();
done:
    Py_XDECREF(rows), Py_XDECREF(finals);
    if (state_object)
        for (int32_t i = 0; i < quotient.count; i++) Py_XDECREF(state_object[i]);
    free(state_object);
    quotient_free(&quotient);
    free(keep), free(kept_id), free(in_start), free(in_arc), free(tail), free(label), free(head), free(final);
    free(final_kept), free(final_block), free(queue.data);
    return result;
}

/* minimal_dfa(arcs, eps, start, finals, symbol_map, max_states) -> (rows, finals) with start 0, or None past
 * max_states (< 0: no limit).  symbol_map: packed int32, the id of each NFA symbol (-1: its arcs go), or None. */
static PyObject *minimal_dfa_method(PyObject *module, PyObject *args) {
    PyObject *arcs, *eps, *finals, *map_object, *result = NULL;
    long long start, max_states;
    if (!PyArg_ParseTuple(args, "O!O!LO!OL:minimal_dfa", &PyList_Type, &arcs, &PyList_Type, &eps, &start, &PyList_Type,
                          &finals, &map_object, &max_states))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(arcs);
    if (PyList_GET_SIZE(eps) != n || n < 1 || n >= INT32_MAX || start < 0 || start >= n) {
        PyErr_SetString(PyExc_ValueError, "minimal_dfa: arcs and eps must have one row per state, start among them");
        return NULL;
    }
    Py_buffer map_view = {0};
    const int32_t *map = NULL;
    Py_ssize_t map_length = 0;
    if (map_object != Py_None) {
        if (PyObject_GetBuffer(map_object, &map_view, PyBUF_SIMPLE)) return NULL;
        if (map_view.len % 4) {
            PyBuffer_Release(&map_view);
            PyErr_SetString(PyExc_ValueError, "minimal_dfa: symbol_map must be packed int32");
            return NULL;
        }
        map = map_view.buf, map_length = map_view.len / 4;
    }
    Subsets s = {0};
    if (nfa_read(&s, arcs, eps, map, map_length)) goto done;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(finals); i++) {
        int32_t q;
        if (nfa_int(PyList_GET_ITEM(finals, i), (long)n, &q, "a final state")) goto done;
        s.is_final[q] = 1;
    }
    int deterministic = nfa_is_deterministic(&s);
    int built = deterministic < 0  ? -1
                : deterministic ? subsets_of_a_dfa(&s, (int32_t)start, max_states)
                                : subsets_build(&s, (int32_t)start, max_states);
    if (built == -2) {
        result = Py_None;
        Py_INCREF(result);
    } else if (built < 0) {
        PyErr_NoMemory();
    } else {
        result = minimal_quotient(&s);
    }
done:
    subsets_free(&s);
    if (map_object != Py_None) PyBuffer_Release(&map_view);
    return result;
}

#endif
