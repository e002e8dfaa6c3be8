/* u64map.c — the u64 -> u32 map's growth, insertion and deletion (u64map.h says how it works). */
#include "base/u64map.h"

#include "base/util.h"

#include <stdlib.h>
#include <string.h>

static void map_grow(keel__u64map *m)
{
    keel__u64map old = *m;
    m->cap = old.cap ? old.cap * 2 : 64;
    m->keys = keel__xcalloc(m->cap, sizeof *m->keys);
    m->vals = keel__xcalloc(m->cap, sizeof *m->vals);
    m->used = 0;
    for (size_t i = 0; i < old.cap; i++)
        if (old.keys[i]) keel__u64map_put(m, old.keys[i] - 1, old.vals[i]);
    free(old.keys);
    free(old.vals);
}

void keel__u64map_put(keel__u64map *m, uint64_t k, uint32_t v)
{
    if ((m->used + 1) * 2 > m->cap) map_grow(m);
    size_t i = keel__u64map_slot(m, k);
    while (m->keys[i] && m->keys[i] != k + 1) i = (i + 1) & (m->cap - 1);
    if (!m->keys[i]) m->used++;
    m->keys[i] = k + 1;
    m->vals[i] = v;
}

void keel__u64map_del(keel__u64map *m, uint64_t k)
{
    if (!m->cap) return;
    size_t i = keel__u64map_slot(m, k);
    while (m->keys[i] && m->keys[i] != k + 1) i = (i + 1) & (m->cap - 1);
    if (!m->keys[i]) return;
    m->keys[i] = 0;
    m->used--;
    for (size_t j = (i + 1) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1)) {
        size_t want = keel__u64map_slot(m, m->keys[j] - 1);
        /* move j back to i when its home is not in (i, j] */
        bool stays = i <= j ? (want > i && want <= j) : (want > i || want <= j);
        if (stays) continue;
        m->keys[i] = m->keys[j];
        m->vals[i] = m->vals[j];
        m->keys[j] = 0;
        i = j;
    }
}

void keel__u64map_free(keel__u64map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}
