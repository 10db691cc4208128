/* The liveness fixpoint of the on-demand canonical promotion: the compiled twin of
 * bpefst/promotion/on_demand.py's _Liveness.solve, which explains the equations.
 *
 * good[q] is the set of tokens of lattice state q whose arc leads on to a final state by a canonical
 * sequence.  A state r is *open* when a chunk may end there (every arc into it is good, group by group);
 * otherwise a token t of an arc q -t-> r is good once some v in good[r] may follow t (the pair (t, v) is
 * canonical: PairChecker's spine walk, seed 000 Sec. 6.5).  The fixpoint grows good from the finals
 * backwards.  The work order is the pure loop's, step for step (finals ascending, then a first-in
 * first-out queue of the states whose good grew), so `filed` (per q, the (tokens, r) lists in the order
 * they were found) comes out identical, and with it the numbering of the states expanded later.
 *
 * Good sets are bitsets of uint64 words, and equal sets are one set held by every state with that value
 * (a JSON pattern's string states number thousands and hold a handful of values): a state's set grows in
 * place while it is its only holder, and otherwise moves to the equal set if one exists, or to a copy.
 * Growths are remembered (GrowMemo, checked by set versions), so the states holding one set that grow
 * alike find the result without comparing sets again.  A token's check first tries the follower that
 * answered its last check (good sets share their short tokens), then every token of good[r], lowest first;
 * that answer is remembered by the set's version (CheckMemo), since the string bodies of a schema ask the
 * same checks of equal sets.
 * Each set knows the range of words its tokens are in, and the bits of sets given up are kept, with that
 * range, for the next new sets: copying, clearing and comparing sets costs their ranges, not the
 * vocabulary (a small schema's sets hold a few hundred tokens of cl100k's 1,567 words, and copying them
 * whole was a quarter of its solve).  So that a range is narrow where a set is small, the sets number
 * tokens their own way (checker_solve_order): the tokens whose first symbol begins few tokens (a UTF-8
 * continuation byte's, which the states inside a character read) come after all the others, so the sets
 * of those states span a few words instead of the vocabulary's (cl100k, a median schema: 440 MB copied
 * and 300 MB compared before).  Tokens are renumbered as the groups are read and back as the result is
 * made; nothing else sees it.
 */
#ifndef BPEFST_LIVENESS_H
#define BPEFST_LIVENESS_H

#include "validate.h"
#include "filed.h"

typedef struct {
    uint32_t *tokens, count; /* the tokens of this (group, q) not yet known good */
    uint8_t owned, waiting;  /* tokens allocated here (else the group's); listed among the waiting */
} Pending;

typedef struct {
    uint64_t *bits, hash; /* hash: the XOR of its tokens' mixes, kept as tokens are added */
    uint64_t version;     /* new with each change of its tokens, and when freed: what a GrowMemo entry checks */
    uint32_t count, refs; /* its size; the states holding it */
    uint64_t *occupied;   /* a bit per word of bits that is not zero (set_occupied), as of ... */
    uint64_t occupied_version; /* ... this version; kept with the slot when the set is freed */
    uint32_t lo, hi;      /* every word of bits that is not zero is in [lo, hi) (empty: lo >= hi) */
} GoodSet;

/* One growth remembered: set `from` (-1: the empty set) as it was at `from_version`, plus the tokens of
 * group `group`, is set `to` as long as `to` is at `to_version`.  States holding one set and taking one
 * group (a JSON Schema's string states: thousands of them, a few values) find the result here instead of
 * computing the new tokens and comparing the set a hash match finds (786 words over GPT-2).  With group
 * NO_GROUP, the tokens added were others (a settled list) and `added` is the XOR of their mixes: such an
 * entry says `from` is within `to`, which spares that comparison when the same growth comes again. */
typedef struct {
    int32_t from, to; /* from: FREE_ENTRY in an entry not used yet */
    uint32_t group;
    uint64_t from_version, to_version, added;
} GrowMemo;

/* A set's bits kept when it is given up: its words outside [lo, hi) are zero. */
typedef struct {
    uint64_t *bits;
    uint32_t lo, hi;
} SpareBits;

/* One token's check remembered: whether some token of the set at `version` may follow `t` (answer: 1 + the
 * first that may, or 0 for none).  A version is one set's tokens at one time, so the answer holds for good;
 * a JSON Schema's string bodies ask the same checks of equal sets once per body (cl100k, a median schema:
 * 530,000 checks, 7,300 distinct), and a check that fails reads the whole set. */
typedef struct {
    uint64_t version; /* 0: an entry not used yet */
    uint32_t t, answer;
} CheckMemo;

#define NO_GROUP UINT32_MAX
#define FREE_ENTRY INT32_MIN

typedef struct {
    PairChecker *checker;
    uint32_t n, words, groups, pairs;
    uint32_t *group_start, *group_token;      /* group -> its tokens */
    uint64_t *group_hash;                      /* group -> the XOR of its tokens' mixes (groups with words) */
    uint32_t *word_start, *word_index;         /* group -> its words, none for most groups (liveness_group_words) */
    uint64_t *word_bits;                       /*   each: a word's index and the group's tokens in that word */
    PyObject **group_list;                     /* group -> its tokens, an array('I') or a list (a reference held here) */
    uint32_t lists_held;
    uint32_t *pair_group, *pair_q;             /* pair -> (group, q); its target is the state it is filed under */
    uint32_t *pred_start, *pred;               /* r -> the pairs into r, in the caller's order */
    int32_t *cut;                              /* r -> the state r may cut to, or -1 */
    uint32_t *cut_pred_start, *cut_pred;       /* r' -> the states cutting to r' */
    int32_t *good;                             /* q -> its set in `sets`, or -1 while empty */
    GoodSet *sets;                             /* the distinct good sets, shared by the states holding them */
    uint32_t set_count, set_capacity, free_sets, *free_set;
    SpareBits *spare;                          /* bits of sets given up, for the next new sets */
    uint32_t spare_count;                      /*   (at most set_capacity of them) */
    uint64_t versions;                         /* the last version given to a set */
    GrowMemo *memo;                            /* direct mapped by (from, group) */
    size_t memo_mask;
    int32_t *table;                            /* open addressing over sets by hash: -1 free, -2 deleted */
    size_t table_size, table_used;
    uint32_t *fresh, fresh_count;              /* grow's scratch: the tokens new to a set */
    uint64_t *marked;                          /* grow's scratch: a bitset of them, cleared after use */
    uint32_t *settling;                        /* settle's scratch: the tokens of one check that follow */
    uint8_t *open, *queued;
    uint32_t *queue, queue_head, queue_tail, queue_length; /* a ring of n slots: a state queued at most once */
    uint32_t *stack;                           /* _open's stack: a state is pushed at most once per opening */
    size_t stack_size;
    uint32_t *answered;                        /* token -> 1 + the follower that answered its last check, or 0 */
    CheckMemo *checks;                         /* direct mapped by (t, version) */
    size_t checks_mask;
    Pending *pending;
    Ints filed;                                /* (q, code, r) per pair filed, in the order found (filed.h) */
    Ints settled, batch_start;                 /* the tokens settled one by one, batch after batch */
    int failure;                               /* what failed in the solve (SOLVE_...), said once the GIL is back */
} Liveness;

/* The fixpoint runs without the GIL (another thread may decode meanwhile), so what fails in it is recorded
 * and raised by liveness_raise when the GIL is held again. */
enum { SOLVE_OK, SOLVE_OUT_OF_MEMORY, SOLVE_TOO_MANY_SETTLED };

static int liveness_fail(Liveness *l, int failure) {
    if (!l->failure) l->failure = failure;
    return -1;
}

static void liveness_raise(const Liveness *l) {
    if (PyErr_Occurred()) return;
    if (l->failure == SOLVE_TOO_MANY_SETTLED) PyErr_SetString(PyExc_OverflowError, "solve_liveness: too many tokens settled");
    else PyErr_NoMemory();
}

static void liveness_free(Liveness *l) {
    if (l->sets)
        for (uint32_t k = 0; k < l->set_count; k++) PyMem_RawFree(l->sets[k].bits), PyMem_RawFree(l->sets[k].occupied);
    for (uint32_t k = 0; k < l->spare_count; k++) PyMem_RawFree(l->spare[k].bits);
    PyMem_RawFree(l->spare);
    PyMem_RawFree(l->sets), PyMem_RawFree(l->free_set), PyMem_RawFree(l->memo), PyMem_RawFree(l->table), PyMem_RawFree(l->fresh), PyMem_RawFree(l->marked);
    PyMem_RawFree(l->settling);
    if (l->pending)
        for (uint32_t p = 0; p < l->pairs; p++)
            if (l->pending[p].owned) PyMem_RawFree(l->pending[p].tokens);
    for (uint32_t g = 0; g < l->lists_held; g++) Py_DECREF(l->group_list[g]);
    PyMem_RawFree(l->group_hash), PyMem_RawFree(l->word_start), PyMem_RawFree(l->word_index), PyMem_RawFree(l->word_bits);
    PyMem_RawFree(l->group_start), PyMem_RawFree(l->group_token), PyMem_Free(l->group_list);
    PyMem_RawFree(l->pair_group), PyMem_RawFree(l->pair_q), PyMem_RawFree(l->pred_start), PyMem_RawFree(l->pred);
    PyMem_RawFree(l->cut), PyMem_RawFree(l->cut_pred_start), PyMem_RawFree(l->cut_pred), PyMem_RawFree(l->good);
    PyMem_RawFree(l->open), PyMem_RawFree(l->queued), PyMem_RawFree(l->queue);
    PyMem_RawFree(l->stack), PyMem_RawFree(l->answered), PyMem_RawFree(l->pending), PyMem_RawFree(l->checks);
    free(l->filed.data), free(l->settled.data), free(l->batch_start.data);
}

static int state_of(PyObject *item, uint32_t n, uint32_t *state) {
    if (!PyLong_Check(item)) {
        PyErr_SetString(PyExc_TypeError, "solve_liveness: states must be ints");
        return -1;
    }
    long value = PyLong_AsLong(item);
    if (value == -1 && PyErr_Occurred()) return -1;
    if (value < 0 || (unsigned long)value >= n) {
        PyErr_SetString(PyExc_IndexError, "solve_liveness: a state outside 0 .. n - 1");
        return -1;
    }
    *state = (uint32_t)value;
    return 0;
}

/* Read the groups [(tokens, {q: r})]: tokens packed per group, pairs numbered in the caller's order. */
static int liveness_read_groups(Liveness *l, PyObject *groups) {
    Py_ssize_t G = PyList_GET_SIZE(groups);
    size_t tokens = 0, pairs = 0;
    for (Py_ssize_t g = 0; g < G; g++) {
        PyObject *group = PyList_GET_ITEM(groups, g);
        PyObject *pairs_of = PyTuple_Check(group) && PyTuple_GET_SIZE(group) == 2 ? PyTuple_GET_ITEM(group, 1) : NULL;
        if (!pairs_of || !(PyDict_Check(pairs_of) || PyObject_TypeCheck(pairs_of, &PairsType))) {
            PyErr_SetString(PyExc_TypeError, "solve_liveness: groups are (tokens, pairs q -> r: a dict or a Pairs)");
            return -1;
        }
        Py_ssize_t count = token_count(PyTuple_GET_ITEM(group, 0));
        if (count < 0) return -1;
        tokens += (size_t)count;
        pairs += (size_t)(PyDict_Check(pairs_of) ? PyDict_Size(pairs_of) : ((Pairs *)pairs_of)->size);
    }
    if (pairs >= UINT32_MAX || tokens >= UINT32_MAX || (size_t)G >= NO_GROUP) {
        PyErr_SetString(PyExc_OverflowError, "solve_liveness: too many lattice arcs");
        return -1;
    }
    l->groups = (uint32_t)G, l->pairs = (uint32_t)pairs;
    l->group_start = PyMem_RawMalloc(((size_t)G + 1) * 4), l->group_token = PyMem_RawMalloc(tokens * 4 + 4);
    l->group_list = PyMem_Malloc((size_t)G * sizeof(PyObject *) + 1);
    l->pair_group = PyMem_RawMalloc(pairs * 4 + 4), l->pair_q = PyMem_RawMalloc(pairs * 4 + 4);
    uint32_t *pair_r = PyMem_RawMalloc(pairs * 4 + 4);
    l->pred_start = PyMem_RawCalloc((size_t)l->n + 1, 4), l->pred = PyMem_RawMalloc(pairs * 4 + 4);
    l->pending = PyMem_RawCalloc(pairs + 1, sizeof(Pending));
    if (!l->group_start || !l->group_token || !l->group_list || !l->pair_group || !l->pair_q || !pair_r ||
        !l->pred_start || !l->pred || !l->pending) {
        PyMem_RawFree(pair_r);
        PyErr_NoMemory();
        return -1;
    }
    size_t k = 0, p = 0;
    for (Py_ssize_t g = 0; g < G; g++) {
        PyObject *group = PyList_GET_ITEM(groups, g), *list = PyTuple_GET_ITEM(group, 0), *q_obj, *r_obj;
        l->group_start[g] = (uint32_t)k;
        Py_INCREF(list);
        l->group_list[g] = list, l->lists_held = (uint32_t)g + 1;
        Py_ssize_t count = token_count(list);
        if (count < 0 || k + (size_t)count > tokens) {
            if (count >= 0) PyErr_SetString(PyExc_RuntimeError, "solve_liveness: a group changed while read");
            goto fail;
        }
        if (token_copy(list, count, l->checker->size, l->group_token + k)) goto fail;
        for (uint32_t *token = l->group_token + k, *end = token + count; token < end; token++)
            *token = l->checker->solve_id[*token];
        k += (size_t)count;
        if (PyObject_TypeCheck(PyTuple_GET_ITEM(group, 1), &PairsType)) { /* the compiled walks' (pairs.h) */
            const Pairs *x = (const Pairs *)PyTuple_GET_ITEM(group, 1);
            if (p + (size_t)x->size > pairs) {
                PyErr_SetString(PyExc_RuntimeError, "solve_liveness: a group changed while read");
                goto fail;
            }
            for (Py_ssize_t i = 0; i < x->size; i++, p++) {
                if ((uint32_t)x->source[i] >= l->n || (uint32_t)x->target[i] >= l->n) {
                    PyErr_SetString(PyExc_IndexError, "solve_liveness: a state outside 0 .. n - 1");
                    goto fail;
                }
                l->pair_q[p] = (uint32_t)x->source[i], pair_r[p] = (uint32_t)x->target[i];
                l->pair_group[p] = (uint32_t)g;
                l->pred_start[pair_r[p] + 1]++;
            }
            continue;
        }
        Py_ssize_t at = 0;
        while (PyDict_Next(PyTuple_GET_ITEM(group, 1), &at, &q_obj, &r_obj)) {
            if (p >= pairs) { /* (the dict grew under us: only a misbehaving caller) */
                PyErr_SetString(PyExc_RuntimeError, "solve_liveness: a group changed while read");
                goto fail;
            }
            if (state_of(q_obj, l->n, &l->pair_q[p]) || state_of(r_obj, l->n, &pair_r[p])) goto fail;
            l->pair_group[p] = (uint32_t)g;
            l->pred_start[pair_r[p] + 1]++;
            p++;
        }
    }
    l->group_start[G] = (uint32_t)k;
    if (p != pairs) {
        PyErr_SetString(PyExc_RuntimeError, "solve_liveness: a group changed while read");
        goto fail;
    }
    for (uint32_t r = 0; r < l->n; r++) l->pred_start[r + 1] += l->pred_start[r];
    uint32_t *fill = PyMem_RawMalloc((size_t)l->n * 4 + 4);
    if (!fill) {
        PyErr_NoMemory();
        goto fail;
    }
    memcpy(fill, l->pred_start, (size_t)l->n * 4);
    for (p = 0; p < pairs; p++) l->pred[fill[pair_r[p]]++] = (uint32_t)p;
    PyMem_RawFree(fill), PyMem_RawFree(pair_r);
    return 0;
fail:
    PyMem_RawFree(pair_r);
    return -1;
}

static int liveness_read_cut(Liveness *l, PyObject *cut) {
    if (!PyList_Check(cut) || (size_t)PyList_GET_SIZE(cut) != l->n) {
        PyErr_SetString(PyExc_ValueError, "solve_liveness: cut must be a list of n states or None");
        return -1;
    }
    l->cut = PyMem_RawMalloc((size_t)l->n * 4 + 4), l->cut_pred_start = PyMem_RawCalloc((size_t)l->n + 1, 4);
    l->cut_pred = PyMem_RawMalloc((size_t)l->n * 4 + 4);
    if (!l->cut || !l->cut_pred_start || !l->cut_pred) {
        PyErr_NoMemory();
        return -1;
    }
    for (uint32_t r = 0; r < l->n; r++) {
        PyObject *item = PyList_GET_ITEM(cut, r);
        uint32_t after;
        l->cut[r] = -1;
        if (item == Py_None) continue;
        if (state_of(item, l->n, &after)) return -1;
        l->cut[r] = (int32_t)after;
        l->cut_pred_start[after + 1]++;
    }
    for (uint32_t r = 0; r < l->n; r++) l->cut_pred_start[r + 1] += l->cut_pred_start[r];
    uint32_t *fill = PyMem_RawMalloc((size_t)l->n * 4 + 4);
    if (!fill) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(fill, l->cut_pred_start, (size_t)l->n * 4);
    for (uint32_t r = 0; r < l->n; r++)
        if (l->cut[r] >= 0) l->cut_pred[fill[l->cut[r]]++] = r;
    PyMem_RawFree(fill);
    return 0;
}

static inline int has_bit(const uint64_t *bits, uint32_t v) { return bits && (bits[v >> 6] >> (v & 63) & 1); }

static inline const uint64_t *good_bits(const Liveness *l, uint32_t q) {
    return l->good[q] < 0 ? NULL : l->sets[l->good[q]].bits;
}

static inline uint64_t token_mix(uint32_t v) {
    uint64_t h = ((uint64_t)v + 1) * 0x9E3779B97F4A7C15ull;
    return h ^ h >> 31;
}

/* For a group of many ascending tokens sharing words, the words it sets and the XOR of its tokens' mixes:
 * grow_alone then adds the group a word at a time, its hash known, instead of a token at a time (a JSON
 * pattern's string states take groups of 3,000-6,000 letter tokens, about six to a word over GPT-2, ten
 * groups per state, into sets they are disjoint from: person's first mask 3.9 -> 3.6 ms).  A group
 * ascending in token ids is ascending in the solve's numbers once its late tokens are read after the others
 * (checker_solve_order keeps the order of each part): `pass` 0 reads the others, 1 the late ones. */
#define GROUP_WORDS_MIN_TOKENS 64
static int group_ascends(const Liveness *l, const uint32_t *t, uint32_t count) {
    const uint32_t *token = l->checker->solve_token;
    for (uint32_t i = 1; i < count; i++)
        if (token[t[i]] <= token[t[i - 1]]) return 0;
    return 1;
}

static int liveness_group_words(Liveness *l) {
    uint32_t G = l->groups, base = l->checker->solve_base;
    size_t words = 0;
    l->group_hash = PyMem_RawMalloc((size_t)G * 8 + 8), l->word_start = PyMem_RawMalloc(((size_t)G + 1) * 4);
    if (!l->group_hash || !l->word_start) goto nomemory;
    for (uint32_t g = 0; g < G; g++) { /* count the words of the dense groups */
        const uint32_t *t = l->group_token + l->group_start[g];
        uint32_t count = l->group_start[g + 1] - l->group_start[g], distinct = 0, last = UINT32_MAX;
        l->word_start[g] = (uint32_t)words;
        if (count < GROUP_WORDS_MIN_TOKENS || !group_ascends(l, t, count)) continue;
        for (int pass = 0; pass < 2; pass++)
            for (uint32_t i = 0; i < count; i++)
                if ((t[i] >= base) == pass && t[i] >> 6 != last) distinct++, last = t[i] >> 6;
        if (2 * (size_t)distinct <= count) words += distinct;
    }
    l->word_start[G] = (uint32_t)words;
    l->word_index = PyMem_RawMalloc(words * 4 + 4), l->word_bits = PyMem_RawMalloc(words * 8 + 8);
    if (!l->word_index || !l->word_bits) goto nomemory;
    for (uint32_t g = 0; g < G; g++) {
        uint32_t k = l->word_start[g], end = l->word_start[g + 1], last = UINT32_MAX;
        if (k == end) continue;
        const uint32_t *t = l->group_token + l->group_start[g];
        uint32_t count = l->group_start[g + 1] - l->group_start[g];
        uint64_t hash = 0;
        for (int pass = 0; pass < 2; pass++)
            for (uint32_t i = 0; i < count; i++) {
                if ((t[i] >= base) != pass) continue;
                if (t[i] >> 6 != last) last = t[i] >> 6, l->word_index[k] = last, l->word_bits[k++] = 0;
                l->word_bits[k - 1] |= (uint64_t)1 << (t[i] & 63);
                hash ^= token_mix(t[i]);
            }
        l->group_hash[g] = hash;
    }
    return 0;
nomemory:
    PyErr_NoMemory();
    return -1;
}

static void push_dirty(Liveness *l, uint32_t q) {
    if (l->queued[q]) return;
    l->queued[q] = 1;
    l->queue[l->queue_tail] = q;
    l->queue_tail = l->queue_tail + 1 == l->n ? 0 : l->queue_tail + 1;
    l->queue_length++;
}

static inline size_t table_home(const Liveness *l, uint64_t hash) { return (size_t)(hash ^ hash >> 32) & (l->table_size - 1); }

static void table_remove(Liveness *l, uint32_t set) {
    for (size_t k = table_home(l, l->sets[set].hash);; k = (k + 1) & (l->table_size - 1))
        if (l->table[k] == (int32_t)set) {
            l->table[k] = -2;
            return;
        }
}

static int table_insert(Liveness *l, uint32_t set);

static int table_grow(Liveness *l) {
    int32_t *old = l->table;
    size_t old_size = l->table_size;
    l->table_size = old_size ? 2 * old_size : 1024;
    while (l->table_size < 4 * (size_t)(l->set_count - l->free_sets + 1)) l->table_size *= 2;
    l->table = PyMem_RawMalloc(l->table_size * sizeof(int32_t));
    if (!l->table) {
        l->table = old, l->table_size = old_size;
        return liveness_fail(l, SOLVE_OUT_OF_MEMORY);
    }
    for (size_t k = 0; k < l->table_size; k++) l->table[k] = -1;
    l->table_used = 0;
    for (size_t k = 0; k < old_size; k++)
        if (old[k] >= 0) table_insert(l, (uint32_t)old[k]);
    PyMem_RawFree(old);
    return 0;
}

static int table_insert(Liveness *l, uint32_t set) {
    if (2 * (l->table_used + 1) > l->table_size && table_grow(l)) return -1;
    size_t k = table_home(l, l->sets[set].hash);
    while (l->table[k] >= 0) k = (k + 1) & (l->table_size - 1);
    if (l->table[k] == -1) l->table_used++;
    l->table[k] = (int32_t)set;
    return 0;
}

/* Whether `base` (NULL: empty) has no token `bits` lacks: one pass with no early exit, which the compiler
 * vectorizes (an equal set is nearly always what a hash match finds, so the pass is seldom cut short). */
/* Whether set `base` (-1: the empty set) is within `bits`. */
static int within(const Liveness *l, int32_t base, const uint64_t *bits) {
    if (base < 0) return 1;
    const GoodSet *x = &l->sets[base];
    uint64_t missing = 0;
    for (uint32_t w = x->lo; w < x->hi; w++) missing |= x->bits[w] & ~bits[w];
    return !missing;
}

/* Words [lo, hi) may now hold tokens of `set`. */
static inline void set_extend(GoodSet *x, uint32_t lo, uint32_t hi) {
    if (lo >= hi) return;
    if (x->lo >= x->hi) {
        x->lo = lo, x->hi = hi;
        return;
    }
    if (lo < x->lo) x->lo = lo;
    if (hi > x->hi) x->hi = hi;
}

/* The set equal to `base` (NULL: empty) plus the fresh tokens, if there is one: its hash and size say
 * where to look, and it holds all of base and every fresh token. */
static int32_t table_find(const Liveness *l, int32_t base, uint64_t hash, uint32_t count) {
    for (size_t k = table_home(l, hash); l->table[k] != -1; k = (k + 1) & (l->table_size - 1)) {
        int32_t other = l->table[k];
        if (other < 0 || l->sets[other].hash != hash || l->sets[other].count != count) continue;
        const uint64_t *bits = l->sets[other].bits;
        uint32_t i = 0;
        while (i < l->fresh_count && has_bit(bits, l->fresh[i])) i++;
        if (i == l->fresh_count && within(l, base, bits)) return other;
    }
    return -1;
}

/* The set other than `set` with the same tokens, if there is one.  Of two sets of one size, one equals the
 * other where its words do: memcmp over set's words, which glibc compares wider than within's loop (the
 * comparison is a third of grow's time over cl100k, whose sets span 1,567 words). */
static int32_t table_find_equal(const Liveness *l, uint32_t set) {
    const GoodSet *x = &l->sets[set];
    size_t bytes = x->lo < x->hi ? (size_t)(x->hi - x->lo) * sizeof(uint64_t) : 0;
    for (size_t k = table_home(l, x->hash); l->table[k] != -1; k = (k + 1) & (l->table_size - 1)) {
        int32_t other = l->table[k];
        if (other >= 0 && (uint32_t)other != set && l->sets[other].hash == x->hash && l->sets[other].count == x->count &&
            (!bytes || memcmp(x->bits + x->lo, l->sets[other].bits + x->lo, bytes) == 0))
            return other;
    }
    return -1;
}

/* A set no state holds, out of the table: its slot is free for the next new set. */
static void discard_set(Liveness *l, uint32_t set) {
    GoodSet *x = &l->sets[set];
    if (l->spare_count < l->set_capacity) /* (spare has room for set_capacity: one per slot) */
        l->spare[l->spare_count++] = (SpareBits){x->bits, x->lo, x->hi};
    else
        PyMem_RawFree(x->bits);
    l->sets[set].bits = NULL, l->sets[set].refs = 0, l->sets[set].version = ++l->versions;
    l->free_set[l->free_sets++] = set;
}

static void release_set(Liveness *l, int32_t set) {
    if (set < 0 || --l->sets[set].refs) return;
    table_remove(l, (uint32_t)set);
    discard_set(l, (uint32_t)set);
}

/* A new set holding what set `copy` holds (-1: nothing). */
static int32_t new_set(Liveness *l, int32_t copy) {
    /* (fresh bits are all dirty: cleared outside what is copied, like a spare's) */
    SpareBits spare = l->spare_count ? l->spare[--l->spare_count]
                                     : (SpareBits){PyMem_RawMalloc((size_t)l->words * 8 + 8), 0, l->words};
    uint64_t *bits = spare.bits;
    if (!bits) return liveness_fail(l, SOLVE_OUT_OF_MEMORY);
    uint32_t lo = copy < 0 ? 0 : l->sets[copy].lo, hi = copy < 0 ? 0 : l->sets[copy].hi;
    if (lo >= hi) lo = hi = 0;
    if (spare.lo < spare.hi) { /* the spare's words outside [lo, hi) cleared, those inside copied over */
        uint32_t below = spare.hi < lo ? spare.hi : lo, above = spare.lo > hi ? spare.lo : hi;
        if (spare.lo < below) memset(bits + spare.lo, 0, (size_t)(below - spare.lo) * 8);
        if (above < spare.hi) memset(bits + above, 0, (size_t)(spare.hi - above) * 8);
    }
    if (lo < hi) memcpy(bits + lo, l->sets[copy].bits + lo, (size_t)(hi - lo) * 8);
    uint32_t set;
    uint64_t *occupied = NULL; /* (a freed slot's, reused) */
    if (l->free_sets) {
        set = l->free_set[--l->free_sets];
        occupied = l->sets[set].occupied;
    } else {
        if (l->set_count == l->set_capacity) {
            uint32_t capacity = l->set_capacity ? 2 * l->set_capacity : 256;
            GoodSet *sets = PyMem_RawRealloc(l->sets, capacity * sizeof(GoodSet));
            uint32_t *free_set = PyMem_RawRealloc(l->free_set, capacity * sizeof(uint32_t));
            SpareBits *spare = PyMem_RawRealloc(l->spare, capacity * sizeof(SpareBits));
            if (sets) l->sets = sets;
            if (free_set) l->free_set = free_set;
            if (spare) l->spare = spare;
            if (!sets || !free_set || !spare) {
                PyMem_RawFree(bits);
                return liveness_fail(l, SOLVE_OUT_OF_MEMORY);
            }
            l->set_capacity = capacity;
        }
        set = l->set_count++;
    }
    l->sets[set] = (GoodSet){.bits = bits, .version = ++l->versions, .refs = 1, .occupied = occupied, .lo = lo,
                             .hi = hi};
    return (int32_t)set;
}

/* grow() where q is the only holder of its set: the tokens are added in place in one pass (a token met
 * twice is in the set the second time), and the set then moves to an equal one if there is one.  Most
 * growth of a small pattern's states is this (a JSON pattern's: 580 of 660 growths, 430k tokens).  The
 * word being filled is kept in a register and stored when the next token is in another word: group tokens
 * ascend, and a load after a store to the same word each token made the loop wait on memory. */
static int grow_alone(Liveness *l, uint32_t q, const uint32_t *tokens, uint32_t count, uint32_t group) {
    uint32_t set = (uint32_t)l->good[q];
    GoodSet *x = &l->sets[set];
    uint64_t *bits = x->bits, hash = x->hash, word = 0;
    uint32_t size = x->count, at = count ? tokens[0] >> 6 : 0;
    if (group != NO_GROUP && l->word_start[group] < l->word_start[group + 1]) {
        /* a word at a time: the group's hash and size, less those of the tokens the set had already */
        hash ^= l->group_hash[group], size += count;
        set_extend(x, l->word_index[l->word_start[group]], l->word_index[l->word_start[group + 1] - 1] + 1);
        for (uint32_t k = l->word_start[group]; k < l->word_start[group + 1]; k++) {
            uint64_t *w = &bits[l->word_index[k]], had = *w & l->word_bits[k];
            *w |= l->word_bits[k];
            for (; had; had &= had - 1, size--)
                hash ^= token_mix(l->word_index[k] * 64 + (uint32_t)__builtin_ctzll(had));
        }
        count = 0;
    } else if (count) {
        word = bits[at];
    }
    uint32_t low = at, high = at;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t v = tokens[i];
        uint64_t bit = (uint64_t)1 << (v & 63);
        if (v >> 6 != at) {
            bits[at] = word;
            at = v >> 6, word = bits[at];
            if (at < low) low = at;
            if (at > high) high = at;
        }
        if (word & bit) continue;
        word |= bit;
        hash ^= token_mix(v);
        size++;
    }
    if (count) bits[at] = word, set_extend(x, low, high + 1);
    if (size == x->count) return 0;
    table_remove(l, set); /* (under its old hash) */
    x->hash = hash, x->count = size, x->version = ++l->versions;
    int32_t equal = table_find_equal(l, set);
    if (equal >= 0) {
        l->sets[equal].refs++;
        l->good[q] = equal;
        discard_set(l, set);
    } else if (table_insert(l, set)) {
        return -1;
    }
    if (!l->open[q]) push_dirty(l, q);
    return 0;
}

static inline GrowMemo *memo_slot(const Liveness *l, int32_t from, uint32_t group) {
    uint64_t h = ((uint64_t)(uint32_t)from << 32 | group) * 0x9E3779B97F4A7C15ull;
    return &l->memo[(size_t)(h >> 40) & l->memo_mask];
}

/* The set other than base's holders' equal to base (NULL: empty) plus the words [from, to) of a group, if there
 * is one: table_find for a group added a word at a time. */
static int32_t table_find_words(const Liveness *l, int32_t base, uint64_t hash, uint32_t count, uint32_t from,
                                uint32_t to) {
    for (size_t k = table_home(l, hash); l->table[k] != -1; k = (k + 1) & (l->table_size - 1)) {
        int32_t other = l->table[k];
        if (other < 0 || l->sets[other].hash != hash || l->sets[other].count != count) continue;
        const uint64_t *bits = l->sets[other].bits;
        uint32_t w = from;
        while (w < to && (bits[l->word_index[w]] & l->word_bits[w]) == l->word_bits[w]) w++;
        if (w == to && within(l, base, bits)) return other;
    }
    return -1;
}

/* grow() of a group with words (liveness_group_words) into a set other states hold too, or into none yet (a
 * state's first growth): the new set is base plus the group's words, its hash the group's corrected for the
 * tokens base had; an equal set is shared if there is one. */
static int grow_shared_by_words(Liveness *l, uint32_t q, int32_t held, uint64_t held_version, uint32_t group,
                                uint32_t count, GrowMemo *memo) {
    const uint64_t *base = held < 0 ? NULL : l->sets[held].bits;
    uint32_t from = l->word_start[group], to = l->word_start[group + 1], before = held < 0 ? 0 : l->sets[held].count;
    uint64_t hash = (held < 0 ? 0 : l->sets[held].hash) ^ l->group_hash[group];
    uint32_t size = before + count;
    for (uint32_t k = from; base && k < to; k++)
        for (uint64_t had = base[l->word_index[k]] & l->word_bits[k]; had; had &= had - 1, size--)
            hash ^= token_mix(l->word_index[k] * 64 + (uint32_t)__builtin_ctzll(had));
    if (size == before) return 0;
    int32_t set = table_find_words(l, held, hash, size, from, to);
    if (set >= 0) {
        l->sets[set].refs++;
        release_set(l, held);
    } else {
        set = new_set(l, held);
        if (set < 0) return -1;
        release_set(l, held);
        uint64_t *bits = l->sets[set].bits;
        for (uint32_t k = from; k < to; k++) bits[l->word_index[k]] |= l->word_bits[k];
        set_extend(&l->sets[set], l->word_index[from], l->word_index[to - 1] + 1);
        l->sets[set].hash = hash, l->sets[set].count = size;
        if (table_insert(l, (uint32_t)set)) return -1;
    }
    l->good[q] = set;
    *memo = (GrowMemo){held, set, group, held_version, l->sets[set].version, 0};
    if (!l->open[q]) push_dirty(l, q);
    return held < 0;
}

/* good[q] |= tokens, the tokens of group `group` (NO_GROUP: other tokens); 1 when good[q] was empty and is
 * not now, 0 otherwise, -1 when out of memory. */
static int grow(Liveness *l, uint32_t q, const uint32_t *tokens, uint32_t count, uint32_t group) {
    int32_t held = l->good[q];
    uint64_t held_version = held < 0 ? 0 : l->sets[held].version;
    GrowMemo *memo = group == NO_GROUP ? NULL : memo_slot(l, held, group);
    if (memo && memo->group == group && memo->from == held && memo->from_version == held_version &&
        l->sets[memo->to].version == memo->to_version) {
        l->sets[memo->to].refs++;
        release_set(l, held);
        l->good[q] = memo->to;
        if (!l->open[q]) push_dirty(l, q);
        return held < 0;
    }
    if (held >= 0 && l->sets[held].refs == 1) return grow_alone(l, q, tokens, count, group);
    if (memo && l->word_start[group] < l->word_start[group + 1])
        return grow_shared_by_words(l, q, held, held_version, group, count, memo);
    const uint64_t *base = held < 0 ? NULL : l->sets[held].bits;
    uint64_t hash = held < 0 ? 0 : l->sets[held].hash;
    l->fresh_count = 0;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t v = tokens[i];
        if (has_bit(base, v) || has_bit(l->marked, v)) continue;
        l->marked[v >> 6] |= (uint64_t)1 << (v & 63);
        l->fresh[l->fresh_count++] = v;
        hash ^= token_mix(v);
    }
    for (uint32_t i = 0; i < l->fresh_count; i++) l->marked[l->fresh[i] >> 6] = 0;
    if (!l->fresh_count) return 0;
    uint32_t size = (held < 0 ? 0 : l->sets[held].count) + l->fresh_count;
    /* a set already known to hold base (held has other holders here) needs the fresh tokens checked only */
    uint64_t added = hash ^ (held < 0 ? 0 : l->sets[held].hash);
    GrowMemo *seen = held < 0 ? NULL : memo_slot(l, held, (uint32_t)(added ^ added >> 32));
    int32_t set = -1;
    if (seen && seen->group == NO_GROUP && seen->from == held && seen->from_version == held_version &&
        seen->added == added && l->sets[seen->to].version == seen->to_version && l->sets[seen->to].count == size) {
        uint32_t i = 0;
        while (i < l->fresh_count && has_bit(l->sets[seen->to].bits, l->fresh[i])) i++;
        if (i == l->fresh_count) set = seen->to;
    }
    if (set < 0) set = table_find(l, held, hash, size);
    if (set >= 0) {
        l->sets[set].refs++;
        release_set(l, held);
    } else {
        set = new_set(l, held); /* (held, if any, has other holders: grow_alone takes the rest) */
        if (set < 0) return -1;
        release_set(l, held);
        GoodSet *x = &l->sets[set];
        uint32_t low = UINT32_MAX, high = 0;
        for (uint32_t i = 0; i < l->fresh_count; i++) {
            uint32_t w = l->fresh[i] >> 6;
            x->bits[w] |= (uint64_t)1 << (l->fresh[i] & 63);
            if (w < low) low = w;
            if (w > high) high = w;
        }
        set_extend(x, low, high + 1);
        l->sets[set].hash = hash, l->sets[set].count = size;
        if (table_insert(l, (uint32_t)set)) return -1;
    }
    l->good[q] = set;
    if (memo) *memo = (GrowMemo){held, set, group, held_version, l->sets[set].version, 0};
    else if (seen) *seen = (GrowMemo){held, set, NO_GROUP, held_version, l->sets[set].version, added};
    if (!l->open[q]) push_dirty(l, q);
    return held < 0;
}

/* File the pair (tokens `code`, r) under q: a group, or groups + a batch of tokens settled one by one. */
static int file(Liveness *l, uint32_t q, uint32_t code, uint32_t r) {
    if (ints_push(&l->filed, (int32_t)q) || ints_push(&l->filed, (int32_t)code) || ints_push(&l->filed, (int32_t)r))
        return liveness_fail(l, SOLVE_OUT_OF_MEMORY);
    return 0;
}

/* Every arc into r is good, and every state that an opened state's growth lets cut opens in turn. */
static int open_state(Liveness *l, uint32_t start, int waiting_built) {
    size_t top = 0;
    l->stack[top++] = start;
    while (top) {
        uint32_t r = l->stack[--top];
        if (l->open[r]) continue;
        l->open[r] = 1;
        for (uint32_t k = l->pred_start[r]; k < l->pred_start[r + 1]; k++) {
            uint32_t p = l->pred[k], g = l->pair_group[p], q = l->pair_q[p];
            if (waiting_built) l->pending[p].waiting = 0;
            if (file(l, q, g, r)) return -1;
            int became = grow(l, q, l->group_token + l->group_start[g], l->group_start[g + 1] - l->group_start[g], g);
            if (became < 0) return -1;
            if (became)
                for (uint32_t j = l->cut_pred_start[q]; j < l->cut_pred_start[q + 1]; j++) {
                    uint32_t r0 = l->cut_pred[j];
                    if (l->open[r0]) continue;
                    if (top == l->stack_size) {
                        size_t size = 2 * l->stack_size;
                        uint32_t *stack = PyMem_RawRealloc(l->stack, size * 4);
                        if (!stack) return liveness_fail(l, SOLVE_OUT_OF_MEMORY);
                        l->stack = stack, l->stack_size = size;
                    }
                    l->stack[top++] = r0;
                }
        }
    }
    return 0;
}

/* Which words of a set's bits are not zero, a bit each, made when first asked for at the set's version.  A
 * token's check reads the set's tokens in order until one may follow it, all of them when none does; the
 * good sets of the states inside a character are a few hundred tokens over cl100k's 1,570 words, and
 * stepping over the empty words was half of a schema's liveness solve (checked many times between two
 * changes of the set).  NULL when out of memory. */
static const uint64_t *set_occupied(Liveness *l, uint32_t set) {
    GoodSet *x = &l->sets[set];
    uint32_t summary_words = (l->words + 63) / 64;
    if (!x->occupied && !(x->occupied = PyMem_RawMalloc((size_t)summary_words * 8 + 8))) return NULL;
    if (x->occupied_version != x->version) {
        memset(x->occupied, 0, (size_t)summary_words * 8);
        for (uint32_t w = x->lo; w < x->hi; w++)
            if (x->bits[w]) x->occupied[w >> 6] |= (uint64_t)1 << (w & 63);
        x->occupied_version = x->version;
    }
    return x->occupied;
}

/* May some token of good[r] follow t?  The tokens of good[r] are tried lowest first (after the one that
 * answered t's last check): 1, 0, or -1 out of memory.  Past that first try the answer depends on t and the
 * set's tokens only (the token tried first is not in the set then), so it is remembered by the set's version,
 * and the follower found with it: `answered` comes out as without the memo. */
static int follows(Liveness *l, uint32_t t, uint32_t r) {
    const uint64_t *bits = good_bits(l, r);
    if (!bits) return 0;
    int64_t last = (int64_t)l->answered[t] - 1;
    if (last >= 0 && has_bit(bits, (uint32_t)last)) return 1;
    uint64_t version = l->sets[l->good[r]].version;
    uint64_t key = (version * 0x9E3779B97F4A7C15ull ^ t) * 0xD6E8FEB86659FD93ull;
    CheckMemo *memo = &l->checks[(size_t)(key >> 32) & l->checks_mask];
    if (memo->version == version && memo->t == t) {
        if (memo->answer) l->answered[t] = memo->answer;
        return memo->answer != 0;
    }
    const uint64_t *occupied = set_occupied(l, (uint32_t)l->good[r]);
    if (!occupied) return liveness_fail(l, SOLVE_OUT_OF_MEMORY);
    const uint32_t *token = l->checker->solve_token; /* (the pair test reads token ids) */
    uint32_t answer = 0;
    for (uint32_t k = 0, summary_words = (l->words + 63) / 64; k < summary_words && !answer; k++)
        for (uint64_t y = occupied[k]; y && !answer; y &= y - 1) {
            uint32_t w = k * 64 + (uint32_t)__builtin_ctzll(y);
            for (uint64_t x = bits[w]; x; x &= x - 1) {
                uint32_t v = w * 64 + (uint32_t)__builtin_ctzll(x);
                if ((int64_t)v != last && canonical_pair(l->checker, token[t], token[v])) {
                    answer = v + 1;
                    break;
                }
            }
        }
    *memo = (CheckMemo){version, t, answer};
    if (answer) l->answered[t] = answer;
    return answer != 0;
}

/* The pending tokens of pair p that may now go on to good[r]: filed, added to good[q], the rest kept. */
static int settle(Liveness *l, uint32_t p, uint32_t r) {
    Pending *pending = &l->pending[p];
    uint32_t count = pending->count, found = 0;
    uint32_t *settled = l->settling; /* (pending tokens are some of one group's: room for the longest group) */
    for (uint32_t i = 0; i < count; i++) {
        uint32_t t = pending->tokens[i];
        int follow = follows(l, t, r);
        if (follow < 0) return -1;
        if (follow) settled[found++] = t;
    }
    if (!found) return 0; /* (most checks: nothing allocated for them) */
    /* the tokens left waiting, in their order: the pending ones less the settled, which are among them in order */
    uint32_t kept = 0, *rest = PyMem_RawMalloc((size_t)(count - found) * 4 + 4);
    if (!rest) return liveness_fail(l, SOLVE_OUT_OF_MEMORY);
    for (uint32_t i = 0, j = 0; i < count; i++) {
        if (j < found && pending->tokens[i] == settled[j]) j++;
        else rest[kept++] = pending->tokens[i];
    }
    uint32_t q = l->pair_q[p], batch = (uint32_t)(l->batch_start.length ? l->batch_start.length - 1 : 0);
    if (l->settled.length + found >= INT32_MAX || l->groups + (uint64_t)batch >= UINT32_MAX) {
        PyMem_RawFree(rest);
        return liveness_fail(l, SOLVE_TOO_MANY_SETTLED);
    }
    if ((!l->batch_start.length && ints_push(&l->batch_start, 0)) || ints_reserve(&l->settled, found)) {
        PyMem_RawFree(rest);
        return liveness_fail(l, SOLVE_OUT_OF_MEMORY);
    }
    memcpy(l->settled.data + l->settled.length, settled, (size_t)found * 4);
    l->settled.length += found;
    if (ints_push(&l->batch_start, (int32_t)l->settled.length)) {
        PyMem_RawFree(rest);
        return liveness_fail(l, SOLVE_OUT_OF_MEMORY);
    }
    int rc = file(l, q, l->groups + batch, r);
    if (rc) {
        PyMem_RawFree(rest);
        return rc;
    }
    if (pending->owned) PyMem_RawFree(pending->tokens);
    pending->tokens = rest, pending->count = kept, pending->owned = 1;
    int became = grow(l, q, settled, found, NO_GROUP);
    if (became < 0) return -1;
    if (became)
        for (uint32_t j = l->cut_pred_start[q]; j < l->cut_pred_start[q + 1]; j++)
            if (open_state(l, l->cut_pred[j], 1)) return -1;
    return 0;
}

/* The fixpoint, grown from the finals (ascending) backwards.  It reads and writes only the solve's own memory
 * (the groups were copied in, the checker is read), so it runs without the GIL: a decoder in another thread
 * goes on while a schema is promoted.  The GIL is taken back every 4,096 rounds to see a signal (Ctrl-C).
 * 0, or -1 with l->failure set (a signal: the Python error). */
static int liveness_run(Liveness *l, const uint32_t *finals, size_t final_count, PyThreadState **released) {
    uint32_t n = l->n;
    uint8_t *final = PyMem_RawCalloc(n, 1);
    if (!final) return liveness_fail(l, SOLVE_OUT_OF_MEMORY);
    int rc = 0;
    for (size_t i = 0; i < final_count && !rc; i++) {
        rc = open_state(l, finals[i], 0);
        final[finals[i]] = 1;
    }
    for (uint32_t r = 0; r < n && !rc; r++) /* a chunk may end at r, and the text with it */
        if (l->cut[r] >= 0 && final[l->cut[r]] && !l->open[r]) rc = open_state(l, r, 0);
    PyMem_RawFree(final);
    if (rc) return -1;
    for (uint32_t r = 0; r < n; r++) { /* the arcs into states not open wait for their tokens' checks */
        if (l->open[r]) continue;
        for (uint32_t k = l->pred_start[r]; k < l->pred_start[r + 1]; k++) {
            uint32_t p = l->pred[k], g = l->pair_group[p], q = l->pair_q[p];
            const uint32_t *tokens = l->group_token + l->group_start[g];
            uint32_t count = l->group_start[g + 1] - l->group_start[g];
            for (uint32_t i = 0; i < count; i++)
                if (!has_bit(good_bits(l, q), tokens[i])) {
                    l->pending[p] = (Pending){(uint32_t *)tokens, count, 0, 1};
                    break;
                }
        }
    }
    size_t rounds = 0;
    while (l->queue_length) {
        uint32_t r = l->queue[l->queue_head];
        l->queue_head = l->queue_head + 1 == n ? 0 : l->queue_head + 1;
        l->queue_length--;
        l->queued[r] = 0;
        if (++rounds % 4096 == 0) {
            PyEval_RestoreThread(*released);
            int signalled = PyErr_CheckSignals();
            *released = PyEval_SaveThread();
            if (signalled) return -1;
        }
        if (l->open[r]) continue;
        for (uint32_t k = l->pred_start[r]; k < l->pred_start[r + 1]; k++) {
            uint32_t p = l->pred[k];
            if (l->pending[p].waiting && l->pending[p].count && settle(l, p, r)) return -1;
        }
    }
    return 0;
}

/* A bitset as little-endian bytes, its trailing empty words left out (int.from_bytes reads it as the set). */
static PyObject *bitset_bytes(const uint64_t *bits, uint32_t words) {
    while (words && !bits[words - 1]) words--;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)words * 8);
    if (!out) return NULL;
    unsigned char *bytes = (unsigned char *)PyBytes_AS_STRING(out);
#if PY_LITTLE_ENDIAN
    memcpy(bytes, bits, (size_t)words * 8);
#else
    for (uint32_t w = 0; w < words; w++)
        for (int b = 0; b < 8; b++) bytes[8 * w + b] = (unsigned char)(bits[w] >> (8 * b));
#endif
    return out;
}

/* A set's tokens as bitset_bytes of their ids: the words below solve_base hold tokens at their ids already,
 * the late tokens past it go back to theirs.  `scratch`: a word per id, zero on entry and on exit. */
static PyObject *set_bytes(const Liveness *l, const GoodSet *x, uint64_t *scratch) {
    const PairChecker *c = l->checker;
    uint32_t id_words = c->solve_base / 64; /* (solve_base: the ids rounded up to a word when there are late tokens) */
    if (c->solve_range == c->solve_base) return bitset_bytes(x->bits, l->words);
    uint32_t lo = x->lo, hi = x->hi < id_words ? x->hi : id_words, late_from = x->lo > id_words ? x->lo : id_words;
    if (lo < hi) memcpy(scratch + lo, x->bits + lo, (size_t)(hi - lo) * 8);
    for (uint32_t w = late_from; w < x->hi; w++)
        for (uint64_t y = x->bits[w]; y; y &= y - 1) {
            uint32_t t = c->solve_token[w * 64 + (uint32_t)__builtin_ctzll(y)];
            scratch[t >> 6] |= (uint64_t)1 << (t & 63);
        }
    PyObject *out = bitset_bytes(scratch, id_words);
    if (lo < hi) memset(scratch + lo, 0, (size_t)(hi - lo) * 8);
    for (uint32_t w = late_from; w < x->hi; w++)
        for (uint64_t y = x->bits[w]; y; y &= y - 1) scratch[c->solve_token[w * 64 + (uint32_t)__builtin_ctzll(y)] >> 6] = 0;
    return out;
}

/* good[q] as (numbers, table): table[k] the k-th distinct set as bytes (table[0] the empty one), numbers one
 * little-endian uint32 per state, its set's place in table.  The sets become ints in Python when first read
 * (on_demand.GoodSets): a decoder reads a few states' sets, and making an int of each set (1,000-1,500 of
 * 6-12 kB for a JSON Schema) was a tenth of a small pattern's liveness solve. */
static PyObject *liveness_good(Liveness *l) {
    PyObject *table = PyList_New((Py_ssize_t)l->set_count + 1), *numbers = NULL;
    uint64_t *scratch = PyMem_RawCalloc((size_t)l->checker->solve_base / 64 + 1, 8);
    if (!table || !scratch) {
        Py_XDECREF(table), PyMem_RawFree(scratch);
        return PyErr_NoMemory();
    }
    PyObject *empty = PyBytes_FromStringAndSize("", 0);
    if (!empty) goto fail;
    PyList_SET_ITEM(table, 0, empty);
    for (uint32_t k = 0; k < l->set_count; k++) {
        PyObject *item = l->sets[k].bits ? set_bytes(l, &l->sets[k], scratch) : (Py_INCREF(empty), empty);
        if (!item) goto fail;
        PyList_SET_ITEM(table, (Py_ssize_t)k + 1, item);
    }
    PyMem_RawFree(scratch);
    scratch = NULL;
    if (!(numbers = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)l->n * 4))) goto fail;
    uint8_t *at = (uint8_t *)PyBytes_AS_STRING(numbers);
    for (uint32_t q = 0; q < l->n; q++) {
        put_u32(at + 4 * q, (uint32_t)(l->good[q] + 1)); /* -1, no set yet: the empty one */
    }
    PyObject *result = PyTuple_Pack(2, numbers, table);
    Py_DECREF(numbers), Py_DECREF(table);
    return result;
fail:
    Py_XDECREF(numbers), Py_DECREF(table);
    PyMem_RawFree(scratch);
    return NULL;
}

/* What was filed, as a Filed (filed.h): the pairs in the order found, sorted by state (a counting sort, which
 * keeps each state's order); the groups' token objects move over to it. */
static PyObject *liveness_filed(Liveness *l) {
    Filed *f = PyObject_New(Filed, &FiledType);
    if (!f) return NULL;
    size_t pairs = l->filed.length / 3, batches = l->batch_start.length ? l->batch_start.length - 1 : 0;
    f->states = l->n, f->groups = 0, f->group = NULL;
    f->start = calloc((size_t)l->n + 1, 4), f->code = malloc(pairs * 4 + 4), f->target = malloc(pairs * 4 + 4);
    f->batch_start = malloc((batches + 1) * 4), f->settled = malloc(l->settled.length * 4 + 4);
    if (!f->start || !f->code || !f->target || !f->batch_start || !f->settled) {
        Py_DECREF(f);
        return PyErr_NoMemory();
    }
    const int32_t *entry = l->filed.data;
    for (size_t k = 0; k < pairs; k++) f->start[entry[3 * k] + 1]++;
    for (uint32_t q = 0; q < l->n; q++) f->start[q + 1] += f->start[q];
    for (size_t k = 0; k < pairs; k++) { /* start[q] runs ahead while q's pairs are placed, then is set back */
        uint32_t at = f->start[entry[3 * k]]++;
        f->code[at] = (uint32_t)entry[3 * k + 1], f->target[at] = (uint32_t)entry[3 * k + 2];
    }
    for (uint32_t q = l->n; q > 0; q--) f->start[q] = f->start[q - 1];
    f->start[0] = 0;
    f->batch_start[0] = 0;
    if (batches) memcpy(f->batch_start, l->batch_start.data, (batches + 1) * 4);
    for (size_t i = 0; i < l->settled.length; i++) f->settled[i] = l->checker->solve_token[l->settled.data[i]];
    f->group = l->group_list, f->groups = l->groups; /* (every group's tokens were read: lists_held == groups) */
    l->group_list = NULL, l->lists_held = 0;
    return (PyObject *)f;
}

/* solve_liveness(checker, n, finals, cut, groups) -> (numbers, table, filed): good[q] as liveness_good packs it,
 * and filed; see the file's comment. */
static PyObject *solve_liveness(PyObject *module, PyObject *args) {
    PyObject *checker, *finals, *cut, *groups, *result = NULL;
    Py_ssize_t states;
    if (!PyArg_ParseTuple(args, "O!nO!O!O!:solve_liveness", &PairCheckerType, &checker, &states, &PyList_Type, &finals,
                          &PyList_Type, &cut, &PyList_Type, &groups))
        return NULL;
    if (states < 0 || states != PyList_GET_SIZE(cut)) {
        PyErr_SetString(PyExc_ValueError, "solve_liveness: n must be the number of states, one cut per state");
        return NULL;
    }
    uint32_t n = (uint32_t)states;
    Liveness l = {0};
    l.checker = (PairChecker *)checker;
    if (!checker_ready(l.checker)) return NULL; /* (with its numbering for the solve: made at init) */
    l.n = n, l.words = (l.checker->solve_range + 63) / 64;
    if (n == 0) return Py_BuildValue("(y#[y#][])", "", (Py_ssize_t)0, "", (Py_ssize_t)0);
    /* Only ints, arrays of ids, lists and tuples of those are made here, hundreds of thousands of them for a large
     * pattern: no cycle to collect, and the collections their allocations would trigger scan the whole heap
     * now and then (a tenth of a maxLength: 20 string's solve). */
    int collecting = PyGC_Disable();
    l.good = PyMem_RawMalloc((size_t)n * sizeof(int32_t));
    l.fresh = PyMem_RawMalloc((size_t)l.checker->solve_range * 4 + 4), l.marked = PyMem_RawCalloc(l.words + 1, 8);
    l.open = PyMem_RawCalloc(n, 1), l.queued = PyMem_RawCalloc(n, 1), l.queue = PyMem_RawMalloc((size_t)n * 4);
    l.stack_size = 64, l.stack = PyMem_RawMalloc(l.stack_size * 4);
    l.answered = PyMem_RawCalloc((size_t)l.checker->solve_range + 1, 4); /* (zeroed: a small pattern touches few) */
    if (!l.good || !l.fresh || !l.marked || !l.open || !l.queued || !l.queue || !l.stack || !l.answered) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    for (uint32_t q = 0; q < n; q++) l.good[q] = -1;
    if (table_grow(&l)) goto done;
    if (liveness_read_cut(&l, cut) || liveness_read_groups(&l, groups) || liveness_group_words(&l)) goto done;
    uint32_t longest = 0; /* (a check settles tokens of one group, which may repeat them: its room is the longest's) */
    for (uint32_t g = 0; g < l.groups; g++)
        if (l.group_start[g + 1] - l.group_start[g] > longest) longest = l.group_start[g + 1] - l.group_start[g];
    if (!(l.settling = PyMem_RawMalloc((size_t)longest * 4 + 4))) {
        PyErr_NoMemory();
        goto done;
    }
    size_t memo_size = 64;
    while (memo_size < 2 * (size_t)l.pairs && memo_size < ((size_t)1 << 15)) memo_size *= 2;
    l.memo = PyMem_RawMalloc(memo_size * sizeof(GrowMemo)), l.memo_mask = memo_size - 1;
    if (!l.memo) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t k = 0; k < memo_size; k++) l.memo[k] = (GrowMemo){FREE_ENTRY, 0, NO_GROUP, 0, 0, 0};
    size_t checks_size = 1024; /* (zeroed pages: version 0 is no set's) */
    while (checks_size < (size_t)l.pairs && checks_size < ((size_t)1 << 16)) checks_size *= 2;
    if (!(l.checks = PyMem_RawCalloc(checks_size, sizeof(CheckMemo)))) {
        PyErr_NoMemory();
        goto done;
    }
    l.checks_mask = checks_size - 1;

    size_t final_count = (size_t)PyList_GET_SIZE(finals);
    uint32_t *final_states = PyMem_RawMalloc(final_count * 4 + 4);
    if (!final_states) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t i = 0; i < final_count; i++) /* ascending, as the caller sorted them */
        if (state_of(PyList_GET_ITEM(finals, (Py_ssize_t)i), n, &final_states[i])) {
            PyMem_RawFree(final_states);
            goto done;
        }
    PyThreadState *released = PyEval_SaveThread();
    int failed = liveness_run(&l, final_states, final_count, &released);
    PyEval_RestoreThread(released);
    PyMem_RawFree(final_states);
    if (failed) goto done;
    PyObject *good = liveness_good(&l), *filed = good ? liveness_filed(&l) : NULL;
    if (filed) result = PyTuple_Pack(3, PyTuple_GET_ITEM(good, 0), PyTuple_GET_ITEM(good, 1), filed);
    Py_XDECREF(good), Py_XDECREF(filed);
done:
    if (!result) liveness_raise(&l);
    liveness_free(&l);
    if (collecting) PyGC_Enable();
    return result;
}

#endif
