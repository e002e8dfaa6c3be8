/* close.c — keel_world_close: every component that got awake retires (on_destroy) before the
 * world is freed, as seed 004 asks of every exit ("including world close"). keel_world_free stays
 * the hookless free, for worlds no code should hear about again (a failed load's candidate, a
 * collected Lua world). */
#include "model/world.h"
#include "model/hierarchy.h"
#include "model/member.h"

#include <stdlib.h>

/* A hook that keeps making entities as others retire must not keep the close going forever. */
#define CLOSE_ROUNDS 8

keel_status keel__world_retire(keel_world *w, keel_diags *d)
{
    keel_diags failed;
    keel_diags_init(&failed);
    w->retiring = &failed; /* hook_end (step.c) notes each on_destroy that fails here */
    /* lifted entities first, back in the tree: the walk below retires them with the rest */
    while (w->lifts) keel_lift_discard(w->lifts, NULL);
    uint32_t *list = NULL;
    size_t cap = 0;
    for (int round = 0; round < CLOSE_ROUNDS; round++) {
        size_t n = 0;
        keel__subtree_collect(w, 0, &list, &n, &cap);
        if (n <= 1) break;
        /* reverse pre-order: every entity after all of its descendants (a destroy moves the
         * children of what it destroys to the top level, so the deepest go first) */
        for (size_t k = n; k-- > 1;)
            if (w->ents[list[k]].alive) keel_destroy(w, keel__handle(w, list[k]), NULL, NULL);
    }
    free(list);
    keel__members_drop(w, 0, false); /* the scene root's components, last */
    w->retiring = NULL;
    keel_status s = keel_diags_status(&failed);
    keel_diags_append(d, &failed, "");
    keel_diags_free(&failed);
    return s;
}

keel_status keel_world_close(keel_world *w, keel_diags *d)
{
    if (!w) return KEEL_OK;
    if (keel_world_in_step(w) || keel_world_in_callback(w))
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "a world cannot be closed during its step or its callbacks");
    keel_jobs_wait(w); /* its pending saves are written before it is gone */
    keel_status s = keel__world_retire(w, d);
    keel_world_free(w);
    return s;
}
