/* world.h — the world object (the one struct the world's files share, as Lua's lstate.h). */
#ifndef KEEL_WORLD_H
#define KEEL_WORLD_H

#include "base/util.h"
#include "model/entity.h"
#include "model/member.h"
#include "model/slotmap.h"
#include "model/store.h"
#include "model/step.h"
#include "model/txn.h"
#include "model/ext.h"

struct keel_world {
    keel_uuid uuid;
    char *name;
    keel_grid grid;
    uint64_t revision, epoch, frame;
    uint64_t revision_sets;           /* times keel__world_set_revision moved it: (revision, this) never repeats */
    uint16_t tag;                     /* in every generation of its entities (entity.h KEEL__GEN) */
    uint64_t structure;               /* bumps on every structural change; never goes back (play's stop) */
    uint64_t enabling;                /* bumps whenever an enabled flag of a live entity or component changes
                                       * (and a fault flag: kept passes, pass.c) */
    keel__ent *ents;
    keel__kids *kids;                 /* children records of the entities that have any (hierarchy.c) */
    uint32_t kids_count, kids_cap, kids_free; /* kids_free: a free record's index + 1, 0 none */
    uint32_t *kids_map;               /* parent index -> its record: record + 1, 0 empty (keel__kids_get) */
    uint32_t kids_map_cap, kids_map_used;
    uint32_t kids_root;               /* the root's record (not in the map: most spawns link under it) */
    uint32_t kids_hot_owner, kids_hot; /* the parent linked to last and its record (0: none): siblings
                                        * are often linked one after another (hierarchy.c kids_of) */
    uint32_t ent_count, ent_cap;      /* index 0 is the root */
    uint32_t reserved;                /* keel_world_reserve's entity count: a kind's row facts outgrowing
                                       * their first page grow straight to it (store.c) */
    uint32_t *free_idx;
    size_t free_count, free_cap;
    uint32_t *held;                   /* indices freed inside a hook: reusable once it commits, */
    size_t held_count, held_cap;      /* so a rollback can give the entity back its handle */
    uint32_t reuse_index, reuse_gen;  /* set by a rollback's spawn: come back as this handle */
    size_t live;                      /* root excluded */
    uint32_t *hash;                   /* open addressing: hash bits | index + 1, 0 empty (entity.c) */
    unsigned hash_ibits;              /* the low bits of a slot that hold the index + 1 */
    keel__name *names;                /* interned entity names by id (entity.c) */
    uint32_t names_count, names_cap, names_free; /* names_free: a free id + 1, 0 none */
    uint32_t *name_slots;             /* open addressing over the names: id + 1, 0 empty */
    size_t name_slots_cap, name_slots_used; /* used counts dead names too */
    uint32_t name_last;               /* the id interned last + 1 (0 none): spawns often repeat one */
    size_t hash_cap, hash_used;
    /* keel_entity_child's last answer: walking on from it makes an index loop over children linear */
    uint32_t child_parent, child_at;
    size_t child_pos;
    uint64_t child_structure;         /* 0: none cached (structure starts at 0, any change bumps it) */
    /* pooled membership arrays (blocks) by capacity class (member.c), carved from chunks that
     * never move, each of one class; a block names its chunk by id (keel__block_at) */
    uintptr_t entry_chunk[KEEL__BLOCK_CHUNKS];  /* chunk id -> its address */
    uint32_t entry_chunk_count;                 /* ids used (0 to entry_chunk_count - 1) */
    uint32_t entry_free[KEEL__ENTRY_CLASSES];   /* a given-back block + 1 (0 none); it holds the next */
    uint32_t entry_chunks[KEEL__ENTRY_CLASSES]; /* chunks made per class (each twice the one before) */
    uint32_t entry_last[KEEL__ENTRY_CLASSES];   /* the class's newest chunk's id, */
    uint32_t entry_next[KEEL__ENTRY_CLASSES];   /* the offset of its first entry never handed out */
    uint32_t entry_end[KEEL__ENTRY_CLASSES];    /* and its size, in entries */
    uint32_t entry_chunk_size[KEEL__BLOCK_CHUNKS]; /* chunk id -> its size, in entries (a capture copies chunks whole) */
    keel__store *stores;              /* by kind id */
    size_t store_count;
    keel_uuid next_uuid[KEEL__UUID_RING]; /* drawn ahead (see keel__new_uuid) */
    uint32_t next_pos;
    unsigned next_forks;              /* keel__uuid_forks when the ring was drawn */
    bool next_ready;
    /* lifecycle */
    bool in_step;
    bool dormant;                     /* a template (keel_load_opts.no_awake): awake never runs in it */
    bool mirror;                      /* another world is the authority (a replication client's): fixed_update
                                       * and update do not run, synced fields are written only by the
                                       * authority's updates (keel__world_set_mirror) */
    bool mirror_applying;             /* the authority's updates are being written */
    double fixed_dt, acc;
    keel__run runs[KEEL_PHASE_COUNT_];
    uint64_t runs_structure;
    bool runs_valid;
    keel__pending *pending;
    size_t pending_count, pending_cap;
    /* transactions */
    keel__jentry *log;                /* the open transactions' journal (txn.c) */
    size_t log_count, log_cap;
    int txn_depth;
    int cmd_depth;                    /* only the outermost command logs its inverse */
    bool rolling_back;                /* no hooks, no logging */
    keel_comp hook_comp;              /* the component whose hook is running (readonly fields are its own) */
    uint32_t hook_row;                /* its storage row when that hook began */
    keel__doomed *doomed;             /* committed destroys whose on_destroy is due (step.c runs them) */
    size_t doomed_count, doomed_cap;
    bool draining;                    /* those are running: the ones they add join the queue */
    uint32_t *dying;                  /* entities whose on_destroy hooks are running, innermost last: */
    size_t dying_count, dying_cap;    /* a destroy from inside them is the outer one's to finish */
    keel_fault *faults;
    size_t fault_count, fault_cap;
    keel_world *next_world, *prev_world;
    keel_world *played;               /* while playing: the world as it was at play (play.c) */
    struct keel__kept *kept;          /* while playing: what to carry back at stop (keep.c) */
    size_t kept_count, kept_cap;
    struct keel_lift *lifts;          /* open lifts, newest first (lift.c) */
    keel_diags *retiring;             /* keel_world_close under way: each on_destroy that fails (close.c) */
    /* membership serials */
    uint64_t last_serial;
    keel__slotmap slots;              /* the loaded entries' non-zero slots, by serial (keel__entry_slot) */
    keel__map marks_of;               /* entity index -> its slot high-water marks' record + 1 (member.h) */
    keel__marks *marks;
    size_t marks_count, marks_cap;
    keel__fresh *fresh;               /* the entries flagged fresh, all added in frame fresh_frame */
    size_t fresh_count, fresh_cap;
    uint64_t fresh_frame;
    keel__tomb *tombs;                /* live while a hook transaction is open (freed by step.c) */
    size_t tomb_count, tomb_cap;
    double time;                      /* world time: the sum of every dt given to keel_step */
    const keel_message *msg_now;      /* the message an on_message call delivers (keel_call_message) */
    struct keel__prof *prof;          /* profiling on: the step's counters (model/prof.h, game/stats.c); else NULL */
    /* what attaches to the world (ext.h): systems, timers, messages, a binding, a replication host */
    keel__ext *exts;
    size_t ext_count, ext_cap, ext_pos; /* ext_pos: the entry a walk is calling */
    bool ext_walking;
    uint32_t features;                /* the scene header's features (features.h bits): written back */
    /* the world's random generator (random.c): xoshiro256** seeded from `seed` by splitmix64;
     * `seeded` false: the seed is still the one derived from the scene UUID, drawn at first use */
    uint64_t rng[4];
    int64_t seed;
    bool seeded;
    /* recording or replaying (game/record.c): new UUIDs come from idrng, not the process pool, so
     * a replay makes the same ones; every change from outside the step goes to `input` */
    bool ids_from_rng;
    uint64_t idrng[4];
    void (*input)(keel_world *w, void *state, const keel_cmd *cmd, bool inverse); /* cmd: an inverse, or the change itself */
    void *input_state;
    bool frozen; /* a replay's world between its frames: every write refuses (keel__refuse_frozen) */
    uint64_t relabels; /* bumps when an entity's name or a component's fault flag changes: with structure
                        * and enabling, what the state hash's cache trusts (game/state_hash.c) */
    struct keel__capture_home *capture_home; /* save jobs' capture memory kept between saves (capture.c); NULL: none yet */
};
/* InvalidOperation: w is a replay's read-only world (world.c). */
keel_status keel__refuse_frozen(keel_diags *d);

/* Every live world, for registry changes (linked through next_world). */
keel_world *keel__world_list(void);

/* ---- play mode's keep (game/keep.c) ---- */

/* One thing keel__world_keep marked: an entity (kind NULL) or one of its components; the nil
 * UUID names the scene root. */
typedef struct keel__kept {
    keel_uuid entity;
    char *kind;
    uint32_t slot;
} keel__kept;
typedef struct keel__kept_state keel__kept_state;
void keel__kept_free_all(keel_world *w);
/* The kept entries read out of the playing world w (its list emptied), in the order they apply. */
keel__kept_state *keel__keep_capture(keel_world *w, size_t *n);
/* Writes them into w; the inverses as one BATCH in *inverse (left NONE when nothing applied, or
 * freed when inverse is NULL); each refused entry one InvalidOperation of severity sev in refused. */
void keel__keep_apply(keel_world *w, keel__kept_state *ks, size_t n, keel_cmd *inverse, keel_diags *refused,
                      keel_severity sev);
void keel__keep_states_free(keel__kept_state *ks, size_t n);
/* A deep copy of w outside the list of live worlds (play mode's remembered state): entities,
 * membership, records, settings and counters; no run lists, journal, faults or pending rows
 * (w has none of the last three when this is called). */
keel_world *keel__world_copy(const keel_world *w);
/* The settings and counters a copy of w carries (UUID, grid, revision, epoch, clocks, random state,
 * features; not the name, which each copy owns its way): play's copy and a save job's capture. */
void keel__world_copy_settings(keel_world *c, const keel_world *w);
/* Frees such a copy. */
void keel__world_discard(keel_world *c);
/* Frees w's open lifts and what they hold (lift.c; the world is going away). */
void keel__lifts_free(keel_world *w);
/* Whether entity i is out of play in an open lift of w (not alive, its handle still its own). */
bool keel__lifted(const keel_world *w, uint32_t i);
/* Whether an open lift of w holds a record of kind k. */
bool keel__lifts_hold(const keel_world *w, keel_kind_id k);
/* A new epoch number, never used before in this process. */
uint64_t keel__epoch_next(void);
/* A generation tag no live world uses (entity.h, KEEL__GEN). */
uint16_t keel__tag_next(void);
/* Entity en's name (en alive, in w). */
static inline const char *keel__ent_name(const keel_world *w, const keel__ent *en)
{
    return w->names[en->name].s;
}
/* Entity en's generation: its count under the world's tag (every entity of w carries w->tag). */
static inline uint32_t keel__ent_gen(const keel_world *w, const keel__ent *en)
{
    return KEEL__GEN(w->tag, en->gen_count);
}
/* keel__ent_get for a non-NULL w, inline: a pass asks for every entity (step.c keel__each_visit). */
static inline keel__ent *keel__ent_live(const keel_world *w, keel_entity e)
{
    uint32_t i = (uint32_t)e;
    if (i >= w->ent_count) return NULL;
    keel__ent *en = &w->ents[i];
    /* the count when e's generation carries w's tag, else a value above any count; generation 0
     * (no entity) never matches: a world's tag is never 0 */
    uint32_t count = (uint32_t)(e >> 32) ^ (uint32_t)w->tag << 20;
    return en->alive && en->gen_count == count ? en : NULL;
}
static inline keel_entity keel__handle(const keel_world *w, uint32_t i)
{
    return ((keel_entity)keel__ent_gen(w, &w->ents[i]) << 32) | i;
}
/* Membership block b's entries (b not KEEL__NO_BLOCK, or none are read: integer arithmetic, so
 * no pointer is formed from an empty chunk slot). */
static inline keel__entry *keel__block_at(const keel_world *w, uint32_t b)
{
    uintptr_t chunk = w->entry_chunk[(b >> KEEL__BLOCK_CHUNK_SHIFT) & (KEEL__BLOCK_CHUNKS - 1)];
    return (keel__entry *)(chunk + (uintptr_t)(b & ((1u << KEEL__BLOCK_CHUNK_SHIFT) - 1)) * sizeof(keel__entry));
}
static inline uint32_t keel__block_cap(uint32_t b) /* entries block b holds (0: none) */
{
    return b == KEEL__NO_BLOCK ? 0 : 2u << (b >> KEEL__BLOCK_CLASS_SHIFT);
}
/* Entity en's membership entries, member_count of them (none to read when it has no block). */
/* Every enabled flag, entity or component, is set through these: the visibility counter they move
 * is what lets a kept query trust its last verdicts (keel__world_visibility). */
static inline void keel__ent_set_enabled(keel_world *w, uint32_t i, bool on)
{
    w->ents[i].enabled = on;
    w->enabling++;
}
static inline void keel__entry_set_enabled(keel_world *w, struct keel__entry *m, bool on)
{
    m->enabled = on;
    w->enabling++;
}
static inline keel__entry *keel__members(const keel_world *w, const keel__ent *en)
{
    return keel__block_at(w, en->block);
}
/* Entry m's slot: 0 unless flagged, else kept aside (a loaded entry's in the world's slot map,
 * an unknown one's in its side record). */
static inline uint32_t keel__entry_slot(const keel_world *w, const keel__entry *m)
{
    if (!m->slotted) return 0;
    return m->kind ? keel__slotmap_get(&w->slots, keel__entry_lserial(m)) : keel__entry_unk(m)->slot;
}
/* Whether entry m is in `slot` (not KEEL_SLOT_AUTO): slot 0 asks only the entry's bit. */
static inline bool keel__entry_in_slot(const keel_world *w, const keel__entry *m, uint32_t slot)
{
    return slot ? m->slotted && keel__entry_slot(w, m) == slot : !m->slotted;
}
/* keel__entry_find past entry `from`, the first of kind k, which is in a slot other than 0
 * (member.c; out of line: rare, and the inline loop stays small). */
keel__entry *keel__entry_find_aside(const keel_world *w, const keel__ent *en, keel_kind_id k, uint32_t slot,
                                    uint32_t from);
/* The loaded entry of kind k in `slot` (KEEL_SLOT_AUTO: the lowest); inline: every hook call asks.
 * The kind is compared first and slot 0 is a bit, so slot-0 kinds never touch the slot map. */
static inline keel__entry *keel__entry_find(const keel_world *w, const keel__ent *en, keel_kind_id k, uint32_t slot)
{
    keel__entry *ms = keel__members(w, en);
    for (uint32_t i = 0, n = en->member_count; i < n; i++) {
        keel__entry *m = &ms[i];
        if (m->kind != k) continue;
        if (!m->slotted) {
            if (slot == 0 || slot == KEEL_SLOT_AUTO) return m; /* slot 0: none is lower */
        } else if (slot != 0) {
            return keel__entry_find_aside(w, en, k, slot, i);
        }
    }
    return NULL;
}
/* The children record of entity i, which has children (has_kids): open addressing from the
 * index's hash, at most half full (hierarchy.c keeps it). */
static inline uint32_t keel__kids_home(uint32_t i)
{
    uint32_t h = i * 0x9E3779B1u;
    return h ^ h >> 15;
}
static inline keel__kids *keel__kids_get(const keel_world *w, uint32_t i)
{
    if (i == 0) return &w->kids[w->kids_root];
    uint32_t mask = w->kids_map_cap - 1;
    for (uint32_t p = keel__kids_home(i) & mask;; p = (p + 1) & mask)
        if (w->kids[w->kids_map[p] - 1].owner == i) return &w->kids[w->kids_map[p] - 1];
}
/* Entity i's first and last child (KEEL__NONE: none) and its number of children. */
static inline uint32_t keel__first_child(const keel_world *w, uint32_t i)
{
    return w->ents[i].has_kids ? keel__kids_get(w, i)->first : KEEL__NONE;
}
static inline uint32_t keel__last_child(const keel_world *w, uint32_t i)
{
    return w->ents[i].has_kids ? keel__kids_get(w, i)->last : KEEL__NONE;
}
static inline uint32_t keel__child_count(const keel_world *w, uint32_t i)
{
    return w->ents[i].has_kids ? keel__kids_get(w, i)->count : 0;
}
/* Whether entity i and all its ancestors are enabled (a disabled one parks its subtree). */
static inline bool keel__active(const keel_world *w, uint32_t i)
{
    for (; i != KEEL__NONE; i = w->ents[i].parent)
        if (!w->ents[i].enabled) return false;
    return true;
}
void keel__touch(keel_world *w); /* structural change */
/* A change made now comes from outside the step (a recorder, game/record.c, wants it): outside
 * any step, hook transaction, command and rollback. */
static inline bool keel__input_wanted(const keel_world *w)
{
    return w->input && !w->in_step && w->txn_depth == 0 && w->cmd_depth == 0 && !w->rolling_back;
}
/* May entry m run in the current frame? (one added during a step first runs in the next one) */
static inline bool keel__entry_due(const keel_world *w, const keel__entry *m)
{
    return !m->fresh || w->frame > w->fresh_frame;
}

/* txn.h's command brackets, inline: a command outside any transaction, with no inverse asked,
 * pays a counter and a test. */
static inline keel_cmd *keel__cmd_begin(keel_world *w, keel_cmd *inverse, keel_cmd *tmp)
{
    if (inverse || w->txn_depth > 0 || w->input) return keel__cmd_begin_slow(w, inverse, tmp);
    w->cmd_depth++;
    return NULL;
}
static inline keel_status keel__cmd_end(keel_world *w, keel_status st, keel_cmd *inv, keel_cmd *tmp)
{
    if (inv) return keel__cmd_end_slow(w, st, inv, tmp);
    w->cmd_depth--;
    return st;
}

#endif
