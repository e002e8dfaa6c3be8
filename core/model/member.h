/* member.h — membership: the component stack of an entity, slots, kind rules, adds and removes. */
#ifndef KEEL_MEMBER_H
#define KEEL_MEMBER_H

#include "keel.h"
#include "model/entity.h"

#define KEEL__MAX_COMPONENTS 256
/* Membership arrays come from per-world pools, capacities 2, 4, ... 256 (one malloc per
 * chunk of them instead of one per entity). */
#define KEEL__ENTRY_CLASSES 8
/* A class's first chunk holds 4,096 entries, each next one twice the one before, up to 2^21
 * (a block's offset has 21 bits: entity.h KEEL__BLOCK_CHUNK_SHIFT). */
#define KEEL__ENTRY_CHUNK0 4096u

/* What only an unknown entry has (kept aside: most entries are loaded). */
typedef struct keel__unknown {
    char *key;
    keel_node *preserved;   /* its body as read */
    uint64_t serial;        /* the entry's (keel__entry_serial) */
    uint32_t slot;          /* the entry's (keel__entry_slot) */
    int version;            /* the version its body was written in */
} keel__unknown;

/* Serials have 42 bits: a world makes at most 2^42 - 1 components (4.4 trillion) in its life. */
#define KEEL__SERIAL_MAX ((UINT64_C(1) << 42) - 1)
/* Kind ids have 16 bits in an entry (kind.c declares at most this many kinds). */
#define KEEL__KIND_MAX 0xFFFFu

/* One membership entry: the component stack of an entity, in order; 12 bytes (they are per
 * component): the kind, the flags and the serial's high bits share a word. The slot is only a
 * bit: nearly every component is in slot 0, and a loaded entry's other slot is kept in the
 * world's slot map by serial (world.h keel__entry_slot). An unknown entry's rarely used parts
 * (key, body, serial, slot, version) are kept aside, its address in serial_lo and row
 * (keel__entry_unk). */
typedef struct keel__entry {
    uint32_t kind : 16;     /* KEEL_NO_KIND when unknown */
    uint32_t enabled : 1, started : 1, awoken : 1, faulted : 1;
    /* fresh: added during the step of frame w->fresh_frame, runs from the next (keel__entry_due);
     * cleared once a later frame adds one (member.c) */
    uint32_t fresh : 1;
    uint32_t slotted : 1;   /* its slot is not 0 (keel__entry_slot) */
    /* loaded: the serial, per world, never reused (a rollback gives a removed entry its own
     * back; keel__entry_serial). Unknown: serial_lo is the high half of its keel__unknown's address */
    uint32_t serial_hi : 10;
    uint32_t serial_lo;
    uint32_t row;           /* loaded: index in the kind's storage; unknown: the low half of that address */
} keel__entry;

_Static_assert(sizeof(keel__entry) == 12, "a membership entry stays 12 bytes");

static inline keel__unknown *keel__entry_unk(const keel__entry *m)
{
    return (keel__unknown *)(uintptr_t)((uint64_t)m->serial_lo << 32 | m->row);
}
static inline void keel__entry_set_unk(keel__entry *m, keel__unknown *u)
{
    uint64_t a = (uint64_t)(uintptr_t)u;
    m->serial_lo = (uint32_t)(a >> 32);
    m->row = (uint32_t)a;
}
/* A loaded entry's serial (keel__entry_serial reads an unknown one's too). */
static inline uint64_t keel__entry_lserial(const keel__entry *m)
{
    return (uint64_t)m->serial_hi << 32 | m->serial_lo;
}
static inline void keel__entry_set_serial(keel__entry *m, uint64_t serial)
{
    m->serial_hi = (uint32_t)(serial >> 32);
    m->serial_lo = (uint32_t)serial;
}

/* An entry added during a step (keel__entry.fresh), to clear its flag once the frame is over. */
typedef struct keel__fresh {
    uint32_t index, gen;
    keel_kind_id kind;
    uint32_t slot;
} keel__fresh;

static inline uint64_t keel__entry_serial(const keel__entry *m)
{
    return m->kind ? keel__entry_lserial(m) : keel__entry_unk(m)->serial;
}

/* An entry removed inside a hook transaction: if a rollback brings it back, it keeps its serial. */
typedef struct keel__tomb {
    uint32_t index, gen;
    keel_kind_id kind;
    uint32_t slot;
    uint64_t serial;
} keel__tomb;

/* Slot high-water marks: per entity and kind, the highest slot removed in this session while no
 * higher one was held, so a new slot is past every slot the entity ever used there and a held
 * address (UUID, kind, slot) never names a newer component. Only entities that removed their
 * highest slot of a kind have any (kept aside, by entity index: world.h marks_of); a mark goes
 * when its entity's index is freed, and no file holds it. */
typedef struct keel__mark {
    keel_kind_id kind;      /* KEEL_NO_KIND: an undeclared key (then `key`, malloc'd) */
    uint32_t slot;
    char *key;
} keel__mark;
typedef struct keel__marks {
    uint32_t index, count;  /* the entity's, and how many kinds it has marks for */
    keel__mark *v;
} keel__marks;

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
/* What keel__members_copy copies besides the arrays: the last serial, slots, marks, fresh flags. */
void keel__members_copy_aside(keel_world *dst, const keel_world *src);
/* The outermost hook transaction ended: removed entries can no longer come back. */
void keel__tombs_clear(keel_world *w);
/* The entry of key `key` (loaded or unknown) in `slot` (KEEL_SLOT_AUTO: the lowest). */
keel__entry *keel__entry_by_key(const keel_world *w, struct keel__ent *en, const char *key, uint32_t slot);
/* Puts entry m (its kind and serial final) in `slot`: the bit, and the slot kept aside when not 0. */
void keel__entry_set_slot(keel_world *w, keel__entry *m, uint32_t slot);
/* The slot a new component of `key` (its id k, KEEL_NO_KIND when undeclared) on entity i must be
 * above: its mark + 1, or 0 when it has none. */
uint64_t keel__mark_floor(const keel_world *w, uint32_t i, keel_kind_id k, const char *key);
/* Entity i's index is freed (destroyed, moved out): its marks go. */
void keel__marks_drop(keel_world *w, uint32_t i);
/* Entity si of src moved to di of dst (keel_transfer): its marks go with it. */
void keel__marks_move(keel_world *dst, uint32_t di, keel_world *src, uint32_t si);
/* Would adding k to entity i break multiplicity, max, requires or rejects? InvalidOperation in d. */
keel_status keel__check_add_rules(keel_world *w, uint32_t i, keel_kind_id k, keel_diags *d);
/* Entry m of entity i was just added (or adopted): fresh when added during a step, so it first
 * runs in the next frame. */
void keel__entry_born(keel_world *w, uint32_t i, keel__entry *m);
/* Runs awake for k's components not yet awoken, in run order (hot reload adopting entries). */
void keel__awake_in_run_order(keel_world *w, keel_kind_id only);
/* Is the kind's placement on the scene root (or off it) allowed? InvalidOperation in d if not. */
keel_status keel__root_rules(uint32_t i, const keel_kind_desc *kd, const char *path, keel_diags *d);

/* The kind's validate for every field of c, in declared order, as a load with a body asks it of
 * the fields the body names: what a loader that stored the values itself (the cooked reader) owes
 * them. A rejection is reported at path.body.FIELD (path: the component's). */
keel_status keel__validate_fields(keel_world *w, keel_comp c, const char *path, keel_diags *d);

#endif
