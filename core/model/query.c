/* query.c — dense per-kind storage access and cached multi-kind queries. */
#include "model/world.h"
#include "bind.h"

#include <stdlib.h>
#include <string.h>

struct keel_query {
    keel_world *w;
    size_t n;
    keel_kind_id *kinds;
    size_t rows, cap;
    keel_entity *ents;
    void ***cols;       /* n columns of `cap` record pointers */
    uint64_t *seen;     /* each kind's storage change counter when built */
    bool valid;
    bool aligned;       /* query row r is storage row r of every kind (keel_query_chunk) */
};

static const keel__store *store(const keel_world *w, keel_kind_id k)
{
    return k && k < w->store_count ? &w->stores[k] : NULL;
}

size_t keel_storage_count(const keel_world *w, keel_kind_id k)
{
    const keel__store *s = store(w, k);
    return s ? s->count : 0;
}

/* KEEL_NO_ENTITY for a row freed during a step (it goes at the phase boundary). */
keel_entity keel_storage_owner(const keel_world *w, keel_kind_id k, size_t i)
{
    const keel__store *s = store(w, k);
    if (!s || i >= s->count || s->rows[i].owner == KEEL__NONE) return KEEL_NO_ENTITY;
    return keel__handle(w, s->rows[i].owner);
}

uint32_t keel_storage_slot(const keel_world *w, keel_kind_id k, size_t i)
{
    const keel__store *s = store(w, k);
    return s && i < s->count ? keel__row_slot(w, k, (uint32_t)i) : 0;
}

void *keel_storage_record(const keel_world *w, keel_kind_id k, size_t i)
{
    const keel__store *s = store(w, k);
    return s && i < s->count ? keel__store_rec(s, i) : NULL;
}

keel_query *keel_query_new(keel_world *w, const keel_kind_id *kinds, size_t n)
{
    keel_query *q = calloc(1, sizeof *q);
    if (!q) return NULL;
    q->w = w;
    q->n = n;
    q->kinds = keel__xrealloc(NULL, (n ? n : 1) * sizeof *q->kinds);
    if (n) memcpy(q->kinds, kinds, n * sizeof *kinds);
    q->cols = keel__xcalloc(n, sizeof *q->cols);
    q->seen = keel__xcalloc(n, sizeof *q->seen);
    return q;
}

void keel_query_free(keel_query *q)
{
    if (!q) return;
    for (size_t k = 0; k < q->n; k++) free(q->cols[k]);
    free(q->cols);
    free(q->seen);
    free(q->ents);
    free(q->kinds);
    free(q);
}

static void query_grow(keel_query *q, size_t need)
{
    if (need <= q->cap) return;
    q->cap = need;
    q->ents = keel__xrealloc(q->ents, q->cap * sizeof *q->ents);
    for (size_t k = 0; k < q->n; k++) q->cols[k] = keel__xrealloc(q->cols[k], q->cap * sizeof **q->cols);
}

/* Drives from the smallest storage; each entity once, at each kind's lowest slot. */
static void query_rebuild(keel_query *q)
{
    keel_world *w = q->w;
    q->rows = 0;
    for (size_t k = 0; k < q->n; k++) {
        const keel__store *s = store(w, q->kinds[k]);
        q->seen[k] = s ? s->changes : 0;
    }
    q->valid = true;
    q->aligned = false;
    if (!q->n) return;
    size_t drive = 0;
    for (size_t k = 0; k < q->n; k++) {
        if (!store(w, q->kinds[k])) return;
        if (store(w, q->kinds[k])->count < store(w, q->kinds[drive])->count) drive = k;
    }
    const keel__store *s = store(w, q->kinds[drive]);
    query_grow(q, s->count);
    bool aligned = true;
    for (size_t r = 0; r < s->count; r++) {
        uint32_t o = s->rows[r].owner;
        if (o == KEEL__NONE || o == 0) continue; /* freed during a step; the root is not an entity */
        keel__ent *en = &w->ents[o];
        keel__entry *m = keel__entry_find(w, en, q->kinds[drive], KEEL_SLOT_AUTO);
        if (!m || m->row != r) continue;
        size_t k = 0;
        for (; k < q->n; k++) {
            keel__entry *x = k == drive ? m : keel__entry_find(w, en, q->kinds[k], KEEL_SLOT_AUTO);
            if (!x) break;
            q->cols[k][q->rows] = keel__store_rec(&w->stores[q->kinds[k]], x->row);
            aligned = aligned && x->row == q->rows;
        }
        if (k < q->n) continue;
        q->ents[q->rows++] = keel__handle(w, o);
    }
    for (size_t k = 0; k < q->n && aligned; k++) aligned = store(w, q->kinds[k])->count == q->rows;
    q->aligned = aligned; /* no root rows, pending frees, extra slots or strays in any storage */
}

/* Only changes to the queried kinds' storage make the rows stale. */
size_t keel_query_update(keel_query *q)
{
    bool stale = !q->valid;
    for (size_t k = 0; k < q->n && !stale; k++) {
        const keel__store *s = store(q->w, q->kinds[k]);
        stale = (s ? s->changes : 0) != q->seen[k];
    }
    if (stale) query_rebuild(q);
    return q->rows;
}

keel_entity keel_query_entity(const keel_query *q, size_t row)
{
    return row < q->rows ? q->ents[row] : KEEL_NO_ENTITY;
}

void **keel_query_column(const keel_query *q, size_t k) { return k < q->n ? q->cols[k] : NULL; }

bool keel_query_aligned(const keel_query *q) { return q->valid && q->aligned; }

size_t keel_query_chunk(const keel_query *q, size_t chunk, void **base, size_t *first)
{
    if (!q->valid || !q->aligned || chunk >= 63) return 0;
    /* every storage has the same page geometry: page c holds rows [64 (2^c - 1), 64 (2^(c+1) - 1)) */
    size_t start = (((size_t)1 << chunk) - 1) << KEEL__PAGE_SHIFT;
    if (start >= q->rows) return 0;
    size_t n = (size_t)KEEL__PAGE << chunk;
    if (n > q->rows - start) n = q->rows - start;
    for (size_t k = 0; k < q->n; k++) base[k] = keel__store_rec(&q->w->stores[q->kinds[k]], start);
    if (first) *first = start;
    return n;
}

bool keel__comp_info_get(const keel_world *w, keel_entity e, keel_kind_id k, uint32_t slot, keel__comp_info *out)
{
    keel__ent *en = keel__ent_get(w, e);
    keel__entry *m = en && k ? keel__entry_find(w, en, k, slot) : NULL;
    if (!m) return false;
    out->c = (keel_comp){ e, k, keel__entry_slot(w, m) };
    out->serial = keel__entry_lserial(m);
    out->record = keel__store_rec(&w->stores[k], m->row);
    out->row = m->row;
    out->enabled = m->enabled;
    return true;
}

bool keel__comp_info_row(const keel_world *w, keel_entity e, const keel_kind_id *kinds, size_t n, bool all,
                         keel__comp_info *out)
{
    keel__ent *en = keel__ent_get(w, e);
    if (!en || (uint32_t)e == 0) return false;
    for (size_t k = 0; k < n; k++) {
        keel__entry *m = kinds[k] ? keel__entry_find(w, en, kinds[k], KEEL_SLOT_AUTO) : NULL;
        if (!m || (!all && !m->enabled)) return false;
        out[k].c = (keel_comp){ e, kinds[k], keel__entry_slot(w, m) };
        out[k].serial = keel__entry_lserial(m);
        out[k].record = keel__store_rec(&w->stores[kinds[k]], m->row);
        out[k].row = m->row;
        out[k].enabled = m->enabled;
    }
    return all || keel__active(w, (uint32_t)e);
}
