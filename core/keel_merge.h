/* keel_merge.h — merging scene files, the C side of `keel merge` (core/files/merge.c and
 * conflicts.c; design/merge.md): three versions of a scene merged as data, and the conflicts
 * list a merge leaves resolved. An optional part of libkeel's API, beside keel.h. */
#ifndef KEEL_MERGE_H
#define KEEL_MERGE_H

#include "keel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* exported from libkeel.so like keel.h's declarations (libkeel is built with hidden visibility) */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* ======================================================================
 * Merging scene files
 *
 * Entities are matched by UUID, components by (kind, slot), fields by name, the scene's and
 * settings' keys by key; what only one side changed is taken, what both changed the same way
 * too. What both changed differently keeps ours' value and is listed, with the three values,
 * in a `conflicts:` list after the scene; a scene with that list does not load (Conflict)
 * until keel_merge_take resolves it.
 *
 * Example:
 *     static const char *const base = "keel: 1\nscene:\n  uuid: 5ce9e000-0000-4000-8000-000000000000\n"
 *                                     "  name: Hall\nroot: []\nentities:\n"
 *                                     "- uuid: 5ce9e000-0000-4000-8000-000000000001\n"
 *                                     "  name: Door\n  components: []\n";
 *     char ours[512], theirs[512];
 *     strcpy(ours, base);
 *     memcpy(strstr(ours, "Door"), "Gate", 4);       // ours renames the door
 *     strcpy(theirs, base);
 *     memcpy(strstr(theirs, "Door"), "Arch", 4);     // theirs renames it too: a conflict
 *     memcpy(strstr(theirs, "Hall"), "Keep", 4);     // and renames the scene: taken
 *     const char *texts[3] = { base, ours, theirs };
 *     size_t lens[3] = { strlen(base), strlen(ours), strlen(theirs) };
 *     const char *names[3] = { "base.yaml", "ours.yaml", "theirs.yaml" };
 *     keel_diags d;
 *     keel_diags_init(&d);
 *     char *merged = NULL;
 *     size_t len = 0, conflicts = 0;
 *     keel_status st = keel_merge_scenes(texts, lens, names, NULL, &merged, &len, &conflicts, &d);
 *     if (st != KEEL_OK || conflicts != 1 || !strstr(merged, "name: Keep") ||
 *         !strstr(merged, "path: 5ce9e000-0000-4000-8000-000000000001/name")) {
 *         report("merge", st, &d);
 *         free(merged);
 *         keel_diags_free(&d);
 *         return 1;
 *     }
 *     char *taken = NULL;
 *     size_t taken_len = 0, remaining = 0;
 *     st = keel_merge_take(merged, len, "merged.yaml", true, NULL, 0, &taken, &taken_len, &remaining, &d);
 *     int rc = st != KEEL_OK || remaining != 0 || !strstr(taken, "name: Arch") || strstr(taken, "conflicts:");
 *     if (rc) report("take theirs", st, &d);
 *     free(merged);
 *     free(taken);
 *     keel_diags_free(&d);
 *     return rc;
 * ====================================================================== */

/* Does `text` look like a keel scene: lines that start with "keel:" and "scene:"? (A cheap
 * test; the merge parses what passes it and reports what does not parse.) */
bool keel_merge_looks_like_scene(const char *text, size_t len);

/* Three-way merge of scene texts (base may be empty: a file added on both sides).
 * `names` are the three files' names for diagnostics. The result is canonical text (the
 * scene writer's, through the registered kinds) with a `conflicts:` list appended when
 * there are conflicts; *nconflicts says how many. `lim` NULL: the default limits. ParseError (or what the reader says) in
 * `d` when a side does not parse or is not a scene, or when the merged scene does not load;
 * then nothing is returned. */
keel_status keel_merge_scenes(const char *const texts[3], const size_t lens[3], const char *const names[3],
                              const keel_limits *lim, char **out, size_t *outlen, size_t *nconflicts,
                              keel_diags *d);

/* Resolves the entries of `text`'s conflicts list whose path is among `paths` (all when
 * npaths is 0): `theirs` puts each entry's theirs value at its path, else ours' value (already
 * in the scene) stays. NotFound for a path with no entry (nothing is returned then). The
 * result is canonical, with the remaining entries listed; *remaining counts them. */
keel_status keel_merge_take(const char *text, size_t len, const char *name, bool theirs, const char *const *paths,
                            size_t npaths, char **out, size_t *outlen, size_t *remaining, keel_diags *d);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* KEEL_MERGE_H */
