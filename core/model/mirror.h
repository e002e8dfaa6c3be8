/* mirror.h — what a replication client sets on the world it mirrors (core/net/client.c), so
 * that it needs none of the world's internals.
 *
 * A mirror world's authority is another world: fixed_update and update never run in it (nor
 * their extension points), and synced fields refuse every write but the authority's, made
 * between keel__world_mirror_apply(w, true) and (w, false) (model/field.c). */
#ifndef KEEL_MIRROR_H
#define KEEL_MIRROR_H

#include "model/world.h"

static inline void keel__world_set_mirror(keel_world *w, bool on) { w->mirror = on; }
static inline void keel__world_mirror_apply(keel_world *w, bool on) { w->mirror_applying = on; }

#endif
