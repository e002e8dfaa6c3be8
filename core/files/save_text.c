/* save_text.c — a save game as text (design/saving.md): the slot's details and its difference from
 * the baseline as YAML in the scene file's style, and that text back to the same state, so a slot
 * dumped and cooked back is the same bytes.
 *
 *     keel_save: 1
 *     details: { title, saved_at, play_seconds, scene, fields }
 *     spawned: whole entities, as in a scene (a component the program did not know: unknown: true)
 *     destroyed: UUIDs
 *     changed: per entity (root, or its UUID): name, enabled, parent when they changed; removed:
 *              kind[slot] list; components: per kind[slot], version and enabled with the fields
 *              that differ (fields:), or a component added whole (added: true, body:)
 *     order: per parent (root, or its UUID), its children where the order is recorded
 *
 * The records are listed in the slot's own order (the root's, the spawned ones', the changed
 * ones'), bodies in the styles keel__save_canon gives them, so nothing in between is lost. */
#include "base/util.h"
#include "files/save.h"
#include "files/save_text.h"
#include "files/scene_write.h"
#include "files/slotfile.h"
#include "files/yaml_read.h"
#include "model/body.h"
#include "model/kind.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TEXT_VERSION 1

typedef keel__yaml_out writer;

/* ================================================================ writing */

static void scalar(writer *wr, const char *s, yaml_scalar_style_t st)
{
    keel__yaml_out_scalar(wr, s, strlen(s), st);
}
static void plain(writer *wr, const char *s)
{
    scalar(wr, s, YAML_PLAIN_SCALAR_STYLE);
}
static void str(writer *wr, const char *s)
{
    keel__yaml_out_scalar(wr, s, strlen(s),
                          keel__scene_plain_safe(s, strlen(s)) ? YAML_PLAIN_SCALAR_STYLE
                                                               : YAML_DOUBLE_QUOTED_SCALAR_STYLE);
}
static void integer(writer *wr, long long v)
{
    char b[32];
    snprintf(b, sizeof b, "%lld", v);
    plain(wr, b);
}
static void uuid(writer *wr, keel_uuid u)
{
    char b[37];
    keel_uuid_format(u, b);
    plain(wr, b);
}
static void who(writer *wr, keel_uuid u)
{
    if (keel_uuid_is_nil(u)) plain(wr, "root");
    else uuid(wr, u);
}

static void collection(writer *wr, bool map, bool start, bool flow)
{
    yaml_event_t e;
    if (map && start)
        yaml_mapping_start_event_initialize(&e, NULL, NULL, 1,
                                            flow ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE);
    else if (start)
        yaml_sequence_start_event_initialize(&e, NULL, NULL, 1,
                                             flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE);
    else if (map) yaml_mapping_end_event_initialize(&e);
    else yaml_sequence_end_event_initialize(&e);
    keel__yaml_out_emit(wr, &e);
}
#define MAP_START(wr, flow) collection(wr, true, true, flow)
#define MAP_END(wr) collection(wr, true, false, false)
#define SEQ_START(wr, flow) collection(wr, false, true, flow)
#define SEQ_END(wr) collection(wr, false, false, false)

/* A node in its canonical styles (a copy is made canonical first). */
static void emit_canon(writer *wr, const keel_node *n)
{
    if (n->kind == KEEL_NODE_SCALAR) {
        keel__yaml_out_scalar(wr, n->text ? n->text : "", n->len,
                              n->style == KEEL_STYLE_PLAIN ? YAML_PLAIN_SCALAR_STYLE
                                                           : YAML_DOUBLE_QUOTED_SCALAR_STYLE);
        return;
    }
    bool flow = n->style == KEEL_STYLE_FLOW;
    collection(wr, n->kind == KEEL_NODE_MAP, true, flow);
    size_t items = n->kind == KEEL_NODE_MAP ? 2 * n->count : n->count;
    for (size_t i = 0; i < items; i++) emit_canon(wr, &n->items[i]);
    collection(wr, n->kind == KEEL_NODE_MAP, false, flow);
}

/* A known body in the canonical styles the slot writer gives it; an unknown one as written. */
static void emit_body(writer *wr, const keel_node *body, bool known)
{
    if (!known) {
        keel__yaml_out_preserved(wr, body); /* as a scene keeps it */
        return;
    }
    keel_node *c = keel_node_copy(body);
    keel__save_canon(c);
    emit_canon(wr, c);
    keel_node_free(c);
}

static char *kind_slot(const char *key, uint32_t slot)
{
    return keel__strfmt("%s[%u]", key, slot);
}

static void emit_details(writer *wr, const keel_slot_info *info, keel_uuid scene)
{
    plain(wr, "details");
    MAP_START(wr, false);
    plain(wr, "title");
    str(wr, info && info->title ? info->title : "");
    plain(wr, "saved_at");
    integer(wr, (long long)(info ? info->saved_at : 0));
    plain(wr, "play_seconds");
    char num[64];
    keel_format_double(info ? info->play_seconds : 0, num, sizeof num);
    plain(wr, num);
    plain(wr, "scene");
    uuid(wr, scene);
    const keel_node *f = info ? info->fields : NULL;
    if (f && f->kind == KEEL_NODE_MAP && f->count) {
        plain(wr, "fields");
        MAP_START(wr, false);
        for (size_t i = 0; i < f->count; i++) {
            plain(wr, f->items[2 * i].text);
            const keel_node *v = &f->items[2 * i + 1];
            keel__yaml_out_scalar(wr, v->text, v->len,
                                  v->style == KEEL_STYLE_PLAIN ? YAML_PLAIN_SCALAR_STYLE
                                                               : YAML_DOUBLE_QUOTED_SCALAR_STYLE);
        }
        MAP_END(wr);
    }
    MAP_END(wr);
}

static void emit_spawned(writer *wr, const keel__save_ent *e)
{
    MAP_START(wr, false);
    plain(wr, "uuid");
    uuid(wr, e->uuid);
    plain(wr, "name");
    str(wr, e->name ? e->name : "");
    if (!keel_uuid_is_nil(e->parent)) {
        plain(wr, "parent");
        uuid(wr, e->parent);
    }
    if (!e->enabled) {
        plain(wr, "enabled");
        plain(wr, "false");
    }
    plain(wr, "components");
    SEQ_START(wr, e->ncomps == 0);
    for (uint32_t j = 0; j < e->ncomps; j++) {
        const keel__save_comp *c = &e->comps[j];
        MAP_START(wr, false);
        plain(wr, "kind");
        str(wr, c->key);
        plain(wr, "version");
        integer(wr, c->version);
        plain(wr, "slot");
        integer(wr, c->slot);
        if (!c->enabled) {
            plain(wr, "enabled");
            plain(wr, "false");
        }
        if (!c->loaded) {
            plain(wr, "unknown");
            plain(wr, "true");
        }
        plain(wr, "body");
        emit_body(wr, c->body, c->loaded);
        MAP_END(wr);
    }
    SEQ_END(wr);
    MAP_END(wr);
}

static void emit_changed(writer *wr, const keel__save_ent *e)
{
    who(wr, e->uuid);
    MAP_START(wr, false);
    if (e->flags & REC_NAME) {
        plain(wr, "name");
        str(wr, e->name ? e->name : "");
    }
    if (e->flags & REC_ENABLED) {
        plain(wr, "enabled");
        plain(wr, e->enabled ? "true" : "false");
    }
    if (e->flags & REC_PARENT) {
        plain(wr, "parent");
        if (keel_uuid_is_nil(e->parent)) plain(wr, "null");
        else uuid(wr, e->parent);
    }
    if (e->nrem) {
        plain(wr, "removed");
        SEQ_START(wr, false);
        for (uint32_t j = 0; j < e->nrem; j++) {
            char *ks = kind_slot(e->rem[j].key, e->rem[j].slot);
            str(wr, ks);
            free(ks);
        }
        SEQ_END(wr);
    }
    if (e->ncomps) {
        plain(wr, "components");
        MAP_START(wr, false);
        for (uint32_t j = 0; j < e->ncomps; j++) {
            const keel__save_comp *c = &e->comps[j];
            char *ks = kind_slot(c->key, c->slot);
            str(wr, ks);
            free(ks);
            MAP_START(wr, false);
            if (c->op == OP_ADD) {
                plain(wr, "added");
                plain(wr, "true");
            }
            plain(wr, "version");
            integer(wr, c->version);
            if (!c->enabled) {
                plain(wr, "enabled");
                plain(wr, "false");
            }
            if (c->op == OP_ADD && !c->loaded) {
                plain(wr, "unknown");
                plain(wr, "true");
            }
            plain(wr, c->op == OP_ADD ? "body" : "fields");
            emit_body(wr, c->body, c->op != OP_ADD || c->loaded);
            MAP_END(wr);
        }
        MAP_END(wr);
    }
    MAP_END(wr);
}

/* Whether the records are in the order the text lists them (root, spawned, changed); a slot of
 * another order could not come back the same. */
static const char *text_order_problem(const keel__save_state *st)
{
    int phase = 0; /* 0 root allowed, 1 spawned, 2 changed */
    for (uint32_t i = 0; i < st->nents; i++) {
        const keel__save_ent *e = &st->ents[i];
        int p = keel_uuid_is_nil(e->uuid) ? 0 : (e->flags & REC_SPAWNED) ? 1 : 2;
        if (p < phase || (p == 0 && i > 0)) return "its records are not in the order root, spawned, changed";
        phase = p == 0 ? 1 : p;
        if ((e->flags & REC_SPAWNED) && e->nrem) return "a spawned entity lists removed components";
        for (uint32_t j = 0; (e->flags & REC_SPAWNED) && j < e->ncomps; j++)
            if (e->comps[j].op != OP_ADD) return "a spawned entity lists changed components";
    }
    return NULL;
}

keel_status keel__save_text_write(const keel_slot_info *info, const keel__save_state *st, char **out, size_t *len,
                                  keel_diags *d)
{
    const char *why = text_order_problem(st);
    if (why) return KEEL_ERROR(d, KEEL_UNSUPPORTED, "", "the save cannot be written as text: %s", why);
    writer wr;
    keel__yaml_out_open(&wr);
    MAP_START(&wr, false);
    plain(&wr, "keel_save");
    integer(&wr, TEXT_VERSION);
    emit_details(&wr, info, st->scene);
    plain(&wr, "spawned");
    uint32_t nsp = 0;
    for (uint32_t i = 0; i < st->nents; i++) nsp += (st->ents[i].flags & REC_SPAWNED) != 0;
    SEQ_START(&wr, nsp == 0);
    for (uint32_t i = 0; i < st->nents; i++)
        if (st->ents[i].flags & REC_SPAWNED) emit_spawned(&wr, &st->ents[i]);
    SEQ_END(&wr);
    plain(&wr, "destroyed");
    SEQ_START(&wr, st->ndead == 0);
    for (uint32_t i = 0; i < st->ndead; i++) uuid(&wr, st->dead[i]);
    SEQ_END(&wr);
    plain(&wr, "changed");
    MAP_START(&wr, st->nents == nsp);
    for (uint32_t i = 0; i < st->nents; i++)
        if (!(st->ents[i].flags & REC_SPAWNED)) emit_changed(&wr, &st->ents[i]);
    MAP_END(&wr);
    plain(&wr, "order");
    MAP_START(&wr, st->norders == 0);
    for (uint32_t i = 0; i < st->norders; i++) {
        who(&wr, st->orders[i].parent);
        SEQ_START(&wr, false);
        for (uint32_t k = 0; k < st->orders[i].n; k++) uuid(&wr, st->orders[i].kids[k]);
        SEQ_END(&wr);
    }
    MAP_END(&wr);
    if (st->has_random) { /* the world's random generator (design/replay.md) */
        char num[32];
        plain(&wr, "random");
        MAP_START(&wr, false);
        plain(&wr, "seed");
        integer(&wr, (long long)st->seed);
        plain(&wr, "state");
        SEQ_START(&wr, true);
        for (int i = 0; i < 4; i++) {
            snprintf(num, sizeof num, "%llu", (unsigned long long)st->rs[i]);
            plain(&wr, num);
        }
        SEQ_END(&wr);
        MAP_END(&wr);
    }
    MAP_END(&wr);
    char *text = keel__yaml_out_close(&wr, "the save game", len, d);
    if (!text) return KEEL_INVALID_ARGUMENT;
    *out = text;
    return KEEL_OK;
}

/* ================================================================ reading */

typedef struct reader {
    const char *file;
    keel_diags *d;
    bool failed;
} reader;

static void bad(reader *r, const keel_node *n, const char *path, const char *fmt, const char *what)
{
    char msg[512];
    snprintf(msg, sizeof msg, fmt, what ? what : "");
    keel_diag_add(r->d, KEEL_SEV_ERROR, KEEL_PARSE_ERROR, path, r->file, n ? n->line : 0, n ? n->col : 0, "%s",
                  msg);
    r->failed = true;
}

static const keel_node *get(const keel_node *map, const char *key)
{
    return map && map->kind == KEEL_NODE_MAP ? keel_node_get(map, key) : NULL;
}

/* Only the keys listed: a misspelt key is an error, not silently dropped. */
static void only_keys(reader *r, const keel_node *map, const char *path, const char *const *keys)
{
    for (size_t i = 0; map && map->kind == KEEL_NODE_MAP && i < map->count; i++) {
        const keel_node *k = &map->items[2 * i];
        bool known = false;
        for (const char *const *p = keys; *p && !known; p++) known = k->text && strcmp(k->text, *p) == 0;
        if (!known) bad(r, k, path, "unknown key \"%s\"", k->text);
    }
}

static bool is_plain(const keel_node *n)
{
    return n && n->kind == KEEL_NODE_SCALAR && n->style == KEEL_STYLE_PLAIN;
}

static keel_uuid read_uuid(reader *r, const keel_node *n, const char *path, bool root_ok)
{
    keel_uuid u = { { 0 } };
    if (n && n->kind == KEEL_NODE_SCALAR && root_ok && strcmp(n->text, "root") == 0) return u;
    if (!n || n->kind != KEEL_NODE_SCALAR || !keel_uuid_parse(n->text, &u) || keel_uuid_is_nil(u))
        bad(r, n, path, "a UUID expected%s", root_ok ? " (or root)" : "");
    return u;
}

static char *read_string(reader *r, const keel_node *n, const char *path)
{
    if (!n || n->kind != KEEL_NODE_SCALAR || (n->style == KEEL_STYLE_PLAIN && keel_node_is_null(n))) {
        bad(r, n, path, "a string expected%s", "");
        return keel__strdup("");
    }
    return keel__strdup(n->text);
}

static bool read_bool(reader *r, const keel_node *n, const char *path, bool dflt)
{
    if (!n) return dflt;
    bool b = dflt;
    if (!is_plain(n) || !keel_node_as_bool(n, &b)) bad(r, n, path, "true or false expected%s", "");
    return b;
}

static int64_t read_int(reader *r, const keel_node *n, const char *path, int64_t lo, int64_t hi)
{
    int64_t v = 0;
    if (!is_plain(n) || !keel_node_as_int(n, &v) || v < lo || v > hi)
        bad(r, n, path, "a whole number in range expected%s", "");
    return v;
}

/* "kind[slot]" */
static char *read_kind_slot(reader *r, const keel_node *n, const char *path, uint32_t *slot)
{
    const char *t = n && n->kind == KEEL_NODE_SCALAR ? n->text : NULL;
    const char *lb = t ? strrchr(t, '[') : NULL;
    char *end = NULL;
    unsigned long v = lb ? strtoul(lb + 1, &end, 10) : 0;
    if (!lb || lb == t || !end || end == lb + 1 || strcmp(end, "]") != 0 || v > UINT32_MAX) {
        bad(r, n, path, "kind[slot] expected, as core:transform[0]%s", "");
        *slot = 0;
        return keel__strdup("?");
    }
    *slot = (uint32_t)v;
    char *key = keel__strfmt("%.*s", (int)(lb - t), t);
    if (!keel__kind_key_valid(key)) bad(r, n, path, "\"%s\" is not a kind key", key);
    return key;
}

static keel_node *read_body(reader *r, const keel_node *n, const char *path, bool known)
{
    if (!n || n->kind != KEEL_NODE_MAP) {
        bad(r, n, path, "a map expected%s", "");
        return keel_node_new_map();
    }
    const char *why = keel__body_over_limits(n);
    if (why) bad(r, n, path, "%s", why);
    keel_node *b = keel_node_copy(n);
    if (known) keel__save_canon(b); /* an unknown body keeps its styles, as the slot does */
    return b;
}

static void read_spawned(reader *r, const keel_node *n, const char *path, keel__save_ent *e)
{
    static const char *const keys[] = { "uuid", "name", "parent", "enabled", "components", NULL };
    static const char *const ckeys[] = { "kind", "version", "slot", "enabled", "unknown", "body", NULL };
    char p[512];
    if (!n || n->kind != KEEL_NODE_MAP) {
        bad(r, n, path, "an entity (a map) expected%s", "");
        return;
    }
    only_keys(r, n, path, keys);
    e->flags = REC_SPAWNED | REC_NAME | REC_ENABLED | REC_PARENT;
    snprintf(p, sizeof p, "%.300s.uuid", path);
    e->uuid = read_uuid(r, get(n, "uuid"), p, false);
    snprintf(p, sizeof p, "%.300s.name", path);
    e->name = read_string(r, get(n, "name"), p);
    const keel_node *par = get(n, "parent");
    snprintf(p, sizeof p, "%.300s.parent", path);
    if (par) e->parent = read_uuid(r, par, p, false);
    snprintf(p, sizeof p, "%.300s.enabled", path);
    e->enabled = read_bool(r, get(n, "enabled"), p, true);
    const keel_node *cs = get(n, "components");
    snprintf(p, sizeof p, "%.300s.components", path);
    if (!cs || cs->kind != KEEL_NODE_SEQ) {
        bad(r, cs ? cs : n, p, "a list of components expected%s", "");
        return;
    }
    e->ncomps = (uint32_t)cs->count;
    e->comps = keel__xcalloc(cs->count ? cs->count : 1, sizeof *e->comps);
    for (size_t j = 0; j < cs->count; j++) {
        const keel_node *c = &cs->items[j];
        keel__save_comp *sc = &e->comps[j];
        char cp[512];
        snprintf(cp, sizeof cp, "%.300s.components[%zu]", path, j);
        sc->op = OP_ADD;
        if (c->kind != KEEL_NODE_MAP) {
            bad(r, c, cp, "a component (a map) expected%s", "");
            sc->key = keel__strdup("?");
            sc->body = keel_node_new_map();
            continue;
        }
        only_keys(r, c, cp, ckeys);
        snprintf(p, sizeof p, "%.300s.kind", cp);
        sc->key = read_string(r, get(c, "kind"), p);
        if (!keel__kind_key_valid(sc->key)) bad(r, get(c, "kind"), p, "\"%s\" is not a kind key", sc->key);
        snprintf(p, sizeof p, "%.300s.version", cp);
        sc->version = (int)read_int(r, get(c, "version"), p, 1, INT32_MAX);
        snprintf(p, sizeof p, "%.300s.slot", cp);
        sc->slot = (uint32_t)read_int(r, get(c, "slot"), p, 0, UINT32_MAX);
        snprintf(p, sizeof p, "%.300s.enabled", cp);
        sc->enabled = read_bool(r, get(c, "enabled"), p, true);
        snprintf(p, sizeof p, "%.300s.unknown", cp);
        sc->loaded = !read_bool(r, get(c, "unknown"), p, false);
        snprintf(p, sizeof p, "%.300s.body", cp);
        sc->body = read_body(r, get(c, "body"), p, sc->loaded);
    }
}

static void read_changed(reader *r, const keel_node *k, const keel_node *n, const char *path, keel__save_ent *e)
{
    static const char *const keys[] = { "name", "enabled", "parent", "removed", "components", NULL };
    static const char *const ckeys[] = { "added", "version", "enabled", "unknown", "fields", "body", NULL };
    char p[512];
    e->uuid = read_uuid(r, k, path, true);
    bool root = keel_uuid_is_nil(e->uuid);
    if (!n || n->kind != KEEL_NODE_MAP) {
        bad(r, n, path, "a map of changes expected%s", "");
        return;
    }
    only_keys(r, n, path, keys);
    const keel_node *v;
    if ((v = get(n, "name"))) {
        snprintf(p, sizeof p, "%.300s.name", path);
        e->flags |= REC_NAME;
        e->name = read_string(r, v, p);
    }
    if ((v = get(n, "enabled"))) {
        snprintf(p, sizeof p, "%.300s.enabled", path);
        e->flags |= REC_ENABLED;
        e->enabled = read_bool(r, v, p, true);
    }
    if ((v = get(n, "parent"))) {
        snprintf(p, sizeof p, "%.300s.parent", path);
        e->flags |= REC_PARENT;
        if (!(is_plain(v) && keel_node_is_null(v))) e->parent = read_uuid(r, v, p, false);
    }
    if (root && e->flags) bad(r, n, path, "the scene root has no name, enabled or parent to change%s", "");
    if ((v = get(n, "removed"))) {
        snprintf(p, sizeof p, "%.300s.removed", path);
        if (v->kind != KEEL_NODE_SEQ) bad(r, v, p, "a list of kind[slot] expected%s", "");
        else {
            e->nrem = (uint32_t)v->count;
            e->rem = keel__xcalloc(v->count ? v->count : 1, sizeof *e->rem);
            for (size_t j = 0; j < v->count; j++) {
                snprintf(p, sizeof p, "%.300s.removed[%zu]", path, j);
                e->rem[j].key = read_kind_slot(r, &v->items[j], p, &e->rem[j].slot);
            }
        }
    }
    if ((v = get(n, "components"))) {
        snprintf(p, sizeof p, "%.300s.components", path);
        if (v->kind != KEEL_NODE_MAP) {
            bad(r, v, p, "a map of kind[slot] to changes expected%s", "");
            return;
        }
        e->ncomps = (uint32_t)v->count;
        e->comps = keel__xcalloc(v->count ? v->count : 1, sizeof *e->comps);
        for (size_t j = 0; j < v->count; j++) {
            const keel_node *ck = &v->items[2 * j], *c = &v->items[2 * j + 1];
            keel__save_comp *sc = &e->comps[j];
            char cp[512];
            snprintf(cp, sizeof cp, "%.300s.components.%.150s", path, ck->text ? ck->text : "?");
            sc->key = read_kind_slot(r, ck, cp, &sc->slot);
            if (c->kind != KEEL_NODE_MAP) {
                bad(r, c, cp, "a map expected%s", "");
                sc->op = OP_CHANGE;
                sc->body = keel_node_new_map();
                continue;
            }
            only_keys(r, c, cp, ckeys);
            snprintf(p, sizeof p, "%.300s.added", cp);
            bool added = read_bool(r, get(c, "added"), p, false);
            sc->op = added ? OP_ADD : OP_CHANGE;
            snprintf(p, sizeof p, "%.300s.version", cp);
            sc->version = (int)read_int(r, get(c, "version"), p, 1, INT32_MAX);
            snprintf(p, sizeof p, "%.300s.enabled", cp);
            sc->enabled = read_bool(r, get(c, "enabled"), p, true);
            snprintf(p, sizeof p, "%.300s.unknown", cp);
            sc->loaded = !read_bool(r, get(c, "unknown"), p, false);
            if (!added && get(c, "unknown"))
                bad(r, get(c, "unknown"), p, "only an added component can be unknown%s", "");
            const char *bk = added ? "body" : "fields";
            if (get(c, added ? "fields" : "body"))
                bad(r, get(c, added ? "fields" : "body"), cp,
                    added ? "an added component has a body, not fields%s"
                          : "a changed component has fields, not a body%s",
                    "");
            snprintf(p, sizeof p, "%.300s.%.10s", cp, bk);
            sc->body = read_body(r, get(c, bk), p, !added || sc->loaded);
        }
    }
}

keel_status keel__save_text_read(const char *text, size_t len, const char *file, keel_slot_info *info,
                                 keel__save_state *st, keel_diags *d)
{
    memset(info, 0, sizeof *info);
    memset(st, 0, sizeof *st);
    keel_limits lim = keel_limits_default();
    keel_node *doc = NULL;
    keel_status s = keel__yaml_parse(text, len, &lim, file, &doc, d);
    if (s != KEEL_OK) return s;
    reader rd = { file, d, false }, *r = &rd;
    static const char *const top[] = { "keel_save", "details", "spawned", "destroyed", "changed", "order", "random",
                                       NULL };
    static const char *const dkeys[] = { "title", "saved_at", "play_seconds", "scene", "fields", NULL };
    if (!doc || doc->kind != KEEL_NODE_MAP || !get(doc, "keel_save")) {
        bad(r, doc, "", "not a save game's text (no keel_save: at the top)%s", "");
        goto done;
    }
    only_keys(r, doc, "", top);
    if (read_int(r, get(doc, "keel_save"), "keel_save", 1, 1000) != TEXT_VERSION && !r->failed)
        bad(r, get(doc, "keel_save"), "keel_save", "save text version %s is not supported",
            get(doc, "keel_save")->text);
    const keel_node *det = get(doc, "details");
    if (!det || det->kind != KEEL_NODE_MAP)
        bad(r, det ? det : doc, "details", "the details (a map) are missing%s", "");
    only_keys(r, det, "details", dkeys);
    info->title = read_string(r, get(det, "title"), "details.title");
    info->saved_at = read_int(r, get(det, "saved_at"), "details.saved_at", INT64_MIN, INT64_MAX);
    const keel_node *ps = get(det, "play_seconds");
    if (!is_plain(ps) || !keel_node_as_float(ps, &info->play_seconds) || !isfinite(info->play_seconds) ||
        info->play_seconds < 0)
        bad(r, ps ? ps : det, "details.play_seconds", "a number >= 0 expected%s", "");
    st->scene = read_uuid(r, get(det, "scene"), "details.scene", false);
    const keel_node *f = get(det, "fields");
    if (f) {
        if (f->kind != KEEL_NODE_MAP) bad(r, f, "details.fields", "a map of scalars expected%s", "");
        else {
            info->fields = keel_node_new_map();
            for (size_t i = 0; i < f->count; i++) {
                const keel_node *v = &f->items[2 * i + 1];
                if (v->kind != KEEL_NODE_SCALAR) {
                    bad(r, v, "details.fields", "slot field %s is not a scalar", f->items[2 * i].text);
                    continue;
                }
                keel_node_put(info->fields, f->items[2 * i].text,
                              keel_node_new_scalar(
                                  v->text, v->style == KEEL_STYLE_PLAIN ? KEEL_STYLE_PLAIN : KEEL_STYLE_DOUBLE));
            }
        }
    }
    if (!r->failed && keel__slot_info_check(info, d) != KEEL_OK) r->failed = true;
    const keel_node *sp = get(doc, "spawned"), *de = get(doc, "destroyed"), *ch = get(doc, "changed"),
                    *od = get(doc, "order");
    if (sp && sp->kind != KEEL_NODE_SEQ) bad(r, sp, "spawned", "a list of entities expected%s", ""), sp = NULL;
    if (de && de->kind != KEEL_NODE_SEQ) bad(r, de, "destroyed", "a list of UUIDs expected%s", ""), de = NULL;
    if (ch && ch->kind != KEEL_NODE_MAP)
        bad(r, ch, "changed", "a map of entities to changes expected%s", ""), ch = NULL;
    if (od && od->kind != KEEL_NODE_MAP)
        bad(r, od, "order", "a map of parents to children expected%s", ""), od = NULL;
    size_t nsp = sp ? sp->count : 0, nch = ch ? ch->count : 0;
    st->ents = keel__xcalloc(nsp + nch ? nsp + nch : 1, sizeof *st->ents);
    /* the slot's order: the root's record first, then the spawned, then the changed */
    size_t at = 0;
    for (int pass = 0; pass < 3; pass++) {
        if (pass == 1) {
            for (size_t i = 0; i < nsp; i++) {
                char p[512];
                snprintf(p, sizeof p, "spawned[%zu]", i);
                read_spawned(r, &sp->items[i], p, &st->ents[at++]);
            }
            continue;
        }
        for (size_t i = 0; i < nch; i++) {
            const keel_node *k = &ch->items[2 * i];
            bool root = k->kind == KEEL_NODE_SCALAR && k->text && strcmp(k->text, "root") == 0;
            if (root != (pass == 0)) continue;
            char p[512];
            snprintf(p, sizeof p, "changed.%.300s", k->text ? k->text : "?");
            read_changed(r, k, &ch->items[2 * i + 1], p, &st->ents[at++]);
        }
    }
    st->nents = (uint32_t)at;
    st->ndead = de ? (uint32_t)de->count : 0;
    st->dead = keel__xcalloc(st->ndead ? st->ndead : 1, sizeof *st->dead);
    for (uint32_t i = 0; i < st->ndead; i++) {
        char p[512];
        snprintf(p, sizeof p, "destroyed[%u]", i);
        st->dead[i] = read_uuid(r, &de->items[i], p, false);
    }
    st->norders = od ? (uint32_t)od->count : 0;
    st->orders = keel__xcalloc(st->norders ? st->norders : 1, sizeof *st->orders);
    for (uint32_t i = 0; i < st->norders; i++) {
        const keel_node *k = &od->items[2 * i], *v = &od->items[2 * i + 1];
        char p[512];
        snprintf(p, sizeof p, "order.%.300s", k->text ? k->text : "?");
        st->orders[i].parent = read_uuid(r, k, p, true);
        if (v->kind != KEEL_NODE_SEQ) {
            bad(r, v, p, "a list of child UUIDs expected%s", "");
            continue;
        }
        st->orders[i].n = (uint32_t)v->count;
        st->orders[i].kids = keel__xcalloc(v->count ? v->count : 1, sizeof *st->orders[i].kids);
        for (size_t j = 0; j < v->count; j++) st->orders[i].kids[j] = read_uuid(r, &v->items[j], p, false);
    }
    const keel_node *rn = get(doc, "random");
    if (rn) {
        static const char *const rkeys[] = { "seed", "state", NULL };
        only_keys(r, rn, "random", rkeys);
        st->has_random = true;
        st->seed = read_int(r, get(rn, "seed"), "random.seed", INT64_MIN, INT64_MAX);
        const keel_node *sv = get(rn, "state");
        if (!sv || sv->kind != KEEL_NODE_SEQ || sv->count != 4) {
            bad(r, sv ? sv : rn, "random.state", "a list of 4 unsigned integers expected%s", "");
        } else {
            uint64_t any = 0;
            for (int i = 0; i < 4; i++) {
                const keel_node *x = &sv->items[i];
                char *end = NULL;
                errno = 0;
                st->rs[i] = is_plain(x) && x->text && x->text[0] >= '0' && x->text[0] <= '9'
                                ? strtoull(x->text, &end, 10) : 0;
                if (!end || *end || errno) bad(r, x, "random.state", "an unsigned 64-bit integer expected%s", "");
                any |= st->rs[i];
            }
            if (!any && !r->failed) bad(r, sv, "random.state", "a random state of all zeros%s", "");
        }
    }
done:
    keel_node_free(doc);
    if (r->failed) {
        keel_slot_info_free(info);
        keel__save_state_free(st);
        memset(st, 0, sizeof *st);
        return KEEL_PARSE_ERROR;
    }
    return KEEL_OK;
}

/* ================================================================ the public face */

keel_status keel_persist_dump(const keel_world *w, const keel_baseline *base, const keel_slot_info *info,
                              char **out, size_t *len, keel_diags *d)
{
    if (!w || !base || !out) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel_persist_dump: NULL argument");
    if (keel_world_in_callback(w))
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "",
                          "keel_persist_dump refuses while a callback transaction is open");
    if (keel_world_lift_count(w))
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "",
                          "keel_persist_dump refuses while entities are lifted (restore or discard them)");
    if (!keel_uuid_equal(keel_world_uuid(w), keel__baseline_scene(base)))
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "the baseline is of another scene than the world");
    keel_status s = keel__slot_info_check(info, d);
    if (s) return s;
    keel__buf raw = { 0 };
    keel__persist_encode(w, base, &raw);
    keel__rd r = { raw.p, raw.len, 0, NULL, false };
    keel__save_state st;
    memset(&st, 0, sizeof st);
    keel__save_state_decode(&r, &st);
    free(raw.p);
    keel_slot_info i = { 0 };
    if (info) i = *info;
    if (!i.title) i.title = "";
    if (!i.saved_at) i.saved_at = (int64_t)time(NULL); /* as the slot would say */
    s = r.err ? KEEL_ERROR(d, KEEL_LIMIT_EXCEEDED, "", "the save cannot be written: %s", r.err)
              : keel__save_text_write(&i, &st, out, len, d);
    keel__save_state_free(&st);
    return s;
}

keel_status keel_persist_dump_slot(const char *path, char **out, size_t *len, keel_diags *d)
{
    if (!path || !out) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel_persist_dump_slot: NULL argument");
    keel_slot_info info;
    keel_status s = keel_persist_info(path, &info, d);
    if (s) return s;
    uint8_t *raw = NULL;
    size_t n = 0;
    s = keel__slot_read(path, &raw, &n, d);
    keel__save_state st;
    memset(&st, 0, sizeof st);
    if (s == KEEL_OK) {
        keel__rd r = { raw, n, 0, NULL, false };
        keel__save_state_decode(&r, &st);
        if (!r.err && r.pos != r.len) r.err = "trailing bytes after the state";
        if (r.err) s = keel_diag_add(d, KEEL_SEV_ERROR, KEEL_PARSE_ERROR, "", path, 0, 0, "save file: %s", r.err);
        else s = keel__save_text_write(&info, &st, out, len, d);
    }
    free(raw);
    keel__save_state_free(&st);
    keel_slot_info_free(&info);
    return s;
}

keel_status keel_persist_load_text(keel_world *w, const char *text, size_t len, const char *file, keel_diags *d)
{
    if (!w || !text) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel_persist_load_text: NULL argument");
    if (keel_world_in_step(w))
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "a save cannot be loaded during a step");
    keel_slot_info info;
    keel__save_state st;
    keel_status s = keel__save_text_read(text, len, file, &info, &st, d);
    if (s) return s;
    s = keel__save_state_apply(w, &st, d);
    keel__save_state_free(&st);
    keel_slot_info_free(&info);
    return s;
}

keel_status keel_persist_cook_text(const char *text, size_t len, const char *file, const char *path, keel_diags *d)
{
    if (!text || !path) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel_persist_cook_text: NULL argument");
    keel_slot_info info;
    keel__save_state st;
    keel_status s = keel__save_text_read(text, len, file, &info, &st, d);
    if (s) return s;
    keel__buf raw = { 0 };
    keel__save_state_encode(&st, &raw);
    s = keel__slot_write(path, &info, &raw, d);
    free(raw.p);
    keel__save_state_free(&st);
    keel_slot_info_free(&info);
    return s;
}

keel_status keel_persist_format_text(const char *text, size_t len, const char *file, char **out, size_t *out_len,
                                     keel_diags *d)
{
    if (!text || !out) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel_persist_format_text: NULL argument");
    keel_slot_info info;
    keel__save_state st;
    keel_status s = keel__save_text_read(text, len, file, &info, &st, d);
    if (s) return s;
    s = keel__save_text_write(&info, &st, out, out_len, d);
    keel__save_state_free(&st);
    keel_slot_info_free(&info);
    return s;
}
