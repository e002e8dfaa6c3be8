/* save.h — what save jobs (save_async.c) and the text form (save_text.c) use of save.c. */
#ifndef KEEL_SAVE_H
#define KEEL_SAVE_H

#include "keel.h"
#include "base/bytes.h"

/* The uncompressed state a slot file holds for w against base (the baseline's scene must be w's). */
void keel__persist_encode(const keel_world *w, const keel_baseline *base, keel__buf *out);
/* One more owner of b (thread-safe count); keel_baseline_free drops one and frees at the last. */
keel_baseline *keel__baseline_retain(const keel_baseline *b);
keel_uuid keel__baseline_scene(const keel_baseline *b);

/* ---- a slot's state, decoded (COOKED.md has the bytes) ---- */

enum { REC_SPAWNED = 1, REC_NAME = 2, REC_ENABLED = 4, REC_PARENT = 8 };
enum { OP_ADD = 1, OP_CHANGE = 2 };

typedef struct keel__save_comp {
    uint8_t op;
    char *key;
    uint32_t slot;
    int version;
    bool loaded, enabled;
    keel_node *body; /* OP_ADD: whole body; OP_CHANGE: the fields that differ */
} keel__save_comp;

typedef struct keel__save_rem {
    char *key;
    uint32_t slot;
} keel__save_rem;

typedef struct keel__save_ent {
    keel_uuid uuid; /* nil: the scene root */
    uint8_t flags;
    char *name;
    bool enabled;
    keel_uuid parent;
    keel__save_rem *rem;
    uint32_t nrem;
    keel__save_comp *comps;
    uint32_t ncomps;
    keel_entity h; /* resolved while applying */
} keel__save_ent;

typedef struct keel__save_order {
    keel_uuid parent;
    keel_uuid *kids;
    uint32_t n;
} keel__save_order;

typedef struct keel__save_state {
    keel_uuid scene;
    keel__save_ent *ents;
    uint32_t nents;
    keel_uuid *dead;
    uint32_t ndead;
    keel__save_order *orders;
    uint32_t norders;
    bool has_random; /* the world's random generator, after the lists (design/replay.md) */
    int64_t seed;
    uint64_t rs[4];
} keel__save_state;

/* Decodes state bytes, every count bounded; the first problem is left in r->err. */
void keel__save_state_decode(keel__rd *r, keel__save_state *st);
/* The bytes keel__save_state_decode read (the same bytes back). */
void keel__save_state_encode(const keel__save_state *st, keel__buf *b);
void keel__save_state_free(keel__save_state *st);
/* Checks that the state fits w, then applies it all or nothing (keel_persist_load's second half). */
keel_status keel__save_state_apply(keel_world *w, keel__save_state *st, keel_diags *d);
/* The styles a body keeps through the text form and back (save.c writes bodies in them). */
void keel__save_canon(keel_node *n);

#endif
