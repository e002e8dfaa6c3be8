/* reload.h — a kind redeclared under live worlds: what the registry asks of every world. */
#ifndef KEEL_RELOAD_H
#define KEEL_RELOAD_H

#include "keel.h"

/* Called by keel_kind_declare after a kind's layout changed: every world
 * converts its records (carry over by field name and type; the rest default).
 * `old_desc` is the previous description, freed by the caller afterwards. */
void keel__worlds_relayout(keel_kind_id k, const keel_kind_desc *old_desc, keel_diags *d); /* warnings: a vanished choice */
/* Called after declaring a key: every world adopts unknown entries held
 * under it (decode, migrate, make live in the same slot, awake). An entry the
 * entity's stack would refuse under the kind's rules stays unknown (a warning in d). */
void keel__worlds_adopt(keel_kind_id k, keel_diags *d);
/* Before replacing kind k's description with `nd`: InvalidOperation (listed in d) when a live
 * component in some world would break nd's rules; the old declaration then stays. */
keel_status keel__worlds_check_kind(keel_kind_id k, const keel_kind_desc *nd, keel_diags *d);
/* After replacing it: values outside the new bounds go back to their defaults (warnings). */
void keel__worlds_refit(keel_kind_id k, keel_diags *d);
/* After redeclaring kind k: its faulted components run again (hot reload clears faults). */
void keel__worlds_unfault(keel_kind_id k);

#endif
