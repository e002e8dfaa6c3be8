/* prefab.c — keel_instantiate: a template world's entities copied into another world, with fresh UUIDs. */
#include "model/world.h"
#include "model/hierarchy.h"
#include "base/vec.h"
#include "bind.h" /* keel__paste */

#include <stdlib.h>

/* Everything that could refuse before the staging copy is made. */
static keel_status instantiate_check(keel_world *dst, const keel_world *tmpl, const keel_instantiate_opts *o,
                                     uint32_t *p, keel_diags *d)
{
    if (!dst || !tmpl) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel_instantiate: NULL world");
    keel_status st = KEEL_OK;
    *p = 0;
    if (o->parent && (st = keel__parent_index(dst, o->parent, p, d))) return st;
    if (o->name && (st = keel__name_check(o->name, "an entity", d))) return st;
    size_t height = 0;
    for (uint32_t c = keel__first_child(tmpl, 0); c != KEEL__NONE; c = tmpl->ents[c].next) {
        size_t h = keel__height_of(tmpl, c);
        if (h > height) height = h;
    }
    if (keel__depth_of(dst, *p) + height > KEEL__MAX_DEPTH)
        return KEEL_ERROR(d, KEEL_LIMIT_EXCEEDED, "", "hierarchy depth limit (%d) exceeded", KEEL__MAX_DEPTH);
    return KEEL_OK;
}

/* The copies as they will be published, made and checked in a private world: a refusal here
 * leaves dst untouched. The root's components stay behind (moved entries only). */
static keel_status stage(keel_world *s, const keel_instantiate_opts *o, uint32_t **tops, size_t *n, keel_diags *d)
{
    size_t cap = 0;
    *n = 0;
    for (uint32_t c = keel__first_child(s, 0); c != KEEL__NONE; c = s->ents[c].next) {
        KEEL__VEC_RESERVE(*tops, *n, cap, 1, 4);
        (*tops)[(*n)++] = c;
    }
    keel_status st = KEEL_OK;
    for (size_t k = 0; st == KEEL_OK && o->name && k < *n; k++)
        st = keel_rename(s, keel__handle(s, (*tops)[k]), o->name, NULL, d);
    if (st == KEEL_OK && o->before_awake) {
        keel_entity *h = keel__xrealloc(NULL, (*n ? *n : 1) * sizeof *h);
        for (size_t k = 0; k < *n; k++) h[k] = keel__handle(s, (*tops)[k]);
        st = o->before_awake(s, h, *n, o->user, d);
        free(h);
        /* the callback may have added or removed top-level entities: take the list again */
        *n = 0;
        for (uint32_t c = keel__first_child(s, 0); st == KEEL_OK && c != KEEL__NONE; c = s->ents[c].next) {
            KEEL__VEC_RESERVE(*tops, *n, cap, 1, 4);
            (*tops)[(*n)++] = c;
        }
    }
    for (uint32_t i = 1; st == KEEL_OK && i < s->ent_count; i++)
        if (s->ents[i].alive) st = keel_check_rules(s, keel__handle(s, i), "", d);
    return st;
}

/* Entity fields of dst's entity i naming an entity of the staged copy name its copy instead;
 * with `outside_cleared` (a paste), the ones naming an entity dst lacks are cleared. */
static void remap(keel_world *dst, uint32_t i, const keel_uuid *from, const uint32_t *to, size_t n,
                  bool outside_cleared)
{
    keel__ent *en = &dst->ents[i];
    for (uint32_t m = 0; m < en->member_count; m++) {
        keel__entry *me = &keel__members(dst, en)[m];
        if (!me->kind) continue;
        const keel_kind_desc *kd = keel_kind_describe(me->kind);
        void *rec = keel__store_rec(&dst->stores[me->kind], me->row);
        for (size_t f = 0; f < kd->field_count; f++) {
            if (kd->fields[f].type != KEEL_T_ENTITY) continue;
            keel_uuid *u = (keel_uuid *)((unsigned char *)rec + keel_kind_field_offset(me->kind, (int)f));
            size_t k = 0;
            while (k < n && !keel_uuid_equal(*u, from[k])) k++;
            if (k < n) *u = dst->ents[to[k]].uuid;
            else if (outside_cleared && !keel_uuid_is_nil(*u) && !keel_find(dst, *u)) *u = (keel_uuid){ 0 };
        }
    }
}

/* The staged entities into dst under p, pre-order, each with a fresh UUID; their entries move. */
static void publish(keel_world *dst, uint32_t p, keel_world *s, const uint32_t *tops, size_t ntop, uint32_t **made,
                    size_t *n, bool outside_cleared)
{
    uint32_t *orig = NULL;
    size_t cap = 0;
    *n = 0;
    for (size_t t = 0; t < ntop; t++) keel__subtree_collect(s, tops[t], &orig, n, &cap);
    keel_world_reserve(dst, (size_t)dst->ent_count + *n);
    *made = keel__xrealloc(NULL, (*n ? *n : 1) * sizeof **made);
    keel_uuid *from = keel__xrealloc(NULL, (*n ? *n : 1) * sizeof *from);
    uint32_t *to = keel__xcalloc(s->ent_count, sizeof *to); /* staged index -> its copy */
    for (size_t k = 0; k < *n; k++) {
        keel__ent *se = &s->ents[orig[k]];
        uint32_t mp = se->parent == 0 ? p : to[se->parent];
        keel_uuid u;
        do u = keel__new_uuid(dst);
        while (keel_find(dst, u));
        from[k] = se->uuid;
        (*made)[k] = to[orig[k]] = keel__entity_place(dst, keel__ent_name(s, se), mp, u);
        keel__ent_set_enabled(dst, (*made)[k], se->enabled);
        for (uint32_t m = 0; m < s->ents[orig[k]].member_count; m++)
            keel__entry_move(dst, (*made)[k], s, &keel__members(s, &s->ents[orig[k]])[m]);
    }
    for (size_t k = 0; k < *n; k++) remap(dst, (*made)[k], from, *made, *n, outside_cleared);
    free(from);
    free(to);
    free(orig);
}

static keel_status instantiate(keel_world *dst, const keel_world *tmpl, const keel_instantiate_opts *opts,
                               keel_entity *out, size_t cap, size_t *count, bool outside_cleared, keel_cmd *inverse,
                               keel_diags *d)
{
    keel_instantiate_opts defaults = { 0 };
    const keel_instantiate_opts *o = opts ? opts : &defaults;
    if (count) *count = 0;
    if (dst && dst->frozen) return keel__refuse_frozen(d);
    uint32_t p;
    keel_status st = instantiate_check(dst, tmpl, o, &p, d);
    if (st) return st;
    keel_world *s = keel__world_copy(tmpl);
    s->dormant = true; /* what the callback adds wakes up in dst, with the rest */
    /* a copy is a new component: it wakes in dst even when the template's own woke (a live
     * world used as a template) */
    for (uint32_t i = 0; i < s->ent_count; i++) {
        keel__entry *ms = keel__members(s, &s->ents[i]);
        for (uint32_t m = 0; m < s->ents[i].member_count; m++) ms[m].awoken = ms[m].started = false;
    }
    uint32_t *tops = NULL, *made = NULL;
    size_t ntop = 0, n = 0;
    st = stage(s, o, &tops, &ntop, d);
    for (size_t k = 0; st == KEEL_OK && k < ntop; k++) /* the callback may have deepened a subtree */
        if (keel__depth_of(dst, p) + keel__height_of(s, tops[k]) > KEEL__MAX_DEPTH)
            st = KEEL_ERROR(d, KEEL_LIMIT_EXCEEDED, "", "hierarchy depth limit (%d) exceeded", KEEL__MAX_DEPTH);
    if (st) {
        free(tops);
        keel__world_discard(s);
        return st;
    }
    keel_cmd tmp;
    keel_cmd *inv = keel__cmd_begin(dst, inverse, &tmp);
    publish(dst, p, s, tops, ntop, &made, &n, outside_cleared);
    keel__world_discard(s);
    keel_entity *handles = keel__xrealloc(NULL, (ntop ? ntop : 1) * sizeof *handles);
    for (size_t k = 0, t = 0; k < n && t < ntop; k++)
        if (dst->ents[made[k]].parent == p) handles[t++] = keel__handle(dst, made[k]);
    if (inv) { /* a rollback destroys the copies deepest-first, none reparented to the top level */
        inv->type = KEEL_CMD_BATCH;
        inv->items = keel__xcalloc(n ? n : 1, sizeof *inv->items);
        inv->item_count = n;
        for (size_t k = 0; k < n; k++) {
            inv->items[k].type = KEEL_CMD_DESTROY;
            inv->items[k].entity = dst->ents[made[n - 1 - k]].uuid;
        }
    }
    /* the copies come to life: awake, in pre-order and membership order */
    for (size_t k = 0; !dst->rolling_back && k < n; k++) {
        keel_entity e = keel__handle(dst, made[k]);
        for (uint32_t m = 0; keel_alive(dst, e) && m < dst->ents[made[k]].member_count; m++) {
            keel__entry *me = &keel__members(dst, &dst->ents[made[k]])[m];
            if (!me->kind || me->awoken) continue;
            me->awoken = true;
            keel__call_hook(dst, made[k], me->kind, keel__entry_slot(dst, me), KEEL_PHASE_AWAKE, 0);
        }
    }
    for (size_t k = 0; out && k < ntop && k < cap; k++) out[k] = handles[k];
    if (count) *count = ntop;
    free(handles);
    free(tops);
    free(made);
    return keel__cmd_end(dst, KEEL_OK, inv, &tmp);
}

keel_status keel_instantiate(keel_world *dst, const keel_world *tmpl, const keel_instantiate_opts *opts,
                             keel_entity *out, size_t cap, size_t *count, keel_diags *d)
{
    return instantiate(dst, tmpl, opts, out, cap, count, false, NULL, d);
}

keel_status keel__paste(keel_world *dst, const keel_world *tmpl, keel_entity parent, keel_entity *out, size_t cap,
                        size_t *count, keel_cmd *inverse, keel_diags *d)
{
    keel_instantiate_opts o = { .parent = parent };
    return instantiate(dst, tmpl, &o, out, cap, count, true, inverse, d);
}
