/* system.h — C systems: the per-world list in run order, run at each phase's end. */
#ifndef KEEL_SYSTEM_H
#define KEEL_SYSTEM_H

#include "keel.h"

/* Runs w's systems of `phase` (keel_step, after the phase's hooks). */
void keel__systems_run(keel_world *w, keel_phase phase, double dt);
/* Frees w's systems (the world is freed). */
void keel__systems_free(keel_world *w);

#endif
