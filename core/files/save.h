/* save.h — what save jobs (save_async.c) and the text form (save_text.c) use of save.c. */
#ifndef KEEL_SAVE_H
#define KEEL_SAVE_H

#include "keel.h"
#include "base/bytes.h"

/* The uncompressed state a slot file holds for w against base (the baseline's scene must be w's). */
void keel__persist_encode(const keel_world *w, const keel_baseline *base, keel__buf *out);
/* One more owner of b (thread-safe count); keel_baseline_free drops one and frees at the last. */
keel_baseline *keel__baseline_retain(const keel_baseline *b);
keel_uuid keel__baseline_scene(const keel_baseline *b);

#endif
