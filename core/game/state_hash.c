/* state_hash.c — the 64-bit hash of a world's committed state (game/record.h): the full pass
 * (keel__world_hash) and the incremental one a recorder and a replay keep (keel__hasher).
 *
 * The hash is a sum: one term per entity (UUID, name, parent, enabled), one per component
 * (where it is: owner, kind key, slot, enabled, faulted; and what it holds: its record), then the
 * random generators mixed in. A component's term is hash_bytes(place, record): `place` depends
 * only on facts that move with the world's counters, the record on its values.
 *
 * The incremental hasher keeps the sum of every entity's term and every unknown component's
 * (`fixed`), and each stored component's place by kind and storage row. Those are rebuilt by one
 * full pass only when something they depend on may have moved: the world (its epoch: play's stop,
 * a new world), structure (spawn, destroy, add, remove, reparent, lift, a flushed row), enabling
 * (any enabled flag), relabels (a rename, a fault set or cleared) or a store's row changes. Each
 * call then hashes every record from its kind's pages, in storage order. Records are read every
 * time because writes need not say so: a C hook or system writes its record through the pointer
 * it was given, and no counter moves (the row counters count only the write path's writes). */
#include "base/util.h"
#include "game/record.h"
#include "model/kind.h"
#include "model/record.h"
#include "model/world.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t h, uint64_t v)
{
    h = (h ^ v) * 0xff51afd7ed558ccdull;
    return h ^ (h >> 32);
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, b, 8);
        h = mix(h, v);
        b += 8;
        n -= 8;
    }
    uint64_t v = 0;
    if (n) {
        memcpy(&v, b, n);
        h = mix(h, v ^ ((uint64_t)n << 56));
    }
    return h;
}

static uint64_t hash_str(uint64_t h, const char *s)
{
    return s ? hash_bytes(mix(h, strlen(s)), s, strlen(s)) : mix(h, 1);
}

uint64_t keel__kind_layout_hash(keel_kind_id k)
{
    const keel_kind_desc *kd = keel_kind_describe(k);
    if (!kd) return 0;
    uint64_t h = hash_str(0x6b696e64, kd->key);
    h = mix(h, (uint64_t)kd->multiplicity);
    h = mix(h, kd->flags);
    for (size_t i = 0; i < kd->field_count; i++) {
        const keel_field_desc *f = &kd->fields[i];
        h = hash_str(h, f->key);
        h = mix(h, (uint64_t)f->type << 32 | f->flags);
        for (size_t c = 0; c < f->choice_count; c++) h = hash_str(h, f->choices[c]);
    }
    return h;
}

static uint64_t hash_value(uint64_t h, const keel_value *v)
{
    h = mix(h, (uint64_t)v->type << 1 | v->nil);
    switch (v->type) {
    case KEEL_T_BOOL: return mix(h, v->as.b);
    case KEEL_T_INT:
    case KEEL_T_ENUM: return mix(h, (uint64_t)v->as.i);
    case KEEL_T_FLOAT: return hash_bytes(h, &v->as.f, 8);
    case KEEL_T_STRING: return hash_str(h, v->as.s);
    case KEEL_T_ASSET:
    case KEEL_T_ENTITY: return hash_bytes(h, v->as.u.bytes, 16);
    default: return hash_bytes(h, v->as.v, sizeof v->as.v);
    }
}

/* Where a component is: its owner's hash, its kind key's, its slot and flags. */
static uint64_t comp_place(const keel_world *w, uint64_t owner, uint64_t key, const keel__entry *m)
{
    return mix(owner ^ key, (uint64_t)keel__entry_slot(w, m) << 2 | (uint64_t)m->enabled << 1 | m->faulted);
}

/* What a record of kind k holds, onto its place. */
static uint64_t rec_hash(keel_kind_id k, const keel__layout *L, const keel_kind_desc *kd, uint64_t h,
                         const void *rec)
{
    if (!L->has_strings) return hash_bytes(h, rec, L->size); /* padding is the defaults' zeros */
    for (size_t f = 0; f < kd->field_count; f++) {
        keel_value v;
        keel__record_get(k, rec, (int)f, &v);
        h = hash_value(h, &v);
    }
    return h;
}

/* The hash of each kind's key, by kind id (kinds are few; keys never change under an id). */
static uint64_t key_hash(const keel__entry *m, uint64_t **cache, size_t *cap)
{
    if (!m->kind) return hash_str(0x6b6579, keel__entry_key(m));
    if (m->kind >= *cap) {
        size_t n = (size_t)m->kind + 16;
        *cache = keel__xrealloc(*cache, n * sizeof **cache);
        memset(*cache + *cap, 0, (n - *cap) * sizeof **cache);
        *cap = n;
    }
    uint64_t *h = &(*cache)[m->kind];
    if (!*h) *h = hash_str(0x6b6579, keel__entry_key(m)) | 1;
    return *h;
}

/* Entity i's own term (not the root's: it has none). */
static uint64_t ent_term(const keel_world *w, uint32_t i, uint64_t *owner)
{
    const keel__ent *en = &w->ents[i];
    *owner = hash_bytes(0x656e74, en->uuid.bytes, 16);
    uint64_t h = hash_str(*owner, keel__ent_name(w, en));
    uint32_t p = en->parent;
    if (p != 0 && p != KEEL__NONE) h = hash_bytes(h, w->ents[p].uuid.bytes, 16);
    return mix(h, en->enabled);
}

static uint64_t finish(const keel_world *w, uint64_t sum)
{
    int64_t seed;
    uint64_t rs[4];
    keel_random_state(w, &seed, rs);
    uint64_t h = hash_bytes(mix(sum, (uint64_t)seed), rs, sizeof rs);
    return hash_bytes(h, w->idrng, sizeof w->idrng);
}

static bool counted(const keel_world *w, uint32_t i)
{
    return w->ents[i].alive && !(w->lifts && keel__lifted(w, i));
}

uint64_t keel__world_hash(const keel_world *w)
{
    uint64_t sum = 0, *keys = NULL;
    size_t keys_cap = 0;
    for (uint32_t i = 0; i < w->ent_count; i++) {
        if (!counted(w, i)) continue;
        const keel__ent *en = &w->ents[i];
        uint64_t owner = 0;
        if (i != 0) sum += ent_term(w, i, &owner);
        const keel__entry *ms = keel__members(w, en);
        for (uint32_t k = 0; k < en->member_count; k++) {
            const keel__entry *m = &ms[k];
            uint64_t h = comp_place(w, owner, key_hash(m, &keys, &keys_cap), m);
            if (m->kind) {
                const keel__layout *L;
                const keel_kind_desc *kd = keel__kind_parts(m->kind, &L);
                h = rec_hash(m->kind, L, kd, h, keel__store_rec(&w->stores[m->kind], m->row));
            }
            sum += h;
        }
    }
    free(keys);
    return finish(w, sum);
}

/* ================================================================ the incremental hash */

struct keel__hash_kind {
    uint64_t changes; /* the store's row changes when the places were taken */
    size_t rows;      /* its row count then */
    uint64_t *place;  /* by row */
    uint8_t *live;    /* by row: 1 when a counted entity holds it (0: pending, freed at the boundary) */
    size_t cap;
    size_t dead;      /* rows not live (usually none: the loop then asks no row) */
};

static bool hasher_current(const keel__hasher *h, const keel_world *w)
{
    if (!h->valid || h->epoch != w->epoch || h->structure != w->structure || h->enabling != w->enabling ||
        h->relabels != w->relabels || h->nkinds != w->store_count)
        return false;
    for (size_t k = 0; k < h->nkinds; k++)
        if (h->kinds[k].changes != w->stores[k].changes || h->kinds[k].rows != w->stores[k].count) return false;
    return true;
}

/* One full pass over the entities: every term that no record decides, and every place. */
static void hasher_rebuild(keel__hasher *h, const keel_world *w)
{
    if (h->nkinds < w->store_count) {
        h->kinds = keel__xrealloc(h->kinds, w->store_count * sizeof *h->kinds);
        memset(h->kinds + h->nkinds, 0, (w->store_count - h->nkinds) * sizeof *h->kinds);
    }
    for (size_t k = w->store_count; k < h->nkinds; k++) { /* a world with fewer kinds' stores */
        free(h->kinds[k].place);
        free(h->kinds[k].live);
    }
    h->nkinds = w->store_count;
    for (size_t k = 0; k < h->nkinds; k++) {
        struct keel__hash_kind *hk = &h->kinds[k];
        size_t n = w->stores[k].count;
        if (n > hk->cap) {
            hk->place = keel__xrealloc(hk->place, n * sizeof *hk->place);
            hk->live = keel__xrealloc(hk->live, n);
            hk->cap = n;
        }
        if (n) memset(hk->live, 0, n);
        hk->rows = n;
        hk->dead = n;
        hk->changes = w->stores[k].changes;
    }
    if (h->keys) memset(h->keys, 0, h->keys_cap * sizeof *h->keys); /* a kind id may name another kind by now */
    uint64_t fixed = 0;
    for (uint32_t i = 0; i < w->ent_count; i++) {
        if (!counted(w, i)) continue;
        const keel__ent *en = &w->ents[i];
        uint64_t owner = 0;
        if (i != 0) fixed += ent_term(w, i, &owner);
        const keel__entry *ms = keel__members(w, en);
        for (uint32_t k = 0; k < en->member_count; k++) {
            const keel__entry *m = &ms[k];
            uint64_t place = comp_place(w, owner, key_hash(m, &h->keys, &h->keys_cap), m);
            if (!m->kind) {
                fixed += place; /* an unknown component: no record */
                continue;
            }
            struct keel__hash_kind *hk = &h->kinds[m->kind];
            hk->place[m->row] = place;
            hk->live[m->row] = 1;
            hk->dead--;
        }
    }
    h->fixed = fixed;
    h->epoch = w->epoch;
    h->structure = w->structure;
    h->enabling = w->enabling;
    h->relabels = w->relabels;
    h->valid = true;
}

/* The records of kind k, page by page (page p holds KEEL__PAGE << p of them). */
static uint64_t kind_sum(const keel_world *w, keel_kind_id k, const struct keel__hash_kind *hk)
{
    const keel__layout *L;
    const keel_kind_desc *kd = keel__kind_parts(k, &L);
    const keel__store *s = &w->stores[k];
    if (!kd || !hk->rows) return 0;
    uint64_t sum = 0;
    size_t row = 0, size = s->record_size;
    for (size_t p = 0; row < hk->rows; p++) {
        const unsigned char *rec = s->pages[p];
        size_t end = row + ((size_t)KEEL__PAGE << p);
        if (end > hk->rows) end = hk->rows;
        if (!L->has_strings && !hk->dead) {
            for (; row < end; row++, rec += size) sum += hash_bytes(hk->place[row], rec, L->size);
        } else if (!L->has_strings) {
            for (; row < end; row++, rec += size)
                if (hk->live[row]) sum += hash_bytes(hk->place[row], rec, L->size);
        } else {
            for (; row < end; row++, rec += size)
                if (hk->live[row]) sum += rec_hash(k, L, kd, hk->place[row], rec);
        }
    }
    return sum;
}

uint64_t keel__hasher_hash(keel__hasher *h, const keel_world *w)
{
    if (!hasher_current(h, w)) hasher_rebuild(h, w);
    uint64_t sum = h->fixed;
    for (size_t k = 1; k < h->nkinds; k++) sum += kind_sum(w, (keel_kind_id)k, &h->kinds[k]);
    uint64_t got = finish(w, sum);
#ifndef NDEBUG
    /* the two passes are one hash: a debug build checks every incremental answer */
    uint64_t full = keel__world_hash(w);
    if (got != full) {
        fprintf(stderr, "keel: the incremental state hash %016llx differs from the full one %016llx\n",
                (unsigned long long)got, (unsigned long long)full);
        abort();
    }
#endif
    return got;
}

void keel__hasher_reset(keel__hasher *h)
{
    h->valid = false;
}

void keel__hasher_free(keel__hasher *h)
{
    if (!h) return;
    for (size_t k = 0; k < h->nkinds; k++) {
        free(h->kinds[k].place);
        free(h->kinds[k].live);
    }
    free(h->kinds);
    free(h->keys);
    memset(h, 0, sizeof *h);
}
