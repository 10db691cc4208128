/* bpefst._core: the compiled loops behind bpefst's tokenizer.
 *
 * It holds loops, not concepts.  Python builds and owns every table (the merge
 * list as packed (left, right, result) triples in rank order, the token id of
 * each byte, the preset pattern's number) and hands them to `Encoder`, which
 * runs per text: the preset pre-tokenizer (pretokenize.h), a bounded cache of
 * chunk ids (chunk_cache.h) and textbook BPE on a miss (bpe.h).  The
 * pure-Python twin is bpefst/pipeline/encoder.py with bpefst/tokenizer/
 * splitter.py and packed_bpe.py; tests run the id tests on both.
 *
 * Never takes the interpreter down: the constructor checks every table it is
 * given (ids within max_id, lengths), each call checks its arguments, running
 * out of memory raises MemoryError, and whatever the compiled path does not
 * handle (a str with surrogate code points, a chunk over LONG_CHUNK bytes) is
 * declined with None so the caller takes the pure path.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdatomic.h>

#include "bpe.h"
#include "chunk_cache.h"
#include "pretokenize.h"

#ifndef _WIN32
#include <pthread.h>
#include <sched.h>
#define HAVE_PTHREADS 1
#endif

#define MAX_ID (1u << 26)
#define MAX_THREADS 64
#define LONG_CHUNK ((size_t)1 << 24) /* bytes; longer chunks are declined (the pure path streams them) */
#define RELEASE_GIL_FROM 2048        /* characters: shorter texts keep the GIL (releasing costs more) */

enum { ENCODED = 0, DECLINED = 1, NO_MEMORY = -1 };

#include "validate.h"
#include "banned.h"
#include "packed_rows.h"
#include "pairs.h"
#include "promote.h"
#include "state_walk.h"
#include "liveness.h"
#include <structmember.h>
#include "guide.h"
#include "minimal_dfa.h"
#include "subsets.h"
#include "trie_build.h"

typedef struct {
    uint32_t *ids;
    size_t length, capacity;
} IdBuffer;

static int reserve_ids(IdBuffer *buffer, size_t more) {
    if (buffer->capacity - buffer->length >= more) return 0;
    size_t capacity = buffer->capacity ? buffer->capacity : 256;
    while (capacity - buffer->length < more) capacity *= 2;
    uint32_t *ids = realloc(buffer->ids, capacity * sizeof(uint32_t));
    if (!ids) return -1;
    buffer->ids = ids;
    buffer->capacity = capacity;
    return 0;
}

typedef struct {
    uint8_t *bytes;
    size_t capacity;
} Scratch;

static int reserve_scratch(Scratch *scratch, size_t size) {
    if (scratch->capacity >= size) return 0;
    size_t capacity = scratch->capacity ? scratch->capacity : 256;
    while (capacity < size) capacity *= 2;
    uint8_t *bytes = realloc(scratch->bytes, capacity);
    if (!bytes) return -1;
    scratch->bytes = bytes;
    scratch->capacity = capacity;
    return 0;
}

typedef struct {
    PyObject_HEAD
    PairTable pairs;
    uint32_t byte_ids[256];
    int pattern;
    uint32_t max_id;
    PyObject **ints; /* one int object per id, shared by every list returned */
    size_t cache_slots;
    ChunkCache caches[MAX_THREADS]; /* each used by one thread at a time; allocated on first use */
    uint8_t busy[MAX_THREADS];      /* a call is using the cache; read and written only with the GIL held */
    int ready;                      /* initialised */
} Encoder;

/* --- the loops (no Python objects: they run without the GIL) --- */

/* UTF-8 of t[a..b) into out (room for 4 bytes a code point); DECLINED at a surrogate. */
static int utf8_of(const Text *t, size_t a, size_t b, uint8_t *out, size_t *length) {
    uint8_t *p = out;
    for (size_t i = a; i < b; i++) {
        uint32_t c = code_at(t, i);
        if (c < 0x80) {
            *p++ = (uint8_t)c;
        } else if (c < 0x800) {
            *p++ = 0xC0 | (c >> 6);
            *p++ = 0x80 | (c & 0x3F);
        } else if (c < 0x10000) {
            if (c >= 0xD800 && c <= 0xDFFF) return DECLINED;
            *p++ = 0xE0 | (c >> 12);
            *p++ = 0x80 | ((c >> 6) & 0x3F);
            *p++ = 0x80 | (c & 0x3F);
        } else {
            *p++ = 0xF0 | (c >> 18);
            *p++ = 0x80 | ((c >> 12) & 0x3F);
            *p++ = 0x80 | ((c >> 6) & 0x3F);
            *p++ = 0x80 | (c & 0x3F);
        }
    }
    *length = (size_t)(p - out);
    return ENCODED;
}

/* Appends the ids of one chunk (its UTF-8 bytes) to out. */
static int encode_chunk(const Encoder *e, ChunkCache *cache, const uint8_t *bytes, size_t length, IdBuffer *out) {
    uint64_t hash = 0;
    if (length <= CACHE_KEY) {
        size_t count;
        hash = chunk_hash(bytes, length);
        const uint32_t *found = chunk_cache_find(cache, bytes, length, hash, &count);
        if (found) {
            if (reserve_ids(out, count)) return NO_MEMORY;
            memcpy(out->ids + out->length, found, count * sizeof(uint32_t));
            out->length += count;
            return ENCODED;
        }
    }
    if (length > LONG_CHUNK) return DECLINED;
    if (reserve_ids(out, length)) return NO_MEMORY;
    uint32_t *symbols = out->ids + out->length; /* BPE runs in place at the end of the output */
    for (size_t k = 0; k < length; k++) symbols[k] = e->byte_ids[bytes[k]];
    size_t count = length <= SHORT_BPE ? bpe_short(&e->pairs, symbols, length) : bpe_long(&e->pairs, symbols, length);
    if (count == (size_t)-1) return NO_MEMORY;
    if (length <= CACHE_KEY) chunk_cache_store(cache, bytes, length, hash, symbols, count);
    out->length += count;
    return ENCODED;
}

/* Appends the ids of a text (no special tokens in it) to out. */
static int encode_text(const Encoder *e, ChunkCache *cache, Scratch *scratch, const Text *t, int ascii, IdBuffer *out) {
    size_t i = 0;
    while (i < t->length) {
        size_t j = chunk_end(e->pattern, t, i);
        if (j <= i || j > t->length) j = i + 1; /* unreachable; a guard against looping forever */
        const uint8_t *bytes;
        size_t length;
        if (ascii) {
            bytes = (const uint8_t *)t->data + i;
            length = j - i;
        } else {
            if ((j - i) > LONG_CHUNK) return DECLINED;
            if (reserve_scratch(scratch, 4 * (j - i))) return NO_MEMORY;
            int rc = utf8_of(t, i, j, scratch->bytes, &length);
            if (rc != ENCODED) return rc;
            bytes = scratch->bytes;
        }
        int rc = encode_chunk(e, cache, bytes, length, out);
        if (rc != ENCODED) return rc;
        i = j;
    }
    return ENCODED;
}

/* --- Python glue --- */

static int text_of(PyObject *object, Text *t, int *ascii) {
    if (!PyUnicode_Check(object)) {
        PyErr_Format(PyExc_TypeError, "expected str, found %.100s", Py_TYPE(object)->tp_name);
        return -1;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(object) < 0) return -1;
#endif
    t->kind = PyUnicode_KIND(object);
    t->data = PyUnicode_DATA(object);
    t->length = (size_t)PyUnicode_GET_LENGTH(object);
    *ascii = PyUnicode_IS_ASCII(object);
    return 0;
}

static PyObject *ids_to_list(const Encoder *e, const uint32_t *ids, size_t count) {
    PyObject *list = PyList_New((Py_ssize_t)count);
    if (!list) return NULL;
    for (size_t k = 0; k < count; k++) {
        PyObject *value = e->ints[ids[k]];
        Py_INCREF(value);
        PyList_SET_ITEM(list, (Py_ssize_t)k, value);
    }
    return list;
}

static void give_back_caches(Encoder *e, const int *taken, int count) {
    for (int k = 0; k < count; k++) e->busy[taken[k]] = 0;
}

/* Marks up to `want` free chunk caches busy (the lowest first, so one thread keeps reusing cache 0 and
 * finds it warm) and lists them in `taken`; returns how many, at least one (when all are busy it waits
 * for one with the GIL released), or -1 when out of memory.  Called with the GIL held, which is what
 * makes the flags safe: Python threads calling encode() at once each get a cache of their own and run
 * in parallel. */
static int take_caches(Encoder *e, int want, int *taken) {
    for (;;) {
        int count = 0;
        for (int k = 0; k < MAX_THREADS && count < want; k++) {
            if (e->busy[k]) continue;
            if (!e->caches[k].slots && chunk_cache_init(&e->caches[k], e->cache_slots)) {
                give_back_caches(e, taken, count);
                return -1;
            }
            e->busy[k] = 1;
            taken[count++] = k;
        }
        if (count) return count;
        Py_BEGIN_ALLOW_THREADS
#ifdef HAVE_PTHREADS
        sched_yield();
#endif
        Py_END_ALLOW_THREADS
    }
}

static PyObject *result_or_error(const Encoder *e, int rc, const IdBuffer *out) {
    if (rc == NO_MEMORY) return PyErr_NoMemory();
    if (rc == DECLINED) Py_RETURN_NONE;
    return ids_to_list(e, out->ids, out->length);
}

static PyObject *Encoder_encode(Encoder *e, PyObject *text) {
    Text t;
    int ascii;
    if (text_of(text, &t, &ascii)) return NULL;
    IdBuffer out = {0};
    Scratch scratch = {0};
    int rc, cache;
    if (take_caches(e, 1, &cache) < 0) {
        rc = NO_MEMORY;
    } else {
        if (t.length < RELEASE_GIL_FROM) {
            rc = encode_text(e, &e->caches[cache], &scratch, &t, ascii, &out);
        } else {
            Py_BEGIN_ALLOW_THREADS
            rc = encode_text(e, &e->caches[cache], &scratch, &t, ascii, &out);
            Py_END_ALLOW_THREADS
        }
        give_back_caches(e, &cache, 1);
    }
    PyObject *result = result_or_error(e, rc, &out);
    free(out.ids);
    free(scratch.bytes);
    return result;
}

typedef struct {
    const Encoder *encoder;
    const Text *texts;
    const int *ascii;
    IdBuffer *outs;
    int *codes;
    size_t count;
    atomic_size_t next;
#ifdef HAVE_PTHREADS
    uint8_t *done; /* when not NULL: texts finished, under `lock` (see run_batch_converting) */
    size_t wanted; /* the text the converting thread waits for, signalled on `finished` when done */
    pthread_mutex_t lock;
    pthread_cond_t finished;
#endif
} Batch;

typedef struct {
    Batch *batch;
    ChunkCache *cache;
} Worker;

static void *run_worker(void *argument) {
    Worker *worker = argument;
    Batch *batch = worker->batch;
    Scratch scratch = {0};
    for (;;) {
        size_t i = atomic_fetch_add(&batch->next, 1);
        if (i >= batch->count) break;
        /* the ids grow in a buffer of this thread's own: outs[i] and outs[i + 1] share a cache line, and
         * writing a length there per chunk from two threads costs a third of the speed (false sharing) */
        IdBuffer ids = {0};
        batch->codes[i] = encode_text(batch->encoder, worker->cache, &scratch, &batch->texts[i], batch->ascii[i], &ids);
        batch->outs[i] = ids;
#ifdef HAVE_PTHREADS
        if (batch->done) {
            pthread_mutex_lock(&batch->lock);
            batch->done[i] = 1;
            if (i == batch->wanted) pthread_cond_signal(&batch->finished); /* a wake-up only where one waits */
            pthread_mutex_unlock(&batch->lock);
        }
#endif
    }
    free(scratch.bytes);
    return NULL;
}

/* Runs the batch on `threads` threads (this one included), thread k with cache taken[k]; returns how many ran. */
static int run_batch(Encoder *e, Batch *batch, int threads, const int *taken) {
    Worker workers[MAX_THREADS];
    for (int k = 0; k < threads; k++) workers[k] = (Worker){batch, &e->caches[taken[k]]};
#ifdef HAVE_PTHREADS
    pthread_t handles[MAX_THREADS];
    int started = 1;
    for (; started < threads; started++)
        if (pthread_create(&handles[started], NULL, run_worker, &workers[started])) break;
    run_worker(&workers[0]);
    for (int k = 1; k < started; k++) pthread_join(handles[k], NULL);
    return started;
#else
    run_worker(&workers[0]);
    return 1;
#endif
}

static PyObject *joined_ids(const Encoder *e, const int *codes, const IdBuffer *outs, size_t count) {
    size_t total = 0;
    for (size_t i = 0; i < count; i++) {
        if (codes[i] == NO_MEMORY) return PyErr_NoMemory();
        if (codes[i] == DECLINED) Py_RETURN_NONE;
        total += outs[i].length;
    }
    PyObject *list = PyList_New((Py_ssize_t)total);
    if (!list) return NULL;
    Py_ssize_t at = 0;
    for (size_t i = 0; i < count; i++)
        for (size_t k = 0; k < outs[i].length; k++) {
            PyObject *value = e->ints[outs[i].ids[k]];
            Py_INCREF(value);
            PyList_SET_ITEM(list, at++, value);
        }
    return list;
}

/* The result object of text i (a list, or packed bytes), or None when it was declined; NULL on error. */
static PyObject *batch_item(const Encoder *e, const Batch *batch, size_t i, int packed) {
    if (packed && batch->codes[i] == ENCODED)
        return PyBytes_FromStringAndSize((const char *)batch->outs[i].ids, (Py_ssize_t)(batch->outs[i].length * sizeof(uint32_t)));
    return result_or_error(e, batch->codes[i], &batch->outs[i]);
}

#ifdef HAVE_PTHREADS
/* Runs the batch on `threads` threads of their own while this thread, which holds the GIL, turns each
 * text's ids into its result object as soon as they are done (in order, as many as are ready each time
 * it wakes), releasing the GIL only to wait: the objects are made while the threads encode instead of
 * one after another at the end.  Fills `result` (a list of `count` slots); -1 on error, after every
 * thread has finished. */
static int run_batch_converting(Encoder *e, Batch *batch, int threads, const int *taken, int packed, PyObject *result) {
    Worker workers[MAX_THREADS];
    pthread_t handles[MAX_THREADS];
    uint8_t *done = calloc(batch->count ? batch->count : 1, 1);
    if (!done) {
        PyErr_NoMemory();
        return -1;
    }
    pthread_mutex_init(&batch->lock, NULL);
    pthread_cond_init(&batch->finished, NULL);
    batch->done = done;
    int started = 0, failed = 0;
    for (; started < threads; started++) {
        workers[started] = (Worker){batch, &e->caches[taken[started]]};
        if (pthread_create(&handles[started], NULL, run_worker, &workers[started])) break;
    }
    if (started == 0) { /* no thread could start: encode here */
        Py_BEGIN_ALLOW_THREADS
        run_worker(&workers[0]);
        Py_END_ALLOW_THREADS
    }
    for (size_t i = 0; i < batch->count;) {
        size_t ready = i;
        Py_BEGIN_ALLOW_THREADS
        pthread_mutex_lock(&batch->lock);
        batch->wanted = i;
        while (!done[i]) pthread_cond_wait(&batch->finished, &batch->lock);
        while (ready + 1 < batch->count && done[ready + 1]) ready++;
        pthread_mutex_unlock(&batch->lock);
        Py_END_ALLOW_THREADS
        for (; i <= ready; i++) {
            PyObject *item = failed ? NULL : batch_item(e, batch, i, packed);
            if (!item) failed = 1;
            else PyList_SET_ITEM(result, (Py_ssize_t)i, item);
            free(batch->outs[i].ids);
            batch->outs[i].ids = NULL;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    for (int k = 0; k < started; k++) pthread_join(handles[k], NULL);
    Py_END_ALLOW_THREADS
    batch->done = NULL;
    free(done);
    pthread_cond_destroy(&batch->finished);
    pthread_mutex_destroy(&batch->lock);
    return failed ? -1 : 0;
}
#endif

static PyObject *Encoder_encode_batch(Encoder *e, PyObject *args) {
    PyObject *texts;
    int threads = 1, packed = 0, joined = 0;
    if (!PyArg_ParseTuple(args, "O|ipp:encode_batch", &texts, &threads, &packed, &joined)) return NULL;
    /* a tuple of our own: a list could be changed by another thread while the GIL is released */
    PyObject *sequence = PySequence_Tuple(texts);
    if (!sequence) return NULL;
    size_t count = (size_t)PyTuple_GET_SIZE(sequence);
    PyObject **items = &PyTuple_GET_ITEM(sequence, 0);
    Text *ts = PyMem_Calloc(count ? count : 1, sizeof(Text));
    int *ascii = PyMem_Calloc(count ? count : 1, sizeof(int));
    int *codes = PyMem_Calloc(count ? count : 1, sizeof(int));
    IdBuffer *outs = PyMem_Calloc(count ? count : 1, sizeof(IdBuffer));
    PyObject *result = NULL;
    if (!ts || !ascii || !codes || !outs) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t i = 0; i < count; i++)
        if (text_of(items[i], &ts[i], &ascii[i])) goto done;
    if (threads < 1) threads = 1;
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    if ((size_t)threads > count) threads = count ? (int)count : 1;
    Batch batch = {.encoder = e, .texts = ts, .ascii = ascii, .outs = outs, .codes = codes, .count = count};
    int taken[MAX_THREADS];
    threads = take_caches(e, threads, taken); /* fewer threads when other calls hold caches */
    if (threads < 0) {
        PyErr_NoMemory();
        goto done;
    }
#ifdef HAVE_PTHREADS
    if (threads > 1 && !joined) {
        result = PyList_New((Py_ssize_t)count);
        if (result && run_batch_converting(e, &batch, threads, taken, packed, result)) Py_CLEAR(result);
        give_back_caches(e, taken, threads);
        goto done;
    }
#endif
    Py_BEGIN_ALLOW_THREADS
    run_batch(e, &batch, threads, taken);
    Py_END_ALLOW_THREADS
    give_back_caches(e, taken, threads);
    if (joined) { /* the ids of all texts in one list (the pieces of one text), or None when one was declined */
        result = joined_ids(e, codes, outs, count);
        goto done;
    }
    result = PyList_New((Py_ssize_t)count);
    if (!result) goto done;
    for (size_t i = 0; i < count; i++) {
        PyObject *item = batch_item(e, &batch, i, packed);
        if (!item) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, (Py_ssize_t)i, item);
    }
done:
    if (outs)
        for (size_t i = 0; i < count; i++) free(outs[i].ids);
    PyMem_Free(ts);
    PyMem_Free(ascii);
    PyMem_Free(codes);
    PyMem_Free(outs);
    Py_DECREF(sequence);
    return result;
}

static PyObject *Encoder_bpe_bytes(Encoder *e, PyObject *data) {
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)) return NULL;
    size_t length = (size_t)view.len;
    if (length >= NONE_POS) {
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    uint32_t *symbols = malloc((length ? length : 1) * sizeof(uint32_t));
    if (!symbols) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    const uint8_t *bytes = view.buf;
    for (size_t k = 0; k < length; k++) symbols[k] = e->byte_ids[bytes[k]];
    size_t count;
    Py_BEGIN_ALLOW_THREADS
    count = bpe_long(&e->pairs, symbols, length);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    PyObject *result = count == (size_t)-1 ? PyErr_NoMemory() : ids_to_list(e, symbols, count);
    free(symbols);
    return result;
}

static PyObject *Encoder_chunk_ends(Encoder *e, PyObject *text) {
    Text t;
    int ascii;
    if (text_of(text, &t, &ascii)) return NULL;
    PyObject *ends = PyList_New(0);
    if (!ends) return NULL;
    for (size_t i = 0; i < t.length;) {
        size_t j = chunk_end(e->pattern, &t, i);
        if (j <= i || j > t.length) j = i + 1;
        PyObject *end = PyLong_FromSize_t(j);
        if (!end || PyList_Append(ends, end)) {
            Py_XDECREF(end);
            Py_DECREF(ends);
            return NULL;
        }
        Py_DECREF(end);
        i = j;
    }
    return ends;
}

/* --- construction: every table checked before use --- */

static int read_u32(const uint8_t *p, uint32_t *value) {
    memcpy(value, p, 4); /* native byte order: Python packs with array('I') on this machine */
    return 0;
}

/* Sets table->ranks_grow: every token is made by at most one merge, and each side of a merge is a
 * byte or made by a merge of lower rank (so merging only ever creates pairs of higher rank); -1 when
 * out of memory. */
static int ranks_grow(PairTable *table, const uint8_t *triples, size_t count, size_t max_id) {
    uint32_t *made_at = malloc((max_id + 1) * sizeof(uint32_t));
    if (!made_at) return -1;
    memset(made_at, 0xFF, (max_id + 1) * sizeof(uint32_t));
    int grow = table->count == count;
    for (size_t rank = 0; rank < count && grow; rank++) {
        uint32_t result;
        read_u32(triples + 12 * rank + 8, &result);
        if (made_at[result] != NONE_POS) grow = 0;
        made_at[result] = (uint32_t)rank;
    }
    for (size_t rank = 0; rank < count && grow; rank++) {
        uint32_t left, right;
        read_u32(triples + 12 * rank, &left);
        read_u32(triples + 12 * rank + 4, &right);
        if ((made_at[left] != NONE_POS && made_at[left] >= rank) || (made_at[right] != NONE_POS && made_at[right] >= rank))
            grow = 0;
    }
    free(made_at);
    table->ranks_grow = grow;
    return 0;
}

static int Encoder_init(Encoder *e, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"byte_ids", "merges", "max_id", "pattern", "cache_slots", NULL};
    Py_buffer byte_view = {0}, merge_view = {0};
    unsigned long max_id;
    int pattern;
    Py_ssize_t cache_slots = 1 << 16;
    if (e->ints || e->pairs.slots || e->ready) {
        PyErr_SetString(PyExc_RuntimeError, "Encoder is already initialised");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*y*ki|n:Encoder", names, &byte_view, &merge_view, &max_id,
                                     &pattern, &cache_slots))
        return -1;
    int rc = -1;
    if (max_id >= MAX_ID) {
        PyErr_Format(PyExc_ValueError, "max_id %lu is beyond the compiled core's limit %u", max_id, MAX_ID - 1);
        goto done;
    }
    if (pattern < PATTERN_NONE || pattern > PATTERN_O200K) {
        PyErr_Format(PyExc_ValueError, "unknown pattern number %d", pattern);
        goto done;
    }
    if (byte_view.len != 256 * 4) {
        PyErr_SetString(PyExc_ValueError, "byte_ids must hold 256 packed 32-bit ids");
        goto done;
    }
    if (merge_view.len % 12 || merge_view.len / 12 >= NO_RANK) {
        PyErr_SetString(PyExc_ValueError, "merges must hold packed (left, right, result) 32-bit triples");
        goto done;
    }
    if (cache_slots < 1 || cache_slots > (1 << 24)) {
        PyErr_SetString(PyExc_ValueError, "cache_slots must be between 1 and 2**24");
        goto done;
    }
    for (int b = 0; b < 256; b++) {
        read_u32((const uint8_t *)byte_view.buf + 4 * b, &e->byte_ids[b]);
        if (e->byte_ids[b] > max_id) {
            PyErr_Format(PyExc_ValueError, "byte %d has id %u beyond max_id", b, e->byte_ids[b]);
            goto done;
        }
    }
    size_t count = (size_t)merge_view.len / 12;
    if (pair_table_init(&e->pairs, count)) {
        PyErr_NoMemory();
        goto done;
    }
    const uint8_t *p = merge_view.buf;
    for (size_t rank = 0; rank < count; rank++, p += 12) {
        uint32_t left, right, result;
        read_u32(p, &left);
        read_u32(p + 4, &right);
        read_u32(p + 8, &result);
        if (left > max_id || right > max_id || result > max_id) {
            PyErr_Format(PyExc_ValueError, "merge %zu refers to an id beyond max_id", rank);
            goto done;
        }
        pair_table_add(&e->pairs, left, right, (uint32_t)rank, result);
    }
    if (ranks_grow(&e->pairs, merge_view.buf, count, max_id) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    e->ints = PyMem_Calloc(max_id + 1, sizeof(PyObject *));
    if (!e->ints) {
        PyErr_NoMemory();
        goto done;
    }
    e->max_id = (uint32_t)max_id;
    for (size_t k = 0; k <= max_id; k++)
        if (!(e->ints[k] = PyLong_FromSize_t(k))) goto done;
    size_t slots = 1;
    while ((Py_ssize_t)slots < cache_slots) slots *= 2;
    e->cache_slots = slots;
    e->pattern = pattern;
    e->ready = 1;
    rc = 0;
done:
    PyBuffer_Release(&byte_view);
    PyBuffer_Release(&merge_view);
    return rc;
}

static void Encoder_dealloc(Encoder *e) {
    pair_table_free(&e->pairs);
    if (e->ints) {
        for (size_t k = 0; k <= e->max_id; k++) Py_XDECREF(e->ints[k]);
        PyMem_Free(e->ints);
    }
    for (int k = 0; k < MAX_THREADS; k++) chunk_cache_free(&e->caches[k]);
    Py_TYPE(e)->tp_free((PyObject *)e);
}

static int not_ready(PyObject *self) {
    Encoder *e = (Encoder *)self;
    if (e->ready) return 0;
    PyErr_SetString(PyExc_RuntimeError, "Encoder was not initialised");
    return 1;
}

static PyObject *encode_method(PyObject *self, PyObject *text) {
    if (not_ready(self)) return NULL;
    return Encoder_encode((Encoder *)self, text);
}

static PyObject *encode_batch_method(PyObject *self, PyObject *args) {
    if (not_ready(self)) return NULL;
    return Encoder_encode_batch((Encoder *)self, args);
}

static PyObject *bpe_bytes_method(PyObject *self, PyObject *data) {
    if (not_ready(self)) return NULL;
    return Encoder_bpe_bytes((Encoder *)self, data);
}

static PyObject *chunk_ends_method(PyObject *self, PyObject *text) {
    if (not_ready(self)) return NULL;
    return Encoder_chunk_ends((Encoder *)self, text);
}

static PyMethodDef Encoder_methods[] = {
    {"encode", encode_method, METH_O,
     "encode(text) -> list of ids, or None where the compiled path declines (surrogates, a chunk over 16 MB)."},
    {"encode_batch", encode_batch_method, METH_VARARGS,
     "encode_batch(texts, threads=1, packed=False, joined=False) -> [ids or None per text], on `threads` threads "
     "without the GIL; packed: the ids of each text as bytes of native uint32; joined: one list of every text's ids "
     "in order (None if a text was declined)."},
    {"bpe_bytes", bpe_bytes_method, METH_O, "bpe_bytes(data) -> ids of one chunk's bytes (no cache)."},
    {"chunk_ends", chunk_ends_method, METH_O, "chunk_ends(text) -> where each pre-tokenized chunk ends."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject EncoderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "bpefst._core.Encoder",
    .tp_basicsize = sizeof(Encoder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Encoder(byte_ids, merges, max_id, pattern, cache_slots=65536): BPE over packed tables.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Encoder_init,
    .tp_dealloc = (destructor)Encoder_dealloc,
    .tp_methods = Encoder_methods,
};

#include "vocab.h"

/* has_surrogates(text) -> does the str hold a code point U+D800..U+DFFF?  A 1-byte (Latin-1) string
 * cannot; wider ones are scanned (the pure twin is bpefst/tokenizer/surrogates.py's regex search). */
static PyObject *has_surrogates(PyObject *module, PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "has_surrogates() takes a str");
        return NULL;
    }
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    int found = 0;
    if (kind == PyUnicode_2BYTE_KIND) {
        const Py_UCS2 *units = data;
        for (Py_ssize_t k = 0; k < length && !found; k++) found = (units[k] & 0xF800) == 0xD800;
    } else if (kind == PyUnicode_4BYTE_KIND) {
        const Py_UCS4 *units = data;
        for (Py_ssize_t k = 0; k < length && !found; k++) found = (units[k] & 0xFFFFF800u) == 0xD800;
    }
    return PyBool_FromLong(found);
}

static PyObject *class_table(PyObject *module, PyObject *unused) {
    PyObject *table = PyBytes_FromStringAndSize(NULL, 0x110000);
    if (!table) return NULL;
    uint8_t *p = (uint8_t *)PyBytes_AS_STRING(table);
    for (uint32_t code = 0; code < 0x110000; code++) p[code] = (uint8_t)unicode_class(code);
    return table;
}

/* recover_merges(byte_ids, tokens, ids) -> packed (left, right, result) triples.
 *
 * A tiktoken rank file has no merge list; the ranks imply it (see
 * bpefst/tokenizer/formats/tiktoken_ranks.py, the pure twin): each multi-byte
 * token, in rank order, goes through BPE with the merges recovered so far, and
 * when exactly two pieces remain, their pair is the next merge, producing it. */
static PyObject *recover_merges(PyObject *module, PyObject *args) {
    Py_buffer byte_view = {0}, id_view = {0};
    PyObject *tokens, *sequence = NULL, *result = NULL;
    if (!PyArg_ParseTuple(args, "y*Oy*:recover_merges", &byte_view, &tokens, &id_view)) return NULL;
    PairTable table = {0};
    IdBuffer triples = {0}, symbols = {0};
    uint32_t byte_ids[256];
    if (byte_view.len != 256 * 4) {
        PyErr_SetString(PyExc_ValueError, "byte_ids must hold 256 packed 32-bit ids");
        goto done;
    }
    memcpy(byte_ids, byte_view.buf, sizeof byte_ids);
    sequence = PySequence_Fast(tokens, "recover_merges() takes a sequence of bytes");
    if (!sequence) goto done;
    size_t count = (size_t)PySequence_Fast_GET_SIZE(sequence);
    if ((size_t)id_view.len != 4 * count) {
        PyErr_SetString(PyExc_ValueError, "ids must hold one packed 32-bit id per token");
        goto done;
    }
    if (pair_table_init(&table, count) || reserve_ids(&triples, 3 * count + 1)) {
        PyErr_NoMemory();
        goto done;
    }
    const uint32_t *ids = id_view.buf;
    uint32_t merges = 0;
    for (size_t k = 0; k < count; k++) {
        PyObject *token = PySequence_Fast_GET_ITEM(sequence, k);
        if (!PyBytes_Check(token) || PyBytes_GET_SIZE(token) < 2 || (size_t)PyBytes_GET_SIZE(token) >= NONE_POS) {
            PyErr_Format(PyExc_ValueError, "token %zu is not bytes of length 2 or more", k);
            goto done;
        }
        size_t length = (size_t)PyBytes_GET_SIZE(token);
        const uint8_t *bytes = (const uint8_t *)PyBytes_AS_STRING(token);
        symbols.length = 0;
        if (reserve_ids(&symbols, length)) {
            PyErr_NoMemory();
            goto done;
        }
        for (size_t b = 0; b < length; b++) symbols.ids[b] = byte_ids[bytes[b]];
        size_t pieces = bpe_long(&table, symbols.ids, length);
        if (pieces == (size_t)-1) {
            PyErr_NoMemory();
            goto done;
        }
        if (pieces == 2) {
            pair_table_add(&table, symbols.ids[0], symbols.ids[1], merges++, ids[k]);
            uint32_t *out = triples.ids + triples.length;
            out[0] = symbols.ids[0];
            out[1] = symbols.ids[1];
            out[2] = ids[k];
            triples.length += 3;
        }
    }
    result = PyBytes_FromStringAndSize((const char *)triples.ids, (Py_ssize_t)(triples.length * sizeof(uint32_t)));
done:
    pair_table_free(&table);
    free(triples.ids);
    free(symbols.ids);
    Py_XDECREF(sequence);
    PyBuffer_Release(&byte_view);
    PyBuffer_Release(&id_view);
    return result;
}

static PyMethodDef module_methods[] = {
    {"recover_merges", recover_merges, METH_VARARGS,
     "recover_merges(byte_ids, tokens, ids) -> packed (left, right, result) merges implied by tokens in rank order."},
    {"class_table", class_table, METH_NOARGS, "class_table() -> the class bits of every code point (for tests)."},
    {"build_forest", build_forest, METH_VARARGS,
     "build_forest(size, base_ids, merges) -> (rank, left, right, reachable, first_inversion) of the merge forest."},
    {"walk_rows", walk_rows, METH_VARARGS, "walk_rows(classes, ids, start, row) -> the rows a token walk reaches (validate)."},
    {"parse_ranks", parse_ranks, METH_O, "parse_ranks(data) -> (tokens, packed ranks) of a tiktoken rank file, or None."},
    {"msgpack_vocab", msgpack_vocab, METH_VARARGS, "msgpack_vocab(ids, offsets, blob) -> msgpack of the [id, token] pairs."},
    {"msgpack_pairs", msgpack_pairs, METH_VARARGS, "msgpack_pairs(pairs) -> msgpack of the [left, right] pairs."},
    {"split_tokens", split_tokens, METH_VARARGS, "split_tokens(blob, offsets) -> the tokens of a packed vocabulary."},
    {"checked_merge_results", checked_merge_results, METH_VARARGS,
     "checked_merge_results(ids, offsets, blob, merges) -> packed merge results of a proper byte-level model, or None."},
    {"has_surrogates", has_surrogates, METH_O, "has_surrogates(text) -> does text hold a surrogate code point?"},
    {"format_ids", format_ids, METH_O, "format_ids(ids) -> the ids as decimal text, one space between."},
    {"parse_ids", parse_ids, METH_O, "parse_ids(data) -> whitespace-separated decimal ids, or None for anything else."},
    {"allowed_union", allowed_union, METH_O,
     "allowed_union([(good, banned), ...]) -> the union of good & ~banned over bitset bytes (banned may be None)."},
    {"token_masks", token_masks, METH_O, "token_masks(lists) -> the bitset (an int) of each list of tokens (promotion)."},
    {"release_freed", release_freed, METH_NOARGS,
     "release_freed() -> whether the heap went back to the system, as it does after a large build (promotion)."},
    {"note_large_build", note_large_build, METH_NOARGS,
     "note_large_build(): the next release_freed() gives the heap back (promotion)."},
    {"chunk_product", chunk_product, METH_VARARGS,
     "chunk_product(transitions, start, finals, symbol_map, decoder, chunks, atoms, chunk_start, chunk_finals, boundary, "
     "max_states, max_arcs=-1, walker=None, count_above=0.0) -> (rows, start, finals) of the trimmed chunked pattern, "
     "None past max_states, False past max_arcs (promotion)."},
    {"minimal_dfa", minimal_dfa_method, METH_VARARGS,
     "minimal_dfa(arcs, eps, start, finals, symbol_map, max_states) -> (rows, finals) of the minimal DFA, start 0, "
     "numbered canonically; None past max_states (< 0: no limit) (regex compiler)."},
    {"canonical_subsets", canonical_subsets, METH_VARARGS,
     "canonical_subsets(index, filed, cut, finals, start, max_states, max_arcs, key_grid=64 MB) -> the shared-row canonical subsets (promotion)."},
    {"spelling_trie", spelling_trie, METH_VARARGS,
     "spelling_trie(spellings, order) -> (children, tokens, steps, walker tables) of the spelling trie, or None "
     "when a token or symbol is outside the core's range (promotion)."},
    {"solve_liveness", solve_liveness, METH_VARARGS,
     "solve_liveness(checker, n, finals, cut, groups) -> (numbers, table, filed): good[q] packed and filed, of the on-demand promotion (promotion)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "bpefst._core", "The compiled loops behind bpefst's tokenizer.", -1, module_methods,
};

PyMODINIT_FUNC PyInit__core(void) {
    if (PyType_Ready(&EncoderType) < 0 || PyType_Ready(&PairCheckerType) < 0 || PyType_Ready(&BannedIndexType) < 0 ||
        PyType_Ready(&TrieWalkerType) < 0 || PyType_Ready(&GuideCoreType) < 0 || PyType_Ready(&PackedRowsType) < 0 ||
        PyType_Ready(&PairsType) < 0 || PyType_Ready(&FiledType) < 0 || PyType_Ready(&StateWalkType) < 0 ||
        PyType_Ready(&SharedSubsetsType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&EncoderType);
    Py_INCREF(&PairCheckerType);
    Py_INCREF(&BannedIndexType);
    Py_INCREF(&TrieWalkerType);
    Py_INCREF(&GuideCoreType);
    Py_INCREF(&PackedRowsType);
    Py_INCREF(&PairsType);
    Py_INCREF(&FiledType);
    if (PyModule_AddObject(m, "Encoder", (PyObject *)&EncoderType) < 0 ||
        PyModule_AddObject(m, "PairChecker", (PyObject *)&PairCheckerType) < 0 ||
        PyModule_AddObject(m, "BannedIndex", (PyObject *)&BannedIndexType) < 0 ||
        PyModule_AddObject(m, "TrieWalker", (PyObject *)&TrieWalkerType) < 0 ||
        PyModule_AddObject(m, "GuideCore", (PyObject *)&GuideCoreType) < 0 ||
        PyModule_AddObject(m, "PackedRows", (PyObject *)&PackedRowsType) < 0 ||
        PyModule_AddObject(m, "Pairs", (PyObject *)&PairsType) < 0 ||
        PyModule_AddObject(m, "Filed", (PyObject *)&FiledType) < 0 ||
        PyModule_AddIntConstant(m, "DECODER_NO_ARC", DECODER_NO_ARC) < 0 ||
        PyModule_AddStringConstant(m, "UNICODE_CLASSES_FROM", UNICODE_CLASSES_REGEX_VERSION) < 0 ||
        PyModule_AddIntConstant(m, "PATTERN_GPT2", PATTERN_GPT2) < 0 ||
        PyModule_AddIntConstant(m, "PATTERN_CL100K", PATTERN_CL100K) < 0 ||
        PyModule_AddIntConstant(m, "PATTERN_O200K", PATTERN_O200K) < 0 ||
        PyModule_AddIntConstant(m, "PATTERN_NONE", PATTERN_NONE) < 0) {
        Py_DECREF(&EncoderType);
        Py_DECREF(&PairCheckerType);
        Py_DECREF(&BannedIndexType);
        Py_DECREF(&TrieWalkerType);
        Py_DECREF(&GuideCoreType);
        Py_DECREF(&PackedRowsType);
        Py_DECREF(&PairsType);
        Py_DECREF(&FiledType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
