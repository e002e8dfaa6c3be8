/* hierarchy.h — parent/child links and sibling order. */
#ifndef KEEL_HIERARCHY_H
#define KEEL_HIERARCHY_H

#include "keel.h"

#define KEEL__MAX_DEPTH 256

/* Links entity c under p at sibling position `index` (SIZE_MAX: last) / takes it out. */
void keel__link_child(keel_world *w, uint32_t p, uint32_t c, size_t index);
void keel__unlink_child(keel_world *w, uint32_t c);
/* Depth of entity i (root 0, top level 1) and height of its subtree (1 for a leaf). */
size_t keel__depth_of(const keel_world *w, uint32_t i);
size_t keel__height_of(const keel_world *w, uint32_t i);
/* keel_reparent to sibling position `index` (SIZE_MAX: last). */
keel_status keel__reparent_at(keel_world *w, keel_entity e, keel_entity parent, size_t index,
                              keel_cmd *inverse, keel_diags *d);
/* Pre-order's next entity once i's whole subtree is done (KEEL_NO_ENTITY at the end). */
keel_entity keel__next_after_subtree(const keel_world *w, uint32_t i);
/* Position of entity i among its siblings. */
size_t keel__sibling_index(const keel_world *w, uint32_t i);
/* The index of `parent` (KEEL_NO_ENTITY: the root); NotFound when it is not alive. */
keel_status keel__parent_index(const keel_world *w, keel_entity parent, uint32_t *out, keel_diags *d);
/* Appends entity i and its whole subtree, in pre-order, to *list (grown as needed). */
void keel__subtree_collect(const keel_world *w, uint32_t i, uint32_t **list, size_t *n, size_t *cap);

#endif
