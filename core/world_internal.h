/* world_internal.h — the world's private layout, shared by world/member/command/step/query/snapshot. */
#ifndef KEEL_WORLD_INTERNAL_H
#define KEEL_WORLD_INTERNAL_H

#include "internal.h"

#define KEEL__NONE UINT32_MAX        /* no entity index */
/* Records live in pages that never move (a hook's record pointer survives appends);
 * page k holds KEEL__PAGE << k records, so a big store has few page breaks and a
 * small one wastes little. */
#define KEEL__PAGE_SHIFT 6
#define KEEL__PAGE (1u << KEEL__PAGE_SHIFT)
#define KEEL__MAX_COMPONENTS 256
#define KEEL__MAX_DEPTH 256
#define KEEL__MAX_FIXED_STEPS 8
/* Membership arrays come from per-world pools, capacities 2, 4, ... 256 (one malloc per
 * chunk of them instead of one per entity). */
#define KEEL__ENTRY_CLASSES 8
#define KEEL__UUID_AHEAD 8 /* spawns between drawing a UUID and using it (its index slot prefetched) */

/* What only an unknown entry has (kept aside: most entries are loaded). */
typedef struct keel__unknown {
    char *key;
    keel_node *preserved;   /* its body as read */
} keel__unknown;

/* One membership entry: the component stack of an entity, in order. */
typedef struct keel__entry {
    keel_kind_id kind;      /* KEEL_NO_KIND when unknown */
    uint32_t slot;
    union {                 /* one or the other: 8 bytes less per entry (they are per component) */
        uint32_t row;       /* loaded: index in the kind's storage */
        int version;        /* unknown: the version its body was written in */
    };
    bool enabled, started, awoken, faulted;
    union {                 /* the same again */
        uint64_t born;      /* loaded: first frame it may run in */
        keel__unknown *unk; /* unknown: key (loaded ones read the registry) and body */
    };
    uint64_t serial;        /* per world, never reused (a rollback gives a removed entry its own back) */
} keel__entry;

/* An entry removed inside a hook transaction: if a rollback brings it back, it keeps its serial. */
typedef struct keel__tomb {
    uint32_t index, gen;
    keel_kind_id kind;
    uint32_t slot;
    uint64_t serial;
} keel__tomb;

/* Entity names are interned per world: entities that share a name share one string. */
typedef struct keel__name {
    char *s;                /* NULL: empty slot */
    uint32_t hash, refs;    /* refs 0: dead, purged at the next rebuild */
} keel__name;

typedef struct keel__ent {
    keel_uuid uuid;
    const char *name;       /* interned */
    uint32_t gen;
    /* one word for the flags and the membership counts (at most KEEL__MAX_COMPONENTS): 64 bytes an entity */
    unsigned alive : 1, enabled : 1;
    unsigned dying : 1;     /* its on_destroy hooks are running */
    unsigned member_count : 10, member_cap : 10;
    uint32_t parent, first_child, last_child, next, prev;
    uint32_t child_count;
    keel__entry *members;
} keel__ent;
_Static_assert(KEEL__MAX_COMPONENTS * 2 < 1024, "member_count and member_cap are 10-bit fields");

/* What a storage row knows besides its record. */
typedef struct keel__row {
    uint32_t owner;         /* entity index (rows belong to live entities); KEEL__NONE: freed at
                               the next phase boundary */
    uint32_t slot;
    uint64_t counter;       /* bumps on every write */
} keel__row;

/* Dense per-kind storage: records in pages, and a parallel array of row facts. */
typedef struct keel__store {
    size_t record_size;
    size_t count, cap;      /* cap = KEEL__PAGE * (2^npages - 1) */
    size_t npages;
    size_t acap;            /* capacity of rows */
    uint64_t changes;       /* bumps when rows come, go or move: queries over this kind rebuild */
    unsigned char **pages;
    keel__row *rows;
} keel__store;

typedef struct keel__run_item {
    uint32_t index, gen;
    keel_kind_id kind;
    uint32_t slot;
} keel__run_item;

typedef struct keel__run {
    keel__run_item *items;
    size_t count, cap;
} keel__run;

typedef struct keel__pending { keel_kind_id kind; uint32_t row; } keel__pending;

struct keel_world {
    keel_uuid uuid;
    char *name;
    keel_grid grid;
    uint64_t revision, epoch, frame;
    uint64_t structure;               /* bumps on every structural change */
    keel__ent *ents;
    uint32_t ent_count, ent_cap;      /* index 0 is the root */
    uint32_t *free_idx;
    size_t free_count, free_cap;
    uint32_t *held;                   /* indices freed inside a hook: reusable once it commits, */
    size_t held_count, held_cap;      /* so a rollback can give the entity back its handle */
    uint32_t reuse_index, reuse_gen;  /* set by a rollback's spawn: come back as this handle */
    size_t live;                      /* root excluded */
    uint64_t *hash;                   /* open addressing: hash << 32 | (index + 1), 0 empty */
    keel__name *names;
    size_t names_cap, names_used;     /* used counts dead slots too */
    size_t hash_cap, hash_used;
    /* keel_entity_child's last answer: walking on from it makes an index loop over children linear */
    uint32_t child_parent, child_at;
    size_t child_pos;
    uint64_t child_structure;         /* 0: none cached (structure starts at 0, any change bumps it) */
    keel__entry *entry_free[KEEL__ENTRY_CLASSES]; /* pooled membership arrays by capacity class */
    unsigned char *entry_tail[KEEL__ENTRY_CLASSES];     /* the newest chunk's blocks never handed out: */
    unsigned char *entry_tail_end[KEEL__ENTRY_CLASSES]; /* [tail, tail_end) of each class */
    void **entry_chunks;              /* what the pools carve from, freed with the world */
    size_t entry_chunk_count, entry_chunk_cap;
    keel__store *stores;              /* by kind id */
    size_t store_count;
    keel_uuid next_uuid[KEEL__UUID_AHEAD]; /* drawn ahead (see keel__new_uuid) */
    uint32_t next_pos;
    bool next_ready;
    /* lifecycle */
    bool in_step;
    double fixed_dt, acc;
    keel__run runs[KEEL_PHASE_COUNT_];
    uint64_t runs_structure;
    bool runs_valid;
    keel__pending *pending;
    size_t pending_count, pending_cap;
    /* transactions */
    keel_cmd *log;
    size_t log_count, log_cap;
    int txn_depth;
    int cmd_depth;                    /* only the outermost command logs its inverse */
    bool rolling_back;                /* no hooks, no logging */
    keel_comp hook_comp;              /* the component whose hook is running (readonly fields are its own) */
    keel_fault *faults;
    size_t fault_count, fault_cap;
    keel_world *next_world, *prev_world;
    /* membership serials */
    uint64_t last_serial;
    keel__tomb *tombs;                /* live while a hook transaction is open (freed by step.c) */
    size_t tomb_count, tomb_cap;
};

/* ---- world.c ---- */
keel__ent *keel__ent_get(const keel_world *w, keel_entity e); /* NULL when not alive */
static inline keel_entity keel__handle(const keel_world *w, uint32_t i)
{
    return ((keel_entity)w->ents[i].gen << 32) | i;
}
/* Whether entity i and all its ancestors are enabled (a disabled one parks its subtree). */
static inline bool keel__active(const keel_world *w, uint32_t i)
{
    for (; i != KEEL__NONE; i = w->ents[i].parent)
        if (!w->ents[i].enabled) return false;
    return true;
}
keel_status keel__spawn_at(keel_world *w, const char *name, uint32_t parent, size_t index,
                           const keel_uuid *uuid, keel_entity *out, keel_diags *d);
/* keel_reparent to sibling position `index` (SIZE_MAX: last). */
keel_status keel__reparent_at(keel_world *w, keel_entity e, keel_entity parent, size_t index,
                              keel_cmd *inverse, keel_diags *d);
/* Pre-order's next entity once i's whole subtree is done (KEEL_NO_ENTITY at the end). */
keel_entity keel__next_after_subtree(const keel_world *w, uint32_t i);
keel_node *keel__entity_tree(const keel_world *w, uint32_t i); /* entity document form */
void keel__held_release(keel_world *w); /* the outermost hook transaction ended */
keel_uuid keel__new_uuid(keel_world *w);
void keel__touch(keel_world *w); /* structural change */

/* ---- member.c ---- */
static inline void *keel__store_rec(const keel__store *s, size_t row)
{
    size_t q = (row >> KEEL__PAGE_SHIFT) + 1;
    unsigned k = 63u - (unsigned)__builtin_clzll((unsigned long long)q);
    size_t first = (((size_t)1 << k) - 1) << KEEL__PAGE_SHIFT;
    return s->pages[k] + (row - first) * s->record_size;
}
keel__entry *keel__entry_find(keel__ent *en, keel_kind_id k, uint32_t slot); /* loaded only */
const char *keel__entry_key(const keel__entry *m);
/* Frees every component of the entity (running on_destroy first unless `quiet`). */
void keel__members_drop(keel_world *w, uint32_t i, bool quiet);
void keel__flush_pending(keel_world *w);
void keel__stores_free(keel_world *w);
void keel__unknown_free(keel__unknown *u);
void keel__entries_release(keel_world *w, keel__ent *en); /* back to the pool (entries already emptied) */
void keel__entry_pools_free(keel_world *w);
keel_status keel__add_internal(keel_world *w, keel_entity e, keel_kind_id k, const keel_add_opts *o,
                               keel_comp *out, keel_diags *d);
void keel__world_relayout(keel_world *w, keel_kind_id k, const keel_kind_desc *old_desc, keel_diags *d);
/* Would declaring k anew as `nd` break a rule for a live component of w (multiplicity, max,
 * requires, rejects, root placement)? Each one an InvalidOperation in d; nothing changes. */
keel_status keel__world_check_kind(keel_world *w, keel_kind_id k, const keel_kind_desc *nd, keel_diags *d);
/* After a redeclaration: a carried-over value outside the new bounds takes the field's
 * default (a warning in d each), as a vanished enum choice does. */
void keel__world_refit(keel_world *w, keel_kind_id k, keel_diags *d);
void keel__world_adopt(keel_world *w, keel_kind_id k, keel_diags *d);
/* Copies entry `m` (of another entity) onto entity `dst` in the same slot. */
void keel__entry_clone(keel_world *w, uint32_t dst, const keel__entry *m);
/* keel_set with readonly allowed when `internal` (command replay, rollback). */
keel_status keel__set_cmd(keel_world *w, keel_comp c, int field, const keel_value *v, bool internal,
                          keel_cmd *inverse, keel_diags *d);
/* The outermost hook transaction ended: removed entries can no longer come back. */
void keel__tombs_clear(keel_world *w);
/* Stores values already passed keel_field_check into fields of `c`, with no journal entry:
 * only for a write that is the last act of an outermost hook transaction (txn_depth 1) that
 * commits right after, of a kind without validate (the Lua binding's copy-back of self). */
void keel__put_committed(keel_world *w, keel_comp c, size_t n, const int *fields, const keel_value *vals);
/* Counts n such writes that the caller stored into the record itself (plain floats, which need no
 * conversion, into the record at `row` of kind k): the bumps n keel_set calls would make. */
static inline void keel__committed_count(keel_world *w, keel_kind_id k, uint32_t row, size_t n)
{
    w->stores[k].rows[row].counter += n;
    w->revision += n;
}

/* ---- command.c ---- */
/* A field write journaled inside a hook: entity UUID, kind id in `version`, field index
 * in `index`, slot, old value. Lives only in the transaction log (no strings to copy). */
#define KEEL__CMD_SET_FAST ((keel_cmd_type)100)
/* Every public command brackets its work with these: begin returns where to build the
 * inverse (the caller's, `tmp` when a hook transaction needs it, or NULL); end logs it
 * into the open transaction when this is the outermost command, frees `tmp`, returns st. */
keel_cmd *keel__cmd_begin(keel_world *w, keel_cmd *inverse, keel_cmd *tmp);
keel_status keel__cmd_end(keel_world *w, keel_status st, keel_cmd *inv, keel_cmd *tmp);
keel_status keel__cmd_apply(keel_world *w, const keel_cmd *cmd, keel_cmd *inverse, bool internal,
                            keel_diags *d);

/* ---- step.c ---- */
/* An open hook transaction (between its begin and end). */
typedef struct keel__hook_txn {
    keel_call call;          /* call.diags points at diags */
    keel_diags diags;
    keel_uuid uuid;
    uint32_t index;
    uint32_t row;            /* the component's storage row when the hook began */
    size_t mark;
    int cmd_depth;
    keel_comp outer;
    const keel_kind_desc *kd;
} keel__hook_txn;

/* A stretch [next, end) of one kind's items in a phase's run list, run by a binding in one go
 * (the Lua binding: one protected Lua call for many hooks). Every item is still its own
 * transaction: keel__batch_next skips items not due and opens the next one's (false at the
 * end, or when the kind was redeclared: run_phase takes over from `next`); keel__batch_done
 * commits it, or rolls it back and faults it, exactly as a single hook call. */
typedef struct keel__batch {
    keel_world *w;
    keel_phase phase;
    double dt;
    void *user;              /* the kind's desc.user when the batch began */
    size_t next, end;
    keel__hook_txn txn;      /* the open item: txn.call is what the hook gets */
} keel__batch;
#define KEEL__BATCH_MIN 4    /* shorter stretches go one call at a time */
/* Set by a binding: kinds whose hook for a phase is keel__batch_hook run their stretches of
 * at least KEEL__BATCH_MIN items through keel__batch_run. */
extern keel_hook_fn keel__batch_hook;
extern void (*keel__batch_run)(keel__batch *b);
bool keel__batch_next(keel__batch *b);
void keel__batch_done(keel__batch *b, keel_status st);
/* Runs one hook as a transaction; a failure rolls back, faults and records. */
void keel__call_hook(keel_world *w, uint32_t i, keel_kind_id k, uint32_t slot, keel_phase phase, double dt);
void keel__runs_free(keel_world *w);
void keel__faults_free(keel_world *w);

#endif
