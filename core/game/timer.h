/* timer.h — timers on world time: the due list, firing at the start of update, cancelling. */
#ifndef KEEL_TIMER_H
#define KEEL_TIMER_H

#include "keel.h"

typedef struct keel__timer {
    double due, period; /* period 0: once */
    keel_timer_id id;   /* ids only grow (process-wide): also the creation order */
    keel_entity owner;
    keel_timer_fn fn; /* NULL: ended, its slot waits for compaction */
    void (*release)(void *user);
    void *user;
    bool firing, cancelled; /* its callback runs; cancelled meanwhile (released after it) */
    bool failed;            /* its last call failed: it ends */
} keel__timer;

/* Advances world time by dt and fires the timers due (keel_step, before the update phase). */
void keel__timers_fire(keel_world *w, double dt);
/* Ends every timer (releasing each): the world is freed, or play mode stopped. */
void keel__timers_free(keel_world *w);

#endif
