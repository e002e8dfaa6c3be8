/* step.c — the lifecycle: phases, run lists, hook transactions with rollback, and recorded faults. */
#include "world_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- faults */

static void fault_record(keel_world *w, keel_uuid entity, const char *kind, uint32_t slot, keel_phase phase,
                         const char *message)
{
    if (w->fault_count == w->fault_cap) {
        w->fault_cap = w->fault_cap ? w->fault_cap * 2 : 8;
        w->faults = keel__xrealloc(w->faults, w->fault_cap * sizeof *w->faults);
    }
    w->faults[w->fault_count++] = (keel_fault){ entity, keel__strdup(kind), slot, phase, keel__strdup(message) };
}

void keel__faults_free(keel_world *w)
{
    for (size_t i = 0; i < w->fault_count; i++) {
        free((char *)w->faults[i].kind);
        free((char *)w->faults[i].message);
    }
    free(w->faults);
    w->faults = NULL;
    w->fault_count = w->fault_cap = 0;
}

size_t keel_fault_count(const keel_world *w) { return w->fault_count; }

const keel_fault *keel_fault_at(const keel_world *w, size_t i)
{
    return i < w->fault_count ? &w->faults[i] : NULL;
}

/* ---------------------------------------------------------------- transactions */

/* Applies the log's inverses backwards down to `mark`: field writes come back,
 * structural changes are undone; no hook runs meanwhile. */
static void rollback(keel_world *w, size_t mark)
{
    bool was = w->rolling_back;
    w->rolling_back = true;
    while (w->log_count > mark) {
        keel_cmd *c = &w->log[--w->log_count];
        keel__cmd_apply(w, c, NULL, true, NULL);
        keel_cmd_free(c);
    }
    w->rolling_back = was;
}

/* The hook of entry `m` (loaded, not faulted) of live entity i; kd has the hook. */
static void call_entry(keel_world *w, uint32_t i, const keel__entry *m, const keel_kind_desc *kd,
                       keel_phase phase, double dt)
{
    keel_kind_id k = m->kind;
    uint32_t slot = m->slot;
    keel_hook_fn fn = kd->hooks[phase];
    keel_entity e = keel__handle(w, i);
    keel_uuid uuid = w->ents[i].uuid;
    keel_diags hd = { 0 }; /* nothing to free unless the hook reports something */
    keel_call call = { w, { e, k, slot }, keel__store_rec(&w->stores[k], m->row), phase, dt, kd->user, &hd };

    size_t mark = w->log_count;
    int depth = w->cmd_depth;
    w->cmd_depth = 0; /* commands made by the hook are outermost for the log */
    w->txn_depth++;
    keel_comp outer = w->hook_comp;
    w->hook_comp = call.comp;
    keel_status st = fn(&call);
    w->hook_comp = outer;
    w->txn_depth--;
    w->cmd_depth = depth;

    if (st != KEEL_OK) {
        rollback(w, mark);
        if (w->txn_depth == 0) {
            keel__held_release(w);
            if (w->tomb_cap) keel__tombs_clear(w);
        }
        keel_entity now = keel_find(w, uuid);
        if (i == 0) now = keel_world_root(w);
        keel__ent *en = keel__ent_get(w, now);
        keel__entry *fm = en ? keel__entry_find(en, k, slot) : NULL;
        if (fm) fm->faulted = true;
        const char *msg = "failed";
        for (size_t j = 0; j < hd.count; j++)
            if (hd.items[j].severity == KEEL_SEV_ERROR) {
                msg = hd.items[j].message;
                break;
            }
        fault_record(w, uuid, kd->key, slot, phase, msg);
    } else if (w->txn_depth == 0) {
        /* the outermost transaction committed: its log is no longer needed */
        while (w->log_count > mark) keel_cmd_free(&w->log[--w->log_count]);
        if (w->held_count) keel__held_release(w);
        if (w->tomb_cap) keel__tombs_clear(w);
    }
    if (hd.items) keel_diags_free(&hd);
}

void keel__call_hook(keel_world *w, uint32_t i, keel_kind_id k, uint32_t slot, keel_phase phase, double dt)
{
    if (w->rolling_back) return;
    const keel_kind_desc *kd = keel_kind_describe(k);
    if (!kd || !kd->hooks[phase] || !w->ents[i].alive) return;
    keel__entry *m = keel__entry_find(&w->ents[i], k, slot);
    if (!m || m->faulted) return;
    call_entry(w, i, m, kd, phase, dt);
}

/* ---------------------------------------------------------------- run lists */

void keel__runs_free(keel_world *w)
{
    for (int p = 0; p < KEEL_PHASE_COUNT_; p++) {
        free(w->runs[p].items);
        w->runs[p] = (keel__run){ 0 };
    }
}

static void run_push(keel__run *r, keel__run_item it)
{
    if (r->count == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 64;
        r->items = keel__xrealloc(r->items, r->cap * sizeof *r->items);
    }
    r->items[r->count++] = it;
}

static void runs_add_entity(keel_world *w, uint32_t i)
{
    keel__ent *en = &w->ents[i];
    for (uint32_t a = 0; a < en->member_count; a++) {
        keel__entry *m = &en->members[a];
        if (!m->kind) continue;
        const keel_kind_desc *kd = keel_kind_describe(m->kind);
        for (int p = KEEL_PHASE_START; p <= KEEL_PHASE_LATE_UPDATE; p++)
            if (kd->hooks[p]) run_push(&w->runs[p], (keel__run_item){ i, en->gen, m->kind, m->slot });
    }
}

/* Only entries whose kind has the phase's hook: kinds without hooks cost nothing. */
static void runs_rebuild(keel_world *w)
{
    for (int p = 0; p < KEEL_PHASE_COUNT_; p++) w->runs[p].count = 0;
    runs_add_entity(w, 0);
    for (keel_entity e = keel_next(w, 0); e; e = keel_next(w, e)) runs_add_entity(w, (uint32_t)e);
    w->runs_structure = w->structure;
    w->runs_valid = true;
}

static bool active(const keel_world *w, uint32_t i)
{
    for (; i != KEEL__NONE; i = w->ents[i].parent)
        if (!w->ents[i].enabled) return false;
    return true;
}

static void run_phase(keel_world *w, keel_phase phase, double dt)
{
    if (!w->runs_valid || w->runs_structure != w->structure) runs_rebuild(w);
    keel__run *r = &w->runs[phase];
    for (size_t n = 0; n < r->count; n++) {
        keel__run_item it = r->items[n];
        keel__ent *en = &w->ents[it.index];
        if (!en->alive || en->gen != it.gen) continue; /* destroyed earlier in this phase */
        keel__entry *m = keel__entry_find(en, it.kind, it.slot);
        if (!m || !m->enabled || m->faulted || m->born > w->frame) continue;
        if (phase == KEEL_PHASE_START && m->started) continue;
        if (!active(w, it.index)) continue;
        if (phase == KEEL_PHASE_START) m->started = true;
        if (w->rolling_back) continue;
        const keel_kind_desc *kd = keel_kind_describe(it.kind);
        if (kd && kd->hooks[phase]) call_entry(w, it.index, m, kd, phase, dt);
    }
    keel__flush_pending(w); /* the phase boundary: records of the dead are freed */
}

keel_status keel_step(keel_world *w, double dt, keel_diags *d)
{
    if (w->in_step) return keel_error(d, KEEL_INVALID_OPERATION, "", "a step cannot run inside a step");
    if (!isfinite(dt) || dt < 0)
        return keel_error(d, KEEL_INVALID_ARGUMENT, "", "dt must be a finite number >= 0");
    w->in_step = true;
    run_phase(w, KEEL_PHASE_START, dt);
    w->acc += dt;
    int n = 0;
    while (w->acc >= w->fixed_dt && n < KEEL__MAX_FIXED_STEPS) {
        run_phase(w, KEEL_PHASE_FIXED_UPDATE, w->fixed_dt);
        w->acc -= w->fixed_dt;
        n++;
    }
    if (w->acc >= w->fixed_dt) w->acc = fmod(w->acc, w->fixed_dt); /* too far behind: drop the excess */
    run_phase(w, KEEL_PHASE_UPDATE, dt);
    run_phase(w, KEEL_PHASE_LATE_UPDATE, dt);
    w->in_step = false;
    w->frame++;
    return KEEL_OK;
}

void keel_world_set_fixed_dt(keel_world *w, double fixed_dt)
{
    if (isfinite(fixed_dt) && fixed_dt > 0) w->fixed_dt = fixed_dt;
}

double keel_world_fixed_dt(const keel_world *w) { return w->fixed_dt; }
bool keel_world_in_step(const keel_world *w) { return w->in_step; }
uint64_t keel_world_frame(const keel_world *w) { return w->frame; }

/* The registry's file may define this too; the weak one only fills a gap. */
#if defined(__GNUC__)
__attribute__((weak))
#endif
const char *keel_phase_name(keel_phase p)
{
    static const char *const names[] = { "awake", "start", "fixed_update", "update", "late_update", "on_destroy" };
    return (unsigned)p < KEEL_PHASE_COUNT_ ? names[p] : "?";
}
