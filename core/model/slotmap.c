/* slotmap.c — the non-zero slots of a world's loaded components, by serial.
 *
 * A membership entry is 12 bytes per component and has room for only one bit about its slot
 * (`slotted`: the slot is not 0), because nearly every component is in slot 0. The few others
 * keep their slot here, keyed by the entry's serial: a number the world gives each component
 * once (42 bits, from 1, never reused, kept across a rollback), so the key survives the entry
 * moving in its entity's stack or its storage row changing. Reading a slot is
 * keel__slotmap_get, inline in slotmap.h, and only asked when `slotted` is set.
 *
 * The table is open addressing with linear probing over (serial, slot) pairs: a power-of-two
 * array, each serial's home pair picked by Fibonacci hashing (the serial times 2^64/phi, from
 * bit 32 up: consecutive serials land far apart), serial 0 marking an empty pair. It is kept at
 * most half full, so a probe ends at an empty pair after a step or two; growing rehashes every
 * pair into an array twice the size. Removal shifts the following pairs of the probe run back
 * into the hole instead of leaving a tombstone, so the invariant "every pair sits between its
 * home and the first empty pair after it" holds after any mix of puts and deletes, and a world
 * that adds and removes slotted components for hours never needs a rebuild. */
#include "model/slotmap.h"
#include "base/util.h"

#include <stdlib.h>

static void grow(keel__slotmap *s)
{
    keel__slotmap n = { keel__xcalloc(s->cap ? s->cap * 2 : 16, sizeof *n.pairs), s->cap ? s->cap * 2 : 16, 0 };
    for (uint32_t i = 0; i < s->cap; i++)
        if (s->pairs[i].serial) keel__slotmap_put(&n, s->pairs[i].serial, s->pairs[i].slot);
    free(s->pairs);
    *s = n;
}

/* Grows before the put that would pass half full: a put never fails and never fills the array. */
void keel__slotmap_put(keel__slotmap *s, uint64_t serial, uint32_t slot)
{
    if ((s->used + 1) * 2 > s->cap) grow(s);
    uint32_t mask = s->cap - 1, p = keel__slotmap_home(serial) & mask;
    while (s->pairs[p].serial && s->pairs[p].serial != serial) p = (p + 1) & mask;
    if (!s->pairs[p].serial) s->used++;
    s->pairs[p] = (keel__slotpair){ serial, slot };
}

/* Backward-shift deletion: no tombstones, so lookups stay short however many come and go. */
void keel__slotmap_del(keel__slotmap *s, uint64_t serial)
{
    uint32_t mask = s->cap - 1, p = keel__slotmap_home(serial) & mask;
    while (s->pairs[p].serial != serial) p = (p + 1) & mask;
    for (uint32_t q = (p + 1) & mask; s->pairs[q].serial; q = (q + 1) & mask) {
        uint32_t home = keel__slotmap_home(s->pairs[q].serial) & mask;
        /* the pair at q may fill the hole at p unless its home lies cyclically in (p, q] */
        if (((q - home) & mask) >= ((q - p) & mask)) {
            s->pairs[p] = s->pairs[q];
            p = q;
        }
    }
    s->pairs[p].serial = 0;
    s->used--;
}

void keel__slotmap_copy(keel__slotmap *dst, const keel__slotmap *src)
{
    dst->cap = src->cap;
    dst->used = src->used;
    dst->pairs = src->cap ? keel__xrealloc(NULL, src->cap * sizeof *dst->pairs) : NULL;
    if (src->cap) memcpy(dst->pairs, src->pairs, src->cap * sizeof *dst->pairs);
}

void keel__slotmap_free(keel__slotmap *s)
{
    free(s->pairs);
    s->pairs = NULL;
    s->cap = s->used = 0;
}
