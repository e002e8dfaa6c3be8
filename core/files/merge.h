/* merge.h — the scene reader's part of merging: a document's conflicts list as diagnostics
 * (the merge itself is keel.h's keel_merge_*). */
#ifndef KEEL_MERGE_H
#define KEEL_MERGE_H

#include "keel.h"

/* The scene reader's part: one Conflict error per entry of a document's `conflicts:` list
 * (ParseError when it is not a list of maps with a path). */
void keel__merge_conflict_diags(const keel_node *list, const char *file, keel_diags *d);

#endif
