/* play.c — play mode: keel_world_play remembers the world as it is (a deep copy), keel_world_stop
 * puts it back exactly, as a new epoch in which every handle taken before refuses. */
#include "bind.h"
#include "model/world.h"
#include "model/entity.h"
#include "model/hierarchy.h"
#include "model/member.h"
#include "model/step.h"
#include "game/record.h"

#include <stdlib.h>
#include <string.h>

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

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* ---- lifecycles across stop: what only one of the two worlds holds ---- */

/* The serials of w's live, loaded components, sorted: a component keeps its serial from the
 * remembered world into the played one (keel__world_copy), and a new one never reuses one. */
static uint64_t *serials_of(const keel_world *w, size_t *n)
{
    size_t cap = 0;
    uint64_t *out = NULL;
    *n = 0;
    for (uint32_t i = 0; i < w->ent_count; i++) {
        const keel__ent *en = &w->ents[i];
        if (!en->alive) continue;
        const keel__entry *ms = keel__members(w, en);
        for (uint32_t m = 0; m < en->member_count; m++) {
            if (!ms[m].kind) continue;
            if (*n == cap) out = keel__xrealloc(out, (cap = cap ? cap * 2 : 64) * sizeof *out);
            out[(*n)++] = keel__entry_serial(&ms[m]);
        }
    }
    if (*n) qsort(out, *n, sizeof *out, cmp_u64);
    return out;
}

static bool has_serial(const uint64_t *set, size_t n, uint64_t s)
{
    return n && bsearch(&s, set, n, sizeof *set, cmp_u64) != NULL;
}

/* Runs `phase` on every component of w that got awake (or, for awake, had got it when it was
 * remembered) and whose serial `set` lacks: on_destroy each entity after its children, awake
 * each before them. An entry a hook took away meanwhile is skipped. */
static void retire_or_wake(keel_world *w, const uint64_t *set, size_t n, keel_phase phase)
{
    uint32_t *list = NULL;
    size_t count = 0, cap = 0;
    keel__subtree_collect(w, 0, &list, &count, &cap);
    for (size_t k = 0; k < count; k++) {
        uint32_t i = list[phase == KEEL_PHASE_ON_DESTROY ? count - 1 - k : k];
        if (!w->ents[i].alive) continue;
        /* serials first: a hook may change the stack under us */
        size_t mc = w->ents[i].member_count, todo = 0;
        keel_comp *comps = keel__xrealloc(NULL, (mc ? mc : 1) * sizeof *comps);
        const keel__entry *ms = keel__members(w, &w->ents[i]);
        for (uint32_t m = 0; m < mc; m++)
            if (ms[m].kind && ms[m].awoken && !ms[m].faulted && !has_serial(set, n, keel__entry_serial(&ms[m])))
                comps[todo++] = (keel_comp){ keel__handle(w, i), ms[m].kind, keel__entry_slot(w, &ms[m]) };
        for (size_t c = 0; c < todo; c++) keel__call_hook(w, i, comps[c].kind, comps[c].slot, phase, 0);
        free(comps);
    }
    free(list);
}

keel_status keel_world_stop(keel_world *w, keel_diags *d)
{
    /* a C caller gets what could not be kept as warnings */
    return keel__world_stop(w, NULL, d, KEEL_SEV_WARNING, d);
}

keel_status keel__world_stop(keel_world *w, keel_cmd *inverse, keel_diags *refused, keel_severity sev, keel_diags *d)
{
    if (!w) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel_world_stop: NULL world");
    keel_status st = refuse_in_callback(w, "stop", d);
    if (st) return st;
    if (!w->played) return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "the world is not playing (keel_world_play first)");
    keel__record_stop_begin(w); /* recording: the stop is one input, the world as it leaves it */
    /* what is kept is read as play leaves it, before anything retires */
    size_t n_kept;
    keel__kept_state *kept = keel__keep_capture(w, &n_kept);
    /* what exists only in the play world retires now, while it is still the world */
    size_t n_was, n_play;
    uint64_t *was_set = serials_of(w->played, &n_was);
    retire_or_wake(w, was_set, n_was, KEEL_PHASE_ON_DESTROY);
    free(was_set);
    uint64_t *play_set = serials_of(w, &n_play);
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
    w->prof = now.prof; /* profiling's counters belong to its extension: on or off as now */
    /* a recorder stays attached: it sees the stop through its extension */
    w->ids_from_rng = now.ids_from_rng;
    memcpy(w->idrng, now.idrng, sizeof w->idrng);
    w->input = now.input;
    w->input_state = now.input_state;
    w->capture_home = now.capture_home; /* the save jobs' memory stays the world's */
    w->played = NULL;
    *was = now;
    was->capture_home = NULL;
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
    w->revision_sets = now.revision_sets + 1; /* the revision went back to play's: a new pair all the same */
    keel__ext_stop(w); /* timers end, queued messages drop */
    /* what play destroyed comes back as it was remembered: awake again, as a new epoch's */
    retire_or_wake(w, play_set, n_play, KEEL_PHASE_AWAKE);
    free(play_set);
    /* then what was kept is written into the world as it was, as commands of its own */
    keel__keep_apply(w, kept, n_kept, inverse, refused, sev);
    keel__keep_states_free(kept, n_kept);
    keel__record_stop_end(w);
    return KEEL_OK;
}
