/* save_text.h — a save game's text form (save_text.c). */
#ifndef KEEL_SAVE_TEXT_H
#define KEEL_SAVE_TEXT_H

#include "keel.h"
#include "files/save.h"

/* The text of a slot's details and state (Unsupported when its records are not in the slot
 * writer's order: root, spawned, changed). */
keel_status keel__save_text_write(const keel_slot_info *info, const keel__save_state *st, char **out, size_t *len,
                                  keel_diags *d);
/* Text back to details and state; ParseError at file:line:col for anything malformed, nothing
 * returned then. */
keel_status keel__save_text_read(const char *text, size_t len, const char *file, keel_slot_info *info,
                                 keel__save_state *st, keel_diags *d);

#endif
