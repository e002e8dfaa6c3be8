/* features.h — a scene's `features:` header and the cooked header's bits: what a file needs its
 * reader to know. A feature this keel does not know is refused (Unsupported, naming it), so a
 * newer keel's file is never half-read. And the skipped-field warnings, one per (kind, field). */
#ifndef KEEL_FEATURES_H
#define KEEL_FEATURES_H

#include "keel.h"

/* The features this keel knows, bit i = 1u << i (the cooked header's word at offset 20). */
extern const char *const keel__feature_names[];
#define KEEL__FEATURES_KNOWN 0x1u
/* The feature's bit, or 0 when unknown. */
uint32_t keel__feature_bit(const char *name);
uint32_t keel__world_features(const keel_world *w);
void keel__world_set_features(keel_world *w, uint32_t bits);
/* Merges the warnings of skipped fields (an unknown field of a known kind, a transient or runtime
 * field in a file) into one per (kind, field), the first kept with a count of components. */
void keel__diags_collapse_skipped(keel_diags *d);

#endif
