/* capture.c — a save job's capture (files/save_async.c, design/saving.md): the committed world
 * copied on the caller's thread into memory the world keeps between saves.
 *
 * Why kept: a fresh copy of a 100k-entity world spent most of its time in page faults (the
 * kernel zeroing new pages), not in copying. The capture's arrays come from a few big blocks
 * (bump allocated, reset between saves), so the next save copies into pages already resident,
 * with memcpy in bulk: the tables, the membership chunks and the record pages as they are, block
 * ids and rows unchanged. Only what records and unknown components own on the heap is copied
 * one by one (rare: the built-in kinds hold no strings).
 *
 * Who owns what: a world has a home (created at its first capture) holding at most one spare
 * capture; the world and each job with a capture of it hold a count on the home. A job's worker
 * hands its capture back when done (the home's spare, the bigger when there already is one, or
 * freed when the world is gone); the world's end frees the spare. Homes are guarded by one mutex,
 * so the worker touches nothing the world owns. */
#include "model/capture.h"
#include "model/kind.h"
#include "model/record.h"
#include "model/world.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef struct block {
    struct block *next;
    unsigned char *p;
    size_t cap, used;
} block;

struct keel__capture {
    keel_world w; /* the copy; its arrays point into the blocks */
    block *blocks, *cur;
    size_t total; /* the blocks' capacity */
    struct keel__capture_home *home;
};

typedef struct keel__capture_home {
    int refs;  /* the world (until it goes) and each capture out in a job */
    bool gone; /* the world went */
    keel__capture *spare;
} keel__capture_home;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

#define HUGE ((size_t)2 << 20)

/* A block of at least n bytes: big ones aligned to 2 MiB and asked for transparent huge pages
 * (a first capture then faults once per 2 MiB). */
static block *block_new(size_t n)
{
    block *b = keel__xcalloc(1, sizeof *b);
    size_t cap = n < ((size_t)64 << 10) ? (size_t)64 << 10 : n; /* a small world keeps little */
    if (cap >= HUGE) {
        cap = (cap + HUGE - 1) & ~(HUGE - 1);
        void *p = NULL;
        if (posix_memalign(&p, HUGE, cap)) abort();
#ifdef MADV_HUGEPAGE
        (void)madvise(p, cap, MADV_HUGEPAGE);
#endif
        b->p = p;
    } else {
        b->p = keel__xrealloc(NULL, cap);
    }
    b->cap = cap;
    return b;
}

/* n bytes aligned to `align` (a power of two, at most 64). */
static void *grab(keel__capture *c, size_t n, size_t align)
{
    for (;;) {
        block *b = c->cur;
        if (b) {
            size_t at = (b->used + align - 1) & ~(align - 1);
            if (at <= b->cap && b->cap - at >= n) {
                b->used = at + n;
                return b->p + at;
            }
            if (b->next) { /* the rest of this one stays unused this time */
                c->cur = b->next;
                continue;
            }
        }
        /* a world that grew: a new block as big as all before (the capacity doubles) */
        block *nb = block_new(n + 64 > c->total ? n + 64 : c->total);
        if (b) b->next = nb;
        else c->blocks = nb;
        c->total += nb->cap;
        c->cur = nb;
    }
}

#define GRAB(c, n, type) ((type *)grab((c), (size_t)(n) * sizeof(type), 16))

static void *dup_mem(keel__capture *c, const void *src, size_t bytes)
{
    void *p = grab(c, bytes ? bytes : 1, 16);
    if (bytes) memcpy(p, src, bytes);
    return p;
}

/* What a first capture of w takes, give or take the names' text: one block for all of it. */
static size_t estimate(const keel_world *w)
{
    size_t n = w->ent_count * sizeof(keel__ent) + w->hash_cap * sizeof(uint32_t) + w->names_count * 48 +
        w->name_slots_cap * sizeof(uint32_t) + w->kids_count * sizeof(keel__kids) +
        w->kids_map_cap * sizeof(uint32_t) + w->free_count * sizeof(uint32_t) +
        w->store_count * sizeof(keel__store);
    for (uint32_t k = 0; k < w->entry_chunk_count; k++) n += w->entry_chunk_size[k] * sizeof(keel__entry);
    for (size_t k = 0; k < w->store_count; k++) {
        const keel__store *s = &w->stores[k];
        n += s->count * (s->record_size + sizeof(keel__row) + (s->counters ? sizeof(uint64_t) : 0)) +
            s->npages * (sizeof(void *) + 64);
    }
    return n + n / 8 + 4096;
}

static void copy_entities(keel__capture *c, const keel_world *w)
{
    keel_world *d = &c->w;
    d->ent_count = d->ent_cap = w->ent_count;
    d->ents = dup_mem(c, w->ents, w->ent_count * sizeof *w->ents);
    /* the names table whole, ids kept; the texts side by side */
    d->names_count = d->names_cap = w->names_count;
    d->names = dup_mem(c, w->names, w->names_count * sizeof *w->names);
    for (uint32_t k = 0; k < w->names_count; k++)
        if (w->names[k].s) {
            size_t len = strlen(w->names[k].s) + 1;
            d->names[k].s = memcpy(grab(c, len, 1), w->names[k].s, len);
        }
    d->names_free = w->names_free;
    d->name_slots_cap = w->name_slots_cap;
    d->name_slots_used = w->name_slots_used;
    d->name_slots = w->name_slots_cap ? dup_mem(c, w->name_slots, w->name_slots_cap * sizeof *w->name_slots) : NULL;
    d->name_last = w->name_last;
    d->kids_count = d->kids_cap = w->kids_count;
    d->kids_free = w->kids_free;
    d->kids = w->kids_count ? dup_mem(c, w->kids, w->kids_count * sizeof *w->kids) : NULL;
    d->kids_root = w->kids_root;
    d->kids_map_cap = w->kids_map_cap;
    d->kids_map_used = w->kids_map_used;
    d->kids_map = w->kids_map_cap ? dup_mem(c, w->kids_map, w->kids_map_cap * sizeof *w->kids_map) : NULL;
    d->free_count = d->free_cap = w->free_count;
    d->free_idx = dup_mem(c, w->free_idx, w->free_count * sizeof *w->free_idx);
    d->hash_cap = w->hash_cap;
    d->hash_ibits = w->hash_ibits;
    d->hash_used = w->hash_used;
    d->hash = w->hash_cap ? dup_mem(c, w->hash, w->hash_cap * sizeof *w->hash) : NULL;
    d->live = w->live;
    d->reuse_index = KEEL__NONE;
}

static keel__unknown *unknown_copy(const keel__unknown *s)
{
    keel__unknown *u = keel__xrealloc(NULL, sizeof *u);
    u->key = keel__strdup(s->key);
    u->preserved = keel_node_copy(s->preserved);
    u->serial = s->serial;
    u->version = s->version;
    u->slot = s->slot;
    return u;
}

/* The membership chunks as they are (every block id stays valid); a class's newest chunk only
 * as far as it was handed out. Then each live entity's unknown entries get their own bodies. */
static void copy_members(keel__capture *c, const keel_world *w)
{
    keel_world *d = &c->w;
    uint32_t used[KEEL__BLOCK_CHUNKS];
    for (uint32_t k = 0; k < w->entry_chunk_count; k++) used[k] = w->entry_chunk_size[k];
    for (uint32_t cl = 0; cl < KEEL__ENTRY_CLASSES; cl++)
        if (w->entry_chunks[cl]) used[w->entry_last[cl]] = w->entry_next[cl];
    for (uint32_t k = 0; k < w->entry_chunk_count; k++)
        d->entry_chunk[k] = (uintptr_t)dup_mem(c, (const void *)w->entry_chunk[k], used[k] * sizeof(keel__entry));
    d->entry_chunk_count = w->entry_chunk_count;
    memcpy(d->entry_chunk_size, w->entry_chunk_size, sizeof d->entry_chunk_size);
    memcpy(d->entry_free, w->entry_free, sizeof d->entry_free);
    memcpy(d->entry_chunks, w->entry_chunks, sizeof d->entry_chunks);
    memcpy(d->entry_last, w->entry_last, sizeof d->entry_last);
    memcpy(d->entry_next, w->entry_next, sizeof d->entry_next);
    memcpy(d->entry_end, w->entry_end, sizeof d->entry_end);
    for (uint32_t i = 0; i < d->ent_count; i++) {
        keel__ent *en = &d->ents[i];
        if (!en->alive) { /* as keel__entities_copy leaves them */
            en->block = KEEL__NO_BLOCK;
            en->member_count = 0;
            en->name = 0;
            continue;
        }
        if (en->block == KEEL__NO_BLOCK) continue;
        keel__entry *ms = keel__members(d, en);
        for (uint32_t k = 0; k < en->member_count; k++)
            if (!ms[k].kind) keel__entry_set_unk(&ms[k], unknown_copy(keel__entry_unk(&ms[k])));
    }
    keel__members_copy_aside(d, w);
}

/* Each store's used records page by page, its row facts and counters; records owning strings
 * get their own copies of them. */
static void copy_stores(keel__capture *c, const keel_world *w)
{
    keel_world *d = &c->w;
    d->store_count = w->store_count;
    d->stores = dup_mem(c, w->stores, w->store_count * sizeof *w->stores);
    for (size_t k = 0; k < w->store_count; k++) {
        const keel__store *s = &w->stores[k];
        keel__store *t = &d->stores[k];
        t->pages = s->npages ? GRAB(c, s->npages, unsigned char *) : NULL;
        size_t left = s->count, width = s->record_size ? s->record_size : 1;
        for (size_t p = 0; p < s->npages; p++) {
            size_t n = (size_t)KEEL__PAGE << p, in_use = left < n ? left : n;
            t->pages[p] = dup_mem(c, s->pages[p], in_use * width);
            left -= in_use;
        }
        t->acap = s->count; /* a capture never grows */
        t->rows = s->count ? dup_mem(c, s->rows, s->count * sizeof *s->rows) : NULL;
        t->counters = s->counters && s->count ? dup_mem(c, s->counters, s->count * sizeof *s->counters) : NULL;
        const keel__layout *L = keel__kind_layout((keel_kind_id)k);
        if (!L || !L->has_strings) continue;
        for (size_t r = 0; r < s->count; r++) {
            if (s->rows[r].owner != KEEL__NONE)
                keel__record_copy((keel_kind_id)k, keel__store_rec(t, r), keel__store_rec(s, r));
            else memset(keel__store_rec(t, r), 0, s->record_size); /* already finalised in w */
        }
    }
}

keel__capture *keel__capture_take(const keel_world *w)
{
    keel_world *mw = (keel_world *)w; /* the home is memory kept beside the world, none of its state */
    pthread_mutex_lock(&mu);
    if (!mw->capture_home) {
        mw->capture_home = keel__xcalloc(1, sizeof *mw->capture_home);
        mw->capture_home->refs = 1;
    }
    keel__capture_home *h = mw->capture_home;
    keel__capture *c = h->spare;
    h->spare = NULL;
    h->refs++;
    pthread_mutex_unlock(&mu);
    if (!c) {
        c = keel__xcalloc(1, sizeof *c);
        c->blocks = c->cur = block_new(estimate(w));
        c->total = c->blocks->cap;
    }
    for (block *b = c->blocks; b; b = b->next) b->used = 0;
    c->cur = c->blocks;
    c->home = h;
    keel_world *d = &c->w;
    memset(d, 0, sizeof *d);
    keel__world_copy_settings(d, w); /* the same settings and counters play's copy takes */
    d->name = dup_mem(c, w->name, strlen(w->name) + 1);
    copy_entities(c, w);
    copy_members(c, w);
    copy_stores(c, w);
    return c;
}

const keel_world *keel__capture_world(const keel__capture *c)
{
    return &c->w;
}

static void capture_free(keel__capture *c)
{
    if (!c) return;
    for (block *b = c->blocks, *next; b; b = next) {
        next = b->next;
        free(b->p);
        free(b);
    }
    free(c);
}

void keel__capture_done(keel__capture *c)
{
    keel_world *d = &c->w;
    /* what the copy owns outside the blocks: record strings, unknown bodies, slots, marks, fresh */
    for (size_t k = 0; k < d->store_count; k++) {
        const keel__layout *L = keel__kind_layout((keel_kind_id)k);
        if (!L || !L->has_strings) continue;
        for (size_t r = 0; r < d->stores[k].count; r++)
            keel__record_fini((keel_kind_id)k, keel__store_rec(&d->stores[k], r));
    }
    for (uint32_t i = 0; i < d->ent_count; i++) {
        keel__ent *en = &d->ents[i];
        if (!en->alive || en->block == KEEL__NO_BLOCK) continue;
        keel__entry *ms = keel__members(d, en);
        for (uint32_t k = 0; k < en->member_count; k++)
            if (!ms[k].kind) keel__unknown_free(keel__entry_unk(&ms[k]));
    }
    d->entry_chunk_count = 0; /* the chunks are the blocks' */
    keel__entry_pools_free(d);
    memset(d, 0, sizeof *d);
    keel__capture_home *h = c->home, *dead = NULL;
    c->home = NULL;
    pthread_mutex_lock(&mu);
    if (!h->gone && (!h->spare || h->spare->total < c->total)) { /* the bigger is likelier to fit the next */
        keel__capture *was = h->spare;
        h->spare = c;
        c = was;
    }
    if (--h->refs == 0) dead = h;
    pthread_mutex_unlock(&mu);
    capture_free(c);
    free(dead);
}

void keel__capture_home_drop(keel_world *w)
{
    keel__capture_home *h = w->capture_home, *dead = NULL;
    if (!h) return;
    w->capture_home = NULL;
    pthread_mutex_lock(&mu);
    keel__capture *spare = h->spare;
    h->spare = NULL;
    h->gone = true;
    if (--h->refs == 0) dead = h;
    pthread_mutex_unlock(&mu);
    capture_free(spare);
    free(dead);
}

size_t keel__capture_spare_bytes(const keel_world *w)
{
    size_t n = 0;
    pthread_mutex_lock(&mu);
    if (w->capture_home && w->capture_home->spare) n = w->capture_home->spare->total;
    pthread_mutex_unlock(&mu);
    return n;
}
