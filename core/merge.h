/* merge.h — scene documents merged as data (keel merge, design/merge.md) and their conflicts lists. */
#ifndef KEEL_MERGE_H
#define KEEL_MERGE_H

#include "keel.h"

/* Does `text` look like a keel scene: lines that start with "keel:" and "scene:"? (A cheap
 * test; the merge parses what passes it and reports what does not parse.) */
bool keel__merge_looks_like_scene(const char *text, size_t len);

/* Three-way merge of scene texts (base may be empty: a file added on both sides).
 * `names` are the three files' names for diagnostics. The result is canonical text (the
 * scene writer's, through the registered kinds) with a `conflicts:` list appended when
 * there are conflicts; *nconflicts says how many. `lim` NULL: the default limits. ParseError (or what the reader says) in
 * `d` when a side does not parse or is not a scene, or when the merged scene does not load;
 * then nothing is returned. */
keel_status keel__merge_scenes(const char *const texts[3], const size_t lens[3], const char *const names[3],
                               const keel_limits *lim, char **out, size_t *outlen, size_t *nconflicts,
                               keel_diags *d);

/* Resolves the entries of `text`'s conflicts list whose path is among `paths` (all when
 * npaths is 0): `theirs` puts each entry's theirs value at its path, else ours' value (already
 * in the scene) stays. NotFound for a path with no entry (nothing is returned then). The
 * result is canonical, with the remaining entries listed; *remaining counts them. */
keel_status keel__merge_take(const char *text, size_t len, const char *name, bool theirs, const char *const *paths,
                             size_t npaths, char **out, size_t *outlen, size_t *remaining, keel_diags *d);

/* The scene reader's part: one Conflict error per entry of a document's `conflicts:` list
 * (ParseError when it is not a list of maps with a path). */
void keel__merge_conflict_diags(const keel_node *list, const char *file, keel_diags *d);

#endif
