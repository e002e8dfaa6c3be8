/* ext.c — the per-world extension list (ext.h).
 *
 * A short array sorted by type order. A point's walk goes by index through w->ext_pos, and an
 * extension added or removed during the walk (the first message sent from a hook, a host
 * closed from a system) moves ext_pos with the entries it shifts, so no entry is called twice
 * or skipped and the array may be reallocated under the walk. */
#include "model/ext.h"
#include "base/vec.h"
#include "model/world.h"

#include <stdlib.h>
#include <string.h>

static size_t ext_find(const keel_world *w, const keel__ext_type *t)
{
    for (size_t i = 0; i < w->ext_count; i++)
        if (w->exts[i].type == t) return i;
    return SIZE_MAX;
}

void *keel__ext_get(const keel_world *w, const keel__ext_type *t)
{
    size_t i = ext_find(w, t);
    return i == SIZE_MAX ? NULL : w->exts[i].state;
}

void keel__ext_add(keel_world *w, const keel__ext_type *t, void *state)
{
    size_t i = ext_find(w, t);
    if (i != SIZE_MAX) {
        w->exts[i].state = state;
        return;
    }
    KEEL__VEC_RESERVE(w->exts, w->ext_count, w->ext_cap, 1, 4);
    size_t at = w->ext_count;
    while (at > 0 && w->exts[at - 1].type->order > t->order) at--;
    memmove(&w->exts[at + 1], &w->exts[at], (w->ext_count - at) * sizeof *w->exts);
    w->exts[at] = (keel__ext){ t, state };
    w->ext_count++;
    if (w->ext_walking && at <= w->ext_pos) w->ext_pos++; /* the one running moved up */
}

void *keel__ext_remove(keel_world *w, const keel__ext_type *t)
{
    size_t i = ext_find(w, t);
    if (i == SIZE_MAX) return NULL;
    void *state = w->exts[i].state;
    memmove(&w->exts[i], &w->exts[i + 1], (w->ext_count - i - 1) * sizeof *w->exts);
    w->ext_count--;
    if (w->ext_walking && i <= w->ext_pos) w->ext_pos--; /* wraps below 0 at index 0: the walk's ++ brings it back */
    return state;
}

void keel__ext_run(keel_world *w, enum keel__ext_point point, keel_phase phase, double dt)
{
    if (!w->ext_count) return;
    bool outer = !w->ext_walking;
    size_t saved = w->ext_pos;
    w->ext_walking = true;
    for (w->ext_pos = 0; w->ext_pos < w->ext_count; w->ext_pos++) {
        const keel__ext e = w->exts[w->ext_pos];
        switch (point) {
        case KEEL__EXT_STEP_BEGIN:
            if (e.type->step_begin) e.type->step_begin(w, e.state, dt);
            break;
        case KEEL__EXT_PHASE_BEGIN:
            if (e.type->phase_begin) e.type->phase_begin(w, e.state, phase, dt);
            break;
        case KEEL__EXT_PHASE_END:
            if (e.type->phase_end) e.type->phase_end(w, e.state, phase, dt);
            break;
        case KEEL__EXT_STEP_END:
            if (e.type->step_end) e.type->step_end(w, e.state, dt);
            break;
        }
    }
    w->ext_pos = saved;
    if (outer) w->ext_walking = false;
}

void keel__ext_stop(keel_world *w)
{
    for (size_t i = 0; i < w->ext_count; i++)
        if (w->exts[i].type->stop) w->exts[i].type->stop(w, w->exts[i].state);
}

void keel__ext_free_all(keel_world *w)
{
    /* each stays registered while it frees: a release it runs may reach the world (make a timer,
     * send a message), and an extension made that way is freed by this same walk */
    for (size_t i = 0; i < w->ext_count; i++)
        if (w->exts[i].type->free) w->exts[i].type->free(w, w->exts[i].state);
    free(w->exts);
    w->exts = NULL;
    w->ext_count = w->ext_cap = 0;
}
