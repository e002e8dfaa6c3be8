/* slotmap.h — the non-zero slots of a world's loaded components, by serial (membership entries
 * hold only a bit "slot is not 0": nearly every component is in slot 0). */
#ifndef KEEL_SLOTMAP_H
#define KEEL_SLOTMAP_H

#include "keel.h"
#include "base/map.h"

/* serial -> slot in the one hash map (base/map.h): keel__map_put, keel__map_remove, keel__map_copy
 * and keel__map_free write it. Serials start at 1, slot 0 is never held. */
typedef keel__map keel__slotmap;

/* The slot held for serial; 0 when none is. */
static inline uint32_t keel__slotmap_get(const keel__slotmap *s, uint64_t serial)
{
    return keel__map_get_or(s, serial, 0);
}

#endif
