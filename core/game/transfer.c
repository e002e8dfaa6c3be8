/* transfer.c — keel_transfer: an entity's subtree moved out of one world into another, as one. */
#include "model/world.h"
#include "model/hierarchy.h"

#include <stdlib.h>

/* Everything that could refuse, before anything moves. */
static keel_status transfer_check(keel_world *src, keel_entity e, keel_world *dst, keel_entity parent, uint32_t *i,
                                  uint32_t *p, keel_diags *d)
{
    if (!src || !dst) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel_transfer: NULL world");
    if (src == dst)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "a transfer moves between two worlds (keel_reparent moves within one)");
    if (src->txn_depth > 0 || dst->txn_depth > 0 || src->in_step || dst->in_step)
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "transfer refuses while a callback transaction is open");
    if (src->lifts || dst->lifts)
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "transfer refuses while entities are lifted (restore or discard them)");
    keel_status st = keel__ent_target(src, e, "transferred", i, d);
    if (st) return st;
    *p = 0;
    if (parent && (st = keel__parent_index(dst, parent, p, d))) return st;
    if (keel__depth_of(dst, *p) + keel__height_of(src, *i) > KEEL__MAX_DEPTH)
        return KEEL_ERROR(d, KEEL_LIMIT_EXCEEDED, "", "hierarchy depth limit (%d) exceeded", KEEL__MAX_DEPTH);
    return KEEL_OK;
}

/* No UUID of the subtree may be alive in dst already. */
static keel_status clash_check(const keel_world *src, const uint32_t *list, size_t n, const keel_world *dst,
                               keel_diags *d)
{
    for (size_t k = 0; k < n; k++) {
        if (k + 8 < n) keel__uuid_prefetch(dst, src->ents[list[k + 8]].uuid); /* the index misses cache */
        keel_uuid u = src->ents[list[k]].uuid;
        if (!keel_find(dst, u)) continue;
        char s[37];
        keel_uuid_format(u, s);
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "entity %s already exists in world '%s'", s, dst->name);
    }
    return KEEL_OK;
}

/* The subtree's entities, each spawned in dst under its moved parent, its entries moved after it. */
static void move_entities(keel_world *src, const uint32_t *orig, size_t n, keel_world *dst, uint32_t p,
                          uint32_t *moved)
{
    /* src index -> its copy in dst, for the entities moved so far (pre-order: parents first) */
    uint32_t *to = keel__xcalloc(src->ent_count, sizeof *to);
    for (size_t k = 0; k < n; k++) {
        if (k + 8 < n) keel__uuid_prefetch(dst, src->ents[orig[k + 8]].uuid);
        const keel__ent *oe = &src->ents[orig[k]];
        uint32_t mp = k == 0 ? p : to[oe->parent];
        moved[k] = to[orig[k]] = keel__entity_place(dst, keel__ent_name(src, oe), mp, oe->uuid); /* all checked before */
        keel__ent_set_enabled(dst, moved[k], src->ents[orig[k]].enabled);
        for (uint32_t m = 0; m < src->ents[orig[k]].member_count; m++)
            keel__entry_move(dst, moved[k], src, &keel__members(src, &src->ents[orig[k]])[m]);
        keel__marks_move(dst, moved[k], src, orig[k]);
    }
    free(to);
}

keel_status keel_transfer(keel_world *src, keel_entity e, keel_world *dst, keel_entity parent, keel_entity *out,
                          keel_diags *d)
{
    if (out) *out = KEEL_NO_ENTITY;
    uint32_t i, p;
    keel_status st = transfer_check(src, e, dst, parent, &i, &p, d);
    if (st) return st;
    uint32_t *orig = NULL;
    size_t n = 0, cap = 0;
    keel__subtree_collect(src, i, &orig, &n, &cap);
    if ((st = clash_check(src, orig, n, dst, d))) {
        free(orig);
        return st;
    }
    uint32_t *moved = keel__xrealloc(NULL, n * sizeof *moved);
    keel_world_reserve(dst, (size_t)dst->ent_count + n); /* one growth of dst's tables, not many */
    move_entities(src, orig, n, dst, p, moved);
    /* out of src deepest first, so no child is ever set down at the top level; no hook runs */
    for (size_t k = n; k-- > 0;) {
        if (k >= 8) keel__uuid_prefetch(src, src->ents[orig[k - 8]].uuid);
        keel__entity_forget(src, orig[k]);
    }
    keel_entity handle = keel__handle(dst, moved[0]);
    /* then on_transfer, in pre-order and membership order, each its own transaction in dst */
    for (size_t k = 0; k < n; k++) {
        keel__ent *en = &dst->ents[moved[k]];
        for (uint32_t m = 0; en->alive && m < en->member_count; m++) {
            keel__entry me = keel__members(dst, en)[m];
            if (me.kind)
                keel__call_hook_from(dst, moved[k], me.kind, keel__entry_slot(dst, &me), KEEL_PHASE_ON_TRANSFER, 0,
                                     src);
            en = &dst->ents[moved[k]]; /* a hook may have grown the table */
        }
    }
    free(orig);
    free(moved);
    if (out) *out = handle;
    return KEEL_OK;
}
