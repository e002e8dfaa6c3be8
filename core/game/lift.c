/* lift.c — an entity's subtree taken out of play without being destroyed (keel_lift_entity), and
 * put back exactly (keel_lift_restore) or removed for good (keel_lift_discard). While lifted, its
 * entities are not alive to lookups, queries, steps, dumps or saves: they leave the hierarchy
 * and the UUID index, and their records leave the stores for the lift; their table slots,
 * generations and membership stay, so the same handles work again after a restore. */
#include "model/world.h"
#include "model/hierarchy.h"
#include "model/record.h"
#include "base/vec.h"

#include <stdlib.h>
#include <string.h>

/* A record taken out of its store: which entry it belongs to, and its bytes and change counter. */
typedef struct lifted_rec {
    uint32_t index;     /* the entity */
    keel_kind_id kind;
    uint32_t slot;
    uint64_t counter;
    unsigned char *bytes;
} lifted_rec;

struct keel_lift {
    keel_world *w;
    struct keel_lift *next;
    uint32_t *ents;     /* the subtree, pre-order; ents[0] the lifted entity */
    size_t count;
    uint32_t parent;    /* where ents[0] goes back: its parent's index, and its place among the siblings */
    size_t position;
    lifted_rec *recs;
    size_t nrecs;
};

static keel_status refuse(const keel_world *w, const char *what, keel_diags *d)
{
    if (w->txn_depth > 0 || w->in_step)
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s refuses while a callback transaction is open", what);
    return KEEL_OK;
}

/* Moves every loaded record of entity i out of its store into l (the store drops the row). */
static void take_records(keel_world *w, keel_lift *l, uint32_t i, size_t *cap)
{
    keel__ent *en = &w->ents[i];
    for (uint32_t m = 0; m < en->member_count; m++) {
        keel__entry *me = &keel__members(w, en)[m];
        if (!me->kind) continue; /* an unknown entry keeps its body in the membership */
        keel__store *s = &w->stores[me->kind];
        KEEL__VEC_RESERVE(l->recs, l->nrecs, *cap, 1, 16);
        lifted_rec *r = &l->recs[l->nrecs++];
        *r = (lifted_rec){ i, me->kind, keel__entry_slot(w, me), keel__row_counter(s, me->row),
                           keel__xrealloc(NULL, s->record_size) };
        void *rec = keel__store_rec(s, me->row);
        memcpy(r->bytes, rec, s->record_size);
        memset(rec, 0, s->record_size); /* its strings are the lift's now: the store frees nothing */
        keel__store_remove_now(w, me->kind, me->row);
    }
}

keel_status keel_lift_entity(keel_world *w, keel_entity e, keel_lift **out, keel_diags *d)
{
    if (out) *out = NULL;
    if (!w || !out) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel_lift_entity: NULL argument");
    keel_status st = refuse(w, "lift", d);
    uint32_t i = 0;
    if (st == KEEL_OK) st = keel__ent_target(w, e, "lifted", &i, d);
    if (st) return st;
    keel__store_flush_pending(w); /* rows freed since the last step: none may move under us */
    keel_lift *l = keel__xcalloc(1, sizeof *l);
    l->w = w;
    size_t cap = 0, rcap = 0;
    keel__subtree_collect(w, i, &l->ents, &l->count, &cap);
    l->parent = w->ents[i].parent;
    l->position = keel__sibling_index(w, i);
    keel__unlink_child(w, i);
    for (size_t k = 0; k < l->count; k++) {
        uint32_t x = l->ents[k];
        take_records(w, l, x, &rcap);
        keel__entity_unindex(w, x);
        w->ents[x].alive = false; /* lifted: on l's list (keel__lifted) */
    }
    l->next = w->lifts;
    w->lifts = l;
    *out = l;
    return KEEL_OK;
}

static void unlist(keel_lift *l)
{
    for (keel_lift **p = &l->w->lifts; *p; p = &(*p)->next)
        if (*p == l) {
            *p = l->next;
            return;
        }
}

static void lift_free(keel_lift *l)
{
    for (size_t r = 0; r < l->nrecs; r++) free(l->recs[r].bytes);
    free(l->recs);
    free(l->ents);
    free(l);
}

/* Puts the subtree back: alive, indexed, records in their stores, linked where it was (at the top
 * level when its parent is gone). InvalidOperation when one of its UUIDs came alive meanwhile. */
static keel_status put_back(keel_lift *l, keel_diags *d)
{
    keel_world *w = l->w;
    for (size_t k = 0; k < l->count; k++) {
        keel_uuid u = w->ents[l->ents[k]].uuid;
        if (!keel_find(w, u)) continue;
        char s[37];
        keel_uuid_format(u, s);
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "entity %s came alive while lifted: restore refused", s);
    }
    for (size_t k = 0; k < l->count; k++) {
        uint32_t x = l->ents[k];
        w->ents[x].alive = true;
        keel__entity_reindex(w, x);
    }
    for (size_t r = 0; r < l->nrecs; r++) {
        lifted_rec *lr = &l->recs[r];
        uint32_t row = keel__store_append(w, lr->kind, keel__handle(w, lr->index), lr->slot);
        keel__store *s = &w->stores[lr->kind];
        memcpy(keel__store_rec(s, row), lr->bytes, s->record_size);
        if (lr->counter) keel__row_count(s, row, lr->counter); /* a new row counts from 0 */
        keel__entry_find(w, &w->ents[lr->index], lr->kind, lr->slot)->row = row;
        free(lr->bytes);
        lr->bytes = NULL;
    }
    uint32_t p = l->parent != KEEL__NONE && (l->parent == 0 || w->ents[l->parent].alive) ? l->parent : 0;
    keel__link_child(w, p, l->ents[0], p == l->parent ? l->position : SIZE_MAX);
    keel__touch(w);
    return KEEL_OK;
}

keel_status keel_lift_restore(keel_lift *l, keel_diags *d)
{
    if (!l) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel_lift_restore: NULL lift");
    keel_status st = refuse(l->w, "restore", d);
    if (st == KEEL_OK) st = put_back(l, d);
    if (st) return st;
    unlist(l);
    lift_free(l);
    return KEEL_OK;
}

keel_status keel_lift_discard(keel_lift *l, keel_diags *d)
{
    if (!l) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel_lift_discard: NULL lift");
    keel_world *w = l->w;
    keel_status st = refuse(w, "discard", d);
    if (st == KEEL_OK) st = put_back(l, d);
    if (st) return st;
    /* then as destroy does, deepest first, so each on_destroy runs once */
    for (size_t k = l->count; k-- > 0;) keel_destroy(w, keel__handle(w, l->ents[k]), NULL, NULL);
    unlist(l);
    lift_free(l);
    return KEEL_OK;
}

bool keel__lifted(const keel_world *w, uint32_t i)
{
    for (const keel_lift *l = w->lifts; l; l = l->next)
        for (size_t k = 0; k < l->count; k++)
            if (l->ents[k] == i) return true;
    return false;
}

bool keel__lifts_hold(const keel_world *w, keel_kind_id k)
{
    for (const keel_lift *l = w->lifts; l; l = l->next)
        for (size_t r = 0; r < l->nrecs; r++)
            if (l->recs[r].kind == k) return true;
    return false;
}

size_t keel_world_lift_count(const keel_world *w)
{
    size_t n = 0;
    for (const keel_lift *l = w ? w->lifts : NULL; l; l = l->next) n++;
    return n;
}

void keel__lifts_free(keel_world *w)
{
    while (w->lifts) {
        keel_lift *l = w->lifts;
        w->lifts = l->next;
        for (size_t r = 0; r < l->nrecs; r++) /* the records' strings are the lift's */
            if (l->recs[r].bytes) keel__record_fini(l->recs[r].kind, l->recs[r].bytes);
        for (size_t k = 0; k < l->count; k++) { /* unknown bodies too; the arrays go with the pools */
            keel__ent *en = &w->ents[l->ents[k]];
            keel__entry *ms = keel__members(w, en);
            for (uint32_t m = 0; m < en->member_count; m++)
                if (!ms[m].kind) keel__unknown_free(keel__entry_unk(&ms[m]));
            en->member_count = 0;
        }
        lift_free(l);
    }
}
