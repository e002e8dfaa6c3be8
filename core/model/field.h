/* field.h — the one write path of a component's fields: check, put, validate, count, journal.
 * Nothing else writes a live component's field, bumps its change counter or journals a write. */
#ifndef KEEL_FIELD_H
#define KEEL_FIELD_H

#include "bind.h"

/* keel__field_set, keel__field_set_many and keel__field_store are declared in bind.h: the
 * bindings call them too. */

#endif
