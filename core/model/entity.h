/* entity.h — the entity table: generations, the UUID index, interned names, spawn and destroy. */
#ifndef KEEL_ENTITY_H
#define KEEL_ENTITY_H

#include "keel.h"

#define KEEL__NONE UINT32_MAX        /* no entity index */
/* UUIDs are drawn in halves of KEEL__UUID_AHEAD, each used 8 to 15 spawns after its index slot
 * was prefetched (keel__new_uuid). */
#define KEEL__UUID_AHEAD 8
#define KEEL__UUID_RING (2 * KEEL__UUID_AHEAD)

/* Entity names are interned per world: entities that share a name share one string, and an
 * entity holds its id (w->names[id], keel__ent_name). */
typedef struct keel__name {
    char *s;                /* NULL: a free id (refs then holds the next free id + 1, 0 none) */
    uint32_t hash, refs;    /* refs 0: dead, its id freed at the next rebuild */
} keel__name;

struct keel__entry;
/* A generation word: the world's tag (1 to 4095, unique among up to 4,095 live worlds, new at
 * every stop of play mode) in the high 12 bits, a count of the index's uses in the low 20 (an
 * index used 1,048,575 times is retired). A handle is gen << 32 | index, so one of another world
 * or of an earlier epoch never matches. Every entity of a world carries the world's tag, so a
 * record holds only the count (world.h keel__ent_gen). */
#define KEEL__TAG_MAX 0xFFFu
#define KEEL__GEN(tag, count) ((uint32_t)(tag) << 20 | (uint32_t)(count))
#define KEEL__GEN_COUNT 0xFFFFFu

/* An entity's membership block (member.c; world.h keel__members): its capacity class in the top
 * 3 bits (capacity 2 << class), the id of the pool chunk holding it in the next 8, its offset in
 * that chunk (in entries) in the low 21; KEEL__NO_BLOCK none (no block is at that offset). */
#define KEEL__BLOCK_CLASS_SHIFT 29
#define KEEL__BLOCK_CHUNK_SHIFT 21
#define KEEL__BLOCK_CHUNKS 256
#define KEEL__NO_BLOCK UINT32_MAX

/* 40 bytes an entity: the name is an id, what only parents need is kept aside (keel__kids), and
 * so are the rare states (lifted: lift.c's lists; dying: w->dying). */
typedef struct keel__ent {
    keel_uuid uuid;
    /* one word: the generation count (the world's tag completes it), the flags, the number of
     * membership entries (at most KEEL__MAX_COMPONENTS) */
    uint32_t gen_count : 20;
    uint32_t alive : 1, enabled : 1;
    uint32_t has_kids : 1;  /* it has children: their record is in w->kids (world.h keel__kids_get) */
    uint32_t member_count : 9;
    uint32_t name;          /* interned: its id (world.h keel__ent_name); meaningless once dead */
    uint32_t parent, next, prev;
    uint32_t block;         /* its membership entries (KEEL__NO_BLOCK: none yet) */
} keel__ent;
_Static_assert(sizeof(keel__ent) == 40, "an entity record stays 40 bytes");

/* An entity's children: the ends of their sibling list, their count and their parent. Most
 * entities are leaves: only parents have one, found by the parent's index (hierarchy.c). */
typedef struct keel__kids {
    uint32_t first, last, count; /* first: the next free record while free */
    uint32_t owner;              /* the parent's index; KEEL__NONE while free */
} keel__kids;

keel__ent *keel__ent_get(const keel_world *w, keel_entity e); /* NULL when not alive */
/* A fresh entity index (generation kept from its last use; 1 for a new one). */
uint32_t keel__ent_alloc(keel_world *w);
/* The id of name s in w, its count of users raised (s valid: see keel__name_check). */
uint32_t keel__name_intern(keel_world *w, const char *s);
/* A world or entity name: not NULL, valid UTF-8 (InvalidArgument naming `what`). */
keel_status keel__name_check(const char *name, const char *what, keel_diags *d);
void keel__names_free(keel_world *w);
/* A command's entity: live and not the root (ProtectedEntity: "the scene root cannot be <what>"). */
keel_status keel__ent_target(const keel_world *w, keel_entity e, const char *what, uint32_t *out, keel_diags *d);
keel_status keel__spawn_at(keel_world *w, const char *name, uint32_t parent, size_t index,
                           const keel_uuid *uuid, keel_entity *out, keel_diags *d);
/* Takes entity i out of w as a destroy would, but runs no hook (its components moved elsewhere,
 * or are going away with no one to tell); its children go to the top level. */
void keel__entity_forget(keel_world *w, uint32_t i);
/* Copies src's entity table into dst (empty): generations, UUIDs, names, hierarchy, flags and
 * the UUID index; membership arrays are left to keel__members_copy. */
void keel__entities_copy(keel_world *dst, const keel_world *src);
/* Gives every entity of w the generation tag `tag` (its count kept): handles carrying another
 * tag, those of an earlier epoch of w, are stale from now on. */
void keel__entities_retag(keel_world *w, uint16_t tag);
/* Takes live entity i out of the UUID index and the live count / puts it back (lift.c). */
void keel__entity_unindex(keel_world *w, uint32_t i);
void keel__entity_reindex(keel_world *w, uint32_t i);
/* A new entity with these facts, already checked by the caller (a valid name, a UUID not alive
 * in w, the depth limit): keel_transfer's entities arrive this way. Returns its index. */
uint32_t keel__entity_place(keel_world *w, const char *name, uint32_t parent, keel_uuid uuid);
/* Starts fetching u's slot of the UUID index: a loop over many UUIDs asks a few ahead. */
void keel__uuid_prefetch(const keel_world *w, keel_uuid u);
void keel__held_release(keel_world *w); /* the outermost hook transaction ended */
keel_uuid keel__new_uuid(keel_world *w);
/* random.c: the next UUID (version 4 bits set) of generator s, which moves on */
keel_uuid keel__random_uuid(uint64_t s[4]);
/* random.c: xoshiro256** state seeded from `seed` by splitmix64 (never all zero) */
void keel__random_seed_state(uint64_t s[4], uint64_t seed);
/* "entity 'Name' (uuid)" or "the scene root" (entity index i of w), malloc'd: for messages. */
char *keel__entity_label(const keel_world *w, uint32_t i);

#endif
