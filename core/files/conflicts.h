/* conflicts.h — a merge's conflicts list: kept while merging (merge.c), written after the
 * merged scene and resolved by keel_merge_take (conflicts.c). */
#ifndef KEEL_CONFLICTS_H
#define KEEL_CONFLICTS_H

#include "keel_merge.h"

/* A scene document's nodes read leniently, as the merge files do (absent or mistyped: NULL). */
static inline bool keel__doc_null(const keel_node *n)
{
    return !n || (n->kind == KEEL_NODE_SCALAR && keel_node_is_null(n));
}
static inline const keel_node *keel__doc_get(const keel_node *map, const char *key)
{
    return map && map->kind == KEEL_NODE_MAP ? keel_node_get(map, key) : NULL;
}
static inline const char *keel__doc_text(const keel_node *n)
{
    return n && n->kind == KEEL_NODE_SCALAR && n->text ? n->text : NULL;
}

/* One place the merge could not decide: ours' value stands in the merged scene until taken. */
typedef struct keel__conflict {
    char *path;      /* "UUID/KIND[SLOT]/FIELD" and its sisters (conflicts.c says which) */
    keel_node *v[3]; /* base, ours, theirs: owned copies; NULL when absent */
} keel__conflict;

typedef struct keel__conflicts {
    keel__conflict *items;
    size_t n, cap;
} keel__conflicts;

/* Takes `path` (malloc'd); copies the three values (any may be NULL). */
void keel__conflicts_add(keel__conflicts *c, char *path, const keel_node *base, const keel_node *ours,
                         const keel_node *theirs);
/* Drops the entries from index `n` on: a merge step that undoes its own conflicts. */
void keel__conflicts_truncate(keel__conflicts *c, size_t n);
void keel__conflicts_free(keel__conflicts *c);

/* A component's identity in a scene document, as conflict paths name it: its kind (false when
 * it has none) and slot (0 when not given, -1 when not an integer). */
bool keel__conflicts_comp_key(const keel_node *c, const char **kind, int64_t *slot);

/* A merged file's text (malloc'd): `doc` made canonical by the scene reader and writer, with
 * `c`'s entries appended as a `conflicts:` list. `lim` NULL: the defaults. NULL, after the
 * load's errors in `d`, when the scene does not load. */
char *keel__conflicts_finish(const keel_node *doc, const keel_limits *lim, const keel__conflicts *c,
                             size_t *outlen, keel_diags *d);
/* The same in two steps, so that the tree can be freed before the text is made: `doc` loaded
 * (NULL, after its errors in `d`, when it does not load; the tree is not kept), then that world
 * written (and freed) with `c`'s entries after. */
keel_world *keel__conflicts_load(const keel_node *doc, const keel_limits *lim, keel_diags *d);
char *keel__conflicts_write(keel_world *w, const keel__conflicts *c, size_t *outlen, keel_diags *d);

#endif
