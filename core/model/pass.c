/* pass.c — the stamp of a system pass's verdicts (bind.h keel__pass_stamp): which entities a
 * pass visits, and where their records are, hold while the world's structure, its enabled and
 * fault flags, the kind declarations and (while components added this step wait for the next)
 * the frame have not moved. */
#include "model/world.h"
#include "bind.h"

void keel__pass_stamp_take(const keel_world *w, keel__pass_stamp *s)
{
    s->w = w;
    s->epoch = w->epoch;
    s->structure = w->structure;
    s->enabling = w->enabling;
    s->decls = keel__kind_declarations();
    s->frame = w->frame;
    /* an entry added during this frame's step runs from the next frame (keel__entry_due): the
     * verdicts then hold for this frame only */
    s->frame_bound = w->fresh_count > 0 && w->frame <= w->fresh_frame;
}

bool keel__pass_stamp_holds(const keel_world *w, const keel__pass_stamp *s)
{
    return s->w == w && s->epoch == w->epoch && s->structure == w->structure && s->enabling == w->enabling &&
        s->decls == keel__kind_declarations() && (!s->frame_bound || s->frame == w->frame);
}
