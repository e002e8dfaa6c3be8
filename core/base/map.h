/* map.h — the one hash map: uint64_t keys to uint32_t values. A zeroed keel__map is empty. */
#ifndef KEEL_MAP_H
#define KEEL_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Open addressing with linear probing over (key, value) pairs, at most half full, backward-shift
 * deletion (no tombstones, so lookups stay short however many keys come and go). Key 0 marks an
 * empty pair, so key 0 itself is held apart: every uint64_t is a key. */
typedef struct keel__map_pair {
    uint64_t key;
    uint32_t val;
} keel__map_pair;

typedef struct keel__map {
    keel__map_pair *pairs;
    uint32_t cap, used; /* cap: 0 or a power of two; used: pairs holding a key (not key 0) */
    bool has_zero;      /* key 0 is held, with zero_val */
    uint32_t zero_val;
} keel__map;

static inline uint32_t keel__map_home(uint64_t key)
{
    return (uint32_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> 32);
}
/* true and *val set when key is held. */
static inline bool keel__map_get(const keel__map *m, uint64_t key, uint32_t *val)
{
    if (key && m->cap) {
        uint32_t mask = m->cap - 1;
        for (uint32_t p = keel__map_home(key) & mask; m->pairs[p].key; p = (p + 1) & mask)
            if (m->pairs[p].key == key) {
                *val = m->pairs[p].val;
                return true;
            }
        return false;
    }
    if (key || !m->has_zero) return false;
    *val = m->zero_val;
    return true;
}
/* The value held for key; `none` when key is not held. */
static inline uint32_t keel__map_get_or(const keel__map *m, uint64_t key, uint32_t none)
{
    uint32_t v;
    return keel__map_get(m, key, &v) ? v : none;
}
static inline size_t keel__map_count(const keel__map *m) { return (size_t)m->used + m->has_zero; }

/* Holds val for key, replacing what it held. */
void keel__map_put(keel__map *m, uint64_t key, uint32_t val);
/* Forgets key; false when it was not held. */
bool keel__map_remove(keel__map *m, uint64_t key);
/* Room for n keys in all before the next put grows the table. */
void keel__map_reserve(keel__map *m, size_t n);
/* Forgets every key, keeping the table's memory. */
void keel__map_clear(keel__map *m);
/* dst (empty or freed) becomes a copy of src. */
void keel__map_copy(keel__map *dst, const keel__map *src);
void keel__map_free(keel__map *m); /* and leaves it empty, ready for use */
/* Every key once, in no set order: `for (size_t it = 0; keel__map_next(m, &it, &k, &v);)`.
 * The map must not change during the walk. */
bool keel__map_next(const keel__map *m, size_t *it, uint64_t *key, uint32_t *val);

#endif
