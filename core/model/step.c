/* step.c — the lifecycle: phases, run lists, hook transactions with rollback, and recorded faults. */
#include "model/world.h"
#include "base/vec.h"
#include "model/kind.h"
#include "model/prof.h"
#include "model/txn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- faults */

static bool same_text(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* The same failure (kind, system, phase, message and position) recorded again in the same step is
 * counted on the first entry, not listed again: a bug in a kind fails every component of it. */
static void fault_record(keel_world *w, keel_uuid entity, const char *kind, uint32_t slot, keel_phase phase,
                         const char *message, const char *where, const char *system, keel_timer_id timer)
{
    if (w->prof) w->prof->faults++;
    for (size_t i = w->fault_count, seen = 0; i-- > 0 && seen < 64; seen++) {
        keel_fault *f = &w->faults[i];
        if (f->frame != w->frame) break;
        if (f->phase == phase && (f->timer != 0) == (timer != 0) && same_text(f->kind, kind) &&
            same_text(f->system, system) && same_text(f->message, message) && same_text(f->where, where)) {
            f->count++;
            return;
        }
    }
    KEEL__VEC_RESERVE(w->faults, w->fault_count, w->fault_cap, 1, 8);
    w->faults[w->fault_count++] = (keel_fault){ .entity = entity,
                                                .kind = keel__strdup(kind),
                                                .slot = slot,
                                                .phase = phase,
                                                .message = keel__strdup(message),
                                                .timer = timer,
                                                .system = system ? keel__strdup(system) : NULL,
                                                .where = where ? keel__strdup(where) : NULL,
                                                .count = 1,
                                                .frame = w->frame };
}

/* A failure reported in `d`: its first error's message ("failed" when none) and Lua position. */
static void fault_record_diags(keel_world *w, keel_uuid entity, const char *kind, uint32_t slot, keel_phase phase,
                               const keel_diags *d, const char *system, keel_timer_id timer)
{
    const keel_diag *g = NULL;
    for (size_t j = 0; d && j < d->count && !g; j++)
        if (d->items[j].severity == KEEL_SEV_ERROR) g = &d->items[j];
    char *where = g && g->file && g->line > 0 ? keel__strfmt("%s:%d", g->file, g->line) : NULL;
    fault_record(w, entity, kind, slot, phase, g ? g->message : "failed", where, system, timer);
    free(where);
}

void keel__fault_timer(keel_world *w, keel_uuid entity, keel_timer_id id, const keel_diags *d)
{
    fault_record_diags(w, entity, "", 0, KEEL_PHASE_UPDATE, d, NULL, id);
}

void keel__fault_system(keel_world *w, keel_uuid entity, const char *system, keel_phase phase, const char *message,
                        const char *where)
{
    fault_record(w, entity, "", 0, phase, message, where, system, 0);
}

void keel__fault_system_diags(keel_world *w, const char *system, keel_phase phase, const keel_diags *d)
{
    fault_record_diags(w, (keel_uuid){ { 0 } }, "", 0, phase, d, system, 0);
}

void keel__faults_free(keel_world *w)
{
    for (size_t i = 0; i < w->fault_count; i++) {
        free((char *)w->faults[i].system);
        free((char *)w->faults[i].kind);
        free((char *)w->faults[i].message);
        free((char *)w->faults[i].where);
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

/* Opens the transaction of a hook of component c (row `row` of its kind) of entity index i. */
static void hook_open(keel_world *w, uint32_t i, keel_uuid uuid, keel_comp c, uint32_t row,
                      const keel_kind_desc *kd, keel_phase phase, double dt, keel__hook_txn *t)
{
    t->index = i;
    t->row = row;
    t->kd = kd;
    t->uuid = uuid;
    t->detached = false;
    t->diags = (keel_diags){ 0 }; /* nothing to free unless the hook reports something */
    t->call = (keel_call){ w, c, keel__store_rec(&w->stores[c.kind], row), phase, dt, kd->user, &t->diags, NULL };
    t->mark = w->log_count;
    t->cmd_depth = w->cmd_depth;
    w->cmd_depth = 0; /* commands made by the hook are outermost for the log */
    w->txn_depth++;
    t->outer = w->hook_comp;
    t->outer_row = w->hook_row;
    w->hook_comp = c; /* from the local: re-reading t->call.comp just after writing it stalls */
    w->hook_row = row;
}

/* Opens the transaction of the hook of entry `m` (loaded, not faulted) of live entity i; kd has the hook. */
static void hook_begin(keel_world *w, uint32_t i, const keel__entry *m, const keel_kind_desc *kd,
                       keel_phase phase, double dt, keel__hook_txn *t)
{
    keel_comp c = { keel__handle(w, i), m->kind, keel__entry_slot(w, m) };
    hook_open(w, i, w->ents[i].uuid, c, m->row, kd, phase, dt, t);
}

static void hook_end(keel_world *w, keel__hook_txn *t, keel_status st);

/* The on_destroys of destroys that committed, in the order the destroys were made; those their
 * own hooks commit join the end of the queue. Each is a transaction of its own, on the record
 * left in its row (the component is gone: nothing is faulted if it fails, the failure is recorded). */
static void run_doomed(keel_world *w)
{
    w->draining = true;
    for (size_t n = 0; n < w->doomed_count; n++) {
        keel__doomed dm = w->doomed[n]; /* the queue may grow meanwhile */
        const keel_kind_desc *kd = keel_kind_describe(dm.comp.kind);
        if (!kd || !kd->hooks[KEEL_PHASE_ON_DESTROY]) continue;
        keel__hook_txn t;
        hook_open(w, (uint32_t)dm.comp.entity, dm.uuid, dm.comp, dm.row, kd, KEEL_PHASE_ON_DESTROY, 0, &t);
        t.detached = true;
        hook_end(w, &t, kd->hooks[KEEL_PHASE_ON_DESTROY](&t.call));
    }
    w->doomed_count = 0;
    w->draining = false;
}

void keel__callback_open(keel_world *w, keel__hook_txn *t)
{
    /* only what keel__callback_close reads, and the diagnostics a caller may fill (a timer's):
     * a system's `each` opens one per entity */
    t->diags = (keel_diags){ 0 };
    t->mark = w->log_count;
    t->cmd_depth = w->cmd_depth;
    t->outer = w->hook_comp;
    t->outer_row = w->hook_row;
    t->detached = true;
    w->cmd_depth = 0;
    w->txn_depth++;
    w->hook_comp = (keel_comp){ 0 }; /* no component's readonly fields are its own */
    w->hook_row = 0;
}

void keel__callback_close(keel_world *w, keel__hook_txn *t, keel_status st)
{
    w->hook_comp = t->outer;
    w->hook_row = t->outer_row;
    w->txn_depth--;
    w->cmd_depth = t->cmd_depth;
    if (st != KEEL_OK) {
        keel__txn_rollback(w, t->mark);
        if (w->txn_depth == 0) {
            keel__held_release(w);
            if (w->tomb_cap) keel__tombs_clear(w);
        }
    } else if (w->txn_depth == 0) {
        /* the outermost transaction committed: its log is no longer needed */
        if (w->log_count > t->mark) keel__txn_commit(w, t->mark);
        if (w->held_count) keel__held_release(w);
        if (w->tomb_cap) keel__tombs_clear(w);
        if (w->doomed_count && !w->draining) run_doomed(w);
    }
    /* outside a step nothing holds a record once the outermost transaction has closed */
    if (w->pending_count && w->txn_depth == 0 && !w->draining && !w->in_step) keel__store_flush_pending(w);
}

/* Closes a hook's transaction as any callback's, and on a failure faults the component and
 * records the failure once. */
/* One on_destroy that failed while the world closes: its first error, at ENTITY/KIND[SLOT]. */
static void retire_failed(keel_diags *out, const keel__hook_txn *t, keel_status st)
{
    const keel_diag *g = NULL;
    for (size_t j = 0; j < t->diags.count && !g; j++)
        if (t->diags.items[j].severity == KEEL_SEV_ERROR) g = &t->diags.items[j];
    char u[37];
    keel_uuid_format(t->uuid, u);
    char *path = keel__strfmt("%s/%s[%u]", u, t->kd->key, (unsigned)t->call.comp.slot);
    keel_diag_add(out, KEEL_SEV_ERROR, g ? g->code : st, path, NULL, 0, 0, "%s", g ? g->message : "on_destroy failed");
    free(path);
}

static void hook_end(keel_world *w, keel__hook_txn *t, keel_status st)
{
    keel__callback_close(w, t, st);
    if (st != KEEL_OK) {
        keel_kind_id k = t->call.comp.kind;
        uint32_t slot = t->call.comp.slot;
        keel_entity now = keel_find(w, t->uuid);
        if (t->index == 0) now = keel_world_root(w);
        keel__ent *en = t->detached ? NULL : keel__ent_get(w, now);
        keel__entry *fm = en ? keel__entry_find(w, en, k, slot) : NULL;
        if (fm) {
            fm->faulted = true;
            w->enabling++; /* a kept pass's verdicts (pass.c) change with it */
            w->relabels++; /* and the incremental state hash's terms */
        }
        fault_record_diags(w, t->uuid, t->kd->key, slot, t->call.phase, &t->diags, NULL, 0);
        if (w->retiring) retire_failed(w->retiring, t, st);
    }
    if (t->diags.items) keel_diags_free(&t->diags); /* zeroes it: a batch's next item reuses it */
}

static void call_entry(keel_world *w, uint32_t i, const keel__entry *m, const keel_kind_desc *kd,
                       keel_phase phase, double dt, keel_world *from)
{
    keel__hook_txn t;
    hook_begin(w, i, m, kd, phase, dt, &t);
    t.call.from = from;
    hook_end(w, &t, kd->hooks[phase](&t.call));
}

void keel__call_on_destroy(keel_world *w, uint32_t i, keel_kind_id k, uint32_t slot, uint32_t row)
{
    if (w->rolling_back) return;
    const keel_kind_desc *kd = keel_kind_describe(k);
    if (!kd || !kd->hooks[KEEL_PHASE_ON_DESTROY]) return;
    if (w->txn_depth == 0) keel__call_hook(w, i, k, slot, KEEL_PHASE_ON_DESTROY, 0);
    else keel__txn_log_doomed(w, (keel_comp){ keel__handle(w, i), k, slot }, row, w->ents[i].uuid);
}

void keel__call_hook_from(keel_world *w, uint32_t i, keel_kind_id k, uint32_t slot, keel_phase phase, double dt,
                          keel_world *from)
{
    if (w->rolling_back) return;
    const keel_kind_desc *kd = keel_kind_describe(k);
    if (!kd || !kd->hooks[phase] || !w->ents[i].alive) return;
    keel__entry *m = keel__entry_find(w, &w->ents[i], k, slot);
    if (!m || m->faulted) return;
    call_entry(w, i, m, kd, phase, dt, from);
}

void keel__deliver_message(keel_world *w, keel_comp c, const keel_message *msg)
{
    if (w->rolling_back) return;
    keel__ent *en = keel__ent_get(w, c.entity);
    keel__entry *m = en ? keel__entry_find(w, en, c.kind, c.slot) : NULL;
    if (!m || !m->enabled || m->faulted || !keel__active(w, (uint32_t)c.entity)) return;
    const keel_kind_desc *kd = keel_kind_describe(c.kind);
    if (!kd || !kd->hooks[KEEL_PHASE_ON_MESSAGE]) return;
    keel__hook_txn t;
    hook_begin(w, (uint32_t)c.entity, m, kd, KEEL_PHASE_ON_MESSAGE, 0, &t);
    const keel_message *outer = w->msg_now;
    w->msg_now = msg;
    if (w->prof) w->prof->calls++;
    keel_status st = kd->hooks[KEEL_PHASE_ON_MESSAGE](&t.call);
    w->msg_now = outer;
    hook_end(w, &t, st);
}

const keel_message *keel_call_message(const keel_call *call)
{
    return call && call->world && call->phase == KEEL_PHASE_ON_MESSAGE ? call->world->msg_now : NULL;
}

bool keel__each_visit(const keel_world *w, keel_entity e, size_t n, const keel_kind_id *kinds, keel_comp *c,
                      void **rec, uint32_t *row)
{
    keel__ent *en = keel__ent_live(w, e);
    if (!en) return false;
    for (size_t k = 0; k < n; k++) {
        keel_kind_id kk = kinds[k];
        keel__entry *m = keel__entry_find(w, en, kk, KEEL_SLOT_AUTO); /* inline (world.h) */
        if (!m || !m->enabled || m->faulted || !keel__entry_due(w, m)) return false;
        c[k] = (keel_comp){ e, kk, keel__entry_slot(w, m) };
        row[k] = m->row;
        rec[k] = keel__store_rec(&w->stores[kk], m->row);
    }
    return keel__active(w, (uint32_t)e);
}

void keel__run_hook(keel_world *w, keel_comp c, keel_phase phase)
{
    keel__ent *en = keel__ent_get(w, c.entity);
    if (!en) return;
    keel__entry *m = keel__entry_find(w, en, c.kind, c.slot);
    if (!m || !m->enabled || !keel__active(w, (uint32_t)c.entity)) return; /* disabled: not reached */
    keel__call_hook(w, (uint32_t)c.entity, c.kind, keel__entry_slot(w, m), phase, 0);
}

void keel__fault_add(keel_world *w, keel_uuid entity, const char *kind, uint32_t slot, keel_phase phase,
                     const char *message)
{
    fault_record(w, entity, kind, slot, phase, message, NULL, NULL, 0);
}

void keel__call_hook(keel_world *w, uint32_t i, keel_kind_id k, uint32_t slot, keel_phase phase, double dt)
{
    keel__call_hook_from(w, i, k, slot, phase, dt, NULL);
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
    KEEL__VEC_RESERVE(r->items, r->count, r->cap, 1, 64);
    r->items[r->count++] = it;
}

static void runs_add_entity(keel_world *w, uint32_t i)
{
    keel__ent *en = &w->ents[i];
    for (uint32_t a = 0; a < en->member_count; a++) {
        keel__entry *m = &keel__members(w, en)[a];
        if (!m->kind) continue;
        const keel_kind_desc *kd = keel_kind_describe(m->kind);
        for (int p = KEEL_PHASE_START; p <= KEEL_PHASE_LATE_UPDATE; p++)
            if (kd->hooks[p])
                run_push(&w->runs[p], (keel__run_item){ i, keel__ent_gen(w, en), m->kind, keel__entry_slot(w, m) });
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

/* The entry of run item `it` when its hook is due now (marking it started in the start phase). */
static inline keel__entry *run_due(keel_world *w, keel__run_item it, keel_phase phase)
{
    keel__ent *en = &w->ents[it.index];
    if (!en->alive || keel__ent_gen(w, en) != it.gen) return NULL; /* destroyed earlier in this phase */
    keel__entry *m = keel__entry_find(w, en, it.kind, it.slot);
    if (!m || !m->enabled || m->faulted || !keel__entry_due(w, m)) return NULL;
    if (phase == KEEL_PHASE_START && m->started) return NULL;
    if (!keel__active(w, it.index)) return NULL;
    if (phase == KEEL_PHASE_START) m->started = true;
    return w->rolling_back ? NULL : m;
}

/* ---- batches: a binding runs a stretch of one kind's run list in one go */

bool keel__batch_next(keel__batch *b)
{
    keel_world *w = b->w;
    keel__run *r = &w->runs[b->phase];
    while (b->next < b->end) {
        keel__run_item it = r->items[b->next];
        const keel_kind_desc *kd = keel_kind_describe(it.kind);
        if (!kd || !kd->hooks[b->phase] || keel__kind_batch(kd) != b->run || kd->user != b->user) {
            b->end = b->next; /* redeclared meanwhile: the rest go one by one */
            return false;
        }
        b->next++;
        keel__entry *m = run_due(w, it, b->phase);
        if (!m) continue;
        if (w->prof) w->prof->calls++;
        keel__hook_txn *t = &b->txn;
        if (t->kd != kd) {
            hook_begin(w, it.index, m, kd, b->phase, b->dt, t);
            return true;
        }
        /* an earlier item of this batch opened the same kind's: what every item shares (phase,
         * dt, user, diags, from, detached) is in place, and its close left the diagnostics empty */
        keel_comp c = { keel__handle(w, it.index), it.kind, it.slot }; /* m is in it.slot */
        t->index = it.index;
        t->row = m->row;
        t->uuid = w->ents[it.index].uuid;
        t->call.comp = c;
        t->call.record = keel__store_rec(&w->stores[it.kind], m->row);
        t->mark = w->log_count;
        t->cmd_depth = w->cmd_depth;
        w->cmd_depth = 0;
        w->txn_depth++;
        t->outer = w->hook_comp;
        t->outer_row = w->hook_row;
        w->hook_comp = c;
        w->hook_row = m->row;
        return true;
    }
    return false;
}

void keel__batch_done(keel__batch *b, keel_status st) { hook_end(b->w, &b->txn, st); }

static void run_phase(keel_world *w, keel_phase phase, double dt)
{
    keel__ext_run(w, KEEL__EXT_PHASE_BEGIN, phase, dt); /* update's: the timers due fire */
    /* a client's mirror world: the server's authoritative phases (hooks and systems) never run */
    if (w->mirror && (phase == KEEL_PHASE_FIXED_UPDATE || phase == KEEL_PHASE_UPDATE)) return;
    if (!w->runs_valid || w->runs_structure != w->structure) runs_rebuild(w);
    keel__run *r = &w->runs[phase];
    /* profiling: the clock is read where the kind changes, not per item (prof.h); the counters
     * live as long as the world, so turning profiling off meanwhile leaves p valid */
    keel__prof *p = w->prof;
    keel__stretch s = { 0 };
    for (size_t n = 0; n < r->count; n++) {
        keel__run_item it = r->items[n];
        const keel_kind_desc *kd = keel_kind_describe(it.kind);
        void (*batch)(keel__batch *) = kd && kd->hooks[phase] ? keel__kind_batch(kd) : NULL;
        if (batch && !w->rolling_back) {
            size_t end = n + 1;
            while (end < r->count && r->items[end].kind == it.kind) end++;
            if (end - n >= KEEL__BATCH_MIN) {
                keel__batch b = { .w = w, .phase = phase, .dt = dt, .user = kd->user, .run = batch, .next = n, .end = end };
                if (p) keel__stretch_to(p, &s, it.kind, phase);
                batch(&b);
                n = b.next - 1; /* a batch that stopped early leaves the rest to the loop */
                continue;
            }
        }
        keel__entry *m = run_due(w, it, phase);
        if (m && kd && kd->hooks[phase]) {
            if (p) {
                keel__stretch_to(p, &s, it.kind, phase);
                p->calls++;
            }
            call_entry(w, it.index, m, kd, phase, dt, NULL);
        }
    }
    if (p) keel__stretch_to(p, &s, 0, phase);
    keel__ext_run(w, KEEL__EXT_PHASE_END, phase, dt); /* systems, a binding's, then messages */
    /* the phase boundary: records of the dead are freed (not under a hook that called keel_step) */
    if (w->txn_depth == 0 && !w->draining) keel__store_flush_pending(w);
}

keel_status keel_step(keel_world *w, double dt, keel_diags *d)
{
    if (w->in_step) return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "a step cannot run inside a step");
    if (w->frozen) return keel__refuse_frozen(d);
    if (!isfinite(dt) || dt < 0)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "dt must be a finite number >= 0");
    w->in_step = true;
    keel__ext_run(w, KEEL__EXT_STEP_BEGIN, 0, dt); /* messages sent since the last step are delivered */
    run_phase(w, KEEL_PHASE_START, dt);
    w->acc += dt;
    int n = 0;
    while (w->acc >= w->fixed_dt && n < KEEL__MAX_FIXED_STEPS) {
        run_phase(w, KEEL_PHASE_FIXED_UPDATE, w->fixed_dt);
        w->acc -= w->fixed_dt;
        n++;
    }
    if (w->acc >= w->fixed_dt) w->acc = fmod(w->acc, w->fixed_dt); /* too far behind: drop the excess */
    w->time += dt; /* timers fire as update begins */
    run_phase(w, KEEL_PHASE_UPDATE, dt);
    run_phase(w, KEEL_PHASE_LATE_UPDATE, dt);
    w->in_step = false;
    w->frame++;
    keel__ext_run(w, KEEL__EXT_STEP_END, 0, dt); /* a hosted world: a network tick when one is due */
    return KEEL_OK;
}

void keel_world_set_fixed_dt(keel_world *w, double fixed_dt)
{
    if (isfinite(fixed_dt) && fixed_dt > 0) w->fixed_dt = fixed_dt;
}

double keel_world_fixed_dt(const keel_world *w) { return w->fixed_dt; }
bool keel_world_in_step(const keel_world *w) { return w->in_step; }
bool keel_world_in_callback(const keel_world *w) { return w && w->txn_depth > 0; }
uint64_t keel_world_frame(const keel_world *w) { return w->frame; }

const char *keel_phase_name(keel_phase p)
{
    static const char *const names[] = { "awake", "start", "fixed_update", "update", "late_update", "on_destroy",
                                         "on_transfer", "on_message" };
    return (unsigned)p < KEEL_PHASE_COUNT_ ? names[p] : "?";
}

keel_kind_id keel__batch_kind(const keel__batch *b) { return b->w->runs[b->phase].items[b->next].kind; }
