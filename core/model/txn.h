/* txn.h — the transaction journal of callbacks: what commands and field writes log, and the rollback. */
#ifndef KEEL_TXN_H
#define KEEL_TXN_H

#include "keel.h"

/* A destroy (of a component, or of each component of an entity) made inside a callback
 * transaction whose on_destroy waits for the outermost commit. The component is gone from its
 * entity at once; its record stays readable in its row, which is freed only once no callback
 * transaction is open and no on_destroy waits (store.c keeps rows pending meanwhile). */
typedef struct keel__doomed {
    keel_comp comp;          /* comp.entity: its handle when destroyed (dead if the entity went) */
    uint32_t row;
    keel_uuid uuid;          /* the entity's */
} keel__doomed;

enum { KEEL__J_CMD, KEEL__J_FIELD, KEEL__J_DOOMED };

/* One journal entry: how to undo one change made inside an open callback transaction, or an
 * on_destroy that runs only if it commits. */
typedef struct keel__jentry {
    int type;                /* KEEL__J_* */
    union {
        keel__doomed doomed; /* nothing to undo: a rollback drops it */
        keel_cmd cmd;        /* a structural change: its inverse command */
        struct {             /* a field write: where, and the old value (a string owned here) */
            keel_uuid entity;
            keel_kind_id kind;
            uint32_t slot;
            int field;
            keel_value old;
        } set;
    };
} keel__jentry;

/* Whether a change made now must be journaled: a transaction is open, this is its outermost
 * command, and no rollback is running. */
bool keel__txn_wants(const keel_world *w);
/* Every public command brackets its work with these: begin returns where to build the
 * inverse (the caller's, `tmp` when a hook transaction needs it, or NULL); end logs it
 * into the open transaction when this is the outermost command, frees `tmp`, returns st. */
keel_cmd *keel__cmd_begin_slow(keel_world *w, keel_cmd *inverse, keel_cmd *tmp);
keel_status keel__cmd_end_slow(keel_world *w, keel_status st, keel_cmd *inv, keel_cmd *tmp);
/* keel__cmd_begin / keel__cmd_end themselves are inline in world.h (they read the world). */
/* Journals a field write (takes `old`, a string in it included). */
void keel__txn_log_field(keel_world *w, keel_uuid entity, keel_kind_id k, uint32_t slot, int field,
                         const keel_value *old);
/* Journals the on_destroy of a component destroyed now, to run at the outermost commit. */
void keel__txn_log_doomed(keel_world *w, keel_comp c, uint32_t row, keel_uuid entity);
/* Undoes the journal backwards down to `mark`: field writes come back, structural changes
 * are undone, deferred on_destroys are dropped; no hook runs meanwhile. */
void keel__txn_rollback(keel_world *w, size_t mark);
/* The outermost transaction committed: its entries above `mark` are dropped, its deferred
 * on_destroys queued in w->doomed in the order they were made (step.c runs them). */
void keel__txn_commit(keel_world *w, size_t mark);
/* Frees the whole journal (the world is going away). */
void keel__txn_free(keel_world *w);

#endif
