/* stats.c — frame statistics (keel_stats.h): two extensions of the world, one first and one
 * last at every point, bracket the step and its phases with clock reads; systems report their
 * runs; the model's counters (model/prof.h) hold the hooks' stretches and the counts. At the
 * step's end the frame is published (systems and kinds sorted, costliest first) and its times
 * join a ring of the last KEEL_STATS_HISTORY frames. */
#include "game/stats.h"
#include "model/prof.h"
#include "model/world.h"
#include "base/vec.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define RING KEEL_STATS_HISTORY
#define SERIES 5 /* the frame, then start, fixed_update, update, late_update */

typedef struct sys_acc {
    char *name;
    double ns;
    uint64_t entities;
    uint32_t calls;
} sys_acc;

typedef struct stats_state {
    keel__prof prof; /* first: w->prof is the state */
    bool on, begun;
    uint64_t frame_t0, phase_t0; /* ticks (model/prof.h) */
    uint64_t phase_ns[KEEL_PHASE_COUNT_];
    sys_acc *sys; /* every system seen since collecting began; names kept (the published point at them) */
    size_t sys_count, sys_cap, sys_hint;
    keel_stats_system *out_sys;
    size_t out_sys_cap;
    keel_stats_kind *out_kinds;
    size_t out_kinds_count, out_kinds_cap;
    keel_stats last;
    bool have;
    /* each series twice over (2 * RING): the last RING values are one contiguous window */
    double ring[SERIES][2 * RING];
    size_t head, count;
} stats_state;

static const keel_phase series_phase[SERIES - 1] = { KEEL_PHASE_START, KEEL_PHASE_FIXED_UPDATE, KEEL_PHASE_UPDATE,
                                                     KEEL_PHASE_LATE_UPDATE };

static void stats_step_begin(keel_world *w, void *state, double dt);
static void stats_phase_begin(keel_world *w, void *state, keel_phase phase, double dt);
static void stats_phase_end(keel_world *w, void *state, keel_phase phase, double dt);
static void stats_step_end(keel_world *w, void *state, double dt);
static void stats_free(keel_world *w, void *state);
/* the first at a step's and a phase's start, the last at their ends: what the others do is inside */
static const keel__ext_type first_ext = { .name = "stats",
                                          .order = INT_MIN,
                                          .step_begin = stats_step_begin,
                                          .phase_begin = stats_phase_begin,
                                          .free = stats_free };
static const keel__ext_type last_ext = {
    .name = "stats_end", .order = INT_MAX, .phase_end = stats_phase_end, .step_end = stats_step_end
};

static double ms(uint64_t ticks)
{
    return keel__prof_ns(ticks) / 1e6;
}

static void stats_step_begin(keel_world *w, void *state, double dt)
{
    (void)w;
    (void)dt;
    stats_state *st = state;
    if (!st->on) return;
    keel__prof *p = &st->prof;
    for (size_t i = 0; i < p->touched_count; i++) p->kind_ns[p->touched[i]] = p->kind_calls[p->touched[i]] = 0;
    p->touched_count = 0;
    p->messages = p->timers = p->spawned = p->destroyed = p->faults = 0;
    for (size_t i = 0; i < st->sys_count; i++) {
        st->sys[i].ns = 0;
        st->sys[i].entities = 0;
        st->sys[i].calls = 0;
    }
    memset(st->phase_ns, 0, sizeof st->phase_ns);
    st->sys_hint = 0;
    st->phase_t0 = 0;
    st->begun = true;
    st->frame_t0 = keel__prof_now();
}

static void stats_phase_begin(keel_world *w, void *state, keel_phase phase, double dt)
{
    (void)w;
    (void)phase;
    (void)dt;
    stats_state *st = state;
    if (st->begun) st->phase_t0 = keel__prof_now();
}

static void stats_phase_end(keel_world *w, void *state, keel_phase phase, double dt)
{
    (void)w;
    (void)dt;
    stats_state *st = state;
    if (!st->begun || !st->phase_t0 || (unsigned)phase >= KEEL_PHASE_COUNT_) return;
    st->phase_ns[phase] += keel__prof_now() - st->phase_t0;
    st->phase_t0 = 0;
}

static int by_sys_ms(const void *a, const void *b)
{
    double x = ((const keel_stats_system *)a)->ms, y = ((const keel_stats_system *)b)->ms;
    return x < y ? 1
        : x > y  ? -1
                 : strcmp(((const keel_stats_system *)a)->name, ((const keel_stats_system *)b)->name);
}

static int by_kind_ms(const void *a, const void *b)
{
    const keel_stats_kind *x = a, *y = b;
    if (x->ms != y->ms) return x->ms < y->ms ? 1 : -1;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    return (int)x->phase - (int)y->phase;
}

static void publish(keel_world *w, stats_state *st, uint64_t frame_ns)
{
    keel__prof *p = &st->prof;
    keel_stats *s = &st->last;
    memset(s, 0, sizeof *s);
    s->frame = w->frame;
    s->frame_ms = ms(frame_ns);
    for (int i = 0; i < KEEL_PHASE_COUNT_; i++) s->phase_ms[i] = ms(st->phase_ns[i]);
    size_t n = 0;
    for (size_t i = 0; i < st->sys_count; i++) n += st->sys[i].calls > 0;
    KEEL__VEC_RESERVE(st->out_sys, 0, st->out_sys_cap, n, 16);
    n = 0;
    for (size_t i = 0; i < st->sys_count; i++) {
        const sys_acc *a = &st->sys[i];
        if (a->calls) st->out_sys[n++] = (keel_stats_system){ a->name, a->ns / 1e6, a->calls, a->entities };
    }
    if (n) qsort(st->out_sys, n, sizeof *st->out_sys, by_sys_ms);
    s->systems = st->out_sys;
    s->system_count = n;
    KEEL__VEC_RESERVE(st->out_kinds, 0, st->out_kinds_cap, p->touched_count, 16);
    n = 0;
    for (size_t i = 0; i < p->touched_count; i++) {
        uint32_t at = p->touched[i];
        st->out_kinds[n++] = (keel_stats_kind){ (keel_kind_id)(at / KEEL_PHASE_COUNT_),
                                                (keel_phase)(at % KEEL_PHASE_COUNT_), ms(p->kind_ns[at]),
                                                p->kind_calls[at] };
    }
    if (n) qsort(st->out_kinds, n, sizeof *st->out_kinds, by_kind_ms);
    s->kinds = st->out_kinds;
    s->kind_count = n;
    s->messages = p->messages;
    s->timers = p->timers;
    s->spawned = p->spawned;
    s->destroyed = p->destroyed;
    s->faults = p->faults;
    st->ring[0][st->head] = st->ring[0][st->head + RING] = s->frame_ms;
    for (int k = 1; k < SERIES; k++)
        st->ring[k][st->head] = st->ring[k][st->head + RING] = s->phase_ms[series_phase[k - 1]];
    st->head = (st->head + 1) % RING;
    if (st->count < RING) st->count++;
    st->have = true;
}

static void stats_step_end(keel_world *w, void *state, double dt)
{
    (void)dt;
    stats_state *st = state;
    if (!st->begun) return; /* turned on inside this step: it counts from the next */
    uint64_t frame_ns = keel__prof_now() - st->frame_t0;
    st->begun = false;
    publish(w, st, frame_ns);
}

static void stats_free(keel_world *w, void *state)
{
    stats_state *st = state;
    if (w->prof == &st->prof) w->prof = NULL;
    keel__prof_fini(&st->prof);
    for (size_t i = 0; i < st->sys_count; i++) free(st->sys[i].name);
    free(st->sys);
    free(st->out_sys);
    free(st->out_kinds);
    free(st);
}

void keel_world_stats_enable(keel_world *w, bool on)
{
    if (!w) return;
    stats_state *st = keel__ext_get(w, &first_ext);
    if (!on) {
        w->prof = NULL; /* the state stays until the world goes: a step under way may hold it */
        if (st) st->on = st->begun = false;
        return;
    }
    keel__prof_calibrate();
    if (!st) {
        st = keel__xcalloc(1, sizeof *st);
        keel__ext_add(w, &first_ext, st);
        keel__ext_add(w, &last_ext, st);
    }
    if (st->on) return;
    st->on = true;
    st->begun = false; /* inside a step: from the next one */
    st->head = st->count = 0;
    st->have = false;
    w->prof = &st->prof;
}

bool keel_world_stats_enabled(const keel_world *w)
{
    return w && w->prof != NULL;
}

bool keel_world_stats(const keel_world *w, keel_stats *out)
{
    stats_state *st = w ? keel__ext_get(w, &first_ext) : NULL;
    if (!out) return false;
    if (!st || !st->have) {
        memset(out, 0, sizeof *out);
        return false;
    }
    *out = st->last;
    size_t start = st->count < RING ? 0 : st->head;
    out->history = &st->ring[0][start];
    out->history_count = st->count;
    for (int k = 1; k < SERIES; k++) out->phase_history[series_phase[k - 1]] = &st->ring[k][start];
    return true;
}

void keel__stats_system(keel_world *w, const char *name, double ns, uint64_t entities)
{
    stats_state *st = (stats_state *)w->prof;
    if (!st || !st->begun || !name) return;
    size_t i = st->sys_hint; /* systems run in the same order every step: the next one is likely */
    if (i >= st->sys_count || strcmp(st->sys[i].name, name) != 0) {
        for (i = 0; i < st->sys_count && strcmp(st->sys[i].name, name) != 0; i++) {}
        if (i == st->sys_count) {
            KEEL__VEC_RESERVE(st->sys, st->sys_count, st->sys_cap, 1, 16);
            st->sys[st->sys_count++] = (sys_acc){ .name = keel__strdup(name) };
        }
    }
    st->sys[i].ns += ns;
    st->sys[i].entities += entities;
    st->sys[i].calls++;
    st->sys_hint = i + 1;
}

void keel_world_stats_system(keel_world *w, const char *name, double ms_, uint64_t entities)
{
    if (!w || !(ms_ >= 0)) return;
    keel__stats_system(w, name, ms_ * 1e6, entities);
}
