/* capture.h — a save job's capture: the committed world copied into memory that the world keeps
 * between saves (capture.c). */
#ifndef KEEL_CAPTURE_H
#define KEEL_CAPTURE_H

#include "keel.h"

typedef struct keel__capture keel__capture;

/* Copies w's committed state (as keel__world_copy: entities, membership, records, settings,
 * counters) into w's spare capture when it has one, else into a new one. Caller's thread; the
 * kinds pinned (kinds_pin.h). The copy shares nothing with w. */
keel__capture *keel__capture_take(const keel_world *w);
/* The copied world: read-only (no spawn, add or write ever runs in it). */
const keel_world *keel__capture_world(const keel__capture *c);
/* The job is done with c (any thread, kinds still pinned): what the copy owns is freed and its
 * memory becomes its world's spare again (the bigger of two kept), or is freed when the world is
 * gone. */
void keel__capture_done(keel__capture *c);
/* w is going away (world.c): its spare capture is freed; a capture still in a job is freed by
 * keel__capture_done. */
void keel__capture_home_drop(keel_world *w);
/* Bytes of capture memory w keeps between saves (0: none yet); for tests. */
size_t keel__capture_spare_bytes(const keel_world *w);

#endif
