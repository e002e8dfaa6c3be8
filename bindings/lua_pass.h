/* lua_pass.h — kept passes (lua_pass.c): a system's `each` or `columns` pass reuses what its last
 * pass over the same world found (the entity list, which entities it visits, their records and
 * rows) while the world's pass stamp (bind.h keel__pass_stamp) holds. */
#ifndef KEEL_LUA_PASS_H
#define KEEL_LUA_PASS_H

#include "lua_internal.h"

/* Whether ctx->each_list holds the live entities of w in run order now (its structure unmoved). */
bool keel__lua_list_kept(const keel_lua_ctx *ctx, const keel_world *w);
/* ctx->each_list was just made for w with n entities. */
void keel__lua_list_keep(keel_lua_ctx *ctx, const keel_world *w, size_t n);

/* One system's verdicts on one world, in a userdata: the items it visits in run order, each an
 * entity, its position in the pass's list, and per queried kind its component's record, storage
 * row and slot ([item * nk + kind]). */
typedef struct keel__lua_kept {
    keel__pass_stamp st; /* taken when the recording pass began */
    uint64_t frees;      /* ctx->world_frees then */
    bool valid;          /* a whole pass was recorded under st */
    bool recording;      /* the pass under way records (cleared at the first thing that breaks it) */
    size_t nk, count, cap;
    size_t want; /* room the next recording pass makes (the last one ran out) */
    keel_entity *e;
    uint32_t *at;
    void **rec;
    uint32_t *row, *slot;
} keel__lua_kept;

/* The kept verdicts of the system whose cache table is at `cache` on the World at `widx` (of ctx,
 * wrapping w), pushed (a userdata the caller keeps on the stack for the pass). When they hold now
 * they are returned valid; otherwise they are emptied to record this pass, with room for up to
 * `count` items (the pass's list). */
keel__lua_kept *keel__lua_kept_begin(lua_State *L, keel_lua_ctx *ctx, int cache, int widx, keel_world *w,
                                     size_t nk, size_t count);

/* Whether the verdicts taken at the pass's start still hold (no call since changed what they say). */
static inline bool keel__lua_kept_holds(const keel_lua_ctx *ctx, const keel__lua_kept *k, const keel_world *w)
{
    return k->frees == ctx->world_frees && keel__pass_stamp_holds(w, &k->st);
}

/* Records item (entity e at list position at, its components c, records and rows); stops the
 * recording when it is full (the next pass makes room for the whole list). */
static inline void keel__lua_kept_push(keel__lua_kept *k, keel_entity e, size_t at, const keel_comp *c,
                                       void *const *rec, const uint32_t *row, size_t list_count)
{
    if (k->count == k->cap) {
        k->recording = false;
        k->want = list_count;
        return;
    }
    size_t j = k->count++, nk = k->nk;
    k->e[j] = e;
    k->at[j] = (uint32_t)at;
    for (size_t i = 0; i < nk; i++) {
        k->rec[j * nk + i] = rec[i];
        k->row[j * nk + i] = row[i];
        k->slot[j * nk + i] = c[i].slot;
    }
}

/* The end of a pass: what it recorded is kept when nothing broke the recording. */
static inline void keel__lua_kept_end(keel__lua_kept *k)
{
    if (k->recording) k->valid = true;
    k->recording = false;
}

#endif
