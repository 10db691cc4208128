/* The compiled loops behind loading a `.bpefst` tokenizer (the pure twins are
 * bpefst/tokenizer/formats/native.py's from_body and BPEModel's merge_results
 * and _looks_valid in bpefst/tokenizer/model.py).
 *
 * The artifact stores the vocabulary as one blob of token bytes with packed
 * ids and offsets, and the merges as packed id pairs.  Loading must check that
 * the tables describe a proper byte-level BPE model (a tampered file must not
 * produce an improper tokenizer), which in Python costs more than reading them:
 *
 *   split_tokens          the blob cut at the offsets, as a list of bytes;
 *   checked_merge_results the id each merge produces (its two tokens' bytes
 *                         concatenated, looked up in a hash table of the
 *                         tokens), after checking in the same passes that ids
 *                         and tokens are unique and non-empty, no merge is
 *                         listed twice, and the list is proper (each side of
 *                         merge k is a single byte or produced by a merge
 *                         ranked below k).  None when any check fails: Python
 *                         then runs its own checks, which name the culprit.
 */
#ifndef BPEFST_VOCAB_H
#define BPEFST_VOCAB_H

#include "bpe.h"

#define DENSE_SLACK 65536 /* ids up to 4 x the token count + this are indexed by an array; sparser goes to Python */

static int read_offsets(Py_buffer *offsets, size_t blob_length, size_t *count) {
    if (offsets->len % 4 || offsets->len < 4) return -1;
    const uint32_t *at = offsets->buf;
    *count = (size_t)offsets->len / 4 - 1;
    if (at[0] != 0 || at[*count] != blob_length) return -1;
    for (size_t k = 0; k < *count; k++)
        if (at[k + 1] < at[k]) return -1;
    return 0;
}

/* split_tokens(blob, offsets) -> [blob[offsets[k]:offsets[k + 1]] for each k]; ValueError unless the
 * offsets start at 0, never fall and end at the blob's end. */
static PyObject *split_tokens(PyObject *module, PyObject *args) {
    Py_buffer blob = {0}, offsets = {0};
    if (!PyArg_ParseTuple(args, "y*y*:split_tokens", &blob, &offsets)) return NULL;
    PyObject *tokens = NULL;
    size_t count;
    if (read_offsets(&offsets, (size_t)blob.len, &count)) {
        PyErr_SetString(PyExc_ValueError, "offsets must start at 0, never fall and end at the blob's end");
        goto done;
    }
    tokens = PyList_New((Py_ssize_t)count);
    if (!tokens) goto done;
    const uint32_t *at = offsets.buf;
    for (size_t k = 0; k < count; k++) {
        PyObject *token = PyBytes_FromStringAndSize((const char *)blob.buf + at[k], at[k + 1] - at[k]);
        if (!token) {
            Py_CLEAR(tokens);
            goto done;
        }
        PyList_SET_ITEM(tokens, (Py_ssize_t)k, token);
    }
done:
    PyBuffer_Release(&blob);
    PyBuffer_Release(&offsets);
    return tokens;
}

static uint64_t fnv1a(uint64_t hash, const uint8_t *bytes, size_t length) {
    for (size_t k = 0; k < length; k++) hash = (hash ^ bytes[k]) * 0x100000001B3ull;
    return hash;
}

#define FNV_START 0xCBF29CE484222325ull

typedef struct {
    const uint8_t *blob;
    const uint32_t *offsets;
    uint64_t *hashes; /* per token */
    uint32_t *slots;  /* token index + 1, 0 where free */
    uint64_t mask;
} TokenTable;

static const uint8_t *token_at(const TokenTable *t, uint32_t k, size_t *length) {
    *length = t->offsets[k + 1] - t->offsets[k];
    return t->blob + t->offsets[k];
}

/* The index of the token spelled a + b (indexes of two tokens), or NONE_POS. */
static uint32_t find_concatenation(const TokenTable *t, uint32_t a, uint32_t b) {
    size_t left_length, right_length;
    const uint8_t *left = token_at(t, a, &left_length), *right = token_at(t, b, &right_length);
    uint64_t hash = fnv1a(t->hashes[a], right, right_length);
    for (uint64_t slot = hash & t->mask; t->slots[slot]; slot = (slot + 1) & t->mask) {
        uint32_t k = t->slots[slot] - 1;
        size_t length;
        const uint8_t *bytes = token_at(t, k, &length);
        if (t->hashes[k] == hash && length == left_length + right_length && !memcmp(bytes, left, left_length) &&
            !memcmp(bytes + left_length, right, right_length))
            return k;
    }
    return NONE_POS;
}

/* Fills the table; 1 if two tokens are equal, -1 when out of memory. */
static int token_table_fill(TokenTable *t, size_t count) {
    size_t size = 16;
    while (size < 2 * count + 2) size *= 2;
    t->hashes = malloc(count * sizeof(uint64_t) + 1);
    t->slots = calloc(size, sizeof(uint32_t));
    if (!t->hashes || !t->slots) return -1;
    t->mask = size - 1;
    for (uint32_t k = 0; k < count; k++) {
        size_t length;
        const uint8_t *bytes = token_at(t, k, &length);
        uint64_t hash = t->hashes[k] = fnv1a(FNV_START, bytes, length), slot = hash & t->mask;
        for (; t->slots[slot]; slot = (slot + 1) & t->mask) {
            size_t other_length;
            const uint8_t *other = token_at(t, t->slots[slot] - 1, &other_length);
            if (t->hashes[t->slots[slot] - 1] == hash && other_length == length && !memcmp(other, bytes, length)) return 1;
        }
        t->slots[slot] = k + 1;
    }
    return 0;
}

/* checked_merge_results(ids, offsets, blob, merges) -> packed uint32 result ids, or None (see above). */
static PyObject *checked_merge_results(PyObject *module, PyObject *args) {
    Py_buffer ids = {0}, offsets = {0}, blob = {0}, merges = {0};
    if (!PyArg_ParseTuple(args, "y*y*y*y*:checked_merge_results", &ids, &offsets, &blob, &merges)) return NULL;
    PyObject *result = NULL;
    TokenTable table = {0};
    PairTable pairs = {0};
    uint32_t *index_of = NULL, *built_at = NULL;
    IdBuffer results = {0};
    size_t count, merge_count = (size_t)merges.len / 8;
    int ok = 0;
    if (ids.len % 4 || merges.len % 8 || read_offsets(&offsets, (size_t)blob.len, &count) || count != (size_t)ids.len / 4)
        goto verdict;
    const uint32_t *id = ids.buf, *at = offsets.buf, *pair = merges.buf;
    uint32_t largest = 0;
    for (size_t k = 0; k < count; k++) {
        if (at[k + 1] == at[k]) goto verdict; /* an empty token */
        if (id[k] > largest) largest = id[k];
    }
    if ((size_t)largest >= 4 * count + DENSE_SLACK || merge_count >= NONE_POS) goto verdict;
    table.blob = blob.buf, table.offsets = at;
    index_of = malloc(((size_t)largest + 1) * sizeof(uint32_t));
    built_at = malloc((count + 1) * sizeof(uint32_t));
    int filled = token_table_fill(&table, count);
    if (!index_of || !built_at || filled < 0 || pair_table_init(&pairs, merge_count) || reserve_ids(&results, merge_count + 1)) {
        PyErr_NoMemory();
        goto done;
    }
    if (filled) goto verdict; /* two ids spell the same token */
    memset(index_of, 0xFF, ((size_t)largest + 1) * sizeof(uint32_t));
    for (size_t k = 0; k < count; k++) {
        if (index_of[id[k]] != NONE_POS) goto verdict; /* an id listed twice */
        index_of[id[k]] = (uint32_t)k;
        built_at[k] = at[k + 1] - at[k] == 1 ? 0 : NONE_POS; /* single bytes are there from the start */
    }
    /* results, each merge once, and the rank + 1 at which each token is first produced */
    for (size_t m = 0; m < merge_count; m++) {
        uint32_t a = pair[2 * m], b = pair[2 * m + 1];
        if (a > largest || b > largest || index_of[a] == NONE_POS || index_of[b] == NONE_POS) goto verdict;
        uint32_t before = pairs.count;
        pair_table_add(&pairs, a, b, (uint32_t)m, 0);
        if (pairs.count == before) goto verdict; /* listed twice */
        uint32_t k = find_concatenation(&table, index_of[a], index_of[b]);
        if (k == NONE_POS) goto verdict;
        results.ids[m] = id[k];
        if (built_at[k] == NONE_POS) built_at[k] = (uint32_t)m + 1;
    }
    /* proper: both sides of merge m were built before it */
    for (size_t m = 0; m < merge_count; m++) {
        uint32_t a = built_at[index_of[pair[2 * m]]], b = built_at[index_of[pair[2 * m + 1]]];
        if (a == NONE_POS || b == NONE_POS || a > m || b > m) goto verdict;
    }
    ok = 1;
verdict:
    if (ok)
        result = PyBytes_FromStringAndSize((const char *)results.ids, (Py_ssize_t)(merge_count * sizeof(uint32_t)));
    else {
        result = Py_None;
        Py_INCREF(result);
    }
done:
    free(table.hashes), free(table.slots), free(index_of), free(built_at), free(results.ids);
    pair_table_free(&pairs);
    PyBuffer_Release(&ids), PyBuffer_Release(&offsets), PyBuffer_Release(&blob), PyBuffer_Release(&merges);
    return result;
}

/* --- msgpack of the vocabulary and the merges, for the model's fingerprint --- */

/* The model's fingerprint hashes msgpack of [[id, token bytes], ...] and [[left, right], ...] (see
 * BPEModel.fingerprint); these write exactly what msgpack-python writes for them (ints in the smallest
 * unsigned form, bin types), from the packed tables, without a Python object per entry. */
static uint8_t *msgpack_uint(uint8_t *at, uint32_t value) {
    if (value < 128) {
        *at++ = (uint8_t)value;
    } else if (value < 256) {
        *at++ = 0xCC, *at++ = (uint8_t)value;
    } else if (value < 65536) {
        *at++ = 0xCD, *at++ = (uint8_t)(value >> 8), *at++ = (uint8_t)value;
    } else {
        *at++ = 0xCE, *at++ = (uint8_t)(value >> 24), *at++ = (uint8_t)(value >> 16), *at++ = (uint8_t)(value >> 8);
        *at++ = (uint8_t)value;
    }
    return at;
}

static uint8_t *msgpack_array_header(uint8_t *at, uint32_t count) {
    if (count < 16) {
        *at++ = (uint8_t)(0x90 | count);
    } else if (count < 65536) {
        *at++ = 0xDC, *at++ = (uint8_t)(count >> 8), *at++ = (uint8_t)count;
    } else {
        *at++ = 0xDD, *at++ = (uint8_t)(count >> 24), *at++ = (uint8_t)(count >> 16), *at++ = (uint8_t)(count >> 8);
        *at++ = (uint8_t)count;
    }
    return at;
}

static uint8_t *msgpack_bin(uint8_t *at, const uint8_t *bytes, uint32_t length) {
    if (length < 256) {
        *at++ = 0xC4, *at++ = (uint8_t)length;
    } else if (length < 65536) {
        *at++ = 0xC5, *at++ = (uint8_t)(length >> 8), *at++ = (uint8_t)length;
    } else {
        *at++ = 0xC6, *at++ = (uint8_t)(length >> 24), *at++ = (uint8_t)(length >> 16), *at++ = (uint8_t)(length >> 8);
        *at++ = (uint8_t)length;
    }
    memcpy(at, bytes, length);
    return at + length;
}

/* msgpack_vocab(ids, offsets, blob) -> msgpack of [[ids[k], blob[offsets[k]:offsets[k + 1]]], ...];
 * msgpack_pairs(pairs) -> msgpack of [[pairs[2k], pairs[2k + 1]], ...] (packed uint32). */
static PyObject *msgpack_vocab(PyObject *module, PyObject *args) {
    Py_buffer ids = {0}, offsets = {0}, blob = {0};
    if (!PyArg_ParseTuple(args, "y*y*y*:msgpack_vocab", &ids, &offsets, &blob)) return NULL;
    PyObject *result = NULL;
    size_t count;
    if (ids.len % 4 || read_offsets(&offsets, (size_t)blob.len, &count) || count != (size_t)ids.len / 4 || count > UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "msgpack_vocab: ids, offsets and blob do not agree");
        goto done;
    }
    result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(5 + count * 11 + (size_t)blob.len));
    if (!result) goto done;
    uint8_t *start = (uint8_t *)PyBytes_AS_STRING(result), *at = msgpack_array_header(start, (uint32_t)count);
    const uint32_t *id = ids.buf, *offset = offsets.buf;
    for (size_t k = 0; k < count; k++) {
        *at++ = 0x92;
        at = msgpack_uint(at, id[k]);
        at = msgpack_bin(at, (const uint8_t *)blob.buf + offset[k], offset[k + 1] - offset[k]);
    }
    if (_PyBytes_Resize(&result, at - start)) result = NULL;
done:
    PyBuffer_Release(&ids), PyBuffer_Release(&offsets), PyBuffer_Release(&blob);
    return result;
}

static PyObject *msgpack_pairs(PyObject *module, PyObject *args) {
    Py_buffer pairs = {0};
    if (!PyArg_ParseTuple(args, "y*:msgpack_pairs", &pairs)) return NULL;
    PyObject *result = NULL;
    size_t count = (size_t)pairs.len / 8;
    if (pairs.len % 8 || count > UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "msgpack_pairs: packed uint32 pairs");
        goto done;
    }
    result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(5 + count * 11));
    if (!result) goto done;
    uint8_t *start = (uint8_t *)PyBytes_AS_STRING(result), *at = msgpack_array_header(start, (uint32_t)count);
    const uint32_t *pair = pairs.buf;
    for (size_t k = 0; k < count; k++) {
        *at++ = 0x92;
        at = msgpack_uint(at, pair[2 * k]);
        at = msgpack_uint(at, pair[2 * k + 1]);
    }
    if (_PyBytes_Resize(&result, at - start)) result = NULL;
done:
    PyBuffer_Release(&pairs);
    return result;
}

/* --- tiktoken rank files: lines "base64-token rank" --- */

static int base64_value(uint8_t c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* Strict base64 of text[0..n) into out (room for 3n/4 bytes); the decoded length, or -1 for anything
 * but canonical base64 (length a multiple of 4, padding only at the end, unused bits zero). */
static Py_ssize_t base64_decode(const uint8_t *text, size_t n, uint8_t *out) {
    if (n == 0 || n % 4) return -1;
    size_t pad = text[n - 1] == '=' ? (text[n - 2] == '=' ? 2 : 1) : 0;
    Py_ssize_t length = 0;
    for (size_t k = 0; k < n; k += 4) {
        int v[4];
        for (int j = 0; j < 4; j++) {
            int last_quad = k + 4 == n;
            v[j] = last_quad && j >= 4 - (int)pad ? 0 : base64_value(text[k + j]);
            if (v[j] < 0) return -1;
        }
        uint32_t bits = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        out[length++] = (uint8_t)(bits >> 16);
        if (k + 4 < n || pad < 2) out[length++] = (uint8_t)(bits >> 8);
        if (k + 4 < n || pad < 1) out[length++] = (uint8_t)bits;
        if (k + 4 == n && ((pad == 1 && (bits & 0xFF)) || (pad == 2 && (bits & 0xFFFF)))) return -1;
    }
    return length;
}

static int is_space(uint8_t c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* parse_ranks(data) -> (tokens, ranks): the lines "base64-token rank" of a tiktoken rank file, the
 * tokens as a list of bytes and the ranks as packed uint32; None for anything else (a line of another
 * shape, base64 that is not canonical, a rank beyond 2**32 - 1, an empty token), so that Python walks
 * the file and names the line.  Duplicates are left to the caller. */
static PyObject *parse_ranks(PyObject *module, PyObject *data) {
    if (!PyBytes_Check(data)) {
        PyErr_SetString(PyExc_TypeError, "parse_ranks() takes bytes");
        return NULL;
    }
    const uint8_t *p = (const uint8_t *)PyBytes_AS_STRING(data), *end = p + PyBytes_GET_SIZE(data);
    PyObject *tokens = PyList_New(0), *result = NULL;
    IdBuffer ranks = {0};
    uint8_t decoded[768];
    if (!tokens) return NULL;
    while (p < end) {
        const uint8_t *line_end = memchr(p, '\n', (size_t)(end - p));
        if (!line_end) line_end = end;
        const uint8_t *field[3], *field_end[3];
        int fields = 0;
        for (const uint8_t *q = p; q < line_end && fields < 3;) {
            while (q < line_end && is_space(*q)) q++;
            if (q == line_end) break;
            field[fields] = q;
            while (q < line_end && !is_space(*q)) q++;
            field_end[fields++] = q;
        }
        p = line_end + 1;
        if (fields == 0) continue;
        size_t b64_length = (size_t)(field_end[0] - field[0]), digits = fields == 2 ? (size_t)(field_end[1] - field[1]) : 0;
        if (fields != 2 || b64_length > 4 * sizeof decoded / 3 || digits == 0 || digits > 10) goto decline;
        uint64_t rank = 0;
        for (const uint8_t *d = field[1]; d < field_end[1]; d++) {
            if (*d < '0' || *d > '9') goto decline;
            rank = rank * 10 + (*d - '0');
        }
        Py_ssize_t length = base64_decode(field[0], b64_length, decoded);
        if (length <= 0 || rank > UINT32_MAX) goto decline;
        PyObject *token = PyBytes_FromStringAndSize((const char *)decoded, length);
        if (!token || PyList_Append(tokens, token) || reserve_ids(&ranks, 1)) {
            Py_XDECREF(token);
            if (!PyErr_Occurred()) PyErr_NoMemory();
            goto done;
        }
        Py_DECREF(token);
        ranks.ids[ranks.length++] = (uint32_t)rank;
    }
    {
        PyObject *packed = PyBytes_FromStringAndSize((const char *)ranks.ids, (Py_ssize_t)(ranks.length * sizeof(uint32_t)));
        if (packed) result = PyTuple_Pack(2, tokens, packed);
        Py_XDECREF(packed);
    }
    goto done;
decline:
    result = Py_None;
    Py_INCREF(result);
done:
    Py_DECREF(tokens);
    free(ranks.ids);
    return result;
}

#endif
