/* save.c — save games: a baseline of the authored scene, and the difference from it that a slot
 * file holds (slotfile.c): captured, encoded, decoded and applied all or nothing.
 *
 * A save holds only what play changed, so it stays small and survives edits to the parts of the
 * scene the player never touched. keel_baseline_capture copies the freshly loaded world: every
 * entity (UUID, name, parent, enabled) in hierarchy pre-order with its children lists, each
 * saved component's field values by the kind's layout at that moment (base_kind: keys and
 * types, since a kind may be redeclared before the save), unknown components' bodies whole,
 * and an index of the entities sorted by UUID for binary search. Kinds marked NOSAVE are left
 * out on both sides of the comparison, transient fields too.
 *
 * Saving walks the live world once in run order (tree_build gathers every parent's children in
 * one pass) and writes, after the scene's UUID, three lists (COOKED.md has the bytes): entity
 * records, one per entity that differs (flags say which of name, enabled and parent changed, or
 * SPAWNED for one the baseline lacks, which then carries all three), each with the components
 * the baseline had and the world lost (kind key and slot), those it gained (OP_ADD: the whole
 * body, runtime fields included) and those whose saved fields differ (OP_CHANGE: only those
 * fields, compared as typed values, encoded as a body); the UUIDs of baseline entities that are
 * gone; and order records, a parent's children in order, only where appending the newcomers to
 * the baseline's order would not give today's order. Entities are named by UUID throughout,
 * never by handle or index.
 *
 * Loading decodes the whole file first, every count bounded by the bytes left and every body
 * by a scene's limits, then checks that it fits the world (the same scene, the entities it
 * names there, the spawned ones not) before touching anything. It applies in an order that
 * keeps each step valid: destroy, spawn (at the top level), rename, enable and reparent,
 * reorder, remove components (last first, so a requirer goes before what it requires), then add
 * and change. Every change journals its inverse (a command, or a field's old value), and the
 * first failure plays the journal backwards, so a save either applies whole or leaves the
 * world as it was. */
#include "base/util.h"
#include "base/vec.h"
#include "model/body.h"
#include "model/field.h"
#include "model/value.h"
#include "files/slotfile.h"
#include "files/features.h"
#include "files/save.h"
#include "files/save_async.h"
#include "files/scene_write.h"
#include "base/bytes.h"
#include "model/kind.h"
#include "model/record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAVE_NODE_DEPTH 64


/* ================================================================ the baseline */

/* The field keys and types of one kind as it was at capture (a kind may be redeclared later). */
typedef struct base_kind {
    keel_kind_id kind;
    size_t nf;
    char **keys;
    keel_type *types;
    bool *saved; /* not transient */
} base_kind;

typedef struct base_comp {
    char *key;
    uint32_t slot;
    int version;
    bool loaded, enabled;
    uint32_t bk;       /* loaded: index into the baseline's kinds */
    keel_value *vals;  /* loaded: one per field of bk (strings owned) */
    keel_node *body;   /* unknown: the preserved tree */
} base_comp;

typedef struct base_ent {
    keel_uuid uuid; /* nil: the scene root */
    char *name;
    keel_uuid parent; /* nil: top level */
    bool enabled;
    base_comp *comps;
    size_t ncomps;
    size_t *kids; /* baseline children in order (root: the top level) */
    size_t nkids;
} base_ent;

struct keel_baseline {
    _Atomic unsigned refs; /* the owner's, and each save job's still reading it */
    keel_uuid scene;
    base_kind *kinds;
    size_t nkinds;
    base_ent *ents; /* [0] is the root, then hierarchy pre-order */
    size_t count;
    size_t *sorted; /* indices sorted by UUID, for lookup */
};

static int uuid_cmp(const keel_uuid *a, const keel_uuid *b) { return memcmp(a->bytes, b->bytes, 16); }

static const keel_baseline *sort_base;
static int sorted_cmp(const void *a, const void *b)
{
    return uuid_cmp(&sort_base->ents[*(const size_t *)a].uuid, &sort_base->ents[*(const size_t *)b].uuid);
}

/* Index of the baseline entity with that UUID, or SIZE_MAX. */
static size_t base_find(const keel_baseline *b, keel_uuid u)
{
    size_t lo = 0, hi = b->count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = uuid_cmp(&b->ents[b->sorted[mid]].uuid, &u);
        if (c == 0) return b->sorted[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return SIZE_MAX;
}

static bool kind_saved(keel_kind_id k)
{
    const keel_kind_desc *desc = k ? keel_kind_describe(k) : NULL;
    return !desc || !(desc->flags & KEEL_KIND_NOSAVE);
}

static uint32_t base_kind_of(keel_baseline *b, keel_kind_id k)
{
    for (size_t i = 0; i < b->nkinds; i++)
        if (b->kinds[i].kind == k) return (uint32_t)i;
    const keel_kind_desc *desc = keel_kind_describe(k);
    b->kinds = keel__xrealloc(b->kinds, (b->nkinds + 1) * sizeof *b->kinds);
    base_kind *bk = &b->kinds[b->nkinds];
    bk->kind = k;
    bk->nf = desc->field_count;
    bk->keys = keel__xcalloc(bk->nf, sizeof *bk->keys);
    bk->types = keel__xcalloc(bk->nf, sizeof *bk->types);
    bk->saved = keel__xcalloc(bk->nf, sizeof *bk->saved);
    for (size_t f = 0; f < bk->nf; f++) {
        bk->keys[f] = keel__strdup(desc->fields[f].key);
        bk->types[f] = desc->fields[f].type;
        bk->saved[f] = !(desc->fields[f].flags & KEEL_FIELD_TRANSIENT);
    }
    return (uint32_t)b->nkinds++;
}

/* The entity's saved components as values (strings copied: the world may free them), or as a
 * preserved body for an unknown one. */
static void capture_comps(keel_baseline *b, const keel_world *w, keel_entity e, base_ent *be)
{
    size_t n = keel_member_count(w, e);
    be->comps = keel__xcalloc(n, sizeof *be->comps);
    for (size_t i = 0; i < n; i++) {
        keel_member m;
        if (!keel_member_at(w, e, i, &m) || (m.loaded && !kind_saved(m.kind))) continue;
        base_comp *bc = &be->comps[be->ncomps++];
        bc->key = keel__strdup(m.key);
        bc->slot = m.slot;
        bc->version = m.version;
        bc->loaded = m.loaded;
        bc->enabled = m.enabled;
        if (!m.loaded) {
            bc->body = m.preserved ? keel_node_copy(m.preserved) : keel_node_new_map();
            continue;
        }
        bc->bk = base_kind_of(b, m.kind);
        const base_kind *bk = &b->kinds[bc->bk];
        bc->vals = keel__xcalloc(bk->nf, sizeof *bc->vals);
        keel_comp c = { e, m.kind, m.slot };
        for (size_t f = 0; f < bk->nf; f++) {
            if (keel_get(w, c, (int)f, &bc->vals[f], NULL) != KEEL_OK) continue;
            if (bk->types[f] == KEEL_T_STRING) bc->vals[f].as.s = keel__strdup(bc->vals[f].as.s);
        }
    }
}

static keel_uuid parent_uuid(const keel_world *w, keel_entity e)
{
    keel_entity p = keel_entity_parent(w, e);
    return p ? keel_entity_uuid(w, p) : (keel_uuid){ { 0 } };
}

keel_baseline *keel_baseline_capture(const keel_world *w)
{
    if (!w || keel_world_in_callback(w)) return NULL; /* the state may still roll back */
    keel_baseline *b = keel__xcalloc(1, sizeof *b);
    b->refs = 1;
    b->scene = keel_world_uuid(w);
    size_t n = keel_world_entity_count(w) + 1;
    b->ents = keel__xcalloc(n, sizeof *b->ents);
    capture_comps(b, w, keel_world_root(w), &b->ents[0]);
    b->ents[0].name = keel__strdup("");
    b->ents[0].enabled = true;
    b->count = 1;
    for (keel_entity e = keel_next(w, 0); e && b->count < n; e = keel_next(w, e)) {
        base_ent *be = &b->ents[b->count++];
        be->uuid = keel_entity_uuid(w, e);
        be->name = keel__strdup(keel_entity_name(w, e));
        be->parent = parent_uuid(w, e);
        be->enabled = keel_entity_enabled(w, e);
        capture_comps(b, w, e, be);
    }
    b->sorted = keel__xrealloc(NULL, b->count * sizeof *b->sorted);
    for (size_t i = 0; i < b->count; i++) b->sorted[i] = i;
    sort_base = b;
    qsort(b->sorted, b->count, sizeof *b->sorted, sorted_cmp);
    /* children lists, in pre-order (= sibling order) */
    for (size_t i = 1; i < b->count; i++) {
        size_t p = keel_uuid_is_nil(b->ents[i].parent) ? 0 : base_find(b, b->ents[i].parent);
        if (p == SIZE_MAX) p = 0;
        base_ent *pe = &b->ents[p];
        pe->kids = keel__xrealloc(pe->kids, (pe->nkids + 1) * sizeof *pe->kids);
        pe->kids[pe->nkids++] = i;
    }
    return b;
}

keel_baseline *keel__baseline_retain(const keel_baseline *b)
{
    keel_baseline *m = (keel_baseline *)b; /* only the count changes; the rest stays immutable */
    m->refs++;
    return m;
}

keel_uuid keel__baseline_scene(const keel_baseline *b) { return b->scene; }

void keel_baseline_free(keel_baseline *b)
{
    if (!b || --b->refs > 0) return; /* a save job still reads it: the last one frees it */
    for (size_t i = 0; i < b->count; i++) {
        base_ent *be = &b->ents[i];
        for (size_t c = 0; c < be->ncomps; c++) {
            base_comp *bc = &be->comps[c];
            if (bc->vals)
                for (size_t f = 0; f < b->kinds[bc->bk].nf; f++)
                    if (b->kinds[bc->bk].types[f] == KEEL_T_STRING) free((char *)bc->vals[f].as.s);
            free(bc->vals);
            free(bc->key);
            keel_node_free(bc->body);
        }
        free(be->comps);
        free(be->kids);
        free(be->name);
    }
    for (size_t i = 0; i < b->nkinds; i++) {
        for (size_t f = 0; f < b->kinds[i].nf; f++) free(b->kinds[i].keys[f]);
        free(b->kinds[i].keys);
        free(b->kinds[i].types);
        free(b->kinds[i].saved);
    }
    free(b->kinds);
    free(b->ents);
    free(b->sorted);
    free(b);
}

/* ================================================================ the difference (saving) */

static const base_comp *base_comp_find(const base_ent *be, const char *key, uint32_t slot)
{
    for (size_t i = 0; i < be->ncomps; i++)
        if (be->comps[i].slot == slot && strcmp(be->comps[i].key, key) == 0) return &be->comps[i];
    return NULL;
}

static bool member_find(const keel_world *w, keel_entity e, const char *key, uint32_t slot, keel_member *out)
{
    size_t n = keel_member_count(w, e);
    for (size_t i = 0; i < n; i++)
        if (keel_member_at(w, e, i, out) && out->slot == slot && strcmp(out->key, key) == 0) return true;
    return false;
}

/* An OP_ADD: the whole component, so loading needs nothing from the baseline to rebuild it. */
static void write_add(keel__buf *b, const keel_world *w, keel_entity e, const keel_member *m)
{
    keel__buf_u8(b, OP_ADD);
    keel__buf_str(b, m->key);
    keel__buf_u32(b, m->slot);
    keel__buf_u32(b, (uint32_t)m->version);
    keel__buf_u8(b, m->loaded ? 1 : 0);
    keel__buf_u8(b, m->enabled ? 1 : 0);
    if (m->loaded) {
        /* a save game keeps runtime fields, which a scene file leaves out */
        keel_node *body = keel__body_encode(m->kind, keel_record(w, (keel_comp){ e, m->kind, m->slot }), KEEL_FIELD_TRANSIENT);
        keel__save_canon(body);
        keel__buf_node(b, body);
        keel_node_free(body);
    } else if (m->preserved) {
        keel__buf_node(b, m->preserved); /* an unknown body keeps every style as written */
    } else {
        keel_node *empty = keel_node_new_map();
        keel__buf_node(b, empty);
        keel_node_free(empty);
    }
}


/* The saved fields of a live component that differ from the baseline, as a MAP of encoded values.
 * Values are compared typed; only a component with a difference is encoded. */
static keel_node *changed_fields(const keel_baseline *base, const base_comp *bc, const keel_world *w, keel_comp c)
{
    const base_kind *bk = &base->kinds[bc->bk];
    const keel_kind_desc *desc = keel_kind_describe(c.kind);
    bool *diff = keel__xcalloc(desc->field_count, sizeof *diff);
    size_t ndiff = 0;
    for (size_t f = 0; f < desc->field_count; f++) {
        const keel_field_desc *fd = &desc->fields[f];
        if (fd->flags & KEEL_FIELD_TRANSIENT) continue;
        size_t bf = f < bk->nf && strcmp(bk->keys[f], fd->key) == 0 ? f : SIZE_MAX;
        for (size_t i = 0; bf == SIZE_MAX && i < bk->nf; i++)
            if (strcmp(bk->keys[i], fd->key) == 0) bf = i;
        keel_value v;
        if (bf == SIZE_MAX || bk->types[bf] != fd->type || keel_get(w, c, (int)f, &v, NULL) != KEEL_OK ||
            !keel__value_equal(&v, &bc->vals[bf])) {
            diff[f] = true;
            ndiff++;
        }
    }
    keel_node *delta = keel_node_new_map();
    if (ndiff) {
        keel_node *body = keel__body_encode(c.kind, keel_record(w, c), KEEL_FIELD_TRANSIENT);
        for (size_t f = 0; f < desc->field_count; f++) {
            const keel_node *v = diff[f] ? keel_node_get(body, desc->fields[f].key) : NULL;
            if (v) keel_node_put(delta, desc->fields[f].key, keel_node_copy(v));
        }
        keel_node_free(body);
    }
    free(diff);
    return delta;
}

/* Components of one entity: removed (key + slot), added (whole), changed (fields that differ). */
static void diff_comps(keel__buf *rem, keel__buf *comps, uint32_t *nrem, uint32_t *ncomps, const keel_world *w,
                       keel_entity e, const keel_baseline *base, const base_ent *be)
{
    size_t n = keel_member_count(w, e);
    keel_member *cur = keel__xcalloc(n, sizeof *cur);
    size_t nc = 0;
    for (size_t i = 0; i < n; i++)
        if (keel_member_at(w, e, i, &cur[nc]) && (!cur[nc].loaded || kind_saved(cur[nc].kind))) nc++;
    if (be) {
        for (size_t i = 0; i < be->ncomps; i++) {
            const base_comp *bc = &be->comps[i];
            bool kept = false;
            for (size_t j = 0; j < nc && !kept; j++)
                kept = cur[j].slot == bc->slot && strcmp(cur[j].key, bc->key) == 0 && cur[j].loaded == bc->loaded &&
                       (bc->loaded || !cur[j].preserved || keel_node_equal(cur[j].preserved, bc->body));
            if (!kept) {
                keel__buf_str(rem, bc->key);
                keel__buf_u32(rem, bc->slot);
                (*nrem)++;
            }
        }
    }
    for (size_t j = 0; j < nc; j++) {
        const keel_member *m = &cur[j];
        const base_comp *bc = be ? base_comp_find(be, m->key, m->slot) : NULL;
        if (bc && bc->loaded != m->loaded) bc = NULL;
        if (!bc) {
            write_add(comps, w, e, m);
            (*ncomps)++;
            continue;
        }
        if (!m->loaded) {
            if (m->preserved && !keel_node_equal(m->preserved, bc->body)) {
                /* an unknown body cannot change in place; carry it through whole */
                write_add(comps, w, e, m);
                (*ncomps)++;
            }
            continue;
        }
        keel_node *delta = changed_fields(base, bc, w, (keel_comp){ e, m->kind, m->slot });
        if (delta->count || m->enabled != bc->enabled || m->version != bc->version) {
            keel__buf_u8(comps, OP_CHANGE);
            keel__buf_str(comps, m->key);
            keel__buf_u32(comps, m->slot);
            keel__buf_u32(comps, (uint32_t)m->version);
            keel__buf_u8(comps, m->enabled ? 1 : 0);
            keel__save_canon(delta);
            keel__buf_node(comps, delta);
            (*ncomps)++;
        }
        keel_node_free(delta);
    }
    free(cur);
}

/* One entity record; returns whether anything was written. */
static bool diff_entity(keel__buf *out, const keel_world *w, const keel_baseline *base, keel_entity e, bool root)
{
    const base_ent *be = root ? &base->ents[0] : NULL;
    keel_uuid u = root ? (keel_uuid){ { 0 } } : keel_entity_uuid(w, e);
    if (!root) {
        size_t bi = base_find(base, u);
        be = bi == SIZE_MAX || bi == 0 ? NULL : &base->ents[bi];
    }
    uint8_t flags = 0;
    const char *name = root ? "" : keel_entity_name(w, e);
    bool enabled = root ? true : keel_entity_enabled(w, e);
    keel_uuid parent = root ? (keel_uuid){ { 0 } } : parent_uuid(w, e);
    if (!be) flags = REC_SPAWNED | REC_NAME | REC_ENABLED | REC_PARENT;
    else if (!root) {
        if (strcmp(be->name, name) != 0) flags |= REC_NAME;
        if (be->enabled != enabled) flags |= REC_ENABLED;
        if (!keel_uuid_equal(be->parent, parent)) flags |= REC_PARENT;
    }
    keel__buf rem = { 0 }, comps = { 0 };
    uint32_t nrem = 0, ncomps = 0;
    diff_comps(&rem, &comps, &nrem, &ncomps, w, e, base, be);
    bool any = flags || nrem || ncomps;
    if (any) {
        keel__buf_uuid(out, u);
        keel__buf_u8(out, flags);
        if (flags & REC_NAME) keel__buf_str(out, name);
        if (flags & REC_ENABLED) keel__buf_u8(out, enabled ? 1 : 0);
        if (flags & REC_PARENT) keel__buf_uuid(out, parent);
        keel__buf_u32(out, nrem);
        keel__buf_bytes(out, rem.p, rem.len);
        keel__buf_u32(out, ncomps);
        keel__buf_bytes(out, comps.p, comps.len);
    }
    free(rem.p);
    free(comps.p);
    return any;
}

/* Sibling order: recorded for a parent only when reparenting its newcomers (in run order) to the end
 * would not give the current order. `cur` holds the parent's children in order. */
static bool order_record(keel__buf *out, const keel_world *w, const keel_baseline *base, keel_entity pe,
                         const keel_entity *cur, size_t n)
{
    if (n == 0) return false;
    keel_uuid pu = pe ? keel_entity_uuid(w, pe) : (keel_uuid){ { 0 } };
    keel_entity *want = keel__xrealloc(NULL, n * sizeof *want);
    size_t nw = 0;
    size_t bi = pe ? base_find(base, pu) : 0;
    if (bi != SIZE_MAX) {
        const base_ent *bp = &base->ents[bi];
        for (size_t i = 0; i < bp->nkids && nw < n; i++) {
            keel_entity k = keel_find(w, base->ents[bp->kids[i]].uuid);
            if (k && keel_entity_parent(w, k) == pe) want[nw++] = k;
        }
    }
    /* newcomers as loading appends them: the spawned ones' records come first, then the moved ones' */
    for (size_t i = 0; i < n && nw < n; i++)
        if (base_find(base, keel_entity_uuid(w, cur[i])) == SIZE_MAX) want[nw++] = cur[i];
    for (size_t i = 0; i < n && nw < n; i++) {
        size_t ki = base_find(base, keel_entity_uuid(w, cur[i]));
        if (ki != SIZE_MAX && (ki == 0 || !keel_uuid_equal(base->ents[ki].parent, pu))) want[nw++] = cur[i];
    }
    bool same = nw == n && memcmp(cur, want, n * sizeof *cur) == 0;
    if (!same) {
        keel__buf_uuid(out, pu);
        keel__buf_u32(out, (uint32_t)n);
        for (size_t i = 0; i < n; i++) keel__buf_uuid(out, keel_entity_uuid(w, cur[i]));
    }
    free(want);
    return !same;
}

/* Children lists of every parent from one pre-order walk (keel_entity_child is a list walk). */
typedef struct tree {
    keel_entity *ents;  /* run order */
    size_t count;
    size_t *start;      /* children of run-order entity i (i+1; 0 = top level): kids[start[i]..start[i+1]) */
    keel_entity *kids;
} tree;

static void tree_build(const keel_world *w, tree *t)
{
    size_t cap = keel_world_entity_count(w) + 1, n = 0;
    t->ents = keel__xrealloc(NULL, cap * sizeof *t->ents);
    size_t *parent = keel__xrealloc(NULL, cap * sizeof *parent), *stack = keel__xrealloc(NULL, cap * sizeof *stack);
    size_t depth = 0;
    for (keel_entity e = keel_next(w, 0); e && n < cap; e = keel_next(w, e), n++) {
        keel_entity p = keel_entity_parent(w, e);
        while (depth > 0 && t->ents[stack[depth - 1]] != p) depth--;
        parent[n] = depth > 0 ? stack[depth - 1] + 1 : 0;
        t->ents[n] = e;
        stack[depth++] = n;
    }
    t->count = n;
    t->start = keel__xcalloc(n + 2, sizeof *t->start);
    t->kids = keel__xrealloc(NULL, n * sizeof *t->kids);
    for (size_t i = 0; i < n; i++) t->start[parent[i] + 1]++;
    for (size_t i = 1; i < n + 2; i++) t->start[i] += t->start[i - 1];
    size_t *fill = keel__xrealloc(NULL, (n + 1) * sizeof *fill);
    memcpy(fill, t->start, (n + 1) * sizeof *fill);
    for (size_t i = 0; i < n; i++) t->kids[fill[parent[i]]++] = t->ents[i];
    free(fill);
    free(parent);
    free(stack);
}

static void tree_free(tree *t)
{
    free(t->ents);
    free(t->start);
    free(t->kids);
}

/* The state a slot file holds: scene UUID, entity records, destroyed UUIDs, order records, each
 * list counted first (built in buffers of their own, since the counts are known only after). */
void keel__persist_encode(const keel_world *w, const keel_baseline *base, keel__buf *b)
{
    keel__buf_uuid(b, keel_world_uuid(w));
    keel__buf recs = { 0 }, dead = { 0 }, orders = { 0 };
    uint32_t nrecs = 0, ndead = 0, norders = 0;
    tree t;
    tree_build(w, &t);
    /* records: the root's, then the spawned entities', then the changed ones' (each in run order),
     * the order the text form lists them in (save_text.c) */
    if (diff_entity(&recs, w, base, keel_world_root(w), true)) nrecs++;
    for (int spawned = 1; spawned >= 0; spawned--)
        for (size_t i = 0; i < t.count; i++) {
            size_t bi = base_find(base, keel_entity_uuid(w, t.ents[i]));
            if ((bi == SIZE_MAX) == (spawned == 1) && diff_entity(&recs, w, base, t.ents[i], false)) nrecs++;
        }
    if (order_record(&orders, w, base, KEEL_NO_ENTITY, t.kids, t.start[1])) norders++;
    for (size_t i = 0; i < t.count; i++)
        if (order_record(&orders, w, base, t.ents[i], t.kids + t.start[i + 1], t.start[i + 2] - t.start[i + 1]))
            norders++;
    tree_free(&t);
    for (size_t i = 1; i < base->count; i++)
        if (!keel_find(w, base->ents[i].uuid)) {
            keel__buf_uuid(&dead, base->ents[i].uuid);
            ndead++;
        }
    keel__buf_u32(b, nrecs);
    keel__buf_bytes(b, recs.p, recs.len);
    keel__buf_u32(b, ndead);
    keel__buf_bytes(b, dead.p, dead.len);
    keel__buf_u32(b, norders);
    keel__buf_bytes(b, orders.p, orders.len);
    /* the world's random generator, once seeded or drawn (an older save ends before it) */
    int64_t seed;
    uint64_t rs[4];
    if (keel_random_state(w, &seed, rs)) {
        keel__buf_u8(b, 1);
        keel__buf_u64(b, (uint64_t)seed);
        for (int i = 0; i < 4; i++) keel__buf_u64(b, rs[i]);
    }
    free(recs.p);
    free(dead.p);
    free(orders.p);
}

keel_status keel_persist_save(const keel_world *w, const keel_baseline *base, const char *path,
                              const keel_slot_info *info, keel_diags *d)
{
    if (!w || !base || !path) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel_persist_save: NULL argument");
    if (keel_world_in_callback(w))
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "keel_persist_save refuses while a callback transaction is open");
    if (keel_world_lift_count(w))
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "keel_persist_save refuses while entities are lifted (restore or discard them)");
    if (!keel_uuid_equal(keel_world_uuid(w), base->scene)) {
        char a[37], b[37];
        keel_uuid_format(base->scene, a);
        keel_uuid_format(keel_world_uuid(w), b);
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "the baseline is of scene %s, the world is scene %s", a, b);
    }
    if (keel__job_path_pending(path))
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s has a save job still pending", path);
    keel__buf state = { 0 };
    keel__persist_encode(w, base, &state);
    keel_status s = keel__slot_write(path, info, &state, d);
    free(state.p);
    return s;
}

/* ================================================================ the difference (loading) */

typedef keel__save_comp s_comp;
typedef keel__save_rem s_rem;
typedef keel__save_ent s_ent;
typedef keel__save_order s_order;
typedef keel__save_state state;

void keel__save_state_free(state *st)
{
    for (uint32_t i = 0; i < st->nents; i++) {
        s_ent *e = &st->ents[i];
        free(e->name);
        for (uint32_t j = 0; j < e->nrem; j++) free(e->rem[j].key);
        for (uint32_t j = 0; j < e->ncomps; j++) {
            free(e->comps[j].key);
            keel_node_free(e->comps[j].body);
        }
        free(e->rem);
        free(e->comps);
    }
    free(st->ents);
    free(st->dead);
    for (uint32_t i = 0; i < st->norders; i++) free(st->orders[i].kids);
    free(st->orders);
}

/* encode_state read back; the first problem stops it, in r->err. Counts are checked against the
 * bytes left (the smallest record's size each) before anything is allocated for them. */
void keel__save_state_decode(keel__rd *r, state *st)
{
    st->scene = keel__rd_uuid(r, "truncated state");
    st->nents = keel__rd_count(r, 25, "truncated entity records");
    st->ents = keel__xcalloc(st->nents, sizeof *st->ents);
    for (uint32_t i = 0; i < st->nents && !r->err; i++) {
        s_ent *e = &st->ents[i];
        e->uuid = keel__rd_uuid(r, "truncated entity record");
        e->flags = keel__rd_u8(r, "truncated entity record");
        if (e->flags & ~(REC_SPAWNED | REC_NAME | REC_ENABLED | REC_PARENT)) r->err = "unknown entity record flags";
        if ((e->flags & REC_SPAWNED) && e->flags != (REC_SPAWNED | REC_NAME | REC_ENABLED | REC_PARENT))
            r->err = "a spawned entity record is incomplete";
        if (keel_uuid_is_nil(e->uuid) && e->flags) r->err = "the scene root record has entity flags";
        if (e->flags & REC_NAME) e->name = keel__rd_str(r, "truncated entity name");
        if (e->flags & REC_ENABLED) e->enabled = keel__rd_bool(r, "truncated entity record");
        if (e->flags & REC_PARENT) e->parent = keel__rd_uuid(r, "truncated entity parent");
        e->nrem = keel__rd_count(r, 8, "truncated removals");
        e->rem = keel__xcalloc(e->nrem, sizeof *e->rem);
        for (uint32_t j = 0; j < e->nrem && !r->err; j++) {
            e->rem[j].key = keel__rd_str(r, "truncated removal");
            e->rem[j].slot = keel__rd_u32(r, "truncated removal");
        }
        e->ncomps = keel__rd_count(r, 21, "truncated components");
        e->comps = keel__xcalloc(e->ncomps, sizeof *e->comps);
        for (uint32_t j = 0; j < e->ncomps && !r->err; j++) {
            s_comp *c = &e->comps[j];
            c->op = keel__rd_u8(r, "truncated component");
            if (!r->err && c->op != OP_ADD && c->op != OP_CHANGE) r->err = "unknown component operation";
            c->key = keel__rd_str(r, "truncated component key");
            c->slot = keel__rd_u32(r, "truncated component");
            uint32_t v = keel__rd_u32(r, "truncated component");
            if (!r->err && (v < 1 || v > INT32_MAX)) r->err = "a component version is out of range";
            c->version = (int)v;
            if (c->op == OP_ADD) c->loaded = keel__rd_bool(r, "truncated component");
            c->enabled = keel__rd_bool(r, "truncated component");
            if (r->err) break;
            c->body = keel__rd_node(r, 0, SAVE_NODE_DEPTH);
            if (c->body && c->body->kind != KEEL_NODE_MAP && !r->err) r->err = "a component body is not a map";
            const char *why = c->body && !r->err ? keel__body_over_limits(c->body) : NULL;
            if (why) { /* what a scene file could not hold */
                r->err = why;
                r->limit = true;
            }
            if (!r->err && c->key && !keel__kind_key_valid(c->key)) r->err = "a kind key is malformed";
        }
    }
    if (r->err) return;
    st->ndead = keel__rd_count(r, 16, "truncated destroyed list");
    st->dead = keel__xcalloc(st->ndead, sizeof *st->dead);
    for (uint32_t i = 0; i < st->ndead && !r->err; i++) st->dead[i] = keel__rd_uuid(r, "truncated destroyed list");
    st->norders = keel__rd_count(r, 20, "truncated order records");
    st->orders = keel__xcalloc(st->norders, sizeof *st->orders);
    for (uint32_t i = 0; i < st->norders && !r->err; i++) {
        s_order *o = &st->orders[i];
        o->parent = keel__rd_uuid(r, "truncated order record");
        o->n = keel__rd_count(r, 16, "truncated order record");
        o->kids = keel__xcalloc(o->n, sizeof *o->kids);
        for (uint32_t j = 0; j < o->n && !r->err; j++) o->kids[j] = keel__rd_uuid(r, "truncated order record");
    }
    if (!r->err && r->pos < r->len && keel__rd_u8(r, "truncated random state") == 1) {
        st->has_random = true;
        st->seed = (int64_t)keel__rd_u64(r, "truncated random state");
        for (int i = 0; i < 4; i++) st->rs[i] = keel__rd_u64(r, "truncated random state");
        if (!r->err && !(st->rs[0] | st->rs[1] | st->rs[2] | st->rs[3])) r->err = "a random state of all zeros";
    } else if (!r->err && r->pos != r->len) {
        r->err = "bad random state marker";
    }
    if (!r->err && r->pos != r->len) r->err = "trailing bytes after the state";
}

/* Reads, checks (CRC, structure) and decodes a whole slot file. */
static keel_status read_save(const char *path, state *st, keel_diags *d)
{
    uint8_t *raw = NULL;
    size_t len = 0;
    keel_status s = keel__slot_read(path, &raw, &len, d);
    if (s != KEEL_OK) return s;
    keel__rd r = { raw, len, 0, NULL, false };
    keel__save_state_decode(&r, st);
    free(raw);
    if (r.err)
        return keel_diag_add(d, KEEL_SEV_ERROR, r.limit ? KEEL_LIMIT_EXCEEDED : KEEL_PARSE_ERROR, "", path, 0, 0,
                             "save file: %s", r.err);
    return KEEL_OK;
}

/* ---- applying, all or nothing: every change journals how to undo it ---- */

typedef struct jentry {
    bool is_field;
    bool on_root;  /* inverses name entities by UUID, and the root has none: undone here */
    keel_cmd cmd;  /* the inverse of a command */
    keel_comp comp;
    int field;
    keel_value old;
    char *old_str;
} jentry;

typedef struct journal {
    jentry *items;
    size_t count, cap;
} journal;

static jentry *journal_push(journal *j)
{
    KEEL__VEC_RESERVE(j->items, j->count, j->cap, 1, 64);
    jentry *e = &j->items[j->count++];
    memset(e, 0, sizeof *e);
    return e;
}

static void journal_cmd(journal *j, keel_cmd *inv)
{
    jentry *e = journal_push(j);
    e->cmd = *inv;
    memset(inv, 0, sizeof *inv);
}

static void journal_root_cmd(journal *j, keel_cmd *inv)
{
    journal_cmd(j, inv);
    j->items[j->count - 1].on_root = true;
}

/* The inverse of a component command on the scene root, applied to the root's handle. */
static void undo_on_root(keel_world *w, const keel_cmd *cmd)
{
    keel_entity root = keel_world_root(w);
    keel_kind_id k = cmd->kind_key ? keel_kind_find(cmd->kind_key) : KEEL_NO_KIND;
    keel_comp c;
    if (cmd->type == KEEL_CMD_REMOVE) {
        keel_remove(w, root, cmd->kind_key, cmd->slot, NULL, NULL);
    } else if (cmd->type == KEEL_CMD_ADD) {
        if (k && cmd->version <= keel_kind_describe(k)->version) {
            keel_add_opts o = KEEL_ADD_OPTS_INIT;
            o.slot = cmd->slot;
            o.body = cmd->tree;
            o.version = cmd->version;
            keel_add(w, root, k, &o, NULL, NULL, NULL);
        } else {
            keel_add_unknown(w, root, cmd->kind_key, cmd->version, cmd->slot, cmd->tree, NULL);
        }
    } else if (cmd->type == KEEL_CMD_ENABLE_COMPONENT && keel_get_comp(w, root, k, cmd->slot, &c)) {
        keel_comp_set_enabled(w, c, cmd->enabled, NULL, NULL);
    }
}

/* Undoes the journal newest first, each inverse against the state it was recorded in. */
static void journal_rollback(keel_world *w, journal *j)
{
    for (size_t i = j->count; i-- > 0;) {
        jentry *e = &j->items[i];
        if (e->is_field) {
            if (e->old_str) e->old.as.s = e->old_str;
            keel__field_set(w, e->comp, e->field, &e->old, true, NULL, NULL);
        } else if (e->on_root) {
            undo_on_root(w, &e->cmd);
        } else {
            keel_cmd_apply(w, &e->cmd, NULL, NULL);
        }
    }
}

static void journal_free(journal *j)
{
    for (size_t i = 0; i < j->count; i++) {
        keel_cmd_free(&j->items[i].cmd);
        free(j->items[i].old_str);
    }
    free(j->items);
}

static keel_entity resolve(const keel_world *w, keel_uuid u)
{
    return keel_uuid_is_nil(u) ? keel_world_root(w) : keel_find(w, u);
}

/* Field changes: the saved fields decoded (migrated when older) over a copy of the live record,
 * then every field that came out different written through the registry. */
static keel_status apply_fields(keel_world *w, keel_comp c, const s_comp *sc, const char *path, journal *j,
                                keel_diags *d)
{
    void *live = keel_record(w, c);
    if (!live) return KEEL_ERROR(d, KEEL_NOT_FOUND, path, "%s slot %u is not live", sc->key, sc->slot);
    size_t size = keel_kind_record_size(c.kind);
    void *scratch = keel__xcalloc(1, size);
    keel__record_copy(c.kind, scratch, live);
    keel_status s = keel__body_decode(c.kind, sc->body, sc->version, false, scratch, path, NULL, d);
    const keel_kind_desc *desc = keel_kind_describe(c.kind);
    /* A validate hook may tie fields together (inner_angle <= outer_angle): a write it rejects is
     * retried after the others, for as long as some write succeeds. */
    bool *pending = keel__xcalloc(desc->field_count, sizeof *pending);
    size_t left = 0;
    for (size_t f = 0; s == KEEL_OK && f < desc->field_count; f++) {
        keel_value nv, ov;
        keel__record_get(c.kind, scratch, (int)f, &nv);
        keel__record_get(c.kind, live, (int)f, &ov);
        if (!keel__value_equal(&nv, &ov)) pending[f] = true, left++;
    }
    keel_diags last;
    keel_diags_init(&last);
    for (bool progress = true; s == KEEL_OK && left && progress;) {
        progress = false;
        keel_diags_free(&last);
        keel_diags_init(&last);
        for (size_t f = 0; f < desc->field_count; f++) {
            if (!pending[f]) continue;
            keel_value nv, ov;
            keel__record_get(c.kind, scratch, (int)f, &nv);
            keel__record_get(c.kind, keel_record(w, c), (int)f, &ov);
            jentry *e = journal_push(j);
            e->is_field = true;
            e->comp = c;
            e->field = (int)f;
            e->old = ov;
            if (ov.type == KEEL_T_STRING) e->old_str = keel__strdup(ov.as.s);
            if (keel__field_set(w, c, (int)f, &nv, true, NULL, &last) == KEEL_OK) {
                pending[f] = false;
                left--;
                progress = true;
            } else {
                free(e->old_str);
                j->count--;
            }
        }
    }
    if (s == KEEL_OK && left) s = keel_diags_status(&last);
    keel_diags_append(d, &last, path);
    keel_diags_free(&last);
    free(pending);
    keel__record_fini(c.kind, scratch);
    free(scratch);
    return s;
}

/* One component record: an add goes through keel_add (migrating an older body) or, for a kind
 * not declared or newer than declared here, keel_add_unknown; a change must find the component. */
static keel_status apply_comp(keel_world *w, s_ent *e, const s_comp *sc, const char *path, journal *j,
                              keel_diags *d)
{
    keel_cmd inv;
    memset(&inv, 0, sizeof inv);
    void (*record)(journal *, keel_cmd *) = e->h == keel_world_root(w) ? journal_root_cmd : journal_cmd;
    keel_kind_id k = keel_kind_find(sc->key);
    const keel_kind_desc *desc = k ? keel_kind_describe(k) : NULL;
    keel_status s;
    if (sc->op == OP_ADD) {
        if (!desc || sc->version > desc->version) {
            s = keel_add_unknown(w, e->h, sc->key, sc->version, sc->slot, sc->body, d);
            if (s == KEEL_OK) {
                inv.type = KEEL_CMD_REMOVE;
                inv.entity = e->uuid;
                inv.kind_key = keel__strdup(sc->key);
                inv.slot = sc->slot;
                record(j, &inv);
            }
            return s;
        }
        keel_add_opts o = KEEL_ADD_OPTS_INIT;
        o.slot = sc->slot;
        o.body = sc->body;
        o.version = sc->version;
        o.path = path;
        keel_comp c;
        s = keel_add(w, e->h, k, &o, &c, &inv, d);
        if (s != KEEL_OK) return s;
        record(j, &inv);
        if (!sc->enabled) {
            s = keel_comp_set_enabled(w, c, false, &inv, d);
            if (s == KEEL_OK) record(j, &inv);
        }
        return s;
    }
    keel_comp c;
    if (!desc || !keel_get_comp(w, e->h, k, sc->slot, &c) || c.slot != sc->slot)
        return KEEL_ERROR(d, KEEL_NOT_FOUND, path, "%s slot %u is not in this world", sc->key, sc->slot);
    if (keel_comp_enabled(w, c) != sc->enabled) {
        s = keel_comp_set_enabled(w, c, sc->enabled, &inv, d);
        if (s != KEEL_OK) return s;
        record(j, &inv);
    }
    return apply_fields(w, c, sc, path, j, d);
}

/* Checks that the save fits this world before touching it. */
static keel_status check_state(const keel_world *w, const state *st, keel_diags *d)
{
    char a[37];
    if (!keel_uuid_equal(st->scene, keel_world_uuid(w))) {
        char b[37];
        keel_uuid_format(st->scene, a);
        keel_uuid_format(keel_world_uuid(w), b);
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "the save is of scene %s, the world is scene %s", a, b);
    }
    for (uint32_t i = 0; i < st->ndead; i++)
        if (!keel_find(w, st->dead[i])) {
            keel_uuid_format(st->dead[i], a);
            KEEL_ERROR(d, KEEL_NOT_FOUND, "destroyed", "entity %s is not in this world", a);
        }
    for (uint32_t i = 0; i < st->nents; i++) {
        const s_ent *e = &st->ents[i];
        keel_uuid_format(e->uuid, a);
        bool there = resolve(w, e->uuid) != KEEL_NO_ENTITY;
        if ((e->flags & REC_SPAWNED) && there)
            KEEL_ERROR(d, KEEL_INVALID_OPERATION, "entities", "spawned entity %s is already in this world", a);
        if (!(e->flags & REC_SPAWNED) && !there)
            KEEL_ERROR(d, KEEL_NOT_FOUND, "entities", "entity %s is not in this world", a);
        if (!(e->flags & REC_SPAWNED))
            for (uint32_t r = 0; r < e->nrem; r++) {
                keel_member m;
                if (!member_find(w, resolve(w, e->uuid), e->rem[r].key, e->rem[r].slot, &m))
                    KEEL_ERROR(d, KEEL_NOT_FOUND, "entities", "%s slot %u of entity %s is not in this world",
                               e->rem[r].key, e->rem[r].slot, a);
            }
    }
    return keel_diags_status(d);
}

/* The decoded state onto `w` in an order where each step finds what it needs (see the top of the
 * file); stops at the first failure and leaves the undoing to the caller's journal. */
static keel_status apply_state(keel_world *w, state *st, journal *j, keel_diags *d)
{
    keel_cmd inv;
    memset(&inv, 0, sizeof inv);
    keel_status s = KEEL_OK;
    for (uint32_t i = 0; i < st->ndead && s == KEEL_OK; i++) {
        s = keel_destroy(w, keel_find(w, st->dead[i]), &inv, d);
        if (s == KEEL_OK) journal_cmd(j, &inv);
    }
    for (uint32_t i = 0; i < st->nents && s == KEEL_OK; i++) {
        s_ent *e = &st->ents[i];
        if (!(e->flags & REC_SPAWNED)) continue;
        s = keel_spawn(w, e->name, KEEL_NO_ENTITY, &e->uuid, &e->h, &inv, d);
        if (s == KEEL_OK) journal_cmd(j, &inv);
    }
    for (uint32_t i = 0; i < st->nents && s == KEEL_OK; i++) {
        s_ent *e = &st->ents[i];
        e->h = resolve(w, e->uuid);
        if (!(e->flags & REC_SPAWNED) && (e->flags & REC_NAME)) {
            s = keel_rename(w, e->h, e->name, &inv, d);
            if (s == KEEL_OK) journal_cmd(j, &inv);
        }
        if (s == KEEL_OK && (e->flags & REC_ENABLED) && keel_entity_enabled(w, e->h) != e->enabled) {
            s = keel_set_enabled(w, e->h, e->enabled, &inv, d);
            if (s == KEEL_OK) journal_cmd(j, &inv);
        }
        if (s == KEEL_OK && (e->flags & REC_PARENT)) {
            keel_entity p = keel_uuid_is_nil(e->parent) ? KEEL_NO_ENTITY : keel_find(w, e->parent);
            if (!keel_uuid_is_nil(e->parent) && !p) {
                char a[37];
                keel_uuid_format(e->parent, a);
                s = KEEL_ERROR(d, KEEL_NOT_FOUND, "entities", "parent %s is not in this world", a);
            } else {
                s = keel_reparent(w, e->h, p, &inv, d);
                if (s == KEEL_OK) journal_cmd(j, &inv);
            }
        }
    }
    for (uint32_t i = 0; i < st->norders && s == KEEL_OK; i++) {
        const s_order *o = &st->orders[i];
        keel_entity p = keel_uuid_is_nil(o->parent) ? KEEL_NO_ENTITY : keel_find(w, o->parent);
        if (!keel_uuid_is_nil(o->parent) && !p) s = KEEL_ERROR(d, KEEL_NOT_FOUND, "order", "an ordered parent is missing");
        for (uint32_t k = 0; k < o->n && s == KEEL_OK; k++) {
            keel_entity c = keel_find(w, o->kids[k]);
            if (!c) s = KEEL_ERROR(d, KEEL_NOT_FOUND, "order", "an ordered child is missing");
            else s = keel_reparent(w, c, p, &inv, d);
            if (s == KEEL_OK) journal_cmd(j, &inv);
        }
    }
    /* removals first (last added first, so requirers go before what they require), then adds and changes */
    for (uint32_t i = 0; i < st->nents && s == KEEL_OK; i++) {
        s_ent *e = &st->ents[i];
        for (uint32_t r = e->nrem; r-- > 0 && s == KEEL_OK;) {
            s = keel_remove(w, e->h, e->rem[r].key, e->rem[r].slot, &inv, d);
            if (s == KEEL_OK && e->h == keel_world_root(w)) journal_root_cmd(j, &inv);
            else if (s == KEEL_OK) journal_cmd(j, &inv);
        }
    }
    for (uint32_t i = 0; i < st->nents && s == KEEL_OK; i++) {
        s_ent *e = &st->ents[i];
        for (uint32_t c = 0; c < e->ncomps && s == KEEL_OK; c++) {
            char path[96];
            snprintf(path, sizeof path, "entities[%u].components[%u].body", i, c);
            s = apply_comp(w, e, &e->comps[c], path, j, d);
        }
    }
    if (s != KEEL_OK) keel_cmd_free(&inv);
    return s;
}

keel_status keel__save_state_apply(keel_world *w, keel__save_state *st, keel_diags *d)
{
    keel_status s = check_state(w, st, d);
    if (s == KEEL_OK) {
        journal j = { 0 };
        s = apply_state(w, st, &j, d);
        if (s == KEEL_OK && st->has_random) keel_random_set_state(w, st->seed, st->rs, NULL);
        if (s != KEEL_OK) journal_rollback(w, &j);
        journal_free(&j);
    }
    return s;
}

/* keel__save_state_decode written back: the same bytes for a state it read. */
void keel__save_state_encode(const keel__save_state *st, keel__buf *b)
{
    keel__buf_uuid(b, st->scene);
    keel__buf_u32(b, st->nents);
    for (uint32_t i = 0; i < st->nents; i++) {
        const s_ent *e = &st->ents[i];
        keel__buf_uuid(b, e->uuid);
        keel__buf_u8(b, e->flags);
        if (e->flags & REC_NAME) keel__buf_str(b, e->name ? e->name : "");
        if (e->flags & REC_ENABLED) keel__buf_u8(b, e->enabled ? 1 : 0);
        if (e->flags & REC_PARENT) keel__buf_uuid(b, e->parent);
        keel__buf_u32(b, e->nrem);
        for (uint32_t j = 0; j < e->nrem; j++) {
            keel__buf_str(b, e->rem[j].key);
            keel__buf_u32(b, e->rem[j].slot);
        }
        keel__buf_u32(b, e->ncomps);
        for (uint32_t j = 0; j < e->ncomps; j++) {
            const s_comp *c = &e->comps[j];
            keel__buf_u8(b, c->op);
            keel__buf_str(b, c->key);
            keel__buf_u32(b, c->slot);
            keel__buf_u32(b, (uint32_t)c->version);
            if (c->op == OP_ADD) keel__buf_u8(b, c->loaded ? 1 : 0);
            keel__buf_u8(b, c->enabled ? 1 : 0);
            keel__buf_node(b, c->body);
        }
    }
    keel__buf_u32(b, st->ndead);
    for (uint32_t i = 0; i < st->ndead; i++) keel__buf_uuid(b, st->dead[i]);
    keel__buf_u32(b, st->norders);
    for (uint32_t i = 0; i < st->norders; i++) {
        keel__buf_uuid(b, st->orders[i].parent);
        keel__buf_u32(b, st->orders[i].n);
        for (uint32_t k = 0; k < st->orders[i].n; k++) keel__buf_uuid(b, st->orders[i].kids[k]);
    }
    if (st->has_random) {
        keel__buf_u8(b, 1);
        keel__buf_u64(b, (uint64_t)st->seed);
        for (int i = 0; i < 4; i++) keel__buf_u64(b, st->rs[i]);
    }
}

/* Styles a body keeps through its text form and back: quoted scalars double-quoted, a writer's
 * choice (ANY) plain when it reads back as the same string, else double-quoted, an empty plain
 * scalar `null`; sequences of scalars (and empty collections) in flow style, the rest block. */
void keel__save_canon(keel_node *n)
{
    if (n->kind == KEEL_NODE_SCALAR) {
        if (n->style == KEEL_STYLE_ANY)
            n->style = keel__scene_plain_safe(n->text, n->len) ? KEEL_STYLE_PLAIN : KEEL_STYLE_DOUBLE;
        else if (n->style != KEEL_STYLE_PLAIN) n->style = KEEL_STYLE_DOUBLE;
        else if (n->len == 0) {
            free(n->text);
            n->text = keel__strdup("null");
            n->len = 4;
        }
        return;
    }
    size_t items = n->kind == KEEL_NODE_MAP ? 2 * n->count : n->count;
    bool scalars = true;
    for (size_t i = 0; i < items; i++) {
        keel__save_canon(&n->items[i]);
        if (n->items[i].kind != KEEL_NODE_SCALAR) scalars = false;
    }
    n->style = n->count == 0 || (n->kind == KEEL_NODE_SEQ && scalars) ? KEEL_STYLE_FLOW : KEEL_STYLE_BLOCK;
}

keel_status keel_persist_load(keel_world *w, const char *path, keel_diags *d)
{
    if (!w || !path) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel_persist_load: NULL argument");
    if (keel_world_in_step(w))
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "a save cannot be loaded during a step");
    keel_diags local;
    keel_diags_init(&local);
    state st;
    memset(&st, 0, sizeof st);
    keel_status s = read_save(path, &st, &local);
    if (s == KEEL_OK) s = keel__save_state_apply(w, &st, &local);
    keel__save_state_free(&st);
    keel__diags_collapse_skipped(&local); /* one warning per (kind, field) skipped */
    keel_diags_append(d, &local, "");
    keel_diags_free(&local);
    return s;
}
