/* rescene.c — a live world brought from one scene text to another in place (editing.md,
 * "Watching the scene file"): both texts are read into template worlds (no awake), compared
 * entity by entity (UUID), component by component (kind, slot) and field by field, and the
 * differences become one BATCH command applied to the live world, so the change is one
 * transaction and its inverse one undo entry. Only what differs is written: handles of
 * surviving entities stay valid, and runtime fields and unchanged fields keep their live
 * values. The scene's name and `settings:` come along as one SETTINGS command. */
#include <stdlib.h>
#include <string.h>

#include "files/conflicts.h"
#include "files/yaml_read.h"
#include "base/util.h"
#include "model/command.h"
#include "model/world.h"

typedef struct cmds {
    keel_cmd *items;
    size_t n, cap;
} cmds;

static keel_cmd *push(cmds *c, keel_cmd_type type, keel_uuid entity)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 16;
        c->items = keel__xrealloc(c->items, c->cap * sizeof *c->items);
    }
    keel_cmd *cmd = &c->items[c->n++];
    memset(cmd, 0, sizeof *cmd);
    cmd->type = type;
    cmd->entity = entity;
    cmd->index = SIZE_MAX;
    return cmd;
}

static const keel_node *comp_in(const keel_node *list, const char *kind, int64_t slot)
{
    for (size_t i = 0; list && i < list->count; i++) {
        const char *k;
        int64_t s;
        if (keel__conflicts_comp_key(&list->items[i], &k, &s) && s == slot && strcmp(k, kind) == 0)
            return &list->items[i];
    }
    return NULL;
}

static bool flag(const keel_node *map, const char *key)
{
    const keel_node *n = keel__doc_get(map, key);
    bool on = true;
    if (n && n->kind == KEEL_NODE_SCALAR) keel_node_as_bool(n, &on);
    return on;
}

/* One field of `to`'s component as a command's owned value. */
static bool field_value(const keel_world *to, keel_entity e, keel_kind_id k, uint32_t slot, int f, keel_value *out)
{
    keel_comp c;
    keel_diags d;
    keel_diags_init(&d);
    bool ok = keel_get_comp(to, e, k, slot, &c) && keel_get(to, c, f, out, &d) == KEEL_OK;
    keel_diags_free(&d);
    if (ok && out->type == KEEL_T_STRING && out->as.s) out->as.s = keel__strdup(out->as.s);
    return ok;
}

/* Components of one entity (tree form, keel__entity_tree) from `a` to `b`. */
static void diff_comps(cmds *out, keel_uuid u, const keel_world *to, keel_entity te, const keel_node *a,
                       const keel_node *b)
{
    const keel_node *la = keel__doc_get(a, "components"), *lb = keel__doc_get(b, "components");
    for (size_t i = 0; la && i < la->count; i++) {
        const char *k;
        int64_t s;
        if (!keel__conflicts_comp_key(&la->items[i], &k, &s) || comp_in(lb, k, s)) continue;
        keel_cmd *c = push(out, KEEL_CMD_REMOVE, u);
        c->kind_key = keel__strdup(k);
        c->slot = (uint32_t)s;
    }
    for (size_t i = 0; lb && i < lb->count; i++) {
        const keel_node *cb = &lb->items[i], *ca;
        const char *k;
        int64_t s, version = 1;
        if (!keel__conflicts_comp_key(cb, &k, &s)) continue;
        const keel_node *vb = keel__doc_get(cb, "version");
        if (vb) keel_node_as_int(vb, &version);
        keel_kind_id kid = keel_kind_find(k);
        ca = comp_in(la, k, s);
        const keel_node *ba = keel__doc_get(ca, "body"), *bb = keel__doc_get(cb, "body");
        bool whole = !ca || kid == KEEL_NO_KIND || !keel_node_equal(keel__doc_get(ca, "version"), vb);
        if (whole && ca && keel_node_equal(ba, bb)) whole = false;
        if (whole) {
            if (ca) {
                keel_cmd *r = push(out, KEEL_CMD_REMOVE, u);
                r->kind_key = keel__strdup(k);
                r->slot = (uint32_t)s;
            }
            keel_cmd *c = push(out, KEEL_CMD_ADD, u);
            c->kind_key = keel__strdup(k);
            c->slot = (uint32_t)s;
            c->version = (int)version;
            c->tree = keel_node_copy(bb ? bb : NULL);
            if (!c->tree) c->tree = keel_node_new_map();
        } else {
            for (size_t f = 0; bb && bb->kind == KEEL_NODE_MAP && f < bb->count; f++) {
                const char *key = keel__doc_text(&bb->items[2 * f]);
                if (!key || keel_node_equal(keel__doc_get(ba, key), &bb->items[2 * f + 1])) continue;
                int fi = keel_kind_field(kid, key);
                keel_value v;
                if (fi < 0 || !field_value(to, te, kid, (uint32_t)s, fi, &v)) continue;
                keel_cmd *c = push(out, KEEL_CMD_SET, u);
                c->kind_key = keel__strdup(k);
                c->slot = (uint32_t)s;
                c->field = keel__strdup(key);
                c->value = v;
            }
        }
        if (flag(cb, "enabled") != (ca ? flag(ca, "enabled") : true)) {
            keel_cmd *c = push(out, KEEL_CMD_ENABLE_COMPONENT, u);
            c->kind_key = keel__strdup(k);
            c->slot = (uint32_t)s;
            c->enabled = flag(cb, "enabled");
        }
    }
}

static bool value_equal(const keel_value *a, const keel_value *b)
{
    if (a->type != b->type || a->nil != b->nil) return false;
    switch (a->type) {
    case KEEL_T_BOOL: return a->as.b == b->as.b;
    case KEEL_T_INT:
    case KEEL_T_ENUM: return a->as.i == b->as.i;
    case KEEL_T_STRING: return strcmp(a->as.s ? a->as.s : "", b->as.s ? b->as.s : "") == 0;
    case KEEL_T_ASSET:
    case KEEL_T_ENTITY: return a->nil || keel_uuid_equal(a->as.u, b->as.u);
    default: return memcmp(a->as.v, b->as.v, sizeof a->as.v) == 0; /* float and vectors (zero-filled) */
    }
}

static const char *name_of(const keel_world *w, keel_entity e)
{
    const char *n = keel_entity_name(w, e);
    return n ? n : "";
}

/* The quick answer for most entities of a change: same name, flag and components, every field
 * equal, read without building either side's document (that is only done when they differ). */
static bool entity_same(const keel_world *a, keel_entity ea, const keel_world *b, keel_entity eb)
{
    size_t n = keel_member_count(a, ea);
    if (n != keel_member_count(b, eb) || keel_entity_enabled(a, ea) != keel_entity_enabled(b, eb) ||
        strcmp(name_of(a, ea), name_of(b, eb)) != 0)
        return false;
    keel_diags d;
    keel_diags_init(&d);
    bool same = true;
    for (size_t i = 0; i < n && same; i++) {
        keel_member ma, mb;
        if (!keel_member_at(a, ea, i, &ma) || !keel_member_at(b, eb, i, &mb)) return false;
        same = ma.kind == mb.kind && ma.slot == mb.slot && ma.enabled == mb.enabled && ma.loaded == mb.loaded &&
               ma.version == mb.version && strcmp(ma.key, mb.key) == 0;
        if (same && !ma.loaded) same = keel_node_equal(ma.preserved, mb.preserved);
        keel_comp ca, cb;
        if (!same || !ma.loaded) continue;
        if (!keel_get_comp(a, ea, ma.kind, ma.slot, &ca) || !keel_get_comp(b, eb, mb.kind, mb.slot, &cb)) {
            same = false;
            break;
        }
        size_t fields = keel_kind_describe(ma.kind)->field_count;
        for (size_t f = 0; f < fields && same; f++) {
            keel_value va, vb;
            memset(&va, 0, sizeof va);
            memset(&vb, 0, sizeof vb);
            same = keel_get(a, ca, (int)f, &va, &d) == KEEL_OK && keel_get(b, cb, (int)f, &vb, &d) == KEEL_OK &&
                   value_equal(&va, &vb);
        }
    }
    keel_diags_free(&d);
    return same;
}

static bool same_kids(const keel_world *a, keel_entity pa, const keel_world *b, keel_entity pb)
{
    keel_entity x = keel_entity_first_child(a, pa), y = keel_entity_first_child(b, pb);
    for (; x && y; x = keel_entity_next_sibling(a, x), y = keel_entity_next_sibling(b, y))
        if (!keel_uuid_equal(keel_entity_uuid(a, x), keel_entity_uuid(b, y))) return false;
    return !x && !y;
}

static bool grid_same(const keel_grid *a, const keel_grid *b)
{
    const double *da[] = { a->origin, a->orientation, a->minor_color, a->major_color, a->u_color, a->v_color };
    const double *db[] = { b->origin, b->orientation, b->minor_color, b->major_color, b->u_color, b->v_color };
    for (int i = 0; i < 6; i++)
        if (memcmp(da[i], db[i], (i == 0 ? 3 : 4) * sizeof(double)) != 0) return false;
    return a->enabled == b->enabled && a->base_spacing == b->base_spacing &&
           a->major_line_every == b->major_line_every && a->fade == b->fade && a->display == b->display;
}

/* Every command that takes `from` to `to`, in an order that applies: the scene's name and grid,
 * destroys, then spawns and edits in `to`'s pre-order, then children lists that differ, placed
 * child by child. */
static void diff_worlds(cmds *out, const keel_world *from, const keel_world *to)
{
    keel_uuid nil;
    memset(&nil, 0, sizeof nil);
    bool same_name = strcmp(keel_world_name(from), keel_world_name(to)) == 0;
    bool same_grid = grid_same(keel_world_grid(from), keel_world_grid(to));
    if (!same_name || !same_grid) {
        keel_cmd *c = push(out, KEEL_CMD_SETTINGS, nil);
        if (!same_name) c->name = keel__strdup(keel_world_name(to));
        if (!same_grid) {
            c->grid = keel__xcalloc(1, sizeof *c->grid);
            *c->grid = *keel_world_grid(to);
        }
    }
    size_t first_destroy = out->n;
    for (keel_entity e = keel_next(from, 0); e; e = keel_next(from, e))
        if (!keel_find(to, keel_entity_uuid(from, e))) push(out, KEEL_CMD_DESTROY, keel_entity_uuid(from, e));
    /* children before parents, so no destroy reparents an entity that goes too */
    for (size_t i = first_destroy, j = out->n; i + 1 < j; i++, j--) {
        keel_cmd t = out->items[i];
        out->items[i] = out->items[j - 1];
        out->items[j - 1] = t;
    }
    if (!entity_same(from, keel_world_root(from), to, keel_world_root(to))) {
        keel_node *ra = keel__entity_tree(from, 0), *rb = keel__entity_tree(to, 0);
        diff_comps(out, nil, to, keel_world_root(to), ra, rb);
        keel_node_free(ra);
        keel_node_free(rb);
    }
    for (keel_entity e = keel_next(to, 0); e; e = keel_next(to, e)) {
        keel_uuid u = keel_entity_uuid(to, e);
        keel_entity fe = keel_find(from, u);
        if (fe && entity_same(from, fe, to, e)) continue;
        keel_node *tb = keel__entity_tree(to, (uint32_t)e);
        if (!fe) {
            keel_cmd *c = push(out, KEEL_CMD_SPAWN, u);
            c->tree = tb;
            continue;
        }
        keel_node *ta = keel__entity_tree(from, (uint32_t)fe);
        if (strcmp(keel_entity_name(from, fe), keel_entity_name(to, e)) != 0)
            push(out, KEEL_CMD_RENAME, u)->name = keel__strdup(keel_entity_name(to, e));
        if (keel_entity_enabled(from, fe) != keel_entity_enabled(to, e))
            push(out, KEEL_CMD_ENABLE, u)->enabled = keel_entity_enabled(to, e);
        diff_comps(out, u, to, e, ta, tb);
        keel_node_free(ta);
        keel_node_free(tb);
    }
    /* parents in `to`'s pre-order: each one's own place is final before its children move */
    for (keel_entity p = 0;; p = keel_next(to, p)) {
        keel_entity tp = p ? p : keel_world_root(to);
        keel_entity fp = p ? keel_find(from, keel_entity_uuid(to, p)) : keel_world_root(from);
        bool moved = false;
        if (fp) moved = !same_kids(from, fp, to, tp);
        else /* a new parent: its children were spawned under it in order unless one already lived */
            for (keel_entity c = keel_entity_first_child(to, tp); c && !moved; c = keel_entity_next_sibling(to, c))
                moved = keel_find(from, keel_entity_uuid(to, c)) != KEEL_NO_ENTITY;
        size_t i = 0;
        for (keel_entity c = keel_entity_first_child(to, tp); moved && c; c = keel_entity_next_sibling(to, c)) {
            keel_cmd *r = push(out, KEEL_CMD_REPARENT, keel_entity_uuid(to, c));
            r->parent = p ? keel_entity_uuid(to, p) : nil;
            r->index = i++;
        }
        if (p && !keel_next(to, p)) break;
        if (!p && !keel_next(to, 0)) break;
    }
}

static keel_status read_world(const char *text, size_t len, const char *name, keel_world **out, keel_diags *d)
{
    keel_load_opts o = keel_load_opts_default();
    o.file = name;
    o.no_awake = true;
    return keel_scene_parse(text, len, &o, out, d);
}

keel_status keel__scene_rebase(keel_world *w, const char *from, size_t flen, const char *to, size_t tlen,
                               const char *name, keel_world **cache, keel_cmd *inverse, size_t *changes,
                               keel_diags *d)
{
    keel_world *a = cache ? *cache : NULL, *b = NULL;
    if (cache) *cache = NULL;
    *changes = 0;
    keel_status st = read_world(to, tlen, name, &b, d);
    if (st == KEEL_OK && !a) st = read_world(from, flen, name, &a, d);
    if (st == KEEL_OK) {
        cmds c = { 0 };
        diff_worlds(&c, a, b);
        *changes = c.n;
        keel_cmd batch;
        memset(&batch, 0, sizeof batch);
        batch.type = KEEL_CMD_BATCH;
        batch.items = c.items;
        batch.item_count = c.n;
        if (c.n) st = keel_cmd_apply(w, &batch, inverse, d);
        keel_cmd_free(&batch);
    }
    if (a) keel_world_free(a);
    if (st == KEEL_OK && cache) *cache = b; /* `to` is the next change's `from`: one read a change */
    else if (b) keel_world_free(b);
    return st;
}

keel_status keel__scene_conflicts(const char *text, size_t len, keel_node **out, keel_diags *d)
{
    keel_node *doc = NULL;
    *out = NULL;
    keel_status st = keel__yaml_parse(text, len, NULL, "merge", &doc, d);
    if (st != KEEL_OK) return st;
    const keel_node *c = keel__doc_get(doc, "conflicts");
    *out = c ? keel_node_copy(c) : keel_node_new_seq();
    keel_node_free(doc);
    return KEEL_OK;
}

#include <zlib.h>

uint32_t keel__text_hash(const char *text, size_t len)
{
    return (uint32_t)crc32_z(0L, (const unsigned char *)text, len);
}
