/* features.c — the scene header's features and the collapse of skipped-field warnings. */
#include "files/features.h"
#include "base/util.h"
#include "model/world.h"

#include <stdlib.h>
#include <string.h>

/* canonical_quaternions: every quat in the file is unit length with w >= 0 (what keel writes). */
const char *const keel__feature_names[] = { "canonical_quaternions", NULL };

uint32_t keel__feature_bit(const char *name)
{
    for (uint32_t i = 0; name && keel__feature_names[i]; i++)
        if (!strcmp(name, keel__feature_names[i])) return 1u << i;
    return 0;
}

uint32_t keel__world_features(const keel_world *w)
{
    return w ? w->features : 0;
}
void keel__world_set_features(keel_world *w, uint32_t bits)
{
    if (w) w->features = bits;
}

static bool is_skip(const keel_diag *g)
{
    return g->severity == KEEL_SEV_WARNING && !g->more &&
        (strstr(g->message, "' is no longer declared; skipped") || strstr(g->message, ": read, but never ") ||
         (strstr(g->message, " has no field ") && strstr(g->message, ": skipped"))); /* the cooked reader's */
}

void keel__diags_collapse_skipped(keel_diags *d)
{
    if (!d || !d->warnings) return;
    size_t *count = calloc(d->count ? d->count : 1, sizeof *count);
    if (!count) return;
    size_t out = 0;
    for (size_t i = 0; i < d->count; i++) {
        keel_diag *g = &d->items[i];
        size_t j = out;
        if (is_skip(g))
            for (j = 0; j < out; j++)
                if (count[j] && d->items[j].code == g->code && !strcmp(d->items[j].message, g->message)) break;
        if (j < out) { /* the same (kind, field) again: counted on the first */
            count[j]++;
            free(g->message);
            free(g->path);
            free(g->file);
            d->warnings--;
            continue;
        }
        d->items[out] = *g;
        count[out] = is_skip(g) ? 1 : 0;
        out++;
    }
    d->count = out;
    for (size_t i = 0; i < out; i++) {
        if (!count[i]) continue;
        char *m = keel__strfmt("%s (%zu component%s)", d->items[i].message, count[i], count[i] == 1 ? "" : "s");
        free(d->items[i].message);
        d->items[i].message = m;
    }
    free(count);
}
