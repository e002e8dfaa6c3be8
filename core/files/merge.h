/* merge.h — the scene merge's internal entry (merge.c): keel_merge_scenes with its way of
 * reading the sides chosen, so tests can hold the span read against the whole read. */
#ifndef KEEL_FILES_MERGE_H
#define KEEL_FILES_MERGE_H

#include "keel_merge.h"

/* How ours and theirs were read (index 1 and 2; base, 0, is always read whole). */
typedef struct keel__merge_reads {
    bool by_spans[3]; /* read by spans, not whole */
    size_t parsed[3]; /* of its items, how many were parsed (the rest are base's) */
} keel__merge_reads;

/* keel_merge_scenes is this with by_spans true: ours and theirs parsed only where their text
 * differs from base's. False parses every side whole. The results are the same bytes and the
 * same diagnostics. `reads` (NULL: not wanted) says what was done. */
keel_status keel__merge_scenes_read(const char *const texts[3], const size_t lens[3], const char *const names[3],
                                    const keel_limits *lim, bool by_spans, keel__merge_reads *reads, char **out,
                                    size_t *outlen, size_t *nconflicts, keel_diags *d);

#endif
