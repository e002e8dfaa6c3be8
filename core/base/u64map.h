/* u64map.h — a map from 64-bit keys to 32-bit values: open addressing with linear probing, the
 * capacity a power of two kept at most half full, and backward-shift deletion (no tombstones, so
 * a lookup never walks past what a removal left). A key is stored plus one: 0 marks an empty
 * slot. Replication's tables use it (entity -> tracked entity, local id -> mirrored entity, the
 * interest grid's cell -> first entity). The lookup is inline: it runs per record. */
#ifndef KEEL_U64MAP_H
#define KEEL_U64MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct keel__u64map {
    uint64_t *keys; /* key + 1; 0 empty */
    uint32_t *vals;
    size_t cap, used;
} keel__u64map;

static inline size_t keel__u64map_slot(const keel__u64map *m, uint64_t k)
{
    uint64_t h = (k + 1) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 17) & (m->cap - 1);
}

static inline bool keel__u64map_get(const keel__u64map *m, uint64_t k, uint32_t *v)
{
    if (!m->cap) return false;
    for (size_t i = keel__u64map_slot(m, k);; i = (i + 1) & (m->cap - 1)) {
        if (!m->keys[i]) return false;
        if (m->keys[i] == k + 1) {
            *v = m->vals[i];
            return true;
        }
    }
}

void keel__u64map_put(keel__u64map *m, uint64_t k, uint32_t v);
void keel__u64map_del(keel__u64map *m, uint64_t k); /* an absent key: nothing */
void keel__u64map_free(keel__u64map *m);            /* leaves it empty and usable */

#endif
