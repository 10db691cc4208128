/* DFA minimization over flat arrays, shared by the regex compiler's last step (minimal_dfa.h) and the chunked
 * pattern (promote.h, chunk_product): the compiled twin of bpefst/automata/minimization.py, which explains it.
 *
 * Hopcroft's refinement for partial transition functions as Valmari & Lehtinen (2008) and Valmari (2012,
 * "Fast brief practical DFA minimization") lay it out: two refinable partitions, the states into blocks and
 * the arcs into "cords" (first by label); each cord splits the blocks by its arcs' sources, each new block
 * (the smaller side of a split) splits the cords by the arcs into it.  The input must be trim (no state is
 * equivalent to the missing dead state).  Then the quotient is numbered canonically, breadth first from the
 * start's block with labels ascending, as minimization.canonical numbers it: a minimal DFA so numbered is one
 * value per language.
 */
#ifndef BPEFST_REFINE_H
#define BPEFST_REFINE_H

/* A refinable partition of 0 .. n-1: the elements of set s are elements[first[s] .. past[s] - 1]; marking moves
 * an element to the front part of its set, and split() makes the smaller of the marked and the unmarked parts
 * of each touched set a new set. */
typedef struct {
    int32_t sets, *elements, *location, *set_of, *first, *past, *marked, *touched, touched_count;
} Partition;

static void partition_free(Partition *p) {
    free(p->elements), free(p->location), free(p->set_of), free(p->first), free(p->past), free(p->marked), free(p->touched);
}

static int partition_init(Partition *p, int32_t n) {
    size_t size = (size_t)n + 1;
    p->elements = malloc(size * 4), p->location = malloc(size * 4), p->set_of = malloc(size * 4);
    p->first = malloc(size * 4), p->past = malloc(size * 4), p->marked = calloc(size, 4), p->touched = malloc(size * 4);
    if (!p->elements || !p->location || !p->set_of || !p->first || !p->past || !p->marked || !p->touched) return -1;
    for (int32_t e = 0; e < n; e++) p->elements[e] = p->location[e] = e, p->set_of[e] = 0;
    p->sets = n > 0, p->first[0] = 0, p->past[0] = n, p->touched_count = 0;
    return 0;
}

static void partition_mark(Partition *p, int32_t e) {
    int32_t s = p->set_of[e], i = p->location[e], j = p->first[s] + p->marked[s];
    p->elements[i] = p->elements[j], p->location[p->elements[i]] = i;
    p->elements[j] = e, p->location[e] = j;
    if (!p->marked[s]++) p->touched[p->touched_count++] = s;
}

static void partition_split(Partition *p) {
    while (p->touched_count) {
        int32_t s = p->touched[--p->touched_count], j = p->first[s] + p->marked[s];
        if (j == p->past[s]) { /* every element marked: no split */
            p->marked[s] = 0;
            continue;
        }
        int32_t z = p->sets++;
        if (p->marked[s] <= p->past[s] - j) { /* the marked part is the smaller: it leaves */
            p->first[z] = p->first[s], p->past[z] = p->first[s] = j;
        } else {
            p->past[z] = p->past[s], p->first[z] = p->past[s] = j;
        }
        for (int32_t i = p->first[z]; i < p->past[z]; i++) p->set_of[p->elements[i]] = z;
        p->marked[s] = p->marked[z] = 0;
    }
}

/* rank[a] := the rank of label[a] among the distinct labels (ascending); returns their number, -1 out of
 * memory.  An open-addressing set finds the distinct labels (few: the symbols of an alphabet), which are then
 * sorted, so ranking costs one pass over the arcs. */
static int32_t rank_labels(int32_t arcs, const int64_t *label, int32_t *rank) {
    size_t size = 64;
    int32_t count = 0, capacity = 32;
    int64_t *keys = malloc(size * 8), *distinct = malloc((size_t)capacity * 8);
    int32_t *slot_of = malloc(size * 4);
    if (!keys || !distinct || !slot_of) goto fail;
    for (size_t k = 0; k < size; k++) slot_of[k] = -1;
    for (int32_t a = 0; a < arcs; a++) {
        uint64_t h = (uint64_t)label[a] * 0x9E3779B97F4A7C15ull;
        size_t k = (size_t)(h >> 20) & (size - 1);
        while (slot_of[k] >= 0 && keys[k] != label[a]) k = (k + 1) & (size - 1);
        if (slot_of[k] >= 0) continue;
        keys[k] = label[a], slot_of[k] = count;
        if (count == capacity) {
            int64_t *grown = realloc(distinct, (size_t)capacity * 2 * 8);
            if (!grown) goto fail;
            distinct = grown, capacity *= 2;
        }
        distinct[count++] = label[a];
        if (2 * (size_t)count > size) { /* grow the set: rehash what it holds */
            size_t bigger = 4 * size;
            int64_t *new_keys = malloc(bigger * 8);
            int32_t *new_slots = malloc(bigger * 4);
            if (!new_keys || !new_slots) {
                free(new_keys), free(new_slots);
                goto fail;
            }
            for (size_t j = 0; j < bigger; j++) new_slots[j] = -1;
            for (int32_t i = 0; i < count; i++) {
                size_t j = (size_t)(((uint64_t)distinct[i] * 0x9E3779B97F4A7C15ull) >> 20) & (bigger - 1);
                while (new_slots[j] >= 0) j = (j + 1) & (bigger - 1);
                new_keys[j] = distinct[i], new_slots[j] = i;
            }
            free(keys), free(slot_of);
            keys = new_keys, slot_of = new_slots, size = bigger;
        }
    }
    /* sort the distinct labels (insertion sort: few of them), then give each slot its rank */
    for (int32_t i = 1; i < count; i++)
        for (int32_t j = i; j > 0 && distinct[j - 1] > distinct[j]; j--) {
            int64_t x = distinct[j];
            distinct[j] = distinct[j - 1], distinct[j - 1] = x;
        }
    for (size_t k = 0; k < size; k++)
        if (slot_of[k] >= 0) {
            int32_t lo = 0, hi = count - 1;
            while (distinct[(lo + hi) / 2] != keys[k])
                if (distinct[(lo + hi) / 2] < keys[k]) lo = (lo + hi) / 2 + 1;
                else hi = (lo + hi) / 2 - 1;
            slot_of[k] = (lo + hi) / 2;
        }
    for (int32_t a = 0; a < arcs; a++) {
        size_t k = (size_t)(((uint64_t)label[a] * 0x9E3779B97F4A7C15ull) >> 20) & (size - 1);
        while (keys[k] != label[a] || slot_of[k] < 0) k = (k + 1) & (size - 1);
        rank[a] = slot_of[k];
    }
    free(keys), free(distinct), free(slot_of);
    return count;
fail:
    free(keys), free(distinct), free(slot_of);
    return -1;
}

/* The minimal quotient of a trim DFA, canonically numbered.  Input: `states` states, `arcs` arcs (tail, label,
 * head), finals (one byte per state), the start.  Output: number[q], the quotient state of each state (0 for the
 * start's), and *quotient_states; order_arcs lists, for each quotient state in order, the arcs of one state of
 * it by ascending label (their count per quotient state in arc_begin, quotient_states + 1 entries).  The arcs
 * listed are input arcs: their label and head (through number[]) give the quotient's arcs.  0, or -1 out of
 * memory (the outputs are then freed). */
typedef struct {
    int32_t count, *number, *arc_begin, *arcs;
} Quotient;

static void quotient_free(Quotient *q) {
    free(q->number), free(q->arc_begin), free(q->arcs);
    q->number = q->arc_begin = q->arcs = NULL;
}

static int minimal_quotient_of(int32_t states, int32_t arcs, const int32_t *tail, const int64_t *label,
                               const int32_t *head, const uint8_t *final, int32_t start, Quotient *out) {
    Partition blocks = {0}, cords = {0};
    int32_t *rank = malloc((size_t)arcs * 4 + 4), *in_start = calloc((size_t)states + 2, 4);
    int32_t *in_arc = malloc((size_t)arcs * 4 + 4), *out_start = calloc((size_t)states + 2, 4);
    int32_t *by_tail = malloc((size_t)arcs * 4 + 4), *count = NULL, *order = NULL, *block_number = NULL;
    memset(out, 0, sizeof *out);
    int status = -1;
    if (!rank || !in_start || !in_arc || !out_start || !by_tail) goto done;
    int32_t labels = rank_labels(arcs, label, rank);
    if (labels < 0 || partition_init(&blocks, states) || partition_init(&cords, arcs)) goto done;
    /* blocks: the finals apart from the rest */
    for (int32_t q = 0; q < states; q++)
        if (final[q]) partition_mark(&blocks, q);
    partition_split(&blocks);
    /* cords: the arcs by label (counted by rank), and each state's arcs by ascending label the same way */
    count = calloc((size_t)labels + 1, 4);
    if (!count) goto done;
    for (int32_t a = 0; a < arcs; a++) count[rank[a] + 1]++;
    for (int32_t r = 0; r < labels; r++) count[r + 1] += count[r]; /* count[r]: where label r's arcs start */
    cords.sets = labels;
    for (int32_t r = 0; r < labels; r++) cords.first[r] = count[r], cords.past[r] = count[r + 1];
    for (int32_t a = 0; a < arcs; a++) {
        int32_t i = count[rank[a]]++;
        cords.elements[i] = a, cords.location[a] = i, cords.set_of[a] = rank[a];
    }
    for (int32_t a = 0; a < arcs; a++) in_start[head[a] + 2]++, out_start[tail[a] + 2]++;
    for (int32_t q = 0; q < states; q++) in_start[q + 2] += in_start[q + 1], out_start[q + 2] += out_start[q + 1];
    for (int32_t i = 0; i < arcs; i++) { /* by cord order, so each state's arcs come out by ascending label */
        int32_t a = cords.elements[i];
        in_arc[in_start[head[a] + 1]++] = a;
        by_tail[out_start[tail[a] + 1]++] = a;
    }
    /* refinement: each cord splits blocks by its sources, each new block splits cords by the arcs into it */
    for (int32_t b = 1, c = 0; c < cords.sets; c++) {
        for (int32_t i = cords.first[c]; i < cords.past[c]; i++) partition_mark(&blocks, tail[cords.elements[i]]);
        partition_split(&blocks);
        for (; b < blocks.sets; b++) {
            for (int32_t i = blocks.first[b]; i < blocks.past[b]; i++) {
                int32_t q = blocks.elements[i];
                for (int32_t j = in_start[q]; j < in_start[q + 1]; j++) partition_mark(&cords, in_arc[j]);
            }
            partition_split(&cords);
        }
    }
    /* canonical numbering of the blocks, breadth first from the start's, each by one state's arcs */
    int32_t n = blocks.sets;
    order = malloc((size_t)n * 4 + 4), block_number = malloc((size_t)n * 4 + 4);
    out->number = malloc((size_t)states * 4 + 4), out->arc_begin = malloc((size_t)n * 4 + 8);
    out->arcs = malloc((size_t)arcs * 4 + 4);
    if (!order || !block_number || !out->number || !out->arc_begin || !out->arcs) goto done;
    for (int32_t b = 0; b < n; b++) block_number[b] = -1;
    int32_t numbered = 0, listed = 0;
    block_number[blocks.set_of[start]] = numbered, order[numbered++] = blocks.set_of[start];
    for (int32_t i = 0; i < numbered; i++) {
        int32_t q = blocks.elements[blocks.first[order[i]]];
        out->arc_begin[i] = listed;
        for (int32_t j = out_start[q]; j < out_start[q + 1]; j++) {
            int32_t a = by_tail[j], to = blocks.set_of[head[a]];
            if (block_number[to] < 0) block_number[to] = numbered, order[numbered++] = to;
            out->arcs[listed++] = a;
        }
    }
    out->arc_begin[numbered] = listed;
    for (int32_t q = 0; q < states; q++) out->number[q] = block_number[blocks.set_of[q]];
    out->count = numbered;
    status = 0;
done:
    if (status) quotient_free(out);
    partition_free(&blocks), partition_free(&cords);
    free(rank), free(in_start), free(in_arc), free(out_start), free(by_tail), free(count), free(order), free(block_number);
    return status;
}

#endif
