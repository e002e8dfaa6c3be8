/* member.c — membership: an entity's component stack (entries, pooled arrays, serials), slots,
 * the kind rules, adding and removing components, awake, and reading what an entity holds. */
#include "model/world.h"
#include "bind.h" /* keel__remove */
#include "model/body.h"
#include "model/kind.h"
#include "model/record.h"
#include "model/txn.h"
#include "base/vec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- entries */

const char *keel__entry_key(const keel__entry *m)
{
    if (m->kind) {
        const keel_kind_desc *kd = keel_kind_describe(m->kind);
        return kd ? kd->key : "";
    }
    return keel__entry_unk(m)->key;
}


/* Whether entry m holds `key`; `k` is key's kind id when registered (KEEL_NO_KIND
 * otherwise): loaded entries then compare ids, not strings. */
static bool entry_is(const keel__entry *m, keel_kind_id k, const char *key)
{
    if (m->kind) return k ? m->kind == k : strcmp(keel__entry_key(m), key) == 0;
    return strcmp(keel__entry_unk(m)->key, key) == 0;
}

/* Any entry (loaded or not) holding `key` at `slot`; KEEL_SLOT_AUTO: the lowest. */
static keel__entry *entry_by_key_k(const keel_world *w, keel__ent *en, keel_kind_id k, const char *key,
                                   uint32_t slot)
{
    keel__entry *best = NULL;
    uint32_t best_slot = 0;
    if (!en->member_count) return NULL; /* (it may have no block) */
    /* the bounds held in locals: strcmp's call would make the compiler re-read them every turn */
    for (keel__entry *m = keel__members(w, en), *end = m + en->member_count; m < end; m++) {
        if (!entry_is(m, k, key)) continue;
        if (slot == KEEL_SLOT_AUTO) {
            if (!m->slotted) return m; /* slot 0: none is lower */
            uint32_t s = keel__entry_slot(w, m);
            if (!best || s < best_slot) best = m, best_slot = s;
        } else if (keel__entry_in_slot(w, m, slot)) {
            return m;
        }
    }
    return best;
}

keel__entry *keel__entry_find_aside(const keel_world *w, const keel__ent *en, keel_kind_id k, uint32_t slot,
                                    uint32_t from)
{
    keel__entry *best = NULL;
    uint32_t best_slot = 0;
    for (uint32_t i = from; i < en->member_count; i++) {
        keel__entry *m = &keel__members(w, en)[i];
        if (m->kind != k) continue;
        uint32_t s = keel__entry_slot(w, m);
        if (slot != KEEL_SLOT_AUTO) {
            if (s == slot) return m;
        } else if (!best || s < best_slot) {
            best = m, best_slot = s;
        }
    }
    return best;
}

keel__entry *keel__entry_by_key(const keel_world *w, keel__ent *en, const char *key, uint32_t slot)
{
    return entry_by_key_k(w, en, keel_kind_find(key), key, slot);
}

static uint32_t key_count(const keel_world *w, const keel__ent *en, keel_kind_id k, const char *key)
{
    uint32_t n = 0;
    const keel__entry *ms = keel__members(w, en);
    for (uint32_t i = 0; i < en->member_count; i++)
        if (entry_is(&ms[i], k, key)) n++;
    return n;
}

/* ---------------------------------------------------------------- membership pools */

/* A class's chunks double (its first holds 4,096 entries): a big spawn makes a few large
 * mallocs, not one every 64 KiB (each one below glibc's mmap threshold consolidates the fastbins
 * the Lua GC filled; that was ~11% of a Lua spawn), and at most half of what a class holds is
 * unused. Blocks are named by chunk id and offset, not pointed at (an entity record holds 4
 * bytes, not 8); they never move, so an entry's address stays good while its entity's stack
 * does not grow. */
#define CHUNK_MAX (1u << KEEL__BLOCK_CHUNK_SHIFT) /* entries; a block's offset has 21 bits */

/* Class c's next chunk, twice its last (the first: 4,096 entries; at most 2^21). Rare: kept out
 * of entries_alloc's way. */
static __attribute__((noinline)) void chunk_new(keel_world *w, uint32_t c)
{
    if (w->entry_chunk_count == KEEL__BLOCK_CHUNKS) { /* ~2^29 entries: fatal, as OOM is */
        fputs("keel: the world has used up its membership chunks\n", stderr);
        abort();
    }
    _Static_assert(KEEL__ENTRY_CHUNK0 << 9 == CHUNK_MAX, "nine doublings reach the largest chunk");
    uint32_t size = w->entry_chunks[c] < 9 ? KEEL__ENTRY_CHUNK0 << w->entry_chunks[c] : CHUNK_MAX;
    w->entry_chunk[w->entry_chunk_count] = (uintptr_t)keel__xrealloc(NULL, size * sizeof(keel__entry));
    w->entry_chunk_size[w->entry_chunk_count] = size;
    w->entry_last[c] = w->entry_chunk_count++;
    w->entry_chunks[c]++;
    w->entry_next[c] = 0;
    w->entry_end[c] = size;
}

static inline uint32_t entries_alloc(keel_world *w, uint32_t cap)
{
    uint32_t c = (uint32_t)__builtin_ctz(cap) - 1; /* cap is 2 << class */
    if (w->entry_free[c]) {
        uint32_t b = w->entry_free[c] - 1; /* given back first */
        memcpy(&w->entry_free[c], keel__block_at(w, b), sizeof w->entry_free[c]);
        return b;
    }
    /* Fresh blocks are carved off the class's newest chunk as they are needed, lowest address
     * first (threading a whole new chunk onto the free list wrote every page of it up front:
     * ~17 bytes an entity of a 100k spawn never used). A class with no chunk has end 0. */
    if (w->entry_next[c] + cap > w->entry_end[c]) chunk_new(w, c);
    uint32_t b = c << KEEL__BLOCK_CLASS_SHIFT | w->entry_last[c] << KEEL__BLOCK_CHUNK_SHIFT | w->entry_next[c];
    w->entry_next[c] += cap;
    return b;
}

static void entries_give_back(keel_world *w, uint32_t b, keel__entry *at) /* at: block b's address */
{
    if (b == KEEL__NO_BLOCK) return;
    uint32_t c = b >> KEEL__BLOCK_CLASS_SHIFT;
    memcpy(at, &w->entry_free[c], sizeof w->entry_free[c]);
    w->entry_free[c] = b + 1;
}

void keel__entries_release(keel_world *w, keel__ent *en)
{
    entries_give_back(w, en->block, keel__members(w, en));
    en->block = KEEL__NO_BLOCK;
    en->member_count = 0;
}

static void marks_free(keel_world *w);

void keel__entry_pools_free(keel_world *w)
{
    for (uint32_t k = 0; k < w->entry_chunk_count; k++) free((void *)w->entry_chunk[k]);
    memset(w->entry_chunk, 0, sizeof w->entry_chunk);
    w->entry_chunk_count = 0;
    memset(w->entry_free, 0, sizeof w->entry_free);
    memset(w->entry_chunks, 0, sizeof w->entry_chunks);
    memset(w->entry_last, 0, sizeof w->entry_last);
    memset(w->entry_next, 0, sizeof w->entry_next);
    memset(w->entry_end, 0, sizeof w->entry_end);
    keel__map_free(&w->slots); /* and so do their slots */
    marks_free(w);
    free(w->fresh); /* the fresh flags go with the entries */
    w->fresh = NULL;
    w->fresh_count = w->fresh_cap = 0;
}

static keel__entry *entry_push(keel_world *w, keel__ent *en)
{
    uint32_t cap = keel__block_cap(en->block);
    keel__entry *ms = keel__members(w, en);
    if (en->member_count == cap) {
        uint32_t b = entries_alloc(w, cap ? cap * 2 : 2);
        keel__entry *n = keel__block_at(w, b);
        if (en->member_count) memcpy(n, ms, en->member_count * sizeof *n);
        entries_give_back(w, en->block, ms);
        en->block = b;
        ms = n;
    }
    keel__entry *m = &ms[en->member_count++];
    memset(m, 0, sizeof *m);
    m->enabled = true;
    if (w->last_serial >= KEEL__SERIAL_MAX) { /* never reached in practice: fatal, as OOM is */
        fputs("keel: the world has used up its component serials\n", stderr);
        abort();
    }
    keel__entry_set_serial(m, ++w->last_serial);
    return m;
}

void keel__entry_set_slot(keel_world *w, keel__entry *m, uint32_t slot)
{
    if (!m->kind) keel__entry_unk(m)->slot = slot;
    else if (slot) keel__map_put(&w->slots, keel__entry_lserial(m), slot);
    else if (m->slotted) keel__map_remove(&w->slots, keel__entry_lserial(m));
    m->slotted = slot != 0;
}

/* ---- slot high-water marks (member.h keel__mark) */

static keel__marks *marks_get(const keel_world *w, uint32_t i)
{
    uint32_t r;
    if (!keel__map_count(&w->marks_of) || !keel__map_get(&w->marks_of, i, &r)) return NULL;
    return &w->marks[r - 1];
}

static bool mark_is(const keel__mark *mk, keel_kind_id k, const char *key)
{
    return mk->kind ? mk->kind == k : strcmp(mk->key, key) == 0;
}

uint64_t keel__mark_floor(const keel_world *w, uint32_t i, keel_kind_id k, const char *key)
{
    const keel__marks *r = marks_get(w, i);
    for (uint32_t x = 0; r && x < r->count; x++)
        if (mark_is(&r->v[x], k, key)) return (uint64_t)r->v[x].slot + 1;
    return 0;
}

static void mark_raise(keel_world *w, uint32_t i, keel_kind_id k, const char *key, uint32_t slot)
{
    keel__marks *r = marks_get(w, i);
    if (!r) {
        KEEL__VEC_RESERVE(w->marks, w->marks_count, w->marks_cap, 1, 8);
        r = &w->marks[w->marks_count++];
        *r = (keel__marks){ i, 0, NULL };
        keel__map_put(&w->marks_of, i, (uint32_t)w->marks_count);
    }
    for (uint32_t x = 0; x < r->count; x++) {
        if (!mark_is(&r->v[x], k, key)) continue;
        if (slot > r->v[x].slot) r->v[x].slot = slot;
        return;
    }
    r->v = keel__xrealloc(r->v, (r->count + 1) * sizeof *r->v);
    r->v[r->count++] = (keel__mark){ k, slot, k ? NULL : keel__strdup(key) };
}

/* Entry m (in slot s) of entity i is being removed: when no entry of its key holds a higher slot,
 * s is marked used (a higher one's own removal would mark past it). One kinds are always in slot
 * 0: nothing to mark. */
static void mark_removed(keel_world *w, uint32_t i, const keel__entry *m, uint32_t s)
{
    const char *key = keel__entry_key(m);
    keel_kind_id k = m->kind ? m->kind : keel_kind_find(key);
    const keel_kind_desc *kd = k ? keel_kind_describe(k) : NULL;
    if (kd && kd->multiplicity == KEEL_ONE) return;
    const keel__ent *en = &w->ents[i];
    const keel__entry *ms = keel__members(w, en);
    for (uint32_t x = 0; x < en->member_count; x++)
        if (&ms[x] != m && entry_is(&ms[x], k, key) && keel__entry_slot(w, &ms[x]) > s) return;
    mark_raise(w, i, k, key, s);
}

static void marks_record_free(keel__marks *r)
{
    for (uint32_t x = 0; x < r->count; x++) free(r->v[x].key);
    free(r->v);
}

void keel__marks_drop(keel_world *w, uint32_t i)
{
    keel__marks *r = marks_get(w, i);
    if (!r) return;
    marks_record_free(r);
    keel__map_remove(&w->marks_of, i);
    size_t at = (size_t)(r - w->marks);
    if (at != --w->marks_count) { /* the last record fills the hole */
        w->marks[at] = w->marks[w->marks_count];
        keel__map_put(&w->marks_of, w->marks[at].index, (uint32_t)at + 1);
    }
}

void keel__marks_move(keel_world *dst, uint32_t di, keel_world *src, uint32_t si)
{
    const keel__marks *r = marks_get(src, si);
    for (uint32_t x = 0; r && x < r->count; x++) {
        const keel__mark *mk = &r->v[x];
        mark_raise(dst, di, mk->kind, mk->kind ? keel_kind_describe(mk->kind)->key : mk->key, mk->slot);
    }
}

static void marks_free(keel_world *w)
{
    for (size_t r = 0; r < w->marks_count; r++) marks_record_free(&w->marks[r]);
    free(w->marks);
    w->marks = NULL;
    w->marks_count = w->marks_cap = 0;
    keel__map_free(&w->marks_of);
}

static void marks_copy(keel_world *dst, const keel_world *src)
{
    for (size_t r = 0; r < src->marks_count; r++) {
        const keel__marks *sr = &src->marks[r];
        for (uint32_t x = 0; x < sr->count; x++) {
            const keel__mark *mk = &sr->v[x];
            mark_raise(dst, sr->index, mk->kind, mk->kind ? keel_kind_describe(mk->kind)->key : mk->key, mk->slot);
        }
    }
}

/* ---- serials across a rollback: the entity comes back with its handle, its entries with their serials */

static void serial_bury(keel_world *w, uint32_t i, const keel__entry *m)
{
    KEEL__VEC_RESERVE(w->tombs, w->tomb_count, w->tomb_cap, 1, 8);
    w->tombs[w->tomb_count++] = (keel__tomb){ i, keel__ent_gen(w, &w->ents[i]), m->kind, keel__entry_slot(w, m),
                                              keel__entry_lserial(m) };
}

/* Before m's slot is set: the slot map holds slots by serial. */
static void serial_unbury(keel_world *w, uint32_t i, keel__entry *m, uint32_t slot)
{
    for (size_t t = w->tomb_count; t-- > 0;) {
        keel__tomb *b = &w->tombs[t];
        if (b->index == i && b->gen == keel__ent_gen(w, &w->ents[i]) && b->kind == m->kind && b->slot == slot) {
            keel__entry_set_serial(m, b->serial);
            *b = w->tombs[--w->tomb_count];
            return;
        }
    }
}

void keel__tombs_clear(keel_world *w)
{
    free(w->tombs);
    w->tombs = NULL;
    w->tomb_count = w->tomb_cap = 0;
}

void keel__entry_born(keel_world *w, uint32_t i, keel__entry *m)
{
    m->fresh = false;
    if (w->rolling_back || !w->in_step) return;
    if (w->fresh_frame != w->frame) { /* the flags of an earlier frame are over: clear them */
        for (size_t f = 0; f < w->fresh_count; f++) {
            const keel__fresh *x = &w->fresh[f];
            keel__ent *en = &w->ents[x->index];
            keel__entry *o = en->alive && keel__ent_gen(w, en) == x->gen ? keel__entry_find(w, en, x->kind, x->slot)
                                                                         : NULL;
            if (o) o->fresh = false;
        }
        w->fresh_count = 0;
        w->fresh_frame = w->frame;
    }
    KEEL__VEC_RESERVE(w->fresh, w->fresh_count, w->fresh_cap, 1, 16);
    w->fresh[w->fresh_count++] = (keel__fresh){ i, keel__ent_gen(w, &w->ents[i]), m->kind, keel__entry_slot(w, m) };
    m->fresh = true;
}

/* The side part of a new unknown entry c (its serial is the one entry_push gave it; its slot 0). */
static keel__unknown *unknown_new(keel__entry *c, const char *key, keel_node *preserved)
{
    uint64_t serial = keel__entry_lserial(c);
    keel__unknown *u = keel__xrealloc(NULL, sizeof *u);
    u->key = keel__strdup(key);
    u->preserved = preserved;
    u->serial = serial;
    u->slot = 0;
    keel__entry_set_unk(c, u);
    return u;
}

/* Whether one of the n entries ms holds `key` in slot 0: entry_by_key_k(w, en, k, key, 0), as a
 * loop the compiler keeps inline (every add of a one kind asks). */
static inline bool slot0_taken(const keel__entry *ms, uint32_t n, keel_kind_id k, const char *key)
{
    for (uint32_t i = 0; i < n; i++)
        if (!ms[i].slotted && entry_is(&ms[i], k, key)) return true;
    return false;
}

/* The slot a new entry of `key` takes, or an error. */
static keel_status pick_slot(const keel_world *w, const keel__ent *en, keel_kind_id k, const char *key, bool one,
                             uint32_t max, bool skip_rules, uint32_t *slot, keel_diags *d)
{
    keel__ent *me = (keel__ent *)en;
    const keel__entry *ms = keel__members(w, en);
    if (one) {
        if (*slot != KEEL_SLOT_AUTO && *slot != 0)
            return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s is a one kind: only slot 0, not slot %u", key,
                              *slot);
        *slot = 0;
        if (slot0_taken(ms, en->member_count, k, key))
            return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s is already present (multiplicity one)", key);
        return KEEL_OK;
    }
    if (*slot == KEEL_SLOT_AUTO) {
        /* max+1 in 64 bits: past UINT32_MAX-1 it would wrap or become KEEL_SLOT_AUTO itself; and
         * past the entity's mark, so a removed slot is never handed out again */
        uint64_t next = keel__mark_floor(w, (uint32_t)(en - w->ents), k, key);
        for (uint32_t i = 0; i < en->member_count; i++)
            if (entry_is(&ms[i], k, key) && (uint64_t)keel__entry_slot(w, &ms[i]) + 1 > next)
                next = (uint64_t)keel__entry_slot(w, &ms[i]) + 1;
        if (next >= KEEL_SLOT_AUTO) return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "no slot left for %s", key);
        *slot = (uint32_t)next;
    } else if (entry_by_key_k(w, me, k, key, *slot)) {
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "slot %u of %s is occupied", *slot, key);
    }
    if (!skip_rules && max && key_count(w, en, k, key) >= max)
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s allows at most %u components", key, max);
    return KEEL_OK;
}

static bool names(const char *const *list, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], key) == 0) return true;
    return false;
}

/* Where kind kd may live, as its flags say: some kinds only on the scene root, some never there. */
keel_status keel__root_rules(uint32_t i, const keel_kind_desc *kd, const char *path, keel_diags *d)
{
    if ((kd->flags & KEEL_KIND_ROOT_ONLY) && i != 0)
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, path, "%s lives only on the scene root", kd->key);
    if (i == 0 && (kd->flags & KEEL_KIND_NOT_ON_ROOT))
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, path, "the scene root cannot hold %s", kd->key);
    return KEEL_OK;
}

/* The rules a new `k` must pass against the entity's current stack. */
keel_status keel__check_add_rules(keel_world *w, uint32_t i, keel_kind_id k, keel_diags *d)
{
    const keel_kind_desc *kd = keel_kind_describe(k);
    keel__ent *en = &w->ents[i];
    /* the common case: k requires and rejects nothing and no kind rejects k */
    if (i != 0 && !(kd->flags & KEEL_KIND_ROOT_ONLY) && !kd->requires_count && !kd->rejects_count &&
        !keel__kind_rejected(k))
        return KEEL_OK;
    keel_status st = keel__root_rules(i, kd, "", d);
    if (st) return st;
    for (size_t r = 0; r < kd->requires_count; r++)
        if (!keel__entry_by_key(w, en, kd->requires[r], KEEL_SLOT_AUTO))
            return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s requires %s", kd->key, kd->requires[r]);
    for (uint32_t m = 0; m < en->member_count; m++) {
        const char *other = keel__entry_key(&keel__members(w, en)[m]);
        if (names(kd->rejects, kd->rejects_count, other))
            return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s rejects %s", kd->key, other);
        if (keel__members(w, en)[m].kind) {
            const keel_kind_desc *od = keel_kind_describe(keel__members(w, en)[m].kind);
            if (names(od->rejects, od->rejects_count, kd->key))
                return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s rejects %s", od->key, kd->key);
        }
    }
    return KEEL_OK;
}

static keel_status entity_for(const keel_world *w, keel_entity e, keel_diags *d)
{
    return keel__ent_get(w, e) ? KEEL_OK : KEEL_ERROR(d, KEEL_NOT_FOUND, "", "entity not found");
}

static void entry_delete(keel_world *w, uint32_t i, keel__entry *m);

/* The kind's validate on field f of the component at (e, k, slot), which must be there; a
 * rejection is reported at prefix.field and the given source position. */
static keel_status validate_field(keel_world *w, keel__entry *m, keel_comp c, const keel_kind_desc *kd, size_t f,
                                  const char *prefix, const char *mid, const char *file, int line, int col,
                                  keel_diags *d)
{
    keel_diags tmp;
    keel_diags_init(&tmp);
    keel_call call = { w, c, keel__store_rec(&w->stores[c.kind], m->row), KEEL_PHASE_COUNT_, 0, kd->user, &tmp, NULL };
    keel__callback_enter();
    keel_status st = kd->validate(&call, (int)f);
    keel__callback_leave();
    if (st && !tmp.errors) KEEL_ERROR(&tmp, st, "", "%s rejected the value of %s", kd->key, kd->fields[f].key);
    if (tmp.count) { /* the path is made only when there is something to say: a load asks every field */
        const char *key = kd->fields[f].key;
        char *p = !prefix || !*prefix ? keel__strdup(key)
                  : mid       ? keel__strfmt("%s.%s.%s", prefix, mid, key)
                              : keel__strfmt("%s.%s", prefix, key);
        for (size_t j = 0; j < tmp.count; j++)
            keel_diag_add(d, tmp.items[j].severity, tmp.items[j].code, p, file, line, col, "%s", tmp.items[j].message);
        free(p);
    }
    keel_diags_free(&tmp);
    return st;
}

/* The kind's validate for each field a body named, in declared order, on the component
 * just added: what keel_set would have asked of the same writes. A rejection is reported
 * at that field's path and source position. A body of an older version was migrated: its
 * names are the old ones, so every field is asked (at the body's position). */
static keel_status validate_body(keel_world *w, keel_entity e, keel_kind_id k, uint32_t slot,
                                 const keel_add_opts *o, keel_diags *d)
{
    const keel_kind_desc *kd = keel_kind_describe(k);
    if (!kd->validate || !o->body || o->body->kind != KEEL_NODE_MAP) return KEEL_OK;
    bool migrated = o->version && o->version < kd->version;
    for (size_t f = 0; f < kd->field_count; f++) {
        const keel_node *val = migrated ? o->body : keel_node_get(o->body, kd->fields[f].key);
        if (!val) continue;
        keel__ent *en = keel__ent_get(w, e);
        keel__entry *m = en ? keel__entry_find(w, en, k, slot) : NULL;
        if (!m) return KEEL_OK; /* the hook took it away itself */
        keel_status st = validate_field(w, m, (keel_comp){ e, k, slot }, kd, f, o->path, NULL, o->file, val->line,
                                        val->col, d);
        if (st) return st;
    }
    return KEEL_OK;
}

keel_status keel__validate_fields(keel_world *w, keel_comp c, const char *path, keel_diags *d)
{
    const keel_kind_desc *kd = keel_kind_describe(c.kind);
    if (!kd || !kd->validate) return KEEL_OK;
    for (size_t f = 0; f < kd->field_count; f++) {
        keel__ent *en = keel__ent_get(w, c.entity);
        keel__entry *m = en ? keel__entry_find(w, en, c.kind, c.slot) : NULL;
        if (!m) return KEEL_OK; /* the hook took it away itself */
        keel_status st = validate_field(w, m, c, kd, f, path, "body", NULL, 0, 0, d);
        if (st) return st;
    }
    return KEEL_OK;
}

keel_status keel__add_internal(keel_world *w, keel_entity e, keel_kind_id k, const keel_add_opts *o,
                               keel_comp *out, keel_diags *d)
{
    static const keel_add_opts defaults = KEEL_ADD_OPTS_INIT;
    if (!o) o = &defaults;
    keel__ent *en = keel__ent_get(w, e);
    if (!en) return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "entity not found");
    const keel_kind_desc *kd = keel_kind_describe(k);
    if (!kd) return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "kind %u not found", (unsigned)k);
    uint32_t i = (uint32_t)e;
    if (en->member_count >= KEEL__MAX_COMPONENTS)
        return KEEL_ERROR(d, KEEL_LIMIT_EXCEEDED, "", "components per entity limit (%d) exceeded",
                          KEEL__MAX_COMPONENTS);
    uint32_t slot = o->slot;
    bool one = kd->multiplicity == KEEL_ONE, taken = false;
    if (one && (slot == KEEL_SLOT_AUTO || slot == 0)) { /* pick_slot's common case, inline */
        taken = slot0_taken(keel__members(w, en), en->member_count, k, kd->key);
        slot = 0;
    }
    keel_status st = KEEL_OK;
    if (!one || slot != 0 || taken) st = pick_slot(w, en, k, kd->key, one, kd->max, o->skip_rules, &slot, d);
    if (st) return st;
    /* keel__check_add_rules' common case (no rule can apply) judged here, without a call */
    bool ruled = i == 0 || (kd->flags & KEEL_KIND_ROOT_ONLY) || kd->requires_count || kd->rejects_count ||
                 keel__kind_rejected(k);
    if (!o->skip_rules && ruled && (st = keel__check_add_rules(w, i, k, d))) return st;

    uint32_t row = keel__store_append(w, k, e, slot);
    keel__store *s = &w->stores[k];
    void *rec = keel__store_rec(s, row);
    keel__record_init(k, rec);
    if (o->body) {
        st = keel__body_decode(k, o->body, o->version ? o->version : kd->version, o->strict, rec,
                               o->path ? o->path : "", o->file, d);
        if (st == KEEL_OK) st = keel__record_body_check(k, rec, d);
        if (st) {
            keel__record_fini(k, rec);
            s->count--;
            return st;
        }
    }
    keel__entry *m = entry_push(w, &w->ents[i]);
    m->kind = k;
    m->row = row;
    if (w->rolling_back) {
        m->awoken = m->started = true;
        serial_unbury(w, i, m, slot);
    }
    if (slot) keel__entry_set_slot(w, m, slot);
    keel__entry_born(w, i, m);
    if (o->body && !w->rolling_back && (st = validate_body(w, e, k, slot, o, d))) {
        keel__ent *en2 = keel__ent_get(w, e);
        if (en2 && (m = keel__entry_find(w, en2, k, slot))) entry_delete(w, i, m); /* as if never added */
        return st;
    }
    keel__touch(w);
    if (out) *out = (keel_comp){ e, k, slot };
    if (!o->no_awake && !w->rolling_back && !w->dormant) {
        m->awoken = true;
        if (kd->hooks[KEEL_PHASE_AWAKE]) keel__call_hook(w, i, k, slot, KEEL_PHASE_AWAKE, 0);
    }
    return KEEL_OK;
}

keel_status keel_add(keel_world *w, keel_entity e, keel_kind_id k, const keel_add_opts *opts, keel_comp *out,
                     keel_cmd *inverse, keel_diags *d)
{
    keel_cmd tmp;
    if (w->frozen) return keel__refuse_frozen(d);
    keel_cmd *inv = keel__cmd_begin(w, inverse, &tmp);
    keel_comp c = { 0, 0, 0 };
    keel_status st = keel__add_internal(w, e, k, opts, &c, d);
    if (out) *out = c;
    if (st == KEEL_OK && inv) {
        inv->type = KEEL_CMD_REMOVE;
        inv->entity = w->ents[(uint32_t)e].uuid;
        inv->kind_key = keel__strdup(keel_kind_describe(k)->key);
        inv->slot = c.slot;
    }
    return keel__cmd_end(w, st, inv, &tmp);
}

/* What an unknown entry must be: what a scene file could hold, for a kind this process cannot
 * read (not registered, or written in a newer version than the registered one). */
static keel_status unknown_check(const char *key, int version, const keel_node *body, keel_diags *d)
{
    if (!key || !*key) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "an unknown component needs a kind key");
    if (!keel__kind_key_valid(key))
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "malformed kind key '%.64s' (ns:name, [a-z0-9_]+)", key);
    if (version < 1) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "%s: version must be >= 1, not %d", key, version);
    if (body && body->kind != KEEL_NODE_MAP)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "%s: a component body must be a map", key);
    if (keel__unknown_body_check(body, d)) return KEEL_LIMIT_EXCEEDED;
    const keel_kind_desc *kd = keel_kind_describe(keel_kind_find(key));
    if (kd && version <= (kd->version < 1 ? 1 : kd->version))
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s is declared: add it with keel_add", key);
    return KEEL_OK;
}

keel_status keel_add_unknown(keel_world *w, keel_entity e, const char *key, int version, uint32_t slot,
                             const keel_node *body, keel_diags *d)
{
    keel_cmd tmp;
    if (w->frozen) return keel__refuse_frozen(d);
    keel_cmd *inv = keel__cmd_begin(w, NULL, &tmp);
    keel_status st = entity_for(w, e, d);
    if (st == KEEL_OK) st = unknown_check(key, version, body, d);
    if (st == KEEL_OK && w->ents[(uint32_t)e].member_count >= KEEL__MAX_COMPONENTS)
        st = KEEL_ERROR(d, KEEL_LIMIT_EXCEEDED, "", "components per entity limit (%d) exceeded",
                        KEEL__MAX_COMPONENTS);
    if (st == KEEL_OK)
        st = pick_slot(w, &w->ents[(uint32_t)e], keel_kind_find(key), key, false, 0, true, &slot, d);
    if (st == KEEL_OK) {
        keel__entry *m = entry_push(w, &w->ents[(uint32_t)e]);
        unknown_new(m, key, body ? keel_node_copy(body) : keel_node_new_map())->version = version;
        keel__entry_set_slot(w, m, slot);
        keel__touch(w);
        if (inv) {
            inv->type = KEEL_CMD_REMOVE;
            inv->entity = w->ents[(uint32_t)e].uuid;
            inv->kind_key = keel__strdup(key);
            inv->slot = slot;
        }
    }
    return keel__cmd_end(w, st, inv, &tmp);
}

void keel__unknown_free(keel__unknown *u)
{
    if (!u) return;
    free(u->key);
    keel_node_free(u->preserved);
    free(u);
}

/* Takes entry `m` out of entity i: frees its record (or preserved body) and the entry. */
static void entry_delete(keel_world *w, uint32_t i, keel__entry *m)
{
    keel__ent *en = &w->ents[i];
    if (m->kind && w->txn_depth > 0 && !w->rolling_back) serial_bury(w, i, m);
    if (m->kind) keel__store_free_row(w, m->kind, m->row); /* reads the slot (keel__row_slot) */
    else keel__unknown_free(keel__entry_unk(m));
    if (m->kind && m->slotted) keel__map_remove(&w->slots, keel__entry_lserial(m));
    size_t at = (size_t)(m - keel__members(w, en));
    memmove(m, m + 1, (en->member_count - at - 1) * sizeof *m);
    en->member_count--;
}

static void remove_inverse(keel_world *w, uint32_t i, keel__entry *m, keel_cmd *inv)
{
    keel_cmd add = { 0 };
    add.type = KEEL_CMD_ADD;
    add.entity = w->ents[i].uuid;
    add.kind_key = keel__strdup(keel__entry_key(m));
    add.slot = keel__entry_slot(w, m);
    add.enabled = true;
    add.index = (size_t)(m - keel__members(w, &w->ents[i]));
    if (m->kind) {
        add.version = keel_kind_describe(m->kind)->version;
        add.tree = keel__body_encode(m->kind, keel__store_rec(&w->stores[m->kind], m->row), 0);
    } else {
        add.version = keel__entry_unk(m)->version;
        add.tree = keel_node_copy(keel__entry_unk(m)->preserved);
    }
    if (m->enabled) {
        *inv = add;
        return;
    }
    inv->type = KEEL_CMD_BATCH;
    inv->items = keel__xcalloc(2, sizeof *inv->items);
    inv->item_count = 2;
    inv->items[0] = add;
    inv->items[1].type = KEEL_CMD_ENABLE_COMPONENT;
    inv->items[1].entity = add.entity;
    inv->items[1].kind_key = keel__strdup(add.kind_key);
    inv->items[1].slot = add.slot;
    inv->items[1].enabled = false;
}

keel_status keel_remove(keel_world *w, keel_entity e, const char *key, uint32_t slot, keel_cmd *inverse,
                        keel_diags *d)
{
    return keel__remove(w, e, key ? keel_kind_find(key) : KEEL_NO_KIND, key, slot, inverse, d);
}

/* k was found once by the caller: entries then match by id, unknown ones by key, with no lookup
 * of key per test (they were ~5 binary searches of the kind registry a remove). */
keel_status keel__remove(keel_world *w, keel_entity e, keel_kind_id k, const char *key, uint32_t slot,
                         keel_cmd *inverse, keel_diags *d)
{
    keel_cmd tmp;
    if (w->frozen) return keel__refuse_frozen(d);
    keel_cmd *inv = keel__cmd_begin(w, inverse, &tmp);
    keel_status st = entity_for(w, e, d);
    uint32_t i = (uint32_t)e;
    keel__entry *m = NULL;
    if (st == KEEL_OK && !key) st = KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "a kind key is required");
    if (st == KEEL_OK) {
        keel__ent *en = &w->ents[i];
        const keel_kind_desc *kd = k ? keel_kind_describe(k) : NULL;
        if (slot == KEEL_SLOT_AUTO && kd && kd->multiplicity == KEEL_MANY &&
            entry_by_key_k(w, en, k, key, KEEL_SLOT_AUTO))
            st = KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s is a many kind: name the slot to remove", key);
        /* several entries under the key and no live one kind at slot 0 to mean: which goes would be a guess
         * (an undeclared kind's multiplicity is unknown; so is that of unknown copies in a newer version) */
        else if (slot == KEEL_SLOT_AUTO && !(kd && kd->multiplicity == KEEL_ONE && keel__entry_find(w, en, k, 0)) &&
                 key_count(w, en, k, key) > 1)
            st = KEEL_ERROR(d, KEEL_INVALID_OPERATION, "",
                            "%s: this entity holds %u of it: name the slot to remove", key,
                            key_count(w, en, k, key));
        else if (!(m = entry_by_key_k(w, en, k, key, slot))) {
            if (!entry_by_key_k(w, en, k, key, KEEL_SLOT_AUTO))
                st = KEEL_ERROR(d, KEEL_NOT_FOUND, "", "%s not found", key);
            else
                st = KEEL_ERROR(d, KEEL_NOT_FOUND, "", "slot %u of %s not found", slot, key);
        }
    }
    if (st == KEEL_OK && m->kind && key_count(w, &w->ents[i], m->kind, key) == 1) {
        keel__ent *en = &w->ents[i];
        keel__entry *ms = keel__members(w, en);
        for (uint32_t o = 0; o < en->member_count; o++) {
            keel__entry *other = &ms[o];
            if (other == m || !other->kind) continue;
            const keel_kind_desc *od = keel_kind_describe(other->kind);
            if (names(od->requires, od->requires_count, key)) {
                st = KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s is required by %s", key, od->key);
                break;
            }
        }
    }
    if (st == KEEL_OK) {
        uint32_t s = keel__entry_slot(w, m);
        if (inv) remove_inverse(w, i, m, inv);
        if (!w->rolling_back) mark_removed(w, i, m, s); /* a rollback's remove undoes an add no one saw */
        if (m->kind && m->awoken && !m->faulted && !w->rolling_back) {
            bool now = w->txn_depth == 0; /* else deferred: no hook runs before the delete */
            keel__call_on_destroy(w, i, m->kind, s, m->row);
            if (now) m = keel__ent_get(w, e) ? entry_by_key_k(w, &w->ents[i], k, key, s) : NULL;
        }
        if (m) entry_delete(w, i, m);
        keel__touch(w);
    }
    return keel__cmd_end(w, st, inv, &tmp);
}

/* on_destroy for every live component (membership order; inside a callback transaction, deferred
 * to its commit), then every record freed. */
void keel__members_drop(keel_world *w, uint32_t i, bool quiet)
{
    if (!quiet) {
        keel__ent *en = &w->ents[i];
        size_t n = en->member_count;
        /* a copy: hooks run now may change the stack (and the slot map) */
        struct {
            keel_kind_id kind;
            uint32_t slot, row;
        } *list = keel__xrealloc(NULL, (n ? n : 1) * sizeof *list);
        const keel__entry *ms = keel__members(w, en);
        size_t c = 0;
        for (size_t m = 0; m < n; m++) {
            const keel__entry *x = &ms[m];
            if (x->kind && x->awoken && !x->faulted) {
                list[c].kind = x->kind;
                list[c].slot = keel__entry_slot(w, x);
                list[c++].row = x->row;
            }
        }
        for (size_t m = 0; m < c; m++) keel__call_on_destroy(w, i, list[m].kind, list[m].slot, list[m].row);
        free(list);
    }
    keel__ent *en = &w->ents[i];
    while (en->member_count) entry_delete(w, i, &keel__members(w, en)[en->member_count - 1]);
}

void keel__entry_clone(keel_world *w, uint32_t dst, const keel__entry *m)
{
    uint32_t slot = keel__entry_slot(w, m);
    if (!m->kind) {
        keel__entry *c = entry_push(w, &w->ents[dst]);
        const keel__unknown *mu = keel__entry_unk(m);
        unknown_new(c, mu->key, keel_node_copy(mu->preserved))->version = mu->version;
        keel__entry_set_slot(w, c, slot);
        c->enabled = m->enabled;
        return;
    }
    uint32_t row = keel__store_append(w, m->kind, keel__handle(w, dst), slot);
    keel__store *s = &w->stores[m->kind];
    keel__record_copy(m->kind, keel__store_rec(s, row), keel__store_rec(s, m->row));
    keel__entry *c = entry_push(w, &w->ents[dst]);
    c->kind = m->kind;
    c->row = row;
    if (slot) keel__entry_set_slot(w, c, slot);
    c->enabled = m->enabled;
    keel__entry_born(w, dst, c);
    keel__touch(w);
}

/* The rules of entry a of entity i, reported at path p. */
static keel_status check_entry_rules(const keel_world *w, keel__ent *en, uint32_t i, uint32_t a, const char *p,
                                     keel_diags *d)
{
    keel__entry *m = &keel__members(w, en)[a];
    keel_status st = KEEL_OK;
    if (!m->kind) return st;
    const keel_kind_desc *kd = keel_kind_describe(m->kind);
    if (kd->multiplicity == KEEL_ONE && m->slotted)
        st = KEEL_ERROR(d, KEEL_INVALID_OPERATION, p, "%s is a one kind: only slot 0, not slot %u", kd->key,
                        keel__entry_slot(w, m));
    for (uint32_t b = 0; b < a; b++)
        if (kd->multiplicity == KEEL_ONE && keel__members(w, en)[b].kind == m->kind)
            st = KEEL_ERROR(d, KEEL_INVALID_OPERATION, p, "%s is already present (multiplicity one)", kd->key);
    if (kd->multiplicity == KEEL_MANY && kd->max) {
        uint32_t seen = 0;
        for (uint32_t b = 0; b <= a; b++)
            if (keel__members(w, en)[b].kind == m->kind) seen++;
        if (seen > kd->max)
            st = KEEL_ERROR(d, KEEL_INVALID_OPERATION, p, "%s allows at most %u components", kd->key, kd->max);
    }
    keel_status rs = keel__root_rules(i, kd, p, d);
    if (rs) st = rs;
    for (size_t r = 0; r < kd->requires_count; r++)
        if (!keel__entry_by_key(w, en, kd->requires[r], KEEL_SLOT_AUTO))
            st = KEEL_ERROR(d, KEEL_INVALID_OPERATION, p, "%s requires %s", kd->key, kd->requires[r]);
    for (uint32_t b = 0; b < en->member_count; b++) {
        const char *other = keel__entry_key(&keel__members(w, en)[b]);
        if (b != a && names(kd->rejects, kd->rejects_count, other))
            st = KEEL_ERROR(d, KEEL_INVALID_OPERATION, p, "%s rejects %s", kd->key, other);
    }
    return st;
}

keel_status keel_check_rules(keel_world *w, keel_entity e, const char *path, keel_diags *d)
{
    keel__ent *en = keel__ent_get(w, e);
    if (!en) return KEEL_ERROR(d, KEEL_NOT_FOUND, path ? path : "", "entity not found");
    keel_status first = KEEL_OK;
    uint32_t i = (uint32_t)e;
    for (uint32_t a = 0; a < en->member_count; a++) {
        /* judged quietly first: the path string is built only for an entry that breaks a rule */
        keel_status st = check_entry_rules(w, en, i, a, "", NULL);
        if (st == KEEL_OK) continue;
        char *p = keel__strfmt("%s%scomponents[%u]", path ? path : "", path && *path ? "." : "", a);
        st = check_entry_rules(w, en, i, a, p, d);
        free(p);
        if (st && !first) first = st;
    }
    return first;
}

/* Awakes every loaded entry of entity i that has not been (hooks may change the stack). */
static void awake_entity(keel_world *w, uint32_t i, uint32_t gen, keel_kind_id only)
{
    for (;;) {
        keel__ent *en = &w->ents[i];
        if (!en->alive || keel__ent_gen(w, en) != gen) return;
        keel__entry *m = NULL, *ms = keel__members(w, en);
        for (uint32_t a = 0; a < en->member_count && !m; a++)
            if (ms[a].kind && !ms[a].awoken && (!only || ms[a].kind == only)) m = &ms[a];
        if (!m) return;
        m->awoken = true;
        keel__call_hook(w, i, m->kind, keel__entry_slot(w, m), KEEL_PHASE_AWAKE, 0);
    }
}

/* Run order (root first, then pre-order), fixed before any hook runs. */
void keel__awake_in_run_order(keel_world *w, keel_kind_id only)
{
    if (w->dormant) return;
    size_t n = 0;
    keel__run_item *list = keel__xrealloc(NULL, (w->live + 1) * sizeof *list);
    list[n++] = (keel__run_item){ 0, keel__ent_gen(w, &w->ents[0]), 0, 0 };
    for (keel_entity e = keel_next(w, 0); e; e = keel_next(w, e))
        list[n++] = (keel__run_item){ (uint32_t)e, (uint32_t)(e >> 32), 0, 0 };
    for (size_t k = 0; k < n; k++) awake_entity(w, list[k].index, list[k].gen, only);
    free(list);
}

keel_status keel_awake_all(keel_world *w, keel_diags *d)
{
    (void)d;
    keel__awake_in_run_order(w, KEEL_NO_KIND);
    return KEEL_OK;
}

/* ---------------------------------------------------------------- reading membership */

size_t keel_member_count(const keel_world *w, keel_entity e)
{
    keel__ent *en = keel__ent_get(w, e);
    return en ? en->member_count : 0;
}

bool keel_member_at(const keel_world *w, keel_entity e, size_t i, keel_member *out)
{
    keel__ent *en = keel__ent_get(w, e);
    if (!en || i >= en->member_count) return false;
    keel__entry *m = &keel__members(w, en)[i];
    out->kind = m->kind;
    out->key = keel__entry_key(m);
    out->slot = keel__entry_slot(w, m);
    out->loaded = m->kind != KEEL_NO_KIND;
    out->enabled = m->enabled;
    out->faulted = m->faulted;
    out->version = m->kind ? keel_kind_describe(m->kind)->version : keel__entry_unk(m)->version;
    out->counter = m->kind ? keel__row_counter(&w->stores[m->kind], m->row) : 0;
    out->preserved = m->kind ? NULL : keel__entry_unk(m)->preserved;
    out->serial = keel__entry_serial(m);
    return true;
}

bool keel_get_comp(const keel_world *w, keel_entity e, keel_kind_id k, uint32_t slot, keel_comp *out)
{
    keel__ent *en = keel__ent_get(w, e);
    keel__entry *m = en && k ? keel__entry_find(w, en, k, slot) : NULL;
    if (!m) return false;
    if (out) *out = (keel_comp){ e, k, keel__entry_slot(w, m) };
    return true;
}

static inline keel__entry *comp_entry(const keel_world *w, keel_comp c)
{
    keel__ent *en = keel__ent_get(w, c.entity);
    return en && c.kind ? keel__entry_find(w, en, c.kind, c.slot) : NULL;
}

keel__entry *keel__comp_entry(const keel_world *w, keel_comp c) { return comp_entry(w, c); }

bool keel_comp_alive(const keel_world *w, keel_comp c) { return keel__comp_entry(w, c) != NULL; }

uint64_t keel_comp_serial(const keel_world *w, keel_comp c)
{
    keel__entry *m = keel__comp_entry(w, c);
    return m ? keel__entry_lserial(m) : 0; /* a loaded entry's */
}

void *keel_record(const keel_world *w, keel_comp c)
{
    keel__entry *m = comp_entry(w, c); /* inline: a system's loop asks for every entity */
    return m ? keel__store_rec(&w->stores[c.kind], m->row) : NULL;
}

uint64_t keel_comp_counter(const keel_world *w, keel_comp c)
{
    keel__entry *m = keel__comp_entry(w, c);
    return m ? keel__row_counter(&w->stores[c.kind], m->row) : 0;
}

bool keel_comp_faulted(const keel_world *w, keel_comp c)
{
    keel__entry *m = keel__comp_entry(w, c);
    return m && m->faulted;
}

keel_status keel_comp_clear_fault(keel_world *w, keel_comp c, keel_diags *d)
{
    keel__entry *m = NULL;
    keel_status st = keel__comp_resolve(w, c, &m, "cleared of its fault", d);
    if (st) return st;
    m->faulted = false;
    w->enabling++; /* a kept pass's verdicts (pass.c) change with it */
    w->relabels++;  /* and the incremental state hash's terms */
    return KEEL_OK;
}

bool keel_comp_enabled(const keel_world *w, keel_comp c)
{
    keel__entry *m = keel__comp_entry(w, c);
    return m && m->enabled;
}

/* The entry for `c`, or the reason there is none (an unloaded one is Unsupported). */
keel_status keel__comp_resolve(const keel_world *w, keel_comp c, keel__entry **out, const char *what, keel_diags *d)
{
    keel__ent *en = keel__ent_get(w, c.entity);
    if (!en) return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "entity not found");
    const keel_kind_desc *kd = c.kind ? keel_kind_describe(c.kind) : NULL;
    if (!kd) return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "kind %u not found", (unsigned)c.kind);
    *out = keel__entry_find(w, en, c.kind, c.slot);
    if (*out) return KEEL_OK;
    if (keel__entry_by_key(w, en, kd->key, c.slot))
        return KEEL_ERROR(d, KEEL_UNSUPPORTED, "", "%s is not loaded: its fields cannot be %s", kd->key, what);
    if (c.slot == KEEL_SLOT_AUTO || !keel__entry_by_key(w, en, kd->key, KEEL_SLOT_AUTO))
        return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "%s not found", kd->key);
    return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "slot %u of %s not found", c.slot, kd->key);
}

keel_status keel_comp_set_enabled(keel_world *w, keel_comp c, bool enabled, keel_cmd *inverse, keel_diags *d)
{
    keel_cmd tmp;
    if (w->frozen) return keel__refuse_frozen(d);
    keel_cmd *inv = keel__cmd_begin(w, inverse, &tmp);
    keel__entry *m = NULL;
    keel_status st = keel__comp_resolve(w, c, &m, "changed", d);
    if (st == KEEL_OK) {
        if (inv) {
            inv->type = KEEL_CMD_ENABLE_COMPONENT;
            inv->entity = w->ents[(uint32_t)c.entity].uuid;
            inv->kind_key = keel__strdup(keel_kind_describe(c.kind)->key);
            inv->slot = keel__entry_slot(w, m);
            inv->enabled = m->enabled;
        }
        keel__entry_set_enabled(w, m, enabled);
        w->revision++;
    }
    return keel__cmd_end(w, st, inv, &tmp);
}

/* ---------------------------------------------------------------- bodies */

keel_node *keel_body_encode(const keel_world *w, keel_comp c, bool with_transient)
{
    keel__entry *m = keel__comp_entry(w, c);
    return m ? keel__body_encode(c.kind, keel__store_rec(&w->stores[c.kind], m->row), with_transient ? 0 : KEEL__BODY_SCENE)
             : NULL;
}

void keel__entry_move(keel_world *dst, uint32_t di, keel_world *src, keel__entry *m)
{
    uint32_t slot = keel__entry_slot(src, m);
    keel__entry *c = entry_push(dst, &dst->ents[di]);
    c->kind = m->kind;
    c->enabled = m->enabled;
    c->started = m->started;
    c->awoken = m->awoken;
    c->faulted = m->faulted;
    if (!m->kind) { /* an unknown entry: its body (and slot) change hands */
        uint64_t serial = keel__entry_lserial(c); /* dst's own (the version travels with the body) */
        keel__entry_set_unk(c, keel__entry_unk(m));
        keel__entry_unk(c)->serial = serial;
        c->slotted = m->slotted;
        keel__entry_set_unk(m, NULL);
        m->slotted = false; /* m holds nothing now */
        keel__touch(dst);
        return;
    }
    if (slot) keel__entry_set_slot(dst, c, slot);
    uint32_t row = keel__store_append(dst, m->kind, keel__handle(dst, di), slot);
    c->row = row;
    keel__entry_born(dst, di, c);
    keel__store *ss = &src->stores[m->kind], *ds = &dst->stores[m->kind];
    void *to = keel__store_rec(ds, row), *from = keel__store_rec(ss, m->row);
    memcpy(to, from, ds->record_size);
    memset(from, 0, ss->record_size); /* its strings are the new record's now: the source frees nothing */
    uint64_t n = keel__row_counter(ss, m->row);
    if (n) keel__row_count(ds, row, n); /* a new row counts from 0 */
    keel__touch(dst);
}

void keel__members_copy(keel_world *dst, const keel_world *src)
{
    for (uint32_t i = 0; i < src->ent_count; i++) {
        const keel__ent *se = &src->ents[i];
        if (!se->alive || se->block == KEEL__NO_BLOCK) continue;
        uint32_t b = entries_alloc(dst, keel__block_cap(se->block));
        keel__entry *a = keel__block_at(dst, b);
        const keel__entry *sm = keel__members(src, se);
        if (se->member_count) memcpy(a, sm, se->member_count * sizeof *a);
        for (uint32_t k = 0; k < se->member_count; k++) {
            if (a[k].kind) continue; /* loaded: the same row of the copied store */
            keel__unknown *u = keel__xrealloc(NULL, sizeof *u);
            u->key = keel__strdup(keel__entry_unk(&sm[k])->key);
            u->preserved = keel_node_copy(keel__entry_unk(&sm[k])->preserved);
            u->serial = keel__entry_unk(&sm[k])->serial;
            u->version = keel__entry_unk(&sm[k])->version;
            u->slot = keel__entry_unk(&sm[k])->slot;
            keel__entry_set_unk(&a[k], u);
        }
        dst->ents[i].block = b;
    }
    keel__members_copy_aside(dst, src);
}

void keel__members_copy_aside(keel_world *dst, const keel_world *src)
{
    dst->last_serial = src->last_serial;
    keel__map_copy(&dst->slots, &src->slots); /* the same serials */
    marks_copy(dst, src);
    dst->fresh_count = dst->fresh_cap = src->fresh_count;
    dst->fresh = src->fresh_count ? keel__xrealloc(NULL, src->fresh_count * sizeof *dst->fresh) : NULL;
    if (src->fresh_count) memcpy(dst->fresh, src->fresh, src->fresh_count * sizeof *dst->fresh);
    dst->fresh_frame = src->fresh_frame;
}
