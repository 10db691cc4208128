/* The canonical subsets of pre-tokenized promotion: the compiled twin of shared_canonical_subsets in
 * bpefst/promotion/pretokenized.py, which explains the construction.
 *
 * A configuration is (q, W): lattice state q and the tokens of q's row that the chunk's previous token
 * bans, W = BANNED(u) ∩ out(q).  Reading t on q -t-> r leads to (r, BANNED(t) ∩ out(r)) and, where r may
 * cut to r', also to (r', {}).  A state is a set of configurations; its arcs are the shared rows of its
 * lattice states minus their W, with overrides where configurations over different rows read one token.
 *
 * Everything is over T, the tokens the lattice reads, numbered by ascending id (bit i: the i-th of them):
 *  - BANNED(t) ∩ T of each t of T is read off the merges of t's right spine and the left spines of T's own
 *    tokens (the equation of bpefst/promotion/banned_subset.py, subset_classes); tokens with equal sets
 *    share a class, and each class's set is one dense bitset;
 *  - out(q), the tokens of q's row, is a dense bitset (equal ones held once);
 *  - W is never stored: for each (class, out set) that an arc joins, the first class whose set gives the
 *    same W over that out set is its representative (subset_reps, a pass over the words of the two sets,
 *    class by class), and a configuration is (q, representative).
 * So an arc of the lattice costs a table lookup by (r, class), and the work per class is a few passes over
 * words.
 *
 * The pure loop's order is followed step for step (states in the order numbered; a state's configurations
 * by q, then W read as an int; a row's tokens in the lattice's order; pending and overridden tokens
 * ascending), so both number the same states alike and the tests compare the two results whole.  The trim
 * searches reachability only when some state has overrides: without them every state numbered is read by
 * the arc it was numbered for, and the pure trim finds every state useful.
 *
 * The build runs without the GIL between reading the lattice and making the result; its memory is malloc'd
 * (or mapped, for the two large tables).
 */
#ifndef BPEFST_SUBSETS_H
#define BPEFST_SUBSETS_H

#include "banned.h"
#include "validate.h"

enum { SUBSETS_NO_MEMORY = -1, SUBSETS_STATE_LIMIT = -2, SUBSETS_ARC_LIMIT = -3 };

static uint64_t subsets_mix(uint64_t x) { /* splitmix64's finalizer */
    x ^= x >> 30, x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27, x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static inline int bit_test(const uint64_t *bits, uint32_t b) { return (int)((bits[b >> 6] >> (b & 63)) & 1); }

/* ---------------------------------------------------------------- small containers (malloc'd) */

typedef struct {
    uint32_t *items;
    size_t count, capacity;
} U32s;

static int u32s_reserve(U32s *a, size_t more) {
    if (a->capacity - a->count >= more) return 0;
    size_t capacity = a->capacity ? a->capacity : 64;
    while (capacity - a->count < more) capacity *= 2;
    uint32_t *items = realloc(a->items, capacity * sizeof(uint32_t));
    if (!items) return -1;
    a->items = items, a->capacity = capacity;
    return 0;
}

static int u32s_push(U32s *a, uint32_t value) {
    if (a->count == a->capacity && u32s_reserve(a, 1)) return -1;
    a->items[a->count++] = value;
    return 0;
}

typedef struct {
    uint64_t *items;
    size_t count, capacity;
} U64s;

static int u64s_push(U64s *a, uint64_t value) {
    if (a->count == a->capacity) {
        size_t capacity = a->capacity ? 2 * a->capacity : 64;
        uint64_t *items = realloc(a->items, capacity * sizeof(uint64_t));
        if (!items) return -1;
        a->items = items, a->capacity = capacity;
    }
    a->items[a->count++] = value;
    return 0;
}

/* Ids by hash, open addressing: the caller probes a hash's slots and compares ids itself.  A slot holds
 * both, so a probe is one cache line. */
typedef struct {
    uint64_t hash;
    uint32_t id; /* id + 1; 0: a free slot */
} IdSlot;

typedef struct {
    IdSlot *slots;
    size_t mask, count;
} IdTable;

static int idtable_init(IdTable *t, size_t expected) {
    size_t size = 64;
    while (size < 2 * expected) size *= 2;
    t->slots = calloc(size, sizeof(IdSlot));
    t->mask = size - 1, t->count = 0;
    return t->slots ? 0 : -1;
}

static void idtable_free(IdTable *t) { free(t->slots), t->slots = NULL; }

static int idtable_add(IdTable *t, uint64_t hash, uint32_t id) {
    if (2 * (t->count + 1) > t->mask + 1) {
        IdTable bigger;
        if (idtable_init(&bigger, t->mask + 1)) return -1;
        for (size_t s = 0; s <= t->mask; s++)
            if (t->slots[s].id) {
                size_t at = t->slots[s].hash & bigger.mask;
                while (bigger.slots[at].id) at = (at + 1) & bigger.mask;
                bigger.slots[at] = t->slots[s];
            }
        bigger.count = t->count;
        idtable_free(t);
        *t = bigger;
    }
    size_t at = hash & t->mask;
    while (t->slots[at].id) at = (at + 1) & t->mask;
    t->slots[at] = (IdSlot){hash, id + 1}, t->count++;
    return 0;
}

#define IDTABLE_PROBE(t, h, slot) for (size_t slot = (h) & (t)->mask; (t)->slots[slot].id; slot = (slot + 1) & (t)->mask)

/* ---------------------------------------------------------------- the lattice, read from `filed` */

typedef struct {
    uint32_t states, tokens, words, vocabulary, start;
    uint32_t *row_start;  /* states + 1 */
    uint32_t *row_bit;    /* per arc: its token's bit */
    uint32_t *row_target; /* per arc */
    uint32_t *token_of;   /* bit -> token */
    int32_t *bit_of;      /* token -> bit, or -1 */
    int32_t *cut;         /* q -> the state q may cut to, or -1 */
    uint8_t *final;
} SubsetLattice;

static void subset_lattice_free(SubsetLattice *l) {
    free(l->row_start), free(l->row_bit), free(l->row_target), free(l->token_of), free(l->bit_of), free(l->cut);
    free(l->final);
    memset(l, 0, sizeof(*l));
}

/* A state number of `what` in [0, states), or -1 with an exception set. */
static long subset_state_of(PyObject *item, uint32_t states, const char *what) {
    long value = PyLong_Check(item) ? PyLong_AsLong(item) : -1;
    if (value == -1 && PyErr_Occurred()) return -1;
    if (value < 0 || (unsigned long)value >= states) {
        PyErr_Format(PyExc_ValueError, "canonical_subsets: %s must be lattice states", what);
        return -1;
    }
    return value;
}

/* The rows of `filed` (filed[q] = [(tokens, r), ...], the liveness solve's groups: tokens a list of ints or
 * an array('I')), each token kept at its first place in its row, as OnDemandCanonical.lattice_row reads them. */
static int subset_rows_read(SubsetLattice *l, PyObject *filed, U32s *tokens, U32s *targets) {
    uint32_t *seen = calloc(l->vocabulary, sizeof(uint32_t)); /* token -> q + 1 of the last row it was in */
    U32s chunk = {0};
    int rc = -1;
    if (!seen) {
        PyErr_NoMemory();
        return -1;
    }
    for (uint32_t q = 0; q < l->states; q++) {
        l->row_start[q] = (uint32_t)tokens->count;
        PyObject *row = PySequence_GetItem(filed, q), *pairs = row ? PySequence_Fast(row, "filed[q] must be a list") : NULL;
        Py_XDECREF(row);
        if (!pairs) goto done;
        for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(pairs); k++) {
            PyObject *pair = PySequence_Fast_GET_ITEM(pairs, k);
            if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
                PyErr_SetString(PyExc_TypeError, "canonical_subsets: filed[q] holds (tokens, r) pairs");
                Py_DECREF(pairs);
                goto done;
            }
            long r = subset_state_of(PyTuple_GET_ITEM(pair, 1), l->states, "the targets in filed");
            Py_ssize_t count = r < 0 ? -1 : token_count(PyTuple_GET_ITEM(pair, 0));
            if (count < 0 || (chunk.count = 0, u32s_reserve(&chunk, (size_t)count + 1)) ||
                token_copy(PyTuple_GET_ITEM(pair, 0), count, l->vocabulary, chunk.items)) {
                if (!PyErr_Occurred()) PyErr_NoMemory();
                Py_DECREF(pairs);
                goto done;
            }
            if (u32s_reserve(tokens, (size_t)count) || u32s_reserve(targets, (size_t)count)) {
                PyErr_NoMemory();
                Py_DECREF(pairs);
                goto done;
            }
            for (Py_ssize_t i = 0; i < count; i++) {
                uint32_t t = chunk.items[i];
                if (seen[t] == q + 1) continue;
                seen[t] = q + 1;
                tokens->items[tokens->count++] = t, targets->items[targets->count++] = (uint32_t)r;
            }
        }
        Py_DECREF(pairs);
        if (tokens->count >= UINT32_MAX / 2) {
            PyErr_SetString(PyExc_ValueError, "canonical_subsets: the lattice has too many arcs");
            goto done;
        }
    }
    l->row_start[l->states] = (uint32_t)tokens->count;
    rc = 0;
done:
    free(seen), free(chunk.items);
    return rc;
}

static int subset_lattice_read(SubsetLattice *l, PyObject *filed, PyObject *cut, PyObject *finals, Py_ssize_t start,
                               uint32_t vocabulary) {
    Py_ssize_t states = PySequence_Size(filed);
    if (states < 0) return -1;
    if (states == 0 || states >= (1 << 30) || PySequence_Size(cut) != states || start < 0 || start >= states) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "canonical_subsets: filed and cut need one entry per lattice state, start one of them");
        return -1;
    }
    l->states = (uint32_t)states, l->vocabulary = vocabulary, l->start = (uint32_t)start;
    l->row_start = malloc(((size_t)states + 1) * sizeof(uint32_t));
    l->cut = malloc((size_t)states * sizeof(int32_t)), l->final = calloc((size_t)states, 1);
    l->bit_of = malloc((size_t)vocabulary * sizeof(int32_t));
    U32s tokens = {0}, targets = {0};
    if (!l->row_start || !l->cut || !l->final || !l->bit_of) goto no_memory;
    for (uint32_t q = 0; q < l->states; q++) {
        PyObject *item = PySequence_GetItem(cut, q);
        if (!item) goto failed;
        long after = item == Py_None ? -1 : subset_state_of(item, l->states, "cuts");
        Py_DECREF(item);
        if (after < 0 && PyErr_Occurred()) goto failed;
        l->cut[q] = (int32_t)after;
    }
    PyObject *iterator = PyObject_GetIter(finals), *item;
    if (!iterator) goto failed;
    while ((item = PyIter_Next(iterator))) {
        long q = subset_state_of(item, l->states, "finals");
        Py_DECREF(item);
        if (q < 0) break;
        l->final[q] = 1;
    }
    Py_DECREF(iterator);
    if (PyErr_Occurred() || subset_rows_read(l, filed, &tokens, &targets)) goto failed;
    /* T: the tokens read, ascending */
    for (uint32_t t = 0; t < vocabulary; t++) l->bit_of[t] = -1;
    for (size_t k = 0; k < tokens.count; k++) l->bit_of[tokens.items[k]] = 0;
    uint32_t n = 0;
    for (uint32_t t = 0; t < vocabulary; t++)
        if (l->bit_of[t] == 0) l->bit_of[t] = (int32_t)n++;
    l->token_of = malloc(((size_t)n + 1) * sizeof(uint32_t));
    if (!l->token_of) goto no_memory;
    for (uint32_t t = 0; t < vocabulary; t++)
        if (l->bit_of[t] >= 0) l->token_of[l->bit_of[t]] = t;
    for (size_t k = 0; k < tokens.count; k++) tokens.items[k] = (uint32_t)l->bit_of[tokens.items[k]];
    l->tokens = n, l->words = n / 64 + 1;
    l->row_bit = tokens.items, l->row_target = targets.items;
    if (!l->row_bit) l->row_bit = malloc(sizeof(uint32_t)), l->row_target = malloc(sizeof(uint32_t));
    return l->row_bit && l->row_target ? 0 : (PyErr_NoMemory(), -1);
no_memory:
    PyErr_NoMemory();
failed:
    free(tokens.items), free(targets.items);
    return -1;
}

/* ---------------------------------------------------------------- the build */

typedef struct {
    uint32_t q;
    int32_t cls;   /* the representative class of W on out(q) (w_rep); -1: W is empty */
    uint32_t size; /* |W|, counted when first asked for (config_size); UNCOUNTED until then */
} SubsetConfig;

#define UNCOUNTED UINT32_MAX

typedef struct {
    uint32_t config, state; /* of the arc -t-> r for the tokens t of one class: (r, W), and the state; each + 1, 0: not yet */
} ArcKey;

typedef struct {
    const BannedIndex *index;
    SubsetLattice l;
    uint32_t words;
    /* classes: BANNED(t) ∩ T, one per distinct set */
    uint32_t classes, class_capacity, *class_of;
    uint64_t *class_bits;
    size_t class_mapped; /* (zeroed_table's) */
    IdTable class_table;
    /* out sets: per state its row's bits, equal ones held once */
    uint32_t outs, *out_of;
    uint64_t *out_bits;
    /* configurations */
    SubsetConfig *configs;
    uint32_t config_count, config_capacity;
    IdTable config_table;
    int32_t *empty_config; /* q -> the configuration (q, {}), or -1 */
    /* (class, r) -> ArcKey: a table by r and class (key_grid) where it fits in key_grid_limit bytes, else keyed by
     * class << 32 | r */
    ArcKey *key_grid, *keys;
    size_t key_grid_mapped;
    uint32_t key_capacity;
    U64s key_of;
    IdTable key_table;
    /* per class, the out sets of its arcs' targets, ascending, and W's representative over each (subset_reps) */
    uint32_t *pair_start, *pair_out;
    int32_t *pair_rep;
    /* states: their configurations in order */
    U32s state_start, state_config;
    IdTable state_table;
    /* per lattice state and arc */
    int32_t *resolved;  /* per arc: the state its token leads to from the shared row, or -1 */
    uint8_t *visited;   /* per q */
    U32s *pending;      /* per q: arcs banned so far by every configuration over q, by bit ascending */
    uint64_t *by_bit;   /* per arc: bit << 32 | arc, each row's arcs sorted (when by_bit_ready[q]) */
    uint8_t *by_bit_ready;
    /* overrides: per state, (bit, state or -1) ascending by bit */
    U32s over_start, over_bit, over_target;
    IdTable shared_table; /* q1 << 32 | q2 -> its shared bits in shared_bits */
    U32s shared_start, shared_bits;
    U32s trimmed; /* arcs whose target the trim found dead, ascending */
    uint64_t *word_key; /* per word: the key of its share of a set's hash (nh_word) */
    uint64_t *scratch, *scratch2;
    U32s list, list2, list3;
    long long max_states, max_arcs, at_least;
    size_t key_grid_limit;
} SubsetBuild;

static void subset_build_free(SubsetBuild *b) {
    free(b->class_of), free_table(b->class_bits, b->class_mapped), idtable_free(&b->class_table);
    free(b->out_of), free(b->out_bits);
    free(b->configs), idtable_free(&b->config_table), free(b->empty_config);
    free_table(b->key_grid, b->key_grid_mapped), free(b->keys), free(b->key_of.items), idtable_free(&b->key_table);
    free(b->pair_start), free(b->pair_out), free(b->pair_rep);
    free(b->state_start.items), free(b->state_config.items), idtable_free(&b->state_table);
    free(b->resolved), free(b->visited), free(b->by_bit), free(b->by_bit_ready);
    if (b->pending)
        for (uint32_t q = 0; q < b->l.states; q++) free(b->pending[q].items);
    free(b->pending);
    free(b->over_start.items), free(b->over_bit.items), free(b->over_target.items);
    idtable_free(&b->shared_table), free(b->shared_start.items), free(b->shared_bits.items);
    free(b->word_key), free(b->scratch), free(b->scratch2), free(b->list.items), free(b->list2.items), free(b->list3.items), free(b->trimmed.items);
    subset_lattice_free(&b->l);
    memset(b, 0, sizeof(*b));
}

static const uint64_t *class_set(const SubsetBuild *b, int32_t c) { return b->class_bits + (size_t)c * b->words; }
static const uint64_t *out_set(const SubsetBuild *b, uint32_t q) { return b->out_bits + (size_t)b->out_of[q] * b->words; }

static int by_value(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    uint32_t bound, bit;
} SubsetFollower;

static int by_bound_descending(const void *a, const void *b) {
    uint32_t x = ((const SubsetFollower *)a)->bound, y = ((const SubsetFollower *)b)->bound;
    return x > y ? -1 : x < y;
}

/* Set bits of a word, without the libgcc call __builtin_popcountll makes where the target has no instruction. */
static inline uint32_t popcount64(uint64_t x) {
    x -= (x >> 1) & 0x5555555555555555ull;
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return (uint32_t)((x * 0x0101010101010101ull) >> 56);
}

/* A word's share of a bitset's hash: NH (Black et al., UMAC), the halves of the word plus the word's key
 * multiplied; 32-bit multiplies, which vectorize.  Equal hashes are compared word by word. */
static inline uint64_t nh_word(uint64_t word, uint64_t key) {
    return (uint64_t)(uint32_t)((uint32_t)word + (uint32_t)key) * (uint32_t)((uint32_t)(word >> 32) + (uint32_t)(key >> 32));
}

static uint64_t set_hash(const SubsetBuild *b, const uint64_t *set) {
    uint64_t sum = 0;
    for (uint32_t w = 0; w < b->words; w++) sum += nh_word(set[w], b->word_key[w]);
    return subsets_mix(sum);
}

#define CLASS_ROWS ((size_t)64 << 20) /* bytes of class sets made room for at first */

/* The class of the set in `set`, whose hash is `hash` (new when no class has it). */
static int64_t class_intern(SubsetBuild *b, const uint64_t *set, uint64_t hash) {
    IDTABLE_PROBE(&b->class_table, hash, slot) {
        uint32_t c = b->class_table.slots[slot].id - 1;
        if (b->class_table.slots[slot].hash == hash && !memcmp(class_set(b, (int32_t)c), set, b->words * sizeof(uint64_t)))
            return c;
    }
    if (b->classes == b->class_capacity) { /* (on huge pages where the system gives them: fresh pages were most of
                                              * this step's time, a fault per 4 kB) */
        size_t row = b->words * sizeof(uint64_t), capacity = b->class_capacity ? 2 * (size_t)b->class_capacity : CLASS_ROWS / row;
        if (capacity > (size_t)b->l.tokens + 1) capacity = (size_t)b->l.tokens + 1; /* (a class per token at most) */
        if (capacity < 16) capacity = 16;
        size_t mapped;
        uint64_t *bits = zeroed_table(capacity * row, &mapped);
        if (!bits) return -1;
        if (b->class_bits) memcpy(bits, b->class_bits, b->classes * row);
        free_table(b->class_bits, b->class_mapped);
        b->class_bits = bits, b->class_mapped = mapped, b->class_capacity = (uint32_t)capacity;
    }
    uint32_t c = b->classes++;
    memcpy(b->class_bits + (size_t)c * b->words, set, b->words * sizeof(uint64_t));
    return idtable_add(&b->class_table, hash, c) ? -1 : (int64_t)c;
}

/* The followers of each y: the tokens of T (bits) whose left spine holds y, with the rank of y's parent
 * there (NO_BOUND at the top), by that bound descending; start[y] .. start[y + 1] in `followers`. */
typedef struct {
    uint32_t *start;
    SubsetFollower *followers;
} SubsetFollowers;

static int subset_followers(const BannedIndex *index, const SubsetLattice *l, SubsetFollowers *f) {
    uint32_t vocabulary = l->vocabulary, *start = f->start = calloc((size_t)vocabulary + 1, sizeof(uint32_t));
    if (!start) return -1;
    size_t entries = 0;
    for (uint32_t i = 0; i < l->tokens; i++)
        for (int32_t y = (int32_t)l->token_of[i]; y >= 0; y = index->left[y]) start[y + 1]++, entries++;
    for (uint32_t y = 0; y < vocabulary; y++) start[y + 1] += start[y];
    SubsetFollower *followers = f->followers = malloc((entries + 1) * sizeof(SubsetFollower));
    if (!followers) return -1;
    for (uint32_t i = 0; i < l->tokens; i++) {
        uint32_t bound = NO_BOUND;
        for (int32_t y = (int32_t)l->token_of[i]; y >= 0; y = index->left[y]) {
            followers[start[y]++] = (SubsetFollower){bound, i};
            bound = (uint32_t)index->rank[y];
        }
    }
    for (uint32_t y = vocabulary; y > 0; y--) start[y] = start[y - 1]; /* (filling moved each start to its end) */
    start[0] = 0;
    for (uint32_t y = 0; y < vocabulary; y++)
        if (start[y + 1] - start[y] > 1) qsort(followers + start[y], start[y + 1] - start[y], sizeof(SubsetFollower), by_bound_descending);
    return 0;
}

/* One node on the walk of subset_classes: how far it has got, and the bits it added to the union. */
typedef struct {
    uint32_t x, merge, parent; /* the node, its next merge, its next right parent */
    U32s added;
} ClassFrame;

static inline uint64_t bit_key(uint32_t bit) { return subsets_mix(bit + 0x3c6ef372fe94f82bull); }

/* BANNED(t) ∩ T of every t of T, as classes: the equation of banned_subset.restricted_banned,
 *
 *     BANNED(u) = below(u, ∞) | G(u),   G(w) = below(right(w), rank(w)) | G(right(w)),   G(a byte) = {},
 *     below(x, limit) = the union of V_m over the merges m = (x, y) with m < limit,
 *
 * where V_m is the tokens of T whose left spine holds y under a parent built at m or later: a prefix of
 * y's followers.  The nodes of T's right spines form a forest by w -> right(w); it is walked depth first
 * from its bytes, each node x sweeping its merges once by rank, so that the bits set so far, over the
 * nodes on the walk's stack, are G(x) | below(x, the sweep's limit): at each right parent w of x (by rank)
 * they are G(w), and w is walked then; at the sweep's end they are BANNED(x), for x in T.  One bitset
 * holds them, with a hash kept as bits come and go (the XOR of their keys), and each node takes back the
 * bits it added when it is done. */
static int subset_classes(SubsetBuild *b) {
    const BannedIndex *index = b->index;
    const SubsetLattice *l = &b->l;
    uint32_t vocabulary = l->vocabulary;
    SubsetFollowers f = {0};
    uint32_t *parent_start = calloc((size_t)vocabulary + 1, sizeof(uint32_t)); /* x -> the nodes w with right(w) = x */
    uint8_t *on_spine = calloc(vocabulary, 1);
    uint32_t *parents = NULL;
    ClassFrame *stack = NULL;
    size_t depth = 0, levels = 0;
    uint64_t *bits = b->scratch, hash = 0;
    int rc = -1;
    b->class_of = malloc(((size_t)l->tokens + 1) * sizeof(uint32_t));
    if (!parent_start || !on_spine || !b->class_of || idtable_init(&b->class_table, 1024) || subset_followers(index, l, &f))
        goto done;
    size_t nodes = 0;
    for (uint32_t i = 0; i < l->tokens; i++)
        for (int32_t x = (int32_t)l->token_of[i]; x >= 0 && !on_spine[x]; x = index->right[x]) on_spine[x] = 1, nodes++;
    parents = malloc((nodes + 1) * sizeof(uint32_t));
    if (!parents) goto done;
    for (uint32_t x = 0; x < vocabulary; x++)
        if (on_spine[x] && index->right[x] >= 0) parent_start[index->right[x] + 1]++;
    for (uint32_t x = 0; x < vocabulary; x++) parent_start[x + 1] += parent_start[x];
    { /* each node's right parents by rank */
        uint32_t *fill = malloc(((size_t)vocabulary + 1) * sizeof(uint32_t));
        if (!fill) goto done;
        memcpy(fill, parent_start, ((size_t)vocabulary + 1) * sizeof(uint32_t));
        for (uint32_t w = 0; w < vocabulary; w++)
            if (on_spine[w] && index->right[w] >= 0) parents[fill[index->right[w]]++] = w;
        free(fill);
        for (uint32_t x = 0; x < vocabulary; x++)
            for (uint32_t p = parent_start[x] + 1; p < parent_start[x + 1]; p++) { /* (nearly sorted already) */
                uint32_t w = parents[p], q = p;
                for (; q > parent_start[x] && index->rank[parents[q - 1]] > index->rank[w]; q--) parents[q] = parents[q - 1];
                parents[q] = w;
            }
    }
    for (uint32_t root = 0; root < vocabulary; root++) {
        if (!on_spine[root] || index->right[root] >= 0) continue;
        uint32_t x = root; /* the node entered next, or UINT32_MAX: go on with the top of the stack */
        for (;;) {
            if (x != UINT32_MAX) {
                if (depth == levels) {
                    ClassFrame *more = realloc(stack, (levels + 1) * sizeof(ClassFrame));
                    if (!more) goto done;
                    stack = more;
                    stack[levels++].added = (U32s){0};
                }
                ClassFrame *frame = &stack[depth++];
                frame->x = x, frame->merge = index->merge_start[x], frame->parent = parent_start[x], frame->added.count = 0;
            }
            if (!depth) break;
            ClassFrame *frame = &stack[depth - 1];
            uint32_t node = frame->x, stop = index->merge_start[node + 1];
            int last = frame->parent == parent_start[node + 1]; /* every parent walked: the sweep's end */
            uint64_t limit = last ? UINT64_MAX : (uint64_t)(uint32_t)index->rank[parents[frame->parent]];
            for (; frame->merge < stop && index->merge_rank[frame->merge] < limit; frame->merge++) {
                uint32_t y = index->merge_right[frame->merge], m = index->merge_rank[frame->merge];
                for (uint32_t k = f.start[y]; k < f.start[y + 1] && f.followers[k].bound >= m; k++) {
                    uint32_t bit = f.followers[k].bit;
                    uint64_t mask = 1ull << (bit & 63);
                    if (bits[bit >> 6] & mask) continue;
                    bits[bit >> 6] |= mask, hash ^= bit_key(bit);
                    if (u32s_push(&frame->added, bit)) goto done;
                }
            }
            if (!last) {
                x = parents[frame->parent++];
                continue;
            }
            if (l->bit_of[node] >= 0) {
                int64_t c = class_intern(b, bits, hash);
                if (c < 0) goto done;
                b->class_of[l->bit_of[node]] = (uint32_t)c;
            }
            for (size_t k = 0; k < frame->added.count; k++) {
                uint32_t bit = frame->added.items[k];
                bits[bit >> 6] &= ~(1ull << (bit & 63)), hash ^= bit_key(bit);
            }
            depth--, x = UINT32_MAX;
        }
    }
    rc = 0;
done:
    for (size_t k = 0; k < levels; k++) free(stack[k].added.items);
    if (rc) memset(bits, 0, b->words * sizeof(uint64_t));
    free(stack), free(f.start), free(f.followers), free(parent_start), free(on_spine), free(parents);
    return rc;
}

/* out(q) of every q, equal sets held once. */
static int subset_outs(SubsetBuild *b) {
    const SubsetLattice *l = &b->l;
    IdTable table;
    uint32_t capacity = 16;
    b->out_of = malloc((size_t)l->states * sizeof(uint32_t));
    b->out_bits = malloc((size_t)capacity * b->words * sizeof(uint64_t));
    uint64_t *hashes = malloc(capacity * sizeof(uint64_t));
    if (idtable_init(&table, 64) || !b->out_of || !b->out_bits || !hashes) goto failed;
    uint64_t *scratch = b->scratch;
    for (uint32_t q = 0; q < l->states; q++) {
        for (uint32_t k = l->row_start[q]; k < l->row_start[q + 1]; k++) scratch[l->row_bit[k] >> 6] |= 1ull << (l->row_bit[k] & 63);
        uint64_t hash = set_hash(b, scratch);
        int64_t found = -1;
        IDTABLE_PROBE(&table, hash, slot) {
            uint32_t o = table.slots[slot].id - 1;
            if (hashes[o] == hash && !memcmp(b->out_bits + (size_t)o * b->words, scratch, b->words * sizeof(uint64_t))) {
                found = o;
                break;
            }
        }
        if (found < 0) {
            if (b->outs == capacity) {
                capacity *= 2;
                uint64_t *bits = realloc(b->out_bits, (size_t)capacity * b->words * sizeof(uint64_t));
                if (bits) b->out_bits = bits;
                uint64_t *more = realloc(hashes, capacity * sizeof(uint64_t));
                if (more) hashes = more;
                if (!bits || !more) goto failed;
            }
            found = b->outs++;
            memcpy(b->out_bits + (size_t)found * b->words, scratch, b->words * sizeof(uint64_t));
            hashes[found] = hash;
            if (idtable_add(&table, hash, (uint32_t)found)) goto failed;
        }
        b->out_of[q] = (uint32_t)found;
        memset(scratch, 0, b->words * sizeof(uint64_t));
    }
    idtable_free(&table), free(hashes);
    return 0;
failed:
    idtable_free(&table), free(hashes);
    return -1;
}

/* The representative of W = set(c) ∩ out set o for every (class c, out set o) of an arc (a token of class c
 * into a state with out set o): the first class, in this order, whose set gives the same W over o; -1 for
 * an empty W.  The pairs are taken class by class, so each class's set is read once while it is in the
 * cache; a W is hashed once and compared with the representative's where hashes over o agree. */
/* The NH sum of set ∩ out (any: whether it is not empty). */
static uint64_t w_sum(const uint64_t *set, const uint64_t *out, const uint64_t *key, uint32_t words, uint64_t *any) {
    uint64_t sum = 0, seen = 0;
    for (uint32_t w = 0; w < words; w++) {
        uint64_t both = set[w] & out[w];
        seen |= both, sum += nh_word(both, key[w]);
    }
    *any = seen;
    return sum;
}

static int subset_reps(SubsetBuild *b) {
    const SubsetLattice *l = &b->l;
    size_t arcs = l->row_start[l->states];
    uint32_t outs = b->outs, classes = b->classes, words = b->words;
    uint32_t *out_start = calloc((size_t)outs + 1, sizeof(uint32_t)), *by_out = malloc((arcs + 1) * sizeof(uint32_t));
    uint32_t *mark = calloc(classes, sizeof(uint32_t));
    U32s pair_class = {0}, pair_out = {0};
    IdTable w_table = {0};
    U32s w_class = {0}, w_out = {0};
    int rc = -1;
    b->pair_start = calloc((size_t)classes + 1, sizeof(uint32_t));
    if (!out_start || !by_out || !mark || !b->pair_start || idtable_init(&w_table, 1024)) goto done;
    /* the arcs by their target's out set, then the distinct (class, out set) pairs in out set order */
    for (size_t k = 0; k < arcs; k++) out_start[b->out_of[l->row_target[k]] + 1]++;
    for (uint32_t o = 0; o < outs; o++) out_start[o + 1] += out_start[o];
    for (size_t k = 0; k < arcs; k++) by_out[out_start[b->out_of[l->row_target[k]]]++] = (uint32_t)k;
    for (uint32_t o = outs; o > 0; o--) out_start[o] = out_start[o - 1];
    out_start[0] = 0;
    for (uint32_t o = 0; o < outs; o++)
        for (uint32_t i = out_start[o]; i < out_start[o + 1]; i++) {
            uint32_t c = b->class_of[l->row_bit[by_out[i]]];
            if (mark[c] == o + 1) continue;
            mark[c] = o + 1;
            if (u32s_push(&pair_class, c) || u32s_push(&pair_out, o)) goto done;
        }
    /* by class (stable: each class's out sets ascending) */
    for (size_t p = 0; p < pair_class.count; p++) b->pair_start[pair_class.items[p] + 1]++;
    for (uint32_t c = 0; c < classes; c++) b->pair_start[c + 1] += b->pair_start[c];
    b->pair_out = malloc((pair_class.count + 1) * sizeof(uint32_t));
    b->pair_rep = malloc((pair_class.count + 1) * sizeof(int32_t));
    if (!b->pair_out || !b->pair_rep) goto done;
    memcpy(mark, b->pair_start, classes * sizeof(uint32_t));
    for (size_t p = 0; p < pair_class.count; p++) b->pair_out[mark[pair_class.items[p]]++] = pair_out.items[p];
    const uint64_t *key = b->word_key;
    for (uint32_t c = 0; c < classes; c++) {
        const uint64_t *set = class_set(b, (int32_t)c);
        for (uint32_t p = b->pair_start[c]; p < b->pair_start[c + 1]; p++) {
            uint32_t o = b->pair_out[p];
            const uint64_t *out = b->out_bits + (size_t)o * words;
            uint64_t any, sum = w_sum(set, out, key, words, &any);
            int64_t rep = -1;
            if (any) {
                uint64_t hash = subsets_mix(sum ^ o);
                IDTABLE_PROBE(&w_table, hash, slot) {
                    uint32_t other = w_table.slots[slot].id - 1;
                    if (w_table.slots[slot].hash != hash || w_out.items[other] != o) continue;
                    const uint64_t *set2 = class_set(b, (int32_t)w_class.items[other]);
                    uint32_t w = 0;
                    while (w < words && !((set[w] ^ set2[w]) & out[w])) w++;
                    if (w == words) {
                        rep = w_class.items[other];
                        break;
                    }
                }
                if (rep < 0) {
                    rep = c;
                    if (idtable_add(&w_table, hash, (uint32_t)w_class.count) || u32s_push(&w_class, c) || u32s_push(&w_out, o))
                        goto done;
                }
            }
            b->pair_rep[p] = (int32_t)rep;
        }
    }
    rc = 0;
done:
    free(out_start), free(by_out), free(mark), free(pair_class.items), free(pair_out.items);
    idtable_free(&w_table), free(w_class.items), free(w_out.items);
    return rc;
}

/* The representative of W = set(c) ∩ out set o (subset_reps); o is one of c's pairs. */
static int32_t w_rep(const SubsetBuild *b, uint32_t c, uint32_t o) {
    uint32_t lo = b->pair_start[c], hi = b->pair_start[c + 1];
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (b->pair_out[mid] < o) lo = mid + 1;
        else hi = mid;
    }
    return b->pair_rep[lo];
}

/* A new configuration (q, W), W given by its representative class (-1: empty); < 0 out of memory. */
static int64_t config_new(SubsetBuild *b, uint32_t q, int32_t rep) {
    if (b->config_count == b->config_capacity) {
        uint32_t capacity = b->config_capacity ? 2 * b->config_capacity : 1024;
        SubsetConfig *configs = realloc(b->configs, capacity * sizeof(SubsetConfig));
        if (!configs) return SUBSETS_NO_MEMORY;
        b->configs = configs, b->config_capacity = capacity;
    }
    uint32_t k = b->config_count++;
    b->configs[k] = (SubsetConfig){q, rep, rep < 0 ? 0 : UNCOUNTED};
    return k;
}

/* The configuration (q, W), made when new: by a table of them where the ArcKeys are not a grid by r and class
 * (with the grid, the arcs' keys find a W's configuration themselves, and an empty W's is q's empty one). */
static int64_t config_intern(SubsetBuild *b, uint32_t q, int32_t rep) {
    uint64_t key = subsets_mix((uint64_t)q << 32 | (uint32_t)(rep + 1));
    IDTABLE_PROBE(&b->config_table, key, slot) {
        uint32_t k = b->config_table.slots[slot].id - 1;
        if (b->configs[k].q == q && b->configs[k].cls == rep) return k;
    }
    int64_t k = config_new(b, q, rep);
    return k < 0 || idtable_add(&b->config_table, key, (uint32_t)k) ? SUBSETS_NO_MEMORY : k;
}

/* |W| of configuration k. */
static uint32_t config_size(SubsetBuild *b, uint32_t k) {
    SubsetConfig *c = &b->configs[k];
    if (c->size == UNCOUNTED) {
        const uint64_t *set = class_set(b, c->cls), *out = out_set(b, c->q);
        uint32_t size = 0;
        for (uint32_t w = 0; w < b->words; w++) size += popcount64(set[w] & out[w]);
        c->size = size;
    }
    return c->size;
}

static int64_t empty_config(SubsetBuild *b, uint32_t q) {
    if (b->empty_config[q] < 0) {
        int64_t k = b->key_grid ? config_new(b, q, -1) : config_intern(b, q, -1);
        if (k < 0) return k;
        b->empty_config[q] = (int32_t)k;
    }
    return b->empty_config[q];
}

/* The ArcKey of (class c, target r), its configuration known; NULL out of memory.  Valid until the next call. */

static ArcKey *arc_key(SubsetBuild *b, uint32_t c, uint32_t r) {
    ArcKey *key = NULL;
    if (b->key_grid) {
        key = &b->key_grid[(size_t)r * b->classes + c];
    } else {
        uint64_t packed = (uint64_t)c << 32 | r, hash = subsets_mix(packed);
        IDTABLE_PROBE(&b->key_table, hash, slot) {
            uint32_t k = b->key_table.slots[slot].id - 1;
            if (b->key_of.items[k] == packed) {
                key = &b->keys[k];
                break;
            }
        }
        if (!key) {
            uint32_t k = (uint32_t)b->key_of.count;
            if (k == b->key_capacity) {
                uint32_t capacity = b->key_capacity ? 2 * b->key_capacity : 1024;
                ArcKey *keys = realloc(b->keys, capacity * sizeof(ArcKey));
                if (!keys) return NULL;
                b->keys = keys, b->key_capacity = capacity;
            }
            if (u64s_push(&b->key_of, packed) || idtable_add(&b->key_table, hash, k)) return NULL;
            key = &b->keys[k];
            *key = (ArcKey){0, 0};
        }
    }
    if (!key->config) {
        int32_t rep = w_rep(b, c, b->out_of[r]);
        if (rep < 0) {
            int64_t empty = empty_config(b, r);
            if (empty < 0) return NULL;
            key->config = (uint32_t)empty + 1;
            return key;
        }
        ArcKey *same = b->key_grid && rep >= 0 ? &b->key_grid[(size_t)r * b->classes + rep] : NULL;
        if (same && same->config) { /* (r, W) is the configuration of the arc of rep's tokens into r */
            key->config = same->config;
        } else {
            int64_t config = b->key_grid && rep >= 0 ? config_new(b, r, rep) : config_intern(b, r, rep);
            if (config < 0) return NULL;
            key->config = (uint32_t)config + 1;
            if (same) same->config = key->config;
        }
    }
    return key;
}

/* The order of a state's configurations: by q, then by W read as an int (the pure loop sorts (q, W) tuples). */
static int config_order(const SubsetBuild *b, uint32_t x, uint32_t y) {
    const SubsetConfig *a = &b->configs[x], *c = &b->configs[y];
    if (a->q != c->q) return a->q < c->q ? -1 : 1;
    if (x == y) return 0;
    if (a->cls < 0 || c->cls < 0) return a->cls < 0 ? -1 : 1;
    const uint64_t *sa = class_set(b, a->cls), *sc = class_set(b, c->cls), *out = out_set(b, a->q);
    for (uint32_t w = b->words; w-- > 0;) {
        uint64_t u = sa[w] & out[w], v = sc[w] & out[w];
        if (u != v) return u < v ? -1 : 1;
    }
    return 0;
}

/* The state of the configurations in list (sorted and made distinct here), numbered when new. */
static int64_t state_intern(SubsetBuild *b, U32s *list) {
    uint32_t *items = list->items;
    size_t count = list->count;
    for (size_t k = 1; k < count; k++) {
        uint32_t x = items[k];
        size_t j = k;
        for (; j > 0 && config_order(b, items[j - 1], x) > 0; j--) items[j] = items[j - 1];
        items[j] = x;
    }
    size_t distinct = 0;
    for (size_t k = 0; k < count; k++)
        if (!distinct || items[distinct - 1] != items[k]) items[distinct++] = items[k];
    list->count = count = distinct;
    uint64_t hash = 0x452821e638d01377ull ^ count;
    for (size_t k = 0; k < count; k++) hash = subsets_mix(hash ^ items[k]);
    IDTABLE_PROBE(&b->state_table, hash, slot) {
        uint32_t s = b->state_table.slots[slot].id - 1, from = b->state_start.items[s];
        if (b->state_table.slots[slot].hash == hash && b->state_start.items[s + 1] - from == count &&
            !memcmp(b->state_config.items + from, items, count * sizeof(uint32_t)))
            return s;
    }
    uint32_t s = (uint32_t)b->state_start.count - 1;
    if (b->max_states >= 0 && s >= b->max_states) return SUBSETS_STATE_LIMIT;
    if (u32s_reserve(&b->state_config, count) || u32s_push(&b->state_start, 0) || idtable_add(&b->state_table, hash, s))
        return SUBSETS_NO_MEMORY;
    memcpy(b->state_config.items + b->state_config.count, items, count * sizeof(uint32_t));
    b->state_config.count += count;
    b->state_start.items[s + 1] = (uint32_t)b->state_config.count;
    return s;
}

/* Append the configurations the arc -t-> r leads to (t of class c) to list; the arc's key, NULL out of memory. */
static ArcKey *successors(SubsetBuild *b, uint32_t c, uint32_t r, U32s *list) {
    ArcKey *key = arc_key(b, c, r);
    if (!key || u32s_push(list, key->config - 1)) return NULL;
    if (b->l.cut[r] >= 0) {
        int64_t after = empty_config(b, (uint32_t)b->l.cut[r]);
        if (after < 0 || u32s_push(list, (uint32_t)after)) return NULL;
    }
    return key;
}

/* The state the arc -t-> r leads to, for the tokens t of class c (numbered when new). */
static int64_t arc_target(SubsetBuild *b, uint32_t c, uint32_t r) {
    if (b->key_grid && b->key_grid[(size_t)r * b->classes + c].state) return b->key_grid[(size_t)r * b->classes + c].state - 1;
    b->list.count = 0;
    ArcKey *key = successors(b, c, r, &b->list);
    if (!key) return SUBSETS_NO_MEMORY;
    if (key->state) return key->state - 1;
    int64_t s = state_intern(b, &b->list);
    if (s >= 0) key->state = (uint32_t)s + 1; /* (state_intern leaves the keys where they are) */
    return s;
}

static int in_w(const SubsetBuild *b, const SubsetConfig *c, uint32_t bit) { return c->cls >= 0 && bit_test(class_set(b, c->cls), bit); }

/* resolve() of the pure loop: the arcs of c's row its W allows, resolved once; arcs that the first
 * configuration over the row bans wait (pending, by bit) until one that allows them comes. */
static int subset_resolve(SubsetBuild *b, const SubsetConfig *c) {
    const SubsetLattice *l = &b->l;
    uint32_t q = c->q;
    U32s *pending = &b->pending[q];
    if (!b->visited[q]) {
        b->visited[q] = 1;
        for (uint32_t k = l->row_start[q]; k < l->row_start[q + 1]; k++) {
            uint32_t bit = l->row_bit[k];
            if (in_w(b, c, bit)) {
                if (u32s_push(pending, k)) return SUBSETS_NO_MEMORY;
                continue;
            }
            int64_t s = arc_target(b, b->class_of[bit], l->row_target[k]);
            if (s < 0) return (int)s;
            b->resolved[k] = (int32_t)s;
        }
        if (pending->count > 1) { /* by bit, as the pure loop lists a bitset's tokens */
            uint64_t *order = malloc(pending->count * sizeof(uint64_t));
            if (!order) return SUBSETS_NO_MEMORY;
            for (size_t i = 0; i < pending->count; i++) order[i] = (uint64_t)l->row_bit[pending->items[i]] << 32 | pending->items[i];
            qsort(order, pending->count, sizeof(uint64_t), by_value);
            for (size_t i = 0; i < pending->count; i++) pending->items[i] = (uint32_t)order[i];
            free(order);
        }
        return 0;
    }
    size_t kept = 0;
    for (size_t i = 0; i < pending->count; i++) {
        uint32_t k = pending->items[i], bit = l->row_bit[k];
        if (in_w(b, c, bit)) {
            pending->items[kept++] = k;
            continue;
        }
        int64_t s = arc_target(b, b->class_of[bit], l->row_target[k]);
        if (s < 0) return (int)s;
        b->resolved[k] = (int32_t)s;
    }
    pending->count = kept;
    return 0;
}

/* The arc of row q reading `bit`, or -1 (each row's arcs sorted by bit the first time one is looked up). */
static int64_t arc_of(SubsetBuild *b, uint32_t q, uint32_t bit) {
    const SubsetLattice *l = &b->l;
    uint32_t lo = l->row_start[q], hi = l->row_start[q + 1];
    uint64_t *arcs = b->by_bit;
    if (!b->by_bit_ready[q]) {
        for (uint32_t k = lo; k < hi; k++) arcs[k] = (uint64_t)l->row_bit[k] << 32 | k;
        qsort(arcs + lo, hi - lo, sizeof(uint64_t), by_value);
        b->by_bit_ready[q] = 1;
    }
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        uint32_t at = (uint32_t)(arcs[mid] >> 32);
        if (at == bit) return (uint32_t)arcs[mid];
        if (at < bit) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

/* The bits that at least two of the distinct rows qs read, ascending, into `out` (memoized for two rows,
 * which is what a cut makes: the row going on and the row after the cut). */
static int shared_bits(SubsetBuild *b, const uint32_t *qs, size_t count, U32s *out) {
    out->count = 0;
    uint64_t key = subsets_mix((uint64_t)qs[0] << 32 | qs[1]);
    if (count == 2)
        IDTABLE_PROBE(&b->shared_table, key, slot) {
            uint32_t k = b->shared_table.slots[slot].id - 1, *entry = b->shared_start.items + 4 * k;
            if (b->shared_table.slots[slot].hash == key && entry[0] == qs[0] && entry[1] == qs[1]) {
                if (u32s_reserve(out, entry[3] - entry[2])) return -1;
                memcpy(out->items, b->shared_bits.items + entry[2], (entry[3] - entry[2]) * sizeof(uint32_t));
                out->count = entry[3] - entry[2];
                return 0;
            }
        }
    uint64_t *seen = b->scratch, *common = b->scratch2;
    for (size_t i = 0; i < count; i++) {
        const uint64_t *row = out_set(b, qs[i]);
        for (uint32_t w = 0; w < b->words; w++) common[w] |= seen[w] & row[w], seen[w] |= row[w];
    }
    int rc = 0;
    for (uint32_t w = 0; w < b->words; w++) {
        for (uint64_t bits = common[w]; bits && !rc; bits &= bits - 1) rc = u32s_push(out, w * 64 + (uint32_t)__builtin_ctzll(bits));
        seen[w] = common[w] = 0;
    }
    if (rc || count != 2) return rc;
    uint32_t k = (uint32_t)(b->shared_start.count / 4), first = (uint32_t)b->shared_bits.count;
    if (u32s_reserve(&b->shared_bits, out->count) || u32s_push(&b->shared_start, qs[0]) || u32s_push(&b->shared_start, qs[1]) ||
        u32s_push(&b->shared_start, first) || u32s_push(&b->shared_start, first + (uint32_t)out->count))
        return -1;
    memcpy(b->shared_bits.items + first, out->items, out->count * sizeof(uint32_t));
    b->shared_bits.count += out->count;
    return idtable_add(&b->shared_table, key, k);
}

/* overrides() of the pure loop for state s: a token that configurations over different rows both read
 * leads to the union of their successors. */
static int subset_overrides(SubsetBuild *b, uint32_t s) {
    const SubsetLattice *l = &b->l;
    uint32_t from = b->state_start.items[s], to = b->state_start.items[s + 1];
    U32s *qs = &b->list, *bits = &b->list3, *union_ = &b->list2;
    qs->count = 0;
    for (uint32_t i = from; i < to; i++) { /* (configurations are in q order) */
        uint32_t q = b->configs[b->state_config.items[i]].q;
        if ((!qs->count || qs->items[qs->count - 1] != q) && u32s_push(qs, q)) return SUBSETS_NO_MEMORY;
    }
    if (qs->count < 2) return 0;
    if (shared_bits(b, qs->items, qs->count, bits)) return SUBSETS_NO_MEMORY;
    for (size_t i = 0; i < bits->count; i++) {
        uint32_t bit = bits->items[i], readers = 0;
        union_->count = 0;
        for (uint32_t j = from; j < to; j++) {
            const SubsetConfig *c = &b->configs[b->state_config.items[j]];
            int64_t k = bit_test(out_set(b, c->q), bit) && !in_w(b, c, bit) ? arc_of(b, c->q, bit) : -1;
            if (k < 0) continue;
            readers++;
            if (!successors(b, b->class_of[bit], l->row_target[k], union_)) return SUBSETS_NO_MEMORY;
        }
        if (readers > 1) {
            int64_t target = state_intern(b, union_);
            if (target < 0) return (int)target;
            if (u32s_push(&b->over_bit, bit) || u32s_push(&b->over_target, (uint32_t)target)) return SUBSETS_NO_MEMORY;
        }
    }
    return 0;
}

/* The loop of shared_canonical_subsets: every state numbered, in order. */
static int subset_states(SubsetBuild *b) {
    const SubsetLattice *l = &b->l;
    b->list.count = 0;
    int64_t start = empty_config(b, l->start);
    if (start < 0 || u32s_push(&b->list, (uint32_t)start) || u32s_push(&b->state_start, 0)) return SUBSETS_NO_MEMORY;
    int64_t s0 = state_intern(b, &b->list);
    if (s0 < 0) return (int)s0;
    if (u32s_push(&b->over_start, 0)) return SUBSETS_NO_MEMORY;
    for (uint32_t s = 0; s + 1 < b->state_start.count; s++) { /* (grows while we go) */
        uint32_t from = b->state_start.items[s], to = b->state_start.items[s + 1];
        long long most = 0;
        for (uint32_t i = from; i < to; i++) {
            SubsetConfig c = b->configs[b->state_config.items[i]];
            int rc = subset_resolve(b, &c);
            if (rc) return rc;
            if (b->max_arcs < 0) continue;
            long long arcs = (long long)(l->row_start[c.q + 1] - l->row_start[c.q]) - config_size(b, b->state_config.items[i]);
            if (arcs > most) most = arcs;
        }
        if (b->max_arcs >= 0 && (b->at_least += most) > b->max_arcs) return SUBSETS_ARC_LIMIT;
        if (to - from > 1) {
            int rc = subset_overrides(b, s);
            if (rc) return rc;
        }
        if (u32s_push(&b->over_start, (uint32_t)b->over_bit.count)) return SUBSETS_NO_MEMORY;
    }
    return 0;
}

/* Dead states (not reached from the start), when some state has overrides (module comment): a forward
 * search, as pretokenized._reachable, over rows: each target of a row is checked through the configurations
 * over the row until one of them reaches it, then left alone.  Marks them in `dead` and drops the arcs into
 * them (from shared rows, and overrides to None). */
static int subset_trim(SubsetBuild *b, uint8_t *dead) {
    const SubsetLattice *l = &b->l;
    uint32_t states = (uint32_t)b->state_start.count - 1;
    memset(dead, 0, states);
    if (b->over_bit.count == 0) return 0;
    int rc = SUBSETS_NO_MEMORY;
    size_t arcs = l->row_start[l->states];
    uint8_t *seen = calloc(states, 1), *config_done = calloc(b->config_count, 1);
    uint64_t *by_target = malloc((arcs + 1) * sizeof(uint64_t)); /* per row, its resolved arcs as target << 32 | arc */
    uint32_t *group_start = malloc(((size_t)l->states + 1) * sizeof(uint32_t)), *left = calloc(l->states, sizeof(uint32_t));
    U32s groups = {0}, queue = {0}; /* per row, its targets not reached yet: (target, first, end) in by_target */
    if (!seen || !config_done || !by_target || !group_start || !left) goto done;
    size_t placed = 0;
    for (uint32_t q = 0; q < l->states; q++) {
        group_start[q] = (uint32_t)groups.count;
        size_t first = placed;
        for (uint32_t k = l->row_start[q]; k < l->row_start[q + 1]; k++)
            if (b->resolved[k] >= 0) by_target[placed++] = (uint64_t)(uint32_t)b->resolved[k] << 32 | k;
        qsort(by_target + first, placed - first, sizeof(uint64_t), by_value);
        for (size_t i = first; i < placed; i++) {
            if (i > first && by_target[i] >> 32 == by_target[i - 1] >> 32) continue;
            size_t end = i + 1;
            while (end < placed && by_target[end] >> 32 == by_target[i] >> 32) end++;
            if (u32s_push(&groups, (uint32_t)(by_target[i] >> 32)) || u32s_push(&groups, (uint32_t)i) ||
                u32s_push(&groups, (uint32_t)end))
                goto done;
            left[q]++;
        }
    }
    seen[0] = 1;
    if (u32s_push(&queue, 0)) goto done;
    for (size_t next = 0; next < queue.count; next++) {
        uint32_t s = queue.items[next];
        uint32_t over_from = b->over_start.items[s], over_to = b->over_start.items[s + 1];
        for (uint32_t i = over_from; i < over_to; i++) {
            uint32_t x = b->over_target.items[i];
            if (!seen[x] && (seen[x] = 1, u32s_push(&queue, x))) goto done;
        }
        for (uint32_t i = b->state_start.items[s]; i < b->state_start.items[s + 1]; i++) {
            uint32_t config = b->state_config.items[i];
            const SubsetConfig *c = &b->configs[config];
            if (over_from == over_to) { /* without overrides, what a configuration reads is its own */
                if (config_done[config]) continue;
                config_done[config] = 1;
            }
            uint32_t q = c->q, *group = groups.items + group_start[q], kept = 0;
            for (uint32_t g = 0; g < left[q]; g++) {
                uint32_t x = group[3 * g], reached = 0;
                for (uint32_t a = group[3 * g + 1]; a < group[3 * g + 2] && !reached; a++) {
                    uint32_t bit = l->row_bit[(uint32_t)by_target[a]];
                    if (in_w(b, c, bit)) continue;
                    reached = 1; /* unless an override of s takes the token elsewhere */
                    for (uint32_t o = over_from; o < over_to && reached; o++) reached = b->over_bit.items[o] != bit;
                }
                if (!reached) {
                    memmove(group + 3 * kept++, group + 3 * g, 3 * sizeof(uint32_t));
                } else if (!seen[x] && (seen[x] = 1, u32s_push(&queue, x))) {
                    goto done;
                }
            }
            left[q] = kept;
        }
    }
    for (uint32_t s = 0; s < states; s++) dead[s] = !seen[s];
    for (size_t k = 0; k < arcs; k++)
        if (b->resolved[k] >= 0 && dead[b->resolved[k]]) {
            b->resolved[k] = -1;
            if (u32s_push(&b->trimmed, (uint32_t)k)) goto done;
        }
    for (size_t i = 0; i < b->over_target.count; i++)
        if (dead[b->over_target.items[i]]) b->over_target.items[i] = UINT32_MAX;
    rc = 0;
done:
    free(seen), free(config_done), free(by_target), free(group_start), free(left), free(groups.items), free(queue.items);
    return rc;
}

static int subset_build(SubsetBuild *b, uint8_t **dead) {
    const SubsetLattice *l = &b->l;
    size_t arcs = l->row_start[l->states];
    b->words = l->words;
    b->word_key = malloc(b->words * sizeof(uint64_t));
    if (!b->word_key) return SUBSETS_NO_MEMORY;
    for (uint32_t w = 0; w < b->words; w++) b->word_key[w] = subsets_mix(w + 0x6a09e667f3bcc909ull);
    b->scratch = calloc(b->words, sizeof(uint64_t)), b->scratch2 = calloc(b->words, sizeof(uint64_t));
    b->empty_config = malloc((size_t)l->states * sizeof(int32_t));
    b->resolved = malloc((arcs + 1) * sizeof(int32_t)), b->by_bit = malloc((arcs + 1) * sizeof(uint64_t));
    b->visited = calloc(l->states, 1), b->by_bit_ready = calloc(l->states, 1);
    b->pending = calloc(l->states, sizeof(U32s));
    if (!b->scratch || !b->scratch2 || !b->empty_config || !b->resolved || !b->by_bit || !b->visited || !b->by_bit_ready ||
        !b->pending || idtable_init(&b->config_table, 1024) || idtable_init(&b->key_table, 1024) || idtable_init(&b->state_table, 1024) || idtable_init(&b->shared_table, 64))
        return SUBSETS_NO_MEMORY;
    for (uint32_t q = 0; q < l->states; q++) b->empty_config[q] = -1;
    for (size_t k = 0; k < arcs; k++) b->resolved[k] = -1;
    if (subset_classes(b)) return SUBSETS_NO_MEMORY;
    size_t grid = (size_t)l->states * b->classes * sizeof(ArcKey);
    if (grid <= b->key_grid_limit && !(b->key_grid = zeroed_table(grid, &b->key_grid_mapped))) return SUBSETS_NO_MEMORY;
    if (subset_outs(b) || subset_reps(b)) return SUBSETS_NO_MEMORY;
    int rc = subset_states(b);
    if (rc) return rc;
    *dead = malloc(b->state_start.count);
    return *dead ? subset_trim(b, *dead) : SUBSETS_NO_MEMORY;
}


/* ---------------------------------------------------------------- the result */

/* The states the build numbered, as bpefst.automata.SharedRowDFA reads them (SharedRowDFA.from_core):
 * per state its parts (lattice state, W) and overrides, per lattice state its shared row, which states are
 * dead; and the questions a DFA answers (step, row, arc counts) without making those lists. */
typedef struct {
    PyObject_HEAD
    SubsetBuild b;
    uint8_t *dead;
    uint32_t states;
    uint32_t *live_count; /* per lattice state: the arcs of its shared row */
} SharedSubsets;

static void SharedSubsets_dealloc(SharedSubsets *x) {
    subset_build_free(&x->b);
    free(x->dead), free(x->live_count);
    Py_TYPE(x)->tp_free((PyObject *)x);
}

static Py_ssize_t SharedSubsets_length(SharedSubsets *x) { return x->states; }

static int subsets_state(const SharedSubsets *x, PyObject *state, uint32_t *s) {
    if (id_of(state, x->states, s)) {
        if (PyErr_ExceptionMatches(PyExc_IndexError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_IndexError, "state out of range");
        }
        return -1;
    }
    return 0;
}

/* The state `bit` leads to from s, or -1: an override, else the first part whose live row reads it. */
static int64_t subsets_step(SharedSubsets *x, uint32_t s, uint32_t bit) {
    SubsetBuild *b = &x->b;
    if (x->dead[s]) return -1;
    uint32_t lo = b->over_start.items[s], hi = b->over_start.items[s + 1];
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2, at = b->over_bit.items[mid];
        if (at == bit) return b->over_target.items[mid] == UINT32_MAX ? -1 : (int64_t)b->over_target.items[mid];
        if (at < bit) lo = mid + 1;
        else hi = mid;
    }
    for (uint32_t i = b->state_start.items[s]; i < b->state_start.items[s + 1]; i++) {
        const SubsetConfig *c = &b->configs[b->state_config.items[i]];
        int64_t k = arc_of(b, c->q, bit);
        if (k >= 0 && b->resolved[k] >= 0 && !in_w(b, c, bit)) return b->resolved[k];
    }
    return -1;
}

static PyObject *SharedSubsets_step(SharedSubsets *x, PyObject *args) {
    PyObject *state, *token;
    uint32_t s;
    if (!PyArg_ParseTuple(args, "OO:step", &state, &token) || subsets_state(x, state, &s)) return NULL;
    long long t = PyLong_Check(token) ? PyLong_AsLongLong(token) : -1;
    if (t == -1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return NULL;
        PyErr_Clear();
    }
    if (t < 0 || t >= x->b.l.vocabulary || x->b.l.bit_of[t] < 0) Py_RETURN_NONE;
    int64_t target = subsets_step(x, s, (uint32_t)x->b.l.bit_of[t]);
    return target < 0 ? Py_NewRef(Py_None) : PyLong_FromLongLong(target);
}

/* Set `key` (a token) to `target` in `dict` (target -1: remove it). */
static int dict_put(PyObject *dict, uint32_t token, int64_t target) {
    PyObject *key = PyLong_FromUnsignedLong(token);
    if (!key) return -1;
    int rc;
    if (target < 0) {
        rc = PyDict_Contains(dict, key);
        if (rc > 0) rc = PyDict_DelItem(dict, key);
    } else {
        PyObject *value = PyLong_FromLongLong(target);
        rc = value ? PyDict_SetItem(dict, key, value) : -1;
        Py_XDECREF(value);
    }
    Py_DECREF(key);
    return rc < 0 ? -1 : 0;
}

/* row(s): {token: state} for every arc of s, as SharedRowDFA.row writes it (the first part wins). */
static PyObject *subsets_row(SharedSubsets *x, uint32_t s) {
    SubsetBuild *b = &x->b;
    const SubsetLattice *l = &b->l;
    PyObject *row = PyDict_New();
    if (!row || x->dead[s]) return row;
    for (uint32_t i = b->state_start.items[s + 1]; i-- > b->state_start.items[s];) {
        const SubsetConfig *c = &b->configs[b->state_config.items[i]];
        for (uint32_t k = l->row_start[c->q]; k < l->row_start[c->q + 1]; k++)
            if (b->resolved[k] >= 0 && !in_w(b, c, l->row_bit[k]) && dict_put(row, l->token_of[l->row_bit[k]], b->resolved[k])) goto failed;
    }
    for (uint32_t i = b->over_start.items[s]; i < b->over_start.items[s + 1]; i++) {
        uint32_t target = b->over_target.items[i];
        if (dict_put(row, l->token_of[b->over_bit.items[i]], target == UINT32_MAX ? -1 : (int64_t)target)) goto failed;
    }
    return row;
failed:
    Py_DECREF(row);
    return NULL;
}

static PyObject *SharedSubsets_row(SharedSubsets *x, PyObject *state) {
    uint32_t s;
    return subsets_state(x, state, &s) ? NULL : subsets_row(x, s);
}

/* Does configuration c read `bit` through its live row? */
static int subsets_reads(SharedSubsets *x, const SubsetConfig *c, uint32_t bit) {
    int64_t k = arc_of(&x->b, c->q, bit);
    return k >= 0 && x->b.resolved[k] >= 0 && !in_w(&x->b, c, bit);
}

/* The arcs of s, without writing its row (SharedRowDFA.arc_count): each part reads its live row minus W,
 * where W misses the arcs still pending at the end (every configuration over the row bans those) and
 * those the trim dropped that it bans; overridden tokens count once. -1 with an exception set on error. */
static long long subsets_arc_count(SharedSubsets *x, uint32_t s) {
    SubsetBuild *b = &x->b;
    const SubsetLattice *l = &b->l;
    if (x->dead[s]) return 0;
    uint32_t from = b->state_start.items[s], to = b->state_start.items[s + 1];
    for (uint32_t i = from + 1; i < to; i++)
        if (b->configs[b->state_config.items[i]].q == b->configs[b->state_config.items[i - 1]].q) { /* two parts, one row */
            PyObject *row = subsets_row(x, s);
            long long count = row ? (long long)PyDict_GET_SIZE(row) : -1;
            Py_XDECREF(row);
            return count;
        }
    long long total = 0;
    for (uint32_t i = from; i < to; i++) {
        const SubsetConfig *c = &b->configs[b->state_config.items[i]];
        long long banned = config_size(b, b->state_config.items[i]);
        if (banned) {
            banned -= (long long)b->pending[c->q].count;
            uint32_t lo = lower_bound(b->trimmed.items, 0, (uint32_t)b->trimmed.count, l->row_start[c->q]);
            for (; lo < b->trimmed.count && b->trimmed.items[lo] < l->row_start[c->q + 1]; lo++)
                banned -= in_w(b, c, l->row_bit[b->trimmed.items[lo]]);
        }
        total += (long long)x->live_count[c->q] - banned;
    }
    for (uint32_t o = b->over_start.items[s]; o < b->over_start.items[s + 1]; o++) {
        total += b->over_target.items[o] != UINT32_MAX;
        for (uint32_t i = from; i < to; i++) total -= subsets_reads(x, &b->configs[b->state_config.items[i]], b->over_bit.items[o]);
    }
    return total;
}

static PyObject *SharedSubsets_arc_count(SharedSubsets *x, PyObject *state) {
    uint32_t s;
    if (subsets_state(x, state, &s)) return NULL;
    long long count = subsets_arc_count(x, s);
    return count < 0 ? NULL : PyLong_FromLongLong(count);
}

static PyObject *SharedSubsets_arc_total(SharedSubsets *x, PyObject *unused) {
    long long total = 0;
    for (uint32_t s = 0; s < x->states; s++) {
        long long count = subsets_arc_count(x, s);
        if (count < 0) return NULL;
        total += count;
    }
    return PyLong_FromLongLong(total);
}

static PyObject *SharedSubsets_shared_row(SharedSubsets *x, PyObject *q_object) {
    const SubsetLattice *l = &x->b.l;
    uint32_t q;
    if (id_of(q_object, l->states, &q)) return NULL;
    PyObject *row = PyDict_New();
    for (uint32_t k = l->row_start[q]; row && k < l->row_start[q + 1]; k++)
        if (x->b.resolved[k] >= 0 && dict_put(row, l->token_of[l->row_bit[k]], x->b.resolved[k])) Py_CLEAR(row);
    return row;
}

/* parts_of(s) -> ((q, frozenset of W's tokens), ...); () for a dead state. */
static PyObject *SharedSubsets_parts_of(SharedSubsets *x, PyObject *state) {
    SubsetBuild *b = &x->b;
    uint32_t s;
    if (subsets_state(x, state, &s)) return NULL;
    uint32_t from = b->state_start.items[s], count = x->dead[s] ? 0 : b->state_start.items[s + 1] - from;
    PyObject *parts = PyTuple_New(count);
    for (uint32_t i = 0; parts && i < count; i++) {
        const SubsetConfig *c = &b->configs[b->state_config.items[from + i]];
        PyObject *tokens = PyFrozenSet_New(NULL), *part = NULL;
        if (tokens && c->cls >= 0) {
            const uint64_t *set = class_set(b, c->cls), *out = out_set(b, c->q);
            for (uint32_t w = 0; w < b->words && tokens; w++)
                for (uint64_t bits = set[w] & out[w]; bits && tokens; bits &= bits - 1) {
                    PyObject *token = PyLong_FromUnsignedLong(b->l.token_of[w * 64 + (uint32_t)__builtin_ctzll(bits)]);
                    if (!token || PySet_Add(tokens, token)) Py_CLEAR(tokens);
                    Py_XDECREF(token);
                }
        }
        if (tokens) part = Py_BuildValue("(IN)", c->q, tokens);
        if (!part) Py_CLEAR(parts);
        else PyTuple_SET_ITEM(parts, i, part);
    }
    return parts;
}

/* overrides_of(s) -> {token: state or None}, or None for a state without overrides. */
static PyObject *SharedSubsets_overrides_of(SharedSubsets *x, PyObject *state) {
    SubsetBuild *b = &x->b;
    uint32_t s;
    if (subsets_state(x, state, &s)) return NULL;
    uint32_t from = b->over_start.items[s], to = b->over_start.items[s + 1];
    if (x->dead[s] || from == to) Py_RETURN_NONE;
    PyObject *over = PyDict_New();
    for (uint32_t i = from; over && i < to; i++) {
        uint32_t target = b->over_target.items[i];
        PyObject *key = PyLong_FromUnsignedLong(b->l.token_of[b->over_bit.items[i]]);
        PyObject *value = !key ? NULL : target == UINT32_MAX ? Py_NewRef(Py_None) : PyLong_FromUnsignedLong(target);
        if (!value || PyDict_SetItem(over, key, value)) Py_CLEAR(over);
        Py_XDECREF(key), Py_XDECREF(value);
    }
    return over;
}

static PyObject *SharedSubsets_dead_flags(SharedSubsets *x, PyObject *unused) {
    return PyBytes_FromStringAndSize((const char *)x->dead, x->states);
}

/* final_states() -> the live states holding a final lattice state, ascending. */
static PyObject *SharedSubsets_final_states(SharedSubsets *x, PyObject *unused) {
    SubsetBuild *b = &x->b;
    PyObject *finals = PyList_New(0);
    for (uint32_t s = 0; finals && s < x->states; s++) {
        if (x->dead[s]) continue;
        for (uint32_t i = b->state_start.items[s]; i < b->state_start.items[s + 1]; i++)
            if (b->l.final[b->configs[b->state_config.items[i]].q]) {
                PyObject *state = PyLong_FromUnsignedLong(s);
                if (!state || PyList_Append(finals, state)) Py_CLEAR(finals);
                Py_XDECREF(state);
                break;
            }
    }
    return finals;
}

static PyObject *SharedSubsets_lattice_states(SharedSubsets *x, PyObject *unused) { return PyLong_FromUnsignedLong(x->b.l.states); }

static PyMethodDef SharedSubsets_methods[] = {
    {"step", (PyCFunction)SharedSubsets_step, METH_VARARGS, "step(state, token) -> the next state, or None."},
    {"row", (PyCFunction)SharedSubsets_row, METH_O, "row(state) -> {token: state}, every arc of the state."},
    {"arc_count", (PyCFunction)SharedSubsets_arc_count, METH_O, "arc_count(state) -> its arcs, without writing them."},
    {"arc_total", (PyCFunction)SharedSubsets_arc_total, METH_NOARGS, "arc_total() -> the arcs of every live state."},
    {"shared_row", (PyCFunction)SharedSubsets_shared_row, METH_O, "shared_row(q) -> {token: state}, lattice state q's shared row."},
    {"parts_of", (PyCFunction)SharedSubsets_parts_of, METH_O, "parts_of(state) -> ((q, excluded tokens), ...)."},
    {"overrides_of", (PyCFunction)SharedSubsets_overrides_of, METH_O, "overrides_of(state) -> {token: state or None}, or None."},
    {"dead_flags", (PyCFunction)SharedSubsets_dead_flags, METH_NOARGS, "dead_flags() -> a byte per state, 1 for dead."},
    {"final_states", (PyCFunction)SharedSubsets_final_states, METH_NOARGS, "final_states() -> the live final states."},
    {"lattice_states", (PyCFunction)SharedSubsets_lattice_states, METH_NOARGS, "lattice_states() -> the lattice's states."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods SharedSubsets_as_sequence = {.sq_length = (lenfunc)SharedSubsets_length};

static PyTypeObject SharedSubsetsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bpefst._core.SharedSubsets",
    .tp_basicsize = sizeof(SharedSubsets),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The canonical subsets of a pre-tokenized promotion (canonical_subsets), read by SharedRowDFA.",
    .tp_dealloc = (destructor)SharedSubsets_dealloc,
    .tp_as_sequence = &SharedSubsets_as_sequence,
    .tp_methods = SharedSubsets_methods,
};

/* canonical_subsets(index, filed, cut, finals, start, max_states, max_arcs, key_grid=64 MB) -> a
 * SharedSubsets; None past max_states states, False past max_arcs arcs counted as the pure loop counts them
 * (-1: no limit).  index: the tokenizer's BannedIndex; filed, cut, finals, start: the on-demand product's
 * whole liveness; key_grid: the most bytes the table of arcs by target and class may take (beyond, the arcs
 * are kept by hash: slower, for lattices of many states and classes). */
#define KEY_GRID_BYTES ((Py_ssize_t)64 << 20)

static PyObject *canonical_subsets(PyObject *module, PyObject *args) {
    PyObject *index, *filed, *cut, *finals;
    Py_ssize_t start;
    long long max_states, max_arcs;
    Py_ssize_t key_grid = KEY_GRID_BYTES;
    if (!PyArg_ParseTuple(args, "O!OOOnLL|n:canonical_subsets", &BannedIndexType, &index, &filed, &cut, &finals, &start,
                          &max_states, &max_arcs, &key_grid) ||
        !index_ready((BannedIndex *)index))
        return NULL;
    SharedSubsets *x = (SharedSubsets *)SharedSubsetsType.tp_alloc(&SharedSubsetsType, 0);
    if (!x) return NULL;
    SubsetBuild *b = &x->b;
    if (subset_lattice_read(&b->l, filed, cut, finals, start, ((BannedIndex *)index)->size)) {
        Py_DECREF(x);
        return NULL;
    }
    b->index = (BannedIndex *)index, b->max_states = max_states, b->max_arcs = max_arcs;
    b->key_grid_limit = key_grid < 0 ? 0 : (size_t)key_grid;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = subset_build(b, &x->dead);
    Py_END_ALLOW_THREADS
    b->index = NULL;
    if (rc) {
        Py_DECREF(x);
        if (rc == SUBSETS_STATE_LIMIT) Py_RETURN_NONE;
        if (rc == SUBSETS_ARC_LIMIT) Py_RETURN_FALSE;
        return PyErr_NoMemory();
    }
    x->states = (uint32_t)b->state_start.count - 1;
    const SubsetLattice *l = &b->l;
    x->live_count = calloc(l->states, sizeof(uint32_t));
    if (!x->live_count) {
        Py_DECREF(x);
        return PyErr_NoMemory();
    }
    for (uint32_t q = 0; q < l->states; q++)
        for (uint32_t k = l->row_start[q]; k < l->row_start[q + 1]; k++) x->live_count[q] += b->resolved[k] >= 0;
    /* what only the build needed */
    idtable_free(&b->config_table), idtable_free(&b->key_table), idtable_free(&b->state_table), idtable_free(&b->shared_table);
    free_table(b->key_grid, b->key_grid_mapped), free(b->keys), free(b->key_of.items), free(b->empty_config), free(b->shared_start.items);
    free(b->shared_bits.items), free(b->pair_start), free(b->pair_out), free(b->pair_rep);
    b->key_grid = NULL, b->keys = NULL, b->key_of.items = NULL, b->empty_config = NULL, b->shared_start.items = NULL;
    b->shared_bits.items = NULL, b->pair_start = b->pair_out = NULL, b->pair_rep = NULL;
    return (PyObject *)x;
}

#endif
