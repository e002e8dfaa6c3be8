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
/* `n` bytes (16-aligned) that live as long as `a`: for nodes added to an arena's tree. */
void *keel__arena_alloc(keel__arena *a, size_t n);
/* Everything taken from `a` given back at once; `a` stays usable (one chunk kept). */
void keel__arena_reset(keel__arena *a);
keel_status keel__yaml_parse_arena(const char *text, size_t len, const keel_limits *lim, const char *file,
                                   keel__arena *arena, keel_node **out, keel_diags *d);

/* The items of the top-level `entities` list, handed over one at a time as each is read,
 * so a document is never held whole. `begin` sees the list's node (position only) and the
 * top-level pairs read before it (2 * pairs nodes, key then value); if it answers true, each
 * item goes to `item` (valid only during the call) and is then freed, and the list in the
 * finished tree has its count but no items. If it answers false the list is read as usual.
 * A refusal found later (a bad token, a duplicate top-level key) still fails the whole parse:
 * what the callbacks built must then be dropped. */
typedef struct keel__yaml_stream {
    bool (*begin)(void *ctx, const keel_node *list, const keel_node *pairs, size_t pair_count);
    void (*item)(void *ctx, const keel_node *item, size_t index);
    /* NULL, or told how many bytes of the text are read, at most once per KEEL__YAML_PROGRESS_STEP */
    void (*progress)(void *ctx, size_t bytes);
    void *ctx;
} keel__yaml_stream;
#define KEEL__YAML_PROGRESS_STEP ((size_t)64 << 10)
keel_status keel__yaml_parse_stream(const char *text, size_t len, const keel_limits *lim, const char *file,
                                    keel__arena *arena, const keel__yaml_stream *stream, keel_node **out,
                                    keel_diags *d);

#endif
