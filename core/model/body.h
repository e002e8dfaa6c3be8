/* body.h — component bodies (keel_node MAP) to records and back. */
#ifndef KEEL_BODY_H
#define KEEL_BODY_H

#include "keel.h"

/* Runs the kind's migrations on a copy of `body` from `version` up to the kind's
 * version, then decodes into `record` (already holding defaults). Missing fields
 * keep defaults; unknown fields are warnings; a bad enum choice is a warning
 * keeping the default unless `strict`. `entity`/`asset` fields read UUID text.
 * Diagnostics carry `path` (+ ".field") and the node's file:line:col. */
keel_status keel__body_decode(keel_kind_id k, const keel_node *body, int version, bool strict,
                              void *record, const char *path, const char *file, keel_diags *d);
/* A body's size as the scene reader holds it to limits.body_size ("64 KiB encoded"): each
 * scalar's text + 1, each collection 2 plus its items. Saves and sets are held to it too. */
size_t keel__body_size(const keel_node *n);
/* LimitExceeded when the body a save would write for this record is larger than the scene
 * reader's body size limit. O(1) for kinds without strings that cannot reach it. */
keel_status keel__record_body_check(keel_kind_id k, const void *record, keel_diags *d);
/* No record of kind k can fail keel__record_body_check (no strings, few fields). */
bool keel__record_body_bounded(keel_kind_id k);
/* LimitExceeded when an unknown component's body breaks a limit the scene reader applies
 * (body size, string and collection length, nesting below a component). */
keel_status keel__unknown_body_check(const keel_node *body, keel_diags *d);
/* The same as a reason ("a string is longer than the limit"), NULL when within them. */
const char *keel__body_over_limits(const keel_node *body);
/* Record -> MAP node in declared field order, leaving out fields with a flag in `skip`: 0 for every
 * field (undo trees), KEEL_FIELD_TRANSIENT for a save game's bodies, KEEL__BODY_SCENE for a scene's. */
#define KEEL__BODY_SCENE (KEEL_FIELD_TRANSIENT | KEEL_FIELD_RUNTIME)
keel_node *keel__body_encode(keel_kind_id k, const void *record, unsigned skip);

#endif
