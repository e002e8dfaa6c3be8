/* map.c — the hash map's writes: insertion with growth, backward-shift removal, copies. */
#include "base/map.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

/* The pair key lives in, or the empty one it would go to (the table is never full). */
static uint32_t slot(const keel__map *m, uint64_t key)
{
    uint32_t mask = m->cap - 1, p = keel__map_home(key) & mask;
    while (m->pairs[p].key && m->pairs[p].key != key) p = (p + 1) & mask;
    return p;
}

static void rehash(keel__map *m, uint32_t cap)
{
    keel__map_pair *old = m->pairs;
    uint32_t oldcap = m->cap;
    m->pairs = keel__xcalloc(cap, sizeof *m->pairs);
    m->cap = cap;
    for (uint32_t i = 0; i < oldcap; i++)
        if (old[i].key) m->pairs[slot(m, old[i].key)] = old[i];
    free(old);
}

/* The smallest table (a power of two, 16 at least) holding n pairs at most half full. */
static uint32_t cap_for(size_t n)
{
    if (n > UINT32_MAX / 4) keel__oom();
    uint32_t cap = 16;
    while ((size_t)cap < n * 2) cap *= 2;
    return cap;
}

void keel__map_put(keel__map *m, uint64_t key, uint32_t val)
{
    if (!key) {
        m->has_zero = true;
        m->zero_val = val;
        return;
    }
    if (((size_t)m->used + 1) * 2 > m->cap) rehash(m, cap_for((size_t)m->used + 1));
    uint32_t p = slot(m, key);
    if (!m->pairs[p].key) m->used++;
    m->pairs[p] = (keel__map_pair){ key, val };
}

bool keel__map_remove(keel__map *m, uint64_t key)
{
    if (!key) {
        bool had = m->has_zero;
        m->has_zero = false;
        return had;
    }
    if (!m->cap) return false;
    uint32_t mask = m->cap - 1, p = slot(m, key);
    if (!m->pairs[p].key) return false;
    for (uint32_t q = (p + 1) & mask; m->pairs[q].key; q = (q + 1) & mask) {
        uint32_t home = keel__map_home(m->pairs[q].key) & mask;
        /* the pair at q may fill the hole at p unless its home lies cyclically in (p, q] */
        if (((q - home) & mask) >= ((q - p) & mask)) {
            m->pairs[p] = m->pairs[q];
            p = q;
        }
    }
    m->pairs[p].key = 0;
    m->used--;
    return true;
}

void keel__map_reserve(keel__map *m, size_t n)
{
    if (n > m->cap / 2) rehash(m, cap_for(n));
}

void keel__map_clear(keel__map *m)
{
    if (m->cap) memset(m->pairs, 0, (size_t)m->cap * sizeof *m->pairs);
    m->used = 0;
    m->has_zero = false;
}

void keel__map_copy(keel__map *dst, const keel__map *src)
{
    *dst = *src;
    dst->pairs = src->cap ? keel__xrealloc(NULL, (size_t)src->cap * sizeof *dst->pairs) : NULL;
    if (src->cap) memcpy(dst->pairs, src->pairs, (size_t)src->cap * sizeof *dst->pairs);
}

void keel__map_free(keel__map *m)
{
    free(m->pairs);
    memset(m, 0, sizeof *m);
}

bool keel__map_next(const keel__map *m, size_t *it, uint64_t *key, uint32_t *val)
{
    for (; *it < m->cap; ++*it)
        if (m->pairs[*it].key) {
            *key = m->pairs[*it].key;
            *val = m->pairs[(*it)++].val;
            return true;
        }
    if (*it == m->cap && m->has_zero) {
        ++*it;
        *key = 0;
        *val = m->zero_val;
        return true;
    }
    return false;
}
