/* ext.h — what attaches to a world: one per-world list of extensions the step calls.
 *
 * The model knows no gameplay, wire or language binding, yet its step must run systems, fire
 * timers, deliver messages, tick a replication host and let a binding run its own systems.
 * Each of those layers registers an extension on the world it serves (as flecs's
 * ecs_atfini/ecs_run_post_frame, or libuv's handles on a loop): a static type naming the
 * points it wants called, and a state pointer of its own. The list is kept sorted by the
 * type's `order`, so the points run in a fixed order whatever the registration order
 * (C systems, then a binding's systems, then message delivery at a phase's end). One
 * extension per type per world: keel__ext_get finds a layer's state again from the world. */
#ifndef KEEL_EXT_H
#define KEEL_EXT_H

#include "keel.h"

typedef struct keel__ext_type {
    const char *name;
    int order; /* lower runs first at every point */
    /* keel_step's start, before the start phase */
    void (*step_begin)(keel_world *w, void *state, double dt);
    /* before a phase's hooks, in a mirror world too (update's: after the fixed updates, the world
     * time moved) */
    void (*phase_begin)(keel_world *w, void *state, keel_phase phase, double dt);
    /* after a phase's hooks, outside any transaction (not for the phases a mirror world skips) */
    void (*phase_end)(keel_world *w, void *state, keel_phase phase, double dt);
    /* keel_step's end, the frame counted */
    void (*step_end)(keel_world *w, void *state, double dt);
    /* play mode's stop put the world back: what was made while playing ends */
    void (*stop)(keel_world *w, void *state);
    /* the world is freed: the extension lets go of its state */
    void (*free)(keel_world *w, void *state);
} keel__ext_type;

typedef struct keel__ext {
    const keel__ext_type *type;
    void *state;
} keel__ext;

/* The state w's extension of type t registered, or NULL. */
void *keel__ext_get(const keel_world *w, const keel__ext_type *t);
/* Registers (or re-points) w's extension of type t. Safe while the world's extensions run. */
void keel__ext_add(keel_world *w, const keel__ext_type *t, void *state);
/* Takes w's extension of type t off the world without calling its free; its state, or NULL. */
void *keel__ext_remove(keel_world *w, const keel__ext_type *t);

/* ---- the step's side (step.c, world.c) ---- */
enum keel__ext_point { KEEL__EXT_STEP_BEGIN, KEEL__EXT_PHASE_BEGIN, KEEL__EXT_PHASE_END, KEEL__EXT_STEP_END };
void keel__ext_run(keel_world *w, enum keel__ext_point point, keel_phase phase, double dt);
/* Play mode's stop: every extension's stop. */
void keel__ext_stop(keel_world *w);
/* The world goes: every extension's free, then the list. */
void keel__ext_free_all(keel_world *w);

#endif
