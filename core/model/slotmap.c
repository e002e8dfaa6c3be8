/* slotmap.c — the non-zero slots of a world's loaded components, by serial. */
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
