/* store.c — dense per-kind storage: records in pages that never move, row facts, rows freed at phase boundaries. */
#include "model/world.h"
#include "model/record.h"
#include "model/kind.h"
#include "base/vec.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

void keel__row_counters_alloc(keel__store *s)
{
    s->counters = keel__xcalloc(s->acap ? s->acap : 1, sizeof *s->counters);
}

/* Grows the table as needed. */
keel__store *keel__store_of(keel_world *w, keel_kind_id k)
{
    if (k >= w->store_count) {
        size_t n = (size_t)k + 8;
        w->stores = keel__xrealloc(w->stores, n * sizeof *w->stores);
        memset(w->stores + w->store_count, 0, (n - w->store_count) * sizeof *w->stores);
        w->store_count = n;
    }
    keel__store *s = &w->stores[k];
    if (!s->cap) s->record_size = keel_kind_record_size(k);
    return s;
}

uint32_t keel__store_append(keel_world *w, keel_kind_id k, keel_entity owner, uint32_t slot)
{
    keel__store *s = keel__store_of(w, k);
    if (s->count == s->cap) {
        size_t n = (size_t)KEEL__PAGE << s->npages;
        s->pages = keel__xrealloc(s->pages, (s->npages + 1) * sizeof *s->pages);
        s->pages[s->npages++] = keel__xrealloc(NULL, n * (s->record_size ? s->record_size : 1));
        s->cap += n;
    }
    if (s->count == s->acap) { /* the parallel array grows geometrically */
        /* past its first page, a reserved world's kind grows straight to the reservation: each
         * doubling's copy left the old block free but resident (2.6 bytes an entity at 100k) */
        size_t need = s->acap && w->reserved > s->count ? w->reserved : s->count + 1;
        s->rows = keel__vec_grow(s->rows, &s->acap, need, sizeof *s->rows, KEEL__PAGE);
        if (s->counters) s->counters = keel__xrealloc(s->counters, s->acap * sizeof *s->counters);
    }
    size_t row = s->count++;
    s->changes++;
    /* the record itself is filled by the caller (init, copy or decode) */
    (void)slot; /* the entry the caller makes holds it */
    s->rows[row] = (keel__row){ (uint32_t)owner };
    if (s->counters) s->counters[row] = 0;
    return (uint32_t)row;
}

/* The loaded entry of kind k at storage row `row` of entity en. */
static keel__entry *row_entry(const keel_world *w, const keel__ent *en, keel_kind_id k, uint32_t row)
{
    keel__entry *ms = keel__members(w, en);
    for (uint32_t i = 0; i < en->member_count; i++)
        if (ms[i].kind == k && ms[i].row == row) return &ms[i];
    return NULL;
}

uint32_t keel__row_slot(const keel_world *w, keel_kind_id k, uint32_t row)
{
    uint32_t o = w->stores[k].rows[row].owner;
    if (o == KEEL__NONE) {
        for (size_t p = 0; p < w->pending_count; p++)
            if (w->pending[p].kind == k && w->pending[p].row == row) return w->pending[p].slot;
        return 0;
    }
    const keel__entry *m = row_entry(w, &w->ents[o], k, row);
    return m ? keel__entry_slot(w, m) : 0;
}

/* Swap-remove: the last row moves into `row` and its membership entry follows it. */
void keel__store_remove_now(keel_world *w, keel_kind_id k, uint32_t row)
{
    keel__store *s = &w->stores[k];
    keel__record_fini(k, keel__store_rec(s, row));
    s->changes++;
    size_t last = s->count - 1;
    if (row != last) {
        memcpy(keel__store_rec(s, row), keel__store_rec(s, last), s->record_size);
        s->rows[row] = s->rows[last];
        if (s->counters) s->counters[row] = s->counters[last];
        uint32_t o = s->rows[row].owner; /* never a pending row: those go last first */
        keel__entry *m = o != KEEL__NONE && w->ents[o].alive ? row_entry(w, &w->ents[o], k, (uint32_t)last) : NULL;
        if (m) m->row = row;
    }
    s->count--;
}

void keel__store_free_row(keel_world *w, keel_kind_id k, uint32_t row)
{
    /* a swap-remove moves the last row, which must not be a pending one */
    if (!w->in_step && w->txn_depth == 0 && !w->draining && !w->pending_count) {
        keel__store_remove_now(w, k, row);
        return;
    }
    /* a hook may still hold this record, or its on_destroy is deferred to the commit: free it
     * at the phase boundary, or when the outermost callback transaction has closed */
    uint32_t slot = keel__row_slot(w, k, row); /* before the owner goes */
    w->stores[k].rows[row].owner = KEEL__NONE;
    w->stores[k].changes++;
    KEEL__VEC_RESERVE(w->pending, w->pending_count, w->pending_cap, 1, 32);
    w->pending[w->pending_count++] = (keel__pending){ k, row, slot };
}

static int pending_cmp(const void *a, const void *b)
{
    const keel__pending *x = a, *y = b;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    return x->row < y->row ? 1 : x->row > y->row ? -1 : 0; /* rows descending */
}

/* Descending rows per kind: each swap-remove pulls in a row that is not pending. */
void keel__store_flush_pending(keel_world *w)
{
    if (!w->pending_count) return;
    qsort(w->pending, w->pending_count, sizeof *w->pending, pending_cmp);
    for (size_t i = 0; i < w->pending_count; i++) keel__store_remove_now(w, w->pending[i].kind, w->pending[i].row);
    w->pending_count = 0;
    w->structure++;
}

void keel__store_free_all(keel_world *w)
{
    for (size_t k = 0; k < w->store_count; k++) {
        keel__store *s = &w->stores[k];
        for (size_t r = 0; r < s->count; r++) keel__record_fini((keel_kind_id)k, keel__store_rec(s, r));
        for (size_t p = 0; p < s->npages; p++) free(s->pages[p]);
        free(s->pages);
        free(s->rows);
        free(s->counters);
    }
    free(w->stores);
    w->stores = NULL;
    w->store_count = 0;
}

/* A copied page: a big one aligned to 2 MiB and asked for transparent huge pages, so copying a
 * large world (play, a save job's capture) takes a fault per 2 MiB rather than per 4 KiB. */
static void *page_alloc(size_t bytes)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const size_t huge = (size_t)2 << 20;
    if (bytes >= huge) {
        void *p = NULL;
        if (posix_memalign(&p, huge, bytes)) abort();
        (void)madvise(p, bytes & ~(huge - 1), MADV_HUGEPAGE);
        return p;
    }
#endif
    return keel__xrealloc(NULL, bytes);
}

void keel__stores_copy(keel_world *dst, const keel_world *src)
{
    dst->store_count = src->store_count;
    dst->stores = keel__xcalloc(src->store_count ? src->store_count : 1, sizeof *dst->stores);
    for (size_t k = 0; k < src->store_count; k++) {
        const keel__store *s = &src->stores[k];
        keel__store *c = &dst->stores[k];
        *c = *s;
        c->pages = s->npages ? keel__xrealloc(NULL, s->npages * sizeof *c->pages) : NULL;
        size_t left = s->count; /* records in use: the pages' tails are never touched (no faults) */
        for (size_t p = 0; p < s->npages; p++) {
            size_t n = (size_t)KEEL__PAGE << p, width = s->record_size ? s->record_size : 1;
            c->pages[p] = page_alloc(n * width);
            size_t used = left < n ? left : n;
            memcpy(c->pages[p], s->pages[p], used * width);
            left -= used;
        }
        c->rows = s->acap ? keel__xrealloc(NULL, s->acap * sizeof *c->rows) : NULL;
        if (s->count) memcpy(c->rows, s->rows, s->count * sizeof *c->rows);
        c->counters = NULL;
        if (s->counters) {
            keel__row_counters_alloc(c);
            memcpy(c->counters, s->counters, s->count * sizeof *c->counters);
        }
        const keel__layout *L = keel__kind_layout((keel_kind_id)k);
        if (!L || !L->has_strings) continue;
        for (size_t r = 0; r < s->count; r++) /* each copy owns its strings */
            if (s->rows[r].owner != KEEL__NONE)
                keel__record_copy((keel_kind_id)k, keel__store_rec(c, r), keel__store_rec(s, r));
            else
                memset(keel__store_rec(c, r), 0, s->record_size); /* already finalised in src */
    }
}
