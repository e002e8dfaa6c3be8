/* conflicts.c — a merge's conflicts list: kept while merging, written after the merged scene,
 * and resolved by keel merge --take.
 *
 * What keel_merge_scenes cannot decide it records here as one entry per place, a path and the
 * three sides' values there (base, ours, theirs; owned copies, NULL when the side has nothing
 * there), and keeps ours' value in the merged scene. The path names the place the way a reader
 * would find it, not by indexes that another edit would shift: `keel`, `scene/KEY`,
 * `settings/KEY`, `root/KIND[SLOT]` and `root/KIND[SLOT]/FIELD`, `UUID` (the whole entity),
 * `UUID/name|enabled|parent`, `UUID/KIND[SLOT]` and `UUID/KIND[SLOT]/FIELD`, each of the
 * keyed ones followed by `/KEY/...` when the place is inside a map both sides edited (the
 * merge goes into maps at every depth). A component is named by its (kind, slot), the
 * identity keel__conflicts_comp_key gives.
 *
 * A merged file is the scene as the writer would write it (read through the scene reader and
 * dumped, so it is canonical for the kinds registered now), followed by a top-level
 * `conflicts:` list, each entry a map of path, base, ours and theirs (keel__conflicts_finish).
 * The values keep their YAML styles, so a quoted "1" stays a string. While the list is there
 * the file does not load: the scene reader gives one Conflict error per entry.
 *
 * keel_merge_take resolves entries by path. Ours' value is already in the scene, so taking ours
 * only drops the entry; taking theirs turns the path into steps (a map key, an entity by UUID,
 * a component by kind and slot) and rebuilds the document along them with theirs' value in
 * place, or without the place when theirs has nothing there. An entity theirs removed also
 * releases its children to the top level, as keel_destroy leaves them. The result goes through
 * the same finish as a merge, with the entries not taken listed again. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "files/conflicts.h"
#include "files/scene_write.h"
#include "base/util.h"
#include "base/vec.h"
#include "files/yaml_read.h"
#include "files/scene_read.h"

enum { BASE = 0, OURS = 1, THEIRS = 2 }; /* a conflict's sides, in keel__conflict.v */

/* ---- the list ---- */

void keel__conflicts_add(keel__conflicts *c, char *path, const keel_node *base, const keel_node *ours,
                         const keel_node *theirs)
{
    KEEL__VEC_RESERVE(c->items, c->n, c->cap, 1, 16);
    c->items[c->n++] = (keel__conflict){ path,
                                         { keel_node_copy(base), keel_node_copy(ours), keel_node_copy(theirs) } };
}

void keel__conflicts_truncate(keel__conflicts *c, size_t n)
{
    while (c->n > n) {
        keel__conflict *x = &c->items[--c->n];
        free(x->path);
        for (int s = 0; s < 3; s++) keel_node_free(x->v[s]);
    }
}

void keel__conflicts_free(keel__conflicts *c)
{
    keel__conflicts_truncate(c, 0);
    free(c->items);
}


/* A component's identity. A missing slot reads as 0 (what the writer always spells out). */
bool keel__conflicts_comp_key(const keel_node *c, const char **kind, int64_t *slot)
{
    *kind = keel__doc_text(keel__doc_get(c, "kind"));
    *slot = 0;
    const keel_node *s = keel__doc_get(c, "slot");
    if (s && !keel_node_as_int(s, slot)) *slot = -1;
    return *kind != NULL;
}

/* ---- emitting a node tree (styles kept) ---- */

typedef keel__yaml_out writer; /* scene_write.c's emitter sink */

static void plain(writer *wr, const char *text)
{
    keel__yaml_out_scalar(wr, text, strlen(text), YAML_PLAIN_SCALAR_STYLE);
}

static void coll_start(writer *wr, bool map, bool flow)
{
    yaml_event_t e;
    if (map)
        yaml_mapping_start_event_initialize(&e, NULL, NULL, 1,
                                            flow ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE);
    else
        yaml_sequence_start_event_initialize(&e, NULL, NULL, 1,
                                             flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE);
    keel__yaml_out_emit(wr, &e);
}

static void coll_end(writer *wr, bool map)
{
    yaml_event_t e;
    if (map) yaml_mapping_end_event_initialize(&e);
    else yaml_sequence_end_event_initialize(&e);
    keel__yaml_out_emit(wr, &e);
}

/* A scalar as it was written: quoted stays quoted (a string), plain stays plain (its core-schema
 * meaning kept); made here (style ANY): libyaml's choice. NULL: null. */
static void emit_node(writer *wr, const keel_node *n)
{
    if (!n) {
        plain(wr, "null");
        return;
    }
    if (n->kind == KEEL_NODE_SCALAR) {
        const char *t = n->text ? n->text : "";
        size_t len = n->text ? n->len : 0;
        switch (n->style) {
        case KEEL_STYLE_PLAIN:
            if (len == 0) plain(wr, "null");
            else keel__yaml_out_scalar(wr, t, len, YAML_PLAIN_SCALAR_STYLE);
            return;
        case KEEL_STYLE_SINGLE:
        case KEEL_STYLE_DOUBLE:
        case KEEL_STYLE_LITERAL:
        case KEEL_STYLE_FOLDED: keel__yaml_out_scalar(wr, t, len, YAML_DOUBLE_QUOTED_SCALAR_STYLE); return;
        default: keel__yaml_out_scalar(wr, t, len, YAML_ANY_SCALAR_STYLE); return;
        }
    }
    bool map = n->kind == KEEL_NODE_MAP;
    bool flow = n->count == 0 || n->style == KEEL_STYLE_FLOW;
    coll_start(wr, map, flow);
    for (size_t i = 0; i < (map ? 2 * n->count : n->count); i++) emit_node(wr, &n->items[i]);
    coll_end(wr, map);
}

static void key(writer *wr, const char *k)
{
    plain(wr, k);
}

/* ---- a merged file ---- */

/* A load's or a dump's errors, as the merged scene's; its warnings (unknown kinds) are expected
 * here and dropped. */
static void pass_errors(keel_diags *tmp, keel_diags *d)
{
    for (size_t i = 0; i < tmp->count; i++) {
        const keel_diag *g = &tmp->items[i];
        if (g->severity == KEEL_SEV_ERROR)
            keel_diag_add(d, KEEL_SEV_ERROR, g->code, g->path, NULL, g->line, g->col, "the merged scene: %s",
                          g->message);
    }
    keel_diags_free(tmp);
}

keel_world *keel__conflicts_load(const keel_node *doc, const keel_limits *lim, keel_diags *d)
{
    keel_load_opts o = keel_load_opts_default();
    if (lim) o.limits = *lim;
    o.no_awake = true;
    o.file = "(the merged scene)";
    keel_world *w = NULL;
    keel_diags tmp;
    keel_diags_init(&tmp);
    if (keel__scene_build(doc, &o, &w, &tmp) != KEEL_OK) {
        keel_world_free(w);
        w = NULL;
    }
    pass_errors(&tmp, d);
    return w;
}

char *keel__conflicts_finish(const keel_node *doc, const keel_limits *lim, const keel__conflicts *c,
                             size_t *outlen, keel_diags *d)
{
    keel_world *w = keel__conflicts_load(doc, lim, d);
    return w ? keel__conflicts_write(w, c, outlen, d) : NULL;
}

char *keel__conflicts_write(keel_world *w, const keel__conflicts *c, size_t *outlen, keel_diags *d)
{
    char *canon = NULL;
    size_t clen = 0;
    keel_diags tmp;
    keel_diags_init(&tmp);
    keel_status st = keel_scene_dump(w, &canon, &clen, &tmp);
    keel_world_free(w);
    pass_errors(&tmp, d);
    if (st != KEEL_OK) return NULL;
    if (c->n == 0) {
        *outlen = clen;
        return canon;
    }
    writer wr;
    keel__yaml_out_open(&wr);
    coll_start(&wr, true, false);
    key(&wr, "conflicts");
    coll_start(&wr, false, false);
    static const char *const names[3] = { "base", "ours", "theirs" };
    for (size_t i = 0; i < c->n; i++) {
        coll_start(&wr, true, false);
        key(&wr, "path");
        keel__yaml_out_scalar(&wr, c->items[i].path, strlen(c->items[i].path), YAML_PLAIN_SCALAR_STYLE);
        for (int s = 0; s < 3; s++) {
            key(&wr, names[s]);
            emit_node(&wr, c->items[i].v[s]);
        }
        coll_end(&wr, true);
    }
    coll_end(&wr, false);
    coll_end(&wr, true);
    size_t tlen = 0;
    char *tail = keel__yaml_out_close(&wr, "the merged scene", &tlen, d);
    if (!tail) {
        free(canon);
        return NULL;
    }
    char *all = keel__xrealloc(canon, clen + tlen + 1);
    memcpy(all + clen, tail, tlen + 1);
    free(tail);
    *outlen = clen + tlen;
    return all;
}

/* ---- keel merge --take ---- */

/* One step of a conflict path into the document. */
typedef struct step {
    enum { STEP_KEY, STEP_UUID, STEP_COMP } type;
    char *key; /* the key, the UUID or the kind */
    int64_t slot;
} step;

/* "UUID/KIND[SLOT]/FIELD" and its sisters as steps (*out malloc'd, freed by steps_free); false
 * for a path of no known form. Segments past a field, a setting or a scene key are keys of the
 * maps inside it, as deep as the merge went. */
static bool parse_path(const char *path, step **out, size_t *n)
{
    char *copy = keel__strdup(path);
    size_t ns = 1;
    for (const char *c = path; *c; c++) ns += *c == '/';
    char **seg = keel__xcalloc(ns, sizeof *seg);
    seg[0] = copy;
    for (size_t i = 1; i < ns; i++) {
        char *slash = strchr(seg[i - 1], '/');
        *slash = '\0';
        seg[i] = slash + 1;
    }
    step *st = keel__xcalloc(ns + 4, sizeof *st); /* entities, UUID, components, body at most */
    size_t k = 0;
#define STEP(t, s, sl) (st[k++] = (step){ (t), keel__strdup(s), (sl) })
    bool ok = true;
    size_t at = 0;       /* the segment naming a component; 0: none */
    size_t keys = ns;    /* the first segment that is a key inside a map */
    if (strcmp(seg[0], "keel") == 0) {
        ok = ns == 1;
        STEP(STEP_KEY, "keel", 0);
    } else if (strcmp(seg[0], "scene") == 0 || strcmp(seg[0], "settings") == 0) {
        ok = ns >= 2;
        STEP(STEP_KEY, seg[0], 0);
        keys = 1;
    } else if (strcmp(seg[0], "root") == 0) {
        ok = ns >= 2;
        STEP(STEP_KEY, "root", 0);
        at = 1;
    } else {
        STEP(STEP_KEY, "entities", 0);
        STEP(STEP_UUID, seg[0], 0);
        if (ns >= 2 &&
            (strcmp(seg[1], "parent") == 0 || strcmp(seg[1], "name") == 0 || strcmp(seg[1], "enabled") == 0)) {
            ok = ns == 2;
            STEP(STEP_KEY, seg[1], 0);
        } else if (ns >= 2) {
            STEP(STEP_KEY, "components", 0);
            at = 1;
        }
    }
    if (ok && at) {
        char *br = strchr(seg[at], '[');
        long long slot = 0;
        char end = 0;
        ok = br && sscanf(br, "[%lld%c", &slot, &end) == 2 && end == ']' && br[strlen(br) - 1] == ']';
        if (ok) {
            *br = '\0';
            STEP(STEP_COMP, seg[at], slot);
            if (ns > at + 1) STEP(STEP_KEY, "body", 0);
            keys = at + 1;
        }
    }
    for (size_t i = keys; ok && i < ns; i++) STEP(STEP_KEY, seg[i], 0);
#undef STEP
    free(seg);
    free(copy);
    *out = st;
    *n = k;
    return ok;
}

static void steps_free(step *st, size_t n)
{
    for (size_t i = 0; i < n; i++) free(st[i].key);
    free(st);
}

static bool step_matches(const step *s, const keel_node *item)
{
    if (s->type == STEP_UUID) {
        const char *u = keel__doc_text(keel__doc_get(item, "uuid"));
        return u && strcmp(u, s->key) == 0;
    }
    const char *k;
    int64_t slot;
    return keel__conflicts_comp_key(item, &k, &slot) && slot == s->slot && strcmp(k, s->key) == 0;
}

/* A copy of `n` with `val` (NULL: nothing) at the steps' place. An entity or component that
 * is not there is only created at the last step (its whole value); NULL when none results. */
static keel_node *update(const keel_node *n, const step *s, size_t ns, const keel_node *val)
{
    if (ns == 0) return val ? keel_node_copy(val) : NULL;
    if (s->type == STEP_KEY) {
        keel_node *m = keel_node_new_map();
        bool found = false;
        for (size_t i = 0; n && n->kind == KEEL_NODE_MAP && i < n->count; i++) {
            const char *k = keel__doc_text(&n->items[2 * i]);
            if (!k) continue;
            if (strcmp(k, s->key) == 0) {
                found = true;
                keel_node *v = update(&n->items[2 * i + 1], s + 1, ns - 1, val);
                if (v) keel_node_put(m, k, v);
            } else {
                keel_node_put(m, k, keel_node_copy(&n->items[2 * i + 1]));
            }
        }
        if (!found) {
            keel_node *v = update(NULL, s + 1, ns - 1, val);
            if (v) keel_node_put(m, s->key, v);
        }
        return m;
    }
    keel_node *q = keel_node_new_seq();
    bool found = false;
    for (size_t i = 0; n && n->kind == KEEL_NODE_SEQ && i < n->count; i++) {
        if (!found && step_matches(s, &n->items[i])) {
            found = true;
            keel_node *v = update(&n->items[i], s + 1, ns - 1, val);
            if (v) keel_node_push(q, v);
        } else {
            keel_node_push(q, keel_node_copy(&n->items[i]));
        }
    }
    if (!found && ns == 1 && val) keel_node_push(q, keel_node_copy(val));
    return q;
}

/* Theirs removed the entity: its children are at the top level there (as keel_destroy leaves
 * them). Takes `doc`, returns its replacement. */
static keel_node *orphan_children(keel_node *doc, const char *uuid)
{
    const keel_node *list = keel__doc_get(doc, "entities");
    for (size_t i = 0; list && list->kind == KEEL_NODE_SEQ && i < list->count; i++) {
        const char *p = keel__doc_text(keel__doc_get(&list->items[i], "parent"));
        const char *u = keel__doc_text(keel__doc_get(&list->items[i], "uuid"));
        if (!p || !u || strcmp(p, uuid) != 0) continue;
        step st[3] = { { STEP_KEY, "entities", 0 }, { STEP_UUID, (char *)u, 0 }, { STEP_KEY, "parent", 0 } };
        keel_node *next = update(doc, st, 3, NULL);
        keel_node_free(doc);
        doc = next;
        list = keel__doc_get(doc, "entities");
    }
    return doc;
}

static char *emit_tree(const keel_node *doc, size_t *len, keel_diags *d)
{
    writer wr;
    keel__yaml_out_open(&wr);
    emit_node(&wr, doc);
    return keel__yaml_out_close(&wr, "the merged scene", len, d);
}

keel_status keel_merge_take(const char *text, size_t len, const char *name, bool theirs, const char *const *paths,
                            size_t npaths, char **out, size_t *outlen, size_t *remaining, keel_diags *d)
{
    keel_node *doc = NULL;
    keel_limits lim = keel_limits_default();
    keel_status st = keel__yaml_parse(text, len, &lim, name, &doc, d);
    if (st != KEEL_OK) return st;
    const keel_node *list = keel__doc_get(doc, "conflicts");
    if (!list || list->kind != KEEL_NODE_SEQ) {
        keel_node_free(doc);
        return keel_diag_add(d, KEEL_SEV_ERROR, KEEL_NOT_FOUND, "conflicts", name, 0, 0,
                             "no conflicts list to resolve");
    }
    bool *chosen = keel__xcalloc(list->count + 1, sizeof *chosen);
    for (size_t i = 0; i < npaths; i++) {
        bool found = false;
        for (size_t j = 0; j < list->count; j++) {
            const char *p = keel__doc_text(keel__doc_get(&list->items[j], "path"));
            if (p && strcmp(p, paths[i]) == 0) found = chosen[j] = true;
        }
        if (!found)
            st = keel_diag_add(d, KEEL_SEV_ERROR, KEEL_NOT_FOUND, "conflicts", name, 0, 0,
                               "no conflict listed at %s", paths[i]);
    }
    for (size_t j = 0; npaths == 0 && j < list->count; j++) chosen[j] = true;
    keel__conflicts rest = { 0 };
    keel_node *cur = keel_node_new_map(); /* the document without its conflicts */
    for (size_t i = 0; i < doc->count; i++) {
        const char *k = keel__doc_text(&doc->items[2 * i]);
        if (k && strcmp(k, "conflicts") != 0) keel_node_put(cur, k, keel_node_copy(&doc->items[2 * i + 1]));
    }
    for (size_t j = 0; st == KEEL_OK && j < list->count; j++) {
        const keel_node *e = &list->items[j];
        const char *p = keel__doc_text(keel__doc_get(e, "path"));
        const keel_node *v[3] = { keel__doc_get(e, "base"), keel__doc_get(e, "ours"), keel__doc_get(e, "theirs") };
        for (int s = 0; s < 3; s++)
            if (keel__doc_null(v[s])) v[s] = NULL;
        if (!chosen[j]) {
            keel__conflicts_add(&rest, keel__strdup(p ? p : ""), v[BASE], v[OURS], v[THEIRS]);
            continue;
        }
        if (!theirs) continue;
        step *steps = NULL;
        size_t ns = 0;
        if (!p || !parse_path(p, &steps, &ns)) {
            st = keel_diag_add(d, KEEL_SEV_ERROR, KEEL_PARSE_ERROR, "conflicts", name, e->line, e->col,
                               "not a conflict path: %s", p ? p : "(none)");
        } else {
            keel_node *next = update(cur, steps, ns, v[THEIRS]);
            keel_node_free(cur);
            cur = next;
            if (ns == 2 && steps[1].type == STEP_UUID && !v[THEIRS]) cur = orphan_children(cur, steps[1].key);
        }
        steps_free(steps, ns);
    }
    free(chosen);
    char *body = NULL;
    size_t blen = 0;
    if (st == KEEL_OK) {
        body = emit_tree(cur, &blen, d);
        if (!body) st = KEEL_INVALID_ARGUMENT;
    }
    if (st == KEEL_OK) {
        keel_limits tl = keel_limits_default();
        keel_node *back = NULL; /* read back: the styles a written scene has */
        *out = NULL;
        if (keel__yaml_parse(body, blen, &tl, "(the merged scene)", &back, d) == KEEL_OK)
            *out = keel__conflicts_finish(back, NULL, &rest, outlen, d);
        keel_node_free(back);
        if (!*out) st = keel_diags_status(d);
        *remaining = rest.n;
    }
    free(body);
    keel__conflicts_free(&rest);
    keel_node_free(cur);
    keel_node_free(doc);
    return st;
}
