/* txn.h — the transaction journal of callbacks: what commands and field writes log, and the rollback. */
#ifndef KEEL_TXN_H
#define KEEL_TXN_H

#include "keel.h"

/* One journal entry: how to undo one change made inside an open callback transaction. */
typedef struct keel__jentry {
    bool is_field;
    union {
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
keel_cmd *keel__cmd_begin(keel_world *w, keel_cmd *inverse, keel_cmd *tmp);
keel_status keel__cmd_end(keel_world *w, keel_status st, keel_cmd *inv, keel_cmd *tmp);
/* Journals a field write (takes `old`, a string in it included). */
void keel__txn_log_field(keel_world *w, keel_uuid entity, keel_kind_id k, uint32_t slot, int field,
                         const keel_value *old);
/* Undoes the journal backwards down to `mark`: field writes come back, structural changes
 * are undone; no hook runs meanwhile. */
void keel__txn_rollback(keel_world *w, size_t mark);
/* The outermost transaction committed: its entries above `mark` are dropped. */
void keel__txn_commit(keel_world *w, size_t mark);
/* Frees the whole journal (the world is going away). */
void keel__txn_free(keel_world *w);

#endif
