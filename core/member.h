/* member.h — membership: the component stack of an entity, slots, kind rules, adds and removes. */
#ifndef KEEL_MEMBER_H
#define KEEL_MEMBER_H

#include "keel.h"
#include "entity.h"

#define KEEL__MAX_COMPONENTS 256
/* Membership arrays come from per-world pools, capacities 2, 4, ... 256 (one malloc per
 * chunk of them instead of one per entity). */
#define KEEL__ENTRY_CLASSES 8

/* What only an unknown entry has (kept aside: most entries are loaded). */
typedef struct keel__unknown {
    char *key;
    keel_node *preserved;   /* its body as read */
    uint64_t serial;        /* the entry's (keel__entry_serial) */
} keel__unknown;

/* One membership entry: the component stack of an entity, in order; 20 bytes (they are per
 * component): the flags share a word with the kind id, the serial (or the unknown part) is
 * 4-byte aligned, and what only some entries need is kept aside. */
typedef struct keel__entry {
    keel_kind_id kind : 27; /* KEEL_NO_KIND when unknown (kind ids stay far below 2^27) */
    bool enabled : 1, started : 1, awoken : 1, faulted : 1; /* in the kind's last byte */
    /* fresh: added during the step of frame w->fresh_frame, runs from the next (keel__entry_due);
     * cleared once a later frame adds one (member.c) */
    bool fresh : 1;
    uint32_t slot;
    union {
        uint32_t row;       /* loaded: index in the kind's storage */
        int version;        /* unknown: the version its body was written in */
    };
    union __attribute__((packed, aligned(4))) {
        uint64_t serial;    /* loaded: per world, never reused (a rollback gives a removed entry
                               its own back); read it with keel__entry_serial */
        keel__unknown *unk; /* unknown: key (loaded ones read the registry), body and serial */
    };
} keel__entry;

/* An entry added during a step (keel__entry.fresh), to clear its flag once the frame is over. */
typedef struct keel__fresh {
    uint32_t index, gen;
    keel_kind_id kind;
    uint32_t slot;
} keel__fresh;

_Static_assert(sizeof(keel__entry) <= 20, "a membership entry stays within 20 bytes");

static inline uint64_t keel__entry_serial(const keel__entry *m) { return m->kind ? m->serial : m->unk->serial; }

/* An entry removed inside a hook transaction: if a rollback brings it back, it keeps its serial. */
typedef struct keel__tomb {
    uint32_t index, gen;
    keel_kind_id kind;
    uint32_t slot;
    uint64_t serial;
} keel__tomb;

/* The loaded entry of kind k in `slot` (KEEL_SLOT_AUTO: the lowest); inline: every hook call asks. */
static inline keel__entry *keel__entry_find(keel__ent *en, keel_kind_id k, uint32_t slot)
{
    keel__entry *best = NULL;
    for (uint32_t i = 0; i < en->member_count; i++) {
        keel__entry *m = &en->members[i];
        if (m->kind != k) continue;
        if (slot == KEEL_SLOT_AUTO) {
            if (!best || m->slot < best->slot) best = m;
        } else if (m->slot == slot) {
            return m;
        }
    }
    return best;
}

const char *keel__entry_key(const keel__entry *m);
/* The entry of live component c (NULL when c is not alive). */
keel__entry *keel__comp_entry(const keel_world *w, keel_comp c);
/* The entry of component c for reading or writing its fields: NotFound (entity, kind or slot),
 * Unsupported when c is held unknown; `what` ("read", "edited", ...) words the message. */
keel_status keel__comp_resolve(const keel_world *w, keel_comp c, keel__entry **out, const char *what, keel_diags *d);
/* Frees every component of the entity (running on_destroy first unless `quiet`). */
void keel__members_drop(keel_world *w, uint32_t i, bool quiet);
void keel__unknown_free(keel__unknown *u);
void keel__entries_release(keel_world *w, struct keel__ent *en); /* back to the pool (entries already emptied) */
void keel__entry_pools_free(keel_world *w);
keel_status keel__add_internal(keel_world *w, keel_entity e, keel_kind_id k, const keel_add_opts *o,
                               keel_comp *out, keel_diags *d);
/* Copies entry `m` (of another entity) onto entity `dst` in the same slot. */
void keel__entry_clone(keel_world *w, uint32_t dst, const keel__entry *m);
/* Moves entry m of entity in `src` onto entity di of `dst` (same slot, flags, version and record;
 * an unknown entry's body), leaving m's record empty for src to drop without a hook. */
void keel__entry_move(keel_world *dst, uint32_t di, keel_world *src, keel__entry *m);
/* Gives every live entity of dst (a copy of src's table) a copy of its membership array. */
void keel__members_copy(keel_world *dst, const keel_world *src);
/* The outermost hook transaction ended: removed entries can no longer come back. */
void keel__tombs_clear(keel_world *w);
/* The entry of key `key` (loaded or unknown) in `slot` (KEEL_SLOT_AUTO: the lowest). */
keel__entry *keel__entry_by_key(struct keel__ent *en, const char *key, uint32_t slot);
/* Would adding k to entity i break multiplicity, max, requires or rejects? InvalidOperation in d. */
keel_status keel__check_add_rules(keel_world *w, uint32_t i, keel_kind_id k, keel_diags *d);
/* Entry m of entity i was just added (or adopted): fresh when added during a step, so it first
 * runs in the next frame. */
void keel__entry_born(keel_world *w, uint32_t i, keel__entry *m);
/* Runs awake for k's components not yet awoken, in run order (hot reload adopting entries). */
void keel__awake_in_run_order(keel_world *w, keel_kind_id only);
/* Is the kind's placement on the scene root (or off it) allowed? InvalidOperation in d if not. */
keel_status keel__root_rules(uint32_t i, const keel_kind_desc *kd, const char *path, keel_diags *d);

#endif
