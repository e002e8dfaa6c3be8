/* keep.c — play mode's keep (editing.md): what keel__world_keep marks while playing is read
 * out of the play world just before keel_world_stop puts the remembered one back, then written
 * into that world as commands, one entry at a time (a refused entry leaves the others), whose
 * inverses make one BATCH: one undo takes all of it back. Only authored fields travel (runtime
 * and transient ones are play's own, readonly ones the kind's). */
#include "bind.h"
#include "model/world.h"
#include "model/command.h"
#include "model/value.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SKIPPED (KEEL_FIELD_RUNTIME | KEEL_FIELD_TRANSIENT | KEEL_FIELD_READONLY)

/* ---------------------------------------------------------------- marking */

static void kept_free(keel__kept *k) { free(k->kind); }

void keel__kept_free_all(keel_world *w)
{
    for (size_t i = 0; i < w->kept_count; i++) kept_free(&w->kept[i]);
    free(w->kept);
    w->kept = NULL;
    w->kept_count = w->kept_cap = 0;
}

keel_status keel__world_keep(keel_world *w, keel_entity e, const char *kind, uint32_t slot, bool on, keel_diags *d)
{
    if (!w) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keep: NULL world");
    if (!w->played) return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "keep works only while the world is playing");
    if (!keel_alive(w, e)) return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "keep: the entity is not alive");
    bool root = e == keel_world_root(w);
    if (root && !kind)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keep: the scene root is kept component by component");
    if (kind) {
        keel_kind_id k = keel_kind_find(kind);
        if (!k) return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "keep: kind %s not found", kind);
        keel_comp c;
        if (keel_get_comp(w, e, k, slot, &c)) slot = c.slot;
        else if (slot == KEEL_SLOT_AUTO) slot = 0; /* one kept away: removed at stop when it is there */
    } else {
        slot = 0;
    }
    keel_uuid u = root ? (keel_uuid){ 0 } : keel_entity_uuid(w, e);
    for (size_t i = 0; i < w->kept_count; i++) {
        keel__kept *k = &w->kept[i];
        if (!keel_uuid_equal(k->entity, u) || (k->kind == NULL) != (kind == NULL) || k->slot != slot) continue;
        if (kind && strcmp(k->kind, kind) != 0) continue;
        if (!on) { /* order is kept: entities spawned under kept ones come after them */
            kept_free(k);
            memmove(k, k + 1, (w->kept_count - i - 1) * sizeof *k);
            w->kept_count--;
        }
        return KEEL_OK;
    }
    if (!on) return KEEL_OK;
    if (w->kept_count == w->kept_cap)
        w->kept = keel__xrealloc(w->kept, (w->kept_cap = w->kept_cap ? w->kept_cap * 2 : 8) * sizeof *w->kept);
    w->kept[w->kept_count++] = (keel__kept){ u, kind ? keel__strdup(kind) : NULL, slot };
    return KEEL_OK;
}

/* ---------------------------------------------------------------- reading the play world */

typedef struct kept_comp {
    char *kind;
    uint32_t slot;
    int version;
    bool enabled;
    keel_node *body;   /* scene form: what an ADD writes */
    keel_value *vals;  /* per field (strings owned); type 0 for fields that do not travel */
    size_t nvals;
} kept_comp;

struct keel__kept_state {
    keel__kept what;
    size_t order;      /* its place among the kept: ties in by_order keep it */
    bool alive;        /* the entity (or the component) is in the play world */
    size_t depth;
    char *name;
    bool enabled;
    keel_uuid parent;  /* nil: top level */
    kept_comp *comps;  /* an entity's loaded components; a component item's one */
    size_t ncomps;
    keel_node *unknowns; /* an entity's unknown components (entity document form), for a spawn */
};

static void read_comp(const keel_world *w, keel_comp c, kept_comp *out)
{
    const keel_kind_desc *kd = keel_kind_describe(c.kind);
    memset(out, 0, sizeof *out);
    out->kind = keel__strdup(kd->key);
    out->slot = c.slot;
    out->version = kd->version;
    out->enabled = keel_comp_enabled(w, c);
    out->body = keel_body_encode(w, c, false);
    out->nvals = kd->field_count;
    out->vals = keel__xcalloc(kd->field_count ? kd->field_count : 1, sizeof *out->vals);
    for (size_t f = 0; f < kd->field_count; f++) {
        if (kd->fields[f].flags & SKIPPED) continue;
        keel_value v;
        if (keel_get(w, c, (int)f, &v, NULL) != KEEL_OK) continue;
        if (v.type == KEEL_T_STRING && v.as.s) v.as.s = keel__strdup(v.as.s);
        out->vals[f] = v;
    }
}

static void comp_free(kept_comp *c)
{
    free(c->kind);
    keel_node_free(c->body);
    for (size_t f = 0; f < c->nvals; f++)
        if (c->vals[f].type == KEEL_T_STRING) free((char *)c->vals[f].as.s);
    free(c->vals);
}

static size_t depth_of(const keel_world *w, keel_entity e)
{
    size_t n = 0;
    for (keel_entity p = keel_entity_parent(w, e); p; p = keel_entity_parent(w, p)) n++;
    return n;
}

static void read_entity(const keel_world *w, keel_entity e, keel__kept_state *s)
{
    s->name = keel__strdup(keel_entity_name(w, e));
    s->enabled = keel_entity_enabled(w, e);
    keel_entity p = keel_entity_parent(w, e);
    if (p && p != keel_world_root(w)) s->parent = keel_entity_uuid(w, p);
    s->unknowns = keel_node_new_seq();
    keel_member m;
    for (size_t i = 0; keel_member_at(w, e, i, &m); i++) {
        if (!m.loaded) {
            /* the entity document has the unknown entry's preserved body; take it from there */
            keel_node *doc = keel__entity_tree(w, (uint32_t)e);
            const keel_node *cs = keel_node_get(doc, "components");
            if (cs && i < cs->count) keel_node_push(s->unknowns, keel_node_copy(&cs->items[i]));
            keel_node_free(doc);
            continue;
        }
        keel_comp c;
        if (!keel_get_comp(w, e, m.kind, m.slot, &c)) continue;
        s->comps = keel__xrealloc(s->comps, (s->ncomps + 1) * sizeof *s->comps);
        read_comp(w, c, &s->comps[s->ncomps++]);
    }
}

static int by_order(const void *a, const void *b)
{
    const keel__kept_state *x = a, *y = b;
    /* destroys last (a kept child spawned under a destroyed parent is already placed); parents
     * before children; an entity before its components; else the order kept */
    size_t kx = x->alive || x->what.kind ? x->depth * 2 + (x->what.kind != NULL) : SIZE_MAX;
    size_t ky = y->alive || y->what.kind ? y->depth * 2 + (y->what.kind != NULL) : SIZE_MAX;
    if (kx != ky) return kx < ky ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

keel__kept_state *keel__keep_capture(keel_world *w, size_t *n)
{
    *n = w->kept_count;
    if (!*n) {
        keel__kept_free_all(w);
        return NULL;
    }
    keel__kept_state *out = keel__xcalloc(*n, sizeof *out);
    for (size_t i = 0; i < *n; i++) {
        keel__kept_state *s = &out[i];
        s->what = w->kept[i]; /* the strings move */
        s->order = i;
        keel_entity e = keel_uuid_is_nil(s->what.entity) ? keel_world_root(w) : keel_find(w, s->what.entity);
        if (!keel_alive(w, e)) continue;
        s->depth = depth_of(w, e);
        if (!s->what.kind) {
            s->alive = true;
            read_entity(w, e, s);
            continue;
        }
        keel_comp c;
        keel_kind_id k = keel_kind_find(s->what.kind);
        if (k && keel_get_comp(w, e, k, s->what.slot, &c) && c.slot == s->what.slot) {
            s->alive = true;
            s->comps = keel__xcalloc(1, sizeof *s->comps);
            s->ncomps = 1;
            read_comp(w, c, &s->comps[0]);
        }
    }
    free(w->kept);
    w->kept = NULL;
    w->kept_count = w->kept_cap = 0;
    qsort(out, *n, sizeof *out, by_order);
    return out;
}

/* ---------------------------------------------------------------- writing the restored world */

typedef struct cmds {
    keel_cmd *items;
    size_t count, cap;
} cmds;

static keel_cmd *push(cmds *v, keel_cmd_type type, keel_uuid entity)
{
    if (v->count == v->cap) v->items = keel__xrealloc(v->items, (v->cap = v->cap ? v->cap * 2 : 8) * sizeof *v->items);
    keel_cmd *c = &v->items[v->count++];
    memset(c, 0, sizeof *c);
    c->type = type;
    c->entity = entity;
    c->index = SIZE_MAX;
    return c;
}

/* Commands that bring component `kc` of the entity `u` (handle e in w, or none yet) to the kept state. */
static void comp_cmds(keel_world *w, keel_entity e, keel_uuid u, const kept_comp *kc, cmds *out)
{
    keel_kind_id k = keel_kind_find(kc->kind);
    const keel_kind_desc *kd = k ? keel_kind_describe(k) : NULL;
    keel_comp c;
    if (kd && e && keel_get_comp(w, e, k, kc->slot, &c) && c.slot == kc->slot) {
        for (size_t f = 0; f < kc->nvals && f < kd->field_count; f++) {
            if (!kc->vals[f].type || (kd->fields[f].flags & SKIPPED)) continue;
            keel_value now;
            if (keel_get(w, c, (int)f, &now, NULL) == KEEL_OK && keel__value_equal(&now, &kc->vals[f])) continue;
            keel_cmd *s = push(out, KEEL_CMD_SET, u);
            s->kind_key = keel__strdup(kc->kind);
            s->slot = kc->slot;
            s->field = keel__strdup(kd->fields[f].key);
            s->value = kc->vals[f];
            if (s->value.type == KEEL_T_STRING && s->value.as.s) s->value.as.s = keel__strdup(s->value.as.s);
        }
        if (keel_comp_enabled(w, c) == kc->enabled) return;
    } else {
        keel_cmd *a = push(out, KEEL_CMD_ADD, u);
        a->kind_key = keel__strdup(kc->kind);
        a->slot = kc->slot;
        a->version = kc->version;
        a->tree = kc->body ? keel_node_copy(kc->body) : NULL;
        if (kc->enabled) return;
    }
    keel_cmd *en = push(out, KEEL_CMD_ENABLE_COMPONENT, u);
    en->kind_key = keel__strdup(kc->kind);
    en->slot = kc->slot;
    en->enabled = kc->enabled;
}

static void remove_cmd(keel_uuid u, const char *kind, uint32_t slot, cmds *out)
{
    keel_cmd *r = push(out, KEEL_CMD_REMOVE, u);
    r->kind_key = keel__strdup(kind);
    r->slot = slot;
}

static bool captured(const keel__kept_state *s, const char *kind, uint32_t slot)
{
    for (size_t i = 0; i < s->ncomps; i++)
        if (s->comps[i].slot == slot && strcmp(s->comps[i].kind, kind) == 0) return true;
    return false;
}

/* The commands for one kept entry; false (with the reason in d) when it cannot apply at all. */
static bool entry_cmds(keel_world *w, const keel__kept_state *s, cmds *out, keel_diags *d)
{
    keel_uuid u = s->what.entity;
    keel_entity e = keel_uuid_is_nil(u) ? keel_world_root(w) : keel_find(w, u);
    if (e && !keel_alive(w, e)) e = KEEL_NO_ENTITY;
    if (s->what.kind) {
        if (!e) {
            KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "its entity is not in the world as it was before play (keep the entity)");
            return false;
        }
        if (s->alive) comp_cmds(w, e, u, &s->comps[0], out);
        else {
            keel_kind_id k = keel_kind_find(s->what.kind);
            keel_comp c;
            if (k && keel_get_comp(w, e, k, s->what.slot, &c) && c.slot == s->what.slot)
                remove_cmd(u, s->what.kind, s->what.slot, out);
        }
        return true;
    }
    if (!s->alive) {
        if (e) push(out, KEEL_CMD_DESTROY, u);
        return true;
    }
    keel_entity pe = keel_uuid_is_nil(s->parent) ? KEEL_NO_ENTITY : keel_find(w, s->parent);
    bool parent_here = keel_uuid_is_nil(s->parent) || keel_alive(w, pe);
    if (!e) { /* spawned while playing: spawned again, its components added under the kind rules */
        keel_cmd *sp = push(out, KEEL_CMD_SPAWN, u);
        if (parent_here) sp->parent = s->parent;
        sp->tree = keel_node_new_map();
        keel_node_put(sp->tree, "name", keel_node_new_scalar(s->name, KEEL_STYLE_DOUBLE));
        if (!s->enabled) keel_node_put(sp->tree, "enabled", keel_node_new_scalar("false", KEEL_STYLE_ANY));
        keel_node_put(sp->tree, "components", keel_node_copy(s->unknowns));
        for (size_t i = 0; i < s->ncomps; i++) comp_cmds(w, KEEL_NO_ENTITY, u, &s->comps[i], out);
        return true;
    }
    if (strcmp(keel_entity_name(w, e), s->name) != 0) push(out, KEEL_CMD_RENAME, u)->name = keel__strdup(s->name);
    keel_entity now = keel_entity_parent(w, e);
    if (now == keel_world_root(w)) now = KEEL_NO_ENTITY;
    if (parent_here && now != pe) push(out, KEEL_CMD_REPARENT, u)->parent = s->parent;
    if (keel_entity_enabled(w, e) != s->enabled) push(out, KEEL_CMD_ENABLE, u)->enabled = s->enabled;
    /* removes first: a kind the kept stack rejects goes before the one that replaces it */
    keel_member m;
    for (size_t i = 0; keel_member_at(w, e, i, &m); i++)
        if (m.loaded && !captured(s, m.key, m.slot)) remove_cmd(u, m.key, m.slot, out);
    for (size_t i = 0; i < s->ncomps; i++) comp_cmds(w, e, u, &s->comps[i], out);
    return true;
}

static void refuse(keel_diags *refused, keel_severity sev, const keel__kept_state *s, const keel_diags *why)
{
    char u[37], path[300];
    keel_uuid_format(s->what.entity, u);
    if (s->what.kind) snprintf(path, sizeof path, "%s.%s[%u]", u, s->what.kind, s->what.slot);
    else snprintf(path, sizeof path, "%s", u);
    const char *msg = why->count ? why->items[0].message : "refused";
    keel_diag_add(refused, sev, KEEL_INVALID_OPERATION, path, NULL, 0,
                  0, "kept play state refused in the world as it was before play: %s", msg);
}

void keel__keep_apply(keel_world *w, keel__kept_state *ks, size_t n, keel_cmd *inverse, keel_diags *refused,
                      keel_severity sev)
{
    cmds invs = { 0 };
    for (size_t i = 0; i < n; i++) {
        keel__kept_state *s = &ks[i];
        cmds batch = { 0 };
        keel_diags why;
        keel_diags_init(&why);
        keel_status st = entry_cmds(w, s, &batch, &why) ? KEEL_OK : KEEL_INVALID_OPERATION;
        if (st == KEEL_OK && batch.count) {
            keel_cmd cmd = { .type = KEEL_CMD_BATCH, .items = batch.items, .item_count = batch.count };
            keel_cmd inv = { 0 };
            st = keel_cmd_apply(w, &cmd, &inv, &why); /* all of this entry or none of it */
            if (st == KEEL_OK) *push(&invs, KEEL_CMD_NONE, (keel_uuid){ 0 }) = inv;
        }
        if (st != KEEL_OK) refuse(refused, sev, s, &why);
        keel_diags_free(&why);
        for (size_t c = 0; c < batch.count; c++) keel_cmd_free(&batch.items[c]);
        free(batch.items);
    }
    /* the inverses undo the entries last first */
    for (size_t i = 0; i < invs.count / 2; i++) {
        keel_cmd t = invs.items[i];
        invs.items[i] = invs.items[invs.count - 1 - i];
        invs.items[invs.count - 1 - i] = t;
    }
    if (inverse && invs.count) {
        memset(inverse, 0, sizeof *inverse);
        inverse->type = KEEL_CMD_BATCH;
        inverse->items = invs.items;
        inverse->item_count = invs.count;
    } else {
        for (size_t i = 0; i < invs.count; i++) keel_cmd_free(&invs.items[i]);
        free(invs.items);
    }
}

void keel__keep_states_free(keel__kept_state *ks, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        keel__kept_state *s = &ks[i];
        kept_free(&s->what);
        free(s->name);
        for (size_t c = 0; c < s->ncomps; c++) comp_free(&s->comps[c]);
        free(s->comps);
        keel_node_free(s->unknowns);
    }
    free(ks);
}
