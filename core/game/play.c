/* play.c — play mode: keel_world_play remembers the world as it is (a deep copy), keel_world_stop
 * puts it back exactly, as a new epoch in which every handle taken before refuses. */
#include "model/world.h"
#include "model/entity.h"

static keel_status refuse_in_callback(const keel_world *w, const char *what, keel_diags *d)
{
    if (w->txn_depth > 0 || w->in_step)
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s refuses while a callback transaction is open", what);
    if (w->lifts)
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s refuses while entities are lifted (restore or discard them)", what);
    return KEEL_OK;
}

keel_status keel_world_play(keel_world *w, keel_diags *d)
{
    if (!w) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel_world_play: NULL world");
    keel_status st = refuse_in_callback(w, "play", d);
    if (st) return st;
    if (w->played) return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "the world is already playing");
    keel__store_flush_pending(w); /* rows freed since the last step: nothing to remember of them */
    w->played = keel__world_copy(w);
    return KEEL_OK;
}

bool keel_world_playing(const keel_world *w) { return w && w->played; }

keel_status keel_world_stop(keel_world *w, keel_diags *d)
{
    if (!w) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel_world_stop: NULL world");
    keel_status st = refuse_in_callback(w, "stop", d);
    if (st) return st;
    if (!w->played) return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "the world is not playing (keel_world_play first)");
    keel_world *was = w->played;
    keel_world now = *w;
    *w = *was;
    /* the world keeps its place among live worlds and what went wrong while playing */
    w->next_world = now.next_world;
    w->prev_world = now.prev_world;
    w->faults = now.faults;
    w->fault_count = now.fault_count;
    w->fault_cap = now.fault_cap;
    /* what attached to the world stays attached (C systems are set up by the program, not
     * played; a binding, a host), and the same for a mirror's authority */
    w->exts = now.exts;
    w->ext_count = now.ext_count;
    w->ext_cap = now.ext_cap;
    w->mirror = now.mirror;
    w->played = NULL;
    *was = now;
    was->exts = NULL;
    was->ext_count = was->ext_cap = 0;
    was->faults = NULL;
    was->fault_count = was->fault_cap = 0;
    was->played = NULL;
    keel__world_discard(was);
    /* a new epoch and tag: every handle taken before refuses, the root's and those taken while
     * playing (they all carry the old tag) */
    w->epoch = keel__epoch_next();
    keel__entities_retag(w, keel__tag_next());
    w->runs_valid = false;
    w->child_structure = 0;
    /* the counters go on from the larger of the two: a binding that stamped a record pointer of
     * the played world under some value must never see that value again */
    w->structure = (now.structure > w->structure ? now.structure : w->structure) + 1;
    w->enabling = (now.enabling > w->enabling ? now.enabling : w->enabling) + 1;
    keel__ext_stop(w); /* timers end, queued messages drop */
    return KEEL_OK;
}
