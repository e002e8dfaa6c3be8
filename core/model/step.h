/* step.h — lifecycle phases: run lists, hook transactions, batches, faults. */
#ifndef KEEL_STEP_H
#define KEEL_STEP_H

#include "bind.h"

#define KEEL__MAX_FIXED_STEPS 8

typedef struct keel__run_item {
    uint32_t index, gen;
    keel_kind_id kind;
    uint32_t slot;
} keel__run_item;

typedef struct keel__run {
    keel__run_item *items;
    size_t count, cap;
} keel__run;

/* Runs one hook as a transaction; a failure rolls back, faults and records. */
void keel__call_hook(keel_world *w, uint32_t i, keel_kind_id k, uint32_t slot, keel_phase phase, double dt);
/* The on_destroy of component (k, slot), in row `row`, of entity i, about to be destroyed: now
 * outside any callback transaction; inside one, journaled to run at the outermost commit (the
 * caller takes the component away at once; its row stays readable until then). */
void keel__call_on_destroy(keel_world *w, uint32_t i, keel_kind_id k, uint32_t slot, uint32_t row);
/* The same, with call.from set (on_transfer: the world the component came from). */
void keel__call_hook_from(keel_world *w, uint32_t i, keel_kind_id k, uint32_t slot, keel_phase phase, double dt,
                          keel_world *from);
/* A callback transaction of no component (a timer's), opened and closed as a hook's: on a
 * failure closing rolls back, but faults nothing and records nothing (keel__fault_timer). */
void keel__callback_open(keel_world *w, keel__hook_txn *t);
void keel__callback_close(keel_world *w, keel__hook_txn *t, keel_status st);
/* Records the failure of timer `id` (entity: its owner's UUID, or the root's) reported in d. */
void keel__fault_timer(keel_world *w, keel_uuid entity, keel_timer_id id, const keel_diags *d);
/* Records the failure of system `system` (keel_system_add) reported in d. */
void keel__fault_system_diags(keel_world *w, const char *system, keel_phase phase, const keel_diags *d);
/* Delivers message m to component c's on_message hook as a transaction, unless c is gone,
 * disabled, inactive or faulted (message.c). */
void keel__deliver_message(keel_world *w, keel_comp c, const keel_message *m);
void keel__runs_free(keel_world *w);
void keel__faults_free(keel_world *w);

#endif
