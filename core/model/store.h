/* store.h — dense per-kind storage: records in pages that never move, and what each row knows. */
#ifndef KEEL_STORE_H
#define KEEL_STORE_H

#include "keel.h"

/* Records live in pages that never move (a hook's record pointer survives appends);
 * page k holds KEEL__PAGE << k records, so a big store has few page breaks and a
 * small one wastes little. */
#define KEEL__PAGE_SHIFT 6
#define KEEL__PAGE (1u << KEEL__PAGE_SHIFT)

/* What a storage row knows besides its record: its owner, 4 bytes (its slot is its owner's
 * entry's, keel__row_slot; its change counter is kept aside). */
typedef struct keel__row {
    uint32_t owner;         /* entity index (rows belong to live entities); KEEL__NONE: freed at
                               the next phase boundary */
} keel__row;

/* Dense per-kind storage: records in pages, and a parallel array of row facts. */
typedef struct keel__store {
    size_t record_size;
    size_t count, cap;      /* cap = KEEL__PAGE * (2^npages - 1) */
    size_t npages;
    size_t acap;            /* capacity of rows */
    uint64_t changes;       /* bumps when rows come, go or move: queries over this kind rebuild */
    unsigned char **pages;
    keel__row *rows;
    uint64_t *counters;     /* by row, each bumping on every write; NULL until the kind's first
                               counted write (a store never written through keel pays nothing) */
} keel__store;

/* A row whose owner went away: freed at the next phase boundary (a running hook may hold it). */
typedef struct keel__pending { keel_kind_id kind; uint32_t row, slot; } keel__pending;

static inline void *keel__store_rec(const keel__store *s, size_t row)
{
    size_t q = (row >> KEEL__PAGE_SHIFT) + 1;
    unsigned k = 63u - (unsigned)__builtin_clzll((unsigned long long)q);
    size_t first = (((size_t)1 << k) - 1) << KEEL__PAGE_SHIFT;
    return s->pages[k] + (row - first) * s->record_size;
}
/* A row's change counter (keel_member.counter). */
static inline uint64_t keel__row_counter(const keel__store *s, size_t row)
{
    return s->counters ? s->counters[row] : 0;
}
void keel__row_counters_alloc(keel__store *s);
static inline void keel__row_count(keel__store *s, size_t row, uint64_t n)
{
    if (!s->counters) keel__row_counters_alloc(s);
    s->counters[row] += n;
}
/* The slot of row `row` of kind k (its owner's entry; a pending row's as it was). */
uint32_t keel__row_slot(const keel_world *w, keel_kind_id k, uint32_t row);
/* The store of kind k in w, created (sized for k's current layout) on first use. */
keel__store *keel__store_of(keel_world *w, keel_kind_id k);
/* A new row holding k's defaults, owned by entity `owner` in `slot`. */
uint32_t keel__store_append(keel_world *w, keel_kind_id k, keel_entity owner, uint32_t slot);
/* Finalises the row's record and frees it now (the last row moves into its place). */
void keel__store_remove_now(keel_world *w, keel_kind_id k, uint32_t row);
/* Frees the row now, or, during a step or while a callback transaction is open (or rows are
 * already pending), marks it ownerless and leaves its record readable until
 * keel__store_flush_pending (the phase boundary; the outermost transaction's close outside a step). */
void keel__store_free_row(keel_world *w, keel_kind_id k, uint32_t row);
void keel__store_flush_pending(keel_world *w);
/* Copies every store of src into dst (empty): records (strings duplicated), rows and counters. */
void keel__stores_copy(keel_world *dst, const keel_world *src);
void keel__store_free_all(keel_world *w);

#endif
