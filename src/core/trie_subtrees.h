/* The spelling trie's large subtrees, so that the walk carrying transforms can file their tokens in bulk:
 * the compiled twin of bpefst/promotion/subtrees.py, which explains the shortcut.
 *
 * Below a trie node, when every symbol on the arcs under it (its *alphabet*) moves the current transform
 * the same way, and then the next one, and so on for the subtree's height, all tokens d symbols below the
 * node share the transform reached after d steps, whatever they spell (the letter tokens below " hel" in
 * a loop over [A-Za-z ]).  Indexed here: the nodes with at least SUBTREE_MIN_TOKENS tokens below them, each
 * with its alphabet (interned), its height and its tokens by depth.  Built once per walker, on the first
 * walk carrying transforms; a trie too large for the index (SUBTREE_MAX_ENTRIES) goes without it. */
#ifndef BPEFST_TRIE_SUBTREES_H
#define BPEFST_TRIE_SUBTREES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Smaller subtrees cost about as much to check as to walk.  The pure index (subtrees.MIN_TOKENS) takes 64;
 * here, where a check is a memo lookup per depth, 32 measured 3-4 % faster on the person schema's first mask
 * than 64 (GPT-2 and cl100k; e-mail, JSON and record the same). */
#define SUBTREE_MIN_TOKENS 32
#define SUBTREE_MAX_ENTRIES ((size_t)1 << 24)

typedef struct {
    int32_t *index_of;      /* node -> its index, or -1 */
    int32_t *alphabet;      /* index -> its alphabet's id */
    int32_t *height;        /* index -> the depth of its deepest token */
    int32_t *first;         /* index -> where its height + 1 offsets start in depth_start */
    int32_t *depth_start;   /* offsets into tokens: of depth 1, 2, .. height, and the end, per indexed node */
    int32_t *tokens;        /* the tokens below each indexed node, by depth */
    int32_t *alphabet_start, *alphabet_symbol; /* alphabet id -> its symbols, ascending */
    int32_t alphabets, max_height;
} TrieSubtrees;

static void trie_subtrees_free(TrieSubtrees *s) {
    if (!s) return;
    free(s->index_of), free(s->alphabet), free(s->height), free(s->first), free(s->depth_start), free(s->tokens);
    free(s->alphabet_start), free(s->alphabet_symbol);
    free(s);
}

/* The tokens an edge files (one, the ones ending at a node, or none) and where they are. */
static inline int32_t edge_token_count(const int32_t *edge_token, const int32_t *end_start, int32_t e) {
    int32_t token = edge_token[e];
    if (token >= 0) return 1;
    if (token < -1) return end_start[-2 - token + 1] - end_start[-2 - token];
    return 0;
}

/* The alphabet of the edges of nodes [from, to) as an interned id (-1 out of memory).  `mark` is a scratch of
 * `symbols` zeroed bytes, left zeroed; `table` maps a hash of the symbols to candidate ids. */
typedef struct {
    int32_t *start, *symbol, count, capacity;
    size_t symbols_length, symbols_capacity;
    int32_t *table;
    size_t table_size;
    uint64_t *hash;
} AlphabetTable;

static uint64_t symbols_hash(const int32_t *symbols, int32_t count) {
    uint64_t h = 0xCBF29CE484222325ull ^ (uint64_t)count;
    for (int32_t i = 0; i < count; i++) h = (h ^ (uint64_t)(uint32_t)symbols[i]) * 0x100000001B3ull;
    return h ^ h >> 31;
}

/* An open-addressing table of `size` slots (a power of two, -1 free) holding ids 0 .. count - 1 by their
 * hashes, id's hash the uint64 at `hashes` + id * `stride` bytes; NULL out of memory.  The interning tables
 * here and promote.h's transforms grow with it. */
static int32_t *ids_by_hash(size_t size, int32_t count, const void *hashes, size_t stride) {
    int32_t *table = malloc(size * sizeof(int32_t));
    if (!table) return NULL;
    for (size_t k = 0; k < size; k++) table[k] = -1;
    for (int32_t id = 0; id < count; id++) {
        uint64_t hash;
        memcpy(&hash, (const char *)hashes + (size_t)id * stride, sizeof hash);
        size_t k = (size_t)hash & (size - 1);
        while (table[k] >= 0) k = (k + 1) & (size - 1);
        table[k] = id;
    }
    return table;
}

static int alphabet_table_rehash(AlphabetTable *a) {
    size_t size = a->table_size ? 2 * a->table_size : 1024;
    int32_t *table = ids_by_hash(size, a->count, a->hash, sizeof *a->hash);
    if (!table) return -1;
    free(a->table);
    a->table = table, a->table_size = size;
    return 0;
}

static int32_t alphabet_intern(AlphabetTable *a, const int32_t *symbols, int32_t count) {
    uint64_t hash = symbols_hash(symbols, count);
    size_t k = (size_t)hash & (a->table_size - 1);
    for (; a->table[k] >= 0; k = (k + 1) & (a->table_size - 1)) {
        int32_t id = a->table[k];
        if (a->hash[id] == hash && a->start[id + 1] - a->start[id] == count &&
            !memcmp(a->symbol + a->start[id], symbols, (size_t)count * 4))
            return id;
    }
    if (a->count + 1 >= a->capacity) {
        int32_t capacity = a->capacity ? 2 * a->capacity : 256;
        int32_t *start = realloc(a->start, ((size_t)capacity + 1) * 4);
        if (start) a->start = start;
        uint64_t *hashes = start ? realloc(a->hash, (size_t)capacity * 8) : NULL;
        if (hashes) a->hash = hashes;
        if (!start || !hashes) return -1;
        a->capacity = capacity;
    }
    if (a->symbols_length + (size_t)count > a->symbols_capacity) {
        size_t capacity = a->symbols_capacity ? 2 * a->symbols_capacity : 4096;
        while (capacity < a->symbols_length + (size_t)count) capacity *= 2;
        int32_t *symbol = realloc(a->symbol, capacity * 4);
        if (!symbol) return -1;
        a->symbol = symbol, a->symbols_capacity = capacity;
    }
    int32_t id = a->count++;
    if (id == 0) a->start[0] = 0;
    memcpy(a->symbol + a->symbols_length, symbols, (size_t)count * 4);
    a->symbols_length += (size_t)count;
    a->start[id + 1] = (int32_t)a->symbols_length;
    a->hash[id] = hash;
    if (2 * (size_t)a->count > a->table_size) {
        if (alphabet_table_rehash(a)) return -1;
    } else {
        a->table[k] = id;
    }
    return id;
}

/* The index of a laid-out trie (preorder: each subtree is the nodes [node, subtree_end[node])); NULL with
 * *failed = 0 when the trie is too large for it, NULL with *failed = 1 when out of memory. */
static TrieSubtrees *trie_subtrees_build(int32_t nodes, int32_t symbols, const int32_t *node_start,
                                         const int32_t *edge_symbol, const int32_t *edge_token,
                                         const int32_t *edge_child, const int32_t *end_start, const int32_t *end_token,
                                         const int32_t *subtree_end, int *failed) {
    TrieSubtrees *s = calloc(1, sizeof(TrieSubtrees));
    int32_t all_nodes = nodes;
    int32_t *below = malloc(((size_t)nodes + 1) * 4), *depth = malloc(((size_t)nodes + 1) * 4);
    int32_t *alphabet_scratch = malloc(((size_t)symbols + 1) * 4);
    uint8_t *mark = calloc((size_t)symbols + 1, 1);
    AlphabetTable a = {0};
    *failed = 1;
    if (!s || !below || !depth || !alphabet_scratch || !mark || alphabet_table_rehash(&a)) goto fail;
    /* only the root's subtree is walked, and only there is a subtree contiguous and its depths consistent
     * (nodes no edge reaches, which hold tokens ending elsewhere, are laid out after it in their own order) */
    nodes = subtree_end[0];
    /* tokens strictly below each node (children come after their parent), and each node's depth */
    for (int32_t node = nodes - 1; node >= 0; node--) {
        int64_t total = 0; /* (saturated: tables that file an end list from many edges count it each time) */
        for (int32_t e = node_start[node]; e < node_start[node + 1]; e++) {
            total += edge_token_count(edge_token, end_start, e);
            if (edge_child[e]) total += below[edge_child[e]];
            if (total > (int64_t)SUBTREE_MAX_ENTRIES) total = (int64_t)SUBTREE_MAX_ENTRIES + 1;
        }
        below[node] = (int32_t)total;
    }
    memset(depth, 0, ((size_t)nodes + 1) * 4);
    for (int32_t node = 0; node < nodes; node++)
        for (int32_t e = node_start[node]; e < node_start[node + 1]; e++)
            if (edge_child[e]) depth[edge_child[e]] = depth[node] + 1;
    size_t indexed = 0, entries = 0, offsets = 0;
    for (int32_t node = 0; node < nodes; node++)
        if (below[node] >= SUBTREE_MIN_TOKENS) {
            indexed++, entries += (size_t)below[node];
            if (entries > SUBTREE_MAX_ENTRIES) break;
            int32_t height = 0;
            for (int32_t m = node; m < subtree_end[node]; m++)
                if (node_start[m + 1] > node_start[m] && depth[m] - depth[node] + 1 > height) height = depth[m] - depth[node] + 1;
            offsets += (size_t)height + 1;
        }
    if (entries > SUBTREE_MAX_ENTRIES || offsets > SUBTREE_MAX_ENTRIES) {
        *failed = 0;
        goto fail;
    }
    s->index_of = malloc(((size_t)all_nodes + 1) * 4), s->alphabet = malloc((indexed + 1) * 4);
    s->height = malloc((indexed + 1) * 4), s->first = malloc((indexed + 1) * 4);
    s->depth_start = malloc((offsets + 1) * 4), s->tokens = malloc((entries + 1) * 4);
    if (!s->index_of || !s->alphabet || !s->height || !s->first || !s->depth_start || !s->tokens) goto fail;
    int32_t k = 0, offset = 0, placed = 0;
    for (int32_t node = nodes; node < all_nodes; node++) s->index_of[node] = -1;
    for (int32_t node = 0; node < nodes; node++) {
        s->index_of[node] = -1;
        if (below[node] < SUBTREE_MIN_TOKENS) continue;
        int32_t end = subtree_end[node], height = 0, letters = 0;
        for (int32_t m = node; m < end; m++)
            for (int32_t e = node_start[m]; e < node_start[m + 1]; e++) {
                if (depth[m] - depth[node] + 1 > height) height = depth[m] - depth[node] + 1;
                if (!mark[edge_symbol[e]]) mark[edge_symbol[e]] = 1, alphabet_scratch[letters++] = edge_symbol[e];
            }
        for (int32_t i = 0; i < letters; i++) mark[alphabet_scratch[i]] = 0;
        /* ascending, so that equal alphabets intern alike (an insertion sort: most alphabets are short) */
        for (int32_t i = 1; i < letters; i++) {
            int32_t x = alphabet_scratch[i], j = i;
            for (; j > 0 && alphabet_scratch[j - 1] > x; j--) alphabet_scratch[j] = alphabet_scratch[j - 1];
            alphabet_scratch[j] = x;
        }
        int32_t id = alphabet_intern(&a, alphabet_scratch, letters);
        if (id < 0) goto fail;
        s->index_of[node] = k, s->alphabet[k] = id, s->height[k] = height, s->first[k] = offset;
        if (height > s->max_height) s->max_height = height;
        /* the tokens by depth (an edge of a node dd below this one files at depth dd + 1): counted, then placed */
        int32_t *at = s->depth_start + offset;
        memset(at, 0, ((size_t)height + 1) * 4);
        for (int32_t m = node; m < end; m++)
            for (int32_t e = node_start[m]; e < node_start[m + 1]; e++)
                at[depth[m] - depth[node] + 1] += edge_token_count(edge_token, end_start, e);
        at[0] = placed;
        for (int32_t d = 1; d <= height; d++) at[d] += at[d - 1]; /* at[dd]: where depth dd + 1 goes next */
        for (int32_t m = node; m < end; m++)
            for (int32_t e = node_start[m]; e < node_start[m + 1]; e++) {
                int32_t token = edge_token[e], dd = depth[m] - depth[node];
                if (token >= 0) {
                    s->tokens[at[dd]++] = token;
                } else if (token < -1) {
                    for (int32_t j = end_start[-2 - token]; j < end_start[-2 - token + 1]; j++) s->tokens[at[dd]++] = end_token[j];
                }
            }
        /* each at[dd] now ends depth dd + 1: shifted back, they are the starts again, at[height] the end */
        for (int32_t d = height; d > 0; d--) at[d] = at[d - 1];
        at[0] = placed;
        placed = at[height];
        offset += height + 1, k++;
    }
    s->alphabet_start = a.start, s->alphabet_symbol = a.symbol, s->alphabets = a.count;
    a.start = a.symbol = NULL;
    free(a.table), free(a.hash), free(below), free(depth), free(alphabet_scratch), free(mark);
    *failed = 0;
    return s;
fail:
    free(a.start), free(a.symbol), free(a.table), free(a.hash);
    free(below), free(depth), free(alphabet_scratch), free(mark);
    trie_subtrees_free(s);
    return NULL;
}

/* The tokens d symbols below indexed node k (1 <= d <= height): s->tokens[*from .. *to). */
static inline void subtree_tokens_at(const TrieSubtrees *s, int32_t k, int32_t d, int32_t *from, int32_t *to) {
    const int32_t *at = s->depth_start + s->first[k];
    *from = at[d - 1], *to = at[d];
}

#endif
