/* stats.h — frame statistics (keel_stats.h): the state behind w->prof. */
#ifndef KEEL_GAME_STATS_H
#define KEEL_GAME_STATS_H

#include "keel_stats.h"

/* One run of system `name` (C or a binding's): its time in nanoseconds and the entities it visited. */
void keel__stats_system(keel_world *w, const char *name, double ns, uint64_t entities);

#endif
