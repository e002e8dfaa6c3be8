/* lua_watch.c — what one event-stream subscriber has seen of a world, and the JSON of what it has
 * not (lua/keel/watch.lua sends it). keel.core.channel.watcher(w, { kinds = {KEY...}, entities = {REF...} })
 * -> watcher; watcher:snapshot(frame) -> JSON text; watcher:delta(frame) -> JSON text | nil.
 * Beyond the contract's delta keys, "updated" lists entities renamed, reparented or (dis)abled, and
 * a changed component carries "enabled" when that flag changed.
 * A component is found changed by its write counter (its Lua `version`); only the fields whose
 * values differ from the ones this watcher last sent go out. Components are known by their
 * serial (never reused in a world), entities by their handle (generation included). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lua_internal.h"
#include "channel/lua_json.h"
#include "channel/lua_watch.h"

static const keel_lua_type mt_watcher = { "keel.Watcher" };

typedef struct wcomp {
    uint64_t serial, counter;
    keel_entity e;
    keel_kind_id kind; /* KEEL_NO_KIND: unknown (its body is not followed field by field) */
    const char *key;   /* the kind's key: borrowed from the registry or the member (removed: copied) */
    char *key_copy;
    uint32_t slot;
    bool enabled; /* its own flag: a toggle sends the component with "enabled" (no version bump needed) */
    size_t nf;
    keel_value *vals; /* last sent; strings owned */
    bool taken;       /* carried into the next pass */
} wcomp;

typedef struct went {
    keel_entity e;
    keel_uuid uuid;
    char *name; /* owned: a rename, reparent or enable sends the entity in "updated" */
    keel_entity parent;
    bool enabled;
} went;

/* uint64 key (never 0) -> index, open addressing; rebuilt each pass. */
typedef struct umap {
    uint64_t *keys;
    uint32_t *vals;
    size_t cap;
} umap;

typedef struct watcher {
    keel_lua_world *lw;
    char **kinds; /* NULL: every kind */
    size_t nkinds;
    char **refs; /* NULL: every entity (the root first, then run order) */
    size_t nrefs;
    wcomp *comps;
    size_t ncomps;
    went *ents;
    size_t nents;
    umap cmap, emap;
    bool primed; /* a snapshot was taken */
} watcher;

static uint64_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
}

static void umap_init(umap *m, size_t n)
{
    size_t cap = 16;
    while (cap < n * 2 + 1) cap *= 2;
    m->keys = calloc(cap, sizeof *m->keys);
    m->vals = malloc(cap * sizeof *m->vals);
    if (!m->keys || !m->vals) abort();
    m->cap = cap;
}

static void umap_free(umap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

static void umap_put(umap *m, uint64_t k, uint32_t v)
{
    size_t i = mix(k) & (m->cap - 1);
    while (m->keys[i] && m->keys[i] != k) i = (i + 1) & (m->cap - 1);
    m->keys[i] = k;
    m->vals[i] = v;
}

static long umap_get(const umap *m, uint64_t k)
{
    if (!m->cap) return -1;
    size_t i = mix(k) & (m->cap - 1);
    while (m->keys[i]) {
        if (m->keys[i] == k) return (long)m->vals[i];
        i = (i + 1) & (m->cap - 1);
    }
    return -1;
}

static void vals_free(keel_value *v, size_t n)
{
    if (!v) return;
    for (size_t i = 0; i < n; i++)
        if (v[i].type == KEEL_T_STRING) free((char *)v[i].as.s);
    free(v);
}

static void comp_free(wcomp *c)
{
    vals_free(c->vals, c->nf);
    free(c->key_copy);
    c->vals = NULL;
    c->key_copy = NULL;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (!p) abort();
    return memcpy(p, s, n);
}

static bool same_value(const keel_value *a, const keel_value *b, int width)
{
    switch (a->type) {
    case KEEL_T_BOOL: return a->as.b == b->as.b;
    case KEEL_T_INT:
    case KEEL_T_ENUM: return a->as.i == b->as.i;
    case KEEL_T_FLOAT: return a->as.f == b->as.f || (isnan(a->as.f) && isnan(b->as.f));
    case KEEL_T_STRING: return strcmp(a->as.s ? a->as.s : "", b->as.s ? b->as.s : "") == 0;
    case KEEL_T_ASSET:
    case KEEL_T_ENTITY: return a->nil == b->nil && (a->nil || memcmp(&a->as.u, &b->as.u, sizeof a->as.u) == 0);
    default:
        for (int i = 0; i < width; i++)
            if (a->as.v[i] != b->as.v[i]) return false;
        return true;
    }
}

/* Integral floats as integers, as the Lua side encodes them; no inf or nan in JSON. */
static json_t *number(double v)
{
    if (!isfinite(v)) return json_null();
    if (v == floor(v) && fabs(v) < 9007199254740992.0) return json_integer((json_int_t)v);
    return json_real(v);
}

static json_t *uuid_json(keel_uuid u)
{
    char s[37];
    keel_uuid_format(u, s);
    return json_string(s);
}

/* The delta's "changed" list is written as JSON text straight into one buffer (a jansson value per
 * field cost more than the scene writer's whole dump); the text is the one jansson's compact dump
 * gives for the same values (same key order, "%.17g" reals, the same escapes). */
typedef struct jbuf {
    char *p;
    size_t n, cap;
} jbuf;

static void jb_reserve(jbuf *b, size_t more)
{
    if (b->cap - b->n >= more) return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->n < more) cap *= 2;
    char *g = realloc(b->p, cap);
    if (!g) abort();
    b->p = g;
    b->cap = cap;
}

static void jb_put(jbuf *b, const char *s, size_t n)
{
    if (!n) return; /* s may be NULL then (an empty list's buffer) */
    jb_reserve(b, n);
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

#define JB_LIT(b, s) jb_put((b), (s), sizeof(s) - 1)

static void jb_int(jbuf *b, long long v)
{
    jb_reserve(b, 24);
    b->n += (size_t)snprintf(b->p + b->n, 24, "%lld", v);
}

/* jansson's real: "%.17g", then ".0" when it would read back as an integer, the exponent's '+'
 * and leading zeros dropped */
static void jb_real(jbuf *b, double v)
{
    char s[40];
    int len = snprintf(s, sizeof s, "%.17g", v);
    if (len <= 0 || (size_t)len >= sizeof s - 3) {
        JB_LIT(b, "null");
        return;
    }
    for (int i = 0; i < len; i++)
        if (s[i] == ',') s[i] = '.'; /* a decimal-comma locale */
    char *e = strchr(s, 'e');
    if (!e && !strchr(s, '.')) {
        s[len++] = '.';
        s[len++] = '0';
        s[len] = 0;
    }
    if (e) {
        char *start = e + 1, *end = e + 2;
        if (*start == '-') start++;
        while (*end == '0') end++;
        if (end != start) {
            memmove(start, end, (size_t)(len - (end - s)) + 1);
            len -= (int)(end - start);
        }
    }
    jb_put(b, s, (size_t)len);
}

/* as number(): integral floats as integers, no inf or nan */
static void jb_number(jbuf *b, double v)
{
    if (!isfinite(v)) JB_LIT(b, "null");
    else if (v == floor(v) && fabs(v) < 9007199254740992.0) jb_int(b, (long long)v);
    else jb_real(b, v);
}

/* A JSON string; text that is not UTF-8 is null, as json_string refuses it. */
static void jb_str(jbuf *b, const char *s)
{
    if (!keel__utf8_valid(s)) {
        JB_LIT(b, "null");
        return;
    }
    size_t n = strlen(s);
    jb_reserve(b, n + 2);
    b->p[b->n++] = '"';
    size_t run = 0; /* bytes copied as they are, pending */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        jb_put(b, s + run, i - run);
        run = i + 1;
        char esc[8];
        switch (c) {
        case '"': JB_LIT(b, "\\\""); break;
        case '\\': JB_LIT(b, "\\\\"); break;
        case '\b': JB_LIT(b, "\\b"); break;
        case '\f': JB_LIT(b, "\\f"); break;
        case '\n': JB_LIT(b, "\\n"); break;
        case '\r': JB_LIT(b, "\\r"); break;
        case '\t': JB_LIT(b, "\\t"); break;
        default:
            snprintf(esc, sizeof esc, "\\u%04X", c);
            jb_put(b, esc, 6);
        }
    }
    jb_put(b, s + run, n - run);
    JB_LIT(b, "\"");
}

static void jb_uuid(jbuf *b, keel_uuid u)
{
    char s[37];
    keel_uuid_format(u, s);
    jb_reserve(b, 38);
    b->p[b->n++] = '"';
    memcpy(b->p + b->n, s, 36);
    b->n += 36;
    b->p[b->n++] = '"';
}

/* value_json's text */
static void jb_value(jbuf *b, const keel_field_desc *f, const keel_value *v)
{
    switch (f->type) {
    case KEEL_T_BOOL:
        if (v->as.b) JB_LIT(b, "true");
        else JB_LIT(b, "false");
        return;
    case KEEL_T_INT: jb_int(b, (long long)v->as.i); return;
    case KEEL_T_FLOAT: jb_number(b, v->as.f); return;
    case KEEL_T_ENUM:
        if (v->as.i >= 0 && (size_t)v->as.i < f->choice_count) jb_str(b, f->choices[v->as.i]);
        else JB_LIT(b, "null");
        return;
    case KEEL_T_STRING: jb_str(b, v->as.s ? v->as.s : ""); return;
    case KEEL_T_ASSET:
    case KEEL_T_ENTITY:
        if (v->nil || keel_uuid_is_nil(v->as.u)) JB_LIT(b, "null");
        else jb_uuid(b, v->as.u);
        return;
    default: {
        int n = keel_type_width(f->type);
        JB_LIT(b, "[");
        for (int i = 0; i < n; i++) {
            if (i) JB_LIT(b, ",");
            jb_number(b, v->as.v[i]);
        }
        JB_LIT(b, "]");
    }
    }
}

static json_t *value_json(const keel_field_desc *f, const keel_value *v)
{
    switch (f->type) {
    case KEEL_T_BOOL: return json_boolean(v->as.b);
    case KEEL_T_INT: return json_integer((json_int_t)v->as.i);
    case KEEL_T_FLOAT: return number(v->as.f);
    case KEEL_T_ENUM:
        if (v->as.i >= 0 && (size_t)v->as.i < f->choice_count) return json_string(f->choices[v->as.i]);
        return json_null();
    case KEEL_T_STRING: {
        json_t *s = json_string(v->as.s ? v->as.s : "");
        return s ? s : json_null(); /* not UTF-8: unsendable as JSON text */
    }
    case KEEL_T_ASSET:
    case KEEL_T_ENTITY: return v->nil || keel_uuid_is_nil(v->as.u) ? json_null() : uuid_json(v->as.u);
    default: {
        json_t *a = json_array();
        int n = keel_type_width(f->type);
        for (int i = 0; i < n; i++) json_array_append_new(a, number(v->as.v[i]));
        return a;
    }
    }
}

/* A preserved body (an unknown component's): YAML core-schema scalars. */
static json_t *node_json(const keel_node *n, int depth)
{
    if (!n || depth > 64) return json_null();
    if (n->kind == KEEL_NODE_SEQ) {
        json_t *a = json_array();
        for (size_t i = 0; i < n->count; i++) json_array_append_new(a, node_json(&n->items[i], depth + 1));
        return a;
    }
    if (n->kind == KEEL_NODE_MAP) {
        json_t *o = json_object();
        for (size_t i = 0; i < n->count; i++) {
            const keel_node *k = &n->items[2 * i];
            if (k->kind == KEEL_NODE_SCALAR && k->text)
                json_object_set_new(o, k->text, node_json(&n->items[2 * i + 1], depth + 1));
        }
        return o;
    }
    if (n->style == KEEL_STYLE_ANY || n->style == KEEL_STYLE_PLAIN) {
        bool b;
        int64_t i;
        double f;
        if (keel_node_is_null(n)) return json_null();
        if (keel_node_as_bool(n, &b)) return json_boolean(b);
        if (keel_node_as_int(n, &i)) return json_integer((json_int_t)i);
        if (keel_node_as_float(n, &f)) return number(f);
    }
    json_t *s = json_stringn(n->text ? n->text : "", n->text ? n->len : 0);
    return s ? s : json_null();
}

static json_t *entity_json(keel_world *w, keel_entity e)
{
    json_t *o = json_object();
    json_object_set_new(o, "uuid", uuid_json(keel_entity_uuid(w, e)));
    const char *name = keel_entity_name(w, e);
    json_t *js = json_string(name ? name : "");
    json_object_set_new(o, "name", js ? js : json_string(""));
    keel_entity p = keel_entity_parent(w, e);
    json_object_set_new(o, "parent", p ? uuid_json(keel_entity_uuid(w, p)) : json_null());
    json_object_set_new(o, "enabled", json_boolean(keel_entity_enabled(w, e)));
    return o;
}

static bool kind_watched(const watcher *wt, const char *key)
{
    if (!wt->kinds) return true;
    for (size_t i = 0; i < wt->nkinds; i++)
        if (strcmp(wt->kinds[i], key) == 0) return true;
    return false;
}

typedef struct pass {
    watcher *wt;
    keel_world *w;
    wcomp *comps; /* this pass's */
    size_t ncomps, capcomps;
    went *ents;
    size_t nents, capents;
    json_t *entities;                            /* snapshot */
    json_t *added, *spawned, *updated;           /* delta */
    jbuf changed;                                /* delta: the "changed" list's items, as text */
    size_t nchanged;
} pass;

static wcomp *next_comp(pass *p)
{
    if (p->ncomps == p->capcomps) {
        p->capcomps = p->capcomps ? p->capcomps * 2 : 64;
        wcomp *g = realloc(p->comps, p->capcomps * sizeof *g);
        if (!g) abort();
        p->comps = g;
    }
    wcomp *c = &p->comps[p->ncomps++];
    memset(c, 0, sizeof *c);
    return c;
}

/* Reads every field of c into fresh owned values; the body as JSON when `body` is given. */
static keel_value *capture(keel_world *w, keel_comp c, const keel_kind_desc *kd, json_t *body)
{
    keel_value *vals = calloc(kd->field_count ? kd->field_count : 1, sizeof *vals);
    if (!vals) abort();
    for (size_t f = 0; f < kd->field_count; f++) {
        keel_value v;
        if (keel_get(w, c, (int)f, &v, NULL) != KEEL_OK) {
            vals[f].type = kd->fields[f].type;
            continue;
        }
        if (body) json_object_set_new(body, kd->fields[f].key, value_json(&kd->fields[f], &v));
        if (v.type == KEEL_T_STRING) v.as.s = dup_str(v.as.s ? v.as.s : "");
        vals[f] = v;
    }
    return vals;
}

/* A "changed" item up to its open "fields" object: {"entity","kind","slot","version","fields":{ */
static void change_head(pass *p, keel_entity e, char uuid[37], const keel_member *m)
{
    jbuf *b = &p->changed;
    if (!uuid[0]) keel_uuid_format(keel_entity_uuid(p->w, e), uuid);
    if (p->nchanged) JB_LIT(b, ",");
    JB_LIT(b, "{\"entity\":\"");
    jb_put(b, uuid, 36);
    JB_LIT(b, "\",\"kind\":");
    jb_str(b, m->key);
    JB_LIT(b, ",\"slot\":");
    jb_int(b, (long long)m->slot);
    JB_LIT(b, ",\"version\":");
    jb_int(b, (long long)m->counter);
    JB_LIT(b, ",\"fields\":{");
}

static void visit(pass *p, keel_entity e)
{
    watcher *wt = p->wt;
    keel_world *w = p->w;
    long pe = umap_get(&wt->emap, e);
    if (pe < 0 && p->spawned) json_array_append_new(p->spawned, entity_json(w, e));
    if (p->nents == p->capents) {
        p->capents = p->capents ? p->capents * 2 : 64;
        went *g = realloc(p->ents, p->capents * sizeof *g);
        if (!g) abort();
        p->ents = g;
    }
    const char *name = keel_entity_name(w, e);
    went *ne = &p->ents[p->nents++];
    *ne = (went){ e, keel_entity_uuid(w, e), NULL, keel_entity_parent(w, e), keel_entity_enabled(w, e) };
    went *old = pe >= 0 ? &wt->ents[pe] : NULL;
    bool renamed = !(old && old->name && strcmp(old->name, name ? name : "") == 0);
    if (!renamed) {
        ne->name = old->name;
        old->name = NULL;
    } else ne->name = dup_str(name ? name : "");
    if (old && p->updated && (renamed || old->parent != ne->parent || old->enabled != ne->enabled))
        json_array_append_new(p->updated, entity_json(w, e));
    json_t *list = p->entities ? json_array() : NULL;
    char uuid[37] = ""; /* formatted when first needed */
    keel_member m;
    for (size_t i = 0; keel_member_at(w, e, i, &m); i++) {
        if (!kind_watched(wt, m.key)) continue;
        long pc = umap_get(&wt->cmap, m.serial);
        wcomp *prev = pc >= 0 ? &wt->comps[pc] : NULL;
        wcomp *c = next_comp(p);
        c->serial = m.serial, c->counter = m.counter, c->e = e, c->kind = m.loaded ? m.kind : KEEL_NO_KIND;
        c->key = m.key, c->slot = m.slot, c->enabled = m.enabled;
        const keel_kind_desc *kd = m.loaded ? keel_kind_describe(m.kind) : NULL;
        keel_comp kc = { e, m.kind, m.slot };
        if (prev) prev->taken = true;
        bool toggled = prev && prev->enabled != m.enabled;
        if (prev && prev->counter == m.counter && !toggled) { /* unchanged: carried over as it was */
            c->nf = prev->nf, c->vals = prev->vals, c->key_copy = prev->key_copy, c->key = c->key_copy;
            prev->vals = NULL, prev->key_copy = NULL;
            continue;
        }
        if (prev) { /* changed: the values sent last are updated in place, the differing ones sent */
            c->nf = prev->nf, c->vals = prev->vals, c->key_copy = prev->key_copy, c->key = c->key_copy;
            prev->vals = NULL, prev->key_copy = NULL;
            jbuf *b = &p->changed;
            size_t start = b->n; /* taken back when nothing differs */
            bool fields = false;
            for (size_t f = 0; kd && f < kd->field_count && f < c->nf; f++) {
                keel_value v;
                if (keel_get(w, kc, (int)f, &v, NULL) != KEEL_OK) continue;
                keel_value *last = &c->vals[f];
                if (v.type == last->type && same_value(&v, last, keel_type_width(kd->fields[f].type))) continue;
                if (!fields) change_head(p, e, uuid, &m);
                else JB_LIT(b, ",");
                fields = true;
                jb_str(b, kd->fields[f].key);
                JB_LIT(b, ":");
                jb_value(b, &kd->fields[f], &v);
                if (last->type == KEEL_T_STRING) free((char *)last->as.s);
                if (v.type == KEEL_T_STRING) v.as.s = dup_str(v.as.s ? v.as.s : "");
                *last = v;
            }
            if (!fields && toggled) change_head(p, e, uuid, &m);
            if (fields || toggled) {
                JB_LIT(b, "}");
                if (toggled) {
                    if (m.enabled) JB_LIT(b, ",\"enabled\":true");
                    else JB_LIT(b, ",\"enabled\":false");
                }
                JB_LIT(b, "}");
                p->nchanged++;
            } else b->n = start;
            continue;
        }
        json_t *body = m.loaded ? json_object() : node_json(m.preserved, 0);
        if (kd) c->vals = capture(w, kc, kd, m.loaded ? body : NULL), c->nf = kd->field_count;
        json_t *o = json_object();
        if (!list) {
            if (!uuid[0]) keel_uuid_format(keel_entity_uuid(w, e), uuid);
            json_object_set_new(o, "entity", json_string(uuid));
        }
        json_object_set_new(o, "kind", json_string(m.key));
        json_object_set_new(o, "slot", json_integer(m.slot));
        json_object_set_new(o, "version", json_integer((json_int_t)m.counter));
        if (list) {
            json_object_set_new(o, "enabled", json_boolean(m.enabled));
            json_object_set_new(o, "loaded", json_boolean(m.loaded));
        }
        json_object_set_new(o, "body", body);
        json_array_append_new(list ? list : p->added, o);
    }
    if (list) {
        json_t *ej = entity_json(w, e);
        json_object_set_new(ej, "components", list);
        json_array_append_new(p->entities, ej);
    }
}

static void walk(pass *p)
{
    watcher *wt = p->wt;
    keel_world *w = p->w;
    if (!wt->refs) {
        visit(p, keel_world_root(w));
        for (keel_entity e = keel_next(w, 0); e; e = keel_next(w, e)) visit(p, e);
        return;
    }
    for (size_t i = 0; i < wt->nrefs; i++) {
        keel_uuid u;
        keel_entity e = KEEL_NO_ENTITY;
        if (strcmp(wt->refs[i], "root") == 0) e = keel_world_root(w);
        else if (keel_uuid_parse(wt->refs[i], &u)) e = keel_find(w, u);
        if (!e) e = keel_find_name(w, wt->refs[i]);
        if (!e) continue;
        bool dup = false;
        for (size_t j = 0; j < p->nents; j++) dup |= p->ents[j].e == e;
        if (!dup) visit(p, e);
    }
}

/* Replaces the watcher's state with the pass's; what was not carried over is gone (removed). */
static void settle(pass *p, json_t *removed, json_t *destroyed)
{
    watcher *wt = p->wt;
    umap emap, cmap;
    umap_init(&emap, p->nents);
    for (size_t i = 0; i < p->nents; i++) umap_put(&emap, p->ents[i].e, (uint32_t)i);
    for (size_t i = 0; i < wt->ncomps; i++) {
        wcomp *c = &wt->comps[i];
        if (!c->taken && removed && umap_get(&emap, c->e) >= 0) {
            char uuid[37];
            long ei = umap_get(&emap, c->e);
            keel_uuid_format(p->ents[ei].uuid, uuid);
            json_t *o = json_object();
            json_object_set_new(o, "entity", json_string(uuid));
            json_object_set_new(o, "kind", json_string(c->key_copy ? c->key_copy : c->key));
            json_object_set_new(o, "slot", json_integer(c->slot));
            json_array_append_new(removed, o);
        }
        comp_free(c);
    }
    for (size_t i = 0; i < wt->nents; i++) {
        if (destroyed && umap_get(&emap, wt->ents[i].e) < 0)
            json_array_append_new(destroyed, uuid_json(wt->ents[i].uuid));
        free(wt->ents[i].name);
    }
    free(wt->comps);
    free(wt->ents);
    umap_free(&wt->emap);
    umap_free(&wt->cmap);
    umap_init(&cmap, p->ncomps);
    for (size_t i = 0; i < p->ncomps; i++) {
        wcomp *c = &p->comps[i];
        /* the member's key is borrowed until its membership changes: keep a copy for "removed" */
        if (!c->key_copy) c->key_copy = dup_str(c->key);
        c->key = c->key_copy;
        umap_put(&cmap, c->serial, (uint32_t)i);
    }
    wt->comps = p->comps, wt->ncomps = p->ncomps;
    wt->ents = p->ents, wt->nents = p->nents;
    wt->emap = emap, wt->cmap = cmap;
}

static lua_Integer opt_frame(lua_State *L)
{
    if (lua_isnoneornil(L, 2)) return 0;
    if (!lua_isinteger(L, 2)) keel__lua_argerror(L, 2, "a frame number expected, got %s", luaL_typename(L, 2));
    return lua_tointeger(L, 2);
}

static watcher *check_watcher(lua_State *L)
{
    watcher *wt = keel__lua_checkudata(L, 1, &mt_watcher);
    if (!wt->lw || !wt->lw->w) keel__lua_raisef(L, KEEL_INVALID_OPERATION, "the watched world is closed");
    return wt;
}

static void push_dump(lua_State *L, json_t *o)
{
    char *text = json_dumps(o, JSON_COMPACT); /* deltas are hot: jansson's 17 digits, no shortest pass */
    json_decref(o);
    if (!text) luaL_error(L, "out of memory");
    lua_pushstring(L, text);
    free(text);
}

static void forget(watcher *wt)
{
    for (size_t i = 0; i < wt->ncomps; i++) comp_free(&wt->comps[i]);
    for (size_t i = 0; i < wt->nents; i++) free(wt->ents[i].name);
    free(wt->comps);
    free(wt->ents);
    umap_free(&wt->emap);
    umap_free(&wt->cmap);
    wt->comps = NULL, wt->ents = NULL, wt->ncomps = wt->nents = 0;
}

/* watcher:snapshot(frame) -> { revision, frame, entities: [{ uuid, name, parent, enabled, components }] } */
static int wt_snapshot(lua_State *L)
{
    watcher *wt = check_watcher(L);
    lua_Integer frame = opt_frame(L);
    keel_world *w = wt->lw->w;
    forget(wt);
    pass p = { .wt = wt, .w = w, .entities = json_array() };
    walk(&p);
    settle(&p, NULL, NULL);
    wt->primed = true;
    json_t *o = json_object();
    json_object_set_new(o, "revision", json_integer((json_int_t)keel_world_revision(w)));
    json_object_set_new(o, "frame", json_integer((json_int_t)frame));
    json_object_set_new(o, "entities", p.entities);
    push_dump(L, o);
    return 1;
}

/* watcher:delta(frame [, frame_ms]) -> { revision, frame, frame_ms?, changed, added, removed, spawned, destroyed }
 * | nil (nothing); frame_ms is how long the last step took (the inspector's frame-time graph) */
static int wt_delta(lua_State *L)
{
    watcher *wt = check_watcher(L);
    if (!wt->primed) return wt_snapshot(L);
    lua_Integer frame = opt_frame(L);
    keel_world *w = wt->lw->w;
    json_t *removed = json_array(), *destroyed = json_array();
    pass p = { .wt = wt, .w = w, .added = json_array(), .spawned = json_array(), .updated = json_array() };
    walk(&p);
    settle(&p, removed, destroyed);
    json_t *rest[5] = { p.added, removed, p.spawned, destroyed, p.updated };
    static const char *const rest_keys[5] = { "added", "removed", "spawned", "destroyed", "updated" };
    bool any = p.nchanged > 0;
    for (int i = 0; i < 5; i++) any = any || json_array_size(rest[i]);
    jbuf out = { 0 };
    if (any) {
        JB_LIT(&out, "{\"revision\":");
        jb_int(&out, (long long)keel_world_revision(w));
        JB_LIT(&out, ",\"frame\":");
        jb_int(&out, (long long)frame);
        if (lua_type(L, 3) == LUA_TNUMBER && isfinite(lua_tonumber(L, 3))) { /* json_real refuses the others */
            JB_LIT(&out, ",\"frame_ms\":");
            jb_real(&out, lua_tonumber(L, 3));
        }
        JB_LIT(&out, ",\"changed\":[");
        jb_put(&out, p.changed.p, p.changed.n);
        JB_LIT(&out, "]");
        for (int i = 0; i < 5; i++) {
            char *text = json_dumps(rest[i], JSON_COMPACT);
            if (!text) abort();
            JB_LIT(&out, ",\"");
            jb_put(&out, rest_keys[i], strlen(rest_keys[i]));
            JB_LIT(&out, "\":");
            jb_put(&out, text, strlen(text));
            free(text);
        }
        JB_LIT(&out, "}");
    }
    for (int i = 0; i < 5; i++) json_decref(rest[i]);
    free(p.changed.p);
    if (!any) {
        lua_pushnil(L);
        return 1;
    }
    lua_pushlstring(L, out.p, out.n);
    free(out.p);
    return 1;
}

static void free_strs(char **s, size_t n)
{
    for (size_t i = 0; s && i < n; i++) free(s[i]);
    free(s);
}

static int wt_gc(lua_State *L)
{
    watcher *wt = keel__lua_checkudata(L, 1, &mt_watcher);
    forget(wt);
    free_strs(wt->kinds, wt->nkinds);
    free_strs(wt->refs, wt->nrefs);
    wt->kinds = wt->refs = NULL;
    wt->lw = NULL;
    return 0;
}

/* The strings of the array at t[field] (NULL when absent or empty). */
static char **strings(lua_State *L, int t, const char *field, size_t *n)
{
    *n = 0;
    if (lua_getfield(L, t, field) != LUA_TTABLE) {
        lua_pop(L, 1);
        return NULL;
    }
    size_t len = (size_t)lua_rawlen(L, -1);
    char **out = len ? calloc(len, sizeof *out) : NULL;
    for (size_t i = 1; out && i <= len; i++) {
        if (lua_rawgeti(L, -1, (lua_Integer)i) == LUA_TSTRING) out[(*n)++] = dup_str(lua_tostring(L, -1));
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return out;
}

/* keel.core.channel.watcher(w [, { kinds = {...}, entities = {...} }]) */
static int m_watcher(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    watcher *wt = lua_newuserdatauv(L, sizeof *wt, 1);
    memset(wt, 0, sizeof *wt);
    keel__lua_setmt(L, &mt_watcher);
    lua_pushvalue(L, 1); /* keeps the World alive */
    lua_setiuservalue(L, -2, 1);
    wt->lw = lw;
    if (lua_istable(L, 2)) {
        wt->kinds = strings(L, 2, "kinds", &wt->nkinds);
        wt->refs = strings(L, 2, "entities", &wt->nrefs);
    }
    return 1;
}

void keel__lua_open_watch(lua_State *L)
{
    static const luaL_Reg methods[] = { { "snapshot", wt_snapshot }, { "delta", wt_delta }, { NULL, NULL } };
    static const luaL_Reg meta[] = { { "__gc", wt_gc }, { "__close", wt_gc }, { NULL, NULL } };
    keel__lua_newmt(L, &mt_watcher);
    luaL_setfuncs(L, meta, 0);
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    lua_pushcfunction(L, m_watcher);
    lua_setfield(L, -2, "watcher");
}
