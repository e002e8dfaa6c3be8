/* entity.c — the entity table: generations, the UUID index, interned names, spawn, destroy, rename, enable, duplicate. */
#include "model/world.h"
#include "model/prof.h"
#include "model/command.h"
#include "model/hierarchy.h"
#include "model/txn.h"
#include "base/vec.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static size_t uuid_hash(keel_uuid u);
static bool slot_may_be(const keel_world *w, uint32_t it, size_t h);
static uint32_t slot_ent(const keel_world *w, uint32_t it);
#define HUGE_PAGE ((size_t)2 << 20)

static void uuid_prefetch(const keel_world *w, keel_uuid u)
{
    if (w->hash_cap) __builtin_prefetch(&w->hash[uuid_hash(u) & (w->hash_cap - 1)], 1);
}

/* UUIDs are drawn KEEL__UUID_AHEAD at a time, a half of the ring each, and their index slots
 * prefetched, so the cache miss of a random hash slot overlaps the work of the 8 to 15 spawns
 * before one is used. They come from the pool of keel_uuid_v4 like every v4 UUID in keel (uuid.c). */
static void uuid_draw_half(keel_world *w, uint32_t at)
{
    keel__uuid_v4_fill(&w->next_uuid[at], KEEL__UUID_AHEAD);
    for (uint32_t k = at; k < at + KEEL__UUID_AHEAD; k++) uuid_prefetch(w, w->next_uuid[k]);
}

keel_uuid keel__new_uuid(keel_world *w)
{
    if (w->ids_from_rng) return keel__random_uuid(w->idrng);
    /* after a fork the ring holds UUIDs the parent hands out too: drawn again (issue: a forked
     * child's spawns took the parent's next 8 to 16 UUIDs) */
    if (!w->next_ready || w->next_forks != keel__uuid_forks) {
        w->next_forks = keel__uuid_forks;
        uuid_draw_half(w, 0);
        uuid_draw_half(w, KEEL__UUID_AHEAD);
        w->next_pos = 0;
        w->next_ready = true;
    }
    keel_uuid u = w->next_uuid[w->next_pos++];
    if (w->next_pos % KEEL__UUID_AHEAD == 0) { /* a half is used up: draw it again */
        uuid_draw_half(w, w->next_pos - KEEL__UUID_AHEAD);
        w->next_pos %= KEEL__UUID_RING;
    }
    return u;
}

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

/* Slots are 4 bytes (0: empty), the table at most 4/5 full (HASH_FULL: 5.2 bytes an entity at
 * 100k instead of 10.5 when at most half full): the low hash_ibits bits hold the entity index
 * + 1, the bits above them the same bits of the UUID's hash. A probe compares
 * those first and reads the UUID in the entity record only when they match (a slot's home is
 * its entity's hash), so looking for a new UUID almost never leaves the table. */
#define HASH_FULL(used, cap) ((uint64_t)(used) * 5 > (uint64_t)(cap) * 4)
static uint32_t idx_mask(const keel_world *w) { return (uint32_t)(((uint64_t)1 << w->hash_ibits) - 1); }
static uint32_t slot_item(const keel_world *w, size_t h, uint32_t i)
{
    return ((uint32_t)((uint64_t)h >> 32) & ~idx_mask(w)) | (i + 1);
}
static bool slot_may_be(const keel_world *w, uint32_t it, size_t h)
{
    return ((it ^ (uint32_t)((uint64_t)h >> 32)) & ~idx_mask(w)) == 0;
}
static uint32_t slot_ent(const keel_world *w, uint32_t it) { return (it & idx_mask(w)) - 1; }

static size_t ent_home(const keel_world *w, uint32_t it)
{
    return uuid_hash(w->ents[slot_ent(w, it)].uuid) & (w->hash_cap - 1);
}

static void hash_insert_raw(keel_world *w, size_t home, uint32_t item)
{
    size_t mask = w->hash_cap - 1, p = home & mask;
    while (w->hash[p]) p = (p + 1) & mask;
    w->hash[p] = item;
}

static unsigned bits_for(uint64_t n) /* bits to hold n (n >= 1) */
{
    return 64u - (unsigned)__builtin_clzll((unsigned long long)n);
}

/* Rebuilds the table at `cap` slots, with index fields wide enough for every entity index. */
static void hash_grow(keel_world *w, size_t cap)
{
    uint32_t *old = w->hash;
    size_t old_cap = w->hash_cap;
    unsigned old_bits = w->hash_ibits;
    unsigned ib = bits_for((uint64_t)(w->ent_cap > w->ent_count ? w->ent_cap : w->ent_count) + 1);
    w->hash_ibits = ib < 12 ? 12 : ib;
    w->hash_cap = cap;
    size_t bytes = w->hash_cap * sizeof *w->hash;
    if (bytes >= HUGE_PAGE) { /* random UUIDs touch every page of a table at least 2/5 full */
        w->hash = huge_alloc(bytes, bytes);
        memset(w->hash, 0, bytes);
    } else {
        w->hash = keel__xcalloc(w->hash_cap, sizeof *w->hash);
    }
    for (size_t p = 0; p < old_cap; p++) {
        if (!old[p]) continue;
        uint32_t i = (old[p] & (uint32_t)(((uint64_t)1 << old_bits) - 1)) - 1;
        size_t h = uuid_hash(w->ents[i].uuid);
        hash_insert_raw(w, h, slot_item(w, h, i));
    }
    free(old);
    for (int k = 0; w->next_ready && k < KEEL__UUID_RING; k++) uuid_prefetch(w, w->next_uuid[k]);
}

static void hash_insert(keel_world *w, uint32_t i)
{
    if (HASH_FULL(w->hash_used + 1, w->hash_cap)) hash_grow(w, w->hash_cap ? w->hash_cap * 2 : 64);
    else if (bits_for((uint64_t)i + 1) > w->hash_ibits) hash_grow(w, w->hash_cap); /* wider index fields */
    size_t h = uuid_hash(w->ents[i].uuid);
    hash_insert_raw(w, h, slot_item(w, h, i));
    w->hash_used++;
}

/* Room for one more entity, of an index up to ent_count (a new one or a reused one). */
static void hash_room(keel_world *w)
{
    if (HASH_FULL(w->hash_used + 1, w->hash_cap)) hash_grow(w, w->hash_cap ? w->hash_cap * 2 : 64);
    else if (bits_for((uint64_t)w->ent_count + 1) > w->hash_ibits) hash_grow(w, w->hash_cap);
}

/* The empty slot new UUID u is to take (its hash in *hash), or SIZE_MAX when an entity has it:
 * one probe both checks and places (hash_room first). */
static size_t hash_claim(const keel_world *w, keel_uuid u, size_t *hash)
{
    size_t h = uuid_hash(u), mask = w->hash_cap - 1, p = h & mask;
    for (uint32_t it; (it = w->hash[p]) != 0; p = (p + 1) & mask)
        if (slot_may_be(w, it, h) && keel_uuid_equal(w->ents[slot_ent(w, it)].uuid, u)) return SIZE_MAX;
    *hash = h;
    return p;
}

static size_t hash_slot(const keel_world *w, keel_uuid u)
{
    if (!w->hash_cap) return SIZE_MAX;
    size_t h = uuid_hash(u), mask = w->hash_cap - 1, p = h & mask;
    for (uint32_t it; (it = w->hash[p]) != 0; p = (p + 1) & mask)
        if (slot_may_be(w, it, h) && keel_uuid_equal(w->ents[slot_ent(w, it)].uuid, u)) return p;
    return SIZE_MAX;
}

static uint32_t hash_index(const keel_world *w, size_t p) { return slot_ent(w, w->hash[p]); }

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
        size_t home = ent_home(w, w->hash[q]);
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

static uint32_t str_hash(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

/* The slot of name s (hash h): where its id is, or the empty slot it would take. */
static uint32_t *name_slot(const keel_world *w, const char *s, uint32_t h)
{
    size_t mask = w->name_slots_cap - 1, p = h & mask;
    for (uint32_t it; (it = w->name_slots[p]) != 0; p = (p + 1) & mask) {
        const keel__name *n = &w->names[it - 1];
        if (n->hash == h && strcmp(n->s, s) == 0) break;
    }
    return &w->name_slots[p];
}

/* Frees the dead names (their ids come free) and rebuilds the slots, doubling them when the
 * live names need room. */
static void names_rebuild(keel_world *w)
{
    size_t live = 0;
    for (uint32_t k = 0; k < w->names_count; k++) {
        keel__name *n = &w->names[k];
        if (!n->s) continue;
        if (n->refs) {
            live++;
            continue;
        }
        free(n->s);
        n->s = NULL;
        n->refs = w->names_free;
        w->names_free = k + 1;
    }
    size_t cap = w->name_slots_cap ? w->name_slots_cap : 64;
    while ((live + 1) * 4 > cap) cap *= 2;
    free(w->name_slots);
    w->name_slots = keel__xcalloc(cap, sizeof *w->name_slots);
    w->name_slots_cap = cap;
    w->name_slots_used = live;
    for (uint32_t k = 0; k < w->names_count; k++)
        if (w->names[k].s) *name_slot(w, w->names[k].s, w->names[k].hash) = k + 1;
    w->name_last = 0;
}

/* Whether s is the name interned last (so valid: every interned name passed keel__name_check). */
static bool name_is_last(const keel_world *w, const char *s)
{
    return w->name_last && strcmp(w->names[w->name_last - 1].s, s) == 0;
}

uint32_t keel__name_intern(keel_world *w, const char *s)
{
    if (name_is_last(w, s)) {
        w->names[w->name_last - 1].refs++;
        return w->name_last - 1;
    }
    if ((w->name_slots_used + 1) * 2 > w->name_slots_cap) names_rebuild(w);
    uint32_t h = str_hash(s);
    uint32_t *slot = name_slot(w, s, h);
    if (!*slot) {
        uint32_t k;
        if (w->names_free) {
            k = w->names_free - 1;
            w->names_free = w->names[k].refs;
        } else {
            KEEL__VEC_RESERVE(w->names, w->names_count, w->names_cap, 1, 16);
            k = w->names_count++;
        }
        w->names[k] = (keel__name){ keel__strdup(s), h, 0 };
        *slot = k + 1;
        w->name_slots_used++;
    }
    w->names[*slot - 1].refs++;
    w->name_last = *slot;
    return *slot - 1;
}

static void name_release(keel_world *w, uint32_t id)
{
    keel__name *n = &w->names[id];
    if (n->s && n->refs) n->refs--;
}

uint32_t keel__ent_alloc(keel_world *w)
{
    if (w->free_count) return w->free_idx[--w->free_count];
    KEEL__VEC_RESERVE(w->ents, w->ent_count, w->ent_cap, 1, 64);
    uint32_t i = w->ent_count++;
    memset(&w->ents[i], 0, sizeof w->ents[i]);
    w->ents[i].gen_count = 1;
    w->ents[i].block = KEEL__NO_BLOCK;
    return i;
}

keel__ent *keel__ent_get(const keel_world *w, keel_entity e)
{
    return w ? keel__ent_live(w, e) : NULL;
}

/* A live non-root entity's index, or KEEL__NONE. */
static uint32_t live_index(const keel_world *w, keel_entity e)
{
    keel__ent *en = keel__ent_get(w, e);
    return en && (uint32_t)e != 0 ? (uint32_t)e : KEEL__NONE;
}

bool keel_alive(const keel_world *w, keel_entity e) { return live_index(w, e) != KEEL__NONE; }

/* A command's entity: live and not the root (ProtectedEntity: "the scene root cannot be <what>"). */
keel_status keel__ent_target(const keel_world *w, keel_entity e, const char *what, uint32_t *out,
                          keel_diags *d)
{
    *out = live_index(w, e);
    if (keel__ent_get(w, e) && (uint32_t)e == 0)
        return KEEL_ERROR(d, KEEL_PROTECTED_ENTITY, "", "the scene root cannot be %s", what);
    if (*out == KEEL__NONE) return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "entity not found");
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
        if (strcmp(keel__ent_name(w, &w->ents[(uint32_t)e]), name) == 0) return e;
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
    return en ? keel__ent_name(w, en) : NULL;
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

keel_entity keel_next(const keel_world *w, keel_entity prev)
{
    uint32_t i;
    if (!prev) {
        i = keel__first_child(w, 0);
        return i == KEEL__NONE ? KEEL_NO_ENTITY : keel__handle(w, i);
    }
    if (!keel__ent_get(w, prev)) return KEEL_NO_ENTITY;
    i = (uint32_t)prev;
    uint32_t c = keel__first_child(w, i);
    if (c != KEEL__NONE) return keel__handle(w, c);
    return keel__next_after_subtree(w, i);
}

/* Entity index i (allocated) comes alive with these facts, linked and indexed (at slot `claim`
 * of hash_claim with hash h; SIZE_MAX: found here); `last`: its name is the one interned last. */
static void place(keel_world *w, uint32_t i, const char *name, uint32_t parent, size_t index, keel_uuid u,
                  size_t claim, size_t h, bool last)
{
    keel__ent *en = &w->ents[i];
    en->uuid = u;
    if (last) {
        w->names[w->name_last - 1].refs++;
        en->name = w->name_last - 1;
    } else {
        en->name = keel__name_intern(w, name ? name : "");
    }
    en->alive = en->enabled = true;
    en->block = KEEL__NO_BLOCK;
    en->member_count = 0;
    keel__link_child(w, parent, i, index);
    if (claim == SIZE_MAX) {
        hash_insert(w, i);
    } else {
        w->hash[claim] = slot_item(w, h, i);
        w->hash_used++;
    }
    w->live++;
    if (w->prof && !w->rolling_back) w->prof->spawned++;
    keel__touch(w);
}

keel_status keel__spawn_at(keel_world *w, const char *name, uint32_t parent, size_t index,
                           const keel_uuid *uuid, keel_entity *out, keel_diags *d)
{
    keel_uuid u;
    bool last = name && name_is_last(w, name);
    keel_status nst = name && !last ? keel__name_check(name, "an entity", d) : KEEL_OK;
    if (nst) return nst;
    size_t claim = SIZE_MAX, h = 0;
    if (uuid) {
        if (keel_uuid_is_nil(*uuid))
            return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "an entity UUID cannot be nil");
        if (hash_slot(w, *uuid) != SIZE_MAX) {
            char s[37];
            keel_uuid_format(*uuid, s);
            return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "entity %s already exists", s);
        }
        u = *uuid;
    } else {
        hash_room(w);
        do u = keel__new_uuid(w); while ((claim = hash_claim(w, u, &h)) == SIZE_MAX);
    }
    if (keel__depth_of(w, parent) + 1 > KEEL__MAX_DEPTH)
        return KEEL_ERROR(d, KEEL_LIMIT_EXCEEDED, "", "hierarchy depth limit (%d) exceeded", KEEL__MAX_DEPTH);
    uint32_t i = KEEL__NONE;
    for (size_t k = 0; w->reuse_index != KEEL__NONE && k < w->held_count; k++)
        if (w->held[k] == w->reuse_index && keel__ent_gen(w, &w->ents[w->reuse_index]) == w->reuse_gen + 1) {
            i = w->reuse_index; /* a rolled-back destroy: the same handle comes back */
            w->held[k] = w->held[--w->held_count];
            w->ents[i].gen_count = w->reuse_gen & KEEL__GEN_COUNT;
            break;
        }
    if (i == KEEL__NONE) i = keel__ent_alloc(w);
    place(w, i, name, parent, index, u, claim, h, last);
    if (out) *out = keel__handle(w, i);
    return KEEL_OK;
}

uint32_t keel__entity_place(keel_world *w, const char *name, uint32_t parent, keel_uuid uuid)
{
    uint32_t i = keel__ent_alloc(w);
    place(w, i, name, parent, SIZE_MAX, uuid, SIZE_MAX, 0, false);
    return i;
}

keel_status keel_spawn(keel_world *w, const char *name, keel_entity parent, const keel_uuid *uuid,
                       keel_entity *out, keel_cmd *inverse, keel_diags *d)
{
    keel_cmd tmp;
    if (w->frozen) return keel__refuse_frozen(d);
    keel_cmd *inv = keel__cmd_begin(w, inverse, &tmp);
    uint32_t p = 0;
    keel_entity e = 0;
    keel_status st = keel__parent_index(w, parent, &p, d);
    if (st == KEEL_OK) st = keel__spawn_at(w, name, p, SIZE_MAX, uuid, &e, d);
    if (st == KEEL_OK && inv) {
        inv->type = KEEL_CMD_DESTROY;
        inv->entity = w->ents[(uint32_t)e].uuid;
    }
    if (out) *out = e;
    return keel__cmd_end(w, st, inv, &tmp);
}

static void free_push(keel_world *w, uint32_t i)
{
    keel__marks_drop(w, i); /* kept while held: a rollback gives the entity back whole */
    KEEL__VEC_RESERVE(w->free_idx, w->free_count, w->free_cap, 1, 64);
    w->free_idx[w->free_count++] = i;
}

void keel__held_release(keel_world *w)
{
    for (size_t k = 0; k < w->held_count; k++) free_push(w, w->held[k]);
    w->held_count = 0;
}

static bool dying(const keel_world *w, uint32_t i)
{
    for (size_t k = 0; k < w->dying_count; k++)
        if (w->dying[k] == i) return true;
    return false;
}

static keel_status destroy_index(keel_world *w, uint32_t i, bool quiet)
{
    KEEL__VEC_RESERVE(w->dying, w->dying_count, w->dying_cap, 1, 4);
    w->dying[w->dying_count++] = i;
    keel__members_drop(w, i, quiet || w->rolling_back);
    w->dying_count--; /* nested destroys ended first */
    keel__ent *en = &w->ents[i];
    while (en->has_kids) {
        uint32_t c = keel__first_child(w, i);
        keel__unlink_child(w, c);
        keel__link_child(w, 0, c, SIZE_MAX);
        en = &w->ents[i];
    }
    keel__unlink_child(w, i);
    hash_remove(w, en->uuid);
    name_release(w, en->name);
    keel__entries_release(w, en);
    en->name = 0;
    en->alive = false;
    /* an index whose generation count would wrap is retired, so a stale handle never matches again */
    if (en->gen_count < KEEL__GEN_COUNT) {
        en->gen_count++;
        if (w->txn_depth > 0 && !w->rolling_back) {
            KEEL__VEC_RESERVE(w->held, w->held_count, w->held_cap, 1, 16);
            w->held[w->held_count++] = i;
        } else {
            free_push(w, i);
        }
    } else {
        keel__marks_drop(w, i);
    }
    w->live--;
    if (w->prof && !w->rolling_back) w->prof->destroyed++;
    keel__touch(w);
    return KEEL_OK;
}

/* The destroy inverse: SPAWN from the entity document at its sibling index, then
 * REPARENT each former child back at its index. */
static void destroy_inverse(keel_world *w, uint32_t i, keel_cmd *inv)
{
    keel__ent *en = &w->ents[i];
    size_t n = 1 + keel__child_count(w, i);
    inv->type = KEEL_CMD_BATCH;
    inv->items = keel__xcalloc(n, sizeof *inv->items);
    inv->item_count = n;
    keel_cmd *sp = &inv->items[0];
    sp->type = KEEL_CMD_SPAWN;
    sp->entity = en->uuid;
    sp->parent = en->parent == 0 ? (keel_uuid){ { 0 } } : w->ents[en->parent].uuid;
    sp->index = keel__sibling_index(w, i);
    sp->tree = keel__entity_tree(w, i);
    sp->slot = i;               /* the old handle, so a rollback can restore it exactly */
    sp->version = (int)keel__ent_gen(w, en);
    size_t k = 1;
    for (uint32_t c = keel__first_child(w, i); c != KEEL__NONE; c = w->ents[c].next, k++) {
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
    if (w->frozen) return keel__refuse_frozen(d);
    keel_cmd *inv = keel__cmd_begin(w, inverse, &tmp);
    uint32_t i;
    keel_status st = keel__ent_target(w, e, "destroyed", &i, d);
    /* a dying entity is destroyed from its own on_destroy: the outer destroy finishes it */
    if (st == KEEL_OK && !dying(w, i)) {
        if (inv) destroy_inverse(w, i, inv);
        st = destroy_index(w, i, false);
    }
    return keel__cmd_end(w, st, inv, &tmp);
}

keel_status keel_rename(keel_world *w, keel_entity e, const char *name, keel_cmd *inverse, keel_diags *d)
{
    keel_cmd tmp;
    if (w->frozen) return keel__refuse_frozen(d);
    keel_cmd *inv = keel__cmd_begin(w, inverse, &tmp);
    uint32_t i;
    keel_status st = keel__ent_target(w, e, "renamed", &i, d);
    if (st == KEEL_OK) st = keel__name_check(name, "an entity", d);
    if (st == KEEL_OK) {
        keel__ent *en = &w->ents[i];
        if (inv) {
            inv->type = KEEL_CMD_RENAME;
            inv->entity = en->uuid;
            inv->name = keel__strdup(keel__ent_name(w, en));
        }
        uint32_t old = en->name;
        en->name = keel__name_intern(w, name); /* before the release: the same name stays alive */
        name_release(w, old);
        w->revision++;
        w->relabels++;
    }
    return keel__cmd_end(w, st, inv, &tmp);
}

keel_status keel_set_enabled(keel_world *w, keel_entity e, bool enabled, keel_cmd *inverse, keel_diags *d)
{
    keel_cmd tmp;
    if (w->frozen) return keel__refuse_frozen(d);
    keel_cmd *inv = keel__cmd_begin(w, inverse, &tmp);
    uint32_t i;
    keel_status st = keel__ent_target(w, e, "disabled", &i, d);
    if (st == KEEL_OK) {
        if (inv) {
            inv->type = KEEL_CMD_ENABLE;
            inv->entity = w->ents[i].uuid;
            inv->enabled = w->ents[i].enabled;
        }
        keel__ent_set_enabled(w, i, enabled);
        w->revision++;
    }
    return keel__cmd_end(w, st, inv, &tmp);
}

static void remap_entity_fields(keel_world *w, uint32_t copy, const uint32_t *orig, const uint32_t *copies,
                                size_t n)
{
    keel__ent *en = &w->ents[copy];
    for (uint32_t m = 0; m < en->member_count; m++) {
        keel__entry *me = &keel__members(w, en)[m];
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
    if (w->frozen) return keel__refuse_frozen(d);
    keel_cmd *inv = keel__cmd_begin(w, inverse, &tmp);
    uint32_t i, p = 0;
    if (out) *out = KEEL_NO_ENTITY;
    keel_status st = keel__ent_target(w, e, "duplicated", &i, d);
    if (st == KEEL_OK && parent) st = keel__parent_index(w, parent, &p, d);
    else if (st == KEEL_OK) p = w->ents[i].parent;
    if (st == KEEL_OK && keel__depth_of(w, p) + keel__height_of(w, i) > KEEL__MAX_DEPTH)
        st = KEEL_ERROR(d, KEEL_LIMIT_EXCEEDED, "", "hierarchy depth limit (%d) exceeded", KEEL__MAX_DEPTH);
    if (st) return keel__cmd_end(w, st, inv, &tmp);

    uint32_t *orig = NULL;
    size_t n = 0, cap = 0;
    keel__subtree_collect(w, i, &orig, &n, &cap); /* before creating copies: p may lie inside */
    uint32_t *copies = keel__xrealloc(NULL, n * sizeof *copies);
    /* index -> its copy, for the entities copied so far (pre-order: parents first) */
    uint32_t *to = keel__xcalloc(w->ent_count + n, sizeof *to);
    for (size_t k = 0; k < n; k++) {
        uint32_t cp = k == 0 ? p : to[w->ents[orig[k]].parent];
        keel_entity ce;
        keel__spawn_at(w, keel__ent_name(w, &w->ents[orig[k]]), cp, SIZE_MAX, NULL, &ce, NULL);
        copies[k] = to[orig[k]] = (uint32_t)ce;
        keel__ent_set_enabled(w, copies[k], w->ents[orig[k]].enabled);
        for (uint32_t m = 0; m < w->ents[orig[k]].member_count; m++) {
            keel__entry me = keel__members(w, &w->ents[orig[k]])[m]; /* a copy: the entity array may move */
            keel__entry_clone(w, copies[k], &me);
        }
    }
    for (size_t k = 0; k < n; k++) remap_entity_fields(w, copies[k], orig, copies, n);
    /* the copies come to life: awake, in run order */
    if (!w->rolling_back)
        for (size_t k = 0; k < n; k++) {
            for (uint32_t m = 0; m < w->ents[copies[k]].member_count; m++) {
                keel__entry *me = &keel__members(w, &w->ents[copies[k]])[m];
                if (!me->kind || me->awoken) continue;
                me->awoken = true;
                keel__call_hook(w, copies[k], me->kind, keel__entry_slot(w, me), KEEL_PHASE_AWAKE, 0);
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
    free(to);
    return keel__cmd_end(w, KEEL_OK, inv, &tmp);
}

char *keel__entity_label(const keel_world *w, uint32_t i)
{
    if (i == 0) return keel__strdup("the scene root");
    char u[37];
    keel_uuid_format(w->ents[i].uuid, u);
    return keel__strfmt("entity '%s' (%s)", keel__ent_name(w, &w->ents[i]), u);
}

void keel_world_reserve(keel_world *w, size_t entities)
{
    if (!w || entities >= UINT32_MAX / 4) return;
    uint32_t n = (uint32_t)entities + 1; /* the root too */
    if ((uint32_t)entities > w->reserved) w->reserved = (uint32_t)entities;
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
    while (HASH_FULL(n, cap)) cap *= 2;
    if (cap > w->hash_cap) hash_grow(w, cap);
}

/* Names are written to scene files: NULL and malformed UTF-8 (InvalidArgument) are refused,
 * and so is a name longer than a scene file may hold (LimitExceeded). */
keel_status keel__name_check(const char *name, const char *what, keel_diags *d)
{
    if (!name) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "%s name cannot be null", what);
    if (!keel__utf8_valid(name)) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "%s name must be valid UTF-8", what);
    static size_t limit; /* the default is a constant: built once, not per spawn */
    if (!limit) limit = keel_limits_default().string_length;
    size_t len = strlen(name);
    if (len > limit) /* the scene reader's string length */
        return KEEL_ERROR(d, KEEL_LIMIT_EXCEEDED, "", "%s name of %zu bytes is longer than the limit (%zu bytes)", what,
                          len, limit);
    return KEEL_OK;
}

void keel__names_free(keel_world *w)
{
    for (uint32_t k = 0; k < w->names_count; k++) free(w->names[k].s);
    free(w->names);
    free(w->name_slots);
    w->names = NULL;
    w->name_slots = NULL;
    w->names_count = w->names_cap = w->names_free = w->name_last = 0;
    w->name_slots_cap = w->name_slots_used = 0;
}

void keel__entity_forget(keel_world *w, uint32_t i) { destroy_index(w, i, true); }

void keel__entities_copy(keel_world *dst, const keel_world *src)
{
    dst->ent_count = dst->ent_cap = src->ent_count;
    size_t ents_bytes = (src->ent_count ? src->ent_count : 1) * sizeof *dst->ents;
    dst->ents = ents_bytes >= HUGE_PAGE ? huge_alloc(ents_bytes, ents_bytes) : keel__xrealloc(NULL, ents_bytes);
    memcpy(dst->ents, src->ents, src->ent_count * sizeof *dst->ents);
    for (uint32_t i = 0; i < src->ent_count; i++) {
        keel__ent *en = &dst->ents[i];
        en->block = KEEL__NO_BLOCK; /* member.c gives each its own array */
        if (!en->alive) {
            en->member_count = 0;
            en->name = 0;
        }
    }
    /* the names table whole, ids kept: no entity's name is hashed or probed again */
    dst->names_count = dst->names_cap = src->names_count;
    dst->names = keel__xrealloc(NULL, (src->names_count ? src->names_count : 1) * sizeof *dst->names);
    for (uint32_t k = 0; k < src->names_count; k++) {
        dst->names[k] = src->names[k];
        if (src->names[k].s) dst->names[k].s = keel__strdup(src->names[k].s);
    }
    dst->names_free = src->names_free;
    dst->name_slots_cap = src->name_slots_cap;
    dst->name_slots_used = src->name_slots_used;
    dst->name_slots = src->name_slots_cap ? keel__xrealloc(NULL, src->name_slots_cap * sizeof *dst->name_slots) : NULL;
    if (src->name_slots_cap) memcpy(dst->name_slots, src->name_slots, src->name_slots_cap * sizeof *dst->name_slots);
    dst->name_last = src->name_last;
    dst->kids_count = dst->kids_cap = src->kids_count;
    dst->kids_free = src->kids_free;
    dst->kids = src->kids_count ? keel__xrealloc(NULL, src->kids_count * sizeof *dst->kids) : NULL;
    if (src->kids_count) memcpy(dst->kids, src->kids, src->kids_count * sizeof *dst->kids);
    dst->kids_root = src->kids_root;
    dst->kids_map_cap = src->kids_map_cap;
    dst->kids_map_used = src->kids_map_used;
    dst->kids_map = src->kids_map_cap ? keel__xrealloc(NULL, src->kids_map_cap * sizeof *dst->kids_map) : NULL;
    if (src->kids_map_cap) memcpy(dst->kids_map, src->kids_map, src->kids_map_cap * sizeof *dst->kids_map);
    dst->free_count = dst->free_cap = src->free_count;
    dst->free_idx = keel__xrealloc(NULL, (src->free_count ? src->free_count : 1) * sizeof *dst->free_idx);
    if (src->free_count) memcpy(dst->free_idx, src->free_idx, src->free_count * sizeof *dst->free_idx);
    dst->hash_cap = src->hash_cap;
    dst->hash_ibits = src->hash_ibits;
    dst->hash_used = src->hash_used;
    size_t hash_bytes = src->hash_cap * sizeof *dst->hash;
    dst->hash = !hash_bytes ? NULL : hash_bytes >= HUGE_PAGE ? huge_alloc(hash_bytes, hash_bytes) : keel__xrealloc(NULL, hash_bytes);
    if (src->hash_cap) memcpy(dst->hash, src->hash, src->hash_cap * sizeof *dst->hash);
    dst->live = src->live;
    dst->reuse_index = KEEL__NONE;
}

void keel__entities_retag(keel_world *w, uint16_t tag)
{
    w->tag = tag; /* the records hold only the counts (keel__ent_gen) */
}

void keel__entity_unindex(keel_world *w, uint32_t i)
{
    hash_remove(w, w->ents[i].uuid);
    w->live--;
    keel__touch(w);
}

void keel__entity_reindex(keel_world *w, uint32_t i)
{
    hash_insert(w, i);
    w->live++;
    keel__touch(w);
}

void keel__uuid_prefetch(const keel_world *w, keel_uuid u) { uuid_prefetch(w, u); }
