/* system.c — C systems: per-world callbacks over a query (`each`) or the world (`run`), run at
 * the end of a phase after its component hooks, in `after` order, each call a transaction; a
 * failure faults the system until it is reset or added again. */
#include "model/world.h"
#include "base/vec.h"
#include "game/stats.h"
#include "model/prof.h"

#include <stdlib.h>
#include <string.h>

typedef struct keel__system {
    char *name;
    keel_phase phase;
    keel_kind_id *query;
    size_t query_count;
    char **after;
    size_t after_count;
    keel_system_fn each, run;
    void *user;
    bool faulted;
} keel__system;

struct keel__systems {
    keel__system *items; /* in the order added (a replaced one keeps its place) */
    size_t count, cap;
    size_t *order; /* indices into items, in run order */
};

static void system_fini(keel__system *s)
{
    free(s->name);
    free(s->query);
    for (size_t i = 0; i < s->after_count; i++) free(s->after[i]);
    free(s->after);
}

static void systems_run(keel_world *w, void *state, keel_phase phase, double dt);
static void systems_free(keel_world *w, void *state);
/* C systems run first at a phase's end, before a binding's systems and message delivery */
static const keel__ext_type systems_ext = { .name = "systems", .order = 10, .phase_end = systems_run, .free = systems_free };

static struct keel__systems *systems_of(const keel_world *w)
{
    return w ? keel__ext_get(w, &systems_ext) : NULL;
}

static void systems_free(keel_world *w, void *state)
{
    struct keel__systems *ss = state;
    (void)w;
    if (!ss) return;
    for (size_t i = 0; i < ss->count; i++) system_fini(&ss->items[i]);
    free(ss->items);
    free(ss->order);
    free(ss);
}

static size_t find(const keel__system *items, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(items[i].name, name) == 0) return i;
    return n;
}

/* Whether system i names system j in its `after` (j must run first). */
static bool runs_after(const keel__system *items, size_t i, size_t j)
{
    for (size_t a = 0; a < items[i].after_count; a++)
        if (strcmp(items[i].after[a], items[j].name) == 0) return true;
    return false;
}

/* Topological order of items by `after` (names not added are ignored), ties by the order added,
 * into order[n]. On a cycle: false, and *cycle its names ("a -> b -> a", in run direction). */
static bool sort_systems(const keel__system *items, size_t n, size_t *order, char **cycle)
{
    bool *done = keel__xcalloc(n ? n : 1, sizeof *done);
    size_t placed = 0;
    while (placed < n) {
        size_t pick = n;
        for (size_t i = 0; i < n && pick == n; i++) {
            if (done[i]) continue;
            bool ready = true;
            for (size_t j = 0; j < n && ready; j++)
                if (!done[j] && j != i && runs_after(items, i, j)) ready = false;
            if (ready && !runs_after(items, i, i)) pick = i;
        }
        if (pick == n) break;
        done[pick] = true;
        order[placed++] = pick;
    }
    if (placed == n) {
        free(done);
        return true;
    }
    /* every system left waits for another left: walk back along `after` until one repeats */
    size_t *path = keel__xrealloc(NULL, (n + 1) * sizeof *path);
    size_t len = 0, at = 0;
    while (done[at]) at++;
    for (;;) {
        size_t seen = len;
        for (size_t k = 0; k < len; k++)
            if (path[k] == at) seen = k;
        if (seen < len) { /* path[seen..len) is the cycle, each after the next */
            char *text = keel__strdup(items[at].name);
            for (size_t k = len; k-- > seen;) {
                char *t = keel__strfmt("%s -> %s", text, items[path[k]].name);
                free(text);
                text = t;
            }
            *cycle = text;
            break;
        }
        path[len++] = at;
        size_t next = n;
        for (size_t j = 0; j < n && next == n; j++)
            if (!done[j] && runs_after(items, at, j)) next = j;
        at = next; /* exists: `at` was not ready */
    }
    free(path);
    free(done);
    return false;
}

static bool system_phase(keel_phase p)
{
    return p == KEEL_PHASE_START || p == KEEL_PHASE_FIXED_UPDATE || p == KEEL_PHASE_UPDATE ||
        p == KEEL_PHASE_LATE_UPDATE;
}

static keel_status check_desc(keel_world *w, const keel_system_desc *sd, keel_diags *d)
{
    if (!w || !sd) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel_system_add: NULL world or desc");
    if (keel_world_in_callback(w))
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "",
                          "keel_system_add refuses while a callback transaction is open");
    if (!sd->name || !*sd->name)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "a system needs a non-empty name");
    const char *name = sd->name;
    if (!system_phase(sd->phase))
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "",
                          "system %s: phase must be start, fixed_update, update or late_update", name);
    if (!sd->each == !sd->run)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "system %s: give exactly one of each and run", name);
    if (sd->each && (!sd->query || sd->query_count == 0))
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "system %s: each needs a query of at least one kind", name);
    if (sd->query_count && !sd->query)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "system %s: query is NULL", name);
    for (size_t i = 0; i < sd->query_count; i++)
        if (!keel_kind_describe(sd->query[i]))
            return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "system %s: query[%zu] is not a declared kind", name,
                              i);
    if (sd->after_count && !sd->after)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "system %s: after is NULL", name);
    for (size_t i = 0; i < sd->after_count; i++)
        if (!sd->after[i] || !*sd->after[i])
            return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "system %s: after[%zu] must be a non-empty name", name,
                              i);
    return KEEL_OK;
}

keel_status keel_system_add(keel_world *w, const keel_system_desc *sd, keel_diags *d)
{
    keel_status st = check_desc(w, sd, d);
    if (st != KEEL_OK) return st;
    struct keel__systems *ss = systems_of(w);
    if (!ss) {
        ss = keel__xcalloc(1, sizeof *ss);
        keel__ext_add(w, &systems_ext, ss);
    }
    keel__system s = { .name = keel__strdup(sd->name),
                       .phase = sd->phase,
                       .query_count = sd->query_count,
                       .after_count = sd->after_count,
                       .each = sd->each,
                       .run = sd->run,
                       .user = sd->user };
    if (sd->query_count) {
        s.query = keel__xrealloc(NULL, sd->query_count * sizeof *s.query);
        memcpy(s.query, sd->query, sd->query_count * sizeof *s.query);
    }
    if (sd->after_count) {
        s.after = keel__xrealloc(NULL, sd->after_count * sizeof *s.after);
        for (size_t i = 0; i < sd->after_count; i++) s.after[i] = keel__strdup(sd->after[i]);
    }
    /* the list as it would be, sorted before anything is replaced: a cycle changes nothing */
    size_t at = find(ss->items, ss->count, s.name);
    size_t n = at < ss->count ? ss->count : ss->count + 1;
    keel__system *list = keel__xrealloc(NULL, n * sizeof *list);
    if (ss->count) memcpy(list, ss->items, ss->count * sizeof *list);
    list[at] = s;
    size_t *order = keel__xrealloc(NULL, n * sizeof *order);
    char *cycle = NULL;
    if (!sort_systems(list, n, order, &cycle)) {
        st = KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "system %s: `after` makes a cycle: %s", s.name, cycle);
        free(cycle);
        free(order);
        free(list);
        system_fini(&s);
        return st;
    }
    if (at < ss->count) system_fini(&ss->items[at]);
    free(ss->items);
    free(ss->order);
    ss->items = list;
    ss->count = ss->cap = n;
    ss->order = order;
    return KEEL_OK;
}

keel_status keel_system_remove(keel_world *w, const char *name, keel_diags *d)
{
    if (w && keel_world_in_callback(w))
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "",
                          "keel_system_remove refuses while a callback transaction is open");
    struct keel__systems *ss = systems_of(w);
    size_t at = ss && name ? find(ss->items, ss->count, name) : 0;
    if (!ss || !name || at == ss->count)
        return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "no system '%s'", name ? name : "(null)");
    system_fini(&ss->items[at]);
    memmove(&ss->items[at], &ss->items[at + 1], (ss->count - at - 1) * sizeof *ss->items);
    ss->count--;
    char *cycle = NULL;
    bool ok = sort_systems(ss->items, ss->count, ss->order, &cycle); /* fewer constraints: no cycle */
    (void)ok;
    free(cycle);
    return KEEL_OK;
}

static keel__system *system_get(const keel_world *w, const char *name)
{
    struct keel__systems *ss = name ? systems_of(w) : NULL;
    if (!ss) return NULL;
    size_t at = find(ss->items, ss->count, name);
    return at < ss->count ? &ss->items[at] : NULL;
}

keel_status keel_system_reset(keel_world *w, const char *name, keel_diags *d)
{
    keel__system *s = system_get(w, name);
    if (!s) return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "no system '%s'", name ? name : "(null)");
    s->faulted = false;
    return KEEL_OK;
}

bool keel_system_faulted(const keel_world *w, const char *name)
{
    keel__system *s = system_get(w, name);
    return s && s->faulted;
}

size_t keel_system_count(const keel_world *w)
{
    struct keel__systems *ss = systems_of(w);
    return ss ? ss->count : 0;
}

const char *keel_system_name(const keel_world *w, size_t i)
{
    struct keel__systems *ss = systems_of(w);
    if (!ss || i >= ss->count) return NULL;
    static const keel_phase phases[] = { KEEL_PHASE_START, KEEL_PHASE_FIXED_UPDATE, KEEL_PHASE_UPDATE,
                                         KEEL_PHASE_LATE_UPDATE };
    for (size_t p = 0; p < 4; p++)
        for (size_t k = 0; k < ss->count; k++) {
            const keel__system *s = &ss->items[ss->order[k]];
            if (s->phase == phases[p] && i-- == 0) return s->name;
        }
    return NULL;
}

/* One call as a transaction; false when it failed (the system is faulted and the failure recorded). */
static bool system_call(keel_world *w, keel__system *s, keel_system_call *call, keel_system_fn fn)
{
    keel__hook_txn t;
    keel__callback_open(w, &t);
    call->diags = &t.diags;
    keel_status st = fn(call);
    keel__callback_close(w, &t, st);
    if (st != KEEL_OK) {
        s->faulted = true;
        keel__fault_system_diags(w, s->name, call->phase, &t.diags);
    }
    if (t.diags.items) keel_diags_free(&t.diags);
    return st == KEEL_OK;
}

/* The entry of each queried kind of entity e (the lowest slot), when every one takes part in this
 * step; fills comps and records. */
static bool visit_ready(keel_world *w, const keel__system *s, keel_entity e, keel_comp *comps, void **records)
{
    keel__ent *en = keel__ent_get(w, e);
    if (!en || !keel__active(w, (uint32_t)e)) return false;
    for (size_t k = 0; k < s->query_count; k++) {
        keel__entry *m = keel__entry_find(w, en, s->query[k], KEEL_SLOT_AUTO);
        if (!m || !m->enabled || m->faulted || !keel__entry_due(w, m)) return false;
        comps[k] = (keel_comp){ e, m->kind, keel__entry_slot(w, m) };
        records[k] = keel__store_rec(&w->stores[m->kind], m->row);
    }
    return true;
}

/* The calls made (entities visited). */
static size_t run_each(keel_world *w, keel__system *s, keel_phase phase, double dt)
{
    keel_comp *comps = keel__xrealloc(NULL, s->query_count * sizeof *comps);
    void **records = keel__xrealloc(NULL, s->query_count * sizeof *records);
    keel_entity *visits = NULL;
    size_t n = 0, cap = 0;
    /* the visits, in run order, made before the first call: what a call spawns waits a step */
    for (keel_entity e = keel_next(w, 0); e; e = keel_next(w, e)) { /* not the scene root, as in Lua */
        if (!visit_ready(w, s, e, comps, records)) continue;
        KEEL__VEC_RESERVE(visits, n, cap, 1, 64);
        visits[n++] = e;
    }
    size_t calls = 0;
    for (size_t i = 0; i < n && !s->faulted; i++) {
        if (!visit_ready(w, s, visits[i], comps, records)) continue; /* an earlier call changed it */
        keel_system_call call = { w, phase, dt, visits[i], comps, records, s->query_count, s->user, NULL };
        calls++;
        if (!system_call(w, s, &call, s->each)) break;
    }
    free(visits);
    free(records);
    free(comps);
    return calls;
}

static void systems_run(keel_world *w, void *state, keel_phase phase, double dt)
{
    struct keel__systems *ss = state;
    if (!ss || w->rolling_back) return;
    for (size_t k = 0; k < ss->count; k++) {
        keel__system *s = &ss->items[ss->order[k]];
        if (s->phase != phase || s->faulted) continue;
        uint64_t t0 = w->prof ? keel__prof_now() : 0; /* one clock read per system run */
        size_t visited = 0;
        if (s->run) {
            keel_system_call call = { w, phase, dt, KEEL_NO_ENTITY, NULL, NULL, 0, s->user, NULL };
            system_call(w, s, &call, s->run);
        } else {
            visited = run_each(w, s, phase, dt);
        }
        if (t0 && w->prof) keel__stats_system(w, s->name, keel__prof_ns(keel__prof_now() - t0), visited);
    }
}
