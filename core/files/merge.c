/* merge.c — three scene documents merged as data: entities by UUID, components by (kind, slot),
 * fields by name, settings by key (design/merge.md). Works on the document trees, so kinds need
 * not be declared; declared kinds' rules are checked on the result, which the scene reader (fed
 * the merged tree directly, never written and re-read) and writer then make canonical.
 *
 * Every decision is the same three-way choice (pick): if ours and theirs agree, that; if only
 * one side differs from base, that side; else a conflict, which keeps ours' value and records
 * the three values under a path (conflicts.c). Absent is a value like any other, so adding and
 * removing fall out of the same rule. The choice is made at the coarsest level that settles it
 * and refined only where both sides changed something: a whole component first, then (same
 * version, both still there) its enabled flag and its body field by field; the `scene` and
 * `settings` maps key by key; a map inside any of those key by key again, at every depth
 * (lists are whole values); an entity's existence, then its name, enabled, parent and
 * component list separately. Arrays of [3] are indexed BASE, OURS, THEIRS throughout.
 *
 * Entities are matched by UUID (index_entities: one ment per UUID in the union of the sides, in
 * ours' order, then theirs', then base's, found through a small open-addressing string map),
 * and parents become indexes into that array, so a parent is compared as an entity, not as
 * text. An entity removed on one side and untouched on the other is removed; removed against
 * edited is a conflict. Order is merged like text, by anchors: a component list (and each
 * parent's children, merged_kids) keeps ours' order, and what theirs added or moved there goes
 * right after its nearest predecessor in theirs that is already placed, past what ours put
 * at that same spot. Two repairs follow that a line-based merge could never make: a component
 * list that breaks a declared kind's rule (one, max, requires, rejects) only after merging goes
 * back to ours' list, each difference listed; and in the hierarchy (fix_hierarchy) a parent
 * that no longer exists sends its child to the top level, and a cycle that only the merge made
 * puts every entity on it back under ours' parent, each a parent conflict.
 *
 * The result is built as a tree (build_doc) whose nodes are shallow copies of the sides' nodes,
 * with entities listed in hierarchy pre-order as the writer lists them; keel__conflicts_load
 * loads it through the scene reader and keel__conflicts_write dumps that world, so the merged
 * file is exactly what keel would write for that scene, conflicts list after.
 *
 * Memory: the parsed trees are most of a merge's, so base is read first and ours and theirs
 * (then, on two threads) share each part of an entity that is base's unchanged (share_copy);
 * sides mostly agree, and three big scenes cost about one tree. Every tree is freed once the
 * merged world is loaded, before its text is made.
 *
 * Time: parsing is most of a merge's, so ours and theirs are read by spans where their layout
 * allows (read_side_spans): an entity whose text is base's byte for byte is base's parsed item,
 * and only what a side changed goes through libyaml. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "files/conflicts.h"
#include "base/util.h"
#include "base/vec.h"
#include "files/merge.h"
#include "files/scene_read.h"
#include "files/scene_spans.h"
#include "files/yaml_read.h"

enum { BASE = 0, OURS = 1, THEIRS = 2 }; /* the sides, as indexes of every [3] array here */
#define NONE SIZE_MAX

/* ---- small helpers (reading a document leniently: conflicts.h) ---- */


/* Three-way choice: one side changed it, that side; both the same way, that; else a conflict
 * (ours returned). NULL means absent. */
static int pick(const keel_node *v[3], bool *conflict)
{
    if (keel_node_equal(v[OURS], v[THEIRS])) return OURS;
    if (keel_node_equal(v[BASE], v[OURS])) return THEIRS;
    if (keel_node_equal(v[BASE], v[THEIRS])) return OURS;
    *conflict = true;
    return OURS;
}

/* UUID text -> index, open addressing. */
typedef struct smap {
    const char **keys;
    size_t *vals;
    size_t mask;
} smap;

static size_t str_hash(const char *k)
{
    size_t h = (size_t)14695981039346656037ull;
    for (; *k; k++) h = (h ^ (unsigned char)*k) * (size_t)1099511628211ull;
    return h;
}

static void smap_init(smap *m, size_t expect)
{
    size_t slots = 64;
    while (slots < 2 * expect + 2) slots *= 2;
    m->keys = keel__xcalloc(slots, sizeof *m->keys);
    m->vals = keel__xcalloc(slots, sizeof *m->vals);
    m->mask = slots - 1;
}

static size_t smap_get(const smap *m, const char *k)
{
    if (!k) return NONE;
    for (size_t at = str_hash(k) & m->mask; m->keys[at]; at = (at + 1) & m->mask)
        if (strcmp(m->keys[at], k) == 0) return m->vals[at];
    return NONE;
}

/* The caller keeps `k` alive and never puts more than `expect` keys. */
static void smap_put(smap *m, const char *k, size_t v)
{
    size_t at = str_hash(k) & m->mask;
    while (m->keys[at] && strcmp(m->keys[at], k) != 0) at = (at + 1) & m->mask;
    m->keys[at] = k;
    m->vals[at] = v;
}

static void smap_free(smap *m)
{
    free(m->keys);
    free(m->vals);
}

/* ---- the merge ---- */

typedef struct mcomp {
    const keel_node *src; /* a side's component, borrowed */
    keel_node *own;       /* or a merged one, owned */
} mcomp;

typedef struct mcomps {
    mcomp *items;
    size_t n;
} mcomps;

typedef struct ment {
    const char *uuid;
    const keel_node *e[3]; /* the entity's map on each side, NULL when absent */
    size_t par[3];         /* the parent's index on each side (NONE: top level) */
    bool exists;
    size_t mpar;
    const keel_node *name, *enabled; /* chosen, borrowed; NULL: absent */
    mcomps comps;
} ment;

typedef struct merger {
    const keel_node *doc[3];
    keel__conflicts conflicts;
    ment *ents;
    size_t n;
    smap index;
} merger;

static void mcomps_free(mcomps *c)
{
    for (size_t i = 0; i < c->n; i++) keel_node_free(c->items[i].own);
    free(c->items);
    *c = (mcomps){ 0 };
}

static const keel_node *mcomp_node(const mcomp *c)
{
    return c->own ? c->own : c->src;
}
static const keel_node *find_comp(const keel_node *list, const char *kind, int64_t slot)
{
    if (!list || !kind || list->kind != KEEL_NODE_SEQ) return NULL; /* a component without a kind matches none */
    for (size_t i = 0; i < list->count; i++) {
        const char *k;
        int64_t s;
        if (keel__conflicts_comp_key(&list->items[i], &k, &s) && s == slot && strcmp(k, kind) == 0)
            return &list->items[i];
    }
    return NULL;
}

static bool in_list(const keel_node *list, const keel_node *x)
{
    const char *k;
    int64_t s;
    return keel__conflicts_comp_key(x, &k, &s) && find_comp(list, k, s) != NULL;
}

static bool same_key(const keel_node *a, const keel_node *b)
{
    const char *ka, *kb;
    int64_t sa, sb;
    return keel__conflicts_comp_key(a, &ka, &sa) && keel__conflicts_comp_key(b, &kb, &sb) && sa == sb &&
        strcmp(ka, kb) == 0;
}

static char *comp_path(const char *prefix, const keel_node *c)
{
    const char *k;
    int64_t s;
    keel__conflicts_comp_key(c, &k, &s);
    return keel__strfmt("%s/%s[%lld]", prefix, k ? k : "?", (long long)s);
}

static bool is_map(const keel_node *n)
{
    return n && n->kind == KEEL_NODE_MAP;
}

/* Maps merged key by key at every depth (bodies, scene, settings): ours' key order, then
 * theirs' new keys. A value both sides changed that is a map on both (and in base, or new on
 * both) merges the same way inside, so edits to different keys of it both stand; anything
 * else, lists included, is one value. A conflict is listed as PREFIX/KEY/... down to the key
 * both sides changed and keeps ours' value. */
static keel_node *merge_map(merger *M, const char *prefix, const keel_node *m[3])
{
    keel_node *out = keel_node_new_map();
    for (int side = OURS; side <= THEIRS; side++) {
        const keel_node *src = m[side];
        if (!src || src->kind != KEEL_NODE_MAP) continue;
        for (size_t i = 0; i < src->count; i++) {
            const char *k = keel__doc_text(&src->items[2 * i]);
            if (!k) continue;
            if (side == THEIRS && keel__doc_get(m[OURS], k)) continue;
            const keel_node *v[3] = { keel__doc_get(m[BASE], k), keel__doc_get(m[OURS], k), keel__doc_get(m[THEIRS], k) };
            bool conflict = false;
            int w = pick(v, &conflict);
            if (conflict && is_map(v[OURS]) && is_map(v[THEIRS]) && (!v[BASE] || is_map(v[BASE]))) {
                char *path = keel__strfmt("%s/%s", prefix, k);
                keel_node_put(out, k, merge_map(M, path, v));
                free(path);
                continue;
            }
            if (conflict)
                keel__conflicts_add(&M->conflicts, keel__strfmt("%s/%s", prefix, k), v[BASE], v[OURS], v[THEIRS]);
            if (v[w]) keel_node_put(out, k, keel_node_copy(v[w]));
        }
    }
    return out;
}

static const keel_node *body_of(const keel_node *c)
{
    const keel_node *b = keel__doc_get(c, "body");
    return keel__doc_null(b) ? NULL : b;
}

/* One (kind, slot) present on both sides and changed on both: the heads must agree, then the
 * body merges field by field. False: a conflict on the whole component (listed by the caller). */
static bool merge_fields(merger *M, const char *cpath, const keel_node *c[3], keel_node **out)
{
    if (!keel_node_equal(keel__doc_get(c[OURS], "version"), keel__doc_get(c[THEIRS], "version"))) return false;
    const keel_node *en[3] = { keel__doc_get(c[BASE], "enabled"), keel__doc_get(c[OURS], "enabled"), keel__doc_get(c[THEIRS], "enabled") };
    bool conflict = false;
    int we = pick(en, &conflict);
    if (conflict) return false;
    const keel_node *bodies[3] = { body_of(c[BASE]), body_of(c[OURS]), body_of(c[THEIRS]) };
    for (int s = 0; s < 3; s++)
        if (bodies[s] && !is_map(bodies[s])) return false; /* not a map: merged as one value */
    keel_node *n = keel_node_new_map();
    keel_node_put(n, "kind", keel_node_copy(keel__doc_get(c[OURS], "kind")));
    if (keel__doc_get(c[OURS], "version")) keel_node_put(n, "version", keel_node_copy(keel__doc_get(c[OURS], "version")));
    if (keel__doc_get(c[OURS], "slot")) keel_node_put(n, "slot", keel_node_copy(keel__doc_get(c[OURS], "slot")));
    if (en[we]) keel_node_put(n, "enabled", keel_node_copy(en[we]));
    keel_node_put(n, "body", merge_map(M, cpath, bodies));
    *out = n;
    return true;
}

/* One (kind, slot): added, removed, kept or merged. Returns whether it is in the result. */
static bool merge_comp(merger *M, const char *prefix, const keel_node *c[3], mcomp *out)
{
    *out = (mcomp){ 0 };
    if (keel_node_equal(c[OURS], c[THEIRS])) {
        out->src = c[OURS];
        return c[OURS] != NULL;
    }
    if (keel_node_equal(c[BASE], c[OURS])) {
        out->src = c[THEIRS];
        return c[THEIRS] != NULL;
    }
    if (keel_node_equal(c[BASE], c[THEIRS])) {
        out->src = c[OURS];
        return c[OURS] != NULL;
    }
    char *path = comp_path(prefix, c[OURS] ? c[OURS] : c[THEIRS] ? c[THEIRS] : c[BASE]);
    if (c[BASE] && c[OURS] && c[THEIRS] && merge_fields(M, path, c, &out->own)) {
        free(path);
        return true;
    }
    /* edit against removal, or added on both sides with different bodies */
    keel__conflicts_add(&M->conflicts, path, c[BASE], c[OURS], c[THEIRS]);
    out->src = c[OURS];
    return c[OURS] != NULL;
}

/* Does this component list break a declared kind's rule (one, max, requires, rejects)? Kinds
 * not declared here are not judged. */
static bool breaks_rules(const keel_node *const *comps, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *k = keel__doc_text(keel__doc_get(comps[i], "kind"));
        const keel_kind_desc *kd = k ? keel_kind_describe(keel_kind_find(k)) : NULL;
        if (!kd) continue;
        size_t same = 0;
        for (size_t j = 0; j < n; j++) {
            const char *kj = keel__doc_text(keel__doc_get(comps[j], "kind"));
            if (kj && strcmp(kj, k) == 0) same++;
        }
        if (kd->multiplicity == KEEL_ONE && same > 1) return true;
        if (kd->multiplicity == KEEL_MANY && kd->max && same > kd->max) return true;
        for (size_t r = 0; r < kd->requires_count; r++) {
            bool found = false;
            for (size_t j = 0; j < n && !found; j++) {
                const char *kj = keel__doc_text(keel__doc_get(comps[j], "kind"));
                found = kj && strcmp(kj, kd->requires[r]) == 0;
            }
            if (!found) return true;
        }
        for (size_t r = 0; r < kd->rejects_count; r++)
            for (size_t j = 0; j < n; j++) {
                const char *kj = keel__doc_text(keel__doc_get(comps[j], "kind"));
                if (kj && strcmp(kj, kd->rejects[r]) == 0) return true;
            }
    }
    return false;
}

static bool list_breaks_rules(const keel_node *list)
{
    if (!list || list->kind != KEEL_NODE_SEQ) return false;
    const keel_node **v = keel__xcalloc(list->count + 1, sizeof *v);
    for (size_t i = 0; i < list->count; i++) v[i] = &list->items[i];
    bool broken = breaks_rules(v, list->count);
    free(v);
    return broken;
}

/* Whether `x` is in `list` at an index below `limit`, by (kind, slot). */
static bool comp_among(const keel_node *x, const keel_node *const *list, size_t limit)
{
    for (size_t i = 0; i < limit; i++)
        if (same_key(x, list[i])) return true;
    return false;
}

/* A component list (an entity's, or the root's): ours' order, with what theirs added placed
 * after its predecessor in theirs (after what ours added there too). */
static mcomps merge_comps(merger *M, const char *prefix, const keel_node *l[3])
{
    const keel_node *lists[3];
    for (int s = 0; s < 3; s++) lists[s] = l[s] && l[s]->kind == KEEL_NODE_SEQ ? l[s] : NULL;
    size_t no = lists[OURS] ? lists[OURS]->count : 0, nt = lists[THEIRS] ? lists[THEIRS]->count : 0;
    size_t cap = no + nt + 1;
    mcomp *res = keel__xcalloc(cap, sizeof *res);
    const keel_node **key = keel__xcalloc(cap, sizeof *key); /* each result's identity */
    size_t n = 0;
    size_t first_conflict = M->conflicts.n;
    /* ours' components, in ours' order */
    for (size_t i = 0; i < no; i++) {
        const keel_node *co = &lists[OURS]->items[i];
        const char *k;
        int64_t s;
        if (!keel__conflicts_comp_key(co, &k, &s)) continue;
        const keel_node *c[3] = { find_comp(lists[BASE], k, s), co, find_comp(lists[THEIRS], k, s) };
        if (merge_comp(M, prefix, c, &res[n])) key[n++] = co;
    }
    /* theirs' additions: after the nearest earlier component of theirs that is in the result,
     * past what ours added right there (ours' additions come first, as if applied first) */
    size_t after = 0; /* insertion point: index in res */
    bool have_pred = false;
    for (size_t i = 0; i < nt; i++) {
        const keel_node *ct = &lists[THEIRS]->items[i];
        const char *k;
        int64_t s;
        if (!keel__conflicts_comp_key(ct, &k, &s)) continue;
        size_t at = n;
        for (size_t j = 0; j < n; j++)
            if (same_key(key[j], ct)) at = j;
        if (at < n) { /* already placed */
            after = at + 1;
            have_pred = true;
            continue;
        }
        if (find_comp(lists[OURS], k, s)) continue; /* ours' decision stands (removed) */
        const keel_node *c[3] = { find_comp(lists[BASE], k, s), NULL, ct };
        mcomp m;
        if (!merge_comp(M, prefix, c, &m)) continue;
        size_t pos = have_pred ? after : 0;
        while (pos < n && !in_list(lists[THEIRS], key[pos])) pos++;
        memmove(&res[pos + 1], &res[pos], (n - pos) * sizeof *res);
        memmove(&key[pos + 1], &key[pos], (n - pos) * sizeof *key);
        res[pos] = m;
        key[pos] = ct;
        n++;
        after = pos + 1;
        have_pred = true;
    }
    mcomps out = { res, n };
    /* a kind rule only the merged list breaks: ours' list stands, each difference a conflict */
    const keel_node **nodes = keel__xcalloc(n + 1, sizeof *nodes);
    for (size_t i = 0; i < n; i++) nodes[i] = mcomp_node(&res[i]);
    bool broken = breaks_rules(nodes, n) && !list_breaks_rules(lists[OURS]);
    if (broken) {
        keel__conflicts_truncate(&M->conflicts, first_conflict);
        for (size_t i = 0; i < n; i++) {
            const char *k;
            int64_t s;
            keel__conflicts_comp_key(nodes[i], &k, &s);
            const keel_node *co = find_comp(lists[OURS], k, s);
            if (!keel_node_equal(co, nodes[i]))
                keel__conflicts_add(&M->conflicts, comp_path(prefix, nodes[i]), find_comp(lists[BASE], k, s), co,
                                    find_comp(lists[THEIRS], k, s));
        }
        for (size_t i = 0; i < no; i++) {
            const keel_node *co = &lists[OURS]->items[i];
            if (!comp_among(co, nodes, n)) {
                const char *k;
                int64_t s;
                keel__conflicts_comp_key(co, &k, &s);
                keel__conflicts_add(&M->conflicts, comp_path(prefix, co), find_comp(lists[BASE], k, s), co,
                                    find_comp(lists[THEIRS], k, s));
            }
        }
        mcomps_free(&out);
        out.items = keel__xcalloc(no + 1, sizeof *out.items);
        for (size_t i = 0; i < no; i++) out.items[out.n++].src = &lists[OURS]->items[i];
    }
    free(nodes);
    free(key);
    return out;
}

/* ---- entities ---- */

#define ABSENT (SIZE_MAX - 1) /* a parent index on a side the entity is not on */

static const keel_node *uuid_node(const ment *m)
{
    for (int s = OURS; s <= THEIRS + 1; s++) {
        const keel_node *u = keel__doc_get(m->e[s % 3], "uuid");
        if (u) return u;
    }
    return NULL;
}

static const keel_node *comps_of(const keel_node *e)
{
    return keel__doc_get(e, "components");
}

/* Did side s change the entity? A parent dropped because s removed the parent is not a change
 * of this entity (removing an entity puts its children at the top level). */
static bool entity_changed(const merger *M, const ment *m, int s)
{
    const keel_node *b = m->e[BASE], *x = m->e[s];
    if (!keel_node_equal(keel__doc_get(b, "name"), keel__doc_get(x, "name")) ||
        !keel_node_equal(keel__doc_get(b, "enabled"), keel__doc_get(x, "enabled")) || !keel_node_equal(comps_of(b), comps_of(x)))
        return true;
    if (m->par[s] == m->par[BASE]) return false;
    return !(m->par[s] == NONE && m->par[BASE] != NONE && M->ents[m->par[BASE]].e[s] == NULL);
}

static size_t pick_index(const size_t v[3], bool *conflict)
{
    if (v[OURS] == v[THEIRS]) return v[OURS];
    if (v[BASE] == v[OURS]) return v[THEIRS];
    if (v[BASE] == v[THEIRS]) return v[OURS];
    *conflict = true;
    return v[OURS];
}

static char *ent_path(const ment *m, const char *rest)
{
    return rest ? keel__strfmt("%s/%s", m->uuid, rest) : keel__strdup(m->uuid);
}

static void parent_conflict(merger *M, const ment *m)
{
    keel__conflicts_add(&M->conflicts, ent_path(m, "parent"), keel__doc_get(m->e[BASE], "parent"), keel__doc_get(m->e[OURS], "parent"),
                        keel__doc_get(m->e[THEIRS], "parent"));
}

/* Existence, then name, enabled, parent and components, for one entity. */
static void merge_entity(merger *M, ment *m)
{
    const keel_node *eff[3] = { m->e[BASE], m->e[OURS], m->e[THEIRS] };
    if (m->e[BASE]) {
        if (!m->e[OURS] && !m->e[THEIRS]) return;
        if (!m->e[OURS] || !m->e[THEIRS]) {
            int kept = m->e[OURS] ? OURS : THEIRS;
            if (!entity_changed(M, m, kept)) return; /* removed on one side, untouched on the other */
            keel__conflicts_add(&M->conflicts, ent_path(m, NULL), m->e[BASE], m->e[OURS], m->e[THEIRS]);
            if (!m->e[OURS]) return;        /* ours' value: removed */
            eff[BASE] = eff[THEIRS] = NULL; /* ours' entity as it is */
        }
    }
    m->exists = true;
    size_t par[3];
    for (int s = 0; s < 3; s++) par[s] = eff[s] ? m->par[s] : ABSENT;
    bool conflict = false;
    const keel_node *nm[3] = { keel__doc_get(eff[BASE], "name"), keel__doc_get(eff[OURS], "name"), keel__doc_get(eff[THEIRS], "name") };
    m->name = nm[pick(nm, &conflict)];
    if (conflict) keel__conflicts_add(&M->conflicts, ent_path(m, "name"), nm[BASE], nm[OURS], nm[THEIRS]);
    conflict = false;
    const keel_node *en[3] = { keel__doc_get(eff[BASE], "enabled"), keel__doc_get(eff[OURS], "enabled"), keel__doc_get(eff[THEIRS], "enabled") };
    m->enabled = en[pick(en, &conflict)];
    if (conflict) keel__conflicts_add(&M->conflicts, ent_path(m, "enabled"), en[BASE], en[OURS], en[THEIRS]);
    conflict = false;
    m->mpar = pick_index(par, &conflict);
    if (m->mpar == ABSENT) m->mpar = NONE;
    if (conflict) parent_conflict(M, m);
    const keel_node *cl[3] = { comps_of(eff[BASE]), comps_of(eff[OURS]), comps_of(eff[THEIRS]) };
    m->comps = merge_comps(M, m->uuid, cl);
}

/* Ours' parent, for a reverted one: NONE when ours does not have the entity. */
static size_t ours_parent(const ment *m)
{
    return m->e[OURS] ? m->par[OURS] : NONE;
}

/* Parents whose merged target is gone go to the top level; a cycle only the merge makes
 * reverts to ours' parents along it. Each is a parent conflict. */
static void fix_hierarchy(merger *M)
{
    size_t n = M->n;
    for (size_t i = 0; i < n; i++) {
        ment *m = &M->ents[i];
        if (m->exists && m->mpar != NONE && !M->ents[m->mpar].exists) {
            parent_conflict(M, m);
            m->mpar = NONE;
        }
    }
    unsigned char *state = keel__xcalloc(n + 1, 1);
    size_t *stack = keel__xcalloc(n + 1, sizeof *stack);
    for (bool again = true; again;) {
        again = false;
        memset(state, 0, n + 1);
        for (size_t i = 0; i < n; i++) {
            if (!M->ents[i].exists || state[i]) continue;
            size_t depth = 0, c = i;
            while (c != NONE && state[c] == 0) {
                state[c] = 1;
                stack[depth++] = c;
                c = M->ents[c].mpar;
            }
            if (c != NONE && state[c] == 1) { /* a cycle: c ... stack[depth-1] */
                size_t from = depth;
                while (from > 0 && stack[from - 1] != c) from--;
                for (size_t k = from - 1; k < depth; k++) {
                    ment *x = &M->ents[stack[k]];
                    size_t p = ours_parent(x);
                    if (x->mpar == p) continue;
                    parent_conflict(M, x);
                    x->mpar = p != NONE && M->ents[p].exists ? p : NONE;
                    again = true;
                }
            }
            for (size_t k = 0; k < depth; k++) state[stack[k]] = 2;
        }
    }
    free(state);
    free(stack);
}

/* Children of each parent on side s, in document order (sibling order), as offsets into one
 * array: the kids of p (n: the top level) are list[start[p] .. start[p+1]). */
typedef struct kids {
    size_t *start, *end, *list;
} kids;

static kids side_kids(const merger *M, int s)
{
    size_t n = M->n;
    kids k = { keel__xcalloc(n + 2, sizeof(size_t)), keel__xcalloc(n + 1, sizeof(size_t)),
               keel__xcalloc(n + 1, sizeof(size_t)) };
    const keel_node *list = keel__doc_get(M->doc[s], "entities");
    size_t cnt = list && list->kind == KEEL_NODE_SEQ ? list->count : 0;
    size_t *fill = keel__xcalloc(n + 2, sizeof *fill);
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < cnt; i++) {
            size_t e = smap_get(&M->index, keel__doc_text(keel__doc_get(&list->items[i], "uuid")));
            if (e == NONE || M->ents[e].e[s] != &list->items[i]) continue; /* a duplicate UUID */
            size_t p = M->ents[e].par[s] == NONE ? n : M->ents[e].par[s];
            if (pass == 0) k.start[p + 1]++;
            else k.list[k.start[p] + fill[p]++] = e;
        }
        if (pass == 0)
            for (size_t p = 0; p <= n; p++) k.start[p + 1] += k.start[p];
    }
    free(fill);
    for (size_t p = 0; p <= n; p++) k.end[p] = k.start[p + 1];
    return k;
}

static void kids_free(kids *k)
{
    free(k->start);
    free(k->end);
    free(k->list);
}

/* Sibling order of the result: ours' order under each parent, with what theirs placed there
 * (added or moved in) after its predecessor in theirs, past what ours placed right there.
 * Fills `out` like side_kids. */
static kids merged_kids(const merger *M)
{
    size_t n = M->n;
    kids ko = side_kids(M, OURS), kt = side_kids(M, THEIRS);
    kids out = { keel__xcalloc(n + 2, sizeof(size_t)), keel__xcalloc(n + 1, sizeof(size_t)),
                 keel__xcalloc(n + 1, sizeof(size_t)) };
    size_t *next = keel__xcalloc(n + 1, sizeof *next);
    size_t *in_t = keel__xcalloc(n + 1, sizeof *in_t), *in_l = keel__xcalloc(n + 1, sizeof *in_l);
    size_t used = 0;
    for (size_t step = 0; step <= n; step++) {
        size_t p = step == 0 ? n : step - 1; /* the top level first: its unplaced are found last */
        size_t stamp = p + 1, head = NONE, tail = NONE;
        for (size_t j = ko.start[p]; j < ko.end[p]; j++) {
            size_t c = ko.list[j];
            const ment *m = &M->ents[c];
            if (!m->exists || (m->mpar == NONE ? n : m->mpar) != p) continue;
            next[c] = NONE;
            if (tail == NONE) head = c;
            else next[tail] = c;
            tail = c;
            in_l[c] = stamp;
        }
        for (size_t j = kt.start[p]; j < kt.end[p]; j++) in_t[kt.list[j]] = stamp;
        size_t last = NONE;
        for (size_t j = kt.start[p]; j < kt.end[p]; j++) {
            size_t c = kt.list[j];
            const ment *m = &M->ents[c];
            if (in_l[c] == stamp) {
                last = c;
                continue;
            }
            if (!m->exists || (m->mpar == NONE ? n : m->mpar) != p) continue;
            size_t a = last, nx = a == NONE ? head : next[a];
            while (nx != NONE && in_t[nx] != stamp) {
                a = nx;
                nx = next[a];
            }
            next[c] = nx;
            if (a == NONE) head = c;
            else next[a] = c;
            if (nx == NONE) tail = c;
            in_l[c] = stamp;
            last = c;
        }
        out.start[p] = used;
        for (size_t c = head; c != NONE; c = next[c]) out.list[used++] = c;
        if (p == n) /* at the top: what neither side had there (a parent gone, a cycle undone) */
            for (size_t c = 0; c < n; c++)
                if (M->ents[c].exists && M->ents[c].mpar == NONE && in_l[c] != stamp) out.list[used++] = c;
        out.end[p] = used;
    }
    free(next);
    free(in_t);
    free(in_l);
    kids_free(&ko);
    kids_free(&kt);
    return out;
}

/* ---- the document ---- */

/* One ment per UUID of any side, each side's record (its first, should a side repeat a UUID)
 * and parent index filled in. Parents are looked up only once every UUID has its index. */
static void index_entities(merger *M)
{
    size_t total = 0;
    for (int s = 0; s < 3; s++) {
        const keel_node *l = keel__doc_get(M->doc[s], "entities");
        if (l && l->kind == KEEL_NODE_SEQ) total += l->count;
    }
    smap_init(&M->index, total);
    M->ents = keel__xcalloc(total + 1, sizeof *M->ents);
    static const int order[3] = { OURS, THEIRS, BASE }; /* the union in ours' order, then theirs', then base's */
    for (int k = 0; k < 3; k++) {
        int s = order[k];
        const keel_node *l = keel__doc_get(M->doc[s], "entities");
        if (!l || l->kind != KEEL_NODE_SEQ) continue;
        for (size_t i = 0; i < l->count; i++) {
            const char *u = keel__doc_text(keel__doc_get(&l->items[i], "uuid"));
            if (!u) continue;
            size_t e = smap_get(&M->index, u);
            if (e == NONE) {
                e = M->n++;
                M->ents[e].uuid = u;
                smap_put(&M->index, u, e);
            }
            if (!M->ents[e].e[s]) M->ents[e].e[s] = &l->items[i];
        }
    }
    M->ents = keel__xrealloc(M->ents, (M->n + 1) * sizeof *M->ents); /* sides mostly share UUIDs */
    for (size_t i = 0; i < M->n; i++)
        for (int s = 0; s < 3; s++) {
            const keel_node *p = keel__doc_get(M->ents[i].e[s], "parent");
            M->ents[i].par[s] = keel__doc_null(p) ? NONE : smap_get(&M->index, keel__doc_text(p));
        }
}

/* ---- the merged document as a tree, for the scene reader ----
 * Its nodes are shallow copies of the sides' (their texts and children shared, only read) in
 * arrays of its own; the arrays are kept in `allocs` to be freed with it. */

typedef struct tree {
    void **allocs;
    size_t n, cap;
} tree;

static keel_node *tree_nodes(tree *t, size_t count)
{
    KEEL__VEC_RESERVE(t->allocs, t->n, t->cap, 1, 64);
    keel_node *a = keel__xcalloc(count ? count : 1, sizeof *a);
    t->allocs[t->n++] = a;
    return a;
}

static void tree_free(tree *t)
{
    for (size_t i = 0; i < t->n; i++) free(t->allocs[i]);
    free(t->allocs);
}

static keel_node scalar_node(const char *text)
{
    return (keel_node){
        .kind = KEEL_NODE_SCALAR, .style = KEEL_STYLE_PLAIN, .text = (char *)text, .len = strlen(text)
    };
}

/* A side's node, or null for an absent one (as the writer spelled it). */
static keel_node node_or_null(const keel_node *n)
{
    return n ? *n : scalar_node("null");
}

/* A node the merge made (styles ANY) given the styles the text written and read back had:
 * plain keys, empty collections in flow style, others in block style. Sides' nodes (what
 * copies hold) already have a reader's styles. */
static void settle(keel_node *n)
{
    if (n->kind == KEEL_NODE_SCALAR) return;
    if (n->style == KEEL_STYLE_ANY) n->style = n->count == 0 ? KEEL_STYLE_FLOW : KEEL_STYLE_BLOCK;
    bool map = n->kind == KEEL_NODE_MAP;
    for (size_t i = 0; i < (map ? 2 * n->count : n->count); i++) {
        keel_node *c = &n->items[i];
        if (c->kind == KEEL_NODE_SCALAR) {
            if (c->style == KEEL_STYLE_ANY) c->style = map && i % 2 == 0 ? KEEL_STYLE_PLAIN : c->style;
        } else {
            settle(c);
        }
    }
}

static keel_node comps_node(tree *t, mcomps *c)
{
    keel_node n = { .kind = KEEL_NODE_SEQ, .style = c->n ? KEEL_STYLE_BLOCK : KEEL_STYLE_FLOW, .count = c->n };
    n.items = tree_nodes(t, c->n);
    for (size_t i = 0; i < c->n; i++) {
        if (c->items[i].own) settle(c->items[i].own);
        n.items[i] = *mcomp_node(&c->items[i]);
    }
    return n;
}

typedef struct pairs {
    keel_node *items;
    size_t count;
} pairs;

static void pair(pairs *p, const char *k, keel_node v)
{
    p->items[2 * p->count] = scalar_node(k);
    p->items[2 * p->count + 1] = v;
    p->count++;
}

static keel_node map_node(const pairs *p)
{
    return (keel_node){ .kind = KEEL_NODE_MAP, .style = KEEL_STYLE_BLOCK, .count = p->count, .items = p->items };
}

static keel_node entity_node(tree *t, const merger *M, ment *m)
{
    pairs p = { tree_nodes(t, 10), 0 };
    pair(&p, "uuid", node_or_null(uuid_node(m)));
    if (m->name) pair(&p, "name", *m->name);
    if (m->mpar != NONE) pair(&p, "parent", node_or_null(uuid_node(&M->ents[m->mpar])));
    if (m->enabled) pair(&p, "enabled", *m->enabled);
    pair(&p, "components", comps_node(t, &m->comps));
    return map_node(&p);
}

/* The merged document, built in `t` (not yet canonical); `rc` and the maps in `own` are the
 * caller's to free after. */
static keel_node build_doc(merger *M, tree *t, mcomps *rc, keel_node *own[2])
{
    pairs top = { tree_nodes(t, 10), 0 };
    const keel_node *v[3] = { keel__doc_get(M->doc[BASE], "keel"), keel__doc_get(M->doc[OURS], "keel"), keel__doc_get(M->doc[THEIRS], "keel") };
    bool conflict = false;
    int w = pick(v, &conflict);
    if (conflict) keel__conflicts_add(&M->conflicts, keel__strdup("keel"), v[BASE], v[OURS], v[THEIRS]);
    pair(&top, "keel", node_or_null(v[w]));
    const char *const maps[2] = { "scene", "settings" };
    for (int i = 0; i < 2; i++) {
        const keel_node *m[3] = { keel__doc_get(M->doc[BASE], maps[i]), keel__doc_get(M->doc[OURS], maps[i]),
                                  keel__doc_get(M->doc[THEIRS], maps[i]) };
        own[i] = merge_map(M, maps[i], m);
        settle(own[i]);
        pair(&top, maps[i], *own[i]);
    }
    const keel_node *roots[3] = { keel__doc_get(M->doc[BASE], "root"), keel__doc_get(M->doc[OURS], "root"),
                                  keel__doc_get(M->doc[THEIRS], "root") };
    *rc = merge_comps(M, "root", roots);
    pair(&top, "root", comps_node(t, rc));

    index_entities(M);
    for (size_t i = 0; i < M->n; i++) merge_entity(M, &M->ents[i]);
    fix_hierarchy(M);
    kids k = merged_kids(M);
    size_t total = 0;
    for (size_t i = 0; i <= M->n; i++) total += k.end[i] - k.start[i];
    keel_node list = { .kind = KEEL_NODE_SEQ, .style = total ? KEEL_STYLE_BLOCK : KEEL_STYLE_FLOW };
    list.items = tree_nodes(t, total);
    /* pre-order: a stack of (parent, next child position) */
    size_t *stack = keel__xcalloc(2 * (M->n + 1), sizeof *stack), depth = 0;
    stack[0] = M->n;
    stack[1] = k.start[M->n];
    depth = 1;
    while (depth > 0) {
        size_t p = stack[2 * (depth - 1)], *pos = &stack[2 * (depth - 1) + 1];
        if (*pos >= k.end[p]) {
            depth--;
            continue;
        }
        size_t c = k.list[(*pos)++];
        list.items[list.count++] = entity_node(t, M, &M->ents[c]);
        stack[2 * depth] = c;
        stack[2 * depth + 1] = k.start[c];
        depth++;
    }
    free(stack);
    kids_free(&k);
    pair(&top, "entities", list);
    return map_node(&top);
}

/* Everything but the conflicts list (which borrows nothing); again is harmless. */
static void merger_free_ents(merger *M)
{
    for (size_t i = 0; i < M->n; i++) mcomps_free(&M->ents[i].comps);
    free(M->ents);
    if (M->index.keys) smap_free(&M->index);
    M->ents = NULL;
    M->n = 0;
    M->index.keys = NULL;
}

bool keel_merge_looks_like_scene(const char *text, size_t len)
{
    bool keel = false, scene = false;
    for (size_t i = 0; i < len; i++) {
        keel = keel || (i + 5 <= len && memcmp(text + i, "keel:", 5) == 0);
        scene = scene || (i + 6 <= len && memcmp(text + i, "scene:", 6) == 0);
        const char *nl = memchr(text + i, '\n', len - i);
        if (!nl) break;
        i = (size_t)(nl - text);
    }
    return keel && scene;
}

/* A document parsed; an empty text (a base that did not exist) is an empty scene. */
static bool read_doc(const char *text, size_t len, const char *name, const keel_limits *lim, bool may_be_empty,
                     keel__arena *arena, const keel__yaml_stream *stream, keel_node **doc, keel_diags *d)
{
    if (keel__yaml_parse_stream(text, len, lim, name, arena, stream, doc, d) != KEEL_OK) return false;
    if (keel__doc_null(*doc) && may_be_empty) return true;
    if ((*doc)->kind != KEEL_NODE_MAP || !keel__doc_get(*doc, "keel")) {
        keel_diag_add(d, KEEL_SEV_ERROR, KEEL_PARSE_ERROR, "", name, 1, 1, "not a keel scene (no 'keel:' key)");
        return false;
    }
    if (keel__doc_get(*doc, "conflicts")) {
        keel_diag_add(d, KEEL_SEV_ERROR, KEEL_PARSE_ERROR, "conflicts", name, 1, 1,
                      "this scene still lists merge conflicts: resolve them first (keel merge --take)");
        return false;
    }
    return true;
}

/* Base's entities by UUID (its first of each), which ours' and theirs' share; and, when the cut
 * of its text agrees with its parsed items and no UUID repeats, each item's text span. */
typedef struct base_ents {
    const keel_node *list;
    smap index;
    const char *text;
    keel__spans spans; /* n == list->count, or empty: the sides are parsed whole */
} base_ents;

typedef struct side_read {
    const char *text;
    size_t len;
    const char *name;
    const keel_limits *lim;
    bool may_be_empty;
    keel__arena *arena;
    const base_ents *like; /* NULL: read whole, nothing shared */
    keel_node *ents;       /* the entities list's items, as shared (freed with the read) */
    size_t n_ents, cap_ents;
    keel_node *doc;
    bool ok;
    bool fast;     /* may read by spans (read_side_spans) */
    bool by_spans; /* was */
    size_t parsed; /* items parsed, when by spans */
    keel_diags diags;
} side_read;

/* Exactly the same node, styles included (keel_node_equal overlooks some), positions aside. */
static bool identical(const keel_node *a, const keel_node *b)
{
    if (a->kind != b->kind || a->style != b->style || a->count != b->count) return false;
    if (a->kind == KEEL_NODE_SCALAR)
        return a->len == b->len && (a->len == 0 || (a->text && b->text && memcmp(a->text, b->text, a->len) == 0));
    if (a->items == b->items) return true;
    size_t n = a->kind == KEEL_NODE_MAP ? 2 * a->count : a->count;
    for (size_t i = 0; i < n; i++)
        if (!identical(&a->items[i], &b->items[i])) return false;
    return true;
}

/* The pair of `map` whose key is `key`'s text: its index, or NONE. */
static size_t pair_of(const keel_node *map, const keel_node *key)
{
    if (key->kind != KEEL_NODE_SCALAR || !key->text) return NONE;
    for (size_t j = 0; j < map->count; j++) {
        const keel_node *k = &map->items[2 * j];
        if (k->kind == KEEL_NODE_SCALAR && k->text && k->len == key->len && memcmp(k->text, key->text, k->len) == 0)
            return j;
    }
    return NONE;
}

/* `n` (an entity as read, gone after the call) copied into `a`, except each part identical to
 * the same part of `like` (base's entity of that UUID), which shares like's text and items: a
 * big merge's sides are mostly base unchanged, so ours and theirs then cost little beyond
 * base. What is shared carries base's line numbers below its top (the checks allow for it). */
static void share_copy(keel__arena *a, keel_node *dst, const keel_node *n, const keel_node *like)
{
    *dst = *n;
    if (like && identical(n, like)) {
        dst->text = like->text;
        dst->items = like->items;
        return;
    }
    if (n->kind == KEEL_NODE_SCALAR) {
        if (n->text) {
            dst->text = keel__arena_alloc(a, n->len + 1);
            memcpy(dst->text, n->text, n->len + 1);
        }
        return;
    }
    dst->text = NULL;
    bool map = n->kind == KEEL_NODE_MAP;
    size_t cnt = map ? 2 * n->count : n->count;
    dst->items = cnt ? keel__arena_alloc(a, cnt * sizeof *dst->items) : NULL;
    bool alike = like && like->kind == n->kind;
    size_t j = NONE;
    for (size_t i = 0; i < cnt; i++) {
        const keel_node *l = NULL;
        if (alike && !map) {
            l = i < like->count ? &like->items[i] : NULL;
        } else if (alike) {
            if (i % 2 == 0) j = pair_of(like, &n->items[i]);
            l = j == NONE ? NULL : &like->items[2 * j + i % 2];
        }
        share_copy(a, &dst->items[i], &n->items[i], l);
    }
}

static bool share_begin(void *ctx, const keel_node *list, const keel_node *top, size_t top_count)
{
    (void)list;
    (void)top;
    (void)top_count;
    return ((side_read *)ctx)->like != NULL;
}

static void share_item(void *ctx, const keel_node *item, size_t index)
{
    (void)index;
    side_read *r = ctx;
    size_t b = smap_get(&r->like->index, keel__doc_text(keel__doc_get(item, "uuid")));
    KEEL__VEC_RESERVE(r->ents, r->n_ents, r->cap_ents, 1, 1024);
    share_copy(r->arena, &r->ents[r->n_ents++], item, b == NONE ? NULL : &r->like->list->items[b]);
}

/* ---- reading a side by spans: only what is not byte-for-byte base's is parsed ----
 * Each item span of the side (scene_spans.c) that equals, byte for byte, base's span of the
 * same UUID is base's item as the streamed read would have shared it (identical: the side's
 * line on top, base's nodes below). Every other span is parsed alone, under an `entities:` key
 * so depths and limits are as in the whole document, and shared as share_item does. The text
 * around the list (head and tail) is parsed as one document with the list left out, and the
 * tail's lines moved down by the list's. Anything unexpected (a refusal, a diagnostic, a span
 * that is not one item, a layout the cut cannot confirm) drops this and the side is read
 * whole, which says what is wrong. Equal bytes read the same here because a span is a whole
 * item in both documents (base's cut is checked against its parsed items, a side's parsed
 * spans are each one complete item) and a scene allows no anchors, aliases or directives that
 * could make an item's reading depend on what precedes it. */

/* The pair index of a document map's `entities` key, or NONE (the key node is needed, for its line). */
static size_t entities_pair(const keel_node *doc)
{
    for (size_t j = 0; doc && doc->kind == KEEL_NODE_MAP && j < doc->count; j++) {
        const keel_node *k = &doc->items[2 * j];
        if (k->kind == KEEL_NODE_SCALAR && k->len == 8 && k->text && memcmp(k->text, "entities", 8) == 0) return j;
    }
    return NONE;
}

/* Does the cut of base's text match base's parsed list item by item, and its end? */
static bool spans_confirm(const keel_node *doc, size_t len, const keel__spans *sp)
{
    size_t kj = entities_pair(doc);
    if (kj == NONE) return false;
    const keel_node *key = &doc->items[2 * kj], *list = &doc->items[2 * kj + 1];
    if (key->line != sp->key_line || key->col != 1 || list->kind != KEEL_NODE_SEQ ||
        list->style != KEEL_STYLE_BLOCK || list->count != sp->n || list->line != sp->at[0].line ||
        list->col != sp->indent + 1)
        return false;
    for (size_t i = 0; i < sp->n; i++)
        if (list->items[i].line != sp->at[i].line || list->items[i].col != sp->indent + 3) return false;
    if (kj + 1 < doc->count) {
        const keel_node *next = &doc->items[2 * (kj + 1)];
        return next->line == sp->at[sp->n].line && next->col == 1;
    }
    return sp->at[sp->n].start == len;
}

static void shift_lines(keel_node *n, int by)
{
    if (n->line) n->line += by;
    if (n->kind == KEEL_NODE_SCALAR) return;
    size_t cnt = n->kind == KEEL_NODE_MAP ? 2 * n->count : n->count;
    for (size_t i = 0; i < cnt; i++) shift_lines(&n->items[i], by);
}

/* Base's item whose span is byte for byte `s` (of `len` bytes, a side's item span), or NONE.
 * Found by the UUID on the span's first line, as the writer puts it (`- uuid: TEXT`). */
static size_t same_as_base(const base_ents *b, const char *s, size_t len)
{
    size_t i = (size_t)b->spans.indent + 2;
    if (len < i + 6 || memcmp(s + i, "uuid: ", 6) != 0) return NONE;
    i += 6;
    char u[72];
    size_t n = 0;
    while (i < len && n < sizeof u - 1 && s[i] != '\n' && s[i] != ' ') u[n++] = s[i++];
    if (n == 0 || n == sizeof u - 1) return NONE;
    u[n] = '\0';
    size_t j = smap_get(&b->index, u);
    if (j == NONE) return NONE;
    size_t from = b->spans.at[j].start, blen = b->spans.at[j + 1].start - from;
    if (blen != len || memcmp(b->text + from, s, len) != 0) return NONE;
    const char *bu = keel__doc_text(keel__doc_get(&b->list->items[j], "uuid"));
    return bu && strcmp(bu, u) == 0 ? j : NONE; /* the item share_item would have shared */
}

/* The one item of a span parsed alone (in `scratch`), its lines as in the whole text; NULL when
 * it is not exactly one item read without a word. */
static keel_node *parse_span(const side_read *r, const keel__spans *sp, size_t k, keel__arena *scratch, char **buf,
                             size_t *cap)
{
    static const char key[] = "entities:\n";
    size_t from = sp->at[k].start, len = sp->at[k + 1].start - from, n = sizeof key - 1 + len;
    KEEL__VEC_RESERVE(*buf, 0, *cap, n + 1, 4096);
    memcpy(*buf, key, sizeof key - 1);
    memcpy(*buf + sizeof key - 1, r->text + from, len);
    (*buf)[n] = '\0';
    keel_diags d;
    keel_diags_init(&d);
    keel_node *doc = NULL;
    keel_status st = keel__yaml_parse_arena(*buf, n, r->lim, r->name, scratch, &doc, &d);
    size_t said = d.count;
    keel_diags_free(&d);
    if (st != KEEL_OK || said || doc->kind != KEEL_NODE_MAP || doc->count != 1) return NULL;
    keel_node *list = &doc->items[1];
    if (list->kind != KEEL_NODE_SEQ || list->style != KEEL_STYLE_BLOCK || list->count != 1 || list->line != 2 ||
        list->col != sp->indent + 1 || list->items[0].line != 2)
        return NULL;
    shift_lines(&list->items[0], sp->at[k].line - 2);
    return &list->items[0];
}

/* The side's tree as read_side's streamed read would have made it, or false (nothing kept
 * that matters: the caller reads the side whole). */
static bool read_side_spans(side_read *r)
{
    const base_ents *b = r->like;
    if (r->len > r->lim->document_size) return false;
    keel__spans sp;
    if (!keel__spans_cut(r->text, r->len, &sp)) return false;
    size_t limit = r->lim->entities > r->lim->collection_length ? r->lim->entities : r->lim->collection_length;
    bool ok = false;
    char *buf = NULL;
    size_t cap = 0;
    keel__arena *scratch = NULL;
    keel_node *doc = NULL;
    if (sp.n > limit) goto out;
    /* head and tail, the list left out: `entities:` then has a null value */
    size_t head = sp.at[0].start, tail = sp.at[sp.n].start, hlen = head + (r->len - tail);
    KEEL__VEC_RESERVE(buf, 0, cap, hlen + 1, 4096);
    memcpy(buf, r->text, head);
    memcpy(buf + head, r->text + tail, r->len - tail);
    buf[hlen] = '\0';
    keel_diags d;
    keel_diags_init(&d);
    keel_status st = keel__yaml_parse_arena(buf, hlen, r->lim, r->name, r->arena, &doc, &d);
    size_t said = d.count;
    keel_diags_free(&d);
    size_t kj = st == KEEL_OK && !said ? entities_pair(doc) : NONE;
    if (kj == NONE) goto out;
    keel_node *key = &doc->items[2 * kj], *value = &doc->items[2 * kj + 1];
    if (key->line != sp.key_line || key->col != 1 || value->kind != KEEL_NODE_SCALAR ||
        value->style != KEEL_STYLE_PLAIN || value->len != 0)
        goto out;
    for (size_t j = 2 * (kj + 1); j < 2 * doc->count; j++) /* the tail: below the list */
        shift_lines(&doc->items[j], sp.at[sp.n].line - sp.at[0].line);
    if (!keel__doc_get(doc, "keel") || keel__doc_get(doc, "conflicts")) goto out;
    r->n_ents = 0;
    KEEL__VEC_RESERVE(r->ents, 0, r->cap_ents, sp.n + 1, 1024);
    for (size_t k = 0; k < sp.n; k++) {
        const char *s = r->text + sp.at[k].start;
        size_t len = sp.at[k + 1].start - sp.at[k].start;
        size_t j = same_as_base(b, s, len);
        if (j != NONE) {
            keel_node *e = &r->ents[r->n_ents++];
            *e = b->list->items[j];
            e->line += sp.at[k].line - b->spans.at[j].line;
            continue;
        }
        if (!scratch) scratch = keel__arena_new();
        keel_node *item = parse_span(r, &sp, k, scratch, &buf, &cap);
        if (!item) goto out;
        size_t like = smap_get(&b->index, keel__doc_text(keel__doc_get(item, "uuid")));
        share_copy(r->arena, &r->ents[r->n_ents++], item, like == NONE ? NULL : &b->list->items[like]);
        keel__arena_reset(scratch);
        r->parsed++;
    }
    *value = (keel_node){ .kind = KEEL_NODE_SEQ,
                          .style = KEEL_STYLE_BLOCK,
                          .line = sp.at[0].line,
                          .col = sp.indent + 1,
                          .count = sp.n,
                          .items = r->ents };
    r->doc = doc;
    ok = true;
out:
    if (!ok) r->n_ents = 0;
    keel__arena_free(scratch);
    free(buf);
    keel__spans_free(&sp);
    return ok;
}

static void *read_side(void *arg)
{
    side_read *r = arg;
    if (r->like && r->like->spans.n && r->fast && read_side_spans(r)) {
        r->ok = r->by_spans = true;
        return NULL;
    }
    r->parsed = 0;
    keel__yaml_stream stream = { share_begin, share_item, NULL, r };
    r->ok = read_doc(r->text, r->len, r->name, r->lim, r->may_be_empty, r->arena, r->like ? &stream : NULL, &r->doc,
                     &r->diags);
    /* the streamed list kept its count, not its items: they are the shared copies */
    keel_node *list = r->ok && r->like ? (keel_node *)keel__doc_get(r->doc, "entities") : NULL;
    if (list && list->kind == KEEL_NODE_SEQ && list->count == r->n_ents) list->items = r->ents;
    return NULL;
}

/* The sides' trees and what indexes them; again is harmless. */
static void release_sides(side_read reads[3], base_ents *like)
{
    if (like->index.keys) smap_free(&like->index);
    like->index.keys = NULL;
    keel__spans_free(&like->spans);
    for (int s = 0; s < 3; s++) {
        keel__arena_free(reads[s].arena);
        free(reads[s].ents);
        reads[s].arena = NULL;
        reads[s].ents = NULL;
    }
}

keel_status keel_merge_scenes(const char *const texts[3], const size_t lens[3], const char *const names[3],
                               const keel_limits *lim, char **out, size_t *outlen, size_t *nconflicts,
                               keel_diags *d)
{
    return keel__merge_scenes_read(texts, lens, names, lim, true, NULL, out, outlen, nconflicts, d);
}

keel_status keel__merge_scenes_read(const char *const texts[3], const size_t lens[3], const char *const names[3],
                                    const keel_limits *lim, bool by_spans, keel__merge_reads *how, char **out,
                                    size_t *outlen, size_t *nconflicts, keel_diags *d)
{
    keel_limits defaults = keel_limits_default();
    if (!lim) lim = &defaults;
    merger M;
    memset(&M, 0, sizeof M);
    /* Base is read first, whole; ours and theirs then share every part of an entity that is
     * base's unchanged, so three big documents cost about one (peak memory is bounded by a
     * test: merge_memory). Ours and theirs are read at once, theirs on a thread of its own. */
    side_read reads[3];
    for (int s = 0; s < 3; s++) {
        reads[s] = (side_read){ .text = texts[s],
                                .len = lens[s],
                                .name = names[s],
                                .lim = lim,
                                .may_be_empty = s == BASE,
                                .arena = keel__arena_new(),
                                .fast = by_spans };
        keel_diags_init(&reads[s].diags);
    }
    read_side(&reads[BASE]);
    base_ents like = { keel__doc_get(reads[BASE].doc, "entities"), { 0 }, texts[BASE], { 0 } };
    if (reads[BASE].ok && like.list && like.list->kind == KEEL_NODE_SEQ && like.list->count) {
        smap_init(&like.index, like.list->count);
        bool unique = true;
        for (size_t i = 0; i < like.list->count; i++) {
            const char *u = keel__doc_text(keel__doc_get(&like.list->items[i], "uuid"));
            if (u && smap_get(&like.index, u) == NONE) smap_put(&like.index, u, i);
            else unique = false;
        }
        reads[OURS].like = reads[THEIRS].like = &like;
        if (by_spans && unique && keel__spans_cut(texts[BASE], lens[BASE], &like.spans) &&
            !spans_confirm(reads[BASE].doc, lens[BASE], &like.spans))
            keel__spans_free(&like.spans);
    }
    pthread_t theirs_thread;
    bool started = pthread_create(&theirs_thread, NULL, read_side, &reads[THEIRS]) == 0;
    read_side(&reads[OURS]);
    if (started) pthread_join(theirs_thread, NULL);
    else read_side(&reads[THEIRS]);
    bool ok = true;
    for (int s = 0; s < 3; s++) {
        if (how) {
            how->by_spans[s] = reads[s].by_spans;
            how->parsed[s] = reads[s].parsed;
        }
        ok = reads[s].ok && ok;
        M.doc[s] = reads[s].doc;
        keel_diags_append(d, &reads[s].diags, "");
        keel_diags_free(&reads[s].diags);
    }
    /* every check keel check makes, on each side before anything is merged: a side that would not
     * load (two entities under one UUID, a parent that is not there) is refused with its own
     * diagnostics, rather than merged into a file that silently lost one of them */
    for (int s = 0; ok && s < 3; s++) {
        if (!M.doc[s] || keel__doc_null(M.doc[s])) continue; /* no base: an empty scene */
        keel_load_opts o = keel_load_opts_default();
        o.limits = *lim;
        o.no_awake = true;
        o.file = names[s];
        keel_world *w = NULL;
        if (!reads[s].like) {
            if (keel__scene_build(M.doc[s], &o, &w, d) != KEEL_OK) ok = false;
            keel_world_free(w);
            continue;
        }
        /* a side that shares base's nodes has base's line numbers in them: when the check has
         * anything to say, it is said again from the side's own text */
        keel_diags tmp;
        keel_diags_init(&tmp);
        bool quiet = keel__scene_build(M.doc[s], &o, &w, &tmp) == KEEL_OK && tmp.count == 0;
        keel_diags_free(&tmp);
        keel_world_free(w);
        w = NULL;
        if (!quiet && keel_scene_parse(texts[s], lens[s], &o, &w, d) != KEEL_OK) ok = false;
        keel_world_free(w);
    }
    char *result = NULL;
    if (ok) {
        tree t = { 0 };
        mcomps rc = { 0 };
        keel_node *own[2] = { NULL, NULL };
        keel_node doc = build_doc(&M, &t, &rc, own);
        keel_world *w = keel__conflicts_load(&doc, lim, d);
        /* the world holds the merged scene now: every tree goes before its text is made */
        tree_free(&t);
        mcomps_free(&rc);
        for (int i = 0; i < 2; i++) keel_node_free(own[i]);
        merger_free_ents(&M);
        release_sides(reads, &like);
        if (w) result = keel__conflicts_write(w, &M.conflicts, outlen, d);
    }
    *nconflicts = M.conflicts.n;
    merger_free_ents(&M);
    keel__conflicts_free(&M.conflicts);
    release_sides(reads, &like);
    if (!result) return keel_diags_status(d) != KEEL_OK ? keel_diags_status(d) : KEEL_PARSE_ERROR;
    *out = result;
    return KEEL_OK;
}
