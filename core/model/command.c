/* command.c — inverse commands: the entity document (a DESTROY's inverse), copying, freeing and applying them. */
#include "model/world.h"
#include "model/body.h"
#include "model/command.h"
#include "model/field.h"
#include "model/hierarchy.h"
#include "model/txn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- copy and free */

void keel__cmd_copy(keel_cmd *dst, const keel_cmd *src)
{
    *dst = *src;
    dst->kind_key = src->kind_key ? keel__strdup(src->kind_key) : NULL;
    dst->field = src->field ? keel__strdup(src->field) : NULL;
    dst->name = src->name ? keel__strdup(src->name) : NULL;
    if (src->value.type == KEEL_T_STRING && src->value.as.s) dst->value.as.s = keel__strdup(src->value.as.s);
    dst->tree = src->tree ? keel_node_copy(src->tree) : NULL;
    dst->grid = NULL;
    if (src->grid) {
        dst->grid = keel__xcalloc(1, sizeof *dst->grid);
        *dst->grid = *src->grid;
    }
    dst->items = NULL;
    if (src->item_count) {
        dst->items = keel__xcalloc(src->item_count, sizeof *dst->items);
        for (size_t i = 0; i < src->item_count; i++) keel__cmd_copy(&dst->items[i], &src->items[i]);
    }
}

void keel_cmd_free(keel_cmd *cmd)
{
    if (!cmd) return;
    free(cmd->kind_key);
    free(cmd->field);
    free(cmd->name);
    if (cmd->value.type == KEEL_T_STRING) free((char *)cmd->value.as.s);
    keel_node_free(cmd->tree);
    free(cmd->grid);
    for (size_t i = 0; i < cmd->item_count; i++) keel_cmd_free(&cmd->items[i]);
    free(cmd->items);
    memset(cmd, 0, sizeof *cmd);
}

/* ---------------------------------------------------------------- the entity document */

static keel_node *scalar(const char *text) { return keel_node_new_scalar(text, KEEL_STYLE_ANY); }

static keel_node *uuid_node(keel_uuid u)
{
    char s[37];
    keel_uuid_format(u, s);
    return scalar(s);
}

static keel_node *int_node(long long v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", v);
    return scalar(buf);
}

keel_node *keel__entity_tree(const keel_world *w, uint32_t i)
{
    const keel__ent *en = &w->ents[i];
    keel_node *doc = keel_node_new_map();
    keel_node_put(doc, "uuid", uuid_node(en->uuid));
    keel_node_put(doc, "name", keel_node_new_scalar(keel__ent_name(w, en), KEEL_STYLE_DOUBLE));
    if (en->parent != 0 && en->parent != KEEL__NONE) keel_node_put(doc, "parent", uuid_node(w->ents[en->parent].uuid));
    if (!en->enabled) keel_node_put(doc, "enabled", scalar("false"));
    keel_node *comps = keel_node_new_seq();
    for (uint32_t a = 0; a < en->member_count; a++) {
        const keel__entry *m = &keel__members(w, en)[a];
        keel_node *c = keel_node_new_map();
        keel_node_put(c, "kind", scalar(keel__entry_key(m)));
        int version = m->kind ? keel_kind_describe(m->kind)->version : keel__entry_unk(m)->version;
        keel_node_put(c, "version", int_node(version));
        keel_node_put(c, "slot", int_node(keel__entry_slot(w, m)));
        if (!m->enabled) keel_node_put(c, "enabled", scalar("false"));
        keel_node *body = m->kind ? keel__body_encode(m->kind, keel__store_rec(&w->stores[m->kind], m->row), 0)
                                  : keel_node_copy(keel__entry_unk(m)->preserved);
        keel_node_put(c, "body", body ? body : keel_node_new_map());
        keel_node_push(comps, c);
    }
    keel_node_put(doc, "components", comps);
    return doc;
}

/* The nil UUID names the scene root (inverses of commands on its components). */
static keel_status find_uuid(const keel_world *w, keel_uuid u, keel_entity *out, const char *what, keel_diags *d)
{
    *out = keel_uuid_is_nil(u) ? keel_world_root(w) : keel_find(w, u);
    if (*out) return KEEL_OK;
    char s[37];
    keel_uuid_format(u, s);
    return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "%s %s not found", what, s);
}

static keel_status spawn_from_tree(keel_world *w, const keel_cmd *cmd, keel_cmd *inverse, keel_diags *d)
{
    keel_cmd tmp;
    if (w->frozen) return keel__refuse_frozen(d);
    keel_cmd *inv = keel__cmd_begin(w, inverse, &tmp);
    const keel_node *t = cmd->tree;
    keel_status st = KEEL_OK;
    keel_uuid u = cmd->entity;
    const keel_node *n;
    if (t->kind != KEEL_NODE_MAP) st = KEEL_ERROR(d, KEEL_PARSE_ERROR, "", "an entity document must be a map");
    if (st == KEEL_OK && keel_uuid_is_nil(u)) {
        n = keel_node_get(t, "uuid");
        if (!n || n->kind != KEEL_NODE_SCALAR || !keel_uuid_parse(n->text, &u))
            st = KEEL_ERROR(d, KEEL_PARSE_ERROR, "uuid", "an entity document needs a valid uuid");
    }
    uint32_t parent = 0;
    keel_uuid pu = cmd->parent;
    if (st == KEEL_OK && keel_uuid_is_nil(pu) && (n = keel_node_get(t, "parent")) && n->kind == KEEL_NODE_SCALAR)
        keel_uuid_parse(n->text, &pu);
    if (st == KEEL_OK && !keel_uuid_is_nil(pu)) {
        keel_entity pe;
        st = find_uuid(w, pu, &pe, "parent entity", d);
        parent = (uint32_t)pe;
    }
    keel_entity e = 0;
    if (st == KEEL_OK) {
        n = keel_node_get(t, "name");
        if (w->rolling_back) { /* only a rollback may hand an old handle back */
            w->reuse_index = cmd->slot;
            w->reuse_gen = (uint32_t)cmd->version;
        }
        st = keel__spawn_at(w, n && n->kind == KEEL_NODE_SCALAR ? n->text : (cmd->name ? cmd->name : ""), parent,
                            cmd->index, &u, &e, d);
        w->reuse_index = KEEL__NONE;
    }
    const keel_node *comps = st == KEEL_OK ? keel_node_get(t, "components") : NULL;
    for (size_t c = 0; comps && comps->kind == KEEL_NODE_SEQ && c < comps->count && st == KEEL_OK; c++) {
        const keel_node *cn = &comps->items[c], *kn = keel_node_get(cn, "kind");
        int64_t version = 1, slot = 0;
        bool enabled = true;
        if ((n = keel_node_get(cn, "version"))) keel_node_as_int(n, &version);
        if ((n = keel_node_get(cn, "slot"))) keel_node_as_int(n, &slot);
        if ((n = keel_node_get(cn, "enabled"))) keel_node_as_bool(n, &enabled);
        const keel_node *body = keel_node_get(cn, "body");
        if (!kn || kn->kind != KEEL_NODE_SCALAR) {
            st = KEEL_ERROR(d, KEEL_PARSE_ERROR, "components", "a component needs a kind");
            break;
        }
        keel_kind_id k = keel_kind_find(kn->text);
        if (k && version <= keel_kind_describe(k)->version) {
            keel_add_opts o = KEEL_ADD_OPTS_INIT;
            o.slot = (uint32_t)slot;
            o.body = body;
            o.version = (int)version;
            o.skip_rules = true;
            keel_comp comp;
            st = keel__add_internal(w, e, k, &o, &comp, d);
            if (st == KEEL_OK && !enabled) {
                keel__entry_set_enabled(w, keel__entry_find(w, &w->ents[(uint32_t)e], k, comp.slot), false);
            }
        } else {
            st = keel_add_unknown(w, e, kn->text, (int)version, (uint32_t)slot, body, d);
            if (st == KEEL_OK && !enabled) {
                keel__ent *en = &w->ents[(uint32_t)e];
                keel__entry_set_enabled(w, &keel__members(w, en)[en->member_count - 1], false);
            }
        }
    }
    if (st == KEEL_OK && (n = keel_node_get(t, "enabled"))) {
        bool en = true;
        keel_node_as_bool(n, &en);
        keel__ent_set_enabled(w, (uint32_t)e, en);
    }
    if (st != KEEL_OK && e) {
        bool rb = w->rolling_back; /* leave nothing behind, run nothing */
        w->rolling_back = true;
        keel_destroy(w, e, NULL, NULL);
        w->rolling_back = rb;
    }
    if (st == KEEL_OK && inv) {
        inv->type = KEEL_CMD_DESTROY;
        inv->entity = u;
    }
    return keel__cmd_end(w, st, inv, &tmp);
}

/* ---------------------------------------------------------------- apply */

static keel_status comp_by_key(keel_world *w, const keel_cmd *cmd, keel_comp *out, keel_diags *d)
{
    keel_entity e;
    keel_status st = find_uuid(w, cmd->entity, &e, "entity", d);
    if (st) return st;
    keel_kind_id k = cmd->kind_key ? keel_kind_find(cmd->kind_key) : KEEL_NO_KIND;
    if (!k) {
        keel_member m;
        for (size_t i = 0; keel_member_at(w, e, i, &m); i++)
            if (cmd->kind_key && strcmp(m.key, cmd->kind_key) == 0)
                return KEEL_ERROR(d, KEEL_UNSUPPORTED, "", "%s is not loaded: its fields cannot be edited",
                                  cmd->kind_key);
        return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "kind %s not found", cmd->kind_key ? cmd->kind_key : "(none)");
    }
    *out = (keel_comp){ e, k, cmd->slot };
    return KEEL_OK;
}

static keel_status apply_batch(keel_world *w, const keel_cmd *cmd, keel_cmd *inverse, bool internal, keel_diags *d)
{
    size_t n = cmd->item_count;
    keel_cmd *invs = keel__xcalloc(n, sizeof *invs);
    keel_status st = KEEL_OK;
    size_t done = 0;
    for (; done < n; done++) {
        st = keel__cmd_apply(w, &cmd->items[done], &invs[done], internal, d);
        if (st) break;
    }
    if (st) {
        /* all or nothing: undo what went through */
        while (done-- > 0) {
            keel__cmd_apply(w, &invs[done], NULL, true, NULL);
            keel_cmd_free(&invs[done]);
        }
        free(invs);
        return st;
    }
    if (inverse) {
        inverse->type = KEEL_CMD_BATCH;
        inverse->item_count = n;
        inverse->items = keel__xcalloc(n, sizeof *inverse->items);
        for (size_t i = 0; i < n; i++) inverse->items[i] = invs[n - 1 - i];
    } else {
        for (size_t i = 0; i < n; i++) keel_cmd_free(&invs[i]);
    }
    free(invs);
    return KEEL_OK;
}

static keel_status apply_reparent(keel_world *w, const keel_cmd *cmd, keel_cmd *inverse, keel_diags *d)
{
    keel_entity e, p = KEEL_NO_ENTITY;
    keel_status st = find_uuid(w, cmd->entity, &e, "entity", d);
    if (st == KEEL_OK && !keel_uuid_is_nil(cmd->parent)) st = find_uuid(w, cmd->parent, &p, "parent entity", d);
    return st ? st : keel__reparent_at(w, e, p, cmd->index, inverse, d);
}

/* An ADD's `index` puts the new entry back at its old place in the membership list. */
static void move_last_member(keel_world *w, keel_entity e, size_t index)
{
    keel__ent *en = keel__ent_get(w, e);
    if (!en || index >= (size_t)en->member_count - 1) return;
    keel__entry *ms = keel__members(w, en), last = ms[en->member_count - 1];
    memmove(ms + index + 1, ms + index, (en->member_count - 1 - index) * sizeof last);
    ms[index] = last;
    keel__touch(w);
}

keel_status keel__cmd_apply(keel_world *w, const keel_cmd *cmd, keel_cmd *inverse, bool internal, keel_diags *d)
{
    if (inverse) memset(inverse, 0, sizeof *inverse);
    keel_entity e = 0;
    keel_comp c;
    keel_status st;
    switch (cmd->type) {
    case KEEL_CMD_NONE:
        return KEEL_OK;
    case KEEL_CMD_SPAWN:
        if (!cmd->tree) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "a spawn needs an entity tree");
        return spawn_from_tree(w, cmd, inverse, d);
    case KEEL_CMD_DESTROY:
        if ((st = find_uuid(w, cmd->entity, &e, "entity", d))) return st;
        return keel_destroy(w, e, inverse, d);
    case KEEL_CMD_ADD: {
        if ((st = find_uuid(w, cmd->entity, &e, "entity", d))) return st;
        if (!cmd->kind_key) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "an add needs a kind key");
        keel_kind_id k = keel_kind_find(cmd->kind_key);
        if (k && cmd->version <= keel_kind_describe(k)->version) {
            keel_add_opts o = KEEL_ADD_OPTS_INIT;
            o.slot = cmd->slot;
            o.body = cmd->tree;
            o.version = cmd->version;
            st = keel_add(w, e, k, &o, NULL, inverse, d);
        } else {
            keel_member m;
            size_t before = keel_member_count(w, e);
            st = keel_add_unknown(w, e, cmd->kind_key, cmd->version, cmd->slot, cmd->tree, d);
            if (st == KEEL_OK && inverse && keel_member_at(w, e, before, &m)) {
                inverse->type = KEEL_CMD_REMOVE;
                inverse->entity = cmd->entity;
                inverse->kind_key = keel__strdup(cmd->kind_key);
                inverse->slot = m.slot;
            }
        }
        if (st == KEEL_OK) move_last_member(w, e, cmd->index);
        return st;
    }
    case KEEL_CMD_REMOVE:
        if ((st = find_uuid(w, cmd->entity, &e, "entity", d))) return st;
        return keel_remove(w, e, cmd->kind_key, cmd->slot, inverse, d);
    case KEEL_CMD_SET: {
        if ((st = comp_by_key(w, cmd, &c, d))) return st;
        int f = cmd->field ? keel_kind_field(c.kind, cmd->field) : -1;
        if (f < 0)
            return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "%s has no field %s", cmd->kind_key,
                              cmd->field ? cmd->field : "(none)");
        return keel__field_set(w, c, f, &cmd->value, internal, inverse, d);
    }
    case KEEL_CMD_REPARENT:
        return apply_reparent(w, cmd, inverse, d);
    case KEEL_CMD_RENAME:
        if ((st = find_uuid(w, cmd->entity, &e, "entity", d))) return st;
        return keel_rename(w, e, cmd->name, inverse, d); /* NULL: refused there, as for a direct call */
    case KEEL_CMD_ENABLE:
        if ((st = find_uuid(w, cmd->entity, &e, "entity", d))) return st;
        return keel_set_enabled(w, e, cmd->enabled, inverse, d);
    case KEEL_CMD_ENABLE_COMPONENT:
        if ((st = comp_by_key(w, cmd, &c, d))) return st;
        return keel_comp_set_enabled(w, c, cmd->enabled, inverse, d);
    case KEEL_CMD_BATCH:
        if (!cmd->items && cmd->item_count)
            return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "a batch of %zu commands has no items", cmd->item_count);
        return apply_batch(w, cmd, inverse, internal, d);
    case KEEL_CMD_SETTINGS:
        return keel_world_set_settings(w, cmd->name, cmd->grid, inverse, d);
    }
    return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "unknown command type %d", (int)cmd->type);
}

keel_status keel_cmd_apply(keel_world *w, const keel_cmd *cmd, keel_cmd *inverse, keel_diags *d)
{
    return keel__cmd_apply(w, cmd, inverse, false, d);
}
