/* command.h — inverse commands: the entity document, applying a command. */
#ifndef KEEL_COMMAND_H
#define KEEL_COMMAND_H

#include "keel.h"

/* Applies cmd (the public keel_cmd_apply, with readonly fields writable when `internal`). */
keel_status keel__cmd_apply(keel_world *w, const keel_cmd *cmd, keel_cmd *inverse, bool internal,
                            keel_diags *d);
/* Deep copy of a command (strings, trees and batch items duplicated). */
void keel__cmd_copy(keel_cmd *dst, const keel_cmd *src);
keel_node *keel__entity_tree(const keel_world *w, uint32_t i); /* entity document form */

#endif
