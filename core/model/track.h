/* track.h — what a change tracker outside the model reads of a world (the replication host,
 * core/net/host_track.c), so that it needs none of the world's internals.
 *
 * The tracker walks every entity only when the world's structure or a tracked kind's rows moved
 * (keel__track_structure, keel__track_kind_changes: counters that only grow); otherwise it
 * keeps each component's storage row (keel__track_row) and each tick compares the record there
 * (keel__track_rec) with what it last saw, looking at values that change only through the write
 * path when the row's write counter (keel__track_counter) moved. Inline over world.h: they run
 * per component per tick. */
#ifndef KEEL_TRACK_H
#define KEEL_TRACK_H

#include "model/world.h"

/* Bumps on every structural change of w (an entity or component came, went or moved). */
static inline uint64_t keel__track_structure(const keel_world *w)
{
    return w->structure;
}

/* Bumps when kind k's rows in w come, go or move; 0 while w has no storage for k. */
static inline uint64_t keel__track_kind_changes(const keel_world *w, keel_kind_id k)
{
    return k < w->store_count ? w->stores[k].changes : 0;
}

/* The storage row of a live component: it stays while neither counter above moves. */
static inline uint32_t keel__track_row(const keel_world *w, keel_comp c)
{
    return keel__comp_entry(w, c)->row;
}

/* The record of kind k at storage row `row` (read only: writes go through the write path). */
static inline const unsigned char *keel__track_rec(const keel_world *w, keel_kind_id k, uint32_t row)
{
    return keel__store_rec(&w->stores[k], row);
}

/* The write counter of kind k's row `row` (keel_member.counter): moves on every counted write. */
static inline uint64_t keel__track_counter(const keel_world *w, keel_kind_id k, uint32_t row)
{
    return keel__row_counter(&w->stores[k], row);
}

/* Whether e is in an open lift of w (lift.c): out of play, its handle still its own. Not alive
 * under its own generation says so at once; only an index retired by a destroy (its count at the
 * end) looks the same, and the lifts are asked then. */
static inline bool keel__track_lifted(const keel_world *w, keel_entity e)
{
    uint32_t i = (uint32_t)e;
    if (i >= w->ent_count || w->ents[i].alive || keel__handle(w, i) != e) return false;
    return w->ents[i].gen_count < KEEL__GEN_COUNT || keel__lifted(w, i);
}

#endif
