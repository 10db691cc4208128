/* A bounded cache chunk bytes -> token ids, one cache line per entry.
 *
 * Real text repeats its chunks (" the", " of", "\n"), so most chunks are found
 * here instead of going through BPE.  Direct-mapped: a chunk has exactly one
 * slot (by hash) and a new chunk replaces whatever was there, so memory is
 * fixed (64 bytes x slots) and a lookup is one hash and one compare.  Only
 * short chunks (CACHE_KEY bytes, CACHE_IDS ids) are kept; longer ones rarely
 * repeat, and BPE is cheap next to a long chunk's other costs.
 */
#ifndef BPEFST_CHUNK_CACHE_H
#define BPEFST_CHUNK_CACHE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CACHE_KEY 22
#define CACHE_IDS 8

typedef struct {
    uint64_t hash;
    uint8_t key_length; /* 0: empty */
    uint8_t id_count;
    uint8_t key[CACHE_KEY];
    uint32_t ids[CACHE_IDS];
} CacheSlot;

typedef struct {
    CacheSlot *slots;
    uint64_t mask;
} ChunkCache;

static int chunk_cache_init(ChunkCache *cache, size_t slots) {
    cache->slots = calloc(slots, sizeof(CacheSlot));
    cache->mask = slots - 1;
    return cache->slots ? 0 : -1;
}

static void chunk_cache_free(ChunkCache *cache) {
    free(cache->slots);
    cache->slots = NULL;
}

static inline uint64_t chunk_hash(const uint8_t *key, size_t length) {
    uint64_t h = 0x243F6A8885A308D3ull ^ length;
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, key, 8);
        h = (h ^ word) * 0x9E3779B97F4A7C15ull;
        h ^= h >> 29;
        key += 8;
        length -= 8;
    }
    uint64_t tail = 0;
    memcpy(&tail, key, length);
    h = (h ^ tail) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 32);
}

/* The cached ids of key (count in *count), or NULL. */
static inline const uint32_t *chunk_cache_find(const ChunkCache *cache, const uint8_t *key, size_t length,
                                               uint64_t hash, size_t *count) {
    const CacheSlot *slot = &cache->slots[hash & cache->mask];
    if (slot->hash != hash || slot->key_length != length || memcmp(slot->key, key, length) != 0) return NULL;
    *count = slot->id_count;
    return slot->ids;
}

static inline void chunk_cache_store(ChunkCache *cache, const uint8_t *key, size_t length, uint64_t hash,
                                     const uint32_t *ids, size_t count) {
    if (length == 0 || length > CACHE_KEY || count > CACHE_IDS) return;
    CacheSlot *slot = &cache->slots[hash & cache->mask];
    slot->hash = hash;
    slot->key_length = (uint8_t)length;
    slot->id_count = (uint8_t)count;
    memcpy(slot->key, key, length);
    memcpy(slot->ids, ids, count * sizeof(uint32_t));
}

#endif
