/* yaml_read.h — YAML text to a keel_node tree, limits enforced while reading. */
#ifndef KEEL_YAML_READ_H
#define KEEL_YAML_READ_H

#include "keel.h"

/* Refuses anchors, aliases, non-core tags, several documents and duplicate
 * keys (ParseError); document size, nesting depth, collection length and
 * string length (LimitExceeded). An empty document gives a null scalar. */
keel_status keel__yaml_parse(const char *text, size_t len, const keel_limits *lim,
                             const char *file, keel_node **out, keel_diags *d);
/* The same, with every node part taken from `arena` (NULL: malloc): the tree
 * is then freed only by keel__arena_free, never by keel_node_free. */
typedef struct keel__arena keel__arena;
keel__arena *keel__arena_new(void);
void keel__arena_free(keel__arena *a);
keel_status keel__yaml_parse_arena(const char *text, size_t len, const keel_limits *lim, const char *file,
                                   keel__arena *arena, keel_node **out, keel_diags *d);

#endif
