/* Textbook BPE of one chunk over a table of merges.
 *
 * The rule (Sennrich et al. 2016; the reference encoder in
 * bpefst/tokenizer/reference.py): repeatedly merge the adjacent pair of
 * lowest rank, the leftmost one among equal ranks, until no adjacent pair is a
 * merge.  Short chunks (almost all of real text) keep the pair ranks in an
 * array and scan it for the minimum, as bpefst/tokenizer/packed_bpe.py does:
 * O(n^2) but a few cache lines.  Longer chunks keep the symbols in a linked
 * list and the pairs in a binary heap keyed by (rank, position), so the
 * leftmost lowest pair is the heap's top and each merge costs O(log n):
 * O(n log n) for a megabyte of one letter.  Stale heap entries (a neighbour
 * merged since they were pushed) are recognised by re-reading the pair.
 */
#ifndef BPEFST_BPE_H
#define BPEFST_BPE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NO_RANK UINT32_MAX

/* Open addressing: (left << 32 | right) -> (rank, result), the three in one 16-byte slot so a probe
 * touches one cache line (the table of a 200k-token vocabulary is 8 MB: most probes miss the cache). */
typedef struct {
    uint64_t key; /* EMPTY_KEY where free */
    uint32_t rank;
    uint32_t result;
} PairSlot;

typedef struct {
    PairSlot *slots;
    uint64_t mask;
    int shift;
    uint32_t count;      /* merges added */
    uint32_t rank_limit; /* above every rank added */
    int ranks_grow;    /* a merge's result only takes part in merges of higher rank (see bpe_buckets) */
} PairTable;

#define EMPTY_KEY UINT64_MAX

static inline uint64_t pair_key(uint32_t left, uint32_t right) { return (uint64_t)left << 32 | right; }

static inline uint64_t pair_slot(const PairTable *table, uint64_t key) {
    return (key * 0x9E3779B97F4A7C15ull) >> table->shift;
}

static void pair_table_free(PairTable *table) {
    free(table->slots);
    memset(table, 0, sizeof *table);
}

/* Room for `count` merges at a load of at most one half; 0 on success. */
static int pair_table_init(PairTable *table, size_t count) {
    int bits = 4;
    while (((size_t)1 << bits) < 2 * count + 2) bits++;
    size_t size = (size_t)1 << bits;
    table->slots = malloc(size * sizeof(PairSlot));
    if (!table->slots) return -1;
    for (size_t k = 0; k < size; k++) table->slots[k].key = EMPTY_KEY;
    table->mask = size - 1;
    table->shift = 64 - bits;
    return 0;
}

/* Adds a merge; a pair already present keeps its first (lowest) rank, as in the reference encoder. */
static void pair_table_add(PairTable *table, uint32_t left, uint32_t right, uint32_t rank, uint32_t result) {
    uint64_t key = pair_key(left, right), slot = pair_slot(table, key);
    while (table->slots[slot].key != EMPTY_KEY) {
        if (table->slots[slot].key == key) return;
        slot = (slot + 1) & table->mask;
    }
    table->slots[slot] = (PairSlot){key, rank, result};
    table->count++;
    if (rank >= table->rank_limit) table->rank_limit = rank + 1;
}

/* The rank of the pair (NO_RANK when it is not a merge) and its result in *result. */
static inline uint32_t pair_rank(const PairTable *table, uint32_t left, uint32_t right, uint32_t *result) {
    uint64_t key = pair_key(left, right), slot = pair_slot(table, key);
    for (;;) {
        const PairSlot *found = &table->slots[slot];
        if (found->key == key) {
            *result = found->result;
            return found->rank;
        }
        if (found->key == EMPTY_KEY) return NO_RANK;
        slot = (slot + 1) & table->mask;
    }
}

/* Chunks up to this many symbols take the array scan (measured on fortunes: 16-24 best); up to
 * STACK_BPE the heap's arrays live on the stack. */
#define SHORT_BPE 20
#define STACK_BPE 512

/* BPE of ids[0..n) in place; returns the new length. */
static size_t bpe_short(const PairTable *table, uint32_t *ids, size_t n) {
    uint32_t ranks[SHORT_BPE], results[SHORT_BPE];
    if (n < 2) return n;
    for (size_t i = 0; i + 1 < n; i++) ranks[i] = pair_rank(table, ids[i], ids[i + 1], &results[i]);
    for (;;) {
        size_t best = 0;
        uint32_t low = NO_RANK;
        for (size_t i = 0; i + 1 < n; i++)
            if (ranks[i] < low) {
                low = ranks[i];
                best = i;
            }
        if (low == NO_RANK) return n;
        ids[best] = results[best];
        n--;
        memmove(ids + best + 1, ids + best + 2, (n - best - 1) * sizeof(uint32_t));
        memmove(ranks + best + 1, ranks + best + 2, (n > best + 2 ? n - best - 2 : 0) * sizeof(uint32_t));
        memmove(results + best + 1, results + best + 2, (n > best + 2 ? n - best - 2 : 0) * sizeof(uint32_t));
        if (best > 0) ranks[best - 1] = pair_rank(table, ids[best - 1], ids[best], &results[best - 1]);
        if (best + 1 < n) ranks[best] = pair_rank(table, ids[best], ids[best + 1], &results[best]);
    }
}

/* --- the long route: linked list + heap of (rank << 32 | position) --- */

typedef struct {
    uint64_t *items;
    size_t size, capacity;
    int borrowed; /* items is the caller's (stack) array: copy it out before growing */
} Heap;

static int heap_push(Heap *heap, uint64_t item) {
    if (heap->size == heap->capacity) {
        size_t capacity = heap->capacity ? 2 * heap->capacity : 64;
        uint64_t *items = heap->borrowed ? malloc(capacity * sizeof(uint64_t))
                                         : realloc(heap->items, capacity * sizeof(uint64_t));
        if (!items) return -1;
        if (heap->borrowed) memcpy(items, heap->items, heap->size * sizeof(uint64_t));
        heap->items = items;
        heap->capacity = capacity;
        heap->borrowed = 0;
    }
    size_t i = heap->size++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (heap->items[parent] <= item) break;
        heap->items[i] = heap->items[parent];
        i = parent;
    }
    heap->items[i] = item;
    return 0;
}

static uint64_t heap_pop(Heap *heap) {
    uint64_t top = heap->items[0], last = heap->items[--heap->size];
    size_t i = 0, n = heap->size;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && heap->items[child + 1] < heap->items[child]) child++;
        if (heap->items[child] >= last) break;
        heap->items[i] = heap->items[child];
        i = child;
    }
    if (n) heap->items[i] = last;
    return top;
}

#define NONE_POS UINT32_MAX

/* BPE of ids[0..n) in place by the heap, for any n < 2^32; returns the new length, or (size_t)-1 when out of memory. */
static size_t bpe_heap(const PairTable *table, uint32_t *ids, size_t n) {
    if (n <= SHORT_BPE) return bpe_short(table, ids, n);
    /* chunks of a few hundred bytes (a sentence of CJK text) are common: no malloc for them */
    uint32_t next_here[STACK_BPE], prev_here[STACK_BPE];
    uint64_t heap_here[3 * STACK_BPE]; /* n - 1 pairs at first, at most two more per merge */
    int here = n <= STACK_BPE;
    uint32_t *next = here ? next_here : malloc(n * sizeof(uint32_t));
    uint32_t *prev = here ? prev_here : malloc(n * sizeof(uint32_t));
    Heap heap = {here ? heap_here : NULL, 0, here ? 3 * STACK_BPE : 0, here};
    size_t out = (size_t)-1;
    if (!next || !prev) goto done;
    for (size_t i = 0; i < n; i++) {
        next[i] = i + 1 < n ? (uint32_t)(i + 1) : NONE_POS;
        prev[i] = i ? (uint32_t)(i - 1) : NONE_POS;
    }
    uint32_t result;
    for (size_t i = 0; i + 1 < n; i++) {
        uint32_t rank = pair_rank(table, ids[i], ids[i + 1], &result);
        if (rank != NO_RANK && heap_push(&heap, (uint64_t)rank << 32 | i)) goto done;
    }
    while (heap.size) {
        uint64_t item = heap_pop(&heap);
        uint32_t rank = (uint32_t)(item >> 32), at = (uint32_t)item;
        uint32_t right = next[at];
        /* stale: `at` was merged into its left neighbour, or its pair changed */
        if (prev[at] == at || right == NONE_POS || pair_rank(table, ids[at], ids[right], &result) != rank) continue;
        ids[at] = result;
        next[at] = next[right];
        if (next[right] != NONE_POS) prev[next[right]] = at;
        prev[right] = right; /* marks `right` as gone */
        uint32_t before = prev[at];
        if (before != NONE_POS) {
            uint32_t r = pair_rank(table, ids[before], ids[at], &result);
            if (r != NO_RANK && heap_push(&heap, (uint64_t)r << 32 | before)) goto done;
        }
        if (next[at] != NONE_POS) {
            uint32_t r = pair_rank(table, ids[at], ids[next[at]], &result);
            if (r != NO_RANK && heap_push(&heap, (uint64_t)r << 32 | at)) goto done;
        }
    }
    out = 0;
    for (uint32_t i = 0; i != NONE_POS; i = next[i]) ids[out++] = ids[i];
done:
    if (!here) {
        free(next);
        free(prev);
    }
    if (!heap.borrowed) free(heap.items);
    return out;
}

/* --- the longest chunks: a bucket per rank, linear time --- */

/* Where every token has one producing merge and each side of a merge was
 * built by a merge of lower rank (a proper merge list, bpefst/tokenizer/
 * model.py), merging the pair of rank r only creates pairs of rank above r:
 * the lowest rank present never decreases.  So instead of a heap, a bucket of
 * positions per rank, visited in rank order; a bucket's positions are merged
 * left to right (the textbook's leftmost-first), sorted first where they were
 * not added in order.  O(n + ranks) for a chunk of n bytes, plus the sorting
 * of buckets filled out of order (none for runs of one letter or space). */
#define BUCKETS_FROM 65536 /* symbols; below, the heap (the buckets' cost in ranks does not pay) */
#define RANKS_SHRANK ((size_t)-2)

static int compare_positions(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

typedef struct {
    uint32_t position, older; /* older: the entry added before it to the same bucket, or NONE_POS */
} Entry;

typedef struct {
    uint32_t *head; /* per rank: the last entry added, or NONE_POS */
    Entry *entries;
    size_t count, capacity;
} Buckets;

static int bucket_add(Buckets *b, uint32_t rank, uint32_t at) {
    if (b->count == b->capacity) {
        size_t capacity = 2 * b->capacity;
        Entry *entries = realloc(b->entries, capacity * sizeof(Entry));
        if (!entries) return -1;
        b->entries = entries;
        b->capacity = capacity;
    }
    b->entries[b->count] = (Entry){at, b->head[rank]};
    b->head[rank] = (uint32_t)b->count++;
    return 0;
}

/* One symbol of the chunk: its token, and its neighbours in the list (prev == itself once merged away).
 * Kept together so that a merge touches one cache line per symbol: at 10 MB the arrays are far larger
 * than the caches, and every access is a miss. */
typedef struct {
    uint32_t id, next, prev;
} Node;

/* BPE of ids[0..n) in place; the new length, (size_t)-1 when out of memory, RANKS_SHRANK when a new pair
 * ranked at or below the current one (the table breaks the premise; ids are then spoiled). */
static size_t bpe_buckets(const PairTable *table, uint32_t *ids, size_t n) {
    size_t ranks = table->rank_limit, out = (size_t)-1;
    Node *node = malloc(n * sizeof(Node));
    uint32_t *batch = malloc(n * sizeof(uint32_t));
    /* the first pairs, counted into place by rank: each bucket's first entries are contiguous and in order */
    uint32_t *first = malloc(n * sizeof(uint32_t)), *start = calloc(ranks + 2, sizeof(uint32_t));
    Buckets b = {malloc((ranks ? ranks : 1) * sizeof(uint32_t)), malloc(64 * sizeof(Entry)), 0, 64};
    if (!node || !batch || !first || !start || !b.head || !b.entries) goto done;
    memset(b.head, 0xFF, ranks * sizeof(uint32_t));
    uint32_t result;
    for (size_t i = 0; i < n; i++)
        node[i] = (Node){ids[i], i + 1 < n ? (uint32_t)(i + 1) : NONE_POS, i ? (uint32_t)(i - 1) : NONE_POS};
    for (size_t i = 0; i + 1 < n; i++) { /* batch holds each pair's rank for now */
        batch[i] = pair_rank(table, ids[i], ids[i + 1], &result);
        if (batch[i] != NO_RANK) start[batch[i] + 2]++;
    }
    for (size_t r = 2; r < ranks + 2; r++) start[r] += start[r - 1];
    for (size_t i = 0; i + 1 < n; i++) /* start[r + 1] is the fill point of rank r */
        if (batch[i] != NO_RANK) first[start[batch[i] + 1]++] = (uint32_t)i;
    for (size_t rank = 0; rank < ranks; rank++) {
        size_t k = start[rank + 1] - start[rank];
        memcpy(batch, first + start[rank], k * sizeof(uint32_t));
        size_t added = k;
        for (uint32_t e = b.head[rank]; e != NONE_POS; e = b.entries[e].older) {
            if (k == n) { /* a position twice in one bucket: not a proper table after all */
                out = RANKS_SHRANK;
                goto done;
            }
            batch[k++] = b.entries[e].position;
        }
        if (!k) continue;
        b.head[rank] = NONE_POS;
        for (size_t j = 0; j < (k - added) / 2; j++) { /* the list runs newest first */
            uint32_t swap = batch[added + j];
            batch[added + j] = batch[k - 1 - j];
            batch[k - 1 - j] = swap;
        }
        /* Occurrences of a pair (a, b) with a != b cannot overlap, and merging one creates only pairs
         * of higher rank, so their order does not matter; runs of (a, a) go leftmost first. */
        int runs = 0;
        for (size_t j = 0; j < k; j++) {
            Node *at = &node[batch[j]];
            if (at->prev != batch[j] && at->next != NONE_POS && pair_rank(table, at->id, node[at->next].id, &result) == rank) {
                runs = at->id == node[at->next].id;
                break;
            }
        }
        for (size_t j = 1; runs && j < k; j++)
            if (batch[j] < batch[j - 1]) {
                qsort(batch, k, sizeof(uint32_t), compare_positions);
                break;
            }
        for (size_t j = 0; j < k; j++) {
            uint32_t here = batch[j];
            Node *at = &node[here];
            uint32_t right = at->next;
            if (at->prev == here || right == NONE_POS || pair_rank(table, at->id, node[right].id, &result) != rank) continue;
            at->id = result;
            at->next = node[right].next;
            if (at->next != NONE_POS) node[at->next].prev = here;
            node[right].prev = right; /* gone */
            if (at->prev != NONE_POS) {
                uint32_t r = pair_rank(table, node[at->prev].id, at->id, &result);
                if (r != NO_RANK && r <= rank) {
                    out = RANKS_SHRANK;
                    goto done;
                }
                if (r != NO_RANK && bucket_add(&b, r, at->prev)) goto done;
            }
            if (at->next != NONE_POS) {
                uint32_t r = pair_rank(table, at->id, node[at->next].id, &result);
                if (r != NO_RANK && r <= rank) {
                    out = RANKS_SHRANK;
                    goto done;
                }
                if (r != NO_RANK && bucket_add(&b, r, here)) goto done;
            }
        }
    }
    out = 0;
    for (uint32_t i = 0; i != NONE_POS; i = node[i].next) ids[out++] = node[i].id;
done:
    free(node);
    free(batch);
    free(first);
    free(start);
    free(b.head);
    free(b.entries);
    return out;
}

/* BPE of ids[0..n) in place by the fastest exact route for its length; (size_t)-1 when out of memory. */
static size_t bpe_long(const PairTable *table, uint32_t *ids, size_t n) {
    if (n < BUCKETS_FROM || !table->ranks_grow) return bpe_heap(table, ids, n);
    uint32_t *original = malloc(n * sizeof(uint32_t));
    if (!original) return (size_t)-1;
    memcpy(original, ids, n * sizeof(uint32_t));
    size_t count = bpe_buckets(table, ids, n);
    if (count == RANKS_SHRANK) { /* cannot happen when ranks_grow holds; the heap is right for any table */
        memcpy(ids, original, n * sizeof(uint32_t));
        count = bpe_heap(table, ids, n);
    }
    free(original);
    return count;
}

#endif
