/* slotmap.h — the non-zero slots of a world's loaded components, by serial (membership entries
 * hold only a bit "slot is not 0": nearly every component is in slot 0). */
#ifndef KEEL_SLOTMAP_H
#define KEEL_SLOTMAP_H

#include "keel.h"

/* Open addressing with linear probing over (serial, slot) pairs, at most half full; serial 0
 * (never given: serials start at 1) marks an empty pair. */
typedef struct keel__slotpair {
    uint64_t serial;
    uint32_t slot;
} keel__slotpair;

typedef struct keel__slotmap {
    keel__slotpair *pairs;
    uint32_t cap, used;     /* cap: 0 or a power of two */
} keel__slotmap;

static inline uint32_t keel__slotmap_home(uint64_t serial)
{
    return (uint32_t)((serial * UINT64_C(0x9E3779B97F4A7C15)) >> 32);
}
/* The slot held for serial; 0 when none is. */
static inline uint32_t keel__slotmap_get(const keel__slotmap *s, uint64_t serial)
{
    if (!s->cap) return 0;
    uint32_t mask = s->cap - 1;
    for (uint32_t p = keel__slotmap_home(serial) & mask; s->pairs[p].serial; p = (p + 1) & mask)
        if (s->pairs[p].serial == serial) return s->pairs[p].slot;
    return 0;
}
/* Holds `slot` (not 0) for serial, replacing what it held. */
void keel__slotmap_put(keel__slotmap *s, uint64_t serial, uint32_t slot);
/* Forgets serial (which it holds). */
void keel__slotmap_del(keel__slotmap *s, uint64_t serial);
/* dst (empty or freed) becomes a copy of src. */
void keel__slotmap_copy(keel__slotmap *dst, const keel__slotmap *src);
void keel__slotmap_free(keel__slotmap *s);

#endif
