/* world.c — worlds, entity handles, the UUID index and the hierarchy (spawn, destroy, reparent, duplicate). */
#include "world_internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static keel_world *g_worlds;   /* every live world, for registry changes */
static uint64_t g_epoch;

/* ---------------------------------------------------------------- UUIDs */

static size_t uuid_hash(keel_uuid u);

static void uuid_prefetch(const keel_world *w, keel_uuid u)
{
    if (w->hash_cap) __builtin_prefetch(&w->hash[uuid_hash(u) & (w->hash_cap - 1)], 1);
}

/* UUIDs are drawn KEEL__UUID_AHEAD spawns ahead and their index slots prefetched, so the
 * cache miss of a random hash slot overlaps the work of the spawns in between. They come
 * from keel_uuid_v4 like every v4 UUID in keel: a per-thread pool that one getrandom(2)
 * fills for 256 UUIDs, and refills in a forked child (a seeded generator would repeat the
 * parent's sequence there). */
keel_uuid keel__new_uuid(keel_world *w)
{
    if (!w->next_ready) {
        for (int k = 0; k < KEEL__UUID_AHEAD; k++) w->next_uuid[k] = keel_uuid_v4();
        w->next_pos = 0;
        w->next_ready = true;
    }
    keel_uuid u = w->next_uuid[w->next_pos];
    keel_uuid n = keel_uuid_v4();
    w->next_uuid[w->next_pos] = n;
    w->next_pos = (w->next_pos + 1) % KEEL__UUID_AHEAD;
    uuid_prefetch(w, n);
    return u;
}

/* ---------------------------------------------------------------- big tables */

#define HUGE_PAGE ((size_t)2 << 20)

/* `n` bytes aligned to 2 MiB, the first `used` of which the caller will write all over (the
 * UUID index, reserved entity records): those are asked for transparent huge pages. A 4 KiB
 * page fault per 4 KiB and a TLB miss per random index probe were the bulk of a big spawn's
 * kernel time; the kernel may refuse (THP off), and then they fault as before. */
static void *huge_alloc(size_t n, size_t used)
{
    void *p = NULL;
    if (posix_memalign(&p, HUGE_PAGE, n)) abort();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    used &= ~(HUGE_PAGE - 1);
    if (used) (void)madvise(p, used, MADV_HUGEPAGE);
#else
    (void)used;
#endif
    return p;
}

static size_t uuid_hash(keel_uuid u)
{
    uint64_t a, b;
    memcpy(&a, u.bytes, 8);
    memcpy(&b, u.bytes + 8, 8);
    uint64_t h = (a ^ (b * 0x9e3779b97f4a7c15ull));
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
    return (size_t)h;
}

/* Slots hold (low 32 bits of the hash) << 32 | (index + 1): probing and rehashing
 * compare the stored hash first and only touch an entity on a likely match. */
static void hash_insert_raw(keel_world *w, uint64_t item)
{
    size_t mask = w->hash_cap - 1, p = (size_t)(item >> 32) & mask;
    while (w->hash[p]) p = (p + 1) & mask;
    w->hash[p] = item;
}

static void hash_grow(keel_world *w, size_t cap)
{
    uint64_t *old = w->hash;
    size_t old_cap = w->hash_cap;
    w->hash_cap = cap;
    size_t bytes = w->hash_cap * sizeof *w->hash;
    if (bytes >= HUGE_PAGE) { /* random UUIDs touch every page of a table at least a quarter full */
        w->hash = huge_alloc(bytes, bytes);
        memset(w->hash, 0, bytes);
    } else {
        w->hash = keel__xcalloc(w->hash_cap, sizeof *w->hash);
    }
    for (size_t p = 0; p < old_cap; p++)
        if (old[p]) hash_insert_raw(w, old[p]);
    free(old);
    for (int k = 0; w->next_ready && k < KEEL__UUID_AHEAD; k++) uuid_prefetch(w, w->next_uuid[k]);
}

static void hash_insert(keel_world *w, uint32_t i)
{
    if ((w->hash_used + 1) * 2 > w->hash_cap) hash_grow(w, w->hash_cap ? w->hash_cap * 2 : 64);
    uint32_t h = (uint32_t)uuid_hash(w->ents[i].uuid);
    hash_insert_raw(w, (uint64_t)h << 32 | (uint64_t)(i + 1));
    w->hash_used++;
}

static size_t hash_slot(const keel_world *w, keel_uuid u)
{
    if (!w->hash_cap) return SIZE_MAX;
    uint32_t h = (uint32_t)uuid_hash(u);
    size_t mask = w->hash_cap - 1, p = h & mask;
    while (w->hash[p]) {
        uint64_t it = w->hash[p];
        if ((uint32_t)(it >> 32) == h && keel_uuid_equal(w->ents[(uint32_t)it - 1].uuid, u)) return p;
        p = (p + 1) & mask;
    }
    return SIZE_MAX;
}

static uint32_t hash_index(const keel_world *w, size_t p) { return (uint32_t)w->hash[p] - 1; }

/* Backward-shift deletion keeps probe chains intact without tombstones. */
static void hash_remove(keel_world *w, keel_uuid u)
{
    size_t p = hash_slot(w, u);
    if (p == SIZE_MAX) return;
    size_t mask = w->hash_cap - 1, q = p;
    w->hash[p] = 0;
    for (;;) {
        q = (q + 1) & mask;
        if (!w->hash[q]) break;
        size_t home = (size_t)(w->hash[q] >> 32) & mask;
        /* move q back into the hole at p if its home is not in (p, q] */
        bool between = p <= q ? (home > p && home <= q) : (home > p || home <= q);
        if (!between) {
            w->hash[p] = w->hash[q];
            w->hash[q] = 0;
            p = q;
        }
    }
    w->hash_used--;
}

/* ---------------------------------------------------------------- interned names */

static uint32_t str_hash(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static keel__name *name_slot(keel__name *t, size_t cap, const char *s, uint32_t h)
{
    size_t mask = cap - 1, p = h & mask;
    while (t[p].s && !(t[p].hash == h && strcmp(t[p].s, s) == 0)) p = (p + 1) & mask;
    return &t[p];
}

/* Rebuilds the table without dead names, doubling it when the live ones need room. */
static void names_rebuild(keel_world *w)
{
    size_t live = 0;
    for (size_t p = 0; p < w->names_cap; p++) live += w->names[p].s && w->names[p].refs;
    size_t cap = w->names_cap ? w->names_cap : 64;
    while ((live + 1) * 4 > cap) cap *= 2;
    keel__name *t = keel__xcalloc(cap, sizeof *t);
    for (size_t p = 0; p < w->names_cap; p++) {
        keel__name *n = &w->names[p];
        if (!n->s) continue;
        if (!n->refs) { free(n->s); continue; }
        *name_slot(t, cap, n->s, n->hash) = *n;
    }
    free(w->names);
    w->names = t;
    w->names_cap = cap;
    w->names_used = live;
}

static const char *name_intern(keel_world *w, const char *s)
{
    if ((w->names_used + 1) * 2 > w->names_cap) names_rebuild(w);
    uint32_t h = str_hash(s);
    keel__name *n = name_slot(w->names, w->names_cap, s, h);
    if (!n->s) {
        n->s = keel__strdup(s);
        n->hash = h;
        n->refs = 0;
        w->names_used++;
    }
    n->refs++;
    return n->s;
}

static void name_release(keel_world *w, const char *s)
{
    if (!s) return;
    keel__name *n = name_slot(w->names, w->names_cap, s, str_hash(s));
    if (n->s && n->refs) n->refs--;
}

/* ---------------------------------------------------------------- worlds */

void keel__touch(keel_world *w)
{
    w->structure++;
    w->revision++;
}

static uint32_t ent_alloc(keel_world *w)
{
    if (w->free_count) return w->free_idx[--w->free_count];
    if (w->ent_count == w->ent_cap) {
        w->ent_cap = w->ent_cap ? w->ent_cap * 2 : 64;
        w->ents = keel__xrealloc(w->ents, w->ent_cap * sizeof *w->ents);
    }
    uint32_t i = w->ent_count++;
    memset(&w->ents[i], 0, sizeof w->ents[i]);
    w->ents[i].gen = 1;
    return i;
}

keel_world *keel_world_new(const char *name)
{
    keel_world *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->uuid = keel_uuid_v4();
    w->name = keel__strdup(name && keel__utf8_valid(name) ? name : ""); /* what a scene file can hold */
    w->grid = (keel_grid){ true, { 0, 0, 0 }, { 0, 0, 0, 1 }, 1.0, 10 };
    w->epoch = ++g_epoch;
    w->fixed_dt = 1.0 / 60.0;
    w->reuse_index = KEEL__NONE;
    uint32_t r = ent_alloc(w); /* the root: index 0, generation 1 */
    keel__ent *root = &w->ents[r];
    root->alive = root->enabled = true;
    root->name = name_intern(w, "");
    root->parent = root->first_child = root->last_child = root->next = root->prev = KEEL__NONE;
    w->next_world = g_worlds;
    if (g_worlds) g_worlds->prev_world = w;
    g_worlds = w;
    return w;
}

void keel_world_free(keel_world *w)
{
    if (!w) return;
    for (uint32_t i = 0; i < w->ent_count; i++) {
        keel__ent *en = &w->ents[i];
        if (!en->alive) continue;
        for (uint32_t m = 0; m < en->member_count; m++) {
            if (!en->members[m].kind) keel__unknown_free(en->members[m].unk);
        }
    }
    keel__entry_pools_free(w); /* every membership array at once */
    for (size_t p = 0; p < w->names_cap; p++) free(w->names[p].s);
    free(w->names);
    keel__stores_free(w);
    keel__runs_free(w);
    keel__faults_free(w);
    for (size_t i = 0; i < w->log_count; i++) keel_cmd_free(&w->log[i]);
    free(w->log);
    free(w->pending);
    free(w->ents);
    free(w->free_idx);
    free(w->held);
    free(w->hash);
    free(w->name);
    if (w->prev_world) w->prev_world->next_world = w->next_world;
    else g_worlds = w->next_world;
    if (w->next_world) w->next_world->prev_world = w->prev_world;
    free(w);
}

keel_uuid keel_world_uuid(const keel_world *w) { return w->uuid; }
keel_status keel_world_set_uuid(keel_world *w, keel_uuid u, keel_diags *d)
{
    if (keel_uuid_is_nil(u)) return keel_error(d, KEEL_INVALID_ARGUMENT, "", "a scene UUID cannot be nil");
    w->uuid = u;
    w->revision++;
    return KEEL_OK;
}

const char *keel_world_name(const keel_world *w) { return w->name; }

/* Names are written to scene files: NULL (InvalidArgument) and malformed UTF-8 are refused. */
static keel_status check_name(const char *name, const char *what, keel_diags *d)
{
    if (!name) return keel_error(d, KEEL_INVALID_ARGUMENT, "", "%s name cannot be null", what);
    if (!keel__utf8_valid(name)) return keel_error(d, KEEL_INVALID_ARGUMENT, "", "%s name must be valid UTF-8", what);
    return KEEL_OK;
}

keel_status keel_world_set_name(keel_world *w, const char *name, keel_diags *d)
{
    keel_status st = check_name(name, "a scene", d);
    if (st) return st;
    char *n = keel__strdup(name);
    free(w->name);
    w->name = n;
    w->revision++;
    return KEEL_OK;
}

const keel_grid *keel_world_grid(const keel_world *w) { return &w->grid; }

keel_status keel_world_set_grid(keel_world *w, const keel_grid *g, keel_diags *d)
{
    if (!g) return keel_error(d, KEEL_INVALID_ARGUMENT, "settings.grid", "no grid given");
    for (int k = 0; k < 3; k++)
        if (!isfinite(g->origin[k]))
            return keel_error(d, KEEL_INVALID_ARGUMENT, "settings.grid.origin", "grid origin is not finite");
    double len = 0;
    for (int k = 0; k < 4; k++) {
        if (!isfinite(g->orientation[k]))
            return keel_error(d, KEEL_INVALID_ARGUMENT, "settings.grid.orientation",
                              "grid orientation is not finite");
        len += g->orientation[k] * g->orientation[k];
    }
    if (len <= 0)
        return keel_error(d, KEEL_INVALID_ARGUMENT, "settings.grid.orientation",
                          "grid orientation must be a non-zero quaternion");
    if (!isfinite(g->base_spacing) || g->base_spacing <= 0)
        return keel_error(d, KEEL_INVALID_ARGUMENT, "settings.grid.base_spacing",
                          "grid base_spacing must be > 0");
    if (g->major_line_every < 1)
        return keel_error(d, KEEL_INVALID_ARGUMENT, "settings.grid.major_line_every",
                          "grid major_line_every must be >= 1");
    w->grid = *g;
    len = sqrt(len);
    if (fabs(len - 1.0) > 4 * DBL_EPSILON) /* near-unit stays put: see keel_field_check */
        for (int k = 0; k < 4; k++) w->grid.orientation[k] /= len;
    w->revision++;
    return KEEL_OK;
}

uint64_t keel_world_revision(const keel_world *w) { return w->revision; }
uint64_t keel_world_epoch(const keel_world *w) { return w->epoch; }
keel_entity keel_world_root(const keel_world *w) { return keel__handle(w, 0); }
size_t keel_world_entity_count(const keel_world *w) { return w->live; }

void keel_world_reserve(keel_world *w, size_t entities)
{
    if (!w || entities >= UINT32_MAX / 4) return;
    uint32_t n = (uint32_t)entities + 1; /* the root too */
    if (n > w->ent_cap) {
        size_t bytes = n * sizeof *w->ents;
        if (bytes >= 2 * HUGE_PAGE) { /* every reserved record is to be written */
            keel__ent *ents = huge_alloc(bytes, bytes);
            memcpy(ents, w->ents, w->ent_count * sizeof *w->ents);
            free(w->ents);
            w->ents = ents;
        } else {
            w->ents = keel__xrealloc(w->ents, bytes);
        }
        w->ent_cap = n;
    }
    size_t cap = w->hash_cap ? w->hash_cap : 64;
    while (n * 2 > cap) cap *= 2;
    if (cap > w->hash_cap) hash_grow(w, cap);
}

/* ---------------------------------------------------------------- handles */

keel__ent *keel__ent_get(const keel_world *w, keel_entity e)
{
    uint32_t i = (uint32_t)e, gen = (uint32_t)(e >> 32);
    if (!w || !gen || i >= w->ent_count) return NULL;
    keel__ent *en = &w->ents[i];
    return en->alive && en->gen == gen ? en : NULL;
}

/* A live non-root entity's index, or KEEL__NONE. */
static uint32_t live_index(const keel_world *w, keel_entity e)
{
    keel__ent *en = keel__ent_get(w, e);
    return en && (uint32_t)e != 0 ? (uint32_t)e : KEEL__NONE;
}

bool keel_alive(const keel_world *w, keel_entity e) { return live_index(w, e) != KEEL__NONE; }

/* A command's entity: live and not the root (ProtectedEntity: "the scene root cannot be <what>"). */
static keel_status command_target(const keel_world *w, keel_entity e, const char *what, uint32_t *out,
                                  keel_diags *d)
{
    *out = live_index(w, e);
    if (keel__ent_get(w, e) && (uint32_t)e == 0)
        return keel_error(d, KEEL_PROTECTED_ENTITY, "", "the scene root cannot be %s", what);
    if (*out == KEEL__NONE) return keel_error(d, KEEL_NOT_FOUND, "", "entity not found");
    return KEEL_OK;
}

keel_entity keel_find(const keel_world *w, keel_uuid u)
{
    size_t p = hash_slot(w, u);
    return p == SIZE_MAX ? KEEL_NO_ENTITY : keel__handle(w, hash_index(w, p));
}

keel_entity keel_find_name(const keel_world *w, const char *name)
{
    if (!name) return KEEL_NO_ENTITY;
    for (keel_entity e = keel_next(w, 0); e; e = keel_next(w, e))
        if (strcmp(w->ents[(uint32_t)e].name, name) == 0) return e;
    return KEEL_NO_ENTITY;
}

keel_uuid keel_entity_uuid(const keel_world *w, keel_entity e)
{
    keel__ent *en = keel__ent_get(w, e);
    return en ? en->uuid : (keel_uuid){ { 0 } };
}

const char *keel_entity_name(const keel_world *w, keel_entity e)
{
    keel__ent *en = keel__ent_get(w, e);
    return en ? en->name : NULL;
}

keel_entity keel_entity_parent(const keel_world *w, keel_entity e)
{
    keel__ent *en = keel__ent_get(w, e);
    if (!en || en->parent == KEEL__NONE || en->parent == 0) return KEEL_NO_ENTITY;
    return keel__handle(w, en->parent);
}

bool keel_entity_enabled(const keel_world *w, keel_entity e)
{
    keel__ent *en = keel__ent_get(w, e);
    return en && en->enabled;
}

bool keel_entity_active(const keel_world *w, keel_entity e)
{
    return keel__ent_get(w, e) && keel__active(w, (uint32_t)e);
}

size_t keel_entity_child_count(const keel_world *w, keel_entity e)
{
    keel__ent *en = keel__ent_get(w, e ? e : keel_world_root(w));
    return en ? en->child_count : 0;
}

/* Starts from the nearest of the first child, the last child and the previous answer
 * (cached per world until the next structural change): loops by index run in O(1) a step. */
keel_entity keel_entity_child(const keel_world *w, keel_entity e, size_t n)
{
    keel__ent *en = keel__ent_get(w, e ? e : keel_world_root(w));
    if (!en || n >= en->child_count) return KEEL_NO_ENTITY;
    uint32_t p = (uint32_t)(en - w->ents);
    uint32_t c = en->first_child;
    size_t at = 0;
    if (en->child_count - 1 - n < n) {
        c = en->last_child;
        at = en->child_count - 1;
    }
    bool cached = w->child_structure == w->structure + 1 && w->child_parent == p;
    if (cached) {
        size_t dc = w->child_pos > n ? w->child_pos - n : n - w->child_pos, db = at > n ? at - n : n - at;
        if (dc < db) {
            c = w->child_at;
            at = w->child_pos;
        }
    }
    for (; at < n; at++) c = w->ents[c].next;
    for (; at > n; at--) c = w->ents[c].prev;
    keel_world *mw = (keel_world *)w; /* a cache only: nothing observable changes */
    mw->child_parent = p;
    mw->child_at = c;
    mw->child_pos = n;
    mw->child_structure = w->structure + 1;
    return keel__handle(w, c);
}

keel_entity keel_entity_first_child(const keel_world *w, keel_entity e)
{
    keel__ent *en = keel__ent_get(w, e ? e : keel_world_root(w));
    return en && en->first_child != KEEL__NONE ? keel__handle(w, en->first_child) : KEEL_NO_ENTITY;
}

keel_entity keel_entity_next_sibling(const keel_world *w, keel_entity e)
{
    keel__ent *en = keel__ent_get(w, e);
    if (!en || (uint32_t)e == 0 || en->next == KEEL__NONE) return KEEL_NO_ENTITY;
    return keel__handle(w, en->next);
}

keel_entity keel_next(const keel_world *w, keel_entity prev)
{
    uint32_t i;
    if (!prev) {
        i = w->ents[0].first_child;
        return i == KEEL__NONE ? KEEL_NO_ENTITY : keel__handle(w, i);
    }
    if (!keel__ent_get(w, prev)) return KEEL_NO_ENTITY;
    i = (uint32_t)prev;
    if (w->ents[i].first_child != KEEL__NONE) return keel__handle(w, w->ents[i].first_child);
    return keel__next_after_subtree(w, i);
}

keel_entity keel__next_after_subtree(const keel_world *w, uint32_t i)
{
    for (; i != 0 && i != KEEL__NONE; i = w->ents[i].parent)
        if (w->ents[i].next != KEEL__NONE) return keel__handle(w, w->ents[i].next);
    return KEEL_NO_ENTITY;
}

/* ---------------------------------------------------------------- hierarchy */

static void unlink_child(keel_world *w, uint32_t c)
{
    keel__ent *en = &w->ents[c];
    keel__ent *p = &w->ents[en->parent];
    if (en->prev != KEEL__NONE) w->ents[en->prev].next = en->next;
    else p->first_child = en->next;
    if (en->next != KEEL__NONE) w->ents[en->next].prev = en->prev;
    else p->last_child = en->prev;
    p->child_count--;
    en->parent = en->next = en->prev = KEEL__NONE;
}

/* Inserts c among p's children at `index` (SIZE_MAX or past the end: last). */
static void link_child(keel_world *w, uint32_t p, uint32_t c, size_t index)
{
    keel__ent *pe = &w->ents[p], *en = &w->ents[c];
    en->parent = p;
    uint32_t at = KEEL__NONE; /* the sibling c goes before */
    if (index < pe->child_count) {
        at = pe->first_child;
        while (index--) at = w->ents[at].next;
    }
    if (at == KEEL__NONE) {
        en->prev = pe->last_child;
        en->next = KEEL__NONE;
        if (pe->last_child != KEEL__NONE) w->ents[pe->last_child].next = c;
        else pe->first_child = c;
        pe->last_child = c;
    } else {
        en->next = at;
        en->prev = w->ents[at].prev;
        if (en->prev != KEEL__NONE) w->ents[en->prev].next = c;
        else pe->first_child = c;
        w->ents[at].prev = c;
    }
    pe->child_count++;
}

static size_t sibling_index(const keel_world *w, uint32_t i)
{
    size_t n = 0;
    for (uint32_t s = w->ents[i].prev; s != KEEL__NONE; s = w->ents[s].prev) n++;
    return n;
}

static size_t depth_of(const keel_world *w, uint32_t i) /* root 0, top level 1 */
{
    size_t d = 0;
    while (i != 0) { i = w->ents[i].parent; d++; }
    return d;
}

static size_t height_of(const keel_world *w, uint32_t i) /* 1 for a leaf */
{
    size_t h = 1;
    for (uint32_t c = w->ents[i].first_child; c != KEEL__NONE; c = w->ents[c].next) {
        size_t ch = height_of(w, c) + 1;
        if (ch > h) h = ch;
    }
    return h;
}

/* Resolves a parent argument: KEEL_NO_ENTITY and the root both mean top level. */
static keel_status parent_index(const keel_world *w, keel_entity parent, uint32_t *out, keel_diags *d)
{
    if (!parent) { *out = 0; return KEEL_OK; }
    if (!keel__ent_get(w, parent)) return keel_error(d, KEEL_NOT_FOUND, "", "parent entity not found");
    *out = (uint32_t)parent;
    return KEEL_OK;
}

keel_status keel__spawn_at(keel_world *w, const char *name, uint32_t parent, size_t index,
                           const keel_uuid *uuid, keel_entity *out, keel_diags *d)
{
    keel_uuid u;
    if (name && !keel__utf8_valid(name))
        return keel_error(d, KEEL_INVALID_ARGUMENT, "", "an entity name must be valid UTF-8");
    if (uuid) {
        if (keel_uuid_is_nil(*uuid))
            return keel_error(d, KEEL_INVALID_ARGUMENT, "", "an entity UUID cannot be nil");
        if (hash_slot(w, *uuid) != SIZE_MAX) {
            char s[37];
            keel_uuid_format(*uuid, s);
            return keel_error(d, KEEL_INVALID_OPERATION, "", "entity %s already exists", s);
        }
        u = *uuid;
    } else {
        do u = keel__new_uuid(w); while (hash_slot(w, u) != SIZE_MAX);
    }
    if (depth_of(w, parent) + 1 > KEEL__MAX_DEPTH)
        return keel_error(d, KEEL_LIMIT_EXCEEDED, "", "hierarchy depth limit (%d) exceeded", KEEL__MAX_DEPTH);
    uint32_t i = KEEL__NONE;
    for (size_t k = 0; w->reuse_index != KEEL__NONE && k < w->held_count; k++)
        if (w->held[k] == w->reuse_index && w->ents[w->reuse_index].gen == w->reuse_gen + 1) {
            i = w->reuse_index; /* a rolled-back destroy: the same handle comes back */
            w->held[k] = w->held[--w->held_count];
            w->ents[i].gen = w->reuse_gen;
            break;
        }
    if (i == KEEL__NONE) i = ent_alloc(w);
    keel__ent *en = &w->ents[i];
    en->uuid = u;
    en->name = name_intern(w, name ? name : "");
    en->alive = en->enabled = true;
    en->dying = false;
    en->first_child = en->last_child = KEEL__NONE;
    en->child_count = 0;
    en->members = NULL;
    en->member_count = en->member_cap = 0;
    link_child(w, parent, i, index);
    hash_insert(w, i);
    w->live++;
    keel__touch(w);
    if (out) *out = keel__handle(w, i);
    return KEEL_OK;
}

keel_status keel_spawn(keel_world *w, const char *name, keel_entity parent, const keel_uuid *uuid,
                       keel_entity *out, keel_cmd *inverse, keel_diags *d)
{
    keel_cmd tmp;
    keel_cmd *inv = keel__cmd_begin(w, inverse, &tmp);
    uint32_t p = 0;
    keel_entity e = 0;
    keel_status st = parent_index(w, parent, &p, d);
    if (st == KEEL_OK) st = keel__spawn_at(w, name, p, SIZE_MAX, uuid, &e, d);
    if (st == KEEL_OK && inv) {
        inv->type = KEEL_CMD_DESTROY;
        inv->entity = w->ents[(uint32_t)e].uuid;
    }
    if (out) *out = e;
    return keel__cmd_end(w, st, inv, &tmp);
}

/* ---------------------------------------------------------------- destroy */

static void free_push(keel_world *w, uint32_t i)
{
    if (w->free_count == w->free_cap) {
        w->free_cap = w->free_cap ? w->free_cap * 2 : 64;
        w->free_idx = keel__xrealloc(w->free_idx, w->free_cap * sizeof *w->free_idx);
    }
    w->free_idx[w->free_count++] = i;
}

void keel__held_release(keel_world *w)
{
    for (size_t k = 0; k < w->held_count; k++) free_push(w, w->held[k]);
    w->held_count = 0;
}

static keel_status destroy_index(keel_world *w, uint32_t i)
{
    w->ents[i].dying = true;
    keel__members_drop(w, i, w->rolling_back);
    keel__ent *en = &w->ents[i];
    en->dying = false;
    while (en->first_child != KEEL__NONE) {
        uint32_t c = en->first_child;
        unlink_child(w, c);
        link_child(w, 0, c, SIZE_MAX);
        en = &w->ents[i];
    }
    unlink_child(w, i);
    hash_remove(w, en->uuid);
    name_release(w, en->name);
    keel__entries_release(w, en);
    en->name = NULL;
    en->alive = false;
    /* an index whose generation would wrap is retired, so a stale handle never matches again */
    if (en->gen < UINT32_MAX) {
        en->gen++;
        if (w->txn_depth > 0 && !w->rolling_back) {
            if (w->held_count == w->held_cap) {
                w->held_cap = w->held_cap ? w->held_cap * 2 : 16;
                w->held = keel__xrealloc(w->held, w->held_cap * sizeof *w->held);
            }
            w->held[w->held_count++] = i;
        } else {
            free_push(w, i);
        }
    }
    w->live--;
    keel__touch(w);
    return KEEL_OK;
}

/* The destroy inverse: SPAWN from the entity document at its sibling index, then
 * REPARENT each former child back at its index. */
static void destroy_inverse(keel_world *w, uint32_t i, keel_cmd *inv)
{
    keel__ent *en = &w->ents[i];
    size_t n = 1 + en->child_count;
    inv->type = KEEL_CMD_BATCH;
    inv->items = keel__xcalloc(n, sizeof *inv->items);
    inv->item_count = n;
    keel_cmd *sp = &inv->items[0];
    sp->type = KEEL_CMD_SPAWN;
    sp->entity = en->uuid;
    sp->parent = en->parent == 0 ? (keel_uuid){ { 0 } } : w->ents[en->parent].uuid;
    sp->index = sibling_index(w, i);
    sp->tree = keel__entity_tree(w, i);
    sp->slot = i;               /* the old handle, so a rollback can restore it exactly */
    sp->version = (int)en->gen;
    size_t k = 1;
    for (uint32_t c = en->first_child; c != KEEL__NONE; c = w->ents[c].next, k++) {
        keel_cmd *rp = &inv->items[k];
        rp->type = KEEL_CMD_REPARENT;
        rp->entity = w->ents[c].uuid;
        rp->parent = en->uuid;
        rp->index = k - 1;
    }
}

keel_status keel_destroy(keel_world *w, keel_entity e, keel_cmd *inverse, keel_diags *d)
{
    keel_cmd tmp;
    keel_cmd *inv = keel__cmd_begin(w, inverse, &tmp);
    uint32_t i;
    keel_status st = command_target(w, e, "destroyed", &i, d);
    /* a dying entity is destroyed from its own on_destroy: the outer destroy finishes it */
    if (st == KEEL_OK && !w->ents[i].dying) {
        if (inv) destroy_inverse(w, i, inv);
        st = destroy_index(w, i);
    }
    return keel__cmd_end(w, st, inv, &tmp);
}

/* ---------------------------------------------------------------- reparent, rename, enable */

/* Moves live entity i under p at `index`, or says why not. */
static keel_status move_under(keel_world *w, uint32_t i, uint32_t p, size_t index, keel_diags *d)
{
    for (uint32_t a = p; a != 0; a = w->ents[a].parent)
        if (a == i) return keel_error(d, KEEL_INVALID_OPERATION, "", "reparenting would create a cycle");
    if (depth_of(w, p) + height_of(w, i) > KEEL__MAX_DEPTH)
        return keel_error(d, KEEL_LIMIT_EXCEEDED, "", "hierarchy depth limit (%d) exceeded", KEEL__MAX_DEPTH);
    unlink_child(w, i);
    link_child(w, p, i, index);
    keel__touch(w);
    return KEEL_OK;
}

keel_status keel__reparent_at(keel_world *w, keel_entity e, keel_entity parent, size_t index, keel_cmd *inverse,
                              keel_diags *d)
{
    keel_cmd tmp;
    keel_cmd *inv = keel__cmd_begin(w, inverse, &tmp);
    uint32_t i, p = 0;
    keel_status st = command_target(w, e, "reparented", &i, d);
    if (st == KEEL_OK) st = parent_index(w, parent, &p, d);
    if (st == KEEL_OK) {
        uint32_t op = w->ents[i].parent;
        keel_uuid old_parent = op == 0 ? (keel_uuid){ { 0 } } : w->ents[op].uuid;
        size_t old_index = sibling_index(w, i);
        st = move_under(w, i, p, index, d);
        if (st == KEEL_OK && inv) {
            inv->type = KEEL_CMD_REPARENT;
            inv->entity = w->ents[i].uuid;
            inv->parent = old_parent;
            inv->index = old_index;
        }
    }
    return keel__cmd_end(w, st, inv, &tmp);
}

keel_status keel_reparent(keel_world *w, keel_entity e, keel_entity parent, keel_cmd *inverse, keel_diags *d)
{
    return keel__reparent_at(w, e, parent, SIZE_MAX, inverse, d);
}

keel_status keel_rename(keel_world *w, keel_entity e, const char *name, keel_cmd *inverse, keel_diags *d)
{
    keel_cmd tmp;
    keel_cmd *inv = keel__cmd_begin(w, inverse, &tmp);
    uint32_t i;
    keel_status st = command_target(w, e, "renamed", &i, d);
    if (st == KEEL_OK) st = check_name(name, "an entity", d);
    if (st == KEEL_OK) {
        keel__ent *en = &w->ents[i];
        if (inv) {
            inv->type = KEEL_CMD_RENAME;
            inv->entity = en->uuid;
            inv->name = keel__strdup(en->name);
        }
        const char *old = en->name;
        en->name = name_intern(w, name); /* before the release: the same name stays alive */
        name_release(w, old);
        w->revision++;
    }
    return keel__cmd_end(w, st, inv, &tmp);
}

keel_status keel_set_enabled(keel_world *w, keel_entity e, bool enabled, keel_cmd *inverse, keel_diags *d)
{
    keel_cmd tmp;
    keel_cmd *inv = keel__cmd_begin(w, inverse, &tmp);
    uint32_t i;
    keel_status st = command_target(w, e, "disabled", &i, d);
    if (st == KEEL_OK) {
        if (inv) {
            inv->type = KEEL_CMD_ENABLE;
            inv->entity = w->ents[i].uuid;
            inv->enabled = w->ents[i].enabled;
        }
        w->ents[i].enabled = enabled;
        w->revision++;
    }
    return keel__cmd_end(w, st, inv, &tmp);
}

/* ---------------------------------------------------------------- duplicate */

static void collect_subtree(const keel_world *w, uint32_t i, uint32_t **list, size_t *n, size_t *cap)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        *list = keel__xrealloc(*list, *cap * sizeof **list);
    }
    (*list)[(*n)++] = i;
    for (uint32_t c = w->ents[i].first_child; c != KEEL__NONE; c = w->ents[c].next)
        collect_subtree(w, c, list, n, cap);
}

static void remap_entity_fields(keel_world *w, uint32_t copy, const uint32_t *orig, const uint32_t *copies,
                                size_t n)
{
    keel__ent *en = &w->ents[copy];
    for (uint32_t m = 0; m < en->member_count; m++) {
        keel__entry *me = &en->members[m];
        if (!me->kind) continue;
        const keel_kind_desc *kd = keel_kind_describe(me->kind);
        void *rec = keel__store_rec(&w->stores[me->kind], me->row);
        for (size_t f = 0; f < kd->field_count; f++) {
            if (kd->fields[f].type != KEEL_T_ENTITY) continue;
            keel_uuid *u = (keel_uuid *)((unsigned char *)rec + keel_kind_field_offset(me->kind, (int)f));
            for (size_t k = 0; k < n; k++)
                if (keel_uuid_equal(*u, w->ents[orig[k]].uuid)) {
                    *u = w->ents[copies[k]].uuid;
                    break;
                }
        }
    }
}

keel_status keel_duplicate(keel_world *w, keel_entity e, keel_entity parent, keel_entity *out,
                           keel_cmd *inverse, keel_diags *d)
{
    keel_cmd tmp;
    keel_cmd *inv = keel__cmd_begin(w, inverse, &tmp);
    uint32_t i, p = 0;
    if (out) *out = KEEL_NO_ENTITY;
    keel_status st = command_target(w, e, "duplicated", &i, d);
    if (st == KEEL_OK && parent) st = parent_index(w, parent, &p, d);
    else if (st == KEEL_OK) p = w->ents[i].parent;
    if (st == KEEL_OK && depth_of(w, p) + height_of(w, i) > KEEL__MAX_DEPTH)
        st = keel_error(d, KEEL_LIMIT_EXCEEDED, "", "hierarchy depth limit (%d) exceeded", KEEL__MAX_DEPTH);
    if (st) return keel__cmd_end(w, st, inv, &tmp);

    uint32_t *orig = NULL;
    size_t n = 0, cap = 0;
    collect_subtree(w, i, &orig, &n, &cap); /* before creating copies: p may lie inside */
    uint32_t *copies = keel__xrealloc(NULL, n * sizeof *copies);
    for (size_t k = 0; k < n; k++) {
        uint32_t op = w->ents[orig[k]].parent, cp = p;
        if (k > 0)
            for (size_t j = 0; j < k; j++)
                if (orig[j] == op) { cp = copies[j]; break; }
        keel_entity ce;
        keel__spawn_at(w, w->ents[orig[k]].name, cp, SIZE_MAX, NULL, &ce, NULL);
        copies[k] = (uint32_t)ce;
        w->ents[copies[k]].enabled = w->ents[orig[k]].enabled;
        for (uint32_t m = 0; m < w->ents[orig[k]].member_count; m++) {
            keel__entry me = w->ents[orig[k]].members[m]; /* a copy: the entity array may move */
            keel__entry_clone(w, copies[k], &me);
        }
    }
    for (size_t k = 0; k < n; k++) remap_entity_fields(w, copies[k], orig, copies, n);
    /* the copies come to life: awake, in run order */
    if (!w->rolling_back)
        for (size_t k = 0; k < n; k++) {
            for (uint32_t m = 0; m < w->ents[copies[k]].member_count; m++) {
                keel__entry *me = &w->ents[copies[k]].members[m];
                if (!me->kind || me->awoken) continue;
                me->awoken = true;
                keel__call_hook(w, copies[k], me->kind, me->slot, KEEL_PHASE_AWAKE, 0);
            }
        }
    if (inv) {
        /* destroy the copies deepest-first so none is reparented to the top level */
        inv->type = KEEL_CMD_BATCH;
        inv->items = keel__xcalloc(n, sizeof *inv->items);
        inv->item_count = n;
        for (size_t k = 0; k < n; k++) {
            inv->items[k].type = KEEL_CMD_DESTROY;
            inv->items[k].entity = w->ents[copies[n - 1 - k]].uuid;
        }
    }
    if (out) *out = keel__handle(w, copies[0]);
    free(orig);
    free(copies);
    return keel__cmd_end(w, KEEL_OK, inv, &tmp);
}

/* ---------------------------------------------------------------- transforms */

static void trs_matrix(const keel_transform *t, double m[16])
{
    double x = t->rotation[0], y = t->rotation[1], z = t->rotation[2], q = t->rotation[3];
    double r[9] = {
        1 - 2 * (y * y + z * z), 2 * (x * y + z * q), 2 * (x * z - y * q),
        2 * (x * y - z * q), 1 - 2 * (x * x + z * z), 2 * (y * z + x * q),
        2 * (x * z + y * q), 2 * (y * z - x * q), 1 - 2 * (x * x + y * y),
    }; /* column-major 3x3 */
    for (int c = 0; c < 3; c++) {
        for (int k = 0; k < 3; k++) m[c * 4 + k] = r[c * 3 + k] * t->scale[c];
        m[c * 4 + 3] = 0;
    }
    m[12] = t->position[0];
    m[13] = t->position[1];
    m[14] = t->position[2];
    m[15] = 1;
}

static void mat_mul(const double a[16], const double b[16], double out[16])
{
    double r[16];
    for (int c = 0; c < 4; c++)
        for (int k = 0; k < 4; k++) {
            double s = 0;
            for (int j = 0; j < 4; j++) s += a[j * 4 + k] * b[c * 4 + j];
            r[c * 4 + k] = s;
        }
    memcpy(out, r, sizeof r);
}

static void identity(double m[16])
{
    memset(m, 0, 16 * sizeof *m);
    m[0] = m[5] = m[10] = m[15] = 1;
}

keel_status keel_world_matrix(const keel_world *w, keel_entity e, double out[16])
{
    identity(out);
    if (!keel__ent_get(w, e)) return KEEL_NOT_FOUND;
    keel_kind_id tk = keel_kind_find("core:transform");
    for (uint32_t i = (uint32_t)e; i != 0 && i != KEEL__NONE; i = w->ents[i].parent) {
        keel__entry *m = tk ? keel__entry_find(&w->ents[i], tk, 0) : NULL;
        if (!m) continue;
        double local[16];
        trs_matrix(keel__store_rec(&w->stores[tk], m->row), local);
        mat_mul(local, out, out);
    }
    return KEEL_OK;
}

/* ---------------------------------------------------------------- registry changes */

void keel__worlds_relayout(keel_kind_id k, const keel_kind_desc *old_desc, keel_diags *d)
{
    for (keel_world *w = g_worlds; w; w = w->next_world) keel__world_relayout(w, k, old_desc, d);
}

void keel__worlds_adopt(keel_kind_id k, keel_diags *d)
{
    for (keel_world *w = g_worlds; w; w = w->next_world) keel__world_adopt(w, k, d);
}

keel_status keel__worlds_check_kind(keel_kind_id k, const keel_kind_desc *nd, keel_diags *d)
{
    keel_status st = KEEL_OK;
    for (keel_world *w = g_worlds; w; w = w->next_world)
        if (keel__world_check_kind(w, k, nd, d)) st = KEEL_INVALID_OPERATION;
    return st;
}

void keel__worlds_refit(keel_kind_id k, keel_diags *d)
{
    for (keel_world *w = g_worlds; w; w = w->next_world) keel__world_refit(w, k, d);
}
